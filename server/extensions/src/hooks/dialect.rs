//! Whose hooks they are: a hook written for Claude Code (under Claude Code's event names) is
//! told of a tool call in Claude Code's terms — `Bash` with `tool_input.command`, `Write` with
//! an absolute `tool_input.file_path` — and one written for Gemini CLI (under Gemini CLI's event
//! names) in Gemini CLI's: `run_shell_command`, `write_file` with `file_path`, `BeforeTool`.
//! What a hook sends back (`updatedInput`, Gemini CLI's `tool_input`) is mapped back to
//! Tandem's arguments. A tool with no counterpart keeps Tandem's name and arguments; fields the
//! other tool has no name for keep Tandem's (hooks ignore what they do not know), so nothing of
//! the call is hidden from a hook and nothing a hook returns is lost.
//!
//! The table in docs/hooks.md says the same; `tests` below hold it to that.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::config::HookEvent;

/// The conventions a hook was written for, from the event name it is listed under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// Claude Code's: its tool names and input shapes, timeouts in seconds.
    #[default]
    Claude,
    /// Gemini CLI's: its tool names and parameter names, event names, timeouts in milliseconds.
    Gemini,
}

/// How one Tandem argument is named for the other tool.
#[derive(Clone, Copy)]
struct Field {
    tandem: &'static str,
    theirs: &'static str,
    /// A path, given to hooks absolute (against the workspace root) as both tools give theirs.
    path: bool,
}

const fn same(name: &'static str) -> Field {
    Field {
        tandem: name,
        theirs: name,
        path: false,
    }
}

const fn renamed(tandem: &'static str, theirs: &'static str) -> Field {
    Field {
        tandem,
        theirs,
        path: false,
    }
}

const fn path(tandem: &'static str, theirs: &'static str) -> Field {
    Field {
        tandem,
        theirs,
        path: true,
    }
}

/// A Tandem tool as another tool names it: its name there and how its fields map. Fields not
/// listed pass through under Tandem's names.
struct Counterpart {
    tandem: &'static str,
    theirs: &'static str,
    fields: &'static [Field],
}

const CLAUDE: &[Counterpart] = &[
    Counterpart {
        tandem: "shell",
        theirs: "Bash",
        fields: &[
            same("command"),
            renamed("timeout_ms", "timeout"),
            renamed("background", "run_in_background"),
            path("cwd", "cwd"),
        ],
    },
    Counterpart {
        tandem: "edit",
        theirs: "Edit",
        fields: &[
            path("path", "file_path"),
            same("old_string"),
            same("new_string"),
            renamed("allow_multiple", "replace_all"),
        ],
    },
    Counterpart {
        tandem: "write_file",
        theirs: "Write",
        fields: &[path("path", "file_path"), same("content")],
    },
    // `start_line`/`end_line` become `offset`/`limit` (`special_to_theirs`).
    Counterpart {
        tandem: "read_file",
        theirs: "Read",
        fields: &[path("path", "file_path")],
    },
    Counterpart {
        tandem: "grep",
        theirs: "Grep",
        fields: &[
            same("pattern"),
            path("path", "path"),
            renamed("include", "glob"),
            renamed("context", "-C"),
        ],
    },
    Counterpart {
        tandem: "glob",
        theirs: "Glob",
        fields: &[same("pattern"), path("path", "path")],
    },
    Counterpart {
        tandem: "list_directory",
        theirs: "LS",
        fields: &[path("path", "path")],
    },
    Counterpart {
        tandem: "write_todos",
        theirs: "TodoWrite",
        fields: &[same("todos")],
    },
    Counterpart {
        tandem: "web_fetch",
        theirs: "WebFetch",
        fields: &[],
    },
    Counterpart {
        tandem: "subagent",
        theirs: "Task",
        fields: &[renamed("agent", "subagent_type"), renamed("task", "prompt")],
    },
    Counterpart {
        tandem: "activate_skill",
        theirs: "Skill",
        fields: &[renamed("name", "skill")],
    },
];

