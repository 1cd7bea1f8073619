//! What the edit tools do when the user changed a file while the model worked on it.
//!
//! An edit is an intent computed from the text the model saw. When the editor's buffer has moved
//! on (the user kept typing, or the write was refused as stale), the intent is resolved again on
//! the text the user has now: merged by lines with the user's change when the two touch
//! different lines, and otherwise refused with what the user changed near the edit, so the
//! model can redo it without reading the whole file again. The editor still checks the version
//! of every write, so nothing is ever written over text it was not computed from.

use std::ops::Range;
use std::path::Path;

use crate::merge;
use crate::tool::{ToolContext, ToolError};
use tandem_sandbox::editor::{current_text, WriteError};

/// Writes refused as stale that are resolved again before the model is told: the user may
/// still be typing.
pub const MAX_STALE_RETRIES: usize = 5;

/// A file's text as the user has it now, without a byte-order mark.
pub(crate) struct Current {
    pub(crate) text: String,
    /// The buffer's version; `None` when it came from the disk.
    pub(crate) version: Option<i32>,
    pub(crate) bom: bool,
}

/// Reads `path` again (the open buffer, else the disk) after a write was refused as stale.
pub(crate) fn read_current(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
) -> Result<Current, ToolError> {
    let current = current_text(ctx.editor.as_ref(), path)
        .map_err(|error| ToolError::Respond(format!("cannot read {shown} again: {error}")))?
        .ok_or_else(|| {
            ToolError::Respond(format!(
                "{shown} was closed and deleted while you edited it; nothing was written"
            ))
        })?;
    let text = String::from_utf8(current.bytes).map_err(|_| {
        ToolError::Respond(format!(
            "{shown} changed while you edited it and is no longer UTF-8 text; nothing was written"
        ))
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => Current {
            text: rest.to_owned(),
            version: current.version,
            bom: true,
        },
        None => Current {
            text,
            version: current.version,
            bom: false,
        },
    })
}

/// `ours` (the model's change of `base`, the text it saw) applied to `current`, the user's text
/// now; or the refusal the model reads, with the user's change near its edit.
pub(crate) fn merge_with_user(
    shown: &str,
    base: &str,
    current: &str,
    ours: &str,
) -> Result<String, ToolError> {
    merge::merge(base, current, ours)
        .map_err(|conflict| conflict_error(shown, base, current, conflict.ours))
}

/// The refusal for an edit the user's change overlaps: `ours` are the 0-based lines of `base`
/// the edit replaces.
pub(crate) fn conflict_error(
    shown: &str,
    base: &str,
    current: &str,
    ours: Range<usize>,
) -> ToolError {
    let nearby = merge::describe_nearby(base, current, &ours);
    let lines = if ours.len() <= 1 {
        format!("line {}", ours.start + 1)
    } else {
        format!("lines {}-{}", ours.start + 1, ours.end)
    };
    let diff = if nearby.is_empty() {
        String::new()
    } else {
        format!(" What the user changed there (the lines now in the file are the ` ` and `+` lines):\n{nearby}")
    };
    ToolError::Respond(format!(
        "{shown} changed in the editor while you worked on it: the user edited the text your \
         change replaces ({lines} of the text you saw), so nothing was written.{diff}\nIf your \
         change still applies, redo it on the text as it is now (no need to read the whole file \
         again); if the user's change already does what you meant, leave it."
    ))
}

/// 0-based lines of `base` that `new` changes: between their common leading and trailing
/// lines.
pub(crate) fn changed_lines(base: &str, new: &str) -> Range<usize> {
    let base_lines: Vec<&str> = base.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let start = base_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = base_lines[start..]
        .iter()
        .rev()
        .zip(new_lines[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    start..base_lines.len() - suffix
}

/// `text` with a byte-order mark in front when `bom`.
pub(crate) fn with_bom(bom: bool, text: &str) -> String {
    if bom {
        format!("\u{feff}{text}")
    } else {
        text.to_owned()
    }
}

/// What the model is told about a write that did not happen for another reason than
/// staleness; `shown` names the file as the tool names it.
pub(crate) fn write_error(shown: &str, error: WriteError) -> ToolError {
    ToolError::Respond(match error {
        WriteError::Stale | WriteError::Refused(_) => error.to_string(),
        WriteError::Failed(message) => format!("could not write {shown}: {message}"),
    })
}

/// What the model is told when the user kept changing the file through every retry.
pub(crate) fn still_typing(shown: &str) -> ToolError {
    ToolError::Respond(format!(
        "{shown} kept changing in the editor while your change was being applied (the user is \
         typing in it); nothing was written after {MAX_STALE_RETRIES} tries. Try the same call \
         again in a moment"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_between_the_common_ends() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\n"), 1..2);
        assert_eq!(changed_lines("a\nb\nc\n", "a\nb\nx\ny\nc\n"), 2..2);
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), 1..2);
        assert_eq!(changed_lines("a\nb", "a\nB"), 1..2);
    }

    #[test]
    fn a_conflict_names_the_lines_and_shows_the_users_change() {
        let base = "one\ntwo\nthree\n";
        let error = merge_with_user(
            "f.txt",
            base,
            "one\ntwo typed\nthree\n",
            "one\nTWO\nthree\n",
        )
        .unwrap_err();
        let ToolError::Respond(text) = error else {
            panic!("{error:?}")
        };
        assert!(text.contains("(line 2 of the text you saw)"), "{text}");
        assert!(text.contains("-two\n+two typed\n"), "{text}");
    }
}
