//! The edit guardrail: before an agent's edit is applied, both texts are parsed and the edit is
//! refused when it adds syntax errors (tree-sitter ERROR and MISSING nodes). Models that drop a
//! closing brace or a colon otherwise leave a broken file behind and spend turns finding out.
//!
//! The edited region is where the two texts differ (common prefix and suffix). An edit is
//! refused when errors appear in its lines where there were none, or when the file has more
//! errors than before (an unbalanced brace is often reported far away, as a MISSING `}` at the
//! end of the file). A file that already had errors elsewhere can still be edited, and an edit
//! that fixes errors passes.

use std::fmt::Write as _;
use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::{Language, Result};

mod incremental;

pub use incremental::{check_edit_from, AfterTree, Checked, DeferredParse, ParsedText};

/// Lines of context shown above and below the edited region.
const WINDOW_CONTEXT: usize = 3;
/// The most lines a window shows: its head and tail halves around a note of what was left out.
const MAX_WINDOW_LINES: usize = 60;
/// Longer lines (minified code) are cut in the windows.
const MAX_LINE_CHARS: usize = 200;
/// The most characters of an ERROR node's text quoted in its message.
const MAX_ERROR_TEXT_CHARS: usize = 40;
/// The most errors the rendered message lists.
const MAX_ERRORS_SHOWN: usize = 10;

/// One syntax error an edit would add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line and column (in characters) in the text after the edit.
    pub line: u32,
    pub column: u32,
    /// "unexpected `}`", "missing `;`".
    pub message: String,
}

/// Why an edit was refused: the errors it adds and the edited region before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardReport {
    pub errors: Vec<SyntaxError>,
    /// Numbered lines around the edited region, before and after the edit.
    pub before: String,
    pub after: String,
}

impl GuardReport {
    /// The message the model reads (`shown` is the file's path as the model knows it).
    pub fn render(&self, shown: &str) -> String {
        let mut text = format!(
            "The change to {shown} was NOT applied: it would add syntax errors \
             (line:column after the change):"
        );
        for error in self.errors.iter().take(MAX_ERRORS_SHOWN) {
            let _ = write!(
                text,
                "\n  {}:{} {}",
                error.line, error.column, error.message
            );
        }
        if self.errors.len() > MAX_ERRORS_SHOWN {
            let _ = write!(
                text,
                "\n  … and {} more",
                self.errors.len() - MAX_ERRORS_SHOWN
            );
        }
        let _ = write!(
            text,
            "\nBefore:\n{}\nAfter (not applied):\n{}\nFix the change (balance brackets, quotes \
             and indentation) and try again. If the code is meant to be incomplete for now, tell \
             the user: they can turn this check off with the `syntax.checkEdits` setting.",
            self.before, self.after
        );
        text
    }
}

/// `Some` when `after` (the whole new text) has syntax errors in or caused by the edited
/// region that `before` did not have. Parses both texts in full: [`check_edit_from`] gives the
/// same verdict from the tree of `before`, far quicker on large files.
pub fn check_edit(language: Language, before: &str, after: &str) -> Result<Option<GuardReport>> {
    // Editors hide a byte-order mark and grammars do not expect one.
    let before = before.strip_prefix('\u{feff}').unwrap_or(before);
    let after = after.strip_prefix('\u{feff}').unwrap_or(after);
    if before == after {
        return Ok(None);
    }
    let (old_region, new_region) = edited_regions(before, after);
    let old_sites = error_sites(language, &crate::parse(language, before)?);
    let tree = crate::parse(language, after)?;
    let new_sites = error_sites(language, &tree);
    let edit = Edit {
        before,
        after,
        old_region,
        new_region,
    };
    Ok(verdict(&edit, &old_sites, &new_sites, &tree))
}

/// An edit as the guard sees it: both whole texts, and the byte ranges that differ
/// (`before[old_region]` was replaced by `after[new_region]`).
struct Edit<'a> {
    before: &'a str,
    after: &'a str,
    old_region: Range<usize>,
    new_region: Range<usize>,
}

