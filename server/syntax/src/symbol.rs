//! The symbol under the cursor: the chain of outline items that enclose a position
//! (`impl Parser › fn parse_expr`) and the text of the innermost one, capped.

use tree_sitter::Tree;

use crate::outline::outline_items;
use crate::{Language, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolAtCursor {
    /// Labels of the enclosing items, outermost first.
    pub chain: Vec<String>,
    /// The innermost item's text, cut at a line boundary to the cap.
    pub text: String,
    /// 0-based lines of the innermost item.
    pub start_line: u32,
    pub end_line: u32,
    /// Whether `text` was cut.
    pub truncated: bool,
}

impl SymbolAtCursor {
    /// `impl Parser › fn parse_expr`.
    pub fn path(&self) -> String {
        self.chain.join(" › ")
    }
}

/// The items around byte `offset` of `source`, with the innermost one's text cut to at most
/// `max_bytes` (whole lines, and a last line saying how many were left out). `None` when no
/// item encloses the offset (top-level code, or a language whose outline has nothing there).
pub fn symbol_at(
    language: Language,
    tree: &Tree,
    source: &str,
    offset: usize,
    max_bytes: usize,
) -> Result<Option<SymbolAtCursor>> {
    let items = outline_items(language, tree, source)?;
    let enclosing: Vec<_> = items
        .iter()
        .filter(|item| item.range.start <= offset && offset <= item.range.end)
        .filter(|item| !item.label.is_empty())
        .collect();
    let Some(innermost) = enclosing.last() else {
        return Ok(None);
    };
    // From the start of the item's line, so that its first line keeps its indentation.
    let line_start = source[..innermost.range.start.min(source.len())]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let whole = source.get(line_start..innermost.range.end).unwrap_or("");
    let mut text = String::new();
    let mut truncated = false;
    let mut lines = whole.split_inclusive('\n');
    for line in lines.by_ref() {
        if text.len() + line.len() > max_bytes {
            truncated = true;
            break;
        }
        text.push_str(line);
    }
    if truncated {
        let left = 1 + lines.count();
        text.push_str(&format!(
            "… ({left} more {})\n",
            if left == 1 { "line" } else { "lines" }
        ));
    }
    Ok(Some(SymbolAtCursor {
        chain: enclosing.iter().map(|item| item.label.clone()).collect(),
        text,
        start_line: innermost.start_line,
        end_line: innermost.end_line,
        truncated,
    }))
}
