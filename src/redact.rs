//! Best-effort scrubbing of recognizable secrets from job output before it
//! is archived (`archiveOutput` with `redactArchivedSecrets`, on by default).
//!
//! The patterns are the original's, applied in the original's order, each
//! over the previous one's result, and every one replaces what it matched
//! with [`REDACTED`] while keeping the surrounding key or label readable:
//!
//! 1. `KEY=value` / `KEY: value` where the key contains a secret-bearing word
//!    (see [`KEY_WORDS`]), quoted keys and values included;
//! 2. the password of a URL or connection string, `scheme://user:PASS@host`
//!    and the user-less `scheme://:PASS@host`;
//! 3. `Bearer <token>` and 4. `Authorization: Basic <credentials>`;
//! 5. to 11. well-known token formats: AWS access key ids, Slack, GitHub
//!    (classic and fine-grained), `sk-` API keys, Stripe keys, JWTs;
//! 12. a PEM private-key header line, from its `-----BEGIN` to the line end.
//!
//! [`redact_lines`] also redacts the body of a PEM private-key block spanning
//! several lines. Matching is done by hand, not with a regex engine: the
//! original's patterns rely on look-around, and every quantifier in them
//! turns out to be deterministic (each is spelled out where it is matched),
//! so one forward scan per pattern reproduces the original's matches
//! exactly, case-insensitive folding and Unicode whitespace included.
//!
//! This is defence in depth, not a guarantee: it can miss a secret and it
//! can redact text that is not one (over-redaction is the chosen bias).

use std::borrow::Cow;

mod pem;
mod pyword;
mod scan;
#[cfg(test)]
mod tests;

pub use pem::redact_lines;

use scan::{
    boundary_before, char_at, class_run, find_from, fold, is_space, line_end, match_ci, skip_space,
};

/// What a redacted span is replaced with (the original's marker, byte for
/// byte: archived records written by either daemon read the same).
pub const REDACTED: &str = "***REDACTED***";

/// The longest text, in characters, that [`redact`] scans. A longer one (or
/// one that a replacement grows past the limit) becomes [`REDACTED`] whole,
/// as the original does: scanning it in chunks could leak a secret that
/// straddles a chunk edge.
pub const LINE_SCAN_LIMIT: usize = 1024 * 1024;

/// The secret-bearing words a `KEY=value` key is searched for, in match
/// order; `?` stands for an optional `_` or `-`. A word may sit anywhere in
/// the key (`MY_PASSWORD`, `PGPASSWORD`, `AWS_SECRET_ACCESS_KEY`), matched
/// case-insensitively, and may be followed by an `s` (`SECRETS=`).
pub const KEY_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "api?key",
    "apikey",
    "access?key",
    "secret?key",
    "auth?token",
    "credential",
    "private?key",
    "rediscli?auth",
];

/// Returns `text` with every recognizable secret replaced by [`REDACTED`];
/// borrowed when nothing was replaced.
///
/// Stateless and per text: the body lines of a multi-line PEM block are only
/// recognizable in sequence, which is what [`redact_lines`] is for. Never
/// fails; a text longer than [`LINE_SCAN_LIMIT`] characters comes back as
/// [`REDACTED`] whole. Idempotent: redacting redacted text changes nothing.
pub fn redact(text: &str) -> Cow<'_, str> {
    if over_limit(text) {
        return Cow::Borrowed(REDACTED);
    }
    let mut out = Cow::Borrowed(text);
    for find in PATTERNS {
        if let Some(new) = substitute(&out, *find) {
            // Bounds the next pattern's scan, as the original does.
            if over_limit(&new) {
                return Cow::Borrowed(REDACTED);
            }
            out = Cow::Owned(new);
        }
    }
    out
}

/// One match of a pattern: the span replaced by [`REDACTED`] and where the
/// whole match ends (the next search starts there). Parts of a match outside
/// `cut` (a key, a URL's `@`) are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hit {
    cut: (usize, usize),
    end: usize,
}

/// Finds the leftmost match starting at or after a byte offset. The whole
/// text is passed, so look-behind sees what precedes the offset.
type Finder = fn(&str, usize) -> Option<Hit>;

/// The patterns in the original's order; the order matters (a URL carrying
/// a token is redacted by the URL pattern first).
const PATTERNS: &[Finder] = &[
    find_assignment,
    find_url_password,
    find_bearer,
    find_basic,
    find_aws_key,
    find_slack,
    find_github,
    find_github_pat,
    find_sk_key,
    find_stripe,
    find_jwt,
    pem::find_header_line,
];

fn over_limit(text: &str) -> bool {
    // Bytes bound characters from above, so counting is rarely needed.
    text.len() > LINE_SCAN_LIMIT && text.chars().count() > LINE_SCAN_LIMIT
}

