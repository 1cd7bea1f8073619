//! What a completion model is shown besides the text around the cursor: the code most like the
//! lines before the cursor in the documents used most recently (Copilot's "neighbouring tabs"),
//! and where the names used around the cursor are defined. Both go into the prompt as comments
//! in the file's language, above the path line. The front end hands over the recent documents,
//! the host the definitions it found; `DocumentRules` decides which of them, and whether the
//! document being completed, may be shown at all (the one part that reads the disk), here so
//! that every front end gets the same answer.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use tandem_sandbox::secrets::{secret_looking, Secret};
use tandem_sandbox::workspace::Workspace;

/// A recently used document whose text may be shown, copied (capped by the front end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    pub path: String,
    pub text: String,
}

/// A recently used document a front end offers: its file, and how to copy its text, which is
/// done only once the request is past its debounce and the document rules allow it.
pub struct RecentDocument {
    /// `None` (an unsaved buffer, a URI of another scheme): never shown.
    pub file: Option<PathBuf>,
    pub text: TextSource,
}

/// Copies a recent document's text (see [`RecentDocument`]).
pub type TextSource = Box<dyn FnOnce() -> String + Send>;

/// Recent documents compared with the lines before the cursor, at most.
pub const MAX_NEIGHBOURS: usize = 4;

/// Why a document is not shown to the completion model (docs/completions.md, "Documents that
/// are never sent").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// No file on disk: an unsaved buffer, a URI of another scheme, a file not saved yet.
    NotAFile,
    /// Outside the workspace roots, symbolic links followed.
    Outside,
    /// Its path looks like it holds secrets (`tandem_sandbox::secrets`).
    SecretLooking,
    /// A pattern of `completion.excludeDocuments` matches it.
    Excluded,
    /// `.gitignore`, `.ignore` or git's exclude files leave it out, or it is inside `.git/`:
    /// the same rules the agent's `glob`, `grep` and `list_directory` follow.
    Ignored,
}

/// Which documents a completion may show the model: for recent documents, only files inside
/// the workspace roots that are not secret-looking, excluded by the settings or ignored; for
/// the document being completed (the user's own, wherever it is), anything but a file made for
/// secrets or one the settings exclude. Building and judging read the disk (canonical paths,
/// ignore files): run them off the async threads.
#[derive(Debug)]
pub struct DocumentRules {
    workspace: Workspace,
    exclude: GlobSet,
    /// The verdicts on recent documents so far (`screen`): judging one walks its folders'
    /// ignore files, and the same few documents come with every keystroke.
    judged: Mutex<HashMap<PathBuf, Result<String, Withheld>>>,
}

impl DocumentRules {
    /// The rules for a workspace of `roots` with `completion.excludeDocuments` = `exclude`
    /// (patterns `exclude_pattern` refuses are left out: the settings refused them already).
    pub fn new(roots: Vec<PathBuf>, exclude: &[String]) -> Self {
        let mut globs = GlobSetBuilder::new();
        for glob in exclude
            .iter()
            .filter_map(|pattern| exclude_pattern(pattern).ok())
        {
            globs.add(glob);
        }
        DocumentRules {
            workspace: Workspace::new(roots, Vec::new()),
            exclude: globs.build().unwrap_or_else(|_| GlobSet::empty()),
            judged: Mutex::default(),
        }
    }

    /// Why the document being completed, `file`, gets no completion: it is a file made for
    /// secrets, or excluded. A name that only sounds secret (`password_reset.py`) is
    /// completed: turning completions off in code by its name would cost more than it saves.
    pub fn current(&self, file: Option<&Path>) -> Option<Withheld> {
        let file = file?;
        let canonical = std::fs::canonicalize(file).ok();
        let paths = [Some(file), canonical.as_deref()];
        if paths
            .iter()
            .flatten()
            .any(|path| secret_looking(path) == Some(Secret::Kind))
        {
            return Some(Withheld::SecretLooking);
        }
        let place = self.place(file);
        let (relative, absolute) = match &place {
            Some((root, canonical)) => (canonical.strip_prefix(root).ok(), canonical.as_path()),
            None => (None, canonical.as_deref().unwrap_or(file)),
        };
        self.excluded(relative, absolute)
            .then_some(Withheld::Excluded)
    }

