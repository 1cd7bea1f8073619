"""Checks Tandem's mason.nvim package (clients/nvim/mason/package.yaml) without the network:
it passes mason's package schema (schema/, vendored from mason-org/registry-schema) and the
other checks of mason-registry's lint (a `---` header, no CR, the package folder named after the
package, which in the registry is `packages/tandem/`); its assets are exactly the release
archives, by name, for mason's four targets; it links `tandem` and `tandem-confine`; its version
is the workspace's; and the plugin's Lua copy of it (lua/tandem/mason/tandem.lua, the `lua:`
registry the README offers until the package is in mason's registry) says the same, read by a
headless Neovim. Broken copies are fed to each check, which must reject them.

Run from the repository root (check.sh does): `python3 clients/nvim/mason/check.py`.
Needs `jsonschema` and `PyYAML` (`python3 -m pip install jsonschema PyYAML`) and, for the Lua
copy, `nvim` (skipped with a warning without it, except under CI).
"""

import copy
import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib

try:
    import jsonschema
    import referencing
    import referencing.jsonschema
    import yaml
except ImportError as error:
    sys.exit(
        f"clients/nvim/mason/check.py needs Python's jsonschema and PyYAML ({error}): "
        "python3 -m pip install jsonschema PyYAML"
    )

HERE = pathlib.Path("clients/nvim/mason")
PACKAGE = HERE / "package.yaml"
REPOSITORY = "https://github.com/tandem-lsp/tandem"
# mason's target for each release target (Linux: the static musl builds, which mason's linux_x64
# and linux_arm64 cover whatever the libc; mason wants `_gnu` targets only for glibc builds).
TARGETS = {
    "darwin_arm64": "aarch64-apple-darwin",
    "darwin_x64": "x86_64-apple-darwin",
    "linux_arm64": "aarch64-unknown-linux-musl",
    "linux_x64": "x86_64-unknown-linux-musl",
}