/// Replaces every non-overlapping match, left to right; `None` when the
/// text would come out unchanged (a span that already reads [`REDACTED`]
/// is replaced by itself, so it does not count).
fn substitute(text: &str, find: Finder) -> Option<String> {
    let mut out: Option<String> = None;
    let (mut pos, mut copied) = (0, 0);
    while pos <= text.len() {
        let Some(hit) = find(text, pos) else { break };
        let (start, stop) = hit.cut;
        if &text[start..stop] != REDACTED {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            buf.push_str(&text[copied..start]);
            buf.push_str(REDACTED);
            copied = stop;
        }
        pos = hit.end;
    }
    out.map(|mut buf| {
        buf.push_str(&text[copied..]);
        buf
    })
}

/// Pattern 1: `<word>[s]["']<ws>[=:]<ws><value>`, keeping everything up to
/// the value. The value is a quoted string (backslash escapes allowed) or an
/// already redacted marker, either followed by whitespace, a delimiter, a
/// shell metacharacter or the end; else a bare run ending just before a
/// `,`, `}` or `]` (whitespace allowed before it); else the rest of the line.
fn find_assignment(text: &str, pos: usize) -> Option<Hit> {
    let bytes = text.as_bytes();
    if !bytes[pos..].iter().any(|&b| b == b'=' || b == b':') {
        return None;
    }
    for at in pos..bytes.len() {
        let b = bytes[at];
        // Every word starts with one of these letters (or `ſ`, which folds
        // to `s`); `at` is then a character boundary.
        let first = b.is_ascii_alphabetic() && b"pstacr".contains(&(b | 0x20))
            || (b == 0xC5 && bytes.get(at + 1) == Some(&0xBF));
        if !first {
            continue;
        }
        for word in KEY_WORDS {
            if let Some(hit) = key_word_at(text, at, word).and_then(|e| assignment_rest(text, e)) {
                return Some(hit);
            }
        }
    }
    None
}

/// The end of a key word at `at`, if it is there (`?` is a greedy optional
/// `_`/`-`, which is deterministic: the letter after it is never one).
fn key_word_at(text: &str, at: usize, word: &str) -> Option<usize> {
    let mut i = at;
    for part in word.split('?').enumerate() {
        if part.0 > 0 && matches!(text.as_bytes().get(i), Some(b'_' | b'-')) {
            i += 1;
        }
        i = match_ci(text, i, part.1)?;
    }
    Some(i)
}

