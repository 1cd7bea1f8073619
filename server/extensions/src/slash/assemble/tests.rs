//! Assembling prompts from expanded templates and the outcomes a caller collected.

use std::collections::HashMap;

use expect_test::{expect, Expect};

use super::*;
use crate::slash::Template;

/// Outcomes looked up by command and path, as a caller collects them before assembling.
#[derive(Default)]
struct Collected {
    shell: HashMap<&'static str, ShellOutcome>,
    files: HashMap<&'static str, FileOutcome>,
}

impl Injections for Collected {
    fn shell(&mut self, command: &str) -> ShellOutcome {
        self.shell
            .get(command)
            .cloned()
            .unwrap_or_else(|| panic!("not collected: {command}"))
    }

    fn file(&mut self, path: &str) -> FileOutcome {
        self.files
            .get(path)
            .cloned()
            .unwrap_or_else(|| panic!("not collected: {path}"))
    }
}

fn ran(exit_code: Option<i32>, stdout: &str, stderr: &str) -> ShellOutcome {
    ShellOutcome::Ran {
        exit_code,
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
    }
}

fn check(template: Template, args: &str, collected: &mut Collected, expected: Expect) {
    let found = assemble(&template.expand("cmd", args), collected);
    let mut out = found.text.clone();
    for mention in &found.mentions {
        assert_eq!(&found.text[mention.range.clone()], mention.written());
        out.push_str(&format!("\n⟦mention {}⟧", mention.written()));
    }
    expected.assert_eq(&out);
}

