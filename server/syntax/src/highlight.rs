//! Syntax colouring for code shown in a terminal (`tandem chat`'s code blocks and diffs): each
//! language's own `highlights.scm`, from its grammar crate, run by `tree-sitter-highlight`,
//! its captures folded into a few [`Highlight`] kinds a theme colours. Configurations are built
//! once per language, on first use.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock, PoisonError};

use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

use crate::language::Language;

/// What a piece of code is, as a theme colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Highlight {
    Keyword,
    String,
    Comment,
    Function,
    Type,
    Number,
    Constant,
    Property,
    Operator,
    Punctuation,
    Variable,
}

/// The capture names asked for, each with its kind; a capture such as `function.method`
/// matches its longest listed prefix.
const NAMES: [(&str, Highlight); 21] = [
    ("keyword", Highlight::Keyword),
    ("include", Highlight::Keyword),
    ("conditional", Highlight::Keyword),
    ("repeat", Highlight::Keyword),
    ("string", Highlight::String),
    ("escape", Highlight::String),
    ("character", Highlight::String),
    ("comment", Highlight::Comment),
    ("function", Highlight::Function),
    ("method", Highlight::Function),
    ("constructor", Highlight::Type),
    ("type", Highlight::Type),
    ("number", Highlight::Number),
    ("float", Highlight::Number),
    ("constant", Highlight::Constant),
    ("boolean", Highlight::Constant),
    ("attribute", Highlight::Constant),
    ("property", Highlight::Property),
    ("operator", Highlight::Operator),
    ("punctuation", Highlight::Punctuation),
    ("variable", Highlight::Variable),
];

/// A language's configuration, built on first use (`None`: its query does not compile).
fn configuration(language: Language) -> Option<&'static HighlightConfiguration> {
    static CONFIGURATIONS: OnceLock<
        Mutex<HashMap<Language, Option<&'static HighlightConfiguration>>>,
    > = OnceLock::new();
    let configurations = CONFIGURATIONS.get_or_init(Default::default);
    let mut configurations = configurations
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    *configurations.entry(language).or_insert_with(|| {
        let query = highlights_query(language);
        let mut configuration =
            HighlightConfiguration::new(language.grammar(), language.name(), &query, "", "")
                .ok()?;
        let names: Vec<&str> = NAMES.iter().map(|(name, _)| *name).collect();
        configuration.configure(&names);
        // Built once per language and kept for the process: a leak of a few kilobytes each.
        Some(&*Box::leak(Box::new(configuration)))
    })
}

fn highlights_query(language: Language) -> String {
    match language {
        Language::Rust => tree_sitter_rust::HIGHLIGHTS_QUERY.to_owned(),
        Language::Python => tree_sitter_python::HIGHLIGHTS_QUERY.to_owned(),
        Language::JavaScript => tree_sitter_javascript::HIGHLIGHT_QUERY.to_owned(),
        Language::TypeScript => format!(
            "{}\n{}",
            tree_sitter_typescript::HIGHLIGHTS_QUERY,
            tree_sitter_javascript::HIGHLIGHT_QUERY
        ),
        Language::Tsx => format!(
            "{}\n{}\n{}",
            tree_sitter_typescript::HIGHLIGHTS_QUERY,
            tree_sitter_javascript::JSX_HIGHLIGHT_QUERY,
            tree_sitter_javascript::HIGHLIGHT_QUERY
        ),
        Language::Go => tree_sitter_go::HIGHLIGHTS_QUERY.to_owned(),
        Language::Java => tree_sitter_java::HIGHLIGHTS_QUERY.to_owned(),
        Language::C => tree_sitter_c::HIGHLIGHT_QUERY.to_owned(),
        Language::Cpp => format!(
            "{}\n{}",
            tree_sitter_cpp::HIGHLIGHT_QUERY,
            tree_sitter_c::HIGHLIGHT_QUERY
        ),
        Language::Ruby => tree_sitter_ruby::HIGHLIGHTS_QUERY.to_owned(),
        Language::CSharp => tree_sitter_c_sharp::HIGHLIGHTS_QUERY.to_owned(),
        Language::Bash => tree_sitter_bash::HIGHLIGHT_QUERY.to_owned(),
        Language::Lua => tree_sitter_lua::HIGHLIGHTS_QUERY.to_owned(),
    }
}

