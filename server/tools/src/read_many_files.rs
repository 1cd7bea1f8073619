//! The `read_many_files` tool: several text files in one call, chosen by path, directory or glob
//! pattern, each under a `--- path ---` header and numbered like `read_file` (whose reading and
//! numbering it shares). Per file the `read_file` caps hold (400 lines, 64 KiB); across files
//! the total stops at 256 KiB, and the files that did not fit are named so the model can read
//! them with `read_file`. Like `read_file`, it reads an open editor buffer before the disk.
//!
//! Directories and globs walk the workspace with `ignore`, so what `.gitignore` hides (build
//! output, dependencies) is skipped; a file named directly is read even when ignored.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::read_file::{continuation, snapshot, View, MAX_FILE_BYTES, UNSAVED_NOTE};
use crate::tool::{parse_args, schema_for, SessionState, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::editor::Editor;
use tandem_sandbox::workspace::Workspace;

/// Bytes of file sections (headers, numbered lines, notices) one call shows at most.
const MAX_TOTAL_BYTES: usize = 256 * 1024;
/// Files named at most in the list of those that did not fit.
const MAX_LISTED: usize = 50;
/// Characters that make an entry a glob pattern (unless a file has that very name).
pub const GLOB_CHARS: [char; 4] = ['*', '?', '[', '{'];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Files, directories or glob patterns, relative to the workspace root, e.g.
    /// ["src/main.rs", "docs", "src/**/*.rs"]. In a pattern `*` stays within one directory and
    /// `**` crosses directories; `{a,b}` and `[abc]` work too. A directory means every file in
    /// it, at any depth. Directories and patterns skip files ignored by .gitignore.
    paths: Vec<String>,
}

pub struct ReadManyFiles;

