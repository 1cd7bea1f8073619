//! The `subagent` tool: hands a self-contained task to a child session (see `child`) and
//! returns its final report, so that exploration does not fill the parent's context. The agents
//! it offers (the built-in `codebase_investigator` and the custom ones) are the choices of its
//! `agent` argument, listed with their descriptions in its description. A call mutates only when
//! the chosen agent has a mutating tool: read-only agents run in parallel and without asking.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tandem_providers::Model;

use super::{run_child, ChildReport, SubagentSettings};
use tandem_extensions::subagents::AgentDefinition;
use tandem_protocol::StopReason;
use tandem_tools::{
    cap, parse_args, schema_for, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
};

/// The report the parent reads is capped like any output.
const MAX_REPORT_BYTES: usize = 32 * 1024;

/// One agent as the tool offers it: its definition and the tools it gets.
struct Agent {
    definition: AgentDefinition,
    tools: Vec<Arc<dyn Tool>>,
    mutates: bool,
    /// The model its definition names; `None`: the parent's.
    model: Option<Model>,
}

/// Makes the model a definition names (a name from the settings' `models`, or
/// `provider:model`); `Err` says why it cannot be used.
pub type ModelResolver<'a> = &'a dyn Fn(&str) -> Result<Model, String>;

pub struct Subagent {
    agents: Vec<Agent>,
    description: String,
    limits: SubagentSettings,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Which agent does the task (see the tool's description).
    agent: String,
    /// The task, self-contained: the agent sees nothing of this conversation. Say what to find
    /// out or do, what you already know, and what the report should contain.
    task: String,
}

impl Subagent {
    /// The tool offering `agents`, each with the tools of `available` its definition allows
    /// (all of them but `subagent` when it names none: children never run subagents) and the
    /// model `models` makes of the one it names. The strings are warnings: tool names no tool
    /// answers to, and agents left out because their model cannot be used.
    pub fn new(
        agents: Vec<AgentDefinition>,
        available: &[Arc<dyn Tool>],
        limits: SubagentSettings,
        models: ModelResolver<'_>,
    ) -> (Subagent, Vec<String>) {
        let mut warnings = Vec::new();
        let usable = |tool: &&Arc<dyn Tool>| tool.name() != "subagent";
        let agents: Vec<Agent> = agents
            .into_iter()
            .filter_map(|definition| {
                let model = match definition.model.as_deref().map(models) {
                    None => None,
                    Some(Ok(model)) => Some(model),
                    Some(Err(error)) => {
                        let place = definition.path.as_ref().map_or_else(
                            || definition.name.clone(),
                            |path| path.display().to_string(),
                        );
                        warnings.push(format!(
                            "{place}: agent not loaded: its model cannot be used: {error}"
                        ));
                        return None;
                    }
                };
                let tools: Vec<Arc<dyn Tool>> = match &definition.tools {
                    None => available.iter().filter(usable).cloned().collect(),
                    Some(names) => {
                        for name in names {
                            if !available
                                .iter()
                                .filter(usable)
                                .any(|tool| tool.name() == name)
                            {
                                let place = definition.path.as_ref().map_or_else(
                                    || definition.name.clone(),
                                    |path| path.display().to_string(),
                                );
                                warnings.push(format!(
                                    "{place}: the agent `{}` names the tool `{name}`, which this \
                                     session does not have; left out",
                                    definition.name
                                ));
                            }
                        }
                        available
                            .iter()
                            .filter(usable)
                            .filter(|tool| names.iter().any(|name| name == tool.name()))
                            .cloned()
                            .collect()
                    }
                };
                let mutates = tools.iter().any(|tool| tool.mutates());
                Some(Agent {
                    definition,
                    tools,
                    mutates,
                    model,
                })
            })
            .collect();
        let mut description = String::from(
            "Hands a task to a subagent: a separate agent with its own context and tools that \
             works on it alone and answers with one report, which is all you get back (not the \
             files it read). Use it for exploration or side work that would otherwise fill your \
             context; give it a self-contained task, since it sees nothing of this \
             conversation. Read-only agents may run in parallel: call several at once for \
             independent questions. Subagents cannot ask the user anything. The agents:",
        );
        for agent in &agents {
            let tools: Vec<&str> = agent.tools.iter().map(|tool| tool.name()).collect();
            description.push_str(&format!(
                "\n- {}: {} (tools: {})",
                agent.definition.name,
                agent.definition.description,
                tools.join(", ")
            ));
        }
        let tool = Subagent {
            agents,
            description,
            limits,
        };
        (tool, warnings)
    }

