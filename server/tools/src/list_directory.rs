//! The `list_directory` tool: a compact tree of a workspace directory, directories first, with
//! file sizes. It honours `.gitignore`, `.ignore` and git exclude files (even outside a git
//! repository) and always skips `.git`, so the model sees the project as a developer does.
//!
//! Big trees are cut breadth-first: every level is shown before any of the next, so a cut never
//! hides a whole top-level directory while showing the depths of another.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::ToolKind;
use tandem_sandbox::workspace::Workspace;

/// Entries shown at most; the rest are counted.
const MAX_ENTRIES: usize = 500;
/// Deepest listing the model may ask for.
const MAX_DEPTH: usize = 5;
/// Entries walked at most before the depth is lowered: a deep walk of a huge tree would take
/// long and could only ever show `MAX_ENTRIES` of it.
const WALK_LIMIT: usize = 20_000;
/// Names of ignored entries shown at most.
const MAX_IGNORED_NAMES: usize = 10;

pub struct ListDirectory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The directory to list, relative to the workspace root (or absolute inside the workspace).
    /// Defaults to the workspace root.
    #[serde(default)]
    path: Option<String>,
    /// How many levels to show: 1 (the default) lists only the directory's own entries, 2 also
    /// lists the entries of its subdirectories, and so on, up to 5.
    #[serde(default)]
    depth: Option<usize>,
}

/// What the walk found at one path.
#[derive(Debug)]
enum EntryKind {
    Dir,
    File { size: u64 },
    Symlink { target: String },
}

#[derive(Debug)]
struct Entry {
    /// Relative to the listed directory.
    relative: PathBuf,
    name: String,
    kind: EntryKind,
}

/// One walk of the tree, to some depth.
struct Walked {
    entries: Vec<Entry>,
    /// Whether the walk stopped at `WALK_LIMIT`.
    capped: bool,
    /// Entries the walk could not read (permissions…).
    unreadable: usize,
}

