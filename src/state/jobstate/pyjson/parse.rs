//! Python's `json.loads`, producing [`PyJson`].

use super::string::push_code_point;
use super::{PyDict, PyJson, PyString};

/// The deepest nesting [`parse`] reads; deeper input is an error, as
/// Python's recursion limit makes it one for the original (whose exact
/// bound depends on its stack at the time).
pub const MAX_PARSE_DEPTH: usize = 1000;

/// The most digits of an integer literal Python converts (its
/// `int_max_str_digits` default).
pub const MAX_INT_DIGITS: usize = 4300;

/// Why [`parse`] refused its input (the text says where).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct ParseError {
    /// What was expected or wrong.
    pub what: &'static str,
    /// The byte offset.
    pub at: usize,
}

/// Reads `text` as Python's `json.loads(text)` does: `NaN`, `Infinity`
/// and `-Infinity` accepted, integers of any width (up to Python's 4300
/// digit conversion limit), lone surrogates from `\u` escapes kept, a
/// repeated key keeping its first place and its last value, only
/// space, tab, newline and carriage return as whitespace, and no control
/// character inside a string.
pub fn parse(text: &str) -> Result<PyJson, ParseError> {
    let mut parser = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    parser.ws();
    let value = parser.value(0)?;
    parser.ws();
    if parser.i != parser.b.len() {
        return Err(parser.err("extra data"));
    }
    Ok(value)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> ParseError {
        ParseError { what, at: self.i }
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &str, value: PyJson) -> Result<PyJson, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(value)
        } else {
            Err(self.err("expecting value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        match self.b.get(self.i) {
            Some(b'"') => self.string().map(PyJson::Str),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'n') => self.literal("null", PyJson::Null),
            Some(b't') => self.literal("true", PyJson::Bool(true)),
            Some(b'f') => self.literal("false", PyJson::Bool(false)),
            Some(b'N') => self.literal("NaN", PyJson::Float(f64::NAN)),
            Some(b'I') => self.literal("Infinity", PyJson::Float(f64::INFINITY)),
            Some(b'-') if self.b[self.i..].starts_with(b"-Infinity") => {
                self.i += "-Infinity".len();
                Ok(PyJson::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err("expecting value")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<PyJson, ParseError> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("expecting value")),
        }
        let int_end = self.i;
        let mut is_float = false;
        if self.b.get(self.i) == Some(&b'.')
            && self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit)
        {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            let mark = self.i;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                // Not an exponent: the number ends before the `e`.
                self.i = mark;
            } else {
                is_float = true;
            }
        }
        // The slice is ASCII by construction.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("0");
        if is_float {
            return text
                .parse::<f64>()
                .map(PyJson::Float)
                .map_err(|_| self.err("bad number"));
        }
        let digits = int_end - start - usize::from(text.starts_with('-'));
        if digits > MAX_INT_DIGITS {
            return Err(self.err("integer literal over the 4300 digit limit"));
        }
        Ok(match text.parse::<i128>() {
            Ok(n) => PyJson::Int(n),
            Err(_) => PyJson::BigInt(text.to_owned()),
        })
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let hex = self
            .b
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
        let mut cp = 0u32;
        for h in hex {
            let d = (*h as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
            cp = cp * 16 + d;
        }
        self.i += 4;
        Ok(cp)
    }

    fn string(&mut self) -> Result<PyString, ParseError> {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&byte) = self.b.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            match byte {
                b'"' => {
                    self.i += 1;
                    return Ok(PyString(out));
                }
                b'\\' => {
                    self.i += 1;
                    let Some(&esc) = self.b.get(self.i) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 1;
                    let simple = match esc {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return Err(self.err("invalid escape")),
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        continue;
                    }
                    let mut cp = self.hex4()?;
                    // A high surrogate escape directly followed by a low
                    // one is one code point; anything else stays lone.
                    if (0xd800..=0xdbff).contains(&cp)
                        && self.b.get(self.i..self.i + 2) == Some(b"\\u")
                    {
                        let mark = self.i;
                        self.i += 2;
                        let low = self.hex4()?;
                        if (0xdc00..=0xdfff).contains(&low) {
                            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            self.i = mark;
                        }
                    }
                    push_code_point(&mut out, cp);
                }
                0..=0x1f => return Err(self.err("invalid control character")),
                _ => {
                    out.push(byte);
                    self.i += 1;
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        if depth > MAX_PARSE_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.i += 1;
        let mut entries: Vec<(PyString, PyJson)> = Vec::new();
        let mut index: std::collections::HashMap<PyString, usize> =
            std::collections::HashMap::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(PyJson::Dict(PyDict(entries)));
        }
        loop {
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err("expecting property name enclosed in double quotes"));
            }
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expecting ':' delimiter"));
            }
            self.i += 1;
            self.ws();
            let value = self.value(depth)?;
            match index.get(&key) {
                Some(&at) => entries[at].1 = value,
                None => {
                    index.insert(key.clone(), entries.len());
                    entries.push((key, value));
                }
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(PyJson::Dict(PyDict(entries)));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        if depth > MAX_PARSE_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(PyJson::List(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(PyJson::List(items));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }
}
