// cronstable dashboard: the job drawer. Four tabs: the live log (the
// job's Server-Sent Events stream, read with fetch so the bearer token
// can ride along, which EventSource cannot do), the run history, the
// resource charts and the schedule. Each tab fetches when it is shown,
// never on the poll loop.
"use strict";
(function () {
  const CS = window.CS;
  const MAX_LINES = 5000;
  const TABS = ["logs", "history", "resources", "schedule"];

  const D = (CS.drawer = {
    name: null,
    tab: "logs",
    ctrl: null,
    streaming: false,
    lines: [],
    lineNo: 0,
    res: null,
    resTimer: null,
    wasRunning: false,
    lastSeen: 0,
    preview: null,
  });

  const enc = encodeURIComponent;

  CS.openDrawer = function (name, tab) {
    const changed = D.name !== name;
    if (changed) {
      stopStream();
      D.name = name;
      D.lines = [];
      D.lineNo = 0;
      D.preview = null;
      D.res = null;
      CS.clear(CS.$("log"));
      CS.$("logState").textContent = "";
    }
    CS.$("drawer").hidden = false;
    const hash = "#job/" + enc(name);
    if (location.hash !== hash) history.replaceState(null, "", hash);
    const job = CS.jobs.byName.get(name);
    D.wasRunning = !!(job && job.running);
    D.lastSeen = job ? job._last : 0;
    renderHead();
    showTab(tab || D.tab, changed);
  };

  CS.closeDrawer = function () {
    if (CS.$("drawer").hidden) return false;
    stopStream();
    clearTimeout(D.resTimer);
    CS.$("drawer").hidden = true;
    D.name = null;
    history.replaceState(null, "", location.pathname + location.search);
    return true;
  };

  CS.drawerOpen = () => !CS.$("drawer").hidden && D.name;

  function showTab(tab, reload) {
    if (TABS.indexOf(tab) < 0) tab = "logs";
    const fresh = reload || D.tab !== tab;
    D.tab = tab;
    for (const b of CS.$("dTabs").children) b.classList.toggle("on", b.dataset.tab === tab);
    for (const t of TABS) CS.$("pane" + t[0].toUpperCase() + t.slice(1)).hidden = t !== tab;
    if (tab !== "resources") clearTimeout(D.resTimer);
    if (tab === "logs" && (fresh || !D.streaming) && !D.streaming) openLogs();
    if (tab === "history" && fresh) loadHistory();
    if (tab === "resources" && fresh) CS.loadResources();
    if (tab === "schedule" && fresh) CS.loadSchedule();
  }
  CS.showTab = (tab) => D.name && showTab(tab, false);

  // --- the head: status, schedule, controls ------------------------------
  function renderHead() {
    const job = CS.jobs.byName.get(D.name);
    CS.$("dName").textContent = D.name;
    if (!job) {
      CS.$("dStatus").className = "status st-unknown";
      CS.$("dStatus").textContent = "gone";
      CS.$("dMeta").textContent = "This job is not in the daemon's job table any more.";
      for (const id of ["dRun", "dStop", "dPause"]) CS.$(id).disabled = true;
      return;
    }
    const st = job._st;
    CS.$("dStatus").className = "status st-" + st.key;
    CS.$("dStatus").textContent = st.label + (job._late ? "  OVERDUE" : "");
    CS.$("dSched").textContent = job.schedule;
    const desc = job.description || (D.preview && D.preview.description) || "";
    CS.$("dDesc").textContent = desc;
    const meta = [];
    if (job.running && job.pids && job.pids.length) meta.push("pid " + job.pids.join(", "));
    const rr = job.running_resources;
    if (rr) meta.push("cpu " + rr.cpu_percent.toFixed(1) + "% · mem " + CS.bytes(rr.rss_bytes));
    if (job.paused) meta.push("paused until " + new Date(job.paused.until).toLocaleString() + (job.paused.by ? " by " + job.paused.by : "") + (job.paused.note ? " — " + job.paused.note : ""));
    if (job.clusterPolicy) meta.push("cluster: " + job.clusterPolicy + (job.clusterOwner !== undefined ? " → " + (job.clusterOwner || "no quorum") : ""));
    if (job._late) meta.push("late: " + job.sla.breaches.map((b) => b.check + " (" + CS.dur(b.observed_seconds) + " > " + CS.dur(b.threshold_seconds) + ")").join(", "));
    if (!job.enabled) meta.push("disabled in the configuration");
    CS.$("dMeta").textContent = meta.join("  ·  ");
    const blocked = CS.blockedReason(job);
    CS.$("dRun").disabled = !!blocked || !job.enabled;
    CS.$("dStop").disabled = !!blocked || !job.running;
    CS.$("dPause").disabled = !!blocked;
    CS.$("dPause").textContent = job.paused ? "▶ resume" : "‖ pause";
    CS.$("dBlocked").textContent = blocked || "";
  }

  CS.on("jobs", () => {
    if (!CS.drawerOpen()) return;
    renderHead();
    const job = CS.jobs.byName.get(D.name);
    if (!job) return;
    // A new run began: follow it (the stream of the last one has ended).
    if (job.running && !D.wasRunning && D.tab === "logs" && !D.streaming) openLogs(true);
    if (job._last !== D.lastSeen) {
      if (D.tab === "history") loadHistory();
      if (D.tab === "resources") CS.loadResources();
    }
    D.wasRunning = job.running;
    D.lastSeen = job._last;
  });

  CS.on("auth", () => CS.drawerOpen() && renderHead());

  CS.on("acted", (ev) => {
    if (ev.name !== D.name || !ev.ok || ev.verb !== "start") return;
    // The run is the job's newest: attach once it has started.
    setTimeout(() => {
      if (D.name === ev.name && D.tab === "logs" && !D.streaming) openLogs(true);
    }, 300);
  });

  // --- logs ----------------------------------------------------------------
  function stopStream() {
    if (D.ctrl) D.ctrl.abort();
    D.ctrl = null;
    D.streaming = false;
  }

  async function openLogs(again) {
    const name = D.name;
    const job = CS.jobs.byName.get(name);
    stopStream();
    const state = CS.$("logState");
    if (job && !job.captureStdout && !job.captureStderr) {
      state.textContent = "This job captures no output. Set captureStdout or captureStderr on it to watch its output here.";
      return;
    }
    if (again && D.lines.length) marker("── next run ──");
    const ctrl = new AbortController();
    D.ctrl = ctrl;
    D.streaming = true;
    state.textContent = job && job.running ? "following the running instance…" : "replaying the last run…";
    const res = await CS.api("/jobs/" + enc(name) + "/logs", { raw: true, signal: ctrl.signal });
    if (D.ctrl !== ctrl) return;
    if (!res.ok || !res.response.body) {
      D.streaming = false;
      if (!res.aborted) state.textContent = "Could not open the log stream (" + (res.status ? "HTTP " + res.status : "no answer") + ").";
      return;
    }
    const reader = res.response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          frame(buffer.slice(0, cut), state);
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch (err) {
      // aborted (drawer closed or another job opened) or connection cut
    }
    if (D.ctrl === ctrl) {
      D.streaming = false;
      D.ctrl = null;
    }
  }

  function frame(text, state) {
    let event = "message";
    let data = "";
    for (const line of text.split("\n")) {
      if (line.startsWith(":")) {
        const note = line.slice(1).trim();
        if (note && note !== "ping") marker("(" + note + ")");
      } else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    let payload = {};
    try {
      payload = data ? JSON.parse(data) : {};
    } catch (err) {
      payload = {};
    }
    if (event === "line") {
      state.textContent = "";
      appendLine(payload.stream || "stdout", String(payload.line || ""));
    } else if (event === "end") {
      if (payload.reason === "no-output") state.textContent = "No output is buffered for this job yet (the daemon keeps the current and the last run's).";
      else marker("── end of run output ──");
    }
  }

  const pendingLines = [];
  let flushQueued = false;

  function appendLine(stream, text) {
    D.lineNo += 1;
    pendingLines.push({ no: D.lineNo, stream: stream, text: text });
    if (!flushQueued) {
      flushQueued = true;
      requestAnimationFrame(flush);
    }
  }

  function marker(text) {
    pendingLines.push({ marker: true, text: text });
    if (!flushQueued) {
      flushQueued = true;
      requestAnimationFrame(flush);
    }
  }

  function flush() {
    flushQueued = false;
    const log = CS.$("log");
    const fragment = document.createDocumentFragment();
    const matcher = currentMatcher();
    for (const line of pendingLines.splice(0)) {
      const el = CS.el("span", line.marker ? "ln marker" : "ln" + (line.stream === "stderr" ? " err" : ""));
      line.el = el;
      if (line.marker) el.textContent = line.text;
      else renderLine(line, matcher);
      D.lines.push(line);
      fragment.appendChild(el);
    }
    log.appendChild(fragment);
    while (D.lines.length > MAX_LINES) {
      const gone = D.lines.shift();
      gone.el.remove();
    }
    updateCount(matcher);
    if (CS.$("logFollow").checked) log.scrollTop = log.scrollHeight;
  }

  // ANSI SGR: bold, dim, italic, underline and the 8 (+8 bright) colours
  // become classes; every other escape sequence is dropped.
  function ansiSpans(text, into) {
    const colour = CS.$("logAnsi").checked;
    const re = /\x1b\[([0-9;?]*)([A-Za-z])/g;
    let classes = [];
    let fg = null;
    let at = 0;
    let m;
    const push = (s) => {
      if (!s) return;
      const cls = classes.concat(fg ? ["a-" + fg] : []).join(" ");
      into.appendChild(cls && colour ? CS.el("span", cls, s) : document.createTextNode(s));
    };
    while ((m = re.exec(text))) {
      push(text.slice(at, m.index));
      at = re.lastIndex;
      if (m[2] !== "m") continue;
      for (const code of (m[1] || "0").split(";").map(Number)) {
        if (code === 0) {
          classes = [];
          fg = null;
        } else if (code === 1) classes.push("a-b");
        else if (code === 2) classes.push("a-d");
        else if (code === 3) classes.push("a-i");
        else if (code === 4) classes.push("a-u");
        else if (code === 22) classes = classes.filter((c) => c !== "a-b" && c !== "a-d");
        else if (code === 39) fg = null;
        else if (code >= 30 && code <= 37) fg = code;
        else if (code >= 90 && code <= 97) fg = code - 60;
      }
    }
    push(text.slice(at));
  }

  const stripAnsi = (s) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");

  function renderLine(line, matcher) {
    const el = line.el;
    CS.clear(el);
    el.appendChild(CS.el("span", "no", line.no));
    const tx = CS.el("span", "tx");
    const plain = stripAnsi(line.text);
    const hit = matcher && matcher(plain);
    el.classList.toggle("hit", !!hit);
    if (hit && hit.length) {
      let at = 0;
      for (const [start, end] of hit) {
        tx.appendChild(document.createTextNode(plain.slice(at, start)));
        tx.appendChild(CS.el("mark", null, plain.slice(start, end)));
        at = end;
      }
      tx.appendChild(document.createTextNode(plain.slice(at)));
    } else ansiSpans(line.text, tx);
    el.appendChild(tx);
  }

  /** A function giving the match ranges of a line, or null (no search). */
  function currentMatcher() {
    const q = CS.$("logFind").value;
    if (!q) return null;
    let re;
    try {
      re = CS.$("logRegex").checked ? new RegExp(q, "gi") : new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
    } catch (err) {
      return () => null;
    }
    return (text) => {
      const ranges = [];
      re.lastIndex = 0;
      let m;
      while ((m = re.exec(text)) && ranges.length < 50) {
        if (m[0].length === 0) {
          re.lastIndex++;
          continue;
        }
        ranges.push([m.index, m.index + m[0].length]);
      }
      return ranges.length ? ranges : null;
    };
  }

  function updateCount(matcher) {
    if (!matcher) {
      CS.$("logCount").textContent = "";
      return;
    }
    const hits = D.lines.filter((l) => !l.marker && l.el.classList.contains("hit")).length;
    CS.$("logCount").textContent = hits + " matching line" + (hits === 1 ? "" : "s");
  }

  function rerender() {
    const matcher = currentMatcher();
    for (const line of D.lines) if (!line.marker) renderLine(line, matcher);
    updateCount(matcher);
  }

  let jump = -1;
  function nextMatch() {
    const hits = D.lines.filter((l) => !l.marker && l.el.classList.contains("hit"));
    if (!hits.length) return;
    jump = (jump + 1) % hits.length;
    CS.$("logFollow").checked = false;
    hits[jump].el.scrollIntoView({ block: "center" });
  }

  function download() {
    const text = D.lines.map((l) => (l.marker ? l.text : stripAnsi(l.text))).join("\n") + "\n";
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const a = CS.el("a");
    a.href = url;
    a.download = (D.name || "job") + ".log";
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // --- history ---------------------------------------------------------------
  async function loadHistory() {
    const name = D.name;
    const pane = CS.$("paneHistory");
    const res = await CS.api("/jobs/" + enc(name) + "/runs");
    if (D.name !== name) return;
    CS.clear(pane);
    if (!res.ok) {
      pane.appendChild(CS.el("div", "note bad", "Could not read the run history: " + res.error));
      return;
    }
    const runs = res.data.runs || [];
    const s = res.data.stats || {};
    const stats = CS.el("div", "stats");
    const stat = (label, value) => {
      const box = CS.el("div", "stat");
      box.append(CS.el("b", null, value), CS.el("span", null, label));
      stats.appendChild(box);
    };
    stat("runs", s.total || 0);
    stat("success rate", s.success_rate === null || s.success_rate === undefined ? "—" : Math.round(s.success_rate * 100) + "%");
    stat("ok", s.success || 0);
    stat("failed", s.failure || 0);
    stat("cancelled", s.cancelled || 0);
    stat("average", CS.dur(s.avg_duration));
    stat("shortest", CS.dur(s.min_duration));
    stat("longest", CS.dur(s.max_duration));
    pane.appendChild(stats);
    if (!runs.length) {
      pane.appendChild(CS.el("div", "note", "No run is retained yet: the daemon keeps the last 50 runs of each job."));
      return;
    }
    const bars = CS.el("div", "bars");
    const max = Math.max(0.001, ...runs.map((r) => r.duration || 0));
    for (const run of runs) {
      const bar = CS.el("div", "bar " + run.outcome);
      bar.style.height = Math.max(3, ((run.duration || 0) / max) * 100) + "%";
      bar.title = run.outcome + " · " + CS.dur(run.duration) + " · " + new Date(run.finished_at).toLocaleString();
      bars.appendChild(bar);
    }
    pane.appendChild(bars);
    const table = CS.el("table", "runs");
    const head = CS.el("tr");
    for (const h of ["outcome", "exit", "finished", "took", "trigger", "reason"]) head.appendChild(CS.el("th", null, h));
    table.appendChild(head);
    for (const run of runs.slice().reverse()) {
      const tr = CS.el("tr");
      const outcome = CS.el("td");
      const st = CS.statusOf({ enabled: true, last_run: run });
      outcome.appendChild(CS.el("span", "status st-" + st.key, st.label));
      const finished = CS.el("td", null, CS.ago(CS.parseTime(run.finished_at)));
      finished.title = run.finished_at;
      tr.append(outcome, CS.el("td", "num", run.exit_code === null ? "—" : run.exit_code), finished, CS.el("td", "num", CS.dur(run.duration)), CS.el("td", "faint", run.trigger || ""), CS.el("td", "faint", run.fail_reason || run.skip_reason || ""));
      table.appendChild(tr);
    }
    pane.appendChild(table);
  }

  CS.drawerInternals = { renderHead: renderHead, showTab: showTab, D: D };

  document.addEventListener("DOMContentLoaded", () => {
    CS.$("dClose").addEventListener("click", () => CS.closeDrawer());
    CS.$("dTabs").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-tab]");
      if (b) showTab(b.dataset.tab, false);
    });
    CS.$("dRun").addEventListener("click", () => D.name && CS.act(D.name, "start"));
    CS.$("dStop").addEventListener("click", () => D.name && CS.act(D.name, "cancel"));
    CS.$("dPause").addEventListener("click", () => {
      const job = CS.jobs.byName.get(D.name);
      if (job) CS.act(D.name, job.paused ? "resume" : "pause");
    });
    CS.$("dCopy").addEventListener("click", () => {
      const job = CS.jobs.byName.get(D.name);
      if (job) CS.copy(job.command, "the command");
    });
    CS.$("logFind").addEventListener("input", () => {
      jump = -1;
      rerender();
    });
    CS.$("logFind").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") nextMatch();
    });
    CS.$("logRegex").addEventListener("change", rerender);
    CS.$("logAnsi").addEventListener("change", rerender);
    CS.$("logOnly").addEventListener("change", (ev) => CS.$("log").classList.toggle("only", ev.target.checked));
    CS.$("logWrap").addEventListener("change", (ev) => CS.$("log").classList.toggle("wrap", ev.target.checked));
    CS.$("logClear").addEventListener("click", () => {
      D.lines = [];
      CS.clear(CS.$("log"));
      updateCount(null);
    });
    CS.$("logDownload").addEventListener("click", download);
  });
})();
