//! The plain data the MCP manager's API gives out: what a server needs to start, each server's
//! status (for `tandem mcp list` and editor status requests), and its prompts and resources.
//! Serialized in camelCase, as front ends send them on.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::config::McpTransport;
use tandem_tools::shell::ShellEnvironment;

/// What starting a server depends on besides its settings.
#[derive(Debug, Clone, Default)]
pub struct McpStartContext {
    /// The workspace roots: the first is where a server's program starts (and what a relative
    /// `cwd` is relative to); all of them are answered to a server's `roots/list`.
    pub roots: Vec<PathBuf>,
    /// Which of Tandem's environment variables a server's program does not inherit (the model
    /// keys), as for shell commands.
    pub environment: Arc<ShellEnvironment>,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum McpServerState {
    /// Connecting, initializing, listing its tools.
    Starting,
    /// Its tools, prompts and resources can be used.
    Ready,
    /// It did not start, or stopped; `message` names the server, says what happened and shows
    /// the last lines it printed on stderr.
    Failed { message: String },
    /// `disabled: true` in the settings.
    Disabled,
}

/// A server as `tandem mcp list` and the editors show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    pub name: String,
    #[serde(flatten)]
    pub state: McpServerState,
    /// How Tandem reaches it; `None` when its settings name no way (see the failure message).
    pub transport: Option<McpTransport>,
    /// The settings' `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it is configured when not in Tandem's settings: another tool's file
    /// (`~/.claude.json`, `.mcp.json`, `~/.gemini/settings.json`), `plugin <name>`, or the
    /// front end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `trust: true`: its tools run without asking.
    pub trusted: bool,
    /// The server's own name and version, from its `initialize` answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
    /// The tools offered to the model (after `includeTools`/`excludeTools`), sorted by name.
    pub tools: Vec<McpToolStatus>,
    /// Tools the server has that `includeTools`/`excludeTools` keep from the model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filtered_tools: Vec<String>,
    /// Its prompts' names.
    pub prompts: Vec<String>,
    /// How many resources it lists.
    pub resources: usize,
    /// The process id of a stdio server while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Problems with its settings that did not stop it (an unset `$VAR`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One of a server's tools as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolStatus {
    /// The name the model calls it by (`mcp__<server>__<tool>`).
    pub name: String,
    /// The server's name for it.
    pub original_name: String,
    /// The server's claim that the tool only reads (its `readOnlyHint`). Recorded, not trusted:
    /// the tool is asked about like any other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The server's claim that the tool may destroy data (`destructiveHint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
}

/// A prompt a server offers (a slash command, in editors that show them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPrompt {
    pub server: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub arguments: Vec<McpPromptArgument>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
}

/// Who a prompt message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum McpRole {
    User,
    Assistant,
}

/// One message of a rendered prompt, as text: embedded resources are included as text, images
/// and audio described in a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptMessage {
    pub role: McpRole,
    pub text: String,
}

/// A resource a server lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    pub server: String,
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A family of resources a server can read but does not list (`demo://item/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceTemplate {
    pub server: String,
    pub uri_template: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_status_serializes_flat_in_camel_case() {
        let status = McpServerStatus {
            name: "github".to_owned(),
            state: McpServerState::Failed {
                message: "it exited".to_owned(),
            },
            transport: Some(McpTransport::Stdio),
            description: None,
            source: None,
            trusted: false,
            server_info: None,
            tools: vec![McpToolStatus {
                name: "mcp__github__create_issue".to_owned(),
                original_name: "create_issue".to_owned(),
                read_only_hint: None,
                destructive_hint: Some(false),
            }],
            filtered_tools: Vec::new(),
            prompts: Vec::new(),
            resources: 0,
            pid: None,
            warnings: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({
                "name": "github", "state": "failed", "message": "it exited",
                "transport": "stdio", "trusted": false,
                "tools": [{"name": "mcp__github__create_issue", "originalName": "create_issue",
                    "destructiveHint": false}],
                "prompts": [], "resources": 0
            })
        );
    }
}
