//! What the mentions of a prompt name, read and attached. Every path goes through the
//! workspace sandbox (`Workspace::resolve`); files are read as `read_file` reads them (the
//! editor's open buffer before the disk, binary detection, numbered lines, its caps and its
//! continuation notice), and directories and globs are expanded as `read_many_files` expands
//! them (`.gitignore` respected, sorted, links out of the workspace skipped).
//!
//! Each file becomes one [`Attachment`] labelled `File src/lib.rs` (or `File src/lib.rs (lines
//! 1-400 of 1200)` when cut) whose `shown` makes it count as read for the stale-edit guard. The
//! text is numbered like `read_file`'s, so the line numbers the model sees are the ones its
//! tools use. What could not be attached is said in `notes`, written for the model; a mention
//! that names nothing is left as text without a note.
//!
//! Resolving blocks (it reads files and walks directories): run it on a blocking thread.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::{find, Found, Mention, TRAILING_PUNCTUATION};
use tandem_protocol::{Attachment, ShownFile};
use tandem_sandbox::editor::{current_text, Editor};
use tandem_sandbox::workspace::{normalize, SandboxError, Workspace};
use tandem_tools::read_file::{continuation, snapshot, View, MAX_FILE_BYTES, UNSAVED_NOTE};
use tandem_tools::read_many_files::{expand_pattern, walk, GLOB_CHARS};

/// Paths named at most in a note that lists what was not attached.
const MAX_LISTED: usize = 50;
/// What an attachment costs beyond its label and text: the `<context label="…">` frame the
/// session puts around it.
const FRAME_BYTES: usize = 32;
/// Room kept for the continuation notice that ends a cut file.
const NOTICE_BYTES: usize = 160;
/// Room kept for a label besides the path and the unsaved note: `File `, the line range.
const LABEL_BYTES: usize = 48;

/// How much the mentions of one prompt attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one file's numbered lines; `read_file`'s 400-line window applies too.
    pub file_bytes: usize,
    /// Bytes of all the attachments of one prompt (labels and text).
    pub total_bytes: usize,
    /// Files one directory or glob mention attaches at most.
    pub files_per_mention: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            file_bytes: MAX_FILE_BYTES,
            total_bytes: 256 * 1024,
            files_per_mention: 50,
        }
    }
}

/// `@server:uri`: a resource of one of the MCP servers, for the caller to read through MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMention {
    pub server: String,
    pub uri: String,
}

/// A prompt with its mentions resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resolved {
    /// The prompt as the model should see it: the mentions kept as written, `\@` made `@`.
    pub text: String,
    /// One per file, in the order of the mentions (a directory's or glob's files sorted by
    /// path), each file once.
    pub attachments: Vec<Attachment>,
    /// What the model should know about mentions that were not (all) attached, one line each.
    pub notes: Vec<String>,
    /// MCP resources mentioned, each once, in order.
    pub resources: Vec<ResourceMention>,
}

/// Resolves mentions against a workspace.
pub struct Resolver<'a> {
    pub workspace: &'a Workspace,
    /// Open buffers win over the disk.
    pub editor: &'a dyn Editor,
    /// The MCP servers' names: `@name:uri` is a resource when `name` is one of them.
    pub servers: &'a [String],
    pub limits: Limits,
    /// Checked while walking directories; once cancelled, no further mention is resolved.
    pub cancel: CancellationToken,
}

