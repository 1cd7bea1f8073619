//! What a language-server turn does around the agent's work: inline chat narrows the turn's
//! writes to the selection (an overlay, `inline.rs`) and delivers the result as one workspace
//! edit; a turn started from a `tandem:` comment removes the comment once it is done.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use tandem_agent::host::TurnHooks;
use tandem_agent::settings::{AgentSettings, InlineApply};
use tandem_agent::{Attachment, Editor, StopReason};
use tandem_text::Document;
use tower_lsp::lsp_types::{self as lsp, ApplyWorkspaceEditParams};
use tracing::debug;
use url::Url;

use crate::bridge;
use crate::host::{cap_text, AgentHost, InlineTarget};
use crate::inline::{self, ScopedEditor};
use crate::instruction::{self, InstructionComment};

/// The hooks of one turn: its inline target and instruction comment, if any.
pub(crate) struct LspTurnHooks {
    pub host: Arc<AgentHost>,
    pub inline: Option<InlineTarget>,
    pub comment: Option<InstructionComment>,
    /// Set at the start of an inline turn: the overlay, the document as it was, how it is named,
    /// and whether to propose the result for confirmation (`inlineChat.apply`).
    scoped: Option<(Arc<ScopedEditor>, Document, String, bool)>,
}

impl LspTurnHooks {
    pub(crate) fn new(
        host: Arc<AgentHost>,
        inline: Option<InlineTarget>,
        comment: Option<InstructionComment>,
    ) -> Self {
        LspTurnHooks {
            host,
            inline,
            comment,
            scoped: None,
        }
    }
}

impl TurnHooks for LspTurnHooks {
    fn start(
        &mut self,
        settings: &AgentSettings,
        editor: &Arc<dyn Editor>,
        text: &mut String,
        context: &mut Vec<Attachment>,
    ) -> Result<Option<Arc<dyn Editor>>, String> {
        let Some(target) = &self.inline else {
            return Ok(None);
        };
        let (scoped_editor, document, shown_range, attachment) =
            scope_for(&self.host, editor, target)?;
        text.push_str(&format!(
            "\n\n(Inline edit: change only {shown_range}. Edits elsewhere are refused. \
             Read the file first if you need more of it.)"
        ));
        context.push(attachment);
        let propose = settings.inline_chat.apply == InlineApply::Propose;
        self.scoped = Some((scoped_editor.clone(), document, shown_range, propose));
        Ok(Some(scoped_editor))
    }

    fn finish(&mut self, reason: StopReason) -> BoxFuture<'_, Option<String>> {
        async move {
            if reason != StopReason::EndTurn {
                return None;
            }
            let mut problem = None;
            if let (Some((scoped, document, shown_range, propose)), Some(target)) =
                (&self.scoped, &self.inline)
            {
                problem = deliver_inline(
                    &self.host,
                    scoped,
                    &target.uri,
                    document,
                    shown_range,
                    *propose,
                )
                .await;
            }
            if let Some(comment) = &self.comment {
                remove_instruction_comment(&self.host, comment).await;
            }
            problem
        }
        .boxed()
    }
}

/// Sets up inline chat's overlay: the open document, the byte range, how to name it, and the
/// selection as an attachment.
fn scope_for(
    host: &AgentHost,
    editor: &Arc<dyn Editor>,
    target: &InlineTarget,
) -> std::result::Result<(Arc<ScopedEditor>, Document, String, Attachment), String> {
    let document = host.documents.get(&target.uri).ok_or_else(|| {
        format!(
            "inline chat works on open documents; {} is not open",
            target.uri
        )
    })?;
    let path = bridge::path_for_uri(&target.uri)
        .ok_or_else(|| format!("{} is not a local file", target.uri))?;
    let (start, end) = host.char_range(&document, target.range);
    let rope = document.rope();
    let bytes = rope.char_to_byte(start)..rope.char_to_byte(end);
    let shown = host.display(&target.uri);
    let first = rope.char_to_line(start) + 1;
    let last = rope.char_to_line(end) + 1;
    let shown_range = format!("lines {first}-{last} of {shown}");
    let scoped = Arc::new(ScopedEditor::new(
        editor.clone(),
        path,
        document.text(),
        Some(document.version()),
        bytes,
        shown_range.clone(),
    ));
    let text = rope.slice(start..end).to_string();
    let attachment = Attachment {
        label: format!("Selection in {shown} (lines {first}-{last})"),
        shown: bridge::shown_file(
            &target.uri,
            &document,
            Some(document.version()),
            Some((first, last)),
            &text,
        ),
        text: cap_text(text),
    };
    Ok((scoped, document, shown_range, attachment))
}

