//! LSP's base protocol on a byte stream: `Content-Length` headers, a blank line, a JSON body.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A body larger than this is a broken or hostile server, not a message.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The next message, `None` at the end of the stream. A body that is not JSON is skipped (and
/// logged); a stream that breaks the framing is an error.
pub(crate) async fn read_message<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Value>> {
    loop {
        let mut length = None;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).await? == 0 {
                return Ok(None);
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let length = length.filter(|length| *length <= MAX_BODY).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a message without a usable Content-Length",
            )
        })?;
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        match serde_json::from_slice(&body) {
            Ok(value) => return Ok(Some(value)),
            Err(error) => {
                tracing::warn!("skipped a language server message that is not JSON: {error}")
            }
        }
    }
}

pub(crate) async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &Value,
) -> std::io::Result<()> {
    let body = message.to_string();
    writer
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    writer.write_all(body.as_bytes()).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::BufReader;

    use super::*;

    #[tokio::test]
    async fn messages_round_trip_and_junk_bodies_are_skipped() {
        let mut bytes = Vec::new();
        write_message(&mut bytes, &json!({"a": 1})).await.unwrap();
        bytes.extend_from_slice(b"Content-Length: 3\r\nContent-Type: x\r\n\r\nnot");
        write_message(&mut bytes, &json!({"b": "é"})).await.unwrap();
        let mut reader = BufReader::new(bytes.as_slice());
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            read_message(&mut reader).await.unwrap(),
            Some(json!({"b": "é"}))
        );
        assert_eq!(read_message(&mut reader).await.unwrap(), None);
        let mut broken = BufReader::new(&b"Content-Length: x\r\n\r\n{}"[..]);
        assert!(read_message(&mut broken).await.is_err());
    }
}
