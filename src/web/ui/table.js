// cronstable dashboard: the job overview. The list of jobs is held once
// (CS.jobs), filtered and sorted into a view, and drawn as a virtual
// table: only the rows in sight (plus a margin) exist in the DOM, so ten
// thousand jobs cost as much to draw as forty. Rows are reused as the
// view scrolls; a row is refilled only when its job changed.
"use strict";
(function () {
  const CS = window.CS;
  const ROW = 36;
  const MARGIN = 8;

  const model = (CS.jobs = {
    list: [],
    byName: new Map(),
    view: [],
    etag: null,
    at: 0,
    nodeName: null,
    spread: false,
    selected: null,
    loaded: false,
  });

  // Severity order for the status sort (worst first).
  const RANK = { failed: 0, running: 1, unknown: 2, paused: 3, cancelled: 4, pending: 5, ok: 6, disabled: 7 };

  /** The status a row shows: key (a CSS class), label. */
  CS.statusOf = function (job) {
    if (!job.enabled) return { key: "disabled", label: "Disabled" };
    if (job.running) return { key: "running", label: "Running" };
    if (job.paused) return { key: "paused", label: "Paused" };
    const last = job.last_run;
    if (!last) return { key: "pending", label: "Pending" };
    switch (last.outcome) {
      case "success":
        return { key: "ok", label: "OK" };
      case "failure":
        return { key: "failed", label: "Failed" };
      case "cancelled":
        return { key: "cancelled", label: "Cancelled" };
      default:
        return { key: "unknown", label: last.outcome || "Unknown" };
    }
  };

  /** Takes a fresh /jobs answer: derives what sorting and drawing need. */
  CS.ingestJobs = function (list, receivedAt) {
    const previous = model.byName;
    model.byName = new Map();
    const spread = model.distribution === "spread";
    for (const job of list) {
      const st = CS.statusOf(job);
      job._st = st;
      job._rank = RANK[st.key];
      job._search = (job.name + "\u0000" + (job.command || "")).toLowerCase();
      job._next = typeof job.scheduled_in === "number" ? receivedAt + job.scheduled_in * 1000 : 0;
      job._last = job.last_run ? CS.parseTime(job.last_run.finished_at) : 0;
      job._took = job.last_run && typeof job.last_run.duration === "number" ? job.last_run.duration : -1;
      job._late = !!(job.sla && job.sla.state === "late");
      const old = previous.get(job.name);
      job._rev = old ? old._rev + 1 : 1;
      model.byName.set(job.name, job);
    }
    model.list = list;
    model.at = receivedAt;
    model.spread = spread;
    model.loaded = true;
    CS.$("jobsCard").classList.toggle("spread", spread);
    applyView();
    CS.emit("jobs", model);
  };

  /** Whether `job` passes the filter box and the status segment. */
  function passes(job, text, seg) {
    if (text && job._search.indexOf(text) < 0) return false;
    switch (seg) {
      case "ok":
        return job._st.key === "ok";
      case "fail":
        return job._st.key === "failed";
      case "run":
        return job._st.key === "running";
      case "off":
        return job._st.key === "disabled" || job._st.key === "paused";
      default:
        return true;
    }
  }

  const sorters = {
    name: (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    status: (a, b) => a._rank - b._rank,
    last: (a, b) => b._last - a._last,
    next: (a, b) => (a._next || Infinity) - (b._next || Infinity),
    took: (a, b) => b._took - a._took,
    owner: (a, b) => String(a.clusterOwner || "").localeCompare(String(b.clusterOwner || "")),
  };

  /** Filters and sorts into the view, then redraws what is in sight. */
  function applyView() {
    const text = CS.$("filter").value.trim().toLowerCase();
    const seg = CS.prefs.seg;
    const view = model.list.filter((job) => passes(job, text, seg));
    const by = sorters[CS.prefs.sort] || sorters.name;
    const dir = CS.prefs.desc ? -1 : 1;
    view.sort((a, b) => dir * by(a, b) || sorters.name(a, b));
    model.view = view;
    CS.$("spacer").style.height = view.length * ROW + "px";
    CS.$("empty").hidden = !model.loaded || view.length > 0;
    CS.$("listMeta").textContent = model.loaded
      ? view.length === model.list.length
        ? model.list.length + " jobs"
        : view.length + " of " + model.list.length + " jobs shown"
      : "loading…";
    updatePills();
    updateHead();
    draw(true);
  }
  CS.applyView = applyView;

  function updatePills() {
    let running = 0,
      failing = 0,
      paused = 0,
      ok = 0;
    for (const job of model.list) {
      const k = job._st.key;
      if (k === "running") running++;
      else if (k === "failed") failing++;
      else if (k === "paused") paused++;
      else if (k === "ok") ok++;
    }
    CS.$("pTotal").textContent = model.list.length;
    CS.$("pRunning").textContent = running;
    CS.$("pFailing").textContent = failing;
    CS.$("pPaused").textContent = paused;
    CS.$("pOk").textContent = ok;
    CS.$("runFailing").disabled = failing === 0;
    for (const b of CS.$("seg").children) b.classList.toggle("on", b.dataset.seg === CS.prefs.seg);
  }

  function updateHead() {
    for (const b of CS.$("thead").querySelectorAll("button[data-sort]")) {
      const on = b.dataset.sort === CS.prefs.sort;
      b.classList.toggle("sorted", on);
      b.classList.toggle("desc", on && CS.prefs.desc);
      b.classList.toggle("asc", on && !CS.prefs.desc);
    }
    CS.$("sort").value = CS.prefs.sort;
  }

  // --- rows -------------------------------------------------------------
  const pool = [];

  function makeRow() {
    const row = CS.el("div", "row grid");
    row.setAttribute("role", "row");
    const c = {};
    c.status = CS.el("div");
    c.st = CS.el("span", "status");
    c.late = CS.el("span", "badge late", "OVERDUE");
    c.res = CS.el("span", "res");
    c.status.append(c.st, c.late, c.res);
    c.job = CS.el("div");
    c.name = CS.el("span", "jname");
    c.cmd = CS.el("span", "jcmd");
    c.job.append(c.name, c.cmd);
    c.owner = CS.el("div", "c-owner faint");
    c.sched = CS.el("div", "sched");
    c.last = CS.el("div", "num");
    c.lastAge = CS.el("span");
    c.exit = CS.el("span", "badge");
    c.last.append(c.lastAge, c.exit);
    c.took = CS.el("div", "num");
    c.next = CS.el("div", "num");
    c.trend = CS.el("div");
    c.spark = CS.el("canvas", "spark");
    c.trend.appendChild(c.spark);
    c.actions = CS.el("div", "actions");
    c.run = CS.el("button", "btn");
    c.run.type = "button";
    c.pause = CS.el("button", "btn");
    c.pause.type = "button";
    c.logs = CS.el("button", "btn", "logs");
    c.logs.type = "button";
    c.logs.dataset.act = "logs";
    c.actions.append(c.run, c.pause, c.logs);
    row.append(c.status, c.job, c.owner, c.sched, c.last, c.took, c.next, c.trend, c.actions);
    row._c = c;
    return row;
  }

  /** Whether this node may act on `job`, or why not (a sentence). */
  CS.blockedReason = function (job) {
    if (CS.auth && CS.auth.canControl === false) return "this token lacks the control scope";
    if (job.clusterOwner === undefined || !model.nodeName) return null;
    if (job.clusterOwner === null) return "no node runs this job right now (no quorum)";
    if (job.clusterOwner !== model.nodeName) return "runs on node " + job.clusterOwner;
    return null;
  };

  function fill(row, job, index) {
    const c = row._c;
    row._index = index;
    row.dataset.name = job.name;
    row.classList.toggle("sel", job.name === model.selected);
    row.classList.toggle("mine", model.spread && job.clusterOwner === model.nodeName && job.name !== model.selected);
    if (row._job === job && row._rev === job._rev) return;
    row._job = job;
    row._rev = job._rev;
    const st = job._st;
    c.st.className = "status st-" + st.key;
    c.st.textContent = st.label;
    c.late.hidden = !job._late;
    if (job._late) c.late.title = "late: " + job.sla.breaches.map((b) => b.check).join(", ");
    const rr = job.running_resources;
    c.res.textContent = rr ? Math.round(rr.cpu_percent) + "% " + CS.bytes(rr.rss_bytes) : "";
    c.name.textContent = job.name;
    c.cmd.textContent = job.command || "";
    row.title = job.name;
    c.owner.textContent = job.clusterOwner === undefined ? "" : job.clusterOwner === null ? "no quorum" : job.clusterOwner;
    c.sched.textContent = job.schedule;
    c.sched.title = job.description || job.schedule;
    const last = job.last_run;
    c.exit.hidden = !last || last.exit_code === null || last.exit_code === undefined;
    if (last && last.exit_code !== null && last.exit_code !== undefined) {
      c.exit.textContent = "exit " + last.exit_code;
      c.exit.className = "badge " + (last.exit_code === 0 ? "exit0" : "exitN");
      c.exit.title = last.fail_reason || "";
    }
    c.took.textContent = last ? CS.dur(last.duration) : "—";
    const blocked = CS.blockedReason(job);
    c.run.textContent = job.running ? "■ stop" : "▶ run";
    c.run.dataset.act = job.running ? "cancel" : "start";
    c.run.disabled = !!blocked || (!job.running && !job.enabled);
    c.run.title = blocked || (job.running ? "Cancel the running instance (x)" : "Start a run now (r)");
    c.pause.textContent = job.paused ? "resume" : "pause";
    c.pause.dataset.act = job.paused ? "resume" : "pause";
    c.pause.disabled = !!blocked;
    c.pause.title = blocked || (job.paused ? "paused until " + job.paused.until + (job.paused.by ? " by " + job.paused.by : "") : "Pause for one hour (p)");
    drawSpark(c.spark, job.history || []);
    tickRow(row, job, Date.now());
  }

  function tickRow(row, job, now) {
    const c = row._c;
    c.lastAge.textContent = job._last ? CS.ago(job._last, now) : "never";
    c.next.textContent = job.running || job.paused || !job.enabled || !job._next ? "—" : CS.countdown(job._next, now);
  }

  function drawSpark(canvas, history) {
    const w = 80,
      h = 20;
    const ctx = CS.canvas(canvas, w, h);
    ctx.clearRect(0, 0, w, h);
    if (!history.length) return;
    const col = CS.colors();
    const pts = history.slice(-20);
    const max = Math.max(0.001, ...pts.map((p) => p.duration || 0));
    const bw = w / 20;
    pts.forEach((p, i) => {
      const bh = Math.max(2, ((p.duration || 0) / max) * (h - 2));
      ctx.fillStyle =
        p.outcome === "success" ? col.ok : p.outcome === "failure" ? col.fail : p.outcome === "cancelled" ? col.cancel : col.faint;
      ctx.fillRect(i * bw + 0.5, h - bh, bw - 1.5, bh);
    });
  }

  /** Draws the rows in sight; `force` refills them even when unchanged. */
  function draw(force) {
    const vp = CS.$("viewport");
    const rows = CS.$("rows");
    const first = Math.max(0, Math.floor(vp.scrollTop / ROW) - MARGIN);
    const count = Math.ceil(vp.clientHeight / ROW) + 2 * MARGIN;
    const last = Math.min(model.view.length, first + count);
    while (pool.length < last - first) {
      const row = makeRow();
      pool.push(row);
      rows.appendChild(row);
    }
    for (let i = 0; i < pool.length; i++) {
      const row = pool[i];
      const index = first + i;
      if (index >= last) {
        row.hidden = true;
        row._job = null;
        continue;
      }
      row.hidden = false;
      row.style.transform = "translateY(" + index * ROW + "px)";
      if (force || row._index !== index || row._job !== model.view[index]) {
        if (force) row._rev = -1;
        fill(row, model.view[index], index);
      }
    }
  }
  CS.drawRows = draw;

  /** Every second: clocks of the rows in sight. */
  CS.tickRows = function (now) {
    for (const row of pool) if (!row.hidden && row._job) tickRow(row, row._job, now);
  };

  // --- selection and actions --------------------------------------------
  CS.selectedJob = function () {
    return model.selected ? model.byName.get(model.selected) : null;
  };

  CS.select = function (name, reveal) {
    model.selected = name;
    const index = model.view.findIndex((j) => j.name === name);
    if (reveal && index >= 0) {
      const vp = CS.$("viewport");
      const top = index * ROW;
      if (top < vp.scrollTop) vp.scrollTop = top;
      else if (top + ROW > vp.scrollTop + vp.clientHeight) vp.scrollTop = top + ROW - vp.clientHeight;
    }
    for (const row of pool) row.classList.toggle("sel", row.dataset.name === name && !row.hidden);
  };

  CS.moveSelection = function (step) {
    if (!model.view.length) return;
    let index = model.view.findIndex((j) => j.name === model.selected);
    index = index < 0 ? 0 : Math.min(model.view.length - 1, Math.max(0, index + step));
    CS.select(model.view[index].name, true);
  };

  const VERBS = { start: "started", cancel: "cancelled", pause: "paused", resume: "resumed" };

  /** POST /jobs/{name}/{verb}; says how it went and polls soon after. */
  CS.act = async function (name, verb) {
    const job = model.byName.get(name);
    const blocked = job && CS.blockedReason(job);
    if (blocked) {
      CS.toast(name + ": " + blocked, "bad");
      return false;
    }
    const res = await CS.api("/jobs/" + encodeURIComponent(name) + "/" + verb, { method: "POST", json: verb === "pause" ? {} : undefined });
    if (res.ok) {
      const queued = res.data && res.data.queued;
      CS.toast(name + (queued ? ": queued for its pool" : " " + VERBS[verb]), "good");
    } else if (res.status === 403 && CS.auth) {
      if (/scope/.test(res.error || "")) {
        // The token may only look: every control is shown disabled.
        CS.auth.canControl = false;
        draw(true);
        CS.emit("auth");
      }
      CS.toast(name + ": " + res.error, "bad");
    } else if (res.status !== 401) {
      CS.toast(name + ": " + (res.error || "the daemon did not answer"), "bad");
    }
    CS.emit("acted", { name: name, verb: verb, ok: res.ok });
    CS.pollSoon(250);
    return res.ok;
  };

  CS.runFailing = async function () {
    const failing = model.list.filter((j) => j._st.key === "failed" && !CS.blockedReason(j));
    for (const job of failing) {
      await CS.act(job.name, "start");
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  // --- wiring -------------------------------------------------------------
  document.addEventListener("DOMContentLoaded", () => {
    const vp = CS.$("viewport");
    let pending = false;
    vp.addEventListener("scroll", () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        draw(false);
      });
    });
    window.addEventListener("resize", () => draw(false));
    CS.$("rows").addEventListener("click", (ev) => {
      const row = ev.target.closest(".row");
      if (!row) return;
      const name = row.dataset.name;
      const button = ev.target.closest("button[data-act]");
      CS.select(name, false);
      if (!button) {
        CS.openDrawer(name);
        return;
      }
      const act = button.dataset.act;
      if (act === "logs") CS.openDrawer(name, "logs");
      else CS.act(name, act);
    });
    let typing = null;
    CS.$("filter").addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(applyView, model.list.length > 2000 ? 120 : 0);
    });
    const setSeg = (seg) => {
      CS.prefs.seg = seg;
      CS.savePrefs();
      applyView();
    };
    CS.$("seg").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-seg]");
      if (b) setSeg(b.dataset.seg);
    });
    CS.$("pills").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-seg]");
      if (b) setSeg(b.dataset.seg);
    });
    CS.$("sort").addEventListener("change", (ev) => {
      CS.prefs.sort = ev.target.value;
      CS.prefs.desc = false;
      CS.savePrefs();
      applyView();
    });
    CS.$("thead").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-sort]");
      if (!b) return;
      if (CS.prefs.sort === b.dataset.sort) CS.prefs.desc = !CS.prefs.desc;
      else {
        CS.prefs.sort = b.dataset.sort;
        CS.prefs.desc = false;
      }
      CS.savePrefs();
      applyView();
    });
    CS.$("runFailing").addEventListener("click", () => CS.runFailing());
    applyView();
  });
})();
