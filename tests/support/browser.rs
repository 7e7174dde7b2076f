//! A real browser for the dashboard's tests: headless Chromium driven by
//! chromedriver over the W3C WebDriver HTTP API, spoken with the tests'
//! own small HTTP client ([`super::http`]). Each [`Browser`] is one
//! chromedriver process with one session and a fresh profile directory;
//! both are gone when it is dropped.
//!
//! Chromium is started with the background services off
//! (`--disable-background-networking` and friends): without them it keeps
//! trying to reach Google's update, sync and safe-browsing hosts, which a
//! closed CI network answers with nothing but delays and log noise.

use super::http::{free_port, request, wait_listening};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C key of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// chromedriver and Chromium, when both are installed (`CHROMEDRIVER`
/// and `CHROMIUM` override the lookup).
pub fn binaries() -> Option<(String, String)> {
    let find = |var: &str, paths: &[&str]| {
        std::env::var(var).ok().or_else(|| {
            paths
                .iter()
                .find(|p| std::path::Path::new(p).exists())
                .map(|p| (*p).to_owned())
        })
    };
    let driver = find(
        "CHROMEDRIVER",
        &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"],
    )?;
    let browser = find(
        "CHROMIUM",
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
    )?;
    Some((driver, browser))
}

/// True when the browser can run; otherwise says why the caller skips,
/// and fails under CI, where scripts/test.sh installs it.
pub fn available() -> bool {
    if binaries().is_some() {
        return true;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "chromium and chromium-driver must be installed in CI (scripts/test.sh installs them)"
    );
    eprintln!("chromium / chromedriver are not installed (apt-get install chromium chromium-driver); skipping");
    false
}

/// One entry of the browser's console log.
#[derive(Debug, Clone)]
pub struct LogEntry {
    /// `SEVERE`, `WARNING`, `INFO`, ...
    pub level: String,
    /// The text, with its source (`network`, `javascript`, `security`, ...)
    /// as Chromium words it.
    pub message: String,
    /// Where the entry came from (`network`, `javascript`, `console-api`).
    pub source: String,
}

/// A headless Chromium session.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session with a window
    /// of `width` x `height` CSS pixels.
    pub fn start(width: u32, height: u32) -> Browser {
        let (driver_bin, chromium) = binaries().expect("chromium and chromedriver");
        let port = free_port();
        // A process group of its own: Chromium and its helpers join it,
        // and dropping the browser kills the whole group, so no browser
        // outlives a test that panicked half-way (even before a session).
        let driver = Command::new(driver_bin)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        wait_listening(port, Duration::from_secs(20));
        let profile = tempfile::tempdir().expect("profile dir");
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL", "performance": "OFF"},
        }}});
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let answer = browser.call("POST", "/session", Some(caps));
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned();
        browser
    }

    /// One WebDriver command; returns its `value`, panicking on an error
    /// answer (a test step that cannot be done is a failed test).
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let reply = request(self.port, method, path, &[], &body);
        let value: Value = serde_json::from_str(&reply.body)
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}: {}", reply.body));
        if reply.status != 200 {
            panic!("webdriver {method} {path}: {} {}", reply.status, value);
        }
        value.get("value").cloned().unwrap_or(Value::Null)
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Loads `url` and waits for its load event.
    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({"url": url})));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the
    /// page and returns what it returns.
    pub fn eval(&self, script: &str, args: Value) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Waits until `script` returns something truthy (not null, false, 0
    /// or ""), polling every 100 ms; returns it, or panics naming `what`.
    pub fn wait_for(&self, what: &str, script: &str, limit: Duration) -> Value {
        let start = Instant::now();
        loop {
            let value = self.eval(script, json!([]));
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {what}; console: {:?}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first element matching the CSS `selector` (a WebDriver
    /// reference), or None.
    pub fn find(&self, selector: &str) -> Option<String> {
        let body = json!({"using": "css selector", "value": selector}).to_string();
        let reply = request(
            self.port,
            "POST",
            &format!("/session/{}/element", self.session),
            &[],
            &body,
        );
        if reply.status != 200 {
            return None;
        }
        let value: Value = serde_json::from_str(&reply.body).ok()?;
        value["value"][ELEMENT].as_str().map(str::to_owned)
    }

    /// Clicks the element `selector` names (as a user would: it must be
    /// visible and enabled).
    pub fn click(&self, selector: &str) {
        let id = self
            .find(selector)
            .unwrap_or_else(|| panic!("no element {selector}"));
        self.session_call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Types `text` into the element `selector` names.
    pub fn type_into(&self, selector: &str, text: &str) {
        let id = self
            .find(selector)
            .unwrap_or_else(|| panic!("no element {selector}"));
        self.session_call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        );
    }

    /// Presses and releases each of `keys` on the focused element (a
    /// single character, or a WebDriver key code such as `\u{E007}` for
    /// Enter).
    pub fn keys(&self, keys: &[&str]) {
        let mut actions = Vec::new();
        for key in keys {
            actions.push(json!({"type": "keyDown", "value": key}));
            actions.push(json!({"type": "keyUp", "value": key}));
        }
        self.session_call(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// Presses `key` while `modifier` (a WebDriver key code such as
    /// `\u{E009}` for Control) is held.
    pub fn chord(&self, modifier: &str, key: &str) {
        let actions = json!([
            {"type": "keyDown", "value": modifier},
            {"type": "keyDown", "value": key},
            {"type": "keyUp", "value": key},
            {"type": "keyUp", "value": modifier},
        ]);
        self.session_call(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// Resizes the window to `width` x `height` (outer) pixels.
    pub fn resize(&self, width: u32, height: u32) {
        self.session_call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let data = self.session_call("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .expect("a base64 screenshot")
    }

    /// The browser console entries since the last call (Chromium hands
    /// each entry out once).
    pub fn log(&self) -> Vec<LogEntry> {
        let value = self.session_call("POST", "/se/log", Some(json!({"type": "browser"})));
        value
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| {
                        let message = e["message"].as_str().unwrap_or_default().to_owned();
                        LogEntry {
                            level: e["level"].as_str().unwrap_or_default().to_owned(),
                            source: e["source"].as_str().map(str::to_owned).unwrap_or_else(|| {
                                message.split(' ').next().unwrap_or("").to_owned()
                            }),
                            message,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group (chromedriver, Chromium and its helpers) at once;
        // the profile directory goes with `_profile`.
        if let Ok(pid) = i32::try_from(self.driver.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.driver.wait();
    }
}
