//! The `save_memory` tool: appends a one-line fact to a memory file — the project's `AGENTS.md`
//! or the user's own — under a `## Tandem memories` heading, so later sessions start with it.
//! Only the bullet (and, the first time, the heading) is added; the rest of the file is left
//! byte for byte as it was, line endings included.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{parse_args, schema_for, Freshness, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::{Location, ToolKind};

const HEADING: &str = "## Tandem memories";
/// A memory is one fact, not a document; longer text belongs in a file of its own.
const MAX_FACT_CHARS: usize = 500;

pub struct SaveMemory;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The fact to remember: one self-contained sentence, understandable without this
    /// conversation (e.g. "Run the tests with `cargo nextest run`, not `cargo test`"). At most
    /// 500 characters; line breaks become spaces.
    fact: String,
    /// Where to save it: `project` (the default) for facts about this code base, saved in
    /// `AGENTS.md` at the workspace root and shared with everyone working on it; `user` for the
    /// user's personal preferences across all projects, saved in their own memory file.
    #[serde(default)]
    scope: Scope,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Scope {
    #[default]
    Project,
    User,
}

impl Tool for SaveMemory {
    fn name(&self) -> &'static str {
        "save_memory"
    }

    fn description(&self) -> &'static str {
        "Saves a fact to long-term memory so future sessions know it: appends it as a bullet \
         under a `## Tandem memories` heading in a memory file (creating the heading, and the \
         file, if missing). Use it when the user asks you to remember something, or states a \
         lasting preference or project convention worth keeping; not for what matters only to \
         the current task (use write_todos for plans). scope `project` (default) writes \
         `AGENTS.md` at the workspace root; scope `user` writes the user's personal memory \
         file, for preferences that hold in every project. One fact per call, a single line of \
         at most 500 characters; a fact already saved is not added twice. Returns where it was \
         saved."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn mutates(&self) -> bool {
        true
    }

    fn title(&self, args: &Value) -> String {
        let Some(fact) = args.get("fact").and_then(Value::as_str) else {
            return "Save memory".to_owned();
        };
        let fact = normalize(fact);
        if fact.is_empty() {
            return "Save memory".to_owned();
        }
        let short: String = fact.chars().take(60).collect();
        let ellipsis = if short.len() < fact.len() { "…" } else { "" };
        format!("Remember \"{short}{ellipsis}\"")
    }

    /// The memory file the call appends to: `AGENTS.md` at the root (which may be a link into
    /// `.git/hooks`), or the user's own memory file, which sits with their settings.
    fn paths_written(&self, args: &Value, ctx: &ToolContext) -> Vec<String> {
        let scope = args
            .get("scope")
            .cloned()
            .map_or(Ok(Scope::default()), serde_json::from_value);
        match scope {
            Ok(Scope::Project) => vec!["AGENTS.md".to_owned()],
            Ok(Scope::User) => ctx
                .user_memory_file
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
            // A call the tool would refuse writes nothing.
            Err(_) => Vec::new(),
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let fact = normalize(&args.fact);
            if fact.is_empty() {
                return Err(ToolError::Respond(
                    "`fact` is empty: give one sentence to remember, e.g. \"The project uses \
                     tabs for indentation\""
                        .to_owned(),
                ));
            }
            let chars = fact.chars().count();
            if chars > MAX_FACT_CHARS {
                return Err(ToolError::Respond(format!(
                    "the fact is {chars} characters long; at most {MAX_FACT_CHARS} are allowed. \
                     Save the essential point in one shorter sentence, and unrelated facts in \
                     separate calls"
                )));
            }
            let (path, shown) = match args.scope {
                Scope::Project => {
                    if ctx.workspace.primary_root().is_none() {
                        return Err(ToolError::Respond(
                            "there is no workspace folder to keep project memories in; use \
                             scope \"user\" to save the fact to the user's memory file"
                                .to_owned(),
                        ));
                    }
                    let path = ctx.workspace.resolve("AGENTS.md")?;
                    let shown = ctx.workspace.display(&path);
                    (path, shown)
                }
                Scope::User => {
                    let Some(path) = ctx.user_memory_file.clone() else {
                        return Err(ToolError::Respond(
                            "no user memory file is configured, so user memories cannot be \
                             saved; use scope \"project\" to save the fact to AGENTS.md in the \
                             workspace, or tell the user"
                                .to_owned(),
                        ));
                    };
                    let shown = with_tilde(&path, dirs::home_dir().as_deref());
                    // The user's own links (a settings folder kept with their dotfiles) are
                    // followed here, where the write was approved; none is followed while
                    // writing.
                    let path = tandem_sandbox::workspace::canonicalize_existing_prefix(&path)
                        .unwrap_or(path);
                    (path, shown)
                }
            };
            let ctx = ctx.clone();
            tokio::task::spawn_blocking(move || save(&ctx, path, &shown, &fact))
                .await
                .map_err(|error| ToolError::Fatal(format!("save_memory task failed: {error}")))?
        })
    }
}

