/* The owner's view of a judging server (web/templates/judge-owner.html), on the shared helpers of
 * assets/common.js: GET /api/owner every few seconds, rendered as text (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId: $, el, fmt} = abcde;
  let loads = 0;

  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
  }

  function renderVerdict(s) {
    const step = s.next_step;
    $("next-step").hidden = !step;
    $("next-text").textContent = step ? step.message : "";
    $("next-step-command").textContent = step ? step.command : "";
    const needs = s.needs || {};
    $("needs").hidden = !needs.message;
    $("needs").textContent = needs.message || "";
    const box = $("verdict"), note = $("verdict-note");
    box.replaceChildren();
    note.hidden = true;
    const v = s.verdict;
    if (!v) {
      note.hidden = false;
      note.textContent = "No verdict: the estimates are unavailable.";
    } else if (v.unavailable) {
      note.hidden = false;
      note.textContent = "The verdict is unavailable (" + v.unavailable + "); the estimates below still hold.";
    } else {
      const sentences = v.sentences && v.sentences.length ? v.sentences : [v.verdict];
      sentences.forEach((t, i) => box.append(el("p", {class: i === 0 ? "headline" : null}, t)));
    }
  }

  function renderEstimates(s) {
    const body = $("estimates-body");
    body.replaceChildren();
    $("stop").hidden = !s.can_stop;
    $("more").hidden = !s.more_pairs;
    if (s.more_pairs) {
      $("more-text").textContent = s.more_pairs.message;
      $("more-command").textContent = s.more_pairs.command || "";
      $("more-command").hidden = !s.more_pairs.command;
    }
    // No table of headers alone: when the estimator failed, the reason and what still works instead.
    $("estimates-box").hidden = !!s.estimates.unavailable;
    if (s.estimates.unavailable) {
      $("est-why").replaceChildren();
      $("est-note").textContent = "Live estimates are unavailable (" + s.estimates.unavailable +
        "); judgements are still saved. Try 'abcde quality' on the export.";
      return;
    }
    // A sample of one clustering's pairs (abcde precision) shows its Precision first.
    // The recall lift beside them, when the sample has agreed pairs (how many more true links Exp keeps).
    const rl = s.estimates[abcde.names().recall_metric];
    const keys = (s.estimates.precision ? ["precision"] : []).concat(abcde.names().quality_metrics,
      rl && rl.available ? [abcde.names().recall_metric] : []);
    for (const key of keys) {
      const e = s.estimates[key];
      body.append(el("tr", {"data-metric": key},
        el("th", null, abcde.label(key)),
        el("td", {class: "num estimate", "data-value": e.estimate === null ? "" : String(e.estimate)},
           abcde.estimate(key, e.estimate)),
        el("td", {class: "num interval", "data-low": e.ci_low === null ? "" : String(e.ci_low),
                  "data-high": e.ci_high === null ? "" : String(e.ci_high)},
           e.ci_low === null ? "n/a" : "[" + abcde.estimate(key, e.ci_low) + ", " + abcde.estimate(key, e.ci_high) + "]"),
        el("td", {class: "num"}, abcde.count(e.n_judgements))));
    }
    // Why an estimate is undefined, under the table (as the report and the terminal give it).
    $("est-why").replaceChildren(...keys.filter((k) => s.estimates[k].note).map(
      (k) => el("li", null, abcde.label(k) + ": " + s.estimates[k].note)),
      ...(rl && !rl.available && !s.estimates.precision ? [el("li", null, abcde.label(abcde.names().recall_metric) +
        ": not estimated: " + rl.note + (rl.command ? " (" + rl.command + ")" : ""))] : []));
    const design = [];
    if (s.estimates.census && s.estimates.census.length) design.push("judged whole (a census): " + s.estimates.census.join(", "));
    if (s.estimates.exact) design.push("every pair judged: the estimates are exact");
    $("est-note").textContent = "From the person judgements in the store, by the estimator behind 'abcde quality' (" +
      s.estimates.estimator + (s.estimates.allocation ? ", allocation " + s.estimates.allocation : "") +
      "). Judged pairs: " + s.estimates.judged_pairs + ", unsure: " + s.estimates.unsure_pairs +
      ", not judged: " + s.estimates.missing_pairs + (design.length ? "; " + design.join("; ") : "") + ".";
    $("target").textContent = s.settings.target_width === null ? "" :
      "Target width of " + abcde.label("delta_precision") + "'s 95% interval: " + abcde.four(s.settings.target_width) +
      "; now " + abcde.four(s.ci_width) + ".";
  }

  function renderProgress(s) {
    $("progress").max = s.pairs || 1;  // the bar says what the text says first: pairs judged
    $("progress").value = s.judged_pairs;
    $("progress-text").textContent = s.judged_pairs + " / " + s.pairs + " pairs judged (" + s.judgements + " of " +
      s.needed_judgements + " judgements incl. replicated; budget " + s.budget + ")" +
      (s.all_judged ? ": every pair has its judgements." : "");
    const unit = (s.needs && s.needs.unit) || "stratum";
    $("order-note").textContent = "Pairs are served first so that every " + unit + " gets two usable judgements, then " +
      (s.settings.allocation === "adaptive Neyman" ? "by adaptive Neyman allocation" : "as the sample is split over the " +
       (unit === "class" ? "classes" : "strata")) + "; each rater in their own random order (order seed " +
      s.settings.order_seed + ", judge serve --seed" + (s.settings.sample_seed === null || s.settings.sample_seed === undefined
        ? "" : "; the sample's pairs were drawn with seed " + s.settings.sample_seed + ", pairs --seed") + ").";
    const body = $("raters-body");
    body.replaceChildren();
    for (const r of s.rater_progress) {
      body.append(el("tr", null, el("td", null, r.rater), el("td", {class: "num"}, abcde.count(r.judgements)),
                     el("td", {class: "num"}, abcde.count(r.same)), el("td", {class: "num"}, abcde.count(r.different)),
                     el("td", {class: "num"}, abcde.count(r.unsure))));
    }
    $("raters-none").hidden = s.rater_progress.length > 0;
    $("raters-box").hidden = s.rater_progress.length === 0;
  }

  function renderDisputes(s) {
    const w = s.settle.waiting, done = s.settle.settled;
    const plural = (n, one, many) => n + " " + (n === 1 ? one : many);
    $("disputes-text").textContent = w
      ? plural(w, "pair", "pairs") + " judged differently by raters " + (w === 1 ? "waits" : "wait") +
        " for your vote (until then each counts as can't tell)" + (done ? "; " + plural(done, "pair", "pairs") + " settled." : ".")
      : done ? "Every disagreement is settled (" + plural(done, "pair", "pairs") + "); your votes count with the raters'."
             : "None: no pair judged by two or more raters has answers that tie" +
               (s.replicated_pairs ? "." : " (no pair is judged twice: serve with --replicate for some to be).");
    $("settle-link").textContent = w ? "Settle them" : "Open the settle page";
    $("settle-link").hidden = !w && !done;
    $("disputes").hidden = !s.replicated_pairs && !w && !done;  // nothing judged twice, nothing to say
    $("disputes").classList.toggle("attention", w > 0);
  }

  function renderAgreement(s) {
    const a = s.agreement, box = $("agreement");
    box.hidden = s.replicated_pairs === 0 && a.replicated_pairs === 0;
    // Every "n/a" with its reason; no table of headers alone.
    $("agree-summary").textContent = a.replicated_pairs === 0
      ? "No pair is judged by two raters yet (" + s.replicated_pairs + " are to be): agreement shows once one is."
      : "Pairs judged by two raters: " + a.replicated_pairs + " (of " + s.replicated_pairs + " replicated). Fleiss' kappa: " +
        (a.fleiss_kappa === null ? "n/a (" + a.fleiss_note + ")" : fmt(a.fleiss_kappa, 3)) + "; agreement: " +
        (a.percent_agreement === null ? "n/a" : (100 * a.percent_agreement).toFixed(1) + "%") + ".";
    const body = $("agree-body");
    body.replaceChildren();
    const why = [];
    for (const c of a.cohen) {
      const mark = c.note ? "n/a (" + (why.length + 1) + ")" : fmt(c.cohen_kappa, 3);
      if (c.note) why.push(el("li", null, "(" + (why.length + 1) + ") " + c.raters[0] + " & " + c.raters[1] + ": " + c.note + "."));
      body.append(el("tr", null, el("td", null, c.raters[0] + " & " + c.raters[1]), el("td", {class: "num"}, c.pairs),
                     el("td", {class: "num", "data-value": c.cohen_kappa === null ? "" : String(c.cohen_kappa)}, mark)));
    }
    $("agree-box").hidden = a.cohen.length === 0;
    $("agree-why").replaceChildren(...why);
  }

  async function load() {
    try {
      const s = await abcde.api("GET", "/api/owner");
      renderVerdict(s);
      renderEstimates(s);
      renderProgress(s);
      renderAgreement(s);
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
