//! Undoing one level of over-escaping in `edit`'s arguments. Some models (Gemini's above all)
//! send old_string and new_string escaped once too often: `\n` where the file has a line
//! break, `\"` where it has a quote. `edit` tries this only after every literal and
//! whitespace-tolerant match failed, and unescapes both strings the same way, so a file that
//! really contains `\n` (a C string, a regex) is still edited literally.

/// The escape sequences undone, in the order the notes name them, with what each stands for.
const SEQUENCES: [(char, char, &str); 7] = [
    ('n', '\n', "`\\n`"),
    ('r', '\r', "`\\r`"),
    ('t', '\t', "`\\t`"),
    ('"', '"', "`\\\"`"),
    ('\'', '\'', "`\\'`"),
    ('`', '`', "``\\` ``"),
    ('\\', '\\', "`\\\\`"),
];

/// old_string and new_string with one level of escaping removed.
#[derive(Debug, PartialEq)]
pub(super) struct Unescaped {
    pub(super) old: String,
    pub(super) new: String,
    /// The sequences that were undone in either string, as the notes show them (`` `\n` ``).
    pub(super) sequences: Vec<&'static str>,
}

/// Both strings unescaped, or `None` when old_string has nothing to unescape (then unescaping
/// cannot be why it did not match).
pub(super) fn unescape_pair(old: &str, new: &str) -> Option<Unescaped> {
    let mut used = [false; SEQUENCES.len()];
    let unescaped_old = unescape(old, &mut used);
    if unescaped_old == old {
        return None;
    }
    let unescaped_new = unescape(new, &mut used);
    Some(Unescaped {
        old: unescaped_old,
        new: unescaped_new,
        sequences: SEQUENCES
            .iter()
            .zip(used)
            .filter(|(_, used)| *used)
            .map(|((_, _, shown), _)| *shown)
            .collect(),
    })
}

/// Replaces each `\` + one of [`SEQUENCES`] by the character it stands for, one level only:
/// `\\n` becomes `\n` (a backslash and an n), never a line break, because a file's own
/// escapes arrive escaped once more. A backslash before anything else, a line break
/// included (a line continuation), stays.
fn unescape(text: &str, used: &mut [bool; SEQUENCES.len()]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let next = chars.clone().next();
        match SEQUENCES
            .iter()
            .position(|(escaped, _, _)| Some(*escaped) == next)
        {
            Some(index) => {
                out.push(SEQUENCES[index].1);
                used[index] = true;
                chars.next();
            }
            None => out.push('\\'),
        }
    }
    out
}

/// "`\n`", "`\n` and `\"`", "`\n`, `\t` and `\"`".
pub(super) fn list_sequences(sequences: &[&str]) -> String {
    match sequences {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_level_of_escaping_is_undone_in_both_strings() {
        let unescaped = unescape_pair(
            r#"printf(\"done\\n\");\n\treturn 0;"#,
            r#"printf(\"ok\\n\");\n\treturn 1;"#,
        )
        .unwrap();
        assert_eq!(unescaped.old, "printf(\"done\\n\");\n\treturn 0;");
        assert_eq!(unescaped.new, "printf(\"ok\\n\");\n\treturn 1;");
        assert_eq!(
            list_sequences(&unescaped.sequences),
            r#"`\n`, `\t`, `\"` and `\\`"#
        );
    }

    #[test]
    fn other_backslashes_stay() {
        let unescaped = unescape_pair("a\\d+\\\nb\\`c\\'", "x\\u00e9").unwrap();
        // `\d` and a line continuation are not escapes of ours; new_string had nothing to undo.
        assert_eq!(unescaped.old, "a\\d+\\\nb`c'");
        assert_eq!(unescaped.new, "x\\u00e9");
        assert_eq!(unescaped.sequences, vec!["`\\'`", "``\\` ``"]);
    }

    #[test]
    fn nothing_to_unescape_in_old_string_means_no_attempt() {
        assert_eq!(unescape_pair("plain \\d text", "with \\n"), None);
        assert_eq!(unescape_pair("trailing \\", "x"), None);
    }

    #[test]
    fn crlf_escapes_become_a_real_crlf() {
        let unescaped = unescape_pair("a\\r\\nb", "a\\r\\nc").unwrap();
        assert_eq!(unescaped.old, "a\r\nb");
        assert_eq!(list_sequences(&unescaped.sequences), "`\\n` and `\\r`");
    }
}
