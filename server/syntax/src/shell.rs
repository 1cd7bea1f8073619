//! Bash command lines as data: every simple command a line contains, wherever it sits (the top
//! level, `$(…)`, backquotes, `<(…)`, subshells, braces, control flow, function bodies), each
//! with its words after quote removal, its leading assignments and whether it is redirected, plus
//! whether the line is anything more than simple commands joined by `&&`, `||`, `;`, `|`, `&` and
//! newlines. The agent's approval rules read commands through this, because the commands run
//! with `bash -c` and splitting strings misses `\rm`, `r''m`, `echo $(rm x)` and the like.
//!
//! Pure parsing, no policy: what a word or command means to an approval rule is decided by the
//! caller. Where tree-sitter-bash reads a line differently from bash, this module follows bash
//! (line continuations inside a word, backquotes inside backquotes, backquotes in here-documents)
//! or, failing that, reports an error so that callers treat the line as unknown.

use tree_sitter::Node;

use crate::{Language, Result};

/// One word of a command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// The word's value, known before the line runs: `"a b"`, `'a b'`, `\r\m`, `r''m`, `$'\t'`.
    Literal(String),
    /// A word whose value is known only when the line runs (an expansion `$x` `${x}` `$(…)`
    /// `` `…` `` `$((…))`, an unquoted glob `*` `?` `[`, a tilde `~`, a brace expansion `{a,b}`,
    /// a `$"…"` translation); it holds the word's source text.
    Dynamic(String),
}

impl Word {
    /// The word's value when it is literal.
    pub fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(text) => Some(text),
            Word::Dynamic(_) => None,
        }
    }
}

/// `NAME=VALUE` (or `NAME+=VALUE`) before a command, alone, or as an argument of `export`,
/// `declare`, `local`, `readonly` and `typeset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub value: Word,
}

/// One simple command: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command name and its arguments; empty for a line of bare assignments (`x=1`).
    /// Declaration builtins keep their keyword as the first word (`export`, `declare`).
    pub words: Vec<Word>,
    /// Its variable assignments: the leading ones (`FOO=1 cmd`) and a declaration builtin's.
    pub assignments: Vec<Assignment>,
    /// It has a redirection (`>`, `<`, `>>`, `&>`, a here-document or here-string, a descriptor
    /// duplication `2>&1`), or sits in the body of a redirected pipeline or compound command.
    pub redirected: bool,
    /// It is not inside a substitution, subshell, brace group, control flow or function body.
    pub top_level: bool,
}

/// A parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// Every simple command of the line, in source order (an enclosing command comes before the
    /// commands of its substitutions).
    pub commands: Vec<SimpleCommand>,
    /// The line does not parse (tree-sitter found errors or missing tokens), nests backquotes
    /// deeper than this module follows, or is one that tree-sitter reads differently from bash
    /// in a way this module cannot repair (a `#` after a line continuation or an escaped space,
    /// a line that starts with a line continuation, `$'…\\'`): callers should treat its
    /// commands as unknown.
    pub has_error: bool,
    /// The line is only simple commands joined by `&&`, `||`, `;`, `|`, `&` and newlines: no
    /// substitution, subshell, compound command, control flow, function definition, test
    /// command, redirection, here-document, `|&` or array. Conservative: a construct this module
    /// does not list makes it false.
    pub simple: bool,
}

/// How many levels of backquotes inside backquotes are re-read (each level needs its own
/// escaping, so real commands stop at two); deeper lines are reported as errors.
const MAX_BACKQUOTE_DEPTH: usize = 4;

/// The node kinds a line of simple commands is made of. Anything else (a subshell, `if`, a
/// redirection, `$(…)`) makes [`Line::simple`] false; unnamed tokens are checked by their parent,
/// except `|&`, which redirects standard error into the pipe.
const SIMPLE_KINDS: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "command",
    "command_name",
    "declaration_command",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "comment",
    "word",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "number",
    "simple_expansion",
    "expansion",
    "variable_name",
    "special_variable_name",
];

/// The node kinds whose commands are still at the top level of the line. A here-document's
/// redirection is one because tree-sitter puts what follows `<<EOF` on its line (`| sh`,
/// `&& rm x`) inside it.
const TOP_LEVEL_KINDS: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "redirected_statement",
    "negated_command",
    "heredoc_redirect",
];

