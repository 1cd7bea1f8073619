//! What `edit` answers when old_string matches nowhere: which looser steps were tried too, a
//! hint when new_string is already there, and the most similar region of the file, numbered,
//! found by a character diff per window, or for large files by a cheap bigram score that picks
//! the candidates first.

use std::fmt::Write as _;
use std::time::Duration;

use similar::TextDiff;

use super::matching::number_lines;
use crate::cap;

/// Cap of the "most similar region" shown when nothing matched.
pub(super) const MAX_REGION_LINES: usize = 40;
pub(super) const MAX_REGION_BYTES: usize = 4 * 1024;
/// Below this much text to compare (windows × window size), every window is scored with
/// `similar`'s ratio; above it a cheap bigram score picks the candidates first, because a
/// character diff per window is quadratic and took seconds on a few thousand lines.
pub(super) const FULL_SIMILARITY_BUDGET: usize = 64 * 1024;
pub(super) const SIMILARITY_CANDIDATES: usize = 8;
pub(super) const SIMILARITY_TIMEOUT: Duration = Duration::from_millis(50);

/// What `find` knows when nothing matched.
pub(super) struct Miss<'a> {
    /// The file's lines, CRLF read as LF.
    pub(super) file_lines: &'a [&'a str],
    /// old_string, CRLF read as LF, without a final line break.
    pub(super) old_body: &'a str,
    pub(super) old_lines: &'a [&'a str],
    pub(super) shown: &'a str,
    /// The looser steps that ran, as phrases after "nor" ("after unescaping `\n` in it").
    pub(super) also_tried: Vec<String>,
    /// old_string's body once unescaped, when unescaping changed it: over-escaped text
    /// resembles the file only once unescaped.
    pub(super) unescaped_body: Option<&'a str>,
    /// The lines where new_string already stands ("lines 4-6").
    pub(super) already_at: Option<String>,
}

/// The error for a miss: the most similar region of the file, numbered, to copy from.
pub(super) fn not_found_message(miss: &Miss) -> String {
    let &Miss {
        file_lines,
        old_body,
        old_lines,
        shown,
        ..
    } = miss;
    let also: String = miss
        .also_tried
        .iter()
        .map(|phrase| format!(", nor {phrase}"))
        .collect();
    let mut message = format!(
        "old_string was not found in {shown}, not even when ignoring differences in line \
         endings, trailing whitespace and indentation{also}."
    );
    let numbered_prefix = old_lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .all(|line| {
            let rest = line.trim_start_matches(' ');
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits > 0 && rest[digits..].starts_with('\t')
        });
    if numbered_prefix {
        message.push_str(
            " old_string seems to include read_file's line-number prefixes (like `    12\\t`): \
             leave them out, they are not part of the file.",
        );
    }
    if let Some(lines) = &miss.already_at {
        let _ = write!(
            message,
            " new_string is already in the file ({lines}): the change may have been made \
             already. Read the file again with read_file to check before editing it again."
        );
    }
    let closest = closest_region(file_lines, old_body, old_lines.len());
    let unescaped_closest = miss
        .unescaped_body
        .and_then(|body| closest_region(file_lines, body, body.split('\n').count()));
    let closest = match (closest, unescaped_closest) {
        (Some(plain), Some(unescaped)) if unescaped.2 > plain.2 => Some(unescaped),
        (closest, _) => closest,
    };
    match closest {
        None => message.push_str(" The file is empty: use write_file to give it content."),
        Some((start, len, ratio)) => {
            let shown_len = len.min(MAX_REGION_LINES);
            let region = number_lines(&file_lines[start..start + shown_len], start + 1);
            let more = if shown_len < len {
                format!(
                    "\n[region continues to line {}: call read_file with start_line={} to see \
                     the rest]",
                    start + len,
                    start + shown_len + 1
                )
            } else {
                String::new()
            };
            let _ = write!(
                message,
                " The most similar part of the file (lines {}-{}, {:.0}% similar):\n{}{more}\n\
                 Copy the exact text from the file into old_string (without the line-number \
                 prefixes), or read the file again with read_file if it may have changed.",
                start + 1,
                start + len,
                ratio * 100.0,
                cap(
                    &region,
                    MAX_REGION_BYTES,
                    &format!("Call read_file with start_line={} to see it.", start + 1)
                ),
            );
        }
    }
    message
}

/// The window of `window_len` file lines most similar to `old_body`, as (start index, length,
/// `similar` ratio). A cheap bigram score picks the candidates when scoring every window with
/// a character diff would be slow.
pub(super) fn closest_region(
    file_lines: &[&str],
    old_body: &str,
    window_len: usize,
) -> Option<(usize, usize, f32)> {
    if file_lines.is_empty() || (file_lines.len() == 1 && file_lines[0].is_empty()) {
        return None;
    }
    let len = window_len.clamp(1, file_lines.len());
    let windows = file_lines.len() - len + 1;
    let window_bytes = old_body.len().max(1);
    let candidates: Vec<usize> = if windows.saturating_mul(window_bytes) <= FULL_SIMILARITY_BUDGET {
        (0..windows).collect()
    } else {
        bigram_candidates(file_lines, old_body, len)
    };
    let mut best: Option<(usize, f32)> = None;
    for start in candidates {
        let window = file_lines[start..start + len].join("\n");
        let ratio = TextDiff::configure()
            .timeout(SIMILARITY_TIMEOUT)
            .diff_chars(old_body, window.as_str())
            .ratio();
        let better = match best {
            None => true,
            Some((best_start, best_ratio)) => {
                ratio > best_ratio || (ratio == best_ratio && start < best_start)
            }
        };
        if better {
            best = Some((start, ratio));
        }
    }
    best.map(|(start, ratio)| (start, len, ratio))
}

/// The starts of the windows whose trimmed lines share the most byte bigrams with old_body
/// (Dice coefficient), computed with a sliding window in one pass over the file.
pub(super) fn bigram_candidates(file_lines: &[&str], old_body: &str, len: usize) -> Vec<usize> {
    pub(super) fn bigrams(line: &str) -> impl Iterator<Item = usize> + '_ {
        line.trim()
            .as_bytes()
            .windows(2)
            .map(|pair| usize::from(pair[0]) << 8 | usize::from(pair[1]))
    }
    let mut target = vec![0u32; 1 << 16];
    let mut target_total = 0usize;
    for line in old_body.split('\n') {
        for bigram in bigrams(line) {
            target[bigram] += 1;
            target_total += 1;
        }
    }
    let mut counts = vec![0u32; 1 << 16];
    let mut shared = 0usize;
    let mut total = 0usize;
    let mut scores = Vec::with_capacity(file_lines.len());
    for (index, line) in file_lines.iter().enumerate() {
        for bigram in bigrams(line) {
            if counts[bigram] < target[bigram] {
                shared += 1;
            }
            counts[bigram] += 1;
            total += 1;
        }
        if index >= len {
            for bigram in bigrams(file_lines[index - len]) {
                counts[bigram] -= 1;
                if counts[bigram] < target[bigram] {
                    shared -= 1;
                }
                total -= 1;
            }
        }
        if index + 1 >= len {
            let denominator = (target_total + total).max(1);
            scores.push((index + 1 - len, shared * 2_000_000 / denominator));
        }
    }
    scores.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scores
        .into_iter()
        .take(SIMILARITY_CANDIDATES)
        .map(|(start, _)| start)
        .collect()
}
