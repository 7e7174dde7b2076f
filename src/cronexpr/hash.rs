//! The Jenkins-style `H` form: a value hashed from the job name.
//!
//! Each `H` item is rewritten to the plain values it stands for before the
//! ordinary parse runs, so matching and searching never see `H`. The slot
//! must be the one the original daemon picks for the same job name, or a
//! fleet moving from the original would see every hashed job shift: the
//! value is the first 8 bytes (big-endian) of SHA-256 over
//! `"<field label>\n<job name>"`, reduced modulo the range's span.

use sha2::{Digest, Sha256};

use super::error::{Field, ParseError};
use super::field::Spec;

/// The words of the refusal of an `H` field parsed without a hash key
/// (no job name to seed it). A client that shows the engine's errors
/// (the terminal dashboard's schedule preview) tells this refusal, of a schedule
/// sound for any named job, from a broken expression by these words.
pub const NEEDS_HASH_KEY: &str = "needs a hash key";

/// A rangeless `H` in day-of-month (bare or `H/n`) hashes over 1-28, so a
/// hashed day never lands on a date that short months lack; `H(1-31)`
/// opts back in to the full range.
const HASH_DOM_END: i64 = 28;

/// The stable number a hashed item draws from. Salting with the field
/// label makes `H H * * *` pick an unrelated minute and hour.
pub(crate) fn hash_value(hash_key: &str, label: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(label.as_bytes());
    hasher.update(b"\n");
    hasher.update(hash_key.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The pieces of `h`, `h/n`, `h(a-b)`, `h(a-b)/n` (lower-cased), or `None`
/// when the item has any other shape.
struct HashForm<'a> {
    range: Option<(&'a str, &'a str)>,
    step: Option<&'a str>,
}

fn is_ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn split_hash_form(low: &str) -> Option<HashForm<'_>> {
    let mut rest = low.strip_prefix('h')?;
    let mut range = None;
    if let Some(inner) = rest.strip_prefix('(') {
        let close = inner.find(')')?;
        let (a, b) = inner[..close].split_once('-')?;
        if !is_ascii_digits(a) || !is_ascii_digits(b) {
            return None;
        }
        range = Some((a, b));
        rest = &inner[close + 1..];
    }
    let step = if rest.is_empty() {
        None
    } else {
        let digits = rest.strip_prefix('/')?;
        if !is_ascii_digits(digits) {
            return None;
        }
        Some(digits)
    };
    Some(HashForm { range, step })
}

/// Parses a run of ASCII digits; absurdly long runs saturate, which the
/// range checks then reject.
fn digits_value(s: &str) -> i64 {
    s.bytes().fold(0i64, |acc, b| {
        acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
    })
}

/// One `H` item (`item` as written, `low` lower-cased) expanded to the
/// comma-joined values it hashes to.
fn expand_item(
    item: &str,
    low: &str,
    spec: &Spec,
    hash_key: Option<&str>,
) -> Result<String, ParseError> {
    let label = spec.field.label();
    if spec.field == Field::Year {
        return Err(ParseError::at(
            spec.field,
            low,
            "'H' is not supported in the year field (a hashed year would \
             pin the schedule to one arbitrary year)",
        ));
    }
    let Some(form) = split_hash_form(low) else {
        return Err(ParseError::at(
            spec.field,
            low,
            format!(
                "invalid {label} field '{item}': an 'H' item takes the forms H, \
                 H/n, H(a-b) or H(a-b)/n (numeric range only)"
            ),
        ));
    };
    let Some(hash_key) = hash_key else {
        return Err(ParseError::at(
            spec.field,
            low,
            format!(
                "'H' in the {label} field {NEEDS_HASH_KEY} (the job name), which \
                 this context does not supply"
            ),
        ));
    };
    let (start, end) = match form.range {
        Some((a, b)) => {
            let (start, end) = (digits_value(a), digits_value(b));
            for value in [start, end] {
                if !(spec.lo..=spec.hi).contains(&value) {
                    return Err(ParseError::at(
                        spec.field,
                        low,
                        format!(
                            "{label} value {value} out of range [{}, {}]",
                            spec.lo, spec.hi
                        ),
                    ));
                }
            }
            if start > end {
                return Err(ParseError::at(
                    spec.field,
                    low,
                    format!("{label} range start {start} > end {end}"),
                ));
            }
            (start, end)
        }
        None if spec.field == Field::DayOfMonth => (spec.lo, HASH_DOM_END),
        None => (spec.lo, spec.step_end),
    };
    let span = end - start + 1;
    let value = hash_value(hash_key, label);
    // span and step are small positive numbers here, so the conversions
    // cannot fail; the fallbacks only keep the arithmetic total.
    let modulo =
        |m: i64| -> i64 { i64::try_from(value % u64::try_from(m).unwrap_or(1)).unwrap_or(0) };
    let Some(step_text) = form.step else {
        return Ok((start + modulo(span)).to_string());
    };
    let step = digits_value(step_text);
    if step <= 0 {
        return Err(ParseError::at(
            spec.field,
            low,
            format!("{label} step must be positive, got {step}"),
        ));
    }
    if step > span {
        return Err(ParseError::at(
            spec.field,
            low,
            format!(
                "{label} step {step} exceeds the H range's span of {span} (the \
                 hashed offset could fall past the range's end)"
            ),
        ));
    }
    let first = start + modulo(step);
    let values: Vec<String> = (first..=end)
        .step_by(usize::try_from(step).unwrap_or(1))
        .map(|v| v.to_string())
        .collect();
    Ok(values.join(","))
}

