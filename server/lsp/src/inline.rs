//! Inline chat: a turn that may change only one range of one document. Its writes go to an
//! overlay, checked against the range; when the turn ends the overlay becomes one workspace edit,
//! proposed for confirmation (change annotations) or applied, per setting.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use tandem_agent::editor::{BufferText, DiskSync, Editor, FileWrite, WriteError, Written};
use tandem_text::{Document, PositionEncoding};
use tower_lsp::lsp_types::{
    AnnotatedTextEdit, ChangeAnnotation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, TextDocumentEdit, WorkspaceEdit,
};
use url::Url;

use crate::bridge;
use crate::capabilities::ClientSupport;

/// The id of the one change annotation an inline edit carries.
const ANNOTATION_ID: &str = "tandem.inlineChat";

pub(crate) struct ScopedEditor {
    inner: Arc<dyn Editor>,
    path: PathBuf,
    /// The document's text before the range: every accepted write keeps it byte for byte.
    prefix: String,
    /// The document's text after the range.
    suffix: String,
    original: String,
    version: i32,
    shown_range: String,
    /// The text with every accepted write; `None` until one is.
    overlay: Mutex<Option<String>>,
}

impl ScopedEditor {
    /// `original` is the document's text when the turn starts (at `version`); `range` the byte
    /// range the turn may change; `shown_range` how to name it to the model ("lines 3-9 of
    /// src/lib.rs").
    pub(crate) fn new(
        inner: Arc<dyn Editor>,
        path: PathBuf,
        original: String,
        version: Option<i32>,
        range: Range<usize>,
        shown_range: String,
    ) -> Self {
        // A range off the text or inside a char is widened to whole chars rather than panicking.
        let mut start = range.start.min(original.len());
        while !original.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = range.end.clamp(start, original.len());
        while !original.is_char_boundary(end) {
            end += 1;
        }
        ScopedEditor {
            inner,
            path,
            prefix: original[..start].to_owned(),
            suffix: original[end..].to_owned(),
            original,
            version: version.unwrap_or(0),
            shown_range,
            overlay: Mutex::new(None),
        }
    }

    /// The document's text with every accepted write, if any write was accepted.
    pub(crate) fn proposed_text(&self) -> Option<String> {
        self.overlay().clone()
    }

    fn overlay(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // The overlay is replaced whole, so a panic elsewhere cannot leave it half-written.
        self.overlay.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn accept(&self, write: FileWrite) -> Result<Written, WriteError> {
        let mut overlay = self.overlay();
        let current = overlay.as_deref().unwrap_or(&self.original);
        let stale = write.version.is_some_and(|version| version != self.version)
            || write.old_text.as_deref() != Some(current);
        if stale {
            return Err(WriteError::Stale);
        }
        if let Some(reason) = self.refusal(&write.path, Some(&write.new_text)) {
            return Err(WriteError::Refused(reason));
        }
        *overlay = Some(write.new_text);
        Ok(Written::Proposed)
    }
}

impl Editor for ScopedEditor {
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        if path != self.path {
            return self.inner.buffer(path);
        }
        Some(BufferText {
            text: self
                .overlay()
                .clone()
                .unwrap_or_else(|| self.original.clone()),
            version: self.version,
        })
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        // Another file is refused before any staleness check: its text is not the overlay's.
        let result = match self.refusal(&write.path, None) {
            Some(reason) => Err(WriteError::Refused(reason)),
            None => self.accept(write),
        };
        Box::pin(async move { result })
    }

    /// The range is the rule, whatever the model has read: the edit tool asks this before it
    /// sends a model shown only the selection to read the lines it may not change anyway.
    fn refusal(&self, path: &Path, new_text: Option<&str>) -> Option<String> {
        if path != self.path {
            return Some(format!(
                "inline chat may only change {}; leave other files alone",
                self.shown_range
            ));
        }
        let new = new_text?;
        let inside = new.len() >= self.prefix.len() + self.suffix.len()
            && new.starts_with(&self.prefix)
            && new.ends_with(&self.suffix);
        (!inside).then(|| {
            format!(
                "this change touches text outside {}; change only that range",
                self.shown_range
            )
        })
    }

    /// The overlay is a proposal, not a buffer's text: only what the editor holds is saved.
    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
        self.inner.sync_to_disk()
    }
}

