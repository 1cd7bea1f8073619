//! Matching across typographic look-alikes, `edit`'s loosest step: curly quotes, the dashes
//! and the minus sign, Unicode spaces, `…` and invisible characters, in the file or in
//! old_string, compare as their ASCII forms (zero-width characters as nothing). Both texts
//! are folded with a map back to the original offsets, and only the part of old_string that
//! new_string changes is spliced into the file, so the file keeps its own characters (its
//! `“…”` and `—`) everywhere the model did not mean to change them.

use std::ops::Range;

use super::matching::{dominant_line_ending, region_line_ending, with_line_ending};

/// Most pairs the note lists.
const MAX_PAIRS: usize = 6;

/// The ASCII form of a look-alike character: `Some("")` for an invisible one, `None` for a
/// character that stands for itself.
fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => "-",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        '\u{2026}' => "...",
        '\u{00AD}' | '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => "",
        _ => return None,
    })
}

/// How a look-alike is named in a note: visible ones as themselves, spaces and invisible ones
/// by code point and name.
fn describe(text: &str) -> String {
    let mut chars = text.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return format!("`{text}`");
    };
    let name = match c {
        '\u{00A0}' => "no-break space",
        '\u{2000}'..='\u{200A}' => "space",
        '\u{202F}' => "narrow no-break space",
        '\u{205F}' => "medium mathematical space",
        '\u{3000}' => "ideographic space",
        '\u{00AD}' => "soft hyphen",
        '\u{200B}' => "zero-width space",
        '\u{200C}' => "zero-width non-joiner",
        '\u{200D}' => "zero-width joiner",
        '\u{2060}' => "word joiner",
        '\u{FEFF}' => "zero-width no-break space",
        ' ' => return "a space".to_owned(),
        _ => return format!("`{c}`"),
    };
    format!("U+{:04X} ({name})", u32::from(c))
}

/// One place where the folded text differs from the original.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Change {
    folded: usize,
    folded_len: usize,
    original: usize,
    original_len: usize,
}

/// A text with look-alikes folded (and CRLF as LF), and the map back to the original bytes.
#[derive(Debug)]
pub(super) struct Folded {
    pub(super) text: String,
    /// Sorted by `folded`; a removed character has `folded_len` 0.
    changes: Vec<Change>,
    original_len: usize,
    /// Whether a look-alike (not just a CRLF) was folded.
    pub(super) has_lookalikes: bool,
}

