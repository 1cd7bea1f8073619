//! `$VAR`, `${VAR}` and `${VAR:-default}` in a server's settings, replaced from Tandem's
//! environment when the server starts (so a token stays in the environment, not in the settings
//! file). Expanded: `command`, `args`, `env` values, `cwd`, `url`/`httpUrl` and `headers`
//! values. `$$` is a literal `$`; a `$` not followed by a name or `{` stays as it is.
//!
//! An unset variable without a default becomes the empty string, with a warning naming the
//! server and the variable: the server may still work without it, and the warning says why it
//! does not.

use std::path::PathBuf;

use super::config::McpServerSettings;

/// Looks a variable up: the process environment in Tandem, a map in tests.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `settings` with every variable reference replaced, and a warning for each unset variable.
pub(crate) fn expand_settings(
    server: &str,
    settings: &McpServerSettings,
    lookup: Lookup<'_>,
) -> (McpServerSettings, Vec<String>) {
    let mut unset = Vec::new();
    let mut text = |value: &str| expand(value, lookup, &mut unset);
    let expanded = McpServerSettings {
        command: settings.command.as_deref().map(&mut text),
        args: settings.args.iter().map(|arg| text(arg)).collect(),
        env: settings
            .env
            .iter()
            .map(|(name, value)| (name.clone(), text(value)))
            .collect(),
        cwd: settings
            .cwd
            .as_ref()
            .map(|cwd| PathBuf::from(text(&cwd.to_string_lossy()))),
        url: settings.url.as_deref().map(&mut text),
        http_url: settings.http_url.as_deref().map(&mut text),
        headers: settings
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), text(value)))
            .collect(),
        ..settings.clone()
    };
    let mut seen = Vec::new();
    let warnings = unset
        .into_iter()
        .filter(|name| {
            let new = !seen.contains(name);
            seen.push(name.clone());
            new
        })
        .map(|name| {
            format!(
                "MCP server \"{server}\": the environment variable `{name}` is not set, so it was \
                 replaced by an empty string; set it before starting Tandem, or give a default \
                 with `${{{name}:-default}}`"
            )
        })
        .collect();
    (expanded, warnings)
}

/// `text` with its variable references replaced; the names of unset variables without a
/// default are added to `unset`.
pub(crate) fn expand(text: &str, lookup: Lookup<'_>, unset: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = after.strip_prefix('{') {
            match closing_brace(inner) {
                Some(end) => {
                    let (name, default) = match inner[..end].split_once(":-") {
                        Some((name, default)) => (name, Some(default)),
                        None => (&inner[..end], None),
                    };
                    if is_name(name) {
                        match (lookup(name).filter(|value| !value.is_empty()), default) {
                            (Some(value), _) => out.push_str(&value),
                            // The default may itself refer to variables.
                            (None, Some(default)) => out.push_str(&expand(default, lookup, unset)),
                            (None, None) => {
                                // `${VAR}` set to the empty string is not unset.
                                if lookup(name).is_none() {
                                    unset.push(name.to_owned());
                                }
                            }
                        }
                    } else {
                        out.push_str(&rest[at..at + 2 + end + 1]);
                    }
                    rest = &inner[end + 1..];
                }
                // An unclosed `${` is kept as written.
                None => {
                    out.push_str("${");
                    rest = inner;
                }
            }
        } else {
            let len = name_length(after);
            if len == 0 {
                out.push('$');
            } else {
                let name = &after[..len];
                match lookup(name) {
                    Some(value) => out.push_str(&value),
                    None => unset.push(name.to_owned()),
                }
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

/// The byte index of the `}` that closes a `${`, counting nested `${…}` in a default.
fn closing_brace(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = inner.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        match byte {
            b'{' if index > 0 && bytes[index - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(index),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The length of the variable name at the start of `text` (`[A-Za-z_][A-Za-z0-9_]*`).
fn name_length(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, first)) if first.is_ascii_alphabetic() || first == '_' => {}
        _ => return 0,
    }
    chars
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(at, _)| at)
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && name_length(text) == text.len()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".to_owned()),
            "TOKEN" => Some("secret".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn run(text: &str) -> (String, Vec<String>) {
        let mut unset = Vec::new();
        let out = expand(text, &env, &mut unset);
        (out, unset)
    }

    #[test]
    fn references_defaults_and_literal_dollars() {
        let cases = [
            ("$HOME/bin", "/home/me/bin"),
            ("${HOME}bin", "/home/mebin"),
            ("Bearer ${TOKEN}", "Bearer secret"),
            ("${MISSING:-fallback}", "fallback"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${MISSING:-$HOME/x}", "/home/me/x"),
            ("${MISSING:-${TOKEN}}", "secret"),
            ("${TOKEN:-unused}", "secret"),
            ("$$HOME costs $$5", "$HOME costs $5"),
            (
                "$5 and $ alone and trailing $",
                "$5 and $ alone and trailing $",
            ),
            ("${not a name}", "${not a name}"),
            ("${unclosed", "${unclosed"),
            ("${EMPTY}", ""),
            ("é$HOME", "é/home/me"),
        ];
        for (text, expected) in cases {
            let (out, unset) = run(text);
            assert_eq!(out, expected, "{text}");
            assert!(unset.is_empty(), "{text}: {unset:?}");
        }
        assert_eq!(
            run("a${MISSING}b$ALSO_MISSING"),
            (
                "ab".to_owned(),
                vec!["MISSING".to_owned(), "ALSO_MISSING".to_owned()]
            )
        );
    }

    #[test]
    fn every_expandable_setting_is_expanded_and_each_unset_variable_warned_once() {
        let settings: McpServerSettings = serde_json::from_value(json!({
            "command": "$HOME/bin/server",
            "args": ["--token", "${TOKEN}", "--user", "$USER_NAME"],
            "env": {"GITHUB_TOKEN": "${TOKEN}", "OTHER": "$USER_NAME"},
            "cwd": "${HOME}/work",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "description": "$HOME stays"
        }))
        .unwrap();
        let (expanded, warnings) = expand_settings("github", &settings, &env);
        assert_eq!(expanded.command.as_deref(), Some("/home/me/bin/server"));
        assert_eq!(expanded.args, ["--token", "secret", "--user", ""]);
        let expected_env: BTreeMap<String, String> = [
            ("GITHUB_TOKEN".to_owned(), "secret".to_owned()),
            ("OTHER".to_owned(), String::new()),
        ]
        .into();
        assert_eq!(expanded.env, expected_env);
        assert_eq!(expanded.cwd, Some(PathBuf::from("/home/me/work")));
        assert_eq!(expanded.headers["Authorization"], "Bearer secret");
        assert_eq!(expanded.description.as_deref(), Some("$HOME stays"));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("MCP server \"github\""));
        assert!(warnings[0].contains("`USER_NAME` is not set"));

        let urls: McpServerSettings =
            serde_json::from_value(json!({"url": "http://${MISSING:-localhost}:8080/sse",
                "httpUrl": "$HOME"}))
            .unwrap();
        let (expanded, warnings) = expand_settings("web", &urls, &env);
        assert_eq!(expanded.url.as_deref(), Some("http://localhost:8080/sse"));
        assert_eq!(expanded.http_url.as_deref(), Some("/home/me"));
        assert!(warnings.is_empty());
    }
}
