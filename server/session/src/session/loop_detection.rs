//! Stopping a model that is stuck: the same tool call (name and arguments) made again and again
//! — warned about in the reminder from the second time, stopped at `REPEATED_CALL_LIMIT` — and
//! streamed text or reasoning that keeps repeating itself.

use tandem_providers::ToolCall;

use super::{Session, Stop};
use tandem_protocol::StopReason;

/// The same call (tool and arguments) this many times in a row is a loop.
const REPEATED_CALL_LIMIT: usize = 5;

impl Session {
    pub(super) fn detect_repeated_call(&mut self, calls: &[ToolCall]) -> Option<Stop> {
        for call in calls {
            let key = format!("{}\u{0}{}", call.name, call.arguments);
            let count = match &self.last_call {
                Some((last, count)) if *last == key => count + 1,
                _ => 1,
            };
            self.last_call = Some((key, count));
            self.repeat_note = (count >= 2).then(|| {
                format!(
                    "You have called {} with the same arguments {count} times in a row; the \
                     result will not change. Use what you have or try something different \
                     (the turn stops at {REPEATED_CALL_LIMIT}).",
                    call.name
                )
            });
            if count >= REPEATED_CALL_LIMIT {
                return Some(Stop(
                    StopReason::LoopDetected,
                    Some(format!(
                        "the model called {} with the same arguments {count} times in a row; the turn was stopped",
                        call.name
                    )),
                ));
            }
        }
        None
    }
}

/// The stop for a stream that kept repeating its `what` (text, reasoning).
pub(super) fn repeating(what: &str) -> Stop {
    Stop(
        StopReason::LoopDetected,
        Some(format!(
            "the model kept repeating the same {what}; the turn was stopped"
        )),
    )
}

/// Gemini CLI's heuristic: the same 50-character chunk of an answer ten times, close together,
/// means the model is stuck.
#[derive(Default)]
pub(super) struct TextLoopDetector {
    text: String,
    checked_to: usize,
}

impl TextLoopDetector {
    const CHUNK: usize = 50;
    const REPEATS: usize = 10;
    /// How far back repeats count: the repeats must be close together.
    const WINDOW: usize = Self::CHUNK * Self::REPEATS * 2;

    /// Adds streamed text; true when the newest chunk has repeated too often.
    pub(super) fn push(&mut self, text: &str) -> bool {
        self.text.push_str(text);
        while self.text.len() >= self.checked_to + Self::CHUNK {
            let mut end = self.checked_to + Self::CHUNK;
            while !self.text.is_char_boundary(end) {
                end += 1;
            }
            let mut start = end - Self::CHUNK;
            while !self.text.is_char_boundary(start) {
                start -= 1;
            }
            self.checked_to = end;
            let chunk = &self.text[start..end];
            // A rule of `=====` or a run of spaces is layout, not a loop.
            let distinct = chunk
                .chars()
                .collect::<std::collections::HashSet<_>>()
                .len();
            if distinct < 5 {
                continue;
            }
            let mut window_start = end.saturating_sub(Self::WINDOW);
            while !self.text.is_char_boundary(window_start) {
                window_start += 1;
            }
            if self.text[window_start..end].matches(chunk).count() >= Self::REPEATS {
                return true;
            }
        }
        // Only the last window is ever looked at: keep no more of a long stream than that.
        if self.checked_to > Self::WINDOW * 2 {
            let mut cut = self.checked_to - Self::WINDOW;
            while !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.drain(..cut);
            self.checked_to -= cut;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_loops_are_detected_and_prose_is_not() {
        let mut detector = TextLoopDetector::default();
        let prose = "The parser reads tokens one by one. When it meets an operator it compares \
                     precedence with the one on the stack, and pops while the stack's is higher.";
        assert!(!detector.push(prose));
        let mut detector = TextLoopDetector::default();
        let repeated = "I will now read the file again to check the code. ".repeat(12);
        let stuck = repeated
            .as_bytes()
            .chunks(7)
            .any(|piece| detector.push(std::str::from_utf8(piece).unwrap_or("")));
        assert!(stuck);
        let mut detector = TextLoopDetector::default();
        assert!(!detector.push(&"=".repeat(2000)));
    }

    #[test]
    fn a_long_stream_is_checked_to_its_end_holding_only_the_last_window() {
        let mut detector = TextLoopDetector::default();
        for n in 0..2_000u64 {
            let line = format!(
                "step {n}: é{} then {}\n",
                n * 7919 % 1000,
                n * 104_729 % 997
            );
            assert!(!detector.push(&line), "{line}");
            assert!(
                detector.text.len() <= (TextLoopDetector::WINDOW + TextLoopDetector::CHUNK) * 2
            );
        }
        let repeated = "I will now read the file again to check the code. ".repeat(12);
        assert!(repeated
            .as_bytes()
            .chunks(7)
            .any(|piece| detector.push(std::str::from_utf8(piece).unwrap_or(""))));
    }
}
