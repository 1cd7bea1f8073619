//! The conversation in Claude Code's transcript shape, for hooks that read `transcript_path`
//! (the ralph-wiggum `Stop` hook takes the last `"role":"assistant"` line's text blocks): one
//! JSON object a line, `type` `user` or `assistant`, the message in Anthropic's shape under
//! `message` (text, `thinking` and `tool_use` blocks; tool results as `tool_result` blocks of
//! a user message), tools under Claude Code's names with its input shapes, each line chained
//! to the one before by `uuid` and `parentUuid`.
//!
//! `Transcript::sync` brings the file up to date with the history before hooks run. Histories
//! grow at the end, and their last message may still grow (a prompt joining the user's
//! message, arguments a hook rewrote), so it writes only what is new, and the last line again
//! when that message changed; a history rebuilt from the start (compression, `/clear`) is
//! written afresh. The file is private (0600 in a 0700 folder), written without following
//! links, somewhere a sandboxed hook can read (the session passes `.tandem/tmp/transcripts/`).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use tandem_providers::{Message, Part, Role};
use tandem_sandbox::files::{self, Open};

use super::dialect::Dialect;

/// What a transcript file holds so far, so the next sync writes only what changed.
#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    session_id: String,
    cwd: PathBuf,
    /// Messages written.
    written: usize,
    /// The hash of the first line and of the last one, and where the last one starts.
    first: u64,
    last: u64,
    last_offset: u64,
    /// Bytes in the file.
    length: u64,
}

impl Transcript {
    pub fn new(path: PathBuf, session_id: &str, cwd: &Path) -> Transcript {
        Transcript {
            path,
            session_id: session_id.to_owned(),
            cwd: cwd.to_path_buf(),
            written: 0,
            first: 0,
            last: 0,
            last_offset: 0,
            length: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes what `history` holds that the file does not yet; `model` is the model's name
    /// for assistant lines.
    pub fn sync(&mut self, history: &[Message], model: &str) -> std::io::Result<()> {
        let (session_id, cwd) = (self.session_id.clone(), self.cwd.clone());
        let line = |index: usize| line(&session_id, &cwd, history, index, model);
        let rebuilt = self.written == 0
            || history.len() < self.written
            || history.first().map(|_| hash(&line(0))) != Some(self.first);
        if self.written == 0 {
            self.prepare_folder()?;
        }
        let (mut file, from) = if rebuilt {
            let file = files::open(&self.path, Open::Truncate, 0o600, 0o700)?;
            self.length = 0;
            (file, 0)
        } else {
            let last = self.written - 1;
            let mut file = files::open(&self.path, Open::Append, 0o600, 0o700)?;
            if hash(&line(last)) == self.last {
                (file, self.written)
            } else {
                file.set_len(self.last_offset)?;
                file.seek(std::io::SeekFrom::End(0))?;
                self.length = self.last_offset;
                (file, last)
            }
        };
        let mut text = String::new();
        for index in from..history.len() {
            let line = line(index);
            if index == 0 {
                self.first = hash(&line);
            }
            if index + 1 == history.len() {
                self.last = hash(&line);
                self.last_offset = self.length + text.len() as u64;
            }
            text.push_str(&line);
            text.push('\n');
        }
        file.write_all(text.as_bytes())?;
        self.length += text.len() as u64;
        self.written = history.len();
        Ok(())
    }

    /// The transcript's folder, private, with a `.gitignore` of `*` so that transcripts never
    /// show up as changes of the workspace.
    fn prepare_folder(&self) -> std::io::Result<()> {
        let Some(dir) = self.path.parent() else {
            return Ok(());
        };
        files::create_private_subdir(dir)?;
        match files::open(&dir.join(".gitignore"), Open::CreateNew, 0o600, 0o700) {
            Ok(mut gitignore) => gitignore.write_all(b"*\n"),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// Message `index` of `history` as a transcript line of session `session_id`.
fn line(session_id: &str, cwd: &Path, history: &[Message], index: usize, model: &str) -> String {
    let message = &history[index];
    let parent = index
        .checked_sub(1)
        .map_or(Value::Null, |parent| json!(uuid(session_id, parent)));
    let uuid = uuid(session_id, index);
    let (kind, body) = match message.role {
        Role::Assistant => ("assistant", assistant(message, model, &uuid, cwd)),
        Role::User => ("user", user(message)),
    };
    let line = json!({
        "parentUuid": parent,
        "isSidechain": false,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": concat!("tandem ", env!("CARGO_PKG_VERSION")),
        "type": kind,
        "message": body,
        "uuid": uuid,
        "timestamp": crate::date::now_rfc3339(),
    });
    line.to_string()
}

/// A UUID-shaped id for message `index`, the same for the same session and place.
fn uuid(session_id: &str, index: usize) -> String {
    let mut high = DefaultHasher::new();
    (session_id, index, "high").hash(&mut high);
    let mut low = DefaultHasher::new();
    (session_id, index, "low").hash(&mut low);
    let (high, low) = (high.finish(), low.finish());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xfff,
        0x8000 | (low >> 48) & 0x3fff,
        low & 0xffff_ffff_ffff
    )
}

fn hash(line: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    // The timestamp changes each time a line is made; what the line says is the rest.
    let said = line
        .rfind(",\"timestamp\":")
        .map_or(line, |end| &line[..end]);
    said.hash(&mut hasher);
    hasher.finish()
}

/// A user message: its text alone as a string (as Claude Code writes a typed prompt), else
/// its blocks.
fn user(message: &Message) -> Value {
    let only_text = message
        .parts
        .iter()
        .all(|part| matches!(part, Part::Text { .. }));
    if only_text {
        let text: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        return json!({"role": "user", "content": text.join("\n\n")});
    }
    let blocks: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::ToolResult(result) => Some(json!({
                "tool_use_id": result.call_id,
                "type": "tool_result",
                "content": result.content,
                "is_error": result.is_error,
            })),
            Part::Image(image) => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": image.media_type, "data": image.data.as_str()},
            })),
            _ => None,
        })
        .collect();
    json!({"role": "user", "content": blocks})
}

