// cronstable dashboard: the activity heatmap (GET /activity), the
// schedule pressure card (GET /schedule/pressure, /duplicates, /suggest),
// the week calendar (GET /schedule/week) and the cron sandbox (GET
// /schedule/preview).
// A route this daemon does not serve (404) turns its card into a note.
"use strict";
(function () {
  const CS = window.CS;
  const enc = encodeURIComponent;
  const HOUR = 3600000;

  const missing = (body, route) => body.appendChild(CS.el("div", "note", "This daemon does not serve " + route + ", so this card has nothing to show."));

  // --- activity heatmap ----------------------------------------------------
  const heat = { etag: null, data: null, at: 0, rows: [] };
  const OUTCOME_RANK = { failure: 3, cancelled: 2, unknown: 1, success: 0 };

  CS.panels.heat = {
    card: "heatCard",
    refresh: async function (force) {
      if (!force && Date.now() - heat.at < 15000) return;
      heat.at = Date.now();
      const res = await CS.api("/activity", { etag: force ? null : heat.etag });
      if (res.status === 304 && heat.data) return;
      if (!res.ok) {
        if (res.status === 404) missing(CS.clear(CS.$("heatBody")), "GET /activity");
        return;
      }
      heat.etag = res.etag;
      heat.data = res.data.jobs || {};
      renderHeat();
    },
  };

  function renderHeat() {
    const body = CS.clear(CS.$("heatBody"));
    if (!heat.data) return;
    const hours = CS.prefs.heatWindow || 24;
    const end = Date.now();
    const start = end - hours * HOUR;
    const span = (end - start) / 24;
    const rows = [];
    for (const [name, runs] of Object.entries(heat.data)) {
      const cells = new Array(24).fill(null);
      let worst = -1;
      for (const r of runs) {
        const t = CS.parseTime(r.finished_at);
        if (t < start || t > end) continue;
        const i = Math.min(23, Math.floor((t - start) / span));
        const c = cells[i] || (cells[i] = { n: 0, worst: -1, tally: {} });
        c.n++;
        c.tally[r.outcome] = (c.tally[r.outcome] || 0) + 1;
        const rank = OUTCOME_RANK[r.outcome] === undefined ? 1 : OUTCOME_RANK[r.outcome];
        c.worst = Math.max(c.worst, rank);
        worst = Math.max(worst, rank);
      }
      if (worst >= 0) rows.push({ name: name, cells: cells, worst: worst });
    }
    rows.sort((a, b) => b.worst - a.worst || (a.name < b.name ? -1 : 1));
    const shown = rows.slice(0, 400);
    heat.rows = shown;
    CS.$("heatMeta").textContent = rows.length + " jobs ran in the last " + (hours === 168 ? "7 days" : hours + "h") + (rows.length > shown.length ? " · the 400 worst shown" : "");
    if (!shown.length) {
      body.appendChild(CS.el("div", "faint", "No run finished in this window."));
      return;
    }
    const canvas = CS.el("canvas", "grid-canvas");
    body.appendChild(canvas);
    const label = 190,
      rowH = 14;
    const width = Math.max(420, body.clientWidth - 4);
    const cellW = (width - label) / 24;
    const ctx = CS.canvas(canvas, width, shown.length * rowH + 16);
    const col = CS.colors();
    const fills = [col.ok, col.warn, col.cancel, col.fail];
    let maxN = 1;
    for (const r of shown) for (const c of r.cells) if (c) maxN = Math.max(maxN, c.n);
    ctx.font = "11px sans-serif";
    shown.forEach((r, y) => {
      ctx.fillStyle = col.muted;
      ctx.fillText(r.name.length > 28 ? r.name.slice(0, 27) + "…" : r.name, 2, y * rowH + 11);
      r.cells.forEach((c, x) => {
        ctx.globalAlpha = c ? 0.35 + 0.65 * (c.n / maxN) : 1;
        ctx.fillStyle = c ? fills[c.worst] : col.heat0;
        ctx.fillRect(label + x * cellW + 1, y * rowH + 1, cellW - 2, rowH - 2);
      });
    });
    ctx.globalAlpha = 1;
    ctx.fillStyle = col.faint;
    ctx.fillText(new Date(start).toLocaleString(), label, shown.length * rowH + 13);
    ctx.fillText("now", width - 24, shown.length * rowH + 13);
    const at = (ev) => {
      const rect = canvas.getBoundingClientRect();
      const y = Math.floor((ev.clientY - rect.top) / rowH);
      const x = Math.floor((ev.clientX - rect.left - label) / cellW);
      return { row: shown[y], x: x };
    };
    canvas.addEventListener("mousemove", (ev) => {
      const { row, x } = at(ev);
      if (!row || x < 0 || x > 23) return CS.tip(null);
      const c = row.cells[x];
      const from = new Date(start + x * span);
      const text = row.name + "\n" + from.toLocaleString() + " + " + CS.dur(span / 1000) + "\n" + (c ? Object.entries(c.tally).map(([k, v]) => v + " " + (k === "success" ? "ok" : k === "failure" ? "fail" : k)).join(" / ") : "no runs");
      CS.tip(text, ev.clientX, ev.clientY);
    });
    canvas.addEventListener("mouseleave", () => CS.tip(null));
    canvas.addEventListener("click", (ev) => {
      const { row } = at(ev);
      if (row) CS.openDrawer(row.name, "history");
    });
  }

  // --- schedule pressure -----------------------------------------------------
  const pressure = { at: 0, data: null, dups: null, status: 0 };
  const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const zone = () => (CS.prefs.pressureZone === "local" ? localZone() : "UTC");

  CS.panels.pressure = {
    card: "pressureCard",
    refresh: async function (force) {
      if (!force && Date.now() - pressure.at < 60000) return;
      pressure.at = Date.now();
      const [p, d] = await Promise.all([CS.api("/schedule/pressure?hours=24&tz=" + enc(zone())), CS.api("/schedule/duplicates")]);
      pressure.status = p.status;
      pressure.data = p.ok ? p.data : null;
      pressure.dups = d.ok ? d.data : null;
      renderPressure();
    },
  };

  function renderPressure() {
    const body = CS.clear(CS.$("pressureBody"));
    for (const b of CS.$("pressureZone").children) b.classList.toggle("on", b.dataset.zone === CS.prefs.pressureZone);
    const p = pressure.data;
    if (!p) {
      if (pressure.status === 404) missing(body, "GET /schedule/pressure");
      else body.appendChild(CS.el("div", "note bad", "Could not read the schedule pressure (HTTP " + pressure.status + ")."));
      CS.$("pressureMeta").textContent = "";
      return;
    }
    const busiest = p.busiest_minute || {};
    CS.$("pressureMeta").textContent = (p.total_fires || 0) + " fires of " + (p.jobs || 0) + " jobs in " + (p.hours || 24) + "h · busiest :" + CS.pad(busiest.minute || 0) + " (" + (busiest.jobs || 0) + " jobs) · " + (p.timezone || zone());
    const grid = p.grid || [];
    const canvas = CS.el("canvas", "grid-canvas");
    body.appendChild(canvas);
    const left = 28,
      top = 14;
    const width = Math.max(480, Math.min(body.clientWidth - 4, 1100));
    const cw = (width - left) / 60,
      ch = 12;
    const ctx = CS.canvas(canvas, width, top + 24 * ch + 4);
    const col = CS.colors();
    let max = 1;
    for (const row of grid) for (const v of row) max = Math.max(max, v);
    const hot = new Set((p.top_cells || []).map((c) => c.hour + ":" + c.minute));
    ctx.font = "10px sans-serif";
    ctx.fillStyle = col.faint;
    for (let m = 0; m < 60; m += 5) ctx.fillText(":" + CS.pad(m), left + m * cw, 10);
    for (let h = 0; h < 24; h++) {
      ctx.fillStyle = col.faint;
      ctx.fillText(CS.pad(h), 2, top + h * ch + 10);
      for (let m = 0; m < 60; m++) {
        const v = (grid[h] || [])[m] || 0;
        ctx.globalAlpha = v ? 0.25 + 0.75 * (v / max) : 1;
        ctx.fillStyle = v ? col.accent : col.heat0;
        ctx.fillRect(left + m * cw + 0.5, top + h * ch + 0.5, cw - 1, ch - 1);
        ctx.globalAlpha = 1;
        if (hot.has(h + ":" + m)) {
          ctx.strokeStyle = col.fail;
          ctx.strokeRect(left + m * cw + 0.5, top + h * ch + 0.5, cw - 1, ch - 1);
        }
      }
    }
    canvas.addEventListener("mousemove", (ev) => {
      const r = canvas.getBoundingClientRect();
      const m = Math.floor((ev.clientX - r.left - left) / cw);
      const h = Math.floor((ev.clientY - r.top - top) / ch);
      if (m < 0 || m > 59 || h < 0 || h > 23) return CS.tip(null);
      const cell = (p.top_cells || []).find((c) => c.hour === h && c.minute === m);
      CS.tip(CS.pad(h) + ":" + CS.pad(m) + " — " + (((grid[h] || [])[m]) || 0) + " fires" + (cell && cell.jobs ? "\n" + cell.jobs.join(", ") : ""), ev.clientX, ev.clientY);
    });
    canvas.addEventListener("mouseleave", () => CS.tip(null));
    const side = CS.el("div", "pressure-side");
    const hist = CS.el("div");
    hist.appendChild(CS.el("div", "faint", "fires by minute of the hour"));
    const bars = CS.el("div", "bars");
    const byMin = p.by_minute_fires || [];
    const hmax = Math.max(1, ...byMin);
    byMin.forEach((v, m) => {
      const b = CS.el("div", "bar");
      b.style.height = Math.max(1, (v / hmax) * 100) + "%";
      b.title = ":" + CS.pad(m) + " — " + v + " fires, " + ((p.by_minute_jobs || [])[m] || 0) + " jobs";
      bars.appendChild(b);
    });
    hist.appendChild(bars);
    side.appendChild(hist);
    const dup = CS.el("div");
    dup.appendChild(CS.el("div", "faint", "jobs sharing one schedule"));
    const groups = pressure.dups ? pressure.dups.groups || [] : null;
    if (groups === null) dup.appendChild(CS.el("div", "faint", "(GET /schedule/duplicates is not served here)"));
    else if (!groups.length) dup.appendChild(CS.el("div", "faint", "none"));
    for (const g of (groups || []).slice(0, 8)) {
      const line = CS.el("div");
      const code = CS.el("code", null, g.expression);
      code.title = (g.description || "") + " · " + g.timezone;
      line.append(code, " × " + g.count + " ");
      for (const name of g.jobs.slice(0, 12)) {
        const chip = CS.el("button", "chip", name);
        chip.type = "button";
        chip.addEventListener("click", () => CS.openDrawer(name, "schedule"));
        line.appendChild(chip);
      }
      dup.appendChild(line);
    }
    side.appendChild(dup);
    const sug = CS.el("div");
    sug.appendChild(CS.el("div", "faint", "suggest a quiet slot"));
    const out = CS.el("div", "chips");
    for (const period of ["hourly", "daily"]) {
      const b = CS.el("button", "btn small", "suggest " + (period === "hourly" ? "an hourly" : "a daily") + " slot");
      b.type = "button";
      b.addEventListener("click", async () => {
        const res = await CS.api("/schedule/suggest?period=" + period + "&tz=" + enc(zone()));
        CS.clear(out);
        if (!res.ok) {
          out.appendChild(CS.el("span", "faint", res.status === 404 ? "GET /schedule/suggest is not served here" : res.error));
          return;
        }
        for (const expr of [res.data.expression, res.data.hash_hint].filter(Boolean)) {
          const chip = CS.el("button", "chip mono", expr);
          chip.type = "button";
          chip.title = "copy";
          chip.addEventListener("click", () => CS.copy(expr, expr));
          out.appendChild(chip);
        }
        out.appendChild(CS.el("span", "faint", (res.data.fires_in_window || 0) + " fires in that slot today"));
      });
      sug.appendChild(b);
    }
    sug.appendChild(out);
    side.appendChild(sug);
    body.appendChild(side);
  }

  // --- week calendar ------------------------------------------------------------
  // The fires come from GET /schedule/week: the whole fleet's, walked once
  // per distinct schedule on the daemon and grouped by it, so the card
  // covers every job in the filter, whatever their number. The page draws
  // at most WEEK_DAY_CAP chips a day and WEEK_HUM_CAP frequent jobs.
  const WEEK_DAY_CAP = 80;
  const WEEK_HUM_CAP = 60;
  const WEEK_DAYS = 8; // asked for: a week of local days, DST or not
  const week = { at: 0, busy: false, url: null, etag: null, data: null };

  CS.panels.week = {
    card: "weekCard",
    refresh: async function (force) {
      if (week.busy || (!force && Date.now() - week.at < 60000)) return;
      week.busy = true;
      week.at = Date.now();
      try {
        await loadWeek();
      } finally {
        week.busy = false;
      }
    },
  };

  /** The 8 local midnights that bound the next 7 days (true DST lengths). */
  function weekBounds() {
    const d0 = new Date();
    d0.setHours(0, 0, 0, 0);
    const bounds = [];
    for (let i = 0; i <= 7; i++) bounds.push(new Date(d0.getFullYear(), d0.getMonth(), d0.getDate() + i).getTime());
    return bounds;
  }

  async function loadWeek() {
    const bounds = weekBounds();
    const url = "/schedule/week?start=" + enc(new Date(bounds[0]).toISOString()) + "&days=" + WEEK_DAYS + "&max=" + 8 * WEEK_DAYS;
    const res = await CS.api(url, { etag: week.url === url ? week.etag : null });
    if (res.status === 304 && week.data) {
      // the same answer as before
    } else if (res.ok) {
      week.url = url;
      week.etag = res.etag;
      week.data = res.data;
    } else {
      const body = CS.clear(CS.$("weekBody"));
      if (res.status === 404) missing(body, "GET /schedule/week");
      else body.appendChild(CS.el("div", "note", res.error || "no answer from the daemon"));
      return;
    }
    const text = CS.$("filter").value.trim().toLowerCase();
    const jobs = CS.jobs.view.filter((j) => j.enabled && !/^@reboot/.test(j.schedule) && (!text || j._search.indexOf(text) >= 0));
    renderWeek(jobs, week.data, bounds);
  }

  function renderWeek(jobs, data, bounds) {
    const byName = new Map();
    for (const group of data.groups || []) for (const name of group.jobs) byName.set(name, group);
    const start = bounds[0];
    const end = bounds[7];
    const items = [];
    const hum = [];
    let charted = 0;
    for (const job of jobs) {
      const group = byName.get(job.name);
      if (!group) continue;
      if (group.frequent) {
        hum.push(job);
        continue;
      }
      let any = false;
      for (const s of group.fires) {
        const t = s * 1000;
        if (t >= start && t < end) {
          items.push({ job: job, t: t });
          any = true;
        }
      }
      if (any) charted++;
    }
    items.sort((a, b) => a.t - b.t || (a.job.name < b.job.name ? -1 : a.job.name > b.job.name ? 1 : 0));
    const body = CS.clear(CS.$("weekBody"));
    CS.$("icsLink").href = CS.icsHref("/calendar.ics");
    const now = Date.now();
    const PX = 22;
    const cal = CS.el("div", "week");
    cal.appendChild(CS.el("div", "dayhead"));
    for (let d = 0; d < 7; d++) {
      const day = new Date(bounds[d]);
      cal.appendChild(CS.el("div", "dayhead" + (d === 0 ? " today" : ""), day.toLocaleDateString(undefined, { weekday: "short", month: "short", day: "numeric" })));
    }
    const hours = CS.el("div", "hours");
    hours.style.height = 24 * PX + "px";
    for (let h = 0; h < 24; h += 2) {
      const line = CS.el("div", "hr", CS.pad(h) + ":00");
      line.style.top = h * PX + "px";
      hours.appendChild(line);
    }
    cal.appendChild(hours);
    const cols = [];
    const perDay = [];
    for (let d = 0; d < 7; d++) {
      const col = CS.el("div", "col");
      col.style.height = 24 * PX + "px";
      cols.push(col);
      perDay.push([]);
      cal.appendChild(col);
    }
    let day = 0;
    for (const item of items) {
      while (day < 6 && item.t >= bounds[day + 1]) day++;
      perDay[day].push(item);
    }
    for (let d = 0; d < 7; d++) {
      const shown = perDay[d].slice(0, WEEK_DAY_CAP);
      // chips in one quarter hour share the lane's width
      const slots = new Map();
      for (const f of shown) {
        const dt = new Date(f.t);
        const key = dt.getHours() * 4 + Math.floor(dt.getMinutes() / 15);
        if (!slots.has(key)) slots.set(key, []);
        slots.get(key).push(f);
      }
      for (const group of slots.values()) {
        group.forEach((f, i) => {
          const dt = new Date(f.t);
          const chip = CS.el("div", "fire " + CS.hue(f.job.name) + (f.t < now ? " past" : ""), f.job.name);
          chip.style.top = ((dt.getHours() * 60 + dt.getMinutes()) / 60) * PX + "px";
          chip.style.left = (i * 100) / group.length + "%";
          chip.style.width = 100 / group.length + "%";
          chip.title = f.job.name + " · " + dt.toLocaleString() + " · " + f.job.schedule + (f.job.description ? " — " + f.job.description : "");
          chip.addEventListener("click", () => CS.openDrawer(f.job.name, "schedule"));
          cols[d].appendChild(chip);
        });
      }
      if (perDay[d].length > shown.length) {
        const more = CS.el("div", "more faint", "+" + (perDay[d].length - shown.length) + " more");
        more.title = "the first " + WEEK_DAY_CAP + " fires of the day are drawn; filter to choose";
        cols[d].appendChild(more);
      }
    }
    const nowLine = CS.el("div", "now");
    nowLine.style.top = ((new Date(now).getHours() * 60 + new Date(now).getMinutes()) / 60) * PX + "px";
    cols[0].appendChild(nowLine);
    body.appendChild(cal);
    if (hum.length) {
      const strip = CS.el("div", "hum");
      strip.appendChild(CS.el("span", "faint", "background hum (more than 8 fires a day):"));
      for (const job of hum.slice(0, WEEK_HUM_CAP)) {
        const chip = CS.el("button", "chip", job.name + " · " + job.schedule);
        chip.type = "button";
        chip.addEventListener("click", () => CS.openDrawer(job.name, "schedule"));
        strip.appendChild(chip);
      }
      if (hum.length > WEEK_HUM_CAP) strip.appendChild(CS.el("span", "faint", "+" + (hum.length - WEEK_HUM_CAP) + " more"));
      body.appendChild(strip);
    }
    CS.$("weekMeta").textContent = items.length + " fires of " + charted + " jobs" + (hum.length ? " + " + hum.length + " frequent" : "") + " of " + jobs.length + " in view, your time";
  }


  // --- cron sandbox ----------------------------------------------------------
  const FIELDS = {
    5: ["minute", "hour", "day", "month", "weekday"],
    6: ["second", "minute", "hour", "day", "month", "weekday"],
    7: ["second", "minute", "hour", "day", "month", "weekday", "year"],
  };
  let sbTimer = null;
  let sbSeq = 0;

  CS.panels.sandbox = { card: "sandboxCard", refresh: () => {} };

  async function runSandbox() {
    const expr = CS.$("sbExpr").value.trim();
    const tz = CS.$("sbTz").value.trim() || "UTC";
    const out = CS.clear(CS.$("sbOut"));
    if (!expr) {
      out.appendChild(CS.el("div", "faint", "Type a 5-, 6- or 7-field expression or a @macro."));
      return;
    }
    const seq = ++sbSeq;
    const res = await CS.api("/schedule/preview?expr=" + enc(expr) + "&tz=" + enc(tz) + "&limit=12" + (/H/.test(expr) ? "&seed=sandbox" : ""));
    if (seq !== sbSeq) return;
    if (!res.ok) {
      out.appendChild(CS.el("div", "note bad", res.error));
      return;
    }
    const p = res.data;
    if (!p.valid) {
      out.appendChild(CS.el("div", "note bad", "invalid: " + p.error));
      return;
    }
    remember(expr);
    if (p.reboot) {
      out.appendChild(CS.el("div", "note", "@reboot runs once when the daemon starts; it has no fire times."));
      return;
    }
    out.appendChild(CS.el("div", "note", p.description || "valid (this daemon gives no plain-English reading)"));
    const parts = (p.resolved || p.normalized || expr).split(/\s+/);
    const names = FIELDS[parts.length];
    if (names) {
      const f = CS.el("div", "fields");
      f.style.gridTemplateColumns = "repeat(" + names.length + ", auto)";
      for (const n of names) f.appendChild(CS.el("span", "fh", n));
      for (const v of parts) f.appendChild(CS.el("span", null, v));
      out.appendChild(f);
    }
    for (const l of p.lint || []) out.appendChild(CS.el("div", "note warn", (l.code ? l.code + ": " : "") + (l.message || "")));
    if (p.never_fires) {
      out.appendChild(CS.el("div", "note bad", "This expression never fires: no date matches it."));
    } else {
      const list = CS.el("ol", "fires");
      const now = Date.now();
      for (const iso of p.fires) {
        const t = CS.parseTime(iso);
        list.appendChild(CS.el("li", null, iso.replace("T", " ") + "   ·   yours " + CS.wall(t) + "   ·   " + CS.countdown(t, now)));
      }
      out.appendChild(list);
    }
    const same = CS.jobs.list.filter((j) => j.schedule.trim() === expr || j.schedule_resolved === (p.normalized || expr));
    if (same.length) {
      const line = CS.el("div", "chips");
      line.appendChild(CS.el("span", "faint", same.length + " of your jobs use it:"));
      for (const j of same.slice(0, 20)) line.appendChild(CS.jobLink(j.name));
      out.appendChild(line);
    }
  }

  function remember(expr) {
    const recent = (CS.prefs.recent || []).filter((e) => e !== expr);
    recent.unshift(expr);
    CS.prefs.recent = recent.slice(0, 8);
    CS.savePrefs();
    renderRecent();
  }

  function renderRecent() {
    const box = CS.clear(CS.$("sbRecent"));
    for (const expr of CS.prefs.recent || []) {
      const chip = CS.el("button", "chip mono", expr);
      chip.type = "button";
      chip.addEventListener("click", () => {
        CS.$("sbExpr").value = expr;
        runSandbox();
      });
      box.appendChild(chip);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    CS.$("heatWindow").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-win]");
      if (!b) return;
      CS.prefs.heatWindow = Number(b.dataset.win);
      CS.savePrefs();
      for (const x of CS.$("heatWindow").children) x.classList.toggle("on", x === b);
      renderHeat();
    });
    for (const x of CS.$("heatWindow").children) x.classList.toggle("on", Number(x.dataset.win) === CS.prefs.heatWindow);
    CS.$("pressureZone").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-zone]");
      if (!b) return;
      CS.prefs.pressureZone = b.dataset.zone;
      CS.savePrefs();
      CS.panels.pressure.refresh(true);
    });
    const schedule = () => {
      clearTimeout(sbTimer);
      sbTimer = setTimeout(runSandbox, 300);
    };
    CS.$("sbExpr").addEventListener("input", schedule);
    CS.$("sbTz").addEventListener("input", schedule);
    CS.$("sbTz").value = localZone();
    const zones = Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [];
    const list = CS.$("tzList");
    for (const z of ["UTC"].concat(zones)) {
      const o = CS.el("option");
      o.value = z;
      list.appendChild(o);
    }
    renderRecent();
    CS.on("theme", () => {
      if (CS.panelOpen("heat")) renderHeat();
      if (CS.panelOpen("pressure")) renderPressure();
    });
  });
})();
