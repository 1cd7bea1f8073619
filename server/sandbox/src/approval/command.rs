//! Shell command lines as approval rules see them. The `shell` tool runs its command with
//! `bash -c`, so a rule must read it as bash does: `tandem_syntax::shell` parses the line, and
//! this module lists every program it may run (wrappers such as `sudo`, `env`, `xargs`,
//! `find -exec` and `sh -c '…'` unwrapped, as `runners.rs` knows them) for deny rules, and
//! checks the plain lines that allow rules may pass.
//!
//! Deny rules err towards refusing: a rule matches any invocation, at any depth, whose program
//! has the rule's name and whose arguments contain the rule's words in order. Allow rules err
//! towards asking: they apply only to plain lines (simple commands of literal words joined by
//! `&&`, `||`, `;`, `|`, `&`), each command must start with the rule's words, and the remaining
//! arguments may not write files, run programs, change configuration or name paths the workspace
//! does not reach. `cargo test 2>&1 | tail` is therefore never allowed by a rule: redirections
//! are not plain, so that `cargo test > src/main.rs` cannot be.
//!
//! What deny rules cannot see: scripts and the commands they run (`./x.sh`, `bash x.sh`,
//! `source x.sh`, `make`, `npm run`), interpreters' own code strings (`python -c`, `perl -e`,
//! `node -e`), git aliases, commands run on other machines (`ssh host rm`), tools with
//! built-in deletion (`find -delete`, `git clean`), and code bash reads out of variables
//! (`${x@P}`, an arithmetic context evaluating `a[$(…)]` from a variable's value).

use tandem_syntax::shell;

use super::runners::{changes_what_names_run, is_runner, runs, runs_code, Next, MAX_NESTING};

/// One program a command line runs, as deny rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The program's name without its directory or quoting (`/bin/rm`, `\rm`, `"rm"` → `rm`).
    pub program: String,
    /// Its arguments with quotes removed; `None` for a word whose value is known only when the
    /// line runs (`$HOME`, `$(…)`, `*.rs`).
    pub args: Vec<Option<String>>,
}

/// What a command line runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandLine {
    /// Every program the line may run, at any depth: a wrapper (`sudo`, `env`, `sh -c`) and the
    /// command it runs are both listed.
    pub invocations: Vec<Invocation>,
    /// Some program cannot be known before the line runs: a command name that is an expansion
    /// (`$CMD x`), `eval` or `sh -c` of a non-literal string, a shell reading commands from its
    /// standard input (`curl … | sh`), a shell with another syntax (`fish -c`), nesting deeper
    /// than [`MAX_NESTING`], or a line that does not parse.
    pub unknown_program: bool,
    /// The line's simple commands, word by word, when the line is plain: simple commands of
    /// literal words joined by `&&`, `||`, `;`, `|`, `&` and newlines, without assignments,
    /// redirections, substitutions, subshells, compound commands, control flow, functions or
    /// here-documents. Else `None`. An empty line gives `Some` of no commands.
    pub plain: Option<Vec<Vec<String>>>,
}

/// Long options (and, being prefixes of them, their GNU and git abbreviations: `--outp` is
/// `--output`) that write files (`--output`, `--log-file`), run programs (`--exec`,
/// `--upload-pack`, `--ext-diff`, `--open-files-in-pager`), or change configuration, the
/// repository or the hooks a command uses (`--config`, `--git-dir`, `--template`). An allow rule
/// never passes them.
const REFUSED_LONG_OPTIONS: &str = "--output --output-file --out-file --outfile --log-file \
    --exec --exec-path --upload-pack --receive-pack --open-files-in-pager --config --config-env \
    --git-dir --work-tree --ext-diff --run --command --eval --script --post-checkout --template \
    --in-place";

/// Letters that, in a short option cluster (`-o`, `-lo`, `-c`), commonly mean an output file
/// (`-o`, `-O`), a command or configuration (`-c`) or an expression to run (`-e`). Refusing every
/// such cluster is coarse; a false alarm only means the user is asked.
const REFUSED_SHORT_LETTERS: &[char] = &['o', 'O', 'c', 'e'];

