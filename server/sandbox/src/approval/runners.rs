//! What a program runs, given its arguments, as the shell rules need to know it: the command a
//! wrapper runs after its own options (`sudo -u root rm`, `timeout 5 rm`, `xargs -I{} sh -c {}`),
//! the string a shell, `eval`, `su -c` or `script -c` parses, the commands of `find -exec`, and
//! what makes the program unknown before the line runs: a shell reading its standard input or a
//! stream the line feeds it (`. /dev/stdin <<<`), a wrapper given no command where it starts a
//! shell (`unshare -r`), `xargs` handing its input to such a program, and the definitions and
//! variables that make a later name run something else (`alias`, `hash -p`, `BASH_ENV`).
//! `command.rs` walks a parsed line with these answers.

use tandem_syntax::shell;

/// How many command strings inside command strings (`sh -c "eval 'bash -c …'"`) and `find -exec`
/// inside `find -exec` are followed; deeper ones make the program unknown.
pub(super) const MAX_NESTING: usize = 4;

/// A program that runs the command given in its arguments after its own options, and how to
/// find that command: its short options that take a value (`-u root`, `-uroot`), its long ones
/// separated by spaces (`--user root`; `--user=root` needs no listing), how many operands come
/// between the options and the command (`timeout 5 cmd`), and whether `NAME=VALUE` words may
/// come first.
struct Wrapper {
    name: &'static str,
    short_values: &'static str,
    long_values: &'static str,
    operands: usize,
    assignments: bool,
    /// Without a command it starts a shell, which reads its commands from standard input
    /// (`chroot /srv`, `unshare -r`, `setarch x86_64`): what runs is then unknown.
    shell_without_command: bool,
}

const fn wrapper(
    name: &'static str,
    short_values: &'static str,
    long_values: &'static str,
    operands: usize,
) -> Wrapper {
    Wrapper {
        name,
        short_values,
        long_values,
        operands,
        assignments: false,
        shell_without_command: false,
    }
}

/// A wrapper that starts a shell when given no command.
const fn shell_wrapper(
    name: &'static str,
    short_values: &'static str,
    long_values: &'static str,
    operands: usize,
) -> Wrapper {
    Wrapper {
        shell_without_command: true,
        ..wrapper(name, short_values, long_values, operands)
    }
}

/// Programs that run another program given as their arguments. Options that take an optional
/// value only when it is attached (`xargs -i`, `-l`, `-e`) are plain flags here.
const WRAPPERS: &[Wrapper] = &[
    wrapper("command", "", "", 0),
    wrapper("builtin", "", "", 0),
    wrapper("exec", "a", "", 0),
    Wrapper {
        assignments: true,
        ..wrapper(
            "sudo",
            "ugCDhprtTU",
            "user group close-from chdir host prompt role type command-timeout other-user",
            0,
        )
    },
    wrapper("doas", "uC", "", 0),
    wrapper("nice", "n", "adjustment", 0),
    wrapper("nohup", "", "", 0),
    wrapper("time", "of", "output format", 0),
    wrapper("timeout", "sk", "signal kill-after", 1),
    wrapper(
        "xargs",
        "aEdILnPsJRS",
        "arg-file delimiter max-args max-procs max-chars process-slot-var",
        0,
    ),
    wrapper("stdbuf", "ioe", "input output error", 0),
    wrapper("setsid", "", "", 0),
    wrapper("ionice", "cnpPu", "class classdata pid pgid uid", 0),
    wrapper(
        "chrt",
        "TPD",
        "sched-runtime sched-period sched-deadline",
        1,
    ),
    wrapper("taskset", "", "", 1),
    wrapper("unbuffer", "", "", 0),
    wrapper(
        "strace",
        "abeEIoOpPsSuUX",
        "output attach user env string-limit columns",
        0,
    ),
    wrapper("ltrace", "aADeFlnopsuwx", "output library config", 0),
    wrapper("fakeroot", "lsib", "lib faked", 0),
    shell_wrapper("chroot", "", "userspec groups", 1),
    wrapper("coproc", "", "", 0),
    wrapper("busybox", "", "", 0),
    wrapper("prlimit", "po", "pid output", 0),
    shell_wrapper(
        "unshare",
        "SGRw",
        "setuid setgid root wd propagation setgroups map-user map-group map-users map-groups \
         monotonic boottime",
        0,
    ),
    shell_wrapper("nsenter", "tSGrwe", "target setuid setgid root wd env", 0),
    wrapper(
        "setpriv",
        "",
        "reuid regid groups inh-caps ambient-caps bounding-set securebits pdeathsig \
         selinux-label apparmor-profile landlock-access landlock-rule",
        0,
    ),
    shell_wrapper("linux32", "", "", 0),
    shell_wrapper("linux64", "", "", 0),
    shell_wrapper("i386", "", "", 0),
    shell_wrapper("x86_64", "", "", 0),
    wrapper("catchsegv", "", "", 0),
    wrapper("valgrind", "", "", 0),
];

