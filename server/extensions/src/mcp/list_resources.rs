//! The `list_mcp_resources` tool: what the user's MCP servers offer to read (their resources,
//! and the URI templates of resources they read without listing), so the model can pick one
//! for `read_mcp_resource`. Offered only while some ready server has resources.

use std::fmt::Write as _;
use std::sync::Weak;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::manager::McpManager;
use tandem_tools::{
    cap, parse_args, schema_for, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
};

/// The listing is capped like every output.
const MAX_OUTPUT_BYTES: usize = 32 * 1024;

pub struct ListMcpResources {
    manager: Weak<McpManager>,
}

impl ListMcpResources {
    pub(crate) fn new(manager: Weak<McpManager>) -> Self {
        ListMcpResources { manager }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only this MCP server's resources (its name as configured). All servers' when omitted.
    #[serde(default)]
    server: Option<String>,
}

impl Tool for ListMcpResources {
    fn name(&self) -> &str {
        "list_mcp_resources"
    }

    fn description(&self) -> &str {
        "Lists the resources the user's MCP servers offer: documents, records, files they \
         expose by URI, with their names, types and descriptions, and the URI templates of \
         resources they can read without listing them (fill in the `{placeholders}`). Give \
         `server` to list one server's. Read one with read_mcp_resource."
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
        match args.get("server").and_then(Value::as_str) {
            Some(server) => format!("List the resources of {server}"),
            None => "List MCP resources".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Args { server } = parse_args(self.name(), args)?;
            let Some(manager) = self.manager.upgrade() else {
                return Err(ToolError::Respond(
                    "the MCP servers were shut down; there are no resources to list".to_owned(),
                ));
            };
            let wanted = |name: &str| server.as_deref().is_none_or(|server| server == name);
            let resources: Vec<_> = manager
                .resources()
                .into_iter()
                .filter(|r| wanted(&r.server))
                .collect();
            let templates: Vec<_> = manager
                .resource_templates()
                .into_iter()
                .filter(|t| wanted(&t.server))
                .collect();
            if resources.is_empty() && templates.is_empty() {
                let mut offering: Vec<String> = manager
                    .resources()
                    .into_iter()
                    .map(|r| r.server)
                    .chain(manager.resource_templates().into_iter().map(|t| t.server))
                    .collect();
                offering.sort_unstable();
                offering.dedup();
                return Err(ToolError::Respond(match server {
                    Some(server) => format!(
                        "the MCP server \"{server}\" offers no resources (or is not ready); \
                         servers with resources: {}",
                        if offering.is_empty() {
                            "none".to_owned()
                        } else {
                            offering.join(", ")
                        }
                    ),
                    None => "no ready MCP server offers resources".to_owned(),
                }));
            }
            let mut text = String::new();
            let mut servers: Vec<&str> = resources
                .iter()
                .map(|r| r.server.as_str())
                .chain(templates.iter().map(|t| t.server.as_str()))
                .collect();
            servers.sort_unstable();
            servers.dedup();
            for name in servers {
                let listed: Vec<_> = resources.iter().filter(|r| r.server == name).collect();
                let _ = writeln!(text, "MCP server \"{name}\": {} resources", listed.len());
                for resource in listed {
                    let _ = write!(text, "- {} ({}", resource.uri, resource.name);
                    if let Some(mime) = &resource.mime_type {
                        let _ = write!(text, ", {mime}");
                    }
                    text.push(')');
                    if let Some(description) = &resource.description {
                        let _ = write!(text, ": {description}");
                    }
                    text.push('\n');
                }
                let forms: Vec<_> = templates.iter().filter(|t| t.server == name).collect();
                if !forms.is_empty() {
                    text.push_str("  URI templates (resources it reads without listing them):\n");
                }
                for template in forms {
                    let _ = write!(text, "- {} ({}", template.uri_template, template.name);
                    if let Some(mime) = &template.mime_type {
                        let _ = write!(text, ", {mime}");
                    }
                    text.push(')');
                    if let Some(description) = &template.description {
                        let _ = write!(text, ": {description}");
                    }
                    text.push('\n');
                }
            }
            text.push_str("Read one with read_mcp_resource {\"server\": …, \"uri\": …}.");
            Ok(ToolOutput::text(cap(
                &text,
                MAX_OUTPUT_BYTES,
                "Give `server` to list one server's resources.",
            )))
        })
    }

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}
