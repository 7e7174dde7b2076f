//! `backup`, `restore` and `migrate`: the store's carried files into a
//! gzipped tar, back out of one, and over to another path. None of them
//! opens the store (no probe, no stamp): they move files.

use super::{
    base_of, namespace_of, populated, real_path, walk_carried, AdminError, Report, Target,
};
use crate::platform;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// `backup -o FILE.tar.gz`: every carried file of the store into an
/// owner-only gzipped tar, named relative to the namespace directory. A
/// file that cannot be read (a prune racing the backup) is left out.
pub fn backup(target: &Target, output: &Path) -> Result<Report, AdminError> {
    let base = target.base();
    if !base.is_dir() {
        return Ok(Report::refused(format!(
            "state: nothing to back up: {} does not exist",
            base.display()
        )));
    }
    let file = open_owner_only(output)
        .map_err(|e| AdminError::io(format!("cannot write {}", output.display()), e))?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut count = 0usize;
    for (full, arcname) in walk_carried(&base) {
        // Read the whole file before its header is written: a read that
        // failed half-way would leave a truncated member in the archive.
        let Ok(meta) = std::fs::metadata(&full) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(payload) = std::fs::read(&full) else {
            continue;
        };
        let mut header = tar::Header::new_gnu();
        header.set_metadata_in_mode(&meta, tar::HeaderMode::Complete);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(payload.len() as u64);
        tar.append_data(&mut header, &arcname, payload.as_slice())
            .map_err(|e| AdminError::io(format!("cannot write {}", output.display()), e))?;
        count += 1;
    }
    let finished = tar
        .into_inner()
        .and_then(|gz| gz.finish())
        .and_then(|file| file.sync_all());
    finished.map_err(|e| AdminError::io(format!("cannot write {}", output.display()), e))?;
    Ok(Report::ok([format!(
        "state: backed up {count} file(s) from {} to {}",
        base.display(),
        output.display()
    )]))
}

/// Creates or truncates `path` with mode 0600, also narrowing a file that
/// was already there before anything is written into it: the archive
/// holds job output, values and payloads.
fn open_owner_only(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        std::fs::File::create(path)
    }
}

/// A member name as a path strictly inside the namespace directory: only
/// plain components (no root, no drive, no `..`; `.` is dropped). None
/// for anything else.
pub fn member_path(name: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in name.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// The `fence` of a lease file's JSON, when it has an integer one.
pub fn lease_fence(bytes: &[u8]) -> Option<i64> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    match value.get("fence")? {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite())
                .map(|f| f.trunc() as i64)
        }),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        serde_json::Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// Whether a merge may replace the lease file at a target holding
/// `current` (None: no file there yet) with one whose bytes are
/// `archived`: only when the archived fence is provably not older.
pub fn lease_may_replace(current: Option<&[u8]>, archived: &[u8]) -> bool {
    let Some(current) = current else {
        return true;
    };
    match (lease_fence(current), lease_fence(archived)) {
        (Some(now), Some(then)) => then >= now,
        _ => false,
    }
}

/// `restore FILE.tar.gz [--force]`: the archive's regular-file members
/// into the store, each through `<target>.restoring` and a rename. A
/// store that holds files is refused unless `force`; then the merge
/// skips lease `.lock` files and keeps a lease file whose fence is newer
/// than the archived one.
pub fn restore(target: &Target, archive: &Path, force: bool) -> Result<Report, AdminError> {
    let base = target.base();
    let merging = populated(&base);
    if merging && !force {
        return Ok(Report::refused(format!(
            "state: the destination store at {} is not empty. To merge this backup, stop every \
             cronstable process using this store, then pass --force",
            base.display()
        )));
    }
    let file = std::fs::File::open(archive)
        .map_err(|e| AdminError::io(format!("cannot read {}", archive.display()), e))?;
    platform::create_private_dirs(&base)
        .map_err(|e| AdminError::io(format!("cannot create {}", base.display()), e))?;
    let real_base = real_path(&base);
    let bad_archive =
        |e: std::io::Error| AdminError::io(format!("cannot read {}", archive.display()), e);
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut count = 0usize;
    let mut kept_leases = 0usize;
    for entry in tar.entries().map_err(bad_archive)? {
        let mut entry = entry.map_err(bad_archive)?;
        if !matches!(
            entry.header().entry_type(),
            tar::EntryType::Regular | tar::EntryType::Continuous
        ) {
            continue;
        }
        let raw_name = entry.path().map_err(bad_archive)?.into_owned();
        let Some(relative) = member_path(&raw_name) else {
            continue;
        };
        let name = relative.to_string_lossy().replace('\\', "/");
        let dest = base.join(&relative);
        let mut payload = Vec::new();
        entry.read_to_end(&mut payload).map_err(bad_archive)?;
        if merging && name.starts_with("leases/") {
            if !name.ends_with(".lease") {
                // A `.lock` carries no data, and a live daemon may hold an
                // OS lock on that very inode.
                continue;
            }
            let current = match std::fs::read(&dest) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                // There but unreadable: cannot prove the archive newer.
                Err(_) => Some(Vec::new()),
            };
            if !lease_may_replace(current.as_deref(), &payload) {
                kept_leases += 1;
                continue;
            }
        }
        if let Err(e) = place(&dest, &real_base, &payload, "restoring") {
            return Ok(Report::refused(format!(
                "state: failed to restore {name}: {e}"
            )));
        }
        count += 1;
    }
    let mut lines = vec![format!(
        "state: restored {count} file(s) from {} into {}",
        archive.display(),
        base.display()
    )];
    if kept_leases > 0 {
        lines.push(format!(
            "state: kept {kept_leases} current lease file(s) whose archived fence was older \
             (restoring those would regress fence counters)"
        ));
    }
    Ok(Report::ok(lines))
}

