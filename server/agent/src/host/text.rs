//! How the host words a turn in one line, for session lists, transcripts and the front ends'
//! notices.

use crate::protocol::StopReason;

/// How a turn ended, in a few words: "Done", "Cancelled", "Failed: …".
pub fn outcome_line(reason: StopReason, message: Option<&str>) -> String {
    let detail = message.map(|m| format!(": {m}")).unwrap_or_default();
    match reason {
        StopReason::EndTurn => {
            message.map_or_else(|| "Done".to_owned(), |m| format!("Done, but {m}"))
        }
        StopReason::Cancelled => format!("Cancelled{detail}"),
        StopReason::MaxTurns => format!("Stopped{detail}"),
        StopReason::LoopDetected | StopReason::ResponseLimit => format!("Stopped{detail}"),
        StopReason::Error => format!("Failed{detail}"),
    }
}

/// The first non-blank line of `text`, at most `max_chars` characters.
pub fn first_line(text: &str, max_chars: usize) -> String {
    shorten(
        text.lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or(""),
        max_chars,
    )
}

/// `text` trimmed, at most `max_chars` characters, with `…` where it was cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_well() {
        assert_eq!(outcome_line(StopReason::EndTurn, None), "Done");
        assert_eq!(
            outcome_line(StopReason::Error, Some("no key")),
            "Failed: no key"
        );
        assert_eq!(outcome_line(StopReason::Cancelled, None), "Cancelled");
        assert_eq!(first_line("\n\n  hello\nworld", 3), "hel…");
    }
}