const GEMINI: &[Counterpart] = &[
    Counterpart {
        tandem: "shell",
        theirs: "run_shell_command",
        fields: &[
            same("command"),
            path("cwd", "dir_path"),
            renamed("background", "is_background"),
        ],
    },
    Counterpart {
        tandem: "edit",
        theirs: "replace",
        fields: &[
            path("path", "file_path"),
            same("old_string"),
            same("new_string"),
            same("allow_multiple"),
        ],
    },
    Counterpart {
        tandem: "write_file",
        theirs: "write_file",
        fields: &[path("path", "file_path"), same("content")],
    },
    Counterpart {
        tandem: "read_file",
        theirs: "read_file",
        fields: &[
            path("path", "file_path"),
            same("start_line"),
            same("end_line"),
        ],
    },
    Counterpart {
        tandem: "read_many_files",
        theirs: "read_many_files",
        fields: &[renamed("paths", "include")],
    },
    Counterpart {
        tandem: "grep",
        theirs: "grep_search",
        fields: &[
            same("pattern"),
            path("path", "dir_path"),
            renamed("include", "include_pattern"),
        ],
    },
    Counterpart {
        tandem: "glob",
        theirs: "glob",
        fields: &[same("pattern"), path("path", "dir_path")],
    },
    Counterpart {
        tandem: "list_directory",
        theirs: "list_directory",
        fields: &[path("path", "dir_path")],
    },
    Counterpart {
        tandem: "write_todos",
        theirs: "write_todos",
        fields: &[same("todos")],
    },
    // `urls` become the `prompt` that names them (`special_to_theirs`).
    Counterpart {
        tandem: "web_fetch",
        theirs: "web_fetch",
        fields: &[],
    },
    Counterpart {
        tandem: "save_memory",
        theirs: "save_memory",
        fields: &[same("fact")],
    },
    Counterpart {
        tandem: "activate_skill",
        theirs: "activate_skill",
        fields: &[same("name")],
    },
];

