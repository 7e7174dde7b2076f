//! Classic (Vixie-style) crontab front end.
//!
//! cronstable is configured in YAML, but it also accepts the user-crontab
//! format of `man 5 crontab`. This module is the pure, I/O-free half of that
//! support: it turns crontab *text* into [`CrontabJob`] values that the
//! config loader merges over the same built-in defaults as a YAML `jobs:`
//! entry. Nothing here emulates cron's environment; an entry only gets what
//! the crontab itself says (schedule, command, assignments, `SHELL`,
//! `CRON_TZ`), and everything else comes from cronstable's standard job
//! defaults.
//!
//! What is accepted, line by line (lines are LF-delimited; one trailing CR
//! per line is dropped so CRLF files behave the same):
//!
//! * blank lines and lines whose first non-blank character is `#`;
//! * `NAME = value` assignments (blanks around `=` optional, one pair of
//!   matching outer quotes stripped from the value), which apply to the
//!   entries *below* them;
//! * `@reboot`, `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//!   `@midnight` (rewritten to `@daily`) and `@hourly` entries;
//! * five time fields followed by a command.
//!
//! Deliberately refused, each with a `file:line` error: unescaped `%` in a
//! command (cron's stdin feature is not emulated; `\%` is a literal `%`),
//! control characters in a live line, unknown `@` nicknames, lines that are
//! neither an entry nor an assignment, and entries without a command. There
//! is no line continuation, and the sixth "user" column of system crontabs
//! is not recognised: it simply becomes the first word of the command.
//!
//! Two checks need data this module does not own (the cron expression engine
//! and the IANA zone database). [`CrontabOptions`] lets the caller plug the
//! real ones in. Without them, schedules get a built-in check of the
//! original engine's five-field dialect, which never rejects an expression
//! that engine accepts and only lets through the odd number written with
//! non-ASCII digits, while `CRON_TZ` values are only checked for the shape
//! of a zone name, so an unknown zone surfaces later, at the job build.

use std::fmt;

/// Whether the build target is Windows, the default for
/// [`CrontabOptions::windows`]. Named so the `Default` impl stays visibly
/// target-dependent; an inline `cfg!` expands to a bare `false` on Unix.
const TARGET_IS_WINDOWS: bool = crate::platform::IS_WINDOWS;

/// Label used for job names when the given path has no file-name part.
const FALLBACK_LABEL: &str = "crontab";

/// The accepted schedule nicknames, sorted so error messages list them in
/// a stable order.
const NICKNAMES: [&str; 8] = [
    "@annually",
    "@daily",
    "@hourly",
    "@midnight",
    "@monthly",
    "@reboot",
    "@weekly",
    "@yearly",
];

/// A caller-supplied schedule validator: `(expression, hash_key)` to
/// `Err(reason)`.
///
/// The expression is a five-field string or a nickname other than
/// `@reboot`; the hash key is the job name, which seeds the `H` form just as
/// the job build will. Plug the crate's cron engine in here so a bad field
/// is reported with the crontab's file and line.
pub type ScheduleCheck<'a> = &'a dyn Fn(&str, &str) -> Result<(), String>;

/// A caller-supplied `CRON_TZ` validator: zone name to `Err(reason)`.
pub type TimezoneCheck<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// Knobs for [`parse_crontab_with`] and [`looks_like_crontab`].
#[derive(Clone, Copy)]
pub struct CrontabOptions<'a> {
    /// Apply the Windows rules: `SHELL=/...` is an error, `PATH=/...` a
    /// warning, and `\` and drive prefixes count as path separators when
    /// deriving the job-name label. Defaults to the build target.
    pub windows: bool,
    /// Validates each entry's schedule; `None` uses the built-in structural
    /// check (see the module docs for its limits).
    pub check_schedule: Option<ScheduleCheck<'a>>,
    /// Validates each `CRON_TZ` value; `None` only checks that the value is
    /// shaped like a zone key (non-empty, normalized, relative).
    pub check_timezone: Option<TimezoneCheck<'a>>,
}

impl Default for CrontabOptions<'_> {
    fn default() -> Self {
        CrontabOptions {
            windows: TARGET_IS_WINDOWS,
            check_schedule: None,
            check_timezone: None,
        }
    }
}

impl fmt::Debug for CrontabOptions<'_> {
    // The validators are closures, which have no Debug; show whether each
    // is plugged in instead.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrontabOptions")
            .field("windows", &self.windows)
            .field("check_schedule", &self.check_schedule.is_some())
            .field("check_timezone", &self.check_timezone.is_some())
            .finish()
    }
}

