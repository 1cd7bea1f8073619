//! The operations behind `/compress` and `/restore [turn id]` (see `slash.rs`), which front
//! ends also call directly: compressing the history into the model's state
//! snapshot (automatically when a request fills the window, see `compress.rs`) and restoring
//! the files a turn changed from its checkpoint.

use tandem_providers::ToolResult;

use super::recording::lock;
use super::{Session, TurnIo};
use crate::tokens;
use tandem_protocol::{CompressionReport, CompressionStatus, Event, RestoreReport};

impl Session {
    /// Compresses the history now, whatever its size (`/compress`, `tandem/compress`); sends
    /// and returns the report. Re-enables automatic compression after an inflated attempt.
    pub async fn compress(&mut self, io: &mut TurnIo<'_>) -> CompressionReport {
        self.compress_paused_until = None;
        self.pre_compact_hooks("manual", io).await;
        self.summarise_history(io).await
    }

    /// Puts back the files changed by turn `turn_id` (the latest turn that changed files when
    /// `None`) and by every later turn, as they were before it (`/restore`, `tandem/restore`);
    /// sends and returns the report.
    pub async fn restore(&mut self, turn_id: Option<&str>, io: &mut TurnIo<'_>) -> RestoreReport {
        let start = match turn_id {
            Some(id) => self.checkpoints.iter().rposition(|c| c.turn_id == id),
            None => self.checkpoints.len().checked_sub(1),
        };
        let report = match start {
            Some(start) => {
                let report = crate::checkpoint::restore(
                    self.ctx.editor.as_ref(),
                    &self.checkpoints[start..],
                )
                .await;
                if report.skipped.is_empty() {
                    self.checkpoints.truncate(start);
                }
                if !report.restored.is_empty() {
                    let files: Vec<String> = report
                        .restored
                        .iter()
                        .map(|path| self.ctx.workspace.display(path))
                        .collect();
                    self.pending_notes.push(format!(
                        "<system-reminder>\nThe user restored these files to how they were \
                         before turn {} (undoing your changes to them); read them again before \
                         you rely on them: {}\n</system-reminder>",
                        report.turn_id.as_deref().unwrap_or("?"),
                        files.join(", ")
                    ));
                }
                report
            }
            None => RestoreReport::default(),
        };
        self.emit(io.events, Event::Restored(report.clone()));
        report
    }

    /// `/restore [turn]`: restores and says what happened, in a sentence or two.
    pub(super) async fn restore_command(
        &mut self,
        turn_id: Option<&str>,
        io: &mut TurnIo<'_>,
    ) -> String {
        let with_changes: Vec<String> =
            self.checkpoints.iter().map(|c| c.turn_id.clone()).collect();
        let report = self.restore(turn_id, io).await;
        match (turn_id, &report.turn_id) {
            (Some(asked), None) if !with_changes.is_empty() => format!(
                "Turn {asked} has no changes to restore; the turns that do: {}.",
                with_changes.join(", ")
            ),
            _ => restore_summary(&report, &|path| self.ctx.workspace.display(path)),
        }
    }

    /// Compresses when the last request filled more than the threshold of the window (and
    /// automatic compression is not waiting for the history to grow after an inflated
    /// snapshot).
    pub(super) async fn compress_if_full(&mut self, io: &mut TurnIo<'_>) {
        if self.history.is_empty() {
            return;
        }
        if let Some(until) = self.compress_paused_until {
            if tokens::estimate_history(&self.history) < until {
                return;
            }
            self.compress_paused_until = None;
        }
        let (tokens, _) = self.context_tokens();
        let limit = self.config.context.compression_threshold * self.context_window() as f64;
        if tokens as f64 > limit {
            self.compress_history(io).await;
        }
    }

    /// Compresses because the history filled the window (`PreCompact`'s trigger `auto`).
    pub(super) async fn compress_history(&mut self, io: &mut TurnIo<'_>) -> CompressionReport {
        self.pre_compact_hooks("auto", io).await;
        self.summarise_history(io).await
    }

