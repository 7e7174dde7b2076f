//! Configuration: the schema (`model`), loading files, directories and
//! in-memory sources (`load`), classic crontabs ([`crontab`]), and the
//! rules a config must satisfy (`validate`, `sections_check`).

pub mod cluster;
pub mod crontab;
pub(crate) mod defaults;
pub(crate) mod error;
pub(crate) mod interpolate;
pub(crate) mod job;
pub mod job_api;
pub mod limits;
pub(crate) mod load;
pub(crate) mod locate;
pub mod mcp;
pub(crate) mod merge;
pub(crate) mod model;
pub(crate) mod sections;
pub(crate) mod sections_check;
pub mod stamp;
pub(crate) mod validate;

/// The largest config file, include or env_file read (a 10,000-job file
/// is about 2 MB; a Kubernetes ConfigMap holds at most 1 MiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// How deep `include:` may nest (a top-level file counts as one). Without
/// a bound a long chain of distinct files recurses until the stack ends
/// and the process aborts: one level takes about 70 KiB of stack in a
/// debug build (a 2 MiB thread overflowed at 32 levels). Real configs
/// nest two or three deep.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// How many included files one load may read, counting a file again each
/// time another branch includes it. Diamonds are allowed, so without a
/// bound twenty tiny files that each include the next twice make a
/// million reads and the load never ends.
pub const MAX_INCLUDE_READS: usize = 10_000;

/// How much config text one load may read from files in all (the config
/// and every include, a file counted each time it is read). Each file is capped at [`MAX_FILE_BYTES`], but
/// thousands of includes of large files would still make a load read
/// gigabytes; a 10,000-job config is about 2 MB.
pub const MAX_LOAD_BYTES: usize = 64 << 20;

/// How many jobs one config may define. Each job costs a few KiB of
/// memory and a slot in every API answer; the daemon is measured with
/// 10,000 (docs/performance.md), ten times that is far past any real
/// config and still fits in memory.
pub const MAX_JOBS: usize = 100_000;

pub use error::{ConfigError, Location};
pub use job::{JobConfig, JobSchedule, SlaThresholds};
pub use load::{
    load_jobs_against, load_path, load_path_and_sources, load_sources, load_sources_with_files,
    FileMap, LoadedConfig, Source, SourceKind,
};
pub use model::sections::Distribution;
pub use model::{ClusterConfig, WebConfig};
pub use sections::{PoolConf, PoolTable};

/// The `web.metrics.durationBuckets` of a web section, if set: the
/// histogram bounds every source applies on load.
pub fn web_buckets(web: Option<&model::WebConfig>) -> Option<Vec<f64>> {
    web.and_then(|w| w.metrics.as_ref())
        .and_then(|m| m.duration_buckets.clone())
}

/// The jobs as the scheduler keeps them: shared, without the merged spec
/// (only the load needs it; a 10,000-job table is about a third smaller
/// without it). Built into a fresh Vec: collecting straight from `jobs`
/// could reuse its allocation (sized for whole JobConfigs) for the
/// pointers, keeping megabytes alive for nothing.
pub fn shared_without_specs(jobs: Vec<JobConfig>) -> Vec<std::sync::Arc<JobConfig>> {
    let mut table = Vec::with_capacity(jobs.len());
    for mut job in jobs {
        job.spec = None;
        table.push(std::sync::Arc::new(job));
    }
    table
}
