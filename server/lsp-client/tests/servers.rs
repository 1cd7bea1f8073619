//! The client against real language servers: pyright and typescript-language-server (from npm,
//! `npm ci --prefix tests/lsp`) and clangd (Debian's). Each test opens a file with an error the user already had, then changes it
//! to texts that add an error and that fix one, and checks what `new_problems` blames on each
//! change. Without a server the test says so and passes, except under CI, which installs both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tandem_lsp_client::{
    find_program, new_problems, LanguageServer, Problem, ServerCommand, Severity,
};

/// Generous: a cold server on a loaded machine; a warm one answers in well under a second.
const SETTLE: Duration = Duration::from_secs(60);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `program` if it exists; else `None` after saying so (a failure under CI).
fn available(program: PathBuf, install: &str) -> Option<PathBuf> {
    let found = if program.is_absolute() {
        program.is_file().then_some(program.clone())
    } else {
        program.to_str().and_then(|name| find_program(name, None))
    };
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is needed under CI ({install})",
            program.display()
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no {} ({install})",
            program.display()
        );
    }
    found
}

fn messages(problems: &[Problem]) -> Vec<String> {
    problems
        .iter()
        .map(|problem| {
            format!(
                "{}:{} {} {}",
                problem.line,
                problem.severity.as_str(),
                problem.source.as_deref().unwrap_or("?"),
                problem.message.lines().next().unwrap_or_default()
            )
        })
        .collect()
}

/// Opens `before`, then changes it to `broken` and to `fixed`; returns what each change was
/// blamed for.
async fn blamed(
    command: ServerCommand,
    file: &str,
    before: &str,
    broken: &str,
    fixed: &str,
) -> (Vec<Problem>, Vec<Problem>, Vec<Problem>) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let path = root.join(file);
    std::fs::write(&path, before).unwrap();
    let server = LanguageServer::start(&command, &root).await.unwrap();
    let had = server.diagnostics(&path, before, SETTLE).await.unwrap();
    let with_error = server.diagnostics(&path, broken, SETTLE).await.unwrap();
    let with_fix = server.diagnostics(&path, fixed, SETTLE).await.unwrap();
    server.shutdown().await;
    (
        had.clone(),
        new_problems(&had, &with_error),
        new_problems(&with_error, &with_fix),
    )
}

#[tokio::test]
async fn pyright_blames_an_edit_for_its_errors_only() {
    let Some(program) = available(
        repo_root().join("tests/lsp/node_modules/.bin/pyright-langserver"),
        "npm ci --prefix tests/lsp",
    ) else {
        return;
    };
    let command = ServerCommand {
        name: "pyright".into(),
        program,
        args: vec!["--stdio".into()],
        language_id: "python".into(),
    };
    let before = "def add(a: int, b: int) -> int:\n    return a + b\n\n\nlabel: str = add(1, 2)\n";
    // The edit calls `add` with a string: a new error, two lines below the old one's place.
    let broken = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal = add(1, \"2\")\nlabel: str = add(1, 2)\n";
    let fixed = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal = add(1, 2)\nlabel: str = add(1, 2)\n";
    let (had, broke, fixed) = blamed(command, "calc.py", before, broken, fixed).await;
    // The user's own error is there from the start, and never blamed on an edit.
    assert_eq!(had.len(), 1, "{:?}", messages(&had));
    assert_eq!(had[0].severity, Severity::Error);
    assert_eq!(broke.len(), 1, "{:?}", messages(&broke));
    assert_eq!(broke[0].line, 5, "{:?}", messages(&broke));
    assert!(
        broke[0].message.contains("\"Literal['2']\""),
        "{:?}",
        messages(&broke)
    );
    assert!(fixed.is_empty(), "{:?}", messages(&fixed));
}

#[tokio::test]
async fn clangd_blames_an_edit_for_its_errors_only() {
    let Some(program) = available(PathBuf::from("clangd"), "apt-get install clangd") else {
        return;
    };
    let command = ServerCommand {
        name: "clangd".into(),
        program,
        args: Vec::new(),
        language_id: "c".into(),
    };
    let before =
        "int add(int a, int b) { return a + b; }\nint main(void) { return undefined_value; }\n";
    let broken = "int add(int a, int b) { return a + b; }\nint twice(void) { return add(1); }\nint main(void) { return undefined_value; }\n";
    let fixed = "int add(int a, int b) { return a + b; }\nint twice(void) { return add(1, 1); }\nint main(void) { return undefined_value; }\n";
    let (had, broke, fixed) = blamed(command, "calc.c", before, broken, fixed).await;
    // clangd adds notes ("'add' declared here", information) beside its errors: the errors are
    // what an edit is blamed for.
    let errors = |problems: Vec<Problem>| -> Vec<Problem> {
        problems
            .into_iter()
            .filter(|problem| problem.severity == Severity::Error)
            .collect()
    };
    let (had, broke, fixed) = (errors(had), errors(broke), errors(fixed));
    assert_eq!(had.len(), 1, "{:?}", messages(&had));
    assert_eq!(broke.len(), 1, "{:?}", messages(&broke));
    assert_eq!(broke[0].line, 2, "{:?}", messages(&broke));
    assert!(fixed.is_empty(), "{:?}", messages(&fixed));
}

#[tokio::test]
async fn typescript_language_server_blames_an_edit_for_its_errors_only() {
    let Some(program) = available(
        repo_root().join("tests/lsp/node_modules/.bin/typescript-language-server"),
        "npm ci --prefix tests/lsp",
    ) else {
        return;
    };
    let command = ServerCommand {
        name: "typescript-language-server".into(),
        program,
        args: vec!["--stdio".into()],
        language_id: "typescript".into(),
    };
    let before = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const label: string = add(1, 2);\n";
    let broken = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const total = add(1, \"2\");\nexport const label: string = add(1, 2);\n";
    let fixed = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const total = add(1, 2);\nexport const label: string = add(1, 2);\n";
    let (had, broke, fixed) = blamed(command, "calc.ts", before, broken, fixed).await;
    assert_eq!(had.len(), 1, "{:?}", messages(&had));
    assert_eq!(broke.len(), 1, "{:?}", messages(&broke));
    assert_eq!(broke[0].line, 5, "{:?}", messages(&broke));
    assert!(fixed.is_empty(), "{:?}", messages(&fixed));
}

/// One edit of the corpus: the file's text before and after, and a piece of the message of
/// each error the edit adds (none for an edit that fixes or only moves code).
struct Edit {
    what: &'static str,
    before: String,
    after: String,
    adds: &'static [&'static str],
}

fn edit(
    what: &'static str,
    base: &str,
    from: &str,
    to: &str,
    adds: &'static [&'static str],
) -> Edit {
    assert!(base.contains(from), "{what}: {from:?} is not in the file");
    Edit {
        what,
        before: base.to_owned(),
        after: base.replacen(from, to, 1),
        adds,
    }
}

