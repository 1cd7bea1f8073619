//! One transcript entry as terminal lines at a width: the user's prompt, the answer as
//! Markdown, thoughts dimmed, a tool call as one status line (its output below it when
//! expanded; an edit's diff always, capped unless expanded), notices coloured by level.
//! `Cache` keeps each entry's lines until the entry, the width or the expansion changes, so a
//! frame re-renders only what streamed since the last one.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

use agent_client_protocol::v1::schema as acp;

use crate::markdown;
use crate::theme::Theme;
use crate::transcript::{Entry, Item, Level, Tool, ToolContent};
use crate::wrap;

/// Lines of a collapsed diff, and of a collapsed tool output.
const DIFF_LINES: usize = 16;
const OUTPUT_LINES: usize = 6;

/// Each entry's lines, kept while nothing they depend on changed.
#[derive(Default)]
pub struct Cache {
    entries: Vec<Option<Rendered>>,
}

/// An entry's lines: (its revision, the width, expanded, the lines).
type Rendered = (u64, usize, bool, Vec<Line<'static>>);

impl Cache {
    /// The lines of every item, at `width`, with a blank line between entries.
    pub fn lines<'a>(
        &'a mut self,
        items: &[Item],
        width: usize,
        expanded: bool,
        theme: &Theme,
    ) -> Vec<&'a Line<'static>> {
        self.entries.resize_with(items.len(), || None);
        for (item, cached) in items.iter().zip(self.entries.iter_mut()) {
            let fresh = matches!(cached, Some((revision, w, e, _))
                if *revision == item.revision && *w == width && *e == expanded);
            if !fresh {
                *cached = Some((
                    item.revision,
                    width,
                    expanded,
                    entry_lines(&item.entry, width, expanded, theme),
                ));
            }
        }
        let mut lines = Vec::new();
        let mut previous: Option<&Entry> = None;
        for (item, cached) in items.iter().zip(self.entries.iter()) {
            let Some((_, _, _, entry_lines)) = cached else {
                continue;
            };
            if entry_lines.is_empty() {
                continue;
            }
            // Consecutive tool calls stay together; everything else is a paragraph apart.
            let together = matches!(
                (previous, &item.entry),
                (Some(Entry::Tool(_)), Entry::Tool(_))
            );
            if previous.is_some() && !together {
                lines.push(&BLANK);
            }
            lines.extend(entry_lines.iter());
            previous = Some(&item.entry);
        }
        lines
    }
}

static BLANK: Line<'static> = Line {
    spans: Vec::new(),
    style: Style::new(),
    alignment: None,
};

/// One entry's lines.
pub fn entry_lines(
    entry: &Entry,
    width: usize,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    match entry {
        Entry::User(text) => {
            let spans = [Span::styled(text.trim_end().to_owned(), theme.user)];
            wrap::wrap(
                &spans,
                width,
                Span::styled("› ", theme.user),
                Span::styled("  ", theme.user),
            )
        }
        Entry::Agent(text) => markdown::render(text, width, theme),
        Entry::Thought(text) => {
            let text = text.trim();
            if text.is_empty() {
                return Vec::new();
            }
            let spans = [Span::styled(text.to_owned(), theme.thought)];
            wrap::wrap(
                &spans,
                width,
                Span::styled("✻ ", theme.thought),
                Span::styled("  ", theme.thought),
            )
        }
        Entry::Tool(tool) => tool_lines(tool, width, expanded, theme),
        Entry::Notice(level, text) => {
            let (mark, style) = match level {
                Level::Info => ("• ", theme.dim),
                Level::Warning => ("! ", theme.warning),
                Level::Error => ("✗ ", theme.error),
            };
            let spans = [Span::styled(text.clone(), style)];
            wrap::wrap(
                &spans,
                width,
                Span::styled(mark, style),
                Span::styled("  ", style),
            )
        }
    }
}

/// A tool call's status mark and its style.
pub fn status_mark(status: acp::ToolCallStatus, theme: &Theme) -> (&'static str, Style) {
    match status {
        acp::ToolCallStatus::Completed => ("✓", theme.ok),
        acp::ToolCallStatus::Failed => ("✗", theme.failed),
        acp::ToolCallStatus::InProgress => ("→", theme.running),
        _ => ("○", theme.dim),
    }
}

