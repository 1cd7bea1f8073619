//! The agent's `Editor` in a language server: reads of open documents come from the ropes the
//! editor keeps in sync; writes become `workspace/applyEdit` requests carrying the document's
//! version, so an edit computed from text the user has since changed is refused, never applied
//! over their typing.
//!
//! A write is sent as the smallest edits that turn the stored text into the new one (a line diff,
//! each changed hunk trimmed to the characters that differ), so the editor keeps cursors, folds
//! and undo history outside the change.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use similar::{DiffOp, TextDiff};
use tandem_agent::editor::{BufferText, DiskSync, Editor, FileWrite, WriteError, Written};
use tandem_agent::settings::{ClosedFiles, EditSettings, NewFiles};
use tandem_agent::ShownFile;
use tandem_text::{Document, DocumentStore, PositionEncoding};
use tokio::sync::watch;
use tower_lsp::lsp_types::{
    request::ApplyWorkspaceEdit, ApplyWorkspaceEditParams, ApplyWorkspaceEditResponse, CreateFile,
    CreateFileOptions, DeleteFile, DeleteFileOptions, DocumentChangeOperation, DocumentChanges,
    OneOf, OptionalVersionedTextDocumentIdentifier, Position, ResourceOp, TextDocumentEdit,
    TextEdit, WorkspaceEdit,
};
use tower_lsp::Client;
use url::Url;

use crate::capabilities::ClientSupport;
use crate::save::{self, AgentEdits};

/// A pathological diff (huge files, few common lines) falls back to coarser hunks after this;
/// the edits stay correct, only less minimal.
const DIFF_TIMEOUT: Duration = Duration::from_millis(200);
/// How long an answered `workspace/applyEdit` waits for the `didChange` that goes with it: the
/// one the edit caused (eglot sends it from an idle timer 10–30 ms after answering), or the
/// user's that made the editor refuse it. Past this the editor is taken at its word.
pub(crate) const PENDING_CHANGE_WAIT: Duration = Duration::from_secs(1);

/// Counts the document notifications applied to the store, so that a write can wait for the
/// `didChange` an editor's answer implies instead of polling.
#[derive(Debug)]
pub(crate) struct Revisions(watch::Sender<u64>);

impl Default for Revisions {
    fn default() -> Self {
        Revisions(watch::channel(0).0)
    }
}

