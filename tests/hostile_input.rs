//! Files that are not config text, named where config text is expected: a
//! device, a FIFO, an oversized file. Each is refused at once, naming the
//! file and why, instead of hanging the load (a FIFO with no writer) or
//! growing the process without end (`/dev/zero`).

mod support;

use support::cli::{cronstable, write_tree};

/// Runs `-v` on `config` in `dir` and returns stderr, asserting the
/// rejection (exit 1).
fn refused(config: &str, dir: &std::path::Path) -> String {
    let run = cronstable(&["-c", config, "-v"], dir);
    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    run.stderr
}

#[test]
fn an_include_of_a_device_is_refused_by_name() {
    let dir = write_tree(&[("main.yaml", "include:\n  - /dev/zero\njobs: []\n")]);
    let err = refused("main.yaml", dir.path());
    assert!(
        err.contains("/dev/zero: cannot read: is a device, not a regular file"),
        "{err}"
    );
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = write_tree(&[("main.yaml", "include:\n  - pipe.yaml\njobs: []\n")]);
    let fifo = dir.path().join("pipe.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    // Nobody ever writes to it: a blocking open would hang here for ever.
    let err = refused("main.yaml", dir.path());
    assert!(
        err.contains("pipe.yaml: cannot read: is a FIFO, not a regular file"),
        "{err}"
    );
    // As the top-level file too.
    let err = refused("pipe.yaml", dir.path());
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
}

#[test]
fn a_file_past_the_size_limit_is_refused() {
    let dir = write_tree(&[("main.yaml", "jobs: []\n")]);
    let big = dir.path().join("big.yaml");
    // 16 MiB and one byte of comment: the limit is the file's size, not
    // what it says.
    let mut text = String::from("jobs: []\n");
    text.push_str(&"#".repeat((16 << 20) + 1 - text.len() - 1));
    text.push('\n');
    std::fs::write(&big, &text).expect("write");
    assert_eq!(std::fs::metadata(&big).expect("stat").len(), (16 << 20) + 1);
    let err = refused("big.yaml", dir.path());
    assert!(
        err.contains("big.yaml: cannot read: is larger than the 16 MiB limit"),
        "{err}"
    );
    // At the limit it loads.
    text.truncate(16 << 20);
    text.pop();
    text.push('\n');
    std::fs::write(&big, &text).expect("write");
    let run = cronstable(&["-c", "big.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
}

#[test]
fn an_env_file_that_is_a_device_is_refused_naming_the_job() {
    let dir = write_tree(&[(
        "main.yaml",
        "jobs:\n  - name: e\n    command: \"true\"\n    schedule: \"@reboot\"\n    env_file: /dev/zero\n",
    )]);
    let err = refused("main.yaml", dir.path());
    assert!(
        err.contains(
            "job 'e': env_file: cannot read env_file '/dev/zero': is a device, not a regular file"
        ),
        "{err}"
    );
}

#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_limit() {
    let dir = write_tree(&[(
        "main.yaml",
        "jobs:\n  - name: fds\n    command: \"ulimit -n > nofile\"\n    schedule: \"@reboot\"\n",
    )]);
    let hard = std::process::Command::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .expect("sh");
    let hard = String::from_utf8_lossy(&hard.stdout).trim().to_owned();
    // A soft limit of 256 under whatever hard limit this machine allows;
    // the daemon runs the @reboot job, then is stopped.
    let script = format!(
        "ulimit -Sn 256 && {bin} -c main.yaml -l DEBUG & pid=$!; \
         for i in $(seq 100); do [ -s nofile ] && break; sleep 0.1; done; kill $pid; wait $pid",
        bin = env!("CARGO_BIN_EXE_cronstable")
    );
    let run = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .expect("sh");
    let log = String::from_utf8_lossy(&run.stderr);
    let seen = std::fs::read_to_string(dir.path().join("nofile")).unwrap_or_default();
    assert_eq!(
        seen.trim(),
        hard,
        "the job inherits the raised limit; log:\n{log}"
    );
    if hard != "256" {
        assert!(
            log.contains(&format!(
                "open-file limit raised from 256 to {hard} (the hard limit)"
            )),
            "{log}"
        );
    }
}
