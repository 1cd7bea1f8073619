//! The `edit` tool: replaces a piece of text in a file the model has read. It tries an exact
//! match first, then matches that tolerate line-ending, trailing-whitespace and indentation
//! differences (saying which one applied), and answers a miss with the most similar part of the
//! file so the model can copy the exact text. The file keeps its line endings, byte-order mark
//! and final newline (or lack of one); success returns a numbered window and a unified diff.
//!
//! When they all miss, looser repairs (blank lines at the edges, over-escaping, typographic
//! look-alikes) are tried, each for a single place only.
//!
//! The text edited is what the user sees (the editor's open buffer, else the disk), and the
//! change goes back through the `Editor` with the buffer version it was computed from, so a
//! user typing meanwhile makes the editor refuse it instead of losing their keystrokes; the edit
//! is then worked out again on their text (`user_edits`).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use similar::TextDiff;

use super::user_edits::{
    changed_lines, conflict_error, merge_with_user, read_current, still_typing, with_bom,
    write_error, MAX_STALE_RETRIES,
};
use crate::tool::{
    cap, content_hash, parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput,
};
use tandem_protocol::{FileDiff, Location, ToolKind};
use tandem_sandbox::editor::{FileWrite, WriteError, Written};

mod closest;
mod indent;
mod lookalike;
mod matching;
mod syntax_check;
mod unescape;

pub(super) use syntax_check::check_syntax;

use matching::{format_line_list, number_lines, plan_edit, Plan};

/// Larger files are refused: the whole file is held (and diffed) in memory.
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Cap of the unified diff in the output.
const MAX_DIFF_BYTES: usize = 8 * 1024;
/// Lines of context shown around each change.
const WINDOW_CONTEXT: usize = 3;
/// Cap of the numbered window of the new file.
const MAX_WINDOW_LINES: usize = 60;

pub struct Edit;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to change: relative to the workspace root, or absolute inside it. It must exist
    /// (use write_file to create files).
    path: String,
    /// The exact text to replace, copied from the file as read_file shows it but without the
    /// line-number prefixes, indentation included. Include enough surrounding lines to make it
    /// match exactly one place.
    old_string: String,
    /// The text to put in its place, complete and literal: never placeholders such as
    /// `// ... existing code ...`. Empty to delete old_string.
    new_string: String,
    /// Replace every occurrence of old_string instead of requiring exactly one. Default false.
    #[serde(default)]
    allow_multiple: bool,
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Replaces text in an existing file: old_string (the exact current text, copied from \
         read_file output without the line-number prefixes, indentation included) becomes \
         new_string. The file must have been read with read_file in this session (text shown to \
         you with the prompt counts, for the lines shown). If the user changed the file since, \
         your edit is merged with their change when it touches other lines, and refused with \
         their change when it touches the same ones. old_string must match exactly one place: include \
         a few surrounding lines to make it unique, or set allow_multiple to replace every \
         occurrence. Without an exact match the tool retries ignoring differences in line \
         endings, trailing whitespace and indentation (re-indenting new_string to fit); then, \
         for a single place only (allow_multiple does not apply), it drops blank lines at the \
         start or end of old_string that the file lacks there, undoes one level of \
         over-escaping in both strings (a literal `\\n` or `\\\"` where the file has a line \
         break or a quote), and treats typographic look-alikes (curly quotes, dashes, special \
         spaces, `…`) as their ASCII forms, keeping the file's own characters around the \
         changed text. It says which applied; with still no match it shows the most similar \
         part of the file. \
         new_string is written literally, so never abbreviate with placeholders like \
         `// ... existing code ...`. The file's line endings, byte-order mark and final newline \
         (or its absence) are kept. An edit that would add syntax errors to a source file is \
         refused, with the errors and the lines before and after. Returns the changed lines with 3 lines around them, numbered \
         like read_file, and a unified diff (capped at 8 KiB). For several separate changes in \
         one file, call edit once per change. To create a file or rewrite it completely, use \
         write_file."
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
            Some(path) if args.get("allow_multiple") == Some(&Value::Bool(true)) => {
                format!("Edit {path} (every occurrence)")
            }
            Some(path) => format!("Edit {path}"),
            None => "Edit a file".to_owned(),
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
            let Prepared {
                args,
                path,
                shown,
                mut version,
                mut bom,
                mut plan,
            } = prepare(args, ctx).await?;
            let mut retries = 0;
            let written = loop {
                check_syntax(ctx, &path, &shown, plan.old.clone(), plan.new.clone()).await?;
                let write = FileWrite {
                    path: path.clone(),
                    old_text: Some(with_bom(bom, &plan.old)),
                    new_text: with_bom(bom, &plan.new),
                    version,
                };
                match ctx.editor.write(write).await {
                    Ok(written) => break written,
                    // The user typed meanwhile: the intent is resolved again on their text.
                    Err(WriteError::Stale) if retries < MAX_STALE_RETRIES => {
                        retries += 1;
                        let current = read_current(ctx, &path, &shown)?;
                        let base = std::mem::take(&mut plan.old);
                        let ours = std::mem::take(&mut plan.new);
                        let again = resolve_again(&args, &shown, base, ours, current.text.clone());
                        plan = match again.await {
                            Ok(plan) => plan,
                            Err(error) => {
                                // The refusal shows the user's change: the model may edit the
                                // current text without reading it again.
                                ctx.session.mark_seen(
                                    &path,
                                    current.text.as_bytes(),
                                    current.version,
                                );
                                return Err(error);
                            }
                        };
                        version = current.version;
                        bom = current.bom;
                    }
                    Err(WriteError::Stale) => return Err(still_typing(&shown)),
                    Err(error) => return Err(write_error(&shown, error)),
                }
            };
            // The model knows the new content from the diff, so a follow-up edit needs no
            // re-read. A buffer's version after the change is unknown: the hash is what counts.
            // A model shown only some lines still has seen only those, moved by the edit.
            let lines = ctx.session.last_seen(&path).and_then(|seen| seen.lines);
            let grown =
                plan.new.matches('\n').count() as isize - plan.old.matches('\n').count() as isize;
            let lines =
                lines.map(|(first, last)| (first, last.saturating_add_signed(grown).max(first)));
            ctx.session.mark_written(
                &path,
                with_bom(bom, &plan.new).as_bytes(),
                written == Written::Buffer,
                lines,
            );
            ctx.session.note_edited(&path);

            let problems = ctx.edit_problems(&path, Some(&plan.old), &plan.new).await;
            let mut text = render_success(&plan, &shown, written.note());
            text.push_str(&crate::language_servers::note(&shown, problems.as_ref()));
            let first_line = plan.spans.first().map_or(1, |span| span.first);
            Ok(ToolOutput {
                text,
                locations: vec![Location {
                    path: path.clone(),
                    line: Some(u32::try_from(first_line).unwrap_or(u32::MAX)),
                }],
                diff: Some(FileDiff {
                    path,
                    old_text: Some(plan.old),
                    new_text: plan.new,
                }),
                images: Vec::new(),
            })
        })
    }

    fn preview<'a>(
        &'a self,
        args: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Option<FileDiff>, String>> {
        Box::pin(async move {
            match prepare(args.clone(), ctx).await {
                Ok(Prepared { path, plan, .. }) => Ok(Some(FileDiff {
                    path,
                    old_text: Some(plan.old),
                    new_text: plan.new,
                })),
                Err(ToolError::Respond(refusal)) => Err(refusal),
                // A bug is for `run` to report; the user is asked without a diff.
                Err(ToolError::Fatal(_)) => Ok(None),
            }
        })
    }
}

