//! How `tandem ask` (and `tandem demo`) print a turn's events: plain (the answer on stdout,
//! activity on stderr, both laid out by `screen` when they are terminals) or as JSON lines.
//!
//! A model request that fails mid-answer and is retried starts its answer again. What reaches
//! stdout must still be the answer exactly once: to a terminal the text streams, and a restart
//! goes on a new paragraph with a note on stderr; to a pipe or file, each response's text is held
//! until the response is complete (a tool call starts, or the turn ends) and a retry discards
//! it. `--json` prints every event, the `retrying` one included, and leaves the rest to its
//! reader.
//!
//! On a terminal there is more: the diff of what the turn changed at its end, colour, and a
//! spinner on stderr while nothing else moves (drawn by `tick`, which the printing loop calls).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tandem_agent::protocol::{CompressionReport, CompressionStatus, RestoreReport};
use tandem_agent::tools::ToolKind;
use tandem_agent::{
    ApprovalDecision, ApprovalMode, ApprovalPolicy, Event, StopReason, ToolCallStatus,
    ToolCallUpdate,
};
use tokio::sync::mpsc;

use super::changes::Changes;
use super::screen::{line, Block, Line, Screen, Stream, Style};

/// Why nobody could approve a call, as the model is told.
const CANNOT_ASK: &str = "Tandem runs non-interactively (tandem ask), so nobody can be asked";

/// The spinner's frames, one per tick.
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// What a turn's printing is asked for.
pub(crate) struct Options {
    /// Every event as a JSON line on stdout.
    pub json: bool,
    /// The approval mode the turn runs in, which the refusals' advice depends on.
    pub mode: ApprovalMode,
    /// The workspace root, which paths are shown relative to.
    pub root: PathBuf,
    /// Show what changed at the end of the turn (on a terminal).
    pub diff: bool,
}

/// Since when nothing was printed, and what is awaited: the spinner's text.
struct Waiting {
    since: Instant,
    /// Thoughts arrived meanwhile.
    thinking: bool,
}

pub(crate) struct Output {
    json: bool,
    /// A model answered or a tool call ran: the session holds a turn worth resuming. A turn
    /// without either (`/help`, a model that cannot be used, a refused key) is not saved, so
    /// that `--continue` resumes the session that did something.
    pub worth_resuming: bool,
    /// Hold each response's text until it is complete (stdout is not a terminal).
    hold_answer: bool,
    /// The current response's text, held.
    held: String,
    /// Text of the current response reached the terminal.
    streamed: bool,
    /// The workspace root, which paths are shown relative to.
    root: PathBuf,
    /// Whether any answer text was printed.
    wrote_text: bool,
    /// Whether the printed answer ends with a line break (a pipe).
    ends_with_newline: bool,
    /// A tool call came after the last text: the next text is a new paragraph.
    new_paragraph: bool,
    /// On a terminal: the answer's last line was ended, and how many more line breaks it ended
    /// with, not written yet (only more text writes them: before anything else the layout says
    /// how many there are).
    line_ended: bool,
    held_newlines: usize,
    /// The approval mode the turn runs in, which the refusals' advice depends on.
    mode: ApprovalMode,
    /// Calls refused here for want of approval: their `error` update was already explained.
    refused: HashSet<String>,
    /// How many calls were refused for want of approval.
    refusals: usize,
    /// The mode that asks most among those that would have run every refused call that the
    /// mode decides on; `None` while every refusal was of a call Tandem asks about in every mode.
    needed: Option<ApprovalMode>,
    /// A call that can change something (not a read, search or plan) started running.
    changed: bool,
    /// Show the diff summary at the end of the turn (stdout is a terminal, `--no-diff` not given).
    diff: bool,
    /// What the turn's edits and writes changed.
    pub changes: Changes,
    /// The diff summary was printed.
    pub summary_shown: bool,
    /// Nothing was printed since then: the spinner turns (on a terminal).
    waiting: Option<Waiting>,
    /// The calls executing now.
    running: HashSet<String>,
    /// The spinner's next frame.
    frame: usize,
    /// Where it all goes.
    screen: Screen,
}

