//! LSP base-protocol framing: `Content-Length` headers around JSON bodies.
//!
//! Written here rather than taken from tower-lsp because tower-lsp's reader stops for good after
//! the first frame it cannot decode (tokio-util's `FramedRead` ends its stream after a decoder
//! error), so one malformed message would silently stop the server listening. This reader reports
//! a bad frame, skips to the next `Content-Length` header and carries on.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Larger frames are refused rather than buffered: a bogus length must not exhaust memory.
/// Generous, because an editor may open a file of hundreds of megabytes.
pub(crate) const MAX_FRAME_BYTES: usize = 1 << 30;
/// A header block longer than this without its blank line is garbage, not headers.
const MAX_HEADER_BYTES: usize = 8 * 1024;
const HEADER_NAME: &[u8] = b"Content-Length";

#[derive(Debug)]
pub(crate) enum Frame {
    /// A body of exactly the announced length (not yet known to be JSON).
    Body(Vec<u8>),
    /// Bytes that were not a valid frame header; they were skipped up to the next header.
    Malformed(String),
}

pub(crate) struct FrameReader<R> {
    input: R,
    buffer: Vec<u8>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(input: R) -> Self {
        FrameReader {
            input,
            buffer: Vec::with_capacity(64 * 1024),
            eof: false,
        }
    }

