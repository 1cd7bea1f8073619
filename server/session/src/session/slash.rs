//! Slash commands and @-mentions in a session's prompts. A prompt that names a command
//! (`slash::CommandSet::find_invocation`) runs it: the built-ins Tandem answers itself (`/help`,
//! `/clear`, `/memory`, `/compress`, `/restore`) never reach the model; `/init` and the custom
//! commands become a prompt for it. Any other prompt is sent as typed, with the files its
//! `@`-mentions name attached.
//!
//! A custom command's `!{…}` pieces run as `shell` calls through the approval policy and the
//! sandbox (the front end shows them like the model's calls, and asks where the policy says to),
//! and its `@{…}` pieces are read through the sandbox; what they printed or held is put in the
//! prompt (`slash::assemble`), and the mentions of the template and the user's arguments are
//! attached like a typed prompt's.

use std::collections::VecDeque;

use serde_json::json;
use tandem_providers::{ToolCall, ToolResult};

use super::Approval;
use super::{Prompt, Session, Stop, TurnIo};
use crate::tokens;
use tandem_extensions::mcp::McpRole;
use tandem_extensions::mentions::{Found, Limits, Resolved, Resolver};
use tandem_extensions::slash::{
    assemble, render_help, BuiltIn, Command, CommandKind, CommandSet, FileOutcome, Injections,
    Invocation, McpPromptCommand, Piece, ShellOutcome,
};
use tandem_protocol::{Attachment, CompressionStatus, Event, StopReason, ToolCallStatus};

/// What a prompt turned out to be.
pub(super) enum Slash {
    /// A command that is done: the turn ends here.
    Done(Stop),
    /// A prompt for the model: typed, or made by a command; its mentions are resolved.
    Prompt(Box<Prompt>),
}

/// The instruction `/init` sends.
const INIT_PROMPT: &str = "Study this project and write an `AGENTS.md` file at the workspace \
root for coding agents (you included) who will work on it later. Explore first: read the README \
and the build files, list the main directories, and look at a few representative source files and \
tests. Then write concise, specific instructions: what the project is; how to build it, run it, \
run its tests (all of them, and a single one) and its linters or formatters; how the code is \
organised (the important directories and files, and what lives where); the conventions to follow \
(style, naming, error handling, testing habits) as the code shows them; and anything surprising a \
newcomer would get wrong. Prefer commands and paths to prose, and don't invent what you did not \
see. If an `AGENTS.md` (or `CLAUDE.md`, `GEMINI.md`) already exists, read it and improve it rather \
than starting over, keeping what is still true.";

impl Session {
    /// The commands this session offers: the built-ins, the custom command files (read anew
    /// each time, so a new file works without a restart) and the MCP servers' prompts.
    pub fn commands(&self) -> CommandSet {
        let mut set = CommandSet::load(&self.config.command_dirs);
        if let Some(mcp) = &self.mcp {
            for prompt in mcp.prompts() {
                set.add(McpPromptCommand::command(&prompt));
            }
        }
        set
    }

    /// Whether `text` runs a command Tandem answers itself, which never reaches the model.
    /// Built-in commands cannot be replaced by a command file, so the name alone decides and no
    /// file is read.
    pub fn answers_itself(&self, text: &str) -> bool {
        tandem_extensions::slash::parse_invocation(text).is_some_and(|invocation| {
            BuiltIn::ALL.iter().any(|builtin| {
                builtin.name() == invocation.name && !matches!(builtin, BuiltIn::Init)
            })
        })
    }