/// One field with every `H` item replaced by its values; other items pass
/// through byte-identical, so a field without `H` is returned unchanged.
pub(crate) fn expand_field(
    text: &str,
    spec: &Spec,
    hash_key: Option<&str>,
) -> Result<String, ParseError> {
    if !text.contains(['h', 'H']) {
        return Ok(text.to_owned());
    }
    let mut out = Vec::new();
    for item in text.split(',') {
        let low = item.to_lowercase();
        if low.starts_with('h') {
            out.push(expand_item(item, &low, spec, hash_key)?);
        } else {
            out.push(item.to_owned());
        }
    }
    Ok(out.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronexpr::field::{DOM, DOW, MINUTE, YEAR};

    #[test]
    fn hash_value_is_sha256_of_label_and_key() {
        // sha256("minute\nreport-gen") starts with bytes whose u64 is
        // 43 mod 60: the slot the original pins for this name.
        assert_eq!(hash_value("report-gen", "minute") % 60, 43);
        assert_eq!(hash_value("report-gen", "hour") % 24, 9);
    }

    #[test]
    fn forms_expand() {
        assert_eq!(
            expand_field("H/15", &MINUTE, Some("x")).unwrap(),
            "1,16,31,46"
        );
        assert_eq!(
            expand_field("5,h", &MINUTE, Some("report-gen")).unwrap(),
            "5,43"
        );
        let ranged = expand_field("H(0-29)", &MINUTE, Some("x")).unwrap();
        let v: i64 = ranged.parse().unwrap();
        assert!((0..=29).contains(&v));
        let both = expand_field("H(10-49)/10", &MINUTE, Some("x")).unwrap();
        assert_eq!(both.split(',').count(), 4);
        // untouched without H
        assert_eq!(expand_field("*/5", &MINUTE, Some("x")).unwrap(), "*/5");
    }

    #[test]
    fn bare_dom_stays_within_28() {
        for key in ["a", "b", "c", "backup", "report-gen", "x7", "zz"] {
            let day: i64 = expand_field("H", &DOM, Some(key)).unwrap().parse().unwrap();
            assert!((1..=28).contains(&day), "{key}: {day}");
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let e = |t: &str, s: &Spec, k: Option<&str>| expand_field(t, s, k).unwrap_err().to_string();
        assert!(e("H", &MINUTE, None).contains("hash key"));
        assert!(e("H", &YEAR, Some("x")).contains("year field"));
        assert!(e("H-5", &MINUTE, Some("x")).contains("forms"));
        assert!(e("H(0-3)/6", &MINUTE, Some("x")).contains("exceeds"));
        assert!(e("H(9-2)", &MINUTE, Some("x")).contains("start 9 > end 2"));
        assert!(e("H(0-99)", &MINUTE, Some("x")).contains("out of range"));
        assert!(e("H/0", &MINUTE, Some("x")).contains("positive"));
        assert!(e("H(0-8)", &DOW, Some("x")).contains("out of range [0, 7]"));
    }
}
