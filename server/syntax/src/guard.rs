//! STUB (helper D fills it): the edit guardrail.

use crate::{Language, Result};

/// One syntax error an edit would add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line and column (in characters) in the text after the edit.
    pub line: u32,
    pub column: u32,
    /// "unexpected `}`", "missing `;`".
    pub message: String,
}

/// Why an edit was refused: the errors it adds and the edited region before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardReport {
    pub errors: Vec<SyntaxError>,
    /// Numbered lines around the edited region, before and after the edit.
    pub before: String,
    pub after: String,
}

impl GuardReport {
    /// The message the model reads (`shown` is the file's path as the model knows it).
    pub fn render(&self, shown: &str) -> String {
        let _ = shown;
        unimplemented!()
    }
}

/// `Some` when `after` (the whole new text) has syntax errors in or caused by the edited
/// region that `before` did not have.
pub fn check_edit(language: Language, before: &str, after: &str) -> Result<Option<GuardReport>> {
    let _ = (language, before, after);
    unimplemented!()
}
