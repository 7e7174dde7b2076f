//! The daemon's own log lines, shaped like the original's Python logging:
//! by default `LEVEL:logger:message` on stderr (what `logging.basicConfig`
//! prints), under the original's logger names (`cronstable`,
//! `cronstable.config`, `statsd`, `prometheus`), and reshaped by a
//! `logging:` section's formatters, handlers and loggers the way
//! `logging.config.dictConfig` would.
//!
//! Code logs through `tracing` with Rust targets (`cronstable::scheduler`);
//! one subscriber layer maps each target to its logger name and runs the
//! Python logging rules: effective level up the dotted hierarchy, each
//! handler's own level, `propagate`, and `disable_existing_loggers`.

pub(crate) mod dictconfig;
pub(crate) mod pyformat;

pub use dictconfig::LoggingConfig;
use dictconfig::{HandlerPlan, Plan, Sink};
use pyformat::{PercentFormat, Record};
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Line format of the default handler (the one on stderr that runs until
/// a `logging:` section replaces the root logger's handlers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `LEVEL:logger:message`, the original's default (no timestamp).
    Basic,
    /// `<UTC timestamp> LEVEL target: message`, for those who want times.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Normalizes a level name as the original accepts it (any case;
/// CRITICAL/FATAL/ERROR/WARN/WARNING/INFO/DEBUG/NOTSET) to a tracing level.
pub fn parse_level(name: &str) -> Option<tracing::Level> {
    level_number(name).map(tracing_level)
}

/// Python's numeric level of a level name (any case), or None.
pub fn level_number(name: &str) -> Option<i64> {
    match name.to_ascii_uppercase().as_str() {
        "CRITICAL" | "FATAL" => Some(50),
        "ERROR" => Some(40),
        "WARN" | "WARNING" => Some(30),
        "INFO" => Some(20),
        "DEBUG" => Some(10),
        "NOTSET" => Some(0),
        _ => None,
    }
}

fn tracing_level(number: i64) -> tracing::Level {
    match number {
        n if n >= 40 => tracing::Level::ERROR,
        n if n >= 30 => tracing::Level::WARN,
        n if n >= 20 => tracing::Level::INFO,
        n if n >= 10 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    }
}

fn python_level(level: &tracing::Level) -> (i64, &'static str) {
    match *level {
        tracing::Level::ERROR => (40, "ERROR"),
        tracing::Level::WARN => (30, "WARNING"),
        tracing::Level::INFO => (20, "INFO"),
        tracing::Level::DEBUG => (10, "DEBUG"),
        // Python has no name for a level below DEBUG; it prints this.
        tracing::Level::TRACE => (5, "Level 5"),
    }
}

/// The level the `logging:` section asks for on the root logger, if any.
pub fn root_level(config: &LoggingConfig) -> Option<tracing::Level> {
    let root = config.root.as_ref()?;
    dictconfig::level_number(root.get("level")?).map(tracing_level)
}

/// The original's logger name for a tracing target. The original logs
/// almost everything through `cronstable`; configuration diagnostics come
/// from `cronstable.config`, the metric writers from `statsd` and
/// `prometheus`. Other crates keep their target, dotted.
pub fn logger_name(target: &str) -> String {
    match target {
        "cronstable::config" => "cronstable.config".into(),
        "cronstable::statsd" | "cronstable::metrics::statsd" => "statsd".into(),
        "cronstable::prometheus" | "cronstable::metrics::prometheus" => "prometheus".into(),
        t if t == "cronstable" || t.starts_with("cronstable::") => "cronstable".into(),
        t => t.replace("::", "."),
    }
}

/// A `logging:` section that cannot work. The text names the key and what
/// is wrong with it; the config loader shows it as the load error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SectionError(String);

/// Checks a `logging:` section at load time: Ok with warnings for parts
/// left out, Err naming the key that cannot work.
pub fn check_section(config: &LoggingConfig) -> Result<Vec<String>, SectionError> {
    dictconfig::plan(config)
        .map(|(_, warnings)| warnings)
        .map_err(SectionError)
}

enum Formatting {
    Percent(PercentFormat),
    Text,
    Json,
}

enum Output {
    Stdout,
    Stderr,
    File(Mutex<std::fs::File>),
    Null,
}

struct Handler {
    level: i64,
    formatting: Formatting,
    output: Output,
}

#[derive(Clone)]
struct Logger {
    level: Option<i64>,
    handlers: Vec<Arc<Handler>>,
    propagate: bool,
}

/// The crates under the Kubernetes client and their floor level in the
/// basic setup. At `-l DEBUG` the transport would log every connection and
/// request, so it stays at INFO; the Kubernetes client logs every failed
/// request as an error, which during an outage would repeat at each retry,
/// while cronstable already says once that the API is unreachable, so it
/// only speaks at CRITICAL. A `logging:` section can name any of them to
/// change that.
const TRANSPORT_LOGGERS: [(&str, i64); 7] = [
    ("hyper", INFO_LEVELNO),
    ("hyper_util", INFO_LEVELNO),
    ("h2", INFO_LEVELNO),
    ("tower", INFO_LEVELNO),
    ("rustls", INFO_LEVELNO),
    ("kube_client", CRITICAL_LEVELNO),
    ("kube_runtime", CRITICAL_LEVELNO),
];

/// Python's INFO level number.
const INFO_LEVELNO: i64 = 20;

/// Python's CRITICAL level number.
const CRITICAL_LEVELNO: i64 = 50;

/// The logging tree in force: what `basicConfig` set up, or a section.
#[derive(Clone)]
struct Setup {
    root: Logger,
    loggers: HashMap<String, Logger>,
    disable_unlisted: bool,
}

impl Setup {
    fn basic(level: i64, format: LogFormat) -> Setup {
        let formatting = match format {
            LogFormat::Basic => Formatting::Percent(
                // A constant the parser's own tests cover.
                PercentFormat::parse(PercentFormat::BASIC, None)
                    .unwrap_or_else(|e| unreachable!("the basic format parses: {e}")),
            ),
            LogFormat::Text => Formatting::Text,
            LogFormat::Json => Formatting::Json,
        };
        Setup {
            root: Logger {
                level: Some(level),
                handlers: vec![Arc::new(Handler {
                    level: 0,
                    formatting,
                    output: Output::Stderr,
                })],
                propagate: false,
            },
            loggers: TRANSPORT_LOGGERS
                .iter()
                .map(|(name, floor)| {
                    let quiet = Logger {
                        level: Some(level.max(*floor)),
                        handlers: Vec::new(),
                        propagate: true,
                    };
                    ((*name).to_owned(), quiet)
                })
                .collect(),
            disable_unlisted: false,
        }
    }

    /// This setup changed by a section's plan, as dictConfig would.
    fn with_plan(&self, plan: &Plan) -> Result<Setup, String> {
        let mut next = self.clone();
        if plan.incremental {
            // Only levels and propagate flags change.
            if let Some(root) = &plan.root {
                next.root.level = root.level.or(next.root.level);
            }
            for (name, settings) in &plan.loggers {
                let logger = next.loggers.entry(name.clone()).or_insert(Logger {
                    level: None,
                    handlers: Vec::new(),
                    propagate: true,
                });
                logger.level = settings.level.or(logger.level);
                logger.propagate = settings.propagate;
            }
            return Ok(next);
        }
        let mut handlers: HashMap<&str, Arc<Handler>> = HashMap::new();
        for handler in &plan.handlers {
            handlers.insert(&handler.id, Arc::new(open(handler)?));
        }
        let pick = |ids: &[String]| -> Vec<Arc<Handler>> {
            ids.iter()
                .filter_map(|id| handlers.get(id.as_str()).cloned())
                .collect()
        };
        if let Some(root) = &plan.root {
            if let Some(level) = root.level {
                next.root.level = Some(level);
            }
            next.root.handlers = pick(&root.handlers);
        }
        next.loggers = plan
            .loggers
            .iter()
            .map(|(name, settings)| {
                (
                    name.clone(),
                    Logger {
                        level: settings.level,
                        handlers: pick(&settings.handlers),
                        propagate: settings.propagate,
                    },
                )
            })
            .collect();
        next.disable_unlisted = plan.disable_existing;
        Ok(next)
    }

    /// The logger and its configured ancestors, nearest first, then root.
    fn chain<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Logger> + 'a {
        let mut current = Some(name);
        std::iter::from_fn(move || {
            while let Some(name) = current {
                current = name.rsplit_once('.').map(|(parent, _)| parent);
                if let Some(logger) = self.loggers.get(name) {
                    return Some(logger);
                }
            }
            None
        })
        .chain(std::iter::once(&self.root))
    }

    fn disabled(&self, name: &str) -> bool {
        self.disable_unlisted
            && !self
                .loggers
                .keys()
                .any(|listed| name == listed || name.starts_with(&format!("{listed}.")))
    }

    fn effective_level(&self, name: &str) -> i64 {
        self.chain(name)
            .find_map(|l| l.level.filter(|level| *level > 0))
            .unwrap_or(0)
    }

    fn enabled(&self, name: &str, levelno: i64) -> bool {
        !self.disabled(name) && levelno >= self.effective_level(name)
    }

    /// The most verbose tracing level any logger lets through.
    fn max_level(&self) -> tracing::level_filters::LevelFilter {
        let lowest = self
            .loggers
            .values()
            .chain(std::iter::once(&self.root))
            .map(|l| l.level.unwrap_or(0))
            .min()
            .unwrap_or(0);
        tracing::level_filters::LevelFilter::from_level(tracing_level(lowest))
    }
}

