//! What a turn changed, file by file, and the summary `tandem ask` prints at the end of a turn on
//! a terminal (and `tandem demo` after its recording): per file, its path relative to the
//! workspace, the lines added and removed, and the unified diff (capped per file). The texts
//! come from the edit and write tools' `ToolCallUpdate::diff` (the whole file before and after),
//! so a file edited three times shows one diff, from before the first edit to after the last;
//! what a shell command changed is not known here and not shown.

use std::path::{Path, PathBuf};

use similar::{ChangeTag, TextDiff};
use tandem_agent::protocol::FileDiff;

use super::screen::{line, Line, Style};

/// The most lines of diff shown per file; the rest are counted.
pub(crate) const MAX_DIFF_LINES: usize = 40;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The files a turn changed, in the order it first changed them.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    files: Vec<Changed>,
}

#[derive(Debug)]
struct Changed {
    path: PathBuf,
    /// `None`: the turn created the file.
    before: Option<String>,
    after: String,
}

impl Changes {
    /// Notes a change a tool made.
    pub fn record(&mut self, diff: &FileDiff) {
        match self.files.iter_mut().find(|file| file.path == diff.path) {
            Some(file) => file.after.clone_from(&diff.new_text),
            None => self.files.push(Changed {
                path: diff.path.clone(),
                before: diff.old_text.clone(),
                after: diff.new_text.clone(),
            }),
        }
    }

    /// The summary's lines, paths shown relative to `root`; empty when no file differs from
    /// what it was before the turn.
    pub fn summary(&self, root: &Path) -> Vec<Line> {
        let mut body = Vec::new();
        let mut files = 0;
        for file in &self.files {
            let before = file.before.as_deref().unwrap_or("").replace("\r\n", "\n");
            let after = file.after.replace("\r\n", "\n");
            if file.before.is_some() && before == after {
                continue;
            }
            files += 1;
            let diff = TextDiff::from_lines(&before, &after);
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    ChangeTag::Insert => added += 1,
                    ChangeTag::Delete => removed += 1,
                    ChangeTag::Equal => {}
                }
            }
            let shown = file.path.strip_prefix(root).unwrap_or(&file.path);
            let mut header = vec![(shown.display().to_string(), Style::Bold)];
            if file.before.is_none() {
                header.push((" (new)".to_owned(), Style::Plain));
            }
            header.push((format!(" +{added}"), Style::Green));
            header.push((format!(" -{removed}"), Style::Red));
            body.push(header);

            let mut lines = Vec::new();
            for hunk in diff.unified_diff().context_radius(CONTEXT).iter_hunks() {
                lines.push(line(hunk.header().to_string(), Style::Cyan));
                for change in hunk.iter_changes() {
                    let (sign, style) = match change.tag() {
                        ChangeTag::Insert => ('+', Style::Green),
                        ChangeTag::Delete => ('-', Style::Red),
                        ChangeTag::Equal => (' ', Style::Plain),
                    };
                    let text = shown_line(change.value());
                    lines.push(line(format!("{sign}{text}"), style));
                }
            }
            let more = lines.len().saturating_sub(MAX_DIFF_LINES);
            lines.truncate(MAX_DIFF_LINES);
            body.extend(lines);
            if more > 0 {
                let unit = if more == 1 { "line" } else { "lines" };
                body.push(line(format!("… {more} more {unit}"), Style::Dim));
            }
        }
        if files == 0 {
            return Vec::new();
        }
        let title = match files {
            1 => "Changed 1 file:".to_owned(),
            n => format!("Changed {n} files:"),
        };
        let mut summary = vec![line(title, Style::Bold)];
        summary.extend(body);
        summary
    }
}

/// One line of a file as the terminal is shown it: without its line break, and with control
/// characters (an escape sequence in a file must not restyle the terminal) but tabs made
/// visible as `�`.
fn shown_line(text: &str) -> String {
    text.trim_end_matches(['\n', '\r'])
        .chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// The summary as plain text, a line break after each line.
pub(crate) fn plain(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        for (text, _) in line {
            out.push_str(text);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn diff(path: &str, old: Option<&str>, new: &str) -> FileDiff {
        FileDiff {
            path: PathBuf::from(path),
            old_text: old.map(str::to_owned),
            new_text: new.to_owned(),
        }
    }

    #[test]
    fn two_edits_of_one_file_show_as_one_diff_from_before_the_first() {
        let mut changes = Changes::default();
        changes.record(&diff(
            "/w/a.sh",
            Some("one\ntwo\nthree\n"),
            "one\n2\nthree\n",
        ));
        changes.record(&diff("/w/a.sh", Some("one\n2\nthree\n"), "one\n2\n3\n"));
        changes.record(&diff("/w/new.txt", None, "hello\n"));
        expect![[r#"
            Changed 2 files:
            a.sh +2 -2
            @@ -1,3 +1,3 @@
             one
            -two
            -three
            +2
            +3
            new.txt (new) +1 -0
            @@ -0,0 +1 @@
            +hello
        "#]]
        .assert_eq(&plain(&changes.summary(Path::new("/w"))));
    }

    #[test]
    fn an_edit_undone_later_in_the_turn_is_no_change() {
        let mut changes = Changes::default();
        changes.record(&diff("/w/a.sh", Some("one\n"), "two\n"));
        changes.record(&diff("/w/a.sh", Some("two\n"), "one\n"));
        assert!(changes.summary(Path::new("/w")).is_empty());
    }

    #[test]
    fn a_long_diff_is_cut_at_forty_lines_and_says_how_many_more() {
        let old: String = (0..100).map(|n| format!("line {n}\n")).collect();
        let new: String = (0..100).map(|n| format!("LINE {n}\n")).collect();
        let mut changes = Changes::default();
        changes.record(&diff("/elsewhere/b.txt", Some(&old), &new));
        let text = plain(&changes.summary(Path::new("/w")));
        let lines: Vec<&str> = text.lines().collect();
        // The title, the file's line, 40 lines of diff and the count of the rest.
        assert_eq!(lines.len(), 43, "{text}");
        assert_eq!(lines[1], "/elsewhere/b.txt +100 -100");
        assert_eq!(lines[42], "… 161 more lines");
    }

    #[test]
    fn an_escape_sequence_in_a_file_does_not_reach_the_terminal() {
        let mut changes = Changes::default();
        changes.record(&diff("/w/a", Some("\tx\n"), "\ty\u{1b}[2J\n"));
        let text = plain(&changes.summary(Path::new("/w")));
        assert!(text.contains("+\ty\u{FFFD}[2J\n"), "{text:?}");
        assert!(!text.contains('\u{1b}'));
    }
}