/// One job lowered from one crontab line.
///
/// This carries exactly what the crontab can express. Everything else is
/// left to the standard job defaults applied by the config loader, as for a
/// YAML job that omits the option: the schedule runs in UTC unless
/// `timezone` is set, stderr is captured and stdout is not, a non-zero exit
/// or any stderr output is a failure, `concurrencyPolicy` is `Allow`, there
/// are no retries, the job is enabled, and it runs as cronstable's own user.
/// A `defaults:` section of a YAML file never applies to these jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct CrontabJob {
    /// `<label>:<line>`, where the label is the file-name part of the path
    /// given to the parser (`backup.crontab:4`), or `crontab` when the path
    /// has none. It also serves as the hash key for `H` schedule fields.
    pub name: String,
    /// 1-based physical line number of the entry.
    pub line: usize,
    /// The five time fields re-joined with single spaces
    /// (`"*/15 * * * *"`), or the nickname (`@midnight` becomes `@daily`;
    /// `@reboot` is kept and means "once at startup").
    pub schedule: String,
    /// The rest of the line after the schedule, with `\%` turned into `%`.
    pub command: String,
    /// The `SHELL` assignment in effect, if non-empty; the command then
    /// runs as `$SHELL -c command`. `None` means the standard default shell.
    pub shell: Option<String>,
    /// The `CRON_TZ` assignment in effect, if non-empty; `None` means UTC.
    /// `TZ` is only exported, never interpreted.
    pub timezone: Option<String>,
    /// Every assignment in effect at this line, in first-assignment order;
    /// a reassignment updates the value in place. This includes `SHELL`,
    /// `CRON_TZ` and `MAILTO`, which are all exported to the job.
    pub environment: Vec<(String, String)>,
}

/// Why a crontab could not be lowered.
///
/// Every variant names the file as the caller spelled it (the full path,
/// not just the label used in job names) and the 1-based physical line.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum CrontabError {
    /// A live line holds a C0/C1 control character other than TAB, a DEL,
    /// or U+2028/U+2029. Such text is either unspawnable (NUL) or renders as
    /// a line break in some tools but not in others.
    #[error(
        "{file}:{line}: control character U+{code:04X} in a crontab line; it cannot be part of a \
         schedule, command or environment value. Delete it, or move this job to a YAML config.",
        code = u32::from(*.character)
    )]
    ControlCharacter {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The offending character.
        character: char,
    },
    /// `SHELL=/...` while parsing with the Windows rules: that shell cannot
    /// exist there, so every entry below would fail at spawn.
    #[error(
        "{file}:{line}: SHELL={value} is an absolute POSIX path, which cannot exist on Windows, \
         so every entry below it would fail to start. Delete the SHELL line to use the platform \
         default (%ComSpec%, normally cmd.exe), or name a shell available here (for example \
         SHELL=powershell)."
    )]
    PosixShellOnWindows {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number of the assignment.
        line: usize,
        /// The assigned (unquoted) value.
        value: String,
    },
    /// A `CRON_TZ` value that is not a known time zone.
    #[error("{file}:{line}: CRON_TZ: unknown timezone '{value}': {reason}")]
    UnknownTimezone {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number of the assignment.
        line: usize,
        /// The assigned (unquoted) value.
        value: String,
        /// Why the zone was refused.
        reason: String,
    },
    /// A line starting with `@` whose first word is not a nickname.
    #[error(
        "{file}:{line}: unknown schedule nickname '{nickname}'; supported: @annually, @daily, \
         @hourly, @midnight, @monthly, @reboot, @weekly, @yearly"
    )]
    UnknownNickname {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The first word of the line.
        nickname: String,
    },
    /// Neither an assignment, a nickname entry, nor five fields plus a
    /// command.
    #[error(
        "{file}:{line}: not a valid crontab line: expected 'minute hour day-of-month month \
         day-of-week command', an @nickname entry, or a NAME=value assignment; got '{text}'"
    )]
    MalformedLine {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The line with surrounding blanks removed.
        text: String,
    },
    /// A nickname entry with nothing after the nickname.
    #[error("{file}:{line}: schedule '{schedule}' has no command")]
    MissingCommand {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The schedule as it would have been stored.
        schedule: String,
    },
    /// The schedule validator refused the entry's time fields.
    #[error("{file}:{line}: invalid schedule '{schedule}': {reason}")]
    InvalidSchedule {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The schedule as it would have been stored.
        schedule: String,
        /// The validator's explanation.
        reason: String,
    },
    /// A `%` not preceded by a backslash in a command.
    #[error(
        "{file}:{line}: unescaped '%' in command: cron would pass the rest of the line to the \
         command as standard input, and cronstable does not. Write \\% for a literal percent \
         sign (e.g. date +\\%F), or move this job to a YAML config and feed input with a \
         redirect or heredoc."
    )]
    UnescapedPercent {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
    },
}

