//! Loader behavior: layering of defaults and includes, directory mode,
//! crontab lowering, interpolation and in-memory sources.

use super::*;
use crate::config::model::{Command, ConcurrencyPolicy};
use std::io::Write;

fn yaml(name: &str, text: &str) -> Source {
    Source {
        name: name.into(),
        text: text.into(),
        kind: SourceKind::Yaml,
        include_dir: None,
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn job<'a>(loaded: &'a LoadedConfig, name: &str) -> &'a JobConfig {
    loaded
        .jobs
        .iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

#[test]
fn built_in_defaults_fill_every_unset_option() {
    let loaded = load_sources(&[yaml(
        "m",
        "jobs:\n  - name: a\n    command: echo\n    schedule: '@daily'\n",
    )])
    .unwrap();
    let a = job(&loaded, "a");
    assert_eq!(a.shell, "/bin/sh");
    assert!(a.enabled && a.capture_stderr && !a.capture_stdout && a.schedule.utc);
    assert_eq!(a.save_limit, 4096);
    assert_eq!(a.max_line_length, 16 * 1024 * 1024);
    assert_eq!(a.kill_timeout, 30.0);
    assert_eq!(a.execution_timeout, None);
    assert_eq!(a.stream_prefix, "[{job_name} {stream_name}] ");
    assert_eq!(a.concurrency_policy, ConcurrencyPolicy::Allow);
    assert_eq!(a.retry.maximum_retries, 0);
    assert_eq!(a.retry.maximum_delay, 300.0);
    assert!(a.fails_when.nonzero_return && a.fails_when.produces_stderr);
    assert!(!a.fails_when.produces_stdout && !a.fails_when.always);
    assert_eq!(a.origin.source, "m");
    assert_eq!(a.origin.line, Some(2));
}

#[test]
fn job_wins_over_defaults_and_nested_blocks_merge() {
    let loaded = load_sources(&[yaml(
        "m",
        "defaults:\n  shell: /bin/bash\n  killTimeout: 5\n  failsWhen:\n    producesStdout: true\n    always: true\n  environment:\n    - key: FOO\n      value: foo\n    - key: BAR\n      value: bar\n  onSuccess:\n    report:\n      mail:\n        from: a@x.invalid\n        to: b@x.invalid\n      webhook:\n        headers:\n          X-A: '1'\njobs:\n  - name: a\n    command: env\n    schedule: '@daily'\n    shell: /bin/sh\n    failsWhen:\n      producesStdout: false\n    environment:\n      - key: FOO\n        value: xpto\n      - key: ZBR\n        value: blah\n    onSuccess:\n      report:\n        mail:\n          from: c@x.invalid\n          to: b@x.invalid\n          subject: custom\n        webhook:\n          headers:\n            X-B: '2'\n",
    )])
    .unwrap();
    let a = job(&loaded, "a");
    assert_eq!(a.shell, "/bin/sh");
    assert_eq!(a.kill_timeout, 5.0);
    assert!(!a.fails_when.produces_stdout, "job's failsWhen key wins");
    assert!(a.fails_when.always, "defaults' other failsWhen keys remain");
    assert_eq!(
        a.environment,
        vec![
            ("FOO".to_owned(), "xpto".to_owned()),
            ("BAR".to_owned(), "bar".to_owned()),
            ("ZBR".to_owned(), "blah".to_owned()),
        ]
    );
    let mail = a.on_success.mail.as_ref().unwrap();
    assert_eq!(mail.from.as_deref(), Some("c@x.invalid"));
    assert_eq!(mail.subject.as_deref(), Some("custom"));
    let headers = a
        .on_success
        .webhook
        .as_ref()
        .unwrap()
        .headers
        .as_ref()
        .unwrap();
    assert_eq!(headers.len(), 2, "header maps are unioned");
}

#[test]
fn lists_concatenate_except_fingerprint() {
    let loaded = load_sources(&[yaml(
        "m",
        "defaults:\n  stateAllowedScopes:\n    - shared\n  onFailure:\n    report:\n      sentry:\n        fingerprint:\n          - a\n          - b\njobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n    stateAllowedScopes:\n      - own\n    onFailure:\n      report:\n        sentry:\n          fingerprint:\n            - mine\n",
    )])
    .unwrap();
    let a = job(&loaded, "a");
    assert_eq!(
        a.spec.as_ref().unwrap().state_allowed_scopes.as_deref(),
        Some(&["shared".to_owned(), "own".to_owned()][..])
    );
    let fp = &a
        .on_failure
        .sentry
        .as_ref()
        .unwrap()
        .fingerprint
        .as_ref()
        .unwrap()
        .0;
    assert_eq!(fp, &vec!["mine".to_owned()]);
}

#[test]
fn null_working_directory_undoes_the_default() {
    let loaded = load_sources(&[yaml(
        "m",
        "defaults:\n  workingDirectory: /srv\njobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n  - name: b\n    command: x\n    schedule: '@daily'\n    workingDirectory:\n",
    )])
    .unwrap();
    assert_eq!(
        job(&loaded, "a").working_directory.as_deref(),
        Some(Path::new("/srv"))
    );
    assert_eq!(job(&loaded, "b").working_directory, None);
}

#[test]
fn lenient_scalars_read_like_the_original() {
    let loaded = load_sources(&[yaml(
        "m",
        "jobs:\n  - name: 123\n    command: [echo, 5]\n    schedule: '@daily'\n    captureStdout: yes\n    saveLimit: '10'\n    killTimeout: 1_0\n    environment:\n      - key: N\n        value: 3\n",
    )])
    .unwrap();
    let a = job(&loaded, "123");
    assert!(a.capture_stdout);
    assert_eq!(a.save_limit, 10);
    assert_eq!(a.kill_timeout, 10.0);
    assert_eq!(a.command, Command::Argv(vec!["echo".into(), "5".into()]));
    assert_eq!(a.environment, vec![("N".to_owned(), "3".to_owned())]);
}

#[test]
fn object_schedule_assembles_to_crontab_text() {
    let loaded = load_sources(&[yaml(
        "m",
        "jobs:\n  - name: a\n    command: x\n    schedule:\n      minute: 5\n      second: '*/10'\n  - name: b\n    command: x\n    schedule:\n      hour: 3\n      year: 2030\n",
    )])
    .unwrap();
    assert_eq!(job(&loaded, "a").schedule.text, "*/10 5 * * * * *");
    assert_eq!(job(&loaded, "b").schedule.text, "* 3 * * * 2030");
}

#[test]
fn in_memory_sources_cannot_include() {
    let err = load_sources(&[yaml("configmap/x:jobs.yaml", "include:\n  - other.yaml\n")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("configmap/x:jobs.yaml"), "{err}");
    assert!(err.contains("no directory to include from"), "{err}");
}

#[test]
fn in_memory_sources_are_assembled_like_a_directory() {
    let loaded = load_sources(&[
        yaml(
            "a",
            "jobs:\n  - name: one\n    command: x\n    schedule: '@daily'\n",
        ),
        Source {
            name: "tab".into(),
            text: "@hourly echo two\n".into(),
            kind: SourceKind::Crontab,
            include_dir: None,
        },
    ])
    .unwrap();
    let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, vec!["one", "tab:1"]);
}

#[test]
fn directory_defaults_stay_in_their_file_and_hidden_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "defaults:\n  shell: /bin/bash\njobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n",
    );
    write(
        dir.path(),
        "b.YML",
        "jobs:\n  - name: b\n    command: x\n    schedule: '@daily'\n",
    );
    write(dir.path(), "_frag.yaml", "jobs:\n  - name: hidden\n");
    write(dir.path(), ".dot.yaml", "not: [valid\n");
    write(dir.path(), "README.md", "# notes\n");
    write(
        dir.path(),
        "crontab",
        "SHELL=/bin/zsh\n*/5 * * * * echo c\n",
    );
    let loaded = load_path(dir.path()).unwrap();
    let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "crontab:2"]);
    assert_eq!(job(&loaded, "a").shell, "/bin/bash");
    assert_eq!(job(&loaded, "b").shell, "/bin/sh");
    let c = job(&loaded, "crontab:2");
    assert_eq!(c.shell, "/bin/zsh");
    assert_eq!(c.schedule.text, "*/5 * * * *");
    assert_eq!(c.origin.line, Some(2));
    assert_eq!(loaded.files.len(), 3);
}

