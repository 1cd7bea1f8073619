//! Plugins end to end, through the built binary: a Claude Code plugin folder (in the exact
//! layout Claude Code reads: `.claude-plugin/plugin.json`, `commands/`, `skills/`, `agents/`,
//! `hooks/hooks.json`, `.mcp.json`, `${CLAUDE_PLUGIN_ROOT}` throughout) and a Gemini CLI
//! extension (`gemini-extension.json`, TOML commands, `GEMINI.md`, `excludeTools`) installed
//! with `tandem plugins install`, then every part they bring used by `tandem ask` against the
//! scripted model, listed by `tandem plugins list`, `tandem skills` and `tandem mcp list`,
//! disabled and removed.

use std::path::Path;

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, Reply};

use super::headless::Folders;

fn folders(model: &ModelServer) -> Folders {
    Folders::new(model, json!({"approval": {"mode": "yolo"}}))
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    if path.extension().is_some_and(|extension| extension == "sh") {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A Claude Code plugin with one of everything.
fn claude_plugin(root: &Path, probe: &Path) {
    write(
        root,
        ".claude-plugin/plugin.json",
        &json!({"name": "kit", "version": "1.0.0", "description": "A kit of everything",
                "author": {"name": "Ada"}})
        .to_string(),
    );
    write(
        root,
        "commands/hello.md",
        "---\ndescription: Say hello\nargument-hint: <name>\n---\n\
         Say hello to $ARGUMENTS from the kit.\n\n```!\n\"${CLAUDE_PLUGIN_ROOT}/scripts/greet.sh\" $ARGUMENTS\n```\n",
    );
    write(
        root,
        "scripts/greet.sh",
        "#!/bin/sh\necho \"the kit's script greets $1\"\n",
    );
    write(
        root,
        "skills/style/SKILL.md",
        "---\nname: style\ndescription: The kit's house style for code\n---\nUse tabs, never spaces.\n",
    );
    write(
        root,
        "agents/checker.md",
        "---\nname: checker\ndescription: Checks the kit's work\ntools: Read, Grep\n---\nYou check things.\n",
    );
    write(
        root,
        "hooks/hooks.json",
        &json!({"description": "Greets the session", "hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/hooks/start.sh\""}
        ]}]}})
        .to_string(),
    );
    write(
        root,
        "hooks/start.sh",
        "#!/bin/sh\necho \"the kit's hook ran in $CLAUDE_PLUGIN_ROOT\"\n",
    );
    std::fs::copy(probe, root.join("probe.mjs")).unwrap();
    write(
        root,
        ".mcp.json",
        &json!({"mcpServers": {"probe": {"command": "node",
                                         "args": ["${CLAUDE_PLUGIN_ROOT}/probe.mjs"]}}})
        .to_string(),
    );
}