fn tool_lines(tool: &Tool, width: usize, expanded: bool, theme: &Theme) -> Vec<Line<'static>> {
    let (mark, style) = status_mark(tool.status, theme);
    let spans = [Span::raw(tool.title.clone())];
    let mut lines = wrap::wrap(
        &spans,
        width,
        Span::styled(format!("{mark} "), style),
        Span::raw("  "),
    );
    for content in &tool.content {
        match content {
            ToolContent::Diff { path, old, new } => {
                let cap = if expanded { usize::MAX } else { DIFF_LINES };
                lines.extend(diff_lines(path, old.as_deref(), new, width, cap, theme));
            }
            ToolContent::Text(text) => {
                // What the model was told; shown when expanded, or a failure's first lines.
                let failed = tool.status == acp::ToolCallStatus::Failed;
                if !expanded && !failed {
                    continue;
                }
                let text = strip_fence(text);
                let cap = if expanded {
                    usize::MAX
                } else {
                    OUTPUT_LINES.min(2)
                };
                let all: Vec<&str> = text.lines().collect();
                for line in all.iter().take(cap) {
                    lines.extend(wrap::hard_wrap(
                        line,
                        width,
                        theme.dim,
                        Span::styled("  │ ", theme.dim),
                    ));
                }
                if all.len() > cap {
                    lines.push(Line::from(Span::styled(
                        format!("  │ … {} more lines (ctrl-o shows all)", all.len() - cap),
                        theme.dim,
                    )));
                }
            }
        }
    }
    lines
}

/// The text of a Markdown code block, without its fence.
pub fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    let Some(newline) = rest.find('\n') else {
        return text;
    };
    let body = &rest[newline + 1..];
    let fence_len = trimmed.len() - trimmed.trim_start_matches('`').len();
    let fence = &trimmed[..fence_len];
    body.strip_suffix(fence)
        .map_or(body, |body| body.trim_end_matches('\n'))
}

/// A change as a coloured unified diff under a `path +added -removed` header; at most `cap`
/// lines of it.
pub fn diff_lines(
    path: &str,
    old: Option<&str>,
    new: &str,
    width: usize,
    cap: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let old_text = old.unwrap_or("");
    let diff = TextDiff::from_lines(old_text, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let what = if old.is_none() { " (new file)" } else { "" };
    let mut lines = vec![Line::from(vec![
        Span::styled("  ┌ ", theme.dim),
        Span::styled(format!("{path}{what} "), theme.heading),
        Span::styled(format!("+{added}"), theme.added),
        Span::raw(" "),
        Span::styled(format!("-{removed}"), theme.removed),
    ])];
    let mut body = Vec::new();
    for group in diff.grouped_ops(2) {
        if let (Some(first), Some(_)) = (group.first(), group.last()) {
            let line = first.old_range().start + 1;
            body.push(Line::from(Span::styled(
                format!("  │ @@ line {line} @@"),
                theme.hunk,
            )));
        }
        for op in group {
            for change in diff.iter_changes(&op) {
                let (sign, style) = match change.tag() {
                    ChangeTag::Insert => ("+", theme.added),
                    ChangeTag::Delete => ("-", theme.removed),
                    ChangeTag::Equal => (" ", theme.dim),
                };
                let text = change
                    .value()
                    .trim_end_matches(['\n', '\r'])
                    .replace('\t', "    ");
                body.extend(wrap::hard_wrap(
                    &format!("{sign} {text}"),
                    width,
                    style,
                    Span::styled("  │ ", theme.dim),
                ));
            }
        }
    }
    let total = body.len();
    lines.extend(body.into_iter().take(cap));
    if total > cap {
        lines.push(Line::from(Span::styled(
            format!("  │ … {} more lines (ctrl-o shows all)", total - cap),
            theme.dim,
        )));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line]) -> String {
        lines
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
    fn an_edit_shows_its_diff_under_its_status_line() {
        let tool = Tool {
            id: "c1".into(),
            title: "Edit src/lib.rs".into(),
            kind: acp::ToolKind::Edit,
            status: acp::ToolCallStatus::Completed,
            content: vec![
                ToolContent::Diff {
                    path: "src/lib.rs".into(),
                    old: Some("a\nb\nc\n".into()),
                    new: "a\nB\nc\n".into(),
                },
                ToolContent::Text("```\nEdited src/lib.rs\n```".into()),
            ],
        };
        expect_test::expect![[r#"
            ✓ Edit src/lib.rs
              ┌ src/lib.rs +1 -1
              │ @@ line 1 @@
              │   a
              │ - b
              │ + B
              │   c
        "#]]
        .assert_eq(&plain(&tool_lines(&tool, 60, false, &Theme::plain())));
        // Expanded, the output the model was told follows.
        assert!(plain(&tool_lines(&tool, 60, true, &Theme::plain()))
            .ends_with("  │ Edited src/lib.rs\n"));
    }

    #[test]
    fn fences_are_stripped_from_tool_output() {
        assert_eq!(strip_fence("```\nhello\nworld\n```"), "hello\nworld");
        assert_eq!(strip_fence("````\na ``` b\n````"), "a ``` b");
        assert_eq!(strip_fence("plain"), "plain");
    }
}
