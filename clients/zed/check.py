"""Checks the Zed client's manifests without Zed or the network: extension.toml holds what Zed
reads; registry/agent.json passes the ACP registry's schema (registry/agent.schema.json, vendored)
and the checks of the registry's build script (.github/workflows/build_registry.py of
agentclientprotocol/registry), and names the release archives exactly; registry/icon.svg passes
the registry's icon rules. The one registry check it cannot make is that each archive URL
answers (it needs the network and a published release).

Each check is a function of the data, so the script also feeds it broken copies and fails if
one of them passes: a check that cannot fail checks nothing.

Run from the repository root (clients/zed/check.sh does): `python3 clients/zed/check.py`.
Needs `jsonschema` (`python3 -m pip install jsonschema`).
"""

import copy
import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET

try:
    import jsonschema
except ImportError:
    sys.exit(
        "clients/zed/check.py needs Python's jsonschema to check registry/agent.json against the "
        "ACP registry's schema: python3 -m pip install jsonschema"
    )

ZED = "clients/zed"
REPOSITORY = "https://github.com/tandem-lsp/tandem"
LICENSE_URL = f"{REPOSITORY}/blob/main/LICENSE-MIT"
# The registry's platform names and the release target built for each (Linux: the static musl
# builds, which run on every distribution). Windows is not built: Tandem needs Unix process
# groups. The registry only warns when an OS family is missing.
TARGETS = {
    "darwin-aarch64": "aarch64-apple-darwin",
    "darwin-x86_64": "x86_64-apple-darwin",
    "linux-aarch64": "aarch64-unknown-linux-musl",
    "linux-x86_64": "x86_64-unknown-linux-musl",
}

# From build_registry.py.
VALID_DISTRIBUTION_TYPES = {"binary", "npx", "uvx"}
VALID_PLATFORMS = {
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
}
REQUIRED_OS_FAMILIES = {"darwin", "linux", "windows"}
REJECTED_ARCHIVE_EXTENSIONS = (".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage")
ALLOWED_PAINTS = {"currentcolor", "none", "inherit"}


def non_empty_string(value):
    return isinstance(value, str) and value.strip() != ""


def archive_url(version, target):
    return f"{REPOSITORY}/releases/download/v{version}/tandem-{version}-{target}.tar.gz"


def check_extension(extension, crate_version):
    """extension.toml: the keys Zed reads, and a `tandem` language server with its languages."""
    errors = []
    path = f"{ZED}/extension.toml"
    for key in ("id", "name", "version", "description", "repository"):
        if not non_empty_string(extension.get(key)):
            errors.append(f"{path}: `{key}` must be a non-empty string")
    if extension.get("id") != "tandem":
        errors.append(f"{path}: `id` must be \"tandem\"")
    if extension.get("schema_version") != 1:
        errors.append(f"{path}: `schema_version` must be 1")
    if extension.get("version") != crate_version:
        errors.append(
            f"{path}: `version` {extension.get('version')!r} differs from Cargo.toml's {crate_version!r}"
        )
    if extension.get("repository") != REPOSITORY:
        errors.append(f"{path}: `repository` must be {REPOSITORY}")
    authors = extension.get("authors")
    if not (isinstance(authors, list) and authors and all(non_empty_string(a) for a in authors)):
        errors.append(f"{path}: `authors` must be a non-empty list of names")
    server = extension.get("language_servers", {}).get("tandem")
    if not isinstance(server, dict):
        return errors + [f"{path}: [language_servers.tandem] is missing"]
    if server.get("name") != "Tandem":
        errors.append(f"{path}: the server's `name` must be \"Tandem\"")
    languages = server.get("languages")
    if not (isinstance(languages, list) and languages):
        errors.append(f"{path}: `languages` must be a non-empty list")
        languages = []
    for language in languages:
        if not non_empty_string(language):
            errors.append(f"{path}: language {language!r} is not a non-empty string")
    duplicates = sorted({l for l in languages if isinstance(l, str) and languages.count(l) > 1})
    if duplicates:
        errors.append(f"{path}: languages listed twice: {duplicates}")
    for language, language_id in server.get("language_ids", {}).items():
        if language not in languages:
            errors.append(f"{path}: language_ids names {language!r}, which is not listed")
        if not non_empty_string(language_id):
            errors.append(f"{path}: the language id of {language!r} is empty")
    return errors


def check_schema(agent, schema):
    """The registry's schema, validated as its build does (no format checks)."""
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"registry/agent.json: schema: at '{'.'.join(str(p) for p in e.absolute_path) or 'root'}': {e.message}"
        for e in sorted(validator.iter_errors(agent), key=lambda e: list(e.absolute_path))
    ]


def version_from_url(url):
    """build_registry.py's extract_version_from_url, for GitHub release URLs."""
    match = re.search(r"/(?:download|releases)/v?([\d.]+)/", url)
    if not match:
        return None
    parts = match.group(1).split(".")
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts[:3])


