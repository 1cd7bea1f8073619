//! The `references` tool: where a name is used (calls, type uses, implementations), from the
//! tags the symbol index keeps, so comments, strings and look-alike words are not in the way.
//! When the tags know no use (a language whose queries miss a construct, a name used only
//! through a macro) it falls back to a whole-word text search over the same source files and
//! says so. Also the whole-word search itself (`word_search`), which `find_symbol` uses to
//! find names that differ only in case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_syntax::IndexStats;

use crate::symbols::{refresh, INDEX_TIME_LIMIT};
use crate::tool::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::editor::Editor;

/// References shown at most.
const MAX_REFERENCES: usize = 200;
/// Characters of a line shown at most (the index cuts its lines at 200 too).
const MAX_LINE_CHARS: usize = 200;

pub struct References;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The exact name whose uses to find: a function, method, type, constant… (`parse_expr`,
    /// `HttpClient`), without qualification (`new`, not `Parser::new`).
    name: String,
}

impl Tool for References {
    fn name(&self) -> &'static str {
        "references"
    }

    fn description(&self) -> &'static str {
        "Finds where a name is used in the workspace's source files (calls, type uses, \
         implementations), from a syntax index of the code, so comments and strings do not \
         count. Use it before changing a function's signature or renaming something, to find \
         every place that must change with it. Returns `path:line: text` lines in path order \
         (definitions are not listed: use find_symbol for those). Matching is by exact name \
         only, not by type, so same-named symbols are listed together. When the index finds no \
         use, it falls back to a whole-word text search and says so. At most 200 lines are \
         shown; for more, grep within a directory."
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
        match args.get("name").and_then(Value::as_str) {
            Some(name) => format!("References to {name}"),
            None => "Find references".to_owned(),
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
            let refreshed = refresh(ctx, Some(Instant::now() + INDEX_TIME_LIMIT)).await?;
            let hits = ctx.index.references(name);
            let workspace = &ctx.workspace;
            let mut locations = Vec::new();
            let mut text = if hits.is_empty() {
                let editor = Arc::clone(&ctx.editor);
                let files = refreshed.files;
                let searched = files.len();
                let word = name.to_owned();
                let found = tokio::task::spawn_blocking(move || {
                    word_search(&files, editor.as_ref(), &word, false, MAX_REFERENCES)
                })
                .await
                .map_err(|error| ToolError::Fatal(format!("the text search failed: {error}")))?
                .map_err(ToolError::Respond)?;
                if found.total == 0 {
                    return Err(ToolError::Respond(format!(
                        "no references to `{name}`: neither the syntax index nor a whole-word \
                         text search of the {searched} source {} found it{}. Check the spelling \
                         (names are matched exactly, case included), or grep for part of the \
                         name",
                        plural(searched, "file", "files"),
                        incomplete_note(&refreshed.stats)
                    )));
                }
                let mut text = format!(
                    "The syntax index knows no references to `{name}`. A whole-word text \
                     search found {} in {} (it may include the definition, comments, strings \
                     and unrelated names spelled the same):",
                    plural(found.total, "line", "lines"),
                    plural(found.files, "file", "files")
                );
                let mut last_path: Option<&Path> = None;
                for hit in &found.hits {
                    text.push_str(&format!(
                        "\n{}:{}: {}",
                        workspace.display(&hit.path),
                        hit.line,
                        hit.text
                    ));
                    if last_path != Some(hit.path.as_path()) {
                        locations.push(location(&hit.path, hit.line));
                        last_path = Some(&hit.path);
                    }
                }
                if found.total > found.hits.len() {
                    text.push_str(&more_notice(found.hits.len(), found.total, name));
                }
                text
            } else {
                let files: BTreeSet<&Path> = hits.iter().map(|hit| hit.path.as_path()).collect();
                let mut text = format!(
                    "Found {} to `{name}` in {}:",
                    plural(hits.len(), "reference", "references"),
                    plural(files.len(), "file", "files")
                );
                let mut last_path: Option<&Path> = None;
                for hit in hits.iter().take(MAX_REFERENCES) {
                    let line = u64::from(hit.line) + 1;
                    text.push_str(&format!(
                        "\n{}:{line}: {}",
                        workspace.display(&hit.path),
                        hit.line_text
                    ));
                    if last_path != Some(hit.path.as_path()) {
                        locations.push(location(&hit.path, line));
                        last_path = Some(&hit.path);
                    }
                }
                if hits.len() > MAX_REFERENCES {
                    text.push_str(&more_notice(MAX_REFERENCES, hits.len(), name));
                }
                text
            };
            if !refreshed.stats.complete {
                text.push_str(&format!("\n[{}]", incomplete_notice()));
            }
            Ok(ToolOutput {
                text,
                locations,
                diff: None,
                images: Vec::new(),
            })
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

fn more_notice(shown: usize, total: usize, name: &str) -> String {
    format!(
        "\n[{shown} of {total} shown; grep for `{name}` with a `path` or `include` to see the \
         rest part by part]"
    )
}

/// Said when the index ran out of time before it parsed every changed file.
pub(crate) fn incomplete_notice() -> &'static str {
    "the index is not complete yet: some files changed since the last call were not parsed in \
     time, so results from them may be missing or out of date; calling again continues \
     indexing, and grep searches every file now"
}

