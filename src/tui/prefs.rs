//! The preferences file (`cronstable/tui.json` in the user's settings
//! directory: `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` or `~/.config`
//! elsewhere, as `platform::user_config_dir` chooses): theme, refresh interval and toggles,
//! remembered between sessions like the web page's local storage. The
//! token is never written here. Reading and writing are the only I/O;
//! what goes in and out is plain data.

use super::ambient::{Ambient, ZEN_IDLE_DEFAULT, ZEN_IDLE_MAX};
use super::app::App;
use super::theme::{Theme, Vision};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What is remembered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prefs {
    /// The theme's name (`amber`, `amber-light`, …).
    pub theme: String,
    /// Milliseconds between polls; 0 pauses.
    pub poll_ms: u64,
    /// Long log lines wrap.
    pub wrap: bool,
    /// Log lines show their arrival times.
    pub timestamps: bool,
    /// Plain-ASCII glyphs.
    pub ascii: bool,
    /// The color-vision palette: `none`, `deutan` (red-green) or
    /// `tritan` (blue-yellow).
    pub cvd: String,
    /// Compact density: no schedule or sparkline columns.
    pub compact: bool,
    /// The terminal bell when a job newly fails.
    pub sound: bool,
    /// The boot self-test (startup checks).
    pub boot: bool,
    /// When the boot self-test last ran, in seconds since the epoch.
    pub boot_last: f64,
    /// The wallboard's zen screensaver.
    pub zen: bool,
    /// Seconds of keyboard idle before the screensaver (1 to 3600; the
    /// settings panel steps through 30, 60, 90, 120 and 300).
    pub zen_idle_s: u64,
    /// The living logo.
    pub motion: bool,
}

impl Default for Prefs {
    fn default() -> Prefs {
        Prefs::with(
            "standard".to_owned(),
            3000,
            [false; 3],
            &Ambient::new(std::time::Instant::now()),
        )
    }
}

impl Prefs {
    /// The file's text as preferences; unknown keys are ignored, and a
    /// file that cannot be read as a whole gives the defaults.
    pub fn parse(text: &str) -> Prefs {
        let mut prefs: Prefs = serde_json::from_str(text).unwrap_or_default();
        if Theme::named(&prefs.theme).is_none() {
            prefs.theme = Prefs::default().theme;
        }
        prefs.cvd = Vision::from_key(&prefs.cvd).key().to_owned();
        if !(1..=ZEN_IDLE_MAX).contains(&prefs.zen_idle_s) {
            prefs.zen_idle_s = ZEN_IDLE_DEFAULT;
        }
        if !prefs.boot_last.is_finite() {
            prefs.boot_last = 0.0;
        }
        prefs
    }

    /// The remembered theme.
    pub fn theme(&self) -> Theme {
        Theme::named(&self.theme).unwrap_or(Theme {
            hue: 0,
            light: false,
        })
    }

    /// The remembered poll interval (`None`: paused).
    pub fn poll(&self) -> Option<Duration> {
        match self.poll_ms {
            0 => None,
            ms => Some(Duration::from_millis(ms.max(100))),
        }
    }

    /// What the dashboard shows now.
    pub fn of(app: &App) -> Prefs {
        Prefs::with(
            app.theme.name(),
            app.poll.map_or(0, |d| d.as_millis() as u64),
            [app.wrap, app.timestamps, app.ascii],
            &app.ambient,
        )
    }

    /// The later settings remembered, the keyboard idle from `now`.
    pub fn ambient(&self, now: std::time::Instant) -> Ambient {
        Ambient {
            vision: Vision::from_key(&self.cvd),
            bell: self.sound,
            startup_checks: self.boot,
            compact: self.compact,
            zen: self.zen,
            zen_idle: self.zen_idle_s,
            living_logo: self.motion,
            boot_last: self.boot_last,
            ..Ambient::new(now)
        }
    }

