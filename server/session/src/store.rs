//! Saved sessions: every session is appended, as it happens, to a JSON Lines file under the
//! user's state directory, one directory per workspace. A line is a `Record`; the file is only
//! ever appended to, so a crash (even `kill -9`) loses at most the line being written, and
//! loading keeps the history as it was at the last finished turn. A corrupt or truncated line is
//! skipped with a warning and the rest is still used.
//!
//! Layout: `<state dir>/sessions/<workspace name>-<hash of its path>/<session id>.jsonl`, plus
//! `<session id>.outputs/` for tool outputs that compression took out of the history and
//! `<session id>.images/` for the images the history shows (`images.rs`). The state
//! directory is `$TANDEM_STATE_DIR`, else the platform's state (or local data) directory's
//! `tandem`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tandem_providers::{Message, Part};

use crate::checkpoint::TurnCheckpoint;
use schemars::JsonSchema;
use tandem_protocol::{Event, StopReason};

/// The version written in `Meta`; a file from a newer Tandem is refused rather than misread.
pub const FORMAT_VERSION: u32 = 1;

/// A line longer than this is skipped unread (with a warning) rather than held: no record Tandem
/// writes comes near it (the largest hold a history or a checkpoint's file texts), so such a
/// line is damage, and reading it whole could cost any amount of memory.
const MAX_LINE_BYTES: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("there is no saved session {0:?} for this workspace")]
    NotFound(String),
    #[error("{0:?} is not a session id")]
    BadId(String),
    #[error("the saved session {path} cannot be used: {message}")]
    Unusable { path: PathBuf, message: String },
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// One line of a session file.
// The event variant is the big one (see `Event`); records are written one at a time.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Record {
    /// The first line.
    Meta {
        version: u32,
        id: String,
        workspace: PathBuf,
        /// Milliseconds since the Unix epoch.
        created_ms: u64,
        model: String,
    },
    TurnStarted {
        turn_id: String,
        /// The user's prompt as typed.
        text: String,
        at_ms: u64,
    },
    /// A message appended to the history.
    Message {
        message: Message,
    },
    /// Parts appended to the history's last message after it was saved (a reminder sent
    /// with it).
    Appended {
        parts: Vec<Part>,
    },
    /// The history replaced as a whole (compression, or a rewritten last message).
    History {
        messages: Vec<Message>,
    },
    /// An event to replay to a client that resumes the session (text already coalesced).
    Event {
        turn_id: String,
        event: Event,
    },
    Checkpoint(TurnCheckpoint),
    TurnFinished {
        turn_id: String,
        stop_reason: StopReason,
        at_ms: u64,
    },
}

/// A fresh session id: the UTC time it was made and a random suffix (`20261123-231045-a1b2`),
/// so ids sort by age and two processes never collide.
pub fn new_session_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (year, month, day) =
        crate::date::civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    let second_of_day = secs % 86_400;
    let (hour, minute, second) = (
        second_of_day / 3_600,
        second_of_day % 3_600 / 60,
        second_of_day % 60,
    );
    // Random across processes, but counted up within one: ids made in the same second by one
    // process never repeat (a random 16 bits alone would, 7% of the time, among 100 ids).
    static SEED: OnceLock<u16> = OnceLock::new();
    static COUNT: AtomicU16 = AtomicU16::new(0);
    let suffix = SEED
        .get_or_init(|| fastrand::u16(..))
        .wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed));
    format!("{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}-{suffix:04x}")
}

/// Wraps an I/O error with what was being done and to which path.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

fn mtime_ms(metadata: &std::fs::Metadata) -> u64 {
    metadata
        .modified()
        .ok()
        .and_then(|modified| modified.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Ids become file names, so anything that could leave the session directory (`/`, `..`) or
/// trip up a file system is refused.
fn check_id(id: &str) -> Result<()> {
    let valid = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    if valid {
        Ok(())
    } else {
        Err(StoreError::BadId(id.to_owned()))
    }
}

/// FNV-1a (64 bits): written out rather than `DefaultHasher`, whose output may change between
/// Rust releases and would then orphan every saved session.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `text` cut to at most `max` characters, the cut marked with '…'.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// A session's title: its first prompt's first non-blank line.
fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    shorten(line, 80)
}

/// A saved session, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The first prompt's first line, shortened.
    pub title: String,
    pub created_ms: u64,
    /// The file's modification time.
    pub updated_ms: u64,
    /// Finished turns.
    pub turns: usize,
    pub path: PathBuf,
}

/// A finished turn, for replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayTurn {
    pub turn_id: String,
    pub text: String,
    pub events: Vec<Event>,
    pub stop_reason: StopReason,
}

