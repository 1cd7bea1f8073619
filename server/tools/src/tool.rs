//! What a tool is (`Tool`), what it gets (`ToolContext`, with the session's record of what the
//! model has seen), what it returns (`ToolOutput` for the model and the UI, or a `ToolError`),
//! and the helpers every tool uses (arguments, schemas, caps). The tools themselves and their
//! registry are the sibling modules and `mod.rs`.
//!
//! Output for the model is compact plain text with hard caps; every cut says how to get more.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use tandem_syntax::{MapRequest, SymbolIndex};

use serde::{Deserialize, Serialize};
use tandem_sandbox::editor::Editor;
use tandem_sandbox::workspace::Workspace;

use super::{shell, web_fetch};
use tandem_protocol::{FileDiff, Location, Todo, ToolKind};

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by: built-in tools have fixed names, an MCP server's tools
    /// get theirs when the server starts.
    fn name(&self) -> &str;
    /// What the model reads about the tool: when to use it, what it returns, its limits.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object (`schema_for::<Args>()`).
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Whether the tool changes anything (files, processes, memory). Read-only tools may run in
    /// parallel; mutating ones run one at a time, in the order the model gave.
    fn mutates(&self) -> bool;
    /// Whether this call changes anything: `mutates()` unless the arguments decide it (a
    /// `subagent` call mutates only when the chosen agent has a mutating tool).
    fn mutates_call(&self, args: &Value) -> bool {
        let _ = args;
        self.mutates()
    }
    /// Whether the tool reads files from the disk rather than through the editor (a shell
    /// command, ripgrep, an MCP server): before it runs, the agent's changes that sit unsaved in
    /// open buffers are put on disk where the editor can (`Editor::sync_to_disk`).
    fn reads_disk(&self) -> bool {
        false
    }
    /// Whether the tool is only of use to a model that takes images (`view_image`): it is not
    /// declared to one that does not.
    fn needs_images(&self) -> bool {
        false
    }
    /// A short human title for the call, e.g. "Read src/lib.rs (lines 1-200)". `args` may be
    /// invalid; fall back to the tool's name then.
    fn title(&self, args: &Value) -> String;
    /// Runs the call. Errors the model can act on are `ToolError::Respond`.
    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
    /// The change the call would make, computed without making it, for approval prompts: the
    /// user approves what they can see. `Ok(None)` when unknown; `Err` with what `run` would
    /// answer when the call is certain to be refused (the file was not read, `old_string` is
    /// not there): the model is told that at once, and the user is never asked to approve a
    /// call that cannot succeed. Must not write anything, nor change what the session has seen
    /// except as the refusal shows it (what `run` would have marked).
    fn preview<'a>(
        &'a self,
        args: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Option<FileDiff>, String>> {
        let _ = (args, ctx);
        Box::pin(async { Ok(None) })
    }
    /// Everything an approval prompt must show about the call when it has no diff to show:
    /// complete, with invisible characters made visible (`approval::shown::visible`). The
    /// default is the arguments as indented JSON.
    fn approval_details(&self, args: &Value) -> String {
        with_arguments(self.name(), args)
    }
    /// Whether the user trusts the tool to run without asking (an MCP server's tools with
    /// `trust: true`); deny rules and protected paths still apply.
    fn trusted(&self) -> bool {
        false
    }
    /// Other names the approval rules know this call by, besides the tool's: a
    /// `read_mcp_resource` call is also a call of the MCP server it reaches (`mcp__<server>`),
    /// so a rule naming that server allows or denies it as it does the server's tools. A deny
    /// rule for any of the names refuses the call; an allow rule for any of them runs it.
    fn approval_aliases(&self, args: &Value) -> Vec<String> {
        let _ = args;
        Vec::new()
    }
    /// The paths the call would write, as its arguments name them (relative to the workspace
    /// root, `~/…`, or absolute), so that writes to protected paths are asked about: every path
    /// the tool may write, whoever chose it (`save_memory`'s memory files too). For `shell`,
    /// every word of the command but options. No default: a tool that writes nothing says so.
    fn paths_written(&self, args: &Value, ctx: &ToolContext) -> Vec<String>;
    /// How the call would run in the OS sandbox, for tools that start processes (`shell`):
    /// the plan, which the approval step shows the user and uses (`sandbox.autoAllow`, and an
    /// escalation always asks). `None` for tools that start none.
    fn sandbox_plan(&self, args: &Value, ctx: &ToolContext) -> Option<SandboxCall> {
        let _ = (args, ctx);
        None
    }
}