impl Output {
    pub fn new(options: Options, screen: Screen) -> Self {
        let terminal = screen.tty(Stream::Out).terminal;
        Output {
            json: options.json,
            worth_resuming: false,
            hold_answer: !terminal,
            held: String::new(),
            streamed: false,
            root: options.root,
            wrote_text: false,
            ends_with_newline: false,
            new_paragraph: false,
            line_ended: false,
            held_newlines: 0,
            mode: options.mode,
            refused: HashSet::new(),
            refusals: 0,
            needed: None,
            changed: false,
            diff: options.diff && terminal && !options.json,
            changes: Changes::default(),
            summary_shown: false,
            waiting: Some(Waiting {
                since: Instant::now(),
                thinking: false,
            }),
            running: HashSet::new(),
            frame: 0,
            screen,
        }
    }

    /// The first failure to write stdout.
    pub fn take_write_error(&mut self) -> Option<std::io::Error> {
        self.screen.write_error.take()
    }

    pub fn event(
        &mut self,
        event: Event,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        if matches!(event, Event::Usage(_) | Event::ToolCall(_)) {
            self.worth_resuming = true;
        }
        if self.json {
            match serde_json::to_string(&event) {
                Ok(line) => self.screen.text(Stream::Out, &format!("{line}\n")),
                Err(error) => self.screen.write_error = Some(error.into()),
            }
        }
        match &event {
            Event::TextChunk { .. } | Event::ThoughtChunk { .. } | Event::Usage(_) => {}
            Event::Retrying { .. } => self.held.clear(),
            // The failed request's partial answer is not the answer: the agent dropped it too.
            Event::TurnFinished {
                stop_reason: StopReason::Error,
                ..
            } => self.held.clear(),
            _ => {
                self.streamed = false;
                if !self.held.is_empty() {
                    let held = std::mem::take(&mut self.held);
                    self.print_text(&held);
                }
            }
        }
        match event {
            Event::TextChunk { text } if !self.json && !text.is_empty() => {
                self.waiting = None;
                if self.hold_answer {
                    self.held.push_str(&text);
                } else {
                    self.answer(&text);
                    self.streamed = true;
                }
            }
            Event::ThoughtChunk { .. } => match &mut self.waiting {
                Some(waiting) => waiting.thinking = true,
                None => {
                    self.waiting = Some(Waiting {
                        since: Instant::now(),
                        thinking: true,
                    })
                }
            },
            Event::Retrying { error, .. } => {
                self.activity(line(
                    format!("model request failed, retrying: {error}"),
                    Style::Dim,
                ));
                if self.streamed && !self.json {
                    self.activity(line(
                        "tandem: the answer so far was cut off; it starts again below",
                        Style::Dim,
                    ));
                    // The line it stopped on is ended by the layout: the restart is a new
                    // paragraph.
                    self.new_paragraph = true;
                    self.streamed = false;
                }
            }
            Event::ToolCall(update) => {
                self.new_paragraph = self.wrote_text;
                if update.status == ToolCallStatus::Success {
                    if let Some(diff) = &update.diff {
                        self.changes.record(diff);
                    }
                }
                self.tool_call(update, approvals);
            }
            Event::Compression(report) if !self.json => {
                self.activity(line(compression_line(&report), Style::Dim));
            }
            Event::Restored(report) if !self.json => self.restored(&report),
            Event::Hook(run) if !self.json => self.activity(line(hook_line(&run), Style::Dim)),
            Event::Subagent(nested) if !self.json => self.subagent(&nested),
            Event::TurnFinished {
                stop_reason,
                message,
            } => {
                self.waiting = None;
                if !self.json {
                    let unended = match self.hold_answer {
                        true => self.wrote_text && !self.ends_with_newline,
                        false => {
                            self.screen.continues(Stream::Out, Block::Answer) && !self.line_ended
                        }
                    };
                    if unended {
                        self.screen.text(Stream::Out, "\n");
                    }
                }
                if self.diff {
                    let summary = self.changes.summary(&self.root);
                    if !summary.is_empty() {
                        self.screen.block(Stream::Out, Block::Summary, &summary);
                        self.summary_shown = true;
                    }
                }
                let message = message.unwrap_or_else(|| match stop_reason {
                    StopReason::EndTurn => String::new(),
                    StopReason::Cancelled => "the turn was cancelled".to_owned(),
                    StopReason::Error
                    | StopReason::MaxTurns
                    | StopReason::LoopDetected
                    | StopReason::ResponseLimit => {
                        format!("the turn ended early ({stop_reason:?})")
                    }
                });
                if stop_reason != StopReason::EndTurn {
                    self.note(&format!("tandem: {message}"), Style::Red);
                }
            }
            // The plan and token counts are for interactive front ends (and --json).
            _ => {}
        }
    }

