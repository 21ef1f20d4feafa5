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
 *   Numbers follow abcde.util.display (the terminal's and the notebook's style), whose rules the
 *   page is given in <body data-names="..."> (abcde.style()); tests/test_display.py runs the
 *   Python and these functions on the same values in Chromium:
 *   abcde.pct(x)                    a rate: 100·x with 3 decimals and a % sign; "n/a" for null
 *   abcde.four(x)                   an estimate or a standard error: 4 decimals ("0.0000", never
 *                                   "-0.0000"); "n/a" for null
 *   abcde.estimate(metric, x)       an estimate in its metric's style: the Good/Bad rates as
 *                                   abcde.pct (style().percent_estimates), anything else abcde.four
 *   abcde.weight(x)                 a weight by its magnitude: whole numbers with separators,
 *                                   otherwise 6 significant digits, no exponent
 *   abcde.count(x)                  a count with thousands separators
 *   abcde.num(x)                    = abcde.weight for numbers; other values as text
 *   abcde.fmt(x, digits)            x.toFixed(digits) (default: the estimate digits), "n/a" for null
 *   abcde.style()                   {pct_digits, estimate_digits, null}; abcde.NULL_TEXT: how a
 *                                   missing value is shown, "(null)"
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

  const isNull = (x) => x === null || x === undefined || (typeof x === "number" && !isFinite(x));

  /* Thousands separators on the integer part of a fixed-point text (as Python's "{:,}"). */
  function group(fixed) {
    const neg = fixed.startsWith("-"), body = neg ? fixed.slice(1) : fixed;
    const [whole, frac] = body.split(".");
    const g = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return (neg ? "-" : "") + g + (frac === undefined ? "" : "." + frac);
  }

  function fmt(x, digits) {
    if (isNull(x)) return "n/a";
    return Number(x).toFixed(digits === undefined ? style().estimate_digits : digits);
  }

  // Below this a value is float noise around 0, shown as 0 (abcde.util.display.TINY); above it, a value
  // that the fixed decimals would show as 0 keeps two significant digits, and 0 never has a minus sign.
  const TINY = 5e-9;

  function small(v, digits) {
    let d = digits;
    if (Math.abs(v) >= TINY && Math.abs(v) < 0.5 * Math.pow(10, -digits)) d = 1 - Math.floor(Math.log10(Math.abs(v)));
    const t = v.toFixed(d);
    return /^-0\.0+$/.test(t) ? t.slice(1) : t;
  }

  function four(x) {
    if (isNull(x)) return "n/a";
    return small(Number(x), style().estimate_digits);
  }

  function pct(x) {
    if (isNull(x)) return "n/a";
    const v = Number(x);
    if (Math.abs(v) < TINY) return small(0, style().pct_digits) + "%";
    return small(100 * v, style().pct_digits) + "%";
  }

  function count(x) { return isNull(x) ? "n/a" : group(Number(x).toFixed(0)); }

  function estimate(metric, x) {
    return (style().percent_estimates || []).includes(metric) ? pct(x) : four(x);
  }

  function weight(x) {
    if (isNull(x)) return "n/a";
    const v = Number(x);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return group(v.toFixed(0));
    if (Math.abs(v) >= 1e6) return group(v.toFixed(0));
    const digits = Math.min(12, Math.max(0, 5 - Math.floor(Math.log10(Math.abs(v)))));
    return group(v.toFixed(digits).replace(/0+$/, "").replace(/\.$/, ""));
  }

  function num(x) { return typeof x === "number" ? weight(x) : (isNull(x) ? "n/a" : String(x)); }

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

  const DEFAULT_STYLE = {pct_digits: 3, estimate_digits: 4, null: "(null)",
                         percent_estimates: ["good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate",
                                             "good_split_distance", "bad_split_distance", "good_merge_distance",
                                             "bad_merge_distance", "good_distance", "bad_distance"]};
  function style() { return Object.assign({}, DEFAULT_STYLE, names().style || {}); }

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

  root.abcde = Object.freeze({byId, el, text, escapeHtml, fmt, four, pct, estimate, count, weight, num, newId, api, ApiError,
                              UNREACHABLE, names, label, style, get NULL_TEXT() { return style().null; }});
})(globalThis);
