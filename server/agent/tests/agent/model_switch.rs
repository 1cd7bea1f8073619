//! One session switched between wire formats mid-conversation, for every ordered pair of
//! OpenAI's Chat Completions and Responses, Anthropic and Gemini (Ollama speaks the OpenAI
//! format): two turns with thoughts and
//! tool calls on the first provider, `set_model` to the second for a turn of its own, then back
//! to the first. Each provider is a scripted model server on 127.0.0.1, and the assertions are on
//! the bytes each one received: no token another provider issued, each provider's own tokens
//! sent back to it (after the switch back too), tool-call ids unique within every request and
//! every result matching its call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tandem_agent::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use tandem_agent::{
    AgentConfig, ApprovalMode, ApprovalPolicy, Prompt, Session, StopReason, TurnIo,
};
use tandem_providers::{
    ApiKey, CancellationToken, Model, ModelConfig, OpenAiApi, ProviderKind, RetryPolicy,
};
use tandem_test_support::{ModelServer, Reply, TIMEOUT};
use tokio::sync::mpsc;

/// Answers `echo <path>`.
struct Echo;

impl Tool for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn description(&self) -> &'static str {
        "Echoes its path."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn mutates(&self) -> bool {
        false
    }
    fn title(&self, args: &Value) -> String {
        format!("echo {}", args["path"].as_str().unwrap_or("?"))
    }
    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
    fn run<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            Ok(ToolOutput::text(format!(
                "echo {}",
                args["path"].as_str().unwrap_or("")
            )))
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    OpenAi,
    Responses,
    Anthropic,
    Gemini,
}

const APIS: [Api; 4] = [Api::OpenAi, Api::Responses, Api::Anthropic, Api::Gemini];

/// A provider: its scripted server and the model configuration that reaches it.
struct Provider {
    api: Api,
    server: ModelServer,
    config: ModelConfig,
}

impl Provider {
    async fn start(api: Api) -> Provider {
        let server = ModelServer::start().await;
        let (provider, path) = match api {
            Api::OpenAi | Api::Responses => (ProviderKind::OpenAi, "/v1"),
            Api::Anthropic => (ProviderKind::Anthropic, ""),
            Api::Gemini => (ProviderKind::Gemini, "/v1beta"),
        };
        let mut config =
            ModelConfig::new(provider, "test-model", format!("{}{path}", server.url()));
        if api == Api::Responses {
            config.api = OpenAiApi::Responses;
        }
        config.api_key = Some(ApiKey::new("sk-test"));
        config.retry = RetryPolicy {
            max_retries: 0,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        };
        Provider {
            api,
            server,
            config,
        }
    }

    fn model(&self) -> Model {
        Model::new(self.config.clone()).unwrap()
    }

    /// The token this provider signs its `n`th response with, unique to the pair under test.
    fn token(&self, pair: &str, n: usize) -> String {
        format!("{pair}-{:?}-token-{n}", self.api)
    }

