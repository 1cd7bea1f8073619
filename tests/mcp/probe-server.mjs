// A minimal MCP server over stdio for Tandem's MCP client tests (server/agent/tests/mcp.rs), in
// plain Node without dependencies. It shows what the reference server cannot: the
// `notifications/cancelled` it received (tool `cancelled`), a call that never ends (tool
// `wait`), a crash on demand (tool `crash`: prints to stderr, exits with status 7), where it
// runs (tool `cwd`), and a tool list that changes (tool `add-tool`).

import readline from "node:readline";

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
  switch (message.method) {
    case "initialize":
      answer({
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: "probe", version: "1.0.0" },
      });
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