impl CrontabError {
    /// The file the error refers to, as the caller spelled it.
    #[must_use]
    pub fn file(&self) -> &str {
        match self {
            CrontabError::ControlCharacter { file, .. }
            | CrontabError::PosixShellOnWindows { file, .. }
            | CrontabError::UnknownTimezone { file, .. }
            | CrontabError::UnknownNickname { file, .. }
            | CrontabError::MalformedLine { file, .. }
            | CrontabError::MissingCommand { file, .. }
            | CrontabError::InvalidSchedule { file, .. }
            | CrontabError::UnescapedPercent { file, .. } => file,
        }
    }

    /// The 1-based line the error refers to.
    #[must_use]
    pub fn line(&self) -> usize {
        match self {
            CrontabError::ControlCharacter { line, .. }
            | CrontabError::PosixShellOnWindows { line, .. }
            | CrontabError::UnknownTimezone { line, .. }
            | CrontabError::UnknownNickname { line, .. }
            | CrontabError::MalformedLine { line, .. }
            | CrontabError::MissingCommand { line, .. }
            | CrontabError::InvalidSchedule { line, .. }
            | CrontabError::UnescapedPercent { line, .. } => *line,
        }
    }
}

/// Something legal but probably unintended, for the caller to log.
#[derive(Debug, Clone, PartialEq)]
pub enum CrontabWarning {
    /// `PATH=/...` under the Windows rules: it replaces the Windows `PATH`
    /// for the entries below, so bare command names stop resolving.
    PosixPathOnWindows {
        /// The file as given by the caller.
        file: String,
        /// 1-based line number of the assignment.
        line: usize,
        /// The assigned (unquoted) value.
        value: String,
    },
}

impl fmt::Display for CrontabWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrontabWarning::PosixPathOnWindows { file, line, value } => write!(
                f,
                "{file}:{line}: PATH={value} replaces the Windows PATH with a POSIX one for the \
                 entries below it, so bare command names will not be found. Set a Windows PATH \
                 or delete the line."
            ),
        }
    }
}

/// The full outcome of [`parse_crontab_with`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedCrontab {
    /// The entries, in file order.
    pub jobs: Vec<CrontabJob>,
    /// Non-fatal findings, in file order.
    pub warnings: Vec<CrontabWarning>,
}

/// Lowers crontab `text` to jobs with the default [`CrontabOptions`].
///
/// `file_label` is the path the text came from. Job names use only its
/// file-name part (`/etc/cron.d/backup.crontab` names jobs
/// `backup.crontab:<line>`; an empty path or one ending in a separator
/// names them `crontab:<line>`), while errors quote it whole. Warnings are
/// dropped; use [`parse_crontab_with`] to get them.
///
/// # Errors
///
/// The first line that cannot be lowered, as a [`CrontabError`] naming the
/// file and line.
pub fn parse_crontab(file_label: &str, text: &str) -> Result<Vec<CrontabJob>, CrontabError> {
    parse_crontab_with(file_label, text, &CrontabOptions::default()).map(|parsed| parsed.jobs)
}

/// Lowers crontab `text` to jobs, stopping at the first bad line.
///
/// See [`parse_crontab`] for how `file_label` is used.
///
/// # Errors
///
/// The first line that cannot be lowered, as a [`CrontabError`] naming the
/// file and line. Lines after it are not examined.
pub fn parse_crontab_with(
    file_label: &str,
    text: &str,
    options: &CrontabOptions<'_>,
) -> Result<ParsedCrontab, CrontabError> {
    let label = job_label(file_label, options.windows);
    // Errors quote the path as given so the user can find the file; only
    // an empty path falls back to the label.
    let file = if file_label.is_empty() {
        label.clone()
    } else {
        file_label.to_owned()
    };
    let mut environment: Vec<(String, String)> = Vec::new();
    let mut parsed = ParsedCrontab::default();
    for (index, raw) in physical_lines(text).enumerate() {
        let line = index + 1;
        let content = raw.trim_matches(is_blank);
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if let Some(character) = content.chars().find(|&c| is_refused_control(c)) {
            return Err(CrontabError::ControlCharacter {
                file,
                line,
                character,
            });
        }
        if let Some((name, raw_value)) = split_assignment(content) {
            let value = unquote(raw_value);
            if name == "CRON_TZ" {
                // Checked here rather than at the entries so the error
                // points at the typo itself.
                let verdict = match options.check_timezone {
                    Some(check) => check(value),
                    None => check_zone_key(value),
                };
                if let Err(reason) = verdict {
                    return Err(CrontabError::UnknownTimezone {
                        file,
                        line,
                        value: value.to_owned(),
                        reason,
                    });
                }
            }
            if options.windows && name == "SHELL" && value.starts_with('/') {
                return Err(CrontabError::PosixShellOnWindows {
                    file,
                    line,
                    value: value.to_owned(),
                });
            }
            if options.windows && name == "PATH" && value.starts_with('/') {
                // Not fatal: entries using absolute command paths still run.
                parsed.warnings.push(CrontabWarning::PosixPathOnWindows {
                    file: file.clone(),
                    line,
                    value: value.to_owned(),
                });
            }
            assign(&mut environment, name, value);
            continue;
        }
        let job = lower_entry(content, &file, &label, line, &environment, options)?;
        parsed.jobs.push(job);
    }
    Ok(parsed)
}