/// A session read back from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub id: String,
    pub created_ms: u64,
    /// The history as it was when the last finished turn ended.
    pub history: Vec<Message>,
    /// Finished turns, oldest first.
    pub turns: Vec<ReplayTurn>,
    /// Checkpoints of finished turns, oldest first.
    pub checkpoints: Vec<TurnCheckpoint>,
    /// What was wrong with the file (a skipped line, a turn lost in flight), for the user.
    pub warnings: Vec<String>,
    /// Turns started, finished or not: a resumed session numbers its turns after them, so a
    /// turn lost in flight never shares its id with a later one.
    pub started_turns: usize,
}

/// The saved sessions of one workspace.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// `$TANDEM_STATE_DIR`, else the platform's state directory (local data directory where
    /// there is none) joined with `tandem`.
    pub fn default_state_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("TANDEM_STATE_DIR").filter(|dir| !dir.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|dir| dir.join("tandem"))
    }

    /// The store for the workspace whose first root is `root`, under `state_dir`.
    pub fn for_workspace(state_dir: &Path, root: &Path) -> SessionStore {
        // Through `components` so that `/a/b` and `/a/b/` name the same workspace.
        let normalised: PathBuf = root.components().collect();
        let hash = fnv1a_64(normalised.as_os_str().as_encoded_bytes());
        let name: String = normalised
            .file_name()
            .map(|name| name.to_string_lossy())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        let name = if name.is_empty() || name.chars().all(|c| c == '.') {
            "workspace".to_owned()
        } else {
            name
        };
        SessionStore {
            dir: state_dir
                .join("sessions")
                .join(format!("{name}-{hash:016x}")),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Starts the file of session `id` (from `new_session_id`), writing its `Meta` line.
    pub fn create(&self, id: &str, workspace: &Path, model: &str) -> Result<SessionLog> {
        check_id(id)?;
        // Sessions hold the conversation and every tool's output: the user's alone.
        tandem_sandbox::files::create_private_dir(&self.dir).map_err(io_error(
            "could not create the session directory",
            &self.dir,
        ))?;
        let path = self.path_of(id);
        let file = tandem_sandbox::files::private_options()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error("could not create the session file", &path))?;
        let mut log = SessionLog {
            id: id.to_owned(),
            path,
            file,
        };
        log.append(&Record::Meta {
            version: FORMAT_VERSION,
            id: id.to_owned(),
            workspace: workspace.to_path_buf(),
            created_ms: now_ms(),
            model: model.to_owned(),
        })?;
        Ok(log)
    }

    /// Reads a session back and opens its file for appending.
    pub fn open(&self, id: &str) -> Result<(LoadedSession, SessionLog)> {
        check_id(id)?;
        let path = self.path_of(id);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.to_owned()));
            }
            Err(source) => {
                return Err(StoreError::Io {
                    action: "could not read the saved session",
                    path,
                    source,
                });
            }
        };
        let created_fallback = std::fs::metadata(&path).map_or(0, |metadata| mtime_ms(&metadata));
        let mut lines = SavedLines::new(std::io::BufReader::new(file), MAX_LINE_BYTES);
        let mut loaded = replay(id, &path, &mut lines, created_fallback)?;
        crate::images::restore(
            &mut loaded.history,
            &path.with_extension("images"),
            &mut loaded.warnings,
        );
        // Files saved before sessions were made private are tightened as they are resumed.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::Permissions::from_mode(0o600);
            if let Err(error) = std::fs::set_permissions(&path, private) {
                tracing::warn!("could not make {} private: {error}", path.display());
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_error(
                "could not open for appending the saved session",
                &path,
            ))?;
        // A cut-off last line must not swallow the next record: start it on a fresh line.
        if lines.ends_cut {
            file.write_all(b"\n")
                .map_err(io_error("could not write to", &path))?;
        }
        let log = SessionLog {
            id: id.to_owned(),
            path,
            file,
        };
        Ok((loaded, log))
    }

    /// The saved sessions, most recently updated first. Unreadable files are listed with what
    /// could be read of them.
    pub fn list(&self) -> Result<Vec<SessionSummary>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(io_error("could not list the saved sessions in", &self.dir)(
                    source,
                ));
            }
        };
        let mut sessions = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    tracing::warn!("skipping an entry of {}: {error}", self.dir.display());
                    continue;
                }
            };
            let path = entry.path();
            if path
                .extension()
                .is_none_or(|extension| extension != "jsonl")
            {
                continue;
            }
            let Some(id) = path.file_stem().and_then(|stem| stem.to_str()) else {
                continue;
            };
            if check_id(id).is_err() {
                continue;
            }
            match summarise(id, &path) {
                Ok(summary) => sessions.push(summary),
                Err(error) => {
                    tracing::warn!("skipping the saved session {}: {error}", path.display());
                }
            }
        }
        sessions.sort_by(|a, b| {
            b.updated_ms
                .cmp(&a.updated_ms)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(sessions)
    }

    /// The most recently updated session.
    pub fn latest(&self) -> Result<Option<SessionSummary>> {
        Ok(self.list()?.into_iter().next())
    }

    /// Deletes a session's file and saved outputs.
    pub fn delete(&self, id: &str) -> Result<()> {
        check_id(id)?;
        let path = self.path_of(id);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.to_owned()));
            }
            Err(source) => {
                return Err(StoreError::Io {
                    action: "could not delete",
                    path,
                    source,
                });
            }
        }
        for (folder, what) in [
            ("outputs", "could not delete the saved tool outputs in"),
            ("images", "could not delete the saved images in"),
        ] {
            let folder = path.with_extension(folder);
            match std::fs::remove_dir_all(&folder) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(io_error(what, &folder)(source)),
            }
        }
        Ok(())
    }
}

