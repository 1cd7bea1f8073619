//! The OS sandbox: what a process the agent starts may do once it runs, whatever the approval
//! step let through. Shell commands, hooks and MCP servers over stdio start as
//! `tandem __sandbox POLICY PROGRAM ARGS…` (`Sandbox::wrap`): the launcher (`launch`, the
//! `tandem` binary re-executed) confines itself, then executes the program, so the confinement
//! is inherited by everything the program starts and never touches the Tandem process itself.
//!
//! On Linux (`linux.rs`), with user namespaces and Landlock:
//! - **writes** only in the workspace roots and extra directories, the temp folder, `/dev/shm`
//!   and the settings' `writableDirectories` (Landlock), and never in the protected paths
//!   inside them (`.git/hooks`, `.git/config`, `.tandem`, editor and agent settings: read-only
//!   bind mounts, which also cannot be renamed or removed);
//! - **reads** everywhere but the secret stores (`~/.ssh`, `~/.aws`, …, Tandem's settings and
//!   saved sessions), which are mounted over, empty;
//! - **no network** (a network namespace with only loopback) unless allowed.
//!
//! Without user namespaces only Landlock applies (writes confined, TCP refused, no hiding);
//! without Landlock either, nothing does, and `support` says so. Other systems have the seam
//! (`Support`, `Plan`) but no implementation: commands run with approvals only there.

#[cfg(target_os = "linux")]
mod linux;
mod paths;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use paths::{DEFAULT_HIDDEN, PACKAGE_CACHES};

/// The argument that makes `tandem` the launcher (`launch`); not a command users type.
pub const LAUNCH_ARG: &str = "__sandbox";
/// The launcher's argument for "report what this system supports" (`Support`).
const PROBE_ARG: &str = "--probe";
/// The launcher's exit code when the sandbox could not be entered: the command did not run.
pub const NOT_CONFINED_EXIT: i32 = 126;

/// How the sandbox is used (`sandbox.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Confine commands as far as the system allows; where it allows nothing, run them with
    /// approvals only (`tandem sandbox check` says so).
    #[default]
    Auto,
    /// Refuse to run commands that cannot be fully confined.
    Required,
    /// Run commands with the user's full rights, as approvals allow.
    Off,
}

/// The OS sandbox's settings (the `sandbox` key). Read from the user settings file only: a
/// project cannot widen what its own commands may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// `auto` (default) confines shell commands, hooks and MCP servers where the system can;
    /// `required` refuses to run them otherwise; `off` runs them unconfined.
    pub mode: SandboxMode,
    /// Let sandboxed commands use the network (default: off; a command can still ask for it,
    /// which asks the user).
    pub network: bool,
    /// Commands that run with the network, as allow rules name them (`cargo fetch`,
    /// `npm install`): a plain command line each of whose commands one of these allows.
    pub network_commands: Vec<String>,
    /// More directories sandboxed commands may write (`~` is the home directory), beyond the
    /// workspace, its extra directories and the temp folder.
    pub writable_directories: Vec<String>,
    /// More files and folders sandboxed commands cannot read (they see them empty), beyond the
    /// secret stores Tandem hides by default (`~/.ssh`, `~/.aws`, `~/.gnupg`, …).
    pub hidden_paths: Vec<String>,
    /// Run sandboxed shell commands without asking: the worst they can do is change files in
    /// the workspace, which you can review and undo. Deny rules, protected paths and requests
    /// for more rights still ask.
    pub auto_allow: bool,
}

/// More than the sandbox gives, which a shell call may ask for (its `escalate`); asking always
/// needs the user's approval, but in `yolo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// Still sandboxed, with the network (and package managers' caches writable).
    Network,
    /// Outside the sandbox, with the user's full rights.
    Unsandboxed,
}

