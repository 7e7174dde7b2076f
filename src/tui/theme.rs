//! The dashboard's colors: a dark and a light (paper) base, each with one
//! of the web page's five hues as its accent. `t` cycles the hue, `T`
//! flips dark and light.

use super::model::HistoryEntry;
use super::text::AnsiColor;
use super::view::{Health, Outcome};
use ratatui::style::{Color, Modifier, Style};

/// The hues, in cycling order (the names `--theme` takes).
pub const HUES: [&str; 5] = ["standard", "carolina", "amber", "green", "modern"];

/// A theme: a hue and dark or light.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Index into [`HUES`].
    pub hue: usize,
    /// The paper variant.
    pub light: bool,
}

/// The colors of one theme.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    /// Background.
    pub bg: Color,
    /// Body text.
    pub fg: Color,
    /// Emphasis.
    pub bright: Color,
    /// Secondary text.
    pub dim: Color,
    /// Titles, borders of panels, the selection marker.
    pub accent: Color,
    /// Rules.
    pub border: Color,
    /// The selected row's background.
    pub sel: Color,
    /// Healthy.
    pub ok: Color,
    /// Failing.
    pub fail: Color,
    /// Running.
    pub run: Color,
    /// Waiting.
    pub pending: Color,
    /// Attention.
    pub warn: Color,
    /// Disabled, paused, skipped.
    pub off: Color,
}

const fn rgb(r: u8, g: u8, b: u8) -> Color {
    Color::Rgb(r, g, b)
}

impl Theme {
    /// The theme a `--theme` name names (`amber`, `amber-light`), if any.
    pub fn named(name: &str) -> Option<Theme> {
        let (hue, light) = match name.strip_suffix("-light") {
            Some(hue) => (hue, true),
            None => (name, false),
        };
        HUES.iter()
            .position(|h| *h == hue)
            .map(|hue| Theme { hue, light })
    }

    /// The theme's name as `--theme` spells it.
    pub fn name(self) -> String {
        let hue = HUES[self.hue % HUES.len()];
        if self.light {
            format!("{hue}-light")
        } else {
            hue.to_owned()
        }
    }

    /// The next hue, same variant.
    pub fn next_hue(self) -> Theme {
        Theme {
            hue: (self.hue + 1) % HUES.len(),
            ..self
        }
    }

    /// The other variant, same hue.
    pub fn flipped(self) -> Theme {
        Theme {
            light: !self.light,
            ..self
        }
    }

    /// The colors.
    pub fn palette(self) -> Palette {
        let dark_accents = [
            rgb(86, 140, 255),
            rgb(98, 168, 222),
            rgb(255, 178, 36),
            rgb(64, 214, 124),
            rgb(172, 128, 255),
        ];
        let light_accents = [
            rgb(24, 72, 208),
            rgb(28, 98, 158),
            rgb(168, 98, 0),
            rgb(22, 128, 62),
            rgb(108, 62, 196),
        ];
        let hue = self.hue % HUES.len();
        if self.light {
            Palette {
                bg: rgb(250, 250, 247),
                fg: rgb(34, 34, 34),
                bright: rgb(0, 0, 0),
                dim: rgb(112, 112, 112),
                accent: light_accents[hue],
                border: rgb(206, 206, 206),
                sel: rgb(208, 226, 250),
                ok: rgb(22, 128, 52),
                fail: rgb(192, 40, 40),
                run: rgb(24, 88, 196),
                pending: rgb(138, 100, 0),
                warn: rgb(168, 88, 0),
                off: rgb(138, 138, 138),
            }
        } else {
            Palette {
                bg: rgb(14, 16, 20),
                fg: rgb(198, 202, 208),
                bright: rgb(255, 255, 255),
                dim: rgb(118, 124, 134),
                accent: dark_accents[hue],
                border: rgb(58, 62, 70),
                sel: rgb(36, 56, 90),
                ok: rgb(72, 192, 112),
                fail: rgb(236, 88, 88),
                run: rgb(82, 152, 255),
                pending: rgb(214, 174, 62),
                warn: rgb(240, 162, 64),
                off: rgb(128, 128, 128),
            }
        }
    }
}