/// Inline chat's result as one edit of `document` (the text the turn started from, at its
/// version). With `needs_confirmation` and a client that supports change annotations, every edit
/// carries an annotation asking the user to confirm it.
pub(crate) fn final_edit(
    uri: &Url,
    document: &Document,
    new_text: &str,
    encoding: PositionEncoding,
    support: &ClientSupport,
    label: &str,
    needs_confirmation: bool,
) -> WorkspaceEdit {
    let edits = bridge::text_edits(document, new_text, encoding);
    if !support.document_changes {
        // Such a client knows neither versions nor annotations; `changes` is all it takes.
        return WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        };
    }
    let annotate = needs_confirmation && support.change_annotations;
    let edits = edits
        .into_iter()
        .map(|text_edit| {
            if annotate {
                OneOf::Right(AnnotatedTextEdit {
                    text_edit,
                    annotation_id: ANNOTATION_ID.to_owned(),
                })
            } else {
                OneOf::Left(text_edit)
            }
        })
        .collect();
    let change_annotations = annotate.then(|| {
        HashMap::from([(
            ANNOTATION_ID.to_owned(),
            ChangeAnnotation {
                label: label.to_owned(),
                needs_confirmation: Some(true),
                description: Some("Proposed by Tandem's inline chat".to_owned()),
            },
        )])
    });
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier {
                uri: uri.clone(),
                version: Some(document.version()),
            },
            edits,
        }])),
        change_annotations,
        ..WorkspaceEdit::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The session's editor behind the overlay: one other open file, and a record of writes that
    /// must never reach it.
    #[derive(Default)]
    struct Inner {
        writes: Mutex<Vec<FileWrite>>,
    }

    impl Editor for Inner {
        fn buffer(&self, path: &Path) -> Option<BufferText> {
            (path == Path::new("/p/other.rs")).then(|| BufferText {
                text: "other".to_owned(),
                version: 1,
            })
        }

        fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
            self.writes.lock().unwrap().push(write);
            Box::pin(async { Ok(Written::Buffer) })
        }

        fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
            Box::pin(async { Default::default() })
        }
    }

    const ORIGINAL: &str = "fn f() {\n    old();\n}\n";
    const BODY: &str = "    old();\n";

    fn scoped(inner: Arc<Inner>) -> ScopedEditor {
        let start = ORIGINAL.find(BODY).unwrap();
        ScopedEditor::new(
            inner,
            PathBuf::from("/p/lib.rs"),
            ORIGINAL.to_owned(),
            Some(7),
            start..start + BODY.len(),
            "lines 2-2 of lib.rs".to_owned(),
        )
    }

    fn write(path: &str, old: &str, new: &str) -> FileWrite {
        FileWrite {
            path: PathBuf::from(path),
            old_text: Some(old.to_owned()),
            new_text: new.to_owned(),
            version: Some(7),
        }
    }

    #[tokio::test]
    async fn writes_inside_the_range_go_to_the_overlay() {
        let inner = Arc::new(Inner::default());
        let editor = scoped(inner.clone());
        assert_eq!(editor.proposed_text(), None);
        let grown = "fn f() {\n    new();\n    more();\n}\n";
        let shrunk = "fn f() {\n}\n";
        let regrown = "fn f() {\n    last();\n}\n";
        let mut current = ORIGINAL;
        for next in [grown, shrunk, regrown] {
            let result = editor.write(write("/p/lib.rs", current, next)).await;
            assert_eq!(result, Ok(Written::Proposed), "{next:?}");
            let buffer = editor.buffer(Path::new("/p/lib.rs")).unwrap();
            assert_eq!((buffer.text.as_str(), buffer.version), (next, 7));
            current = next;
        }
        assert_eq!(editor.proposed_text().as_deref(), Some(regrown));
        assert!(inner.writes.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn writes_outside_the_range_are_refused() {
        let inner = Arc::new(Inner::default());
        let editor = scoped(inner.clone());
        let outside =
            "this change touches text outside lines 2-2 of lib.rs; change only that range";
        let cases = [
            ("before", "fn g() {\n    old();\n}\n"),
            ("after", "fn f() {\n    old();\n};\n"),
            ("everything", ""),
        ];
        for (name, new) in cases {
            let result = editor.write(write("/p/lib.rs", ORIGINAL, new)).await;
            assert_eq!(result, Err(WriteError::Refused(outside.into())), "{name}");
        }
        let result = editor.write(write("/p/other.rs", "other", "changed")).await;
        assert_eq!(
            result,
            Err(WriteError::Refused(
                "inline chat may only change lines 2-2 of lib.rs; leave other files alone".into()
            ))
        );
        assert_eq!(editor.proposed_text(), None);
        assert!(inner.writes.lock().unwrap().is_empty());
        // The same reasons, asked before any write (the file tools ask before their own checks).
        assert_eq!(
            editor.refusal(Path::new("/p/lib.rs"), Some(cases[0].1)),
            Some(outside.into())
        );
        assert_eq!(editor.refusal(Path::new("/p/lib.rs"), None), None);
        assert!(editor.refusal(Path::new("/p/other.rs"), None).is_some());
        let inside = "fn f() {\n    new();\n}\n";
        assert_eq!(editor.refusal(Path::new("/p/lib.rs"), Some(inside)), None);
    }

    #[tokio::test]
    async fn writes_computed_from_text_the_overlay_replaced_are_stale() {
        let editor = scoped(Arc::new(Inner::default()));
        let first = "fn f() {\n    first();\n}\n";
        let result = editor.write(write("/p/lib.rs", ORIGINAL, first)).await;
        assert_eq!(result, Ok(Written::Proposed));
        let second = "fn f() {\n    second();\n}\n";
        let result = editor.write(write("/p/lib.rs", ORIGINAL, second)).await;
        assert_eq!(result, Err(WriteError::Stale));
        let mut other_version = write("/p/lib.rs", first, second);
        other_version.version = Some(6);
        assert_eq!(editor.write(other_version).await, Err(WriteError::Stale));
        assert_eq!(editor.proposed_text().as_deref(), Some(first));
    }

    #[tokio::test]
    async fn overlapping_prefix_and_suffix_do_not_pass_for_the_range() {
        // "a\nb" starts with the prefix and ends with the suffix only by sharing the `\n`.
        let editor = ScopedEditor::new(
            Arc::new(Inner::default()),
            PathBuf::from("/p/lib.rs"),
            "a\nX\nb".to_owned(),
            Some(7),
            2..3,
            "line 2".to_owned(),
        );
        let result = editor.write(write("/p/lib.rs", "a\nX\nb", "a\nb")).await;
        assert!(matches!(result, Err(WriteError::Refused(_))), "{result:?}");
        let result = editor.write(write("/p/lib.rs", "a\nX\nb", "a\n\nb")).await;
        assert_eq!(result, Ok(Written::Proposed));
    }

    #[test]
    fn other_files_read_through_to_the_inner_editor() {
        let editor = scoped(Arc::new(Inner::default()));
        assert_eq!(
            editor.buffer(Path::new("/p/other.rs")).map(|b| b.text),
            Some("other".to_owned())
        );
        assert_eq!(editor.buffer(Path::new("/p/none.rs")), None);
        assert_eq!(
            editor.buffer(Path::new("/p/lib.rs")).map(|b| b.text),
            Some(ORIGINAL.to_owned())
        );
    }

    #[tokio::test]
    async fn range_inside_a_char_is_widened_to_whole_chars() {
        // Bytes 2..3 fall inside the emoji (bytes 1..5): the emoji itself may change.
        let editor = ScopedEditor::new(
            Arc::new(Inner::default()),
            PathBuf::from("/p/lib.rs"),
            "a😀b".to_owned(),
            None,
            2..3,
            "the emoji".to_owned(),
        );
        assert_eq!(editor.buffer(Path::new("/p/lib.rs")).unwrap().version, 0);
        let mut change = write("/p/lib.rs", "a😀b", "a😁b");
        change.version = Some(0);
        assert_eq!(editor.write(change).await, Ok(Written::Proposed));
    }

    fn support(document_changes: bool, change_annotations: bool) -> ClientSupport {
        ClientSupport {
            apply_edit: true,
            document_changes,
            change_annotations,
            ..ClientSupport::default()
        }
    }

    #[test]
    fn final_edit_shapes() {
        let uri = Url::parse("file:///p/lib.rs").unwrap();
        let document = Document::new(ORIGINAL, 7, "rust");
        let new = "fn f() {\n    new();\n}\n";
        let edit = |support: ClientSupport, confirm: bool| {
            let edit = final_edit(
                &uri,
                &document,
                new,
                PositionEncoding::Utf16,
                &support,
                "Tandem: inline edit of lines 2-2 of lib.rs",
                confirm,
            );
            serde_json::to_value(edit).unwrap()
        };
        let range =
            json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 7}});
        assert_eq!(
            edit(support(true, true), true),
            json!({
                "documentChanges": [{
                    "textDocument": {"uri": "file:///p/lib.rs", "version": 7},
                    "edits": [{"range": range, "newText": "new", "annotationId": "tandem.inlineChat"}]
                }],
                "changeAnnotations": {"tandem.inlineChat": {
                    "label": "Tandem: inline edit of lines 2-2 of lib.rs",
                    "needsConfirmation": true,
                    "description": "Proposed by Tandem's inline chat"
                }}
            })
        );
        let plain = json!({
            "documentChanges": [{
                "textDocument": {"uri": "file:///p/lib.rs", "version": 7},
                "edits": [{"range": range, "newText": "new"}]
            }]
        });
        // Applying rather than proposing, or a client without annotations: plain edits.
        assert_eq!(edit(support(true, true), false), plain);
        assert_eq!(edit(support(true, false), true), plain);
        assert_eq!(
            edit(support(false, true), true),
            json!({"changes": {"file:///p/lib.rs": [{"range": range, "newText": "new"}]}})
        );
    }
}
