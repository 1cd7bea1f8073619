//! Tandem's agent core, independent of any front end: the session host every front end shares
//! (`host/`), the loop (`session/`), approvals, the workspace sandbox and the tools. Its
//! protocol with the front ends is the `tandem-protocol` crate below it, re-exported as
//! `protocol`. It knows nothing of LSP or ACP.

pub mod checkpoint;
pub mod compress;
pub mod date;
pub mod environment;
pub mod hooks;
pub mod host;
pub mod ide;
pub mod mcp;
pub mod memory;
pub mod mentions;
pub mod next_speaker;
pub mod prompt;
pub mod session;
pub mod settings;
pub mod setup;
pub mod skills;
pub mod slash;
pub mod store;
pub mod subagents;
pub mod tokens;
pub mod tools;

// The protocol with the front ends is a crate of its own, below the core; named here as it
// always was.
pub use tandem_protocol as protocol;
// So is the sandbox and approval policy.
pub use tandem_sandbox::{approval, editor, files, secrets, workspace};
// And inline completions.
pub use tandem_completion as completion;
// The built-in tools' crate brings what they share.
pub use tandem_tools::{language_servers as diagnostics, merge, symbols};

pub use approval::{ApprovalMode, ApprovalPolicy};
pub use editor::{DiskEditor, Editor};
pub use ide::IdeState;
pub use protocol::{
    ApprovalDecision, Attachment, CompressionReport, CompressionStatus, Event, Op, RestoreReport,
    ShownFile, SkippedFile, StopReason, SubagentEvent, ToolCallStatus, ToolCallUpdate, UsageReport,
};
pub use session::{AgentConfig, Prompt, Session, TurnIo};
pub use workspace::{SandboxError, Workspace};
