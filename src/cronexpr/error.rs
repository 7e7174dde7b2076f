//! Parse errors: which field, which token, and why.
//!
//! The wording of [`ParseError`]'s `Display` follows the original daemon's
//! messages (a config error surfaces as
//! `invalid schedule '<text>': <this message>`), so log searches and alert
//! rules written against the original keep matching.

use std::fmt;

/// One column of a cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The optional leading seconds column of the 7-field form.
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of month, 1-31, plus the `L`/`W` forms.
    DayOfMonth,
    /// Month, 1-12 or `jan`-`dec`.
    Month,
    /// Day of week, 0-7 (0 and 7 are Sunday) or `sun`-`sat`, plus `L<n>`
    /// and `<d>#<n>`.
    DayOfWeek,
    /// The optional trailing year column, 1970-2099.
    Year,
}

impl Field {
    /// The label used in messages (`"day-of-month"`), as the original
    /// prints it.
    pub fn label(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
            Field::Year => "year",
        }
    }

    /// The key of this column in the object form of `schedule:`
    /// (`"dayOfMonth"`).
    pub fn object_key(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "dayOfMonth",
            Field::Month => "month",
            Field::DayOfWeek => "dayOfWeek",
            Field::Year => "year",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Why an expression was rejected.
///
/// `field()` and `token()` locate the problem when it sits in one column;
/// `hint()` is set when the text looks like another cron dialect (Quartz)
/// and says how to convert it. `Display` renders the reason followed by the
/// hint in parentheses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    field: Option<Field>,
    token: Option<String>,
    reason: String,
    hint: Option<&'static str>,
}

impl ParseError {
    /// An error not tied to one column (field count, unknown nickname).
    pub(crate) fn whole(reason: impl Into<String>) -> Self {
        ParseError {
            field: None,
            token: None,
            reason: reason.into(),
            hint: None,
        }
    }

    /// An error in `field`, about the item `token` as written.
    pub(crate) fn at(field: Field, token: &str, reason: impl Into<String>) -> Self {
        ParseError {
            field: Some(field),
            token: Some(token.to_owned()),
            reason: reason.into(),
            hint: None,
        }
    }

    /// Attaches a dialect hint unless one is already present.
    pub(crate) fn with_hint(mut self, hint: Option<&'static str>) -> Self {
        if self.hint.is_none() {
            self.hint = hint;
        }
        self
    }

    /// The column the problem is in, when it is in one.
    pub fn field(&self) -> Option<Field> {
        self.field
    }

    /// The offending item (one comma-separated piece of the field, as the
    /// parser saw it, lower-cased), when there is one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// What is wrong, without the dialect hint.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// How to convert an expression written for another dialect, if the
    /// text looks like one.
    pub fn hint(&self) -> Option<&'static str> {
        self.hint
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.hint {
            Some(hint) => write!(f, "{} ({})", self.reason, hint),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ParseError {}
