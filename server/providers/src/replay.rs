//! The replay provider and the recorder. A script is a JSON Lines file with one model response
//! per line; the replay backend plays one line per attempt, so injected errors go through the
//! same retry policy as real ones. The recorder wraps any backend and appends what each attempt
//! produced in the same format, so a real session can be replayed without network. A recording
//! holds what the model said (the conversation), so it is the user's alone: `0600`, its new
//! folders `0700`, and an existing file made so when recording appends to it.
//! The format is documented in `docs/replay.md`.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ProviderError, ResponseLimit, Result};
use crate::model::{ChatRequest, FinishReason, StreamEvent, ToolCall, Usage};
use crate::retry::{Backend, Progress};

/// One line of a script: what one attempt produces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ScriptLine {
    /// Exact events, played first (what the recorder writes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<StreamEvent>,
    /// Thought text: one string, or a list of chunks streamed one by one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<Chunks>,
    /// Answer text: one string or a list of chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<Chunks>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Defaults to `toolCalls` when the line has tool calls, else `stop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// A pause before each event, to let a test or a demo act while the response streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// The attempt fails with this error after its events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptError>,
    /// The attempt sends its events and then nothing, until it is cancelled or times out
    /// (what the recorder writes for an attempt that was abandoned).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hang: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Chunks {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Defaults to `call_<line>_<index>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptError {
    /// One of `ProviderError::kind()`'s names.
    pub kind: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// For `bad_request` and `server`; defaults to 400 and 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl ScriptError {
    fn from_error(error: &ProviderError) -> Self {
        let status = match error {
            ProviderError::BadRequest { status, .. } | ProviderError::Server { status, .. } => {
                Some(*status)
            }
            _ => None,
        };
        let message = match error {
            ProviderError::IdleTimeout { idle } => idle.as_millis().to_string(),
            ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Bytes(bytes),
            } => format!("{bytes} bytes"),
            ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Time(time),
            } => format!("{} ms", time.as_millis()),
            _ => error
                .clone()
                .message_mut()
                .map(std::mem::take)
                .unwrap_or_default(),
        };
        ScriptError {
            kind: error.kind().to_owned(),
            message,
            retry_after_ms: error.retry_after().map(|delay| delay.as_millis() as u64),
            status,
        }
    }

    fn to_error(&self) -> std::result::Result<ProviderError, String> {
        let message = self.message.clone();
        let retry_after = self.retry_after_ms.map(Duration::from_millis);
        Ok(match self.kind.as_str() {
            "authentication" => ProviderError::Authentication { message },
            "rate_limited" => ProviderError::RateLimited {
                retry_after,
                message,
            },
            "overloaded" => ProviderError::Overloaded {
                retry_after,
                message,
            },
            "context_window_exceeded" => ProviderError::ContextWindowExceeded { message },
            "bad_request" => ProviderError::BadRequest {
                status: self.status.unwrap_or(400),
                message,
            },
            "server" => ProviderError::Server {
                status: self.status.unwrap_or(500),
                message,
            },
            "network" => ProviderError::Network { message },
            "idle_timeout" => ProviderError::IdleTimeout {
                idle: Duration::from_millis(message.parse().unwrap_or(0)),
            },
            "invalid_stream" => ProviderError::InvalidStream { message },
            "truncated_stream" => ProviderError::TruncatedStream { message },
            "response_limit_exceeded" => {
                let limit = match message.split_once(' ') {
                    Some((bytes, "bytes")) => bytes.parse().ok().map(ResponseLimit::Bytes),
                    Some((millis, "ms")) => millis
                        .parse()
                        .ok()
                        .map(|millis| ResponseLimit::Time(Duration::from_millis(millis))),
                    _ => None,
                };
                let Some(limit) = limit else {
                    return Err(format!(
                        "a `response_limit_exceeded` error's message is the cap, `<n> bytes` or \
                         `<n> ms`, not `{message}`"
                    ));
                };
                ProviderError::ResponseLimitExceeded { limit }
            }
            "cancelled" => ProviderError::Cancelled,
            "config" => ProviderError::Config { message },
            "not_set_up" => ProviderError::NotSetUp { message },
            other => return Err(format!("unknown error kind `{other}`")),
        })
    }
}

