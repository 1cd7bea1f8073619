//! The `activate_skill` tool: the second step of a skill's progressive disclosure. The system
//! prompt names each skill with its description; when the model picks one, this returns the
//! instructions of its `SKILL.md` (read again now: the file may have changed since the session
//! started), where its folder is and which files it holds. The model reads those with
//! `read_file` (the folder is readable even outside the workspace, never writable) and runs
//! scripts with `shell`, through approvals as usual. Only sessions with skills offer it.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::skills::{read_skill_file, split_allowed_tools, SkillSet};
use tandem_tools::{
    cap, parse_args, schema_for, Location, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
};

/// Files listed from a skill's folder, at most; the rest are counted.
const MAX_FILES: usize = 200;
/// Folder levels listed below the skill's folder.
const MAX_DEPTH: usize = 4;
/// The whole output, at most (a `SKILL.md` is at most 256 KiB, the instructions a model
/// should take in at once far less).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

pub struct ActivateSkill {
    skills: Arc<SkillSet>,
    description: String,
}

impl ActivateSkill {
    /// The tool over the session's skills; its description names them.
    pub fn new(skills: Arc<SkillSet>) -> Self {
        let names: Vec<&str> = skills
            .skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect();
        let description = format!(
            "Activates a skill: returns its instructions, the path of its folder and the files \
             in it. Call it when the task matches a skill listed in the system prompt's Skills \
             section, before you start, then follow the instructions. Read the skill's files \
             with read_file (by their absolute paths) and run its scripts with shell. Skills: \
             {}.",
            names.join(", ")
        );
        ActivateSkill {
            skills,
            description,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill's name, exactly as the system prompt's Skills section lists it.
    name: String,
}

impl Tool for ActivateSkill {
    fn name(&self) -> &'static str {
        "activate_skill"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, args: &Value) -> String {
        match args.get("name").and_then(Value::as_str) {
            Some(name) => format!("Activate skill {name}"),
            None => "Activate skill".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Args { name } = parse_args(self.name(), args)?;
            let Some(skill) = self.skills.find(name.trim()) else {
                let known: Vec<&str> = self
                    .skills
                    .skills
                    .iter()
                    .map(|skill| skill.name.as_str())
                    .collect();
                return Err(ToolError::Respond(format!(
                    "there is no skill named `{name}`; the skills are: {}. Call activate_skill \
                     with one of these names",
                    known.join(", ")
                )));
            };
            let (file, folder) = (skill.file(), skill.path.clone());
            let read = {
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let (meta, body) = read_skill_file(&file)?;
                    Ok::<_, String>((meta, body, list_files(&folder)))
                })
            };
            let (meta, body, files) = read
                .await
                .map_err(|error| ToolError::Fatal(format!("reading the skill failed: {error}")))?
                .map_err(|problem| {
                    ToolError::Respond(format!(
                        "the skill `{}` cannot be read now ({}: {problem})",
                        skill.name,
                        file.display()
                    ))
                })?;
            let folder = skill.path.display();
            let mut text = format!("# Skill `{}`\n\nFolder: {folder}\n", skill.name);
            // As the file says now: it may have changed since the session started.
            let tools = split_allowed_tools(meta.allowed_tools);
            if !tools.is_empty() {
                text.push_str(&format!(
                    "Allowed tools (as the skill declares them; each call is still approved as \
                     usual): {}\n",
                    tools.join(", ")
                ));
            }
            text.push_str(&format!("\n{body}\n\n"));
            match &files {
                Files { listed, .. } if listed.is_empty() => {
                    text.push_str("The folder holds no other files.\n");
                }
                Files { listed, more } => {
                    text.push_str(&format!("Files in {folder}:\n"));
                    for file in listed {
                        text.push_str(&format!("- {file}\n"));
                    }
                    if *more > 0 {
                        text.push_str(&format!(
                            "[{more} more files not listed; use list_directory or glob on the \
                             folder to see them]\n"
                        ));
                    }
                }
            }
            text.push_str(&format!(
                "\nRead these files with read_file when the instructions call for them (their \
                 path is {folder}/<file>); the folder can be read but not written. Run the \
                 skill's scripts with shell, by their absolute path or with `cd {folder}` first.",
            ));
            Ok(ToolOutput {
                text: cap(
                    &text,
                    MAX_OUTPUT_BYTES,
                    &format!(
                        "Read {} with read_file for the rest.",
                        skill.file().display()
                    ),
                ),
                locations: vec![Location {
                    path: skill.file(),
                    line: None,
                }],
                diff: None,
                images: Vec::new(),
            })
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// A skill folder's files, relative, sorted.
struct Files {
    listed: Vec<String>,
    /// Files past `MAX_FILES`.
    more: usize,
}

/// The files under `folder` other than `SKILL.md`: hidden files and folders (`.git`) skipped,
/// links not followed, at most `MAX_DEPTH` levels down.
fn list_files(folder: &Path) -> Files {
    let walker = ignore::WalkBuilder::new(folder)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .max_depth(Some(MAX_DEPTH))
        .build();
    let mut all: Vec<String> = walker
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_type().is_some_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(folder).ok()?;
            let shown = relative.to_string_lossy().replace('\\', "/");
            (shown != "SKILL.md" && !shown.is_empty()).then_some(shown)
        })
        .collect();
    all.sort();
    let more = all.len().saturating_sub(MAX_FILES);
    all.truncate(MAX_FILES);
    Files { listed: all, more }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::skills::{discover, SkillDirs};
    use tandem_tools::testing::TestWorkspace;
    use tandem_tools::{read_file::ReadFile, write_file::WriteFile, Tool};