fn system_text(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn declared(request: &Value) -> Vec<String> {
    super::mcp::declared(request)
}

/// The `agent` choices the `subagent` tool declares.
fn agents(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["function"]["name"] == "subagent")
        .and_then(|tool| tool["function"]["parameters"]["properties"]["agent"]["enum"].as_array())
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 41: a plugin folder with a command, a skill, an agent, a hook and an MCP server
/// installs as it is, and each part works in a session, under the plugin's name.
#[tokio::test]
async fn a_claude_code_plugin_installs_and_each_part_works() {
    let Some(probe) = super::mcp::probe() else {
        return;
    };
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let results = super::mcp::tool_results(&body);
        if results.is_empty() {
            Reply::openai_tool_calls(&[
                ("c_skill", "activate_skill", json!({"name": "kit:style"})),
                ("c_cwd", "mcp__plugin_kit_probe__cwd", json!({})),
            ])
        } else {
            Reply::openai_text("Hello, Ada.")
        }
    });
    let setup = folders(&model);
    let source = tempfile::tempdir().unwrap();
    claude_plugin(source.path(), &probe);

    let run = setup
        .run(&["plugins", "install", &source.path().display().to_string()])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    for said in [
        "Installed kit 1.0.0 (Claude Code plugin)",
        "commands: /kit:hello",
        "agents: kit:checker",
        "skills: kit:style",
        "hooks: SessionStart (1)",
        "MCP servers: plugin_kit_probe",
        "run as your own commands",
    ] {
        assert!(run.stdout.contains(said), "{said:?}: {run:#?}");
    }
    // What runs is the installed copy, not the source.
    std::fs::remove_dir_all(source.path()).unwrap();

    let run = setup.run(&["ask", "/hello Ada"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("Hello, Ada."), "{run:#?}");
    let requests = model.chat_requests();
    let first = &requests[0];
    let sent = first["messages"].to_string();
    assert!(sent.contains("Say hello to Ada from the kit."), "{sent}");
    assert!(sent.contains("the kit's script greets Ada"), "{sent}");
    assert!(sent.contains("the kit's hook ran in "), "{sent}");
    assert!(
        system_text(first).contains("- kit:style: The kit's house style for code"),
        "{}",
        system_text(first)
    );
    assert!(
        agents(first).contains(&"kit:checker".to_owned()),
        "{:?}",
        agents(first)
    );
    assert!(
        declared(first).contains(&"mcp__plugin_kit_probe__cwd".to_owned()),
        "{:?}",
        declared(first)
    );
    let results = super::mcp::tool_results(requests.last().unwrap());
    assert!(
        results[0].contains("Use tabs, never spaces."),
        "{results:?}"
    );
    assert!(
        results[1].starts_with(setup.root().to_str().unwrap()),
        "{results:?}"
    );

    let run = setup.run(&["plugins", "list"]).await;
    assert!(
        run.stdout
            .contains("kit 1.0.0 (Claude Code plugin, enabled)"),
        "{run:#?}"
    );
    let run = setup.run(&["skills"]).await;
    assert!(run.stdout.contains("kit:style (plugin kit)"), "{run:#?}");
    let run = setup.run(&["mcp", "list"]).await;
    assert!(
        run.stdout
            .contains("plugin_kit_probe (stdio, plugin kit): ready"),
        "{run:#?}"
    );
    let run = setup.run(&["ask", "/help"]).await;
    assert!(
        run.stdout
            .contains("/kit:hello <name> — Say hello (plugin kit)"),
        "{run:#?}"
    );

    // Disabled, it brings nothing; removed, it is gone.
    let run = setup.run(&["plugins", "disable", "kit"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let before = model.chat_requests().len();
    let run = setup.run(&["ask", "hi"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let request = &model.chat_requests()[before];
    assert!(!request.to_string().contains("kit"), "{request:#}");
    let run = setup.run(&["plugins", "remove", "kit"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let run = setup.run(&["plugins", "list", "--json"]).await;
    assert_eq!(run.stdout.trim(), "[]", "{run:#?}");
    let run = setup.run(&["plugins", "remove", "kit"]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["no plugin named `kit` is installed"]);
}

/// A Gemini CLI extension installs from a marketplace-less folder as it is: its TOML command
/// (plain name and namespaced), its `GEMINI.md` in the system prompt, its `excludeTools` as
/// deny rules. A git URL says what it would need.
#[tokio::test]
async fn a_gemini_cli_extension_installs_and_its_parts_work() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        if super::mcp::tool_results(&body).is_empty() {
            Reply::openai_tool_calls(&[("c_rm", "shell", json!({"command": "rm -rf build"}))])
        } else {
            Reply::openai_text("Deployed.")
        }
    });
    let setup = folders(&model);
    let source = tempfile::tempdir().unwrap();
    write(
        source.path(),
        "gemini-extension.json",
        &json!({"name": "gcp", "version": "0.3.0", "excludeTools": ["run_shell_command(rm -rf)"]})
            .to_string(),
    );
    write(
        source.path(),
        "GEMINI.md",
        "Always deploy to the staging project first.",
    );
    write(
        source.path(),
        "commands/deploy.toml",
        "description = \"Deploy the app\"\nprompt = \"Deploy {{args}} with gcloud.\"",
    );
    let run = setup
        .run(&["plugins", "install", &source.path().display().to_string()])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("Installed gcp 0.3.0 (Gemini CLI extension)"),
        "{run:#?}"
    );
    let run = setup.run(&["ask", "/deploy web"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model.chat_requests();
    assert!(
        system_text(&requests[0]).contains("Always deploy to the staging project first."),
        "{}",
        system_text(&requests[0])
    );
    assert!(
        requests[0]["messages"]
            .to_string()
            .contains("Deploy web with gcloud."),
        "{:#}",
        requests[0]
    );
    let results = super::mcp::tool_results(requests.last().unwrap());
    assert!(results[0].contains("shell:rm -rf"), "{results:?}");

    let run = setup
        .run(&["plugins", "install", "https://github.com/ada/gcp-extension"])
        .await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&[
        "needs the network",
        "git clone https://github.com/ada/gcp-extension",
    ]);
}
