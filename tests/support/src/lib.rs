//! Test-only support: an LSP client that drives Tandem the way an editor does, over an in-process
//! duplex pipe or the stdio of a spawned `tandem lsp`; a fake editor that keeps buffers and
//! answers the server's requests by itself; a scripted model server; and a plain reference model
//! of a text document for differential tests.

// A test helper that cannot do its job should fail the test loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
pub mod editor;
pub mod model_server;
pub mod reference;

pub use client::{start_in_process, start_in_process_with, InProcessServer, TestClient, TIMEOUT};
pub use editor::{
    completion_settings, scripted_settings, ApplyRecord, EditorBuilder, FakeEditor, VersionCheck,
};
pub use model_server::{ModelServer, RecordedRequest, Reply, Step};
