// cronstable dashboard: the optional cards. Each card registers how it
// refreshes; main.js asks the open ones on every poll and each decides
// whether its data is due. This file holds the cluster, fleet and
// Kubernetes cards; charts.js the heatmap, pressure, week and sandbox.
"use strict";
(function () {
  const CS = window.CS;

  /** name -> {card, refresh(force), shown()}; `shown` says whether the card is offered at all. */
  CS.panels = {};

  CS.panelOpen = (name) => !!CS.prefs.panels[name];

  CS.togglePanel = function (name, on) {
    const panel = CS.panels[name];
    if (!panel) return;
    CS.prefs.panels[name] = on === undefined ? !CS.prefs.panels[name] : on;
    CS.savePrefs();
    syncPanels();
    if (CS.prefs.panels[name]) panel.refresh(true);
  };

  function syncPanels() {
    for (const [name, panel] of Object.entries(CS.panels)) {
      const offered = panel.shown ? panel.shown() : true;
      const open = offered && CS.panelOpen(name);
      if (panel.card) CS.$(panel.card).hidden = !open;
      for (const t of document.querySelectorAll('.tog[data-panel="' + name + '"]')) {
        t.classList.toggle("on", open);
        if (panel.shown) t.hidden = !offered;
      }
    }
  }
  CS.syncPanels = syncPanels;

  /** Called after each poll of /jobs: every open card refreshes if due. */
  CS.refreshPanels = function () {
    for (const [name, panel] of Object.entries(CS.panels)) {
      if (panel.always || (CS.panelOpen(name) && (!panel.shown || panel.shown()))) panel.refresh(false);
    }
  };

  const table = CS.table;

  const jobLink = (name) => {
    const b = CS.el("button", "jlink", name);
    b.type = "button";
    b.addEventListener("click", () => CS.openDrawer(name));
    return b;
  };
  CS.jobLink = jobLink;

  // --- cluster -------------------------------------------------------------
  const cluster = { data: null, checked: 0 };
  CS.cluster = cluster;

  CS.panels.cluster = {
    card: "clusterCard",
    always: true,
    shown: () => !!(cluster.data && cluster.data.enabled),
    refresh: async function (force) {
      // Without a cluster section, look again twice a minute (a reload
      // may add one); with one, on every poll.
      const now = Date.now();
      if (!force && !(cluster.data && cluster.data.enabled) && now - cluster.checked < 30000) return;
      cluster.checked = now;
      const res = await CS.api("/cluster");
      if (!res.ok) return;
      const before = cluster.data && cluster.data.enabled;
      cluster.data = res.data;
      CS.jobs.nodeName = res.data.enabled ? res.data.node_name : CS.jobs.nodeName;
      const distribution = res.data.enabled ? res.data.distribution : null;
      if (distribution !== CS.jobs.distribution) {
        CS.jobs.distribution = distribution;
        CS.ingestJobs(CS.jobs.list, CS.jobs.at);
      }
      CS.prefs.panels.cluster = true;
      if (before !== res.data.enabled) syncPanels();
      renderCluster(res.data);
    },
  };

  function roleOf(c) {
    if (c.conflict || c.size_conflict || c.policy_conflict) return "standing down (conflict)";
    if (c.distribution === "spread") return c.quorate ? "spread (per-job owner)" : "spread (no quorum)";
    if (!c.quorate) return c.backend === "gossip" ? "no quorum" : "no quorum (store unreachable)";
    if (c.is_leader) return "leader";
    return c.leader ? "follower (leader: " + c.leader + ")" : "follower";
  }

  function renderCluster(c) {
    const alert = CS.$("alert");
    if (!c.enabled) {
      alert.hidden = true;
      return;
    }
    const body = CS.clear(CS.$("clusterBody"));
    const peers = c.peers || [];
    const parts = [c.node_name];
    const causes = [];
    if (c.conflict) causes.push("duplicate nodeName " + (c.conflict_names || []).join(", "));
    if (c.size_conflict) causes.push("cluster size mismatch " + (c.conflicting_sizes || []).join(" vs "));
    if (c.policy_conflict) causes.push("coordination policy mismatch");
    if (c.backend === "gossip") {
      const others = peers.filter((p) => p.status !== "self");
      const agreed = others.filter((p) => p.status === "agreed").length;
      parts.push(agreed + "/" + others.length + " agreed");
      if (c.elect_leader) parts.push("quorum " + (c.quorate ? "met" : "lost") + " (" + c.quorum + " of " + c.cluster_size + ")");
    } else {
      parts.push(c.backend);
    }
    parts.push(roleOf(c));
    const owners = new Map();
    for (const job of CS.jobs.list) if (job.clusterOwner) owners.set(job.clusterOwner, (owners.get(job.clusterOwner) || 0) + 1);
    if (c.distribution === "spread") parts.push("owns " + (owners.get(c.node_name) || 0));
    CS.$("clusterSummary").textContent = parts.join(" · ") + (causes.length ? "  ⚠ " + causes.join("; ") + " — Leader jobs paused" : "");
    if (causes.length || !c.quorate) {
      alert.hidden = false;
      alert.textContent = "CLUSTER ALERT — " + (causes.length ? causes.join("; ") : c.backend === "gossip" ? "this node has lost quorum" : "the lease store is unreachable from this node") + ": Leader jobs do not run here.";
    } else alert.hidden = true;
    CS.$("fleetToggle").hidden = c.backend !== "gossip";
    if (c.backend === "gossip") {
      const t = table(["peer", "node", "owns", "status", "job set"]);
      // This node first (the peer list names the others).
      const rows = peers.some((p) => p.status === "self") ? peers : [{ host: "this node", node_name: c.node_name, status: "self", job_set_id: c.job_set_id }].concat(peers);
      for (const p of rows) {
        const tr = CS.el("tr");
        const st = CS.el("td");
        st.append(CS.el("span", "dot " + (p.status || "unknown")), p.status || "unknown");
        if (p.last_error) st.title = p.last_error;
        const id = p.job_set_id || "";
        const idCell = CS.el("td", "mono", id ? "#" + id.slice(-8) : "—");
        idCell.title = id;
        tr.append(CS.el("td", "mono", p.host || "—"), CS.el("td", null, p.node_name || "—"), CS.el("td", "num", c.distribution === "spread" ? owners.get(p.node_name) || 0 : "—"), st, idCell);
        t.appendChild(tr);
      }
      body.appendChild(t);
    } else {
      const kv = CS.el("dl", "kv");
      const lease = c.lease || {};
      const rows = Object.assign({ leader: c.leader, is_leader: c.is_leader }, lease);
      for (const [k, v] of Object.entries(rows)) {
        if (v === null || v === undefined || typeof v === "object") continue;
        kv.append(CS.el("dt", null, k), CS.el("dd", "mono", String(v)));
      }
      body.appendChild(kv);
    }
  }

  // --- fleet -------------------------------------------------------------------
  let fleetData = null;
  CS.panels.fleet = {
    card: "fleetCard",
    shown: () => !!(cluster.data && cluster.data.enabled && cluster.data.backend === "gossip"),
    refresh: async function () {
      const res = await CS.api("/fleet");
      if (!res.ok) return;
      fleetData = res.data;
      renderFleet();
    },
  };

  function fleetCell(node, name, owner) {
    const td = CS.el("td", "cell");
    if (owner) td.classList.add("owner");
    if (!node.jobs) {
      td.textContent = "·";
      td.title = "no data from this node yet";
      return [td, false];
    }
    const j = node.jobs[name];
    if (!j) {
      td.textContent = "—";
      td.classList.add("c-off");
      td.title = "not configured on this node";
      return [td, false];
    }
    let bad = false;
    if (j.running) {
      td.textContent = "▶ running";
      td.classList.add("c-run");
    } else if (!j.enabled) {
      td.textContent = "◌ off";
      td.classList.add("c-off");
    } else if (!j.last) {
      td.textContent = "◔";
      td.classList.add("c-off");
    } else {
      const ok = j.last.outcome === "success";
      bad = j.last.outcome === "failure";
      td.textContent = (ok ? "● " : bad ? "✕ " : "○ ") + j.last.outcome + " " + CS.ago(CS.parseTime(j.last.finished_at)).replace(" ago", "");
      td.classList.add(ok ? "c-ok" : bad ? "c-fail" : "c-warn");
      td.title = "exit " + j.last.exit_code + " · finished " + j.last.finished_at + " · took " + CS.dur(j.last.duration) + (j.scheduled_in !== null ? " · next in " + CS.dur(j.scheduled_in) : "");
    }
    return [td, bad];
  }

  function renderFleet() {
    const body = CS.clear(CS.$("fleetBody"));
    if (!fleetData || !fleetData.enabled) {
      body.appendChild(CS.el("div", "faint", "The fleet view needs the gossip backend."));
      return;
    }
    const nodes = fleetData.nodes || [];
    const names = new Set();
    for (const n of nodes) for (const k of Object.keys(n.jobs || {})) names.add(k);
    const all = Array.from(names).sort();
    const failingOnly = CS.$("fleetFailing").checked;
    const t = table([""]);
    t.classList.add("fleet");
    const head = t.firstChild;
    for (const n of nodes) {
      const th = CS.el("th");
      th.append(CS.el("span", "dot " + (n.status || "unknown")), n.node_name || n.host || "?");
      const age = n.self ? "live" : n.as_of ? CS.ago(CS.parseTime(n.as_of)) : "no data";
      th.appendChild(CS.el("div", "faint", age + (n.truncated ? " · partial" : "")));
      head.appendChild(th);
    }
    let shown = 0;
    for (const name of all) {
      if (shown >= 500) break;
      const tr = CS.el("tr");
      const first = CS.el("td");
      first.appendChild(jobLink(name));
      tr.appendChild(first);
      let anyBad = false;
      const local = CS.jobs.byName.get(name);
      for (const n of nodes) {
        const owner = CS.jobs.distribution === "spread" && local && local.clusterOwner === n.node_name;
        const [td, bad] = fleetCell(n, name, owner);
        anyBad = anyBad || bad;
        tr.appendChild(td);
      }
      if (failingOnly && !anyBad) continue;
      t.appendChild(tr);
      shown++;
    }
    body.appendChild(t);
    CS.$("fleetMeta").textContent = nodes.length + " nodes · " + all.length + " jobs" + (shown < all.length && !failingOnly ? " · first 500 shown" : "");
  }

  // --- Kubernetes ------------------------------------------------------------
  const kube = { data: null, sets: null, checked: 0, setsAt: 0 };
  CS.panels.kube = {
    card: "kubeCard",
    always: true,
    shown: () => !!(kube.data && kube.data.enabled),
    refresh: async function (force) {
      const now = Date.now();
      if (!force && kube.data && !kube.data.enabled) return;
      if (!force && now - kube.checked < 5000) return;
      kube.checked = now;
      const res = await CS.api("/kube");
      if (!res.ok) return;
      const before = kube.data && kube.data.enabled;
      kube.data = res.data;
      if (before !== res.data.enabled) syncPanels();
      if (!res.data.enabled || !CS.panelOpen("kube")) return;
      const sets = await CS.api("/kube/sets");
      kube.sets = sets.ok ? sets.data : null;
      renderKube();
    },
  };

  function renderKube() {
    const k = kube.data;
    const body = CS.clear(CS.$("kubeBody"));
    const s = k.sets || {};
    CS.$("kubeMeta").textContent = [
      "namespace " + k.namespace,
      "scope " + k.cronJobSets,
      k.connected ? "watching" : "disconnected",
      k.synced ? "synced" : "not synced",
      (s.accepted || 0) + "/" + (s.seen || 0) + " accepted",
      (s.suspended || 0) + " suspended",
    ].join(" · ");
    if (k.lastError) body.appendChild(CS.el("div", "note bad", k.lastError));
    if (!kube.sets) {
      body.appendChild(CS.el("div", "faint", "This daemon reports no per-set details; the counts above are from GET /kube."));
      return;
    }
    const sets = kube.sets.sets || [];
    if (!sets.length) {
      body.appendChild(CS.el("div", "faint", "No CronJobSet is selected."));
      return;
    }
    const t = table(["set", "accepted", "suspended", "jobs", "last schedule", "next schedule", "events"]);
    for (const set of sets) {
      const tr = CS.el("tr");
      const name = CS.el("td");
      name.append(CS.el("b", null, set.name), CS.el("div", "faint", set.namespace + (set.generation !== null && set.generation !== undefined ? " · gen " + set.generation : "")));
      const acc = CS.el("td", set.accepted ? "c-ok" : "c-fail", set.accepted ? "✓ accepted" : "✕ refused" + (set.runningGeneration !== null && set.runningGeneration !== undefined ? " (generation " + set.runningGeneration + " keeps running)" : ""));
      if (!set.accepted) acc.title = set.message || "";
      if (!set.accepted && set.message) acc.appendChild(CS.el("div", "faint", set.message.length > 160 ? set.message.slice(0, 159) + "…" : set.message));
      const jobs = CS.el("td");
      let last = 0,
        next = 0;
      for (const j of set.jobs || []) {
        const local = CS.jobs.byName.get(j.job);
        if (local) {
          last = Math.max(last, local._last || 0);
          if (local._next && (!next || local._next < next)) next = local._next;
        }
        const link = jobLink(j.name);
        link.title = j.job;
        link.addEventListener("click", (ev) => {
          ev.stopPropagation();
          CS.openDrawer(j.job);
        });
        jobs.append(link, " ");
      }
      const events = CS.el("td");
      for (const e of (set.events || []).slice(-3)) {
        const line = CS.el("div", e.type === "Warning" ? "c-warn" : "faint", e.reason + ": " + e.note);
        line.title = e.at || "";
        events.appendChild(line);
      }
      tr.append(name, acc, CS.el("td", set.suspended ? "c-warn" : "faint", set.suspended ? "‖ suspended" : "no"), jobs, CS.el("td", "num", last ? CS.ago(last) : "—"), CS.el("td", "num", next && !set.suspended ? CS.countdown(next) : "—"), events);
      t.appendChild(tr);
    }
    body.appendChild(t);
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.body.addEventListener("click", (ev) => {
      const t = ev.target.closest(".tog[data-panel]");
      if (t) CS.togglePanel(t.dataset.panel);
    });
    CS.$("fleetFailing").addEventListener("change", renderFleet);
  });
})();
