//! The environment context the first message of a session carries: date, operating system,
//! shell, workspace folders, and a folder tree that respects .gitignore and is cut
//! breadth-first, with counts of what was left out (`[+4 files (2 *.rs, …) & 1 dir]`).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// Entries shown per workspace folder before the rest is summarised.
pub const TREE_BUDGET: usize = 200;

/// The context block; `today` is the date as the front end wants it shown.
pub fn environment_context(roots: &[PathBuf], today: &str) -> String {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| {
        if cfg!(windows) {
            "cmd.exe".to_owned()
        } else {
            "sh".to_owned()
        }
    });
    let mut text = format!(
        "<environment>\nToday's date: {today}\nOperating system: {}\nShell: {shell}\n",
        std::env::consts::OS
    );
    match roots {
        [] => text.push_str("No workspace folder is open.\n"),
        [root] => text.push_str(&format!("Workspace folder: {}\n", root.display())),
        _ => {
            text.push_str("Workspace folders (relative paths resolve against the first):\n");
            for root in roots {
                text.push_str(&format!("- {}\n", root.display()));
            }
        }
    }
    for root in roots {
        text.push_str(&format!(
            "\nFiles in {} (respecting .gitignore):\n",
            root.display()
        ));
        text.push_str(&folder_tree(root, TREE_BUDGET));
    }
    text.push_str("</environment>");
    text
}

struct Dir {
    path: PathBuf,
    depth: usize,
    /// Shown children: (name, is_dir), dirs first.
    shown: Vec<(String, bool)>,
    /// Files and directories left out.
    hidden_files: Vec<String>,
    hidden_dirs: usize,
    expanded: bool,
}

/// The tree under `root`, at most `budget` entries, filled breadth-first.
pub fn folder_tree(root: &Path, budget: usize) -> String {
    let mut dirs: Vec<Dir> = Vec::new();
    let mut queue = VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut left = budget;
    while let Some((path, depth)) = queue.pop_front() {
        let children = list(&path);
        let mut dir = Dir {
            path,
            depth,
            shown: Vec::new(),
            hidden_files: Vec::new(),
            hidden_dirs: 0,
            expanded: left > 0,
        };
        for (name, is_dir) in children {
            if left > 0 {
                left -= 1;
                if is_dir {
                    queue.push_back((dir.path.join(&name), depth + 1));
                }
                dir.shown.push((name, is_dir));
            } else if is_dir {
                dir.hidden_dirs += 1;
            } else {
                dir.hidden_files.push(name);
            }
        }
        dirs.push(dir);
    }
    let by_path: BTreeMap<&Path, &Dir> = dirs.iter().map(|dir| (dir.path.as_path(), dir)).collect();
    let mut out = String::new();
    render(root, &by_path, &mut out);
    if out.is_empty() {
        out.push_str("(empty)\n");
    }
    out
}

fn render(path: &Path, dirs: &BTreeMap<&Path, &Dir>, out: &mut String) {
    let Some(dir) = dirs.get(path) else { return };
    let indent = "  ".repeat(dir.depth);
    for (name, is_dir) in &dir.shown {
        if *is_dir {
            out.push_str(&format!("{indent}{name}/\n"));
            render(&path.join(name), dirs, out);
        } else {
            out.push_str(&format!("{indent}{name}\n"));
        }
    }
    if !dir.expanded || !dir.hidden_files.is_empty() || dir.hidden_dirs > 0 {
        let summary = summary(&dir.hidden_files, dir.hidden_dirs);
        if !summary.is_empty() {
            out.push_str(&format!("{indent}{summary}\n"));
        }
    }
}

/// `[+4 files (2 *.rs, 1 *.md, 1 other) & 1 dir]`.
fn summary(files: &[String], dirs: usize) -> String {
    if files.is_empty() && dirs == 0 {
        return String::new();
    }
    let mut by_extension: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let key = match Path::new(file).extension() {
            Some(extension) => format!("*.{}", extension.to_string_lossy()),
            None => "other".to_owned(),
        };
        *by_extension.entry(key).or_default() += 1;
    }
    let mut kinds: Vec<(String, usize)> = by_extension.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let kinds: Vec<String> = kinds
        .iter()
        .take(4)
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    let plural = |count: usize, word: &str| {
        if count == 1 {
            format!("{count} {word}")
        } else {
            format!("{count} {word}s")
        }
    };
    let files_part = if files.is_empty() {
        String::new()
    } else {
        let more = if kinds.len() < 4 { "" } else { ", …" };
        format!(
            "{} ({}{more})",
            plural(files.len(), "file"),
            kinds.join(", ")
        )
    };
    match (files.is_empty(), dirs) {
        (true, dirs) => format!("[+{}]", plural(dirs, "dir")),
        (false, 0) => format!("[+{files_part}]"),
        (false, dirs) => format!("[+{files_part} & {}]", plural(dirs, "dir")),
    }
}

/// A directory's entries, ignore rules applied, directories first, each sorted by name.
fn list(dir: &Path) -> Vec<(String, bool)> {
    let walker = ignore::WalkBuilder::new(dir)
        .max_depth(Some(1))
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut entries: Vec<(String, bool)> = walker
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() == 1)
        .map(|entry| {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            (entry.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        dir
    }

    #[test]
    fn small_trees_are_shown_whole_and_ignored_files_are_not() {
        let dir = workspace(&[
            "Cargo.toml",
            "src/lib.rs",
            "src/parser/mod.rs",
            "target/debug/x",
            ".gitignore",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        expect_test::expect![[r#"
            src/
              parser/
                mod.rs
              lib.rs
            .gitignore
            Cargo.toml
        "#]]
        .assert_eq(&folder_tree(dir.path(), 100));
    }

    #[test]
    fn large_trees_are_cut_breadth_first_with_counts() {
        let mut files = vec!["README.md".to_owned(), "docs/guide.md".to_owned()];
        files.extend((0..6).map(|i| format!("src/m{i}.rs")));
        files.extend(["src/deep/a.rs".to_owned(), "src/notes.txt".to_owned()]);
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let dir = workspace(&refs);
        expect_test::expect![[r#"
            docs/
              guide.md
            src/
              deep/
                [+1 file (1 *.rs)]
              m0.rs
              m1.rs
              [+5 files (4 *.rs, 1 *.txt)]
            README.md
        "#]]
        .assert_eq(&folder_tree(dir.path(), 7));
    }

    #[test]
    fn the_context_names_the_date_os_and_folders() {
        let dir = workspace(&["a.txt"]);
        let text = environment_context(&[dir.path().to_owned()], "Sunday, 22 November 2026");
        assert!(text.starts_with("<environment>\nToday's date: Sunday, 22 November 2026\n"));
        assert!(text.contains(&format!("Workspace folder: {}", dir.path().display())));
        assert!(text.contains("a.txt\n") && text.ends_with("</environment>"));
    }
}
