//! The editor's diagnostics, for the agent: a client that declared `diagnostics` forwards every
//! change of its diagnostics (from every language server it runs) with
//! `tandem/didChangeDiagnostics`, each tagged with the document version it was reported at.
//! After an agent edit, the edit's result waits (up to `diagnostics.settleMs`) for the report of
//! the edited version and tells the model what it added over the last report before the edit.
//! Where the editor has nothing to say (a client that forwards nothing, a file it has not open or
//! never reported on), the servers Tandem starts itself answer, when the binary gave some.
//!
//! A plain client's code action requests carry the diagnostics at the cursor: those are kept
//! too, and the `diagnostics` tool shows them for files no server checks.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use tandem_agent::diagnostics::{EditProblems, FileProblems, LanguageServers, Problem};
use tandem_agent::settings::DiagnosticsSettings;
use tandem_lsp_client::{new_problems, Severity};
use tandem_text::DocumentStore;
use tokio::sync::watch;
use tokio::time::Instant;
use tower_lsp::lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use url::Url;

/// Reports kept per document: enough to find the last one before an edit.
const HISTORY: usize = 8;
/// After the report of the edited version arrives, how long another server's may take.
const QUIET: Duration = Duration::from_millis(150);
/// Who the problems are from when no diagnostic names its source.
const EDITOR: &str = "the editor";

/// `tandem/didChangeDiagnostics`: the editor's diagnostics of some documents changed.
#[derive(Debug, Deserialize)]
pub(crate) struct DidChangeDiagnostics {
    pub documents: Vec<DocumentDiagnostics>,
}

/// All of the editor's diagnostics of one document now, replacing what was sent before.
#[derive(Debug, Deserialize)]
pub(crate) struct DocumentDiagnostics {
    pub uri: Url,
    /// The version of the document the editor has now (what its last `didChange` said);
    /// `null` for a document it has not open.
    #[serde(default)]
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
}

/// One report of a document's diagnostics.
#[derive(Debug, Clone)]
struct Report {
    version: Option<i32>,
    problems: Vec<tandem_lsp_client::Problem>,
}

#[derive(Debug, Default)]
struct Reports {
    forwarded: HashMap<Url, VecDeque<Report>>,
    /// Extensions of the files the editor reported on: languages its servers check.
    extensions: HashSet<String>,
    /// What code action requests carried, per document: only the diagnostics at a cursor.
    from_code_actions: HashMap<Url, Report>,
    /// Counts the documents reported, for `EditorDiagnostics::reported`.
    sequence: u64,
}

/// The editor's diagnostics, and the servers Tandem starts itself where the editor says nothing.
#[derive(Debug)]
pub(crate) struct EditorDiagnostics {
    documents: Arc<DocumentStore>,
    reports: Mutex<Reports>,
    /// Bumped with every forwarded report.
    reported: watch::Sender<u64>,
    /// The client declared `diagnostics`.
    forwarding: AtomicBool,
    own: Option<Arc<dyn LanguageServers>>,
}

fn extension_of(path: &Path) -> Option<String> {
    Some(path.extension()?.to_str()?.to_owned())
}

/// What the editor says about an open document.
enum Standing {
    /// It reported on this document: its URI and the version the document has now.
    Reported(Url, i32),
    /// It never reported on it, but on others of its language: it may be clean.
    LanguageChecked(Url, i32),
    /// Nothing: not forwarding, not open, or a language it reported nothing about.
    Silent,
}

fn to_problem(diagnostic: &Diagnostic) -> tandem_lsp_client::Problem {
    tandem_lsp_client::Problem {
        line: diagnostic.range.start.line.saturating_add(1),
        column: diagnostic.range.start.character.saturating_add(1),
        severity: match diagnostic.severity {
            Some(DiagnosticSeverity::WARNING) => Severity::Warning,
            Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
            Some(DiagnosticSeverity::HINT) => Severity::Hint,
            _ => Severity::Error,
        },
        source: diagnostic.source.clone(),
        code: diagnostic.code.as_ref().map(|code| match code {
            NumberOrString::Number(number) => number.to_string(),
            NumberOrString::String(code) => code.clone(),
        }),
        message: diagnostic.message.clone(),
    }
}

