//! Time zones and the DST policy.
//!
//! A schedule is matched against wall-clock labels; a zone turns labels into
//! real instants. Two kinds of label need a rule:
//!
//! - a label inside a spring-forward gap does not exist: it is read with
//!   the offset in force *before* the change, so it fires once, shifted
//!   later by the size of the jump (02:30 in New York on a spring-forward
//!   day fires at 03:30 EDT);
//! - a label inside a fall-back overlap exists twice: it fires on the first
//!   occurrence only.
//!
//! Both are "read the label with the pre-transition offset", which is the
//! original's `fold=0` rule; `next` then returns the first matching label,
//! in label order, whose instant lies strictly after "now".

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};

/// The clock a schedule is evaluated in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeBase {
    /// Coordinated Universal Time (the default: `utc: true`).
    Utc,
    /// The host's local zone (`utc: false` without `timezone`), with its
    /// DST rules applied under the same policy as an IANA zone.
    Local,
    /// An IANA zone (`timezone: Europe/Berlin`).
    Zone(chrono_tz::Tz),
}

/// Which reading of an ambiguous or skipped wall time to take, as Python's
/// `fold` attribute defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fold {
    /// `fold=0`: the offset in force before the transition (the first of
    /// two repeated labels; a skipped label lands after the jump).
    Before,
    /// `fold=1`: the offset in force after the transition (the second of
    /// two repeated labels).
    After,
}

/// The UTC offset of `tz` at a UTC instant, in seconds.
pub(crate) fn offset_at<T: TimeZone>(tz: &T, instant: NaiveDateTime) -> i64 {
    offset_secs(tz, instant)
}

fn offset_secs<T: TimeZone>(tz: &T, instant: NaiveDateTime) -> i64 {
    i64::from(
        tz.offset_from_utc_datetime(&instant)
            .fix()
            .local_minus_utc(),
    )
}

/// The wall-clock label of a UTC instant in `tz`.
pub(crate) fn label_of<T: TimeZone>(tz: &T, instant: NaiveDateTime) -> NaiveDateTime {
    instant + Duration::seconds(offset_secs(tz, instant))
}

/// The offsets in force before and after the transition that makes
/// `label` fall in a gap.
///
/// A day before the label is certainly before the transition (no offset
/// reaches 24 hours), which gives a first guess of the old offset; the
/// instant that guess maps the label to lies after the transition and
/// gives the new offset; and the label read with the new offset lies before
/// the transition, which confirms the old one.
fn gap_offsets<T: TimeZone>(tz: &T, label: NaiveDateTime) -> (i64, i64) {
    let guess = offset_secs(tz, label - Duration::days(1));
    let after = offset_secs(tz, label - Duration::seconds(guess));
    let before = offset_secs(tz, label - Duration::seconds(after));
    (before, after)
}

/// The UTC instant of a wall-clock label under `fold`.
pub(crate) fn resolve<T: TimeZone>(tz: &T, label: NaiveDateTime, fold: Fold) -> NaiveDateTime {
    let offset = match tz.offset_from_local_datetime(&label) {
        LocalResult::Single(o) => i64::from(o.fix().local_minus_utc()),
        LocalResult::Ambiguous(a, b) => {
            let (a, b) = (
                i64::from(a.fix().local_minus_utc()),
                i64::from(b.fix().local_minus_utc()),
            );
            // an overlap comes from the offset dropping, so the earlier
            // instant (larger offset) is the pre-transition reading
            match fold {
                Fold::Before => a.max(b),
                Fold::After => a.min(b),
            }
        }
        LocalResult::None => {
            let (before, after) = gap_offsets(tz, label);
            match fold {
                Fold::Before => before,
                Fold::After => after,
            }
        }
    };
    label - Duration::seconds(offset)
}

/// How long before "now" a spring-forward can still hold back a pending
/// fire: wider than any real offset jump (Samoa skipped a whole day).
const GAP_PROBE_HOURS: i64 = 26;

