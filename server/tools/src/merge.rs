//! Three-way merge by lines, for an agent's change that meets a user who kept typing.
//!
//! The agent computed its change (`ours`) from a text (`base`) the user has since changed
//! (`theirs`). When the two sides changed different lines, the merge applies the agent's change
//! to the user's text; when they changed the same lines, it stops with a [`Conflict`] that says
//! what the user changed there, so the model can redo its change without reading the whole file
//! again.
//!
//! Lines keep their line breaks (`\n`, `\r\n`), so a merge of CRLF texts stays CRLF. Two changes
//! conflict when their replaced lines overlap, when both insert at the same place (their order
//! is unknowable), or when one inserts strictly inside the lines the other replaces. Changes to
//! adjacent lines do not conflict: the user typing on the line above the one the agent rewrites
//! is the common case this exists for.

use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{capture_diff_slices_deadline, Algorithm, DiffOp};

/// A diff that takes longer gives coarser hunks (still correct, only more likely to conflict).
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);
/// Lines of context around the user's changes in a conflict's description.
const CONTEXT_LINES: usize = 2;
/// Changes of the user this many lines from the agent's are shown with the conflict.
const NEARBY_LINES: usize = 3;
/// Cap of a conflict's description.
const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;

/// One side's change: `base` lines `replaced` become `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk<'a> {
    replaced: Range<usize>,
    lines: Vec<&'a str>,
}

/// The agent's change and the user's touch the same lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// 0-based lines of `base` the agent's change replaces (the first conflicting change).
    pub ours: Range<usize>,
    /// What the user changed near there, as a unified diff of `base` → `theirs` with line
    /// numbers; capped.
    pub theirs_nearby: String,
}

/// The lines of `text`, each with its line break.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The hunks that turn `base` into `other`, in order, adjacent deletes and inserts joined.
fn hunks<'a>(base: &[&str], other: &[&'a str]) -> Vec<Hunk<'a>> {
    let deadline = Instant::now() + DIFF_TIMEOUT;
    let ops = capture_diff_slices_deadline(Algorithm::Myers, base, other, Some(deadline));
    let mut hunks: Vec<Hunk<'a>> = Vec::new();
    let mut open = false;
    for op in ops {
        if let DiffOp::Equal { .. } = op {
            open = false;
            continue;
        }
        let (old, new) = (op.old_range(), op.new_range());
        match hunks.last_mut() {
            Some(last) if open => {
                last.replaced.end = old.end;
                last.lines.extend_from_slice(&other[new]);
            }
            _ => hunks.push(Hunk {
                replaced: old,
                lines: other[new].to_vec(),
            }),
        }
        open = true;
    }
    hunks
}

/// Whether two changes of the same base cannot both be made without choosing between them.
fn conflicts(a: &Hunk, b: &Hunk) -> bool {
    if a == b {
        return false;
    }
    let (a_range, b_range) = (&a.replaced, &b.replaced);
    match (a_range.is_empty(), b_range.is_empty()) {
        (true, true) => a_range.start == b_range.start,
        (true, false) => b_range.start < a_range.start && a_range.start < b_range.end,
        (false, true) => a_range.start < b_range.start && b_range.start < a_range.end,
        (false, false) => a_range.start < b_range.end && b_range.start < a_range.end,
    }
}

/// `ours` (the agent's change of `base`) applied to `theirs` (the user's), or the conflict.
pub fn merge(base: &str, theirs: &str, ours: &str) -> Result<String, Conflict> {
    if theirs == base {
        return Ok(ours.to_owned());
    }
    if ours == base || ours == theirs {
        return Ok(theirs.to_owned());
    }
    let base_lines = lines(base);
    let their_hunks = hunks(&base_lines, &lines(theirs));
    let our_hunks = hunks(&base_lines, &lines(ours));
    if let Some(ours_hunk) = our_hunks
        .iter()
        .find(|ours| their_hunks.iter().any(|theirs| conflicts(ours, theirs)))
    {
        return Err(Conflict {
            ours: ours_hunk.replaced.clone(),
            theirs_nearby: describe_nearby(base, theirs, &ours_hunk.replaced),
        });
    }

    // Both lists are in base order; at one place an insertion goes before a replacement that
    // starts there, and a change both sides made goes in once.
    let mut all: Vec<(&Hunk, bool)> = their_hunks
        .iter()
        .map(|hunk| (hunk, false))
        .chain(our_hunks.iter().map(|hunk| (hunk, true)))
        .collect();
    all.sort_by_key(|(hunk, ours)| (hunk.replaced.start, !hunk.replaced.is_empty(), *ours));
    all.dedup_by(|a, b| a.0 == b.0);
    let mut merged = String::with_capacity(theirs.len().max(ours.len()));
    let mut copied = 0;
    for (hunk, _) in all {
        for line in &base_lines[copied..hunk.replaced.start] {
            merged.push_str(line);
        }
        for line in &hunk.lines {
            merged.push_str(line);
        }
        copied = hunk.replaced.end;
    }
    for line in &base_lines[copied..] {
        merged.push_str(line);
    }
    Ok(merged)
}