impl Resolver<'_> {
    /// Finds the mentions in `prompt` (see the rules in `mentions`) and resolves them.
    pub fn resolve(&self, prompt: &str) -> Resolved {
        self.resolve_found(find(prompt))
    }

    /// Resolves mentions found earlier: a custom command's expansion finds them in its template
    /// and in the user's arguments, never in what a shell command printed.
    pub fn resolve_found(&self, found: Found) -> Resolved {
        let mut state = State {
            out: Resolved {
                text: found.text,
                ..Resolved::default()
            },
            used: 0,
            attached: HashSet::new(),
            full: false,
            over_total: Vec::new(),
            binary: Vec::new(),
        };
        let mut seen = HashSet::new();
        for mention in &found.mentions {
            if self.cancel.is_cancelled() {
                break;
            }
            if seen.insert((mention.target.as_str(), mention.quoted)) {
                self.resolve_one(mention, &mut state);
            }
        }
        state.finish(self.limits.total_bytes)
    }

    /// What a Gemini CLI `@{path}` block stands for: a file's text (the open buffer's, if any),
    /// or the text files of a directory or glob pattern, sorted, each under a `--- path ---`
    /// line (`.gitignore` respected, binary files named and skipped), stopping once
    /// `limits.file_bytes` are gathered. An error says why there is nothing, for the prompt.
    pub fn inline(&self, requested: &str) -> Result<String, String> {
        let resolved = self.workspace.resolve(requested);
        let mut files = Vec::new();
        let mut notes = Vec::new();
        match &resolved {
            Ok(path) if path.is_dir() => {
                walk(
                    self.workspace,
                    path,
                    path,
                    None,
                    &self.cancel,
                    &mut files,
                    &mut notes,
                )
                .map_err(|error| error.to_string())?;
            }
            Ok(path) if path.is_file() || self.editor.buffer(path).is_some() => {
                return match current_text(self.editor, path) {
                    Ok(Some(current)) => {
                        text_of(current.bytes).ok_or_else(|| "it is a binary file".to_owned())
                    }
                    Ok(None) => Err("there is no such file".to_owned()),
                    Err(error) => Err(format!("it could not be read: {error}")),
                };
            }
            _ if requested.contains(GLOB_CHARS) => {
                expand_pattern(
                    self.workspace,
                    requested,
                    &self.cancel,
                    &mut files,
                    &mut notes,
                )
                .map_err(|error| error.to_string())?;
                if files.is_empty() {
                    return Err("no file matches it".to_owned());
                }
            }
            Ok(_) => return Err("there is no such file or directory".to_owned()),
            Err(error) => return Err(error.to_string()),
        }
        let mut named: Vec<(String, PathBuf)> = files
            .into_iter()
            .map(|path| (self.workspace.display(&path), path))
            .collect();
        named.sort();
        named.dedup();
        let mut sections = Vec::new();
        let mut used = 0;
        let mut left_out = Vec::new();
        for (shown, path) in named {
            if used >= self.limits.file_bytes {
                left_out.push(shown);
                continue;
            }
            let section = match current_text(self.editor, &path) {
                Ok(Some(current)) => match text_of(current.bytes) {
                    Some(text) => format!("--- {shown} ---\n{}", text.trim_end_matches('\n')),
                    None => format!("[skipped {shown}: binary file]"),
                },
                Ok(None) => continue,
                Err(error) => format!("[could not read {shown}: {error}]"),
            };
            used += section.len() + 1;
            sections.push(section);
        }
        if !left_out.is_empty() {
            sections.push(format!(
                "[not included ({} KiB reached): {}. Read them with read_file]",
                self.limits.file_bytes.div_ceil(1024),
                listed(&left_out)
            ));
        }
        sections.extend(notes);
        if sections.is_empty() {
            return Err("it holds no files (files ignored by .gitignore are skipped)".to_owned());
        }
        Ok(sections.join("\n"))
    }

    fn resolve_one(&self, mention: &Mention, state: &mut State) {
        if !mention.quoted {
            if let Some(resource) = self.resource(&mention.target) {
                if !state.out.resources.contains(&resource) {
                    state.out.resources.push(resource);
                }
                return;
            }
        }
        let mut refused = None;
        for candidate in mention.candidates() {
            match self.workspace.resolve(candidate) {
                Ok(path) => match std::fs::metadata(&path) {
                    Ok(metadata) if metadata.is_dir() => {
                        let mut found = Vec::new();
                        let mut notes = Vec::new();
                        let walked = walk(
                            self.workspace,
                            &path,
                            &path,
                            None,
                            &self.cancel,
                            &mut found,
                            &mut notes,
                        );
                        if walked.is_ok() {
                            self.attach_all(candidate, found, notes, state);
                        }
                        return;
                    }
                    // A file, or one that exists only in the editor, not saved yet.
                    Ok(metadata) if metadata.is_file() => {
                        let shown = self.workspace.display(&path);
                        self.attach_file(path, shown, state);
                        return;
                    }
                    Err(_) if self.editor.buffer(&path).is_some() => {
                        let shown = self.workspace.display(&path);
                        self.attach_file(path, shown, state);
                        return;
                    }
                    // Nothing there (or a pipe or device): perhaps a pattern, or plain text.
                    _ => {}
                },
                Err(error) => {
                    if refused.is_none() && self.exists(candidate) {
                        refused = Some((candidate, error));
                    }
                }
            }
            if candidate.contains(GLOB_CHARS) {
                match self.glob(candidate, state) {
                    Glob::Matched => return,
                    Glob::Outside if refused.is_none() => {
                        state.out.notes.push(format!(
                            "[@{candidate} reaches outside the workspace; patterns match only \
                             inside it; not attached]"
                        ));
                        return;
                    }
                    Glob::Outside | Glob::Nothing => {}
                }
            }
        }
        match refused {
            Some((candidate, SandboxError::Outside { .. })) => state.out.notes.push(format!(
                "[@{candidate} is outside the workspace; not attached]"
            )),
            Some((
                candidate,
                error @ (SandboxError::Invalid { .. } | SandboxError::ReadOnly { .. }),
            )) => state
                .out
                .notes
                .push(format!("[@{candidate} was not attached: {error}]")),
            None => {}
        }
    }

    /// `name:uri` as a resource of the MCP server `name`, when there is such a server.
    fn resource(&self, target: &str) -> Option<ResourceMention> {
        let (server, uri) = target.split_once(':')?;
        let uri = uri.trim_end_matches(TRAILING_PUNCTUATION);
        (!uri.is_empty() && self.servers.iter().any(|name| name == server)).then(|| {
            ResourceMention {
                server: server.to_owned(),
                uri: uri.to_owned(),
            }
        })
    }

    /// Whether something is at `candidate`, judged without following it out of the workspace:
    /// a refusal is noted only for a path that names something, so `@/api/users` in prose stays
    /// text.
    fn exists(&self, candidate: &str) -> bool {
        let path = Path::new(candidate);
        let joined = match self.workspace.primary_root() {
            Some(root) if path.is_relative() => root.join(path),
            _ => path.to_path_buf(),
        };
        std::fs::symlink_metadata(normalize(&joined)).is_ok()
    }

    /// Attaches the files `pattern` matches in the workspace.
    fn glob(&self, pattern: &str, state: &mut State) -> Glob {
        let path = Path::new(pattern);
        let inside_root = self
            .workspace
            .primary_root()
            .is_some_and(|root| path.starts_with(root));
        if (path.is_absolute() && !inside_root)
            || path.components().any(|part| part == Component::ParentDir)
        {
            return Glob::Outside;
        }
        let mut found = Vec::new();
        let mut notes = Vec::new();
        let expanded = expand_pattern(
            self.workspace,
            pattern,
            &self.cancel,
            &mut found,
            &mut notes,
        );
        // No match, an invalid pattern: the mention is text, and what the expansion said about
        // it is of no interest.
        if expanded.is_err() || found.is_empty() {
            return Glob::Nothing;
        }
        self.attach_all(pattern, found, notes, state);
        Glob::Matched
    }

    /// Attaches the files a directory or glob mention named, sorted, up to the per-mention
    /// count; `notes` are the expansion's (links out of the workspace).
    fn attach_all(
        &self,
        mention: &str,
        found: Vec<PathBuf>,
        notes: Vec<String>,
        state: &mut State,
    ) {
        state.out.notes.extend(notes);
        if found.is_empty() {
            state.out.notes.push(format!(
                "[@{mention} holds no files to attach (files ignored by .gitignore are skipped; \
                 mention a file by its path to attach it)]"
            ));
            return;
        }
        let mut files: Vec<(String, PathBuf)> = found
            .into_iter()
            .filter(|path| !state.attached.contains(path))
            .map(|path| (self.workspace.display(&path), path))
            .collect();
        files.sort();
        files.dedup();
        let limit = self.limits.files_per_mention;
        let left_out: Vec<String> = files
            .split_off(limit.min(files.len()))
            .into_iter()
            .map(|(shown, _)| shown)
            .collect();
        for (shown, path) in files {
            self.attach_file(path, shown, state);
        }
        if !left_out.is_empty() {
            state.out.notes.push(format!(
                "[@{mention} names {} files; the first {limit} in path order are attached. Not \
                 attached: {}. Read them with read_file or read_many_files]",
                limit + left_out.len(),
                listed(&left_out)
            ));
        }
    }

    /// Attaches one file (once), within what is left of the total.
    fn attach_file(&self, path: PathBuf, shown: String, state: &mut State) {
        if !state.attached.insert(path.clone()) {
            return;
        }
        if state.full {
            state.over_total.push(shown);
            return;
        }
        let label_room = LABEL_BYTES + shown.len() + UNSAVED_NOTE.len();
        let budget = self
            .limits
            .total_bytes
            .saturating_sub(state.used + label_room + FRAME_BYTES + NOTICE_BYTES)
            .min(self.limits.file_bytes);
        let snapshot = match snapshot(self.editor.buffer(&path), &path, 1, None, budget) {
            Ok(snapshot) => snapshot,
            Err(error) => {
                state
                    .out
                    .notes
                    .push(format!("[could not read {shown}: {error}; not attached]"));
                return;
            }
        };
        let lines = match &snapshot.view {
            View::Binary(description) => {
                state.binary.push(format!("{shown} ({description})"));
                return;
            }
            View::Text(lines) => lines,
        };
        let cut = lines.last < lines.total_lines;
        if lines.total_lines > 0 && lines.last < lines.first {
            // Not one line fits in what is left of the total.
            state.full = true;
            state.over_total.push(shown);
            return;
        }
        let mut text = if lines.total_lines == 0 {
            "(empty file)".to_owned()
        } else {
            lines.body.clone()
        };
        if let Some(notice) = continuation(lines, None, Some(&shown)) {
            text.push('\n');
            text.push_str(&notice);
        }
        let mut details = Vec::new();
        if cut {
            details.push(format!(
                "lines {}-{} of {}",
                lines.first, lines.last, lines.total_lines
            ));
        }
        if snapshot.unsaved {
            details.push(UNSAVED_NOTE.to_owned());
        }
        let label = if details.is_empty() {
            format!("File {shown}")
        } else {
            format!("File {shown} ({})", details.join(", "))
        };
        // Cut by what is left of the total rather than by its own cap: the files after it are
        // only listed.
        state.full = cut && lines.last < lines.window_last && budget < self.limits.file_bytes;
        state.used += label.len() + text.len() + FRAME_BYTES;
        let last = lines.last;
        let shown_file = snapshot
            .content
            .and_then(|content| String::from_utf8(content).ok())
            .map(|content| ShownFile {
                path,
                content,
                version: snapshot.version,
                lines: cut.then_some((1, last)),
            });
        state.out.attachments.push(Attachment {
            label,
            text,
            shown: shown_file,
        });
    }
}

