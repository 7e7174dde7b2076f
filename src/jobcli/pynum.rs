//! Python's `int(text)` and `float(text)` readings of a command-line
//! argument: the original parses `cursor advance` values, `--permits`,
//! `--ttl`, `--timeout` and `--map-index` with them, so `" 7 "`, `"1_000"`,
//! `"١٢"` (Arabic-Indic digits), `"inf"` and `"-nan"` must read here as
//! they read there.

/// The most digits Python 3.11 converts from text to an int
/// (`sys.get_int_max_str_digits()` default); a longer literal is a
/// `ValueError` there.
pub const INT_MAX_STR_DIGITS: usize = 4300;

/// The code points of the "0" of every run of ten Unicode decimal digits
/// (category Nd) that Python's `int()` and `float()` accept, from Python
/// 3.11's Unicode 14 database (every run is ten contiguous digits 0-9).
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The decimal value of a Unicode decimal digit (any script), as Python's
/// `unicodedata.decimal` gives it.
pub fn decimal_digit(c: char) -> Option<u8> {
    let cp = c as u32;
    if c.is_ascii_digit() {
        return Some((cp - 0x30) as u8);
    }
    if cp < 0x660 {
        return None;
    }
    // The largest zero at or below the code point; the digit belongs to
    // its run when it lies within the ten that follow.
    let idx = DIGIT_ZEROS.partition_point(|&z| z <= cp);
    let zero = DIGIT_ZEROS[idx.checked_sub(1)?];
    let value = cp - zero;
    (value < 10).then_some(value as u8)
}

/// `text` without the leading and trailing whitespace Python's `int()`
/// and `float()` ignore: ASCII space, tab, LF, VT, FF and CR, and the
/// non-ASCII Unicode spaces (U+0085, U+00A0, U+3000, ...). That is Rust's
/// White_Space set exactly; note `str.isspace()` also counts U+001C to
/// U+001F, which these two do not strip.
fn strip(text: &str) -> &str {
    text.trim_matches(char::is_whitespace)
}

/// Why `int(text)` refused a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntError {
    /// Not an integer literal (`invalid literal for int() with base 10`).
    Invalid,
    /// More than [`INT_MAX_STR_DIGITS`] digits; carries the digit count.
    TooManyDigits(usize),
}

/// Python's `int(text)` (base 10): surrounding whitespace, one sign,
/// digits of any script with single `_` between digits. Returns the value
/// as canonical decimal text (no leading zeros, no `-0`), so integers of
/// any size survive to the JSON body as Python would send them.
pub fn py_int(text: &str) -> Result<String, IntError> {
    let body = strip(text);
    let (negative, digits) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let ascii = ascii_digits(digits).ok_or(IntError::Invalid)?;
    if ascii.is_empty() {
        return Err(IntError::Invalid);
    }
    if ascii.len() > INT_MAX_STR_DIGITS {
        return Err(IntError::TooManyDigits(ascii.len()));
    }
    let trimmed = ascii.trim_start_matches('0');
    if trimmed.is_empty() {
        return Ok("0".to_owned());
    }
    Ok(if negative {
        format!("-{trimmed}")
    } else {
        trimmed.to_owned()
    })
}

/// `digits` as ASCII digits when it is one or more decimal digits (any
/// script) with single underscores between them; None otherwise.
fn ascii_digits(digits: &str) -> Option<String> {
    let mut out = String::with_capacity(digits.len());
    let mut after_digit = false;
    let mut pending_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if !after_digit || pending_underscore {
                return None;
            }
            pending_underscore = true;
            continue;
        }
        let d = decimal_digit(c)?;
        out.push(char::from(b'0' + d));
        after_digit = true;
        pending_underscore = false;
    }
    if pending_underscore {
        return None;
    }
    Some(out)
}

