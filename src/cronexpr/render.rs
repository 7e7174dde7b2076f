//! Rendering parsed columns back to text (the normal form).

use super::field::{Fields, ALL_DAYS, ALL_WEEKDAYS};

/// The values of `mask` from `lo` to `hi`, written compactly: `*` when all
/// are present, `a-b/n` for an even progression of three or more, else a
/// list of runs (`1-5,7,9-11`).
fn render_set(mask: u64, lo: u32, hi: u32) -> String {
    let values: Vec<u32> = (lo..=hi).filter(|v| mask >> v & 1 == 1).collect();
    if values.len() == (hi - lo + 1) as usize {
        return "*".to_owned();
    }
    render_values(&values)
}

fn render_values(values: &[u32]) -> String {
    if values.len() >= 3 {
        let step = values[1] - values[0];
        if step > 1 && values.windows(2).all(|w| w[1] - w[0] == step) {
            return format!("{}-{}/{}", values[0], values[values.len() - 1], step);
        }
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            values[i].to_string()
        } else {
            format!("{}-{}", values[i], values[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

fn render_dom(f: &Fields) -> String {
    let mut items = Vec::new();
    if f.dom & ALL_DAYS == ALL_DAYS {
        return "*".to_owned();
    }
    let plain: Vec<u32> = (1..=31).filter(|d| f.dom >> d & 1 == 1).collect();
    if !plain.is_empty() {
        items.push(render_values(&plain));
    }
    for k in 0..31 {
        if f.dom_last >> k & 1 == 1 {
            items.push(if k == 0 {
                "L".to_owned()
            } else {
                format!("L-{k}")
            });
        }
    }
    if f.dom_last_weekday {
        items.push("LW".to_owned());
    }
    for n in 1..=31 {
        if f.dom_nearest >> n & 1 == 1 {
            items.push(format!("{n}W"));
        }
    }
    items.join(",")
}

fn render_dow(f: &Fields) -> String {
    if f.dow & ALL_WEEKDAYS == ALL_WEEKDAYS {
        return "*".to_owned();
    }
    let mut items = Vec::new();
    let plain: Vec<u32> = (0..7).filter(|d| f.dow >> d & 1 == 1).collect();
    if !plain.is_empty() {
        items.push(render_values(&plain));
    }
    for d in 0..7 {
        if f.dow_last >> d & 1 == 1 {
            items.push(format!("L{d}"));
        }
    }
    for (d, nth) in f.dow_nth.iter().enumerate() {
        for n in 1..=5 {
            if nth >> n & 1 == 1 {
                items.push(format!("{d}#{n}"));
            }
        }
    }
    if items.is_empty() {
        // only an empty reversed L range parses to "no weekday at all"
        return "L1-0".to_owned();
    }
    items.join(",")
}

/// Seven fields: second minute hour day-of-month month day-of-week year.
pub(crate) fn normal_form(f: &Fields) -> String {
    let year = match &f.years {
        None => "*".to_owned(),
        Some(years) => {
            let values: Vec<u32> = years.iter().filter_map(|y| u32::try_from(y).ok()).collect();
            render_values(&values)
        }
    };
    format!(
        "{} {} {} {} {} {} {}",
        render_set(f.seconds, 0, 59),
        render_set(f.minutes, 0, 59),
        render_set(u64::from(f.hours), 0, 23),
        render_dom(f),
        render_set(u64::from(f.months), 1, 12),
        render_dow(f),
        year,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronexpr::CronExpr;

    fn nf(text: &str) -> String {
        CronExpr::parse(text, None).unwrap().normal_form()
    }

    #[test]
    fn values_compact() {
        assert_eq!(render_values(&[1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
        assert_eq!(render_values(&[0, 15, 30, 45]), "0-45/15");
        assert_eq!(render_values(&[4]), "4");
        assert_eq!(render_values(&[1, 3]), "1,3");
    }

    #[test]
    fn spellings_share_a_normal_form() {
        assert_eq!(nf("*/5 * * * *"), "0 0-55/5 * * * * *");
        assert_eq!(nf("*/5 * * * *"), nf("0-59/5 * * * *"));
        assert_eq!(nf("@daily"), nf("0 0 * * *"));
        assert_eq!(nf("0 0 * * sat-sun"), "0 0 0 * * 0,6 *");
        assert_eq!(
            nf("0 0 1,15W,L,l-3,LW * mon#1,L5,tue"),
            "0 0 0 1,L,L-3,LW,15W * 2,L5,1#1 *"
        );
        assert_eq!(nf("0 0 1 1 * 2027-2029/2"), "0 0 0 1 1 * 2027,2029");
        assert_eq!(nf("0 0 * * l7-3"), "0 0 0 * * L1-0 *");
    }

    #[test]
    fn normal_form_parses_back_to_an_equal_expression() {
        for text in [
            "*/7 1-5,9 */3 ? jan-jun mon-fri *",
            "0 0 1,15W,L,l-3,LW * mon#1,L5,tue",
            "1-9/2 0 0 L-30 2 * 2030,2040-2050",
            "0 0 * * l7-3",
            "0 0 * * 5#3 2027",
        ] {
            let a = CronExpr::parse(text, None).unwrap();
            let b = CronExpr::parse(&a.normal_form(), None).unwrap();
            assert_eq!(a, b, "{text} -> {}", a.normal_form());
        }
    }
}
