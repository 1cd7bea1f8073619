//! A deliberately simple reference model of an LSP text document.
//!
//! The randomised differential test applies the same edits to the real server
//! (which stores text in ropes and converts positions cleverly) and to this
//! model, and compares the two texts after every step. For that comparison to
//! mean anything the model has to be obviously right rather than fast, so it
//! uses a plain `String`, rescans it on every call, and shares no code with
//! `tandem-text` or ropey. [`random_edit`] generates the edits, leaning on the
//! awkward cases: line ends, CR/LF pairs, positions out of range or inside a
//! character, reversed ranges.

use serde_json::{json, Value};

/// The unit in which a position's `character` is counted, as negotiated
/// through the LSP `positionEncoding` capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The name LSP uses for this encoding in `positionEncoding(s)`.
    pub fn lsp_name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16 => "utf-16",
            Encoding::Utf32 => "utf-32",
        }
    }

    fn units(self, c: char) -> u32 {
        match self {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf32 => 1,
        }
    }
}

/// An LSP `Position`: zero-based line and `character` in [`Encoding`] units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub character: u32,
}

/// One `TextDocumentContentChangeEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// `None` replaces the whole document.
    pub range: Option<(Pos, Pos)>,
    pub text: String,
}

impl Edit {
    /// The change event as it goes into `textDocument/didChange`.
    pub fn to_lsp_json(&self) -> Value {
        match self.range {
            None => json!({ "text": self.text }),
            Some((start, end)) => json!({
                "range": {
                    "start": { "line": start.line, "character": start.character },
                    "end": { "line": end.line, "character": end.character },
                },
                "text": self.text,
            }),
        }
    }
}

/// Where one line's content lies in [`ReferenceDoc::text`]: `start..content_end`,
/// excluding the line break that follows it (if any).
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    content_end: usize,
}

/// The reference document: just the text.
pub struct ReferenceDoc {
    pub text: String,
}

impl ReferenceDoc {
    pub fn new(text: impl Into<String>) -> Self {
        ReferenceDoc { text: text.into() }
    }

    /// Number of lines as LSP counts them: line breaks + 1.
    pub fn line_count(&self) -> usize {
        self.lines().len()
    }

    /// Byte offset into `self.text` for `pos`, clamped and snapped the way
    /// the server must: a line past the end means the end of the document,
    /// a `character` past the line content means just before the line break,
    /// and a `character` inside a character snaps back to its start.
    pub fn offset(&self, pos: Pos, enc: Encoding) -> usize {
        let lines = self.lines();
        let Some(line) = lines.get(pos.line as usize) else {
            return self.text.len();
        };
        let content = &self.text[line.start..line.content_end];
        let mut units_before = 0u32;
        for (i, c) in content.char_indices() {
            let width = enc.units(c);
            // `units_before <= pos.character` holds here, so this is true both
            // when the position is exactly at `c` and when it falls inside it.
            if pos.character < units_before + width {
                return line.start + i;
            }
            units_before += width;
        }
        line.content_end
    }

    /// Applies one change event; a reversed range is treated as if its ends
    /// were swapped.
    pub fn apply(&mut self, edit: &Edit, enc: Encoding) {
        let Some((start, end)) = edit.range else {
            self.text = edit.text.clone();
            return;
        };
        let a = self.offset(start, enc);
        let b = self.offset(end, enc);
        let (from, to) = if a <= b { (a, b) } else { (b, a) };
        self.text.replace_range(from..to, &edit.text);
    }

    /// Splits the text at `\n`, `\r\n` and lone `\r` only: LSP does not treat
    /// U+2028, U+2029, U+0085, form feed or vertical tab as line breaks.
    fn lines(&self) -> Vec<Line> {
        let mut lines = Vec::new();
        let mut start = 0;
        let mut chars = self.text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let break_len = match c {
                '\n' => 1,
                '\r' if chars.peek().map(|&(_, next)| next) == Some('\n') => {
                    chars.next();
                    2
                }
                '\r' => 1,
                _ => continue,
            };
            lines.push(Line {
                start,
                content_end: i,
            });
            start = i + break_len;
        }
        lines.push(Line {
            start,
            content_end: self.text.len(),
        });
        lines
    }

    /// Unit offsets, within line `line`'s content, at which a character
    /// starts, plus the offset of the line end. Never empty.
    fn boundaries(&self, line: u32, enc: Encoding) -> Vec<u32> {
        let mut offsets = vec![0];
        if let Some(line) = self.lines().get(line as usize) {
            let mut units = 0u32;
            for c in self.text[line.start..line.content_end].chars() {
                units += enc.units(c);
                offsets.push(units);
            }
        }
        offsets
    }

    fn line_count_u32(&self) -> u32 {
        u32::try_from(self.line_count()).unwrap_or(u32::MAX)
    }
}

