//! The prompt being written: multi-line text with a cursor, the usual editing keys, the
//! history of sent prompts (Up at the first line, Down at the last), and pastes. A large paste
//! is shown as one placeholder (`[pasted 120 lines]`) and sent whole.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A paste longer than this many lines (or characters) is shown as a placeholder.
const PASTE_LINES: usize = 8;
const PASTE_CHARS: usize = 800;

#[derive(Debug, Default)]
pub struct Composer {
    text: String,
    /// A byte offset in `text`, on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// Where Up/Down is in the history, and the draft it left.
    browsing: Option<(usize, String)>,
    /// The large pastes, by the number in their placeholder.
    pastes: Vec<String>,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub enum Edit {
    Changed,
    Moved,
    /// Enter on a prompt: send it.
    Submit,
    Ignored,
}

impl Composer {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Replaces `start..cursor` with `with`.
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        let start = start.min(self.cursor);
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    /// The prompt to send, placeholders replaced by their pastes; the composer is emptied and
    /// the prompt kept in the history.
    pub fn take(&mut self) -> String {
        let shown = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if self.history.last() != Some(&shown) {
            self.history.push(shown.clone());
        }
        let mut text = shown;
        for (index, paste) in self.pastes.iter().enumerate() {
            text = text.replace(&placeholder(index, paste), paste);
        }
        self.pastes.clear();
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
        self.pastes.clear();
    }

    pub fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
        self.browsing = None;
    }

    /// A bracketed paste: inserted as it is, or as a placeholder when it is large.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        if text.lines().count() > PASTE_LINES || text.chars().count() > PASTE_CHARS {
            let shown = placeholder(self.pastes.len(), &text);
            self.pastes.push(text);
            self.insert(&shown);
        } else {
            self.insert(&text);
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> Edit {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter if alt || key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.insert("\n");
                Edit::Changed
            }
            KeyCode::Char('j') if control => {
                self.insert("\n");
                Edit::Changed
            }
            KeyCode::Enter => {
                // A line ending in a backslash continues on the next one, as in a shell.
                if self.text[..self.cursor].ends_with('\\') {
                    self.text.remove(self.cursor - 1);
                    self.cursor -= 1;
                    self.insert("\n");
                    return Edit::Changed;
                }
                Edit::Submit
            }
            KeyCode::Char('a') if control => {
                self.cursor = self.line_start();
                Edit::Moved
            }
            KeyCode::Char('e') if control => {
                self.cursor = self.line_end();
                Edit::Moved
            }
            KeyCode::Char('u') if control => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
                Edit::Changed
            }
            KeyCode::Char('k') if control => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
                Edit::Changed
            }
            KeyCode::Char('w') if control => {
                let start = self.word_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
                Edit::Changed
            }
            KeyCode::Backspace if alt => {
                let start = self.word_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
                Edit::Changed
            }
            KeyCode::Char(c) if !control => {
                let mut buffer = [0; 4];
                self.insert(c.encode_utf8(&mut buffer));
                Edit::Changed
            }
            KeyCode::Backspace => match self.text[..self.cursor].chars().next_back() {
                Some(c) => {
                    self.cursor -= c.len_utf8();
                    self.text.remove(self.cursor);
                    Edit::Changed
                }
                None => Edit::Ignored,
            },
            KeyCode::Delete => {
                if self.cursor < self.text.len() {
                    self.text.remove(self.cursor);
                    Edit::Changed
                } else {
                    Edit::Ignored
                }
            }
            KeyCode::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
                Edit::Moved
            }
            KeyCode::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
                Edit::Moved
            }
            KeyCode::Home => {
                self.cursor = self.line_start();
                Edit::Moved
            }
            KeyCode::End => {
                self.cursor = self.line_end();
                Edit::Moved
            }
            KeyCode::Up => {
                if self.text[..self.cursor].contains('\n') {
                    self.vertical(-1);
                    Edit::Moved
                } else {
                    self.history_step(-1)
                }
            }
            KeyCode::Down => {
                if self.text[self.cursor..].contains('\n') {
                    self.vertical(1);
                    Edit::Moved
                } else {
                    self.history_step(1)
                }
            }
            _ => Edit::Ignored,
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |at| self.cursor + at)
    }

    fn word_start(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        trimmed.rfind(char::is_whitespace).map_or(0, |at| {
            at + trimmed[at..].chars().next().map_or(1, char::len_utf8)
        })
    }

    /// Moves the cursor a line up or down, keeping its column where the line allows.
    fn vertical(&mut self, direction: i32) {
        let start = self.line_start();
        let column = self.text[start..self.cursor].chars().count();
        let target_start = if direction < 0 {
            match self.text[..start.saturating_sub(1)].rfind('\n') {
                Some(at) => at + 1,
                None => 0,
            }
        } else {
            match self.text[self.cursor..].find('\n') {
                Some(at) => self.cursor + at + 1,
                None => return,
            }
        };
        let line_end = self.text[target_start..]
            .find('\n')
            .map_or(self.text.len(), |at| target_start + at);
        let line = &self.text[target_start..line_end];
        let offset = line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(at, _)| at);
        self.cursor = target_start + offset;
    }

    fn history_step(&mut self, direction: i32) -> Edit {
        if self.history.is_empty() {
            return Edit::Ignored;
        }
        let (index, draft) = match self.browsing.take() {
            Some((index, draft)) => (index as i64 + i64::from(direction), draft),
            None if direction < 0 => (self.history.len() as i64 - 1, self.text.clone()),
            None => return Edit::Ignored,
        };
        if index < 0 {
            self.browsing = Some((0, draft));
            return Edit::Ignored;
        }
        let index = index as usize;
        if index >= self.history.len() {
            self.text = draft;
            self.cursor = self.text.len();
            return Edit::Changed;
        }
        self.text = self.history[index].clone();
        self.cursor = self.text.len();
        self.browsing = Some((index, draft));
        Edit::Changed
    }
}