/// Errors first, then warnings, as the core knows them; information and hints are left out.
pub fn errors_first(problems: &[tandem_lsp_client::Problem]) -> Vec<Problem> {
    let mut shown: Vec<Problem> = problems
        .iter()
        .filter(|problem| matches!(problem.severity, Severity::Error | Severity::Warning))
        .map(|problem| Problem {
            warning: problem.severity == Severity::Warning,
            line: problem.line,
            column: problem.column,
            source: problem.source.clone(),
            code: problem.code.clone(),
            message: problem.message.clone(),
        })
        .collect();
    shown.sort_by_key(|problem| problem.warning);
    shown
}

/// Who reported `problems`: their sources (`Pyright`, `ts`), or the editor.
fn reporters(problems: &[Problem]) -> String {
    let mut sources: Vec<&str> = Vec::new();
    for source in problems
        .iter()
        .filter_map(|problem| problem.source.as_deref())
    {
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    if sources.is_empty() {
        EDITOR.to_owned()
    } else {
        sources.join(" and ")
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl EditorDiagnostics {
    pub(crate) fn new(
        documents: Arc<DocumentStore>,
        own: Option<Arc<dyn LanguageServers>>,
    ) -> Self {
        EditorDiagnostics {
            documents,
            reports: Mutex::default(),
            reported: watch::channel(0).0,
            forwarding: AtomicBool::new(false),
            own,
        }
    }

    /// Whether the client forwards its diagnostics (its `diagnostics` capability).
    pub(crate) fn set_forwarding(&self, forwarding: bool) {
        self.forwarding.store(forwarding, Ordering::Relaxed);
    }

    /// `tandem/didChangeDiagnostics`.
    pub(crate) fn forwarded(&self, params: DidChangeDiagnostics) {
        let sequence = {
            let mut reports = lock(&self.reports);
            for document in params.documents {
                reports.sequence += 1;
                let report = Report {
                    version: document.version,
                    problems: document.diagnostics.iter().map(to_problem).collect(),
                };
                if let Some(extension) = document
                    .uri
                    .to_file_path()
                    .ok()
                    .as_deref()
                    .and_then(extension_of)
                {
                    reports.extensions.insert(extension);
                }
                let history = reports.forwarded.entry(document.uri).or_default();
                history.push_back(report);
                while history.len() > HISTORY {
                    history.pop_front();
                }
            }
            reports.sequence
        };
        self.reported.send_replace(sequence);
    }

    /// The diagnostics a code action request carried for `uri` at `version`.
    pub(crate) fn seen_in_code_action(&self, uri: &Url, version: i32, diagnostics: &[Diagnostic]) {
        if diagnostics.is_empty() {
            return;
        }
        let mut reports = lock(&self.reports);
        let report = Report {
            version: Some(version),
            problems: diagnostics.iter().map(to_problem).collect(),
        };
        reports.from_code_actions.insert(uri.clone(), report);
    }

    /// What the editor says about the open document at `path`.
    fn standing(&self, path: &Path) -> Standing {
        if !self.forwarding.load(Ordering::Relaxed) {
            return Standing::Silent;
        }
        let Some((uri, document)) = Url::from_file_path(path)
            .ok()
            .and_then(|uri| Some((uri.clone(), self.documents.get(&uri)?)))
        else {
            return Standing::Silent;
        };
        let reports = lock(&self.reports);
        if reports.forwarded.contains_key(&uri) {
            Standing::Reported(uri, document.version())
        } else if extension_of(path)
            .is_some_and(|extension| reports.extensions.contains(&extension))
        {
            Standing::LanguageChecked(uri, document.version())
        } else {
            Standing::Silent
        }
    }

    /// The report of `version` (or a later one), waiting for it until `deadline`; then, for
    /// `QUIET`, for the reports of the editor's other servers.
    async fn report_at(&self, uri: &Url, version: i32, deadline: Instant) -> Option<Report> {
        let mut changes = self.reported.subscribe();
        let mut found: Option<Report> = None;
        loop {
            let latest = lock(&self.reports)
                .forwarded
                .get(uri)
                .and_then(|history| history.back().cloned());
            if let Some(latest) = latest.filter(|report| report.version >= Some(version)) {
                found = Some(latest);
            }
            let wait_until = match &found {
                Some(_) => (Instant::now() + QUIET).min(deadline),
                None => deadline,
            };
            match tokio::time::timeout_at(wait_until, changes.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) | Err(_) => return found,
            }
        }
    }

    async fn check(
        &self,
        path: &Path,
        before: Option<&str>,
        after: &str,
        settings: &DiagnosticsSettings,
    ) -> Option<EditProblems> {
        let own = || async {
            let own = self.own.as_ref()?;
            own.edit_problems(path, before, after, settings).await
        };
        match self.standing(path) {
            Standing::Reported(uri, version) => self.editor_check(&uri, version, settings).await,
            // A clean file the editor's servers never reported on (VS Code's TypeScript reports
            // only changes): Tandem's own server is quicker to say so; without one, the editor
            // is waited for, for the whole settle time when the edit changed nothing.
            Standing::LanguageChecked(uri, version) => match own().await {
                Some(problems) => Some(problems),
                None => self.editor_check(&uri, version, settings).await,
            },
            // Waiting for a report that may never come (no server for its language, a linter
            // that runs on save) would cost every edit the whole settle time.
            Standing::Silent => own().await,
        }
    }

    /// What the editor's report of `version` added over its last report before it (nothing,
    /// for a document it never reported on; `None` when none of its reports is from before).
    async fn editor_check(
        &self,
        uri: &Url,
        version: i32,
        settings: &DiagnosticsSettings,
    ) -> Option<EditProblems> {
        let uri = uri.clone();
        let deadline = Instant::now() + settings.settle();
        let earlier: Vec<tandem_lsp_client::Problem> = {
            let reports = lock(&self.reports);
            match reports.forwarded.get(&uri) {
                None => Vec::new(),
                Some(history) => {
                    let before = history
                        .iter()
                        .rev()
                        .find(|report| report.version.is_some_and(|reported| reported < version));
                    match before {
                        Some(report) => report.problems.clone(),
                        // What the file had before the edit is unknown: saying nothing beats
                        // blaming the user's errors on the edit.
                        None => {
                            tracing::debug!(%uri, version, "no report from before the edit");
                            return None;
                        }
                    }
                }
            }
        };
        let Some(report) = self.report_at(&uri, version, deadline).await else {
            // Editors report only changes (VS Code's TypeScript does): nothing means nothing new.
            tracing::debug!(%uri, version, "no diagnostics reported for the edited version");
            return None;
        };
        let added: Vec<Problem> = errors_first(&new_problems(&earlier, &report.problems))
            .into_iter()
            .filter(|problem| settings.warnings || !problem.warning)
            .collect();
        Some(EditProblems {
            server: reporters(&added),
            added,
        })
    }

    async fn current(
        &self,
        file: Option<(&Path, &str)>,
        settings: &DiagnosticsSettings,
    ) -> Vec<FileProblems> {
        if let Some((path, text)) = file {
            let standing = self.standing(path);
            if let Standing::LanguageChecked(..) | Standing::Silent = standing {
                if let Some(own) = &self.own {
                    let checked = own.problems(Some((path, text)), settings).await;
                    if !checked.is_empty() {
                        return checked;
                    }
                }
            }
            if let Standing::Reported(uri, version) | Standing::LanguageChecked(uri, version) =
                standing
            {
                let deadline = Instant::now() + settings.settle();
                let problems = self
                    .report_at(&uri, version, deadline)
                    .await
                    .or_else(|| {
                        let reports = lock(&self.reports);
                        reports.forwarded.get(&uri)?.back().cloned()
                    })
                    .map(|report| errors_first(&report.problems))
                    .unwrap_or_default();
                return vec![FileProblems {
                    path: path.to_owned(),
                    server: reporters(&problems),
                    problems,
                }];
            }
            return self.shown_in_code_actions(Some(path)).into_iter().collect();
        }
        let mut files: Vec<FileProblems> = {
            let reports = lock(&self.reports);
            reports
                .forwarded
                .iter()
                .filter_map(|(uri, history)| {
                    let problems = errors_first(&history.back()?.problems);
                    Some(FileProblems {
                        path: uri.to_file_path().ok()?,
                        server: reporters(&problems),
                        problems,
                    })
                })
                .collect()
        };
        if let Some(own) = &self.own {
            let known: HashSet<PathBuf> = files.iter().map(|file| file.path.clone()).collect();
            let checked = own.problems(None, settings).await;
            files.extend(
                checked
                    .into_iter()
                    .filter(|file| !known.contains(&file.path)),
            );
        }
        let known: HashSet<PathBuf> = files.iter().map(|file| file.path.clone()).collect();
        files.extend(
            self.shown_in_code_actions(None)
                .into_iter()
                .filter(|file| !known.contains(&file.path)),
        );
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }

    /// What code action requests showed, for `path` or for every file, where it still holds
    /// (the document is at the version it was shown at).
    fn shown_in_code_actions(&self, path: Option<&Path>) -> Vec<FileProblems> {
        let reports = lock(&self.reports);
        reports
            .from_code_actions
            .iter()
            .filter_map(|(uri, report)| {
                let file = uri.to_file_path().ok()?;
                if path.is_some_and(|path| path != file) {
                    return None;
                }
                let current = self.documents.get(uri)?.version();
                if report.version != Some(current) {
                    return None;
                }
                let problems = errors_first(&report.problems);
                Some(FileProblems {
                    path: file,
                    server: format!("{} (at the cursor only)", reporters(&problems)),
                    problems,
                })
            })
            .collect()
    }
}

impl LanguageServers for EditorDiagnostics {
    fn available(&self) -> bool {
        self.own.is_some() || self.forwarding.load(Ordering::Relaxed)
    }

    fn edit_problems<'a>(
        &'a self,
        path: &'a Path,
        before: Option<&'a str>,
        after: &'a str,
        settings: &'a DiagnosticsSettings,
    ) -> BoxFuture<'a, Option<EditProblems>> {
        Box::pin(self.check(path, before, after, settings))
    }

    fn problems<'a>(
        &'a self,
        file: Option<(&'a Path, &'a str)>,
        settings: &'a DiagnosticsSettings,
    ) -> BoxFuture<'a, Vec<FileProblems>> {
        Box::pin(self.current(file, settings))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tandem_text::Document;

    use super::*;

    const CALC: &str = "/ws/calc.py";

    fn diagnostic(line: u32, message: &str, severity: u64) -> Value {
        json!({
            "range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 9}},
            "severity": severity,
            "source": "Pyright",
            "message": message,
        })
    }

    fn report(uri: &str, version: Option<i32>, diagnostics: Vec<Value>) -> DidChangeDiagnostics {
        serde_json::from_value(json!({"documents": [
            {"uri": uri, "version": version, "diagnostics": diagnostics}
        ]}))
        .unwrap()
    }

    fn uri(path: &str) -> Url {
        Url::from_file_path(path).unwrap()
    }

    /// An editor that forwards, with calc.py open at version `version`.
    fn editor(version: i32) -> (Arc<DocumentStore>, Arc<EditorDiagnostics>) {
        let documents = Arc::new(DocumentStore::new());
        documents.open(uri(CALC), Document::new("x = 1\n", version, "python"));
        let diagnostics = Arc::new(EditorDiagnostics::new(documents.clone(), None));
        diagnostics.set_forwarding(true);
        (documents, diagnostics)
    }

    fn settings() -> DiagnosticsSettings {
        DiagnosticsSettings {
            settle_ms: 10_000,
            ..DiagnosticsSettings::default()
        }
    }

    use serde_json::Value;

    #[tokio::test]
    async fn an_edit_gets_what_the_report_of_its_version_added_over_the_last_one_before() {
        let (documents, editor) = editor(3);
        let users = diagnostic(4, "\"label\" is not str", 1);
        editor.forwarded(report(uri(CALC).as_str(), Some(3), vec![users.clone()]));
        // The edit landed: the buffer is at version 4, its report comes later.
        documents.open(uri(CALC), Document::new("x = 2\n", 4, "python"));
        let settings = settings();
        let path = PathBuf::from(CALC);
        let checking = editor.edit_problems(&path, Some("x = 1\n"), "x = 2\n", &settings);
        let reporting = async {
            tokio::task::yield_now().await;
            // The user's error moved a line down; the new error and a hint come with it.
            let moved = diagnostic(5, "\"label\" is not str", 1);
            let added = diagnostic(2, "Argument of type \"str\"", 1);
            let hint = diagnostic(1, "unused", 4);
            editor.forwarded(report(
                uri(CALC).as_str(),
                Some(4),
                vec![moved, added, hint],
            ));
        };
        let (problems, ()) = tokio::join!(checking, reporting);
        let problems = problems.unwrap();
        assert_eq!(problems.server, "Pyright");
        assert_eq!(
            problems
                .added
                .iter()
                .map(|problem| (problem.line, problem.column, problem.message.as_str()))
                .collect::<Vec<_>>(),
            vec![(3, 5, "Argument of type \"str\"")]
        );
        // A later edit that fixes it is blamed for nothing, even when its report came first.
        documents.open(uri(CALC), Document::new("x = 1\n", 5, "python"));
        editor.forwarded(report(uri(CALC).as_str(), Some(5), vec![users]));
        let fixed = editor
            .edit_problems(&path, Some("x = 2\n"), "x = 1\n", &settings)
            .await
            .unwrap();
        assert!(fixed.added.is_empty(), "{fixed:?}");
    }

    /// The only reports kept are of the edited version or later: what the file had before is
    /// unknown, and the user's error must not be blamed on the edit.
    #[tokio::test]
    async fn without_a_report_from_before_the_edit_nothing_is_blamed() {
        let (documents, editor) = editor(4);
        documents.open(uri(CALC), Document::new("x = 2\n", 5, "python"));
        editor.forwarded(report(
            uri(CALC).as_str(),
            Some(5),
            vec![diagnostic(4, "the user's", 1)],
        ));
        let path = PathBuf::from(CALC);
        let checked = editor
            .edit_problems(&path, Some("x = 1\n"), "x = 2\n", &settings())
            .await;
        assert_eq!(checked, None);
    }

    #[tokio::test]
    async fn no_report_of_the_edited_version_within_the_settle_time_says_nothing() {
        let (documents, editor) = editor(1);
        editor.forwarded(report(uri(CALC).as_str(), Some(1), Vec::new()));
        documents.open(uri(CALC), Document::new("x = 2\n", 2, "python"));
        let settings = DiagnosticsSettings {
            settle_ms: 50,
            ..DiagnosticsSettings::default()
        };
        let path = PathBuf::from(CALC);
        assert_eq!(
            editor.edit_problems(&path, Some(""), "", &settings).await,
            None
        );
    }

    /// A Python file the editor reports nothing about, or one it has not open, or a client
    /// that forwards nothing: the servers Tandem starts answer.
    #[derive(Debug)]
    struct Own;

    impl LanguageServers for Own {
        fn edit_problems<'a>(
            &'a self,
            path: &'a Path,
            _before: Option<&'a str>,
            _after: &'a str,
            _settings: &'a DiagnosticsSettings,
        ) -> BoxFuture<'a, Option<EditProblems>> {
            Box::pin(async move {
                Some(EditProblems {
                    server: format!("own for {}", path.display()),
                    added: Vec::new(),
                })
            })
        }

        fn problems<'a>(
            &'a self,
            _file: Option<(&'a Path, &'a str)>,
            _settings: &'a DiagnosticsSettings,
        ) -> BoxFuture<'a, Vec<FileProblems>> {
            Box::pin(async { Vec::new() })
        }
    }

    #[tokio::test]
    async fn where_the_editor_says_nothing_tandems_own_servers_answer() {
        let documents = Arc::new(DocumentStore::new());
        documents.open(uri(CALC), Document::new("x = 1\n", 1, "python"));
        documents.open(uri("/ws/main.c"), Document::new("", 1, "c"));
        let editor = EditorDiagnostics::new(documents, Some(Arc::new(Own)));
        let settings = settings();
        let server = |path: &'static str| {
            let editor = &editor;
            let settings = &settings;
            async move {
                editor
                    .edit_problems(Path::new(path), None, "", settings)
                    .await
                    .map(|problems| problems.server)
            }
        };
        // Not forwarding yet.
        assert_eq!(server(CALC).await.as_deref(), Some("own for /ws/calc.py"));
        editor.set_forwarding(true);
        // The editor reported on calc.py, but never on main.c, and closed.py is not open.
        editor.forwarded(report(uri("/ws/closed.py").as_str(), None, Vec::new()));
        editor.forwarded(report(uri(CALC).as_str(), Some(1), Vec::new()));
        assert_eq!(
            server("/ws/main.c").await.as_deref(),
            Some("own for /ws/main.c")
        );
        assert_eq!(
            server("/ws/closed.py").await.as_deref(),
            Some("own for /ws/closed.py")
        );
    }

    /// Regression test for a clean TypeScript file in VS Code, which reports only changes: the
    /// editor never reported on it, so an edit that broke it was told nothing.
    #[tokio::test]
    async fn a_document_never_reported_on_is_waited_for_when_its_language_is_checked() {
        let (documents, editor) = editor(1);
        let clean = uri("/ws/clean.py");
        documents.open(clean.clone(), Document::new("x = 1\n", 1, "python"));
        editor.forwarded(report(uri(CALC).as_str(), Some(1), Vec::new()));
        documents.open(clean.clone(), Document::new("x = 2\n", 2, "python"));
        let settings = settings();
        let path = PathBuf::from("/ws/clean.py");
        let checking = editor.edit_problems(&path, Some("x = 1\n"), "x = 2\n", &settings);
        let reporting = async {
            tokio::task::yield_now().await;
            editor.forwarded(report(
                clean.as_str(),
                Some(2),
                vec![diagnostic(0, "broken", 1)],
            ));
        };
        let (problems, ()) = tokio::join!(checking, reporting);
        let messages: Vec<String> = problems
            .unwrap()
            .added
            .into_iter()
            .map(|problem| problem.message)
            .collect();
        assert_eq!(messages, vec!["broken".to_owned()]);
    }

    #[tokio::test]
    async fn the_diagnostics_tool_sees_forwarded_and_code_action_diagnostics() {
        let (documents, editor) = editor(2);
        documents.open(uri("/ws/notes.md"), Document::new("", 7, "markdown"));
        editor.forwarded(report(
            uri(CALC).as_str(),
            Some(2),
            vec![diagnostic(0, "warned", 2), diagnostic(3, "broken", 1)],
        ));
        let at_cursor: Vec<Diagnostic> =
            serde_json::from_value(json!([diagnostic(1, "spelling", 1)])).unwrap();
        editor.seen_in_code_action(&uri("/ws/notes.md"), 7, &at_cursor);
        let settings = settings();
        let all = editor.problems(None, &settings).await;
        let summary: Vec<String> = all
            .iter()
            .map(|file| {
                let problems: Vec<String> = file
                    .problems
                    .iter()
                    .map(|problem| {
                        format!(
                            "{}{}",
                            if problem.warning { "w:" } else { "" },
                            problem.message
                        )
                    })
                    .collect();
                format!(
                    "{} {}: {}",
                    file.path.display(),
                    file.server,
                    problems.join(", ")
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                format!("{CALC} Pyright: broken, w:warned"),
                "/ws/notes.md Pyright (at the cursor only): spelling".to_owned(),
            ]
        );
        // Once the document moved on, what the code action showed no longer holds.
        documents.open(uri("/ws/notes.md"), Document::new("", 8, "markdown"));
        let one = editor
            .problems(Some((Path::new("/ws/notes.md"), "")), &settings)
            .await;
        assert!(one.is_empty(), "{one:?}");
    }
}