    /// Why the recent document `file` may not be shown, or, when it may, the path it is shown
    /// with (relative to its root).
    pub fn neighbour(&self, file: Option<&Path>) -> Result<String, Withheld> {
        let file = file.ok_or(Withheld::NotAFile)?;
        let (root, canonical) = self.place(file).ok_or(Withheld::Outside)?;
        let relative = canonical
            .strip_prefix(&root)
            .map_err(|_| Withheld::Outside)?;
        // The name it was opened by counts too: a link may hide a `.env` behind another name.
        if secret_looking(relative).is_some()
            || file
                .file_name()
                .is_some_and(|name| secret_looking(Path::new(name)).is_some())
        {
            return Err(Withheld::SecretLooking);
        }
        if self.excluded(Some(relative), &canonical) {
            return Err(Withheld::Excluded);
        }
        if !canonical.is_file() {
            return Err(Withheld::NotAFile);
        }
        if ignored(&root, &canonical) {
            return Err(Withheld::Ignored);
        }
        Ok(slashed(relative))
    }

    /// `neighbour`, judged once per file for the life of these rules.
    fn neighbour_kept(&self, file: Option<&Path>) -> Result<String, Withheld> {
        let file = file.ok_or(Withheld::NotAFile)?;
        if let Some(verdict) = super::lock(&self.judged).get(file) {
            return verdict.clone();
        }
        let verdict = self.neighbour(Some(file));
        super::lock(&self.judged).insert(file.to_path_buf(), verdict.clone());
        verdict
    }

    /// Why a definition found in the file shown as `shown` (relative to the first root, or
    /// absolute) may not be shown: the symbol index holds only the workspace's files that no
    /// ignore file leaves out, so only the name and the settings are left to judge.
    pub fn definition(&self, shown: &str) -> Option<Withheld> {
        let path = Path::new(shown);
        if secret_looking(path).is_some() {
            return Some(Withheld::SecretLooking);
        }
        let (relative, absolute) = match self.workspace.primary_root() {
            Some(root) if path.is_relative() => (Some(path), root.join(path)),
            _ => (None, path.to_path_buf()),
        };
        self.excluded(relative, &absolute)
            .then_some(Withheld::Excluded)
    }

    /// The root `file` is in, and its canonical path, when it is in one.
    fn place(&self, file: &Path) -> Option<(PathBuf, PathBuf)> {
        let canonical = self.workspace.resolve(file.to_str()?).ok()?;
        let root = self
            .workspace
            .roots()
            .iter()
            .find(|root| canonical.starts_with(root))?;
        Some((root.clone(), canonical))
    }

    fn excluded(&self, relative: Option<&Path>, absolute: &Path) -> bool {
        relative.is_some_and(|relative| self.exclude.is_match(slashed(relative)))
            || self.exclude.is_match(slashed(absolute))
    }
}

/// A pattern of `completion.excludeDocuments` as it is matched: one without a `/` matches the
/// file name in any folder, as in `.gitignore`; `*` stays within a folder, `**` crosses them.
pub fn exclude_pattern(pattern: &str) -> Result<Glob, String> {
    let anchored = if pattern.contains('/') {
        pattern.to_owned()
    } else {
        format!("**/{pattern}")
    };
    GlobBuilder::new(&anchored)
        .literal_separator(true)
        .build()
        .map_err(|error| format!("invalid glob pattern `{pattern}`: {}", error.kind()))
}

/// `path` with `/` between its parts, whatever the platform.
fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Whether the ignore rules leave `file` (canonical, inside `root`) out: a walk from `root`
/// down the folders on the way to it, as the agent's tools walk (dotfiles in, `.git/` out,
/// `.gitignore` honoured outside a git repository too), does not reach it.
fn ignored(root: &Path, file: &Path) -> bool {
    let target = file.to_path_buf();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(move |entry| entry.file_name() != ".git" && target.starts_with(entry.path()))
        .build();
    !walker
        .filter_map(Result::ok)
        .any(|entry| entry.path() == file)
}

