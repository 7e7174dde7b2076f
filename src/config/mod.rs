//! Configuration: the schema ([`model`]), loading files, directories and
//! in-memory sources ([`load`]), classic crontabs ([`crontab`]), and the
//! rules a config must satisfy ([`validate`], [`sections_check`]).

pub mod crontab;
pub mod defaults;
pub mod error;
pub mod interpolate;
pub mod job;
pub mod load;
pub mod locate;
pub mod merge;
pub mod model;
pub mod sections;
pub mod sections_check;
pub mod validate;

pub use error::{ConfigError, Location};
pub use job::JobConfig;
pub use load::{load_path, load_sources, LoadedConfig, Source, SourceKind};
