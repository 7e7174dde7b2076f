//! `resourceLimits`: reading the per-run caps a job writes (`cpu: 0.5`,
//! `memory: 512Mi`, `processes: 64`, `required: true`) into numbers, with
//! the original's grammars, bounds and error texts. Pure: the caps are
//! enforced by `job::contain` through `platform::cgroup`.

use super::model::job::ResourceLimitsSpec;

/// The smallest CPU cap: the kernel's 1 ms `cpu.max` quota per 100 ms
/// period.
pub const MIN_CPU_LIMIT: f64 = 0.01;
/// The largest CPU cap (it keeps the quota arithmetic finite).
pub const MAX_CPU_LIMIT: f64 = 1_000_000.0;
/// The smallest memory cap, bytes.
pub const MIN_MEMORY_LIMIT: u64 = 1 << 20;
/// The largest memory cap, bytes (below 8 EiB).
pub const MAX_MEMORY_LIMIT: u64 = (1 << 63) - 1;
/// The largest process cap: `pids.max` takes at most PID_MAX_LIMIT.
pub const MAX_PROCESS_LIMIT: u64 = 4_194_304;

/// A job's caps, normalized: `None` is uncapped. A job whose caps are all
/// unset (or `max`) has no `ResourceLimits` at all, even with `required`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceLimits {
    /// CPUs (fractions allowed).
    pub cpu: Option<f64>,
    /// Bytes.
    pub memory: Option<u64>,
    /// Processes and threads together (`pids.max` counts both).
    pub processes: Option<u64>,
    /// Refuse a run whose caps cannot all be enforced.
    pub required: bool,
}

impl ResourceLimits {
    /// The caps as `GET /jobs` and `GET /jobs/{name}/resources` serve them.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "cpu": self.cpu,
            "memory_bytes": self.memory,
            "processes": self.processes,
            "required": self.required,
        })
    }
}

/// Why a `resourceLimits` block is refused: the key and the message.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitsError {
    /// `resourceLimits.cpu`, `resourceLimits.memory`, ...
    pub key: &'static str,
    /// What is wrong.
    pub message: String,
}

fn refuse(key: &'static str, message: impl Into<String>) -> LimitsError {
    LimitsError {
        key,
        message: message.into(),
    }
}

/// Reads and range-checks a `resourceLimits` block. `Ok(None)` when no cap
/// is set.
pub fn resolve(spec: &ResourceLimitsSpec) -> Result<Option<ResourceLimits>, LimitsError> {
    let cpu = read(
        spec.cpu.as_deref(),
        "resourceLimits.cpu",
        parse_cpu,
        &cpu_forms(),
    )?;
    let memory = read(
        spec.memory.as_deref(),
        "resourceLimits.memory",
        parse_size,
        MEMORY_FORMS,
    )?;
    let processes = read(
        spec.processes.as_deref(),
        "resourceLimits.processes",
        parse_processes,
        &process_forms(),
    )?;
    // The negated test refuses NaN, which fails every comparison.
    if let Some(cpu) = cpu {
        if !(MIN_CPU_LIMIT..=MAX_CPU_LIMIT).contains(&cpu) {
            return Err(refuse(
                "resourceLimits.cpu",
                format!(
                    "must be a finite number between {} and {} (CPUs)",
                    MIN_CPU_LIMIT, MAX_CPU_LIMIT as u64
                ),
            ));
        }
    }
    let memory = match memory {
        Some(bytes) if !(MIN_MEMORY_LIMIT as u128..=MAX_MEMORY_LIMIT as u128).contains(&bytes) => {
            return Err(refuse(
                "resourceLimits.memory",
                "must be at least 1 MiB and below 8 EiB",
            ))
        }
        other => other.map(|b| b as u64),
    };
    let processes = match processes {
        Some(n) if !(1..=MAX_PROCESS_LIMIT as i128).contains(&n) => {
            return Err(refuse(
                "resourceLimits.processes",
                format!("must be between 1 and {MAX_PROCESS_LIMIT}"),
            ))
        }
        other => other.map(|n| n as u64),
    };
    if cpu.is_none() && memory.is_none() && processes.is_none() {
        return Ok(None);
    }
    Ok(Some(ResourceLimits {
        cpu,
        memory,
        processes,
        required: spec.required.unwrap_or(false),
    }))
}

fn cpu_forms() -> String {
    format!(
        "a CPU count; use a number between {} and {}, such as 0.5 or 2",
        MIN_CPU_LIMIT, MAX_CPU_LIMIT as u64
    )
}

const MEMORY_FORMS: &str = "a size; use a byte count or a number with a K, M, G, or T suffix \
     (powers of 1024), at least 1 MiB and below 8 EiB, such as 512M";

fn process_forms() -> String {
    format!("a process count; use a whole number between 1 and {MAX_PROCESS_LIMIT}")
}

