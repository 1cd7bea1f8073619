//! `tandem sessions`: the saved sessions of a workspace, listed newest first (`--json` for
//! scripts), and `tandem sessions delete ID` to remove one. Sessions are saved by `tandem ask`
//! and the language server; `tandem ask --resume ID` continues one.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use tandem_agent::settings::AgentSettings;
use tandem_agent::setup;
use tandem_agent::store::SessionSummary;

use crate::ask::{load_settings, workspace_root};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
    /// Listing is what `tandem sessions` alone does.
    #[command(flatten)]
    list: ListArgs,
}

#[derive(Debug, clap::Subcommand)]
enum SessionsCommand {
    /// List the saved sessions, most recently updated first (the default).
    List(ListArgs),
    /// Delete a saved session: its file and the tool outputs saved with it.
    Delete {
        /// The session's id, as `tandem sessions` lists it.
        id: String,
        /// The workspace the session belongs to. Default: the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    /// The workspace whose sessions to list. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print the sessions as one JSON array (id, title, createdMs, updatedMs, turns, path).
    #[arg(long)]
    json: bool,
}

/// Runs `tandem sessions`; an unknown id or an unusable store is an error (exit 2).
pub fn run(args: SessionsArgs) -> Result<i32> {
    match args.command.unwrap_or(SessionsCommand::List(args.list)) {
        SessionsCommand::List(ListArgs { workspace, json }) => {
            let root = workspace_root(workspace)?;
            let (_, settings) = load_settings(&root)?;
            let Some(store) = setup::session_store(&settings, &root, None) else {
                // Not an error: there is simply nothing saved to list.
                eprintln!("{}", no_store(&settings));
                if json {
                    writeln!(io::stdout().lock(), "[]")?;
                }
                return Ok(0);
            };
            let sessions = store.list()?;
            let mut out = io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string(&sessions)?)?;
            } else if sessions.is_empty() {
                eprintln!("no saved sessions for {}", root.display());
            } else {
                write_table(&sessions, &mut out)?;
            }
            Ok(0)
        }
        SessionsCommand::Delete { id, workspace } => {
            let root = workspace_root(workspace)?;
            let (_, settings) = load_settings(&root)?;
            let Some(store) = setup::session_store(&settings, &root, None) else {
                bail!("cannot delete session {id}: {}", no_store(&settings));
            };
            store.delete(&id)?;
            writeln!(io::stdout().lock(), "deleted session {id}")?;
            Ok(0)
        }
    }
}

/// Why a workspace has no session store.
fn no_store(settings: &AgentSettings) -> &'static str {
    if settings.sessions.persist {
        "there is no state directory for saved sessions; set TANDEM_STATE_DIR"
    } else {
        "saving sessions is off (`sessions.persist` is false in the settings)"
    }
}

/// One row per session under a header, the title last since it is the only free text.
fn write_table(sessions: &[SessionSummary], out: &mut impl Write) -> io::Result<()> {
    let width = sessions
        .iter()
        .map(|session| session.id.len())
        .max()
        .unwrap_or(0)
        .max("ID".len());
    writeln!(
        out,
        "{:<width$}  {:<16}  {:>5}  TITLE",
        "ID", "UPDATED (UTC)", "TURNS"
    )?;
    for session in sessions {
        writeln!(
            out,
            "{:<width$}  {:<16}  {:>5}  {}",
            session.id,
            utc_minutes(session.updated_ms),
            session.turns,
            session.title
        )?;
    }
    Ok(())
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM` (UTC).
fn utc_minutes(ms: u64) -> String {
    let minutes = ms / 60_000;
    let days = i64::try_from(minutes / 1_440).unwrap_or(0);
    let (hour, minute) = ((minutes % 1_440) / 60, minutes % 60);
    let (year, month, day) = tandem_agent::setup::civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_to_the_minute_in_utc() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        // 2000-02-29 13:37:59.999: a leap day, seconds dropped.
        assert_eq!(utc_minutes(951_831_479_999), "2000-02-29 13:37");
        assert_eq!(utc_minutes(1_704_067_199_000), "2023-12-31 23:59");
    }

    #[test]
    fn the_table_aligns_columns_and_puts_the_title_last() {
        let session = |id: &str, turns, title: &str| SessionSummary {
            id: id.to_owned(),
            title: title.to_owned(),
            created_ms: 0,
            updated_ms: 1_704_067_199_000,
            turns,
            path: PathBuf::new(),
        };
        let mut out = Vec::new();
        write_table(
            &[
                session("20240101-000000-a1b2", 12, "Fix the parser test"),
                session("x", 1, "Why?"),
            ],
            &mut out,
        )
        .unwrap();
        expect_test::expect![[r#"
            ID                    UPDATED (UTC)     TURNS  TITLE
            20240101-000000-a1b2  2023-12-31 23:59     12  Fix the parser test
            x                     2023-12-31 23:59      1  Why?
        "#]]
        .assert_eq(&String::from_utf8(out).unwrap());
    }
}
