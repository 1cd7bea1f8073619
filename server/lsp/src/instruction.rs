//! The `tandem:` comment: finding one in a line (any common comment leader, alone on its line
//! or after code) and the edit that removes it once the turn it started has made its edits.

use tandem_text::{Document, LineCol, PositionEncoding};
use tower_lsp::lsp_types::{Position, Range, TextEdit};
use url::Url;

/// A `tandem:` instruction comment, to remove once the turn it started has made its edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstructionComment {
    pub uri: Url,
    /// 0-based line where it was found.
    pub line: u32,
    /// The whole line as it was.
    pub text: String,
}

/// A line's text without its line break; `None` past the last line.
pub(crate) fn line_text(document: &Document, line: u32) -> Option<String> {
    let line = usize::try_from(line).ok()?;
    if line >= document.line_count() {
        return None;
    }
    let mut text = document.rope().line(line).to_string();
    if text.ends_with("\r\n") {
        text.truncate(text.len() - 2);
    } else if text.ends_with(['\n', '\r']) {
        text.truncate(text.len() - 1);
    }
    Some(text)
}

/// A `tandem:` comment found in a line: byte offsets of the comment within the line (from its
/// leader to the end of the line or its closer) and the instruction it holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    pub instruction: String,
}

/// Comment leaders, longer first so that `///` wins over `//` and `/*` over `*`.
const LEADERS: &[&str] = &[
    "<!--", "///", "//!", "/**", "/*!", "//", "/*", "--", ";", "#", "%", "*",
];

/// Finds a comment whose body starts with `tandem:` (ASCII case ignored), alone on its line or
/// after code.
pub(crate) fn find_instruction(line: &str) -> Option<Found> {
    const MARKER: &str = "tandem:";
    let lower = line.to_ascii_lowercase();
    lower.match_indices(MARKER).find_map(|(at, _)| {
        let before = line[..at].trim_end();
        let leader = LEADERS.iter().find(|leader| before.ends_with(*leader))?;
        let mut start = before.len() - leader.len();
        // `////`, `###`, `;;;`, `%%`: a leader repeated is still a comment.
        let first = leader.chars().next()?;
        if leader.chars().all(|char| char == first) {
            start = line[..start].trim_end_matches(first).len();
        }
        let prefix = &line[..start];
        let whole_line = prefix.trim().is_empty();
        // After code, a comment must be set off by a space, so `http://tandem:80` is no comment;
        // a lone `*` is only a comment as the continuation of a block comment.
        if !whole_line && (!prefix.ends_with(char::is_whitespace) || *leader == "*") {
            return None;
        }
        let body_start = at + MARKER.len();
        let closer = match *leader {
            "<!--" => Some("-->"),
            "/*" | "/**" | "/*!" | "*" => Some("*/"),
            _ => None,
        };
        let body = &line[body_start..];
        let (instruction, end) = match closer.and_then(|closer| Some((closer, body.find(closer)?)))
        {
            Some((closer, at)) => (&body[..at], body_start + at + closer.len()),
            None => (body, line.len()),
        };
        let instruction = instruction.trim();
        (!instruction.is_empty()).then(|| Found {
            start,
            end,
            instruction: instruction.to_owned(),
        })
    })
}

