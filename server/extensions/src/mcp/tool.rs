//! `McpTool`: one tool of an MCP server, as a `Tool` the model can call. Its schema is the
//! server's `inputSchema` made safe for every provider; a call goes through the manager (which
//! restarts a dropped server once), honours cancellation, forwards progress, and turns the
//! result into text.
//!
//! An MCP tool counts as mutating: it may do anything, so calls run one at a time and are
//! asked about unless the server is trusted, an allow rule names it, or the mode is yolo. The
//! server's annotations (`readOnlyHint`…) are its own claims: recorded, not trusted.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmcp::model::{ProgressNotificationParam, ToolAnnotations};
use serde_json::{Map, Value};

use super::client::ProgressCallback;
use super::content;
use super::manager::McpManager;
use tandem_tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// A tool of an MCP server.
pub struct McpTool {
    manager: Weak<McpManager>,
    server: String,
    /// The server's name for it.
    tool: String,
    /// The model's name for it (`mcp__<server>__<tool>`).
    name: String,
    description: String,
    parameters: Value,
    trusted: bool,
    annotations: Option<ToolAnnotations>,
}

impl McpTool {
    pub(crate) fn new(
        manager: Weak<McpManager>,
        server: String,
        tool: &rmcp::model::Tool,
        name: String,
        trusted: bool,
    ) -> McpTool {
        let own = tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
            .or_else(|| tool.title.clone());
        let origin = format!("tool \"{}\" of the MCP server \"{server}\"", tool.name);
        let description = match own {
            Some(own) => format!("{own}\n\n(The {origin}.)"),
            None => format!("The {origin}."),
        };
        let schema = Value::Object((*tool.input_schema).clone());
        McpTool {
            manager,
            tool: tool.name.to_string(),
            name,
            description,
            parameters: tandem_providers::schema::object_parameters(&schema),
            trusted,
            annotations: tool.annotations.clone(),
            server,
        }
    }

    /// The server the tool belongs to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The server's name for the tool.
    pub fn original_name(&self) -> &str {
        &self.tool
    }

    /// The server's annotations (`readOnlyHint`, `destructiveHint`…): its claims about the
    /// tool, shown to users, never used to skip an approval.
    pub fn annotations(&self) -> Option<&ToolAnnotations> {
        self.annotations.as_ref()
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn mutates(&self) -> bool {
        true
    }

    /// Yes: the server reads the workspace's files from the disk, if at all.
    fn reads_disk(&self) -> bool {
        true
    }

    fn trusted(&self) -> bool {
        self.trusted
    }

    fn title(&self, _args: &Value) -> String {
        format!("{}: {}", self.server, self.tool)
    }

    fn approval_details(&self, args: &Value) -> String {
        let json = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        tandem_sandbox::approval::shown::visible(&format!(
            "The MCP server \"{}\" runs its tool \"{}\" ({}), with these arguments:\n{json}",
            self.server, self.tool, self.name
        ))
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments = match args {
                Value::Object(arguments) => arguments,
                Value::Null => Map::new(),
                other => {
                    return Err(ToolError::Respond(format!(
                        "the arguments of {} must be a JSON object, not {other}",
                        self.name
                    )))
                }
            };
            let Some(manager) = self.manager.upgrade() else {
                return Err(ToolError::Respond(format!(
                    "{} is no longer available: the MCP servers were shut down",
                    self.name
                )));
            };
            let progress = ctx.progress.clone().map(|sink| {
                Arc::new(move |params: &ProgressNotificationParam| sink(progress_message(params)))
                    as ProgressCallback
            });
            let result = manager
                .call_tool(&self.server, &self.tool, arguments, &ctx.cancel, progress)
                .await
                .map_err(|error| ToolError::Respond(error.to_string()))?;
            content::tool_result(&self.server, &result)
                .map(ToolOutput::text)
                .map_err(ToolError::Respond)
        })
    }

    /// What a server's tool writes is the server's to know; its calls ask as changes do.
    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

