//! The schedule preview (palette: "Schedule preview"): a row to type a
//! cron expression into, read back by the daemon's own engine through
//! `GET /schedule/preview` — the parser's verdict, the sentence, the next
//! fires and the linter's findings. The worker waits for a pause in the
//! typing before it asks (see `Command::Sandbox`), so each key costs no
//! request of its own; an answer for text no longer in the row is dropped.

use super::text::{cell, wrap};
use super::theme::Palette;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// How many fires the panel asks for.
pub const FIRES: usize = 6;

/// The panel's state.
#[derive(Debug, Default)]
pub struct Sandbox {
    /// The text typed so far.
    pub input: String,
    /// The last answer: the expression it is for, and the body or why
    /// there is none.
    pub answer: Option<(String, Result<Value, String>)>,
}

impl Sandbox {
    /// The expression to ask about (the row trimmed), or none when empty.
    pub fn expr(&self) -> Option<&str> {
        Some(self.input.trim()).filter(|e| !e.is_empty())
    }

    /// Files an answer; false (and dropped) when the row has moved on.
    pub fn take(&mut self, expr: String, answer: Result<Value, String>) -> bool {
        if self.expr() != Some(expr.as_str()) {
            return false;
        }
        self.answer = Some((expr, answer));
        true
    }

    /// The answer for what the row holds now, if it has come.
    fn current(&self) -> Option<&Result<Value, String>> {
        let expr = self.expr()?;
        self.answer
            .as_ref()
            .filter(|(asked, _)| asked == expr)
            .map(|(_, a)| a)
    }
}

/// The query string's pairs for `expr` (UTC, like the original's panel).
pub fn query(expr: &str) -> Vec<(String, String)> {
    vec![
        ("expr".to_owned(), expr.to_owned()),
        ("limit".to_owned(), FIRES.to_string()),
    ]
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(cell)
}

/// How wide the panel's text runs (the panel is 72 columns at most).
const TEXT_COLS: usize = 66;

/// `message` after a one-column `mark`, wrapped under itself.
fn wrapped(out: &mut Vec<Line<'static>>, mark: &str, message: &str, style: Style) {
    for (i, piece) in wrap(message, TEXT_COLS).into_iter().enumerate() {
        let lead = if i == 0 { mark } else { " " };
        out.push(Line::styled(format!(" {lead} {piece}"), style));
    }
}

/// Whether the daemon's refusal is only that an `H` field has no job name
/// to seed it (the engine's [`crate::cronexpr::NEEDS_HASH_KEY`] error), so the schedule is
/// sound for a named job. Judged from the answer, not the input: `H 99 *
/// * *` is refused for its hour and stays an error.
fn wants_a_name(error: &str) -> bool {
    error.contains(crate::cronexpr::NEEDS_HASH_KEY)
}

