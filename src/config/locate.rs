//! Finds the line a job or one of its keys is written on, so that errors
//! found after parsing (ranges, cross-field rules, duplicates) can still name
//! a line. serde_yaml keeps no positions in parsed values; a light scan of
//! the text is enough for block-style YAML, and flow-style jobs simply get
//! no line.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Line numbers of the jobs of one YAML text, by name.
#[derive(Debug, Default)]
pub struct LineIndex<'a> {
    lines: Vec<&'a str>,
    /// The `name: <value>` lines of the text, by value, built once so that
    /// locating 10,000 jobs stays linear.
    names: HashMap<&'a str, NameLines>,
}

/// The 0-based line indexes of one name's `name:` lines. The first is held
/// inline: nearly every name is written once, and a list per name was
/// 10,000 small allocations on a 10,000-job file.
#[derive(Debug)]
struct NameLines {
    first: usize,
    more: Vec<usize>,
    /// How many of them [`LineIndex::next_job_line`] has handed out.
    taken: usize,
}

impl NameLines {
    fn nth(&self, n: usize) -> Option<usize> {
        match n {
            0 => Some(self.first),
            _ => self.more.get(n - 1).copied(),
        }
    }
}

impl<'a> LineIndex<'a> {
    /// Indexes `text`.
    pub fn new(text: &'a str) -> Self {
        // One line per `\n`, give or take the last: sized once.
        let mut lines: Vec<&'a str> = Vec::with_capacity(memchr_count(text) + 1);
        lines.extend(text.lines());
        let mut names: HashMap<&'a str, NameLines> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            // A `name` key, quoted or not, contains the word: most lines
            // are skipped by this search alone (key_value was 6 % of
            // loading 10,000 jobs).
            if !line.contains("name") {
                continue;
            }
            if let Some(("name", value)) = key_value(line) {
                match names.entry(value) {
                    Entry::Occupied(mut seen) => seen.get_mut().more.push(i),
                    Entry::Vacant(slot) => {
                        slot.insert(NameLines {
                            first: i,
                            more: Vec::new(),
                            taken: 0,
                        });
                    }
                }
            }
        }
        LineIndex { lines, names }
    }

    /// The 1-based line of `name: <job>` (or `- name: <job>`).
    #[cfg(test)]
    pub fn job_line(&self, job: &str) -> Option<usize> {
        self.job_line_nth(job, 0)
    }

    /// The 1-based line of the `nth` (0-based) `name: <job>` in the text,
    /// for a name written more than once.
    #[cfg(test)]
    pub fn job_line_nth(&self, job: &str, nth: usize) -> Option<usize> {
        self.names.get(job)?.nth(nth).map(|i| i + 1)
    }

    /// The 1-based line of the next `name: <job>` not handed out yet: jobs
    /// asked for in document order get their own line even when a name is
    /// written twice (the duplicate is then reported at its own line).
    pub fn next_job_line(&mut self, job: &str) -> Option<usize> {
        let lines = self.names.get_mut(job)?;
        let line = lines.nth(lines.taken);
        lines.taken += 1;
        line.map(|i| i + 1)
    }

    /// The 1-based line of the first `key:` after the job's own line, within
    /// the same list item (stops at the next item of the job list).
    pub fn key_line(&self, job_line: usize, key: &str) -> Option<usize> {
        let start = job_line.checked_sub(1)?;
        let item_indent = self.item_indent(start)?;
        for (offset, line) in self.lines.iter().enumerate().skip(start) {
            if offset > start {
                let indent = line.len() - line.trim_start().len();
                let trimmed = line.trim_start();
                if !trimmed.is_empty()
                    && !trimmed.starts_with('#')
                    && (indent < item_indent || (indent == item_indent && trimmed.starts_with('-')))
                {
                    return None;
                }
            }
            if key_value(line).is_some_and(|(k, _)| k == key) {
                return Some(offset + 1);
            }
        }
        None
    }

    /// The 1-based line of the first `key:` anywhere in the text.
    pub fn key_line_anywhere(&self, key: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|line| key_value(line).is_some_and(|(k, _)| k == key))
            .map(|i| i + 1)
    }

    /// Indentation of the list item that contains line `index`.
    fn item_indent(&self, index: usize) -> Option<usize> {
        (0..=index).rev().find_map(|i| {
            let line = self.lines[i];
            let trimmed = line.trim_start();
            trimmed.starts_with('-').then(|| line.len() - trimmed.len())
        })
    }
}

/// The number of line feeds in `text`.
fn memchr_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

/// Splits `  - key: value` into (`key`, unquoted `value`).
fn key_value(line: &str) -> Option<(&str, &str)> {
    if !line.contains(':') {
        return None;
    }
    let mut t = line.trim_start();
    if let Some(rest) = t.strip_prefix('-') {
        t = rest.trim_start();
    }
    let (key, value) = t.split_once(':')?;
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
    let mut value = value.trim();
    if let Some((before, _comment)) = value.split_once(" #") {
        value = before.trim_end();
    }
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value);
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "defaults:\n  shell: /bin/bash\njobs:\n  - name: a\n    command: x\n    killTimeout: -1\n  - name: \"b\"\n    command: y\n    schedule: '* * * * *'\n";

    #[test]
    fn finds_jobs_by_name() {
        let idx = LineIndex::new(TEXT);
        assert_eq!(idx.job_line("a"), Some(4));
        assert_eq!(idx.job_line("b"), Some(7));
        assert_eq!(idx.job_line("zzz"), None);
        let twice = LineIndex::new("jobs:\n- name: t\n- name: t\n");
        assert_eq!(twice.job_line_nth("t", 1), Some(3));
        assert_eq!(twice.job_line_nth("t", 2), None);
    }

    #[test]
    fn hands_out_each_line_of_a_name_once_in_order() {
        let mut idx = LineIndex::new("jobs:\n- name: t\n- name: u\n- name: t\n- name: t\n");
        assert_eq!(idx.next_job_line("t"), Some(2));
        assert_eq!(idx.next_job_line("u"), Some(3));
        assert_eq!(idx.next_job_line("t"), Some(4));
        assert_eq!(idx.next_job_line("t"), Some(5));
        assert_eq!(idx.next_job_line("t"), None);
        assert_eq!(idx.next_job_line("u"), None);
        assert_eq!(idx.next_job_line("v"), None);
    }

    #[test]
    fn finds_keys_within_the_job_only() {
        let idx = LineIndex::new(TEXT);
        assert_eq!(idx.key_line(4, "killTimeout"), Some(6));
        assert_eq!(idx.key_line(4, "schedule"), None);
        assert_eq!(idx.key_line(7, "schedule"), Some(9));
    }
}
