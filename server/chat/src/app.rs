//! The interactive chat: its state and what each key, agent message and finished request does
//! to it. Drawing is `ui.rs`'s; the agent is reached only through ACP (`client.rs`), so the
//! same app runs on Tandem's agent in this process and on an editor's session it attached to.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema as acp;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tokio::sync::{mpsc, oneshot};

use crate::client::{Answer, Connection, FromAgent};
use crate::complete::{self, Completion, Files};
use crate::composer::{Composer, Edit};
use crate::render;
use crate::theme::Theme;
use crate::transcript::{Level, Transcript};

/// How long a first Ctrl-C waits for the second that quits.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// The chat's own commands, beside the agent's.
const LOCAL_COMMANDS: [(&str, &str, Option<&str>); 6] = [
    ("new", "start a new session", None),
    ("resume", "pick a saved session to continue", None),
    (
        "model",
        "switch the model (no name: list them)",
        Some("[name]"),
    ),
    (
        "mode",
        "switch the approval mode (no name: list them)",
        Some("[mode]"),
    ),
    (
        "expand",
        "show or hide every tool call's output (ctrl-o)",
        None,
    ),
    ("quit", "leave the chat (the session is saved)", None),
];

/// Something the app's own tasks finished.
pub enum Done {
    Prompt(std::result::Result<acp::PromptResponse, String>),
    Sessions(std::result::Result<Vec<acp::SessionInfo>, String>),
    Loaded(
        acp::SessionId,
        std::result::Result<Option<Vec<acp::SessionConfigOption>>, String>,
    ),
    Created(std::result::Result<acp::NewSessionResponse, String>),
    Failed(String),
}

/// A permission request waiting for the user.
pub struct Pending {
    pub request: acp::RequestPermissionRequest,
    pub reply: oneshot::Sender<Answer>,
    /// The highlighted choice.
    pub selected: usize,
    /// The feedback being typed, once "reject with feedback" was chosen.
    pub feedback: Option<String>,
    pub scroll: usize,
}

/// A choice of a permission request as the chat offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub option_id: String,
    pub feedback: bool,
}

impl Pending {
    /// The request's options, safe first, with "reject with feedback" after the plain reject.
    pub fn choices(&self) -> Vec<Choice> {
        let of = |kind: acp::PermissionOptionKind| {
            self.request
                .options
                .iter()
                .filter(move |option| option.kind == kind)
        };
        let mut choices = Vec::new();
        for option in of(acp::PermissionOptionKind::RejectOnce) {
            choices.push(Choice {
                label: option.name.clone(),
                option_id: option.option_id.0.to_string(),
                feedback: false,
            });
            choices.push(Choice {
                label: "Reject with feedback".into(),
                option_id: option.option_id.0.to_string(),
                feedback: true,
            });
        }
        for kind in [
            acp::PermissionOptionKind::RejectAlways,
            acp::PermissionOptionKind::AllowOnce,
            acp::PermissionOptionKind::AllowAlways,
        ] {
            for option in of(kind) {
                choices.push(Choice {
                    label: option.name.clone(),
                    option_id: option.option_id.0.to_string(),
                    feedback: false,
                });
            }
        }
        choices
    }
}

/// The session picker of `/resume`.
pub struct Picker {
    pub sessions: Vec<acp::SessionInfo>,
    pub selected: usize,
}

pub struct App {
    pub connection: Connection,
    pub session: Option<acp::SessionId>,
    pub cwd: PathBuf,
    pub theme: Theme,
    pub transcript: Transcript,
    pub cache: render::Cache,
    pub composer: Composer,
    pub completion: Option<Completion>,
    files: Files,
    pub approvals: VecDeque<Pending>,
    pub picker: Option<Picker>,
    /// When the running turn (this chat's) started.
    pub turn: Option<Instant>,
    /// Lines scrolled up from the bottom of the transcript.
    pub scroll: usize,
    pub expanded: bool,
    last_interrupt: Option<Instant>,
    /// A short message in the status line.
    pub flash: Option<String>,
    /// The editor this chat is attached to, if it is.
    pub attached: Option<String>,
    done: mpsc::UnboundedSender<Done>,
    pub exit: Option<i32>,
    /// Whether the session ran a turn here or was loaded: worth telling how to resume it.
    pub used: bool,
}

