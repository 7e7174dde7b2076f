//! Assembles one config from a file, a directory, or named in-memory
//! sources: parsing, `${VAR}` expansion, includes, defaults layering, job
//! resolution and the whole-config rules.

use super::crontab;
use super::defaults::builtin_job_defaults;
use super::error::{ConfigError, Location};
use super::interpolate;
use super::job::JobConfig;
use super::locate::LineIndex;
use super::merge::Merge;
use super::model::{ConfigDocument, JobSpec};
use super::sections::{Located, Sections};
use super::sections_check;
use super::validate::{self, Context};
use crate::platform;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod adopt;
mod checks;
mod files;

use adopt::Clash;
use checks::{
    check_duplicate_names, check_job_count, crontab_job_spec, crontab_options, is_blank_yaml,
    located,
};
use files::{io_error, normalize, Files};

/// What kind of text a source holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A YAML config document.
    Yaml,
    /// A classic crontab.
    Crontab,
}

impl SourceKind {
    /// Classifies a file by name: `*.yaml`/`*.yml` (any case), crontabs
    /// (`*.crontab`, `*.cron`, `crontab`), or `None` for anything else.
    pub fn of_path(path: &Path) -> Option<SourceKind> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if crontab::is_crontab_path(&path.to_string_lossy()) {
            Some(SourceKind::Crontab)
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            Some(SourceKind::Yaml)
        } else {
            None
        }
    }
}

/// One named piece of config text: a file, a ConfigMap key, a CRD spec.
#[derive(Debug, Clone)]
pub struct Source {
    /// Name used in errors and job origins (a path, or e.g. `configmap/x:key`).
    pub name: String,
    /// The text.
    pub text: String,
    /// YAML or crontab.
    pub kind: SourceKind,
    /// Directory `include:` entries resolve against; `None` refuses includes
    /// (in-memory sources have no directory).
    pub include_dir: Option<PathBuf>,
}

/// A loaded, validated config.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    /// Every job, in load order.
    pub jobs: Vec<JobConfig>,
    /// Everything else.
    pub sections: Sections,
    /// Problems worth a log line that did not stop the load (WARN).
    pub warnings: Vec<String>,
    /// Facts worth an INFO line (schedule lint notes).
    pub notes: Vec<String>,
    /// Every file read (for change detection on reload).
    pub files: Vec<PathBuf>,
}

/// The result of one source (and its includes).
struct Parsed {
    jobs: Vec<JobConfig>,
    /// This source's defaults over its includes' defaults (no built-ins):
    /// what an including file layers under its own inline jobs.
    defaults: JobSpec,
    sections: Sections,
}

/// Config texts by path, standing in for the disk when includes are
/// resolved in memory ([`load_sources_with_files`]): tests and fuzzing
/// exercise the include rules without writing files. Keys are compared
/// after lexical normalization (`a/./b.yaml` and `a/x/../b.yaml` name
/// `a/b.yaml`), as the disk path compares canonical paths.
pub type FileMap = BTreeMap<PathBuf, String>;

/// Looks up an environment variable of the daemon.
type EnvLookup = Box<dyn Fn(&str) -> Option<String>>;

/// Shared state of one load.
struct Loader<'a> {
    source_files: Files<'a>,
    builtins: JobSpec,
    cwd: PathBuf,
    is_root: bool,
    env: EnvLookup,
    linter: std::cell::RefCell<crate::cronexpr::Linter>,
    warnings: validate::Warnings,
    files: Vec<PathBuf>,
    /// Included files read so far in this load (see MAX_INCLUDE_READS).
    include_reads: usize,
    /// Bytes of config text read from files so far (see MAX_LOAD_BYTES).
    bytes_read: usize,
}

/// Loads `path`: a YAML file, a crontab, or a directory of them.
pub fn load_path(path: &Path) -> Result<LoadedConfig, ConfigError> {
    load_path_and_sources(Some(path), &[])
}

