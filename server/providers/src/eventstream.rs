//! From response bytes to stream events for Bedrock, whose streams are not SSE but the AWS
//! event stream (`application/vnd.amazon.eventstream`): binary frames of headers and a payload,
//! each checked by CRC. The framing is the AWS SDK's own frame decoder
//! (`aws-smithy-eventstream`); what a frame means is `bedrock.rs`'s. A frame is an event
//! (`:message-type` `event`: its `:event-type` and JSON payload go to the wire format's
//! `StreamDecoder` as an SSE event's name and data do), an exception (`exception`, named by
//! `:exception-type`, a JSON `{"message"}`), or an error (`error`: `:error-code` and
//! `:error-message` headers).

use std::error::Error as StdError;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::Message;
use bytes::{Buf, BytesMut};
use futures::{Stream, TryStream, TryStreamExt};

use crate::error::{ProviderError, Result};
use crate::model::StreamEvent;
use crate::retry::Progress;
use crate::sse::error_chain;
use crate::wire::StreamDecoder;

/// Decodes a response body, reporting each chunk's size (`Progress::Received`) as it arrives
/// and each decoded event after it, as `sse::decode` does. The stream ends after the decoder's
/// completion event (the rest of the body is not read), after the first error (an exception
/// frame is one), or at the end of the body, where a response without its completion event
/// becomes `TruncatedStream`.
pub(crate) fn decode<S>(
    mut decoder: Box<dyn StreamDecoder>,
    mut bytes: S,
) -> impl Stream<Item = Result<Progress>> + Send
where
    S: TryStream + Send + Unpin,
    S::Ok: Buf + Send,
    S::Error: StdError + Send + Sync + 'static,
{
    async_stream::stream! {
        let mut frames = MessageFrameDecoder::new();
        let mut buffer = BytesMut::new();
        'body: loop {
            match bytes.try_next().await {
                Ok(Some(mut chunk)) => {
                    yield Ok(Progress::Received(chunk.remaining()));
                    while chunk.has_remaining() {
                        let part = chunk.chunk();
                        let len = part.len();
                        buffer.extend_from_slice(part);
                        chunk.advance(len);
                    }
                }
                Ok(None) => break 'body,
                Err(error) => {
                    yield Err(ProviderError::Network { message: error_chain(&error) });
                    return;
                }
            }
            // Every frame the bytes so far complete; the decoder keeps a frame's prelude
            // between chunks.
            loop {
                let message = match frames.decode_frame(&mut buffer) {
                    Ok(DecodedFrame::Complete(message)) => message,
                    Ok(DecodedFrame::Incomplete) => break,
                    Err(error) => {
                        yield Err(ProviderError::invalid_stream(format!(
                            "a frame that is not a valid AWS event stream message ({error})"
                        )));
                        return;
                    }
                };
                match frame(decoder.as_mut(), &message) {
                    Ok(events) => {
                        for event in events {
                            yield Ok(Progress::Event(event));
                        }
                    }
                    Err(error) => {
                        yield Err(error);
                        return;
                    }
                }
                if decoder.is_done() {
                    break 'body;
                }
            }
        }
        match decoder.end() {
            Ok(decoded) => {
                for event in decoded {
                    yield Ok(Progress::Event(event));
                }
            }
            Err(error) => yield Err(error),
        }
    }
}

/// What one frame says: the events it completes, or the error it is.
fn frame(decoder: &mut dyn StreamDecoder, message: &Message) -> Result<Vec<StreamEvent>> {
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|header| header.name().as_str() == name)
            .and_then(|header| header.value().as_string().ok())
            .map(|value| value.as_str())
    };
    let payload = std::str::from_utf8(message.payload()).map_err(|error| {
        ProviderError::invalid_stream(format!("a frame whose payload is not UTF-8 ({error})"))
    })?;
    match header(":message-type") {
        Some("event") => match header(":event-type") {
            Some(event) => decoder.event(Some(event), payload),
            None => Err(ProviderError::invalid_stream(
                "an event frame without an :event-type header",
            )),
        },
        Some("exception") => Err(crate::bedrock::exception(
            header(":exception-type").unwrap_or("exception"),
            payload,
        )),
        Some("error") => Err(crate::bedrock::exception(
            header(":error-code").unwrap_or("error"),
            header(":error-message").unwrap_or(payload),
        )),
        Some(other) => Err(ProviderError::invalid_stream(format!(
            "a frame of message type {other:?}, which is not event, exception or error"
        ))),
        None => Err(ProviderError::invalid_stream(
            "a frame without a :message-type header",
        )),
    }
}

/// Test helpers: frames written with the AWS SDK's own encoder, from a readable description,
/// so that the fixtures (`tests/fixtures/providers/bedrock/*.frames`) are text to review.
#[cfg(test)]
pub(crate) mod frames {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    use serde_json::Value;

