//! What a session uses of the client: its file system (`fs/*`, behind `editor.rs`'s
//! `ClientFiles`) and its terminal (`terminal/*`, behind the core's `shell::Terminal` seam), and
//! the `Frontend` that hands them to the session's tools. Each is used from a session's task,
//! never from the connection's dispatch loop, so waiting for the client's answer is safe.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::v1::{self, schema as acp};
use agent_client_protocol::Client;
use futures::future::BoxFuture;
use tandem_agent::host::Frontend;
use tandem_agent::settings::EditSettings;
use tandem_agent::tools::shell::{Terminal, TerminalCommand, TerminalEnding, TerminalRun};
use tandem_agent::{DiskEditor, Editor};
use tracing::debug;

use crate::editor::{ClientEditor, ClientFiles, ClientFs};

/// A session's side of the connection. The session id is known once the host has made the
/// session, before any tool can run.
pub(crate) struct ClientSide {
    connection: v1::ConnectionTo<Client>,
    session: OnceLock<acp::SessionId>,
    /// Which client terminal each tool call runs in, so every later update of the call keeps
    /// showing it. The pump reads it under the same lock it sends under (see `turn.rs`).
    pub(crate) terminals: Mutex<HashMap<String, String>>,
}

impl ClientSide {
    pub(crate) fn new(connection: v1::ConnectionTo<Client>) -> Arc<ClientSide> {
        Arc::new(ClientSide {
            connection,
            session: OnceLock::new(),
            terminals: Mutex::default(),
        })
    }

    pub(crate) fn set_session(&self, id: acp::SessionId) {
        // Set once, when the session is made; a second call would name the same session.
        let _ = self.session.set(id);
    }

    fn session(&self) -> Result<acp::SessionId, String> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| "the session has no id yet".to_owned())
    }

    fn terminals(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.terminals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Embeds `terminal` in the call's display at once (the pump keeps it there afterwards).
    fn show_terminal(&self, session: &acp::SessionId, call_id: &str, terminal: &acp::TerminalId) {
        let mut terminals = self.terminals();
        terminals.insert(call_id.to_owned(), terminal.0.to_string());
        let update = acp::ToolCallUpdate::new(
            call_id.to_owned(),
            acp::ToolCallUpdateFields::new()
                .status(acp::ToolCallStatus::InProgress)
                .content(vec![acp::ToolCallContent::Terminal(acp::Terminal::new(
                    terminal.clone(),
                ))]),
        );
        let notification = acp::SessionNotification::new(
            session.clone(),
            acp::SessionUpdate::ToolCallUpdate(update),
        );
        if let Err(error) = self.connection.send_notification(notification) {
            debug!("the terminal's tool call update was not sent: {error}");
        }
    }
}

impl ClientFiles for Arc<ClientSide> {
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<String, String>> {
        let side = self.clone();
        Box::pin(async move {
            let request = acp::ReadTextFileRequest::new(side.session()?, path);
            side.connection
                .send_request(request)
                .block_task()
                .await
                .map(|response| response.content)
                .map_err(|error| error.message)
        })
    }

    fn write(&self, path: PathBuf, text: String) -> BoxFuture<'static, Result<(), String>> {
        let side = self.clone();
        Box::pin(async move {
            let request = acp::WriteTextFileRequest::new(side.session()?, path, text);
            side.connection
                .send_request(request)
                .block_task()
                .await
                .map(drop)
                .map_err(|error| error.message)
        })
    }
}

/// Releases a client terminal when the command is done with it, however that happened (the
/// future may be dropped when the turn ends). The client keeps showing its output.
struct Release {
    connection: v1::ConnectionTo<Client>,
    session: acp::SessionId,
    terminal: acp::TerminalId,
}

impl Drop for Release {
    fn drop(&mut self) {
        let request = acp::ReleaseTerminalRequest::new(self.session.clone(), self.terminal.clone());
        // Sent and not waited for: nothing is left to do with the answer.
        self.connection.send_request(request).detach();
    }
}

/// The client's terminal as the shell tool's `Terminal`.
pub(crate) struct ClientTerminal(pub(crate) Arc<ClientSide>);