/// Loads named in-memory sources as if they were the files of a directory,
/// in the order given.
pub fn load_sources(sources: &[Source]) -> Result<LoadedConfig, ConfigError> {
    load_path_and_sources(None, sources)
}

/// Loads in-memory sources like [`load_sources`], but resolves their
/// `include:` entries in `files` instead of on the disk, under the same
/// rules: a cycle, a missing include or a text over the size cap is an
/// error naming the file. A source takes includes only when its
/// `include_dir` is set; entries are joined to it (and an included file's
/// own entries to that file's directory) and looked up in `files`.
pub fn load_sources_with_files(
    sources: &[Source],
    files: &FileMap,
) -> Result<LoadedConfig, ConfigError> {
    let memory = files
        .iter()
        .map(|(path, text)| (normalize(path), text.as_str()))
        .collect();
    let mut loader = Loader::new(Files::Memory(memory));
    let (jobs, sections) = loader.load_sources_into(Vec::new(), Sections::default(), sources)?;
    loader.finish(jobs, sections)
}

/// Loads a file or directory (when given) and then in-memory sources as
/// one config: the sources join the files as if they were more files of
/// the directory (a ConfigMap's keys beside `-c`). Cross-source rules
/// (one `web` section, unique job names, ...) hold across both.
pub fn load_path_and_sources(
    path: Option<&Path>,
    sources: &[Source],
) -> Result<LoadedConfig, ConfigError> {
    let mut loader = Loader::new(Files::Disk);
    let mut jobs = Vec::new();
    let mut sections = Sections::default();
    if let Some(path) = path {
        let meta = std::fs::metadata(path).map_err(|e| io_error(path, &e))?;
        if meta.is_dir() {
            let (dir_jobs, dir_sections) = loader.load_directory(path)?;
            jobs = dir_jobs;
            sections = dir_sections;
        } else {
            let parsed = loader.load_file(path, &mut Vec::new())?;
            jobs = parsed.jobs;
            sections = parsed.sections;
        }
    }
    let (jobs, sections) = loader.load_sources_into(jobs, sections, sources)?;
    loader.finish(jobs, sections)
}

