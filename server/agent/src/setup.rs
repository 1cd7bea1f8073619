//! Setting up a session the same way in every front end: the sandbox and tool context from the
//! settings, and the agent's configuration (system prompt with memory, environment, approvals).
//! `tandem ask`, `tandem tool` and the language server all start here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::confine::Sandbox;
use crate::editor::Editor;
use crate::environment::environment_context;
use crate::settings::AgentSettings;
use crate::skills::{SkillDirs, SkillSet};
use crate::slash::CommandDirs;
use crate::tools::shell::ShellEnvironment;
use crate::tools::{Tool, ToolContext};
use crate::workspace::Workspace;

// Where they were before they moved down to the session's own modules.
pub use crate::date::{civil_from_days, today};
pub use crate::prompt::system_prompt_with_memory;
use crate::AgentConfig;

/// The sandbox (the roots plus the settings' `extraDirectories`, and the skills' and plugins'
/// folders, read only) and what the tools share. `user_dir` is the user's settings directory, where the
/// global memory file and the user's skills live.
pub fn tool_context(
    roots: Vec<PathBuf>,
    settings: &AgentSettings,
    editor: Arc<dyn Editor>,
    user_dir: Option<&Path>,
) -> ToolContext {
    session_context(roots, settings, editor, user_dir).0
}

/// [`tool_context`], with the skills found (for the system prompt and `activate_skill`).
pub fn session_context(
    roots: Vec<PathBuf>,
    settings: &AgentSettings,
    editor: Arc<dyn Editor>,
    user_dir: Option<&Path>,
) -> (ToolContext, Arc<SkillSet>) {
    let home = dirs::home_dir();
    let base = roots.first().cloned().unwrap_or_default();
    // Settings name directories as a person writes them: `~/notes`, or relative to the project.
    let extra = settings
        .extra_directories
        .iter()
        .map(|dir| match (dir.strip_prefix("~"), &home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => base.join(dir),
        })
        .collect();
    let skills = skills(user_dir, roots.first().map(PathBuf::as_path), settings);
    // Skills' and plugins' folders are read (their files, their scripts run), never written.
    let read_only: Vec<PathBuf> = skills
        .skills
        .iter()
        .map(|skill| skill.path.clone())
        .chain(
            plugins(user_dir)
                .plugins
                .into_iter()
                .map(|plugin| plugin.root),
        )
        .collect();
    let workspace = Workspace::new(roots, extra).with_read_only(read_only);
    let ctx = ToolContext {
        user_memory_file: user_dir.map(|dir| dir.join("AGENTS.md")),
        editor,
        syntax: settings.syntax.clone(),
        shell_environment: Arc::new(shell_environment(settings, &workspace)),
        web_fetch: settings.web_fetch.clone(),
        diagnostics: settings.diagnostics.clone(),
        workspace: Arc::new(workspace),
        ..ToolContext::on_disk(Vec::new())
    };
    (ctx, Arc::new(skills))
}

/// What the processes the agent starts in `workspace` inherit, and the OS sandbox they run in:
/// writing in the workspace's roots and extra directories, with Tandem's user settings file and
/// saved sessions hidden (not the settings folder: the user's skills and commands live there).
pub fn shell_environment(settings: &AgentSettings, workspace: &Workspace) -> ShellEnvironment {
    let writable: Vec<PathBuf> = workspace
        .roots()
        .iter()
        .chain(workspace.extra())
        .cloned()
        .collect();
    let tandem_folders = [
        tandem_providers::settings::user_settings_path(),
        crate::store::SessionStore::default_state_dir(),
    ];
    let sandbox = Sandbox::new(
        settings.sandbox.clone(),
        writable,
        tandem_folders.into_iter().flatten().collect(),
    );
    ShellEnvironment::new(
        &settings.key_variables,
        &settings.shell.hide_env,
        &settings.shell.pass_env,
    )
    .with_sandbox(sandbox)
}

