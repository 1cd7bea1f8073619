//! Whether the model stopped too early: an answer without tool calls that ends by announcing
//! what the model will do next ("Now I'll run the tests.") hands the turn back to a user who
//! has nothing to answer. Gemini CLI asks a model after every such answer; Tandem looks at the
//! last sentence first (`announcement`, no request) and asks the model only when the sentence
//! leaves it open and the `nextSpeakerCheck` setting is `model` (`check_request`,
//! `parse_verdict`). The session then sends "Please continue." (see `session/turn.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tandem_providers::{ChatRequest, GenerationSettings, Message, Part, Response, Role};

/// What the session sends when the model should go on.
pub const CONTINUE_PROMPT: &str = "Please continue.";

/// How many times one prompt's turn is continued at most: a model that keeps announcing
/// without acting is not helped by being told again and again.
pub const MAX_CONTINUATIONS: usize = 3;

/// Whether Tandem lets the model go on when its answer ends by announcing an action (the
/// `nextSpeakerCheck` setting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NextSpeakerCheck {
    /// Never: every answer without tool calls ends the turn.
    Off,
    /// When the answer's last sentence plainly announces an action ("Now I'll run the
    /// tests.", "Let me check the parser:"); costs nothing.
    #[default]
    Heuristic,
    /// As `heuristic`, and when the last sentence only may announce one ("Next, the tests."),
    /// a short request to the model decides.
    Model,
}

/// What an answer's ending says about who speaks next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announcement {
    /// It asks or tells the user something, or reports what was done: the user speaks next.
    None,
    /// It may announce an action; only a model can tell.
    Possible,
    /// It announces what the model does next.
    Clear,
}

/// Openers of a sentence that announce what the speaker does next, once followed by an action.
const FUTURE_OPENERS: &[&str] = &[
    "let me ",
    "let's ",
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "i need to ",
    "i should ",
    "i'm now going to ",
];

/// Words that make a future opener an announcement when they come first ("Now I'll…").
const SEQUENCE_WORDS: &[&str] = &[
    "now", "next", "then", "first", "finally", "so", "okay", "ok",
];

/// Verbs of the actions an agent announces.
const ACTION_VERBS: &[&str] = &[
    "add",
    "analyze",
    "analyse",
    "apply",
    "build",
    "change",
    "check",
    "compile",
    "create",
    "debug",
    "dig",
    "edit",
    "examine",
    "explore",
    "find",
    "fix",
    "grep",
    "implement",
    "inspect",
    "install",
    "investigate",
    "list",
    "look",
    "make",
    "modify",
    "move",
    "open",
    "proceed",
    "read",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rerun",
    "re-run",
    "review",
    "run",
    "scan",
    "search",
    "see",
    "start",
    "test",
    "trace",
    "try",
    "update",
    "verify",
    "view",
    "write",
];

/// Phrases that speak to the user: the answer waits for them.
const TO_THE_USER: &[&str] = &[
    "let me know",
    "if you",
    "would you",
    "do you",
    "should i",
    "shall i",
    "want me to",
    "feel free",
    "you can",
    "you may",
    "you might",
    "you could",
    "your call",
];

/// Looks at how `text` (the model's answer) ends.
pub fn announcement(text: &str) -> Announcement {
    let text = text.trim_end();
    if text.is_empty() || text.ends_with('?') {
        return Announcement::None;
    }
    let ends_with_colon = text.ends_with(':');
    let Some(sentence) = last_sentence(text) else {
        return Announcement::None;
    };
    if TO_THE_USER.iter().any(|phrase| sentence.contains(phrase)) {
        return Announcement::None;
    }
    let (sequenced, rest) = strip_sequence_word(&sentence);
    let future = FUTURE_OPENERS
        .iter()
        .find_map(|opener| rest.strip_prefix(opener));
    match future {
        Some(after) => {
            // "I'll now run…", "Let me quickly check…": skip an adverb or two.
            let verb = after
                .split_whitespace()
                .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
                .find(|word| {
                    !matches!(
                        *word,
                        "now"
                            | "quickly"
                            | "also"
                            | "first"
                            | "then"
                            | "just"
                            | "go"
                            | "and"
                            | "ahead"
                    )
                })
                .unwrap_or("");
            if sequenced || ends_with_colon || ACTION_VERBS.contains(&verb) {
                Announcement::Clear
            } else {
                Announcement::Possible
            }
        }
        None if ends_with_colon => Announcement::Possible,
        None if sequenced && !rest.contains(" i ") && !rest.starts_with("i ") => {
            // "Next, the tests." names a next step without saying who takes it.
            Announcement::Possible
        }
        None => Announcement::None,
    }
}

/// The last sentence of `text`, lower-cased, with typographic apostrophes made plain and list
/// or emphasis markers taken off its start.
fn last_sentence(text: &str) -> Option<String> {
    let text = text.replace(['\u{2019}', '\u{2018}'], "'").to_lowercase();
    let paragraph = text
        .rsplit("\n\n")
        .map(str::trim)
        .find(|paragraph| !paragraph.is_empty())?;
    let line = paragraph
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())?;
    let body = line.trim_end_matches(['.', '!', ':', '…', ' ']);
    let start = body
        .rmatch_indices(['.', '!', '?'])
        .map(|(index, mark)| index + mark.len())
        // A full stop inside a word (`lib.rs`, `e.g.`) does not end the sentence.
        .find(|&end| body[end..].starts_with(' '))
        .unwrap_or(0);
    let sentence = body[start..]
        .trim()
        .trim_start_matches(['-', '*', '>', '#', '_', ' '])
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start_matches(['.', ')', ' '])
        .to_owned();
    (!sentence.is_empty()).then_some(sentence)
}