impl ScriptLine {
    /// The events this line plays, and the error it ends with (if any).
    fn play(&self, line_number: usize) -> Vec<StreamEvent> {
        let mut events = self.events.clone();
        let chunks = |chunks: &Option<Chunks>| match chunks {
            None => Vec::new(),
            Some(Chunks::One(text)) => vec![text.clone()],
            Some(Chunks::Many(texts)) => texts.clone(),
        };
        events.extend(
            chunks(&self.thought)
                .into_iter()
                .map(|text| StreamEvent::ThoughtDelta { text }),
        );
        events.extend(
            chunks(&self.text)
                .into_iter()
                .map(|text| StreamEvent::TextDelta { text }),
        );
        for (index, call) in self.tool_calls.iter().enumerate() {
            events.push(StreamEvent::ToolCall(ToolCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{line_number}_{index}")),
                name: call.name.clone(),
                arguments: if call.arguments.is_null() {
                    Value::Object(Default::default())
                } else {
                    call.arguments.clone()
                },
                signature: None,
            }));
        }
        let finished = events
            .iter()
            .any(|event| matches!(event, StreamEvent::Finished { .. }));
        if self.error.is_none() && !self.hang && !finished {
            if let Some(usage) = self.usage {
                events.push(StreamEvent::Usage(usage));
            }
            let reason = self
                .finish_reason
                .clone()
                .unwrap_or(if self.tool_calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                });
            events.push(StreamEvent::Finished { reason });
        }
        events
    }
}

/// A parsed script, checked line by line so that a mistake is reported with its line number
/// when the model is set up, not in the middle of a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    lines: Vec<ScriptLine>,
}

impl Script {
    pub fn parse(text: &str, origin: &str) -> Result<Script> {
        let mut lines = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with("//") {
                continue;
            }
            let invalid = |why: String| ProviderError::Config {
                message: format!("{origin}:{line_number}: {why}"),
            };
            let parsed: ScriptLine =
                serde_json::from_str(trimmed).map_err(|error| invalid(error.to_string()))?;
            if let Some(error) = &parsed.error {
                error.to_error().map_err(invalid)?;
            }
            lines.push(parsed);
        }
        Ok(Script { lines })
    }

    pub fn load(path: &Path) -> Result<Script> {
        let text = std::fs::read_to_string(path).map_err(|error| ProviderError::Config {
            message: format!("cannot read replay script {}: {error}", path.display()),
        })?;
        Script::parse(&text, &path.display().to_string())
    }
}

pub(crate) struct ReplayBackend {
    origin: String,
    total: usize,
    remaining: Mutex<VecDeque<(usize, ScriptLine)>>,
}

impl ReplayBackend {
    pub(crate) fn new(script: Script, origin: String) -> Self {
        let total = script.lines.len();
        ReplayBackend {
            origin,
            total,
            remaining: Mutex::new(
                script
                    .lines
                    .into_iter()
                    .enumerate()
                    .map(|(i, line)| (i + 1, line))
                    .collect(),
            ),
        }
    }
}

impl Backend for ReplayBackend {
    fn attempt(&self, _request: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
        let next = self
            .remaining
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let Some((line_number, line)) = next else {
            let message = format!(
                "replay script {} has no more responses (it had {})",
                self.origin, self.total
            );
            return Box::pin(futures::stream::iter([Err(ProviderError::Config {
                message,
            })]));
        };
        Box::pin(async_stream::stream! {
            let events = line.play(line_number);
            let delay = line.delay_ms.map(Duration::from_millis);
            for event in events {
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                yield Ok(Progress::Event(event));
            }
            if let Some(error) = &line.error {
                yield Err(error.to_error().unwrap_or_else(|message| ProviderError::Config { message }));
            } else if line.hang {
                futures::future::pending::<()>().await;
            }
        })
    }
}

/// Appends every attempt of the wrapped backend to a file, as script lines.
pub(crate) struct Recorder {
    inner: Arc<dyn Backend>,
    file: Arc<Mutex<File>>,
    path: PathBuf,
}

