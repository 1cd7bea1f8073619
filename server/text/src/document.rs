//! One open document: its rope, version and language, and the position arithmetic that maps an
//! editor's `(line, character)` onto the rope under LSP's rules.
//!
//! The rules, from the LSP specification: line breaks are exactly `\n`, `\r\n` and `\r` (the rope
//! is built with ropey's `cr_lines` and without `unicode_lines`, so U+2028 and friends are text);
//! a `character` past the end of its line means the end of that line's content (before the line
//! break); a line past the last line means the end of the document. A position that falls inside
//! a character (a UTF-16 offset between the two halves of a surrogate pair, a UTF-8 offset inside
//! a multi-byte sequence) snaps back to the start of that character.

use ropey::{Rope, RopeSlice};

use crate::PositionEncoding;

/// A zero-based line and a `character` offset within it, counted in some [`PositionEncoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LineCol {
    pub line: u32,
    pub character: u32,
}

impl LineCol {
    pub fn new(line: u32, character: u32) -> Self {
        LineCol { line, character }
    }
}

/// A half-open range between two positions, as an editor sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Range {
    pub start: LineCol,
    pub end: LineCol,
}

/// One content change of a `didChange`: replace `range` (or, without one, the whole text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub range: Option<Range>,
    pub text: String,
}

/// A zero-based row (a line of the rope) and a column counted in bytes from the row's start: the
/// shape of tree-sitter's `Point`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TextPoint {
    pub row: usize,
    pub column: usize,
}

/// What an applied change did, in byte offsets (and points) of the text before and after it.
///
/// Byte offsets and points are what incremental parsers (tree-sitter) need to update a syntax
/// tree. The points' rows are the rope's lines, split at LSP's line breaks, while tree-sitter
/// counts only `\n`: the two differ after a lone `\r` (and a point right after a `\r` that an
/// edit joins to a `\n` moves to the line before). Tree-sitter decides what to reuse by byte
/// offsets, so such a point only shifts the rows it reports for nodes, never what it parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedChange {
    pub start_byte: usize,
    pub old_end_byte: usize,
    pub new_end_byte: usize,
    /// Where the change starts (the same in the text before and after it).
    pub start_point: TextPoint,
    /// Where the replaced text ended, in the text before the change.
    pub old_end_point: TextPoint,
    /// Where the inserted text ends, in the text after the change.
    pub new_end_point: TextPoint,
    /// The range arrived with its end before its start; it was applied with the two swapped.
    pub range_was_reversed: bool,
}

/// A text document held in a rope, with the version and language the editor gave it.
///
/// Cloning is cheap (the rope shares its nodes), so readers take a snapshot and let go of any lock.
#[derive(Debug, Clone)]
pub struct Document {
    rope: Rope,
    version: i32,
    language_id: String,
}

