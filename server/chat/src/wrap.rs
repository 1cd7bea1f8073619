//! Styled text wrapped to a width: words kept whole where they fit, cut where a word is wider
//! than the line, widths counted in terminal cells (a CJK character or an emoji is two).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// The cells `text` takes.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// `spans` as lines of at most `width` cells, each line after the first starting with `indent`
/// (and the first with `first`).
pub fn wrap(
    spans: &[Span<'static>],
    width: usize,
    first: Span<'static>,
    indent: Span<'static>,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = vec![first.clone()];
    let mut used = self::width(&first.content);
    let indent_width = self::width(&indent.content);
    let width = width.max(indent_width.max(self::width(&first.content)) + 8);
    let mut at_line_start = true;
    for span in spans {
        // Hard line breaks inside a span start new lines.
        for (index, segment) in span.content.split('\n').enumerate() {
            if index > 0 {
                lines.push(Line::from(std::mem::take(&mut line)));
                line.push(indent.clone());
                used = indent_width;
                at_line_start = true;
            }
            for word in words(segment) {
                let word_width = self::width(word);
                let is_space = word.chars().all(char::is_whitespace);
                if is_space {
                    if at_line_start {
                        continue;
                    }
                    if used + word_width > width {
                        lines.push(Line::from(std::mem::take(&mut line)));
                        line.push(indent.clone());
                        used = indent_width;
                        at_line_start = true;
                        continue;
                    }
                    push(&mut line, word, span.style);
                    used += word_width;
                    continue;
                }
                if used + word_width > width && !at_line_start && word_width <= width - indent_width
                {
                    trim_trailing_space(&mut line);
                    lines.push(Line::from(std::mem::take(&mut line)));
                    line.push(indent.clone());
                    used = indent_width;
                }
                // A word wider than a whole line is cut.
                let mut rest = word;
                while used + self::width(rest) > width {
                    let (head, tail) = split_at_width(rest, width.saturating_sub(used).max(1));
                    push(&mut line, head, span.style);
                    lines.push(Line::from(std::mem::take(&mut line)));
                    line.push(indent.clone());
                    used = indent_width;
                    rest = tail;
                    if rest.is_empty() {
                        break;
                    }
                }
                if !rest.is_empty() {
                    push(&mut line, rest, span.style);
                    used += self::width(rest);
                }
                at_line_start = false;
            }
        }
    }
    trim_trailing_space(&mut line);
    lines.push(Line::from(line));
    lines
}

/// `text` cut into lines of at most `width` cells, character by character (code, output).
pub fn hard_wrap(
    text: &str,
    width: usize,
    style: Style,
    prefix: Span<'static>,
) -> Vec<Line<'static>> {
    let room = width.saturating_sub(self::width(&prefix.content)).max(8);
    let mut lines = Vec::new();
    let mut rest = text;
    loop {
        let (head, tail) = split_at_width(rest, room);
        lines.push(Line::from(vec![
            prefix.clone(),
            Span::styled(head.to_owned(), style),
        ]));
        if tail.is_empty() {
            break;
        }
        rest = tail;
    }
    lines
}

fn push(line: &mut Vec<Span<'static>>, text: &str, style: Style) {
    if let Some(last) = line.last_mut() {
        if last.style == style && !last.content.is_empty() {
            last.content.to_mut().push_str(text);
            return;
        }
    }
    line.push(Span::styled(text.to_owned(), style));
}

fn trim_trailing_space(line: &mut [Span<'static>]) {
    if let Some(last) = line.last_mut() {
        let trimmed = last.content.trim_end().len();
        if trimmed != last.content.len() && trimmed > 0 {
            last.content.to_mut().truncate(trimmed);
        }
    }
}

/// Runs of non-space and runs of space.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != space)
            .map_or(rest.len(), |(at, _)| at);
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// The longest head of `text` that fits in `width` cells (at least one character), and the rest.
pub fn split_at_width(text: &str, width: usize) -> (&str, &str) {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > width && at > 0 {
            return text.split_at(at);
        }
        used += w;
    }
    (text, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn words_wrap_at_the_width_and_long_words_are_cut() {
        let spans = [Span::raw("the quick brown fox jumps over the lazy dog")];
        assert_eq!(
            plain(&wrap(&spans, 16, Span::raw("• "), Span::raw("  "))),
            [
                "• the quick",
                "  brown fox",
                "  jumps over the",
                "  lazy dog"
            ]
        );
        let spans = [Span::raw("a 0123456789012345678901234 b")];
        assert_eq!(
            plain(&wrap(&spans, 12, Span::raw(""), Span::raw(""))),
            ["a 0123456789", "012345678901", "234 b"]
        );
    }

    #[test]
    fn wide_characters_count_two_cells() {
        assert_eq!(split_at_width("日本語です", 5), ("日本", "語です"));
        assert_eq!(width("日本"), 4);
    }
}
