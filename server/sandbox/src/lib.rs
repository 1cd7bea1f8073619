//! The agent's policy over the machine it runs on, with no session in it: the workspace sandbox
//! (`workspace`: every path a tool touches resolves inside the roots), writing files without
//! following links (`files`), where reads and writes go (`editor`: the disk, or an editor's
//! buffers), which paths may hold secrets (`secrets`), and which tool calls run without asking
//! (`approval`, with the shell command parser's reading of what a command runs and writes), and
//! the OS sandbox every process the agent starts runs in (`confine`).
//!
//! Below the tools and the session: it may use `tandem-protocol` (the data a call is shown
//! with), `tandem-syntax` (the shell parser) and `tandem-providers` (only for where the user's
//! settings live, which are protected); nothing of the tools, sessions or front ends.

pub mod approval;
pub mod confine;
pub mod editor;
pub mod files;
pub mod secrets;
pub mod workspace;

pub use approval::{ApprovalMode, ApprovalPolicy};
pub use editor::{DiskEditor, Editor};
pub use workspace::{SandboxError, Workspace};
