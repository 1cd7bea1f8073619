//! Slash commands: Tandem's built-in ones (descriptors only; the session carries them out) and
//! the custom commands users bring from Gemini CLI (`.toml`) and Claude Code (`.md`), run as
//! those tools run them.
//!
//! - `load.rs` finds the command files ([`CommandDirs`]) and reads them into a [`CommandSet`],
//!   with a warning for each file it cannot use.
//! - `template.rs` expands a custom command's prompt with the user's arguments into
//!   [`Piece`]s, running nothing.
//! - `assemble.rs` puts the prompt together once the caller has run the shell pieces and read
//!   the file pieces.
//!
//! A prompt is a command when [`CommandSet::find_invocation`] says so: [`parse_invocation`]
//! only proposes a name (`/usr/bin/ls is slow` proposes `usr/bin/ls`), and the text is an
//! ordinary prompt unless a command of exactly that name (case-sensitive) exists.
//!
//! A custom command's turn, as the caller runs it:
//! 1. `command.expand(args)`: pieces, with the arguments quoted into shell pieces.
//! 2. Each `Piece::Shell` through the approval policy and the sandbox, each `Piece::File`
//!    through the sandbox (`mentions::Resolver::inline` reads them as Gemini CLI does).
//! 3. `assemble`: the prompt's text and its mentions, which
//!    `mentions::Resolver::resolve_found` attaches. The mentions come from the template and
//!    the user's arguments only: what a command printed or a file held is never read as a
//!    mention, a placeholder or a block.

mod assemble;
pub(crate) mod load;
mod template;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use assemble::{
    assemble, FileOutcome, Injections, ShellOutcome, MAX_FILE_BYTES, MAX_SHELL_BYTES,
};
pub(crate) use load::{split_front_matter, FrontMatter, Meta};
pub use load::{CommandDirs, MAX_COMMAND_FILE_BYTES};
pub use template::{shell_quote, split_words, Dialect, Piece, Template};

/// A command the user can type as `/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Without the slash; namespaced with `:` (`git:commit` for `git/commit.toml`).
    pub name: String,
    /// One line for the help and for completion lists.
    pub description: String,
    /// What the arguments are, e.g. `<message>` or `[turn]`.
    pub argument_hint: Option<String>,
    pub source: CommandSource,
    pub kind: CommandKind,
}

/// Where a command comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandSource {
    BuiltIn,
    /// A file in one of the user's command directories.
    User {
        path: PathBuf,
    },
    /// A file in one of the project's command directories.
    Project {
        path: PathBuf,
    },
    /// A prompt an MCP server offers.
    Mcp {
        server: String,
    },
    /// A file of an installed plugin (`tandem plugins`); named `<plugin>:<command>`.
    Plugin {
        plugin: String,
        path: PathBuf,
    },
}

impl CommandSource {
    /// How a warning names the source: the file's path, or the server.
    fn describe(&self) -> String {
        match self {
            CommandSource::BuiltIn => "Tandem".to_owned(),
            CommandSource::User { path } | CommandSource::Project { path } => {
                path.display().to_string()
            }
            CommandSource::Mcp { server } => format!("the MCP server {server}"),
            CommandSource::Plugin { path, .. } => path.display().to_string(),
        }
    }

    /// Sources of a higher level override those of a lower one.
    fn level(&self) -> u8 {
        match self {
            CommandSource::Mcp { .. } => 0,
            CommandSource::Plugin { .. } => 1,
            CommandSource::User { .. } => 2,
            CommandSource::Project { .. } => 3,
            CommandSource::BuiltIn => 4,
        }
    }
}

/// What running a command means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandKind {
    /// One of Tandem's own; the session carries it out.
    BuiltIn(BuiltIn),
    /// A prompt template from a command file.
    Custom(CustomCommand),
    /// A prompt an MCP server offers; the session asks the server for it.
    McpPrompt(McpPromptCommand),
}

/// An MCP server's prompt as a command: `/<server>:<prompt>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptCommand {
    pub server: String,
    /// The prompt's name on the server.
    pub prompt: String,
    pub arguments: Vec<crate::mcp::McpPromptArgument>,
}

impl McpPromptCommand {
    /// The command for `prompt`: named `<server>:<prompt>`, its arguments as the hint
    /// (`<city> [state]`).
    pub fn command(prompt: &crate::mcp::McpPrompt) -> Command {
        let hint: Vec<String> = prompt
            .arguments
            .iter()
            .map(|argument| {
                if argument.required {
                    format!("<{}>", argument.name)
                } else {
                    format!("[{}]", argument.name)
                }
            })
            .collect();
        let description = prompt
            .description
            .clone()
            .or_else(|| prompt.title.clone())
            .unwrap_or_else(|| {
                format!(
                    "The {} prompt of the MCP server {}",
                    prompt.name, prompt.server
                )
            });
        Command {
            name: format!("{}:{}", prompt.server, prompt.name),
            description,
            argument_hint: (!hint.is_empty()).then(|| hint.join(" ")),
            source: CommandSource::Mcp {
                server: prompt.server.clone(),
            },
            kind: CommandKind::McpPrompt(McpPromptCommand {
                server: prompt.server.clone(),
                prompt: prompt.name.clone(),
                arguments: prompt.arguments.clone(),
            }),
        }
    }

