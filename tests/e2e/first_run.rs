//! A newcomer's first run: no key, no settings, and maybe no Ollama. With nothing configured
//! Tandem falls back to Ollama on this machine; when nothing listens there, `tandem ask` fails at
//! once (no retries) with what was tried and how to set Tandem up, an editor shows that once per
//! server, and `tandem models` says what it found and exits 1. When Ollama answers, the context
//! window Tandem uses is the one Ollama runs the model with, asked of a scripted server that
//! impersonates Ollama's native API; a request that does not fit it is refused, not cut.
//!
//! The fallback's address follows `OLLAMA_HOST`, as the `ollama` command does, which is how
//! these tests point it at a port nothing listens on, or at the scripted server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tandem_providers::settings::Settings;
use tandem_providers::{
    CancellationToken, ChatRequest, ContextSource, Message, Model, OllamaContext, Origin,
    ProviderError, StreamEvent,
};
use tandem_test_support::{FakeEditor, ModelServer, Reply};
use tempfile::TempDir;

use super::headless::{self, Run};

/// A port on 127.0.0.1 that nothing listens on (it was free a moment ago).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// An empty user settings directory (unless `settings`), an empty workspace, a state directory.
struct Dirs {
    config: TempDir,
    workspace: TempDir,
    state: TempDir,
}

