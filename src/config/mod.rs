//! Configuration: the schema (`model`), loading files, directories and
//! in-memory sources (`load`), classic crontabs ([`crontab`]), and the
//! rules a config must satisfy (`validate`, `sections_check`).

pub mod crontab;
pub(crate) mod defaults;
pub(crate) mod error;
pub(crate) mod interpolate;
pub(crate) mod job;
pub(crate) mod load;
pub(crate) mod locate;
pub(crate) mod merge;
pub(crate) mod model;
pub(crate) mod sections;
pub(crate) mod sections_check;
pub(crate) mod validate;

pub use error::{ConfigError, Location};
pub use job::JobConfig;
pub use load::{load_path, load_sources, LoadedConfig, Source, SourceKind};
