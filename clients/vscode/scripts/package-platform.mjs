// Packages the platform-specific .vsix of one VS Code target, with Tandem's server inside:
//
//   npm run package:platform -- --target linux-x64 --server <dir> [--out <file>]
//
// <dir> holds the target's `tandem` and `tandem-confine` (a release archive's contents). In a
// temporary copy of this folder (its node_modules linked, so this folder never holds a server
// that a later universal `npm run package` could ship), the script copies the two binaries to
// `server/` (mode 0755: vsce keeps file modes in the .vsix and VS Code restores them), writes the
// target's name to `server/target` (the extension's messages name it when the binary does not
// run), and runs `vsce package --target <target> --no-dependencies`, whose prepublish step builds
// the extension in production mode. The .vsix goes to <file>, by default
// dist/tandem-<version>-<target>.vsix (relative paths are from where npm was started). Before packaging it checks that each binary is an
// executable of the target's kind (ELF or Mach-O, and the CPU), so that a binary of the wrong
// target cannot be shipped by mistake.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The targets the release builds the server for: the OS's executable format and the CPU. */
const TARGETS = {
  "linux-x64": { format: "ELF", cpu: "x86_64" },
  "linux-arm64": { format: "ELF", cpu: "aarch64" },
  // Alpine's builds carry the same static musl binaries as Linux's.
  "alpine-x64": { format: "ELF", cpu: "x86_64" },
  "alpine-arm64": { format: "ELF", cpu: "aarch64" },
  "darwin-x64": { format: "Mach-O", cpu: "x86_64" },
  "darwin-arm64": { format: "Mach-O", cpu: "aarch64" },
};
const BINARIES = ["tandem", "tandem-confine"];

function fail(message) {
  process.stderr.write(`package-platform: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (!["--target", "--server", "--out"].includes(flag)) {
      fail(`unknown argument "${flag}"; usage: npm run package:platform -- --target <target> --server <dir> [--out <file>]`);
    }
    const value = argv[++i];
    if (value === undefined) fail(`${flag} needs a value`);
    args[flag.slice(2)] = value;
  }
  if (!args.target || !args.server) {
    fail("usage: npm run package:platform -- --target <target> --server <dir with tandem and tandem-confine> [--out <file>]");
  }
  if (!TARGETS[args.target]) {
    fail(`no server is built for "${args.target}"; the targets are ${Object.keys(TARGETS).join(", ")}`);
  }
  return args;
}

/** The executable format and CPU of the file at `path`, from its header. */
function executableKind(path) {
  const header = Buffer.alloc(20);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) === 0x7f454c46) {
    // e_machine, little-endian on both targets.
    const machine = header.readUInt16LE(18);
    return { format: "ELF", cpu: { 0x3e: "x86_64", 0xb7: "aarch64" }[machine] ?? `machine 0x${machine.toString(16)}` };
  }
  if (header.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = header.readUInt32LE(4);
    return { format: "Mach-O", cpu: { 0x01000007: "x86_64", 0x0100000c: "aarch64" }[cpu] ?? `cputype 0x${cpu.toString(16)}` };
  }
  return { format: "neither ELF nor 64-bit Mach-O", cpu: "" };
}

const args = parseArgs(process.argv.slice(2));
// Relative paths are the caller's: npm runs scripts in the package's folder (also with
// `--prefix`) and says in INIT_CWD where it was started.
const cwd = process.env.INIT_CWD ?? process.cwd();
args.server = resolve(cwd, args.server);
const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const version = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).version;
const out = args.out ? resolve(cwd, args.out) : join(here, "dist", `tandem-${version}-${args.target}.vsix`);
const want = TARGETS[args.target];
for (const name of BINARIES) {
  const file = join(args.server, name);
  if (!existsSync(file) || !statSync(file).isFile()) fail(`${file} is missing: --server must name the folder holding ${BINARIES.join(" and ")}`);
  const kind = executableKind(file);
  if (kind.format !== want.format || kind.cpu !== want.cpu) {
    fail(`${file} is ${kind.format} ${kind.cpu}, not the ${want.format} ${want.cpu} executable ${args.target} needs`);
  }
}
if (!existsSync(join(here, "node_modules"))) fail("node_modules is missing: run `npm ci` first");

const stage = mkdtempSync(join(tmpdir(), `tandem-vsix-${args.target}-`));
let status = 1;
try {
  cpSync(here, stage, {
    recursive: true,
    filter: (source) => ![join(here, "node_modules"), join(here, "dist"), join(here, "server")].includes(source),
  });
  symlinkSync(join(here, "node_modules"), join(stage, "node_modules"));
  mkdirSync(join(stage, "server"));
  for (const name of BINARIES) {
    copyFileSync(join(args.server, name), join(stage, "server", name));
    chmodSync(join(stage, "server", name), 0o755);
  }
  writeFileSync(join(stage, "server", "target"), `${args.target}\n`);
  mkdirSync(dirname(out), { recursive: true });
  const vsce = join(here, "node_modules", "@vscode", "vsce", "vsce");
  const result = spawnSync(
    process.execPath,
    [vsce, "package", "--target", args.target, "--no-dependencies", "--out", out],
    { cwd: stage, stdio: "inherit" },
  );
  status = result.status ?? 1;
  if (status === 0) {
    process.stdout.write(`package-platform: ${out} (${(statSync(out).size / 1024 / 1024).toFixed(1)} MiB)\n`);
  }
} finally {
  rmSync(stage, { recursive: true, force: true });
}
process.exit(status);