/// Parses `source` as bash and lists its simple commands.
pub fn parse_line(source: &str) -> Result<Line> {
    let mut line = Line {
        simple: true,
        ..Line::default()
    };
    collect(source, 0, &mut line)?;
    Ok(line)
}

/// A node still to visit and what its ancestors make of it.
struct Visit<'tree> {
    node: Node<'tree>,
    parent: &'tree str,
    nested: bool,
    redirected: bool,
}

/// Adds the commands of `source` to `line`; `depth` counts the backquote levels re-read, whose
/// commands are nested. The walk keeps its own stack: a line can nest deeper than the call
/// stack allows.
fn collect(source: &str, depth: usize, line: &mut Line) -> Result<()> {
    let tree = crate::parse(Language::Bash, source)?;
    let root = tree.root_node();
    line.has_error |= root.has_error();
    let mut stack = vec![Visit {
        node: root,
        parent: "",
        nested: depth > 0,
        redirected: false,
    }];
    while let Some(Visit {
        node,
        parent,
        nested,
        redirected,
    }) = stack.pop()
    {
        let kind = node.kind();
        if (node.is_named() && !SIMPLE_KINDS.contains(&kind)) || kind == "|&" {
            line.simple = false;
        }
        match kind {
            "command" | "declaration_command" | "unset_command" => {
                line.has_error |= misread_gaps(node, source);
                line.commands
                    .push(simple_command(node, source, nested, redirected));
            }
            "variable_assignments" => line.commands.push(SimpleCommand {
                words: Vec::new(),
                assignments: named_children(node)
                    .into_iter()
                    .filter(|child| child.kind() == "variable_assignment")
                    .map(|child| assignment(child, source))
                    .collect(),
                redirected,
                top_level: !nested,
            }),
            "variable_assignment"
                if !matches!(
                    parent,
                    "command" | "declaration_command" | "variable_assignments"
                ) =>
            {
                line.commands.push(SimpleCommand {
                    words: Vec::new(),
                    assignments: vec![assignment(node, source)],
                    redirected,
                    top_level: !nested,
                });
            }
            "command_substitution" => {
                // Inside backquotes bash removes the backslash of `\\`, `` \` `` and `\$`
                // before it parses the command, so `` `echo \`rm x\`` `` runs `rm x`:
                // tree-sitter sees a quoted backquote there. Re-read the unescaped text.
                let text = text_of(node, source);
                if let Some(inner) = text
                    .strip_prefix('`')
                    .and_then(|rest| rest.strip_suffix('`'))
                    .filter(|inner| inner.contains('\\'))
                {
                    backquoted(&unescape_backquoted(inner), depth, line)?;
                    continue;
                }
            }
            "heredoc_body" => here_document_backquotes(node, parent, source, depth, line)?,
            // Bash starts a comment only at the start of a word; after `\ `, a quote or a line
            // continuation `#` is part of a word (`a\⏎#; rm x` runs `rm x`), but tree-sitter
            // starts a comment there and hides the rest of the line.
            "comment" if !source.get(..node.start_byte()).is_some_and(starts_a_word) => {
                line.has_error = true;
            }
            // Bash ends a word at unquoted whitespace; tree-sitter sometimes does not
            // (`a⏎\"` is one word to it, two commands to bash).
            "word" if has_unescaped_whitespace(text_of(node, source)) => line.has_error = true,
            // tree-sitter ends `$'…'` at a quote it reads as escaped where bash does not
            // (`$'\\'` is one backslash in bash): the rest of the line is then misread.
            "ansi_c_string" => {
                let inner = text_of(node, source)
                    .strip_prefix("$'")
                    .and_then(|rest| rest.strip_suffix('\''));
                if inner.is_none_or(|inner| find_unescaped(inner, '\'').is_some()) {
                    line.has_error = true;
                }
            }
            _ => {}
        }
        let nested = nested || !TOP_LEVEL_KINDS.contains(&kind);
        let mut cursor = node.walk();
        let mut children = Vec::new();
        if cursor.goto_first_child() {
            loop {
                let child_redirected = match kind {
                    "command_substitution" | "process_substitution" => false,
                    "redirected_statement" => redirected || cursor.field_name() == Some("body"),
                    _ => redirected,
                };
                children.push(Visit {
                    node: cursor.node(),
                    parent: kind,
                    nested,
                    redirected: child_redirected,
                });
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        stack.extend(children.into_iter().rev());
    }
    Ok(())
}

/// Adds the commands of a backquoted substitution's unescaped text, nested one level deeper.
fn backquoted(inner: &str, depth: usize, line: &mut Line) -> Result<()> {
    if depth >= MAX_BACKQUOTE_DEPTH {
        line.has_error = true;
        return Ok(());
    }
    collect(inner, depth + 1, line)
}

/// tree-sitter leaves backquotes in an unquoted here-document's body as text, but bash runs
/// them (`cat <<EOF` … `` `rm x` ``). Re-read each; an unread `$(` makes the line an error.
fn here_document_backquotes(
    body: Node,
    parent: &str,
    source: &str,
    depth: usize,
    line: &mut Line,
) -> Result<()> {
    // `<<'EOF'`, `<<"EOF"` and `<<\EOF` keep the body literal.
    let quoted = parent == "heredoc_redirect"
        && body.parent().is_some_and(|redirect| {
            named_children(redirect)
                .into_iter()
                .filter(|child| child.kind() == "heredoc_start")
                .any(|start| text_of(start, source).contains(['\'', '"', '\\']))
        });
    if quoted {
        return Ok(());
    }
    // The body's text between the expansions tree-sitter did parse.
    let mut segments = Vec::new();
    let mut at = body.start_byte();
    for child in named_children(body) {
        if child.kind() != "heredoc_content" {
            segments.push(at..child.start_byte());
            at = child.end_byte();
        }
    }
    segments.push(at..body.end_byte());
    for segment in segments {
        let mut text = source.get(segment).unwrap_or_default();
        if text.contains("$(") {
            line.has_error = true;
        }
        while let Some(start) = find_unescaped(text, '`') {
            let rest = &text[start + 1..];
            let Some(end) = find_unescaped(rest, '`') else {
                line.has_error = true;
                break;
            };
            backquoted(&unescape_backquoted(&rest[..end]), depth, line)?;
            text = &rest[end + 1..];
        }
    }
    Ok(())
}

/// The byte offset of the first `wanted` not escaped by a backslash.
fn find_unescaped(text: &str, wanted: char) -> Option<usize> {
    let mut escaped = false;
    for (index, char) in text.char_indices() {
        match char {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            _ if char == wanted => return Some(index),
            _ => {}
        }
    }
    None
}

/// Whether something other than blanks and line continuations lies between the command's
/// parts, or a backslash follows it: tree-sitter reads `a⏎\⏎b` as `a b` (bash: `a` and `b`) and
/// drops the escaped spaces of `a \  b` and `a \ ` (bash: three and two words).
fn misread_gaps(command: Node, source: &str) -> bool {
    let blank = |gap: &str| {
        gap.replace("\\\n", "")
            .chars()
            .all(|char| matches!(char, ' ' | '\t'))
    };
    let parts = children(command);
    let between = parts.windows(2).any(|pair| {
        source
            .get(pair[0].end_byte()..pair[1].start_byte())
            .is_none_or(|gap| !blank(gap))
    });
    let mut next = source.get(command.end_byte()..).unwrap_or_default();
    loop {
        let blanks = next.trim_start_matches([' ', '\t']);
        let rest = blanks.strip_prefix("\\\n").unwrap_or(blanks);
        if rest.len() == next.len() {
            break;
        }
        next = rest;
    }
    between || next.starts_with('\\')
}

/// Whether a word starts after `before`: at the start of the line, or after unescaped
/// whitespace or an operator character.
fn starts_a_word(before: &str) -> bool {
    let Some(last) = before.chars().next_back() else {
        return true;
    };
    let backslashes = before[..before.len() - last.len_utf8()]
        .chars()
        .rev()
        .take_while(|&char| char == '\\')
        .count();
    backslashes % 2 == 0 && (last.is_whitespace() || ";&|()<>".contains(last))
}

/// Whether `text` has whitespace that no backslash escapes.
fn has_unescaped_whitespace(text: &str) -> bool {
    let mut escaped = false;
    text.chars().any(|char| {
        let bare = !escaped && char.is_whitespace();
        escaped = !escaped && char == '\\';
        bare
    })
}

/// What bash parses inside backquotes: `\\`, `` \` `` and `\$` lose their backslash.
fn unescape_backquoted(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(char) = chars.next() {
        match (char, chars.peek()) {
            ('\\', Some(&next @ ('\\' | '`' | '$'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(char),
        }
    }
    out
}

/// A `command`, `declaration_command` or `unset_command` node as a [`SimpleCommand`].
fn simple_command(node: Node, source: &str, nested: bool, redirected: bool) -> SimpleCommand {
    let mut words = Vec::new();
    let mut pieces = Vec::new();
    let mut assignments = Vec::new();
    let mut redirected = redirected;
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            match (cursor.field_name(), child.kind()) {
                (Some("name"), _) => pieces.extend(children(child)),
                (Some("argument"), _) => pieces.push(child),
                (Some("redirect"), _) => redirected = true,
                (_, kind) if kind.ends_with("_redirect") => redirected = true,
                (_, "variable_assignment") if node.kind() == "command" => {
                    assignments.push(assignment(child, source));
                }
                (_, "variable_assignment") => {
                    assignments.push(assignment(child, source));
                    pieces.push(child);
                }
                // The builtin's keyword: `export`, `declare`, `local`, `unset`…
                (_, kind) if !child.is_named() && node.kind() != "command" => {
                    words.push(Word::Literal(kind.to_owned()));
                }
                (_, "word" | "variable_name" | "concatenation" | "string" | "raw_string")
                    if node.kind() != "command" =>
                {
                    pieces.push(child);
                }
                _ => {}
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    // Nodes that touch make one word (`"rm"x`, `$"…"` that tree-sitter splits in two), and so
    // do nodes separated only by line continuations: bash reads `r\⏎m` as `rm`, tree-sitter as
    // `r` and `m`.
    let mut group: Vec<Node> = Vec::new();
    for piece in pieces {
        let joined = group.last().is_some_and(|last| {
            source
                .get(last.end_byte()..piece.start_byte())
                .is_some_and(|gap| gap.split("\\\n").all(str::is_empty))
        });
        if !joined && !group.is_empty() {
            words.push(word(&group, source));
            group.clear();
        }
        group.push(piece);
    }
    if !group.is_empty() {
        words.push(word(&group, source));
    }
    SimpleCommand {
        words,
        assignments,
        redirected,
        top_level: !nested,
    }
}

/// A `variable_assignment` node.
fn assignment(node: Node, source: &str) -> Assignment {
    let name = node
        .child_by_field_name("name")
        .map(|name| text_of(name, source).to_owned())
        .unwrap_or_default();
    let value = match node.child_by_field_name("value") {
        Some(value) => word(&[value], source),
        None => Word::Literal(String::new()),
    };
    Assignment { name, value }
}

/// The word that the adjacent nodes `group` make.
fn word(group: &[Node], source: &str) -> Word {
    let mut builder = WordBuilder::default();
    for node in group {
        builder.push(*node, source);
    }
    let raw = match (group.first(), group.last()) {
        (Some(first), Some(last)) => source
            .get(first.start_byte()..last.end_byte())
            .unwrap_or_default(),
        _ => "",
    };
    if builder.dynamic || expands(&builder.chars) {
        return Word::Dynamic(raw.to_owned());
    }
    Word::Literal(builder.chars.into_iter().map(|(char, _)| char).collect())
}

/// Whether the word's unquoted characters ask bash for an expansion: a glob (`*`, `?`, `[`), a
/// tilde at the start or after `=` or `:` (bash expands `a=~/x` too), a brace expansion
/// (`{` … `,` or `..` … `}`). `{}` alone stays literal, as bash keeps it (`find -exec … {}`).
fn expands(chars: &[(char, bool)]) -> bool {
    let unquoted = |index: usize, wanted: char| chars.get(index) == Some(&(wanted, false));
    let glob = chars
        .iter()
        .any(|&(char, quoted)| !quoted && matches!(char, '*' | '?' | '['));
    let tilde = (0..chars.len()).any(|index| {
        unquoted(index, '~') && (index == 0 || unquoted(index - 1, '=') || unquoted(index - 1, ':'))
    });
    let brace = (0..chars.len())
        .filter(|&index| unquoted(index, '{'))
        .any(|open| {
            let Some(close) = (open + 1..chars.len())
                .rev()
                .find(|&index| unquoted(index, '}'))
            else {
                return false;
            };
            (open + 1..close).any(|index| {
                unquoted(index, ',') || (unquoted(index, '.') && unquoted(index + 1, '.'))
            })
        });
    glob || tilde || brace
}

/// A word's characters as quote removal leaves them, each marked quoted or not (the expansions
/// bash still applies look at unquoted ones only).
#[derive(Default)]
struct WordBuilder {
    chars: Vec<(char, bool)>,
    dynamic: bool,
}

impl WordBuilder {
    fn push(&mut self, node: Node, source: &str) {
        let text = text_of(node, source);
        match node.kind() {
            "word" | "variable_name" => self.unquoted(text),
            "number" if node.named_child_count() == 0 => self.unquoted(text),
            "raw_string" => match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
                Some(inner) => self.chars.extend(inner.chars().map(|char| (char, true))),
                None => self.dynamic = true,
            },
            "string" => {
                let only_text = named_children(node)
                    .into_iter()
                    .all(|child| child.kind() == "string_content");
                match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                    Some(inner) if only_text && text.len() >= 2 => self.double_quoted(inner),
                    _ => self.dynamic = true,
                }
            }
            "ansi_c_string" => match text.strip_prefix("$'").and_then(|t| t.strip_suffix('\'')) {
                Some(inner) => self.ansi_c(inner),
                None => self.dynamic = true,
            },
            "concatenation" => {
                for child in children(node) {
                    self.push(child, source);
                }
            }
            // `NAME=value` as a declaration builtin's argument.
            "variable_assignment" => match node.child_by_field_name("value") {
                Some(value) => {
                    match source.get(node.start_byte()..value.start_byte()) {
                        Some(name) => self.unquoted(name),
                        None => self.dynamic = true,
                    }
                    self.push(value, source);
                }
                None => self.unquoted(text),
            },
            _ => self.dynamic = true,
        }
    }

    /// Unquoted text: a backslash quotes the next character, a line continuation vanishes.
    fn unquoted(&mut self, text: &str) {
        let mut chars = text.chars();
        while let Some(char) = chars.next() {
            match char {
                '\\' => match chars.next() {
                    Some('\n') => {}
                    Some(next) => self.chars.push((next, true)),
                    None => self.chars.push(('\\', true)),
                },
                // Quotes and expansions have nodes of their own; in a word's text they mean
                // tree-sitter read something its own way.
                '\'' | '"' | '$' | '`' => self.dynamic = true,
                _ => self.chars.push((char, false)),
            }
        }
    }

    /// Between double quotes a backslash quotes only `$`, `` ` ``, `"`, `\` and a newline.
    fn double_quoted(&mut self, inner: &str) {
        let mut chars = inner.chars().peekable();
        while let Some(char) = chars.next() {
            match (char, chars.peek()) {
                ('\\', Some(&next @ ('$' | '`' | '"' | '\\'))) => {
                    self.chars.push((next, true));
                    chars.next();
                }
                ('\\', Some('\n')) => {
                    chars.next();
                }
                ('$' | '`', _) => self.dynamic = true,
                _ => self.chars.push((char, true)),
            }
        }
    }

    /// `$'…'`: the common escapes are decoded; `\c` and escapes that make a byte rather than a
    /// character (or a NUL, which ends the word in bash) make the word dynamic.
    fn ansi_c(&mut self, inner: &str) {
        let mut chars = inner.chars().peekable();
        while let Some(char) = chars.next() {
            if char != '\\' {
                self.chars.push((char, true));
                continue;
            }
            let Some(escape) = chars.next() else {
                self.chars.push(('\\', true));
                break;
            };
            let simple = match escape {
                'a' => Some('\u{7}'),
                'b' => Some('\u{8}'),
                'e' | 'E' => Some('\u{1b}'),
                'f' => Some('\u{c}'),
                'n' => Some('\n'),
                'r' => Some('\r'),
                't' => Some('\t'),
                'v' => Some('\u{b}'),
                '\\' | '\'' | '"' | '?' => Some(escape),
                _ => None,
            };
            if let Some(decoded) = simple {
                self.chars.push((decoded, true));
                continue;
            }
            let (radix, max_digits, byte) = match escape {
                '0'..='7' => (8, 2, true),
                'x' => (16, 2, true),
                'u' => (16, 4, false),
                'U' => (16, 8, false),
                'c' => {
                    self.dynamic = true;
                    continue;
                }
                _ => {
                    self.chars.push(('\\', true));
                    self.chars.push((escape, true));
                    continue;
                }
            };
            let mut digits = String::new();
            if radix == 8 {
                digits.push(escape);
            }
            while digits.len() < max_digits + usize::from(radix == 8) {
                match chars.peek() {
                    Some(&digit) if digit.is_digit(radix) => {
                        digits.push(digit);
                        chars.next();
                    }
                    _ => break,
                }
            }
            let value = u32::from_str_radix(&digits, radix).ok();
            match value.and_then(char::from_u32) {
                None if digits.is_empty() => {
                    self.chars.push(('\\', true));
                    self.chars.push((escape, true));
                }
                Some(decoded) if decoded != '\0' && !(byte && u32::from(decoded) > 0x7f) => {
                    self.chars.push((decoded, true));
                }
                _ => self.dynamic = true,
            }
        }
    }
}

/// A node's source text; empty if its range does not fall on character boundaries.
fn text_of<'source>(node: Node, source: &'source str) -> &'source str {
    source.get(node.byte_range()).unwrap_or_default()
}

fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line per command: `^` marks a nested one, `<…>` a dynamic word, `>` a redirected
    /// command; then the line's flags.
    fn render(source: &str) -> String {
        let line = parse_line(source).unwrap();
        let word = |word: &Word| match word {
            Word::Literal(text) if text.is_empty() || text.contains(char::is_whitespace) => {
                format!("{text:?}")
            }
            Word::Literal(text) => text.clone(),
            Word::Dynamic(raw) => format!("<{raw}>"),
        };
        let mut out: Vec<String> = line
            .commands
            .iter()
            .map(|command| {
                let mut parts: Vec<String> = Vec::new();
                if !command.top_level {
                    parts.push("^".into());
                }
                for assignment in &command.assignments {
                    parts.push(format!("{}={}", assignment.name, word(&assignment.value)));
                }
                if !command.assignments.is_empty() && !command.words.is_empty() {
                    parts.push("|".into());
                }
                parts.extend(command.words.iter().map(word));
                if command.redirected {
                    parts.push(">".into());
                }
                parts.join(" ")
            })
            .collect();
        if line.has_error {
            out.push("[error]".into());
        }
        if !line.simple {
            out.push("[not simple]".into());
        }
        out.join("\n")
    }

    #[test]
    fn words_after_quote_removal() {
        let cases = [
            (r"\rm -rf x", r"rm -rf x"),
            (r#""rm" 'a b' "a"'b'c\d$'e'"#, r#"rm "a b" abcde"#),
            (r"r''m x", "rm x"),
            (
                r#"echo "x\"y\$z\\w\q" 'it'\''s' a\ b"#,
                r#"echo x"y$z\w\q it's "a b""#,
            ),
            (
                r"echo $'\x41\101\t' $'it\'s' $'\u00e9'",
                r#"echo "AA\t" it's é"#,
            ),
            (
                "echo $'\\c[' $'\\xff' $'\\0'",
                r"echo <$'\c['> <$'\xff'> <$'\0'>",
            ),
            ("echo 'a\nb' \"c\nd\"", "echo \"a\\nb\" \"c\\nd\""),
            // A line continuation joins a word in bash; tree-sitter splits it.
            ("r\\\nm x \\\n y", "rm x y"),
            (
                "find . -exec rm {} \\; -o -exec rm {} +",
                "find . -exec rm {} ; -o -exec rm {} +",
            ),
            (
                "git log -10 --format=%h HEAD~1 a=b",
                "git log -10 --format=%h HEAD~1 a=b",
            ),
            ("echo '' \"\"", r#"echo "" """#),
        ];
        for (source, expected) in cases {
            assert_eq!(render(source), expected, "{source:?}");
        }
    }

    #[test]
    fn words_known_only_when_the_line_runs() {
        let cases = [
            (
                "echo $x ${y} $((1+2)) $[3]",
                "echo <$x> <${y}> <$((1+2))> <$[3]>\n[not simple]",
            ),
            ("echo *.rs a?b a[1] '*' \\*", "echo <*.rs> <a?b> <a[1]> * *"),
            (
                "echo ~ ~/a ~root a=~/x x:~ '~' a~b",
                "echo <~> <~/a> <~root> <a=~/x> <x:~> ~ a~b",
            ),
            (
                "echo {a,b} a{,b} {1..3} '{a,b}' \\{a,b\\}",
                "echo <{a,b}> <a{,b}> <{1..3}> {a,b} {a,b}\n[not simple]",
            ),
            (
                r#"echo "$x" "a$" a$ $"tr""#,
                r#"echo <"$x"> <"a$"> <a$> <$"tr">"#,
            ),
            ("$CMD x; ${x}y z", "<$CMD> x\n<${x}y> z"),
        ];
        for (source, expected) in cases {
            assert_eq!(render(source), expected, "{source:?}");
        }
    }

    #[test]
    fn commands_anywhere_in_the_line() {
        let cases = [
            (
                "cargo test && git status; a || b & c | d\ne",
                "cargo test\ngit status\na\nb\nc\nd\ne",
            ),
            (
                "echo $(rm x) `rm y` <(rm z)",
                "echo <$(rm x)> <`rm y`> <<(rm z)>\n^ rm x\n^ rm y\n^ rm z\n[not simple]",
            ),
            (
                "echo \"$(rm x)\"",
                "echo <\"$(rm x)\">\n^ rm x\n[not simple]",
            ),
            ("(rm a); { rm b; }", "^ rm a\n^ rm b\n[not simple]"),
            (
                "if true; then rm a; elif b; then c; else d; fi",
                "^ true\n^ rm a\n^ b\n^ c\n^ d\n[not simple]",
            ),
            (
                "while a; do b; done; for i in $(c); do d; done; case $(e) in f) g;; esac",
                "^ a\n^ b\n^ c\n^ d\n^ e\n^ g\n[not simple]",
            ),
            (
                "f() { rm x; }; f; function g { h; }",
                "^ rm x\nf\n^ h\n[not simple]",
            ),
            ("! rm x; [[ $(rm y) == z ]]", "rm x\n^ rm y\n[not simple]"),
            (
                "echo ${x:-$(rm a)} $((1 + $(rm b)))",
                "echo <${x:-$(rm a)}> <$((1 + $(rm b)))>\n^ rm a\n^ rm b\n[not simple]",
            ),
            ("a=( $(rm x) )", "a=<( $(rm x) )>\n^ rm x\n[not simple]"),
            // Backquotes inside backquotes: bash unescapes `\`` before parsing the inner command.
            (
                "echo `echo \\`rm x\\``",
                "echo <`echo \\`rm x\\``>\n^ echo <`rm x`>\n^ rm x\n[not simple]",
            ),
            (
                "echo `echo \"\\`rm x\\`\"`",
                "echo <`echo \"\\`rm x\\`\"`>\n^ echo <\"`rm x`\">\n^ rm x\n[not simple]",
            ),
        ];
        for (source, expected) in cases {
            assert_eq!(render(source), expected, "{source:?}");
        }
    }

    #[test]
    fn assignments_and_redirections() {
        let cases = [
            (
                "FOO=1 BAR=\"a b\" /bin/rm x",
                "FOO=1 BAR=\"a b\" | /bin/rm x",
            ),
            (
                "x=1; y=$(rm a) z=2",
                "x=1\ny=<$(rm a)> z=2\n^ rm a\n[not simple]",
            ),
            (
                "export A=b C; local -r d=1",
                "A=b | export A=b C\nd=1 | local -r d=1",
            ),
            ("cargo test > out.txt", "cargo test >\n[not simple]"),
            ("cargo test 2>&1 | tail", "cargo test >\ntail\n[not simple]"),
            ("cargo test |& tail", "cargo test\ntail\n[not simple]"),
            (">out cmd a", "cmd a >\n[not simple]"),
            ("a | b > out", "a >\nb >\n[not simple]"),
            ("{ a; } > out", "^ a >\n[not simple]"),
            ("cat <<< \"x\"", "cat >\n[not simple]"),
            (
                "cat <<EOF | sh\nhi $(rm x)\nEOF",
                "cat >\nsh\n^ rm x\n[not simple]",
            ),
            (
                "cat <<'EOF' | sh\nrm x $(y) `z`\nEOF",
                "cat >\nsh\n[not simple]",
            ),
            // tree-sitter leaves backquotes in a here-document as text.
            ("cat <<EOF\nhi `rm x`\nEOF", "cat >\n^ rm x\n[not simple]"),
        ];
        for (source, expected) in cases {
            assert_eq!(render(source), expected, "{source:?}");
        }
    }

    #[test]
    fn errors_and_empty_lines() {
        let cases = [
            ("", ""),
            ("# a comment", ""),
            ("cargo test # a comment", "cargo test"),
            ("f(", "f\n[error]\n[not simple]"),
            (
                "cmd && ; echo \"x",
                "cmd\necho <\"x>\n[error]\n[not simple]",
            ),
        ];
        for (source, expected) in cases {
            assert_eq!(render(source), expected, "{source:?}");
        }
    }

    #[test]
    fn backquotes_nested_past_the_limit_are_an_error() {
        let nest = |levels: usize| {
            (0..levels).fold("rm x".to_owned(), |inner, _| {
                format!("echo `{}`", inner.replace('\\', "\\\\").replace('`', "\\`"))
            })
        };
        let deepest = parse_line(&nest(MAX_BACKQUOTE_DEPTH + 1)).unwrap();
        assert!(!deepest.has_error);
        assert_eq!(
            deepest.commands.last().map(|command| &command.words),
            Some(&vec![Word::Literal("rm".into()), Word::Literal("x".into())])
        );
        assert!(
            parse_line(&nest(MAX_BACKQUOTE_DEPTH + 2))
                .unwrap()
                .has_error
        );
    }

    /// Lines that tree-sitter-bash reads differently from bash, found by comparing with bash:
    /// each would hide a command or change a word, so each is an error.
    #[test]
    fn lines_tree_sitter_misreads_are_errors() {
        let cases = [
            // A comment after a line continuation or an escaped space: bash runs `rm x`.
            "echo a\\\n#; rm x",
            "echo \\ #; rm x",
            // A line continuation at the start of a line: bash runs `a` and `b`.
            "a\n\\\nb",
            // Escaped spaces dropped: bash passes " " as a word.
            "echo a \\  b",
            "echo a \\ ",
            // `$'\\'` ends at the second quote in bash; tree-sitter reads on.
            "echo $'a\\\\'\\'",
            // A word running over a newline.
            "a\n\\\"",
        ];
        for source in cases {
            let line = parse_line(source).unwrap();
            assert!(line.has_error, "{source:?}: {line:?}");
        }
    }

    #[test]
    fn common_agent_commands_parse_cleanly() {
        let cases = [
            "cargo test \\\n  -p foo \\\n  --lib",
            "cargo test 2>&1 | tail -20",
            "grep -rn \"foo bar\" src/ | head -50",
            "cd server && cargo build --release # build it",
            "git commit -m \"$(cat <<'EOF'\nfix: a thing\n\nmore text\nEOF\n)\"",
            "for f in src/*.rs; do echo \"$f\"; done",
            "find . -name '*.rs' -exec grep -l foo {} \\;",
            "python3 -c 'print(1)' && echo \"done: $?\"",
            "ls -la ~ /tmp",
            "echo a\\ b \\\n c",
            "sed -n '1,20p' src/lib.rs",
            "awk '{print $1}' file | sort | uniq -c",
        ];
        for source in cases {
            let line = parse_line(source).unwrap();
            assert!(!line.has_error, "{source:?}: {line:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let source = format!("{}rm x{}", "$(".repeat(5000), ")".repeat(5000));
        let line = parse_line(&source).unwrap();
        assert!(line
            .commands
            .iter()
            .any(|command| command.words.first() == Some(&Word::Literal("rm".into()))));
    }
}
