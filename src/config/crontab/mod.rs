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
//! There is one cron grammar in the crate: the time fields and nicknames
//! are judged by the cron engine ([`crate::cronexpr`]), with the same field
//! tables, names and `H`/`L`/`W`/`#` rules a YAML `schedule:` gets, and the
//! entry's job name as the `H` hash key. This module only adds what is
//! crontab-specific on top (`@midnight`, `@reboot`, commands, assignments).
//! [`CrontabOptions`] can swap that schedule check for another one, and
//! plugs in the zone database for `CRON_TZ`: without one, a `CRON_TZ` value
//! is only checked for the shape of a zone name, so an unknown zone surfaces
//! later, at the job build.

use std::fmt;

/// Whether the build target is Windows, the default for
/// [`CrontabOptions::windows`]. Named so the `Default` impl stays visibly
/// target-dependent; an inline `cfg!` expands to a bare `false` on Unix.
const TARGET_IS_WINDOWS: bool = crate::platform::IS_WINDOWS;

/// Label used for job names when the given path has no file-name part.
const FALLBACK_LABEL: &str = "crontab";

/// Nicknames a crontab accepts besides the engine's recurring ones:
/// `@reboot` (once at startup, a schedule kind of its own) and `@midnight`
/// (cron's alias of `@daily`, which the engine leaves to crontab files).
const CRONTAB_ONLY_NICKNAMES: [&str; 2] = ["@midnight", "@reboot"];

/// Whether `word` is a nickname a crontab entry may start with. Matching is
/// case-sensitive, as in cron: the engine's table is lower-case.
fn is_nickname(word: &str) -> bool {
    CRONTAB_ONLY_NICKNAMES.contains(&word) || crate::cronexpr::macro_expansion(word).is_some()
}

/// Every accepted nickname, sorted and comma-separated, for the error that
/// refuses an unknown one.
fn supported_nicknames() -> String {
    let mut names: Vec<&str> = crate::cronexpr::MACROS
        .iter()
        .map(|(name, _)| *name)
        .chain(CRONTAB_ONLY_NICKNAMES)
        .collect();
    names.sort_unstable();
    names.join(", ")
}

/// A caller-supplied schedule validator: `(expression, hash_key)` to
/// `Err(reason)`.
///
/// The expression is a five-field string or a nickname other than
/// `@reboot`; the hash key is the job name, which seeds the `H` form just as
/// the job build will. Only needed to replace the default, which is the
/// crate's cron engine.
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
    /// Validates each entry's schedule; `None` uses the crate's cron engine,
    /// which is what the job build parses the schedule with as well.
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
        "{file}:{line}: unknown schedule nickname '{nickname}'; supported: {supported}",
        supported = supported_nicknames()
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
/// `options.check_schedule` when given, else with the cron engine, in both
/// cases with the hash key `""` (no job name exists yet).
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
        let check = options.check_schedule.unwrap_or(&check_with_engine);
        return check(&schedule, "").is_ok();
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

/// The blank characters that surround and separate crontab words: exactly
/// the engine's field separators (Unicode `White_Space` plus the four
/// information separators U+001C..U+001F, as Python's `str.isspace` has
/// it), so a line splits into the same fields the engine will see. Inside a
/// live line those four are refused as control characters anyway, so they
/// only matter at the very ends of a line.
fn is_blank(c: char) -> bool {
    crate::cronexpr::is_separator(c)
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
        if !is_nickname(nickname) {
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
        let check = options.check_schedule.unwrap_or(&check_with_engine);
        if let Err(reason) = check(&schedule, &name) {
            return Err(CrontabError::InvalidSchedule {
                file: file.to_owned(),
                line,
                schedule: crate::cronexpr::quotable(&schedule).into_owned(),
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

/// The schedule check used when the caller plugs in none: the crate's own
/// cron engine, the same parse the job build runs later, so a field the
/// engine refuses is reported here with the crontab's file and line.
/// `hash_key` seeds `H` items exactly as the job name will.
fn check_with_engine(schedule: &str, hash_key: &str) -> Result<(), String> {
    crate::cronexpr::Schedule::parse(schedule, hash_key)
        .map(|_| ())
        .map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests;