/// How a call that starts a process would run in the OS sandbox (`Tool::sandbox_plan`).
#[derive(Debug, Clone)]
pub struct SandboxCall {
    pub plan: tandem_sandbox::confine::Plan,
    /// What the call asks for beyond the sandbox.
    pub escalation: Option<tandem_sandbox::confine::Escalation>,
}

/// `what`, then the call's arguments as indented JSON, made visible: the default approval
/// details.
pub fn with_arguments(what: &str, args: &Value) -> String {
    let json = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    tandem_sandbox::approval::shown::visible(&format!("{what}, with these arguments:\n{json}"))
}

/// The `path` argument of a call that writes one file, for `Tool::paths_written`.
pub(crate) fn path_argument(args: &Value) -> Vec<String> {
    args.get("path")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .into_iter()
        .collect()
}

/// A tool's result: the text the model reads, and what a UI shows beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    /// Files (and lines) the call touched, for "follow the agent" in the editor.
    pub locations: Vec<Location>,
    /// The change an edit or write made.
    pub diff: Option<FileDiff>,
    /// Images the model is shown after the text (`view_image`).
    pub images: Vec<tandem_providers::Image>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            ..ToolOutput::default()
        }
    }
}

/// How a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can act on it (bad arguments, no match, outside the workspace, timeout): it
    /// goes back to the model as the call's result, marked as an error.
    #[error("{0}")]
    Respond(String),
    /// A bug or an environment failure the model cannot fix: the turn ends with an error.
    #[error("internal error: {0}")]
    Fatal(String),
}

impl From<tandem_sandbox::workspace::SandboxError> for ToolError {
    fn from(error: tandem_sandbox::workspace::SandboxError) -> Self {
        ToolError::Respond(error.to_string())
    }
}

/// Everything a tool call may use. Shared by the calls of one session.
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: Arc<Workspace>,
    /// Cancelled when the user cancels the turn; long-running tools check it.
    pub cancel: CancellationToken,
    pub session: Arc<SessionState>,
    /// The user's global memory file (`~/.config/tandem/AGENTS.md` or as configured).
    pub user_memory_file: Option<PathBuf>,
    /// Where file contents are read from and written to: open editor buffers or the disk.
    pub editor: Arc<dyn Editor>,
    /// Tags of the workspace's files, kept between calls (and, in the language server, shared
    /// by the sessions of a workspace) so that only changed files are parsed again.
    pub index: Arc<SymbolIndex>,
    /// What the settings say about syntax-aware behaviour (edit guardrail, outlines, repo map).
    pub syntax: SyntaxSettings,
    /// The variables shell commands do not inherit (model keys).
    pub shell_environment: Arc<shell::ShellEnvironment>,
    /// Language servers that say which errors an edit added (`None`: nobody asks).
    pub language_servers: Option<Arc<dyn crate::language_servers::LanguageServers>>,
    /// Whether they are asked, and about warnings too (`diagnostics` settings).
    pub diagnostics: crate::language_servers::DiagnosticsSettings,
    /// The client's terminal, where `shell` runs foreground commands when the front end offers
    /// one (ACP's `terminal/*`); else they run here.
    pub terminal: Option<Arc<dyn shell::Terminal>>,
    /// The tool call being run (set per call by the session), for front ends that show a call's
    /// terminal inside it.
    pub call_id: Option<String>,
    /// Bytes one call's output should take at most, set by the session from what the model's
    /// context window leaves (`None`: only the tools' own caps). `read_file` shows fewer lines
    /// to stay within it (and says how to read on); the session shortens any other output that
    /// does not fit the window.
    pub output_limit: Option<usize>,
    /// Where a long-running call reports how far it got (an MCP server's progress
    /// notifications), set per call by the session: each message becomes the call's progress
    /// in a `ToolCallUpdate`.
    pub progress: Option<ProgressSink>,
    /// What the session lends a call that runs a child session (`subagent`): its model, its
    /// approval policy and where the child's events go, nested under the call. Set per call.
    pub parent: Option<ParentSession>,
    /// What the `webFetch` settings allow web_fetch to reach, and its caps.
    pub web_fetch: web_fetch::WebFetchSettings,
}

