//! Hierarchical memory: the `AGENTS.md` (or `GEMINI.md`, `CLAUDE.md`) files the user and the
//! project keep for the agent, gathered most general first — the user's, each workspace root's,
//! then every directory from a root down to the file being worked on — with `@file.md` imports
//! expanded, capped in size, and rendered as one block for the system instruction. Synchronous
//! on purpose (plain `std::fs`, a handful of small files): the caller runs it in
//! `spawn_blocking`. Nothing here fails; what could not be read becomes a warning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use schemars::{Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use tandem_sandbox::workspace::{canonicalize_existing_prefix, normalize};

/// How deep `@file.md` imports nest: deep enough for an index of indexes, shallow enough that a
/// mistake cannot pull in a tree of files.
const MAX_IMPORT_DEPTH: usize = 5;

/// Which memory files to read, where the user's live, and how much of them fits in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// File names looked for in each directory, read in this order when several exist.
    pub file_names: Vec<String>,
    /// The user's own memory directory (`~/.config/tandem`); `None` reads no user file.
    pub user_dir: Option<PathBuf>,
    /// The most bytes of memory (imports included) put in the prompt, all files together.
    pub max_bytes: usize,
    /// Files read after the user's own and before the workspace's: installed plugins' context
    /// files (a Gemini CLI extension's `GEMINI.md`), each read as the user's.
    pub extra_files: Vec<PathBuf>,
}

impl Default for MemoryConfig {
    /// The user directory is the one `settings.json` lives in, so both are found in one place:
    /// `$TANDEM_CONFIG_DIR`, else `<config dir>/tandem`.
    fn default() -> Self {
        let user_dir = std::env::var_os("TANDEM_CONFIG_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs::config_dir().map(|dir| dir.join("tandem")));
        MemoryConfig {
            file_names: ["AGENTS.md", "GEMINI.md", "CLAUDE.md"]
                .map(str::to_owned)
                .to_vec(),
            user_dir,
            max_bytes: 64 * 1024,
            extra_files: Vec::new(),
        }
    }
}

/// Where a memory file was found, from the most general to the most specific.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryScope {
    /// In the user's memory directory: applies to every project.
    User,
    /// At a workspace root.
    Workspace,
    /// In a directory between a root and the focused file.
    Directory,
}

impl MemoryScope {
    pub fn label(self) -> &'static str {
        match self {
            MemoryScope::User => "user",
            MemoryScope::Workspace => "workspace",
            MemoryScope::Directory => "directory",
        }
    }
}

/// One memory file as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    /// Where it was found (under the canonical root or user directory, not symlink-resolved).
    pub path: PathBuf,
    pub scope: MemoryScope,
    /// Its text with `@file.md` imports expanded (and, for the last file when the cap was hit,
    /// cut and ended with the truncation marker).
    pub content: String,
}

/// The memory loaded for a session, most general file first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    pub files: Vec<MemoryFile>,
    /// Whether `max_bytes` cut the memory short.
    pub truncated: bool,
    /// What could not be loaded and why, for the front end to log or show the user.
    pub warnings: Vec<String>,
}

/// A memory file name: no directory part (not empty, not `.` or `..`, no separator or NUL, not
/// a drive-relative `C:x`), so it can only name a file in the directory it is looked for in.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.trim().is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0', ':'])
}

