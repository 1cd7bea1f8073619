//! Chat compression, the way Gemini CLI documents it: keep the most recent part of the history
//! word for word, have the model summarise the older part into a structured state snapshot, and
//! replace it with that snapshot plus a short acknowledgement. The pieces here are pure (where to
//! split, the request that asks for the snapshot, the new history, bounding old tool outputs);
//! `Session` decides when to compress and talks to the model.

use std::path::PathBuf;

use tandem_providers::{ChatRequest, Message, Part, Response, Role, ToolDeclaration, ToolResult};

use crate::tokens;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the model answers after the snapshot, so that roles keep alternating.
pub const ACKNOWLEDGEMENT: &str = "Got it. Thanks for the additional context!";

/// The last user instruction of the snapshot request.
pub const SNAPSHOT_INSTRUCTION: &str = "\
Stop here and write a state snapshot instead of continuing the task. The conversation so far will \
be deleted and replaced by your answer, so the snapshot is all that you (or whoever takes over) \
will know about it. Answer with ONLY one <state_snapshot> XML element: no text before or after \
it, and no tool calls. Be dense: no pleasantries, no repetition, but keep every fact needed to \
continue the work — exact file paths, names of functions and types, commands and their outcomes, \
error messages, the user's words where they matter. If the history already contains an earlier \
<state_snapshot>, fold everything it says into the new one; nothing of it may be lost.

Use exactly these child elements:

<state_snapshot>
  <overall_goal>The user's goal, in one or two sentences.</overall_goal>
  <key_knowledge>Bullets: facts learned, conventions and constraints to respect, commands that \
build, test or run the project, decisions taken and why.</key_knowledge>
  <file_system_state>Bullets: files read, created, modified or deleted, each with what matters \
about it (what was changed, what it contains that is still relevant).</file_system_state>
  <recent_actions>Bullets: the last significant actions and their outcomes.</recent_actions>
  <current_plan>Numbered steps, each marked [DONE], [IN PROGRESS] or [TODO].</current_plan>
</state_snapshot>";

/// The line before the snapshot in the rebuilt history, so the model knows what it is reading.
const SNAPSHOT_LEAD_IN: &str = "This is a snapshot of the conversation so far, written to save \
space; the older messages were replaced by it:";

const OPEN_TAG: &str = "<state_snapshot>";
const CLOSE_TAG: &str = "</state_snapshot>";

/// What a tool result replaced by `bound_outputs` carries after its `[{name} output ({N} bytes)`
/// prefix; recognising it keeps a second run from replacing a note by a note.
const NOTE_MARKER: &str = " bytes) removed to save context; ";

/// Where to split `history` so that about `preserve_fraction` of it (by size) is kept: the index
/// of the first kept message. The split is only ever at a user message that carries no tool
/// result (so a tool call and its result are never separated). Returns `history.len()` when
/// everything may be compressed (the history ends with a model answer that calls no tool) and 0
/// when there is nowhere to split.
pub fn split_point(history: &[Message], preserve_fraction: f64) -> usize {
    // Estimated tokens rather than bytes, so that the split agrees with the size the session
    // compares against the context window.
    let total = tokens::estimate_history(history) as f64;
    let compress_at_least = (1.0 - preserve_fraction) * total;
    let mut before = 0u64;
    let mut last_valid = 0;
    for (index, message) in history.iter().enumerate() {
        if index > 0 && is_plain_user(message) {
            if before as f64 >= compress_at_least {
                return index;
            }
            last_valid = index;
        }
        before += tokens::estimate_message(message);
    }
    match history.last() {
        Some(last) if last.role == Role::Assistant && last.tool_calls().next().is_none() => {
            history.len()
        }
        _ => last_valid,
    }
}

/// A user message that answers no tool call: the only place a history may be cut.
fn is_plain_user(message: &Message) -> bool {
    message.role == Role::User
        && !message
            .parts
            .iter()
            .any(|part| matches!(part, Part::ToolResult(_)))
}

