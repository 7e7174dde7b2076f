//! The bodies of `GET /status` (JSON and text): written byte by byte
//! from the names kept per job table and the scheduler's table snapshot.

use super::{countdown_ms, is_reboot, push_countdown, relative};
use crate::scheduler::control::StatusTable;
use chrono::{DateTime, Utc};

/// What `GET /status` writes of each job that only a new job table can
/// change, kept between requests (see [`crate::web::cache::StatusCache`]):
/// each job's opening `{"job":"<name, JSON-escaped>"` and its name as the
/// text form writes it, back to back in two buffers, so a request copies
/// them in order instead of escaping or even reading 10,000 configs.
#[derive(Debug)]
pub struct StatusNames {
    /// The table these are the names of ([`StatusTable::table_id`]).
    table_id: u64,
    /// `{"job":"…"` of every job, back to back.
    json: Vec<u8>,
    /// Every job's name, back to back.
    text: Vec<u8>,
    /// Per job: where its pieces end in `json` and `text`, and what its
    /// config says of its row.
    rows: Vec<NameRow>,
}

/// Where one job's pieces end in [`StatusNames`], and its row kind.
#[derive(Debug, Clone, Copy)]
struct NameRow {
    json_end: usize,
    text_end: usize,
    kind: RowKind,
}

/// What a job's config decides about its status row.
#[derive(Debug, Clone, Copy, PartialEq)]
enum RowKind {
    /// `enabled: false`.
    Disabled,
    /// An `@reboot` schedule.
    Reboot,
    /// A calendar schedule.
    Cron,
}

impl StatusNames {
    /// The names of `table`'s jobs.
    pub fn of(table: &StatusTable) -> StatusNames {
        let jobs = &table.jobs;
        let mut names = StatusNames {
            table_id: table.table_id,
            json: Vec::with_capacity(jobs.iter().map(|j| j.name.len() + 12).sum()),
            text: Vec::with_capacity(jobs.iter().map(|j| j.name.len()).sum()),
            rows: Vec::with_capacity(jobs.len()),
        };
        for job in jobs.iter() {
            names.json.extend_from_slice(b"{\"job\":");
            // The escaping serde gives the field (a Vec takes any write).
            let _ = serde_json::to_writer(&mut names.json, job.name.as_str());
            names.text.extend_from_slice(job.name.as_bytes());
            let kind = if !job.enabled {
                RowKind::Disabled
            } else if is_reboot(job) {
                RowKind::Reboot
            } else {
                RowKind::Cron
            };
            names.rows.push(NameRow {
                json_end: names.json.len(),
                text_end: names.text.len(),
                kind,
            });
        }
        names
    }

    /// Whether these are the names of `table`'s jobs.
    pub fn fits(&self, table: &StatusTable) -> bool {
        self.table_id == table.table_id && self.rows.len() == table.jobs.len()
    }

    /// Each job's pieces with its state in `table`, in order: the JSON
    /// opening, the name, the row kind, the next fire and, while it runs,
    /// its pids.
    fn rows<'a>(&'a self, table: &'a StatusTable) -> impl Iterator<Item = RowParts<'a>> + 'a {
        let mut running = table.running.iter().peekable();
        let (mut json_from, mut text_from) = (0, 0);
        self.rows
            .iter()
            .zip(&table.next_fires)
            .enumerate()
            .map(move |(index, (row, next_fire))| {
                let json = &self.json[json_from..row.json_end];
                let text = &self.text[text_from..row.text_end];
                (json_from, text_from) = (row.json_end, row.text_end);
                let pids = running
                    .next_if(|(at, _)| *at == index)
                    .map(|(_, pids)| &pids[..]);
                RowParts {
                    opening: json,
                    name: text,
                    kind: row.kind,
                    next_fire: *next_fire,
                    pids,
                }
            })
    }
}