    /// A response with a thought (signed, and redacted too for Anthropic; encrypted for
    /// Responses) and calls to `echo` with `calls` as `(id, path)`. Chat Completions signs
    /// nothing; Gemini gives no ids.
    fn calls(&self, pair: &str, n: usize, calls: &[(Option<&str>, &str)]) -> Reply {
        let token = self.token(pair, n);
        let thought = format!("Thinking, response {n}.");
        match self.api {
            Api::OpenAi => {
                let calls: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(index, (id, path))| {
                        let mut call = json!({
                            "index": index,
                            "type": "function",
                            "function": {"name": "echo", "arguments": json!({"path": path}).to_string()},
                        });
                        if let Some(id) = id {
                            call["id"] = json!(id);
                        }
                        call
                    })
                    .collect();
                openai(&[
                    json!({"role": "assistant", "reasoning_content": thought}),
                    json!({"tool_calls": calls}),
                ])
            }
            Api::Responses => {
                let mut items = vec![json!({
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": thought}],
                    "encrypted_content": token,
                })];
                for (id, path) in calls {
                    items.push(json!({
                        "type": "function_call",
                        "call_id": id.unwrap(),
                        "name": "echo",
                        "arguments": json!({"path": path}).to_string(),
                    }));
                }
                Reply::responses(&items)
            }
            Api::Anthropic => {
                let mut events = vec![
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": thought}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": token}}),
                    json!({"type": "content_block_stop", "index": 0}),
                    json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": format!("{token}-redacted")}}),
                    json!({"type": "content_block_stop", "index": 1}),
                ];
                for (offset, (id, path)) in calls.iter().enumerate() {
                    let index = offset + 2;
                    events.extend([
                        json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id.unwrap(), "name": "echo", "input": {}}}),
                        json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": json!({"path": path}).to_string()}}),
                        json!({"type": "content_block_stop", "index": index}),
                    ]);
                }
                anthropic(events, "tool_use")
            }
            Api::Gemini => {
                let mut parts =
                    vec![json!({"text": thought, "thought": true, "thoughtSignature": token})];
                for (index, (_, path)) in calls.iter().enumerate() {
                    let mut part =
                        json!({"functionCall": {"name": "echo", "args": {"path": path}}});
                    // Gemini signs the first call of a response.
                    if index == 0 {
                        part["thoughtSignature"] = json!(format!("{token}-call"));
                    }
                    parts.push(part);
                }
                gemini(parts)
            }
        }
    }

    fn text(&self, text: &str) -> Reply {
        match self.api {
            Api::OpenAi => openai(&[json!({"role": "assistant", "content": text})]),
            Api::Responses => Reply::responses_text(text),
            Api::Anthropic => anthropic(
                vec![
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                    json!({"type": "content_block_stop", "index": 0}),
                ],
                "end_turn",
            ),
            Api::Gemini => gemini(vec![json!({"text": text})]),
        }
    }

    /// The bodies of the chat requests the server received, in order.
    fn bodies(&self) -> Vec<(String, Value)> {
        self.server
            .requests()
            .iter()
            .map(|request| {
                (
                    String::from_utf8_lossy(&request.body).into_owned(),
                    request.json(),
                )
            })
            .collect()
    }

    /// Every tool call of `body`, with the results that the next message gives: ids for the
    /// wire formats that send them, names for Gemini (which pairs them by name and order).
    fn exchanges(&self, body: &Value) -> Vec<(Vec<String>, Vec<String>)> {
        let strings = |values: Vec<&Value>| -> Vec<String> {
            values
                .into_iter()
                .map(|value| value.as_str().unwrap().to_owned())
                .collect()
        };
        match self.api {
            Api::OpenAi => {
                let messages = body["messages"].as_array().unwrap();
                let mut exchanges = Vec::new();
                for (index, message) in messages.iter().enumerate() {
                    let Some(calls) = message["tool_calls"].as_array() else {
                        continue;
                    };
                    let results = messages[index + 1..]
                        .iter()
                        .take_while(|next| next["role"] == "tool")
                        .map(|next| &next["tool_call_id"])
                        .collect();
                    exchanges.push((
                        strings(calls.iter().map(|call| &call["id"]).collect()),
                        strings(results),
                    ));
                }
                exchanges
            }
            Api::Responses => {
                let items = body["input"].as_array().unwrap();
                let mut exchanges = Vec::new();
                let mut at = 0;
                while at < items.len() {
                    let calls: Vec<&Value> = items[at..]
                        .iter()
                        .skip_while(|item| item["type"] == "reasoning")
                        .take_while(|item| item["type"] == "function_call")
                        .map(|item| &item["call_id"])
                        .collect();
                    if calls.is_empty() {
                        at += 1;
                        continue;
                    }
                    let skipped = items[at..]
                        .iter()
                        .take_while(|item| item["type"] == "reasoning")
                        .count();
                    at += skipped + calls.len();
                    let results: Vec<&Value> = items[at..]
                        .iter()
                        .take_while(|item| item["type"] == "function_call_output")
                        .map(|item| &item["call_id"])
                        .collect();
                    at += results.len();
                    exchanges.push((strings(calls), strings(results)));
                }
                exchanges
            }
            Api::Anthropic | Api::Gemini => {
                let (list, content, call, call_key, result, result_key) = match self.api {
                    Api::Anthropic => (
                        "messages",
                        "content",
                        "tool_use",
                        "id",
                        "tool_result",
                        "tool_use_id",
                    ),
                    _ => (
                        "contents",
                        "parts",
                        "functionCall",
                        "name",
                        "functionResponse",
                        "name",
                    ),
                };
                let messages = body[list].as_array().unwrap();
                let blocks = |message: &'_ Value, kind: &str, key: &str| -> Vec<String> {
                    let values = message[content]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|block| match self.api {
                            Api::Anthropic => (block["type"] == kind).then(|| &block[key]),
                            _ => block.get(kind).map(|inner| &inner[key]),
                        })
                        .collect();
                    strings(values)
                };
                messages
                    .windows(2)
                    .map(|pair| {
                        (
                            blocks(&pair[0], call, call_key),
                            blocks(&pair[1], result, result_key),
                        )
                    })
                    .filter(|(calls, _)| !calls.is_empty())
                    .collect()
            }
        }
    }
}

