//! Inline completions through the host: the `completion` settings of the workspace (read at
//! most every couple of seconds, not on every keystroke, and again when the front end's
//! settings change) and the shared `Completions` state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tandem_providers::settings::Loaded;
use tandem_providers::CancellationToken;

use super::{lock, Frontend, Host};
use crate::completion::{
    CompletionError, CompletionRequest, CompletionSettings, Definition, DefinitionFinder,
};
use crate::settings::AgentSettings;

/// How long read settings serve completions before they are read again.
const SETTINGS_FRESH_FOR: Duration = Duration::from_secs(2);

/// The settings last read for completions, and for which workspace and settings generation.
pub(super) struct CompletionConfig {
    root: PathBuf,
    generation: u64,
    read_at: Instant,
    settings: CompletionSettings,
    loaded: Arc<Loaded>,
}

/// A front end that keeps settings warnings out of the user's way: completions read the
/// settings far more often than sessions do, and sessions already report their problems.
struct Quiet;

impl Frontend for Quiet {
    fn editor(&self, _: &crate::settings::EditSettings) -> Arc<dyn crate::editor::Editor> {
        Arc::new(crate::editor::DiskEditor)
    }

    fn warning(&self, message: &str) {
        tracing::debug!("settings, read for completions: {message}");
    }
}

impl Host {
    /// The `completion` settings of a workspace whose first root is `root`.
    pub fn completion_settings(&self, root: &Path) -> Result<CompletionSettings, String> {
        self.completion_config(root).map(|(settings, _)| settings)
    }

    fn completion_config(&self, root: &Path) -> Result<(CompletionSettings, Arc<Loaded>), String> {
        let generation = self
            .settings_generation
            .load(std::sync::atomic::Ordering::SeqCst);
        {
            let cached = lock(&self.completion_config);
            if let Some(config) = cached.as_ref() {
                if config.root == root
                    && config.generation == generation
                    && config.read_at.elapsed() < SETTINGS_FRESH_FOR
                {
                    return Ok((config.settings.clone(), Arc::clone(&config.loaded)));
                }
            }
        }
        let loaded = self.load_settings(root, &Quiet)?;
        let settings = AgentSettings::from_loaded(&loaded)?.completion;
        let loaded = Arc::new(loaded);
        *lock(&self.completion_config) = Some(CompletionConfig {
            root: root.to_path_buf(),
            generation,
            read_at: Instant::now(),
            settings: settings.clone(),
            loaded: Arc::clone(&loaded),
        });
        Ok((settings, loaded))
    }

    /// A suggestion at the cursor of `request` in the workspace of `roots` (its settings are
    /// the first root's; only documents inside them are shown besides the current one):
    /// `Ok(None)` when completions are off there, there is no workspace, or the model had
    /// nothing. A newer request for the same document ends this one with
    /// `CompletionError::Superseded`.
    pub async fn complete(
        &self,
        roots: &[PathBuf],
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<Option<String>, CompletionError> {
        let Some(root) = roots.first() else {
            return Ok(None);
        };
        let (settings, loaded) = self
            .completion_config(root)
            .map_err(CompletionError::Setup)?;
        let env = |name: &str| std::env::var(name).ok();
        let resolve = |name: &str| {
            loaded
                .resolve_model(Some(name), &env)
                .map_err(|error| error.to_string())
        };
        let define = definition_finder(
            Arc::clone(&self.index),
            root.to_path_buf(),
            request.path.clone(),
        );
        self.completions
            .complete(&settings, roots, resolve, define, request, cancel)
            .await
    }

    /// Model requests completions have started (for tests and benchmarks).
    pub fn completion_model_requests(&self) -> u64 {
        self.completions.model_requests()
    }
}

/// Looks names up in the workspace's symbol index: the first definition of each (by path),
/// outside the file being completed, with its path relative to `root`.
fn definition_finder(
    index: Arc<tandem_syntax::SymbolIndex>,
    root: PathBuf,
    current: String,
) -> DefinitionFinder {
    Box::new(move |names: Vec<String>| {
        names
            .iter()
            .filter_map(|name| {
                index.definitions(name, None).into_iter().find_map(|hit| {
                    let path = hit
                        .path
                        .strip_prefix(&root)
                        .unwrap_or(&hit.path)
                        .to_string_lossy()
                        .replace('\\', "/");
                    (path != current).then(|| Definition {
                        name: name.clone(),
                        path,
                        line: hit.line.saturating_add(1),
                        text: hit.line_text,
                    })
                })
            })
            .collect()
    })
}
