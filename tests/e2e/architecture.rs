//! The boundaries ARCHITECTURE.md promises, checked on the resolved dependency graph (`cargo
//! metadata`) so they cannot rot quietly: a dependency counts however it is declared (plain,
//! `[dependencies.x]`, under a target-specific table, renamed) and whatever brings it in.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

/// The workspace's resolved graph: each package's name and its normal (not dev, not build)
/// dependencies, for every target platform.
struct Graph {
    /// Package id → (name, ids of normal dependencies).
    packages: HashMap<String, (String, Vec<String>)>,
}

impl Graph {
    fn get() -> &'static Graph {
        static GRAPH: OnceLock<Graph> = OnceLock::new();
        GRAPH.get_or_init(|| {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let out = std::process::Command::new(cargo)
                .args(["metadata", "--format-version", "1", "--locked"])
                .current_dir(&workspace)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "cargo metadata failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Graph::from_metadata(&serde_json::from_slice(&out.stdout).unwrap())
        })
    }

    fn from_metadata(metadata: &Value) -> Graph {
        let names: HashMap<&str, &str> = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|package| {
                (
                    package["id"].as_str().unwrap(),
                    package["name"].as_str().unwrap(),
                )
            })
            .collect();
        let packages = metadata["resolve"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|node| {
                let id = node["id"].as_str().unwrap();
                let normal = node["deps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|dep| {
                        dep["dep_kinds"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|kind| kind["kind"].is_null())
                    })
                    .map(|dep| dep["pkg"].as_str().unwrap().to_owned())
                    .collect();
                (id.to_owned(), (names[id].to_owned(), normal))
            })
            .collect();
        Graph { packages }
    }

    fn id_of(&self, name: &str) -> &str {
        let ids: Vec<&String> = self
            .packages
            .iter()
            .filter(|(_, (package, _))| package == name)
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids.len(), 1, "{name}: {ids:?}");
        ids[0]
    }

    /// The names of `name`'s own normal dependencies.
    fn direct(&self, name: &str) -> BTreeSet<&str> {
        self.packages[self.id_of(name)]
            .1
            .iter()
            .map(|id| self.packages[id].0.as_str())
            .collect()
    }

    /// The names of every package `name` needs to run: its normal dependencies, theirs, and so on.
    fn transitive(&self, name: &str) -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut names = BTreeSet::new();
        let mut next = vec![self.id_of(name)];
        while let Some(id) = next.pop() {
            for dep in &self.packages[id].1 {
                if seen.insert(dep.as_str()) {
                    names.insert(self.packages[dep].0.as_str());
                    next.push(dep);
                }
            }
        }
        names
    }
}

/// Fails naming each of `forbidden` that is in `deps`.
fn assert_none_of(krate: &str, how: &str, deps: &BTreeSet<&str>, forbidden: &[&str]) {
    let found: Vec<&&str> = forbidden
        .iter()
        .filter(|name| deps.contains(**name))
        .collect();
    assert!(found.is_empty(), "{krate} {how} depends on {found:?}");
}

/// The agent core's crates, bottom to top (ARCHITECTURE.md draws the graph).
const CORE: [&str; 7] = [
    "tandem-protocol",
    "tandem-sandbox",
    "tandem-completion",
    "tandem-tools",
    "tandem-extensions",
    "tandem-session",
    "tandem-agent",
];