#[test]
fn includes_share_defaults_downward_only() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "main.yaml",
        "include:\n  - inc/_common.yaml\ndefaults:\n  captureStdout: true\njobs:\n  - name: inline\n    command: x\n    schedule: '@daily'\n",
    );
    write(
        dir.path(),
        "inc/_common.yaml",
        "defaults:\n  killTimeout: 7\n  captureStdout: false\njobs:\n  - name: included\n    command: y\n    schedule: '@daily'\n",
    );
    let loaded = load_path(&dir.path().join("main.yaml")).unwrap();
    let inline = job(&loaded, "inline");
    assert_eq!(
        inline.kill_timeout, 7.0,
        "included defaults reach inline jobs"
    );
    assert!(
        inline.capture_stdout,
        "the file's own defaults win over included ones"
    );
    let included = job(&loaded, "included");
    assert!(
        !included.capture_stdout,
        "includer defaults never reach included jobs"
    );
    assert_eq!(loaded.jobs[0].name, "included", "included jobs come first");
}

#[test]
fn a_later_include_without_defaults_keeps_earlier_included_defaults() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "main.yaml",
        "include:\n  - one.yaml\n  - two.yaml\njobs:\n  - name: inline\n    command: x\n    schedule: '@daily'\n",
    );
    write(dir.path(), "one.yaml", "defaults:\n  shell: /bin/bash\n");
    write(dir.path(), "two.yaml", "jobs: []\n");
    let loaded = load_path(&dir.path().join("main.yaml")).unwrap();
    assert_eq!(job(&loaded, "inline").shell, "/bin/bash");
}