impl Tool for ReadManyFiles {
    fn name(&self) -> &'static str {
        "read_many_files"
    }

    fn description(&self) -> &'static str {
        "Reads several text files in one call: give paths, directories or glob patterns \
         (relative to the workspace root, e.g. \"src/**/*.rs\"); files ignored by .gitignore are \
         skipped when a directory or pattern matches them. Each file comes under a \
         `--- path ---` header with its lines numbered like read_file, in sorted path order, \
         each file once. Use it to take in a handful of related files (a module and its tests, \
         all the docs); use read_file for one file or for a window of a long file, glob to only \
         list matching paths, grep to find text. Caps: 400 lines and 64 KiB per file (a cut file \
         ends with the read_file call that reads on) and 256 KiB in all; files that did not fit \
         are listed at the end to read with read_file. Binary files are skipped with a one-line \
         note, and paths or patterns that matched nothing are reported at the end."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, args: &Value) -> String {
        let paths: Vec<&str> = args
            .get("paths")
            .and_then(Value::as_array)
            .map(|paths| paths.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match paths.len() {
            0 => "Read files".to_owned(),
            1..=3 => format!("Read {}", paths.join(", ")),
            count => format!("Read {} and {} more", paths[..3].join(", "), count - 3),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            if args.paths.is_empty() {
                return Err(ToolError::Respond(
                    "paths is empty; give at least one file, directory or glob pattern, e.g. \
                     [\"src/**/*.rs\"]"
                        .to_owned(),
                ));
            }
            let workspace = Arc::clone(&ctx.workspace);
            let session = Arc::clone(&ctx.session);
            let editor = Arc::clone(&ctx.editor);
            let cancel = ctx.cancel.clone();
            // A small context window reads fewer files a call; the rest are listed.
            let total_bytes = ctx.output_budget(MAX_TOTAL_BYTES);
            tokio::task::spawn_blocking(move || {
                let reader = Reader {
                    workspace: &workspace,
                    session: &session,
                    editor: editor.as_ref(),
                    cancel: &cancel,
                    total_bytes,
                };
                reader.read_all(&args.paths)
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("read_many_files panicked: {error}")))?
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// What one call reads with, and how much it may return in all.
struct Reader<'a> {
    workspace: &'a Workspace,
    session: &'a SessionState,
    editor: &'a dyn Editor,
    cancel: &'a CancellationToken,
    total_bytes: usize,
}

impl Reader<'_> {
    fn read_all(&self, entries: &[String]) -> Result<ToolOutput, ToolError> {
        let Reader {
            workspace,
            session,
            editor,
            cancel,
            total_bytes,
        } = *self;
        let mut found = Vec::new();
        let mut notes = Vec::new();
        let mut seen_entries = HashSet::new();
        for entry in entries {
            if seen_entries.insert(entry.as_str()) {
                expand(workspace, editor, entry, cancel, &mut found, &mut notes)?;
            }
        }
        let mut seen_files = HashSet::new();
        let mut files: Vec<(String, PathBuf)> = found
            .into_iter()
            .filter(|path| seen_files.insert(path.clone()))
            .map(|path| (workspace.display(&path), path))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(ToolError::Respond(format!(
                "no files to read:\n{}",
                notes.join("\n")
            )));
        }

        let mut sections: Vec<String> = Vec::new();
        let mut used = 0;
        let mut locations = Vec::new();
        let mut not_shown = Vec::new();
        let mut full = false;
        for (shown, path) in files {
            if cancel.is_cancelled() {
                return Err(ToolError::Respond(
                    "read_many_files was cancelled".to_owned(),
                ));
            }
            if full {
                not_shown.push(shown);
                continue;
            }
            let buffer = editor.buffer(&path);
            // Room for the header (with the unsaved note an open buffer may need), the line breaks
            // and a continuation notice naming the file.
            let note_room = if buffer.is_some() {
                UNSAVED_NOTE.len() + 3
            } else {
                0
            };
            let reserved = 2 * shown.len() + 8 + note_room + 120;
            let budget = total_bytes
                .saturating_sub(used + reserved)
                .min(MAX_FILE_BYTES);
            let snapshot = match snapshot(buffer, &path, 1, None, budget) {
                Ok(snapshot) => snapshot,
                Err(error) => {
                    let section = format!("[could not read {shown}: {error}]");
                    used += section.len() + 1;
                    sections.push(section);
                    continue;
                }
            };
            let header = if snapshot.unsaved {
                format!("--- {shown} ({UNSAVED_NOTE}) ---")
            } else {
                format!("--- {shown} ---")
            };
            let section = match &snapshot.view {
                View::Binary(description) => {
                    format!("[skipped {shown}: binary file ({description})]")
                }
                View::Text(lines) if lines.total_lines == 0 => {
                    snapshot.record(session, &path);
                    locations.push(location(path));
                    format!("{header}\n(empty file)")
                }
                View::Text(lines) if lines.last < lines.first => {
                    // Not one line fits in what is left of the total.
                    full = true;
                    not_shown.push(shown);
                    continue;
                }
                View::Text(lines) => {
                    let mut section = format!("{header}\n{}", lines.body);
                    if let Some(notice) = continuation(lines, None, Some(&shown)) {
                        section.push('\n');
                        section.push_str(&notice);
                    }
                    snapshot.record(session, &path);
                    locations.push(location(path));
                    // Cut by the total rather than its own cap: the files after it are only listed.
                    full = lines.last < lines.window_last && budget < MAX_FILE_BYTES;
                    section
                }
            };
            used += section.len() + 1;
            sections.push(section);
        }
        if !not_shown.is_empty() {
            let count = not_shown.len();
            let mut listed = not_shown[..count.min(MAX_LISTED)].join(", ");
            if count > MAX_LISTED {
                listed.push_str(&format!(" and {} more", count - MAX_LISTED));
            }
            sections.push(format!(
            "[output limit of {} KiB reached; not shown ({count} {}): {listed}. Read them with \
             read_file, or call read_many_files with fewer paths]",
            total_bytes.div_ceil(1024),
            if count == 1 { "file" } else { "files" }
        ));
        }
        sections.extend(notes);
        Ok(ToolOutput {
            text: sections.join("\n"),
            locations,
            diff: None,
            images: Vec::new(),
        })
    }
}

fn location(path: PathBuf) -> Location {
    Location {
        path,
        line: Some(1),
    }
}

