//! `tandem acp`: Tandem as an Agent Client Protocol (v1) agent, so Zed's agent panel and every
//! other ACP client can use it. The only crate that knows `agent-client-protocol`.
//!
//! A front end like the language server, and as thin: sessions, turns, settings, saved
//! sessions and approvals are the core's (`tandem_agent::host`); this crate translates.
//! - `lib.rs` — [`serve`]: newline-delimited JSON-RPC over any reader and writer (the binary
//!   passes stdin and stdout), each method routed to its handler.
//! - `agent.rs` — the handlers on the host: `initialize`, the `session/*` methods,
//!   `session/cancel`.
//! - `turn.rs` — one prompt: its turn pumped into `session/update`s, permission requests and
//!   the answer.
//! - `client.rs` — the client's side of a session: its files and terminal, and the `Frontend`
//!   that gives them to the tools.
//! - `translate.rs` — pure: Tandem's events, stop reasons, modes and plans in ACP's terms, and
//!   a prompt's content blocks as text and attachments.
//! - `editor.rs` — the tools' `Editor` over the client's `fs/*` methods.
//! - `attach.rs` — the Unix socket a `tandem lsp` listens on for front ends that join its
//!   sessions (served by [`serve`] with [`ServeOptions::attach`]), and how they find it.
//!
//! What a client sees is documented in `docs/acp.md`.

mod agent;
pub mod attach;
mod client;
pub mod editor;
pub mod translate;
mod turn;

use std::io;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{on_receive_notification, on_receive_request, Agent, Lines};
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

pub use agent::{Attached, ServeOptions};

/// A line longer than this is skipped (and answered with a parse error): messages are JSON of
/// prompts and file texts, and nothing legitimate comes close.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The connection failed (the output could not be written, or the protocol engine gave
    /// up); what was running has been cancelled.
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

pub type Result<T> = std::result::Result<T, AcpError>;