    /// The file's values from the theme's name, the poll in milliseconds,
    /// the wrap, timestamps and ASCII switches, and the later settings.
    fn with(
        theme: String,
        poll_ms: u64,
        [wrap, timestamps, ascii]: [bool; 3],
        ambient: &Ambient,
    ) -> Prefs {
        Prefs {
            theme,
            poll_ms,
            wrap,
            timestamps,
            ascii,
            cvd: ambient.vision.key().to_owned(),
            compact: ambient.compact,
            sound: ambient.bell,
            boot: ambient.startup_checks,
            boot_last: ambient.boot_last,
            zen: ambient.zen,
            zen_idle_s: ambient.zen_idle,
            motion: ambient.living_logo,
        }
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// Where the file lives in the user's settings directory `base` (None
/// without one).
pub fn path(base: Option<&Path>) -> Option<PathBuf> {
    Some(base?.join("cronstable").join("tui.json"))
}

/// Reads the file; the defaults when it is absent or unreadable.
pub fn load(path: Option<&Path>) -> Prefs {
    path.and_then(|p| std::fs::read_to_string(p).ok())
        .map_or_else(Prefs::default, |t| Prefs::parse(&t))
}

/// Writes the file, making its directory.
pub fn save(path: &Path, prefs: &Prefs) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, prefs.to_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_cronstable_tui_json_in_the_settings_directory() {
        assert_eq!(
            path(Some(Path::new("/home/u/.config"))),
            Some(PathBuf::from("/home/u/.config/cronstable/tui.json"))
        );
        assert_eq!(path(None), None);
    }

    #[test]
    fn bad_or_partial_files_fall_back_to_the_defaults() {
        assert_eq!(Prefs::parse("not json"), Prefs::default());
        let p = Prefs::parse(r#"{"theme": "amber-light", "wrap": true, "token": "x"}"#);
        assert_eq!(p.theme().name(), "amber-light");
        assert!(p.wrap && !p.ascii);
        assert_eq!(p.poll(), Some(Duration::from_secs(3)));
        assert_eq!(Prefs::parse(r#"{"theme": "nope"}"#).theme, "standard");
        assert_eq!(Prefs::parse(r#"{"poll_ms": 0}"#).poll(), None);
    }

    #[test]
    fn the_later_settings_default_like_the_manual_and_are_checked() {
        let p = Prefs::default();
        assert_eq!(p.cvd, "none");
        assert!(!p.compact && !p.sound && p.boot && p.zen && p.motion);
        assert_eq!((p.zen_idle_s, p.boot_last), (90, 0.0));
        let p = Prefs::parse(r#"{"cvd": "red-green", "zen_idle_s": 2, "boot_last": 5}"#);
        assert_eq!(
            (p.cvd.as_str(), p.zen_idle_s, p.boot_last),
            ("deutan", 2, 5.0)
        );
        let p = Prefs::parse(r#"{"cvd": "sepia", "zen_idle_s": 0}"#);
        assert_eq!((p.cvd.as_str(), p.zen_idle_s), ("none", 90));
        assert_eq!(Prefs::parse(r#"{"zen_idle_s": 86400}"#).zen_idle_s, 90);
    }

    #[test]
    fn a_saved_file_reads_back_the_same_and_holds_no_token() {
        let dir = std::env::temp_dir().join(format!("cronstable-prefs-{}", std::process::id()));
        let file = dir.join("cronstable").join("tui.json");
        let prefs = Prefs {
            theme: "green".into(),
            poll_ms: 10_000,
            wrap: true,
            timestamps: true,
            ascii: true,
            cvd: "tritan".into(),
            compact: true,
            sound: true,
            boot: false,
            boot_last: 1_700_000_000.5,
            zen: false,
            zen_idle_s: 300,
            motion: false,
        };
        save(&file, &prefs).expect("saved");
        assert_eq!(load(Some(&file)), prefs);
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(!text.contains("token"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(load(Some(&file)), Prefs::default());
    }
}
