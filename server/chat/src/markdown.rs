//! Markdown as terminal lines: headings, emphasis, inline code, links, lists (nested,
//! numbered, task items), block quotes, rules, tables and fenced code, coloured by
//! `highlight.rs`. An answer still streaming is rendered as it stands: an open code fence is a
//! code block to the end.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight;
use crate::theme::Theme;
use crate::wrap;

/// `text` rendered at `width` cells.
pub fn render(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut renderer = Renderer {
        theme,
        width,
        lines: Vec::new(),
        inline: Vec::new(),
        styles: vec![Style::default()],
        containers: Vec::new(),
        code: None,
        link: None,
        table: None,
        pending_first: None,
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        renderer.event(event);
    }
    if let Some((language, code)) = renderer.code.take() {
        renderer.code_block(&language, &code);
    }
    renderer.flush();
    while renderer.lines.last().is_some_and(|line| line.width() == 0) {
        renderer.lines.pop();
    }
    renderer.lines
}

enum Container {
    Quote,
    /// A list: the next item's number (`None`: bullets).
    List(Option<u64>),
    Item,
}

struct Renderer<'a> {
    theme: &'a Theme,
    width: usize,
    lines: Vec<Line<'static>>,
    /// The paragraph being built.
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// A code block being read: its language and text.
    code: Option<(String, String)>,
    link: Option<String>,
    table: Option<Vec<Vec<String>>>,
    /// The marker of a list item whose first line is still to come.
    pending_first: Option<String>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl FnOnce(Style) -> Style) {
        let style = change(self.style());
        self.styles.push(style);
    }

    /// The prefix of a line inside the current containers (quote bars, list indents).
    fn prefix(&self) -> String {
        let mut prefix = String::new();
        for container in &self.containers {
            match container {
                Container::Quote => prefix.push_str("│ "),
                Container::Item => prefix.push_str("  "),
                Container::List(_) => {}
            }
        }
        prefix
    }

    /// The prefix of a block's first line: the innermost list item's indent is its marker
    /// there, while the item's first line is still to come.
    fn first_prefix(&mut self) -> String {
        let Some(marker) = self.pending_first.take() else {
            return self.prefix();
        };
        let item = self
            .containers
            .iter()
            .rposition(|container| matches!(container, Container::Item));
        let mut prefix = String::new();
        for (index, container) in self.containers.iter().enumerate() {
            match container {
                Container::Quote => prefix.push_str("│ "),
                Container::Item if Some(index) == item => prefix.push_str(&marker),
                Container::Item => prefix.push_str("  "),
                Container::List(_) => {}
            }
        }
        prefix
    }

    fn blank_line(&mut self) {
        if self.lines.last().is_some_and(|line| line.width() > 0) {
            let prefix = self.prefix();
            let quote = prefix.trim_end().to_owned();
            self.lines
                .push(Line::from(Span::styled(quote, self.theme.quote)));
        }
    }

    /// Ends the paragraph being built.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let first = Span::styled(self.first_prefix(), self.theme.quote);
        let indent = Span::styled(self.prefix(), self.theme.quote);
        self.lines
            .extend(wrap::wrap(&spans, self.width, first, indent));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.last_mut().and_then(|row| row.last_mut()) {
                cell.push_str(text);
            }
            return;
        }
        let style = self.style();
        self.inline.push(Span::styled(text.to_owned(), style));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                if let Some(table) = &mut self.table {
                    if let Some(cell) = table.last_mut().and_then(|row| row.last_mut()) {
                        cell.push_str(&code);
                    }
                    return;
                }
                self.inline
                    .push(Span::styled(code.into_string(), self.theme.inline_code));
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.flush();
                self.blank_line();
                let width = self.width.min(60);
                self.lines
                    .push(Line::from(Span::styled("─".repeat(width), self.theme.dim)));
            }
            Event::TaskListMarker(done) => {
                let marker = if done { "☑ " } else { "☐ " };
                self.inline
                    .push(Span::styled(marker.to_owned(), self.theme.dim));
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph if self.pending_first.is_none() && !self.in_tight_item() => {
                self.blank_line();
            }
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank_line();
                let style = match level {
                    HeadingLevel::H1 => self.theme.heading.add_modifier(Modifier::UNDERLINED),
                    _ => self.theme.heading,
                };
                self.styles.push(style);
                let hashes = match level {
                    HeadingLevel::H1 => "",
                    HeadingLevel::H2 => "",
                    HeadingLevel::H3 => "### ",
                    HeadingLevel::H4 => "#### ",
                    HeadingLevel::H5 => "##### ",
                    HeadingLevel::H6 => "###### ",
                };
                if !hashes.is_empty() {
                    self.inline.push(Span::styled(hashes.to_owned(), style));
                }
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.blank_line();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                if self.pending_first.is_none() {
                    self.blank_line();
                }
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if !matches!(self.containers.last(), Some(Container::Item)) {
                    self.blank_line();
                }
                self.containers.push(Container::List(start));
            }
            Tag::Item => {
                self.flush();
                let marker = match self.containers.last_mut() {
                    Some(Container::List(Some(number))) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                self.containers.push(Container::Item);
                self.pending_first = Some(marker);
            }
            Tag::Emphasis => self.push_style(|style| style.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|style| style.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(|style| style.add_modifier(Modifier::CROSSED_OUT))
            }
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.into_string());
                let link = self.theme.link;
                self.push_style(|style| style.patch(link));
            }
            Tag::Table(_) => {
                self.flush();
                self.blank_line();
                self.table = Some(Vec::new());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|table| table.last_mut()) {
                    row.push(String::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((language, code)) = self.code.take() {
                    self.code_block(&language, &code);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Item => {
                self.flush();
                if self.pending_first.is_some() {
                    // An empty item still shows its marker.
                    let prefix = self.first_prefix();
                    self.lines.push(Line::from(prefix));
                }
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self
                        .inline
                        .iter()
                        .map(|span| span.content.as_ref())
                        .collect();
                    if !shown.ends_with(&url) && !url.starts_with('#') {
                        self.inline
                            .push(Span::styled(format!(" ({url})"), self.theme.dim));
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(&table);
                }
            }
            _ => {}
        }
    }

    fn in_tight_item(&self) -> bool {
        matches!(self.containers.last(), Some(Container::Item))
    }

    fn code_block(&mut self, language: &str, code: &str) {
        let first = self.first_prefix();
        let prefix = self.prefix();
        let code = code.strip_suffix('\n').unwrap_or(code);
        let gutter = Span::styled(format!("{prefix}▎ "), self.theme.dim);
        if !first.trim().is_empty() && first != prefix {
            self.lines
                .push(Line::from(Span::styled(first, self.theme.quote)));
        }
        for line in highlight::code(language, code, self.theme) {
            let text: String = line
                .spans
                .iter()
                .map(|span| span.content.as_ref())
                .collect();
            if wrap::width(&text) + wrap::width(&gutter.content) <= self.width {
                let mut spans = vec![gutter.clone()];
                spans.extend(line.spans);
                self.lines.push(Line::from(spans));
            } else {
                let style = line
                    .spans
                    .first()
                    .map(|span| span.style)
                    .unwrap_or_default();
                self.lines
                    .extend(wrap::hard_wrap(&text, self.width, style, gutter.clone()));
            }
        }
    }

    fn table_lines(&mut self, table: &[Vec<String>]) {
        let columns = table.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in table {
            for (column, cell) in row.iter().enumerate() {
                widths[column] = widths[column].max(wrap::width(cell.trim()));
            }
        }
        let prefix = self.prefix();
        for (index, row) in table.iter().enumerate() {
            let mut text = prefix.clone();
            for (column, width) in widths.iter().enumerate() {
                let cell = row.get(column).map(|cell| cell.trim()).unwrap_or("");
                if column > 0 {
                    text.push_str(" │ ");
                }
                text.push_str(cell);
                text.push_str(&" ".repeat(width.saturating_sub(wrap::width(cell))));
            }
            let style = if index == 0 {
                self.theme.heading
            } else {
                Style::default()
            };
            self.lines.extend(wrap::hard_wrap(
                text.trim_end(),
                self.width,
                style,
                Span::raw(""),
            ));
            if index == 0 {
                let rule: Vec<String> = widths.iter().map(|width| "─".repeat(*width)).collect();
                self.lines.push(Line::from(Span::styled(
                    format!("{prefix}{}", rule.join("─┼─")),
                    self.theme.dim,
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: usize) -> String {
        render(text, width, &Theme::plain())
            .iter()
            .map(|line| {
                let text: String = line
                    .spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect();
                format!("{}\n", text.trim_end())
            })
            .collect()
    }

    #[test]
    fn blocks_render_as_text_a_terminal_shows() {
        let markdown = "# Title\n\nSome *text* with `code` and a [link](https://x.dev).\n\n\
            - one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n\n\
            ```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |\n";
        expect_test::expect![[r#"
            Title

            Some text with code and a link (https://x.dev).

            • one
            • two
              • nested

            1. first
            2. second

            │ quoted

            ▎ fn main() {}

            a │ b
            ──┼───
            1 │ 22
        "#]]
        .assert_eq(&plain(markdown, 60));
    }

    #[test]
    fn no_markdown_a_model_writes_panics_at_any_width() {
        let pieces = [
            "- > a\n",
            "> - b\n",
            "1. ```rs\nfn 日本() {}\n```\n",
            "| 表 | b |\n|---|---|\n| 🎉 | \n",
            "# 🎉 heading\n",
            "- [ ] task\n- [x] done\n",
            "***\n",
            "> > > deep\n",
            "`code` ",
            "[link](http://x)",
            "<b>html</b>",
            "\tindented\n",
            "    code\n",
            "a\\\nb",
            "- ",
            "> ",
            "```",
            "\u{202e}rtl\u{200b}",
            "\r\n",
            "1.\n2.\n",
            "- a\n\n  - b\n\n    > c\n",
        ];
        let mut text = String::new();
        for (index, piece) in pieces.iter().enumerate() {
            text.push_str(piece);
            for other in &pieces[index..] {
                let joined = format!("{piece}{other}");
                for width in [0, 1, 2, 3, 5, 8, 13, 40] {
                    render(&joined, width, &Theme::colored());
                }
            }
            for width in [0, 1, 4, 17, 80] {
                render(&text, width, &Theme::colored());
            }
        }
    }

    #[test]
    fn a_quote_first_in_a_list_item_does_not_split_a_character() {
        // The item's marker once replaced the last two bytes of the prefix, which were half of
        // the quote's `│` here: a panic on a model's `- > note`.
        expect_test::expect![[r#"
            • │ a note
            •

            1. │ │ deeper
        "#]]
        .assert_eq(&plain("- > a note\n-\n\n1. > > deeper\n", 40));
    }

    #[test]
    fn an_open_code_fence_is_code_to_the_end() {
        expect_test::expect![[r#"
            Here:

            ▎ let x = 1;
            ▎ let y
        "#]]
        .assert_eq(&plain("Here:\n\n```rust\nlet x = 1;\nlet y", 40));
    }
}