    fn agent(&self, args: &Value) -> Option<&Agent> {
        let name = args.get("agent").and_then(Value::as_str)?;
        self.agents
            .iter()
            .find(|agent| agent.definition.name == name)
    }
}

impl Tool for Subagent {
    fn name(&self) -> &'static str {
        "subagent"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let mut schema = schema_for::<Args>();
        let names: Vec<Value> = self
            .agents
            .iter()
            .map(|agent| Value::String(agent.definition.name.clone()))
            .collect();
        if let Some(agent) = schema.pointer_mut("/properties/agent") {
            agent["enum"] = Value::Array(names);
        }
        schema
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn mutates(&self) -> bool {
        self.agents.iter().any(|agent| agent.mutates)
    }

    fn mutates_call(&self, args: &Value) -> bool {
        self.agent(args)
            .map_or(self.mutates(), |agent| agent.mutates)
    }

    fn title(&self, args: &Value) -> String {
        let agent = args
            .get("agent")
            .and_then(Value::as_str)
            .unwrap_or("subagent");
        match args.get("task").and_then(Value::as_str) {
            Some(task) => {
                let first = task.lines().next().unwrap_or("").trim();
                let short: String = first.chars().take(60).collect();
                let more = if short.len() < task.trim().len() {
                    "…"
                } else {
                    ""
                };
                format!("{agent}: {short}{more}")
            }
            None => agent.to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args("subagent", args)?;
            let Some(agent) = self
                .agents
                .iter()
                .find(|agent| agent.definition.name == args.agent)
            else {
                let names: Vec<&str> = self
                    .agents
                    .iter()
                    .map(|agent| agent.definition.name.as_str())
                    .collect();
                return Err(ToolError::Respond(format!(
                    "there is no agent named `{}`; the agents are: {}",
                    args.agent,
                    names.join(", ")
                )));
            };
            let parent = ctx.parent.as_ref().ok_or_else(|| {
                ToolError::Fatal("the subagent tool ran outside a session".to_owned())
            })?;
            let call_id = ctx.call_id.clone().unwrap_or_default();
            let report = run_child(
                &agent.definition,
                agent.tools.clone(),
                agent.model.clone().unwrap_or_else(|| parent.model.clone()),
                self.limits,
                &args.task,
                &call_id,
                ctx,
                parent,
            )
            .await;
            render(&agent.definition.name, &report, self.limits)
        })
    }

