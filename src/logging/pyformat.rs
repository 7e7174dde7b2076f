//! Python's `%`-style log format strings (`logging.Formatter` with the
//! default `style='%'`), as written in a `logging:` section's formatters:
//! `%(asctime)s %(levelname)-8s %(name)s: %(message)s`.
//!
//! A format is parsed once when the configuration loads, so an unknown
//! record attribute or a conversion that cannot print it is a load error
//! naming the key instead of a broken line at every log call (the original
//! fails per record there, printing a "Logging error" traceback).

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Local};

/// The value of one record attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text.
    Str(String),
    /// Whole number.
    Int(i64),
    /// Float.
    Float(f64),
    /// Python's `None` (attributes a Rust record never has, like exc_info).
    None,
}

/// What kind of value an attribute holds, known before any record exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    None,
}

/// The record attributes a format may name, with their kinds: those of
/// Python's `LogRecord` (plus `asctime` and `message`, which the formatter
/// itself adds).
const ATTRIBUTES: [(&str, Kind); 23] = [
    ("args", Kind::Str),
    ("asctime", Kind::Str),
    ("created", Kind::Float),
    ("exc_info", Kind::None),
    ("exc_text", Kind::None),
    ("filename", Kind::Str),
    ("funcName", Kind::Str),
    ("levelname", Kind::Str),
    ("levelno", Kind::Int),
    ("lineno", Kind::Int),
    ("message", Kind::Str),
    ("module", Kind::Str),
    ("msecs", Kind::Float),
    ("msg", Kind::Str),
    ("name", Kind::Str),
    ("pathname", Kind::Str),
    ("process", Kind::Int),
    ("processName", Kind::Str),
    ("relativeCreated", Kind::Float),
    ("stack_info", Kind::None),
    ("taskName", Kind::None),
    ("thread", Kind::Int),
    ("threadName", Kind::Str),
];

fn kind_of(name: &str) -> Option<Kind> {
    ATTRIBUTES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// One log record, with the attributes a format can name.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    /// When the record was made.
    pub time: DateTime<Local>,
    /// Seconds from process start (for `relativeCreated`).
    pub since_start: f64,
    /// Level name (`INFO`, `WARNING`, ...).
    pub levelname: &'a str,
    /// Numeric level (20 for INFO).
    pub levelno: i64,
    /// Logger name (`cronstable`, `cronstable.config`).
    pub name: &'a str,
    /// The rendered message.
    pub message: &'a str,
    /// Source path of the log call.
    pub pathname: &'a str,
    /// Source line of the log call.
    pub lineno: u32,
    /// Rust module path of the log call (stands in for `funcName`).
    pub function: &'a str,
    /// Process id.
    pub process: u32,
    /// A number for the logging thread.
    pub thread: u64,
    /// The thread's name (`MainThread` for the main thread, as in Python).
    pub thread_name: &'a str,
}

impl Record<'_> {
    fn value(&self, name: &str) -> Value {
        let created = self.time.timestamp_micros() as f64 / 1e6;
        match name {
            "args" => Value::Str("()".into()),
            "created" => Value::Float(created),
            "filename" => Value::Str(file_name(self.pathname).into()),
            "funcName" => Value::Str(self.function.into()),
            "levelname" => Value::Str(self.levelname.into()),
            "levelno" => Value::Int(self.levelno),
            "lineno" => Value::Int(i64::from(self.lineno)),
            "message" | "msg" => Value::Str(self.message.into()),
            "module" => {
                let file = file_name(self.pathname);
                Value::Str(file.rsplit_once('.').map_or(file, |(stem, _)| stem).into())
            }
            "msecs" => Value::Float(f64::from(self.time.timestamp_subsec_micros()) / 1000.0),
            "name" => Value::Str(self.name.into()),
            "pathname" => Value::Str(self.pathname.into()),
            "process" => Value::Int(i64::from(self.process)),
            "processName" => Value::Str("MainProcess".into()),
            "relativeCreated" => Value::Float(self.since_start * 1000.0),
            "thread" => Value::Int(self.thread as i64),
            "threadName" => Value::Str(self.thread_name.into()),
            _ => Value::None,
        }
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// One `%` conversion's flags, width and precision.
#[derive(Debug, Clone, Default, PartialEq)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    width: usize,
    precision: Option<usize>,
    conversion: char,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Literal(String),
    Field(String, Spec),
}

