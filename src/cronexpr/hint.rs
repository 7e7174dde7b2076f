//! Guidance for rejected expressions: hints for text written in another
//! cron dialect (Quartz), and explanations for unknown `@` nicknames.

use super::error::ParseError;
use super::parse::items;

fn is_ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `15W`, `LW`: the nearest-weekday shape, valid only in day-of-month.
fn is_quartz_w(item: &str) -> bool {
    item.strip_suffix('w')
        .is_some_and(|body| body == "l" || is_ascii_digits(body))
}

/// `5L`: Quartz's last-weekday spelling, which this dialect writes `L5`.
fn is_trailing_l(item: &str) -> bool {
    item.strip_suffix('l').is_some_and(is_ascii_digits)
}

/// Extra guidance when a rejected expression looks like Quartz syntax.
///
/// `#` and `W` belong to this dialect but to one field each; Quartz also
/// differs by putting seconds first in its 6-field form (here the sixth
/// field is a year) and by spelling last-weekday `5L`.
pub(crate) fn quartz_hint(fields: &[&str]) -> Option<&'static str> {
    let question = fields.contains(&"?");
    if question && fields.len() == 6 {
        return Some(
            "this looks like a 6-field Quartz expression (seconds first); here the 6th \
             field is a year, so append a trailing '*' to read it as second minute hour \
             day-of-month month day-of-week year",
        );
    }
    let (dom_index, dow_index) = match fields.len() {
        5 | 6 => (Some(2), Some(4)),
        7 => (Some(3), Some(5)),
        _ => (None, None),
    };
    for (index, text) in fields.iter().enumerate() {
        for item in items(text) {
            if item.contains('#') && Some(index) != dow_index {
                return Some(
                    "'#' (Quartz-style nth weekday, 5#3 = third Friday) is only valid in \
                     the day-of-week field",
                );
            }
            if is_quartz_w(item) && Some(index) != dom_index {
                return Some(
                    "'W' (Quartz-style nearest weekday, 15W / LW) is only valid in the \
                     day-of-month field",
                );
            }
            if Some(index) == dow_index && is_trailing_l(item) {
                return Some(
                    "a trailing 'L' on a weekday is Quartz's last-weekday form; this \
                     dialect spells it L<n> (L5 = last Friday)",
                );
            }
        }
    }
    question.then_some(
        "'?' is only accepted standing alone in the day-of-month and day-of-week \
         fields, where it reads as '*'",
    )
}

/// The message for a lone `@word` that is not a nickname the engine knows.
pub(crate) fn unknown_nickname(word: &str) -> ParseError {
    let detail = match word {
        "@reboot" => {
            "'@reboot' is not a recurring schedule: it must be the whole schedule, \
             written exactly '@reboot', and runs once at startup"
        }
        "@midnight" => {
            "'@midnight' is accepted only in classic crontab files (where it means \
             @daily); in YAML write '@daily'"
        }
        _ => "supported nicknames are @yearly, @annually, @monthly, @weekly, @daily and @hourly",
    };
    ParseError::whole(format!(
        "expected 5 to 7 whitespace-separated cron fields (or a supported @-nickname), \
         got 1: {detail}"
    ))
}
