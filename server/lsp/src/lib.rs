//! Tandem's LSP front end: the only crate that knows tower-lsp and lsp-types.
//!
//! [`serve`] runs a language server over any byte streams (stdio for `tandem lsp`, an in-memory
//! duplex pipe in tests). It negotiates capabilities, keeps a rope per open document in exact
//! sync with the editor, and answers Tandem's custom `tandem/*` requests (see docs/protocol.md).

mod actions;
mod approvals;
mod bridge;
mod capabilities;
mod completion;
mod diagnostics;
mod framing;
mod from_proto;
mod host;
mod ide_state;
mod inline;
mod instruction;
mod logging;
mod save;
mod server;
mod sync;
mod transport;
mod trees;
mod turn_hooks;
mod turn_output;

pub use diagnostics::errors_first;
pub use logging::{client_log_channel, ClientLogLayer, ClientLogReceiver};
pub use transport::{serve, Initialized, OnInitialized, ServeOptions, ServerExit};
