//! `cronstable init [DIRECTORY]`: writes a commented starter config that
//! passes `-v` into a config directory, and never touches a setup that is
//! already there. Where to write is decided by [`target`] (pure); the
//! checks and the write are [`run`].

use crate::config::SourceKind;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file `init` writes into the target directory.
pub const STARTER_NAME: &str = "cronstable.yaml";

/// The starter config: one job that works on any POSIX host, then the
/// next steps most setups take, commented out.
pub const STARTER: &str = r#"# Written by `cronstable init`: a first job to edit, and some next steps.
#
# The daemon reads every *.yaml / *.yml file of this directory, plus
# classic crontabs (*.crontab, *.cron, or a file named `crontab`). A file
# whose name starts with `_` or `.` is skipped.
# Check your changes with `cronstable -c <this directory> -v`; a running
# daemon picks them up by itself.

jobs:
  - name: hello
    # Every five minutes; `captureStdout` keeps what the command prints.
    schedule: "*/5 * * * *"
    command: echo "hello from cronstable on $(hostname)"
    captureStdout: true

# Defaults for every job of this directory:
#
# defaults:
#   shell: /bin/bash
#   killTimeout: 30
#   onFailure:
#     report:
#       mail:
#         from: cron@example.com
#         to: ops@example.com
#         smtpHost: localhost

# The dashboard and the HTTP API on this host only, behind a token read
# from the daemon's environment (it also guards POST /shutdown):
#
# web:
#   listen:
#     - http://127.0.0.1:8080
#   authToken:
#     fromEnvVar: CRONSTABLE_TOKEN
"#;

/// Where `init` writes, and the note to print first when two places were
/// named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The config directory to write into.
    pub directory: PathBuf,
    /// Said on stderr before anything else (a `-c` that disagrees with
    /// DIRECTORY).
    pub note: Option<String>,
}

/// Picks the directory: DIRECTORY when given, else a `-c` given at the
/// root, else the platform default. A `-c` other than DIRECTORY loses, and
/// the note says so.
pub fn target(directory: Option<&Path>, config: Option<&Path>, default: &Path) -> Target {
    match (directory, config) {
        (Some(directory), Some(config))
            if config != default && absolute(config) != absolute(directory) =>
        {
            Target {
                directory: directory.to_owned(),
                note: Some(format!(
                    "cronstable init: -c {} and DIRECTORY {} disagree; writing to {}",
                    config.display(),
                    directory.display(),
                    directory.display()
                )),
            }
        }
        (Some(directory), _) => Target {
            directory: directory.to_owned(),
            note: None,
        },
        (None, Some(config)) => Target {
            directory: config.to_owned(),
            note: None,
        },
        (None, None) => Target {
            directory: default.to_owned(),
            note: None,
        },
    }
}

/// `path` made absolute against the working directory, lexically (the
/// directory may not exist yet).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The files of `directory` the config loader would read, sorted by name.
pub fn config_files(directory: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(directory)?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with(['_', '.']))
        .filter(|name| SourceKind::of_path(Path::new(name)).is_some())
        .collect();
    names.sort();
    Ok(names)
}