/// Adds the files `entry` names (a path, a directory or a glob pattern) to `found` as canonical
/// paths inside the workspace, and a note to `notes` when it names none or is refused.
fn expand(
    workspace: &Workspace,
    editor: &dyn Editor,
    entry: &str,
    cancel: &CancellationToken,
    found: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
) -> Result<(), ToolError> {
    let resolved = workspace.resolve_for_reading(entry);
    // A file may really be called `[draft].md`: an existing path wins over a pattern.
    let is_pattern =
        entry.contains(GLOB_CHARS) && !resolved.as_ref().is_ok_and(|path| path.exists());
    if is_pattern {
        return expand_pattern(workspace, entry, cancel, found, notes);
    }
    let path = match resolved {
        Ok(path) => path,
        Err(error) => {
            notes.push(format!("[skipped \"{entry}\": {error}]"));
            return Ok(());
        }
    };
    match std::fs::metadata(&path) {
        // A new file the user has not saved yet.
        Err(error) if error.kind() == io::ErrorKind::NotFound && editor.buffer(&path).is_some() => {
            found.push(path)
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => notes.push(format!(
            "[not found: \"{entry}\"; call glob to find the right path]"
        )),
        Err(error) => notes.push(format!("[could not read \"{entry}\": {error}]")),
        Ok(metadata) if metadata.is_dir() => {
            let before = found.len();
            walk(workspace, &path, &path, None, cancel, found, notes)?;
            if found.len() == before {
                notes.push(format!(
                    "[no files in directory \"{entry}\" (files ignored by .gitignore are \
                     skipped; name a file to read it anyway)]"
                ));
            }
        }
        Ok(metadata) if metadata.is_file() => found.push(path),
        Ok(_) => notes.push(format!(
            "[skipped \"{entry}\": not a regular file (a pipe, socket or device)]"
        )),
    }
    Ok(())
}

pub fn expand_pattern(
    workspace: &Workspace,
    entry: &str,
    cancel: &CancellationToken,
    found: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
) -> Result<(), ToolError> {
    let Some(root) = workspace.primary_root() else {
        notes.push(format!(
            "[skipped \"{entry}\": there is no workspace folder to match it in]"
        ));
        return Ok(());
    };
    let mut pattern = entry;
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let relative;
    if Path::new(pattern).is_absolute() {
        // An absolute pattern is fine when it spells out the workspace root.
        match Path::new(pattern).strip_prefix(root) {
            Ok(inside) => {
                relative = inside.to_string_lossy().into_owned();
                pattern = &relative;
            }
            Err(_) => {
                notes.push(format!(
                    "[skipped \"{entry}\": glob patterns are relative to the workspace root \
                     ({}); write it without the leading path]",
                    root.display()
                ));
                return Ok(());
            }
        }
    }
    if pattern.split('/').any(|component| component == "..") {
        notes.push(format!(
            "[skipped \"{entry}\": glob patterns cannot go up with `..`; they match inside the \
             workspace root]"
        ));
        return Ok(());
    }
    let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(glob) => glob.compile_matcher(),
        Err(error) => {
            notes.push(format!("[invalid glob pattern \"{entry}\": {error}]"));
            return Ok(());
        }
    };
    // Walk only below the pattern's literal directories, not the whole workspace; but from the
    // root, so that `target/**` skips an ignored `target/` as `**/*.rs` does.
    let components: Vec<&str> = pattern.split('/').collect();
    let base = components[..components.len() - 1]
        .iter()
        .take_while(|component| !component.contains(GLOB_CHARS))
        .fold(root.to_path_buf(), |base, component| base.join(component));
    let before = found.len();
    if base.is_dir() {
        walk(workspace, root, &base, Some(&matcher), cancel, found, notes)?;
    }
    if found.len() == before {
        notes.push(format!(
            "[no files match \"{entry}\" (files ignored by .gitignore are skipped; name a file \
             to read it anyway)]"
        ));
    }
    Ok(())
}