    /// A line on stderr after the turn ("session … saved", "nothing was changed"), laid out
    /// with the rest.
    pub fn note(&mut self, text: &str, style: Style) {
        self.activity(line(text, style));
    }

    /// One activity line on stderr: on a terminal, on a line of its own, a blank line
    /// between it and the answer.
    fn activity(&mut self, line: Line) {
        self.screen.block(Stream::Err, Block::Activity, &[line]);
    }

    /// Answer text on a pipe or file, a blank line before it when a tool call came between.
    fn print_text(&mut self, text: &str) {
        let separator = match (self.new_paragraph, self.ends_with_newline) {
            (false, _) => "",
            (true, true) => "\n",
            (true, false) => "\n\n",
        };
        self.screen.text(Stream::Out, &format!("{separator}{text}"));
        self.wrote_text = true;
        self.new_paragraph = false;
        self.ends_with_newline = text.ends_with('\n');
    }

    /// Answer text on a terminal, as it streams. A paragraph starts on a line of its own with
    /// its leading line breaks dropped; the line breaks it ends with are written when more of
    /// it comes (one at once, so a spinner can go on the next line), and otherwise left to the
    /// layout, which puts exactly one blank line before whatever comes next.
    fn answer(&mut self, text: &str) {
        let mut text = text;
        if self.new_paragraph || !self.screen.continues(Stream::Out, Block::Answer) {
            text = text.trim_start_matches(['\n', '\r']);
            if text.is_empty() {
                return;
            }
            self.screen
                .begin(Stream::Out, Block::Answer, self.new_paragraph);
            self.new_paragraph = false;
            self.line_ended = false;
            self.held_newlines = 0;
        }
        let body = text.trim_end_matches('\n');
        let trailing = text.len() - body.len();
        let mut write = String::new();
        if body.is_empty() {
            if !self.line_ended {
                write.push('\n');
                self.line_ended = true;
                self.held_newlines += trailing - 1;
            } else {
                self.held_newlines += trailing;
            }
        } else {
            write.push_str(&"\n".repeat(std::mem::take(&mut self.held_newlines)));
            write.push_str(body);
            self.line_ended = trailing > 0;
            if self.line_ended {
                write.push('\n');
                self.held_newlines = trailing - 1;
            }
        }
        self.screen.text(Stream::Out, &write);
        self.wrote_text = true;
    }

    fn tool_call(
        &mut self,
        update: ToolCallUpdate,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        let title = &update.title;
        let line = match update.status {
            ToolCallStatus::AwaitingApproval => {
                let decision = ApprovalDecision::CannotAsk {
                    reason: CANNOT_ASK.to_owned(),
                };
                // The session waits for this answer; it cannot be gone before the turn is over.
                let _ = approvals.send((update.call_id.clone(), decision));
                self.refused.insert(update.call_id);
                self.refusals += 1;
                // Shown in --json mode too: it says how to let the call run next time.
                let advice = match &update.approval_reason {
                    Some(why) => format!(
                        " {title}: not run: Tandem always asks before it, because {why}, and \
                         tandem ask cannot ask; do it yourself, or in an editor"
                    ),
                    None => {
                        let needed = ApprovalMode::least_allowing(update.kind);
                        self.needed = self.needed.max(Some(needed));
                        let rerun = if needed > self.mode {
                            format!("rerun with --approval-mode {}, or ", needed.name())
                        } else {
                            String::new()
                        };
                        // The narrowest rule (for `shell`, this very command line), as JSON:
                        // quotes and line breaks in a command come out escaped.
                        let rule = ApprovalPolicy::rule_for(&update.tool, &update.raw_input);
                        let rule = serde_json::Value::String(rule.0);
                        format!(
                            " {title}: needs approval (mode {}); {rerun}allow it with \
                             \"approval\": {{\"allow\": [{rule}]}} in settings.json",
                            self.mode.name()
                        )
                    }
                };
                self.activity(vec![("✗".to_owned(), Style::Red), (advice, Style::Plain)]);
                self.wait();
                return;
            }
            ToolCallStatus::Executing => {
                self.changed |= match update.kind {
                    ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch => false,
                    ToolKind::Edit | ToolKind::Execute | ToolKind::Other => true,
                };
                if !self.running.insert(update.call_id.clone()) {
                    // A progress report of a call already shown.
                    return;
                }
                status_line(&update)
            }
            ToolCallStatus::Success | ToolCallStatus::Error | ToolCallStatus::Cancelled => {
                self.running.remove(&update.call_id);
                if self.refused.remove(&update.call_id) {
                    return;
                }
                status_line(&update)
            }
            ToolCallStatus::Validating | ToolCallStatus::Scheduled => return,
        };
        if let Some(line) = line {
            if !self.json {
                self.activity(line);
                self.wait();
            }
        }
    }

