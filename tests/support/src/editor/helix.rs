//! Helix 25.07.1 as the end-to-end tests stand it in: what it declares in `initialize`, captured
//! from the real editor (`hx -v` logs the request), how it answers the server's requests, and
//! what it does with Tandem's answers where that differs from other clients: it runs the command
//! of a code action as the action was listed, not as resolved, and shows only the completion
//! items that match the word typed before the cursor. docs/editors.md says how the real Helix
//! was checked against the same scenarios.

use serde_json::{json, Value};

use super::{pos_from_json, pos_json, EditorBuilder, FakeEditor};
use crate::reference::{Pos, ReferenceDoc};

/// Helix 25.07.1's `initialize` (its `capabilities` and `clientInfo`), as it sent them.
const INITIALIZE: &str = include_str!("../../../fixtures/helix/initialize-25.07.1.json");

impl FakeEditor {
    /// Helix 25.07.1: it declares exactly what that release declares (among others
    /// `codeAction.resolveSupport` for `edit` and `command`, UTF-8 positions first, no
    /// `window.showDocument`, no `window.showMessage`), answers `workspace/configuration` with
    /// `null` (Tandem's settings come in `initializationOptions`) and `window/showMessageRequest`
    /// with "method not found". Run code actions with [`FakeEditor::run_code_action_as_helix`] and
    /// read completions with [`FakeEditor::completion_menu_as_helix`].
    pub fn helix() -> EditorBuilder {
        let declared: Value =
            serde_json::from_str(INITIALIZE).expect("the Helix initialize fixture is JSON");
        EditorBuilder {
            declared: Some(declared),
            configuration: Some(Value::Null),
            refuse_message_requests: Some("Method not found: window/showMessageRequest".to_owned()),
            ..FakeEditor::plain()
        }
    }

    /// Picks a code action as Helix 25.07.1 does (helix-term/src/commands/lsp.rs): an action
    /// without an edit or a command is resolved, if the server resolves actions; then the
    /// *listed* action's command is executed, so an action listed without one runs nothing.
    /// Returns the `workspace/executeCommand` answer (Helix only logs it), `None` when nothing
    /// was executed.
    pub async fn run_code_action_as_helix(&self, listed: &Value) -> Option<Result<Value, Value>> {
        let resolves = self.server_capabilities()["codeActionProvider"]["resolveProvider"] == true;
        if resolves && (listed.get("edit").is_none() || listed.get("command").is_none()) {
            let resolved = self.request("codeAction/resolve", listed.clone()).await;
            if let Ok(resolved) = resolved {
                assert!(
                    resolved.get("edit").is_none(),
                    "Helix would apply this edit, which the stand-in does not model: {resolved:#}"
                );
            }
        }
        match listed.get("command") {
            Some(command) => Some(self.execute(command).await),
            None => None,
        }
    }

    /// What Helix 25.07.1's completion menu shows at `position` of `uri` while the user types:
    /// it asks `textDocument/completion` (trigger kind "invoked", which it sends for automatic
    /// requests too) and keeps the items whose `filterText` (else `label`) matches the word
    /// typed before the cursor (letters, digits and `_`), as its fuzzy matcher does: the
    /// word's characters in order, ignoring case.
    pub async fn completion_menu_as_helix(&self, uri: &str, position: Pos) -> Vec<Value> {
        let result = self
            .request(
                "textDocument/completion",
                json!({
                    "textDocument": {"uri": uri},
                    "position": pos_json(position),
                    "context": {"triggerKind": 1},
                }),
            )
            .await
            .unwrap_or_else(|error| panic!("textDocument/completion failed: {error}"));
        let items = match result {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            list => list["items"].as_array().cloned().unwrap_or_default(),
        };
        let text = self.buffer_text(uri).await;
        let offset = ReferenceDoc::new(text.clone()).offset(position, self.encoding());
        let mut typed: Vec<char> = text[..offset]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        typed.reverse();
        items
            .into_iter()
            .filter(|item| {
                let filter = item["filterText"]
                    .as_str()
                    .or_else(|| item["label"].as_str())
                    .unwrap_or_default();
                fuzzy_match(&typed, filter)
            })
            .collect()
    }

    /// Accepts a completion item as Helix does: its `textEdit` replaces its range (the typed
    /// word up to the cursor) with its `newText`, as one change. Returns the new version.
    pub async fn accept_completion_as_helix(&self, uri: &str, item: &Value) -> i32 {
        let edit = &item["textEdit"];
        let (start, end) = match (
            pos_from_json(&edit["range"]["start"]),
            pos_from_json(&edit["range"]["end"]),
        ) {
            (Ok(start), Ok(end)) => (start, end),
            _ => panic!("the stand-in only accepts items with a textEdit: {item:#}"),
        };
        let new_text = edit["newText"].as_str().unwrap_or_default();
        let encoding = self.encoding();
        let mut buffers = self.inner.buffers.lock().await;
        let buffer = buffers
            .get_mut(uri)
            .unwrap_or_else(|| panic!("completing in {uri}, which is not open"));
        self.inner.send_queued_changes().await;
        let document = ReferenceDoc::new(buffer.text.clone());
        let range = document.offset(start, encoding)..document.offset(end, encoding);
        buffer.text.replace_range(range, new_text);
        buffer.version += 1;
        self.inner
            .notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": uri, "version": buffer.version},
                    "contentChanges": [{"range": edit["range"], "text": new_text}],
                }),
            )
            .await;
        buffer.version
    }
}

/// Whether `pattern`'s characters appear in `text` in order, ignoring case; an empty pattern
/// matches everything.
fn fuzzy_match(pattern: &[char], text: &str) -> bool {
    let mut text = text.chars().flat_map(char::to_lowercase);
    pattern
        .iter()
        .flat_map(|c| c.to_lowercase())
        .all(|wanted| text.any(|c| c == wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_matching_keeps_order_and_ignores_case() {
        let chars = |text: &str| text.chars().collect::<Vec<_>>();
        assert!(fuzzy_match(&chars("re"), "return a"));
        assert!(fuzzy_match(&chars("RT"), "return"));
        assert!(fuzzy_match(&chars(""), ""));
        assert!(!fuzzy_match(&chars("re"), ""));
        assert!(!fuzzy_match(&chars("er"), "re"));
    }
}
