//! The boundaries ARCHITECTURE.md promises, checked from the manifests so they cannot rot quietly.

use std::path::Path;

fn manifest(crate_dir: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("Cargo.toml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Names of the normal (non-dev) dependencies a manifest declares.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_dependencies = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if in_dependencies {
            if let Some((name, _)) = line.split_once(['=', '.']) {
                if !name.trim().is_empty() && !name.starts_with('#') {
                    names.push(name.trim().to_owned());
                }
            }
        }
    }
    names
}

#[test]
fn only_the_lsp_crate_knows_lsp() {
    for crate_dir in ["text", "syntax", "providers", "agent", "tandem"] {
        let deps = dependencies(&manifest(crate_dir));
        assert!(!deps.is_empty(), "{crate_dir}: no dependencies parsed");
        for forbidden in ["tower-lsp", "lsp-types"] {
            assert!(
                !deps.iter().any(|d| d == forbidden),
                "server/{crate_dir} depends on {forbidden}"
            );
        }
    }
    assert!(dependencies(&manifest("lsp"))
        .iter()
        .any(|d| d == "tower-lsp"));
}

#[test]
fn text_does_no_async_and_no_network() {
    let deps = dependencies(&manifest("text"));
    for forbidden in ["tokio", "futures", "reqwest", "tower", "tower-lsp"] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "server/text depends on {forbidden}"
        );
    }
}

#[test]
fn syntax_does_no_async_no_network_and_sits_below_the_agent() {
    let deps = dependencies(&manifest("syntax"));
    assert!(
        deps.iter().any(|d| d == "tree-sitter"),
        "no dependencies parsed"
    );
    for forbidden in [
        "tokio",
        "futures",
        "reqwest",
        "tower",
        "tandem-providers",
        "tandem-agent",
        "tandem-lsp",
    ] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "server/syntax depends on {forbidden}"
        );
    }
}

#[test]
fn providers_know_nothing_of_the_front_ends_or_the_text_model() {
    let deps = dependencies(&manifest("providers"));
    assert!(
        deps.iter().any(|d| d == "reqwest"),
        "no dependencies parsed"
    );
    for forbidden in [
        "tandem-lsp",
        "tandem-text",
        "tower-lsp",
        "lsp-types",
        "tower",
    ] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "server/providers depends on {forbidden}"
        );
    }
}

#[test]
fn only_the_http_module_sends_the_api_key() {
    // `ApiKey::expose` is the only way to the key's text; it may be called where the request is
    // built and errors are scrubbed, and nowhere else.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let uses = text.matches(".expose()").count();
        match name {
            "http.rs" => assert!(uses > 0, "http.rs no longer sends the key"),
            _ => assert_eq!(uses, 0, "{name} calls ApiKey::expose"),
        }
    }
}