/// Reads the memory files for `roots` (and, given `focus`, the directories down to it).
///
/// Order: the user's files, each root's files, then the files of every directory strictly below
/// the root that contains `focus` down to the focus's directory (the focus itself when it is a
/// directory). In each directory, each name of `file_names` that exists, in that order. A file
/// reached twice (nested roots, a `CLAUDE.md` symlinked to `AGENTS.md`) is read once; a
/// workspace file that resolves outside its root is not read at all. Empty files are left out.
pub fn load(config: &MemoryConfig, roots: &[PathBuf], focus: Option<&Path>) -> Memory {
    let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let user_dir = config.user_dir.as_deref().map(canonical);
    let roots: Vec<PathBuf> = roots.iter().map(|root| canonical(root)).collect();

    // (directory, its scope, the area its files and their imports must stay in)
    let mut sources: Vec<(PathBuf, MemoryScope, PathBuf)> = Vec::new();
    if let Some(user_dir) = &user_dir {
        sources.push((user_dir.clone(), MemoryScope::User, user_dir.clone()));
    }
    for root in &roots {
        sources.push((root.clone(), MemoryScope::Workspace, root.clone()));
    }
    if let Some(focus) = focus {
        // A relative focus is taken as relative to the first root, as tools take paths.
        let focus = match roots.first() {
            Some(root) if focus.is_relative() => root.join(focus),
            _ => focus.to_owned(),
        };
        let focus = canonicalize_existing_prefix(&normalize(&focus)).unwrap_or_else(|link| link);
        let focus_dir = if focus.is_dir() {
            focus.as_path()
        } else {
            focus.parent().unwrap_or(&focus)
        };
        // With nested roots the innermost one owns the focus, so its directories are walked
        // from there rather than read as "directories" of the outer root.
        let owner = roots
            .iter()
            .filter(|root| focus_dir.starts_with(root))
            .max_by_key(|root| root.components().count());
        match owner.and_then(|root| Some((root, focus_dir.strip_prefix(root).ok()?))) {
            Some((root, relative)) => {
                let mut dir = root.clone();
                for component in relative.components() {
                    dir.push(component);
                    sources.push((dir.clone(), MemoryScope::Directory, root.clone()));
                }
            }
            None => tracing::debug!(
                focus = %focus.display(),
                "focus is outside the workspace roots; no directory memory read"
            ),
        }
    }

    let mut loader = Loader {
        user_dir: user_dir.clone(),
        warnings: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    for (dir, scope, area) in &sources {
        // A name with a directory part would read a file anywhere as memory.
        for name in config
            .file_names
            .iter()
            .filter(|name| is_plain_file_name(name))
        {
            let path = dir.join(name);
            // Missing files, directories named like one and dangling links are the common
            // case, not a problem worth a warning.
            if !path.is_file() {
                continue;
            }
            let Ok(resolved) = std::fs::canonicalize(&path) else {
                continue;
            };
            if !seen.insert(resolved.clone()) {
                continue;
            }
            // The user's directory is theirs to link into a dotfiles repository; a project's
            // memory file, though, must not pull in a file from outside the project.
            if *scope != MemoryScope::User && !resolved.starts_with(area) {
                loader.warnings.push(format!(
                    "{}: not loaded: it links to {}, outside the workspace",
                    path.display(),
                    resolved.display()
                ));
                continue;
            }
            let Some(text) = loader.read(&path) else {
                continue;
            };
            let mut stack = vec![resolved];
            let content = loader.expand(&path, &text, area, &mut stack);
            if content.trim().is_empty() {
                continue;
            }
            found.push(MemoryFile {
                path,
                scope: *scope,
                content,
            });
        }
    }
    // Plugins' files come after the user's own, before the workspace's.
    let mut at = found
        .iter()
        .take_while(|file| file.scope == MemoryScope::User)
        .count();
    for path in &config.extra_files {
        let Ok(resolved) = std::fs::canonicalize(path) else {
            continue;
        };
        if !seen.insert(resolved.clone()) {
            continue;
        }
        let Some(text) = loader.read(path) else {
            continue;
        };
        let area = resolved
            .parent()
            .map_or_else(PathBuf::new, Path::to_path_buf);
        let mut stack = vec![resolved];
        let content = loader.expand(path, &text, &area, &mut stack);
        if content.trim().is_empty() {
            continue;
        }
        found.insert(
            at,
            MemoryFile {
                path: path.clone(),
                scope: MemoryScope::User,
                content,
            },
        );
        at += 1;
    }

    let mut memory = Memory {
        files: Vec::new(),
        truncated: false,
        warnings: loader.warnings,
    };
    let mut used = 0;
    let mut rest = found.into_iter();
    while let Some(mut file) = rest.next() {
        let room = config.max_bytes - used;
        if file.content.len() <= room {
            used += file.content.len();
            memory.files.push(file);
            continue;
        }
        let mut cut = room;
        while !file.content.is_char_boundary(cut) {
            cut -= 1;
        }
        let skipped: Vec<MemoryFile> = rest.collect();
        let not_loaded =
            file.content.len() - cut + skipped.iter().map(|file| file.content.len()).sum::<usize>();
        let mut not_loaded_paths: Vec<String> = skipped
            .iter()
            .map(|file| file.path.display().to_string())
            .collect();
        // A file cut to nothing is left out, and the marker goes on the file before it, unless
        // there is none: the model should still learn that memory was there.
        if cut > 0 || memory.files.is_empty() {
            file.content.truncate(cut);
            memory.files.push(file);
        } else {
            not_loaded_paths.insert(0, file.path.display().to_string());
        }
        if let Some(last) = memory.files.last_mut() {
            if !last.content.is_empty() && !last.content.ends_with('\n') {
                last.content.push('\n');
            }
            last.content.push_str(&format!(
                "[… memory truncated: {not_loaded} more bytes not loaded]"
            ));
        }
        memory.truncated = true;
        let mut warning = format!(
            "memory is capped at {} bytes; {not_loaded} bytes were not loaded",
            config.max_bytes
        );
        if !not_loaded_paths.is_empty() {
            warning.push_str(&format!(" (skipped: {})", not_loaded_paths.join(", ")));
        }
        memory.warnings.push(warning);
        break;
    }
    memory
}

impl Memory {
    /// The memory as one block for the system instruction, each file under a header naming its
    /// source as `display` shows it; `None` when there is no memory.
    pub fn render(&self, display: impl Fn(&Path) -> String) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Memory\nThe user and the project keep instructions for you in these files. \
             Follow them; the more specific (later) ones take precedence.\n",
        );
        for file in &self.files {
            out.push_str(&format!(
                "\n## From {} ({})\n{}\n",
                display(&file.path),
                file.scope.label(),
                file.content.trim_end()
            ));
        }
        Some(out)
    }
}

