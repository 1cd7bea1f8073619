//! Subagents through the front ends, against the scripted model server, which tells the parent's
//! requests from a child's by the system prompt: `tandem ask` runs the built-in investigator,
//! whose report (not the file it read) reaches the parent, and shows its calls; the editor gets
//! two investigators' events nested under their calls while both run at once, and cancels a
//! running child; a custom agent of a trusted workspace is offered, keeps to its tools, and is
//! not offered in an untrusted one.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply, Step};

use super::headless::{self, Run};

/// A line of the built-in investigator's system prompt.
const INVESTIGATOR: &str = "You are a codebase investigator";

fn system(request: &Value) -> String {
    request["messages"][0]["content"].to_string()
}

/// The contents of the request's tool results, in order.
fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The agents the request's `subagent` tool offers.
fn offered_agents(request: &Value) -> Value {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "subagent")
        .map(|tool| tool["function"]["parameters"]["properties"]["agent"]["enum"].clone())
        .unwrap_or(Value::Null)
}

fn subagent_call(id: &str, agent: &str, task: &str) -> (String, String, Value) {
    (
        id.to_owned(),
        "subagent".to_owned(),
        json!({"agent": agent, "task": task}),
    )
}

fn tool_calls(calls: &[(String, String, Value)]) -> Reply {
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    Reply::openai_tool_calls(&calls)
}

/// A user settings directory, a state directory, an empty home and a workspace for `tandem ask`.
struct Ask {
    config: tempfile::TempDir,
    state: tempfile::TempDir,
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Ask {
    fn new(model: &ModelServer, extra: Value, files: &[(&str, &str)]) -> Ask {
        let ask = Ask {
            config: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        };
        std::fs::write(
            ask.config.path().join("settings.json"),
            scripted_settings(model, extra).to_string(),
        )
        .unwrap();
        for (path, text) in files {
            let path = ask.workspace.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        ask
    }

    fn root(&self) -> std::path::PathBuf {
        std::fs::canonicalize(self.workspace.path()).unwrap()
    }

    async fn run(&self, prompt: &str, flags: &[&str]) -> Run {
        let mut command = headless::tandem(self.config.path(), self.state.path());
        command
            .current_dir(self.workspace.path())
            .env("HOME", self.home.path())
            .args(["ask"])
            .args(flags)
            .arg(prompt);
        Run::of(command.spawn().unwrap()).await
    }
}

/// The investigator reads a file and reports; the parent's next request carries the report
/// and not the file. Its calls are shown indented under the parent's, and with `--json` every
/// child event comes nested under the parent's call, its token counts included.
#[tokio::test]
async fn ask_runs_the_investigator_and_the_parent_gets_only_its_report() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let results = tool_results(&body);
        if system(&body).contains(INVESTIGATOR) {
            if results.is_empty() {
                Reply::openai_tool_calls(&[("r1", "read_file", json!({"path": "src/answer.txt"}))])
            } else {
                Reply::openai_text("The secret is defined at src/answer.txt:1.")
                    .openai_usage(321, 12)
            }
        } else if results.is_empty() {
            tool_calls(&[subagent_call(
                "s1",
                "codebase_investigator",
                "Where is the secret defined?",
            )])
        } else {
            Reply::openai_text("Found it.")
        }
    });
    let ask = Ask::new(
        &model,
        json!({}),
        &[("src/answer.txt", "The secret is KUMQUAT-42.\n")],
    );

    let run = ask.run("Where is the secret?", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout.trim(), "Found it.", "{run:#?}");
    run.assert_stderr_has(&[
        "→ codebase_investigator: Where is the secret defined?",
        "    codebase_investigator: ✓ Read src/answer.txt",
        "✓ codebase_investigator: Where is the secret defined?",
    ]);
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 4);
    let (parent_first, child_first, child_second, parent_last) =
        (&requests[0], &requests[1], &requests[2], &requests[3]);
    assert_eq!(
        offered_agents(parent_first),
        json!(["codebase_investigator"])
    );
    assert!(tool_names(parent_first).contains(&"shell".to_owned()));
    assert_eq!(
        tool_names(child_first),
        [
            "read_file",
            "read_many_files",
            "list_directory",
            "glob",
            "grep",
            "outline",
            "find_symbol",
            "references",
            "repo_map"
        ]
    );
    // The child sees only its task, not the parent's conversation.
    assert!(child_first["messages"]
        .to_string()
        .contains("Where is the secret defined?"));
    assert!(!child_first["messages"]
        .to_string()
        .contains("Where is the secret?\""));
    assert!(child_second["messages"].to_string().contains("KUMQUAT-42"));
    assert_eq!(
        tool_results(parent_last),
        ["The secret is defined at src/answer.txt:1."]
    );
    assert!(!parent_last.to_string().contains("KUMQUAT-42"));

    let run = ask.run("Where is the secret?", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let nested: Vec<Value> = run
        .json_lines()
        .into_iter()
        .filter(|event| event["type"] == "subagent")
        .collect();
    assert!(nested
        .iter()
        .all(|event| event["parentCallId"] == "s1" && event["agent"] == "codebase_investigator"));
    let kinds: Vec<&str> = nested
        .iter()
        .map(|event| event["event"]["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"toolCall"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"turnFinished"), "{kinds:?}");
    let usage = nested
        .iter()
        .find(|event| event["event"]["type"] == "usage" && event["event"]["inputTokens"] == 321);
    assert!(usage.is_some(), "{nested:#?}");
}

async fn editor(model: &ModelServer) -> FakeEditor {
    let editor = FakeEditor::rich()
        .settings(scripted_settings(model, json!({})))
        .start()
        .await;
    editor.write_file("src/a.rs", "fn alpha() {}\n");
    editor
}

/// Two investigators run at once: the first child's answer is held until the second child's
/// request arrived (else its connection fails and so does its report). Both reports reach the
/// parent, and each child's events reach the editor nested under its own call.
#[tokio::test]
async fn two_investigators_run_in_parallel_and_the_editor_sees_their_events_nested() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let messages = body["messages"].to_string();
        if system(&body).contains(INVESTIGATOR) {
            if messages.contains("ALPHA-TASK") {
                let reply = Reply::openai_text("alpha is at src/a.rs:1.");
                let wait = Step::AwaitRequests {
                    count: 3,
                    within: Duration::from_secs(10),
                };
                Reply {
                    steps: std::iter::once(wait).chain(reply.steps.clone()).collect(),
                    ..reply
                }
            } else {
                Reply::openai_text("beta is nowhere.")
            }
        } else if tool_results(&body).is_empty() {
            tool_calls(&[
                subagent_call("s1", "codebase_investigator", "Find alpha (ALPHA-TASK)."),
                subagent_call("s2", "codebase_investigator", "Find beta (BETA-TASK)."),
            ])
        } else {
            Reply::openai_text("Both done.")
        }
    });
    let editor = editor(&model).await;
    let started = editor
        .request("tandem/prompt", json!({"text": "Find alpha and beta."}))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        tool_results(&requests[3]),
        ["alpha is at src/a.rs:1.", "beta is nowhere."]
    );
    let events = editor.events_for_turn(&turn);
    for call in ["s1", "s2"] {
        let nested: Vec<&Value> = events
            .iter()
            .filter(|event| event["type"] == "subagent" && event["parentCallId"] == call)
            .collect();
        assert!(
            nested
                .iter()
                .any(|event| event["event"]["type"] == "textChunk"),
            "{call}: {nested:#?}"
        );
        assert_eq!(
            nested
                .last()
                .map(|event| event["event"]["stopReason"].clone()),
            Some(json!("end_turn")),
            "{call}"
        );
    }
}

