//! The `write_file` tool: creates a file (with its missing parent directories) or replaces one
//! the model has read, and answers with a unified diff of what changed. Overwriting is refused
//! when the model has not seen the current content, so a write never silently discards changes
//! the user (or another tool) made since. The current content is what the user sees (the
//! editor's open buffer, else the disk), and the write goes through the `Editor` with the
//! buffer version it was checked against.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::user_edits::{
    merge_with_user, read_current, still_typing, with_bom, write_error, MAX_STALE_RETRIES,
};
use crate::tool::{
    cap, content_hash, parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput,
};
use tandem_protocol::{FileDiff, Location, ToolKind};
use tandem_sandbox::editor::{FileWrite, WriteError, Written};

/// The most diff text an overwrite shows; the file itself is always written in full.
const MAX_DIFF_BYTES: usize = 8 * 1024;

pub struct WriteFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to write, relative to the workspace root (e.g. `src/new.rs`). Missing parent
    /// directories are created.
    path: String,
    /// The complete new content of the file, written exactly as given (not a diff or a
    /// fragment: whatever is not in here is gone from the file afterwards).
    content: String,
}

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        "Writes a whole file: creates it (and any missing parent directories inside the \
         workspace) or replaces the content of an existing one with `content`, exactly as \
         given. Use it for new files and for rewriting most of a file; for a targeted change \
         to an existing file prefer `edit`, which is cheaper and safer. Overwriting an \
         existing file requires that you have read it with read_file in this session and that \
         it has not changed since; otherwise the call is refused and you must read it first. \
         If the existing file uses CRLF line endings and `content` uses LF only, the content \
         is converted to CRLF. Content that would add syntax errors to a source file is \
         refused, with the errors. Returns `Created <path> (N lines).` or `Overwrote <path> (N \
         lines; +added -removed).` followed by a unified diff of the change (capped at 8 KiB)."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn mutates(&self) -> bool {
        true
    }

    fn title(&self, args: &Value) -> String {
        match args.get("path").and_then(Value::as_str) {
            Some(path) if !path.trim().is_empty() => format!("Write {path}"),
            _ => "Write file".to_owned(),
        }
    }

    fn paths_written(&self, args: &Value, _ctx: &ToolContext) -> Vec<String> {
        super::path_argument(args)
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let (write, converted) = match prepare_call(args, ctx).await? {
                Prepared::Unchanged {
                    path,
                    content,
                    version,
                } => {
                    ctx.session.mark_seen(&path, content.as_bytes(), version);
                    return Ok(ToolOutput {
                        text: format!(
                            "Unchanged: {} already has exactly this content ({}); nothing was \
                             written.",
                            ctx.workspace.display(&path),
                            count_lines(&content)
                        ),
                        locations: vec![Location { path, line: None }],
                        diff: None,
                        images: Vec::new(),
                    });
                }
                Prepared::Write { write, converted } => (write, converted),
            };
            let shown = ctx.workspace.display(&write.path);
            let mut write = write;
            let mut retries = 0;
            let written = loop {
                // A new file is checked against nothing: every error in it is new.
                super::edit::check_syntax(
                    ctx,
                    &write.path,
                    &shown,
                    write.old_text.clone().unwrap_or_default(),
                    write.new_text.clone(),
                )
                .await?;
                match ctx.editor.write(write.clone()).await {
                    Ok(written) => break written,
                    // The user typed meanwhile: the content is merged with what they changed,
                    // when the two touch different lines.
                    Err(WriteError::Stale) if retries < MAX_STALE_RETRIES => {
                        retries += 1;
                        let Some(base) = write.old_text.clone() else {
                            return Err(ToolError::Respond(WriteError::Stale.to_string()));
                        };
                        let current = read_current(ctx, &write.path, &shown)?;
                        let current_text = with_bom(current.bom, &current.text);
                        match merge_with_user(&shown, &base, &current_text, &write.new_text) {
                            Ok(merged) => {
                                write.old_text = Some(current_text);
                                write.new_text = merged;
                                write.version = current.version;
                            }
                            Err(error) => {
                                ctx.session.mark_seen(
                                    &write.path,
                                    current_text.as_bytes(),
                                    current.version,
                                );
                                return Err(error);
                            }
                        }
                    }
                    Err(WriteError::Stale) => return Err(still_typing(&shown)),
                    Err(error) => return Err(write_error(&format!("`{shown}`"), error)),
                }
            };
            // A buffer's version after the change is unknown: the hash is what counts.
            ctx.session.mark_written(
                &write.path,
                write.new_text.as_bytes(),
                written == Written::Buffer,
                None,
            );
            ctx.session.note_edited(&write.path);
            let problems = ctx
                .edit_problems(&write.path, write.old_text.as_deref(), &write.new_text)
                .await;
            let problems = crate::language_servers::note(&shown, problems.as_ref());
            let mut output =
                tokio::task::spawn_blocking(move || render(write, converted, &shown, written))
                    .await
                    .map_err(|error| {
                        ToolError::Fatal(format!("write_file task failed: {error}"))
                    })?;
            output.text.push_str(&problems);
            Ok(output)
        })
    }

    fn preview<'a>(
        &'a self,
        args: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Option<FileDiff>, String>> {
        Box::pin(async move {
            match prepare_call(args.clone(), ctx).await {
                // Nothing would change: there is nothing to show.
                Ok(Prepared::Unchanged { .. }) => Ok(None),
                Ok(Prepared::Write { write, .. }) => Ok(Some(FileDiff {
                    path: write.path,
                    old_text: write.old_text,
                    new_text: write.new_text,
                })),
                Err(ToolError::Respond(refusal)) => Err(refusal),
                // A bug is for `run` to report; the user is asked without a diff.
                Err(ToolError::Fatal(_)) => Ok(None),
            }
        })
    }
}

