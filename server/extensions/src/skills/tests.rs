//! Discovery from each folder, precedence and shadowing, skills that cannot be used, an
//! untrusted workspace, and the system prompt's section.

use expect_test::{expect, Expect};

use super::*;

/// A home folder (`home/`), Tandem's configuration folder in it (`home/.config/tandem/`) and a
/// project (`project/`), with `files` as (path under the base, content).
struct Fixture {
    _temp: tempfile::TempDir,
    base: PathBuf,
    dirs: SkillDirs,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(temp.path()).unwrap();
    for dir in ["home/.config/tandem", "project"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    for (path, content) in files {
        let path = base.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let dirs = SkillDirs::standard(
        Some(&base.join("home")),
        Some(&base.join("home/.config/tandem")),
        Some(&base.join("project")),
    );
    Fixture {
        _temp: temp,
        base,
        dirs,
    }
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nDo the {name} thing.\n")
}

/// The set as lines: each skill (scope, source, folder under the base, description, tools),
/// then each warning.
fn render(fixture: &Fixture, set: &SkillSet) -> String {
    let base = fixture.base.display().to_string();
    let mut out = String::new();
    for skill in &set.skills {
        out.push_str(&format!(
            "{} ({:?}, {:?}) {}: {}",
            skill.name,
            skill.scope,
            skill.source,
            skill.path.strip_prefix(&fixture.base).unwrap().display(),
            skill.description
        ));
        if !skill.allowed_tools.is_empty() {
            out.push_str(&format!(" [tools: {}]", skill.allowed_tools.join(" | ")));
        }
        out.push('\n');
    }
    for warning in &set.warnings {
        out.push_str(&format!("warning: {}\n", warning.replace(&base, "$BASE")));
    }
    out
}

fn check(files: &[(&str, &str)], trusted: bool, expected: Expect) {
    let fixture = fixture(files);
    let set = discover(&fixture.dirs, trusted);
    expected.assert_eq(&render(&fixture, &set));
}

#[test]
fn skills_are_found_in_every_folder() {
    let cases: [(&str, Expect); 6] = [
        (
            "project/.tandem/skills/a/SKILL.md",
            expect![[r#"
                a (Project, Tandem) project/.tandem/skills/a: does a
            "#]],
        ),
        (
            "project/.claude/skills/a/SKILL.md",
            expect![[r#"
                a (Project, Claude) project/.claude/skills/a: does a
            "#]],
        ),
        (
            "project/.gemini/skills/a/SKILL.md",
            expect![[r#"
                a (Project, Gemini) project/.gemini/skills/a: does a
            "#]],
        ),
        (
            "home/.config/tandem/skills/a/SKILL.md",
            expect![[r#"
                a (User, Tandem) home/.config/tandem/skills/a: does a
            "#]],
        ),
        (
            "home/.claude/skills/a/SKILL.md",
            expect![[r#"
                a (User, Claude) home/.claude/skills/a: does a
            "#]],
        ),
        (
            "home/.gemini/skills/a/SKILL.md",
            expect![[r#"
                a (User, Gemini) home/.gemini/skills/a: does a
            "#]],
        ),
    ];
    for (path, expected) in cases {
        check(&[(path, &skill_md("a", "does a"))], true, expected);
    }
}

#[test]
fn the_project_wins_over_the_user_and_tandem_over_claude_over_gemini() {
    let files = [
        (
            "home/.gemini/skills/x/SKILL.md",
            skill_md("deploy", "user gemini"),
        ),
        (
            "home/.claude/skills/x/SKILL.md",
            skill_md("deploy", "user claude"),
        ),
        (
            "home/.config/tandem/skills/x/SKILL.md",
            skill_md("deploy", "user tandem"),
        ),
        (
            "home/.claude/skills/y/SKILL.md",
            skill_md("lint", "user claude"),
        ),
        (
            "home/.gemini/skills/y/SKILL.md",
            skill_md("lint", "user gemini"),
        ),
        (
            "project/.gemini/skills/z/SKILL.md",
            skill_md("lint", "project gemini"),
        ),
        (
            "project/.claude/skills/z/SKILL.md",
            skill_md("test", "project claude"),
        ),
        (
            "project/.tandem/skills/z/SKILL.md",
            skill_md("test", "project tandem"),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    check(
        &files,
        true,
        expect![[r#"
            deploy (User, Tandem) home/.config/tandem/skills/x: user tandem
            lint (Project, Gemini) project/.gemini/skills/z: project gemini
            test (Project, Tandem) project/.tandem/skills/z: project tandem
            warning: $BASE/project/.claude/skills/z/SKILL.md: the skill `test` is shadowed by $BASE/project/.tandem/skills/z/SKILL.md, which takes precedence
            warning: $BASE/home/.claude/skills/x/SKILL.md: the skill `deploy` is shadowed by $BASE/home/.config/tandem/skills/x/SKILL.md, which takes precedence
            warning: $BASE/home/.claude/skills/y/SKILL.md: the skill `lint` is shadowed by $BASE/project/.gemini/skills/z/SKILL.md, which takes precedence
            warning: $BASE/home/.gemini/skills/x/SKILL.md: the skill `deploy` is shadowed by $BASE/home/.config/tandem/skills/x/SKILL.md, which takes precedence
            warning: $BASE/home/.gemini/skills/y/SKILL.md: the skill `lint` is shadowed by $BASE/project/.gemini/skills/z/SKILL.md, which takes precedence
        "#]],
    );
}

#[test]
fn skills_that_cannot_be_used_are_left_out_with_a_warning() {
    let big = format!(
        "---\nname: big\ndescription: big\n---\n{}",
        "x".repeat(MAX_SKILL_FILE_BYTES as usize)
    );
    let files = [
        (
            "home/.claude/skills/good/SKILL.md",
            skill_md("good", "works"),
        ),
        (
            "home/.claude/skills/plain/SKILL.md",
            "Just instructions.\n".to_owned(),
        ),
        (
            "home/.claude/skills/open/SKILL.md",
            "---\nname: open\n".to_owned(),
        ),
        (
            "home/.claude/skills/nodesc/SKILL.md",
            "---\nname: nodesc\n---\nBody\n".to_owned(),
        ),
        (
            "home/.claude/skills/blank/SKILL.md",
            "---\nname: blank\ndescription: \"  \"\n---\n".to_owned(),
        ),
        (
            "home/.claude/skills/caps/SKILL.md",
            skill_md("Deploy Now", "bad name"),
        ),
        (
            "home/.claude/skills/yaml/SKILL.md",
            "---\n[unclosed\n---\nBody\n".to_owned(),
        ),
        (
            "home/.claude/skills/list/SKILL.md",
            "---\n- a\n- b\n---\nBody\n".to_owned(),
        ),
        ("home/.claude/skills/big/SKILL.md", big),
        // Not skills at all: no SKILL.md, a hidden folder, a plain file.
        ("home/.claude/skills/notes/README.md", "notes".to_owned()),
        (
            "home/.claude/skills/.hidden/SKILL.md",
            skill_md("hidden", "hidden"),
        ),
        ("home/.claude/skills/loose.md", skill_md("loose", "loose")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    check(
        &files,
        true,
        expect![[r#"
            caps (User, Claude) home/.claude/skills/caps: bad name
            good (User, Claude) home/.claude/skills/good: works
            warning: $BASE/home/.claude/skills/big/SKILL.md: 257 KiB is larger than a SKILL.md may be (256 KiB); not loaded
            warning: $BASE/home/.claude/skills/blank/SKILL.md: there is no `description` in the front matter (the model chooses a skill by its description); not loaded
            warning: $BASE/home/.claude/skills/caps/SKILL.md: the name `Deploy Now` is not usable: a skill's name has at most 64 lowercase letters, digits, `-` and `_`; it is called `caps`, after its folder
            warning: $BASE/home/.claude/skills/list/SKILL.md: the front matter is not a list of `key: value` lines; not loaded
            warning: $BASE/home/.claude/skills/nodesc/SKILL.md: there is no `description` in the front matter (the model chooses a skill by its description); not loaded
            warning: $BASE/home/.claude/skills/open/SKILL.md: the front matter that starts with `---` has no closing `---` line; not loaded
            warning: $BASE/home/.claude/skills/plain/SKILL.md: there is no front matter (a first line `---`, then `name:` and `description:` lines, then `---`); not loaded
            warning: $BASE/home/.claude/skills/yaml/SKILL.md: the front matter is not valid YAML (did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence); not loaded
        "#]],
    );
}

#[test]
fn front_matter_is_read_as_claude_code_and_gemini_cli_write_it() {
    let files = [
        // No name: the folder's. A folded description, a YAML list of tools.
        (
            "home/.claude/skills/pdf-tools/SKILL.md",
            "---\ndescription: >\n  Fill and merge\n  PDF forms.\nallowed-tools:\n  - Read\n  - Bash(python:*)\nlicense: MIT\n---\nBody\n",
        ),
        // Tools as Claude Code writes them (commas) and as the Agent Skills spec does (spaces).
        (
            "home/.claude/skills/b/SKILL.md",
            "---\nname: commas\ndescription: c\nallowed-tools: Read, Bash(git add:*)\n---\n",
        ),
        (
            "home/.claude/skills/c/SKILL.md",
            "---\nname: spaces\ndescription: s\nallowed-tools: Read Bash(git add:*) Grep\n---\n",
        ),
        // Lenient YAML, as Claude Code reads it: `[pdf]` would be a list.
        (
            "home/.claude/skills/d/SKILL.md",
            "---\nname: lenient\ndescription: Handles [pdf] files: forms and all\n---\n",
        ),
    ];
    check(
        &files,
        true,
        expect![[r#"
            commas (User, Claude) home/.claude/skills/b: c [tools: Read | Bash(git add:*)]
            lenient (User, Claude) home/.claude/skills/d: Handles [pdf] files: forms and all
            pdf-tools (User, Claude) home/.claude/skills/pdf-tools: Fill and merge PDF forms. [tools: Read | Bash(python:*)]
            spaces (User, Claude) home/.claude/skills/c: s [tools: Read | Bash(git add:*) | Grep]
        "#]],
    );
}

#[test]
fn an_untrusted_workspace_loads_only_the_users_skills_and_says_so_once() {
    let files = [
        (
            "home/.claude/skills/mine/SKILL.md",
            skill_md("mine", "the user's"),
        ),
        (
            "project/.tandem/skills/a/SKILL.md",
            skill_md("a", "project"),
        ),
        (
            "project/.claude/skills/b/SKILL.md",
            skill_md("b", "project"),
        ),
        (
            "project/.gemini/skills/c/SKILL.md",
            "broken, but never read".to_owned(),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    check(
        &files,
        false,
        expect![[r#"
            mine (User, Claude) home/.claude/skills/mine: the user's
            warning: 3 skills in this workspace (.tandem/skills, .claude/skills, .gemini/skills) not loaded because the folder is not trusted; to use them, add the folder to `trustedFolders` in the user settings file
        "#]],
    );
    check(
        &files[..1],
        false,
        expect![[r#"
            mine (User, Claude) home/.claude/skills/mine: the user's
        "#]],
    );
}

#[cfg(unix)]
#[test]
fn a_linked_skill_folder_is_followed_and_the_same_folder_twice_is_no_clash() {
    let fixture = fixture(&[("shared/deploy/SKILL.md", &skill_md("deploy", "linked"))]);
    for link in ["home/.claude/skills/deploy", "home/.gemini/skills/deploy"] {
        let link = fixture.base.join(link);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fixture.base.join("shared/deploy"), link).unwrap();
    }
    let set = discover(&fixture.dirs, true);
    expect![[r#"
        deploy (User, Claude) shared/deploy: linked
    "#]]
    .assert_eq(&render(&fixture, &set));
}

#[test]
fn the_prompt_section_lists_skills_by_name_with_long_descriptions_cut() {
    assert_eq!(SkillSet::default().prompt_section(), None);
    let long = format!("{} end", "word ".repeat(300));
    let files = [
        ("home/.claude/skills/b/SKILL.md", skill_md("beta", &long)),
        (
            "home/.claude/skills/a/SKILL.md",
            skill_md("alpha", "Writes release notes."),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let fixture = fixture(&files);
    let section = discover(&fixture.dirs, true).prompt_section().unwrap();
    let beta = section.lines().last().unwrap();
    assert!(
        beta.starts_with("- beta: word word") && beta.ends_with("word…"),
        "{beta}"
    );
    assert_eq!(beta.chars().count(), "- beta: ".len() + 1020);
    expect![[r#"
        # Skills

        Skills are instructions, with scripts and reference files, for particular kinds of task. When the task at hand matches a skill's description, call `activate_skill` with its name before you start, and follow what it returns.

        - alpha: Writes release notes."#]]
    .assert_eq(section.lines().take(5).collect::<Vec<_>>().join("\n").as_str());
}
