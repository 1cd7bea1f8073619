//! `tandem demo`: the agent at work before anything is configured. It writes a small sample
//! project (shell functions whose test fails on a one-line bug) and runs one real agent turn in
//! it: Tandem's own tools run the test, read, search, edit and run the test again, while the
//! model's side is a bundled replay script (`demo/script.jsonl`, format in docs/replay.md). No
//! model is called, and the user's settings, memory files, trust and saved sessions play no
//! part: the session is set up from defaults, approvals are `yolo` inside the sample project
//! (the only workspace root), and nothing is saved. The turn prints as `tandem ask` prints it
//! (`ask::run_printed_turn`), on a terminal with colour, the spinner and the diff of what
//! changed; a banner before and after on stderr says it is a recording, where the project is,
//! what changed (the same diff summary, when stdout is not a terminal) and what to do next.

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use tandem_agent::approval::protected::ProtectedPaths;
use tandem_agent::environment::environment_context;
use tandem_agent::prompt::{system_prompt, PromptConfig};
use tandem_agent::settings::AgentSettings;
use tandem_agent::{
    setup, tools, AgentConfig, ApprovalMode, ApprovalPolicy, DiskEditor, Session, StopReason,
};
use tandem_providers::{Model, ModelConfig, ProviderKind};

use crate::ask;

/// The model's side of the session, one response a line.
const SCRIPT: &str = include_str!("../demo/script.jsonl");

/// The sample project, as written before the turn. The script's tool calls match it exactly.
const FILES: &[(&str, &str)] = &[
    ("README.md", include_str!("../demo/project/README.md")),
    ("math.sh", include_str!("../demo/project/math.sh")),
    ("test.sh", include_str!("../demo/project/test.sh")),
];

/// What the user asks, as the script answers it.
const PROMPT: &str = "`sh test.sh` fails. Find the bug, fix it and run the tests again.";

/// Where the script lies while the model reads it (`Model::new` loads a script from a file):
/// in the sample project, removed again before the turn starts.
const SCRIPT_FILE: &str = ".tandem-demo-script.jsonl";

/// More model requests than the script has responses: a script out of step ends the turn early
/// rather than never.
const MAX_TURNS: u32 = 10;

/// What to do after the demo, in the order a newcomer does it.
const NEXT_STEPS: &str = "\
Next, with a real model:
  tandem models     shows which model Tandem would use and what it still needs: set
                    ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_API_KEY, or start Ollama
                    (`ollama pull qwen3-coder`), which needs no key
  tandem ask \"…\"    works on the project in the current directory
  docs/editors.md   sets Tandem up in your editor";

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Where to write the sample project: a new or empty directory. Default: a new directory in
    /// the system's temporary directory, kept afterwards.
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Runs `tandem demo`: 0 when the recorded turn ends normally.
pub fn run(args: DemoArgs) -> Result<i32> {
    let root = project_dir(args.dir)?;
    for (name, text) in FILES {
        let path = root.join(name);
        fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }

    let script = root.join(SCRIPT_FILE);
    fs::write(&script, SCRIPT).with_context(|| format!("cannot write {}", script.display()))?;
    let mut config = ModelConfig::new(ProviderKind::Replay, "tandem-demo", "");
    config.id = "demo".to_owned();
    config.script = Some(script.clone());
    let model = Model::new(config);
    let removed = fs::remove_file(&script);
    let model = model?;
    removed.with_context(|| format!("cannot remove {}", script.display()))?;

    // Defaults, not the user's settings: the demo must run the same for everyone.
    let ctx = setup::tool_context(
        vec![root.clone()],
        &AgentSettings::default(),
        Arc::new(DiskEditor),
        None,
    );
    let config = AgentConfig {
        system_prompt: system_prompt(&PromptConfig::default(), None).map_err(|e| anyhow!(e))?,
        max_turns: MAX_TURNS,
        approval: ApprovalPolicy {
            mode: ApprovalMode::Yolo,
            ..ApprovalPolicy::default()
        },
        environment: Some(environment_context(
            ctx.workspace.roots(),
            &setup::today(),
            Some(model.config()),
        )),
        context: Default::default(),
        protected: ProtectedPaths::for_user(),
        // The user's commands and memory play no part in the demo.
        ..AgentConfig::default()
    };
    let mut session = Session::new(model, tools::all(), ctx, config);

    eprintln!(
        "This is a recorded demo: no model is called, and no key or settings are needed. A \
         scripted model\n(a replay, see docs/replay.md) fixes a failing test in a sample \
         project, while Tandem's real\ntools run the test, read, search and edit the files.\n\n\
         Sample project: {}\n\n> {PROMPT}\n",
        root.display()
    );
    let printed = ask::run_printed_turn(&mut session, PROMPT.to_owned(), root.clone(), false)?;

    eprintln!(
        "\nEnd of the recorded demo. The sample project is kept in {}",
        root.display()
    );
    // On a terminal the turn ended with the diff; elsewhere it is said here, on stderr.
    if !printed.summary_shown {
        let summary = printed.changes.summary(&root);
        match summary.is_empty() {
            true => eprintln!("The agent changed no file."),
            false => eprint!("{}", ask::plain(&summary)),
        }
    }
    let quoted = root.display().to_string().replace('\'', r"'\''");
    eprintln!("Run its tests yourself: cd '{quoted}' && sh test.sh\n\n{NEXT_STEPS}");

    if let Some(error) = printed.write_error {
        eprintln!("tandem: could not write to standard output: {error}");
        return Ok(1);
    }
    Ok(match printed.reason {
        StopReason::EndTurn => 0,
        StopReason::Error
        | StopReason::MaxTurns
        | StopReason::LoopDetected
        | StopReason::ResponseLimit => 1,
        StopReason::Cancelled => 130,
    })
}

