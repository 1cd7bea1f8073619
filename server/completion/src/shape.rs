//! The pure parts of an inline completion: the prefix and suffix a model is shown (cut at line
//! boundaries, with the file's path as a comment where the language has one), whether the
//! suggestion may span lines, and the model's text trimmed to what should be inserted (one line
//! or a block, without what already follows the cursor). No I/O; microseconds.

/// How many characters before the cursor a model is shown at most, unless the `completion`
/// settings say otherwise (`prefixChars`).
pub const DEFAULT_PREFIX_CHARS: usize = 6_000;
/// How many characters after the cursor a model is shown at most (`suffixChars`).
pub const DEFAULT_SUFFIX_CHARS: usize = 2_000;
/// The most lines a multi-line suggestion keeps.
const MAX_LINES: usize = 16;

/// The text around the cursor that a front end takes from its buffer: at most `prefixChars`
/// before and `suffixChars` after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Around {
    pub before: String,
    pub after: String,
    /// Whether `before` starts at the start of the file or of a syntax node (a statement, an
    /// item), so the model sees it whole; else it starts mid-line and is cut to whole lines.
    pub starts_at_boundary: bool,
    /// Whether `after` ends at the end of the file or of a syntax node; else it is cut to
    /// whole lines.
    pub ends_at_boundary: bool,
}

/// Where a front end found syntax boundaries in its window (`Around`): UTF-8 bytes to drop
/// from the start of `before`, and bytes of `after` to keep.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cuts {
    pub drop_before: Option<usize>,
    pub keep_after: Option<usize>,
}

impl Around {
    /// The window cut at `cuts` (a cut that is not a character boundary is ignored).
    pub fn cut(&self, cuts: Cuts) -> Around {
        let mut cut = self.clone();
        if let Some(at) = cuts
            .drop_before
            .filter(|&at| self.before.is_char_boundary(at))
        {
            cut.before = self.before[at..].to_owned();
            cut.starts_at_boundary = true;
        }
        if let Some(at) = cuts
            .keep_after
            .filter(|&at| self.after.is_char_boundary(at))
        {
            cut.after.truncate(at);
            cut.ends_at_boundary = true;
        }
        cut
    }
}

/// The prefix and suffix for the model: `before` from its first whole line and `after` to its
/// last whole line (unless they are cut at a boundary already), and a first line naming the file, in the language's comment syntax, after the
/// `context` comment lines (`context::render`; only where the language has line comments).
pub fn fim_parts(around: &Around, path: &str, language: &str, context: &str) -> (String, String) {
    let mut before = around.before.as_str();
    if !around.starts_at_boundary {
        before = before.split_once('\n').map_or("", |(_, rest)| rest);
    }
    let mut after = around.after.as_str();
    if !around.ends_at_boundary {
        after = after.rsplit_once('\n').map_or("", |(kept, _)| kept);
    }
    let prefix = match comment_for(language) {
        Some(comment) if !path.is_empty() => format!("{context}{comment} Path: {path}\n{before}"),
        _ => before.to_owned(),
    };
    (prefix, after.to_owned())
}

/// The line comment of a language, by its LSP language id; `None` where it has only block
/// comments or is not known.
pub fn comment_for(language: &str) -> Option<&'static str> {
    tandem_syntax::comment_syntax(language, "")
        .filter(|(_, close)| close.is_empty())
        .map(|(open, _)| open)
}

/// Whether a suggestion may span lines here: nothing but whitespace follows the cursor on its
/// line, and the line so far is blank or ends by opening a block (`{`, `(`, `[`, `:`, `=>`, `=`).
/// Elsewhere (mid-line, after an identifier) one line is what the user is writing.
pub fn multiline_allowed(around: &Around) -> bool {
    let line_before = around.before.rsplit('\n').next().unwrap_or("");
    let line_after = around.after.split('\n').next().unwrap_or("");
    if !line_after.trim().is_empty() {
        return false;
    }
    let before = line_before.trim_end();
    before.trim().is_empty()
        || ["{", "(", "[", ":", "=>", "=", "->", " do", " then"]
            .iter()
            .any(|opener| before.ends_with(opener))
}

/// The model's `raw` answer as a suggestion at the cursor of `around`: one line unless
/// `multiline`, at most `MAX_LINES`, without trailing blank lines, and without the text that
/// already follows the cursor (the rest of the line, or whole lines after it). `None` when
/// nothing is left.
pub fn shape(raw: &str, around: &Around, multiline: bool) -> Option<String> {
    let raw = raw.replace("\r\n", "\n");
    let mut text = if multiline {
        raw.split('\n')
            .take(MAX_LINES)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        raw.split('\n').next().unwrap_or("").to_owned()
    };
    let line_after = around.after.split('\n').next().unwrap_or("");
    trim_line_overlap(&mut text, line_after);
    if multiline {
        trim_block_overlap(&mut text, &around.after);
    }
    let trimmed_len = text.trim_end().len();
    text.truncate(trimmed_len);
    // A suggestion of only whitespace is none.
    if text.trim().is_empty() {
        return None;
    }
    Some(text)
}