/// Reads files and expands imports, collecting warnings on the way.
struct Loader {
    user_dir: Option<PathBuf>,
    warnings: Vec<String>,
}

impl Loader {
    /// The file's text, or `None` with a warning when it cannot be read or is not UTF-8.
    fn read(&mut self, path: &Path) -> Option<String> {
        match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Some(text),
                Err(_) => {
                    self.warnings.push(format!(
                        "{}: not loaded: it is not valid UTF-8 text",
                        path.display()
                    ));
                    None
                }
            },
            Err(error) => {
                self.warnings
                    .push(format!("{}: not loaded: {error}", path.display()));
                None
            }
        }
    }

    /// `text` (the content of `path`) with each import line replaced by the imported file's
    /// expanded content. `stack` holds the canonical paths being expanded, outermost first, for
    /// cycle detection and the depth limit; imports must resolve inside `area` or the user dir.
    fn expand(&mut self, path: &Path, text: &str, area: &Path, stack: &mut Vec<PathBuf>) -> String {
        let mut out = String::with_capacity(text.len());
        // (fence character, length) of the open code fence: `@` lines in code are examples.
        let mut fence: Option<(char, usize)> = None;
        for line in text.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            let ending = &line[body.len()..];
            let trimmed = body.trim();
            if let Some(marker) = fence_marker(trimmed) {
                match fence {
                    None => fence = Some(marker),
                    // A closing fence is the same character, at least as long, and bare.
                    Some((ch, len))
                        if marker.0 == ch
                            && marker.1 >= len
                            && trimmed.trim_start_matches(ch).trim().is_empty() =>
                    {
                        fence = None;
                    }
                    Some(_) => {}
                }
                out.push_str(line);
                continue;
            }
            let import = match fence {
                Some(_) => None,
                None => trimmed.strip_prefix('@').filter(|target| {
                    target.len() > ".md".len()
                        && target.ends_with(".md")
                        && !target.contains(char::is_whitespace)
                }),
            };
            let Some(target) = import else {
                out.push_str(line);
                continue;
            };
            match self.import(path, target, area, stack) {
                Some(content) => {
                    out.push_str(content.trim_end_matches(['\n', '\r']));
                    out.push_str(ending);
                }
                None => out.push_str(line),
            }
        }
        out
    }

    /// The expanded content of `target` imported from `path`, or `None` with a warning.
    fn import(
        &mut self,
        path: &Path,
        target: &str,
        area: &Path,
        stack: &mut Vec<PathBuf>,
    ) -> Option<String> {
        let dir = path.parent().unwrap_or(Path::new(""));
        let joined = normalize(&dir.join(target));
        let Ok(resolved) = std::fs::canonicalize(&joined) else {
            self.warnings.push(format!(
                "{}: import `@{target}` skipped: {} does not exist",
                path.display(),
                joined.display()
            ));
            return None;
        };
        let allowed = resolved.starts_with(area)
            || self
                .user_dir
                .as_deref()
                .is_some_and(|user_dir| resolved.starts_with(user_dir));
        if !allowed {
            self.warnings.push(format!(
                "{}: import `@{target}` refused: {} is outside {}; imports stay inside the \
                 importing file's workspace root or the user's memory directory",
                path.display(),
                resolved.display(),
                area.display()
            ));
            return None;
        }
        if stack.contains(&resolved) {
            let chain: Vec<String> = stack
                .iter()
                .chain([&resolved])
                .map(|path| path.display().to_string())
                .collect();
            self.warnings.push(format!(
                "{}: import `@{target}` skipped: it is a cycle ({})",
                path.display(),
                chain.join(" → ")
            ));
            return None;
        }
        // The top file is in the stack too, so its imports are at depth 1.
        if stack.len() > MAX_IMPORT_DEPTH {
            self.warnings.push(format!(
                "{}: import `@{target}` skipped: imports nest at most {MAX_IMPORT_DEPTH} deep",
                path.display()
            ));
            return None;
        }
        let text = self.read(&resolved)?;
        stack.push(resolved.clone());
        let content = self.expand(&resolved, &text, area, stack);
        stack.pop();
        Some(content)
    }
}

