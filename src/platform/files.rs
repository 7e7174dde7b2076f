//! Files the daemon reads or writes with care: a config file that must be
//! a regular file, and the private files and directories of the
//! shared-directory lease (`cluster.backend: filesystem`).

/// Reads the regular file at `path`, at most `cap` bytes.
///
/// A config file, an include or an env_file names text a person wrote; a
/// device (`/dev/zero`), a FIFO or a socket named there instead would
/// block the load or grow the process without end. The file is opened
/// without blocking (a FIFO with no writer would otherwise hang the
/// open), checked to be a regular file on the open descriptor (no race
/// with a rename), and read up to one byte past `cap` to tell a file that
/// is too large. The error's kind is `InvalidInput` for both refusals,
/// with a message naming the cause.
#[cfg(unix)]
pub fn read_regular_file(path: &std::path::Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}, not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is larger than the {} MiB limit", cap >> 20),
        ));
    }
    Ok(bytes)
}

/// Creates `path` and its missing parents with mode 0700 (narrowed by the
/// umask): the shared directory may hold job state nobody else should
/// read. Directories that already exist keep their modes.
#[cfg(unix)]
pub fn create_private_dirs(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// Opens (creating it 0600 if needed) a file for reading and writing; the
/// lease's lock side file.
#[cfg(unix)]
pub fn open_private_rw(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Creates a new file 0600 for writing, failing if it exists (temp files
/// written before an atomic rename).
#[cfg(unix)]
pub fn create_private_new(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Flushes a directory's entries (a rename into it survives a crash).
#[cfg(unix)]
pub fn sync_dir(path: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}