/// The request that asks for the snapshot: the session's own system instruction and tool
/// declarations (so the provider's prompt cache still applies), the history to compress, and a
/// final user instruction to answer with a `<state_snapshot>` and no tool calls.
pub fn snapshot_request(
    system: &str,
    tools: Vec<ToolDeclaration>,
    older: &[Message],
) -> ChatRequest {
    let instruction = Part::Text {
        text: SNAPSHOT_INSTRUCTION.to_owned(),
    };
    let mut messages = older.to_vec();
    match messages.last_mut() {
        // Roles must alternate, so the instruction joins the user's last message.
        Some(last) if last.role == Role::User => last.parts.push(instruction),
        Some(last) => {
            // Providers reject a tool call left unanswered, so answer any before asking.
            let mut parts: Vec<Part> = last
                .tool_calls()
                .map(|call| {
                    Part::ToolResult(ToolResult {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: "not run: the conversation is being summarised".to_owned(),
                        is_error: true,
                    })
                })
                .collect();
            parts.push(instruction);
            messages.push(Message {
                role: Role::User,
                parts,
            });
        }
        None => messages.push(Message {
            role: Role::User,
            parts: vec![instruction],
        }),
    }
    ChatRequest {
        system: system.to_owned(),
        messages,
        tools,
        ..ChatRequest::default()
    }
}

/// The snapshot in the model's answer, or why there is none (no text, a tool call instead, no
/// `<state_snapshot>` element).
pub fn parse_snapshot(response: &Response) -> Result<String, String> {
    let text = response.message.text();
    let text = text.trim();
    if let Some(start) = text.find(OPEN_TAG) {
        // The last closing tag, in case the model quoted an earlier snapshot inside its own.
        return match text[start..].rfind(CLOSE_TAG) {
            Some(end) => Ok(text[start..start + end + CLOSE_TAG.len()].to_owned()),
            None => Err(format!(
                "the summary was cut off before its closing {CLOSE_TAG} tag (the model's output \
                 limit may be too small); the conversation was left as it was"
            )),
        };
    }
    if response.message.tool_calls().next().is_some() {
        return Err("the model called a tool instead of writing the snapshot".to_owned());
    }
    if text.is_empty() {
        return Err(
            "the summary is empty: the model answered with no text; the conversation was left \
             as it was"
                .to_owned(),
        );
    }
    Err(format!(
        "the summary has no {OPEN_TAG} element: the model answered in another form; the \
         conversation was left as it was"
    ))
}

/// The new history: the snapshot as a user message, the acknowledgement, then `kept`.
pub fn rebuild(snapshot: &str, kept: Vec<Message>) -> Vec<Message> {
    let mut history = Vec::with_capacity(kept.len() + 2);
    history.push(Message::user(format!("{SNAPSHOT_LEAD_IN}\n\n{snapshot}")));
    // `split_point` makes `kept` start with a user message; should it not, leaving out the
    // acknowledgement is what keeps the roles alternating.
    if kept.first().is_none_or(|first| first.role == Role::User) {
        history.push(Message::assistant(ACKNOWLEDGEMENT));
    }
    history.extend(kept);
    history
}

/// Bounds the tool outputs of `history` (after a compression): newest first, outputs are kept
/// word for word until `keep_tokens` estimated tokens are used; after that, every output longer
/// than `note_over_bytes` is replaced by a one-line note. `save` stores the full output and
/// returns where (the note names it); when it returns `None` the note says to run the call
/// again. Returns how many outputs were replaced.
pub fn bound_outputs(
    history: &mut [Message],
    keep_tokens: u64,
    note_over_bytes: usize,
    save: &mut dyn FnMut(&ToolResult) -> Option<PathBuf>,
) -> usize {
    let mut used = 0u64;
    let mut over = false;
    let mut replaced = 0;
    let results = history
        .iter_mut()
        .rev()
        .flat_map(|message| message.parts.iter_mut().rev())
        .filter_map(|part| match part {
            Part::ToolResult(result) => Some(result),
            _ => None,
        });
    for result in results {
        if is_note(result) {
            continue;
        }
        if !over {
            let size = tokens::estimate_text(&result.content);
            used += size;
            if used <= keep_tokens {
                continue;
            }
            // Once the budget is spent, older outputs stay bounded even if a later small one
            // would still fit: the newest context is what the model needs word for word.
            over = true;
            // The output that crosses the budget keeps its head and tail in what is left of
            // it, rather than becoming a note: it may be the one the model has just asked for.
            let left = keep_tokens.saturating_sub(used - size);
            let keep = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .saturating_mul(tokens::BYTES_PER_TOKEN);
            if keep > note_over_bytes {
                if shorten_output(result, keep, save) {
                    replaced += 1;
                }
                continue;
            }
        }
        if result.content.len() <= note_over_bytes {
            continue;
        }
        // An output already shortened to fit the window has its full copy saved: keep the
        // notice that names it rather than saving the shortened text over that copy.
        if result.content.contains(SHORTENED_MARKER) {
            if shorten_output(result, 0, save) {
                replaced += 1;
            }
            continue;
        }
        let bytes = result.content.len();
        let name = &result.name;
        result.content = match save(result) {
            Some(path) => format!(
                "[{name} output ({bytes} bytes) removed to save context; full copy saved at {} \
                 — read it with read_file if you need it]",
                path.display()
            ),
            None => format!(
                "[{name} output ({bytes} bytes) removed to save context; run the call again if \
                 you need it]"
            ),
        };
        replaced += 1;
    }
    replaced
}