/// Does the blocking work: reads the memory file, adds the fact, writes it back.
fn save(
    ctx: &ToolContext,
    path: PathBuf,
    shown: &str,
    fact: &str,
) -> Result<ToolOutput, ToolError> {
    if path.is_dir() {
        return Err(ToolError::Respond(format!(
            "the memory file `{shown}` is a directory, so nothing can be saved to it; tell the \
             user"
        )));
    }
    // A dangling symlink (which `resolve` cannot follow to check) would have its target
    // created wherever it points.
    if !path.exists() && path.is_symlink() {
        return Err(ToolError::Respond(format!(
            "the memory file `{shown}` is a symbolic link to a file that does not exist, so \
             nothing was saved; tell the user"
        )));
    }
    let old = match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            ToolError::Respond(format!(
                "the memory file `{shown}` is not UTF-8 text, so it cannot be added to; tell \
                 the user"
            ))
        })?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(ToolError::Respond(format!(
                "cannot read the memory file `{shown}`: {error}"
            )))
        }
    };
    let location = |line: usize| Location {
        path: path.clone(),
        line: u32::try_from(line).ok(),
    };
    let (new, line) = match add_fact(&old, fact) {
        Added::Already { line } => {
            return Ok(ToolOutput {
                text: format!("Already saved in {shown} (line {line}): \"{fact}\"; nothing added."),
                locations: vec![location(line)],
                diff: None,
                images: Vec::new(),
            });
        }
        Added::New { text, line } => (text, line),
    };

    // The model may rely on having seen this file; our own addition should not make a later
    // write_file refuse it, but a change someone else made before us still must.
    let seen = ctx.session.freshness(&path, ctx.editor.as_ref()) == Freshness::Current;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| {
            ToolError::Respond(format!(
                "cannot create the directory for the memory file `{shown}`: {error}"
            ))
        })?;
    }
    // Not through a link swapped in since `path` was resolved.
    tandem_sandbox::files::write(&path, new.as_bytes()).map_err(|error| {
        ToolError::Respond(format!("cannot write the memory file `{shown}`: {error}"))
    })?;
    if seen {
        ctx.session.mark_read(&path);
    }
    Ok(ToolOutput {
        text: format!("Saved to {shown}: \"{fact}\""),
        locations: vec![location(line)],
        diff: None,
        images: Vec::new(),
    })
}

/// One line: each line trimmed, blank ones dropped, joined with spaces; a bullet the model
/// added itself is dropped so the file does not get `- - fact`.
fn normalize(fact: &str) -> String {
    let joined = fact
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match joined.strip_prefix("- ") {
        Some(rest) => rest.trim_start().to_owned(),
        None => joined,
    }
}

