// cronstable dashboard: the durable state inspector. GET /state is asked
// once at load (and after a token change) to learn whether a store is
// configured; only then does the "⛁ state" button show. While the card
// is open it reads the inventory again every 10 s (the daemon walks the
// store for each answer), and a scope's entries are read on a click
// (GET /state/documents, GET /state/records). Nothing shows a stored
// value: documents are listed as the daemon lists them (a KV value is a
// type and a size there) and a record's fields as their type and size.
"use strict";
(function () {
  const CS = window.CS;

  const REFRESH_MS = 10000;
  /** Document namespaces GET /state/documents reads; other prefixes are record streams. */
  const DOC_PREFIXES = ["kv", "cursor", "idem"];
  const st = { probed: false, enabled: false, data: null, at: 0, tab: "overview", inspect: null };
  CS.stateInspector = st;

  const table = CS.table;
  const addRow = (t, cells) => {
    const tr = CS.el("tr");
    for (const c of cells) {
      if (c instanceof Node) {
        const td = CS.el("td");
        td.appendChild(c);
        tr.appendChild(td);
      } else tr.appendChild(CS.el("td", typeof c === "number" ? "num" : null, c === null || c === undefined ? "—" : c));
    }
    t.appendChild(tr);
    return tr;
  };

  CS.panels.state = {
    card: "stateCard",
    always: true,
    shown: () => st.enabled,
    refresh: async function (force) {
      if (!st.probed) {
        st.probed = true;
        const res = await CS.api("/state");
        st.enabled = !!(res.ok && res.data && res.data.enabled);
        if (st.enabled) {
          st.data = res.data;
          st.at = Date.now();
        }
        CS.syncPanels();
        if (st.enabled && CS.panelOpen("state")) render();
        return;
      }
      if (!st.enabled || !CS.panelOpen("state")) return;
      if (!force && Date.now() - st.at < REFRESH_MS) {
        if (!CS.$("stateBody").firstChild) render();
        return;
      }
      st.at = Date.now();
      const res = await CS.api("/state");
      if (res.ok && res.data && res.data.enabled) {
        st.data = res.data;
        st.error = null;
      } else st.error = "GET /state failed: " + (res.error || "no answer") + "; showing the last answer";
      render();
    },
  };

  // A new token may see what the old one could not: probe again.
  CS.on("token", () => {
    st.probed = false;
  });

  /** Prefix -> {records, documents, streams, scopes: [{scope, count, kind}]}. */
  function kinds(data) {
    const out = new Map();
    for (const [kind, group] of [
      ["records", data.records || {}],
      ["documents", data.documents || {}],
    ]) {
      for (const [prefix, g] of Object.entries(group)) {
        const k = out.get(prefix) || { records: 0, documents: 0, streams: 0, scopes: [] };
        k[kind] += g.count || 0;
        k.streams += g.streams || 0;
        for (const s of g.scopes || []) k.scopes.push({ scope: s.scope, count: s.count, kind: kind });
        out.set(prefix, k);
      }
    }
    return new Map([...out.entries()].sort((a, b) => a[0].localeCompare(b[0])));
  }

  function render() {
    const data = st.data;
    const body = CS.clear(CS.$("stateBody"));
    if (!data) return;
    const view = data.view || {};
    const all = kinds(data);
    let total = 0;
    for (const k of all.values()) total += k.records + k.documents;
    const meta = CS.clear(CS.$("stateMeta"));
    meta.append((view.backend || "store") + " · " + (view.topology || "?") + " ");
    if (view.shared_locking) meta.appendChild(CS.el("span", "chip", "shared-lock"));
    meta.append(" " + (view.path || "") + " · " + total + " entries" + (data.quarantine ? " · " + data.quarantine + " quarantined" : "") + " · read " + CS.ago(st.at));
    if (st.error) body.appendChild(CS.el("div", "note bad", st.error));
    if (data.enumerable === false) body.appendChild(CS.el("div", "note warn", "The store could not be walked in time; the counts below are empty. The daemon's log says why (state: inventory failed)."));
    const tabs = CS.el("div", "seg small state-tabs");
    const names = ["overview", "retries", "slots", "locks"].concat([...all.keys()]);
    if (names.indexOf(st.tab) < 0) st.tab = "overview";
    for (const name of names) {
      const b = CS.el("button", name === st.tab ? "on" : null, name);
      b.type = "button";
      b.dataset.stab = name;
      b.addEventListener("click", () => {
        st.tab = name;
        st.inspect = null;
        render();
      });
      tabs.appendChild(b);
    }
    body.appendChild(tabs);
    const pane = CS.el("div", "state-pane");
    body.appendChild(pane);
    if (st.tab === "overview") overview(pane, data, all);
    else if (st.tab === "retries" || st.tab === "slots") nodeList(pane, (data.node || {})[st.tab] || [], st.tab);
    else if (st.tab === "locks") locks(pane, data.leases || []);
    else scopes(pane, st.tab, all.get(st.tab));
  }

  function overview(pane, data, all) {
    const t = table(["kind", "records", "documents", "streams"]);
    for (const [prefix, k] of all) addRow(t, [prefix, k.records, k.documents, k.streams]);
    if (!all.size) pane.appendChild(CS.el("div", "faint", "The store holds nothing yet."));
    else pane.appendChild(t);
    const ops = Object.entries((data.stats || {}).ops || {}).sort((a, b) => a[0].localeCompare(b[0]));
    if (ops.length) {
      pane.appendChild(CS.el("div", "faint state-sub", "operations since the daemon started"));
      const o = table(["operation", "count", "errors", "time"]);
      for (const [op, s] of ops) addRow(o, [op, s.count || 0, s.errors || 0, CS.dur(s.seconds || 0)]);
      pane.appendChild(o);
    }
    const th = (data.stats || {}).throttle;
    if (th && th.count) pane.appendChild(CS.el("div", "faint", "throttled " + th.count + " times, " + CS.dur(th.wait_seconds) + " waiting"));
  }

  function nodeList(pane, list, what) {
    const host = (st.data.node || {}).host || "this node";
    if (!list.length) {
      pane.appendChild(CS.el("div", "faint", what === "retries" ? "No retry is armed on " + host + "." : "No concurrency slot is held on " + host + "."));
      return;
    }
    const keys = [...new Set(list.flatMap((e) => Object.keys(e)))];
    const t = table(keys);
    for (const e of list) addRow(t, keys.map((k) => short(e[k])));
    pane.appendChild(t);
  }

  function locks(pane, leases) {
    if (!leases.length) {
      pane.appendChild(CS.el("div", "faint", "No lease is held."));
      return;
    }
    const t = table(["lease", "holder", "fencing token", "expires"]);
    for (const l of leases) {
      const exp = typeof l.expiresAt === "number" ? l.expiresAt * 1000 : CS.parseTime(l.expiresAt);
      addRow(t, [l.name, l.holder, l.fence, l.expired ? "expired " + CS.ago(exp) : CS.countdown(exp)]);
    }
    pane.appendChild(t);
  }

  function scopes(pane, prefix, k) {
    if (!k) return;
    const t = table(["scope", "entries", "kind", ""]);
    for (const s of k.scopes) {
      const stream = s.scope ? prefix + "/" + s.scope : prefix;
      const b = CS.el("button", "btn small", "inspect");
      b.type = "button";
      b.dataset.stream = stream;
      const isDoc = s.kind === "documents";
      if (!isDoc && (prefix === "logs" || stream.indexOf("logs/") === 0)) {
        b.disabled = true;
        b.title = "log streams carry raw output and are not inspectable";
      } else if (isDoc && DOC_PREFIXES.indexOf(prefix) < 0) {
        b.disabled = true;
        b.title = "the daemon lists documents of kv/, cursor/ and idem/ namespaces only";
      }
      b.addEventListener("click", () => inspect(stream, isDoc));
      const tr = addRow(t, [s.scope || "(none)", s.count, isDoc ? "documents" : "records", b]);
      if (st.inspect && st.inspect.stream === stream) tr.classList.add("sel");
    }
    pane.appendChild(t);
    const out = CS.el("div", "state-inspect");
    out.id = "stateInspect";
    pane.appendChild(out);
    if (st.inspect && st.inspect.prefix === prefix) showInspect(out);
  }

  async function inspect(stream, isDoc) {
    const path = isDoc ? "/state/documents?ns=" + encodeURIComponent(stream) : "/state/records?stream=" + encodeURIComponent(stream) + "&limit=50";
    const res = await CS.api(path);
    st.inspect = { stream: stream, prefix: stream.split("/")[0], isDoc: isDoc, res: res };
    render();
  }

  function showInspect(out) {
    const { stream, isDoc, res } = st.inspect;
    out.appendChild(CS.el("h3", "state-sub", (isDoc ? "documents of " : "newest records of ") + stream));
    if (!res.ok) {
      out.appendChild(CS.el("div", "note bad", (res.error || "no answer") + " (" + res.status + ")"));
      return;
    }
    if (isDoc) {
      const docs = res.data.documents || [];
      if (!docs.length) return void out.appendChild(CS.el("div", "faint", "No documents."));
      const keys = [...new Set(docs.flatMap((d) => Object.keys(d)))];
      const t = table(keys);
      for (const d of docs) addRow(t, keys.map((k) => (k === "value" ? shape(d[k]) : /At$/.test(k) && typeof d[k] === "number" ? CS.wall(d[k] * 1000, true) : short(d[k]))));
      out.appendChild(t);
      return;
    }
    const recs = res.data.records || [];
    if (!recs.length) return void out.appendChild(CS.el("div", "faint", "No records."));
    const t = table(["#", "fields (type and size; values are not shown)"]);
    recs.forEach((r, i) => {
      const fields = Object.keys(r)
        .sort()
        .map((k) => k + ": " + shape(r[k]));
      addRow(t, [i + 1, fields.join(" · ")]);
    });
    out.appendChild(t);
  }

  /** A field's type and size, never its value. */
  function shape(v) {
    if (v === null || v === undefined) return "null";
    if (Array.isArray(v)) return "list[" + v.length + "]";
    if (typeof v === "object") return "object{" + Object.keys(v).length + "}";
    if (typeof v === "string") return "str(" + v.length + ")";
    return typeof v === "number" ? "number" : typeof v;
  }

  /** A document field as listed by the daemon (already metadata), kept short. */
  function short(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "object") return shape(v);
    const s = String(v);
    return s.length > 60 ? s.slice(0, 59) + "…" : s;
  }
})();