/// What the notice inside a shortened tool output says; recognising it lets a second
/// shortening cut the head and tail further without saving the shortened text over the full copy.
const SHORTENED_MARKER: &str = "is left out here to fit the context window";

/// Shortens one tool output to about `keep_bytes`: its first and last lines, with a one-line
/// notice between them that says how large the whole output was and where its full copy is
/// (`save` stores it, called only the first time) or, when there is none, to run the call again
/// with a narrower range. With `keep_bytes` 0 only the notice is left. Returns whether the
/// output changed.
pub fn shorten_output(
    result: &mut ToolResult,
    keep_bytes: usize,
    save: &mut dyn FnMut(&ToolResult) -> Option<PathBuf>,
) -> bool {
    if is_note(result) {
        return false;
    }
    let content = &result.content;
    let (head, notice, tail) = match content.find(SHORTENED_MARKER) {
        Some(at) => {
            let start = content[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = content[at..].find('\n').map_or(content.len(), |i| at + i);
            (
                &content[..start.saturating_sub(1)],
                content[start..end].to_owned(),
                content.get(end + 1..).unwrap_or_default(),
            )
        }
        None => {
            // Room for the notice: an output barely over the limit is not worth cutting.
            if content.len() <= keep_bytes + 300 {
                return false;
            }
            let (bytes, lines) = (content.len(), content.lines().count());
            let lines = format!("{lines} {}", if lines == 1 { "line" } else { "lines" });
            let name = &result.name;
            let notice = match save(result) {
                Some(path) => format!(
                    "[… the middle of this {name} output ({bytes} bytes, {lines} in all) \
                     {SHORTENED_MARKER}; the full output is saved at {} — read it in parts with \
                     read_file (start_line and end_line) if you need what is missing …]",
                    path.display()
                ),
                None => format!(
                    "[… the middle of this {name} output ({bytes} bytes, {lines} in all) \
                     {SHORTENED_MARKER}; run the call again with a narrower range or filter if \
                     you need what is missing …]"
                ),
            };
            (content.as_str(), notice, "")
        }
    };
    let whole = head.len() + tail.len();
    if whole <= keep_bytes {
        return false;
    }
    // Half each to the head and tail; a shortened output's tail is cut from its own end.
    let (head, tail) = if tail.is_empty() && !content.contains(SHORTENED_MARKER) {
        (
            cut_head(head, keep_bytes / 2),
            cut_tail(head, keep_bytes - keep_bytes / 2),
        )
    } else {
        (
            cut_head(head, keep_bytes / 2),
            cut_tail(tail, keep_bytes - keep_bytes / 2),
        )
    };
    let mut shortened = String::with_capacity(head.len() + notice.len() + tail.len() + 2);
    if !head.is_empty() {
        shortened.push_str(head);
        shortened.push('\n');
    }
    shortened.push_str(&notice);
    if !tail.is_empty() {
        shortened.push('\n');
        shortened.push_str(tail);
    }
    result.content = shortened;
    true
}

/// The longest start of `text` of at most `bytes`, ending at a line break when there is one.
fn cut_head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(line_end) => &text[..line_end],
        None => &text[..end],
    }
}

/// The longest end of `text` of at most `bytes`, starting after a line break when there is one.
fn cut_tail(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut start = text.len() - bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    if text.as_bytes()[start - 1] == b'\n' {
        return &text[start..];
    }
    match text[start..].find('\n') {
        Some(line_start) => &text[start + line_start + 1..],
        None => &text[start..],
    }
}

