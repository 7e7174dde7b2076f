//! `cronstable tui`'s flags: the web client's connection flags
//! ([`ConnectArgs`]) and the dashboard's own.

use crate::cli::webclient::ConnectArgs;
use std::time::Duration;

/// The theme names `--theme` takes.
const THEMES: [&str; 10] = [
    "standard",
    "carolina",
    "amber",
    "green",
    "modern",
    "standard-light",
    "carolina-light",
    "amber-light",
    "green-light",
    "modern-light",
];

/// `cronstable tui [options]`.
#[derive(clap::Args, Debug, Clone)]
pub struct TuiArgs {
    /// The connection.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Start on this theme (a hue, or HUE-light for the paper variant).
    #[arg(long = "theme", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(THEMES))]
    pub theme: Option<String>,
    /// Open this job's drawer at startup.
    #[arg(long = "job", value_name = "NAME")]
    pub job: Option<String>,
    /// Seconds between polls of the job list; 0 polls only on g [default: 3].
    #[arg(long = "poll", value_name = "SECONDS", value_parser = poll_seconds)]
    pub poll: Option<f64>,
    /// Plain-ASCII status glyphs, for fonts without the symbols.
    #[arg(long = "ascii")]
    pub ascii: bool,
    /// Start on the wallboard.
    #[arg(long = "tv")]
    pub tv: bool,
    /// Run the boot self-test now, whenever it last ran.
    #[arg(long = "boot", conflicts_with = "no_boot")]
    pub boot: bool,
    /// Skip the boot self-test.
    #[arg(long = "no-boot")]
    pub no_boot: bool,
}

/// `--poll`: a finite number of seconds, at least 0.
fn poll_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
        _ => Err(format!("'{text}' is not a number of seconds (0 or more)")),
    }
}

impl TuiArgs {
    /// `--boot` (true) or `--no-boot` (false); `None` leaves it to the
    /// setting and the 12-hour rule.
    pub fn boot_forced(&self) -> Option<bool> {
        match (self.boot, self.no_boot) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }

    /// The poll interval: `None` when paused (`--poll 0`).
    pub fn interval(&self) -> Option<Duration> {
        match self.poll {
            None => Some(Duration::from_secs(3)),
            Some(s) if s <= 0.0 => None,
            // Under 100 ms would only load the daemon.
            Some(s) => Some(Duration::from_secs_f64(s.max(0.1))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        tui: TuiArgs,
    }

    fn parse(args: &[&str]) -> Result<TuiArgs, clap::Error> {
        Wrap::try_parse_from(std::iter::once("tui").chain(args.iter().copied())).map(|w| w.tui)
    }

    #[test]
    fn flags_parse_with_their_defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.connect.url, "http://127.0.0.1:8080");
        assert_eq!(a.interval(), Some(Duration::from_secs(3)));
        assert!(!a.ascii && a.job.is_none() && a.theme.is_none());
        let a = parse(&[
            "--url",
            "https://h:1",
            "--poll",
            "0",
            "--job",
            "nightly",
            "--ascii",
            "--theme",
            "amber-light",
        ])
        .unwrap();
        assert_eq!(a.connect.url, "https://h:1");
        assert_eq!(a.interval(), None);
        assert_eq!(a.job.as_deref(), Some("nightly"));
        assert!(a.ascii && !a.tv);
        assert_eq!(a.theme.as_deref(), Some("amber-light"));
        assert!(parse(&["--tv"]).unwrap().tv);
        assert_eq!(parse(&[]).unwrap().boot_forced(), None);
        assert_eq!(parse(&["--boot"]).unwrap().boot_forced(), Some(true));
        assert_eq!(parse(&["--no-boot"]).unwrap().boot_forced(), Some(false));
        assert_eq!(
            parse(&["--poll", "1.5"]).unwrap().interval(),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for args in [
            &["--poll", "-1"][..],
            &["--poll", "nan"],
            &["--poll", "soon"],
            &["--theme", "neon"],
            &["--boot", "--no-boot"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }
}
