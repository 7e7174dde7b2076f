//! The pure rules of the job-facing state, with the original's texts:
//! the fleet portability gate and size limit of values, Python's
//! comparison and equality (a cursor only moves forward, judged as
//! Python judges `value > current`), scope validation and the
//! idempotency expiry. No I/O.

use super::error::JobStateError;
use crate::pyjson::{Dumps, PyDict, PyJson, PyString, PyText};
use std::cmp::Ordering;

/// The deepest nesting of a stored document every node can write back
/// (the original's `_json.MAX_DEPTH`).
pub const MAX_DEPTH: usize = 128;

/// The smallest integer every node writes and reads alike.
pub const INT_MIN: i128 = -(1 << 63);

/// The largest one.
pub const INT_MAX: i128 = (1 << 64) - 1;

/// The dict levels the store wraps a value in before writing it (the
/// record and the body), counted by the depth bound.
const STORE_WRAPPER_DEPTH: usize = 2;

/// Why a value is not portable across a fleet of mixed nodes: the
/// original's `UnsupportedValue` text (it is also the text of the 400
/// when a document or record write meets one).
pub fn portability_error(value: &PyJson) -> Option<String> {
    walk(value, 0).err()
}

/// The portability verdict of `value` once the store wraps it two dicts
/// deep, as the original judges a job's value before writing it.
pub fn stored_portability_error(value: &PyJson) -> Option<String> {
    walk(value, STORE_WRAPPER_DEPTH).err()
}

fn depth_error() -> String {
    format!(
        "nesting depth exceeds the portable bound of {MAX_DEPTH} (a deeper document is \
         writable by the stdlib encoder but a hard error on orjson's, so it could never be \
         rewritten by every node)"
    )
}

fn surrogate_error(cp: u32) -> String {
    format!(
        "string containing lone surrogate {} is not portable across the fleet (the stdlib \
         writes an escape orjson can neither emit nor parse)",
        PyString::from_code_points([cp]).repr()
    )
}

/// The original's `ensure_portable(value, depth)`: depth-first, in
/// order, the first violation wins.
fn walk(value: &PyJson, depth: usize) -> Result<(), String> {
    match value {
        PyJson::Null | PyJson::Bool(_) => Ok(()),
        PyJson::Float(x) if !x.is_finite() => Err(format!(
            "non-finite float {} is not portable across the fleet (NaN/Infinity serializes \
             differently with and without orjson)",
            crate::pyfmt::py_float(*x)
        )),
        PyJson::Float(_) => Ok(()),
        PyJson::Int(n) if *n < INT_MIN || *n > INT_MAX => Err(int_error(&n.to_string())),
        PyJson::Int(_) => Ok(()),
        PyJson::BigInt(digits) => Err(int_error(digits)),
        PyJson::Str(s) => match s.lone_surrogate() {
            Some(cp) => Err(surrogate_error(cp)),
            None => Ok(()),
        },
        PyJson::List(items) => {
            if depth >= MAX_DEPTH {
                return Err(depth_error());
            }
            items.iter().try_for_each(|item| walk(item, depth + 1))
        }
        PyJson::Dict(dict) => {
            if depth >= MAX_DEPTH {
                return Err(depth_error());
            }
            for (key, item) in dict.iter() {
                if let Some(cp) = key.lone_surrogate() {
                    return Err(surrogate_error(cp));
                }
                walk(item, depth + 1)?;
            }
            Ok(())
        }
    }
}

fn int_error(digits: &str) -> String {
    format!(
        "integer {digits} is outside the portable signed/unsigned 64-bit range \
         [-9223372036854775808, 18446744073709551615]"
    )
}

/// The bytes of `value` as the original's default install measures it:
/// compact JSON, non-ASCII escaped (`\uXXXX`).
pub fn encoded_len(value: &PyJson) -> usize {
    value.dumps(Dumps::COMPACT).len()
}

/// The original's `_check_size(kind, value, max_bytes)`: the portability
/// gate first (always, even with no limit), 400
/// `"{kind} is not portable across the fleet: {detail}"`; then, with
/// `max_bytes > 0`, the size, 413
/// `"{kind} of {n} bytes exceeds the configured limit of {max} bytes"`.
/// `kind` is `value` (KV set) or `cursor value` (cursor advance).
pub fn check_size(kind: &str, value: &PyJson, max_bytes: u64) -> Result<(), JobStateError> {
    if let Some(detail) = stored_portability_error(value) {
        return Err(JobStateError::BadRequest(format!(
            "{kind} is not portable across the fleet: {detail}"
        )));
    }
    let n = encoded_len(value);
    if max_bytes > 0 && n as u64 > max_bytes {
        return Err(JobStateError::TooLarge(format!(
            "{kind} of {n} bytes exceeds the configured limit of {max_bytes} bytes"
        )));
    }
    Ok(())
}

