//! The `outline` tool: a source file's structure without its bodies (types, functions with
//! their signatures, what an impl or class holds), numbered like `read_file`, from the file's
//! `outline.scm` query. A few hundred bytes tell the model where everything is in a file of
//! thousands of lines; `read_file` with a range then reads the part it needs. `read_file` shows
//! the same outline for a large file read without a range (`outline_of`).

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_syntax::Language;

use super::read_file::check_is_file;
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::editor::current_text;

/// The outline text shown at most.
pub(crate) const MAX_OUTLINE_BYTES: usize = 64 * 1024;
/// Larger files are not parsed for an outline: generated code, mostly, better searched.
const MAX_SOURCE_BYTES: usize = 8 * 1024 * 1024;

pub struct Outline;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The source file to outline, relative to the workspace root (e.g. "src/parser.rs"); an
    /// absolute path must lie inside the workspace.
    path: String,
}

impl Tool for Outline {
    fn name(&self) -> &'static str {
        "outline"
    }

    fn description(&self) -> &'static str {
        "Shows the structure of a source file without its bodies: its types, functions and \
         methods with their signatures, and what each class, impl, trait or module contains, \
         each line numbered as in read_file, with `… N lines (a-b)` where a body was left out. \
         Use it before reading a large file, to find the lines you need and then read only \
         those with read_file start_line/end_line. Supports Rust, Python, JavaScript, \
         TypeScript/TSX, Go, Java, C, C++, Ruby, C#, Bash and Lua; for other files use \
         read_file or grep. The outline is cut at 64 KiB."
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
            Some(path) => format!("Outline {path}"),
            None => "Outline a file".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let path = ctx.workspace.resolve_for_reading(&args.path)?;
            let shown = ctx.workspace.display(&path);
            let Some(language) = Language::from_path(&path) else {
                return Err(ToolError::Respond(format!(
                    "{shown} is not in a language outline supports ({}); use read_file to read \
                     it, or grep to find what you need in it",
                    supported_languages()
                )));
            };
            if ctx.editor.buffer(&path).is_none() {
                check_is_file(&path, &shown).await?;
            }
            let editor = ctx.editor.clone();
            let file = path.clone();
            let outlined = tokio::task::spawn_blocking(move || {
                let current = current_text(editor.as_ref(), &file)?;
                Ok::<_, std::io::Error>(current.map(|current| {
                    let text = match String::from_utf8(current.bytes) {
                        Ok(text) => text,
                        Err(_) => return Err(Refusal::NotText),
                    };
                    if text.len() > MAX_SOURCE_BYTES {
                        return Err(Refusal::TooLarge(text.len()));
                    }
                    // Editors hide a byte-order mark, and the line numbers are the editor's.
                    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                    let lines = text.lines().count();
                    Ok((lines, outline_of(language, text)))
                }))
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("outlining {shown} panicked: {error}")))?
            .map_err(|error| ToolError::Respond(format!("could not read {shown}: {error}")))?;
            let Some(outlined) = outlined else {
                return Err(ToolError::Respond(format!(
                    "{shown} does not exist; call glob to find the right path"
                )));
            };
            let (lines, outline) = outlined.map_err(|refusal| match refusal {
                Refusal::NotText => ToolError::Respond(format!(
                    "{shown} is not UTF-8 text, so it has no outline; read_file says what it is"
                )),
                Refusal::TooLarge(bytes) => ToolError::Respond(format!(
                    "{shown} is too large to outline ({} MiB, the limit is {} MiB); use grep \
                     to find what you need in it, then read_file with start_line/end_line",
                    bytes / (1024 * 1024),
                    MAX_SOURCE_BYTES / (1024 * 1024)
                )),
            })?;
            let outline = outline.map_err(|error| {
                ToolError::Respond(format!(
                    "could not outline {shown}: {error}; use read_file or grep instead"
                ))
            })?;
            let language = language.name();
            let header = format!(
                "{shown}: {lines} {}, {language}. Outline with bodies elided; call read_file \
                 with start_line/end_line to read any part.",
                if lines == 1 { "line" } else { "lines" }
            );
            let text = match outline {
                Some(outline) => format!("{header}\n{}", cap_outline(&outline)),
                None => format!(
                    "{header}\nNo definitions found (no functions, types or other items the \
                     outline shows); read the file with read_file."
                ),
            };
            Ok(ToolOutput {
                text,
                locations: vec![Location {
                    path,
                    line: Some(1),
                }],
                diff: None,
                images: Vec::new(),
            })
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// Why a file gets no outline.
enum Refusal {
    NotText,
    TooLarge(usize),
}

/// The outline of `source`; `None` when the query finds no items in it. Blocks (it parses).
pub(crate) fn outline_of(
    language: Language,
    source: &str,
) -> Result<Option<String>, tandem_syntax::Error> {
    let tree = tandem_syntax::parse(language, source)?;
    let items = tandem_syntax::outline_items(language, &tree, source)?;
    if items.is_empty() {
        return Ok(None);
    }
    Ok(Some(tandem_syntax::render_outline(&items, source)))
}

/// The outline cut after its last whole line within `MAX_OUTLINE_BYTES`, saying where the
/// part left out starts.
pub(crate) fn cap_outline(outline: &str) -> String {
    let outline = outline.trim_end();
    if outline.len() <= MAX_OUTLINE_BYTES {
        return outline.to_owned();
    }
    let mut end = MAX_OUTLINE_BYTES;
    while !outline.is_char_boundary(end) {
        end -= 1;
    }
    let end = outline[..end].rfind('\n').unwrap_or(0);
    let next_line = outline[end..].lines().find_map(|line| {
        let (number, _) = line.split_once('\t')?;
        number.trim().parse::<usize>().ok()
    });
    let from = next_line.map_or(String::new(), |line| format!(" from line {line}"));
    format!(
        "{}\n[the outline is cut at {} KiB; it goes on{from}: read_file with start_line and \
         end_line reads any part of the file, and find_symbol finds a definition by name]",
        &outline[..end],
        MAX_OUTLINE_BYTES / 1024
    )
}

