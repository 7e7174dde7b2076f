//! Where config files are read from (the disk or an in-memory map) and
//! how two spellings of one file are told equal.

use crate::config::error::ConfigError;
use crate::config::error::Location;
use crate::platform;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Where `include:` entries (and `-c` files) are read from. The include
/// rules (cycles, missing files, the size cap, error wording) live in the
/// loader once; only reading and identifying a file differ.
pub(super) enum Files<'a> {
    /// The file system.
    Disk,
    /// An in-memory map, keyed by lexically normalized path.
    Memory(HashMap<PathBuf, &'a str>),
}

impl Files<'_> {
    /// The file's text, or the error the load reports for it.
    pub(super) fn read(&self, path: &Path) -> Result<String, ConfigError> {
        let bytes = match self {
            Files::Disk => platform::read_regular_file(path, crate::config::MAX_FILE_BYTES)
                .map_err(|e| io_error(path, &e))?,
            Files::Memory(map) => {
                let Some(text) = map.get(&normalize(path)) else {
                    return Err(ConfigError::Io {
                        path: path.display().to_string(),
                        reason: "no such file among the in-memory files".into(),
                    });
                };
                if text.len() as u64 > crate::config::MAX_FILE_BYTES {
                    return Err(ConfigError::Io {
                        path: path.display().to_string(),
                        reason: format!(
                            "is larger than the {} MiB limit",
                            crate::config::MAX_FILE_BYTES >> 20
                        ),
                    });
                }
                return Ok((*text).to_owned());
            }
        };
        String::from_utf8(bytes).map_err(|e| {
            ConfigError::config(
                Location::source(path.display().to_string()),
                format!(
                    "not valid UTF-8 text (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })
    }

    /// What identifies the file for cycle detection: two spellings of one
    /// file must compare equal, or a cycle written through `./` or `..`
    /// would recurse without end.
    pub(super) fn identity(&self, path: &Path) -> PathBuf {
        match self {
            Files::Disk => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            Files::Memory(_) => normalize(path),
        }
    }
}

/// Drops `.` components and folds `..` into the component before it,
/// without touching the disk (a `..` with nothing before it is kept, so
/// `../x` and `x` stay distinct).
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(component),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

pub(super) fn io_error(path: &Path, err: &std::io::Error) -> ConfigError {
    ConfigError::Io {
        path: path.display().to_string(),
        reason: err.to_string(),
    }
}
