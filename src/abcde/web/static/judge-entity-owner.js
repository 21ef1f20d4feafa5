/* The owner's view of an entity sample (web/templates/judge-entity-owner.html), on the shared helpers
 * of assets/common.js: GET /api/owner every few seconds (progress per rater, the live estimates of
 * 'abcde quality DIR', the answer counts, the answers to settle), rendered as text (abcde.el), never
 * as markup. */
(function () {
  "use strict";
  const {byId: $, el} = abcde;
  const LABELS = Object.freeze({delta_recall: "ΔRecall (pointwise)", iq: "IQ", delta_precision: "ΔPrecision (cross-check)"});
  let loads = 0;

  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
  }
  const isNum = (x) => typeof x === "number" && isFinite(x);
  // A percentage with its sign, as the terminal shows these numbers ("+1.23%", "-4.88%", "0.00%").
  function pct(x) {
    if (!isNum(x)) return "n/a";
    const t = (100 * x).toFixed(2);
    if (/^-?0\.00$/.test(t)) return "0.00%";
    return (x > 0 ? "+" : "") + t + "%";
  }
  const plural = (n, one, many) => abcde.count(n) + " " + (n === 1 ? one : many);

  function renderVerdict(s) {
    const step = s.next_step;
    $("next-step").hidden = !step;
    $("next-text").textContent = step ? step.message : "";
    $("next-step-command").textContent = step ? step.command : "";
    const e = s.estimates || {};
    $("verdict").textContent = e.unavailable ? "" : (s.verdict || "");
    $("verdict-note").hidden = !e.unavailable;
    $("verdict-note").textContent = e.unavailable ? "No verdict: the estimates are unavailable (" + e.unavailable +
      "); the answers are still saved." : "";
  }

  function renderEstimates(s) {
    const e = s.estimates || {};
    const body = $("estimates-body");
    body.replaceChildren();
    $("estimates-box").hidden = !!e.unavailable;
    if (e.unavailable) { $("est-note").textContent = ""; return; }
    for (const key of ["delta_recall", "iq", "delta_precision"]) {
      const m = e[key] || {};
      const point = m.estimate === null || m.estimate === undefined
        ? (m.bounds ? pct(m.bounds[0]) + " to " + pct(m.bounds[1]) : "n/a") : pct(m.estimate);
      body.append(el("tr", {"data-metric": key},
        el("th", null, LABELS[key]),
        el("td", {class: "num estimate", "data-value": isNum(m.estimate) ? String(m.estimate) : "",
                  "data-bounds": m.bounds ? m.bounds.join(" ") : ""}, point),
        el("td", {class: "num interval", "data-low": isNum(m.ci_low) ? String(m.ci_low) : "",
                  "data-high": isNum(m.ci_high) ? String(m.ci_high) : ""},
           isNum(m.ci_low) ? "[" + pct(m.ci_low) + ", " + pct(m.ci_high) + "]" : "n/a"),
        el("td", {class: "num"}, isNum(m.std_err) ? pct(m.std_err).replace("+", "") : "n/a"),
        el("td", {class: "num"}, abcde.count(m.draws))));
    }
    const how = [e.design + " design", e.census ? "a census of the affected items" : "sampled",
                 abcde.count(e.anchors_judged) + " of " + abcde.count(e.anchors) + " items judged"];
    if (e.search_skipped) how.push("search outside both clusters skipped for " + abcde.count(e.search_skipped));
    if (e.unsure_members) how.push(plural(e.unsure_members, "member", "members") + " unsure");
    $("est-note").textContent = "From estimate_entities, the estimator behind 'abcde quality' (" + how.join("; ") + ").";
  }

  function renderProgress(s) {
    $("progress").max = s.anchors || 1;
    $("progress").value = s.judged_anchors;
    $("progress-text").textContent = abcde.count(s.judged_anchors) + " / " + abcde.count(s.anchors) +
      " items answered" + (s.all_judged ? ": every drawn item has its answers." : " (the first " + abcde.count(s.prefix) +
      " in draw order without a gap).");
    const body = $("raters-body");
    body.replaceChildren();
    for (const r of s.rater_progress) {
      body.append(el("tr", null, el("td", null, r.rater), el("td", {class: "num"}, abcde.count(r.anchors)),
                     el("td", {class: "num"}, abcde.count(r.same)), el("td", {class: "num"}, abcde.count(r.different)),
                     el("td", {class: "num"}, abcde.count(r.unsure)),
                     el("td", {class: "num"}, abcde.count(r.searched) + " of " + abcde.count(r.searched + r.not_searched))));
    }
    $("raters-none").hidden = s.rater_progress.length > 0;
    $("raters-box").hidden = s.rater_progress.length === 0;
  }

  function renderAnswers(s) {
    const a = s.answers;
    if (!a) { $("answers-text").textContent = "The answer counts show with the estimates."; return; }
    $("answers-text").textContent = plural(a.answers, "item answered", "items answered") +
      " (members, candidates and items added; answers of " + a.source + "); " +
      plural(a.conflicts, "conflict", "conflicts") + " (two raters or sources answered an item differently: read as can't tell" +
      " until you settle it); " + plural(a.settled, "settled by you", "settled by you") + ".";
  }

  function renderDisputes(s) {
    const w = s.settle.waiting, done = s.settle.settled;
    $("disputes-text").textContent = w
      ? plural(w, "answer", "answers") + " where raters differ " + (w === 1 ? "waits" : "wait") +
        " for yours (until then each counts as can't tell)" + (done ? "; " + plural(done, "settled", "settled") + "." : ".")
      : done ? "Every difference is settled (" + plural(done, "item", "items") + "); your answers count instead of the conflicts."
             : "None: no two raters answered an item differently so far.";
    $("settle-link").textContent = w ? "Settle them" : "Open the settle page";
    $("disputes").classList.toggle("attention", w > 0);
  }

  async function load() {
    try {
      const s = await abcde.api("GET", "/api/owner");
      renderVerdict(s);
      renderEstimates(s);
      renderProgress(s);
      renderAnswers(s);
      renderDisputes(s);
      $("updated").textContent = "Updated " + new Date().toLocaleTimeString() + "; refreshes every 5 s.";
      status("");
      loads += 1;
      document.body.dataset.loads = String(loads);
    } catch (e) { status(e.message, true); }
  }

  load();
  setInterval(() => { if (document.visibilityState === "visible") load(); }, 5000);
})();