/// A parsed `%`-style format, with its date format for `asctime`.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentFormat {
    pieces: Vec<Piece>,
    datefmt: Option<String>,
    uses_asctime: bool,
}

impl PercentFormat {
    /// Python's default when a formatter gives no `format`.
    pub const DEFAULT: &'static str = "%(message)s";
    /// The format `logging.basicConfig` installs: what the original prints
    /// when the config has no `logging:` section.
    pub const BASIC: &'static str = "%(levelname)s:%(name)s:%(message)s";

    /// Parses `format`; `datefmt` is a `strftime` pattern for `asctime`.
    /// Errors name the offending key or conversion.
    pub fn parse(format: &str, datefmt: Option<&str>) -> Result<PercentFormat, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = format.char_indices().peekable();
        let mut fields = 0;
        while let Some((_, c)) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            match chars.next() {
                Some((_, '%')) => literal.push('%'),
                Some((_, '(')) => {
                    let mut key = String::new();
                    loop {
                        match chars.next() {
                            Some((_, ')')) => break,
                            Some((_, ch)) => key.push(ch),
                            None => {
                                return Err(format!(
                                    "format '{format}': '%({key}' is not closed with ')'"
                                ))
                            }
                        }
                    }
                    let spec = parse_spec(&mut chars, format, &key)?;
                    let Some(kind) = kind_of(&key) else {
                        return Err(format!(
                            "format '{format}': unknown log record attribute '{key}' (known: {})",
                            ATTRIBUTES.map(|(n, _)| n).join(", ")
                        ));
                    };
                    check_conversion(kind, &spec, &key, format)?;
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Field(key, spec));
                    fields += 1;
                }
                Some((i, _)) => {
                    return Err(format!(
                        "format '{format}': '%' at offset {} must be followed by '(name)' or '%'",
                        i - 1
                    ))
                }
                None => return Err(format!("format '{format}': it ends with a lone '%'")),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        if fields == 0 {
            // Python's Formatter refuses a %-style format with no field.
            return Err(format!(
                "format '{format}' has no %(name)s field; it would print the same text for \
                 every record"
            ));
        }
        if let Some(datefmt) = datefmt {
            if StrftimeItems::new(datefmt).any(|item| matches!(item, Item::Error)) {
                return Err(format!(
                    "datefmt '{datefmt}' is not a valid strftime pattern"
                ));
            }
        }
        let uses_asctime = pieces
            .iter()
            .any(|p| matches!(p, Piece::Field(k, _) if k == "asctime"));
        Ok(PercentFormat {
            pieces,
            datefmt: datefmt.map(str::to_owned),
            uses_asctime,
        })
    }

    /// Renders one record.
    pub fn render(&self, record: &Record) -> String {
        let asctime = self.uses_asctime.then(|| match &self.datefmt {
            Some(datefmt) => record.time.format(datefmt).to_string(),
            // Python's default: seconds, then a comma and the milliseconds.
            None => format!(
                "{},{:03}",
                record.time.format("%Y-%m-%d %H:%M:%S"),
                record.time.timestamp_subsec_millis()
            ),
        });
        let mut out = String::with_capacity(64 + record.message.len());
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Field(key, spec) => {
                    let value = match (key.as_str(), &asctime) {
                        ("asctime", Some(text)) => Value::Str(text.clone()),
                        _ => record.value(key),
                    };
                    out.push_str(&convert(&value, spec));
                }
            }
        }
        out
    }
}

fn parse_spec(
    chars: &mut std::iter::Peekable<std::str::CharIndices>,
    format: &str,
    key: &str,
) -> Result<Spec, String> {
    let mut spec = Spec::default();
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => spec.left = true,
            '0' => spec.zero = true,
            '+' => spec.plus = true,
            ' ' => spec.space = true,
            '#' => spec.alternate = true,
            _ => break,
        }
        chars.next();
    }
    let number = |chars: &mut std::iter::Peekable<std::str::CharIndices>| {
        let mut digits = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if !c.is_ascii_digit() {
                break;
            }
            digits.push(c);
            chars.next();
        }
        digits.parse::<usize>().ok()
    };
    spec.width = number(chars).unwrap_or(0);
    if chars.peek().is_some_and(|&(_, c)| c == '.') {
        chars.next();
        spec.precision = Some(number(chars).unwrap_or(0));
    }
    match chars.next() {
        Some((_, c)) if "sradiufFeExXo".contains(c) => spec.conversion = c,
        Some((_, c)) => {
            return Err(format!(
            "format '{format}': conversion '%({key}){c}' is not one of s r a d i u f F e E x X o"
        ))
        }
        None => {
            return Err(format!(
                "format '{format}': '%({key})' needs a conversion such as s or d"
            ))
        }
    }
    Ok(spec)
}