fn incomplete_note(stats: &IndexStats) -> &'static str {
    if stats.complete {
        ""
    } else {
        " (the index is not complete yet)"
    }
}

/// The name to look up, or why it cannot be one.
pub(crate) fn checked_name<'a>(name: &'a str, tool: &str) -> Result<&'a str, ToolError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ToolError::Respond(format!(
            "`name` is empty: give the name of a function, type or other symbol for {tool}"
        )));
    }
    if name.chars().any(char::is_whitespace) {
        return Err(ToolError::Respond(format!(
            "`{name}` is not a name: give one identifier, such as `parse_expr` (to search for \
             text with spaces, use grep)"
        )));
    }
    Ok(name)
}

pub(crate) fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

pub(crate) fn location(path: &Path, line: u64) -> Location {
    Location {
        path: path.to_owned(),
        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
    }
}

/// What a whole-word search found.
#[derive(Debug, Default)]
pub(crate) struct WordSearch {
    /// The first matching lines, in path order.
    pub(crate) hits: Vec<WordHit>,
    /// Matching lines in all.
    pub(crate) total: usize,
    /// Files with a match.
    pub(crate) files: usize,
    /// Every spelling matched (they differ in case when the search ignores it).
    pub(crate) spellings: BTreeSet<String>,
}

#[derive(Debug)]
pub(crate) struct WordHit {
    pub(crate) path: PathBuf,
    /// 1-based.
    pub(crate) line: u64,
    /// The line, trimmed and cut.
    pub(crate) text: String,
}

/// Searches `files` (their open buffers, else the disk) for `word` as a whole word, keeping the
/// first `keep` matching lines. Blocks; spreads the files over a few threads. `Err` says why
/// the word cannot be searched for.
pub(crate) fn word_search(
    files: &[PathBuf],
    editor: &dyn Editor,
    word: &str,
    ignore_case: bool,
    keep: usize,
) -> Result<WordSearch, String> {
    let matcher = RegexMatcherBuilder::new()
        .fixed_strings(true)
        .word(true)
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .build(word)
        .map_err(|error| format!("cannot search for `{word}`: {error}"))?;
    let mut files: Vec<&PathBuf> = files.iter().collect();
    files.sort();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let chunk = files.len().div_ceil(threads).max(1);
    let parts: Vec<WordSearch> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|chunk| {
                let matcher = &matcher;
                scope.spawn(move || search_files(chunk, editor, matcher, keep))
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    let mut found = WordSearch::default();
    for part in parts {
        found.total += part.total;
        found.files += part.files;
        found.spellings.extend(part.spellings);
        let room = keep.saturating_sub(found.hits.len());
        found.hits.extend(part.hits.into_iter().take(room));
    }
    Ok(found)
}

fn search_files(
    files: &[&PathBuf],
    editor: &dyn Editor,
    matcher: &RegexMatcher,
    keep: usize,
) -> WordSearch {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .build();
    let mut found = WordSearch::default();
    for path in files {
        let mut sink = WordSink {
            matcher,
            path,
            keep,
            found: &mut found,
            matched: false,
        };
        let searched = match editor.buffer(path) {
            Some(buffer) => searcher.search_slice(matcher, buffer.text.as_bytes(), &mut sink),
            None => searcher.search_path(matcher, path, &mut sink),
        };
        if let Err(error) = searched {
            tracing::debug!("the word search skipped {}: {error}", path.display());
        }
        if sink.matched {
            found.files += 1;
        }
    }
    found
}

struct WordSink<'a> {
    matcher: &'a RegexMatcher,
    path: &'a Path,
    keep: usize,
    found: &'a mut WordSearch,
    matched: bool,
}