/// Each of the core's crates uses exactly the Tandem crates ARCHITECTURE.md allows it, all of
/// them below it: a new arrow (above all one pointing up, which would make a cycle once the
/// lower crate needed it back) must change this table and the drawing together.
#[test]
fn each_core_crate_uses_only_the_crates_below_it() {
    let graph = Graph::get();
    let allowed: [(&str, &[&str]); 7] = [
        ("tandem-protocol", &["tandem-providers"]),
        (
            "tandem-sandbox",
            &["tandem-protocol", "tandem-providers", "tandem-syntax"],
        ),
        (
            "tandem-completion",
            &["tandem-providers", "tandem-sandbox", "tandem-syntax"],
        ),
        (
            "tandem-tools",
            &[
                "tandem-protocol",
                "tandem-providers",
                "tandem-sandbox",
                "tandem-syntax",
            ],
        ),
        (
            "tandem-extensions",
            &[
                "tandem-protocol",
                "tandem-providers",
                "tandem-sandbox",
                "tandem-tools",
            ],
        ),
        (
            "tandem-session",
            &[
                "tandem-extensions",
                "tandem-protocol",
                "tandem-providers",
                "tandem-sandbox",
                "tandem-tools",
            ],
        ),
        (
            "tandem-agent",
            &[
                "tandem-completion",
                "tandem-extensions",
                "tandem-protocol",
                "tandem-providers",
                "tandem-sandbox",
                "tandem-session",
                "tandem-syntax",
                "tandem-tools",
            ],
        ),
    ];
    assert_eq!(allowed.map(|(krate, _)| krate), CORE);
    for (index, (krate, expected)) in allowed.iter().enumerate() {
        let tandem: BTreeSet<&str> = graph
            .direct(krate)
            .into_iter()
            .filter(|name| name.starts_with("tandem"))
            .collect();
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(tandem, expected, "{krate}'s Tandem dependencies");
        // Nothing above it, however far down the arrow comes back.
        let above = &CORE[index + 1..];
        assert_none_of(krate, "transitively", &graph.transitive(krate), above);
    }
}

#[test]
fn the_graph_sees_target_specific_dependencies() {
    // `nix` is declared under `[target.'cfg(unix)'.dependencies]`: a check that reads only
    // `[dependencies]` would miss a forbidden crate declared the same way.
    assert!(Graph::get().direct("tandem-sandbox").contains("nix"));
    // And dev-dependencies are not counted as the crate's own.
    assert!(!Graph::get().direct("tandem-sandbox").contains("tempfile"));
}

#[test]
fn only_the_lsp_crate_knows_lsp() {
    let graph = Graph::get();
    let lsp = ["tower-lsp", "lsp-types"];
    for krate in ["tandem-text", "tandem-syntax", "tandem-providers"]
        .into_iter()
        .chain(CORE)
    {
        assert_none_of(krate, "transitively", &graph.transitive(krate), &lsp);
    }
    assert_none_of(
        "tandem-acp",
        "transitively",
        &graph.transitive("tandem-acp"),
        &lsp,
    );
    // The binary reaches LSP only through tandem-lsp.
    assert_none_of("tandem", "directly", &graph.direct("tandem"), &lsp);
    assert!(graph.direct("tandem-lsp").contains("tower-lsp"));
}

/// The language-server client (for the agent's diagnostics where no editor gives them) speaks
/// LSP with its own few message shapes: it knows no LSP library and no Tandem crate, and the
/// core does not know it.
#[test]
fn the_language_server_client_stands_alone() {
    let graph = Graph::get();
    let deps = graph.transitive("tandem-lsp-client");
    assert!(deps.contains("tokio"), "{deps:?}");
    let forbidden = [
        "tower-lsp",
        "lsp-types",
        "tandem-text",
        "tandem-syntax",
        "tandem-providers",
        "tandem-agent",
        "tandem-lsp",
        "tandem-acp",
    ];
    assert_none_of("tandem-lsp-client", "transitively", &deps, &forbidden);
    for krate in ["tandem-text", "tandem-syntax", "tandem-providers"]
        .into_iter()
        .chain(CORE)
    {
        assert_none_of(
            krate,
            "transitively",
            &graph.transitive(krate),
            &["tandem-lsp-client"],
        );
    }
}

#[test]
fn text_does_no_async_and_no_network() {
    let deps = Graph::get().transitive("tandem-text");
    assert!(deps.contains("ropey"), "{deps:?}");
    let forbidden = ["tokio", "futures", "reqwest", "hyper", "tower", "tower-lsp"];
    assert_none_of("tandem-text", "transitively", &deps, &forbidden);
}

