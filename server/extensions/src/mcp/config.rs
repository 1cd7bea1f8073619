//! The `mcpServers` settings key: one entry per MCP server, in the shape Gemini CLI and Claude
//! Code use, so that users can paste theirs. A server is a command Tandem starts (stdio) or a
//! URL it connects to (streamable HTTP, or the older HTTP with SSE).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One MCP server (an entry of `mcpServers`). Give `command` (a program Tandem starts and talks
/// to over its standard input and output), or `url` / `httpUrl` (a server Tandem connects to).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct McpServerSettings {
    /// The program to start (looked up on `PATH`), e.g. `npx`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments. `$VAR`, `${VAR}` and `${VAR:-default}` are replaced from the environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for the program, beyond what it inherits (Tandem's environment without the
    /// model keys). Values may use `$VAR`, `${VAR}` and `${VAR:-default}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The program's working directory (relative to the workspace root); the workspace root
    /// when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The server's address: streamable HTTP with `type: http`, HTTP with SSE with `type: sse`;
    /// without `type`, streamable HTTP first and, when the server refuses it as an older one
    /// does (HTTP 400, 404 or 405), SSE at the same address, as the MCP specification advises.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How to reach the server. Unset: `stdio` with `command`, `http` with a URL.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub transport: Option<McpTransport>,
    /// The server's streamable HTTP address (Gemini CLI's name for it; the same as `url` with
    /// `type: http`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_url: Option<String>,
    /// HTTP headers sent with every request (`Authorization: Bearer ${TOKEN}`); values may use
    /// `$VAR`, `${VAR}` and `${VAR:-default}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How long a request to the server may take, in milliseconds (default 600000, ten
    /// minutes), starting it included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// How long starting the server (connecting, `initialize`, the first listing) may take, in
    /// milliseconds (default 30000, or `timeout` if shorter). `tandem ask` waits this long for
    /// the server before its one request; in an editor a session's first prompt waits at most
    /// 2 s and the server's tools join later requests when it is ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_timeout: Option<u64>,
    /// Run the server's tools, and the model's reads of its resources, without asking for
    /// approval (deny rules still apply).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
    /// Give this server the network inside Tandem's OS sandbox (a server over stdio runs
    /// sandboxed like a shell command: writes in the workspace only, no network, secret stores
    /// hidden). Servers that call a web API need it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// Only these tools of the server are offered to the model (all when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include_tools: Vec<String>,
    /// These tools are never offered to the model; they win over `includeTools`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    /// What the server is for, shown in `tandem mcp list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Keep the server configured but do not start it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Gemini CLI's OAuth settings: accepted so a pasted configuration loads, but Tandem does
    /// not sign in with OAuth; use `headers` with a token instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Value>,
    /// Gemini CLI's Google authentication provider: accepted, not used (see `oauth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_provider_type: Option<Value>,
    /// Gemini CLI's Google authentication audience: accepted, not used (see `oauth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_audience: Option<Value>,
    /// Gemini CLI's Google service account: accepted, not used (see `oauth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_service_account: Option<Value>,
    /// Where the entry came from when it is not Tandem's own settings (another tool's file, a
    /// plugin, the front end), for `tandem mcp list`.
    #[serde(skip)]
    #[schemars(skip)]
    pub source: Option<String>,
}

/// How Tandem reaches an MCP server (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpTransport {
    /// A program Tandem starts, over its standard input and output.
    Stdio,
    /// Streamable HTTP.
    #[serde(alias = "streamable-http", alias = "streamableHttp")]
    Http,
    /// The older HTTP with server-sent events.
    Sse,
}

impl McpServerSettings {
    /// How long starting may take: `startTimeout`, else 30 s or `timeout` if shorter.
    pub fn start_limit(&self) -> std::time::Duration {
        use std::time::Duration;
        match self.start_timeout {
            Some(millis) => Duration::from_millis(millis),
            None => self
                .timeout
                .map_or(super::DEFAULT_TIMEOUT, Duration::from_millis)
                .min(super::START_LIMIT),
        }
    }