fn openai(deltas: &[Value]) -> Reply {
    let mut body = String::new();
    for delta in deltas {
        let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let finish = if deltas.iter().any(|delta| delta.get("tool_calls").is_some()) {
        "tool_calls"
    } else {
        "stop"
    };
    let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    body.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    Reply::sse(body)
}

fn anthropic(blocks: Vec<Value>, stop_reason: &str) -> Reply {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ];
    events.extend(blocks);
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}}));
    events.push(json!({"type": "message_stop"}));
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect();
    Reply::sse(body)
}

fn gemini(parts: Vec<Value>) -> Reply {
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
    });
    Reply::sse(format!("data: {chunk}\n\n"))
}

async fn turn(session: &mut Session, prompt: &str) {
    let (events, _received) = mpsc::unbounded_channel();
    let (_approve, mut approvals) = mpsc::unbounded_channel();
    let mut io = TurnIo {
        events: &events,
        approvals: &mut approvals,
        cancel: CancellationToken::new(),
    };
    let stop = tokio::time::timeout(TIMEOUT, session.run_turn(Prompt::text(prompt), &mut io))
        .await
        .expect("the turn did not end");
    assert_eq!(stop, StopReason::EndTurn, "{prompt}");
}

/// The tokens a provider issued in the run: a thought signature per response with calls, and
/// Anthropic's redacted thinking or Gemini's call signature with it.
fn tokens(provider: &Provider, pair: &str, responses: &[usize]) -> Vec<String> {
    let mut tokens = Vec::new();
    for &n in responses {
        let token = provider.token(pair, n);
        match provider.api {
            Api::OpenAi => {}
            Api::Responses => tokens.push(token),
            Api::Anthropic => tokens.extend([format!("{token}-redacted"), token]),
            Api::Gemini => tokens.extend([format!("{token}-call"), token]),
        }
    }
    tokens
}

/// Every request `provider` received has unique tool-call ids (Gemini sends none) and answers
/// each call in order, and none carries a token of `foreign`.
fn assert_valid(provider: &Provider, pair: &str, foreign: &[String]) {
    for (index, (text, body)) in provider.bodies().iter().enumerate() {
        let at = format!("{pair}: request {index} to {:?}", provider.api);
        let mut ids = HashSet::new();
        for (calls, results) in provider.exchanges(body) {
            assert_eq!(
                calls, results,
                "{at}: each result answers its call\n{body:#}"
            );
            if provider.api != Api::Gemini {
                for id in calls {
                    // What each API accepts: OpenAI up to 40 bytes of anything, Anthropic
                    // `^[a-zA-Z0-9_-]{1,64}$`.
                    let valid = match provider.api {
                        Api::OpenAi | Api::Responses => (1..=40).contains(&id.len()),
                        _ => {
                            (1..=64).contains(&id.len())
                                && id
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                        }
                    };
                    assert!(valid, "{at}: id {id:?}");
                    assert!(ids.insert(id.clone()), "{at}: id {id} sent twice\n{body:#}");
                }
            }
        }
        for token in foreign {
            assert!(
                !text.contains(token.as_str()),
                "{at}: sent {token}\n{body:#}"
            );
        }
    }
}

