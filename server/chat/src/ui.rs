//! The chat's screen, drawn from the app's state each frame: the conversation (bottom-anchored,
//! scrollable), the plan, the completion list, the composer, and a status line (model, mode,
//! context use, what the agent is doing); a permission question or the session picker takes
//! the composer's place.

use agent_client_protocol::v1::schema as acp;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::app::App;
use crate::render;
use crate::transcript::ToolContent;
use crate::wrap;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    let width = area.width as usize;
    let composer_lines = composer_lines(app, width.saturating_sub(2));
    let approval = approval_view(app, width.saturating_sub(2));
    let bottom: u16 = if let Some(view) = &approval {
        // As tall as the question needs, up to two thirds of the screen (the rest scrolls).
        let wanted = (view.body.len() + view.footer.len() + 2) as u16;
        wanted.min(area.height * 2 / 3).max(6)
    } else if let Some(picker) = &app.picker {
        (picker.sessions.len() as u16 + 2)
            .min(area.height / 2)
            .max(4)
    } else {
        (composer_lines.len() as u16).clamp(1, 10) + 2
    };
    let plan = plan_lines(app);
    let completion_height = app
        .completion
        .as_ref()
        .map_or(0, |completion| completion.candidates.len() as u16);
    let [transcript_area, plan_area, completion_area, bottom_area, status_area] =
        Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(plan.len() as u16),
            Constraint::Length(completion_height),
            Constraint::Length(bottom),
            Constraint::Length(1),
        ])
        .areas(area);

    draw_transcript(frame, app, transcript_area);
    if !plan.is_empty() {
        frame.render_widget(Paragraph::new(plan), plan_area);
    }
    if let Some(completion) = &app.completion {
        let lines: Vec<Line> = completion
            .candidates
            .iter()
            .enumerate()
            .map(|(index, candidate)| {
                let style = if index == completion.selected {
                    app.theme.selected
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(format!(" {:<28}", candidate.label), style),
                    Span::styled(format!(" {}", candidate.detail), app.theme.dim),
                ])
            })
            .collect();
        frame.render_widget(Clear, completion_area);
        frame.render_widget(Paragraph::new(lines), completion_area);
    }
    if let Some(view) = approval {
        draw_approval(frame, app, bottom_area, view);
    } else if app.picker.is_some() {
        draw_picker(frame, app, bottom_area);
    } else {
        draw_composer(frame, app, bottom_area, composer_lines);
    }
    frame.render_widget(Paragraph::new(status_line(app)), status_area);
}

fn draw_transcript(frame: &mut Frame, app: &mut App, area: Rect) {
    let width = area.width as usize;
    let height = area.height as usize;
    let theme = app.theme.clone();
    let lines = app
        .cache
        .lines(&app.transcript.items, width.max(10), app.expanded, &theme);
    let total = lines.len();
    let max_scroll = total.saturating_sub(height);
    app.scroll = app.scroll.min(max_scroll);
    let end = total - app.scroll;
    let start = end.saturating_sub(height);
    let shown: Vec<Line> = lines[start..end]
        .iter()
        .map(|line| (*line).clone())
        .collect();
    // Bottom-anchored: a short conversation sits just above the composer.
    let top = height.saturating_sub(shown.len()) as u16;
    let area = Rect {
        y: area.y + top,
        height: area.height - top,
        ..area
    };
    frame.render_widget(Paragraph::new(shown), area);
}

fn plan_lines(app: &App) -> Vec<Line<'static>> {
    let plan = &app.transcript.plan;
    if plan.is_empty()
        || plan
            .iter()
            .all(|entry| entry.status == acp::PlanEntryStatus::Completed)
    {
        return Vec::new();
    }
    let mut lines = vec![Line::from(Span::styled("Plan", app.theme.heading))];
    for entry in plan.iter().take(8) {
        let (mark, style) = match entry.status {
            acp::PlanEntryStatus::Completed => ("☑", app.theme.dim),
            acp::PlanEntryStatus::InProgress => ("◐", app.theme.running),
            _ => ("☐", Style::default()),
        };
        lines.push(Line::from(vec![
            Span::styled(format!(" {mark} "), style),
            Span::styled(entry.content.clone(), style),
        ]));
    }
    if plan.len() > 8 {
        lines.push(Line::from(Span::styled(
            format!("   … {} more", plan.len() - 8),
            app.theme.dim,
        )));
    }
    lines
}