/// Each file holds an error of the user's own, which no edit may be blamed for.
const PY: &str = "import os\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n\n\nlabel: str = add(1, 2)\ntotal = add(1, 2)\nhome = os.path.join(\"a\", \"b\")\n";
const C: &str = "#include <stdio.h>\n\nstruct point { int x; int y; };\n\nint add(int a, int b) { return a + b; }\nint user(void) { return undefined_value; }\nint main(void) { struct point p = {1, 2}; printf(\"%d\", p.x); return add(1, 2); }\n";
const TS: &str = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const label: string = add(1, 2);\nexport const total = add(1, 2);\nexport const size = \"abc\".length;\n";

fn python_corpus() -> Vec<Edit> {
    let broken = PY.replacen("total = add(1, 2)", "total = add(1, \"2\")", 1);
    vec![
        edit(
            "argument type",
            PY,
            "add(1, 2)\nhome",
            "add(1, \"2\")\nhome",
            &["Argument of type"],
        ),
        edit(
            "wrong name",
            PY,
            "total = add(1, 2)",
            "total = ad(1, 2)",
            &["\"ad\" is not defined"],
        ),
        edit(
            "missing import",
            PY,
            "home = ",
            "data = json.dumps({})\nhome = ",
            &["\"json\" is not defined"],
        ),
        edit(
            "argument count",
            PY,
            "total = add(1, 2)",
            "total = add(1)",
            &["Argument missing"],
        ),
        edit(
            "wrong attribute",
            PY,
            "os.path.join",
            "os.pathh.join",
            &["\"pathh\" is not a known attribute"],
        ),
        edit(
            "return type",
            PY,
            "return a + b",
            "return str(a + b)",
            &["\"str\" is not assignable to return type"],
        ),
        edit(
            "two errors",
            PY,
            "total = add(1, 2)",
            "total = add(1, \"2\") + undefined_name",
            &["Argument of type", "\"undefined_name\" is not defined"],
        ),
        edit(
            "fix",
            &broken,
            "total = add(1, \"2\")",
            "total = add(1, 2)",
            &[],
        ),
        edit(
            "moves the user's error",
            PY,
            "label: str",
            "\n\nlabel: str",
            &[],
        ),
        edit(
            "new function",
            PY,
            "total = ",
            "def twice(x: int) -> int:\n    return x * 2\n\n\ntotal = ",
            &[],
        ),
    ]
}

fn c_corpus() -> Vec<Edit> {
    let broken = C.replacen("return add(1, 2);", "return add(1);", 1);
    vec![
        edit(
            "argument count",
            C,
            "return add(1, 2);",
            "return add(1);",
            &["oo few arguments"],
        ),
        edit(
            "undeclared name",
            C,
            "return add(1, 2);",
            "return add(1, missing);",
            &["undeclared identifier 'missing'"],
        ),
        edit("wrong member", C, "p.x)", "p.z)", &["No member named 'z'"]),
        edit(
            "missing type",
            C,
            "struct point {",
            "static uint32_t counter;\nstruct point {",
            &["Unknown type name 'uint32_t'"],
        ),
        edit(
            "wrong type",
            C,
            "struct point p = {1, 2};",
            "struct point p = {1, 2}; int *q = p;",
            &["Initializing 'int *' with an expression of incompatible type 'struct point'"],
        ),
        edit("fix", &broken, "return add(1);", "return add(1, 2);", &[]),
        edit(
            "moves the user's error",
            C,
            "int user(void)",
            "\n\nint user(void)",
            &[],
        ),
    ]
}