    /// The arguments for the server from what the user typed: `name=value` pairs (the value
    /// may be quoted) by name, and the other words, in order, for the arguments not named
    /// (the last one takes the rest of the words). `Err` names a required argument left
    /// without a value, or an unknown name.
    pub fn arguments_from(&self, typed: &str) -> Result<BTreeMap<String, String>, String> {
        let mut values = BTreeMap::new();
        let mut positional = Vec::new();
        for word in split_words(typed) {
            match word.split_once('=') {
                Some((name, value)) if self.arguments.iter().any(|a| a.name == name) => {
                    values.insert(name.to_owned(), value.to_owned());
                }
                _ => positional.push(word),
            }
        }
        let open: Vec<&str> = self
            .arguments
            .iter()
            .map(|argument| argument.name.as_str())
            .filter(|name| !values.contains_key(*name))
            .collect();
        let mut words = positional.into_iter();
        for (index, name) in open.iter().enumerate() {
            let value = if index + 1 == open.len() {
                let rest: Vec<String> = words.by_ref().collect();
                (!rest.is_empty()).then(|| rest.join(" "))
            } else {
                words.next()
            };
            if let Some(value) = value {
                values.insert((*name).to_owned(), value);
            }
        }
        let extra: Vec<String> = words.collect();
        if !extra.is_empty() {
            return Err(format!(
                "/{}:{} takes no more arguments than {}; `{}` is left over",
                self.server,
                self.prompt,
                self.arguments.len(),
                extra.join(" ")
            ));
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|argument| argument.required && !values.contains_key(&argument.name))
        {
            return Err(format!(
                "/{}:{} needs its `{}` argument{}",
                self.server,
                self.prompt,
                missing.name,
                missing
                    .description
                    .as_deref()
                    .map(|description| format!(" ({description})"))
                    .unwrap_or_default()
            ));
        }
        Ok(values)
    }
}

/// A custom command's prompt and what its file asked for besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    pub template: Template,
    /// Claude Code's `allowed-tools` (e.g. `Bash(git add:*)`), as written; for the caller to
    /// map onto approval rules, or to ignore.
    pub allowed_tools: Vec<String>,
    /// Claude Code's `model`, as written.
    pub model: Option<String>,
}

/// Tandem's built-in commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltIn {
    Help,
    Init,
    Memory,
    Clear,
    Compress,
    Restore,
}

impl BuiltIn {
    pub const ALL: [BuiltIn; 6] = [
        BuiltIn::Help,
        BuiltIn::Init,
        BuiltIn::Memory,
        BuiltIn::Clear,
        BuiltIn::Compress,
        BuiltIn::Restore,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BuiltIn::Help => "help",
            BuiltIn::Init => "init",
            BuiltIn::Memory => "memory",
            BuiltIn::Clear => "clear",
            BuiltIn::Compress => "compress",
            BuiltIn::Restore => "restore",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            BuiltIn::Help => "List the commands, with what each one does",
            BuiltIn::Init => {
                "Have the agent study the project and write an AGENTS.md with what it should \
                 know about it"
            }
            BuiltIn::Memory => {
                "Show what the agent remembers, add a note to the memory, or reload the memory \
                 files"
            }
            BuiltIn::Clear => "Start a fresh conversation in this session; files stay as they are",
            BuiltIn::Compress => {
                "Replace the conversation so far with a summary, to free the context window"
            }
            BuiltIn::Restore => {
                "Undo the file changes of the latest turn that made any, or of the given turn and \
                 every turn after it"
            }
        }
    }

    pub fn argument_hint(self) -> Option<&'static str> {
        match self {
            BuiltIn::Memory => Some("show | add <text> | reload"),
            BuiltIn::Restore => Some("[turn]"),
            BuiltIn::Help | BuiltIn::Init | BuiltIn::Clear | BuiltIn::Compress => None,
        }
    }

    fn command(self) -> Command {
        Command {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            argument_hint: self.argument_hint().map(str::to_owned),
            source: CommandSource::BuiltIn,
            kind: CommandKind::BuiltIn(self),
        }
    }
}

impl Command {
    /// The prompt for this command with `args` (the raw text after its name), as pieces to
    /// run, read and assemble; `None` for a built-in command, which the session carries out.
    pub fn expand(&self, args: &str) -> Option<Vec<Piece>> {
        match &self.kind {
            CommandKind::Custom(custom) => Some(custom.template.expand(&self.name, args)),
            CommandKind::BuiltIn(_) | CommandKind::McpPrompt(_) => None,
        }
    }
}

/// The commands available in a session, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSet {
    commands: BTreeMap<String, Command>,
    /// Files that could not be used and commands that replaced others, one sentence each,
    /// naming the file: for the caller to show the user.
    pub warnings: Vec<String>,
}

