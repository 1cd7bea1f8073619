// A real ACP client, the official TypeScript SDK (@agentclientprotocol/sdk), driving the built
// `tandem acp` over its stdio for tests/e2e/acp.rs.
//
//   node tests/acp/client.mjs <scenario>
//
// Environment: TANDEM_BIN (the binary), ACP_WORKSPACE (the session's cwd), ACP_LOG (where
// tandem logs). Everything else (settings, state directory, no model keys) is inherited from the
// test. Prints one JSON transcript on stdout: `wire`, every message tandem sent, in the order it
// sent them (tapped from its stdout, so updates and answers keep their order), and `notes`, what
// the scenario observed itself (answers to its requests, files, processes). Exits non-zero only
// when the scenario itself broke (a timeout, an exception); the test judges the transcript.

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const scenario = process.argv[2];
const BIN = process.env.TANDEM_BIN;
const WS = process.env.ACP_WORKSPACE;
const LOG = process.env.ACP_LOG;
const LIMIT_MS = 60_000;

const transcript = { scenario, wire: [], notes: [] };
const note = (what, data = {}) => transcript.notes.push({ what, ...data });
/// Marks a point in both lists (a new agent process starts).
const mark = (label) => {
  transcript.wire.push({ mark: label });
  note(label);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// Resolves once `predicate` holds of a message tandem sent (already or later).
const waiters = [];
function waitForWire(predicate, label) {
  const found = transcript.wire.find(predicate);
  if (found) return Promise.resolve(found);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${label}`)), LIMIT_MS);
    waiters.push({ predicate, resolve: (m) => (clearTimeout(timer), resolve(m)) });
  });
}

/// Resolves once `check()` is true, polling: for what happens outside the protocol (a file a
/// command writes, a process that exits).
async function until(check, label, ms = 20_000) {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${label}`);
    await sleep(25);
  }
}

/// Starts `tandem acp`; every line it writes is recorded in `transcript.wire` as it arrives.
function startAgent() {
  const child = spawn(BIN, ["--log-file", LOG, "acp"], { stdio: ["pipe", "pipe", "inherit"] });
  let pending = "";
  const tap = new TransformStream({
    transform(chunk, controller) {
      pending += new TextDecoder().decode(chunk, { stream: true });
      let at;
      while ((at = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, at);
        pending = pending.slice(at + 1);
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          message = { unparsed: line };
        }
        transcript.wire.push(message);
        for (let i = waiters.length - 1; i >= 0; i--) {
          if (waiters[i].predicate(message)) waiters.splice(i, 1)[0].resolve(message);
        }
      }
      controller.enqueue(chunk);
    },
  });
  const input = Readable.toWeb(child.stdout).pipeThrough(tap);
  const output = Writable.toWeb(child.stdin);
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, stream: ndJsonStream(output, input), exited };
}