    /// The next frame, or `None` once the input is closed.
    pub(crate) async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                let parsed = parse_headers(&self.buffer[..end]);
                let header_len = end + 4;
                match parsed {
                    Ok(length) => {
                        if !self.fill_to(header_len + length).await? {
                            return Ok(None);
                        }
                        let body = self.buffer[header_len..header_len + length].to_vec();
                        self.buffer.drain(..header_len + length);
                        return Ok(Some(Frame::Body(body)));
                    }
                    Err(reason) => {
                        // The real header may sit inside this block, after leftovers of a
                        // message whose Content-Length was wrong: resync from the next byte.
                        self.skip_to_next_header(1);
                        return Ok(Some(Frame::Malformed(reason)));
                    }
                }
            }
            if self.buffer.len() > MAX_HEADER_BYTES {
                self.skip_to_next_header(1);
                return Ok(Some(Frame::Malformed(format!(
                    "no end of headers (\\r\\n\\r\\n) within {MAX_HEADER_BYTES} bytes"
                ))));
            }
            if !self.read_more().await? {
                if self.buffer.iter().any(|b| !b.is_ascii_whitespace()) {
                    let reason = format!(
                        "input closed inside a message header ({} bytes)",
                        self.buffer.len()
                    );
                    self.buffer.clear();
                    return Ok(Some(Frame::Malformed(reason)));
                }
                return Ok(None);
            }
        }
    }

    /// Drops bytes up to the next `Content-Length` at or after `from`, keeping a possible partial
    /// header name at the end of the buffer.
    fn skip_to_next_header(&mut self, from: usize) {
        let from = from.min(self.buffer.len());
        let cut = match find(&self.buffer[from..], HEADER_NAME) {
            Some(at) => from + at,
            None => self
                .buffer
                .len()
                .saturating_sub(HEADER_NAME.len() - 1)
                .max(from),
        };
        self.buffer.drain(..cut);
    }

    async fn fill_to(&mut self, len: usize) -> std::io::Result<bool> {
        while self.buffer.len() < len {
            if !self.read_more().await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn read_more(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let mut chunk = [0u8; 64 * 1024];
        let read = self.input.read(&mut chunk).await?;
        if read == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(true)
    }
}

fn parse_headers(block: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(block).map_err(|_| "message header is not ASCII".to_owned())?;
    let mut length = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("malformed header line {line:?}"));
        };
        let value = value.trim();
        if name.trim().eq_ignore_ascii_case("content-length") {
            let parsed: usize = value
                .parse()
                .map_err(|_| format!("Content-Length {value:?} is not a number"))?;
            if parsed > MAX_FRAME_BYTES {
                return Err(format!(
                    "Content-Length {parsed} exceeds the limit of {MAX_FRAME_BYTES} bytes"
                ));
            }
            length = Some(parsed);
        } else if name.trim().eq_ignore_ascii_case("content-type") {
            let charset = value
                .split(';')
                .skip(1)
                .filter_map(|param| param.trim().strip_prefix("charset="))
                .next();
            if let Some(charset) = charset {
                if !matches!(charset.to_ascii_lowercase().as_str(), "utf-8" | "utf8") {
                    return Err(format!(
                        "unsupported charset {charset:?}: only utf-8 is spoken"
                    ));
                }
            }
        }
    }
    length.ok_or_else(|| "message header has no Content-Length".to_owned())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Writes one frame and flushes it.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    output: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    output.write_all(header.as_bytes()).await?;
    output.write_all(body).await?;
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<String> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.unwrap() {
            out.push(match frame {
                Frame::Body(body) => String::from_utf8(body).unwrap(),
                Frame::Malformed(reason) => format!("malformed: {reason}"),
            });
        }
        out
    }

    #[tokio::test]
    async fn reads_consecutive_frames_and_ignores_other_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:  3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1]";
        assert_eq!(frames(input).await, ["{}", "[1]"]);
    }

    #[tokio::test]
    async fn garbage_between_frames_is_reported_and_skipped() {
        let input = b"hello\r\n\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(
            frames(input).await,
            ["malformed: malformed header line \"hello\"", "{}"]
        );
    }

    #[tokio::test]
    async fn non_numeric_and_missing_length_are_reported() {
        let input = b"Content-Length: ten\r\n\r\nX-Other: 1\r\n\r\nContent-Length: 2\r\n\r\n{}";
        let got = frames(input).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].contains("not a number"), "{got:?}");
        assert_eq!(got[1], "{}");
    }

    #[tokio::test]
    async fn oversized_length_is_refused_without_buffering() {
        let input = format!(
            "Content-Length: {}\r\n\r\nContent-Length: 2\r\n\r\n{{}}",
            MAX_FRAME_BYTES + 1
        );
        let got = frames(input.as_bytes()).await;
        assert!(got[0].contains("exceeds the limit"), "{got:?}");
        assert_eq!(got[1], "{}");
    }

    /// Input that never ends and never holds a header end, served 1 KiB a read; it counts
    /// what it served and fails the read past `limit`, so a reader that keeps buffering
    /// fails the test instead of hanging it.
    struct EndlessHeader {
        served: usize,
        limit: usize,
    }

    impl AsyncRead for EndlessHeader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if self.served >= self.limit {
                return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                    "read {} bytes of one header without it being cut off",
                    self.served
                ))));
            }
            let n = buf.remaining().min(1024);
            buf.put_slice(&vec![b'x'; n]);
            self.served += n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Regression: the old test fed a finite input, whose end produced a "malformed" frame with
    /// or without the limit, so it passed with the limit disabled. This input never ends: only
    /// the limit produces a frame, and it must come after at most the limit plus one read.
    #[tokio::test]
    async fn endless_header_is_cut_off_at_the_limit_before_the_input_ends() {
        let mut reader = FrameReader::new(EndlessHeader {
            served: 0,
            limit: MAX_HEADER_BYTES * 64,
        });
        for _ in 0..3 {
            let before = reader.input.served;
            match reader.next().await.unwrap() {
                Some(Frame::Malformed(reason)) => assert_eq!(
                    reason,
                    format!("no end of headers (\\r\\n\\r\\n) within {MAX_HEADER_BYTES} bytes")
                ),
                other => panic!("expected the header to be cut off, got {other:?}"),
            }
            // Nothing more is buffered than the limit and one read past it, and the reader
            // carries on after the cut.
            assert!(
                reader.buffer.len() < HEADER_NAME.len(),
                "{}",
                reader.buffer.len()
            );
            let read = reader.input.served - before;
            assert!(
                read <= MAX_HEADER_BYTES + 1024,
                "read {read} bytes before the cut"
            );
        }
    }

    #[tokio::test]
    async fn truncated_body_at_eof_ends_the_stream() {
        assert!(frames(b"Content-Length: 10\r\n\r\n{}").await.is_empty());
    }
}
