//! The edit guard started from the tree of the text before the edit, which the caller keeps
//! from the previous check (or from reading the file): a small edit of a large file then costs
//! neither of the two full parses [`check_edit`](super::check_edit) makes.
//!
//! Two ways to a verdict. The full one tells the old tree about the edit and reparses the new
//! text with it, reusing what the edit left untouched. A result without errors is the tree a
//! fresh parse gives; one with errors is parsed afresh, because error recovery can take another
//! turn on reused nodes. So the verdict is the reference check's. That reparse still grows
//! with the number of top-level nodes (tree-sitter re-shifts each of them: about 90 ms for
//! 200,000 lines of Python), so on large files a quick check comes first: the top-level nodes
//! around the edit, with one more on each side as guards, are parsed on their own. When that
//! window was free of errors before the edit, is free of them after it, and its guards come out
//! of the isolated parse as the very nodes they were (same kind, same place), the edit did not
//! reach past the window, and it is accepted. The reparse of the whole text, which the next
//! edit starts from, is then left to the caller to run off the edit's critical path
//! ([`DeferredParse`]), and it checks the quick verdict. Anything else (errors near the edit,
//! a window that is most of the file, a guard that merged with the edit) goes the full way, so
//! every refusal is the reference check's.
//!
//! The quick check rests on top-level nodes parsing the same wherever they stand, which holds
//! for the grammars Tandem ships as far as the differential tests below reach (thousands of
//! random edits, in every language, judged both ways); were it wrong for some edit, that edit
//! would be let through and the deferred reparse would log it.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use super::{
    edited_regions, error_sites, sites_under, verdict, whole_lines, Edit, GuardReport, Site,
};
use crate::{Error, Language, Result};

/// Texts shorter than this go the full way: their reparse takes a few milliseconds at most,
/// and the quick check would only add a second way for the verdict to be reached.
const QUICK_CHECK_FROM_BYTES: usize = 64 * 1024;
/// A window larger than this share of the file (1/4) saves too little over the reparse.
const MAX_WINDOW_SHARE: usize = 4;
/// How many top-level nodes a window's edge may pass (comments, nodes sharing a line) to find
/// its guard and a line boundary.
const MAX_EDGE_STEPS: usize = 8;

/// A text's syntax tree, kept to start the next check from: always the tree a fresh parse of
/// the text gives (see `reparse`). Its error sites are found once, when a check first needs
/// them. Cloning is cheap (tree-sitter trees share their nodes).
#[derive(Clone)]
pub struct ParsedText {
    language: Language,
    tree: Tree,
    sites: Arc<OnceLock<Vec<Site>>>,
}

impl ParsedText {
    /// Parses `text` in full (without a byte-order mark: see [`check_edit_from`]).
    pub fn parse(language: Language, text: &str) -> Result<Self> {
        Ok(Self::new(language, crate::parse(language, text)?))
    }