/// Whether the name alone marks `path` as a classic crontab: a file named
/// `crontab`, or one ending in `.crontab` or `.cron`, all case-insensitive.
///
/// A name that is only the extension (`.crontab`) does not count, just as
/// it has no extension for Python's `os.path.splitext`.
#[must_use]
pub fn is_crontab_path(path: &str) -> bool {
    let name = basename(path, TARGET_IS_WINDOWS).to_lowercase();
    if name == FALLBACK_LABEL {
        return true;
    }
    match name.rfind('.') {
        // Leading dots belong to the stem (a hidden file), so an extension
        // needs some other character in front of its dot.
        Some(dot) if name[..dot].chars().any(|c| c != '.') => {
            matches!(&name[dot..], ".crontab" | ".cron")
        }
        _ => false,
    }
}

/// Content sniff for files whose name says nothing either way.
///
/// Only the first line that is neither blank nor a comment is judged, and
/// only shapes that no YAML config can start with count: a `NAME=value`
/// assignment, a line starting with `@` (known nickname or not), or five
/// valid time fields followed by a command. Anything else, including an
/// empty file, is not a crontab. The fields are checked with
/// `options.check_schedule` (hash key `""`) when given, else with the
/// built-in structural check.
#[must_use]
pub fn looks_like_crontab(text: &str, options: &CrontabOptions<'_>) -> bool {
    for raw in physical_lines(text) {
        let content = raw.trim_matches(is_blank);
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if split_assignment(content).is_some() || content.starts_with('@') {
            return true;
        }
        let Some((fields, command)) = split_time_fields(content) else {
            return false;
        };
        if command.is_empty() {
            return false;
        }
        let schedule = fields.join(" ");
        return match options.check_schedule {
            Some(check) => check(&schedule, "").is_ok(),
            None => check_time_fields(&schedule).is_ok(),
        };
    }
    false
}

/// Splits on LF only and drops one trailing CR per line.
///
/// The other characters some tools treat as line breaks (VT, FF, NEL,
/// U+2028, ...) are deliberately not separators: cron does not split on
/// them, and doing so would turn text inside a `#` comment into a live
/// entry and shift every reported line number away from the editor's.
fn physical_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}

/// The blank characters that surround and separate crontab words.
///
/// Unicode `White_Space` plus the four information separators U+001C..U+001F,
/// which the original (Python `str.isspace`) also treats as blanks. Inside
/// a live line those four are refused as control characters anyway, so the
/// addition only matters at the very ends of a line.
fn is_blank(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Characters refused in a live line: C0 controls except TAB (a field
/// separator), DEL, C1 controls, and the Unicode line/paragraph separators.
fn is_refused_control(c: char) -> bool {
    (c.is_control() && c != '\t') || c == '\u{2028}' || c == '\u{2029}'
}

/// The label used in job names: the file-name part of `path`, or
/// [`FALLBACK_LABEL`] when there is none.
fn job_label(path: &str, windows: bool) -> String {
    let name = basename(path, windows);
    if name.is_empty() {
        FALLBACK_LABEL.to_owned()
    } else {
        name.to_owned()
    }
}

/// The part of `path` after its last separator (`/`, plus `\` and a
/// leading drive such as `C:` under the Windows rules).
fn basename(path: &str, windows: bool) -> &str {
    if !windows {
        return path.rsplit('/').next().unwrap_or(path);
    }
    let bytes = path.as_bytes();
    let without_drive = if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        &path[2..]
    } else {
        path
    };
    without_drive
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(without_drive)
}

/// Recognises `NAME = value`, returning the name and the raw value.
///
/// The name is a POSIX-style identifier; anything fancier (dots, quotes)
/// is not an assignment and ends up as a malformed-line error instead.
fn split_assignment(content: &str) -> Option<(&str, &str)> {
    let mut chars = content.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return None,
    }
    let name_end = chars
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(content.len(), |(i, _)| i);
    let (name, rest) = content.split_at(name_end);
    let value = rest.trim_start_matches(is_blank).strip_prefix('=')?;
    Some((name, value.trim_start_matches(is_blank)))
}