impl App {
    pub fn new(
        connection: Connection,
        cwd: PathBuf,
        theme: Theme,
        done: mpsc::UnboundedSender<Done>,
    ) -> App {
        App {
            connection,
            session: None,
            files: Files::list(&cwd),
            cwd: cwd.clone(),
            theme,
            transcript: Transcript::new(cwd.clone()),
            cache: render::Cache::default(),
            composer: Composer::default(),
            completion: None,
            approvals: VecDeque::new(),
            picker: None,
            turn: None,
            scroll: 0,
            expanded: false,
            last_interrupt: None,
            flash: None,
            attached: None,
            done,
            exit: None,
            used: false,
        }
    }

    /// The session this chat shows; its options, if the agent gave them.
    /// A transcript for this workspace, empty.
    fn fresh_transcript(&self) -> Transcript {
        Transcript::new(self.cwd.clone())
    }

    pub fn start_session(
        &mut self,
        id: acp::SessionId,
        options: Option<Vec<acp::SessionConfigOption>>,
    ) {
        self.session = Some(id);
        if let Some(options) = options {
            self.transcript.options = options;
        }
    }

    pub fn on_agent(&mut self, message: FromAgent) {
        match message {
            FromAgent::Update(notification) => {
                if self.session.as_ref() != Some(&notification.session_id) {
                    return;
                }
                self.transcript.apply(notification.update);
            }
            FromAgent::Permission { request, reply } => {
                if self.session.as_ref() != Some(&request.session_id) {
                    // Not this chat's session: it cannot answer.
                    return;
                }
                self.approvals.push_back(Pending {
                    request,
                    reply,
                    selected: 0,
                    feedback: None,
                    scroll: 0,
                });
            }
        }
        self.drop_settled_approvals();
    }

    /// A question whose call has moved on (answered in the editor, or cancelled) goes away.
    fn drop_settled_approvals(&mut self) {
        let transcript = &self.transcript;
        self.approvals.retain(|pending| {
            let id = pending.request.tool_call.tool_call_id.0.to_string();
            !transcript.items.iter().any(|item| {
                matches!(&item.entry, crate::transcript::Entry::Tool(tool)
                    if tool.id == id && !matches!(tool.status, acp::ToolCallStatus::Pending))
            }) && !pending.reply.is_closed()
        });
    }

    pub fn on_done(&mut self, done: Done) {
        match done {
            Done::Prompt(result) => {
                self.turn = None;
                self.transcript.settle_tools();
                self.approvals.clear();
                match result {
                    Ok(response) => match response.stop_reason {
                        acp::StopReason::EndTurn => {}
                        acp::StopReason::Cancelled => {
                            self.transcript.notice(Level::Warning, "cancelled");
                        }
                        acp::StopReason::MaxTokens => self.transcript.notice(
                            Level::Warning,
                            "the answer was cut off (the model's token limit)",
                        ),
                        acp::StopReason::MaxTurnRequests => self.transcript.notice(
                            Level::Warning,
                            "the turn stopped at its limit of model requests (maxTurns)",
                        ),
                        acp::StopReason::Refusal => {
                            self.transcript.notice(Level::Warning, "the model refused")
                        }
                        _ => {}
                    },
                    Err(error) => self.transcript.notice(Level::Error, error),
                }
            }
            Done::Sessions(Ok(mut sessions)) => {
                // The session on the screen is not one to resume.
                sessions.retain(|session| Some(&session.session_id) != self.session.as_ref());
                if sessions.is_empty() {
                    self.flash = Some("no saved sessions in this workspace".into());
                } else {
                    self.picker = Some(Picker {
                        sessions,
                        selected: 0,
                    });
                }
            }
            Done::Sessions(Err(error)) | Done::Failed(error) => {
                self.transcript.notice(Level::Error, error);
            }
            Done::Loaded(id, Ok(options)) => {
                self.used = true;
                self.start_session(id, options);
            }
            Done::Loaded(_, Err(error)) => self.transcript.notice(Level::Error, error),
            Done::Created(Ok(response)) => {
                self.start_session(response.session_id, response.config_options);
                self.transcript.notice(Level::Info, "new session");
            }
            Done::Created(Err(error)) => self.transcript.notice(Level::Error, error),
        }
    }