def schema_validator():
    """mason's package schema, its parts found by their `$id`s."""
    resources = []
    main = None
    for path in sorted((HERE / "schema").rglob("*.json")):
        contents = json.loads(path.read_text())
        resource = referencing.Resource.from_contents(
            contents, default_specification=referencing.jsonschema.DRAFT202012
        )
        resources.append((contents["$id"], resource))
        if path.name == "package.schema.json":
            main = contents
    registry = referencing.Registry().with_resources(resources)
    return jsonschema.Draft202012Validator(
        main, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def check_schema(validator, package):
    return [
        f"{PACKAGE}: schema: at '{'.'.join(str(p) for p in e.absolute_path) or 'root'}': {e.message}"
        for e in validator.iter_errors(package)
    ]


def check_text(text):
    """mason-registry's lint and contributing rules on the file itself."""
    errors = []
    if not text.startswith("---\n"):
        errors.append(f"{PACKAGE}: must start with the YAML header `---`")
    if "\r" in text:
        errors.append(f"{PACKAGE}: CR characters (mason-registry rejects CRLF files)")
    for number, line in enumerate(text.split("\n"), 1):
        if len(line) > 120:
            errors.append(f"{PACKAGE}:{number}: longer than 120 characters")
    return errors


def render(template, version):
    """mason's expressions as the package uses them: `{{ version }}`, optionally piped to
    `strip_prefix "…"`. Anything else is an error, not a guess."""

    def expression(match):
        parts = [part.strip() for part in match.group(1).split("|")]
        if parts[0] != "version":
            raise ValueError(f"unknown value {parts[0]!r} in {template!r}")
        value = version
        for step in parts[1:]:
            filter_match = re.fullmatch(r'strip_prefix\s+"([^"]*)"', step)
            if not filter_match:
                raise ValueError(f"unknown filter {step!r} in {template!r}")
            value = value.removeprefix(filter_match.group(1))
        return value

    return re.sub(r"\{\{(.*?)\}\}", expression, template)


def check_tandem(package, version):
    """What Tandem's package must say."""
    errors = []
    if package.get("name") != "tandem":
        errors.append(f"{PACKAGE}: `name` must be tandem (mason's package name, and its folder)")
    if package.get("homepage") != REPOSITORY:
        errors.append(f"{PACKAGE}: `homepage` must be {REPOSITORY}")
    if package.get("licenses") != ["MIT", "Apache-2.0"]:
        errors.append(f"{PACKAGE}: `licenses` must be [MIT, Apache-2.0]")
    if package.get("categories") != ["LSP"]:
        errors.append(f"{PACKAGE}: `categories` must be [LSP]")
    source = package.get("source", {})
    tag = f"v{version}"
    if source.get("id") != f"pkg:github/tandem-lsp/tandem@{tag}":
        errors.append(f"{PACKAGE}: `source.id` must be pkg:github/tandem-lsp/tandem@{tag} (the workspace's version)")
    assets = source.get("asset", [])
    targets = [asset.get("target") for asset in assets if isinstance(asset, dict)]
    if sorted(map(str, targets)) != sorted(TARGETS):
        errors.append(f"{PACKAGE}: the asset targets must be {sorted(TARGETS)}, not {targets}")
    for asset in assets:
        target = asset.get("target")
        if target not in TARGETS:
            continue
        want = f"tandem-{version}-{TARGETS[target]}.tar.gz"
        try:
            got = render(str(asset.get("file")), tag)
        except ValueError as error:
            errors.append(f"{PACKAGE}: {target}: {error}")
            continue
        if got != want:
            errors.append(f"{PACKAGE}: {target}'s asset is {got}, the release's archive {want}")
    if package.get("bin") != {"tandem": "tandem", "tandem-confine": "tandem-confine"}:
        errors.append(
            f"{PACKAGE}: `bin` must link tandem and tandem-confine (at the top of the archive): "
            "tandem looks for tandem-confine beside the path it was started by"
        )
    return errors


def lua_copy():
    """lua/tandem/mason/tandem.lua as JSON, from a headless Neovim; None without Neovim."""
    command = [
        "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n",
        "--cmd", "set rtp^=clients/nvim",
        "-c", 'lua io.stdout:write(vim.fn.json_encode(require("tandem.mason.tandem")))',
        "-c", "qall!",
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        if os.environ.get("CI"):
            sys.exit("clients/nvim/mason/check.py: nvim is needed under CI to read the Lua copy")
        print("*** skipped: nvim not installed; the Lua copy of the package was not compared ***")
        return None
    if result.returncode != 0:
        sys.exit(f"nvim could not read lua/tandem/mason/tandem.lua:\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    with open("Cargo.toml", "rb") as file:
        version = tomllib.load(file)["workspace"]["package"]["version"]
    text = PACKAGE.read_text()
    package = yaml.safe_load(text)
    validator = schema_validator()

    errors = check_text(text) + check_schema(validator, package) + check_tandem(package, version)

    lua = lua_copy()
    if lua is not None and lua != package:
        errors.append(
            "clients/nvim/lua/tandem/mason/tandem.lua differs from package.yaml:\n"
            f"  lua:  {json.dumps(lua, sort_keys=True)}\n  yaml: {json.dumps(package, sort_keys=True)}"
        )

    def broken(change):
        copied = copy.deepcopy(package)
        change(copied)
        return copied

    linux = lambda p: next(a for a in p["source"]["asset"] if a["target"] == "linux_x64")
    must_fail = {
        "schema: a target mason does not know": check_schema(
            validator, broken(lambda p: linux(p).update(target="linux_x64_glibc"))
        ),
        "schema: no licenses": check_schema(validator, broken(lambda p: p.pop("licenses"))),
        "schema: a category mason does not know": check_schema(
            validator, broken(lambda p: p.update(categories=["Agent"]))
        ),
        "schema: a key a package may not have": check_schema(validator, broken(lambda p: p.update(version="1"))),
        "schema: a source without a version": check_schema(
            validator, broken(lambda p: p["source"].update(id="pkg:github/tandem-lsp/tandem"))
        ),
        "tandem: a glibc archive": check_tandem(
            broken(lambda p: linux(p).update(file=linux(p)["file"].replace("musl", "gnu"))), version
        ),
        "tandem: another version": check_tandem(
            broken(lambda p: p["source"].update(id="pkg:github/tandem-lsp/tandem@v9.9.9")), version
        ),
        "tandem: the version not stripped of its v": check_tandem(
            broken(lambda p: linux(p).update(file="tandem-{{version}}-x86_64-unknown-linux-musl.tar.gz")),
            version,
        ),
        "tandem: no tandem-confine": check_tandem(broken(lambda p: p["bin"].pop("tandem-confine")), version),
        "text: CRLF": check_text(text.replace("\n", "\r\n")),
    }
    for name, found in must_fail.items():
        if not found:
            errors.append(f"check.py itself: the broken copy '{name}' passed its check")

    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    compared = "and its Lua copy says the same" if lua is not None else "(Lua copy not compared)"
    print(
        f"{PACKAGE} passes mason's schema and lint, names the v{version} archives exactly, "
        f"{compared}; {len(must_fail)} broken copies caught. Not checked here: mason's package "
        "tests (installing it on each target, which needs the published release)."
    )


if __name__ == "__main__":
    main()