impl Revisions {
    /// Called after every `didOpen`, `didChange` and `didClose` is applied.
    pub(crate) fn bump(&self) {
        self.0.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Waits until `done` holds, checking after each document notification, for at most
    /// `limit`. Returns whether it held.
    pub(crate) async fn wait_until(&self, limit: Duration, done: impl Fn() -> bool) -> bool {
        let mut changes = self.0.subscribe();
        let waiting = async {
            loop {
                changes.borrow_and_update();
                if done() {
                    return;
                }
                // The sender lives in `self`, so this cannot fail while we wait.
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(limit, waiting).await;
        done()
    }
}

pub(crate) struct LspEditor {
    documents: Arc<DocumentStore>,
    revisions: Arc<Revisions>,
    client: Client,
    support: ClientSupport,
    encoding: PositionEncoding,
    settings: EditSettings,
    /// The documents the agent changed in the editor, for `sync_to_disk`.
    agent_edits: Arc<AgentEdits>,
}

impl LspEditor {
    pub(crate) fn new(
        documents: Arc<DocumentStore>,
        revisions: Arc<Revisions>,
        client: Client,
        support: ClientSupport,
        encoding: PositionEncoding,
        settings: EditSettings,
        agent_edits: Arc<AgentEdits>,
    ) -> Self {
        LspEditor {
            documents,
            revisions,
            client,
            support,
            encoding,
            settings,
            agent_edits,
        }
    }

    /// A write to a document the editor has open: versioned edits, or nothing.
    async fn write_open(
        &self,
        uri: Url,
        document: Document,
        write: &FileWrite,
    ) -> Result<Written, WriteError> {
        // Checked before anything is sent: a stale edit must not even reach the editor.
        let stale = match write.version {
            Some(version) => version != document.version(),
            // The tool read the disk while the file was closed; the buffer may hold other text.
            None => write.old_text.as_deref().unwrap_or_default() != document.text(),
        };
        if stale {
            return Err(WriteError::Stale);
        }
        // Without `documentChanges` an edit cannot carry the version it was computed from, so
        // a keystroke in flight could be overwritten: such editors get no edits to open files.
        if !self.support.apply_edit || !self.support.document_changes {
            return Err(WriteError::Failed(format!(
                "{} is open in the editor, which does not accept versioned workspace edits \
                 (workspace/applyEdit with documentChanges), and writing the disk under an open \
                 buffer would lose the user's unsaved text; nothing was written. Show the change \
                 to the user instead.",
                write.path.display()
            )));
        }
        let edits = text_edits(&document, &write.new_text, self.encoding);
        if edits.is_empty() {
            return Ok(Written::Buffer);
        }
        let version = document.version();
        let edit = self.text_edit(uri.clone(), Some(version), edits);
        let response = self.apply(label("edit", &write.path), edit).await?;
        // Either way the editor's answer implies a `didChange` (the edit's, or the keystroke
        // that made it refuse), which may come after the answer: until it does, the store holds
        // text the buffer no longer has, and the agent would take its own edit for the user's.
        let moved_on = || self.documents.get(&uri).map(|d| d.version()) != Some(version);
        let arrived = self
            .revisions
            .wait_until(PENDING_CHANGE_WAIT, moved_on)
            .await;
        if response.applied {
            if !arrived {
                tracing::warn!(%uri, version, "the editor applied an edit but sent no didChange for it within {PENDING_CHANGE_WAIT:?}");
            }
            return Ok(Written::Buffer);
        }
        // A refusal caused by the user typing meanwhile is staleness, resolved again on the
        // text they have now.
        if arrived {
            return Err(WriteError::Stale);
        }
        Err(refused(&response))
    }

    /// A write to an existing file the editor does not have open, per `edits.closedFiles`.
    async fn write_closed(&self, write: &FileWrite, old_text: &str) -> Result<Written, WriteError> {
        let uri = match Url::from_file_path(&write.path) {
            Ok(uri)
                if self.settings.closed_files == ClosedFiles::Editor && self.support.apply_edit =>
            {
                uri
            }
            _ => {
                return tandem_agent::editor::write_to_disk(&write.path, write.new_text.as_bytes())
                    .await
            }
        };
        // Without a version the editor applies the edits to whatever the file holds, so they
        // must be computed from what it holds now.
        let on_disk = tokio::fs::read(&write.path).await.map_err(|error| {
            WriteError::Failed(format!("cannot read {}: {error}", write.path.display()))
        })?;
        if on_disk != old_text.as_bytes() {
            return Err(WriteError::Stale);
        }
        let edits = text_edits(
            &Document::new(old_text, 0, ""),
            &write.new_text,
            self.encoding,
        );
        if edits.is_empty() {
            return Ok(Written::Buffer);
        }
        let edit = self.text_edit(uri, None, edits);
        let response = self.apply(label("edit", &write.path), edit).await?;
        if response.applied {
            Ok(Written::Buffer)
        } else {
            Err(refused(&response))
        }
    }

    /// A new file, per `edits.newFiles`.
    async fn write_new(&self, write: &FileWrite) -> Result<Written, WriteError> {
        let in_editor = self.settings.new_files == NewFiles::Editor
            && self.support.apply_edit
            && self.support.document_changes
            && self.support.create_files;
        let uri = match Url::from_file_path(&write.path) {
            Ok(uri) if in_editor => uri,
            _ => {
                return tandem_agent::editor::write_to_disk(&write.path, write.new_text.as_bytes())
                    .await
            }
        };
        let create = DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
            uri: uri.clone(),
            // Not `overwrite`: a file that appeared since the tool looked is not ours to replace.
            options: Some(CreateFileOptions {
                overwrite: None,
                ignore_if_exists: Some(false),
            }),
            annotation_id: None,
        }));
        let mut operations = vec![create];
        if !write.new_text.is_empty() {
            operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
                edits: vec![OneOf::Left(TextEdit {
                    range: tower_lsp::lsp_types::Range::default(),
                    new_text: write.new_text.clone(),
                })],
            }));
        }
        let edit = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(operations)),
            ..WorkspaceEdit::default()
        };
        let response = self.apply(label("create", &write.path), edit).await?;
        if response.applied {
            Ok(Written::Buffer)
        } else {
            Err(refused(&response))
        }
    }

    /// One document's edits as a workspace edit the client can take.
    fn text_edit(&self, uri: Url, version: Option<i32>, edits: Vec<TextEdit>) -> WorkspaceEdit {
        if self.support.document_changes {
            return WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }])),
                ..WorkspaceEdit::default()
            };
        }
        // A client without `documentChanges` takes only unversioned `changes`; only files it
        // does not have open get here (see `write_open`).
        WorkspaceEdit {
            changes: Some(HashMap::from([(uri, edits)])),
            ..WorkspaceEdit::default()
        }
    }

    async fn apply(
        &self,
        label: String,
        edit: WorkspaceEdit,
    ) -> Result<ApplyWorkspaceEditResponse, WriteError> {
        let params = ApplyWorkspaceEditParams {
            label: Some(label),
            edit,
        };
        self.client
            .send_request::<ApplyWorkspaceEdit>(params)
            .await
            .map_err(|error| {
                WriteError::Failed(format!(
                    "the editor did not take the edit (workspace/applyEdit failed: {error}); the \
                     file may be unchanged. Read it again before retrying"
                ))
            })
    }
}

