"""The judging page: one self-contained HTML document (inline CSS and JS, no CDN).

Every value from the data is put in the page with ``textContent`` (never
``innerHTML``), and the Content-Security-Policy allows only this inline script
and style (by hash), so hostile item text stays text.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root { --same: #1b7f3b; --diff: #b3261e; --unsure: #6b6b6b; --hl: #fff3bf; }
* { box-sizing: border-box; }
body { font: 15px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; background: #f6f6f4; }
header { display: flex; gap: 1em; align-items: center; padding: .6em 1.2em; background: #23304a; color: #fff; flex-wrap: wrap; }
header h1 { font-size: 1.1em; margin: 0 1em 0 0; }
header input { font: inherit; padding: .2em .4em; width: 12em; }
main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(26em, 2fr); gap: 1.2em; padding: 1.2em; }
section { background: #fff; border-radius: 8px; padding: 1em 1.2em; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
h2 { font-size: 1em; margin: 0 0 .6em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35em .5em; border-bottom: 1px solid #e4e4e4; vertical-align: top; overflow-wrap: anywhere; }
#pair td.value { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; }
#pair tr.differs td.value { background: var(--hl); }
#pair td.null { color: #999; font-style: italic; }
.buttons { display: flex; gap: .6em; margin: 1em 0 .6em; flex-wrap: wrap; }
button { font: inherit; padding: .5em 1em; border-radius: 6px; border: 1px solid #bbb; background: #fafafa; cursor: pointer; }
button:disabled { opacity: .5; cursor: default; }
button.same { border-color: var(--same); color: var(--same); }
button.different { border-color: var(--diff); color: var(--diff); }
button.unsure { border-color: var(--unsure); color: var(--unsure); }
kbd { font: 12px ui-monospace, monospace; border: 1px solid #bbb; border-radius: 3px; padding: 0 .3em; background: #f3f3f3; color: #333; }
textarea { width: 100%; font: inherit; min-height: 3em; }
#status { min-height: 1.4em; margin: .4em 0; }
#status.error { color: var(--diff); font-weight: 600; }
#stop { background: #e6f4ea; color: var(--same); padding: .6em; border-radius: 6px; font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #666; font-size: .9em; }
progress { width: 100%; }
[hidden] { display: none !important; }
.gap { margin-top: 1em; }
#estimates th, #estimates td { white-space: nowrap; }
"""

