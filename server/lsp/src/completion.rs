//! Inline completions over LSP: `textDocument/inlineCompletion` (LSP 3.18, for editors with
//! ghost text) and, for editors without it, the suggestion as the one item of
//! `textDocument/completion` (as lsp-ai and helix-gpt offer it). The text around the cursor
//! comes from the rope, in the negotiated position encoding; the core's `Host::complete` does
//! the rest. A newer request for the same document supersedes an older one, and
//! `$/cancelRequest` drops the request (and its model connection).

use serde::{Deserialize, Serialize};
use tandem_agent::completion::shape::{Around, MAX_PREFIX_CHARS, MAX_SUFFIX_CHARS};
use tandem_agent::completion::{CompletionError, CompletionRequest, Neighbour};
use tandem_providers::CancellationToken;
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::{self as lsp, TextDocumentIdentifier, Url};
use tracing::debug;

use crate::from_proto;
use crate::host::{lock, AgentHost};

/// Recently used documents compared with the lines before the cursor, at most.
const MAX_NEIGHBOURS: usize = 4;
/// Characters of each such document compared, at most.
const MAX_NEIGHBOUR_CHARS: usize = 100_000;

/// `InlineCompletionParams` (LSP 3.18; lsp-types 0.94 predates it).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InlineCompletionParams {
    pub text_document: TextDocumentIdentifier,
    pub position: lsp::Position,
    #[serde(default)]
    pub context: Option<InlineCompletionContext>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InlineCompletionContext {
    /// 1: invoked by the user; 2: automatic, while typing.
    pub trigger_kind: u32,
}

/// `InlineCompletionList`.
#[derive(Debug, Serialize)]
pub(crate) struct InlineCompletionList {
    pub items: Vec<InlineCompletionItem>,
}

/// `InlineCompletionItem`: the text to insert and the range it replaces (empty: at the cursor).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InlineCompletionItem {
    pub insert_text: String,
    pub range: lsp::Range,
}

impl AgentHost {
    /// The suggestion at `position` of `uri`: `None` when there is none (completions off, the
    /// document unknown, nothing fits, superseded). A failed model request is logged, not
    /// shown: the next keystroke asks again.
    pub(crate) async fn suggestion(
        &self,
        uri: &Url,
        position: lsp::Position,
        invoked: bool,
    ) -> Option<String> {
        let document = self.documents.get(uri)?;
        let root = self.first_root()?;
        // Editors ask on every keystroke: where completions are off, nothing is copied.
        if !self
            .core()
            .completion_settings(&root)
            .is_ok_and(|settings| settings.on_for(document.language_id()))
        {
            return None;
        }
        let rope = document.rope();
        let cursor = document.char_offset(from_proto::position(position), self.encoding());
        let start = cursor.saturating_sub(MAX_PREFIX_CHARS);
        let end = (cursor + MAX_SUFFIX_CHARS).min(rope.len_chars());
        let around = Around {
            before: rope.slice(start..cursor).to_string(),
            after: rope.slice(cursor..end).to_string(),
            from_file_start: start == 0,
            to_file_end: end == rope.len_chars(),
        };
        let request = CompletionRequest {
            document: uri.to_string(),
            path: self.display(uri),
            language: document.language_id().to_owned(),
            around,
            invoked,
            neighbours: self.neighbours(uri, document.language_id()),
        };
        match self
            .core()
            .complete(&root, request, CancellationToken::new())
            .await
        {
            Ok(suggestion) => suggestion,
            Err(CompletionError::Superseded) => None,
            Err(error) => {
                debug!(%uri, "no completion: {error}");
                None
            }
        }
    }

    /// The documents used most recently besides `uri`, in its language, each cut to its first
    /// `MAX_NEIGHBOUR_CHARS`.
    fn neighbours(&self, uri: &Url, language: &str) -> Vec<Neighbour> {
        let recent: Vec<Url> = lock(&self.ide)
            .recent()
            .iter()
            .filter(|recent| *recent != uri)
            .cloned()
            .collect();
        recent
            .iter()
            .filter_map(|recent| {
                let document = self.documents.get(recent)?;
                (document.language_id() == language).then(|| {
                    let rope = document.rope();
                    let end = rope.len_chars().min(MAX_NEIGHBOUR_CHARS);
                    Neighbour {
                        path: self.display(recent),
                        text: rope.slice(..end).to_string(),
                    }
                })
            })
            .take(MAX_NEIGHBOURS)
            .collect()
    }

    /// `textDocument/inlineCompletion`.
    pub(crate) async fn inline_completion(
        &self,
        params: InlineCompletionParams,
    ) -> Result<Option<InlineCompletionList>> {
        let invoked = params
            .context
            .as_ref()
            .is_some_and(|context| context.trigger_kind == 1);
        let position = params.position;
        let suggestion = self
            .suggestion(&params.text_document.uri, position, invoked)
            .await;
        Ok(suggestion.map(|text| InlineCompletionList {
            items: vec![InlineCompletionItem {
                insert_text: text,
                range: lsp::Range::new(position, position),
            }],
        }))
    }

    /// `textDocument/completion` for editors without inline completions: the suggestion as
    /// one item that inserts it at the cursor. `None` when the editor has ghost text (it asks
    /// `textDocument/inlineCompletion`) or the `completionItems` setting is off.
    pub(crate) async fn completion_items(
        &self,
        params: lsp::CompletionParams,
        client_has_inline: bool,
    ) -> Result<Option<lsp::CompletionResponse>> {
        if client_has_inline {
            return Ok(None);
        }
        let Some(root) = self.first_root() else {
            return Ok(None);
        };
        if !self
            .core()
            .completion_settings(&root)
            .is_ok_and(|settings| settings.completion_items)
        {
            return Ok(None);
        }
        let position = params.text_document_position.position;
        let invoked = params
            .context
            .as_ref()
            .is_some_and(|context| context.trigger_kind == lsp::CompletionTriggerKind::INVOKED);
        let Some(text) = self
            .suggestion(
                &params.text_document_position.text_document.uri,
                position,
                invoked,
            )
            .await
        else {
            return Ok(None);
        };
        Ok(Some(lsp::CompletionResponse::List(lsp::CompletionList {
            // Typing on asks again, rather than filtering this one item.
            is_incomplete: true,
            items: vec![completion_item(text, position)],
        })))
    }
}

/// The suggestion as a completion item: its first line as the label, the whole text inserted
/// at the cursor, plain text (never a snippet: `$` and `}` in code are not placeholders).
fn completion_item(text: String, position: lsp::Position) -> lsp::CompletionItem {
    let first_line = text.lines().next().unwrap_or("").trim().to_owned();
    let label = if text.contains('\n') {
        format!("{first_line}…")
    } else {
        first_line
    };
    lsp::CompletionItem {
        label,
        kind: Some(lsp::CompletionItemKind::TEXT),
        detail: Some("Tandem".to_owned()),
        documentation: Some(lsp::Documentation::MarkupContent(lsp::MarkupContent {
            kind: lsp::MarkupKind::PlainText,
            value: text.clone(),
        })),
        preselect: Some(true),
        // An empty filter range: the item matches whatever was typed before the cursor.
        filter_text: Some(String::new()),
        sort_text: Some("0".to_owned()),
        insert_text_format: Some(lsp::InsertTextFormat::PLAIN_TEXT),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: lsp::Range::new(position, position),
            new_text: text,
        })),
        ..lsp::CompletionItem::default()
    }
}