/// Single-dash words that write files without any of the letters above (`find -fprint FILE`).
const REFUSED_SINGLE_DASH_WORDS: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];

/// Lists what `command` runs.
pub(crate) fn parse(command: &str) -> CommandLine {
    let mut line = CommandLine::default();
    match shell::parse_line(command) {
        Ok(parsed) => {
            line.plain = plain_commands(&parsed);
            visit_parsed(&parsed, 0, &mut line);
        }
        Err(error) => {
            tracing::warn!(%error, "cannot parse a shell command for the approval rules");
            line.unknown_program = true;
        }
    }
    line
}

/// The commands of a plain line, or `None`.
fn plain_commands(parsed: &shell::Line) -> Option<Vec<Vec<String>>> {
    if parsed.has_error || !parsed.simple {
        return None;
    }
    parsed
        .commands
        .iter()
        .map(|command| {
            let plain = command.top_level
                && !command.redirected
                && command.assignments.is_empty()
                && !command.words.is_empty();
            if !plain {
                return None;
            }
            command
                .words
                .iter()
                .map(|word| word.literal().map(str::to_owned))
                .collect()
        })
        .collect()
}

fn visit_parsed(parsed: &shell::Line, depth: usize, line: &mut CommandLine) {
    line.unknown_program |= parsed.has_error;
    for command in &parsed.commands {
        line.unknown_program |= command
            .assignments
            .iter()
            .any(|assignment| runs_code(&assignment.name));
        let words = command
            .words
            .iter()
            .map(|word| word.literal().map(str::to_owned));
        visit_words(words.collect(), depth, line);
    }
}

/// Adds the invocation `words` and what it runs. Wrappers of wrappers (`sudo env nice rm`) loop
/// rather than recurse, so a long line cannot exhaust the stack.
fn visit_words(mut words: Vec<Option<String>>, depth: usize, line: &mut CommandLine) {
    // Whether more arguments may follow the words, from `xargs`'s standard input.
    let mut appended = false;
    loop {
        let Some(first) = words.first() else {
            return;
        };
        let Some(name) = first.as_deref() else {
            line.unknown_program = true;
            return;
        };
        let program = program_name(name).to_owned();
        let args = words.split_off(1);
        line.unknown_program |= changes_what_names_run(&program, &args);
        let next = match runs(&program, &args) {
            Next::Command(command) if command.is_empty() => Next::Done,
            next => next,
        };
        let next = match next {
            Next::Done if appended && is_runner(&program) => Next::Unknown,
            next => next,
        };
        appended |= program == "xargs";
        line.invocations.push(Invocation { program, args });
        match next {
            Next::Done => return,
            Next::Command(command) => words = command,
            Next::Commands(commands) if depth < MAX_NESTING => {
                for command in commands {
                    visit_words(command, depth + 1, line);
                }
                return;
            }
            Next::Commands(_) | Next::Unknown => {
                line.unknown_program = true;
                return;
            }
            Next::Line(_) if depth >= MAX_NESTING => {
                line.unknown_program = true;
                return;
            }
            Next::Line(text) => {
                match shell::parse_line(&text) {
                    Ok(parsed) => visit_parsed(&parsed, depth + 1, line),
                    Err(_) => line.unknown_program = true,
                }
                return;
            }
        }
    }
}

/// A program's name as rules compare it: without its directory (`/bin/rm`, `./rm` → `rm`).
fn program_name(word: &str) -> &str {
    let trimmed = word.trim_end_matches('/');
    match trimmed.rsplit('/').next() {
        Some(base) if !base.is_empty() => base,
        _ => word,
    }
}

/// A rule's words, read as the shell would (`git commit -m "a b"` has four), or split at
/// whitespace when the rule is not one plain command.
fn rule_words(rule: &str) -> Vec<String> {
    let parsed = shell::parse_line(rule).ok();
    let plain = parsed.as_ref().and_then(plain_commands);
    match plain.as_deref() {
        Some([words]) => words.clone(),
        _ => rule.split_whitespace().map(str::to_owned).collect(),
    }
}

