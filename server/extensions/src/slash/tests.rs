//! Invocations, precedence between sources, and the help text.

use expect_test::expect;

use super::*;

fn custom(name: &str, source: CommandSource, hint: Option<&str>, description: &str) -> Command {
    Command {
        name: name.to_owned(),
        description: description.to_owned(),
        argument_hint: hint.map(str::to_owned),
        source,
        kind: CommandKind::Custom(CustomCommand {
            template: Template::claude(description),
            allowed_tools: Vec::new(),
            model: None,
        }),
    }
}

fn user(path: &str) -> CommandSource {
    CommandSource::User { path: path.into() }
}

fn project(path: &str) -> CommandSource {
    CommandSource::Project { path: path.into() }
}

fn mcp(server: &str) -> CommandSource {
    CommandSource::Mcp {
        server: server.to_owned(),
    }
}

#[test]
fn invocations() {
    let cases = [
        ("/help", Some(("help", ""))),
        (
            "  /git:commit   fix the typo  ",
            Some(("git:commit", "fix the typo")),
        ),
        (
            "/review\nline one\nline two\n",
            Some(("review", "line one\nline two")),
        ),
        ("/restore\tturn-3", Some(("restore", "turn-3"))),
        ("/usr/bin/ls is slow", Some(("usr/bin/ls", "is slow"))),
        ("/Help", Some(("Help", ""))),
        ("/", None),
        ("/ help", None),
        ("//comment", None),
        ("help", None),
        ("why does /help fail?", None),
        ("", None),
    ];
    for (text, expected) in cases {
        let parsed = parse_invocation(text);
        let parsed = parsed
            .as_ref()
            .map(|invocation| (invocation.name.as_str(), invocation.args.as_str()));
        assert_eq!(parsed, expected, "{text:?}");
    }
}

#[test]
fn only_names_of_commands_are_invocations() {
    let mut set = CommandSet::default();
    set.add(custom(
        "git:commit",
        user("/u/git/commit.md"),
        None,
        "Commit",
    ));
    let found = |text: &str| {
        set.find_invocation(text)
            .map(|(command, invocation)| (command.name.clone(), invocation.args))
    };
    assert_eq!(
        found("/help me"),
        Some(("help".to_owned(), "me".to_owned()))
    );
    assert_eq!(
        found("/git:commit x"),
        Some(("git:commit".to_owned(), "x".to_owned()))
    );
    // Case-sensitive, and a path is a prompt.
    assert_eq!(found("/HELP"), None);
    assert_eq!(found("/usr/bin/ls is slow"), None);
    assert_eq!(found("/git:commi"), None);
}

#[test]
fn built_ins_are_not_expanded() {
    let set = CommandSet::default();
    assert_eq!(set.get("init").unwrap().expand("anything"), None);
    let command = custom("x", user("/u/x.md"), None, "Say $ARGUMENTS");
    assert_eq!(
        command.expand("hi"),
        Some(vec![Piece::Text("Say hi".to_owned())])
    );
}

#[test]
fn precedence_between_sources() {
    let mut set = CommandSet::default();
    set.add(custom("fmt", mcp("tools"), None, "from MCP"));
    set.add(custom("fmt", user("/u/fmt.md"), None, "from the user"));
    set.add(custom(
        "fmt",
        project("/p/fmt.md"),
        None,
        "from the project",
    ));
    set.add(custom("fmt", user("/u2/fmt.md"), None, "a user file after"));
    set.add(custom("fmt", mcp("late"), None, "MCP after"));
    set.add(custom("clear", project("/p/clear.md"), None, "not allowed"));
    set.add(custom("lint", mcp("a"), None, "first server"));
    set.add(custom("lint", mcp("b"), None, "second server"));
    assert_eq!(set.get("fmt").unwrap().description, "from the project");
    assert_eq!(set.get("lint").unwrap().description, "second server");
    assert_eq!(set.get("clear").unwrap().source, CommandSource::BuiltIn);
    expect![[r#"
        [
            "/fmt is defined twice: /u/fmt.md is used, the MCP server tools is ignored",
            "/fmt: the project's /p/fmt.md overrides the user's /u/fmt.md",
            "/u2/fmt.md: /fmt is already defined by /p/fmt.md, which takes precedence; ignored",
            "the MCP server late: /fmt is already defined by /p/fmt.md, which takes precedence; ignored",
            "/p/clear.md: /clear is a built-in command and cannot be replaced; ignored",
            "/lint is defined twice: the MCP server b is used, the MCP server a is ignored",
        ]
    "#]]
    .assert_debug_eq(&set.warnings);
}

#[test]
fn help_lists_every_group() {
    let mut set = CommandSet::default();
    set.add(custom(
        "git:commit",
        project("/p/.gemini/commands/git/commit.toml"),
        Some("<message>"),
        "Commit in this project's style",
    ));
    set.add(custom(
        "review",
        user("/u/review.md"),
        Some("[file]"),
        "Review a file",
    ));
    set.add(custom(
        "explain",
        user("/u/explain.md"),
        None,
        "Explain the code",
    ));
    set.add(custom(
        "github:pr",
        mcp("github"),
        Some("<number>"),
        "Summarise a pull request",
    ));
    expect![[r#"
        Built-in commands:
          /clear — Start a fresh conversation in this session; files stay as they are
          /compress — Replace the conversation so far with a summary, to free the context window
          /help — List the commands, with what each one does
          /init — Have the agent study the project and write an AGENTS.md with what it should know about it
          /memory show | add <text> | reload — Show what the agent remembers, add a note to the memory, or reload the memory files
          /restore [turn] — Undo the file changes of the latest turn that made any, or of the given turn and every turn after it

        Project commands:
          /git:commit <message> — Commit in this project's style

        User commands:
          /explain — Explain the code
          /review [file] — Review a file

        MCP prompts:
          /github:pr <number> — Summarise a pull request (from github)"#]]
    .assert_eq(&render_help(&set));
    // Groups without commands are left out.
    assert!(!render_help(&CommandSet::default()).contains("User commands"));
}
