//! The enterprise endpoints against the scripted model server on 127.0.0.1, with no cloud and
//! no real credential. Amazon Bedrock: the recorded Converse streams
//! (`tests/fixtures/providers/bedrock/*.frames`) sent as binary AWS event-stream frames, its
//! error responses and exceptions, and — through `tandem ask`, with test credentials in the
//! spawned process's environment or AWS files — requests whose SigV4 signature the server
//! recomputes the way AWS documents it. Google Vertex AI: a service account key
//! (`tests/fixtures/vertex/`, a throwaway key) whose self-signed token the server verifies with
//! the key's public half, an authorized user whose refresh goes to the server's token endpoint,
//! and both publishers' paths and formats. And `tandem models`, which describes both without
//! sending them anything.
//!
//! Every spawned process gets AWS and Google files of its own (`isolated`): no test reads the
//! machine's AWS or Google configuration, or asks a metadata server.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use serde_json::{json, Value};
use tandem_providers::{
    ApiKey, CancellationToken, ChatRequest, Message, Model, ModelConfig, ProviderKind, Result,
    RetryPolicy, StreamEvent,
};
use tandem_test_support::{ModelServer, RecordedRequest, Reply, Step, TIMEOUT};

use super::headless::{Folders, Run};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
/// The model's path, its `:` encoded as AWS's SDKs encode it.
const MODEL_PATH: &str = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream";
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// One frame as a fixture line describes it (`eventstream.rs`'s test helper does the same for
/// the unit tests), written with the AWS SDK's encoder.
fn frame(line: &Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let string = |name: &'static str, value: &str| {
        Header::new(name, HeaderValue::String(value.to_owned().into()))
    };
    let payload = match (&line["payload"], &line["raw"]) {
        (Value::Null, Value::String(raw)) => raw.clone().into_bytes(),
        (Value::Null, _) => Vec::new(),
        (payload, _) => payload.to_string().into_bytes(),
    };
    let mut headers = Vec::new();
    if let Some(event) = line["event"].as_str() {
        headers.push(string(":message-type", "event"));
        headers.push(string(":event-type", event));
        headers.push(string(":content-type", "application/json"));
    } else if let Some(kind) = line["exception"].as_str() {
        headers.push(string(":message-type", "exception"));
        headers.push(string(":exception-type", kind));
        headers.push(string(":content-type", "application/json"));
    } else if let Some(code) = line["error"].as_str() {
        headers.push(string(":message-type", "error"));
        headers.push(string(":error-code", code));
        headers.push(string(
            ":error-message",
            line["message"].as_str().unwrap_or_default(),
        ));
    }
    let mut bytes = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(
        &Message::new_from_parts(headers, payload),
        &mut bytes,
    )
    .unwrap();
    if line["corrupt"] == Value::Bool(true) {
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
    }
    bytes
}

/// A Bedrock fixture's frames, each frame one chunk.
fn frames(case: &str) -> Vec<Vec<u8>> {
    let path = fixtures().join(format!("providers/bedrock/{case}.frames"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| frame(&serde_json::from_str(line).unwrap()))
        .collect()
}

/// A 200 streaming `chunks` as Bedrock does.
fn event_stream(chunks: Vec<Vec<u8>>) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), EVENT_STREAM.into())],
        steps: chunks.into_iter().map(Step::Bytes).collect(),
    }
}

/// An error response as Bedrock sends one: the type in a header, the message in the body.
fn aws_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, &json!({"message": message}).to_string()).header(
        "x-amzn-errortype",
        &format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    )
}

