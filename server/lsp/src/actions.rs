//! Code actions and the commands behind them: "Ask Tandem…", "Explain this", "Fix this
//! diagnostic", "Write tests for this", "Document this" on any range, and "Run Tandem
//! instruction" where a `tandem:` comment sits at the cursor. Each becomes a turn started through
//! `workspace/executeCommand`.
//!
//! Code actions are the one entry point every editor has (Helix and Zed show no custom UI), so
//! each action only names a command and its argument object; the same objects are what clients
//! with their own UI send to `workspace/executeCommand` directly.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tandem_agent::Attachment;
use tandem_text::{Document, PositionEncoding};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Command, Diagnostic,
    DiagnosticSeverity, ExecuteCommandParams, NumberOrString, Position, Range,
};
use url::Url;

use crate::bridge;
use crate::from_proto;
use crate::instruction::{find_instruction, line_text, InstructionComment};

/// Every command `workspace/executeCommand` accepts.
pub(crate) const COMMANDS: &[&str] = &[
    "tandem.ask",
    "tandem.explain",
    "tandem.fixDiagnostic",
    "tandem.writeTests",
    "tandem.document",
    "tandem.runInstruction",
    "tandem.inlineChat",
    "tandem.showTranscript",
    "tandem.cancel",
    "tandem.compress",
    "tandem.restore",
];

/// A turn a command asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedTurn {
    pub session_id: Option<String>,
    pub text: String,
    pub context: Vec<Attachment>,
    pub comment: Option<InstructionComment>,
}

/// What an `executeCommand` asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CommandRequest {
    Turn(PlannedTurn),
    /// `tandem.inlineChat`: the same as the `tandem/inlineChat` request.
    InlineChat {
        uri: Url,
        range: Range,
        instruction: String,
        session_id: Option<String>,
    },
    ShowTranscript {
        session_id: Option<String>,
    },
    Cancel {
        session_id: Option<String>,
    },
    /// `tandem.compress`: the same as `tandem/compress`.
    Compress {
        session_id: Option<String>,
    },
    /// `tandem.restore`: the same as `tandem/restore`.
    Restore {
        session_id: Option<String>,
        turn_id: Option<String>,
    },
}

/// Attachments larger than this are cut, so one huge selection cannot fill the context window.
pub(crate) const MAX_ATTACHMENT_BYTES: usize = 16 * 1024;
/// Lines of the document shown on each side of a `tandem:` comment.
const INSTRUCTION_WINDOW_LINES: usize = 40;
/// Lines shown on each side of a diagnostic: enough for the statement it sits in.
const DIAGNOSTIC_CONTEXT_LINES: usize = 3;
/// Menus truncate long titles anyway; cutting them ourselves keeps the ellipsis honest.
const TITLE_CHARS: usize = 60;

/// What "Ask Tandem…" answers in an editor that cannot prompt for the instruction: write it in
/// a comment, shown in the file's own comment syntax.
fn ask_needs_instruction(document: &Document, uri: &Url) -> String {
    let (open, close) = comment_syntax(document.language_id(), uri.path());
    // Short: an editor may show it in a status line cut at the window's width (Helix).
    format!(
        "this editor cannot prompt for a question: write `{open} tandem: handle the empty \
         case{close}` at the cursor and run the code action 'Run Tandem instruction' (or run the \
         command tandem.ask with an instruction)."
    )
}

/// How a comment is opened and closed in a language; `//` when it is not known. Only leaders
/// `find_instruction` reads.
fn comment_syntax(language_id: &str, path: &str) -> (&'static str, &'static str) {
    tandem_syntax::comment_syntax(language_id, path).unwrap_or(("//", ""))
}

/// One action before it becomes an LSP `CodeAction`.
struct Offer {
    title: String,
    /// `None` for "Explain this": it changes nothing, yet should sit in the everyday menu
    /// (VS Code hides `source` actions from the light bulb).
    kind: Option<CodeActionKind>,
    command: &'static str,
    argument: Value,
    diagnostic: Option<Diagnostic>,
}

/// The actions offered for a range. `document` is the open document, if it is open.
///
/// Every action carries its command, even for clients that declare `codeAction/resolve` support
/// for `command`: Helix (23.10 to 25.07 at least) declares it, resolves, then runs the command of
/// the action as it was listed, so an action listed without one does nothing there.
pub(crate) fn code_actions(
    params: &CodeActionParams,
    document: Option<&Document>,
    encoding: PositionEncoding,
) -> Vec<CodeActionOrCommand> {
    // Only whole lines matter here, and a line number is the same in every encoding.
    let _ = encoding;
    let uri = &params.text_document.uri;
    let range = params.range;
    let selection = json!({ "uri": uri, "range": range });
    let mut offers = Vec::new();

    // The comment usually sits on the line above the code it is about, where the cursor is.
    let instruction = document.and_then(|document| {
        let line = range.start.line;
        [Some(line), line.checked_sub(1)]
            .into_iter()
            .flatten()
            .find_map(|line| {
                let text = line_text(document, line)?;
                Some((line, find_instruction(&text)?.instruction))
            })
    });
    if let Some((line, instruction)) = instruction {
        offers.push(Offer {
            title: format!("Run Tandem instruction: {}", shorten(&instruction)),
            kind: Some(CodeActionKind::REFACTOR_REWRITE),
            command: "tandem.runInstruction",
            argument: json!({ "uri": uri, "line": line, "instruction": instruction }),
            diagnostic: None,
        });
    }
    for diagnostic in &params.context.diagnostics {
        offers.push(Offer {
            title: format!("Fix this diagnostic: {}", shorten(&diagnostic.message)),
            kind: Some(CodeActionKind::QUICKFIX),
            command: "tandem.fixDiagnostic",
            argument: json!({ "uri": uri, "range": range, "diagnostic": diagnostic }),
            diagnostic: Some(diagnostic.clone()),
        });
    }
    let plain = [
        (
            "Ask Tandem…",
            Some(CodeActionKind::REFACTOR_REWRITE),
            "tandem.ask",
        ),
        ("Explain this", None, "tandem.explain"),
        (
            "Write tests for this",
            Some(CodeActionKind::REFACTOR_REWRITE),
            "tandem.writeTests",
        ),
        (
            "Document this",
            Some(CodeActionKind::REFACTOR_REWRITE),
            "tandem.document",
        ),
    ];
    for (title, kind, command) in plain {
        offers.push(Offer {
            title: title.to_owned(),
            kind,
            command,
            argument: selection.clone(),
            diagnostic: None,
        });
    }

    let only = params.context.only.as_deref();
    offers
        .into_iter()
        .filter(|offer| kind_wanted(offer.kind.as_ref(), only))
        .map(|offer| {
            let command = Command {
                title: offer.title.clone(),
                command: offer.command.to_owned(),
                arguments: Some(vec![offer.argument.clone()]),
            };
            CodeActionOrCommand::CodeAction(CodeAction {
                title: offer.title,
                kind: offer.kind,
                // A fix is never the preferred one: it starts a model turn, not an edit the
                // user can predict, so auto-fix-on-save must not pick it.
                is_preferred: offer.diagnostic.is_some().then_some(false),
                diagnostics: offer.diagnostic.map(|diagnostic| vec![diagnostic]),
                edit: None,
                command: Some(command),
                disabled: None,
                data: Some(json!({ "command": offer.command, "arguments": [offer.argument] })),
            })
        })
        .collect()
}