    fn new(language: Language, tree: Tree) -> Self {
        ParsedText {
            language,
            tree,
            sites: Arc::default(),
        }
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    fn sites(&self) -> &[Site] {
        self.sites
            .get_or_init(|| error_sites(self.language, &self.tree))
    }
}

/// What [`check_edit_from`] found, and the trees to keep for the next check.
pub struct Checked {
    /// `Some` when the edit is refused.
    pub report: Option<GuardReport>,
    /// The tree of the text before the edit: the one given, or the one parsed for the check.
    pub before: ParsedText,
    /// The tree of the text after it.
    pub after: AfterTree,
}

/// The tree of the text after an edit.
pub enum AfterTree {
    Parsed(ParsedText),
    /// The quick check accepted the edit without it.
    Deferred(DeferredParse),
}

/// The reparse of the text after an edit that the quick check accepted: the old tree, already
/// told about the edit, waiting for the new text.
pub struct DeferredParse {
    language: Language,
    edited: Tree,
    /// The window the quick check parsed on its own, in the text after the edit.
    window: Range<usize>,
    /// Whether the text before had syntax errors anywhere.
    had_errors: bool,
}

impl DeferredParse {
    /// Reparses `after`, the text the check was given: incrementally, which takes tens of
    /// milliseconds on a file of 100,000s of lines, and afresh if the file has syntax errors
    /// (see `reparse`); best run where nobody waits for it. The quick check's verdict is
    /// checked against the result, and a disagreement logged: it would mean an edit with a
    /// syntax error slipped through.
    pub fn parse(self, after: &str) -> Result<ParsedText> {
        let tree = reparse(self.language, &self.edited, after)?;
        let has_error = tree.root_node().has_error();
        let window_sites: usize = top_level_nodes(&tree, &self.window)
            .iter()
            .map(|node| sites_under(self.language, *node).len())
            .sum();
        if window_sites > 0 || (has_error && !self.had_errors) {
            tracing::warn!(
                language = %self.language,
                window = ?self.window,
                window_sites,
                "the quick syntax check accepted an edit that the full parse finds errors in"
            );
        }
        Ok(ParsedText::new(self.language, tree))
    }
}

/// The verdict of [`check_edit`](super::check_edit) on changing `before` into `after`, started
/// from `previous`, the tree of `before` (parsed now when `None`). The texts are as parsed: a
/// caller strips a leading byte-order mark first, as `check_edit` does. `previous` must be the
/// tree of exactly `before` (callers key it by a hash of the text): the tree of other text
/// gives a wrong verdict.
pub fn check_edit_from(
    previous: Option<ParsedText>,
    language: Language,
    before: &str,
    after: &str,
) -> Result<Checked> {
    check_from(previous, language, before, after, QUICK_CHECK_FROM_BYTES)
}

/// [`check_edit_from`], with the quick check tried on texts from `quick_from` bytes.
fn check_from(
    previous: Option<ParsedText>,
    language: Language,
    before: &str,
    after: &str,
    quick_from: usize,
) -> Result<Checked> {
    let old = match previous {
        Some(previous) if previous.language == language => previous,
        _ => ParsedText::parse(language, before)?,
    };
    if before == after {
        return Ok(Checked {
            report: None,
            after: AfterTree::Parsed(old.clone()),
            before: old,
        });
    }
    let (old_region, new_region) = edited_regions(before, after);
    let edit = Edit {
        before,
        after,
        old_region,
        new_region,
    };
    let mut edited = old.tree.clone();
    edited.edit(&input_edit(&edit));
    let quick = if before.len() >= quick_from {
        quick_check(&old, &edit)?
    } else {
        Quick::Unsettled
    };
    let tree = match quick {
        Quick::Accepted(window) => {
            let had_errors = old.tree.root_node().has_error();
            return Ok(Checked {
                report: None,
                before: old,
                after: AfterTree::Deferred(DeferredParse {
                    language,
                    edited,
                    window,
                    had_errors,
                }),
            });
        }
        // The reparse would have errors, and be parsed afresh (see `reparse`).
        Quick::Errors => crate::parse(language, after)?,
        Quick::Unsettled => reparse(language, &edited, after)?,
    };
    let new = ParsedText::new(language, tree);
    let report = verdict(&edit, old.sites(), new.sites(), &new.tree);
    Ok(Checked {
        report,
        before: old,
        after: AfterTree::Parsed(new),
    })
}

/// What the quick check made of an edit.
enum Quick {
    /// The edit is accepted; the window it was judged from, in the text after the edit.
    Accepted(Range<usize>),
    /// The window has syntax errors after the edit, and had none before.
    Errors,
    /// For the full check to decide.
    Unsettled,
}

/// The quick check: whether the edit can be accepted from the window of whole top-level nodes
/// around it, parsed on its own.
///
/// The window holds the top-level nodes on the edited lines and, on each side, the nearest
/// top-level node that is not an extra (a comment): a guard. Its edges are line starts, so
/// that indentation reads the same as in the file. The argument for accepting: the text before
/// the window is unchanged, so the parse reaches the leading guard as it did before the edit;
/// the guards parsed on their own come out as they were in the file, so nothing edited
/// attached to them (a Python `else:` to a new `if`, JavaScript's automatic semicolons), and
/// after the trailing guard the parse goes on as before through unchanged text. The window had
/// no errors and has none, so the file has the errors it had: accepted.
fn quick_check(old: &ParsedText, edit: &Edit<'_>) -> Result<Quick> {
    let Edit {
        before,
        after,
        old_region,
        new_region,
    } = edit;
    let root = old.tree.root_node();
    if root.is_error() || root.is_missing() {
        return Ok(Quick::Unsettled);
    }
    let max_window = before.len() / MAX_WINDOW_SHARE;
    let lines = whole_lines(before, old_region);

    // The top-level nodes on the edited lines: from the first one that ends after their start
    // (or the last one, for an edit past it) to the last one that starts before their end.
    let mut cursor = root.walk();
    if cursor.goto_first_child_for_byte(lines.start).is_none() {
        if !cursor.goto_first_child() {
            return Ok(Quick::Unsettled);
        }
        while cursor.goto_next_sibling() {}
    }
    let first = cursor.node();
    let mut last = first;
    while last.end_byte() < lines.end {
        match last.next_sibling() {
            Some(next) if next.start_byte() <= lines.end => last = next,
            _ => break,
        }
        if last.end_byte().saturating_sub(first.start_byte()) > max_window {
            return Ok(Quick::Unsettled);
        }
    }

    // The leading guard, and the line start where the window begins: before the earliest node
    // on the guard's line. No guard when the window starts the file.
    let leading = guard(first, Node::prev_sibling);
    let start = match leading {
        None => 0,
        Some(guard) => {
            let mut earliest = guard;
            let mut steps = 0;
            loop {
                let line_start = before[..earliest.start_byte()]
                    .rfind('\n')
                    .map_or(0, |at| at + 1);
                if before[line_start..earliest.start_byte()].trim().is_empty() {
                    break line_start;
                }
                match earliest.prev_sibling() {
                    Some(previous) if steps < MAX_EDGE_STEPS => earliest = previous,
                    _ => return Ok(Quick::Unsettled),
                }
                steps += 1;
            }
        }
    };
    // The trailing guard, and the end of the line where the window ends: after the last node
    // starting on the guard's line. No guard when the window ends the file.
    let trailing = guard(last, Node::next_sibling);
    let end = match trailing {
        None => before.len(),
        Some(guard) => {
            let mut latest = guard;
            let mut steps = 0;
            loop {
                let line_end = before[latest.end_byte()..]
                    .find('\n')
                    .map_or(before.len(), |at| latest.end_byte() + at + 1);
                match latest.next_sibling() {
                    Some(next) if next.start_byte() < line_end => {
                        if steps == MAX_EDGE_STEPS {
                            return Ok(Quick::Unsettled);
                        }
                        latest = next;
                        steps += 1;
                    }
                    _ => break line_end,
                }
            }
        }
    };
    if end - start > max_window || start > old_region.start || end < old_region.end {
        return Ok(Quick::Unsettled);
    }

    // Errors in the window before the edit are for the full check to weigh.
    if top_level_nodes(&old.tree, &(start..end))
        .iter()
        .any(|node| !sites_under(old.language, *node).is_empty())
    {
        return Ok(Quick::Unsettled);
    }

    // The edit moves what follows it by `new_region.end - old_region.end`.
    let moved = |at: usize| at - old_region.end + new_region.end;
    let new_end = moved(end);
    let window_tree = crate::parse(old.language, &after[start..new_end])?;
    if !error_sites(old.language, &window_tree).is_empty() {
        return Ok(Quick::Errors);
    }
    let window_root = window_tree.root_node();
    let found = |guard: Node<'_>, range: Range<usize>| {
        let mut cursor = window_root.walk();
        let found = window_root
            .children(&mut cursor)
            .any(|node| node.kind_id() == guard.kind_id() && node.byte_range() == range);
        found
    };
    let leading_kept = leading
        .is_none_or(|guard| found(guard, guard.start_byte() - start..guard.end_byte() - start));
    let trailing_kept = trailing.is_none_or(|guard| {
        found(
            guard,
            moved(guard.start_byte()) - start..moved(guard.end_byte()) - start,
        )
    });
    Ok(if leading_kept && trailing_kept {
        Quick::Accepted(start..new_end)
    } else {
        Quick::Unsettled
    })
}