/// Judges a request's documents: why the current one, `file`, gets no completion, if it does
/// not; else which of the recent ones, by index, may be shown and with which path — the first
/// `MAX_NEIGHBOURS` the rules allow.
pub fn screen(
    rules: &DocumentRules,
    file: Option<&Path>,
    recent: &[Option<PathBuf>],
) -> Result<Vec<(usize, String)>, Withheld> {
    if let Some(withheld) = rules.current(file) {
        return Err(withheld);
    }
    let mut allowed = Vec::new();
    for (index, recent) in recent.iter().enumerate() {
        if allowed.len() == MAX_NEIGHBOURS {
            break;
        }
        match rules.neighbour_kept(recent.as_deref()) {
            Ok(path) => allowed.push((index, path)),
            Err(withheld) => {
                tracing::debug!(?recent, ?withheld, "not shown to the completion model")
            }
        }
    }
    Ok(allowed)
}

/// A definition of a name used near the cursor: where, and its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The name it defines.
    pub name: String,
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub text: String,
}

/// Lines of a snippet, and the lines compared to find it.
const WINDOW_LINES: usize = 20;
/// Windows start every this many lines.
const WINDOW_STEP: usize = 10;
/// Snippets shown at most.
const MAX_SNIPPETS: usize = 2;
/// A window this similar to the lines before the cursor (Jaccard over identifiers) or more.
const MIN_SIMILARITY: f64 = 0.1;
/// Names looked up, at most.
pub const MAX_NAMES: usize = 8;
/// Neighbours' lines read, at most, each.
const MAX_NEIGHBOUR_LINES: usize = 4_000;

/// Words that are the language, not the code's own names.
const KEYWORDS: &[&str] = &[
    "and",
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "crate",
    "def",
    "default",
    "defer",
    "del",
    "do",
    "elif",
    "else",
    "enum",
    "except",
    "export",
    "extends",
    "false",
    "final",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "go",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "is",
    "lambda",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "none",
    "not",
    "null",
    "or",
    "package",
    "pass",
    "pub",
    "raise",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "switch",
    "this",
    "throw",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "use",
    "var",
    "void",
    "where",
    "while",
    "with",
    "yield",
    "None",
    "True",
    "False",
    "Self",
    "String",
    "str",
    "int",
    "i32",
    "i64",
    "u8",
    "u32",
    "u64",
    "usize",
    "bool",
    "f64",
    "float",
    "Vec",
    "Option",
    "Some",
    "Ok",
    "Err",
    "Result",
];

/// The identifiers of `text` that are not keywords, in order.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && !KEYWORDS.contains(word)
        })
}

/// The names used in the last lines before the cursor and on its line after it, most recent
/// first: what a definition would help to use right.
pub fn names_near_cursor(before: &str, after: &str) -> Vec<String> {
    let recent: Vec<&str> = before.lines().rev().take(3).collect();
    let line_after = after.split('\n').next().unwrap_or("");
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    let words = recent
        .iter()
        .flat_map(|line| identifiers(line).collect::<Vec<_>>().into_iter().rev())
        .chain(identifiers(line_after));
    for word in words {
        if word.len() < 3 || !seen.insert(word) {
            continue;
        }
        names.push(word.to_owned());
        if names.len() == MAX_NAMES {
            break;
        }
    }
    names
}

/// Up to two windows of recently used documents most like the lines before the cursor, with
/// their paths, best first.
pub fn similar_snippets(before: &str, neighbours: &[Neighbour]) -> Vec<(String, String)> {
    let query_lines: Vec<&str> = before.lines().rev().take(WINDOW_LINES).collect();
    let query: HashSet<&str> = query_lines
        .iter()
        .flat_map(|line| identifiers(line))
        .collect();
    if query.is_empty() {
        return Vec::new();
    }
    let mut best: Vec<(f64, String, String)> = Vec::new();
    for neighbour in neighbours {
        let lines: Vec<&str> = neighbour.text.lines().take(MAX_NEIGHBOUR_LINES).collect();
        if let Some((score, start)) = best_window(&lines, &query) {
            let end = (start + WINDOW_LINES).min(lines.len());
            best.push((score, neighbour.path.clone(), lines[start..end].join("\n")));
        }
    }
    best.sort_by(|a, b| b.0.total_cmp(&a.0));
    best.into_iter()
        .take(MAX_SNIPPETS)
        .map(|(_, path, text)| (path, text))
        .collect()
}