/// The edit that removes an instruction comment, if the document still has it (where it was,
/// or moved by edits above it).
pub(crate) fn remove_comment(
    document: &Document,
    comment: &InstructionComment,
    encoding: PositionEncoding,
) -> Option<TextEdit> {
    // Never delete a line that is not a `tandem:` comment, whatever the caller passed.
    let found = find_instruction(&comment.text)?;
    let count = u32::try_from(document.line_count()).unwrap_or(u32::MAX);
    // Edits above the comment usually push it down, so on a tie the line below wins.
    let line = (0..count)
        .filter(|&line| line_text(document, line).as_deref() == Some(comment.text.as_str()))
        .min_by_key(|&line| (line.abs_diff(comment.line), line < comment.line))?;
    let rope = document.rope();
    let line_start = rope.line_to_char(line as usize);
    let text = &comment.text;
    let chars = |bytes: usize| line_start + text[..bytes].chars().count();
    let prefix = &text[..found.start];
    let suffix = &text[found.end..];
    let (start, end) = if !prefix.trim().is_empty() {
        // `code; // tandem: x` keeps `code;` (and whatever follows a block comment's closer).
        (chars(prefix.trim_end().len()), chars(found.end))
    } else if !suffix.trim().is_empty() {
        // `/* tandem: x */ code` keeps the indentation and the code.
        let after_space = text.len() - suffix.trim_start().len();
        (chars(found.start), chars(after_space))
    } else if (line as usize) + 1 < rope.len_lines() {
        (line_start, rope.line_to_char(line as usize + 1))
    } else if line > 0 {
        // The last line has no line break of its own: take the one before it.
        let previous_end =
            document.char_offset(LineCol::new(line - 1, u32::MAX), PositionEncoding::Utf32);
        (previous_end, rope.len_chars())
    } else {
        (line_start, rope.len_chars())
    };
    let position = |offset: usize| {
        let at = document.position(offset, encoding);
        Position::new(at.line, at.character)
    };
    Some(TextEdit {
        range: Range::new(position(start), position(end)),
        new_text: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::{expect, Expect};

    use super::*;
    use crate::from_proto;

    const RUST: &str = "fn main() {\n    // tandem: handle the empty case\n    let x = parse(input);\n    println!(\"{x}\");\n}\n";

    fn uri() -> Url {
        Url::parse("file:///project/src/main.rs").unwrap()
    }

    #[test]
    fn instruction_comments_in_many_languages() {
        let lines = [
            "// tandem: handle the empty case",
            "    /// TANDEM: document the panics",
            "//! tandem: crate docs",
            "let x = 1; // tandem: rename x",
            "let x = 1;// tandem: glued to code",
            "# tandem: python or shell",
            "## tandem: markdown-ish heading comment",
            "x = 1  # tandem: trailing python",
            "-- tandem: sql or lua",
            "; tandem: lisp or ini",
            ";; tandem: elisp",
            "% tandem: latex",
            "/* tandem: a block */",
            "/* tandem: block then code */ int x;",
            "int x; /* tandem: trailing block */",
            " * tandem: continuation of a block",
            " * tandem: continuation that closes */",
            "<!-- tandem: html -->",
            "/** tandem: javadoc",
            "// tandem:",
            "// tandem:    ",
            "// not tandem: here",
            "let url = \"http://tandem:80\";",
            "a * tandem: not a comment",
            "tandem: no leader",
            "// tandem: first // tandem: second",
        ];
        let mut out = String::new();
        for line in lines {
            match find_instruction(line) {
                Some(found) => writeln!(
                    out,
                    "{line:?} -> {:?} comment {:?}",
                    found.instruction,
                    &line[found.start..found.end]
                ),
                None => writeln!(out, "{line:?} -> none"),
            }
            .unwrap();
        }
        expect![[r###"
            "// tandem: handle the empty case" -> "handle the empty case" comment "// tandem: handle the empty case"
            "    /// TANDEM: document the panics" -> "document the panics" comment "/// TANDEM: document the panics"
            "//! tandem: crate docs" -> "crate docs" comment "//! tandem: crate docs"
            "let x = 1; // tandem: rename x" -> "rename x" comment "// tandem: rename x"
            "let x = 1;// tandem: glued to code" -> none
            "# tandem: python or shell" -> "python or shell" comment "# tandem: python or shell"
            "## tandem: markdown-ish heading comment" -> "markdown-ish heading comment" comment "## tandem: markdown-ish heading comment"
            "x = 1  # tandem: trailing python" -> "trailing python" comment "# tandem: trailing python"
            "-- tandem: sql or lua" -> "sql or lua" comment "-- tandem: sql or lua"
            "; tandem: lisp or ini" -> "lisp or ini" comment "; tandem: lisp or ini"
            ";; tandem: elisp" -> "elisp" comment ";; tandem: elisp"
            "% tandem: latex" -> "latex" comment "% tandem: latex"
            "/* tandem: a block */" -> "a block" comment "/* tandem: a block */"
            "/* tandem: block then code */ int x;" -> "block then code" comment "/* tandem: block then code */"
            "int x; /* tandem: trailing block */" -> "trailing block" comment "/* tandem: trailing block */"
            " * tandem: continuation of a block" -> "continuation of a block" comment "* tandem: continuation of a block"
            " * tandem: continuation that closes */" -> "continuation that closes" comment "* tandem: continuation that closes */"
            "<!-- tandem: html -->" -> "html" comment "<!-- tandem: html -->"
            "/** tandem: javadoc" -> "javadoc" comment "/** tandem: javadoc"
            "// tandem:" -> none
            "// tandem:    " -> none
            "// not tandem: here" -> none
            "let url = \"http://tandem:80\";" -> none
            "a * tandem: not a comment" -> none
            "tandem: no leader" -> none
            "// tandem: first // tandem: second" -> "first // tandem: second" comment "// tandem: first // tandem: second"
        "###]].assert_eq(&out);
    }

    /// Applies `remove_comment` and shows the document afterwards.
    fn check_removal(text: &str, line: u32, comment: &str, expect: Expect) {
        let mut document = Document::new(text, 1, "rust");
        let comment = InstructionComment {
            uri: uri(),
            line,
            text: comment.into(),
        };
        let out = match remove_comment(&document, &comment, PositionEncoding::Utf16) {
            Some(edit) => {
                let change = tandem_text::Change {
                    range: Some(tandem_text::Range {
                        start: from_proto::position(edit.range.start),
                        end: from_proto::position(edit.range.end),
                    }),
                    text: edit.new_text,
                };
                document.apply_change(&change, PositionEncoding::Utf16);
                format!("{:?}", document.text())
            }
            None => "(nothing to remove)".to_owned(),
        };
        expect.assert_eq(&out);
    }

    #[test]
    fn remove_comment_where_it_was() {
        check_removal(
            RUST,
            1,
            "    // tandem: handle the empty case",
            expect![[r#""fn main() {\n    let x = parse(input);\n    println!(\"{x}\");\n}\n""#]],
        );
    }

    #[test]
    fn remove_comment_moved_by_edits_above() {
        let moved = "use std::io;\n\nfn main() {\n    // tandem: handle the empty case\n    let x = parse(input);\n}\n";
        check_removal(
            moved,
            1,
            "    // tandem: handle the empty case",
            expect![[r#""use std::io;\n\nfn main() {\n    let x = parse(input);\n}\n""#]],
        );
    }

    #[test]
    fn remove_comment_prefers_the_nearest_copy() {
        let twice = "// tandem: again\nA\nB\nC\n// tandem: again\n";
        check_removal(
            twice,
            3,
            "// tandem: again",
            expect![[r#""// tandem: again\nA\nB\nC\n""#]],
        );
    }

    #[test]
    fn remove_trailing_comment_keeps_the_code() {
        let text = "let 😀 = 1; // tandem: rename it\r\nnext();\r\n";
        check_removal(
            text,
            0,
            "let 😀 = 1; // tandem: rename it",
            expect![[r#""let 😀 = 1;\r\nnext();\r\n""#]],
        );
    }

    #[test]
    fn remove_block_comment_before_code_keeps_the_code() {
        let text = "  /* tandem: name it */ int x;\n";
        check_removal(
            text,
            0,
            "  /* tandem: name it */ int x;",
            expect![[r#""  int x;\n""#]],
        );
    }

    #[test]
    fn remove_comment_on_the_last_line_without_a_line_break() {
        check_removal("a\r\n# tandem: b", 1, "# tandem: b", expect![[r#""a""#]]);
        check_removal("# tandem: b", 0, "# tandem: b", expect![[r#""""#]]);
    }

    #[test]
    fn remove_comment_that_is_gone() {
        let gone = "fn main() {\n    let x = parse(input);\n}\n";
        check_removal(
            gone,
            1,
            "    // tandem: handle the empty case",
            expect!["(nothing to remove)"],
        );
    }

    #[test]
    fn remove_comment_never_deletes_a_line_without_a_tandem_comment() {
        check_removal(RUST, 4, "}", expect!["(nothing to remove)"]);
    }
}
