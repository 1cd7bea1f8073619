#!/usr/bin/env bash
# Checks Tandem's mason.nvim package (package.yaml) offline: mason's schema (vendored in schema/)
# and lint, the release archives' names, and the plugin's Lua copy of it (check.py says what
# exactly). Needs Python's jsonschema and PyYAML, and nvim. Run from anywhere:
# `bash clients/nvim/mason/check.sh`.
set -euo pipefail
cd "$(dirname "$0")/../../.."
python3 clients/nvim/mason/check.py
