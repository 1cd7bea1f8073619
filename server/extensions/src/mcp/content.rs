//! What an MCP server sends back, as the text the model reads. Tandem's tool results are text,
//! so text comes through as it is, structured content as compact JSON, resources as their text
//! under a header, and what cannot be shown as text (images, audio, binary resources) as a line
//! that says what it is; base64 never reaches the model. A resource link says how to read the
//! resource (`read_mcp_resource`).

use rmcp::model::{CallToolResult, ContentBlock, PromptMessage, ResourceContents, Role};
use serde_json::Value;

use super::types::{McpPromptMessage, McpRole};
use tandem_tools::cap;

/// The most a tool result or a resource read gives the model; the session shortens further
/// what its window cannot take.
pub(crate) const MAX_RESULT_BYTES: usize = 64 * 1024;

/// A tool call's result as text: `Ok` with what the model reads, `Err` with the message when
/// the server flagged the call as failed (`isError`).
pub(crate) fn tool_result(server: &str, result: &CallToolResult) -> Result<String, String> {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| block_text(server, block))
        .collect();
    if let Some(structured) = &result.structured_content {
        let compact = structured.to_string();
        // Servers are asked to repeat structured content as text, for clients like this one:
        // said twice it only costs tokens. Some repeat it as JSON, many wrap the text in an
        // object (`{"content": file}` from the filesystem server, `{"result": text}` from
        // every Python SDK tool that returns a string): either way the text already says it.
        let repeated = texts.iter().any(|text| {
            text.trim() == compact
                || serde_json::from_str::<Value>(text).is_ok_and(|value| &value == structured)
        }) || said_in(structured, &texts);
        if texts.is_empty() {
            parts.push(compact);
        } else if !repeated {
            parts.push(format!("Structured content: {compact}"));
        }
    }
    let text = parts.join("\n");
    let is_error = result.is_error == Some(true);
    let text = match (text.trim().is_empty(), is_error) {
        (true, true) => "the tool reported an error without saying what it was".to_owned(),
        (true, false) => "(the tool returned no content)".to_owned(),
        (false, _) => text,
    };
    let text = cap(
        &text,
        MAX_RESULT_BYTES,
        "The MCP tool's result is longer; ask it for less (narrower arguments) if it can.",
    );
    if is_error {
        Err(text)
    } else {
        Ok(text)
    }
}

/// Whether every value of `structured` (its strings, numbers and booleans, not its keys) is
/// already in one of `texts`: then showing it again tells the model nothing new. Past a few
/// thousand values it is not checked, and counts as new.
fn said_in(structured: &Value, texts: &[&str]) -> bool {
    const MOST_VALUES: usize = 2_000;
    let mut values = Vec::new();
    let mut pending = vec![structured];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(object) => pending.extend(object.values()),
            Value::Array(items) => pending.extend(items),
            Value::String(text) => values.push(text.clone()),
            Value::Number(number) => values.push(number.to_string()),
            Value::Bool(flag) => values.push(flag.to_string()),
            Value::Null => {}
        }
        if values.len() > MOST_VALUES {
            return false;
        }
    }
    !texts.is_empty()
        && values
            .iter()
            .all(|value| texts.iter().any(|text| text.contains(value.as_str())))
}

/// One content block as text.
pub(crate) fn block_text(server: &str, block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {}; not shown, tool results are text only]",
            image.mime_type,
            size(base64_len(&image.data))
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {}; not shown, tool results are text only]",
            audio.mime_type,
            size(base64_len(&audio.data))
        ),
        ContentBlock::Resource(embedded) => resource_contents(&embedded.resource),
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                line.push_str(&format!(", {mime}"));
            }
            if let Some(bytes) = link.size {
                line.push_str(&format!(", {}", size(bytes as usize)));
            }
            line.push(']');
            if let Some(description) = link.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str(&format!(" {description}"));
            }
            let args = serde_json::json!({"server": server, "uri": link.uri});
            line.push_str(&format!(" (read it with read_mcp_resource {args})"));
            line
        }
        // Variants added to the protocol later: shown as what they are.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// A resource's contents: text under a header naming it, binary data described.
pub(crate) fn resource_contents(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            let mime = mime_type
                .as_deref()
                .map_or(String::new(), |m| format!(" ({m})"));
            format!("[resource {uri}{mime}]\n{text}")
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource {uri}: binary, {}, {}; not shown, only text is]",
            mime_type.as_deref().unwrap_or("unknown type"),
            size(base64_len(blob))
        ),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// What a resource read returned, as the model reads it: one text alone as it is, several
/// each under its header, binary parts described; capped.
pub(crate) fn read_result(contents: &[ResourceContents]) -> String {
    let text = match contents {
        [] => "(the resource is empty)".to_owned(),
        [ResourceContents::TextResourceContents { text, .. }] => text.clone(),
        many => many
            .iter()
            .map(resource_contents)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    cap(
        &text,
        MAX_RESULT_BYTES,
        "The resource is longer than a result may be; the server may offer smaller parts of it.",
    )
}

/// A rendered prompt's messages, as text.
pub(crate) fn prompt_messages(server: &str, messages: &[PromptMessage]) -> Vec<McpPromptMessage> {
    messages
        .iter()
        .map(|message| McpPromptMessage {
            role: match message.role {
                Role::User => McpRole::User,
                Role::Assistant => McpRole::Assistant,
            },
            text: block_text(server, &message.content),
        })
        .collect()
}

/// The size of base64 `data` once decoded.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    let digits = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (digits * 3 / 4).saturating_sub(padding)
}

fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blocks_come_through_and_structured_content_is_not_repeated() {
        let echo = result(json!({"content": [{"type": "text", "text": "Echo: hi"}]}));
        assert_eq!(tool_result("s", &echo), Ok("Echo: hi".to_owned()));
        let weather = json!({"temperature": 33, "conditions": "Cloudy"});
        let both = result(json!({
            "content": [{"type": "text", "text": weather.to_string()}],
            "structuredContent": weather
        }));
        assert_eq!(tool_result("s", &both), Ok(weather.to_string()));
        let pretty = result(json!({
            "content": [{"type": "text", "text": serde_json::to_string_pretty(&weather).unwrap()}],
            "structuredContent": weather
        }));
        assert!(!tool_result("s", &pretty).unwrap().contains("Structured"));
        let only = result(json!({"content": [], "structuredContent": weather}));
        assert_eq!(tool_result("s", &only), Ok(weather.to_string()));
        let different = result(json!({
            "content": [{"type": "text", "text": "It is cloudy."}],
            "structuredContent": weather
        }));
        assert_eq!(
            tool_result("s", &different).unwrap(),
            format!("It is cloudy.\nStructured content: {weather}")
        );
        // Issue 41: the filesystem server's read and every Python SDK tool that returns a
        // string wrap the text in an object; a 43 KB file reached the model twice.
        let file = "fn main() {\n    println!(\"hi\");\n}\n".repeat(100);
        let wrapped = result(json!({
            "content": [{"type": "text", "text": file}],
            "structuredContent": {"content": file}
        }));
        assert_eq!(tool_result("s", &wrapped), Ok(file.clone()));
        let python = result(json!({
            "content": [{"type": "text", "text": "42 rows"}],
            "structuredContent": {"result": "42 rows"}
        }));
        assert_eq!(tool_result("s", &python), Ok("42 rows".to_owned()));
        // A summary with data beyond it keeps the data.
        let summary = result(json!({
            "content": [{"type": "text", "text": "Found 2 users"}],
            "structuredContent": {"count": 2, "users": ["ada", "grace"]}
        }));
        assert!(tool_result("s", &summary)
            .unwrap()
            .contains("Structured content: "));
        let empty = result(json!({"content": []}));
        assert_eq!(
            tool_result("s", &empty),
            Ok("(the tool returned no content)".to_owned())
        );
    }

    #[test]
    fn errors_media_and_resources() {
        let failed = result(
            json!({"content": [{"type": "text", "text": "no such repo"}],
            "isError": true}),
        );
        assert_eq!(tool_result("s", &failed), Err("no such repo".to_owned()));
        let mixed = result(json!({"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "demo://r/1", "name": "Doc 1",
                "mimeType": "text/plain", "description": "The first one."},
            {"type": "resource", "resource": {"uri": "demo://r/2", "mimeType": "text/plain",
                "text": "two"}},
            {"type": "resource", "resource": {"uri": "demo://r/3", "blob": "AAECAw=="}}
        ]}));
        expect_test::expect![[r#"
            [image: image/png, 8 bytes; not shown, tool results are text only]
            [audio: audio/wav, 3 bytes; not shown, tool results are text only]
            [resource link: Doc 1 <demo://r/1>, text/plain] The first one. (read it with read_mcp_resource {"server":"docs","uri":"demo://r/1"})
            [resource demo://r/2 (text/plain)]
            two
            [resource demo://r/3: binary, unknown type, 4 bytes; not shown, only text is]"#]]
        .assert_eq(&tool_result("docs", &mixed).unwrap());
    }

    #[test]
    fn long_results_are_capped_with_a_notice() {
        let long = "x".repeat(MAX_RESULT_BYTES + 10);
        let big = result(json!({"content": [{"type": "text", "text": long}]}));
        let text = tool_result("s", &big).unwrap();
        assert!(text.len() < MAX_RESULT_BYTES + 200);
        assert!(text.contains("[output truncated"));
    }

    #[test]
    fn resource_reads_and_prompt_messages() {
        let text: ResourceContents =
            serde_json::from_value(json!({"uri": "a://1", "text": "hello"})).unwrap();
        assert_eq!(read_result(std::slice::from_ref(&text)), "hello");
        let blob: ResourceContents = serde_json::from_value(
            json!({"uri": "a://2", "mimeType": "image/png", "blob": "AAAA"}),
        )
        .unwrap();
        assert_eq!(
            read_result(&[text, blob]),
            "[resource a://1]\nhello\n[resource a://2: binary, image/png, 3 bytes; not shown, \
             only text is]"
        );
        assert_eq!(read_result(&[]), "(the resource is empty)");
        let messages: Vec<PromptMessage> = serde_json::from_value(json!([
            {"role": "user", "content": {"type": "text", "text": "Hi"}},
            {"role": "assistant", "content": {"type": "resource",
                "resource": {"uri": "a://1", "text": "body"}}}
        ]))
        .unwrap();
        assert_eq!(
            prompt_messages("s", &messages),
            [
                McpPromptMessage {
                    role: McpRole::User,
                    text: "Hi".to_owned()
                },
                McpPromptMessage {
                    role: McpRole::Assistant,
                    text: "[resource a://1]\nbody".to_owned()
                }
            ]
        );
    }
}
