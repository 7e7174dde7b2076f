//! Noticing that the config on disk changed, cheaply: the size and
//! modification time of every file the last load read, plus the listing of
//! a config directory (a new file changes it).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A snapshot of the config's files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigStamp {
    files: Vec<PathBuf>,
    entries: Vec<Option<(u64, SystemTime)>>,
    listing: Vec<PathBuf>,
}

fn stat(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

impl ConfigStamp {
    /// Takes a snapshot of `files` (what the load read) and, when `root` is
    /// a directory, of its entries.
    pub fn take(root: &Path, files: &[PathBuf]) -> Self {
        let mut entries: Vec<Option<(u64, SystemTime)>> = files.iter().map(|f| stat(f)).collect();
        entries.push(stat(root));
        let mut listing: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        listing.sort();
        ConfigStamp {
            files: files.to_vec(),
            entries,
            listing,
        }
    }

    /// The files this snapshot covers.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// True when a re-take would differ from this snapshot.
    pub fn changed(&self, root: &Path) -> bool {
        ConfigStamp::take(root, &self.files) != *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_and_new_files_are_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.yaml");
        std::fs::write(&file, "jobs: []\n").unwrap();
        let stamp = ConfigStamp::take(dir.path(), std::slice::from_ref(&file));
        assert!(!stamp.changed(dir.path()));
        let single = ConfigStamp::take(&file, std::slice::from_ref(&file));
        assert!(!single.changed(&file), "a single-file config is stable");
        std::fs::write(dir.path().join("b.yaml"), "jobs: []\n").unwrap();
        assert!(stamp.changed(dir.path()));
        let stamp = ConfigStamp::take(dir.path(), std::slice::from_ref(&file));
        std::fs::write(&file, "jobs: []\n# edited, longer\n").unwrap();
        assert!(stamp.changed(dir.path()));
    }
}
