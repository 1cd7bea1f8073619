//! Where a window of text around a cursor should start and end so that it holds whole syntax
//! nodes: a completion model shown a prefix that starts mid-statement (or mid-string) reads it
//! as broken code. Byte offsets only; the caller owns the text and the tree.

use tree_sitter::{Node, Tree};

/// Where a prefix that may reach back to `start` should start, for the cursor at `cursor` (byte
/// offsets into the text `tree` was parsed from): at the first child, at or after `start`, of
/// the smallest node spanning `start..cursor`. Where that would drop more than `max_loss` bytes
/// (the window starts early in a long function whose end is far from the cursor), the child
/// holding `start` is searched the same way, so a statement inside it is where the prefix
/// starts. `None` when no boundary lies between `start` and the cursor (`start` is inside the
/// token at the cursor).
pub fn prefix_start(tree: &Tree, start: usize, cursor: usize, max_loss: usize) -> Option<usize> {
    let spanning = (start < cursor)
        .then(|| tree.root_node().descendant_for_byte_range(start, cursor))
        .flatten()?;
    first_start(spanning, start, cursor, max_loss)
}

/// Where a suffix that may reach to `end` should end: the mirror of [`prefix_start`], at the
/// end of the last child, at or before `end`, of the smallest node spanning `cursor..end`.
pub fn suffix_end(tree: &Tree, cursor: usize, end: usize, max_loss: usize) -> Option<usize> {
    let spanning = (cursor < end)
        .then(|| tree.root_node().descendant_for_byte_range(cursor, end))
        .flatten()?;
    last_end(spanning, cursor, end, max_loss)
}

/// The start of the first child of `node` (or of its child holding `start`, and so on down)
/// that lies in `start..=cursor`, at most `max_loss` bytes after `start`.
fn first_start(mut node: Node<'_>, start: usize, cursor: usize, max_loss: usize) -> Option<usize> {
    loop {
        let mut holding = None;
        for child in children(node) {
            let at = child.start_byte();
            if at >= start {
                if at - start <= max_loss && at <= cursor {
                    return Some(at);
                }
                break;
            }
            if child.end_byte() > start {
                holding = Some(child);
            }
        }
        node = holding?;
    }
}

/// The end of the last child of `node` (or of its child holding `end`, and so on down) that
/// lies in `cursor..=end`, at most `max_loss` bytes before `end`.
fn last_end(mut node: Node<'_>, cursor: usize, end: usize, max_loss: usize) -> Option<usize> {
    loop {
        let mut holding = None;
        let mut last = None;
        for child in children(node) {
            let at = child.end_byte();
            if at <= end {
                last = Some(at);
            } else {
                if child.start_byte() < end {
                    holding = Some(child);
                }
                break;
            }
        }
        if let Some(at) = last.filter(|&at| end - at <= max_loss && at >= cursor) {
            return Some(at);
        }
        node = holding?;
    }
}

fn children(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    (0..node.child_count()).filter_map(move |at| node.child(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, Language};

    /// `«` and `»` mark the window, `|` the cursor; the answer is the window's text between the
    /// boundaries found (`«`/`»` where none was).
    fn cut(marked: &str, max_loss: usize) -> String {
        let start = marked.find('«').unwrap();
        let cursor = marked.find('|').unwrap() - '«'.len_utf8();
        let end = marked.find('»').unwrap() - '«'.len_utf8() - 1;
        let text: String = marked.chars().filter(|c| !"«|»".contains(*c)).collect();
        let tree = parse(Language::Rust, &text).unwrap();
        let first = prefix_start(&tree, start, cursor, max_loss);
        let last = suffix_end(&tree, cursor, end, max_loss);
        format!(
            "{}{}|{}{}",
            if first.is_some() { "" } else { "«" },
            &text[first.unwrap_or(start)..cursor],
            &text[cursor..last.unwrap_or(end)],
            if last.is_some() { "" } else { "»" },
        )
    }

    #[test]
    fn windows_start_and_end_at_whole_statements_and_items() {
        let cases = [
            // Mid-statement at both edges: the next whole statement, the last whole one.
            (
                "fn f() {\n    let a = «compute(1);\n    let b = 2;\n    let c = |\n    let d = 4;\n    let e = f»ive();\n}\n",
                100,
                "let b = 2;\n    let c = |\n    let d = 4;",
            ),
            // Mid-string: the string is not where the prefix starts.
            (
                "fn f() {\n    let s = \"a long «string\";\n    g(|);\n    h();\n}»\n",
                100,
                "g(|);\n    h();\n}",
            ),
            // The window reaches into the item before: it starts at the next item.
            (
                "fn one() {\n    1\n«}\n\nfn two() {\n    |\n}\n»",
                100,
                "fn two() {\n    |\n}",
            ),
            // The function holding the window's start ends far from it: a statement in it.
            (
                "fn one() {\n    let a = «1;\n    let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = 5;\n    let f = 6;\n}\nfn two() { | }»\n",
                30,
                "let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = 5;\n    let f = 6;\n}\nfn two() { | }",
            ),
            // The same window with more to lose: the next item.
            (
                "fn one() {\n    let a = «1;\n    let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = 5;\n    let f = 6;\n}\nfn two() { | }»\n",
                1_000,
                "fn two() { | }",
            ),
            // Inside one token: nothing to cut at.
            ("fn f() { let «name|» = 1; }\n", 100, "«name|»"),
        ];
        for (marked, max_loss, expected) in cases {
            assert_eq!(cut(marked, max_loss), expected, "{marked}");
        }
    }
}
