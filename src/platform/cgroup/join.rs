//! How a job's child enters its run's cgroup: between fork and exec it
//! writes `0` (itself) to each `cgroup.procs` the daemon opened for it, so
//! the job never runs a single instruction outside its caps. A failed
//! join leaves a byte in a marker pipe for the daemon to find.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The most hierarchies a run joins (cgroup v1: memory, cpu, pids).
const MAX_FDS: usize = 3;

/// The child's side of a join: raw descriptors, copied before the fork,
/// used only with async-signal-safe calls.
#[derive(Debug, Clone, Copy)]
pub struct JoinStep {
    fds: [i32; MAX_FDS],
    count: usize,
    marker: i32,
    fix_oom_adj: bool,
    required: bool,
}

impl JoinStep {
    /// Runs in the forked child before exec (and before any change of
    /// account: the demoted user could not write the delegated files).
    /// A failure is marked for the daemon; it fails the spawn only when
    /// the run's caps are required.
    pub fn enter(&self) -> io::Result<()> {
        for fd in &self.fds[..self.count] {
            // SAFETY: write of one byte from a static buffer to a
            // descriptor the daemon opened for this child.
            let rc = unsafe { libc::write(*fd, b"0".as_ptr().cast(), 1) };
            if rc != 1 {
                let err = io::Error::last_os_error();
                // SAFETY: as above, to the marker pipe's write end.
                unsafe { libc::write(self.marker, b"!".as_ptr().cast(), 1) };
                return if self.required { Err(err) } else { Ok(()) };
            }
        }
        if self.fix_oom_adj {
            // The daemon's -1000 would be inherited and make the job
            // OOM-proof; raising it needs no privilege.
            // SAFETY: open/write/close with a static nul-terminated path.
            unsafe {
                let adj = libc::open(
                    c"/proc/self/oom_score_adj".as_ptr(),
                    libc::O_WRONLY | libc::O_CLOEXEC,
                );
                if adj >= 0 {
                    libc::write(adj, b"0".as_ptr().cast(), 1);
                    libc::close(adj);
                }
            }
        }
        Ok(())
    }
}

/// The daemon's side of one run's join: the open `cgroup.procs` files and
/// the marker pipe, kept until the spawn has returned.
#[derive(Debug)]
pub struct CgroupJoin {
    procs: Vec<OwnedFd>,
    marker_read: OwnedFd,
    marker_write: Option<OwnedFd>,
    fix_oom_adj: bool,
    joined: Option<bool>,
}

impl CgroupJoin {
    /// A join into the cgroups whose `cgroup.procs` are `procs` (one per
    /// hierarchy, at most three). `fix_oom_adj` resets an inherited
    /// `oom_score_adj` of -1000 so the memory cap can end the job.
    pub(super) fn new(procs: Vec<OwnedFd>, fix_oom_adj: bool) -> io::Result<CgroupJoin> {
        if procs.is_empty() || procs.len() > MAX_FDS {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two new descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are ours alone.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(CgroupJoin {
            procs,
            marker_read: read,
            marker_write: Some(write),
            fix_oom_adj,
            joined: None,
        })
    }

    /// What the child runs; `required` makes a failed join fail the spawn.
    pub fn step(&self, required: bool) -> JoinStep {
        let mut fds = [-1; MAX_FDS];
        for (slot, fd) in fds.iter_mut().zip(&self.procs) {
            *slot = fd.as_raw_fd();
        }
        JoinStep {
            fds,
            count: self.procs.len(),
            marker: self.marker_write.as_ref().map_or(-1, AsRawFd::as_raw_fd),
            fix_oom_adj: self.fix_oom_adj,
            required,
        }
    }

    /// Once the spawn has returned (the child exec'd or failed): closes
    /// the descriptors and says whether the child joined. The child wrote
    /// its marker before exec, so the answer is already in the pipe.
    pub fn settle(&mut self) -> bool {
        if let Some(joined) = self.joined {
            return joined;
        }
        self.marker_write = None;
        self.procs.clear();
        let mut byte = [0u8; 1];
        // SAFETY: a non-blocking read of one byte into a local buffer.
        let n = unsafe { libc::read(self.marker_read.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        let joined = !(n == 1 && byte[0] == b'!');
        self.joined = Some(joined);
        joined
    }
}
