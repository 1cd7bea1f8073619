//! The `read_file` tool: a numbered window of one text file, like `cat -n`, at most 400 lines and
//! 64 KiB a call, ending with the exact call that reads on when it is cut. Also the reading and
//! numbering `read_many_files` shares (`snapshot`, `continuation`): the editor's open buffer
//! before the disk, binary detection, line splitting, per-line and total caps, and what to
//! record as seen. A long source file read without a range is shown as its outline (see
//! `outline.rs`) rather than its first 400 lines.
//!
//! Lines are split as LSP splits them (`\n`, `\r\n` and a lone `\r`) so the numbers the model
//! sees are the ones the editor shows; a final line break does not start an extra line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_syntax::Language;

use super::outline::{cap_outline, outline_of};
use crate::tool::{parse_args, schema_for, SessionState, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};
use tandem_sandbox::editor::BufferText;

/// Lines one call shows at most.
pub(crate) const MAX_LINES: usize = 400;
/// Characters of one line shown at most; the rest is replaced by a notice.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Bytes of numbered lines one file shows at most (header and notice excluded).
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// A NUL byte this early means binary (git's heuristic).
const SNIFF_BYTES: usize = 8 * 1024;
/// Larger files are streamed (only the window is held) instead of read whole.
const MAX_HELD_BYTES: u64 = 64 * 1024 * 1024;
/// Said beside a file's name when its text came from an editor buffer that differs from disk.
pub const UNSAVED_NOTE: &str = "from the editor's unsaved buffer";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to read, relative to the workspace root (e.g. "src/main.rs"); an absolute path
    /// must lie inside the workspace.
    path: String,
    /// First line to show, 1-based. Default: 1.
    #[serde(default)]
    start_line: Option<usize>,
    /// Last line to show, 1-based and inclusive; past the end of the file is fine. Default: 400
    /// lines from start_line. At most 400 lines are shown per call either way.
    #[serde(default)]
    end_line: Option<usize>,
}

pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Reads a text file in the workspace and returns its lines numbered like `cat -n` \
         (right-aligned line number, a tab, the line), under a header with the path and the line \
         range shown. Use it to look at a file before editing it (edits are refused on files \
         changed since you last read them), or to see the lines around a search hit by giving \
         start_line/end_line. At most 400 lines and 64 KiB are shown per call and lines longer \
         than 2000 characters are cut; when the output is cut, it ends with the exact call that \
         reads on (e.g. start_line=401). Without start_line and end_line, a source file longer \
         than 400 lines returns its outline instead (signatures with line numbers, bodies left \
         out): then read the lines you need with start_line/end_line. Prefer grep to find where \
         something is, glob to find files by name, list_directory for a folder's contents, and \
         read_many_files to read several files at once. Binary files (images…) are described, \
         not shown."
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
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return "Read file".to_owned();
        };
        let line = |key: &str| args.get(key).and_then(Value::as_u64);
        match (line("start_line"), line("end_line")) {
            (None, None) => format!("Read {path}"),
            (Some(start), None) => format!("Read {path} (from line {start})"),
            (start, Some(end)) => format!("Read {path} (lines {}-{end})", start.unwrap_or(1)),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let start = args.start_line.unwrap_or(1);
            if start == 0 {
                return Err(ToolError::Respond(
                    "start_line 0 is not a line: lines are numbered from 1; use start_line=1 to \
                     read from the top"
                        .to_owned(),
                ));
            }
            if let Some(end) = args.end_line {
                if end < start {
                    return Err(ToolError::Respond(format!(
                        "end_line {end} is before start_line {start}; give an end_line of at \
                         least {start}, or leave end_line out to read up to {MAX_LINES} lines \
                         from start_line"
                    )));
                }
            }
            let path = ctx.workspace.resolve_for_reading(&args.path)?;
            let shown = ctx.workspace.display(&path);
            // An open buffer is read even when the file is not on disk (a new, unsaved file).
            let buffer = ctx.editor.buffer(&path);
            if buffer.is_none() {
                check_is_file(&path, &shown).await?;
            }

            let file = path.clone();
            // Without a range, a long source file is shown as its outline: the model then asks
            // for the lines it needs instead of paging through all of them.
            let outline_over = (args.start_line.is_none() && args.end_line.is_none())
                .then_some(ctx.syntax.outline_over_lines)
                .zip(Language::from_path(&path));
            let keep_tree = ctx.syntax.check_edits;
            // A small context window shows fewer lines a call; the notice says how to read on.
            let max_bytes = ctx.output_budget(MAX_FILE_BYTES);
            let (snapshot, outline) = tokio::task::spawn_blocking(move || {
                let snapshot = snapshot(buffer, &file, start, args.end_line, max_bytes)?;
                let outline = outline_over.and_then(|(over, language)| {
                    snapshot
                        .outline(language, over, keep_tree.then_some(file.as_path()))
                        .map(|outline| (language, outline))
                });
                Ok::<_, io::Error>((snapshot, outline))
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("reading {shown} panicked: {error}")))?
            .map_err(|error| ToolError::Respond(format!("could not read {shown}: {error}")))?;

            let text = match &snapshot.view {
                View::Binary(description) => {
                    return Ok(ToolOutput::text(format!(
                        "{shown} is a binary file ({description}): it cannot be shown as text"
                    )));
                }
                View::Text(text) => text,
            };
            let unsaved = if snapshot.unsaved {
                format!(", {UNSAVED_NOTE}")
            } else {
                String::new()
            };
            if text.total_lines == 0 {
                snapshot.record(&ctx.session, &path);
                return Ok(ToolOutput {
                    text: format!("{shown} is empty (0 bytes{unsaved})"),
                    locations: vec![location(path, 1)],
                    diff: None,
                    images: Vec::new(),
                });
            }
            if start > text.total_lines {
                let total = text.total_lines;
                return Err(ToolError::Respond(format!(
                    "start_line {start} is past the end of the file ({total} {}); call \
                     read_file with a start_line from 1 to {total}",
                    plural(total, "line", "lines")
                )));
            }

            let total = text.total_lines;
            if let Some((language, outline)) = outline {
                // Not recorded as seen: the model has not read the text it would edit.
                let language = language.name();
                let text = format!(
                    "{shown}: {total} lines, {language}{unsaved} (too long to read whole). Its \
                     outline, with bodies elided:\n{}\nCall read_file with start_line and \
                     end_line to read the lines you need (at most {MAX_LINES} at a time).",
                    cap_outline(&outline)
                );
                return Ok(ToolOutput {
                    text,
                    locations: vec![location(path, 1)],
                    diff: None,
                    images: Vec::new(),
                });
            }
            let range = if text.first == 1 && text.last == total {
                format!("{total} {}", plural(total, "line", "lines"))
            } else if text.first == text.last {
                format!("line {} of {total}", text.first)
            } else {
                format!("lines {}-{} of {total}", text.first, text.last)
            };
            let mut out = format!("{shown} ({range}{unsaved})\n{}", text.body);
            if let Some(notice) = continuation(text, args.end_line, None) {
                out.push('\n');
                out.push_str(&notice);
            }
            let first = text.first;
            snapshot.record(&ctx.session, &path);
            Ok(ToolOutput {
                text: out,
                locations: vec![location(path, first)],
                diff: None,
                images: Vec::new(),
            })
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// Refuses what is not a readable regular file, saying what it is and what to call instead.
pub(crate) async fn check_is_file(path: &Path, shown: &str) -> Result<(), ToolError> {
    let metadata = match tokio::fs::metadata(path).await {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| shown.to_owned());
            return Err(ToolError::Respond(format!(
                "{shown} does not exist; call glob with pattern \"**/{name}\" to find the right \
                 path"
            )));
        }
        Err(error) => {
            return Err(ToolError::Respond(format!(
                "could not read {shown}: {error}"
            )))
        }
    };
    if metadata.is_dir() {
        return Err(ToolError::Respond(format!(
            "{shown} is a directory, not a file; call list_directory with path \"{shown}\" to see \
             what it holds"
        )));
    }
    if !metadata.is_file() {
        // A FIFO or a device would block or never end.
        return Err(ToolError::Respond(format!(
            "{shown} is not a regular file (a pipe, socket or device) and cannot be read"
        )));
    }
    Ok(())
}