/// The color-vision setting: the status colors re-inked so that healthy,
/// failing, running and waiting stay apart for a red-green (deuteranopia,
/// protanopia) or a blue-yellow (tritanopia) color deficiency. The
/// statuses' glyphs differ in shape whatever the colors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Vision {
    /// The theme's own colors.
    #[default]
    Off,
    /// Red-green safe: healthy blue, failing orange.
    RedGreen,
    /// Blue-yellow safe: healthy green, failing crimson.
    BlueYellow,
}

impl Vision {
    /// In cycling order.
    pub const ALL: [Vision; 3] = [Vision::Off, Vision::RedGreen, Vision::BlueYellow];

    /// The word the settings panel shows.
    pub fn label(self) -> &'static str {
        match self {
            Vision::Off => "off",
            Vision::RedGreen => "red-green",
            Vision::BlueYellow => "blue-yellow",
        }
    }

    /// The preferences file's word (the original dashboard's file
    /// spells the modes this way, so its file reads here too).
    pub fn key(self) -> &'static str {
        match self {
            Vision::Off => "none",
            Vision::RedGreen => "deutan",
            Vision::BlueYellow => "tritan",
        }
    }

    /// The mode a file's word names (either spelling); `Off` for others.
    pub fn from_key(word: &str) -> Vision {
        Vision::ALL
            .into_iter()
            .find(|v| v.key() == word || v.label() == word)
            .unwrap_or_default()
    }

    /// The mode `step` places away, wrapping.
    pub fn step(self, step: isize) -> Vision {
        let at = Vision::ALL.iter().position(|v| *v == self).unwrap_or(0) as isize;
        Vision::ALL[(at + step).rem_euclid(Vision::ALL.len() as isize) as usize]
    }
}

impl Theme {
    /// The colors as seen with `vision`: the theme's palette with the
    /// status colors replaced (ok, fail, run, pending, warn), darker on
    /// paper so they keep their contrast.
    pub fn palette_for(self, vision: Vision) -> Palette {
        let p = self.palette();
        // ok, fail, run, pending, warn; on dark, then on paper
        let [ok, fail, run, pending, warn] = match (vision, self.light) {
            (Vision::Off, _) => return p,
            (Vision::RedGreen, false) => [
                rgb(92, 176, 240),
                rgb(232, 150, 20),
                rgb(210, 130, 180),
                rgb(196, 196, 196),
                rgb(238, 222, 90),
            ],
            (Vision::RedGreen, true) => [
                rgb(0, 104, 176),
                rgb(196, 90, 0),
                rgb(148, 58, 120),
                rgb(104, 104, 104),
                rgb(150, 120, 0),
            ],
            (Vision::BlueYellow, false) => [
                rgb(40, 190, 140),
                rgb(240, 70, 110),
                rgb(236, 236, 236),
                rgb(150, 150, 150),
                rgb(250, 140, 120),
            ],
            (Vision::BlueYellow, true) => [
                rgb(0, 122, 84),
                rgb(196, 16, 64),
                rgb(30, 30, 30),
                rgb(120, 120, 120),
                rgb(176, 64, 40),
            ],
        };
        Palette {
            ok,
            fail,
            run,
            pending,
            warn,
            ..p
        }
    }
}

impl Palette {
    /// Text in `color` on the background.
    pub fn ink(&self, color: Color) -> Style {
        Style::default().fg(color).bg(self.bg)
    }

    /// The base style of the screen.
    pub fn base(&self) -> Style {
        self.ink(self.fg)
    }

    /// The color of a job's health.
    pub fn health(&self, health: Health) -> Color {
        match health {
            Health::Ok => self.ok,
            Health::Fail => self.fail,
            Health::Run => self.run,
            Health::Pending | Health::Unknown => self.pending,
            Health::Disabled | Health::Paused | Health::Cancelled => self.off,
        }
    }

    /// The color of a run's outcome.
    pub fn outcome(&self, outcome: Outcome) -> Color {
        match outcome {
            Outcome::Ok => self.ok,
            Outcome::Fail => self.fail,
            Outcome::Unknown => self.pending,
            Outcome::Cancelled | Outcome::Skipped => self.off,
        }
    }