impl Sink for WordSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = found.bytes();
        let first = found.line_number().unwrap_or(1);
        let spellings = &mut self.found.spellings;
        // Cannot fail: the regex matcher's error type is uninhabited.
        let _ = self.matcher.find_iter(bytes, |at| {
            spellings.insert(String::from_utf8_lossy(&bytes[at]).into_owned());
            true
        });
        for (offset, line) in (0u64..).zip(found.lines()) {
            self.matched = true;
            self.found.total += 1;
            if self.found.hits.len() < self.keep {
                let text = String::from_utf8_lossy(line);
                let text = text.trim();
                let text = match text.char_indices().nth(MAX_LINE_CHARS) {
                    Some((cut, _)) => format!("{}…", &text[..cut]),
                    None => text.to_owned(),
                };
                self.found.hits.push(WordHit {
                    path: self.path.to_owned(),
                    line: first + offset,
                    text,
                });
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    fn shown_hits(ws: &TestWorkspace, found: &WordSearch) -> String {
        let hits: Vec<String> = found
            .hits
            .iter()
            .map(|hit| {
                let path = ws.ctx.workspace.display(&hit.path);
                format!("{path}:{}: {}", hit.line, hit.text)
            })
            .collect();
        hits.join("\n")
    }

    fn project() -> TestWorkspace {
        TestWorkspace::new(&[
            (
                "src/parser.rs",
                "pub struct Parser;\n\nimpl Parser {\n    pub fn parse_expr(&self) -> u32 {\n        \
                 self.parse_atom()\n    }\n    fn parse_atom(&self) -> u32 { 1 }\n}\n",
            ),
            (
                "src/main.rs",
                "use crate::parser::Parser;\n\nfn main() {\n    // parse_expr is the entry point\n    \
                 let parser = Parser;\n    parser.parse_expr();\n    parser.parse_expr();\n}\n",
            ),
            ("scripts/build.sh", "#!/bin/sh\nMODE=release\necho \"$MODE\"\n"),
            ("notes.txt", "parse_expr in prose\n"),
        ])
    }

    async fn call(ws: &TestWorkspace, args: Value) -> String {
        ws.call(&References, args)
            .await
            .replace(ws.root.to_str().unwrap(), "<ws>")
    }

    #[tokio::test]
    async fn references_and_errors() {
        let ws = project();
        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"name": "parse_expr"}),
                expect![[r#"
                    Found 2 references to `parse_expr` in 1 file:
                    src/main.rs:6: parser.parse_expr();
                    src/main.rs:7: parser.parse_expr();"#]],
            ),
            (
                json!({"name": " Parser "}),
                expect![[r#"
                    Found 2 references to `Parser` in 2 files:
                    src/main.rs:1: use crate::parser::Parser;
                    src/parser.rs:3: impl Parser {"#]],
            ),
            (
                // Bash has no reference tags for variables: the text search answers.
                json!({"name": "MODE"}),
                expect![[r#"
                    The syntax index knows no references to `MODE`. A whole-word text search found 2 lines in 1 file (it may include the definition, comments, strings and unrelated names spelled the same):
                    scripts/build.sh:2: MODE=release
                    scripts/build.sh:3: echo "$MODE""#]],
            ),
            (
                json!({"name": "missing_name"}),
                expect!["error: no references to `missing_name`: neither the syntax index nor a whole-word text search of the 3 source 3 files found it. Check the spelling (names are matched exactly, case included), or grep for part of the name"],
            ),
            (
                json!({"name": "  "}),
                expect!["error: `name` is empty: give the name of a function, type or other symbol for references"],
            ),
            (
                json!({"name": "parse expr"}),
                expect!["error: `parse expr` is not a name: give one identifier, such as `parse_expr` (to search for text with spaces, use grep)"],
            ),
            (
                json!({"symbol": "x"}),
                expect!["error: invalid arguments for references: unknown field `symbol`, expected `name`"],
            ),
        ];
        for (args, expected) in cases {
            expected.assert_eq(&call(&ws, args).await);
        }
    }

    #[tokio::test]
    async fn many_references_are_capped_with_a_notice() {
        let calls: String = (0..250).map(|n| format!("    target({n});\n")).collect();
        let source = format!("fn target(_: u32) {{}}\n\nfn main() {{\n{calls}}}\n");
        let ws = TestWorkspace::new(&[("src/main.rs", &source)]);
        let text = call(&ws, json!({"name": "target"})).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + MAX_REFERENCES + 1, "{text}");
        let summary = [&lines[..2], &lines[lines.len() - 2..]].concat().join("\n");
        expect![[r#"
            Found 250 references to `target` in 1 file:
            src/main.rs:4: target(0);
            src/main.rs:203: target(199);
            [200 of 250 shown; grep for `target` with a `path` or `include` to see the rest part by part]"#]]
        .assert_eq(&summary);
    }

    #[tokio::test]
    async fn an_open_buffer_is_searched_instead_of_the_disk() {
        let mut ws = project();
        let editor = ws.memory_editor();
        let path = ws.root.join("src/main.rs");
        editor.set(
            &path,
            "fn main() {\n    crate::parser::Parser.parse_expr();\n}\n",
            4,
        );
        let text = call(&ws, json!({"name": "parse_expr"})).await;
        expect![[r#"
            Found 1 reference to `parse_expr` in 1 file:
            src/main.rs:2: crate::parser::Parser.parse_expr();"#]]
        .assert_eq(&text);
    }

    #[test]
    fn word_search_matches_whole_words_and_collects_spellings() {
        let ws = TestWorkspace::new(&[
            (
                "a.rs",
                "fn parse_expr() {}\nfn parse_exprs() {}\n// Parse_Expr here\n",
            ),
            ("b.py", "PARSE_EXPR = 1\nx.parse_expr\n"),
            ("c.bin", "parse_expr\0"),
        ]);
        let files: Vec<PathBuf> = ["a.rs", "b.py", "c.bin"]
            .iter()
            .map(|name| ws.root.join(name))
            .collect();
        let editor = tandem_sandbox::editor::DiskEditor;
        let found = word_search(&files, &editor, "parse_expr", true, 3).unwrap();
        assert_eq!((found.total, found.files), (4, 2));
        assert_eq!(
            found.spellings.into_iter().collect::<Vec<_>>(),
            ["PARSE_EXPR", "Parse_Expr", "parse_expr"]
        );
        let found = word_search(&files, &editor, "parse_expr", true, 3).unwrap();
        expect![[r#"
            a.rs:1: fn parse_expr() {}
            a.rs:3: // Parse_Expr here
            b.py:1: PARSE_EXPR = 1"#]]
        .assert_eq(&shown_hits(&ws, &found));
        let found = word_search(&files, &editor, "parse_expr", false, 10).unwrap();
        assert_eq!((found.total, found.files), (2, 2));
    }

    #[test]
    fn titles() {
        assert_eq!(
            References.title(&json!({"name": "parse_expr"})),
            "References to parse_expr"
        );
        assert_eq!(References.title(&Value::Null), "Find references");
    }
}
