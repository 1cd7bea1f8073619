//! Token accounting without a tokenizer. Providers report exact prompt sizes after each request;
//! between reports (a new prompt, tool results, a provider that reports nothing) Tandem
//! estimates: about four bytes of UTF-8 per token, the ratio the providers themselves quote for
//! English and code. An estimate errs high on purpose for non-ASCII text, which is the safe side
//! when the question is "does this still fit".

use tandem_providers::{ChatRequest, Message, Part};

/// Bytes of UTF-8 per estimated token.
pub const BYTES_PER_TOKEN: usize = 4;

/// Estimated tokens of `text`.
pub fn estimate_text(text: &str) -> u64 {
    text.len().div_ceil(BYTES_PER_TOKEN) as u64
}

/// Estimated tokens of one message: its texts, thoughts, tool calls (name and arguments) and
/// tool results, plus a few tokens of framing per part.
pub fn estimate_message(message: &Message) -> u64 {
    const PART_OVERHEAD: u64 = 4;
    message
        .parts
        .iter()
        .map(|part| {
            PART_OVERHEAD
                + match part {
                    Part::Text { text } | Part::Thought { text, .. } => estimate_text(text),
                    Part::RedactedThought { data } => estimate_text(data),
                    Part::ToolCall(call) => {
                        estimate_text(&call.name) + estimate_text(&call.arguments.to_string())
                    }
                    Part::ToolResult(result) => {
                        estimate_text(&result.name) + estimate_text(&result.content)
                    }
                    Part::Image(image) => image.estimated_tokens(),
                }
        })
        .sum()
}

/// Estimated tokens of a history.
pub fn estimate_history(history: &[Message]) -> u64 {
    history.iter().map(estimate_message).sum()
}

/// Estimated tokens of a whole request: system instruction, tool declarations and messages.
pub fn estimate_request(request: &ChatRequest) -> u64 {
    // Every wire wraps each declaration in some framing of its own (OpenAI's
    // `{"type":"function","function":{…}}`, about fifty bytes).
    const DECLARATION_OVERHEAD: u64 = 16;
    let tools: u64 = request
        .tools
        .iter()
        .map(|tool| {
            DECLARATION_OVERHEAD
                + estimate_text(&tool.name)
                + estimate_text(&tool.description)
                + estimate_text(&tool.parameters.to_string())
        })
        .sum();
    estimate_text(&request.system) + tools + estimate_history(&request.messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_round_up_and_count_every_part() {
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("abcde"), 2);
        let message = Message::user("x".repeat(400));
        assert_eq!(estimate_message(&message), 104);
        assert_eq!(estimate_history(&[message.clone(), message]), 208);
    }
}
