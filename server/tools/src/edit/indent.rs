//! Indentation for `edit`'s whitespace-tolerant match: the indentation unit of the model's text
//! and of the file, and the mapping that re-indents new_string the way old_string's lines were
//! found in the file.

/// "old_string was indented with 4 spaces, the file with a tab".
pub(super) fn describe_indentation_difference(old: &str, file: &str) -> String {
    match (old.is_empty(), file.is_empty()) {
        (true, _) => format!(
            "old_string was not indented, the file was indented with {}",
            describe_indentation(file)
        ),
        (false, true) => format!(
            "old_string was indented with {}, the file was not",
            describe_indentation(old)
        ),
        (false, false) => format!(
            "old_string was indented with {}, the file with {}",
            describe_indentation(old),
            describe_indentation(file)
        ),
    }
}

/// "4 spaces", "a tab", "2 tabs and 2 spaces".
pub(super) fn describe_indentation(indent: &str) -> String {
    let tabs = indent.matches('\t').count();
    let spaces = indent.len() - tabs;
    let tabs_text = match tabs {
        1 => "a tab".to_owned(),
        n => format!("{n} tabs"),
    };
    let spaces_text = match spaces {
        1 => "1 space".to_owned(),
        n => format!("{n} spaces"),
    };
    match (tabs, spaces) {
        (0, _) => spaces_text,
        (_, 0) => tabs_text,
        _ => format!("{tabs_text} and {spaces_text}"),
    }
}

/// The leading spaces and tabs of a line.
pub(super) fn indentation(line: &str) -> &str {
    let rest = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - rest.len()]
}

/// One level of indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Tab,
    Spaces(usize),
}

impl Unit {
    /// (levels, extra alignment spaces) of an indentation; `None` when it is not in this style.
    pub(super) fn measure(self, indent: &str) -> Option<(usize, usize)> {
        match self {
            Unit::Tab => {
                let rest = indent.trim_start_matches('\t');
                (!rest.contains('\t')).then(|| (indent.len() - rest.len(), rest.len()))
            }
            Unit::Spaces(width) => {
                (!indent.contains('\t')).then(|| (indent.len() / width, indent.len() % width))
            }
        }
    }

    pub(super) fn render(self, levels: usize, extra: usize) -> String {
        let level = match self {
            Unit::Tab => "\t".to_owned(),
            Unit::Spaces(width) => " ".repeat(width),
        };
        format!("{}{}", level.repeat(levels), " ".repeat(extra))
    }
}

/// The indentation unit of the model's text (old_string and new_string together).
pub(super) fn source_unit(old_lines: &[&str], new_lines: &[&str]) -> Option<Unit> {
    let indents: Vec<&str> = old_lines
        .iter()
        .chain(new_lines)
        .filter(|line| !line.trim().is_empty())
        .map(|line| indentation(line))
        .collect();
    if indents.iter().any(|indent| indent.contains('\t')) {
        return indents
            .iter()
            .all(|indent| Unit::Tab.measure(indent).is_some())
            .then_some(Unit::Tab);
    }
    Some(Unit::Spaces(space_unit(&[
        widths(old_lines),
        widths(new_lines),
    ])))
}

/// The indentation unit of the file: tabs when most indented lines start with one, otherwise
/// the most common step in space indentation.
pub(super) fn file_unit(file_lines: &[&str]) -> Unit {
    let tabs = file_lines
        .iter()
        .filter(|line| line.starts_with('\t'))
        .count();
    let spaces = file_lines
        .iter()
        .filter(|line| line.starts_with(' ') && !line.trim().is_empty())
        .count();
    if tabs > spaces {
        Unit::Tab
    } else {
        Unit::Spaces(space_unit(&[widths(file_lines)]))
    }
}