/// The nearest top-level node from `node` in the direction `step` goes that is not an extra
/// (a comment settles nothing about the parse around it); `None` at the end of the file, and
/// after [`MAX_EDGE_STEPS`] comments, in which case the window goes to the end of the file (and
/// is most likely too large).
fn guard<'tree>(
    node: Node<'tree>,
    step: impl Fn(&Node<'tree>) -> Option<Node<'tree>>,
) -> Option<Node<'tree>> {
    std::iter::successors(step(&node), |node| step(node))
        .take(MAX_EDGE_STEPS)
        .find(|node| !node.is_extra())
}

/// The top-level nodes of `tree` that end after `range` starts and start before it ends.
fn top_level_nodes<'tree>(tree: &'tree Tree, range: &Range<usize>) -> Vec<Node<'tree>> {
    let mut nodes = Vec::new();
    let mut cursor = tree.walk();
    if cursor.goto_first_child_for_byte(range.start).is_some() {
        loop {
            let node = cursor.node();
            if node.start_byte() >= range.end {
                break;
            }
            nodes.push(node);
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    nodes
}

/// What tree-sitter needs to know of the edit to shift the old tree's nodes.
fn input_edit(edit: &Edit<'_>) -> InputEdit {
    let start_position = point_at(edit.before, edit.old_region.start);
    InputEdit {
        start_byte: edit.old_region.start,
        old_end_byte: edit.old_region.end,
        new_end_byte: edit.new_region.end,
        start_position,
        old_end_position: advance(start_position, &edit.before[edit.old_region.clone()]),
        new_end_position: advance(start_position, &edit.after[edit.new_region.clone()]),
    }
}

/// Row and byte column of `offset`.
fn point_at(text: &str, offset: usize) -> Point {
    let before = &text.as_bytes()[..offset];
    let row = before.iter().filter(|&&byte| byte == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    Point::new(row, offset - line_start)
}

/// Where `text` ends when it starts at `start`.
fn advance(start: Point, text: &str) -> Point {
    match text.rfind('\n') {
        Some(at) => Point::new(start.row + text.matches('\n').count(), text.len() - at - 1),
        None => Point::new(start.row, start.column + text.len()),
    }
}

/// Parses `after` starting from `edited`, the old tree told about the edit. Without syntax
/// errors that is the tree a fresh parse gives; with errors, tree-sitter's error recovery can
/// take another turn when it reuses old nodes than on a fresh parse (reporting an error in
/// other words, or in another place), so the text is then parsed afresh: every [`ParsedText`]
/// is what a fresh parse of its text gives, and the verdicts are the reference check's.
fn reparse(language: Language, edited: &Tree, after: &str) -> Result<Tree> {
    let mut parser = new_parser(language)?;
    let failed = || Error::ParseFailed { language };
    let tree = parser.parse(after, Some(edited)).ok_or_else(failed)?;
    if !tree.root_node().has_error() {
        return Ok(tree);
    }
    parser.parse(after, None).ok_or_else(failed)
}

fn new_parser(language: Language) -> Result<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| Error::Grammar {
            language,
            message: error.to_string(),
        })?;
    Ok(parser)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::guard::check_edit;

    /// The fixture sample of `language`, three times over: enough top-level nodes for the
    /// quick check's windows to be a small part of the file.
    fn sample(language: Language) -> String {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(language.name());
        let path = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| path.file_stem().is_some_and(|stem| stem == "sample"))
            .unwrap();
        let text = std::fs::read_to_string(path).unwrap().replacen("$0", "", 1);
        text.repeat(3)
    }

    /// A random small change of the kind a model's edit makes, good or broken: a character
    /// typed or deleted, a line dropped, doubled, indented or replaced by an unfinished one.
    fn random_edit(rng: &mut fastrand::Rng, text: &str) -> String {
        const TYPED: &[u8] = b"(){}[]<>:;,.\"'`\n\t =+-#/\\*&|!?xyz019_";
        const LINES: &[&str] = &[
            "if x:",
            "    return (",
            "fn broken(",
            "}",
            "{",
            "else:",
            "end",
            "x = [1, 2",
            "/* open comment",
            "\"unterminated",
            "def f():",
            "    pass",
            "let y = 1;",
            "",
        ];
        let mut at = rng.usize(..=text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        match rng.u8(..7) {
            0 => {
                let typed = TYPED[rng.usize(..TYPED.len())] as char;
                format!("{}{typed}{}", &text[..at], &text[at..])
            }
            1 => {
                let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                format!("{}{}", &text[..at], &text[end..])
            }
            2 => format!("{}{}", &text[..line_start], &text[line_end..]),
            3 => format!(
                "{}{}{}",
                &text[..line_end],
                &text[line_start..line_end],
                &text[line_end..]
            ),
            4 => format!("{}    {}", &text[..line_start], &text[line_start..]),
            5 => {
                let line = LINES[rng.usize(..LINES.len())];
                format!("{}{line}\n{}", &text[..line_start], &text[line_start..])
            }
            _ => {
                let line = LINES[rng.usize(..LINES.len())];
                format!("{}{line}\n{}", &text[..line_start], &text[line_end..])
            }
        }
    }

    fn parsed_after(after: AfterTree, text: &str) -> ParsedText {
        match after {
            AfterTree::Parsed(parsed) => parsed,
            AfterTree::Deferred(deferred) => deferred.parse(text).unwrap(),
        }
    }

    /// The agent's loop in miniature: random edits, each checked from the tree the previous
    /// check kept and against the reference check (two full parses), and kept when accepted.
    /// Both ways must reach the very same verdict and report, and the kept tree must be the
    /// tree a fresh parse gives.
    #[test]
    fn the_verdict_from_a_kept_tree_is_the_full_checks() {
        let mut quick = 0;
        let mut refused = 0;
        for (index, language) in Language::ALL.into_iter().enumerate() {
            let mut rng = fastrand::Rng::with_seed(0x6A_12D0 + index as u64);
            let mut text = sample(language);
            let mut kept = ParsedText::parse(language, &text).unwrap();
            for step in 0..30 {
                let after = random_edit(&mut rng, &text);
                let expected = check_edit(language, &text, &after).unwrap();
                // From the kept tree with the quick check on every size of file, then the
                // full way alone, then cold.
                let checked = check_from(Some(kept.clone()), language, &text, &after, 0).unwrap();
                assert_eq!(
                    checked.report, expected,
                    "{language} step {step}: {text:?} -> {after:?}"
                );
                let full =
                    check_from(Some(kept.clone()), language, &text, &after, usize::MAX).unwrap();
                assert_eq!(full.report, expected, "{language} step {step}, full way");
                assert!(matches!(full.after, AfterTree::Parsed(_)));
                let cold = check_from(None, language, &text, &after, 0).unwrap();
                assert_eq!(cold.report, expected, "{language} step {step}, cold");

                if matches!(checked.after, AfterTree::Deferred(_)) {
                    quick += 1;
                }
                if expected.is_some() {
                    refused += 1;
                    continue;
                }
                kept = parsed_after(checked.after, &after);
                text = after;
                let fresh = crate::parse(language, &text).unwrap();
                assert_eq!(
                    kept.tree().root_node().to_sexp(),
                    fresh.root_node().to_sexp(),
                    "{language} step {step}: the kept tree is not the fresh parse's"
                );
            }
        }
        // Both ways are exercised: this is no test of one of them alone.
        assert!(quick > 80, "{quick} quick verdicts");
        assert!(refused > 80, "{refused} refusals");
    }

    /// `count` small top-level Python functions.
    fn python_module(count: usize) -> String {
        (0..count)
            .map(|n| format!("def step_{n}(a):\n    b = a + {n}\n    return [b, {n}]\n\n\n"))
            .collect()
    }

    fn check_quickly(language: Language, before: &str, after: &str) -> Checked {
        let old = ParsedText::parse(language, before).unwrap();
        let checked = check_from(Some(old), language, before, after, 0).unwrap();
        assert_eq!(
            checked.report,
            check_edit(language, before, after).unwrap(),
            "{after}"
        );
        checked
    }

    #[test]
    fn a_clean_edit_is_judged_from_its_window_and_the_whole_text_reparsed_later() {
        let before = python_module(40);
        let after = before.replacen("b = a + 20\n", "b = a - 20\n", 1);
        let checked = check_quickly(Language::Python, &before, &after);
        let AfterTree::Deferred(deferred) = checked.after else {
            panic!("the quick check did not decide");
        };
        assert!(
            deferred.window.len() < before.len() / 10,
            "{:?}",
            deferred.window
        );
        let kept = deferred.parse(&after).unwrap();
        let fresh = crate::parse(Language::Python, &after).unwrap();
        assert_eq!(
            kept.tree().root_node().to_sexp(),
            fresh.root_node().to_sexp()
        );
    }

    /// What the window cannot settle goes the full way: errors near the edit, and edits that
    /// reach a guard (an unclosed bracket or string; JavaScript's automatic semicolon not
    /// inserted before a `(`, which makes the line before a call). A decorator put before a
    /// function joins that function inside the window, and is settled there.
    #[test]
    fn what_the_window_cannot_settle_goes_the_full_way() {
        let python = python_module(40);
        let broken = python.replacen("def step_21(a):", "def step_21(a:", 1);
        let javascript: String = (0..40)
            .map(|n| format!("let v{n} = f{n}\nconsole.log(v{n})\n"))
            .collect();
        // (language, before, after, refused, decided by the window)
        let cases = [
            (
                Language::Python,
                broken.clone(),
                broken.replacen("b = a + 20\n", "b = a - 20\n", 1),
                false,
                false,
            ),
            (
                Language::Python,
                python.clone(),
                python.replacen("return [b, 20]", "return [b, 20", 1),
                true,
                false,
            ),
            (
                Language::Python,
                python.clone(),
                python.replacen("b = a + 20", "b = \"a + 20", 1),
                true,
                false,
            ),
            (
                Language::JavaScript,
                javascript.clone(),
                javascript.replacen("console.log(v20)\n", "console.log(v20)\n(v20)\n", 1),
                false,
                false,
            ),
            (
                Language::Python,
                python.clone(),
                python.replacen("    return [b, 20]\n", "    return [b, 20]\n@cache\n", 1),
                false,
                true,
            ),
        ];
        for (language, before, after, refused, quick) in cases {
            let checked = check_quickly(language, &before, &after);
            assert_eq!(checked.report.is_some(), refused, "{after}");
            assert_eq!(
                matches!(checked.after, AfterTree::Deferred(_)),
                quick,
                "{after}"
            );
        }
    }
}