    /// Runs the command `prompt` names, or resolves the mentions of a plain prompt.
    pub(super) async fn slash(
        &mut self,
        prompt: Prompt,
        turn_id: &str,
        io: &mut TurnIo<'_>,
    ) -> Slash {
        // The command files are read only for a prompt that could name a command.
        let proposed = tandem_extensions::slash::parse_invocation(&prompt.text).is_some();
        let mut commands = if proposed {
            self.commands()
        } else {
            CommandSet::default()
        };
        // A command no file names may be an MCP server's prompt whose server is still starting
        // (a session's first prompt, `tandem ask "/server:prompt"`): it is waited for as the
        // first prompt waits, then looked for again.
        if proposed && commands.find_invocation(&prompt.text).is_none() {
            if let Some(mcp) = self.mcp.clone().filter(|mcp| mcp.starting()) {
                tokio::select! {
                    _ = mcp.wait_started(self.config.mcp_start_wait) => {}
                    () = io.cancel.cancelled() => {
                        return Slash::Done(Stop(StopReason::Cancelled, None));
                    }
                }
                commands = self.commands();
            }
        }
        let Some((command, invocation)) = commands.find_invocation(&prompt.text) else {
            let found = tandem_extensions::mentions::find(&prompt.text);
            return Slash::Prompt(Box::new(
                self.with_mentions(prompt, found, &io.cancel).await,
            ));
        };
        match &command.kind {
            CommandKind::BuiltIn(builtin) => {
                self.built_in(*builtin, &invocation, &commands, prompt, io)
                    .await
            }
            CommandKind::Custom(_) => {
                let command = command.clone();
                self.custom(&command, &invocation, prompt, turn_id, io)
                    .await
            }
            CommandKind::McpPrompt(mcp_prompt) => {
                let mcp_prompt = mcp_prompt.clone();
                self.mcp_prompt(&mcp_prompt, &invocation, prompt, io).await
            }
        }
    }

