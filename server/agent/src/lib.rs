//! Tandem's agent core, independent of any front end: the workspace sandbox and the tools
//! today; the loop, approvals, system prompt and memory as they land. It knows nothing of LSP.

pub mod tools;
pub mod workspace;

pub use workspace::{SandboxError, Workspace};