    /// Replaces the older part of the history with the model's state snapshot; see
    /// `compress.rs`. Sends the report as an event.
    async fn summarise_history(&mut self, io: &mut TurnIo<'_>) -> CompressionReport {
        let before = tokens::estimate_history(&self.history);
        let report = |status, after, message: Option<String>| CompressionReport {
            status,
            tokens_before: before,
            tokens_after: after,
            message,
        };
        let split =
            crate::compress::split_point(&self.history, self.config.context.preserve_fraction);
        let report = if split == 0 {
            report(
                CompressionStatus::Skipped,
                before,
                Some("there is no earlier part of the conversation to summarise yet".into()),
            )
        } else {
            let frozen = self.frozen();
            let (system, tools, head) =
                (frozen.system.clone(), frozen.tools.clone(), frozen.tokens);
            // The summary request must fit the window too: its older outputs are shortened
            // (their full copies saved) when it would not.
            let mut older = self.history[..split].to_vec();
            let instruction = tokens::estimate_text(crate::compress::SNAPSHOT_INSTRUCTION) + 8;
            self.fit_messages(&mut older, head + instruction, self.request_budget());
            let mut request = crate::compress::snapshot_request(&system, tools, &older);
            // The same cache as the session's requests, whose prefix this one repeats.
            request.cache_key = Some(self.cache_key());
            let size = tokens::estimate_request(&request);
            self.limit_answer(&mut request, size);
            let answer = self.model.complete(request, io.cancel.clone()).await;
            match answer
                .map_err(|error| format!("the summary request failed: {error}"))
                .and_then(|response| crate::compress::parse_snapshot(&response))
            {
                Err(message) => report(CompressionStatus::Failed, before, Some(message)),
                Ok(snapshot) => {
                    let mut history =
                        crate::compress::rebuild(&snapshot, self.history[split..].to_vec());
                    let environment = self.environment_parts(&io.cancel).await;
                    if let Some(first) = history.first_mut() {
                        first.parts.splice(0..0, environment);
                    }
                    let outputs = lock(&self.log)
                        .as_ref()
                        .map(|state| state.log.outputs_dir());
                    let mut save = |result: &ToolResult| save_output(outputs.as_deref(), result);
                    // Outputs kept whole after a compression take at most the preserved
                    // fraction of the window, whatever the setting says.
                    let window_share = (self.config.context.preserve_fraction
                        * self.request_budget() as f64)
                        as u64;
                    crate::compress::bound_outputs(
                        &mut history,
                        self.config.context.kept_output_tokens.min(window_share),
                        self.config.context.output_note_over_bytes,
                        &mut save,
                    );
                    let after = tokens::estimate_history(&history);
                    if after >= before {
                        // Trying again at once would pay for the same useless summary: wait
                        // until the conversation has grown by a tenth of the window.
                        let growth = (self.context_window() / 10).max(1);
                        self.compress_paused_until = Some(before + growth);
                        report(
                            CompressionStatus::Inflated,
                            before,
                            Some(format!(
                                "the summary (about {after} tokens) came out no shorter than the \
                                 conversation it was to replace (about {before} tokens), so it \
                                 was thrown away and the conversation was kept as it was; \
                                 Tandem will try again once the conversation has grown by about \
                                 {growth} tokens, or now if you send /compress"
                            )),
                        )
                    } else {
                        self.replace_history(history);
                        report(CompressionStatus::Compressed, after, None)
                    }
                }
            }
        };
        if let Some(message) = &report.message {
            tracing::info!("compression {:?}: {message}", report.status);
        }
        self.emit(io.events, Event::Compression(report.clone()));
        report
    }
}

/// What `/restore` did, in a sentence or two for the user.
fn restore_summary(report: &RestoreReport, display: &dyn Fn(&std::path::Path) -> String) -> String {
    let Some(turn) = &report.turn_id else {
        return "There is nothing to restore: no turn of this session changed files.".to_owned();
    };
    let mut text = if report.restored.is_empty() {
        format!("Restored no files from before turn {turn}.")
    } else {
        let names: Vec<String> = report.restored.iter().map(|path| display(path)).collect();
        format!(
            "Restored as they were before turn {turn}: {}.",
            names.join(", ")
        )
    };
    for skipped in &report.skipped {
        text.push_str(&format!(
            "\nNot restored: {} ({}).",
            display(&skipped.path),
            skipped.reason
        ));
    }
    text
}

/// Saves a tool output compression takes out of the history; where, for the note that
/// replaces it. `None` when the session is not saved or the write fails.
pub(super) fn save_output(
    dir: Option<&std::path::Path>,
    result: &ToolResult,
) -> Option<std::path::PathBuf> {
    let dir = dir?;
    let name: String = result
        .call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{}-{name}.txt", result.name));
    // Tool output is conversation text: the user's alone, like the session file beside it.
    let written = tandem_sandbox::files::create_private_dir(dir).and_then(|()| {
        use std::io::Write as _;
        let mut file = tandem_sandbox::files::private_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        tandem_sandbox::files::make_private(&file)?;
        file.write_all(result.content.as_bytes())
    });
    match written {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!("cannot save a tool output to {}: {error}", path.display());
            None
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use tandem_sandbox::files::mode;

    /// Issue 35, finding 5: the outputs compression saves for `read_file` hold what tools
    /// printed. They are private, and one an earlier run left readable is tightened when it is
    /// written again.
    #[test]
    fn saved_tool_outputs_are_private() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("s1.outputs");
        let result = |call_id: &str| ToolResult {
            call_id: call_id.to_owned(),
            name: "shell".to_owned(),
            content: "SECRET=hunter2\n".to_owned(),
            is_error: false,
        };
        let path = save_output(Some(&dir), &result("call/1")).unwrap();
        assert_eq!(path, dir.join("shell-call_1.txt"));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);

        let earlier = dir.join("shell-call_2.txt");
        std::fs::write(&earlier, "older").unwrap();
        std::fs::set_permissions(&earlier, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            save_output(Some(&dir), &result("call_2")),
            Some(earlier.clone())
        );
        assert_eq!(
            std::fs::read_to_string(&earlier).unwrap(),
            "SECRET=hunter2\n"
        );
        assert_eq!(mode(&earlier), 0o600);
        assert_eq!(save_output(None, &result("call_3")), None);
    }
}
