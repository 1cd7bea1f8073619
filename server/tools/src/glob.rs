//! The `glob` tool: files whose path matches a glob pattern, most recently modified first (what
//! the model just touched or the user is working on tends to matter most). It honours
//! `.gitignore`, `.ignore` and git exclude files (even outside a git repository) and always skips
//! `.git`; when nothing matches it checks whether ignored files would have, so the model is not
//! left guessing.

use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::ToolKind;
use tandem_sandbox::workspace::Workspace;

/// Paths shown at most.
const MAX_RESULTS: usize = 200;
/// Entries the "would an ignored file match?" check visits at most: it only runs when nothing
/// matched, and must stay cheap in trees with huge ignored folders (`node_modules`, `target`).
const IGNORED_CHECK_LIMIT: usize = 50_000;

pub struct Glob;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The glob pattern, matched against file paths relative to `path`: `*` matches within one
    /// path segment (it does not cross `/`), `**` matches any number of directories, `?` one
    /// character, `[abc]` a character class, `{rs,toml}` alternatives. Examples: `**/*.rs`,
    /// `src/**/test_*.py`, `*.{json,yaml}`.
    pattern: String,
    /// The directory to search in, relative to the workspace root (or absolute inside the
    /// workspace). Defaults to the workspace root.
    #[serde(default)]
    path: Option<String>,
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Finds files by path pattern, e.g. `**/*.rs` or `src/**/test_*.py`. The pattern is \
         matched against paths relative to `path` (default: the workspace root); `*` stays \
         within one directory, `**` crosses directories. Returns matching file paths (relative \
         to the workspace root), one per line, most recently modified first. Use it to locate \
         files by name or extension; to search inside files use `grep`, to see a directory's \
         layout use `list_directory`. Files ignored by .gitignore, .ignore or git exclude files \
         and the `.git` folder are not searched. At most 200 paths are shown; when there are \
         more, narrow the pattern or the path."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, args: &Value) -> String {
        let Some(pattern) = args.get("pattern").and_then(Value::as_str) else {
            return "Find files by pattern".to_owned();
        };
        match args
            .get("path")
            .and_then(Value::as_str)
            .filter(|path| !matches!(path.trim(), "" | "." | "./"))
        {
            Some(path) => format!("Find `{pattern}` in {path}"),
            None => format!("Find `{pattern}`"),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let pattern = args.pattern.trim();
            // `./src/*.rs` means what `src/*.rs` means; the walk yields no `./` to match it.
            let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
            if pattern.is_empty() {
                return Err(ToolError::Respond(
                    "the pattern is empty. Give a glob pattern such as \"**/*.rs\" (every Rust \
                     file) or \"src/**/test_*.py\""
                        .to_owned(),
                ));
            }
            if Path::new(pattern).is_absolute() {
                return Err(ToolError::Respond(format!(
                    "the pattern `{pattern}` is an absolute path, but patterns are matched \
                     against paths relative to `path` (the workspace root by default). Put the \
                     directory in `path` and a relative pattern in `pattern`, e.g. path \"src\" \
                     and pattern \"**/*.rs\""
                )));
            }
            let matcher = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|error| {
                    ToolError::Respond(format!(
                        "invalid glob pattern `{pattern}`: {}. Glob syntax: `*` matches within \
                         one path segment, `**` any number of directories, `?` one character, \
                         `[abc]` a character class, `{{a,b}}` alternatives",
                        error.kind()
                    ))
                })?
                .compile_matcher();

            // An empty path is what some models send for "the default".
            let requested = args
                .path
                .as_deref()
                .filter(|path| !path.trim().is_empty())
                .unwrap_or(".");
            let dir = ctx.workspace.resolve_for_reading(requested)?;
            let shown = ctx.workspace.display(&dir);
            match std::fs::metadata(&dir) {
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => {
                    return Err(ToolError::Respond(format!(
                        "`{shown}` is a file, but `path` must be the directory to search in. \
                         Use read_file to read it, or pass the directory it is in as `path`"
                    )));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ToolError::Respond(format!(
                        "the directory `{shown}` does not exist. Leave `path` out to search the \
                         whole workspace, or use list_directory to see which directories exist"
                    )));
                }
                Err(error) => {
                    return Err(ToolError::Respond(format!(
                        "cannot search `{shown}`: {error}"
                    )));
                }
            }

            let workspace = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            let pattern = pattern.to_owned();
            let text = tokio::task::spawn_blocking(move || {
                search(&workspace, &dir, &pattern, &matcher, &cancel)
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("glob task failed: {error}")))??;
            Ok(ToolOutput::text(text))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// Walks `dir` and lists the files matching `matcher`, newest first.