/// One cap from its text: `None` when unset or `max`.
fn read<T>(
    value: Option<&str>,
    key: &'static str,
    parse: fn(&str) -> Option<T>,
    forms: &str,
) -> Result<Option<T>, LimitsError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value.trim();
    if text.eq_ignore_ascii_case("max") {
        return Ok(None);
    }
    match parse(text) {
        Some(number) => Ok(Some(number)),
        None => Err(refuse(
            key,
            format!(
                "cannot read {} as {forms}, or max",
                crate::pyfmt::repr_str(value)
            ),
        )),
    }
}

/// Reads `[0-9](_?[0-9]){0,29}` at `at`: up to 30 digits with single
/// underscores between them. Returns the digits and the position after.
fn digit_run(text: &[u8], at: usize) -> Option<(String, usize)> {
    let mut digits = String::new();
    let mut i = at;
    if !text.get(i)?.is_ascii_digit() {
        return None;
    }
    digits.push(text[i] as char);
    i += 1;
    while digits.len() < 30 {
        match (text.get(i), text.get(i + 1)) {
            (Some(d), _) if d.is_ascii_digit() => {
                digits.push(*d as char);
                i += 1;
            }
            (Some(b'_'), Some(d)) if d.is_ascii_digit() => {
                digits.push(*d as char);
                i += 2;
            }
            _ => break,
        }
    }
    Some((digits, i))
}

/// Bytes for `512M`, `1.5GiB`, `2Gi`, `64Mi` or `+4_096`, else `None`.
/// Every unit is a power of 1024 (Docker's `--memory` convention); the
/// arithmetic is exact and truncates toward zero. The value may exceed
/// the memory bounds (the caller's range check names them).
pub fn parse_size(text: &str) -> Option<u128> {
    let bytes = text.as_bytes();
    let mut i = usize::from(bytes.first() == Some(&b'+'));
    let (whole, fraction) = if bytes.get(i) == Some(&b'.') {
        let (fraction, next) = digit_run(bytes, i + 1)?;
        i = next;
        (String::new(), fraction)
    } else {
        let (whole, next) = digit_run(bytes, i)?;
        i = next;
        let mut fraction = String::new();
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if let Some((digits, next)) = digit_run(bytes, i) {
                fraction = digits;
                i = next;
            }
        }
        (whole, fraction)
    };
    while bytes.get(i).is_some_and(|b| b" \t\n\r\x0b\x0c".contains(b)) {
        i += 1;
    }
    let rest = text.get(i..)?.to_ascii_lowercase();
    let shift: u32 = match rest.as_str() {
        "" | "b" => 0,
        unit => {
            let mut chars = unit.chars();
            let shift = match chars.next() {
                Some('k') => 10,
                Some('m') => 20,
                Some('g') => 30,
                Some('t') => 40,
                _ => return None,
            };
            if !matches!(chars.as_str(), "" | "i" | "b" | "ib") {
                return None;
            }
            shift
        }
    };
    // 30 digits at most: below 2^100, so the shifts below cannot overflow
    // a u128 once the whole part is known to be in range.
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    if whole > u64::MAX as u128 {
        return Some(u128::MAX);
    }
    let mut value = whole << shift;
    if !fraction.is_empty() {
        // floor(F * 2^shift / 10^f) by binary long division, F < 10^f.
        let scale: u128 = 10u128.pow(fraction.len() as u32);
        let mut rest: u128 = fraction.parse().ok()?;
        let mut part: u128 = 0;
        for _ in 0..shift {
            rest *= 2;
            part *= 2;
            if rest >= scale {
                rest -= scale;
                part += 1;
            }
        }
        value += part;
    }
    Some(value)
}

/// CPUs in Python's `float()` syntax (ASCII only, `_` between digits).
pub fn parse_cpu(text: &str) -> Option<f64> {
    if !text.is_ascii() || text.is_empty() {
        return None;
    }
    let bytes = text.as_bytes();
    for (at, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            let before = at.checked_sub(1).and_then(|p| bytes.get(p));
            let after = bytes.get(at + 1);
            if !(before.is_some_and(u8::is_ascii_digit) && after.is_some_and(u8::is_ascii_digit)) {
                return None;
            }
        }
    }
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    cleaned.parse::<f64>().ok()
}

/// A whole number in Python's `int(text, 10)` syntax, 30 digits at most.
pub fn parse_processes(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let (negative, at) = match bytes.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let (digits, end) = digit_run(bytes, at)?;
    if end != bytes.len() {
        return None;
    }
    let n: i128 = digits.parse().ok()?;
    Some(if negative { -n } else { n })
}

/// `num_bytes` in binary units to one decimal: `1023 B`, `64 MiB`,
/// `1.5 GiB`. The unit is the smallest (TiB at most) whose rounded value
/// stays below 1024.
pub fn format_size(num_bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if num_bytes < 1024 {
        return format!("{num_bytes} B");
    }
    let mut value = num_bytes as f64 / 1024.0;
    let mut index = 1;
    let mut text = format!("{value:.1}");
    while text.parse::<f64>().unwrap_or(0.0) >= 1024.0 && index < UNITS.len() - 1 {
        value /= 1024.0;
        index += 1;
        text = format!("{value:.1}");
    }
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[index])
}

#[cfg(test)]
mod tests;