/// Shortens the tool outputs of `messages`, oldest first (so recent outputs are the last to
/// lose anything), to `keep_bytes` each, until about `excess` estimated tokens are saved.
/// Returns the tokens saved.
pub fn shorten_outputs(
    messages: &mut [Message],
    excess: u64,
    keep_bytes: usize,
    save: &mut dyn FnMut(&ToolResult) -> Option<PathBuf>,
) -> u64 {
    let mut saved = 0u64;
    let results = messages
        .iter_mut()
        .flat_map(|message| message.parts.iter_mut())
        .filter_map(|part| match part {
            Part::ToolResult(result) => Some(result),
            _ => None,
        });
    for result in results {
        if saved >= excess {
            break;
        }
        let before = tokens::estimate_text(&result.content);
        if shorten_output(result, keep_bytes, save) {
            saved += before.saturating_sub(tokens::estimate_text(&result.content));
        }
    }
    saved
}

/// Whether `result` already is a note left by `bound_outputs`.
fn is_note(result: &ToolResult) -> bool {
    let content = &result.content;
    content
        .strip_prefix('[')
        .and_then(|rest| rest.strip_prefix(result.name.as_str()))
        .and_then(|rest| rest.strip_prefix(" output ("))
        .is_some_and(|rest| {
            rest.contains(NOTE_MARKER) && rest.ends_with(']') && !rest.contains('\n')
        })
}

