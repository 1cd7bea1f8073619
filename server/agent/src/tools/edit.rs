//! The `edit` tool (being written).

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

pub struct Edit;

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Not available yet: this tool is being written and always answers with an error."
    }

    fn parameters(&self) -> Value {
        serde_json::json!({"type": "object"})
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn mutates(&self) -> bool {
        false
    }

    fn title(&self, _args: &Value) -> String {
        "edit".to_owned()
    }

    fn run<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Err(ToolError::Respond("edit is not available yet".to_owned())) })
    }
}