/// An edit worked out against the text the user sees now, with nothing written yet: what
/// `run` writes and what `preview` shows are the same plan.
struct Prepared {
    args: Args,
    path: PathBuf,
    shown: String,
    /// The buffer version the plan was computed from; `None` when it came from the disk.
    version: Option<i32>,
    /// Whether the file starts with a byte-order mark, which the plan's texts leave out.
    bom: bool,
    plan: Plan,
}

/// Reads the file the call names (the open buffer, else the disk), checks that the model has
/// seen that text, and plans the edit on it. When the user changed the buffer since the model
/// saw it, the edit is planned on what the model saw and merged with the user's change (see
/// `user_edits`). Nothing is written; a refusal that shows the user's change marks the current
/// text seen, for a preview too (the model is told that refusal instead of the user asked).
async fn prepare(args: Value, ctx: &ToolContext) -> Result<Prepared, ToolError> {
    let args: Args = parse_args(Edit.name(), args)?;
    let path = ctx.workspace.resolve(&args.path)?;
    let shown = ctx.workspace.display(&path);
    check_strings(&args)?;
    if let Some(reason) = ctx.editor.refusal(&path, None) {
        return Err(ToolError::Respond(reason));
    }

    // An open buffer is edited even when the file is not on disk (a new, unsaved file).
    let (bytes, version) = match ctx.editor.buffer(&path) {
        Some(buffer) => (buffer.text.into_bytes(), Some(buffer.version)),
        None => (read_disk(&path, &shown).await?, None),
    };
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ToolError::Respond(format!(
            "{shown} is {} bytes; edit works on files up to {MAX_FILE_BYTES} bytes. Change it \
             with a shell command (e.g. sed) instead",
            bytes.len()
        )));
    }
    // Checked against the very text the edit is planned on, not a second read.
    let Some(seen) = ctx.session.last_seen(&path) else {
        return Err(ToolError::Respond(format!(
            "you have not read {shown} in this session: read it with read_file before editing"
        )));
    };
    let unchanged = seen.hash == content_hash(&bytes);
    // What the model saw, when the user has changed it since and it was kept to merge with.
    let saw = if unchanged {
        None
    } else {
        Some(ctx.session.seen_text(&path).ok_or_else(|| {
            ToolError::Respond(format!(
                "{shown} changed since you last read it (the user may be editing it in the \
                 editor, or a command changed it): read it again with read_file before editing"
            ))
        })?)
    };
    // An editor buffer never holds a byte-order mark: editors hide it.
    let (bom, content) = decode(bytes, &shown)?;
    let plan = match saw {
        None => {
            let (plan_args, plan_shown) = (args.clone(), shown.clone());
            tokio::task::spawn_blocking(move || plan_edit(content, &plan_args, &plan_shown))
                .await
                .map_err(|error| ToolError::Fatal(format!("the edit task failed: {error}")))??
        }
        Some(saw) => {
            let base = saw.strip_prefix('\u{feff}').unwrap_or(&saw).to_owned();
            let (plan_args, plan_shown) = (args.clone(), shown.clone());
            let ours =
                tokio::task::spawn_blocking(move || plan_edit(base, &plan_args, &plan_shown))
                    .await
                    .map_err(|error| {
                        ToolError::Fatal(format!("the edit task failed: {error}"))
                    })??;
            let current = content.clone();
            match resolve_again(&args, &shown, ours.old, ours.new, content).await {
                Ok(plan) => plan,
                Err(error) => {
                    // The refusal shows the user's change: the model may edit the current text
                    // without reading it again.
                    let current = with_bom(bom, &current);
                    ctx.session.mark_seen(&path, current.as_bytes(), version);
                    return Err(error);
                }
            }
        }
    };
    // Before the lines check: reading more would not make a refused change acceptable.
    if let Some(reason) = ctx.editor.refusal(&path, Some(&plan.new)) {
        return Err(ToolError::Respond(reason));
    }
    if let Some((first, last)) = seen.lines {
        let changed = changed_lines(&plan.old, &plan.new);
        if changed.start + 1 < first || changed.end.max(changed.start + 1) > last {
            return Err(ToolError::Respond(format!(
                "you were shown only lines {first}-{last} of {shown}, and this edit changes \
                 {}: read those lines with read_file before editing them",
                match changed.len() {
                    0 | 1 => format!("line {}", changed.start + 1),
                    _ => format!("lines {}-{}", changed.start + 1, changed.end),
                }
            )));
        }
    }
    Ok(Prepared {
        args,
        path,
        shown,
        version,
        bom,
        plan,
    })
}

