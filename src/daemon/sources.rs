//! The daemon's job source: the file source, or the Kubernetes source
//! with `--kube`, and what each brings along.

use crate::config::{self, ClusterConfig, WebConfig};
use crate::kube::{KubeOptions, StatusWriter};
use crate::report;
use crate::scheduler::ports::{self, JobSource};
use crate::scheduler::sections::LiveSections;
use crate::source::{FileSource, ReloadTrigger};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::watch;

/// What the daemon's job source brings along.
pub struct Sources {
    /// The scheduler's job source.
    pub source: Box<dyn JobSource>,
    /// Its first job set.
    pub initial: ports::JobSet,
    /// The running `web` section, for the API thread.
    pub web_config: watch::Receiver<Option<WebConfig>>,
    /// The MCP server's settings in force, for the API thread.
    pub mcp_settings: watch::Receiver<Option<crate::config::mcp::McpSettings>>,
    /// The running `cluster` section, for the leadership supervisor.
    pub cluster_config: watch::Receiver<Option<ClusterConfig>>,
    /// The reporter to hand the scheduler.
    pub reporter: Arc<dyn report::Reporter>,
    /// The Kubernetes mode's status writer, ready to start.
    pub status_writer: Option<StatusWriter>,
    /// The file source's reload handle (SIGHUP); None with `--kube`.
    pub reload: Option<ReloadTrigger>,
    /// The Kubernetes mode's client and namespace, for the Lease backend.
    pub kube_client: super::build::SharedClient,
    /// The Kubernetes mode's published state (None without `--kube`).
    pub kube_state: Option<crate::status::KubeWatch>,
}

/// Opens the file source, or the Kubernetes source with `--kube`, over
/// the first load (`loaded`, its sections in force: `sections`); the
/// error is the exit code (the reason is logged).
pub async fn open(
    kube: Option<KubeOptions>,
    root: Option<PathBuf>,
    loaded: config::LoadedConfig,
    sections: LiveSections,
    may_write: watch::Receiver<bool>,
) -> Result<Sources, ExitCode> {
    let web_config = sections.web();
    let mcp_settings = sections.mcp();
    let cluster_config = sections.cluster();
    match (kube, root) {
        (Some(options), root) => {
            let mode = crate::kube::start(
                &options,
                root,
                loaded,
                sections,
                report::default_reporter(),
                may_write,
            )
            .await
            .map_err(|err| {
                tracing::error!(target: "cronstable", "Kubernetes mode: {err}");
                ExitCode::from(1)
            })?;
            Ok(Sources {
                web_config,
                mcp_settings,
                cluster_config,
                source: Box::new(mode.source),
                initial: mode.initial,
                reporter: mode.reporter,
                status_writer: Some(mode.status),
                reload: None,
                kube_state: Some(mode.state),
                kube_client: Some((mode.client, mode.namespace)),
            })
        }
        (None, Some(root)) => {
            let (source, initial) = FileSource::open(root, loaded, sections);
            Ok(Sources {
                web_config,
                mcp_settings,
                cluster_config,
                reload: Some(source.reload_trigger()),
                source: Box::new(source),
                initial,
                reporter: report::default_reporter(),
                status_writer: None,
                kube_client: None,
                kube_state: None,
            })
        }
        (None, None) => {
            // The command line always resolves a path without --kube.
            tracing::error!(target: "cronstable", "no configuration path and no --kube");
            Err(ExitCode::from(1))
        }
    }
}
