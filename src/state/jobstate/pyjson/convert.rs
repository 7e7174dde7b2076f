//! Python's `float(x)` and `int(x)` of a JSON value.

use super::string::py_isspace;
use super::PyJson;
use super::MAX_INT_DIGITS;

/// Why a conversion of [`PyJson::to_py_float`] or [`PyJson::to_py_int`]
/// failed, by the Python exception it raises.
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
            PyJson::Str(s) => s
                .as_str()
                .and_then(parse_py_float_text)
                .ok_or(PyConvError::Value),
        }
    }

    /// Python's `int(x)`, saturated to the 128-bit range (an `int` that
    /// wide only ever fails a range check anyway).
    pub fn to_py_int(&self) -> Result<i128, PyConvError> {
        match self {
            PyJson::Null | PyJson::List(_) | PyJson::Dict(_) => Err(PyConvError::Type),
            PyJson::Bool(b) => Ok(i128::from(*b)),
            PyJson::Int(n) => Ok(*n),
            PyJson::BigInt(digits) => Ok(if digits.starts_with('-') {
                i128::MIN
            } else {
                i128::MAX
            }),
            PyJson::Float(x) if x.is_nan() => Err(PyConvError::Value),
            PyJson::Float(x) if x.is_infinite() => Err(PyConvError::Overflow),
            // `as` truncates toward zero and saturates.
            PyJson::Float(x) => Ok(*x as i128),
            PyJson::Str(s) => s
                .as_str()
                .and_then(parse_py_int_text)
                .ok_or(PyConvError::Value),
        }
    }
}

/// Python's `float(str)` of ASCII text: surrounding whitespace allowed,
/// a sign, digits with single `_` between them, a fraction, an exponent,
/// or `inf`/`infinity`/`nan` in any case.
fn parse_py_float_text(text: &str) -> Option<f64> {
    let t = text.trim_matches(|c: char| py_isspace(u32::from(c)));
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan" {
        return Some(f64::NAN);
    }
    // Underscores only between digits.
    let bytes = body.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            let before = i.checked_sub(1).and_then(|j| bytes.get(j));
            let after = bytes.get(i + 1);
            if !before.is_some_and(u8::is_ascii_digit) || !after.is_some_and(u8::is_ascii_digit) {
                return None;
            }
        }
    }
    let plain: String = body.chars().filter(|c| *c != '_').collect();
    let valid = {
        let b = plain.as_bytes();
        let mut i = 0;
        let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        i += int_digits;
        let mut frac_digits = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            i += frac_digits;
        }
        let mut ok = int_digits + frac_digits > 0;
        if ok && matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            ok = exp_digits > 0;
            i += exp_digits;
        }
        ok && i == b.len()
    };
    if !valid {
        return None;
    }
    plain.parse::<f64>().ok().map(|x| sign * x)
}

/// Python's `int(str)` in base 10 of ASCII text (saturated to 128 bits).
fn parse_py_int_text(text: &str) -> Option<i128> {
    let t = text.trim_matches(|c: char| py_isspace(u32::from(c)));
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = body.as_bytes();
    if bytes.is_empty()
        || !bytes.first().is_some_and(u8::is_ascii_digit)
        || !bytes.last().is_some_and(u8::is_ascii_digit)
    {
        return None;
    }
    let mut value: i128 = 0;
    let mut digits = 0;
    let mut previous_underscore = false;
    for b in bytes {
        match b {
            b'_' if !previous_underscore => previous_underscore = true,
            b'0'..=b'9' => {
                previous_underscore = false;
                digits += 1;
                let d = i128::from(b - b'0');
                value = value.saturating_mul(10).saturating_add(d);
            }
            _ => return None,
        }
    }
    if digits > MAX_INT_DIGITS {
        return None;
    }
    Some(if negative { -value } else { value })
}