/// Strips one pair of matching outer quotes, which is how a value keeps
/// leading or trailing blanks.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

/// Sets `name` in the running environment. A reassignment keeps the
/// variable's original position so the exported order is stable.
fn assign(environment: &mut Vec<(String, String)>, name: &str, value: &str) {
    match environment.iter_mut().find(|(key, _)| key == name) {
        Some(entry) => value.clone_into(&mut entry.1),
        None => environment.push((name.to_owned(), value.to_owned())),
    }
}

/// Splits off the first blank-delimited word; the rest keeps its inner
/// spacing but loses its leading blanks.
fn first_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start_matches(is_blank);
    if text.is_empty() {
        return None;
    }
    let end = text.find(is_blank).unwrap_or(text.len());
    let (word, rest) = text.split_at(end);
    Some((word, rest.trim_start_matches(is_blank)))
}

/// Splits five time fields off `content`, returning them and the remainder
/// (possibly empty); `None` when there are fewer than five words.
fn split_time_fields(content: &str) -> Option<([&str; 5], &str)> {
    let mut fields = [""; 5];
    let mut rest = content;
    for field in &mut fields {
        let (word, tail) = first_word(rest)?;
        *field = word;
        rest = tail;
    }
    Some((fields, rest))
}

/// Turns one entry line into a job, in the original's order of checks:
/// line shape, nickname, command presence, schedule, then `%`.
fn lower_entry(
    content: &str,
    file: &str,
    label: &str,
    line: usize,
    environment: &[(String, String)],
    options: &CrontabOptions<'_>,
) -> Result<CrontabJob, CrontabError> {
    let (schedule, command) = if content.starts_with('@') {
        let (nickname, command) = first_word(content).unwrap_or((content, ""));
        if !NICKNAMES.contains(&nickname) {
            return Err(CrontabError::UnknownNickname {
                file: file.to_owned(),
                line,
                nickname: nickname.to_owned(),
            });
        }
        // The cron engine knows every nickname but this one.
        let schedule = if nickname == "@midnight" {
            "@daily"
        } else {
            nickname
        };
        (schedule.to_owned(), command)
    } else {
        match split_time_fields(content) {
            Some((fields, command)) if !command.is_empty() => (fields.join(" "), command),
            _ => {
                return Err(CrontabError::MalformedLine {
                    file: file.to_owned(),
                    line,
                    text: content.to_owned(),
                })
            }
        }
    };
    if command.is_empty() {
        return Err(CrontabError::MissingCommand {
            file: file.to_owned(),
            line,
            schedule,
        });
    }
    let name = format!("{label}:{line}");
    // @reboot is a scheduler-level marker, not a cron expression.
    if schedule != "@reboot" {
        let verdict = match options.check_schedule {
            Some(check) => check(&schedule, &name),
            None => check_time_fields(&schedule),
        };
        if let Err(reason) = verdict {
            return Err(CrontabError::InvalidSchedule {
                file: file.to_owned(),
                line,
                schedule,
                reason,
            });
        }
    }
    let Some(command) = unescape_percent(command) else {
        return Err(CrontabError::UnescapedPercent {
            file: file.to_owned(),
            line,
        });
    };
    let lookup = |key: &str| {
        environment
            .iter()
            .find(|(name, value)| name == key && !value.is_empty())
            .map(|(_, value)| value.clone())
    };
    Ok(CrontabJob {
        name,
        line,
        schedule,
        command,
        shell: lookup("SHELL"),
        timezone: lookup("CRON_TZ"),
        // A snapshot: later reassignments must not reach this entry.
        environment: environment.to_vec(),
    })
}

/// Applies the crontab `%` rule: `\%` is a literal `%`, and a bare `%`
/// (cron's stdin separator) makes the command unusable, signalled by
/// `None`. Every other backslash is left for the shell.
fn unescape_percent(command: &str) -> Option<String> {
    let mut out = String::with_capacity(command.len());
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'%') => {
                out.push('%');
                chars.next();
            }
            '%' => return None,
            other => out.push(other),
        }
    }
    Some(out)
}