    /// A workspace, and a user's skill `release-notes` in a folder outside it.
    fn setup() -> (TestWorkspace, ActivateSkill, std::path::PathBuf) {
        let mut ws = TestWorkspace::new(&[("src/lib.rs", "fn main() {}\n")]);
        let config = ws.temp.path().join("config");
        let folder = config.join("skills/release");
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::create_dir_all(folder.join(".git")).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            "---\nname: release-notes\ndescription: Writes release notes.\nallowed-tools: \
             Read, Bash(git log:*)\n---\n\n# Release notes\n\nRun `scripts/changes.sh`, then \
             follow `template.md`.\n",
        )
        .unwrap();
        std::fs::write(
            folder.join("scripts/changes.sh"),
            "#!/bin/sh\necho changes\n",
        )
        .unwrap();
        std::fs::write(folder.join("template.md"), "## Changes\n").unwrap();
        std::fs::write(folder.join(".git/HEAD"), "ref\n").unwrap();
        let skills = discover(&SkillDirs::standard(None, Some(&config), None), true);
        assert!(skills.warnings.is_empty(), "{:?}", skills.warnings);
        let folder = std::fs::canonicalize(&folder).unwrap();
        let workspace = (*ws.ctx.workspace).clone().with_read_only([folder.clone()]);
        ws.ctx.workspace = Arc::new(workspace);
        (ws, ActivateSkill::new(Arc::new(skills)), folder)
    }

    #[tokio::test]
    async fn activation_returns_the_instructions_the_folder_and_its_files() {
        let (ws, tool, folder) = setup();
        assert!(tool.description().ends_with("Skills: release-notes."));
        let output = ws.call(&tool, json!({"name": "release-notes"})).await;
        let output = output.replace(&folder.display().to_string(), "$SKILL");
        expect![[r#"
            # Skill `release-notes`

            Folder: $SKILL
            Allowed tools (as the skill declares them; each call is still approved as usual): Read, Bash(git log:*)

            # Release notes

            Run `scripts/changes.sh`, then follow `template.md`.

            Files in $SKILL:
            - scripts/changes.sh
            - template.md

            Read these files with read_file when the instructions call for them (their path is $SKILL/<file>); the folder can be read but not written. Run the skill's scripts with shell, by their absolute path or with `cd $SKILL` first."#]]
        .assert_eq(&output);
    }

    #[tokio::test]
    async fn the_instructions_are_read_again_at_activation() {
        let (ws, tool, folder) = setup();
        std::fs::write(
            folder.join("SKILL.md"),
            "---\nname: release-notes\ndescription: Writes release notes.\n---\nNew steps.\n",
        )
        .unwrap();
        let output = ws.call(&tool, json!({"name": "release-notes"})).await;
        assert!(output.contains("\nNew steps.\n"), "{output}");
        std::fs::remove_file(folder.join("SKILL.md")).unwrap();
        let output = ws.call(&tool, json!({"name": "release-notes"})).await;
        assert!(
            output.starts_with("error: the skill `release-notes` cannot be read now"),
            "{output}"
        );
    }

    #[tokio::test]
    async fn an_unknown_name_lists_the_skills() {
        let (ws, tool, _) = setup();
        let output = ws.call(&tool, json!({"name": "deploy"})).await;
        expect![[r#"error: there is no skill named `deploy`; the skills are: release-notes. Call activate_skill with one of these names"#]]
            .assert_eq(&output);
        let output = ws.call(&tool, json!({"skill": "deploy"})).await;
        assert!(
            output.starts_with("error: invalid arguments for activate_skill"),
            "{output}"
        );
    }

    #[tokio::test]
    async fn the_skill_folder_is_readable_but_not_writable() {
        let (ws, _, folder) = setup();
        let template = folder.join("template.md").display().to_string();
        let read = ws.call(&ReadFile, json!({"path": template})).await;
        assert!(read.contains("## Changes"), "{read}");
        let write = ws
            .call(
                &WriteFile,
                json!({"path": template, "content": "changed\n"}),
            )
            .await;
        assert!(write.contains("is in a read-only folder"), "{write}");
        let edit = ws
            .call(
                &tandem_tools::edit::Edit,
                json!({"path": template, "old_string": "Changes", "new_string": "Nothing"}),
            )
            .await;
        assert!(edit.contains("is in a read-only folder"), "{edit}");
        let listed = ws
            .call(
                &tandem_tools::list_directory::ListDirectory,
                json!({"path": folder.display().to_string()}),
            )
            .await;
        assert!(listed.contains("template.md"), "{listed}");
        assert_eq!(
            std::fs::read_to_string(folder.join("template.md")).unwrap(),
            "## Changes\n"
        );
        // `..` out of the skill's folder is outside as ever.
        let escape = format!(
            "{}/../../../ws/../config/skills/release/../secret",
            folder.display()
        );
        let read = ws.call(&ReadFile, json!({"path": escape})).await;
        assert!(read.contains("is outside the workspace"), "{read}");
    }

    #[test]
    fn the_tool_reads_and_never_mutates() {
        let tool = ActivateSkill::new(Arc::default());
        assert_eq!((tool.kind(), tool.mutates()), (ToolKind::Read, false));
        assert_eq!(tool.title(&json!({"name": "x"})), "Activate skill x");
        assert_eq!(tool.title(&json!({})), "Activate skill");
    }
}
