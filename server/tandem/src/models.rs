//! `tandem models`: where the settings come from, each model as it resolves, and whether the one
//! in use can be set up: its key, whether anything answers at its address, and for Ollama
//! whether it has the model and with what context window it runs it; for any other server,
//! whether it accepts the key and lists the model (one cheap authenticated `GET …/models`);
//! Bedrock and Vertex AI, which have no such request, are described and not asked. The
//! exit code is 0 when the model in use looks usable and 1 when it cannot be set up (settings
//! that cannot be read, a missing or refused key, a model the server lacks, nothing answering at
//! a local address, Ollama without the model), so that a script or a newcomer can check a setup
//! with it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tandem_agent::settings::AgentSettings;
use tandem_providers::settings::{user_settings_path, workspace_settings_path, Loaded};
use tandem_providers::{
    ollama, ContextSource, Model, ModelConfig, OllamaContext, Origin, ProviderError, ProviderKind,
    ReasoningSource,
};

/// How long each question to the model's server may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `tandem models` for `workspace` (default: the current directory); the exit code. A
/// workspace that is not a directory is a usage error (exit 2), as it is for `tandem ask`.
pub fn run(workspace: Option<PathBuf>) -> Result<i32> {
    let workspace = crate::ask::workspace_root(workspace)?;
    let env = |name: &str| std::env::var(name).ok();
    let usable = report(&workspace, &env, &mut io::stdout().lock())?;
    Ok(if usable { 0 } else { 1 })
}

/// Writes the report to `out`; whether the model in use can be set up.
fn report(
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut impl Write,
) -> Result<bool> {
    let user_file = user_settings_path();
    let workspace_file = workspace_settings_path(workspace);
    for path in user_file.iter().chain([&workspace_file]) {
        let state = if path.exists() { "" } else { " (none)" };
        writeln!(out, "settings: {}{state}", path.display())?;
    }
    let loaded = match Loaded::load(user_file.as_deref(), Some(workspace)) {
        Ok(loaded) => loaded,
        Err(error) => {
            writeln!(out, "\nThe settings cannot be used: {error}")?;
            return Ok(false);
        }
    };
    for warning in &loaded.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    // Every section, not only the models': a typo anywhere would stop `tandem ask`.
    if let Err(error) = AgentSettings::from_loaded(&loaded) {
        writeln!(out, "\nThe settings cannot be used: {error}")?;
        return Ok(false);
    }
    let settings = &loaded.settings;
    let mut chosen = loaded.resolve_model(None, env);
    // The model in use is set up and its server asked before the list is written, so that its
    // line shows the context window its server reported.
    let (setup, check) = match &mut chosen {
        Ok(config) => {
            let setup = Model::new(config.clone()).map(drop);
            let check = match (&setup, config.provider) {
                (Ok(()), ProviderKind::OpenAi | ProviderKind::Anthropic | ProviderKind::Gemini) => {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("could not start the async runtime")?;
                    let check = runtime.block_on(ollama::check_server(config, CHECK_TIMEOUT));
                    if let Ok(ollama::ServerCheck {
                        window: Some((tokens, source)),
                        ..
                    }) = &check
                    {
                        config.context_window = *tokens;
                        config.context_source = ContextSource::Ollama(*source);
                    }
                    Some(check)
                }
                _ => None,
            };
            (Some(setup), check)
        }
        Err(_) => (None, None),
    };

    writeln!(out)?;
    let in_use = chosen.as_ref().ok().map(|config| config.id.as_str());
    if settings.models.is_empty() {
        // Nothing configured: the default the environment picks is the only model.
        if let Ok(config) = &chosen {
            writeln!(out, "* {}", describe(config))?;
        }
    } else {
        for id in settings.models.keys() {
            let line = match &chosen {
                Ok(config) if in_use == Some(id.as_str()) => {
                    format!("* {}", describe(config))
                }
                _ => match settings.resolve_model(Some(id), env) {
                    Ok(config) => format!("  {}", describe(&config)),
                    Err(error) => format!("  {id}: cannot be used: {error}"),
                },
            };
            writeln!(out, "{line}")?;
        }
    }
    writeln!(out)?;

    let config = match chosen {
        Ok(config) => config,
        Err(error) => {
            writeln!(out, "The model in use cannot be set up: {error}")?;
            return Ok(false);
        }
    };
    match config.origin {
        Origin::Chosen => writeln!(out, "Tandem uses `{}`.", config.id)?,
        Origin::KeyInEnvironment => writeln!(
            out,
            "Tandem uses `{}`: no model is configured, and {} is set.",
            config.id,
            config.api_key_env.as_deref().unwrap_or("its key variable")
        )?,
        Origin::LocalFallback => writeln!(
            out,
            "Tandem uses `{}`, its fallback when no model is configured and no API key is set: \
             Ollama on this machine.",
            config.id
        )?,
    }
    if let Some(note) = &config.setup_note {
        writeln!(out, "Note: {note}.")?;
    }
    if let Some(Err(error)) = setup {
        writeln!(out, "The model in use cannot be set up: {error}")?;
        return Ok(false);
    }
    if let Some(note) = cloud_note(&config) {
        writeln!(out, "{note}")?;
    }
    match check {
        None => Ok(true),
        Some(Ok(check)) => {
            writeln!(out, "{}.", check.answered)?;
            if let Some((tokens, source)) = check.window {
                writeln!(out, "{}", window_note(&config, tokens, source))?;
            }
            Ok(true)
        }
        // Its message says what was tried and what to do.
        Some(Err(error @ ProviderError::NotSetUp { .. })) => {
            writeln!(out, "{error}")?;
            Ok(false)
        }
        // The key was refused, or the server lacks the model: `ask` would fail the same way.
        Some(Err(
            error @ (ProviderError::Authentication { .. } | ProviderError::Config { .. }),
        )) => {
            writeln!(out, "The model in use cannot be set up: {error}")?;
            Ok(false)
        }
        Some(Err(error)) if ollama::is_local(&config.base_url) => {
            writeln!(
                out,
                "The model in use cannot be set up: nothing usable answers at {}: {error}",
                config.base_url
            )?;
            Ok(false)
        }
        Some(Err(error)) => {
            // Another machine may be back by the time Tandem runs, so this is only a warning.
            writeln!(
                out,
                "warning: cannot reach {} ({error}); Tandem retries when it runs, but check the \
                 network and the model's `baseUrl`.",
                config.base_url,
            )?;
            Ok(true)
        }
    }
}

