//! The languages Tandem parses: how a file or an editor's language id maps to one, its
//! tree-sitter grammar, and its queries (`queries/<language>/tags.scm` and `outline.scm`,
//! compiled into the binary and compiled by tree-sitter once, on first use).
//!
//! TypeScript and TSX build on the JavaScript patterns: their queries are JavaScript's followed
//! by TypeScript's own, so the JavaScript files must only name nodes all three grammars share.

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use tree_sitter::Query;

use crate::tags::TagRole;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
    Ruby,
    CSharp,
    Bash,
    Lua,
}

impl Language {
    pub const ALL: [Language; 13] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::Ruby,
        Language::CSharp,
        Language::Bash,
        Language::Lua,
    ];

    /// The language's short name, as the `queries/` folders and fixtures name it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Ruby => "ruby",
            Language::CSharp => "csharp",
            Language::Bash => "bash",
            Language::Lua => "lua",
        }
    }

    /// The language of a file, from its extension (or, for a few build files, its name).
    /// A `.h` header is taken for C: C++ headers more often say `.hpp`, and the C grammar reads
    /// the declarations both share.
    pub fn from_path(path: &Path) -> Option<Language> {
        let name = path.file_name()?.to_str()?;
        if matches!(name, "Rakefile" | "Gemfile" | "Guardfile" | "Vagrantfile") {
            return Some(Language::Ruby);
        }
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" | "pyw" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tcc" => {
                Language::Cpp
            }
            "rb" | "rake" | "gemspec" | "ru" => Language::Ruby,
            "cs" => Language::CSharp,
            "sh" | "bash" => Language::Bash,
            "lua" => Language::Lua,
            _ => return None,
        })
    }

    /// The language of an LSP `languageId` (the identifiers VS Code and the LSP specification
    /// list, plus the names Neovim and Helix use).
    pub fn from_language_id(id: &str) -> Option<Language> {
        Some(match id {
            "rust" => Language::Rust,
            "python" => Language::Python,
            "javascript" | "javascriptreact" | "jsx" => Language::JavaScript,
            "typescript" => Language::TypeScript,
            "typescriptreact" | "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" => Language::C,
            "cpp" | "c++" => Language::Cpp,
            "ruby" => Language::Ruby,
            "csharp" | "c_sharp" | "c-sharp" => Language::CSharp,
            "shellscript" | "bash" | "sh" => Language::Bash,
            "lua" => Language::Lua,
            _ => return None,
        })
    }

    /// The language for a document: its language id when it names one, else its path.
    pub fn detect(language_id: Option<&str>, path: &Path) -> Option<Language> {
        language_id
            .and_then(Language::from_language_id)
            .or_else(|| Language::from_path(path))
    }

    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Language::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            Language::Bash => tree_sitter_bash::LANGUAGE.into(),
            Language::Lua => tree_sitter_lua::LANGUAGE.into(),
        }
    }

    /// The source of the language's tags query (`@name` with `@definition.*` / `@reference.*`).
    pub fn tags_source(self) -> String {
        match self {
            Language::TypeScript | Language::Tsx => {
                format!("{}\n{}", sources::JAVASCRIPT_TAGS, sources::TYPESCRIPT_TAGS)
            }
            _ => self.own_sources().0.to_owned(),
        }
    }

    /// The source of the language's outline query (`@item`, `@name`, `@context`, `@body`).
    pub fn outline_source(self) -> String {
        match self {
            Language::TypeScript | Language::Tsx => format!(
                "{}\n{}",
                sources::JAVASCRIPT_OUTLINE,
                sources::TYPESCRIPT_OUTLINE
            ),
            _ => self.own_sources().1.to_owned(),
        }
    }

    fn own_sources(self) -> (&'static str, &'static str) {
        use sources::*;
        match self {
            Language::Rust => (RUST_TAGS, RUST_OUTLINE),
            Language::Python => (PYTHON_TAGS, PYTHON_OUTLINE),
            Language::JavaScript => (JAVASCRIPT_TAGS, JAVASCRIPT_OUTLINE),
            Language::TypeScript | Language::Tsx => (TYPESCRIPT_TAGS, TYPESCRIPT_OUTLINE),
            Language::Go => (GO_TAGS, GO_OUTLINE),
            Language::Java => (JAVA_TAGS, JAVA_OUTLINE),
            Language::C => (C_TAGS, C_OUTLINE),
            Language::Cpp => (CPP_TAGS, CPP_OUTLINE),
            Language::Ruby => (RUBY_TAGS, RUBY_OUTLINE),
            Language::CSharp => (CSHARP_TAGS, CSHARP_OUTLINE),
            Language::Bash => (BASH_TAGS, BASH_OUTLINE),
            Language::Lua => (LUA_TAGS, LUA_OUTLINE),
        }
    }

    /// The compiled queries, compiled on first use and kept for the life of the process.
    pub(crate) fn queries(self) -> Result<&'static Queries> {
        static COMPILED: [OnceLock<Result<Queries, (&'static str, String)>>; 13] =
            [const { OnceLock::new() }; 13];
        let index = Language::ALL
            .iter()
            .position(|language| *language == self)
            .unwrap_or(0);
        COMPILED[index]
            .get_or_init(|| Queries::compile(self))
            .as_ref()
            .map_err(|(file, message)| Error::Query {
                language: self,
                file,
                message: message.clone(),
            })
    }

    /// Compiles both queries against the grammar: what the query test runs for each language.
    pub fn check_queries(self) -> Result<()> {
        self.queries().map(|_| ())
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A language's compiled queries with the capture indices the extractors look up.
pub(crate) struct Queries {
    pub tags: Query,
    pub tag_name: u32,
    /// By capture index: what a `@definition.x` / `@reference.x` capture means.
    pub tag_kinds: Vec<Option<(TagRole, String)>>,
    pub outline: Query,
    pub outline_item: u32,
    pub outline_name: Option<u32>,
    pub outline_context: Option<u32>,
    pub outline_body: Option<u32>,
}

impl Queries {
    fn compile(language: Language) -> Result<Queries, (&'static str, String)> {
        let grammar = language.grammar();
        let compile = |file: &'static str, source: &str| {
            Query::new(&grammar, source).map_err(|error| (file, error.to_string()))
        };
        let tags = compile("tags.scm", &language.tags_source())?;
        let outline = compile("outline.scm", &language.outline_source())?;
        let tag_name = tags
            .capture_index_for_name("name")
            .ok_or(("tags.scm", "it has no @name capture".to_owned()))?;
        let tag_kinds = tags
            .capture_names()
            .iter()
            .map(|name| {
                if let Some(kind) = name.strip_prefix("definition.") {
                    Some((TagRole::Definition, kind.to_owned()))
                } else {
                    name.strip_prefix("reference.")
                        .map(|kind| (TagRole::Reference, kind.to_owned()))
                }
            })
            .collect();
        let outline_item = outline
            .capture_index_for_name("item")
            .ok_or(("outline.scm", "it has no @item capture".to_owned()))?;
        Ok(Queries {
            tag_name,
            tag_kinds,
            outline_item,
            outline_name: outline.capture_index_for_name("name"),
            outline_context: outline.capture_index_for_name("context"),
            outline_body: outline.capture_index_for_name("body"),
            tags,
            outline,
        })
    }
}

/// The query files, compiled into the binary.
mod sources {
    macro_rules! query {
        ($name:ident, $path:literal) => {
            pub const $name: &str = include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../queries/",
                $path
            ));
        };
    }
    query!(RUST_TAGS, "rust/tags.scm");
    query!(RUST_OUTLINE, "rust/outline.scm");
    query!(PYTHON_TAGS, "python/tags.scm");
    query!(PYTHON_OUTLINE, "python/outline.scm");
    query!(JAVASCRIPT_TAGS, "javascript/tags.scm");
    query!(JAVASCRIPT_OUTLINE, "javascript/outline.scm");
    query!(TYPESCRIPT_TAGS, "typescript/tags.scm");
    query!(TYPESCRIPT_OUTLINE, "typescript/outline.scm");
    query!(GO_TAGS, "go/tags.scm");
    query!(GO_OUTLINE, "go/outline.scm");
    query!(JAVA_TAGS, "java/tags.scm");
    query!(JAVA_OUTLINE, "java/outline.scm");
    query!(C_TAGS, "c/tags.scm");
    query!(C_OUTLINE, "c/outline.scm");
    query!(CPP_TAGS, "cpp/tags.scm");
    query!(CPP_OUTLINE, "cpp/outline.scm");
    query!(RUBY_TAGS, "ruby/tags.scm");
    query!(RUBY_OUTLINE, "ruby/outline.scm");
    query!(CSHARP_TAGS, "csharp/tags.scm");
    query!(CSHARP_OUTLINE, "csharp/outline.scm");
    query!(BASH_TAGS, "bash/tags.scm");
    query!(BASH_OUTLINE, "bash/outline.scm");
    query!(LUA_TAGS, "lua/tags.scm");
    query!(LUA_OUTLINE, "lua/outline.scm");
}