fn location(path: PathBuf, line: usize) -> Location {
    Location {
        path,
        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
    }
}

fn plural<'a>(count: usize, one: &'a str, many: &'a str) -> &'a str {
    if count == 1 {
        one
    } else {
        many
    }
}

/// A file as `view` found it.
#[derive(Debug)]
pub enum View {
    /// Not text; what is known about it, e.g. "12.3 KiB, image/png".
    Binary(String),
    Text(NumberedLines),
}

/// A window of a text file, numbered for the model.
#[derive(Debug)]
pub struct NumberedLines {
    /// Lines in the file (0 when it is empty).
    pub total_lines: usize,
    /// The first line of the window, 1-based.
    pub first: usize,
    /// The last line shown; `first - 1` when not even one fit in the byte budget.
    pub last: usize,
    /// The last line the window held before the byte budget: `last` is smaller when the budget
    /// cut the window.
    pub window_last: usize,
    /// `{number:>6}\t{line}` lines joined by `\n`, without a final newline.
    pub body: String,
}

/// A file as a read tool found it: the window to show and what the model saw of it.
#[derive(Debug)]
pub struct Snapshot {
    pub view: View,
    /// The whole content, to record as seen; `None` when the file was too large to hold.
    pub content: Option<Vec<u8>>,
    /// The buffer's version, when the text came from an open buffer.
    pub version: Option<i32>,
    /// The text came from an open buffer that differs from the disk (or has no file there).
    pub unsaved: bool,
}

impl Snapshot {
    /// The outline of a text file longer than `over` lines; `None` for a shorter file, one too
    /// large to hold, one the query finds nothing in, or one that cannot be parsed (it is
    /// shown as text then, as for any other language). Blocks (it parses). With `keep`, the
    /// file's path, the tree goes to the syntax cache, for the edit guard to start the file's
    /// next edit from (and a second read of the same text to skip the parse).
    fn outline(&self, language: Language, over: usize, keep: Option<&Path>) -> Option<String> {
        let View::Text(lines) = &self.view else {
            return None;
        };
        if lines.total_lines <= over {
            return None;
        }
        let text = std::str::from_utf8(self.content.as_deref()?).ok()?;
        // Editors hide a byte-order mark, and the outline's line numbers are the editor's.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let outline = match keep {
            Some(path) => crate::syntax_cache::cache()
                .parse(path, language, text)
                .and_then(|parsed| {
                    let items = tandem_syntax::outline_items(language, parsed.tree(), text)?;
                    Ok((!items.is_empty()).then(|| tandem_syntax::render_outline(&items, text)))
                }),
            None => outline_of(language, text),
        };
        match outline {
            Ok(outline) => outline,
            Err(error) => {
                tracing::warn!("no outline for a {language} file: {error}");
                None
            }
        }
    }

    /// Records that the model has seen the whole file, so that it may edit it. A partial
    /// window counts: the edit tools check the file is unchanged, not that every line was
    /// shown. A binary file is not recorded: there is nothing the edit tools could do with it.
    pub(crate) fn record(&self, session: &SessionState, path: &Path) {
        if matches!(self.view, View::Binary(_)) {
            return;
        }
        match &self.content {
            Some(content) => session.mark_seen(path, content, self.version),
            // Rare enough to pay a second read for; no tool edits a file this large anyway.
            None => session.mark_read(path),
        }
    }
}