/// The `CRON_TZ` check used when the caller supplies no zone database: the
/// value must at least be shaped like a zone key, i.e. a non-empty,
/// normalized, relative path (`Europe/Berlin`, not `/etc/localtime`,
/// `Europe//Berlin` or `../x`). Whether the zone exists is not known here.
fn check_zone_key(value: &str) -> Result<(), String> {
    let normalized = !value.is_empty()
        && !value.starts_with('/')
        && value
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if normalized {
        Ok(())
    } else {
        Err("a time zone name must be a normalized relative key such as Europe/Berlin".to_owned())
    }
}

/// Where a rangeless `H` in day-of-month stops: a hashed 29-31 would
/// silently skip short months.
const HASH_DAY_OF_MONTH_END: i64 = 28;

/// Bounds and names of one time field, as the cron engine defines them.
struct FieldSpec {
    /// Field name used in messages.
    label: &'static str,
    /// Smallest explicit value.
    lo: i64,
    /// Largest explicit value.
    hi: i64,
    /// Where `*` and a bare `start/step` stop; below `hi` only for the
    /// weekday field, where an explicit 7 is Sunday but `*` covers 0-6.
    step_end: i64,
    /// Case-insensitive value names.
    names: &'static [(&'static str, i64)],
}

const MINUTE: FieldSpec = FieldSpec {
    label: "minute",
    lo: 0,
    hi: 59,
    step_end: 59,
    names: &[],
};

const HOUR: FieldSpec = FieldSpec {
    label: "hour",
    lo: 0,
    hi: 23,
    step_end: 23,
    names: &[],
};

const DAY_OF_MONTH: FieldSpec = FieldSpec {
    label: "day-of-month",
    lo: 1,
    hi: 31,
    step_end: 31,
    names: &[],
};

const MONTH: FieldSpec = FieldSpec {
    label: "month",
    lo: 1,
    hi: 12,
    step_end: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};

const DAY_OF_WEEK: FieldSpec = FieldSpec {
    label: "day-of-week",
    lo: 0,
    hi: 7,
    step_end: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// The built-in schedule check used when the caller plugs in no engine.
///
/// It follows the engine's dialect (values, names, ranges, lists, steps,
/// `?` in the day fields, `L`/`W`/`#` forms, `H` items) closely enough to
/// reject out-of-range numbers, reversed ranges, bad steps and junk tokens,
/// but it errs towards accepting: the few forms it cannot judge exactly
/// (numbers written with non-ASCII digits) pass, and the job build that
/// follows parses the schedule again with the real engine. `H` items are
/// checked for shape and bounds only, since no value is hashed here.
fn check_time_fields(schedule: &str) -> Result<(), String> {
    if schedule.starts_with('@') {
        // Only known nicknames reach this point.
        return Ok(());
    }
    let lowered = schedule.to_lowercase();
    let fields: Vec<&str> = lowered.split(is_blank).filter(|f| !f.is_empty()).collect();
    let [minute, hour, dom, month, dow] = fields.as_slice() else {
        return Err(format!(
            "expected 5 whitespace-separated cron fields, got {}",
            fields.len()
        ));
    };
    check_plain_field(minute, &MINUTE)?;
    check_plain_field(hour, &HOUR)?;
    // A lone '?' in a day field means '*' (Quartz compatibility).
    if *dom != "?" {
        check_day_of_month(dom)?;
    }
    check_plain_field(month, &MONTH)?;
    if *dow != "?" {
        check_day_of_week(dow)?;
    }
    Ok(())
}

/// A field without `L` forms: minute, hour or month.
fn check_plain_field(field: &str, spec: &FieldSpec) -> Result<(), String> {
    for item in field.split(',') {
        if item.starts_with('h') {
            check_hash_item(item, spec)?;
        } else if item.starts_with('l') {
            return Err(format!(
                "'L' is only valid in the day-of-month and day-of-week fields, not {}",
                spec.label
            ));
        } else {
            check_item(item, spec)?;
        }
    }
    Ok(())
}

/// Day-of-month: plain items plus `L`, `L-<n>`, `LW` and `<n>W`.
fn check_day_of_month(field: &str) -> Result<(), String> {
    for item in field.split(',') {
        if item.starts_with('h') {
            check_hash_item(item, &DAY_OF_MONTH)?;
        } else if item == "l" || item == "lw" {
            // The month's final day, or its last weekday.
        } else if let Some(offset) = item.strip_prefix("l-") {
            check_number(offset, 1, 30, "day-of-month 'L-' offset", item)?;
        } else if item.starts_with('l') {
            return Err(format!(
                "'L' in the day-of-month field takes the forms L, L-<n> or LW, got '{item}'"
            ));
        } else if let Some(day) = item.strip_suffix('w') {
            check_number(day, 1, 31, "day-of-month 'W' day", item)?;
        } else {
            check_item(item, &DAY_OF_MONTH)?;
        }
    }
    Ok(())
}

/// Day-of-week: plain items plus `L<n>`, `L<a>-<b>` and `<d>#<n>`.
fn check_day_of_week(field: &str) -> Result<(), String> {
    for item in field.split(',') {
        if item.starts_with('h') {
            check_hash_item(item, &DAY_OF_WEEK)?;
        } else if item == "l" {
            return Err(
                "a bare 'L' is only valid in the day-of-month field; in day-of-week write L<n>"
                    .to_owned(),
            );
        } else if let Some(days) = item.strip_prefix('l') {
            let (first, last) = days.split_once('-').unwrap_or((days, days));
            check_number(first, 0, 7, "day-of-week 'L' day", item)?;
            check_number(last, 0, 7, "day-of-week 'L' day", item)?;
        } else if let Some((day, ordinal)) = item.split_once('#') {
            if ordinal.contains('#') {
                return Err(format!(
                    "invalid day-of-week field '{item}': more than one '#'"
                ));
            }
            resolve(day, &DAY_OF_WEEK, item)?;
            check_number(ordinal, 1, 5, "day-of-week '#' ordinal", item)?;
        } else {
            check_item(item, &DAY_OF_WEEK)?;
        }
    }
    Ok(())
}

/// How the original engine reads a numeric token (Python's `int(token, 10)`).
enum IntToken {
    /// Read exactly: ASCII digits with an optional sign and single
    /// underscores between digits.
    Exact(i64),
    /// Possibly a number in a form not modelled here (non-ASCII digits).
    Unknown,
    /// Certainly not a number.
    Invalid,
}

/// Classifies `token` the way the original engine's integer reading would:
/// an optional sign, then digits with single underscores between them.
fn read_int(token: &str) -> IntToken {
    let (negative, body) = match token.as_bytes().first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    // Underscores are allowed only singly and between digits.
    if body.is_empty() || body.split('_').any(str::is_empty) {
        return IntToken::Invalid;
    }
    let digits: String = body.chars().filter(|&c| c != '_').collect();
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        let magnitude = parse_ascii(&digits);
        return IntToken::Exact(if negative { -magnitude } else { magnitude });
    }
    if digits.chars().all(char::is_numeric) {
        IntToken::Unknown
    } else {
        IntToken::Invalid
    }
}

