//! What the user sees in the editor, told to the model with each prompt: the active file, the
//! cursor, the symbol around it, the selection and the other open files. The first prompt of a session (and the first
//! after the history is replaced) gets all of it; later prompts get only what changed, and
//! nothing when nothing did.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A position for people: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub start: Cursor,
    pub end: Cursor,
    /// The selected text (the renderer caps it).
    pub text: String,
}

/// The editor with focus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveEditor {
    pub path: PathBuf,
    pub language: Option<String>,
    pub cursor: Option<Cursor>,
    /// A non-empty selection.
    pub selection: Option<Selection>,
    /// The definition around the cursor, in a language the syntax support parses.
    pub symbol: Option<CursorSymbol>,
}

/// The definitions that enclose the cursor and the text of the innermost one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorSymbol {
    /// The chain of enclosing definitions, outermost first: `impl Parser › fn parse_expr`.
    pub path: String,
    /// 1-based lines of the innermost definition.
    pub start_line: u32,
    pub end_line: u32,
    /// Its text, already capped at a line boundary (with a last line saying what was cut).
    pub text: String,
}

/// A snapshot of the editor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdeState {
    pub active: Option<ActiveEditor>,
    /// The other open files, most recently used first (the active one is not repeated).
    pub open: Vec<PathBuf>,
}

/// The most selected text told to the model at once; the rest is a file read away.
const SELECTION_CAP_BYTES: usize = 16 * 1024;
/// The most file names listed in one line; the model can list the workspace for the rest.
const FILES_CAP: usize = 10;

/// What the model has been told about the editor, to send only what changed.
#[derive(Debug, Clone, Default)]
pub struct IdeContext {
    last: Option<IdeState>,
}

impl IdeContext {
    /// The text to send with the next prompt: everything the first time (and after `reset`),
    /// then only the changes; `None` when nothing changed (or, the first time, when no file is
    /// open).
    pub fn render(&mut self, now: &IdeState, display: &dyn Fn(&Path) -> String) -> Option<String> {
        let lines = match &self.last {
            None => full(now, display),
            Some(last) => delta(last, now, display),
        };
        self.last = Some(now.clone());
        if lines.is_empty() {
            return None;
        }
        Some(format!("<ide>\n{}\n</ide>", lines.join("\n")))
    }

    /// Forget what was sent: the next render is in full.
    pub fn reset(&mut self) {
        self.last = None;
    }
}

fn full(now: &IdeState, display: &dyn Fn(&Path) -> String) -> Vec<String> {
    let mut lines = Vec::new();
    let Some(active) = &now.active else {
        if !now.open.is_empty() {
            lines.push("No file has focus.".to_owned());
            lines.push(format!(
                "Open files (most recent first): {}",
                list(&now.open, display)
            ));
        }
        return lines;
    };
    lines.push(format!("Active file: {}", describe(active, display)));
    if let Some(symbol) = &active.symbol {
        lines.push(symbol_lines(symbol, active.language.as_deref()));
    }
    if let Some(selection) = &active.selection {
        lines.push(format!(
            "Selected text ({}):\n{}",
            span(selection),
            fenced(selection, active.language.as_deref())
        ));
    }
    if !now.open.is_empty() {
        lines.push(format!(
            "Other open files (most recent first): {}",
            list(&now.open, display)
        ));
    }
    lines
}