/// What `ToolContext::progress` sends messages to.
pub type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

/// The parent session as a `subagent` call sees it (`ToolContext::parent`).
#[derive(Clone)]
pub struct ParentSession {
    /// The model the parent runs with now; a child uses it unless its definition names another.
    pub model: tandem_providers::Model,
    pub approval: tandem_sandbox::approval::ApprovalPolicy,
    pub protected: tandem_sandbox::approval::protected::ProtectedPaths,
    /// Where the call sends the child's events, each wrapped in an `Event::Subagent` that
    /// names the call; they reach the parent's front end in order with the parent's own.
    pub events: Arc<dyn Fn(tandem_protocol::Event) + Send + Sync>,
}

impl ToolContext {
    /// Tools over `roots` on disk (no editor), with default settings, no user memory file and a
    /// fresh session state: what tests and benchmarks start from. Front ends use
    /// `setup::tool_context`, which reads the settings.
    pub fn on_disk(roots: Vec<PathBuf>) -> ToolContext {
        ToolContext {
            workspace: Arc::new(Workspace::new(roots, Vec::new())),
            cancel: CancellationToken::new(),
            session: Arc::new(SessionState::default()),
            user_memory_file: None,
            editor: Arc::new(tandem_sandbox::editor::DiskEditor),
            index: Arc::default(),
            syntax: SyntaxSettings::default(),
            shell_environment: Arc::default(),
            language_servers: None,
            diagnostics: crate::language_servers::DiagnosticsSettings::default(),
            terminal: None,
            call_id: None,
            output_limit: None,
            progress: None,
            parent: None,
            web_fetch: web_fetch::WebFetchSettings::default(),
        }
    }

    /// The problems a change of `path` from `before` to `after` added, from the language
    /// servers, when there are some and the settings ask for them.
    pub async fn edit_problems(
        &self,
        path: &Path,
        before: Option<&str>,
        after: &str,
    ) -> Option<crate::language_servers::EditProblems> {
        let servers = self.language_servers.as_ref()?;
        if !self.diagnostics.enabled {
            return None;
        }
        servers
            .edit_problems(path, before, after, &self.diagnostics)
            .await
    }

    /// The most bytes a tool whose own cap is `own_cap` should return: its cap, or less when
    /// the model's context window leaves less (`output_limit`), but never under 1 KiB, which
    /// any window Tandem runs in can take and which still says something useful.
    pub fn output_budget(&self, own_cap: usize) -> usize {
        self.output_limit.map_or(own_cap, |limit| {
            limit.clamp(MIN_OUTPUT_BUDGET.min(own_cap), own_cap)
        })
    }
}

/// The floor of `ToolContext::output_budget`.
const MIN_OUTPUT_BUDGET: usize = 1024;

/// State the tools of one session share.
#[derive(Debug, Default)]
pub struct SessionState {
    seen: Mutex<HashMap<PathBuf, Seen>>,
    /// The text behind `seen`, kept for what the model saw in an open buffer (or wrote into
    /// one): when the user changes the buffer afterwards, an edit is merged with their change
    /// rather than refused (see `merge`). Files seen on disk keep only their hash.
    seen_texts: Mutex<HashMap<PathBuf, (u64, Arc<str>)>>,
    todos: Mutex<Vec<Todo>>,
    focus: Mutex<Focus>,
}

