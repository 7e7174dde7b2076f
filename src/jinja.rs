//! Jinja2-compatible templates (the syntax the original's report
//! templates are written in), rendered by minijinja with values printed the
//! way Python prints them (see [`crate::pyfmt`]).
//!
//! This is the engine only: the config loader compiles templates with it
//! so a broken one is a load error, and the report module renders them.
//! It sits below both, so neither has to import the other.

use crate::pyfmt;
use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// A template that does not compile or does not render.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct TemplateError {
    /// Where the template is, relative to the `report:` block
    /// (`mail.subject`, `sentry.fingerprint[1]`, ...).
    pub key: String,
    /// What is wrong, with the line when minijinja knows it.
    pub message: String,
}

/// The work one render may do, in minijinja's fuel: about one unit per
/// instruction and one per 64 bytes of text or lists created. Without a
/// budget a render is unbounded (two nested `range(100000)` loops run
/// 10^10 steps, string concatenation grows past any memory), and the
/// loader's trial render at load time would hang the load with it. Four
/// million units are about 256 MiB of text: the default templates with
/// tens of MiB of captured output fit many times over.
pub const RENDER_FUEL: u64 = 4_000_000;

/// The largest template source, in bytes. The default templates are under
/// 1 KiB; a template is compiled (and tried) at every load, so a source of
/// megabytes would make each load and reload slow before its budget ran.
pub const MAX_TEMPLATE_BYTES: usize = 256 * 1024;

/// The error for a source past [`MAX_TEMPLATE_BYTES`], if `source` is one.
fn oversized(key: &str, source: &str) -> Option<TemplateError> {
    (source.len() > MAX_TEMPLATE_BYTES).then(|| TemplateError {
        key: key.to_owned(),
        message: format!(
            "the template is {} bytes long, more than the limit of {} KiB",
            source.len(),
            MAX_TEMPLATE_BYTES / 1024
        ),
    })
}

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_fuel(Some(RENDER_FUEL));
        // Python's str() of each printed value: `None`, `True`, `['a']`.
        env.set_formatter(|out, _state, value| {
            out.write_str(&pyfmt::py_str(value))
                .map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write template output"))
        });
        env.add_filter("tojson", tojson);
        // `.upper()`, `.rstrip()`, `.items()`, ... as in Python.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env
    })
}

/// The largest `tojson` indent: far beyond any readable one.
const MAX_JSON_INDENT: usize = 64;

fn tojson(value: &Value, indent: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match kwargs.get::<Option<usize>>("indent")? {
        Some(n) => Some(n),
        None => indent,
    };
    kwargs.assert_all_used()?;
    // The indentation is written out per line and level before any fuel
    // is charged: an indent in the quadrillions overflowed the buffer's
    // capacity (a panic, found by the template_render fuzz target).
    if indent.is_some_and(|n| n > MAX_JSON_INDENT) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("tojson: indent must be at most {MAX_JSON_INDENT}"),
        ));
    }
    Ok(Value::from_safe_string(pyfmt::to_json(value, indent)))
}

fn describe(err: &Error) -> String {
    let mut text = match (err.kind(), err.detail()) {
        (ErrorKind::OutOfFuel, _) => format!(
            "the template does more work than a render may ({RENDER_FUEL} steps, or that many \
             64-byte pieces of text)"
        ),
        (kind, Some(detail)) => format!("{kind}: {detail}"),
        (kind, None) => kind.to_string(),
    };
    if let Some(line) = err.line() {
        text.push_str(&format!(" (line {line})"));
    }
    text
}

/// Renders `source` with `vars`; `key` names the template in the error.
pub fn render(key: &str, source: &str, vars: &Value) -> Result<String, TemplateError> {
    if let Some(err) = oversized(key, source) {
        return Err(err);
    }
    environment()
        .render_str(source, vars.clone())
        .map_err(|e| TemplateError {
            key: key.to_owned(),
            message: describe(&e),
        })
}

/// Compiles `source` and tries it on a sample failed and a sample
/// successful run. Syntax errors fail, and so do unknown filters and tests
/// (Jinja2 refuses those when it compiles; minijinja only notices them
/// when the line runs, hence the trial renders). Other errors of a trial
/// render are left alone: they depend on the data of a real run, except
/// running out of the render budget on the small sample data, which a real
/// run could only make worse.
pub fn compile(key: &str, source: &str) -> Result<(), TemplateError> {
    if let Some(err) = oversized(key, source) {
        return Err(err);
    }
    // A template set in `defaults:` is repeated in every job of the file:
    // check each distinct source once (10,000 jobs must still validate in
    // a blink). Only sources that passed are remembered.
    static PASSED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let passed = PASSED.get_or_init(Default::default);
    if passed.lock().is_ok_and(|set| set.contains(source)) {
        return Ok(());
    }
    compile_uncached(key, source)?;
    if let Ok(mut set) = passed.lock() {
        if set.len() >= 4096 {
            set.clear();
        }
        set.insert(source.to_owned());
    }
    Ok(())
}

fn compile_uncached(key: &str, source: &str) -> Result<(), TemplateError> {
    let fail = |e: &Error| TemplateError {
        key: key.to_owned(),
        message: describe(e),
    };
    let template = environment()
        .template_from_str(source)
        .map_err(|e| fail(&e))?;
    for success in [false, true] {
        if let Err(e) = template.render(sample_vars(success)) {
            if matches!(
                e.kind(),
                ErrorKind::UnknownFilter | ErrorKind::UnknownTest | ErrorKind::OutOfFuel
            ) {
                return Err(fail(&e));
            }
        }
    }
    Ok(())
}

/// Every template variable with a plausible value, for trial renders.
fn sample_vars(success: bool) -> Value {
    let text = |s: &str| Value::from(s);
    let none = Value::from(());
    let pairs: [(&str, Value); 19] = [
        ("name", text("job")),
        ("success", Value::from(success)),
        (
            "fail_reason",
            if success {
                none.clone()
            } else {
                text("failsWhen=always")
            },
        ),
        ("stdout", text("out\n")),
        ("stderr", text("err\n")),
        ("exit_code", Value::from(if success { 0 } else { 1 })),
        ("command", text("true")),
        ("shell", text("/bin/sh")),
        ("environment", none.clone()),
        ("host", text("host")),
        ("schedule", text("* * * * *")),
        ("started_at", text("2026-01-01T00:00:00+00:00")),
        ("run_id", none.clone()),
        ("cpu_seconds", none.clone()),
        ("cpu_user_seconds", none.clone()),
        ("cpu_system_seconds", none.clone()),
        ("max_rss_bytes", none.clone()),
        ("verification", none.clone()),
        ("limits", none),
    ];
    Value::from(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<std::collections::BTreeMap<String, Value>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_past_the_size_cap_are_refused_unparsed() {
        let at_cap = "x".repeat(MAX_TEMPLATE_BYTES);
        assert!(compile("mail.body", &at_cap).is_ok());
        let over = format!("{at_cap}{{{{");
        let err = compile("mail.body", &over).unwrap_err().to_string();
        assert_eq!(
            err,
            "mail.body: the template is 262146 bytes long, more than the limit of 256 KiB"
        );
        let err = render("mail.body", &over, &Value::from(())).unwrap_err();
        assert_eq!(err.key, "mail.body");
        assert!(err.message.starts_with("the template is 262146 bytes"));
    }
}
