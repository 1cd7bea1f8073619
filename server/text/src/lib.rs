//! Tandem's text model: documents held as ropes, LSP line breaks, position encodings and the
//! edits an editor sends.
//!
//! This crate knows nothing of LSP's wire types, the network or async: the LSP front end converts
//! its positions into [`LineCol`] plus a [`PositionEncoding`] and hands them here. Internally every
//! offset is a char index into the rope; encodings are applied only when converting positions.

mod document;
mod encoding;
mod store;

pub use document::{AppliedChange, Change, Document, LineCol, Range, TextPoint};
pub use encoding::PositionEncoding;
pub use store::{DocumentStore, StoreError};

/// Result alias for fallible store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