/// What the session's repo maps rank toward: where the user is, what the agent edited, what
/// the prompt named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Focus {
    pub active: Option<PathBuf>,
    /// Other open files, most recent first.
    pub open: Vec<PathBuf>,
    /// Files the agent wrote, most recent first.
    pub edited: Vec<PathBuf>,
    /// Identifiers in the latest prompt.
    pub mentioned: Vec<String>,
}

/// Files remembered as recently edited, at most.
const EDITED_KEPT: usize = 20;

/// What a file looked like on disk at some moment: a cheap way to tell it has not changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified: Option<SystemTime>,
    pub len: u64,
}

impl FileStamp {
    /// The file's stamp now, if it exists.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: metadata.modified().ok(),
            len: metadata.len(),
        })
    }
}

/// What the model last saw of a file (by reading it, or by writing it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Hash of the whole content seen.
    pub hash: u64,
    /// The buffer version, when it was seen in an open buffer.
    pub version: Option<i32>,
    /// The disk stamp, when it was seen on disk.
    pub stamp: Option<FileStamp>,
    /// 1-based first and last line, when the model was shown only those lines (a selection
    /// attached to the prompt); `None` when it saw the file whole or read it with read_file.
    pub lines: Option<(usize, usize)>,
}

/// Whether the model's view of a file is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The model has not read it in this session.
    Unseen,
    /// It is exactly what the model last saw.
    Current,
    /// Someone (the user, a command) changed it since, or it is gone.
    Changed,
}

/// What the model saw, as a hash (compared within one process only, never saved).
pub fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(bytes);
    hasher.write_usize(bytes.len());
    hasher.finish()
}

/// `content_hash` of a file's content, read a piece at a time: the file can be far larger than
/// anything worth holding (SipHash gives the same hash whatever the pieces).
pub fn file_hash(path: &Path) -> std::io::Result<u64> {
    use std::hash::Hasher;
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buffer = vec![0; 64 * 1024];
    let mut len = 0;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                hasher.write(&buffer[..read]);
                len += read;
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    hasher.write_usize(len);
    Ok(hasher.finish())
}

impl SessionState {
    /// Notes that the model has seen `path` with exactly `content` (from the buffer at
    /// `version`, or from disk when `version` is `None`). Without a version, `content` may also
    /// be text the model wrote into a buffer whose next version is unknown; the disk then
    /// still holds something else, so its stamp is kept only when the disk holds `content`.
    pub fn mark_seen(&self, path: &Path, content: &[u8], version: Option<i32>) {
        self.record_seen(
            path,
            content,
            content_hash(content),
            version,
            None,
            version.is_some(),
        );
    }

    /// Notes that the agent wrote `content` to `path`; `in_buffer` when it went into the
    /// editor's open buffer, whose version after the change is not known yet. `lines` keeps a
    /// model that was shown only some lines (see `mark_shown`) to those lines.
    pub fn mark_written(
        &self,
        path: &Path,
        content: &[u8],
        in_buffer: bool,
        lines: Option<(usize, usize)>,
    ) {
        self.record_seen(path, content, content_hash(content), None, lines, in_buffer);
    }

    /// Notes that the model was shown `content` (the whole file, from the buffer at `version`
    /// or the disk) or, with `lines`, only those 1-based lines of it: text attached to a
    /// prompt. A file the model has already seen whole, unchanged, stays seen whole.
    pub fn mark_shown(
        &self,
        path: &Path,
        content: &[u8],
        version: Option<i32>,
        lines: Option<(usize, usize)>,
    ) {
        let hash = content_hash(content);
        let lines = lines.filter(|_| {
            self.last_seen(path)
                .is_none_or(|seen| seen.hash != hash || seen.lines.is_some())
        });
        self.record_seen(path, content, hash, version, lines, version.is_some());
    }

