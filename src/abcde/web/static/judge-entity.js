/* The raters' page of an entity sample (web/templates/judge-entity.html; abcde.web.routes_entities):
 * "complete this item's entity", one anchor at a time, keyboard first.
 *
 *   GET  /api/state      progress and the rater's next anchor: the item, its members (shuffled, never
 *                        labelled Base or Exp) and its candidates, each item by an opaque reference
 *   GET  /api/search     the sample's items matching some words (shown attributes only)
 *   POST /api/answers    every answer of the anchor: members, items added, searched or not
 *   POST /api/undo       the rater's last anchor back, answers filled in
 *
 * Rows (members, then candidates, then search results) are walked with j/k (or the arrows); s, d, u
 * answer a member (and move on); on a candidate or a result, a (or s) adds it, d takes it back; /
 * searches; y / n say whether the entity's items outside both clusters were searched for; Enter
 * submits; z (or Backspace) undoes the last anchor. Every value from the data goes in as text
 * (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId: $, el, newId, ApiError} = abcde;
  const WORDS = Object.freeze({same: "same", different: "different", unsure: "can't tell"});
  const mode = $("judge-mode").dataset.mode;
  let state = null, task = null, busy = false, acks = 0, undos = 0;
  let answers = new Map();   // member ref -> same | different | unsure
  let added = new Map();     // ref -> item view ({ref, values, id?})
  let search = null;         // "searched" | "not searched" | null
  let results = [];          // the last search's items
  let focusAt = 0;

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
  function withRater(path) {
    if (mode !== "open") return path;
    return path + (path.includes("?") ? "&" : "?") + "rater=" + encodeURIComponent(rater());
  }

  // ------------------------------------------------------------------ the tables
  function valueCell(value, anchorValue) {
    if (value === null) return el("td", {class: "value null" + (anchorValue !== null ? " differs" : "")}, "(empty)");
    const differs = anchorValue === null || anchorValue !== value;
    const td = el("td", {class: "value" + (differs ? " differs" : "")});
    const d = differs && anchorValue !== null ? judgePair.charDiff(anchorValue, value) : null;
    if (!d) { td.append(value); return td; }
    for (const [text, same] of d[1]) td.append(same ? document.createTextNode(text) : el("mark", {class: "d"}, text));
    return td;
  }

  function head(thead, label) {
    const cols = task.columns;
    const ids = task.item.id !== undefined;
    thead.replaceChildren(
      el("tr", null, el("th", null, label), ids ? el("th", null, "id") : null, ...cols.map((c) => el("th", null, c))),
      el("tr", {class: "anchor"}, el("th", null, "the item"), ids ? el("td", {class: "value"}, task.item.id) : null,
         ...task.item.values.map((v) => el("td", {class: "value" + (v === null ? " null" : "")}, v === null ? "(empty)" : v))));
  }

  function itemCells(item) {
    const cells = [];
    if (item.id !== undefined) cells.push(el("td", {class: "value"}, item.id));
    item.values.forEach((v, k) => cells.push(valueCell(v, task.item.values[k])));
    return cells;
  }

  function memberRow(m, k) {
    const buttons = ["same", "different", "unsure"].map((a) => el("button", {
      type: "button", class: "tick " + a, "data-answer": a, "aria-pressed": "false", title: WORDS[a],
      onclick: () => { setFocus(rowIndex(m.ref)); answer(m.ref, a); }}, {same: "same", different: "diff.", unsure: "?"}[a]));
    return el("tr", {class: "row member", "data-ref": m.ref, "data-kind": "member"},
              el("td", {class: "ticks"}, el("span", {class: "n"}, String(k + 1)), ...buttons), ...itemCells(m));
  }

  function addRow(item, kind) {
    return el("tr", {class: "row " + kind, "data-ref": item.ref, "data-kind": kind},
              el("td", {class: "ticks"}, el("button", {type: "button", class: "add", "aria-pressed": "false",
                onclick: () => { setFocus(rowIndex(item.ref, kind)); toggleAdd(item); }}, "add")),
              ...itemCells(item));
  }

  function rows() { return Array.from(document.querySelectorAll("#task tr.row")); }
  function rowIndex(ref, kind) {
    return rows().findIndex((r) => r.dataset.ref === ref && (!kind || r.dataset.kind === kind));
  }
  function setFocus(i) {
    const rs = rows();
    if (!rs.length) return;
    focusAt = Math.max(0, Math.min(rs.length - 1, i));
    rs.forEach((r, k) => r.classList.toggle("focus", k === focusAt));
    rs[focusAt].scrollIntoView({block: "nearest"});
  }

  function paint() {
    for (const tr of document.querySelectorAll("#members-body tr")) {
      const a = answers.get(tr.dataset.ref);
      tr.dataset.answer = a || "";
      for (const b of tr.querySelectorAll("button.tick")) b.setAttribute("aria-pressed", b.dataset.answer === a ? "true" : "false");
    }
    for (const tr of document.querySelectorAll("#candidates-body tr, #results-body tr")) {
      const on = added.has(tr.dataset.ref);
      tr.classList.toggle("added", on);
      const b = tr.querySelector("button.add");
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.textContent = on ? "added ✓" : "add";
    }
    const list = $("added");
    list.replaceChildren(...Array.from(added.values()).map((it) => el("li", {"data-ref": it.ref},
      summary(it) + " ", el("button", {type: "button", class: "remove", onclick: () => toggleAdd(it)}, "remove"))));
    $("added-box").hidden = added.size === 0;
    for (const b of document.querySelectorAll("button.search-choice")) b.setAttribute("aria-pressed", b.dataset.search === search ? "true" : "false");
    const left = task ? task.members.filter((m) => !answers.has(m.ref)).length : 0;
    const needs = [];
    if (left) needs.push(left + " row" + (left > 1 ? "s" : "") + " to answer");
    if (!search) needs.push("say whether you searched (y / n)");
    $("missing").textContent = needs.length ? "Before submitting: " + needs.join("; ") + "." : "Ready: Enter submits.";
    if ($("status").className === "error" && $("status").textContent.startsWith("Before submitting")) status(needs.length ? $("missing").textContent : "", !!needs.length);
    document.body.dataset.ready = needs.length ? "" : "1";
  }

  function summary(item) {
    const vals = item.values.filter((v) => v !== null && String(v).trim());
    const t = vals.slice(0, 4).join(" · ");
    return t.length > 70 ? t.slice(0, 69) + "…" : t || "(empty)";
  }

  function renderTask(t, prefill) {
    task = t;
    answers = new Map(); added = new Map(); search = null;
    if (prefill && prefill.anchor === t.anchor) {
      for (const [ref, a] of Object.entries(prefill.members)) answers.set(ref, a);
      for (const it of prefill.added) added.set(it.ref, it);
      search = prefill.search;
    }
    $("task").dataset.anchor = t.anchor;
    $("task-number").textContent = "Item " + t.number + " of " + state.anchors + " in draw order · " +
      (t.members_total > t.members.length
        ? "a random " + t.members.length + " of the " + t.members_total + " items in its clusters (too many to answer each; the estimates count them)"
        : t.members.length + " item" + (t.members.length === 1 ? "" : "s") + " in its clusters");
    head($("members-head"), "answer");
    $("members-body").replaceChildren(...t.members.map(memberRow));
    const nc = t.candidates.length;
    $("candidates-box").hidden = nc === 0;
    $("candidates-note").textContent = nc ? nc + " candidate" + (nc > 1 ? "s" : "") + " sharing a key with the item, in neither cluster; add any that is the same entity, or search below."
                                          : "No candidates are listed for this item; search for its other items below.";
    if (nc) head($("candidates-head"), "candidate");
    $("candidates-body").replaceChildren(...t.candidates.map((c) => addRow(c, "candidate")));
    $("results-body").replaceChildren();
    results = [];
    $("results-box").hidden = true; $("search-note").hidden = true; $("search").value = "";
    setFocus(0);
    paint();
  }

  function render(s, prefill) {
    state = s;
    $("progress").max = s.anchors || 1;
    $("progress").value = s.judged_anchors;
    $("progress-text").textContent = s.judged_anchors + " / " + s.anchors + " items completed" +
      (s.rater !== undefined ? "; you: " + s.rater_anchors : "");
    if (s.rater === undefined) return;
    $("undo").disabled = !s.can_undo;
    if (!s.next) {
      task = null;
      $("task").dataset.anchor = "";
      $("task").hidden = true; $("done").hidden = false;
      return;
    }
    $("done").hidden = true; $("task").hidden = false;
    if (!task || task.anchor !== s.next.anchor || prefill) renderTask(s.next, prefill);
  }

  // ------------------------------------------------------------------ what the rater does
  function answer(ref, a) {
    if (busy || !task) return;
    answers.set(ref, a);
    paint();
    // on to the next row still to answer (or the next row)
    const rs = rows();
    let k = focusAt + 1;
    while (k < rs.length && rs[k].dataset.kind === "member" && answers.has(rs[k].dataset.ref)) k++;
    setFocus(k < rs.length ? k : focusAt);
  }

  function toggleAdd(item, on) {
    if (busy || !task) return;
    const want = on === undefined ? !added.has(item.ref) : on;
    if (want) added.set(item.ref, item); else added.delete(item.ref);
    paint();
  }

  function chooseSearch(v) {
    if (busy || !task) return;
    search = v;
    paint();
  }

  async function runSearch() {
    if (!task) return;
    const q = $("search").value.trim();
    try {
      const d = await api("GET", withRater("/api/search?anchor=" + encodeURIComponent(task.anchor) + "&q=" + encodeURIComponent(q)));
      if (!task) return;
      results = d.results;
      if (d.results.length) head($("results-head"), "found");
      $("results-body").replaceChildren(...d.results.map((r) => addRow(r, "result")));
      $("results-box").hidden = d.results.length === 0;
      $("search-note").hidden = false;
      $("search-note").textContent = !q ? "Type some words to search." : d.total === 0 ? "No item matches “" + q + "”." :
        d.total + " item" + (d.total > 1 ? "s match" : " matches") + " “" + q + "”" + (d.total > d.results.length ? " (the first " + d.results.length + " shown: add words to narrow it)" : "") + ".";
      document.body.dataset.searches = String(Number(document.body.dataset.searches || "0") + 1);
      paint();
      if (d.results.length) { $("search").blur(); setFocus(rowIndex(d.results[0].ref, "result")); }
    } catch (e) { status(e.message, true); }
  }

  async function submit() {
    if (busy || !task) return;
    const left = task.members.filter((m) => !answers.has(m.ref));
    if (left.length || !search) {
      paint();
      status($("missing").textContent, true);
      if (left.length) setFocus(rowIndex(left[0].ref, "member"));
      return;
    }
    busy = true; setButtons(true);
    status("Saving…");
    try {
      const body = {rater: rater(), anchor: task.anchor, search: search, request_id: newId(),
                    members: task.members.map((m) => ({ref: m.ref, answer: answers.get(m.ref)})),
                    added: Array.from(added.keys()).map((ref) => ({ref: ref}))};
      const number = task.number;
      const d = await api("POST", "/api/answers", body);
      acks += 1;
      document.body.dataset.acks = String(acks);
      task = null;
      render(d);
      status("Saved: item " + number + " (" + d.recorded.answers + " answers).");
      if (!d.next) { $("done-saved").hidden = false; $("done-saved").textContent = "Your last item is saved."; }
    } catch (e) { status(e.message, true); }
    finally { busy = false; setButtons(false); }
  }

  async function undo() {
    if (busy || !rater() || !state || !state.can_undo) return;
    busy = true; setButtons(true);
    try {
      const d = await api("POST", "/api/undo", {rater: rater()});
      undos += 1;
      document.body.dataset.undos = String(undos);
      task = null;
      render(d, d.undone);
      status("Undone: your answers of the last item are withdrawn; they are filled in below to change and submit again.");
    } catch (e) { status(e.message, true); }
    finally { busy = false; setButtons(false); }
  }

  function setButtons(disabled) {
    for (const b of document.querySelectorAll("#task button")) b.disabled = disabled;
    if (!disabled) $("undo").disabled = !(state && state.can_undo);
  }

  async function load() {
    if (mode === "open" && !rater()) {
      $("start").hidden = false; $("task").hidden = true; $("done").hidden = true;
      return;
    }
    $("start").hidden = true;
    try {
      const s = await api("GET", withRater("/api/state"));
      if (mode === "rater") { $("rater").value = s.rater; $("signed-in-name").textContent = s.rater; }
      if ($("instructions") && s.rater_anchors && !state) $("instructions").open = false;
      task = null;
      render(s);
      status("");
    } catch (e) { status(e.message, true); }
  }

  function setRater() {
    const r = rater();
    try { localStorage.setItem("abcde-rater", r); } catch (e) { /* private mode: the URL keeps it */ }
    const u = new URL(window.location.href);
    u.searchParams.set("rater", r);
    history.replaceState(null, "", u.pathname + u.search);
    state = null; task = null;
    load();
  }

  function focused() { const rs = rows(); return rs[focusAt] || null; }
  function itemOf(tr) {
    const ref = tr.dataset.ref;
    if (tr.dataset.kind === "candidate") return task.candidates.find((c) => c.ref === ref);
    return added.get(ref) || results.find((r) => r.ref === ref);
  }

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) {
      if (ev.key === "Escape") t.blur();
      if (ev.key === "Enter" && t.id === "rater") { ev.preventDefault(); setRater(); t.blur(); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !task) {
      if (!task && (ev.key === "z" || ev.key === "Backspace") && state && state.can_undo) { ev.preventDefault(); undo(); }
      return;
    }
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    const tr = focused();
    const kind = tr ? tr.dataset.kind : null;
    if (k === "j" || k === "ArrowDown") { ev.preventDefault(); setFocus(focusAt + 1); }
    else if (k === "k" || k === "ArrowUp") { ev.preventDefault(); setFocus(focusAt - 1); }
    else if (kind === "member" && (k === "s" || k === "1")) { ev.preventDefault(); answer(tr.dataset.ref, "same"); }
    else if (kind === "member" && (k === "d" || k === "2")) { ev.preventDefault(); answer(tr.dataset.ref, "different"); }
    else if (kind === "member" && (k === "u" || k === "c" || k === "3")) { ev.preventDefault(); answer(tr.dataset.ref, "unsure"); }
    else if (kind && kind !== "member" && (k === "a" || k === "s")) { ev.preventDefault(); toggleAdd(itemOf(tr), k === "s" ? true : undefined); setFocus(focusAt + 1); }
    else if (kind && kind !== "member" && k === "d") { ev.preventDefault(); toggleAdd(itemOf(tr), false); setFocus(focusAt + 1); }
    else if (k === "/") { ev.preventDefault(); $("search").focus(); }
    else if (k === "y") { ev.preventDefault(); chooseSearch("searched"); }
    else if (k === "n") { ev.preventDefault(); chooseSearch("not searched"); }
    else if (k === "Enter") { ev.preventDefault(); submit(); }
    else if (k === "z" || k === "Backspace") { ev.preventDefault(); undo(); }
  });

  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); runSearch(); });
  for (const b of document.querySelectorAll("button.search-choice")) b.addEventListener("click", () => chooseSearch(b.dataset.search));
  $("submit").addEventListener("click", submit);
  $("undo").addEventListener("click", undo);
  $("go").addEventListener("click", setRater);

  if (mode === "open") {
    const u = new URL(window.location.href);
    let r = u.searchParams.get("rater");
    if (!r) { try { r = localStorage.getItem("abcde-rater"); } catch (e) { /* no storage */ } }
    if (r) $("rater").value = r;
  }
  load();
  // Other raters move the progress: refresh it now and then (the item on screen stays).
  setInterval(() => {
    if (busy || mode === "owner" || !rater() || !state || document.visibilityState !== "visible") return;
    api("GET", withRater("/api/state")).then((d) => {
      if (busy || !state) return;
      $("progress").value = d.judged_anchors;
      $("progress-text").textContent = d.judged_anchors + " / " + d.anchors + " items completed; you: " + d.rater_anchors;
    }).catch(() => {});
  }, 15000);
})();