/// What can go wrong in this crate: a grammar that does not load, a query that does not
/// compile, a parse tree-sitter gives up on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the {language} grammar cannot be loaded: {message}")]
    Grammar { language: Language, message: String },
    #[error("the {language} query {file} does not compile: {message}")]
    Query {
        language: Language,
        file: &'static str,
        message: String,
    },
    #[error("tree-sitter could not parse the {language} source")]
    ParseFailed { language: Language },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Parses `source` from scratch. `None` only if tree-sitter gives up (it does not, without a
/// timeout or cancellation flag, on any input).
pub fn parse(language: Language, source: &str) -> Result<tree_sitter::Tree> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| Error::Grammar {
            language,
            message: error.to_string(),
        })?;
    parser
        .parse(source, None)
        .ok_or(Error::ParseFailed { language })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles_against_its_grammar() {
        let failures: Vec<String> = Language::ALL
            .iter()
            .filter_map(|language| language.check_queries().err())
            .map(|error| error.to_string())
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn files_and_language_ids_map_to_languages() {
        let of = |path: &str| Language::from_path(Path::new(path));
        assert_eq!(of("src/main.rs"), Some(Language::Rust));
        assert_eq!(of("a/b.TSX"), Some(Language::Tsx));
        assert_eq!(of("x.hpp"), Some(Language::Cpp));
        assert_eq!(of("Rakefile"), Some(Language::Ruby));
        assert_eq!(of("README.md"), None);
        assert_eq!(of("Makefile"), None);
        assert_eq!(
            Language::from_language_id("typescriptreact"),
            Some(Language::Tsx)
        );
        assert_eq!(
            Language::from_language_id("shellscript"),
            Some(Language::Bash)
        );
        assert_eq!(
            Language::detect(Some("plaintext"), Path::new("a.py")),
            Some(Language::Python)
        );
    }
}