/// What follows a key word: the optional plural `s`, closing quote, the
/// separator and the value. Each optional part is taken greedily and never
/// needs giving back (what follows it cannot start with it), except the
/// whitespace after the separator, handled as the original's backtracking
/// does.
fn assignment_rest(text: &str, mut i: usize) -> Option<Hit> {
    if let Some(c) = char_at(text, i).filter(|&c| fold(c) == Some('s')) {
        i += c.len_utf8();
    }
    if matches!(text.as_bytes().get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    i = skip_space(text, i);
    if !matches!(text.as_bytes().get(i), Some(b'=' | b':')) {
        return None;
    }
    let sep_end = i + 1;
    let greedy = skip_space(text, sep_end);
    if let Some(end) = value_at(text, greedy) {
        return Some(Hit {
            cut: (greedy, end),
            end,
        });
    }
    // No value after the whitespace (end of text or a line break): the
    // original gives the whitespace back one character at a time, and the
    // first one that is not a line break starts a rest-of-line value.
    let mut r = greedy;
    while r > sep_end {
        let c = text[..r].chars().next_back()?;
        r -= c.len_utf8();
        if c != '\r' && c != '\n' {
            let end = line_end(text, r);
            return Some(Hit { cut: (r, end), end });
        }
    }
    None
}

/// The end of a `KEY=value` value starting at `r`, in the original's order
/// of alternatives.
fn value_at(text: &str, r: usize) -> Option<usize> {
    let first = char_at(text, r)?;
    let closed = match first {
        '"' | '\'' => quoted_end(text, r, first),
        _ => match_ci(text, r, "***redacted***"),
    };
    if let Some(end) = closed.filter(|&e| quote_boundary(text, e)) {
        return Some(end);
    }
    let bare = class_run(text, r, |c| !is_space(c) && !matches!(c, ',' | '}' | ']'));
    if bare.0 > r {
        let next = skip_space(text, bare.0);
        if matches!(text.as_bytes().get(next), Some(b',' | b'}' | b']')) {
            return Some(bare.0);
        }
    }
    if first != '\r' && first != '\n' {
        return Some(line_end(text, r));
    }
    None
}

/// The end (after the closing quote) of a quoted string opening at `r`. An
/// escape is a backslash and any character but a newline; a bare backslash
/// before a newline ends the attempt, as in the original.
fn quoted_end(text: &str, r: usize, quote: char) -> Option<usize> {
    let mut i = r + 1;
    loop {
        let c = char_at(text, i)?;
        if c == quote {
            return Some(i + 1);
        }
        if c == '\\' {
            let escaped = char_at(text, i + 1).filter(|&n| n != '\n')?;
            i += 1 + escaped.len_utf8();
        } else {
            i += c.len_utf8();
        }
    }
}

/// Whether a quoted value may end at `e`: the end, whitespace, a delimiter
/// or a shell metacharacter (`"part1"part2` is one shell word).
fn quote_boundary(text: &str, e: usize) -> bool {
    char_at(text, e).is_none_or(|c| is_space(c) || ",;|&)<>}]".contains(c))
}

/// Pattern 2: the password of `scheme://[user]:PASSWORD@`. The scheme is a
/// letter then up to 31 of `[A-Za-z0-9+.-]`, not preceded by one of those;
/// the user has no `:`, `/`, `@` or whitespace; the password no `@`, `/` or
/// whitespace.
fn find_url_password(text: &str, pos: usize) -> Option<Hit> {
    let bytes = text.as_bytes();
    let is_scheme = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-');
    let mut from = pos;
    while let Some(colon) = find_from(text, from, "://") {
        from = colon + 1;
        let mut start = colon;
        while start > 0 && colon - start < 33 && is_scheme(bytes[start - 1]) {
            start -= 1;
        }
        let whole_run = start == 0 || !is_scheme(bytes[start - 1]);
        if !whole_run || start == colon || colon - start > 32 || start < pos {
            continue;
        }
        if !bytes[start].is_ascii_alphabetic() {
            continue;
        }
        let user = class_run(text, colon + 3, |c| {
            !matches!(c, ':' | '/' | '@') && !is_space(c)
        });
        if bytes.get(user.0) != Some(&b':') {
            continue;
        }
        let pass = class_run(text, user.0 + 1, |c| {
            !matches!(c, '@' | '/') && !is_space(c)
        });
        if pass.0 > user.0 + 1 && bytes.get(pass.0) == Some(&b'@') {
            return Some(Hit {
                cut: (user.0 + 1, pass.0),
                end: pass.0 + 1,
            });
        }
    }
    None
}

/// The token68 alphabet of an `Authorization` credential (RFC 7235), as the
/// original's case-insensitive class reads it (so `İ ı ſ K` are in).
fn token68(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '+' | '/' | '-') || fold(c).is_some()
}

/// Pattern 3: `bearer<ws>TOKEN` (any case), the token at least 8 token68
/// characters plus any `=` padding.
fn find_bearer(text: &str, pos: usize) -> Option<Hit> {
    let bytes = text.as_bytes();
    for at in pos..bytes.len() {
        if bytes[at] | 0x20 != b'b' {
            continue;
        }
        let Some(word) = match_ci(text, at, "bearer") else {
            continue;
        };
        let start = skip_space(text, word);
        if start == word {
            continue;
        }
        let (run, count) = class_run(text, start, token68);
        if count >= 8 {
            let end = run + bytes[run..].iter().take_while(|&&b| b == b'=').count();
            return Some(Hit {
                cut: (start, end),
                end,
            });
        }
    }
    None
}

/// Pattern 4: `authorization` then `:` (spaces optional) or at least one
/// space, `basic`, whitespace, and at least 8 token68 characters or `=`
/// (any case).
fn find_basic(text: &str, pos: usize) -> Option<Hit> {
    let bytes = text.as_bytes();
    for at in pos..bytes.len() {
        if bytes[at] | 0x20 != b'a' {
            continue;
        }
        let Some(word) = match_ci(text, at, "authorization") else {
            continue;
        };
        let mut i = skip_space(text, word);
        if bytes.get(i) == Some(&b':') {
            i = skip_space(text, i + 1);
        } else if i == word {
            continue;
        }
        let Some(basic) = match_ci(text, i, "basic") else {
            continue;
        };
        let start = skip_space(text, basic);
        if start == basic {
            continue;
        }
        let (end, count) = class_run(text, start, |c| c == '=' || token68(c));
        if count >= 8 {
            return Some(Hit {
                cut: (start, end),
                end,
            });
        }
    }
    None
}

/// A whole-match token pattern: a literal prefix found from `pos`, a check
/// of what surrounds it, and the end of the token.
fn find_token(
    text: &str,
    pos: usize,
    prefix: &str,
    at_prefix: impl Fn(&str, usize) -> Option<usize>,
) -> Option<Hit> {
    let mut from = pos;
    while let Some(at) = find_from(text, from, prefix) {
        if let Some(end) = at_prefix(text, at) {
            return Some(Hit {
                cut: (at, end),
                end,
            });
        }
        from = at + 1;
    }
    None
}

