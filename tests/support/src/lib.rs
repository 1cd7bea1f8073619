//! Test-only support: an LSP client that drives Tandem the way an editor does, over an in-process
//! duplex pipe or the stdio of a spawned `tandem lsp`, and a plain reference model of a text
//! document for differential tests.

// A test helper that cannot do its job should fail the test loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
pub mod model_server;
pub mod reference;

pub use client::{start_in_process, InProcessServer, TestClient, TIMEOUT};
pub use model_server::{ModelServer, RecordedRequest, Reply, Step};
