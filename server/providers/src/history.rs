//! Makes a history valid for the provider a request goes to, whichever providers wrote it. A
//! session can change models between turns (the editor's settings, a resumed session, ACP's
//! model selector), and its history then holds what other providers produced. `Wire::request`
//! runs every request's messages through `prepare` before the wire format sees them, which
//! fixes two things:
//!
//! - **Opaque tokens go back only to their issuer.** A thought's signature (Anthropic
//!   `signature`, Gemini `thoughtSignature`), Anthropic's `redacted_thinking` and Gemini's
//!   signature on a function call are verified by the provider that issued them and refused by
//!   any other (`Invalid signature in thinking block`, `Corrupted thought signature`). Anthropic
//!   binds them to the model, and another server speaking the same wire format cannot verify
//!   them, so the issuer is the wire format, the base URL and the model together. A foreign
//!   thought keeps its text and loses its signature (a wire format that cannot send an unsigned
//!   thought drops it, as it always did); foreign redacted thinking is dropped; a foreign call
//!   is sent without its signature. Each wire format is only checked for the tokens it sends:
//!   Anthropic sends thought signatures and redacted thinking, Gemini thought and call
//!   signatures, OpenAI none.
//! - **Tool-call ids are unique and valid.** OpenAI and Anthropic refuse a request in which two
//!   calls share an id. Gemini gives no ids, so Tandem numbers its calls per response (`call_0`,
//!   `call_1`, …: they repeat from turn to turn), and so do OpenAI-compatible servers that give
//!   none. An id the wire format accepts that no earlier call of the request used is sent as it
//!   is; any other is re-issued as its sanitised self plus `_N` (the smallest `N` not used yet),
//!   and the results answering that call, in the next message, get the same id (when one message
//!   repeats an id, its results are matched to the calls in order). Each decision depends only on
//!   what comes before it, so a request's history is sent as the previous request sent it, byte
//!   for byte (prompt caches keep working), and the same history always gets the same ids.
//!   Anthropic accepts `^[a-zA-Z0-9_-]{1,64}$`, OpenAI any id of 1 to 40 bytes; a re-issued id
//!   fits both. Gemini sends no ids (it pairs calls and results by name and order), so its
//!   requests are left as they are.
//!
//! Who issued a token is recorded beside the history, not in it: every HTTP response feeds
//! `SIGNATURES` (a hash of issuer and token for each token received, in this process's memory).
//! `Message` and `ToolCall` are plain structs that the agent and the tests build field by
//! field, so a new field would be a breaking change for all of them; and the saved format stays
//! exactly as it was, readable by older and newer builds alike.
//!
//! A token with no recorded issuer is treated as foreign: one from a session saved by an
//! earlier process, from a replay script, or one forgotten after `REMEMBERED` newer tokens. The
//! reason is the cost of each mistake: a foreign token makes the provider refuse the whole
//! request, and the session cannot go on, while a dropped one only costs the provider the
//! reasoning of an earlier turn. Both APIs take a history without those tokens once a new user
//! turn has begun (Anthropic needs the thinking blocks of the assistant message that a tool
//! result answers; Gemini 3 validates the signatures of the current turn's calls only), and a
//! switch or a resume always happens between turns; within a turn, every token came from the
//! model answering it and is recorded.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::config::ModelConfig;
use crate::model::{Message, Part, Role, StreamEvent};
use crate::wire::Wire;

/// Who issued a token: a hash of the wire format, base URL and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issuer(u64);

impl Issuer {
    pub(crate) fn of(wire: Wire, config: &ModelConfig) -> Issuer {
        let mut hasher = DefaultHasher::new();
        (wire, config.base_url.trim_end_matches('/'), &config.model).hash(&mut hasher);
        Issuer(hasher.finish())
    }

    /// The key under which `token` from this issuer is remembered. `DefaultHasher::new` hashes
    /// the same way every time within a process, which is as long as the record lasts.
    fn key(self, token: &str) -> u64 {
        let mut hasher = DefaultHasher::new();
        (self.0, token).hash(&mut hasher);
        hasher.finish()
    }
}

/// How many tokens are remembered (a `u64` each, kept twice: under 2 MiB in all). The oldest
/// are forgotten first, and a forgotten token is only dropped from requests, which every
/// provider accepts between turns; a turn's own tokens are far fewer than this.
const REMEMBERED: usize = 1 << 16;