/// Reads `path` as the user sees it, `buffer` (the editor's open buffer) when there is one,
/// else the disk, and numbers the window from `start` to `end` within `budget` bytes (see
/// `view`). Blocks.
pub fn snapshot(
    buffer: Option<BufferText>,
    path: &Path,
    start: usize,
    end: Option<usize>,
    budget: usize,
) -> io::Result<Snapshot> {
    if let Some(buffer) = buffer {
        let bytes = buffer.text.into_bytes();
        let view = view(&bytes[..], path, bytes.len() as u64, start, end, budget)?;
        // Editors hide a byte-order mark, so a buffer never has one.
        let unsaved = std::fs::read(path).map_or(true, |disk| {
            disk.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&disk) != bytes.as_slice()
        });
        return Ok(Snapshot {
            view,
            content: Some(bytes),
            version: Some(buffer.version),
            unsaved,
        });
    }
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    if len > MAX_HELD_BYTES {
        let reader = BufReader::with_capacity(64 * 1024, file);
        return Ok(Snapshot {
            view: view(reader, path, len, start, end, budget)?,
            content: None,
            version: None,
            unsaved: false,
        });
    }
    // The whole content is hashed to record what the model saw; sniffing first spares reading
    // a large binary file whole for nothing.
    let mut bytes = Vec::new();
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut bytes)?;
    if !bytes.contains(&0) {
        file.read_to_end(&mut bytes)?;
    }
    Ok(Snapshot {
        view: view(&bytes[..], path, len, start, end, budget)?,
        content: Some(bytes),
        version: None,
        unsaved: false,
    })
}

/// Numbers the lines of `reader` (the content of `path`, `len` bytes) from `start` to `end`
/// (1-based, inclusive, default and at most `MAX_LINES` lines), keeping the body within
/// `budget` bytes. Only the window is held in memory, and of each line only what can be shown:
/// a file that is one 300 MB line costs a few kilobytes. A `start` past the end gives an empty
/// window: the caller decides what to say.
fn view(
    mut reader: impl BufRead,
    path: &Path,
    len: u64,
    start: usize,
    end: Option<usize>,
    budget: usize,
) -> io::Result<View> {
    let window_end = end
        .unwrap_or(usize::MAX)
        .min(start.saturating_add(MAX_LINES - 1));
    let mut offset = 0usize;
    let mut total_lines = 0;
    let mut window = Vec::new();
    let mut line = LineReader::default();
    // A `\r` ended the last line; a `\n` right after it belongs to the same break.
    let mut after_cr = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        if offset < SNIFF_BYTES && chunk[..chunk.len().min(SNIFF_BYTES - offset)].contains(&0) {
            return Ok(View::Binary(binary_description(path, len, None)));
        }
        let consumed = chunk.len();
        let mut rest = chunk;
        while !rest.is_empty() {
            if after_cr && rest[0] == b'\n' {
                rest = &rest[1..];
                after_cr = false;
                continue;
            }
            after_cr = false;
            let in_window = (start..=window_end).contains(&(total_lines + 1));
            match memchr::memchr2(b'\n', b'\r', rest) {
                Some(at) => {
                    line.push(&rest[..at], in_window);
                    after_cr = rest[at] == b'\r';
                    rest = &rest[at + 1..];
                    total_lines += 1;
                    match line.finish(total_lines == 1) {
                        Some(text) if in_window => window.push(text),
                        Some(_) => {}
                        None => return Ok(not_utf8(path, len, total_lines)),
                    }
                }
                None => {
                    line.push(rest, in_window);
                    rest = &[];
                }
            }
        }
        offset = offset.saturating_add(consumed);
        reader.consume(consumed);
    }
    // A last line without a line break ends at the end of the file.
    if line.bytes > 0 {
        total_lines += 1;
        let in_window = (start..=window_end).contains(&total_lines);
        match line.finish(total_lines == 1) {
            Some(text) if in_window => window.push(text),
            Some(_) => {}
            None => return Ok(not_utf8(path, len, total_lines)),
        }
    }

    let mut body = String::new();
    let mut last = start - 1;
    for (index, line) in window.iter().enumerate() {
        let number = start + index;
        let numbered = format!("{number:>6}\t{line}");
        let separator = usize::from(!body.is_empty());
        if body.len() + separator + numbered.len() > budget {
            break;
        }
        if separator == 1 {
            body.push('\n');
        }
        body.push_str(&numbered);
        last = number;
    }
    Ok(View::Text(NumberedLines {
        total_lines,
        first: start,
        last,
        window_last: start - 1 + window.len(),
        body,
    }))
}

fn not_utf8(path: &Path, len: u64, line: usize) -> View {
    View::Binary(binary_description(path, len, Some(line)))
}

/// Bytes of a line kept to show it: enough for `MAX_LINE_CHARS` characters of any width.
const KEPT_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// One line as it streams past, of which only the first `KEPT_LINE_BYTES` are held; the rest
/// is checked to be UTF-8 and its characters counted, then dropped.
#[derive(Default)]
struct LineReader {
    kept: Vec<u8>,
    /// Bytes of the line so far, kept or not.
    bytes: usize,
    /// Characters past the kept bytes (UTF-8 sequences that start there).
    dropped_chars: usize,
    /// The end of a character split between two pieces of the line.
    split_char: Vec<u8>,
    invalid: bool,
}