/// Whether the deny rule `rule` (its words: `rm`, `git push`) matches some invocation: the
/// program named by its first word (compared without directories: `/bin/rm` is `rm`) with the
/// rule's other words among its arguments, in order (`git push` matches `git -C x push -f`, and
/// also `git log --grep push`: deny rules err towards refusing). A dynamic argument may be any
/// word, so it matches any rule word (`git $(echo push)` is denied by `git push`).
pub(crate) fn denies(rule: &str, line: &CommandLine) -> bool {
    let words = rule_words(rule);
    let Some((program, rest)) = words.split_first() else {
        return false;
    };
    let program = program_name(program);
    line.invocations.iter().any(|invocation| {
        let mut wanted = rest.iter().peekable();
        for arg in &invocation.args {
            match (wanted.peek(), arg) {
                (None, _) => break,
                (Some(_), None) => {
                    wanted.next();
                }
                (Some(word), Some(arg)) if *word == arg => {
                    wanted.next();
                }
                _ => {}
            }
        }
        invocation.program == program && wanted.peek().is_none()
    })
}

/// Whether the allow rule `rule` allows `command`, one plain simple command's words: the command
/// starts with the rule's words, compared literally (`/usr/bin/git` or `./git` is not the `git`
/// of a rule, so that a workspace script named `git` cannot ride on it), and no later argument
/// writes files, runs programs or changes configuration by an option ([`REFUSED_LONG_OPTIONS`],
/// [`REFUSED_SHORT_LETTERS`], [`REFUSED_SINGLE_DASH_WORDS`]; not checked after `--`) or names a
/// path that `refuses_path` refuses. A rule naming a wrapper, shell or `eval` (`sudo`, `bash`)
/// allows what that runs: such a rule is the user's explicit choice.
pub(crate) fn allows(rule: &str, command: &[String], refuses_path: &dyn Fn(&str) -> bool) -> bool {
    let words = rule_words(rule);
    if words.is_empty() || !command.starts_with(&words) {
        return false;
    }
    let mut options = true;
    command[words.len()..].iter().all(|arg| {
        if options && arg == "--" {
            options = false;
            return true;
        }
        let refused = options && refused_option(arg);
        !refused && !path_candidates(arg).any(refuses_path)
    })
}

/// Whether `arg` is an option that writes files, runs programs or changes configuration.
fn refused_option(arg: &str) -> bool {
    if let Some(long) = arg.strip_prefix("--") {
        let name = format!("--{}", long.split_once('=').map_or(long, |(name, _)| name));
        // `--outp` abbreviates `--output`; `--output-directory` extends it.
        return name.len() >= 3
            && REFUSED_LONG_OPTIONS.split_whitespace().any(|option| {
                option.starts_with(&name)
                    || name
                        .strip_prefix(option)
                        .is_some_and(|rest| rest.starts_with('-'))
            });
    }
    let Some(cluster) = arg.strip_prefix('-').filter(|rest| !rest.is_empty()) else {
        return false;
    };
    let number = cluster
        .chars()
        .all(|char| char.is_ascii_digit() || char == '.');
    !number && (cluster.contains(REFUSED_SHORT_LETTERS) || REFUSED_SINGLE_DASH_WORDS.contains(&arg))
}