    /// Something was printed and more is awaited: the spinner starts again from 0 s.
    fn wait(&mut self) {
        self.waiting = Some(Waiting {
            since: Instant::now(),
            thinking: false,
        });
    }

    /// Whether the spinner may turn now (a terminal's stderr, not `--json`, the turn waiting).
    pub fn spins(&self) -> bool {
        !self.json && self.screen.tty(Stream::Err).cursor && self.waiting.is_some()
    }

    /// Draws the spinner's next frame, as of `now`.
    pub fn tick(&mut self, now: Instant) {
        let Some(waiting) = &self.waiting else {
            return;
        };
        if self.json {
            return;
        }
        let secs = now.saturating_duration_since(waiting.since).as_secs();
        let what = match (waiting.thinking, self.running.is_empty()) {
            (true, _) => "thinking…",
            (false, false) => "running…",
            (false, true) => "waiting for the model…",
        };
        let frame = FRAMES[self.frame % FRAMES.len()];
        self.frame += 1;
        self.screen.spin(&format!("{frame} {what} {secs}s"));
    }

    /// Takes the spinner off the screen for good (the turn is over).
    pub fn stop_spinner(&mut self) {
        self.waiting = None;
        self.screen.erase_spinner();
    }

    /// Why a turn that ended normally did nothing: some calls were refused for want of
    /// approval and no call that could change anything ran. `None` when that is not so.
    pub fn nothing_changed(&self) -> Option<String> {
        if self.refusals == 0 || self.changed {
            return None;
        }
        let actions = match self.refusals {
            1 => "1 action".to_owned(),
            n => format!("{n} actions"),
        };
        let them = if self.refusals == 1 { "it" } else { "them" };
        let next = match self.needed {
            Some(needed) if needed > self.mode => format!(
                "rerun with --approval-mode {}, or allow {them} in settings.json as shown above",
                needed.name()
            ),
            Some(_) => format!("allow {them} in settings.json as shown above"),
            None => format!("do {them} yourself, or in an editor"),
        };
        Some(format!(
            "nothing was changed: {actions} needed approval, which tandem ask cannot give; {next}"
        ))
    }

    /// One line per file a restore put back or left alone.
    fn restored(&mut self, report: &RestoreReport) {
        if report.restored.is_empty() && report.skipped.is_empty() {
            // The answer on stdout says why.
            self.activity(line("restored no files", Style::Dim));
            return;
        }
        let root = self.root.clone();
        let show = |path: &Path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        for path in &report.restored {
            self.activity(line(format!("restored {}", show(path)), Style::Dim));
        }
        for skipped in &report.skipped {
            let text = format!("not restored {}: {}", show(&skipped.path), skipped.reason);
            self.activity(line(text, Style::Dim));
        }
    }