impl Document {
    pub fn new(text: &str, version: i32, language_id: impl Into<String>) -> Self {
        Document {
            rope: Rope::from_str(text),
            version,
            language_id: language_id.into(),
        }
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    pub fn set_version(&mut self, version: i32) {
        self.version = version;
    }

    pub fn language_id(&self) -> &str {
        &self.language_id
    }

    /// Number of lines as LSP counts them: a trailing line break starts one more (empty) line.
    pub fn line_count(&self) -> usize {
        self.rope.len_lines()
    }

    pub fn len_bytes(&self) -> usize {
        self.rope.len_bytes()
    }

    /// The char index a position refers to, clamped and snapped as the module docs describe.
    pub fn char_offset(&self, position: LineCol, encoding: PositionEncoding) -> usize {
        let line = position.line as usize;
        if line >= self.rope.len_lines() {
            return self.rope.len_chars();
        }
        let line_start = self.rope.line_to_char(line);
        let line_slice = self.rope.line(line);
        let content_chars = line_slice.len_chars() - line_break_len(line_slice);
        let character = position.character as usize;
        let within_line = match encoding {
            PositionEncoding::Utf32 => character.min(content_chars),
            PositionEncoding::Utf8 => {
                let content_bytes = line_slice.char_to_byte(content_chars);
                // ropey maps a byte inside a multi-byte char to that char: the snap we want.
                line_slice.byte_to_char(character.min(content_bytes))
            }
            PositionEncoding::Utf16 => {
                let content_units = line_slice.char_to_utf16_cu(content_chars);
                // Likewise, half a surrogate pair maps to the char it belongs to.
                line_slice.utf16_cu_to_char(character.min(content_units))
            }
        };
        line_start + within_line
    }

    /// The position of a char index (clamped to the end of the document), in `encoding` units.
    pub fn position(&self, char_offset: usize, encoding: PositionEncoding) -> LineCol {
        let char_offset = char_offset.min(self.rope.len_chars());
        let line = self.rope.char_to_line(char_offset);
        let line_start = self.rope.line_to_char(line);
        let before = self.rope.slice(line_start..char_offset);
        let character = match encoding {
            PositionEncoding::Utf32 => before.len_chars(),
            PositionEncoding::Utf8 => before.len_bytes(),
            PositionEncoding::Utf16 => before.len_utf16_cu(),
        };
        LineCol {
            line: saturating_u32(line),
            character: saturating_u32(character),
        }
    }

    /// Applies one content change. Never fails: positions are clamped and snapped, and a range
    /// whose end precedes its start is applied as if its ends were swapped.
    pub fn apply_change(&mut self, change: &Change, encoding: PositionEncoding) -> AppliedChange {
        let Some(range) = change.range else {
            let old_len = self.rope.len_bytes();
            let old_end_point = self.point(old_len);
            self.rope = Rope::from_str(&change.text);
            return AppliedChange {
                start_byte: 0,
                old_end_byte: old_len,
                new_end_byte: change.text.len(),
                start_point: TextPoint::default(),
                old_end_point,
                new_end_point: self.point(change.text.len()),
                range_was_reversed: false,
            };
        };
        let mut start = self.char_offset(range.start, encoding);
        // Most changes are typed characters: an empty range needs only one conversion.
        let mut end = if range.end == range.start {
            start
        } else {
            self.char_offset(range.end, encoding)
        };
        let range_was_reversed = start > end;
        if range_was_reversed {
            std::mem::swap(&mut start, &mut end);
        }
        let start_byte = self.rope.char_to_byte(start);
        let old_end_byte = self.rope.char_to_byte(end);
        let start_point = self.point(start_byte);
        // Both ends on one line clamp into that line's content (or, past the last line, to the
        // end, where start == end): the removed text has no line break.
        let old_end_point = if range.start.line == range.end.line {
            TextPoint {
                row: start_point.row,
                column: start_point.column + (old_end_byte - start_byte),
            }
        } else {
            self.point(old_end_byte)
        };
        if start != end {
            self.rope.remove(start..end);
        }
        if !change.text.is_empty() {
            self.rope.insert(start, &change.text);
        }
        let new_end_byte = start_byte + change.text.len();
        // Text without line breaks stays on the start's row (a keystroke: no lookup at all).
        let new_end_point = if change.text.contains(['\n', '\r']) {
            self.point(new_end_byte)
        } else {
            TextPoint {
                row: start_point.row,
                column: start_point.column + change.text.len(),
            }
        };
        AppliedChange {
            start_byte,
            old_end_byte,
            new_end_byte,
            start_point,
            old_end_point,
            new_end_point,
            range_was_reversed,
        }
    }

    /// The row and byte column of a byte offset (on a char boundary) of the current text.
    fn point(&self, byte: usize) -> TextPoint {
        let row = self.rope.byte_to_line(byte);
        TextPoint {
            row,
            column: byte - self.rope.line_to_byte(row),
        }
    }
}

fn line_break_len(line: RopeSlice<'_>) -> usize {
    let len = line.len_chars();
    match (
        len.checked_sub(2).map(|i| line.char(i)),
        len.checked_sub(1).map(|i| line.char(i)),
    ) {
        (Some('\r'), Some('\n')) => 2,
        (_, Some('\n' | '\r')) => 1,
        _ => 0,
    }
}

fn saturating_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PositionEncoding::*;

    fn at(line: u32, character: u32) -> LineCol {
        LineCol::new(line, character)
    }

    fn edit(doc: &mut Document, start: LineCol, end: LineCol, text: &str, enc: PositionEncoding) {
        let change = Change {
            range: Some(Range { start, end }),
            text: text.to_owned(),
        };
        doc.apply_change(&change, enc);
    }

