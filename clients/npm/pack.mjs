#!/usr/bin/env node
// Builds Tandem's npm packages as tarballs (`npm pack`), ready for `npm publish <tarball>`.
//
//   node clients/npm/pack.mjs --version VERSION --out DIR [--target TARGET --binaries BINDIR]
//
// --version   the release's version, the workspace's (Cargo.toml's [workspace.package]); it must
//             be the version in clients/npm/package.json and of each of its optionalDependencies,
//             or nothing is packed.
// --out       where the tarballs go (created if missing).
// --target    a platform package to pack: linux-x64, linux-arm64, darwin-x64 or darwin-arm64, or
//             the Rust target it is built from: x86_64-unknown-linux-musl,
//             aarch64-unknown-linux-musl, x86_64-apple-darwin, aarch64-apple-darwin.
// --binaries  with --target: the folder holding that target's `tandem` and `tandem-confine` (a
//             release archive's contents will do); each must be an executable of the target's OS
//             and CPU.
//
// Each run packs the main package, @tandem-lsp/tandem, and with --target the platform package
// @tandem-lsp/tandem-<target>, and prints the tarballs' paths on stdout, one a line (npm names
// them tandem-lsp-tandem-VERSION.tgz and tandem-lsp-tandem-<target>-VERSION.tgz). The main
// package's tarball is the same, byte for byte, from every run of one version with one npm
// (npm pack fixes the files' times and owners), so a release can take it from any of its
// per-target runs. Publish each with `npm publish --access public TARBALL` (scoped packages are
// private by default), the four platform packages before the main package, so that no one
// installs a main package whose binaries are not there yet.
//
// How the packages are built (for contributors): the convention of esbuild, Biome and Codex.
// The main package (the template in this folder: package.json, bin/tandem.js, README.md) holds
// no binary; it lists the four platform packages as optionalDependencies at its own exact
// version. Each platform package has `os` and `cpu` fields, so npm installs only the one for the
// machine it runs on and skips the others without failing; it holds `bin/tandem` and
// `bin/tandem-confine` (mode 0755) and no `bin` field of its own. The main package's
// bin/tandem.js finds the platform package with require.resolve and runs its binary. No package
// has an install script, so `--ignore-scripts` and offline installs work. Platform packages are
// written here from the main template's metadata; nothing else in this folder is generated. The
// licence files come from the repository's root. Release a new version by changing the version
// in package.json (all five places) with the workspace's; tests/e2e/npm.rs packs these packages
// with the test's own binaries, installs them from the tarballs offline into a clean prefix and
// runs them, and fails if the versions differ.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../..");

/** The platform packages: npm's `os` and `cpu`, the Rust target, and the executable format. */
const TARGETS = {
  "linux-x64": { os: "linux", cpu: "x64", rust: "x86_64-unknown-linux-musl", format: "ELF x86-64" },
  "linux-arm64": { os: "linux", cpu: "arm64", rust: "aarch64-unknown-linux-musl", format: "ELF aarch64" },
  "darwin-x64": { os: "darwin", cpu: "x64", rust: "x86_64-apple-darwin", format: "Mach-O x86-64" },
  "darwin-arm64": { os: "darwin", cpu: "arm64", rust: "aarch64-apple-darwin", format: "Mach-O arm64" },
};

const BINARIES = ["tandem", "tandem-confine"];
const LICENSES = ["LICENSE-MIT", "LICENSE-APACHE"];

function fail(message) {
  process.stderr.write(`pack.mjs: ${message}\n`);
  process.exit(1);
}