fn delta(last: &IdeState, now: &IdeState, display: &dyn Fn(&Path) -> String) -> Vec<String> {
    let mut lines = Vec::new();
    // Membership, not order: the MRU order shifts with every keystroke and tells the model little.
    let before = files(last);
    let after = files(now);
    let closed: Vec<&Path> = before
        .iter()
        .copied()
        .filter(|path| !after.contains(path))
        .collect();
    let opened: Vec<&Path> = after
        .iter()
        .copied()
        .filter(|path| !before.contains(path))
        .collect();
    if !closed.is_empty() {
        lines.push(format!("The user closed {}.", list(&closed, display)));
    }
    if !opened.is_empty() {
        lines.push(format!("The user opened {}.", list(&opened, display)));
    }
    match (&last.active, &now.active) {
        (None, None) => {}
        (Some(_), None) => lines.push("No file has focus now.".to_owned()),
        (Some(was), Some(is)) if was.path == is.path => {
            if was.cursor != is.cursor {
                if let Some(cursor) = is.cursor {
                    lines.push(format!(
                        "The user moved the cursor to line {}, column {}.",
                        cursor.line, cursor.column
                    ));
                }
            }
            match (&was.selection, &is.selection) {
                (was_selection, Some(selection)) if was_selection.as_ref() != Some(selection) => {
                    lines.push(format!(
                        "The user selected {}:\n{}",
                        span(selection),
                        fenced(selection, is.language.as_deref())
                    ));
                }
                (Some(_), None) => lines.push("The user cleared the selection.".to_owned()),
                _ => {}
            }
            // Not when only its text changed: typing inside a function changes that with every
            // keystroke, and the model asked for the file if it needs the new text.
            let place =
                |symbol: &CursorSymbol| (symbol.path.clone(), symbol.start_line, symbol.end_line);
            if was.symbol.as_ref().map(place) != is.symbol.as_ref().map(place) {
                if let Some(symbol) = &is.symbol {
                    lines.push(symbol_lines(symbol, is.language.as_deref()));
                }
            }
        }
        (_, Some(is)) => {
            lines.push(format!("The user switched to {}.", describe(is, display)));
            if let Some(symbol) = &is.symbol {
                lines.push(symbol_lines(symbol, is.language.as_deref()));
            }
            if let Some(selection) = &is.selection {
                lines.push(format!(
                    "Selected text ({}):\n{}",
                    span(selection),
                    fenced(selection, is.language.as_deref())
                ));
            }
        }
    }
    lines
}

/// Every open file, the active one first.
fn files(state: &IdeState) -> Vec<&Path> {
    state
        .active
        .iter()
        .map(|active| active.path.as_path())
        .chain(state.open.iter().map(PathBuf::as_path))
        .collect()
}

/// `src/lib.rs (rust), cursor at line 12, column 5`
fn describe(active: &ActiveEditor, display: &dyn Fn(&Path) -> String) -> String {
    let mut text = display(&active.path);
    if let Some(language) = &active.language {
        text.push_str(&format!(" ({language})"));
    }
    if let Some(cursor) = active.cursor {
        text.push_str(&format!(
            ", cursor at line {}, column {}",
            cursor.line, cursor.column
        ));
    }
    text
}

