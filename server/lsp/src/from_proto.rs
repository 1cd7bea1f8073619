//! Conversions from LSP wire types to Tandem's internal ones. Only this crate sees `lsp_types`.

use tandem_text::{Change, LineCol, PositionEncoding, Range};
use tower_lsp::lsp_types::{self, InitializeParams, PositionEncodingKind, WorkspaceFolder};

/// Picks the position encoding from what the client offers: UTF-8 (no conversion at all for
/// UTF-8 text), else UTF-32 (the rope's native unit), else the mandatory UTF-16.
pub(crate) fn negotiate_encoding(offered: &[PositionEncodingKind]) -> PositionEncoding {
    let offers = |encoding: PositionEncoding| {
        offered
            .iter()
            .any(|kind| kind.as_str() == encoding.as_str())
    };
    [PositionEncoding::Utf8, PositionEncoding::Utf32]
        .into_iter()
        .find(|&encoding| offers(encoding))
        .unwrap_or(PositionEncoding::Utf16)
}

pub(crate) fn position(position: lsp_types::Position) -> LineCol {
    LineCol::new(position.line, position.character)
}

pub(crate) fn change(event: lsp_types::TextDocumentContentChangeEvent) -> Change {
    Change {
        range: event.range.map(|range| Range {
            start: position(range.start),
            end: position(range.end),
        }),
        text: event.text,
    }
}

/// The workspace folders of `initialize`, falling back to the deprecated `rootUri`.
pub(crate) fn workspace_folders(params: &InitializeParams) -> Vec<WorkspaceFolder> {
    if let Some(folders) = &params.workspace_folders {
        return folders.clone();
    }
    #[allow(deprecated)]
    let root = params.root_uri.clone();
    root.map(|uri| {
        let name = uri
            .path_segments()
            .and_then(|mut segments| segments.next_back().map(str::to_owned))
            .unwrap_or_else(|| uri.to_string());
        vec![WorkspaceFolder { uri, name }]
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_prefers_utf8_then_utf32_then_utf16() {
        use PositionEncodingKind as K;
        assert_eq!(negotiate_encoding(&[]), PositionEncoding::Utf16);
        assert_eq!(
            negotiate_encoding(&[K::UTF16, K::UTF8]),
            PositionEncoding::Utf8
        );
        assert_eq!(
            negotiate_encoding(&[K::UTF16, K::UTF32]),
            PositionEncoding::Utf32
        );
        assert_eq!(
            negotiate_encoding(&[K::new("utf-7"), K::UTF16]),
            PositionEncoding::Utf16
        );
    }
}
