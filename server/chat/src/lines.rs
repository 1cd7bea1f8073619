//! The chat when stdout is not a terminal (a pipe, a file, a script driving it): no screen,
//! only lines. Each line of standard input is a prompt (or the one `--prompt` gives); the
//! answer streams to stdout; tool calls go to stderr on lines of their own; a permission
//! request is rejected, since nobody can be asked here, and the reason shown.

use std::io::{self, Write};

use agent_client_protocol::v1::schema as acp;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::client::{self, Answer, Connection, FromAgent};
use crate::render::status_mark;
use crate::theme::Theme;
use crate::transcript::chunk_text;
use crate::{ChatError, ChatOptions, Result, Start};

pub(crate) async fn run(
    connection: Connection,
    mut agent: mpsc::UnboundedReceiver<FromAgent>,
    options: &ChatOptions,
    start: Start,
) -> Result<i32> {
    let session = match start {
        Start::New => {
            client::new_session(&connection, options.workspace.clone())
                .await?
                .session_id
        }
        Start::Load(id) => {
            connection
                .send_request(acp::LoadSessionRequest::new(
                    id.clone(),
                    options.workspace.clone(),
                ))
                .block_task()
                .await
                .map_err(|error| ChatError::Agent(error.to_string()))?;
            // The replay is for screens; here the next answer is what counts.
            while agent.try_recv().is_ok() {}
            id
        }
    };
    let mut printer = Printer::default();
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut code = 0;
    loop {
        let prompt = match &options.prompt {
            Some(prompt) if printer.prompts == 0 => prompt.clone(),
            Some(_) => break,
            None => match stdin.next_line().await? {
                Some(line) if line.trim().is_empty() => continue,
                Some(line) => line,
                None => break,
            },
        };
        printer.prompts += 1;
        let request = acp::PromptRequest::new(
            session.clone(),
            vec![acp::ContentBlock::Text(acp::TextContent::new(prompt))],
        );
        let response = connection.send_request(request).block_task();
        tokio::pin!(response);
        let result = loop {
            tokio::select! {
                result = &mut response => break result,
                Some(message) = agent.recv() => printer.message(&session, message),
            }
        };
        while let Ok(message) = agent.try_recv() {
            printer.message(&session, message);
        }
        printer.end_answer();
        match result {
            Ok(response) if response.stop_reason == acp::StopReason::EndTurn => {}
            Ok(response) => {
                eprintln!("tandem: the turn ended: {:?}", response.stop_reason);
                code = 1;
            }
            Err(error) => {
                eprintln!("tandem: {error}");
                code = 1;
            }
        }
    }
    Ok(code)
}

#[derive(Default)]
struct Printer {
    prompts: usize,
    /// The answer printed ends without a line break.
    open_line: bool,
}

impl Printer {
    fn message(&mut self, session: &acp::SessionId, message: FromAgent) {
        match message {
            FromAgent::Update(notification) if &notification.session_id == session => {
                self.update(notification.update);
            }
            FromAgent::Update(_) => {}
            FromAgent::Permission { request, reply } => {
                let title = request.tool_call.fields.title.clone().unwrap_or_default();
                self.end_answer();
                eprintln!(
                    "✗ {title}: needs approval, and nobody can be asked when the chat's output \
                     is not a terminal; rejected"
                );
                let reject = request
                    .options
                    .iter()
                    .find(|option| option.kind == acp::PermissionOptionKind::RejectOnce)
                    .map(|option| option.option_id.0.to_string())
                    .unwrap_or_else(|| "reject_once".into());
                let _ = reply.send(Answer {
                    option_id: reject,
                    feedback: Some("the user could not be asked (no terminal)".into()),
                });
            }
        }
    }

    fn update(&mut self, update: acp::SessionUpdate) {
        match update {
            acp::SessionUpdate::AgentMessageChunk(chunk) => {
                let text = chunk_text(&chunk.content);
                if text.is_empty() {
                    return;
                }
                let mut stdout = io::stdout();
                let _ = write!(stdout, "{text}").and_then(|()| stdout.flush());
                self.open_line = !text.ends_with('\n');
            }
            acp::SessionUpdate::ToolCall(call) => self.tool(call.status, &call.title),
            acp::SessionUpdate::ToolCallUpdate(update) => {
                if let (Some(status), Some(title)) = (update.fields.status, &update.fields.title) {
                    if status != acp::ToolCallStatus::Pending {
                        self.tool(status, title);
                    }
                }
            }
            _ => {}
        }
    }

    fn tool(&mut self, status: acp::ToolCallStatus, title: &str) {
        self.end_answer();
        let (mark, _) = status_mark(status, &Theme::plain());
        eprintln!("{mark} {title}");
    }

    fn end_answer(&mut self) {
        if self.open_line {
            let mut stdout = io::stdout();
            let _ = writeln!(stdout).and_then(|()| stdout.flush());
            self.open_line = false;
        }
    }
}