/// A turn whose `TurnFinished` has not been read yet.
struct OpenTurn {
    turn_id: String,
    text: String,
    events: Vec<Event>,
    checkpoint: Option<TurnCheckpoint>,
}

/// A saved session's lines, read one at a time: a session file can be large, and only the
/// history rebuilt from it needs to be held.
struct SavedLines<R> {
    reader: R,
    max_line_bytes: usize,
    /// Bytes read so far.
    read: u64,
    /// The last line read had no line break after it (Tandem stopped while writing it).
    ends_cut: bool,
}

/// One line of a saved session, without its line break.
enum SavedLine {
    Bytes(Vec<u8>),
    /// Longer than the cap: skipped, not held.
    TooLong,
}

impl<R: BufRead> SavedLines<R> {
    fn new(reader: R, max_line_bytes: usize) -> Self {
        SavedLines {
            reader,
            max_line_bytes,
            read: 0,
            ends_cut: false,
        }
    }

    fn next_line(&mut self) -> std::io::Result<Option<SavedLine>> {
        let mut line = Vec::new();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                // Only the last line can lack its line break.
                self.ends_cut |= any;
                break;
            }
            any = true;
            let (piece, consumed, ended) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (&chunk[..at], at + 1, true),
                None => (chunk, chunk.len(), false),
            };
            if line.len() + piece.len() > self.max_line_bytes {
                too_long = true;
                line = Vec::new();
            }
            if !too_long {
                line.extend_from_slice(piece);
            }
            self.reader.consume(consumed);
            self.read += consumed as u64;
            if ended {
                break;
            }
        }
        Ok(match (any, too_long) {
            (false, _) => None,
            (true, true) => Some(SavedLine::TooLong),
            (true, false) => Some(SavedLine::Bytes(line)),
        })
    }
}