/// The sample project's directory, canonical: `dir` when it is new or empty (created if need
/// be), else a new directory in the system's temporary directory. A directory with files in it
/// is refused: the demo writes files and lets a script run commands there.
fn project_dir(dir: Option<PathBuf>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => {
            match fs::read_dir(&dir) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        bail!(
                            "{} is not empty; give a new or empty directory for the sample \
                             project, or none for a temporary one",
                            dir.display()
                        );
                    }
                }
                Err(error) if error.kind() == ErrorKind::NotFound => fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?,
                Err(error) => {
                    return Err(error).with_context(|| {
                        format!("cannot use {} for the sample project", dir.display())
                    })
                }
            }
            dir
        }
        None => {
            let base = std::env::temp_dir();
            let pid = std::process::id();
            let mut created = None;
            for n in 0..100 {
                let dir = match n {
                    0 => base.join(format!("tandem-demo-{pid}")),
                    n => base.join(format!("tandem-demo-{pid}-{n}")),
                };
                match fs::create_dir(&dir) {
                    Ok(()) => {
                        created = Some(dir);
                        break;
                    }
                    Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
                    Err(error) => {
                        return Err(error)
                            .with_context(|| format!("cannot create {}", dir.display()))
                    }
                }
            }
            created.ok_or_else(|| {
                anyhow!(
                    "cannot create a new tandem-demo directory in {}; give one as DIR",
                    base.display()
                )
            })?
        }
    };
    fs::canonicalize(&dir).with_context(|| format!("cannot use {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tandem_providers::Script;

    use super::*;

    /// The sample file `path` names, as the demo writes it.
    fn sample(path: &str) -> &'static str {
        FILES
            .iter()
            .find(|(name, _)| *name == path)
            .map(|(_, text)| *text)
            .unwrap_or_else(|| panic!("the script names {path}, which the sample lacks"))
    }

    /// The bundled script parses, and its calls fit the sample: each file it names is one the
    /// demo writes, and each edit's old text is in the file exactly once when the edit runs.
    #[test]
    fn the_script_matches_the_sample_project() {
        Script::parse(SCRIPT, "demo/script.jsonl").unwrap();
        let mut files: Vec<(String, String)> = FILES
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
            .collect();
        let mut edits = 0;
        let lines = SCRIPT
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with("//"));
        for line in lines {
            let line: Value = serde_json::from_str(line).unwrap();
            for call in line["toolCalls"].as_array().into_iter().flatten() {
                let args = &call["arguments"];
                match call["name"].as_str().unwrap() {
                    "read_file" => {
                        sample(args["path"].as_str().unwrap());
                    }
                    "edit" => {
                        let path = args["path"].as_str().unwrap();
                        sample(path);
                        let old = args["old_string"].as_str().unwrap();
                        let new = args["new_string"].as_str().unwrap();
                        let text = &mut files.iter_mut().find(|(name, _)| name == path).unwrap().1;
                        assert_eq!(text.matches(old).count(), 1, "{old:?} in {path}");
                        *text = text.replacen(old, new, 1);
                        edits += 1;
                    }
                    "shell" => assert_eq!(args["command"], "sh test.sh"),
                    "grep" => {}
                    other => panic!("the demo does not expect a {other} call"),
                }
            }
        }
        assert_eq!(edits, 1);
    }
}