/// Cancelling the turn while a child waits for its model stops the child: its request is
/// abandoned, the parent's call ends cancelled, and no request follows.
#[tokio::test]
async fn cancelling_the_turn_stops_a_running_subagent() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        if system(&body).contains(INVESTIGATOR) {
            Reply {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                steps: vec![Step::Hang],
            }
        } else {
            tool_calls(&[subagent_call("s1", "codebase_investigator", "Find alpha.")])
        }
    });
    let editor = editor(&model).await;
    let started = editor
        .request("tandem/prompt", json!({"text": "Find alpha."}))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    model.wait_for_requests(2).await;
    editor
        .request(
            "tandem/cancel",
            json!({"sessionId": started["sessionId"].clone()}),
        )
        .await
        .unwrap();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "cancelled", "{finished}");
    model.wait_for_disconnects(1).await;
    let call = editor
        .events_for_turn(&turn)
        .into_iter()
        .rfind(|event| event["type"] == "toolCall" && event["callId"] == "s1")
        .unwrap();
    assert_eq!(call["status"], "cancelled", "{call:#}");
    assert_eq!(model.chat_requests().len(), 2);
}

const READER: &str = "---\nname: reader\ndescription: Reads files for you\ntools: Read\n\
                      model: small\n---\nYou are the reader agent. Read what you are asked to.\n";

/// Trusts `root`, and adds the model `small` the reader agent names.
fn trusted(model: &ModelServer, root: &Path) -> Value {
    let base_url = format!("{}/v1", model.url());
    json!({
        "trustedFolders": [root],
        "models": {
            "scripted": {"provider": "openai", "model": "m", "baseUrl": base_url},
            "small": {"provider": "openai", "model": "m-small", "baseUrl": base_url},
        },
    })
}