fn open(plan: &HandlerPlan) -> Result<Handler, String> {
    let output = match &plan.sink {
        Sink::Stdout => Output::Stdout,
        Sink::Stderr => Output::Stderr,
        Sink::Null => Output::Null,
        Sink::File { path, truncate } => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(!truncate)
                .write(true)
                .truncate(*truncate)
                .open(path)
                .map_err(|e| {
                    format!(
                        "logging.handlers.{}: cannot open {}: {e}",
                        plan.id,
                        path.display()
                    )
                })?;
            Output::File(Mutex::new(file))
        }
    };
    Ok(Handler {
        level: plan.level,
        formatting: Formatting::Percent(plan.format.clone()),
        output,
    })
}

struct Shared {
    setup: RwLock<Arc<Setup>>,
    /// The section in force, so an unchanged one is not re-applied (and
    /// a file handler not reopened) on every reload.
    applied: Mutex<Option<LoggingConfig>>,
    started: Instant,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn current() -> Option<Arc<Setup>> {
    let shared = SHARED.get()?;
    let setup = shared.setup.read().ok()?;
    Some(Arc::clone(&setup))
}

/// Installs the global subscriber: the command line's level on the root
/// logger and one stderr handler in `format`, as `basicConfig` does.
pub fn init(level: tracing::Level, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let (levelno, _) = python_level(&level);
    let shared = Shared {
        setup: RwLock::new(Arc::new(Setup::basic(levelno, format))),
        applied: Mutex::new(None),
        started: Instant::now(),
    };
    // A second init (tests) keeps the first subscriber; nothing to report.
    if SHARED.set(shared).is_ok() {
        let _ = tracing_subscriber::registry()
            .with(PythonLogging)
            .try_init();
    }
}

/// Applies a `logging:` section over the running setup, unless it is the
/// one already in force. On failure the running setup stays and the
/// section is not marked applied, so a fixed section is retried on the
/// next reload (the original's rule).
fn configure(section: Option<&LoggingConfig>) -> Result<(), String> {
    let (Some(section), Some(shared)) = (section, SHARED.get()) else {
        return Ok(());
    };
    let mut applied = shared.applied.lock().map_err(|e| e.to_string())?;
    if applied.as_ref() == Some(section) {
        return Ok(());
    }
    let (plan, _) = dictconfig::plan(section)?;
    let base = current().ok_or("logging is not initialized")?;
    let next = base.with_plan(&plan)?;
    if let Ok(mut setup) = shared.setup.write() {
        *setup = Arc::new(next);
    }
    *applied = Some(section.clone());
    drop(applied);
    // The global max level may have moved; tracing recomputes it here.
    tracing::callsite::rebuild_interest_cache();
    Ok(())
}

/// Applies a `logging:` section (or the defaults when there is none),
/// logging a failure as the original does and carrying on with the
/// logging already in force.
pub fn apply_section(section: Option<&LoggingConfig>) {
    if let Err(err) = configure(section) {
        tracing::error!(
            target: "cronstable",
            "Error while configuring logging: {err}"
        );
    }
}

/// The subscriber layer running Python's logging rules.
struct PythonLogging;

/// Collects an event's message and its other fields.
#[derive(Default)]
struct Fields {
    message: String,
    extra: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.extra.push((field.name().to_owned(), value.to_owned()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.extra
                .push((field.name().to_owned(), format!("{value:?}")));
        }
    }
}

thread_local! {
    static THREAD: (u64, String) = {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = match std::thread::current().name() {
            // Python calls the main thread MainThread.
            Some("main") => "MainThread".to_owned(),
            Some(name) => name.to_owned(),
            None => format!("Thread-{id}"),
        };
        (id, name)
    };
}

impl<S: Subscriber> Layer<S> for PythonLogging {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // Whether a callsite logs depends on the section in force, which
        // can change on reload, so ask every time.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        let Some(setup) = current() else {
            return false;
        };
        let (levelno, _) = python_level(metadata.level());
        setup.enabled(&logger_name(metadata.target()), levelno)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        current().map(|s| s.max_level())
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some(setup) = current() else {
            return;
        };
        let metadata = event.metadata();
        let name = logger_name(metadata.target());
        let (levelno, levelname) = python_level(metadata.level());
        if !setup.enabled(&name, levelno) {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut message = fields.message.clone();
        for (key, value) in &fields.extra {
            message.push_str(&format!(" {key}={value}"));
        }
        let now = chrono::Local::now();
        let since_start = SHARED
            .get()
            .map_or(0.0, |s| s.started.elapsed().as_secs_f64());
        THREAD.with(|(thread, thread_name)| {
            let record = Record {
                time: now,
                since_start,
                levelname,
                levelno,
                name: &name,
                message: &message,
                pathname: metadata.file().unwrap_or("<unknown>"),
                lineno: metadata.line().unwrap_or(0),
                function: metadata.module_path().unwrap_or("<unknown>"),
                process: std::process::id(),
                thread: *thread,
                thread_name,
            };
            let mut handled = false;
            for logger in setup.chain(&name) {
                for handler in &logger.handlers {
                    handled = true;
                    if levelno >= handler.level {
                        emit(handler, &record, metadata, &fields);
                    }
                }
                if !logger.propagate {
                    break;
                }
            }
            if !handled && levelno >= 30 {
                // Python's last resort when no handler exists anywhere:
                // warnings and worse, message only, on stderr.
                write_line(&Output::Stderr, &message);
            }
        });
    }
}