    /// The child's own calls are checked, each by the child's scheduler.
    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// The tool's result for `report`: the answer when the child finished, else why it stopped and
/// what it had; an error when the user cancelled it.
fn render(
    agent: &str,
    report: &ChildReport,
    limits: SubagentSettings,
) -> Result<ToolOutput, ToolError> {
    let answer = cap(
        &report.answer,
        MAX_REPORT_BYTES,
        "The report was cut; ask the agent for a shorter one.",
    );
    if report.stop_reason == StopReason::EndTurn {
        return Ok(ToolOutput::text(answer));
    }
    let why = match report.stop_reason {
        StopReason::Cancelled if report.timed_out => format!(
            "it ran out of time ({} seconds, the `subagents.timeoutSecs` setting)",
            limits.timeout_secs
        ),
        StopReason::Cancelled => {
            return Err(ToolError::Respond(format!(
                "cancelled by the user while the {agent} agent ran"
            )))
        }
        StopReason::MaxTurns => format!(
            "it used all {} model requests it may make (the `subagents.maxTurns` setting)",
            limits.max_turns
        ),
        StopReason::LoopDetected => "it was repeating itself".to_owned(),
        StopReason::ResponseLimit => "a response passed the size or time cap".to_owned(),
        StopReason::Error | StopReason::EndTurn => "it failed".to_owned(),
    };
    let calls = if report.calls.is_empty() {
        "none".to_owned()
    } else {
        report.calls.join("; ")
    };
    let answer = if answer.is_empty() {
        "(no answer yet)".to_owned()
    } else {
        answer
    };
    Ok(ToolOutput::text(format!(
        "The {agent} agent did not finish: {why}. Its last message:\n{answer}\n\nTool calls it \
         made: {calls}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_extensions::subagents::{codebase_investigator, AgentSource};

    fn custom(name: &str, tools: Option<&[&str]>) -> AgentDefinition {
        AgentDefinition {
            name: name.to_owned(),
            description: format!("{name} does things"),
            system_prompt: "Do things.".to_owned(),
            tools: tools.map(|tools| tools.iter().map(|&tool| tool.to_owned()).collect()),
            model: None,
            source: AgentSource::Project,
            path: None,
        }
    }

    fn tool() -> (Subagent, Vec<String>) {
        let mut available = tandem_tools::all();
        // As in a session: the tool list holds a subagent tool, which children never get.
        let (inner, _) = Subagent::new(Vec::new(), &[], SubagentSettings::default(), &no_models);
        available.push(Arc::new(inner));
        Subagent::new(
            vec![
                codebase_investigator(),
                custom("reader", Some(&["read_file", "subagent", "nope"])),
                custom("anything", None),
                AgentDefinition {
                    model: Some("ghost".to_owned()),
                    ..custom("haunted", None)
                },
            ],
            &available,
            SubagentSettings::default(),
            &no_models,
        )
    }

    fn no_models(name: &str) -> Result<Model, String> {
        Err(format!("there is no model named `{name}`"))
    }

    #[test]
    fn agents_are_choices_with_their_tools_and_mutation() {
        let (tool, warnings) = tool();
        assert_eq!(
            warnings,
            [
                "reader: the agent `reader` names the tool `subagent`, which this session does not have; left out",
                "reader: the agent `reader` names the tool `nope`, which this session does not have; left out",
                "haunted: agent not loaded: its model cannot be used: there is no model named `ghost`",
            ]
        );
        assert_eq!(
            tool.parameters()["properties"]["agent"]["enum"],
            serde_json::json!(["codebase_investigator", "reader", "anything"])
        );
        let description = tool.description();
        assert!(
            description.contains("\n- codebase_investigator: Explores the codebase read-only"),
            "{description}"
        );
        assert!(description.contains("\n- reader: reader does things (tools: read_file)"));
        assert!(!description.contains("subagent,"), "{description}");
        let call = |agent: &str| serde_json::json!({"agent": agent, "task": "look"});
        assert!(!tool.mutates_call(&call("codebase_investigator")));
        assert!(!tool.mutates_call(&call("reader")));
        assert!(tool.mutates_call(&call("anything")));
        assert!(tool.mutates());
        assert_eq!(tool.title(&call("reader")), "reader: look");
        assert!(tandem_tools::check_args(&tool, &call("ghost")).is_err());
    }

    #[test]
    fn a_report_says_why_the_child_stopped() {
        let report = |stop_reason, timed_out| ChildReport {
            stop_reason,
            answer: "Half done.".to_owned(),
            calls: vec!["Read a.rs".to_owned()],
            timed_out,
        };
        let limits = SubagentSettings::default();
        let text = |stop, timed_out| match render("x", &report(stop, timed_out), limits) {
            Ok(output) => output.text,
            Err(error) => format!("error: {error}"),
        };
        assert_eq!(text(StopReason::EndTurn, false), "Half done.");
        assert_eq!(
            text(StopReason::Cancelled, true),
            "The x agent did not finish: it ran out of time (300 seconds, the \
             `subagents.timeoutSecs` setting). Its last message:\nHalf done.\n\nTool calls it \
             made: Read a.rs"
        );
        assert_eq!(
            text(StopReason::Cancelled, false),
            "error: cancelled by the user while the x agent ran"
        );
        assert!(text(StopReason::MaxTurns, false).contains("all 25 model requests"));
    }
}