#[test]
fn diamond_includes_are_not_cycles() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", "include:\n  - b.yaml\n  - c.yaml\n");
    write(dir.path(), "b.yaml", "include:\n  - d.yaml\n");
    write(dir.path(), "c.yaml", "include:\n  - d.yaml\n");
    write(dir.path(), "d.yaml", "defaults:\n  shell: /bin/bash\n");
    assert!(load_path(&dir.path().join("a.yaml")).is_ok());
}

#[test]
fn single_file_with_other_extension_is_sniffed() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "jobs.txt",
        "MAILTO=\"\"\n0 1 * * * echo sniffed\n",
    );
    let loaded = load_path(&dir.path().join("jobs.txt")).unwrap();
    assert_eq!(loaded.jobs[0].name, "jobs.txt:2");
}

#[test]
fn empty_and_comment_only_documents_are_empty_configs() {
    for text in ["", "\n", "# nothing\n", "---\n"] {
        let loaded = load_sources(&[yaml("m", text)]).unwrap();
        assert!(loaded.jobs.is_empty(), "{text:?}");
    }
}

#[test]
fn logging_section_honors_stream_handlers_and_names_what_it_leaves_out() {
    let loaded = load_sources(&[yaml(
        "m",
        "logging:\n  version: 1\n  disable_existing_loggers: false\n  handlers:\n    console:\n      class: logging.StreamHandler\n    sys:\n      class: logging.handlers.SysLogHandler\n  root:\n    level: DEBUG\n",
    )])
    .unwrap();
    assert!(
        !loaded
            .warnings
            .iter()
            .any(|w| w.contains("handlers.console")),
        "{:?}",
        loaded.warnings
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("logging.handlers.sys") && w.contains("SysLogHandler")),
        "{:?}",
        loaded.warnings
    );
    let logging = &loaded.sections.logging.as_ref().unwrap().value;
    assert_eq!(
        crate::logging::root_level(logging),
        Some(tracing::Level::DEBUG)
    );
}