/// The tokens received in this process, by issuer.
#[derive(Debug, Default)]
pub(crate) struct Signatures {
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    keys: HashSet<u64>,
    /// `keys` in the order they arrived, to forget the oldest.
    order: VecDeque<u64>,
}

/// Every token received over HTTP in this process.
pub(crate) static SIGNATURES: LazyLock<Signatures> = LazyLock::new(Signatures::default);

impl Signatures {
    /// Remembers the token `event` carries, if any, as issued by `issuer`.
    pub(crate) fn record(&self, issuer: Issuer, event: &StreamEvent) {
        let token = match event {
            StreamEvent::ThoughtSignature { signature } => signature,
            StreamEvent::RedactedThought { data } => data,
            StreamEvent::ToolCall(call) => match &call.signature {
                Some(signature) => signature,
                None => return,
            },
            StreamEvent::TextDelta { .. }
            | StreamEvent::ThoughtDelta { .. }
            | StreamEvent::Usage(_)
            | StreamEvent::Finished { .. }
            | StreamEvent::Retrying { .. } => return,
        };
        let key = issuer.key(token);
        let mut seen = self.lock();
        if seen.keys.insert(key) {
            seen.order.push_back(key);
            if seen.order.len() > REMEMBERED {
                if let Some(oldest) = seen.order.pop_front() {
                    seen.keys.remove(&oldest);
                }
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        // The set stays consistent whatever panicked while holding it.
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The tool-call ids a wire format accepts.
#[derive(Debug, Clone, Copy)]
enum IdRule {
    /// 1 to 40 bytes, anything (OpenAI refuses longer ids; its copies take anything).
    OpenAi,
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    Anthropic,
}

impl IdRule {
    fn accepts(self, id: &str) -> bool {
        match self {
            IdRule::OpenAi => (1..=40).contains(&id.len()),
            IdRule::Anthropic => (1..=64).contains(&id.len()) && id.bytes().all(is_id_byte),
        }
    }
}

fn is_id_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// The ids a request has sent so far, and what the latest assistant message's calls became.
/// Ids sent unchanged are borrowed from the history: a request that changes none allocates none.
struct Ids<'a> {
    rule: IdRule,
    used: HashSet<Cow<'a, str>>,
    /// The latest assistant message's calls: the id each was made with, the id sent for it, and
    /// whether a result has answered it yet.
    open: Vec<(&'a str, Cow<'a, str>, bool)>,
}

impl<'a> Ids<'a> {
    fn new(rule: IdRule) -> Ids<'a> {
        Ids {
            rule,
            used: HashSet::new(),
            open: Vec::new(),
        }
    }

    /// The id to send for a call made with `id`.
    fn call(&mut self, id: &'a str) -> Cow<'a, str> {
        let sent = if self.rule.accepts(id) && !self.used.contains(id) {
            Cow::Borrowed(id)
        } else {
            // Leaves room for `_` and a number within the 40 bytes OpenAI allows.
            let mut base: String = id
                .bytes()
                .map(|byte| if is_id_byte(byte) { byte as char } else { '_' })
                .take(30)
                .collect();
            if base.is_empty() {
                base.push_str("call");
            }
            let mut n = 1u64;
            loop {
                let candidate = format!("{base}_{n}");
                if !self.used.contains(candidate.as_str()) {
                    break Cow::Owned(candidate);
                }
                n += 1;
            }
        };
        self.used.insert(sent.clone());
        self.open.push((id, sent.clone(), false));
        sent
    }

    /// The id to send for a result that answers `call_id`: the id sent for the first call of
    /// the latest assistant message made with it that no result answered yet, else for the
    /// last. `None` for a result that answers none of its calls: it keeps its id, and the
    /// provider says what is wrong with it.
    fn result(&mut self, call_id: &str) -> Option<Cow<'a, str>> {
        let mut last = None;
        for (made, sent, answered) in &mut self.open {
            if *made == call_id {
                if !*answered {
                    *answered = true;
                    return Some(sent.clone());
                }
                last = Some(sent.clone());
            }
        }
        last
    }
}

/// `messages` as `wire` may send them to the model `config` names: tokens that model did not
/// issue removed, tool-call ids unique and valid. Borrowed when nothing had to change, which is
/// the rule for a session that stays on one model.
pub(crate) fn prepare<'a>(
    wire: Wire,
    config: &ModelConfig,
    messages: &'a [Message],
    signatures: &Signatures,
) -> Cow<'a, [Message]> {
    // What the wire format sends back: thought signatures, redacted thinking, call signatures,
    // tool-call ids.
    let (thoughts, redacted, calls, rule) = match wire {
        Wire::OpenAi => (false, false, false, Some(IdRule::OpenAi)),
        // Reasoning items go back as `encrypted_content`, carried in a thought's signature.
        Wire::Responses => (true, false, false, Some(IdRule::OpenAi)),
        Wire::Anthropic => (true, true, false, Some(IdRule::Anthropic)),
        Wire::Gemini => (true, false, true, None),
        // Claude's reasoning blocks, in Converse's shape; Bedrock's tool-use ids follow
        // Anthropic's pattern.
        Wire::Bedrock => (true, true, false, Some(IdRule::Anthropic)),
    };
    let issuer = Issuer::of(wire, config);
    let seen = signatures.lock();
    let foreign = |token: &str| !seen.keys.contains(&issuer.key(token));
    let mut ids = rule.map(Ids::new);
    let mut out = Cow::Borrowed(messages);
    for (m, message) in messages.iter().enumerate() {
        if message.role == Role::Assistant {
            if let Some(ids) = &mut ids {
                ids.open.clear();
            }
        }
        let mut drop_redacted = false;
        for (p, part) in message.parts.iter().enumerate() {
            match part {
                Part::Thought {
                    signature: Some(signature),
                    ..
                } if thoughts && foreign(signature) => {
                    if let Part::Thought { signature, .. } = &mut out.to_mut()[m].parts[p] {
                        *signature = None;
                    }
                }
                Part::RedactedThought { data } if redacted && foreign(data) => drop_redacted = true,
                Part::ToolCall(call) => {
                    let unsigned = calls && call.signature.as_deref().is_some_and(&foreign);
                    let id = ids.as_mut().map(|ids| ids.call(&call.id));
                    let renamed = id.filter(|id| **id != *call.id);
                    if unsigned || renamed.is_some() {
                        if let Part::ToolCall(call) = &mut out.to_mut()[m].parts[p] {
                            if unsigned {
                                call.signature = None;
                            }
                            if let Some(id) = renamed {
                                call.id = id.into_owned();
                            }
                        }
                    }
                }
                Part::ToolResult(result) => {
                    let id = ids.as_mut().and_then(|ids| ids.result(&result.call_id));
                    if let Some(id) = id.filter(|id| **id != *result.call_id) {
                        if let Part::ToolResult(result) = &mut out.to_mut()[m].parts[p] {
                            result.call_id = id.into_owned();
                        }
                    }
                }
                Part::Text { .. }
                | Part::Thought { .. }
                | Part::RedactedThought { .. }
                | Part::Image(_) => {}
            }
        }
        if drop_redacted {
            out.to_mut()[m]
                .parts
                .retain(|part| !matches!(part, Part::RedactedThought { data } if foreign(data)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::{json, Value};

    use super::*;
    use crate::config::ProviderKind;
    use crate::model::{ChatRequest, ToolCall, ToolResult};

    fn config(provider: ProviderKind, model: &str) -> ModelConfig {
        let base_url = match provider {
            ProviderKind::OpenAi => "https://openai.test/v1",
            ProviderKind::Anthropic => "https://anthropic.test",
            ProviderKind::Gemini => "https://gemini.test/v1beta",
            ProviderKind::Bedrock => "https://bedrock.test",
            ProviderKind::Vertex => "https://vertex.test",
            ProviderKind::Replay => "",
        };
        ModelConfig::new(provider, model, base_url)
    }

    fn wire(config: &ModelConfig) -> Wire {
        config.wire().unwrap()
    }

    fn thought(text: &str, signature: &str) -> Part {
        Part::Thought {
            text: text.into(),
            signature: Some(signature.into()),
        }
    }

    fn call(id: &str, signature: Option<&str>) -> Part {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": id}),
            signature: signature.map(Into::into),
        })
    }

    fn result(id: &str) -> Part {
        Part::ToolResult(ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: format!("contents of {id}"),
            is_error: false,
        })
    }

    fn assistant(parts: Vec<Part>) -> Message {
        Message {
            role: Role::Assistant,
            parts,
        }
    }

    fn user(parts: Vec<Part>) -> Message {
        Message {
            role: Role::User,
            parts,
        }
    }

    /// Two Gemini turns (its own `call_0` twice), an Anthropic turn, an OpenAI-compatible turn
    /// (a Kimi-style id, and `call_0` again from a server that gives none), then a thought
    /// signed by a provider this process never heard from (an old saved session).
    fn history() -> Vec<Message> {
        vec![
            Message::user("Fix the test."),
            assistant(vec![
                thought("Read both.", "gem-thought-1"),
                call("call_0", Some("gem-call-1")),
                call("call_1", None),
            ]),
            user(vec![result("call_0"), result("call_1")]),
            assistant(vec![
                thought("Now the other.", "gem-thought-2"),
                call("call_0", Some("gem-call-2")),
            ]),
            user(vec![result("call_0")]),
            assistant(vec![
                thought("Check it.", "ant-sig-1"),
                Part::RedactedThought {
                    data: "ant-redacted-1".into(),
                },
                call("toolu_01", None),
            ]),
            user(vec![result("toolu_01")]),
            assistant(vec![
                call("functions.read_file:0", None),
                call("call_0", None),
            ]),
            user(vec![result("functions.read_file:0"), result("call_0")]),
            assistant(vec![
                thought("Done.", "old-sig"),
                Part::Text {
                    text: "Fixed.".into(),
                },
            ]),
            Message::user("Thanks. Now the docs."),
        ]
    }

    /// The tokens of `history` as the providers that issued them would have streamed them.
    fn signatures(gemini: &ModelConfig, anthropic: &ModelConfig) -> Signatures {
        let signatures = Signatures::default();
        let gemini = Issuer::of(Wire::Gemini, gemini);
        for signature in ["gem-thought-1", "gem-thought-2"] {
            let event = StreamEvent::ThoughtSignature {
                signature: signature.into(),
            };
            signatures.record(gemini, &event);
        }
        for signature in ["gem-call-1", "gem-call-2"] {
            let Part::ToolCall(call) = call("call_0", Some(signature)) else {
                unreachable!()
            };
            signatures.record(gemini, &StreamEvent::ToolCall(call));
        }
        let anthropic = Issuer::of(Wire::Anthropic, anthropic);
        signatures.record(
            anthropic,
            &StreamEvent::ThoughtSignature {
                signature: "ant-sig-1".into(),
            },
        );
        signatures.record(
            anthropic,
            &StreamEvent::RedactedThought {
                data: "ant-redacted-1".into(),
            },
        );
        signatures
    }

    /// The messages `config`'s wire format sends for `history()`, one JSON line each.
    fn sent(config: &ModelConfig, signatures: &Signatures) -> String {
        let wire = wire(config);
        let history = history();
        let request = ChatRequest {
            messages: prepare(wire, config, &history, signatures).into_owned(),
            ..ChatRequest::default()
        };
        let body = match wire {
            Wire::OpenAi => crate::openai::request(config, &request).body,
            Wire::Responses => crate::responses::request(config, &request).body,
            Wire::Anthropic => crate::anthropic::request(config, &request).body,
            Wire::Gemini => crate::gemini::request(config, &request).body,
            Wire::Bedrock => crate::bedrock::request(config, &request).body,
        };
        let key = match wire {
            Wire::Gemini => "contents",
            Wire::Responses => "input",
            Wire::OpenAi | Wire::Anthropic | Wire::Bedrock => "messages",
        };
        let messages = body[key].as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .map(|message| format!("{message}\n"))
            .collect()
    }

    fn check(target: &ModelConfig, expected: Expect) {
        let gemini = config(ProviderKind::Gemini, "gemini-3-pro");
        let anthropic = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        expected.assert_eq(&sent(target, &signatures(&gemini, &anthropic)));
    }

    #[test]
    fn openai_gets_unique_ids_and_no_tokens() {
        check(
            &config(ProviderKind::OpenAi, "gpt-5"),
            expect![[r#"
                {"role":"user","content":"Fix the test."}
                {"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"call_0\"}"}},{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"call_1\"}"}}]}
                {"role":"tool","tool_call_id":"call_0","content":"contents of call_0"}
                {"role":"tool","tool_call_id":"call_1","content":"contents of call_1"}
                {"role":"assistant","content":null,"tool_calls":[{"id":"call_0_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"call_0\"}"}}]}
                {"role":"tool","tool_call_id":"call_0_1","content":"contents of call_0"}
                {"role":"assistant","content":null,"tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"toolu_01\"}"}}]}
                {"role":"tool","tool_call_id":"toolu_01","content":"contents of toolu_01"}
                {"role":"assistant","content":null,"tool_calls":[{"id":"functions.read_file:0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"functions.read_file:0\"}"}},{"id":"call_0_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"call_0\"}"}}]}
                {"role":"tool","tool_call_id":"functions.read_file:0","content":"contents of functions.read_file:0"}
                {"role":"tool","tool_call_id":"call_0_2","content":"contents of call_0"}
                {"role":"assistant","content":"Fixed."}
                {"role":"user","content":"Thanks. Now the docs."}
            "#]],
        );
    }

    #[test]
    fn anthropic_gets_its_own_tokens_only_and_unique_valid_ids() {
        check(
            &config(ProviderKind::Anthropic, "claude-sonnet-4-5"),
            expect![[r#"
                {"role":"user","content":[{"type":"text","text":"Fix the test."}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"read_file","input":{"path":"call_0"}},{"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"call_1"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"contents of call_0"},{"type":"tool_result","tool_use_id":"call_1","content":"contents of call_1"}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"call_0_1","name":"read_file","input":{"path":"call_0"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0_1","content":"contents of call_0"}]}
                {"role":"assistant","content":[{"type":"thinking","thinking":"Check it.","signature":"ant-sig-1"},{"type":"redacted_thinking","data":"ant-redacted-1"},{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"toolu_01"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"contents of toolu_01"}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"functions_read_file_0_1","name":"read_file","input":{"path":"functions.read_file:0"}},{"type":"tool_use","id":"call_0_2","name":"read_file","input":{"path":"call_0"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"functions_read_file_0_1","content":"contents of functions.read_file:0"},{"type":"tool_result","tool_use_id":"call_0_2","content":"contents of call_0"}]}
                {"role":"assistant","content":[{"type":"text","text":"Fixed."}]}
                {"role":"user","content":[{"type":"text","text":"Thanks. Now the docs."}]}
            "#]],
        );
    }

    /// Anthropic binds signatures to the model, and another server that speaks its API
    /// (Moonshot's, a proxy's) cannot verify them.
    #[test]
    fn another_anthropic_model_or_server_gets_no_anthropic_tokens() {
        let gemini = config(ProviderKind::Gemini, "gemini-3-pro");
        let anthropic = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let mut server = anthropic.clone();
        server.base_url = "https://api.moonshot.test/anthropic".into();
        let other_model = config(ProviderKind::Anthropic, "claude-opus-4-1");
        assert_eq!(
            sent(&server, &signatures(&gemini, &anthropic)),
            sent(&other_model, &signatures(&gemini, &anthropic))
        );
        check(
            &other_model,
            expect![[r#"
                {"role":"user","content":[{"type":"text","text":"Fix the test."}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"read_file","input":{"path":"call_0"}},{"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"call_1"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"contents of call_0"},{"type":"tool_result","tool_use_id":"call_1","content":"contents of call_1"}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"call_0_1","name":"read_file","input":{"path":"call_0"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0_1","content":"contents of call_0"}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"toolu_01"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"contents of toolu_01"}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"functions_read_file_0_1","name":"read_file","input":{"path":"functions.read_file:0"}},{"type":"tool_use","id":"call_0_2","name":"read_file","input":{"path":"call_0"}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"functions_read_file_0_1","content":"contents of functions.read_file:0"},{"type":"tool_result","tool_use_id":"call_0_2","content":"contents of call_0"}]}
                {"role":"assistant","content":[{"type":"text","text":"Fixed."}]}
                {"role":"user","content":[{"type":"text","text":"Thanks. Now the docs."}]}
            "#]],
        );
    }

    /// Bedrock's Claude and Vertex's Claude and Gemini each issue their own tokens: what
    /// Anthropic's and Gemini's own APIs signed goes to none of them, and what Bedrock signed
    /// goes back to Bedrock. Vertex's models count as the wire they speak.
    #[test]
    fn bedrock_and_vertex_models_are_issuers_of_their_own() {
        let gemini = config(ProviderKind::Gemini, "gemini-3-pro");
        let anthropic = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let bedrock = config(
            ProviderKind::Bedrock,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        );
        let vertex_claude = config(ProviderKind::Vertex, "claude-sonnet-4-5@20250929");
        let vertex_gemini = config(ProviderKind::Vertex, "gemini-3-pro");
        assert_eq!(wire(&vertex_claude), Wire::Anthropic);
        assert_eq!(wire(&vertex_gemini), Wire::Gemini);
        let foreign = signatures(&gemini, &anthropic);
        for target in [&bedrock, &vertex_claude, &vertex_gemini] {
            let sent = sent(target, &foreign);
            for token in ["ant-sig-1", "ant-redacted-1", "gem-thought-1", "gem-call-2"] {
                assert!(
                    !sent.contains(token),
                    "{} got {token}:\n{sent}",
                    target.model
                );
            }
        }
        let issued = Signatures::default();
        for signature in ["ant-sig-1", "ant-redacted-1"] {
            let event = if signature.contains("redacted") {
                StreamEvent::RedactedThought {
                    data: signature.into(),
                }
            } else {
                StreamEvent::ThoughtSignature {
                    signature: signature.into(),
                }
            };
            issued.record(Issuer::of(Wire::Bedrock, &bedrock), &event);
        }
        let sent = sent(&bedrock, &issued);
        assert!(
            sent.contains(r#"{"reasoningContent":{"reasoningText":{"text":"Check it.","signature":"ant-sig-1"}}},{"reasoningContent":{"redactedContent":"ant-redacted-1"}}"#)
                && sent.contains(r#""toolUseId":"functions_read_file_0_1""#),
            "{sent}"
        );
    }

    #[test]
    fn gemini_gets_its_own_signatures_only_and_ids_unchanged() {
        check(
            &config(ProviderKind::Gemini, "gemini-3-pro"),
            expect![[r#"
                {"role":"user","parts":[{"text":"Fix the test."}]}
                {"role":"model","parts":[{"text":"Read both.","thought":true,"thoughtSignature":"gem-thought-1"},{"functionCall":{"name":"read_file","args":{"path":"call_0"}},"thoughtSignature":"gem-call-1"},{"functionCall":{"name":"read_file","args":{"path":"call_1"}}}]}
                {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"contents of call_0"}}},{"functionResponse":{"name":"read_file","response":{"output":"contents of call_1"}}}]}
                {"role":"model","parts":[{"text":"Now the other.","thought":true,"thoughtSignature":"gem-thought-2"},{"functionCall":{"name":"read_file","args":{"path":"call_0"}},"thoughtSignature":"gem-call-2"}]}
                {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"contents of call_0"}}}]}
                {"role":"model","parts":[{"text":"Check it.","thought":true},{"functionCall":{"name":"read_file","args":{"path":"toolu_01"}}}]}
                {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"contents of toolu_01"}}}]}
                {"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"functions.read_file:0"}}},{"functionCall":{"name":"read_file","args":{"path":"call_0"}}}]}
                {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"contents of functions.read_file:0"}}},{"functionResponse":{"name":"read_file","response":{"output":"contents of call_0"}}}]}
                {"role":"model","parts":[{"text":"Done.","thought":true},{"text":"Fixed."}]}
                {"role":"user","parts":[{"text":"Thanks. Now the docs."}]}
            "#]],
        );
    }

    /// Deciding an id looks only backwards, so each request sends the history the previous
    /// one sent unchanged, and a prompt cache keeps matching as the conversation grows.
    #[test]
    fn each_request_sends_the_previous_requests_history_unchanged() {
        let history = history();
        for config in [
            config(ProviderKind::OpenAi, "gpt-5"),
            config(ProviderKind::Anthropic, "claude-sonnet-4-5"),
        ] {
            let signatures = Signatures::default();
            let whole = prepare(wire(&config), &config, &history, &signatures).into_owned();
            for end in 0..history.len() {
                let prefix = prepare(wire(&config), &config, &history[..end], &signatures);
                assert_eq!(prefix[..], whole[..end], "{} first {end}", config.provider);
            }
        }
    }

    /// Whatever ids the providers gave, every request has unique ids that its wire format
    /// accepts (a re-issued one fits both), and every result names its call.
    #[test]
    fn ids_are_unique_and_results_match_their_calls() {
        let long = "x".repeat(70);
        let ids = [
            "call_0", "call_0", "call_0_1", "", "a b", &long, &long, "call_0", "toolu_1", "é",
        ];
        let mut history = vec![Message::user("go")];
        for chunk in ids.chunks(3) {
            history.push(assistant(chunk.iter().map(|id| call(id, None)).collect()));
            history.push(user(chunk.iter().map(|id| result(id)).collect()));
        }
        // One message repeating an id: its results are matched in order.
        history.push(assistant(vec![call("dup", None), call("dup", None)]));
        history.push(user(vec![result("dup"), result("dup")]));
        for (config, rule) in [
            (config(ProviderKind::OpenAi, "gpt-5"), IdRule::OpenAi),
            (
                config(ProviderKind::Anthropic, "claude-sonnet-4-5"),
                IdRule::Anthropic,
            ),
        ] {
            let sent = prepare(wire(&config), &config, &history, &Signatures::default());
            let mut seen = HashSet::new();
            for pair in sent.windows(2) {
                let calls: Vec<&ToolCall> = pair[0].tool_calls().collect();
                if calls.is_empty() {
                    continue;
                }
                for call in &calls {
                    assert!(rule.accepts(&call.id), "{:?}", call.id);
                    // The arguments name the id the call was made with.
                    if call.arguments["path"] != call.id.as_str() {
                        assert!(
                            IdRule::OpenAi.accepts(&call.id) && IdRule::Anthropic.accepts(&call.id),
                            "{:?}",
                            call.id
                        );
                    }
                    assert!(seen.insert(call.id.clone()), "{} sent twice", call.id);
                }
                let answered: Vec<(&str, &Value)> = pair[1]
                    .parts
                    .iter()
                    .filter_map(|part| match part {
                        Part::ToolResult(result) => Some(result),
                        _ => None,
                    })
                    .zip(&calls)
                    .map(|(result, call)| (result.call_id.as_str(), &call.arguments))
                    .collect();
                let expected: Vec<(&str, &Value)> = calls
                    .iter()
                    .map(|call| (call.id.as_str(), &call.arguments))
                    .collect();
                assert_eq!(answered, expected);
            }
            assert_eq!(seen.len(), ids.len() + 2, "{}", config.provider);
        }
    }

    #[test]
    fn a_history_that_needs_nothing_is_not_copied() {
        let config = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let signatures = Signatures::default();
        let issuer = Issuer::of(Wire::Anthropic, &config);
        signatures.record(
            issuer,
            &StreamEvent::ThoughtSignature {
                signature: "mine".into(),
            },
        );
        let history = vec![
            Message::user("go"),
            assistant(vec![thought("Hm.", "mine"), call("toolu_1", None)]),
            user(vec![result("toolu_1")]),
        ];
        let sent = prepare(Wire::Anthropic, &config, &history, &signatures);
        assert!(matches!(sent, Cow::Borrowed(_)));
        // OpenAI sends no tokens, so a foreign one costs it no copy either.
        let openai = self::config(ProviderKind::OpenAi, "gpt-5");
        let sent = prepare(Wire::OpenAi, &openai, &history, &signatures);
        assert!(matches!(sent, Cow::Borrowed(_)));
    }

    #[test]
    fn the_oldest_tokens_are_forgotten_first() {
        let config = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let issuer = Issuer::of(Wire::Anthropic, &config);
        let signatures = Signatures::default();
        for n in 0..=REMEMBERED {
            signatures.record(
                issuer,
                &StreamEvent::ThoughtSignature {
                    signature: format!("sig-{n}"),
                },
            );
        }
        let seen = signatures.lock();
        assert_eq!(seen.keys.len(), REMEMBERED);
        assert!(!seen.keys.contains(&issuer.key("sig-0")));
        assert!(seen.keys.contains(&issuer.key("sig-1")));
        assert!(seen
            .keys
            .contains(&issuer.key(&format!("sig-{REMEMBERED}"))));
    }

    #[test]
    fn the_issuer_ignores_a_trailing_slash_only() {
        let config = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let mut slash = config.clone();
        slash.base_url.push('/');
        assert_eq!(
            Issuer::of(Wire::Anthropic, &config),
            Issuer::of(Wire::Anthropic, &slash)
        );
        let mut other = config.clone();
        other.model = "claude-opus-4-1".into();
        assert_ne!(
            Issuer::of(Wire::Anthropic, &config),
            Issuer::of(Wire::Anthropic, &other)
        );
        assert_ne!(
            Issuer::of(Wire::Anthropic, &config),
            Issuer::of(Wire::OpenAi, &config)
        );
    }
}