#[test]
fn outcomes_of_commands() {
    let template = Template::gemini(
        "Branch: !{git branch --show-current}.\nWarned: !{make}\nFailed: !{cargo test}\n\
         Quiet failure: !{false}\nKilled: !{sleep 100}\nRefused: !{rm -rf target}\n\
         Broken: !{nosuchcommand}\nEmpty: !{true}",
    )
    .unwrap();
    let mut collected = Collected {
        shell: HashMap::from([
            ("git branch --show-current", ran(Some(0), "main\n", "")),
            ("make", ran(Some(0), "built\n", "warning: unused\n")),
            (
                "cargo test",
                ran(Some(101), "running 3 tests\n", "error: 1 test failed\n"),
            ),
            ("false", ran(Some(1), "", "")),
            ("sleep 100", ran(None, "", "")),
            (
                "rm -rf target",
                ShellOutcome::Refused {
                    reason: "the user refused it".to_owned(),
                },
            ),
            (
                "nosuchcommand",
                ShellOutcome::Failed {
                    error: "it timed out after 60 s".to_owned(),
                },
            ),
            ("true", ran(Some(0), "", "")),
        ]),
        ..Collected::default()
    };
    check(
        template,
        "",
        &mut collected,
        expect![[r#"
            Branch: main.
            Warned: built
            [`make` wrote to stderr:
            warning: unused]
            Failed: running 3 tests
            [`cargo test` exited with code 101:
            error: 1 test failed]
            Quiet failure: [`false` exited with code 1]
            Killed: [`sleep 100` was ended by a signal]
            Refused: [`rm -rf target` was not run: the user refused it]
            Broken: [`nosuchcommand` could not be run: it timed out after 60 s]
            Empty: "#]],
    );
}

#[test]
fn files_and_mentions() {
    let mut collected = Collected {
        files: HashMap::from([
            (
                "docs/guide.md",
                FileOutcome::Content("# Guide\nRead me.\n\n".to_owned()),
            ),
            (
                "../secret",
                FileOutcome::Failed {
                    error: "it is outside the workspace".to_owned(),
                },
            ),
        ]),
        ..Collected::default()
    };
    check(
        Template::gemini("Guide:\n@{docs/guide.md}\nSecret: @{../secret}\nAsk: {{args}}").unwrap(),
        "about @src/lib.rs and @\"a b.txt\"",
        &mut collected,
        expect![[r#"
            Guide:
            # Guide
            Read me.
            Secret: [@{../secret} was not included: it is outside the workspace]
            Ask: about @src/lib.rs and @"a b.txt"
            ⟦mention @src/lib.rs⟧
            ⟦mention @"a b.txt"⟧"#]],
    );
    // What a command printed is never read as a mention, a placeholder or a block.
    let mut collected = Collected {
        shell: HashMap::from([(
            "git log -1",
            ran(Some(0), "@src/secret.rs $ARGUMENTS {{args}} !`id`", ""),
        )]),
        ..Collected::default()
    };
    check(
        Template::claude("Last: !`git log -1` for @README.md and $ARGUMENTS"),
        "@CHANGES.md",
        &mut collected,
        expect![[r#"
            Last: @src/secret.rs $ARGUMENTS {{args}} !`id` for @README.md and @CHANGES.md
            ⟦mention @README.md⟧
            ⟦mention @CHANGES.md⟧"#]],
    );
}

#[test]
fn long_outputs_are_cut_with_a_notice() {
    let line = format!("{}\n", "x".repeat(99));
    let stdout = line.repeat(400);
    let stderr = "é".repeat(3000);
    let mut collected = Collected {
        shell: HashMap::from([("cat big", ran(Some(2), &stdout, &stderr))]),
        files: HashMap::from([("big.txt", FileOutcome::Content(line.repeat(1000)))]),
    };
    let found = assemble(
        &Template::gemini("!{cat big}\n@{big.txt}")
            .unwrap()
            .expand("cmd", ""),
        &mut collected,
    );
    let notices: Vec<&str> = found
        .text
        .lines()
        .filter(|line| line.contains("[cut:"))
        .collect();
    expect![[r#"
        [
            "[cut: 16299 of 39999 bytes shown; run `cat big` with the shell tool for all of it]",
            "[cut: 4096 of 6000 bytes shown; run `cat big` with the shell tool for all of it]]",
            "[cut: 65499 of 99999 bytes shown; read the rest of big.txt with read_file]",
        ]
    "#]]
    .assert_debug_eq(&notices);
    assert!(
        found.text.len() < MAX_SHELL_BYTES * 2 + MAX_FILE_BYTES,
        "{}",
        found.text.len()
    );
    assert!(found.text.contains("[`cat big` exited with code 2:\né"));
}

/// A command's whole path as the session will run it: expand, collect the outcomes (files
/// read by the mentions resolver), assemble, attach the mentions. A file that a command's
/// output names is not attached; the files the template and the arguments name are.
#[test]
fn a_command_from_expansion_to_attachments() {
    use crate::mentions::{Limits, Resolver};
    use tandem_tools::testing::TestWorkspace;

    let ws = TestWorkspace::new(&[
        ("src/lib.rs", "pub mod a;\n"),
        ("src/a.rs", "pub fn a() {}\n"),
        ("secret.txt", "not for the model\n"),
        ("docs/style.md", "Be brief.\n"),
    ]);
    let resolver = Resolver {
        workspace: &ws.ctx.workspace,
        editor: ws.ctx.editor.as_ref(),
        servers: &[],
        limits: Limits::default(),
        cancel: tokio_util::sync::CancellationToken::new(),
    };
    let claude = Template::claude("Review @src/lib.rs and $ARGUMENTS after !`git log -1`");
    let mut collected = Collected {
        shell: HashMap::from([("git log -1", ran(Some(0), "touched @secret.txt\n", ""))]),
        ..Collected::default()
    };
    let found = assemble(&claude.expand("review", "@src/a.rs"), &mut collected);
    let resolved = resolver.resolve_found(found);
    expect!["Review @src/lib.rs and @src/a.rs after touched @secret.txt"].assert_eq(&resolved.text);
    let labels: Vec<&str> = resolved
        .attachments
        .iter()
        .map(|a| a.label.as_str())
        .collect();
    assert_eq!(labels, ["File src/lib.rs", "File src/a.rs"]);

    let gemini = Template::gemini("Style:\n@{docs/style.md}\nMissing: @{nope.md}").unwrap();
    struct ReadThrough<'a>(&'a Resolver<'a>);
    impl Injections for ReadThrough<'_> {
        fn shell(&mut self, command: &str) -> ShellOutcome {
            panic!("no shell piece expected: {command}")
        }
        fn file(&mut self, path: &str) -> FileOutcome {
            match self.0.inline(path) {
                Ok(content) => FileOutcome::Content(content),
                Err(error) => FileOutcome::Failed { error },
            }
        }
    }
    let found = assemble(&gemini.expand("style", ""), &mut ReadThrough(&resolver));
    expect![[r#"
        Style:
        Be brief.
        Missing: [@{nope.md} was not included: there is no such file or directory]"#]]
    .assert_eq(&found.text);
}