/// The end of a run of ASCII bytes in `class` from `at`, if at least `min`.
fn ascii_run(text: &str, at: usize, min: usize, class: impl Fn(u8) -> bool) -> Option<usize> {
    let len = text
        .as_bytes()
        .get(at..)?
        .iter()
        .take_while(|&&b| class(b))
        .count();
    (len >= min).then_some(at + len)
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Pattern 5: an AWS access key id, `AKIA` and 16 of `[0-9A-Z]`.
fn find_aws_key(text: &str, pos: usize) -> Option<Hit> {
    find_token(text, pos, "AKIA", |t, at| {
        let key = t.as_bytes().get(at + 4..at + 20)?;
        key.iter()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            .then_some(at + 20)
    })
}

/// Pattern 6: a Slack token, `xox[baprs]-` and at least 8 of
/// `[0-9A-Za-z-]`, at a word start.
fn find_slack(text: &str, pos: usize) -> Option<Hit> {
    find_token(text, pos, "xox", |t, at| {
        let b = t.as_bytes();
        if !boundary_before(t, at)
            || !b"baprs".contains(b.get(at + 3)?)
            || b.get(at + 4) != Some(&b'-')
        {
            return None;
        }
        ascii_run(t, at + 5, 8, |b| alnum(b) || b == b'-')
    })
}

/// Pattern 7: a classic GitHub token, `gh[posur]_` and at least 20
/// alphanumerics, at a word start.
fn find_github(text: &str, pos: usize) -> Option<Hit> {
    find_token(text, pos, "gh", |t, at| {
        let b = t.as_bytes();
        if !boundary_before(t, at)
            || !b"posur".contains(b.get(at + 2)?)
            || b.get(at + 3) != Some(&b'_')
        {
            return None;
        }
        ascii_run(t, at + 4, 20, alnum)
    })
}

/// Pattern 8: a GitHub fine-grained token, `github_pat_` and at least 20 of
/// `[0-9A-Za-z_]`, at a word start.
fn find_github_pat(text: &str, pos: usize) -> Option<Hit> {
    find_token(text, pos, "github_pat_", |t, at| {
        boundary_before(t, at).then_some(())?;
        ascii_run(t, at + 11, 20, |b| alnum(b) || b == b'_')
    })
}

/// Pattern 9: an `sk-` API key (OpenAI, Anthropic style), at least 16 of
/// `[A-Za-z0-9_-]`, at a word start.
fn find_sk_key(text: &str, pos: usize) -> Option<Hit> {
    find_token(text, pos, "sk-", |t, at| {
        boundary_before(t, at).then_some(())?;
        ascii_run(t, at + 3, 16, |b| alnum(b) || b == b'_' || b == b'-')
    })
}

/// Pattern 10: a Stripe key, `[sr]k_live_` or `[sr]k_test_` and at least 16
/// alphanumerics, at a word start.
fn find_stripe(text: &str, pos: usize) -> Option<Hit> {
    let bytes = text.as_bytes();
    let mut from = pos + 1;
    while let Some(k) = find_from(text, from, "k_") {
        from = k + 1;
        let at = k - 1;
        if !matches!(bytes[at], b's' | b'r') || !boundary_before(text, at) {
            continue;
        }
        let rest = &bytes[k + 2..];
        if !(rest.starts_with(b"live_") || rest.starts_with(b"test_")) {
            continue;
        }
        if let Some(end) = ascii_run(text, k + 7, 16, alnum) {
            return Some(Hit {
                cut: (at, end),
                end,
            });
        }
    }
    None
}

/// Pattern 11: a JWT, `eyJ` then three base64url segments joined by dots
/// (header at least 6 more characters, the others at least 4). An `eyJ`
/// inside a base64url run only counts right after a `-`, and then its
/// header may not contain `-`.
fn find_jwt(text: &str, pos: usize) -> Option<Hit> {
    let b64 = |b: u8| alnum(b) || b == b'_' || b == b'-';
    find_token(text, pos, "eyJ", |t, at| {
        let b = t.as_bytes();
        let header = match at.checked_sub(1).map(|i| b[i]) {
            None => ascii_run(t, at + 3, 6, b64)?,
            Some(b'-') => ascii_run(t, at + 3, 6, |b| alnum(b) || b == b'_')?,
            Some(prev) if b64(prev) => return None,
            Some(_) => ascii_run(t, at + 3, 6, b64)?,
        };
        (b.get(header) == Some(&b'.')).then_some(())?;
        let payload = ascii_run(t, header + 1, 4, b64)?;
        (b.get(payload) == Some(&b'.')).then_some(())?;
        ascii_run(t, payload + 1, 4, b64)
    })
}
