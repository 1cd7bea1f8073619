//! Tags: the definitions and references a file's `tags.scm` finds, in the upstream tree-sitter
//! convention (`@name` inside a `@definition.<kind>` or `@reference.<kind>` capture). They feed
//! `find_symbol`, `references` and the repo map's file graph.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use streaming_iterator::StreamingIterator;
use tree_sitter::{QueryCursor, Tree};

use crate::{Language, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TagRole {
    Definition,
    Reference,
}

impl TagRole {
    pub fn short(self) -> &'static str {
        match self {
            TagRole::Definition => "def",
            TagRole::Reference => "ref",
        }
    }
}

/// One definition or reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub role: TagRole,
    /// What the capture says it is: `function`, `method`, `class`, `call`, `type`…
    pub kind: &'static str,
    pub name: String,
    /// Bytes of the name.
    pub name_range: Range<usize>,
    /// Bytes of the whole definition (or reference) node.
    pub range: Range<usize>,
    /// 0-based line of the name.
    pub line: u32,
}

/// Longer names are not identifiers (a query matched something odd); they are skipped.
const MAX_NAME_BYTES: usize = 200;

/// The tags of `source` (parsed into `tree`), in source order. A name captured by two patterns
/// (say as a method and as a function) is reported once, as the pattern written first in the
/// query says (tree-sitter reports matches in the order they finish, not in pattern order).
pub fn tags(language: Language, tree: &Tree, source: &str) -> Result<Vec<Tag>> {
    let queries = language.queries()?;
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&queries.tags, tree.root_node(), source.as_bytes());
    let mut best: HashMap<(TagRole, usize, usize), (usize, Tag)> = HashMap::new();
    while let Some(found) = matches.next() {
        let mut name = None;
        let mut role = None;
        for capture in found.captures() {
            if capture.index == queries.tag_name {
                name = Some(capture.node);
            } else if let Some(Some((tag_role, kind))) =
                queries.tag_kinds.get(capture.index as usize)
            {
                role = Some((*tag_role, kind.as_str(), capture.node));
            }
        }
        let (Some(name), Some((role, kind, node))) = (name, role) else {
            continue;
        };
        let Some(text) = source.get(name.byte_range()) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() || text.len() > MAX_NAME_BYTES || text.contains('\n') {
            continue;
        }
        let key = (role, name.start_byte(), name.end_byte());
        if best
            .get(&key)
            .is_some_and(|(pattern, _)| *pattern <= found.pattern_index)
        {
            continue;
        }
        let tag = Tag {
            role,
            kind,
            name: text.to_owned(),
            name_range: name.byte_range(),
            range: node.byte_range(),
            line: u32::try_from(name.start_position().row).unwrap_or(u32::MAX),
        };
        best.insert(key, (found.pattern_index, tag));
    }
    let mut tags: Vec<Tag> = best.into_values().map(|(_, tag)| tag).collect();
    // A broad reference pattern (every type identifier) also matches the name of the
    // definition itself; that is not a use.
    let defined: HashSet<(usize, usize)> = tags
        .iter()
        .filter(|tag| tag.role == TagRole::Definition)
        .map(|tag| (tag.name_range.start, tag.name_range.end))
        .collect();
    tags.retain(|tag| {
        tag.role == TagRole::Definition
            || !defined.contains(&(tag.name_range.start, tag.name_range.end))
    });
    tags.sort_by_key(|tag| (tag.name_range.start, tag.role));
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_matched_twice_is_one_tag() {
        let source = "struct Point;\nimpl Point { fn norm(&self) {} }\nfn main() { norm(); }\n";
        let tree = crate::parse(Language::Rust, source).unwrap();
        let tags = tags(Language::Rust, &tree, source).unwrap();
        let norm: Vec<_> = tags
            .iter()
            .filter(|tag| tag.name == "norm" && tag.role == TagRole::Definition)
            .collect();
        assert_eq!(norm.len(), 1, "{tags:#?}");
    }
}
