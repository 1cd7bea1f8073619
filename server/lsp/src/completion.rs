//! Inline completions over LSP: `textDocument/inlineCompletion` (LSP 3.18, for editors with
//! ghost text) and, for editors without it, the suggestion as the one item of
//! `textDocument/completion` (as lsp-ai and helix-gpt offer it). The text around the cursor
//! comes from the rope, in the negotiated position encoding, and is cut at syntax boundaries
//! once the document's tree has caught up (see `syntax_cuts`); the core's `Host::complete` does
//! the rest, deciding among other things which of the recently used documents offered to it
//! may be shown to the model. A newer request for the same document supersedes an older one, and
//! `$/cancelRequest` drops the request (and its model connection).

use std::sync::Arc;

use ropey::Rope;
use serde::{Deserialize, Serialize};
use tandem_agent::completion::shape::Around;
use tandem_agent::completion::{
    CompletionError, CompletionRequest, CompletionSettings, CutSource, Cuts, RecentDocument,
};
use tandem_providers::CancellationToken;
use tandem_syntax::Tree;
use tandem_text::{Document, LineCol, PositionEncoding};
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::{self as lsp, TextDocumentIdentifier, Url};
use tracing::debug;

use crate::host::{lock, AgentHost};
use crate::{bridge, from_proto};

/// Recently used documents offered to the core, at most: it shows the model the first few it
/// allows (`context::MAX_NEIGHBOURS`), skipping files outside the workspace, ignored or
/// secret-looking, so more are offered than it shows.
const MAX_CANDIDATES: usize = 16;
/// Characters of each such document compared, at most.
const MAX_NEIGHBOUR_CHARS: usize = 100_000;
/// Documents up to this size have their syntax tree reparsed for completions after each
/// keystroke. In larger ones a keystroke in code with syntax errors made reparses of up to a
/// quarter of a second (1 MB; benches/completions.rs), too much CPU for every keystroke; they
/// are cut at lines unless something else brought the tree up to date.
const MAX_CATCH_UP_BYTES: usize = 256 * 1024;

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

/// The window around `cursor` (a char offset) that the model may be shown: `prefixChars`
/// before and `suffixChars` after, and where it starts and ends (char offsets).
fn window(
    document: &Document,
    cursor: usize,
    settings: &CompletionSettings,
) -> (Around, usize, usize) {
    let rope = document.rope();
    let start = cursor.saturating_sub(settings.prefix_chars);
    let end = cursor
        .saturating_add(settings.suffix_chars)
        .min(rope.len_chars());
    let around = Around {
        before: rope.slice(start..cursor).to_string(),
        after: rope.slice(cursor..end).to_string(),
        starts_at_boundary: start == 0,
        ends_at_boundary: end == rope.len_chars(),
    };
    (around, start, end)
}