/// Refuses at load time what Python would refuse at every record: a
/// number conversion of a text attribute.
fn check_conversion(kind: Kind, spec: &Spec, key: &str, format: &str) -> Result<(), String> {
    let numeric = "diufFeExXo".contains(spec.conversion);
    if numeric && matches!(kind, Kind::Str | Kind::None) {
        return Err(format!(
            "format '{format}': '%({key}){}' needs a number but {key} is text",
            spec.conversion
        ));
    }
    if "xXo".contains(spec.conversion) && kind == Kind::Float {
        return Err(format!(
            "format '{format}': '%({key}){}' needs an integer but {key} is a float",
            spec.conversion
        ));
    }
    Ok(())
}

fn convert(value: &Value, spec: &Spec) -> String {
    let (body, numeric) = match spec.conversion {
        's' | 'r' | 'a' => {
            let mut text = match value {
                Value::Str(s) if spec.conversion == 's' => s.clone(),
                Value::Str(s) => crate::pyfmt::repr_str(s),
                Value::Int(i) => i.to_string(),
                Value::Float(f) => crate::pyfmt::py_float(*f),
                Value::None => "None".into(),
            };
            if let Some(p) = spec.precision {
                text = text.chars().take(p).collect();
            }
            (text, false)
        }
        conversion => {
            let number = match value {
                Value::Int(i) => *i as f64,
                Value::Float(f) => *f,
                // Refused at parse time; print something rather than panic.
                _ => 0.0,
            };
            (format_number(number, spec, conversion), true)
        }
    };
    pad(body, spec, numeric)
}

fn format_number(number: f64, spec: &Spec, conversion: char) -> String {
    let negative = number < 0.0;
    let magnitude = number.abs();
    let digits = match conversion {
        'd' | 'i' | 'u' => format!("{}", magnitude.trunc() as u64),
        'x' => format!("{:x}", magnitude as u64),
        'X' => format!("{:X}", magnitude as u64),
        'o' => format!("{:o}", magnitude as u64),
        'f' | 'F' => format!("{:.*}", spec.precision.unwrap_or(6), magnitude),
        'e' | 'E' => {
            let text = format!("{:.*e}", spec.precision.unwrap_or(6), magnitude);
            // Rust writes 1.5e2, Python 1.5e+02.
            let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            let e = if conversion == 'E' { 'E' } else { 'e' };
            format!("{mantissa}{e}{sign}{:02}", exp.abs())
        }
        _ => String::new(),
    };
    let digits = match (spec.alternate, conversion) {
        (true, 'x') => format!("0x{digits}"),
        (true, 'X') => format!("0X{digits}"),
        (true, 'o') => format!("0o{digits}"),
        _ => digits,
    };
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    format!("{sign}{digits}")
}