    /// A subagent's tool call, indented under the parent's `subagent` call on stderr. Its
    /// approval questions were answered in the child (subagents cannot ask), its text is its
    /// report, which the parent reads.
    fn subagent(&mut self, nested: &tandem_agent::SubagentEvent) {
        let Event::ToolCall(update) = nested.event.as_ref() else {
            return;
        };
        if update.status == ToolCallStatus::Success {
            if let Some(diff) = &update.diff {
                self.changes.record(diff);
            }
        }
        let line = match update.status {
            ToolCallStatus::Executing if update.progress.is_some() => None,
            ToolCallStatus::Executing
            | ToolCallStatus::Success
            | ToolCallStatus::Error
            | ToolCallStatus::Cancelled => status_line(update),
            _ => None,
        };
        if let Some(line) = line {
            let mut indented = vec![(format!("    {}: ", nested.agent), Style::Dim)];
            indented.extend(line);
            self.activity(indented);
        }
    }
}

/// `→ title` when a call starts, `✓ title` when it succeeds, `✗ title: why` when it fails
/// (the first line of what the model was told); `None` for other states.
fn status_line(update: &ToolCallUpdate) -> Option<Line> {
    let title = &update.title;
    let (mark, colour) = match update.status {
        ToolCallStatus::Executing => ('→', Style::Cyan),
        ToolCallStatus::Success => ('✓', Style::Green),
        ToolCallStatus::Error | ToolCallStatus::Cancelled => ('✗', Style::Red),
        _ => return None,
    };
    let mut line = vec![
        (mark.to_string(), colour),
        (format!(" {title}"), Style::Dim),
    ];
    if colour == Style::Red {
        let why = update
            .output
            .as_deref()
            .and_then(|output| output.lines().map(str::trim).find(|line| !line.is_empty()))
            .unwrap_or("failed");
        line.push((format!(": {why}"), Style::Red));
    }
    Some(line)
}