    /// Recent runs as sparkline bars in `w` columns on `bg` (one bar a
    /// run, as [`super::view::sparkline`] scales them, padded to the
    /// width): the board's runs column and the wallboard's tiles.
    pub fn sparkline(
        &self,
        history: &[HistoryEntry],
        w: usize,
        bg: Color,
    ) -> Vec<ratatui::text::Span<'static>> {
        let bars = super::view::sparkline(history, w.saturating_sub(1));
        let pad = w - bars.len();
        let mut spans: Vec<ratatui::text::Span<'static>> = bars
            .into_iter()
            .map(|(bar, outcome)| {
                ratatui::text::Span::styled(bar, Style::default().fg(self.outcome(outcome)).bg(bg))
            })
            .collect();
        spans.push(ratatui::text::Span::styled(
            " ".repeat(pad),
            Style::default().fg(self.fg).bg(bg),
        ));
        spans
    }

    /// A job's SGR color, re-inked for this background: the 16 basic
    /// colors map onto the palette (so a red line stays red and legible
    /// on paper too); 256-color and true colors pass through.
    pub fn ansi(&self, color: AnsiColor) -> Color {
        match color {
            AnsiColor::Basic(n) => match n {
                0 | 8 => self.dim,
                1 | 9 => self.fail,
                2 | 10 => self.ok,
                3 => self.pending,
                11 => self.warn,
                4 | 6 | 12 | 14 => self.run,
                5 | 13 => self.accent,
                15 => self.bright,
                _ => self.fg,
            },
            AnsiColor::Indexed(i) => Color::Indexed(i),
            AnsiColor::Rgb(r, g, b) => Color::Rgb(r, g, b),
        }
    }

    /// A log line's style for an SGR state.
    pub fn sgr(&self, sgr: &super::text::Sgr) -> Style {
        let mut style = self.ink(sgr.fg.map_or(self.fg, |c| self.ansi(c)));
        for (on, modifier) in [
            (sgr.bold, Modifier::BOLD),
            (sgr.dim, Modifier::DIM),
            (sgr.italic, Modifier::ITALIC),
            (sgr.underline, Modifier::UNDERLINED),
            (sgr.reverse, Modifier::REVERSED),
        ] {
            if on {
                style = style.add_modifier(modifier);
            }
        }
        style
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_cycle() {
        for hue in HUES {
            for name in [hue.to_owned(), format!("{hue}-light")] {
                assert_eq!(Theme::named(&name).map(Theme::name), Some(name.clone()));
            }
        }
        assert_eq!(Theme::named("neon"), None);
        let t = Theme::named("modern").unwrap();
        assert_eq!(t.next_hue().name(), "standard");
        assert_eq!(t.flipped().name(), "modern-light");
        assert_ne!(t.palette().bg, t.flipped().palette().bg);
    }

    #[test]
    fn color_vision_keeps_the_statuses_apart_on_every_theme() {
        for name in ["standard", "amber-light", "green", "modern-light"] {
            let theme = Theme::named(name).unwrap();
            let base = theme.palette();
            for vision in Vision::ALL {
                let p = theme.palette_for(vision);
                let statuses = [p.ok, p.fail, p.run, p.pending];
                for (i, a) in statuses.iter().enumerate() {
                    for b in &statuses[i + 1..] {
                        assert_ne!(a, b, "{name} {vision:?}");
                    }
                }
                assert_eq!((p.bg, p.fg, p.accent), (base.bg, base.fg, base.accent));
                assert_eq!(vision == Vision::Off, p.ok == base.ok, "{name} {vision:?}");
                assert_eq!(Vision::from_key(vision.key()), vision);
                assert_eq!(Vision::from_key(vision.label()), vision);
            }
        }
        assert_eq!(Vision::from_key("sepia"), Vision::Off);
        assert_eq!(Vision::Off.step(1), Vision::RedGreen);
        assert_eq!(Vision::Off.step(-1), Vision::BlueYellow);
        assert_eq!(Vision::BlueYellow.step(1), Vision::Off);
    }

    #[test]
    fn basic_colors_follow_the_palette() {
        let p = Theme::named("standard-light").unwrap().palette();
        assert_eq!(p.ansi(AnsiColor::Basic(1)), p.fail);
        assert_eq!(p.ansi(AnsiColor::Basic(10)), p.ok);
        assert_eq!(p.ansi(AnsiColor::Indexed(208)), Color::Indexed(208));
        let bold = super::super::text::Sgr {
            bold: true,
            ..Default::default()
        };
        assert!(p.sgr(&bold).add_modifier.contains(Modifier::BOLD));
    }
}