/// What a call comes to before anything is written (or marked seen): what `run` does and
/// what `preview` shows.
enum Prepared {
    /// The file already holds the content, seen by the model from the buffer at `version` (or
    /// the disk): nothing to write.
    Unchanged {
        path: PathBuf,
        content: String,
        version: Option<i32>,
    },
    Write {
        write: FileWrite,
        converted: bool,
    },
}

/// Checks the call's arguments and works out what it would write. Nothing is marked seen but
/// what a refusal shows the model, for a preview too (the model is told that refusal instead of
/// the user asked).
async fn prepare_call(args: Value, ctx: &ToolContext) -> Result<Prepared, ToolError> {
    let args: Args = parse_args(WriteFile.name(), args)?;
    if args.path.trim().is_empty() {
        return Err(ToolError::Respond(
            "`path` is empty: give the file to write, relative to the workspace root (e.g. \
             `src/new.rs`)"
                .to_owned(),
        ));
    }
    // `resolve` normalises a trailing slash away; without this check `src/new/` would become a
    // file named `new`.
    if args.path.ends_with('/') || args.path.ends_with('\\') {
        return Err(ToolError::Respond(format!(
            "`{}` ends with a path separator, so it names a directory; write_file writes files. \
             Give a file path such as `{}file.txt`",
            args.path, args.path
        )));
    }
    let path = ctx.workspace.resolve(&args.path)?;
    let prepare_ctx = ctx.clone();
    tokio::task::spawn_blocking(move || prepare(&prepare_ctx, path, args.content))
        .await
        .map_err(|error| ToolError::Fatal(format!("write_file task failed: {error}")))?
}

/// Does the blocking checks of a call with a resolved path and works out the new text.
fn prepare(ctx: &ToolContext, path: PathBuf, content: String) -> Result<Prepared, ToolError> {
    let shown = ctx.workspace.display(&path);
    if path.is_dir() {
        return Err(ToolError::Respond(format!(
            "`{shown}` is a directory; write_file writes files. Give the path of a file inside \
             it, e.g. `{shown}/new_file.txt`"
        )));
    }
    if let Some(reason) = ctx.editor.refusal(&path, None) {
        return Err(ToolError::Respond(reason));
    }
    // An open buffer counts as the file even when nothing is on disk yet (a new, unsaved file).
    let mut saw = None;
    let (old, version) = if let Some(buffer) = ctx.editor.buffer(&path) {
        if let Err(error) = check_seen(ctx, &path, &shown, buffer.text.as_bytes()) {
            // The user changed the buffer since the model saw it: merged below, when the model
            // saw it whole and its text was kept.
            saw = Some(
                ctx.session
                    .seen_text(&path)
                    .filter(|_| {
                        ctx.session
                            .last_seen(&path)
                            .is_some_and(|s| s.lines.is_none())
                    })
                    .ok_or(error)?,
            );
        }
        (Some(buffer.text), Some(buffer.version))
    } else if path.exists() {
        let bytes = std::fs::read(&path).map_err(|error| {
            ToolError::Respond(format!("cannot read the existing `{shown}`: {error}"))
        })?;
        check_seen(ctx, &path, &shown, &bytes)?;
        (Some(String::from_utf8_lossy(&bytes).into_owned()), None)
    } else {
        check_parents(ctx, &path)?;
        (None, None)
    };

    let converted = old
        .as_deref()
        .is_some_and(|old| uses_crlf(old) && content.contains('\n') && !content.contains("\r\n"));
    let mut new_text = if converted {
        content.replace('\n', "\r\n")
    } else {
        content
    };
    if let (Some(saw), Some(current)) = (saw, old.as_deref()) {
        new_text = merge_with_user(&shown, &saw, current, &new_text).inspect_err(|_| {
            // The refusal shows the user's change: the model may write again without a read.
            ctx.session.mark_seen(&path, current.as_bytes(), version);
        })?;
    }

    if old.as_deref() == Some(new_text.as_str()) {
        return Ok(Prepared::Unchanged {
            path,
            content: new_text,
            version,
        });
    }
    Ok(Prepared::Write {
        write: FileWrite {
            path,
            old_text: old,
            new_text,
            version,
        },
        converted,
    })
}

