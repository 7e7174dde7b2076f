//! Bad configs through the built binary: each must exit 1 with a message that
//! names the file, the line where one exists, the job and the key. These
//! pin the wording users see.

mod support;

use support::cli::{cronstable, cronstable_env, write_tree};

/// Validates `files` (the first one is passed to `-c`) and returns stderr,
/// asserting exit code 1.
fn rejected(files: &[(&str, &str)]) -> String {
    rejected_at(files[0].0, files)
}

/// Like [`rejected`], passing `config` to `-c` (a file or a directory).
fn rejected_at(config: &str, files: &[(&str, &str)]) -> String {
    let dir = write_tree(files);
    let run = cronstable(&["-c", config, "-v"], dir.path());
    assert_eq!(
        run.code,
        Some(1),
        "expected rejection, stderr: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("Configuration error: "),
        "stderr: {}",
        run.stderr
    );
    run.stderr
}

fn assert_contains(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "missing {needle:?} in:\n{haystack}"
        );
    }
}

const JOB: &str = "jobs:\n  - name: j\n    command: echo hi\n    schedule: \"* * * * *\"\n";

fn job_with(extra: &str) -> String {
    format!("{JOB}{extra}")
}

#[test]
fn unknown_key_names_file_line_column_and_suggests() {
    let err = rejected(&[("c.yaml", &job_with("    captureStdOut: true\n"))]);
    assert_contains(
        &err,
        &["c.yaml:5:5: jobs[0]: unknown key 'captureStdOut' (did you mean 'captureStdout'?)"],
    );
}

#[test]
fn unknown_top_level_key() {
    let err = rejected(&[("c.yaml", "jbos:\n  - name: x\n")]);
    assert_contains(
        &err,
        &["c.yaml:1:1", "unknown key 'jbos' (did you mean 'jobs'?)"],
    );
}

#[test]
fn wrong_type_names_the_key_path() {
    let err = rejected(&[("c.yaml", &job_with("    captureStderr: maybe\n"))]);
    assert_contains(&err, &["c.yaml:5:", "jobs[0].captureStderr", "maybe"]);
    let err = rejected(&[("c.yaml", &job_with("    saveLimit: lots\n"))]);
    assert_contains(&err, &["jobs[0].saveLimit", "lots", "an integer"]);
}

#[test]
fn enum_value_lists_the_accepted_ones() {
    let err = rejected(&[("c.yaml", &job_with("    concurrencyPolicy: allow\n"))]);
    assert_contains(
        &err,
        &["unknown value 'allow' (expected one of: Allow, Forbid, Replace)"],
    );
    let err = rejected(&[("c.yaml", &job_with("    priority: realtime\n"))]);
    assert_contains(&err, &["idle, below-normal, normal, above-normal, high"]);
}

#[test]
fn numeric_ranges_name_job_key_and_line() {
    for (setting, key, rule) in [
        ("saveLimit: -1", "saveLimit", "must be >= 0"),
        ("maxLineLength: 0", "maxLineLength", "must be > 0"),
        ("killTimeout: -0.5", "killTimeout", "must be >= 0"),
        (
            "executionTimeout: 0",
            "executionTimeout",
            "must be > 0 when set",
        ),
        (
            "catchupJitterSeconds: -3",
            "catchupJitterSeconds",
            "must be >= 0",
        ),
        (
            "startingDeadlineSeconds: 0",
            "startingDeadlineSeconds",
            "must be > 0 when set",
        ),
    ] {
        let err = rejected(&[("c.yaml", &job_with(&format!("    {setting}\n")))]);
        assert_contains(&err, &[&format!("c.yaml:5: job 'j': {key}: {rule}")]);
    }
}