/// The fence character and run length when `line` (trimmed) opens or closes a code fence.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|ch| matches!(ch, '`' | '~'))?;
    let len = line.chars().take_while(|&c| c == ch).count();
    (len >= 3).then_some((ch, len))
}

// Unset fields take `MemoryConfig`'s defaults, which the schema shows
// (`memory_file_names_schema`, `memory_max_bytes_schema`).
/// Memory files (the `memory` settings key): which are read, and how much of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct MemorySettings {
    /// Memory file names, in the order they are read in each directory: plain names, no paths.
    // Skipped when unset so that the schema's default is `MemoryConfig`'s, not `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "memory_file_names_schema")]
    pub file_names: Option<Vec<String>>,
    /// The most memory text loaded, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "memory_max_bytes_schema")]
    pub max_bytes: Option<usize>,
}

/// `memory.fileNames`: what `memory::is_plain_file_name` accepts (not blank, not `.` or `..`,
/// no `/`, `\`, `:` or NUL), with the names read when it is unset.
fn memory_file_names_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": ["array", "null"],
        "items": {
            "type": "string",
            "pattern": r"^[^/\\:\u0000]*[^/\\:\u0000\s][^/\\:\u0000]*$",
            "not": {"enum": [".", ".."]}
        },
        "default": MemoryConfig::default().file_names,
    })
}

/// `memory.maxBytes`, with the limit that applies when it is unset.
fn memory_max_bytes_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<Option<usize>>();
    schema.insert("default".into(), MemoryConfig::default().max_bytes.into());
    schema
}