/** The executable format of the file at `file`, in TARGETS' words, or a description of it. */
function executableFormat(file) {
  const fd = fs.openSync(file, "r");
  const head = Buffer.alloc(20);
  const read = fs.readSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  if (read >= 20 && head.readUInt32BE(0) === 0x7f454c46) {
    // ELF: e_machine at 18, in the byte order e_ident[5] names (1: little-endian).
    const machine = head[5] === 1 ? head.readUInt16LE(18) : head.readUInt16BE(18);
    const names = { 0x3e: "x86-64", 0xb7: "aarch64" };
    return `ELF ${names[machine] || `machine 0x${machine.toString(16)}`}`;
  }
  if (read >= 8 && head.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = head.readUInt32LE(4);
    const names = { 0x01000007: "x86-64", 0x0100000c: "arm64" };
    return `Mach-O ${names[cpu] || `cpu 0x${cpu.toString(16)}`}`;
  }
  return "not an ELF or 64-bit Mach-O executable";
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** `npm pack` of the package in `dir` into `out`; the tarball's path. */
function npmPack(dir, out) {
  const json = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [packed] = JSON.parse(json);
  return path.join(out, packed.filename);
}

function main() {
  const usage = "usage: node clients/npm/pack.mjs --version VERSION --out DIR [--target TARGET --binaries BINDIR]";
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        version: { type: "string" },
        out: { type: "string" },
        target: { type: "string" },
        binaries: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    fail(`${error.message}\n${usage}`);
  }
  if (!values.version || !values.out) {
    fail(usage);
  }
  if (Boolean(values.target) !== Boolean(values.binaries)) {
    fail("--target and --binaries go together: the folder of that target's tandem and tandem-confine");
  }

  const manifest = JSON.parse(fs.readFileSync(path.join(here, "package.json"), "utf8"));
  const version = values.version.replace(/^v/, "");
  const mismatched = [["version", manifest.version], ...Object.entries(manifest.optionalDependencies)]
    .filter(([, v]) => v !== version)
    .map(([name, v]) => `${name} is ${v}`);
  if (mismatched.length > 0) {
    fail(
      `clients/npm/package.json is not at version ${version}: ${mismatched.join(", ")}. ` +
        "Set its version and its optionalDependencies' to the workspace's version.",
    );
  }

  let target;
  if (values.target) {
    target = Object.keys(TARGETS).find((name) => name === values.target || TARGETS[name].rust === values.target);
    if (!target) {
      const known = Object.entries(TARGETS).map(([name, t]) => `${name} (${t.rust})`);
      fail(`unknown --target ${values.target}; the targets are ${known.join(", ")}`);
    }
    const platformPackage = `${manifest.name}-${target}`;
    if (manifest.optionalDependencies[platformPackage] === undefined) {
      fail(`clients/npm/package.json does not list ${platformPackage} in its optionalDependencies`);
    }
  }

  const binaries = BINARIES.map((binary) => path.join(path.resolve(values.binaries || "."), binary));
  if (target) {
    const spec = TARGETS[target];
    for (const source of binaries) {
      if (!fs.statSync(source, { throwIfNoEntry: false })?.isFile()) {
        fail(`${source} is missing; --binaries must hold ${BINARIES.join(" and ")}`);
      }
      const format = executableFormat(source);
      if (format !== spec.format) {
        fail(`${source} is ${format}, not ${spec.format} as ${target} (${spec.rust}) needs`);
      }
    }
  }

  const licenses = LICENSES.map((name) => path.join(repoRoot, name));
  for (const file of licenses) {
    if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
      fail(`${file} is missing; the packages ship the repository's licence files`);
    }
  }

  const out = path.resolve(values.out);
  fs.mkdirSync(out, { recursive: true });
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), "tandem-npm-"));
  const tarballs = [];
  try {
    // The main package: the template as it is.
    const main = path.join(staging, "main");
    fs.mkdirSync(path.join(main, "bin"), { recursive: true });
    fs.copyFileSync(path.join(here, "package.json"), path.join(main, "package.json"));
    fs.copyFileSync(path.join(here, "README.md"), path.join(main, "README.md"));
    fs.copyFileSync(path.join(here, "bin/tandem.js"), path.join(main, "bin/tandem.js"));
    fs.chmodSync(path.join(main, "bin/tandem.js"), 0o755);
    for (const file of licenses) {
      fs.copyFileSync(file, path.join(main, path.basename(file)));
    }
    tarballs.push(npmPack(main, out));

    if (target) {
      const spec = TARGETS[target];
      const name = `${manifest.name}-${target}`;
      const dir = path.join(staging, target);
      fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
      for (const source of binaries) {
        const copy = path.join(dir, "bin", path.basename(source));
        fs.copyFileSync(source, copy);
        fs.chmodSync(copy, 0o755);
      }
      for (const file of licenses) {
        fs.copyFileSync(file, path.join(dir, path.basename(file)));
      }
      writeJson(path.join(dir, "package.json"), {
        name,
        version,
        description: `The ${target} binaries of ${manifest.name} (Tandem, built for ${spec.rust}). Install ${manifest.name}, which installs this package on ${target}.`,
        homepage: manifest.homepage,
        bugs: manifest.bugs,
        repository: manifest.repository,
        license: manifest.license,
        os: [spec.os],
        cpu: [spec.cpu],
        files: ["bin/tandem", "bin/tandem-confine", "README.md", ...LICENSES],
        // Yarn's Plug'n'Play keeps a package's files in a zip unless told otherwise; a binary
        // must be a real file to run.
        preferUnplugged: true,
      });
      fs.writeFileSync(
        path.join(dir, "README.md"),
        `# ${name}\n\n` +
          `The \`tandem\` and \`tandem-confine\` binaries of [${manifest.name}](https://www.npmjs.com/package/${manifest.name}) ` +
          `for ${target} (built for the Rust target \`${spec.rust}\`).\n\n` +
          `Install [${manifest.name}](https://www.npmjs.com/package/${manifest.name}) instead: it depends on this ` +
          `package, which npm installs only on ${target}, and its \`tandem\` command runs the binary here.\n`,
      );
      tarballs.push(npmPack(dir, out));
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  process.stdout.write(tarballs.map((file) => `${file}\n`).join(""));
}

main();
