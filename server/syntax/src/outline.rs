//! Outlines: what a file's `outline.scm` keeps (`@item`s, labelled by their `@context` and
//! `@name` captures, e.g. `impl Parser`, `fn parse_expr`) and which bodies it elides (`@body`).
//! The outline of a large file is what `read_file` and `outline` show instead of its text; the
//! same items give the chain of definitions around the cursor.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, QueryCursor, Tree};

use crate::{Language, Result};

/// One item of an outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineItem {
    /// The `@context` and `@name` texts in source order, joined by spaces: `fn parse_expr`.
    pub label: String,
    /// Bytes of the `@item` node.
    pub range: Range<usize>,
    /// 0-based lines of the item's first and last byte.
    pub start_line: u32,
    pub end_line: u32,
    /// 0-based line of the last `@name` capture (decorators and attributes can put it below
    /// `start_line`).
    pub name_line: u32,
    /// The part an outline elides, if the query marks one.
    pub body: Option<Body>,
    /// How many items enclose this one.
    pub depth: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub range: Range<usize>,
    /// 0-based lines of the body's first and last byte.
    pub start_line: u32,
    pub end_line: u32,
}

/// A label longer than this is cut: it is a name, not the code.
const MAX_LABEL_CHARS: usize = 120;
/// Header lines shown per item at most (a signature over many lines).
const MAX_HEADER_LINES: u32 = 10;
/// Characters of one outline line shown at most.
const MAX_LINE_CHARS: usize = 200;

/// The outline items of `source`, in source order (an enclosing item before what it encloses).
pub fn outline_items(language: Language, tree: &Tree, source: &str) -> Result<Vec<OutlineItem>> {
    let queries = language.queries()?;
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&queries.outline, tree.root_node(), source.as_bytes());
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    while let Some(found) = matches.next() {
        let mut item: Option<Node> = None;
        let mut body: Option<Node> = None;
        let mut words: Vec<(usize, &str)> = Vec::new();
        let mut name_line = None;
        for capture in found.captures() {
            let index = Some(capture.index);
            if capture.index == queries.outline_item {
                item = Some(capture.node);
            } else if index == queries.outline_body {
                body = Some(capture.node);
            } else if index == queries.outline_name || index == queries.outline_context {
                if index == queries.outline_name {
                    name_line = name_line.max(Some(row(capture.node.start_position().row)));
                }
                if let Some(text) = source.get(capture.node.byte_range()) {
                    words.push((capture.node.start_byte(), text));
                }
            }
        }
        let Some(item) = item else { continue };
        if !seen.insert(item.byte_range()) {
            continue;
        }
        words.sort_by_key(|(start, _)| *start);
        let label = words
            .iter()
            .map(|(_, text)| text.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        items.push(OutlineItem {
            label: cut_chars(&label, MAX_LABEL_CHARS),
            range: item.byte_range(),
            start_line: row(item.start_position().row),
            end_line: row(item.end_position().row),
            name_line: name_line.unwrap_or(row(item.start_position().row)),
            body: body.map(|body| Body {
                range: body.byte_range(),
                start_line: row(body.start_position().row),
                end_line: row(body.end_position().row),
            }),
            depth: 0,
        });
    }
    items.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
    });
    let mut open: Vec<Range<usize>> = Vec::new();
    for item in &mut items {
        while open
            .last()
            .is_some_and(|outer| outer.end < item.range.end || outer.end <= item.range.start)
        {
            open.pop();
        }
        item.depth = u32::try_from(open.len()).unwrap_or(u32::MAX);
        open.push(item.range.clone());
    }
    Ok(items)
}

/// The outline as the model reads it: each item's header lines (its first line through the line
/// its body opens on) numbered like `read_file` (`{line:>6}\t{text}`), and under an elided body
/// a line saying which lines it spans. Items inside an elided body are not shown.
pub fn render_outline(items: &[OutlineItem], source: &str) -> String {
    let lines: Vec<&str> = source
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    // Line index -> the elision note shown after it.
    let mut shown: BTreeMap<u32, Option<String>> = BTreeMap::new();
    let mut elided: Vec<Range<usize>> = Vec::new();
    for item in items {
        if elided
            .iter()
            .any(|body| body.start <= item.range.start && item.range.end <= body.end)
        {
            continue;
        }
        let header_end = match &item.body {
            Some(body) => {
                let line_start = source[..body.range.start.min(source.len())]
                    .rfind('\n')
                    .map_or(0, |at| at + 1);
                let opens_on_its_own_line = source
                    .get(line_start..body.range.start)
                    .is_some_and(|before| before.trim().is_empty());
                if opens_on_its_own_line {
                    body.start_line.saturating_sub(1).max(item.start_line)
                } else {
                    body.start_line
                }
            }
            None => item.start_line,
        };
        let header_end = header_end.min(item.start_line + MAX_HEADER_LINES - 1);
        for line in item.start_line..=header_end {
            shown.entry(line).or_insert(None);
        }
        // Decorators and attributes put the name a few lines down; a name far below the start
        // (`} point_t;` closing a typedef) is shown without the lines in between.
        if item.body.is_none() && item.name_line > header_end {
            let from = if item.name_line - header_end <= 3 {
                header_end + 1
            } else {
                item.name_line
            };
            for line in from..=item.name_line {
                shown.entry(line).or_insert(None);
            }
        }
        if let Some(body) = &item.body {
            if body.end_line > header_end {
                let indent: String = lines
                    .get(item.start_line as usize)
                    .map(|line| line.chars().take_while(|c| c.is_whitespace()).collect())
                    .unwrap_or_default();
                let (first, last) = (header_end + 2, body.end_line + 1);
                let count = last - first + 1;
                let noun = if count == 1 { "line" } else { "lines" };
                shown.insert(
                    header_end,
                    Some(format!("{indent}    … {count} {noun} ({first}-{last})")),
                );
                elided.push(body.range.clone());
            }
        }
    }
    let mut out = String::new();
    for (line, note) in shown {
        let text = lines.get(line as usize).copied().unwrap_or("");
        out.push_str(&format!(
            "{:>6}\t{}\n",
            line + 1,
            cut_chars(text, MAX_LINE_CHARS)
        ));
        if let Some(note) = note {
            out.push_str(&format!("{:>6}\t{note}\n", ""));
        }
    }
    out
}

fn row(row: usize) -> u32 {
    u32::try_from(row).unwrap_or(u32::MAX)
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