    fn record_seen(
        &self,
        path: &Path,
        content: &[u8],
        hash: u64,
        version: Option<i32>,
        lines: Option<(usize, usize)>,
        keep_text: bool,
    ) {
        let stamp = match version {
            Some(_) => None,
            None => FileStamp::of(path).filter(|stamp| {
                // A stamp vouches for the hash on later checks, so it must be the stamp of this
                // very content: a length that differs rules that out without reading.
                stamp.len == content.len() as u64
                    && file_hash(path).is_ok_and(|on_disk| on_disk == hash)
            }),
        };
        let seen = Seen {
            hash,
            version,
            stamp,
            lines,
        };
        lock(&self.seen).insert(path.to_owned(), seen);
        let text = keep_text
            .then(|| std::str::from_utf8(content).ok())
            .flatten();
        let mut texts = lock(&self.seen_texts);
        match text {
            Some(text) => {
                texts.insert(path.to_owned(), (hash, Arc::from(text)));
            }
            None => {
                texts.remove(path);
            }
        }
    }

    /// The text the model last saw of `path`, when it was kept (see `seen_texts`).
    pub fn seen_text(&self, path: &Path) -> Option<Arc<str>> {
        let seen = self.last_seen(path)?;
        lock(&self.seen_texts)
            .get(path)
            .filter(|(hash, _)| *hash == seen.hash)
            .map(|(_, text)| text.clone())
    }

    /// Notes that the model has seen `path` as it is on disk now (reads it to know).
    pub fn mark_read(&self, path: &Path) {
        // Stamped before it is hashed: a change made while it is read then shows as a new stamp.
        let stamp = FileStamp::of(path);
        if let Ok(hash) = file_hash(path) {
            let seen = Seen {
                hash,
                version: None,
                stamp,
                lines: None,
            };
            lock(&self.seen).insert(path.to_owned(), seen);
            lock(&self.seen_texts).remove(path);
        }
    }

    /// What the model last saw of `path`, if it has.
    pub fn last_seen(&self, path: &Path) -> Option<Seen> {
        lock(&self.seen).get(path).copied()
    }

    /// Whether the model's view of `path` is what the user sees now (the open buffer, else the
    /// disk).
    pub fn freshness(&self, path: &Path, editor: &dyn Editor) -> Freshness {
        let Some(seen) = self.last_seen(path) else {
            return Freshness::Unseen;
        };
        match Self::current_hash(path, &seen, editor) {
            Some(hash) if hash == seen.hash => Freshness::Current,
            _ => Freshness::Changed,
        }
    }

    /// Files the model has seen that changed since it last read or wrote them (or are gone),
    /// sorted. A file stays listed until the model reads it again (or it changes back), since
    /// the reminder that lists it rides only on the latest request.
    pub fn changed_files(&self, editor: &dyn Editor) -> Vec<PathBuf> {
        let seen: Vec<(PathBuf, Seen)> = lock(&self.seen)
            .iter()
            .map(|(path, seen)| (path.clone(), *seen))
            .collect();
        let mut changed: Vec<PathBuf> = seen
            .into_iter()
            .filter(|(path, seen)| Self::current_hash(path, seen, editor) != Some(seen.hash))
            .map(|(path, _)| path)
            .collect();
        changed.sort();
        changed
    }

    /// The hash of what `path` holds now, skipping the disk read when the stamp proves it
    /// unchanged. `None` when it is gone.
    fn current_hash(path: &Path, seen: &Seen, editor: &dyn Editor) -> Option<u64> {
        if let Some(buffer) = editor.buffer(path) {
            // Always hashed, never trusted by version: hashing text in memory is cheap, and an
            // editor may number a reopened buffer from 1 again.
            return Some(content_hash(buffer.text.as_bytes()));
        }
        if seen.stamp.is_some() && seen.stamp == FileStamp::of(path) {
            return Some(seen.hash);
        }
        file_hash(path).ok()
    }

