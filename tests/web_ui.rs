//! The dashboard at `/`, in a real browser: headless Chromium (driven
//! over WebDriver, see `support::browser`) against the built daemon. It
//! loads the page, sees the jobs, opens a job, starts a run and watches
//! its log lines arrive, cancels, pauses and resumes from the page (and
//! checks the daemon did each), works through a token prompt, and reads
//! the browser's console: the page must log no error (a script error, or
//! a style or script the Content-Security-Policy refused) beyond the
//! expected refusals of routes this daemon does not serve.
//!
//! With `CRONSTABLE_SCREENSHOTS=<dir>` the tests also save PNGs of the
//! main views there (scripts/screenshots.sh writes docs/images/).
//!
//! The HTTP side (headers, 304, gzip, `web.ui: false`) is checked without
//! a browser at the end.

mod support;

use serde_json::json;
use std::time::Duration;
use support::browser::{self, Browser, LogEntry};
use support::daemon::Daemon;
use support::http::{get, request};

const LONG: Duration = Duration::from_secs(20);

const JOBS: &str = r#"  - name: chatty
    command: "for i in 1 2 3 4 5 6; do echo chatty line $i; sleep 0.5; done"
    schedule: "0 0 1 1 *"
    captureStdout: true
    monitorResources: true
  - name: sleeper
    command: "sleep 60"
    schedule: "0 0 1 1 *"
  - name: broken
    command: "echo 'broken: no such file' >&2; exit 2"
    schedule: "*/10 * * * *"
    captureStderr: true
  - name: nightly-report
    command: "true"
    schedule: "30 2 * * 1-5"
    timezone: Europe/Berlin
  - name: retired
    command: "true"
    schedule: "@daily"
    enabled: false
"#;

/// Routes a daemon may not serve (another branch builds them): the page
/// asks, gets a 404 and shows a note, and Chromium logs the 404.
const OPTIONAL_ROUTES: &[&str] = &[
    "/whoami",
    "/schedule/pressure",
    "/schedule/duplicates",
    "/schedule/suggest",
    "/kube/sets",
];

/// The console entries that are errors, minus the network lines of
/// `allowed` (a status such as "401", or an optional route's 404).
fn errors(entries: &[LogEntry], allowed_status: &[&str]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.level == "SEVERE")
        .filter(|e| {
            let network = e.source == "network" || e.message.contains("Failed to load resource");
            let optional =
                OPTIONAL_ROUTES.iter().any(|r| e.message.contains(r)) && e.message.contains("404");
            let expected = allowed_status
                .iter()
                .any(|s| e.message.contains(&format!("status of {s}")));
            !(network && (optional || expected))
        })
        .map(|e| format!("{} {}: {}", e.level, e.source, e.message))
        .collect()
}

/// Saves a screenshot as `<dir>/<name>.png` when screenshots are asked for.
fn shot(browser: &Browser, name: &str) {
    if let Ok(dir) = std::env::var("CRONSTABLE_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        browser.eval(
            "document.getElementById('toasts').replaceChildren(); CS.tip(null);",
            json!([]),
        );
        let path = std::path::Path::new(&dir).join(format!("{name}.png"));
        std::fs::write(&path, browser.screenshot()).expect("write screenshot");
    }
}