impl MemorySettings {
    pub fn config(&self) -> MemoryConfig {
        let mut config = MemoryConfig::default();
        if let Some(names) = &self.file_names {
            config.file_names = names.clone();
        }
        if let Some(max_bytes) = self.max_bytes {
            config.max_bytes = max_bytes;
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    /// A temp directory laid out from a fixture: `//- path` lines start a file (relative to the
    /// base), the lines after it are its content. By convention `user/` is the user directory
    /// and `project/` the workspace root.
    struct Fixture {
        _temp: tempfile::TempDir,
        base: PathBuf,
    }

    impl Fixture {
        fn new(fixture: &str) -> Fixture {
            let temp = tempfile::tempdir().unwrap();
            let base = std::fs::canonicalize(temp.path()).unwrap();
            let mut files: Vec<(String, String)> = Vec::new();
            for line in dedent(fixture).lines() {
                if let Some(path) = line.strip_prefix("//- ") {
                    files.push((path.trim().to_owned(), String::new()));
                } else if let Some((_, content)) = files.last_mut() {
                    content.push_str(line);
                    content.push('\n');
                }
            }
            for (path, content) in files {
                let path = base.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content).unwrap();
            }
            std::fs::create_dir_all(base.join("project")).unwrap();
            Fixture { _temp: temp, base }
        }

        fn config(&self, max_bytes: usize) -> MemoryConfig {
            MemoryConfig {
                user_dir: Some(self.base.join("user")),
                max_bytes,
                ..MemoryConfig::default()
            }
        }

        /// Loads with `roots` and `focus` relative to the base, and shows the rendered memory,
        /// `truncated` and the warnings with the base stripped from paths.
        fn check(
            &self,
            config: &MemoryConfig,
            roots: &[&str],
            focus: Option<&str>,
            expect: Expect,
        ) {
            let roots: Vec<PathBuf> = roots.iter().map(|root| self.base.join(root)).collect();
            let focus = focus.map(|focus| self.base.join(focus));
            let memory = load(config, &roots, focus.as_deref());
            let display = |path: &Path| {
                path.strip_prefix(&self.base)
                    .unwrap_or(path)
                    .display()
                    .to_string()
            };
            let mut out = memory
                .render(display)
                .unwrap_or_else(|| "(no memory)\n".to_owned());
            if memory.truncated {
                out.push_str("-- truncated\n");
            }
            let base = format!("{}/", self.base.display());
            for warning in &memory.warnings {
                out.push_str(&format!("-- warning: {}\n", warning.replace(&base, "")));
            }
            expect.assert_eq(&out);
        }
    }

    fn dedent(text: &str) -> String {
        let indent = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.len() - line.trim_start().len())
            .min()
            .unwrap_or(0);
        text.lines()
            .map(|line| line.get(indent..).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    }

    const BIG: usize = 64 * 1024;

    #[test]
    fn user_then_root_then_each_directory_down_to_the_focus() {
        let f = Fixture::new(
            r#"
            //- user/AGENTS.md
            Answer in British English.
            //- project/AGENTS.md
            Run `cargo test` before finishing.
            //- project/src/AGENTS.md
            Source conventions.
            //- project/src/parser/AGENTS.md
            The parser is hand-written; no generators.
            //- project/src/parser/inner/AGENTS.md
            Below the focus: not read.
            //- project/src/lexer/AGENTS.md
            A sibling of the focus: not read.
            //- project/src/parser/mod.rs
            "#,
        );
        f.check(
            &f.config(BIG),
            &["project"],
            Some("project/src/parser/mod.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From user/AGENTS.md (user)
                Answer in British English.

                ## From project/AGENTS.md (workspace)
                Run `cargo test` before finishing.

                ## From project/src/AGENTS.md (directory)
                Source conventions.

                ## From project/src/parser/AGENTS.md (directory)
                The parser is hand-written; no generators.
            "#]],
        );
        // A directory focus includes that directory; a file not saved yet still finds its own.
        f.check(
            &MemoryConfig {
                user_dir: None,
                ..f.config(BIG)
            },
            &["project"],
            Some("project/src/lexer"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Run `cargo test` before finishing.

                ## From project/src/AGENTS.md (directory)
                Source conventions.

                ## From project/src/lexer/AGENTS.md (directory)
                A sibling of the focus: not read.
            "#]],
        );
        f.check(
            &MemoryConfig {
                user_dir: None,
                ..f.config(BIG)
            },
            &["project"],
            Some("project/src/parser/inner/new_file.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Run `cargo test` before finishing.

                ## From project/src/AGENTS.md (directory)
                Source conventions.

                ## From project/src/parser/AGENTS.md (directory)
                The parser is hand-written; no generators.

                ## From project/src/parser/inner/AGENTS.md (directory)
                Below the focus: not read.
            "#]],
        );
    }

    #[test]
    fn every_configured_name_in_a_directory_in_config_order() {
        let f = Fixture::new(
            r#"
            //- project/CLAUDE.md
            From CLAUDE.md.
            //- project/GEMINI.md
            From GEMINI.md.
            //- project/AGENTS.md
            From AGENTS.md.
            //- project/README.md
            Not a memory file.
            //- project/EMPTY/AGENTS.md
            "#,
        );
        f.check(
            &f.config(BIG),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                From AGENTS.md.

                ## From project/GEMINI.md (workspace)
                From GEMINI.md.

                ## From project/CLAUDE.md (workspace)
                From CLAUDE.md.
            "#]],
        );
        f.check(
            &MemoryConfig {
                file_names: vec!["CLAUDE.md".to_owned(), "AGENTS.md".to_owned()],
                ..f.config(BIG)
            },
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/CLAUDE.md (workspace)
                From CLAUDE.md.

                ## From project/AGENTS.md (workspace)
                From AGENTS.md.
            "#]],
        );
    }

    #[test]
    fn focus_outside_the_roots_reads_only_the_roots() {
        let f = Fixture::new(
            r#"
            //- project/AGENTS.md
            Project.
            //- other/AGENTS.md
            Outside the workspace.
            //- other/src/AGENTS.md
            Outside the workspace too.
            //- second/AGENTS.md
            Second root.
            //- second/lib/AGENTS.md
            In the second root, below the focus' root.
            "#,
        );
        f.check(
            &f.config(BIG),
            &["project"],
            Some("other/src/main.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Project.
            "#]],
        );
        // Every root contributes its own file; directories come from the focus' root only.
        f.check(
            &f.config(BIG),
            &["project", "second"],
            Some("second/lib/x.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Project.

                ## From second/AGENTS.md (workspace)
                Second root.

                ## From second/lib/AGENTS.md (directory)
                In the second root, below the focus' root.
            "#]],
        );
    }

    #[test]
    fn imports_are_expanded_in_place() {
        let f = Fixture::new(
            r#"
            //- project/AGENTS.md
            # Project
            @docs/style.md
            Write to @someone.md inline: not an import.
            @notes.txt is not markdown: not an import.
            ```markdown
            @docs/style.md
            ```
            ~~~
            ```
            @docs/style.md
            ~~~
            @./docs/missing.md
            @../outside.md
            @cycle/a.md
            End.
            //- project/docs/style.md
            Style: short functions.
            @./rules/naming.md
            //- project/docs/rules/naming.md
            Naming: no abbreviations.
            @../../shared.md
            //- project/shared.md
            Shared, reached through `..` inside the root.
            //- project/cycle/a.md
            A imports B.
            @b.md
            //- project/cycle/b.md
            B imports A.
            @a.md
            //- outside.md
            Secret outside the root.
            "#,
        );
        f.check(
            &f.config(BIG),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                # Project
                Style: short functions.
                Naming: no abbreviations.
                Shared, reached through `..` inside the root.
                Write to @someone.md inline: not an import.
                @notes.txt is not markdown: not an import.
                ```markdown
                @docs/style.md
                ```
                ~~~
                ```
                @docs/style.md
                ~~~
                @./docs/missing.md
                @../outside.md
                A imports B.
                B imports A.
                @a.md
                End.
                -- warning: project/AGENTS.md: import `@./docs/missing.md` skipped: project/docs/missing.md does not exist
                -- warning: project/AGENTS.md: import `@../outside.md` refused: outside.md is outside project; imports stay inside the importing file's workspace root or the user's memory directory
                -- warning: project/cycle/b.md: import `@a.md` skipped: it is a cycle (project/AGENTS.md → project/cycle/a.md → project/cycle/b.md → project/cycle/a.md)
            "#]],
        );
    }

    #[test]
    fn imports_may_reach_the_user_dir_and_nest_five_deep() {
        let f = Fixture::new(
            r#"
            //- user/AGENTS.md
            @shared/common.md
            //- user/shared/common.md
            Common to all projects.
            //- project/AGENTS.md
            @../user/shared/common.md
            @1.md
            //- project/1.md
            one
            @2.md
            //- project/2.md
            two
            @3.md
            //- project/3.md
            three
            @4.md
            //- project/4.md
            four
            @5.md
            //- project/5.md
            five
            @6.md
            //- project/6.md
            six: too deep
            "#,
        );
        f.check(
            &f.config(BIG),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From user/AGENTS.md (user)
                Common to all projects.

                ## From project/AGENTS.md (workspace)
                Common to all projects.
                one
                two
                three
                four
                five
                @6.md
                -- warning: project/5.md: import `@6.md` skipped: imports nest at most 5 deep
            "#]],
        );
    }

    #[test]
    fn size_cap_cuts_the_last_file_and_skips_the_rest() {
        let f = Fixture::new(
            r#"
            //- user/AGENTS.md
            0123456789
            //- project/AGENTS.md
            café au lait
            //- project/src/AGENTS.md
            never loaded
            "#,
        );
        // 11 bytes of the user file, then 4 bytes: "caf" and not half of the "é".
        f.check(
            &f.config(15),
            &["project"],
            Some("project/src/lib.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From user/AGENTS.md (user)
                0123456789

                ## From project/AGENTS.md (workspace)
                caf
                [… memory truncated: 24 more bytes not loaded]
                -- truncated
                -- warning: memory is capped at 15 bytes; 24 bytes were not loaded (skipped: project/src/AGENTS.md)
            "#]],
        );
        // Full after a whole file: the marker goes on that file and the next is skipped.
        f.check(
            &f.config(11),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From user/AGENTS.md (user)
                0123456789
                [… memory truncated: 14 more bytes not loaded]
                -- truncated
                -- warning: memory is capped at 11 bytes; 14 bytes were not loaded (skipped: project/AGENTS.md)
            "#]],
        );
        // Exactly the size of everything: nothing is cut.
        f.check(
            &f.config(11 + 14),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From user/AGENTS.md (user)
                0123456789

                ## From project/AGENTS.md (workspace)
                café au lait
            "#]],
        );
    }

    #[test]
    fn non_utf8_file_is_skipped_with_a_warning() {
        let f = Fixture::new(
            r#"
            //- project/AGENTS.md
            Readable.
            @latin1.md
            "#,
        );
        std::fs::write(f.base.join("project/CLAUDE.md"), b"caf\xe9\n").unwrap();
        std::fs::write(f.base.join("project/latin1.md"), b"na\xefve\n").unwrap();
        f.check(
            &f.config(BIG),
            &["project"],
            None,
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Readable.
                @latin1.md
                -- warning: project/latin1.md: not loaded: it is not valid UTF-8 text
                -- warning: project/CLAUDE.md: not loaded: it is not valid UTF-8 text
            "#]],
        );
    }

    #[test]
    fn no_files_renders_nothing() {
        let f = Fixture::new(
            r#"
            //- project/src/main.rs
            fn main() {}
            "#,
        );
        let memory = load(
            &f.config(BIG),
            &[f.base.join("project")],
            Some(&f.base.join("project/src/main.rs")),
        );
        assert_eq!(memory, Memory::default());
        assert_eq!(memory.render(|path| path.display().to_string()), None);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_read_once_and_never_lead_outside_the_root() {
        let f = Fixture::new(
            r#"
            //- project/AGENTS.md
            Shared by every agent.
            //- project/src/AGENTS.md
            Source.
            //- elsewhere/AGENTS.md
            Outside the workspace.
            "#,
        );
        let project = f.base.join("project");
        std::os::unix::fs::symlink("AGENTS.md", project.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink(
            f.base.join("elsewhere/AGENTS.md"),
            project.join("src/GEMINI.md"),
        )
        .unwrap();
        f.check(
            &f.config(BIG),
            &["project", "project/src"],
            Some("project/src/lib.rs"),
            expect![[r#"
                # Memory
                The user and the project keep instructions for you in these files. Follow them; the more specific (later) ones take precedence.

                ## From project/AGENTS.md (workspace)
                Shared by every agent.

                ## From project/src/AGENTS.md (workspace)
                Source.
                -- warning: project/src/GEMINI.md: not loaded: it links to elsewhere/AGENTS.md, outside the workspace
            "#]],
        );
    }
}
