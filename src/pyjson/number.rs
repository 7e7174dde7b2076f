//! Python's `int()` and `float()`, of text and of JSON values. The
//! original reads numbers both ways: the client parses `cursor advance`
//! values, `--permits`, `--ttl`, `--timeout` and `--map-index` with
//! `int(text)`/`float(text)`, and the server takes `float(body["ttl"])`
//! and `int(body["permits"])` of whatever JSON a job sent. So `" 7 "`,
//! `"1_000"`, `"١٢"` (Arabic-Indic digits), `"inf"` and `"-nan"` must read
//! here as they read there, and a list must fail as a `TypeError` does.

use super::PyJson;

/// The most digits Python 3.11 converts between text and an int
/// (`sys.get_int_max_str_digits()` default); a longer literal is a
/// `ValueError` there, in `int()` and in `json.loads` alike.
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
fn decimal_digit(c: char) -> Option<u8> {
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

/// Why `int(text)` refused a text (both are Python's `ValueError`).
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
/// any size survive to a JSON body as Python would send them.
pub fn int_of_text(text: &str) -> Result<String, IntError> {
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
pub fn float_of_text(text: &str) -> Option<f64> {
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

/// Why a conversion of [`PyJson::to_py_float`] or [`PyJson::to_py_int`]
/// failed, by the Python exception it raises (the callers word each
/// differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyConvError {
    /// `TypeError` (None, a list, a dict).
    Type,
    /// `ValueError` (a string that is not a number, `int(nan)`).
    Value,
    /// `OverflowError` (an int too big for a float, `int(inf)`).
    Overflow,
}

impl PyJson {
    /// An `int` of canonical decimal text (as [`int_of_text`] returns
    /// it): 128 bits when it fits, else kept as its digits (the only case
    /// that allocates, which the parser's every integer relies on).
    pub fn int_from_decimal(digits: &str) -> PyJson {
        match digits.parse::<i128>() {
            Ok(n) => PyJson::Int(n),
            Err(_) => PyJson::BigInt(digits.to_owned()),
        }
    }

    /// Python's `float(x)`.
    pub fn to_py_float(&self) -> Result<f64, PyConvError> {
        match self {
            PyJson::Null | PyJson::List(_) | PyJson::Dict(_) => Err(PyConvError::Type),
            PyJson::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
            // Both casts round to nearest, ties to even, as Python does.
            PyJson::Int(n) => Ok(*n as f64),
            PyJson::BigInt(digits) => digits
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or(PyConvError::Overflow),
            PyJson::Float(x) => Ok(*x),
            PyJson::Str(s) => s.as_str().and_then(float_of_text).ok_or(PyConvError::Value),
        }
    }

    /// Python's `int(x)`, saturated to the 128-bit range (an `int` that
    /// wide only ever fails a range check anyway).
    pub fn to_py_int(&self) -> Result<i128, PyConvError> {
        let saturated = |negative: bool| if negative { i128::MIN } else { i128::MAX };
        match self {
            PyJson::Null | PyJson::List(_) | PyJson::Dict(_) => Err(PyConvError::Type),
            PyJson::Bool(b) => Ok(i128::from(*b)),
            PyJson::Int(n) => Ok(*n),
            PyJson::BigInt(digits) => Ok(saturated(digits.starts_with('-'))),
            PyJson::Float(x) if x.is_nan() => Err(PyConvError::Value),
            PyJson::Float(x) if x.is_infinite() => Err(PyConvError::Overflow),
            // `as` truncates toward zero and saturates.
            PyJson::Float(x) => Ok(*x as i128),
            PyJson::Str(s) => {
                let digits = s
                    .as_str()
                    .and_then(|text| int_of_text(text).ok())
                    .ok_or(PyConvError::Value)?;
                Ok(digits
                    .parse::<i128>()
                    .unwrap_or_else(|_| saturated(digits.starts_with('-'))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson::loads;

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
            assert_eq!(int_of_text(text).ok().as_deref(), *want, "int({text:?})");
        }
    }

    #[test]
    fn int_refuses_more_digits_than_python_converts() {
        let long = "1".repeat(INT_MAX_STR_DIGITS);
        assert_eq!(int_of_text(&long).as_deref(), Ok(long.as_str()));
        let longer = "1".repeat(INT_MAX_STR_DIGITS + 1);
        assert_eq!(int_of_text(&longer), Err(IntError::TooManyDigits(4301)));
        // Underscores are not digits.
        let spaced = format!("{}_1", "1".repeat(INT_MAX_STR_DIGITS - 1));
        assert!(int_of_text(&spaced).is_ok());
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
            let got = float_of_text(text).map(crate::pyfmt::py_float);
            assert_eq!(got.as_deref(), *want, "float({text:?})");
        }
    }

    #[test]
    fn values_convert_as_python_s_float_and_int() {
        use PyConvError::*;
        let float = |s: &str| loads(s).expect("loads").to_py_float();
        assert_eq!(float("null"), Err(Type));
        assert_eq!(float("[]"), Err(Type));
        assert_eq!(float("{}"), Err(Type));
        assert_eq!(float("true"), Ok(1.0));
        assert_eq!(float("3"), Ok(3.0));
        assert_eq!(float("2.5"), Ok(2.5));
        assert_eq!(float("\"5\""), Ok(5.0));
        assert_eq!(float("\" -1_000.5e1 \""), Ok(-10005.0));
        assert_eq!(float("\"Infinity\""), Ok(f64::INFINITY));
        assert_eq!(float("\"-inf\""), Ok(f64::NEG_INFINITY));
        assert!(float("\"nan\"").is_ok_and(f64::is_nan));
        assert_eq!(float("\"\\u0661.5\""), Ok(1.5));
        assert_eq!(float("\"\\u001c1\""), Err(Value));
        assert_eq!(float("\"\\ud800\""), Err(Value));
        assert_eq!(float("\"x\""), Err(Value));
        assert_eq!(float("\"1__0\""), Err(Value));
        assert_eq!(float("\"_1\""), Err(Value));
        assert_eq!(float("\"\""), Err(Value));
        assert_eq!(float("\".\""), Err(Value));
        assert_eq!(float("\".5\""), Ok(0.5));
        assert_eq!(float("\"5.\""), Ok(5.0));
        assert_eq!(float(&"9".repeat(400)), Err(Overflow));
        assert_eq!(float(&"9".repeat(300)), Ok(1e300));
        let int = |s: &str| loads(s).expect("loads").to_py_int();
        assert_eq!(int("null"), Err(Type));
        assert_eq!(int("true"), Ok(1));
        assert_eq!(int("2.7"), Ok(2));
        assert_eq!(int("-2.7"), Ok(-2));
        assert_eq!(int("\" 12 \""), Ok(12));
        assert_eq!(int("\"1_000\""), Ok(1000));
        assert_eq!(int("\"\\u0661\\u0662\""), Ok(12));
        assert_eq!(int("\"\\u001f1\""), Err(Value));
        assert_eq!(int("\"5.0\""), Err(Value));
        assert_eq!(int("\"\""), Err(Value));
        assert_eq!(int("\"1_\""), Err(Value));
        assert_eq!(int("NaN"), Err(Value));
        assert_eq!(int("Infinity"), Err(Overflow));
        assert_eq!(int(&"9".repeat(50)), Ok(i128::MAX));
        assert_eq!(int(&format!("-{}", "9".repeat(50))), Ok(i128::MIN));
        assert_eq!(int(&format!("\"-{}\"", "9".repeat(50))), Ok(i128::MIN));
        assert_eq!(int("1e300"), Ok(i128::MAX));
    }

    #[test]
    fn decimal_text_becomes_an_int_of_any_width() {
        assert_eq!(PyJson::int_from_decimal("-7"), PyJson::Int(-7));
        let wide = "9".repeat(40);
        assert_eq!(PyJson::int_from_decimal(&wide), PyJson::BigInt(wide));
    }
}