fn expected_events(case: &str) -> String {
    let path = fixtures().join(format!("providers/bedrock/{case}.events"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A Bedrock model on `server` that authenticates with a Bedrock API key (SigV4 is checked
/// through `tandem ask`, whose environment can hold AWS credentials).
fn bedrock(server: &ModelServer, max_retries: u32) -> ModelConfig {
    let mut config = ModelConfig::new(ProviderKind::Bedrock, MODEL, server.url());
    config.id = "bedrock-test".into();
    config.region = Some("us-west-2".into());
    config.api_key = Some(ApiKey::new("bedrock-api-key-5ecret"));
    config.retry = RetryPolicy {
        max_retries,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(2),
    };
    config.idle_timeout = Duration::from_secs(10);
    config
}

async fn run(model: &Model) -> Vec<Result<StreamEvent>> {
    let request = ChatRequest {
        system: "You are Tandem.".into(),
        messages: vec![Message::user("Hi")],
        ..ChatRequest::default()
    };
    tokio::time::timeout(
        TIMEOUT,
        model.stream(request, CancellationToken::new()).collect(),
    )
    .await
    .expect("the model's response stream never ended")
}

fn render(events: &[Result<StreamEvent>]) -> String {
    events
        .iter()
        .map(|event| match event {
            Ok(event) => serde_json::to_string(event).unwrap() + "\n",
            Err(error) => format!("error {}: {error}\n", error.kind()),
        })
        .collect()
}

/// Every recorded stream, one frame a chunk, decodes through the model as the unit tests say it
/// does; the request goes to the model's path with the key as a bearer token.
#[tokio::test]
async fn bedrock_recorded_streams_decode_through_the_model() {
    for case in [
        "text",
        "tool_call",
        "parallel_tool_calls",
        "thoughts",
        "throttling",
        "context_too_long",
        "malformed",
        "no_metadata",
        "truncated_tool_call",
    ] {
        let server = ModelServer::start().await;
        server.push(event_stream(frames(case)));
        let events = run(&Model::new(bedrock(&server, 0)).unwrap()).await;
        assert_eq!(render(&events), expected_events(case), "{case}");
        let requests = server.requests();
        let request = &requests[0];
        assert_eq!(request.path, MODEL_PATH, "{case}");
        assert_eq!(
            request.header("authorization"),
            Some("Bearer bedrock-api-key-5ecret")
        );
        assert_eq!(request.header("accept"), Some(EVENT_STREAM));
        assert_eq!(
            request.json()["system"],
            json!([{"text": "You are Tandem."}])
        );
    }
}

/// What Bedrock answers that is worth retrying is retried (a throttle as a response or as an
/// exception mid-stream, a reset), what is not is typed for the caller (too long a prompt for
/// compression, a refused key with where it came from, never the key).
#[tokio::test]
async fn bedrock_faults_are_typed_and_retried_as_they_deserve() {
    let server = ModelServer::start().await;
    server.push(aws_error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    ));
    server.push(event_stream(frames("throttling")));
    let mut reset = frames("text");
    reset.truncate(2);
    server.push(event_stream(reset).step(Step::Reset));
    server.push(event_stream(frames("text")));
    let events = run(&Model::new(bedrock(&server, 3)).unwrap()).await;
    let retries: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Ok(StreamEvent::Retrying { error, .. }) => Some(error.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 3, "{}", render(&events));
    assert!(
        retries[0].starts_with("rate limited: ThrottlingException: Too many requests"),
        "{retries:?}"
    );
    assert!(
        retries[1].starts_with("rate limited: throttlingException: Too many tokens"),
        "{retries:?}"
    );
    assert!(
        matches!(events.last(), Some(Ok(StreamEvent::Finished { .. }))),
        "{}",
        render(&events)
    );
    assert_eq!(server.request_count(), 4);

    let cases = [
        (
            aws_error(400, "ValidationException", "Input is too long for requested model."),
            "context_window_exceeded",
            "context window exceeded: ValidationException: Input is too long for requested model.",
        ),
        (
            aws_error(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid. bedrock-api-key-5ecret",
            ),
            "authentication",
            "authentication failed: bedrock model us.anthropic.claude-sonnet-4-5-20250929-v1:0 at \
             http://127.0.0.1:PORT/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream \
             refused the key given in the model's configuration (not read from an environment \
             variable): UnrecognizedClientException: The security token included in the request \
             is invalid. [redacted]. Check the key, or set apiKeyEnv in the model's settings to \
             read it from a variable.",
        ),
    ];
    for (reply, kind, message) in cases {
        let server = ModelServer::start().await;
        server.push(reply);
        let events = run(&Model::new(bedrock(&server, 3)).unwrap()).await;
        let Some(Err(error)) = events.last() else {
            panic!("{}", render(&events))
        };
        let port = server.url().rsplit(':').next().unwrap().to_owned();
        assert_eq!(error.kind(), kind);
        assert_eq!(error.to_string(), message.replace("PORT", &port));
        assert_eq!(server.request_count(), 1, "{kind} is not retried");
    }
}

/// Issue 16's caps hold for the binary framing too: frames without end are stopped at the byte
/// cap, counted as bytes arrive, and not retried.
#[tokio::test]
async fn a_bedrock_stream_that_never_ends_is_stopped_at_the_byte_cap() {
    let server = ModelServer::start().await;
    let thought = frame(&json!({
        "event": "contentBlockDelta",
        "payload": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "and again, "}}},
    }));
    let mut reply = event_stream(frames("text")[..1].to_vec());
    for _ in 0..2000 {
        reply = reply.step(Step::Bytes(thought.clone()));
    }
    server.push(reply.step(Step::Hang));
    let mut config = bedrock(&server, 3);
    config.max_response_bytes = 64 * 1024;
    let events = run(&Model::new(config).unwrap()).await;
    let Some(Err(error)) = events.last() else {
        panic!("{}", render(&events))
    };
    assert_eq!(error.kind(), "response_limit_exceeded");
    assert_eq!(server.request_count(), 1);
}