impl Tool for ListDirectory {
    fn name(&self) -> &'static str {
        "list_directory"
    }

    fn description(&self) -> &'static str {
        "Lists a directory of the workspace as an indented tree: subdirectories first (ending \
         with `/`), then files with their sizes, each group sorted by name. Use it to get \
         oriented in a project or a folder; to find files by name pattern across the tree \
         prefer `glob`, to search file contents use `grep`, to read a file use `read_file`. \
         `path` defaults to the workspace root; `depth` (default 1, at most 5) is how many \
         levels to show. Entries ignored by .gitignore, .ignore or git exclude files are not \
         shown (the listing names those of the first level), and `.git` is always skipped. \
         At most 500 entries are shown, chosen level by level; when cut, the listing says how \
         many were left out and which subdirectory to list next."
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
        let path = args
            .get("path")
            .and_then(Value::as_str)
            .filter(|path| !path.trim().is_empty())
            .unwrap_or(".");
        match args.get("depth").and_then(Value::as_u64) {
            Some(depth) if depth > 1 => format!("List {path} (depth {depth})"),
            _ => format!("List {path}"),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            // An empty path is what some models send for "the default".
            let requested = args
                .path
                .as_deref()
                .filter(|path| !path.trim().is_empty())
                .unwrap_or(".");
            let depth = args.depth.unwrap_or(1);
            if !(1..=MAX_DEPTH).contains(&depth) {
                return Err(ToolError::Respond(format!(
                    "depth must be between 1 and {MAX_DEPTH}, got {depth}. To see deeper levels, \
                     list a subdirectory, or use glob (e.g. pattern \"**/*.rs\") to find files \
                     at any depth"
                )));
            }
            let dir = ctx.workspace.resolve_for_reading(requested)?;
            let shown = ctx.workspace.display(&dir);
            match std::fs::metadata(&dir) {
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => {
                    let parent = dir
                        .parent()
                        .map(|parent| ctx.workspace.display(parent))
                        .unwrap_or_else(|| ".".to_owned());
                    return Err(ToolError::Respond(format!(
                        "`{shown}` is a file, not a directory. Use read_file to read it, or \
                         list_directory with path \"{parent}\" to list the directory it is in"
                    )));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    let name = dir
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_else(|| shown.clone());
                    return Err(ToolError::Respond(format!(
                        "`{shown}` does not exist. Use glob with pattern \"**/{name}\" to find \
                         where it is, or list_directory on a parent directory"
                    )));
                }
                Err(error) => {
                    return Err(ToolError::Respond(format!(
                        "cannot list `{shown}`: {error}"
                    )));
                }
            }

            let workspace = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            let text =
                tokio::task::spawn_blocking(move || list(&workspace, &dir, &shown, depth, &cancel))
                    .await
                    .map_err(|error| {
                        ToolError::Fatal(format!("list_directory task failed: {error}"))
                    })??;
            Ok(ToolOutput::text(text))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// Walks `dir` to `depth` levels with the ignore rules applied, stopping at `WALK_LIMIT`.
fn walk(dir: &Path, depth: usize, cancel: &CancellationToken) -> Result<Walked, ToolError> {
    let walker = ignore::WalkBuilder::new(dir)
        .max_depth(Some(depth))
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git")
        // Sorted, so a walk cut at `WALK_LIMIT` keeps the same entries from one call to the next.
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut walked = Walked {
        entries: Vec::new(),
        capped: false,
        unreadable: 0,
    };
    for result in walker {
        if cancel.is_cancelled() {
            return Err(ToolError::Respond(
                "list_directory was cancelled".to_owned(),
            ));
        }
        let entry = match result {
            Ok(entry) if entry.depth() == 0 => continue,
            Ok(entry) => entry,
            Err(_) => {
                walked.unreadable += 1;
                continue;
            }
        };
        if walked.entries.len() == WALK_LIMIT {
            walked.capped = true;
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        let is_symlink = entry.path_is_symlink();
        let kind = if is_symlink {
            let target = std::fs::read_link(entry.path())
                .map(|target| target.to_string_lossy().replace('\\', "/"))
                .unwrap_or_else(|_| "?".to_owned());
            EntryKind::Symlink { target }
        } else if entry.file_type().is_some_and(|kind| kind.is_dir()) {
            EntryKind::Dir
        } else {
            let size = entry.metadata().map(|metadata| metadata.len()).unwrap_or(0);
            EntryKind::File { size }
        };
        walked.entries.push(Entry {
            relative: relative.to_path_buf(),
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
        });
    }
    Ok(walked)
}

/// The listing the model reads.
fn list(
    workspace: &Workspace,
    dir: &Path,
    shown: &str,
    requested_depth: usize,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let label = if shown.ends_with('/') {
        shown.to_owned()
    } else {
        format!("{shown}/")
    };

    // A walk that hits the limit is retried shallower, so what is shown is always complete
    // level by level (a capped depth-first walk could miss whole top-level directories).
    let mut depth = requested_depth;
    let mut walked = walk(dir, depth, cancel)?;
    while walked.capped && depth > 1 {
        depth -= 1;
        walked = walk(dir, depth, cancel)?;
    }

    // Entries hidden by ignore rules, named at the first level only, where it is cheap: the
    // model may be looking for exactly those (`target/`, `.env`).
    let mut ignored: Vec<String> = Vec::new();
    if !walked.capped {
        let listed: HashSet<&str> = walked
            .entries
            .iter()
            .filter(|entry| entry.relative.components().count() == 1)
            .map(|entry| entry.name.as_str())
            .collect();
        if let Ok(read) = std::fs::read_dir(dir) {
            for entry in read.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name != ".git" && !listed.contains(name.as_str()) {
                    let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                    ignored.push(if is_dir { format!("{name}/") } else { name });
                }
            }
        }
        ignored.sort();
    }
    let ignored_note = {
        let count = ignored.len();
        let what = if count == 1 {
            format!("entry directly in {label} is")
        } else {
            format!("entries directly in {label} are")
        };
        let mut names = ignored
            .iter()
            .take(MAX_IGNORED_NAMES)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        if count > MAX_IGNORED_NAMES {
            names.push_str(&format!(" and {} more", count - MAX_IGNORED_NAMES));
        }
        format!(
            "[{count} {what} hidden by ignore rules (.gitignore, .ignore, git exclude): {names}]"
        )
    };

    let entries = &walked.entries;
    if entries.is_empty() {
        return Ok(if !ignored.is_empty() {
            format!("{label} has nothing to show.\n{ignored_note}")
        } else if walked.unreadable > 0 {
            format!("{label} could not be read (permission denied or similar).")
        } else {
            format!("{label} is empty.")
        });
    }

    // Children of each directory (keyed by its path relative to `dir`), directories first.
    let mut children: HashMap<&Path, Vec<usize>> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let parent = entry.relative.parent().unwrap_or(Path::new(""));
        children.entry(parent).or_default().push(index);
    }
    for siblings in children.values_mut() {
        siblings.sort_by(|&a, &b| {
            let (a, b) = (&entries[a], &entries[b]);
            let a_dir = matches!(a.kind, EntryKind::Dir);
            let b_dir = matches!(b.kind, EntryKind::Dir);
            // Case-insensitive first, as `ls` and editors sort, so `README.md` sits among
            // the `r`s; then exactly, for a stable order.
            b_dir
                .cmp(&a_dir)
                .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    // Breadth-first choice of what to show: all of one level before any of the next.
    let mut included = vec![false; entries.len()];
    let mut queue: VecDeque<usize> = children
        .get(Path::new(""))
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let mut shown_count = 0;
    while let Some(index) = queue.pop_front() {
        if shown_count == MAX_ENTRIES {
            break;
        }
        included[index] = true;
        shown_count += 1;
        if let Some(grandchildren) = children.get(entries[index].relative.as_path()) {
            queue.extend(grandchildren);
        }
    }

    let dirs = entries
        .iter()
        .filter(|entry| matches!(entry.kind, EntryKind::Dir))
        .count();
    let symlinks = entries
        .iter()
        .filter(|entry| matches!(entry.kind, EntryKind::Symlink { .. }))
        .count();
    let files = entries.len() - dirs - symlinks;
    let mut counts = vec![plural(dirs, "dir", "dirs"), plural(files, "file", "files")];
    if symlinks > 0 {
        counts.push(plural(symlinks, "symlink", "symlinks"));
    }
    let counts = counts.join(", ");
    let mut out = if walked.capped {
        format!("{label} (more than {WALK_LIMIT} entries)\n")
    } else {
        format!("{label} ({counts})\n")
    };

    // Depth-first rendering of the chosen entries; a directory whose children were partly
    // left out says how many, so the model knows where to look next.
    let mut first_cut_dir: Option<&Path> = None;
    let mut stack: Vec<(usize, usize)> = children
        .get(Path::new(""))
        .into_iter()
        .flatten()
        .rev()
        .map(|&index| (index, 1))
        .collect();
    while let Some((index, level)) = stack.pop() {
        if !included[index] {
            continue;
        }
        let entry = &entries[index];
        let indent = "  ".repeat(level);
        let name = &entry.name;
        match &entry.kind {
            EntryKind::Dir => {
                let kids = children
                    .get(entry.relative.as_path())
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let left_out = kids.iter().filter(|&&kid| !included[kid]).count();
                if left_out > 0 {
                    first_cut_dir.get_or_insert(entry.relative.as_path());
                    let more = plural(left_out, "entry", "entries");
                    out.push_str(&format!("{indent}{name}/ [{more} not shown]\n"));
                } else {
                    out.push_str(&format!("{indent}{name}/\n"));
                }
                stack.extend(kids.iter().rev().map(|&kid| (kid, level + 1)));
            }
            EntryKind::File { size } => {
                out.push_str(&format!("{indent}{name} ({})\n", human_size(*size)));
            }
            EntryKind::Symlink { target } => {
                out.push_str(&format!("{indent}{name} -> {target}\n"));
            }
        }
    }

    let mut notes = Vec::new();
    if depth < requested_depth {
        notes.push(format!(
            "[depth lowered from {requested_depth} to {depth}: the tree has more than \
             {WALK_LIMIT} entries]"
        ));
    }
    if shown_count < entries.len() {
        let total = if walked.capped {
            format!("more than {WALK_LIMIT}")
        } else {
            entries.len().to_string()
        };
        let next = match first_cut_dir {
            Some(cut) => format!(
                "list a subdirectory (e.g. path \"{}\")",
                workspace.display(&dir.join(cut))
            ),
            None => "list a subdirectory".to_owned(),
        };
        let left_out = if walked.capped {
            format!("more than {}", WALK_LIMIT - shown_count)
        } else {
            (entries.len() - shown_count).to_string()
        };
        notes.push(format!(
            "[showing {shown_count} of {total} entries; {left_out} left out. To see more, \
             {next}, or use glob with a pattern to find specific files]"
        ));
    }
    if walked.unreadable > 0 {
        notes.push(format!(
            "[{} could not be read (permission denied or similar)]",
            plural(walked.unreadable, "entry", "entries")
        ));
    }
    if !ignored.is_empty() {
        notes.push(ignored_note);
    }
    for note in notes {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(out.trim_end().to_owned())
}

/// `1 file`, `2 files`.
fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

/// A compact size: `512 B`, `1.2 KiB`, `34 MiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let unit = UNITS[unit];
    if value < 9.95 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    /// A project with ignore rules of every kind, hidden files, a `.git` folder, a deep tree and
    /// an empty directory.
    fn project() -> TestWorkspace {
        let readme = "x".repeat(1300);
        let ws = TestWorkspace::new(&[
            (".gitignore", "target/\n*.log\n"),
            (".ignore", "secret.txt\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/info/exclude", "local.txt\n"),
            (".github/workflows/ci.yml", "on: push\n"),
            ("Cargo.toml", "[package]\n"),
            ("README.md", &readme),
            ("debug.log", "noise"),
            ("local.txt", "mine"),
            ("secret.txt", "hush"),
            ("src/lib.rs", "pub mod util;\n"),
            ("src/main.rs", "fn main() {}\n"),
            ("src/Zed.rs", ""),
            ("src/util/mod.rs", "pub mod deep;\n"),
            ("src/util/deep/a.rs", ""),
            ("src/util/deep/deeper/b.rs", ""),
            ("src/util/deep/deeper/deepest/c.rs", ""),
            ("src/util/deep/deeper/deepest/bottom/d.rs", ""),
            ("src/util/deep/deeper/deepest/bottom/below/e.rs", ""),
            ("target/debug/app", "binary"),
            ("logs/today.log", "noise"),
        ]);
        std::fs::create_dir_all(ws.root.join("empty")).unwrap();
        ws
    }

    /// The text the model sees, with the per-run workspace path replaced.
    async fn call(ws: &TestWorkspace, args: Value) -> String {
        let root = ws.root.display().to_string();
        ws.call(&ListDirectory, args).await.replace(&root, "<root>")
    }

    #[tokio::test]
    async fn listings_and_errors() {
        let ws = project();
        let cases: Vec<(Value, Expect)> = vec![
            (json!({}), expect![[r#"
                ./ (4 dirs, 4 files)
                  .github/
                  empty/
                  logs/
                  src/
                  .gitignore (14 B)
                  .ignore (11 B)
                  Cargo.toml (10 B)
                  README.md (1.3 KiB)
                [4 entries directly in ./ are hidden by ignore rules (.gitignore, .ignore, git exclude): debug.log, local.txt, secret.txt, target/]"#]]),
            (json!({"path": "."}), expect![[r#"
                ./ (4 dirs, 4 files)
                  .github/
                  empty/
                  logs/
                  src/
                  .gitignore (14 B)
                  .ignore (11 B)
                  Cargo.toml (10 B)
                  README.md (1.3 KiB)
                [4 entries directly in ./ are hidden by ignore rules (.gitignore, .ignore, git exclude): debug.log, local.txt, secret.txt, target/]"#]]),
            (json!({"path": "src", "depth": 2}), expect![[r#"
                src/ (2 dirs, 4 files)
                  util/
                    deep/
                    mod.rs (14 B)
                  lib.rs (14 B)
                  main.rs (13 B)
                  Zed.rs (0 B)"#]]),
            (json!({"path": "./src/", "depth": 5}), expect![[r#"
                src/ (5 dirs, 7 files)
                  util/
                    deep/
                      deeper/
                        deepest/
                          bottom/
                          c.rs (0 B)
                        b.rs (0 B)
                      a.rs (0 B)
                    mod.rs (14 B)
                  lib.rs (14 B)
                  main.rs (13 B)
                  Zed.rs (0 B)"#]]),
            (
                json!({"path": "src/util/deep", "depth": 5}),
                expect![[r#"
                    src/util/deep/ (4 dirs, 5 files)
                      deeper/
                        deepest/
                          bottom/
                            below/
                              e.rs (0 B)
                            d.rs (0 B)
                          c.rs (0 B)
                        b.rs (0 B)
                      a.rs (0 B)"#]],
            ),
            (json!({"path": "empty"}), expect!["empty/ is empty."]),
            (json!({"path": "logs"}), expect![[r#"
                logs/ has nothing to show.
                [1 entry directly in logs/ is hidden by ignore rules (.gitignore, .ignore, git exclude): today.log]"#]]),
            // Naming an ignored directory lists it: the user or the model asked for it.
            (json!({"path": "target", "depth": 2}), expect![[r#"
                target/ (1 dir, 1 file)
                  debug/
                    app (6 B)"#]]),
            (json!({"path": "missing/dir"}), expect![[r#"error: `missing/dir` does not exist. Use glob with pattern "**/dir" to find where it is, or list_directory on a parent directory"#]]),
            (json!({"path": "Cargo.toml"}), expect![[r#"error: `Cargo.toml` is a file, not a directory. Use read_file to read it, or list_directory with path "." to list the directory it is in"#]]),
            (json!({"path": "src/main.rs"}), expect![[r#"error: `src/main.rs` is a file, not a directory. Use read_file to read it, or list_directory with path "src" to list the directory it is in"#]]),
            (json!({"depth": 0}), expect![[r#"error: depth must be between 1 and 5, got 0. To see deeper levels, list a subdirectory, or use glob (e.g. pattern "**/*.rs") to find files at any depth"#]]),
            (json!({"depth": 6}), expect![[r#"error: depth must be between 1 and 5, got 6. To see deeper levels, list a subdirectory, or use glob (e.g. pattern "**/*.rs") to find files at any depth"#]]),
            (json!({"depth": -1}), expect!["error: invalid arguments for list_directory: invalid value: integer `-1`, expected usize"]),
            (json!({"path": "../elsewhere"}), expect!["error: `../elsewhere` is outside the workspace (<root>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"]),
            (json!({"path": " "}), expect![[r#"
                ./ (4 dirs, 4 files)
                  .github/
                  empty/
                  logs/
                  src/
                  .gitignore (14 B)
                  .ignore (11 B)
                  Cargo.toml (10 B)
                  README.md (1.3 KiB)
                [4 entries directly in ./ are hidden by ignore rules (.gitignore, .ignore, git exclude): debug.log, local.txt, secret.txt, target/]"#]]),
            (json!({"dir": "src"}), expect!["error: invalid arguments for list_directory: unknown field `dir`, expected `path` or `depth`"]),
        ];
        for (args, expected) in cases {
            expected.assert_eq(&call(&ws, args).await);
        }
    }

    #[tokio::test]
    async fn big_trees_are_cut_level_by_level() {
        let mut files: Vec<(String, &str)> = vec![("top.txt".to_owned(), "")];
        for dir in ["a", "b"] {
            for n in 0..300 {
                files.push((format!("{dir}/f{n:03}.txt"), ""));
            }
        }
        files.push(("b/sub/deep.txt".to_owned(), ""));
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let ws = TestWorkspace::new(&files);

        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({}),
                expect![[r#"
                    000| ./ (2 dirs, 1 file)
                    001|   a/
                    002|   b/
                    003|   top.txt (0 B)"#]],
            ),
            (
                json!({"depth": 3}),
                expect![[r#"
                    000| ./ (3 dirs, 602 files)
                    001|   a/
                    002|     f000.txt (0 B)
                    003|     f001.txt (0 B)
                    004|     f002.txt (0 B)
                    005|     f003.txt (0 B)
                    302|   b/ [104 entries not shown]
                    496|     f192.txt (0 B)
                    497|     f193.txt (0 B)
                    498|     f194.txt (0 B)
                    499|     f195.txt (0 B)
                    500|   top.txt (0 B)
                    501| [showing 500 of 605 entries; 105 left out. To see more, list a subdirectory (e.g. path "b"), or use glob with a pattern to find specific files]"#]],
            ),
        ];
        for (args, expected) in cases {
            let text = call(&ws, args).await;
            // The 500 lines are not worth a snapshot: keep the header, the first level, a few
            // lines around the cut and the notes.
            let lines: Vec<&str> = text.lines().collect();
            let summary: Vec<String> = lines
                .iter()
                .enumerate()
                .filter(|(i, line)| {
                    !line.starts_with("    ")
                        || *i <= 5
                        || (lines.len() - 6..lines.len()).contains(i)
                })
                .map(|(i, line)| format!("{i:03}| {line}"))
                .collect();
            expected.assert_eq(&summary.join("\n"));
        }
    }

    #[tokio::test]
    async fn huge_trees_are_walked_shallower() {
        let names: Vec<String> = (0..=WALK_LIMIT)
            .map(|n| format!("a/sub/f{n:05}.txt"))
            .collect();
        let files: Vec<(&str, &str)> = names.iter().map(|name| (name.as_str(), "")).collect();
        let ws = TestWorkspace::new(&files);
        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"depth": 3}),
                expect![[r#"
                ./ (2 dirs, 0 files)
                  a/
                    sub/
                [depth lowered from 3 to 2: the tree has more than 20000 entries]"#]],
            ),
            (
                json!({"path": "a/sub"}),
                expect![[r#"
                    a/sub/ (more than 20000 entries)
                      f00000.txt (0 B)
                      f00001.txt (0 B)
                    ...
                      f00498.txt (0 B)
                      f00499.txt (0 B)
                    [showing 500 of more than 20000 entries; more than 19500 left out. To see more, list a subdirectory, or use glob with a pattern to find specific files]"#]],
            ),
        ];
        for (args, expected) in cases {
            let text = call(&ws, args).await;
            let lines: Vec<&str> = text.lines().collect();
            let summary = if lines.len() > 8 {
                [&lines[..3], &["..."], &lines[lines.len() - 3..]].concat()
            } else {
                lines
            };
            expected.assert_eq(&summary.join("\n"));
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_are_shown_not_followed() {
        let ws = TestWorkspace::new(&[("src/lib.rs", ""), ("notes.txt", "")]);
        std::os::unix::fs::symlink("src", ws.root.join("source")).unwrap();
        std::os::unix::fs::symlink("notes.txt", ws.root.join("link.txt")).unwrap();
        let text = call(&ws, json!({"depth": 2})).await;
        expect![[r#"
            ./ (1 dir, 2 files, 2 symlinks)
              src/
                lib.rs (0 B)
              link.txt -> notes.txt
              notes.txt (0 B)
              source -> src"#]]
        .assert_eq(&text);
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({}), "List ."),
            (json!({"path": "src"}), "List src"),
            (json!({"path": "src", "depth": 1}), "List src"),
            (json!({"path": "src", "depth": 3}), "List src (depth 3)"),
            (json!({"path": ""}), "List ."),
            (Value::Null, "List ."),
        ];
        for (args, title) in cases {
            assert_eq!(ListDirectory.title(&args), title, "{args}");
        }
    }

    #[test]
    fn sizes_are_compact() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1300, "1.3 KiB"),
            (10 * 1024 - 1, "10 KiB"),
            (150 * 1024, "150 KiB"),
            (5 * 1024 * 1024 + 300 * 1024, "5.3 MiB"),
            (3 * 1024 * 1024 * 1024, "3.0 GiB"),
            (2048 * 1024 * 1024 * 1024 * 1024, "2048 TiB"),
        ];
        for (bytes, shown) in cases {
            assert_eq!(human_size(bytes), shown, "{bytes}");
        }
    }
}