#[test]
fn syntax_does_no_async_no_network_and_sits_below_the_agent() {
    let deps = Graph::get().transitive("tandem-syntax");
    assert!(deps.contains("tree-sitter"), "{deps:?}");
    let forbidden = [
        "tokio",
        "futures",
        "reqwest",
        "hyper",
        "tower",
        "tandem-providers",
        "tandem-agent",
        "tandem-lsp",
    ];
    assert_none_of("tandem-syntax", "transitively", &deps, &forbidden);
}

/// The protocol between the agent and its front ends is data: it sits below the core, does no
/// I/O of its own (its only I/O-capable dependency is the providers' crate, for the token counts
/// of `Usage`), and knows neither the core nor a front end.
#[test]
fn the_protocol_is_data_below_the_core() {
    let graph = Graph::get();
    let direct = graph.direct("tandem-protocol");
    let allowed = ["serde", "serde_json", "schemars", "tandem-providers"];
    let others: Vec<&&str> = direct
        .iter()
        .filter(|name| !allowed.contains(*name))
        .collect();
    assert!(others.is_empty(), "tandem-protocol depends on {others:?}");
    let forbidden = [
        "tandem-agent",
        "tandem-lsp",
        "tandem-acp",
        "tandem-syntax",
        "tandem-text",
        "tokio",
    ];
    assert_none_of("tandem-protocol", "directly", &direct, &forbidden);
    assert!(graph.direct("tandem-agent").contains("tandem-protocol"));
}

/// The sandbox and approval policy sit below the tools and sessions: they know no tool, no
/// session, no MCP, no network client of their own, and no front end.
#[test]
fn the_sandbox_is_policy_below_the_tools() {
    let graph = Graph::get();
    let direct = graph.direct("tandem-sandbox");
    assert!(direct.contains("tandem-protocol"), "{direct:?}");
    let forbidden = [
        "tandem-agent",
        "tandem-lsp",
        "tandem-acp",
        "rmcp",
        "reqwest",
        "jsonschema",
        "grep-searcher",
    ];
    assert_none_of("tandem-sandbox", "directly", &direct, &forbidden);
    assert_none_of(
        "tandem-sandbox",
        "transitively",
        &graph.transitive("tandem-sandbox"),
        &["tandem-agent", "tandem-lsp", "tandem-acp"],
    );
    assert!(graph.direct("tandem-agent").contains("tandem-sandbox"));
}

/// Inline completions share only the sandbox with the agent: they sit beside it, not in it.
#[test]
fn completions_stand_beside_the_agent() {
    let graph = Graph::get();
    assert_none_of(
        "tandem-completion",
        "transitively",
        &graph.transitive("tandem-completion"),
        &["tandem-agent", "rmcp", "tower-lsp"],
    );
    assert!(graph.direct("tandem-agent").contains("tandem-completion"));
}

/// The built-in tools know no session, MCP client, skill or front end: the tools that need
/// those live with what they need (`activate_skill` in the extensions, `subagent` in the
/// session).
#[test]
fn the_tools_know_no_session() {
    let graph = Graph::get();
    let direct = graph.direct("tandem-tools");
    assert!(direct.contains("tandem-sandbox"), "{direct:?}");
    assert_none_of(
        "tandem-tools",
        "transitively",
        &graph.transitive("tandem-tools"),
        &[
            "tandem-agent",
            "tandem-session",
            "tandem-extensions",
            "tandem-completion",
            "rmcp",
            "tandem-lsp",
            "tandem-acp",
        ],
    );
    assert!(graph.direct("tandem-agent").contains("tandem-tools"));
}

/// MCP (and with it rmcp, the only crate that speaks it) is an extension: the tools below know
/// nothing of it, and the extensions know no session, which runs them.
#[test]
fn the_extensions_know_no_session() {
    let graph = Graph::get();
    let direct = graph.direct("tandem-extensions");
    assert!(direct.contains("rmcp"), "{direct:?}");
    for krate in ["tandem-protocol", "tandem-sandbox", "tandem-tools"] {
        assert_none_of(krate, "transitively", &graph.transitive(krate), &["rmcp"]);
    }
    assert_none_of(
        "tandem-extensions",
        "transitively",
        &graph.transitive("tandem-extensions"),
        &["tandem-session", "tandem-agent", "tandem-completion"],
    );
}

