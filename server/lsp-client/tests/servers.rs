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