impl Recorder {
    pub(crate) fn new(inner: Arc<dyn Backend>, path: &Path) -> Result<Self> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            let mut folders = std::fs::DirBuilder::new();
            folders.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut folders, 0o700);
            folders
                .create(parent)
                .map_err(|error| ProviderError::Config {
                    message: format!("cannot create {}: {error}", parent.display()),
                })?;
        }
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let cannot_open = |error: std::io::Error| ProviderError::Config {
            message: format!("cannot open {} for recording: {error}", path.display()),
        };
        let file = options.open(path).map_err(cannot_open)?;
        make_private(&file).map_err(cannot_open)?;
        Ok(Recorder {
            inner,
            file: Arc::new(Mutex::new(file)),
            path: path.to_owned(),
        })
    }
}

/// Drops the group's and others' permissions of a recording an earlier version (or another
/// program) left readable; what is not a regular file (`/dev/null`) is left as it is. The
/// agent's `files::make_private` does the same for its files; this crate cannot use it.
fn make_private(file: &File) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = file.metadata()?;
        let mode = metadata.permissions().mode();
        if metadata.is_file() && mode & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Writes the attempt's line when the attempt ends, however it ends (dropped included).
struct Recording {
    file: Arc<Mutex<File>>,
    path: PathBuf,
    line: ScriptLine,
    written: bool,
}

impl Recording {
    fn write(&mut self) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let Ok(mut text) = serde_json::to_string(&self.line) else {
            return;
        };
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = file.write_all(text.as_bytes()) {
            tracing::warn!("cannot record to {}: {error}", self.path.display());
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.written {
            self.line.hang = true;
            self.write();
        }
    }
}

