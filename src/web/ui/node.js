// cronstable dashboard: the node meter in the header (this host's CPU and
// memory from GET /node, read along with the job poll) and the node card
// it opens (the background-sampled ring of GET /node/history, charted).
// A host the daemon cannot read (`resources: null`, off Linux) or a
// daemon without the route keeps the meter hidden, and the card with it.
"use strict";
(function () {
  const CS = window.CS;

  const node = { readable: false, checked: 0, history: null, historyAt: 0 };
  CS.node = node;

  /** The meter's class for a percentage: calm, busy or hot. */
  const level = (pct) => (pct >= 90 ? "hot" : pct >= 70 ? "busy" : "calm");

  function setBar(id, pct, text) {
    const bar = CS.$(id);
    const value = Math.max(0, Math.min(100, Number(pct) || 0));
    bar.querySelector("i").style.width = value.toFixed(1) + "%";
    bar.className = "nm-bar " + level(value);
    bar.querySelector("b").textContent = text;
  }

  function renderMeter(data) {
    const meter = CS.$("nodeMeter");
    const r = data && data.resources;
    if (!r) {
      node.readable = false;
      meter.hidden = true;
      CS.syncPanels();
      return;
    }
    const was = node.readable;
    node.readable = true;
    meter.hidden = false;
    setBar("nmCpu", r.cpu_percent, Math.round(r.cpu_percent || 0) + "%");
    setBar("nmMem", r.mem_percent, Math.round(r.mem_percent || 0) + "%");
    meter.title =
      (data.node_name || "this node") +
      ": CPU " +
      (r.cpu_percent || 0).toFixed(1) +
      "% of " +
      (r.cpu_count || "?") +
      " CPU" +
      (r.cpu_count === 1 ? "" : "s") +
      " · memory " +
      CS.bytes(r.mem_used_bytes) +
      " of " +
      CS.bytes(r.mem_total_bytes) +
      " (" +
      (r.mem_percent || 0).toFixed(1) +
      "%) · the daemon " +
      CS.bytes(r.proc_rss_bytes) +
      ", " +
      (r.proc_cpu_percent || 0).toFixed(1) +
      "% CPU · click for the history";
    node.name = data.node_name;
    if (!was) CS.syncPanels();
  }

  // The meter rides the job poll, at most every 2 s (the daemon reads
  // /proc for each answer).
  CS.panels.nodemeter = {
    always: true,
    shown: () => false,
    refresh: async function (force) {
      const now = Date.now();
      if (!force && now - node.checked < 2000) return;
      node.checked = now;
      const res = await CS.api("/node");
      if (res.ok && res.data) renderMeter(res.data);
      else if (res.status === 404) renderMeter(null);
    },
  };

  // --- the node card --------------------------------------------------------
  CS.panels.node = {
    card: "nodeCard",
    shown: () => node.readable,
    refresh: async function (force) {
      const every = Math.max(2000, ((node.history && node.history.interval) || 5) * 1000);
      if (!force && Date.now() - node.historyAt < every) return;
      node.historyAt = Date.now();
      const res = await CS.api("/node/history");
      const body = CS.clear(CS.$("nodeBody"));
      if (res.status === 404) {
        body.appendChild(CS.el("div", "note", "This daemon does not serve GET /node/history."));
        return;
      }
      if (!res.ok || !res.data) {
        body.appendChild(CS.el("div", "note bad", "GET /node/history failed: " + (res.error || "no answer")));
        return;
      }
      node.history = res.data;
      renderHistory(res.data, body);
    },
  };

  function renderHistory(h, body) {
    const points = h.points || [];
    CS.$("nodeMeta").textContent = (h.node_name || "") + (h.enabled ? " · " + points.length + " samples, every " + h.interval + "s" : "");
    if (!h.enabled) {
      const note = CS.el("div", "note");
      note.append("The node history is off (", CS.el("code", null, "web.nodeHistory: false"), "). The meter above still reads the node live.");
      body.appendChild(note);
      return;
    }
    const last = points[points.length - 1];
    const peak = (col) => points.reduce((m, p) => Math.max(m, p[col] || 0), 0);
    const avg = (col) => (points.length ? points.reduce((s, p) => s + (p[col] || 0), 0) / points.length : 0);
    const kv = CS.el("dl", "kv");
    const row = (k, v) => kv.append(CS.el("dt", null, k), CS.el("dd", "mono", v));
    if (last) {
      row("now", "CPU " + last[1].toFixed(1) + "% · memory " + last[2].toFixed(1) + "%");
      row("average", "CPU " + avg(1).toFixed(1) + "% · memory " + avg(2).toFixed(1) + "%");
      row("peak", "CPU " + peak(1).toFixed(1) + "% · memory " + peak(2).toFixed(1) + "%");
      row("span", CS.dur(last[0] - points[0][0]) + " (kept in memory, lost on restart)");
    }
    body.appendChild(kv);
    const col = CS.colors();
    for (const [label, index, colour] of [
      ["CPU %", 1, col.accent],
      ["memory %", 2, col.pend],
    ]) {
      body.appendChild(CS.el("div", "faint", label));
      const canvas = CS.el("canvas", "chart node-chart");
      canvas.dataset.series = label;
      body.appendChild(canvas);
      percentChart(canvas, points, index, colour);
    }
  }

  /** A 0–100 % line chart of column `col` of `points` ([t, cpu, mem]). */
  function percentChart(canvas, points, col, colour) {
    const width = Math.max(200, canvas.parentElement.clientWidth - 26);
    const height = 110;
    const ctx = CS.canvas(canvas, width, height);
    const c = CS.colors();
    ctx.font = "10px sans-serif";
    ctx.fillStyle = c.faint;
    const left = 34,
      right = width - 8,
      top = 6,
      bottom = height - 14;
    const y = (v) => bottom - (Math.max(0, Math.min(100, v)) / 100) * (bottom - top);
    ctx.strokeStyle = c.line;
    ctx.lineWidth = 1;
    for (const v of [0, 50, 100]) {
      ctx.beginPath();
      ctx.moveTo(left, y(v));
      ctx.lineTo(right, y(v));
      ctx.stroke();
      ctx.fillText(v + "%", 2, y(v) + 3);
    }
    if (points.length < 2) {
      ctx.fillText(points.length ? "one sample so far" : "no samples yet", left + 6, top + 14);
      return;
    }
    const t0 = points[0][0],
      t1 = points[points.length - 1][0];
    const x = (t) => left + ((t - t0) / Math.max(1e-9, t1 - t0)) * (right - left);
    ctx.fillText(CS.dur(t1 - t0) + " ago", left, height - 2);
    ctx.fillText("now", right - 20, height - 2);
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    points.forEach((p, i) => (i ? ctx.lineTo(x(p[0]), y(p[col])) : ctx.moveTo(x(p[0]), y(p[col]))));
    ctx.stroke();
  }

  document.addEventListener("DOMContentLoaded", () => {
    CS.$("nodeMeter").addEventListener("click", () => CS.togglePanel("node"));
  });
})();
