//! Samples of the exposition picked by name, without writing the whole
//! exposition: what a query for a few series (the MCP server's
//! `cron_query_metrics`) needs from 10,000 jobs' 240,000 lines.
//!
//! The answer is defined by the text: the sample lines of
//! [`Snapshot::encode`] read one by one ([`sample_line`]), those whose
//! name is wanted counted, the first `limit` of them kept.
//! [`Snapshot::samples`] gives that answer from the snapshot itself: the
//! daemon's, cluster's and other small families are encoded and read as
//! text, but a per-job family none of whose sample names is wanted is
//! skipped whole, and in one that is, a job's lines are written only
//! while samples are still being kept; past that, they are counted
//! ([`job_text::sample_counts`]). The tests compare both ways on the
//! encodings' awkward inputs.

use super::{encode_with_crate, head_registry, job_text, tail_registry, Format, Snapshot};

/// One sample line: its metric name, its label block as written (`{...}`,
/// or empty), and its value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The sample's name (with any `_total`, `_bucket`, ... suffix).
    pub name: String,
    /// The label block, braces included; empty without labels.
    pub labels: String,
    /// The value, as the exposition spells it (`NaN`, `+Inf`, ...).
    pub value: String,
}

/// Reads one line of an exposition as a sample: its name, label block and
/// value; `None` for a blank line, a comment, or a line that does not
/// start with a metric name.
pub fn sample_line(line: &str) -> Option<(&str, &str, &str)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = &line[name_end..];
    let (labels, rest) = if rest.starts_with('{') {
        let close = rest.find('}')?;
        (&rest[..=close], &rest[close + 1..])
    } else {
        ("", rest)
    };
    let value = rest.split_whitespace().next()?;
    Some((name, labels, value))
}

/// The samples a query has kept and how many it has matched.
struct Found<'a> {
    wanted: &'a dyn Fn(&str) -> bool,
    limit: usize,
    samples: Vec<Sample>,
    total: usize,
}

impl Found<'_> {
    fn full(&self) -> bool {
        self.samples.len() >= self.limit
    }

    /// Reads the sample lines of `text`.
    fn read(&mut self, text: &str) {
        for (name, labels, value) in text.lines().filter_map(sample_line) {
            if !(self.wanted)(name) {
                continue;
            }
            self.total += 1;
            if !self.full() {
                self.samples.push(Sample {
                    name: name.to_owned(),
                    labels: labels.to_owned(),
                    value: value.to_owned(),
                });
            }
        }
    }
}

/// The samples of an exposition `text` whose name is `wanted`: the first
/// `limit` of them, in order, and how many there are.
pub fn text_samples(
    text: &str,
    wanted: &dyn Fn(&str) -> bool,
    limit: usize,
) -> (Vec<Sample>, usize) {
    let mut found = Found {
        wanted,
        limit,
        samples: Vec::new(),
        total: 0,
    };
    found.read(text);
    (found.samples, found.total)
}

impl Snapshot {
    /// What [`text_samples`] reads from [`Snapshot::encode`]`(format)`,
    /// without encoding the per-job families it need not read.
    pub fn samples(
        &self,
        format: Format,
        wanted: &dyn Fn(&str) -> bool,
        limit: usize,
    ) -> (Vec<Sample>, usize) {
        let scrape = &self.0;
        let mut found = Found {
            wanted,
            limit,
            samples: Vec::new(),
            total: 0,
        };
        let mut text = String::new();
        encode_with_crate(&mut text, &head_registry(scrape), format, false);
        found.read(&text);
        let mut writer = job_text::Writer::new(format);
        for family in job_text::FAMILIES {
            let mut want = [false; 3];
            for (slot, name) in want.iter_mut().zip(job_text::sample_names(family)) {
                *slot = wanted(name);
            }
            if !want.contains(&true) {
                continue;
            }
            for row in scrape.jobs.iter() {
                if found.full() {
                    let counts = job_text::sample_counts(family, row);
                    found.total += (0..3)
                        .filter(|&i| want[i])
                        .map(|i| counts[i])
                        .sum::<usize>();
                } else {
                    text.clear();
                    writer.write_lines(&mut text, family, row);
                    found.read(&text);
                }
            }
        }
        text.clear();
        encode_with_crate(&mut text, &tail_registry(scrape), format, true);
        found.read(&text);
        (found.samples, found.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_samples() {
        assert_eq!(sample_line("  a_total 1 "), Some(("a_total", "", "1")));
        assert_eq!(
            sample_line("b{x=\"1 2\"} NaN 1700000000"),
            Some(("b", "{x=\"1 2\"}", "NaN"))
        );
        for skipped in [
            "",
            "   ",
            "# HELP a x",
            "9lives 1",
            "{x=\"1\"} 2",
            "a",
            "b{x 1",
        ] {
            assert_eq!(sample_line(skipped), None, "{skipped:?}");
        }
        // Whatever follows the name is read as the value.
        assert_eq!(sample_line("bad line{"), Some(("bad", "", "line{")));
    }

    #[test]
    fn text_samples_count_every_match_and_keep_the_first() {
        let text = "# HELP x\ncronstable_jobs 3\njob_runs_total{job=\"a b\"} 7\n\nbad line{\n";
        let all = |_: &str| true;
        let (samples, total) = text_samples(text, &all, 10);
        assert_eq!(total, 3);
        assert_eq!(
            samples[1],
            Sample {
                name: "job_runs_total".into(),
                labels: "{job=\"a b\"}".into(),
                value: "7".into(),
            }
        );
        let runs = |name: &str| name.contains("runs");
        let (none, total) = text_samples(text, &runs, 0);
        assert_eq!((none.len(), total), (0, 1));
    }
}
