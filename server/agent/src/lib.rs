//! Tandem's agent core at its top, as every front end uses it: the session host they share
//! (`host/`), the settings file's sections assembled into `AgentSettings` (`settings`), and the
//! assembly of a session from them (`setup`). Everything below is a crate of its own, named
//! here under the paths the front ends have always used: the protocol with the front ends
//! (`tandem-protocol`), the sandbox and approval policy (`tandem-sandbox`), the built-in tools
//! (`tandem-tools`), the extensions (`tandem-extensions`), the loop and what it keeps
//! (`tandem-session`) and inline completions (`tandem-completion`). It knows nothing of LSP or
//! ACP.

pub mod host;
pub mod settings;
pub mod setup;

pub use tandem_completion as completion;
pub use tandem_extensions::{hooks, mcp, mentions, plugins, skills, slash, subagents};
pub use tandem_protocol as protocol;
pub use tandem_sandbox::{approval, confine, editor, files, secrets, workspace};
pub use tandem_session::{
    checkpoint, compress, date, environment, ide, memory, next_speaker, prompt, session, store,
    subagent, tokens,
};
pub use tandem_tools as tools;
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