/// An assistant message in Anthropic's shape, its tool calls under Claude Code's names.
fn assistant(message: &Message, model: &str, uuid: &str, cwd: &Path) -> Value {
    let mut calls = false;
    let content: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::Thought { text, signature } => Some(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature.clone().unwrap_or_default(),
            })),
            Part::RedactedThought { data } => {
                Some(json!({"type": "redacted_thinking", "data": data}))
            }
            Part::ToolCall(call) => {
                calls = true;
                Some(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": Dialect::Claude.tool_name(&call.name),
                    "input": Dialect::Claude.tool_input(&call.name, &call.arguments, cwd),
                }))
            }
            Part::ToolResult(_) | Part::Image(_) => None,
        })
        .collect();
    let mut body = Map::new();
    body.insert("id".into(), json!(format!("msg_{}", uuid.replace('-', ""))));
    body.insert("type".into(), json!("message"));
    body.insert("role".into(), json!("assistant"));
    body.insert("model".into(), json!(model));
    body.insert("content".into(), Value::Array(content));
    body.insert(
        "stop_reason".into(),
        json!(if calls { "tool_use" } else { "end_turn" }),
    );
    body.insert("stop_sequence".into(), Value::Null);
    body.insert(
        "usage".into(),
        json!({"input_tokens": 0, "output_tokens": 0}),
    );
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use tandem_providers::{ToolCall, ToolResult};

    use super::*;

    fn text(role: Role, text: &str) -> Message {
        Message {
            role,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn the_history_reads_as_claude_codes_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tmp/transcripts/s1.jsonl");
        let mut transcript = Transcript::new(path.clone(), "s1", Path::new("/home/ada/shop"));
        let mut history = vec![
            text(Role::User, "Fix the build"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Text {
                        text: "Let me look.".into(),
                    },
                    Part::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "shell".into(),
                        arguments: json!({"command": "cargo build"}),
                        signature: None,
                    }),
                ],
            },
            Message {
                role: Role::User,
                parts: vec![Part::ToolResult(ToolResult {
                    call_id: "call_1".into(),
                    name: "shell".into(),
                    content: "ok".into(),
                    is_error: false,
                })],
            },
        ];
        transcript.sync(&history, "claude-x").unwrap();
        let written = lines(&path);
        assert_eq!(written.len(), 3);
        assert_eq!(written[0]["type"], "user");
        assert_eq!(written[0]["message"]["content"], "Fix the build");
        assert_eq!(written[0]["parentUuid"], Value::Null);
        assert_eq!(written[1]["parentUuid"], written[0]["uuid"]);
        assert_eq!(
            written[1]["message"]["content"][1],
            json!({"type": "tool_use", "id": "call_1", "name": "Bash",
                   "input": {"command": "cargo build"}})
        );
        assert_eq!(written[2]["message"]["content"][0]["type"], "tool_result");
        // The line a `grep '"role":"assistant"'` finds is the assistant's.
        let raw = std::fs::read_to_string(&path).unwrap();
        assert_eq!(raw.matches("\"role\":\"assistant\"").count(), 1);
        assert_eq!(tandem_sandbox::files::mode(&path), 0o600);
        let ignore = path.parent().unwrap().join(".gitignore");
        assert_eq!(std::fs::read_to_string(ignore).unwrap(), "*\n");

        // The last message grows (a prompt joins it), then a new one comes: the file follows.
        history.push(text(Role::Assistant, "Fixed."));
        transcript.sync(&history, "claude-x").unwrap();
        history.last_mut().unwrap().parts.push(Part::Text {
            text: "All green.".into(),
        });
        transcript.sync(&history, "claude-x").unwrap();
        let written = lines(&path);
        assert_eq!(written.len(), 4, "{written:#?}");
        assert_eq!(written[3]["message"]["content"][1]["text"], "All green.");

        // A history rebuilt from the start is written afresh.
        let compressed = vec![text(Role::User, "<state_snapshot>…</state_snapshot>")];
        transcript.sync(&compressed, "claude-x").unwrap();
        let written = lines(&path);
        assert_eq!(written.len(), 1);
        assert_eq!(
            written[0]["message"]["content"],
            "<state_snapshot>…</state_snapshot>"
        );
    }
}
