//! Issue: approval prompts marked only listed invisible characters; a command padded with braille blanks (U+2800) hid its tail.

use serde_json::json;

use super::super::ask::Setup;
use super::{calls_with_status, one_by_one, shell, told, SANDBOXED};

/// Issue 35, finding 4: `cargo test`, 3,800 braille blanks (U+2800, a symbol that draws
/// nothing) and `; touch pwned` was offered "Allow once" with its tail out of view: only a list
/// of invisible characters was marked. Characters are marked by what they render as now, and a
/// long run of one character is a single marker with its count; headless, nothing runs.
#[tokio::test]
async fn a_command_padded_with_braille_blanks_shows_its_tail_in_the_approval() {
    let command = format!("cargo test{}; touch pwned", "\u{2800}".repeat(3800));
    let setup = Setup::replay_with(&one_by_one(&[shell(&command)]), json!({}), &[]);
    let run = setup.ask("run the tests", &["--json"]).await;
    // 3: the turn ended, but every action it tried was refused.
    assert_eq!(run.code, 3, "{run:#?}");
    let asked = calls_with_status(&run, "awaitingApproval");
    assert_eq!(asked.len(), 1, "{}", run.stdout);
    assert_eq!(asked[0]["rawInput"]["command"], command.as_str());
    assert_eq!(
        asked[0]["details"],
        format!(
            "Run this command with `bash -c` in the workspace root:\n    \
             cargo test⟨3800 × U+2800⟩; touch pwned\n\n{SANDBOXED}"
        )
    );
    // The title is cut to fit a menu, and what it keeps of the run is counted too.
    assert_eq!(asked[0]["title"], "Run `cargo test⟨63 × U+2800⟩…`");
    assert!(!setup.path("pwned").exists());
    let told = told(&run);
    assert!(
        told[0].starts_with("Not run: this call needs the user's approval"),
        "{told:?}"
    );
}