/// Widths of the space indentation of the non-blank lines without tabs, in order.
pub(super) fn widths(lines: &[&str]) -> Vec<usize> {
    lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| indentation(line))
        .filter(|indent| !indent.contains('\t'))
        .map(str::len)
        .collect()
}

/// The most common increase of indentation between consecutive lines (2 to 8 spaces: a
/// 1-space step is a block comment's ` *`, not a level); without one, a divisor of the widths.
pub(super) fn space_unit(sequences: &[Vec<usize>]) -> usize {
    let mut steps = [0usize; 9];
    for widths in sequences {
        for pair in widths.windows(2) {
            let step = pair[1].saturating_sub(pair[0]);
            if (2..=8).contains(&step) {
                steps[step] += 1;
            }
        }
    }
    let (step, count) =
        steps.iter().enumerate().fold(
            (0, 0),
            |best, (step, &count)| {
                if count > best.1 {
                    (step, count)
                } else {
                    best
                }
            },
        );
    if count > 0 {
        return step;
    }
    let divisor = sequences
        .iter()
        .flatten()
        .filter(|&&width| width > 0)
        .fold(0, |divisor, &width| gcd(divisor, width));
    match divisor {
        0 => 4,
        d if d % 4 == 0 => 4,
        d if d % 2 == 0 => 2,
        d => d,
    }
}

pub(super) fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// How to turn the model's indentation into the file's.
#[derive(Debug)]
pub(super) enum Reindent {
    /// Every line of the file has `add` in front of old_string's indentation, or lacks its
    /// leading `remove`.
    Prefix { add: String, remove: String },
    /// Indentation levels convert between units, shifted by `shift` levels.
    Levels {
        source: Unit,
        file: Unit,
        shift: isize,
    },
}

impl Reindent {
    /// The mapping that turns every (old_string indentation, file indentation) pair into the
    /// other, if one does.
    pub(super) fn derive(
        pairs: &[(&str, &str)],
        source: Option<Unit>,
        file: Unit,
    ) -> Option<Reindent> {
        let &(old, in_file) = pairs.first()?;
        if let Some(add) = in_file.strip_suffix(old) {
            if pairs
                .iter()
                .all(|(old, in_file)| in_file.strip_suffix(old) == Some(add))
            {
                return Some(Reindent::Prefix {
                    add: add.to_owned(),
                    remove: String::new(),
                });
            }
        }
        if let Some(remove) = old.strip_suffix(in_file) {
            if pairs
                .iter()
                .all(|(old, in_file)| old.strip_suffix(in_file) == Some(remove))
            {
                return Some(Reindent::Prefix {
                    add: String::new(),
                    remove: remove.to_owned(),
                });
            }
        }
        let source = source?;
        let mut shift = None;
        for (old, in_file) in pairs {
            let (old_levels, old_extra) = source.measure(old)?;
            let (file_levels, file_extra) = file.measure(in_file)?;
            let levels = isize::try_from(file_levels).ok()? - isize::try_from(old_levels).ok()?;
            if old_extra != file_extra || shift.is_some_and(|shift| shift != levels) {
                return None;
            }
            shift = Some(levels);
        }
        Some(Reindent::Levels {
            source,
            file,
            shift: shift?,
        })
    }

    /// Re-indents one line of new_string. Blank lines stay as they are.
    pub(super) fn apply(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return line.to_owned();
        }
        match self {
            Reindent::Prefix { add, remove } => {
                let rest = line
                    .strip_prefix(remove.as_str())
                    .unwrap_or_else(|| line.trim_start_matches([' ', '\t']));
                format!("{add}{rest}")
            }
            Reindent::Levels {
                source,
                file,
                shift,
            } => {
                let indent = indentation(line);
                match source.measure(indent) {
                    Some((levels, extra)) => {
                        let levels = levels.saturating_add_signed(*shift);
                        format!("{}{}", file.render(levels, extra), &line[indent.len()..])
                    }
                    None => line.to_owned(),
                }
            }
        }
    }
}