/// The guard's judgement, given the error sites of both texts and the tree of `after`.
fn verdict(
    edit: &Edit<'_>,
    old_sites: &[Site],
    new_sites: &[Site],
    tree: &Tree,
) -> Option<GuardReport> {
    let Edit {
        before,
        after,
        old_region,
        new_region,
    } = edit;
    let old_lines = whole_lines(before, old_region);
    let new_lines = whole_lines(after, new_region);
    let in_lines = |range: &Range<usize>, lines: &Range<usize>| {
        range.start <= lines.end && range.end >= lines.start
    };
    let errors_in_region = new_sites
        .iter()
        .any(|site| in_lines(&site.range, &new_lines));
    let had_errors_in_region = old_sites
        .iter()
        .any(|site| in_lines(&site.range, &old_lines));
    let adds_errors =
        (errors_in_region && !had_errors_in_region) || new_sites.len() > old_sites.len();
    if !adds_errors {
        return None;
    }

    let added = added_sites(old_sites, new_sites, old_region, new_region);
    // Error recovery can reshape errors so that none is new by position; the report still
    // needs something to point at.
    let reported: Vec<&Site> = if !added.is_empty() {
        added
    } else if errors_in_region {
        new_sites
            .iter()
            .filter(|site| in_lines(&site.range, &new_lines))
            .collect()
    } else {
        new_sites.iter().collect()
    };
    let brackets = bracket_problems(tree);
    let mut errors: Vec<SyntaxError> = Vec::with_capacity(reported.len());
    for site in reported {
        let (at, message) = describe(site, tree, after, &brackets, &new_lines);
        let (line, column) = line_column(after, at);
        let error = SyntaxError {
            line,
            column,
            message,
        };
        // Two sites can come down to the same bracket.
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    let focus: Vec<usize> = errors
        .iter()
        .map(|error| error.line.saturating_sub(1) as usize)
        .collect();
    Some(GuardReport {
        errors,
        before: window(before, &old_lines, &[]),
        after: window(after, &new_lines, &focus),
    })
}

/// Where a tree has a syntax error.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    range: Range<usize>,
    kind: SiteKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SiteKind {
    /// An ERROR node: text the parser had to skip or could not fit together.
    Error,
    /// A MISSING node: a token the parser assumed, of this kind.
    Missing(String),
    /// A Python block without statements, which tree-sitter-python produces (without an error)
    /// when the line after a `:` is not indented.
    EmptyBlock,
}

/// The ERROR nodes (not what is inside them) and MISSING nodes of a tree, in document order.
/// Only subtrees that contain an error are walked, except in Python, whose grammar reports a
/// missing indented block as an empty block rather than as an error.
fn error_sites(language: Language, tree: &Tree) -> Vec<Site> {
    sites_under(language, tree.root_node())
}

/// The error sites of `node` and its descendants, as [`error_sites`] finds them in a tree.
fn sites_under(language: Language, node: Node<'_>) -> Vec<Site> {
    let whole_walk = language == Language::Python;
    let mut sites = Vec::new();
    let mut cursor = node.walk();
    'walk: loop {
        let node = cursor.node();
        let kind = if node.is_error() {
            Some(SiteKind::Error)
        } else if node.is_missing() {
            Some(SiteKind::Missing(node.kind().to_owned()))
        } else if whole_walk && node.kind() == "block" && node.named_child_count() == 0 {
            Some(SiteKind::EmptyBlock)
        } else {
            None
        };
        let descend = kind.is_none() && (whole_walk || node.has_error());
        if let Some(kind) = kind {
            sites.push(Site {
                range: node.byte_range(),
                kind,
            });
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    sites
}

/// The byte ranges that differ: `before[old]` was replaced by `after[new]`, found as what is
/// left between the longest common prefix and suffix (on character boundaries).
fn edited_regions(before: &str, after: &str) -> (Range<usize>, Range<usize>) {
    let (old, new) = (before.as_bytes(), after.as_bytes());
    let mut prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    while !(before.is_char_boundary(prefix) && after.is_char_boundary(prefix)) {
        prefix -= 1;
    }
    let most = old.len().min(new.len()) - prefix;
    let mut suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(most)
        .take_while(|(a, b)| a == b)
        .count();
    while !(before.is_char_boundary(old.len() - suffix)
        && after.is_char_boundary(new.len() - suffix))
    {
        suffix -= 1;
    }
    (prefix..old.len() - suffix, prefix..new.len() - suffix)
}

/// `range` widened to whole lines: from the start of its first line to the line break (or end
/// of text) of its last line. An empty range stands for the line it is on.
fn whole_lines(text: &str, range: &Range<usize>) -> Range<usize> {
    let bytes = text.as_bytes();
    let start = bytes[..range.start]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    let last = if range.end > range.start {
        range.end - 1
    } else {
        range.end
    };
    let end = bytes[last..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(bytes.len(), |at| last + at);
    start..end
}

/// The sites of `new` that `old` does not account for. A site outside the edited region is
/// old when `old` has one of the same kind at the same place (shifted by the edit); a site
/// inside it, when `old` had one of the same kind inside the replaced region. Each old site
/// accounts for one new site.
fn added_sites<'a>(
    old: &[Site],
    new: &'a [Site],
    old_region: &Range<usize>,
    new_region: &Range<usize>,
) -> Vec<&'a Site> {
    let mut used = vec![false; old.len()];
    let mut added = Vec::new();
    for site in new {
        let shifted = if site.range.end <= new_region.start {
            Some(site.range.clone())
        } else if site.range.start >= new_region.end {
            let map = |at: usize| at - new_region.end + old_region.end;
            Some(map(site.range.start)..map(site.range.end))
        } else {
            None
        };
        let matching = old.iter().enumerate().position(|(index, old_site)| {
            !used[index]
                && old_site.kind == site.kind
                && match &shifted {
                    Some(range) => old_site.range == *range,
                    None => {
                        old_site.range.end > old_region.start
                            && old_site.range.start < old_region.end
                    }
                }
        });
        match matching {
            Some(index) => used[index] = true,
            None => added.push(site),
        }
    }
    added
}

/// Brackets that do not pair up in a tree's tokens (strings and comments are tokens of their
/// own, so brackets inside them do not count).
#[derive(Debug, Default)]
struct Brackets {
    /// (offset, opener) of brackets never closed.
    unclosed: Vec<(usize, &'static str)>,
    /// (offset, closer) of closing brackets with no opener.
    unexpected: Vec<(usize, &'static str)>,
    /// (offset of a MISSING closer, offset and text of the opener it closes).
    closes: Vec<(usize, usize, &'static str)>,
}

/// A bracket token's text, and its closer when it opens; interpolations open with `${`, `#{`
/// and `$(`.
fn bracket(kind: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match kind {
        "(" => ("(", Some(")")),
        "$(" => ("$(", Some(")")),
        "[" => ("[", Some("]")),
        "{" => ("{", Some("}")),
        "${" => ("${", Some("}")),
        "#{" => ("#{", Some("}")),
        ")" => (")", None),
        "]" => ("]", None),
        "}" => ("}", None),
        _ => return None,
    })
}

fn closer_of(opener: &str) -> Option<&'static str> {
    bracket(opener).and_then(|(_, closer)| closer)
}

/// Pairs the bracket tokens of the whole tree. A closer with no matching opener on the stack
/// is unexpected; one that matches a deeper opener leaves the openers above it unclosed.
fn bracket_problems(tree: &Tree) -> Brackets {
    let mut brackets = Brackets::default();
    let mut open: Vec<(usize, &'static str)> = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let token = (node.child_count() == 0 && !node.is_named())
            .then(|| bracket(node.kind()))
            .flatten();
        if let Some((kind, closer)) = token {
            let at = node.start_byte();
            if closer.is_some() {
                open.push((at, kind));
            } else {
                match open
                    .iter()
                    .rposition(|&(_, opener)| closer_of(opener) == Some(kind))
                {
                    Some(index) => {
                        let (opener_at, opener) = open[index];
                        if node.is_missing() {
                            brackets.closes.push((at, opener_at, opener));
                        }
                        brackets.unclosed.extend(open.drain(index..).skip(1));
                        open.truncate(index);
                    }
                    None if !node.is_missing() => brackets.unexpected.push((at, kind)),
                    None => {}
                }
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    brackets.unclosed.extend(open);
    brackets.unclosed.sort_unstable();
    brackets
}

/// Where a site is reported and what it says. An ERROR node is best explained by a bracket in
/// it that does not pair up (preferring one in the edited lines); otherwise by the text from
/// its first token that does not form a complete node.
fn describe(
    site: &Site,
    tree: &Tree,
    source: &str,
    brackets: &Brackets,
    edited: &Range<usize>,
) -> (usize, String) {
    match &site.kind {
        SiteKind::Missing(kind) => {
            let opener = brackets
                .closes
                .iter()
                .find(|&&(at, _, _)| at == site.range.start);
            let message = match opener {
                Some(&(_, opener_at, opener)) => {
                    let (line, column) = line_column(source, opener_at);
                    format!("missing `{kind}` to close the `{opener}` at {line}:{column}")
                }
                None => format!("missing `{kind}`"),
            };
            (site.range.start, message)
        }
        SiteKind::EmptyBlock => (site.range.start, "expected an indented block".to_owned()),
        SiteKind::Error => {
            let inside = |&&(at, _): &&(usize, &'static str)| site.range.contains(&at);
            let problems: Vec<(usize, String)> = brackets
                .unclosed
                .iter()
                .filter(inside)
                .map(|&(at, opener)| (at, format!("unclosed `{opener}`")))
                .chain(
                    brackets
                        .unexpected
                        .iter()
                        .filter(inside)
                        .map(|&(at, closer)| (at, format!("unexpected `{closer}`"))),
                )
                .collect();
            let in_edit = problems
                .iter()
                .find(|(at, _)| edited.contains(at))
                .or(problems.first());
            if let Some((at, message)) = in_edit {
                return (*at, message.clone());
            }
            let at = error_start(tree, &site.range);
            // The rest of the line says what was unexpected; an error at a line's end says
            // more with the lines after it.
            let line_end = source
                .get(at..)
                .and_then(|rest| rest.find('\n'))
                .map_or(source.len(), |end| at + end);
            let rest_of_line = source.get(at..line_end.min(site.range.end)).unwrap_or("");
            let text = if rest_of_line.trim().is_empty() {
                source.get(at..site.range.end).unwrap_or("")
            } else {
                rest_of_line
            };
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let message = if words.is_empty() {
                "syntax error".to_owned()
            } else if words.chars().count() > MAX_ERROR_TEXT_CHARS {
                let cut: String = words.chars().take(MAX_ERROR_TEXT_CHARS).collect();
                format!("unexpected `{cut}…`")
            } else {
                format!("unexpected `{words}`")
            };
            (at, message)
        }
    }
}

/// Where the parse really went wrong in the ERROR node at `range`, rather than the start of
/// the valid code it swallowed: its first token that is not part of a complete node, found
/// by following the children that have errors (nested ERROR nodes included).
fn error_start(tree: &Tree, range: &Range<usize>) -> usize {
    let Some(found) = tree
        .root_node()
        .descendant_for_byte_range(range.start, range.end)
    else {
        return range.start;
    };
    let mut node = ancestors_or_self(found)
        .find(|node| node.is_error() && node.byte_range() == *range)
        .unwrap_or(found);
    loop {
        let in_error = node.is_error();
        let mut cursor = node.walk();
        let next = node.children(&mut cursor).find(|child| {
            // A nested ERROR node can be an extra, like a comment.
            child.has_error() || (in_error && !child.is_named() && !child.is_extra())
        });
        match next {
            Some(child) if child.has_error() && child.child_count() > 0 => node = child,
            Some(child) => return child.start_byte(),
            None => return node.start_byte(),
        }
    }
}

fn ancestors_or_self(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(Some(node), |node| node.parent())
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// The lines of `lines` (a whole-line byte range) with their neighbours, numbered like
/// read_file shows them. A long window keeps its head and tail, and the lines around `focus`
/// (0-based lines of errors: the first one inside the window) when it has one.
fn window(text: &str, lines: &Range<usize>, focus: &[usize]) -> String {
    if text.is_empty() {
        return "(empty)".to_owned();
    }
    let all: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    // 0-based indices of the region's first and last lines.
    let first = text[..lines.start].matches('\n').count();
    let last = first + text[lines.start..lines.end].matches('\n').count();
    let start = first.saturating_sub(WINDOW_CONTEXT);
    let end = (last + WINDOW_CONTEXT).min(all.len().saturating_sub(1));
    let parts = if end + 1 - start <= MAX_WINDOW_LINES {
        vec![(start, end)]
    } else {
        match focus.iter().find(|line| (start..=end).contains(*line)) {
            Some(&line) => {
                let quarter = MAX_WINDOW_LINES / 4;
                vec![
                    (start, start + quarter - 1),
                    (
                        line.saturating_sub(quarter).max(start),
                        (line + quarter - 1).min(end),
                    ),
                    (end + 1 - quarter, end),
                ]
            }
            None => {
                let half = MAX_WINDOW_LINES / 2;
                vec![(start, start + half - 1), (end + 1 - half, end)]
            }
        }
    };
    let mut shown: Vec<String> = Vec::new();
    let mut next = start;
    for (from, to) in parts {
        let from = from.max(next);
        if from > to {
            continue;
        }
        if from > next {
            shown.push(format!(
                "      \t… {} lines ({}-{}) not shown",
                from - next,
                next + 1,
                from
            ));
        }
        for index in from..=to {
            let line = all.get(index).copied().unwrap_or("");
            shown.push(if line.chars().count() > MAX_LINE_CHARS {
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                format!("{:>6}\t{cut}…", index + 1)
            } else {
                format!("{:>6}\t{line}", index + 1)
            });
        }
        next = to + 1;
    }
    shown.join("\n")
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;

    /// Replaces the one occurrence of `old` in `before` with `new` and renders the verdict.
    fn check(language: Language, before: &str, old: &str, new: &str, expected: Expect) {
        assert_eq!(before.matches(old).count(), 1, "{old:?} must occur once");
        let after = before.replacen(old, new, 1);
        let actual = match check_edit(language, before, &after).unwrap() {
            None => "accepted".to_owned(),
            Some(report) => report.render("sample"),
        };
        expected.assert_eq(&actual);
    }

    const RUST: &str = "\
use std::fmt;

fn main() {
    let total = add(1, 2);
    if total > 2 {
        println!(\"{total}\");
    }
}

fn add(a: u32, b: u32) -> u32 {
    a + b
}
";

    #[test]
    fn rust_edit_that_drops_a_closing_brace_is_refused() {
        check(
            Language::Rust,
            RUST,
            "        println!(\"{total}\");\n    }\n",
            "        println!(\"{total}\");\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  3:11 unclosed `{`
                Before:
                     4	    let total = add(1, 2);
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	    }
                     8	}
                     9	
                    10	fn add(a: u32, b: u32) -> u32 {
                After (not applied):
                     4	    let total = add(1, 2);
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	}
                     8	
                     9	fn add(a: u32, b: u32) -> u32 {
                    10	    a + b
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn rust_edit_with_an_extra_closing_brace_is_refused() {
        check(
            Language::Rust,
            RUST,
            "    a + b\n",
            "    a + b\n    }\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  13:1 unexpected `}`
                Before:
                     9	
                    10	fn add(a: u32, b: u32) -> u32 {
                    11	    a + b
                    12	}
                After (not applied):
                     9	
                    10	fn add(a: u32, b: u32) -> u32 {
                    11	    a + b
                    12	    }
                    13	}
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn rust_edit_that_drops_a_semicolon_is_refused() {
        check(
            Language::Rust,
            RUST,
            "let total = add(1, 2);",
            "let total = add(1, 2)",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  4:26 missing `;`
                Before:
                     1	use std::fmt;
                     2	
                     3	fn main() {
                     4	    let total = add(1, 2);
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	    }
                After (not applied):
                     1	use std::fmt;
                     2	
                     3	fn main() {
                     4	    let total = add(1, 2)
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	    }
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn valid_rust_edit_is_accepted() {
        check(
            Language::Rust,
            RUST,
            "    a + b\n}\n",
            "    a + b\n}\n\nfn sub(a: u32, b: u32) -> u32 {\n    a - b\n}\n",
            expect!["accepted"],
        );
    }

    const PYTHON: &str = "\
import os


def greet(name):
    if name:
        return f\"hello {name}\"
    return \"hello\"


class Greeter:
    def __init__(self, name):
        self.name = name
";

    #[test]
    fn python_edit_that_drops_a_colon_is_refused() {
        check(
            Language::Python,
            PYTHON,
            "    if name:\n",
            "    if name\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  5:5 unexpected `if name`
                  7:19 expected an indented block
                Before:
                     2	
                     3	
                     4	def greet(name):
                     5	    if name:
                     6	        return f"hello {name}"
                     7	    return "hello"
                     8	
                After (not applied):
                     2	
                     3	
                     4	def greet(name):
                     5	    if name
                     6	        return f"hello {name}"
                     7	    return "hello"
                     8	
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn python_edit_that_loses_a_block_indentation_is_refused() {
        check(
            Language::Python,
            PYTHON,
            "        self.name = name\n",
            "self.name = name\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  11:30 expected an indented block
                Before:
                     9	
                    10	class Greeter:
                    11	    def __init__(self, name):
                    12	        self.name = name
                After (not applied):
                     9	
                    10	class Greeter:
                    11	    def __init__(self, name):
                    12	self.name = name
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn python_edit_with_an_unclosed_parenthesis_is_refused() {
        check(
            Language::Python,
            PYTHON,
            "    return \"hello\"\n",
            "    return greet(\"x\"\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  7:17 unclosed `(`
                Before:
                     4	def greet(name):
                     5	    if name:
                     6	        return f"hello {name}"
                     7	    return "hello"
                     8	
                     9	
                    10	class Greeter:
                After (not applied):
                     4	def greet(name):
                     5	    if name:
                     6	        return f"hello {name}"
                     7	    return greet("x"
                     8	
                     9	
                    10	class Greeter:
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn valid_python_edit_is_accepted() {
        check(
            Language::Python,
            PYTHON,
            "        self.name = name\n",
            "        self.name = name\n\n    def hello(self):\n        return greet(self.name)\n",
            expect!["accepted"],
        );
    }

    const JAVASCRIPT: &str = "\
export function total(items) {
  let sum = 0;
  for (const item of items) {
    sum += item.price;
  }
  return sum;
}

export const names = (items) => items.map((item) => item.name);
";

    #[test]
    fn javascript_edit_that_unbalances_braces_is_refused() {
        check(
            Language::JavaScript,
            JAVASCRIPT,
            "    sum += item.price;\n  }\n",
            "    if (item.price > 0) {\n      sum += item.price;\n  }\n",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  10:64 missing `}` to close the `{` at 1:30
                Before:
                     1	export function total(items) {
                     2	  let sum = 0;
                     3	  for (const item of items) {
                     4	    sum += item.price;
                     5	  }
                     6	  return sum;
                     7	}
                After (not applied):
                     1	export function total(items) {
                     2	  let sum = 0;
                     3	  for (const item of items) {
                     4	    if (item.price > 0) {
                     5	      sum += item.price;
                     6	  }
                     7	  return sum;
                     8	}
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn javascript_edit_with_an_unterminated_string_is_refused() {
        check(
            Language::JavaScript,
            JAVASCRIPT,
            "item.name)",
            "`${item.name)",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  9:54 unclosed `${`
                Before:
                     6	  return sum;
                     7	}
                     8	
                     9	export const names = (items) => items.map((item) => item.name);
                After (not applied):
                     6	  return sum;
                     7	}
                     8	
                     9	export const names = (items) => items.map((item) => `${item.name);
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn valid_javascript_edit_is_accepted() {
        check(
            Language::JavaScript,
            JAVASCRIPT,
            "  return sum;\n",
            "  return Math.round(sum * 100) / 100;\n",
            expect!["accepted"],
        );
    }

    #[test]
    fn a_file_with_errors_elsewhere_can_still_be_edited() {
        let broken = RUST.replace("a + b\n", "a + b +\n");
        check(
            Language::Rust,
            &broken,
            "let total = add(1, 2);",
            "let total = add(3, 4);",
            expect!["accepted"],
        );
        let broken = PYTHON.replace("def greet(name):", "def greet(name)");
        check(
            Language::Python,
            &broken,
            "self.name = name",
            "self.name = name.strip()",
            expect!["accepted"],
        );
        // Still refused when the edit adds an error of its own.
        check(
            Language::Rust,
            &RUST.replace("a + b\n", "a + b +\n"),
            "let total = add(1, 2);",
            "let total = add(1, 2;",
            expect![[r#"
                The change to sample was NOT applied: it would add syntax errors (line:column after the change):
                  4:25 missing `)` to close the `(` at 4:20
                Before:
                     1	use std::fmt;
                     2	
                     3	fn main() {
                     4	    let total = add(1, 2);
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	    }
                After (not applied):
                     1	use std::fmt;
                     2	
                     3	fn main() {
                     4	    let total = add(1, 2;
                     5	    if total > 2 {
                     6	        println!("{total}");
                     7	    }
                Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]],
        );
    }

    #[test]
    fn an_edit_that_fixes_an_error_is_accepted() {
        let broken = RUST.replace("    }\n}\n", "}\n");
        check(
            Language::Rust,
            &broken,
            "        println!(\"{total}\");\n}\n",
            "        println!(\"{total}\");\n    }\n}\n",
            expect!["accepted"],
        );
        let broken = JAVASCRIPT.replace("let sum = 0;", "let sum = ;");
        check(
            Language::JavaScript,
            &broken,
            "let sum = ;",
            "let sum = 0;",
            expect!["accepted"],
        );
    }

    #[test]
    fn a_new_file_is_checked_against_nothing() {
        assert_eq!(check_edit(Language::Rust, "", RUST).unwrap(), None);
        let report = check_edit(Language::Rust, "", "fn main() {\n    let x = 1;\n")
            .unwrap()
            .unwrap();
        expect![[r#"
            The change to new.rs was NOT applied: it would add syntax errors (line:column after the change):
              1:11 unclosed `{`
            Before:
            (empty)
            After (not applied):
                 1	fn main() {
                 2	    let x = 1;
            Fix the change (balance brackets, quotes and indentation) and try again. If the code is meant to be incomplete for now, tell the user: they can turn this check off with the `syntax.checkEdits` setting."#]].assert_eq(&report.render("new.rs"));
    }

    #[test]
    fn positions_count_characters_and_a_byte_order_mark_is_ignored() {
        let before = "\u{feff}fn main() {\n    let s = \"é\"; let t = 1;\n}\n";
        let after = "\u{feff}fn main() {\n    let s = \"é\"; let t = 1\n}\n";
        let report = check_edit(Language::Rust, before, after).unwrap().unwrap();
        expect![[r#"
            [
                SyntaxError {
                    line: 2,
                    column: 27,
                    message: "missing `;`",
                },
            ]
        "#]]
        .assert_debug_eq(&report.errors);
    }

    #[test]
    fn edited_regions_stay_on_character_boundaries() {
        let cases = [
            ("aéb", "aèb"),
            ("abc", "abxc"),
            ("aaa", "aa"),
            ("", "x"),
            ("same", "same"),
        ];
        let regions: Vec<String> = cases
            .iter()
            .map(|(before, after)| {
                let (old, new) = edited_regions(before, after);
                format!("{:?} -> {:?}", &before[old], &after[new])
            })
            .collect();
        expect![[r#"
            [
                "\"é\" -> \"è\"",
                "\"\" -> \"x\"",
                "\"a\" -> \"\"",
                "\"\" -> \"x\"",
                "\"\" -> \"\"",
            ]
        "#]]
        .assert_debug_eq(&regions);
    }

    #[test]
    fn windows_are_capped_around_the_first_error() {
        let text: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        let gaps = |focus: &[usize]| -> Vec<String> {
            let shown = window(&text, &(0..text.len() - 1), focus);
            assert!(shown.lines().count() <= MAX_WINDOW_LINES + 2, "{shown}");
            shown
                .lines()
                .filter(|line| line.contains("not shown"))
                .map(str::to_owned)
                .collect()
        };
        expect![[r#"
            (
                [
                    "      \t… 140 lines (31-170) not shown",
                ],
                [
                    "      \t… 69 lines (16-84) not shown",
                    "      \t… 71 lines (115-185) not shown",
                ],
                [
                    "      \t… 165 lines (21-185) not shown",
                ],
                [
                    "      \t… 168 lines (16-183) not shown",
                ],
            )
        "#]]
        .assert_debug_eq(&(gaps(&[]), gaps(&[99, 150]), gaps(&[5]), gaps(&[198])));
    }

    /// Two parses of a 2,000-line file per check: this must stay quick enough to run on every
    /// agent edit.
    #[test]
    fn a_large_file_is_checked() {
        let before: String = (0..250)
            .map(|n| {
                format!(
                    "fn function_{n}(x: u32) -> u32 {{\n    let y = x + {n};\n    if y > 10 {{\n        \
                     return y;\n    }}\n    y * 2\n}}\n\n"
                )
            })
            .collect();
        assert_eq!(before.lines().count(), 2000);
        let after = before.replacen("    if y > 10 {\n", "    if y > 10 \n", 1);
        let report = check_edit(Language::Rust, &before, &after)
            .unwrap()
            .unwrap();
        expect![[r#"
            [
                SyntaxError {
                    line: 3,
                    column: 5,
                    message: "unexpected `if y > 10`",
                },
            ]
        "#]]
        .assert_debug_eq(&report.errors);
        let after = before.replacen("let y = x + 125;", "let y = x + 126;", 1);
        assert_eq!(check_edit(Language::Rust, &before, &after).unwrap(), None);
    }
}