impl Backend for Recorder {
    fn attempt(&self, request: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
        let mut inner = self.inner.attempt(request);
        let mut recording = Recording {
            file: Arc::clone(&self.file),
            path: self.path.clone(),
            line: ScriptLine::default(),
            written: false,
        };
        Box::pin(async_stream::stream! {
            while let Some(item) = inner.next().await {
                match &item {
                    Ok(Progress::Received(_)) => {}
                    Ok(Progress::Event(event)) => {
                        recording.line.events.push(event.clone());
                        if matches!(event, StreamEvent::Finished { .. }) {
                            recording.write();
                        }
                    }
                    Err(error) => {
                        recording.line.error = Some(ScriptError::from_error(error));
                        recording.write();
                    }
                }
                yield item;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play(script: &str) -> Vec<Vec<Result<StreamEvent>>> {
        let script = Script::parse(script, "test.jsonl").unwrap();
        let count = script.lines.len() + 1;
        let backend = ReplayBackend::new(script, "test.jsonl".into());
        (0..count)
            .map(|_| {
                let attempt = backend.attempt(Arc::new(ChatRequest::default()));
                futures::executor::block_on(attempt.collect::<Vec<_>>())
                    .into_iter()
                    .map(|item| match item {
                        Ok(Progress::Event(event)) => Ok(event),
                        Ok(Progress::Received(bytes)) => panic!("replay received {bytes} bytes"),
                        Err(error) => Err(error),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn short_form_lines_become_events() {
        let attempts = play(concat!(
            r#"{"thought": "hmm", "text": ["Hel", "lo"], "toolCalls": [{"name": "read_file", "arguments": {"path": "a.rs"}}], "usage": {"inputTokens": 10, "outputTokens": 2}}"#,
            "\n// a comment line\n\n",
            r#"{"text": "Done."}"#,
        ));
        let rendered: Vec<String> = attempts
            .iter()
            .flatten()
            .map(|event| match event {
                Ok(event) => serde_json::to_string(event).unwrap(),
                Err(error) => format!("error {}: {error}", error.kind()),
            })
            .collect();
        expect_test::expect![[r#"
            [
                "{\"type\":\"thoughtDelta\",\"text\":\"hmm\"}",
                "{\"type\":\"textDelta\",\"text\":\"Hel\"}",
                "{\"type\":\"textDelta\",\"text\":\"lo\"}",
                "{\"type\":\"toolCall\",\"id\":\"call_1_0\",\"name\":\"read_file\",\"arguments\":{\"path\":\"a.rs\"}}",
                "{\"type\":\"usage\",\"inputTokens\":10,\"outputTokens\":2,\"cachedInputTokens\":0,\"cacheWriteTokens\":0,\"thoughtTokens\":0}",
                "{\"type\":\"finished\",\"reason\":\"toolCalls\"}",
                "{\"type\":\"textDelta\",\"text\":\"Done.\"}",
                "{\"type\":\"finished\",\"reason\":\"stop\"}",
                "error config: configuration error: replay script test.jsonl has no more responses (it had 2)",
            ]
        "#]]
        .assert_debug_eq(&rendered);
    }

    /// Issue 35, finding 5: a recording holds the conversation; it was created readable by
    /// everyone. New recordings and their new folders are private, and an existing recording
    /// is tightened when recording appends to it.
    #[cfg(unix)]
    #[test]
    fn recordings_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let temp = tempfile::tempdir().unwrap();
        let inner: Arc<dyn Backend> = Arc::new(ReplayBackend::new(
            Script::parse(r#"{"text": "the secret is hunter2"}"#, "test.jsonl").unwrap(),
            "test.jsonl".into(),
        ));
        let path = temp.path().join("recordings/session.jsonl");
        let recorder = Recorder::new(Arc::clone(&inner), &path).unwrap();
        futures::executor::block_on(
            recorder
                .attempt(Arc::new(ChatRequest::default()))
                .collect::<Vec<_>>(),
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("hunter2"));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&temp.path().join("recordings")), 0o700);

        let earlier = temp.path().join("earlier.jsonl");
        std::fs::write(&earlier, "").unwrap();
        std::fs::set_permissions(&earlier, std::fs::Permissions::from_mode(0o644)).unwrap();
        Recorder::new(inner, &earlier).unwrap();
        assert_eq!(mode(&earlier), 0o600);
    }

    #[test]
    fn an_error_line_fails_the_attempt_after_its_events() {
        let attempts = play(
            r#"{"text": "par", "error": {"kind": "rate_limited", "message": "slow down", "retryAfterMs": 20}}"#,
        );
        assert_eq!(
            attempts[0],
            vec![
                Ok(StreamEvent::TextDelta { text: "par".into() }),
                Err(ProviderError::RateLimited {
                    retry_after: Some(Duration::from_millis(20)),
                    message: "slow down".into()
                }),
            ]
        );
    }

    #[test]
    fn mistakes_are_reported_with_their_line() {
        let cases = [
            (
                "{\"text\": \"ok\"}\n{\"txet\": \"typo\"}",
                "test.jsonl:2: unknown field `txet`",
            ),
            (
                "{\"error\": {\"kind\": \"oops\"}}",
                "test.jsonl:1: unknown error kind `oops`",
            ),
            ("not json", "test.jsonl:1: expected ident"),
        ];
        for (script, expected) in cases {
            let error = Script::parse(script, "test.jsonl").unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn every_error_kind_round_trips() {
        let errors = [
            ProviderError::Authentication {
                message: "a".into(),
            },
            ProviderError::RateLimited {
                retry_after: Some(Duration::from_millis(5)),
                message: "b".into(),
            },
            ProviderError::Overloaded {
                retry_after: None,
                message: "c".into(),
            },
            ProviderError::ContextWindowExceeded {
                message: "d".into(),
            },
            ProviderError::BadRequest {
                status: 422,
                message: "e".into(),
            },
            ProviderError::Server {
                status: 502,
                message: "f".into(),
            },
            ProviderError::Network {
                message: "g".into(),
            },
            ProviderError::IdleTimeout {
                idle: Duration::from_millis(1500),
            },
            ProviderError::InvalidStream {
                message: "h".into(),
            },
            ProviderError::TruncatedStream {
                message: "i".into(),
            },
            ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Bytes(1 << 24),
            },
            ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Time(Duration::from_millis(600_500)),
            },
            ProviderError::Cancelled,
            ProviderError::Config {
                message: "j".into(),
            },
            ProviderError::NotSetUp {
                message: "k".into(),
            },
        ];
        for error in errors {
            assert_eq!(ScriptError::from_error(&error).to_error(), Ok(error));
        }
    }
}