/// The start of the window of `lines` most like `query` and its similarity, when that is
/// `MIN_SIMILARITY` or more. The window slides by `WINDOW_STEP` lines with counts of its
/// identifiers kept up to date, so each line is read once.
fn best_window(lines: &[&str], query: &HashSet<&str>) -> Option<(f64, usize)> {
    let words: Vec<Vec<&str>> = lines
        .iter()
        .map(|line| identifiers(line).collect())
        .collect();
    let mut window = Window::default();
    for line in words.iter().take(WINDOW_LINES) {
        window.add(line, query);
    }
    let mut top: Option<(f64, usize)> = None;
    let mut start = 0;
    loop {
        let score = window.similarity(query.len());
        if top.is_none_or(|(best, _)| score > best) {
            top = Some((score, start));
        }
        if start + WINDOW_LINES >= words.len() {
            break;
        }
        for line in &words[start..start + WINDOW_STEP] {
            window.remove(line, query);
        }
        let end = start + WINDOW_LINES;
        let next_end = (end + WINDOW_STEP).min(words.len());
        for line in &words[end..next_end] {
            window.add(line, query);
        }
        start += WINDOW_STEP;
    }
    top.filter(|(score, _)| *score >= MIN_SIMILARITY)
}

/// The identifiers of a window of lines, counted, and how many distinct ones it has and shares
/// with the query.
#[derive(Default)]
struct Window<'a> {
    counts: HashMap<&'a str, usize>,
    distinct: usize,
    shared: usize,
}