/// What a compression did, for a person: "compressed the history: 12,345 → 2,345 tokens".
pub(crate) fn compression_line(report: &CompressionReport) -> String {
    let before = thousands(report.tokens_before);
    let after = thousands(report.tokens_after);
    let why = report.message.as_deref();
    match report.status {
        CompressionStatus::Compressed => {
            format!("compressed the history: {before} → {after} tokens")
        }
        CompressionStatus::Skipped => format!(
            "history not compressed ({before} tokens): {}",
            why.unwrap_or("there is too little to compress")
        ),
        CompressionStatus::Inflated => format!(
            "history not compressed ({before} tokens): {}",
            why.unwrap_or("the summary would have been larger than what it replaced")
        ),
        CompressionStatus::Failed => format!(
            "could not compress the history ({before} tokens): {}",
            why.unwrap_or("the summary request failed")
        ),
    }
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// One line per hook run: `hook PreToolUse `./check.sh` denied (12 ms): no edits to lockfiles`.
fn hook_line(run: &tandem_agent::protocol::HookRun) -> String {
    let outcome = serde_json::to_value(run.outcome)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default();
    let command = tandem_agent::approval::shown::visible(&run.command);
    let mut line = format!(
        "hook {} `{command}` {outcome} ({} ms)",
        run.event, run.duration_ms
    );
    if let Some(message) = &run.message {
        line.push_str(": ");
        line.push_str(&tandem_agent::approval::shown::visible(message));
    }
    line
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::super::screen::Tty;
    use super::*;

    /// What was written, both streams in one buffer in the order written.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        /// The text, escape and carriage return shown as `␛` and `␍`.
        fn text(&self) -> String {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .replace('\u{1b}', "␛")
                .replace('\r', "␍")
        }
    }

    const TERMINAL: Tty = Tty {
        terminal: true,
        colour: false,
        cursor: true,
    };
    const COLOUR: Tty = Tty {
        colour: true,
        ..TERMINAL
    };

    /// An `Output` writing stdout (as `out`) and stderr (as `err`) into `captured`; stderr
    /// is dropped when `captured_err` is false.
    fn output(out: Tty, err: Tty, captured: &Captured, captured_err: bool, diff: bool) -> Output {
        let err_sink: Box<dyn Write> = match captured_err {
            true => Box::new(captured.clone()),
            false => Box::new(io::sink()),
        };
        let screen = Screen::new(Box::new(captured.clone()), out, err_sink, err);
        let options = Options {
            json: false,
            mode: ApprovalMode::Yolo,
            root: PathBuf::from("/w"),
            diff,
        };
        Output::new(options, screen)
    }

    fn feed(output: &mut Output, events: Vec<Event>) {
        let (approvals, _) = mpsc::unbounded_channel();
        for event in events {
            output.event(event, &approvals);
        }
    }

    /// Stdout after `events`, printed for a terminal (`hold_answer` false) or a pipe.
    fn printed(hold_answer: bool, events: Vec<Event>) -> String {
        let captured = Captured::default();
        let out = if hold_answer { Tty::PIPE } else { TERMINAL };
        let mut output = output(out, Tty::PIPE, &captured, false, true);
        feed(&mut output, events);
        captured.text()
    }

    /// Both streams on one terminal (`colour` or not): what it shows after `events`.
    fn screen(colour: bool, events: Vec<Event>) -> String {
        let captured = Captured::default();
        let tty = if colour { COLOUR } else { TERMINAL };
        let mut output = output(tty, tty, &captured, true, true);
        feed(&mut output, events);
        captured.text()
    }

    fn check(colour: bool, events: Vec<Event>, expected: Expect) {
        expected.assert_eq(&screen(colour, events));
    }

    fn text(text: &str) -> Event {
        Event::TextChunk {
            text: text.to_owned(),
        }
    }

    fn thought() -> Event {
        Event::ThoughtChunk {
            text: "hmm".to_owned(),
        }
    }

    fn retrying() -> Event {
        Event::Retrying {
            attempt: 1,
            delay_ms: 1,
            error: "connection reset".to_owned(),
        }
    }

    fn finished(stop_reason: StopReason) -> Event {
        Event::TurnFinished {
            stop_reason,
            message: None,
        }
    }

    /// A tool call's update: `status` of call `id`, with `more` fields (`output`, `diff`).
    fn call(id: &str, title: &str, kind: &str, status: &str, more: serde_json::Value) -> Event {
        let mut update = json!({"callId": id, "tool": "t", "title": title, "kind": kind,
            "status": status});
        if let (Some(update), serde_json::Value::Object(more)) = (update.as_object_mut(), more) {
            update.extend(more);
        }
        Event::ToolCall(serde_json::from_value(update).unwrap())
    }

    /// A shell call that starts and succeeds.
    fn shell(id: &str) -> [Event; 2] {
        let title = "Run `sh test.sh`";
        [
            call(id, title, "execute", "executing", json!({})),
            call(id, title, "execute", "success", json!({"output": "ok"})),
        ]
    }

    /// An edit of /w/math.sh that starts and succeeds.
    fn edit(id: &str) -> [Event; 2] {
        let diff = json!({"diff": {"path": "/w/math.sh", "oldText": "a\nb -lt c\nd\n",
            "newText": "a\nb -gt c\nd\n"}});
        [
            call(id, "Edit math.sh", "edit", "executing", json!({})),
            call(id, "Edit math.sh", "edit", "success", diff),
        ]
    }

    #[test]
    fn a_tool_line_after_text_starts_on_its_own_line() {
        let mut events = vec![text("Let me run the tests first.")];
        events.extend(shell("c1"));
        events.extend([text("They pass."), finished(StopReason::EndTurn)]);
        check(
            false,
            events,
            expect![[r#"
                Let me run the tests first.

                → Run `sh test.sh`
                ✓ Run `sh test.sh`

                They pass.
            "#]],
        );
    }

    #[test]
    fn no_blank_line_after_each_tick() {
        // The model's own line breaks around its text do not add blank lines either.
        let mut events = vec![text("Reading.\n\n")];
        events.push(call("r", "Read math.sh", "read", "executing", json!({})));
        events.push(call(
            "g",
            "Search for `-lt`",
            "search",
            "executing",
            json!({}),
        ));
        events.push(call("r", "Read math.sh", "read", "success", json!({})));
        events.push(call(
            "g",
            "Search for `-lt`",
            "search",
            "success",
            json!({}),
        ));
        events.extend(shell("c1"));
        events.extend([text("\n\nDone.\n\n"), finished(StopReason::EndTurn)]);
        check(
            false,
            events,
            expect![[r#"
                Reading.

                → Read math.sh
                → Search for `-lt`
                ✓ Read math.sh
                ✓ Search for `-lt`
                → Run `sh test.sh`
                ✓ Run `sh test.sh`

                Done.
            "#]],
        );
    }

    #[test]
    fn an_answer_keeps_its_own_paragraphs_and_streams_across_chunks() {
        check(
            false,
            vec![
                text("One"),
                text(" line.\n"),
                text("\n"),
                text("Two."),
                finished(StopReason::EndTurn),
            ],
            expect![[r#"
                One line.

                Two.
            "#]],
        );
    }

    #[test]
    fn the_turn_ends_with_the_diff_of_what_it_changed() {
        let mut events = vec![text("Fixing.")];
        events.extend(edit("e1"));
        events.extend(shell("c1"));
        events.extend([text("Fixed."), finished(StopReason::EndTurn)]);
        check(
            false,
            events,
            expect![[r#"
                Fixing.

                → Edit math.sh
                ✓ Edit math.sh
                → Run `sh test.sh`
                ✓ Run `sh test.sh`

                Fixed.

                Changed 1 file:
                math.sh +1 -1
                @@ -1,3 +1,3 @@
                 a
                -b -lt c
                +b -gt c
                 d
            "#]],
        );
    }

    #[test]
    fn colour_marks_tool_lines_errors_and_the_diff() {
        let mut events = vec![text("Fixing.")];
        events.extend(edit("e1"));
        events.push(call("c1", "Run `false`", "execute", "executing", json!({})));
        events.push(call(
            "c1",
            "Run `false`",
            "execute",
            "error",
            json!({"output": "\nexit code: 1\n"}),
        ));
        events.push(finished(StopReason::MaxTurns));
        check(
            true,
            events,
            expect![[r#"
                Fixing.

                ␛[38;5;6m→␛[39m␛[2m Edit math.sh␛[0m
                ␛[38;5;2m✓␛[39m␛[2m Edit math.sh␛[0m
                ␛[38;5;6m→␛[39m␛[2m Run `false`␛[0m
                ␛[38;5;1m✗␛[39m␛[2m Run `false`␛[0m␛[38;5;1m: exit code: 1␛[39m

                ␛[1mChanged 1 file:␛[0m
                ␛[1mmath.sh␛[0m␛[38;5;2m +1␛[39m␛[38;5;1m -1␛[39m
                ␛[38;5;6m@@ -1,3 +1,3 @@␛[39m
                 a
                ␛[38;5;1m-b -lt c␛[39m
                ␛[38;5;2m+b -gt c␛[39m
                 d

                ␛[38;5;1mtandem: the turn ended early (MaxTurns)␛[39m
            "#]],
        );
    }

    #[test]
    fn no_diff_and_a_pipe_show_no_summary() {
        let mut events: Vec<Event> = edit("e1").into();
        events.push(finished(StopReason::EndTurn));
        let captured = Captured::default();
        let mut quiet = output(TERMINAL, TERMINAL, &captured, true, false);
        feed(&mut quiet, events);
        assert_eq!(captured.text(), "→ Edit math.sh\n✓ Edit math.sh\n");
        assert!(!quiet.summary_shown);
        // The changes are still known (the demo prints them itself when piped).
        assert!(!quiet.changes.summary(Path::new("/w")).is_empty());

        let mut events: Vec<Event> = edit("e1").into();
        events.push(finished(StopReason::EndTurn));
        assert_eq!(printed(true, events), "");
    }

    #[test]
    fn the_spinner_turns_at_line_starts_and_is_erased_before_anything_else() {
        let captured = Captured::default();
        let mut output = output(TERMINAL, TERMINAL, &captured, true, true);
        let later = |secs| Instant::now() + Duration::from_secs(secs);
        assert!(output.spins());
        output.tick(later(2));
        feed(&mut output, vec![thought()]);
        output.tick(later(3));
        feed(&mut output, vec![text("Looking.")]);
        // Mid-line (the answer's), and not waiting: no frame.
        output.tick(later(4));
        assert!(!output.spins());
        feed(&mut output, shell("c1")[..1].to_vec());
        output.tick(later(5));
        feed(&mut output, shell("c1")[1..].to_vec());
        output.tick(later(6));
        output.stop_spinner();
        assert!(!output.spins());
        expect![[r#"
            ␍␛[2K⠋ waiting for the model… 2s␍␛[2K⠙ thinking… 3s␍␛[2KLooking.

            → Run `sh test.sh`
            ␍␛[2K⠹ running… 5s␍␛[2K✓ Run `sh test.sh`
            ␍␛[2K⠸ waiting for the model… 6s␍␛[2K"#]]
        .assert_eq(&captured.text());
    }

    #[test]
    fn no_spinner_frames_where_stderr_is_not_a_terminal() {
        let captured = Captured::default();
        let mut output = output(TERMINAL, Tty::PIPE, &captured, true, true);
        assert!(!output.spins());
        output.tick(Instant::now() + Duration::from_secs(2));
        feed(
            &mut output,
            vec![text("Hi."), finished(StopReason::EndTurn)],
        );
        assert_eq!(captured.text(), "Hi.\n");
    }

    #[test]
    fn a_restarted_answer_on_a_terminal_starts_a_new_paragraph_after_the_note() {
        check(
            false,
            vec![
                text("PART-ONE "),
                retrying(),
                text("PART-ONE PART-TWO"),
                finished(StopReason::EndTurn),
            ],
            expect![[r#"
                PART-ONE 

                model request failed, retrying: connection reset
                tandem: the answer so far was cut off; it starts again below

                PART-ONE PART-TWO
            "#]],
        );
    }

    #[test]
    fn a_piped_answer_with_stderr_on_a_terminal_gets_coloured_activity_only() {
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Screen::new(
            Box::new(out.clone()),
            Tty::PIPE,
            Box::new(err.clone()),
            COLOUR,
        );
        let options = Options {
            json: false,
            mode: ApprovalMode::Yolo,
            root: PathBuf::from("/w"),
            diff: true,
        };
        let mut output = Output::new(options, screen);
        let mut events = vec![text("Fixing.")];
        events.extend(edit("e1"));
        events.extend([text("Fixed."), finished(StopReason::EndTurn)]);
        feed(&mut output, events);
        output.tick(Instant::now() + Duration::from_secs(1));
        output.stop_spinner();
        // Stdout exactly as ever: the answer once, no summary.
        assert_eq!(out.text(), "Fixing.\n\nFixed.\n");
        expect![[r#"
            ␛[38;5;6m→␛[39m␛[2m Edit math.sh␛[0m
            ␛[38;5;2m✓␛[39m␛[2m Edit math.sh␛[0m
        "#]]
        .assert_eq(&err.text());
    }

    #[test]
    fn a_retried_answer_reaches_stdout_once() {
        let events = || {
            vec![
                text("PART-ONE "),
                retrying(),
                text("PART-ONE "),
                retrying(),
                text("PART-ONE "),
                text("PART-TWO"),
                finished(StopReason::EndTurn),
            ]
        };
        // A pipe gets the completed answer only.
        assert_eq!(printed(true, events()), "PART-ONE PART-TWO\n");
        // A terminal sees the text as it streams, each restart on a fresh paragraph.
        assert_eq!(
            printed(false, events()),
            "PART-ONE \n\nPART-ONE \n\nPART-ONE PART-TWO\n"
        );
    }

    #[test]
    fn a_pipe_gets_each_response_once_it_is_complete_and_never_a_failed_one() {
        let call = Event::ToolCall(
            serde_json::from_value(serde_json::json!({"callId": "c1", "tool": "read_file",
                "title": "Read a.txt", "kind": "read", "status": "executing"}))
            .unwrap(),
        );
        assert_eq!(
            printed(
                true,
                vec![
                    text("Reading."),
                    call,
                    text("Half an ans"),
                    finished(StopReason::Error)
                ]
            ),
            "Reading.\n"
        );
    }

    #[test]
    fn compression_is_reported_with_grouped_token_counts() {
        let report = CompressionReport {
            status: CompressionStatus::Compressed,
            tokens_before: 12_345,
            tokens_after: 2_345,
            message: None,
        };
        assert_eq!(
            compression_line(&report),
            "compressed the history: 12,345 → 2,345 tokens"
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