/// Python's `float(text)`: surrounding whitespace; `inf`, `infinity` and
/// `nan` in any case with an optional sign; decimal and exponent forms
/// with digits of any script and single `_` between digits. None when
/// Python raises `ValueError`.
pub fn py_float(text: &str) -> Option<f64> {
    let body = strip(text);
    let mut ascii = String::with_capacity(body.len());
    let chars: Vec<char> = body.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            // An underscore is only allowed between two digits.
            let before = i.checked_sub(1).and_then(|j| chars.get(j));
            let after = chars.get(i + 1);
            let digit = |c: Option<&char>| c.and_then(|c| decimal_digit(*c)).is_some();
            if !(digit(before) && digit(after)) {
                return None;
            }
            continue;
        }
        if let Some(d) = decimal_digit(c) {
            ascii.push(char::from(b'0' + d));
        } else if c.is_ascii() {
            ascii.push(c);
        } else {
            return None;
        }
    }
    let unsigned = ascii
        .strip_prefix(['+', '-'])
        .unwrap_or(&ascii)
        .to_ascii_lowercase();
    let word = matches!(unsigned.as_str(), "inf" | "infinity" | "nan");
    // Rust's parser takes the same decimal grammar as Python's (digits,
    // optional fraction, optional exponent, at least one digit in the
    // mantissa); only the spelled-out words are checked above, since
    // Rust knows them too but the grammar must not admit anything else.
    if !word
        && !unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
    {
        return None;
    }
    ascii.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_of_every_script_read_as_python_reads_them() {
        assert_eq!(decimal_digit('7'), Some(7));
        assert_eq!(decimal_digit('\u{663}'), Some(3)); // Arabic-Indic three
        assert_eq!(decimal_digit('\u{ff19}'), Some(9)); // fullwidth nine
        assert_eq!(decimal_digit('\u{1fbf9}'), Some(9)); // segmented nine
        assert_eq!(decimal_digit('\u{1d7ce}'), Some(0)); // math bold zero
        assert_eq!(decimal_digit('\u{1d7d7}'), Some(9));
        assert_eq!(decimal_digit('\u{1d7d8}'), Some(0)); // the next run
        assert_eq!(decimal_digit('\u{b2}'), None); // superscript two: No, not Nd
        assert_eq!(decimal_digit('\u{2160}'), None); // Roman numeral: Nl
        assert_eq!(decimal_digit('a'), None);
        assert_eq!(decimal_digit('\u{65f}'), None); // just below a run
        assert_eq!(decimal_digit('\u{66a}'), None); // just after a run
        assert_eq!(decimal_digit('\u{10ffff}'), None);
    }

    #[test]
    fn whitespace_is_what_python_strips() {
        for c in [
            '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}',
            '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
        ] {
            assert_eq!(strip(&format!("{c}1{c}")), "1", "{c:?}");
        }
        for c in [
            'a', '\u{0}', '\u{1c}', '\u{1f}', '\u{200b}', '\u{feff}', '_',
        ] {
            assert_ne!(strip(&format!("{c}1{c}")), "1", "{c:?}");
        }
    }

    /// (text, Python's `int(text)` or None for ValueError); the expected
    /// values were taken from CPython 3.11.
    const INTS: &[(&str, Option<&str>)] = &[
        ("0", Some("0")),
        ("7", Some("7")),
        ("007", Some("7")),
        ("-0", Some("0")),
        ("+0", Some("0")),
        ("-007", Some("-7")),
        ("+5", Some("5")),
        (" 42 ", Some("42")),
        ("\t\n42\u{3000}", Some("42")),
        ("\u{85}1\u{a0}", Some("1")),
        ("\u{1c}1", None),
        ("1\u{1f}", None),
        ("1\u{3000}1", None),
        ("1_000", Some("1000")),
        ("1_0_0", Some("100")),
        ("-1_0", Some("-10")),
        ("0_0", Some("0")),
        ("\u{661}\u{662}", Some("12")),
        ("\u{ff11}\u{ff12}", Some("12")),
        ("1\u{662}", Some("12")),
        ("9223372036854775808", Some("9223372036854775808")),
        (
            "-123456789012345678901234567890",
            Some("-123456789012345678901234567890"),
        ),
        ("", None),
        (" ", None),
        ("-", None),
        ("+", None),
        ("--1", None),
        ("+-1", None),
        ("_1", None),
        ("1_", None),
        ("1__0", None),
        ("-_1", None),
        ("1 0", None),
        ("1.0", None),
        ("1e3", None),
        ("0x10", None),
        ("inf", None),
        ("nan", None),
        ("abc", None),
        ("١_٢", Some("12")),
        ("\u{b2}", None),
        ("\u{200b}1", None),
        ("1\u{0}", None),
    ];

    #[test]
    fn int_reads_as_python() {
        for (text, want) in INTS {
            assert_eq!(py_int(text).ok().as_deref(), *want, "int({text:?})");
        }
    }

    #[test]
    fn int_refuses_more_digits_than_python_converts() {
        let long = "1".repeat(INT_MAX_STR_DIGITS);
        assert_eq!(py_int(&long).as_deref(), Ok(long.as_str()));
        let longer = "1".repeat(INT_MAX_STR_DIGITS + 1);
        assert_eq!(py_int(&longer), Err(IntError::TooManyDigits(4301)));
        // Underscores are not digits.
        let spaced = format!("{}_1", "1".repeat(INT_MAX_STR_DIGITS - 1));
        assert!(py_int(&spaced).is_ok());
    }

    /// (text, Python's `repr(float(text))` or None for ValueError); the
    /// expected values were taken from CPython 3.11.
    const FLOATS: &[(&str, Option<&str>)] = &[
        ("0", Some("0.0")),
        ("-0", Some("-0.0")),
        ("1.5", Some("1.5")),
        (" 1.5\n", Some("1.5")),
        (".5", Some("0.5")),
        ("5.", Some("5.0")),
        ("-.5", Some("-0.5")),
        ("+.5e1", Some("5.0")),
        ("1e5", Some("100000.0")),
        ("1E5", Some("100000.0")),
        ("1e-5", Some("1e-05")),
        ("1.e5", Some("100000.0")),
        ("1e+16", Some("1e+16")),
        ("1e400", Some("inf")),
        ("-1e400", Some("-inf")),
        ("1e-400", Some("0.0")),
        ("1_000.000_1", Some("1000.0001")),
        ("1_0e1_0", Some("100000000000.0")),
        ("inf", Some("inf")),
        ("INF", Some("inf")),
        ("-Inf", Some("-inf")),
        ("+infinity", Some("inf")),
        ("-InFiNiTy", Some("-inf")),
        ("nan", Some("nan")),
        ("-NaN", Some("nan")),
        ("+nan", Some("nan")),
        (" nan ", Some("nan")),
        ("\u{2000}-1.5\u{85}", Some("-1.5")),
        ("\u{1c}1.5", None),
        ("\u{661}.\u{665}", Some("1.5")),
        ("\u{ff11}e\u{ff12}", Some("100.0")),
        ("007", Some("7.0")),
        ("9007199254740993", Some("9007199254740992.0")),
        ("0.1", Some("0.1")),
        ("", None),
        (" ", None),
        (".", None),
        ("e5", None),
        ("1e", None),
        ("1e+", None),
        ("1.5.5", None),
        ("--1", None),
        ("+-1", None),
        ("_1", None),
        ("1_", None),
        ("1__0", None),
        ("1_.5", None),
        ("1._5", None),
        ("1_e5", None),
        ("1e_5", None),
        ("in_f", None),
        ("infinit", None),
        ("infinityy", None),
        ("nana", None),
        ("0x10", None),
        ("1 0", None),
        ("1,5", None),
        ("abc", None),
        ("\u{b2}", None),
        ("1\u{0}", None),
        ("i\u{ff4e}f", None),
    ];

    #[test]
    fn float_reads_as_python() {
        for (text, want) in FLOATS {
            let got = py_float(text).map(crate::pyfmt::py_float);
            assert_eq!(got.as_deref(), *want, "float({text:?})");
        }
    }
}
