//! The resolver against a real workspace on disk: each case a prompt and what the model gets.

use expect_test::{expect, Expect};

use super::*;
use tandem_tools::testing::TestWorkspace;

fn resolver<'a>(ws: &'a TestWorkspace, servers: &'a [String], limits: Limits) -> Resolver<'a> {
    Resolver {
        workspace: &ws.ctx.workspace,
        editor: ws.ctx.editor.as_ref(),
        servers,
        limits,
        cancel: CancellationToken::new(),
    }
}

/// What the model gets, with the temporary directory's path replaced by `<tmp>` and the
/// middle of long attachments elided (marked as such).
fn render(ws: &TestWorkspace, resolved: &Resolved) -> String {
    let mut out = format!("text: {}\n", resolved.text);
    for attachment in &resolved.attachments {
        let shown = match &attachment.shown {
            None => "not counted as read".to_owned(),
            Some(ShownFile {
                lines: None,
                version,
                ..
            }) => format!("read whole, version {version:?}"),
            Some(ShownFile {
                lines: Some((first, last)),
                version,
                ..
            }) => format!("read lines {first}-{last}, version {version:?}"),
        };
        out.push_str(&format!("--- {} [{shown}]\n", attachment.label));
        let lines: Vec<&str> = attachment.text.lines().collect();
        if lines.len() > 6 {
            out.push_str(&format!(
                "{}\n⟪{} lines elided by the test⟫\n{}\n",
                lines[..2].join("\n"),
                lines.len() - 4,
                lines[lines.len() - 2..].join("\n")
            ));
        } else {
            out.push_str(&format!("{}\n", attachment.text));
        }
    }
    for note in &resolved.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    for resource in &resolved.resources {
        out.push_str(&format!("resource: {} {}\n", resource.server, resource.uri));
    }
    let temp = ws.root.parent().unwrap().to_str().unwrap();
    out.replace(temp, "<tmp>")
}