/// The client's side: permission answers (`answers`, in order, or a function), files (an
/// in-memory buffer per path over the disk) and, when offered, a terminal.
function makeClient(options = {}) {
  const buffers = options.buffers ?? new Map();
  const terminals = new Map();
  let nextTerminal = 1;
  const app = client({ name: "tandem-e2e" })
    .onNotification("session/update", () => {})
    .onRequest("session/request_permission", async (ctx) => {
      const answer = options.permission ? await options.permission(ctx) : "reject_once";
      note("permission answered", { toolCallId: ctx.params.toolCall.toolCallId, answer });
      if (answer === "cancelled") return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest("fs/read_text_file", async (ctx) => {
      const file = ctx.params.path;
      if (buffers.has(file)) return { content: buffers.get(file) };
      return { content: fs.readFileSync(file, "utf8") };
    })
    .onRequest("fs/write_text_file", async (ctx) => {
      // An editor that saves what it was given, as Zed does.
      buffers.set(ctx.params.path, ctx.params.content);
      fs.writeFileSync(ctx.params.path, ctx.params.content);
      return {};
    })
    .onRequest("terminal/create", async (ctx) => {
      const { command, args = [], cwd, env = [], outputByteLimit } = ctx.params;
      const id = `term-${nextTerminal++}`;
      const vars = { ...process.env };
      for (const { name, value } of env) vars[name] = value;
      const proc = spawn(command, args, { cwd, env: vars, stdio: ["ignore", "pipe", "pipe"] });
      const terminal = { output: "", truncated: false, status: null };
      const add = (chunk) => {
        terminal.output += chunk.toString();
        if (outputByteLimit && terminal.output.length > outputByteLimit) {
          terminal.output = terminal.output.slice(-outputByteLimit);
          terminal.truncated = true;
        }
      };
      proc.stdout.on("data", add);
      proc.stderr.on("data", add);
      terminal.exit = new Promise((resolve) =>
        proc.on("close", (code, signal) => {
          terminal.status = { exitCode: code, signal };
          resolve(terminal.status);
        }),
      );
      terminal.proc = proc;
      terminals.set(id, terminal);
      return { terminalId: id };
    })
    .onRequest("terminal/output", async (ctx) => {
      const terminal = terminals.get(ctx.params.terminalId);
      return { output: terminal.output, truncated: terminal.truncated, exitStatus: terminal.status };
    })
    .onRequest("terminal/wait_for_exit", async (ctx) => terminals.get(ctx.params.terminalId).exit)
    .onRequest("terminal/kill", async (ctx) => {
      terminals.get(ctx.params.terminalId).proc.kill("SIGKILL");
      return {};
    })
    .onRequest("terminal/release", async (ctx) => {
      terminals.get(ctx.params.terminalId)?.proc.kill("SIGKILL");
      note("terminal released", { terminalId: ctx.params.terminalId });
      return {};
    });
  return { app, buffers };
}

/// Sends a request; its answer (or error) is noted and returned.
async function call(ctx, method, params) {
  try {
    const result = await ctx.request(method, params);
    note("answer", { method, result: result ?? null });
    return result;
  } catch (error) {
    note("error", { method, code: error.code, message: error.message, data: error.data ?? null });
    return { error };
  }
}

const INIT = (capabilities = {}) => ({
  protocolVersion: 1,
  clientCapabilities: {
    fs: { readTextFile: false, writeTextFile: false },
    terminal: false,
    ...capabilities,
  },
  clientInfo: { name: "tandem-e2e", version: "1.0.0" },
});

const text = (t) => ({ type: "text", text: t });
// A 1×1 PNG, as a client sends a pasted screenshot.
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
const image = () => ({ type: "image", data: PIXEL, mimeType: "image/png" });
const link = (file) => ({ type: "resource_link", name: path.basename(file), uri: `file://${file}` });
const updateOf = (message, kind) =>
  message.method === "session/update" && message.params.update.sessionUpdate === kind;

/// Runs `body(ctx)` against a fresh agent, then closes its stdin and waits for it to exit.
async function withAgent(clientOptions, body, label = "agent started") {
  mark(label);
  const agent = startAgent();
  const { app } = makeClient(clientOptions);
  const result = await app.connectWith(agent.stream, body);
  agent.child.stdin.end();
  const exit = await agent.exited;
  note("agent exited", exit);
  return result;
}

const scenarios = {
  // Initialize, a session (with an MCP server offered), mode and model chosen, one prompt with a
  // linked file; the answer streams in chunks.
  async basic() {
    await withAgent({}, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const session = await call(ctx, "session/new", {
        cwd: WS,
        mcpServers: [{ name: "docs", command: "/bin/true", args: [], env: [] }],
      });
      const sessionId = session.sessionId;
      await call(ctx, "session/set_mode", { sessionId, modeId: "auto_edit" });
      await call(ctx, "session/set_config_option", { sessionId, configId: "model", value: "second" });
      await call(ctx, "session/prompt", {
        sessionId,
        prompt: [text("Summarise the notes."), link(path.join(WS, "notes.txt"))],
      });
      await call(ctx, "session/list", { cwd: WS });
    });
  },

  // The client offers an MCP server with the session (the reference server over stdio, whose
  // script the test names in ACP_MCP_SERVER); the model calls its tool, the user allows it once.
  // ACP has no request for a server's status, and a first prompt waits only 2 s for a server
  // still starting (less than it may take on a loaded machine): the first prompt attaches one of
  // the server's resources, whose read waits for the server, so it is ready for the question.
  async mcp() {
    await withAgent({ permission: async () => "allow_once" }, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", {
        cwd: WS,
        mcpServers: [
          { name: "everything", command: "node", args: [process.env.ACP_MCP_SERVER, "stdio"], env: [] },
        ],
      });
      const features = "@everything:demo://resource/static/document/features.md";
      await call(ctx, "session/prompt", { sessionId, prompt: [text(`Summarise ${features}`)] });
      // The server's prompts are commands once it is running: they are announced after the turn.
      await waitForWire(
        (m) => updateOf(m, "available_commands_update") && JSON.stringify(m).includes("everything:args-prompt"),
        "the MCP server's prompts announced",
      );
      await call(ctx, "session/prompt", { sessionId, prompt: [text("What is 2 + 3?")] });
    });
  },

  // A client that offers its files: the linked file's unsaved text is what the model sees, and
  // the edit arrives as fs/write_text_file with a diff in the tool call.
  async edit() {
    const lib = path.join(WS, "lib.txt");
    const buffers = new Map([[lib, "alpha\nunsaved line\n"]]);
    await withAgent({ buffers }, async (ctx) => {
      await call(ctx, "initialize", INIT({ fs: { readTextFile: true, writeTextFile: true } }));
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/set_mode", { sessionId, modeId: "auto_edit" });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Capitalise alpha."), link(lib)] });
    });
    note("file on disk", { path: "lib.txt", text: fs.readFileSync(lib, "utf8") });
  },

  // Zed's @-mention: the file arrives embedded (a `resource` with its text), and the model
  // edits it at once; the user is asked with the diff and allows it. In the next turn the model
  // edits a file it has not seen: refused without asking. Then the turn is loaded again while
  // live (replayed).
  async mention_edit() {
    const util = path.join(WS, "src/util.py");
    await withAgent({ permission: async () => "allow_once" }, async (ctx) => {
      await call(ctx, "initialize", INIT({ fs: { readTextFile: true, writeTextFile: true } }));
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      const embedded = {
        type: "resource",
        resource: { uri: `file://${util}`, mimeType: "text/x-python", text: fs.readFileSync(util, "utf8") },
      };
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Rename add to plus in"), embedded] });
      note("reads after the first turn", {
        count: transcript.wire.filter((m) => m.method === "fs/read_text_file").length,
      });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Now other.py.")] });
      note("reads after the second turn", {
        count: transcript.wire.filter((m) => m.method === "fs/read_text_file").length,
      });
      mark("load");
      await call(ctx, "session/load", { sessionId, cwd: WS, mcpServers: [] });
    });
    note("file on disk", { text: fs.readFileSync(util, "utf8") });
  },

  // `authenticate`: an id it never offered, then the one it did while the only model is an
  // Ollama that does not run.
  async authenticate() {
    await withAgent({}, async (ctx) => {
      await call(ctx, "initialize", INIT());
      await call(ctx, "authenticate", { methodId: "oauth" });
      await call(ctx, "authenticate", { methodId: "settings" });
    });
  },

  // Permissions: the first command rejected (nothing runs), then allowed always (the same
  // command later in the session is not asked about again).
  async permissions() {
    const answers = ["reject_once", "allow_always"];
    const ran = path.join(WS, "ran.txt");
    await withAgent({ permission: async () => answers.shift() ?? "reject_once" }, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Record a run.")] });
      note("ran.txt after the rejected turn", { exists: fs.existsSync(ran) });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Record two runs.")] });
    });
    note("ran.txt at the end", { text: fs.existsSync(ran) ? fs.readFileSync(ran, "utf8") : null });
  },

  // Permissions: a command rejected always; the same command later in the turn is refused
  // without asking.
  async reject_always() {
    const answers = ["reject_always"];
    const ran = path.join(WS, "ran.txt");
    await withAgent({ permission: async () => answers.shift() ?? "allow_once" }, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Record a run, twice.")] });
    });
    note("ran.txt at the end", { exists: fs.existsSync(ran) });
  },

  // Cancel while a permission request is open and never answered, then while `sleep 30` runs.
  async cancel() {
    let aborted = null;
    const permission = (ctx) =>
      new Promise((resolve) => {
        // Never answered by the user; only the agent withdrawing it ends it.
        ctx.signal.addEventListener("abort", () => {
          aborted = true;
          resolve("cancelled");
        });
      });
    const pidFile = path.join(WS, "pid.txt");
    await withAgent({ permission }, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });

      const asking = call(ctx, "session/prompt", { sessionId, prompt: [text("Say hi in the shell.")] });
      await waitForWire((m) => m.method === "session/request_permission", "the permission request");
      await ctx.notify("session/cancel", { sessionId });
      await asking;
      note("permission request withdrawn", { aborted });

      await call(ctx, "session/set_mode", { sessionId, modeId: "yolo" });
      const started = Date.now();
      const sleeping = call(ctx, "session/prompt", { sessionId, prompt: [text("Sleep.")] });
      await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "", "the pid file");
      const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
      await ctx.notify("session/cancel", { sessionId });
      await sleeping;
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await until(() => !alive(), "the sleep to be killed", 10_000).catch(() => {});
      note("sleep after cancel", { alive: alive(), secondsToAnswer: (Date.now() - started) / 1000 });
    });
  },

  // A session saved by one process is listed, loaded (replayed) and continued by a second, and
  // resumed (no replay), closed and deleted by a third.
  async sessions() {
    let saved;
    await withAgent({}, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      saved = sessionId;
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Remember the word kumquat.")] });
    });
    await withAgent(
      {},
      async (ctx) => {
        await call(ctx, "initialize", INIT());
        await call(ctx, "session/list", { cwd: WS });
        await call(ctx, "session/load", { sessionId: saved, cwd: WS, mcpServers: [] });
        await call(ctx, "session/prompt", { sessionId: saved, prompt: [text("Which word?")] });
        await call(ctx, "session/close", { sessionId: saved });
        await call(ctx, "session/prompt", { sessionId: saved, prompt: [text("Still there?")] });
      },
      "second process",
    );
    await withAgent(
      {},
      async (ctx) => {
        await call(ctx, "initialize", INIT());
        await call(ctx, "session/resume", { sessionId: saved, cwd: WS, mcpServers: [] });
        await call(ctx, "session/close", { sessionId: saved });
        await call(ctx, "session/delete", { sessionId: saved });
        const after = await call(ctx, "session/list", { cwd: WS });
        note("listed after delete", { ids: after.sessions.map((s) => s.sessionId) });
      },
      "third process",
    );
  },

  // Foreground commands run in the client's terminal, shown in the tool call.
  async terminal() {
    await withAgent({}, async (ctx) => {
      await call(ctx, "initialize", INIT({ terminal: true }));
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/set_mode", { sessionId, modeId: "yolo" });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("Greet from the terminal.")] });
    });
  },

  // An image block reaches a model that takes images.
  async image() {
    await withAgent({}, async (ctx) => {
      await call(ctx, "initialize", INIT());
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/set_config_option", { sessionId, configId: "model", value: "vision" });
      await call(ctx, "session/prompt", { sessionId, prompt: [text("What is in the screenshot?"), image()] });
    });
  },

  // Bad input: each gets a clear error and the process keeps serving.
  async bad() {
    mark("agent started");
    const agent = startAgent();
    const { app } = makeClient({});
    await app.connectWith(agent.stream, async (ctx) => {
      await call(ctx, "initialize", INIT());
      // Not JSON at all, written straight to tandem's stdin between two messages.
      agent.child.stdin.write("this is not json\n");
      await waitForWire((m) => m.error?.code === -32700, "the parse error");
      await call(ctx, "tandem/nonsense", {});
      await call(ctx, "session/new", { cwd: "relative/dir", mcpServers: [] });
      await call(ctx, "session/new", { cwd: path.join(WS, "missing"), mcpServers: [] });
      await call(ctx, "session/prompt", { sessionId: "no-such-session", prompt: [text("hi")] });
      const { sessionId } = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      await call(ctx, "session/set_mode", { sessionId, modeId: "reckless" });
      await call(ctx, "session/set_config_option", { sessionId, configId: "model", value: "nope" });
      // The default model takes no images; a prompt with one is refused, saying so.
      await call(ctx, "session/prompt", { sessionId, prompt: [text("What is this?"), image()] });
      // What is no image at all is bad parameters.
      await call(ctx, "session/prompt", {
        sessionId,
        prompt: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
      });
      await call(ctx, "session/prompt", { sessionId, prompt: [link(path.join(WS, "missing.txt"))] });
      // Two prompts at once: the second waits for the first.
      await Promise.all([
        call(ctx, "session/prompt", { sessionId, prompt: [text("First.")] }),
        call(ctx, "session/prompt", { sessionId, prompt: [text("Second.")] }),
      ]);
      await call(ctx, "session/cancel-not-a-method", {});
      const again = await call(ctx, "session/new", { cwd: WS, mcpServers: [] });
      note("still serving", { sessionId: again.sessionId ?? null });
    });
    agent.child.stdin.end();
    note("agent exited", await agent.exited);
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}; the scenarios are ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
/// Prints the transcript and exits with `code` once it is written (a pipe is asynchronous).
const finish = (code) => process.stdout.write(`${JSON.stringify(transcript)}\n`, () => process.exit(code));
const limit = setTimeout(() => {
  console.error(`scenario ${scenario} did not finish within ${LIMIT_MS / 1000} s`);
  finish(3);
}, LIMIT_MS);
try {
  await run();
  clearTimeout(limit);
  finish(0);
} catch (error) {
  clearTimeout(limit);
  console.error(`scenario ${scenario} failed: ${error.stack ?? error}`);
  finish(1);
}