    /// One frame as a fixture line describes it: `{"event": "contentBlockDelta", "payload":
    /// {…}}`, `{"exception": "throttlingException", "payload": {…}}`, `{"error": "code",
    /// "message": "…"}`; `"raw": "text"` instead of `payload` for a payload that is not JSON,
    /// `"corrupt": true` for a frame whose checksum is wrong.
    pub(crate) fn encode(line: &Value) -> Vec<u8> {
        let string = |name: &'static str, value: &str| {
            Header::new(name, HeaderValue::String(value.to_owned().into()))
        };
        let payload = match (&line["payload"], &line["raw"]) {
            (Value::Null, Value::String(raw)) => raw.clone().into_bytes(),
            (Value::Null, _) => Vec::new(),
            (payload, _) => payload.to_string().into_bytes(),
        };
        let mut headers = Vec::new();
        if let Some(event) = line["event"].as_str() {
            headers.push(string(":message-type", "event"));
            headers.push(string(":event-type", event));
            headers.push(string(":content-type", "application/json"));
        } else if let Some(kind) = line["exception"].as_str() {
            headers.push(string(":message-type", "exception"));
            headers.push(string(":exception-type", kind));
            headers.push(string(":content-type", "application/json"));
        } else if let Some(code) = line["error"].as_str() {
            headers.push(string(":message-type", "error"));
            headers.push(string(":error-code", code));
            headers.push(string(
                ":error-message",
                line["message"].as_str().unwrap_or_default(),
            ));
        }
        let message = Message::new_from_parts(headers, payload);
        let mut bytes = Vec::new();
        aws_smithy_eventstream::frame::write_message_to(&message, &mut bytes).unwrap();
        if line["corrupt"] == Value::Bool(true) {
            let last = bytes.len() - 1;
            bytes[last] ^= 0xff;
        }
        bytes
    }

    /// A fixture file's frames, one JSON line each (blank lines and `#` comments skipped).
    pub(crate) fn from_fixture(text: &str) -> Vec<u8> {
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .flat_map(|line| encode(&serde_json::from_str(line).unwrap()))
            .collect()
    }
}

/// Test helper: decodes `body` delivered in the given chunks, synchronously; the events only.
#[cfg(test)]
pub(crate) fn decode_chunks(
    decoder: Box<dyn StreamDecoder>,
    chunks: Vec<Vec<u8>>,
) -> Vec<Result<StreamEvent>> {
    use futures::StreamExt;
    let bytes = futures::stream::iter(
        chunks
            .into_iter()
            .map(|chunk| Ok::<_, std::io::Error>(bytes::Bytes::from(chunk))),
    );
    futures::executor::block_on(
        decode(decoder, bytes)
            .filter_map(|progress| async move {
                match progress {
                    Ok(Progress::Event(event)) => Some(Ok(event)),
                    Ok(Progress::Received(_)) => None,
                    Err(error) => Some(Err(error)),
                }
            })
            .collect(),
    )
}

/// Every recorded response under `tests/fixtures/providers/bedrock/*.frames` decodes to what
/// its `.events` file says, whatever the chunk boundaries: split at every byte position and
/// delivered one byte at a time. `UPDATE_EXPECT=1 cargo test -p tandem-providers` rewrites the
/// `.events` files.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use futures::StreamExt;
    use serde_json::json;

    use super::*;
    use crate::sse::render;
    use crate::wire::Wire;

    #[test]
    fn bedrock_fixtures() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/providers/bedrock");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "frames"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 8, "{paths:?}");
        for path in paths {
            let body = frames::from_fixture(&std::fs::read_to_string(&path).unwrap());
            let whole = decode_chunks(Wire::Bedrock.decoder(), vec![body.clone()]);
            expect_test::expect_file![path.with_extension("events")].assert_eq(&render(&whole));
            for split in 0..=body.len() {
                let (head, tail) = body.split_at(split);
                let parts =
                    decode_chunks(Wire::Bedrock.decoder(), vec![head.to_vec(), tail.to_vec()]);
                assert_eq!(parts, whole, "{} split at byte {split}", path.display());
            }
            let bytewise = decode_chunks(
                Wire::Bedrock.decoder(),
                body.iter().map(|byte| vec![*byte]).collect(),
            );
            assert_eq!(bytewise, whole, "{} one byte at a time", path.display());
        }
    }

    /// Each chunk is reported as it arrives, before the frame it completes: the idle timeout
    /// and the byte cap count bytes (issue 16's lesson for SSE, here for the binary framing).
    #[test]
    fn every_chunk_is_reported_as_it_arrives_before_the_frame_it_completes() {
        let frame = frames::encode(&json!({
            "event": "contentBlockDelta",
            "payload": {"contentBlockIndex": 0, "delta": {"text": "Hello"}},
        }));
        let chunks = vec![
            frame[..5].to_vec(),
            frame[5..20].to_vec(),
            frame[20..].to_vec(),
        ];
        let sizes: Vec<usize> = chunks.iter().map(Vec::len).collect();
        let bytes = futures::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| Ok::<_, std::io::Error>(bytes::Bytes::from(chunk))),
        );
        let progress: Vec<Progress> =
            futures::executor::block_on(decode(Wire::Bedrock.decoder(), bytes).collect::<Vec<_>>())
                .into_iter()
                .map_while(|item| item.ok())
                .collect();
        assert_eq!(
            progress,
            [
                Progress::Received(sizes[0]),
                Progress::Received(sizes[1]),
                Progress::Received(sizes[2]),
                Progress::Event(StreamEvent::TextDelta {
                    text: "Hello".into()
                }),
            ]
        );
    }
}
