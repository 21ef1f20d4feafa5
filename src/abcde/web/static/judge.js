/* The raters' judging page (web/templates/judge.html), on the shared helpers of assets/common.js:
 * progress and one pair at a time; no estimates (GET /api/state carries none; the owner's page has them).
 * Every value from the data goes in as text (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId: $, el, newId, ApiError} = abcde;
  let state = null, busy = false, acks = 0;
  // The page's mode, as the server rendered it: "open" (no invites: the name typed in), "rater"
  // (an invite link's: the server takes the name from it and says it in /api/state) or "owner"
  // (the owner's link: progress only, it judges nothing).
  const mode = $("judge-mode").dataset.mode;

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
  function statePath() { return mode === "open" ? "/api/state?rater=" + encodeURIComponent(rater()) : "/api/state"; }

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

  function render(s) {
    state = s;
    $("progress").max = s.pairs || 1;  // the bar says what the text says first: pairs judged
    $("progress").value = s.judged_pairs;
    $("progress-text").textContent = s.judged_pairs + " / " + s.pairs + " pairs judged" +
      (s.replicated_pairs ? " (" + s.judgements + " of " + s.needed_judgements + " judgements: some pairs are judged by two people)" : "") +
      (s.rater !== undefined ? "; you: " + s.rater_judgements : "");
    if (s.rater !== undefined) {
      renderPair(s.next);
      $("done-title").textContent = s.all_judged ? "Thank you — all pairs judged" : "Nothing left for you to judge";
      $("done-text").textContent = s.all_judged ? "Every pair has the judgements it needs." :
        "The pairs still open need a judgement from another rater (some pairs are judged by two people). Thank you!";
      $("undo").disabled = !s.can_undo;
    }
  }

  async function load() {
    if (mode === "open" && !rater()) { $("start").hidden = false; $("judge").hidden = true; $("done").hidden = true; return; }
    $("start").hidden = true;
    try {
      const s = await api("GET", statePath());
      if (mode === "rater") { $("rater").value = s.rater; $("signed-in-name").textContent = s.rater; }
      render(s);
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

  if (mode === "open") {
    const u = new URL(window.location.href);
    let r = u.searchParams.get("rater");
    if (!r) { try { r = localStorage.getItem("abcde-rater"); } catch (e) { /* no storage */ } }
    if (r) $("rater").value = r;
  }
  load();
  // Other raters' judgements move the progress: refresh it now and then
  // (the pair on screen is kept as long as it is still this rater's next one).
  setInterval(() => {
    if (busy || mode === "owner" || !rater() || document.visibilityState !== "visible") return;
    api("GET", statePath()).then((d) => {
      if (!busy && state && d.next && state.next && d.next.pair_id === state.next.pair_id) render(d);
    }).catch(() => {});
  }, 15000);
})();