#[test]
fn logging_section_with_an_unknown_format_key_is_a_load_error() {
    let err = load_sources(&[yaml(
        "m",
        "logging:\n  version: 1\n  formatters:\n    f:\n      format: '%(asctime)s %(host)s'\n",
    )])
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("logging.formatters.f") && err.contains("unknown log record attribute 'host'"),
        "{err}"
    );
}

#[test]
fn files_and_in_memory_sources_form_one_config() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "web:\n  listen: [http://127.0.0.1:8080]\njobs:\n  - name: a\n    command: echo\n    schedule: '@daily'\n",
    );
    let loaded = load_path_and_sources(
        Some(dir.path()),
        &[yaml(
            "configmap/ops/c:b.yaml",
            "jobs:\n  - name: b\n    command: echo\n    schedule: '@hourly'\n",
        )],
    )
    .unwrap();
    assert_eq!(loaded.jobs.len(), 2);
    assert!(loaded.sections.web.is_some());
    // A second web section in the ConfigMap clashes with the file's.
    let err = load_path_and_sources(
        Some(dir.path()),
        &[yaml(
            "configmap/ops/c:w.yaml",
            "web:\n  listen: [http://127.0.0.1:9090]\n",
        )],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("configmap/ops/c:w.yaml") && err.contains("'web'"),
        "{err}"
    );
    // A duplicate job name across the two is refused too.
    let err = load_path_and_sources(
        Some(dir.path()),
        &[yaml(
            "configmap/ops/c:dup.yaml",
            "jobs:\n  - name: a\n    command: echo\n    schedule: '@hourly'\n",
        )],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("'a' is already defined"), "{err}");
    // No path: the sources alone.
    let alone = load_path_and_sources(None, &[yaml("m", "jobs: []\n")]).unwrap();
    assert!(alone.jobs.is_empty());
}

#[test]
fn jobs_loaded_against_sections_refuse_sections_of_their_own() {
    let sections = Sections::default();
    let ok = load_jobs_against(
        &[yaml(
            "cronjobset/ops/s",
            "defaults:\n  killTimeout: 2\njobs:\n  - name: a\n    command: echo\n    schedule: '@daily'\n",
        )],
        &sections,
    )
    .unwrap();
    assert_eq!(ok.jobs[0].kill_timeout, 2.0);
    let err = load_jobs_against(
        &[yaml(
            "cronjobset/ops/s",
            "web:\n  listen: [http://127.0.0.1:1]\njobs: []\n",
        )],
        &sections,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("cronjobset/ops/s") && err.contains("'web' cannot be configured here"),
        "{err}"
    );
    let err = load_jobs_against(
        &[yaml(
            "cronjobset/ops/s",
            "jobs:\n  - name: a\n    command: echo\n    schedule: '@daily'\n  - name: a\n    command: echo\n    schedule: '@daily'\n",
        )],
        &sections,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("already defined"), "{err}");
}

/// A source that may include from the in-memory files under `dir`.
fn yaml_in(name: &str, dir: &str, text: &str) -> Source {
    Source {
        name: name.into(),
        text: text.into(),
        kind: SourceKind::Yaml,
        include_dir: Some(PathBuf::from(dir)),
    }
}

fn file_map(entries: &[(&str, &str)]) -> FileMap {
    entries
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
        .collect()
}