/// The coloured ranges of `source` (byte ranges, in order, not overlapping); empty when the
/// language's query cannot be used or the parse fails.
pub fn highlights(language: Language, source: &str) -> Vec<(Range<usize>, Highlight)> {
    let Some(configuration) = configuration(language) else {
        return Vec::new();
    };
    let mut highlighter = Highlighter::new();
    let Ok(events) = highlighter.highlight(configuration, source.as_bytes(), None, None, |_| None)
    else {
        return Vec::new();
    };
    let mut ranges = Vec::new();
    let mut stack: Vec<Highlight> = Vec::new();
    for event in events {
        match event {
            Ok(HighlightEvent::HighlightStart(capture)) => {
                if let Some((_, kind)) = NAMES.get(capture.0) {
                    stack.push(*kind);
                }
            }
            Ok(HighlightEvent::HighlightEnd) => {
                stack.pop();
            }
            Ok(HighlightEvent::Source { start, end }) => {
                if let Some(kind) = stack.last() {
                    ranges.push((start..end, *kind));
                }
            }
            Err(_) => return Vec::new(),
        }
    }
    ranges
}

/// The language a code fence's info string names (`rust`, `py`, `ts`, `sh`…).
pub fn fence_language(info: &str) -> Option<Language> {
    let name = info.trim().to_ascii_lowercase();
    Language::from_language_id(&name).or(match name.as_str() {
        "rs" => Some(Language::Rust),
        "py" | "python3" => Some(Language::Python),
        "js" | "jsx" | "mjs" | "node" => Some(Language::JavaScript),
        "ts" => Some(Language::TypeScript),
        "golang" => Some(Language::Go),
        "h" => Some(Language::C),
        "c++" | "cc" | "hpp" | "cxx" => Some(Language::Cpp),
        "rb" => Some(Language::Ruby),
        "cs" | "c#" => Some(Language::CSharp),
        "sh" | "shell" | "zsh" | "console" => Some(Language::Bash),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_highlights_its_keywords_or_strings() {
        let samples = [
            (Language::Rust, "fn main() { let s = \"hi\"; }"),
            (Language::Python, "def f():\n    return \"hi\"\n"),
            (Language::JavaScript, "function f() { return \"hi\"; }"),
            (
                Language::TypeScript,
                "function f(): string { return \"hi\"; }",
            ),
            (Language::Tsx, "function f() { return \"hi\"; }"),
            (Language::Go, "func main() { s := \"hi\" }"),
            (Language::Java, "class A { String s = \"hi\"; }"),
            (Language::C, "int main() { return 0; }"),
            (Language::Cpp, "int main() { return 0; }"),
            (Language::Ruby, "def f\n  \"hi\"\nend\n"),
            (Language::CSharp, "class A { string s = \"hi\"; }"),
            (Language::Bash, "echo \"hi\"\n"),
            (Language::Lua, "local s = \"hi\"\n"),
        ];
        for (language, source) in samples {
            let kinds: Vec<Highlight> = highlights(language, source)
                .into_iter()
                .map(|(_, kind)| kind)
                .collect();
            assert!(
                kinds
                    .iter()
                    .any(|kind| matches!(kind, Highlight::Keyword | Highlight::String)),
                "{language:?}: {kinds:?}"
            );
        }
    }

    #[test]
    fn fences_name_languages_by_their_usual_spellings() {
        assert_eq!(fence_language("rs"), Some(Language::Rust));
        assert_eq!(fence_language("sh"), Some(Language::Bash));
        assert_eq!(fence_language("typescript"), Some(Language::TypeScript));
        assert_eq!(fence_language("text"), None);
    }
}