    #[test]
    fn only_lsp_line_breaks_split_lines() {
        let doc = Document::new("a\nb\r\nc\rd\u{2028}e\u{85}f\u{c}g", 1, "plaintext");
        assert_eq!(doc.line_count(), 4);
        assert_eq!(doc.char_offset(at(3, 0), Utf32), 7);
    }

    #[test]
    fn trailing_line_break_starts_an_empty_line() {
        assert_eq!(Document::new("a\r\n", 1, "x").line_count(), 2);
        assert_eq!(Document::new("", 1, "x").line_count(), 1);
    }

    #[test]
    fn character_past_line_end_clamps_before_the_line_break() {
        let doc = Document::new("ab\r\ncd", 1, "x");
        for enc in [Utf8, Utf16, Utf32] {
            assert_eq!(doc.char_offset(at(0, 99), enc), 2, "{enc}");
            assert_eq!(doc.char_offset(at(0, 3), enc), 2, "{enc}");
        }
    }

    #[test]
    fn line_past_the_end_clamps_to_document_end() {
        let doc = Document::new("ab\ncd", 1, "x");
        assert_eq!(doc.char_offset(at(7, 0), Utf16), 5);
        assert_eq!(doc.char_offset(at(u32::MAX, u32::MAX), Utf8), 5);
    }

    #[test]
    fn utf16_offset_inside_surrogate_pair_snaps_to_char_start() {
        let doc = Document::new("a😀b", 1, "x");
        assert_eq!(doc.char_offset(at(0, 1), Utf16), 1);
        assert_eq!(doc.char_offset(at(0, 2), Utf16), 1);
        assert_eq!(doc.char_offset(at(0, 3), Utf16), 2);
    }

    #[test]
    fn utf8_offset_inside_multibyte_char_snaps_to_char_start() {
        let doc = Document::new("é中x", 1, "x");
        assert_eq!(doc.char_offset(at(0, 1), Utf8), 0);
        assert_eq!(doc.char_offset(at(0, 2), Utf8), 1);
        assert_eq!(doc.char_offset(at(0, 4), Utf8), 1);
        assert_eq!(doc.char_offset(at(0, 5), Utf8), 2);
    }

    #[test]
    fn position_round_trips_in_every_encoding() {
        let doc = Document::new("é😀\r\nx中\ry", 1, "x");
        for enc in [Utf8, Utf16, Utf32] {
            for offset in 0..=doc.rope().len_chars() {
                let pos = doc.position(offset, enc);
                // Offsets between `\r` and `\n` have no position of their own.
                if offset == 3 {
                    continue;
                }
                assert_eq!(doc.char_offset(pos, enc), offset, "{enc} {pos:?}");
            }
        }
    }

    #[test]
    fn inserting_lf_after_lone_cr_makes_one_crlf_break() {
        let mut doc = Document::new("a\rb", 1, "x");
        edit(&mut doc, at(1, 0), at(1, 0), "\n", Utf16);
        assert_eq!(doc.text(), "a\r\nb");
        assert_eq!(doc.line_count(), 2);
    }

    #[test]
    fn reversed_range_is_applied_swapped_and_reported() {
        let mut doc = Document::new("hello world", 1, "x");
        let applied = doc.apply_change(
            &Change {
                range: Some(Range {
                    start: at(0, 11),
                    end: at(0, 5),
                }),
                text: "!".into(),
            },
            Utf16,
        );
        assert!(applied.range_was_reversed);
        assert_eq!(doc.text(), "hello!");
    }

    #[test]
    fn applied_change_reports_byte_offsets() {
        let mut doc = Document::new("é😀x", 1, "x");
        let applied = doc.apply_change(
            &Change {
                range: Some(Range {
                    start: at(0, 1),
                    end: at(0, 3),
                }),
                text: "ab".into(),
            },
            Utf16,
        );
        assert_eq!(doc.text(), "éabx");
        assert_eq!(
            (
                applied.start_byte,
                applied.old_end_byte,
                applied.new_end_byte
            ),
            (2, 6, 4)
        );
    }

    #[test]
    fn full_change_replaces_bytes_verbatim() {
        let mut doc = Document::new("old", 1, "x");
        let text = "keep\r\nmixed\rbreaks\n\u{feff}and BOM";
        doc.apply_change(
            &Change {
                range: None,
                text: text.into(),
            },
            Utf8,
        );
        assert_eq!(doc.text(), text);
    }

