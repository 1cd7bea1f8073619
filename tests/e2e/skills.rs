//! Skills through the front ends, against the scripted model server and real files: `tandem
//! ask` names the skills in the system prompt, the model activates one and runs its script
//! (a real `#!/bin/sh` file in a skill folder under the user's home, outside the workspace)
//! and the script's output reaches it; `tandem skills` lists the user's and the project's
//! skills, and only the user's in a workspace that is not trusted; the editor's
//! `tandem/skills`, the debug status and a session's system prompt in `tandem lsp`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};
use tempfile::TempDir;

use super::headless::{self, Run};

/// A user's configuration folder (also their home), a workspace and a state folder, with a
/// user skill `haiku` (Claude Code's folder in the home, with a script), a user skill `notes`
/// (Tandem's folder) and a project skill `lint-fix` (`.tandem/skills`).
struct Setup {
    config: TempDir,
    workspace: TempDir,
    state: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let setup = Setup {
            config: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        setup.settings(json!({}));
        let haiku = setup.home().join(".claude/skills/haiku");
        write(
            &haiku.join("SKILL.md"),
            "---\nname: haiku\ndescription: Writes a haiku about a season; use it when asked \
             for a poem.\nallowed-tools: Bash(sh:*)\n---\n# Haiku\n\nRun `scripts/syllables.sh \
             <season>` first and follow the pattern it prints.\n",
        );
        write(
            &haiku.join("scripts/syllables.sh"),
            "#!/bin/sh\necho \"syllables for $1: 5-7-5\"\n",
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let script = haiku.join("scripts/syllables.sh");
            std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        write(
            &setup.config.path().join("skills/notes/SKILL.md"),
            "---\nname: notes\ndescription: Keeps release notes.\n---\nAppend to NOTES.md.\n",
        );
        write(
            &setup.root().join(".tandem/skills/lint-fix/SKILL.md"),
            "---\nname: lint-fix\ndescription: Fixes lint warnings in this project.\n---\nRun \
             the linter.\n",
        );
        write(
            &setup.root().join(".claude/skills/broken/SKILL.md"),
            "---\nname: broken\n---\nNo description.\n",
        );
        setup
    }

    /// Writes the user settings file.
    fn settings(&self, settings: Value) {
        std::fs::write(self.settings_file(), settings.to_string()).unwrap();
    }

    fn settings_file(&self) -> PathBuf {
        self.config.path().join("settings.json")
    }

    fn home(&self) -> PathBuf {
        std::fs::canonicalize(self.config.path()).unwrap()
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.workspace.path()).unwrap()
    }