fn list<P: AsRef<Path>>(paths: &[P], display: &dyn Fn(&Path) -> String) -> String {
    let names: Vec<String> = paths
        .iter()
        .take(FILES_CAP)
        .map(|path| display(path.as_ref()))
        .collect();
    let more = paths.len().saturating_sub(FILES_CAP);
    let mut text = names.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// The last line the selection covers: one that ends at the start of a line (a whole-line
/// selection, as editors make them) does not cover that line.
fn last_line(selection: &Selection) -> u32 {
    if selection.end.column == 1 && selection.end.line > selection.start.line {
        selection.end.line - 1
    } else {
        selection.end.line
    }
}

/// `line 3` or `lines 3-7`
fn span(selection: &Selection) -> String {
    let (first, last) = (selection.start.line, last_line(selection));
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}

/// `Symbol at cursor: impl Parser › fn parse_expr (lines 34-48):` and its text in a code fence.
fn symbol_lines(symbol: &CursorSymbol, language: Option<&str>) -> String {
    let lines = if symbol.start_line == symbol.end_line {
        format!("line {}", symbol.start_line)
    } else {
        format!("lines {}-{}", symbol.start_line, symbol.end_line)
    };
    format!(
        "Symbol at cursor: {} ({lines}):\n{}",
        symbol.path,
        fence(&symbol.text, language)
    )
}

/// The selected text in a code fence, capped at [`SELECTION_CAP_BYTES`].
fn fenced(selection: &Selection, language: Option<&str>) -> String {
    let text = selection.text.as_str();
    let (shown, note) = if text.len() > SELECTION_CAP_BYTES {
        let mut cut = SELECTION_CAP_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        // End on a whole line so that the line numbers in the note are exact.
        if let Some(newline) = text[..cut].rfind('\n') {
            cut = newline + 1;
        }
        let shown = &text[..cut];
        let next_line = selection.start.line.saturating_add(line_breaks(shown));
        let last = last_line(selection).max(next_line);
        let rest = if last == next_line {
            format!("line {last}")
        } else {
            format!("lines {next_line}-{last}")
        };
        let note = format!(
            "\n[selection truncated: {} more bytes not shown; read {rest} of the file for the \
             rest]",
            text.len() - cut
        );
        (shown, note)
    } else {
        (text, String::new())
    };
    format!("{}{note}", fence(shown, language))
}

/// `text` in a code fence, without its last line break.
fn fence(text: &str, language: Option<&str>) -> String {
    let text = text
        .strip_suffix('\n')
        .map(|rest| rest.strip_suffix('\r').unwrap_or(rest))
        .or_else(|| text.strip_suffix('\r'))
        .unwrap_or(text);
    // A fence longer than any backtick run inside keeps selected Markdown from closing it.
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let language = language.unwrap_or_default();
    format!("{fence}{language}\n{text}\n{fence}")
}

/// Line breaks as LSP counts them: `\n`, `\r\n` and a lone `\r`.
fn line_breaks(text: &str) -> u32 {
    let mut count = 0u32;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => count = count.saturating_add(1),
            '\r' if chars.peek() != Some(&'\n') => count = count.saturating_add(1),
            _ => {}
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;

    fn display(path: &Path) -> String {
        path.display().to_string()
    }

    fn at(line: u32, column: u32) -> Cursor {
        Cursor { line, column }
    }

    fn editor(path: &str, cursor: Option<Cursor>) -> ActiveEditor {
        ActiveEditor {
            path: PathBuf::from(path),
            language: Some("rust".to_owned()),
            cursor,
            selection: None,
            symbol: None,
        }
    }

    fn state(active: Option<ActiveEditor>, open: &[&str]) -> IdeState {
        IdeState {
            active,
            open: open.iter().map(PathBuf::from).collect(),
        }
    }

    fn selection(start: Cursor, end: Cursor, text: &str) -> Option<Selection> {
        Some(Selection {
            start,
            end,
            text: text.to_owned(),
        })
    }

    fn symbol(path: &str, start_line: u32, end_line: u32, text: &str) -> Option<CursorSymbol> {
        Some(CursorSymbol {
            path: path.to_owned(),
            start_line,
            end_line,
            text: text.to_owned(),
        })
    }

    const PARSE_EXPR: &str =
        "    fn parse_expr(&mut self) -> Expr {\n        self.parse_atom()\n    }\n";

    fn check(context: &mut IdeContext, now: &IdeState, expected: Expect) {
        let rendered = context.render(now, &display);
        expected.assert_eq(rendered.as_deref().unwrap_or("<none>"));
    }

    /// A context that has already told the model about `first`.
    fn told(first: &IdeState) -> IdeContext {
        let mut context = IdeContext::default();
        context.render(first, &display);
        context
    }

    #[test]
    fn first_render_is_full() {
        let mut active = editor("src/lib.rs", Some(at(12, 5)));
        active.symbol = symbol("impl Parser › fn parse_expr", 11, 13, PARSE_EXPR);
        active.selection = selection(at(10, 1), at(12, 5), "fn a() {}\n\nfn b");
        check(
            &mut IdeContext::default(),
            &state(Some(active), &["src/a.rs", "src/b.rs"]),
            expect![[r#"
                <ide>
                Active file: src/lib.rs (rust), cursor at line 12, column 5
                Symbol at cursor: impl Parser › fn parse_expr (lines 11-13):
                ```rust
                    fn parse_expr(&mut self) -> Expr {
                        self.parse_atom()
                    }
                ```
                Selected text (lines 10-12):
                ```rust
                fn a() {}

                fn b
                ```
                Other open files (most recent first): src/a.rs, src/b.rs
                </ide>"#]],
        );
    }

    #[test]
    fn full_render_without_focus_lists_the_open_files() {
        check(
            &mut IdeContext::default(),
            &state(None, &["a.rs", "b.rs"]),
            expect![[r#"
                <ide>
                No file has focus.
                Open files (most recent first): a.rs, b.rs
                </ide>"#]],
        );
    }

    #[test]
    fn full_render_of_an_empty_editor_is_none() {
        check(
            &mut IdeContext::default(),
            &IdeState::default(),
            expect!["<none>"],
        );
    }

    #[test]
    fn nothing_changed_renders_none() {
        let now = state(Some(editor("a.rs", Some(at(1, 1)))), &["b.rs"]);
        check(&mut told(&now), &now, expect!["<none>"]);
    }

    #[test]
    fn reordering_open_files_alone_renders_none() {
        let first = state(Some(editor("a.rs", None)), &["b.rs", "c.rs"]);
        let now = state(Some(editor("a.rs", None)), &["c.rs", "b.rs"]);
        check(&mut told(&first), &now, expect!["<none>"]);
    }

    #[test]
    fn delta_opened_and_closed() {
        let first = state(Some(editor("a.rs", None)), &["b.rs", "c.rs"]);
        let now = state(Some(editor("a.rs", None)), &["d.rs", "b.rs", "e.rs"]);
        check(
            &mut told(&first),
            &now,
            expect![[r#"
                <ide>
                The user closed c.rs.
                The user opened d.rs, e.rs.
                </ide>"#]],
        );
    }

    #[test]
    fn delta_switched_to_a_new_file_with_a_selection() {
        let first = state(Some(editor("a.rs", Some(at(3, 1)))), &[]);
        let mut active = editor("b.rs", Some(at(2, 4)));
        active.selection = selection(at(2, 1), at(2, 4), "let");
        let now = state(Some(active), &["a.rs"]);
        check(
            &mut told(&first),
            &now,
            expect![[r#"
                <ide>
                The user opened b.rs.
                The user switched to b.rs (rust), cursor at line 2, column 4.
                Selected text (line 2):
                ```rust
                let
                ```
                </ide>"#]],
        );
    }

    #[test]
    fn delta_moved_the_cursor() {
        let first = state(Some(editor("a.rs", Some(at(3, 1)))), &["b.rs"]);
        let mut active = editor("a.rs", Some(at(7, 9)));
        active.symbol = symbol("fn main", 7, 7, "fn main() { run() }\n");
        let now = state(Some(active), &["b.rs"]);
        check(
            &mut told(&first),
            &now,
            expect![[r#"
                <ide>
                The user moved the cursor to line 7, column 9.
                Symbol at cursor: fn main (line 7):
                ```rust
                fn main() { run() }
                ```
                </ide>"#]],
        );
    }

    #[test]
    fn delta_repeats_the_symbol_only_when_its_path_or_lines_change() {
        let with = |cursor: Cursor, symbol: Option<CursorSymbol>| {
            let mut active = editor("a.rs", Some(cursor));
            active.symbol = symbol;
            state(Some(active), &[])
        };
        let first = with(
            at(12, 9),
            symbol("impl Parser › fn parse_expr", 11, 13, PARSE_EXPR),
        );
        let mut context = told(&first);
        // Typing inside the function changes its text, not where it is: the cursor line suffices.
        let typed = PARSE_EXPR.replace("atom", "atoms");
        let now = with(
            at(12, 25),
            symbol("impl Parser › fn parse_expr", 11, 13, &typed),
        );
        check(
            &mut context,
            &now,
            expect![[r#"
                <ide>
                The user moved the cursor to line 12, column 25.
                </ide>"#]],
        );
        // A new line in it moves its end.
        let typed = PARSE_EXPR.replace("{\n", "{\n        todo!();\n");
        let now = with(
            at(13, 1),
            symbol("impl Parser › fn parse_expr", 11, 14, &typed),
        );
        check(
            &mut context,
            &now,
            expect![[r#"
                <ide>
                The user moved the cursor to line 13, column 1.
                Symbol at cursor: impl Parser › fn parse_expr (lines 11-14):
                ```rust
                    fn parse_expr(&mut self) -> Expr {
                        todo!();
                        self.parse_atom()
                    }
                ```
                </ide>"#]],
        );
        // Out of every definition: nothing to say about symbols.
        check(
            &mut context,
            &with(at(1, 1), None),
            expect![[r#"
                <ide>
                The user moved the cursor to line 1, column 1.
                </ide>"#]],
        );
    }

    #[test]
    fn delta_switched_to_a_file_shows_its_symbol() {
        let first = state(Some(editor("a.rs", Some(at(3, 1)))), &["b.py"]);
        let mut active = editor("b.py", Some(at(2, 5)));
        active.language = Some("python".to_owned());
        active.symbol = symbol(
            "class Shape › def area",
            2,
            3,
            "    def area(self):\n        return \"```\"\n",
        );
        check(
            &mut told(&first),
            &state(Some(active), &["a.rs"]),
            expect![[r#"
                <ide>
                The user switched to b.py (python), cursor at line 2, column 5.
                Symbol at cursor: class Shape › def area (lines 2-3):
                ````python
                    def area(self):
                        return "```"
                ````
                </ide>"#]],
        );
    }

    #[test]
    fn delta_selected_then_cleared() {
        let first = state(Some(editor("a.rs", Some(at(1, 1)))), &[]);
        let mut active = editor("a.rs", Some(at(1, 1)));
        // A whole-line selection ends at the start of the next line, which it does not cover.
        active.selection = selection(at(4, 1), at(6, 1), "one\ntwo\n");
        let selected = state(Some(active), &[]);
        let mut context = told(&first);
        check(
            &mut context,
            &selected,
            expect![[r#"
                <ide>
                The user selected lines 4-5:
                ```rust
                one
                two
                ```
                </ide>"#]],
        );
        check(
            &mut context,
            &first,
            expect![[r#"
                <ide>
                The user cleared the selection.
                </ide>"#]],
        );
    }

    #[test]
    fn delta_lost_focus_after_closing_the_active_file() {
        let first = state(Some(editor("a.rs", Some(at(1, 1)))), &["b.rs"]);
        check(
            &mut told(&first),
            &state(None, &["b.rs"]),
            expect![[r#"
                <ide>
                The user closed a.rs.
                No file has focus now.
                </ide>"#]],
        );
    }

    #[test]
    fn reset_renders_in_full_again() {
        let now = state(Some(editor("a.rs", Some(at(2, 3)))), &[]);
        let mut context = told(&now);
        context.reset();
        check(
            &mut context,
            &now,
            expect![[r#"
                <ide>
                Active file: a.rs (rust), cursor at line 2, column 3
                </ide>"#]],
        );
    }

    fn render_selection(text: &str, start: Cursor, end: Cursor) -> String {
        let mut active = editor("big.rs", None);
        active.selection = selection(start, end, text);
        IdeContext::default()
            .render(&state(Some(active), &[]), &display)
            .unwrap_or_default()
    }

    #[test]
    fn selection_is_capped_at_a_line_end() {
        // Lines of 9 bytes, so the cap falls inside a line (inside the "é", even).
        let text = "abcéfgh\n".repeat(2_000);
        let rendered = render_selection(&text, at(100, 1), at(2_100, 1));
        assert_eq!(rendered.matches("abcéfgh").count(), SELECTION_CAP_BYTES / 9);
        let lines: Vec<&str> = rendered.lines().collect();
        expect![[r#"
            abcéfgh
            ```
            [selection truncated: 1620 more bytes not shown; read lines 1920-2099 of the file for the rest]
            </ide>"#]]
        .assert_eq(&lines[lines.len() - 4..].join("\n"));
    }

    #[test]
    fn selection_without_line_breaks_is_capped_at_a_char_boundary() {
        // "é" is two bytes starting at odd offsets: the cap (even) falls inside one.
        let text = format!("x{}", "é".repeat(10_000));
        let rendered = render_selection(&text, at(5, 1), at(5, 10_002));
        assert_eq!(rendered.matches('é').count(), (SELECTION_CAP_BYTES - 1) / 2);
        let lines: Vec<&str> = rendered.lines().collect();
        expect![[r#"
            [selection truncated: 3618 more bytes not shown; read line 5 of the file for the rest]"#]]
        .assert_eq(lines[lines.len() - 2]);
    }

    #[test]
    fn open_files_are_capped() {
        let open: Vec<String> = (1..=13).map(|i| format!("f{i}.rs")).collect();
        let open: Vec<&str> = open.iter().map(String::as_str).collect();
        check(
            &mut IdeContext::default(),
            &state(None, &open),
            expect![[r#"
                <ide>
                No file has focus.
                Open files (most recent first): f1.rs, f2.rs, f3.rs, f4.rs, f5.rs, f6.rs, f7.rs, f8.rs, f9.rs, f10.rs and 3 more
                </ide>"#]],
        );
    }

    #[test]
    fn selected_markdown_gets_a_longer_fence() {
        let mut active = editor("README.md", None);
        active.language = Some("markdown".to_owned());
        active.selection = selection(at(1, 1), at(3, 4), "```sh\nls\n```");
        check(
            &mut IdeContext::default(),
            &state(Some(active), &[]),
            expect![[r#"
                <ide>
                Active file: README.md (markdown)
                Selected text (lines 1-3):
                ````markdown
                ```sh
                ls
                ```
                ````
                </ide>"#]],
        );
    }
}
