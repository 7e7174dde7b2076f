//! File access for the per-run cgroup backends. The kernel's cgroupfs is
//! one implementation; tests substitute a model of it in a temporary
//! directory, so the backends' logic runs without a delegated hierarchy.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

/// What the backends do to a cgroup filesystem. Calls fail with the
/// kernel's errno, as the real files do.
pub trait CgroupFs: Send + Sync + std::fmt::Debug {
    /// A whole interface file.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// One write to an existing interface file (never creates one).
    fn write(&self, path: &Path, data: &str) -> io::Result<()>;
    /// Creates a cgroup.
    fn mkdir(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty cgroup.
    fn rmdir(&self, path: &Path) -> io::Result<()>;
    /// Whether a file or directory exists.
    fn exists(&self, path: &Path) -> bool;
    /// Whether this process may write `path` (false on a read-only mount).
    fn writable(&self, path: &Path) -> bool;
    /// The names of the child cgroups of `path`.
    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>>;
    /// An extended attribute of `path`.
    fn xattr(&self, path: &Path, name: &str) -> io::Result<Vec<u8>>;
    /// `path` opened for writing, close-on-exec, above the standard
    /// streams (the job's stdio is set up over 0-2 before it joins).
    fn open_write(&self, path: &Path) -> io::Result<OwnedFd>;
    /// Sends SIGKILL to `pid`.
    fn kill(&self, pid: i32) -> io::Result<()>;
    /// How long ago `path` was last changed (a cgroup: made), if known.
    fn age(&self, path: &Path) -> Option<std::time::Duration>;
}

/// The kernel's cgroupfs (and procfs), through plain system calls.
#[derive(Debug, Default)]
pub struct RealCgroupFs;

impl CgroupFs for RealCgroupFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn write(&self, path: &Path, data: &str) -> io::Result<()> {
        use std::io::Write;
        // No O_CREAT: a missing interface file is ENOENT, not a new file.
        let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
        file.write_all(data.as_bytes())
    }

    fn mkdir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn writable(&self, path: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: access reads a valid nul-terminated path. A read-only
        // mount answers EROFS here.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(out)
    }

    fn xattr(&self, path: &Path, name: &str) -> io::Result<Vec<u8>> {
        get_xattr(path, name)
    }

    fn open_write(&self, path: &Path) -> io::Result<OwnedFd> {
        use std::os::fd::AsRawFd;
        let fd: OwnedFd = std::fs::OpenOptions::new().write(true).open(path)?.into();
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        // SAFETY: fcntl duplicates a descriptor we own to the lowest free
        // one at or above 3, close-on-exec; the low one closes on drop.
        let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if high < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `high` was just returned to us and is owned by no one.
        Ok(unsafe { OwnedFd::from_raw_fd(high) })
    }

    fn age(&self, path: &Path) -> Option<std::time::Duration> {
        std::fs::metadata(path)
            .ok()?
            .modified()
            .ok()?
            .elapsed()
            .ok()
    }

    fn kill(&self, pid: i32) -> io::Result<()> {
        // SAFETY: kill takes plain integers.
        if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(target_os = "linux")]
fn get_xattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| invalid())?;
    let c_name = std::ffi::CString::new(name).map_err(|_| invalid())?;
    let mut buf = [0u8; 64];
    // SAFETY: getxattr writes at most buf.len() bytes into buf; both
    // strings are nul-terminated.
    let n = unsafe {
        libc::getxattr(
            c_path.as_ptr(),
            c_name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buf[..n as usize].to_vec())
}

#[cfg(not(target_os = "linux"))]
fn get_xattr(_path: &Path, _name: &str) -> io::Result<Vec<u8>> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}
