//! A custom command's prompt as a template, parsed once when the command is loaded and
//! expanded with the user's arguments at each use. Expanding runs nothing and reads nothing: it
//! returns [`Piece`]s, and the caller runs the shell pieces (through the approval policy and
//! the sandbox) and reads the file pieces before `assemble.rs` puts the prompt together.
//!
//! Gemini CLI's TOML prompts: `@{path}` blocks are taken out first, then `!{command}` blocks
//! from the text between them (both may hold balanced braces; an unclosed block is an error
//! when the command is loaded), then `{{args}}` is replaced: by the raw arguments in the text,
//! by the arguments shell-quoted inside `!{…}`, and not at all inside `@{…}` (a path is taken
//! as written). Mentions (`@path`) in the template's text are left alone, as Gemini CLI leaves
//! them; those in the user's arguments are found.
//!
//! Claude Code's Markdown prompts: `` !`command` `` blocks are taken out first, then `$ARGUMENTS`
//! (the raw arguments) and `$1`, `$2`… (the arguments split like a shell splits words; a
//! missing one is empty) are replaced, shell-quoted inside a command, and then mentions are
//! found in the text: `@path` stays in the prompt as written and becomes a [`Piece::Mention`]
//! for the mentions resolver to attach (as Claude Code attaches the files a command names).
//!
//! Either way, when a template uses no argument placeholder and arguments were given, the
//! command line (`/name args`) is appended after a blank line, so the model still sees them.
//! The arguments are substituted as text and never parsed again: arguments that contain
//! `{{args}}`, `!{…}`, `@{…}` or `` !`…` `` stay text.
//!
//! Shell quoting follows Gemini CLI: the value is put in single quotes (`'` written `'\''`),
//! which is safe where the placeholder stands as a word of its own. A template that puts the
//! placeholder inside quotes of its own changes what the quoting means; the approval policy,
//! which checks every simple command of the final line, is what stands between such a
//! template and a command the user did not expect.

use crate::mentions::{self, Mention};

/// A part of an expanded prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text for the prompt as it is.
    Text(String),
    /// An `@path` of a Markdown template or of the arguments: kept in the prompt as written,
    /// attached by the mentions resolver (see `assemble`, which gives it its place in the
    /// final text).
    Mention(Mention),
    /// A command whose output goes in this place (`!{…}`, `` !`…` ``), arguments already
    /// quoted in it. Not run yet.
    Shell { command: String },
    /// `@{path}` of a TOML template: the content of the file or directory goes in this place.
    /// Not read yet.
    File { path: String },
}

/// Which tool's conventions a template follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Gemini CLI's `.toml` commands.
    Gemini,
    /// Claude Code's `.md` commands.
    Claude,
}

/// A parsed prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    dialect: Dialect,
    segments: Vec<Segment>,
    /// Whether the template says where the arguments go; if not, they are appended.
    uses_args: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Shell(String),
    File(String),
}

const GEMINI_ARGS: &str = "{{args}}";
const CLAUDE_ARGS: &str = "$ARGUMENTS";

impl Template {
    /// A Gemini CLI prompt; an error (for the user, naming what is wrong and where) when a
    /// block is not closed.
    pub fn gemini(prompt: &str) -> Result<Template, String> {
        let mut segments = Vec::new();
        for (text, file) in blocks(prompt, "@{")? {
            for (text, shell) in blocks(&text, "!{")? {
                segments.push(Segment::Text(text));
                // An empty block stands for nothing, as in Gemini CLI.
                segments.extend(shell.filter(|c| !c.is_empty()).map(Segment::Shell));
            }
            segments.extend(file.filter(|p| !p.is_empty()).map(Segment::File));
        }
        Ok(Template {
            dialect: Dialect::Gemini,
            segments,
            uses_args: prompt.contains(GEMINI_ARGS),
        })
    }

    /// A Claude Code command body: `` !`command` `` inline, and fenced blocks that open with
    /// a line ```` ```! ```` and close with a line ```` ``` ````, each a command whose output
    /// goes in its place. `` !` `` without a closing backtick, and a fence never closed, are
    /// text.
    pub fn claude(body: &str) -> Template {
        let mut segments = Vec::new();
        for (text, fenced) in fenced_blocks(body) {
            inline_commands(&text, &mut segments);
            segments.extend(fenced.map(Segment::Shell));
        }
        Template {
            dialect: Dialect::Claude,
            segments,
            uses_args: body.contains(CLAUDE_ARGS) || has_positional(body),
        }
    }
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The first line of the template's text that is not blank or a rule (a Markdown
    /// heading's `#` dropped), to describe a command whose file gives no description.
    pub(crate) fn first_line(&self) -> Option<String> {
        self.segments.iter().find_map(|segment| match segment {
            Segment::Text(text) => text
                .lines()
                .map(|line| line.trim().trim_start_matches('#').trim())
                // Blank lines and rules (`---`) say nothing.
                .find(|line| !line.chars().all(|c| c == '-'))
                .map(str::to_owned),
            Segment::Shell(_) | Segment::File(_) => None,
        })
    }