/// Whether an action of `kind` passes the client's `only` filter: a filter matches its own kind
/// and the kinds below it (`refactor` matches `refactor.rewrite`), and the empty kind matches
/// every action.
fn kind_wanted(kind: Option<&CodeActionKind>, only: Option<&[CodeActionKind]>) -> bool {
    let Some(only) = only else {
        return true;
    };
    let kind = kind.map_or("", |kind| kind.as_str());
    only.iter().any(|filter| {
        let filter = filter.as_str();
        filter.is_empty()
            || kind
                .strip_prefix(filter)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

/// What an action's `data` holds: the command it stands for.
#[derive(Deserialize)]
struct ActionData {
    command: String,
    arguments: Vec<Value>,
}

/// Fills in the command of an action from its `data`. Actions are listed with their command, so
/// this only answers clients that resolve every action they run (VS Code, Neovim).
pub(crate) fn resolve(mut action: CodeAction) -> Result<CodeAction> {
    let not_ours = || {
        Error::invalid_params(format!(
            "code action {:?} was not offered by Tandem: its `data` does not name a Tandem command",
            action.title
        ))
    };
    let data = action.data.clone().ok_or_else(not_ours)?;
    let data: ActionData = serde_json::from_value(data).map_err(|_| not_ours())?;
    if !COMMANDS.contains(&data.command.as_str()) {
        return Err(not_ours());
    }
    action.command = Some(Command {
        title: action.title.clone(),
        command: data.command,
        arguments: Some(data.arguments),
    });
    Ok(action)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RangeArgs {
    uri: Url,
    range: Range,
    #[serde(default)]
    instruction: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiagnosticArgs {
    uri: Url,
    range: Range,
    diagnostic: Diagnostic,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LineArgs {
    uri: Url,
    line: u32,
    instruction: String,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SessionArgs {
    #[serde(default)]
    session_id: Option<String>,
    /// `tandem.restore` only.
    #[serde(default)]
    turn_id: Option<String>,
}

/// Reads a command and its arguments. `document` looks up open documents; `display` names a
/// document for the model (a workspace-relative path).
pub(crate) fn parse_command(
    params: &ExecuteCommandParams,
    document: &dyn Fn(&Url) -> Option<Document>,
    encoding: PositionEncoding,
    display: &dyn Fn(&Url) -> String,
) -> Result<CommandRequest> {
    let open = |uri: &Url| {
        document(uri).ok_or_else(|| {
            Error::invalid_params(format!(
                "{} is not open in the editor: open it and run {} again",
                display(uri),
                params.command
            ))
        })
    };
    let turn = |session_id, text, context| {
        CommandRequest::Turn(PlannedTurn {
            session_id,
            text,
            context,
            comment: None,
        })
    };
    match params.command.as_str() {
        "tandem.ask" => {
            let args: RangeArgs = argument(params, "{uri, range, instruction}")?;
            let document = open(&args.uri)?;
            let instruction = non_empty(args.instruction).ok_or_else(|| {
                Error::invalid_params(ask_needs_instruction(&document, &args.uri))
            })?;
            let path = display(&args.uri);
            let selection = selected(&document, args.range, encoding);
            Ok(turn(
                args.session_id,
                instruction,
                vec![selection.attachment("Selection", &path, &args.uri, &document)],
            ))
        }
        command @ ("tandem.explain" | "tandem.writeTests" | "tandem.document") => {
            let args: RangeArgs = argument(params, "{uri, range}")?;
            let path = display(&args.uri);
            let document = open(&args.uri)?;
            let selection = selected(&document, args.range, encoding);
            let lines = selection.lines();
            let text = match command {
                "tandem.explain" => format!(
                    "Explain what the selected code in {path} ({lines}) does: what it is for, how \
                     it works, and anything subtle or risky in it. Read the surrounding code and \
                     its callers if that helps. Answer in prose; do not edit any files."
                ),
                "tandem.writeTests" => format!(
                    "Write tests for the selected code in {path} ({lines}). First find out how \
                     this project tests its code (where tests live, the framework, helpers, \
                     naming) and follow those conventions. Cover the main behaviour, the edge \
                     cases and the error paths, then run the new tests if you can. Do not change \
                     the code under test: if a test exposes a bug, tell me about it instead."
                ),
                _ => format!(
                    "Write documentation comments for the selected code in {path} ({lines}), in \
                     the idiom of its language ({}): `///` in Rust, docstrings in Python, JSDoc \
                     in JavaScript and TypeScript, Javadoc in Java, and so on, matching the style \
                     the file already uses. Say what each item is for and what a caller must know \
                     (parameters, return value, errors, side effects); do not restate what the \
                     code plainly says. Change only comments, not code.",
                    document.language_id()
                ),
            };
            Ok(turn(
                args.session_id,
                text,
                vec![selection.attachment("Selection", &path, &args.uri, &document)],
            ))
        }
        "tandem.fixDiagnostic" => {
            let args: DiagnosticArgs = argument(params, "{uri, range, diagnostic}")?;
            let path = display(&args.uri);
            let document = open(&args.uri)?;
            let text = fix_prompt(&args.diagnostic, &path, display);
            let first = args.range.start.line.min(args.diagnostic.range.start.line) as usize;
            let last = args.range.end.line.max(args.diagnostic.range.end.line) as usize;
            let excerpt = lines(
                &document,
                first.saturating_sub(DIAGNOSTIC_CONTEXT_LINES),
                last.saturating_add(DIAGNOSTIC_CONTEXT_LINES),
            );
            Ok(turn(
                args.session_id,
                text,
                vec![excerpt.attachment("Code around the diagnostic", &path, &args.uri, &document)],
            ))
        }
        "tandem.runInstruction" => {
            let args: LineArgs = argument(params, "{uri, line, instruction}")?;
            let instruction = non_empty(Some(args.instruction)).ok_or_else(|| {
                Error::invalid_params("tandem.runInstruction needs a non-empty `instruction`")
            })?;
            let path = display(&args.uri);
            let document = open(&args.uri)?;
            let Some(line_text) = line_text(&document, args.line) else {
                return Err(Error::invalid_params(format!(
                    "line {} is past the end of {path} ({} lines)",
                    u64::from(args.line) + 1,
                    text_lines(&document)
                )));
            };
            let line = args.line as usize;
            let excerpt = lines(
                &document,
                line.saturating_sub(INSTRUCTION_WINDOW_LINES),
                line.saturating_add(INSTRUCTION_WINDOW_LINES),
            );
            // Only a line that really holds a `tandem:` comment may be deleted after the turn:
            // arguments typed by hand could point anywhere.
            let comment = find_instruction(&line_text).map(|_| InstructionComment {
                uri: args.uri.clone(),
                line: args.line,
                text: line_text,
            });
            let label = format!(
                "{path} ({}) around the instruction on line {}{}",
                excerpt.lines(),
                line + 1,
                if comment.is_some() {
                    " (Tandem deletes that `tandem:` comment itself once your edits land)"
                } else {
                    ""
                }
            );
            Ok(CommandRequest::Turn(PlannedTurn {
                session_id: args.session_id,
                text: instruction,
                context: vec![Attachment {
                    label,
                    text: excerpt.capped_text(&path),
                    shown: bridge::shown_file(
                        &args.uri,
                        &document,
                        Some(document.version()),
                        Some((excerpt.first_line + 1, excerpt.last_line + 1)),
                        &excerpt.text,
                    ),
                }],
                comment,
            }))
        }
        "tandem.inlineChat" => {
            let args: RangeArgs = argument(params, "{uri, range, instruction}")?;
            let instruction = non_empty(args.instruction).ok_or_else(|| {
                Error::invalid_params("tandem.inlineChat needs a non-empty `instruction`")
            })?;
            Ok(CommandRequest::InlineChat {
                uri: args.uri,
                range: args.range,
                instruction,
                session_id: args.session_id,
            })
        }
        "tandem.showTranscript" => Ok(CommandRequest::ShowTranscript {
            session_id: optional_argument(params)?.session_id,
        }),
        "tandem.cancel" => Ok(CommandRequest::Cancel {
            session_id: optional_argument(params)?.session_id,
        }),
        "tandem.compress" => Ok(CommandRequest::Compress {
            session_id: optional_argument(params)?.session_id,
        }),
        "tandem.restore" => {
            let args = optional_argument(params)?;
            Ok(CommandRequest::Restore {
                session_id: args.session_id,
                turn_id: args.turn_id,
            })
        }
        unknown => Err(Error::invalid_params(format!(
            "unknown command {unknown:?}; Tandem's commands are {}",
            COMMANDS.join(", ")
        ))),
    }
}

/// The commands that act on a range of a document (`{uri, range, instruction?}`).
const RANGE_COMMANDS: &[&str] = &[
    "tandem.ask",
    "tandem.explain",
    "tandem.writeTests",
    "tandem.document",
    "tandem.inlineChat",
];

/// Rewrites the arguments of a range command as a user types them into an editor's command
/// line (Helix's `:lsp-workspace-command`, with its `%{…}` expansions) into the form code
/// actions send: `path` (absolute, or relative to the workspace or to the editor's folder) for
/// `uri`, found by `locate`; `lines` (1-based and inclusive, `[first, last]` or one number) for
/// `range`; and a string after the object for `instruction`. Other commands and arguments
/// already in that form are left as they are.
pub(crate) fn typed_arguments(
    params: &mut ExecuteCommandParams,
    locate: &dyn Fn(&str) -> Option<Url>,
) -> Result<()> {
    if !RANGE_COMMANDS.contains(&params.command.as_str()) {
        return Ok(());
    }
    let command = params.command.clone();
    let bad = |what: String| Error::invalid_params(format!("{command}: {what}"));
    if let [Value::Object(_), Value::String(_)] = params.arguments.as_slice() {
        let Some(Value::String(instruction)) = params.arguments.pop() else {
            return Ok(());
        };
        if let Some(Value::Object(fields)) = params.arguments.first_mut() {
            if fields.contains_key("instruction") {
                return Err(bad(
                    "the instruction is given twice, in the object and after it".to_owned(),
                ));
            }
            fields.insert("instruction".to_owned(), json!(instruction));
        }
    }
    let Some(Value::Object(fields)) = params.arguments.first_mut() else {
        return Ok(());
    };
    if !fields.contains_key("uri") {
        if let Some(path) = fields.remove("path") {
            let path = path
                .as_str()
                .ok_or_else(|| bad(format!("`path` must be a string, not {path}")))?;
            let uri = locate(path).ok_or_else(|| {
                bad(format!(
                    "{path:?} is not an open document: open it, or give its path from the \
                     workspace folder"
                ))
            })?;
            fields.insert("uri".to_owned(), json!(uri));
        }
    }
    if !fields.contains_key("range") {
        if let Some(lines) = fields.remove("lines") {
            let number = |value: &Value| {
                value
                    .as_u64()
                    .and_then(|line| u32::try_from(line).ok())
                    .filter(|line| *line > 0)
            };
            let (first, last) = match &lines {
                Value::Array(pair) => match pair.as_slice() {
                    [first, last] => (number(first), number(last)),
                    _ => (None, None),
                },
                one => (number(one), number(one)),
            };
            let (Some(first), Some(last)) = (first, last) else {
                return Err(bad(format!(
                    "`lines` must be a line number or [first, last], counted from 1, not {lines}"
                )));
            };
            let (first, last) = (first.min(last), first.max(last));
            // Whole lines: from the first's start to the start of the line after the last.
            fields.insert(
                "range".to_owned(),
                json!(Range::new(
                    Position::new(first - 1, 0),
                    Position::new(last, 0)
                )),
            );
        }
    }
    Ok(())
}

/// The single argument object of a command; `shape` tells the user what it should look like.
fn argument<T: DeserializeOwned>(params: &ExecuteCommandParams, shape: &str) -> Result<T> {
    let command = &params.command;
    match params.arguments.as_slice() {
        [argument] => serde_json::from_value(argument.clone()).map_err(|error| {
            Error::invalid_params(format!("{command} expects one argument {shape}: {error}"))
        }),
        others => Err(Error::invalid_params(format!(
            "{command} expects one argument {shape}, got {}",
            others.len()
        ))),
    }
}

/// For commands whose argument object may be left out (or sent as `null`).
fn optional_argument(params: &ExecuteCommandParams) -> Result<SessionArgs> {
    match params.arguments.as_slice() {
        [] | [Value::Null] => Ok(SessionArgs::default()),
        _ => argument(params, "{sessionId?}"),
    }
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn fix_prompt(diagnostic: &Diagnostic, path: &str, display: &dyn Fn(&Url) -> String) -> String {
    let Range { start, end } = diagnostic.range;
    let mut text = format!("Fix this diagnostic in {path}:\n");
    let message = diagnostic.message.trim().replace('\n', "\n  ");
    text += &format!("- message: {message}\n");
    if let Some(severity) = diagnostic.severity {
        let severity = match severity {
            DiagnosticSeverity::ERROR => "error",
            DiagnosticSeverity::WARNING => "warning",
            DiagnosticSeverity::INFORMATION => "information",
            DiagnosticSeverity::HINT => "hint",
            _ => "unknown",
        };
        text += &format!("- severity: {severity}\n");
    }
    if let Some(source) = &diagnostic.source {
        text += &format!("- source: {source}\n");
    }
    match &diagnostic.code {
        Some(NumberOrString::Number(code)) => text += &format!("- code: {code}\n"),
        Some(NumberOrString::String(code)) => text += &format!("- code: {code}\n"),
        None => {}
    }
    text += &format!(
        "- range: line {}, column {} to line {}, column {}\n",
        u64::from(start.line) + 1,
        u64::from(start.character) + 1,
        u64::from(end.line) + 1,
        u64::from(end.character) + 1
    );
    for related in diagnostic.related_information.iter().flatten() {
        text += &format!(
            "- related: {} line {}: {}\n",
            display(&related.location.uri),
            u64::from(related.location.range.start.line) + 1,
            related.message.trim()
        );
    }
    text += "\nMake the smallest change that fixes its cause, and leave unrelated code alone. \
             Do not just silence it (suppression comments or attributes, casts, `any`) unless \
             that is the right fix. If the fix needs a decision only I can make, explain the \
             options instead of editing.";
    text
}

/// Some whole or partial lines of a document.
struct Excerpt {
    text: String,
    /// 0-based, inclusive.
    first_line: usize,
    last_line: usize,
}

impl Excerpt {
    fn lines(&self) -> String {
        let (first, last) = (self.first_line + 1, self.last_line + 1);
        if first == last {
            format!("line {first}")
        } else {
            format!("lines {first}-{last}")
        }
    }

    fn capped_text(&self, path: &str) -> String {
        if self.text.len() <= MAX_ATTACHMENT_BYTES {
            return self.text.clone();
        }
        let mut cut = MAX_ATTACHMENT_BYTES;
        while !self.text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!(
            "{}\n[Truncated: this shows the first 16 KB of {} KB. Read {path} ({}) for the rest.]",
            &self.text[..cut],
            self.text.len().div_ceil(1024),
            self.lines()
        )
    }

    /// Labelled like "Selection in src/lib.rs (lines 3-9)"; taken from `document` at `uri`.
    fn attachment(&self, what: &str, path: &str, uri: &Url, document: &Document) -> Attachment {
        Attachment {
            label: format!("{what} in {path} ({})", self.lines()),
            text: self.capped_text(path),
            shown: bridge::shown_file(
                uri,
                document,
                Some(document.version()),
                Some((self.first_line + 1, self.last_line + 1)),
                &self.text,
            ),
        }
    }
}

/// The text of `range`; an empty range stands for the whole line it is on.
fn selected(document: &Document, range: Range, encoding: PositionEncoding) -> Excerpt {
    let mut start = document.char_offset(from_proto::position(range.start), encoding);
    let mut end = document.char_offset(from_proto::position(range.end), encoding);
    if start > end {
        std::mem::swap(&mut start, &mut end);
    }
    let rope = document.rope();
    let first_line = rope.char_to_line(start);
    if start == end {
        return lines(document, first_line, first_line);
    }
    let mut last_line = rope.char_to_line(end);
    // A selection of whole lines ends at the start of the next one, which it does not include.
    if last_line > first_line && rope.line_to_char(last_line) == end {
        last_line -= 1;
    }
    Excerpt {
        text: rope.slice(start..end).to_string(),
        first_line,
        last_line,
    }
}

/// Whole lines `first..=last` (0-based), clamped to the document.
fn lines(document: &Document, first: usize, last: usize) -> Excerpt {
    let rope = document.rope();
    let count = rope.len_lines();
    let last = last.min(text_lines(document).saturating_sub(1));
    let first = first.min(last);
    let start = rope.line_to_char(first);
    let end = if last + 1 < count {
        rope.line_to_char(last + 1)
    } else {
        rope.len_chars()
    };
    Excerpt {
        text: rope.slice(start..end).to_string(),
        first_line: first,
        last_line: last,
    }
}

/// Lines as a person counts them: the empty "line" after a final line break is not one.
fn text_lines(document: &Document) -> usize {
    let count = document.line_count();
    if count > 1 && document.rope().line(count - 1).len_chars() == 0 {
        count - 1
    } else {
        count
    }
}

/// The first line of `text`, cut to fit a menu title.
fn shorten(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default().trim();
    if line.chars().count() <= TITLE_CHARS {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::{expect, Expect};
    use tower_lsp::lsp_types::{
        CodeActionContext, DiagnosticRelatedInformation, Location, PartialResultParams,
        TextDocumentIdentifier, WorkDoneProgressParams,
    };

    use super::*;

    const RUST: &str = "fn main() {\n    // tandem: handle the empty case\n    let x = parse(input);\n    println!(\"{x}\");\n}\n";

    fn uri() -> Url {
        Url::parse("file:///project/src/main.rs").unwrap()
    }

    fn range(start: (u32, u32), end: (u32, u32)) -> Range {
        Range::new(Position::new(start.0, start.1), Position::new(end.0, end.1))
    }

    fn diagnostic(message: &str, at: Range) -> Diagnostic {
        Diagnostic {
            range: at,
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String("E0425".into())),
            source: Some("rustc".into()),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    fn params(
        at: Range,
        diagnostics: Vec<Diagnostic>,
        only: Option<Vec<CodeActionKind>>,
    ) -> CodeActionParams {
        CodeActionParams {
            text_document: TextDocumentIdentifier { uri: uri() },
            range: at,
            context: CodeActionContext {
                diagnostics,
                only,
                trigger_kind: None,
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        }
    }

    fn actions(params: &CodeActionParams, text: &str) -> Vec<CodeAction> {
        let document = Document::new(text, 1, "rust");
        code_actions(params, Some(&document), PositionEncoding::Utf16)
            .into_iter()
            .map(|action| match action {
                CodeActionOrCommand::CodeAction(action) => action,
                CodeActionOrCommand::Command(command) => panic!("a bare command: {command:?}"),
            })
            .collect()
    }

    fn render_actions(actions: &[CodeAction]) -> String {
        let mut out = String::new();
        for action in actions {
            let kind = action
                .kind
                .as_ref()
                .map_or("(no kind)", |kind| kind.as_str());
            writeln!(out, "{} [{kind}]", action.title).unwrap();
            if let Some(diagnostics) = &action.diagnostics {
                let messages: Vec<_> = diagnostics.iter().map(|d| d.message.as_str()).collect();
                writeln!(
                    out,
                    "  diagnostics: {messages:?}, preferred: {:?}",
                    action.is_preferred
                )
                .unwrap();
            }
            match &action.command {
                Some(command) => {
                    assert_eq!(command.title, action.title);
                    let arguments = serde_json::to_string(&command.arguments).unwrap();
                    writeln!(out, "  command: {} {arguments}", command.command).unwrap();
                }
                None => writeln!(out, "  command: none").unwrap(),
            }
        }
        out
    }

    fn check_actions(params: &CodeActionParams, expect: Expect) {
        expect.assert_eq(&render_actions(&actions(params, RUST)));
    }

    fn two_diagnostics() -> Vec<Diagnostic> {
        vec![
            diagnostic("cannot find value `input` in this scope", range((2, 18), (2, 23))),
            diagnostic(
                "a very long message that goes on and on about what exactly went wrong here\nand a second line",
                range((2, 8), (2, 9)),
            ),
        ]
    }

    #[test]
    fn actions_for_a_selection_with_two_diagnostics() {
        let params = params(range((2, 4), (3, 0)), two_diagnostics(), None);
        check_actions(
            &params,
            expect![[r#"
                Run Tandem instruction: handle the empty case [refactor.rewrite]
                  command: tandem.runInstruction [{"uri":"file:///project/src/main.rs","line":1,"instruction":"handle the empty case"}]
                Fix this diagnostic: cannot find value `input` in this scope [quickfix]
                  diagnostics: ["cannot find value `input` in this scope"], preferred: Some(false)
                  command: tandem.fixDiagnostic [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}},"diagnostic":{"range":{"start":{"line":2,"character":18},"end":{"line":2,"character":23}},"severity":1,"code":"E0425","source":"rustc","message":"cannot find value `input` in this scope"}}]
                Fix this diagnostic: a very long message that goes on and on about what exactly… [quickfix]
                  diagnostics: ["a very long message that goes on and on about what exactly went wrong here\nand a second line"], preferred: Some(false)
                  command: tandem.fixDiagnostic [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}},"diagnostic":{"range":{"start":{"line":2,"character":8},"end":{"line":2,"character":9}},"severity":1,"code":"E0425","source":"rustc","message":"a very long message that goes on and on about what exactly went wrong here\nand a second line"}}]
                Ask Tandem… [refactor.rewrite]
                  command: tandem.ask [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}}}]
                Explain this [(no kind)]
                  command: tandem.explain [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}}}]
                Write tests for this [refactor.rewrite]
                  command: tandem.writeTests [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}}}]
                Document this [refactor.rewrite]
                  command: tandem.document [{"uri":"file:///project/src/main.rs","range":{"start":{"line":2,"character":4},"end":{"line":3,"character":0}}}]
            "#]],
        );
    }

    /// Helix declares `resolveSupport` for `command`, then runs the command of the action as it
    /// was listed: an action listed without one did nothing there.
    #[test]
    fn actions_carry_their_command_even_for_clients_that_resolve_it() {
        let params = params(range((2, 4), (3, 0)), two_diagnostics(), None);
        let listed = actions(&params, RUST);
        assert!(listed.iter().all(|action| action.command.is_some()));
        // Resolving an action whose command was dropped gives it back from `data`.
        let resolved: Vec<_> = listed
            .iter()
            .map(|action| {
                resolve(CodeAction {
                    command: None,
                    ..action.clone()
                })
                .unwrap()
            })
            .collect();
        assert_eq!(resolved, listed);
        for action in &listed {
            let command = action.command.as_ref().unwrap();
            let data = action.data.clone().unwrap();
            assert_eq!(data["command"], command.command);
            assert_eq!(data["arguments"], json!(command.arguments));
        }
    }

    #[test]
    fn resolve_refuses_actions_that_are_not_ours() {
        let action = |data: Option<Value>| CodeAction {
            title: "Something".into(),
            data,
            ..CodeAction::default()
        };
        let errors: Vec<_> = [
            None,
            Some(json!("x")),
            Some(json!({"command": "other.thing", "arguments": []})),
        ]
        .into_iter()
        .map(|data| resolve(action(data)).unwrap_err().message.into_owned())
        .collect();
        expect![[r#"
            [
                "code action \"Something\" was not offered by Tandem: its `data` does not name a Tandem command",
                "code action \"Something\" was not offered by Tandem: its `data` does not name a Tandem command",
                "code action \"Something\" was not offered by Tandem: its `data` does not name a Tandem command",
            ]
        "#]].assert_debug_eq(&errors);
    }

    #[test]
    fn actions_honour_the_only_filter() {
        let titles = |only: Vec<CodeActionKind>| {
            let params = params(range((2, 4), (2, 4)), two_diagnostics(), Some(only));
            actions(&params, RUST)
                .into_iter()
                .map(|action| action.title)
                .collect::<Vec<_>>()
        };
        expect![[r#"
            [
                [
                    "Fix this diagnostic: cannot find value `input` in this scope",
                    "Fix this diagnostic: a very long message that goes on and on about what exactly…",
                ],
                [
                    "Run Tandem instruction: handle the empty case",
                    "Ask Tandem…",
                    "Write tests for this",
                    "Document this",
                ],
                [
                    "Fix this diagnostic: cannot find value `input` in this scope",
                    "Fix this diagnostic: a very long message that goes on and on about what exactly…",
                ],
                [],
                [
                    "Run Tandem instruction: handle the empty case",
                    "Fix this diagnostic: cannot find value `input` in this scope",
                    "Fix this diagnostic: a very long message that goes on and on about what exactly…",
                    "Ask Tandem…",
                    "Explain this",
                    "Write tests for this",
                    "Document this",
                ],
            ]
        "#]].assert_debug_eq(&[
            titles(vec![CodeActionKind::QUICKFIX]),
            titles(vec![CodeActionKind::REFACTOR]),
            titles(vec![
                CodeActionKind::REFACTOR_EXTRACT,
                CodeActionKind::QUICKFIX,
            ]),
            titles(vec![CodeActionKind::SOURCE]),
            titles(vec![CodeActionKind::EMPTY]),
        ]);
    }

    #[test]
    fn instruction_action_comes_from_the_cursor_line_or_the_line_above() {
        let titles = |line: u32| {
            let params = params(range((line, 0), (line, 0)), Vec::new(), None);
            actions(&params, RUST)
                .into_iter()
                .map(|action| action.title)
                .find(|title| title.starts_with("Run"))
        };
        expect![[r#"
            [
                None,
                Some(
                    "Run Tandem instruction: handle the empty case",
                ),
                Some(
                    "Run Tandem instruction: handle the empty case",
                ),
                None,
            ]
        "#]]
        .assert_debug_eq(&[titles(0), titles(1), titles(2), titles(3)]);
    }

    fn run(command: &str, arguments: Vec<Value>) -> Result<CommandRequest> {
        let document = Document::new(RUST, 3, "rust");
        let params = ExecuteCommandParams {
            command: command.into(),
            arguments,
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        parse_command(
            &params,
            &|uri| (*uri == self::uri()).then(|| document.clone()),
            PositionEncoding::Utf16,
            &|uri| uri.path().trim_start_matches("/project/").to_owned(),
        )
    }

    fn render_request(request: Result<CommandRequest>) -> String {
        let request = match request {
            Ok(request) => request,
            Err(error) => return format!("error: {}\n", error.message),
        };
        let mut out = String::new();
        match request {
            CommandRequest::Turn(turn) => {
                writeln!(out, "turn (session {:?})\n{}", turn.session_id, turn.text).unwrap();
                for attachment in turn.context {
                    writeln!(out, "--- {}\n{}---", attachment.label, attachment.text).unwrap();
                }
                if let Some(comment) = turn.comment {
                    writeln!(out, "comment: line {} {:?}", comment.line, comment.text).unwrap();
                }
            }
            CommandRequest::InlineChat {
                uri,
                range,
                instruction,
                session_id,
            } => writeln!(
                out,
                "inline chat {uri} {}:{}-{}:{} {instruction:?} (session {session_id:?})",
                range.start.line, range.start.character, range.end.line, range.end.character
            )
            .unwrap(),
            other => writeln!(out, "{other:?}").unwrap(),
        }
        out
    }

    fn check_command(command: &str, arguments: Value, expect: Expect) {
        expect.assert_eq(&render_request(run(command, vec![arguments])));
    }

    #[test]
    fn ask_with_an_instruction() {
        check_command(
            "tandem.ask",
            json!({"uri": uri(), "range": range((2, 4), (2, 24)), "instruction": " Rename x ", "sessionId": "s1"}),
            expect![[r#"
                turn (session Some("s1"))
                Rename x
                --- Selection in src/main.rs (line 3)
                let x = parse(input)---
            "#]],
        );
    }

    /// What Helix's `:lsp-workspace-command tandem.ask {"path": "%{buffer_name}", "lines":
    /// [%{selection_line_start}, %{selection_line_end}]} "…"` sends, and its mistakes.
    #[test]
    fn ask_as_typed_on_a_command_line() {
        let typed = |arguments: Vec<Value>| {
            let mut params = ExecuteCommandParams {
                command: "tandem.ask".into(),
                arguments,
                work_done_progress_params: WorkDoneProgressParams::default(),
            };
            let locate = |path: &str| (path == "src/main.rs").then(uri);
            match typed_arguments(&mut params, &locate) {
                Ok(()) => render_request(run(&params.command, params.arguments)),
                Err(error) => format!("error: {}", error.message),
            }
        };
        expect![[r#"
            [
                "turn (session None)\nWhat is x?\n--- Selection in src/main.rs (lines 2-3)\n    // tandem: handle the empty case\n    let x = parse(input);\n---\n",
                "turn (session None)\nWhat is x?\n--- Selection in src/main.rs (line 3)\n    let x = parse(input);\n---\n",
                "error: tandem.ask: \"lib.rs\" is not an open document: open it, or give its path from the workspace folder",
                "error: tandem.ask: `lines` must be a line number or [first, last], counted from 1, not [0,2]",
                "error: tandem.ask: the instruction is given twice, in the object and after it",
            ]
        "#]]
        .assert_debug_eq(&[
            typed(vec![json!({"path": "src/main.rs", "lines": [3, 2]}), json!("What is x?")]),
            typed(vec![json!({"path": "src/main.rs", "lines": 3, "instruction": "What is x?"})]),
            typed(vec![json!({"path": "lib.rs", "lines": 3}), json!("What is x?")]),
            typed(vec![json!({"path": "src/main.rs", "lines": [0, 2]}), json!("What is x?")]),
            typed(vec![json!({"path": "src/main.rs", "lines": 1, "instruction": "a"}), json!("b")]),
        ]);
    }

    #[test]
    fn explain() {
        check_command(
            "tandem.explain",
            json!({"uri": uri(), "range": range((2, 0), (4, 0))}),
            expect![[r#"
                turn (session None)
                Explain what the selected code in src/main.rs (lines 3-4) does: what it is for, how it works, and anything subtle or risky in it. Read the surrounding code and its callers if that helps. Answer in prose; do not edit any files.
                --- Selection in src/main.rs (lines 3-4)
                    let x = parse(input);
                    println!("{x}");
                ---
            "#]],
        );
    }

    #[test]
    fn write_tests_on_an_empty_range_takes_the_line() {
        check_command(
            "tandem.writeTests",
            json!({"uri": uri(), "range": range((0, 3), (0, 3))}),
            expect![[r#"
                turn (session None)
                Write tests for the selected code in src/main.rs (line 1). First find out how this project tests its code (where tests live, the framework, helpers, naming) and follow those conventions. Cover the main behaviour, the edge cases and the error paths, then run the new tests if you can. Do not change the code under test: if a test exposes a bug, tell me about it instead.
                --- Selection in src/main.rs (line 1)
                fn main() {
                ---
            "#]],
        );
    }

    #[test]
    fn document() {
        check_command(
            "tandem.document",
            json!({"uri": uri(), "range": range((0, 0), (4, 1))}),
            expect![[r#"
                turn (session None)
                Write documentation comments for the selected code in src/main.rs (lines 1-5), in the idiom of its language (rust): `///` in Rust, docstrings in Python, JSDoc in JavaScript and TypeScript, Javadoc in Java, and so on, matching the style the file already uses. Say what each item is for and what a caller must know (parameters, return value, errors, side effects); do not restate what the code plainly says. Change only comments, not code.
                --- Selection in src/main.rs (lines 1-5)
                fn main() {
                    // tandem: handle the empty case
                    let x = parse(input);
                    println!("{x}");
                }---
            "#]],
        );
    }

    #[test]
    fn fix_diagnostic() {
        let mut diagnostic = diagnostic(
            "cannot find value `input` in this scope",
            range((2, 18), (2, 23)),
        );
        diagnostic.related_information = Some(vec![DiagnosticRelatedInformation {
            location: Location {
                uri: Url::parse("file:///project/src/parse.rs").unwrap(),
                range: range((9, 0), (9, 5)),
            },
            message: "a similar name exists: `inputs`".into(),
        }]);
        check_command(
            "tandem.fixDiagnostic",
            json!({"uri": uri(), "range": range((2, 18), (2, 18)), "diagnostic": diagnostic}),
            expect![[r#"
                turn (session None)
                Fix this diagnostic in src/main.rs:
                - message: cannot find value `input` in this scope
                - severity: error
                - source: rustc
                - code: E0425
                - range: line 3, column 19 to line 3, column 24
                - related: src/parse.rs line 10: a similar name exists: `inputs`

                Make the smallest change that fixes its cause, and leave unrelated code alone. Do not just silence it (suppression comments or attributes, casts, `any`) unless that is the right fix. If the fix needs a decision only I can make, explain the options instead of editing.
                --- Code around the diagnostic in src/main.rs (lines 1-5)
                fn main() {
                    // tandem: handle the empty case
                    let x = parse(input);
                    println!("{x}");
                }
                ---
            "#]],
        );
    }

    #[test]
    fn run_instruction() {
        check_command(
            "tandem.runInstruction",
            json!({"uri": uri(), "line": 1, "instruction": "handle the empty case"}),
            expect![[r#"
                turn (session None)
                handle the empty case
                --- src/main.rs (lines 1-5) around the instruction on line 2 (Tandem deletes that `tandem:` comment itself once your edits land)
                fn main() {
                    // tandem: handle the empty case
                    let x = parse(input);
                    println!("{x}");
                }
                ---
                comment: line 1 "    // tandem: handle the empty case"
            "#]],
        );
    }

    #[test]
    fn run_instruction_on_a_line_without_a_comment_removes_nothing() {
        check_command(
            "tandem.runInstruction",
            json!({"uri": uri(), "line": 2, "instruction": "handle the empty case"}),
            expect![[r#"
                turn (session None)
                handle the empty case
                --- src/main.rs (lines 1-5) around the instruction on line 3
                fn main() {
                    // tandem: handle the empty case
                    let x = parse(input);
                    println!("{x}");
                }
                ---
            "#]],
        );
    }

    #[test]
    fn inline_chat_show_transcript_and_cancel() {
        let out: String = [
            run(
                "tandem.inlineChat",
                vec![json!({"uri": uri(), "range": range((2, 4), (2, 9)), "instruction": "inline it"})],
            ),
            run("tandem.showTranscript", vec![]),
            run("tandem.showTranscript", vec![json!({"sessionId": "s2"})]),
            run("tandem.cancel", vec![Value::Null]),
            run("tandem.cancel", vec![json!({"sessionId": "s3"})]),
            run("tandem.compress", vec![]),
            run("tandem.restore", vec![json!({"sessionId": "s3", "turnId": "t2"})]),
        ]
        .into_iter()
        .map(render_request)
        .collect();
        expect![[r#"
            inline chat file:///project/src/main.rs 2:4-2:9 "inline it" (session None)
            ShowTranscript { session_id: None }
            ShowTranscript { session_id: Some("s2") }
            Cancel { session_id: None }
            Cancel { session_id: Some("s3") }
            Compress { session_id: None }
            Restore { session_id: Some("s3"), turn_id: Some("t2") }
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn ask_without_a_prompt_suggests_the_files_own_comment_syntax() {
        let cases = [
            (
                "python",
                "file:///p/app.py",
                "`# tandem: handle the empty case`",
            ),
            (
                "rust",
                "file:///p/main.rs",
                "`// tandem: handle the empty case`",
            ),
            (
                "lua",
                "file:///p/init.lua",
                "`-- tandem: handle the empty case`",
            ),
            (
                "html",
                "file:///p/index.html",
                "`<!-- tandem: handle the empty case -->`",
            ),
            (
                "css",
                "file:///p/site.css",
                "`/* tandem: handle the empty case */`",
            ),
            (
                "emacs-lisp",
                "file:///p/init.el",
                "`;; tandem: handle the empty case`",
            ),
            (
                "",
                "file:///p/build.sh",
                "`# tandem: handle the empty case`",
            ),
            (
                "plaintext",
                "file:///p/notes",
                "`// tandem: handle the empty case`",
            ),
        ];
        for (language, uri, expected) in cases {
            let document = Document::new("x\n", 1, language);
            let message = ask_needs_instruction(&document, &Url::parse(uri).unwrap());
            assert!(message.contains(expected), "{language}: {message}");
        }
        // Whatever is suggested, "Run Tandem instruction" finds it.
        for key in [
            "python",
            "lua",
            "clojure",
            "emacs-lisp",
            "latex",
            "html",
            "css",
            "go",
            "yaml",
        ] {
            let (open, close) = comment_syntax(key, "");
            let line = format!("{open} tandem: do it{close}");
            assert_eq!(
                find_instruction(&line).map(|found| found.instruction),
                Some("do it".to_owned()),
                "{key}: {line}"
            );
        }
    }

    #[test]
    fn command_errors() {
        let elsewhere = Url::parse("file:///project/src/closed.rs").unwrap();
        let selection = json!({"uri": uri(), "range": range((2, 4), (2, 9))});
        let out: String = [
            run("tandem.ask", vec![selection.clone()]),
            run(
                "tandem.ask",
                vec![json!({"uri": uri(), "range": range((2, 4), (2, 9)), "instruction": "  "})],
            ),
            run("tandem.explain", vec![]),
            run("tandem.explain", vec![selection.clone(), selection.clone()]),
            run("tandem.explain", vec![json!({"uri": uri()})]),
            run(
                "tandem.explain",
                vec![json!({"uri": "not a uri", "range": range((0, 0), (0, 0))})],
            ),
            run(
                "tandem.document",
                vec![json!({"uri": elsewhere, "range": range((0, 0), (0, 0))})],
            ),
            run("tandem.fixDiagnostic", vec![selection.clone()]),
            run(
                "tandem.runInstruction",
                vec![json!({"uri": uri(), "line": 99, "instruction": "x"})],
            ),
            run(
                "tandem.runInstruction",
                vec![json!({"uri": uri(), "line": 1, "instruction": ""})],
            ),
            run("tandem.inlineChat", vec![selection]),
            run("tandem.cancel", vec![json!(["s1"])]),
            run("tandem.frobnicate", vec![]),
        ]
        .into_iter()
        .map(render_request)
        .collect();
        expect![[r#"
            error: this editor cannot prompt for a question: write `// tandem: handle the empty case` at the cursor and run the code action 'Run Tandem instruction' (or run the command tandem.ask with an instruction).
            error: this editor cannot prompt for a question: write `// tandem: handle the empty case` at the cursor and run the code action 'Run Tandem instruction' (or run the command tandem.ask with an instruction).
            error: tandem.explain expects one argument {uri, range}, got 0
            error: tandem.explain expects one argument {uri, range}, got 2
            error: tandem.explain expects one argument {uri, range}: missing field `range`
            error: tandem.explain expects one argument {uri, range}: relative URL without a base: "not a uri"
            error: src/closed.rs is not open in the editor: open it and run tandem.document again
            error: tandem.fixDiagnostic expects one argument {uri, range, diagnostic}: missing field `diagnostic`
            error: line 100 is past the end of src/main.rs (5 lines)
            error: tandem.runInstruction needs a non-empty `instruction`
            error: tandem.inlineChat needs a non-empty `instruction`
            Cancel { session_id: Some("s1") }
            error: unknown command "tandem.frobnicate"; Tandem's commands are tandem.ask, tandem.explain, tandem.fixDiagnostic, tandem.writeTests, tandem.document, tandem.runInstruction, tandem.inlineChat, tandem.showTranscript, tandem.cancel, tandem.compress, tandem.restore
        "#]].assert_eq(&out);
    }

    #[test]
    fn big_selection_is_capped() {
        let big = format!("{}\n", "é".repeat(20_000));
        let document = Document::new(&big, 1, "rust");
        let excerpt = selected(&document, range((0, 0), (1, 0)), PositionEncoding::Utf16);
        let text = excerpt.capped_text("src/big.rs");
        assert!(text.len() < MAX_ATTACHMENT_BYTES + 200);
        expect!["[Truncated: this shows the first 16 KB of 40 KB. Read src/big.rs (line 1) for the rest.]"].assert_eq(text.rsplit('\n').next().unwrap());
    }
}
