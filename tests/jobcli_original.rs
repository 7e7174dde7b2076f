//! This binary's job commands against the ORIGINAL daemon's job API
//! (cronstable 1.2.72 from PyPI, installed by scripts/test.sh; found
//! through CRONSTABLE_ORIGINAL): an `@reboot` job of the original runs a
//! script that calls this binary's `state`, `cursor`, `idempotent`,
//! `artifact`, `lock` and `secret` commands and writes their outputs and
//! exit codes to files, which the test then reads. It proves the client
//! speaks the original's wire protocol, plain and over TLS, and that
//! `lock run` forwards a SIGTERM to its command and still releases.

mod support;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use support::original::{original, run_until_file};

const LIMIT: Duration = Duration::from_secs(90);

const OURS: &str = env!("CARGO_BIN_EXE_cronstable");

/// The original's config: a store under `dir`, `job_api` (extra
/// `jobApi:` lines, already indented) and one `@reboot` job running
/// `dir/job.sh`, with a staged secret.
fn config(dir: &Path, job_api: &str) -> String {
    format!(
        "state:\n  path: {dir}/store\n{job_api}jobs:\n  - name: probe\n    command: 'sh {dir}/job.sh'\n    \
         schedule: '@reboot'\n    secrets:\n      - name: tok\n        value: s3cr3t\n",
        dir = dir.display()
    )
}

/// The script prologue: `$B` is this binary, `$O` the output directory,
/// `code NAME $?` records an exit code.
fn script(dir: &Path, body: &str) -> String {
    format!(
        "B='{ours}'\nO='{dir}/out'\nexport B O\nmkdir -p \"$O\"\ncode() {{ echo \"$1=$2\" >> \"$O/codes\"; }}\n{body}\ntouch \"$O/done\"\n",
        ours = OURS,
        dir = dir.display()
    )
}

/// Runs the original on `config` with `body` as the job's script until
/// the script is done; returns the recorded exit codes.
fn run_job(exe: &Path, dir: &Path, config: &str, body: &str) -> BTreeMap<String, String> {
    std::fs::write(dir.join("job.sh"), script(dir, body)).unwrap();
    let log = run_until_file(exe, dir, config, &dir.join("out/done"), LIMIT);
    let codes = read(dir, "codes");
    let codes: BTreeMap<String, String> = codes
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert!(!codes.is_empty(), "no exit codes recorded; log:\n{log}");
    codes
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("out").join(name)).unwrap_or_default()
}

fn assert_codes(codes: &BTreeMap<String, String>, want: &[(&str, u8)]) {
    for (name, code) in want {
        assert_eq!(
            codes.get(*name).map(String::as_str),
            Some(code.to_string().as_str()),
            "exit code of {name}; all: {codes:?}"
        );
    }
}

#[test]
fn our_client_speaks_the_original_job_api() {
    let Some(exe) = original() else { return };
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
"$B" state set k 'v é'; code set $?
"$B" state get k > "$O/get"; code get $?
"$B" state set j --json '{"n": 1.5, "l": [1, null, true]}'; code set_json $?
"$B" state get j > "$O/get_json"; code get_json $?
"$B" state keys > "$O/keys"; code keys $?
"$B" state get missing 2> "$O/missing.err"; code missing $?
"$B" cursor advance c 5 > "$O/advance"; code advance $?
"$B" cursor advance c 3 >> "$O/advance"; code advance_back $?
"$B" cursor get c > "$O/cursor"; code cursor $?
"$B" cursor get never 2> "$O/never.err"; code never $?
"$B" cursor advance c abc 2> "$O/incomparable.err"; code incomparable $?
"$B" idempotent once; code claim $?
"$B" idempotent once; code claim_again $?
"$B" idempotent once --release; code release_claim $?
"$B" idempotent once; code claim_after_release $?
printf 'bytes\000\377\n' > "$O/payload"
"$B" artifact put a "$O/payload" > "$O/sha"; code put $?
"$B" artifact get a -o "$O/fetched"; code fetch $?
"$B" artifact list > "$O/artifacts"; code list $?
"$B" artifact get nope 2> "$O/nope.err"; code nope $?
"$B" lock run L -- sh -c 'exit 7'; code lock_run $?
"$B" lock run L3 -- sh -c 'kill -9 $$'; code lock_run_killed $?
"$B" lock acquire L2 > "$O/token"; code acquire $?
"$B" lock acquire L2 2> "$O/held.err"; code held $?
"$B" lock release "$(cat "$O/token")"; code release $?
"$B" lock acquire L2 > /dev/null; code reacquire $?
"$B" secret get tok > "$O/secret"; code secret $?
"$B" secret list > "$O/secrets"; code secrets $?
"$B" secret get other 2> "$O/no_secret.err"; code no_secret $?
"$B" state get k --scope elsewhere 2> "$O/scope.err"; code scope $?
"$B" state delete k; code delete $?
"$B" state delete k; code delete_again $?
"#;
    let codes = run_job(&exe, dir.path(), &config(dir.path(), ""), body);
    assert_codes(
        &codes,
        &[
            ("set", 0),
            ("get", 0),
            ("set_json", 0),
            ("get_json", 0),
            ("keys", 0),
            ("missing", 4),
            ("advance", 0),
            ("advance_back", 0),
            ("cursor", 0),
            ("never", 4),
            ("incomparable", 1),
            ("claim", 0),
            ("claim_again", 5),
            ("release_claim", 0),
            ("claim_after_release", 0),
            ("put", 0),
            ("fetch", 0),
            ("list", 0),
            ("nope", 4),
            ("lock_run", 7),
            ("lock_run_killed", 247),
            ("acquire", 0),
            ("held", 3),
            ("release", 0),
            ("reacquire", 0),
            ("secret", 0),
            ("secrets", 0),
            ("no_secret", 4),
            ("scope", 1),
            ("delete", 0),
            ("delete_again", 4),
        ],
    );
    let dir = dir.path();
    assert_eq!(read(dir, "get"), "v é\n");
    // The original stores the object (its keys sorted); printed as Python's
    // json.dumps prints it.
    assert_eq!(
        read(dir, "get_json"),
        "{\"l\": [1, null, true], \"n\": 1.5}\n"
    );
    assert_eq!(read(dir, "keys"), "j\nk\n");
    assert_eq!(read(dir, "missing.err"), "key not found: missing\n");
    // A backward advance leaves the cursor where it was and prints it.
    assert_eq!(read(dir, "advance"), "5\n5\n");
    assert_eq!(read(dir, "cursor"), "5\n");
    assert_eq!(read(dir, "never.err"), "cursor not set: never\n");
    assert_eq!(
        read(dir, "incomparable.err"),
        "cronstable cursor: cursor 'c' holds a int but was advanced with a str; advance it \
         with a comparable value or pass force\n"
    );
    let payload = b"bytes\x00\xff\n";
    assert_eq!(read(dir, "sha"), format!("{:x}\n", Sha256::digest(payload)));
    assert_eq!(std::fs::read(dir.join("out/fetched")).unwrap(), payload);
    assert_eq!(read(dir, "artifacts"), "a\n");
    assert_eq!(read(dir, "nope.err"), "artifact not found: nope\n");
    let token = read(dir, "token");
    assert!(
        token.len() == 33 && token.ends_with('\n'),
        "a 32-hex hold token: {token:?}"
    );
    assert_eq!(read(dir, "held.err"), "lock not acquired: L2\n");
    assert_eq!(read(dir, "secret"), "s3cr3t\n");
    assert_eq!(read(dir, "secrets"), "tok\n");
    assert_eq!(read(dir, "no_secret.err"), "secret not staged: other\n");
    assert_eq!(
        read(dir, "scope.err"),
        "cronstable state: scope 'elsewhere' is not permitted for job 'probe'; add it to \
         stateAllowedScopes to allow this job to use it\n"
    );
}

