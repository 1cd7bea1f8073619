//! The `grep` tool: searches file contents in-process with the ripgrep crates (`grep-regex`,
//! `grep-searcher`, `ignore`), line by line, honouring `.gitignore` and skipping `.git` and
//! binary files. Results are grouped per file in path order, ripgrep style; past the overall cap
//! the model gets per-file counts and a request to narrow the search instead of a dump.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{cap, parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::workspace::Workspace;

/// Matching lines shown in one call; past it, only per-file counts are returned.
const MAX_TOTAL_MATCHES: usize = 100;
/// Matching lines shown per file.
const MAX_FILE_MATCHES: usize = 20;
/// Files listed with their counts when there are too many results.
const MAX_SUMMARY_FILES: usize = 20;
/// Characters of a line shown before it is cut.
const MAX_LINE_CHARS: usize = 300;
const MAX_CONTEXT: u32 = 10;
/// A last guard on the text: 100 matches with 10 lines of context each could still be large.
const MAX_OUTPUT_BYTES: usize = 40_000;
/// Bytes the searcher holds at once: a line and the context lines before it. A file with a
/// longer line (minified code, a one-line data dump) is searched up to that line: holding it
/// would cost its whole size, and no match in it could be shown anyway.
const MAX_HELD_BYTES: usize = 4 << 20;

pub struct Grep;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// What to search for: a regular expression in Rust/ripgrep syntax (`fn\s+parse_\w+`,
    /// `TODO|FIXME`), matched against each line separately. With `fixed_strings`, literal text.
    pattern: String,
    /// File or directory to search, relative to the workspace root. Defaults to the whole
    /// workspace.
    #[serde(default)]
    path: Option<String>,
    /// Only search files matching this glob. Without a `/` it matches file names anywhere
    /// (`*.rs`, `*.{ts,tsx}`); with a `/` it matches the path relative to the workspace root or
    /// to `path` (`src/**/*.ts`).
    #[serde(default)]
    include: Option<String>,
    /// Treat `pattern` as literal text rather than a regex: use it for text with special
    /// characters such as `(`, `[`, `{`, `.`, `*`, `?`, `|` or `\`. Default false.
    #[serde(default)]
    fixed_strings: bool,
    /// true: match case exactly; false: ignore case. Default: smart case (ignore case when the
    /// pattern has no uppercase letter, match it exactly otherwise).
    #[serde(default)]
    case_sensitive: Option<bool>,
    /// Lines of context to show before and after each match, 0 to 10. Default 0.
    #[serde(default)]
    #[schemars(range(max = 10))]
    context: u32,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Searches the contents of files for a regular expression (Rust/ripgrep syntax) or, with \
         fixed_strings, for literal text, one line at a time. Searches the whole workspace, or \
         the file or directory given as `path`; files ignored by .gitignore/.ignore, the .git \
         directory and binary files are skipped, and `include` restricts the search to files \
         matching a glob (e.g. `*.rs`). Case-insensitive when the pattern is all lowercase, \
         unless case_sensitive is set. Use it to find where a symbol, string or error message \
         occurs; use glob to find files by name, and read_file to read around a match. Returns \
         a first line `Found N matches in M files for /pattern/`, then each file (in path \
         order) with its matching lines as `line:text` (context lines as `line-text`, `--` \
         between separate groups); lines longer than 300 characters are cut with `…`. Caps: \
         20 matching lines per file, 100 in all; when more than 100 lines match, only the \
         match counts of the top files are returned and you should narrow the search (a more \
         specific pattern, a smaller path, or include)."
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

    /// Yes: ripgrep searches the files on disk.
    fn reads_disk(&self) -> bool {
        true
    }

    fn title(&self, args: &Value) -> String {
        let Some(pattern) = args.get("pattern").and_then(Value::as_str) else {
            return "Search file contents".to_owned();
        };
        let shown: String = if pattern.chars().count() > 60 {
            pattern.chars().take(60).chain(['…']).collect()
        } else {
            pattern.to_owned()
        };
        let mut title = format!("Search for `{shown}`");
        if let Some(path) = args.get("path").and_then(Value::as_str) {
            title.push_str(&format!(" in {path}"));
        }
        if let Some(include) = args.get("include").and_then(Value::as_str) {
            title.push_str(&format!(" ({include})"));
        }
        title
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let query = Query::new(&args, &ctx.workspace)?;
            let workspace = Arc::clone(&ctx.workspace);
            let cancel = ctx.cancel.clone();
            let (query, found) = tokio::task::spawn_blocking(move || {
                let found = query.search(&workspace, &cancel);
                (query, found)
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("the grep task failed: {error}")))?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Respond(
                    "grep was cancelled before it finished".to_owned(),
                ));
            }
            let cut_short = found.cut_short_note(&ctx.workspace);
            let max_bytes = ctx.output_budget(MAX_OUTPUT_BYTES);
            let mut output = query.render(&args, found, &ctx.workspace, max_bytes);
            if let Some(note) = cut_short {
                output.text.push('\n');
                output.text.push_str(&note);
            }
            Ok(output)
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// A validated search: the compiled matcher and where to look.
struct Query {
    matcher: RegexMatcher,
    /// The resolved file or directory to search.
    root: PathBuf,
    include: Option<Include>,
    context: usize,
}