/// Serves one ACP client on `input` and `output` until the client closes `input`; then every
/// session's turns are cancelled (their commands killed) before it returns. Attached to an
/// existing host (`ServeOptions::attach`), only the turns this client queued are cancelled and
/// the sessions go on.
///
/// Needs a multi-thread tokio runtime for reads through the client (`editor.rs`); on another
/// runtime the tools read the disk.
pub async fn serve<R, W>(input: R, output: W, options: ServeOptions) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = agent::Server::new(options);
    let transport = line_transport(input, output);
    let s = server.clone();
    let result = Agent
        .v1()
        .name("tandem")
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::InitializeRequest, responder, _cx| {
                    server.initialize(request, responder);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::AuthenticateRequest, responder, _cx| {
                    server.authenticate(request, responder);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::NewSessionRequest, responder, cx| {
                    server.new_session(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::LoadSessionRequest, responder, cx| {
                    server.load_session(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::ResumeSessionRequest, responder, cx| {
                    server.resume_session(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::ListSessionsRequest, responder, _cx| {
                    server.list_sessions(request, responder);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::CloseSessionRequest, responder, _cx| {
                    server.close_session(request, responder);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::DeleteSessionRequest, responder, _cx| {
                    server.delete_session(request, responder);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::SetSessionModeRequest, responder, cx| {
                    server.set_mode(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::SetSessionConfigOptionRequest, responder, cx| {
                    server.set_config_option(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = s.clone();
                async move |request: acp::PromptRequest, responder, cx| {
                    server.prompt(request, responder, cx);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            {
                let server = s.clone();
                async move |notification: acp::CancelNotification, _cx| {
                    server.cancel(notification);
                    Ok(())
                }
            },
            on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    server.shutdown().await;
    result.map_err(|error| AcpError::Connection(error.to_string()))
}

/// Newline-delimited JSON-RPC over `input` and `output`, as ACP's stdio transport frames it:
/// what `serve` reads and writes, and what a client (`tandem chat`) connects with, over a pipe,
/// an in-process duplex or the attach socket.
pub fn line_transport<R, W>(
    input: R,
    output: W,
) -> Lines<
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Lines::new(outgoing(output), incoming(input))
}

/// The peer's messages, one a line. A line that is not UTF-8 is passed on with its bad
/// bytes replaced (the protocol engine answers what does not parse), a line over
/// [`MAX_LINE_BYTES`] is replaced by a marker that does not parse, and blank lines are skipped.
fn incoming<R>(input: R) -> impl Stream<Item = io::Result<String>> + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
{
    futures::stream::unfold(Some(BufReader::new(input)), |reader| async move {
        let mut reader = reader?;
        loop {
            match read_line(&mut reader).await {
                Ok(Some(line)) if line.trim().is_empty() => continue,
                Ok(Some(line)) => return Some((Ok(line), Some(reader))),
                Ok(None) => return None,
                Err(error) => return Some((Err(error), None)),
            }
        }
    })
}

/// One line without its line break; `None` at the end of the input.
async fn read_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            if line.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (chunk, used, end) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&buffer[..at], at + 1, true),
            None => (buffer, buffer.len(), false),
        };
        if !too_long && line.len() + chunk.len() > MAX_LINE_BYTES {
            too_long = true;
            line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        reader.consume(used);
        if end {
            break;
        }
    }
    if too_long {
        tracing::warn!("skipped a message over {MAX_LINE_BYTES} bytes");
        return Ok(Some(format!(
            "<a message over {MAX_LINE_BYTES} bytes was skipped>"
        )));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

/// Writes each message on its own line, flushed at once. Once the client has closed its end
/// (a broken pipe: it has gone, or stopped reading as it leaves), later messages are dropped
/// instead of failing the connection, which then ends when the input does.
fn outgoing<W>(output: W) -> impl Sink<String, Error = io::Error> + Send + 'static
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    futures::sink::unfold(
        (output, false),
        |(mut output, closed), line: String| async move {
            if closed {
                return Ok((output, true));
            }
            let written = async {
                output.write_all(line.as_bytes()).await?;
                output.write_all(b"\n").await?;
                output.flush().await
            }
            .await;
            match written {
                Ok(()) => Ok((output, false)),
                Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                    tracing::info!("the client closed its end; later messages are dropped");
                    Ok((output, true))
                }
                Err(error) => Err(error),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use futures::{SinkExt, StreamExt};

    use super::*;

    /// The lines `input` is read as.
    async fn lines(input: &'static [u8]) -> Vec<String> {
        incoming(input)
            .map(|line| line.unwrap())
            .collect::<Vec<_>>()
            .await
    }

    #[tokio::test]
    async fn lines_are_read_whatever_their_ending_and_bytes() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}").await,
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
        // Bad UTF-8 is replaced, so the protocol engine answers what does not parse.
        assert_eq!(lines(b"{\"a\":\"\xff\"}\n").await, ["{\"a\":\"\u{fffd}\"}"]);
        assert!(lines(b"").await.is_empty());
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        input.extend_from_slice(b"\n{\"after\":true}\n");
        let read: Vec<String> = incoming(std::io::Cursor::new(input))
            .map(|line| line.unwrap())
            .collect()
            .await;
        assert_eq!(read.len(), 2);
        assert!(read[0].contains("was skipped"), "{}", &read[0][..80]);
        assert_eq!(read[1], "{\"after\":true}");
    }

    #[tokio::test]
    async fn writes_to_a_client_that_left_are_dropped_not_failed() {
        let (writer, reader) = tokio::io::duplex(64);
        drop(reader);
        let mut sink = Box::pin(outgoing(writer));
        sink.send("{\"jsonrpc\":\"2.0\"}".to_owned()).await.unwrap();
        sink.send("{\"jsonrpc\":\"2.0\"}".to_owned()).await.unwrap();
    }
}