#[test]
fn retry_rules() {
    let retry = |m: &str, i: &str, x: &str, b: &str| {
        job_with(&format!(
            "    onFailure:\n      retry:\n        maximumRetries: {m}\n        initialDelay: {i}\n        maximumDelay: {x}\n        backoffMultiplier: {b}\n"
        ))
    };
    for (yaml, key, rule) in [
        (
            retry("-2", "1", "10", "2"),
            "onFailure.retry.maximumRetries",
            "must be >= -1",
        ),
        (
            retry("1", "-1", "10", "2"),
            "onFailure.retry.initialDelay",
            "must be >= 0",
        ),
        (
            retry("1", "1", "0", "2"),
            "onFailure.retry.maximumDelay",
            "must be > 0",
        ),
        (
            retry("1", "1", "10", "0"),
            "onFailure.retry.backoffMultiplier",
            "must be > 0",
        ),
    ] {
        let err = rejected(&[("c.yaml", &yaml)]);
        assert_contains(&err, &[&format!("c.yaml:5: job 'j': {key}: {rule}")]);
    }
    let err = rejected(&[(
        "c.yaml",
        &job_with("    onFailure:\n      retry:\n        maximumRetries: 3\n"),
    )]);
    assert_contains(&err, &["jobs[0].onFailure.retry: missing required key"]);
}