impl Escalation {
    /// What the call asks for, as an approval prompt says it.
    pub fn asks_for(self) -> &'static str {
        match self {
            Escalation::Network => "to run with the network",
            Escalation::Unsandboxed => "to run outside the sandbox, with your full rights",
        }
    }
}

/// What one confined process may do, as the launcher receives it (JSON in an argument).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Where it may write (and everything below).
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` it may only read: bound read-only over themselves.
    pub read_only: Vec<PathBuf>,
    /// Directories bound over themselves (still writable) so that they cannot be renamed: the
    /// folders between a writable root and a read-only path (`.git` for `.git/hooks`).
    pub pinned: Vec<PathBuf>,
    /// Paths it cannot read: an empty read-only folder, or an empty file, over each.
    pub hidden: Vec<PathBuf>,
    /// Whether it has the network.
    pub network: bool,
    /// Whether to use namespaces (mounts, network); without them only Landlock applies.
    pub namespaces: bool,
}

/// What this system can confine with, found once by running the launcher (`--probe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// The Landlock ABI version, or why there is none.
    pub landlock: Result<u32, String>,
    /// Whether a process can make user, mount and network namespaces, or why not.
    pub namespaces: Result<(), String>,
}

impl Support {
    /// Everything the sandbox uses is there.
    pub fn full(&self) -> bool {
        self.landlock.is_ok() && self.namespaces.is_ok()
    }

    /// Nothing the sandbox uses is there.
    pub fn none(&self) -> bool {
        self.landlock.is_err() && self.namespaces.is_err()
    }

    /// What is missing and what that costs, or `None` when nothing is.
    pub fn shortfall(&self) -> Option<String> {
        match (&self.landlock, &self.namespaces) {
            (Ok(_), Ok(())) => None,
            (Err(landlock), Err(namespaces)) => Some(format!(
                "this system has neither Landlock ({landlock}) nor user namespaces \
                 ({namespaces}), so commands cannot be confined"
            )),
            (Ok(_), Err(namespaces)) => Some(format!(
                "this system cannot make user namespaces ({namespaces}), so commands are \
                 confined by Landlock alone: writes stay in the workspace and TCP is refused, \
                 but secret stores stay readable, protected paths in the workspace stay \
                 writable and UDP is open"
            )),
            (Err(landlock), Ok(())) => Some(format!(
                "this system has no Landlock ({landlock}), so commands can write anywhere you \
                 can; secret stores are hidden and the network is off"
            )),
        }
    }
}

/// What a confined process gets beyond writing the workspace; the paths behind it are found
/// when the process starts (`Sandbox::confinement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    pub network: bool,
    /// Namespaces are used (mounts, the network); without them only Landlock applies.
    pub namespaces: bool,
}

/// How one process will run. Deciding it touches no file, so the approval step can ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Confined(Rights),
    /// With the user's full rights: why.
    Unconfined(String),
    /// Not at all (`sandbox.mode: required` on a system that cannot confine): why.
    Refused(String),
}

impl Plan {
    pub fn is_confined(&self) -> bool {
        matches!(self, Plan::Confined(_))
    }
}

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
static SUPPORT: OnceLock<Support> = OnceLock::new();

/// Makes `program` (the `tandem` binary) the launcher every confined process starts through.
/// Set once, by the binary's `main`; a process that never sets it (a library's tests) starts
/// commands unconfined.
pub fn use_launcher(program: PathBuf) {
    let _ = LAUNCHER.set(program);
}

/// The launcher, when one is set.
pub fn launcher() -> Option<&'static Path> {
    LAUNCHER.get().map(PathBuf::as_path)
}