/// A trusted workspace's agent is offered with only the tools it names, and runs on the model
/// it names; the shell it tries is no tool of its. An untrusted workspace's agent is not
/// offered at all, and the user is told.
#[tokio::test]
async fn a_custom_agent_keeps_to_its_tools_and_needs_a_trusted_workspace() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let results = tool_results(&body);
        if system(&body).contains("You are the reader agent") {
            if results.is_empty() {
                Reply::openai_tool_calls(&[("x1", "shell", json!({"command": "ls"}))])
            } else {
                Reply::openai_text("I have no shell.")
            }
        } else if offered_agents(&body).to_string().contains("reader") && results.is_empty() {
            tool_calls(&[subagent_call("s1", "reader", "List the files.")])
        } else {
            Reply::openai_text("ok")
        }
    });
    let files = [(".tandem/agents/reader.md", READER)];

    let untrusted = Ask::new(&model, json!({}), &files);
    let run = untrusted.run("List the files.", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&[
        "warning: 1 agent file(s) of this workspace were not loaded because the folder is not \
         trusted",
    ]);
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        offered_agents(&requests[0]),
        json!(["codebase_investigator"])
    );

    let ask = Ask::new(&model, json!({}), &files);
    let settings = scripted_settings(&model, trusted(&model, &ask.root()));
    std::fs::write(
        ask.config.path().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let run = ask.run("List the files.", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["    reader: ✗ shell: there is no tool named `shell`"]);
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    assert_eq!(
        offered_agents(&requests[1]),
        json!(["codebase_investigator", "reader"])
    );
    assert_eq!(tool_names(&requests[2]), ["read_file", "read_many_files"]);
    assert_eq!(requests[2]["model"], "m-small");
    assert_eq!(requests[1]["model"], "m");
    assert_eq!(
        tool_results(&requests[3]),
        ["Error: there is no tool named `shell`; the tools are: read_file, read_many_files"]
    );
    assert_eq!(tool_results(&requests[4]), ["I have no shell."]);
}

const RUNNER: &str = "---\nname: runner\ndescription: Runs commands\ntools: Bash\n---\n\
                      You are the runner agent.\n";

/// A child past its deadline is stopped and the parent told so; a child's call that needs
/// approval is not run (nobody can answer a child), and the child is told to report it.
#[tokio::test]
async fn a_subagent_stops_at_its_deadline_and_cannot_ask_for_approval() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let results = tool_results(&body);
        let system = system(&body);
        if system.contains(INVESTIGATOR) {
            Reply {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                steps: vec![Step::Hang],
            }
        } else if system.contains("You are the runner agent") {
            if results.is_empty() {
                Reply::openai_tool_calls(&[("x1", "shell", json!({"command": "echo hi"}))])
            } else {
                Reply::openai_text("I need `echo hi` run.")
            }
        } else if results.is_empty() {
            let messages = body["messages"].to_string();
            let agent = if messages.contains("Investigate") {
                "codebase_investigator"
            } else {
                "runner"
            };
            tool_calls(&[subagent_call("s1", agent, "Do it.")])
        } else {
            Reply::openai_text("ok")
        }
    });
    let ask = Ask::new(&model, json!({}), &[(".tandem/agents/runner.md", RUNNER)]);
    let mut extra = trusted(&model, &ask.root());
    extra["subagents"] = json!({"timeoutSecs": 1});
    extra["approval"] = json!({"allow": ["subagent"]});
    let settings = scripted_settings(&model, extra);
    std::fs::write(
        ask.config.path().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();

    let run = ask.run("Investigate.", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let last = model.chat_requests().pop().unwrap();
    let report = &tool_results(&last)[0];
    assert!(
        report.starts_with(
            "The codebase_investigator agent did not finish: it ran out of time (1 seconds, the \
             `subagents.timeoutSecs` setting)."
        ),
        "{report}"
    );

    let before = model.chat_requests().len();
    let run = ask.run("Run it.", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model.chat_requests();
    let child_second = &requests[before + 2];
    let refusal = &tool_results(child_second)[0];
    assert!(
        refusal.contains("needs the user's approval, and subagents cannot ask for approval; report back what you need done"),
        "{refusal}"
    );
    assert_eq!(
        tool_results(requests.last().unwrap()),
        ["I need `echo hi` run."]
    );
}

/// A plain client, without `tandem/event`, follows the child in the turn's `$/progress`.
#[tokio::test]
async fn a_plain_client_sees_what_the_subagent_does_in_progress() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        let results = tool_results(&body);
        if system(&body).contains(INVESTIGATOR) {
            if results.is_empty() {
                Reply::openai_tool_calls(&[("r1", "read_file", json!({"path": "src/a.rs"}))])
            } else {
                Reply::openai_text("alpha is at src/a.rs:1.")
            }
        } else if results.is_empty() {
            tool_calls(&[subagent_call("s1", "codebase_investigator", "Find alpha.")])
        } else {
            Reply::openai_text("Done.")
        }
    });
    let editor = FakeEditor::plain()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/a.rs", "fn alpha() {}\n").await;
    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": tandem_test_support::editor::range(0, 3, 0, 8), "instruction": "Where is alpha?"}],
        }))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let end = editor.wait_turn_finished(&turn).await;
    assert_eq!(end["kind"], "end");
    let messages: Vec<String> = editor
        .received_params("$/progress")
        .into_iter()
        .filter_map(|params| params["value"]["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        messages.contains(&"codebase_investigator: Find alpha.: Read src/a.rs".to_owned()),
        "{messages:#?}"
    );
}
