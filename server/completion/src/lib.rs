//! Inline completions (ghost text): the `completion` settings, and `Completions`, which turns
//! the text around a cursor into a suggestion from the completion model. A newer request for
//! the same document cancels the older one (its connection is closed), a request waits
//! `debounceMs` before it reaches the model (a keystroke within that time supersedes it without
//! a model request), and typing through a suggestion reuses it. Knows nothing of LSP: a front
//! end hands it the text around the cursor (`shape::Around`) and gets text to insert. Which
//! documents the model may be shown is decided here for every front end
//! (`context::DocumentRules`): none in a secret-looking file, and only the workspace's ordinary
//! files besides it. See docs/completions.md.
//!
//! A crate of its own beside the agent's tools and sessions, with which it shares nothing but
//! the sandbox's secret-path list and workspace: it may use `tandem-sandbox`, `tandem-syntax`
//! and `tandem-providers` (the completion model), and no front end.

pub mod context;
pub mod shape;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tandem_providers::fim::{FimApi, FimModel, FimRequest};
use tandem_providers::{CancellationToken, ProviderError};

pub use context::{Definition, DocumentRules, Neighbour, RecentDocument, TextSource, Withheld};
pub use shape::{Around, Cuts};

/// The `completion` settings key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CompletionSettings {
    /// Whether the server offers completions as you type (they also need a `model`).
    pub enabled: bool,
    /// The model that completes: a name from `models` (a small local model is typical). The
    /// agent's model is not used unless named here; without one there are no completions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How the model is asked: `auto` (from the model), `completions` (OpenAI-compatible
    /// `/completions` with `suffix`), `ollama`, `llamacpp` (`/infill`), `mistral`
    /// (`/fim/completions`) or `chat` (a prompt to any chat model).
    pub api: FimApi,
    /// Per-language switches, by LSP language id (`{"markdown": false}`); a language not named
    /// is on.
    pub languages: BTreeMap<String, bool>,
    /// Milliseconds a request waits before it goes to the model; a newer request for the same
    /// document within that time replaces it without a model request.
    pub debounce_ms: u64,
    /// The most tokens one suggestion may take.
    #[schemars(range(min = 1))]
    pub max_tokens: u32,
    /// More strings that end a suggestion where the model writes them.
    pub stop: Vec<String>,
    /// Characters before the cursor the model is shown, at most (cut at a syntax boundary or a
    /// line). More context helps a large model and slows a small one.
    #[schemars(range(min = 1))]
    pub prefix_chars: usize,
    /// Characters after the cursor the model is shown, at most (cut at a syntax boundary or a
    /// line).
    pub suffix_chars: usize,
    /// Offer the suggestion as an item of `textDocument/completion` to editors without inline
    /// completions (Helix).
    pub completion_items: bool,
    /// Documents never shown to the completion model, as glob patterns, on top of those it is
    /// never shown anyway: files outside the workspace, ignored by `.gitignore` or `.ignore`,
    /// or secret-looking (`.env*`, keys, credentials; see docs/completions.md). A pattern with
    /// a `/` is matched against the path relative to the workspace folder (or the absolute
    /// path, for one starting with `/`); one without matches the file name in any folder, as
    /// in `.gitignore`. `*` stays within a folder, `**` crosses folders. A document being
    /// completed that a pattern matches gets no completions.
    #[serde(deserialize_with = "exclude_patterns")]
    pub exclude_documents: Vec<String>,
}

/// Reads `excludeDocuments`, refusing a pattern that is not a glob: a mistyped exclusion must
/// not quietly send what it was meant to keep back.
fn exclude_patterns<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    let patterns = Vec::<String>::deserialize(deserializer)?;
    for pattern in &patterns {
        context::exclude_pattern(pattern).map_err(serde::de::Error::custom)?;
    }
    Ok(patterns)
}

impl Default for CompletionSettings {
    fn default() -> Self {
        CompletionSettings {
            enabled: true,
            model: None,
            api: FimApi::Auto,
            languages: BTreeMap::new(),
            debounce_ms: 75,
            max_tokens: 128,
            stop: Vec::new(),
            prefix_chars: shape::DEFAULT_PREFIX_CHARS,
            suffix_chars: shape::DEFAULT_SUFFIX_CHARS,
            completion_items: true,
            exclude_documents: Vec::new(),
        }
    }
}

