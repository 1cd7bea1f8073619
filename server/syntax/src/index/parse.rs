//! Parsing one file into what the index keeps of it: its tags (definitions and references),
//! the outline items around each definition, and the few line texts a map or a hit shows.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::Ordering;

use streaming_iterator::StreamingIterator;
use tree_sitter::QueryCursor;

use super::{
    cut_chars, rank, Definition, FileEntry, FileSource, References, Span, Stamp, SymbolIndex,
    MAX_HIT_CHARS,
};
use crate::{tags, Language, TagRole};

impl SymbolIndex {
    pub(super) fn parse_file(
        &self,
        path: &Path,
        source: &FileSource,
        stamp: Stamp,
        parsers: &mut HashMap<Language, tree_sitter::Parser>,
        cursor: &mut QueryCursor,
    ) -> Option<FileEntry> {
        let Some(language) = Language::from_path(path) else {
            tracing::debug!(path = %path.display(), "not indexed: no language for this file");
            return None;
        };
        let (text, buffer): (std::borrow::Cow<'_, str>, _) = match source {
            FileSource::Disk => {
                let bytes = std::fs::read(path)
                    .map_err(|error| {
                        tracing::debug!(path = %path.display(), %error, "not indexed: unreadable");
                    })
                    .ok()?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| {
                        tracing::debug!(path = %path.display(), "not indexed: not UTF-8");
                    })
                    .ok()?;
                (text.into(), None)
            }
            FileSource::Buffer { text, .. } => ((&**text).into(), Some(text.clone())),
        };
        let parser = match parsers.entry(language) {
            std::collections::hash_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let mut parser = tree_sitter::Parser::new();
                if let Err(error) = parser.set_language(&language.grammar()) {
                    tracing::debug!(%language, %error, "not indexed: the grammar does not load");
                    return None;
                }
                slot.insert(parser)
            }
        };
        let tree = parser.parse(&*text, None)?;
        self.parses.fetch_add(1, Ordering::Relaxed);
        let extracted = tags(language, &tree, &text)
            .and_then(|tags| Ok((tags, item_ranges(language, &tree, &text, cursor)?)));
        let (tags, items) = match extracted {
            Ok(found) => found,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "not indexed");
                return None;
            }
        };

        // Definitions by start, outer first, swept against the outline items (sorted the same
        // way, properly nested: they are syntax nodes) with a stack of the items open at each
        // definition.
        let mut found: Vec<&crate::Tag> = tags
            .iter()
            .filter(|tag| tag.role == TagRole::Definition)
            .collect();
        found.sort_by(|a, b| {
            (a.range.start, std::cmp::Reverse(a.range.end))
                .cmp(&(b.range.start, std::cmp::Reverse(b.range.end)))
        });
        let mut strings = String::new();
        let mut names: HashMap<&str, Span> = HashMap::new();
        // Each name once per file: a file repeats the names it uses.
        fn intern<'a>(
            names: &mut HashMap<&'a str, Span>,
            strings: &mut String,
            name: &'a str,
        ) -> Span {
            *names.entry(name).or_insert_with(|| {
                let start = strings.len();
                strings.push_str(name);
                Span::of(strings.as_bytes(), start)
            })
        }
        let mut open: Vec<&Item> = Vec::new();
        let mut next_item = 0;
        let mut shown_lines: BTreeSet<u32> = BTreeSet::new();
        let mut definitions = Vec::with_capacity(found.len());
        let mut scopes: Vec<u32> = Vec::new();
        for tag in found {
            while let Some(item) = items
                .get(next_item)
                .filter(|item| item.range.start <= tag.range.start)
            {
                while open
                    .last()
                    .is_some_and(|outer| outer.range.end <= item.range.start)
                {
                    open.pop();
                }
                open.push(item);
                next_item += 1;
            }
            let start = scopes.len();
            for item in &open {
                let encloses = item.range.start <= tag.range.start
                    && tag.range.end <= item.range.end
                    && item.range != tag.range
                    && item.start_line < tag.line;
                if encloses && scopes[start..].last() != Some(&item.start_line) {
                    scopes.push(item.start_line);
                }
            }
            shown_lines.extend(&scopes[start..]);
            shown_lines.insert(tag.line);
            definitions.push(Definition {
                key: rank::name_key(language, &tag.name),
                name: intern(&mut names, &mut strings, &tag.name),
                kind: tag.kind,
                line: tag.line,
                scopes: Span::of(&scopes, start),
            });
        }
        // By key: the ranking looks a file's definitions of a name up by key.
        definitions.sort_by_key(|definition| (definition.key, definition.line));

        let mut found: Vec<(&str, &'static str, u32)> = tags
            .iter()
            .filter(|tag| tag.role == TagRole::Reference)
            .map(|tag| (tag.name.as_str(), tag.kind, tag.line))
            .collect();
        found.sort_unstable();
        let mut references: Vec<References> = Vec::new();
        let mut reference_lines: Vec<u32> = Vec::with_capacity(found.len());
        for chunk in found.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
            let start = reference_lines.len();
            reference_lines.extend(chunk.iter().map(|(_, _, line)| *line));
            references.push(References {
                key: rank::name_key(language, chunk[0].0),
                name: intern(&mut names, &mut strings, chunk[0].0),
                kind: chunk[0].1,
                lines: Span::of(&reference_lines, start),
            });
        }

        let mut lines = Vec::with_capacity(shown_lines.len());
        let mut wanted = shown_lines.iter().copied().peekable();
        let mut line_count = 0u32;
        for (number, line) in text.split('\n').enumerate() {
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            line_count = number + 1;
            if wanted.peek() == Some(&number) {
                wanted.next();
                let start = strings.len();
                strings.push_str(&cut_chars(line.trim_end(), MAX_HIT_CHARS));
                lines.push((number, Span::of(strings.as_bytes(), start)));
            }
        }
        if text.ends_with('\n') {
            line_count -= 1;
        }

        Some(FileEntry {
            stamp,
            language,
            line_count,
            strings: strings.into_boxed_str(),
            definitions: definitions.into(),
            scopes: scopes.into(),
            references: references.into(),
            reference_lines: reference_lines.into(),
            lines: lines.into(),
            buffer,
        })
    }
}

