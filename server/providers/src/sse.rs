//! From response bytes to stream events: the SSE framing is `sse-stream`'s, the meaning of each
//! event is the wire format's `StreamDecoder`.

use std::error::Error as StdError;

use bytes::Buf;
use futures::{FutureExt, Stream, StreamExt, TryStream, TryStreamExt};
use sse_stream::SseByteStream;

use crate::error::{ProviderError, Result};
use crate::retry::Progress;
use crate::wire::StreamDecoder;

/// Decodes a response body, reporting each chunk's size (`Progress::Received`) as it arrives
/// and each decoded event after it. The stream ends after the decoder's completion event (the
/// rest of the body is not read), after the first error, or at the end of the body, where a
/// response without its completion event becomes `TruncatedStream`.
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
        // The SSE parser reads from a channel this loop fills, so that a chunk is reported when
        // it arrives rather than when it completes an SSE event (which may take many chunks).
        let (feed, fed) = futures::channel::mpsc::unbounded::<std::result::Result<S::Ok, S::Error>>();
        let mut feed = Some(feed);
        let mut events = SseByteStream::new(fed);
        'body: loop {
            // Every event the chunks fed so far complete; `None` from `now_or_never` means the
            // parser waits for the next chunk.
            while let Some(next) = events.next().now_or_never() {
                match next {
                    Some(Ok(sse)) => {
                        // An event without data (a bare `event:` line, a keep-alive) carries
                        // nothing.
                        let Some(data) = sse.data else { continue };
                        match decoder.event(sse.event.as_deref(), &data) {
                            Ok(decoded) => {
                                for event in decoded {
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
                    Some(Err(sse_stream::Error::Body(error))) => {
                        yield Err(ProviderError::Network { message: error_chain(error.as_ref()) });
                        return;
                    }
                    Some(Err(error)) => {
                        yield Err(ProviderError::invalid_stream(error.to_string()));
                        return;
                    }
                    None => break 'body,
                }
            }
            let Some(sender) = &feed else {
                // Not reached: once the channel is closed and drained the parser answers `None`
                // above. Ending here keeps a surprise from becoming a busy loop.
                break 'body;
            };
            match bytes.try_next().await {
                Ok(Some(chunk)) => {
                    yield Ok(Progress::Received(chunk.remaining()));
                    // The receiver lives in `events`, here, so sending cannot fail.
                    let _ = sender.unbounded_send(Ok(chunk));
                }
                // The parser reports it as `sse_stream::Error::Body`, after what came before.
                Err(error) => {
                    let _ = sender.unbounded_send(Err(error));
                }
                // Closing the channel is how the parser learns that the body ended.
                Ok(None) => feed = None,
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

/// An error and its sources on one line: reqwest's own message ("error decoding response
/// body") says little without the cause ("connection reset by peer").
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// Test helper: decodes `body` delivered in the given chunks, synchronously; the events only.
#[cfg(test)]
pub(crate) fn decode_chunks(
    decoder: Box<dyn StreamDecoder>,
    chunks: Vec<Vec<u8>>,
) -> Vec<Result<crate::model::StreamEvent>> {
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

/// Test helper: one line per event (errors as `error <kind>: <message>`), as the fixtures'
/// `.events` files have them.
#[cfg(test)]
pub(crate) fn render(events: &[Result<crate::model::StreamEvent>]) -> String {
    events
        .iter()
        .map(|event| match event {
            Ok(event) => serde_json::to_string(event).unwrap_or_default() + "\n",
            Err(error) => format!("error {}: {error}\n", error.kind()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StreamEvent;

    /// Issue 16, item 2: a chunk that completes no event was invisible until the event was
    /// whole, so the idle timeout (which waits for the next item) fired between slow fragments.
    #[test]
    fn every_chunk_is_reported_as_it_arrives_before_the_event_it_completes() {
        let event = br#"data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#;
        let chunks: Vec<Vec<u8>> = [&event[..20], &event[20..40], &event[40..], b"\n\n"]
            .iter()
            .map(|chunk| chunk.to_vec())
            .collect();
        let sizes: Vec<usize> = chunks.iter().map(Vec::len).collect();
        let bytes = futures::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| Ok::<_, std::io::Error>(bytes::Bytes::from(chunk))),
        );
        let progress: Vec<Progress> = futures::executor::block_on(
            decode(crate::wire::Wire::OpenAi.decoder(), bytes).collect::<Vec<_>>(),
        )
        .into_iter()
        .map_while(|item| item.ok())
        .collect();
        assert_eq!(
            progress[..5],
            [
                Progress::Received(sizes[0]),
                Progress::Received(sizes[1]),
                Progress::Received(sizes[2]),
                Progress::Received(sizes[3]),
                Progress::Event(StreamEvent::TextDelta {
                    text: "Hello".into()
                }),
            ]
        );
    }
}
