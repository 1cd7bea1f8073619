//! The second review's finding 7: forms that ran a program no shell deny rule saw — aliases
//! turned on and defined on the line, a hashed path, `xargs` handing its input to `env` or to
//! `sh -c {}`, a script read from the line's own input (`. /dev/stdin <<<`, `source <(…)`), a
//! variable that runs code (`BASH_ENV`), and runners that were not unwrapped (`script -c`,
//! `setarch`, `prlimit`, `unshare`). With `shell:rm` denied, each is now denied or asked about,
//! even in `yolo`; before, each deleted its file.

use serde_json::{json, Value};

use super::super::ask::Setup;
use super::{one_by_one, shell, told};

#[cfg(unix)]
#[tokio::test]
async fn deny_rules_see_aliases_xargs_input_scripts_from_the_line_code_variables_and_runners() {
    let attempts = [
        "shopt -s expand_aliases\nalias x=rm\nx v1",
        "hash -p /bin/rm ls; ls v2",
        "echo rm v3 | xargs env",
        "echo 'rm v4' | xargs -I{} sh -c {}",
        ". /dev/stdin <<< 'rm v5'",
        "source <(echo rm v6)",
        "BASH_ENV=<(echo rm v7) bash -c :",
        "script -qc 'rm v8' /dev/null",
        "setarch $(uname -m) rm v9",
        "prlimit --nofile=1024 rm v10",
        "unshare -r rm v11",
    ];
    let calls: Vec<(&str, Value)> = attempts.iter().map(|command| shell(command)).collect();
    let names: Vec<String> = (1..=attempts.len()).map(|n| format!("v{n}")).collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "keep me\n"))
        .collect();
    let setup = Setup::replay_with(
        &one_by_one(&calls),
        json!({"approval": {"mode": "yolo", "deny": ["shell:rm"]}}),
        &files,
    );
    let run = setup.ask("clean up", &["--json"]).await;
    // 3: the turn ended, but every action it tried was refused.
    assert_eq!(run.code, 3, "{run:#?}");
    let told = told(&run);
    for ((attempt, name), told) in attempts.iter().zip(&names).zip(&told) {
        assert!(
            setup.path(name).exists(),
            "{name} was deleted by {attempt:?}"
        );
        assert!(
            told.contains("denied by the rule `shell:rm`")
                || told.starts_with("Not run: this call needs the user's approval"),
            "{attempt:?}: {told}"
        );
    }
}