    /// How Tandem reaches the server, and where: `Err` says what is missing or contradictory,
    /// in words for the user.
    pub fn endpoint(&self) -> Result<Endpoint<'_>, String> {
        let url = self.http_url.as_deref().or(self.url.as_deref());
        match (self.transport, &self.command, url) {
            (Some(McpTransport::Stdio) | None, Some(command), None) => Ok(Endpoint::Stdio {
                command: command.as_str(),
            }),
            (Some(McpTransport::Stdio), None, _) => {
                Err("`type` is `stdio` but there is no `command` to start".to_owned())
            }
            (Some(McpTransport::Http | McpTransport::Sse), Some(_), None) => Err(
                "`type` asks for a connection over HTTP but there is no `url` to connect to, only \
                 a `command`; drop `type` to start the command"
                    .to_owned(),
            ),
            (_, Some(_), Some(_)) => Err(
                "both `command` and a URL are set; a server is either a program Tandem starts or \
                 an address it connects to"
                    .to_owned(),
            ),
            (Some(McpTransport::Sse), None, Some(url)) if self.http_url.is_none() => {
                Ok(Endpoint::Sse { url })
            }
            (Some(McpTransport::Sse), None, Some(_)) => Err(
                "`httpUrl` is a streamable HTTP address, but `type` is `sse`; use `url` for an SSE \
                 server"
                    .to_owned(),
            ),
            (Some(McpTransport::Http), None, Some(url)) => Ok(Endpoint::Http { url }),
            (None, None, Some(url)) if self.http_url.is_some() => Ok(Endpoint::Http { url }),
            (None, None, Some(url)) => Ok(Endpoint::HttpOrSse { url }),
            (_, None, None) => Err(
                "set `command` (a program to start) or `url` / `httpUrl` (an address to connect to)"
                    .to_owned(),
            ),
        }
    }
}

/// Where a server is, as its settings say (before `$VAR` expansion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    Stdio {
        command: &'a str,
    },
    Http {
        url: &'a str,
    },
    Sse {
        url: &'a str,
    },
    /// `url` without `type`: streamable HTTP, falling back to SSE.
    HttpOrSse {
        url: &'a str,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn server(value: Value) -> McpServerSettings {
        serde_json::from_value(value).unwrap()
    }

    /// Entries as Gemini CLI's and Claude Code's documentation show them load as they are.
    #[test]
    fn pasted_configurations_load() {
        let gemini = server(json!({
            "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_TOKEN"}, "cwd": "./tools",
            "timeout": 30000, "trust": false, "includeTools": ["create_issue"],
            "excludeTools": ["delete_repo"], "description": "GitHub"
        }));
        assert_eq!(gemini.endpoint(), Ok(Endpoint::Stdio { command: "npx" }));
        let streamable = server(json!({"httpUrl": "http://localhost:3000/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"}}));
        assert_eq!(
            streamable.endpoint(),
            Ok(Endpoint::Http {
                url: "http://localhost:3000/mcp"
            })
        );
        let claude_http = server(json!({"type": "http", "url": "https://api.example.com/mcp"}));
        assert!(matches!(claude_http.endpoint(), Ok(Endpoint::Http { .. })));
        let untyped = server(json!({"url": "https://api.example.com/sse"}));
        assert!(matches!(untyped.endpoint(), Ok(Endpoint::HttpOrSse { .. })));
        let claude_sse = server(json!({"type": "sse", "url": "https://api.example.com/sse"}));
        assert!(matches!(claude_sse.endpoint(), Ok(Endpoint::Sse { .. })));
        let stdio = server(json!({"type": "stdio", "command": "server", "args": []}));
        assert!(matches!(stdio.endpoint(), Ok(Endpoint::Stdio { .. })));
        let alias = server(json!({"type": "streamable-http", "url": "http://x/mcp"}));
        assert!(matches!(alias.endpoint(), Ok(Endpoint::Http { .. })));
        let oauth = server(json!({"httpUrl": "https://x/mcp", "oauth": {"enabled": true}}));
        assert!(oauth.oauth.is_some());
    }

    #[test]
    fn an_entry_that_names_no_server_or_two_says_so() {
        let nothing = server(json!({"args": ["x"]}));
        assert!(nothing.endpoint().unwrap_err().contains("set `command`"));
        let both = server(json!({"command": "x", "url": "http://x"}));
        assert!(both
            .endpoint()
            .unwrap_err()
            .contains("both `command` and a URL"));
        let stdio = server(json!({"type": "stdio", "url": "http://x"}));
        assert!(stdio.endpoint().unwrap_err().contains("no `command`"));
        let http = server(json!({"type": "http", "command": "x"}));
        assert!(http.endpoint().unwrap_err().contains("no `url`"));
        // Regression: a string continuation without its backslash put a run of spaces in it.
        assert!(!http.endpoint().unwrap_err().contains("  "));
        let sse = server(json!({"type": "sse", "httpUrl": "http://x"}));
        assert!(sse.endpoint().unwrap_err().contains("use `url`"));
        let typo: Result<McpServerSettings, _> =
            serde_json::from_value(json!({"command": "x", "arg": []}));
        assert!(typo
            .unwrap_err()
            .to_string()
            .contains("unknown field `arg`"));
    }
}