/// The composer's text as lines at `width`, the first with the prompt mark.
fn composer_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let text = app.composer.text();
    if text.is_empty() {
        let hint = if app.turn.is_some() {
            "esc to cancel · type ahead to queue nothing: wait for the answer"
        } else {
            "ask anything · / commands · @ files · alt-enter new line · ctrl-c twice quits"
        };
        return vec![Line::from(vec![
            Span::styled("› ", app.theme.accent),
            Span::styled(hint, app.theme.dim),
        ])];
    }
    let mut lines = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let mark = if index == 0 { "› " } else { "  " };
        lines.extend(wrap::hard_wrap(
            line,
            width,
            Style::default(),
            Span::styled(mark, app.theme.accent),
        ));
    }
    lines
}

fn draw_composer(frame: &mut Frame, app: &App, area: Rect, lines: Vec<Line<'static>>) {
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(app.theme.border);
    let inner = block.inner(area);
    let visible = inner.height as usize;
    let (row, column) = cursor_position(app, inner.width as usize);
    let skip = (row + 1).saturating_sub(visible);
    frame.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
    frame.render_widget(Paragraph::new(shown), inner);
    if app.composer.text().is_empty() {
        frame.set_cursor_position((inner.x + 2, inner.y));
    } else {
        frame.set_cursor_position((inner.x + column as u16, inner.y + (row - skip) as u16));
    }
}

/// The cursor's row and column among the composer's wrapped lines.
fn cursor_position(app: &App, width: usize) -> (usize, usize) {
    let before = &app.composer.text()[..app.composer.cursor()];
    let room = width.saturating_sub(2).max(8);
    let mut row = 0;
    let lines: Vec<&str> = before.split('\n').collect();
    for line in &lines[..lines.len() - 1] {
        row += wrap::width(line).div_ceil(room).max(1);
    }
    let last = lines.last().copied().unwrap_or("");
    let cells = wrap::width(last);
    row += cells / room;
    (row, 2 + cells % room)
}

/// The permission question as drawn: its title, what the call would do, and the answers (with
/// the feedback being typed and a hint), at `width`.
struct ApprovalView {
    title: String,
    body: Vec<Line<'static>>,
    footer: Vec<Line<'static>>,
}

fn approval_view(app: &App, width: usize) -> Option<ApprovalView> {
    let theme = &app.theme;
    let pending = app.approvals.front()?;
    let fields = &pending.request.tool_call.fields;
    let title = fields.title.clone().unwrap_or_else(|| "a tool call".into());
    let mut body: Vec<Line<'static>> = Vec::new();
    let contents = fields.content.clone().unwrap_or_default();
    // Tandem's question says everything in text (the whole diff included, invisible characters
    // made visible); a diff block is drawn only when there is no such text.
    let has_text = contents
        .iter()
        .any(|content| matches!(content, acp::ToolCallContent::Content(_)));
    for content in &contents {
        match content {
            acp::ToolCallContent::Content(content) => {
                let text = crate::transcript::chunk_text(&content.content);
                body.extend(crate::markdown::render(&text, width, theme));
            }
            diff @ acp::ToolCallContent::Diff(_) if !has_text => {
                if let Some(ToolContent::Diff { path, old, new }) =
                    crate::transcript::tool_content(diff, &app.cwd)
                {
                    body.extend(render::diff_lines(
                        &path,
                        old.as_deref(),
                        &new,
                        width,
                        usize::MAX,
                        theme,
                    ));
                }
            }
            _ => {}
        }
    }
    // The answers, flowed onto as many lines as the width needs.
    let mut footer: Vec<Line<'static>> = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (index, choice) in pending.choices().iter().enumerate() {
        let style = if index == pending.selected {
            theme.selected
        } else {
            Style::default()
        };
        let label = format!(" {} {} ", index + 1, choice.label);
        let cells = wrap::width(&label) + 1;
        if used + cells > width && !line.is_empty() {
            footer.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        line.push(Span::styled(label, style));
        line.push(Span::raw(" "));
        used += cells;
    }
    footer.push(Line::from(line));
    if let Some(feedback) = &pending.feedback {
        footer.push(Line::from(vec![
            Span::styled("What should the agent do instead? ", theme.accent),
            Span::raw(feedback.clone()),
        ]));
    }
    let count = pending.choices().len();
    footer.push(Line::from(Span::styled(
        format!("←/→ or 1-{count} choose · enter answers · esc rejects · pgup/pgdn scroll"),
        theme.dim,
    )));
    Some(ApprovalView {
        title,
        body,
        footer,
    })
}

