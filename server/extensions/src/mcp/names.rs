//! The names an MCP server's tools get for the model: `mcp__<server>__<tool>`, in the characters
//! and length every provider accepts (`[A-Za-z0-9_-]`, at most 64), and unique across servers.
//! Approval rules name a server's tools by the `mcp__<server>` prefix.
//!
//! Names are given in a fixed order (sorted by server, then tool), so the same configuration
//! always gives the same names: a collision after sanitising is resolved by a numeric suffix on
//! the later tool, and logged, never by one tool silently replacing another.

/// The longest tool name every provider accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>`: the prefix of the server's tool names, which approval rules use to name all
/// of them.
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}", sanitize(server))
}

/// The name the model calls `tool` of `server` by, before collisions are resolved.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{}__{}", server_prefix(server), sanitize(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    // Cut, and told apart from other long names by a hash of the names as the server gave them.
    let hash = format!("_{:08x}", fnv1a(&format!("{server}\0{tool}")));
    let mut cut = full;
    cut.truncate(MAX_TOOL_NAME - hash.len());
    cut + &hash
}

/// The model's names for `tools` (server, tool pairs, in the order given), each unique. The
/// caller sorts `tools`. A tool whose plain name is free keeps it; of two with the same plain
/// name the first keeps it and the second is numbered, with a number no other tool's name uses.
pub(crate) fn assign(tools: &[(&str, &str)]) -> Vec<String> {
    let bases: Vec<String> = tools
        .iter()
        .map(|(server, tool)| tool_name(server, tool))
        .collect();
    let mut taken: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut names: Vec<Option<String>> = vec![None; tools.len()];
    for (index, base) in bases.iter().enumerate() {
        if !taken.contains_key(base) {
            taken.insert(base.clone(), index);
            names[index] = Some(base.clone());
        }
    }
    for (index, base) in bases.iter().enumerate() {
        if names[index].is_some() {
            continue;
        }
        let first = taken.get(base).map_or(index, |first| *first);
        let mut number = 2;
        let name = loop {
            let suffix = format!("_{number}");
            let mut numbered = base.clone();
            numbered.truncate(MAX_TOOL_NAME - suffix.len());
            numbered.push_str(&suffix);
            if !taken.contains_key(&numbered) {
                break numbered;
            }
            number += 1;
        };
        let (server, tool) = tools[index];
        let (first_server, first_tool) = tools[first];
        tracing::warn!(
            "MCP tools \"{first_tool}\" of server \"{first_server}\" and \"{tool}\" of server \
             \"{server}\" would both be named {base} for the model; the second is called {name}"
        );
        taken.insert(name.clone(), index);
        names[index] = Some(name);
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// `text` in the characters tool names may use: others (`.`, `/`, spaces, non-ASCII letters)
/// become `_`.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 32-bit FNV-1a: small, and the same in every build (std's hasher may change between
/// releases, and names must not).
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_prefixed() {
        assert_eq!(tool_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(
            tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(
            tool_name("my server", "fs.read/file"),
            "mcp__my_server__fs_read_file"
        );
        assert_eq!(tool_name("wiki", "søk"), "mcp__wiki__s_k");
        assert_eq!(server_prefix("git hub"), "mcp__git_hub");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_that_keeps_them_apart() {
        let long = "a".repeat(80);
        let one = tool_name("server", &format!("{long}_one"));
        let two = tool_name("server", &format!("{long}_two"));
        assert_eq!(one.len(), MAX_TOOL_NAME);
        assert_eq!(two.len(), MAX_TOOL_NAME);
        assert_ne!(one, two);
        assert!(one.starts_with("mcp__server__aaaa"));
        // Stable across runs and builds.
        assert_eq!(one, tool_name("server", &format!("{long}_one")));
        assert_eq!(fnv1a("a"), 0xe40c_292c);
    }

    #[test]
    fn collisions_are_numbered_in_order_never_overwritten() {
        let names = assign(&[
            ("git hub", "create"),
            ("git_hub", "create"),
            ("git.hub", "create"),
            ("other", "create"),
        ]);
        assert_eq!(
            names,
            [
                "mcp__git_hub__create",
                "mcp__git_hub__create_2",
                "mcp__git_hub__create_3",
                "mcp__other__create"
            ]
        );
        // A numbered name that would be too long is cut to make room for its number.
        let long = "b".repeat(70);
        let names = assign(&[("s", &format!("{long}!")), ("s", &format!("{long}?"))]);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|name| name.len() <= MAX_TOOL_NAME));
        // A tool's own name wins over a numbered one: the number moves on.
        let names = assign(&[("a", "x.y"), ("a", "x_y"), ("a", "x_y_2")]);
        assert_eq!(names, ["mcp__a__x_y", "mcp__a__x_y_3", "mcp__a__x_y_2"]);
    }
}