/// Writes `payload` to `dest` through `<dest>.<suffix>` (0600, synced)
/// and a rename, after making its directories; refuses a `dest` whose
/// resolved directory is not inside `real_base` (a symlink in the way).
fn place(dest: &Path, real_base: &Path, payload: &[u8], suffix: &str) -> std::io::Result<()> {
    let parent = dest
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    platform::create_private_dirs(parent)?;
    if !real_path(parent).starts_with(real_base) {
        return Err(std::io::Error::other(
            "the member resolves outside the store (a symbolic link in its path)",
        ));
    }
    let mut tmp = dest.as_os_str().to_owned();
    tmp.push(format!(".{suffix}"));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let _ = std::fs::remove_file(&tmp);
        let mut file = platform::create_private_new(&tmp)?;
        file.write_all(payload)?;
        file.sync_all()?;
        std::fs::rename(&tmp, dest)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `migrate --dest PATH [--dest-deployment-id ID] [--force]`: every
/// carried file into the same layout at another path (or namespace),
/// each through `<target>.migrating` and a rename, so a reader of the
/// destination never sees a torn record.
pub fn migrate(
    target: &Target,
    dest_path: &str,
    dest_deployment_id: Option<&str>,
    force: bool,
) -> Result<Report, AdminError> {
    let src = target.base();
    if !src.is_dir() {
        return Ok(Report::refused(format!(
            "state: nothing to migrate: {} does not exist",
            src.display()
        )));
    }
    let namespace = match dest_deployment_id {
        Some(id) => namespace_of(Some(id)),
        None => target.settings.deployment_id.clone(),
    };
    let dest = base_of(&super::absolute_root(dest_path), &namespace);
    let (real_src, real_dest) = (real_path(&src), real_path(&dest));
    if real_dest.starts_with(&real_src) {
        return Ok(Report::refused(
            "state: destination must be a store outside the source".to_owned(),
        ));
    }
    if populated(&dest) && !force {
        return Ok(Report::refused(format!(
            "state: the destination store at {} is not empty. To overwrite it, stop every \
             cronstable process using this store, then pass --force",
            dest.display()
        )));
    }
    platform::create_private_dirs(&dest)
        .map_err(|e| AdminError::io(format!("cannot create {}", dest.display()), e))?;
    let real_dest = real_path(&dest);
    let mut count = 0usize;
    for (full, arcname) in walk_carried(&src) {
        let target_file = dest.join(&arcname);
        let copied = read_regular(&full)
            .and_then(|bytes| place(&target_file, &real_dest, &bytes, "migrating"));
        if let Err(e) = copied {
            return Ok(Report::refused(format!(
                "state: failed to copy {arcname}: {e}"
            )));
        }
        count += 1;
    }
    Ok(Report::ok([
        format!(
            "state: migrated {count} file(s) from {} to {}",
            src.display(),
            dest.display()
        ),
        "state: point state.path at the new location (and update deploymentId if you changed \
         it) to cut over"
            .to_owned(),
    ]))
}

/// The bytes of a regular file (following a symlink, as a copy does).
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}
