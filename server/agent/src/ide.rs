//! What the user sees in the editor, told to the model with each prompt: the active file, the
//! cursor, the selection and the other open files. The first prompt of a session (and the first
//! after the history is replaced) gets all of it; later prompts get only what changed, and
//! nothing when nothing did.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A position for people: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub start: Cursor,
    pub end: Cursor,
    /// The selected text (the renderer caps it).
    pub text: String,
}

/// The editor with focus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveEditor {
    pub path: PathBuf,
    pub language: Option<String>,
    pub cursor: Option<Cursor>,
    /// A non-empty selection.
    pub selection: Option<Selection>,
    /// The symbol around the cursor ("fn parse_expr in impl Parser"), once syntax support knows.
    pub symbol: Option<String>,
}

/// A snapshot of the editor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdeState {
    pub active: Option<ActiveEditor>,
    /// The other open files, most recently used first (the active one is not repeated).
    pub open: Vec<PathBuf>,
}

/// What the model has been told about the editor, to send only what changed.
#[derive(Debug, Clone, Default)]
pub struct IdeContext {
    last: Option<IdeState>,
}

impl IdeContext {
    /// The text to send with the next prompt: everything the first time (and after `reset`),
    /// then only the changes; `None` when nothing changed.
    pub fn render(
        &mut self,
        now: &IdeState,
        display: &dyn Fn(&std::path::Path) -> String,
    ) -> Option<String> {
        let _ = display;
        if self.last.as_ref() == Some(now) {
            return None;
        }
        self.last = Some(now.clone());
        None
    }

    /// Forget what was sent: the next render is in full.
    pub fn reset(&mut self) {
        self.last = None;
    }
}
