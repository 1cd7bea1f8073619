//! Tandem's extension for Zed's editor. Zed starts language servers only from extensions, so
//! this one registers the `tandem` server for the languages `extension.toml` lists and tells Zed
//! how to start it: the `tandem` executable found on the project's `PATH`, run as `tandem lsp`,
//! with the project's shell environment (where model keys such as `ANTHROPIC_API_KEY` usually
//! are). It also answers the server's `workspace/configuration` pull for the `tandem` section
//! from Zed's `lsp.tandem.settings`. Code actions, `tandem:` comments and the agent are all the
//! server's; nothing here knows about them. The agent panel reaches Tandem another way, through
//! `tandem acp`, set up in Zed's settings (see README.md).

use zed_extension_api::{
    self as zed,
    serde_json::{json, Value},
    settings::LspSettings,
    EnvVars, LanguageServerId, Worktree,
};

/// The executable the extension runs; Zed looks for it on the project's `PATH`.
const EXECUTABLE: &str = "tandem";

/// Shown by Zed in the language server's status and log when `tandem` cannot be found.
const NOT_FOUND: &str = "Tandem's language server needs the `tandem` executable, and it is not \
    on the PATH that Zed uses for this project. Install it from a Tandem checkout with \
    `cargo install --locked --path server/tandem` (it goes to ~/.cargo/bin: make sure that \
    folder is on your shell's PATH), then reopen the project or run \
    `editor: restart language server`.";

struct Tandem;

impl zed::Extension for Tandem {
    fn new() -> Self {
        Tandem
    }

    fn language_server_command(
        &mut self,
        _language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<zed::Command> {
        server_command(worktree.which(EXECUTABLE), worktree.shell_env())
    }

    /// Zed answers `workspace/configuration` by looking each requested section up in this value,
    /// and Tandem asks for the `tandem` section; without this Zed would send it nothing from
    /// `lsp.tandem.settings`. (`lsp.tandem.initialization_options` needs no code: Zed merges it
    /// into `initialize` itself.)
    fn language_server_workspace_configuration(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<Option<Value>> {
        let settings = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .map_err(|error| format!("cannot read Zed's `lsp.tandem` settings: {error}"))?;
        Ok(settings.settings.map(|tandem| json!({ "tandem": tandem })))
    }
}

zed::register_extension!(Tandem);

/// The command for the executable `which` found, if it found one. Kept apart from the
/// `Worktree`, whose methods exist only inside Zed, so that tests on the host can run it.
fn server_command(executable: Option<String>, env: EnvVars) -> zed::Result<zed::Command> {
    let command = executable.ok_or_else(|| NOT_FOUND.to_owned())?;
    Ok(zed::Command {
        command,
        args: vec!["lsp".to_owned()],
        env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_tandem_runs_as_a_language_server_with_the_shell_environment() {
        let env = vec![("ANTHROPIC_API_KEY".to_owned(), "key".to_owned())];
        let command = server_command(Some("/opt/bin/tandem".to_owned()), env.clone()).unwrap();
        assert_eq!(command.command, "/opt/bin/tandem");
        assert_eq!(command.args, ["lsp"]);
        assert_eq!(command.env, env);
    }

    #[test]
    fn missing_tandem_says_how_to_install_it() {
        let error = server_command(None, Vec::new()).unwrap_err();
        assert!(error.contains("not on the PATH"), "{error}");
        assert!(
            error.contains("cargo install --locked --path server/tandem"),
            "{error}"
        );
    }
}