/// The agent's configuration for a session in `ctx`'s workspace: the system prompt (with the
/// memory files found from the roots), the environment for the first prompt (naming `model`,
/// the one the session talks to), the turn limit, the
/// approval policy and where custom commands are found. The `skills` found are named at the
/// end of the system prompt. `Err` when the system prompt cannot be built (a missing
/// replacement file); the strings beside the config are warnings for the user.
pub fn agent_config(
    ctx: &ToolContext,
    skills: &SkillSet,
    settings: &AgentSettings,
    model: Option<&tandem_providers::ModelConfig>,
) -> Result<(AgentConfig, Vec<String>), String> {
    let user_dir = ctx.user_memory_file.as_deref().and_then(Path::parent);
    let plugins = plugins(user_dir);
    let mut memory_config = settings.memory.config();
    memory_config.extra_files = plugins.context_files();
    let (mut system_prompt, memory) =
        system_prompt_with_memory(&ctx.workspace, &settings.system_prompt, &memory_config)?;
    if let Some(section) = skills.prompt_section() {
        system_prompt = format!("{}\n\n{section}", system_prompt.trim_end());
    }
    let mut approval = settings.approval.clone();
    approval
        .deny
        .extend(plugins.deny_rules().into_iter().map(crate::approval::Rule));
    let config = AgentConfig {
        system_prompt,
        max_turns: settings.max_turns,
        approval,
        environment: Some(environment_context(ctx.workspace.roots(), &today(), model)),
        context: settings.context.clone(),
        protected: crate::approval::protected::ProtectedPaths::for_user(),
        command_dirs: command_dirs(
            user_dir,
            ctx.workspace.roots().first().map(PathBuf::as_path),
        ),
        memory: memory_config,
        prompt: settings.system_prompt.clone(),
        next_speaker: settings.next_speaker_check,
        hooks: crate::hooks::Hooks::new(plugins.hooks(&settings.hooks)),
        // The host sets it for its front end (`HostOptions::one_shot`).
        ..AgentConfig::default()
    };
    let mut warnings = memory.warnings;
    warnings.extend(skills.warnings.iter().cloned());
    warnings.extend(plugins.warnings);
    Ok((config, warnings))
}

/// The tools a session in `ctx`'s workspace offers with `settings`: the built-in ones, and
/// those whose choices come from files and settings. MCP servers' tools join later
/// (`Session::set_mcp`). What could not be used is logged; see `session_tools_and_warnings`.
pub fn session_tools(
    ctx: &ToolContext,
    skills: &Arc<SkillSet>,
    settings: &AgentSettings,
) -> Vec<Arc<dyn Tool>> {
    let (tools, warnings) = session_tools_and_warnings(ctx, skills, settings);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    tools
}

/// `session_tools`, with the warnings for the user: agent files that could not be used, or
/// were skipped in an untrusted workspace.
pub fn session_tools_and_warnings(
    ctx: &ToolContext,
    skills: &Arc<SkillSet>,
    settings: &AgentSettings,
) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let diagnostics = ctx.diagnostics.enabled
        && ctx
            .language_servers
            .as_ref()
            .is_some_and(|servers| servers.available());
    let mut tools: Vec<Arc<dyn Tool>> = crate::tools::all()
        .into_iter()
        .filter(|tool| diagnostics || tool.name() != "diagnostics")
        .collect();
    if !skills.is_empty() {
        tools.push(Arc::new(
            tandem_extensions::skills::activate_skill::ActivateSkill::new(skills.clone()),
        ));
    }
    // The subagent tool comes last: its agents choose among the tools before it.
    let user_dir = ctx.user_memory_file.as_deref().and_then(Path::parent);
    let root = ctx.workspace.roots().first().map(PathBuf::as_path);
    let agents =
        crate::subagents::AgentSet::load(&agent_dirs(user_dir, root), settings.workspace_trusted);
    let env = |name: &str| std::env::var(name).ok();
    let models = |name: &str| {
        settings
            .model_settings
            .resolve_model(Some(name), &env)
            .and_then(tandem_providers::Model::new)
            .map_err(|error| error.to_string())
    };
    let (subagent, tool_warnings) =
        crate::subagent::Subagent::new(agents.agents, &tools, settings.subagents, &models);
    tools.push(Arc::new(subagent));
    let mut warnings = agents.warnings;
    warnings.extend(tool_warnings);
    (tools, warnings)
}