/// Above this size `random_edit` mostly deletes, keeping documents at a few KB.
const SHRINK_ABOVE: usize = 3000;

/// Non-letter pieces of inserted text. Line breaks are over-represented
/// because that is where position conversion goes wrong; U+2028 and U+0085
/// are here to catch a server that wrongly treats them as breaks.
const PIECES: &[&str] = &[
    " ", "\t", "\n", "\r\n", "\r", "\n", "\r", "é", "中", "😀", "🦀", "\u{2028}", "\u{85}",
];

/// A random edit for `doc`, mixing the cases listed below.
///
/// Inserts, deletions and replacements (some spanning several lines, some
/// replacing exactly a line break), with positions that are mostly valid but
/// often at a line's start or end, sometimes out of range, sometimes inside a
/// multi-unit character; about 5% reversed ranges and 0.5% whole-document
/// replacements. Deletions dominate once the text exceeds 3000 bytes.
pub fn random_edit(rng: &mut fastrand::Rng, doc: &ReferenceDoc, enc: Encoding) -> Edit {
    if rng.u32(..1000) < 5 {
        let pieces = rng.usize(..=12);
        return Edit {
            range: None,
            text: random_text(rng, pieces),
        };
    }

    let big = doc.text.len() > SHRINK_ABOVE;
    let roll = rng.u32(..100);
    let (insert_below, delete_below, replace_below) = if big { (10, 70, 88) } else { (55, 70, 90) };

    let start = random_pos(rng, doc, enc, None);
    let (end, text) = if roll < insert_below {
        let pieces = rng.usize(..=12);
        (start, random_text(rng, pieces))
    } else if roll < delete_below {
        (random_end(rng, doc, enc, start, big), String::new())
    } else if roll < replace_below {
        let pieces = rng.usize(..=12);
        (
            random_end(rng, doc, enc, start, big),
            random_text(rng, pieces),
        )
    } else {
        return break_edit(rng, doc, enc);
    };

    Edit {
        range: Some(order(rng, doc, enc, start, end)),
        text,
    }
}

/// Replaces exactly the line break after a random line (or, on the last line,
/// nothing at its end): joins lines, turns `\r` + `\n` into a CRLF across an
/// edit, and so on.
fn break_edit(rng: &mut fastrand::Rng, doc: &ReferenceDoc, enc: Encoding) -> Edit {
    let line = rng.u32(..doc.line_count_u32());
    let line_end = doc.boundaries(line, enc).last().copied().unwrap_or(0);
    let start = Pos {
        line,
        character: line_end,
    };
    let end = Pos {
        line: line.saturating_add(1),
        character: 0,
    };
    let text = match rng.u32(..6) {
        0 => "\n".to_string(),
        1 => "\r".to_string(),
        2 => "\r\n".to_string(),
        3 => {
            let pieces = rng.usize(1..=3);
            random_text(rng, pieces)
        }
        _ => String::new(),
    };
    Edit {
        range: Some(order(rng, doc, enc, start, end)),
        text,
    }
}

/// Puts the two ends in document order, then reverses some ranges so the
/// server's swapping of reversed ranges is exercised too. Only non-empty
/// ranges (under half of all edits) can visibly be reversed, hence 15% here
/// for about 5% of all edits.
fn order(rng: &mut fastrand::Rng, doc: &ReferenceDoc, enc: Encoding, a: Pos, b: Pos) -> (Pos, Pos) {
    let forward = if doc.offset(a, enc) <= doc.offset(b, enc) {
        (a, b)
    } else {
        (b, a)
    };
    if rng.u32(..100) < 15 {
        (forward.1, forward.0)
    } else {
        forward
    }
}