/// The `include` glob, matched like a `.gitignore` line: against the file name when it has no
/// `/`, otherwise against the path relative to the workspace root or to the searched directory.
struct Include {
    glob: GlobMatcher,
    on_name: bool,
}

impl Include {
    fn matches(&self, path: &Path, workspace: &Workspace, search_root: &Path) -> bool {
        if self.on_name {
            return path
                .file_name()
                .is_some_and(|name| self.glob.is_match(Path::new(name)));
        }
        workspace
            .primary_root()
            .into_iter()
            .chain([search_root])
            .filter_map(|base| path.strip_prefix(base).ok())
            .any(|relative| self.glob.is_match(relative))
    }
}

impl Query {
    fn new(args: &Args, workspace: &Workspace) -> Result<Query, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::Respond(
                "`pattern` is empty: give the text or regex to search for (to list files by \
                 name, use glob)"
                    .to_owned(),
            ));
        }
        if args.pattern.contains('\n') {
            return Err(ToolError::Respond(
                "`pattern` contains a line break, but grep matches one line at a time: search \
                 for a single line of the text (the most distinctive one)"
                    .to_owned(),
            ));
        }
        if args.pattern.contains('\0') {
            return Err(ToolError::Respond(
                "`pattern` contains a NUL character, which can never match: files with NUL bytes \
                 are binary and skipped"
                    .to_owned(),
            ));
        }
        if args.context > MAX_CONTEXT {
            return Err(ToolError::Respond(format!(
                "`context` must be at most {MAX_CONTEXT} lines (got {}); to see more around a \
                 match, call read_file with a start_line near it",
                args.context
            )));
        }
        let mut builder = RegexMatcherBuilder::new();
        match args.case_sensitive {
            None => builder.case_smart(true),
            Some(sensitive) => builder.case_insensitive(!sensitive),
        };
        // The line terminator lets the matcher search whole buffers (fast) and makes a `\n` in
        // the pattern an error rather than a pattern that silently never matches. NUL is banned
        // because binary detection stops at it, so it could never match.
        builder
            .fixed_strings(args.fixed_strings)
            .line_terminator(Some(b'\n'))
            .crlf(true)
            .ban_byte(Some(b'\0'));
        let matcher = builder.build(&args.pattern).map_err(|error| {
            let pattern = &args.pattern;
            let error = error.to_string();
            // A syntax error comes with a caret diagram of the pattern as grep-regex wrapped it
            // (`(?:…)`), which points at the wrong column: keep only the reason.
            let reason = match error.strip_prefix("regex parse error:") {
                Some(diagram) => diagram
                    .lines()
                    .rev()
                    .find_map(|line| line.trim().strip_prefix("error: "))
                    .unwrap_or(diagram.trim()),
                None => error.as_str(),
            };
            if pattern.contains("\\n") {
                ToolError::Respond(format!(
                    "invalid regex /{pattern}/: {reason}. grep matches one line at a time, so a \
                     pattern cannot span lines: search for a single line of the text"
                ))
            } else if args.fixed_strings {
                ToolError::Respond(format!("cannot search for /{pattern}/: {reason}"))
            } else {
                ToolError::Respond(format!(
                    "invalid regex /{pattern}/: {reason}. To search for this text literally, \
                     call grep again with fixed_strings: true"
                ))
            }
        })?;

        let requested = args.path.as_deref().unwrap_or(".");
        let root = workspace.resolve_for_reading(requested)?;
        if !root.exists() {
            return Err(ToolError::Respond(format!(
                "`{requested}` does not exist (paths are relative to the workspace root); find \
                 the right path with glob or list_directory, or leave `path` out to search the \
                 whole workspace"
            )));
        }

        let include = match args.include.as_deref() {
            None => None,
            Some(glob) => {
                let glob = glob.strip_prefix("./").unwrap_or(glob);
                let compiled = GlobBuilder::new(glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|error| {
                        ToolError::Respond(format!(
                            "invalid `include` glob `{glob}`: {error}. Expected a glob such as \
                             `*.rs`, `*.{{ts,tsx}}` or `src/**/*.py`"
                        ))
                    })?;
                Some(Include {
                    glob: compiled.compile_matcher(),
                    on_name: !glob.contains('/'),
                })
            }
        };

        Ok(Query {
            matcher,
            root,
            include,
            context: args.context as usize,
        })
    }

    /// Walks and searches every file under the root (in parallel); blocking.
    fn search(&self, workspace: &Workspace, cancel: &CancellationToken) -> Found {
        let files = Mutex::new(Vec::new());
        let total = AtomicUsize::new(0);
        let binary = AtomicUsize::new(0);
        let cut_short = Mutex::new(Vec::new());
        let mut searcher = SearcherBuilder::new();
        // CRLF on both sides (they must agree): `$` then matches before `\r\n` too.
        searcher
            .line_terminator(LineTerminator::crlf())
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .heap_limit(Some(MAX_HELD_BYTES))
            .before_context(self.context)
            .after_context(self.context);

        WalkBuilder::new(&self.root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .build_parallel()
            .run(|| {
                let mut searcher = searcher.build();
                let (files, total, binary, cut_short) = (&files, &total, &binary, &cut_short);
                Box::new(move |entry| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    // Symlinks are not followed, so nothing outside the workspace is searched.
                    if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                        return WalkState::Continue;
                    }
                    let path = entry.path();
                    if let Some(include) = &self.include {
                        if !include.matches(path, workspace, &self.root) {
                            return WalkState::Continue;
                        }
                    }
                    let mut sink = FileSink::new(self.context);
                    if let Err(error) = searcher.search_path(&self.matcher, path, &mut sink) {
                        if !is_line_too_long(&error) {
                            tracing::debug!("grep skipped {}: {error}", path.display());
                            return WalkState::Continue;
                        }
                        // What was found before the long line stands.
                        cut_short
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(path.to_owned());
                    }
                    if sink.binary {
                        binary.fetch_add(1, Ordering::Relaxed);
                        return WalkState::Continue;
                    }
                    if sink.count == 0 {
                        return WalkState::Continue;
                    }
                    // Past the overall cap only counts are shown: stop keeping lines.
                    let before = total.fetch_add(sink.count, Ordering::Relaxed);
                    if before + sink.count > MAX_TOTAL_MATCHES {
                        sink.lines = Vec::new();
                    }
                    files
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(FileMatches {
                            path: path.to_owned(),
                            count: sink.count,
                            first_line: sink.first_line,
                            next_unshown: sink.next_unshown,
                            lines: sink.lines,
                        });
                    WalkState::Continue
                })
            });

        let mut files = files.into_inner().unwrap_or_else(PoisonError::into_inner);
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut cut_short = cut_short
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        cut_short.sort();
        Found {
            files,
            binary_skipped: binary.into_inner(),
            cut_short,
        }
    }

    /// The model's view of `found`, at most `max_bytes` long (plus the truncation notice).
    fn render(
        &self,
        args: &Args,
        found: Found,
        workspace: &Workspace,
        max_bytes: usize,
    ) -> ToolOutput {
        let pattern = &args.pattern;
        let total: usize = found.files.iter().map(|file| file.count).sum();
        if found.files.is_empty() {
            return ToolOutput::text(no_match_text(args, &found, workspace.display(&self.root)));
        }
        let file_count = found.files.len();
        let found_line = format!(
            "Found {} in {} for /{pattern}/",
            plural(total, "match", "matches"),
            plural(file_count, "file", "files")
        );

        if total > MAX_TOTAL_MATCHES {
            let mut top: Vec<&FileMatches> = found.files.iter().collect();
            top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.path.cmp(&b.path)));
            let (shown, rest) = top.split_at(top.len().min(MAX_SUMMARY_FILES));
            let mut text = format!(
                "{found_line} (more than {MAX_TOTAL_MATCHES}: showing match counts per file, \
                 most first)\n"
            );
            for file in shown {
                text.push_str(&format!(
                    "{}: {}\n",
                    workspace.display(&file.path),
                    plural(file.count, "match", "matches")
                ));
            }
            if !rest.is_empty() {
                let rest_total: usize = rest.iter().map(|file| file.count).sum();
                text.push_str(&format!(
                    "… and {} more {} with {}\n",
                    rest.len(),
                    if rest.len() == 1 { "file" } else { "files" },
                    plural(rest_total, "match", "matches")
                ));
            }
            text.push_str(
                "Too many results: narrow your search with a more specific pattern, path or \
                 include",
            );
            return ToolOutput {
                text,
                locations: shown.iter().map(|file| file.location()).collect(),
                diff: None,
                images: Vec::new(),
            };
        }

        let shown: usize = found
            .files
            .iter()
            .map(|file| file.count.min(MAX_FILE_MATCHES))
            .sum();
        let mut text = found_line;
        if shown < total {
            text.push_str(&format!(
                " (showing {shown}: at most {MAX_FILE_MATCHES} lines per file)"
            ));
        }
        for file in &found.files {
            let display = workspace.display(&file.path);
            text.push_str(&format!("\n\n{display}"));
            for line in &file.lines {
                match line {
                    Line::Match(number, content) => text.push_str(&format!("\n{number}:{content}")),
                    Line::Context(number, content) => {
                        text.push_str(&format!("\n{number}-{content}"));
                    }
                    Line::Break => text.push_str("\n--"),
                }
            }
            if let Some(next) = file.next_unshown {
                text.push_str(&format!(
                    "\n[{MAX_FILE_MATCHES} of {} matches in this file shown; the next is on \
                     line {next}: call read_file on {display} with start_line={next}, or narrow \
                     the pattern]",
                    file.count
                ));
            }
        }
        ToolOutput {
            text: cap(
                &text,
                max_bytes,
                "Narrow the search (pattern, path or include) or ask for less context.",
            ),
            locations: found.files.iter().map(FileMatches::location).collect(),
            diff: None,
            images: Vec::new(),
        }
    }
}