/// Runs `init` into `target`, with `default` the platform's config path:
/// what to print on stdout (success) or stderr (refusal, exit 1).
pub fn run(target: &Target, default: &Path) -> Result<Vec<String>, String> {
    let directory = &target.directory;
    if directory.is_file() {
        return Err(format!(
            "cronstable init: {} is a file; init writes a starter file into a configuration \
             DIRECTORY. Name a directory, or edit the existing file directly.",
            directory.display()
        ));
    }
    if directory.is_dir() {
        let existing = config_files(directory).map_err(|err| {
            format!(
                "cronstable init: could not read {}: {err}",
                directory.display()
            )
        })?;
        if !existing.is_empty() {
            let shown: Vec<&str> = existing.iter().take(5).map(String::as_str).collect();
            return Err(format!(
                "cronstable init: {} already holds configuration ({}); refusing to add a \
                 starter to a live setup",
                directory.display(),
                shown.join(", ")
            ));
        }
    }
    let path = directory.join(STARTER_NAME);
    let written = std::fs::create_dir_all(directory).and_then(|()| {
        // Exclusive create: a config that appeared since the check above
        // is still never overwritten.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.write_all(STARTER.as_bytes())?;
        file.sync_all()
    });
    if let Err(err) = written {
        return Err(format!(
            "cronstable init: could not write {}: {err}",
            path.display()
        ));
    }
    let start = if absolute(directory) == absolute(default) {
        "start the scheduler with: cronstable".to_owned()
    } else {
        format!(
            "start the scheduler with: cronstable -c {}",
            directory.display()
        )
    };
    Ok(vec![format!("wrote {}", path.display()), start])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_directory_then_c_then_the_default() {
        let default = Path::new("/etc/cronstable.d");
        let d = Path::new("/srv/jobs");
        let c = Path::new("/opt/cron");
        assert_eq!(
            target(None, None, default),
            Target {
                directory: default.into(),
                note: None
            }
        );
        assert_eq!(target(None, Some(c), default).directory, c);
        assert_eq!(target(Some(d), None, default).directory, d);
        // -c naming the default is no disagreement (it is what a bare
        // command resolves to).
        assert_eq!(target(Some(d), Some(default), default).note, None);
        assert_eq!(target(Some(d), Some(d), default).note, None);
        let both = target(Some(d), Some(c), default);
        assert_eq!(both.directory, d);
        assert_eq!(
            both.note.as_deref(),
            Some("cronstable init: -c /opt/cron and DIRECTORY /srv/jobs disagree; writing to /srv/jobs")
        );
    }

    #[test]
    fn writes_once_and_refuses_what_is_there() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("new").join("conf.d");
        let default = tmp.path().join("default.d");
        let out = run(&target(Some(&dir), None, &default), &default).expect("written");
        let path = dir.join(STARTER_NAME);
        assert_eq!(
            out,
            vec![
                format!("wrote {}", path.display()),
                format!("start the scheduler with: cronstable -c {}", dir.display())
            ]
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), STARTER);
        // The second run finds its own starter and leaves it be.
        let again = run(&target(Some(&dir), None, &default), &default).unwrap_err();
        assert_eq!(
            again,
            format!(
                "cronstable init: {} already holds configuration (cronstable.yaml); refusing \
                 to add a starter to a live setup",
                dir.display()
            )
        );
        // The default location: the bare command starts it.
        let out = run(&target(None, None, &default), &default).expect("written");
        assert_eq!(out[1], "start the scheduler with: cronstable");
        // A file is refused.
        let file = tmp.path().join("jobs.yaml");
        std::fs::write(&file, "jobs: []\n").unwrap();
        assert!(run(&target(Some(&file), None, &default), &default)
            .unwrap_err()
            .contains("is a file; init writes a starter file"));
    }

    #[test]
    fn only_files_the_loader_reads_count_as_a_setup() {
        let tmp = tempfile::tempdir().expect("temp dir");
        for name in ["_off.yaml", ".hidden.yml", "notes.txt", "README"] {
            std::fs::write(tmp.path().join(name), "x").unwrap();
        }
        assert!(config_files(tmp.path()).unwrap().is_empty());
        for name in [
            "b.yml",
            "a.YAML",
            "crontab",
            "x.cron",
            "y.crontab",
            "z.yaml",
            "w.yaml",
        ] {
            std::fs::write(tmp.path().join(name), "x").unwrap();
        }
        let names = config_files(tmp.path()).unwrap();
        assert_eq!(
            names,
            [
                "a.YAML",
                "b.yml",
                "crontab",
                "w.yaml",
                "x.cron",
                "y.crontab",
                "z.yaml"
            ]
        );
        let refusal = run(
            &target(Some(tmp.path()), None, Path::new("/nowhere")),
            Path::new("/nowhere"),
        )
        .unwrap_err();
        assert!(
            refusal.contains("(a.YAML, b.yml, crontab, w.yaml, x.cron); refusing"),
            "five names at most: {refusal}"
        );
    }
}