impl Editor for LspEditor {
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        let uri = open_uri(&self.documents, path)?;
        let document = self.documents.get(&uri)?;
        Some(BufferText {
            text: document.text(),
            version: document.version(),
        })
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        Box::pin(async move {
            let open = open_uri(&self.documents, &write.path)
                .and_then(|uri| Some((uri.clone(), self.documents.get(&uri)?)));
            let (uri, written) = match (open, &write.old_text) {
                (Some((uri, document)), _) => {
                    let written = self.write_open(uri.clone(), document, &write).await;
                    (Some(uri), written)
                }
                (None, Some(old_text)) => (None, self.write_closed(&write, old_text).await),
                (None, None) => (None, self.write_new(&write).await),
            };
            if written == Ok(Written::Buffer) {
                if let Some(uri) = uri.or_else(|| Url::from_file_path(&write.path).ok()) {
                    self.agent_edits.record(uri);
                }
            }
            written
        })
    }

    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
        Box::pin(async move {
            let ask = self.settings.save_before_commands && self.support.tandem.save_documents;
            save::sync_to_disk(&self.client, ask, &self.documents, &self.agent_edits).await
        })
    }

    /// A `DeleteFile` workspace edit when the file is the editor's (open, or edits to closed
    /// files go to the editor) and the client takes one, so the editor closes its buffer and
    /// can undo; otherwise the disk, refused for open files, as the trait's default does.
    fn delete<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<(), WriteError>> {
        Box::pin(async move {
            let open = open_uri(&self.documents, path);
            let editors_file = open.is_some() || self.settings.closed_files == ClosedFiles::Editor;
            let by_edit = self.support.apply_edit
                && self.support.document_changes
                && self.support.delete_files;
            match (open, Url::from_file_path(path)) {
                (Some(uri), _) | (None, Ok(uri)) if editors_file && by_edit => {
                    let delete = DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                        uri,
                        options: Some(DeleteFileOptions {
                            recursive: None,
                            ignore_if_not_exists: Some(true),
                            annotation_id: None,
                        }),
                    }));
                    let edit = WorkspaceEdit {
                        document_changes: Some(DocumentChanges::Operations(vec![delete])),
                        ..WorkspaceEdit::default()
                    };
                    let response = self.apply(label("delete", path), edit).await?;
                    if response.applied {
                        Ok(())
                    } else {
                        Err(refused(&response))
                    }
                }
                (Some(_), _) => Err(WriteError::Refused(format!(
                    "{} is open in the editor, which cannot delete files by workspace edit; \
                     close it to delete it",
                    path.display()
                ))),
                _ => tokio::fs::remove_file(path).await.map_err(|error| {
                    WriteError::Failed(format!("cannot delete {}: {error}", path.display()))
                }),
            }
        })
    }
}

/// What the agent is told when the editor answers `applied: false`.
fn refused(response: &ApplyWorkspaceEditResponse) -> WriteError {
    let reason = response
        .failure_reason
        .as_deref()
        .filter(|reason| !reason.trim().is_empty())
        .unwrap_or("no reason given");
    WriteError::Refused(format!(
        "the editor refused the edit: {reason}; nothing was written. Read the file again; if the \
         user declined the change, ask them what they want instead of repeating it"
    ))
}

/// The label the editor shows for the edit (undo menus, confirmation dialogs).
fn label(verb: &str, path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    format!("Tandem: {verb} {name}")
}

/// The edits that turn `document`'s text into `new_text`: non-overlapping, in order, each range
/// in `encoding` and relative to the original text, as `workspace/applyEdit` wants them.
pub(crate) fn text_edits(
    document: &Document,
    new_text: &str,
    encoding: PositionEncoding,
) -> Vec<TextEdit> {
    let old_text = document.text();
    let rope = document.rope();
    let position = |byte: usize| {
        let at = document.position(rope.byte_to_char(byte), encoding);
        Position::new(at.line, at.character)
    };
    byte_edits(&old_text, new_text)
        .into_iter()
        .map(|(old, new)| TextEdit {
            range: tower_lsp::lsp_types::Range::new(position(old.start), position(old.end)),
            new_text: new_text[new].to_owned(),
        })
        .collect()
}

