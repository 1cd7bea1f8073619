//! A real terminal for the end-to-end tests of what runs on one (`tandem ask` and `tandem
//! demo` on a terminal, `tandem chat`): a private tmux server, its keys sent and its screen
//! read back.

use tandem_test_support::TIMEOUT;
use tempfile::TempDir;

/// A private tmux server (its own socket in a temporary directory) with one 100×40 window:
/// a pseudo-terminal for the program under test, so that its stdout and stderr are both a
/// terminal, and a way to read the screen back. The server is killed when this is dropped.
pub(crate) struct Terminal {
    dir: TempDir,
}

impl Terminal {
    /// Runs `command` (a shell command line) in a new window; when it exits, the window shows
    /// `[exit CODE]` under its output and stays open to be read.
    pub(crate) fn run(command: &str) -> Terminal {
        Terminal::sized(command, 100, 40)
    }

    /// `run` in a window of `width`×`height` cells.
    pub(crate) fn sized(command: &str, width: u16, height: u16) -> Terminal {
        let terminal = Terminal {
            dir: tempfile::tempdir().unwrap(),
        };
        let (width, height) = (width.to_string(), height.to_string());
        let line = format!("{command}; echo \"[exit $?]\"; exec sleep 600");
        let started = terminal
            .tmux()
            .args([
                "new-session",
                "-d",
                "-x",
                &width,
                "-y",
                &height,
                "sh",
                "-c",
                &line,
            ])
            .status();
        match started {
            Ok(status) => assert!(status.success(), "tmux new-session failed: {status}"),
            Err(error) => panic!(
                "cannot run tmux ({error}): this test runs the real binary on a terminal \
                 with tmux; install it (e.g. apt-get install tmux)"
            ),
        }
        terminal
    }

    fn tmux(&self) -> std::process::Command {
        let mut command = std::process::Command::new("tmux");
        command.arg("-S").arg(self.dir.path().join("sock"));
        command
    }

    /// The window's text, wrapped lines joined (`-J`), with its styles as escape sequences
    /// when `escapes`; the empty lines below the last are left out.
    pub(crate) fn screen(&self, escapes: bool) -> String {
        let mut command = self.tmux();
        command.args(["capture-pane", "-p", "-J", "-S", "-"]);
        if escapes {
            command.arg("-e");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "tmux capture-pane failed: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        text.trim_end_matches('\n').to_owned() + "\n"
    }

    /// Waits until the program has exited; its exit code and the screen.
    pub(crate) async fn wait_exit(&self, escapes: bool) -> (i32, String) {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let screen = self.screen(false);
            let code = screen
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("[exit ")?.strip_suffix(']'));
            if let Some(code) = code {
                let code = code.parse().unwrap();
                return (code, if escapes { self.screen(true) } else { screen });
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the program did not exit; the screen:\n{screen}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

impl Terminal {
    /// Types `keys` (tmux key names: `Enter`, `Escape`, `C-c`, `Up`…) into the window.
    pub(crate) fn keys(&self, keys: &[&str]) {
        let status = self.tmux().arg("send-keys").args(keys).status().unwrap();
        assert!(status.success(), "tmux send-keys {keys:?} failed");
    }

    /// Types `text` as it is (no key names).
    pub(crate) fn type_text(&self, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-l", text])
            .status()
            .unwrap();
        assert!(status.success(), "tmux send-keys -l {text:?} failed");
    }

    /// The visible screen (not the scrollback), as text.
    pub(crate) fn visible(&self) -> String {
        let out = self.tmux().args(["capture-pane", "-p"]).output().unwrap();
        assert!(out.status.success(), "tmux capture-pane failed: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Waits until the visible screen passes `test`; the screen then.
    pub(crate) async fn wait_for(&self, what: &str, test: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let screen = self.visible();
            if test(&screen) {
                return screen;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "waited for {what}; the screen:\n{screen}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Waits until the visible screen shows `text`.
    pub(crate) async fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |screen| screen.contains(text))
            .await
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// `word` quoted for `sh`.
pub(crate) fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
