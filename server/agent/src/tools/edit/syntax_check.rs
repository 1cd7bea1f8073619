//! The edit guardrail as the edit tools call it: a change that adds syntax errors to a source
//! file is refused (when `syntax.checkEdits` is on and Tandem parses the language).

use std::path::Path;

use tandem_syntax::{check_edit, Language};

use crate::tools::{ToolContext, ToolError};

/// Refuses a change that adds syntax errors, when the `syntax.checkEdits` setting is on and the
/// file is in a language Tandem parses. The check parses both texts, so it runs on a blocking
/// thread. A check that fails by itself lets the change through: the guardrail is a safety
/// net, and a bug in it must not stop every edit.
pub(crate) async fn check_syntax(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    before: String,
    after: String,
) -> Result<(), ToolError> {
    if !ctx.syntax.check_edits {
        return Ok(());
    }
    let Some(language) = Language::from_path(path) else {
        return Ok(());
    };
    let checked = tokio::task::spawn_blocking(move || check_edit(language, &before, &after))
        .await
        .map_err(|error| error.to_string())
        .and_then(|checked| checked.map_err(|error| error.to_string()));
    match checked {
        Ok(None) => Ok(()),
        Ok(Some(report)) => Err(ToolError::Respond(report.render(shown))),
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "the syntax check failed; the change goes through unchecked");
            Ok(())
        }
    }
}
