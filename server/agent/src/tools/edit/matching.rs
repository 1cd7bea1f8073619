//! Finding old_string in the file and building the new content: the exact match, then matches
//! that tolerate line-ending, trailing-whitespace and indentation differences (each accepted
//! only as a unique match unless allow_multiple), and the line arithmetic the rest of the tool
//! shares.

use std::ops::Range;

use super::closest::not_found_message;
use super::indent::{
    describe_indentation_difference, file_unit, indentation, source_unit, Reindent,
};
use super::Args;
use crate::tools::ToolError;

/// What an edit does to the file, computed before anything is written.
#[derive(Debug)]
pub(super) struct Plan {
    /// The content before the edit (without a byte-order mark).
    pub(super) old: String,
    pub(super) new: String,
    /// Where each replacement landed in the new content.
    pub(super) spans: Vec<Span>,
    /// Whether new_string was empty: the matches were removed.
    pub(super) deleted: bool,
    pub(super) mode: Mode,
}

/// 1-based lines, inclusive, that a replacement occupies in the new content. An empty
/// replacement (a deletion) has `first == last` at the line where the text was removed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) first: usize,
    pub(super) last: usize,
}

/// How old_string was found.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Mode {
    Exact,
    LineEndings {
        old: &'static str,
        file: &'static str,
    },
    TrailingWhitespace,
    Indentation {
        old: String,
        file: String,
    },
}

impl Mode {
    /// The sentence the success output adds for a tolerant match.
    pub(super) fn note(&self) -> Option<String> {
        match self {
            Mode::Exact => None,
            Mode::LineEndings { old, file } => Some(format!(
                "Matched after normalising line endings (old_string used {old}, the file uses \
                 {file} there); new_string was written with {file}."
            )),
            Mode::TrailingWhitespace => Some(
                "Matched after ignoring trailing whitespace (spaces or tabs at line ends differ \
                 between old_string and the file)."
                    .to_owned(),
            ),
            Mode::Indentation { old, file } => {
                let difference = describe_indentation_difference(old, file);
                Some(format!(
                    "Matched after ignoring indentation differences ({difference}); new_string \
                     was re-indented the same way."
                ))
            }
        }
    }

    /// How a count of matches is qualified in an error.
    pub(super) fn qualifier(&self) -> &'static str {
        match self {
            Mode::Exact => "",
            Mode::LineEndings { .. } => " when ignoring line-ending differences",
            Mode::TrailingWhitespace => " when ignoring trailing whitespace",
            Mode::Indentation { .. } => " when ignoring indentation differences",
        }
    }
}

/// Where old_string matched (byte ranges of the content) and what replaces each match.
pub(super) struct Found {
    pub(super) ranges: Vec<Range<usize>>,
    pub(super) replacements: Vec<String>,
    pub(super) mode: Mode,
}

/// Finds old_string, builds the new content and checks that the edit changes something.
pub(super) fn plan_edit(content: String, args: &Args, shown: &str) -> Result<Plan, ToolError> {
    let found = find(&content, &args.old_string, &args.new_string, shown)?;
    let count = found.ranges.len();
    if count > 1 && !args.allow_multiple {
        let lines = format_line_list(
            &found
                .ranges
                .iter()
                .map(|range| line_span(&content, range))
                .collect::<Vec<_>>(),
        );
        return Err(ToolError::Respond(format!(
            "old_string matches {count} places in {shown}{} ({lines}). Include more of the \
             surrounding lines in old_string so that it matches exactly one place, or set \
             allow_multiple: true to replace all of them",
            found.mode.qualifier()
        )));
    }

    let mut new = String::with_capacity(content.len());
    let mut spans = Vec::with_capacity(count);
    let mut copied_to = 0;
    let mut line = 1;
    for (range, replacement) in found.ranges.iter().zip(&found.replacements) {
        let between = &content[copied_to..range.start];
        new.push_str(between);
        line += between.matches('\n').count();
        let inner_breaks = replacement
            .strip_suffix('\n')
            .unwrap_or(replacement)
            .matches('\n')
            .count();
        spans.push(Span {
            first: line,
            last: line + inner_breaks,
        });
        new.push_str(replacement);
        line += replacement.matches('\n').count();
        copied_to = range.end;
    }
    new.push_str(&content[copied_to..]);

    // The final newline is the file's, not the edit's: models add or drop one at the end of
    // new_string without meaning to change it.
    let changed_before_final_newline = new != content;
    if !content.is_empty() {
        if content.ends_with('\n') && !new.is_empty() && !new.ends_with('\n') {
            new.push_str(dominant_line_ending(&content));
        } else if !content.ends_with('\n') && new.ends_with('\n') {
            new.pop();
            if new.ends_with('\r') {
                new.pop();
            }
        }
    }
    if new == content {
        return Err(ToolError::Respond(if changed_before_final_newline {
            format!(
                "The only change would be to the final newline of {shown}, which edit keeps as \
                 it is. Nothing was written; use write_file to rewrite the file if its final \
                 newline must change"
            )
        } else {
            format!(
                "The edit would leave {shown} unchanged (new_string equals the text already \
                 there). Nothing was written"
            )
        }));
    }
    Ok(Plan {
        old: content,
        new,
        spans,
        deleted: found.replacements.iter().all(String::is_empty),
        mode: found.mode,
    })
}