/// Programs whose arguments can name a command to run: besides [`WRAPPERS`] and the shells,
/// these (see `runs`). Given its arguments by `xargs`, such a program may get its command from
/// the standard input.
const RUNNERS: &[&str] = &[
    "env", "eval", "watch", "flock", "su", "runuser", "sg", "trap", "find", "script", "setarch",
];

/// Variables whose value is code or a program that a command (or the shell itself) runs:
/// setting one runs what no deny rule can see (`BASH_ENV=x bash -c :` sources `x`). A name
/// ending in `*` stands for every name it starts.
const CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "BASH_LOADABLES_PATH",
    "LD_*",
    "GCONV_PATH",
    "GIT_CONFIG*",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "PERL5OPT",
    "NODE_OPTIONS",
    "RUBYOPT",
    "PYTHONSTARTUP",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_TARGET_*",
];

/// Whether setting `name` may run code no deny rule sees ([`CODE_VARIABLES`]).
pub(super) fn runs_code(name: &str) -> bool {
    CODE_VARIABLES
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *pattern,
        })
}

/// Whether a script path is the standard input or another stream the line itself feeds
/// (`. /dev/stdin <<< '…'`, `bash /dev/fd/3`, `source -`): its commands are then the line's
/// own, unseen.
fn is_stream(path: &str) -> bool {
    path == "-" || path.starts_with("/dev/") || path.starts_with("/proc/")
}

/// Shells whose `-c` string is bash syntax, read here as bash.
const POSIX_SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "lksh", "pdksh", "oksh", "ash", "rbash", "yash",
    "posh",
];

/// Shells with another syntax: what their `-c` strings or standard input run is unknown.
const OTHER_SHELLS: &[&str] = &[
    "fish",
    "csh",
    "tcsh",
    "nu",
    "pwsh",
    "powershell",
    "elvish",
    "xonsh",
    "rc",
    "es",
    "osh",
    "ysh",
];

/// What a program's arguments run.
pub(super) enum Next {
    /// Nothing more (or nothing this module follows: a script, `git`).
    Done,
    /// This command: the program and its arguments.
    Command(Vec<Option<String>>),
    /// These commands (`find -exec a \; -exec b \;`).
    Commands(Vec<Vec<Option<String>>>),
    /// This command string, parsed as a line (`sh -c`, `eval`).
    Line(String),
    /// Something that cannot be known before the line runs.
    Unknown,
}

/// Whether `program` runs a command named by its arguments ([`WRAPPERS`], [`RUNNERS`], shells).
pub(super) fn is_runner(program: &str) -> bool {
    WRAPPERS.iter().any(|wrapper| wrapper.name == program)
        || RUNNERS.contains(&program)
        || POSIX_SHELLS.contains(&program)
        || OTHER_SHELLS.contains(&program)
}

