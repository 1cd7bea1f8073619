//! Expansion rules, one case per line of the tables: the template, the arguments, and the
//! pieces (text as is, the other pieces in `⟦…⟧`).

use expect_test::{expect, Expect};

use super::*;

fn render(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.clone(),
            Piece::Mention(mention) => format!("⟦mention {}⟧", mention.written()),
            Piece::Shell { command } => format!("⟦shell {command}⟧"),
            Piece::File { path } => format!("⟦file {path}⟧"),
        })
        .collect()
}

fn check(cases: &[(Template, &str)], expected: Expect) {
    let out: Vec<String> = cases
        .iter()
        .map(|(template, args)| {
            format!("/cmd {args}\n=> {}", render(&template.expand("cmd", args)))
        })
        .collect();
    expected.assert_eq(&out.join("\n\n"));
}

fn gemini(prompt: &str) -> Template {
    Template::gemini(prompt).unwrap()
}

#[test]
fn gemini_arguments() {
    check(
        &[
            (gemini("Commit with the message: {{args}}."), "fix typo"),
            // No placeholder: the command line is appended.
            (gemini("Review the staged diff."), "  carefully please  "),
            (gemini("Review the staged diff."), ""),
            (gemini("{{args}} and again {{args}}"), ""),
            // Arguments are text: blocks and placeholders in them are not expanded.
            (
                gemini("Do: {{args}}"),
                "{{args}} !{rm -rf ~} @{/etc/passwd}",
            ),
            // Mentions in the arguments are found; in Gemini's template text they are not.
            (
                gemini("See @src/lib.rs and {{args}}"),
                "@src/main.rs, mail@x.org",
            ),
            (gemini("Plain prompt"), "@docs/ please"),
        ],
        expect![[r#"
            /cmd fix typo
            => Commit with the message: fix typo.

            /cmd   carefully please  
            => Review the staged diff.

            /cmd carefully please

            /cmd 
            => Review the staged diff.

            /cmd 
            =>  and again 

            /cmd {{args}} !{rm -rf ~} @{/etc/passwd}
            => Do: {{args}} !{rm -rf ~} ⟦mention @{/etc/passwd}⟧

            /cmd @src/main.rs, mail@x.org
            => See @src/lib.rs and ⟦mention @src/main.rs,⟧ mail@x.org

            /cmd @docs/ please
            => Plain prompt

            /cmd ⟦mention @docs/⟧ please"#]],
    );
}

#[test]
fn gemini_shell_and_file_blocks() {
    check(
        &[
            // Inside `!{…}` the arguments are one shell word, whatever they hold.
            (
                gemini("Log: !{git log --grep={{args}}}"),
                r#"it's $(rm -rf ~) "x" `id`"#,
            ),
            (gemini("!{grep -r {{args}} .}"), ""),
            // Braces inside a block are balanced; the content is trimmed.
            (gemini("!{ awk '{print $1}' f | jq '{a: {b: .c}}' }"), ""),
            // `@{…}` first: its path is taken as written, placeholders included.
            (
                gemini("Context: @{docs/{{args}}.md}\nTask: {{args}}"),
                "guide",
            ),
            (gemini("@{src/{a,b}.rs} then !{ls} and @{ } !{}"), ""),
            // A placeholder-less template with blocks still gets the command line.
            (gemini("!{git diff --cached}"), "short"),
        ],
        expect![[r#"
            /cmd it's $(rm -rf ~) "x" `id`
            => Log: ⟦shell git log --grep='it'\''s $(rm -rf ~) "x" `id`'⟧

            /cmd 
            => ⟦shell grep -r '' .⟧

            /cmd 
            => ⟦shell awk '{print $1}' f | jq '{a: {b: .c}}'⟧

            /cmd guide
            => Context: ⟦file docs/{{args}}.md⟧
            Task: guide

            /cmd 
            => ⟦file src/{a,b}.rs⟧ then ⟦shell ls⟧ and  

            /cmd short
            => ⟦shell git diff --cached⟧

            /cmd short"#]],
    );
}

#[test]
fn gemini_blocks_must_be_closed() {
    let errors: Vec<String> = [
        "Summarise !{git log",
        "line one\nline two @{docs/{a.md}",
        // `@{…}` comes out first, which leaves the shell block around it unclosed (as in
        // Gemini CLI): a file's content never becomes part of a command.
        "!{cat @{secret.txt}}",
    ]
    .iter()
    .map(|prompt| Template::gemini(prompt).unwrap_err())
    .collect();
    expect![[r#"
        [
            "the `!{` on line 1 is never closed; close it with `}` (braces inside it must be balanced)",
            "the `@{` on line 2 is never closed; close it with `}` (braces inside it must be balanced)",
            "the `!{` on line 1 is never closed; close it with `}` (braces inside it must be balanced)",
        ]
    "#]]
    .assert_debug_eq(&errors);
}

#[test]
fn claude_arguments() {
    let claude = Template::claude;
    check(
        &[
            (
                claude("Fix issue #$1 with priority $2. Context: $ARGUMENTS"),
                r#"123 "high prio" extra"#,
            ),
            // Missing positional arguments are empty; `$0`, a lone `$` and `$x` are text.
            (claude("Compare $1 with $3 ($0, $, $x)"), "a"),
            // Nothing substituted is looked at again.
            (claude("Run: $ARGUMENTS"), "$1 $ARGUMENTS !`rm -rf ~`"),
            // No placeholder: appended.
            (claude("Costs $0 and $x."), "something"),
            (claude("Costs $0 and $x."), ""),
        ],
        expect![[r#"
            /cmd 123 "high prio" extra
            => Fix issue #123 with priority high prio. Context: 123 "high prio" extra

            /cmd a
            => Compare a with  ($0, $, $x)

            /cmd $1 $ARGUMENTS !`rm -rf ~`
            => Run: $1 $ARGUMENTS !`rm -rf ~`

            /cmd something
            => Costs $0 and $x.

            /cmd something

            /cmd 
            => Costs $0 and $x."#]],
    );
}

#[test]
fn claude_shell_blocks_and_mentions() {
    let claude = Template::claude;
    check(
        &[
            (
                claude("Status: !`git status --short`\nDiff: !`git diff $1 -- $2`"),
                r#""it's" main.rs"#,
            ),
            (claude("!`echo $ARGUMENTS`"), "$(whoami); rm -rf ~"),
            // `!` and a backtick without a closing one, or with nothing inside, is text.
            (claude("Wow!`` and !`unclosed"), ""),
            // Mentions in the body and in what the arguments put there; escapes removed;
            // mentions inside a command are part of the command.
            (
                claude("Review @src/lib.rs, @$1 and \\@literal; !`cat @notes.md`"),
                "src/main.rs",
            ),
        ],
        expect![[r#"
            /cmd "it's" main.rs
            => Status: ⟦shell git status --short⟧
            Diff: ⟦shell git diff 'it'\''s' -- 'main.rs'⟧

            /cmd $(whoami); rm -rf ~
            => ⟦shell echo '$(whoami); rm -rf ~'⟧

            /cmd 
            => Wow!`` and !`unclosed

            /cmd src/main.rs
            => Review ⟦mention @src/lib.rs,⟧ ⟦mention @src/main.rs⟧ and @literal; ⟦shell cat @notes.md⟧"#]],
    );
}

#[test]
fn words_split_like_a_shell_splits_them() {
    let cases = [
        (
            r#"a  "b c" 'd e' f\ g "h\"i\\" 'j"k' x"y"z"#,
            vec!["a", "b c", "d e", "f g", "h\"i\\", "j\"k", "xyz"],
        ),
        ("", vec![]),
        ("  spaced\tout\n", vec!["spaced", "out"]),
        (r#"'' "" end"#, vec!["", "", "end"]),
        (r#"'unclosed one"#, vec!["unclosed one"]),
        (r#""unclosed \"two"#, vec!["unclosed \"two"]),
        (r"trailing\", vec!["trailing"]),
    ];
    for (text, words) in cases {
        assert_eq!(split_words(text), words, "{text}");
    }
}

#[test]
fn descriptions_fall_back_to_the_first_line() {
    let cases = [
        (
            Template::claude("\n\n# Review the diff\nmore"),
            Some("Review the diff"),
        ),
        (
            Template::claude("!`git status`\n  first words  \n"),
            Some("first words"),
        ),
        (gemini("!{ls}"), None),
    ];
    for (template, line) in cases {
        assert_eq!(template.first_line().as_deref(), line);
    }
}

/// Claude Code's fenced command blocks (the ralph-wiggum plugin's `/ralph-loop` runs its setup
/// script in one): the command runs and its output takes the block's place; a fence that is
/// never closed, and one with no command, stay text.
#[test]
fn claude_fenced_command_blocks() {
    let claude = Template::claude;
    check(
        &[
            (
                claude("Set up:\n\n```!\n\"${ROOT}/setup.sh\" $ARGUMENTS\n```\n\nThen work."),
                "--max 3",
            ),
            (claude("```!\nls\n"), ""),
            (claude("```!\n```\nrest"), ""),
        ],
        expect![[r#"
            /cmd --max 3
            => Set up:

            ⟦shell "${ROOT}/setup.sh" '--max 3'⟧
            Then work.

            /cmd 
            => ```!
            ls


            /cmd 
            => ```!
            ```
            rest"#]],
    );
}