/// Tries the matching strategies in order: exact, line-ending tolerant, whitespace tolerant.
pub(super) fn find(content: &str, old: &str, new: &str, shown: &str) -> Result<Found, ToolError> {
    let dominant = dominant_line_ending(content);
    let with_endings = |range: &Range<usize>, text: &str| {
        with_line_ending(text, region_line_ending(&content[range.clone()], dominant))
    };

    let exact: Vec<Range<usize>> = content
        .match_indices(old)
        .map(|(start, matched)| start..start + matched.len())
        .collect();
    if !exact.is_empty() {
        let replacements = exact.iter().map(|range| with_endings(range, new)).collect();
        return Ok(Found {
            ranges: exact,
            replacements,
            mode: Mode::Exact,
        });
    }

    let normalized = Normalized::new(content);
    let old_lf = old.replace("\r\n", "\n");
    if (normalized.changed() || old_lf != old) && old_lf.contains('\n') {
        let ranges: Vec<Range<usize>> = normalized
            .text
            .match_indices(old_lf.as_str())
            .map(|(start, matched)| {
                normalized.original(start)..normalized.original(start + matched.len())
            })
            .collect();
        if let Some(first) = ranges.first() {
            let mode = Mode::LineEndings {
                old: if old.contains("\r\n") { "CRLF" } else { "LF" },
                file: if content[first.clone()].contains("\r\n") {
                    "CRLF"
                } else {
                    "LF"
                },
            };
            let replacements = ranges
                .iter()
                .map(|range| with_endings(range, new))
                .collect();
            return Ok(Found {
                ranges,
                replacements,
                mode,
            });
        }
    }

    let lines = line_ranges(&normalized.text);
    let file_lines: Vec<&str> = lines
        .iter()
        .map(|range| &normalized.text[range.clone()])
        .collect();
    let (old_body, old_ends_with_newline) = match old_lf.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (old_lf.as_str(), false),
    };
    let old_lines: Vec<&str> = old_body.split('\n').collect();
    let new_lf = new.replace("\r\n", "\n");

    if old_lines.iter().any(|line| !line.trim().is_empty()) {
        // A whole-line match of lines `start..start + old_lines.len()`, as a range of the
        // original content (the last line's break included when old_string ends with one).
        let region = |start: usize| {
            let end_line = start + old_lines.len();
            let end = if !old_ends_with_newline {
                lines[end_line - 1].end
            } else if end_line < lines.len() {
                lines[end_line].start
            } else {
                normalized.text.len()
            };
            normalized.original(lines[start].start)..normalized.original(end)
        };

        let trailing = find_line_windows(&file_lines, &old_lines, |file, old| {
            file.trim_end() == old.trim_end()
        });
        if !trailing.is_empty() {
            let ranges: Vec<Range<usize>> = trailing.into_iter().map(region).collect();
            let replacements = ranges
                .iter()
                .map(|range| with_endings(range, &new_lf))
                .collect();
            return Ok(Found {
                ranges,
                replacements,
                mode: Mode::TrailingWhitespace,
            });
        }

        let indented = find_line_windows(&file_lines, &old_lines, |file, old| {
            file.trim() == old.trim()
        });
        if !indented.is_empty() {
            let new_lines: Vec<&str> = new_lf.split('\n').collect();
            let old_unit = source_unit(&old_lines, &new_lines);
            let file_unit = file_unit(&file_lines);
            let mut ranges = Vec::with_capacity(indented.len());
            let mut replacements = Vec::with_capacity(indented.len());
            let mut mode = None;
            for start in indented {
                let window = &file_lines[start..start + old_lines.len()];
                let pairs: Vec<(&str, &str)> = old_lines
                    .iter()
                    .zip(window)
                    .filter(|(old, _)| !old.trim().is_empty())
                    .map(|(old, file)| (indentation(old), indentation(file)))
                    .collect();
                let Some(reindent) = Reindent::derive(&pairs, old_unit, file_unit) else {
                    let numbered = number_lines(window, start + 1);
                    return Err(ToolError::Respond(format!(
                        "old_string matches lines {}-{} of {shown} only when ignoring \
                         indentation, and its indentation does not map consistently onto the \
                         file's, so new_string cannot be re-indented safely. Copy the exact \
                         lines from the file:\n{numbered}",
                        start + 1,
                        start + old_lines.len()
                    )));
                };
                if mode.is_none() {
                    let (old, file) = pairs
                        .iter()
                        .find(|(old, file)| old != file)
                        .or(pairs.first())
                        .copied()
                        .unwrap_or_default();
                    mode = Some(Mode::Indentation {
                        old: old.to_owned(),
                        file: file.to_owned(),
                    });
                }
                let range = region(start);
                let reindented = new_lines
                    .iter()
                    .map(|line| reindent.apply(line))
                    .collect::<Vec<_>>()
                    .join("\n");
                replacements.push(with_endings(&range, &reindented));
                ranges.push(range);
            }
            return Ok(Found {
                ranges,
                replacements,
                mode: mode.unwrap_or(Mode::TrailingWhitespace),
            });
        }
    }

    Err(ToolError::Respond(not_found_message(
        &file_lines,
        old_body,
        &old_lines,
        shown,
    )))
}

