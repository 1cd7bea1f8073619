//! The edit guardrail as the edit tools call it: a change that adds syntax errors to a source
//! file is refused (when `syntax.checkEdits` is on and Tandem parses the language).
//!
//! The check starts from the file's tree in the syntax cache (`crate::syntax_cache`) when it
//! holds the text being changed, and keeps the tree the next edit starts from: the changed
//! text's when the change is accepted, the unchanged text's when it is refused (the model
//! retries on that text).

use std::path::Path;
use std::sync::LazyLock;

use tandem_syntax::{check_edit_from, AfterTree, GuardReport, Language};

use crate::syntax_cache::{self, Slot, TreeCache};
use crate::tool::{content_hash, ToolContext, ToolError};

/// Refuses a change that adds syntax errors, when the `syntax.checkEdits` setting is on and the
/// file is in a language Tandem parses. The check parses, so it runs on a blocking thread. A
/// check that fails by itself lets the change through: the guardrail is a safety net, and a
/// bug in it must not stop every edit.
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
    let file = path.to_owned();
    let checked = tokio::task::spawn_blocking(move || {
        check(syntax_cache::cache(), &file, language, before, after)
    })
    .await
    .map_err(|error| error.to_string())
    .and_then(|checked| checked.map_err(|error| error.to_string()));
    match checked {
        Ok((None, reparse)) => {
            if let Some(slot) = reparse {
                // The next edit of the file starts from this tree, and waits for it if it is not
                // made by then. A plain thread rather than tokio's blocking pool: a one-shot
                // command (`tandem tool edit`) exits without waiting for it.
                let spawned = std::thread::Builder::new()
                    .name("tandem-reparse".to_owned())
                    .spawn(move || {
                        LazyLock::force(&slot);
                    });
                if let Err(error) = spawned {
                    // The lookup that needs the tree makes it then.
                    tracing::debug!(%error, "no thread for the reparse after an edit");
                }
            }
            Ok(())
        }
        Ok((Some(report), _)) => Err(ToolError::Respond(report.render(shown))),
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "the syntax check failed; the change goes through unchecked");
            Ok(())
        }
    }
}

/// Checks the change from the cached tree of `before`, and caches the tree the next edit
/// starts from. Returns the refusal, if any, and the reparse of `after` still to run when the
/// quick check accepted the change without it. Blocks.
fn check(
    cache: &TreeCache,
    path: &Path,
    language: Language,
    before: String,
    after: String,
) -> tandem_syntax::Result<(Option<GuardReport>, Option<Slot>)> {
    // Editors hide a byte-order mark and grammars do not expect one; the cache holds trees of
    // texts without it (read_file strips it too).
    let bom = |text: &str| {
        if text.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        }
    };
    let (before_bom, after_bom) = (bom(&before), bom(&after));
    let old_text = &before[before_bom..];
    let new_text = &after[after_bom..];
    let old_hash = content_hash(old_text.as_bytes());
    let previous = cache.get(path, old_hash, language);
    let checked = check_edit_from(previous, language, old_text, new_text)?;
    if let Some(report) = checked.report {
        cache.insert(
            path,
            old_hash,
            old_text.len(),
            language,
            syntax_cache::ready(checked.before),
        );
        return Ok((Some(report), None));
    }
    let new_hash = content_hash(new_text.as_bytes());
    let new_len = new_text.len();
    let (slot, reparse) = match checked.after {
        AfterTree::Parsed(parsed) => (syntax_cache::ready(parsed), false),
        AfterTree::Deferred(deferred) => {
            let slot = syntax_cache::deferred(move || {
                let parsed = deferred.parse(&after[after_bom..]);
                if let Err(error) = &parsed {
                    tracing::warn!(%error, "the reparse after an edit failed");
                }
                parsed.ok()
            });
            (slot, true)
        }
    };
    cache.insert(path, new_hash, new_len, language, slot.clone());
    Ok((None, reparse.then_some(slot)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` small top-level Python functions (30 bytes each).
    fn module(count: usize) -> String {
        (0..count)
            .map(|n| format!("def f{n}(a):\n    return a + {n}\n\n\n"))
            .collect()
    }

    fn kept(cache: &TreeCache, path: &Path, text: &str) -> Option<String> {
        let parsed = cache.get(path, content_hash(text.as_bytes()), Language::Python)?;
        Some(parsed.tree().root_node().to_sexp())
    }

    fn fresh(text: &str) -> String {
        tandem_syntax::parse(Language::Python, text)
            .unwrap()
            .root_node()
            .to_sexp()
    }

    /// An accepted change leaves the changed text's tree for the next edit (on a large file,
    /// made by a reparse the next lookup waits for); a refused one, the unchanged text's. The
    /// cache holds texts without their byte-order mark.
    #[test]
    fn the_next_edit_starts_from_the_tree_of_the_text_it_changes() {
        for (count, deferred) in [(10, false), (4000, true)] {
            let cache = TreeCache::new(4, 1 << 20);
            let path = Path::new("/w/steps.py");
            let before = format!("\u{feff}{}", module(count));
            let accepted = before.replace("return a + 7\n", "return a - 7\n");
            let (report, reparse) = check(
                &cache,
                path,
                Language::Python,
                before.clone(),
                accepted.clone(),
            )
            .unwrap();
            assert!(report.is_none());
            assert_eq!(reparse.is_some(), deferred, "{count} functions");
            assert_eq!(
                kept(&cache, path, &accepted[3..]),
                Some(fresh(&accepted[3..]))
            );
            assert_eq!(kept(&cache, path, &before[3..]), None);

            let refused = accepted.replace("return a + 8\n", "return (a + 8\n");
            let (report, reparse) = check(
                &cache,
                path,
                Language::Python,
                accepted.clone(),
                refused.clone(),
            )
            .unwrap();
            assert!(report.is_some());
            assert!(reparse.is_none());
            assert_eq!(
                kept(&cache, path, &accepted[3..]),
                Some(fresh(&accepted[3..]))
            );
            assert_eq!(kept(&cache, path, &refused[3..]), None);
        }
    }
}
