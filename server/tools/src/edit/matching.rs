//! Finding old_string in the file and building the new content. The strict cascade comes
//! first: the exact match, then matches that tolerate line-ending, trailing-whitespace and
//! indentation differences (each accepted only as a unique match unless allow_multiple). When
//! it finds nothing, looser steps follow, each accepted only at a single place: blank lines at
//! the edges of old_string dropped, one level of over-escaping undone (the cascade again on the
//! unescaped strings), typographic look-alikes folded (also on the unescaped strings). Also
//! the line arithmetic the rest of the tool shares.

use std::ops::Range;

use super::closest::{not_found_message, Miss};
use super::indent::{
    describe_indentation_difference, file_unit, indentation, source_unit, Reindent,
};
use super::lookalike::{describe_pairs, find_lookalikes, LookAlikeMatch};
use super::unescape::{list_sequences, unescape_pair};
use super::Args;
use crate::ToolError;

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
    /// Found once the blank lines at the start and/or end of old_string, which new_string
    /// had too, were dropped from both.
    EdgeBlankLines {
        start: bool,
        end: bool,
        then: Box<Mode>,
    },
    /// Found once one level of backslash escapes was undone in both strings.
    Unescaped {
        /// As the notes show them: `` `\n` ``.
        sequences: Vec<&'static str>,
        then: Box<Mode>,
    },
    /// Found with typographic look-alikes taken as their ASCII forms.
    LookAlike {
        /// The characters that differed, as the note names them.
        pairs: String,
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
            Mode::EdgeBlankLines { start, end, then } => {
                let edges = edges(*start, *end);
                let note = format!(
                    "Matched after dropping the blank lines at the {edges} of old_string, which \
                     the file does not have there (new_string had the same blank lines, so they \
                     were dropped from it too)."
                );
                Some(then_note(note, then))
            }
            Mode::Unescaped { sequences, then } => {
                let sequences = list_sequences(sequences);
                let note = format!(
                    "Matched after unescaping {sequences} in old_string and new_string: the file \
                     has the real characters, so both strings were escaped once too often. \
                     new_string was written with the real characters; send text exactly as the \
                     file has it."
                );
                Some(then_note(note, then))
            }
            Mode::LookAlike { pairs } => Some(format!(
                "Matched after treating typographic look-alikes as the same characters \
                 ({pairs}). Only the text new_string changes was replaced, so the file keeps \
                 its own characters around it."
            )),
        }
    }

    /// How a count of matches is qualified in an error.
    pub(super) fn qualifier(&self) -> String {
        match self {
            Mode::Exact => String::new(),
            Mode::LineEndings { .. } => " when ignoring line-ending differences".to_owned(),
            Mode::TrailingWhitespace => " when ignoring trailing whitespace".to_owned(),
            Mode::Indentation { .. } => " when ignoring indentation differences".to_owned(),
            Mode::EdgeBlankLines { start, end, then } => format!(
                " when dropping the blank lines at the {} of old_string{}",
                edges(*start, *end),
                then_qualifier(then)
            ),
            Mode::Unescaped { sequences, then } => format!(
                " when unescaping {}{}",
                list_sequences(sequences),
                then_qualifier(then)
            ),
            Mode::LookAlike { .. } => LOOKALIKE_QUALIFIER.to_owned(),
        }
    }

    /// Whether a match of this kind may replace several places (with allow_multiple): only
    /// the strict cascade's. The looser steps guess at what the model meant; a wrong guess
    /// repeated over many places would do damage the model cannot review.
    fn may_replace_several(&self) -> bool {
        match self {
            Mode::Exact
            | Mode::LineEndings { .. }
            | Mode::TrailingWhitespace
            | Mode::Indentation { .. } => true,
            Mode::EdgeBlankLines { .. } | Mode::Unescaped { .. } | Mode::LookAlike { .. } => false,
        }
    }
}

const LOOKALIKE_QUALIFIER: &str = " when treating typographic look-alikes (curly quotes, \
                                   dashes, special spaces, `…`) as their ASCII forms";

/// "start", "end", "start and end".
fn edges(start: bool, end: bool) -> &'static str {
    match (start, end) {
        (true, true) => "start and end",
        (true, false) => "start",
        (false, _) => "end",
    }
}