/// The user's changes (`base` → `theirs`) within a few lines of `near` (0-based `base` lines),
/// as unified-diff hunks with `theirs`' line numbers; empty when there are none.
pub fn describe_nearby(base: &str, theirs: &str, near: &Range<usize>) -> String {
    let base_lines = lines(base);
    let their_lines = lines(theirs);
    let from = near.start.saturating_sub(NEARBY_LINES);
    let to = near.end + NEARBY_LINES;
    let deadline = Instant::now() + DIFF_TIMEOUT;
    let ops =
        capture_diff_slices_deadline(Algorithm::Myers, &base_lines, &their_lines, Some(deadline));
    let mut text = String::new();
    for group in similar::group_diff_ops(ops, CONTEXT_LINES) {
        let touches = group.iter().any(|op| {
            let old = op.old_range();
            !matches!(op, DiffOp::Equal { .. }) && old.start <= to && from <= old.end
        });
        if !touches {
            continue;
        }
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let new_start = first.new_range().start;
        let new_end = last.new_range().end;
        let _ = writeln!(
            text,
            "@@ the user's change, now lines {}-{} @@",
            new_start + 1,
            new_end.max(new_start + 1)
        );
        for op in group {
            for index in op.old_range() {
                if !matches!(op, DiffOp::Equal { .. }) {
                    push_line(&mut text, '-', base_lines[index]);
                }
            }
            for index in op.new_range() {
                let sign = if matches!(op, DiffOp::Equal { .. }) {
                    ' '
                } else {
                    '+'
                };
                push_line(&mut text, sign, their_lines[index]);
            }
        }
        if text.len() > MAX_DESCRIPTION_BYTES {
            let mut cut = MAX_DESCRIPTION_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[… cut]\n");
            break;
        }
    }
    text
}