    /// The prompt for `/name args`, as pieces. `args` is the raw text after the name.
    pub fn expand(&self, name: &str, args: &str) -> Vec<Piece> {
        let args = args.trim();
        let positional = split_words(args);
        let mut pieces = Pieces::default();
        for segment in &self.segments {
            match (self.dialect, segment) {
                (Dialect::Gemini, Segment::Text(text)) => {
                    let mut parts = text.split(GEMINI_ARGS);
                    if let Some(first) = parts.next() {
                        pieces.text(first);
                    }
                    for part in parts {
                        pieces.mentions_in(args);
                        pieces.text(part);
                    }
                }
                (Dialect::Gemini, Segment::Shell(command)) => pieces.0.push(Piece::Shell {
                    command: command.replace(GEMINI_ARGS, &shell_quote(args)),
                }),
                (Dialect::Claude, Segment::Text(text)) => {
                    pieces.mentions_in(&substitute(text, args, &positional, |value| {
                        value.to_owned()
                    }));
                }
                (Dialect::Claude, Segment::Shell(command)) => pieces.0.push(Piece::Shell {
                    command: substitute(command, args, &positional, shell_quote),
                }),
                (_, Segment::File(path)) => pieces.0.push(Piece::File { path: path.clone() }),
            }
        }
        if !self.uses_args && !args.is_empty() {
            pieces.text(&format!("\n\n/{name} "));
            pieces.mentions_in(args);
        }
        pieces.0
    }
}

/// The text of a Claude Code body split at its ```` ```! ```` fences: (text before, the fenced
/// command) pairs, the last with no command. A fence that is never closed stays text.
fn fenced_blocks(body: &str) -> Vec<(String, Option<String>)> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut lines = body.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim_end() != "```!" {
            text.push_str(line);
            continue;
        }
        let mut command = String::new();
        let mut closed = false;
        let mut taken = Vec::new();
        for inner in lines.by_ref() {
            taken.push(inner);
            if inner.trim_end() == "```" {
                closed = true;
                break;
            }
            command.push_str(inner);
        }
        if closed && !command.trim().is_empty() {
            parts.push((std::mem::take(&mut text), Some(command.trim().to_owned())));
        } else {
            text.push_str(line);
            taken.iter().for_each(|inner| text.push_str(inner));
        }
    }
    parts.push((text, None));
    parts
}

/// `text`'s `` !`command` ``s as shell segments, the rest as text.
fn inline_commands(text: &str, segments: &mut Vec<Segment>) {
    let mut rest = text;
    while let Some(start) = rest.find("!`") {
        let after = &rest[start + 2..];
        match after.find('`') {
            Some(end) if !after[..end].trim().is_empty() => {
                segments.push(Segment::Text(rest[..start].to_owned()));
                segments.push(Segment::Shell(after[..end].trim().to_owned()));
                rest = &after[end + 1..];
            }
            _ => {
                segments.push(Segment::Text(rest[..start + 2].to_owned()));
                rest = after;
            }
        }
    }
    segments.push(Segment::Text(rest.to_owned()));
}

/// Pieces being built; adjacent text is merged.
#[derive(Default)]
struct Pieces(Vec<Piece>);

impl Pieces {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Piece::Text(last)) => last.push_str(text),
            _ => self.0.push(Piece::Text(text.to_owned())),
        }
    }

    /// `text` with its mentions found: text pieces and mention pieces.
    fn mentions_in(&mut self, text: &str) {
        let found = mentions::find(text);
        let mut at = 0;
        for mention in found.mentions {
            self.text(&found.text[at..mention.range.start]);
            at = mention.range.end;
            self.0.push(Piece::Mention(mention));
        }
        self.text(&found.text[at..]);
    }
}

/// Splits `text` at each `trigger…}` block (braces balanced inside): the text before each
/// block with the block's trimmed content, then the text after the last one with `None`.
fn blocks(text: &str, trigger: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find(trigger) {
        let content_start = start + trigger.len();
        let mut depth = 1;
        let mut end = None;
        for (at, c) in rest[content_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(content_start + at);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            let line = text[..offset + start].matches('\n').count() + 1;
            return Err(format!(
                "the `{trigger}` on line {line} is never closed; close it with `}}` (braces \
                 inside it must be balanced)"
            ));
        };
        out.push((
            rest[..start].to_owned(),
            Some(rest[content_start..end].trim().to_owned()),
        ));
        offset += end + 1;
        rest = &rest[end + 1..];
    }
    out.push((rest.to_owned(), None));
    Ok(out)
}

/// Whether `text` has a `$1`-style placeholder.
fn has_positional(text: &str) -> bool {
    text.match_indices('$').any(|(at, _)| {
        text[at + 1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() && c != '0')
    })
}

/// `text` with `$ARGUMENTS` replaced by `args` and `$N` by the N-th word of them (empty when
/// there are fewer), each passed through `quote`, in one pass: what is substituted is not
/// looked at again.
fn substitute(text: &str, args: &str, words: &[String], quote: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix(&CLAUDE_ARGS[1..]) {
            out.push_str(&quote(args));
            rest = tail;
            continue;
        }
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) if n > 0 => {
                let word = words.get(n - 1).map_or("", String::as_str);
                out.push_str(&quote(word));
                rest = &after[digits..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `value` as one bash word: in single quotes, a `'` inside written `'\''`.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// `text` split into words as a shell splits them: at whitespace, with single quotes (taken
/// literally), double quotes (where `\"` and `\\` are escapes) and backslash escapes outside
/// quotes. An unclosed quote runs to the end.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                let word = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(escaped @ ('"' | '\\')) => word.push(escaped),
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => word.push('\\'),
                        },
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                let word = word.get_or_insert_with(String::new);
                word.extend(chars.next());
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    words
}

#[cfg(test)]
mod tests;
