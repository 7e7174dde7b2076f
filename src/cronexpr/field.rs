//! The parsed form of an expression: one bit set per column.
//!
//! Every column is a small bit mask, so matching is a few AND operations and
//! the next-fire search can jump to the next set bit instead of counting.

use super::error::Field;

/// The first year the year column accepts.
pub const YEAR_FLOOR: i32 = 1970;
/// The last year the year column accepts, and the horizon of every forward
/// search: past it `next` answers `None` rather than searching forever for a
/// date that never comes (February 30th).
pub const YEAR_HORIZON: i32 = 2099;

/// Bits 1..=31 set: every day a month can have.
pub(crate) const ALL_DAYS: u32 = 0xFFFF_FFFE;
/// Bits 0..=6 set: every weekday, Sunday = 0.
pub(crate) const ALL_WEEKDAYS: u8 = 0x7F;

/// A set of years 1970..=2099, one bit per year.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct YearSet([u64; 3]);

impl YearSet {
    /// Whether `year` is in the set.
    pub fn contains(&self, year: i32) -> bool {
        match Self::index(year) {
            Some(i) => self.0[i / 64] >> (i % 64) & 1 == 1,
            None => false,
        }
    }

    pub(crate) fn insert(&mut self, year: i32) {
        if let Some(i) = Self::index(year) {
            self.0[i / 64] |= 1 << (i % 64);
        }
    }

    fn index(year: i32) -> Option<usize> {
        if (YEAR_FLOOR..=YEAR_HORIZON).contains(&year) {
            usize::try_from(year - YEAR_FLOOR).ok()
        } else {
            None
        }
    }

    /// The smallest member `>= year`.
    pub fn at_or_after(&self, year: i32) -> Option<i32> {
        (year.max(YEAR_FLOOR)..=YEAR_HORIZON).find(|&y| self.contains(y))
    }

    /// The largest member `<= year`.
    pub fn at_or_before(&self, year: i32) -> Option<i32> {
        (YEAR_FLOOR..=year.min(YEAR_HORIZON))
            .rev()
            .find(|&y| self.contains(y))
    }

    /// The members, ascending.
    pub fn iter(&self) -> impl Iterator<Item = i32> + '_ {
        (YEAR_FLOOR..=YEAR_HORIZON).filter(|&y| self.contains(y))
    }

    /// The largest member.
    pub fn max(&self) -> Option<i32> {
        self.at_or_before(YEAR_HORIZON)
    }
}

/// Every column of one expression, as bit sets.
///
/// `dom`, `months` and the weekday sets use the value itself as the bit
/// index (day 1 is bit 1, Sunday is bit 0). The special day forms are kept
/// apart from the plain values because they depend on the month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fields {
    /// Seconds 0-59 (`{0}` for the 5- and 6-field forms).
    pub seconds: u64,
    /// Minutes 0-59.
    pub minutes: u64,
    /// Hours 0-23.
    pub hours: u32,
    /// Plain days of month 1-31.
    pub dom: u32,
    /// `L` and `L-n`: bit `n` means "n days before the month's final day"
    /// (bit 0 is bare `L`).
    pub dom_last: u32,
    /// `nW`: bit `n` means "the weekday nearest day n".
    pub dom_nearest: u32,
    /// `LW`: the month's last weekday (Monday to Friday).
    pub dom_last_weekday: bool,
    /// Months 1-12.
    pub months: u16,
    /// Plain weekdays, Sunday = 0 (a written 7 is stored as 0).
    pub dow: u8,
    /// `L<d>`: weekdays that match only as the month's last such day.
    pub dow_last: u8,
    /// `<d>#<n>`: for weekday `d`, bit `n` (1-5) means "the n-th one".
    pub dow_nth: [u8; 7],
    /// The year column; `None` when absent or `*` (any year).
    pub years: Option<YearSet>,
}

impl Fields {
    /// Whether the day columns use only plain values (no `L`, `W`, `#`),
    /// which lets matching skip the month-shape arithmetic.
    pub(crate) fn days_plain(&self) -> bool {
        self.dom_last == 0
            && self.dom_nearest == 0
            && !self.dom_last_weekday
            && self.dow_last == 0
            && self.dow_nth == [0; 7]
    }