/// An outline item, as far as scopes need it.
struct Item {
    range: std::ops::Range<usize>,
    start_line: u32,
}

/// Outline items start at most this deep. Items nest a few levels (a method in an impl in a
/// module; a method of a nested class in a namespace), while most of a file's nodes lie deeper,
/// in bodies, where the outline query then need not look (a third of the indexing time before).
const MAX_ITEM_DEPTH: u32 = 8;

/// The outline items of a file (their ranges and first lines only: no labels), by start and
/// outer first.
fn item_ranges(
    language: Language,
    tree: &tree_sitter::Tree,
    source: &str,
    cursor: &mut QueryCursor,
) -> crate::Result<Vec<Item>> {
    let queries = language.queries()?;
    cursor.set_max_start_depth(Some(MAX_ITEM_DEPTH));
    let mut matches = cursor.matches(&queries.outline, tree.root_node(), source.as_bytes());
    let mut items = Vec::new();
    while let Some(found) = matches.next() {
        for capture in found.captures() {
            if capture.index == queries.outline_item {
                items.push(Item {
                    range: capture.node.byte_range(),
                    start_line: u32::try_from(capture.node.start_position().row)
                        .unwrap_or(u32::MAX),
                });
            }
        }
    }
    items.sort_by(|a, b| {
        (a.range.start, std::cmp::Reverse(a.range.end))
            .cmp(&(b.range.start, std::cmp::Reverse(b.range.end)))
    });
    items.dedup_by(|a, b| a.range == b.range);
    Ok(items)
}