/// What a glob mention came to.
enum Glob {
    Matched,
    /// Nothing matched, or it is not a valid pattern: the mention stays text.
    Nothing,
    /// It reaches outside the workspace (`..`, an absolute path elsewhere).
    Outside,
}

/// One resolution in progress.
struct State {
    out: Resolved,
    /// Bytes attached so far.
    used: usize,
    attached: HashSet<PathBuf>,
    /// The total is reached: further files are only listed.
    full: bool,
    over_total: Vec<String>,
    /// Binary files skipped, with what is known of them.
    binary: Vec<String>,
}

impl State {
    /// The result, with the notes that sum up the whole prompt's mentions.
    fn finish(mut self, total_bytes: usize) -> Resolved {
        if !self.binary.is_empty() {
            self.out.notes.push(format!(
                "[binary files are not attached: {}]",
                listed(&self.binary)
            ));
        }
        if !self.over_total.is_empty() {
            self.out.notes.push(format!(
                "[the mentioned files reached the limit of {} KiB for one prompt; not attached: \
                 {}. Read them with read_file or read_many_files]",
                total_bytes.div_ceil(1024),
                listed(&self.over_total)
            ));
        }
        self.out
    }
}

/// `bytes` as text, unless they are binary: a NUL byte early on (git's test) or not UTF-8.
fn text_of(bytes: Vec<u8>) -> Option<String> {
    if bytes[..bytes.len().min(8 * 1024)].contains(&0) {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    Some(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// `names` joined with commas, at most `MAX_LISTED` of them and how many more.
fn listed(names: &[String]) -> String {
    let mut text = names[..names.len().min(MAX_LISTED)].join(", ");
    if names.len() > MAX_LISTED {
        text.push_str(&format!(" and {} more", names.len() - MAX_LISTED));
    }
    text
}

#[cfg(test)]
mod tests;
