//! Completion in the composer: `/` at the start of the prompt offers the commands (the chat's
//! own and the agent's: built-in, custom, MCP prompts, as `available_commands_update` lists
//! them), `@` before a word offers the workspace's files (listed once, in the background, with
//! `.gitignore` applied). Matching is by prefix first, then by substring, then by the letters
//! in order.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// The most files listed for `@`.
const MAX_FILES: usize = 20_000;
/// The most candidates shown.
const SHOWN: usize = 8;

/// One candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What replaces the word being completed.
    pub insert: String,
    pub label: String,
    pub detail: String,
}

/// The candidates for the word before the cursor, and where that word starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub start: usize,
    pub candidates: Vec<Candidate>,
    pub selected: usize,
}

impl Completion {
    pub fn selected(&self) -> Option<&Candidate> {
        self.candidates.get(self.selected)
    }

    pub fn step(&mut self, by: i32) {
        let count = self.candidates.len() as i32;
        if count > 0 {
            self.selected = ((self.selected as i32 + by).rem_euclid(count)) as usize;
        }
    }
}

/// The workspace's files, relative, filled in by a background walk.
#[derive(Clone, Default)]
pub struct Files(Arc<Mutex<Vec<String>>>);

impl Files {
    /// Starts listing `root`'s files on a blocking thread.
    pub fn list(root: &Path) -> Files {
        let files = Files::default();
        let into = files.clone();
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            let mut found = Vec::new();
            for entry in ignore::WalkBuilder::new(&root)
                .hidden(true)
                .build()
                .flatten()
            {
                if entry.file_type().is_some_and(|kind| kind.is_file()) {
                    if let Ok(relative) = entry.path().strip_prefix(&root) {
                        found.push(relative.to_string_lossy().into_owned());
                    }
                    if found.len() >= MAX_FILES {
                        break;
                    }
                }
            }
            found.sort();
            *into.0.lock().unwrap_or_else(PoisonError::into_inner) = found;
        });
        files
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A command as completion offers it: name (without the slash), description, argument hint.
pub type Command = (String, String, Option<String>);

/// The completion at `cursor` in `text`, if the word there is a command or a mention.
pub fn complete(
    text: &str,
    cursor: usize,
    commands: &[Command],
    files: &[String],
) -> Option<Completion> {
    let before = &text[..cursor];
    let start = before.rfind(char::is_whitespace).map_or(0, |at| {
        at + before[at..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    if let Some(name) = word.strip_prefix('/') {
        if start != 0 || text[cursor..].contains('\n') {
            return None;
        }
        let candidates = ranked(commands.iter().map(|(name, _, _)| name.as_str()), name)
            .into_iter()
            .filter_map(|index| commands.get(index))
            .map(|(name, description, hint)| Candidate {
                insert: format!("/{name} "),
                label: match hint {
                    Some(hint) => format!("/{name} {hint}"),
                    None => format!("/{name}"),
                },
                detail: description.clone(),
            })
            .take(SHOWN)
            .collect::<Vec<_>>();
        return (!candidates.is_empty()).then_some(Completion {
            start,
            candidates,
            selected: 0,
        });
    }
    let query = word.strip_prefix('@')?;
    let candidates = ranked(files.iter().map(String::as_str), query)
        .into_iter()
        .filter_map(|index| files.get(index))
        .map(|path| Candidate {
            insert: format!("@{path} "),
            label: format!("@{path}"),
            detail: String::new(),
        })
        .take(SHOWN)
        .collect::<Vec<_>>();
    (!candidates.is_empty()).then_some(Completion {
        start,
        candidates,
        selected: 0,
    })
}

/// The indexes of `names` that match `query`: prefix matches (of the name, or of a path's file
/// name), then substrings, then subsequences; shorter first within each.
fn ranked<'a>(names: impl Iterator<Item = &'a str>, query: &str) -> Vec<usize> {
    let query = query.to_lowercase();
    let mut scored: Vec<(u8, usize, usize)> = names
        .enumerate()
        .filter_map(|(index, name)| {
            let lower = name.to_lowercase();
            let file = lower.rsplit('/').next().unwrap_or(&lower);
            let score = if lower.starts_with(&query) || file.starts_with(&query) {
                0
            } else if lower.contains(&query) {
                1
            } else if subsequence(&lower, &query) {
                2
            } else {
                return None;
            };
            Some((score, name.len(), index))
        })
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, _, index)| index).collect()
}

fn subsequence(text: &str, query: &str) -> bool {
    let mut chars = text.chars();
    query.chars().all(|wanted| chars.any(|c| c == wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Vec<Command> {
        ["compress", "clear", "help", "model"]
            .iter()
            .map(|name| ((*name).to_owned(), format!("{name} it"), None))
            .collect()
    }

    #[test]
    fn a_slash_at_the_start_offers_commands_by_prefix() {
        let completion = complete("/c", 2, &commands(), &[]).unwrap();
        let labels: Vec<&str> = completion
            .candidates
            .iter()
            .map(|c| c.label.as_str())
            .collect();
        assert_eq!(labels, ["/clear", "/compress"]);
        assert!(complete("say /c", 6, &commands(), &[]).is_none());
    }

    #[test]
    fn an_at_sign_offers_files_by_file_name_first() {
        let files = vec![
            "README.md".to_owned(),
            "src/main.rs".to_owned(),
            "src/math/mod.rs".to_owned(),
        ];
        let completion = complete("look at @ma", 11, &[], &files).unwrap();
        let inserts: Vec<&str> = completion
            .candidates
            .iter()
            .map(|c| c.insert.as_str())
            .collect();
        assert_eq!(inserts, ["@src/main.rs ", "@src/math/mod.rs "]);
        assert_eq!(completion.start, 8);
    }
}
