//! A model that stops after announcing what it does next ("Now I'll run the tests.") goes on
//! by itself, through `tandem ask` against the scripted model server: the session sends
//! "Please continue." as the user, asks the model who speaks next only when the setting says
//! `model` and the answer's ending leaves it open, and never continues more than three times
//! in a row or when the setting is `off`.

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, ModelServer, Reply};

use super::headless::{self, Run};

/// The check's system instruction, which tells a check from a turn's request.
const CHECK_MARKER: &str = "who speaks next";

struct Case {
    name: &'static str,
    /// The `nextSpeakerCheck` setting; `None` leaves the default.
    setting: Option<&'static str>,
    /// The model's answers, one per turn request, in order (the last one repeats).
    answers: &'static [&'static str],
    /// What the model says when asked who speaks next.
    verdict: &'static str,
    /// The requests the server should see: `turn` or `check`, in order.
    requests: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "a plain announcement goes on by default",
        setting: None,
        answers: &[
            "The bug is in `parse`. Now I'll run the tests.",
            "The tests pass.",
        ],
        verdict: "",
        requests: &["turn", "turn"],
    },
    Case {
        name: "off never goes on",
        setting: Some("off"),
        answers: &["The bug is in `parse`. Now I'll run the tests.", "unused"],
        verdict: "",
        requests: &["turn"],
    },
    Case {
        name: "a question hands the turn back",
        setting: Some("model"),
        answers: &["Should I also fix the docs?", "unused"],
        verdict: r#"{"next_speaker": "model"}"#,
        requests: &["turn"],
    },
    Case {
        name: "an open ending is the model's to decide: it goes on",
        setting: Some("model"),
        answers: &["The remaining failures are:", "Both are fixed now."],
        verdict: r#"{"next_speaker": "model", "reasoning": "it was listing them"}"#,
        requests: &["turn", "check", "turn"],
    },
    Case {
        name: "an open ending is the model's to decide: the user speaks",
        setting: Some("model"),
        answers: &["The remaining failures are:", "unused"],
        verdict: r#"{"next_speaker": "user"}"#,
        requests: &["turn", "check"],
    },
    Case {
        name: "an open ending without the model check ends the turn",
        setting: Some("heuristic"),
        answers: &["The remaining failures are:", "unused"],
        verdict: r#"{"next_speaker": "model"}"#,
        requests: &["turn"],
    },
    Case {
        name: "a model that only ever announces is continued three times",
        setting: None,
        answers: &["Let me check the parser."],
        verdict: "",
        requests: &["turn", "turn", "turn", "turn"],
    },
];

fn system_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "system")
        .map(|message| message["content"].to_string())
        .collect()
}

fn is_check(request: &Value) -> bool {
    system_text(request).contains(CHECK_MARKER)
}

#[tokio::test]
async fn an_answer_that_announces_an_action_lets_the_model_go_on() {
    for case in CASES {
        let model = ModelServer::start().await;
        let (answers, verdict) = (case.answers, case.verdict);
        model.respond_with(move |request| {
            let request = request.json();
            if is_check(&request) {
                return Reply::openai_text(verdict);
            }
            let answered = request["messages"].as_array().map_or(0, |messages| {
                messages
                    .iter()
                    .filter(|message| message["role"] == "assistant")
                    .count()
            });
            Reply::openai_text(answers[answered.min(answers.len() - 1)])
        });
        let config = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let extra = match case.setting {
            Some(setting) => json!({ "nextSpeakerCheck": setting }),
            None => json!({}),
        };
        std::fs::write(
            config.path().join("settings.json"),
            scripted_settings(&model, extra).to_string(),
        )
        .unwrap();
        let mut command = headless::tandem(config.path(), state.path());
        command
            .current_dir(workspace.path())
            .env("HOME", config.path())
            .args(["ask", "Fix the parser."]);
        let run = Run::of(command.spawn().unwrap()).await;
        assert_eq!(run.code, 0, "{}: {run:#?}", case.name);

        let requests = model.chat_requests();
        let kinds: Vec<&str> = requests
            .iter()
            .map(|request| if is_check(request) { "check" } else { "turn" })
            .collect();
        assert_eq!(kinds, case.requests, "{}", case.name);
        for (index, request) in requests.iter().enumerate() {
            if is_check(request) {
                assert!(
                    request
                        .get("tools")
                        .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty)),
                    "{}: the check declares no tools",
                    case.name
                );
                let asked = request["messages"].to_string();
                assert!(asked.contains(answers[0]), "{}: {asked}", case.name);
                continue;
            }
            if index == 0 {
                continue;
            }
            // A continued turn's request ends with the model's answer and "Please continue.".
            let messages = request["messages"].as_array().unwrap();
            let last = messages.last().unwrap();
            assert_eq!(last["role"], "user", "{}", case.name);
            assert!(
                last["content"].to_string().contains("Please continue."),
                "{}: {last}",
                case.name
            );
            assert_eq!(messages[messages.len() - 2]["role"], "assistant");
        }
        // The user reads every answer of the turn.
        let turns = kinds.iter().filter(|kind| **kind == "turn").count();
        for answer in &case.answers[..turns.min(case.answers.len())] {
            assert!(run.stdout.contains(answer), "{}: {run:#?}", case.name);
        }
        assert!(!run.stdout.contains("unused"), "{}: {run:#?}", case.name);
    }
}