/// Rebuilds a session from the lines of its file (see `SessionStore::open` for the rules).
fn replay(
    id: &str,
    path: &Path,
    lines: &mut SavedLines<impl BufRead>,
    created_fallback: u64,
) -> Result<LoadedSession> {
    let unusable = |message: String| StoreError::Unusable {
        path: path.to_path_buf(),
        message,
    };
    let mut warnings = Vec::new();
    let mut created_ms = None;
    let mut header_damaged = false;
    let mut parsed_any = false;
    let mut started_turns = 0;
    let mut committed: Vec<Message> = Vec::new();
    let mut working: Vec<Message> = Vec::new();
    let mut open: Option<OpenTurn> = None;
    let mut turns = Vec::new();
    let mut checkpoints = Vec::new();

    let mut index = 0;
    loop {
        let line = lines.next_line().map_err(|source| StoreError::Io {
            action: "could not read the saved session",
            path: path.to_path_buf(),
            source,
        })?;
        let Some(line) = line else {
            break;
        };
        let number = index + 1;
        let first = index == 0;
        index += 1;
        let line = match line {
            SavedLine::Bytes(line) => line,
            SavedLine::TooLong => {
                header_damaged |= first;
                let cap = match lines.max_line_bytes {
                    bytes if bytes >= 1 << 20 => format!("{} MiB", bytes >> 20),
                    bytes => format!("{bytes} bytes"),
                };
                warnings.push(format!(
                    "line {number} of the saved session is longer than {cap} and was skipped"
                ));
                continue;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            header_damaged |= first;
            continue;
        }
        let record = match serde_json::from_slice::<Record>(&line) {
            Ok(record) => record,
            Err(_) => {
                if first {
                    header_damaged = true;
                } else if lines.ends_cut {
                    warnings.push(
                        "the last line was cut off (Tandem stopped while writing it); it was skipped"
                            .to_owned(),
                    );
                } else {
                    warnings.push(format!(
                        "line {number} of the saved session is damaged and was skipped"
                    ));
                }
                continue;
            }
        };
        parsed_any = true;
        match record {
            Record::Meta {
                version,
                created_ms: created,
                ..
            } => {
                if version > FORMAT_VERSION {
                    return Err(unusable(format!(
                        "it was written by a newer Tandem (format version {version}; this one reads up to {FORMAT_VERSION}); update Tandem to open it"
                    )));
                }
                if first {
                    created_ms = Some(created);
                }
            }
            Record::TurnStarted { turn_id, text, .. } => {
                started_turns += 1;
                // A turn still open here was cut short by a crash and the session was resumed
                // after it; like the loader did then, leave it out.
                working.clone_from(&committed);
                open = Some(OpenTurn {
                    turn_id,
                    text,
                    events: Vec::new(),
                    checkpoint: None,
                });
            }
            Record::Message { message } => {
                if open.is_none() {
                    committed.push(message.clone());
                }
                working.push(message);
            }
            Record::Appended { parts } => {
                if open.is_none() {
                    if let Some(last) = committed.last_mut() {
                        last.parts.extend(parts.iter().cloned());
                    }
                }
                if let Some(last) = working.last_mut() {
                    last.parts.extend(parts);
                }
            }
            Record::History { messages } => {
                if open.is_none() {
                    committed.clone_from(&messages);
                }
                working = messages;
            }
            Record::Event { event, .. } => {
                if let Some(turn) = &mut open {
                    turn.events.push(event);
                }
            }
            Record::Checkpoint(checkpoint) => match &mut open {
                Some(turn) => turn.checkpoint = Some(checkpoint),
                None => checkpoints.push(checkpoint),
            },
            Record::TurnFinished { stop_reason, .. } => {
                committed.clone_from(&working);
                if let Some(turn) = open.take() {
                    turns.push(ReplayTurn {
                        turn_id: turn.turn_id,
                        text: turn.text,
                        events: turn.events,
                        stop_reason,
                    });
                    checkpoints.extend(turn.checkpoint);
                }
            }
        }
    }

    if !parsed_any {
        return Err(unusable(if lines.read == 0 {
            "the file is empty".to_owned()
        } else {
            "none of its lines could be read; delete it".to_owned()
        }));
    }
    if header_damaged || created_ms.is_none() {
        warnings.insert(
            0,
            "the first line of the saved session (its header) is missing or damaged; the rest was read"
                .to_owned(),
        );
    }
    if let Some(turn) = open {
        let prompt = turn.text.split_whitespace().collect::<Vec<_>>().join(" ");
        warnings.push(format!(
            "the last turn (\"{}\") did not finish and was left out",
            shorten(&prompt, 60)
        ));
    }
    Ok(LoadedSession {
        id: id.to_owned(),
        created_ms: created_ms.unwrap_or(created_fallback),
        history: committed,
        turns,
        checkpoints,
        warnings,
        started_turns,
    })
}

/// What `list` needs of a line; every other field (messages, events) is skipped unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Peek {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    created_ms: Option<u64>,
    #[serde(default)]
    text: Option<String>,
}

