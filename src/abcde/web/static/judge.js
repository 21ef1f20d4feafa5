/* The raters' judging page (web/templates/judge.html), on the shared helpers of assets/common.js and
 * static/judge-pair.js: progress and one pair at a time, and the rater's own judgements (GET
 * /api/mine), each of which opens (GET /api/mine/pair) to be changed (POST /api/change: a new
 * judgement that supersedes the old one, which the store keeps). No estimates (GET /api/state
 * carries none; the owner's page has them). Every value from the data goes in as text (abcde.el),
 * never as markup. */
(function () {
  "use strict";
  const {byId: $, el, newId, ApiError} = abcde;
  const {ANSWERS} = judgePair;
  let state = null, busy = false, acks = 0, changes = 0;
  // The past judgement open to be changed ({pair_id, number, judgement}), or null: judging new pairs.
  let review = null;
  let mineOffset = 0, mineLimit = 20;
  // The page's mode, as the server rendered it: "open" (no invites: the name typed in), "rater"
  // (an invite link's: the server takes the name from it and says it in /api/state) or "owner"
  // (the owner's link: progress only, it judges nothing).
  const mode = $("judge-mode").dataset.mode;
  // What a pair asks: whether the items are one thing; in a sample about ids (abcde ids), one real-world thing.
  const THING = $("pair").dataset.question === "ids" ? "the same real-world thing" : "the same thing";

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
  // A path with the rater's name where the page says it (no invites); with invites the server knows it.
  function withRater(path) {
    if (mode !== "open") return path;
    return path + (path.includes("?") ? "&" : "?") + "rater=" + encodeURIComponent(rater());
  }
  function when(ts) {
    const d = new Date(ts);
    return isNaN(d) ? String(ts) : d.toLocaleString([], {dateStyle: "medium", timeStyle: "short"});
  }
  function answerButtons() { return document.querySelectorAll("button[data-answer]"); }

  function showPair(view) {
    $("pair").dataset.pairId = view.pair_id;
    $("ids").hidden = !view.ids;
    if (view.ids) { $("id-a").textContent = view.ids[0]; $("id-b").textContent = view.ids[1]; }
    judgePair.render($("pair-body"), view);
  }

  function renderPair(next) {
    if (!next) {
      $("pair").dataset.pairId = "";
      $("pair-body").replaceChildren();
      $("done").hidden = false; $("judge").hidden = true;
      return;
    }
    $("done").hidden = true; $("judge").hidden = false;
    showPair(next);
  }

  // Judging new pairs (r null) or reviewing one of the rater's own judgements (r: which).
  function setReview(r) {
    review = r;
    $("review").hidden = !r;
    $("judge-title").textContent = r ? "Your judgement #" + r.number + ": do these two items refer to " + THING + "?"
                                     : "Do these two items refer to " + THING + "?";
    for (const b of answerButtons()) {
      const current = !!r && b.dataset.answer === r.judgement;
      b.classList.toggle("current", current);
      if (r) b.setAttribute("aria-pressed", current ? "true" : "false"); else b.removeAttribute("aria-pressed");
    }
    $("undo").hidden = !!r;
    document.body.dataset.reviewing = r ? r.pair_id : "";
    for (const tr of $("mine-body").children) tr.classList.toggle("open", !!r && tr.dataset.pairId === r.pair_id);
  }

  // saved: a sentence for the done state when the answer just saved was the last one (no stale status).
  function render(s, saved) {
    state = s;
    $("progress").max = s.pairs || 1;  // the bar says what the text says first: pairs judged
    $("progress").value = s.judged_pairs;
    $("progress-text").textContent = s.judged_pairs + " / " + s.pairs + " pairs judged" +
      (s.replicated_pairs ? " (" + s.judgements + " of " + s.needed_judgements + " judgements: some pairs are judged by two people)" : "") +
      (s.rater !== undefined ? "; you: " + s.rater_judgements : "");
    if (s.rater !== undefined) {
      if (!review) renderPair(s.next);
      $("done-title").textContent = s.all_judged ? "Thank you — all pairs judged" : "Nothing left for you to judge";
      $("done-text").textContent = s.all_judged ? "Every pair has the judgements it needs." :
        "The pairs still open need a judgement from another rater (some pairs are judged by two people). Thank you!";
      $("done-next").hidden = !s.all_judged;
      $("done-later").hidden = s.all_judged;
      $("done-saved").hidden = !saved;
      $("done-saved").textContent = saved || "";
      $("undo").disabled = !s.can_undo;
    }
  }

  async function load() {
    if (mode === "open" && !rater()) {
      $("start").hidden = false; $("judge").hidden = true; $("done").hidden = true; $("mine-box").hidden = true;
      return;
    }
    $("start").hidden = true;
    try {
      const s = await api("GET", withRater("/api/state"));
      if (mode === "rater") { $("rater").value = s.rater; $("signed-in-name").textContent = s.rater; }
      // the instructions stay open until the rater's first judgement, then fold away (a click opens them)
      if ($("instructions") && s.rater_judgements && !state) $("instructions").open = false;
      render(s);
      status("");
    } catch (e) { status(e.message, true); }
    loadMine();
  }

  async function judge(answer) {
    if (busy || !state) return;
    if (review) { change(answer); return; }
    if (!state.next) return;
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
      render(d, d.next ? null : "Your last answer (" + ANSWERS[answer] + ") is saved.");
      status(d.next ? "Saved: " + answer + "." : "");
      mineOffset = 0;
      loadMine();
    } catch (e) { status(e.message, true); }
    finally { busy = false; setButtons(false); }
  }

  // A changed answer: a new judgement that supersedes the old one (kept in the store's history).
  async function change(answer) {
    const r = review;
    busy = true;
    setButtons(true);
    status("Saving…");
    try {
      const d = await api("POST", "/api/change", {rater: rater(), pair_id: r.pair_id, judgement: answer,
                                                 comment: $("comment").value, request_id: newId()});
      changes += 1;
      document.body.dataset.changes = String(changes);
      $("comment").value = "";
      setReview(null);
      render(d);
      status(d.changed ? "Changed #" + r.number + ": " + ANSWERS[d.was.judgement] + " → " + ANSWERS[d.now.judgement] +
                         ". The new answer counts; the old one is kept in the history."
                       : "#" + r.number + " is unchanged: your answer was already " + ANSWERS[answer] + ".");
      loadMine();
    } catch (e) { status(e.message, true); }
    finally { busy = false; setButtons(false); }
  }

  async function openMine(pid, number) {
    if (busy) return;
    try {
      const d = await api("GET", withRater("/api/mine/pair?pair_id=" + encodeURIComponent(pid)));
      const j = d.judgement;
      $("done").hidden = true; $("judge").hidden = false;
      showPair(d.pair);
      setReview({pair_id: pid, number: number, judgement: j.judgement});
      $("review-text").textContent = "You answered " + ANSWERS[j.judgement] + " (" + when(j.created_at) +
        "). Choose an answer to change it; the new answer counts and the old one is kept.";
      const hist = $("review-history");
      hist.replaceChildren(...d.history.map((h) => el("li", {class: h.ended ? "ended" : "live"},
        ANSWERS[h.judgement] + " · " + when(h.created_at) +
        (h.ended === "changed" ? " · changed" : h.ended === "undone" ? " · undone" : " · counts now") +
        (h.comment ? " · “" + h.comment + "”" : ""))));
      hist.hidden = d.history.length < 2;
      $("comment").value = j.comment || "";
      status("");
      $("judge").scrollIntoView({block: "nearest"});
    } catch (e) { status(e.message, true); }
  }

  function back() {
    if (!review) return;
    setReview(null);
    $("comment").value = "";
    status("");
    load();
  }

  async function loadMine() {
    if (mode === "owner" || !rater()) { $("mine-box").hidden = true; return; }
    try {
      const d = await api("GET", withRater("/api/mine?offset=" + mineOffset));
      if (d.total > 0 && mineOffset >= d.total) { mineOffset = Math.max(0, d.total - d.limit); return loadMine(); }
      renderMine(d);
    } catch (e) { status(e.message, true); }
  }

  function renderMine(d) {
    $("mine-box").hidden = false;
    $("mine-empty").hidden = d.total > 0;
    $("mine").hidden = d.total === 0;
    const body = $("mine-body");
    body.replaceChildren();
    for (const j of d.judgements) {
      body.append(el("tr", {"data-pair-id": j.pair_id, class: review && review.pair_id === j.pair_id ? "open" : null},
        el("td", {class: "num"}, String(j.number)),
        el("td", null, el("span", {class: "answer " + j.judgement}, ANSWERS[j.judgement]),
           j.versions > 1 ? el("span", {class: "muted versions"}, " · " + j.versions + " versions") : null),
        el("td", null, el("button", {type: "button", class: "open-pair", title: "Open this pair to change your answer",
                                     onclick: () => openMine(j.pair_id, j.number)},
          el("span", {class: "item"}, "A: " + (j.items[0] || "(empty)")),
          el("span", {class: "item"}, "B: " + (j.items[1] || "(empty)"))))));
    }
    mineLimit = d.limit;
    const paged = d.total > d.limit;
    $("mine-pager").hidden = !paged;
    $("mine-range").textContent = paged ? (d.offset + 1) + "–" + Math.min(d.total, d.offset + d.limit) + " of " + d.total : "";
    $("mine-newer").disabled = d.offset === 0;
    $("mine-older").disabled = d.offset + d.limit >= d.total;
    document.body.dataset.mine = String(d.total);
  }

  function setButtons(disabled) {
    for (const b of answerButtons()) b.disabled = disabled;
    $("undo").disabled = disabled || !(state && state.can_undo);
  }

  async function undo() {
    if (busy || review || !rater()) return;
    busy = true;
    setButtons(true);
    try {
      const d = await api("POST", "/api/undo", {rater: rater()});
      render(d);
      status("Undone: your last judgement (" + ANSWERS[d.undone.judgement] + ") is withdrawn; judge that pair again.");
      loadMine();
    } catch (e) { status(e.message, true); }
    finally { busy = false; setButtons(false); }
  }

  function setRater() {
    const r = rater();
    try { localStorage.setItem("abcde-rater", r); } catch (e) { /* private mode: the URL keeps it */ }
    const u = new URL(window.location.href);
    u.searchParams.set("rater", r);
    history.replaceState(null, "", u.pathname + u.search);
    setReview(null);
    state = null;
    mineOffset = 0;
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
    else if (ev.key === "Escape" && review) { ev.preventDefault(); back(); }
  });

  for (const b of answerButtons()) b.addEventListener("click", () => judge(b.dataset.answer));
  $("undo").addEventListener("click", undo);
  $("go").addEventListener("click", setRater);
  $("back").addEventListener("click", back);
  $("mine-newer").addEventListener("click", () => { mineOffset = Math.max(0, mineOffset - mineLimit); loadMine(); });
  $("mine-older").addEventListener("click", () => { mineOffset += mineLimit; loadMine(); });

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
    if (busy || review || mode === "owner" || !rater() || document.visibilityState !== "visible") return;
    api("GET", withRater("/api/state")).then((d) => {
      if (!busy && !review && state && d.next && state.next && d.next.pair_id === state.next.pair_id) render(d);
    }).catch(() => {});
  }, 15000);
})();