/// The parts of `arg` that may name a path: the word and the value after its first `=`, whatever
/// they look like (a committed link may be called `notes`), and a short option's attached value
/// when it looks like a path (`-o/tmp/x` → `/tmp/x`, but not `la` of `-la`), each also without
/// a leading `@` (a response file or `curl -d @file`) or `file://`.
fn path_candidates(arg: &str) -> impl Iterator<Item = &str> {
    let value = arg.split_once('=').map(|(_, value)| value);
    let path_like =
        |candidate: &&str| candidate.starts_with(['/', '~', '.']) || candidate.contains('/');
    let attached = arg
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))
        .map(|cluster| (1..cluster.len()).filter_map(move |at| cluster.get(at..)))
        .into_iter()
        .flatten()
        .filter(path_like);
    [Some(arg), value]
        .into_iter()
        .flatten()
        .chain(attached)
        .flat_map(|candidate| {
            [
                Some(candidate),
                candidate.strip_prefix('@'),
                candidate.strip_prefix("file://"),
            ]
        })
        .flatten()
        .filter(|candidate| !candidate.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refuses what a workspace at the current directory would not reach.
    fn refuses_path(path: &str) -> bool {
        (path.starts_with('/') && path != "/dev/null")
            || path.starts_with('~')
            || path.contains("..")
    }

    fn words(command: &str) -> Vec<String> {
        command.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn deny_rules_see_through_escapes_paths_assignments_and_wrappers() {
        let cases = [
            ("rm", "rm -rf x", true),
            ("rm", r"\rm x", true),
            ("rm", r"r''m x", true),
            ("rm", r#""rm" x"#, true),
            ("rm", r"r\m x", true),
            ("rm", "r\\\nm x", true),
            ("rm", "$'\\x72m' x", true),
            ("rm", "FOO=1 rm x", true),
            ("rm", "/bin/rm x", true),
            ("rm", "./rm x", true),
            ("/bin/rm", "rm x", true),
            ("rm", "command rm x", true),
            ("rm", "command -p rm x", true),
            ("rm", "builtin rm x", true),
            ("rm", "exec -a name rm x", true),
            ("rm", "sh -c 'rm x'", true),
            ("rm", "bash -lc 'rm x'", true),
            ("rm", "bash -e -o pipefail -c 'rm x'", true),
            ("rm", "/usr/bin/env bash -c \"cd a && rm x\"", true),
            ("rm", "sh -c \"sh -c 'rm x'\"", true),
            ("rm", "echo $(rm x)", true),
            ("rm", "echo \"$(rm x)\"", true),
            ("rm", "echo `rm x`", true),
            ("rm", "echo `echo \\`rm x\\``", true),
            ("rm", "cat <(rm x)", true),
            ("rm", "x=$(rm y) true", true),
            ("rm", "xargs rm", true),
            ("rm", "xargs -0 -n 1 -I {} rm {}", true),
            ("rm", "xargs -i rm {}", true),
            ("rm", "find . -exec rm {} \\;", true),
            ("rm", "find . -name x -execdir rm {} +", true),
            ("rm", "find . -exec echo {} \\; -ok rm {} \\;", true),
            ("rm", "sudo rm x", true),
            ("rm", "sudo -u root rm x", true),
            ("rm", "sudo -nu root -- FOO=1 rm x", true),
            ("rm", "doas -u root rm x", true),
            ("rm", "env rm x", true),
            ("rm", "env -i FOO=1 rm x", true),
            ("rm", "env -u HOME -C /tmp rm x", true),
            ("rm", "env -S 'rm x'", true),
            ("rm", "env --split-string='FOO=1 rm -f' x", true),
            ("rm", "eval \"rm x\"", true),
            ("rm", "eval rm x", true),
            ("rm", "timeout 5 rm x", true),
            ("rm", "timeout -s KILL -k 1 5 rm x", true),
            ("rm", "nice -n 5 rm x", true),
            ("rm", "nice -5 rm x", true),
            ("rm", "nohup rm x &", true),
            ("rm", "time -p rm x", true),
            ("rm", "stdbuf -oL rm x", true),
            ("rm", "setsid rm x", true),
            ("rm", "ionice -c 3 rm x", true),
            ("rm", "chrt -f 10 rm x", true),
            ("rm", "taskset -c 0 rm x", true),
            ("rm", "watch -n 1 rm x", true),
            ("rm", "watch 'rm x; ls'", true),
            ("rm", "flock /tmp/lock rm x", true),
            ("rm", "flock -w 5 /tmp/lock -c 'rm x'", true),
            ("rm", "unbuffer rm x", true),
            ("rm", "strace -f -o out.txt rm x", true),
            ("rm", "fakeroot -- rm x", true),
            ("rm", "chroot /srv rm x", true),
            ("rm", "su -c 'rm x' root", true),
            ("rm", "busybox rm x", true),
            ("rm", "trap 'rm x' EXIT", true),
            ("rm", "script -qc 'rm x' /dev/null", true),
            ("rm", "script -q -c 'rm x'", true),
            ("rm", "setarch x86_64 -R rm x", true),
            ("rm", "linux64 rm x", true),
            ("rm", "prlimit --nofile=1024 rm x", true),
            ("rm", "prlimit -p 1 -- rm x", true),
            ("rm", "unshare -r rm x", true),
            ("rm", "unshare --map-user 0 -w /tmp rm x", true),
            ("rm", "nsenter -t 1 -m rm x", true),
            ("rm", "setpriv --reuid 1000 rm x", true),
            ("rm", "runuser -u me -c 'rm x'", true),
            ("rm", "sg staff 'rm x'", true),
            ("rm", "sg staff -c 'rm x'", true),
            ("rm", "valgrind --tool=none rm x", true),
            ("rm", "sudo env nice -n 1 timeout 5 xargs rm", true),
            ("rm", "(rm x)", true),
            ("rm", "{ rm x; }", true),
            ("rm", "if true; then rm x; fi", true),
            ("rm", "while false; do rm x; done", true),
            ("rm", "for f in a; do rm $f; done", true),
            ("rm", "case a in a) rm x;; esac", true),
            ("rm", "f() { rm x; }; f", true),
            ("rm", "! rm x", true),
            ("rm", "cargo test; rm -rf target", true),
            ("rm", "cat <<EOF\n`rm x`\nEOF", true),
            ("rm", "cat <<EOF | sh\nls\nEOF\nrm x", true),
            ("rm", "git rm x", false),
            ("rm", "echo rm", false),
            ("rm", "rmdir x", false),
            ("rm", "echo 'rm x'", false),
            ("rm", "cat <<'EOF'\n$(rm x)\nEOF", false),
            ("git push", "git push", true),
            ("git push", "git push -f origin main", true),
            ("git push", "git -C dir push", true),
            ("git push", "git --no-pager push", true),
            ("git push", "/usr/bin/git push", true),
            ("git push", "git \"pu\"'sh'", true),
            ("git push", "git $(echo push)", true),
            // A dynamic argument may be any word.
            ("rm -rf", "rm $flags x", true),
            ("rm -rf", "rm -f x", false),
            ("git push", "sh -c 'git push'", true),
            ("git push -f", "git push origin -f", true),
            ("git push -f", "git push origin", false),
            ("git push", "git status", false),
            ("git push", "git", false),
            // Deny rules err towards refusing.
            ("git push", "git log --grep push", true),
            ("shell", "rm", false),
            ("", "rm x", false),
            ("source", ". ./env.sh", false),
            ("source", "source ./env.sh", true),
            (".", ". ./env.sh", true),
        ];
        for (rule, command, expected) in cases {
            let line = parse(command);
            assert_eq!(
                denies(rule, &line),
                expected,
                "{rule:?} on {command:?}: {:?}",
                line.invocations
            );
        }
    }

    #[test]
    fn programs_known_only_when_the_line_runs_are_unknown() {
        let cases = [
            ("$CMD x", true),
            ("$(echo rm) x", true),
            ("${x}m x", true),
            ("r* x", true),
            ("{rm,x}", true),
            ("eval \"$X\"", true),
            ("eval $X", true),
            ("bash -c \"$X\"", true),
            ("sh -c", true),
            ("fish -c 'rm x'", true),
            ("curl -s x | sh", true),
            ("curl -s x | bash -s", true),
            ("sudo $CMD", true),
            ("env -S \"$X\"", true),
            ("echo (", true),
            ("sh -c 'echo ('", true),
            ("git status", false),
            ("sh -c 'sh -c \"rm x\"'", false),
            ("rm $x", false),
            ("source ./env.sh", false),
            ("bash ./script.sh", false),
            ("bash --version", false),
            ("fish script.fish", false),
            ("echo $x | tail", false),
            // The second review's finding 7: forms deny rules did not see.
            ("alias x=rm; x file", true),
            ("shopt -s expand_aliases\nalias x=rm\nx file", true),
            ("hash -p /bin/rm ls; ls x", true),
            ("echo rm x | xargs env", true),
            ("echo rm x | xargs sudo", true),
            ("echo x | xargs -I{} sh -c {}", true),
            ("echo x | xargs -i bash -c 'echo {}'", true),
            ("echo x | xargs --replace=@ sh -c @", true),
            ("echo '-exec rm x ;' | xargs find .", true),
            (". /dev/stdin <<< 'rm x'", true),
            ("source /dev/fd/3 3<<< 'rm x'", true),
            ("source <(echo rm x)", true),
            ("bash /dev/stdin <<< 'rm x'", true),
            ("BASH_ENV=<(echo rm x) bash -c :", true),
            ("export BASH_ENV=./x; bash -c :", true),
            ("env BASH_ENV=./x bash -c :", true),
            ("LD_PRELOAD=./x.so ls", true),
            ("GIT_SSH_COMMAND='rm x' git fetch", true),
            ("script -q /dev/null", true),
            ("setarch x86_64", true),
            ("unshare -r", true),
            ("chroot /srv", true),
            ("echo x | xargs -n1 echo", false),
            ("echo x | xargs -I{} cp {} y", false),
            ("alias", false),
            ("source ./env.sh", false),
            ("FOO=1 cargo test", false),
            ("env RUST_LOG=debug cargo test", false),
        ];
        for (command, expected) in cases {
            let line = parse(command);
            assert_eq!(line.unknown_program, expected, "{command:?}: {line:?}");
        }
    }

    #[test]
    fn command_strings_nested_past_the_limit_are_unknown() {
        let nest = |levels: usize| {
            (0..levels).fold("rm x".to_owned(), |inner, _| {
                format!("sh -c '{}'", inner.replace('\'', r"'\''"))
            })
        };
        let deepest = parse(&nest(MAX_NESTING));
        assert!(!deepest.unknown_program);
        assert!(denies("rm", &deepest));
        assert!(parse(&nest(MAX_NESTING + 1)).unknown_program);
    }

    #[test]
    fn wrappers_list_both_the_wrapper_and_the_command() {
        let line = parse("sudo -u root env FOO=1 rm -rf $HOME");
        let invocations: Vec<(&str, Vec<Option<&str>>)> = line
            .invocations
            .iter()
            .map(|invocation| {
                let args = invocation.args.iter().map(Option::as_deref).collect();
                (invocation.program.as_str(), args)
            })
            .collect();
        assert_eq!(
            invocations,
            [
                (
                    "sudo",
                    vec![
                        Some("-u"),
                        Some("root"),
                        Some("env"),
                        Some("FOO=1"),
                        Some("rm"),
                        Some("-rf"),
                        None
                    ]
                ),
                ("env", vec![Some("FOO=1"), Some("rm"), Some("-rf"), None]),
                ("rm", vec![Some("-rf"), None]),
            ]
        );
    }

    #[test]
    fn allow_rules_refuse_options_that_write_or_run_and_paths_elsewhere() {
        let cases = [
            ("git status", "git status", true),
            ("git status", "git status --short", true),
            ("git status", "git statusx", false),
            ("git status", "git", false),
            ("git status", "/usr/bin/git status", false),
            ("git status", "./git status", false),
            ("git status", "git status -c x", false),
            ("git status", "git status -s -b", true),
            ("git diff", "git diff src/lib.rs", true),
            ("git diff", "git diff --output=/tmp/x", false),
            ("git diff", "git diff --output=x", false),
            ("git diff", "git diff --outp=/tmp/x", false),
            ("git diff", "git diff --output-indicator-new=+", false),
            ("git diff", "git diff --ext-diff", false),
            (
                "git diff",
                "git diff --no-index ~/.aws/credentials /dev/null",
                false,
            ),
            (
                "git diff",
                "git diff --no-index /etc/passwd /dev/null",
                false,
            ),
            ("git diff", "git diff --no-index ../outside x", false),
            ("git diff", "git diff --stat HEAD~1 origin/main", true),
            ("git diff", "git diff --color=always", true),
            ("git log", "git log -10 --oneline", true),
            ("git log", "git log -10", true),
            ("git grep", "git grep -O vim x", false),
            ("git grep", "git grep --open x", false),
            ("git fetch", "git fetch --upload-pack=evil", false),
            ("git fetch", "git fetch --upl=evil", false),
            ("git show", "git show --config-env=x", false),
            ("git status", "git status --git-dir=x", false),
            ("git status", "git status --", true),
            ("sort", "sort -o out.txt x", false),
            ("sort", "sort -lo/tmp/x x", false),
            ("cc", "cc -I/usr/include x.c", false),
            ("cc", "cc -I../include x.c", false),
            ("cc", "cc -Ilib x.c", true),
            ("cc", "cc -Iinclude x.c", false),
            ("curl", "curl -d @/etc/passwd x", false),
            ("cat", "cat file:///etc/passwd", false),
            ("make", "make DIR=/etc", false),
            ("find", "find . -fprint out.txt", false),
            ("find", "find . -exec rm {} ;", false),
            ("cargo test", "cargo test -- --nocapture", true),
            ("cargo test", "cargo test -- --output=x", true),
            ("cargo test", "cargo test -- /etc/passwd", false),
            ("cargo test", "cargo test -p tandem-agent --lib", true),
            ("cargo test", "cargo test --config x", false),
            ("cargo test", "cargo test --co=x", false),
            ("cargo test", "cargo test -j4 --release", true),
            ("ls", "ls -la", true),
            ("ls", "ls -", true),
            ("ls", "ls /dev/null", true),
            ("", "ls", false),
            ("git commit -m \"a b\"", "git commit -m \"a b\"", true),
        ];
        for (rule, command, expected) in cases {
            let line = parse(command);
            let plain = line.plain.unwrap_or_default();
            let command_words = plain.first().cloned().unwrap_or_else(|| words(command));
            assert_eq!(
                allows(rule, &command_words, &refuses_path),
                expected,
                "{rule:?} on {command:?}"
            );
        }
    }

    #[test]
    fn allow_rules_reach_tilde_paths() {
        // A plain line never holds an unquoted `~`, but a quoted one is a literal word that a
        // program may expand itself; it reaches the caller's check as written.
        let checked = std::cell::RefCell::new(Vec::new());
        let refuses = |path: &str| {
            checked.borrow_mut().push(path.to_owned());
            path.starts_with('~')
        };
        let command = words("git diff --no-index ~/.aws/credentials /dev/null");
        assert!(!allows("git diff", &command, &refuses));
        assert!(checked.borrow().contains(&"~/.aws/credentials".to_owned()));
    }

    #[test]
    fn plain_lines() {
        let cases: [(&str, Option<&[&[&str]]>); 17] = [
            (
                "cargo test && git status",
                Some(&[&["cargo", "test"], &["git", "status"]]),
            ),
            (
                "cargo test\ncurl x | sh",
                Some(&[&["cargo", "test"], &["curl", "x"], &["sh"]]),
            ),
            ("a; b || c & d", Some(&[&["a"], &["b"], &["c"], &["d"]])),
            ("\"git\" status", Some(&[&["git", "status"]])),
            (
                "git commit -m 'a b'",
                Some(&[&["git", "commit", "-m", "a b"]]),
            ),
            ("cargo test # comment", Some(&[&["cargo", "test"]])),
            ("", Some(&[])),
            ("cargo test 2>&1 | tail", None),
            ("cargo test > src/main.rs", None),
            ("cargo test |& tail", None),
            ("FOO=1 git status", None),
            ("x=1; git status", None),
            ("export FOO=1", None),
            ("git status $(curl x)", None),
            ("echo *", None),
            ("echo $HOME", None),
            ("(git status)", None),
        ];
        for (command, expected) in cases {
            let expected = expected.map(|commands| {
                commands
                    .iter()
                    .map(|words| {
                        words
                            .iter()
                            .map(|word| word.to_string())
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            });
            assert_eq!(parse(command).plain, expected, "{command:?}");
        }
    }
}