/// Loads sources that hold only jobs (and their `defaults`) on their own,
/// and checks them against the `sections` of the config they are to join
/// (a CronJobSet beside the ConfigMap's `state` or `notify` section).
/// Sections written in `sources` are refused: they belong to the config
/// the jobs join. Names are checked unique among these jobs only; the
/// caller checks them against the rest.
pub fn load_jobs_against(
    sources: &[Source],
    sections: &Sections,
) -> Result<LoadedConfig, ConfigError> {
    let mut loader = Loader::new(Files::Disk);
    let mut jobs = Vec::new();
    let mut errors = Vec::new();
    for source in sources {
        match loader.parse_source(source, &mut Vec::new()) {
            Ok(parsed) => {
                if let Some(key) = parsed.sections.first_key() {
                    errors.push(ConfigError::config(
                        Location::source(source.name.clone()),
                        format!("'{key}' cannot be configured here; only jobs and defaults can"),
                    ));
                }
                jobs.extend(parsed.jobs);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(one_or_many(errors));
    }
    check_job_count(&jobs, super::MAX_JOBS)?;
    check_duplicate_names(&jobs)?;
    sections_check::check_cross_sections(&jobs, sections, &mut loader.warnings.warnings)?;
    Ok(LoadedConfig {
        jobs,
        sections: Sections::default(),
        warnings: loader.warnings.warnings,
        notes: loader.warnings.notes,
        files: loader.files,
    })
}

fn one_or_many(mut errors: Vec<ConfigError>) -> ConfigError {
    if errors.len() == 1 {
        errors.remove(0)
    } else {
        ConfigError::Many(errors)
    }
}

impl<'a> Loader<'a> {
    fn new(source_files: Files<'a>) -> Self {
        Loader {
            source_files,
            builtins: builtin_job_defaults(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            is_root: platform::is_root(),
            env: Box::new(|name| std::env::var(name).ok()),
            linter: std::cell::RefCell::new(crate::cronexpr::Linter::new(chrono::Utc::now())),
            warnings: validate::Warnings::default(),
            files: Vec::new(),
            include_reads: 0,
            bytes_read: 0,
        }
    }

    /// Adds in-memory sources to what a load holds so far, as more files
    /// of one directory.
    fn load_sources_into(
        &mut self,
        mut jobs: Vec<JobConfig>,
        mut sections: Sections,
        sources: &[Source],
    ) -> Result<(Vec<JobConfig>, Sections), ConfigError> {
        let mut errors = Vec::new();
        for source in sources {
            match self.parse_source(source, &mut Vec::new()) {
                Ok(parsed) => {
                    jobs.extend(parsed.jobs);
                    sections.adopt(parsed.sections, Clash::Directory)?;
                }
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(one_or_many(errors));
        }
        Ok((jobs, sections))
    }

    fn load_directory(&mut self, dir: &Path) -> Result<(Vec<JobConfig>, Sections), ConfigError> {
        let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, &e))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                let hidden = name.is_some_and(|n| n.starts_with('_') || n.starts_with('.'));
                !hidden && SourceKind::of_path(p).is_some()
            })
            .collect();
        paths.sort();
        let mut jobs = Vec::new();
        let mut sections = Sections::default();
        let mut errors = Vec::new();
        for path in paths {
            match self.load_file(&path, &mut Vec::new()) {
                Ok(parsed) => {
                    jobs.extend(parsed.jobs);
                    sections.adopt(parsed.sections, Clash::Directory)?;
                }
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(one_or_many(errors));
        }
        Ok((jobs, sections))
    }

    /// Reads and parses one file; `stack` holds the files being included
    /// above it, for cycle detection.
    fn load_file(&mut self, path: &Path, stack: &mut Vec<PathBuf>) -> Result<Parsed, ConfigError> {
        let text = self.source_files.read(path)?;
        self.bytes_read = self.bytes_read.saturating_add(text.len());
        if self.bytes_read > super::MAX_LOAD_BYTES {
            return Err(ConfigError::Io {
                path: path.display().to_string(),
                reason: format!(
                    "this load has read more than {} MiB of config text with it, the limit \
                     for one load",
                    super::MAX_LOAD_BYTES >> 20
                ),
            });
        }
        self.files.push(path.to_path_buf());
        // A file named neither *.yaml nor like a crontab is sniffed, as the
        // original does for `-c some-file`.
        let kind = SourceKind::of_path(path).unwrap_or_else(|| {
            if crontab::looks_like_crontab(&text, &crontab_options()) {
                SourceKind::Crontab
            } else {
                SourceKind::Yaml
            }
        });
        let source = Source {
            name: path.display().to_string(),
            text,
            kind,
            include_dir: Some(path.parent().unwrap_or(Path::new(".")).to_path_buf()),
        };
        stack.push(self.source_files.identity(path));
        let result = self.parse_source(&source, stack);
        stack.pop();
        result
    }

    fn parse_source(
        &mut self,
        source: &Source,
        stack: &mut Vec<PathBuf>,
    ) -> Result<Parsed, ConfigError> {
        match source.kind {
            SourceKind::Crontab => self.parse_crontab(source),
            SourceKind::Yaml => self.parse_yaml(source, stack),
        }
    }

    fn parse_crontab(&mut self, source: &Source) -> Result<Parsed, ConfigError> {
        let parsed = crontab::parse_crontab_with(&source.name, &source.text, &crontab_options())?;
        self.warnings
            .warnings
            .extend(parsed.warnings.iter().map(ToString::to_string));
        let mut jobs = Vec::with_capacity(parsed.jobs.len());
        for entry in parsed.jobs {
            let line = entry.line;
            let name = entry.name.clone();
            let mut spec = Box::new(crontab_job_spec(entry));
            spec.as_mut().merge_from(&self.builtins);
            let origin = Location::line(source.name.clone(), Some(line));
            jobs.push(self.resolve(spec, origin, &source.name, &name, None)?);
        }
        Ok(Parsed {
            jobs,
            defaults: JobSpec::default(),
            sections: Sections::default(),
        })
    }

    fn parse_yaml(
        &mut self,
        source: &Source,
        stack: &mut Vec<PathBuf>,
    ) -> Result<Parsed, ConfigError> {
        let doc = self.parse_document(source)?;
        let mut lines = LineIndex::new(&source.text);
        let name = source.name.clone();

        if let Some(defaults) = &doc.defaults {
            for (key, set) in [
                ("name", defaults.name.is_some()),
                ("command", defaults.command.is_some()),
                ("schedule", defaults.schedule.is_some()),
            ] {
                if set {
                    return Err(ConfigError::Job {
                        location: Location::line(name.clone(), lines.key_line_anywhere(key)),
                        job: "defaults".into(),
                        key: key.into(),
                        message: format!("'{key}' belongs on a job, not in defaults"),
                    });
                }
            }
            // As the original's schema: a `verify` map always names its
            // command, in defaults too (a job may then replace it).
            if defaults
                .verify
                .as_ref()
                .is_some_and(|v| v.command.is_none())
            {
                return Err(ConfigError::Job {
                    location: Location::line(name.clone(), lines.key_line_anywhere("verify")),
                    job: "defaults".into(),
                    key: "verify.command".into(),
                    message: "required key 'command' not found in verify".into(),
                });
            }
        }

        let mut sections = Sections {
            web: located(doc.web, &name),
            logging: located(doc.logging, &name),
            state: located(doc.state, &name),
            cluster: located(doc.cluster, &name),
            mcp: located(doc.mcp, &name),
            notify: located(doc.notify, &name),
            push: located(doc.push, &name),
            dags: doc
                .dags
                .unwrap_or_default()
                .into_iter()
                .map(|value| Located {
                    value,
                    source: name.clone(),
                })
                .collect(),
            pools: Vec::new(),
        };
        for (pool, spec) in doc.pools.map(|p| p.0).unwrap_or_default() {
            let conf = spec
                .resolve(&pool)
                .map_err(|m| ConfigError::config(Location::source(name.clone()), m))?;
            sections.adopt_pool(Located {
                value: (pool, conf),
                source: name.clone(),
            })?;
        }
        if let Some(web) = &sections.web {
            sections_check::check_web(&web.value).map_err(|m| {
                ConfigError::config(Location::source(name.clone()), format!("web: {m}"))
            })?;
        }

        let mut jobs = Vec::new();
        let mut included_defaults = JobSpec::default();
        for include in doc.include.unwrap_or_default() {
            let Some(dir) = &source.include_dir else {
                return Err(ConfigError::config(
                    Location::source(name.clone()),
                    format!("include '{include}': this source has no directory to include from"),
                ));
            };
            let path = dir.join(&include);
            if stack.contains(&self.source_files.identity(&path)) {
                return Err(ConfigError::config(
                    Location::source(name.clone()),
                    format!("include cycle: {} includes itself", path.display()),
                ));
            }
            if stack.len() >= super::MAX_INCLUDE_DEPTH {
                return Err(ConfigError::config(
                    Location::source(name.clone()),
                    format!(
                        "include '{include}': includes nest more than {} deep",
                        super::MAX_INCLUDE_DEPTH
                    ),
                ));
            }
            if self.include_reads >= super::MAX_INCLUDE_READS {
                return Err(ConfigError::config(
                    Location::source(name.clone()),
                    format!(
                        "include '{include}': this load already read {} included files (a \
                         file included along several branches is read each time); that is \
                         the limit",
                        super::MAX_INCLUDE_READS
                    ),
                ));
            }
            self.include_reads += 1;
            let parsed = self.load_file(&path, stack)?;
            jobs.extend(parsed.jobs);
            sections.adopt(parsed.sections, Clash::Include)?;
            let mut layered = parsed.defaults;
            layered.merge_from(&included_defaults);
            included_defaults = layered;
        }

        let mut file_defaults = doc.defaults.unwrap_or_default();
        file_defaults.merge_from(&included_defaults);
        let mut base = file_defaults.clone();
        base.merge_from(&self.builtins);

        let doc_jobs = doc.jobs.unwrap_or_default();
        // Sized once: a JobConfig is about 670 bytes, and growing the list
        // by doubling copied it over and over and left a quarter to half
        // of the last buffer unused.
        jobs.reserve_exact(doc_jobs.len());
        for (index, mut spec) in doc_jobs.into_iter().enumerate() {
            let job_name = spec
                .name
                .clone()
                .unwrap_or_else(|| format!("jobs[{index}]"));
            let line = spec.name.as_deref().and_then(|n| lines.next_job_line(n));
            spec.as_mut().merge_from(&base);
            let origin = Location::line(name.clone(), line);
            jobs.push(self.resolve(spec, origin, &name, &job_name, Some(&lines))?);
        }
        Ok(Parsed {
            jobs,
            defaults: file_defaults,
            sections,
        })
    }

    /// Parses the text against the schema, then expands `${VAR}` references.
    fn parse_document(&self, source: &Source) -> Result<ConfigDocument, ConfigError> {
        if is_blank_yaml(&source.text) {
            return Ok(ConfigDocument::default());
        }
        let doc: ConfigDocument = serde_yaml::from_str(&source.text)
            .map_err(|e| ConfigError::from_yaml(&source.name, &e))?;
        if !source.text.contains('$') {
            return Ok(doc);
        }
        let mut value: serde_yaml::Value = serde_yaml::from_str(&source.text)
            .map_err(|e| ConfigError::from_yaml(&source.name, &e))?;
        interpolate::expand_document(&mut value, &*self.env).map_err(|missing| {
            let place = if missing.path.is_empty() {
                "the config".to_owned()
            } else {
                missing.path.clone()
            };
            ConfigError::config(
                Location::source(source.name.clone()),
                format!(
                    "{place} uses ${{{var}}}, but {var} is not set in cronstable's environment; \
                     set it, or write ${{{var}:-fallback}} to give a fallback",
                    var = missing.variable
                ),
            )
        })?;
        serde_yaml::from_value(value).map_err(|e| ConfigError::from_yaml(&source.name, &e))
    }

    fn resolve(
        &mut self,
        spec: Box<JobSpec>,
        origin: Location,
        source: &str,
        job_name: &str,
        lines: Option<&LineIndex>,
    ) -> Result<JobConfig, ConfigError> {
        let ctx = Context {
            is_root: self.is_root,
            cwd: &self.cwd,
            linter: &self.linter,
        };
        let job_line = origin.line.map(|l| l as usize);
        // The origin moves into the job; an error copies the source name
        // from `source` then, rather than every job copying the origin.
        validate::resolve_job(spec, origin, &ctx, &mut self.warnings).map_err(|err| {
            let first_key = err.key.split('.').next().unwrap_or("");
            let key_line = match (lines, job_line) {
                (Some(lines), Some(line)) if !first_key.is_empty() => {
                    lines.key_line(line, first_key).or(Some(line))
                }
                _ => job_line,
            };
            ConfigError::Job {
                location: Location::line(source, key_line),
                job: job_name.to_owned(),
                key: err.key,
                message: err.message,
            }
        })
    }

    fn finish(
        mut self,
        jobs: Vec<JobConfig>,
        sections: Sections,
    ) -> Result<LoadedConfig, ConfigError> {
        check_job_count(&jobs, super::MAX_JOBS)?;
        check_duplicate_names(&jobs)?;
        sections_check::check_cross_sections(&jobs, &sections, &mut self.warnings.warnings)?;
        Ok(LoadedConfig {
            jobs,
            sections,
            warnings: self.warnings.warnings,
            notes: self.warnings.notes,
            files: self.files,
        })
    }
}

#[cfg(test)]
mod tests;
