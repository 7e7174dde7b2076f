//! The retry ladder of one job: exponential backoff from `initialDelay`,
//! multiplied by `backoffMultiplier`, capped at `maximumDelay`, for at most
//! `maximumRetries` attempts (-1: forever).

use crate::config::model::Retry;

/// Retry progress of one job, armed by a scheduled launch.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryLadder {
    delay: f64,
    multiplier: f64,
    max_delay: f64,
    max_retries: i64,
    count: u32,
}

impl RetryLadder {
    /// A fresh ladder, or `None` when retries are disabled (`maximumRetries: 0`).
    pub fn arm(config: &Retry) -> Option<Self> {
        (config.maximum_retries != 0).then_some(RetryLadder {
            delay: config.initial_delay,
            multiplier: config.backoff_multiplier,
            max_delay: config.maximum_delay,
            max_retries: config.maximum_retries,
            count: 0,
        })
    }

    /// Retries already performed.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The delay the next retry will wait (before the cap), as a pool
    /// entry carries it to whichever node admits the retry.
    pub fn delay(&self) -> f64 {
        self.delay
    }

    /// The ladder of `config` carried on from attempt `count` with the
    /// next delay `delay` (a pooled retry admitted on another node), or
    /// `None` when retries are disabled.
    pub fn resume(config: &Retry, count: u32, delay: f64) -> Option<Self> {
        let mut ladder = RetryLadder::arm(config)?;
        ladder.count = count;
        if delay.is_finite() && delay > 0.0 {
            ladder.delay = delay;
        }
        Some(ladder)
    }

    /// True when no retry is left.
    pub fn exhausted(&self) -> bool {
        self.max_retries != -1 && i64::from(self.count) >= self.max_retries
    }

    /// The delay before the next retry; advances the ladder.
    pub fn next_delay(&mut self) -> f64 {
        let delay = self.delay.min(self.max_delay);
        self.delay = (self.delay * self.multiplier).min(self.max_delay);
        self.count += 1;
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(max: i64, initial: f64, cap: f64, mult: f64) -> Retry {
        Retry {
            maximum_retries: max,
            initial_delay: initial,
            maximum_delay: cap,
            backoff_multiplier: mult,
        }
    }

    #[test]
    fn disabled_when_zero() {
        assert!(RetryLadder::arm(&retry(0, 1.0, 10.0, 2.0)).is_none());
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut ladder = RetryLadder::arm(&retry(5, 1.0, 5.0, 2.0)).unwrap();
        let delays: Vec<f64> = (0..5).map(|_| ladder.next_delay()).collect();
        assert_eq!(delays, vec![1.0, 2.0, 4.0, 5.0, 5.0]);
        assert!(ladder.exhausted());
        assert_eq!(ladder.count(), 5);
    }

    #[test]
    fn exhausted_after_maximum_retries() {
        let mut ladder = RetryLadder::arm(&retry(2, 0.5, 10.0, 3.0)).unwrap();
        assert!(!ladder.exhausted());
        assert_eq!(ladder.next_delay(), 0.5);
        assert!(!ladder.exhausted());
        assert_eq!(ladder.next_delay(), 1.5);
        assert!(ladder.exhausted());
    }

    #[test]
    fn minus_one_retries_forever() {
        let mut ladder = RetryLadder::arm(&retry(-1, 1.0, 2.0, 2.0)).unwrap();
        for _ in 0..1000 {
            ladder.next_delay();
        }
        assert!(!ladder.exhausted());
        assert_eq!(ladder.next_delay(), 2.0);
    }

    #[test]
    fn initial_delay_above_the_cap_is_capped() {
        let mut ladder = RetryLadder::arm(&retry(3, 100.0, 10.0, 2.0)).unwrap();
        assert_eq!(ladder.next_delay(), 10.0);
    }
}