impl Folded {
    pub(super) fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut changes: Vec<Change> = Vec::new();
        let mut has_lookalikes = false;
        let mut chars = original.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let (folded, original_len) = if c == '\r' && chars.peek().map(|&(_, c)| c) == Some('\n')
            {
                chars.next();
                ("\n", 2)
            } else if let Some(folded) = fold_char(c) {
                has_lookalikes = true;
                (folded, c.len_utf8())
            } else {
                text.push(c);
                continue;
            };
            changes.push(Change {
                folded: text.len(),
                folded_len: folded.len(),
                original: at,
                original_len,
            });
            text.push_str(folded);
        }
        Folded {
            text,
            changes,
            original_len: original.len(),
            has_lookalikes,
        }
    }

    /// The change whose folded bytes hold byte `at`, or the index of the first change after it.
    fn locate(&self, at: usize) -> Result<usize, usize> {
        let index = self
            .changes
            .partition_point(|change| change.folded + change.folded_len <= at);
        match self.changes.get(index) {
            Some(change) if change.folded <= at => Ok(index),
            _ => Err(index),
        }
    }

    /// The original offset of folded byte `at` when it is copied unchanged (identity) and the
    /// changes before it number `before`.
    fn identity(&self, at: usize, before: usize) -> usize {
        match before.checked_sub(1).map(|index| self.changes[index]) {
            None => at,
            Some(change) => {
                change.original + change.original_len + at - change.folded - change.folded_len
            }
        }
    }

    /// Where the original character that folded offset `at` starts, after any removed
    /// characters before it; `None` inside a character folded to several bytes (`…`).
    pub(super) fn start(&self, at: usize) -> Option<usize> {
        if at >= self.text.len() {
            return (at == self.text.len()).then_some(self.original_len);
        }
        match self.locate(at) {
            Ok(index) => {
                let change = self.changes[index];
                (change.folded == at).then_some(change.original)
            }
            Err(before) => Some(self.identity(at, before)),
        }
    }

    /// Where the original character before folded offset `at` ends, before any removed
    /// characters after it; `None` inside a character folded to several bytes.
    pub(super) fn end(&self, at: usize) -> Option<usize> {
        let Some(last) = at.checked_sub(1) else {
            return Some(0);
        };
        match self.locate(last) {
            Ok(index) => {
                let change = self.changes[index];
                (change.folded + change.folded_len == at)
                    .then_some(change.original + change.original_len)
            }
            Err(before) => Some(self.identity(last, before) + 1),
        }
    }

    /// The folded offset of original offset `at`; `None` inside a folded CRLF. Removed
    /// characters right before `at` do not count.
    pub(super) fn folded(&self, at: usize) -> Option<usize> {
        let index = self
            .changes
            .partition_point(|change| change.original + change.original_len <= at);
        if let Some(change) = self.changes.get(index) {
            if change.original < at {
                return None;
            }
        }
        Some(
            match index.checked_sub(1).map(|index| self.changes[index]) {
                None => at,
                Some(change) => {
                    change.folded + change.folded_len + at - change.original - change.original_len
                }
            },
        )
    }

    /// The original text behind folded bytes `range`, if its ends fall between characters.
    fn original_range(&self, range: Range<usize>) -> Option<Range<usize>> {
        Some(self.start(range.start)?..self.end(range.end)?)
    }

    /// The original text behind folded bytes `range`: for an empty range, the characters
    /// removed there; "" when an end falls inside a character.
    fn original_text<'a>(&self, original: &'a str, range: Range<usize>) -> &'a str {
        let span = if range.is_empty() {
            self.end(range.start).zip(self.start(range.start))
        } else {
            self.start(range.start).zip(self.end(range.end))
        };
        span.and_then(|(start, end)| original.get(start..end))
            .unwrap_or_default()
    }

    /// (original, folded) of each look-alike folded within the original `range`.
    fn lookalikes_in<'a>(
        &'a self,
        original: &'a str,
        range: Range<usize>,
    ) -> impl Iterator<Item = (Change, &'a str)> + 'a {
        self.changes
            .iter()
            .filter(move |change| {
                range.start <= change.original
                    && change.original + change.original_len <= range.end
                    && &original[change.original..change.original + change.original_len] != "\r\n"
            })
            .map(move |change| {
                (
                    *change,
                    &original[change.original..change.original + change.original_len],
                )
            })
    }
}

/// A match found across look-alikes: the file's region and the text that replaces it.
#[derive(Debug, PartialEq)]
pub(super) struct LookAlikeMatch {
    pub(super) range: Range<usize>,
    pub(super) replacement: String,
    /// (in the file, in old_string) pairs that differ, as the note names them.
    pub(super) pairs: Vec<(String, String)>,
}

/// What the look-alike step found: `None` when neither the file nor old_string has a
/// look-alike (the step cannot help), else every match (possibly none).
pub(super) fn find_lookalikes(content: &str, old: &str, new: &str) -> Option<Vec<LookAlikeMatch>> {
    let file = Folded::new(content);
    let model = Folded::new(old);
    if !file.has_lookalikes && !model.has_lookalikes {
        return None;
    }
    // An old_string of nothing but invisible characters or spaces would match anywhere.
    if model.text.trim().is_empty() {
        return Some(Vec::new());
    }
    let dominant = dominant_line_ending(content);
    let matches = file
        .text
        .match_indices(model.text.as_str())
        .filter_map(|(at, matched)| {
            let place = Place {
                content,
                file: &file,
                at,
                region: file.original_range(at..at + matched.len())?,
                old,
                model: &model,
            };
            Some(LookAlikeMatch {
                replacement: place.splice(new, dominant),
                pairs: place.differing_pairs(),
                range: place.region,
            })
        })
        .collect();
    Some(matches)
}