def check_registry_rules(agent, directory="tandem"):
    """build_registry.py's validate_agent and validate_distribution_versions. `directory` is the
    folder the entry is submitted in (the registry requires it to be the id)."""
    errors = []
    where = "registry/agent.json"
    agent_id = agent.get("id", "")
    if not agent_id or not agent_id[0].isalpha():
        errors.append(f"{where}: `id` must start with a letter")
    elif not all(c.islower() or c.isdigit() or c == "-" for c in agent_id):
        errors.append(f"{where}: `id` must be lowercase letters, digits and hyphens")
    elif agent_id != directory:
        errors.append(f"{where}: `id` {agent_id!r} must be the submission folder's name {directory!r}")
    version = agent.get("version", "")
    parts = version.split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
        errors.append(f"{where}: `version` {version!r} must be x.y.z")
    distribution = agent.get("distribution")
    if not isinstance(distribution, dict) or not distribution:
        return errors + [f"{where}: `distribution` must be a non-empty object"]
    unknown = set(distribution) - VALID_DISTRIBUTION_TYPES
    if unknown:
        errors.append(f"{where}: unknown distribution types {sorted(unknown)}")
    binary = distribution.get("binary", {})
    unknown = set(binary) - VALID_PLATFORMS
    if unknown:
        errors.append(f"{where}: unknown platforms {sorted(unknown)}")
    for platform, target in binary.items():
        archive = target.get("archive")
        if archive is None:
            errors.append(f"{where}: {platform} has no `archive`")
        elif archive.lower().endswith(REJECTED_ARCHIVE_EXTENSIONS):
            errors.append(f"{where}: {platform}'s archive is an installer format")
        elif "/latest/" in archive:
            errors.append(f"{where}: {platform}'s archive uses /latest/; name the version")
        elif version_from_url(archive) not in (None, version):
            errors.append(
                f"{where}: {platform}'s archive is version {version_from_url(archive)}, the entry {version}"
            )
        if "cmd" not in target:
            errors.append(f"{where}: {platform} has no `cmd`")
    return errors


def check_tandem_entry(agent, crate_version):
    """What Tandem's entry must say: this version, the licence and its text, and for each
    released target its archive, by the exact name the release workflow gives it, run as
    `./tandem acp` (the archives are flat)."""
    errors = []
    where = "registry/agent.json"
    if agent.get("id") != "tandem":
        errors.append(f"{where}: `id` must be \"tandem\"")
    if agent.get("version") != crate_version:
        errors.append(f"{where}: `version` {agent.get('version')!r} differs from Cargo.toml's {crate_version!r}")
    if agent.get("repository") != REPOSITORY:
        errors.append(f"{where}: `repository` must be {REPOSITORY}")
    if agent.get("license") != "MIT OR Apache-2.0":
        errors.append(f"{where}: `license` must be \"MIT OR Apache-2.0\"")
    if agent.get("license_url") != LICENSE_URL:
        errors.append(f"{where}: `license_url` must be {LICENSE_URL}")
    authors = agent.get("authors")
    if not (isinstance(authors, list) and authors and all(non_empty_string(a) for a in authors)):
        errors.append(f"{where}: `authors` must be a non-empty list of names")
    binary = agent.get("distribution", {}).get("binary", {})
    if set(binary) != set(TARGETS):
        errors.append(f"{where}: the platforms must be exactly {sorted(TARGETS)}, not {sorted(binary)}")
    for platform, target in binary.items():
        if platform in TARGETS and target.get("archive") != archive_url(crate_version, TARGETS[platform]):
            errors.append(
                f"{where}: {platform}'s archive must be {archive_url(crate_version, TARGETS[platform])}"
            )
        if target.get("cmd") != "./tandem":
            errors.append(f"{where}: {platform}'s `cmd` must be \"./tandem\"")
        if target.get("args") != ["acp"]:
            errors.append(f"{where}: {platform}'s `args` must be [\"acp\"]")
    return errors


