//! What a shell command inherits: Tandem's own environment, minus the variables that hold model
//! keys. A command's output goes to the model (and into the saved session), so `env | grep KEY`
//! would otherwise hand the key to the provider and to disk. Removed by default: every key
//! variable Tandem knows of (`ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `OPENAI_API_KEY`), every
//! `apiKeyEnv` the settings name, and whatever `shell.hideEnv` adds; `shell.passEnv` lets chosen
//! ones through.
//!
//! Every process Tandem starts for the agent (commands, hooks, MCP servers) is also given git's
//! `safe.bareRepository=explicit`, as a configuration on git's command line: git then uses a
//! repository it finds by itself only when that is a `.git` folder. A checkout can commit a
//! folder that is a repository (`HEAD`, `objects/`, `refs/`, a `config` setting
//! `core.fsmonitor`), and without this a `git status` run there runs the program its `config`
//! names (see `approval/repository.rs`).
//!
//! It also carries the workspace's OS sandbox (`tandem_sandbox::confine`): `command` builds the
//! invocation of a program as the sandbox's plan says, through the launcher when confined, so
//! the shell tool, hooks and MCP servers start their processes the one way.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tandem_sandbox::confine::{Plan, Sandbox};

/// Which variables a command does not inherit, and the sandbox it runs in.
#[derive(Debug, Clone)]
pub struct ShellEnvironment {
    hidden: GlobSet,
    passed: GlobSet,
    sandbox: Arc<Sandbox>,
}

impl Default for ShellEnvironment {
    /// Hides the key variables Tandem knows of, nothing else.
    fn default() -> Self {
        ShellEnvironment::new(&[], &[], &[])
    }
}

impl ShellEnvironment {
    /// Hides the known key variables, `key_variables` (the settings' `apiKeyEnv`s) and `hide`
    /// (names, `*` wildcards), except those `pass` names. Patterns that are not valid globs are
    /// taken as plain names.
    pub fn new(key_variables: &[String], hide: &[String], pass: &[String]) -> Self {
        let known = tandem_providers::settings::KEY_VARIABLES
            .iter()
            .map(|name| (*name).to_owned());
        let hidden: Vec<String> = known
            .chain(key_variables.iter().cloned())
            .chain(hide.iter().cloned())
            .collect();
        ShellEnvironment {
            hidden: globs(&hidden),
            passed: globs(pass),
            sandbox: Arc::new(Sandbox::off()),
        }
    }

    /// This environment, with commands confined by `sandbox` (`Sandbox::off` until then).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Arc::new(sandbox);
        self
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// `program args` with this environment, run as `plan` says (through the sandbox's launcher
    /// when confined); the caller refuses a `Plan::Refused` first.
    pub fn command(
        &self,
        program: &Path,
        args: &[OsString],
        plan: &Plan,
    ) -> tokio::process::Command {
        let (program, args) = self.sandbox.wrap(plan, program, args);
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        self.apply(&mut command);
        command
    }

    /// Whether a command must not see `name`.
    pub fn hides(&self, name: &str) -> bool {
        self.hidden.is_match(name) && !self.passed.is_match(name)
    }

    /// The variables of Tandem's own environment a command does not get.
    pub fn hidden_names(&self) -> Vec<String> {
        std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| self.hides(name))
            .collect()
    }
}

impl ShellEnvironment {
    /// Gives `command` this environment: the hidden variables removed, git's guard set.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        for name in self.hidden_names() {
            command.env_remove(name);
        }
        command.envs(git_guard());
    }

    /// This environment as variables to set, for a process another program starts (an ACP
    /// client's terminal): the hidden ones set empty, so the process sees none of them even if
    /// that program's environment has them, and git's guard.
    pub fn assignments(&self) -> Vec<(String, String)> {
        let hidden = self
            .hidden_names()
            .into_iter()
            .map(|name| (name, String::new()));
        hidden.chain(git_guard()).collect()
    }
}

/// `safe.bareRepository=explicit` as git reads configuration from the environment
/// (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`: the command line's scope, which
/// git trusts with this key), after the entries Tandem's own environment already has.
fn git_guard() -> [(String, String); 3] {
    let count = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|count| count.trim().parse::<usize>().ok())
        .unwrap_or(0);
    [
        (
            format!("GIT_CONFIG_KEY_{count}"),
            "safe.bareRepository".to_owned(),
        ),
        (format!("GIT_CONFIG_VALUE_{count}"), "explicit".to_owned()),
        ("GIT_CONFIG_COUNT".to_owned(), (count + 1).to_string()),
    ]
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).or_else(|_| Glob::new(&globset::escape(pattern)));
        if let Ok(glob) = glob {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// What shell commands inherit (the `shell` settings key). See docs/agent.md.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ShellSettings {
    /// More variables to keep from commands, beyond the model keys: names or `*` patterns.
    pub hide_env: Vec<String>,
    /// Variables passed to commands although Tandem would keep them back: names or patterns.
    pub pass_env: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_keys_are_hidden_unless_passed() {
        let env = ShellEnvironment::new(
            &["OPENROUTER_API_KEY".to_owned()],
            &["AWS_*".to_owned(), "*_TOKEN".to_owned()],
            &["GEMINI_API_KEY".to_owned(), "CI_TOKEN".to_owned()],
        );
        let cases = [
            ("ANTHROPIC_API_KEY", true),
            ("OPENAI_API_KEY", true),
            ("GEMINI_API_KEY", false),
            ("OPENROUTER_API_KEY", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("GITHUB_TOKEN", true),
            ("CI_TOKEN", false),
            ("PATH", false),
            ("HOME", false),
        ];
        for (name, hidden) in cases {
            assert_eq!(env.hides(name), hidden, "{name}");
        }
        assert!(ShellEnvironment::default().hides("ANTHROPIC_API_KEY"));
        assert!(!ShellEnvironment::default().hides("GITHUB_TOKEN"));
    }

    /// The second review's finding 1: `git status` in a committed folder that is a repository
    /// ran the program its `config` named as `core.fsmonitor`.
    #[cfg(unix)]
    #[tokio::test]
    async fn git_does_not_use_a_repository_the_checkout_committed_as_a_folder() {
        let temp = tempfile::tempdir().unwrap();
        let lib = temp.path().join("vendor/lib");
        let git = |args: &[&str], dir: &std::path::Path| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap()
        };
        std::fs::create_dir_all(&lib).unwrap();
        assert!(git(&["init", "-q", "--bare", "."], &lib).status.success());
        let marker = temp.path().join("pwned");
        std::fs::write(
            lib.join("config"),
            format!(
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\t\
                 fsmonitor = \"touch {}\"\n",
                marker.display()
            ),
        )
        .unwrap();
        // Without the guard git runs the configured program (the attack is real here)…
        git(&["status"], &lib);
        assert!(marker.exists(), "this git does not run core.fsmonitor");
        std::fs::remove_file(&marker).unwrap();
        // …and with it, git refuses the repository.
        let environment = ShellEnvironment::default();
        let plan = environment.sandbox().plan(None, false);
        let mut command = crate::shell::shell_command("git status", &environment, &plan);
        command
            .current_dir(&lib)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        let output = command.output().await.unwrap();
        assert!(!output.status.success());
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("safe.bareRepository"),
            "{output:?}"
        );
        assert!(!marker.exists());
    }
}
