//! Character-level helpers shared by the patterns: the original's notions
//! of whitespace, word characters and case-insensitive letters.

use super::pyword::WORD_RANGES;

/// The character starting at byte `i`, if any.
pub(super) fn char_at(text: &str, i: usize) -> Option<char> {
    text.get(i..)?.chars().next()
}

/// The ASCII lowercase letter `c` matches under the original's
/// case-insensitive matching: ASCII letters, plus the four characters
/// Python's `re` folds onto one (`İ ı` onto `i`, `ſ` onto `s`, the Kelvin
/// sign onto `k`).
pub(super) fn fold(c: char) -> Option<char> {
    match c {
        'a'..='z' => Some(c),
        'A'..='Z' => Some(c.to_ascii_lowercase()),
        '\u{130}' | '\u{131}' => Some('i'),
        '\u{17F}' => Some('s'),
        '\u{212A}' => Some('k'),
        _ => None,
    }
}

/// Python's `\s` on text: Unicode White_Space plus the four information
/// separators U+001C..U+001F, which `str.isspace` also counts.
pub(super) fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// Python's `\w` on text (what its `\b` looks at): `_`, ASCII letters and
/// digits, and the non-ASCII letters and numbers of [`WORD_RANGES`].
pub(super) fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    let code = u32::from(c);
    WORD_RANGES
        .binary_search_by(|&(low, high)| {
            if high < code {
                std::cmp::Ordering::Less
            } else if low > code {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether a word starts at `at` (`\b` before a word character): the text
/// starts there or the character before is not a word character.
pub(super) fn boundary_before(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(|c| !is_word(c))
}

/// The end of the run of characters in `class` from `at`, and its length in
/// characters (quantifiers count characters, not bytes).
pub(super) fn class_run(text: &str, at: usize, class: impl Fn(char) -> bool) -> (usize, usize) {
    let (mut end, mut count) = (at, 0);
    for c in text.get(at..).unwrap_or("").chars() {
        if !class(c) {
            break;
        }
        end += c.len_utf8();
        count += 1;
    }
    (end, count)
}

/// The end of the whitespace run from `at`.
pub(super) fn skip_space(text: &str, at: usize) -> usize {
    class_run(text, at, is_space).0
}

/// The first `\r` or `\n` at or after `at`, or the end of the text.
pub(super) fn line_end(text: &str, at: usize) -> usize {
    text.as_bytes()[at..]
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .map_or(text.len(), |i| at + i)
}

/// The end of `lit` (ASCII; its letters lowercase) matched at `at`, letters
/// compared as the original's case-insensitive patterns compare them.
pub(super) fn match_ci(text: &str, at: usize, lit: &str) -> Option<usize> {
    let mut i = at;
    for l in lit.bytes() {
        if l.is_ascii_lowercase() {
            let c = char_at(text, i)?;
            if fold(c) != Some(char::from(l)) {
                return None;
            }
            i += c.len_utf8();
        } else if text.as_bytes().get(i) == Some(&l) {
            i += 1;
        } else {
            return None;
        }
    }
    Some(i)
}

/// The first occurrence of `needle` (ASCII, so it starts on a character
/// boundary) at or after byte `from`, which may fall inside a character.
pub(super) fn find_from(text: &str, mut from: usize, needle: &str) -> Option<usize> {
    while from < text.len() && !text.is_char_boundary(from) {
        from += 1;
    }
    text.get(from..)?.find(needle).map(|i| from + i)
}
