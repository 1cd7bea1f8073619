//! Tandem's agent core, independent of any front end: the loop (`session.rs`), its protocol
//! (`protocol.rs`), approvals, the workspace sandbox and the tools. It knows nothing of LSP.

pub mod approval;
pub mod environment;
pub mod memory;
pub mod prompt;
pub mod protocol;
pub mod session;
pub mod settings;
pub mod tools;
pub mod workspace;

pub use approval::{ApprovalMode, ApprovalPolicy};
pub use protocol::{
    ApprovalDecision, Attachment, Event, Op, StopReason, ToolCallStatus, ToolCallUpdate,
};
pub use session::{AgentConfig, Session, TurnIo};
pub use workspace::{SandboxError, Workspace};