impl Dialect {
    fn table(self) -> &'static [Counterpart] {
        match self {
            Dialect::Claude => CLAUDE,
            Dialect::Gemini => GEMINI,
        }
    }

    fn counterpart(self, tool: &str) -> Option<&'static Counterpart> {
        self.table()
            .iter()
            .find(|counterpart| counterpart.tandem == tool)
    }

    /// The event's name as this dialect's hooks receive it (`hook_event_name`).
    pub fn event_name(self, event: HookEvent) -> &'static str {
        match self {
            Dialect::Claude => event.name(),
            Dialect::Gemini => event.gemini_name(),
        }
    }

    /// The name this dialect gives the Tandem tool `tool`: its counterpart's, an MCP tool in
    /// its form (`mcp__server__tool` is Claude Code's too; Gemini CLI writes `mcp_server_tool`),
    /// else Tandem's own.
    pub fn tool_name(self, tool: &str) -> String {
        if let Some(counterpart) = self.counterpart(tool) {
            return counterpart.theirs.to_owned();
        }
        match (self, mcp_parts(tool)) {
            (Dialect::Gemini, Some((server, name))) => format!("mcp_{server}_{name}"),
            _ => tool.to_owned(),
        }
    }

    /// Every name any dialect gives `tool`, Tandem's first: what matchers match.
    pub fn all_names(tool: &str) -> Vec<String> {
        let mut names = vec![tool.to_owned()];
        for dialect in [Dialect::Claude, Dialect::Gemini] {
            let name = dialect.tool_name(tool);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        // Names the tools had before (Gemini CLI's grep was `search_file_content`; Claude Code
        // had `MultiEdit`), so older matchers keep matching.
        let older: &[&str] = match tool {
            "edit" => &["MultiEdit"],
            "grep" => &["search_file_content"],
            "read_many_files" => &["Read"],
            _ => &[],
        };
        names.extend(older.iter().map(|name| (*name).to_owned()));
        names
    }

    /// A call's arguments (Tandem's) as this dialect's hooks see them; relative paths made
    /// absolute against `root`.
    pub fn tool_input(self, tool: &str, arguments: &Value, root: &Path) -> Value {
        let Value::Object(arguments) = arguments else {
            return arguments.clone();
        };
        let Some(counterpart) = self.counterpart(tool) else {
            return Value::Object(arguments.clone());
        };
        let mut theirs = Map::new();
        for (key, value) in arguments {
            match counterpart.fields.iter().find(|field| field.tandem == key) {
                Some(field) if field.path => {
                    theirs.insert(field.theirs.to_owned(), absolute(value, root));
                }
                Some(field) => {
                    theirs.insert(field.theirs.to_owned(), value.clone());
                }
                None => {
                    theirs.insert(key.clone(), value.clone());
                }
            }
        }
        self.special_to_theirs(tool, arguments, &mut theirs, root);
        Value::Object(theirs)
    }

    /// What a hook gave as the call's new input (in this dialect's terms) as Tandem's
    /// arguments. `original` is the call's arguments before: a path the hook passed back as it
    /// was shown (absolute) keeps the form the model wrote.
    pub fn tool_input_back(
        self,
        tool: &str,
        given: &Value,
        original: &Value,
        root: &Path,
    ) -> Value {
        let Value::Object(given) = given else {
            return given.clone();
        };
        let Some(counterpart) = self.counterpart(tool) else {
            return Value::Object(given.clone());
        };
        let shown = self.tool_input(tool, original, root);
        let mut tandem = Map::new();
        for (key, value) in given {
            match counterpart.fields.iter().find(|field| field.theirs == key) {
                Some(field) => {
                    let unchanged = shown.get(key) == Some(value);
                    let value = match original.get(field.tandem) {
                        Some(before) if unchanged && field.path => before.clone(),
                        _ => value.clone(),
                    };
                    tandem.insert(field.tandem.to_owned(), value);
                }
                None => {
                    tandem.insert(key.clone(), value.clone());
                }
            }
        }
        self.special_back(tool, &mut tandem);
        Value::Object(tandem)
    }

    /// The fields no rename can express.
    fn special_to_theirs(
        self,
        tool: &str,
        arguments: &Map<String, Value>,
        theirs: &mut Map<String, Value>,
        root: &Path,
    ) {
        match (self, tool) {
            (Dialect::Claude, "read_file") => {
                let start = theirs.remove("start_line").and_then(|v| v.as_u64());
                let end = theirs.remove("end_line").and_then(|v| v.as_u64());
                if let Some(start) = start {
                    theirs.insert("offset".into(), json!(start));
                }
                if let Some(end) = end {
                    let first = start.unwrap_or(1);
                    theirs.insert("limit".into(), json!(end.saturating_sub(first) + 1));
                }
            }
            (Dialect::Claude, "grep") => {
                if let Some(sensitive) = theirs.remove("case_sensitive") {
                    if sensitive == json!(false) {
                        theirs.insert("-i".into(), json!(true));
                    } else {
                        theirs.insert("case_sensitive".into(), sensitive);
                    }
                }
                theirs.insert("output_mode".into(), json!("content"));
            }
            (Dialect::Claude, "list_directory") | (Dialect::Gemini, "list_directory")
                if !arguments.contains_key("path") =>
            {
                let key = if self == Dialect::Claude {
                    "path"
                } else {
                    "dir_path"
                };
                theirs.insert(key.into(), json!(root));
            }
            (Dialect::Claude, "write_todos") => {
                if let Some(Value::Array(todos)) = theirs.get_mut("todos") {
                    for todo in todos.iter_mut().filter_map(Value::as_object_mut) {
                        if let Some(description) = todo.remove("description") {
                            todo.insert("content".into(), description.clone());
                            todo.insert("activeForm".into(), description);
                        }
                    }
                }
            }
            (_, "web_fetch") => {
                let urls: Vec<String> = theirs
                    .get("urls")
                    .and_then(Value::as_array)
                    .map(|urls| {
                        urls.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                match self {
                    Dialect::Claude => {
                        if let Some(first) = urls.first() {
                            theirs.insert("url".into(), json!(first));
                        }
                        // One URL is Claude Code's shape exactly; several keep the list.
                        if urls.len() <= 1 {
                            theirs.remove("urls");
                        }
                    }
                    Dialect::Gemini => {
                        let prompt = urls.join(" ");
                        theirs.remove("urls");
                        theirs.insert("prompt".into(), json!(prompt));
                    }
                }
            }
            (Dialect::Claude, "subagent") => {
                let task = arguments.get("task").and_then(Value::as_str).unwrap_or("");
                theirs.insert("description".into(), json!(short_description(task)));
            }
            _ => {}
        }
    }

    /// `special_to_theirs` undone, on a hook's input already renamed back.
    fn special_back(self, tool: &str, tandem: &mut Map<String, Value>) {
        match (self, tool) {
            (Dialect::Claude, "read_file") => {
                let offset = tandem.remove("offset").and_then(|v| v.as_u64());
                let limit = tandem.remove("limit").and_then(|v| v.as_u64());
                if let Some(offset) = offset {
                    tandem.insert("start_line".into(), json!(offset));
                }
                if let Some(limit) = limit.filter(|limit| *limit > 0) {
                    let first = offset.unwrap_or(1);
                    tandem.insert("end_line".into(), json!(first + limit - 1));
                }
            }
            (Dialect::Claude, "grep") => {
                tandem.remove("output_mode");
                if let Some(insensitive) = tandem.remove("-i") {
                    if insensitive == json!(true) {
                        tandem.insert("case_sensitive".into(), json!(false));
                    }
                }
            }
            (Dialect::Claude, "write_todos") => {
                if let Some(Value::Array(todos)) = tandem.get_mut("todos") {
                    for todo in todos.iter_mut().filter_map(Value::as_object_mut) {
                        todo.remove("activeForm");
                        if let Some(content) = todo.remove("content") {
                            todo.insert("description".into(), content);
                        }
                    }
                }
            }
            (Dialect::Claude, "web_fetch") => {
                if let Some(url) = tandem.remove("url") {
                    tandem.entry("urls").or_insert_with(|| json!([url]));
                }
            }
            (Dialect::Gemini, "web_fetch") => {
                if let Some(prompt) = tandem.remove("prompt") {
                    let urls: Vec<&str> = prompt
                        .as_str()
                        .unwrap_or("")
                        .split_whitespace()
                        .filter(|word| word.starts_with("http://") || word.starts_with("https://"))
                        .collect();
                    tandem.insert("urls".into(), json!(urls));
                }
            }
            (Dialect::Claude, "subagent") => {
                tandem.remove("description");
            }
            _ => {}
        }
    }

    /// What a call gave, as this dialect's `PostToolUse` / `AfterTool` hooks see it. Claude
    /// Code's hooks get its shape for the tools whose response they read (`Bash`'s `stdout`,
    /// the file tools' `filePath` and `success`) beside Tandem's `output` and `is_error`;
    /// Gemini CLI's get `llmContent`, `returnDisplay` and `error`.
    pub fn tool_response(
        self,
        tool: &str,
        arguments: &Value,
        output: &str,
        is_error: bool,
        root: &Path,
    ) -> Value {
        match self {
            Dialect::Claude => {
                let mut response = Map::new();
                match tool {
                    "shell" => {
                        response.insert("stdout".into(), json!(output));
                        response.insert("stderr".into(), json!(""));
                        response.insert("interrupted".into(), json!(false));
                        response.insert("isImage".into(), json!(false));
                    }
                    "edit" | "write_file" => {
                        if let Some(path) = arguments.get("path") {
                            response.insert("filePath".into(), absolute(path, root));
                        }
                        response.insert("success".into(), json!(!is_error));
                    }
                    _ => {}
                }
                response.insert("output".into(), json!(output));
                response.insert("is_error".into(), json!(is_error));
                Value::Object(response)
            }
            Dialect::Gemini => json!({
                "llmContent": output,
                "returnDisplay": output,
                "error": if is_error { json!({"message": output}) } else { Value::Null },
            }),
        }
    }
}

/// `mcp__server__tool` as `(server, tool)`.
fn mcp_parts(tool: &str) -> Option<(&str, &str)> {
    tool.strip_prefix("mcp__")?.split_once("__")
}

/// A path argument made absolute against `root` (lexically: `..` and `.` resolved without
/// reading the disk), as Claude Code and Gemini CLI give paths to hooks.
fn absolute(value: &Value, root: &Path) -> Value {
    let Some(text) = value.as_str() else {
        return value.clone();
    };
    let path = Path::new(text);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    json!(tandem_sandbox::workspace::normalize(&joined).to_string_lossy())
}

/// Claude Code's `Task` carries a few words saying what it is for: the task's first line, cut.
fn short_description(task: &str) -> String {
    let line = task
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let line = line.trim();
    match line.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/home/ada/shop";

    /// Each row: dialect, Tandem's tool and arguments → the name and input its hooks get.
    #[test]
    fn calls_are_shown_in_each_dialect_as_its_own_tools_name_them() {
        use Dialect::{Claude, Gemini};
        let cases: Vec<(Dialect, &str, Value, &str, Value)> = vec![
            (
                Claude,
                "shell",
                json!({"command": "grep -r foo", "timeout_ms": 5000}),
                "Bash",
                json!({"command": "grep -r foo", "timeout": 5000}),
            ),
            (
                Claude,
                "shell",
                json!({"command": "ls", "cwd": "src", "background": true}),
                "Bash",
                json!({"command": "ls", "cwd": "/home/ada/shop/src", "run_in_background": true}),
            ),
            (
                Claude,
                "write_file",
                json!({"path": ".env", "content": "A=1"}),
                "Write",
                json!({"file_path": "/home/ada/shop/.env", "content": "A=1"}),
            ),
            (
                Claude,
                "write_file",
                json!({"path": "src/../.env", "content": ""}),
                "Write",
                json!({"file_path": "/home/ada/shop/.env", "content": ""}),
            ),
            (
                Claude,
                "edit",
                json!({"path": "/home/ada/shop/a.rs", "old_string": "a", "new_string": "b", "allow_multiple": true}),
                "Edit",
                json!({"file_path": "/home/ada/shop/a.rs", "old_string": "a", "new_string": "b", "replace_all": true}),
            ),
            (
                Claude,
                "read_file",
                json!({"path": "a.rs", "start_line": 10, "end_line": 19}),
                "Read",
                json!({"file_path": "/home/ada/shop/a.rs", "offset": 10, "limit": 10}),
            ),
            (
                Claude,
                "grep",
                json!({"pattern": "x", "include": "*.rs", "case_sensitive": false, "context": 2}),
                "Grep",
                json!({"pattern": "x", "glob": "*.rs", "-C": 2, "-i": true, "output_mode": "content"}),
            ),
            (
                Claude,
                "list_directory",
                json!({}),
                "LS",
                json!({"path": ROOT}),
            ),
            (
                Claude,
                "write_todos",
                json!({"todos": [{"description": "Fix it", "status": "pending"}]}),
                "TodoWrite",
                json!({"todos": [{"status": "pending", "content": "Fix it", "activeForm": "Fix it"}]}),
            ),
            (
                Claude,
                "web_fetch",
                json!({"urls": ["https://a.example"]}),
                "WebFetch",
                json!({"url": "https://a.example"}),
            ),
            (
                Claude,
                "subagent",
                json!({"agent": "codebase_investigator", "task": "Find the parser.\nThen…"}),
                "Task",
                json!({"subagent_type": "codebase_investigator", "prompt": "Find the parser.\nThen…", "description": "Find the parser."}),
            ),
            (
                Claude,
                "mcp__github__create_issue",
                json!({"title": "x"}),
                "mcp__github__create_issue",
                json!({"title": "x"}),
            ),
            (
                Claude,
                "outline",
                json!({"path": "a.rs"}),
                "outline",
                json!({"path": "a.rs"}),
            ),
            (
                Gemini,
                "shell",
                json!({"command": "ls", "cwd": "src"}),
                "run_shell_command",
                json!({"command": "ls", "dir_path": "/home/ada/shop/src"}),
            ),
            (
                Gemini,
                "edit",
                json!({"path": "a.rs", "old_string": "a", "new_string": "b"}),
                "replace",
                json!({"file_path": "/home/ada/shop/a.rs", "old_string": "a", "new_string": "b"}),
            ),
            (
                Gemini,
                "grep",
                json!({"pattern": "x", "path": "src", "include": "*.ts"}),
                "grep_search",
                json!({"pattern": "x", "dir_path": "/home/ada/shop/src", "include_pattern": "*.ts"}),
            ),
            (
                Gemini,
                "web_fetch",
                json!({"urls": ["https://a.example", "https://b.example"]}),
                "web_fetch",
                json!({"prompt": "https://a.example https://b.example"}),
            ),
            (
                Gemini,
                "mcp__github__create_issue",
                json!({}),
                "mcp_github_create_issue",
                json!({}),
            ),
        ];
        for (dialect, tool, arguments, name, input) in cases {
            assert_eq!(dialect.tool_name(tool), name, "{dialect:?} {tool}");
            let shown = dialect.tool_input(tool, &arguments, Path::new(ROOT));
            assert_eq!(shown, input, "{dialect:?} {tool} {arguments}");
            // What a hook passes back unchanged is the call as the model wrote it (a path it
            // wrote relative stays relative; `..` as written).
            let back = dialect.tool_input_back(tool, &shown, &arguments, Path::new(ROOT));
            if tool == "list_directory" {
                assert_eq!(back, json!({"path": ROOT}));
            } else {
                assert_eq!(back, arguments, "{dialect:?} {tool}: back from {shown}");
            }
        }
    }

    #[test]
    fn a_hooks_new_input_becomes_tandems_arguments() {
        let root = Path::new(ROOT);
        let original = json!({"command": "grep -r foo .", "timeout_ms": 1000});
        let given = json!({"command": "rg foo", "timeout": 2000});
        assert_eq!(
            Dialect::Claude.tool_input_back("shell", &given, &original, root),
            json!({"command": "rg foo", "timeout_ms": 2000})
        );
        let original = json!({"path": "a.txt", "content": "x"});
        let moved = json!({"file_path": "/home/ada/shop/b.txt", "content": "x"});
        assert_eq!(
            Dialect::Claude.tool_input_back("write_file", &moved, &original, root),
            json!({"path": "/home/ada/shop/b.txt", "content": "x"})
        );
        // Tandem's own names in a hook's answer are kept (hooks written for Tandem before).
        let tandems = json!({"path": "a.txt", "content": "rewritten"});
        assert_eq!(
            Dialect::Claude.tool_input_back("write_file", &tandems, &original, root),
            tandems
        );
    }

    #[test]
    fn responses_have_each_dialects_shape() {
        let root = Path::new(ROOT);
        let args = json!({"path": "a.txt", "content": "x"});
        assert_eq!(
            Dialect::Claude.tool_response("write_file", &args, "Created a.txt", false, root),
            json!({"filePath": "/home/ada/shop/a.txt", "success": true,
                   "output": "Created a.txt", "is_error": false})
        );
        assert_eq!(
            Dialect::Claude.tool_response("shell", &json!({}), "ok\nexit code: 0", false, root)
                ["stdout"],
            "ok\nexit code: 0"
        );
        assert_eq!(
            Dialect::Gemini.tool_response("write_file", &args, "no room", true, root),
            json!({"llmContent": "no room", "returnDisplay": "no room",
                   "error": {"message": "no room"}})
        );
    }

    #[test]
    fn matchers_see_every_name_a_tool_has() {
        assert_eq!(
            Dialect::all_names("shell"),
            ["shell", "Bash", "run_shell_command"]
        );
        assert_eq!(
            Dialect::all_names("grep"),
            ["grep", "Grep", "grep_search", "search_file_content"]
        );
        assert_eq!(
            Dialect::all_names("mcp__fs__read"),
            ["mcp__fs__read", "mcp_fs_read"]
        );
    }
}