/// Context management (the `context` settings key): when and how the history is compressed.
/// See `docs/context.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ContextSettings {
    /// Compress before a turn when the last request used more than this fraction of the
    /// model's context window. 0 < threshold ≤ 1; 1 compresses only when the window overflows.
    // The bounds `validate` checks, so that an editor flags them too.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 1))]
    pub compression_threshold: f64,
    /// The most recent fraction of the history (by size) kept word for word; between 0 and 1.
    #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 1))]
    pub preserve_fraction: f64,
    /// Estimated tokens of tool output kept word for word after a compression, newest first;
    /// older outputs over `outputNoteOverBytes` become a one-line note.
    pub kept_output_tokens: u64,
    /// Tool outputs at most this long are always kept.
    pub output_note_over_bytes: usize,
    /// The model's context window, overriding the model's known or configured figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            compression_threshold: 0.5,
            preserve_fraction: 0.3,
            kept_output_tokens: 20_000,
            output_note_over_bytes: 2_048,
            context_window: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tandem_providers::ToolCall;

    use super::*;

    /// A history from a compact notation, one word a message: `u400` a user text of 400 bytes,
    /// `a400` an assistant text, `c` an assistant tool call, `r2000` the user message answering
    /// the previous call with 2000 bytes of output.
    fn history(spec: &str) -> Vec<Message> {
        let mut call = 0;
        spec.split_whitespace()
            .map(|word| {
                let (kind, size) = word.split_at(1);
                let text = "x".repeat(size.parse().unwrap_or(0));
                match kind {
                    "u" => Message::user(text),
                    "a" => Message::assistant(text),
                    "c" => {
                        call += 1;
                        Message {
                            role: Role::Assistant,
                            parts: vec![Part::ToolCall(tool_call(&format!("c{call}"), "t"))],
                        }
                    }
                    "r" => tool_result_message(&format!("c{call}"), "t", text),
                    _ => unreachable!("unknown message kind {kind}"),
                }
            })
            .collect()
    }

    fn tool_call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: json!({}),
            signature: None,
        }
    }

    fn tool_result_message(id: &str, name: &str, content: String) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult(ToolResult {
                call_id: id.to_owned(),
                name: name.to_owned(),
                content,
                is_error: false,
            })],
        }
    }

    #[test]
    fn split_point_cases() {
        // Sizes in estimated tokens: `u400`/`a400` 104, `c` 6, `r2000` 505.
        let cases = [
            // Total 1040; 70% is 728: index 6 has 624 before it, index 8 has 832.
            (
                "alternation",
                "u400 a400 u400 a400 u400 a400 u400 a400 u400 a400",
                0.3,
                8,
            ),
            // The threshold (92.7) is already passed at the tool result (index 2), which may not
            // be cut from its call: the split moves on to the next plain user message.
            ("after a tool pair", "u400 c r2000 a400 u400 a400", 0.9, 4),
            // No plain user message past the threshold, and the history ends in a tool result:
            // the last valid split point before it.
            (
                "before tool pairs",
                "u400 a400 u400 c r2000 c r2000",
                0.3,
                2,
            ),
            ("before a pending call", "u400 a400 u400 c r2000 c", 0.3, 2),
            // Ends with a text answer and no valid split past the threshold: all of it goes.
            ("all compressible", "u400 a400 u400 c r2000 a400", 0.3, 6),
            ("pending call, nowhere to split", "u400 c", 0.3, 0),
            ("answered call, nowhere to split", "u400 c r400 c", 0.3, 0),
            ("empty", "", 0.3, 0),
        ];
        for (name, spec, fraction, expected) in cases {
            let history = history(spec);
            let split = split_point(&history, fraction);
            assert_eq!(split, expected, "{name}: {spec}");
            if let Some(first_kept) = history.get(split) {
                assert!(is_plain_user(first_kept), "{name}: split at a tool result");
            }
        }
    }

    #[test]
    fn split_point_never_separates_a_call_from_its_result() {
        let history = history("u40 c r4000 c r40 a40 u40 c r4000 a400 u40 c r40 c r40");
        for step in 0..=20 {
            let fraction = f64::from(step) / 20.0;
            let split = split_point(&history, fraction);
            if let Some(first_kept) = history.get(split) {
                assert!(
                    is_plain_user(first_kept),
                    "fraction {fraction}: split {split}"
                );
            }
        }
    }

    fn declaration() -> ToolDeclaration {
        ToolDeclaration {
            name: "read_file".to_owned(),
            description: "Reads a file.".to_owned(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn snapshot_request_keeps_system_and_tools_and_joins_a_trailing_user_message() {
        let older = history("u40 a40 u40 c r400");
        let request = snapshot_request("be helpful", vec![declaration()], &older);
        assert_eq!(request.system, "be helpful");
        assert_eq!(request.tools, vec![declaration()]);
        assert!(request.cache_breakpoints.is_empty());
        assert_eq!(request.settings, Default::default());
        assert_eq!(request.messages.len(), older.len());
        assert_eq!(request.messages[..4], older[..4]);
        let last = &request.messages[4];
        assert_eq!(last.role, Role::User);
        assert_eq!(last.parts[0], older[4].parts[0]);
        assert_eq!(last.text(), SNAPSHOT_INSTRUCTION);
    }

    #[test]
    fn snapshot_request_answers_pending_calls_and_follows_a_text_answer() {
        let mut older = history("u40");
        older.push(Message {
            role: Role::Assistant,
            parts: vec![
                Part::Text {
                    text: "reading".to_owned(),
                },
                Part::ToolCall(tool_call("a", "read_file")),
                Part::ToolCall(tool_call("b", "grep")),
            ],
        });
        let request = snapshot_request("", Vec::new(), &older);
        assert_eq!(request.messages.len(), 3);
        let last = &request.messages[2];
        assert_eq!(last.role, Role::User);
        let answered: Vec<_> = last
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some((
                    result.call_id.as_str(),
                    result.name.as_str(),
                    result.is_error,
                )),
                _ => None,
            })
            .collect();
        assert_eq!(answered, [("a", "read_file", true), ("b", "grep", true)]);
        assert_eq!(last.text(), SNAPSHOT_INSTRUCTION);

        let request = snapshot_request("", Vec::new(), &history("u40 a40"));
        assert_eq!(request.messages.len(), 3);
        assert_eq!(request.messages[2], Message::user(SNAPSHOT_INSTRUCTION));
    }

    #[test]
    fn the_instruction_asks_for_every_section() {
        for section in [
            "<state_snapshot>",
            "<overall_goal>",
            "<key_knowledge>",
            "<file_system_state>",
            "<recent_actions>",
            "<current_plan>",
            "[DONE]",
            "[IN PROGRESS]",
            "[TODO]",
            "no tool calls",
        ] {
            assert!(SNAPSHOT_INSTRUCTION.contains(section), "{section}");
        }
    }

    fn response(parts: Vec<Part>) -> Response {
        Response {
            message: Message {
                role: Role::Assistant,
                parts,
            },
            ..Response::default()
        }
    }

    fn text(text: &str) -> Part {
        Part::Text {
            text: text.to_owned(),
        }
    }

    #[test]
    fn parse_snapshot_cases() {
        let snapshot =
            "<state_snapshot>\n<overall_goal>Fix the bug.</overall_goal>\n</state_snapshot>";
        let cases: [(&str, Vec<Part>, Result<&str, &str>); 6] = [
            (
                "good, with chatter around it",
                vec![text(&format!("Here it is:\n{snapshot}\nDone.\n"))],
                Ok(snapshot),
            ),
            (
                "good, across two text parts",
                vec![
                    text("<state_snapshot>\n<overall_goal>Fix the bug."),
                    text("</overall_goal>\n</state_snapshot>"),
                ],
                Ok(snapshot),
            ),
            (
                "missing closing tag",
                vec![text("<state_snapshot>\n<overall_goal>Fix")],
                Err("cut off"),
            ),
            (
                "tool call only",
                vec![Part::ToolCall(tool_call("a", "read_file"))],
                Err("the model called a tool instead of writing the snapshot"),
            ),
            ("empty", vec![text("  \n")], Err("empty")),
            (
                "no element",
                vec![text("I summarised it.")],
                Err("no <state_snapshot>"),
            ),
        ];
        for (name, parts, expected) in cases {
            let parsed = parse_snapshot(&response(parts));
            match (parsed, expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
                (Err(got), Err(want)) => {
                    assert!(got.contains(want), "{name}: {got}");
                    assert!(got.starts_with("the "), "{name}: {got}");
                }
                (got, _) => panic!("{name}: unexpected {got:?}"),
            }
        }
    }

    #[test]
    fn rebuild_alternates_roles() {
        let snapshot = "<state_snapshot></state_snapshot>";
        let roles = |history: &[Message]| history.iter().map(|m| m.role).collect::<Vec<_>>();
        let rebuilt = rebuild(snapshot, history("u40 a40 u40 c r40 a40"));
        assert_eq!(
            roles(&rebuilt),
            [
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant
            ]
        );
        assert_eq!(
            rebuilt[0].text(),
            format!("{SNAPSHOT_LEAD_IN}\n\n{snapshot}")
        );
        assert_eq!(rebuilt[1], Message::assistant(ACKNOWLEDGEMENT));

        assert_eq!(
            roles(&rebuild(snapshot, Vec::new())),
            [Role::User, Role::Assistant]
        );
        assert_eq!(
            roles(&rebuild(snapshot, history("a40"))),
            [Role::User, Role::Assistant]
        );
    }

    fn contents(history: &[Message]) -> Vec<String> {
        history
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some(result.content.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn bound_outputs_replaces_old_large_outputs_once() {
        // Oldest to newest: big (1000 tokens), small, big; the budget covers the newest only.
        let mut history = history("u40 c r4000 a40 u40 c r40 c r4000");
        if let Some(Part::ToolResult(result)) = history[2].parts.first_mut() {
            result.is_error = true;
        }
        let original = history.clone();
        let mut saved = Vec::new();
        let replaced = bound_outputs(&mut history, 1000, 100, &mut |result| {
            saved.push(result.clone());
            Some(PathBuf::from("outputs").join(format!("{}.txt", result.call_id)))
        });
        assert_eq!(replaced, 1);
        let expected_path = PathBuf::from("outputs").join("c1.txt");
        assert_eq!(
            contents(&history),
            [
                format!(
                    "[t output (4000 bytes) removed to save context; full copy saved at {} — \
                     read it with read_file if you need it]",
                    expected_path.display()
                ),
                "x".repeat(40),
                "x".repeat(4000),
            ]
        );
        // `save` sees the full output, before it is replaced.
        let saved: Vec<Part> = saved.into_iter().map(Part::ToolResult).collect();
        assert_eq!(saved, original[2].parts);
        match &history[2].parts[0] {
            Part::ToolResult(result) => {
                assert_eq!(
                    (
                        result.call_id.as_str(),
                        result.name.as_str(),
                        result.is_error
                    ),
                    ("c1", "t", true)
                );
            }
            other => panic!("expected a tool result, got {other:?}"),
        }

        let before = history.clone();
        let again = bound_outputs(&mut history, 1000, 100, &mut |_| {
            panic!("a note must not be saved again")
        });
        assert_eq!(again, 0);
        assert_eq!(history, before);
    }

    #[test]
    fn bound_outputs_without_a_saved_copy_says_to_run_again() {
        let mut history = history("u40 c r800 c r800 c r800");
        let replaced = bound_outputs(&mut history, 250, 100, &mut |_| None);
        // 200 tokens each: the newest fits, the second crosses the budget and keeps its head
        // and tail in the 50 tokens left, the oldest becomes a note.
        assert_eq!(replaced, 2);
        let note =
            "[t output (800 bytes) removed to save context; run the call again if you need it]";
        let contents = contents(&history);
        assert_eq!(contents[0], note);
        assert!(
            contents[1].starts_with(&format!(
                "{}\n[… the middle of this t output (800 bytes, 1 line in all) is left out here",
                "x".repeat(100)
            )),
            "{}",
            contents[1]
        );
        assert_eq!(contents[2], "x".repeat(800));
        assert_eq!(bound_outputs(&mut history, 250, 10, &mut |_| None), 0);
    }

    fn numbered_lines(count: usize) -> String {
        (1..=count).map(|n| format!("line {n:04}\n")).collect()
    }

    fn result_of(content: String) -> ToolResult {
        ToolResult {
            call_id: "c1".to_owned(),
            name: "shell".to_owned(),
            content,
            is_error: false,
        }
    }

    #[test]
    fn shorten_output_keeps_head_and_tail_and_names_the_saved_copy_once() {
        // 1000 lines of 10 bytes.
        let full = numbered_lines(1000);
        let mut result = result_of(full.clone());
        let mut saved = Vec::new();
        let path = PathBuf::from("outputs").join("shell-c1.txt");
        assert!(shorten_output(&mut result, 400, &mut |result| {
            saved.push(result.content.clone());
            Some(PathBuf::from("outputs").join("shell-c1.txt"))
        }));
        assert_eq!(saved, std::slice::from_ref(&full));
        let content = result.content.clone();
        assert!(content.starts_with("line 0001\n"), "{content}");
        assert!(content.ends_with("line 1000\n"), "{content}");
        assert!(content.len() < 400 + 400, "{content}");
        let notice = format!(
            "[… the middle of this shell output (10000 bytes, 1000 lines in all) is left out here \
             to fit the context window; the full output is saved at {} — read it in parts with \
             read_file (start_line and end_line) if you need what is missing …]",
            path.display()
        );
        assert!(
            content.contains(&format!("line 0020\n{notice}\nline 0981\n")),
            "{content}"
        );

        // Shortened again: less of the head and tail, the same notice, nothing saved over the
        // full copy.
        let mut never = |_: &ToolResult| -> Option<PathBuf> { panic!("saved twice") };
        assert!(shorten_output(&mut result, 100, &mut never));
        assert_eq!(
            result.content,
            format!("line 0001\nline 0002\nline 0003\nline 0004\nline 0005\n{notice}\nline 0996\nline 0997\nline 0998\nline 0999\nline 1000\n")
        );
        assert!(shorten_output(&mut result, 0, &mut never));
        assert_eq!(result.content, notice);
        assert!(!shorten_output(&mut result, 0, &mut never));

        // After a compression, the bounding keeps the notice rather than saving it.
        let mut history = vec![Message {
            role: Role::User,
            parts: vec![Part::ToolResult(result_of(full.clone()))],
        }];
        if let Part::ToolResult(result) = &mut history[0].parts[0] {
            shorten_output(result, 400, &mut |_| Some(path.clone()));
        }
        assert_eq!(bound_outputs(&mut history, 0, 10, &mut never), 1);
        assert_eq!(contents(&history), [notice]);
    }

    #[test]
    fn shorten_output_leaves_small_outputs_and_says_to_run_again_without_a_copy() {
        let mut small = result_of(numbered_lines(50));
        assert!(!shorten_output(&mut small, 400, &mut |_| None));
        assert_eq!(small.content, numbered_lines(50));

        // One long line: cut inside it, on character boundaries.
        let mut wide = result_of("é".repeat(1000));
        assert!(shorten_output(&mut wide, 101, &mut |_| None));
        assert!(wide
            .content
            .contains("run the call again with a narrower range"));
        assert!(
            wide.content.starts_with(&"é".repeat(25)),
            "{}",
            wide.content
        );
    }

    #[test]
    fn shorten_outputs_goes_oldest_first_and_stops_when_enough_is_saved() {
        let mut history = history("u40 c r4000 c r4000 c r4000");
        let saved = shorten_outputs(&mut history, 500, 400, &mut |_| None);
        assert!(saved >= 500, "{saved}");
        let sizes: Vec<usize> = contents(&history).iter().map(String::len).collect();
        assert!(sizes[0] < 1000, "{sizes:?}");
        assert_eq!(sizes[1..], [4000, 4000]);
        let saved = shorten_outputs(&mut history, 10_000, 400, &mut |_| None);
        assert!(saved > 1000, "{saved}");
        assert!(contents(&history)
            .iter()
            .all(|content| content.len() < 1000));
    }
}