impl Default for CommandSet {
    /// The built-in commands alone.
    fn default() -> Self {
        CommandSet {
            commands: BuiltIn::ALL
                .iter()
                .map(|builtin| (builtin.name().to_owned(), builtin.command()))
                .collect(),
            warnings: Vec::new(),
        }
    }
}

impl CommandSet {
    /// The built-in commands and every command in `dirs`; see `load.rs`.
    pub fn load(dirs: &CommandDirs) -> CommandSet {
        let mut set = CommandSet::default();
        load::load(dirs, &mut set);
        set
    }

    /// Adds `command`. A command of a higher level (project over user over MCP) or of the
    /// same level, added later, replaces one of the same name, with a warning; a built-in
    /// command is never replaced.
    pub fn add(&mut self, command: Command) {
        let Some(existing) = self.commands.get(&command.name) else {
            self.commands.insert(command.name.clone(), command);
            return;
        };
        let (name, new, old) = (
            &command.name,
            command.source.describe(),
            existing.source.describe(),
        );
        let warning = match (&existing.source, &command.source) {
            (CommandSource::BuiltIn, _) => {
                format!("{new}: /{name} is a built-in command and cannot be replaced; ignored")
            }
            (existing, added) if added.level() < existing.level() => {
                format!(
                    "{new}: /{name} is already defined by {old}, which takes precedence; ignored"
                )
            }
            (CommandSource::User { .. }, CommandSource::Project { .. }) => {
                format!("/{name}: the project's {new} overrides the user's {old}")
            }
            _ => format!("/{name} is defined twice: {new} is used, {old} is ignored"),
        };
        self.warnings.push(warning);
        let replace = !matches!(existing.source, CommandSource::BuiltIn)
            && command.source.level() >= existing.source.level();
        if replace {
            self.commands.insert(command.name.clone(), command);
        }
    }

    /// The command called exactly `name` (without the slash).
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.commands.get(name)
    }

    /// Every command, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Command> {
        self.commands.values()
    }

    /// The command `text` invokes, if it is one (see the module's rule). A plugin's command
    /// answers to its name without the plugin's prefix too (`/review` for `/kit:review`), as
    /// in Claude Code, while no other command has that name.
    pub fn find_invocation(&self, text: &str) -> Option<(&Command, Invocation)> {
        let invocation = parse_invocation(text)?;
        if let Some(command) = self.get(&invocation.name) {
            return Some((command, invocation));
        }
        let mut bare = self
            .commands
            .values()
            .filter(|command| match &command.source {
                CommandSource::Plugin { plugin, .. } => {
                    command
                        .name
                        .strip_prefix(plugin.as_str())
                        .and_then(|rest| rest.strip_prefix(':'))
                        == Some(invocation.name.as_str())
                }
                _ => false,
            });
        match (bare.next(), bare.next()) {
            (Some(command), None) => Some((command, invocation)),
            _ => None,
        }
    }
}

/// `/name args`, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Up to the first whitespace, without the slash.
    pub name: String,
    /// The rest, trimmed (may span lines).
    pub args: String,
}

/// The command name and arguments `text` proposes, when it starts with `/` (after leading
/// whitespace) followed by a name. `/` alone, `/ x` and `//x` propose nothing. Whether the
/// text is a command is for the caller to decide by looking the name up
/// ([`CommandSet::find_invocation`]): a prompt such as `/usr/bin/ls is slow` proposes
/// `usr/bin/ls`, which names no command.
pub fn parse_invocation(text: &str) -> Option<Invocation> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if name.is_empty() || name.starts_with('/') {
        return None;
    }
    Some(Invocation {
        name: name.to_owned(),
        args: rest[end..].trim().to_owned(),
    })
}

/// The help text: every command with its argument hint and description, grouped as
/// built-in, project, user and MCP commands, each group sorted by name.
pub fn render_help(set: &CommandSet) -> String {
    let groups = [
        ("Built-in commands", 4),
        ("Project commands", 3),
        ("User commands", 2),
        ("Plugin commands", 1),
        ("MCP prompts", 0),
    ];
    let mut sections = Vec::new();
    for (title, level) in groups {
        let lines: Vec<String> = set
            .iter()
            .filter(|command| command.source.level() == level)
            .map(|command| {
                let usage = match &command.argument_hint {
                    Some(hint) => format!("/{} {hint}", command.name),
                    None => format!("/{}", command.name),
                };
                let server = match &command.source {
                    CommandSource::Mcp { server } => format!(" (from {server})"),
                    CommandSource::Plugin { plugin, .. } => format!(" (plugin {plugin})"),
                    CommandSource::BuiltIn
                    | CommandSource::User { .. }
                    | CommandSource::Project { .. } => String::new(),
                };
                format!("  {usage} — {}{server}", command.description)
            })
            .collect();
        if !lines.is_empty() {
            sections.push(format!("{title}:\n{}", lines.join("\n")));
        }
    }
    sections.join("\n\n")
}

#[cfg(test)]
mod tests;
