/* abcde: the JavaScript helpers every page shares (the judging app, the exploration app, and
 * the HTML report, which may inline this file). Written once; load it before the page's own
 * script. A plain script, not a module, so that a self-contained page can inline it as is.
 *
 * Everything is on one global, `abcde`; the names below are stable:
 *
 *   abcde.byId(id)                  document.getElementById
 *   abcde.el(tag, attrs, ...kids)   a new element; kids are nodes or text (never parsed as HTML)
 *   abcde.text(value, empty)        a value as display text ("" or `empty` for null/undefined)
 *   abcde.escapeHtml(value)         & < > " ' escaped, for the rare place that builds markup
 *   abcde.fmt(x, digits)            x.toFixed(digits) (default 4), "n/a" for null/undefined
 *   abcde.pct(x, digits)            100·x with a % sign (default 3 digits), "n/a" for null
 *   abcde.num(x)                    a number rounded to 4 decimals with thousands separators
 *   abcde.newId()                   a random request id (crypto.randomUUID when available)
 *   abcde.api(method, path, body)   fetch JSON; throws abcde.ApiError with the server's message
 *   abcde.ApiError                  Error with .status (HTTP status, 0: the server is unreachable)
 *   abcde.names()                   the metric names and labels (abcde.core.names) the page was
 *                                   given as <body data-names="...">: {labels, impact_metrics,
 *                                   quality_metrics}
 *   abcde.label(key)                a metric's label, e.g. "ΔPrecision" for "delta_precision"
 *
 * Values from the data go into the page only as text (textContent, text nodes, attributes set
 * with setAttribute): hostile item text stays text.
 */
(function (root) {
  "use strict";

  function byId(id) { return document.getElementById(id); }

  function text(value, empty) {
    if (value === null || value === undefined) return empty === undefined ? "" : String(empty);
    return String(value);
  }

  /* el("td", {class: "num", "data-value": 3, onclick: fn}, "text", otherNode).
   * attrs: "class" sets className, "on<event>" adds a listener, "style" is an object of CSS
   * properties set through the CSSOM (the pages' CSP forbids style attributes), anything else
   * goes through setAttribute (null/undefined: left out). Kids: nodes, or text. */
  function el(tag, attrs) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "class") e.className = v;
      else if (k === "style") Object.assign(e.style, v);
      else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    }
    for (let i = 2; i < arguments.length; i++) {
      const c = arguments[i];
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  const ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
  function escapeHtml(value) { return text(value).replace(/[&<>"']/g, (c) => ESCAPES[c]); }

  function fmt(x, digits) {
    if (x === null || x === undefined) return "n/a";
    return Number(x).toFixed(digits === undefined ? 4 : digits);
  }

  function pct(x, digits) {
    if (x === null || x === undefined) return "n/a";
    return (100 * Number(x)).toFixed(digits === undefined ? 3 : digits) + "%";
  }

  function num(x) {
    if (x === null || x === undefined) return "n/a";
    return typeof x === "number" ? (+x.toFixed(4)).toLocaleString() : String(x);
  }

  function newId() {
    if (root.crypto && root.crypto.randomUUID) return root.crypto.randomUUID();
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  class ApiError extends Error {
    constructor(message, status) { super(message); this.name = "ApiError"; this.status = status; }
  }

  const UNREACHABLE = "The server cannot be reached; nothing was saved. Check that it still runs, then reload.";

  /* One JSON call. Errors have one shape, {"ok": false, "error": "...", "status": N}; its
   * message is thrown as an ApiError. A network failure throws ApiError(status 0). */
  async function api(method, path, body) {
    const opts = {method: method, cache: "no-store", headers: {}};
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let r;
    try { r = await fetch(path, opts); }
    catch (e) { throw new ApiError(UNREACHABLE, 0); }
    let d = null;
    try { d = await r.json(); } catch (e) { d = null; }
    if (!r.ok || d === null || (typeof d === "object" && d.ok === false)) {
      throw new ApiError((d && d.error) || ("HTTP " + r.status + (r.statusText ? " " + r.statusText : "")), r.status);
    }
    return d;
  }

  let pageNames = null;
  function names() {
    if (pageNames === null) {
      const given = document.body && document.body.dataset.names;
      pageNames = given ? JSON.parse(given) : {labels: {}, impact_metrics: [], quality_metrics: []};
    }
    return pageNames;
  }

  function label(key) {
    const l = names().labels[key];
    return l === undefined ? key : l;
  }

  root.abcde = Object.freeze({byId, el, text, escapeHtml, fmt, pct, num, newId, api, ApiError, UNREACHABLE,
                              names, label});
})(globalThis);
