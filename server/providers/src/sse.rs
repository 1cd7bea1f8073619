//! From response bytes to stream events: the SSE framing is `sse-stream`'s, the meaning of each
//! event is the wire format's `StreamDecoder`.

use std::error::Error as StdError;

use bytes::Buf;
use futures::{Stream, StreamExt, TryStream};
use sse_stream::SseByteStream;

use crate::error::{ProviderError, Result};
use crate::model::StreamEvent;
use crate::wire::StreamDecoder;

/// Decodes a response body. The stream ends after the decoder's completion event (the rest of
/// the body is not read), after the first error, or at the end of the body, where a response
/// without its completion event becomes `TruncatedStream`.
pub(crate) fn decode<S>(
    mut decoder: Box<dyn StreamDecoder>,
    bytes: S,
) -> impl Stream<Item = Result<StreamEvent>> + Send
where
    S: TryStream + Send + Unpin,
    S::Ok: Buf + Send,
    S::Error: StdError + Send + Sync + 'static,
{
    async_stream::stream! {
        let mut events = SseByteStream::new(bytes);
        loop {
            match events.next().await {
                Some(Ok(sse)) => {
                    // An event without data (a bare `event:` line, a keep-alive) carries nothing.
                    let Some(data) = sse.data else { continue };
                    match decoder.event(sse.event.as_deref(), &data) {
                        Ok(decoded) => {
                            for event in decoded {
                                yield Ok(event);
                            }
                        }
                        Err(error) => {
                            yield Err(error);
                            return;
                        }
                    }
                    if decoder.is_done() {
                        break;
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
                None => break,
            }
        }
        match decoder.end() {
            Ok(decoded) => {
                for event in decoded {
                    yield Ok(event);
                }
            }
            Err(error) => yield Err(error),
        }
    }
}

/// An error and its sources on one line: reqwest's own message ("error decoding response
/// body") says little without the cause ("connection reset by peer").
pub(crate) fn error_chain(error: &(dyn StdError + 'static)) -> String {
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

/// Test helper: decodes `body` delivered in the given chunks, synchronously.
#[cfg(test)]
pub(crate) fn decode_chunks(
    decoder: Box<dyn StreamDecoder>,
    chunks: Vec<Vec<u8>>,
) -> Vec<Result<StreamEvent>> {
    let bytes = futures::stream::iter(
        chunks
            .into_iter()
            .map(|chunk| Ok::<_, std::io::Error>(bytes::Bytes::from(chunk))),
    );
    futures::executor::block_on(decode(decoder, bytes).collect())
}

/// Test helper: one line per event (errors as `error <kind>: <message>`), as the fixtures'
/// `.events` files have them.
#[cfg(test)]
pub(crate) fn render(events: &[Result<StreamEvent>]) -> String {
    events
        .iter()
        .map(|event| match event {
            Ok(event) => serde_json::to_string(event).unwrap_or_default() + "\n",
            Err(error) => format!("error {}: {error}\n", error.kind()),
        })
        .collect()
}
