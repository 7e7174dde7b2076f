// cronstable dashboard: the drawer's Resources and Schedule tabs.
// Resources reads GET /jobs/{name}/resources when shown and, while an
// instance is live, again at the chosen pace; Schedule asks the daemon's
// own engine (GET /schedule/preview) for the next fires in the job's zone.
"use strict";
(function () {
  const CS = window.CS;
  const enc = encodeURIComponent;
  const D = () => CS.drawer;

  // --- resources -------------------------------------------------------------
  const PACES = [1000, 2000, 5000, 10000];
  let pace = 2000;
  let pick = null;

  CS.loadResources = async function () {
    const d = D();
    const name = d.name;
    clearTimeout(d.resTimer);
    const res = await CS.api("/jobs/" + enc(name) + "/resources");
    if (d.name !== name || d.tab !== "resources") return;
    d.res = res.ok ? res.data : null;
    renderResources(res);
    if (res.ok && (res.data.live || []).length) {
      d.resTimer = setTimeout(CS.loadResources, pace);
    }
  };

  function renderResources(res) {
    const pane = CS.clear(CS.$("paneResources"));
    if (!res.ok) {
      pane.appendChild(CS.el("div", "note bad", "Could not read the resources: " + res.error));
      return;
    }
    const data = res.data;
    const live = data.live || [];
    const runs = (data.runs || []).slice().reverse();
    if (!data.monitored && !runs.length) {
      const note = CS.el("div", "note");
      note.append("This job does not record its CPU and memory. Add ", CS.el("code", null, "monitorResources: true"), " to its configuration to chart them here.");
      pane.appendChild(note);
      return;
    }
    const options = live.map((inst, i) => ({ key: "live:" + i, label: "▶ live pid " + inst.pid, series: inst.series || [], live: inst }));
    for (const [i, run] of runs.entries()) {
      const st = CS.statusOf({ enabled: true, last_run: run });
      options.push({ key: "run:" + i, label: (st.key === "ok" ? "● " : st.key === "failed" ? "✕ " : "○ ") + CS.ago(CS.parseTime(run.finished_at)), series: (run.resources && run.resources.series) || [], run: run });
    }
    if (!options.length) {
      pane.appendChild(CS.el("div", "note", "No run has been sampled yet. The charts appear once a run starts (sampled every " + data.interval + "s)."));
      return;
    }
    if (!pick || !options.some((o) => o.key === pick)) pick = options[0].key;
    const chosen = options.find((o) => o.key === pick);
    const bar = CS.el("div", "chips");
    for (const o of options) {
      const chip = CS.el("button", "chip" + (o.key === pick ? " on" : ""), o.label);
      chip.type = "button";
      chip.addEventListener("click", () => {
        pick = o.key;
        renderResources(res);
      });
      bar.appendChild(chip);
    }
    if (live.length) {
      const sel = CS.el("select");
      sel.title = "Refresh pace while a run is live";
      for (const p of PACES) {
        const opt = CS.el("option", null, p / 1000 + "s");
        opt.value = p;
        opt.selected = p === pace;
        sel.appendChild(opt);
      }
      sel.addEventListener("change", () => {
        pace = Number(sel.value);
        CS.loadResources();
      });
      bar.appendChild(sel);
    }
    pane.appendChild(bar);
    const summary = CS.el("div", "muted");
    if (chosen.live) {
      const cur = chosen.live.current || {};
      summary.textContent = "live since " + CS.ago(CS.parseTime(chosen.live.started_at)).replace(" ago", "") + " · cpu " + (cur.cpu_percent || 0).toFixed(1) + "% · mem " + CS.bytes(cur.rss_bytes) + " · cpu used " + CS.dur(cur.cpu_seconds || 0) + " · sampled every " + data.interval + "s";
    } else {
      const r = chosen.run;
      const rs = r.resources || {};
      summary.textContent = r.outcome + " · took " + CS.dur(r.duration) + " · cpu time " + CS.dur(rs.cpu_total_seconds || 0) + " · peak " + CS.bytes(rs.max_rss_bytes) + " · " + (rs.samples || 0) + " samples";
    }
    pane.appendChild(summary);
    pane.appendChild(CS.el("div", "faint", "CPU %"));
    const cpu = CS.el("canvas", "chart");
    pane.appendChild(cpu);
    pane.appendChild(CS.el("div", "faint", "memory (RSS)"));
    const mem = CS.el("canvas", "chart");
    pane.appendChild(mem);
    const col = CS.colors();
    lineChart(cpu, chosen.series, 1, col.accent, (v) => v.toFixed(0) + "%");
    lineChart(mem, chosen.series, 2, col.pend, CS.bytes);
    if (runs.length > 1) {
      pane.appendChild(CS.el("div", "faint", "per run: cpu time (top) and peak memory (bottom), newest on the right"));
      for (const key of ["cpu_total_seconds", "max_rss_bytes"]) {
        const strip = CS.el("div", "bars");
        const values = runs.slice().reverse().map((r) => (r.resources && r.resources[key]) || 0);
        const max = Math.max(1e-9, ...values);
        runs.slice().reverse().forEach((r, i) => {
          const b = CS.el("div", "bar " + r.outcome);
          b.style.height = Math.max(3, (values[i] / max) * 100) + "%";
          b.title = (key === "max_rss_bytes" ? CS.bytes(values[i]) : CS.dur(values[i])) + " · " + r.finished_at;
          b.addEventListener("click", () => {
            pick = "run:" + (runs.length - 1 - i);
            renderResources(res);
          });
          strip.appendChild(b);
        });
        pane.appendChild(strip);
      }
    }
  }

  /** A line chart of column `col` of `series` ([t, cpu, rss] points). */
  function lineChart(canvas, series, col, colour, label) {
    const width = canvas.parentElement.clientWidth - 2 || 600;
    const height = 120;
    const ctx = CS.canvas(canvas, width, height);
    const c = CS.colors();
    ctx.fillStyle = c.faint;
    ctx.font = "10px sans-serif";
    if (series.length < 2) {
      ctx.fillText(series.length ? "one sample so far" : "no samples", 10, 20);
      return;
    }
    const t0 = series[0][0],
      t1 = series[series.length - 1][0];
    const max = Math.max(1e-9, ...series.map((p) => p[col]));
    const x = (t) => 40 + ((t - t0) / Math.max(1e-9, t1 - t0)) * (width - 50);
    const y = (v) => height - 14 - (v / max) * (height - 26);
    ctx.strokeStyle = c.line;
    ctx.beginPath();
    ctx.moveTo(40, y(0));
    ctx.lineTo(width - 10, y(0));
    ctx.stroke();
    ctx.fillText(label(max), 2, 12);
    ctx.fillText(CS.dur(t1 - t0), width - 50, height - 2);
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    series.forEach((p, i) => (i ? ctx.lineTo(x(p[0]), y(p[col])) : ctx.moveTo(x(p[0]), y(p[col]))));
    ctx.stroke();
  }

  // --- schedule ----------------------------------------------------------------
  /** The query /schedule/preview needs for `job`, or null (no zone to ask in). */
  CS.previewQuery = function (job, limit) {
    const expr = job.schedule_resolved || job.schedule;
    const tz = job.timezone || (job.utc === false ? null : "UTC");
    if (!tz) return null;
    return "/schedule/preview?expr=" + enc(expr) + "&tz=" + enc(tz) + "&limit=" + (limit || 12) + "&seed=" + enc(job.name);
  };

  CS.loadSchedule = async function () {
    const d = D();
    const name = d.name;
    const job = CS.jobs.byName.get(name);
    const pane = CS.clear(CS.$("paneSchedule"));
    if (!job) return;
    const head = CS.el("div");
    head.appendChild(CS.el("code", null, job.schedule));
    const desc = CS.el("div", "muted");
    head.appendChild(desc);
    pane.appendChild(head);
    const fires = CS.el("div");
    pane.appendChild(fires);
    const kv = CS.el("dl", "kv");
    const row = (k, v) => {
      kv.append(CS.el("dt", null, k), v instanceof Node ? v : CS.el("dd", null, v));
    };
    row("enabled", job.enabled ? "yes" : "no (enabled: false)");
    row("timezone", job.timezone || (job.utc === false ? "the host's local time" : "UTC"));
    if (job.schedule_resolved) row("resolved", job.schedule_resolved);
    row("next fire", job._next ? new Date(job._next).toLocaleString() + " (" + CS.countdown(job._next) + ")" : "—");
    if (job.clusterPolicy) row("cluster policy", job.clusterPolicy);
    if (job.concurrencyScope) row("concurrency scope", job.concurrencyScope);
    row("captures", [job.captureStdout ? "stdout" : "", job.captureStderr ? "stderr" : ""].filter(Boolean).join(" + ") || "nothing");
    row("command", job.command);
    const feed = CS.el("dd");
    const link = CS.el("a", "link", "⤓ this job's .ics feed");
    link.href = CS.icsHref("/jobs/" + enc(name) + "/calendar.ics");
    feed.appendChild(link);
    row("calendar", feed);
    pane.appendChild(kv);
    for (const f of job.schedule_findings || []) {
      pane.appendChild(CS.el("div", "note warn", (f.code ? f.code + ": " : "") + (f.message || JSON.stringify(f))));
    }
    if (job.description) desc.textContent = job.description;
    if (job.schedule === "@reboot" || /^@reboot\b/.test(job.schedule)) {
      fires.appendChild(CS.el("div", "note", "Runs once when the daemon starts; no scheduled fires."));
      return;
    }
    const query = CS.previewQuery(job, 12);
    if (!query) {
      fires.appendChild(CS.el("div", "note", "This job follows the daemon host's local time, which the browser cannot preview; its next fire is shown above."));
      return;
    }
    const res = await CS.api(query);
    if (d.name !== name) return;
    if (!res.ok || !res.data.valid) {
      fires.appendChild(CS.el("div", "note bad", "The daemon could not preview this schedule: " + (res.error || res.data.error)));
      return;
    }
    d.preview = res.data;
    if (!job.description) desc.textContent = res.data.description || "(this daemon gives no plain-English reading of schedules)";
    CS.drawerInternals.renderHead();
    if (res.data.never_fires) {
      fires.appendChild(CS.el("div", "note bad", "This schedule never fires: no date matches it (such as 31 February)."));
      return;
    }
    fires.appendChild(CS.el("div", "faint", "next fires: your time · the job's zone (" + res.data.timezone + ")"));
    const list = CS.el("ol", "fires");
    const now = Date.now();
    for (const iso of res.data.fires) {
      const at = CS.parseTime(iso);
      list.appendChild(CS.el("li", null, CS.wall(at) + "   ·   " + iso.replace("T", " ") + "   ·   " + CS.countdown(at, now)));
    }
    fires.appendChild(list);
  };

  /** A feed URL with the tab's token, for calendar apps that send no header. */
  CS.icsHref = function (path) {
    const token = CS.token();
    return path + (token ? "?token=" + enc(token) : "");
  };
})();