/// One model's line: name, provider, model, where, key, limits.
fn describe(config: &ModelConfig) -> String {
    let place = match &config.script {
        Some(script) => script.display().to_string(),
        None => config.base_url.clone(),
    };
    let key = match (&config.api_key_env, &config.api_key) {
        (_, None) if config.provider == ProviderKind::Bedrock => {
            let region = match &config.region {
                Some(region) => format!("region {region}"),
                None => "no region".to_owned(),
            };
            format!("{region}, AWS credentials from the standard chain")
        }
        _ if config.provider == ProviderKind::Vertex => format!(
            "project {}, location {}, Google Application Default Credentials",
            config.project.as_deref().unwrap_or("not set"),
            config.location.as_deref().unwrap_or("not set")
        ),
        (Some(variable), Some(_)) if config.provider == ProviderKind::Bedrock => format!(
            "region {}, Bedrock API key from {variable}",
            config.region.as_deref().unwrap_or("not set")
        ),
        (Some(variable), Some(_)) => format!("key from {variable}"),
        (None, Some(_)) => "key given".to_owned(),
        (_, None) if config.provider == ProviderKind::Replay => "no key needed".to_owned(),
        (_, None) if ollama::is_local(&config.base_url) => {
            "no key needed on this machine".to_owned()
        }
        (Some(variable), None) if config.provider.needs_key(&config.base_url) => {
            format!("{variable} not set")
        }
        (Some(variable), None) => format!("no key, {variable} is not set"),
        (None, None) => "no key".to_owned(),
    };
    let asked_when_used = config.ollama.is_some()
        && config.context_source != ContextSource::Settings
        && !matches!(config.context_source, ContextSource::Ollama(_));
    let context = if asked_when_used {
        "context as Ollama runs it (asked when the model is used)".to_owned()
    } else {
        format!(
            "context {} tokens ({})",
            config.context_window, config.context_source
        )
    };
    let server = if config.ollama.is_some() {
        "Ollama, "
    } else {
        ""
    };
    // Which of OpenAI's APIs, for the provider that has two, and which publisher's format a
    // Vertex model speaks.
    let api = if matches!(config.provider, ProviderKind::OpenAi | ProviderKind::Vertex) {
        format!(" ({})", config.api_name())
    } else {
        String::new()
    };
    let reasoning = match config.reasoning.source {
        ReasoningSource::Unset => String::new(),
        _ => format!(", reasoning {}", config.reasoning),
    };
    format!(
        "{}: {}{api} {} at {place} ({server}{key}; {context}, output {} tokens{reasoning})",
        config.id, config.provider, config.model, config.max_output_tokens
    )
}

/// For Bedrock and Vertex AI, why their server is not asked, and where the credentials will
/// come from: neither has a cheap request that says whether the model can be used, and their
/// credentials are found when the first request is signed.
fn cloud_note(config: &ModelConfig) -> Option<String> {
    match (config.provider, &config.api_key_env, &config.api_key) {
        (ProviderKind::Bedrock, Some(variable), Some(_)) => Some(format!(
            "Bedrock is not asked here; requests carry the Bedrock API key in {variable}."
        )),
        (ProviderKind::Bedrock, _, _) => Some(
            "Bedrock is not asked here; requests are signed with the AWS credentials the \
             standard chain finds at the first request (AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, SSO, web identity, ECS, IMDS)."
                .to_owned(),
        ),
        (ProviderKind::Vertex, _, _) => Some(
            "Vertex AI is not asked here; requests carry a Google access token from Application \
             Default Credentials, found at the first request (GOOGLE_APPLICATION_CREDENTIALS, \
             `gcloud auth application-default login`, or the metadata server on Google Cloud)."
                .to_owned(),
        ),
        _ => None,
    }
}

/// What the context window Ollama runs the model with means for Tandem.
fn window_note(config: &ModelConfig, tokens: u64, source: OllamaContext) -> String {
    let mut note = format!(
        "Ollama runs {} with a context window of {tokens} tokens ({}).",
        config.model,
        ContextSource::Ollama(source)
    );
    if source == OllamaContext::Default {
        note.push_str(
            " The model is not loaded, so this is a guess: recent versions of Ollama give more on \
             a GPU with 24 GiB of memory or more; `ollama ps` shows the CONTEXT a loaded model \
             runs with.",
        );
    }
    if tokens < ollama::MIN_CONTEXT_WINDOW {
        note.push_str(&format!(
            " That is too small for Tandem, whose first request alone is about 7,000 tokens \
             (Ollama would silently cut what does not fit, so Tandem refuses to send it). {}.",
            ollama::larger_window_fix()
        ));
    }
    note
}