#[test]
fn lock_run_forwards_sigterm_and_still_releases() {
    let Some(exe) = original() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The command traps SIGTERM, notes it and exits 3; the test signals
    // only the CLI's own pid, so the command can only hear of it through
    // the forwarding.
    std::fs::write(
        dir.path().join("child.sh"),
        "trap 'echo term > \"$O/trapped\"; exit 3' TERM\necho up > \"$O/started\"\n\
         while :; do sleep 0.1; done\n",
    )
    .unwrap();
    let body = format!(
        r#"
"$B" lock run L -- sh '{dir}/child.sh' &
pid=$!
while [ ! -f "$O/started" ]; do sleep 0.1; done
kill -TERM $pid
wait $pid; code forwarded $?
"$B" lock acquire L > /dev/null; code after $?
"#,
        dir = dir.path().display()
    );
    let codes = run_job(&exe, dir.path(), &config(dir.path(), ""), &body);
    assert_codes(&codes, &[("forwarded", 3), ("after", 0)]);
    assert_eq!(read(dir.path(), "trapped"), "term\n");
}

#[test]
fn our_client_verifies_the_original_s_tls_endpoint_against_its_ca() {
    let Some(exe) = original() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ca = support::certs::Ca::new();
    let tls = ca.files(&ca, &dir.path().join("tls"));
    let stranger = support::certs::Ca::new();
    std::fs::write(dir.path().join("stranger.pem"), stranger.pem()).unwrap();
    let job_api = format!(
        "  jobApi:\n    listen: https://127.0.0.1:0\n    tls:\n      cert: {tls}/cert.pem\n      \
         key: {tls}/key.pem\n      ca: {tls}/ca.pem\n",
        tls = tls.display()
    );
    let body = format!(
        r#"
echo "$CRONSTABLE_STATE_URL" > "$O/url"
echo "$CRONSTABLE_STATE_CACERT" > "$O/cacert"
"$B" state set k over-tls; code set $?
"$B" state get k > "$O/get"; code get $?
CRONSTABLE_STATE_CACERT='{dir}/stranger.pem' "$B" state get k 2> "$O/stranger.err"; code stranger $?
CRONSTABLE_STATE_CACERT='{dir}/missing.pem' "$B" state get k 2> "$O/missing.err"; code missing $?
"#,
        dir = dir.path().display()
    );
    let codes = run_job(&exe, dir.path(), &config(dir.path(), &job_api), &body);
    assert_codes(
        &codes,
        &[("set", 0), ("get", 0), ("stranger", 1), ("missing", 1)],
    );
    let dir = dir.path();
    let url = read(dir, "url");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    assert_eq!(read(dir, "cacert"), format!("{}/ca.pem\n", tls.display()));
    assert_eq!(read(dir, "get"), "over-tls\n");
    let stranger = read(dir, "stranger.err");
    let what = format!("the cronstable state endpoint at {}", url.trim_end());
    assert!(
        stranger.starts_with(&format!(
            "cronstable state: TLS verification failed for {what}: "
        )) && stranger.ends_with(
            " (does CRONSTABLE_STATE_CACERT point at the CA that signed the daemon's \
                 certificate?)\n"
        ),
        "{stranger}"
    );
    assert_eq!(
        read(dir, "missing.err"),
        format!(
            "cronstable state: cannot load the CA bundle CRONSTABLE_STATE_CACERT points at \
             ({}/missing.pem): [Errno 2] No such file or directory\n",
            dir.display()
        )
    );
}