    /// An MCP server's prompt: its messages, from the server, become the prompt.
    async fn mcp_prompt(
        &mut self,
        command: &McpPromptCommand,
        invocation: &Invocation,
        prompt: Prompt,
        io: &mut TurnIo<'_>,
    ) -> Slash {
        let messages = match command.arguments_from(&invocation.args) {
            Err(problem) => Err(format!("{problem}.")),
            Ok(arguments) => match self.mcp.clone() {
                None => Err("no MCP server is configured.".to_owned()),
                Some(mcp) => tokio::select! {
                    messages = mcp.get_prompt(&command.server, &command.prompt, arguments) => {
                        messages.map_err(|error| error.to_string())
                    }
                    () = io.cancel.cancelled() => {
                        return Slash::Done(Stop(StopReason::Cancelled, None));
                    }
                },
            },
        };
        let messages = match messages {
            Ok(messages) => messages,
            Err(problem) => {
                let text = format!("The prompt was not run: {problem}");
                self.emit(io.events, Event::TextChunk { text });
                self.flush_saved_text();
                return Slash::Done(Stop(StopReason::EndTurn, None));
            }
        };
        // One user message carries them all; where the server wrote a model turn, it is marked
        // as such so the model does not take it for the user's words.
        let text = messages
            .iter()
            .map(|message| match message.role {
                McpRole::User => message.text.clone(),
                McpRole::Assistant => format!("(assistant) {}", message.text),
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        let found = tandem_extensions::mentions::find(&text);
        Slash::Prompt(Box::new(
            self.with_mentions(prompt, found, &io.cancel).await,
        ))
    }

    async fn built_in(
        &mut self,
        builtin: BuiltIn,
        invocation: &Invocation,
        commands: &CommandSet,
        prompt: Prompt,
        io: &mut TurnIo<'_>,
    ) -> Slash {
        let args = invocation.args.as_str();
        let words: Vec<&str> = args.split_whitespace().collect();
        let answer = match builtin {
            BuiltIn::Init => {
                return Slash::Prompt(Box::new(Prompt {
                    text: INIT_PROMPT.to_owned(),
                    ..prompt
                }))
            }
            BuiltIn::Help => {
                let mut help = render_help(commands);
                if !commands.warnings.is_empty() {
                    help.push_str("\n\nSome command files could not be used:\n");
                    for warning in &commands.warnings {
                        help.push_str(&format!("- {warning}\n"));
                    }
                }
                help
            }
            BuiltIn::Compress if words.is_empty() => {
                let report = self.compress(io).await;
                match report.status {
                    CompressionStatus::Compressed => format!(
                        "Compressed the conversation from about {} to about {} tokens.",
                        report.tokens_before, report.tokens_after
                    ),
                    _ => format!(
                        "The conversation was not compressed: {}.",
                        report.message.as_deref().unwrap_or("nothing to compress")
                    ),
                }
            }
            BuiltIn::Restore if words.len() <= 1 => {
                self.restore_command(words.first().copied(), io).await
            }
            BuiltIn::Clear if words.is_empty() => {
                self.replace_history(Vec::new());
                self.ctx.session.set_todos(Vec::new());
                "Started a fresh conversation: the model no longer sees the earlier messages. \
                 Files are as the earlier turns left them, and /restore still undoes their \
                 changes."
                    .to_owned()
            }
            BuiltIn::Memory => self.memory_command(args).await,
            BuiltIn::Compress | BuiltIn::Restore | BuiltIn::Clear => {
                let usage = match builtin.argument_hint() {
                    Some(hint) => format!("/{} {hint}", builtin.name()),
                    None => format!("/{}", builtin.name()),
                };
                format!("Usage: {usage} — {}.", builtin.description())
            }
        };
        self.emit(io.events, Event::TextChunk { text: answer });
        self.flush_saved_text();
        Slash::Done(Stop(StopReason::EndTurn, None))
    }

    /// `/memory show | add <text> | reload`.
    async fn memory_command(&mut self, args: &str) -> String {
        let (verb, rest) = args
            .trim()
            .split_once(char::is_whitespace)
            .map_or((args.trim(), ""), |(verb, rest)| (verb, rest.trim()));
        match verb {
            "" | "show" => {
                let memory =
                    crate::memory::load(&self.config.memory, self.ctx.workspace.roots(), None);
                match memory.render(|path| self.ctx.workspace.display(path)) {
                    Some(text) => text,
                    None => format!(
                        "No memory files were found (looked for {} in the workspace and your \
                         configuration directory). /memory add <text> starts one.",
                        self.config.memory.file_names.join(", ")
                    ),
                }
            }
            "add" if !rest.is_empty() => {
                let tool = tandem_tools::save_memory::SaveMemory;
                let args = json!({"fact": rest});
                match tandem_tools::Tool::run(&tool, args, &self.ctx).await {
                    Ok(output) => {
                        // The model hears of it with the next prompt, without changing the
                        // system instruction its prompt cache holds.
                        self.pending_notes.push(format!(
                            "<system-reminder>\nThe user added this to the project's memory: \
                             {rest}\n</system-reminder>"
                        ));
                        output.text
                    }
                    Err(error) => format!("Nothing was saved: {error}"),
                }
            }
            "reload" => match crate::prompt::system_prompt_with_memory(
                &self.ctx.workspace,
                &self.config.prompt,
                &self.config.memory,
            ) {
                Ok((system_prompt, memory)) => {
                    self.config.system_prompt = system_prompt;
                    // The new instruction is sent from the next request on.
                    self.frozen = None;
                    let files: Vec<String> = memory
                        .files
                        .iter()
                        .map(|file| self.ctx.workspace.display(&file.path))
                        .collect();
                    let mut text = if files.is_empty() {
                        "Reloaded the memory: no memory files were found.".to_owned()
                    } else {
                        format!("Reloaded the memory from {}.", files.join(", "))
                    };
                    for warning in memory.warnings {
                        text.push_str(&format!("\n{warning}"));
                    }
                    text
                }
                Err(error) => format!("The memory could not be reloaded: {error}"),
            },
            _ => format!(
                "Usage: /memory {} — {}.",
                BuiltIn::Memory.argument_hint().unwrap_or_default(),
                BuiltIn::Memory.description()
            ),
        }
    }

    /// A custom command: its pieces run and read, the prompt assembled, its mentions attached.
    async fn custom(
        &mut self,
        command: &Command,
        invocation: &Invocation,
        prompt: Prompt,
        turn_id: &str,
        io: &mut TurnIo<'_>,
    ) -> Slash {
        let pieces = command.expand(&invocation.args).unwrap_or_default();
        let mut outcomes = Collected::default();
        for piece in &pieces {
            if io.cancel.is_cancelled() {
                return Slash::Done(Stop(StopReason::Cancelled, None));
            }
            match piece {
                Piece::Shell { command } => {
                    let index = outcomes.shells.len() + 1;
                    let outcome = self
                        .command_piece(command, &format!("{turn_id}-command-{index}"), io)
                        .await;
                    outcomes.shells.push_back(outcome);
                }
                Piece::File { path } => {
                    let outcome = self.file_piece(path, &io.cancel).await;
                    outcomes.files.push_back(outcome);
                }
                Piece::Text(_) | Piece::Mention(_) => {}
            }
        }
        if io.cancel.is_cancelled() {
            return Slash::Done(Stop(StopReason::Cancelled, None));
        }
        let found = assemble(&pieces, &mut outcomes);
        Slash::Prompt(Box::new(
            self.with_mentions(prompt, found, &io.cancel).await,
        ))
    }

    /// Runs one `!{…}` piece as a `shell` call: asked about as the approval policy says, shown
    /// to the front end like any call, its output for the prompt.
    async fn command_piece(
        &mut self,
        command: &str,
        call_id: &str,
        io: &mut TurnIo<'_>,
    ) -> ShellOutcome {
        let call = ToolCall {
            id: call_id.to_owned(),
            name: "shell".to_owned(),
            arguments: json!({ "command": command }),
            signature: None,
        };
        if let Err(error) = self.validate(&call) {
            return ShellOutcome::Failed { error };
        }
        self.update(io.events, &call, ToolCallStatus::Scheduled, None);
        match self.approve(&call, io, None).await {
            Approval::Run => {
                let outcome = self.run_call(&call, io.events, io.cancel.clone()).await;
                shell_outcome(&outcome.result)
            }
            Approval::Refused(message) => {
                self.update(
                    io.events,
                    &call,
                    ToolCallStatus::Error,
                    Some(message.clone()),
                );
                // Its first sentence says who refused it; the rest is advice for a model's call.
                let reason = message
                    .split_once(". ")
                    .map_or(message.as_str(), |(first, _)| first)
                    .trim_end_matches('.')
                    .to_owned();
                ShellOutcome::Refused { reason }
            }
            Approval::Cancelled => {
                let why = "cancelled by the user before it ran".to_owned();
                self.update(
                    io.events,
                    &call,
                    ToolCallStatus::Cancelled,
                    Some(why.clone()),
                );
                ShellOutcome::Failed { error: why }
            }
        }
    }

    /// Reads one `@{…}` piece through the sandbox, as Gemini CLI puts it in the prompt.
    async fn file_piece(
        &self,
        path: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> FileOutcome {
        let (workspace, editor) = (self.ctx.workspace.clone(), self.ctx.editor.clone());
        let (path, cancel) = (path.to_owned(), cancel.clone());
        let read = tokio::task::spawn_blocking(move || {
            let resolver = Resolver {
                workspace: &workspace,
                editor: editor.as_ref(),
                servers: &[],
                limits: Limits::default(),
                cancel,
            };
            resolver.inline(&path)
        })
        .await;
        match read {
            Ok(Ok(content)) => FileOutcome::Content(content),
            Ok(Err(error)) => FileOutcome::Failed { error },
            Err(error) => FileOutcome::Failed {
                error: format!("reading it failed: {error}"),
            },
        }
    }

    /// `prompt` with the files `found`'s mentions name attached (they count as read), and a
    /// note for the model about what could not be.
    pub(super) async fn with_mentions(
        &mut self,
        prompt: Prompt,
        found: Found,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Prompt {
        if found.mentions.is_empty() {
            return Prompt {
                text: found.text,
                ..prompt
            };
        }
        let limits = self.mention_limits();
        let (workspace, editor) = (self.ctx.workspace.clone(), self.ctx.editor.clone());
        let servers: Vec<String> = self
            .mcp
            .as_ref()
            .map(|mcp| {
                mcp.statuses()
                    .into_iter()
                    .map(|status| status.name)
                    .collect()
            })
            .unwrap_or_default();
        let blocking_cancel = cancel.clone();
        let text = found.text.clone();
        let resolved = tokio::task::spawn_blocking(move || {
            let resolver = Resolver {
                workspace: &workspace,
                editor: editor.as_ref(),
                servers: &servers,
                limits,
                cancel: blocking_cancel,
            };
            resolver.resolve_found(found)
        })
        .await
        .unwrap_or_else(|error| {
            tracing::error!("resolving the prompt's mentions failed: {error}");
            Resolved {
                text,
                ..Resolved::default()
            }
        });
        let Resolved {
            mut text,
            mut attachments,
            mut notes,
            resources,
        } = resolved;
        for resource in resources {
            let Some(mcp) = &self.mcp else {
                break;
            };
            match mcp
                .read_resource(&resource.server, &resource.uri, cancel)
                .await
            {
                Ok(content) => attachments.push(Attachment {
                    label: format!("Resource {}:{}", resource.server, resource.uri),
                    text: content,
                    shown: None,
                }),
                Err(error) => notes.push(format!(
                    "[@{}:{} was not attached: {error}]",
                    resource.server, resource.uri
                )),
            }
        }
        if !notes.is_empty() {
            text.push_str("\n\n");
            text.push_str(&notes.join("\n"));
        }
        let mut context: Vec<Attachment> = prompt.context;
        context.extend(attachments);
        Prompt {
            text,
            context,
            ..prompt
        }
    }

    /// What mentions may attach: `read_file`'s caps, and in all no more than half of what the
    /// window leaves after the system instruction and tools.
    fn mention_limits(&mut self) -> Limits {
        let room = self.request_budget().saturating_sub(self.frozen().tokens);
        let room_bytes = usize::try_from(room)
            .unwrap_or(usize::MAX)
            .saturating_mul(tokens::BYTES_PER_TOKEN)
            / 2;
        let defaults = Limits::default();
        Limits {
            file_bytes: defaults.file_bytes.min(room_bytes.max(1024)),
            total_bytes: defaults.total_bytes.min(room_bytes.max(1024)),
            ..defaults
        }
    }
}

/// The outcomes of a command's pieces, in the order they ran (which is the order `assemble`
/// asks for them).
#[derive(Default)]
struct Collected {
    shells: VecDeque<ShellOutcome>,
    files: VecDeque<FileOutcome>,
}

impl Injections for Collected {
    fn shell(&mut self, _command: &str) -> ShellOutcome {
        self.shells.pop_front().unwrap_or(ShellOutcome::Failed {
            error: "it was not run".to_owned(),
        })
    }

    fn file(&mut self, _path: &str) -> FileOutcome {
        self.files.pop_front().unwrap_or(FileOutcome::Failed {
            error: "it was not read".to_owned(),
        })
    }
}

/// A `shell` call's result as a command piece's outcome: the `shell` tool answers with
/// `$ command`, the output (both streams, in order) and `exit code: N`.
fn shell_outcome(result: &ToolResult) -> ShellOutcome {
    if result.is_error {
        return ShellOutcome::Failed {
            error: result.content.clone(),
        };
    }
    let mut lines: Vec<&str> = result.content.lines().collect();
    if lines.first().is_some_and(|line| line.starts_with("(cwd: ")) {
        lines.remove(0);
    }
    if lines.first().is_some_and(|line| line.starts_with("$ ")) {
        lines.remove(0);
    }
    let exit_code = match lines.last() {
        Some(last) if last.starts_with("exit code: ") => {
            let code = last["exit code: ".len()..].trim().parse().ok();
            lines.pop();
            code
        }
        Some(last) if last.starts_with("killed by signal") || last.starts_with("ended without") => {
            lines.pop();
            None
        }
        _ => None,
    };
    let mut stdout = lines.join("\n");
    if stdout == "(no output)" {
        stdout.clear();
    }
    ShellOutcome::Ran {
        exit_code,
        stdout,
        stderr: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: &str, is_error: bool) -> ToolResult {
        ToolResult {
            call_id: "c".into(),
            name: "shell".into(),
            content: content.into(),
            is_error,
        }
    }

    #[test]
    fn shell_results_become_outcomes() {
        assert_eq!(
            shell_outcome(&result("$ git branch\n* main\nexit code: 0", false)),
            ShellOutcome::Ran {
                exit_code: Some(0),
                stdout: "* main".into(),
                stderr: String::new()
            }
        );
        assert_eq!(
            shell_outcome(&result(
                "(cwd: sub)\n$ false\n(no output)\nexit code: 1",
                false
            )),
            ShellOutcome::Ran {
                exit_code: Some(1),
                stdout: String::new(),
                stderr: String::new()
            }
        );
        assert_eq!(
            shell_outcome(&result("$ sleep 9\nkilled by signal SIGKILL", false)),
            ShellOutcome::Ran {
                exit_code: None,
                stdout: String::new(),
                stderr: String::new()
            }
        );
        assert_eq!(
            shell_outcome(&result("the command timed out", true)),
            ShellOutcome::Failed {
                error: "the command timed out".into()
            }
        );
    }
}