/// Parses ASCII digits, saturating so an absurdly long number still reads
/// as out of range rather than failing differently.
fn parse_ascii(text: &str) -> i64 {
    text.bytes().fold(0i64, |acc, b| {
        acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
    })
}

/// A number written with plain digits only (the engine's `isdigit` forms:
/// `L-<n>`, `<n>W`, `L<n>`, `#<n>`) within `lo..=hi`. Non-ASCII digits are
/// let through unjudged; anything else fails.
fn check_number(text: &str, lo: i64, hi: i64, what: &str, item: &str) -> Result<(), String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let value = parse_ascii(text);
        if (lo..=hi).contains(&value) {
            return Ok(());
        }
        return Err(format!("{what} {value} out of range [{lo}, {hi}]"));
    }
    if !text.is_empty() && text.chars().all(char::is_numeric) {
        return Ok(());
    }
    Err(format!("invalid {what} in '{item}'"))
}

/// One value token: `Some(value)` when it can be judged exactly, `None`
/// when it might be a number in a form this check does not model.
fn resolve(token: &str, spec: &FieldSpec, item: &str) -> Result<Option<i64>, String> {
    if let Some(&(_, value)) = spec.names.iter().find(|(name, _)| *name == token) {
        return Ok(Some(value));
    }
    match read_int(token) {
        IntToken::Exact(value) if (spec.lo..=spec.hi).contains(&value) => Ok(Some(value)),
        IntToken::Exact(value) => Err(format!(
            "{} value {value} out of range [{}, {}]",
            spec.label, spec.lo, spec.hi
        )),
        IntToken::Unknown => Ok(None),
        IntToken::Invalid => Err(format!("invalid {} field '{item}'", spec.label)),
    }
}