    /// Whether no day can ever satisfy the day-of-week column (an empty
    /// reversed `L` range such as `l7-3` is legal and matches nothing).
    pub(crate) fn dow_empty(&self) -> bool {
        self.dow == 0 && self.dow_last == 0 && self.dow_nth == [0; 7]
    }

    /// A copy with every special day form that cannot change the firing
    /// set removed, so two spellings of the same instants compare equal.
    ///
    /// Each rule drops a form whose days are already covered by the plain
    /// values of the same column; none of them adds or removes a firing day.
    pub(crate) fn normalized(&self) -> Fields {
        let mut f = *self;
        if f.dow & ALL_WEEKDAYS == ALL_WEEKDAYS {
            // every weekday already matches: L<d> and d#n add nothing
            f.dow_last = 0;
            f.dow_nth = [0; 7];
        } else {
            f.dow_last &= !f.dow;
            for (d, nth) in f.dow_nth.iter_mut().enumerate() {
                if f.dow >> d & 1 == 1 {
                    *nth = 0;
                }
            }
        }
        if f.dom & ALL_DAYS == ALL_DAYS {
            f.dom_last = 0;
            f.dom_nearest = 0;
            f.dom_last_weekday = false;
        } else {
            // L-k lands on day (length - k) for month lengths 28..=31; when
            // every such day is a plain value too, the item is redundant.
            for k in 0..31 {
                if f.dom_last >> k & 1 == 1 {
                    let covered = (28..=31)
                        .filter(|len| len - k >= 1)
                        .all(|len| f.dom >> (len - k) & 1 == 1);
                    if covered {
                        f.dom_last &= !(1 << k);
                    }
                }
            }
        }
        f
    }
}

/// How one column reads its values: bounds, the implicit end of `*` and
/// bare-start steps, and the name table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub field: Field,
    pub lo: i64,
    /// The largest value an explicit item may name.
    pub hi: i64,
    /// Where `*` and `a/n` stop. Only differs from `hi` for weekdays,
    /// where 7 is a legal spelling of Sunday but `*` covers 0-6.
    pub step_end: i64,
    pub names: &'static [(&'static str, i64)],
}

const MONTH_NAMES: &[(&str, i64)] = &[
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
];

const DOW_NAMES: &[(&str, i64)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

pub(crate) const SECOND: Spec = Spec {
    field: Field::Second,
    lo: 0,
    hi: 59,
    step_end: 59,
    names: &[],
};
pub(crate) const MINUTE: Spec = Spec {
    field: Field::Minute,
    lo: 0,
    hi: 59,
    step_end: 59,
    names: &[],
};
pub(crate) const HOUR: Spec = Spec {
    field: Field::Hour,
    lo: 0,
    hi: 23,
    step_end: 23,
    names: &[],
};
pub(crate) const DOM: Spec = Spec {
    field: Field::DayOfMonth,
    lo: 1,
    hi: 31,
    step_end: 31,
    names: &[],
};
pub(crate) const MONTH: Spec = Spec {
    field: Field::Month,
    lo: 1,
    hi: 12,
    step_end: 12,
    names: MONTH_NAMES,
};
pub(crate) const DOW: Spec = Spec {
    field: Field::DayOfWeek,
    lo: 0,
    hi: 7,
    step_end: 6,
    names: DOW_NAMES,
};
pub(crate) const YEAR: Spec = Spec {
    field: Field::Year,
    lo: YEAR_FLOOR as i64,
    hi: YEAR_HORIZON as i64,
    step_end: YEAR_HORIZON as i64,
    names: &[],
};

/// The column layout for each accepted field count.
pub(crate) fn layout(count: usize) -> &'static [Spec] {
    const FIVE: [Spec; 5] = [MINUTE, HOUR, DOM, MONTH, DOW];
    const SIX: [Spec; 6] = [MINUTE, HOUR, DOM, MONTH, DOW, YEAR];
    const SEVEN: [Spec; 7] = [SECOND, MINUTE, HOUR, DOM, MONTH, DOW, YEAR];
    match count {
        5 => &FIVE,
        6 => &SIX,
        7 => &SEVEN,
        _ => &[],
    }
}