#[test]
fn retry_forever_is_accepted() {
    let dir = write_tree(&[(
        "c.yaml",
        &job_with("    onFailure:\n      retry:\n        maximumRetries: -1\n        initialDelay: 0\n        maximumDelay: 5\n        backoffMultiplier: 1.5\n"),
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("Configuration is valid."));
}

#[test]
fn missing_required_job_keys() {
    let err = rejected(&[("c.yaml", "jobs:\n  - name: lone\n    command: x\n")]);
    assert_contains(
        &err,
        &["c.yaml:2: job 'lone': schedule: missing required key 'schedule'"],
    );
    let err = rejected(&[("c.yaml", "jobs:\n  - name: lone\n    schedule: '@daily'\n")]);
    assert_contains(
        &err,
        &["job 'lone': command: missing required key 'command'"],
    );
}

#[test]
fn job_only_keys_are_refused_in_defaults() {
    let err = rejected(&[("c.yaml", &format!("defaults:\n  command: echo\n{JOB}"))]);
    assert_contains(
        &err,
        &["c.yaml:2: job 'defaults': command: 'command' belongs on a job"],
    );
}

#[test]
fn unknown_timezone() {
    let err = rejected(&[("c.yaml", &job_with("    timezone: Mars/Olympus\n"))]);
    assert_contains(
        &err,
        &["c.yaml:5: job 'j': timezone: unknown timezone 'Mars/Olympus'"],
    );
}

#[test]
fn unknown_user_and_group() {
    let err = rejected(&[(
        "c.yaml",
        &job_with("    user: no-such-user-cronstable-test\n"),
    )]);
    assert_contains(
        &err,
        &["job 'j': user: user not found: 'no-such-user-cronstable-test'"],
    );
    let err = rejected(&[(
        "c.yaml",
        &job_with("    group: no-such-group-cronstable-test\n"),
    )]);
    assert_contains(
        &err,
        &["job 'j': group: group not found: 'no-such-group-cronstable-test'"],
    );
}

#[test]
fn env_file_problems() {
    let err = rejected(&[("c.yaml", &job_with("    env_file: missing.env\n"))]);
    assert_contains(
        &err,
        &["job 'j': env_file: cannot read env_file 'missing.env'"],
    );
    let err = rejected(&[
        ("c.yaml", &job_with("    env_file: bad.env\n")),
        ("bad.env", "A=1\nthis line has no equals\n"),
    ]);
    assert_contains(
        &err,
        &["line without '=' in env_file 'bad.env': \"this line has no equals\""],
    );
}

#[test]
fn cluster_scope_rules() {
    let err = rejected(&[("c.yaml", &job_with("    concurrencyScope: cluster\n"))]);
    assert_contains(
        &err,
        &[
            "c.yaml:5: job 'j': concurrencyScope: concurrencyScope: cluster has no effect with \
           concurrencyPolicy: Allow (the default); set Forbid or Replace, or drop concurrencyScope",
        ],
    );
    // No store: the original's sentence, every offender sorted, and ours
    // in parentheses (a lease backend's store also serves).
    let two = "jobs:\n  - name: zed\n    command: x\n    schedule: '@daily'\n    \
               concurrencyPolicy: Forbid\n    concurrencyScope: cluster\n  - name: alpha\n    \
               command: x\n    schedule: '@daily'\n    concurrencyPolicy: Replace\n    \
               concurrencyScope: cluster\n";
    let err = rejected(&[("c.yaml", two)]);
    assert_contains(
        &err,
        &[
            "concurrencyScope: cluster requires a `state` section (the shared store is what \
           coordinates the nodes), but none is configured; offending job(s): alpha, zed (a \
           `cluster` section with the kubernetes, etcd or filesystem backend also serves as that \
           store)",
        ],
    );
    // Either store accepts the same jobs.
    let forbid = job_with("    concurrencyScope: cluster\n    concurrencyPolicy: Forbid\n");
    for section in [
        "state:\n  path: /var/lib/cronstable\n",
        "cluster:\n  backend: filesystem\n  filesystem:\n    path: /var/lib/cronstable\n",
        "state:\n  path: /s\ncluster:\n  backend: etcd\n  etcd:\n    endpoints: ['http://127.0.0.1:2379']\n",
        // `state` without `path` only beside a lease backend (our
        // extension: the slots stay in the leadership store).
        "state:\n  slotTtlSeconds: 10\ncluster:\n  backend: filesystem\n  filesystem:\n    \
         path: /var/lib/cronstable\n",
    ] {
        let dir = write_tree(&[("c.yaml", &format!("{section}{forbid}"))]);
        let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(0), "{section}: {}", run.stderr);
    }
}

#[test]
fn cluster_slots_in_a_lease_or_an_etcd_key_are_accepted() {
    // Slots on a Lease per job / an etcd key per job: the lease backend's
    // store serves, with or without a `state` section (which then needs
    // no `path`).
    let forbid = job_with("    concurrencyScope: cluster\n    concurrencyPolicy: Forbid\n");
    let replace = job_with("    concurrencyScope: cluster\n    concurrencyPolicy: Replace\n");
    for section in [
        "cluster:\n  backend: etcd\n  etcd:\n    endpoints: ['http://127.0.0.1:2379']\n",
        "state:\n  slotTtlSeconds: 10\ncluster:\n  backend: etcd\n  etcd:\n    \
         endpoints: ['http://127.0.0.1:2379']\n",
        "cluster:\n  backend: kubernetes\n",
        "state:\n  slotTtlSeconds: 10\n  onStoreUnavailable: fail-closed\ncluster:\n  \
         backend: kubernetes\n",
    ] {
        for job in [&forbid, &replace] {
            let dir = write_tree(&[("c.yaml", &format!("{section}{job}"))]);
            let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
            assert_eq!(run.code, Some(0), "{section}{job}: {}", run.stderr);
            assert!(
                !run.stderr.contains("not supported"),
                "{section}: {}",
                run.stderr
            );
        }
    }
    // The slot TTL rule still applies beside a lease backend.
    let err = rejected(&[(
        "c.yaml",
        &format!("state:\n  slotTtlSeconds: 4\ncluster:\n  backend: kubernetes\n{forbid}"),
    )]);
    assert_contains(&err, &["state.slotTtlSeconds must be >= 5 and finite"]);
}

#[test]
fn state_section_rules_use_the_originals_messages() {
    for (yaml, message) in [
        (
            "state: {}\n",
            "state.path is required and must be non-empty",
        ),
        (
            "state:\n  path: ''\n",
            "state.path is required and must be non-empty",
        ),
        (
            "state:\n  path: /s\n  slotTtlSeconds: 4\n",
            "state.slotTtlSeconds must be >= 5 and finite",
        ),
        (
            "state:\n  path: /s\n  slotTtlSeconds: .nan\n",
            "state.slotTtlSeconds must be >= 5 and finite",
        ),
        (
            "state:\n  path: /s\n  maxOpsPerSecond: -1\n",
            "state.maxOpsPerSecond must be >= 0 and finite",
        ),
        (
            "state:\n  path: /s\n  gcGraceSeconds: 3600\n",
            "state.gcGraceSeconds must be <= 0 (GC disabled) or >= 86400",
        ),
        (
            "state:\n  path: /s\n  jobApi:\n    lockTtlSeconds: 1\n",
            "state.jobApi.lockTtlSeconds must be >= 5 and finite",
        ),
    ] {
        let err = rejected(&[("c.yaml", &format!("{yaml}{JOB}"))]);
        assert_contains(&err, &[&format!("c.yaml: {message}")]);
    }
    // The edges are accepted.
    let dir = write_tree(&[(
        "c.yaml",
        &format!(
            "state:\n  path: /s\n  slotTtlSeconds: 5\n  maxOpsPerSecond: 0\n  \
             gcGraceSeconds: 0\n  onStoreUnavailable: fail-closed\n  topology: shared\n{JOB}"
        ),
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // Secrets are staged over the job endpoint: refused without a state
    // section or with the endpoint turned off, by name (the original's
    // texts).
    let secret = job_with("    secrets:\n      - name: token\n        value: x\n");
    let err = rejected(&[("c.yaml", &secret)]);
    assert_contains(
        &err,
        &[
            "job `secrets` are staged over the state loopback endpoint, which requires a `state` \
           section; none is configured, offending job(s): j",
        ],
    );
    let err = rejected(&[(
        "c.yaml",
        &format!("state:\n  path: /s\n  jobApi:\n    enabled: false\n{secret}"),
    )]);
    assert_contains(
        &err,
        &[
            "job `secrets` need the state loopback endpoint, but state.jobApi.enabled is false; \
           offending job(s): j",
        ],
    );
    let dir = write_tree(&[("c.yaml", &format!("state:\n  path: /s\n{secret}"))]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The endpoint's listen address is checked at load.
    let err = rejected(&[(
        "c.yaml",
        &format!("state:\n  path: /s\n  jobApi:\n    listen: 10.1.2.3:9000\n{JOB}"),
    )]);
    assert_contains(
        &err,
        &["state.jobApi.listen host '10.1.2.3' is not loopback"],
    );
}

#[test]
fn on_late_needs_sla() {
    let err = rejected(&[(
        "c.yaml",
        &job_with("    onLate:\n      report:\n        shell:\n          command: echo late\n"),
    )]);
    assert_contains(&err, &["job 'j': onLate: onLate requires sla"]);
}

#[test]
fn report_blocks_require_their_keys() {
    let err = rejected(&[(
        "c.yaml",
        &job_with(
            "    onSuccess:\n      report:\n        mail:\n          from: a@example.invalid\n",
        ),
    )]);
    assert_contains(
        &err,
        &["jobs[0].onSuccess.report.mail: missing required key 'to'"],
    );
}

#[test]
fn object_schedule_field_with_a_space() {
    let err = rejected(&[(
        "c.yaml",
        "jobs:\n  - name: s\n    command: x\n    schedule:\n      minute: '1 2'\n",
    )]);
    assert_contains(&err, &["job 's': schedule.minute: must be one cron field"]);
}

#[test]
fn duplicate_names_across_files_name_both_places() {
    let err = rejected_at(
        "conf",
        &[
            (
                "conf/a.yaml",
                "jobs:\n  - name: twin\n    command: a\n    schedule: '@daily'\n",
            ),
            (
                "conf/b.yaml",
                "\njobs:\n  - name: twin\n    command: b\n    schedule: '@daily'\n",
            ),
        ],
    );
    assert_contains(
        &err,
        &["conf/b.yaml:3: job 'twin': name: a job named 'twin' is already defined at conf/a.yaml:2"],
    );
}

#[test]
fn include_cycle_and_missing_include() {
    let err = rejected(&[
        ("a.yaml", "include:\n  - b.yaml\n"),
        ("b.yaml", "include:\n  - a.yaml\n"),
    ]);
    assert_contains(&err, &["include cycle", "a.yaml includes itself"]);
    let err = rejected(&[("a.yaml", "include:\n  - nowhere.yaml\n")]);
    assert_contains(&err, &["nowhere.yaml: cannot read"]);
}

#[test]
fn unset_variable_names_value_path_and_variable() {
    let dir = write_tree(&[(
        "c.yaml",
        "jobs:\n  - name: j\n    command: echo ${NOT_EXPANDED}\n    schedule: '@daily'\n    environment:\n      - key: URL\n        value: http://${CRONSTABLE_TEST_UNSET_HOST}/x\n",
    )]);
    let run = cronstable_env(&["-c", "c.yaml", "-v"], dir.path(), &[]);
    assert_eq!(run.code, Some(1));
    assert_contains(
        &run.stderr,
        &["c.yaml: jobs[0].environment[0].value uses ${CRONSTABLE_TEST_UNSET_HOST}, but CRONSTABLE_TEST_UNSET_HOST is not set"],
    );
    let run = cronstable_env(
        &["-c", "c.yaml", "-v"],
        dir.path(),
        &[("CRONSTABLE_TEST_UNSET_HOST", "example.invalid")],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn the_mcp_section_fails_closed_on_an_open_routable_listener() {
    // The original's text, naming the listener /mcp would be open on.
    let open = "web:\n  listen:\n    - http://0.0.0.0:8080\nmcp:\n  enabled: true\n";
    let err = rejected(&[("c.yaml", open)]);
    assert_contains(
        &err,
        &[
            "mcp.enabled is set but no web.authToken/authTokens is set, and the web API listens \
           on non-loopback address(es) http://0.0.0.0:8080: /mcp would be served without \
           authentication",
        ],
    );
    let err = rejected(&[("c.yaml", "mcp:\n  enabled: true\n")]);
    assert_contains(&err, &["mcp.enabled requires a `web` section"]);
    let err = rejected(&[("c.yaml", "mcp:\n  maxRows: 0\n")]);
    assert_contains(&err, &["mcp.maxRows must be >= 1"]);
    // Loopback, a token, mutual TLS or the explicit waiver load.
    for yaml in [
        "web:\n  listen:\n    - http://127.0.0.1:8080\nmcp:\n  enabled: true\n",
        "web:\n  listen:\n    - http://0.0.0.0:8080\n  authToken:\n    value: t\nmcp:\n  enabled: true\n",
        "web:\n  listen:\n    - http://0.0.0.0:8080\nmcp:\n  enabled: true\n  allowUnauthenticated: true\n",
    ] {
        let dir = write_tree(&[("c.yaml", yaml)]);
        let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(0), "{yaml}\n{}", run.stderr);
    }
    // `act` under readOnly loads, with the original's warning.
    let dir = write_tree(&[(
        "c.yaml",
        "web:\n  listen:\n    - http://127.0.0.1:8080\nmcp:\n  enabled: true\n  toolsets: [observe, act]\n",
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_contains(
        &run.stderr,
        &["mcp.toolsets includes 'act' but mcp.readOnly is true"],
    );
}

#[test]
fn cluster_section_rules_use_the_clustering_pages_messages() {
    for (yaml, says) in [
        (
            "cluster:\n  backend: kubernetes\n  kubernetes:\n    leaseDurationSeconds: 10\n    renewDeadlineSeconds: 10\n",
            "cluster.kubernetes.leaseDurationSeconds (10) must be greater than renewDeadlineSeconds (10)",
        ),
        (
            "cluster:\n  backend: kubernetes\n  kubernetes:\n    leaseDurationSeconds: 15\n    renewDeadlineSeconds: 10\n    retryPeriodSeconds: 6\n",
            "cluster.kubernetes: renewDeadlineSeconds (10) + retryPeriodSeconds (6) must be less than leaseDurationSeconds (15)",
        ),
        (
            "cluster:\n  backend: kubernetes\n  kubernetes:\n    leaseName: Bad_Name\n",
            "cluster.kubernetes.leaseName must be a valid RFC1123 name",
        ),
        (
            "cluster:\n  backend: etcd\n  etcd:\n    ttl: 2\n",
            "cluster.etcd.ttl must be >= 3 seconds",
        ),
        (
            "cluster:\n  backend: etcd\n  etcd:\n    endpoints: ['http://u:p@127.0.0.1:2379']\n",
            "must not embed credentials in the URL",
        ),
        (
            "cluster:\n  backend: etcd\n  etcd:\n    username: root\n",
            "cluster.etcd.username is set but no password is configured",
        ),
        (
            "cluster:\n  backend: filesystem\n",
            "cluster.filesystem.path is required and must be non-empty",
        ),
        (
            "cluster:\n  backend: filesystem\n  filesystem:\n    path: /tmp/x\n  distribution: spread\n",
            "cluster.distribution: spread is not supported with the 'filesystem' backend",
        ),
        (
            "cluster:\n  backend: kubernetes\n  etcd:\n    ttl: 5\n",
            "cluster.etcd is configured but cluster.backend is 'kubernetes'",
        ),
        (
            "cluster:\n  backend: gossip\n",
            "cluster.backend gossip requires cluster.listen",
        ),
        (
            "cluster:\n  nodeName: a\n  listen: '127.0.0.1:9000'\n",
            "cluster.backend gossip requires cluster.tls",
        ),
        (
            "cluster:\n  listen: '127.0.0.1:9000'\n  tls: {ca: a, cert: b, key: c}\n  peers:\n    - host: 'nope'\n",
            "cluster.peers[].host must be host:port, got 'nope'",
        ),
        (
            "cluster:\n  listen: '127.0.0.1:9000'\n  tls: {ca: a, cert: b, key: c}\n  electLeader: true\n  peers:\n    - host: 'b:9000'\n",
            "cluster.electLeader needs a fault-tolerant cluster, but this config declares only 2 nodes (1 peer)",
        ),
        (
            "cluster:\n  backend: filesystem\n  filesystem:\n    path: /tmp/x\n  observability:\n    listen: 'h:2'\n",
            "cluster.observability requires cluster.observability.tls when backend is 'filesystem' (the overlay stands up its own gossip mesh to carry fleet data)",
        ),
    ] {
        let err = rejected(&[("c.yaml", yaml)]);
        assert_contains(&err, &["c.yaml", says]);
    }
    let dir = write_tree(&[(
        "c.yaml",
        "cluster:\n  backend: kubernetes\n  kubernetes:\n    leaseName: cronstable-leader\n",
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A complete gossip section loads (it was refused before the backend
    // existed).
    let dir = write_tree(&[(
        "c.yaml",
        "cluster:\n  backend: gossip\n  nodeName: a\n  listen: '127.0.0.1:9000'\n  \
         tls: {ca: ca.pem, cert: a.pem, key: a.key}\n  electLeader: true\n  peers:\n    \
         - host: 'b:9000'\n    - host: 'c:9000'\n",
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn disabled_mcp_is_accepted() {
    let dir = write_tree(&[("c.yaml", "mcp:\n  enabled: false\n")]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn web_section_rules() {
    let err = rejected(&[("c.yaml", "web:\n  listen:\n    - https://0.0.0.0:8443\n")]);
    assert_contains(
        &err,
        &["web: an https:// listen address needs tls.cert and tls.key"],
    );
    let err = rejected(&[("c.yaml", "web:\n  listen:\n    - ftp://x\n")]);
    assert_contains(&err, &["must start with http://, https:// or unix://"]);
    let err = rejected(&[(
        "c.yaml",
        "web:\n  listen:\n    - http://127.0.0.1:1\n  metrics:\n    durationBuckets: [1, 0.5]\n",
    )]);
    assert_contains(
        &err,
        &["durationBuckets must be finite, positive and strictly increasing"],
    );
}

#[test]
fn two_web_sections_in_one_directory() {
    let err = rejected_at(
        "d",
        &[
            ("d/a.yaml", "web:\n  listen:\n    - http://127.0.0.1:1\n"),
            ("d/b.yaml", "web:\n  listen:\n    - http://127.0.0.1:2\n"),
        ],
    );
    assert_contains(
        &err,
        &["d/b.yaml: 'web' is configured in more than one file (first in d/a.yaml"],
    );
}

#[test]
fn crontab_errors_name_file_and_line() {
    let err = rejected(&[("jobs.crontab", "# nightly\n0 3 * * * backup 50%\n")]);
    assert_contains(&err, &["jobs.crontab:2: unescaped '%' in command"]);
}

#[test]
fn not_utf8() {
    let dir = write_tree(&[]);
    std::fs::write(dir.path().join("c.yaml"), b"jobs:\n  - name: \xff\xfe\n").unwrap();
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1));
    assert_contains(&run.stderr, &["c.yaml: not valid UTF-8 text"]);
}

#[test]
fn missing_config_path() {
    let dir = write_tree(&[]);
    let run = cronstable(&["-c", "nope.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1));
    assert_contains(&run.stderr, &["nope.yaml: cannot read", "No such file"]);
}

#[test]
fn errors_in_several_directory_files_are_all_reported() {
    let err = rejected_at(
        "d",
        &[
            ("d/a.yaml", &job_with("    saveLimit: -1\n")),
            ("d/b.yaml", "jobs:\n  - name: k\n    bogus: 1\n"),
        ],
    );
    assert_contains(
        &err,
        &["d/a.yaml:5: job 'j': saveLimit", "\n---\n", "d/b.yaml:3:5"],
    );
}

#[test]
fn invalid_schedules_name_the_field_and_token() {
    let err = rejected(&[(
        "c.yaml",
        "jobs:\n  - name: m\n    command: x\n    schedule: '61 * * * *'\n",
    )]);
    assert_contains(
        &err,
        &["c.yaml:4: job 'm': schedule: invalid schedule '61 * * * *': minute value 61 out of range"],
    );
    let err = rejected(&[(
        "c.yaml",
        "jobs:\n  - name: m\n    command: x\n    schedule: '@midnight'\n",
    )]);
    assert_contains(
        &err,
        &["'@midnight' is accepted only in classic crontab files"],
    );
}

#[test]
fn schedule_lint_warns_without_failing() {
    let dir = write_tree(&[(
        "c.yaml",
        "jobs:\n  - name: never\n    command: x\n    schedule: '0 0 31 2 *'\n",
    )]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_contains(
        &run.stderr,
        &["job 'never': schedule '0 0 31 2 *': [never-fires]"],
    );
}

#[test]
fn archive_output_warns_about_the_state_section_only_when_there_is_none() {
    let job =
        "jobs:\n  - name: kept\n    command: x\n    schedule: '@daily'\n    archiveOutput: true\n";
    let without = write_tree(&[("c.yaml", job)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], without.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_contains(
        &run.stderr,
        &["job 'kept': archiveOutput has no effect without a state section"],
    );

    // The state section in another file of the same directory config.
    let with = write_tree(&[
        ("conf.d/a.yaml", job),
        ("conf.d/b.yaml", "state:\n  path: /var/lib/cronstable\n"),
    ]);
    let run = cronstable(&["-c", "conf.d", "-v"], with.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        !run.stderr.contains("without a state section"),
        "a state section is present: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("archiveOutput"),
        "with a state section the output is archived: nothing to warn about: {}",
        run.stderr
    );
}