/// Adds the files below `within` that `.gitignore` keeps (and that `matcher`, if any, matches
/// by their path relative to `from`) to `found`. The walk starts at `from`, an ancestor of
/// `within` or `within` itself, so the ignore rules of the directories in between apply.
pub fn walk(
    workspace: &Workspace,
    from: &Path,
    within: &Path,
    matcher: Option<&GlobMatcher>,
    cancel: &CancellationToken,
    found: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
) -> Result<(), ToolError> {
    let within_owned = within.to_path_buf();
    let walker = ignore::WalkBuilder::new(from)
        // Dotfiles (.github/, .env.example) are often what the model asks for; .git never is.
        .hidden(false)
        .filter_entry(move |entry| {
            let path = entry.path();
            entry.file_name() != ".git"
                && (path.starts_with(&within_owned) || within_owned.starts_with(path))
        })
        // Honour .gitignore even outside a git repository.
        .require_git(false)
        .build();
    // Unreadable entries are skipped: the model asked for what can be read.
    for entry in walker.flatten() {
        if cancel.is_cancelled() {
            return Err(ToolError::Respond(
                "read_many_files was cancelled".to_owned(),
            ));
        }
        if entry.file_type().is_some_and(|kind| kind.is_dir()) {
            continue;
        }
        if let Some(matcher) = matcher {
            let Ok(relative) = entry.path().strip_prefix(from) else {
                continue;
            };
            if !matcher.is_match(relative) {
                continue;
            }
        }
        let Ok(canonical) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        if !workspace.readable(&canonical) {
            notes.push(format!(
                "[skipped {}: it links outside the workspace]",
                workspace.display(entry.path())
            ));
        } else if canonical.is_file() {
            found.push(canonical);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    /// The text the model sees, with the workspace's absolute path replaced by `<ws>` and, for
    /// long outputs, runs of numbered lines elided (marked as such), so the snapshots stay
    /// readable.
    fn shown(ws: &TestWorkspace, text: &str) -> String {
        let text = text.replace(ws.root.to_str().unwrap(), "<ws>");
        let mut out: Vec<String> = Vec::new();
        let mut run: Vec<&str> = Vec::new();
        let flush = |run: &mut Vec<&str>, out: &mut Vec<String>| {
            if run.len() > 6 {
                out.extend(run[..2].iter().map(|line| line.to_string()));
                out.push(format!("⟪{} lines elided by the test⟫", run.len() - 4));
                out.extend(run[run.len() - 2..].iter().map(|line| line.to_string()));
            } else {
                out.extend(run.iter().map(|line| line.to_string()));
            }
            run.clear();
        };
        for line in text.lines() {
            if line.starts_with(' ') {
                run.push(line);
            } else {
                flush(&mut run, &mut out);
                out.push(line.to_owned());
            }
        }
        flush(&mut run, &mut out);
        out.iter()
            .map(|line| {
                let chars: Vec<char> = line.chars().collect();
                if chars.len() > 160 && line.contains('\t') {
                    let head: String = chars[..30].iter().collect();
                    let tail: String = chars[chars.len() - 30..].iter().collect();
                    format!(
                        "{head}⟪{} chars elided by the test⟫{tail}",
                        chars.len() - 60
                    )
                } else {
                    line.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn numbered(count: usize, width: usize) -> String {
        (1..=count)
            .map(|n| format!("line {n} {}\n", "x".repeat(width)))
            .collect()
    }

    #[tokio::test]
    async fn cases() {
        let long_file = numbered(450, 0);
        let ws = TestWorkspace::new(&[
            (".gitignore", "target/\n*.log\n"),
            ("src/.gitignore", "generated/\n"),
            ("src/generated/g.rs", "ignored below src\n"),
            ("src/lib.rs", "pub mod a;\npub mod b;\n"),
            ("src/a.rs", "pub fn a() {}\n"),
            ("src/b.rs", "pub fn b() {}\r\n"),
            ("src/nested/c.rs", "pub fn c() {}\n"),
            ("src/empty.rs", ""),
            ("docs/guide.md", "# Guide\n"),
            ("docs/logo.png", "\u{89}PNG\r\n\u{1a}\n\0"),
            (".github/ci.yml", "on: push\n"),
            ("target/debug/out.rs", "generated\n"),
            ("debug.log", "log line\n"),
            ("long.txt", &long_file),
            ("[draft].md", "a file named like a pattern\n"),
        ]);

        let cases: Vec<(Value, Expect)> = vec![
            (
                // Sorted, each file once, whatever order and overlap the entries have.
                json!({"paths": ["src/*.rs", "src/a.rs", "./src/lib.rs", "src/*.rs"]}),
                expect![[r#"
                    --- src/a.rs ---
                         1	pub fn a() {}
                    --- src/b.rs ---
                         1	pub fn b() {}
                    --- src/empty.rs ---
                    (empty file)
                    --- src/lib.rs ---
                         1	pub mod a;
                         2	pub mod b;"#]],
            ),
            (
                json!({"paths": ["src/**/c.rs", "docs", "**/*.yml"]}),
                expect![[r#"
                    --- .github/ci.yml ---
                         1	on: push
                    --- docs/guide.md ---
                         1	# Guide
                    [skipped docs/logo.png: binary file (10 bytes, image/png)]
                    --- src/nested/c.rs ---
                         1	pub fn c() {}"#]],
            ),
            (
                // Ignored files are skipped by patterns but read when named.
                json!({"paths": [
                    "**/*.log", "target/**", "src/generated/*", "target/debug/out.rs", "[draft].md",
                ]}),
                expect![[r#"
                    --- [draft].md ---
                         1	a file named like a pattern
                    --- target/debug/out.rs ---
                         1	generated
                    [no files match "**/*.log" (files ignored by .gitignore are skipped; name a file to read it anyway)]
                    [no files match "target/**" (files ignored by .gitignore are skipped; name a file to read it anyway)]
                    [no files match "src/generated/*" (files ignored by .gitignore are skipped; name a file to read it anyway)]"#]],
            ),
            (
                json!({"paths": ["long.txt", "src/a.rs"]}),
                expect![[r#"
                    --- long.txt ---
                         1	line 1 
                         2	line 2 
                    ⟪396 lines elided by the test⟫
                       399	line 399 
                       400	line 400 
                    [showing lines 1-400 of 450; call read_file with path="long.txt" and start_line=401 to continue]
                    --- src/a.rs ---
                         1	pub fn a() {}"#]],
            ),
            (
                json!({"paths": [
                    "src/a.rs", "missing.rs", "src/*.py", "../outside.txt", "src/[", "/elsewhere/*.rs",
                    "../**/*.rs",
                ]}),
                expect![[r#"
                    --- src/a.rs ---
                         1	pub fn a() {}
                    [not found: "missing.rs"; call glob to find the right path]
                    [no files match "src/*.py" (files ignored by .gitignore are skipped; name a file to read it anyway)]
                    [skipped "../outside.txt": `../outside.txt` is outside the workspace (<ws>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings]
                    [invalid glob pattern "src/[": error parsing glob 'src/[': unclosed character class; missing ']']
                    [skipped "/elsewhere/*.rs": glob patterns are relative to the workspace root (<ws>); write it without the leading path]
                    [skipped "../**/*.rs": glob patterns cannot go up with `..`; they match inside the workspace root]"#]],
            ),
            (
                // A directory holds its files at any depth, minus what .gitignore hides; an
                // absolute pattern inside the workspace is fine.
                json!({"paths": ["src", format!("{}/src/nested/*.rs", ws.root.display())]}),
                expect![[r#"
                    --- src/.gitignore ---
                         1	generated/
                    --- src/a.rs ---
                         1	pub fn a() {}
                    --- src/b.rs ---
                         1	pub fn b() {}
                    --- src/empty.rs ---
                    (empty file)
                    --- src/lib.rs ---
                         1	pub mod a;
                         2	pub mod b;
                    --- src/nested/c.rs ---
                         1	pub fn c() {}"#]],
            ),
            (
                json!({"paths": ["nothing/*.rs", "gone.txt"]}),
                expect![[r#"
                    error: no files to read:
                    [no files match "nothing/*.rs" (files ignored by .gitignore are skipped; name a file to read it anyway)]
                    [not found: "gone.txt"; call glob to find the right path]"#]],
            ),
            (
                json!({"paths": []}),
                expect![[
                    r#"error: paths is empty; give at least one file, directory or glob pattern, e.g. ["src/**/*.rs"]"#
                ]],
            ),
            (
                json!({"paths": "src/a.rs"}),
                expect![[
                    r#"error: invalid arguments for read_many_files: invalid type: string "src/a.rs", expected a sequence"#
                ]],
            ),
        ];
        for (args, expected) in cases {
            let text = ws.call(&ReadManyFiles, args).await;
            expected.assert_eq(&shown(&ws, &text));
        }
    }

    #[tokio::test]
    async fn the_total_cap_cuts_one_file_and_lists_the_rest() {
        // Eight files of about 50 KiB: five fit in 256 KiB, the sixth is cut, two are listed.
        let file = numbered(50, 1000);
        let names: Vec<String> = (1..=8).map(|n| format!("part{n}.txt")).collect();
        let files: Vec<(&str, &str)> = names
            .iter()
            .map(|name| (name.as_str(), file.as_str()))
            .collect();
        let ws = TestWorkspace::new(&files);
        let output = ReadManyFiles
            .run(json!({"paths": ["*.txt"]}), &ws.ctx)
            .await
            .unwrap();
        expect![[r#"
            --- part1.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪46 lines elided by the test⟫
                49	line 49 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                50	line 50 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            --- part2.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪46 lines elided by the test⟫
                49	line 49 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                50	line 50 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            --- part3.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪46 lines elided by the test⟫
                49	line 49 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                50	line 50 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            --- part4.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪46 lines elided by the test⟫
                49	line 49 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                50	line 50 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            --- part5.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪46 lines elided by the test⟫
                49	line 49 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                50	line 50 xxxxxxxxxxxxxxx⟪955 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            --- part6.txt ---
                 1	line 1 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 2	line 2 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            ⟪3 lines elided by the test⟫
                 6	line 6 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                 7	line 7 xxxxxxxxxxxxxxxx⟪954 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            [showing lines 1-7 of 50; call read_file with path="part6.txt" and start_line=8 to continue]
            [output limit of 256 KiB reached; not shown (2 files): part7.txt, part8.txt. Read them with read_file, or call read_many_files with fewer paths]"#]]
        .assert_eq(&shown(&ws, &output.text));
        assert!(
            output.text.len() <= MAX_TOTAL_BYTES,
            "{}",
            output.text.len()
        );
        let read: Vec<&str> = names
            .iter()
            .filter(|name| ws.ctx.session.last_seen(&ws.root.join(name)).is_some())
            .map(String::as_str)
            .collect();
        assert_eq!(read, names[..6]);
        assert_eq!(output.locations.len(), 6);
        assert_eq!(output.locations[0], location(ws.root.join("part1.txt")));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_small_window_reads_fewer_files_and_lists_the_rest() {
        let file = numbered(50, 60);
        let names: Vec<String> = (1..=4).map(|n| format!("part{n}.txt")).collect();
        let files: Vec<(&str, &str)> = names
            .iter()
            .map(|name| (name.as_str(), file.as_str()))
            .collect();
        let mut ws = TestWorkspace::new(&files);
        ws.ctx.output_limit = Some(6 * 1024);
        let output = ReadManyFiles
            .run(json!({"paths": ["*.txt"]}), &ws.ctx)
            .await
            .unwrap();
        // The list of files not shown comes on top of the budget.
        assert!(output.text.len() <= 6 * 1024 + 200, "{}", output.text.len());
        assert!(
            output.text.ends_with(
                "[output limit of 6 KiB reached; not shown (2 files): part3.txt, part4.txt. \
                 Read them with read_file, or call read_many_files with fewer paths]"
            ),
            "{}",
            output.text
        );
    }

    #[tokio::test]
    async fn links_out_of_the_workspace_are_skipped() {
        let ws = TestWorkspace::new(&[("inside.txt", "in\n")]);
        let secret = ws.root.parent().unwrap().join("secret.txt");
        std::fs::write(&secret, "secret\n").unwrap();
        std::os::unix::fs::symlink(&secret, ws.root.join("link.txt")).unwrap();
        expect![[r#"
            --- inside.txt ---
                 1	in
            [skipped link.txt: it links outside the workspace]"#]]
        .assert_eq(&ws.call(&ReadManyFiles, json!({"paths": ["*.txt"]})).await);
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({"paths": ["src/a.rs"]}), "Read src/a.rs"),
            (
                json!({"paths": ["a", "b", "c", "d", "e"]}),
                "Read a, b, c and 2 more",
            ),
            (json!({"paths": []}), "Read files"),
            (Value::Null, "Read files"),
        ];
        for (args, title) in cases {
            assert_eq!(ReadManyFiles.title(&args), title);
        }
    }

    #[tokio::test]
    async fn open_buffers_are_read_instead_of_the_disk() {
        let mut ws = TestWorkspace::new(&[("a.txt", "on disk\n"), ("b.txt", "same\n")]);
        let editor = ws.memory_editor();
        editor.set(&ws.root.join("a.txt"), "unsaved\n", 4);
        editor.set(&ws.root.join("b.txt"), "same\n", 1);
        // Named directly, a new file that exists only in the editor is read too.
        editor.set(&ws.root.join("new.txt"), "brand new\n", 1);
        let text = ws
            .call(
                &ReadManyFiles,
                json!({"paths": ["a.txt", "b.txt", "new.txt"]}),
            )
            .await;
        expect![[r#"
            --- a.txt (from the editor's unsaved buffer) ---
                 1	unsaved
            --- b.txt ---
                 1	same
            --- new.txt (from the editor's unsaved buffer) ---
                 1	brand new"#]]
        .assert_eq(&shown(&ws, &text));
        let seen = ws.ctx.session.last_seen(&ws.root.join("a.txt")).unwrap();
        assert_eq!(seen.version, Some(4));
    }
}