/// A looser step's note followed by that of the step that then matched, if any.
fn then_note(note: String, then: &Mode) -> String {
    match then.note() {
        Some(then) => match then.strip_prefix("Matched") {
            Some(rest) => format!("{note} Then matched{rest}"),
            None => format!("{note} {then}"),
        },
        None => note,
    }
}

/// ", then ignoring indentation differences": the qualifier of the step that matched after a
/// looser one.
fn then_qualifier(then: &Mode) -> String {
    let qualifier = then.qualifier();
    match qualifier.strip_prefix(" when ") {
        Some(rest) => format!(", then {rest}"),
        None => qualifier,
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
    if count > 1 && !found.mode.may_replace_several() {
        return Err(ToolError::Respond(format!(
            "old_string matches {count} places in {shown}{} ({}). A match found only that way \
             is applied to one place, even with allow_multiple: include more of the surrounding \
             lines in old_string so that it matches exactly one place, or copy the exact text \
             from the file",
            found.mode.qualifier(),
            format_line_list(
                &found
                    .ranges
                    .iter()
                    .map(|range| line_span(&content, range))
                    .collect::<Vec<_>>(),
            )
        )));
    }
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

/// Tries the strict cascade, then the looser steps; a miss answers with the most similar part
/// of the file.
pub(super) fn find(content: &str, old: &str, new: &str, shown: &str) -> Result<Found, ToolError> {
    if let Some(found) = cascade(content, old, new, shown)? {
        return Ok(found);
    }
    // The looser steps run the cascade again on changed strings, where its indentation
    // refusal would speak of text the model did not send: a refusal there is a miss.
    let mut also_tried = Vec::new();
    if let Some(trimmed) = strip_edge_blank_lines(old, new) {
        if let Ok(Some(found)) = cascade(content, trimmed.old, trimmed.new, shown) {
            return Ok(Found {
                mode: Mode::EdgeBlankLines {
                    start: trimmed.start,
                    end: trimmed.end,
                    then: Box::new(found.mode),
                },
                ..found
            });
        }
        also_tried.push(format!(
            "after dropping the blank lines at its {}",
            edges(trimmed.start, trimmed.end)
        ));
    }
    let unescaped = unescape_pair(old, new);
    if let Some(unescaped) = &unescaped {
        if let Ok(Some(found)) = cascade(content, &unescaped.old, &unescaped.new, shown) {
            return Ok(Found {
                mode: Mode::Unescaped {
                    sequences: unescaped.sequences.clone(),
                    then: Box::new(found.mode),
                },
                ..found
            });
        }
        also_tried.push(format!(
            "after unescaping {} in it",
            list_sequences(&unescaped.sequences)
        ));
    }
    let mut folded = false;
    if let Some(matches) = find_lookalikes(content, old, new) {
        folded = true;
        if !matches.is_empty() {
            return Ok(lookalike_found(matches));
        }
    }
    if let Some(unescaped) = &unescaped {
        if let Some(matches) = find_lookalikes(content, &unescaped.old, &unescaped.new) {
            folded = true;
            if !matches.is_empty() {
                let found = lookalike_found(matches);
                return Ok(Found {
                    mode: Mode::Unescaped {
                        sequences: unescaped.sequences.clone(),
                        then: Box::new(found.mode),
                    },
                    ..found
                });
            }
        }
    }
    if folded {
        also_tried.push(LOOKALIKE_QUALIFIER.trim_start().to_owned());
    }

    let normalized = Normalized::new(content);
    let file_lines: Vec<&str> = line_ranges(&normalized.text)
        .into_iter()
        .map(|range| &normalized.text[range])
        .collect();
    let old_lf = old.replace("\r\n", "\n");
    let old_body = old_lf.strip_suffix('\n').unwrap_or(&old_lf);
    let old_lines: Vec<&str> = old_body.split('\n').collect();
    let unescaped_body = unescaped.as_ref().map(|unescaped| {
        let lf = unescaped.old.replace("\r\n", "\n");
        match lf.strip_suffix('\n') {
            Some(body) => body.to_owned(),
            None => lf,
        }
    });
    let new_lf = new.replace("\r\n", "\n");
    let new_trimmed = new_lf.trim();
    // new_string already in the file suggests the change was made before (an edit repeated
    // after a lost answer, the user, a command). Short texts and parts of old_string prove
    // nothing.
    let already_at = (new_trimmed.len() >= 16 && !old_lf.contains(new_trimmed))
        .then(|| normalized.text.find(new_trimmed))
        .flatten()
        .map(|at| format_line_list(&[line_span(&normalized.text, &(at..at + new_trimmed.len()))]));
    Err(ToolError::Respond(not_found_message(&Miss {
        file_lines: &file_lines,
        old_body,
        old_lines: &old_lines,
        shown,
        also_tried,
        unescaped_body: unescaped_body.as_deref(),
        already_at,
    })))
}

/// The found of the look-alike step: each match's region and spliced replacement.
fn lookalike_found(matches: Vec<LookAlikeMatch>) -> Found {
    let pairs = matches
        .first()
        .map(|found| describe_pairs(&found.pairs))
        .unwrap_or_default();
    let (ranges, replacements) = matches
        .into_iter()
        .map(|found| (found.range, found.replacement))
        .unzip();
    Found {
        ranges,
        replacements,
        mode: Mode::LookAlike { pairs },
    }
}

/// old_string and new_string without the blank lines both have at the start or end.
struct EdgesDropped<'a> {
    old: &'a str,
    new: &'a str,
    start: bool,
    end: bool,
}

/// Drops whole blank lines (spaces and tabs only) before old_string's first non-blank line and
/// after its last one, when new_string starts and ends with exactly the same text: the model
/// copied blank lines that the file does not have there, and its change is elsewhere.
fn strip_edge_blank_lines<'a>(old: &'a str, new: &'a str) -> Option<EdgesDropped<'a>> {
    const BLANK: [char; 4] = [' ', '\t', '\r', '\n'];
    let leading_blank = old.len() - old.trim_start_matches(BLANK).len();
    let start = old[..leading_blank].rfind('\n').map_or(0, |at| at + 1);
    let body_end = old.trim_end_matches(BLANK).len();
    if body_end <= start {
        return None;
    }
    // The line break that ends the last non-blank line stays with it.
    let end = old[body_end..]
        .find('\n')
        .map_or(old.len(), |at| body_end + at + 1);
    let (prefix, suffix) = (&old[..start], &old[end..]);
    if (prefix.is_empty() && suffix.is_empty())
        || new.len() < prefix.len() + suffix.len()
        || !new.starts_with(prefix)
        || !new.ends_with(suffix)
    {
        return None;
    }
    Some(EdgesDropped {
        old: &old[start..end],
        new: &new[prefix.len()..new.len() - suffix.len()],
        start: !prefix.is_empty(),
        end: !suffix.is_empty(),
    })
}

/// The strict cascade: exact, line-ending tolerant, trailing-whitespace tolerant, indentation
/// tolerant. `None` when none matched.
fn cascade(content: &str, old: &str, new: &str, shown: &str) -> Result<Option<Found>, ToolError> {
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
        return Ok(Some(Found {
            ranges: exact,
            replacements,
            mode: Mode::Exact,
        }));
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
            return Ok(Some(Found {
                ranges,
                replacements,
                mode,
            }));
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
            return Ok(Some(Found {
                ranges,
                replacements,
                mode: Mode::TrailingWhitespace,
            }));
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
            return Ok(Some(Found {
                ranges,
                replacements,
                mode: mode.unwrap_or(Mode::TrailingWhitespace),
            }));
        }
    }

    Ok(None)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(old: &str, new: &str, allow_multiple: bool) -> Args {
        Args {
            path: "f.txt".to_owned(),
            old_string: old.to_owned(),
            new_string: new.to_owned(),
            allow_multiple,
        }
    }

    fn plan(content: &str, old: &str, new: &str, allow_multiple: bool) -> Result<Plan, String> {
        plan_edit(content.to_owned(), &args(old, new, allow_multiple), "f.txt").map_err(|error| {
            match error {
                ToolError::Respond(message) | ToolError::Fatal(message) => message,
            }
        })
    }

    #[test]
    fn edge_blank_lines_are_dropped_only_when_new_string_has_them_too() {
        fn dropped<'a>(old: &'a str, new: &'a str) -> Option<(&'a str, &'a str, bool, bool)> {
            strip_edge_blank_lines(old, new)
                .map(|dropped| (dropped.old, dropped.new, dropped.start, dropped.end))
        }
        assert_eq!(
            dropped("\n  \n    foo()\n\n", "\n  \n    bar()\n\n"),
            Some(("    foo()\n", "    bar()\n", true, true))
        );
        assert_eq!(
            dropped("foo\r\n\r\n", "bar\r\n\r\n"),
            Some(("foo\r\n", "bar\r\n", false, true))
        );
        // Trailing spaces belong to their line; spaces after the last break are a blank line.
        assert_eq!(
            dropped("foo  \n  ", "bar  \n  "),
            Some(("foo  \n", "bar  \n", false, true))
        );
        // new_string lacks the blank lines: the model changes them, so they are not context.
        assert_eq!(dropped("\n\nfoo\n", "foo\n"), None);
        assert_eq!(dropped("foo\n", "bar\n"), None);
        assert_eq!(dropped("\n \n", "\n \n"), None);
    }

    #[test]
    fn an_exact_match_is_never_unescaped() {
        // The file holds a literal `\n`: old_string with `\n` matches it as it is.
        let plan = plan("a\\nb\na\nb\n", "a\\nb", "c\\nd", false).unwrap();
        assert_eq!(plan.new, "c\\nd\na\nb\n");
        assert_eq!(plan.mode, Mode::Exact);
    }

    #[test]
    fn looser_steps_refuse_several_places_whatever_allow_multiple_says() {
        let content = "fn a() {\n    x(1);\n}\nfn b() {\n    x(1);\n}\n";
        for allow_multiple in [false, true] {
            let message =
                plan(content, "\\tx(1);\\n}", "\\tx(2);\\n}", allow_multiple).unwrap_err();
            expect_test::expect![[r#"old_string matches 2 places in f.txt when unescaping `\n` and `\t`, then ignoring indentation differences (lines 2-3, 5-6). A match found only that way is applied to one place, even with allow_multiple: include more of the surrounding lines in old_string so that it matches exactly one place, or copy the exact text from the file"#]]
            .assert_eq(&message);
        }
        // The strict cascade still honours allow_multiple.
        let plan = plan(content, "x(1);\n}", "x(2);\n}", true).unwrap();
        assert_eq!(plan.spans.len(), 2);
    }

    #[test]
    fn notes_of_combined_steps() {
        let mode = Mode::EdgeBlankLines {
            start: true,
            end: false,
            then: Box::new(Mode::TrailingWhitespace),
        };
        expect_test::expect!["Matched after dropping the blank lines at the start of old_string, which the file does not have there (new_string had the same blank lines, so they were dropped from it too). Then matched after ignoring trailing whitespace (spaces or tabs at line ends differ between old_string and the file)."]
        .assert_eq(&mode.note().unwrap());
        expect_test::expect![
            " when dropping the blank lines at the start of old_string, then ignoring trailing whitespace"
        ]
        .assert_eq(&mode.qualifier());
        let mode = Mode::Unescaped {
            sequences: vec!["`\\n`"],
            then: Box::new(Mode::LookAlike {
                pairs: String::new(),
            }),
        };
        expect_test::expect![" when unescaping `\\n`, then treating typographic look-alikes (curly quotes, dashes, special spaces, `…`) as their ASCII forms"]
        .assert_eq(&mode.qualifier());
    }

    #[test]
    fn normalized_offsets_map_back_without_splitting_a_crlf() {
        let normalized = Normalized::new("a\r\nb\r\n\r\nc");
        assert_eq!(normalized.text, "a\nb\n\nc");
        let back: Vec<usize> = (0..=normalized.text.len())
            .map(|at| normalized.original(at))
            .collect();
        // Each `\n` that was `\r\n` maps to its `\r`.
        assert_eq!(back, [0, 1, 3, 4, 6, 8, 9]);
    }

    #[test]
    fn a_crlf_file_keeps_crlf_through_unescaping() {
        let plan = plan("one\r\ntwo\r\n", "one\\ntwo", "one\\n2", false).unwrap();
        assert_eq!(plan.new, "one\r\n2\r\n");
    }
}