fn push_line(text: &mut String, sign: char, line: &str) {
    text.push(sign);
    text.push_str(line.trim_end_matches(['\n', '\r']));
    text.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "one\ntwo\nthree\nfour\nfive\n";

    #[test]
    fn changes_on_different_lines_both_land() {
        let theirs = "one\ntwo\nthree\nfour\nfive typed\n";
        let ours = "ONE\ntwo\nthree\nfour\nfive\n";
        assert_eq!(
            merge(BASE, theirs, ours).unwrap(),
            "ONE\ntwo\nthree\nfour\nfive typed\n"
        );
    }

    #[test]
    fn adjacent_lines_merge() {
        // The user edits the lines above and below the one the agent rewrites.
        let theirs = "one\ntwo typed\nthree\nfour typed\nfive\n";
        let ours = "one\ntwo\nTHREE\nfour\nfive\n";
        assert_eq!(
            merge(BASE, theirs, ours).unwrap(),
            "one\ntwo typed\nTHREE\nfour typed\nfive\n"
        );
    }

    #[test]
    fn a_line_inserted_above_or_below_the_agents_line_merges_in_order() {
        let above = "one\ntwo\nnew\nthree\nfour\nfive\n";
        let below = "one\ntwo\nthree\nnew\nfour\nfive\n";
        let ours = "one\ntwo\nTHREE\nfour\nfive\n";
        assert_eq!(
            merge(BASE, above, ours).unwrap(),
            "one\ntwo\nnew\nTHREE\nfour\nfive\n"
        );
        assert_eq!(
            merge(BASE, below, ours).unwrap(),
            "one\ntwo\nTHREE\nnew\nfour\nfive\n"
        );
    }

    #[test]
    fn the_same_line_conflicts_and_says_what_the_user_typed() {
        let theirs = "one\ntwo\nthree typed\nfour\nfive\n";
        let ours = "one\ntwo\nTHREE\nfour\nfive\n";
        let conflict = merge(BASE, theirs, ours).unwrap_err();
        assert_eq!(conflict.ours, 2..3);
        assert_eq!(
            conflict.theirs_nearby,
            "@@ the user's change, now lines 1-5 @@\n one\n two\n-three\n+three typed\n four\n five\n"
        );
    }

    #[test]
    fn both_inserting_at_one_place_conflicts() {
        let theirs = "one\ntyped\ntwo\nthree\nfour\nfive\n";
        let ours = "one\nagent\ntwo\nthree\nfour\nfive\n";
        assert!(merge(BASE, theirs, ours).is_err());
    }

    #[test]
    fn an_insertion_inside_the_replaced_lines_conflicts() {
        let theirs = "one\ntwo\ntyped\nthree\nfour\nfive\n";
        let ours = "one\nTWO AND THREE\nfour\nfive\n";
        assert!(merge(BASE, theirs, ours).is_err());
    }

    #[test]
    fn deletions() {
        // The user deletes a line away from the agent's change: merged.
        let theirs = "one\ntwo\nthree\nfour\n";
        let ours = "ONE\ntwo\nthree\nfour\nfive\n";
        assert_eq!(
            merge(BASE, theirs, ours).unwrap(),
            "ONE\ntwo\nthree\nfour\n"
        );
        // The user deletes the line the agent changes: a conflict.
        let theirs = "one\ntwo\nfour\nfive\n";
        let ours = "one\ntwo\nTHREE\nfour\nfive\n";
        let conflict = merge(BASE, theirs, ours).unwrap_err();
        assert!(conflict.theirs_nearby.contains("-three"), "{conflict:?}");
        // The agent deletes a line next to one the user changed: merged.
        let theirs = "one\ntwo typed\nthree\nfour\nfive\n";
        let ours = "one\ntwo\nfour\nfive\n";
        assert_eq!(
            merge(BASE, theirs, ours).unwrap(),
            "one\ntwo typed\nfour\nfive\n"
        );
    }

    #[test]
    fn crlf_lines_keep_their_endings() {
        let base = "one\r\ntwo\r\nthree\r\n";
        let theirs = "one typed\r\ntwo\r\nthree\r\n";
        let ours = "one\r\ntwo\r\nTHREE\r\n";
        assert_eq!(
            merge(base, theirs, ours).unwrap(),
            "one typed\r\ntwo\r\nTHREE\r\n"
        );
        let conflict = merge(base, "one\r\ntwo\r\nthree typed\r\n", ours).unwrap_err();
        assert!(
            conflict.theirs_nearby.contains("+three typed\n"),
            "{conflict:?}"
        );
    }

    #[test]
    fn a_last_line_without_a_break_is_a_line() {
        let base = "one\ntwo";
        assert_eq!(
            merge(base, "one\ntwo typed", "ONE\ntwo").unwrap(),
            "ONE\ntwo typed"
        );
        assert!(merge(base, "one\ntwo typed", "one\nTWO").is_err());
    }

    #[test]
    fn the_same_change_on_both_sides_is_made_once() {
        let same = "one\nTWO\nthree\nfour\nfive\n";
        assert_eq!(merge(BASE, same, same).unwrap(), same);
        let theirs = "one\nTWO\nthree\nfour\nfive typed\n";
        assert_eq!(merge(BASE, theirs, same).unwrap(), theirs);
    }

    #[test]
    fn far_changes_are_left_out_of_the_description() {
        let base: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let theirs = base
            .replace("line 2\n", "line 2 typed\n")
            .replace("line 20\n", "line 20 typed\n");
        let text = describe_nearby(&base, &theirs, &(19..20));
        assert!(text.contains("+line 20 typed"), "{text}");
        assert!(!text.contains("line 2 typed"), "{text}");
    }
}
