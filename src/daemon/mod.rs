//! The daemon wired up: the implementations of the scheduler's ports
//! picked and connected, signals caught once for the whole process, the
//! API thread started, and the order of shutdown. `main.rs` parses the
//! command line (with [`args`]) and loads the config; everything after
//! that is here.
//!
//! The choice of slot store and election backend is a value
//! ([`plan`], pure and tested combination by combination); [`build`]
//! opens what a plan names; [`sources`] opens the job source. The
//! binary's one-shot answers (`crd`, `init`, `state ...`, `-v`) are in
//! [`commands`].

pub mod args;
pub mod build;
pub mod commands;
pub mod init;
pub mod plan;
pub mod sources;
pub mod state_args;

use crate::cluster;
use crate::config;
use crate::kube::KubeOptions;
use crate::platform;
use crate::scheduler::ports;
use crate::scheduler::sections::LiveSections;
use crate::scheduler::shutdown::{self, ShutdownHandle, StopCause};
use crate::scheduler::{Ports, Scheduler};
use crate::source::ReloadTrigger;
use crate::web;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs the daemon on a single-threaded runtime until shutdown: the file
/// source (or the Kubernetes source with `--kube`), the leadership
/// supervisor over the `cluster` section, the cluster slot store the plan
/// names, in-memory run history, and the web API on its own thread.
/// `loaded` is the first load of `root` (empty without `-c` in
/// Kubernetes mode), its warnings already logged. `probe_listen`
/// (`--probe-listen`) serves the probes while no `web` section is in
/// force.
pub fn run(
    root: Option<PathBuf>,
    loaded: config::LoadedConfig,
    kube: Option<KubeOptions>,
    probe_listen: Option<String>,
) -> ExitCode {
    let start_time = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
    // First, so the `logging` section governs every later line. The
    // scheduler owns the counters and follows what the loads say.
    let sections = LiveSections::start(&loaded.sections, start_time);
    let loads = sections.loads();
    let pool_table = sections.pools();
    let notify = sections.notify();
    // DEBUG: at INFO the start is announced by the job-set id line, as in
    // the original.
    if let Some(root) = &root {
        tracing::debug!(
            target: "cronstable",
            "configuration loaded from {}: {} job(s)",
            root.display(),
            loaded.jobs.len()
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(target: "cronstable", "cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    if loaded.sections.state.is_none() && kube.is_none() {
        // The original's lines: without a store these have memory only.
        // (The Kubernetes mode keeps last outcomes in its facts ConfigMap
        // and says at start what needs `state.path`.)
        let count =
            |f: &dyn Fn(&config::JobConfig) -> bool| loaded.jobs.iter().filter(|j| f(j)).count();
        let missed = count(&|j| j.on_missed != config::model::OnMissed::Skip);
        if missed > 0 {
            tracing::warn!(
                target: "cronstable",
                "onMissed catch-up is set on {missed} job(s) but needs a `state` backend for the \
                 last-run watermark; skipping"
            );
        }
        let gated = count(&|j| j.only_if_last_succeeded);
        if gated > 0 {
            tracing::info!(
                target: "cronstable",
                "onlyIfLastSucceeded is set on {gated} job(s) with no `state` backend: the gate \
                 works from in-memory history only and resets on restart"
            );
        }
    }
    let plan = plan::plan(&loaded.sections, platform::host_name(), kube.is_some());
    let pool_plan = build::PoolPlan::of(&plan);
    runtime.block_on(async move {
        // Installed before the scheduler starts (and its @reboot jobs), so
        // no signal arrives while the default action would still kill us.
        let signals = match (platform::ShutdownSignals::new(), platform::reload_signals()) {
            (Ok(stops), Ok(hangups)) => (stops, hangups),
            (Err(err), _) | (_, Err(err)) => {
                tracing::error!(target: "cronstable", "cannot install signal handlers: {err}");
                return ExitCode::from(1);
            }
        };
        match platform::raise_open_file_limit() {
            Ok((before, after)) if after != before => tracing::debug!(
                target: "cronstable",
                "open-file limit raised from {before} to {after} (the hard limit)"
            ),
            Ok(_) => {}
            Err(err) => tracing::debug!(
                target: "cronstable",
                "cannot raise the open-file limit: {err}"
            ),
        }
        // As PID 1 (a container's entry point) orphans of jobs are adopted
        // by the daemon; without this they would stay zombies.
        if let Err(err) = platform::start_orphan_reaper() {
            tracing::warn!(target: "cronstable", "cannot reap orphaned processes: {err}");
        }
        let (may_write_tx, may_write) = tokio::sync::watch::channel(true);
        // Without `state.path`, the Kubernetes mode keeps the small
        // durable facts in a ConfigMap (`kube::facts`).
        let facts = kube.as_ref().map(|o| o.facts_name());
        let state_section = loaded.sections.state.clone();
        let facts_may_write = may_write.clone();
        let sources = match sources::open(kube, root, loaded, sections, may_write).await {
            Ok(sources) => sources,
            Err(code) => return code,
        };
        let slots: Box<dyn ports::SlotLock> = match plan.slots {
            Some(slots) => Box::new(cluster::slots::ClusterSlots::new(
                build::slot_store(slots.store, sources.kube_client.clone()),
                &slots.node,
                slots.settings,
            )),
            None => Box::new(ports::NoSlots),
        };
        // The gossip backend compares peers by the scheduler's job-set id
        // (the initial set's now, the scheduler's after each reload) and
        // advertises the scheduler's jobs for the fleet view.
        let (feed_tx, feed) =
            cluster::feed::SchedulerFeed::channel(sources.initial.job_set_id.clone());
        let facts_client = sources.kube_client.clone();
        let pools_client = sources.kube_client.clone();
        let (gate, leadership) = cluster::supervise::start(
            sources.cluster_config,
            build::backend_factory(sources.kube_client),
            may_write_tx,
            feed,
        )
        .await;
        // What the cluster and the Kubernetes mode publish, for the API
        // and the metrics to read.
        let published = crate::status::Published {
            leadership: leadership.leadership(),
            kube: sources.kube_state,
        };
        let durable = match (plan.durable, facts) {
            (None, Some(name)) => build::Durable {
                port: build::kube_facts(
                    facts_client,
                    name,
                    state_section.as_ref().map(|s| &s.value),
                    facts_may_write,
                    plan.elect_leader,
                ),
                store: None,
            },
            (durable, _) => build::durable_store(durable),
        };
        // Leadership changes and quorum losses, for the `notify` section
        // (and the Kubernetes mode's Events).
        let notifier = cluster::notify::Notifier::spawn(
            published.leadership.clone(),
            notify,
            Arc::clone(&sources.reporter),
        );
        let (shutdown, stop) = shutdown::channel();
        let scheduler = Scheduler::new(
            sources.initial,
            Ports {
                source: sources.source,
                gate: Box::new(gate),
                slots,
                store: Box::new(ports::MemoryStore::default()),
                durable: durable.port,
                clock: Arc::new(ports::SystemClock),
                reporter: sources.reporter,
                started_at: start_time,
                loads,
                shutdown: shutdown.clone(),
            },
        );
        // The job endpoint serves runs from the store of `state.path`.
        let job_api = start_job_api(state_section.as_ref().map(|s| &s.value), durable.store.clone());
        let mut scheduler = scheduler;
        if let Some(api) = &job_api {
            scheduler.set_run_grants(api.grants());
        }
        scheduler.set_pools(build::pools(
            pool_plan,
            durable.store.clone(),
            pools_client,
            pool_table,
        ));
        platform::release_free_memory();
        let control = scheduler.control();
        if let Some(writer) = sources.status_writer {
            writer.start(control.clone());
        }
        tokio::spawn(cluster::feed::follow_scheduler(
            control.clone(),
            feed_tx,
            published.leadership.clone(),
        ));
        let forwarder = tokio::spawn(forward_signals(
            signals.0,
            signals.1,
            shutdown,
            sources.reload,
        ));
        // The API renders on its own thread, so a large response never
        // delays a launch (see `web::ApiThread`).
        let web = match web::ApiThread::start(
            sources.web_config,
            sources.mcp_settings,
            probe_listen,
            control,
            published,
            durable.store,
        ) {
            Ok(thread) => Some(thread),
            Err(err) => {
                tracing::error!(target: "cronstable::web", "cannot start the web API thread: {err}");
                None
            }
        };
        scheduler.run(stop).await;
        // The gate asked for the release when the drain began; this waits
        // (bounded) for it to land before the process exits.
        leadership.stop().await;
        notifier.stop().await;
        if let Some(web) = web {
            web.stop();
        }
        if let Some(api) = job_api {
            api.stop();
        }
        forwarder.abort();
        ExitCode::SUCCESS
    })
}

/// Starts the job endpoint when the `state` section asks for it (by
/// default it does) and its store is open; decided once at start.
fn start_job_api(
    state: Option<&config::model::sections::StateConfig>,
    store: Option<Arc<crate::state::store::Store>>,
) -> Option<crate::jobapi::JobApi> {
    let state = state?;
    if !config::job_api::enabled(state) {
        return None;
    }
    let Some(store) = store else {
        if !state.path.trim().is_empty() {
            tracing::warn!(
                target: "cronstable::state",
                "state: the job API is not served: the store at {} is not open",
                state.path
            );
        }
        return None;
    };
    let settings = match config::job_api::resolve(state.job_api.as_ref()) {
        Ok((settings, warnings)) => {
            for warning in warnings {
                tracing::warn!(target: "cronstable::state", "{warning}");
            }
            settings
        }
        Err(err) => {
            tracing::error!(
                target: "cronstable::state",
                "state: job API failed to start (jobs will run without the loopback state \
                 endpoint): {err}"
            );
            return None;
        }
    };
    match crate::jobapi::JobApi::start(settings, store, platform::host_name()) {
        Ok(api) => Some(api),
        Err(err) => {
            tracing::error!(
                target: "cronstable::state",
                "state: job API failed to start (jobs will run without the loopback state \
                 endpoint): {err}"
            );
            None
        }
    }
}

/// The daemon's one signal handler: SIGINT/SIGTERM ask the scheduler to
/// drain (every later one too: the scheduler says it is still waiting),
/// SIGHUP asks the file source to reload now. The Kubernetes source has
/// nothing to reload on demand: it follows its watches and checks the
/// files of `-c` at every pass.
async fn forward_signals(
    mut stops: platform::ShutdownSignals,
    mut hangups: platform::ReloadSignals,
    shutdown: ShutdownHandle,
    reload: Option<ReloadTrigger>,
) {
    loop {
        tokio::select! {
            name = stops.recv() => shutdown.stop(StopCause::Signal(name)),
            Some(()) = hangups.recv() => match &reload {
                Some(reload) => {
                    tracing::info!(target: "cronstable::scheduler", "Reload requested (SIGHUP); reloading configuration");
                    reload.trigger();
                }
                None => tracing::info!(
                    target: "cronstable::scheduler",
                    "SIGHUP received: in Kubernetes mode the configuration follows the API server \
                     and the files are checked at every pass; nothing to do"
                ),
            },
        }
    }
}