impl LineReader {
    /// Adds the next piece of the line; `keep` says whether the line will be shown.
    fn push(&mut self, piece: &[u8], keep: bool) {
        self.bytes += piece.len();
        if !self.invalid && !utf8_continues(&mut self.split_char, piece) {
            self.invalid = true;
        }
        let room = if keep {
            KEPT_LINE_BYTES.saturating_sub(self.kept.len())
        } else {
            0
        };
        let (kept, dropped) = piece.split_at(room.min(piece.len()));
        self.kept.extend_from_slice(kept);
        if !dropped.is_empty() {
            self.dropped_chars += count_chars(dropped);
        }
    }

    /// Ends the line: its text as shown (cut to `MAX_LINE_CHARS` characters, saying how much
    /// was left out), or `None` when it is not UTF-8. Resets for the next line.
    fn finish(&mut self, first_line: bool) -> Option<String> {
        let line = std::mem::take(self);
        if line.invalid || !line.split_char.is_empty() {
            return None;
        }
        // The kept bytes may end inside a character that the dropped part completes.
        let kept = match std::str::from_utf8(&line.kept) {
            Ok(kept) => kept,
            Err(error) => std::str::from_utf8(&line.kept[..error.valid_up_to()]).ok()?,
        };
        let cut_inside = kept.len() < line.kept.len();
        // That character's lead byte was kept, so it was counted as neither.
        let dropped_chars = line.dropped_chars + usize::from(cut_inside);
        // Editors hide a byte-order mark; so do we.
        let kept = if first_line {
            kept.strip_prefix('\u{feff}').unwrap_or(kept)
        } else {
            kept
        };
        Some(match kept.char_indices().nth(MAX_LINE_CHARS) {
            None if dropped_chars == 0 => kept.to_owned(),
            None => format!("{kept}… [line truncated, {dropped_chars} more characters]"),
            Some((cut, _)) => {
                let more = kept[cut..].chars().count() + dropped_chars;
                format!("{}… [line truncated, {more} more characters]", &kept[..cut])
            }
        })
    }
}

/// Characters that start in `bytes` (which may begin and end inside one): the bytes that are
/// not UTF-8 continuation bytes. Counted by the standard library where the bytes allow, since
/// a line can be hundreds of megabytes long.
fn count_chars(bytes: &[u8]) -> usize {
    let is_continuation = |byte: &u8| byte & 0xC0 == 0x80;
    let head = bytes
        .iter()
        .take_while(|byte| is_continuation(byte))
        .count();
    let bytes = &bytes[head..];
    match std::str::from_utf8(bytes) {
        Ok(text) => text.chars().count(),
        Err(error) if error.error_len().is_none() => {
            let (valid, tail) = bytes.split_at(error.valid_up_to());
            std::str::from_utf8(valid).map_or(0, |text| text.chars().count())
                + tail.iter().filter(|byte| !is_continuation(byte)).count()
        }
        // Not UTF-8: the line is reported as such and the count is never shown.
        Err(_) => 0,
    }
}