/// Where the label search for `next` starts.
///
/// Normally now's own label. Right after a spring-forward, though, a label
/// that sat in the gap fires up to one jump *later* than itself, so it may
/// still be in the future although its label is behind now's; rewinding the
/// start by the jump lets the search produce those labels, and the caller's
/// strictly-after-now check discards any that already passed.
fn rewound_seed<T: TimeZone>(tz: &T, now: NaiveDateTime) -> NaiveDateTime {
    let off_now = offset_secs(tz, now);
    let label = now + Duration::seconds(off_now);
    let off_then = offset_secs(tz, now - Duration::hours(GAP_PROBE_HOURS));
    if off_now <= off_then {
        return label;
    }
    let jump = off_now - off_then;
    // once the offset one jump ago already equals now's, every shifted
    // fire is behind us
    if offset_secs(tz, now - Duration::seconds(jump)) == off_now {
        return label;
    }
    label - Duration::seconds(jump)
}

/// The first fire strictly after `now` (a UTC instant) in zone `tz`, given
/// a civil search.
pub(crate) fn next_in_zone<T: TimeZone>(
    tz: &T,
    now: NaiveDateTime,
    next_civil: impl Fn(NaiveDateTime) -> Option<NaiveDateTime>,
) -> Option<NaiveDateTime> {
    let mut seed = rewound_seed(tz, now);
    loop {
        let target = next_civil(seed)?;
        let instant = resolve(tz, target, Fold::Before);
        if instant > now {
            return Some(instant);
        }
        // already past in real time (a repeated hour's second pass, or a
        // rewound seed's early labels): continue after it, and after the
        // label it really showed when it was shifted by a gap
        seed = target.max(label_of(tz, instant));
    }
}

/// The last fire strictly before `now` in zone `tz`.
///
/// Walking labels backwards goes wrong at DST edges (a gap label fires
/// after its own label; on the second pass of a repeated hour the latest
/// fire has a later label than now's). So step back to a label the zone
/// keeps as it is, then replay the forward policy from just before it and
/// keep the last fire before now.
pub(crate) fn prev_in_zone<T: TimeZone>(
    tz: &T,
    now: NaiveDateTime,
    next_civil: impl Fn(NaiveDateTime) -> Option<NaiveDateTime>,
    prev_civil: impl Fn(NaiveDateTime) -> Option<NaiveDateTime>,
) -> Option<NaiveDateTime> {
    let horizon = chrono::NaiveDate::from_ymd_opt(super::field::YEAR_HORIZON + 1, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0));
    let mut civil = label_of(tz, now);
    if let Some(horizon) = horizon {
        // nothing fires past the horizon; without the clamp a far-future
        // "now" would step back one fire at a time
        civil = civil.min(horizon);
    }
    let mut anchor = prev_civil(civil);
    while let Some(a) = anchor {
        let instant = resolve(tz, a, Fold::Before);
        if label_of(tz, instant) == a {
            let mut cursor = resolve(tz, a - Duration::seconds(1), Fold::Before);
            let mut last = None;
            while let Some(fire) = next_in_zone(tz, cursor, &next_civil) {
                if fire >= now {
                    break;
                }
                last = Some(fire);
                cursor = fire;
            }
            if last.is_some() {
                return last;
            }
        }
        anchor = prev_civil(a);
    }
    None
}

impl TimeBase {
    /// The wall-clock label of `instant` in this clock.
    pub fn label(&self, instant: DateTime<Utc>) -> NaiveDateTime {
        let t = instant.naive_utc();
        match self {
            TimeBase::Utc => t,
            TimeBase::Local => label_of(&chrono::Local, t),
            TimeBase::Zone(tz) => label_of(tz, t),
        }
    }

    /// The instant of a wall-clock label in this clock, reading a skipped
    /// or repeated label as `fold` says.
    pub fn resolve(&self, label: NaiveDateTime, fold: Fold) -> DateTime<Utc> {
        let t = match self {
            TimeBase::Utc => label,
            TimeBase::Local => resolve(&chrono::Local, label, fold),
            TimeBase::Zone(tz) => resolve(tz, label, fold),
        };
        t.and_utc()
    }

    /// The IANA name, `"UTC"`, or `None` for host local time.
    pub fn name(&self) -> Option<&'static str> {
        match self {
            TimeBase::Utc => Some("UTC"),
            TimeBase::Local => None,
            TimeBase::Zone(tz) => Some(tz.name()),
        }
    }
}

/// What a wall time is in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WallKind {
    /// Exists once.
    Normal,
    /// Skipped by a spring-forward.
    Gap,
    /// Repeated by a fall-back.
    Fold,
}

#[cfg(test)]
pub(crate) fn classify<T: TimeZone>(tz: &T, label: NaiveDateTime) -> WallKind {
    match tz.offset_from_local_datetime(&label) {
        LocalResult::Single(_) => WallKind::Normal,
        LocalResult::Ambiguous(..) => WallKind::Fold,
        LocalResult::None => WallKind::Gap,
    }
}

