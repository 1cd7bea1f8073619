#!/usr/bin/env bash
# Checks the Zed client without Zed: the extension builds, passes its tests, clippy and rustfmt
# for the host (Zed builds it for wasm32-wasip2, a target CI does not have), and
# extension.toml, registry/agent.json and registry/icon.svg hold what Zed and the ACP registry
# require. Run from anywhere: `bash clients/zed/check.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."

manifest=clients/zed/Cargo.toml
# Its own target folder under the repository's: the extension is a workspace of its own, and
# clients/zed/target is where Zed builds it.
export CARGO_TARGET_DIR="$PWD/target/zed"

cargo build --locked --manifest-path "$manifest"
cargo test --locked --manifest-path "$manifest"
cargo clippy --locked --manifest-path "$manifest" --all-targets -- -D warnings
cargo fmt --manifest-path "$manifest" -- --check

python3 - <<'EOF'
"""Validates the extension manifest, the registry entry and its icon."""
import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET

errors = []


def check(condition, message):
    if not condition:
        errors.append(message)


def non_empty_string(value):
    return isinstance(value, str) and value.strip() != ""


with open("clients/zed/Cargo.toml", "rb") as file:
    crate_version = tomllib.load(file)["package"]["version"]

# extension.toml: the keys Zed reads, and a `tandem` language server with its languages.
path = "clients/zed/extension.toml"
with open(path, "rb") as file:
    extension = tomllib.load(file)
for key in ("id", "name", "version", "description", "repository"):
    check(non_empty_string(extension.get(key)), f"{path}: `{key}` must be a non-empty string")
check(extension.get("id") == "tandem", f"{path}: `id` must be \"tandem\"")
check(extension.get("schema_version") == 1, f"{path}: `schema_version` must be 1")
check(
    extension.get("version") == crate_version,
    f"{path}: `version` {extension.get('version')!r} differs from Cargo.toml's {crate_version!r}",
)
authors = extension.get("authors")
check(
    isinstance(authors, list) and authors and all(non_empty_string(a) for a in authors),
    f"{path}: `authors` must be a non-empty list of names",
)
server = extension.get("language_servers", {}).get("tandem")
check(isinstance(server, dict), f"{path}: [language_servers.tandem] is missing")
if isinstance(server, dict):
    check(server.get("name") == "Tandem", f"{path}: the server's `name` must be \"Tandem\"")
    languages = server.get("languages")
    check(
        isinstance(languages, list) and len(languages) > 0,
        f"{path}: `languages` must be a non-empty list",
    )
    languages = languages if isinstance(languages, list) else []
    for language in languages:
        check(non_empty_string(language), f"{path}: language {language!r} is not a non-empty string")
    duplicates = sorted({l for l in languages if isinstance(l, str) and languages.count(l) > 1})
    check(not duplicates, f"{path}: languages listed twice: {duplicates}")
    for language, language_id in server.get("language_ids", {}).items():
        check(language in languages, f"{path}: language_ids names {language!r}, which is not listed")
        check(non_empty_string(language_id), f"{path}: the language id of {language!r} is empty")

# registry/agent.json: the ACP registry's schema (agent.schema.json), and `tandem acp` on
# every platform.
path = "clients/zed/registry/agent.json"
with open(path) as file:
    agent = json.load(file)
for key in ("id", "name", "version", "description", "repository", "license"):
    check(non_empty_string(agent.get(key)), f"{path}: `{key}` must be a non-empty string")
check(agent.get("id") == "tandem", f"{path}: `id` must be \"tandem\"")
check(
    re.fullmatch(r"[a-z][a-z0-9-]*", agent.get("id", "")) is not None,
    f"{path}: `id` must be lowercase letters, digits and hyphens",
)
version = agent.get("version", "")
check(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version) is not None, f"{path}: `version` must be x.y.z")
check(version == crate_version, f"{path}: `version` {version!r} differs from Cargo.toml's {crate_version!r}")
authors = agent.get("authors")
check(
    isinstance(authors, list) and all(non_empty_string(a) for a in authors),
    f"{path}: `authors` must be a list of names",
)
known = {"id", "name", "version", "description", "repository", "website", "authors", "license",
         "license_url", "icon", "distribution"}
check(not set(agent) - known, f"{path}: keys the schema does not define: {sorted(set(agent) - known)}")
distribution = agent.get("distribution", {})
check(set(distribution) == {"binary"}, f"{path}: `distribution` must hold `binary` only")
binary = distribution.get("binary", {})
platforms = {"darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64",
             "windows-aarch64", "windows-x86_64"}
check(binary and set(binary) <= platforms, f"{path}: platforms must be among {sorted(platforms)}")
check(
    {p.split("-")[0] for p in binary} == {"darwin", "linux", "windows"},
    f"{path}: binaries must cover darwin, linux and windows",
)
for platform, target in binary.items():
    where = f"{path}: {platform}"
    check(set(target) <= {"archive", "cmd", "args", "env", "sha256"}, f"{where}: unknown keys")
    archive = target.get("archive", "")
    check(archive.startswith("https://"), f"{where}: `archive` must be an https URL")
    check(f"/v{version}/" in archive, f"{where}: `archive` must name the release v{version}")
    check(
        re.search(r"\.(zip|tar\.gz|tgz|tar\.bz2|tbz2)$", archive) is not None,
        f"{where}: `archive` must be .zip, .tar.gz, .tgz, .tar.bz2 or .tbz2",
    )
    command = target.get("cmd", "")
    executable = command.removeprefix("./")
    if platform.startswith("windows"):
        executable = executable.removesuffix(".exe")
    check(executable == "tandem", f"{where}: `cmd` must run tandem, not {command!r}")
    check(target.get("args") == ["acp"], f"{where}: `args` must be [\"acp\"]")

# registry/icon.svg: what the registry's build checks — 16×16, square, one colour through
# currentColor, no comments.
path = "clients/zed/registry/icon.svg"
with open(path) as file:
    icon = file.read()
check("<!--" not in icon, f"{path}: comments are not allowed")
root = ET.fromstring(icon)
check(root.tag.rsplit("}", 1)[-1] == "svg", f"{path}: the root element must be <svg>")
check(root.get("width") == "16" and root.get("height") == "16", f"{path}: must be 16×16")
check(root.get("viewBox") == "0 0 16 16", f"{path}: viewBox must be \"0 0 16 16\"")
paints = [e.get(a) for e in root.iter() for a in ("fill", "stroke") if e.get(a) is not None]
check("currentColor" in paints, f"{path}: must paint with currentColor")
check(
    all(p.lower() in ("currentcolor", "none", "inherit") for p in paints),
    f"{path}: colours other than currentColor: {sorted(set(paints))}",
)
check(all(e.get("style") is None for e in root.iter()), f"{path}: no style attributes")

if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print("extension.toml, registry/agent.json and registry/icon.svg are valid")
EOF