/// Checks that `piece` continues valid UTF-8 after `split_char` (the start of a character the
/// previous piece ended inside), leaving in `split_char` the start of one this piece ends
/// inside. False at the first invalid byte.
fn utf8_continues(split_char: &mut Vec<u8>, mut piece: &[u8]) -> bool {
    if let Some(&lead) = split_char.first() {
        let width = match lead {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        let take = (width - split_char.len()).min(piece.len());
        split_char.extend_from_slice(&piece[..take]);
        piece = &piece[take..];
        if split_char.len() < width {
            return true;
        }
        if std::str::from_utf8(split_char).is_err() {
            return false;
        }
        split_char.clear();
    }
    match std::str::from_utf8(piece) {
        Ok(_) => true,
        // The piece ends inside a character: the next one must complete it.
        Err(error) if error.error_len().is_none() => {
            split_char.extend_from_slice(&piece[error.valid_up_to()..]);
            true
        }
        Err(_) => false,
    }
}

/// The notice that ends a cut window, with the call that reads on; `None` when the window shows
/// everything that was asked for (up to `end`, or the end of the file). `path` is named in the
/// call when the reader of the notice cannot tell which file it is about.
pub fn continuation(
    lines: &NumberedLines,
    end: Option<usize>,
    path: Option<&str>,
) -> Option<String> {
    let wanted = end.unwrap_or(usize::MAX).min(lines.total_lines);
    if lines.last >= wanted {
        return None;
    }
    let next = lines.last + 1;
    let mut call = String::from("call read_file with ");
    if let Some(path) = path {
        call.push_str(&format!("path=\"{path}\" and "));
    }
    call.push_str(&format!("start_line={next}"));
    if let Some(end) = end.filter(|&end| end < lines.total_lines) {
        call.push_str(&format!(" and end_line={end}"));
    }
    Some(format!(
        "[showing lines {}-{} of {}; {call} to continue]",
        lines.first, lines.last, lines.total_lines
    ))
}

/// What is known about a binary file: its size, its type when the extension says, or where it
/// stopped being UTF-8 (the model may want to convert it with the shell).
fn binary_description(path: &Path, len: u64, invalid_utf8_line: Option<usize>) -> String {
    let size = match len {
        1 => "1 byte".to_owned(),
        0 | 2..1024 => format!("{len} bytes"),
        1024..0x10_0000 => format!("{:.1} KiB", len as f64 / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", len as f64 / f64::from(0x10_0000)),
        _ => format!("{:.1} GiB", len as f64 / f64::from(0x4000_0000)),
    };
    let extension = path
        .extension()
        .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
    // SVG is XML text: it is read like any other text file and never gets here as an image.
    let mime = match extension.as_deref() {
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("gif") => Some("image/gif"),
        Some("webp") => Some("image/webp"),
        Some("bmp") => Some("image/bmp"),
        Some("ico") => Some("image/x-icon"),
        Some("tif" | "tiff") => Some("image/tiff"),
        Some("avif") => Some("image/avif"),
        Some("pdf") => Some("application/pdf"),
        Some("zip") => Some("application/zip"),
        Some("gz" | "tgz") => Some("application/gzip"),
        Some("wasm") => Some("application/wasm"),
        _ => None,
    };
    match (mime, invalid_utf8_line) {
        (Some(mime), _) => format!("{size}, {mime}"),
        (None, Some(line)) => format!("{size}, not valid UTF-8 at line {line}"),
        (None, None) => size,
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    /// The text the model sees, with the workspace's absolute path replaced by `<ws>` and, for
    /// long outputs, the middle lines and the middle of long numbered lines elided (marked as
    /// such), so the snapshots stay readable. `cut_line_keeps_exactly_the_cap` checks what the
    /// elided middle of a cut line holds.
    fn shown(ws: &TestWorkspace, text: &str) -> String {
        let text = text.replace(ws.root.to_str().unwrap(), "<ws>");
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let chars: Vec<char> = line.chars().collect();
                if chars.len() > 120 && line.contains('\t') {
                    let head: String = chars[..30].iter().collect();
                    let tail: String = chars[chars.len() - 60..].iter().collect();
                    format!(
                        "{head}⟪{} chars elided by the test⟫{tail}",
                        chars.len() - 90
                    )
                } else {
                    line.to_owned()
                }
            })
            .collect();
        if lines.len() <= 16 {
            return lines.join("\n");
        }
        let elided = lines.len() - 8;
        format!(
            "{}\n⟪{elided} lines elided by the test⟫\n{}",
            lines[..4].join("\n"),
            lines[lines.len() - 4..].join("\n")
        )
    }

    fn numbered(count: usize, width: usize) -> String {
        (1..=count)
            .map(|n| format!("line {n} {}\n", "x".repeat(width)))
            .collect()
    }

    #[tokio::test]
    async fn cases() {
        let long_file = numbered(1234, 0);
        let wide_file = numbered(500, 1000);
        let long_line = format!("short\n{}\nend\n", "é".repeat(2345));
        let ws = TestWorkspace::new(&[
            ("src/lib.rs", "fn main() {\n    println!(\"hi\");\n}\n"),
            ("one.txt", "no newline at the end"),
            ("long.txt", &long_file),
            ("wide.txt", &wide_file),
            ("long_line.txt", &long_line),
            ("crlf.txt", "first\r\nsecond\r\n\r\nfourth"),
            ("lone_cr.txt", "mac\rclassic\r"),
            ("bom.txt", "\u{feff}with a BOM\nsecond\n"),
            ("blank_lines.txt", "\n\n"),
            ("empty.txt", ""),
            ("logo.png", "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR"),
            ("data.bin", "abc\0def"),
            ("icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n"),
        ]);
        std::fs::write(ws.root.join("legacy.txt"), b"caf\xe9?\nna\xefve\n").unwrap();
        std::fs::write(ws.root.join("big.jpg"), vec![0xffu8; 12_600]).unwrap();

        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"path": "src/lib.rs"}),
                expect![[r#"
                    src/lib.rs (3 lines)
                         1	fn main() {
                         2	    println!("hi");
                         3	}"#]],
            ),
            (
                json!({"path": "./src/../src/lib.rs", "start_line": 2}),
                expect![[r#"
                    src/lib.rs (lines 2-3 of 3)
                         2	    println!("hi");
                         3	}"#]],
            ),
            (
                json!({"path": "src/lib.rs", "start_line": 2, "end_line": 2}),
                expect![[r#"
                    src/lib.rs (line 2 of 3)
                         2	    println!("hi");"#]],
            ),
            (
                json!({"path": "src/lib.rs", "end_line": 99}),
                expect![[r#"
                    src/lib.rs (3 lines)
                         1	fn main() {
                         2	    println!("hi");
                         3	}"#]],
            ),
            (
                json!({"path": "one.txt"}),
                expect![[r#"
                    one.txt (1 line)
                         1	no newline at the end"#]],
            ),
            (
                json!({"path": "long.txt"}),
                expect![[r#"
                    long.txt (lines 1-400 of 1234)
                         1	line 1 
                         2	line 2 
                         3	line 3 
                    ⟪394 lines elided by the test⟫
                       398	line 398 
                       399	line 399 
                       400	line 400 
                    [showing lines 1-400 of 1234; call read_file with start_line=401 to continue]"#]],
            ),
            (
                json!({"path": "long.txt", "start_line": 1001}),
                expect![[r#"
                    long.txt (lines 1001-1234 of 1234)
                      1001	line 1001 
                      1002	line 1002 
                      1003	line 1003 
                    ⟪227 lines elided by the test⟫
                      1231	line 1231 
                      1232	line 1232 
                      1233	line 1233 
                      1234	line 1234 "#]],
            ),
            (
                json!({"path": "long.txt", "start_line": 101, "end_line": 1000}),
                expect![[r#"
                    long.txt (lines 101-500 of 1234)
                       101	line 101 
                       102	line 102 
                       103	line 103 
                    ⟪394 lines elided by the test⟫
                       498	line 498 
                       499	line 499 
                       500	line 500 
                    [showing lines 101-500 of 1234; call read_file with start_line=501 and end_line=1000 to continue]"#]],
            ),
            (
                // The 64 KiB cap cuts before the 400-line cap.
                json!({"path": "wide.txt"}),
                expect![[r#"
                    wide.txt (lines 1-64 of 500)
                         1	line 1 xxxxxxxxxxxxxxxx⟪924 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                         2	line 2 xxxxxxxxxxxxxxxx⟪924 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                         3	line 3 xxxxxxxxxxxxxxxx⟪924 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                    ⟪58 lines elided by the test⟫
                        62	line 62 xxxxxxxxxxxxxxx⟪925 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                        63	line 63 xxxxxxxxxxxxxxx⟪925 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                        64	line 64 xxxxxxxxxxxxxxx⟪925 chars elided by the test⟫xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                    [showing lines 1-64 of 500; call read_file with start_line=65 to continue]"#]],
            ),
            (
                json!({"path": "long_line.txt"}),
                expect![[r#"
                    long_line.txt (3 lines)
                         1	short
                         2	ééééééééééééééééééééééé⟪1956 chars elided by the test⟫ééééééééééééééééééééé… [line truncated, 345 more characters]
                         3	end"#]],
            ),
            (
                json!({"path": "crlf.txt"}),
                expect![[r#"
                    crlf.txt (4 lines)
                         1	first
                         2	second
                         3	
                         4	fourth"#]],
            ),
            (
                json!({"path": "lone_cr.txt"}),
                expect![[r#"
                    lone_cr.txt (2 lines)
                         1	mac
                         2	classic"#]],
            ),
            (
                json!({"path": "bom.txt"}),
                expect![[r#"
                    bom.txt (2 lines)
                         1	with a BOM
                         2	second"#]],
            ),
            (
                json!({"path": "blank_lines.txt"}),
                expect![[r#"
                    blank_lines.txt (2 lines)
                         1	
                         2	"#]],
            ),
            (
                json!({"path": "icon.svg"}),
                expect![[r#"
                    icon.svg (1 line)
                         1	<svg xmlns="http://www.w3.org/2000/svg"/>"#]],
            ),
            (
                json!({"path": "empty.txt", "start_line": 5}),
                expect!["empty.txt is empty (0 bytes)"],
            ),
            (
                json!({"path": "logo.png"}),
                expect!["logo.png is a binary file (17 bytes, image/png): it cannot be shown as text"],
            ),
            (
                json!({"path": "big.jpg"}),
                expect!["big.jpg is a binary file (12.3 KiB, image/jpeg): it cannot be shown as text"],
            ),
            (
                json!({"path": "data.bin"}),
                expect!["data.bin is a binary file (7 bytes): it cannot be shown as text"],
            ),
            (
                json!({"path": "legacy.txt"}),
                expect!["legacy.txt is a binary file (12 bytes, not valid UTF-8 at line 1): it cannot be shown as text"],
            ),
            (
                json!({"path": "long.txt", "start_line": 1300}),
                expect!["error: start_line 1300 is past the end of the file (1234 lines); call read_file with a start_line from 1 to 1234"],
            ),
            (
                json!({"path": "one.txt", "start_line": 2}),
                expect!["error: start_line 2 is past the end of the file (1 line); call read_file with a start_line from 1 to 1"],
            ),
            (
                json!({"path": "src/lib.rs", "start_line": 3, "end_line": 2}),
                expect!["error: end_line 2 is before start_line 3; give an end_line of at least 3, or leave end_line out to read up to 400 lines from start_line"],
            ),
            (
                json!({"path": "src/lib.rs", "start_line": 0}),
                expect!["error: start_line 0 is not a line: lines are numbered from 1; use start_line=1 to read from the top"],
            ),
            (
                json!({"path": "src"}),
                expect![[r#"error: src is a directory, not a file; call list_directory with path "src" to see what it holds"#]],
            ),
            (
                json!({"path": "src/main.rs"}),
                expect![[r#"error: src/main.rs does not exist; call glob with pattern "**/main.rs" to find the right path"#]],
            ),
            (
                json!({"path": "../outside.txt"}),
                expect!["error: `../outside.txt` is outside the workspace (<ws>). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"],
            ),
            (
                json!({"path": ""}),
                expect!["error: `` is not a usable path: the path is empty"],
            ),
            (
                json!({"file": "src/lib.rs"}),
                expect!["error: invalid arguments for read_file: unknown field `file`, expected one of `path`, `start_line`, `end_line`"],
            ),
            (
                json!({"path": "src/lib.rs", "start_line": -1}),
                expect!["error: invalid arguments for read_file: invalid value: integer `-1`, expected usize"],
            ),
        ];
        for (args, expected) in cases {
            let text = ws.call(&ReadFile, args).await;
            expected.assert_eq(&shown(&ws, &text));
        }
    }

    #[tokio::test]
    async fn a_read_is_recorded_and_located_but_a_binary_file_is_not_read() {
        let ws = TestWorkspace::new(&[("src/lib.rs", "a\nb\nc\n"), ("logo.png", "\0")]);
        let output = ReadFile
            .run(json!({"path": "src/lib.rs", "start_line": 2}), &ws.ctx)
            .await
            .unwrap();
        let path = ws.root.join("src/lib.rs");
        assert_eq!(output.locations, vec![location(path.clone(), 2)]);
        assert!(ws.ctx.session.last_seen(&path).is_some());

        ws.call(&ReadFile, json!({"path": "logo.png"})).await;
        assert_eq!(ws.ctx.session.last_seen(&ws.root.join("logo.png")), None);
    }

    #[tokio::test]
    async fn an_open_buffer_is_read_instead_of_the_disk() {
        let mut ws =
            TestWorkspace::new(&[("edited.rs", "on disk\n"), ("same.rs", "\u{feff}same\n")]);
        let editor = ws.memory_editor();
        let edited = ws.root.join("edited.rs");
        let same = ws.root.join("same.rs");
        let new = ws.root.join("new.rs");
        editor.set(&edited, "typed\r\nnot saved", 7);
        editor.set(&same, "same\n", 2);
        editor.set(&new, "", 1);
        let mut out = String::new();
        for path in ["edited.rs", "same.rs", "new.rs"] {
            out.push_str(&ws.call(&ReadFile, json!({ "path": path })).await);
            out.push('\n');
        }
        expect![[r#"
            edited.rs (2 lines, from the editor's unsaved buffer)
                 1	typed
                 2	not saved
            same.rs (1 line)
                 1	same
            new.rs is empty (0 bytes, from the editor's unsaved buffer)
        "#]]
        .assert_eq(&out);
        // Recorded as seen at the buffer's version, so the edit tools accept it.
        let seen = ws.ctx.session.last_seen(&edited).unwrap();
        assert_eq!(seen.version, Some(7));
        assert_eq!(
            ws.ctx.session.freshness(&edited, ws.ctx.editor.as_ref()),
            crate::Freshness::Current
        );
        assert_eq!(ws.ctx.session.last_seen(&new).unwrap().version, Some(1));
    }

    /// A window of a file counts as seeing the whole file: what is recorded is the hash of all
    /// of it, so a change outside the window is a change too.
    #[tokio::test]
    async fn a_small_window_reads_fewer_lines_and_says_how_to_read_on() {
        // 2,000 lines of about 80 bytes: 400 of them (32 KB) would fill an 8k-token window.
        let mut ws = TestWorkspace::new(&[("big.txt", &numbered(2000, 70))]);
        ws.ctx.output_limit = Some(4096);
        let text = ws.call(&ReadFile, json!({"path": "big.txt"})).await;
        assert!(text.len() <= 4096 + 200, "{} bytes", text.len());
        assert!(
            text.ends_with(
                "[showing lines 1-47 of 2000; call read_file with start_line=48 to continue]"
            ),
            "{text}"
        );
        // Never below a kilobyte, however small the window.
        ws.ctx.output_limit = Some(10);
        let text = ws
            .call(&ReadFile, json!({"path": "big.txt", "start_line": 48}))
            .await;
        assert!(text.contains("line 48 "), "{text}");
        assert!(text.len() <= 1024 + 200, "{} bytes", text.len());
    }

    #[tokio::test]
    async fn a_partial_read_records_the_whole_file() {
        let ws = TestWorkspace::new(&[("long.txt", &numbered(1000, 0))]);
        let path = ws.root.join("long.txt");
        ws.call(
            &ReadFile,
            json!({"path": "long.txt", "start_line": 10, "end_line": 12}),
        )
        .await;
        let seen = ws.ctx.session.last_seen(&path).unwrap();
        assert_eq!(seen.hash, crate::content_hash(numbered(1000, 0).as_bytes()));
    }

    #[tokio::test]
    async fn a_long_source_file_read_without_a_range_shows_its_outline() {
        let functions: String = (0..40)
            .map(|n| {
                format!(
                    "fn step_{n}(x: u32) -> u32 {{\n{}    x\n}}\n\n",
                    "    // …\n".repeat(8)
                )
            })
            .collect();
        let source = format!("//! Steps.\n\npub struct Steps;\n\n{functions}");
        let comments = "// nothing but comments\n".repeat(500);
        let mut ws =
            TestWorkspace::new(&[("src/steps.rs", &source), ("src/comments.rs", &comments)]);
        let text = ws.call(&ReadFile, json!({"path": "src/steps.rs"})).await;
        expect![[r#"
            src/steps.rs: 484 lines, rust (too long to read whole). Its outline, with bodies elided:
                 3	pub struct Steps;
                 5	fn step_0(x: u32) -> u32 {
                  	    … 10 lines (6-15)
            ⟪75 lines elided by the test⟫
                  	    … 10 lines (462-471)
               473	fn step_39(x: u32) -> u32 {
                  	    … 10 lines (474-483)
            Call read_file with start_line and end_line to read the lines you need (at most 400 at a time)."#]]
        .assert_eq(&shown(&ws, &text));
        // The model has not seen the text, so it cannot edit the file yet.
        let path = ws.root.join("src/steps.rs");
        assert_eq!(ws.ctx.session.last_seen(&path), None);

        // A range reads the text, and so does a file the outline finds nothing in.
        let text = ws
            .call(&ReadFile, json!({"path": "src/steps.rs", "start_line": 1}))
            .await;
        assert!(
            text.starts_with("src/steps.rs (lines 1-400 of 484)"),
            "{text}"
        );
        assert!(ws.ctx.session.last_seen(&path).is_some());
        let text = ws.call(&ReadFile, json!({"path": "src/comments.rs"})).await;
        assert!(
            text.starts_with("src/comments.rs (lines 1-400 of 500)"),
            "{text}"
        );

        // The threshold is a setting.
        ws.ctx.syntax.outline_over_lines = 1000;
        let text = ws.call(&ReadFile, json!({"path": "src/steps.rs"})).await;
        assert!(
            text.starts_with("src/steps.rs (lines 1-400 of 484)"),
            "{text}"
        );
    }

    #[test]
    fn a_nul_after_the_first_8_kib_is_text_and_the_window_holds_at_most_400_lines() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("late_nul.txt");
        std::fs::write(&path, format!("{}\n\0\n", "a".repeat(SNIFF_BYTES))).unwrap();
        let View::Text(lines) = snapshot(None, &path, 1, None, MAX_FILE_BYTES).unwrap().view else {
            panic!("a NUL after 8 KiB is text");
        };
        assert_eq!((lines.total_lines, lines.last), (2, 2));

        std::fs::write(&path, format!("{}\0", "a".repeat(SNIFF_BYTES - 1))).unwrap();
        assert!(matches!(
            snapshot(None, &path, 1, None, MAX_FILE_BYTES).unwrap().view,
            View::Binary(_)
        ));

        std::fs::write(&path, numbered(1000, 0)).unwrap();
        let View::Text(lines) = snapshot(None, &path, 10, Some(900), MAX_FILE_BYTES)
            .unwrap()
            .view
        else {
            panic!("text");
        };
        assert_eq!((lines.first, lines.last, lines.window_last), (10, 409, 409));
    }

    /// What a line looks like cut to the cap: the reference `LineReader` must agree with.
    fn cut_line(line: &str) -> String {
        match line.char_indices().nth(MAX_LINE_CHARS) {
            None => line.to_owned(),
            Some((cut, _)) => {
                let more = line[cut..].chars().count();
                format!("{}… [line truncated, {more} more characters]", &line[..cut])
            }
        }
    }

    /// `line` fed to a `LineReader` in pieces of `size` bytes (cutting characters apart).
    fn read_in_pieces(line: &[u8], size: usize) -> Option<String> {
        let mut reader = LineReader::default();
        for piece in line.chunks(size) {
            reader.push(piece, true);
        }
        reader.finish(false)
    }

    #[test]
    fn lines_are_cut_to_exactly_the_cap_however_they_arrive() {
        let lines = [
            "short".to_owned(),
            "é".repeat(MAX_LINE_CHARS),
            "é".repeat(MAX_LINE_CHARS + 1),
            // The kept bytes end inside a character.
            format!("x{}", "é".repeat(5000)),
            format!("{}🦀", "a".repeat(KEPT_LINE_BYTES - 2)),
            "🦀".repeat(3000),
        ];
        for line in lines {
            for size in [1, 3, 7, 1000, KEPT_LINE_BYTES, line.len()] {
                assert_eq!(
                    read_in_pieces(line.as_bytes(), size).as_deref(),
                    Some(cut_line(&line).as_str()),
                    "{} bytes in pieces of {size}",
                    line.len()
                );
            }
        }
        assert_eq!(
            cut_line(&"é".repeat(MAX_LINE_CHARS + 1)),
            format!(
                "{}… [line truncated, 1 more characters]",
                "é".repeat(MAX_LINE_CHARS)
            )
        );
    }

    #[test]
    fn invalid_utf8_past_the_kept_bytes_is_still_found() {
        let mut line = "a".repeat(KEPT_LINE_BYTES * 2).into_bytes();
        line.push(0xFF);
        assert_eq!(read_in_pieces(&line, 4096), None);
        // A character split between pieces is not invalid; one left unfinished is.
        assert!(read_in_pieces("é🦀".as_bytes(), 1).is_some());
        assert_eq!(read_in_pieces(&"é🦀".as_bytes()[..5], 1), None);
    }

    /// A line far longer than what is kept shows its start and counts the rest. (That it is
    /// not held whole is checked end to end: `tools_read_a_file_that_is_one_huge_line_in_bounded_memory`.)
    #[test]
    fn a_huge_line_shows_its_start_and_counts_the_rest() {
        struct Endless {
            served: usize,
            len: usize,
            buffer: Vec<u8>,
        }
        impl Read for Endless {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                unreachable!("view reads through BufRead")
            }
        }
        impl BufRead for Endless {
            fn fill_buf(&mut self) -> io::Result<&[u8]> {
                let left = self.len - self.served;
                Ok(&self.buffer[..left.min(self.buffer.len())])
            }
            fn consume(&mut self, amount: usize) {
                self.served += amount;
            }
        }
        let len = 20 << 20;
        let reader = Endless {
            served: 0,
            len,
            buffer: vec![b'x'; 64 * 1024],
        };
        let path = Path::new("minified.js");
        let View::Text(lines) = view(reader, path, len as u64, 1, None, MAX_FILE_BYTES).unwrap()
        else {
            panic!("text");
        };
        assert_eq!(lines.total_lines, 1);
        assert_eq!(
            lines.body,
            format!(
                "     1\t{}… [line truncated, {} more characters]",
                "x".repeat(MAX_LINE_CHARS),
                len - MAX_LINE_CHARS
            )
        );
    }

    #[test]
    fn titles() {
        let cases = [
            (json!({"path": "src/lib.rs"}), "Read src/lib.rs"),
            (
                json!({"path": "src/lib.rs", "start_line": 10}),
                "Read src/lib.rs (from line 10)",
            ),
            (
                json!({"path": "src/lib.rs", "end_line": 20}),
                "Read src/lib.rs (lines 1-20)",
            ),
            (
                json!({"path": "src/lib.rs", "start_line": 10, "end_line": 20}),
                "Read src/lib.rs (lines 10-20)",
            ),
            (json!({"file": "x"}), "Read file"),
            (Value::Null, "Read file"),
        ];
        for (args, title) in cases {
            assert_eq!(ReadFile.title(&args), title);
        }
    }
}