impl CompletionSettings {
    /// Whether completions are on for documents in `language`.
    pub fn on_for(&self, language: &str) -> bool {
        self.enabled && self.model.is_some() && self.languages.get(language).copied() != Some(false)
    }
}

/// One request: the document (its URI or path, the key superseded requests are found by), its
/// path for the model, its file, its language id and the text around the cursor.
pub struct CompletionRequest {
    pub document: String,
    pub path: String,
    /// The document's file (`None`: an unsaved buffer, a URI of another scheme), which the
    /// document rules judge.
    pub file: Option<PathBuf>,
    pub language: String,
    pub around: Around,
    /// The user asked (a key or command): no debounce.
    pub invoked: bool,
    /// Other documents used recently, in the same language, most recent first: the model is
    /// shown the code most like the lines before the cursor in the first
    /// `context::MAX_NEIGHBOURS` of them that the document rules allow (offer more: the others
    /// are skipped). Their text is copied once the request is past its debounce, so that a
    /// superseded request copies none of it, and only where it may be shown.
    pub neighbours: Vec<RecentDocument>,
    /// Where `around` may be cut at syntax boundaries. Called once the request is past its
    /// debounce, by when the front end's syntax tree has caught up with the last keystroke;
    /// no cuts leave the window to be cut at whole lines.
    pub cuts: CutSource,
}

/// Gives where the window may be cut (see [`CompletionRequest::cuts`]).
pub type CutSource = Box<dyn FnOnce() -> Cuts + Send>;

impl std::fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("document", &self.document)
            .field("path", &self.path)
            .field("file", &self.file)
            .field("language", &self.language)
            .field("around", &self.around)
            .field("invoked", &self.invoked)
            .finish_non_exhaustive()
    }
}

/// Finds the definitions of names (`context::names_near_cursor`), off the async threads.
pub type DefinitionFinder = Box<dyn FnOnce(Vec<String>) -> Vec<Definition> + Send>;