impl Dirs {
    fn new(settings: Option<Value>) -> Dirs {
        let config = tempfile::tempdir().unwrap();
        if let Some(settings) = settings {
            std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
        }
        Dirs {
            config,
            workspace: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// `tandem ARGS…` with no key in the environment and Ollama at `ollama_host`.
    async fn tandem(&self, ollama_host: &str, args: &[&str]) -> Run {
        let mut command = headless::tandem(self.config.path(), self.state.path());
        command
            .args(args)
            .env("OLLAMA_HOST", ollama_host)
            .env_remove("OLLAMA_CONTEXT_LENGTH");
        Run::of(command.spawn().unwrap()).await
    }

    async fn models(&self, ollama_host: &str) -> Run {
        let workspace = self.workspace.path().to_str().unwrap().to_owned();
        self.tandem(ollama_host, &["models", "--workspace", &workspace])
            .await
    }

    fn settings_file(&self) -> String {
        self.config
            .path()
            .join("settings.json")
            .display()
            .to_string()
    }
}

fn assert_has(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
}

/// The issue's report: `tandem ask "hi"` with nothing set up retried "Connection refused" five
/// times and failed after ~33 s with a raw network error.
#[tokio::test]
async fn ask_with_nothing_set_up_fails_at_once_and_says_how_to_set_up() {
    let dirs = Dirs::new(None);
    let port = closed_port();
    let workspace = dirs.workspace.path().to_str().unwrap().to_owned();
    let started = Instant::now();
    let run = dirs
        .tandem(
            &format!("127.0.0.1:{port}"),
            &["ask", "hi", "--workspace", &workspace],
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    run.assert_stderr_has(&[
        &format!(
            "tandem: Tandem is not set up: nothing answers at http://127.0.0.1:{port}/v1 \
             (connection refused). Tandem looks for Ollama there because no model is \
             configured and no API key is set."
        ),
        "set ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_API_KEY",
        // Issue 38: it left out the context length the README says is needed, and where to
        // get Ollama.
        "start Ollama (`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`: Tandem needs a context \
         window of 16384 tokens or more; get Ollama at https://ollama.com/download) and fetch \
         the model (`ollama pull qwen3-coder`)",
        &format!(
            "choose a model in {} (see docs/configuration.md)",
            dirs.settings_file()
        ),
        "run `tandem models` to check",
    ]);
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    // Nothing to resume: no "session … saved" line, and no session file left behind.
    assert!(!run.stderr.contains("saved"), "{}", run.stderr);
    let saved: Vec<_> = walk(dirs.state.path())
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert!(saved.is_empty(), "{saved:?}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A configured model on this machine whose server is not running fails as fast, naming the
/// model; retries are for servers that are there.
#[tokio::test]
async fn a_local_model_whose_server_is_down_is_not_retried() {
    let port = closed_port();
    let dirs = Dirs::new(Some(json!({
        "model": "local",
        "models": {"local": {"provider": "openai", "model": "m", "baseUrl": format!("http://localhost:{port}/v1")}},
        "network": {"maxRetries": 5, "retryInitialDelayMs": 2000},
    })));
    let workspace = dirs.workspace.path().to_str().unwrap().to_owned();
    let started = Instant::now();
    let run = dirs
        .tandem("127.0.0.1:1", &["ask", "hi", "--workspace", &workspace])
        .await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    run.assert_stderr_has(&[&format!(
        "tandem: Tandem is not set up: nothing answers at http://localhost:{port}/v1 (connection \
         refused), the address of model `local` (openai m). Start the server, or correct the \
         model's `baseUrl` in the settings"
    )]);
}

/// The newcomer's review: `"aproval"` and `"maxTurn"` passed `tandem models` and `tandem ask`
/// without a word, and nested typos (`approval.allows`, `"mode": "autoEdit"`,
/// `sessions.persit`) passed `tandem models` and failed `tandem ask` without naming the file.
#[tokio::test]
async fn misspelled_settings_fail_models_and_ask_naming_the_file_and_the_likely_key() {
    let nowhere = format!("127.0.0.1:{}", closed_port());
    let cases = [
        (
            json!({"aproval": {"mode": "yolo"}}),
            "unknown setting `aproval`; did you mean `approval`?",
        ),
        (
            json!({"maxTurn": 5}),
            "unknown setting `maxTurn`; did you mean `maxTurns`?",
        ),
        (
            json!({"modle": "x"}),
            "unknown setting `modle`; did you mean `model`?",
        ),
        (
            json!({"approval": {"allows": ["shell:ls"]}}),
            "unknown setting `approval.allows`; did you mean `allow`?",
        ),
        (
            json!({"approval": {"mode": "autoEdit"}}),
            "`approval.mode`: unknown value \"autoEdit\"; did you mean `auto_edit`?",
        ),
        (
            json!({"sessions": {"persit": false}}),
            "unknown setting `sessions.persit`; did you mean `persist`?",
        ),
        (
            json!({"network": {"maxRetry": 1}}),
            "unknown setting `network.maxRetry`; did you mean `maxRetries`?",
        ),
    ];
    for (settings, expected) in cases {
        let dirs = Dirs::new(Some(settings.clone()));
        let expected = format!("{}: {expected}", dirs.settings_file());
        let run = dirs.models(&nowhere).await;
        assert_eq!(run.code, 1, "{settings}: {run:#?}");
        assert_has(
            &run.stdout,
            &[&format!("The settings cannot be used: {expected}")],
        );
        let workspace = dirs.workspace.path().to_str().unwrap().to_owned();
        let run = dirs
            .tandem(&nowhere, &["ask", "hi", "--workspace", &workspace])
            .await;
        assert_eq!(run.code, 2, "{settings}: {run:#?}");
        run.assert_stderr_has(&[&format!("tandem: {expected}")]);
    }
}

/// The newcomer's review: the README's project file chose the model, which an untrusted folder
/// may not, and the error that followed did not say why the model was not the one chosen.
#[tokio::test]
async fn a_model_chosen_by_an_untrusted_project_is_named_when_the_fallback_fails() {
    let nowhere = format!("127.0.0.1:{}", closed_port());
    let dirs = Dirs::new(None);
    let project = dirs.workspace.path();
    std::fs::create_dir(project.join(".tandem")).unwrap();
    std::fs::write(
        project.join(".tandem/settings.json"),
        r#"{"model": "local", "models": {"local": {"provider": "openai", "baseUrl": "http://localhost:8080/v1"}}}"#,
    )
    .unwrap();
    let workspace = project.to_str().unwrap().to_owned();
    let run = dirs
        .tandem(&nowhere, &["ask", "hi", "--workspace", &workspace])
        .await;
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stderr_has(&[
        "Tandem is not set up: nothing answers at",
        ".tandem/settings.json sets `model`, which was ignored because this folder is not trusted",
        &format!(
            "add the folder to `trustedFolders` in {}",
            dirs.settings_file()
        ),
    ]);
    let run = dirs.models(&nowhere).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert_has(
        &run.stdout,
        &["Note: ", "add the folder to `trustedFolders`"],
    );
}

/// What the scripted Ollama says: the model's `num_ctx` parameter, the context length it loads
/// the model with (`/api/ps` lists it once `/api/generate` loaded it), whether it has the model.
#[derive(Clone, Copy)]
struct FakeOllama {
    num_ctx: Option<u64>,
    loads_with: Option<u64>,
    has_model: bool,
}

/// A scripted server that answers as Ollama 0.12.6 serving `qwen3-coder` would.
async fn fake_ollama(ollama: FakeOllama) -> ModelServer {
    let server = ModelServer::start().await;
    impersonate_ollama(&server, ollama);
    server
}

/// The scripted server's address as `OLLAMA_HOST` gives it (no scheme).
fn ollama_host(server: &ModelServer) -> String {
    server.url().trim_start_matches("http://").to_owned()
}

/// `server` answers as Ollama 0.12.6 serving `qwen3-coder` would.
fn impersonate_ollama(server: &ModelServer, ollama: FakeOllama) {
    let loaded = Arc::new(AtomicBool::new(false));
    server.respond_with(move |request| {
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/api/version") => Reply::json(200, r#"{"version": "0.12.6"}"#),
            ("GET", "/api/ps") => {
                let models = match ollama.loads_with {
                    Some(tokens) if loaded.load(Ordering::SeqCst) => json!([{
                        "name": "qwen3-coder:latest", "model": "qwen3-coder:latest",
                        "size_vram": 19_000_000_000_u64, "context_length": tokens,
                    }]),
                    _ => json!([]),
                };
                Reply::json(200, &json!({ "models": models }).to_string())
            }
            ("POST", "/api/show") if !ollama.has_model => {
                Reply::json(404, r#"{"error": "model 'qwen3-coder' not found"}"#)
            }
            ("POST", "/api/show") => {
                assert_eq!(request.json(), json!({"model": "qwen3-coder"}));
                let mut parameters = "stop \"<|im_end|>\"\ntemperature 0.7".to_owned();
                if let Some(tokens) = ollama.num_ctx {
                    parameters.push_str(&format!("\nnum_ctx {tokens}"));
                }
                // `model_info` has the family's maximum, which is not what Ollama runs.
                let body = json!({
                    "parameters": parameters,
                    "model_info": {"general.architecture": "qwen3moe", "qwen3moe.context_length": 262144},
                });
                Reply::json(200, &body.to_string())
            }
            ("POST", "/api/generate") => {
                loaded.store(true, Ordering::SeqCst);
                Reply::json(
                    200,
                    r#"{"model": "qwen3-coder", "response": "", "done": true, "done_reason": "load"}"#,
                )
            }
            ("POST", "/v1/chat/completions") => Reply::openai_text("Hello from Ollama."),
            _ => Reply::json(404, r#"{"error": "not found"}"#),
        }
    });
}

fn paths(server: &ModelServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// The fallback model, resolved as the front ends do, with Ollama at `server`.
fn fallback_model(server: &ModelServer, context_length: Option<&str>) -> Model {
    let host = ollama_host(server);
    let context_length = context_length.map(str::to_owned);
    let env = move |name: &str| match name {
        "OLLAMA_HOST" => Some(host.clone()),
        "OLLAMA_CONTEXT_LENGTH" => context_length.clone(),
        _ => None,
    };
    let config = Settings::default().resolve_model(None, &env).unwrap();
    assert_eq!(config.origin, Origin::LocalFallback);
    assert_eq!(config.base_url, format!("{}/v1", server.url()));
    Model::new(config).unwrap()
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        system: "You are Tandem.".into(),
        messages: vec![Message::user(text)],
        ..ChatRequest::default()
    }
}

async fn collect(model: &Model, request: ChatRequest) -> Vec<Result<StreamEvent, ProviderError>> {
    model
        .stream(request, CancellationToken::new())
        .collect()
        .await
}

#[tokio::test]
async fn the_window_is_what_ollama_runs_the_loaded_model_with() {
    let server = fake_ollama(FakeOllama {
        num_ctx: Some(8192),
        loads_with: Some(40960),
        has_model: true,
    })
    .await;
    let model = fallback_model(&server, Some("16384"));
    assert_eq!(
        model.config().context_window,
        262_144,
        "the family's maximum until asked"
    );
    let events = collect(&model, request("hi")).await;
    assert!(
        matches!(events.last(), Some(Ok(StreamEvent::Finished { .. }))),
        "{events:#?}"
    );
    assert_eq!(
        paths(&server),
        [
            "GET /api/ps",
            "POST /api/show",
            "POST /api/generate",
            "GET /api/ps",
            "POST /v1/chat/completions"
        ]
    );
    let config = model.config();
    assert_eq!(
        (config.context_window, config.context_source),
        (40960, ContextSource::Ollama(OllamaContext::Loaded))
    );
    // Asked once: clones share the answer.
    let clone = model.clone();
    collect(&clone, request("again")).await;
    assert_eq!(paths(&server).len(), 6);
    assert_eq!(paths(&server)[5], "POST /v1/chat/completions");
}

/// An Ollama too old to list the context length of loaded models: the model's `num_ctx`, else
/// `OLLAMA_CONTEXT_LENGTH`, else 4096; a request larger than that is refused with the fix, and
/// never reaches Ollama to be cut.
#[tokio::test]
async fn without_a_loaded_length_the_parameters_then_the_environment_then_4096() {
    for (num_ctx, environment, expected) in [
        (Some(65536), Some("16384"), (65536, OllamaContext::NumCtx)),
        (None, Some("16384"), (16384, OllamaContext::Environment)),
        (None, None, (4096, OllamaContext::Default)),
    ] {
        let server = fake_ollama(FakeOllama {
            num_ctx,
            loads_with: None,
            has_model: true,
        })
        .await;
        let model = fallback_model(&server, environment);
        let resolved = model.resolve_context_window().await.unwrap();
        assert_eq!(
            (resolved.context_window, resolved.context_source),
            (expected.0, ContextSource::Ollama(expected.1))
        );
    }

    // 4096 tokens: Tandem's first request (~7,000 tokens) does not fit.
    let server = fake_ollama(FakeOllama {
        num_ctx: None,
        loads_with: None,
        has_model: true,
    })
    .await;
    let model = fallback_model(&server, None);
    let events = collect(&model, request(&"word ".repeat(6000))).await;
    let [Err(error)] = events.as_slice() else {
        panic!("{events:#?}")
    };
    assert_eq!(error.kind(), "not_set_up");
    assert_has(
        &error.to_string(),
        &[
            "Tandem is not set up: this request is about 7504 tokens, but Ollama runs \
             qwen3-coder with a context window of 4096 tokens (Ollama's default when nothing \
             sets it) and would silently cut it.",
            "`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`",
            "`PARAMETER num_ctx 32768`",
            "set `contextWindow` to the same number",
        ],
    );
    assert!(
        !paths(&server).contains(&"POST /v1/chat/completions".to_owned()),
        "{:?}",
        paths(&server)
    );
}

#[tokio::test]
async fn a_context_window_in_the_settings_is_not_asked_of_ollama() {
    let server = fake_ollama(FakeOllama {
        num_ctx: None,
        loads_with: None,
        has_model: true,
    })
    .await;
    let host = ollama_host(&server);
    let settings: Settings = serde_json::from_value(json!({"model": "local", "models": {"local": {
        "provider": "openai", "model": "qwen3-coder", "baseUrl": format!("{}/v1", server.url()),
        "contextWindow": 65536}}}))
    .unwrap();
    let env = move |name: &str| (name == "OLLAMA_HOST").then(|| host.clone());
    let config = settings.resolve_model(None, &env).unwrap();
    assert!(config.ollama.is_some());
    let model = Model::new(config).unwrap();
    collect(&model, request("hi")).await;
    assert_eq!(paths(&server), ["POST /v1/chat/completions"]);
    assert_eq!(model.config().context_source, ContextSource::Settings);
}

#[tokio::test]
async fn ollama_without_the_model_says_to_pull_it() {
    let server = fake_ollama(FakeOllama {
        num_ctx: None,
        loads_with: None,
        has_model: false,
    })
    .await;
    let model = fallback_model(&server, None);
    let events = collect(&model, request("hi")).await;
    let [Err(error)] = events.as_slice() else {
        panic!("{events:#?}")
    };
    assert_eq!(
        error.to_string(),
        format!(
            "Tandem is not set up: Ollama at {} does not have the model qwen3-coder: fetch it \
             with `ollama pull qwen3-coder` (`ollama list` shows the models it has), or choose \
             another model in the settings (see docs/configuration.md)",
            server.url()
        )
    );
}

fn models_line(run: &Run) -> &str {
    run.stdout
        .lines()
        .find(|line| line.starts_with("* "))
        .unwrap_or_else(|| panic!("no model in use:\n{}", run.stdout))
}

/// `tandem models` used to list the fallback with "OPENAI_API_KEY not set" and exit 0 whether or
/// not anything answered.
#[tokio::test]
async fn models_says_what_the_fallback_is_and_whether_ollama_answers() {
    let dirs = Dirs::new(None);

    let port = closed_port();
    let run = dirs.models(&format!("127.0.0.1:{port}")).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        models_line(&run),
        format!(
            "* default: openai (Chat Completions) qwen3-coder at http://127.0.0.1:{port}/v1 \
             (Ollama, no key needed on this machine; context as Ollama runs it (asked when the \
             model is used), output 65536 tokens)"
        )
    );
    assert_has(
        &run.stdout,
        &[
            "Tandem uses `default`, its fallback when no model is configured and no API key is \
             set: Ollama on this machine.",
            &format!("Tandem is not set up: nothing answers at http://127.0.0.1:{port}/v1"),
            "`ollama pull qwen3-coder`",
        ],
    );
    assert!(
        !run.stdout.contains("OPENAI_API_KEY not set"),
        "{}",
        run.stdout
    );

    let server = fake_ollama(FakeOllama {
        num_ctx: Some(40960),
        loads_with: Some(40960),
        has_model: true,
    })
    .await;
    let host = ollama_host(&server);
    let run = dirs.models(&host).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_has(
        models_line(&run),
        &["(Ollama, no key needed on this machine; context 40960 tokens (the model's num_ctx parameter), output 65536 tokens)"],
    );
    assert_has(
        &run.stdout,
        &[
            &format!("Ollama 0.12.6 answers at {}.", server.url()),
            "Ollama runs qwen3-coder with a context window of 40960 tokens (the model's num_ctx \
             parameter).",
        ],
    );
    assert!(
        !paths(&server).contains(&"POST /api/generate".to_owned()),
        "tandem models loads no model: {:?}",
        paths(&server)
    );

    let server = fake_ollama(FakeOllama {
        num_ctx: None,
        loads_with: None,
        has_model: true,
    })
    .await;
    let host = ollama_host(&server);
    let run = dirs.models(&host).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_has(
        &run.stdout,
        &[
            "context 4096 tokens (Ollama's default when nothing sets it)",
            "The model is not loaded, so this is a guess",
            "That is too small for Tandem",
            "`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`",
        ],
    );

    let server = fake_ollama(FakeOllama {
        num_ctx: None,
        loads_with: None,
        has_model: false,
    })
    .await;
    let host = ollama_host(&server);
    let run = dirs.models(&host).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert_has(
        &run.stdout,
        &["does not have the model qwen3-coder: fetch it with `ollama pull qwen3-coder`"],
    );
}

/// What `tandem models` lists for configured models, and its exit code for each way the model
/// in use can fail to be set up.
#[tokio::test]
async fn models_lists_the_settings_and_exits_1_when_the_model_cannot_be_set_up() {
    let nowhere = format!("127.0.0.1:{}", closed_port());
    let dirs = Dirs::new(Some(json!({"model": "demo", "models": {
        "demo": {"provider": "replay", "script": "demo.jsonl"},
        "claude": {"provider": "anthropic"}}})));
    std::fs::write(
        dirs.config.path().join("demo.jsonl"),
        "{\"text\": \"hi\"}\n",
    )
    .unwrap();
    let run = dirs.models(&nowhere).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_has(
        &run.stdout,
        &[
            "* demo: replay replay at ",
            "(no key needed; context 32768 tokens (a guess for a model Tandem does not know)",
            "  claude: anthropic claude-sonnet-4-5 at https://api.anthropic.com \
             (ANTHROPIC_API_KEY not set; context 200000 tokens (the model family's maximum)",
            "Tandem uses `demo`.",
        ],
    );

    // A workspace the user has not trusted cannot choose the model.
    let workspace = dirs.workspace.path();
    std::fs::create_dir(workspace.join(".tandem")).unwrap();
    std::fs::write(
        workspace.join(".tandem/settings.json"),
        r#"{"model": "claude"}"#,
    )
    .unwrap();
    let run = dirs.models(&nowhere).await;
    assert_has(
        &run.stdout,
        &[
            "ignored `model` because this workspace is not trusted",
            "Tandem uses `demo`.",
        ],
    );

    // Trusted, it chooses a hosted model whose key is not set.
    write_user_settings(
        &dirs,
        json!({"model": "demo", "trustedFolders": [workspace], "models": {
            "demo": {"provider": "replay", "script": "demo.jsonl"},
            "claude": {"provider": "anthropic"}}}),
    );
    let run = dirs.models(&nowhere).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert_has(
        &run.stdout,
        &[
            "The model in use cannot be set up: configuration error: model `claude` (anthropic \
           claude-sonnet-4-5) has no API key: set ANTHROPIC_API_KEY",
        ],
    );

    std::fs::write(workspace.join(".tandem/settings.json"), "{oops").unwrap();
    let run = dirs.models(&nowhere).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert_has(
        &run.stdout,
        &[
            "The settings cannot be used: ",
            ".tandem/settings.json is not valid JSON",
        ],
    );

    // A bad log level is a usage error, as for every other command.
    let workspace = workspace.to_str().unwrap().to_owned();
    let run = dirs
        .tandem(
            &nowhere,
            &["--log-level", "loud[x", "models", "--workspace", &workspace],
        )
        .await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["invalid log level"]);
}

fn write_user_settings(dirs: &Dirs, settings: Value) {
    std::fs::write(
        dirs.config.path().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
}

/// Settings for an editor whose model is a local server that is not running.
fn nothing_running() -> (Value, u16) {
    let port = closed_port();
    let settings = json!({
        "model": "local",
        "models": {"local": {"provider": "openai", "model": "m", "baseUrl": format!("http://127.0.0.1:{port}/v1")}},
        "network": {"maxRetries": 5},
    });
    (settings, port)
}

async fn prompt(editor: &FakeEditor, text: &str) -> String {
    let started = editor
        .request("tandem/prompt", json!({"text": text}))
        .await
        .unwrap();
    started["turnId"].as_str().unwrap().to_owned()
}

fn says_not_set_up(message: &Value, method: &str) -> bool {
    message["method"] == method
        && message["params"]["message"]
            .as_str()
            .is_some_and(|text| text.starts_with("Tandem is not set up: nothing answers at"))
}

/// In the editor every turn still ends with the error, but the message box pops up once per
/// server, not on every turn; later turns put it in the log.
#[tokio::test]
async fn an_editor_shows_not_set_up_once_per_server() {
    let (settings, port) = nothing_running();
    let editor = FakeEditor::plain().settings(settings).start().await;

    let first = prompt(&editor, "hi").await;
    let end = editor.wait_turn_finished(&first).await;
    assert_has(
        end["message"].as_str().unwrap(),
        &[&format!(
            "Failed: Tandem is not set up: nothing answers at http://127.0.0.1:{port}/v1"
        )],
    );
    let shown = editor
        .wait_for("the not-set-up message", |m| {
            says_not_set_up(m, "window/showMessage")
        })
        .await;
    assert_eq!(shown["params"]["type"], 2, "a warning: {shown}");

    let after_first = editor.received_count();
    let second = prompt(&editor, "hello?").await;
    let end = editor.wait_turn_finished(&second).await;
    assert_has(end["message"].as_str().unwrap(), &["Tandem is not set up"]);
    editor
        .wait_for_from(after_first, "the message in the log", |m| {
            says_not_set_up(m, "window/logMessage")
        })
        .await;
    let shown = editor
        .received()
        .into_iter()
        .filter(|m| says_not_set_up(m, "window/showMessage"))
        .count();
    assert_eq!(shown, 1, "{:#?}", editor.received());
    assert!(
        editor.received_params("$/progress").len() >= 4,
        "each turn still has its progress"
    );
}

/// A client that follows events gets the error in every turn's `turnFinished`, as before.
#[tokio::test]
async fn every_turn_of_a_rich_client_ends_with_the_error() {
    let (settings, port) = nothing_running();
    let editor = FakeEditor::rich().settings(settings).start().await;
    for text in ["hi", "hello?"] {
        let turn = prompt(&editor, text).await;
        let finished = editor.wait_turn_finished(&turn).await;
        assert_eq!(finished["stopReason"], "error", "{finished}");
        assert!(
            finished["message"].as_str().unwrap().starts_with(&format!(
                "Tandem is not set up: nothing answers at http://127.0.0.1:{port}/v1 \
                 (connection refused), the address of model `local` (openai m)."
            )),
            "{finished}"
        );
        let events = editor.events_for_turn(&turn);
        assert!(
            !events.iter().any(|event| event["type"] == "retrying"),
            "{events:#?}"
        );
    }
}

/// A hosted provider's server as `tandem models` sees it: it accepts the key `sk-good` only,
/// and knows `known` models (OpenAI's list, or Anthropic's `GET /v1/models/{id}`).
fn hosted_server(server: &ModelServer, known: &'static [&'static str]) {
    server.respond_with(move |request| {
        let key = request
            .header("authorization")
            .map(|value| value.trim_start_matches("Bearer "))
            .or(request.header("x-api-key"));
        if key != Some("sk-good") {
            return Reply::json(
                401,
                r#"{"error": {"type": "authentication_error", "message": "Incorrect API key provided"}}"#,
            );
        }
        let list = json!({"data": known.iter().map(|id| json!({"id": id})).collect::<Vec<_>>()});
        match request.path.strip_prefix("/v1/models") {
            Some("") => Reply::json(200, &list.to_string()),
            Some(id) if known.contains(&id.trim_start_matches('/')) => {
                Reply::json(200, &json!({"id": id.trim_start_matches('/')}).to_string())
            }
            _ => Reply::json(404, r#"{"error": {"type": "not_found_error", "message": "model not found"}}"#),
        }
    });
}

/// Issue 38: `tandem models` checked neither the key nor the model: a refused key printed "The
/// server answers … (HTTP 401 for GET /models)" and exited 0, and so did a model the server
/// lacks; both then failed in `ask`. It now asks with the key, as a model request would, and
/// exits 1 when the key is refused or the model is not the server's.
#[tokio::test]
async fn models_passed_a_refused_key_and_a_model_the_server_lacks() {
    let server = ModelServer::start().await;
    hosted_server(&server, &["gpt-5", "gpt-5-mini", "claude-sonnet-4-5"]);
    let cases = [
        (
            "openai",
            "gpt-5",
            "sk-good",
            0,
            "accepts the key and has the model gpt-5",
        ),
        (
            "openai",
            "gpt-5",
            "sk-bad",
            1,
            "refused the key in TANDEM_TEST_KEY: HTTP 401: Incorrect API key provided",
        ),
        (
            "openai",
            "gpt-5-mni",
            "sk-good",
            1,
            "has no model `gpt-5-mni`; did you mean `gpt-5-mini`?",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            "sk-good",
            0,
            "accepts the key and has the model claude-sonnet-4-5",
        ),
        (
            "anthropic",
            "claude-sonet-4-5",
            "sk-good",
            1,
            "has no model `claude-sonet-4-5`; did you mean `claude-sonnet-4-5`?",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            "sk-bad",
            1,
            "refused the key in TANDEM_TEST_KEY",
        ),
    ];
    for (provider, model, key, code, expected) in cases {
        let dirs = Dirs::new(Some(json!({"model": "hosted", "models": {"hosted": {
            // Anthropic's base URL is the host; the others' include the `/v1`.
            "provider": provider, "model": model,
            "baseUrl": if provider == "anthropic" { server.url() } else { format!("{}/v1", server.url()) },
            "apiKeyEnv": "TANDEM_TEST_KEY",
        }}})));
        let workspace = dirs.workspace.path().to_str().unwrap().to_owned();
        let mut command = headless::tandem(dirs.config.path(), dirs.state.path());
        command
            .args(["models", "--workspace", &workspace])
            .env("TANDEM_TEST_KEY", key);
        let run = Run::of(command.spawn().unwrap()).await;
        assert_eq!(run.code, code, "{provider} {model} {key}: {run:#?}");
        assert_has(&run.stdout, &[expected]);
        assert!(
            !run.stdout.contains(key),
            "the key was shown: {}",
            run.stdout
        );
    }
}

/// Issue 38: offline, with a hosted key, `tandem models` said "no answer within 2s" when the
/// name lookup had failed in a tenth of a second. A name that cannot resolve (`.invalid` never
/// does) is said to be one, and a remote server that cannot be reached stays a warning.
#[tokio::test]
async fn models_said_no_answer_within_2s_when_the_name_did_not_resolve() {
    let dirs = Dirs::new(Some(json!({"model": "hosted", "models": {"hosted": {
        "provider": "anthropic", "baseUrl": "https://api.tandem-test.invalid",
        "apiKeyEnv": "TANDEM_TEST_KEY",
    }}})));
    let workspace = dirs.workspace.path().to_str().unwrap().to_owned();
    let mut command = headless::tandem(dirs.config.path(), dirs.state.path());
    command
        .args(["models", "--workspace", &workspace])
        .env("TANDEM_TEST_KEY", "sk-test");
    let run = Run::of(command.spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_has(
        &run.stdout,
        &[
            "warning: cannot reach https://api.tandem-test.invalid (",
            "the name api.tandem-test.invalid could not be resolved (no network, or a typo in the \
             model's `baseUrl`)",
        ],
    );
    assert!(!run.stdout.contains("within"), "{}", run.stdout);
}
