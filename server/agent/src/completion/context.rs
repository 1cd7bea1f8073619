//! What a completion model is shown besides the text around the cursor: the code most like the
//! lines before the cursor in the documents used most recently (Copilot's "neighbouring tabs"),
//! and where the names used around the cursor are defined. Both go into the prompt as comments
//! in the file's language, above the path line. Pure: the front end hands over the recent
//! documents' text, the host the definitions it found.

use std::collections::{HashMap, HashSet};

/// A recently used document, as the front end holds it (capped by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    pub path: String,
    pub text: String,
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
