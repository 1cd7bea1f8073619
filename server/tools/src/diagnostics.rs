//! The `diagnostics` tool: the errors and warnings language servers report now, for one file
//! (checked as its open buffer reads, unsaved typing included) or for every file whose problems
//! are known (the editor's, or those checked this session). Edits already report the errors
//! they add; this is for the model to look before it starts, or after a command changed files.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::read_file::check_is_file;
use crate::language_servers::FileProblems;
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::editor::current_text;

/// Problems listed at most, over all files.
const MAX_LISTED: usize = 100;

pub struct Diagnostics;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to check, relative to the workspace root (e.g. "src/calc.py"); leave it out for
    /// every file whose problems are known.
    #[serde(default)]
    path: Option<String>,
}

impl Tool for Diagnostics {
    fn name(&self) -> &'static str {
        "diagnostics"
    }

    fn description(&self) -> &'static str {
        "Lists a file's current errors and warnings, or every known file's. They come from \
         language servers (pyright, clangd, typescript-language-server, rust-analyzer, gopls, \
         or the editor's own); a file is checked as it reads in the editor. Each line gives the \
         line, column, severity, message and source. edit and write_file already report the \
         errors they add, so call this to see a file's problems before changing it, or after a \
         command changed files."
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
        match args.get("path").and_then(Value::as_str) {
            Some(path) => format!("Diagnostics of {path}"),
            None => "Diagnostics".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let servers = match (&ctx.language_servers, ctx.diagnostics.enabled) {
                (Some(servers), true) => servers,
                (_, false) => {
                    return Err(ToolError::Respond(
                        "diagnostics are turned off in the settings (`diagnostics.enabled`); \
                         run the project's checker with shell instead"
                            .to_owned(),
                    ))
                }
                (None, true) => {
                    return Err(ToolError::Respond(
                        "no language server reports problems here; run the project's checker \
                         (compiler, type checker, linter) with shell instead"
                            .to_owned(),
                    ))
                }
            };
            let Some(requested) = args.path else {
                let files = servers.problems(None, &ctx.diagnostics).await;
                let files: Vec<FileProblems> = files
                    .into_iter()
                    .filter(|file| !file.problems.is_empty())
                    .collect();
                if files.is_empty() {
                    return Ok(plain(
                        "No errors or warnings are known in any file. Only files a language \
                         server checked are known: open files in the editor, and the files \
                         edited or checked in this session; pass `path` to check another one."
                            .to_owned(),
                    ));
                }
                let text = render(&files, |path| ctx.workspace.display(path));
                let locations = files
                    .iter()
                    .map(|file| Location {
                        path: file.path.clone(),
                        line: file.problems.first().map(|problem| problem.line),
                    })
                    .collect();
                return Ok(ToolOutput {
                    text,
                    locations,
                    diff: None,
                    images: Vec::new(),
                });
            };
            let path = ctx.workspace.resolve_for_reading(&requested)?;
            let shown = ctx.workspace.display(&path);
            if ctx.editor.buffer(&path).is_none() {
                check_is_file(&path, &shown).await?;
            }
            let current = current_text(ctx.editor.as_ref(), &path)
                .map_err(|error| ToolError::Respond(format!("could not read {shown}: {error}")))?
                .ok_or_else(|| ToolError::Respond(format!("{shown} does not exist")))?;
            let text = String::from_utf8(current.bytes).map_err(|_| {
                ToolError::Respond(format!("{shown} is not UTF-8 text, so no server checks it"))
            })?;
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let files = servers
                .problems(Some((&path, text)), &ctx.diagnostics)
                .await;
            let Some(file) = files.into_iter().find(|file| file.path == path) else {
                return Err(ToolError::Respond(format!(
                    "no language server checks {shown} (none for its language was found, or it \
                     did not answer in time); run the project's checker with shell instead"
                )));
            };
            if file.problems.is_empty() {
                return Ok(plain(format!(
                    "{} reports no errors or warnings in {shown}.",
                    file.server
                )));
            }
            let line = file.problems.first().map(|problem| problem.line);
            Ok(ToolOutput {
                text: render(&[file], |path| ctx.workspace.display(path)),
                locations: vec![Location { path, line }],
                diff: None,
                images: Vec::new(),
            })
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

fn plain(text: String) -> ToolOutput {
    ToolOutput {
        text,
        locations: Vec::new(),
        diff: None,
        images: Vec::new(),
    }
}

/// Each file's problems, a header per file, capped at `MAX_LISTED` lines in all.
fn render(files: &[FileProblems], display: impl Fn(&std::path::Path) -> String) -> String {
    let mut text = String::new();
    let mut listed = 0;
    let total: usize = files.iter().map(|file| file.problems.len()).sum();
    for file in files {
        if listed == MAX_LISTED {
            break;
        }
        let warnings = file
            .problems
            .iter()
            .filter(|problem| problem.warning)
            .count();
        let errors = file.problems.len() - warnings;
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "{} ({}): {}, {}",
            display(&file.path),
            file.server,
            counted(errors, "error"),
            counted(warnings, "warning")
        ));
        for problem in file.problems.iter().take(MAX_LISTED - listed) {
            listed += 1;
            text.push_str(&format!(
                "\n  line {}, column {}: {}: {}{}",
                problem.line,
                problem.column,
                if problem.warning { "warning" } else { "error" },
                problem.message.replace('\n', " "),
                problem
                    .source
                    .as_deref()
                    .map(|source| format!(" [{source}]"))
                    .unwrap_or_default()
            ));
        }
    }
    if total > listed {
        text.push_str(&format!(
            "\n… and {} more; pass `path` to see one file's",
            total - listed
        ));
    }
    text
}

