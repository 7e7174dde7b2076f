// cronstable dashboard: start-up, the poll loop, the token prompt, the
// theme and the keyboard. GET /jobs is polled with If-None-Match: while
// nothing changed the daemon answers 304 with no body and the page keeps
// what it has (the countdowns run on the browser's clock).
"use strict";
(function () {
  const CS = window.CS;
  let timer = null;
  let polling = false;
  let lastOk = 0;
  let waitingForToken = false;

  CS.auth = { canControl: null, label: null };
  /** When the daemon last answered a poll (epoch ms, 0 before the first). */
  CS.lastOk = () => lastOk;

  // --- polling ------------------------------------------------------------
  async function poll() {
    if (polling) return;
    polling = true;
    clearTimeout(timer);
    try {
      const res = await CS.api("/jobs", { etag: CS.jobs.etag });
      if (res.status === 304) {
        connection(true);
      } else if (res.ok && Array.isArray(res.data)) {
        const first = !CS.jobs.loaded;
        CS.jobs.etag = res.etag;
        CS.ingestJobs(res.data, Date.now());
        connection(true);
        if (first) firstLoad();
      } else if (res.status === 401) {
        waitingForToken = true;
        connection(false, "a token is needed");
      } else {
        connection(false, res.error);
      }
      if (res.ok || res.status === 304) CS.refreshPanels();
    } finally {
      polling = false;
      schedule();
    }
  }

  function schedule() {
    clearTimeout(timer);
    const every = Number(CS.prefs.refresh);
    if (!every || waitingForToken) return;
    timer = setTimeout(poll, document.hidden ? Math.max(every, 30000) : every);
  }

  CS.pollSoon = function (ms) {
    clearTimeout(timer);
    timer = setTimeout(poll, ms || 0);
  };

  function connection(ok, why) {
    const el = CS.$("conn");
    if (ok) {
      lastOk = Date.now();
    }
    el.classList.toggle("live", ok);
    el.classList.toggle("down", !ok);
    el.textContent = ok ? "live" : "no signal";
    if (!ok && why) el.dataset.why = why;
    else delete el.dataset.why;
  }

  function firstLoad() {
    // For scripts/dashboard_bench.py: the jobs are in the DOM, then painted.
    performance.mark("cronstable:jobs-shown");
    requestAnimationFrame(() => setTimeout(() => performance.mark("cronstable:jobs-painted"), 0));
    const m = /^#job\/(.+)$/.exec(location.hash);
    if (m) {
      const name = decodeURIComponent(m[1]);
      CS.select(name, true);
      CS.openDrawer(name);
    }
  }

  // --- who and what the daemon is -------------------------------------------
  async function loadMeta() {
    const [version, jobset, whoami, summary] = await Promise.all([CS.api("/version"), CS.api("/job-set-id"), CS.api("/whoami"), CS.api("/summary")]);
    if (version.ok) CS.$("version").textContent = "v" + String(version.data).trim();
    if (jobset.ok) {
      const id = String(jobset.data).trim();
      CS.$("jobset").textContent = "#" + id.replace(/^v\d+:/, "").slice(0, 8);
      CS.$("jobset").title = "Job-set id " + id + " (click to copy)";
      CS.$("jobset").dataset.value = id;
    }
    if (whoami.ok && whoami.data) {
      const scopes = whoami.data.scopes || [];
      CS.auth.canControl = scopes.indexOf("control") >= 0;
      CS.auth.label = whoami.data.label || null;
    } else if (whoami.status === 404) {
      // An older daemon: learn the scope from the first refused action.
      CS.auth.canControl = null;
    }
    if (summary.ok && summary.data && !CS.jobs.nodeName) CS.jobs.nodeName = summary.data.node_name;
    if (CS.jobs.loaded) CS.drawRows(true);
  }

  // --- the token prompt -------------------------------------------------------
  function showToken(reason) {
    const dialog = CS.$("tokenDialog");
    CS.$("tokenWhy").textContent = reason || (CS.token() ? "The daemon refused the stored token. Enter another one." : "This daemon asks for a bearer token. It is kept in this browser tab only (sessionStorage).");
    dialog.hidden = false;
    CS.$("tokenInput").value = "";
    CS.$("tokenInput").focus();
  }

  function saveToken() {
    const value = CS.$("tokenInput").value.trim();
    if (!value) return;
    CS.setToken(value);
    CS.$("tokenDialog").hidden = true;
    restart();
  }

  function restart() {
    waitingForToken = false;
    CS.jobs.etag = null;
    loadMeta();
    CS.syncPanels();
    poll();
  }

  CS.on("unauthorized", () => {
    waitingForToken = true;
    if (CS.$("tokenDialog").hidden) showToken();
  });
  CS.on("token", (value) => {
    CS.$("tokenBtn").classList.toggle("has-token", !!value);
    CS.$("tokenBtn").textContent = value ? "token ✓" : "token";
  });

  // --- theme ------------------------------------------------------------------
  function applyTheme() {
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    const theme = CS.prefs.theme || (dark ? "dark" : "light");
    document.documentElement.dataset.theme = theme;
    CS.emit("theme", theme);
    if (CS.jobs.loaded) CS.drawRows(true);
  }

  CS.toggleTheme = function () {
    CS.prefs.theme = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    CS.savePrefs();
    applyTheme();
  };

  // --- keyboard ----------------------------------------------------------------
  function onKey(ev) {
    const inField = /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName);
    if (ev.key === "Escape") {
      if (!CS.$("tokenDialog").hidden) CS.$("tokenDialog").hidden = true;
      else if (!CS.$("helpDialog").hidden) CS.$("helpDialog").hidden = true;
      else if (inField) ev.target.blur();
      else CS.closeDrawer();
      return;
    }
    if (inField) {
      if (ev.target.id === "tokenInput" && ev.key === "Enter") saveToken();
      if (ev.target.id === "filter" && (ev.key === "Enter" || ev.key === "ArrowDown")) {
        ev.preventDefault();
        ev.target.blur();
        CS.moveSelection(0);
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const job = CS.selectedJob();
    switch (ev.key) {
      case "/":
        ev.preventDefault();
        CS.$("filter").focus();
        CS.$("filter").select();
        break;
      case "j":
      case "ArrowDown":
        ev.preventDefault();
        CS.moveSelection(1);
        break;
      case "k":
      case "ArrowUp":
        ev.preventDefault();
        CS.moveSelection(-1);
        break;
      case "Enter":
        if (job) CS.openDrawer(job.name);
        break;
      case "r":
        if (job) CS.act(job.name, "start");
        break;
      case "x":
        if (job) CS.act(job.name, "cancel");
        break;
      case "p":
        if (job) CS.act(job.name, job.paused ? "resume" : "pause");
        break;
      case "c":
        if (job) CS.copy(job.command, "the command");
        break;
      case "g":
        CS.jobs.etag = null;
        poll();
        break;
      case "t":
        CS.toggleTheme();
        break;
      case "?":
        CS.$("helpDialog").hidden = false;
        break;
      case "1":
      case "2":
      case "3":
      case "4":
        CS.showTab(["logs", "history", "resources", "schedule"][Number(ev.key) - 1]);
        break;
      default:
        return;
    }
  }

  // --- every second -----------------------------------------------------------
  function tick() {
    const now = new Date();
    CS.$("clock").textContent = CS.pad(now.getUTCHours()) + ":" + CS.pad(now.getUTCMinutes()) + ":" + CS.pad(now.getUTCSeconds()) + " UTC";
    const conn = CS.$("conn");
    conn.title = (lastOk ? "last answer " + CS.ago(lastOk, now.getTime()) : "no answer yet") + (conn.dataset.why ? " · " + conn.dataset.why : "");
    if (lastOk && now.getTime() - lastOk > Math.max(15000, 3 * (Number(CS.prefs.refresh) || 0)) && Number(CS.prefs.refresh)) connection(false, "polls are failing");
    CS.tickRows(now.getTime());
  }

  document.addEventListener("DOMContentLoaded", () => {
    applyTheme();
    if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => !CS.prefs.theme && applyTheme());
    CS.emit("token", CS.token());
    const refresh = CS.$("refresh");
    refresh.value = String(CS.prefs.refresh);
    refresh.addEventListener("change", () => {
      CS.prefs.refresh = Number(refresh.value);
      CS.savePrefs();
      schedule();
    });
    CS.$("themeBtn").addEventListener("click", CS.toggleTheme);
    CS.$("helpBtn").addEventListener("click", () => (CS.$("helpDialog").hidden = false));
    CS.$("helpClose").addEventListener("click", () => (CS.$("helpDialog").hidden = true));
    CS.$("tokenBtn").addEventListener("click", () => showToken(CS.token() ? "A token is stored for this tab. Enter a new one, or forget it." : null));
    CS.$("tokenSave").addEventListener("click", saveToken);
    CS.$("tokenCancel").addEventListener("click", () => (CS.$("tokenDialog").hidden = true));
    CS.$("tokenClear").addEventListener("click", () => {
      CS.setToken("");
      CS.$("tokenDialog").hidden = true;
      restart();
    });
    for (const id of ["version", "jobset"]) {
      CS.$(id).addEventListener("click", (ev) => CS.copy(ev.currentTarget.dataset.value || ev.currentTarget.textContent, id === "jobset" ? "the job-set id" : "the version"));
    }
    document.addEventListener("keydown", onKey);
    window.addEventListener("hashchange", () => {
      const m = /^#job\/(.+)$/.exec(location.hash);
      if (m) CS.openDrawer(decodeURIComponent(m[1]));
    });
    document.addEventListener("visibilitychange", () => !document.hidden && CS.pollSoon(0));
    CS.syncPanels();
    loadMeta();
    poll();
    tick();
    setInterval(tick, 1000);
  });
})();