#[test]
fn in_memory_include_tree_layers_like_the_disk() {
    let files = file_map(&[
        (
            "/cfg/inc/_common.yaml",
            "include:\n  - ../shared/_shell.yaml\ndefaults:\n  killTimeout: 7\njobs:\n  - name: included\n    command: y\n    schedule: '@daily'\n",
        ),
        // Written with a `.` component: keys are normalized too.
        ("/cfg/./shared/_shell.yaml", "defaults:\n  shell: /bin/bash\n"),
        (
            "/cfg/crontabs/extra.crontab",
            "0 1 * * * echo from-crontab\n",
        ),
    ]);
    let main = yaml_in(
        "/cfg/main.yaml",
        "/cfg",
        "include:\n  - inc/_common.yaml\n  - crontabs/extra.crontab\njobs:\n  - name: inline\n    command: x\n    schedule: '@daily'\n",
    );
    let loaded = load_sources_with_files(&[main], &files).unwrap();
    let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["included", "extra.crontab:1", "inline"],
        "included jobs come first, in include order"
    );
    let inline = job(&loaded, "inline");
    assert_eq!(
        inline.kill_timeout, 7.0,
        "included defaults reach inline jobs"
    );
    assert_eq!(
        inline.shell, "/bin/bash",
        "and so do their includes' defaults"
    );
    assert_eq!(
        job(&loaded, "included").origin.source,
        "/cfg/inc/_common.yaml"
    );
    assert_eq!(
        loaded.files,
        [
            PathBuf::from("/cfg/inc/_common.yaml"),
            PathBuf::from("/cfg/inc/../shared/_shell.yaml"),
            PathBuf::from("/cfg/crontabs/extra.crontab"),
        ]
    );
}

#[test]
fn in_memory_include_cycles_are_refused_however_spelled() {
    let files = file_map(&[
        ("/cfg/a.yaml", "include:\n  - sub/b.yaml\n"),
        ("/cfg/sub/b.yaml", "include:\n  - ./../a.yaml\n"),
    ]);
    let main = yaml_in("/cfg/main.yaml", "/cfg", "include:\n  - a.yaml\n");
    let err = load_sources_with_files(&[main], &files)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "/cfg/sub/b.yaml: include cycle: /cfg/sub/./../a.yaml includes itself"
    );
}

#[test]
fn in_memory_diamonds_are_not_cycles() {
    let files = file_map(&[
        ("/cfg/b.yaml", "include:\n  - d.yaml\n"),
        ("/cfg/c.yaml", "include:\n  - d.yaml\n"),
        ("/cfg/d.yaml", "defaults:\n  shell: /bin/bash\n"),
    ]);
    let main = yaml_in(
        "/cfg/a.yaml",
        "/cfg",
        "include:\n  - b.yaml\n  - c.yaml\njobs:\n  - name: j\n    command: x\n    schedule: '@daily'\n",
    );
    let loaded = load_sources_with_files(&[main], &files).unwrap();
    assert_eq!(job(&loaded, "j").shell, "/bin/bash");
}

#[test]
fn in_memory_missing_include_names_the_file() {
    let files = file_map(&[("/cfg/a.yaml", "include:\n  - gone.yaml\n")]);
    let main = yaml_in("/cfg/main.yaml", "/cfg", "include:\n  - a.yaml\n");
    let err = load_sources_with_files(&[main], &files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/gone.yaml: cannot read: no such file among the in-memory files"
    );
}

#[test]
fn in_memory_includes_keep_the_size_cap() {
    let big = "#".repeat(usize::try_from(crate::config::MAX_FILE_BYTES).unwrap() + 1);
    let files = file_map(&[("/cfg/big.yaml", &big)]);
    let main = yaml_in("/cfg/main.yaml", "/cfg", "include:\n  - big.yaml\n");
    let err = load_sources_with_files(&[main], &files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/big.yaml: cannot read: is larger than the 16 MiB limit"
    );
}

#[test]
fn sources_without_a_directory_still_refuse_includes_with_files() {
    let files = file_map(&[("other.yaml", "jobs: []\n")]);
    let err = load_sources_with_files(&[yaml("m", "include:\n  - other.yaml\n")], &files)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no directory to include from"), "{err}");
}

#[test]
fn section_clash_in_an_include_tree_names_both_files() {
    let files = file_map(&[
        ("/cfg/a.yaml", "state:\n  path: /tmp/x\n"),
        ("/cfg/b.yaml", "state:\n  path: /tmp/z\n"),
    ]);
    let main = yaml_in(
        "/cfg/main.yaml",
        "/cfg",
        "include:\n  - a.yaml\nstate:\n  path: /tmp/y\n",
    );
    let err = load_sources_with_files(&[main], &files)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "/cfg/a.yaml: 'state' is configured in more than one file of one include tree \
         (first in /cfg/main.yaml, again here); a config has at most one 'state' section"
    );
    let siblings = yaml_in(
        "/cfg/main.yaml",
        "/cfg",
        "include:\n  - a.yaml\n  - b.yaml\n",
    );
    let err = load_sources_with_files(&[siblings], &files)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/cfg/b.yaml: 'state' is configured in more than one file of one include tree (first in /cfg/a.yaml, again here)"),
        "{err}"
    );
}