fn assert_sent(provider: &Provider, request: usize, tokens: &[String], pair: &str) {
    let (text, body) = &provider.bodies()[request];
    for token in tokens {
        assert!(
            text.contains(token.as_str()),
            "{pair}: request {request} to {:?} lacks its own {token}\n{body:#}",
            provider.api
        );
    }
}

/// The regression this covers: a Gemini history (`call_0` in every response) sent to OpenAI or
/// Anthropic had duplicate tool-call ids, and one provider's thought signatures were sent to
/// another, which refuses the request.
#[tokio::test]
async fn a_session_switched_between_any_two_providers_sends_each_a_valid_history() {
    for from in APIS {
        for to in APIS {
            if from == to {
                continue;
            }
            let pair = format!("{from:?}-to-{to:?}");
            let first = Provider::start(from).await;
            let second = Provider::start(to).await;
            // Ids as each provider gives them: none from Gemini and from an OpenAI-compatible
            // server that gives none (Tandem numbers them `call_0`, `call_1`, … per response),
            // and a Kimi-style id with characters Anthropic refuses.
            let id = |api: Api, given: &'static str| match api {
                Api::OpenAi if given.starts_with("toolu") => None,
                Api::Gemini => None,
                _ => Some(given),
            };
            let kimi = match from {
                Api::OpenAi => Some("functions.echo:1"),
                Api::Responses => Some("call_b"),
                Api::Anthropic => Some("toolu_a1b"),
                Api::Gemini => None,
            };
            first
                .server
                .push(first.calls(&pair, 1, &[(id(from, "toolu_a1"), "a"), (kimi, "b")]));
            first.server.push(first.text("Read a and b."));
            first
                .server
                .push(first.calls(&pair, 2, &[(id(from, "toolu_a2"), "c")]));
            first.server.push(first.text("Read c."));
            second
                .server
                .push(second.calls(&pair, 3, &[(id(to, "toolu_b1"), "d")]));
            second.server.push(second.text("Read d."));
            first.server.push(first.text("Back."));

            let dir = tempfile::tempdir().unwrap();
            let config = AgentConfig {
                approval: ApprovalPolicy {
                    mode: ApprovalMode::Yolo,
                    ..ApprovalPolicy::default()
                },
                ..AgentConfig::default()
            };
            let mut session = Session::new(
                first.model(),
                vec![Arc::new(Echo)],
                ToolContext::on_disk(vec![dir.path().to_owned()]),
                config,
            );
            turn(&mut session, "Read a and b.").await;
            turn(&mut session, "Read c.").await;
            session.set_model(second.model());
            turn(&mut session, "Read d.").await;
            session.set_model(first.model());
            turn(&mut session, "Thanks.").await;

            assert_eq!(first.server.request_count(), 5, "{pair}");
            assert_eq!(second.server.request_count(), 2, "{pair}");
            let first_tokens = tokens(&first, &pair, &[1, 2]);
            let second_tokens = tokens(&second, &pair, &[3]);
            assert_valid(&first, &pair, &second_tokens);
            assert_valid(&second, &pair, &first_tokens);
            // Each provider gets its own tokens back: within a turn, and after the switch back.
            assert_sent(&first, 1, &tokens(&first, &pair, &[1]), &pair);
            assert_sent(&second, 1, &second_tokens, &pair);
            assert_sent(&first, 4, &first_tokens, &pair);
            // The second provider saw the whole history: both earlier turns' calls.
            let (_, body) = &second.bodies()[1];
            assert_eq!(second.exchanges(body).len(), 3, "{pair}\n{body:#}");
        }
    }
}