/// `(true, the rest)` when `sentence` starts with a sequence word ("now", "next,").
fn strip_sequence_word(sentence: &str) -> (bool, &str) {
    for word in SEQUENCE_WORDS {
        if let Some(rest) = sentence.strip_prefix(word) {
            if let Some(rest) = rest
                .strip_prefix(", ")
                .or_else(|| rest.strip_prefix(' '))
                .or_else(|| rest.strip_prefix(": "))
            {
                return (true, rest.trim_start());
            }
        }
    }
    (false, sentence)
}

/// The most of the answer the model check reads: its end says who speaks next.
const CHECK_EXCERPT_BYTES: usize = 2_000;

/// A short request asking the model who speaks next after `answer`. No tools, no history: the
/// answer's end is all it needs, and it keeps the check cheap.
pub fn check_request(answer: &str) -> ChatRequest {
    let mut start = answer.len().saturating_sub(CHECK_EXCERPT_BYTES);
    while !answer.is_char_boundary(start) {
        start += 1;
    }
    let excerpt = &answer[start..];
    ChatRequest {
        system: "You decide who speaks next in a conversation between a user and an AI coding \
                 agent that uses tools. Reply with only a JSON object: \
                 {\"next_speaker\": \"model\" | \"user\", \"reasoning\": \"<one sentence>\"}. \
                 Answer \"model\" when the agent's last message says it will do something next \
                 that it has not done yet (it announced an action, or stopped in the middle of \
                 its work). Answer \"user\" when it asked the user a question, is waiting for the \
                 user, or has finished."
            .to_owned(),
        messages: vec![Message {
            role: Role::User,
            parts: vec![Part::Text {
                text: format!(
                    "The agent's last message ended like this:\n<message>\n{excerpt}\n</message>\n\
                     Who speaks next?"
                ),
            }],
        }],
        settings: GenerationSettings {
            max_output_tokens: Some(200),
            ..GenerationSettings::default()
        },
        ..ChatRequest::default()
    }
}

/// `Some(true)` when the model's verdict is that it speaks next, `Some(false)` for the user,
/// `None` when the answer holds no verdict (then the turn ends, as it would have).
pub fn parse_verdict(response: &Response) -> Option<bool> {
    let text = response.message.text();
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let verdict: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    match verdict.get("next_speaker")?.as_str()? {
        "model" => Some(true),
        "user" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements() {
        use Announcement::{Clear, None as Nobody, Possible};
        let cases: &[(&str, Announcement)] = &[
            ("I found the bug in `parse`. Now I'll run the tests.", Clear),
            ("Now I’ll run the tests to confirm.", Clear),
            (
                "The config lives in src/config.rs. Let me check the parser:",
                Clear,
            ),
            ("Let me look at `lib.rs` next.", Clear),
            ("I'll update the README as well.", Clear),
            ("Next, I will add a test for the empty case.", Clear),
            ("I'm going to refactor the loop.", Clear),
            ("Okay, let me quickly verify the build.", Clear),
            (
                "Here is the plan:\n\n1. Fix the parser\n2. Let me run the tests",
                Clear,
            ),
            ("I'll leave the rest to you.", Possible),
            ("Next, the tests.", Possible),
            ("The remaining failures are:", Possible),
            ("Done: the parser now accepts empty input.", Nobody),
            ("Should I also update the docs?", Nobody),
            ("Let me know if you want the docs updated too.", Nobody),
            ("I'll run the tests if you want me to.", Nobody),
            ("All tests pass. You can run `cargo test` to check.", Nobody),
            ("I fixed it.", Nobody),
            ("", Nobody),
            ("Let me run the tests.\n\nEverything passes now.", Nobody),
        ];
        for (text, expected) in cases {
            assert_eq!(announcement(text), *expected, "{text:?}");
        }
    }

    fn reply(text: &str) -> Response {
        Response {
            message: Message {
                role: Role::Assistant,
                parts: vec![Part::Text { text: text.into() }],
            },
            ..Response::default()
        }
    }

    #[test]
    fn verdicts() {
        let cases: &[(&str, Option<bool>)] = &[
            (
                r#"{"next_speaker": "model", "reasoning": "it said so"}"#,
                Some(true),
            ),
            ("```json\n{\"next_speaker\": \"user\"}\n```", Some(false)),
            (r#"{"next_speaker": "nobody"}"#, None),
            ("the model", None),
            ("{broken", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_verdict(&reply(text)), *expected, "{text:?}");
        }
    }

    #[test]
    fn the_check_reads_only_the_end_of_a_long_answer() {
        let answer = format!("{}é Now I'll run the tests.", "x".repeat(5_000));
        let request = check_request(&answer);
        let Part::Text { text } = &request.messages[0].parts[0] else {
            panic!("not text");
        };
        assert!(text.len() < CHECK_EXCERPT_BYTES + 200, "{}", text.len());
        assert!(text.contains("Now I'll run the tests."));
        assert!(request.tools.is_empty());
    }
}