fn typescript_corpus() -> Vec<Edit> {
    let broken = TS.replacen("total = add(1, 2)", "total = add(1, \"2\")", 1);
    vec![
        edit(
            "argument type",
            TS,
            "total = add(1, 2)",
            "total = add(1, \"2\")",
            &["Argument of type 'string'"],
        ),
        edit(
            "wrong name",
            TS,
            "total = add(1, 2)",
            "total = addd(1, 2)",
            &["Cannot find name 'addd'"],
        ),
        edit(
            "missing import",
            TS,
            "export const size",
            "export const text = readFileSync(\"x\");\nexport const size",
            &["Cannot find name 'readFileSync'"],
        ),
        edit(
            "argument count",
            TS,
            "total = add(1, 2)",
            "total = add(1)",
            &["Expected 2 arguments"],
        ),
        edit(
            "wrong property",
            TS,
            "\"abc\".length",
            "\"abc\".lenght",
            &["Property 'lenght' does not exist"],
        ),
        edit(
            "fix",
            &broken,
            "total = add(1, \"2\")",
            "total = add(1, 2)",
            &[],
        ),
        edit(
            "moves the user's error",
            TS,
            "export const label",
            "\n\nexport const label",
            &[],
        ),
    ]
}

/// Runs `corpus` through one warm server, each edit on a file of its own; prints a line per edit
/// and returns (errors the edits added, of them reported, errors reported that no edit added).
async fn run_corpus(
    command: ServerCommand,
    extension: &str,
    corpus: &[Edit],
) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let server = LanguageServer::start(&command, &root).await.unwrap();
    let errors = |problems: Vec<Problem>| -> Vec<Problem> {
        problems
            .into_iter()
            .filter(|problem| problem.severity == Severity::Error)
            .collect()
    };
    let (mut expected, mut caught, mut wrong) = (0, 0, 0);
    for (index, edit) in corpus.iter().enumerate() {
        let path = root.join(format!("edit_{index}.{extension}"));
        std::fs::write(&path, &edit.before).unwrap();
        let before = errors(
            server
                .diagnostics(&path, &edit.before, SETTLE)
                .await
                .unwrap(),
        );
        let after = errors(
            server
                .diagnostics(&path, &edit.after, SETTLE)
                .await
                .unwrap(),
        );
        let added = new_problems(&before, &after);
        let found = edit
            .adds
            .iter()
            .filter(|piece| added.iter().any(|problem| problem.message.contains(*piece)))
            .count();
        let misattributed: Vec<&Problem> = added
            .iter()
            .filter(|problem| {
                !edit
                    .adds
                    .iter()
                    .any(|piece| problem.message.contains(piece))
            })
            .collect();
        expected += edit.adds.len();
        caught += found;
        wrong += misattributed.len();
        let _ = writeln!(
            std::io::stdout(),
            "{} {:<24} adds {} reported {} wrongly {} {:?}",
            command.name,
            edit.what,
            edit.adds.len(),
            found,
            misattributed.len(),
            messages(&added)
        );
    }
    server.shutdown().await;
    (expected, caught, wrong)
}

/// The corpus docs/benchmarks.md reports: type errors, wrong names, missing imports, wrong
/// argument counts and members, and edits that fix an error or only move the user's. Every
/// error an edit adds is reported for it, and nothing else is.
#[tokio::test]
async fn a_corpus_of_edits_is_blamed_for_its_errors_and_nothing_else() {
    let servers = [
        (
            available(
                repo_root().join("tests/lsp/node_modules/.bin/pyright-langserver"),
                "npm ci --prefix tests/lsp",
            ),
            "pyright",
            "python",
            "py",
            python_corpus(),
        ),
        (
            available(PathBuf::from("clangd"), "apt-get install clangd"),
            "clangd",
            "c",
            "c",
            c_corpus(),
        ),
        (
            available(
                repo_root().join("tests/lsp/node_modules/.bin/typescript-language-server"),
                "npm ci --prefix tests/lsp",
            ),
            "typescript-language-server",
            "typescript",
            "ts",
            typescript_corpus(),
        ),
    ];
    for (program, name, language, extension, corpus) in servers {
        let Some(program) = program else {
            continue;
        };
        let args = if name == "clangd" {
            vec![]
        } else {
            vec!["--stdio".into()]
        };
        let command = ServerCommand {
            name: name.into(),
            program,
            args,
            language_id: language.into(),
        };
        let (expected, caught, wrong) = run_corpus(command, extension, &corpus).await;
        let _ = writeln!(
            std::io::stdout(),
            "{name}: {} edits, {caught} of {expected} added errors reported, {wrong} wrongly",
            corpus.len()
        );
        assert_eq!((caught, wrong), (expected, 0), "{name}");
    }
}