impl ClientTerminal {
    async fn kill(&self, session: &acp::SessionId, terminal: &acp::TerminalId) {
        let request = acp::KillTerminalRequest::new(session.clone(), terminal.clone());
        if let Err(error) = self.0.connection.send_request(request).block_task().await {
            debug!("terminal/kill failed: {}", error.message);
        }
    }
}

impl Terminal for ClientTerminal {
    fn run<'a>(&'a self, command: TerminalCommand) -> BoxFuture<'a, Result<TerminalRun, String>> {
        Box::pin(async move {
            let side = &self.0;
            let session = side.session()?;
            let create = acp::CreateTerminalRequest::new(
                session.clone(),
                command.program.display().to_string(),
            )
            .args(command.args.clone())
            .env(
                command
                    .env
                    .iter()
                    .map(|(name, value)| acp::EnvVariable::new(name.clone(), value.clone()))
                    .collect(),
            )
            .cwd(command.cwd.clone())
            .output_byte_limit(u64::try_from(command.output_limit).unwrap_or(u64::MAX));
            let terminal = side
                .connection
                .send_request(create)
                .block_task()
                .await
                .map_err(|error| error.message)?
                .terminal_id;
            let _release = Release {
                connection: side.connection.clone(),
                session: session.clone(),
                terminal: terminal.clone(),
            };
            if let Some(call_id) = &command.call_id {
                side.show_terminal(&session, call_id, &terminal);
            }
            let wait = side
                .connection
                .send_request(acp::WaitForTerminalExitRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .block_task();
            let ending = tokio::select! {
                exited = wait => {
                    let status = exited.map_err(|error| error.message)?.exit_status;
                    TerminalEnding::Exited { code: status.exit_code, signal: status.signal }
                }
                () = tokio::time::sleep(command.timeout) => {
                    self.kill(&session, &terminal).await;
                    TerminalEnding::TimedOut
                }
                () = command.cancel.cancelled() => {
                    self.kill(&session, &terminal).await;
                    TerminalEnding::Cancelled
                }
            };
            let output = side
                .connection
                .send_request(acp::TerminalOutputRequest::new(session, terminal))
                .block_task()
                .await
                .map_err(|error| error.message)?;
            Ok(TerminalRun {
                output: output.output,
                truncated: output.truncated,
                ending,
            })
        })
    }
}

/// A session as the host's `Frontend`: its tools see files through the client when the client
/// offers its file system (else the disk), and its foreground commands run in the client's
/// terminal when it offers one (else here).
pub(crate) struct AcpFrontend {
    pub(crate) fs: Arc<ClientFs>,
    pub(crate) terminal: Option<Arc<ClientTerminal>>,
}

impl AcpFrontend {
    /// The frontend of a session of a client with these capabilities.
    pub(crate) fn new(
        side: &Arc<ClientSide>,
        capabilities: &acp::ClientCapabilities,
    ) -> AcpFrontend {
        AcpFrontend {
            fs: ClientFs::new(
                Arc::new(side.clone()),
                capabilities.fs.read_text_file,
                capabilities.fs.write_text_file,
            ),
            terminal: capabilities
                .terminal
                .then(|| Arc::new(ClientTerminal(side.clone()))),
        }
    }

    /// For reading settings and saved sessions, where no tool runs: the disk.
    pub(crate) fn disk() -> Arc<AcpFrontend> {
        Arc::new(AcpFrontend {
            fs: ClientFs::new(Arc::new(NoClientFiles), false, false),
            terminal: None,
        })
    }
}

impl Frontend for AcpFrontend {
    fn editor(&self, _settings: &EditSettings) -> Arc<dyn Editor> {
        if self.fs.offers_anything() {
            Arc::new(ClientEditor::new(self.fs.clone()))
        } else {
            Arc::new(DiskEditor)
        }
    }

    fn terminal(&self) -> Option<Arc<dyn Terminal>> {
        self.terminal
            .clone()
            .map(|terminal| terminal as Arc<dyn Terminal>)
    }
}

/// The files of a frontend whose client offers none.
struct NoClientFiles;

impl ClientFiles for NoClientFiles {
    fn read(&self, _path: PathBuf) -> BoxFuture<'static, Result<String, String>> {
        Box::pin(async { Err("the client offers no files".to_owned()) })
    }

    fn write(&self, _path: PathBuf, _text: String) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Err("the client offers no files".to_owned()) })
    }
}
