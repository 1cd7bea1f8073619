//! The `find_symbol` tool: where a name is defined, from the tags of the symbol index (brought
//! up to date first, so edits made a moment ago count). One line per definition, the kind and
//! the line's text beside it, is usually enough to pick the one to read. When nothing has the
//! exact name, definitions whose names differ only in case are offered instead.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_syntax::SymbolHit;

use super::references::{checked_name, incomplete_notice, location, plural, word_search};
use crate::symbols::{refresh, INDEX_TIME_LIMIT};
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::ToolKind;
use tandem_sandbox::workspace::Workspace;

/// Definitions shown at most.
const MAX_DEFINITIONS: usize = 100;
/// Spellings that differ only in case looked up at most, when the exact name has none.
const MAX_SPELLINGS: usize = 20;

pub struct FindSymbol;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The exact name of the function, method, type, constant… to find (`parse_expr`,
    /// `HttpClient`), without qualification (`new`, not `Parser::new`).
    name: String,
    /// Only definitions of this kind: `function`, `method`, `class` (also structs, enums and
    /// unions), `interface` (also traits), `module`, `constant`, `field`, `type` or `macro`.
    #[serde(default)]
    kind: Option<String>,
}

impl Tool for FindSymbol {
    fn name(&self) -> &'static str {
        "find_symbol"
    }

    fn description(&self) -> &'static str {
        "Finds where a function, method, type, constant or other symbol is defined in the \
         workspace's source files, by its exact name, from a syntax index of the code. Use it \
         to jump to a definition instead of grepping for it; then read around the line with \
         read_file. Returns `path:line kind name` lines, each followed by the line's text; \
         `kind` (e.g. function, method, class) narrows the search when a name is common. When \
         no definition has exactly that name, definitions whose names differ only in case are \
         listed instead. At most 100 definitions are shown. To find where a symbol is used, use \
         references."
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
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return "Find symbol".to_owned();
        };
        match args.get("kind").and_then(Value::as_str) {
            Some(kind) => format!("Find {kind} {name}"),
            None => format!("Find symbol {name}"),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let name = checked_name(&args.name, self.name())?;
            let kind = args
                .kind
                .as_deref()
                .map(str::trim)
                .filter(|kind| !kind.is_empty());
            let refreshed = refresh(ctx, Some(Instant::now() + INDEX_TIME_LIMIT)).await?;
            let incomplete = if refreshed.stats.complete {
                String::new()
            } else {
                format!("\n[{}]", incomplete_notice())
            };
            let hits = ctx.index.definitions(name, kind);
            let of_kind = kind
                .map(|kind| format!(" of kind {kind}"))
                .unwrap_or_default();
            if !hits.is_empty() {
                let mut text = format!(
                    "Found {}{of_kind} named `{name}`:\n{}",
                    plural(hits.len(), "definition", "definitions"),
                    render(&hits, &ctx.workspace)
                );
                if hits.len() > MAX_DEFINITIONS {
                    text.push_str(&format!(
                        "\n[{MAX_DEFINITIONS} of {} shown; give `kind` to narrow, or grep \
                         within a directory]",
                        hits.len()
                    ));
                }
                text.push_str(&incomplete);
                return Ok(output(text, &hits));
            }

            let mut text = format!("No definition{of_kind} named `{name}`.");
            if kind.is_some() {
                let any_kind = ctx.index.definitions(name, None);
                if !any_kind.is_empty() {
                    text.push_str(&format!(
                        " Definitions of other kinds (call again without `kind`, or with one \
                         of these):\n{}",
                        render(&any_kind, &ctx.workspace)
                    ));
                    text.push_str(&incomplete);
                    return Ok(output(text, &any_kind));
                }
            }

            let editor = Arc::clone(&ctx.editor);
            let files = refreshed.files;
            let searched = files.len();
            let word = name.to_owned();
            let found = tokio::task::spawn_blocking(move || {
                word_search(&files, editor.as_ref(), &word, true, 0)
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("the text search failed: {error}")))?
            .map_err(ToolError::Respond)?;
            let mut other_case: Vec<SymbolHit> = found
                .spellings
                .iter()
                .filter(|spelling| spelling.as_str() != name)
                .take(MAX_SPELLINGS)
                .flat_map(|spelling| ctx.index.definitions(spelling, kind))
                .collect();
            other_case.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
            if !other_case.is_empty() {
                text.push_str(&format!(
                    " Names that differ only in case:\n{}",
                    render(&other_case, &ctx.workspace)
                ));
                text.push_str(&incomplete);
                return Ok(output(text, &other_case));
            }
            text.push_str(&format!(
                " None of the {searched} indexed source {} defines it in a way the syntax \
                 index recognises; it may come from a dependency, be generated, or be defined \
                 by a macro. Try references to find where it is used, or grep for it.",
                if searched == 1 { "file" } else { "files" }
            ));
            text.push_str(&incomplete);
            Err(ToolError::Respond(text))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// `path:line kind name  text` lines (1-based), at most `MAX_DEFINITIONS`.
fn render(hits: &[SymbolHit], workspace: &Workspace) -> String {
    hits.iter()
        .take(MAX_DEFINITIONS)
        .map(|hit| {
            format!(
                "{}:{} {} {}  {}",
                workspace.display(&hit.path),
                hit.line + 1,
                hit.kind,
                hit.name,
                hit.line_text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn output(text: String, hits: &[SymbolHit]) -> ToolOutput {
    ToolOutput {
        text,
        locations: hits
            .iter()
            .take(MAX_DEFINITIONS)
            .map(|hit| location(&hit.path, u64::from(hit.line) + 1))
            .collect(),
        diff: None,
        images: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    fn project() -> TestWorkspace {
        TestWorkspace::new(&[
            (
                "src/parser.rs",
                "pub struct Parser;\n\nimpl Parser {\n    pub fn parse_expr(&self) -> u32 {\n        \
                 1\n    }\n}\n\npub const MAX_DEPTH: usize = 64;\n",
            ),
            (
                "src/main.rs",
                "mod parser;\n\nfn main() {\n    parser::Parser.parse_expr();\n}\n\nfn parse_expr() {}\n",
            ),
            ("web/app.py", "class HttpClient:\n    def get(self):\n        pass\n"),
            ("notes.txt", "fn not_indexed() {}\n"),
        ])
    }

    async fn call(ws: &TestWorkspace, args: Value) -> String {
        ws.call(&FindSymbol, args)
            .await
            .replace(ws.root.to_str().unwrap(), "<ws>")
    }

    #[tokio::test]
    async fn definitions_and_errors() {
        let ws = project();
        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"name": "parse_expr"}),
                expect![[r#"
                    Found 2 definitions named `parse_expr`:
                    src/main.rs:7 function parse_expr  fn parse_expr() {}
                    src/parser.rs:4 method parse_expr  pub fn parse_expr(&self) -> u32 {"#]],
            ),
            (
                json!({"name": "parse_expr", "kind": "method"}),
                expect![[r#"
                    Found 1 definition of kind method named `parse_expr`:
                    src/parser.rs:4 method parse_expr  pub fn parse_expr(&self) -> u32 {"#]],
            ),
            (
                json!({"name": "Parser", "kind": "function"}),
                expect![[r#"
                    No definition of kind function named `Parser`. Definitions of other kinds (call again without `kind`, or with one of these):
                    src/parser.rs:1 class Parser  pub struct Parser;"#]],
            ),
            (
                json!({"name": "httpclient"}),
                expect![[r#"
                    No definition named `httpclient`. Names that differ only in case:
                    web/app.py:1 class HttpClient  class HttpClient:"#]],
            ),
            (
                json!({"name": "not_indexed"}),
                expect!["error: No definition named `not_indexed`. None of the 3 indexed source files defines it in a way the syntax index recognises; it may come from a dependency, be generated, or be defined by a macro. Try references to find where it is used, or grep for it."],
            ),
            (
                json!({"name": ""}),
                expect!["error: `name` is empty: give the name of a function, type or other symbol for find_symbol"],
            ),
            (
                json!({"name": "x", "type": "function"}),
                expect!["error: invalid arguments for find_symbol: unknown field `type`, expected `name` or `kind`"],
            ),
        ];
        for (args, expected) in cases {
            expected.assert_eq(&call(&ws, args).await);
        }
    }

    #[tokio::test]
    async fn a_definition_typed_a_moment_ago_is_found() {
        let mut ws = project();
        let editor = ws.memory_editor();
        assert!(call(&ws, json!({"name": "fresh"}))
            .await
            .starts_with("error: "));
        let path = ws.root.join("src/main.rs");
        editor.set(&path, "fn main() {}\n\nfn fresh() {}\n", 2);
        expect![[r#"
            Found 1 definition named `fresh`:
            src/main.rs:3 function fresh  fn fresh() {}"#]]
        .assert_eq(&call(&ws, json!({"name": "fresh"})).await);
    }

    #[tokio::test]
    async fn many_definitions_are_capped_with_a_notice() {
        let files: Vec<(String, String)> = (0..120)
            .map(|n| (format!("src/m{n:03}.rs"), "fn run() {}\n".to_owned()))
            .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let ws = TestWorkspace::new(&files);
        let text = call(&ws, json!({"name": "run"})).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + MAX_DEFINITIONS + 1, "{text}");
        let summary = [&lines[..2], &lines[lines.len() - 2..]].concat().join("\n");
        expect![[r#"
            Found 120 definitions named `run`:
            src/m000.rs:1 function run  fn run() {}
            src/m099.rs:1 function run  fn run() {}
            [100 of 120 shown; give `kind` to narrow, or grep within a directory]"#]]
        .assert_eq(&summary);
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({"name": "parse_expr"}), "Find symbol parse_expr"),
            (
                json!({"name": "Parser", "kind": "class"}),
                "Find class Parser",
            ),
            (Value::Null, "Find symbol"),
        ];
        for (args, title) in cases {
            assert_eq!(FindSymbol.title(&args), title);
        }
    }
}
