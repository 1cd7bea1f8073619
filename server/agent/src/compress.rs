//! Chat compression, the way Gemini CLI documents it: keep the most recent part of the history
//! word for word, have the model summarise the older part into a structured state snapshot, and
//! replace it with that snapshot plus a short acknowledgement. The pieces here are pure (where to
//! split, the request that asks for the snapshot, the new history, bounding old tool outputs);
//! `Session` decides when to compress and talks to the model.

use std::path::PathBuf;

use tandem_providers::{ChatRequest, Message, Response, ToolDeclaration, ToolResult};

/// What the model answers after the snapshot, so that roles keep alternating.
pub const ACKNOWLEDGEMENT: &str = "Got it. Thanks for the additional context!";

/// Where to split `history` so that about `preserve_fraction` of it (by size) is kept: the index
/// of the first kept message. The split is only ever at a user message that carries no tool
/// result (so a tool call and its result are never separated). Returns `history.len()` when
/// everything may be compressed (the history ends with a model answer that calls no tool) and 0
/// when there is nowhere to split.
pub fn split_point(history: &[Message], preserve_fraction: f64) -> usize {
    let _ = (history, preserve_fraction);
    0
}

/// The request that asks for the snapshot: the session's own system instruction and tool
/// declarations (so the provider's prompt cache still applies), the history to compress, and a
/// final user instruction to answer with a `<state_snapshot>` and no tool calls.
pub fn snapshot_request(
    system: &str,
    tools: Vec<ToolDeclaration>,
    older: &[Message],
) -> ChatRequest {
    let _ = (system, tools, older);
    ChatRequest::default()
}

/// The snapshot in the model's answer, or why there is none (no text, a tool call instead, no
/// `<state_snapshot>` element).
pub fn parse_snapshot(response: &Response) -> Result<String, String> {
    let _ = response;
    Err("not implemented".to_owned())
}

/// The new history: the snapshot as a user message, the acknowledgement, then `kept`.
pub fn rebuild(snapshot: &str, kept: Vec<Message>) -> Vec<Message> {
    let _ = (snapshot, kept);
    Vec::new()
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
    let _ = (history, keep_tokens, note_over_bytes, save);
    0
}