/// Where the custom agents of a session in `root` are found (see `subagents::AgentDirs`).
pub fn agent_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> crate::subagents::AgentDirs {
    let mut dirs =
        crate::subagents::AgentDirs::standard(dirs::home_dir().as_deref(), user_dir, root);
    dirs.plugins = plugins(user_dir).agent_dirs();
    dirs
}

/// The enabled plugins installed in the user's configuration directory `user_dir`
/// (`tandem plugins`), whose commands, agents, skills, hooks, MCP servers and memory files
/// every session gets.
pub fn plugins(user_dir: Option<&Path>) -> crate::plugins::PluginSet {
    crate::plugins::PluginSet::load(user_dir)
}

/// The MCP servers of a session in `root`: those other tools' files configure
/// (`importMcpServers`; a project's only in a trusted workspace), the plugins', then the
/// settings' own, which win over the others of the same name. With the problems met.
pub fn mcp_servers(
    user_dir: Option<&Path>,
    root: Option<&Path>,
    settings: &AgentSettings,
) -> (BTreeMap<String, crate::mcp::McpServerSettings>, Vec<String>) {
    let from = settings
        .import_mcp_servers
        .as_deref()
        .unwrap_or(&crate::mcp::imported::DEFAULT_IMPORTS);
    let imported = crate::mcp::imported::imported(
        dirs::home_dir().as_deref(),
        root,
        settings.workspace_trusted,
        from,
    );
    let mut servers = imported.servers;
    let plugins = plugins(user_dir);
    servers.extend(plugins.mcp_servers());
    servers.extend(settings.mcp_servers.clone());
    (servers, imported.warnings)
}

/// Where the custom commands of a session in `root` are found: the user's home (Gemini CLI's
/// and Claude Code's folders), Tandem's user configuration directory `user_dir`, and the
/// project.
pub fn command_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> CommandDirs {
    let mut dirs = CommandDirs::standard(dirs::home_dir().as_deref(), user_dir, root);
    dirs.plugins = plugins(user_dir).command_dirs();
    dirs
}

/// Where the skills of a session in `root` are found: the project's folders, Tandem's user
/// configuration directory `user_dir`, and the user's home (Claude Code's and Gemini CLI's
/// folders).
pub fn skill_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> SkillDirs {
    SkillDirs::standard(dirs::home_dir().as_deref(), user_dir, root)
        .with_plugins(&plugins(user_dir).skill_dirs())
}

/// The skills a session in `root` with `settings` would find, with the problems met.
pub fn skills(user_dir: Option<&Path>, root: Option<&Path>, settings: &AgentSettings) -> SkillSet {
    crate::skills::discover(&skill_dirs(user_dir, root), settings.workspace_trusted)
}

/// Where the sessions of the workspace whose first root is `root` are saved: under `state_dir`
/// (a front end's override, for tests), else `SessionStore::default_state_dir()`. `None` when
/// the `sessions.persist` setting is off or there is no state directory.
pub fn session_store(
    settings: &AgentSettings,
    root: &Path,
    state_dir: Option<&Path>,
) -> Option<crate::store::SessionStore> {
    if !settings.sessions.persist {
        return None;
    }
    let state_dir = match state_dir {
        Some(dir) => dir.to_path_buf(),
        None => crate::store::SessionStore::default_state_dir()?,
    };
    Some(crate::store::SessionStore::for_workspace(&state_dir, root))
}