/// The answer to a write that was made: what changed, as a diff, and where it went.
/// `converted` says the content's LF line endings were made CRLF to match the file.
fn render(write: FileWrite, converted: bool, shown: &str, written: Written) -> ToolOutput {
    let FileWrite {
        path,
        old_text: old,
        new_text,
        ..
    } = write;
    let lines = count_lines(&new_text);
    let where_note = written.note();
    let text = match &old {
        None => format!("Created {shown} ({lines}).{where_note}"),
        Some(old) => {
            // Diff the LF forms: the model sees its own lines rather than every line carrying a
            // `\r`, and a change of line endings alone is said in words instead of as a diff of
            // every line.
            let old_view = old.replace("\r\n", "\n");
            let new_view = new_text.replace("\r\n", "\n");
            let diff = TextDiff::from_lines(&old_view, &new_view);
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    ChangeTag::Insert => added += 1,
                    ChangeTag::Delete => removed += 1,
                    ChangeTag::Equal => {}
                }
            }
            let unified = diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{shown}"), &format!("b/{shown}"))
                .to_string();
            let unified = cap(
                &unified,
                MAX_DIFF_BYTES,
                &format!("The file was written in full; call read_file on {shown} to see it."),
            );
            let note = match (line_endings(old), line_endings(&new_text)) {
                _ if converted => {
                    "\nConverted line endings to CRLF to match the existing file.".to_owned()
                }
                (Some(before), Some(after)) if before != after => {
                    format!("\nLine endings changed from {before} to {after}.")
                }
                _ => String::new(),
            };
            format!(
                "Overwrote {shown} ({lines}; +{added} -{removed}).{where_note}{note}\n{unified}"
            )
        }
    };
    ToolOutput {
        text: text.trim_end().to_owned(),
        locations: vec![Location {
            path: path.clone(),
            line: None,
        }],
        diff: Some(FileDiff {
            path,
            old_text: old,
            new_text,
        }),
        images: Vec::new(),
    }
}

/// Refuses to overwrite a file unless the model has seen exactly `current`, its content now.
fn check_seen(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    current: &[u8],
) -> Result<(), ToolError> {
    match ctx.session.last_seen(path) {
        None => Err(ToolError::Respond(format!(
            "`{shown}` already exists and you have not read it in this session. Read it first \
             with read_file so you know what you would replace (or use edit for a targeted \
             change), then call write_file again"
        ))),
        Some(seen) if seen.lines.is_some() => Err(ToolError::Respond(format!(
            "you were shown only lines {}-{} of `{shown}`; read it whole with read_file before \
             replacing all of it",
            seen.lines.map_or(0, |lines| lines.0),
            seen.lines.map_or(0, |lines| lines.1),
        ))),
        Some(seen) if seen.hash != content_hash(current) => Err(ToolError::Respond(format!(
            "`{shown}` has changed since you last read it (the user may be editing it in the \
             editor, or a command changed it). Read it again with read_file and write content \
             that keeps those changes, so they are not lost"
        ))),
        Some(_) => Ok(()),
    }
}