fn pad(body: String, spec: &Spec, numeric: bool) -> String {
    let len = body.chars().count();
    if len >= spec.width {
        return body;
    }
    let fill = spec.width - len;
    if spec.left {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        // Zeros go between the sign and the digits.
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_owned()),
            _ => (String::new(), body),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn record() -> Record<'static> {
        Record {
            time: Local
                .timestamp_opt(1_700_000_000, 56_789_000)
                .single()
                .expect("a valid local time"),
            since_start: 1.5,
            levelname: "INFO",
            levelno: 20,
            name: "cronstable",
            message: "Job ok spawned",
            pathname: "src/job/run.rs",
            lineno: 42,
            function: "cronstable::job::run",
            process: 4321,
            thread: 7,
            thread_name: "MainThread",
        }
    }

    fn render(format: &str) -> String {
        PercentFormat::parse(format, None)
            .unwrap_or_else(|e| panic!("{e}"))
            .render(&record())
    }

    #[test]
    fn basic_format_is_the_originals_default_line() {
        assert_eq!(
            render(PercentFormat::BASIC),
            "INFO:cronstable:Job ok spawned"
        );
    }

    #[test]
    fn every_attribute_renders() {
        let r = record();
        let local = r.time;
        let cases: Vec<(&str, String)> = vec![
            ("%(args)s", "()".into()),
            (
                "%(asctime)s",
                format!("{},056", local.format("%Y-%m-%d %H:%M:%S")),
            ),
            ("%(created)f", "1700000000.056789".into()),
            ("%(exc_info)s", "None".into()),
            ("%(exc_text)s", "None".into()),
            ("%(filename)s", "run.rs".into()),
            ("%(funcName)s", "cronstable::job::run".into()),
            ("%(levelname)s", "INFO".into()),
            ("%(levelno)s", "20".into()),
            ("%(lineno)d", "42".into()),
            ("%(message)s", "Job ok spawned".into()),
            ("%(module)s", "run".into()),
            ("%(msecs)d", "56".into()),
            ("%(msecs)03d", "056".into()),
            ("%(msg)s", "Job ok spawned".into()),
            ("%(name)s", "cronstable".into()),
            ("%(pathname)s", "src/job/run.rs".into()),
            ("%(process)d", "4321".into()),
            ("%(processName)s", "MainProcess".into()),
            ("%(relativeCreated)d", "1500".into()),
            ("%(stack_info)s", "None".into()),
            ("%(taskName)s", "None".into()),
            ("%(thread)d", "7".into()),
            ("%(threadName)s", "MainThread".into()),
        ];
        assert_eq!(cases.len(), ATTRIBUTES.len() + 1);
        for (format, want) in cases {
            assert_eq!(render(format), want, "{format}");
        }
    }

    #[test]
    fn padding_precision_and_flags() {
        assert_eq!(render("[%(levelname)-8s]"), "[INFO    ]");
        assert_eq!(render("[%(levelname)8s]"), "[    INFO]");
        assert_eq!(render("[%(levelname).2s]"), "[IN]");
        assert_eq!(render("[%(lineno)5d]"), "[   42]");
        assert_eq!(render("[%(lineno)-5d]"), "[42   ]");
        assert_eq!(render("[%(lineno)05d]"), "[00042]");
        assert_eq!(render("[%(lineno)+d]"), "[+42]");
        assert_eq!(render("[%(msecs).1f]"), "[56.8]");
        assert_eq!(render("[%(levelno)x %(levelno)#o]"), "[14 0o24]");
        assert_eq!(render("[%(relativeCreated)e]"), "[1.500000e+03]");
        assert_eq!(render("%(name)r"), "'cronstable'");
    }

    #[test]
    fn percent_escape_and_literals() {
        assert_eq!(render("100%% %(name)s: done"), "100% cronstable: done");
    }

    #[test]
    fn datefmt_shapes_asctime() {
        let format = PercentFormat::parse(
            "%(asctime)s %(levelname)s %(name)s: %(message)s",
            Some("%Y-%m-%d %H:%M:%S"),
        )
        .expect("valid");
        let r = record();
        assert_eq!(
            format.render(&r),
            format!(
                "{} INFO cronstable: Job ok spawned",
                r.time.format("%Y-%m-%d %H:%M:%S")
            )
        );
    }

    #[test]
    fn load_errors_name_the_problem() {
        let err = PercentFormat::parse("%(asctime)s %(hostname)s", None).unwrap_err();
        assert!(
            err.contains("unknown log record attribute 'hostname'"),
            "{err}"
        );
        let err = PercentFormat::parse("%(levelname)d", None).unwrap_err();
        assert!(
            err.contains("needs a number but levelname is text"),
            "{err}"
        );
        let err = PercentFormat::parse("%(name)q", None).unwrap_err();
        assert!(err.contains("conversion '%(name)q'"), "{err}");
        let err = PercentFormat::parse("%(name", None).unwrap_err();
        assert!(err.contains("not closed"), "{err}");
        let err = PercentFormat::parse("%(name)s 50%", None).unwrap_err();
        assert!(err.contains("lone '%'"), "{err}");
        let err = PercentFormat::parse("%s", None).unwrap_err();
        assert!(err.contains("must be followed by '(name)'"), "{err}");
        let err = PercentFormat::parse("plain text", None).unwrap_err();
        assert!(err.contains("no %(name)s field"), "{err}");
        let err = PercentFormat::parse("%(message)s", Some("%Y-%Q")).unwrap_err();
        assert!(err.contains("datefmt '%Y-%Q'"), "{err}");
    }
}