/// The AWS variables a developer's shell may export, which no test may read.
const AWS_VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_ENDPOINT_URL",
];

/// The Google variables likewise.
const GOOGLE_VARIABLES: &[&str] = &[
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_LOCATION",
    "CLOUD_ML_REGION",
    "GCE_METADATA_HOST",
    "GOOGLE_CLOUD_QUOTA_PROJECT",
];

/// Folders for `tandem ask` with `settings`, and a command whose AWS and Google configuration
/// is only what the test gives it: AWS's files are the folder's `aws/config` and
/// `aws/credentials` (empty unless the test writes them), IMDS is off, the home folder (where
/// gcloud keeps its credentials) is the test's.
fn isolated(settings: &Value) -> Folders {
    let folders = Folders {
        config: tempfile::tempdir().unwrap(),
        state: tempfile::tempdir().unwrap(),
        workspace: tempfile::tempdir().unwrap(),
    };
    folders.settings(settings);
    let aws = folders.config.path().join("aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(aws.join("config"), "").unwrap();
    std::fs::write(aws.join("credentials"), "").unwrap();
    folders
}

fn ask(folders: &Folders, env: &[(&str, &str)]) -> tokio::process::Command {
    // Everything logged, so that a credential logged by any crate at any level would show.
    let mut command = folders.command(&["--log-level", "trace", "ask", "Say hello."]);
    for name in AWS_VARIABLES.iter().chain(GOOGLE_VARIABLES) {
        command.env_remove(name);
    }
    let aws = folders.config.path().join("aws");
    command
        .env("AWS_CONFIG_FILE", aws.join("config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", aws.join("credentials"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("NO_PROXY", "127.0.0.1,localhost");
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// What a run printed and logged, for checks that a secret appears nowhere.
fn everything(folders: &Folders, run: &Run) -> String {
    let log = std::fs::read_to_string(folders.config.path().join("tandem.log")).unwrap_or_default();
    format!("{}\n{}\n{log}", run.stdout, run.stderr)
}

fn bedrock_settings(server: &ModelServer, region: Option<&str>) -> Value {
    let mut model = json!({"provider": "bedrock", "model": MODEL, "baseUrl": server.url()});
    if let Some(region) = region {
        model["region"] = json!(region);
    }
    json!({"model": "bedrock", "models": {"bedrock": model}, "network": {"maxRetries": 0}})
}

/// The test credentials (AWS's documentation's example pair, which no account has).
const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN";

/// Each request the server got is signed as AWS documents SigV4 (recomputed here from the
/// method, path, signed headers and body with the test's secret, not with the signer Tandem
/// uses), for `region`, and carries the session token when there is one; the answer, sent as
/// event-stream frames, is what `tandem ask` prints. Neither the secret nor the token is in
/// anything Tandem printed or logged, at trace level (AWS's signer traces the canonical
/// request, token included, unless Tandem silences it).
#[tokio::test]
async fn bedrock_requests_are_signed_with_sigv4_from_the_environment_and_from_a_profile() {
    // Environment variables with a session token, the region from the settings.
    let server = ModelServer::start().await;
    server.respond_with(|_| event_stream(frames("text")));
    let folders = isolated(&bedrock_settings(&server, Some("eu-west-3")));
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", SESSION_TOKEN),
    ];
    let run = Run::of(ask(&folders, &env).spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("Hello, wörld ✓"), "{run:#?}");
    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(request.path, MODEL_PATH);
        let signed = verify_sigv4(request, SECRET_KEY, "eu-west-3")
            .unwrap_or_else(|error| panic!("{error}\n{request:#?}"));
        assert_eq!(
            signed,
            "accept;content-type;host;x-amz-date;x-amz-security-token"
        );
        assert_eq!(request.header("x-amz-security-token"), Some(SESSION_TOKEN));
    }
    let printed = everything(&folders, &run);
    for secret in [SECRET_KEY, SESSION_TOKEN] {
        assert!(!printed.contains(secret), "{secret} in:\n{printed}");
    }

    // A profile in the shared files, its region from the config file.
    let server = ModelServer::start().await;
    server.respond_with(|_| event_stream(frames("text")));
    let folders = isolated(&bedrock_settings(&server, None));
    let aws = folders.config.path().join("aws");
    std::fs::write(
        aws.join("credentials"),
        format!("[work]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"),
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile work]\nregion = ap-northeast-1\n",
    )
    .unwrap();
    let run = Run::of(ask(&folders, &[("AWS_PROFILE", "work")]).spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("Hello, wörld ✓"), "{run:#?}");
    for request in server.requests() {
        let signed = verify_sigv4(&request, SECRET_KEY, "ap-northeast-1")
            .unwrap_or_else(|error| panic!("{error}\n{request:#?}"));
        assert_eq!(signed, "accept;content-type;host;x-amz-date");
        assert_eq!(request.header("x-amz-security-token"), None);
    }
    assert!(!everything(&folders, &run).contains(SECRET_KEY));
}

/// With no credentials anywhere (and IMDS off) the user is told what to set, nothing is sent,
/// and it is not retried; a Bedrock API key, when set, goes as a bearer token instead of a
/// signature, and a refusal of it names its variable, not the key.
#[tokio::test]
async fn bedrock_without_credentials_says_what_to_set_and_an_api_key_is_a_bearer_token() {
    let server = ModelServer::start().await;
    let folders = isolated(&bedrock_settings(&server, Some("us-east-1")));
    let run = Run::of(ask(&folders, &[]).spawn().unwrap()).await;
    assert_ne!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&[
        "no AWS credentials were found for Bedrock",
        "set AWS_PROFILE to a profile in ~/.aws/config",
        "AWS_BEARER_TOKEN_BEDROCK",
    ]);
    assert_eq!(server.request_count(), 0);

    let key = "ABSKQmVkcm9ja0FQSUtleS1test5ecret";
    server.push(aws_error(
        403,
        "AccessDeniedException",
        "Authentication failed: Invalid API Key format",
    ));
    let run = Run::of(
        ask(&folders, &[("AWS_BEARER_TOKEN_BEDROCK", key)])
            .spawn()
            .unwrap(),
    )
    .await;
    assert_ne!(run.code, 0, "{run:#?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert_eq!(
        request.header("x-amz-date"),
        None,
        "no signature beside the key"
    );
    run.assert_stderr_has(&["refused the key in AWS_BEARER_TOKEN_BEDROCK"]);
    assert!(!everything(&folders, &run).contains(key));
}

/// SigV4 as AWS's documentation describes it ("Create a signed AWS API request"), written out
/// here so that the check does not share the signer's code: the canonical request (method, the
/// path with each segment encoded again, the query, the signed headers, the body's SHA-256),
/// the string to sign with the credential scope, the signing key derived from the secret by
/// HMAC over date, region, service and `aws4_request`. Checks the `Authorization` header's
/// parts and that the date is current; returns its `SignedHeaders`.
fn verify_sigv4(request: &RecordedRequest, secret: &str, region: &str) -> Result<String, String> {
    use ring::{digest, hmac};
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let sha256 = |bytes: &[u8]| hex(digest::digest(&digest::SHA256, bytes).as_ref());
    let mac = |key: &[u8], data: &str| {
        hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
            .as_ref()
            .to_vec()
    };
    let header = |name: &str| request.header(name).ok_or(format!("no {name} header"));
    let authorization = header("authorization")?;
    let fields = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let field = |name: &str| {
        fields
            .split(", ")
            .find_map(|field| field.strip_prefix(&format!("{name}=")))
            .ok_or(format!("no {name} in {authorization}"))
    };
    let (credential, signed_headers, signature) = (
        field("Credential")?,
        field("SignedHeaders")?,
        field("Signature")?,
    );
    let amz_date = header("x-amz-date")?;
    let date = &amz_date[..8];
    let scope = format!("{date}/{region}/bedrock/aws4_request");
    if credential != format!("{ACCESS_KEY}/{scope}") {
        return Err(format!(
            "credential {credential}, expected {ACCESS_KEY}/{scope}"
        ));
    }
    let age = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .abs_diff(epoch_seconds(amz_date)?);
    if age > 15 * 60 {
        return Err(format!("x-amz-date {amz_date} is {age} s from now"));
    }
    for required in ["host", "x-amz-date"] {
        if !signed_headers.split(';').any(|name| name == required) {
            return Err(format!("{required} is not signed: {signed_headers}"));
        }
    }
    let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
    // Every service but S3 encodes the already encoded path once more.
    let canonical_path: String = path
        .split('/')
        .map(|segment| {
            segment
                .bytes()
                .map(|byte| match byte {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        (byte as char).to_string()
                    }
                    _ => format!("%{byte:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/");
    let mut query: Vec<&str> = query.split('&').filter(|pair| !pair.is_empty()).collect();
    query.sort_unstable();
    let mut canonical_headers = String::new();
    for name in signed_headers.split(';') {
        let values: Vec<String> = request
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, value)| value.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header {name} was not sent"));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let canonical_request = format!(
        "{}\n{canonical_path}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        request.method,
        query.join("&"),
        sha256(&request.body)
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256(canonical_request.as_bytes())
    );
    let key = mac(format!("AWS4{secret}").as_bytes(), date);
    let key = mac(&key, region);
    let key = mac(&key, "bedrock");
    let key = mac(&key, "aws4_request");
    let expected = hex(&mac(&key, &string_to_sign));
    if signature != expected {
        return Err(format!(
            "signature {signature}, expected {expected} for:\n{canonical_request}"
        ));
    }
    Ok(signed_headers.to_owned())
}

/// `20261201T224747Z` as seconds since the epoch.
fn epoch_seconds(amz_date: &str) -> Result<u64, String> {
    let number = |range: std::ops::Range<usize>| {
        amz_date
            .get(range)
            .and_then(|digits| digits.parse::<i64>().ok())
            .ok_or(format!("x-amz-date {amz_date} is not YYYYMMDDTHHMMSSZ"))
    };
    let (year, month, day) = (number(0..4)?, number(4..6)?, number(6..8)?);
    let seconds = number(9..11)? * 3600 + number(11..13)? * 60 + number(13..15)?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + seconds).map_err(|error| error.to_string())
}

fn vertex_settings(server: &ModelServer, model: &str, location: &str) -> Value {
    json!({
        "model": "vertex",
        "models": {"vertex": {
            "provider": "vertex", "model": model, "project": "tandem-test-project",
            "location": location, "baseUrl": server.url(),
        }},
        "network": {"maxRetries": 0},
    })
}

/// The reply for a Vertex model request: Gemini's or Anthropic's recorded stream by publisher.
fn vertex_reply(request: &RecordedRequest) -> Reply {
    let case = if request.path.contains("/publishers/anthropic/") {
        "anthropic"
    } else {
        "gemini"
    };
    Reply::sse(std::fs::read(fixtures().join(format!("providers/{case}/text.sse"))).unwrap())
}

/// `data` in base64url without padding, as JWTs have it, decoded.
fn base64url(data: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not base64url: {data}"),
    };
    let bits: Vec<u8> = data.bytes().map(value).collect();
    bits.chunks(4)
        .flat_map(|chunk| {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, v)| n | (u32::from(*v) << (18 - 6 * i)));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes.into_iter().take(chunk.len() - 1).collect::<Vec<_>>()
        })
        .collect()
}