/// Where the window `start..end` around `cursor` (char offsets into `rope`, which `tree` was
/// parsed from) may be cut at syntax boundaries: a statement or item, not mid-token, dropping
/// at most a quarter of each side. A prefix cut at a node that only indentation precedes on
/// its line keeps the indentation.
fn syntax_cuts(rope: &Rope, tree: &Tree, start: usize, cursor: usize, end: usize) -> Cuts {
    let (start_byte, cursor_byte, end_byte) = (
        rope.char_to_byte(start),
        rope.char_to_byte(cursor),
        rope.char_to_byte(end),
    );
    let loss = |side: usize| side / 4;
    let drop_before = (start > 0)
        .then(|| {
            tandem_syntax::prefix_start(
                tree,
                start_byte,
                cursor_byte,
                loss(cursor_byte - start_byte),
            )
        })
        .flatten()
        .map(|at| {
            let node = rope.byte_to_char(at);
            let line_start = rope.line_to_char(rope.char_to_line(node));
            let indented = line_start >= start
                && rope
                    .slice(line_start..node)
                    .chars()
                    .all(|c| c == ' ' || c == '\t');
            let from = if indented { line_start } else { node };
            rope.char_to_byte(from) - start_byte
        });
    let keep_after = (end < rope.len_chars())
        .then(|| {
            tandem_syntax::suffix_end(tree, cursor_byte, end_byte, loss(end_byte - cursor_byte))
        })
        .flatten()
        .map(|at| at - cursor_byte);
    Cuts {
        drop_before,
        keep_after,
    }
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
        let language = document.language_id().to_owned();
        let root = self.first_root()?;
        // Editors ask on every keystroke: where completions are off, nothing is copied.
        let settings = self
            .core()
            .completion_settings(&root)
            .ok()
            .filter(|settings| settings.on_for(&language))?;
        let cursor = document.char_offset(from_proto::position(position), self.encoding());
        let (around, start, end) = window(&document, cursor, &settings);
        // The tree catches up with the last keystroke (an incremental reparse, in the
        // background) while the request waits out its debounce. A request without one cannot
        // use it, so the reparse waits for its answer rather than compete with it for the CPU.
        let debounced = !invoked && settings.debounce_ms > 0;
        let catch_up = document.len_bytes() <= MAX_CATCH_UP_BYTES;
        if catch_up && debounced {
            self.trees.catch_up(uri, &self.documents);
        }
        let cuts: CutSource = {
            let (trees, documents) = (Arc::clone(&self.trees), Arc::clone(&self.documents));
            let (uri, version, rope) = (uri.clone(), document.version(), document.rope().clone());
            Box::new(move || {
                trees
                    .current_tree(&uri, version, &documents)
                    .map(|tree| syntax_cuts(&rope, &tree, start, cursor, end))
                    .unwrap_or_default()
            })
        };
        let request = CompletionRequest {
            document: uri.to_string(),
            path: self.display(uri),
            file: bridge::path_for_uri(uri),
            neighbours: self.neighbours(uri, &language),
            language,
            around,
            invoked,
            cuts,
        };
        let result = self
            .core()
            .complete(&self.roots(), request, CancellationToken::new())
            .await;
        if catch_up && !debounced {
            self.trees.catch_up(uri, &self.documents);
        }
        match result {
            Ok(suggestion) => suggestion,
            Err(CompletionError::Superseded) => None,
            Err(error) => {
                debug!(%uri, "no completion: {error}");
                None
            }
        }
    }

    /// The documents used most recently besides `uri`, in its language, each cut to its first
    /// `MAX_NEIGHBOUR_CHARS`. Their ropes are kept now (a rope clone shares its text) and
    /// copied out only when the request is past its debounce, for those the core allows.
    fn neighbours(&self, uri: &Url, language: &str) -> Vec<RecentDocument> {
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
                if document.language_id() != language {
                    return None;
                }
                let rope = document.rope().clone();
                Some(RecentDocument {
                    // Made canonical by the core, off the async threads.
                    file: recent.to_file_path().ok(),
                    text: Box::new(move || {
                        let end = rope.len_chars().min(MAX_NEIGHBOUR_CHARS);
                        rope.slice(..end).to_string()
                    }),
                })
            })
            .take(MAX_CANDIDATES)
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
    /// one item that completes the word being typed (see `completion_item`). `None` when the
    /// editor has ghost text (it asks `textDocument/inlineCompletion`), the `completionItems`
    /// setting is off or the document is not open; in each case before the model is asked.
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
        let uri = &params.text_document_position.text_document.uri;
        let Some(document) = self.documents.get(uri) else {
            return Ok(None);
        };
        let position = params.text_document_position.position;
        let typed = TypedWord::before(&document, position, self.encoding());
        let invoked = params
            .context
            .as_ref()
            .is_some_and(|context| context.trigger_kind == lsp::CompletionTriggerKind::INVOKED);
        let Some(text) = self.suggestion(uri, position, invoked).await else {
            return Ok(None);
        };
        Ok(completion_item(text, &typed).map(|item| {
            lsp::CompletionResponse::List(lsp::CompletionList {
                // Typing on asks again, rather than filtering this one item.
                is_incomplete: true,
                items: vec![item],
            })
        }))
    }
}

/// The part of a word the user has typed before the cursor, which clients filter completion
/// items by: the identifier characters (letters, digits, `_`, as Helix counts them) that
/// precede the cursor on its line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TypedWord {
    text: String,
    range: lsp::Range,
}