/// An end position a few lines (more when shrinking) at or after `start`.
fn random_end(
    rng: &mut fastrand::Rng,
    doc: &ReferenceDoc,
    enc: Encoding,
    start: Pos,
    big: bool,
) -> Pos {
    let span = match rng.u32(..20) {
        0..=13 => 0,
        14..=18 => rng.u32(1..=3),
        _ if big => rng.u32(4..=40),
        _ => rng.u32(4..=12),
    };
    let last_line = doc.line_count_u32() - 1;
    let line = start.line.saturating_add(span).min(last_line);
    random_pos(rng, doc, enc, Some(line))
}

/// A position on `line` (or on a random line), ~90% within the document.
fn random_pos(
    rng: &mut fastrand::Rng,
    doc: &ReferenceDoc,
    enc: Encoding,
    line: Option<u32>,
) -> Pos {
    let line_count = doc.line_count_u32();
    let line = line.unwrap_or_else(|| rng.u32(..line_count));
    let boundaries = doc.boundaries(line, enc);
    let line_end = boundaries.last().copied().unwrap_or(0);

    let roll = rng.u32(..100);
    let character = match roll {
        // Out of range: the line, the character, or both.
        0..=2 => {
            return Pos {
                line: line_count.saturating_add(rng.u32(..3)),
                character: rng.u32(..8),
            }
        }
        3..=4 => {
            return Pos {
                line: if rng.bool() { u32::MAX } else { line },
                character: if rng.bool() {
                    u32::MAX
                } else {
                    rng.u32(u32::MAX / 2..)
                },
            }
        }
        5..=9 => line_end.saturating_add(rng.u32(1..=4)),
        // In range, biased towards the places where lines meet.
        10..=34 => line_end,
        35..=44 => 0,
        // Deliberately inside a multi-byte character or surrogate pair, when
        // the line has one; such a unit is rare enough to need looking for.
        45..=49 => {
            let inside: Vec<u32> = (0..line_end)
                .filter(|unit| !boundaries.contains(unit))
                .collect();
            if inside.is_empty() {
                rng.u32(..=line_end)
            } else {
                inside[rng.usize(..inside.len())]
            }
        }
        50..=64 => rng.u32(..=line_end),
        _ => boundaries[rng.usize(..boundaries.len())],
    };
    Pos { line, character }
}