/// A service account key: the token Google's library signs itself is an RS256 JWT that the
/// key's public half verifies, issued by the account for the cloud-platform scope, current;
/// both publishers get it, each at its own path and in its own format (Gemini's body as is,
/// Anthropic's without `model` and with Vertex's version), and each answer is printed.
#[tokio::test]
async fn vertex_sends_a_service_accounts_signed_token_to_both_publishers() {
    let public_key =
        std::fs::read(fixtures().join("vertex/service_account_public_key.der")).unwrap();
    let credentials = fixtures().join("vertex/service_account.json");
    let credentials = credentials.to_str().unwrap();
    let cases = [
        (
            "gemini-2.5-flash",
            "europe-west4",
            "/v1/projects/tandem-test-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "Le crate compile sans erreur 🦀",
        ),
        (
            "claude-sonnet-4-5@20250929",
            "us-east5",
            "/v1/projects/tandem-test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict",
            "Le café est prêt 🦀",
        ),
    ];
    for (model, location, path, answer) in cases {
        let server = ModelServer::start().await;
        server.respond_with(vertex_reply);
        let folders = isolated(&vertex_settings(&server, model, location));
        let run = Run::of(
            ask(&folders, &[("GOOGLE_APPLICATION_CREDENTIALS", credentials)])
                .spawn()
                .unwrap(),
        )
        .await;
        assert_eq!(run.code, 0, "{model}: {run:#?}");
        assert!(run.stdout.contains(answer), "{model}: {run:#?}");
        let requests = server.requests();
        let request = &requests[0];
        assert_eq!(request.path, path);
        let token = request
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
            .expect("a bearer token");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "a JWT: {token}");
        let header: Value = serde_json::from_slice(&base64url(parts[0])).unwrap();
        assert_eq!(header["alg"], "RS256");
        assert_eq!(header["kid"], "0123456789abcdef0123456789abcdef01234567");
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            &public_key,
        )
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &base64url(parts[2]),
        )
        .expect("the token is signed with the service account's key");
        let claims: Value = serde_json::from_slice(&base64url(parts[1])).unwrap();
        assert_eq!(
            claims["iss"],
            "tandem-test@tandem-test-project.iam.gserviceaccount.com"
        );
        assert_eq!(
            claims["scope"],
            "https://www.googleapis.com/auth/cloud-platform"
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let expires = claims["exp"].as_u64().unwrap();
        assert!(
            expires > now && claims["iat"].as_u64().unwrap() <= now + 60,
            "{claims}"
        );
        let body = request.json();
        if model.starts_with("claude") {
            assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
            assert!(body.get("model").is_none(), "{body}");
            assert_eq!(body["stream"], true);
            assert_eq!(request.header("anthropic-version"), None);
        } else {
            assert!(
                body["contents"].is_array() && body["generationConfig"].is_object(),
                "{body}"
            );
        }
        assert!(!everything(&folders, &run).contains(token));
    }
}

