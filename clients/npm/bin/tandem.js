#!/usr/bin/env node
// The `tandem` command of the npm package @tandem-lsp/tandem: finds the prebuilt binary that npm
// installed for this platform (the optional dependency @tandem-lsp/tandem-<platform>-<arch>,
// whose `os` and `cpu` fields make npm skip it everywhere else) and runs it with this command's
// arguments, stdin, stdout and stderr, so that `tandem lsp` speaks straight to the editor. The
// binary's exit code is this command's; a signal sent to this process is passed on to the
// binary, and a binary killed by a signal kills this process with the same signal. The
// environment variable TANDEM_BINARY names another binary to run instead (as esbuild's
// ESBUILD_BINARY_PATH does). Plain Node (18 or later), no dependencies.
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const manifest = require("../package.json");

const REPOSITORY = "https://github.com/tandem-lsp/tandem";

/** The platforms with a package: every optional dependency is one, named `<main>-<platform>`. */
function shippedPlatforms() {
  const prefix = `${manifest.name}-`;
  return Object.keys(manifest.optionalDependencies || {})
    .filter((name) => name.startsWith(prefix))
    .map((name) => name.slice(prefix.length))
    .sort();
}

/** Prints `lines` to stderr, the first prefixed as the binary's own errors are, and exits with 1. */
function fail(lines) {
  process.stderr.write(`tandem: ${lines.join("\n")}\n`);
  process.exit(1);
}

/** The platforms shipped and what else installs Tandem, for the messages below. */
function otherWays(shipped) {
  return [
    `${manifest.name} ships binaries for ${shipped.join(", ")}. Other ways to install Tandem:`,
    `  cargo install --locked --git ${REPOSITORY} tandem   (builds it; needs a Rust toolchain)`,
    `  a release archive (tandem and tandem-confine): ${REPOSITORY}/releases/tag/v${manifest.version}`,
    "then run that binary directly, or through this command with TANDEM_BINARY=/path/to/tandem.",
  ];
}

/** The binary to run: TANDEM_BINARY's, else the platform package's; exits with advice if none. */
function binaryPath() {
  if (process.env.TANDEM_BINARY) {
    const override = path.resolve(process.env.TANDEM_BINARY);
    if (!fs.existsSync(override)) {
      fail([`TANDEM_BINARY is set to ${override}, which does not exist.`]);
    }
    return override;
  }
  const platform = `${process.platform}-${process.arch}`;
  const shipped = shippedPlatforms();
  const binaryName = process.platform === "win32" ? "tandem.exe" : "tandem";
  if (!shipped.includes(platform)) {
    fail([`${manifest.name} has no binary for this platform (${platform}).`, ...otherWays(shipped)]);
  }
  const pkg = `${manifest.name}-${platform}`;
  let packageDir;
  try {
    packageDir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    fail([
      `the binary for this platform (${platform}) is missing: ${pkg} is not installed.`,
      `npm installs it as an optional dependency of ${manifest.name}, and leaves it out when optional`,
      "dependencies are disabled (--omit=optional, --no-optional, or omit=optional in an .npmrc:",
      "`npm config get omit` shows it) or when a package-lock.json written on another platform lacks it.",
      "Reinstall with optional dependencies, or install the platform package beside it (with -g if",
      `${manifest.name} is installed globally):`,
      `  npm install ${pkg}@${manifest.version}`,
      ...otherWays(shipped),
    ]);
  }
  const binary = path.join(packageDir, "bin", binaryName);
  if (!fs.existsSync(binary)) {
    fail([`${pkg} is installed at ${packageDir} but has no bin/${binaryName}; reinstall ${manifest.name}.`]);
  }
  return binary;
}

function main() {
  const binary = binaryPath();

  // Signals this process receives are the binary's: a `kill` of this process, or a terminal's
  // Ctrl-C, which reaches both (tandem takes a second one as it takes the first). The handlers
  // are in place before the binary starts, so that none is missed; they run from the event
  // loop, after `spawn` below has returned.
  const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
  let child;
  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
    }
  };
  for (const signal of forwarded) {
    process.on(signal, forward);
  }
  child = childProcess.spawn(binary, process.argv.slice(2), { stdio: "inherit" });

  child.on("error", (error) => {
    const hint =
      error.code === "EACCES"
        ? ` (it is not executable: chmod 755 ${binary}, or reinstall ${manifest.name})`
        : "";
    fail([`cannot run ${binary}: ${error.message}${hint}`]);
  });

  child.on("exit", (code, signal) => {
    if (signal) {
      // Die of the same signal, so that the caller sees what the binary saw. Without our
      // handler the signal's default action ends this process; one that does not end it
      // (or cannot be raised) leaves the shell's convention, 128 + its number.
      for (const name of forwarded) {
        process.removeListener(name, forward);
      }
      try {
        process.kill(process.pid, signal);
      } catch {
        // Fall through to the exit code below.
      }
      process.exit(128 + (os.constants.signals[signal] || 0));
    }
    process.exit(code === null ? 1 : code);
  });
}

main();