/// One match of the folded old_string in the folded file.
struct Place<'a> {
    content: &'a str,
    file: &'a Folded,
    /// The match's start in the folded file.
    at: usize,
    /// The match in the original content.
    region: Range<usize>,
    old: &'a str,
    model: &'a Folded,
}

impl Place<'_> {
    /// The file's `region` with only the part of old_string that new_string changes replaced:
    /// the common prefix and suffix of old_string and new_string stay the file's own text. The
    /// changed part widens to whole characters where a boundary would split one (`…` against
    /// `...`). `at` is the region's start in the folded file.
    fn splice(&self, new: &str, dominant: &'static str) -> String {
        let Place {
            content,
            file,
            at,
            ref region,
            old,
            model,
        } = *self;
        let prefix: usize = old
            .chars()
            .zip(new.chars())
            .take_while(|(a, b)| a == b)
            .map(|(c, _)| c.len_utf8())
            .sum();
        let suffix: usize = old[prefix..]
            .chars()
            .rev()
            .zip(new[prefix..].chars().rev())
            .take_while(|(a, b)| a == b)
            .map(|(c, _)| c.len_utf8())
            .sum();

        // Offsets in old_string where the changed part starts and ends, moved outwards one
        // character at a time until both texts have a boundary there; with the file's offsets.
        let mut start = prefix;
        let (start_folded, file_start) = loop {
            let found = model
                .folded(start)
                .and_then(|folded| Some((folded, file.start(at + folded)?)));
            match found {
                Some(found) => break found,
                None => start = previous_boundary(old, start),
            }
        };
        let mut end = old.len() - suffix;
        let file_end = loop {
            match model.folded(end).and_then(|folded| file.end(at + folded)) {
                Some(file_end) => break file_end,
                None => end = next_boundary(old, end),
            }
        };
        let (file_start, file_end) = if start == end {
            // A pure insertion goes right after the text before it, ahead of any invisible
            // characters that follow (at the region's start, after those that precede it).
            let point = match start_folded {
                0 => region.start,
                folded => file.end(at + folded).unwrap_or(file_start),
            };
            (point, point)
        } else {
            // Invisible characters between the unchanged text and the change stay.
            (file_start, file_end)
        };
        // Invisible characters at the ends of old_string lie outside the region: a change
        // made only of them cannot reach past it.
        let file_start = file_start.clamp(region.start, region.end);
        let file_end = file_end.clamp(file_start, region.end);
        let middle = &new[start..new.len() - (old.len() - end)];
        let ending = region_line_ending(&content[region.clone()], dominant);
        format!(
            "{}{}{}",
            &content[region.start..file_start],
            with_line_ending(middle, ending),
            &content[file_end..region.end]
        )
    }

    /// The look-alikes that differ between the file's region and old_string, as (in the file, in
    /// old_string) descriptions, each pair once.
    fn differing_pairs(&self) -> Vec<(String, String)> {
        let Place {
            content,
            file,
            at,
            ref region,
            old,
            model,
        } = *self;
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut add = |in_file: &str, in_old: &str| {
            let pair = (in_file.to_owned(), in_old.to_owned());
            if in_file != in_old && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        };
        for (change, in_file) in file.lookalikes_in(content, region.clone()) {
            let folded = change.folded.saturating_sub(at);
            add(
                in_file,
                model.original_text(old, folded..folded + change.folded_len),
            );
        }
        for (change, in_old) in model.lookalikes_in(old, 0..old.len()) {
            let folded = at + change.folded;
            add(
                file.original_text(content, folded..folded + change.folded_len),
                in_old,
            );
        }
        pairs.truncate(MAX_PAIRS);
        pairs
    }
}