SCRIPT = r"""
"use strict";
const $ = (id) => document.getElementById(id);
let state = null, busy = false, acks = 0;
const NAMES = {delta_precision: "ΔPrecision", good_split_rate: "GoodSplitRate", bad_split_rate: "BadSplitRate",
               good_merge_rate: "GoodMergeRate", bad_merge_rate: "BadMergeRate"};

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function fmt(x, digits) { return (x === null || x === undefined) ? "n/a" : Number(x).toFixed(digits === undefined ? 4 : digits); }
function newId() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + Math.random().toString(36).slice(2);
}
function status(msg, isError) {
  const s = $("status");
  s.textContent = msg || "";
  s.className = isError ? "error" : "";
}
async function api(method, path, body) {
  const opts = {method: method, cache: "no-store", headers: {}};
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  let r;
  try { r = await fetch(path, opts); }
  catch (e) { throw new Error("The server cannot be reached; nothing was saved. Check that 'abcde judge serve' runs, then reload."); }
  let d = null;
  try { d = await r.json(); } catch (e) { d = null; }
  if (!r.ok || !d || !d.ok) throw new Error((d && d.error) || ("HTTP " + r.status));
  return d;
}
function rater() { return $("rater").value.trim(); }

function renderPair(next) {
  const card = $("pair"), body = $("pair-body");
  body.replaceChildren();
  if (!next) {
    card.dataset.pairId = "";
    $("done").hidden = false; $("judge").hidden = true;
    return;
  }
  $("done").hidden = true; $("judge").hidden = false;
  card.dataset.pairId = next.pair_id;
  $("ids").hidden = !next.ids;
  if (next.ids) { $("id-a").textContent = next.ids[0]; $("id-b").textContent = next.ids[1]; }
  for (const a of next.attributes) {
    const tr = el("tr");
    if (a.differs) tr.className = "differs";
    tr.append(el("th", a.name));
    for (const v of [a.a, a.b]) {
      const td = el("td", v === null ? "(empty)" : v, "value" + (v === null ? " null" : ""));
      tr.append(td);
    }
    body.append(tr);
  }
}

function renderEstimates(s) {
  const body = $("estimates-body");
  body.replaceChildren();
  $("stop").hidden = !s.can_stop;
  if (s.estimates.unavailable) {
    $("est-note").textContent = "Live estimates are unavailable (" + s.estimates.unavailable +
      "); judgements are still saved. Try 'abcde quality' on the export.";
    return;
  }
  for (const key of Object.keys(NAMES)) {
    const e = s.estimates[key];
    const tr = el("tr");
    tr.dataset.metric = key;
    tr.append(el("th", NAMES[key]));
    const v = el("td", e.estimate === null ? "undefined" : fmt(e.estimate), "num estimate");
    v.dataset.value = e.estimate === null ? "" : String(e.estimate);
    const ci = el("td", e.ci_low === null ? (e.note || "n/a") : "[" + fmt(e.ci_low) + ", " + fmt(e.ci_high) + "]", "num interval");
    ci.dataset.low = e.ci_low === null ? "" : String(e.ci_low);
    ci.dataset.high = e.ci_high === null ? "" : String(e.ci_high);
    tr.append(v, ci, el("td", e.n_judgements, "num"));
    body.append(tr);
  }
  $("est-note").textContent = "From the person judgements in the store, by the estimator behind 'abcde quality' (" +
    s.estimates.estimator + (s.estimates.allocation ? ", allocation " + s.estimates.allocation : "") +
    (s.settings.allocation === "adaptive Neyman" ? "; pairs served by adaptive Neyman allocation" : "") + "). Judged pairs: " + s.estimates.judged_pairs + ", unsure: " + s.estimates.unsure_pairs +
    ", not judged: " + s.estimates.missing_pairs + ".";
  if (s.settings.target_width !== null) {
    $("target").textContent = "Target width of ΔPrecision's 95% interval: " + fmt(s.settings.target_width) +
      "; now " + fmt(s.ci_width) + ".";
  }
}

function renderAgreement(s) {
  const a = s.agreement, box = $("agreement");
  box.hidden = s.replicated_pairs === 0 && a.replicated_pairs === 0;
  $("agree-summary").textContent = "Pairs judged by two raters: " + a.replicated_pairs + " (of " + s.replicated_pairs +
    " replicated). Fleiss' kappa: " + fmt(a.fleiss_kappa, 3) + "; agreement: " +
    (a.percent_agreement === null ? "n/a" : (100 * a.percent_agreement).toFixed(1) + "%") + ".";
  const body = $("agree-body");
  body.replaceChildren();
  for (const c of a.cohen) {
    const tr = el("tr");
    tr.append(el("td", c.raters[0] + " & " + c.raters[1]), el("td", c.pairs, "num"), el("td", fmt(c.cohen_kappa, 3), "num"));
    body.append(tr);
  }
}

function render(s) {
  state = s;
  $("progress").max = s.needed_judgements || 1;
  $("progress").value = s.judgements;
  $("progress-text").textContent = s.judged_pairs + " / " + s.pairs + " pairs judged (" + s.judgements + " of " +
    s.needed_judgements + " judgements incl. replicated; budget " + s.budget + ")" +
    (s.rater !== undefined ? "; you: " + s.rater_judgements : "");
  if (s.rater !== undefined) {
    renderPair(s.next);
    $("undo").disabled = !s.can_undo;
  }
  renderEstimates(s);
  renderAgreement(s);
}

async function load() {
  const r = rater();
  if (!r) { $("start").hidden = false; $("judge").hidden = true; $("done").hidden = true; return; }
  $("start").hidden = true;
  try {
    render(await api("GET", "/api/state?rater=" + encodeURIComponent(r)));
    status("");
  } catch (e) { status(e.message, true); }
}

async function judge(answer) {
  if (busy || !state || !state.next) return;
  busy = true;
  setButtons(true);
  const pid = state.next.pair_id;
  status("Saving…");
  try {
    const d = await api("POST", "/api/judgements", {rater: rater(), pair_id: pid, judgement: answer,
                                                  comment: $("comment").value, request_id: newId()});
    acks += 1;
    document.body.dataset.acks = String(acks);
    $("comment").value = "";
    render(d);
    status("Saved: " + answer + ".");
  } catch (e) { status(e.message, true); }
  finally { busy = false; setButtons(false); }
}

async function undo() {
  if (busy || !rater()) return;
  busy = true;
  setButtons(true);
  try {
    const d = await api("POST", "/api/undo", {rater: rater()});
    render(d);
    status("Undone: your last judgement (" + d.undone.judgement + ") is withdrawn; judge that pair again.");
  } catch (e) { status(e.message, true); }
  finally { busy = false; setButtons(false); }
}

function setButtons(disabled) {
  for (const b of document.querySelectorAll("button[data-answer]")) b.disabled = disabled;
  $("undo").disabled = disabled || !(state && state.can_undo);
}

function setRater() {
  const r = rater();
  try { localStorage.setItem("abcde-rater", r); } catch (e) {}
  const u = new URL(window.location.href);
  u.searchParams.set("rater", r);
  history.replaceState(null, "", u.pathname + u.search);
  load();
}

document.addEventListener("keydown", (ev) => {
  const t = ev.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) {
    if (ev.key === "Escape") t.blur();
    if (ev.key === "Enter" && t.id === "rater") { ev.preventDefault(); setRater(); t.blur(); }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key.toLowerCase();
  if (k === "s" || k === "1") { ev.preventDefault(); judge("same"); }
  else if (k === "d" || k === "2") { ev.preventDefault(); judge("different"); }
  else if (k === "u" || k === "c" || k === "3") { ev.preventDefault(); judge("unsure"); }
  else if (k === "z" || ev.key === "Backspace") { ev.preventDefault(); undo(); }
  else if (k === "n") { ev.preventDefault(); $("comment").focus(); }
});

for (const b of document.querySelectorAll("button[data-answer]")) b.addEventListener("click", () => judge(b.dataset.answer));
$("undo").addEventListener("click", undo);
$("go").addEventListener("click", setRater);
(function init() {
  const u = new URL(window.location.href);
  let r = u.searchParams.get("rater");
  if (!r) { try { r = localStorage.getItem("abcde-rater"); } catch (e) {} }
  if (r) $("rater").value = r;
  load();
  // Other raters' judgements move the progress and the estimates: refresh them now and then
  // (the pair on screen is kept as long as it is still this rater's next one).
  setInterval(() => {
    if (busy || !rater() || document.visibilityState !== "visible") return;
    api("GET", "/api/state?rater=" + encodeURIComponent(rater())).then((d) => {
      if (!busy && state && d.next && state.next && d.next.pair_id === state.next.pair_id) render(d);
    }).catch(() => {});
  }, 15000);
})();
"""

