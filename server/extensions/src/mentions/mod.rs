//! @-references in prompts: `@src/parser.rs`, `@src/` (a directory), `@**/*.toml` (a glob),
//! `@"docs/release notes.md"` (a path with spaces) and `@server:uri` (a resource of an MCP
//! server). This file finds them in a prompt's text ([`find`]), without touching the disk;
//! `resolve.rs` decides what each one names, inside the workspace sandbox, and attaches it
//! ([`Resolver`]).
//!
//! The rules for finding, chosen so that ordinary prose is left alone:
//! - An `@` starts a mention only at the start of the text, after whitespace, or after an
//!   opening bracket or quote (`( [ { < " ' ` `): `user@example.com` is not one.
//! - The mention runs to the next whitespace. Punctuation that ends a sentence
//!   (`. , ; : ! ? ) ] } ' "`) may end it too: the resolver drops it unless a path exists with
//!   it, so `see @src/lib.rs.` names `src/lib.rs`.
//! - `@"…"` quotes a path with spaces; without its closing quote on the same line it is text.
//! - `\@` is a literal `@`: the backslash is dropped from the text the model sees and nothing
//!   after it is a mention.
//!
//! Whether a mention names anything is for the resolver: a token that names no file, directory
//! or matching glob (a Python decorator such as `@property`, a handle such as `@octocat`) stays
//! plain text, without a note.

mod resolve;

use std::ops::Range;

pub use resolve::{Limits, Resolved, Resolver, ResourceMention};

/// One `@` reference as the prompt wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Where it is in [`Found::text`] (the `@` and, for a quoted one, the quotes included).
    pub range: Range<usize>,
    /// What follows the `@`, without quotes: a path, a glob pattern or `server:uri`. Unquoted,
    /// it may end in sentence punctuation that is not part of the path.
    pub target: String,
    /// Written `@"…"`: the target is exactly the quoted text.
    pub quoted: bool,
}

impl Mention {
    /// The mention as it appears in the text, e.g. `@src/lib.rs.` or `@"a b.txt"`.
    pub fn written(&self) -> String {
        if self.quoted {
            format!("@\"{}\"", self.target)
        } else {
            format!("@{}", self.target)
        }
    }

    /// The paths the mention may mean, longest first: the target as written, then with the
    /// sentence punctuation at its end dropped one character at a time. A quoted target means
    /// only itself.
    pub(crate) fn candidates(&self) -> Vec<&str> {
        let mut candidates = vec![self.target.as_str()];
        if self.quoted {
            return candidates;
        }
        let mut rest = self.target.as_str();
        while let Some(shorter) = rest.strip_suffix(TRAILING_PUNCTUATION) {
            if shorter.is_empty() {
                break;
            }
            candidates.push(shorter);
            rest = shorter;
        }
        candidates
    }
}

/// A prompt's text with its escapes removed, and the mentions in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Found {
    /// The text the model sees: as written, but `\@` is `@`.
    pub text: String,
    pub mentions: Vec<Mention>,
}

/// Characters after which an `@` may start a mention (besides whitespace).
const OPENERS: [char; 7] = ['(', '[', '{', '<', '"', '\'', '`'];
/// Punctuation that may end a sentence around a mention rather than belong to it.
const TRAILING_PUNCTUATION: [char; 11] = ['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"'];

/// Finds the mentions in `text` and removes its `\@` escapes. Pure: nothing is looked up.
pub fn find(text: &str) -> Found {
    let mut found = Found::default();
    let mut chars = text.char_indices().peekable();
    // The character before the current one in the original text (`None` at the start).
    let mut previous: Option<char> = None;
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|&(_, next)| next == '@') => {
                chars.next();
                found.text.push('@');
                previous = Some('@');
                continue;
            }
            '@' if previous.is_none_or(|p| p.is_whitespace() || OPENERS.contains(&p)) => {
                let rest = &text[at + 1..];
                if let Some((mention, consumed)) = mention_at(rest) {
                    let start = found.text.len();
                    found.text.push_str(&text[at..at + 1 + consumed]);
                    found.mentions.push(Mention {
                        range: start..found.text.len(),
                        ..mention
                    });
                    // Skip what the mention took; its last character is the new `previous`.
                    while chars.peek().is_some_and(|&(next, _)| next <= at + consumed) {
                        if let Some((_, skipped)) = chars.next() {
                            previous = Some(skipped);
                        }
                    }
                    continue;
                }
                found.text.push('@');
            }
            _ => found.text.push(c),
        }
        previous = Some(c);
    }
    found
}