/// `~/…` for a path under the home directory, the full path otherwise.
fn with_tilde(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|home| path.strip_prefix(home).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// What adding a fact to a memory file's text came to. Lines are 1-based.
#[derive(Debug, PartialEq, Eq)]
enum Added {
    New { text: String, line: usize },
    Already { line: usize },
}

/// Adds `- {fact}` at the end of the `## Tandem memories` section of `text` (appending the
/// section if there is none), keeping everything else, line endings included.
fn add_fact(text: &str, fact: &str) -> Added {
    let eol = match text.find('\n') {
        Some(index) if text[..index].ends_with('\r') => "\r\n",
        _ => "\n",
    };
    // (start offset, content without the line break, whether it is a heading) per line;
    // `#` lines inside code fences are not headings.
    let mut lines = Vec::new();
    let mut start = 0;
    let mut in_fence = false;
    for raw in text.split_inclusive('\n') {
        let content = raw.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
        let heading = !in_fence
            && (1..=6).contains(&hashes)
            && (trimmed.len() == hashes || trimmed[hashes..].starts_with([' ', '\t']));
        lines.push((start, content, heading));
        start += raw.len();
    }

    let Some(heading) = lines
        .iter()
        .position(|(_, content, heading)| *heading && content.trim() == HEADING)
    else {
        // A new section at the end, one blank line after the existing text.
        let separator = if text.is_empty() || text.ends_with(&format!("{eol}{eol}")) {
            String::new()
        } else if text.ends_with('\n') {
            eol.to_owned()
        } else {
            // Finish the last line, then leave a blank one.
            format!("{eol}{eol}")
        };
        let new = format!("{text}{separator}{HEADING}{eol}{eol}- {fact}{eol}");
        let line = new.lines().count();
        return Added::New { text: new, line };
    };
    let end = lines[heading + 1..]
        .iter()
        .position(|(_, _, is_heading)| *is_heading)
        .map_or(lines.len(), |offset| heading + 1 + offset);
    let bullet = format!("- {fact}");
    if let Some(offset) = lines[heading + 1..end].iter().position(|(_, content, _)| {
        let content = content.trim();
        content == bullet || content.strip_prefix("* ") == Some(fact)
    }) {
        return Added::Already {
            line: heading + 1 + offset + 1,
        };
    }

    let last = (heading + 1..end)
        .rev()
        .find(|&index| !lines[index].1.trim().is_empty());
    // Right after the last bullet (or other text) of the section; after a blank line below
    // the heading when the section is still empty.
    let (after, before_bullet) = match last {
        Some(index) => (index, ""),
        None => (heading, eol),
    };
    let line_end = lines
        .get(after + 1)
        .map_or(text.len(), |(start, _, _)| *start);
    // The line we add after may be the file's last, without a line break yet.
    let break_first = if text[..line_end].ends_with('\n') {
        ""
    } else {
        eol
    };
    let insert = format!("{break_first}{before_bullet}{bullet}{eol}");
    let mut new = String::with_capacity(text.len() + insert.len());
    new.push_str(&text[..line_end]);
    new.push_str(&insert);
    new.push_str(&text[line_end..]);
    // `after` is 0-based; the bullet comes on the next line, or one further after a blank.
    let line = after + 2 + usize::from(!before_bullet.is_empty());
    Added::New { text: new, line }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::testing::TestWorkspace;

    /// Shows what `add_fact` makes of `text`: the bullet's line, then the new file.
    fn check_add(text: &str, fact: &str, expect: Expect) {
        let shown = match add_fact(text, fact) {
            Added::New { text, line } => format!("added at line {line}:\n{text}"),
            Added::Already { line } => format!("already at line {line}"),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn facts_go_at_the_end_of_the_section() {
        check_add(
            "",
            "Use tabs",
            expect![[r#"
            added at line 3:
            ## Tandem memories

            - Use tabs
        "#]],
        );
        check_add(
            "# Project\n\nSome rules.\n",
            "Use tabs",
            expect![[r#"
            added at line 7:
            # Project

            Some rules.

            ## Tandem memories

            - Use tabs
        "#]],
        );
        check_add(
            "# Project\n\nNo final newline",
            "Use tabs",
            expect![[r#"
            added at line 7:
            # Project

            No final newline

            ## Tandem memories

            - Use tabs
        "#]],
        );
        check_add(
            "# Project\n\n",
            "Use tabs",
            expect![[r#"
            added at line 5:
            # Project

            ## Tandem memories

            - Use tabs
        "#]],
        );
        check_add(
            "# Project\n\n## Tandem memories\n\n- Old fact\n\n## Later section\n\nKept.\n",
            "Use tabs",
            expect![[r#"
                added at line 6:
                # Project

                ## Tandem memories

                - Old fact
                - Use tabs

                ## Later section

                Kept.
            "#]],
        );
        check_add(
            "## Tandem memories\n- Old fact",
            "Use tabs",
            expect![[r#"
            added at line 3:
            ## Tandem memories
            - Old fact
            - Use tabs
        "#]],
        );
        check_add(
            "## Tandem memories\n\n## Next\n",
            "Use tabs",
            expect![[r#"
            added at line 3:
            ## Tandem memories

            - Use tabs

            ## Next
        "#]],
        );
        check_add(
            "## Tandem memories",
            "Use tabs",
            expect![[r#"
            added at line 3:
            ## Tandem memories

            - Use tabs
        "#]],
        );
        // A `#` line in a code fence does not end the section.
        check_add(
            "## Tandem memories\n\n- Old fact\n```sh\n# not a heading\n```\n",
            "Use tabs",
            expect![[r#"
                added at line 7:
                ## Tandem memories

                - Old fact
                ```sh
                # not a heading
                ```
                - Use tabs
            "#]],
        );
        check_add(
            "## Tandem memories\n\n- Old fact\n- Use tabs\n\n## Next\n",
            "Use tabs",
            expect!["already at line 4"],
        );
        check_add(
            "## Tandem memories\n\n* Use tabs\n",
            "Use tabs",
            expect!["already at line 3"],
        );
        // The same text under another heading does not count.
        check_add(
            "## Notes\n\n- Use tabs\n",
            "Use tabs",
            expect![[r#"
            added at line 7:
            ## Notes

            - Use tabs

            ## Tandem memories

            - Use tabs
        "#]],
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let Added::New { text, line } = add_fact("# A\r\n\r\n## Tandem memories\r\n- x\r\n", "y")
        else {
            panic!("not added");
        };
        assert_eq!(text, "# A\r\n\r\n## Tandem memories\r\n- x\r\n- y\r\n");
        assert_eq!(line, 5);
        let Added::New { text, line } = add_fact("# A\r\n", "y") else {
            panic!("not added");
        };
        assert_eq!(text, "# A\r\n\r\n## Tandem memories\r\n\r\n- y\r\n");
        assert_eq!(line, 5);
    }

    #[tokio::test]
    async fn saves_project_and_user_memories() {
        let ws = TestWorkspace::new(&[("src/lib.rs", "")]);
        let user_file = ws.ctx.user_memory_file.clone().unwrap();
        let user_shown = with_tilde(&user_file, dirs::home_dir().as_deref());
        let mut transcript = String::new();
        for args in [
            json!({"fact": "Run tests with `cargo nextest run`."}),
            json!({"fact": "  The API is\n  versioned by date.\n", "scope": "project"}),
            json!({"fact": "- Run tests with `cargo nextest run`."}),
            json!({"fact": "Prefers short commit messages.", "scope": "user"}),
        ] {
            let answer = ws.call(&SaveMemory, args).await;
            transcript.push_str(&answer.replace(&user_shown, "<user file>"));
            transcript.push('\n');
        }
        transcript.push_str(&format!(
            "--- AGENTS.md\n{}--- user file\n{}",
            ws.read("AGENTS.md"),
            std::fs::read_to_string(&user_file).unwrap()
        ));
        expect![[r#"
            Saved to AGENTS.md: "Run tests with `cargo nextest run`."
            Saved to AGENTS.md: "The API is versioned by date."
            Already saved in AGENTS.md (line 3): "Run tests with `cargo nextest run`."; nothing added.
            Saved to <user file>: "Prefers short commit messages."
            --- AGENTS.md
            ## Tandem memories

            - Run tests with `cargo nextest run`.
            - The API is versioned by date.
            --- user file
            ## Tandem memories

            - Prefers short commit messages.
        "#]].assert_eq(&transcript);
    }

    #[tokio::test]
    async fn locations_point_at_the_bullet() {
        let ws = TestWorkspace::new(&[("AGENTS.md", "# Rules\n\n## Tandem memories\n\n- a\n")]);
        let output = SaveMemory.run(json!({"fact": "b"}), &ws.ctx).await.unwrap();
        let path = ws.root.join("AGENTS.md");
        assert_eq!(
            output.locations,
            vec![Location {
                path: path.clone(),
                line: Some(6)
            }]
        );
        let output = SaveMemory.run(json!({"fact": "a"}), &ws.ctx).await.unwrap();
        assert_eq!(
            output.locations,
            vec![Location {
                path,
                line: Some(5)
            }]
        );
    }

    #[tokio::test]
    async fn a_file_the_model_had_read_stays_read_after_the_save() {
        let ws = TestWorkspace::new(&[("AGENTS.md", "# Rules\n")]);
        let path = ws.root.join("AGENTS.md");
        ws.ctx.session.mark_read(&path);
        ws.call(&SaveMemory, json!({"fact": "b"})).await;
        assert_eq!(
            ws.ctx.session.freshness(&path, ws.ctx.editor.as_ref()),
            Freshness::Current
        );
        // Never read: saving does not make it count as read.
        let user_file = ws.ctx.user_memory_file.clone().unwrap();
        ws.call(&SaveMemory, json!({"fact": "b", "scope": "user"}))
            .await;
        assert_eq!(ws.ctx.session.last_seen(&user_file), None);
    }

    #[tokio::test]
    async fn refusals_say_what_to_do() {
        let long = "x".repeat(501);
        let cases = [
            (json!({"fact": " \n "}), expect![[r#"error: `fact` is empty: give one sentence to remember, e.g. "The project uses tabs for indentation""#]]),
            (json!({"fact": long}), expect!["error: the fact is 501 characters long; at most 500 are allowed. Save the essential point in one shorter sentence, and unrelated facts in separate calls"]),
            (json!({"fact": "a", "scope": "global"}), expect!["error: invalid arguments for save_memory: unknown variant `global`, expected `project` or `user`"]),
            (json!({"scope": "user"}), expect!["error: invalid arguments for save_memory: missing field `fact`"]),
            (json!({"fact": "a", "file": "NOTES.md"}), expect!["error: invalid arguments for save_memory: unknown field `file`, expected `fact` or `scope`"]),
        ];
        for (args, expect) in cases {
            let ws = TestWorkspace::new(&[]);
            expect.assert_eq(&ws.call(&SaveMemory, args).await);
            assert!(!ws.root.join("AGENTS.md").exists());
        }

        let mut ws = TestWorkspace::new(&[]);
        ws.ctx.user_memory_file = None;
        expect![[r#"error: no user memory file is configured, so user memories cannot be saved; use scope "project" to save the fact to AGENTS.md in the workspace, or tell the user"#]].assert_eq(
            &ws.call(&SaveMemory, json!({"fact": "a", "scope": "user"}))
                .await,
        );

        let ws = TestWorkspace::new(&[("AGENTS.md/inner.md", "")]);
        expect!["error: the memory file `AGENTS.md` is a directory, so nothing can be saved to it; tell the user"].assert_eq(&ws.call(&SaveMemory, json!({"fact": "a"})).await);

        let mut ws = TestWorkspace::new(&[]);
        ws.ctx.workspace = std::sync::Arc::new(tandem_sandbox::workspace::Workspace::new(
            Vec::new(),
            Vec::new(),
        ));
        expect![[r#"error: there is no workspace folder to keep project memories in; use scope "user" to save the fact to the user's memory file"#]].assert_eq(&ws.call(&SaveMemory, json!({"fact": "a"})).await);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn refuses_to_write_through_a_dangling_symlink() {
        let ws = TestWorkspace::new(&[]);
        let target = ws.root.parent().unwrap().join("outside.md");
        std::os::unix::fs::symlink(&target, ws.root.join("AGENTS.md")).unwrap();
        expect!["error: `AGENTS.md` is not a usable path: it is, or goes through, a symbolic link whose target does not exist"].assert_eq(&ws.call(&SaveMemory, json!({"fact": "a"})).await);
        assert!(!target.exists());
    }

    /// The second review's finding 3: `save_memory` named no path it wrote, so the
    /// protected-path check never saw the user's memory file (in their settings folder) or an
    /// `AGENTS.md` linked into `.git/hooks`.
    #[test]
    fn the_memory_file_is_named_for_the_protected_path_check() {
        let ws = TestWorkspace::new(&[]);
        let user_file = ws.ctx.user_memory_file.clone().unwrap();
        let cases = [
            (json!({"fact": "x"}), vec!["AGENTS.md".to_owned()]),
            (
                json!({"fact": "x", "scope": "project"}),
                vec!["AGENTS.md".to_owned()],
            ),
            (
                json!({"fact": "x", "scope": "user"}),
                vec![user_file.display().to_string()],
            ),
            (json!({"fact": "x", "scope": "elsewhere"}), Vec::new()),
        ];
        for (args, expected) in cases {
            assert_eq!(SaveMemory.paths_written(&args, &ws.ctx), expected, "{args}");
        }
    }

    #[test]
    fn paths_under_home_use_a_tilde() {
        let home = Path::new("/home/ada");
        assert_eq!(
            with_tilde(Path::new("/home/ada/.config/tandem/AGENTS.md"), Some(home)),
            "~/.config/tandem/AGENTS.md"
        );
        assert_eq!(
            with_tilde(Path::new("/etc/tandem/AGENTS.md"), Some(home)),
            "/etc/tandem/AGENTS.md"
        );
        assert_eq!(with_tilde(Path::new("/x/AGENTS.md"), None), "/x/AGENTS.md");
    }

    #[test]
    fn titles_and_schema() {
        assert_eq!(
            SaveMemory.title(&json!({"fact": "Use tabs"})),
            "Remember \"Use tabs\""
        );
        assert_eq!(
            SaveMemory.title(&json!({"fact": "a".repeat(70)})),
            format!("Remember \"{}…\"", "a".repeat(60))
        );
        assert_eq!(SaveMemory.title(&Value::Null), "Save memory");
        expect![[r#"
            {
              "type": "object",
              "additionalProperties": false,
              "properties": {
                "fact": {
                  "type": "string",
                  "description": "The fact to remember: one self-contained sentence, understandable without this\nconversation (e.g. \"Run the tests with `cargo nextest run`, not `cargo test`\"). At most\n500 characters; line breaks become spaces."
                },
                "scope": {
                  "type": "string",
                  "enum": [
                    "project",
                    "user"
                  ],
                  "description": "Where to save it: `project` (the default) for facts about this code base, saved in\n`AGENTS.md` at the workspace root and shared with everyone working on it; `user` for the\nuser's personal preferences across all projects, saved in their own memory file.",
                  "default": "project"
                }
              },
              "required": [
                "fact"
              ]
            }"#]].assert_eq(&serde_json::to_string_pretty(&SaveMemory.parameters()).unwrap());
    }
}