/// The next set bit of `mask` at or after `from`.
pub(crate) fn next_bit(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let rest = mask & (u64::MAX << from);
    (rest != 0).then(|| rest.trailing_zeros())
}

/// The last set bit of `mask` at or before `upto`.
pub(crate) fn prev_bit(mask: u64, upto: u32) -> Option<u32> {
    let keep = if upto >= 63 {
        u64::MAX
    } else {
        (1u64 << (upto + 1)) - 1
    };
    let rest = mask & keep;
    (rest != 0).then(|| 63 - rest.leading_zeros())
}

/// The lowest set bit of a non-empty mask.
pub(crate) fn first_bit(mask: u64) -> Option<u32> {
    (mask != 0).then(|| mask.trailing_zeros())
}

/// The highest set bit of a non-empty mask.
pub(crate) fn last_bit(mask: u64) -> Option<u32> {
    (mask != 0).then(|| 63 - mask.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn year_set_bounds_and_search() {
        let mut s = YearSet::default();
        s.insert(1970);
        s.insert(2030);
        s.insert(2099);
        s.insert(2100); // out of range: ignored
        s.insert(1969);
        assert!(s.contains(1970) && s.contains(2030) && s.contains(2099));
        assert!(!s.contains(2100) && !s.contains(1969) && !s.contains(2031));
        assert_eq!(s.at_or_after(1971), Some(2030));
        assert_eq!(s.at_or_after(1900), Some(1970));
        assert_eq!(s.at_or_after(2100), None);
        assert_eq!(s.at_or_before(2098), Some(2030));
        assert_eq!(s.at_or_before(1969), None);
        assert_eq!(s.max(), Some(2099));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![1970, 2030, 2099]);
    }

    #[test]
    fn bit_search_edges() {
        assert_eq!(next_bit(0b1010, 0), Some(1));
        assert_eq!(next_bit(0b1010, 2), Some(3));
        assert_eq!(next_bit(0b1010, 4), None);
        assert_eq!(next_bit(u64::MAX, 64), None);
        assert_eq!(next_bit(1 << 63, 63), Some(63));
        assert_eq!(prev_bit(0b1010, 2), Some(1));
        assert_eq!(prev_bit(0b1010, 0), None);
        assert_eq!(prev_bit(1 << 63, 63), Some(63));
        assert_eq!(prev_bit(1 << 63, 200), Some(63));
        assert_eq!(first_bit(0), None);
        assert_eq!(last_bit(0b110), Some(2));
    }

    #[test]
    fn normalization_drops_only_covered_forms() {
        let f = Fields {
            dom: ALL_DAYS,
            dom_last: 1,
            dow: ALL_WEEKDAYS,
            dow_last: 1 << 5,
            ..Fields::default()
        };
        let n = f.normalized();
        assert_eq!((n.dom_last, n.dow_last), (0, 0));
        // L5 next to plain 5 is redundant; L5 next to plain 1 is not
        let g = Fields {
            dow: 1 << 5,
            dow_last: 1 << 5,
            ..Fields::default()
        };
        assert_eq!(g.normalized().dow_last, 0);
        let h = Fields {
            dow: 1 << 1,
            dow_last: 1 << 5,
            ..Fields::default()
        };
        assert_eq!(h.normalized().dow_last, 1 << 5);
        // L with days 28-31 listed is redundant, with 28-30 it is not
        let full_tail = Fields {
            dom: 0b1111 << 28,
            dom_last: 1,
            ..Fields::default()
        };
        assert_eq!(full_tail.normalized().dom_last, 0);
        let short_tail = Fields {
            dom: 0b111 << 28,
            dom_last: 1,
            ..Fields::default()
        };
        assert_eq!(short_tail.normalized().dom_last, 1);
    }
}