/// A progress notification as a short message: `3/5: Indexing`, `3/5`, or `3: Indexing`
/// without a total.
pub(crate) fn progress_message(params: &ProgressNotificationParam) -> String {
    let number = |value: f64| {
        if value.fract() == 0.0 && value.abs() < 1e15 {
            format!("{}", value as i64)
        } else {
            format!("{value}")
        }
    };
    let count = match params.total {
        Some(total) => format!("{}/{}", number(params.progress), number(total)),
        None => number(params.progress),
    };
    match params
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(message) => format!("{count}: {message}"),
        None => count,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(value: Value) -> McpTool {
        let tool: rmcp::model::Tool = serde_json::from_value(value).unwrap();
        McpTool::new(
            Weak::new(),
            "github".to_owned(),
            &tool,
            "mcp__github__create_issue".to_owned(),
            false,
        )
    }

    #[test]
    fn a_server_tool_as_the_model_and_the_user_see_it() {
        let tool = tool(json!({
            "name": "create_issue",
            "description": "Creates an issue.",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"repo": {"$ref": "#/$defs/Repo"}, "title": {"type": "string"}},
                "required": ["repo", "title"],
                "$defs": {"Repo": {"type": "string", "description": "owner/name"}}
            },
            "annotations": {"readOnlyHint": true}
        }));
        assert_eq!(tool.name(), "mcp__github__create_issue");
        assert_eq!(
            tool.description(),
            "Creates an issue.\n\n(The tool \"create_issue\" of the MCP server \"github\".)"
        );
        assert_eq!(
            tool.parameters(),
            json!({
                "type": "object",
                "properties": {
                    "repo": {"type": "string", "description": "owner/name"},
                    "title": {"type": "string"}
                },
                "required": ["repo", "title"]
            })
        );
        // The server's claim is recorded; the tool is still mutating and asked about.
        assert_eq!(
            tool.annotations().and_then(|a| a.read_only_hint),
            Some(true)
        );
        assert!(tool.mutates());
        assert!(!tool.trusted());
        assert_eq!(tool.kind(), ToolKind::Other);
        assert_eq!(tool.title(&json!({})), "github: create_issue");
        let details = tool.approval_details(&json!({"repo": "a/b", "title": "x\u{202e}y"}));
        assert!(details.starts_with("The MCP server \"github\" runs its tool \"create_issue\""));
        assert!(!details.contains('\u{202e}'), "{details}");
    }

    /// The session validates the model's arguments against the schema before a call, so the
    /// normalised schema must compile and mean what the server's did.
    #[test]
    fn arguments_are_checked_against_the_normalised_schema() {
        let tool = tool(json!({
            "name": "tag",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {
                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                    "owner": {"$ref": "#/definitions/User"}
                },
                "required": ["owner"],
                "definitions": {"User": {"type": "object", "properties": {
                    "login": {"type": "string"}}, "required": ["login"]}}
            }
        }));
        let check = |args: Value| tandem_tools::check_args(&tool, &args);
        assert_eq!(
            check(json!({"owner": {"login": "me"}, "pair": ["a", 1]})),
            Ok(())
        );
        assert!(check(json!({"owner": {}})).unwrap_err().contains("login"));
        assert!(check(json!({"owner": {"login": "me"}, "pair": [1, "a"]})).is_err());
    }

    #[test]
    fn a_tool_without_a_description_or_schema_properties() {
        let tool = tool(json!({"name": "ping", "inputSchema": {"type": "object"}}));
        assert_eq!(
            tool.description(),
            "The tool \"ping\" of the MCP server \"github\"."
        );
        assert_eq!(
            tool.parameters(),
            json!({"type": "object", "properties": {}})
        );
    }

    #[tokio::test]
    async fn a_call_after_the_manager_is_gone_says_so() {
        let tool = tool(json!({"name": "ping", "inputSchema": {"type": "object"}}));
        let ctx = ToolContext::on_disk(Vec::new());
        let error = tool.run(json!({}), &ctx).await.unwrap_err();
        assert!(matches!(error, ToolError::Respond(m) if m.contains("shut down")));
        let error = tool.run(json!([1]), &ctx).await.unwrap_err();
        assert!(matches!(error, ToolError::Respond(m) if m.contains("must be a JSON object")));
    }

    #[test]
    fn progress_messages_are_short() {
        let params =
            |value: Value| -> ProgressNotificationParam { serde_json::from_value(value).unwrap() };
        let cases = [
            (
                json!({"progressToken": 1, "progress": 3, "total": 5}),
                "3/5",
            ),
            (
                json!({"progressToken": 1, "progress": 3, "total": 5, "message": "Indexing"}),
                "3/5: Indexing",
            ),
            (json!({"progressToken": 1, "progress": 0.5}), "0.5"),
            (
                json!({"progressToken": "t", "progress": 2, "message": " "}),
                "2",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(progress_message(&params(value)), expected);
        }
    }

    /// The provider side converts schemas for Gemini; the built-in tools' schemas already fit
    /// and must reach it byte for byte as they are.
    #[test]
    fn built_in_schemas_pass_the_gemini_conversion_unchanged() {
        for tool in tandem_tools::all() {
            let parameters = tool.parameters();
            let converted = tandem_providers::schema::for_gemini(&parameters);
            assert_eq!(
                converted.to_string(),
                parameters.to_string(),
                "{}",
                tool.name()
            );
            let normalised = tandem_providers::schema::object_parameters(&parameters);
            assert_eq!(
                normalised.to_string(),
                parameters.to_string(),
                "{}",
                tool.name()
            );
        }
    }
}
