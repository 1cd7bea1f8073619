#!/usr/bin/env bash
# Checks the Zed client without Zed: the extension builds, passes its tests, clippy and rustfmt
# for the host (Zed builds it for wasm32-wasip2, a target CI does not have), and
# extension.toml, registry/agent.json and registry/icon.svg hold what Zed and the ACP registry
# require (check.py: the registry's schema, vendored in registry/agent.schema.json, and its build
# script's rules; it needs Python's jsonschema). Run from anywhere: `bash clients/zed/check.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."

manifest=clients/zed/Cargo.toml
# Its own target folder under the repository's: the extension is a workspace of its own, and
# clients/zed/target is where Zed builds it.
export CARGO_TARGET_DIR="$PWD/target/zed"

# The manifests first: seconds, where the build takes minutes.
python3 clients/zed/check.py
cargo build --locked --manifest-path "$manifest"
cargo test --locked --manifest-path "$manifest"
cargo clippy --locked --manifest-path "$manifest" --all-targets -- -D warnings
cargo fmt --manifest-path "$manifest" -- --check