    /// The editor's state as of the latest prompt (front ends without an editor leave it empty).
    pub fn set_editor_focus(&self, active: Option<PathBuf>, open: Vec<PathBuf>) {
        let mut focus = lock(&self.focus);
        focus.active = active;
        focus.open = open;
    }

    /// The identifiers the latest prompt mentions.
    pub fn set_mentioned(&self, identifiers: Vec<String>) {
        lock(&self.focus).mentioned = identifiers;
    }

    /// Notes that the agent wrote `path` (edit, write_file), for the repo map's ranking.
    pub fn note_edited(&self, path: &Path) {
        let mut focus = lock(&self.focus);
        focus.edited.retain(|edited| edited != path);
        focus.edited.insert(0, path.to_owned());
        focus.edited.truncate(EDITED_KEPT);
    }

    pub fn focus(&self) -> Focus {
        lock(&self.focus).clone()
    }

    /// A repo map request ranked toward the session's focus.
    pub fn map_request(&self, max_tokens: usize) -> MapRequest {
        let focus = self.focus();
        MapRequest {
            active: focus.active,
            open: focus.open,
            edited: focus.edited,
            mentioned: focus.mentioned,
            max_tokens,
        }
    }

    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    pub fn set_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }
}

/// A poisoned lock still holds consistent data here: every critical section is one map update.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Parses a call's arguments into the tool's argument struct, with an error the model can fix
/// ("invalid arguments for read_file: missing field `path`").
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|error| ToolError::Respond(format!("invalid arguments for {tool}: {error}")))
}

/// Checks a call's arguments against the tool's JSON Schema. `Err` is the message for the model
/// ("invalid arguments for read_file: \"path\" is a required property").
pub fn check_args(tool: &dyn Tool, args: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(&tool.parameters())
        .map_err(|error| format!("the {} tool's schema is invalid: {error}", tool.name()))?;
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("{at}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {}: {}",
            tool.name(),
            problems.join("; ")
        ))
    }
}

/// The JSON Schema of an argument struct, inlined and without the meta fields some providers
/// refuse (`$schema`, `title`).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(fields) = &mut schema {
        fields.remove("$schema");
        fields.remove("title");
    }
    schema
}

/// Cuts `text` to at most `max_bytes` (on a character boundary) and says so.
pub fn cap(text: &str, max_bytes: usize, how_to_get_more: &str) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output truncated: showing {end} of {} bytes. {how_to_get_more}]",
        &text[..end],
        text.len()
    )
}

/// Syntax-aware behaviour (the `syntax` settings key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SyntaxSettings {
    /// Refuse agent edits that add syntax errors to the region they change.
    pub check_edits: bool,
    /// Estimated tokens of repo map in the first prompt's environment context; 0 leaves it out.
    pub repo_map_tokens: usize,
    /// `read_file` without a range shows the outline of a file longer than this many lines.
    pub outline_over_lines: usize,
    /// Files the symbol index covers at most (the repo map, find_symbol, references).
    pub max_indexed_files: usize,
}

impl Default for SyntaxSettings {
    fn default() -> Self {
        SyntaxSettings {
            check_edits: true,
            repo_map_tokens: 1024,
            outline_over_lines: 400,
            max_indexed_files: 20_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hashes_as_its_content_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        // Larger than one read, and not a multiple of it.
        let content: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        assert_eq!(file_hash(&path).unwrap(), content_hash(&content));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(file_hash(&path).unwrap(), content_hash(b""));
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
    }

    #[test]
    fn cap_cuts_on_a_char_boundary_and_says_how_to_get_more() {
        assert_eq!(cap("short", 10, "x"), "short");
        let capped = cap("ééééé", 5, "Ask for less.");
        assert_eq!(
            capped,
            "éé\n[output truncated: showing 4 of 10 bytes. Ask for less.]"
        );
    }
}
