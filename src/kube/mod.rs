//! Kubernetes: the `CronJobSet` custom resource and its CRD, and the
//! Kubernetes mode (`--kube`): the watches on the selected sets and the
//! ConfigMap, the job source that assembles them with the files into one
//! job table, the status writer and the event recorder. Kubernetes API
//! types stay at the edges (here, and the cluster module's Lease backend
//! and slot store): the scheduler sees a job source, plain config, and a
//! control handle it answers. The mode's own state (watch health, sets
//! taken, status writes) is published on watch channels, each written by
//! the one task that produces it (`crate::status::kube`).

pub mod client;
pub mod convert;
pub mod crd;
pub mod events;
pub mod facts;
pub mod health;
pub mod options;
pub mod presence;
pub mod sets;
pub mod source;
pub mod status;
pub mod watch;
pub mod writer;

pub use convert::{job_name, source_name, to_source, ConvertError, SetSource};
pub use crd::{crd, crd_yaml, CrdError, CronJobSet, CronJobSetSpec, CronJobSetStatus};
pub use options::{KubeOptions, SetScope};

use crate::config::LoadedConfig;
use crate::report::Reporter;
use crate::scheduler::control::ControlHandle;
use crate::scheduler::ports::JobSet;
use crate::scheduler::sections::LiveSections;
use crate::status::kube::{KubeScope, KubeWatch, StatusWrites};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch as channel;

/// The Kubernetes mode, connected and watching, before the scheduler
/// exists: the daemon builds the scheduler over `source`, `initial` and
/// `reporter`, then starts `status` with the scheduler's control handle.
pub struct KubeMode {
    /// The job source to hand the scheduler.
    pub source: source::KubeSource,
    /// Its first job set (the files' jobs).
    pub initial: JobSet,
    /// The reporter to hand the scheduler: the daemon's reporters plus
    /// Events on failed runs of a set's jobs.
    pub reporter: Arc<dyn Reporter>,
    /// The status writer, ready to start.
    pub status: StatusWriter,
    /// The client, for the Lease backend to share.
    pub client: kube::Client,
    /// The scheduler's namespace.
    pub namespace: String,
    /// The mode's published state, for `GET /kube`, `/readyz` and the
    /// metrics.
    pub state: KubeWatch,
}

/// The status writer before the scheduler exists.
pub struct StatusWriter {
    client: kube::Client,
    reports: channel::Receiver<Arc<sets::SetReports>>,
    may_write: channel::Receiver<bool>,
    node: String,
    writes: channel::Sender<StatusWrites>,
}

/// Connects (without waiting for the API server), starts the watches and
/// the event recorder, and builds the source. `loaded` is the first load
/// of `root` (empty without `-c`), its sections in force (`sections`);
/// `may_write` says when this scheduler writes status and Events (the
/// leader's, or always without a cluster).
pub async fn start(
    options: &KubeOptions,
    root: Option<PathBuf>,
    loaded: LoadedConfig,
    sections: LiveSections,
    reporter: Arc<dyn Reporter>,
    may_write: channel::Receiver<bool>,
) -> Result<KubeMode, client::ClientError> {
    let connection = client::connect(options).await?;
    let namespace = connection.namespace.clone();
    tracing::info!(
        target: "cronstable::kube",
        "Kubernetes mode: namespace {namespace}, credentials from {}, CronJobSets: {}{}, ConfigMap: {}",
        connection.origin,
        options.scope,
        options
            .selector
            .as_deref()
            .map(|s| format!(" matching '{s}'"))
            .unwrap_or_default(),
        options.configmap.as_deref().unwrap_or("none")
    );
    let (publishers, state) = KubeWatch::channel(KubeScope {
        namespace: namespace.clone(),
        configmap: options.configmap.clone(),
        scope: options.scope.as_str().to_owned(),
        selector: options.selector.clone(),
    });
    let node = crate::platform::host_name().to_owned();
    let sink = events::spawn(
        connection.client.clone(),
        node.clone(),
        may_write.clone(),
        publishers.events,
    );
    let changes = watch::spawn(
        connection.client.clone(),
        &namespace,
        options,
        publishers.health,
    );
    let pod = events::pod_reference(
        &connection.namespace,
        options.pod_name.as_deref(),
        options.pod_uid.as_deref(),
    );
    let (source, initial) = source::KubeSource::open(
        root,
        loaded,
        namespace,
        options.configmap.clone(),
        changes,
        sections,
        source::SourceOutputs {
            set_counts: publishers.sets,
            events: sink.clone(),
            configmap_state: publishers.configmap,
            pod: pod.clone(),
        },
    );
    publish_set_views(source.reports(), publishers.set_views);
    let reporter: Arc<dyn Reporter> = Arc::new(events::EventingReporter::new(
        reporter,
        sink,
        source.reports(),
        pod,
    ));
    let status = StatusWriter {
        client: connection.client.clone(),
        reports: source.reports(),
        may_write,
        node,
        writes: publishers.writes,
    };
    Ok(KubeMode {
        source,
        initial,
        reporter,
        status,
        client: connection.client,
        namespace: connection.namespace,
        state,
    })
}

/// Follows the source's reports and publishes them as the API shows them
/// (`GET /kube/sets`), until the source is gone.
fn publish_set_views(
    mut reports: channel::Receiver<Arc<sets::SetReports>>,
    views: channel::Sender<Arc<Vec<crate::status::kube::SetView>>>,
) {
    tokio::spawn(async move {
        loop {
            let list = reports
                .borrow_and_update()
                .values()
                .map(|report| report.view())
                .collect();
            views.send_replace(Arc::new(list));
            if reports.changed().await.is_err() {
                break;
            }
        }
    });
}

impl StatusWriter {
    /// Starts writing status; `control` reaches the scheduler.
    pub fn start(self, control: ControlHandle) {
        writer::spawn(
            self.client,
            self.reports,
            control,
            self.writes,
            self.may_write,
            self.node,
            writer::WriterSettings::default(),
        );
    }
}