#[test]
fn providers_know_nothing_of_the_front_ends_or_the_text_model() {
    let graph = Graph::get();
    let deps = graph.transitive("tandem-providers");
    assert!(deps.contains("reqwest"), "{deps:?}");
    let forbidden = [
        "tandem-lsp",
        "tandem-text",
        "tandem-agent",
        "tower-lsp",
        "lsp-types",
    ];
    assert_none_of("tandem-providers", "transitively", &deps, &forbidden);
    // reqwest brings tower in for its own use; the providers do not build on it.
    assert_none_of(
        "tandem-providers",
        "directly",
        &graph.direct("tandem-providers"),
        &["tower"],
    );
}

#[test]
fn the_core_knows_no_front_end() {
    let graph = Graph::get();
    let front_ends = [
        "tandem-lsp",
        "tandem-acp",
        "agent-client-protocol",
        "tandem",
    ];
    for krate in ["tandem-text", "tandem-syntax", "tandem-providers"]
        .into_iter()
        .chain(CORE)
    {
        assert_none_of(krate, "transitively", &graph.transitive(krate), &front_ends);
    }
}

#[test]
fn only_the_acp_crate_knows_acp() {
    let graph = Graph::get();
    let acp = ["agent-client-protocol", "agent-client-protocol-schema"];
    for krate in ["tandem-text", "tandem-syntax", "tandem-providers"]
        .into_iter()
        .chain(CORE)
        .chain(["tandem-lsp"])
    {
        assert_none_of(krate, "transitively", &graph.transitive(krate), &acp);
    }
    assert_none_of("tandem", "directly", &graph.direct("tandem"), &acp);
    assert!(graph.direct("tandem-acp").contains("agent-client-protocol"));
    // The terminal chat is the other side: an ACP client.
    assert!(graph
        .direct("tandem-chat")
        .contains("agent-client-protocol"));
}

/// The terminal chat is a front end over ACP alone: it reaches the agent through `tandem-acp`
/// (in this process, or an editor's server over the attach socket), never the core's crates
/// directly, and knows no LSP.
#[test]
fn the_chat_reaches_the_agent_only_through_acp() {
    let graph = Graph::get();
    assert_none_of(
        "tandem-chat",
        "directly",
        &graph.direct("tandem-chat"),
        &CORE,
    );
    assert_none_of(
        "tandem-chat",
        "transitively",
        &graph.transitive("tandem-chat"),
        &["tandem-lsp", "tower-lsp", "lsp-types"],
    );
    assert!(graph.direct("tandem-chat").contains("tandem-acp"));
}

/// One session host serves every front end: only the core builds sessions. `tandem demo` is the
/// exception it documents: it plays a recording in a bare session, so that the user's settings,
/// memory and saved sessions play no part.
#[test]
fn front_ends_build_no_sessions_of_their_own() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut builders = Vec::new();
    for front_end in ["lsp/src", "acp/src", "chat/src", "tandem/src"] {
        let dir = server.join(front_end);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut stack: Vec<_> = entries.map(|entry| entry.unwrap().path()).collect();
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs")
                || path.ends_with("tandem/src/demo.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("Session::new(") || text.contains("Session::resume(") {
                builders.push(path.display().to_string());
            }
        }
    }
    assert!(
        builders.is_empty(),
        "front ends build sessions; use tandem_agent::host: {builders:?}"
    );
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

/// The newcomer's review: the README asked for Rust 1.88 while the workspace needed 1.90, and
/// counted ten tools where there were fourteen. What the README states about the build and the
/// agent must be what the code says.
#[test]
fn the_readme_states_the_rust_version_and_tool_count_the_code_has() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        readme.contains(&format!("Rust {version} or newer")),
        "README.md does not say `Rust {version} or newer`"
    );
    let count = tandem_agent::tools::all().len();
    let words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let said = words
        .get(count)
        .map_or(count.to_string(), |word| word.to_string());
    assert!(
        readme.contains(&format!("{said} tools")),
        "README.md does not say `{said} tools` ({count} tools exist)"
    );
}