/// The mention that `rest` (the text after an `@`) starts with, and how many bytes of `rest`
/// it takes; `None` when there is none (`@` alone, `@ x`, an unclosed `@"`).
fn mention_at(rest: &str) -> Option<(Mention, usize)> {
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find(['"', '\n'])?;
        let target = &quoted[..end];
        if quoted[end..].starts_with('\n') || target.trim().is_empty() {
            return None;
        }
        let mention = Mention {
            range: 0..0,
            target: target.to_owned(),
            quoted: true,
        };
        return Some((mention, end + 2));
    }
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let target = &rest[..end];
    // A lone `@` before punctuation (`(@)`, `@.`) names nothing.
    if target.is_empty() || target.chars().all(|c| TRAILING_PUNCTUATION.contains(&c)) {
        return None;
    }
    let mention = Mention {
        range: 0..0,
        target: target.to_owned(),
        quoted: false,
    };
    Some((mention, end))
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;

    /// The text as the model sees it, then each mention: its target, and the span it covers.
    fn check(text: &str, expected: Expect) {
        let found = find(text);
        let mut out = format!("text: {}\n", found.text);
        for mention in &found.mentions {
            assert_eq!(&found.text[mention.range.clone()], mention.written());
            let quoted = if mention.quoted { " (quoted)" } else { "" };
            out.push_str(&format!(
                "- {}{quoted}; candidates: {}\n",
                mention.written(),
                mention.candidates().join(" | ")
            ));
        }
        expected.assert_eq(&out);
    }

    #[test]
    fn mentions_start_after_whitespace_brackets_and_quotes() {
        check(
            "@src/lib.rs explain, and (@docs/) or [@a.md] with \"@b.md\" and `@c.rs`\n@next",
            expect![[r#"
                text: @src/lib.rs explain, and (@docs/) or [@a.md] with "@b.md" and `@c.rs`
                @next
                - @src/lib.rs; candidates: src/lib.rs
                - @docs/); candidates: docs/) | docs/
                - @a.md]; candidates: a.md] | a.md
                - @b.md"; candidates: b.md" | b.md
                - @c.rs`; candidates: c.rs`
                - @next; candidates: next
            "#]],
        );
    }

    #[test]
    fn emails_and_words_with_at_signs_are_not_mentions() {
        check(
            "mail user@example.com or a@b, not@this; @ alone, (@) and @. are text",
            expect![[r#"
                text: mail user@example.com or a@b, not@this; @ alone, (@) and @. are text
            "#]],
        );
    }

    #[test]
    fn sentence_punctuation_is_a_candidate_to_drop() {
        check(
            "see @src/lib.rs. Then @a.rs, @b.rs; @c.rs: @d?! and @'e'",
            expect![[r#"
                text: see @src/lib.rs. Then @a.rs, @b.rs; @c.rs: @d?! and @'e'
                - @src/lib.rs.; candidates: src/lib.rs. | src/lib.rs
                - @a.rs,; candidates: a.rs, | a.rs
                - @b.rs;; candidates: b.rs; | b.rs
                - @c.rs:; candidates: c.rs: | c.rs
                - @d?!; candidates: d?! | d? | d
                - @'e'; candidates: 'e' | 'e
            "#]],
        );
    }

    #[test]
    fn escaped_at_signs_are_text_without_their_backslash() {
        check(
            r"write \@property or \@src/lib.rs, keep \ and \n; then @real",
            expect![[r#"
                text: write @property or @src/lib.rs, keep \ and \n; then @real
                - @real; candidates: real
            "#]],
        );
        // The escape is removed, so the spans of later mentions are in the new text.
        let found = find(r"\@a @b");
        assert_eq!(found.text, "@a @b");
        assert_eq!(found.mentions[0].range, 3..5);
    }

    #[test]
    fn quoted_paths_may_hold_spaces() {
        check(
            "read @\"docs/release notes.md\", then @\"no closing quote\non this line\" and @\"\" \
             and @\"  \"",
            expect![[r#"
                text: read @"docs/release notes.md", then @"no closing quote
                on this line" and @"" and @"  "
                - @"docs/release notes.md" (quoted); candidates: docs/release notes.md
            "#]],
        );
    }

    #[test]
    fn globs_resources_and_non_ascii_text_are_tokens_like_any_other() {
        check(
            "überall @**/*.toml und @docs:file:///a.md — @ünïcode.rs",
            expect![[r#"
                text: überall @**/*.toml und @docs:file:///a.md — @ünïcode.rs
                - @**/*.toml; candidates: **/*.toml
                - @docs:file:///a.md; candidates: docs:file:///a.md
                - @ünïcode.rs; candidates: ünïcode.rs
            "#]],
        );
    }
}