def check_icon(text):
    """build_registry.py's validate_icon: no comments, an <svg> root 16×16 and square (from
    width/height, units dropped, else the viewBox), painted only with currentColor (attributes,
    inline styles and <style> rules)."""
    errors = []
    where = "registry/icon.svg"
    if "<!--" in text:
        errors.append(f"{where}: comments are not allowed (they break the registry's MDX pages)")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        return errors + [f"{where}: not valid XML: {error}"]
    if root.tag.rsplit("}", 1)[-1] != "svg":
        return errors + [f"{where}: the root element must be <svg>"]
    width = height = None
    if root.get("width") and root.get("height"):
        try:
            width = float(re.sub(r"[a-z%]+$", "", root.get("width").strip(), flags=re.IGNORECASE))
            height = float(re.sub(r"[a-z%]+$", "", root.get("height").strip(), flags=re.IGNORECASE))
        except ValueError:
            pass
    if (width is None or height is None) and root.get("viewBox"):
        box = root.get("viewBox").split()
        if len(box) == 4:
            try:
                width, height = float(box[2]), float(box[3])
            except ValueError:
                pass
    if width is None or height is None:
        return errors + [f"{where}: no width/height and no viewBox"]
    if width != height:
        errors.append(f"{where}: must be square, not {width}x{height}")
    if (width, height) != (16, 16):
        errors.append(f"{where}: must be 16x16, not {width:g}x{height:g}")
    paints = []
    for element in root.iter():
        paints += [element.get(a) for a in ("fill", "stroke") if element.get(a) is not None]
        for declaration in (element.get("style") or "").split(";"):
            name, _, value = declaration.partition(":")
            if name.strip().lower() in ("fill", "stroke"):
                paints.append(value)
        if element.tag.rsplit("}", 1)[-1] == "style" and element.text:
            paints += re.findall(r"\b(?:fill|stroke)\s*:\s*([^;}\s]+)", element.text, re.IGNORECASE)
    paints = [p.strip().lower() for p in paints]
    if "currentcolor" not in paints:
        errors.append(f"{where}: must paint with currentColor")
    others = sorted({p for p in paints if p not in ALLOWED_PAINTS})
    if others:
        errors.append(f"{where}: colours other than currentColor: {others}")
    return errors


def check_lib(source):
    """src/lib.rs downloads the same archives: each released target is named there."""
    return [
        f"{ZED}/src/lib.rs: the release target {target} is not named"
        for target in TARGETS.values()
        if f'"{target}"' not in source
    ]


def main():
    with open(f"{ZED}/Cargo.toml", "rb") as file:
        crate_version = tomllib.load(file)["package"]["version"]
    with open(f"{ZED}/extension.toml", "rb") as file:
        extension = tomllib.load(file)
    with open(f"{ZED}/registry/agent.json") as file:
        agent = json.load(file)
    with open(f"{ZED}/registry/agent.schema.json") as file:
        schema = json.load(file)
    with open(f"{ZED}/registry/icon.svg") as file:
        icon = file.read()
    with open(f"{ZED}/src/lib.rs") as file:
        lib = file.read()

    def agent_errors(entry):
        return (
            check_schema(entry, schema)
            + check_registry_rules(entry)
            + check_tandem_entry(entry, crate_version)
        )

    errors = (
        check_extension(extension, crate_version)
        + agent_errors(agent)
        + check_icon(icon)
        + check_lib(lib)
    )

    # Broken copies that must be caught, each by the check named.
    def broken(change):
        entry = copy.deepcopy(agent)
        change(entry)
        return entry

    linux = lambda entry: entry["distribution"]["binary"]["linux-x86_64"]
    must_fail = {
        "schema: a platform the registry does not know": check_schema(
            broken(lambda e: e["distribution"]["binary"].update({"freebsd-x86_64": linux(e)})), schema
        ),
        "schema: a key a binary target may not have": check_schema(
            broken(lambda e: linux(e).update(path="tandem")), schema
        ),
        "schema: no distribution": check_schema(broken(lambda e: e.pop("distribution")), schema),
        "registry: an archive of another version": check_registry_rules(
            broken(lambda e: linux(e).update(archive=linux(e)["archive"].replace("/v", "/v9")))
        ),
        "registry: an installer": check_registry_rules(
            broken(lambda e: linux(e).update(archive=linux(e)["archive"] + ".deb"))
        ),
        "tandem: a glibc archive": check_tandem_entry(
            broken(lambda e: linux(e).update(archive=linux(e)["archive"].replace("musl", "gnu"))),
            crate_version,
        ),
        "tandem: a Windows platform": check_tandem_entry(
            broken(lambda e: e["distribution"]["binary"].update({"windows-x86_64": linux(e)})),
            crate_version,
        ),
        "tandem: no license_url": check_tandem_entry(broken(lambda e: e.pop("license_url")), crate_version),
        "icon: a hard-coded colour": check_icon(icon.replace('stroke="currentColor"', 'stroke="#ff0000"')),
        "icon: a colour in a style": check_icon(icon.replace("<circle ", '<circle style="fill: red" ', 1)),
        "icon: 24×24": check_icon(icon.replace('width="16" height="16"', 'width="24" height="24"')),
        "icon: a comment": check_icon(icon.replace("<circle", "<!-- c --><circle", 1)),
    }
    for name, found in must_fail.items():
        if not found:
            errors.append(f"check.py itself: the broken copy '{name}' passed its check")

    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    missing = REQUIRED_OS_FAMILIES - {p.split("-")[0] for p in agent["distribution"]["binary"]}
    print(
        "extension.toml, registry/agent.json (schema and registry rules) and registry/icon.svg are "
        f"valid; {len(must_fail)} broken copies caught. The registry will warn (not fail) that the "
        f"entry has no builds for: {', '.join(sorted(missing))}. Not checked here: that the archive "
        "URLs answer (they need the published release)."
    )


if __name__ == "__main__":
    main()