/// The pre-transition offset of the local midnight of `date`, in seconds.
pub(crate) fn midnight_offset<T: TimeZone>(tz: &T, date: chrono::NaiveDate) -> i64 {
    let Some(midnight) = date.and_hms_opt(0, 0, 0) else {
        return 0;
    };
    let instant = resolve(tz, midnight, Fold::Before);
    (midnight - instant).num_seconds()
}

/// The instants in `[start, end]` where the UTC offset of `tz` changes,
/// found by sampling weekly and bisecting to the second. Real zones never
/// change and change back within one week.
pub(crate) fn transitions<T: TimeZone>(
    tz: &T,
    start: NaiveDateTime,
    end: NaiveDateTime,
) -> Vec<NaiveDateTime> {
    let mut out = Vec::new();
    let step = Duration::days(7);
    let mut lo = start;
    while lo < end {
        let hi = (lo + step).min(end);
        if offset_secs(tz, lo) != offset_secs(tz, hi) {
            let (mut a, mut b) = (lo, hi);
            let off_a = offset_secs(tz, a);
            while (b - a).num_seconds() > 1 {
                let mid = a + Duration::seconds((b - a).num_seconds() / 2);
                if offset_secs(tz, mid) == off_a {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            out.push(b);
        }
        lo = hi;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::{America::New_York, Australia::Lord_Howe, Europe::Berlin, Pacific::Apia};

    fn naive(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn gap_labels_read_with_the_old_offset() {
        // 02:30 EST does not exist on 2026-03-08: read as -5h -> 07:30Z
        assert_eq!(
            resolve(&New_York, naive("2026-03-08T02:30:00"), Fold::Before),
            naive("2026-03-08T07:30:00")
        );
        assert_eq!(
            resolve(&New_York, naive("2026-03-08T02:30:00"), Fold::After),
            naive("2026-03-08T06:30:00")
        );
        // Lord Howe jumps 30 minutes
        assert_eq!(
            resolve(&Lord_Howe, naive("2026-10-04T02:15:00"), Fold::Before),
            naive("2026-10-03T15:45:00")
        );
        // Samoa skipped 2011-12-30 entirely (-10h -> +14h)
        assert_eq!(
            resolve(&Apia, naive("2011-12-30T12:00:00"), Fold::Before),
            naive("2011-12-30T22:00:00")
        );
    }

    #[test]
    fn repeated_labels_pick_by_fold() {
        assert_eq!(
            resolve(&New_York, naive("2026-11-01T01:30:00"), Fold::Before),
            naive("2026-11-01T05:30:00")
        );
        assert_eq!(
            resolve(&New_York, naive("2026-11-01T01:30:00"), Fold::After),
            naive("2026-11-01T06:30:00")
        );
        assert_eq!(
            classify(&Berlin, naive("2026-10-25T02:30:00")),
            WallKind::Fold
        );
        assert_eq!(
            classify(&Berlin, naive("2026-03-29T02:30:00")),
            WallKind::Gap
        );
        assert_eq!(
            classify(&Berlin, naive("2026-03-29T03:30:00")),
            WallKind::Normal
        );
    }

    #[test]
    fn transitions_found_to_the_second() {
        let found = transitions(
            &New_York,
            naive("2026-01-01T00:00:00"),
            naive("2027-01-01T00:00:00"),
        );
        assert_eq!(
            found,
            vec![naive("2026-03-08T07:00:00"), naive("2026-11-01T06:00:00")]
        );
        assert!(transitions(
            &chrono_tz::UTC,
            naive("2026-01-01T00:00:00"),
            naive("2027-01-01T00:00:00")
        )
        .is_empty());
    }

    #[test]
    fn time_base_round_trip() {
        let z = TimeBase::Zone(Berlin);
        let t = naive("2026-07-01T12:00:00").and_utc();
        assert_eq!(z.label(t), naive("2026-07-01T14:00:00"));
        assert_eq!(z.resolve(naive("2026-07-01T14:00:00"), Fold::Before), t);
        assert_eq!(TimeBase::Utc.label(t), t.naive_utc());
        assert_eq!(z.name(), Some("Europe/Berlin"));
        assert_eq!(TimeBase::Local.name(), None);
    }
}