/// What this system supports, probed once (a few milliseconds: the launcher tries it).
pub fn support() -> &'static Support {
    SUPPORT.get_or_init(|| {
        let Some(launcher) = launcher() else {
            return unsupported("Tandem runs without its launcher here");
        };
        if !cfg!(target_os = "linux") {
            return unsupported("Tandem's sandbox exists only on Linux so far");
        }
        let output = std::process::Command::new(launcher)
            .args([LAUNCH_ARG, PROBE_ARG])
            .stdin(std::process::Stdio::null())
            .output();
        let support = match output {
            Ok(output) => serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
                unsupported(&format!(
                    "the launcher's probe answered {:?}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ))
            }),
            Err(error) => unsupported(&format!("the launcher could not start: {error}")),
        };
        if let Some(shortfall) = support.shortfall() {
            tracing::warn!("sandbox: {shortfall}");
        }
        support
    })
}

fn unsupported(why: &str) -> Support {
    Support {
        landlock: Err(why.to_owned()),
        namespaces: Err(why.to_owned()),
    }
}

/// The sandbox for one workspace: the settings, and the directories its commands may write.
#[derive(Debug, Clone)]
pub struct Sandbox {
    settings: SandboxSettings,
    /// The workspace roots and extra directories.
    workspace: Vec<PathBuf>,
    /// Hidden beyond the defaults and the settings (Tandem's settings and state folders).
    hidden: Vec<PathBuf>,
    /// Set for a sandbox that never confines (`Sandbox::off`).
    off: bool,
}

impl Sandbox {
    /// A sandbox that runs everything unconfined (tests of code above it, and tools run where
    /// no workspace is set up).
    pub fn off() -> Sandbox {
        Sandbox {
            settings: SandboxSettings::default(),
            workspace: Vec::new(),
            hidden: Vec::new(),
            off: true,
        }
    }