/// Pairs of (range in `old`, range in `new`) to replace, in order. Every boundary is a char
/// boundary and none falls between the `\r` and `\n` of a CRLF, where LSP has no position.
fn byte_edits(old: &str, new: &str) -> Vec<(Range<usize>, Range<usize>)> {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let starts = |slices: &mut dyn Iterator<Item = &str>| {
        let mut starts = vec![0];
        let mut at = 0;
        for slice in slices {
            at += slice.len();
            starts.push(at);
        }
        starts
    };
    let old_starts = starts(&mut diff.iter_old_slices());
    let new_starts = starts(&mut diff.iter_new_slices());
    let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut open = false;
    for op in diff.ops() {
        if let DiffOp::Equal { .. } = op {
            open = false;
            continue;
        }
        let (old_lines, new_lines) = (op.old_range(), op.new_range());
        let old_bytes = old_starts[old_lines.start]..old_starts[old_lines.end];
        let new_bytes = new_starts[new_lines.start]..new_starts[new_lines.end];
        match hunks.last_mut() {
            // Adjacent delete and insert ops are one change.
            Some((old_hunk, new_hunk)) if open => {
                old_hunk.end = old_bytes.end;
                new_hunk.end = new_bytes.end;
            }
            _ => hunks.push((old_bytes, new_bytes)),
        }
        open = true;
    }
    hunks
        .into_iter()
        .filter_map(|(old_hunk, new_hunk)| {
            let (o, n) = (&old[old_hunk.clone()], &new[new_hunk.clone()]);
            let mut prefix = common_prefix(o, n);
            if splits_crlf(o, prefix) {
                prefix -= 1;
            }
            let mut suffix = common_suffix(&o[prefix..], &n[prefix..]);
            if suffix > 0 && splits_crlf(o, o.len() - suffix) {
                suffix -= 1;
            }
            let old_range = old_hunk.start + prefix..old_hunk.end - suffix;
            let new_range = new_hunk.start + prefix..new_hunk.end - suffix;
            (!old_range.is_empty() || !new_range.is_empty()).then_some((old_range, new_range))
        })
        .collect()
}

/// Length in bytes of the longest common prefix, in whole chars.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