impl TypedWord {
    fn before(document: &Document, position: lsp::Position, encoding: PositionEncoding) -> Self {
        let rope = document.rope();
        let cursor = document.char_offset(from_proto::position(position), encoding);
        let word_chars = rope
            .chars_at(cursor)
            .reversed()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .count();
        let start = cursor - word_chars;
        let at = |offset| {
            let LineCol { line, character } = document.position(offset, encoding);
            lsp::Position::new(line, character)
        };
        TypedWord {
            text: rope.slice(start..cursor).to_string(),
            range: lsp::Range::new(at(start), at(cursor)),
        }
    }
}

/// The suggestion as a completion item that replaces the word being typed with that word and
/// the suggestion, so that it survives the client's filtering: clients match the text from the
/// edit's start to the cursor (VS Code, Neovim, eglot) or the identifier before the cursor
/// (Helix) against `filterText`, and both are where `filterText` starts. The label is the
/// first line, the whole text is in the documentation; plain text, never a snippet (`$` and
/// `}` in code are not placeholders). `None` when the suggestion adds nothing.
fn completion_item(suggestion: String, typed: &TypedWord) -> Option<lsp::CompletionItem> {
    if suggestion.trim().is_empty() {
        return None;
    }
    let new_text = format!("{}{suggestion}", typed.text);
    let first_line = new_text.lines().next().unwrap_or_default();
    let shown = new_text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim();
    let label = if new_text.trim().contains('\n') {
        format!("{shown}…")
    } else {
        shown.to_owned()
    };
    Some(lsp::CompletionItem {
        label,
        kind: Some(lsp::CompletionItemKind::TEXT),
        detail: Some("Tandem".to_owned()),
        documentation: Some(lsp::Documentation::MarkupContent(lsp::MarkupContent {
            kind: lsp::MarkupKind::PlainText,
            value: new_text.clone(),
        })),
        preselect: Some(true),
        filter_text: Some(first_line.to_owned()),
        sort_text: Some("0".to_owned()),
        insert_text_format: Some(lsp::InsertTextFormat::PLAIN_TEXT),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: typed.range,
            new_text,
        })),
        ..lsp::CompletionItem::default()
    })
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    /// `|` marks the cursor; the window is what the settings allow around it, cut where the
    /// text's syntax tree says when `parsed`.
    fn around(marked: &str, prefix_chars: usize, suffix_chars: usize, parsed: bool) -> Around {
        let text = marked.replace('|', "");
        let document = Document::new(&text, 1, "rust");
        let settings = CompletionSettings {
            prefix_chars,
            suffix_chars,
            ..CompletionSettings::default()
        };
        let cursor = marked[..marked.find('|').unwrap()].chars().count();
        let (around, start, end) = window(&document, cursor, &settings);
        if !parsed {
            return around;
        }
        let tree = tandem_syntax::parse(tandem_syntax::Language::Rust, &text).unwrap();
        around.cut(syntax_cuts(document.rope(), &tree, start, cursor, end))
    }

    const SOURCE: &str = "fn one() -> u32 {\n    let total = compute(1);\n    total + 1\n}\n\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = |;\n    finish(x);\n}\n\nfn three() {}\n";

    #[test]
    fn the_window_is_cut_at_syntax_boundaries_where_the_document_has_a_tree() {
        // Reaching back into `one`'s body and forward past `two`: without a tree, the
        // window is what the settings allow, for the core to cut at whole lines.
        let plain = around(SOURCE, 55, 20, false);
        assert_eq!(
            plain.before,
            "al + 1\n}\n\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = "
        );
        assert_eq!(plain.after, ";\n    finish(x);\n}\n\n");
        assert!(!plain.starts_at_boundary && !plain.ends_at_boundary);
        // With one: from the item after the one the window starts in, to the end of `two`
        // (the window's edges are mid-statement and past the item's end).
        let cut = around(SOURCE, 55, 20, true);
        assert_eq!(
            cut.before,
            "fn two() {\n    let emoji = \"🦀🦀\";\n    let x = "
        );
        assert_eq!(cut.after, ";\n    finish(x);\n}");
        assert!(cut.starts_at_boundary && cut.ends_at_boundary);
        // From the file's start, nothing is cut.
        let whole = around(SOURCE, 1_000, 1_000, true);
        assert_eq!(whole.before, SOURCE[..SOURCE.find('|').unwrap()]);
        assert!(whole.starts_at_boundary && whole.ends_at_boundary);
    }

    /// The completion item for `suggestion` at the `|` of `marked`, in UTF-16, rendered as the
    /// edit's range, its new text, the filter text and the label.
    fn item(marked: &str, suggestion: &str) -> String {
        let text = marked.replace('|', "");
        let document = Document::new(&text, 1, "rust");
        let cursor = marked[..marked.find('|').unwrap()].chars().count();
        let LineCol { line, character } = document.position(cursor, PositionEncoding::Utf16);
        let typed = TypedWord::before(
            &document,
            lsp::Position::new(line, character),
            PositionEncoding::Utf16,
        );
        let Some(item) = completion_item(suggestion.to_owned(), &typed) else {
            return "no item".to_owned();
        };
        let Some(lsp::CompletionTextEdit::Edit(edit)) = &item.text_edit else {
            panic!("no text edit in {item:?}");
        };
        // What clients filter by: the text the edit replaces (VS Code, Neovim, eglot) and the
        // identifier before the cursor (Helix). Both begin the filter text.
        let start = document.char_offset(
            from_proto::position(edit.range.start),
            PositionEncoding::Utf16,
        );
        let replaced = document.rope().slice(start..cursor).to_string();
        let filter = item.filter_text.clone().unwrap();
        assert!(filter.starts_with(&replaced), "{filter:?} {replaced:?}");
        assert!(filter.starts_with(&typed.text), "{filter:?} {typed:?}");
        let range = edit.range;
        format!(
            "{}:{}-{}:{} {:?} filter {filter:?} label {:?}",
            range.start.line,
            range.start.character,
            range.end.line,
            range.end.character,
            edit.new_text,
            item.label
        )
    }

    /// Regression test for the bug of Helix never showing a suggestion while typing: the item
    /// had an empty `filterText`, which no typed prefix matches.
    #[test]
    fn completion_items_replace_the_word_being_typed() {
        expect![[r#"
            [
                "1:4-1:6 \"return a + b;\" filter \"return a + b;\" label \"return a + b;\"",
                "1:8-1:8 \"b\" filter \"b\" label \"b\"",
                "1:8-1:9 \"ba\" filter \"ba\" label \"ba\"",
                "0:4-0:7 \"caféine\" filter \"caféine\" label \"caféine\"",
                "0:3-0:5 \"ab_cd()\" filter \"ab_cd()\" label \"ab_cd()\"",
                "1:4-1:6 \"if a > b {\\n        a\\n    }\" filter \"if a > b {\" label \"if a > b {…\"",
                "1:0-1:0 \"\\n    a + b\" filter \"\" label \"a + b\"",
                "no item",
            ]
        "#]]
        .assert_debug_eq(&[
            item("fn f() {\n    re|\n}\n", "turn a + b;"),
            item("fn f() {\n    a + |\n}\n", "b"),
            item("fn f() {\n    foo.b|\n}\n", "a"),
            item("let caf|é = 1;", "éine"),
            item("🦀 ab|", "_cd()"),
            item("fn f() {\n    if|\n}\n", " a > b {\n        a\n    }"),
            item("fn f() {\n|\n}\n", "\n    a + b"),
            item("fn f() {\n    re|\n}\n", "  \n"),
        ]);
    }

    /// Inside a long body the window starts at a statement, indentation included, rather
    /// than dropping most of it to start at the next item.
    #[test]
    fn a_long_body_is_cut_at_a_statement() {
        let marked = "fn long() {\n    let a = 1;\n    let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = |\n}\n";
        let cut = around(marked, 45, 10, true);
        assert_eq!(cut.before, "    let c = 3;\n    let d = 4;\n    let e = ");
        assert!(cut.starts_at_boundary);
    }
}
