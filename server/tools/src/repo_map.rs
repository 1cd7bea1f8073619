//! The `repo_map` tool: the workspace's most relevant definitions at a glance, Aider style. The
//! symbol index ranks files by how the code references them, personalised toward what the user
//! has open, what the agent edited, what the prompt named and the paths the call focuses on,
//! then shows the top definitions with their enclosing scopes within a token budget.

use std::path::PathBuf;
use std::time::Instant;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::outline::supported_languages;
use super::references::{incomplete_notice, plural};
use crate::symbols::{refresh, INDEX_TIME_LIMIT};
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::ToolKind;

/// The map's size when the call does not say, in estimated tokens.
const DEFAULT_TOKENS: usize = 2048;
const MIN_TOKENS: usize = 128;
const MAX_TOKENS: usize = 8192;

pub struct RepoMap;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The map's size limit in estimated tokens, 128 to 8192. Default 2048.
    #[serde(default)]
    #[schemars(range(min = 128, max = 8192))]
    max_tokens: Option<usize>,
    /// Files or directories (relative to the workspace root) to rank the map toward, e.g. the
    /// part of the code a task is about. Default: what the user has open and what you edited.
    #[serde(default)]
    focus: Vec<String>,
}

impl Tool for RepoMap {
    fn name(&self) -> &'static str {
        "repo_map"
    }

    fn description(&self) -> &'static str {
        "Shows a map of the workspace's code: the most important files with their key \
         definitions (signatures and the scopes around them, bodies left out), ranked by how \
         much the rest of the code uses them and by closeness to what the user has open, what \
         you edited and the names the user mentioned. Use it to get oriented in an unfamiliar \
         codebase or subsystem before searching; pass `focus` paths to center it on one part \
         of the code, and a larger max_tokens (up to 8192) to see more. Then outline or \
         read_file the files that matter. Covers source files in Rust, Python, JavaScript, \
         TypeScript, Go, Java, C, C++, Ruby, C#, Bash and Lua."
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
        let focus: Vec<&str> = args
            .get("focus")
            .and_then(Value::as_array)
            .map(|paths| paths.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if focus.is_empty() {
            "Map the repository".to_owned()
        } else {
            format!("Map the repository around {}", focus.join(", "))
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let tokens = args
                .max_tokens
                .unwrap_or(DEFAULT_TOKENS)
                .clamp(MIN_TOKENS, MAX_TOKENS);
            let mut focus = Vec::new();
            for requested in &args.focus {
                let path = ctx.workspace.resolve(requested)?;
                if !path.exists() && ctx.editor.buffer(&path).is_none() {
                    return Err(ToolError::Respond(format!(
                        "the focus path `{requested}` does not exist (paths are relative to \
                         the workspace root); find the right one with glob or list_directory"
                    )));
                }
                focus.push(path);
            }

            let refreshed = refresh(ctx, Some(Instant::now() + INDEX_TIME_LIMIT)).await?;
            let indexed = refreshed.stats.files;
            let mut request = ctx.session.map_request(tokens);
            // A directory focuses on the indexed files in it.
            let mut focused: Vec<PathBuf> = Vec::new();
            for path in &focus {
                if path.is_dir() {
                    focused.extend(
                        refreshed
                            .files
                            .iter()
                            .filter(|file| file.starts_with(path))
                            .cloned(),
                    );
                } else {
                    focused.push(path.clone());
                }
            }
            request.open.retain(|open| !focused.contains(open));
            focused.append(&mut request.open);
            request.open = focused;

            let index = ctx.index.clone();
            let workspace = ctx.workspace.clone();
            let map = tokio::task::spawn_blocking(move || {
                index.repo_map(&request, &|path| workspace.display(path))
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("building the repo map failed: {error}")))?;

            if map.text.trim().is_empty() {
                let text = if indexed == 0 {
                    format!(
                        "The workspace has no source files in a supported language ({}); \
                         explore it with list_directory, glob and grep.",
                        supported_languages()
                    )
                } else {
                    format!(
                        "The {} indexed source {} define nothing the map can show; explore \
                         them with outline, glob and grep.",
                        indexed,
                        if indexed == 1 { "file" } else { "files" }
                    )
                };
                return Ok(ToolOutput::text(text));
            }
            let mut text = format!(
                "Repo map: {} of {indexed} indexed, about {} tokens, most relevant first. \
                 Bodies are left out: read_file or outline a file for more.\n{}",
                plural(map.files.len(), "file", "files"),
                map.estimated_tokens,
                map.text.trim_end()
            );
            if map.files.len() < indexed && tokens < MAX_TOKENS {
                text.push_str(&format!(
                    "\n[{} of {indexed} files shown; a larger max_tokens (up to {MAX_TOKENS}) \
                     shows more, and `focus` centers the map on the paths you give]",
                    map.files.len()
                ));
            }
            if !refreshed.stats.complete {
                text.push_str(&format!("\n[{}]", incomplete_notice()));
            }
            Ok(ToolOutput::text(text))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    fn project() -> TestWorkspace {
        TestWorkspace::new(&[
            (
                "src/parser.rs",
                "pub struct Parser;\n\nimpl Parser {\n    pub fn parse_expr(&self) -> u32 {\n        \
                 1\n    }\n}\n",
            ),
            (
                "src/main.rs",
                "mod parser;\n\nfn main() {\n    parser::Parser.parse_expr();\n    parser::Parser.parse_expr();\n}\n",
            ),
            ("src/util/strings.rs", "pub fn shout(text: &str) -> String {\n    text.to_uppercase()\n}\n"),
            ("README.md", "# Example\n"),
        ])
    }

    async fn call(ws: &TestWorkspace, args: Value) -> String {
        ws.call(&RepoMap, args)
            .await
            .replace(ws.root.to_str().unwrap(), "<ws>")
    }

    /// The map's content is the index's business (its own tests pin the ranking); here: that
    /// the tool frames it, finds the files and honours `focus` and its errors.
    #[tokio::test]
    async fn a_map_of_the_workspace() {
        let ws = project();
        let text = call(&ws, json!({})).await;
        assert!(text.starts_with("Repo map: 3 files of 3 indexed"), "{text}");
        for needle in ["src/parser.rs", "parse_expr", "src/util/strings.rs"] {
            assert!(text.contains(needle), "{needle} not in {text}");
        }
        assert!(!text.contains("README"), "{text}");

        let focused = call(&ws, json!({"focus": ["src/util"], "max_tokens": 128})).await;
        let first_file = focused.lines().nth(1).unwrap_or("");
        assert!(first_file.contains("src/util/strings.rs"), "{focused}");

        expect!["error: the focus path `src/nowhere.rs` does not exist (paths are relative to the workspace root); find the right one with glob or list_directory"]
            .assert_eq(&call(&ws, json!({"focus": ["src/nowhere.rs"]})).await);
        expect!["error: `../x` is outside the workspace (<ws>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"]
            .assert_eq(&call(&ws, json!({"focus": ["../x"]})).await);
        expect!["error: invalid arguments for repo_map: unknown field `tokens`, expected `max_tokens` or `focus`"]
            .assert_eq(&call(&ws, json!({"tokens": 10})).await);
    }

    #[tokio::test]
    async fn a_workspace_without_source_files_says_so() {
        let ws = TestWorkspace::new(&[("README.md", "# Nothing to parse\n")]);
        expect!["The workspace has no source files in a supported language (rust, python, javascript, typescript, tsx, go, java, c, cpp, ruby, csharp, bash, lua); explore it with list_directory, glob and grep."]
            .assert_eq(&call(&ws, json!({})).await);
    }

    #[test]
    fn titles() {
        assert_eq!(RepoMap.title(&json!({})), "Map the repository");
        assert_eq!(
            RepoMap.title(&json!({"focus": ["src/a.rs", "lib"]})),
            "Map the repository around src/a.rs, lib"
        );
        assert_eq!(RepoMap.title(&Value::Null), "Map the repository");
    }
}