impl<'a> Window<'a> {
    fn add(&mut self, line: &[&'a str], query: &HashSet<&str>) {
        for &word in line {
            let count = self.counts.entry(word).or_insert(0);
            *count += 1;
            if *count == 1 {
                self.distinct += 1;
                self.shared += usize::from(query.contains(word));
            }
        }
    }

    fn remove(&mut self, line: &[&'a str], query: &HashSet<&str>) {
        for &word in line {
            if let Some(count) = self.counts.get_mut(word) {
                *count -= 1;
                if *count == 0 {
                    self.distinct -= 1;
                    self.shared -= usize::from(query.contains(word));
                }
            }
        }
    }

    /// Jaccard similarity with a query of `query_len` distinct identifiers.
    fn similarity(&self, query_len: usize) -> f64 {
        let union = self.distinct + query_len - self.shared;
        if union == 0 {
            0.0
        } else {
            self.shared as f64 / union as f64
        }
    }
}

/// The snippets and definitions as comment lines (`comment` is the language's line comment),
/// ending with a line break; empty when there is nothing to say.
pub fn render(comment: &str, snippets: &[(String, String)], definitions: &[Definition]) -> String {
    let mut out = String::new();
    for (path, text) in snippets {
        out.push_str(&format!("{comment} Compare this snippet from {path}:\n"));
        for line in text.lines() {
            out.push_str(&format!("{comment} {line}\n"));
        }
    }
    if !definitions.is_empty() {
        out.push_str(&format!("{comment} Definitions of names used below:\n"));
        for definition in definitions {
            out.push_str(&format!(
                "{comment} {}:{}: {}\n",
                definition.path, definition.line, definition.text
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_near_the_cursor_most_recent_first_without_keywords() {
        let before = "use crate::math;\nfn total(items: &[Item]) -> u64 {\n    let sum = math::compute_sum(items";
        assert_eq!(
            names_near_cursor(before, ", scale)\n}"),
            [
                "items",
                "compute_sum",
                "math",
                "sum",
                "Item",
                "total",
                "scale"
            ]
        );
    }

    #[test]
    fn the_most_similar_window_of_each_neighbour_best_first() {
        let far: String = (0..30).map(|n| format!("unrelated_{n} = {n}\n")).collect();
        let near = format!("{far}def parse_header(stream):\n    header = stream.read_header()\n    return header.fields\n");
        let other = "def parse_body(stream):\n    return stream.read_body()\n".to_owned();
        let neighbours = [
            Neighbour {
                path: "a.py".to_owned(),
                text: near,
            },
            Neighbour {
                path: "b.py".to_owned(),
                text: other,
            },
            Neighbour {
                path: "c.py".to_owned(),
                text: "x = 1\n".to_owned(),
            },
        ];
        let snippets = similar_snippets(
            "def parse_trailer(stream):\n    header = stream.",
            &neighbours,
        );
        let paths: Vec<&str> = snippets.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(paths, ["b.py", "a.py"]);
        assert!(
            snippets[1].1.contains("def parse_header(stream):"),
            "{}",
            snippets[1].1
        );
        assert!(similar_snippets("", &neighbours).is_empty());
    }

    /// A workspace for the document rules: `files` under `ws/` (links as `-> target`, relative
    /// to the base), and a folder beside it, outside.
    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        for (path, text) in files {
            let path = base.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            if let Some(target) = text.strip_prefix("-> ") {
                #[cfg(unix)]
                std::os::unix::fs::symlink(base.join(target), &path).unwrap();
                #[cfg(not(unix))]
                let _ = target;
            } else {
                std::fs::write(&path, text).unwrap();
            }
        }
        (temp, base)
    }

    const FILES: &[(&str, &str)] = &[
        ("ws/.gitignore", "build/\n*.log.py\n"),
        ("ws/.ignore", "notes/\n"),
        ("ws/src/app.py", "x = 1\n"),
        ("ws/src/.gitignore", "local_*.py\n"),
        ("ws/src/local_settings.py", "TOKEN = 1\n"),
        ("ws/.env.py", "KEY = 'sk-1'\n"),
        ("ws/config/.env", "KEY=sk-1\n"),
        ("ws/password_reset.py", "def reset(): ...\n"),
        ("ws/build/gen.py", "generated = 1\n"),
        ("ws/notes/n.py", "note = 1\n"),
        ("ws/run.log.py", "log = 1\n"),
        ("ws/.git/hooks/pre.py", "hook = 1\n"),
        ("ws/.github/ci.py", "ci = 1\n"),
        ("ws/generated/api.py", "api = 1\n"),
        ("ws/db/schema.sql", "create table t;\n"),
        ("outside/other.py", "other = 1\n"),
        ("outside/.ssh/config", "Host x\n"),
        ("ws/linked_out.py", "-> outside/other.py"),
        ("ws/innocent.py", "-> ws/.env.py"),
    ];

    fn rules(base: &Path) -> DocumentRules {
        DocumentRules::new(
            vec![base.join("ws")],
            &["generated/**".to_owned(), "*.sql".to_owned()],
        )
    }

    /// Issue 35, finding 6: completions sent similar code from any open document of the same
    /// language — one outside the workspace, `.env.py` — to the completion model. A recent
    /// document is shown only when it is a file inside the workspace that is not secret-looking,
    /// excluded or ignored.
    #[test]
    fn which_recent_documents_may_be_shown() {
        let (_temp, base) = workspace(FILES);
        let rules = rules(&base);
        let mut cases: Vec<(&str, Result<&str, Withheld>)> = vec![
            ("ws/src/app.py", Ok("src/app.py")),
            ("ws/.github/ci.py", Ok(".github/ci.py")),
            ("outside/other.py", Err(Withheld::Outside)),
            ("ws/../outside/other.py", Err(Withheld::Outside)),
            ("ws/.env.py", Err(Withheld::SecretLooking)),
            ("ws/config/.env", Err(Withheld::SecretLooking)),
            ("ws/password_reset.py", Err(Withheld::SecretLooking)),
            ("ws/generated/api.py", Err(Withheld::Excluded)),
            ("ws/db/schema.sql", Err(Withheld::Excluded)),
            ("ws/build/gen.py", Err(Withheld::Ignored)),
            ("ws/run.log.py", Err(Withheld::Ignored)),
            ("ws/notes/n.py", Err(Withheld::Ignored)),
            ("ws/src/local_settings.py", Err(Withheld::Ignored)),
            ("ws/.git/hooks/pre.py", Err(Withheld::Ignored)),
            ("ws/src/unsaved.py", Err(Withheld::NotAFile)),
        ];
        if cfg!(unix) {
            // Links are judged by where they lead and by their own name.
            cases.push(("ws/linked_out.py", Err(Withheld::Outside)));
            cases.push(("ws/innocent.py", Err(Withheld::SecretLooking)));
        }
        for (path, expected) in cases {
            let file = base.join(path);
            let judged = rules.neighbour(Some(&file));
            assert_eq!(judged.as_deref().map_err(|w| *w), expected, "{path}");
        }
        assert_eq!(rules.neighbour(None), Err(Withheld::NotAFile));
    }

    /// The document being completed is the user's own: completed outside the workspace and
    /// when ignored, but not in a file made for secrets or one the settings exclude.
    #[test]
    fn which_documents_may_be_completed() {
        let (_temp, base) = workspace(FILES);
        let rules = rules(&base);
        let mut cases = vec![
            ("ws/src/app.py", None),
            ("outside/other.py", None),
            ("ws/build/gen.py", None),
            ("ws/password_reset.py", None),
            ("ws/src/unsaved.py", None),
            ("ws/.env.py", Some(Withheld::SecretLooking)),
            ("ws/config/.env", Some(Withheld::SecretLooking)),
            ("outside/.ssh/config", Some(Withheld::SecretLooking)),
            ("ws/generated/api.py", Some(Withheld::Excluded)),
        ];
        if cfg!(unix) {
            cases.push(("ws/innocent.py", Some(Withheld::SecretLooking)));
        }
        for (path, expected) in cases {
            assert_eq!(rules.current(Some(&base.join(path))), expected, "{path}");
        }
        assert_eq!(rules.current(None), None);
        // An absolute pattern reaches a document outside the workspace.
        let pattern = format!("{}/outside/**", base.display());
        let rules = DocumentRules::new(vec![base.join("ws")], &[pattern]);
        assert_eq!(
            rules.current(Some(&base.join("outside/other.py"))),
            Some(Withheld::Excluded)
        );
    }

    /// Definitions come from the symbol index (the workspace's files, ignore files honoured):
    /// only the name and the settings are left to judge.
    #[test]
    fn which_definitions_may_be_shown() {
        let (_temp, base) = workspace(&[]);
        let rules = rules(&base);
        let cases = [
            ("src/app.py", None),
            ("secrets.py", Some(Withheld::SecretLooking)),
            (".env.py", Some(Withheld::SecretLooking)),
            ("generated/api.py", Some(Withheld::Excluded)),
            ("db/schema.sql", Some(Withheld::Excluded)),
        ];
        for (path, expected) in cases {
            assert_eq!(rules.definition(path), expected, "{path}");
        }
    }

    /// The first `MAX_NEIGHBOURS` allowed documents are shown, however many withheld ones
    /// come before them; the current document's refusal stops everything.
    #[test]
    fn screening_skips_withheld_documents() {
        let (_temp, base) = workspace(FILES);
        let rules = rules(&base);
        let mut recent: Vec<Option<PathBuf>> = vec![
            None,
            Some(base.join("outside/other.py")),
            Some(base.join("ws/.env.py")),
            Some(base.join("ws/build/gen.py")),
        ];
        for n in 0..6 {
            let path = base.join(format!("ws/src/m{n}.py"));
            std::fs::write(&path, "m = 1\n").unwrap();
            recent.push(Some(path));
        }
        let current = base.join("ws/src/app.py");
        let screened = screen(&rules, Some(&current), &recent).unwrap();
        assert_eq!(
            screened,
            [
                (4, "src/m0.py".to_owned()),
                (5, "src/m1.py".to_owned()),
                (6, "src/m2.py".to_owned()),
                (7, "src/m3.py".to_owned()),
            ]
        );
        assert_eq!(
            screen(&rules, Some(&base.join("ws/.env.py")), &recent),
            Err(Withheld::SecretLooking)
        );
    }

    #[test]
    fn exclude_patterns_are_globs() {
        assert!(exclude_pattern("**/*.sql").is_ok());
        assert_eq!(
            exclude_pattern("src/[abc").unwrap_err(),
            "invalid glob pattern `src/[abc`: unclosed character class; missing ']'"
        );
    }

    #[test]
    fn context_is_rendered_as_comments() {
        let text = render(
            "#",
            &[("b.py".to_owned(), "def f():\n    pass".to_owned())],
            &[Definition {
                name: "compute".to_owned(),
                path: "m.py".to_owned(),
                line: 3,
                text: "def compute(a, b):".to_owned(),
            }],
        );
        assert_eq!(
            text,
            "# Compare this snippet from b.py:\n# def f():\n#     pass\n\
             # Definitions of names used below:\n# m.py:3: def compute(a, b):\n"
        );
        assert_eq!(render("//", &[], &[]), "");
    }
}
