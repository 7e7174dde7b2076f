//! The durable state store of the `state` section: a directory of
//! immutable JSON records (one per file, written through a temp file and a
//! rename), in the original's layout and record formats, so the Python
//! daemon and this one can share a store.
//!
//! This layer knows files and records only: the scheduler reaches the
//! store through its `DurableState` port, which `crate::durable`
//! implements over [`store::Store`]; the `cronstable state` commands
//! administer it offline through [`admin`].

pub mod admin;
pub mod format;
pub mod inspect;
pub mod jobstate;
pub mod lease;
pub mod records;
pub mod stats;
pub mod store;
