//! Every per-OS difference lives here, one module a concept. The rest of
//! the crate names these items as `platform::...`: each module's public
//! items are re-exported below, so a move between modules changes no
//! caller.

mod accounts;
mod allocator;
mod boot;
mod cgroup;
mod clipboard;
mod clock;
mod files;
mod host;
mod locks;
mod priority;
mod procfs;
mod random;
mod reaper;
mod signals;
mod spawn;
mod text;

pub use accounts::*;
pub use allocator::*;
pub use boot::*;
pub use cgroup::{
    CgroupBackend, CgroupCapability, CgroupCaps, CgroupFs, CgroupPlace, CgroupStats, CgroupUsage,
    JoinStep, LimitResource, RealCgroupFs, RunCgroup, CGROUP_ROOT_ENV,
};
pub use clipboard::*;
pub use clock::*;
pub use files::*;
pub use host::*;
pub use locks::*;
pub use priority::*;
pub use procfs::*;
pub use random::*;
pub use reaper::*;
pub use signals::*;
pub use spawn::*;
pub use text::*;