/// The edit again on `current`, the user's text now, given `ours`, what it made of `base` (the
/// text it was planned on): the same match must still be unique and the user's change must
/// touch other lines. Otherwise the refusal shows what the user changed there.
async fn resolve_again(
    args: &Args,
    shown: &str,
    base: String,
    ours: String,
    current: String,
) -> Result<Plan, ToolError> {
    let (args, shown) = (args.clone(), shown.to_owned());
    tokio::task::spawn_blocking(move || {
        let merged = merge_with_user(&shown, &base, &current, &ours)?;
        match plan_edit(current.clone(), &args, &shown) {
            Ok(again) if again.new == merged => Ok(again),
            // The intent no longer applies where it did: old_string is gone, duplicated, or
            // found somewhere the merge did not put the change.
            _ => Err(conflict_error(
                &shown,
                &base,
                &current,
                changed_lines(&base, &ours),
            )),
        }
    })
    .await
    .map_err(|error| ToolError::Fatal(format!("the edit task failed: {error}")))?
}

/// The file's bytes on disk, refusing what edit cannot change.
async fn read_disk(path: &std::path::Path, shown: &str) -> Result<Vec<u8>, ToolError> {
    let metadata = match tokio::fs::metadata(path).await {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::Respond(format!(
                "{shown} does not exist. edit only changes existing files: to create one, use \
                 write_file; to find the right path, use glob or list_directory"
            )));
        }
        Err(error) => {
            return Err(ToolError::Respond(format!("cannot read {shown}: {error}")));
        }
    };
    if metadata.is_dir() {
        return Err(ToolError::Respond(format!(
            "{shown} is a directory: give the path of the file to edit"
        )));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(ToolError::Respond(format!(
            "{shown} is {} bytes; edit works on files up to {MAX_FILE_BYTES} bytes. Change it \
             with a shell command (e.g. sed) instead",
            metadata.len()
        )));
    }
    tokio::fs::read(path)
        .await
        .map_err(|error| ToolError::Respond(format!("cannot read {shown}: {error}")))
}

/// Refuses arguments that cannot make a sensible edit, before touching the file.
fn check_strings(args: &Args) -> Result<(), ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::Respond(
            "old_string is empty. edit replaces text that is already in the file: give the exact \
             text to replace. To create a file or replace all of its content, use write_file"
                .to_owned(),
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::Respond(
            "old_string and new_string are identical, so nothing would change. Put the text the \
             file should contain in new_string"
                .to_owned(),
        ));
    }
    let old_lines: HashSet<&str> = args.old_string.lines().map(str::trim).collect();
    let placeholder = args
        .new_string
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .find(|(_, line)| is_placeholder(line) && !old_lines.contains(line));
    if let Some((number, line)) = placeholder {
        return Err(ToolError::Respond(format!(
            "new_string contains the placeholder `{line}` (line {number} of new_string), which is \
             not in old_string. edit writes new_string literally, so the placeholder would replace \
             real code. Write out the full text that should replace old_string; to keep code \
             as it is, leave it out of old_string rather than abbreviating it"
        )));
    }
    Ok(())
}

/// Whether a (trimmed) line is a lazy "the rest stays the same" placeholder rather than code.
fn is_placeholder(line: &str) -> bool {
    if matches!(line, "..." | "…") {
        return true;
    }
    let Some(body) = comment_body(line) else {
        return false;
    };
    let body = body.to_lowercase();
    let dots = body.contains("...") || body.contains('…');
    let words: Vec<&str> = body
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    if words.is_empty() {
        // `// ...`, `/* ... */`, `# …`
        return dots;
    }
    // Placeholders are short; a long comment that happens to say "rest of" is prose.
    if words.len() > 8 {
        return false;
    }
    const STRONG: &[&str] = &[
        "rest",
        "existing",
        "unchanged",
        "remaining",
        "remains",
        "omitted",
        "previous",
        "original",
        "same",
        "snip",
        "etc",
    ];
    const WEAK: &[&str] = &["other", "others", "code", "more", "here", "keep"];
    if dots {
        let leading_dots = body.starts_with("...") || body.starts_with('…');
        return words.iter().any(|word| STRONG.contains(word))
            || (leading_dots && words.iter().any(|word| WEAK.contains(word)));
    }
    let text = words.join(" ");
    text.starts_with("rest of")
        || text.ends_with("unchanged")
        || text.ends_with("as before")
        || text.ends_with("remains the same")
        || text.ends_with("stays the same")
        || matches!(
            text.as_str(),
            "existing code" | "existing code here" | "original code" | "previous code" | "snip"
        )
}

/// The text of a line that is only a comment, in the comment syntaxes placeholders come in.
fn comment_body(line: &str) -> Option<&str> {
    let body = if let Some(rest) = line.strip_prefix("<!--") {
        rest.strip_suffix("-->").unwrap_or(rest)
    } else if let Some(rest) = line.strip_prefix("{/*") {
        rest.strip_suffix("*/}").unwrap_or(rest)
    } else if let Some(rest) = line.strip_prefix("/*") {
        rest.strip_suffix("*/").unwrap_or(rest)
    } else if let Some(rest) = line.strip_prefix("//") {
        rest.trim_start_matches(['/', '!'])
    } else if let Some(rest) = line.strip_prefix('#') {
        rest.trim_start_matches('#')
    } else if let Some(rest) = line.strip_prefix("--") {
        rest
    } else if let Some(rest) = line.strip_prefix(';') {
        rest.trim_start_matches(';')
    } else {
        return None;
    };
    Some(body.trim())
}