/// The original's `_require_scope`: a scope is matched exactly, never
/// normalized, so an empty or whitespace-only one, or one with leading
/// or trailing whitespace (Python's `str.strip()` whitespace), is a 400.
pub fn require_scope(scope: &(impl PyText + ?Sized)) -> Result<(), JobStateError> {
    let scope = PyString::of(scope);
    let stripped = scope.strip();
    if stripped.is_empty() {
        return Err(JobStateError::BadRequest(
            "a non-empty scope is required".to_owned(),
        ));
    }
    if stripped != scope {
        return Err(JobStateError::BadRequest(format!(
            "scope {} carries leading or trailing whitespace; scopes are isolation boundaries \
             and are matched exactly (rename the job, or pass the exact scope string)",
            scope.repr()
        )));
    }
    Ok(())
}

/// Python raised `TypeError` comparing two values with `<`/`>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incomparable;

/// A number as Python's numeric tower compares it.
enum Num<'a> {
    Int(i128),
    Big(&'a str),
    Float(f64),
}

fn as_num(value: &PyJson) -> Option<Num<'_>> {
    match value {
        PyJson::Bool(b) => Some(Num::Int(i128::from(*b))),
        PyJson::Int(n) => Some(Num::Int(*n)),
        PyJson::BigInt(d) => Some(Num::Big(d)),
        PyJson::Float(x) => Some(Num::Float(*x)),
        _ => None,
    }
}

/// Orders two decimal integer texts (optional leading `-`, no leading
/// zeros) by value.
fn cmp_decimal(a: &str, b: &str) -> Ordering {
    let (an, ad) = a.strip_prefix('-').map_or((false, a), |d| (true, d));
    let (bn, bd) = b.strip_prefix('-').map_or((false, b), |d| (true, d));
    let magnitude = ad.len().cmp(&bd.len()).then_with(|| ad.cmp(bd));
    match (an, bn) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (false, true) => {
            if ad.trim_start_matches('0').is_empty() && bd.trim_start_matches('0').is_empty() {
                Ordering::Equal
            } else {
                Ordering::Greater
            }
        }
        (true, false) => cmp_decimal(b, a).reverse(),
    }
}

/// The exact integer value of a finite float with no fraction, as text.
fn float_integer_text(x: f64) -> String {
    // `{:.0}` prints a float's exact decimal value.
    let text = format!("{x:.0}");
    if text == "-0" {
        "0".to_owned()
    } else {
        text
    }
}

/// Orders an int and a float exactly (Python never rounds the int), or
/// None when the float is NaN.
fn cmp_int_float(n: i128, x: f64) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    const TWO_127: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if x >= TWO_127 {
        return Some(Ordering::Less);
    }
    if x < -TWO_127 {
        return Some(Ordering::Greater);
    }
    // In range: the integer part converts exactly.
    let whole = x.trunc();
    let whole_int = whole as i128;
    Some(n.cmp(&whole_int).then_with(|| {
        let frac = x - whole;
        0.0_f64.partial_cmp(&frac).unwrap_or(Ordering::Equal)
    }))
}

fn cmp_big_float(digits: &str, x: f64) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    if x.is_infinite() {
        return Some(if x > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let whole = float_integer_text(x.trunc());
    Some(cmp_decimal(digits, &whole).then_with(|| {
        let frac = x - x.trunc();
        0.0_f64.partial_cmp(&frac).unwrap_or(Ordering::Equal)
    }))
}

/// Orders two numbers as Python does, or None when one is NaN.
fn cmp_num(a: &Num<'_>, b: &Num<'_>) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(y),
        (Num::Int(n), Num::Float(x)) => cmp_int_float(*n, *x),
        (Num::Float(x), Num::Int(n)) => cmp_int_float(*n, *x).map(Ordering::reverse),
        (Num::Big(d), Num::Float(x)) => cmp_big_float(d, *x),
        (Num::Float(x), Num::Big(d)) => cmp_big_float(d, *x).map(Ordering::reverse),
        (Num::Big(d), Num::Int(n)) => Some(cmp_decimal(d, &n.to_string())),
        (Num::Int(n), Num::Big(d)) => Some(cmp_decimal(&n.to_string(), d)),
        (Num::Big(x), Num::Big(y)) => Some(cmp_decimal(x, y)),
    }
}