/// The answer when nothing matched, with the likely reasons.
fn no_match_text(args: &Args, found: &Found, shown_root: String) -> String {
    let pattern = &args.pattern;
    let place = if shown_root == "." {
        "the workspace".to_owned()
    } else {
        shown_root
    };
    let mut text = format!("No matches for /{pattern}/ in {place}");
    if let Some(include) = &args.include {
        text.push_str(&format!(" (only files matching `{include}`)"));
    }
    text.push_str(".\nHints:");
    let case_sensitive = args
        .case_sensitive
        .unwrap_or_else(|| pattern.chars().any(char::is_uppercase));
    if case_sensitive {
        text.push_str(
            "\n- The search was case-sensitive: pass case_sensitive: false to ignore case.",
        );
    }
    if !args.fixed_strings && pattern.contains(|c| "()[]{}*+?|^$\\".contains(c)) {
        text.push_str(
            "\n- The pattern is a regex: escape special characters such as ( [ { * + ? | with \
             \\, or pass fixed_strings: true to search for the text as written.",
        );
    }
    if args.include.is_some() {
        text.push_str("\n- Check the `include` glob, or leave it out.");
    }
    text.push_str(
        "\n- Files ignored by .gitignore and binary files are not searched; check the spelling \
         or search a shorter part of the text.",
    );
    if found.binary_skipped > 0 {
        text.push_str(&format!(
            " ({} skipped here.)",
            plural(found.binary_skipped, "binary file", "binary files")
        ));
    }
    text
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

/// What the walk found.
struct Found {
    /// Files with at least one match, sorted by path.
    files: Vec<FileMatches>,
    binary_skipped: usize,
    /// Files searched only up to a line longer than `MAX_HELD_BYTES`, sorted.
    cut_short: Vec<PathBuf>,
}

impl Found {
    /// Says which files were searched only in part, and how to look at the rest.
    fn cut_short_note(&self, workspace: &Workspace) -> Option<String> {
        const LISTED: usize = 5;
        if self.cut_short.is_empty() {
            return None;
        }
        let listed: Vec<String> = self
            .cut_short
            .iter()
            .take(LISTED)
            .map(|path| workspace.display(path))
            .collect();
        let mut names = listed.join(", ");
        if self.cut_short.len() > LISTED {
            names.push_str(&format!(" and {} more", self.cut_short.len() - LISTED));
        }
        Some(format!(
            "[searched only up to a line longer than {} MiB in {names}: the lines from there on \
             were not searched; use shell tools made for such files (e.g. `grep -o` with a \
             short pattern, or `head -c`)]",
            MAX_HELD_BYTES >> 20
        ))
    }
}

/// Whether the searcher stopped at a line longer than it may hold (`heap_limit`). The crate
/// says so only in the message; the test `a_line_too_long_to_hold_ends_that_files_search`
/// notices if that changes.
fn is_line_too_long(error: &std::io::Error) -> bool {
    error.to_string().contains("allocation limit")
}

struct FileMatches {
    path: PathBuf,
    /// Matching lines in the file.
    count: usize,
    first_line: u64,
    /// The line of the first match past the per-file cap.
    next_unshown: Option<u64>,
    /// What to show; empty once the overall cap is passed.
    lines: Vec<Line>,
}

impl FileMatches {
    fn location(&self) -> Location {
        Location {
            path: self.path.clone(),
            line: u32::try_from(self.first_line).ok(),
        }
    }
}

enum Line {
    Match(u64, String),
    Context(u64, String),
    /// `--` between groups of lines that are not adjacent.
    Break,
}

/// Collects one file's matches: all are counted, the first `MAX_FILE_MATCHES` kept with their
/// context.
struct FileSink {
    context: u64,
    count: usize,
    first_line: u64,
    /// Line of the last match kept, to tell its after-context from the next one's before-context.
    last_kept: u64,
    next_unshown: Option<u64>,
    lines: Vec<Line>,
    binary: bool,
}

impl FileSink {
    fn new(context: usize) -> FileSink {
        FileSink {
            context: context as u64,
            count: 0,
            first_line: 0,
            last_kept: 0,
            next_unshown: None,
            lines: Vec::new(),
            binary: false,
        }
    }

    fn full(&self) -> bool {
        self.next_unshown.is_some()
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = found.line_number().unwrap_or(0);
        for (offset, line) in (0u64..).zip(found.lines()) {
            let number = first + offset;
            self.count += 1;
            if self.count == 1 {
                self.first_line = number;
            }
            if self.count <= MAX_FILE_MATCHES {
                self.lines.push(Line::Match(number, show_line(line)));
                self.last_kept = number;
            } else if !self.full() {
                self.next_unshown = Some(number);
                // Drop the before-context of this first unshown match (and the break before
                // it); the after-context of the last shown one stays.
                let limit = self.last_kept + self.context;
                while let Some(last) = self.lines.last() {
                    match last {
                        Line::Context(number, _) if *number > limit => {}
                        Line::Break => {}
                        _ => break,
                    }
                    self.lines.pop();
                }
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if !self.full() {
            self.lines.push(Line::Context(
                context.line_number().unwrap_or(0),
                show_line(context.bytes()),
            ));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if !self.full() {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        // Matches before the first NUL may already be in; a binary file is skipped whole.
        self.binary = true;
        self.count = 0;
        self.lines.clear();
        Ok(false)
    }
}

/// A line as the model sees it: without its terminator, lossy UTF-8, cut when very long.
fn show_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        text.chars().take(MAX_LINE_CHARS).chain(['…']).collect()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    fn files() -> Vec<(&'static str, String)> {
        let mut many = String::new();
        for i in 1..=25 {
            many.push_str(&format!("needle {i}\n"));
        }
        let mut sparse = String::new();
        for i in 1..=22 {
            sparse.push_str(&format!("needle {i}\nafter\ngap\nbefore\n"));
        }
        let mut huge = String::new();
        for i in 1..=90 {
            huge.push_str(&format!("hay {i}\n"));
        }
        vec![
            (".gitignore", "target/\n*.log\n".to_owned()),
            (
                "src/lib.rs",
                "//! The library.\n\npub fn parse(input: &str) -> Result<(), Error> {\n    \
                 todo!()\n}\n\n// TODO: handle errors\nfn helper() {}\n"
                    .to_owned(),
            ),
            (
                "src/main.rs",
                "fn main() {\n    tandem::parse(\"x\").unwrap();\n    // todo: args\n}\n"
                    .to_owned(),
            ),
            ("src/web/app.ts", "export function parse() {}\n".to_owned()),
            (
                "docs/notes.md",
                "one\ntwo\nthree\nfour\nfive needle\nsix\nseven\neight\nnine\nten needle\n"
                    .to_owned(),
            ),
            ("many.txt", many),
            ("sparse.txt", sparse),
            ("huge.txt", huge),
            ("target/debug/out.rs", "fn parse() {}\n".to_owned()),
            ("app.log", "parse failed\n".to_owned()),
            (".github/ci.yml", "run: cargo test -- parse\n".to_owned()),
            (".git/config", "parse = true\n".to_owned()),
            ("long.txt", format!("{}needle\n", "x".repeat(400))),
            ("crlf.txt", "first line\r\nend here\r\n".to_owned()),
            ("data.bin", "needle\0binary\n".to_owned()),
        ]
    }

    async fn check(args: Value, expect: Expect) {
        let files = files();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, content)| (*path, content.as_str()))
            .collect();
        let ws = TestWorkspace::new(&files);
        let output = ws.call(&Grep, args).await;
        expect.assert_eq(&output.replace(&ws.root.display().to_string(), "$ROOT"));
    }

    #[tokio::test]
    async fn finds_matches_in_path_order_skipping_ignored_files_and_dot_git() {
        check(
            json!({"pattern": "parse"}),
            expect![[r#"
                Found 4 matches in 4 files for /parse/

                .github/ci.yml
                1:run: cargo test -- parse

                src/lib.rs
                3:pub fn parse(input: &str) -> Result<(), Error> {

                src/main.rs
                2:    tandem::parse("x").unwrap();

                src/web/app.ts
                1:export function parse() {}"#]],
        )
        .await;
    }

    #[tokio::test]
    async fn cases() {
        let cases: Vec<(Value, Expect)> = vec![
            // Smart case: lowercase ignores case, uppercase matches exactly.
            (
                json!({"pattern": "todo", "path": "src"}),
                expect![[r#"
                    Found 3 matches in 2 files for /todo/

                    src/lib.rs
                    4:    todo!()
                    7:// TODO: handle errors

                    src/main.rs
                    3:    // todo: args"#]],
            ),
            (
                json!({"pattern": "TODO", "path": "src"}),
                expect![[r#"
                    Found 1 match in 1 file for /TODO/

                    src/lib.rs
                    7:// TODO: handle errors"#]],
            ),
            (
                json!({"pattern": "todo", "path": "src", "case_sensitive": true}),
                expect![[r#"
                    Found 2 matches in 2 files for /todo/

                    src/lib.rs
                    4:    todo!()

                    src/main.rs
                    3:    // todo: args"#]],
            ),
            (
                json!({"pattern": "TODO", "path": "src", "case_sensitive": false}),
                expect![[r#"
                    Found 3 matches in 2 files for /TODO/

                    src/lib.rs
                    4:    todo!()
                    7:// TODO: handle errors

                    src/main.rs
                    3:    // todo: args"#]],
            ),
            // Regex and fixed strings.
            (
                json!({"pattern": r"fn\s+\w+\(\)", "path": "src"}),
                expect![[r#"
                    Found 2 matches in 2 files for /fn\s+\w+\(\)/

                    src/lib.rs
                    8:fn helper() {}

                    src/main.rs
                    1:fn main() {"#]],
            ),
            (
                json!({"pattern": "parse(\"x\")", "fixed_strings": true}),
                expect![[r#"
                    Found 1 match in 1 file for /parse("x")/

                    src/main.rs
                    2:    tandem::parse("x").unwrap();"#]],
            ),
            // A single file, and include globs by name and by path.
            (
                json!({"pattern": "fn", "path": "src/main.rs"}),
                expect![[r#"
                    Found 1 match in 1 file for /fn/

                    src/main.rs
                    1:fn main() {"#]],
            ),
            (
                json!({"pattern": "parse", "include": "*.ts"}),
                expect![[r#"
                    Found 1 match in 1 file for /parse/

                    src/web/app.ts
                    1:export function parse() {}"#]],
            ),
            (
                json!({"pattern": "parse", "include": "src/*.rs"}),
                expect![[r#"
                    Found 2 matches in 2 files for /parse/

                    src/lib.rs
                    3:pub fn parse(input: &str) -> Result<(), Error> {

                    src/main.rs
                    2:    tandem::parse("x").unwrap();"#]],
            ),
            (
                json!({"pattern": "parse", "path": "src", "include": "web/**"}),
                expect![[r#"
                    Found 1 match in 1 file for /parse/

                    src/web/app.ts
                    1:export function parse() {}"#]],
            ),
            // Context, with `--` between groups that are not adjacent.
            (
                json!({"pattern": "needle", "path": "docs", "context": 1}),
                expect![[r#"
                    Found 2 matches in 1 file for /needle/

                    docs/notes.md
                    4-four
                    5:five needle
                    6-six
                    --
                    9-nine
                    10:ten needle"#]],
            ),
            (
                json!({"pattern": "needle", "path": "docs", "context": 3}),
                expect![[r#"
                    Found 2 matches in 1 file for /needle/

                    docs/notes.md
                    2-two
                    3-three
                    4-four
                    5:five needle
                    6-six
                    7-seven
                    8-eight
                    9-nine
                    10:ten needle"#]],
            ),
            // Long lines are cut; CRLF line ends are not shown.
            (
                json!({"pattern": "needle", "path": "long.txt"}),
                expect![[r#"
                    Found 1 match in 1 file for /needle/

                    long.txt
                    1:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"#]],
            ),
            (
                json!({"pattern": "line$", "path": "crlf.txt", "context": 1}),
                expect![[r#"
                    Found 1 match in 1 file for /line$/

                    crlf.txt
                    1:first line
                    2-end here"#]],
            ),
            // The per-file cap, with the after-context of the last shown match kept.
            (
                json!({"pattern": "needle", "path": "many.txt"}),
                expect![[r#"
                    Found 25 matches in 1 file for /needle/ (showing 20: at most 20 lines per file)

                    many.txt
                    1:needle 1
                    2:needle 2
                    3:needle 3
                    4:needle 4
                    5:needle 5
                    6:needle 6
                    7:needle 7
                    8:needle 8
                    9:needle 9
                    10:needle 10
                    11:needle 11
                    12:needle 12
                    13:needle 13
                    14:needle 14
                    15:needle 15
                    16:needle 16
                    17:needle 17
                    18:needle 18
                    19:needle 19
                    20:needle 20
                    [20 of 25 matches in this file shown; the next is on line 21: call read_file on many.txt with start_line=21, or narrow the pattern]"#]],
            ),
            (
                json!({"pattern": "needle", "path": "sparse.txt", "context": 1}),
                expect![[r#"
                    Found 22 matches in 1 file for /needle/ (showing 20: at most 20 lines per file)

                    sparse.txt
                    1:needle 1
                    2-after
                    --
                    4-before
                    5:needle 2
                    6-after
                    --
                    8-before
                    9:needle 3
                    10-after
                    --
                    12-before
                    13:needle 4
                    14-after
                    --
                    16-before
                    17:needle 5
                    18-after
                    --
                    20-before
                    21:needle 6
                    22-after
                    --
                    24-before
                    25:needle 7
                    26-after
                    --
                    28-before
                    29:needle 8
                    30-after
                    --
                    32-before
                    33:needle 9
                    34-after
                    --
                    36-before
                    37:needle 10
                    38-after
                    --
                    40-before
                    41:needle 11
                    42-after
                    --
                    44-before
                    45:needle 12
                    46-after
                    --
                    48-before
                    49:needle 13
                    50-after
                    --
                    52-before
                    53:needle 14
                    54-after
                    --
                    56-before
                    57:needle 15
                    58-after
                    --
                    60-before
                    61:needle 16
                    62-after
                    --
                    64-before
                    65:needle 17
                    66-after
                    --
                    68-before
                    69:needle 18
                    70-after
                    --
                    72-before
                    73:needle 19
                    74-after
                    --
                    76-before
                    77:needle 20
                    78-after
                    [20 of 22 matches in this file shown; the next is on line 81: call read_file on sparse.txt with start_line=81, or narrow the pattern]"#]],
            ),
            // Past the overall cap: counts only.
            (
                json!({"pattern": "needle|hay"}),
                expect![[r#"
                    Found 140 matches in 5 files for /needle|hay/ (more than 100: showing match counts per file, most first)
                    huge.txt: 90 matches
                    many.txt: 25 matches
                    sparse.txt: 22 matches
                    docs/notes.md: 2 matches
                    long.txt: 1 match
                    Too many results: narrow your search with a more specific pattern, path or include"#]],
            ),
            // No match, with hints.
            (
                json!({"pattern": "Missing", "path": "src"}),
                expect![[r#"
                    No matches for /Missing/ in src.
                    Hints:
                    - The search was case-sensitive: pass case_sensitive: false to ignore case.
                    - Files ignored by .gitignore and binary files are not searched; check the spelling or search a shorter part of the text."#]],
            ),
            (
                json!({"pattern": "parse(x", "fixed_strings": false, "path": "src", "include": "*.py"}),
                expect!["error: invalid regex /parse(x/: unclosed group. To search for this text literally, call grep again with fixed_strings: true"],
            ),
            (
                json!({"pattern": "a[0-9]+z", "include": "*.py"}),
                expect![[r#"
                    No matches for /a[0-9]+z/ in the workspace (only files matching `*.py`).
                    Hints:
                    - The pattern is a regex: escape special characters such as ( [ { * + ? | with \, or pass fixed_strings: true to search for the text as written.
                    - Check the `include` glob, or leave it out.
                    - Files ignored by .gitignore and binary files are not searched; check the spelling or search a shorter part of the text."#]],
            ),
            (
                json!({"pattern": "binary"}),
                expect![[r#"
                    No matches for /binary/ in the workspace.
                    Hints:
                    - Files ignored by .gitignore and binary files are not searched; check the spelling or search a shorter part of the text. (1 binary file skipped here.)"#]],
            ),
            // Errors.
            (
                json!({"pattern": "a\u{0}b", "fixed_strings": true}),
                expect!["error: `pattern` contains a NUL character, which can never match: files with NUL bytes are binary and skipped"]
            ),
            (
                json!({"pattern": ""}),
                expect![[
                    r#"error: `pattern` is empty: give the text or regex to search for (to list files by name, use glob)"#
                ]],
            ),
            (
                json!({"pattern": "a\nb"}),
                expect![[
                    r#"error: `pattern` contains a line break, but grep matches one line at a time: search for a single line of the text (the most distinctive one)"#
                ]],
            ),
            (json!({"pattern": r"a\nb"}), expect![[r#"error: invalid regex /a\nb/: the literal "\n" is not allowed in a regex. grep matches one line at a time, so a pattern cannot span lines: search for a single line of the text"#]]),
            (
                json!({"pattern": "x", "context": 11}),
                expect![[
                    r#"error: `context` must be at most 10 lines (got 11); to see more around a match, call read_file with a start_line near it"#
                ]],
            ),
            (
                json!({"pattern": "x", "include": "src/[a"}),
                expect!["error: invalid `include` glob `src/[a`: error parsing glob 'src/[a': unclosed character class; missing ']'. Expected a glob such as `*.rs`, `*.{ts,tsx}` or `src/**/*.py`"],
            ),
            (
                json!({"pattern": "x", "path": "nope"}),
                expect![[
                    r#"error: `nope` does not exist (paths are relative to the workspace root); find the right path with glob or list_directory, or leave `path` out to search the whole workspace"#
                ]],
            ),
            (
                json!({"pattern": "x", "path": "../outside"}),
                expect!["error: `../outside` is outside the workspace ($ROOT). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"],
            ),
            (json!({"pattern": "x", "paths": "src"}), expect!["error: invalid arguments for grep: unknown field `paths`, expected one of `pattern`, `path`, `include`, `fixed_strings`, `case_sensitive`, `context`"]),
            (json!({"path": "src"}), expect!["error: invalid arguments for grep: missing field `pattern`"]),
        ];
        for (args, expect) in cases {
            check(args, expect).await;
        }
    }

    #[tokio::test]
    async fn an_explicit_ignored_path_is_searched() {
        check(
            json!({"pattern": "parse", "path": "target"}),
            expect![[r#"
                Found 1 match in 1 file for /parse/

                target/debug/out.rs
                1:fn parse() {}"#]],
        )
        .await;
    }

    #[tokio::test]
    async fn a_small_window_gets_fewer_matching_lines() {
        let lines: String = (1..=18)
            .map(|n| format!("hit number {n} {}\n", "y".repeat(60)))
            .collect();
        let files: Vec<(String, String)> = (1..=5)
            .map(|i| (format!("f{i}.txt"), lines.clone()))
            .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, content)| (path.as_str(), content.as_str()))
            .collect();
        let mut ws = TestWorkspace::new(&files);
        ws.ctx.output_limit = Some(1500);
        let output = Grep.run(json!({"pattern": "hit"}), &ws.ctx).await.unwrap();
        assert!(output.text.len() <= 1500 + 200, "{}", output.text.len());
        assert!(
            output.text.ends_with(
                "Narrow the search (pattern, path or include) or ask for less context.]"
            ),
            "{}",
            output.text
        );
    }

    #[tokio::test]
    async fn too_many_results_list_the_top_files_and_how_many_more() {
        let mut files: Vec<(String, String)> = (1..=25)
            .map(|i| (format!("f{i:02}.txt"), "hit\n".repeat(i % 7 + 1)))
            .collect();
        files.push(("z.txt".to_owned(), "hit\n".repeat(3)));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, content)| (path.as_str(), content.as_str()))
            .collect();
        let ws = TestWorkspace::new(&files);
        let output = Grep.run(json!({"pattern": "hit"}), &ws.ctx).await.unwrap();
        expect![[r#"
            Found 101 matches in 26 files for /hit/ (more than 100: showing match counts per file, most first)
            f06.txt: 7 matches
            f13.txt: 7 matches
            f20.txt: 7 matches
            f05.txt: 6 matches
            f12.txt: 6 matches
            f19.txt: 6 matches
            f04.txt: 5 matches
            f11.txt: 5 matches
            f18.txt: 5 matches
            f25.txt: 5 matches
            f03.txt: 4 matches
            f10.txt: 4 matches
            f17.txt: 4 matches
            f24.txt: 4 matches
            f02.txt: 3 matches
            f09.txt: 3 matches
            f16.txt: 3 matches
            f23.txt: 3 matches
            z.txt: 3 matches
            f01.txt: 2 matches
            … and 6 more files with 9 matches
            Too many results: narrow your search with a more specific pattern, path or include"#]].assert_eq(&output.text);
        assert_eq!(output.locations.len(), MAX_SUMMARY_FILES);
    }

    #[tokio::test]
    async fn locations_point_at_each_files_first_match() {
        let ws = TestWorkspace::new(&[("a.txt", "x\nhit\nhit\n"), ("b/c.txt", "hit\n")]);
        let output = Grep.run(json!({"pattern": "hit"}), &ws.ctx).await.unwrap();
        assert_eq!(
            output.locations,
            vec![
                Location {
                    path: ws.root.join("a.txt"),
                    line: Some(2)
                },
                Location {
                    path: ws.root.join("b/c.txt"),
                    line: Some(1)
                },
            ]
        );
    }

    #[tokio::test]
    async fn a_cancelled_search_says_so() {
        let ws = TestWorkspace::new(&[("a.txt", "hit\n")]);
        ws.ctx.cancel.cancel();
        expect!["error: grep was cancelled before it finished"]
            .assert_eq(&ws.call(&Grep, json!({"pattern": "hit"})).await);
    }

    /// Regression: a line was read into memory whole, however long (a 300 MB file without
    /// line breaks peaked at 433 MB). Now the search of that file stops at it, what was found
    /// before it stands, and the model is told.
    #[tokio::test]
    async fn a_line_too_long_to_hold_ends_that_files_search() {
        let huge = format!(
            "needle before\n{}needle inside\nneedle after\n",
            "x".repeat(MAX_HELD_BYTES + 1)
        );
        let ws = TestWorkspace::new(&[("data.json", huge.as_str()), ("src.rs", "// needle\n")]);
        let output = Grep
            .run(json!({"pattern": "needle"}), &ws.ctx)
            .await
            .unwrap();
        expect![[r#"
            Found 2 matches in 2 files for /needle/

            data.json
            1:needle before

            src.rs
            1:// needle
            [searched only up to a line longer than 4 MiB in data.json: the lines from there on were not searched; use shell tools made for such files (e.g. `grep -o` with a short pattern, or `head -c`)]"#]]
        .assert_eq(&output.text);
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({"pattern": "TODO"}), "Search for `TODO`"),
            (
                json!({"pattern": "fn main", "path": "src", "include": "*.rs"}),
                "Search for `fn main` in src (*.rs)",
            ),
            (json!({"path": "src"}), "Search file contents"),
            (Value::Null, "Search file contents"),
        ];
        for (args, title) in cases {
            assert_eq!(Grep.title(&args), title);
        }
        assert!(Grep
            .title(&json!({"pattern": "y".repeat(100)}))
            .ends_with("yyy…`"));
    }

    #[test]
    fn schema_describes_every_argument() {
        let schema = Grep.parameters();
        for field in [
            "pattern",
            "path",
            "include",
            "fixed_strings",
            "case_sensitive",
            "context",
        ] {
            assert!(
                schema["properties"][field]["description"].is_string(),
                "{field}: {schema}"
            );
        }
        assert_eq!(schema["required"], json!(["pattern"]));
    }
}