    /// Applies `change` to `text` and renders its points as `row:column` triples.
    fn points(text: &str, start: LineCol, end: LineCol, insert: &str) -> String {
        let mut doc = Document::new(text, 1, "x");
        let applied = doc.apply_change(
            &Change {
                range: Some(Range { start, end }),
                text: insert.into(),
            },
            Utf16,
        );
        let show = |point: TextPoint| format!("{}:{}", point.row, point.column);
        format!(
            "{} {} {}",
            show(applied.start_point),
            show(applied.old_end_point),
            show(applied.new_end_point)
        )
    }

    #[test]
    fn applied_change_reports_points_with_byte_columns() {
        let cases = [
            // A keystroke after a multi-byte char: columns count bytes.
            (points("é😀x", at(0, 3), at(0, 3), "a"), "0:6 0:6 0:7"),
            // A deletion across a CRLF.
            (points("ab\r\ncd", at(0, 1), at(1, 1), ""), "0:1 1:1 0:1"),
            // An insertion with line breaks ends on its last line.
            (
                points("ab\ncd", at(1, 1), at(1, 1), "x\r\nyz\n"),
                "1:1 1:1 3:0",
            ),
            // A lone CR is a line break for the rope (tree-sitter would say 0:5).
            (points("ab\rcd", at(1, 1), at(1, 1), "é"), "1:1 1:1 1:3"),
            // Past the end clamps to the end.
            (points("ab\n", at(9, 0), at(9, 0), "z"), "1:0 1:0 1:1"),
        ];
        for (got, expected) in cases {
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn full_change_reports_the_old_and_new_end_points() {
        let mut doc = Document::new("one\ntwo", 1, "x");
        let applied = doc.apply_change(
            &Change {
                range: None,
                text: "a\r\nbé".into(),
            },
            Utf16,
        );
        assert_eq!(applied.start_point, TextPoint::default());
        assert_eq!(applied.old_end_point, TextPoint { row: 1, column: 3 });
        assert_eq!(applied.new_end_point, TextPoint { row: 1, column: 3 });
    }

    /// The point of `byte` in `text`, counting LSP line breaks: the simple model.
    fn model_point(text: &str, byte: usize) -> TextPoint {
        let before = &text[..byte];
        let mut row = 0;
        let mut line_start = 0;
        let bytes = before.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // A `\r` followed by `\n` (even one just past `byte`) breaks after the `\n`.
            let crlf = b == b'\r' && text.as_bytes().get(i + 1) == Some(&b'\n');
            if b == b'\n' || (b == b'\r' && !crlf) {
                row += 1;
                line_start = i + 1;
            }
        }
        TextPoint {
            row,
            column: byte - line_start,
        }
    }

    #[test]
    fn random_changes_report_points_of_the_simple_model() {
        let seed = 0x7E87_0001;
        let mut rng = fastrand::Rng::with_seed(seed);
        let pieces = ["a", "é", "😀", "\n", "\r\n", "\r", "xyz", ""];
        let mut doc = Document::new("fn a() {\n    1\r\n}\n", 1, "x");
        for step in 0..2_000 {
            let old = doc.text();
            let lines = doc.line_count() as u32;
            let mut pos = || at(rng.u32(..lines + 1), rng.u32(..12));
            let (start, end) = (pos(), pos());
            let insert: String = (0..rng.usize(..3))
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            let applied = doc.apply_change(
                &Change {
                    range: Some(Range { start, end }),
                    text: insert.clone(),
                },
                Utf16,
            );
            let new = doc.text();
            let context = format!("seed {seed} step {step}: {old:?} -> {new:?}");
            assert_eq!(
                applied.start_point,
                model_point(&old, applied.start_byte),
                "{context}"
            );
            assert_eq!(
                applied.old_end_point,
                model_point(&old, applied.old_end_byte),
                "{context}"
            );
            // The documented exception: a `\r` before the change now meets a `\n` after it.
            let joined = insert.is_empty()
                && old[..applied.start_byte].ends_with('\r')
                && new[applied.start_byte..].starts_with('\n');
            if !joined {
                assert_eq!(
                    applied.new_end_point,
                    model_point(&new, applied.new_end_byte),
                    "{context}"
                );
            }
        }
    }
}