/// Whether the invocation makes a later name run something else, or sets a variable whose
/// value runs: an alias (`alias ls=rm`; or turning aliases on), a hashed path (`hash -p
/// /bin/rm ls`), a code variable given to `env` or `sudo` (`env BASH_ENV=x bash`).
pub(super) fn changes_what_names_run(program: &str, args: &[Option<String>]) -> bool {
    let literal = |wanted: &str| args.iter().any(|arg| arg.as_deref() == Some(wanted));
    match program {
        "alias" => args
            .iter()
            .any(|arg| arg.as_deref().is_none_or(|arg| arg.contains('='))),
        "shopt" => literal("expand_aliases") || args.iter().any(Option::is_none),
        "hash" => literal("-p"),
        "env" | "sudo" => args.iter().flatten().any(|arg| {
            is_assignment(arg) && arg.split_once('=').is_some_and(|(name, _)| runs_code(name))
        }),
        _ => false,
    }
}

/// What `program` runs, given its arguments.
pub(super) fn runs(program: &str, args: &[Option<String>]) -> Next {
    if let Some(wrapper) = WRAPPERS.iter().find(|wrapper| wrapper.name == program) {
        return match args.get(after_options(args, wrapper)..) {
            Some(command) if !command.is_empty() => {
                let command = match program {
                    "xargs" => replaced(args, command),
                    _ => command.to_vec(),
                };
                Next::Command(command)
            }
            _ if wrapper.shell_without_command => Next::Unknown,
            _ => Next::Done,
        };
    }
    match program {
        "." | "source" => match args.first() {
            Some(Some(script)) if !is_stream(script) => Next::Done,
            Some(_) => Next::Unknown,
            None => Next::Done,
        },
        "script" => match find_option(args, Some('c'), "command") {
            Some((_, _, value)) => string(value),
            // Without a command, `script` starts a shell that reads the standard input.
            None => Next::Unknown,
        },
        // `setarch ARCH [options] [command]`: the architecture comes first.
        "setarch" => {
            let flags = shell_wrapper("setarch", "", "", 0);
            let rest = args.get(1..).unwrap_or_default();
            match rest.get(after_options(rest, &flags)..) {
                Some(command) if !command.is_empty() => Next::Command(command.to_vec()),
                _ => Next::Unknown,
            }
        }
        "runuser" => find_option(args, Some('c'), "command")
            .or_else(|| find_option(args, None, "session-command"))
            .map_or(Next::Done, |(_, _, value)| string(value)),
        // `sg GROUP [-c] COMMAND`: the command is one string.
        "sg" => match args.get(1..) {
            Some([flag, command, ..]) if flag.as_deref() == Some("-c") => string(command.clone()),
            Some([command, ..]) => string(command.clone()),
            _ => Next::Unknown,
        },
        "env" => env(args),
        "eval" => match args.split_first() {
            Some((Some(first), rest)) if first == "--" => joined(rest),
            _ => joined(args),
        },
        "watch" => {
            let watch = wrapper("watch", "n", "interval", 0);
            joined(args.get(after_options(args, &watch)..).unwrap_or_default())
        }
        "flock" => match find_option(args, Some('c'), "command") {
            Some((_, _, value)) => string(value),
            None => {
                let flock = wrapper("flock", "Ew", "conflict-exit-code timeout", 1);
                match args.get(after_options(args, &flock)..) {
                    Some(command) => Next::Command(command.to_vec()),
                    None => Next::Done,
                }
            }
        },
        "su" => find_option(args, Some('c'), "command")
            .or_else(|| find_option(args, None, "session-command"))
            .map_or(Next::Done, |(_, _, value)| string(value)),
        "trap" => {
            let operands = args.get(after_options(args, &wrapper("trap", "", "", 0))..);
            match operands {
                Some([action, _, ..]) if action.as_deref() != Some("-") => string(action.clone()),
                _ => Next::Done,
            }
        }
        "find" => find(args),
        _ if POSIX_SHELLS.contains(&program) => posix_shell(args),
        _ if OTHER_SHELLS.contains(&program) => match args.first() {
            Some(Some(script)) if !script.starts_with('-') => Next::Done,
            _ => Next::Unknown,
        },
        _ => Next::Done,
    }
}

