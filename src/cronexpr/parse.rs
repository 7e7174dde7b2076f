//! Text to [`Fields`]: the whole dialect, with errors that say which field,
//! which item and why, and hints for expressions written for Quartz.

use std::borrow::Cow;

use super::error::{Field, ParseError};
use super::field::{self, Fields, Spec, YearSet, DOM, DOW};
use super::hash;
use super::hint::{quartz_hint, unknown_nickname};

/// The `@` nicknames the engine expands, and their five-field meaning.
pub(crate) const MACROS: &[(&str, &str)] = &[
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// The expansion of a nickname (lower-case), if it is one the engine knows.
pub(crate) fn macro_expansion(name: &str) -> Option<&'static str> {
    MACROS
        .iter()
        .find(|(macro_name, _)| *macro_name == name)
        .map(|(_, expansion)| *expansion)
}

/// What a successful parse yields.
pub(crate) struct Parsed {
    pub fields: Fields,
    /// The source with runs of whitespace collapsed (a nickname is
    /// lower-cased), the form the original prints.
    pub source: String,
    /// The source with every `H` item replaced by its values, when the
    /// expression used `H`.
    pub resolved: Option<String>,
    /// Whether the expression had the leading seconds column (7 fields).
    pub seven: bool,
}

/// Whitespace as Python's `str.split()` sees it: Unicode white space plus
/// the four ASCII information separators, so the fields split exactly where
/// the original's did.
pub(crate) fn is_separator(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The whitespace-separated fields of an expression, in order.
pub(crate) fn fields_of(text: &str) -> impl Iterator<Item = &str> {
    // an ASCII text (nearly always) is split byte-wise, which is several
    // times cheaper than decoding characters
    let ascii = text.is_ascii();
    text.split(move |c: char| {
        if ascii {
            matches!(c, ' ' | '\t'..='\r' | '\u{1c}'..='\u{1f}')
        } else {
            is_separator(c)
        }
    })
    .filter(|s| !s.is_empty())
}

/// Splits an expression into its whitespace-separated fields.
pub(crate) fn split_fields(text: &str) -> Vec<&str> {
    fields_of(text).collect()
}

/// The comma-separated items of a field.
pub(crate) fn items(text: &str) -> impl Iterator<Item = &str> {
    // a byte scan: for these few-byte fields it beats the general pattern
    // search that `split(',')` sets up
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.bytes().position(|b| b == b',') {
            Some(i) => {
                rest = Some(&current[i + 1..]);
                Some(&current[..i])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

/// `text` split around the first `sep` (an ASCII byte), cheaper than the
/// general pattern search for these few-byte strings.
fn split_at_byte(text: &str, sep: u8) -> Option<(&str, &str)> {
    let i = text.bytes().position(|b| b == sep)?;
    Some((&text[..i], &text[i + 1..]))
}

/// An integer the way Python's `int(text, 10)` reads it (ASCII digits, an
/// optional sign, single underscores between digits), so that every value
/// the original accepted is accepted here too. Saturates far beyond any
/// field's range, where the range check rejects it anyway.
fn py_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let bytes = digits.as_bytes();
    if bytes.is_empty() || bytes[0] == b'_' || bytes[bytes.len() - 1] == b'_' {
        return None;
    }
    let mut value: i64 = 0;
    let mut previous_underscore = false;
    for &b in bytes {
        if b == b'_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
            continue;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        previous_underscore = false;
        value = value.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    Some(if negative { -value } else { value })
}

fn is_ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn ascii_digits_value(s: &str) -> i64 {
    py_int(s).unwrap_or(i64::MAX)
}

/// One value token: a name from the field's table or a base-10 integer,
/// bounds-checked. `item` is the whole list item, for the message.
fn resolve(token: &str, spec: &Spec, item: &str) -> Result<i64, ParseError> {
    let label = spec.field.label();
    let value = match spec.names.iter().find(|(name, _)| *name == token) {
        Some((_, value)) => *value,
        None => py_int(token).ok_or_else(|| {
            ParseError::at(spec.field, item, format!("invalid {label} field '{item}'"))
        })?,
    };
    if !(spec.lo..=spec.hi).contains(&value) {
        return Err(ParseError::at(
            spec.field,
            item,
            format!(
                "{label} value {value} out of range [{}, {}]",
                spec.lo, spec.hi
            ),
        ));
    }
    Ok(value)
}

/// One plain item (`*`, `a`, `a-b`, each optionally `/n`) as the range
/// `(start, end, step)` it covers.
///
/// Steps must be positive, at most the field's maximum, and `start + step`
/// must stay inside the field (so `*/12` is refused for months). A reversed
/// range is an error, except that a weekday range ending in 0 reads the end
/// as Sunday-as-7 (`sat-sun`).
fn parse_item(item: &str, spec: &Spec) -> Result<(i64, i64, i64), ParseError> {
    if item == "*" {
        return Ok((spec.lo, spec.step_end, 1));
    }
    let label = spec.field.label();
    let err = |reason: String| ParseError::at(spec.field, item, reason);
    let (head, step_text) = match split_at_byte(item, b'/') {
        Some((head, step)) => (head, Some(step)),
        None => (item, None),
    };
    let mut step = 1;
    if let Some(step_text) = step_text {
        if step_text.contains('/') {
            return Err(err(format!(
                "invalid {label} field '{item}': more than one '/'"
            )));
        }
        step = py_int(step_text).ok_or_else(|| err(format!("invalid {label} step '{item}'")))?;
        if step <= 0 {
            return Err(err(format!("{label} step must be positive, got {step}")));
        }
        if step > spec.hi {
            return Err(err(format!(
                "{label} step {step} too large (max {})",
                spec.hi
            )));
        }
    }
    let (start, end) = if head == "*" {
        (spec.lo, spec.step_end)
    } else if let Some((a, b)) = split_at_byte(head, b'-') {
        let start = resolve(a, spec, item)?;
        let mut end = resolve(b, spec, item)?;
        if end == 0 && spec.field == Field::DayOfWeek {
            // a weekday range ending in 0 ends on Sunday-as-7, always; the
            // degenerate 0-0 therefore means every day (kept from the
            // original on purpose)
            end = 7;
        }
        if start > end {
            return Err(err(format!("{label} range start {start} > end {end}")));
        }
        (start, end)
    } else {
        let start = resolve(head, spec, item)?;
        if step_text.is_none() {
            return Ok((start, start, 1));
        }
        if start > spec.step_end {
            return Err(err(format!(
                "{label} range start {start} > end {}",
                spec.step_end
            )));
        }
        (start, spec.step_end)
    };
    if step_text.is_some() && !(spec.lo..=spec.hi).contains(&(start + step)) {
        return Err(err(format!(
            "{label} step {step} from {start} escapes [{}, {}]",
            spec.lo, spec.hi
        )));
    }
    Ok((start, end, step))
}

/// Calls `set` for every value of a parsed item.
fn for_each_value(range: (i64, i64, i64), mut set: impl FnMut(i64)) {
    let (start, end, step) = range;
    let mut v = start;
    while v <= end {
        set(v);
        v += step.max(1);
    }
}

/// A column with no `L` forms: second, minute, hour, month.
fn parse_plain(text: &str, spec: &Spec) -> Result<u64, ParseError> {
    let mut bits = 0u64;
    for item in items(text) {
        if item.starts_with('l') {
            return Err(ParseError::at(
                spec.field,
                item,
                format!(
                    "'L' is only valid in the day-of-month and day-of-week fields, not {}",
                    spec.field.label()
                ),
            ));
        }
        if item == "*" {
            // the common case, without the general item parse
            bits |= (u64::MAX >> (63 - spec.step_end)) & (u64::MAX << spec.lo);
            continue;
        }
        for_each_value(parse_item(item, spec)?, |v| bits |= 1 << v);
    }
    Ok(bits)
}

fn parse_years(text: &str, spec: &Spec) -> Result<YearSet, ParseError> {
    let mut years = YearSet::default();
    for item in items(text) {
        if item.starts_with('l') {
            return Err(ParseError::at(
                spec.field,
                item,
                "'L' is only valid in the day-of-month and day-of-week fields, not year",
            ));
        }
        for_each_value(parse_item(item, spec)?, |v| {
            years.insert(i32::try_from(v).unwrap_or(0));
        });
    }
    Ok(years)
}

/// Day of month: plain values plus `L`, `L-n`, `nW` and `LW`.
fn parse_dom(text: &str, f: &mut Fields) -> Result<(), ParseError> {
    let at = |item: &str, reason: String| ParseError::at(Field::DayOfMonth, item, reason);
    for item in items(text) {
        if item == "l" {
            f.dom_last |= 1;
        } else if item == "lw" {
            f.dom_last_weekday = true;
        } else if let Some(offset_text) = item.strip_prefix("l-") {
            if !is_ascii_digits(offset_text) {
                return Err(at(
                    item,
                    format!(
                        "an 'L-' day-of-month item takes a plain offset 1..30 counted \
                         back from the month's final day (got '{item}')"
                    ),
                ));
            }
            let offset = ascii_digits_value(offset_text);
            if !(1..=30).contains(&offset) {
                return Err(at(
                    item,
                    format!(
                        "day-of-month 'L-' offset {offset} out of range [1, 30] (L-1 is \
                         the day before the month's final day; for the final day itself \
                         write L)"
                    ),
                ));
            }
            f.dom_last |= 1 << offset;
        } else if item.starts_with('l') {
            return Err(at(
                item,
                format!(
                    "'L' in the day-of-month field takes the forms L (the month's final \
                     day), L-<n> (n days before it) or LW (its last weekday), got '{item}'"
                ),
            ));
        } else if let Some(day_text) = item.strip_suffix('w') {
            if !is_ascii_digits(day_text) {
                return Err(at(
                    item,
                    format!(
                        "a 'W' day-of-month item takes a plain day 1..31 and fires on the \
                         weekday nearest that day (got '{item}')"
                    ),
                ));
            }
            let day = ascii_digits_value(day_text);
            if !(1..=31).contains(&day) {
                return Err(at(
                    item,
                    format!("day-of-month value {day} out of range [1, 31]"),
                ));
            }
            f.dom_nearest |= 1 << day;
        } else {
            for_each_value(parse_item(item, &DOM)?, |v| f.dom |= 1 << v);
        }
    }
    Ok(())
}

/// Day of week: plain values plus `L<d>` / `L<a>-<b>` and `<d>#<n>`.
fn parse_dow(text: &str, f: &mut Fields) -> Result<(), ParseError> {
    let at = |item: &str, reason: String| ParseError::at(Field::DayOfWeek, item, reason);
    let mut plain = 0u8;
    for item in items(text) {
        if item == "l" {
            return Err(at(
                item,
                "a bare 'L' is only valid in the day-of-month field; in day-of-week \
                 write L<n> (e.g. L5 = last Friday)"
                    .to_owned(),
            ));
        }
        if let Some(body) = item.strip_prefix('l') {
            // strictly numeric; a reversed range is legal and empty, and an
            // end of 0 stays 0 (both kept from the original)
            let (a, b) = match split_at_byte(body, b'-') {
                Some((a, b)) => (a, Some(b)),
                None => (body, None),
            };
            if !is_ascii_digits(a) || b.is_some_and(|b| !is_ascii_digits(b)) {
                return Err(at(
                    item,
                    format!(
                        "an L day-of-week item takes a day number or numeric range 0..7, \
                         got '{item}'"
                    ),
                ));
            }
            let lo = ascii_digits_value(a);
            let hi = b.map_or(lo, ascii_digits_value);
            for value in [lo, hi] {
                if !(0..=7).contains(&value) {
                    return Err(at(
                        item,
                        format!("day-of-week value {value} out of range [0, 7]"),
                    ));
                }
            }
            for v in lo..=hi {
                f.dow_last |= 1 << (v % 7);
            }
        } else if let Some((day_text, ordinal_text)) = split_at_byte(item, b'#') {
            if ordinal_text.contains('#') {
                return Err(at(
                    item,
                    format!("invalid day-of-week field '{item}': more than one '#'"),
                ));
            }
            let day = resolve(day_text, &DOW, item)?;
            if !is_ascii_digits(ordinal_text) {
                return Err(at(
                    item,
                    format!(
                        "a '#' day-of-week item is <weekday>#<n>, the month's n-th such \
                         weekday (5#3 = third Friday), got '{item}'"
                    ),
                ));
            }
            let ordinal = ascii_digits_value(ordinal_text);
            if !(1..=5).contains(&ordinal) {
                return Err(at(
                    item,
                    format!(
                        "day-of-week '#' ordinal {ordinal} out of range [1, 5] (no month \
                         holds more than five of one weekday)"
                    ),
                ));
            }
            let slot = usize::try_from(day % 7).unwrap_or(0);
            f.dow_nth[slot] |= 1 << ordinal;
        } else {
            for_each_value(parse_item(item, &DOW)?, |v| plain |= 1 << (v % 7));
        }
    }
    f.dow = plain;
    Ok(())
}

/// Lower-cases a field, borrowing when it has no upper-case letter (the
/// common case, which then costs no allocation).
fn lower(field: &str) -> Cow<'_, str> {
    if field
        .bytes()
        .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
    {
        Cow::Owned(field.to_lowercase())
    } else {
        Cow::Borrowed(field)
    }
}

/// The most fields any form has; one more is enough to know there are too
/// many.
const MAX_FIELDS: usize = 7;

/// The longest expression parsed, in bytes. Every second, minute and hour
/// listed one by one with all the years after 1970 is about 1,200 bytes;
/// past the cap the text is refused before it is split, so a schedule of
/// megabytes (a config may hold 16 MiB) costs nothing to turn down.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// The expression as an error message should quote it: as written, or,
/// past [`MAX_EXPRESSION_LEN`], its first 64 characters and `...` (an
/// error must not repeat megabytes of text into the log).
pub fn quotable(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_EXPRESSION_LEN {
        return Cow::Borrowed(text);
    }
    let end = text.char_indices().nth(64).map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{}...", &text[..end]))
}

/// Parses one expression. `hash_key` (the job name) resolves `H` items;
/// without one, `H` is an error.
pub(crate) fn parse(text: &str, hash_key: Option<&str>) -> Result<Parsed, ParseError> {
    if text.len() > MAX_EXPRESSION_LEN {
        return Err(ParseError::whole(format!(
            "the expression is {} bytes long, more than the limit of {MAX_EXPRESSION_LEN}",
            text.len()
        )));
    }
    let mut written: [&str; MAX_FIELDS] = [""; MAX_FIELDS];
    let mut count = 0;
    for field in fields_of(text) {
        if count < MAX_FIELDS {
            written[count] = field;
        }
        count += 1;
    }
    if count == 1 && written[0].starts_with('@') {
        let name = lower(written[0]);
        let Some(expansion) = macro_expansion(&name) else {
            return Err(unknown_nickname(&name));
        };
        let mut columns: [Cow<'_, str>; MAX_FIELDS] = Default::default();
        for (slot, field) in columns.iter_mut().zip(fields_of(expansion)) {
            *slot = Cow::Borrowed(field);
        }
        let fields = parse_columns(&columns[..5]).map_err(|e| {
            let raw: Vec<&str> = split_fields(expansion);
            e.with_hint(quartz_hint(&raw))
        })?;
        return Ok(Parsed {
            fields,
            source: name.into_owned(),
            resolved: None,
            seven: false,
        });
    }
    if !(5..=MAX_FIELDS).contains(&count) {
        return Err(ParseError::whole(format!(
            "expected 5 to 7 whitespace-separated cron fields (or a supported @-nickname), \
             got {count}"
        )));
    }
    let written = &written[..count];
    let source = written.join(" ");
    // the columns as written, lower-cased, for the dialect hint; only an
    // error needs them
    let hint = || {
        let raw: Vec<String> = written.iter().map(|f| f.to_lowercase()).collect();
        let raw: Vec<&str> = raw.iter().map(String::as_str).collect();
        quartz_hint(&raw)
    };
    let mut columns: [Cow<'_, str>; MAX_FIELDS] = Default::default();
    let mut resolved = None;
    if written
        .iter()
        .any(|f| f.bytes().any(|b| b == b'h' || b == b'H'))
    {
        let specs = field::layout(count);
        let mut expanded = Vec::with_capacity(count);
        for (text, spec) in written.iter().zip(specs) {
            expanded
                .push(hash::expand_field(text, spec, hash_key).map_err(|e| e.with_hint(hint()))?);
        }
        let joined = expanded.join(" ");
        if joined != source {
            resolved = Some(joined);
        }
        for (slot, field) in columns.iter_mut().zip(&expanded) {
            *slot = Cow::Owned(field.to_lowercase());
        }
    } else {
        for (slot, field) in columns.iter_mut().zip(written) {
            *slot = lower(field);
        }
    }
    let fields = parse_columns(&columns[..count]).map_err(|e| e.with_hint(hint()))?;
    Ok(Parsed {
        fields,
        source,
        resolved,
        seven: count == 7,
    })
}

/// The column parse proper, on lower-cased, `H`-free fields.
fn parse_columns(columns: &[Cow<'_, str>]) -> Result<Fields, ParseError> {
    let (second, rest) = if columns.len() == 7 {
        (columns[0].as_ref(), &columns[1..])
    } else {
        ("0", columns)
    };
    let year = match rest.get(5).map(AsRef::as_ref) {
        Some("*") | None => None,
        Some(text) => Some(text),
    };
    // '?' standing alone in a day field is Quartz for "unrestricted"; any
    // other '?' stays an error, so a mis-pasted Quartz layout fails loudly
    let dom = if rest[2] == "?" {
        "*"
    } else {
        rest[2].as_ref()
    };
    let dow = if rest[4] == "?" {
        "*"
    } else {
        rest[4].as_ref()
    };
    let mut f = Fields {
        seconds: parse_plain(second, &field::SECOND)?,
        minutes: parse_plain(&rest[0], &field::MINUTE)?,
        ..Fields::default()
    };
    f.hours = u32::try_from(parse_plain(&rest[1], &field::HOUR)?).unwrap_or(0);
    parse_dom(dom, &mut f)?;
    f.months = u16::try_from(parse_plain(&rest[3], &field::MONTH)?).unwrap_or(0);
    parse_dow(dow, &mut f)?;
    if let Some(year) = year {
        f.years = Some(parse_years(year, &field::YEAR)?);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Fields {
        parse(text, None).unwrap().fields
    }

    fn error(text: &str) -> ParseError {
        match parse(text, Some("x")) {
            Ok(_) => panic!("{text:?} parsed"),
            Err(e) => e,
        }
    }

    #[test]
    fn python_int_rules() {
        assert_eq!(py_int("05"), Some(5));
        assert_eq!(py_int("+5"), Some(5));
        assert_eq!(py_int("-5"), Some(-5));
        assert_eq!(py_int("1_0"), Some(10));
        assert_eq!(py_int("1__0"), None);
        assert_eq!(py_int("_1"), None);
        assert_eq!(py_int(""), None);
        assert_eq!(py_int("1.5"), None);
        assert_eq!(py_int("99999999999999999999999"), Some(i64::MAX));
    }

    #[test]
    fn plain_fields() {
        let f = fields("*/15 9-17 1,15 * mon-fri");
        assert_eq!(f.seconds, 1);
        assert_eq!(f.minutes, 1 | 1 << 15 | 1 << 30 | 1 << 45);
        assert_eq!(f.hours, 0b11_1111_1110_0000_0000);
        assert_eq!(f.dom, 1 << 1 | 1 << 15);
        assert_eq!(f.months, 0x1FFE);
        assert_eq!(f.dow, 0b0011_1110);
        assert_eq!(f.years, None);
    }

    #[test]
    fn weekday_quirks() {
        assert_eq!(fields("0 0 * * 7").dow, 1);
        assert_eq!(fields("0 0 * * sat-sun").dow, 1 | 1 << 6);
        assert_eq!(fields("0 0 * * 0-0").dow, 0x7F);
        assert_eq!(fields("0 0 * * */7").dow, 1);
        assert_eq!(fields("0 0 * * l7-3").dow_last, 0);
        assert_eq!(fields("0 0 * * l0-1").dow_last, 0b11);
        assert_eq!(fields("0 0 * * fri#3,7#1").dow_nth[5], 1 << 3);
        assert_eq!(fields("0 0 * * fri#3,7#1").dow_nth[0], 1 << 1);
    }

    #[test]
    fn day_of_month_forms() {
        let f = fields("0 0 1,15W,L,l-3,LW * *");
        assert_eq!(f.dom, 1 << 1);
        assert_eq!(f.dom_last, 1 | 1 << 3);
        assert_eq!(f.dom_nearest, 1 << 15);
        assert!(f.dom_last_weekday);
    }

    #[test]
    fn layouts_and_question_marks() {
        let p = parse("*/10 0 0 * * l5 2027", None).unwrap();
        assert!(p.seven);
        assert_eq!(p.fields.seconds, (0..6).fold(0, |a, i| a | 1 << (i * 10)));
        assert!(p.fields.years.unwrap().contains(2027));
        assert_eq!(fields("0 12 ? * ?"), fields("0 12 * * *"));
        assert_eq!(fields("0 0 1 1 * *").years, None);
    }

    #[test]
    fn source_and_resolution() {
        let p = parse("  */5   *\t* * *  ", None).unwrap();
        assert_eq!(p.source, "*/5 * * * *");
        assert!(p.resolved.is_none());
        let p = parse("@DAILY", None).unwrap();
        assert_eq!(p.source, "@daily");
        let p = parse("H H H H H", Some("report-gen")).unwrap();
        assert_eq!(p.resolved.as_deref(), Some("43 9 21 8 6"));
        let p = parse("*/5 10-12 * * MON", Some("x")).unwrap();
        assert_eq!(p.source, "*/5 10-12 * * MON");
        assert!(p.resolved.is_none());
        assert_eq!(
            parse("H * * * * * *", Some("tick")).unwrap().fields.seconds,
            1 << 9
        );
    }

    #[test]
    fn errors_locate_field_and_token() {
        let e = error("60 * * * *");
        assert_eq!(e.field(), Some(Field::Minute));
        assert_eq!(e.token(), Some("60"));
        assert_eq!(e.to_string(), "minute value 60 out of range [0, 59]");
        let e = error("0 0 * */12 *");
        assert_eq!(e.field(), Some(Field::Month));
        assert!(e.to_string().contains("escapes [1, 12]"));
        assert!(error("*/x * * * *").to_string().contains("step"));
        assert!(error("0 0 * * 8")
            .to_string()
            .contains("out of range [0, 7]"));
        assert!(error("* * * *").to_string().contains("got 4"));
        assert!(error("").to_string().contains("got 0"));
    }

    #[test]
    fn nickname_errors_explain() {
        assert!(error("@midnight").to_string().contains("classic crontab"));
        assert!(error("@reboot").to_string().contains("once at startup"));
        assert!(error("@minutely").to_string().contains("@hourly"));
    }

    #[test]
    fn quartz_hints() {
        assert!(error("0 */5 * * * ?").to_string().contains("Quartz"));
        assert!(error("0 15 10 ? * *")
            .to_string()
            .contains("append a trailing"));
        assert!(error("0 0 1#2 * *")
            .to_string()
            .contains("day-of-week field"));
        assert!(error("1#2 0 * * *")
            .to_string()
            .contains("day-of-week field"));
        assert!(error("0 0 * * 15w")
            .to_string()
            .contains("day-of-month field"));
        assert!(error("0 0 * * lw")
            .to_string()
            .contains("day-of-month field"));
        assert!(error("0 0 * 15w *")
            .to_string()
            .contains("day-of-month field"));
        assert!(error("0 0 * * 5L").to_string().contains("L<n>"));
        assert!(error("? 0 * * *").to_string().contains("day-of-month"));
        assert!(error("H#3 * * * *").to_string().contains("Quartz"));
        let jul = error("0 0 * * jul").to_string();
        assert!(!jul.contains("last-weekday"), "{jul}");
        let typo = error("0 0 * * wde").to_string();
        assert!(!typo.contains("Quartz"), "{typo}");
        assert!(error("0 0 * * 5L").hint().is_some());
        assert!(error("60 * * * *").hint().is_none());
    }

    #[test]
    fn extension_errors() {
        for bad in [
            "0 0 * * 5#0",
            "0 0 * * 5#6",
            "0 0 * * 1-2#3",
            "0 0 * * #3",
            "0 0 * * 5#",
            "0 0 * * 5#3#4",
            "0 0 * * 5#3/2",
            "0 0 * * mon#fri",
            "0 0 L-0 * *",
            "0 0 L-31 * *",
            "0 0 0W * *",
            "0 0 32W * *",
            "0 0 W * *",
            "0 0 15W/2 * *",
            "0 0 1-15W * *",
            "0 0 LW-3 * *",
            "0 0 l-x * *",
            "0 0 1,? * *",
        ] {
            assert!(parse(bad, None).is_err(), "{bad} parsed");
        }
    }
}
