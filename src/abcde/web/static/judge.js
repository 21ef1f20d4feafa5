/* The judging page (web/templates/judge.html), on the shared helpers of assets/common.js.
 * Every value from the data goes in as text (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId: $, el, fmt, newId, ApiError} = abcde;
  let state = null, busy = false, acks = 0;

  async function api(method, path, body) {
    try { return await abcde.api(method, path, body); }
    catch (e) {
      if (e instanceof ApiError && e.status === 0) {
        throw new ApiError("The server cannot be reached; nothing was saved. Check that 'abcde judge serve' runs, then reload.", 0);
      }
      throw e;
    }
  }
  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
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
      const tr = el("tr", {class: a.differs ? "differs" : null}, el("th", null, a.name));
      for (const v of [a.a, a.b]) tr.append(el("td", {class: "value" + (v === null ? " null" : "")}, v === null ? "(empty)" : v));
      body.append(tr);
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
    if (s.estimates.unavailable) {
      $("est-note").textContent = "Live estimates are unavailable (" + s.estimates.unavailable +
        "); judgements are still saved. Try 'abcde quality' on the export.";
      return;
    }
    // A sample of one clustering's pairs (abcde precision) shows its Precision first.
    const keys = (s.estimates.precision ? ["precision"] : []).concat(abcde.names().quality_metrics);
    for (const key of keys) {
      const e = s.estimates[key];
      body.append(el("tr", {"data-metric": key},
        el("th", null, abcde.label(key)),
        el("td", {class: "num estimate", "data-value": e.estimate === null ? "" : String(e.estimate)},
           abcde.four(e.estimate)),
        el("td", {class: "num interval", "data-low": e.ci_low === null ? "" : String(e.ci_low),
                  "data-high": e.ci_high === null ? "" : String(e.ci_high)},
           e.ci_low === null ? "n/a" : "[" + abcde.four(e.ci_low) + ", " + abcde.four(e.ci_high) + "]"),
        el("td", {class: "num"}, abcde.count(e.n_judgements))));
    }
    // Why an estimate is undefined, under the table (as the report and the terminal give it).
    $("est-why").replaceChildren(...keys.filter((k) => s.estimates[k].note).map(
      (k) => el("li", null, abcde.label(k) + ": " + s.estimates[k].note)));
    const design = [];
    if (s.estimates.census && s.estimates.census.length) design.push("judged whole (a census): " + s.estimates.census.join(", "));
    if (s.estimates.exact) design.push("every pair judged: the estimates are exact");
    $("est-note").textContent = "From the person judgements in the store, by the estimator behind 'abcde quality' (" +
      s.estimates.estimator + (s.estimates.allocation ? ", allocation " + s.estimates.allocation : "") +
      (s.settings.allocation === "adaptive Neyman" ? "; pairs served by adaptive Neyman allocation" : "") +
      "). Judged pairs: " + s.estimates.judged_pairs + ", unsure: " + s.estimates.unsure_pairs +
      ", not judged: " + s.estimates.missing_pairs + (design.length ? "; " + design.join("; ") : "") + ".";
    if (s.settings.target_width !== null) {
      $("target").textContent = "Target width of " + abcde.label("delta_precision") + "'s 95% interval: " + abcde.four(s.settings.target_width) +
        "; now " + abcde.four(s.ci_width) + ".";
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
      body.append(el("tr", null, el("td", null, c.raters[0] + " & " + c.raters[1]), el("td", {class: "num"}, c.pairs),
                     el("td", {class: "num"}, fmt(c.cohen_kappa, 3))));
    }
  }

  function render(s) {
    state = s;
    $("progress").max = s.pairs || 1;  // the bar says what the text says first: pairs judged
    $("progress").value = s.judged_pairs;
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
    try { localStorage.setItem("abcde-rater", r); } catch (e) { /* private mode: the URL keeps it */ }
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

  const u = new URL(window.location.href);
  let r = u.searchParams.get("rater");
  if (!r) { try { r = localStorage.getItem("abcde-rater"); } catch (e) { /* no storage */ } }
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