/// Drops the end of `text` that the rest of the line already has: all of it (`foo(a, b)`
/// suggested before `)`), or a run of closing characters the line starts with.
fn trim_line_overlap(text: &mut String, line_after: &str) {
    let rest = line_after.trim_end();
    if rest.is_empty() {
        return;
    }
    let last_line_start = text.rfind('\n').map_or(0, |at| at + 1);
    if text[last_line_start..].trim_end().ends_with(rest) {
        let end = last_line_start + text[last_line_start..].trim_end().len() - rest.len();
        text.truncate(end);
        return;
    }
    // The longest run of closers both share: the suggestion's end and the line's start.
    let closers: String = rest
        .chars()
        .take_while(|c| matches!(c, ')' | ']' | '}' | '"' | '\'' | '`' | ';' | ','))
        .collect();
    for length in (1..=closers.len()).rev() {
        let piece = &closers[..length];
        if text.trim_end().ends_with(piece) {
            let end = text.trim_end().len() - piece.len();
            text.truncate(end);
            return;
        }
    }
}

/// Drops the last lines of a block suggestion that repeat the lines after the cursor's line
/// (a model that wrote the closing `}` the file already has).
fn trim_block_overlap(text: &mut String, after: &str) {
    let following: Vec<&str> = after
        .split('\n')
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take(MAX_LINES)
        .collect();
    let mut lines: Vec<&str> = text.trim_end().split('\n').collect();
    // The most last lines the file's next lines start with; the first line always stays.
    let repeated = (1..lines.len()).rev().find(|&n| {
        n <= following.len()
            && lines[lines.len() - n..]
                .iter()
                .zip(&following)
                .all(|(mine, theirs)| mine.trim() == *theirs)
    });
    if let Some(n) = repeated {
        lines.truncate(lines.len() - n);
    }
    *text = lines.join("\n");
}

/// Whether inserting `text` at the cursor of `around` adds syntax errors that the text around
/// it did not have, judged on the lines the model was shown (parsed with and without it) in
/// languages Tandem has a grammar for. A line that ends by opening a block (`{`, `(`, `[`, `:`)
/// is not judged: the block's end is what the user writes next.
pub fn adds_syntax_errors(text: &str, around: &Around, language: &str, path: &str) -> bool {
    let Some(language) =
        tandem_syntax::Language::detect(Some(language), std::path::Path::new(path))
    else {
        return false;
    };
    if text.trim_end().ends_with(['{', '(', '[', ':']) {
        return false;
    }
    // The lines nearest the cursor are enough to judge, and parsing them costs far less.
    let near = Around {
        before: last_chars(&around.before, GUARD_BEFORE_CHARS).to_owned(),
        after: first_chars(&around.after, GUARD_AFTER_CHARS).to_owned(),
        starts_at_boundary: around.starts_at_boundary
            && around.before.chars().count() <= GUARD_BEFORE_CHARS,
        ends_at_boundary: around.ends_at_boundary
            && around.after.chars().count() <= GUARD_AFTER_CHARS,
    };
    let (prefix, suffix) = fim_parts(&near, "", "", "");
    let before = format!("{prefix}{suffix}");
    let after = format!("{prefix}{text}{suffix}");
    matches!(
        tandem_syntax::guard::check_edit(language, &before, &after),
        Ok(Some(_))
    )
}

/// Characters before and after the cursor the syntax guard parses, at most.
const GUARD_BEFORE_CHARS: usize = 1_500;
const GUARD_AFTER_CHARS: usize = 500;

/// The last `count` characters of `text`.
fn last_chars(text: &str, count: usize) -> &str {
    match text.char_indices().rev().nth(count.saturating_sub(1)) {
        Some((at, _)) if count > 0 => &text[at..],
        _ if count == 0 => "",
        _ => text,
    }
}