fn previous_boundary(text: &str, at: usize) -> usize {
    text[..at]
        .char_indices()
        .next_back()
        .map_or(0, |(at, _)| at)
}

fn next_boundary(text: &str, at: usize) -> usize {
    text[at..]
        .chars()
        .next()
        .map_or(text.len(), |c| at + c.len_utf8())
}

/// "`“` in the file for `\"` in old_string, U+200B (zero-width space) in the file, which
/// old_string lacks".
pub(super) fn describe_pairs(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(
            |(in_file, in_old)| match (in_file.is_empty(), in_old.is_empty()) {
                (false, true) => {
                    format!("{} in the file, which old_string lacks", describe(in_file))
                }
                (true, _) => format!("{} in old_string, which the file lacks", describe(in_old)),
                (false, false) => format!(
                    "{} in the file for {} in old_string",
                    describe(in_file),
                    describe(in_old)
                ),
            },
        )
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every folded offset mapped back, `-` where it falls inside a folded character.
    fn starts(folded: &Folded) -> Vec<String> {
        (0..=folded.text.len())
            .map(|at| folded.start(at).map_or("-".to_owned(), |at| at.to_string()))
            .collect()
    }

    fn ends(folded: &Folded) -> Vec<String> {
        (0..=folded.text.len())
            .map(|at| folded.end(at).map_or("-".to_owned(), |at| at.to_string()))
            .collect()
    }

    #[test]
    fn the_ellipsis_maps_three_bytes_onto_one_character() {
        // "a…b": `…` is 3 bytes at 1..4, folded to "..." at 1..4.
        let folded = Folded::new("a\u{2026}b");
        assert_eq!(folded.text, "a...b");
        assert_eq!(starts(&folded), ["0", "1", "-", "-", "4", "5"]);
        assert_eq!(ends(&folded), ["0", "1", "-", "-", "4", "5"]);
        assert_eq!(folded.folded(1), Some(1));
        assert_eq!(folded.folded(4), Some(4));
        assert_eq!(folded.folded(5), Some(5));
    }

    #[test]
    fn multibyte_look_alikes_map_to_one_ascii_byte() {
        // “ and ” are 3 bytes each, — is 3 bytes, NBSP 2 bytes.
        let text = "\u{201C}hi\u{201D}\u{00A0}\u{2014}x";
        let folded = Folded::new(text);
        assert_eq!(folded.text, "\"hi\" -x");
        let back: Vec<usize> = (0..=folded.text.len())
            .map(|at| folded.start(at).unwrap())
            .collect();
        assert_eq!(back, [0, 3, 4, 5, 8, 10, 13, 14]);
        for (folded_at, original) in back.iter().enumerate() {
            assert_eq!(folded.folded(*original), Some(folded_at));
        }
    }

    #[test]
    fn removed_characters_belong_to_neither_neighbour() {
        // a, ZWSP (3 bytes), b: folded "ab".
        let folded = Folded::new("a\u{200B}b");
        assert_eq!(folded.text, "ab");
        // Between a and b: a range starting there starts after the ZWSP, one ending there
        // ends before it.
        assert_eq!(folded.start(1), Some(4));
        assert_eq!(folded.end(1), Some(1));
        assert_eq!(folded.folded(1), Some(1));
        assert_eq!(folded.folded(4), Some(1));
        // Leading and trailing invisible characters stay outside the text.
        let folded = Folded::new("\u{FEFF}x\u{200D}");
        assert_eq!(folded.text, "x");
        assert_eq!(folded.start(0), Some(3));
        assert_eq!(folded.end(1), Some(4));
        assert_eq!(folded.start(1), Some(7));
    }

    #[test]
    fn crlf_folds_to_lf_and_is_never_split() {
        let folded = Folded::new("a\r\nb");
        assert_eq!(folded.text, "a\nb");
        assert!(!folded.has_lookalikes);
        assert_eq!(starts(&folded), ["0", "1", "3", "4"]);
        assert_eq!(ends(&folded), ["0", "1", "3", "4"]);
        assert_eq!(folded.folded(2), None);
    }

    fn apply(content: &str, old: &str, new: &str) -> Vec<String> {
        find_lookalikes(content, old, new)
            .unwrap()
            .into_iter()
            .map(|found| {
                format!(
                    "{}{}{}",
                    &content[..found.range.start],
                    found.replacement,
                    &content[found.range.end..]
                )
            })
            .collect()
    }

    #[test]
    fn the_file_keeps_its_characters_outside_the_change() {
        assert_eq!(
            apply(
                "say \u{201C}hello\u{201D} \u{2014} world\n",
                "\"hello\" - world",
                "\"hello\" - there"
            ),
            ["say \u{201C}hello\u{201D} \u{2014} there\n"]
        );
        assert_eq!(
            apply("\u{201C}hello\u{201D}", "\"hello\"", "\"bye\""),
            ["\u{201C}bye\u{201D}"]
        );
        // old_string has the typography, the file is plain.
        assert_eq!(
            apply(
                "it's a-b",
                "it\u{2019}s a\u{2013}b",
                "it\u{2019}s a\u{2013}c"
            ),
            ["it's a-c"]
        );
    }

    #[test]
    fn a_change_inside_an_ellipsis_replaces_the_whole_character() {
        assert_eq!(
            apply("wait\u{2026} ok", "wait... ok", "wait.. ok"),
            ["wait.. ok"]
        );
        assert_eq!(
            apply("wait\u{2026} ok", "wait... ok", "wait... fine"),
            ["wait\u{2026} fine"]
        );
        // A match that would cut an ellipsis in two is no match.
        assert_eq!(apply("wait\u{2026}", "wait..", "x"), Vec::<String>::new());
    }

    #[test]
    fn insertions_and_deletions_next_to_invisible_characters() {
        assert_eq!(apply("a\u{200B}b", "ab", "aXb"), ["aX\u{200B}b"]);
        assert_eq!(apply("ab\u{200B}c", "abc", "ac"), ["a\u{200B}c"]);
        assert_eq!(apply("x\u{00A0}y", "x y", "x  y"), ["x\u{00A0} y"]);
    }

    #[test]
    fn invisible_characters_at_the_ends_of_old_string_stay_outside_the_region() {
        // old_string ends with a ZWSP the file has after the match: removing it reaches
        // nothing of the region, so nothing changes.
        assert_eq!(apply("ab\u{200B}c", "ab\u{200B}", "ab"), ["ab\u{200B}c"]);
        assert_eq!(apply("\u{200B}ab", "\u{200B}ab", "ab"), ["\u{200B}ab"]);
        assert_eq!(apply("xab\u{2060}", "ab\u{2060}", "abc"), ["xabc\u{2060}"]);
    }

    /// Random files over an alphabet of look-alikes, their ASCII forms, CRLF and invisible
    /// characters, and an old_string copied from the file with characters swapped for their
    /// look-alikes: the step never panics, finds the copy, every replacement reads as
    /// new_string once folded (the file's characters kept around the change fold to the same
    /// text), and an unchanged new_string leaves the region as it was.
    #[test]
    fn random_splices_read_as_new_string() {
        const ALPHABET: [&str; 16] = [
            "a", "b", " ", "\"", "'", "-", ".", "\n", "\r\n", "\u{201C}", "\u{2019}", "\u{2014}",
            "\u{00A0}", "\u{2026}", "\u{200B}", "...",
        ];
        const SWAPS: [(&str, &str); 7] = [
            ("\"", "\u{201C}"),
            ("'", "\u{2019}"),
            ("-", "\u{2014}"),
            (" ", "\u{00A0}"),
            ("...", "\u{2026}"),
            ("\n", "\r\n"),
            ("\u{200B}", ""),
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut found_any = 0;
        for _ in 0..4000 {
            let tokens: Vec<&str> = (0..1 + next(12))
                .map(|_| ALPHABET[next(ALPHABET.len())])
                .collect();
            let from = next(tokens.len());
            let to = from + 1 + next(tokens.len() - from);
            let swap = |token: &str, flip: bool| -> String {
                let swapped = SWAPS
                    .iter()
                    .find_map(|&(a, b)| (token == a).then_some(b).or((token == b).then_some(a)));
                match swapped {
                    Some(other) if flip => other.to_owned(),
                    _ => token.to_owned(),
                }
            };
            let old_tokens: Vec<String> = tokens[from..to]
                .iter()
                .map(|token| swap(token, next(2) == 0))
                .collect();
            let mut new_tokens = old_tokens.clone();
            match next(3) {
                0 => new_tokens.insert(next(new_tokens.len() + 1), "X".to_owned()),
                1 => drop(new_tokens.remove(next(new_tokens.len()))),
                _ => {
                    let at = next(new_tokens.len());
                    new_tokens[at] = "Y".to_owned();
                }
            }
            let content: String = tokens.concat();
            let old = old_tokens.concat();
            let new = new_tokens.concat();
            for (replaced, same) in [(new.as_str(), false), (old.as_str(), true)] {
                let Some(matches) = find_lookalikes(&content, &old, replaced) else {
                    continue;
                };
                for found in matches {
                    found_any += 1;
                    let folded = |text: &str| Folded::new(text).text;
                    if same {
                        assert_eq!(
                            found.replacement,
                            content[found.range.clone()],
                            "{content:?} {old:?}"
                        );
                    } else {
                        assert_eq!(
                            folded(&found.replacement),
                            folded(replaced),
                            "{content:?} {old:?} {replaced:?}"
                        );
                    }
                }
            }
        }
        assert!(found_any > 2000, "{found_any}");
    }

    #[test]
    fn crlf_regions_get_crlf_in_the_new_text() {
        assert_eq!(
            apply("\u{201C}a\u{201D}\r\nb\r\n", "\"a\"\nb", "\"a\"\nc\nd"),
            ["\u{201C}a\u{201D}\r\nc\r\nd\r\n"]
        );
    }

    #[test]
    fn nothing_to_fold_means_no_attempt() {
        assert_eq!(find_lookalikes("plain \"text\"\r\n", "text", "x"), None);
        assert_eq!(
            find_lookalikes("a\u{200B}b", "\u{200B}", "x").map(|found| found.len()),
            Some(0)
        );
    }

    #[test]
    fn pairs_name_what_differed() {
        let found = find_lookalikes(
            "\u{201C}a\u{201D}\u{00A0}\u{2014}\u{200B}b",
            "\"a\" -b",
            "x",
        )
        .unwrap();
        expect_test::expect![[r#"`“` in the file for `"` in old_string, `”` in the file for `"` in old_string, U+00A0 (no-break space) in the file for a space in old_string, `—` in the file for `-` in old_string, U+200B (zero-width space) in the file, which old_string lacks"#]]
        .assert_eq(&describe_pairs(&found[0].pairs));
        let found = find_lookalikes("x... y", "x\u{2026} y", "z").unwrap();
        expect_test::expect!["`...` in the file for `…` in old_string"]
            .assert_eq(&describe_pairs(&found[0].pairs));
        // The same invisible character on both sides is no difference; one only in old_string
        // is named.
        let found = find_lookalikes("a\u{200B}b c", "a\u{200B}b\u{2060} c", "z").unwrap();
        expect_test::expect!["U+2060 (word joiner) in old_string, which the file lacks"]
            .assert_eq(&describe_pairs(&found[0].pairs));
    }
}