/// Why a request has no suggestion, when it is not just that the model had none.
#[derive(Debug, thiserror::Error)]
pub enum CompletionError {
    /// A newer request for the same document replaced this one, or the front end cancelled it.
    #[error("superseded by a newer request")]
    Superseded,
    /// The completion model cannot be set up (its name, its key).
    #[error("completion model: {0}")]
    Setup(String),
    /// The model request failed.
    #[error("completion request failed: {0}")]
    Model(#[from] ProviderError),
}

/// The last suggestion for a document, to keep while the user types through it.
struct Shown {
    document: String,
    before: String,
    after: String,
    text: String,
}

/// Completion state shared by a front end's requests: the model (kept across requests, so its
/// connection is reused), the running request per document, and the last suggestion.
#[derive(Default)]
pub struct Completions {
    model: Mutex<Option<(ModelKey, Arc<FimModel>)>>,
    /// The running request of each document: its number and its cancel token.
    running: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next_request: std::sync::atomic::AtomicU64,
    shown: Mutex<Option<Shown>>,
    /// Definitions found for names, kept a while: the names near the cursor change little from
    /// one keystroke to the next.
    definitions: DefinitionCache,
    /// The document rules, with their verdicts, kept a while for the same reason.
    rules: Arc<Mutex<Option<KeptRules>>>,
    /// Model requests started (for tests and benchmarks).
    requests: std::sync::atomic::AtomicU64,
}

/// What identifies a completion model's set-up: settings that change it make a new one.
type ModelKey = (String, String, String, FimApi);

impl Completions {
    /// Model requests started so far.
    pub fn model_requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The suggestion for `request` in the workspace of `roots`: `Ok(None)` when there is none
    /// (completions off for the language, a document the rules withhold, nothing fits).
    /// `resolve` gives the completion model's configuration by name.
    pub async fn complete(
        &self,
        settings: &CompletionSettings,
        roots: &[PathBuf],
        resolve: impl FnOnce(&str) -> Result<tandem_providers::ModelConfig, String>,
        define: DefinitionFinder,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<Option<String>, CompletionError> {
        if !settings.on_for(&request.language) {
            return Ok(None);
        }
        // This request replaces the document's previous one.
        let token = cancel.child_token();
        let number = self
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let previous =
            lock(&self.running).insert(request.document.clone(), (number, token.clone()));
        if let Some((_, previous)) = previous {
            previous.cancel();
        }
        let document = request.document.clone();
        let result = self
            .run(settings, roots, resolve, define, request, &token)
            .await;
        let mut running = lock(&self.running);
        if running
            .get(&document)
            .is_some_and(|(current, _)| *current == number)
        {
            running.remove(&document);
        }
        result
    }

    async fn run(
        &self,
        settings: &CompletionSettings,
        roots: &[PathBuf],
        resolve: impl FnOnce(&str) -> Result<tandem_providers::ModelConfig, String>,
        define: DefinitionFinder,
        request: CompletionRequest,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, CompletionError> {
        if let Some(rest) = self.typed_through(&request) {
            return Ok(Some(rest));
        }
        // Which documents may be shown (the rules read the disk) and the definitions are found
        // while the request waits out its debounce.
        let screening = {
            let (roots, exclude) = (roots.to_vec(), settings.exclude_documents.clone());
            let file = request.file.clone();
            let recent: Vec<Option<PathBuf>> = request
                .neighbours
                .iter()
                .map(|recent| recent.file.clone())
                .collect();
            let kept = Arc::clone(&self.rules);
            tokio::task::spawn_blocking(move || {
                let rules = kept_rules(&kept, roots, exclude);
                let screened = context::screen(&rules, file.as_deref(), &recent);
                (rules, screened)
            })
        };
        let names = context::names_near_cursor(&request.around.before, &request.around.after);
        let lookup = self.definitions.lookup(names, define);
        if !request.invoked && settings.debounce_ms > 0 {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(CompletionError::Superseded),
                () = tokio::time::sleep(Duration::from_millis(settings.debounce_ms)) => {}
            }
        }
        let Ok((rules, screened)) = screening.await else {
            // The rules could not be applied: show nothing rather than anything.
            return Ok(None);
        };
        let allowed = match screened {
            Ok(allowed) => allowed,
            Err(withheld) => {
                tracing::debug!(document = %request.document, ?withheld, "no completion");
                return Ok(None);
            }
        };
        // `on_for` checked there is one.
        let Some(name) = settings.model.as_deref() else {
            return Ok(None);
        };
        let model = self.model(name, settings.api, resolve)?;
        let mut definitions = lookup.finish().await;
        definitions.retain(|definition| rules.definition(&definition.path).is_none());
        let around = request.around.cut((request.cuts)());
        let mut recent: Vec<Option<RecentDocument>> =
            request.neighbours.into_iter().map(Some).collect();
        let neighbours: Vec<Neighbour> = allowed
            .into_iter()
            .filter_map(|(index, path)| {
                let recent = recent.get_mut(index)?.take()?;
                Some(Neighbour {
                    path,
                    text: (recent.text)(),
                })
            })
            .collect();
        let snippets = context::similar_snippets(&around.before, &neighbours);
        let comments = shape::comment_for(&request.language)
            .map(|comment| context::render(comment, &snippets, &definitions))
            .unwrap_or_default();
        let (prefix, suffix) =
            shape::fim_parts(&around, &request.path, &request.language, &comments);
        let multiline = shape::multiline_allowed(&around);
        let mut stop = settings.stop.clone();
        if !multiline {
            stop.push("\n".to_owned());
        }
        let fim = FimRequest {
            prefix,
            suffix,
            max_tokens: settings.max_tokens,
            stop,
            path: request.path.clone(),
            language: request.language.clone(),
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let raw = match model.fill(&fim, cancel.clone()).await {
            Ok(raw) => raw,
            Err(ProviderError::Cancelled) => return Err(CompletionError::Superseded),
            Err(error) => return Err(error.into()),
        };
        let text = shape::shape(&raw, &around, multiline).filter(|text| {
            !shape::adds_syntax_errors(text, &around, &request.language, &request.path)
        });
        *lock(&self.shown) = text.as_ref().map(|text| Shown {
            document: request.document.clone(),
            before: request.around.before.clone(),
            after: request.around.after.clone(),
            text: text.clone(),
        });
        Ok(text)
    }

    /// The rest of the last suggestion, when the request's text is what it was with part of
    /// that suggestion typed.
    fn typed_through(&self, request: &CompletionRequest) -> Option<String> {
        let shown = lock(&self.shown);
        let shown = shown.as_ref()?;
        if shown.document != request.document || shown.after != request.around.after {
            return None;
        }
        // What was typed since is a start of the suggestion that the text before the cursor
        // now ends with; what comes before it ends the old text (the window may have slid).
        let before = &request.around.before;
        let text = &shown.text;
        text.char_indices()
            .map(|(at, _)| at)
            .chain([text.len()])
            .filter(|&at| before.ends_with(&text[..at]))
            .find(|&at| shown.before.ends_with(&before[..before.len() - at]))
            .and_then(|at| shape::typed_through(text, &text[..at]))
            .map(str::to_owned)
    }

    /// The completion model named `name`, set up once and kept while its settings stay.
    fn model(
        &self,
        name: &str,
        api: FimApi,
        resolve: impl FnOnce(&str) -> Result<tandem_providers::ModelConfig, String>,
    ) -> Result<Arc<FimModel>, CompletionError> {
        let config = resolve(name).map_err(CompletionError::Setup)?;
        let key = (
            config.id.clone(),
            config.model.clone(),
            config.base_url.clone(),
            api,
        );
        let mut cached = lock(&self.model);
        if let Some((cached_key, model)) = cached.as_ref() {
            if *cached_key == key {
                return Ok(Arc::clone(model));
            }
        }
        let model = Arc::new(
            FimModel::new(config, api)
                .map_err(|error| CompletionError::Setup(error.to_string()))?,
        );
        *cached = Some((key, Arc::clone(&model)));
        Ok(model)
    }
}

/// How long found definitions are kept before they are looked up again.
const DEFINITIONS_FRESH_FOR: Duration = Duration::from_secs(10);
/// How long the document rules and their verdicts are kept: a file that becomes ignored, or
/// a link that moves, is judged again after at most this long.
const RULES_FRESH_FOR: Duration = Duration::from_secs(10);

/// Document rules as made for a workspace's roots and `excludeDocuments`, and when.
struct KeptRules {
    made: std::time::Instant,
    roots: Vec<PathBuf>,
    exclude: Vec<String>,
    rules: Arc<DocumentRules>,
}

/// The document rules for `roots` and `exclude`: the kept ones while they are fresh and for
/// the same settings, else new ones (which read the disk: call off the async threads).
fn kept_rules(
    kept: &Mutex<Option<KeptRules>>,
    roots: Vec<PathBuf>,
    exclude: Vec<String>,
) -> Arc<DocumentRules> {
    let mut kept = lock(kept);
    if let Some(current) = kept.as_ref().filter(|current| {
        current.made.elapsed() <= RULES_FRESH_FOR
            && current.roots == roots
            && current.exclude == exclude
    }) {
        return Arc::clone(&current.rules);
    }
    let rules = Arc::new(DocumentRules::new(roots.clone(), &exclude));
    *kept = Some(KeptRules {
        made: std::time::Instant::now(),
        roots,
        exclude,
        rules: Arc::clone(&rules),
    });
    rules
}
/// How long a request waits, after its debounce, for definitions still being looked up; it
/// goes on without them (they are kept for the next request).
const DEFINITIONS_WAIT: Duration = Duration::from_millis(2);

/// When the kept definitions were started, and the definitions by name (`None`: the name has
/// none).
type Found = (
    Option<std::time::Instant>,
    HashMap<String, Option<Definition>>,
);

/// Definitions by name, shared with the lookups still running.
#[derive(Default)]
struct DefinitionCache {
    found: Arc<Mutex<Found>>,
}

/// A lookup started for one request: what was known, and the names being looked up.
struct Lookup {
    names: Vec<String>,
    found: Arc<Mutex<Found>>,
    running: Option<tokio::task::JoinHandle<()>>,
}

impl DefinitionCache {
    /// Starts looking up the names not known yet, off the async threads.
    fn lookup(&self, names: Vec<String>, define: DefinitionFinder) -> Lookup {
        let missing: Vec<String> = {
            let mut found = lock(&self.found);
            if found
                .0
                .is_none_or(|since| since.elapsed() > DEFINITIONS_FRESH_FOR)
            {
                *found = (Some(std::time::Instant::now()), HashMap::new());
            }
            let missing: Vec<String> = names
                .iter()
                .filter(|name| !found.1.contains_key(*name))
                .cloned()
                .collect();
            // Taken as having none until the lookup says: the next keystroke's request must
            // not start the same scan again.
            for name in &missing {
                found.1.insert(name.clone(), None);
            }
            missing
        };
        let running = (!missing.is_empty()).then(|| {
            let found = Arc::clone(&self.found);
            tokio::task::spawn_blocking(move || {
                let definitions = define(missing.clone());
                let mut found = lock(&found);
                for name in missing {
                    let definition = definitions.iter().find(|d| d.name == name).cloned();
                    found.1.insert(name, definition);
                }
            })
        });
        Lookup {
            names,
            found: Arc::clone(&self.found),
            running,
        }
    }
}

impl Lookup {
    /// The definitions of the request's names known after a short wait for the lookup.
    async fn finish(self) -> Vec<Definition> {
        if let Some(running) = self.running {
            let _ = tokio::time::timeout(DEFINITIONS_WAIT, running).await;
        }
        let found = lock(&self.found);
        self.names
            .iter()
            .filter_map(|name| found.1.get(name).cloned().flatten())
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(before: &str, after: &str) -> CompletionRequest {
        CompletionRequest {
            document: "file:///a.rs".to_owned(),
            path: "a.rs".to_owned(),
            language: "rust".to_owned(),
            around: Around {
                before: before.to_owned(),
                after: after.to_owned(),
                starts_at_boundary: false,
                ends_at_boundary: false,
            },
            invoked: false,
            file: None,
            neighbours: Vec::new(),
            cuts: Box::new(Cuts::default),
        }
    }

    /// The keystrokes of a burst share one set of document rules (and their verdicts, which
    /// read the disk); other settings make new ones.
    #[test]
    fn document_rules_are_kept_for_the_same_roots_and_exclusions() {
        let temp = tempfile::tempdir().unwrap();
        let roots = vec![temp.path().to_path_buf()];
        let kept = Mutex::default();
        let first = kept_rules(&kept, roots.clone(), Vec::new());
        let again = kept_rules(&kept, roots.clone(), Vec::new());
        assert!(Arc::ptr_eq(&first, &again));
        let other = kept_rules(&kept, roots, vec!["*.sql".to_owned()]);
        assert!(!Arc::ptr_eq(&first, &other));
    }

    /// Regression: typing through a suggestion was recognised only while the text before the
    /// cursor fit the window whole, so never past the first 6,000 characters of a file.
    #[test]
    fn typing_through_is_recognised_when_the_window_slides() {
        let completions = Completions::default();
        *lock(&completions.shown) = Some(Shown {
            document: "file:///a.rs".to_owned(),
            before: "abcdef let x = ".to_owned(),
            after: "\n}".to_owned(),
            text: "compute(1);".to_owned(),
        });
        // The window kept its length: its first three characters fell off.
        let slid = request("def let x = com", "\n}");
        assert_eq!(
            completions.typed_through(&slid).as_deref(),
            Some("pute(1);")
        );
        let same = request("abcdef let x = com", "\n}");
        assert_eq!(
            completions.typed_through(&same).as_deref(),
            Some("pute(1);")
        );
        assert_eq!(
            completions.typed_through(&request("def let x = cox", "\n}")),
            None
        );
        assert_eq!(
            completions.typed_through(&request("def let x = com", "\n};")),
            None
        );
    }
}
