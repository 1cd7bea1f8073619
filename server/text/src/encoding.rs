//! Position encodings: the unit in which a client counts the `character` of a position.

use std::fmt;

/// How the `character` offset of a position is counted within its line.
///
/// LSP 3.17 lets client and server agree on this during `initialize`; UTF-16 is the default
/// every client must support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    /// Bytes of the UTF-8 encoding.
    Utf8,
    /// UTF-16 code units: characters outside the BMP (most emoji) count as two.
    #[default]
    Utf16,
    /// Unicode scalar values.
    Utf32,
}

impl PositionEncoding {
    /// The name LSP uses for this encoding (`positionEncoding` in server capabilities).
    pub fn as_str(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// Parses an LSP encoding name; `None` for names this server does not speak.
    pub fn from_lsp_name(name: &str) -> Option<Self> {
        match name {
            "utf-8" => Some(PositionEncoding::Utf8),
            "utf-16" => Some(PositionEncoding::Utf16),
            "utf-32" => Some(PositionEncoding::Utf32),
            _ => None,
        }
    }
}

impl fmt::Display for PositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