fn counted(count: usize, what: &str) -> String {
    match count {
        1 => format!("1 {what}"),
        count => format!("{count} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::language_servers::DiagnosticsSettings;
    use crate::language_servers::{EditProblems, LanguageServers, Problem};
    use crate::testing::TestWorkspace;

    /// Checks `.py` files: an error per line that says `oops`; remembers what it checked.
    #[derive(Debug, Default)]
    struct Checker {
        checked: Mutex<Vec<(std::path::PathBuf, String)>>,
    }

    fn check(text: &str) -> Vec<Problem> {
        text.lines()
            .enumerate()
            .filter(|(_, line)| line.contains("oops"))
            .map(|(index, _)| Problem {
                warning: false,
                line: index as u32 + 1,
                column: 1,
                source: Some("Checker".into()),
                code: None,
                message: "\"oops\" is not defined".into(),
            })
            .collect()
    }

    impl LanguageServers for Checker {
        fn edit_problems<'a>(
            &'a self,
            _path: &'a Path,
            _before: Option<&'a str>,
            _after: &'a str,
            _settings: &'a DiagnosticsSettings,
        ) -> BoxFuture<'a, Option<EditProblems>> {
            Box::pin(async { None })
        }

        fn problems<'a>(
            &'a self,
            file: Option<(&'a Path, &'a str)>,
            _settings: &'a DiagnosticsSettings,
        ) -> BoxFuture<'a, Vec<FileProblems>> {
            Box::pin(async move {
                if let Some((path, text)) = file {
                    if path.extension().is_some_and(|extension| extension == "py") {
                        self.checked
                            .lock()
                            .unwrap()
                            .push((path.to_owned(), text.to_owned()));
                    }
                }
                self.checked
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(path, text)| FileProblems {
                        path: path.clone(),
                        server: "checker".into(),
                        problems: check(text),
                    })
                    .collect()
            })
        }
    }

    #[tokio::test]
    async fn one_file_as_the_buffer_reads_then_every_known_file() {
        let mut ws = TestWorkspace::new(&[
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            ("other.py", "oops\n"),
            ("notes.txt", "oops\n"),
        ]);
        let checker = Arc::new(Checker::default());
        ws.ctx.language_servers = Some(checker.clone());
        let editor = ws.memory_editor();
        editor.set(&ws.root.join("calc.py"), "x = 1\noops\noops()\n", 2);
        let cases = [
            (json!({}), expect!["No errors or warnings are known in any file. Only files a language server checked are known: open files in the editor, and the files edited or checked in this session; pass `path` to check another one."]),
            (json!({"path": "calc.py"}), expect![[r#"
                calc.py (checker): 2 errors, 0 warnings
                  line 2, column 1: error: "oops" is not defined [Checker]
                  line 3, column 1: error: "oops" is not defined [Checker]"#]]),
            (json!({"path": "notes.txt"}), expect!["error: no language server checks notes.txt (none for its language was found, or it did not answer in time); run the project's checker with shell instead"]),
            (json!({"path": "missing.py"}), expect![[r#"error: missing.py does not exist; call glob with pattern "**/missing.py" to find the right path"#]]),
            (json!({"path": "other.py"}), expect![[r#"
                other.py (checker): 1 error, 0 warnings
                  line 1, column 1: error: "oops" is not defined [Checker]"#]]),
            (json!({}), expect![[r#"
                calc.py (checker): 2 errors, 0 warnings
                  line 2, column 1: error: "oops" is not defined [Checker]
                  line 3, column 1: error: "oops" is not defined [Checker]
                other.py (checker): 1 error, 0 warnings
                  line 1, column 1: error: "oops" is not defined [Checker]"#]]),
        ];
        for (args, expected) in cases {
            expected.assert_eq(&ws.call(&Diagnostics, args).await);
        }
    }

    #[tokio::test]
    async fn without_servers_or_when_turned_off_the_model_is_told_to_use_shell() {
        let mut ws = TestWorkspace::new(&[("calc.py", "oops\n")]);
        expect!["error: no language server reports problems here; run the project's checker (compiler, type checker, linter) with shell instead"]
            .assert_eq(&ws.call(&Diagnostics, json!({"path": "calc.py"})).await);
        ws.ctx.language_servers = Some(Arc::new(Checker::default()));
        ws.ctx.diagnostics.enabled = false;
        expect!["error: diagnostics are turned off in the settings (`diagnostics.enabled`); run the project's checker with shell instead"]
            .assert_eq(&ws.call(&Diagnostics, json!({})).await);
    }

    #[test]
    fn many_problems_are_capped() {
        let files: Vec<FileProblems> = (0..3)
            .map(|file| FileProblems {
                path: format!("f{file}.py").into(),
                server: "checker".into(),
                problems: check(&"oops\n".repeat(40)),
            })
            .collect();
        let text = render(&files, |path| path.display().to_string());
        assert_eq!(text.matches("\n  line").count(), MAX_LISTED);
        assert!(
            text.ends_with("\n… and 20 more; pass `path` to see one file's"),
            "{text}"
        );
    }
}