/// Starts of the non-overlapping windows of `file_lines` whose lines all equal `old_lines`
/// under `same`.
pub(super) fn find_line_windows(
    file_lines: &[&str],
    old_lines: &[&str],
    same: impl Fn(&str, &str) -> bool,
) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut start = 0;
    while start + old_lines.len() <= file_lines.len() {
        let window = &file_lines[start..start + old_lines.len()];
        if window
            .iter()
            .zip(old_lines)
            .all(|(file, old)| same(file, old))
        {
            starts.push(start);
            start += old_lines.len();
        } else {
            start += 1;
        }
    }
    starts
}

/// The content with CRLF turned into LF, and how to map its offsets back.
pub(super) struct Normalized {
    pub(super) text: String,
    /// Offsets in `text` of the `\n`s that were `\r\n`.
    pub(super) crlf: Vec<usize>,
}

impl Normalized {
    pub(super) fn new(content: &str) -> Self {
        let mut text = String::with_capacity(content.len());
        let mut crlf = Vec::new();
        let mut rest = content;
        while let Some(at) = rest.find("\r\n") {
            text.push_str(&rest[..at]);
            crlf.push(text.len());
            text.push('\n');
            rest = &rest[at + 2..];
        }
        text.push_str(rest);
        Normalized { text, crlf }
    }

    pub(super) fn changed(&self) -> bool {
        !self.crlf.is_empty()
    }

    /// The offset in the original content of offset `at` in `text`. A `\n` that was `\r\n`
    /// maps to its `\r`, so a range never splits a CRLF.
    pub(super) fn original(&self, at: usize) -> usize {
        at + self.crlf.partition_point(|&crlf| crlf < at)
    }
}

/// Byte ranges of the lines of `text` (without their `\n`); no empty line after a final `\n`.
pub(super) fn line_ranges(text: &str) -> Vec<Range<usize>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (at, _) in text.match_indices('\n') {
        lines.push(start..at);
        start = at + 1;
    }
    if start < text.len() || lines.is_empty() {
        lines.push(start..text.len());
    }
    lines
}

/// The line ending most lines of `content` use; LF when there are none.
pub(super) fn dominant_line_ending(content: &str) -> &'static str {
    let crlf = content.matches("\r\n").count();
    let lf = content.matches('\n').count() - crlf;
    if crlf > lf {
        "\r\n"
    } else {
        "\n"
    }
}

/// The line ending of a matched region, or the file's when the region has none.
pub(super) fn region_line_ending(region: &str, dominant: &'static str) -> &'static str {
    if region.contains("\r\n") {
        "\r\n"
    } else if region.contains('\n') {
        "\n"
    } else {
        dominant
    }
}

pub(super) fn with_line_ending(text: &str, ending: &str) -> String {
    let lf = text.replace("\r\n", "\n");
    if ending == "\n" {
        lf
    } else {
        lf.replace('\n', ending)
    }
}

/// 1-based first and last line of a byte range of `content` (a range ending with a line break
/// ends on the line that break closes).
pub(super) fn line_span(content: &str, range: &Range<usize>) -> Span {
    let first = content[..range.start].matches('\n').count() + 1;
    let inner = &content[range.clone()];
    let last = first
        + inner
            .strip_suffix('\n')
            .unwrap_or(inner)
            .matches('\n')
            .count();
    Span { first, last }
}

/// "line 4", "lines 4-6, 10-12, 20".
pub(super) fn format_line_list(spans: &[Span]) -> String {
    let items: Vec<String> = spans
        .iter()
        .map(|span| {
            if span.first == span.last {
                span.first.to_string()
            } else {
                format!("{}-{}", span.first, span.last)
            }
        })
        .collect();
    match items.as_slice() {
        [single] if !single.contains('-') => format!("line {single}"),
        _ => format!("lines {}", items.join(", ")),
    }
}

/// Lines numbered like read_file shows them.
pub(super) fn number_lines(lines: &[&str], first: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| format!("{:>6}\t{line}", first + index))
        .collect::<Vec<_>>()
        .join("\n")
}
