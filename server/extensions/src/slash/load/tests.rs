//! Loading the fixture directories (`tests/fixtures/commands`: a home with Gemini CLI and
//! Claude Code commands, Tandem's config directory, a project) and edge cases in temporary
//! directories.

use expect_test::{expect, Expect};

use super::*;
use crate::slash::{BuiltIn, Dialect};

fn fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/commands");
    std::fs::canonicalize(dir).unwrap()
}

/// Every command (built-ins by name only) and every warning, paths relative to `base`.
fn render(set: &CommandSet, base: &Path) -> String {
    let mut out = String::new();
    let builtins: Vec<&str> = BuiltIn::ALL.iter().map(|builtin| builtin.name()).collect();
    for command in set.iter() {
        let (source, path) = match &command.source {
            CommandSource::BuiltIn => continue,
            CommandSource::User { path } => ("user", path),
            CommandSource::Project { path } => ("project", path),
            CommandSource::Mcp { .. } => unreachable!("no MCP commands are loaded from files"),
            CommandSource::Plugin { path, .. } => ("plugin", path),
        };
        let path = path.strip_prefix(base).unwrap_or(path).display();
        out.push_str(&format!("/{}", command.name));
        if let Some(hint) = &command.argument_hint {
            out.push_str(&format!(" {hint}"));
        }
        out.push_str(&format!(" — {}\n    {source} {path}", command.description));
        if let CommandKind::Custom(custom) = &command.kind {
            let dialect = match custom.template.dialect() {
                Dialect::Gemini => "gemini",
                Dialect::Claude => "claude",
            };
            out.push_str(&format!(", {dialect}"));
            if !custom.allowed_tools.is_empty() {
                out.push_str(&format!(", tools {:?}", custom.allowed_tools));
            }
            if let Some(model) = &custom.model {
                out.push_str(&format!(", model {model}"));
            }
        }
        out.push('\n');
    }
    out.push_str(&format!("built-in: {}\n", builtins.join(" ")));
    for warning in &set.warnings {
        let base = base.display().to_string();
        out.push_str(&format!(
            "warning: {}\n",
            warning.replace(&base, "<fixtures>")
        ));
    }
    out
}

fn check_dir(dir: &Path, expected: Expect) {
    let set = CommandSet::load(&CommandDirs {
        user: vec![dir.to_path_buf()],
        ..CommandDirs::default()
    });
    expected.assert_eq(&render(&set, dir));
}