fn emit(handler: &Handler, record: &Record, metadata: &Metadata, fields: &Fields) {
    let line = match &handler.formatting {
        Formatting::Percent(format) => format.render(record),
        Formatting::Text => {
            let mut line = format!(
                "{} {:>5} {}: {}",
                record.time.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6fZ"),
                metadata.level().as_str(),
                metadata.target(),
                fields.message
            );
            for (key, value) in &fields.extra {
                line.push_str(&format!(" {key}={value}"));
            }
            line
        }
        Formatting::Json => {
            let mut object = serde_json::Map::new();
            object.insert("message".into(), fields.message.clone().into());
            for (key, value) in &fields.extra {
                object.insert(key.clone(), value.clone().into());
            }
            let quote = |s: &str| serde_json::Value::from(s).to_string();
            format!(
                "{{\"timestamp\":{},\"level\":{},\"fields\":{},\"target\":{}}}",
                quote(
                    &record
                        .time
                        .naive_utc()
                        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                        .to_string()
                ),
                quote(metadata.level().as_str()),
                serde_json::Value::Object(object),
                quote(metadata.target())
            )
        }
    };
    write_line(&handler.output, &line);
}

fn write_line(output: &Output, line: &str) {
    // A log line that cannot be written has nowhere to be reported.
    match output {
        Output::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        Output::Stderr => {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        Output::File(file) => {
            if let Ok(mut file) = file.lock() {
                let _ = writeln!(file, "{line}");
            }
        }
        Output::Null => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_as_the_original_accepts_them() {
        assert_eq!(parse_level("warn"), Some(tracing::Level::WARN));
        assert_eq!(parse_level("Critical"), Some(tracing::Level::ERROR));
        assert_eq!(parse_level("NOTSET"), Some(tracing::Level::TRACE));
        assert_eq!(parse_level("10"), None);
    }

    #[test]
    fn targets_map_to_the_originals_logger_names() {
        assert_eq!(logger_name("cronstable"), "cronstable");
        assert_eq!(logger_name("cronstable::scheduler"), "cronstable");
        assert_eq!(logger_name("cronstable::job"), "cronstable");
        assert_eq!(logger_name("cronstable::web"), "cronstable");
        assert_eq!(logger_name("cronstable::report"), "cronstable");
        assert_eq!(logger_name("cronstable::config"), "cronstable.config");
        assert_eq!(logger_name("cronstable::statsd"), "statsd");
        assert_eq!(logger_name("cronstable::prometheus"), "prometheus");
        assert_eq!(logger_name("hyper::proto::h1"), "hyper.proto.h1");
    }

    fn setup(yaml: &str) -> Setup {
        let config: LoggingConfig = serde_yaml::from_str(yaml).expect("section");
        let (plan, _) = dictconfig::plan(&config).expect("plan");
        Setup::basic(20, LogFormat::Basic)
            .with_plan(&plan)
            .expect("setup")
    }

    #[test]
    fn levels_follow_the_dotted_hierarchy() {
        let s = setup(
            "version: 1\ndisable_existing_loggers: false\nroot:\n  level: WARNING\nloggers:\n  \
             cronstable.config:\n    level: DEBUG\n",
        );
        assert!(s.enabled("cronstable.config", 10));
        assert!(!s.enabled("cronstable", 20));
        assert!(s.enabled("cronstable", 30));
        // No root key: the command line's level stays.
        let s = setup("version: 1\ndisable_existing_loggers: false\n");
        assert!(s.enabled("cronstable", 20));
        assert!(!s.enabled("cronstable", 10));
    }

    #[test]
    fn unlisted_loggers_go_silent_by_default() {
        let s = setup("version: 1\nroot:\n  level: DEBUG\n");
        assert!(!s.enabled("cronstable", 40));
        let s = setup("version: 1\nloggers:\n  cronstable:\n    level: INFO\n");
        assert!(s.enabled("cronstable.config", 20));
        assert!(!s.enabled("statsd", 40));
    }

    #[test]
    fn propagate_false_stops_at_the_logger() {
        let s = setup(
            "version: 1\ndisable_existing_loggers: false\nhandlers:\n  quiet:\n    class: \
             logging.NullHandler\nloggers:\n  cronstable:\n    handlers: [quiet]\n    propagate: \
             false\n",
        );
        let chain: Vec<_> = s.chain("cronstable.config").collect();
        assert_eq!(chain.len(), 2, "cronstable, then root");
        assert!(!chain[0].propagate);
    }
}