/// `pieces` random pieces: half ASCII letters, half from [`PIECES`].
fn random_text(rng: &mut fastrand::Rng, pieces: usize) -> String {
    let mut text = String::new();
    for _ in 0..pieces {
        if rng.bool() {
            text.push(rng.alphabetic());
        } else {
            text.push_str(PIECES[rng.usize(..PIECES.len())]);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Pos {
        Pos { line, character }
    }

    const ALL: [Encoding; 3] = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32];

    #[test]
    fn line_breaks_are_lf_crlf_and_lone_cr_only() {
        assert_eq!(ReferenceDoc::new("").line_count(), 1);
        assert_eq!(ReferenceDoc::new("a\n").line_count(), 2);
        assert_eq!(ReferenceDoc::new("a\r\nb").line_count(), 2);
        assert_eq!(ReferenceDoc::new("a\rb").line_count(), 2);
        assert_eq!(ReferenceDoc::new("a\n\rb").line_count(), 3);
        assert_eq!(ReferenceDoc::new("\r\r\n\n").line_count(), 4);
        assert_eq!(ReferenceDoc::new("x\u{2028}y").line_count(), 1);
        assert_eq!(
            ReferenceDoc::new("a\u{2029}b\u{85}c\u{c}d\u{b}e").line_count(),
            1
        );
    }

    #[test]
    fn positions_after_each_kind_of_break() {
        let doc = ReferenceDoc::new("ab\r\ncd\ref\ngh");
        for enc in ALL {
            assert_eq!(doc.offset(pos(1, 0), enc), 4);
            assert_eq!(doc.offset(pos(2, 1), enc), 8);
            assert_eq!(doc.offset(pos(3, 2), enc), doc.text.len());
        }
    }

    #[test]
    fn character_past_line_end_clamps_before_the_break() {
        let doc = ReferenceDoc::new("ab\r\ncd");
        for enc in ALL {
            assert_eq!(doc.offset(pos(0, 99), enc), 2);
            assert_eq!(doc.offset(pos(0, u32::MAX), enc), 2);
            assert_eq!(doc.offset(pos(1, 99), enc), 6);
        }
    }

    #[test]
    fn line_past_the_end_clamps_to_document_end() {
        let doc = ReferenceDoc::new("ab\r\ncd");
        for enc in ALL {
            assert_eq!(doc.offset(pos(2, 0), enc), doc.text.len());
            assert_eq!(doc.offset(pos(9, 0), enc), doc.text.len());
            assert_eq!(doc.offset(pos(u32::MAX, 0), enc), doc.text.len());
        }
        let ends_with_break = ReferenceDoc::new("a\n");
        assert_eq!(ends_with_break.offset(pos(1, 5), Encoding::Utf16), 2);
    }

    #[test]
    fn characters_are_counted_in_the_encodings_units() {
        let doc = ReferenceDoc::new("é中😀b");
        // Byte offsets of the four characters: 0, 2, 5, 9.
        assert_eq!(doc.offset(pos(0, 9), Encoding::Utf8), 9);
        assert_eq!(doc.offset(pos(0, 4), Encoding::Utf16), 9);
        assert_eq!(doc.offset(pos(0, 3), Encoding::Utf32), 9);
        assert_eq!(doc.offset(pos(0, 2), Encoding::Utf16), 5);
        assert_eq!(doc.offset(pos(0, 2), Encoding::Utf32), 5);
    }

    #[test]
    fn offsets_inside_a_character_snap_back() {
        assert_eq!(
            ReferenceDoc::new("a😀b").offset(pos(0, 2), Encoding::Utf16),
            1
        );
        assert_eq!(ReferenceDoc::new("é").offset(pos(0, 1), Encoding::Utf8), 0);
        let doc = ReferenceDoc::new("a😀b");
        for character in 2..=4 {
            assert_eq!(doc.offset(pos(0, character), Encoding::Utf8), 1);
        }
        assert_eq!(doc.offset(pos(0, 5), Encoding::Utf8), 5);
    }

    #[test]
    fn unicode_separators_are_ordinary_characters() {
        let doc = ReferenceDoc::new("x\u{2028}y\u{85}z");
        assert_eq!(doc.offset(pos(0, 2), Encoding::Utf32), 4);
        assert_eq!(doc.offset(pos(0, 4), Encoding::Utf16), 7);
        assert_eq!(doc.offset(pos(0, 5), Encoding::Utf16), doc.text.len());
        assert_eq!(doc.offset(pos(1, 0), Encoding::Utf16), doc.text.len());
    }

    #[test]
    fn apply_inserts_deletes_and_replaces() {
        let mut doc = ReferenceDoc::new("hello\nworld");
        doc.apply(
            &Edit {
                range: Some((pos(0, 5), pos(1, 0))),
                text: " ".into(),
            },
            Encoding::Utf16,
        );
        assert_eq!(doc.text, "hello world");
        doc.apply(
            &Edit {
                range: Some((pos(0, 0), pos(0, 0))),
                text: "> ".into(),
            },
            Encoding::Utf8,
        );
        assert_eq!(doc.text, "> hello world");
        doc.apply(
            &Edit {
                range: Some((pos(0, 7), pos(0, 99))),
                text: String::new(),
            },
            Encoding::Utf32,
        );
        assert_eq!(doc.text, "> hello");
    }

    #[test]
    fn reversed_range_is_swapped() {
        let mut doc = ReferenceDoc::new("abcdef");
        doc.apply(
            &Edit {
                range: Some((pos(0, 4), pos(0, 1))),
                text: "X".into(),
            },
            Encoding::Utf16,
        );
        assert_eq!(doc.text, "aXef");
    }

    #[test]
    fn whole_document_replacement() {
        let mut doc = ReferenceDoc::new("old\ntext");
        doc.apply(
            &Edit {
                range: None,
                text: "new".into(),
            },
            Encoding::Utf8,
        );
        assert_eq!(doc.text, "new");
    }

    #[test]
    fn inserting_lf_after_lone_cr_makes_one_crlf_break() {
        let mut doc = ReferenceDoc::new("a\rb");
        assert_eq!(doc.line_count(), 2);
        doc.apply(
            &Edit {
                range: Some((pos(1, 0), pos(1, 0))),
                text: "\n".into(),
            },
            Encoding::Utf16,
        );
        assert_eq!(doc.text, "a\r\nb");
        assert_eq!(doc.line_count(), 2);
        assert_eq!(doc.offset(pos(1, 0), Encoding::Utf16), 3);
    }

    #[test]
    fn deleting_between_cr_and_lf_merges_them_into_one_break() {
        let mut doc = ReferenceDoc::new("a\rx\nb");
        assert_eq!(doc.line_count(), 3);
        doc.apply(
            &Edit {
                range: Some((pos(1, 0), pos(1, 1))),
                text: String::new(),
            },
            Encoding::Utf8,
        );
        assert_eq!(doc.text, "a\r\nb");
        assert_eq!(doc.line_count(), 2);
    }

    #[test]
    fn to_lsp_json_shape() {
        let edit = Edit {
            range: Some((pos(1, 2), pos(3, 4))),
            text: "x".into(),
        };
        assert_eq!(
            edit.to_lsp_json(),
            json!({
                "range": {
                    "start": { "line": 1, "character": 2 },
                    "end": { "line": 3, "character": 4 },
                },
                "text": "x",
            })
        );
        let full = Edit {
            range: None,
            text: "all".into(),
        };
        assert_eq!(full.to_lsp_json(), json!({ "text": "all" }));
    }

    #[test]
    fn encoding_names() {
        assert_eq!(Encoding::Utf8.lsp_name(), "utf-8");
        assert_eq!(Encoding::Utf16.lsp_name(), "utf-16");
        assert_eq!(Encoding::Utf32.lsp_name(), "utf-32");
    }

    /// Does `character` on `line` fall strictly inside a character?
    fn inside_a_character(doc: &ReferenceDoc, p: Pos, enc: Encoding) -> bool {
        let boundaries = doc.boundaries(p.line, enc);
        let line_end = boundaries.last().copied().unwrap_or(0);
        (p.line as usize) < doc.line_count()
            && p.character < line_end
            && !boundaries.contains(&p.character)
    }

    #[test]
    fn random_edits_cover_the_cases_and_keep_the_document_small() {
        for enc in ALL {
            let mut rng = fastrand::Rng::with_seed(7);
            let mut doc = ReferenceDoc::new("");
            let (mut inserts, mut deletes, mut replaces, mut multi_line) = (0, 0, 0, 0);
            let (mut full, mut reversed, mut out_of_range, mut inside, mut at_end) =
                (0, 0, 0, 0, 0);
            let mut crlf_seen = false;
            let mut max_len = 0;
            for _ in 0..3000 {
                let edit = random_edit(&mut rng, &doc, enc);
                match edit.range {
                    None => full += 1,
                    Some((a, b)) => {
                        let (oa, ob) = (doc.offset(a, enc), doc.offset(b, enc));
                        if oa > ob {
                            reversed += 1;
                        }
                        if oa == ob {
                            inserts += 1;
                        } else if edit.text.is_empty() {
                            deletes += 1;
                        } else {
                            replaces += 1;
                        }
                        if a.line != b.line {
                            multi_line += 1;
                        }
                        for p in [a, b] {
                            let lines = doc.line_count();
                            let line_end = doc.boundaries(p.line, enc).last().copied();
                            if p.line as usize >= lines || Some(p.character) > line_end {
                                out_of_range += 1;
                            } else if Some(p.character) == line_end {
                                at_end += 1;
                            }
                            if inside_a_character(&doc, p, enc) {
                                inside += 1;
                            }
                        }
                    }
                }
                doc.apply(&edit, enc);
                crlf_seen |= doc.text.contains("\r\n");
                max_len = max_len.max(doc.text.len());
            }
            assert!(inserts > 500, "{enc:?}: {inserts} inserts");
            assert!(deletes > 300, "{enc:?}: {deletes} deletes");
            assert!(replaces > 300, "{enc:?}: {replaces} replaces");
            assert!(multi_line > 300, "{enc:?}: {multi_line} multi-line");
            assert!(full > 0, "{enc:?}: no full replacements");
            assert!(reversed > 90, "{enc:?}: {reversed} reversed");
            assert!(out_of_range > 300, "{enc:?}: {out_of_range} out of range");
            assert!(at_end > 600, "{enc:?}: {at_end} at line end");
            if enc != Encoding::Utf32 {
                assert!(inside > 50, "{enc:?}: {inside} inside a character");
            }
            assert!(crlf_seen);
            assert!(max_len < 6000, "{enc:?}: grew to {max_len} bytes");
        }
    }
}