fn placeholder(index: usize, paste: &str) -> String {
    format!(
        "[pasted text #{} +{} lines]",
        index + 1,
        paste.lines().count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(composer: &mut Composer, text: &str) {
        for c in text.chars() {
            composer.key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn enter_submits_and_alt_enter_or_a_backslash_starts_a_new_line() {
        let mut composer = Composer::default();
        typed(&mut composer, "one");
        composer.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut composer, "two\\");
        assert_eq!(composer.key(key(KeyCode::Enter)), Edit::Changed);
        typed(&mut composer, "three");
        assert_eq!(composer.key(key(KeyCode::Enter)), Edit::Submit);
        assert_eq!(composer.take(), "one\ntwo\nthree");
    }

    #[test]
    fn up_and_down_walk_the_history_and_bring_the_draft_back() {
        let mut composer = Composer::default();
        typed(&mut composer, "first");
        composer.take();
        typed(&mut composer, "second");
        composer.take();
        typed(&mut composer, "dra");
        composer.key(key(KeyCode::Up));
        assert_eq!(composer.text(), "second");
        composer.key(key(KeyCode::Up));
        assert_eq!(composer.text(), "first");
        composer.key(key(KeyCode::Down));
        composer.key(key(KeyCode::Down));
        assert_eq!(composer.text(), "dra");
    }

    #[test]
    fn a_large_paste_is_a_placeholder_sent_whole() {
        let mut composer = Composer::default();
        typed(&mut composer, "look: ");
        let paste: String = (0..20).map(|n| format!("line {n}\n")).collect();
        composer.paste(&paste);
        assert_eq!(composer.text(), "look: [pasted text #1 +20 lines]");
        assert_eq!(composer.take(), format!("look: {paste}"));
    }

    #[test]
    fn ctrl_w_deletes_the_word_before_the_cursor() {
        let mut composer = Composer::default();
        typed(&mut composer, "fix the bug ");
        composer.key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "fix the ");
    }
}