fn search(
    workspace: &Workspace,
    dir: &Path,
    pattern: &str,
    matcher: &GlobMatcher,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let shown = workspace.display(dir);
    let place = if shown == "." {
        String::new()
    } else {
        format!(" in {shown}")
    };

    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git")
        .build();
    let mut matches: Vec<(Option<SystemTime>, PathBuf)> = Vec::new();
    for entry in walker.filter_map(Result::ok) {
        if cancel.is_cancelled() {
            return Err(ToolError::Respond("glob was cancelled".to_owned()));
        }
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        if matcher.is_match(relative) {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|metadata| metadata.modified().ok());
            matches.push((modified, entry.path().to_path_buf()));
        }
    }

    if matches.is_empty() {
        return Err(ToolError::Respond(no_match_message(
            workspace, dir, &shown, &place, pattern, matcher, cancel,
        )));
    }

    // Newest first; files without a modification time last; ties by path for a stable order.
    matches.sort_by(|(a_time, a_path), (b_time, b_path)| {
        Reverse(a_time)
            .cmp(&Reverse(b_time))
            .then_with(|| a_path.cmp(b_path))
    });
    let total = matches.len();
    let header = if total == 1 {
        format!("1 file matches `{pattern}`{place}:")
    } else {
        format!("{total} files match `{pattern}`{place}, most recently modified first:")
    };
    let mut out = header;
    for (_, path) in matches.iter().take(MAX_RESULTS) {
        out.push('\n');
        out.push_str(&workspace.display(path));
    }
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "\n[{MAX_RESULTS} of {total} shown; narrow the pattern or the path]"
        ));
    }
    Ok(out)
}

