//! Code as coloured terminal lines: the syntax crate's highlights (`tandem_syntax::highlight`)
//! mapped to the theme's colours, line by line; a language it does not know is plain text.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tandem_syntax::highlight::{fence_language, highlights};

use crate::theme::Theme;

/// `code` (written in `language`, a fence's info string) as lines. A unified diff (a `diff`
/// fence, or an unnamed one that reads as one, as Tandem's approval questions show a change)
/// has its added and removed lines coloured.
pub fn code(language: &str, code: &str, theme: &Theme) -> Vec<Line<'static>> {
    let looks_like_diff = language.is_empty() && code.contains("\n@@ ") && code.contains("--- ");
    if language == "diff" || looks_like_diff {
        return code
            .split('\n')
            .map(|line| {
                let style = if line.starts_with("+++") || line.starts_with("---") {
                    theme.heading
                } else if line.starts_with('+') {
                    theme.added
                } else if line.starts_with('-') {
                    theme.removed
                } else if line.starts_with("@@") {
                    theme.hunk
                } else {
                    Style::default()
                };
                Line::from(Span::styled(line.replace('\t', "    "), style))
            })
            .collect();
    }
    let ranges = match fence_language(language) {
        Some(language) if theme.color => highlights(language, code),
        _ => Vec::new(),
    };
    // The style of each byte's piece, then the pieces cut at line breaks.
    let mut lines = vec![Vec::new()];
    let mut at = 0;
    let emit = |text: &str, style: Style, lines: &mut Vec<Vec<Span<'static>>>| {
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                lines.push(Vec::new());
            }
            if !piece.is_empty() {
                if let Some(line) = lines.last_mut() {
                    line.push(Span::styled(piece.replace('\t', "    "), style));
                }
            }
        }
    };
    for (range, kind) in ranges {
        // Ranges come in order on character boundaries; one that does not is left plain.
        let (Some(before), Some(piece)) = (code.get(at..range.start), code.get(range.clone()))
        else {
            continue;
        };
        emit(before, Style::default(), &mut lines);
        emit(piece, theme.code(kind), &mut lines);
        at = range.end;
    }
    emit(code.get(at..).unwrap_or(""), Style::default(), &mut lines);
    lines.into_iter().map(Line::from).collect()
}