fn workspace() -> TestWorkspace {
    let ws = TestWorkspace::new(&[
        (".gitignore", "target/\n"),
        ("src/lib.rs", "pub mod parser;\n"),
        ("src/parser.rs", "pub fn parse() {}\n"),
        ("src/.gitignore", "generated/\n"),
        ("src/generated/out.rs", "// ignored below src\n"),
        ("src/empty.rs", ""),
        ("Cargo.toml", "[package]\n"),
        ("server/Cargo.toml", "[package]\nname = \"server\"\n"),
        ("target/debug/build.toml", "ignored = true\n"),
        ("docs/release notes.md", "# Notes\n"),
        ("odd.", "a name that ends in a dot\n"),
        ("odd", "the same name without it\n"),
        ("logo.png", "\u{89}PNG\r\n\u{1a}\n\0"),
        ("only-ignored/.gitignore", "*\n"),
    ]);
    let outside = ws.root.parent().unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::fs::create_dir_all(outside.join("elsewhere")).unwrap();
    std::fs::write(outside.join("elsewhere/key.txt"), "key\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.root.join("link.txt")).unwrap();
    std::fs::create_dir_all(ws.root.join("linked")).unwrap();
    std::fs::write(ws.root.join("linked/inside.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(outside.join("elsewhere"), ws.root.join("linked/out")).unwrap();
    ws
}

#[test]
fn cases() {
    let ws = workspace();
    let servers = vec!["docs".to_owned()];
    let resolver = resolver(&ws, &servers, Limits::default());
    let secret = ws.root.parent().unwrap().join("secret.txt");
    let inside = ws.root.join("src/lib.rs");
    let cases: Vec<(String, Expect)> = vec![
        (
            // A file, with the sentence's full stop dropped; a file named with the dot wins.
            "Explain @src/parser.rs. Compare @odd. and @odd".to_owned(),
            expect![[r#"
                text: Explain @src/parser.rs. Compare @odd. and @odd
                --- File src/parser.rs [read whole, version None]
                     1	pub fn parse() {}
                --- File odd. [read whole, version None]
                     1	a name that ends in a dot
                --- File odd [read whole, version None]
                     1	the same name without it
            "#]],
        ),
        (
            // A directory: its files at any depth, sorted, minus what .gitignore hides.
            "(@src/) and @only-ignored".to_owned(),
            expect![[r#"
                text: (@src/) and @only-ignored
                --- File src/.gitignore [read whole, version None]
                     1	generated/
                --- File src/empty.rs [read whole, version None]
                (empty file)
                --- File src/lib.rs [read whole, version None]
                     1	pub mod parser;
                --- File src/parser.rs [read whole, version None]
                     1	pub fn parse() {}
                note: [@only-ignored holds no files to attach (files ignored by .gitignore are skipped; mention a file by its path to attach it)]
            "#]],
        ),
        (
            // Globs match inside the workspace, ignored files left out; one that matches
            // nothing, or is not a pattern at all, is text.
            "@**/*.toml, @*.nothing and @src/[ and @../*.txt".to_owned(),
            expect![[r#"
                text: @**/*.toml, @*.nothing and @src/[ and @../*.txt
                --- File Cargo.toml [read whole, version None]
                     1	[package]
                --- File server/Cargo.toml [read whole, version None]
                     1	[package]
                     2	name = "server"
                note: [@../*.txt reaches outside the workspace; patterns match only inside it; not attached]
            "#]],
        ),
        (
            // Not mentions, or mentions of nothing: no attachment, no note.
            r"mail me@src/lib.rs, \@src/lib.rs, @property def x, @octocat, @/api/users, @../nothing.txt".to_owned(),
            expect![[r#"
                text: mail me@src/lib.rs, @src/lib.rs, @property def x, @octocat, @/api/users, @../nothing.txt
            "#]],
        ),
        (
            // Outside the workspace: refused with a note, whichever way it goes out.
            format!("@../secret.txt @{} @link.txt @linked/ @linked/out/key.txt", secret.display()),
            expect![[r#"
                text: @../secret.txt @<tmp>/secret.txt @link.txt @linked/ @linked/out/key.txt
                --- File linked/inside.txt [read whole, version None]
                     1	inside
                note: [@../secret.txt is outside the workspace; not attached]
                note: [@<tmp>/secret.txt is outside the workspace; not attached]
                note: [@link.txt is outside the workspace; not attached]
                note: [skipped linked/out: it links outside the workspace]
                note: [@linked/out/key.txt is outside the workspace; not attached]
            "#]],
        ),
        (
            // Quoted paths, binary files, absolute paths inside, each file once.
            format!(
                "@\"docs/release notes.md\" @logo.png @{} @src/lib.rs @src/lib.rs?",
                inside.display()
            ),
            expect![[r#"
                text: @"docs/release notes.md" @logo.png @<tmp>/ws/src/lib.rs @src/lib.rs @src/lib.rs?
                --- File docs/release notes.md [read whole, version None]
                     1	# Notes
                --- File src/lib.rs [read whole, version None]
                     1	pub mod parser;
                note: [binary files are not attached: logo.png (10 bytes, image/png)]
            "#]],
        ),
        (
            // Resources of the servers the caller named, each once; another `x:y` is a path.
            "@docs:file:///guide.md. @docs:file:///guide.md @other:thing @docs:".to_owned(),
            expect![[r#"
                text: @docs:file:///guide.md. @docs:file:///guide.md @other:thing @docs:
                --- File docs/release notes.md [read whole, version None]
                     1	# Notes
                resource: docs file:///guide.md
            "#]],
        ),
    ];
    for (prompt, expected) in cases {
        expected.assert_eq(&render(&ws, &resolver.resolve(&prompt)));
    }
}

#[test]
fn open_buffers_win_over_the_disk() {
    let mut ws = TestWorkspace::new(&[("a.txt", "on disk\n"), ("b.txt", "same\n")]);
    let editor = ws.memory_editor();
    editor.set(&ws.root.join("a.txt"), "unsaved\n", 4);
    editor.set(&ws.root.join("b.txt"), "same\n", 2);
    editor.set(&ws.root.join("new.txt"), "not saved yet\n", 1);
    let resolved = resolver(&ws, &[], Limits::default()).resolve("@a.txt @b.txt @new.txt");
    expect![[r#"
        text: @a.txt @b.txt @new.txt
        --- File a.txt (from the editor's unsaved buffer) [read whole, version Some(4)]
             1	unsaved
        --- File b.txt [read whole, version Some(2)]
             1	same
        --- File new.txt (from the editor's unsaved buffer) [read whole, version Some(1)]
             1	not saved yet
    "#]]
    .assert_eq(&render(&ws, &resolved));
    let shown = resolved.attachments[0].shown.as_ref().unwrap();
    assert_eq!(shown.path, ws.root.join("a.txt"));
    assert_eq!(shown.content, "unsaved\n");
}

fn numbered(count: usize, width: usize) -> String {
    (1..=count)
        .map(|n| format!("line {n} {}\n", "x".repeat(width)))
        .collect()
}

#[test]
fn a_long_file_is_cut_like_read_file_and_counts_as_read_where_shown() {
    let ws = TestWorkspace::new(&[("long.txt", &numbered(450, 0))]);
    let resolved = resolver(&ws, &[], Limits::default()).resolve("@long.txt");
    expect![[r#"
        text: @long.txt
        --- File long.txt (lines 1-400 of 450) [read lines 1-400, version None]
             1	line 1 
             2	line 2 
        ⟪397 lines elided by the test⟫
           400	line 400 
        [showing lines 1-400 of 450; call read_file with path="long.txt" and start_line=401 to continue]
    "#]]
    .assert_eq(&render(&ws, &resolved));
    assert_eq!(
        resolved.attachments[0].shown.as_ref().unwrap().content,
        numbered(450, 0)
    );
}

#[test]
fn the_total_cap_cuts_one_file_and_lists_the_rest() {
    // Eight files of about 50 KiB: five fit in 256 KiB, the sixth is cut, two are listed.
    let file = numbered(50, 1000);
    let names: Vec<String> = (1..=8).map(|n| format!("part{n}.txt")).collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), file.as_str()))
        .collect();
    let ws = TestWorkspace::new(&files);
    let resolved = resolver(&ws, &[], Limits::default()).resolve("@*.txt");
    let labels: Vec<&str> = resolved
        .attachments
        .iter()
        .map(|attachment| attachment.label.as_str())
        .collect();
    expect![[r#"
        [
            "File part1.txt",
            "File part2.txt",
            "File part3.txt",
            "File part4.txt",
            "File part5.txt",
            "File part6.txt (lines 1-7 of 50)",
        ]
    "#]]
    .assert_debug_eq(&labels);
    expect![[r#"
        [
            "[the mentioned files reached the limit of 256 KiB for one prompt; not attached: part7.txt, part8.txt. Read them with read_file or read_many_files]",
        ]
    "#]]
    .assert_debug_eq(&resolved.notes);
    let total: usize = resolved
        .attachments
        .iter()
        .map(|attachment| attachment.label.len() + attachment.text.len() + FRAME_BYTES)
        .sum();
    assert!(total <= 256 * 1024, "{total}");
    assert!(resolved.attachments[5].text.ends_with(
        "[showing lines 1-7 of 50; call read_file with path=\"part6.txt\" and start_line=8 to continue]"
    ));
}

#[test]
fn a_directory_attaches_at_most_its_share_of_files() {
    let names: Vec<String> = (1..=5).map(|n| format!("dir/f{n}.txt")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|name| (name.as_str(), "x\n")).collect();
    let ws = TestWorkspace::new(&files);
    let limits = Limits {
        files_per_mention: 3,
        ..Limits::default()
    };
    // The file mentioned first is not counted again, nor attached twice.
    let resolved = resolver(&ws, &[], limits).resolve("@dir/f5.txt @dir");
    let labels: Vec<&str> = resolved
        .attachments
        .iter()
        .map(|attachment| attachment.label.as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "File dir/f5.txt",
            "File dir/f1.txt",
            "File dir/f2.txt",
            "File dir/f3.txt"
        ]
    );
    expect![[r#"
        [
            "[@dir names 4 files; the first 3 in path order are attached. Not attached: dir/f4.txt. Read them with read_file or read_many_files]",
        ]
    "#]]
    .assert_debug_eq(&resolved.notes);
}

#[test]
fn a_cancelled_resolution_attaches_nothing_more() {
    let ws = TestWorkspace::new(&[("a.txt", "a\n")]);
    let resolver = resolver(&ws, &[], Limits::default());
    resolver.cancel.cancel();
    let resolved = resolver.resolve("@a.txt");
    assert!(resolved.attachments.is_empty());
    assert_eq!(resolved.text, "@a.txt");
}

#[test]
fn inline_content_for_gemini_file_blocks() {
    let mut ws = workspace();
    let editor = ws.memory_editor();
    editor.set(
        &ws.root.join("src/lib.rs"),
        "pub mod parser; // unsaved\n",
        3,
    );
    let resolver = resolver(&ws, &[], Limits::default());
    let cases = [
        "src/lib.rs",
        "src",
        "**/Cargo.toml",
        "logo.png",
        "missing.rs",
        "*.nothing",
        "../secret.txt",
        "only-ignored",
    ];
    let out: Vec<String> = cases
        .iter()
        .map(|path| match resolver.inline(path) {
            Ok(text) => format!("@{{{path}}} =>\n{text}"),
            Err(error) => format!("@{{{path}}} failed: {error}"),
        })
        .collect();
    let temp = ws.root.parent().unwrap().to_str().unwrap();
    expect![[r#"
        @{src/lib.rs} =>
        pub mod parser; // unsaved

        @{src} =>
        --- src/.gitignore ---
        generated/
        --- src/empty.rs ---

        --- src/lib.rs ---
        pub mod parser; // unsaved
        --- src/parser.rs ---
        pub fn parse() {}
        @{**/Cargo.toml} =>
        --- Cargo.toml ---
        [package]
        --- server/Cargo.toml ---
        [package]
        name = "server"
        @{logo.png} failed: it is a binary file
        @{missing.rs} failed: there is no such file or directory
        @{*.nothing} failed: no file matches it
        @{../secret.txt} failed: `../secret.txt` is outside the workspace (<tmp>/ws). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings
        @{only-ignored} failed: it holds no files (files ignored by .gitignore are skipped)"#]].assert_eq(&out.join("\n").replace(temp, "<tmp>"));
}

#[test]
fn inline_content_stops_at_the_cap() {
    let ws = TestWorkspace::new(&[
        ("a.txt", "aaaa\n"),
        ("b.txt", "bbbb\n"),
        ("c.txt", "cccc\n"),
    ]);
    let limits = Limits {
        file_bytes: 20,
        ..Limits::default()
    };
    expect![[r#"
        --- a.txt ---
        aaaa
        --- b.txt ---
        bbbb
        [not included (1 KiB reached): c.txt. Read them with read_file]"#]]
    .assert_eq(&resolver(&ws, &[], limits).inline("*.txt").unwrap());
}
