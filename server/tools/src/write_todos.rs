//! The `write_todos` tool: the model's plan for the current task, replaced as a whole on every
//! call and kept in the session so the UI can show it and the model can re-read where it
//! stands. It touches no files, so it does not count as mutating.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::tool::{cap, parse_args, schema_for, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Todo, TodoStatus, ToolKind};

/// More items than this is not a plan any more; the model should group steps.
const MAX_TODOS: usize = 50;
/// The echoed checklist is capped like every output; the plan itself is kept in full.
const MAX_OUTPUT_BYTES: usize = 8 * 1024;

pub struct WriteTodos;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The whole plan, in order. It replaces the previous list, so include every item you
    /// want to keep (with its current status). An empty list clears the plan. At most 50
    /// items, and at most one `in_progress`.
    todos: Vec<Todo>,
}

impl Tool for WriteTodos {
    fn name(&self) -> &'static str {
        "write_todos"
    }

    fn description(&self) -> &'static str {
        "Records your plan for the current task as a checklist the user can follow. Use it for \
         work with three or more distinct steps: write the plan before you start, then call it \
         again whenever a step starts, finishes or is dropped. Each call replaces the whole \
         list, so always send every item with its current status: `pending`, `in_progress` \
         (at most one at a time: the step you are working on now), `completed` or `cancelled` \
         (no longer needed). An empty list clears the plan. Skip it for simple one-step \
         requests. At most 50 items. Returns the plan as a numbered checklist ([ ] pending, \
         [~] in progress, [x] completed, [-] cancelled) and a one-line summary of progress."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, args: &Value) -> String {
        match args.get("todos").and_then(Value::as_array).map(Vec::len) {
            Some(0) => "Clear plan".to_owned(),
            Some(1) => "Update plan (1 item)".to_owned(),
            Some(n) => format!("Update plan ({n} items)"),
            None => "Update plan".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Args { todos } = parse_args(self.name(), args)?;
            if todos.len() > MAX_TODOS {
                return Err(ToolError::Respond(format!(
                    "the plan has {} items; at most {MAX_TODOS} are allowed. Group small steps \
                     into larger ones, or drop completed and cancelled items, and call \
                     write_todos again",
                    todos.len()
                )));
            }
            // One line per item in the checklist, whatever whitespace the model sent.
            let todos: Vec<Todo> = todos
                .into_iter()
                .map(|todo| Todo {
                    description: todo
                        .description
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    status: todo.status,
                })
                .collect();
            let empty: Vec<String> = numbered(&todos, |todo| todo.description.is_empty())
                .map(|(number, _)| number.to_string())
                .collect();
            let which = match empty.as_slice() {
                [] => None,
                [one] => Some(format!("item {one} has an empty description")),
                many => Some(format!("items {} have empty descriptions", many.join(", "))),
            };
            if let Some(which) = which {
                return Err(ToolError::Respond(format!(
                    "{which}; give every item a few words saying what to do, and call \
                     write_todos again with the whole list"
                )));
            }
            let in_progress: Vec<String> =
                numbered(&todos, |todo| todo.status == TodoStatus::InProgress)
                    .map(|(number, todo)| format!("{number} ({:?})", todo.description))
                    .collect();
            if in_progress.len() > 1 {
                return Err(ToolError::Respond(format!(
                    "only one item can be in_progress at a time, but {} are: {}. Keep the one \
                     you are working on now as in_progress, mark the others pending (or \
                     completed), and call write_todos again with the whole list",
                    in_progress.len(),
                    in_progress.join(", ")
                )));
            }

            let text = if todos.is_empty() {
                "Cleared the plan: there are no todos now.".to_owned()
            } else {
                render(&todos)
            };
            ctx.session.set_todos(todos);
            Ok(ToolOutput::text(cap(
                &text,
                MAX_OUTPUT_BYTES,
                "The plan was saved in full; use shorter descriptions to see all of it.",
            )))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// The items matching `keep`, with their 1-based numbers as shown in the checklist.
fn numbered(todos: &[Todo], keep: impl Fn(&Todo) -> bool) -> impl Iterator<Item = (usize, &Todo)> {
    todos
        .iter()
        .enumerate()
        .filter(move |(_, todo)| keep(todo))
        .map(|(index, todo)| (index + 1, todo))
}

/// The numbered checklist and a one-line summary of where the plan stands (also what the
/// session's reminder shows).
pub fn render(todos: &[Todo]) -> String {
    let mut text = String::new();
    let (mut done, mut cancelled, mut pending) = (0, 0, 0);
    let mut current = None;
    for (index, todo) in todos.iter().enumerate() {
        let mark = match todo.status {
            TodoStatus::Pending => {
                pending += 1;
                "[ ]"
            }
            TodoStatus::InProgress => {
                current = Some(&todo.description);
                "[~]"
            }
            TodoStatus::Completed => {
                done += 1;
                "[x]"
            }
            TodoStatus::Cancelled => {
                cancelled += 1;
                "[-]"
            }
        };
        text.push_str(&format!("{}. {mark} {}\n", index + 1, todo.description));
    }
    text.push_str(&format!("{done} of {} done", todos.len()));
    if cancelled > 0 {
        text.push_str(&format!(", {cancelled} cancelled"));
    }
    match current {
        Some(description) => text.push_str(&format!("; working on: {description}")),
        None if pending > 0 => text.push_str(&format!("; {pending} pending, none in progress")),
        None => text.push_str("; nothing left to do"),
    }
    text
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    #[tokio::test]
    async fn plans_render_as_checklists() {
        let cases = [
            (
                json!({"todos": [
                    {"description": "Read the parser", "status": "completed"},
                    {"description": "  Add the\n  new rule ", "status": "in_progress"},
                    {"description": "Write tests", "status": "pending"},
                    {"description": "Update the changelog", "status": "cancelled"},
                    {"description": "Run clippy", "status": "pending"},
                ]}),
                expect![[r#"
                    1. [x] Read the parser
                    2. [~] Add the new rule
                    3. [ ] Write tests
                    4. [-] Update the changelog
                    5. [ ] Run clippy
                    1 of 5 done, 1 cancelled; working on: Add the new rule"#]],
            ),
            (
                json!({"todos": [
                    {"description": "Read the parser", "status": "completed"},
                    {"description": "Write tests", "status": "pending"},
                ]}),
                expect![[r#"
                    1. [x] Read the parser
                    2. [ ] Write tests
                    1 of 2 done; 1 pending, none in progress"#]],
            ),
            (
                json!({"todos": [
                    {"description": "Read the parser", "status": "completed"},
                    {"description": "Write tests", "status": "cancelled"},
                ]}),
                expect![[r#"
                    1. [x] Read the parser
                    2. [-] Write tests
                    1 of 2 done, 1 cancelled; nothing left to do"#]],
            ),
            (
                json!({"todos": []}),
                expect!["Cleared the plan: there are no todos now."],
            ),
        ];
        for (args, expect) in cases {
            let ws = TestWorkspace::new(&[]);
            let answer = ws.call(&WriteTodos, args.clone()).await;
            expect.assert_eq(&answer);
            // The session holds the normalised plan the checklist shows, in order.
            let saved = ws.ctx.session.todos();
            assert_eq!(saved.len(), args["todos"].as_array().unwrap().len());
            if !saved.is_empty() {
                assert_eq!(render(&saved), answer);
            }
        }
    }

    #[tokio::test]
    async fn a_call_replaces_the_plan_and_errors_keep_it() {
        let ws = TestWorkspace::new(&[]);
        ws.call(
            &WriteTodos,
            json!({"todos": [{"description": "First", "status": "in_progress"}]}),
        )
        .await;
        ws.call(
            &WriteTodos,
            json!({"todos": [{"description": "Second", "status": "pending"}]}),
        )
        .await;
        let plan = vec![Todo {
            description: "Second".to_owned(),
            status: TodoStatus::Pending,
        }];
        assert_eq!(ws.ctx.session.todos(), plan);
        let answer = ws
            .call(
                &WriteTodos,
                json!({"todos": [{"description": "", "status": "pending"}]}),
            )
            .await;
        assert!(answer.starts_with("error: "), "{answer}");
        assert_eq!(ws.ctx.session.todos(), plan);
    }

    #[tokio::test]
    async fn invalid_plans_are_refused_with_what_to_fix() {
        let too_many: Vec<Value> = (0..51)
            .map(|i| json!({"description": format!("Step {i}"), "status": "pending"}))
            .collect();
        let cases = [
            (
                json!({"todos": [
                    {"description": "A", "status": "in_progress"},
                    {"description": "B", "status": "pending"},
                    {"description": "C", "status": "in_progress"},
                ]}),
                expect![[r#"error: only one item can be in_progress at a time, but 2 are: 1 ("A"), 3 ("C"). Keep the one you are working on now as in_progress, mark the others pending (or completed), and call write_todos again with the whole list"#]],
            ),
            (
                json!({"todos": [
                    {"description": "A", "status": "pending"},
                    {"description": " \n ", "status": "pending"},
                ]}),
                expect!["error: item 2 has an empty description; give every item a few words saying what to do, and call write_todos again with the whole list"],
            ),
            (
                json!({"todos": [
                    {"description": "", "status": "pending"},
                    {"description": "A", "status": "pending"},
                    {"description": "\t", "status": "completed"},
                ]}),
                expect!["error: items 1, 3 have empty descriptions; give every item a few words saying what to do, and call write_todos again with the whole list"],
            ),
            (
                json!({"todos": too_many}),
                expect!["error: the plan has 51 items; at most 50 are allowed. Group small steps into larger ones, or drop completed and cancelled items, and call write_todos again"],
            ),
            (
                json!({"todos": [{"description": "A", "status": "done"}]}),
                expect!["error: invalid arguments for write_todos: unknown variant `done`, expected one of `pending`, `in_progress`, `completed`, `cancelled`"],
            ),
            (
                json!({"todos": [{"description": "A"}]}),
                expect!["error: invalid arguments for write_todos: missing field `status`"],
            ),
            (
                json!({}),
                expect!["error: invalid arguments for write_todos: missing field `todos`"],
            ),
        ];
        for (args, expect) in cases {
            let ws = TestWorkspace::new(&[]);
            expect.assert_eq(&ws.call(&WriteTodos, args).await);
            assert!(ws.ctx.session.todos().is_empty());
        }
    }

    #[test]
    fn titles() {
        let titles: Vec<String> = [
            json!({"todos": []}),
            json!({"todos": [{}]}),
            json!({"todos": [{}, {}]}),
            Value::Null,
        ]
        .iter()
        .map(|args| WriteTodos.title(args))
        .collect();
        expect![[
            r#"["Clear plan", "Update plan (1 item)", "Update plan (2 items)", "Update plan"]"#
        ]]
        .assert_eq(&format!("{titles:?}"));
    }
}
