//! The `write_todos` tool (being written).

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

pub struct WriteTodos;

impl Tool for WriteTodos {
    fn name(&self) -> &'static str {
        "write_todos"
    }

    fn description(&self) -> &'static str {
        "Not available yet: this tool is being written and always answers with an error."
    }

    fn parameters(&self) -> Value {
        serde_json::json!({"type": "object"})
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, _args: &Value) -> String {
        "write_todos".to_owned()
    }

    fn run<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            Err(ToolError::Respond(
                "write_todos is not available yet".to_owned(),
            ))
        })
    }
}
