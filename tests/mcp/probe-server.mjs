// A minimal MCP server over stdio for Tandem's MCP client tests (server/agent/tests/mcp.rs), in
// plain Node without dependencies. It shows what the reference server cannot: the
// `notifications/cancelled` it received (tool `cancelled`), a call that never ends (tool
// `wait`), a crash on demand (tool `crash`: prints to stderr, exits with status 7), where it
// runs (tool `cwd`), and a tool list that changes (tool `add-tool`).
//
// With the argument `files` it also reads any file as a resource, through the template
// `file:///{path}`, as filesystem servers do: what tests/e2e/security/mcp_resources.rs needs to
// show that the model's reads of resources are asked about. With `prompts` it offers the prompt
// `greet` (argument `name`). With `--start-delay=MS` it answers `initialize` only after MS
// milliseconds, as a server that is slow to start (`npx` fetching, Python importing) does.

import * as fs from "node:fs";
import readline from "node:readline";

const args = process.argv.slice(2);
const files = args.includes("files");
const prompts = args.includes("prompts");
const startDelay = Number(args.find((arg) => arg.startsWith("--start-delay="))?.split("=")[1] ?? 0);
const cancelled = [];
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const object = { type: "object", properties: {} };
const tools = [
  { name: "wait", description: "Never answers; cancel it.", inputSchema: object },
  { name: "cancelled", description: "The cancellations received so far.", inputSchema: object },
  { name: "crash", description: "Exits at once with status 7.", inputSchema: object },
  { name: "cwd", description: "The server's working directory.", inputSchema: object },
  { name: "add-tool", description: "Adds the tool `added` and says so.", inputSchema: object },
];

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  const answer = (result) => send({ jsonrpc: "2.0", id: message.id, result });
  if (files && resource(message, answer)) return;
  if (prompts && prompt(message, answer)) return;
  switch (message.method) {
    case "initialize":
      setTimeout(
        () =>
          answer({
            protocolVersion: message.params.protocolVersion,
            capabilities: {
              tools: { listChanged: true },
              ...(files ? { resources: {} } : {}),
              ...(prompts ? { prompts: {} } : {}),
            },
            serverInfo: { name: "probe", version: "1.0.0" },
          }),
        startDelay,
      );
      break;
    case "tools/list":
      answer({ tools });
      break;
    case "tools/call":
      if (message.params.name === "cancelled") {
        answer({ content: [{ type: "text", text: JSON.stringify(cancelled) }] });
      } else if (message.params.name === "add-tool") {
        tools.push({ name: "added", description: "Added at run time.", inputSchema: object });
        answer({ content: [{ type: "text", text: "added" }] });
        send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      } else if (message.params.name === "added") {
        answer({ content: [{ type: "text", text: "the added tool answers" }] });
      } else if (message.params.name === "cwd") {
        answer({ content: [{ type: "text", text: process.cwd() }] });
      } else if (message.params.name === "crash") {
        process.stderr.write("probe: crashing as asked\n", () => process.exit(7));
      }
      // `wait` never answers.
      break;
    case "notifications/cancelled":
      cancelled.push(message.params);
      break;
    default:
      if (message.id !== undefined && message.method !== undefined) {
        send({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: -32601, message: `no method ${message.method}` },
        });
      }
  }
});

/// Answers a resource request (with `files`); false for any other message.
function resource(message, answer) {
  switch (message.method) {
    case "resources/list":
      answer({ resources: [] });
      return true;
    case "resources/templates/list":
      answer({
        resourceTemplates: [
          { uriTemplate: "file:///{path}", name: "file", description: "Any file, by its absolute path." },
        ],
      });
      return true;
    case "resources/read": {
      const uri = message.params.uri;
      try {
        const text = fs.readFileSync(decodeURIComponent(new URL(uri).pathname), "utf8");
        answer({ contents: [{ uri, mimeType: "text/plain", text }] });
      } catch (error) {
        send({ jsonrpc: "2.0", id: message.id, error: { code: -32002, message: String(error) } });
      }
      return true;
    }
    default:
      return false;
  }
}

/// Answers a prompt request (with `prompts`); false for any other message.
function prompt(message, answer) {
  switch (message.method) {
    case "prompts/list":
      answer({
        prompts: [
          {
            name: "greet",
            description: "Greets someone by name.",
            arguments: [{ name: "name", description: "Who to greet.", required: true }],
          },
        ],
      });
      return true;
    case "prompts/get":
      answer({
        messages: [
          {
            role: "user",
            content: { type: "text", text: `Say hello to ${message.params.arguments?.name} from the probe.` },
          },
        ],
      });
      return true;
    default:
      return false;
  }
}