/// One list item: `*`, `a`, `a-b`, each optionally followed by `/step`.
fn check_item(item: &str, spec: &FieldSpec) -> Result<(), String> {
    let (head, step_text) = match item.split_once('/') {
        Some((head, step)) => (head, Some(step)),
        None => (item, None),
    };
    let mut step = None;
    if let Some(text) = step_text {
        if text.contains('/') {
            return Err(format!(
                "invalid {} field '{item}': more than one '/'",
                spec.label
            ));
        }
        step = resolve_step(text, spec, item)?;
    }
    let start = if head == "*" {
        Some(spec.lo)
    } else if let Some((first, last)) = head.split_once('-') {
        let start = resolve(first, spec, item)?;
        let mut end = resolve(last, spec, item)?;
        // A weekday range ending in 0 means "through Sunday" (sat-sun).
        if end == Some(0) && spec.label == DAY_OF_WEEK.label {
            end = Some(7);
        }
        if let (Some(start), Some(end)) = (start, end) {
            if start > end {
                return Err(format!("{} range start {start} > end {end}", spec.label));
            }
        }
        start
    } else {
        let start = resolve(head, spec, item)?;
        if step_text.is_none() {
            return Ok(());
        }
        if let Some(start) = start {
            if start > spec.step_end {
                return Err(format!(
                    "{} range start {start} > end {}",
                    spec.label, spec.step_end
                ));
            }
        }
        start
    };
    if let (Some(start), Some(step)) = (start, step) {
        let landing = start.saturating_add(step);
        if !(spec.lo..=spec.hi).contains(&landing) {
            return Err(format!(
                "{} step {step} from {start} escapes [{}, {}]",
                spec.label, spec.lo, spec.hi
            ));
        }
    }
    Ok(())
}

/// The `/step` part of an item; `None` when it cannot be judged exactly.
fn resolve_step(text: &str, spec: &FieldSpec, item: &str) -> Result<Option<i64>, String> {
    match read_int(text) {
        IntToken::Exact(step) if step <= 0 => {
            Err(format!("{} step must be positive, got {step}", spec.label))
        }
        IntToken::Exact(step) if step > spec.hi => Err(format!(
            "{} step {step} too large (max {})",
            spec.label, spec.hi
        )),
        IntToken::Exact(step) => Ok(Some(step)),
        IntToken::Unknown => Ok(None),
        IntToken::Invalid => Err(format!("invalid {} step '{item}'", spec.label)),
    }
}

/// A Jenkins-style hashed item: `h`, `h/n`, `h(a-b)` or `h(a-b)/n`
/// (lowercased). Bare and stepped forms span the whole field, except in
/// day-of-month where they stop at 28 so short months never miss a run.
fn check_hash_item(item: &str, spec: &FieldSpec) -> Result<(), String> {
    let malformed = || {
        format!(
            "invalid {} field '{item}': an 'H' item takes the forms H, H/n, H(a-b) or H(a-b)/n \
             (numeric range only)",
            spec.label
        )
    };
    let rest = item.strip_prefix('h').ok_or_else(malformed)?;
    let (range, step) = match rest.split_once('/') {
        Some((range, step)) => (range, Some(step)),
        None => (rest, None),
    };
    let plain_number = |text: &str| -> Result<Option<i64>, String> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            Ok(Some(parse_ascii(text)))
        } else if !text.is_empty() && text.chars().all(char::is_numeric) {
            // Non-ASCII digits: plausible, but not judged here.
            Ok(None)
        } else {
            Err(malformed())
        }
    };
    let (start, end) = if range.is_empty() {
        let end = if spec.label == DAY_OF_MONTH.label {
            HASH_DAY_OF_MONTH_END
        } else {
            spec.step_end
        };
        (Some(spec.lo), Some(end))
    } else {
        let inner = range
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(malformed)?;
        let (first, last) = inner.split_once('-').ok_or_else(malformed)?;
        let (start, end) = (plain_number(first)?, plain_number(last)?);
        for value in [start, end].into_iter().flatten() {
            if !(spec.lo..=spec.hi).contains(&value) {
                return Err(format!(
                    "{} value {value} out of range [{}, {}]",
                    spec.label, spec.lo, spec.hi
                ));
            }
        }
        if let (Some(start), Some(end)) = (start, end) {
            if start > end {
                return Err(format!("{} range start {start} > end {end}", spec.label));
            }
        }
        (start, end)
    };
    let Some(step) = step else {
        return Ok(());
    };
    let Some(step) = plain_number(step)? else {
        return Ok(());
    };
    if step == 0 {
        return Err(format!("{} step must be positive, got 0", spec.label));
    }
    if let (Some(start), Some(end)) = (start, end) {
        let span = end - start + 1;
        if step > span {
            return Err(format!(
                "{} step {step} exceeds the H range's span of {span}",
                spec.label
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
