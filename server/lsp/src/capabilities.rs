//! What the client can do, read once from `initialize`: the standard capabilities Tandem's
//! features depend on, and the custom `tandem/*` messages the client asked for. The server never
//! sends a message the client did not declare; each feature falls back to standard LSP (or to
//! the settings) when a capability is missing.

use serde::Deserialize;
use serde_json::Value;
use tower_lsp::lsp_types::{ClientCapabilities, InitializeParams, ResourceOperationKind};

/// Tandem's own client capabilities, as declared under `capabilities.experimental.tandem` or
/// `initializationOptions.clientCapabilities` (either works; see docs/protocol.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TandemCapabilities {
    /// The client handles `tandem/event` notifications.
    pub events: bool,
    /// The client answers `tandem/requestApproval` requests.
    pub request_approval: bool,
    /// The client saves documents when asked with `tandem/saveDocuments`.
    pub save_documents: bool,
    /// The client forwards its diagnostics with `tandem/didChangeDiagnostics`.
    pub diagnostics: bool,
}

/// Everything the server needs to know about the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClientSupport {
    pub tandem: TandemCapabilities,
    /// `workspace/applyEdit`.
    pub apply_edit: bool,
    /// `documentChanges` (versioned text document edits) in workspace edits.
    pub document_changes: bool,
    /// `create` resource operations in workspace edits.
    pub create_files: bool,
    /// `delete` resource operations in workspace edits.
    pub delete_files: bool,
    /// Change annotations (with `needsConfirmation`) in workspace edits.
    pub change_annotations: bool,
    /// Server-initiated `window/workDoneProgress/create` and `$/progress`.
    pub work_done_progress: bool,
    /// `window/showDocument`.
    pub show_document: bool,
    /// `workspace/configuration`.
    pub configuration: bool,
}

impl ClientSupport {
    pub(crate) fn from_initialize(params: &InitializeParams) -> Self {
        let caps: &ClientCapabilities = &params.capabilities;
        let workspace = caps.workspace.as_ref();
        let edit = workspace.and_then(|workspace| workspace.workspace_edit.as_ref());
        let window = caps.window.as_ref();
        let resource_operations = edit
            .and_then(|e| e.resource_operations.as_deref())
            .unwrap_or_default();
        ClientSupport {
            tandem: tandem_capabilities(params),
            apply_edit: workspace.and_then(|w| w.apply_edit).unwrap_or(false),
            document_changes: edit.and_then(|e| e.document_changes).unwrap_or(false),
            create_files: resource_operations.contains(&ResourceOperationKind::Create),
            delete_files: resource_operations.contains(&ResourceOperationKind::Delete),
            change_annotations: edit.is_some_and(|e| e.change_annotation_support.is_some()),
            work_done_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
            show_document: window
                .and_then(|w| w.show_document.as_ref())
                .is_some_and(|d| d.support),
            configuration: workspace.and_then(|w| w.configuration).unwrap_or(false),
        }
    }
}

fn tandem_capabilities(params: &InitializeParams) -> TandemCapabilities {
    let declared = params
        .capabilities
        .experimental
        .as_ref()
        .and_then(|experimental| experimental.get("tandem"))
        .or_else(|| {
            params
                .initialization_options
                .as_ref()
                .and_then(|options| options.get("clientCapabilities"))
        });
    match declared {
        Some(value) => serde_json::from_value(value.clone()).unwrap_or_else(|error| {
            tracing::warn!("ignored the client's Tandem capabilities ({error}): {value}");
            TandemCapabilities::default()
        }),
        None => TandemCapabilities::default(),
    }
}

/// The settings the client passed in `initializationOptions.settings` (the shape of
/// settings.json); `Value::Null` when there are none.
pub(crate) fn initialization_settings(params: &InitializeParams) -> Value {
    params
        .initialization_options
        .as_ref()
        .and_then(|options| options.get("settings"))
        .cloned()
        .unwrap_or(Value::Null)
}