/// One job's pieces of a status row ([`StatusNames::rows`]).
struct RowParts<'a> {
    /// `{"job":"…"`.
    opening: &'a [u8],
    /// The name.
    name: &'a [u8],
    kind: RowKind,
    next_fire: Option<DateTime<Utc>>,
    /// The pids while the job runs.
    pids: Option<&'a [u32]>,
}

/// The body of `GET /status` (JSON form) for `table` at `now`: the bytes
/// serde gives the rows ([`StatusRow`]), written straight into one buffer.
/// `names` must fit the table ([`StatusNames::fits`]).
pub fn status_json(names: &StatusNames, table: &StatusTable, now: DateTime<Utc>) -> Vec<u8> {
    let mut out = Vec::with_capacity(names.json.len() + table.jobs.len() * 48 + 2);
    out.push(b'[');
    for (i, row) in names.rows(table).enumerate() {
        let RowParts {
            opening,
            kind,
            next_fire,
            pids,
            ..
        } = row;
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(opening);
        let never_fires = kind == RowKind::Cron && next_fire.is_none();
        if let Some(pids) = pids {
            if never_fires {
                out.extend_from_slice(b",\"never_fires\":true");
            }
            out.extend_from_slice(b",\"pid\":[");
            push_pids(&mut out, pids, b",");
            out.extend_from_slice(b"],\"status\":\"running\"}");
            continue;
        }
        match kind {
            RowKind::Disabled => out.extend_from_slice(b",\"status\":\"disabled\"}"),
            RowKind::Reboot => {
                out.extend_from_slice(b",\"scheduled_in\":\"@reboot\",\"status\":\"scheduled\"}")
            }
            RowKind::Cron => {
                if never_fires {
                    out.extend_from_slice(b",\"never_fires\":true");
                }
                out.extend_from_slice(b",\"scheduled_in\":");
                match countdown_ms(next_fire, now) {
                    Some(ms) => push_countdown(&mut out, ms),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"status\":\"scheduled\"}");
            }
        }
    }
    out.push(b']');
    out
}

/// Writes `pids` in decimal, `separator` between them (both forms of
/// `GET /status` list a running job's pids).
fn push_pids(out: &mut Vec<u8>, pids: &[u32], separator: &[u8]) {
    let mut digits = itoa::Buffer::new();
    for (i, pid) in pids.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(digits.format(*pid).as_bytes());
    }
}

/// The body of `GET /status` (text form) for `table` at `now`: the lines
/// of [`write_status_line`], written straight into one buffer. `names`
/// must fit the table ([`StatusNames::fits`]).
pub fn status_text(names: &StatusNames, table: &StatusTable, now: DateTime<Utc>) -> Vec<u8> {
    let mut out = Vec::with_capacity(names.text.len() + table.jobs.len() * 32);
    let mut digits = itoa::Buffer::new();
    for row in names.rows(table) {
        let RowParts {
            name,
            kind,
            next_fire,
            pids,
            ..
        } = row;
        out.extend_from_slice(name);
        if let Some(pids) = pids {
            out.extend_from_slice(b": running (pid: ");
            push_pids(&mut out, pids, b", ");
            out.extend_from_slice(b")\n");
            continue;
        }
        match kind {
            RowKind::Disabled => out.extend_from_slice(b": disabled\n"),
            RowKind::Reboot => out.extend_from_slice(b": scheduled (@reboot)\n"),
            RowKind::Cron => match countdown_ms(next_fire, now) {
                None => {
                    out.extend_from_slice(b": never fires (schedule has no future occurrence)\n")
                }
                Some(ms) => {
                    let (count, unit) = relative(ms as f64 / 1000.0);
                    out.extend_from_slice(b": scheduled (in ");
                    out.extend_from_slice(digits.format(count).as_bytes());
                    out.push(b' ');
                    out.extend_from_slice(unit.as_bytes());
                    out.extend_from_slice(b")\n");
                }
            },
        }
    }
    out
}
