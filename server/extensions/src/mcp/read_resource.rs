//! The `read_mcp_resource` tool: reads a resource of one of the user's MCP servers by its URI
//! (as `list_mcp_resources` or a tool's resource link gave it), as text. Binary resources are
//! described rather than shown. Offered only while some ready server has resources.
//!
//! A read follows the approval of the server it reaches, as that server's tools do: it asks
//! unless the server is trusted, a rule allows it, or the mode is yolo. The protocol calls it a
//! read, but what a server does on a read is its own (a `file:///{path}` template reads any
//! file the user can, `~/.ssh` included), and the URI is the model's choice. A resource the
//! user attaches with `@server:uri` is the user's choice and is read without asking (it does
//! not go through this tool).

use std::sync::Weak;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::manager::McpManager;
use super::names;
use tandem_tools::{parse_args, schema_for, Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// The tool's name, which approval rules also use to allow or deny every read.
const NAME: &str = "read_mcp_resource";

pub struct ReadMcpResource {
    manager: Weak<McpManager>,
}

impl ReadMcpResource {
    pub(crate) fn new(manager: Weak<McpManager>) -> Self {
        ReadMcpResource { manager }
    }

    /// Whether the user trusts the server a call names (`trust: true`); not when the call
    /// names none, or one the manager does not know.
    fn trusts_server(&self, args: &Value) -> bool {
        let server = args.get("server").and_then(Value::as_str);
        match (server, self.manager.upgrade()) {
            (Some(server), Some(manager)) => manager.trusts(server),
            _ => false,
        }
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
        NAME
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

    /// Counts as a change, so that the approval policy asks as it does for the server's
    /// tools: the server may do anything on a read. See the module documentation.
    fn mutates(&self) -> bool {
        true
    }

    /// A read from a trusted server is taken at the protocol's word: a read, which runs
    /// without asking (deny rules still apply) and beside other reads.
    fn mutates_call(&self, args: &Value) -> bool {
        !self.trusts_server(args)
    }

    /// A read is one of its server's calls: the rules that name the server (`mcp__<server>`)
    /// name it too.
    fn approval_aliases(&self, args: &Value) -> Vec<String> {
        args.get("server")
            .and_then(Value::as_str)
            .map(names::server_prefix)
            .into_iter()
            .collect()
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

    fn approval_details(&self, args: &Value) -> String {
        let what = match (
            args.get("server").and_then(Value::as_str),
            args.get("uri").and_then(Value::as_str),
        ) {
            (Some(server), Some(uri)) => format!(
                "The MCP server \"{server}\" reads its resource {uri}, and the model gets what \
                 it returns ({NAME})"
            ),
            _ => NAME.to_owned(),
        };
        tandem_tools::with_arguments(&what, args)
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

    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::mcp::{McpServerSettings, McpStartContext};
    use tandem_sandbox::approval::{ApprovalMode, ApprovalPolicy, Call, Rule, Verdict};

    /// A manager with two configured servers, neither started: `files` and the trusted `docs`.
    fn manager() -> Arc<McpManager> {
        let manager = McpManager::new();
        let server = |trust| McpServerSettings {
            command: Some("unused".to_owned()),
            trust,
            disabled: true,
            ..McpServerSettings::default()
        };
        let servers = BTreeMap::from([
            ("files".to_owned(), server(false)),
            ("docs".to_owned(), server(true)),
        ]);
        manager.apply(&servers, McpStartContext::default());
        manager
    }

    fn read(server: &str) -> Value {
        json!({"server": server, "uri": "file:///home/me/.ssh/id_rsa"})
    }

    /// The policy's verdict on a call, built from the tool as the session's scheduler builds
    /// it, aliases included.
    fn verdict(policy: &ApprovalPolicy, tool: &ReadMcpResource, args: &Value) -> Verdict {
        policy.verdict(&Call {
            tool: NAME,
            kind: tool.kind(),
            mutates: tool.mutates_call(args),
            args,
            protected: None,
            refuses_path: &|_| false,
            trusted: tool.trusted(),
            foreign_repository: None,
            aliases: &tool.approval_aliases(args),
            sandbox: Default::default(),
        })
    }

    fn policy(mode: ApprovalMode, allow: &[&str], deny: &[&str]) -> ApprovalPolicy {
        let rules = |names: &[&str]| names.iter().map(|name| Rule((*name).to_owned())).collect();
        ApprovalPolicy {
            mode,
            allow: rules(allow),
            deny: rules(deny),
        }
    }

    /// Finding 11 of the security review: the tool counted as read-only, so a server's
    /// `file:///{path}` template read `~/.ssh/id_rsa` on the model's word without asking.
    #[tokio::test]
    async fn a_resource_read_asks_as_its_servers_tools_do() {
        use ApprovalMode::{AutoEdit, Default, Yolo};
        let manager = manager();
        let tool = ReadMcpResource::new(Arc::downgrade(&manager));
        let ask = Verdict::Ask { why: None };
        let denied =
            |rule: &str| Verdict::Deny(format!("denied by the rule `{rule}` in the settings"));
        let cases = [
            (Default, &[][..], &[][..], "files", ask.clone()),
            (AutoEdit, &[], &[], "files", ask.clone()),
            (Yolo, &[], &[], "files", Verdict::Allow),
            (Default, &[NAME], &[], "files", Verdict::Allow),
            (Default, &[], &[], "docs", Verdict::Allow),
            (Yolo, &[], &[NAME], "docs", denied(NAME)),
            // A server that is not configured is nobody's to trust.
            (Default, &[], &[], "nobody", ask.clone()),
        ];
        for (mode, allow, deny, server, expected) in cases {
            let policy = policy(mode, allow, deny);
            let args = read(server);
            assert_eq!(
                verdict(&policy, &tool, &args),
                expected,
                "{policy:?} {server}"
            );
        }
        // Rules that name its server (its alias) apply too.
        let args = read("files");
        assert_eq!(tool.approval_aliases(&args), ["mcp__files"]);
        let server_rules = [
            (policy(Default, &["mcp__files"], &[]), Verdict::Allow),
            (policy(Default, &["mcp__docs"], &[]), ask),
            (policy(Yolo, &[], &["mcp__files"]), denied("mcp__files")),
        ];
        for (policy, expected) in server_rules {
            assert_eq!(verdict(&policy, &tool, &args), expected, "{policy:?}");
        }
        assert!(tool.approval_aliases(&json!({})).is_empty());
        // Without the manager nothing is trusted.
        drop(manager);
        assert!(tool.mutates_call(&read("docs")));
    }

    #[test]
    fn the_approval_shows_the_server_the_uri_and_every_argument() {
        let tool = ReadMcpResource::new(Weak::new());
        assert_eq!(
            tool.approval_details(&read("files")),
            "The MCP server \"files\" reads its resource file:///home/me/.ssh/id_rsa, and the \
             model gets what it returns (read_mcp_resource), with these arguments:\n{\n  \
             \"server\": \"files\",\n  \"uri\": \"file:///home/me/.ssh/id_rsa\"\n}"
        );
        let odd = tool.approval_details(&json!({"uri": "x\u{202e}y"}));
        assert!(
            odd.starts_with("read_mcp_resource, with these arguments:"),
            "{odd}"
        );
        assert!(!odd.contains('\u{202e}'), "{odd}");
    }
}
