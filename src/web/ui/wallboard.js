// cronstable dashboard: the wallboard (`w`, or the page opened at #tv).
// Every job as a tile over the whole window, worst first, with the one
// fact a viewer across the room looks for (when it failed and how, how
// long it has run, or when it fires next), a headline while anything
// fails, a tally at the foot, and a loud NO SIGNAL banner when the polls
// stop answering: with the header hidden, a frozen board must not pass
// for a healthy one. It reads nothing of its own: the job poll feeds it.
"use strict";
(function () {
  const CS = window.CS;
  // Worst first: failing, running, late, paused, then the rest.
  const ORDER = { failed: 0, unknown: 1, running: 2, paused: 4, cancelled: 5, pending: 6, ok: 7, disabled: 8 };
  const wb = { open: false, seenRunning: new Map() };
  const MAX_TILES = 400;
  // The zen screensaver: after this many idle seconds on an all-clear
  // board (CS.prefs.zenDelay overrides; 0 turns it off).
  const ZEN_DELAY = 30;
  wb.lastInput = 0;
  wb.zen = false;

  const rank = (job) => (job._st.key === "ok" && job._late ? 3 : ORDER[job._st.key] === undefined ? 1 : ORDER[job._st.key]);

  /** The headline for the failing jobs, or "" when none fails. */
  function verdict(failing) {
    if (!failing.length) return "";
    if (failing.length === 1) {
      const j = failing[0];
      const last = j.last_run || {};
      return "JOB FAILING — " + j.name + (last.exit_code !== null && last.exit_code !== undefined ? " · exit " + last.exit_code : "") + (last.fail_reason ? " · " + last.fail_reason : "");
    }
    const byExit = new Map();
    for (const j of failing) {
      const code = j.last_run ? j.last_run.exit_code : null;
      byExit.set(code, (byExit.get(code) || 0) + 1);
    }
    let best = null;
    let count = 0;
    for (const [code, n] of byExit) if (n > count) [best, count] = [code, n];
    if (count >= 2) return "FLEET EVENT — " + failing.length + " jobs failing, " + count + " share exit=" + best + (count * 2 > failing.length ? " — likely one cause" : "");
    return failing.length + " jobs failing — likely independent";
  }
  CS.wallVerdict = verdict;

  /** The tile's glance line. */
  function glance(job, now) {
    const st = job._st.key;
    const last = job.last_run;
    if (st === "failed") return "failed " + CS.ago(job._last, now) + (last && last.exit_code !== null && last.exit_code !== undefined ? " · exit " + last.exit_code : "");
    if (st === "running") {
      const since = wb.seenRunning.get(job.name) || now;
      return "running " + CS.dur((now - since) / 1000);
    }
    if (st === "paused") return "paused" + (job.paused && job.paused.until ? " until " + CS.wall(CS.parseTime(job.paused.until)) : "");
    if (st === "disabled") return "disabled";
    return job._next ? "next " + CS.countdown(job._next, now) : "no next fire";
  }

  /** Whether a running job has outrun its longest recent run by half. */
  function overrunning(job, now) {
    const since = wb.seenRunning.get(job.name);
    const longest = Math.max(0, ...(job.history || []).map((h) => h.duration || 0));
    return !!since && longest > 0 && (now - since) / 1000 > longest * 1.5;
  }

  function render() {
    if (!wb.open) return;
    const now = Date.now();
    const jobs = CS.jobs.list.slice().sort((a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : 1));
    const grid = CS.clear(CS.$("wbGrid"));
    grid.classList.toggle("compact", jobs.length > 48);
    grid.classList.toggle("few", jobs.length <= 6);
    // More tiles than any screen shows are not built at all (ten thousand
    // jobs would cost a second per redraw); they count as offscreen.
    // The smallest tile is 150 × 74 pixels: no more than that many fit.
    const fit = Math.min(MAX_TILES, Math.ceil(window.innerWidth / 150) * Math.ceil(window.innerHeight / 74));
    const beyond = jobs.slice(fit).map((j) => j.name);
    for (const job of jobs.slice(0, fit)) {
      const tile = CS.el("button", "wb-tile t-" + job._st.key);
      tile.type = "button";
      tile.dataset.name = job.name;
      if (job._late) tile.classList.add("late");
      if (job._st.key === "running" && overrunning(job, now)) tile.classList.add("overrun");
      const head = CS.el("div", "wb-head");
      head.append(CS.el("span", "status st-" + job._st.key, job._st.label));
      if (job._late) head.append(CS.el("span", "badge late", "OVERDUE"));
      tile.append(head, CS.el("div", "wb-name", job.name), CS.el("div", "wb-glance mono", glance(job, now)));
      const bars = CS.el("div", "wb-spark");
      for (const h of (job.history || []).slice(-20)) {
        const b = CS.el("i", h.outcome);
        b.style.height = Math.max(10, Math.min(100, (h.duration || 0) / Math.max(0.001, ...(job.history || []).map((x) => x.duration || 0)) * 100)) + "%";
        bars.appendChild(b);
      }
      tile.appendChild(bars);
      tile.addEventListener("click", () => {
        toggle(false);
        CS.select(job.name, true);
        CS.openDrawer(job.name);
      });
      grid.appendChild(tile);
    }
    // Cut what does not fit from the tail (the healthiest) and say so.
    const cut = beyond;
    const limit = grid.clientHeight;
    for (const tile of Array.from(grid.children).reverse()) {
      if (tile.offsetTop + tile.offsetHeight <= limit + 1) break;
      cut.push(tile.dataset.name);
      tile.hidden = true;
    }
    const failing = jobs.filter((j) => j._st.key === "failed");
    const head = CS.$("wbVerdict");
    head.textContent = verdict(failing);
    head.hidden = !failing.length;
    const count = (key) => jobs.filter((j) => j._st.key === key).length;
    const parts = [jobs.length + " jobs", count("failed") + " failing", count("running") + " running", count("paused") + " paused", count("ok") + " ok"];
    const late = jobs.filter((j) => j._late).length;
    if (late) parts.push(late + " overdue");
    CS.$("wbTally").textContent = parts.join(" · ");
    const off = CS.$("wbOff");
    const cutFailing = cut.filter((n) => CS.jobs.byName.get(n)._st.key === "failed").length;
    off.hidden = !cut.length;
    off.textContent = "+" + cut.length + " offscreen · " + (cutFailing ? cutFailing + " failing" : "none failing");
    tick();
  }

  /** Every second: the clock, the glance lines and the signal banner. */
  function tick() {
    if (!wb.open) return;
    const now = new Date();
    CS.$("wbClock").textContent = CS.pad(now.getUTCHours()) + ":" + CS.pad(now.getUTCMinutes()) + ":" + CS.pad(now.getUTCSeconds()) + " UTC";
    for (const tile of CS.$("wbGrid").children) {
      const job = CS.jobs.byName.get(tile.dataset.name);
      if (job) tile.querySelector(".wb-glance").textContent = glance(job, now.getTime());
    }
    // The header's indicator judges freshness (no answer for 15 s or three
    // intervals, or a failed poll); the board repeats it in large.
    const conn = CS.$("conn");
    const stale = !conn.classList.contains("live");
    const banner = CS.$("wbSignal");
    banner.hidden = !stale;
    const last = CS.lastOk ? CS.lastOk() : 0;
    banner.textContent = "▚ NO SIGNAL" + (last ? " — last answer " + CS.ago(last, now.getTime()) : "");
    CS.$("wallboard").classList.toggle("stale", stale);
    zenTick(now.getTime(), stale);
  }

  // --- zen ----------------------------------------------------------------
  /** Whether the board is all clear: data fresh, nothing failing or late. */
  function allClear(stale) {
    return !stale && CS.jobs.loaded && CS.jobs.list.length > 0 && !CS.jobs.list.some((j) => j._st.key === "failed" || j._st.key === "unknown" || j._late);
  }

  function zenTick(now, stale) {
    const delay = CS.prefs.zenDelay === undefined ? ZEN_DELAY : Number(CS.prefs.zenDelay);
    const due = delay > 0 && allClear(stale) && now - wb.lastInput >= delay * 1000;
    // Never an all-clear on unverified data: stale or failing wakes it.
    if (due !== wb.zen) {
      wb.zen = due;
      CS.$("wbZen").hidden = !due;
      if (due) buildZen();
    }
    if (wb.zen) pulseZen(now);
  }

  function buildZen() {
    const field = CS.clear(CS.$("zenField"));
    for (const job of CS.jobs.list.filter((j) => j.enabled).slice(0, MAX_TILES)) {
      const dot = CS.el("i", CS.hue(job.name));
      dot.dataset.name = job.name;
      dot.title = job.name;
      field.appendChild(dot);
    }
  }

  /** A dot flashes as its job's fire time arrives; the subtitle names the next. */
  function pulseZen(now) {
    let next = null;
    for (const dot of CS.$("zenField").children) {
      const job = CS.jobs.byName.get(dot.dataset.name);
      const at = job ? job._next : 0;
      dot.classList.toggle("fire", !!at && now >= at - 500 && now < at + 1500);
      if (job && at > now && (!next || at < next._next)) next = job;
    }
    const armed = CS.$("zenField").children.length;
    CS.$("zenSub").textContent = armed + " job" + (armed === 1 ? "" : "s") + " armed" + (next ? " · next: " + next.name + " " + CS.countdown(next._next, now) : "");
  }

  /** Any input on the board wakes it (and restarts the idle clock). */
  function wake() {
    wb.lastInput = Date.now();
    if (wb.zen) {
      wb.zen = false;
      CS.$("wbZen").hidden = true;
    }
  }

  function toggle(on) {
    wb.open = on === undefined ? !wb.open : on;
    CS.$("wallboard").hidden = !wb.open;
    document.documentElement.classList.toggle("tv", wb.open);
    wake();
    if (wb.open) {
      if (location.hash !== "#tv") history.replaceState(null, "", "#tv");
      render();
    } else if (location.hash === "#tv") history.replaceState(null, "", location.pathname + location.search);
  }
  CS.wallboard = { toggle: toggle, isOpen: () => wb.open, zen: () => wb.zen };

  CS.on("jobs", (model) => {
    const now = Date.now();
    for (const job of model.list) {
      if (job.running) {
        if (!wb.seenRunning.has(job.name)) wb.seenRunning.set(job.name, now);
      } else wb.seenRunning.delete(job.name);
    }
    render();
  });

  document.addEventListener("DOMContentLoaded", () => {
    // Ahead of the page's own keys: while the board is up, only its keys
    // (and the palette's chords) act; the hidden table must not.
    document.addEventListener(
      "keydown",
      (ev) => {
        if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
        if (!CS.$("palette").hidden || !CS.$("tokenDialog").hidden) return;
        const inField = /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName);
        if (wb.open) {
          const asleep = wb.zen;
          wake();
          if (!asleep && (ev.key === "Escape" || ev.key === "w")) toggle(false);
          ev.preventDefault();
          ev.stopPropagation();
        } else if (ev.key === "w" && !inField) {
          ev.preventDefault();
          ev.stopPropagation();
          toggle(true);
        }
      },
      true
    );
    window.addEventListener("hashchange", () => {
      if (location.hash === "#tv" && !wb.open) toggle(true);
    });
    window.addEventListener("resize", () => wb.open && render());
    for (const kind of ["pointermove", "pointerdown", "wheel"]) {
      CS.$("wallboard").addEventListener(kind, wake, { passive: true });
    }
    if (location.hash === "#tv") toggle(true);
    setInterval(tick, 1000);
  });
})();
