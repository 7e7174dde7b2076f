// cronstable dashboard: shared helpers. Every script of the page adds to
// one namespace, window.CS; this one holds the DOM and formatting helpers,
// the preferences, the access token and the fetch wrapper every request
// goes through.
"use strict";
(function () {
  const CS = (window.CS = {});

  CS.$ = (id) => document.getElementById(id);

  /** A new element with a class and text (never HTML: data stays text). */
  CS.el = function (tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };

  /** A plain table with one header row of `heads` (the cards' tables). */
  CS.table = function (heads) {
    const t = CS.el("table", "plain");
    const tr = CS.el("tr");
    for (const h of heads) tr.appendChild(CS.el("th", null, h));
    t.appendChild(tr);
    return t;
  };

  /** Removes every child of `node`. */
  CS.clear = function (node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  };

  // --- a tiny event bus between the scripts --------------------------
  const handlers = new Map();
  CS.on = function (name, fn) {
    if (!handlers.has(name)) handlers.set(name, []);
    handlers.get(name).push(fn);
  };
  CS.emit = function (name, arg) {
    for (const fn of handlers.get(name) || []) {
      try {
        fn(arg);
      } catch (err) {
        console.warn("handler of " + name + " failed:", err);
      }
    }
  };

  // --- preferences (this browser) and the token (this tab) -----------
  const PREFS_KEY = "cronstable.dashboard";
  const defaults = {
    theme: null,
    refresh: 2000,
    sort: "name",
    desc: false,
    seg: "all",
    panels: {},
    heatWindow: 24,
    pressureZone: "UTC",
    recent: [],
  };
  let stored = {};
  try {
    stored = JSON.parse(localStorage.getItem(PREFS_KEY) || "{}") || {};
  } catch (err) {
    stored = {};
  }
  CS.prefs = Object.assign({}, defaults, stored);
  CS.savePrefs = function () {
    try {
      localStorage.setItem(PREFS_KEY, JSON.stringify(CS.prefs));
    } catch (err) {
      // private mode or a full quota: the preference lasts this page only
    }
  };

  const TOKEN_KEY = "cronstable.token";
  CS.token = function () {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (err) {
      return "";
    }
  };
  CS.setToken = function (value) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (err) {
      // storage refused: nothing to keep
    }
    CS.emit("token", value);
  };

  // --- requests -------------------------------------------------------
  /**
   * One request to the daemon. `opts.etag` sends If-None-Match and keeps
   * the browser cache out of the way, so a 304 reaches us as a 304 and the
   * body we hold is reused without being parsed again. Resolves to
   * {status, ok, etag, data, error}; never rejects (a network failure is
   * status 0).
   */
  CS.api = async function (path, opts) {
    opts = opts || {};
    const headers = {};
    const token = CS.token();
    if (token) headers.Authorization = "Bearer " + token;
    if (opts.etag) headers["If-None-Match"] = opts.etag;
    if (opts.json !== undefined) headers["Content-Type"] = "application/json";
    const init = {
      method: opts.method || "GET",
      headers: headers,
      cache: "no-store",
      credentials: "same-origin",
      signal: opts.signal,
    };
    if (opts.json !== undefined) init.body = JSON.stringify(opts.json);
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      if (err && err.name === "AbortError") return { status: -1, ok: false, aborted: true };
      return { status: 0, ok: false, error: "no answer from the daemon" };
    }
    const out = { status: res.status, ok: res.ok, etag: res.headers.get("ETag"), response: res };
    if (res.status === 401) CS.emit("unauthorized", path);
    if (res.status === 304 || opts.raw) return out;
    const text = await res.text().catch(() => "");
    const type = res.headers.get("Content-Type") || "";
    if (type.indexOf("json") >= 0) {
      try {
        out.data = JSON.parse(text);
      } catch (err) {
        out.data = null;
      }
    } else {
      out.data = text;
    }
    if (!res.ok) {
      out.error = (out.data && out.data.error) || "HTTP " + res.status;
    }
    return out;
  };

  // --- formatting -----------------------------------------------------
  const pad = (n) => (n < 10 ? "0" : "") + n;
  CS.pad = pad;

  /** A duration in seconds, short: 850ms, 4.2s, 3m 05s, 2h 10m, 3d 4h. */
  CS.dur = function (seconds) {
    if (seconds === null || seconds === undefined || isNaN(seconds)) return "—";
    if (seconds < 1) return Math.round(seconds * 1000) + "ms";
    if (seconds < 60) return (seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)) + "s";
    const m = Math.floor(seconds / 60);
    if (m < 60) return m + "m " + pad(Math.floor(seconds % 60)) + "s";
    const h = Math.floor(m / 60);
    if (h < 24) return h + "h " + pad(m % 60) + "m";
    return Math.floor(h / 24) + "d " + (h % 24) + "h";
  };

  /** How long ago `ms` (epoch ms) was, coarse: 12s, 4m, 3h, 2d. */
  CS.ago = function (ms, now) {
    if (!ms) return "—";
    const s = Math.max(0, ((now || Date.now()) - ms) / 1000);
    if (s < 60) return Math.floor(s) + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    if (s < 172800) return Math.floor(s / 3600) + "h ago";
    return Math.floor(s / 86400) + "d ago";
  };

  /** A countdown to `ms` (epoch ms): 42s, 3m 10s, 5h 02m, 3d 4h. */
  CS.countdown = function (ms, now) {
    if (!ms) return "—";
    const s = Math.max(0, (ms - (now || Date.now())) / 1000);
    if (s < 60) return "in " + Math.ceil(s) + "s";
    return "in " + CS.dur(s);
  };

  CS.bytes = function (n) {
    if (n === null || n === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + " " + units[i];
  };

  /** A wall-clock time in the browser's zone: 14:05, tom 04:00, Jul 12 04:00. */
  CS.wall = function (ms, withSeconds) {
    const d = new Date(ms);
    const now = new Date();
    const hm = pad(d.getHours()) + ":" + pad(d.getMinutes()) + (withSeconds ? ":" + pad(d.getSeconds()) : "");
    const day = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
    const diff = Math.round((day(d) - day(now)) / 86400000);
    if (diff === 0) return hm;
    if (diff === 1) return "tom " + hm;
    if (diff === -1) return "yest " + hm;
    return d.toLocaleDateString(undefined, { month: "short", day: "numeric" }) + " " + hm;
  };

  CS.parseTime = function (iso) {
    if (!iso) return 0;
    const t = Date.parse(iso);
    return isNaN(t) ? 0 : t;
  };

  // --- feedback -------------------------------------------------------
  CS.toast = function (message, kind) {
    const box = CS.$("toasts");
    const t = CS.el("div", "toast" + (kind ? " " + kind : ""), message);
    box.appendChild(t);
    while (box.children.length > 4) box.removeChild(box.firstChild);
    setTimeout(() => t.remove(), kind === "bad" ? 7000 : 3500);
  };

  CS.copy = async function (text, what) {
    try {
      await navigator.clipboard.writeText(text);
      CS.toast("copied " + (what || "to the clipboard"), "good");
    } catch (err) {
      CS.toast("the browser refused the clipboard", "bad");
    }
  };

  /** A stable colour class for a name (the same job keeps its hue). */
  CS.hue = function (name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hue" + (h % 8);
  };

  /** The page's colours, read from the style sheet (for canvases). */
  let palette = null;
  CS.colors = function () {
    if (!palette) {
      const css = getComputedStyle(document.documentElement);
      palette = {};
      for (const name of ["bg", "panel", "panel2", "line", "fg", "muted", "faint", "accent", "ok", "fail", "run", "pause", "pend", "off", "warn", "cancel", "heat0"]) {
        palette[name] = css.getPropertyValue("--" + name).trim();
      }
    }
    return palette;
  };
  CS.on("theme", () => {
    palette = null;
  });

  /** A canvas sized for the device's pixel ratio; returns its 2d context. */
  CS.canvas = function (canvas, width, height) {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return ctx;
  };

  /** A floating tooltip that follows the pointer (for canvas cells). */
  let tip = null;
  CS.tip = function (text, x, y) {
    if (!tip) {
      tip = CS.el("div", "tip");
      document.body.appendChild(tip);
    }
    if (!text) {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    tip.textContent = text;
    const w = tip.offsetWidth;
    tip.style.left = Math.min(x + 14, window.innerWidth - w - 8) + "px";
    tip.style.top = y + 14 + "px";
  };
})();