fn text_of(browser: &Browser, selector: &str) -> String {
    browser
        .eval(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            json!([selector]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn row_status(browser: &Browser, job: &str) -> String {
    text_of(browser, &format!(".row[data-name=\"{job}\"] .status"))
}

fn wait_row_status(browser: &Browser, job: &str, status: &str) {
    browser.wait_for(
        &format!("{job} to show {status}"),
        &format!(
            "const e = document.querySelector('.row[data-name=\"{job}\"] .status'); return e && e.textContent === '{status}';"
        ),
        LONG,
    );
}

fn job_json(port: u16, name: &str) -> serde_json::Value {
    get(port, &format!("/jobs/{name}")).json()
}

#[test]
fn the_dashboard_lists_jobs_runs_one_streams_its_log_and_controls_jobs() {
    if !browser::available() {
        return;
    }
    let (daemon, port) = Daemon::start_with_web("", JOBS);
    // One failed run before the page loads, for the status, the pills and
    // the history.
    assert_eq!(
        request(port, "POST", "/jobs/broken/start", &[], "").status,
        200
    );
    let b = Browser::start(1400, 900);
    let base = format!("http://127.0.0.1:{port}");
    b.goto(&format!("{base}/"));

    // The overview: every job, with its status.
    b.wait_for(
        "the five jobs to be listed",
        "return document.querySelectorAll('.row[data-name]:not([hidden])').length === 5;",
        LONG,
    );
    wait_row_status(&b, "broken", "Failed");
    assert_eq!(row_status(&b, "retired"), "Disabled");
    assert_eq!(row_status(&b, "nightly-report"), "Pending");
    assert_eq!(text_of(&b, "#pTotal"), "5");
    assert_eq!(text_of(&b, "#pFailing"), "1");
    assert!(text_of(&b, ".row[data-name=\"nightly-report\"] .sched").contains("30 2 * * 1-5"));
    assert!(
        text_of(&b, "#version").contains(env!("CARGO_PKG_VERSION")),
        "the version chip"
    );
    assert_eq!(text_of(&b, "#conn"), "live");

    // The filter, from the keyboard: "/" focuses it.
    b.keys(&["/"]);
    b.type_into("#filter", "report");
    b.wait_for(
        "the filter to narrow the list",
        "return document.querySelectorAll('.row[data-name]:not([hidden])').length === 1;",
        LONG,
    );
    b.eval("const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); f.blur();", json!([]));
    b.wait_for(
        "the list to come back",
        "return document.querySelectorAll('.row[data-name]:not([hidden])').length === 5;",
        LONG,
    );
    shot(&b, "dashboard-overview");

    // Open a job; its log pane says nothing is buffered yet; run it and
    // watch the lines arrive while it runs.
    b.click(".row[data-name=\"chatty\"] .jname");
    b.wait_for(
        "the drawer",
        "return !document.getElementById('drawer').hidden && document.getElementById('dName').textContent === 'chatty';",
        LONG,
    );
    assert!(b.eval("return location.hash", json!([])).as_str() == Some("#job/chatty"));
    b.click("#dRun");
    b.wait_for(
        "the first log line",
        "return document.getElementById('log').textContent.includes('chatty line 1');",
        LONG,
    );
    let whole_run_already = text_of(&b, "#log").contains("chatty line 6");
    assert!(
        !whole_run_already,
        "the first line must show while the job still runs (it prints for 3 s)"
    );
    b.wait_for(
        "the last log line and the end marker",
        "const t = document.getElementById('log').textContent; return t.includes('chatty line 6') && t.includes('end of run output');",
        LONG,
    );
    let numbered = b.eval(
        "return Array.from(document.querySelectorAll('#log .ln .no')).map(e => e.textContent).join(',')",
        json!([]),
    );
    assert_eq!(numbered, json!("1,2,3,4,5,6"));
    // In-log search counts matches.
    b.type_into("#logFind", "line 3");
    b.wait_for(
        "a search match",
        "return document.getElementById('logCount').textContent === '1 matching line';",
        LONG,
    );
    shot(&b, "dashboard-logs");

    // History and schedule tabs.
    b.click("#dTabs button[data-tab=\"history\"]");
    b.wait_for(
        "the history of the run",
        "const p = document.getElementById('paneHistory'); return p.querySelectorAll('table.runs tr').length === 2 && p.textContent.includes('100%');",
        LONG,
    );
    shot(&b, "dashboard-history");
    b.click("#dTabs button[data-tab=\"resources\"]");
    b.wait_for(
        "the resources of the run",
        "return document.querySelectorAll('#paneResources canvas.chart').length === 2;",
        LONG,
    );
    b.keys(&["\u{E00C}"]); // Escape
    b.wait_for(
        "the drawer to close",
        "return document.getElementById('drawer').hidden;",
        LONG,
    );
    b.click(".row[data-name=\"nightly-report\"] .jname");
    b.click("#dTabs button[data-tab=\"schedule\"]");
    b.wait_for(
        "twelve fires in the job's zone",
        "const l = document.querySelectorAll('#paneSchedule ol.fires li'); return l.length === 12 && l[0].textContent.includes('02:30:00+0');",
        LONG,
    );
    assert!(text_of(&b, "#paneSchedule").contains("Europe/Berlin"));
    // The plain-English reading, where the daemon gives one.
    if let Some(reading) = job_json(port, "nightly-report")["description"].as_str() {
        assert_eq!(text_of(&b, "#dDesc"), reading);
        assert!(text_of(&b, "#paneSchedule").contains(reading));
    }
    shot(&b, "dashboard-schedule");
    b.keys(&["\u{E00C}"]);

    // Cancel from the row: start the sleeper, then stop it.
    b.click(".row[data-name=\"sleeper\"] button[data-act=\"start\"]");
    wait_row_status(&b, "sleeper", "Running");
    assert_eq!(job_json(port, "sleeper")["running"], true);
    b.click(".row[data-name=\"sleeper\"] button[data-act=\"cancel\"]");
    wait_row_status(&b, "sleeper", "Cancelled");
    assert_eq!(
        job_json(port, "sleeper")["last_run"]["outcome"],
        "cancelled"
    );

    // Pause and resume, from the keyboard: select the row with j/k, then p.
    b.eval("CS.select('nightly-report', true)", json!([]));
    b.keys(&["p"]);
    wait_row_status(&b, "nightly-report", "Paused");
    assert!(job_json(port, "nightly-report")["paused"].is_object());
    assert_eq!(text_of(&b, "#pPaused"), "1");
    b.keys(&["p"]);
    wait_row_status(&b, "nightly-report", "Pending");
    assert!(job_json(port, "nightly-report")["paused"].is_null());

    // The cards: the activity heatmap draws the runs so far; the sandbox
    // asks the daemon's engine; the week calendar places the fires.
    b.click(".tog[data-panel=\"heat\"]");
    b.wait_for(
        "the heatmap",
        "return document.querySelector('#heatBody canvas') !== null && /ran in the last/.test(document.getElementById('heatMeta').textContent);",
        LONG,
    );
    b.click(".tog[data-panel=\"sandbox\"]");
    b.type_into("#sbExpr", "*/15 9-17 * * 1-5");
    b.wait_for(
        "the sandbox preview",
        "return document.querySelectorAll('#sbOut ol.fires li').length === 12;",
        LONG,
    );
    b.click(".tog[data-panel=\"week\"]");
    b.wait_for(
        "the week calendar",
        "return document.querySelectorAll('#weekBody .fire').length > 0 && document.querySelector('#weekBody .hum') !== null;",
        LONG,
    );
    b.click(".tog[data-panel=\"pressure\"]");
    if get(port, "/schedule/pressure").status == 404 {
        b.wait_for(
            "the pressure card's note on a daemon without the route",
            "return /does not serve GET \\/schedule\\/pressure/.test(document.getElementById('pressureBody').textContent);",
            LONG,
        );
    } else {
        b.wait_for(
            "the pressure grid, its headline and the duplicate groups",
            "return document.querySelector('#pressureBody canvas') !== null && /fires of 4 jobs in 24h/.test(document.getElementById('pressureMeta').textContent) && document.querySelectorAll('#pressureBody .chip').length >= 2;",
            LONG,
        );
    }
    b.resize(1400, 2300);
    b.eval("window.scrollTo(0, 0)", json!([]));
    shot(&b, "dashboard-cards");
    b.resize(1400, 900);

    // Light and dark: "t" flips the theme.
    let before = b.eval("return document.documentElement.dataset.theme", json!([]));
    b.keys(&["t"]);
    let after = b.eval("return document.documentElement.dataset.theme", json!([]));
    assert_ne!(before, after);
    b.eval("CS.togglePanel('heat', false); CS.togglePanel('sandbox', false); CS.togglePanel('week', false); CS.togglePanel('pressure', false); window.scrollTo(0, 0)", json!([]));
    shot(
        &b,
        &format!("dashboard-{}", after.as_str().unwrap_or("theme")),
    );
    // The shortcut list.
    b.keys(&["?"]);
    assert_eq!(
        b.eval(
            "return document.getElementById('helpDialog').hidden",
            json!([])
        ),
        false
    );
    b.keys(&["\u{E00C}"]);

    // Without a `state` section the inspector is not offered (the page
    // asked GET /state long ago, at its first poll), nor in the palette.
    assert_eq!(get(port, "/state").json(), json!({"enabled": false}));
    assert_eq!(
        b.eval(
            "return [CS.stateInspector.probed, document.getElementById('stateToggle').hidden]",
            json!([])
        ),
        json!([true, true])
    );
    b.chord("\u{E009}", "k");
    b.type_into("#palInput", "toggle");
    let offered = text_of(&b, "#palList");
    assert!(
        offered.contains("Toggle activity heatmap card") && !offered.contains("durable"),
        "{offered}"
    );
    b.keys(&["\u{E00C}"]);

    // A deep link opens its job's drawer on a fresh load.
    b.goto("about:blank");
    b.goto(&format!("{base}/#job/broken"));
    b.wait_for(
        "the linked job's drawer",
        "return !document.getElementById('drawer').hidden && document.getElementById('dName').textContent === 'broken';",
        LONG,
    );
    b.wait_for(
        "its stderr line",
        "const l = document.querySelector('#log .ln.err'); return l && l.textContent.includes('broken: no such file');",
        LONG,
    );

    let log = b.log();
    let errs = errors(&log, &[]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    drop(daemon);
}

/// The node meter, the node and durable-state cards and the command
/// palette, against a daemon with a store: each shows what the daemon
/// answers, and the palette starts a job the daemon then reports.
#[test]
fn the_node_meter_state_inspector_and_command_palette() {
    if !browser::available() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_cronstable");
    let jobs = format!(
        "  - name: kv-writer\n    command: \"{bin} state set colour blue && {bin} state set size 3\"\n    schedule: \"0 0 1 1 *\"\n\
         \x20 - name: palette-target\n    command: \"echo from the palette\"\n    schedule: \"0 0 1 1 *\"\n    captureStdout: true\n\
         \x20 - name: doomed\n    command: \"exit 3\"\n    schedule: \"0 0 1 1 *\"\n"
    );
    let (daemon, port) = Daemon::start_with_web(
        "  nodeHistory:\n    interval: 1\nstate:\n  path: \"{dir}/store\"\n",
        &jobs,
    );
    for job in ["kv-writer", "doomed"] {
        assert_eq!(
            request(port, "POST", &format!("/jobs/{job}/start"), &[], "").status,
            200
        );
    }
    let deadline = std::time::Instant::now() + LONG;
    while get(port, "/state/documents?ns=kv/kv-writer").json()["documents"]
        .as_array()
        .is_none_or(|d| d.len() < 2)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "kv-writer wrote no keys: {}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let b = Browser::start(1400, 900);
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the jobs",
        "return document.querySelectorAll('.row[data-name]').length === 3;",
        LONG,
    );

    // The node meter: two bars with the host's readings; a click opens
    // the node card with its two charts of GET /node/history.
    let readable = !get(port, "/node").json()["resources"].is_null();
    if readable {
        b.wait_for(
            "the node meter",
            "const m = document.getElementById('nodeMeter'); return !m.hidden && /^\\d+%$/.test(document.querySelector('#nmCpu b').textContent) && /^\\d+%$/.test(document.querySelector('#nmMem b').textContent);",
            LONG,
        );
        b.click("#nodeMeter");
        b.wait_for(
            "the node card's charts",
            "return !document.getElementById('nodeCard').hidden && document.querySelectorAll('#nodeBody canvas.node-chart').length === 2 && /samples, every 1s/.test(document.getElementById('nodeMeta').textContent);",
            LONG,
        );
        shot(&b, "dashboard-node");
        b.click("#nodeMeter");
        b.wait_for(
            "the node card to close",
            "return document.getElementById('nodeCard').hidden;",
            LONG,
        );
    } else {
        assert_eq!(
            b.eval(
                "return document.getElementById('nodeMeter').hidden",
                json!([])
            ),
            true
        );
    }

    // The state inspector: offered because GET /state answers; its
    // overview lists the store's kinds, the kv tab the job's scope, and
    // inspecting it lists the two keys without their values.
    b.wait_for(
        "the state button",
        "return !document.getElementById('stateToggle').hidden;",
        LONG,
    );
    b.click("#stateToggle");
    let inventory = get(port, "/state").json();
    b.wait_for(
        "the state card's overview",
        "return !document.getElementById('stateCard').hidden && document.querySelector('#stateBody button[data-stab=\"overview\"].on') !== null && /filesystem · single-node/.test(document.getElementById('stateMeta').textContent);",
        LONG,
    );
    let body = text_of(&b, "#stateBody");
    for prefix in inventory["records"]
        .as_object()
        .into_iter()
        .chain(inventory["documents"].as_object())
        .flat_map(|m| m.keys())
    {
        assert!(
            body.contains(prefix.as_str()),
            "{prefix} missing from {body}"
        );
    }
    assert!(body.contains("kv") && body.contains("runs"), "{body}");
    b.click("#stateBody button[data-stab=\"kv\"]");
    b.click("#stateBody button[data-stream=\"kv/kv-writer\"]");
    b.wait_for(
        "the kv scope's documents",
        "const t = document.getElementById('stateInspect'); return t && t.querySelectorAll('tr').length === 3;",
        LONG,
    );
    let docs = text_of(&b, "#stateInspect");
    assert!(
        docs.contains("colour") && docs.contains("size") && !docs.contains("blue"),
        "{docs}"
    );
    b.click("#stateBody button[data-stab=\"runs\"]");
    b.click("#stateBody button[data-stream=\"runs/kv-writer\"]");
    b.wait_for(
        "the run record's fields",
        "const t = document.getElementById('stateInspect'); return t && /outcome: str\\(7\\)/.test(t.textContent);",
        LONG,
    );
    shot(&b, "dashboard-state");
    b.click("#stateToggle");

    // The command palette: Ctrl-K opens it, typing narrows the actions,
    // Enter runs the best match; the daemon then has the run.
    assert!(get(port, "/jobs/palette-target/runs").json()["runs"]
        .as_array()
        .is_none_or(Vec::is_empty));
    b.chord("\u{E009}", "k"); // Ctrl-K
    b.wait_for(
        "the palette",
        "return !document.getElementById('palette').hidden && document.activeElement.id === 'palInput';",
        LONG,
    );
    b.type_into("#palInput", "run");
    b.wait_for(
        "the actions matching run",
        "return document.querySelectorAll('#palList li').length > 3;",
        LONG,
    );
    shot(&b, "dashboard-palette");
    b.type_into("#palInput", " palette");
    b.wait_for(
        "the run action first",
        "const s = document.querySelector('#palList li.sel'); return s && s.textContent.startsWith('Run palette-target');",
        LONG,
    );
    b.keys(&["\u{E007}"]); // Enter
    b.wait_for(
        "the palette to close",
        "return document.getElementById('palette').hidden;",
        LONG,
    );
    let deadline = std::time::Instant::now() + LONG;
    loop {
        let runs = get(port, "/jobs/palette-target/runs").json();
        if runs["runs"].as_array().is_some_and(|r| r.len() == 1) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no run: {runs}");
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_row_status(&b, "palette-target", "OK");
    // Ctrl-P too; a card toggles from it; Escape closes it.
    b.chord("\u{E009}", "p");
    b.type_into("#palInput", "toggle durable");
    b.keys(&["\u{E007}"]);
    b.wait_for(
        "the state card from the palette",
        "return !document.getElementById('stateCard').hidden;",
        LONG,
    );
    b.chord("\u{E009}", "k");
    b.type_into("#palInput", "zzzz-no-such-action");
    assert_eq!(text_of(&b, "#palList"), "Nothing matches.");
    b.keys(&["\u{E00C}"]);
    assert_eq!(
        b.eval(
            "return document.getElementById('palette').hidden",
            json!([])
        ),
        true
    );

    // The matcher and the headline on chosen inputs.
    let probes = b.eval(
        "return [CS.fuzzy('rbk', 'Run backup') !== null, CS.fuzzy('xyz', 'Run backup'), \
         CS.fuzzy('rp', 'Run palette-target').at, \
         CS.fuzzy('bk', 'Run \u{130}-backup').at, \
         CS.fuzzy('run', 'Run doomed').score > CS.fuzzy('run', 'Resume ugly-name').score, \
         CS.wallVerdict([{name: 'a', last_run: {exit_code: 2}}, {name: 'b', last_run: {exit_code: 2}}, {name: 'c', last_run: {exit_code: 1}}]), \
         CS.wallVerdict([{name: 'a', last_run: {exit_code: 2}}, {name: 'b', last_run: {exit_code: 1}}]), \
         CS.wallVerdict([])];",
        json!([]),
    );
    assert_eq!(
        probes,
        json!([
            true,
            null,
            [0, 4],
            // marks index the label itself, though `İ` lowers to two units
            [6, 9],
            true,
            "FLEET EVENT — 3 jobs failing, 2 share exit=2 — likely one cause",
            "2 jobs failing — likely independent",
            ""
        ])
    );

    // The wallboard: `w` shows every job as a tile, the failing one
    // first under its headline, with the tally at the foot.
    wait_row_status(&b, "doomed", "Failed");
    b.keys(&["w"]);
    b.wait_for(
        "the wallboard",
        "const t = document.querySelectorAll('#wbGrid .wb-tile:not([hidden])'); return !document.getElementById('wallboard').hidden && t.length === 3 && t[0].dataset.name === 'doomed';",
        LONG,
    );
    let reason = job_json(port, "doomed")["last_run"]["fail_reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        text_of(&b, "#wbVerdict"),
        format!("JOB FAILING — doomed · exit 3 · {reason}")
    );
    assert!(text_of(&b, "#wbTally").starts_with("3 jobs · 1 failing"));
    assert!(text_of(&b, "#wbGrid .wb-tile .wb-glance").contains("exit 3"));
    assert_eq!(b.eval("return location.hash", json!([])), "#tv");
    shot(&b, "dashboard-wallboard");
    b.keys(&["w"]);
    assert_eq!(
        b.eval(
            "return document.getElementById('wallboard').hidden",
            json!([])
        ),
        true
    );
    // Opened at #tv, the page starts on the board.
    b.goto("about:blank");
    b.goto(&format!("http://127.0.0.1:{port}/#tv"));
    b.wait_for(
        "the wallboard from #tv",
        "return !document.getElementById('wallboard').hidden && document.querySelectorAll('#wbGrid .wb-tile').length === 3 && document.getElementById('wbSignal').hidden;",
        LONG,
    );
    // The zen screensaver: never over a failing job, however idle the
    // board; once nothing fails (the failing job paused), it comes after
    // the idle delay, and a key wakes the board.
    b.eval("CS.prefs.zenDelay = 1", json!([]));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        b.eval("return document.getElementById('wbZen').hidden", json!([])),
        true
    );
    assert_eq!(
        request(port, "POST", "/jobs/doomed/pause", &[], "").status,
        200
    );
    b.wait_for(
        "the zen screensaver",
        "return !document.getElementById('wbZen').hidden && document.querySelectorAll('#zenField i').length === 3 && /^3 jobs armed · next: /.test(document.getElementById('zenSub').textContent);",
        LONG,
    );
    shot(&b, "dashboard-zen");
    b.keys(&["a"]);
    assert_eq!(
        b.eval(
            "return [document.getElementById('wbZen').hidden, document.getElementById('wallboard').hidden]",
            json!([])
        ),
        json!([true, false])
    );

    let errs = errors(&b.log(), &[]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    // The daemon goes away: the board says so instead of freezing.
    drop(daemon);
    b.wait_for(
        "the NO SIGNAL banner",
        "const s = document.getElementById('wbSignal'); return !s.hidden && s.textContent.startsWith('▚ NO SIGNAL') && document.getElementById('wallboard').classList.contains('stale') && document.getElementById('wbZen').hidden;",
        LONG,
    );
}

#[test]
fn a_token_protected_daemon_prompts_for_the_token_and_then_works() {
    if !browser::available() {
        return;
    }
    let (daemon, port) = Daemon::start_with_web(
        "  authToken:\n    value: s3cret-token\n",
        "  - name: guarded\n    command: \"echo guarded ran\"\n    schedule: \"0 0 1 1 *\"\n    captureStdout: true\n",
    );
    // The page loads without a token: it holds no data.
    assert_eq!(get(port, "/").status, 200);
    assert_eq!(get(port, "/jobs").status, 401);
    let b = Browser::start(1200, 800);
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the token prompt",
        "return !document.getElementById('tokenDialog').hidden;",
        LONG,
    );
    assert_eq!(
        b.eval(
            "return document.querySelectorAll('.row[data-name]:not([hidden])').length",
            json!([])
        ),
        0
    );
    shot(&b, "dashboard-token");
    // A wrong token is refused and the prompt comes back.
    b.type_into("#tokenInput", "wrong");
    b.click("#tokenSave");
    b.wait_for(
        "the prompt again",
        "return !document.getElementById('tokenDialog').hidden && /refused/.test(document.getElementById('tokenWhy').textContent);",
        LONG,
    );
    b.type_into("#tokenInput", "s3cret-token");
    b.keys(&["\u{E007}"]); // Enter
    b.wait_for(
        "the job behind the token",
        "return document.querySelector('.row[data-name=\"guarded\"]') !== null && document.getElementById('tokenDialog').hidden;",
        LONG,
    );
    assert_eq!(
        b.eval(
            "return sessionStorage.getItem('cronstable.token')",
            json!([])
        ),
        "s3cret-token"
    );
    // Controls and the log stream carry the token too.
    b.click(".row[data-name=\"guarded\"] button[data-act=\"start\"]");
    b.wait_for("the run", "const e = document.querySelector('.row[data-name=\"guarded\"] .status'); return e && e.textContent === 'OK';", LONG);
    b.click(".row[data-name=\"guarded\"] button[data-act=\"logs\"]");
    b.wait_for(
        "the log through the token",
        "return document.getElementById('log').textContent.includes('guarded ran');",
        LONG,
    );
    let log = b.log();
    // The console is read: the refused requests before the token are in it.
    assert!(
        log.iter()
            .any(|e| e.level == "SEVERE" && e.message.contains("status of 401")),
        "the browser log shows no refused request: {log:?}"
    );
    let errs = errors(&log, &["401"]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    drop(daemon);
}

/// Three gossip nodes under `distribution: spread`: the cluster card lists
/// the peers, the job table gains the Owner column, a job owned by
/// another node cannot be run from this one (its controls say where it
/// runs), and the fleet view shows both nodes' columns.
#[test]
fn the_cluster_and_fleet_cards_and_owner_aware_controls() {
    if !browser::available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = support::certs::Ca::new();
    let names = ["alpha", "beta", "gamma"];
    let plans: Vec<(&str, u16, u16)> = names
        .iter()
        .map(|n| (*n, support::http::free_port(), support::http::free_port()))
        .collect();
    let mut jobs = String::new();
    for j in [
        "backup",
        "reindex",
        "rotate-logs",
        "sync-users",
        "vacuum",
        "warm-cache",
    ] {
        jobs.push_str(&format!(
            "  - name: {j}\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n    clusterPolicy: Leader\n"
        ));
    }
    let daemons: Vec<Daemon> = plans
        .iter()
        .map(|(name, web, peer)| {
            let tls = ca.files(&ca, &dir.path().join(name));
            let tls = tls.display();
            let peers: String = plans
                .iter()
                .filter(|p| p.0 != *name)
                .map(|p| format!("    - host: '127.0.0.1:{}'\n", p.2))
                .collect();
            let config = format!(
                "web:\n  listen:\n    - http://127.0.0.1:{web}\n\
                 cluster:\n  backend: gossip\n  nodeName: {name}\n  listen: '127.0.0.1:{peer}'\n  \
                 electLeader: true\n  distribution: spread\n  interval: 1\n  connectTimeout: 1\n  \
                 tls:\n    ca: {tls}/ca.pem\n    cert: {tls}/cert.pem\n    key: {tls}/key.pem\n  \
                 peers:\n{peers}jobs:\n{jobs}"
            );
            let d = Daemon::start(&config);
            for _ in 0..100 {
                if std::net::TcpStream::connect(("127.0.0.1", *web)).is_ok() {
                    return d;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            panic!("{name} does not listen:\n{config}\n{}", d.log());
        })
        .collect();
    let port = plans[0].1;
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    let owners = loop {
        let listed = get(port, "/jobs").json();
        let owners: Vec<(String, String)> = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|j| {
                Some((
                    j["name"].as_str()?.to_owned(),
                    j["clusterOwner"].as_str()?.to_owned(),
                ))
            })
            .collect();
        if owners.len() == 6
            && owners.iter().any(|o| o.1 != "alpha")
            && owners.iter().any(|o| o.1 == "alpha")
        {
            break owners;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no agreed owners: {listed}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let b = Browser::start(1400, 900);
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the cluster card with the three nodes",
        "return !document.getElementById('clusterCard').hidden && document.querySelectorAll('#clusterBody tr').length === 4;",
        LONG,
    );
    assert!(text_of(&b, "#clusterSummary").contains("alpha"));
    assert!(text_of(&b, "#clusterSummary").contains("spread (per-job owner)"));
    b.wait_for(
        "the owner column",
        "return document.getElementById('jobsCard').classList.contains('spread');",
        LONG,
    );
    let (theirs, owner) = owners
        .iter()
        .find(|o| o.1 != "alpha")
        .expect("a job another node owns");
    let mine = &owners
        .iter()
        .find(|o| o.1 == "alpha")
        .expect("a job alpha owns")
        .0;
    b.wait_for(
        "the other node's job to be blocked here",
        &format!(
            "const r = document.querySelector('.row[data-name=\"{theirs}\"] button[data-act=\"start\"]'); return r && r.disabled && r.title === 'runs on node {owner}';"
        ),
        LONG,
    );
    assert_eq!(
        text_of(&b, &format!(".row[data-name=\"{theirs}\"] .c-owner")),
        *owner
    );
    assert_eq!(
        b.eval(
            &format!("return document.querySelector('.row[data-name=\"{mine}\"] button[data-act=\"start\"]').disabled"),
            json!([])
        ),
        false
    );
    b.click("#fleetToggle");
    b.wait_for(
        "the fleet view with the three nodes' columns",
        "return document.querySelectorAll('#fleetBody th').length === 4 && document.querySelectorAll('#fleetBody tr').length === 7;",
        LONG,
    );
    shot(&b, "dashboard-cluster");
    let errs = errors(&b.log(), &[]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    drop(daemons);
}

/// Kubernetes mode against a real API server (skipped without
/// `KUBEBUILDER_ASSETS`): the CronJobSet card lists each set accepted,
/// refused (with its Event) or suspended, with its jobs.
#[test]
fn the_cronjobset_card_in_kubernetes_mode() {
    use support::kube_daemon::{cronjobset, Cluster, KubeDaemon, PATIENCE};
    if !browser::available() {
        return;
    }
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    let job =
        |name: &str, schedule: &str| json!({"name": name, "command": "true", "schedule": schedule});
    cluster.apply(cronjobset(
        "team-a",
        "billing",
        json!({}),
        json!({"jobs": [job("invoice", "0 6 * * *"), job("dunning", "30 7 * * 1-5")]}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "reports",
        json!({}),
        json!({"suspend": true, "jobs": [job("weekly", "0 8 * * 1")]}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "broken",
        json!({}),
        json!({"jobs": [job("typo", "61 * * * *")]}),
    ));
    d.wait_until("the three sets and the refusal's Event", PATIENCE, || {
        d.get_json("/kube/sets")["sets"]
            .as_array()
            .is_some_and(|sets| {
                sets.len() == 3
                    && sets
                        .iter()
                        .any(|s| !s["events"].as_array().is_none_or(Vec::is_empty))
            })
    });
    let b = Browser::start(1400, 900);
    b.goto(&format!("http://127.0.0.1:{}/", d.port));
    b.wait_for(
        "the sets button",
        "return !document.getElementById('kubeToggle').hidden;",
        LONG,
    );
    b.click("#kubeToggle");
    b.wait_for(
        "the CronJobSet card",
        "return document.querySelectorAll('#kubeBody tr').length === 4;",
        LONG,
    );
    let body = text_of(&b, "#kubeBody");
    assert!(
        body.contains("billing") && body.contains("✓ accepted"),
        "{body}"
    );
    assert!(
        body.contains("invoice") && body.contains("dunning"),
        "{body}"
    );
    assert!(body.contains("suspended"), "{body}");
    assert!(
        body.contains("✕ refused") && body.contains("InvalidSpec"),
        "{body}"
    );
    assert!(text_of(&b, "#kubeMeta").contains("2/3 accepted"));
    b.eval("window.scrollTo(0, document.body.scrollHeight)", json!([]));
    shot(&b, "dashboard-kubernetes");
    let errs = errors(&b.log(), &[]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
}

/// A token with the `view` scope only: the page shows the jobs, and once
/// the daemon refuses an action (403) every control is disabled, saying
/// why.
#[test]
fn a_view_only_token_disables_the_controls() {
    if !browser::available() {
        return;
    }
    let (daemon, port) = Daemon::start_with_web(
        "  authTokens:\n    - value: look-only\n      scopes: [view]\n      label: viewer\n",
        "  - name: watched\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n",
    );
    let b = Browser::start(1200, 800);
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the token prompt",
        "return !document.getElementById('tokenDialog').hidden;",
        LONG,
    );
    b.type_into("#tokenInput", "look-only");
    b.keys(&["\u{E007}"]);
    b.wait_for(
        "the job",
        "return document.querySelector('.row[data-name=\"watched\"]') !== null;",
        LONG,
    );
    let run = ".row[data-name=\"watched\"] button[data-act=\"start\"]";
    // Where the daemon serves GET /whoami the page knows at once;
    // otherwise the first refusal tells it.
    let known = b.eval(
        &format!("return document.querySelector('{run}').disabled"),
        json!([]),
    );
    if known == json!(false) {
        b.click(run);
    }
    b.wait_for(
        "the controls disabled for lack of the control scope",
        &format!("const r = document.querySelector('{run}'); return r.disabled && r.title === 'this token lacks the control scope';"),
        LONG,
    );
    assert!(
        job_json_with(port, "watched", "look-only")["last_run"].is_null(),
        "nothing ran"
    );
    let errs = errors(&b.log(), &["401", "403"]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    drop(daemon);
}

/// The week card covers every job in the filter, not the first hundred:
/// with 150 jobs that do not fire this week ahead of it in the table, the
/// 152nd job's fires are drawn, and a frequent job is listed as hum.
#[test]
fn the_week_card_covers_every_job_in_the_filter() {
    if !browser::available() {
        return;
    }
    // February 29th: no fire in the coming week before 2028.
    let mut jobs = String::from(
        "  - name: aaa-poller\n    command: \"true\"\n    schedule: \"*/5 * * * *\"\n",
    );
    for i in 0..150 {
        jobs.push_str(&format!(
            "  - name: filler-{i:03}\n    command: \"true\"\n    schedule: \"0 0 29 2 *\"\n"
        ));
    }
    jobs.push_str("  - name: zzz-beyond\n    command: \"true\"\n    schedule: \"15 10 * * *\"\n");
    let (daemon, port) = Daemon::start_with_web("", &jobs);
    let b = Browser::start(1400, 1200);
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the jobs to load",
        "return CS.jobs.view.length === 152;",
        LONG,
    );
    let place = b.eval(
        "return CS.jobs.view.findIndex((j) => j.name === 'zzz-beyond');",
        json!([]),
    );
    assert!(place.as_i64().is_some_and(|i| i >= 100), "at {place}");
    b.click(".tog[data-panel=\"week\"]");
    b.wait_for(
        "the 152nd job's fires in the week card",
        "return Array.from(document.querySelectorAll('#weekBody .fire')).filter((e) => e.textContent === 'zzz-beyond').length >= 6;",
        LONG,
    );
    b.wait_for(
        "the frequent job as hum, and the count of jobs in view",
        "return /aaa-poller/.test(document.querySelector('#weekBody .hum').textContent) && /of 152 in view/.test(document.getElementById('weekMeta').textContent);",
        LONG,
    );
    // Filtering narrows it to what the filter shows.
    b.type_into("#filter", "zzz");
    b.eval("CS.panels.week.refresh(true)", json!([]));
    b.wait_for(
        "the filtered week",
        "return /of 1 in view/.test(document.getElementById('weekMeta').textContent) && document.querySelector('#weekBody .hum') === null;",
        LONG,
    );
    let errs = errors(&b.log(), &[]);
    assert!(errs.is_empty(), "the console shows errors: {errs:#?}");
    drop(daemon);
}

fn job_json_with(port: u16, name: &str, token: &str) -> serde_json::Value {
    request(
        port,
        "GET",
        &format!("/jobs/{name}"),
        &[("Authorization", &format!("Bearer {token}"))],
        "",
    )
    .json()
}

#[test]
fn the_page_is_served_with_strict_headers_validators_and_compression() {
    let (_daemon, port) = Daemon::start_with_web(
        "  headers:\n    Content-Security-Policy: \"default-src 'self'; frame-ancestors 'self'\"\n    Cache-Control: \"max-age=999\"\n    X-Extra: yes\n",
        "  - name: a\n    command: \"true\"\n    schedule: \"@daily\"\n",
    );
    let page = get(port, "/");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    // The operator's policy replaces ours; the page's own caching stays.
    assert_eq!(
        page.header("content-security-policy"),
        Some("default-src 'self'; frame-ancestors 'self'")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert_eq!(page.header("x-extra"), Some("yes"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(page.body.contains("<script src=\"/ui/main.js?v="));
    let etag = page.header("etag").expect("an ETag").to_owned();
    let again = request(port, "GET", "/", &[("If-None-Match", &etag)], "");
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    // A browser refreshes the stored page's headers from a 304: the
    // operator's policy is on it too, and the page's own caching.
    assert_eq!(
        again.header("content-security-policy"),
        Some("default-src 'self'; frame-ancestors 'self'")
    );
    assert_eq!(again.header("cache-control"), Some("no-cache"));
    // The files: versioned links are kept a year, others revalidated.
    let version = page
        .body
        .split("/ui/base.js?v=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a versioned link")
        .to_owned();
    let js = get(port, &format!("/ui/base.js?v={version}"));
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(
        js.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(
        get(port, "/ui/base.js").header("cache-control"),
        Some("no-cache")
    );
    let css = request(
        port,
        "GET",
        &format!("/ui/dashboard.css?v={version}"),
        &[("Accept-Encoding", "gzip")],
        "",
    );
    assert_eq!(css.header("content-encoding"), Some("gzip"));
    assert_eq!(css.header("vary"), Some("Accept-Encoding"));
    assert_eq!(get(port, "/ui/nothing.js").status, 404);
    // HEAD works for the page like GET, without the body.
    assert_eq!(request(port, "HEAD", "/", &[], "").status, 200);
}

#[test]
fn web_ui_false_serves_no_page() {
    let (_daemon, port) = Daemon::start_with_web(
        "  ui: false\n  authToken:\n    value: t0k\n",
        "  - name: a\n    command: \"true\"\n    schedule: \"@daily\"\n",
    );
    for path in ["/", "/ui/base.js", "/ui/dashboard.css"] {
        let reply = get(port, path);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.json(), json!({"error": "404: Not Found"}), "{path}");
    }
    // The API itself is unchanged.
    assert_eq!(
        request(port, "GET", "/jobs", &[("Authorization", "Bearer t0k")], "").status,
        200
    );
}
