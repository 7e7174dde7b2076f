//! Best-effort statsd datagrams for one job: `start` when a run starts;
//! `stop`, `success` and `duration` when it ends, plus `cpu` and `max_rss`
//! for a resource-monitored run. Sending never fails a run: errors are
//! logged.

use crate::config::model::Statsd;
use crate::config::JobConfig;
use crate::job::{RunObserver, RunRecord};
use std::net::UdpSocket;

/// Sends each run's datagrams to its job's `statsd:` target, if it has
/// one; the scheduler hands it to every run it starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatsdEvents;

impl RunObserver for StatsdEvents {
    fn started(&self, job: &JobConfig) {
        if let Some(target) = job.statsd.as_ref().and_then(StatsdTarget::from_config) {
            target.send(&target.start_message());
        }
    }

    fn finished(&self, job: &JobConfig, record: &RunRecord) {
        if let Some(target) = job.statsd.as_ref().and_then(StatsdTarget::from_config) {
            let ms = (record.finished_at - record.started_at)
                .num_milliseconds()
                .max(0) as u128;
            let mut message = target.stop_message(!record.failed(), ms);
            if let Some(usage) = &record.resources {
                message.push_str(
                    &target.resources_message(usage.cpu_total_seconds(), usage.max_rss_bytes),
                );
            }
            if record.limits.as_ref().is_some_and(|l| l.memory_exceeded) {
                message.push_str(&target.memory_limit_message());
            }
            target.send(&message);
        }
    }
}

/// Where one job's metrics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsdTarget {
    host: String,
    port: u16,
    prefix: String,
}

impl StatsdTarget {
    /// Builds a target from the job's `statsd:` block. Characters that
    /// would break the line protocol (`:`, `|`, CR, LF) are removed from
    /// the prefix so it cannot inject samples.
    pub fn from_config(config: &Statsd) -> Option<Self> {
        let port = u16::try_from(config.port).ok()?;
        Some(StatsdTarget {
            host: config.host.clone(),
            port,
            prefix: config
                .prefix
                .chars()
                .filter(|c| !matches!(c, ':' | '|' | '\r' | '\n'))
                .collect(),
        })
    }

    /// The datagram sent when a run starts.
    pub fn start_message(&self) -> String {
        format!("{}.start:1|g\n", self.prefix)
    }

    /// The datagram sent when a run ends. The duration timer has no
    /// sample-rate suffix: every run sends exactly one observation, and a
    /// server that honours `@0.1` would count each run ten times (the
    /// manual's Metrics with statsd page; the original dropped the flag in
    /// 1.2.37).
    pub fn stop_message(&self, success: bool, duration_ms: u128) -> String {
        let p = &self.prefix;
        format!(
            "{p}.stop:1|g\n{p}.success:{}|g\n{p}.duration:{duration_ms}|ms\n",
            u8::from(success)
        )
    }

    /// The lines a resource-monitored run adds to its stop datagram: the
    /// CPU time as a timer in milliseconds (rounded half to even, as the
    /// original's `round`) and the peak RSS as a gauge in bytes.
    pub fn resources_message(&self, cpu_seconds: f64, max_rss_bytes: u64) -> String {
        let p = &self.prefix;
        let ms = (cpu_seconds * 1000.0).round_ties_even().max(0.0) as u64;
        format!("{p}.cpu:{ms}|ms\n{p}.max_rss:{max_rss_bytes}|g\n")
    }

    /// The line a run its memory cap ended adds to its stop datagram.
    pub fn memory_limit_message(&self) -> String {
        format!("{}.memory_limit_exceeded:1|c\n", self.prefix)
    }

    /// Sends one datagram; failures are logged at WARN.
    pub fn send(&self, message: &str) {
        let result = UdpSocket::bind(("0.0.0.0", 0))
            .or_else(|_| UdpSocket::bind(("::", 0)))
            .and_then(|socket| socket.send_to(message.as_bytes(), (self.host.as_str(), self.port)));
        if let Err(err) = result {
            tracing::warn!(
                target: "cronstable::statsd",
                "statsd: could not send to {}:{}: {err}",
                self.host,
                self.port
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(prefix: &str) -> StatsdTarget {
        StatsdTarget::from_config(&Statsd {
            prefix: prefix.into(),
            host: "127.0.0.1".into(),
            port: 8125,
        })
        .unwrap()
    }

    #[test]
    fn wire_format() {
        let t = target("cron.backup");
        assert_eq!(t.start_message(), "cron.backup.start:1|g\n");
        assert_eq!(
            t.stop_message(false, 1234),
            "cron.backup.stop:1|g\ncron.backup.success:0|g\ncron.backup.duration:1234|ms\n"
        );
        assert_eq!(
            t.stop_message(true, 0),
            "cron.backup.stop:1|g\ncron.backup.success:1|g\ncron.backup.duration:0|ms\n"
        );
    }

    #[test]
    fn a_run_its_memory_cap_ended_adds_a_counter_line() {
        let target = target("cron.backup");
        assert_eq!(
            target.memory_limit_message(),
            "cron.backup.memory_limit_exceeded:1|c\n"
        );
    }

    #[test]
    fn a_monitored_run_adds_cpu_and_max_rss_lines() {
        let t = target("cron.backup");
        assert_eq!(
            t.resources_message(1.2345, 104_857_600),
            "cron.backup.cpu:1234|ms\ncron.backup.max_rss:104857600|g\n"
        );
        // Half a millisecond rounds to even, as Python's round does.
        assert_eq!(
            t.resources_message(0.0025, 0),
            "cron.backup.cpu:2|ms\ncron.backup.max_rss:0|g\n"
        );
        assert_eq!(
            t.resources_message(0.0035, 1),
            "cron.backup.cpu:4|ms\ncron.backup.max_rss:1|g\n"
        );
    }

    #[test]
    fn prefix_cannot_inject_samples() {
        assert_eq!(target("a:1|g\nb").start_message(), "a1gb.start:1|g\n");
    }

    #[test]
    fn out_of_range_port_disables_the_target() {
        let cfg = Statsd {
            prefix: "p".into(),
            host: "h".into(),
            port: 70000,
        };
        assert!(StatsdTarget::from_config(&cfg).is_none());
    }

    #[test]
    fn datagrams_arrive_at_a_real_socket() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        receiver
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let port = receiver.local_addr().unwrap().port();
        let t = StatsdTarget::from_config(&Statsd {
            prefix: "x".into(),
            host: "127.0.0.1".into(),
            port: i64::from(port),
        })
        .unwrap();
        t.send(&t.start_message());
        let mut buf = [0u8; 512];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"x.start:1|g\n");
        t.send(&t.stop_message(true, 42));
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(
            &buf[..n],
            b"x.stop:1|g\nx.success:1|g\nx.duration:42|ms\n",
            "one datagram, no sample-rate suffix on the timer"
        );
    }
}
