//! Shell command lines as approval rules see them. The `shell` tool runs its command with
//! `bash -c`, so a rule must read it as bash does: `tandem_syntax::shell` parses the line, and
//! this module lists every program it may run (wrappers such as `sudo`, `env`, `xargs`,
//! `find -exec` and `sh -c '…'` unwrapped) for deny rules, and checks the plain lines that allow
//! rules may pass.
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
//! `node -e`), git and shell aliases, commands run on other machines (`ssh host rm`), tools with
//! built-in deletion (`find -delete`, `git clean`), and code bash reads out of variables
//! (`${x@P}`, an arithmetic context evaluating `a[$(…)]` from a variable's value).

use tandem_syntax::shell;

/// How many command strings inside command strings (`sh -c "eval 'bash -c …'"`) and `find -exec`
/// inside `find -exec` are followed; deeper ones make the program unknown.
const MAX_NESTING: usize = 4;

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
fn runs_code(name: &str) -> bool {
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

/// What a program's arguments run.
enum Next {
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

/// Whether `program` runs a command named by its arguments ([`WRAPPERS`], [`RUNNERS`], shells).
fn is_runner(program: &str) -> bool {
    WRAPPERS.iter().any(|wrapper| wrapper.name == program)
        || RUNNERS.contains(&program)
        || POSIX_SHELLS.contains(&program)
        || OTHER_SHELLS.contains(&program)
}

/// Whether the invocation makes a later name run something else, or sets a variable whose
/// value runs: an alias (`alias ls=rm`; or turning aliases on), a hashed path (`hash -p
/// /bin/rm ls`), a code variable given to `env` or `sudo` (`env BASH_ENV=x bash`).
fn changes_what_names_run(program: &str, args: &[Option<String>]) -> bool {
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

/// A program's name as rules compare it: without its directory (`/bin/rm`, `./rm` → `rm`).
fn program_name(word: &str) -> &str {
    let trimmed = word.trim_end_matches('/');
    match trimmed.rsplit('/').next() {
        Some(base) if !base.is_empty() => base,
        _ => word,
    }
}

/// What `program` runs, given its arguments.
fn runs(program: &str, args: &[Option<String>]) -> Next {
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