/// Python's `a == b` for JSON values: numbers by value across `bool`,
/// `int` and `float` (`1 == 1.0 == True`), strings by code point, lists
/// element-wise, dicts by key set and values; different kinds never.
pub fn py_eq(a: &PyJson, b: &PyJson) -> bool {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        return cmp_num(&x, &y) == Some(Ordering::Equal);
    }
    match (a, b) {
        (PyJson::Null, PyJson::Null) => true,
        (PyJson::Str(x), PyJson::Str(y)) => x == y,
        (PyJson::List(x), PyJson::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (PyJson::Dict(x), PyJson::Dict(y)) => dict_eq(x, y),
        _ => false,
    }
}

fn dict_eq(x: &PyDict, y: &PyDict) -> bool {
    x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
}

/// Python's `a > b`: numbers by value, strings by code point, lists
/// lexicographically (the first pair that is not `==` decides, by the
/// same rules; otherwise the longer list is greater); anything else
/// (dicts, `None`, mixed kinds) is a `TypeError`, [`Incomparable`].
pub fn py_gt(a: &PyJson, b: &PyJson) -> Result<bool, Incomparable> {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        return Ok(cmp_num(&x, &y) == Some(Ordering::Greater));
    }
    match (a, b) {
        (PyJson::Str(x), PyJson::Str(y)) => Ok(x > y),
        (PyJson::List(x), PyJson::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !py_eq(p, q) {
                    return py_gt(p, q);
                }
            }
            Ok(x.len() > y.len())
        }
        _ => Err(Incomparable),
    }
}

/// What a cursor advance does (the original's `cursor_advance`
/// transform), given whether a document exists, the stored value `cur`
/// (None for no document or a stored `null`), the value asked for and
/// `force`: the value the cursor holds afterwards and whether it moved
/// (a move is a write; no move leaves the document and its `updatedAt`
/// alone, and answers with the stored value as it is). A value not comparable with the stored one is the 409
/// `"cursor {name!r} holds a {type} but was advanced with a {type}; ..."`.
pub fn cursor_step(
    doc_exists: bool,
    cur: Option<&PyJson>,
    value: &PyJson,
    force: bool,
    name: &(impl PyText + ?Sized),
) -> Result<(PyJson, bool), JobStateError> {
    let cur = cur.filter(|c| !matches!(c, PyJson::Null));
    let Some(cur) = cur else {
        // No stored value: the new one is taken; it "moved" unless a
        // document held `null` and `null` was asked for again.
        let moved = !doc_exists || !matches!(value, PyJson::Null);
        return Ok((value.clone(), moved));
    };
    let take_new = force
        || py_gt(value, cur).map_err(|Incomparable| {
            JobStateError::Conflict(format!(
                "cursor {} holds a {} but was advanced with a {}; advance it with a comparable \
                 value or pass force",
                PyString::of(name).repr(),
                cur.type_name(),
                value.type_name()
            ))
        })?;
    if take_new {
        // An equal value (even forced, even `2.0` for `2`) is no move,
        // and the answer is the stored value as it is.
        if doc_exists && py_eq(value, cur) {
            return Ok((cur.clone(), false));
        }
        Ok((value.clone(), true))
    } else {
        // The stored value stays; Python's `cur != cur` is only true for
        // a NaN float (containers compare their items by identity first).
        let moved = !doc_exists || matches!(cur, PyJson::Float(x) if x.is_nan());
        Ok((cur.clone(), moved))
    }
}

/// Whether an idempotency claim whose document holds `expires_at` still
/// stands at `now` (the original's `expires is None or expires > now`):
/// no expiry (or `null`) is a permanent claim; `expiresAt == now` has
/// lapsed. A stored expiry Python cannot compare with a float (a string)
/// is [`Incomparable`] (the original fails the request with a 500).
pub fn claim_still_held(expires_at: Option<&PyJson>, now: f64) -> Result<bool, Incomparable> {
    match expires_at {
        None | Some(PyJson::Null) => Ok(true),
        Some(expires) => py_gt(expires, &PyJson::Float(now)),
    }
}

/// Whether the garbage collector may delete an idempotency document with
/// `body`: its expiry is a number (not a bool) at or before `cutoff`.
/// Absent or unreadable bodies and permanent claims are never expired.
pub fn claim_expired_before(body: Option<&PyDict>, cutoff: f64) -> bool {
    let Some(expires) = body.and_then(|b| b.get("expiresAt")) else {
        return false;
    };
    match as_num(expires) {
        Some(n) if !matches!(expires, PyJson::Bool(_)) => matches!(
            cmp_num(&n, &Num::Float(cutoff)),
            Some(Ordering::Less | Ordering::Equal)
        ),
        _ => false,
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
