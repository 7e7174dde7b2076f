//! Kubernetes: the `CronJobSet` custom resource, its CRD (generated from
//! the config model's job type) and the conversion of a set into config
//! sources the loader reads. Kubernetes types stay inside this module: what
//! leaves it is plain config text.

pub mod convert;
pub mod crd;

pub use convert::{job_name, source_name, to_source, ConvertError, SetSource};
pub use crd::{crd, crd_yaml, CrdError, CronJobSet, CronJobSetSpec, CronJobSetStatus};