/// "rust, python, …" for messages.
pub(crate) fn supported_languages() -> String {
    Language::ALL
        .iter()
        .map(|language| language.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    const PARSER: &str = "\
//! A parser.

pub struct Parser {
    pos: usize,
}

impl Parser {
    pub fn new() -> Self {
        Parser { pos: 0 }
    }

    pub fn parse_expr(
        &mut self,
        depth: usize,
    ) -> Result<(), String> {
        let _ = depth;
        Ok(())
    }
}
";

    #[tokio::test]
    async fn outlines_and_errors() {
        let ws = TestWorkspace::new(&[
            ("src/parser.rs", PARSER),
            ("src/empty.rs", "// nothing here\n"),
            ("notes.txt", "fn not_code() {}\n"),
            ("src/mod_dir/keep.rs", ""),
        ]);
        std::fs::write(ws.root.join("src/latin1.rs"), b"fn caf\xe9() {}\n").unwrap();
        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"path": "src/parser.rs"}),
                expect![[r#"
                    src/parser.rs: 19 lines, rust. Outline with bodies elided; call read_file with start_line/end_line to read any part.
                         3	pub struct Parser {
                         4	    pos: usize,
                         7	impl Parser {
                         8	    pub fn new() -> Self {
                          	        … 2 lines (9-10)
                        12	    pub fn parse_expr(
                        13	        &mut self,
                        14	        depth: usize,
                        15	    ) -> Result<(), String> {
                          	        … 3 lines (16-18)"#]],
            ),
            (
                json!({"path": "src/empty.rs"}),
                expect!["src/empty.rs: 1 line, rust. Outline with bodies elided; call read_file with start_line/end_line to read any part.\nNo definitions found (no functions, types or other items the outline shows); read the file with read_file."],
            ),
            (
                json!({"path": "notes.txt"}),
                expect!["error: notes.txt is not in a language outline supports (rust, python, javascript, typescript, tsx, go, java, c, cpp, ruby, csharp, bash, lua); use read_file to read it, or grep to find what you need in it"],
            ),
            (
                json!({"path": "src/latin1.rs"}),
                expect!["error: src/latin1.rs is not UTF-8 text, so it has no outline; read_file says what it is"],
            ),
            (
                json!({"path": "src/missing.rs"}),
                expect![[r#"error: src/missing.rs does not exist; call glob with pattern "**/missing.rs" to find the right path"#]],
            ),
            (
                json!({"path": "../outside.rs"}),
                expect!["error: `../outside.rs` is outside the workspace (<ws>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"],
            ),
            (
                json!({"file": "src/parser.rs"}),
                expect!["error: invalid arguments for outline: unknown field `file`, expected `path`"],
            ),
        ];
        for (args, expected) in cases {
            let text = ws.call(&Outline, args).await;
            expected.assert_eq(&text.replace(ws.root.to_str().unwrap(), "<ws>"));
        }
    }

    #[tokio::test]
    async fn an_open_buffer_is_outlined_instead_of_the_disk() {
        let mut ws = TestWorkspace::new(&[("src/lib.rs", "fn on_disk() {}\n")]);
        let editor = ws.memory_editor();
        let path = ws.root.join("src/lib.rs");
        editor.set(&path, "fn typed() {\n    todo!()\n}\n", 3);
        editor.set(&ws.root.join("src/new.rs"), "struct Unsaved;\n", 1);
        let text = ws.call(&Outline, json!({"path": "src/lib.rs"})).await;
        expect![[r#"
            src/lib.rs: 3 lines, rust. Outline with bodies elided; call read_file with start_line/end_line to read any part.
                 1	fn typed() {
                  	    … 2 lines (2-3)"#]]
        .assert_eq(&text);
        let text = ws.call(&Outline, json!({"path": "src/new.rs"})).await;
        expect![[r#"
            src/new.rs: 1 line, rust. Outline with bodies elided; call read_file with start_line/end_line to read any part.
                 1	struct Unsaved;"#]]
        .assert_eq(&text);
        // An outline is not a read: the edit tools still want the file read first.
        assert_eq!(ws.ctx.session.last_seen(&path), None);
    }

    #[tokio::test]
    async fn a_long_outline_is_capped_with_a_notice() {
        let source: String = (0..3000)
            .map(|n| {
                format!(
                    "pub fn function_number_{n}(argument: usize) -> usize {{\n    argument\n}}\n"
                )
            })
            .collect();
        let ws = TestWorkspace::new(&[("src/many.rs", &source)]);
        let text = ws.call(&Outline, json!({"path": "src/many.rs"})).await;
        assert!(text.len() < MAX_OUTLINE_BYTES + 1000, "{}", text.len());
        let lines: Vec<&str> = text.lines().collect();
        expect![[r#"
              2050	pub fn function_number_683(argument: usize) -> usize {
                  	    … 2 lines (2051-2052)
            [the outline is cut at 64 KiB; it goes on from line 2053: read_file with start_line and end_line reads any part of the file, and find_symbol finds a definition by name]"#]]
        .assert_eq(&lines[lines.len() - 3..].join("\n"));
    }

    #[test]
    fn titles() {
        assert_eq!(
            Outline.title(&json!({"path": "src/lib.rs"})),
            "Outline src/lib.rs"
        );
        assert_eq!(Outline.title(&Value::Null), "Outline a file");
    }
}