/// The first `count` characters of `text`.
fn first_chars(text: &str, count: usize) -> &str {
    match text.char_indices().nth(count) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// When the user typed `typed` since a suggestion `previous` was made and it starts it, the
/// rest of that suggestion: typing through a suggestion keeps it without asking again.
pub fn typed_through<'a>(previous: &'a str, typed: &str) -> Option<&'a str> {
    if typed.contains('\n') {
        return None;
    }
    let rest = previous.strip_prefix(typed)?;
    (!rest.trim().is_empty()).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `around` from a text with `|` where the cursor is.
    fn at(text: &str) -> Around {
        let (before, after) = text.split_once('|').unwrap();
        Around {
            before: before.to_owned(),
            after: after.to_owned(),
            starts_at_boundary: true,
            ends_at_boundary: true,
        }
    }

    #[test]
    fn multiline_only_on_a_blank_line_or_after_a_block_opener() {
        let cases = [
            ("fn main() {\n    |\n}", true),
            ("fn main() {|\n}", true),
            ("def f(x):|", true),
            ("let x = |", true),
            ("let total = com|", false),
            ("foo(|)", false),
            ("    |  ", true),
            ("if (a) {|}", false),
        ];
        for (text, expected) in cases {
            assert_eq!(multiline_allowed(&at(text)), expected, "{text:?}");
        }
    }

    #[test]
    fn suggestions_are_shaped_to_what_should_be_inserted() {
        // (text with the cursor, the model's answer, multi-line allowed, the suggestion)
        let cases: &[(&str, &str, bool, Option<&str>)] = &[
            (
                "let x = |",
                "compute(1);\nlet y = 2;",
                false,
                Some("compute(1);"),
            ),
            ("foo(|)", "a, b)", false, Some("a, b")),
            ("foo(|);", "a, b);", false, Some("a, b")),
            ("print(\"|\")", "hello\")", false, Some("hello")),
            ("x = [|]", "1, 2, 3]", false, Some("1, 2, 3")),
            ("let s = |", "   \n\n", true, None),
            ("let s = |", "", false, None),
            (
                "fn main() {\n    |\n}",
                "let a = 1;\n    println!(\"{a}\");\n}",
                true,
                Some("let a = 1;\n    println!(\"{a}\");"),
            ),
            (
                "fn main() {\n    |\n}",
                "let a = 1;\n\n\n",
                true,
                Some("let a = 1;"),
            ),
            ("a = 1|\r\n", "  # one\r\nb = 2", false, Some("  # one")),
        ];
        for (text, raw, multiline, expected) in cases {
            assert_eq!(
                shape(raw, &at(text), *multiline).as_deref(),
                *expected,
                "{text:?} ← {raw:?}"
            );
        }
    }

    #[test]
    fn the_model_sees_whole_lines_and_the_path() {
        let around = Around {
            before: "ial line\nfn main() {\n    let".to_owned(),
            after: " x = 1;\n}\nfn ot".to_owned(),
            starts_at_boundary: false,
            ends_at_boundary: false,
        };
        let (prefix, suffix) = fim_parts(&around, "src/main.rs", "rust", "// context\n");
        assert_eq!(
            prefix,
            "// context\n// Path: src/main.rs\nfn main() {\n    let"
        );
        assert_eq!(suffix, " x = 1;\n}");
        let (prefix, _) = fim_parts(&around, "notes.txt", "plaintext", "// context\n");
        assert_eq!(prefix, "fn main() {\n    let");
    }

    #[test]
    fn suggestions_that_break_the_syntax_are_recognised() {
        // (text with the cursor, the suggestion, whether it adds syntax errors)
        let cases = [
            ("fn f() {\n    let x = |\n}\n", "compute(1);", false),
            // Where the text already has an error at the cursor the guard cannot tell.
            ("fn f() {\n    let x = |\n}\n", "compute(1;", false),
            ("fn f() {\n    |\n}\n", "compute(1;", true),
            ("fn f() {\n    |\n}\n", "}}", true),
            ("fn f() {\n    |\n}\n", "let x = compute(1);", false),
            ("fn f() {\n    if ready |\n}\n", "{", false),
            ("def f():\n    |\n", "x = [1, 2", true),
            ("def f():\n    |\n", "x = [1, 2]", false),
        ];
        for (text, suggestion, breaks) in cases {
            let path = if text.starts_with("def") {
                "a.py"
            } else {
                "a.rs"
            };
            let language = if path == "a.py" { "python" } else { "rust" };
            assert_eq!(
                adds_syntax_errors(suggestion, &at(text), language, path),
                breaks,
                "{text:?} + {suggestion:?}"
            );
        }
        assert!(!adds_syntax_errors(
            "((((",
            &at("x|"),
            "plaintext",
            "notes.txt"
        ));
    }

    #[test]
    fn first_and_last_characters_on_char_boundaries() {
        assert_eq!(last_chars("ab😀c", 2), "😀c");
        assert_eq!(last_chars("ab", 5), "ab");
        assert_eq!(last_chars("ab", 0), "");
        assert_eq!(first_chars("😀bc", 2), "😀b");
        assert_eq!(first_chars("ab", 5), "ab");
    }

    #[test]
    fn a_window_is_cut_where_the_front_end_found_boundaries() {
        let window = Around {
            before: "ial line\nfn 🦀() {\n    let".to_owned(),
            after: " x = 1;\n}\nfn ot".to_owned(),
            starts_at_boundary: false,
            ends_at_boundary: false,
        };
        let cut = window.cut(Cuts {
            drop_before: Some(9),
            keep_after: Some(9),
        });
        assert_eq!(cut.before, "fn 🦀() {\n    let");
        assert_eq!(cut.after, " x = 1;\n}");
        assert!(cut.starts_at_boundary && cut.ends_at_boundary);
        assert_eq!(
            fim_parts(&cut, "", "", ""),
            (cut.before.clone(), cut.after.clone())
        );
        // Inside the crab: not a character boundary, so not cut.
        let inside = window.cut(Cuts {
            drop_before: Some(13),
            keep_after: None,
        });
        assert_eq!(inside, window);
    }

    #[test]
    fn typing_through_a_suggestion_keeps_its_rest() {
        assert_eq!(typed_through("compute(1);", "com"), Some("pute(1);"));
        assert_eq!(typed_through("compute(1);", "cx"), None);
        assert_eq!(typed_through("compute(1);", "compute(1);"), None);
        assert_eq!(typed_through("a\nb", "a\n"), None);
    }
}
