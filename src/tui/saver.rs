//! Files the dashboard writes (a saved log, the incident writeup, the
//! preferences), written on a thread of its own so a slow home directory
//! (NFS, a full disk retrying) never stalls the screen. One thread takes
//! the writes in order, so two quick changes of a setting land in the
//! order they were made; each outcome comes back to the screen as a
//! [`Saved`], which it turns into a toast.

use super::prefs::{self, Prefs};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// A write to make.
#[derive(Debug)]
pub enum Save {
    /// The Logs tab's `d`: a job's buffered log, into the home directory.
    Log {
        /// The job whose log it is (names the file).
        job: String,
        /// The text.
        contents: String,
    },
    /// The job actions panel's writeup, into the home directory (it is on
    /// the clipboard already).
    Incident(String),
    /// The preferences, to their file.
    Prefs(PathBuf, Prefs),
}

/// How a write went: the file written, or why it was not.
#[derive(Debug)]
pub enum Saved {
    /// A saved log.
    Log(Result<PathBuf, String>),
    /// A saved writeup.
    Incident(Result<PathBuf, String>),
    /// Saved preferences (only a failure is worth telling).
    Prefs(Result<(), String>),
}

/// The writer thread's inbox.
pub struct Saver {
    inbox: mpsc::Sender<Save>,
}

impl Saver {
    /// Starts the writer; `report` hands each outcome to the screen.
    pub fn start(report: impl Fn(Saved) + Send + 'static) -> std::io::Result<Saver> {
        let (inbox, writes) = mpsc::channel::<Save>();
        std::thread::Builder::new()
            .name("tui-save".into())
            .spawn(move || {
                for save in writes {
                    report(write(save));
                }
            })?;
        Ok(Saver { inbox })
    }

    /// Queues a write; the outcome arrives later as a [`Saved`].
    pub fn save(&self, save: Save) {
        // The writer lives as long as the process.
        let _ = self.inbox.send(save);
    }
}

fn write(save: Save) -> Saved {
    let why = |e: std::io::Error| e.to_string();
    match save {
        Save::Log { job, contents } => Saved::Log(save_log(&job, &contents).map_err(why)),
        Save::Incident(text) => {
            let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
            Saved::Incident(
                save_home(&format!("cronstable-incident-{stamp}.md"), &text).map_err(why),
            )
        }
        Save::Prefs(path, current) => Saved::Prefs(prefs::save(&path, &current).map_err(why)),
    }
}

/// The file name of a saved log: `cronstable-<job>-<stamp>.log`, with
/// anything but letters, digits, `-`, `_` and `.` in the name made `_`.
fn log_name(job: &str, stamp: &str) -> String {
    let safe: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("cronstable-{safe}-{stamp}.log")
}

fn save_log(job: &str, contents: &str) -> std::io::Result<PathBuf> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    save_home(&log_name(job, &stamp), contents)
}

/// Writes `contents` as the file `name` of the home directory.
fn save_home(name: &str, contents: &str) -> std::io::Result<PathBuf> {
    let home =
        crate::platform::home_dir().ok_or_else(|| std::io::Error::other("no home directory"))?;
    write_in(&home, name, contents)
}

fn write_in(dir: &Path, name: &str, contents: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, contents)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_log_file_name_keeps_only_safe_characters() {
        assert_eq!(
            log_name("nightly/backup ü", "20261206-061500"),
            "cronstable-nightly_backup__-20261206-061500.log"
        );
    }

    #[test]
    fn writes_land_in_order_and_each_reports_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tui.json");
        let (tx, rx) = mpsc::channel();
        let saver = Saver::start(move |saved| {
            let _ = tx.send(saved);
        })
        .expect("start");
        let light = Prefs {
            theme: "carolina-light".into(),
            ..Prefs::default()
        };
        let dark = Prefs {
            theme: "amber".into(),
            ..Prefs::default()
        };
        saver.save(Save::Prefs(path.clone(), light));
        saver.save(Save::Prefs(path.clone(), dark.clone()));
        for _ in 0..2 {
            let saved = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("an outcome");
            assert!(matches!(saved, Saved::Prefs(Ok(()))), "{saved:?}");
        }
        assert_eq!(prefs::load(Some(&path)), dark);
        // a place that cannot be a directory (a file is in the way): the
        // failure comes back
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").expect("write");
        let nowhere = file.join("tui.json");
        saver.save(Save::Prefs(nowhere, Prefs::default()));
        let saved = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("an outcome");
        assert!(matches!(saved, Saved::Prefs(Err(_))), "{saved:?}");
    }
}
