//! The settings of the panel's later rows (color vision, the bell,
//! startup checks, compact density, the zen screensaver and its idle
//! interval, the living logo) and the little state their features keep:
//! when a key was last pressed, whether the screensaver shows, the boot
//! self-test under way, a bell waiting to ring. Plain data: `prefs.rs`
//! reads and writes it, `zen.rs` and `boot.rs` act on it, the edges ring
//! the bell.

use super::boot::Boot;
use super::theme::Vision;
use std::time::Instant;

/// The idle intervals (seconds) the **Zen idle** row steps through.
pub const ZEN_IDLE_CHOICES: [u64; 5] = [30, 60, 90, 120, 300];
/// The idle interval when none is remembered.
pub const ZEN_IDLE_DEFAULT: u64 = 90;
/// The longest idle interval the preferences file may hold.
pub const ZEN_IDLE_MAX: u64 = 3600;

/// The settings and their features' state.
#[derive(Debug)]
pub struct Ambient {
    /// The color-vision palette.
    pub vision: Vision,
    /// Ring the terminal bell when a job newly fails.
    pub bell: bool,
    /// Run the boot self-test at start (at most every 12 hours).
    pub startup_checks: bool,
    /// The jobs board without its schedule and sparkline columns.
    pub compact: bool,
    /// The wallboard's screensaver may engage.
    pub zen: bool,
    /// Seconds without a key before the screensaver engages.
    pub zen_idle: u64,
    /// The header's mark moves.
    pub living_logo: bool,
    /// When the boot self-test last ran (seconds since the epoch).
    pub boot_last: f64,
    /// When the last key was pressed (the start counts as one).
    pub last_key: Instant,
    /// The screensaver shows (decided once a second, see `zen.rs`).
    pub zen_on: bool,
    /// The boot self-test on screen.
    pub boot: Option<Boot>,
    /// A bell waits to be rung.
    pub bell_due: bool,
}

impl Ambient {
    /// The defaults, the keyboard idle from `now` (`prefs.rs` puts the
    /// remembered values in).
    pub fn new(now: Instant) -> Ambient {
        Ambient {
            vision: Vision::Off,
            bell: false,
            startup_checks: true,
            compact: false,
            zen: true,
            zen_idle: ZEN_IDLE_DEFAULT,
            living_logo: true,
            boot_last: 0.0,
            last_key: now,
            zen_on: false,
            boot: None,
            bell_due: false,
        }
    }

    /// After a poll: `fresh` jobs finished with a failure since the last
    /// one, which rings the bell when the setting is on.
    pub fn fresh_failures(&mut self, fresh: usize) {
        if self.bell && fresh > 0 {
            self.bell_due = true;
        }
    }
}

impl Default for Ambient {
    fn default() -> Ambient {
        Ambient::new(Instant::now())
    }
}

/// The idle interval `step` choices away from `current` (a value from
/// the file that is not a choice steps to the nearest choice that way).
pub fn step_zen_idle(current: u64, step: isize) -> u64 {
    let n = ZEN_IDLE_CHOICES.len() as isize;
    let at = match ZEN_IDLE_CHOICES.iter().position(|c| *c == current) {
        Some(at) => at as isize + step,
        None if step > 0 => ZEN_IDLE_CHOICES
            .iter()
            .position(|c| *c > current)
            .map_or(0, |i| i as isize),
        None => ZEN_IDLE_CHOICES
            .iter()
            .rposition(|c| *c < current)
            .map_or(n - 1, |i| i as isize),
    };
    ZEN_IDLE_CHOICES[at.rem_euclid(n) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zen_idle_steps_through_the_choices_and_finds_them_from_others() {
        assert_eq!(step_zen_idle(90, 1), 120);
        assert_eq!(step_zen_idle(300, 1), 30);
        assert_eq!(step_zen_idle(30, -1), 300);
        assert_eq!(step_zen_idle(2, 1), 30);
        assert_eq!(step_zen_idle(2, -1), 300);
        assert_eq!(step_zen_idle(100, 1), 120);
        assert_eq!(step_zen_idle(100, -1), 90);
        assert_eq!(step_zen_idle(3000, 1), 30);
        assert_eq!(step_zen_idle(3000, -1), 300);
    }

    #[test]
    fn only_a_new_failure_with_the_bell_on_rings() {
        let mut ambient = Ambient::default();
        assert!(!ambient.bell, "off by default");
        ambient.fresh_failures(2);
        assert!(!ambient.bell_due);
        ambient.bell = true;
        ambient.fresh_failures(0);
        assert!(!ambient.bell_due);
        ambient.fresh_failures(1);
        assert!(ambient.bell_due);
    }
}