/// The panel's rows: the input row, then the daemon's reading.
pub fn body(s: &Sandbox, p: &Palette) -> Vec<Line<'static>> {
    let mut out = vec![
        Line::from(vec![
            Span::styled(" ◴ ", p.ink(p.accent)),
            Span::styled(
                format!("{}▌", cell(&s.input)),
                p.ink(p.bright).add_modifier(Modifier::BOLD),
            ),
        ]),
        Line::raw(""),
    ];
    if s.expr().is_none() {
        out.push(Line::styled(
            " type a cron expression, for example */5 9-17 * * mon-fri",
            p.ink(p.dim),
        ));
        return out;
    }
    let v = match s.current() {
        None => {
            out.push(Line::styled(" asking the daemon…", p.ink(p.dim)));
            return out;
        }
        Some(Err(why)) => {
            out.push(Line::styled(
                format!(" ⚠ preview: {}", cell(why)),
                p.ink(p.fail),
            ));
            return out;
        }
        Some(Ok(v)) => v,
    };
    if v.get("valid").and_then(Value::as_bool) != Some(true) {
        let why = text(v, "error").unwrap_or_else(|| "not a schedule".to_owned());
        if wants_a_name(&why) {
            // An `H` field is seeded by the job's name, which a bare
            // expression lacks: the daemon refuses it here, though it is
            // a fine schedule for any named job.
            wrapped(&mut out, "·", &why, p.ink(p.dim));
            out.push(Line::raw(""));
            out.push(Line::styled(
                " H picks one fixed time per job, derived from the job's name;",
                p.ink(p.dim),
            ));
            out.push(Line::styled(
                " a job's Schedule tab shows the times it resolves to",
                p.ink(p.dim),
            ));
            return out;
        }
        wrapped(&mut out, "✕", &why, p.ink(p.fail));
        out.push(Line::styled(
            " a valid cron expression or a nickname such as @daily is wanted",
            p.ink(p.dim),
        ));
        return out;
    }
    if let Some(sentence) = text(v, "description") {
        out.push(Line::styled(format!(" {sentence}"), p.ink(p.ok)));
    }
    if let Some(normal) = text(v, "normalized").filter(|n| Some(n.as_str()) != s.expr()) {
        out.push(Line::styled(format!(" reads as {normal}"), p.ink(p.dim)));
    }
    let fires: Vec<String> = v
        .get("fires")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).map(cell).collect())
        .unwrap_or_default();
    if v.get("reboot").and_then(Value::as_bool) == Some(true) {
        out.push(Line::styled(
            " runs once when the daemon starts: no fires to list",
            p.ink(p.dim),
        ));
    } else if fires.is_empty() {
        out.push(Line::styled(" never fires", p.ink(p.warn)));
    } else {
        out.push(Line::raw(""));
        out.push(Line::styled(" next runs (UTC):", p.ink(p.dim)));
        for fire in fires {
            out.push(Line::styled(
                format!("   {}", fire.replacen('T', " ", 1)),
                p.ink(p.fg),
            ));
        }
    }
    let lint = v.get("lint").and_then(Value::as_array);
    if let Some(findings) = lint.filter(|l| !l.is_empty()) {
        out.push(Line::raw(""));
        for finding in findings {
            let level = text(finding, "level").unwrap_or_default();
            let (mark, color) = if text(finding, "code").as_deref() == Some("never-fires") {
                ("✕", p.fail)
            } else if level == "warning" {
                ("⚠", p.warn)
            } else {
                ("·", p.dim)
            };
            let message = text(finding, "message").unwrap_or_default();
            wrapped(&mut out, mark, &message, p.ink(color));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(s: &Sandbox) -> Vec<String> {
        let p = crate::tui::theme::Theme {
            hue: 0,
            light: false,
        }
        .palette();
        body(s, &p)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn typed(text: &str) -> Sandbox {
        Sandbox {
            input: text.to_owned(),
            answer: None,
        }
    }

    #[test]
    fn an_answer_for_older_text_is_dropped() {
        let mut s = typed("*/5 * * * *");
        assert!(!s.take("*/5 * * *".into(), Ok(json!({}))));
        assert!(s.answer.is_none());
        assert!(s.take("*/5 * * * *".into(), Ok(json!({}))));
        s.input.push('x');
        assert!(rows(&s).iter().any(|r| r.contains("asking the daemon")));
    }

    #[test]
    fn an_h_form_refused_for_want_of_a_name_is_explained_not_failed() {
        let refusal = json!({"valid": false, "error": "'H' in the minute field needs a hash key"});
        let mut s = typed("H/15 * * * *");
        assert!(s.take("H/15 * * * *".into(), Ok(refusal.clone())));
        let shown = rows(&s).join("\n");
        assert!(shown.contains("needs a hash key"), "{shown}");
        assert!(shown.contains("derived from the job's name"), "{shown}");
        assert!(!shown.contains("is wanted"), "{shown}");
        // any other refusal stays an error, H or not
        let broken = json!({"valid": false, "error": "hour 99 is out of range 0-23"});
        let mut s = typed("H 99 * * *");
        assert!(s.take("H 99 * * *".into(), Ok(broken)));
        let shown = rows(&s).join("\n");
        assert!(shown.contains("is wanted"), "{shown}");
        assert!(!shown.contains("derived from the job's name"), "{shown}");
    }

    #[test]
    fn an_empty_row_asks_nothing_and_hints() {
        let s = typed("   ");
        assert_eq!(s.expr(), None);
        assert!(rows(&s).iter().any(|r| r.contains("for example")));
    }

    #[test]
    fn a_valid_answer_shows_the_sentence_fires_and_findings() {
        let mut s = typed(" 0 9 * * mon ");
        let answer = json!({
            "valid": true, "reboot": false, "normalized": "0 9 * * 1",
            "description": "At 09:00, on Monday",
            "fires": ["2026-12-07T09:00:00+00:00"],
            "lint": [{"code": "x", "level": "warning", "message": "look here"}],
        });
        assert!(s.take("0 9 * * mon".into(), Ok(answer)));
        let r = rows(&s);
        assert!(r.contains(&" At 09:00, on Monday".to_owned()), "{r:?}");
        assert!(r.contains(&" reads as 0 9 * * 1".to_owned()));
        assert!(r.contains(&"   2026-12-07 09:00:00+00:00".to_owned()));
        assert!(r.contains(&" ⚠ look here".to_owned()));
    }

    #[test]
    fn an_invalid_answer_shows_the_parsers_error() {
        let mut s = typed("61 * * * *");
        let answer = json!({"valid": false, "error": "minute out of range"});
        s.take("61 * * * *".into(), Ok(answer));
        assert!(rows(&s).contains(&" ✕ minute out of range".to_owned()));
        s.take("61 * * * *".into(), Err("HTTP 500".into()));
        assert!(rows(&s).contains(&" ⚠ preview: HTTP 500".to_owned()));
    }

    #[test]
    fn the_query_asks_for_the_fires_shown() {
        assert_eq!(
            query("@daily"),
            [
                ("expr".to_owned(), "@daily".to_owned()),
                ("limit".to_owned(), "6".to_owned())
            ]
        );
    }
}