/// Splits off a UTF-8 byte-order mark and refuses binary or non-UTF-8 content.
fn decode(bytes: Vec<u8>, shown: &str) -> Result<(bool, String), ToolError> {
    if bytes.iter().take(8192).any(|&byte| byte == 0) {
        return Err(ToolError::Respond(format!(
            "{shown} looks like a binary file (it contains NUL bytes); edit only changes text files"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|error| {
        ToolError::Respond(format!(
            "{shown} is not valid UTF-8 (invalid byte at offset {}); edit only changes UTF-8 \
             text files. Use a shell command for files in other encodings",
            error.utf8_error().valid_up_to()
        ))
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => (true, rest.to_owned()),
        None => (false, text),
    })
}

/// The text the model reads after a successful edit; `written_note` says where the change
/// went when that is not simply the disk.
fn render_success(plan: &Plan, shown: &str, written_note: &str) -> String {
    let count = plan.spans.len();
    let occurrences = if count == 1 {
        "1 occurrence".to_owned()
    } else {
        format!("{count} occurrences")
    };
    let lines = format_line_list(&plan.spans);
    let mut text = if plan.deleted {
        format!("Edited {shown}: removed {occurrences} (at {lines}).{written_note}")
    } else {
        format!("Edited {shown}: replaced {occurrences} ({lines}).{written_note}")
    };
    if let Some(note) = plan.mode.note() {
        text.push('\n');
        text.push_str(&note);
    }

    let new_lf = plan.new.replace("\r\n", "\n");
    let new_lines: Vec<&str> = new_lf.lines().collect();
    if !new_lines.is_empty() {
        let mut windows: Vec<Range<usize>> = Vec::new();
        for span in &plan.spans {
            let start = span.first.saturating_sub(WINDOW_CONTEXT).max(1);
            let end = (span.last + WINDOW_CONTEXT).min(new_lines.len());
            if start > end {
                continue;
            }
            match windows.last_mut() {
                Some(last) if start <= last.end + 1 => last.end = last.end.max(end),
                _ => windows.push(start..end),
            }
        }
        text.push_str("\n\n");
        let mut budget = MAX_WINDOW_LINES;
        for (index, window) in windows.iter().enumerate() {
            if budget == 0 {
                let _ = write!(
                    text,
                    "\n[window cut: call read_file with start_line={} to see more]",
                    window.start
                );
                break;
            }
            if index > 0 {
                text.push_str("\n\n");
            }
            let end = window.end.min(window.start + budget - 1);
            text.push_str(&number_lines(
                &new_lines[window.start - 1..end],
                window.start,
            ));
            budget -= end + 1 - window.start;
            if end < window.end {
                let _ = write!(
                    text,
                    "\n[window cut: call read_file with start_line={} to see more]",
                    end + 1
                );
                break;
            }
        }
    }

    let old_lf = plan.old.replace("\r\n", "\n");
    let diff = TextDiff::from_lines(old_lf.as_str(), new_lf.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    text.push_str("\n\n");
    text.push_str(&cap(
        diff.trim_end_matches('\n'),
        MAX_DIFF_BYTES,
        &format!("The edit was applied in full; call read_file on {shown} to see the result."),
    ));
    text
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use expect_test::expect;
    use serde_json::json;

    use super::closest::closest_region;
    use super::*;
    use crate::read_file::ReadFile;
    use crate::testing::{MemoryEditor, TestWorkspace};
    use std::sync::Arc;

    fn scenarios_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/tools/edit")
    }

    /// Relative paths of the files under `dir`, sorted.
    fn files_under(dir: &Path) -> Vec<PathBuf> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, root, out);
                } else {
                    out.push(path.strip_prefix(root).unwrap().to_owned());
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }

    fn copy_files(from: &Path, to: &Path) {
        for relative in files_under(from) {
            let target = to.join(&relative);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(from.join(&relative), target).unwrap();
        }
    }

    /// Runs every scenario folder: `input/` is copied into a workspace (and marked read unless
    /// args.json says `"__unread": true`; `"__changed_after_read": "text"` appends text to the
    /// file after that), the tool runs with args.json, and the model's text must equal
    /// output.txt and the workspace must equal `expected/`. `UPDATE_EXPECT=1` rewrites both.
    #[tokio::test]
    async fn scenarios() {
        let update = std::env::var_os("UPDATE_EXPECT").is_some();
        let mut names: Vec<String> = std::fs::read_dir(scenarios_dir())
            .unwrap()
            .map(|entry| entry.unwrap())
            .filter(|entry| entry.path().is_dir())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(names.len() >= 15, "scenarios missing: {names:?}");
        let mut failures = Vec::new();
        for name in &names {
            let scenario = scenarios_dir().join(name);
            let ws = TestWorkspace::new(&[]);
            copy_files(&scenario.join("input"), &ws.root);
            let mut args: Value =
                serde_json::from_str(&std::fs::read_to_string(scenario.join("args.json")).unwrap())
                    .unwrap();
            let fields = args.as_object_mut().unwrap();
            let unread = fields.remove("__unread") == Some(Value::Bool(true));
            let changed = fields.remove("__changed_after_read");
            if !unread {
                for relative in files_under(&ws.root) {
                    ws.ctx.session.mark_read(&ws.root.join(relative));
                }
            }
            if let Some(Value::String(appended)) = changed {
                let path = ws.root.join(args["path"].as_str().unwrap());
                let mut content = std::fs::read(&path).unwrap();
                content.extend_from_slice(appended.as_bytes());
                std::fs::write(&path, content).unwrap();
            }

            let output = ws.call(&Edit, args).await;
            let output = output.replace(&ws.root.display().to_string(), "<root>");
            let output_file = scenario.join("output.txt");
            let expected_dir = scenario.join("expected");
            if update {
                std::fs::write(&output_file, format!("{output}\n")).unwrap();
                let _ = std::fs::remove_dir_all(&expected_dir);
                copy_files(&ws.root, &expected_dir);
                continue;
            }
            let expected_output = std::fs::read_to_string(&output_file).unwrap_or_default();
            if expected_output.strip_suffix('\n') != Some(output.as_str()) {
                failures.push(format!(
                    "{name}: output differs\n--- expected\n{expected_output}\n--- actual\n{output}\n"
                ));
            }
            let actual_files = files_under(&ws.root);
            let expected_files = files_under(&expected_dir);
            if actual_files != expected_files {
                failures.push(format!(
                    "{name}: files differ: expected {expected_files:?}, got {actual_files:?}"
                ));
                continue;
            }
            for relative in actual_files {
                let actual = std::fs::read(ws.root.join(&relative)).unwrap();
                let expected = std::fs::read(expected_dir.join(&relative)).unwrap();
                if actual != expected {
                    failures.push(format!(
                        "{name}: {} differs\n--- expected\n{:?}\n--- actual\n{:?}\n",
                        relative.display(),
                        String::from_utf8_lossy(&expected),
                        String::from_utf8_lossy(&actual)
                    ));
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} scenario(s) failed (UPDATE_EXPECT=1 rewrites them):\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[tokio::test]
    async fn success_reports_the_diff_and_location_and_allows_a_second_edit() {
        let ws = TestWorkspace::new(&[("src/lib.rs", "a\r\nb\r\nc\r\n")]);
        let path = ws.root.join("src/lib.rs");
        ws.ctx.session.mark_read(&path);
        let output = Edit
            .run(
                json!({"path": "src/lib.rs", "old_string": "b", "new_string": "B"}),
                &ws.ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            output.locations,
            vec![Location {
                path: path.clone(),
                line: Some(2)
            }]
        );
        assert_eq!(
            output.diff,
            Some(FileDiff {
                path: path.clone(),
                old_text: Some("a\r\nb\r\nc\r\n".to_owned()),
                new_text: "a\r\nB\r\nc\r\n".to_owned(),
            })
        );
        // The edit counts as a read: the next edit needs no read_file in between.
        let second = ws
            .call(
                &Edit,
                json!({"path": "src/lib.rs", "old_string": "c", "new_string": "C"}),
            )
            .await;
        assert!(second.starts_with("Edited src/lib.rs"), "{second}");
        assert_eq!(ws.read("src/lib.rs"), "a\r\nB\r\nC\r\n");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let ws = TestWorkspace::new(&[("run.sh", "echo hi\n")]);
        let path = ws.root.join("run.sh");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        ws.ctx.session.mark_read(&path);
        let output = ws
            .call(
                &Edit,
                json!({"path": "run.sh", "old_string": "hi", "new_string": "hello"}),
            )
            .await;
        assert!(output.starts_with("Edited run.sh"), "{output}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[tokio::test]
    async fn long_changes_cut_the_window_and_the_diff() {
        let old: String = (1..=400).map(|n| format!("line {n}\n")).collect();
        let new: String = (1..=400).map(|n| format!("changed line {n}\n")).collect();
        let ws = TestWorkspace::new(&[("big.txt", &old)]);
        ws.ctx.session.mark_read(&ws.root.join("big.txt"));
        let output = ws
            .call(
                &Edit,
                json!({"path": "big.txt", "old_string": old, "new_string": new}),
            )
            .await;
        let notices: Vec<&str> = output
            .lines()
            .filter(|line| line.starts_with('[') || line.starts_with("Edited"))
            .collect();
        expect![[r#"
            [
                "Edited big.txt: replaced 1 occurrence (lines 1-400).",
                "[window cut: call read_file with start_line=61 to see more]",
                "[output truncated: showing 8192 of 11031 bytes. The edit was applied in full; call read_file on big.txt to see the result.]",
            ]
        "#]]
        .assert_debug_eq(&notices);
        assert_eq!(ws.read("big.txt"), new);
    }

    #[test]
    fn closest_region_scores_candidates_in_large_files() {
        let lines: Vec<String> = (0..3000)
            .map(|n| format!("    let value_{n} = compute(alpha, beta, {n});"))
            .collect();
        let file_lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let old = "    let value_1234 = compute(alpha, gamma, 1234);\n    let value_1235 = compute(alpha, beta, 1235);";
        let (start, len, ratio) = closest_region(&file_lines, old, 2).unwrap();
        assert_eq!((start, len), (1234, 2));
        assert!(ratio > 0.9, "{ratio}");
    }

    #[test]
    fn placeholders() {
        let cases = [
            "...",
            "…",
            "// ...",
            "/* ... */",
            "# ...",
            "<!-- ... -->",
            "{/* ... */}",
            "// ... rest of code unchanged",
            "# ... existing code ...",
            "// ...existing code...",
            "// rest of the code",
            "// rest of the function unchanged",
            "-- ... other columns",
            "// other methods unchanged",
            "// existing code",
            "/// ... same as before",
            // Not placeholders:
            "// TODO: handle more cases...",
            "// Wait for the server...",
            "#[derive(Debug)]",
            "...rest",
            "let x = y..z;",
            "// Existing callers expect the old order, so the rest of this list stays sorted.",
            "// handle other cases...",
        ];
        let verdicts: Vec<String> = cases
            .iter()
            .map(|line| format!("{:<5} {line}", is_placeholder(line)))
            .collect();
        expect![[r#"
            [
                "true  ...",
                "true  …",
                "true  // ...",
                "true  /* ... */",
                "true  # ...",
                "true  <!-- ... -->",
                "true  {/* ... */}",
                "true  // ... rest of code unchanged",
                "true  # ... existing code ...",
                "true  // ...existing code...",
                "true  // rest of the code",
                "true  // rest of the function unchanged",
                "true  -- ... other columns",
                "true  // other methods unchanged",
                "true  // existing code",
                "true  /// ... same as before",
                "false // TODO: handle more cases...",
                "false // Wait for the server...",
                "false #[derive(Debug)]",
                "false ...rest",
                "false let x = y..z;",
                "false // Existing callers expect the old order, so the rest of this list stays sorted.",
                "false // handle other cases...",
            ]
        "#]]
        .assert_debug_eq(&verdicts);
    }

    #[test]
    fn titles() {
        let titles = [
            json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
            json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b", "allow_multiple": true}),
            json!({"old_string": "a"}),
            Value::Null,
        ]
        .map(|args| Edit.title(&args));
        expect![[r#"
            [
                "Edit src/lib.rs",
                "Edit src/lib.rs (every occurrence)",
                "Edit a file",
                "Edit a file",
            ]
        "#]]
        .assert_debug_eq(&titles);
    }

    #[test]
    fn schema_describes_every_field() {
        let schema = Edit.parameters();
        let properties = schema["properties"].as_object().unwrap();
        for (name, property) in properties {
            assert!(property["description"].is_string(), "{name}: {property}");
        }
        expect![[r#"["path","old_string","new_string"]"#]]
            .assert_eq(&schema["required"].to_string());
        assert_eq!(schema["additionalProperties"], false);
    }

    /// A workspace whose `lib.rs` is open in a [`MemoryEditor`] with unsaved text the model has
    /// read.
    async fn with_open_buffer() -> (TestWorkspace, Arc<MemoryEditor>, PathBuf) {
        let mut ws = TestWorkspace::new(&[("lib.rs", "fn a() {}\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("lib.rs");
        editor.set(&path, "fn a() {}\nfn unsaved() {}\n", 5);
        let read = ws.call(&ReadFile, json!({"path": "lib.rs"})).await;
        assert!(read.contains("unsaved buffer"), "{read}");
        (ws, editor, path)
    }

    fn rename_unsaved() -> Value {
        json!({"path": "lib.rs", "old_string": "fn unsaved() {}", "new_string": "fn renamed() {}"})
    }

    #[tokio::test]
    async fn edits_the_open_buffer_and_says_it_is_unsaved() {
        let (ws, editor, path) = with_open_buffer().await;
        let output = ws.call(&Edit, rename_unsaved()).await;
        let first_line = output.lines().next().unwrap();
        expect!["Edited lib.rs: replaced 1 occurrence (line 2). The change is in the editor's open buffer and is not saved yet; the user reviews and saves it. Before a shell command or an MCP tool runs, Tandem has the editor save it where it can, and says so when it could not."]
        .assert_eq(first_line);
        assert_eq!(editor.text(&path).unwrap(), "fn a() {}\nfn renamed() {}\n");
        assert_eq!(ws.read("lib.rs"), "fn a() {}\n");
        assert_eq!(
            editor.writes(),
            vec![FileWrite {
                path: path.clone(),
                old_text: Some("fn a() {}\nfn unsaved() {}\n".to_owned()),
                new_text: "fn a() {}\nfn renamed() {}\n".to_owned(),
                version: Some(5),
            }]
        );
        // The model saw its own change: a second edit needs no read in between.
        let second = ws
            .call(
                &Edit,
                json!({"path": "lib.rs", "old_string": "fn a()", "new_string": "fn b()"}),
            )
            .await;
        assert!(second.starts_with("Edited lib.rs"), "{second}");
        assert_eq!(editor.writes()[1].version, Some(6));
    }

    /// The user typed on the line the edit replaces after the model read it: refused, with
    /// what they changed there, and their text kept.
    #[tokio::test]
    async fn an_edit_of_lines_the_user_changed_is_refused_with_their_change() {
        let (ws, editor, path) = with_open_buffer().await;
        editor.type_text(&path, "fn a() {}\nfn unsaved() { typing }\n");
        let output = ws.call(&Edit, rename_unsaved()).await;
        expect![[r#"
            error: lib.rs changed in the editor while you worked on it: the user edited the text your change replaces (line 2 of the text you saw), so nothing was written. What the user changed there (the lines now in the file are the ` ` and `+` lines):
            @@ the user's change, now lines 1-2 @@
             fn a() {}
            -fn unsaved() {}
            +fn unsaved() { typing }

            If your change still applies, redo it on the text as it is now (no need to read the whole file again); if the user's change already does what you meant, leave it."#]]
        .assert_eq(&output);
        assert_eq!(
            editor.text(&path).unwrap(),
            "fn a() {}\nfn unsaved() { typing }\n"
        );
        assert!(editor.writes().is_empty());
        // The refusal showed the user's change: the next edit needs no read.
        let again = ws
            .call(
                &Edit,
                json!({"path": "lib.rs", "old_string": "fn unsaved() { typing }", "new_string": "fn renamed() { typing }"}),
            )
            .await;
        assert!(again.starts_with("Edited lib.rs"), "{again}");
    }

    /// The user typed on other lines after the model read the buffer: the edit is merged with
    /// their change, and the model is not told about it.
    #[tokio::test]
    async fn an_edit_after_the_user_typed_elsewhere_lands_on_their_text() {
        let (ws, editor, path) = with_open_buffer().await;
        editor.type_text(&path, "// typed\nfn a() {}\nfn unsaved() {}\n");
        let output = ws.call(&Edit, rename_unsaved()).await;
        assert!(
            output.starts_with("Edited lib.rs: replaced 1 occurrence (line 3)"),
            "{output}"
        );
        assert_eq!(
            editor.text(&path).unwrap(),
            "// typed\nfn a() {}\nfn renamed() {}\n"
        );
        assert_eq!(editor.writes().len(), 1);
        assert_eq!(editor.writes()[0].version, Some(6));
    }

    /// The user types between the tool's read of the buffer and its write, on another line: the
    /// editor refuses the stale version, and the edit is resolved again on the new text and
    /// lands there, with nothing the user typed lost.
    #[tokio::test]
    async fn a_write_made_stale_by_typing_elsewhere_is_redone_on_the_new_text() {
        let (ws, editor, path) = with_open_buffer().await;
        editor.type_before_next_write(&path, "fn a() {}\nfn unsaved() {}\n// typed\n");
        let output = ws.call(&Edit, rename_unsaved()).await;
        assert!(
            output.starts_with("Edited lib.rs: replaced 1 occurrence (line 2)"),
            "{output}"
        );
        assert_eq!(
            editor.text(&path).unwrap(),
            "fn a() {}\nfn renamed() {}\n// typed\n"
        );
        assert_eq!(ws.read("lib.rs"), "fn a() {}\n");
        let versions: Vec<Option<i32>> = editor.writes().iter().map(|w| w.version).collect();
        assert_eq!(versions, [Some(5), Some(6)]);
        // What the agent wrote counts as seen: the next edit needs no read.
        let next = ws
            .call(
                &Edit,
                json!({"path": "lib.rs", "old_string": "fn a() {}", "new_string": "fn b() {}"}),
            )
            .await;
        assert!(next.starts_with("Edited lib.rs"), "{next}");
    }

    /// The user types on the very line between the tool's read and its write: refused, with
    /// their change, and nothing they typed lost.
    #[tokio::test]
    async fn a_write_made_stale_by_typing_on_its_line_is_refused_and_nothing_is_lost() {
        let (ws, editor, path) = with_open_buffer().await;
        editor.type_before_next_write(&path, "fn a() {}\nfn unsaved() { typed }\n");
        let output = ws.call(&Edit, rename_unsaved()).await;
        assert!(
            output.contains("the user edited the text your change replaces (line 2")
                && output.contains("+fn unsaved() { typed }"),
            "{output}"
        );
        assert_eq!(
            editor.text(&path).unwrap(),
            "fn a() {}\nfn unsaved() { typed }\n"
        );
        assert_eq!(editor.writes().len(), 1);
    }

    /// The user pastes a second copy of old_string while the edit is in flight: where the edit
    /// belongs is no longer certain, so it is refused.
    #[tokio::test]
    async fn a_write_whose_old_string_the_user_duplicated_is_refused() {
        let (ws, editor, path) = with_open_buffer().await;
        editor.type_before_next_write(&path, "fn unsaved() {}\nfn a() {}\nfn unsaved() {}\n");
        let output = ws.call(&Edit, rename_unsaved()).await;
        assert!(
            output.contains("the user edited the text your change replaces"),
            "{output}"
        );
        assert_eq!(
            editor.text(&path).unwrap(),
            "fn unsaved() {}\nfn a() {}\nfn unsaved() {}\n"
        );
    }

    #[tokio::test]
    async fn a_new_file_open_only_in_the_editor_can_be_edited() {
        let mut ws = TestWorkspace::new(&[]);
        let editor = ws.memory_editor();
        let path = ws.root.join("draft.md");
        editor.set(&path, "# Draft\n", 1);
        let unread = ws
            .call(
                &Edit,
                json!({"path": "draft.md", "old_string": "Draft", "new_string": "Plan"}),
            )
            .await;
        expect!["error: you have not read draft.md in this session: read it with read_file before editing"]
        .assert_eq(&unread);
        ws.call(&ReadFile, json!({"path": "draft.md"})).await;
        let output = ws
            .call(
                &Edit,
                json!({"path": "draft.md", "old_string": "Draft", "new_string": "Plan"}),
            )
            .await;
        assert!(output.starts_with("Edited draft.md"), "{output}");
        assert_eq!(editor.text(&path).unwrap(), "# Plan\n");
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_byte_order_mark_on_disk_is_kept_through_the_editor() {
        let mut ws = TestWorkspace::new(&[("bom.txt", "\u{feff}one\n")]);
        let editor = ws.memory_editor();
        ws.call(&ReadFile, json!({"path": "bom.txt"})).await;
        let output = ws
            .call(
                &Edit,
                json!({"path": "bom.txt", "old_string": "one", "new_string": "two"}),
            )
            .await;
        assert!(
            output.starts_with("Edited bom.txt: replaced 1 occurrence (line 1).\n"),
            "{output}"
        );
        assert_eq!(ws.read("bom.txt"), "\u{feff}two\n");
        let write = &editor.writes()[0];
        assert_eq!(write.old_text.as_deref(), Some("\u{feff}one\n"));
        assert_eq!(write.version, None);
    }

    /// The approval prompt shows the diff before the edit runs: it must be what `run` then
    /// writes, and computing it must leave the file and what the model has seen alone.
    #[tokio::test]
    async fn preview_is_the_diff_run_then_makes_and_changes_nothing() {
        let mut ws = TestWorkspace::new(&[
            ("src/lib.rs", "a\r\nb\r\nc\r\n"),
            ("bom.txt", "\u{feff}x\n"),
        ]);
        let editor = ws.memory_editor();
        let path = ws.root.join("src/lib.rs");
        ws.ctx.session.mark_read(&path);
        let seen = ws.ctx.session.last_seen(&path);
        let args = json!({"path": "src/lib.rs", "old_string": "b\nc", "new_string": "B\nC"});

        let preview = Edit.preview(&args, &ws.ctx).await.unwrap();
        assert_eq!(ws.read("src/lib.rs"), "a\r\nb\r\nc\r\n");
        assert_eq!(ws.ctx.session.last_seen(&path), seen);
        assert!(editor.writes().is_empty());
        let output = Edit.run(args, &ws.ctx).await.unwrap();
        assert_eq!(preview, output.diff);
        assert_eq!(
            preview,
            Some(FileDiff {
                path,
                old_text: Some("a\r\nb\r\nc\r\n".to_owned()),
                new_text: "a\r\nB\r\nC\r\n".to_owned(),
            })
        );

        // The byte-order mark stays out of both, as it does in the diff the model gets.
        let bom = ws.root.join("bom.txt");
        ws.ctx.session.mark_read(&bom);
        let args = json!({"path": "bom.txt", "old_string": "x", "new_string": "y"});
        let preview = Edit.preview(&args, &ws.ctx).await.unwrap();
        assert_eq!(ws.read("bom.txt"), "\u{feff}x\n");
        assert_eq!(preview, Edit.run(args, &ws.ctx).await.unwrap().diff);
    }

    #[tokio::test]
    async fn preview_of_a_buffer_writes_nothing_and_matches_run() {
        let (ws, editor, path) = with_open_buffer().await;
        let seen = ws.ctx.session.last_seen(&path);
        let preview = Edit.preview(&rename_unsaved(), &ws.ctx).await.unwrap();
        assert!(preview.is_some());
        assert!(editor.writes().is_empty());
        assert_eq!(ws.ctx.session.last_seen(&path), seen);
        let output = Edit.run(rename_unsaved(), &ws.ctx).await.unwrap();
        assert_eq!(preview, output.diff);
    }

    /// The guardrail refuses an edit that breaks the syntax: nothing is written, and nothing
    /// counts as seen or edited. With `syntax.checkEdits` off the same edit goes through.
    #[tokio::test]
    async fn an_edit_that_breaks_the_syntax_is_refused_unless_the_check_is_off() {
        let mut ws = TestWorkspace::new(&[("src/lib.rs", "fn a() -> u32 {\n    1\n}\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("src/lib.rs");
        ws.ctx.session.mark_read(&path);
        let seen = ws.ctx.session.last_seen(&path);
        let args = json!({"path": "src/lib.rs", "old_string": "    1\n}", "new_string": "    1"});
        let refused = ws.call(&Edit, args.clone()).await;
        expect![[r#"
            error: The change to src/lib.rs was NOT applied: it would add syntax errors (line:column after the change):
              1:15 unclosed `{`
            Before:
                 1	fn a() -> u32 {
                 2	    1
                 3	}
            After (not applied):
                 1	fn a() -> u32 {
                 2	    1
            Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]].assert_eq(&refused);
        assert!(editor.writes().is_empty());
        assert_eq!(ws.ctx.session.last_seen(&path), seen);
        assert!(ws.ctx.session.focus().edited.is_empty());

        ws.ctx.syntax.check_edits = false;
        let output = ws.call(&Edit, args).await;
        assert!(output.starts_with("Edited src/lib.rs"), "{output}");
        assert_eq!(ws.read("src/lib.rs"), "fn a() -> u32 {\n    1\n");
        assert_eq!(ws.ctx.session.focus().edited, vec![path]);
    }

    /// Files in languages Tandem does not parse are not checked, and every applied edit is
    /// remembered as recent for the repo map.
    #[tokio::test]
    async fn unparsed_languages_are_not_checked_and_edits_are_noted() {
        let ws = TestWorkspace::new(&[("notes.txt", "fn a() {\n}\n"), ("b.rs", "fn b() {}\n")]);
        for name in ["notes.txt", "b.rs"] {
            ws.ctx.session.mark_read(&ws.root.join(name));
        }
        let output = ws
            .call(
                &Edit,
                json!({"path": "notes.txt", "old_string": "}", "new_string": "{"}),
            )
            .await;
        assert!(output.starts_with("Edited notes.txt"), "{output}");
        let output = ws
            .call(
                &Edit,
                json!({"path": "b.rs", "old_string": "fn b() {}", "new_string": "fn b() { 1 }"}),
            )
            .await;
        assert!(output.starts_with("Edited b.rs"), "{output}");
        assert_eq!(
            ws.ctx.session.focus().edited,
            vec![ws.root.join("b.rs"), ws.root.join("notes.txt")]
        );
    }

    /// A call certain to fail is refused from its preview with what `run` answers, so nobody
    /// is asked to approve it (an edit right after an ACP @-mention was asked about, then
    /// refused as unread).
    #[tokio::test]
    async fn preview_is_the_refusal_when_the_edit_would_fail() {
        let ws = TestWorkspace::new(&[("read.txt", "one\none\n"), ("unread.txt", "one\n")]);
        ws.ctx.session.mark_read(&ws.root.join("read.txt"));
        let failing = [
            json!({"path": "unread.txt", "old_string": "one", "new_string": "two"}),
            json!({"path": "read.txt", "old_string": "one", "new_string": "two"}),
            json!({"path": "read.txt", "old_string": "three", "new_string": "two"}),
            json!({"path": "read.txt", "old_string": "one", "new_string": "one"}),
            json!({"path": "missing.txt", "old_string": "one", "new_string": "two"}),
            json!({"path": "../outside.txt", "old_string": "one", "new_string": "two"}),
            json!({"path": "read.txt", "old_string": "one"}),
        ];
        for args in failing {
            let refusal = Edit.preview(&args, &ws.ctx).await.unwrap_err();
            assert_eq!(
                ws.call(&Edit, args.clone()).await,
                format!("error: {refusal}"),
                "{args}"
            );
        }
        // Looking did not count as reading.
        assert_eq!(ws.ctx.session.last_seen(&ws.root.join("unread.txt")), None);
        assert_eq!(ws.read("read.txt"), "one\none\n");
    }
}