/// An authorized user's credentials (what `gcloud auth application-default login` writes):
/// the refresh goes to the file's `token_uri` as an OAuth refresh grant, and the access token
/// it answers is what the model requests carry.
#[tokio::test]
async fn vertex_refreshes_an_authorized_users_token_and_sends_it() {
    let server = ModelServer::start().await;
    server.respond_with(|request| {
        if request.path == "/token" {
            Reply::json(
                200,
                r#"{"access_token": "ya29.tandem-test-access-token", "expires_in": 3599, "token_type": "Bearer", "scope": "https://www.googleapis.com/auth/cloud-platform"}"#,
            )
        } else {
            vertex_reply(request)
        }
    });
    let folders = isolated(&vertex_settings(&server, "gemini-2.5-pro", "global"));
    let credentials = folders.config.path().join("adc.json");
    std::fs::write(
        &credentials,
        json!({
            "type": "authorized_user",
            "client_id": "tandem-test.apps.googleusercontent.com",
            "client_secret": "tandem-test-client-5ecret",
            "refresh_token": "1//tandem-test-refresh-token",
            "token_uri": format!("{}/token", server.url()),
        })
        .to_string(),
    )
    .unwrap();
    let run = Run::of(
        ask(
            &folders,
            &[(
                "GOOGLE_APPLICATION_CREDENTIALS",
                credentials.to_str().unwrap(),
            )],
        )
        .spawn()
        .unwrap(),
    )
    .await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = server.requests();
    let grant = requests
        .iter()
        .find(|request| request.path == "/token")
        .expect("a token request");
    let grant = grant.json();
    assert_eq!(grant["grant_type"], "refresh_token");
    assert_eq!(grant["refresh_token"], "1//tandem-test-refresh-token");
    assert_eq!(grant["client_id"], "tandem-test.apps.googleusercontent.com");
    let model_requests: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|request| request.path != "/token")
        .collect();
    assert!(!model_requests.is_empty());
    for request in model_requests {
        assert_eq!(
            request.path,
            "/v1/projects/tandem-test-project/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request.header("authorization"),
            Some("Bearer ya29.tandem-test-access-token")
        );
    }
    let printed = everything(&folders, &run);
    for secret in [
        "ya29.tandem-test-access-token",
        "tandem-test-client-5ecret",
        "1//tandem-test-refresh-token",
    ] {
        assert!(!printed.contains(secret), "{secret} in:\n{printed}");
    }
}