/// A session's summary, read line by line without keeping the history.
fn summarise(id: &str, path: &Path) -> std::io::Result<SessionSummary> {
    let file = std::fs::File::open(path)?;
    let updated_ms = mtime_ms(&file.metadata()?);
    let mut created_ms = None;
    let mut title = None;
    let mut turns = 0;
    let mut lines = SavedLines::new(std::io::BufReader::new(file), MAX_LINE_BYTES);
    while let Some(line) = lines.next_line()? {
        let SavedLine::Bytes(line) = line else {
            continue;
        };
        // `append` writes compact JSON with the tag first, so most lines (the big messages
        // and events) are told apart by their start and never parsed.
        if let Some(rest) = line.strip_prefix(br#"{"type":""#) {
            let wanted = rest.starts_with(br#"meta""#)
                || rest.starts_with(br#"turnFinished""#)
                || (title.is_none() && rest.starts_with(br#"turnStarted""#));
            if !wanted {
                continue;
            }
        }
        let Ok(peek) = serde_json::from_slice::<Peek>(&line) else {
            continue;
        };
        match peek.kind.as_str() {
            "meta" => {
                created_ms = created_ms.or(peek.created_ms);
            }
            "turnStarted" if title.is_none() => {
                title = peek.text.as_deref().map(title_of);
            }
            "turnFinished" => turns += 1,
            _ => {}
        }
    }
    Ok(SessionSummary {
        id: id.to_owned(),
        title: title.unwrap_or_else(|| "(no prompt yet)".to_owned()),
        created_ms: created_ms.unwrap_or(updated_ms),
        updated_ms,
        turns,
        path: path.to_path_buf(),
    })
}

/// An open session file, appended to line by line.
#[derive(Debug)]
pub struct SessionLog {
    id: String,
    path: PathBuf,
    /// Opened in append mode, unbuffered: each record reaches the OS in one `write_all`.
    file: std::fs::File,
}

impl SessionLog {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where compression saves the tool outputs it takes out of the history.
    pub fn outputs_dir(&self) -> PathBuf {
        self.path.with_extension("outputs")
    }

    /// Where the images of the history are kept.
    pub fn images_dir(&self) -> PathBuf {
        self.path.with_extension("images")
    }

    /// Appends one record as one line and hands it to the OS before returning, so that a
    /// killed process keeps it.
    pub fn append(&mut self, record: &Record) -> Result<()> {
        let images = self.images_dir();
        let record = crate::images::externalize(record, &images).map_err(io_error(
            "could not save an image of the session in",
            &images,
        ))?;
        let mut line = serde_json::to_string(&*record).map_err(|error| StoreError::Io {
            action: "could not encode a record for",
            path: self.path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(io_error("could not write to", &self.path))
    }
}

/// Saved sessions (the `sessions` settings key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SessionSettings {
    /// Append every session to a JSON Lines file under the user's state directory.
    pub persist: bool,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings { persist: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::FileCheckpoint;

    fn store() -> (tempfile::TempDir, SessionStore) {
        let state = tempfile::tempdir().unwrap();
        let store = SessionStore::for_workspace(state.path(), Path::new("/projects/demo"));
        (state, store)
    }

    fn started(turn_id: &str, text: &str) -> Record {
        Record::TurnStarted {
            turn_id: turn_id.to_owned(),
            text: text.to_owned(),
            at_ms: 1,
        }
    }

    fn message(message: Message) -> Record {
        Record::Message { message }
    }

    fn event(turn_id: &str, text: &str) -> Record {
        Record::Event {
            turn_id: turn_id.to_owned(),
            event: Event::TextChunk {
                text: text.to_owned(),
            },
        }
    }

    fn checkpoint(turn_id: &str) -> TurnCheckpoint {
        TurnCheckpoint {
            turn_id: turn_id.to_owned(),
            files: vec![FileCheckpoint {
                path: PathBuf::from("src/lib.rs"),
                before: Some("old".to_owned()),
                after: "new".to_owned(),
                cannot_restore: None,
            }],
        }
    }

    fn finished(turn_id: &str) -> Record {
        Record::TurnFinished {
            turn_id: turn_id.to_owned(),
            stop_reason: StopReason::EndTurn,
            at_ms: 2,
        }
    }

    /// A whole turn: prompt, answer, and a follow-up question and answer.
    fn whole_turn(log: &mut SessionLog, turn_id: &str, prompt: &str) {
        for record in [
            started(turn_id, prompt),
            message(Message::user(prompt)),
            message(Message::assistant(format!("{turn_id} answer"))),
            event(turn_id, &format!("{turn_id} answer")),
            Record::Checkpoint(checkpoint(turn_id)),
            finished(turn_id),
        ] {
            log.append(&record).unwrap();
        }
    }

    fn append_raw(path: &Path, text: &str) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn round_trip_restores_history_turns_and_checkpoints() {
        let (_state, store) = store();
        let mut log = store
            .create("s1", Path::new("/projects/demo"), "model-x")
            .unwrap();
        for record in [
            started("t1", "fix the bug"),
            message(Message::user("fix the bug")),
            message(Message::assistant("looking")),
            message(Message::assistant("fixed")),
            event("t1", "fixed"),
            Record::Checkpoint(checkpoint("t1")),
            finished("t1"),
        ] {
            log.append(&record).unwrap();
        }
        drop(log);

        let (loaded, mut log) = store.open("s1").unwrap();
        assert_eq!(loaded.id, "s1");
        assert!(loaded.created_ms > 0);
        assert_eq!(loaded.warnings, Vec::<String>::new());
        assert_eq!(
            loaded.history,
            vec![
                Message::user("fix the bug"),
                Message::assistant("looking"),
                Message::assistant("fixed"),
            ]
        );
        assert_eq!(
            loaded.turns,
            vec![ReplayTurn {
                turn_id: "t1".to_owned(),
                text: "fix the bug".to_owned(),
                events: vec![Event::TextChunk {
                    text: "fixed".to_owned()
                }],
                stop_reason: StopReason::EndTurn,
            }]
        );
        assert_eq!(loaded.checkpoints, vec![checkpoint("t1")]);

        whole_turn(&mut log, "t2", "and the test");
        drop(log);
        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(loaded.warnings, Vec::<String>::new());
        assert_eq!(loaded.turns.len(), 2);
        assert_eq!(loaded.history.len(), 5);
        assert_eq!(loaded.checkpoints, vec![checkpoint("t1"), checkpoint("t2")]);
    }

    /// The review's finding: session files, which hold the conversation and every tool's
    /// output, were created readable by everyone (0644).
    #[cfg(unix)]
    #[test]
    fn session_files_are_readable_by_the_user_alone() {
        use std::os::unix::fs::PermissionsExt;
        let (_state, store) = store();
        let log = store.create("s1", Path::new("/w"), "m").unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&log.path), 0o600);
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(
            mode(store.dir().parent().unwrap()),
            0o700,
            "the sessions folder"
        );
        drop(log);
        std::fs::set_permissions(store.path_of("s1"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let (_, log) = store.open("s1").unwrap();
        assert_eq!(mode(&log.path), 0o600, "tightened on resume");
    }

    #[test]
    fn create_refuses_an_existing_session() {
        let (_state, store) = store();
        store.create("s1", Path::new("/w"), "m").unwrap();
        assert!(matches!(
            store.create("s1", Path::new("/w"), "m"),
            Err(StoreError::Io { .. })
        ));
    }

    #[test]
    fn turn_in_flight_is_left_out_with_a_warning() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        log.append(&started("t2", "second prompt\nwith detail"))
            .unwrap();
        log.append(&message(Message::user("second prompt")))
            .unwrap();
        log.append(&event("t2", "half")).unwrap();
        drop(log);

        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(
            loaded.warnings,
            vec![
                "the last turn (\"second prompt with detail\") did not finish and was left out"
                    .to_owned()
            ]
        );
        assert_eq!(
            loaded.history,
            vec![Message::user("first"), Message::assistant("t1 answer")]
        );
        assert_eq!(loaded.turns.len(), 1);
        assert_eq!(loaded.checkpoints, vec![checkpoint("t1")]);
    }

    #[test]
    fn a_turn_cut_short_before_a_resume_stays_left_out() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        log.append(&started("t2", "lost")).unwrap();
        log.append(&message(Message::user("lost"))).unwrap();
        drop(log);
        let (_, mut log) = store.open("s1").unwrap();
        whole_turn(&mut log, "t3", "third");
        drop(log);

        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(loaded.warnings, Vec::<String>::new());
        assert_eq!(
            loaded.history,
            vec![
                Message::user("first"),
                Message::assistant("t1 answer"),
                Message::user("third"),
                Message::assistant("t3 answer"),
            ]
        );
        let turn_ids: Vec<_> = loaded
            .turns
            .iter()
            .map(|turn| turn.turn_id.as_str())
            .collect();
        assert_eq!(turn_ids, ["t1", "t3"]);
    }

    #[test]
    fn cut_off_last_line_is_skipped_and_appends_start_on_a_fresh_line() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        let path = log.path().to_path_buf();
        drop(log);
        append_raw(&path, r#"{"type":"turnStarted","turnId":"t2","te"#);

        let (loaded, mut log) = store.open("s1").unwrap();
        assert_eq!(
            loaded.warnings,
            vec![
                "the last line was cut off (Tandem stopped while writing it); it was skipped"
                    .to_owned()
            ]
        );
        assert_eq!(loaded.turns.len(), 1);
        whole_turn(&mut log, "t2", "second");
        drop(log);

        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(
            loaded.warnings,
            vec!["line 8 of the saved session is damaged and was skipped".to_owned()]
        );
        let turn_ids: Vec<_> = loaded
            .turns
            .iter()
            .map(|turn| turn.turn_id.as_str())
            .collect();
        assert_eq!(turn_ids, ["t1", "t2"]);
        assert_eq!(loaded.history.len(), 4);
    }

    /// Regression (suspected in review): resuming read the whole file, and any line whole,
    /// however long. A line past the cap is now skipped without being held, and said to be.
    #[test]
    fn a_line_longer_than_the_cap_is_skipped_and_the_rest_loads() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        let path = log.path().to_path_buf();
        append_raw(&path, &format!("{}\n", "x".repeat(10_000)));
        whole_turn(&mut log, "t2", "second");
        drop(log);

        // Small pieces, so that the long line arrives over many reads.
        let file = std::fs::File::open(&path).unwrap();
        let mut lines = SavedLines::new(std::io::BufReader::with_capacity(64, file), 1024);
        let loaded = replay("s1", &path, &mut lines, 0).unwrap();
        assert_eq!(
            loaded.warnings,
            vec![
                "line 8 of the saved session is longer than 1024 bytes and was skipped".to_owned()
            ]
        );
        let turn_ids: Vec<_> = loaded
            .turns
            .iter()
            .map(|turn| turn.turn_id.as_str())
            .collect();
        assert_eq!(turn_ids, ["t1", "t2"]);
        assert!(!lines.ends_cut);
    }

    #[test]
    fn damaged_middle_line_is_skipped_and_later_turns_load() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        let path = log.path().to_path_buf();
        append_raw(&path, "{\"type\":\"event\",\"turnId\":\"t2\" garbage\n");
        whole_turn(&mut log, "t2", "second");
        drop(log);

        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(
            loaded.warnings,
            vec!["line 8 of the saved session is damaged and was skipped".to_owned()]
        );
        assert_eq!(loaded.turns.len(), 2);
        assert_eq!(loaded.history.len(), 4);
    }

    #[test]
    fn a_damaged_header_is_read_around_with_a_warning() {
        let (_state, store) = store();
        let path = store.path_of("s1");
        std::fs::create_dir_all(store.dir()).unwrap();
        std::fs::write(&path, "{\"type\":\"me\n").unwrap();
        let error = store.open("s1").unwrap_err();
        assert!(matches!(error, StoreError::Unusable { .. }), "{error}");

        for record in [started("t1", "hi"), finished("t1")] {
            append_raw(
                &path,
                &format!("{}\n", serde_json::to_string(&record).unwrap()),
            );
        }
        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(loaded.id, "s1");
        assert_eq!(loaded.turns.len(), 1);
        assert_eq!(
            loaded.warnings,
            vec![
                "the first line of the saved session (its header) is missing or damaged; the rest was read"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn an_empty_file_is_unusable() {
        let (_state, store) = store();
        std::fs::create_dir_all(store.dir()).unwrap();
        std::fs::write(store.path_of("s1"), "").unwrap();
        let error = store.open("s1").unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("cannot be used: the file is empty"),
            "{error}"
        );
    }

    #[test]
    fn history_record_replaces_the_history() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        for record in [
            started("t2", "second"),
            message(Message::user("second")),
            Record::History {
                messages: vec![Message::user("summary"), Message::user("second")],
            },
            message(Message::assistant("done")),
            finished("t2"),
        ] {
            log.append(&record).unwrap();
        }
        drop(log);
        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(
            loaded.history,
            vec![
                Message::user("summary"),
                Message::user("second"),
                Message::assistant("done"),
            ]
        );
    }

    #[test]
    fn appended_parts_join_the_last_saved_message() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        let reminder = Part::Text {
            text: "<system-reminder>\nplan\n</system-reminder>".to_owned(),
        };
        for record in [
            started("t1", "first"),
            message(Message::user("first")),
            Record::Appended {
                parts: vec![reminder.clone()],
            },
            message(Message::assistant("done")),
            finished("t1"),
        ] {
            log.append(&record).unwrap();
        }
        drop(log);
        let (loaded, _log) = store.open("s1").unwrap();
        let mut first = Message::user("first");
        first.parts.push(reminder);
        assert_eq!(loaded.history, vec![first, Message::assistant("done")]);
    }

    #[test]
    fn records_between_turns_apply_to_the_saved_history() {
        let (_state, store) = store();
        let mut log = store.create("s1", Path::new("/w"), "m").unwrap();
        whole_turn(&mut log, "t1", "first");
        log.append(&Record::History {
            messages: vec![Message::user("compressed")],
        })
        .unwrap();
        log.append(&message(Message::assistant("noted"))).unwrap();
        drop(log);
        let (loaded, _log) = store.open("s1").unwrap();
        assert_eq!(loaded.warnings, Vec::<String>::new());
        assert_eq!(
            loaded.history,
            vec![Message::user("compressed"), Message::assistant("noted")]
        );
    }

    #[test]
    fn newer_version_is_unusable() {
        let (_state, store) = store();
        std::fs::create_dir_all(store.dir()).unwrap();
        let meta = Record::Meta {
            version: FORMAT_VERSION + 1,
            id: "s1".to_owned(),
            workspace: PathBuf::from("/w"),
            created_ms: 5,
            model: "m".to_owned(),
        };
        std::fs::write(
            store.path_of("s1"),
            format!("{}\n", serde_json::to_string(&meta).unwrap()),
        )
        .unwrap();
        let error = store.open("s1").unwrap_err();
        assert!(matches!(error, StoreError::Unusable { .. }), "{error}");
        assert!(error.to_string().contains("newer Tandem"), "{error}");
    }

    #[test]
    fn open_of_a_missing_id_is_not_found() {
        let (_state, store) = store();
        assert!(matches!(store.open("nope"), Err(StoreError::NotFound(id)) if id == "nope"));
        assert!(matches!(store.delete("nope"), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn bad_ids_are_refused() {
        let (_state, store) = store();
        let long = "a".repeat(65);
        for id in ["../x", "", "a/b", "a.b", "a\\b", long.as_str()] {
            assert!(
                matches!(store.open(id), Err(StoreError::BadId(_))),
                "{id:?}"
            );
            assert!(
                matches!(store.delete(id), Err(StoreError::BadId(_))),
                "{id:?}"
            );
            assert!(
                matches!(
                    store.create(id, Path::new("/w"), "m"),
                    Err(StoreError::BadId(_))
                ),
                "{id:?}"
            );
        }
        assert!(check_id(&"a".repeat(64)).is_ok());
        assert!(check_id("20261123-231045-a1b2").is_ok());
    }

    #[test]
    fn list_orders_by_update_with_titles_and_turn_counts() {
        let (_state, store) = store();
        assert_eq!(store.list().unwrap(), Vec::new());

        let mut old = store.create("old", Path::new("/w"), "m").unwrap();
        whole_turn(&mut old, "t1", "\n  refactor the parser  \nplease");
        whole_turn(&mut old, "t2", "more");
        let mut new = store.create("new", Path::new("/w"), "m").unwrap();
        whole_turn(&mut new, "t1", &"x".repeat(100));
        let empty = store.create("empty", Path::new("/w"), "m").unwrap();
        let tie = store.create("tie", Path::new("/w"), "m").unwrap();
        std::fs::write(store.dir().join("notes.txt"), "not a session").unwrap();
        let at = |secs| UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let set_mtime = |log: &SessionLog, secs| {
            std::fs::File::options()
                .write(true)
                .open(log.path())
                .unwrap()
                .set_modified(at(secs))
                .unwrap();
        };
        set_mtime(&old, 1_000);
        set_mtime(&new, 3_000);
        set_mtime(&empty, 2_000);
        set_mtime(&tie, 2_000);

        let sessions = store.list().unwrap();
        let ids: Vec<_> = sessions.iter().map(|summary| summary.id.as_str()).collect();
        assert_eq!(ids, ["new", "tie", "empty", "old"]);
        assert_eq!(sessions[0].title, format!("{}…", "x".repeat(79)));
        assert_eq!(sessions[0].title.chars().count(), 80);
        assert_eq!(sessions[0].turns, 1);
        assert_eq!(sessions[0].updated_ms, 3_000_000);
        assert!(sessions[0].created_ms > 3_000_000);
        assert_eq!(sessions[0].path, new.path());
        assert_eq!(sessions[2].title, "(no prompt yet)");
        assert_eq!(sessions[2].turns, 0);
        assert_eq!(sessions[3].title, "refactor the parser");
        assert_eq!(sessions[3].turns, 2);
        assert_eq!(
            store.latest().unwrap().map(|latest| latest.id),
            Some("new".to_owned())
        );
    }

    #[test]
    fn delete_removes_the_file_and_its_outputs() {
        let (_state, store) = store();
        let log = store.create("s1", Path::new("/w"), "m").unwrap();
        let outputs = log.outputs_dir();
        std::fs::create_dir_all(&outputs).unwrap();
        std::fs::write(outputs.join("call-1.txt"), "big output").unwrap();
        let keep = store.create("s2", Path::new("/w"), "m").unwrap();
        drop(log);

        store.delete("s1").unwrap();
        assert!(!store.path_of("s1").exists());
        assert!(!outputs.exists());
        assert!(keep.path().exists());
        assert!(matches!(store.open("s1"), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn workspace_directories_are_stable_and_distinct() {
        let state = Path::new("state");
        let a = SessionStore::for_workspace(state, Path::new("/home/me/My Project"));
        let again = SessionStore::for_workspace(state, Path::new("/home/me/My Project/"));
        let other = SessionStore::for_workspace(state, Path::new("/tmp/My Project"));
        assert_eq!(a.dir(), again.dir());
        assert_ne!(a.dir(), other.dir());
        assert_eq!(a.dir().parent(), Some(Path::new("state/sessions")));
        let name = a.dir().file_name().unwrap().to_str().unwrap();
        let (prefix, hash) = name.rsplit_once('-').unwrap();
        assert_eq!(prefix, "My_Project");
        assert_eq!(hash.len(), 16);
        assert!(hash.bytes().all(|byte| byte.is_ascii_hexdigit()));
        let root = SessionStore::for_workspace(state, Path::new("/"));
        assert!(root
            .dir()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("workspace-"));
        // Pinned so that a change to the hash, which would orphan saved sessions, is noticed.
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn ids_have_the_format_and_differ() {
        let ids: Vec<String> = (0..100).map(|_| new_session_id()).collect();
        for id in &ids {
            let bytes = id.as_bytes();
            assert_eq!(bytes.len(), "20261123-231045-a1b2".len(), "{id}");
            assert!(check_id(id).is_ok(), "{id}");
            assert_eq!((bytes[8], bytes[15]), (b'-', b'-'), "{id}");
            assert!(
                bytes[..8]
                    .iter()
                    .chain(&bytes[9..15])
                    .all(u8::is_ascii_digit),
                "{id}"
            );
            assert!(
                bytes[16..]
                    .iter()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte)),
                "{id}"
            );
            assert!(id.starts_with("20"), "{id}");
        }
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
    }
}