#[test]
fn include_nesting_is_bounded() {
    // A chain of distinct files, each including the next: one past the
    // depth limit. (The in-memory source itself is not on the stack, so
    // the chain's first file is depth 1.)
    let depth = crate::config::MAX_INCLUDE_DEPTH;
    let mut files = FileMap::new();
    for i in 0..=depth {
        files.insert(
            PathBuf::from(format!("/c/f{i}.yaml")),
            format!("include: [f{}.yaml]\n", i + 1),
        );
    }
    files.insert(
        PathBuf::from(format!("/c/f{}.yaml", depth + 1)),
        String::new(),
    );
    let main = yaml_in("/c/m.yaml", "/c", "include: [f0.yaml]\n");
    let err = load_sources_with_files(&[main], &files)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "/c/f{}.yaml: include 'f{}.yaml': includes nest more than {depth} deep",
            depth - 1,
            depth
        )
    );
    // The same chain entered two files later stays within the limit.
    let short = yaml_in("/c/m.yaml", "/c", "include: [f2.yaml]\n");
    assert!(load_sources_with_files(&[short], &files).is_ok());
}

#[test]
fn repeated_diamonds_are_bounded() {
    // Each file includes the next twice: 2^15 reads without a bound.
    let levels = 15;
    let mut files = FileMap::new();
    for i in 0..levels {
        files.insert(
            PathBuf::from(format!("/c/f{i}.yaml")),
            format!("include: [f{0}.yaml, f{0}.yaml]\n", i + 1),
        );
    }
    files.insert(
        PathBuf::from(format!("/c/f{levels}.yaml")),
        "defaults: {shell: /bin/bash}\n".into(),
    );
    let main = yaml_in("/c/m.yaml", "/c", "include: [f0.yaml]\n");
    let err = load_sources_with_files(&[main], &files)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "this load already read {} included files",
            crate::config::MAX_INCLUDE_READS
        )),
        "{err}"
    );
}

#[test]
fn include_nesting_is_bounded_on_disk_too() {
    let dir = tempfile::tempdir().unwrap();
    let depth = crate::config::MAX_INCLUDE_DEPTH;
    for i in 0..depth {
        write(
            dir.path(),
            &format!("f{i}.yaml"),
            &format!("include: [f{}.yaml]\n", i + 1),
        );
    }
    write(dir.path(), &format!("f{depth}.yaml"), "");
    let err = load_path(&dir.path().join("f0.yaml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(&format!(
            "f{}.yaml: include 'f{depth}.yaml': includes nest more than {depth} deep",
            depth - 1
        )),
        "{err}"
    );
    assert!(load_path(&dir.path().join("f1.yaml")).is_ok());
}

#[test]
fn one_load_reads_at_most_the_load_byte_budget() {
    // Five includes of a 15 MiB file: each under the per-file cap, 75 MiB
    // together; the fifth read passes the 64 MiB budget of one load.
    let big = format!("#{}\n", "x".repeat(15 << 20));
    let files = file_map(&[("/cfg/big.yaml", &big)]);
    let main = yaml_in(
        "/cfg/main.yaml",
        "/cfg",
        "include:\n  - big.yaml\n  - big.yaml\n  - big.yaml\n  - big.yaml\n  - big.yaml\n",
    );
    let err = load_sources_with_files(&[main], &files).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/big.yaml: cannot read: this load has read more than 64 MiB of config text with \
         it, the limit for one load"
    );
    // Four of them fit.
    let main = yaml_in(
        "/cfg/main.yaml",
        "/cfg",
        "include:\n  - big.yaml\n  - big.yaml\n  - big.yaml\n  - big.yaml\n",
    );
    assert!(load_sources_with_files(&[main], &files).is_ok());
}

