//! CPU control of the v2 backend: the cpu controller on while some job
//! caps CPU (or a run with a CPU cap is still going), off otherwise, and
//! each run's `cpu.weight.nice` while it is on.

use super::{describe, LimitResource, State, DAEMON_LEAF, RUNS_DIR, V2};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

impl V2 {
    /// Turns cpu on or off in base and runs/, as the config wants (some
    /// job caps CPU). Off waits while a run has a CPU cap, so each run
    /// keeps its cap to its end.
    pub fn set_cpu(&self, want: bool) {
        let mut state = self.lock();
        if state.setup.is_none() {
            return;
        }
        state.cpu_unwanted = !want;
        if want {
            self.cpu_up(&mut state, true);
        } else {
            state.cpu_failure = None;
            self.cpu_down(&mut state);
        }
    }

    /// Turns cpu on for a run with a CPU cap, whatever the config wants.
    pub(super) fn cpu_up(&self, state: &mut State, retry: bool) {
        let Some(cap) = &state.setup else { return };
        if !cap.resources.contains(&LimitResource::Cpu) || (state.cpu_failure.is_some() && !retry) {
            return;
        }
        let Some(base) = state.base.clone() else {
            return;
        };
        self.read_cpu(state, &base);
        state.cpu_failure = if self.weighting() {
            None
        } else {
            self.cpu_on(state, &base)
        };
    }

    fn cpu_down(&self, state: &mut State) {
        let Some(base) = state.base.clone() else {
            return;
        };
        self.read_cpu(state, &base);
        if !(self.weighting() || state.cpu_base) || self.cpu_in_use(&base) {
            return;
        }
        self.cpu_off(state, &base);
    }

    /// Turns cpu off if the config wants it off and no CPU cap is left
    /// (after a run with a CPU cap ends).
    pub fn settle_cpu(&self) {
        let mut state = self.lock();
        if state.cpu_unwanted {
            self.cpu_down(&mut state);
        }
    }

    /// Whether a live run's cgroup, or a busy one this daemon did not
    /// make, has a CPU cap.
    fn cpu_in_use(&self, base: &Path) -> bool {
        let runs = base.join(RUNS_DIR);
        let Ok(names) = self.fs().subdirs(&runs) else {
            return false;
        };
        let live: BTreeSet<PathBuf> = self.shared.live().into_iter().map(|(p, _)| p).collect();
        let done = self.shared.pending();
        names.into_iter().map(|n| runs.join(n)).any(|path| {
            if done.contains(&path) {
                return false;
            }
            let foreign_idle =
                !live.contains(&path) && self.shared.tree_pids(&path).is_ok_and(|p| p.is_empty());
            !foreign_idle && self.cpu_capped(&path)
        })
    }

    fn cpu_capped(&self, path: &Path) -> bool {
        self.fs()
            .read(&path.join("cpu.max"))
            .ok()
            .and_then(|t| t.split_whitespace().next().map(|q| q != "max"))
            .unwrap_or(false)
    }

    /// Reads where cpu is on: another daemon sharing base may change it.
    fn read_cpu(&self, state: &mut State, base: &Path) {
        let was = self.weighting();
        state.cpu_base = self.enabled(base).contains("cpu");
        let now = self.enabled(&base.join(RUNS_DIR)).contains("cpu");
        self.weighting.store(now, Ordering::SeqCst);
        if now && !was {
            self.weigh_live();
        }
    }

    fn cpu_on(&self, state: &mut State, base: &Path) -> Option<String> {
        let daemon = base.join(DAEMON_LEAF);
        let result = self
            .evacuate(base, &daemon, &["cpu"])
            .map_err(|(e, _)| e)
            .and_then(|()| {
                state.cpu_base = true;
                self.enable(&base.join(RUNS_DIR), &["cpu"])
                    .map_err(|e| describe(&e))
            });
        if let Err(err) = result {
            self.cpu_off(state, base);
            return Some(format!(
                "could not enable the cpu controller in {}: {err}",
                base.display()
            ));
        }
        self.weighting.store(true, Ordering::SeqCst);
        let _ = self.write_weight(&daemon, None);
        self.weigh_live();
        None
    }

    fn weigh_live(&self) {
        for (path, nice) in self.shared.live() {
            let _ = self.write_weight(&path, nice);
        }
    }

    /// Disables cpu in runs/, then base (which needs runs/ off first).
    /// Best-effort: a cgroup below that enables cpu keeps it on (EBUSY).
    fn cpu_off(&self, state: &mut State, base: &Path) {
        if self.weighting() {
            let runs = base.join(RUNS_DIR).join("cgroup.subtree_control");
            if self.fs().write(&runs, "-cpu").is_err() {
                return;
            }
            self.weighting.store(false, Ordering::SeqCst);
        }
        if state.cpu_base
            && self
                .fs()
                .write(&base.join("cgroup.subtree_control"), "-cpu")
                .is_ok()
        {
            state.cpu_base = false;
        }
    }

    /// Writes `cpu.weight.nice` (the run's nice, or the daemon's own).
    pub(super) fn write_weight(&self, path: &Path, nice: Option<i32>) -> Option<String> {
        let value = nice.unwrap_or_else(super::super::own_nice).clamp(-20, 19);
        self.fs()
            .write(&path.join("cpu.weight.nice"), &value.to_string())
            .err()
            .map(|e| format!("could not set cpu.weight.nice: {}", describe(&e)))
    }
}