/// Refuses a new file whose would-be parent directory is a file. Creating the missing
/// directories is left to the write: an editor may hold the file back as a proposal.
fn check_parents(ctx: &ToolContext, path: &Path) -> Result<(), ToolError> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    match parent.ancestors().find(|dir| dir.exists() && !dir.is_dir()) {
        Some(blocker) => Err(ToolError::Respond(format!(
            "cannot create `{}`: `{}` is a file, not a directory. Choose another path",
            ctx.workspace.display(path),
            ctx.workspace.display(blocker)
        ))),
        None => Ok(()),
    }
}

/// Whether a file's line breaks are CRLF: it has some, and no bare LF among them.
fn uses_crlf(text: &str) -> bool {
    text.contains("\r\n") && text.matches('\n').count() == text.matches("\r\n").count()
}

/// The line-break style of a text, if it has line breaks.
fn line_endings(text: &str) -> Option<&'static str> {
    match (text.contains("\r\n"), uses_crlf(text)) {
        (_, true) => Some("CRLF"),
        (true, false) => Some("mixed CRLF/LF"),
        (false, false) => text.contains('\n').then_some("LF"),
    }
}

/// "1 line", "12 lines": a final line without a line break counts too.
fn count_lines(text: &str) -> String {
    match text.lines().count() {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::read_file::ReadFile;
    use crate::testing::TestWorkspace;

    const LIB: &str = "fn one() {}\nfn two() {}\nfn three() {}\nfn four() {}\nfn five() {}\n";

    /// Runs one call in a fresh workspace holding `src/lib.rs` (read by the model),
    /// `notes.txt` (never read) and `crlf.txt` (read, CRLF), and shows the answer followed by
    /// what is on disk at `check` afterwards.
    async fn check(args: Value, check: &str, expect: Expect) {
        let ws = TestWorkspace::new(&[
            ("src/lib.rs", LIB),
            ("notes.txt", "private\n"),
            ("crlf.txt", "a\r\nb\r\n"),
        ]);
        ws.ctx.session.mark_read(&ws.root.join("src/lib.rs"));
        ws.ctx.session.mark_read(&ws.root.join("crlf.txt"));
        let answer = ws.call(&WriteFile, args).await;
        let on_disk = std::fs::read_to_string(ws.root.join(check))
            .map(|text| format!("{text:?}"))
            .unwrap_or_else(|_| "<missing>".to_owned());
        expect.assert_eq(&format!("{answer}\n--- {check} on disk:\n{on_disk}"));
    }

    #[tokio::test]
    async fn creates_and_overwrites() {
        check(
            json!({"path": "src/new.rs", "content": "fn new() {}\n"}),
            "src/new.rs",
            expect![[r#"
                Created src/new.rs (1 line).
                --- src/new.rs on disk:
                "fn new() {}\n""#]],
        )
        .await;
        check(
            json!({"path": "a/b/c.txt", "content": "x\ny"}),
            "a/b/c.txt",
            expect![[r#"
                Created a/b/c.txt (2 lines).
                --- a/b/c.txt on disk:
                "x\ny""#]],
        )
        .await;
        check(
            json!({"path": "empty.txt", "content": ""}),
            "empty.txt",
            expect![[r#"
                Created empty.txt (0 lines).
                --- empty.txt on disk:
                """#]],
        )
        .await;
        check(
            json!({
                "path": "src/lib.rs",
                "content": "fn one() {}\nfn TWO() {}\nfn three() {}\nfn four() {}\nfn five() {}\nfn six() {}\n"
            }),
            "src/lib.rs",
            expect![[r#"
                Overwrote src/lib.rs (6 lines; +2 -1).
                --- a/src/lib.rs
                +++ b/src/lib.rs
                @@ -1,5 +1,6 @@
                 fn one() {}
                -fn two() {}
                +fn TWO() {}
                 fn three() {}
                 fn four() {}
                 fn five() {}
                +fn six() {}
                --- src/lib.rs on disk:
                "fn one() {}\nfn TWO() {}\nfn three() {}\nfn four() {}\nfn five() {}\nfn six() {}\n""#]],
        )
        .await;
        check(
            json!({"path": "src/lib.rs", "content": LIB}),
            "src/lib.rs",
            expect![[r#"
                Unchanged: src/lib.rs already has exactly this content (5 lines); nothing was written.
                --- src/lib.rs on disk:
                "fn one() {}\nfn two() {}\nfn three() {}\nfn four() {}\nfn five() {}\n""#]],
        )
        .await;
    }

    #[tokio::test]
    async fn keeps_crlf_of_the_existing_file() {
        check(
            json!({"path": "crlf.txt", "content": "a\nc\n"}),
            "crlf.txt",
            expect![[r#"
                Overwrote crlf.txt (2 lines; +1 -1).
                Converted line endings to CRLF to match the existing file.
                --- a/crlf.txt
                +++ b/crlf.txt
                @@ -1,2 +1,2 @@
                 a
                -b
                +c
                --- crlf.txt on disk:
                "a\r\nc\r\n""#]],
        )
        .await;
        // Content that already has CRLF is written as given; the diff shows no `\r`.
        check(
            json!({"path": "crlf.txt", "content": "a\r\nb\r\nc"}),
            "crlf.txt",
            expect![[r#"
                Overwrote crlf.txt (3 lines; +1 -0).
                --- a/crlf.txt
                +++ b/crlf.txt
                @@ -1,2 +1,3 @@
                 a
                 b
                +c
                \ No newline at end of file
                --- crlf.txt on disk:
                "a\r\nb\r\nc""#]],
        )
        .await;
        // A change of line endings alone is said, not shown as a diff of every line.
        check(
            json!({"path": "src/lib.rs", "content": LIB.replace('\n', "\r\n")}),
            "src/lib.rs",
            expect![[r#"
                Overwrote src/lib.rs (5 lines; +0 -0).
                Line endings changed from LF to CRLF.
                --- src/lib.rs on disk:
                "fn one() {}\r\nfn two() {}\r\nfn three() {}\r\nfn four() {}\r\nfn five() {}\r\n""#]],
        )
        .await;
    }

    #[tokio::test]
    async fn refusals_say_what_to_do() {
        let cases = [
            (
                json!({"path": "notes.txt", "content": "mine\n"}),
                "notes.txt",
                expect![[r#"
                    error: `notes.txt` already exists and you have not read it in this session. Read it first with read_file so you know what you would replace (or use edit for a targeted change), then call write_file again
                    --- notes.txt on disk:
                    "private\n""#]],
            ),
            (
                json!({"path": "", "content": "x"}),
                "notes.txt",
                expect![[r#"
                    error: `path` is empty: give the file to write, relative to the workspace root (e.g. `src/new.rs`)
                    --- notes.txt on disk:
                    "private\n""#]],
            ),
            (
                json!({"path": "src", "content": "x"}),
                "src",
                expect![[r#"
                    error: `src` is a directory; write_file writes files. Give the path of a file inside it, e.g. `src/new_file.txt`
                    --- src on disk:
                    <missing>"#]],
            ),
            (
                json!({"path": "src/new/", "content": "x"}),
                "src/new",
                expect![[r#"
                    error: `src/new/` ends with a path separator, so it names a directory; write_file writes files. Give a file path such as `src/new/file.txt`
                    --- src/new on disk:
                    <missing>"#]],
            ),
            (
                json!({"path": "notes.txt/inner.txt", "content": "x"}),
                "notes.txt",
                expect![[r#"
                    error: cannot create `notes.txt/inner.txt`: `notes.txt` is a file, not a directory. Choose another path
                    --- notes.txt on disk:
                    "private\n""#]],
            ),
            (
                json!({"path": "../outside.txt", "content": "x"}),
                "../outside.txt",
                expect![[r#"
                    error: `../outside.txt` is outside the workspace (<root>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings
                    --- ../outside.txt on disk:
                    <missing>"#]],
            ),
            (
                json!({"path": "x.txt"}),
                "x.txt",
                expect![[r#"
                    error: invalid arguments for write_file: missing field `content`
                    --- x.txt on disk:
                    <missing>"#]],
            ),
            (
                json!({"path": "x.txt", "content": "x", "mode": "append"}),
                "x.txt",
                expect![[r#"
                    error: invalid arguments for write_file: unknown field `mode`, expected `path` or `content`
                    --- x.txt on disk:
                    <missing>"#]],
            ),
        ];
        for (args, path, expect) in cases {
            let ws = TestWorkspace::new(&[("src/lib.rs", LIB), ("notes.txt", "private\n")]);
            let answer = ws.call(&WriteFile, args).await;
            let answer = answer.replace(&ws.root.display().to_string(), "<root>");
            let on_disk = std::fs::read_to_string(ws.root.join(path))
                .map(|text| format!("{text:?}"))
                .unwrap_or_else(|_| "<missing>".to_owned());
            expect.assert_eq(&format!("{answer}\n--- {path} on disk:\n{on_disk}"));
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn refuses_to_write_through_a_dangling_symlink() {
        let ws = TestWorkspace::new(&[]);
        let target = ws.root.parent().unwrap().join("outside.txt");
        std::os::unix::fs::symlink(&target, ws.root.join("link.txt")).unwrap();
        let answer = ws
            .call(&WriteFile, json!({"path": "link.txt", "content": "x"}))
            .await;
        expect!["error: `link.txt` is not a usable path: it is, or goes through, a symbolic link whose target does not exist"].assert_eq(&answer);
        assert!(!target.exists());
    }

    #[tokio::test]
    async fn refuses_a_file_changed_since_it_was_read() {
        let ws = TestWorkspace::new(&[("src/lib.rs", LIB)]);
        let path = ws.root.join("src/lib.rs");
        ws.ctx.session.mark_read(&path);
        std::fs::write(&path, "changed by the user\n").unwrap();
        let answer = ws
            .call(&WriteFile, json!({"path": "src/lib.rs", "content": "x\n"}))
            .await;
        expect!["error: `src/lib.rs` has changed since you last read it (the user may be editing it in the editor, or a command changed it). Read it again with read_file and write content that keeps those changes, so they are not lost"]
            .assert_eq(&answer);
        assert_eq!(ws.read("src/lib.rs"), "changed by the user\n");
    }

    #[tokio::test]
    async fn a_written_file_counts_as_read_and_the_output_carries_the_diff() {
        let ws = TestWorkspace::new(&[]);
        let output = WriteFile
            .run(json!({"path": "a.txt", "content": "one\n"}), &ws.ctx)
            .await
            .unwrap();
        let path = ws.root.join("a.txt");
        assert_eq!(
            output.diff,
            Some(FileDiff {
                path: path.clone(),
                old_text: None,
                new_text: "one\n".to_owned(),
            })
        );
        assert_eq!(
            output.locations,
            vec![Location {
                path: path.clone(),
                line: None
            }]
        );
        // No read needed to overwrite what the model itself wrote.
        let output = WriteFile
            .run(json!({"path": "a.txt", "content": "two\n"}), &ws.ctx)
            .await
            .unwrap();
        assert_eq!(
            output.diff,
            Some(FileDiff {
                path,
                old_text: Some("one\n".to_owned()),
                new_text: "two\n".to_owned(),
            })
        );
    }

    #[tokio::test]
    async fn a_large_diff_is_capped_with_a_notice() {
        let old: String = (0..2000).map(|i| format!("old line {i}\n")).collect();
        let new: String = (0..2000).map(|i| format!("new line {i}\n")).collect();
        let ws = TestWorkspace::new(&[("big.txt", &old)]);
        ws.ctx.session.mark_read(&ws.root.join("big.txt"));
        let answer = ws
            .call(&WriteFile, json!({"path": "big.txt", "content": new}))
            .await;
        let (head, tail) = answer.split_at(answer.find('\n').unwrap());
        expect!["Overwrote big.txt (2000 lines; +2000 -2000)."].assert_eq(head);
        expect!["[output truncated: showing 8192 of 57830 bytes. The file was written in full; call read_file on big.txt to see it.]"]
        .assert_eq(tail.lines().last().unwrap());
        assert_eq!(ws.read("big.txt"), new);
    }

    #[test]
    fn titles() {
        assert_eq!(
            WriteFile.title(&json!({"path": "src/lib.rs"})),
            "Write src/lib.rs"
        );
        assert_eq!(WriteFile.title(&Value::Null), "Write file");
    }

    #[tokio::test]
    async fn writes_through_the_editor() {
        let mut ws = TestWorkspace::new(&[("lib.rs", "on disk\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("lib.rs");
        editor.set(&path, "unsaved\r\n", 3);
        let overwrite = json!({"path": "lib.rs", "content": "rewritten\n"});

        let unread = ws.call(&WriteFile, overwrite.clone()).await;
        assert!(unread.contains("you have not read it"), "{unread}");
        ws.call(&ReadFile, json!({"path": "lib.rs"})).await;
        editor.type_text(&path, "unsaved, typed\r\n");
        let typed = ws.call(&WriteFile, overwrite.clone()).await;
        assert!(
            typed.contains("the user edited the text your change replaces (line 1")
                && typed.contains("+unsaved, typed"),
            "{typed}"
        );
        assert!(editor.writes().is_empty());

        editor.type_before_next_write(&path, "typed while the tool ran\r\n");
        let stale = ws.call(&WriteFile, overwrite.clone()).await;
        assert!(stale.contains("+typed while the tool ran"), "{stale}");
        assert_eq!(editor.text(&path).unwrap(), "typed while the tool ran\r\n");

        ws.call(&ReadFile, json!({"path": "lib.rs"})).await;
        let written = ws.call(&WriteFile, overwrite.clone()).await;
        expect![[r#"
            Overwrote lib.rs (1 line; +1 -1). The change is in the editor's open buffer and is not saved yet; the user reviews and saves it. Before a shell command or an MCP tool runs, Tandem has the editor save it where it can, and says so when it could not.
            Converted line endings to CRLF to match the existing file.
            --- a/lib.rs
            +++ b/lib.rs
            @@ -1 +1 @@
            -typed while the tool ran
            +rewritten"#]]
        .assert_eq(&written);
        assert_eq!(editor.text(&path).unwrap(), "rewritten\r\n");
        assert_eq!(ws.read("lib.rs"), "on disk\n");
        assert_eq!(editor.writes().last().unwrap().version, Some(5));

        // What the model wrote counts as seen: writing it again needs no read.
        let again = ws
            .call(
                &WriteFile,
                json!({"path": "lib.rs", "content": "rewritten\r\n"}),
            )
            .await;
        assert!(again.starts_with("Unchanged: lib.rs"), "{again}");
    }

    /// The user types on other lines than the ones write_file changes, before and during the
    /// call: the content is merged with their lines instead of replacing them.
    #[tokio::test]
    async fn a_write_merges_with_lines_the_user_typed_elsewhere() {
        let mut ws = TestWorkspace::new(&[("notes.txt", "a\nb\nc\nd\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("notes.txt");
        editor.set(&path, "a\nb\nc\nd\n", 1);
        ws.call(&ReadFile, json!({"path": "notes.txt"})).await;
        editor.type_text(&path, "a typed\nb\nc\nd\n");
        editor.type_before_next_write(&path, "a typed\nb\nc\nd\ne typed\n");
        let output = ws
            .call(
                &WriteFile,
                json!({"path": "notes.txt", "content": "a\nb\nC\nd\n"}),
            )
            .await;
        assert!(output.starts_with("Overwrote notes.txt"), "{output}");
        assert_eq!(editor.text(&path).unwrap(), "a typed\nb\nC\nd\ne typed\n");
        let versions: Vec<Option<i32>> = editor.writes().iter().map(|w| w.version).collect();
        assert_eq!(versions, [Some(2), Some(3)]);
    }

    #[tokio::test]
    async fn a_new_file_goes_through_the_editor_and_an_unsaved_one_counts_as_existing() {
        let mut ws = TestWorkspace::new(&[]);
        let editor = ws.memory_editor();
        let created = ws
            .call(&WriteFile, json!({"path": "a/b.txt", "content": "x\n"}))
            .await;
        expect!["Created a/b.txt (1 line)."].assert_eq(&created);
        assert_eq!(ws.read("a/b.txt"), "x\n");
        assert_eq!(editor.writes()[0].old_text, None);

        let draft = ws.root.join("draft.md");
        editor.set(&draft, "# Draft\n", 1);
        let refused = ws
            .call(&WriteFile, json!({"path": "draft.md", "content": "mine\n"}))
            .await;
        assert!(refused.contains("you have not read it"), "{refused}");
        assert!(!draft.exists());
    }

    /// The approval prompt shows the diff before the write runs: it must be what `run` then
    /// writes, and computing it must leave the files and what the model has seen alone.
    #[tokio::test]
    async fn preview_is_the_diff_run_then_makes_and_changes_nothing() {
        let mut ws = TestWorkspace::new(&[("crlf.txt", "a\r\nb\r\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("crlf.txt");
        ws.ctx.session.mark_read(&path);
        let seen = ws.ctx.session.last_seen(&path);
        let overwrite = json!({"path": "crlf.txt", "content": "a\nc\n"});
        let preview = WriteFile.preview(&overwrite, &ws.ctx).await.unwrap();
        assert_eq!(ws.read("crlf.txt"), "a\r\nb\r\n");
        assert_eq!(ws.ctx.session.last_seen(&path), seen);
        let output = WriteFile.run(overwrite, &ws.ctx).await.unwrap();
        assert_eq!(preview, output.diff);
        assert_eq!(
            preview,
            Some(FileDiff {
                path: path.clone(),
                old_text: Some("a\r\nb\r\n".to_owned()),
                new_text: "a\r\nc\r\n".to_owned(),
            })
        );

        // A new file: no old text, and no directory is created to compute it.
        let create = json!({"path": "new/dir/f.txt", "content": "x\n"});
        let preview = WriteFile.preview(&create, &ws.ctx).await.unwrap();
        assert!(!ws.root.join("new").exists());
        assert_eq!(
            ws.ctx.session.last_seen(&ws.root.join("new/dir/f.txt")),
            None
        );
        assert_eq!(preview, WriteFile.run(create, &ws.ctx).await.unwrap().diff);
        assert_eq!(editor.writes().len(), 2);
    }

    /// A new file is checked against nothing, an overwrite against the old content; a refused
    /// write leaves no file, no directory and nothing seen. `syntax.checkEdits` off lets it
    /// through.
    #[tokio::test]
    async fn writes_that_break_the_syntax_are_refused() {
        let mut ws = TestWorkspace::new(&[("lib.rs", "fn a() {}\n")]);
        let broken = ws
            .call(
                &WriteFile,
                json!({"path": "src/main.py", "content": "def main(:\n    pass\n"}),
            )
            .await;
        expect![[r#"
            error: The change to src/main.py was NOT applied: it would add syntax errors (line:column after the change):
              1:10 missing `)` to close the `(` at 1:9
            Before:
            (empty)
            After (not applied):
                 1	def main(:
                 2	    pass
            Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]].assert_eq(&broken);
        assert!(!ws.root.join("src").exists());
        let main = ws.root.join("src/main.py");
        assert_eq!(ws.ctx.session.last_seen(&main), None);

        let valid = ws
            .call(
                &WriteFile,
                json!({"path": "src/main.py", "content": "def main():\n    pass\n"}),
            )
            .await;
        expect!["Created src/main.py (2 lines)."].assert_eq(&valid);
        assert_eq!(ws.ctx.session.focus().edited, vec![main.clone()]);

        let lib = ws.root.join("lib.rs");
        ws.ctx.session.mark_read(&lib);
        let overwrite = json!({"path": "lib.rs", "content": "fn a() {\n"});
        let refused = ws.call(&WriteFile, overwrite.clone()).await;
        assert!(
            refused.starts_with("error: The change to lib.rs was NOT applied"),
            "{refused}"
        );
        assert_eq!(ws.read("lib.rs"), "fn a() {}\n");

        ws.ctx.syntax.check_edits = false;
        let written = ws.call(&WriteFile, overwrite).await;
        assert!(written.starts_with("Overwrote lib.rs"), "{written}");
        assert_eq!(ws.read("lib.rs"), "fn a() {\n");
        assert_eq!(ws.ctx.session.focus().edited, vec![lib, main]);
    }

    /// A write certain to fail is refused from its preview with what `run` answers, so nobody
    /// is asked to approve it; one that changes nothing has nothing to show.
    #[tokio::test]
    async fn preview_is_the_refusal_when_the_write_would_fail_and_none_when_it_changes_nothing() {
        let ws = TestWorkspace::new(&[("src/lib.rs", LIB), ("notes.txt", "private\n")]);
        let lib = ws.root.join("src/lib.rs");
        ws.ctx.session.mark_read(&lib);
        let cases = [
            json!({"path": "notes.txt", "content": "mine\n"}),
            json!({"path": "src", "content": "x"}),
            json!({"path": "src/new/", "content": "x"}),
            json!({"path": "notes.txt/inner.txt", "content": "x"}),
            json!({"path": "../outside.txt", "content": "x"}),
            json!({"path": "x.txt"}),
        ];
        for args in cases {
            let refusal = WriteFile.preview(&args, &ws.ctx).await.unwrap_err();
            assert!(!refusal.is_empty(), "{args}");
        }
        let unchanged = json!({"path": "src/lib.rs", "content": LIB});
        assert_eq!(WriteFile.preview(&unchanged, &ws.ctx).await, Ok(None));
        // Looking did not count as reading.
        assert_eq!(ws.ctx.session.last_seen(&ws.root.join("notes.txt")), None);
        assert_eq!(ws.read("notes.txt"), "private\n");
    }
}