/// Why nothing matched, as far as cheaply known, and what to try next.
fn no_match_message(
    workspace: &Workspace,
    dir: &Path,
    shown: &str,
    place: &str,
    pattern: &str,
    matcher: &GlobMatcher,
    cancel: &CancellationToken,
) -> String {
    let mut message = format!("no files match `{pattern}`{place}.");
    let repeated_path = pattern
        .strip_prefix(&format!("{shown}/"))
        .filter(|_| shown != ".");
    if let Some(rest) = repeated_path {
        message.push_str(&format!(
            " The pattern is matched against paths relative to `path` ({shown}), so it should \
             not repeat it: try pattern \"{rest}\"."
        ));
    } else if !pattern.contains('/') && !pattern.starts_with("**") {
        message.push_str(&format!(
            " `*` does not cross directories, so `{pattern}` only matches files directly in \
             {}; to search subdirectories too, use pattern \"**/{pattern}\".",
            if shown == "." {
                "the workspace root"
            } else {
                shown
            }
        ));
    } else {
        message.push_str(
            " Try a broader pattern (e.g. \"**/*.rs\", or \"**/*name*\" for a part of a file \
             name) or a parent directory as `path`.",
        );
    }

    // Files the ignore rules hid may be what the model is after (build output, logs, `.env`).
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git")
        .build();
    let ignored_match = walker
        .filter_map(Result::ok)
        .take(IGNORED_CHECK_LIMIT)
        .take_while(|_| !cancel.is_cancelled())
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .find(|entry| {
            entry
                .path()
                .strip_prefix(dir)
                .is_ok_and(|relative| matcher.is_match(relative))
        });
    if let Some(entry) = ignored_match {
        message.push_str(&format!(
            " Note: files ignored by .gitignore/.ignore rules do match (e.g. `{}`); glob does \
             not list ignored files, but read_file can read them by path.",
            workspace.display(entry.path())
        ));
    }
    message
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    /// Sets `path`'s modification time to `seconds` after the epoch.
    fn touch(ws: &TestWorkspace, path: &str, seconds: u64) {
        std::fs::File::options()
            .write(true)
            .open(ws.root.join(path))
            .unwrap()
            .set_modified(UNIX_EPOCH + Duration::from_secs(seconds))
            .unwrap();
    }

    /// A project with ignore rules of every kind, hidden files, a `.git` folder, and
    /// modification times that differ from the path order.
    fn project() -> TestWorkspace {
        let files = [
            (".gitignore", "target/\n*.log\n"),
            (".ignore", "secret.txt\n"),
            (".git/config", "[core]\n"),
            (".git/info/exclude", "local.rs\n"),
            (".github/ci.yml", "on: push\n"),
            ("README.md", "# readme\n"),
            ("local.rs", ""),
            ("secret.txt", ""),
            ("src/lib.rs", ""),
            ("src/main.rs", ""),
            ("src/util/mod.rs", ""),
            ("src/util/test_mod.rs", ""),
            ("tests/test_a.py", ""),
            ("target/out.rs", ""),
            ("logs/today.log", ""),
        ];
        let ws = TestWorkspace::new(&files);
        for (index, (path, _)) in files.iter().enumerate() {
            touch(&ws, path, 1_000 + index as u64);
        }
        // Newest first should read lib.rs, then the util pair (a tie, by path), then main.rs.
        touch(&ws, "src/lib.rs", 5_000);
        touch(&ws, "src/util/mod.rs", 4_000);
        touch(&ws, "src/util/test_mod.rs", 4_000);
        touch(&ws, "src/main.rs", 3_000);
        ws
    }

    /// The text the model sees, with the per-run workspace path replaced.
    async fn call(ws: &TestWorkspace, args: Value) -> String {
        let root = ws.root.display().to_string();
        ws.call(&Glob, args).await.replace(&root, "<root>")
    }

    #[tokio::test]
    async fn matches_and_errors() {
        let ws = project();
        let cases: Vec<(Value, Expect)> = vec![
            (json!({"pattern": "**/*.rs"}), expect![[r#"
                4 files match `**/*.rs`, most recently modified first:
                src/lib.rs
                src/util/mod.rs
                src/util/test_mod.rs
                src/main.rs"#]]),
            (json!({"pattern": "*.rs", "path": "src"}), expect![[r#"
                2 files match `*.rs` in src, most recently modified first:
                src/lib.rs
                src/main.rs"#]]),
            (
                json!({"pattern": "**/*.rs", "path": "src/util/"}),
                expect![[r#"
                    2 files match `**/*.rs` in src/util, most recently modified first:
                    src/util/mod.rs
                    src/util/test_mod.rs"#]],
            ),
            (json!({"pattern": "src/**/test_*.rs"}), expect![[r#"
                1 file matches `src/**/test_*.rs`:
                src/util/test_mod.rs"#]]),
            (
                json!({"pattern": "./src/*.rs", "path": ""}),
                expect![[r#"
                    2 files match `src/*.rs`, most recently modified first:
                    src/lib.rs
                    src/main.rs"#]],
            ),
            (json!({"pattern": "**/*.{yml,md,py}"}), expect![[r#"
                3 files match `**/*.{yml,md,py}`, most recently modified first:
                tests/test_a.py
                README.md
                .github/ci.yml"#]]),
            (json!({"pattern": "README.md"}), expect![[r#"
                1 file matches `README.md`:
                README.md"#]]),
            (json!({"pattern": "*.rs"}), expect![[r#"error: no files match `*.rs`. `*` does not cross directories, so `*.rs` only matches files directly in the workspace root; to search subdirectories too, use pattern "**/*.rs". Note: files ignored by .gitignore/.ignore rules do match (e.g. `local.rs`); glob does not list ignored files, but read_file can read them by path."#]]),
            (json!({"pattern": "*.txt", "path": "src"}), expect![[r#"error: no files match `*.txt` in src. `*` does not cross directories, so `*.txt` only matches files directly in src; to search subdirectories too, use pattern "**/*.txt"."#]]),
            (
                json!({"pattern": "src/*.rs", "path": "src"}),
                expect![[r#"error: no files match `src/*.rs` in src. The pattern is matched against paths relative to `path` (src), so it should not repeat it: try pattern "*.rs"."#]],
            ),
            (json!({"pattern": "**/*.log"}), expect![[r#"error: no files match `**/*.log`. Try a broader pattern (e.g. "**/*.rs", or "**/*name*" for a part of a file name) or a parent directory as `path`. Note: files ignored by .gitignore/.ignore rules do match (e.g. `logs/today.log`); glob does not list ignored files, but read_file can read them by path."#]]),
            (json!({"pattern": "**/*.zig"}), expect![[r#"error: no files match `**/*.zig`. Try a broader pattern (e.g. "**/*.rs", or "**/*name*" for a part of a file name) or a parent directory as `path`."#]]),
            // `.git` is never searched, not even for the "ignored files match" note.
            (json!({"pattern": "**/config"}), expect![[r#"error: no files match `**/config`. Try a broader pattern (e.g. "**/*.rs", or "**/*name*" for a part of a file name) or a parent directory as `path`."#]]),
            (json!({"pattern": "src/[a"}), expect!["error: invalid glob pattern `src/[a`: unclosed character class; missing ']'. Glob syntax: `*` matches within one path segment, `**` any number of directories, `?` one character, `[abc]` a character class, `{a,b}` alternatives"]),
            (json!({"pattern": "{a,b"}), expect!["error: invalid glob pattern `{a,b`: unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?). Glob syntax: `*` matches within one path segment, `**` any number of directories, `?` one character, `[abc]` a character class, `{a,b}` alternatives"]),
            (json!({"pattern": "  "}), expect![[r#"error: the pattern is empty. Give a glob pattern such as "**/*.rs" (every Rust file) or "src/**/test_*.py""#]]),
            (json!({"pattern": "/etc/*"}), expect![[r#"error: the pattern `/etc/*` is an absolute path, but patterns are matched against paths relative to `path` (the workspace root by default). Put the directory in `path` and a relative pattern in `pattern`, e.g. path "src" and pattern "**/*.rs""#]]),
            (json!({"pattern": "*", "path": "missing"}), expect!["error: the directory `missing` does not exist. Leave `path` out to search the whole workspace, or use list_directory to see which directories exist"]),
            (
                json!({"pattern": "*", "path": "README.md"}),
                expect!["error: `README.md` is a file, but `path` must be the directory to search in. Use read_file to read it, or pass the directory it is in as `path`"],
            ),
            (
                json!({"pattern": "*", "path": "../elsewhere"}),
                expect!["error: `../elsewhere` is outside the workspace (<root>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"],
            ),
            (json!({"path": "src"}), expect!["error: invalid arguments for glob: missing field `pattern`"]),
            (json!({"pattern": "*", "glob": "*.rs"}), expect!["error: invalid arguments for glob: unknown field `glob`, expected `pattern` or `path`"]),
        ];
        for (args, expected) in cases {
            expected.assert_eq(&call(&ws, args).await);
        }
    }

    #[tokio::test]
    async fn results_are_capped_newest_first() {
        let names: Vec<String> = (0..250).map(|n| format!("data/f{n:03}.txt")).collect();
        let files: Vec<(&str, &str)> = names.iter().map(|name| (name.as_str(), "")).collect();
        let ws = TestWorkspace::new(&files);
        for (n, name) in names.iter().enumerate() {
            touch(&ws, name, 1_000 + n as u64);
        }
        let text = call(&ws, json!({"pattern": "data/*.txt"})).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 200 + 1, "{text}");
        let summary = [&lines[..3], &lines[lines.len() - 2..]].concat().join("\n");
        expect![[r#"
            250 files match `data/*.txt`, most recently modified first:
            data/f249.txt
            data/f248.txt
            data/f050.txt
            [200 of 250 shown; narrow the pattern or the path]"#]]
        .assert_eq(&summary);
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({"pattern": "**/*.rs"}), "Find `**/*.rs`"),
            (json!({"pattern": "**/*.rs", "path": "."}), "Find `**/*.rs`"),
            (
                json!({"pattern": "*.py", "path": "tests"}),
                "Find `*.py` in tests",
            ),
            (json!({"path": "src"}), "Find files by pattern"),
            (Value::Null, "Find files by pattern"),
        ];
        for (args, title) in cases {
            assert_eq!(Glob.title(&args), title, "{args}");
        }
    }
}