    pub fn on_terminal(&mut self, event: TermEvent) {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            TermEvent::Paste(text) => {
                if let Some(pending) = self.approvals.front_mut() {
                    if let Some(feedback) = &mut pending.feedback {
                        feedback.push_str(&text);
                    }
                    return;
                }
                self.composer.paste(&text);
                self.refresh_completion();
            }
            _ => {}
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        self.flash = None;
        if control && key.code == KeyCode::Char('c') {
            self.interrupt();
            return;
        }
        if !self.approvals.is_empty() {
            self.approval_key(key);
            return;
        }
        if self.picker.is_some() {
            self.picker_key(key);
            return;
        }
        match key.code {
            KeyCode::Char('o') if control => {
                self.expanded = !self.expanded;
                return;
            }
            KeyCode::Char('d') if control && self.composer.text().is_empty() => {
                self.exit = Some(0);
                return;
            }
            KeyCode::Char('l') if control => {
                self.scroll = 0;
                return;
            }
            KeyCode::PageUp => {
                self.scroll += 10;
                return;
            }
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_sub(10);
                return;
            }
            KeyCode::Up if key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.scroll += 1;
                return;
            }
            KeyCode::Down if key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.scroll = self.scroll.saturating_sub(1);
                return;
            }
            KeyCode::Esc => {
                if self.completion.take().is_none() && self.turn.is_some() {
                    self.cancel();
                }
                return;
            }
            _ => {}
        }
        if let Some(completion) = &mut self.completion {
            match key.code {
                KeyCode::Up => return completion.step(-1),
                KeyCode::Down => return completion.step(1),
                KeyCode::Tab | KeyCode::Enter => {
                    let start = completion.start;
                    if let Some(candidate) = completion.selected().cloned() {
                        self.composer
                            .replace_before_cursor(start, &candidate.insert);
                        self.completion = None;
                        // Enter on a command with nothing more to say runs it.
                        let complete_command = key.code == KeyCode::Enter
                            && candidate.insert.starts_with('/')
                            && !candidate.label.contains(' ');
                        if !complete_command {
                            return;
                        }
                    }
                }
                _ => {}
            }
        }
        match self.composer.key(key) {
            Edit::Submit => self.submit(),
            Edit::Changed | Edit::Moved => self.refresh_completion(),
            Edit::Ignored => {}
        }
    }

    fn refresh_completion(&mut self) {
        let mut commands: Vec<complete::Command> = LOCAL_COMMANDS
            .iter()
            .map(|(name, description, hint)| {
                (
                    (*name).to_owned(),
                    (*description).to_owned(),
                    hint.map(str::to_owned),
                )
            })
            .collect();
        for command in &self.transcript.commands {
            let hint = match &command.input {
                Some(acp::AvailableCommandInput::Unstructured(input)) => Some(input.hint.clone()),
                _ => None,
            };
            commands.push((command.name.clone(), command.description.clone(), hint));
        }
        let text = self.composer.text();
        let files = if text[..self.composer.cursor()].contains('@') {
            self.files.snapshot()
        } else {
            Vec::new()
        };
        self.completion = complete::complete(text, self.composer.cursor(), &commands, &files);
    }

    /// Ctrl-C: cancels the turn, else clears the prompt, else (twice) quits.
    fn interrupt(&mut self) {
        if let Some(pending) = self.approvals.pop_front() {
            // The question is answered "reject", and the turn cancelled.
            let answer = reject(&pending);
            let _ = pending.reply.send(answer);
            self.cancel();
            return;
        }
        if self.turn.is_some() {
            self.cancel();
            return;
        }
        if self.picker.take().is_some() || self.completion.take().is_some() {
            return;
        }
        if !self.composer.text().is_empty() {
            self.composer.clear();
            return;
        }
        match self.last_interrupt {
            Some(at) if at.elapsed() < QUIT_WINDOW => self.exit = Some(0),
            _ => {
                self.last_interrupt = Some(Instant::now());
                self.flash = Some("press ctrl-c again to quit".into());
            }
        }
    }

    fn cancel(&mut self) {
        if let Some(session) = &self.session {
            let _ = self
                .connection
                .send_notification(acp::CancelNotification::new(session.clone()));
            self.flash = Some("cancelling…".into());
        }
    }

    pub fn submit(&mut self) {
        if self.composer.is_empty() {
            return;
        }
        let text = self.composer.take();
        self.completion = None;
        self.scroll = 0;
        let trimmed = text.trim();
        if let Some(command) = trimmed.strip_prefix('/') {
            let (name, argument) = command.split_once(' ').unwrap_or((command, ""));
            if self.local_command(name, argument.trim()) {
                return;
            }
        }
        if self.turn.is_some() {
            self.flash = Some("a turn is running: esc cancels it".into());
            self.composer.set(&text);
            return;
        }
        let Some(session) = self.session.clone() else {
            self.flash = Some("no session yet".into());
            self.composer.set(&text);
            return;
        };
        self.transcript
            .push(crate::transcript::Entry::User(text.clone()));
        self.turn = Some(Instant::now());
        self.used = true;
        let request = acp::PromptRequest::new(
            session,
            vec![acp::ContentBlock::Text(acp::TextContent::new(text))],
        );
        self.send(request, |result| Some(Done::Prompt(result)));
    }

    /// Sends `request` from a task of its own; `done` turns its answer into what the app is
    /// told when it comes (`None`: nothing).
    fn send<R>(
        &self,
        request: R,
        done: impl FnOnce(std::result::Result<R::Response, String>) -> Option<Done> + Send + 'static,
    ) where
        R: agent_client_protocol::JsonRpcRequest,
        R::Response: Send + 'static,
    {
        let sent = self.connection.send_request(request).block_task();
        let tell = self.done.clone();
        tokio::spawn(async move {
            if let Some(message) = done(sent.await.map_err(|error| error.to_string())) {
                let _ = tell.send(message);
            }
        });
    }

    /// Runs a chat command; false when `name` is not one (it goes to the agent).
    fn local_command(&mut self, name: &str, argument: &str) -> bool {
        match name {
            "quit" | "exit" => self.exit = Some(0),
            "expand" => self.expanded = !self.expanded,
            "new" => {
                if self.turn.is_some() {
                    self.flash = Some("a turn is running: esc cancels it".into());
                    return true;
                }
                self.transcript = self.fresh_transcript();
                self.cache = render::Cache::default();
                let request = acp::NewSessionRequest::new(self.cwd.clone());
                self.send(request, |result| Some(Done::Created(result)));
            }
            "resume" => self.list_sessions(),
            "model" | "mode" => self.set_option(name, argument),
            _ => return false,
        }
        true
    }

    fn list_sessions(&mut self) {
        let request = acp::ListSessionsRequest::new().cwd(self.cwd.clone());
        self.send(request, |result| {
            Some(Done::Sessions(result.map(|response| response.sessions)))
        });
    }

    /// `/model NAME` or `/mode NAME`: the session option set; no name lists the choices.
    fn set_option(&mut self, id: &str, argument: &str) {
        let choices = self.transcript.choices(id);
        if argument.is_empty() {
            let list: Vec<String> = choices.iter().map(|(value, _)| value.clone()).collect();
            let current = self.transcript.option(id).unwrap_or_default();
            self.transcript.notice(
                Level::Info,
                format!("{id}: {current} (choices: {})", list.join(", ")),
            );
            return;
        }
        let Some((value, _)) = choices
            .iter()
            .find(|(value, name)| value == argument || name == argument)
        else {
            self.transcript.notice(
                Level::Error,
                format!("no {id} {argument:?}; /{id} lists them"),
            );
            return;
        };
        let Some(session) = self.session.clone() else {
            return;
        };
        let request =
            acp::SetSessionConfigOptionRequest::new(session, id.to_owned(), value.as_str());
        self.send(request, |result| result.err().map(Done::Failed));
        self.flash = Some(format!("{id}: {value}"));
    }

    fn picker_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.picker else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.picker = None,
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected =
                    (picker.selected + 1).min(picker.sessions.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                let Some(session) = picker.sessions.get(picker.selected) else {
                    return;
                };
                let id = session.session_id.clone();
                self.picker = None;
                self.load(id);
            }
            _ => {}
        }
    }

    /// Loads a saved (or live) session: its conversation is replayed into a fresh transcript.
    pub fn load(&mut self, id: acp::SessionId) {
        self.transcript = self.fresh_transcript();
        self.cache = render::Cache::default();
        // The replay's updates name the session: take them from now on.
        self.session = Some(id.clone());
        self.transcript.notice(
            Level::Info,
            format!("resumed session {}: the conversation so far", id.0),
        );
        let request = acp::LoadSessionRequest::new(id.clone(), self.cwd.clone());
        self.send(request, move |result| {
            Some(Done::Loaded(
                id,
                result.map(|response| response.config_options),
            ))
        });
    }

    fn approval_key(&mut self, key: KeyEvent) {
        let Some(pending) = self.approvals.front_mut() else {
            return;
        };
        let choices = pending.choices();
        if let Some(feedback) = &mut pending.feedback {
            match key.code {
                KeyCode::Enter => {
                    let feedback = feedback.trim().to_owned();
                    let choice = choices.get(pending.selected).cloned();
                    if let (Some(pending), Some(choice)) = (self.approvals.pop_front(), choice) {
                        let answer = Answer {
                            option_id: choice.option_id,
                            feedback: (!feedback.is_empty()).then_some(feedback),
                        };
                        let _ = pending.reply.send(answer);
                    }
                }
                KeyCode::Esc => pending.feedback = None,
                KeyCode::Backspace => {
                    feedback.pop();
                }
                KeyCode::Char(c) => feedback.push(c),
                _ => {}
            }
            return;
        }
        let choose = |index: usize| choices.get(index).cloned();
        let chosen = match key.code {
            KeyCode::Up | KeyCode::Left | KeyCode::BackTab => {
                pending.selected = pending.selected.saturating_sub(1);
                None
            }
            KeyCode::Down | KeyCode::Right | KeyCode::Tab => {
                pending.selected = (pending.selected + 1).min(choices.len().saturating_sub(1));
                None
            }
            KeyCode::PageUp => {
                pending.scroll = pending.scroll.saturating_sub(10);
                None
            }
            KeyCode::PageDown => {
                pending.scroll += 10;
                None
            }
            KeyCode::Enter => choose(pending.selected),
            KeyCode::Esc => choose(0),
            KeyCode::Char(c) => c
                .to_digit(10)
                .and_then(|digit| (digit as usize).checked_sub(1))
                .and_then(|index| {
                    pending.selected = index.min(choices.len().saturating_sub(1));
                    choose(index)
                }),
            _ => None,
        };
        let Some(choice) = chosen else {
            return;
        };
        if choice.feedback {
            pending.feedback = Some(String::new());
            return;
        }
        if let Some(pending) = self.approvals.pop_front() {
            let _ = pending.reply.send(Answer {
                option_id: choice.option_id,
                feedback: None,
            });
        }
    }

    /// The status line's state: what the agent is doing, and for how long.
    pub fn activity(&self) -> Option<String> {
        let started = self.turn?;
        let seconds = started.elapsed().as_secs();
        let doing = match self.transcript.running_tool() {
            Some(tool) => format!("running {}", tool.title),
            None => match self.transcript.items.last().map(|item| &item.entry) {
                Some(crate::transcript::Entry::Thought(_)) => "thinking".to_owned(),
                Some(crate::transcript::Entry::Agent(_)) => "answering".to_owned(),
                _ => "waiting for the model".to_owned(),
            },
        };
        Some(format!("{doing} · {seconds}s · esc cancels"))
    }
}

/// The plain rejection of a request.
fn reject(pending: &Pending) -> Answer {
    let option_id = pending
        .choices()
        .into_iter()
        .next()
        .map(|choice| choice.option_id)
        .unwrap_or_else(|| "reject_once".into());
    Answer {
        option_id,
        feedback: None,
    }
}
