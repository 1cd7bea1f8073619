//! The `read_mcp_resource` tool: reads a resource of one of the user's MCP servers by its URI
//! (as `list_mcp_resources` or a tool's resource link gave it), as text. Binary resources are
//! described rather than shown. Offered only while some ready server has resources.

use std::sync::Weak;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::manager::McpManager;
use crate::tools::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolKind, ToolOutput};

pub struct ReadMcpResource {
    manager: Weak<McpManager>,
}

impl ReadMcpResource {
    pub(crate) fn new(manager: Weak<McpManager>) -> Self {
        ReadMcpResource { manager }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The MCP server that offers the resource (its name as configured).
    server: String,
    /// The resource's URI, exactly as listed (or a listed URI template filled in).
    uri: String,
}

impl Tool for ReadMcpResource {
    fn name(&self) -> &str {
        "read_mcp_resource"
    }

    fn description(&self) -> &str {
        "Reads a resource of one of the user's MCP servers by its URI, as list_mcp_resources \
         or a tool's resource link gave it, and returns its text (at most 64 KiB). Binary \
         resources (images, archives) are described, not shown."
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
        match (
            args.get("server").and_then(Value::as_str),
            args.get("uri").and_then(Value::as_str),
        ) {
            (Some(server), Some(uri)) => format!("Read {uri} ({server})"),
            _ => "Read an MCP resource".to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Args { server, uri } = parse_args(self.name(), args)?;
            let Some(manager) = self.manager.upgrade() else {
                return Err(ToolError::Respond(
                    "the MCP servers were shut down; the resource cannot be read".to_owned(),
                ));
            };
            manager
                .read_resource(&server, &uri, &ctx.cancel)
                .await
                .map(ToolOutput::text)
                .map_err(|error| ToolError::Respond(error.to_string()))
        })
    }
}