BODY = """
<header>
  <h1>abcde · judge pairs</h1>
  <label>Rater <input id="rater" autocomplete="username" maxlength="64" placeholder="your name"></label>
  <button id="go" type="button">Start</button>
  <span class="muted">Keys: <kbd>s</kbd> same · <kbd>d</kbd> different · <kbd>u</kbd> can't tell · <kbd>z</kbd>/<kbd>⌫</kbd> undo · <kbd>n</kbd> comment</span>
</header>
<main>
  <div>
    <section id="start" hidden><h2>Who is judging?</h2><p>Enter your name above and press Start. Your judgements are saved under it, and you resume where you left off.</p></section>
    <section id="done" hidden><h2>Nothing left for you to judge</h2><p>Every pair has the judgements it needs (or you judged all pairs still open). Thank you!</p></section>
    <section id="judge" hidden>
      <h2>Do these two items refer to the same thing?</h2>
      <table id="pair" data-pair-id="">
        <thead><tr><th>attribute</th><th>item A</th><th>item B</th></tr>
        <tr id="ids" hidden><th>id</th><td id="id-a" class="value"></td><td id="id-b" class="value"></td></tr></thead>
        <tbody id="pair-body"></tbody>
      </table>
      <p class="muted">Highlighted rows differ between the two items.</p>
      <div class="buttons">
        <button type="button" class="same" data-answer="same">Same <kbd>s</kbd></button>
        <button type="button" class="different" data-answer="different">Different <kbd>d</kbd></button>
        <button type="button" class="unsure" data-answer="unsure">Can't tell <kbd>u</kbd></button>
        <button type="button" id="undo" disabled>Undo last <kbd>z</kbd></button>
      </div>
      <label class="muted" for="comment">Comment (optional, saved with the judgement)</label>
      <textarea id="comment" maxlength="2000"></textarea>
    </section>
    <div id="status" role="status" aria-live="polite"></div>
  </div>
  <div>
    <section>
      <h2>Progress</h2>
      <progress id="progress" value="0" max="1"></progress>
      <div id="progress-text" class="muted"></div>
    </section>
    <section class="gap">
      <h2>Live estimates (95% intervals)</h2>
      <div id="stop" hidden>The target interval width is reached: you can stop judging.</div>
      <table id="estimates"><thead><tr><th>metric</th><th class="num">estimate</th><th class="num">95% interval</th><th class="num">judged</th></tr></thead>
      <tbody id="estimates-body"></tbody></table>
      <p id="est-note" class="muted"></p>
      <p id="target" class="muted"></p>
    </section>
    <section id="agreement" class="gap" hidden>
      <h2>Agreement on replicated pairs</h2>
      <p id="agree-summary" class="muted"></p>
      <table><thead><tr><th>raters</th><th class="num">pairs</th><th class="num">Cohen's κ</th></tr></thead><tbody id="agree-body"></tbody></table>
    </section>
  </div>
</main>
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>abcde · judge pairs</title><style>" + STYLE + "</style></head><body>" + BODY
        + "<script>" + SCRIPT + "</script></body></html>\n")

CSP = ("default-src 'none'; script-src " + _hash(SCRIPT) + "; style-src " + _hash(STYLE)
       + "; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