/// Sends inline chat's result as one workspace edit. `Some(problem)` when it did not land.
async fn deliver_inline(
    host: &AgentHost,
    scoped: &ScopedEditor,
    uri: &Url,
    document: &Document,
    shown_range: &str,
    propose: bool,
) -> Option<String> {
    let new_text = scoped.proposed_text()?;
    if !host.support().apply_edit || !host.support().document_changes {
        return Some(
            "this editor does not accept versioned workspace edits, so the inline change was \
             not applied"
                .to_owned(),
        );
    }
    let label = format!("Tandem: inline edit of {shown_range}");
    let edit = inline::final_edit(
        uri,
        document,
        &new_text,
        host.encoding(),
        &host.support(),
        &label,
        propose,
    );
    let params = ApplyWorkspaceEditParams {
        label: Some(label),
        edit,
    };
    match host
        .client
        .send_request::<lsp::request::ApplyWorkspaceEdit>(params)
        .await
    {
        Ok(response) if response.applied => None,
        Ok(response) => {
            let reason = response
                .failure_reason
                .unwrap_or_else(|| "the editor gave no reason".to_owned());
            // A proposal the user turned down is their answer, not a conflict with their typing.
            Some(if propose {
                format!("the proposed inline edit was not applied ({reason}): declined in the editor, nothing was changed")
            } else {
                format!("the inline edit was not applied ({reason}); the document may have changed while Tandem worked — run it again")
            })
        }
        Err(error) => Some(format!("the inline edit could not be sent: {error}")),
    }
}

/// Removes a `tandem:` instruction comment once its turn is done, if it is still there. A
/// removal the editor refuses because the user typed meanwhile is worked out again on their
/// text, a few times.
async fn remove_instruction_comment(host: &AgentHost, comment: &InstructionComment) {
    if !host.support().apply_edit || !host.support().document_changes {
        return;
    }
    for _ in 0..tandem_agent::tools::MAX_STALE_RETRIES {
        let Some(document) = host.documents.get(&comment.uri) else {
            return;
        };
        let Some(edit) = instruction::remove_comment(&document, comment, host.encoding()) else {
            return;
        };
        let version = document.version();
        let change = lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                uri: comment.uri.clone(),
                version: Some(version),
            },
            edits: vec![lsp::OneOf::Left(edit)],
        };
        let edit = lsp::WorkspaceEdit {
            document_changes: Some(lsp::DocumentChanges::Edits(vec![change])),
            ..lsp::WorkspaceEdit::default()
        };
        let params = ApplyWorkspaceEditParams {
            label: Some("Tandem: remove the instruction comment".to_owned()),
            edit,
        };
        let response = host
            .client
            .send_request::<lsp::request::ApplyWorkspaceEdit>(params)
            .await;
        let moved_on = || host.documents.get(&comment.uri).map(|d| d.version()) != Some(version);
        let arrived = host
            .revisions
            .wait_until(bridge::PENDING_CHANGE_WAIT, moved_on)
            .await;
        match response {
            Ok(response) if response.applied => return,
            Ok(_) if arrived => {
                debug!("the user typed before the instruction comment's removal; trying again")
            }
            Ok(_) => return debug!("the editor kept the instruction comment"),
            Err(error) => return debug!("could not remove the instruction comment: {error}"),
        }
    }
}
