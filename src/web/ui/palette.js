// cronstable dashboard: the command palette (Ctrl-K, ⌘K or Ctrl-P). One
// input over every action the page offers: the global ones (refresh, run
// failing, theme, each card that is offered, the token, the key list) and
// five or six per job (open, run, cancel while running, pause or resume,
// copy the command, its schedule). The query is matched fuzzily: its
// letters in order, anywhere in the label, ranked by how tightly and how
// early they match and whether they start words.
"use strict";
(function () {
  const CS = window.CS;
  const SHOWN = 60;
  const pal = { items: [], shown: [], sel: 0 };
  CS.palette = pal;

  /**
   * Where `query` (spaces ignored, any case) matches `text` as a
   * subsequence: {score, at: [indexes]}, or null. Higher is better.
   */
  function fuzzy(query, text) {
    const q = query.toLowerCase().replace(/\s+/g, "");
    if (!q) return { score: 0, at: [] };
    const t = lowerInPlace(text);
    const at = [];
    let score = 0;
    let from = 0;
    for (const ch of q) {
      // Prefer the next occurrence that starts a word, if one comes
      // before the plain next occurrence would leave us stuck.
      let i = t.indexOf(ch, from);
      if (i < 0) return null;
      const prev = at.length ? at[at.length - 1] : -2;
      if (i !== prev + 1) {
        let j = i;
        while (j >= 0 && !startsWord(t, j)) j = t.indexOf(ch, j + 1);
        if (j >= 0 && rest(q, at.length + 1, t, j + 1)) i = j;
      }
      if (i === prev + 1) score += 6;
      if (startsWord(t, i)) score += 4;
      score += 1;
      at.push(i);
      from = i + 1;
    }
    score -= at[0] * 0.2 + text.length * 0.02;
    return { score: score, at: at };
  }
  CS.fuzzy = fuzzy;

  /**
   * `text` in lower case, each character as long as it was, so an index
   * into the result is one into `text` (the marks are drawn on the
   * label): a character whose lower case is longer (`İ`) stays as is.
   */
  function lowerInPlace(text) {
    let out = "";
    for (const c of text) {
      const l = c.toLowerCase();
      out += l.length === c.length ? l : c;
    }
    return out;
  }

  const startsWord = (t, i) => i === 0 || /[\s\-_/.:]/.test(t[i - 1]);

  /** Whether q[k..] still matches t from `from` on. */
  function rest(q, k, t, from) {
    for (; k < q.length; k++) {
      const i = t.indexOf(q[k], from);
      if (i < 0) return false;
      from = i + 1;
    }
    return true;
  }

  /** Every action on offer now. */
  function actions() {
    const out = [];
    const add = (label, hint, run) => out.push({ label: label, hint: hint, run: run });
    add("Refresh now", "g", () => {
      CS.jobs.etag = null;
      CS.pollSoon(0);
    });
    add("Run every failing job", "", () => CS.runFailing());
    add("Toggle theme (light / dark)", "t", () => CS.toggleTheme());
    add("Keyboard shortcuts", "?", () => (CS.$("helpDialog").hidden = false));
    add("Focus the filter", "/", () => {
      CS.$("filter").focus();
      CS.$("filter").select();
    });
    add("Set the access token", "", () => CS.$("tokenBtn").click());
    if (CS.wallboard) add("Wallboard / TV mode", "w", () => CS.wallboard.toggle());
    const seen = new Set();
    for (const t of document.querySelectorAll(".tog[data-panel]")) {
      const name = t.dataset.panel;
      if (t.hidden || seen.has(name)) continue;
      seen.add(name);
      add("Toggle " + (t.title || name).replace(/\s*[(,].*$/, "").toLowerCase() + " card", "card", () => CS.togglePanel(name));
    }
    if (CS.node && CS.node.readable) add("Toggle node resources card", "card", () => CS.togglePanel("node"));
    for (const job of CS.jobs.list) {
      const n = job.name;
      add("Open " + n, "job", () => {
        CS.select(n, true);
        CS.openDrawer(n);
      });
      add("Run " + n, "job", () => CS.act(n, "start"));
      if (job.running) add("Cancel " + n, "job", () => CS.act(n, "cancel"));
      add((job.paused ? "Resume " : "Pause ") + n, "job", () => CS.act(n, job.paused ? "resume" : "pause"));
      add("Copy the command of " + n, "job", () => CS.copy(job.command, "the command"));
      add("Schedule of " + n, "job", () => CS.openDrawer(n, "schedule"));
    }
    return out;
  }

  function filter() {
    const query = CS.$("palInput").value;
    const scored = [];
    pal.items.forEach((item, order) => {
      const m = fuzzy(query, item.label);
      if (m) scored.push({ item: item, m: m, order: order });
    });
    if (query.trim()) scored.sort((a, b) => b.m.score - a.m.score || a.order - b.order);
    pal.shown = scored.slice(0, SHOWN);
    pal.sel = 0;
    draw();
    CS.$("palCount").textContent = scored.length + " of " + pal.items.length;
  }

  function draw() {
    const list = CS.clear(CS.$("palList"));
    pal.shown.forEach((entry, i) => {
      const li = CS.el("li", i === pal.sel ? "sel" : null);
      const label = CS.el("span", "pl");
      const marks = new Set(entry.m.at);
      let run = "";
      let marked = false;
      const flush = () => {
        if (run) label.appendChild(marked ? CS.el("b", null, run) : document.createTextNode(run));
        run = "";
      };
      for (let k = 0; k < entry.item.label.length; k++) {
        const m = marks.has(k);
        if (m !== marked) {
          flush();
          marked = m;
        }
        run += entry.item.label[k];
      }
      flush();
      li.append(label, CS.el("span", "ph faint", entry.item.hint));
      li.addEventListener("mousemove", () => {
        if (pal.sel !== i) {
          pal.sel = i;
          mark();
        }
      });
      li.addEventListener("click", () => choose(i));
      list.appendChild(li);
    });
    if (!pal.shown.length) list.appendChild(CS.el("li", "faint", "Nothing matches."));
  }

  function mark() {
    const lis = CS.$("palList").children;
    for (let k = 0; k < lis.length; k++) lis[k].classList.toggle("sel", k === pal.sel);
    if (lis[pal.sel]) lis[pal.sel].scrollIntoView({ block: "nearest" });
  }

  function choose(i) {
    const entry = pal.shown[i];
    if (!entry) return;
    close();
    try {
      entry.item.run();
    } catch (err) {
      console.warn("palette action failed:", err);
    }
  }

  function open() {
    pal.items = actions();
    CS.$("palette").hidden = false;
    const input = CS.$("palInput");
    input.value = "";
    filter();
    input.focus();
  }
  CS.openPalette = open;

  function close() {
    // Fifty thousand actions for ten thousand jobs: not kept while closed.
    pal.items = [];
    CS.$("palette").hidden = true;
    CS.$("palInput").blur();
  }

  function onInputKey(ev) {
    const n = pal.shown.length;
    if (ev.key === "ArrowDown" || (ev.ctrlKey && ev.key === "n")) pal.sel = n ? (pal.sel + 1) % n : 0;
    else if (ev.key === "ArrowUp" || (ev.ctrlKey && ev.key === "p")) pal.sel = n ? (pal.sel - 1 + n) % n : 0;
    else if (ev.key === "Enter") choose(pal.sel);
    else if (ev.key === "Escape") close();
    else return;
    ev.preventDefault();
    ev.stopPropagation();
    if (ev.key.indexOf("Arrow") === 0 || ev.ctrlKey) mark();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.addEventListener(
      "keydown",
      (ev) => {
        if (ev.key === "Escape" && !CS.$("palette").hidden) {
          // Wherever the focus is, Escape closes the palette first (not
          // the drawer behind it).
          ev.preventDefault();
          ev.stopPropagation();
          close();
          return;
        }
        const k = ev.key.toLowerCase();
        if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && !ev.shiftKey && (k === "k" || (k === "p" && CS.$("palette").hidden))) {
          ev.preventDefault();
          ev.stopPropagation();
          if (CS.$("palette").hidden) open();
          else close();
        }
      },
      true
    );
    CS.$("palInput").addEventListener("input", filter);
    CS.$("palInput").addEventListener("keydown", onInputKey);
    CS.$("palette").addEventListener("click", (ev) => ev.target === CS.$("palette") && close());
    CS.$("palBtn").addEventListener("click", open);
  });
})();