/// `tandem models` describes Bedrock and Vertex models (region, project, location, where the
/// credentials come from) and sends them nothing: neither has a request that would say more.
#[tokio::test]
async fn tandem_models_describes_bedrock_and_vertex_without_asking_them() {
    let server = ModelServer::start().await;
    let folders = isolated(&json!({
        "model": "bedrock",
        "models": {
            "bedrock": {"provider": "bedrock", "model": MODEL, "region": "eu-central-1"},
            "vertex": {"provider": "vertex", "model": "claude-opus-4-1@20250805", "project": "acme-ai"},
            "nowhere": {"provider": "vertex"},
        },
    }));
    let mut command = folders.command(&["models"]);
    for name in AWS_VARIABLES.iter().chain(GOOGLE_VARIABLES) {
        command.env_remove(name);
    }
    command.env("AWS_CONFIG_FILE", folders.config.path().join("aws/config"));
    command.env(
        "AWS_SHARED_CREDENTIALS_FILE",
        folders.config.path().join("aws/credentials"),
    );
    let run = Run::of(command.spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    for line in [
        "* bedrock: bedrock us.anthropic.claude-sonnet-4-5-20250929-v1:0 at \
         https://bedrock-runtime.eu-central-1.amazonaws.com (region eu-central-1, AWS \
         credentials from the standard chain; context 200000 tokens (the model family's \
         maximum), output 64000 tokens, reasoning medium effort (the model family's default))",
        "  vertex: vertex (Messages) claude-opus-4-1@20250805 at \
         https://us-central1-aiplatform.googleapis.com (project acme-ai, location us-central1, \
         Google Application Default Credentials;",
        "  nowhere: vertex (generateContent) gemini-2.5-pro at \
         https://us-central1-aiplatform.googleapis.com (project not set,",
        "Bedrock is not asked here; requests are signed with the AWS credentials the standard \
         chain finds at the first request",
    ] {
        assert!(run.stdout.contains(line), "{line}\n{run:#?}");
    }
    assert_eq!(server.request_count(), 0);
}
