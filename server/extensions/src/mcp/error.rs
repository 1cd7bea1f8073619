//! What can go wrong with an MCP server, in words the user (or the model) can act on: each
//! message names the server and says what happened and what to do.

use std::time::Duration;

/// An MCP request that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// No server of that name is configured.
    #[error(
        "no MCP server named \"{server}\" is configured{}",
        known_servers(known)
    )]
    UnknownServer { server: String, known: Vec<String> },
    /// The server is configured with `disabled: true`.
    #[error(
        "the MCP server \"{server}\" is disabled in the settings (`disabled: true`); enable it to \
         use it"
    )]
    Disabled { server: String },
    /// The server did not finish starting in time for the request.
    #[error("the MCP server \"{server}\" is still starting; try again in a moment")]
    Starting { server: String },
    /// The server failed to start, or failed while running; `message` says which server, what
    /// happened and what it printed last.
    #[error("{message}")]
    Failed { server: String, message: String },
    /// The server did not answer within its `timeout`.
    #[error(
        "the MCP server \"{server}\" did not answer {what} within {} (its `timeout` setting); \
         the request was cancelled. Try again with a smaller request, or raise `timeout`",
        seconds(*limit)
    )]
    Timeout {
        server: String,
        what: String,
        limit: Duration,
    },
    /// The request was cancelled (the user cancelled the turn) before the server answered.
    #[error("{what} was cancelled before the MCP server \"{server}\" answered")]
    Cancelled { server: String, what: String },
    /// The server answered with an error; `what` is the request, capitalized ("The call of
    /// create_issue").
    #[error("{what} failed on the MCP server \"{server}\": {message}")]
    Server {
        server: String,
        what: String,
        message: String,
    },
    /// The request itself is wrong (an unknown prompt, a missing argument, an excluded tool).
    #[error("{message}")]
    Invalid { server: String, message: String },
}

impl McpError {
    /// The server the error is about.
    pub fn server(&self) -> &str {
        match self {
            McpError::UnknownServer { server, .. }
            | McpError::Disabled { server }
            | McpError::Starting { server }
            | McpError::Failed { server, .. }
            | McpError::Timeout { server, .. }
            | McpError::Cancelled { server, .. }
            | McpError::Server { server, .. }
            | McpError::Invalid { server, .. } => server,
        }
    }
}

pub type Result<T, E = McpError> = std::result::Result<T, E>;

fn known_servers(known: &[String]) -> String {
    if known.is_empty() {
        " (no MCP servers are configured: add them under `mcpServers` in the settings)".to_owned()
    } else {
        format!("; the configured ones are: {}", known.join(", "))
    }
}

/// A duration as people write it: `30 s`, `1.5 s`, `250 ms`.
pub(crate) fn seconds(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis} ms")
    } else if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_server_and_what_to_do() {
        let unknown = McpError::UnknownServer {
            server: "gh".to_owned(),
            known: vec!["github".to_owned(), "linear".to_owned()],
        };
        assert_eq!(
            unknown.to_string(),
            "no MCP server named \"gh\" is configured; the configured ones are: github, linear"
        );
        let timeout = McpError::Timeout {
            server: "github".to_owned(),
            what: "the call of create_issue".to_owned(),
            limit: Duration::from_millis(1500),
        };
        assert!(timeout.to_string().contains("within 1.5 s"));
        assert_eq!(timeout.server(), "github");
        assert_eq!(seconds(Duration::from_secs(600)), "600 s");
        assert_eq!(seconds(Duration::from_millis(20)), "20 ms");
    }
}