    /// `tandem` with this setup's folders, `HOME` included, in the workspace.
    fn tandem(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = headless::tandem(self.config.path(), self.state.path());
        command
            .current_dir(self.workspace.path())
            .env("HOME", self.config.path())
            .args(args);
        command
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The system instruction of an OpenAI-wire request.
fn system(request: &Value) -> String {
    request["messages"][0]["content"].to_string()
}

#[tokio::test]
async fn ask_activates_a_skill_and_runs_its_script_from_outside_the_workspace() {
    let model = ModelServer::start().await;
    let setup = Setup::new();
    setup.settings(scripted_settings(
        &model,
        json!({"approval": {"mode": "yolo"}, "trustedFolders": [setup.root()]}),
    ));
    let script = setup
        .home()
        .join(".claude/skills/haiku/scripts/syllables.sh");
    let command = format!("{} spring", script.display());
    model.respond_with(move |request| {
        match request.json()["messages"].as_array().map_or(0, Vec::len) {
            // system + user: the first request.
            2 => {
                Reply::openai_tool_calls(&[("call_1", "activate_skill", json!({"name": "haiku"}))])
            }
            4 => Reply::openai_tool_calls(&[("call_2", "shell", json!({"command": command}))]),
            _ => Reply::openai_text("An old silent pond."),
        }
    });

    let run = Run::of(
        setup
            .tandem(&["ask", "Write a haiku about spring."])
            .spawn()
            .unwrap(),
    )
    .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("An old silent pond."), "{run:#?}");
    run.assert_stderr_has(&["broken/SKILL.md: there is no `description` in the front matter"]);
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");

    let prompt = system(&requests[0]);
    for line in [
        "# Skills",
        "- haiku: Writes a haiku about a season; use it when asked for a poem.",
        "- lint-fix: Fixes lint warnings in this project.",
        "- notes: Keeps release notes.",
        "call `activate_skill` with its name",
    ] {
        assert!(prompt.contains(line), "{line:?} not in {prompt}");
    }
    assert!(!prompt.contains("broken"), "{prompt}");
    let tools = requests[0]["tools"].to_string();
    assert!(tools.contains("\"activate_skill\""), "{tools}");
    // The prompt is frozen: every request of the session sends the same one.
    assert!(requests.iter().all(|request| system(request) == prompt));

    let activated = requests[1]["messages"].to_string();
    let folder = setup.home().join(".claude/skills/haiku");
    for needle in [
        format!("Folder: {}", folder.display()),
        "Run `scripts/syllables.sh <season>` first".to_owned(),
        "- scripts/syllables.sh".to_owned(),
        "Allowed tools (as the skill declares them; each call is still approved as usual): Bash(sh:*)".to_owned(),
    ] {
        assert!(activated.contains(&needle), "{needle:?} not in {activated}");
    }
    let ran = requests[2]["messages"].to_string();
    assert!(ran.contains("syllables for spring: 5-7-5"), "{ran}");
}

#[tokio::test]
async fn tandem_skills_lists_user_and_project_skills_and_only_the_users_when_untrusted() {
    let model = ModelServer::start().await;
    let setup = Setup::new();
    let untrusted = Run::of(setup.tandem(&["skills"]).spawn().unwrap()).await;

    setup.settings(scripted_settings(
        &model,
        json!({"trustedFolders": [setup.root()]}),
    ));
    let trusted = Run::of(setup.tandem(&["skills"]).spawn().unwrap()).await;
    let json = Run::of(setup.tandem(&["skills", "--json"]).spawn().unwrap()).await;

    let home = setup.home().display().to_string();
    let root = setup.root().display().to_string();
    let shown = |run: &Run| {
        assert_eq!(run.code, 0, "{run:#?}");
        format!("{}---\n{}", run.stdout, run.stderr)
            .replace(&root, "$ROOT")
            .replace(&home, "$HOME")
    };
    expect_test::expect![[r#"
        haiku (user, claude): Writes a haiku about a season; use it when asked for a poem.
          $HOME/.claude/skills/haiku
        notes (user, tandem): Keeps release notes.
          $HOME/skills/notes
        ---
        warning: 2 skills in this workspace (.tandem/skills, .claude/skills, .gemini/skills) not loaded because the folder is not trusted; to use them, add the folder to `trustedFolders` in the user settings file
    "#]]
    .assert_eq(&shown(&untrusted));
    expect_test::expect![[r#"
        haiku (user, claude): Writes a haiku about a season; use it when asked for a poem.
          $HOME/.claude/skills/haiku
        lint-fix (project, tandem): Fixes lint warnings in this project.
          $ROOT/.tandem/skills/lint-fix
        notes (user, tandem): Keeps release notes.
          $HOME/skills/notes
        ---
        warning: $ROOT/.claude/skills/broken/SKILL.md: there is no `description` in the front matter (the model chooses a skill by its description); not loaded
    "#]]
    .assert_eq(&shown(&trusted));

    assert_eq!(json.code, 0, "{json:#?}");
    let listing: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        listing["skills"][1],
        json!({
            "name": "lint-fix",
            "description": "Fixes lint warnings in this project.",
            "path": setup.root().join(".tandem/skills/lint-fix"),
            "scope": "project",
            "source": "tandem",
        })
    );
    assert_eq!(listing["skills"][0]["allowedTools"], json!(["Bash(sh:*)"]));
    assert!(listing["warnings"][0]
        .as_str()
        .unwrap()
        .contains("broken/SKILL.md"));
}

#[tokio::test]
async fn the_editor_lists_skills_and_its_sessions_are_told_of_them() {
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Noted."));
    let setup = Setup::new();
    setup.settings(json!({"trustedFolders": [setup.root()]}));
    let editor = FakeEditor::rich()
        .workspace(&setup.root())
        .user_settings(&setup.settings_file())
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;

    let listed = editor.request("tandem/skills", json!({})).await.unwrap();
    let find = |name: &str| {
        listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|skill| skill["name"] == name)
            .unwrap_or_else(|| panic!("no skill {name} in {listed:#}"))
            .clone()
    };
    // The server reads the test process's own home too, so only ours are checked.
    assert_eq!(find("lint-fix")["scope"], "project");
    assert_eq!(find("notes")["source"], "tandem");
    assert!(
        listed["warnings"].to_string().contains("broken/SKILL.md"),
        "{listed}"
    );
    let status = editor
        .request("tandem/debug/status", json!({}))
        .await
        .unwrap();
    assert!(
        status["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|skill| skill["name"] == "lint-fix"),
        "{status:#}"
    );

    let started = editor
        .request("tandem/prompt", json!({"text": "Tidy up."}))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let prompt = system(&model.chat_requests()[0]);
    assert!(
        prompt.contains("- lint-fix: Fixes lint warnings in this project."),
        "{prompt}"
    );
    assert!(prompt.contains("- notes: Keeps release notes."), "{prompt}");
}