/// `xargs`'s command with every word holding its replace string (`-I {}`, `-i`, `--replace`)
/// made dynamic: that word is what the standard input says.
fn replaced(args: &[Option<String>], command: &[Option<String>]) -> Vec<Option<String>> {
    let options = &args[..args.len() - command.len()];
    let mut replace = None;
    for (index, word) in options.iter().enumerate() {
        let Some(word) = word.as_deref() else {
            continue;
        };
        if let Some(value) = word.strip_prefix("--replace") {
            replace = Some(value.strip_prefix('=').unwrap_or("{}").to_owned());
        } else if let Some(value) = word.strip_prefix("-I") {
            replace = if value.is_empty() {
                options.get(index + 1).cloned().flatten()
            } else {
                Some(value.to_owned())
            };
        } else if let Some(value) = word.strip_prefix("-i") {
            replace = Some(if value.is_empty() { "{}" } else { value }.to_owned());
        }
    }
    command
        .iter()
        .map(|word| match (word, &replace) {
            (Some(word), Some(replace))
                if !replace.is_empty() && word.contains(replace.as_str()) =>
            {
                None
            }
            _ => word.clone(),
        })
        .collect()
}

/// A command string: parsed when literal.
fn string(value: Option<String>) -> Next {
    value.map_or(Next::Unknown, Next::Line)
}

/// `eval` and `watch` join their arguments with spaces and parse the result.
fn joined(words: &[Option<String>]) -> Next {
    if words.is_empty() {
        return Next::Done;
    }
    let literal: Option<Vec<&str>> = words.iter().map(Option::as_deref).collect();
    literal.map_or(Next::Unknown, |words| Next::Line(words.join(" ")))
}

/// The index of the first argument after `wrapper`'s options and operands: its command.
fn after_options(args: &[Option<String>], wrapper: &Wrapper) -> usize {
    let mut index = 0;
    while let Some(Some(word)) = args.get(index) {
        if word == "--" {
            index += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            // getopt takes any unambiguous abbreviation: `--us root` is `--user root`.
            let takes_value = !long.is_empty()
                && !long.contains('=')
                && wrapper
                    .long_values
                    .split_whitespace()
                    .any(|name| name.starts_with(long));
            index += if takes_value { 2 } else { 1 };
        } else if let Some(cluster) = word.strip_prefix('-').filter(|rest| !rest.is_empty()) {
            // In `-nu root` the value is the next word; in `-uroot` it is attached.
            let value_at = cluster
                .char_indices()
                .find(|(_, letter)| wrapper.short_values.contains(*letter));
            let next_word =
                value_at.is_some_and(|(at, letter)| at + letter.len_utf8() == cluster.len());
            index += if next_word { 2 } else { 1 };
        } else if wrapper.assignments && is_assignment(word) {
            index += 1;
        } else {
            break;
        }
    }
    // `sudo -- FOO=1 cmd` still sets FOO.
    while wrapper.assignments
        && args
            .get(index)
            .is_some_and(|word| word.as_deref().is_some_and(is_assignment))
    {
        index += 1;
    }
    // A dynamic word where an option could be stops the scan: the command found from there
    // starts with it, and its program is then unknown.
    index + wrapper.operands
}

/// `NAME=VALUE`, as `env` and `sudo` take before the command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|char: char| char.is_ascii_digit())
            && name
                .chars()
                .all(|char| char.is_ascii_alphanumeric() || char == '_')
    })
}