/// Length in bytes of the longest common suffix, in whole chars.
fn common_suffix(a: &str, b: &str) -> usize {
    a.chars()
        .rev()
        .zip(b.chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

fn splits_crlf(text: &str, at: usize) -> bool {
    text[..at].ends_with('\r') && text[at..].starts_with('\n')
}

/// What an attachment of `text` from `document` showed the model: the lines `lines` (1-based,
/// inclusive) or, without them, the whole file, at `version` (`None`: read from disk). `None`
/// when the attachment is cut (the model did not see all of it) or the URI is not a file.
pub(crate) fn shown_file(
    uri: &Url,
    document: &Document,
    version: Option<i32>,
    lines: Option<(usize, usize)>,
    text: &str,
) -> Option<ShownFile> {
    if text.len() > crate::actions::MAX_ATTACHMENT_BYTES {
        return None;
    }
    Some(ShownFile {
        path: path_for_uri(uri)?,
        content: document.text(),
        version,
        lines,
    })
}

/// The URI under which the editor has `path` open, if it does.
pub(crate) fn open_uri(documents: &DocumentStore, path: &Path) -> Option<Url> {
    if let Ok(uri) = Url::from_file_path(path) {
        if documents.get(&uri).is_some() {
            return Some(uri);
        }
    }
    // The editor may name the file differently (a symlink, another spelling of the same path).
    documents
        .snapshot()
        .into_iter()
        .map(|(uri, _)| uri)
        .find(|uri| path_for_uri(uri).is_some_and(|open| open == path))
}

/// The file a `file:` URI names, canonical when it exists.
pub(crate) fn path_for_uri(uri: &Url) -> Option<PathBuf> {
    let path = uri.to_file_path().ok()?;
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::future::poll_fn;
    use tower::Service;
    use tower_lsp::jsonrpc::{self, Request, Response};
    use tower_lsp::lsp_types::{InitializeParams, InitializeResult};
    use tower_lsp::{ClientSocket, LanguageServer, LspService};
    use PositionEncoding::*;

    /// Applies `edits` to `old` the way a client does: every range resolved against the original
    /// text, after checking they are ordered and do not overlap. Positions are resolved by
    /// [`reference_offset`], not by `tandem-text`, whose conversions `text_edits` itself uses: a
    /// bug shared by both directions would cancel out.
    fn apply(old: &str, edits: &[TextEdit], encoding: PositionEncoding) -> String {
        let chars: Vec<char> = old.chars().collect();
        let mut resolved = Vec::new();
        let mut last_end = 0;
        for edit in edits {
            let start = reference_offset(&chars, edit.range.start, encoding);
            let end = reference_offset(&chars, edit.range.end, encoding);
            assert!(last_end <= start && start <= end, "{edits:?}");
            last_end = end;
            resolved.push((start, end, edit.new_text.as_str()));
        }
        let mut chars = chars;
        for (start, end, text) in resolved.into_iter().rev() {
            chars.splice(start..end, text.chars());
        }
        chars.into_iter().collect()
    }

    /// The char index `position` names in `chars`, found the slow, obvious way: walk the chars,
    /// count `\n`, `\r\n` and a lone `\r` (nothing else) as line breaks, then count the line's
    /// chars in `encoding`'s units. Panics unless the position names exactly a char boundary
    /// within the line or its end: an edit must not rely on clamping or snapping.
    fn reference_offset(chars: &[char], position: Position, encoding: PositionEncoding) -> usize {
        let mut index = 0;
        let mut line = 0;
        while line < position.line {
            match chars.get(index) {
                None => panic!("{position:?} is past the last line"),
                Some('\n') => line += 1,
                Some('\r') => {
                    if chars.get(index + 1) == Some(&'\n') {
                        index += 1;
                    }
                    line += 1;
                }
                Some(_) => {}
            }
            index += 1;
        }
        let mut units = 0;
        while units < position.character {
            let c = match chars.get(index) {
                Some(&c) if c != '\n' && c != '\r' => c,
                _ => panic!("{position:?} is past the end of its line"),
            };
            units += match encoding {
                Utf8 => c.len_utf8(),
                Utf16 => c.len_utf16(),
                Utf32 => 1,
            } as u32;
            index += 1;
        }
        assert_eq!(units, position.character, "{position:?} is inside a char");
        index
    }

    fn shown(edits: &[TextEdit]) -> Vec<String> {
        edits
            .iter()
            .map(|edit| {
                let (start, end) = (edit.range.start, edit.range.end);
                format!(
                    "{}:{}-{}:{} {:?}",
                    start.line, start.character, end.line, end.character, edit.new_text
                )
            })
            .collect()
    }

    #[test]
    fn text_edits_are_minimal_and_in_the_negotiated_encoding() {
        let cases: &[(&str, &str, PositionEncoding, &[&str])] = &[
            (
                "fn a() {}\nfn b() {}\n",
                "fn a() {}\nfn c() {}\n",
                Utf16,
                &["1:3-1:4 \"c\""],
            ),
            ("same\n", "same\n", Utf16, &[]),
            ("", "new\n", Utf16, &["0:0-0:0 \"new\\n\""]),
            ("gone\n", "", Utf16, &["0:0-1:0 \"\""]),
            // Two separate changes stay two edits; the lines between are untouched.
            (
                "a\nb\nc\nd\ne\n",
                "A\nb\nc\nd\nE\n",
                Utf16,
                &["0:0-0:1 \"A\"", "4:0-4:1 \"E\""],
            ),
            // After an emoji, UTF-16 counts two units, UTF-8 four bytes, UTF-32 one char.
            ("x😀y = 1\n", "x😀y = 2\n", Utf16, &["0:7-0:8 \"2\""]),
            ("x😀y = 1\n", "x😀y = 2\n", Utf8, &["0:9-0:10 \"2\""]),
            ("x😀y = 1\n", "x😀y = 2\n", Utf32, &["0:6-0:7 \"2\""]),
            // Replacing one emoji by another with the same first UTF-16 unit replaces whole chars.
            ("😀", "😁", Utf16, &["0:0-0:2 \"😁\""]),
            // CRLF to LF: the range ends on the next line, never between `\r` and `\n`.
            ("a\r\nb", "a\nb", Utf16, &["0:1-1:0 \"\\n\""]),
            ("a\nb", "a\r\nb", Utf16, &["0:1-0:1 \"\\r\""]),
            // A lone CR is a line break of its own.
            ("a\rb\rc", "a\rB\rc", Utf16, &["1:0-1:1 \"B\""]),
            ("a\rb", "a\r\nb", Utf16, &["1:0-1:0 \"\\n\""]),
        ];
        for &(old, new, encoding, expected) in cases {
            let edits = text_edits(&Document::new(old, 7, ""), new, encoding);
            assert_eq!(shown(&edits), expected, "{old:?} -> {new:?} in {encoding}");
            assert_eq!(apply(old, &edits, encoding), new, "{old:?} -> {new:?}");
        }
    }

    /// Randomised differential test: whatever the texts, applying the edits gives the new text.
    #[test]
    fn text_edits_applied_to_the_original_give_the_new_text() {
        // U+2028 and U+0085 are not LSP line breaks, though ropes may count them as such.
        const PIECES: &[&str] = &[
            "a",
            "b",
            "é",
            "😀",
            "\r",
            "\n",
            "\r\n",
            " ",
            "fn x() {}\n",
            "\u{2028}",
            "\u{85}",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for round in 0..3000 {
            let old: Vec<&str> = (0..next(12)).map(|_| PIECES[next(PIECES.len())]).collect();
            let mut new = old.clone();
            for _ in 0..next(4) {
                match next(3) {
                    0 if !new.is_empty() => {
                        new.remove(next(new.len()));
                    }
                    1 if !new.is_empty() => {
                        let i = next(new.len());
                        new[i] = PIECES[next(PIECES.len())];
                    }
                    _ => new.insert(next(new.len() + 1), PIECES[next(PIECES.len())]),
                }
            }
            let (old, new) = (old.concat(), new.concat());
            for encoding in [Utf8, Utf16, Utf32] {
                let edits = text_edits(&Document::new(&old, 1, ""), &new, encoding);
                assert_eq!(
                    apply(&old, &edits, encoding),
                    new,
                    "round {round}: {old:?} -> {new:?} in {encoding}: {edits:?}"
                );
            }
        }
    }

    /// A language server whose only purpose is to hand out a `Client` wired to a socket the test
    /// answers as the editor would.
    struct Probe {
        client: Client,
    }

    #[tower_lsp::async_trait]
    impl LanguageServer for Probe {
        async fn initialize(&self, _: InitializeParams) -> jsonrpc::Result<InitializeResult> {
            Ok(InitializeResult::default())
        }

        async fn shutdown(&self) -> jsonrpc::Result<()> {
            Ok(())
        }
    }

    /// A client that refuses requests until `initialize` succeeded; this one has.
    async fn connected_client() -> (Client, ClientSocket, LspService<Probe>) {
        let (mut service, socket) = LspService::new(|client| Probe { client });
        poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
        let initialize = Request::build("initialize")
            .params(json!({"capabilities": {}}))
            .id(1)
            .finish();
        service.call(initialize).await.unwrap();
        let client = service.inner().client.clone();
        (client, socket, service)
    }

    const FULL: ClientSupport = ClientSupport {
        tandem: crate::capabilities::TandemCapabilities {
            events: false,
            request_approval: false,
            save_documents: false,
            diagnostics: false,
        },
        apply_edit: true,
        document_changes: true,
        create_files: true,
        delete_files: true,
        change_annotations: true,
        work_done_progress: false,
        show_document: false,
        configuration: false,
    };

    struct Fixture {
        editor: LspEditor,
        documents: Arc<DocumentStore>,
        socket: ClientSocket,
        _service: LspService<Probe>,
    }

    const PATH: &str = "/tandem-bridge-test/src/lib.rs";

    fn uri() -> Url {
        Url::from_file_path(PATH).unwrap()
    }

    async fn fixture(support: ClientSupport, settings: EditSettings) -> Fixture {
        let (client, socket, service) = connected_client().await;
        let documents = Arc::new(DocumentStore::new());
        documents.open(uri(), Document::new("fn a() {}\nfn b() {}\n", 4, "rust"));
        let editor = LspEditor::new(
            documents.clone(),
            Arc::default(),
            client,
            support,
            Utf16,
            settings,
            Arc::default(),
        );
        Fixture {
            editor,
            documents,
            socket,
            _service: service,
        }
    }

    fn write(old: Option<&str>, new: &str, version: Option<i32>) -> FileWrite {
        FileWrite {
            path: PathBuf::from(PATH),
            old_text: old.map(str::to_owned),
            new_text: new.to_owned(),
            version,
        }
    }

    /// Runs `write` while answering the one request it sends with `answer` (after `before`, what
    /// the user does meanwhile). Returns the result and the request's params.
    async fn exchange(
        fixture: &mut Fixture,
        write: FileWrite,
        before: impl FnOnce(&DocumentStore),
        answer: jsonrpc::Result<Value>,
    ) -> (Result<Written, WriteError>, Value) {
        use futures::{SinkExt, StreamExt};
        let editor = &fixture.editor;
        let documents = &fixture.documents;
        let socket = &mut fixture.socket;
        let answering = async move {
            let request = socket.next().await.unwrap();
            assert_eq!(request.method(), "workspace/applyEdit");
            let (_, id, params) = request.into_parts();
            before(documents);
            socket
                .send(Response::from_parts(id.unwrap(), answer))
                .await
                .unwrap();
            params.unwrap()
        };
        tokio::join!(editor.write(write), answering)
    }

    fn nothing_sent(fixture: &mut Fixture) -> bool {
        use futures::{FutureExt, StreamExt};
        fixture.socket.next().now_or_never().is_none()
    }

    const NEW: &str = "fn a() {}\nfn c() {}\n";

    #[tokio::test]
    async fn open_document_gets_a_versioned_minimal_edit() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let write = write(Some("fn a() {}\nfn b() {}\n"), NEW, Some(4));
        let (result, params) = exchange(&mut f, write, |_| {}, Ok(json!({"applied": true}))).await;
        assert_eq!(result, Ok(Written::Buffer));
        assert_eq!(
            params,
            json!({
                "label": "Tandem: edit lib.rs",
                "edit": {"documentChanges": [{
                    "textDocument": {"uri": uri(), "version": 4},
                    "edits": [{
                        "range": {"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 4}},
                        "newText": "c"
                    }]
                }]}
            })
        );
    }

    #[tokio::test]
    async fn open_document_is_deleted_by_workspace_edit_or_refused_without_support() {
        use futures::{SinkExt, StreamExt};
        let mut f = fixture(FULL, EditSettings::default()).await;
        let (editor, socket) = (&f.editor, &mut f.socket);
        let answering = async move {
            let request = socket.next().await.unwrap();
            let (_, id, params) = request.into_parts();
            socket
                .send(Response::from_parts(
                    id.unwrap(),
                    Ok(json!({"applied": true})),
                ))
                .await
                .unwrap();
            params.unwrap()
        };
        let (result, params) = tokio::join!(editor.delete(Path::new(PATH)), answering);
        assert_eq!(result, Ok(()));
        assert_eq!(
            params,
            json!({
                "label": "Tandem: delete lib.rs",
                "edit": {"documentChanges": [
                    {"kind": "delete", "uri": uri(), "options": {"ignoreIfNotExists": true}}
                ]}
            })
        );

        let support = ClientSupport {
            delete_files: false,
            ..FULL
        };
        let mut f = fixture(support, EditSettings::default()).await;
        let result = f.editor.delete(Path::new(PATH)).await;
        assert!(
            matches!(&result, Err(WriteError::Refused(m)) if m.contains("close it to delete it")),
            "{result:?}"
        );
        assert!(nothing_sent(&mut f));
    }

    #[tokio::test]
    async fn stale_version_is_refused_without_sending_anything() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let result = f.editor.write(write(Some("x"), NEW, Some(3))).await;
        assert_eq!(result, Err(WriteError::Stale));
        assert!(nothing_sent(&mut f));
    }

    #[tokio::test]
    async fn disk_read_of_a_since_opened_buffer_with_other_text_is_stale() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let result = f.editor.write(write(Some("fn a() {}\n"), NEW, None)).await;
        assert_eq!(result, Err(WriteError::Stale));
        assert!(nothing_sent(&mut f));
    }

    #[tokio::test]
    async fn open_document_without_apply_edit_fails_and_leaves_the_disk_alone() {
        let support = ClientSupport {
            apply_edit: false,
            ..FULL
        };
        let mut f = fixture(support, EditSettings::default()).await;
        let result = f.editor.write(write(Some("x"), NEW, Some(4))).await;
        assert!(
            matches!(&result, Err(WriteError::Failed(message)) if message.contains("does not accept versioned workspace edits")),
            "{result:?}"
        );
        assert!(nothing_sent(&mut f));
        assert!(!Path::new(PATH).exists());
    }

    #[tokio::test]
    async fn refusal_after_the_user_typed_is_stale() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let typed = |documents: &DocumentStore| {
            documents.change(&uri(), 5, &[], Utf16).map(drop).unwrap();
        };
        let answer = Ok(json!({"applied": false, "failureReason": "version mismatch"}));
        let (result, _) = exchange(&mut f, write(None, NEW, Some(4)), typed, answer).await;
        assert_eq!(result, Err(WriteError::Stale));
    }

    #[tokio::test]
    async fn refusal_names_the_editors_reason() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let answer = Ok(json!({"applied": false, "failureReason": "user declined"}));
        let (result, _) = exchange(&mut f, write(None, NEW, Some(4)), |_| {}, answer).await;
        let Err(WriteError::Refused(message)) = result else {
            panic!("{result:?}");
        };
        assert!(
            message.starts_with("the editor refused the edit: user declined;"),
            "{message}"
        );
        let answer = Ok(json!({"applied": false}));
        let (result, _) = exchange(&mut f, write(None, NEW, Some(4)), |_| {}, answer).await;
        assert!(
            matches!(&result, Err(WriteError::Refused(m)) if m.contains("no reason given")),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn request_error_is_a_failure() {
        let mut f = fixture(FULL, EditSettings::default()).await;
        let answer = Err(jsonrpc::Error::method_not_found());
        let (result, _) = exchange(&mut f, write(None, NEW, Some(4)), |_| {}, answer).await;
        assert!(
            matches!(&result, Err(WriteError::Failed(m)) if m.contains("workspace/applyEdit failed")),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn client_without_document_changes_gets_no_unversioned_edit_to_an_open_document() {
        let support = ClientSupport {
            document_changes: false,
            ..FULL
        };
        let f = fixture(support, EditSettings::default()).await;
        let result = f.editor.write(write(None, NEW, Some(4))).await;
        assert!(
            matches!(&result, Err(WriteError::Failed(message)) if message.contains("versioned")),
            "{result:?}"
        );
    }

    /// A directory of its own under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("tandem-{name}-{}", std::process::id()));
            // Left over from a run that was killed before it could clean up.
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(std::fs::canonicalize(dir).unwrap())
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[tokio::test]
    async fn new_file_is_created_in_the_editor() {
        let dir = TempDir::new("bridge-create");
        let path = dir.0.join("new.rs");
        let mut f = fixture(FULL, EditSettings::default()).await;
        let write = FileWrite {
            path: path.clone(),
            old_text: None,
            new_text: "fn main() {}\n".to_owned(),
            version: None,
        };
        let answer = Ok(json!({"applied": true}));
        let (result, params) = exchange(&mut f, write, |_| {}, answer).await;
        assert_eq!(result, Ok(Written::Buffer));
        let uri = Url::from_file_path(&path).unwrap();
        assert_eq!(
            params,
            json!({
                "label": "Tandem: create new.rs",
                "edit": {"documentChanges": [
                    {"kind": "create", "uri": uri, "options": {"ignoreIfExists": false}},
                    {"textDocument": {"uri": uri, "version": null}, "edits": [{
                        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "newText": "fn main() {}\n"
                    }]}
                ]}
            })
        );
        assert!(!path.exists(), "the editor creates it, not the server");
    }

    #[tokio::test]
    async fn new_file_goes_to_disk_without_create_support() {
        let dir = TempDir::new("bridge-create-disk");
        let path = dir.0.join("deep/new.rs");
        let support = ClientSupport {
            create_files: false,
            ..FULL
        };
        let mut f = fixture(support, EditSettings::default()).await;
        let write = FileWrite {
            path: path.clone(),
            old_text: None,
            new_text: "x\n".to_owned(),
            version: None,
        };
        assert_eq!(f.editor.write(write).await, Ok(Written::Disk));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x\n");
        assert!(nothing_sent(&mut f));
    }

    #[tokio::test]
    async fn closed_file_goes_to_disk_by_default_and_to_the_editor_when_asked() {
        let dir = TempDir::new("bridge-closed");
        let path = dir.0.join("closed.rs");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let closed = |old: &str| FileWrite {
            path: path.clone(),
            old_text: Some(old.to_owned()),
            new_text: "one\n2\n".to_owned(),
            version: None,
        };

        let mut f = fixture(FULL, EditSettings::default()).await;
        assert_eq!(
            f.editor.write(closed("one\ntwo\n")).await,
            Ok(Written::Disk)
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n2\n");
        assert!(nothing_sent(&mut f));

        std::fs::write(&path, "one\ntwo\n").unwrap();
        let settings = EditSettings {
            closed_files: ClosedFiles::Editor,
            ..EditSettings::default()
        };
        let mut f = fixture(FULL, settings).await;
        let answer = Ok(json!({"applied": true}));
        let (result, params) = exchange(&mut f, closed("one\ntwo\n"), |_| {}, answer).await;
        assert_eq!(result, Ok(Written::Buffer));
        assert_eq!(
            params["edit"],
            json!({"documentChanges": [{
                "textDocument": {"uri": Url::from_file_path(&path).unwrap(), "version": null},
                "edits": [{
                    "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}},
                    "newText": "2"
                }]
            }]})
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");

        // The disk moved on since the tool read it: an unversioned edit would land on other text.
        assert_eq!(
            f.editor.write(closed("one\n")).await,
            Err(WriteError::Stale)
        );
        assert!(nothing_sent(&mut f));
    }

    #[cfg(unix)]
    #[test]
    fn open_uri_finds_a_document_opened_through_a_symlink() {
        let dir = TempDir::new("bridge-open-uri");
        std::fs::create_dir_all(dir.0.join("real")).unwrap();
        std::os::unix::fs::symlink(dir.0.join("real"), dir.0.join("link")).unwrap();
        std::fs::write(dir.0.join("real/lib.rs"), "").unwrap();
        let documents = DocumentStore::new();
        let spelled = Url::from_file_path(dir.0.join("link/lib.rs")).unwrap();
        documents.open(spelled.clone(), Document::new("text", 2, "rust"));
        assert_eq!(
            open_uri(&documents, &dir.0.join("real/lib.rs")),
            Some(spelled)
        );
        assert_eq!(open_uri(&documents, &dir.0.join("real/main.rs")), None);
    }
}