#[test]
fn fixture_directories() {
    let base = fixtures();
    let dirs = CommandDirs::standard(
        Some(&base.join("home")),
        Some(&base.join("config/tandem")),
        Some(&base.join("project")),
    );
    let set = CommandSet::load(&dirs);
    expect![[r#"
        /deploy — Deploy the current branch to staging, after running every check there is and…
            user home/.claude/commands/deploy.md, claude
        /explain [file] [audience] — Explain code, simply
            user home/.claude/commands/explain.md, claude, tools ["Read", "Bash(git log:*)"], model claude-sonnet-4
        /frontend:component — Create a React component named $ARGUMENTS following @src/components/Button.tsx.
            project project/.claude/commands/frontend/component.md, claude
        /git:commit — Commit in this project's style
            project project/.gemini/commands/git/commit.toml, gemini
        /numbers — A description that is not a string is ignored.
            user config/tandem/commands/numbers.toml, gemini
        /pr [pr-number] [priority] — Review a pull request
            project project/.claude/commands/pr.md, claude, tools ["Bash(gh pr view:*)", "Bash(gh pr diff:*, --color=never)", "Read"]
        /refactor [file] [goal] — Refactor with care
            user home/.claude/commands/refactor.md, claude, tools ["Read", "Bash(cargo check:*)"]
        /review <file> — Review a file for bugs
            user home/.claude/commands/review.md, claude
        /same — From same.toml.
            project project/.tandem/commands/same.toml, gemini
        /unclosed — description: front matter that never ends
            project project/.claude/commands/unclosed.md, claude
        built-in: help init memory clear compress restore
        warning: /review is defined twice: <fixtures>/home/.claude/commands/review.md is used, <fixtures>/home/.gemini/commands/review.toml is ignored
        warning: <fixtures>/config/tandem/commands/broken.toml: not valid TOML (line 1): invalid basic string, expected `"`
        warning: <fixtures>/config/tandem/commands/help.toml: /help is a built-in command and cannot be replaced; ignored
        warning: <fixtures>/config/tandem/commands/noprompt.toml: there is no `prompt` (the text the command sends to the model)
        warning: <fixtures>/config/tandem/commands/numbers.toml: `description` must be a string; ignored
        warning: /git:commit: the project's <fixtures>/project/.gemini/commands/git/commit.toml overrides the user's <fixtures>/home/.gemini/commands/git/commit.toml
        warning: <fixtures>/project/.claude/commands/unclosed.md: the front matter that starts with `---` has no closing `---` line; the whole file is the prompt
        warning: /same is defined twice: <fixtures>/project/.tandem/commands/same.toml is used, <fixtures>/project/.tandem/commands/same.md is ignored
        warning: <fixtures>/project/.tandem/commands/test.toml: the `!{` on line 1 is never closed; close it with `}` (braces inside it must be balanced)
    "#]]
    .assert_eq(&render(&set, &base));
}

#[test]
fn standard_directories() {
    let dirs = CommandDirs::standard(
        Some(Path::new("/home/u")),
        Some(Path::new("/home/u/.config/tandem")),
        Some(Path::new("/p")),
    );
    expect![[r#"
        CommandDirs {
            plugins: [],
            user: [
                "/home/u/.gemini/commands",
                "/home/u/.claude/commands",
                "/home/u/.config/tandem/commands",
            ],
            project: [
                "/p/.gemini/commands",
                "/p/.claude/commands",
                "/p/.tandem/commands",
            ],
        }
    "#]]
    .assert_debug_eq(&dirs);
    assert_eq!(
        CommandDirs::standard(None, None, None),
        CommandDirs::default()
    );
}

#[test]
fn links_are_followed_only_to_files_inside_the_tree() {
    let temp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(temp.path()).unwrap();
    let dir = base.join("commands");
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    std::fs::write(dir.join("shared/lint.md"), "Lint the code.\n").unwrap();
    std::fs::write(base.join("outside.md"), "Outside.\n").unwrap();
    std::fs::create_dir_all(base.join("outside-dir")).unwrap();
    std::fs::write(base.join("outside-dir/x.md"), "Behind a directory link.\n").unwrap();
    let link =
        |target: &Path, name: &str| std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    link(&dir.join("shared/lint.md"), "lint.md");
    link(&base.join("outside.md"), "outside.md");
    link(&base.join("outside-dir"), "linked-dir");
    link(&base.join("missing.md"), "dangling.md");
    // A link to the commands directory itself is read through (the user's dotfiles).
    let linked_root = base.join("linked-root");
    std::os::unix::fs::symlink(&dir, &linked_root).unwrap();
    check_dir(
        &linked_root,
        expect![[r#"
            /lint — Lint the code.
                user lint.md, claude
            /shared:lint — Lint the code.
                user shared/lint.md, claude
            built-in: help init memory clear compress restore
            warning: <fixtures>/dangling.md: a broken symbolic link (No such file or directory (os error 2)); not read
            warning: <fixtures>/outside.md: a symbolic link to outside <fixtures>; not read
        "#]],
    );
}

#[test]
fn unusable_files_are_skipped_with_a_warning() {
    let temp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(temp.path()).unwrap();
    let large = format!(
        "prompt = \"{}\"\n",
        "x".repeat(MAX_COMMAND_FILE_BYTES as usize)
    );
    std::fs::write(dir.join("large.toml"), large).unwrap();
    std::fs::write(dir.join("latin1.md"), b"caf\xe9\n").unwrap();
    std::fs::write(dir.join("two words.md"), "Spaces.\n").unwrap();
    std::fs::write(dir.join("list.toml"), "prompt = [\"not\", \"a string\"]\n").unwrap();
    std::fs::write(
        dir.join("bom.md"),
        "\u{feff}---\ndescription: kept\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(dir.join("yaml.md"), "---\n: : :\n---\nBody.\n").unwrap();
    std::fs::write(dir.join("scalar.md"), "---\njust a sentence\n---\nBody.\n").unwrap();
    std::fs::create_dir_all(dir.join(".drafts")).unwrap();
    std::fs::write(dir.join(".drafts/wip.md"), "Not yet.\n").unwrap();
    check_dir(
        &dir,
        expect![[r#"
            /bom — kept
                user bom.md, claude
            /scalar — Body.
                user scalar.md, claude
            /yaml — Body.
                user yaml.md, claude
            built-in: help init memory clear compress restore
            warning: <fixtures>/two words.md: a command name cannot contain whitespace (it is typed as /name); rename the file
            warning: <fixtures>/large.toml: 257 KiB is larger than a command file may be (256 KiB); not read
            warning: <fixtures>/latin1.md: it is not UTF-8 text
            warning: <fixtures>/list.toml: `prompt` must be a string
            warning: <fixtures>/scalar.md: the front matter is not a list of `key: value` lines; ignored
            warning: <fixtures>/yaml.md: the front matter is not valid YAML (did not find expected key, while parsing a block mapping); ignored
        "#]],
    );
}

/// A plugin's commands are named `<plugin>:<command>`, answer to their plain name while no
/// other command has it, and name the plugin's files by its folder.
#[test]
fn plugin_commands_are_namespaced_and_know_their_folder() {
    let plugin = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let commands = plugin.path().join("commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("loop.md"),
        "---\ndescription: Loop\n---\n!`${CLAUDE_PLUGIN_ROOT}/setup.sh`",
    )
    .unwrap();
    std::fs::write(commands.join("review.md"), "Review as the kit says.").unwrap();
    std::fs::write(user.path().join("review.md"), "Review my way.").unwrap();
    let set = CommandSet::load(&CommandDirs {
        plugins: vec![crate::plugins::PluginDir {
            path: commands.clone(),
            plugin: "kit".to_owned(),
            root: plugin.path().to_path_buf(),
        }],
        user: vec![user.path().to_path_buf()],
        project: Vec::new(),
    });
    let (command, _) = set.find_invocation("/kit:loop now").unwrap();
    assert_eq!(command.name, "kit:loop");
    let pieces = command.expand("").unwrap();
    assert_eq!(
        pieces,
        [crate::slash::Piece::Shell {
            command: format!("{}/setup.sh", plugin.path().display())
        }]
    );
    // Plain `/loop` is the plugin's; plain `/review` is the user's own.
    assert_eq!(set.find_invocation("/loop").unwrap().0.name, "kit:loop");
    assert_eq!(set.find_invocation("/review").unwrap().0.name, "review");
    assert_eq!(
        set.find_invocation("/kit:review").unwrap().0.name,
        "kit:review"
    );
    assert!(crate::slash::render_help(&set)
        .contains("Plugin commands:\n  /kit:loop — Loop (plugin kit)"));
}