fn draw_approval(frame: &mut Frame, app: &mut App, area: Rect, view: ApprovalView) {
    let theme = app.theme.clone();
    let Some(pending) = app.approvals.front_mut() else {
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning)
        .title(Span::styled(
            format!(" Allow {}? ", view.title),
            theme.warning,
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let [body_area, footer_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(view.footer.len() as u16),
    ])
    .areas(inner);
    let room = body_area.height as usize;
    pending.scroll = pending.scroll.min(view.body.len().saturating_sub(room));
    let shown: Vec<Line> = view
        .body
        .into_iter()
        .skip(pending.scroll)
        .take(room)
        .collect();
    frame.render_widget(Paragraph::new(shown), body_area);
    frame.render_widget(Paragraph::new(view.footer), footer_area);
}

fn draw_picker(frame: &mut Frame, app: &App, area: Rect) {
    let Some(picker) = &app.picker else {
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border)
        .title(" Resume a session (enter picks, esc closes) ");
    let inner = block.inner(area);
    let room = inner.height as usize;
    let skip = (picker.selected + 1).saturating_sub(room);
    let lines: Vec<Line> = picker
        .sessions
        .iter()
        .enumerate()
        .skip(skip)
        .take(room)
        .map(|(index, session)| {
            let style = if index == picker.selected {
                app.theme.selected
            } else {
                Style::default()
            };
            let title = session.title.clone().unwrap_or_else(|| "(untitled)".into());
            let when = session.updated_at.clone().unwrap_or_default();
            Line::from(vec![
                Span::styled(format!(" {title} "), style),
                Span::styled(format!(" {when}  {}", session.session_id.0), app.theme.dim),
            ])
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

fn status_line(app: &App) -> Line<'static> {
    let theme = &app.theme;
    let mut spans = Vec::new();
    if let Some(activity) = app.activity() {
        let frame = app.turn.map_or(0, |started| {
            (started.elapsed().as_millis() / 80) as usize % SPINNER.len()
        });
        spans.push(Span::styled(format!("{} ", SPINNER[frame]), theme.accent));
        spans.push(Span::raw(activity));
        spans.push(Span::styled("  ", theme.dim));
    } else if let Some(flash) = &app.flash {
        spans.push(Span::styled(flash.clone(), theme.warning));
        spans.push(Span::styled("  ", theme.dim));
    }
    let mut facts = Vec::new();
    if let Some(model) = app.transcript.option("model") {
        facts.push(model);
    }
    if let Some(mode) = app.transcript.option("mode") {
        facts.push(mode);
    }
    if let Some((used, size)) = app.transcript.usage {
        if let Some(share) = (used * 100).checked_div(size) {
            facts.push(format!("context {share}% of {}", thousands(size)));
        }
    }
    if let Some(editor) = &app.attached {
        facts.push(format!("attached to {editor}"));
    }
    spans.push(Span::styled(facts.join(" · "), theme.dim));
    Line::from(spans)
}

/// 200000 as `200k`.
fn thousands(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}