#[test]
fn a_config_past_the_job_limit_names_the_first_job_over_it() {
    let loaded = load_sources(&[yaml(
        "jobs.yaml",
        "jobs:\n  - {name: a, command: 'true', schedule: '* * * * *'}\n  \
         - {name: b, command: 'true', schedule: '* * * * *'}\n  \
         - {name: c, command: 'true', schedule: '* * * * *'}\n",
    )])
    .unwrap();
    assert!(check_job_count(&loaded.jobs, 3).is_ok());
    let err = check_job_count(&loaded.jobs, 2).unwrap_err().to_string();
    assert!(
        err.ends_with("job 'c': the config defines 3 jobs, more than the limit of 2"),
        "{err}"
    );
    assert!(err.starts_with("jobs.yaml:"), "{err}");
    assert_eq!(crate::config::MAX_JOBS, 100_000);
}

#[test]
fn an_overlong_schedule_is_refused_and_quoted_short() {
    let schedule = format!("{} * * * *", "1,".repeat(3000) + "2");
    let text = format!("jobs:\n  - name: long\n    command: 'true'\n    schedule: '{schedule}'\n");
    let err = load_sources(&[yaml("jobs.yaml", &text)])
        .unwrap_err()
        .to_string();
    let shown = format!("{}...", &schedule[..64]);
    assert!(
        err.ends_with(&format!(
            "job 'long': schedule: invalid schedule '{shown}': the expression is {} bytes \
             long, more than the limit of 4096",
            schedule.len()
        )),
        "{err}"
    );
}

#[test]
fn monitor_resources_bool_and_map_forms_resolve() {
    let text = "defaults:\n  monitorResources: true\njobs:\n  - name: on\n    command: x\n    schedule: '@daily'\n  - name: tuned\n    command: x\n    schedule: '@daily'\n    monitorResources:\n      interval: 0.5\n      history: 0\n  - name: off\n    command: x\n    schedule: '@daily'\n    monitorResources: false\n  - name: parked\n    command: x\n    schedule: '@daily'\n    monitorResources:\n      enabled: false\n      interval: 3\n";
    let loaded = load_sources(&[yaml("m", text)]).unwrap();
    let on = job(&loaded, "on").monitor.expect("bool form turns it on");
    assert_eq!((on.interval, on.history), (1.0, 240));
    let tuned = job(&loaded, "tuned").monitor.expect("the map form opts in");
    assert_eq!((tuned.interval, tuned.history), (0.5, 0));
    assert_eq!(job(&loaded, "off").monitor, None);
    assert_eq!(job(&loaded, "parked").monitor, None);
    let plain = "jobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n";
    let loaded = load_sources(&[yaml("m", plain)]).unwrap();
    assert_eq!(job(&loaded, "a").monitor, None, "off by default");
}

#[test]
fn monitor_resources_ranges_use_the_original_texts() {
    for (setting, key, says) in [
        (
            "interval: 0.05",
            "monitorResources.interval",
            "must be >= 0.1 (seconds)",
        ),
        (
            "interval: .nan",
            "monitorResources.interval",
            "must be >= 0.1 (seconds)",
        ),
        (
            "history: -1",
            "monitorResources.history",
            "must be between 0 and 2000 (points)",
        ),
        (
            "history: 2001",
            "monitorResources.history",
            "must be between 0 and 2000 (points)",
        ),
        // Checked whether or not sampling is switched on, as the original does.
        (
            "enabled: false\n      history: 5000",
            "monitorResources.history",
            "must be between 0 and 2000",
        ),
    ] {
        let text = format!(
            "jobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n    monitorResources:\n      {setting}\n"
        );
        let err = load_sources(&[yaml("m", &text)]).unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(says), "{setting}: {err}");
    }
    for edge in ["interval: 0.1", "history: 0", "history: 2000"] {
        let text = format!(
            "jobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n    monitorResources:\n      {edge}\n"
        );
        assert!(
            load_sources(&[yaml("m", &text)]).is_ok(),
            "{edge} is in range"
        );
    }
}