    /// The sandbox of a workspace whose commands may write `workspace` (roots and extra
    /// directories), hiding `hidden` beyond the defaults and the settings.
    pub fn new(settings: SandboxSettings, workspace: Vec<PathBuf>, hidden: Vec<PathBuf>) -> Self {
        Sandbox {
            settings,
            workspace,
            hidden,
            off: false,
        }
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// How a process runs when it asks for `escalation` and, for a shell command, whether a
    /// `networkCommands` rule gives it the network.
    pub fn plan(&self, escalation: Option<Escalation>, network_rule: bool) -> Plan {
        if self.off {
            return Plan::Unconfined("Tandem's sandbox is not set up here".to_owned());
        }
        if self.settings.mode == SandboxMode::Off {
            return Plan::Unconfined("the sandbox is off in the settings (`sandbox.mode`)".into());
        }
        if escalation == Some(Escalation::Unsandboxed) {
            return Plan::Unconfined("the call asked to run outside the sandbox".to_owned());
        }
        let support = support();
        let required = self.settings.mode == SandboxMode::Required;
        match support.shortfall() {
            Some(why) if required => {
                return Plan::Refused(format!(
                    "{why}, and the settings require the sandbox (`sandbox.mode: required`)"
                ))
            }
            Some(why) if support.none() => return Plan::Unconfined(why),
            _ => {}
        }
        Plan::Confined(Rights {
            network: self.settings.network
                || network_rule
                || escalation == Some(Escalation::Network),
            namespaces: support.namespaces.is_ok(),
        })
    }

    /// What a process with `rights` that starts now may write, may only read and cannot read,
    /// found on the disk (making `.tandem` and `.git/hooks` when missing).
    pub fn confinement(&self, rights: Rights) -> Confinement {
        paths::confinement(&self.settings, &self.workspace, &self.hidden, rights)
    }

    /// Whether the settings give this shell command line the network.
    pub fn network_rule(&self, command: &str) -> bool {
        crate::approval::commands_allow(&self.settings.network_commands, command)
    }

    /// The program and arguments that run `program args` as `plan` says: through the launcher
    /// with the confinement found now when confined, as they are otherwise (`Plan::Refused` is
    /// the caller's to refuse).
    pub fn wrap(&self, plan: &Plan, program: &Path, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
        match (plan, launcher()) {
            (Plan::Confined(rights), Some(launcher)) => {
                let policy = serde_json::to_string(&self.confinement(*rights)).unwrap_or_default();
                let mut wrapped: Vec<OsString> = vec![LAUNCH_ARG.into(), policy.into()];
                wrapped.push(program.as_os_str().to_owned());
                wrapped.extend(args.iter().cloned());
                (launcher.to_path_buf(), wrapped)
            }
            _ => (program.to_path_buf(), args.to_vec()),
        }
    }

    /// One paragraph for an approval prompt: whether the command runs sandboxed, and with
    /// which rights (the same words on every machine; `tandem sandbox check` lists the paths).
    pub fn describe(&self, plan: &Plan) -> String {
        let rights = match plan {
            Plan::Confined(rights) => rights,
            Plan::Unconfined(why) => {
                return format!("Not sandboxed: it runs with your full rights ({why}).")
            }
            Plan::Refused(why) => return format!("It will not run: {why}."),
        };
        let mut writable = "the workspace and the temp folder".to_owned();
        if !self.settings.writable_directories.is_empty() {
            writable = format!(
                "the workspace, the temp folder and {}",
                self.settings.writable_directories.join(", ")
            );
        }
        let network = if rights.network { "on" } else { "off" };
        if rights.namespaces {
            format!(
                "Sandboxed: it can write only in {writable} (not .git/hooks, .git/config, \
                 .tandem or editors' settings there); the network is {network}; secret stores \
                 (~/.ssh, ~/.aws, …) and Tandem's settings read as empty."
            )
        } else {
            let tcp = if rights.network { "allowed" } else { "refused" };
            format!(
                "Sandboxed by Landlock alone: it can write only in {writable}; TCP is {tcp}; \
                 secret stores stay readable (this system has no user namespaces)."
            )
        }
    }
}

/// The launcher: `tandem __sandbox POLICY PROGRAM ARGS…` confines itself as `POLICY` (a
/// `Confinement` as JSON) says, then executes `PROGRAM ARGS…` in its place;
/// `tandem __sandbox --probe` prints `Support` as JSON. Returns the exit code when it cannot
/// (a success never returns).
pub fn launch(args: &[OsString]) -> i32 {
    match args {
        [probe] if probe == PROBE_ARG => {
            let support = probe_here();
            let json = serde_json::to_string(&support).unwrap_or_default();
            let mut stdout = std::io::stdout().lock();
            let _ = std::io::Write::write_all(&mut stdout, json.as_bytes());
            0
        }
        [policy, program, args @ ..] => {
            let confinement: Confinement = match policy.to_str().map(serde_json::from_str) {
                Some(Ok(confinement)) => confinement,
                _ => return fail("the sandbox policy is not valid JSON"),
            };
            run_confined(&confinement, program, args)
        }
        _ => fail("usage: tandem __sandbox POLICY PROGRAM [ARGS…]"),
    }
}

fn fail(why: &str) -> i32 {
    eprintln!("tandem sandbox: {why}; the command did not run");
    NOT_CONFINED_EXIT
}

#[cfg(target_os = "linux")]
fn probe_here() -> Support {
    linux::probe()
}

#[cfg(not(target_os = "linux"))]
fn probe_here() -> Support {
    unsupported("Tandem's sandbox exists only on Linux so far")
}

#[cfg(target_os = "linux")]
fn run_confined(confinement: &Confinement, program: &OsStr, args: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    if let Err(why) = linux::enter(confinement) {
        return fail(&format!("could not confine the command: {why}"));
    }
    let error = std::process::Command::new(program).args(args).exec();
    eprintln!(
        "tandem sandbox: could not run `{}`: {error}",
        Path::new(program).display()
    );
    127
}

#[cfg(not(target_os = "linux"))]
fn run_confined(_: &Confinement, _: &OsStr, _: &[OsString]) -> i32 {
    fail("Tandem's sandbox exists only on Linux so far")
}