/// Where option `-short` / `--long` first is in `args` (`-c STR`, `-cSTR`, `-lc STR`,
/// `--command STR`, `--command=STR`, `--comm=STR`): its index, how many words it spans, and its
/// value (`None` when dynamic).
fn find_option(
    args: &[Option<String>],
    short: Option<char>,
    long: &str,
) -> Option<(usize, usize, Option<String>)> {
    args.iter().enumerate().find_map(|(index, word)| {
        let word = word.as_deref()?;
        let next = || (index, 2, args.get(index + 1).cloned().flatten());
        if let Some(given) = word.strip_prefix("--") {
            let (name, value) = given.split_once('=').unwrap_or((given, ""));
            if name.is_empty() || !long.starts_with(name) {
                return None;
            }
            let attached = given.contains('=');
            return Some(if attached {
                (index, 1, Some(value.to_owned()))
            } else {
                next()
            });
        }
        let (_, attached) = word.strip_prefix('-')?.split_once(short?)?;
        Some(if attached.is_empty() {
            next()
        } else {
            (index, 1, Some(attached.to_owned()))
        })
    })
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]… COMMAND`. `-S` splits its string into
/// arguments that take its place (they may hold more options).
fn env(args: &[Option<String>]) -> Next {
    let env = Wrapper {
        assignments: true,
        ..wrapper("env", "uCSa", "unset chdir split-string argv0", 0)
    };
    let mut args = args.to_vec();
    for _ in 0..=MAX_NESTING {
        let options = &args[..after_options(&args, &env).min(args.len())];
        let Some((index, spans, value)) = find_option(options, Some('S'), "split-string") else {
            return match args.get(after_options(&args, &env)..) {
                Some(command) => Next::Command(command.to_vec()),
                None => Next::Done,
            };
        };
        let Some(words) = value.and_then(|value| split_words(&value)) else {
            return Next::Unknown;
        };
        args.splice(index..(index + spans).min(args.len()), words);
    }
    Next::Unknown
}

/// The words of `env -S`'s string, read as one plain-enough command line.
fn split_words(text: &str) -> Option<Vec<Option<String>>> {
    let parsed = shell::parse_line(text).ok()?;
    if parsed.has_error || !parsed.simple {
        return None;
    }
    let words = parsed.commands.iter().flat_map(|command| &command.words);
    Some(
        words
            .map(|word| word.literal().map(str::to_owned))
            .collect(),
    )
}

/// `sh [options] -c STRING [NAME [ARGS]]` runs STRING, the first operand; options may be
/// clustered (`-lc`, `-ec`). Without `-c`, the first operand is a script; with none (or `-s`),
/// the shell reads its commands from standard input.
fn posix_shell(args: &[Option<String>]) -> Next {
    let mut command_string = false;
    let mut from_input = false;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let Some(word) = word else {
            return Next::Unknown;
        };
        if word == "--" || word == "-" {
            index += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            if matches!(long, "version" | "help") {
                return Next::Done;
            }
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
        } else if let Some(cluster) = word
            .strip_prefix(['-', '+'])
            .filter(|rest| !rest.is_empty())
        {
            index += 1;
            for letter in cluster.chars() {
                match letter {
                    'c' => command_string = true,
                    's' => from_input = true,
                    // `-o pipefail`, `-O extglob`: the option's name is the next word.
                    'o' | 'O' => index += 1,
                    _ => {}
                }
            }
        } else {
            break;
        }
    }
    match args.get(index) {
        _ if command_string => string(args.get(index).cloned().flatten()),
        Some(Some(script)) if !from_input && !is_stream(script) => Next::Done,
        _ => Next::Unknown,
    }
}

/// `find … -exec CMD … ;` (or `+` after `{}`), also `-execdir`, `-ok`, `-okdir`.
fn find(args: &[Option<String>]) -> Next {
    let mut commands = Vec::new();
    let mut rest = args;
    while let Some(start) = rest.iter().position(|word| {
        matches!(
            word.as_deref(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        )
    }) {
        let command = &rest[start + 1..];
        let end = (0..command.len())
            .find(|&index| match command[index].as_deref() {
                Some(";") => true,
                Some("+") => index > 0 && command[index - 1].as_deref() == Some("{}"),
                _ => false,
            })
            .unwrap_or(command.len());
        commands.push(command[..end].to_vec());
        rest = command.get(end + 1..).unwrap_or_default();
    }
    if commands.is_empty() {
        Next::Done
    } else {
        Next::Commands(commands)
    }
}
