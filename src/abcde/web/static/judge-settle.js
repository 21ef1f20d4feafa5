/* The owner's settle queue (web/templates/judge-settle.html), on assets/common.js and
 * static/judge-pair.js: GET /api/owner/settle lists the pairs whose raters' votes tie and those the
 * owner settled; one pair at a time with every rater's answer; POST /api/owner/settle records the
 * owner's vote (rater "owner", one more vote under the vote rule, counted while the raters' votes tie
 * and every one of them was there when the owner answered). A pair waiting again after a new vote
 * shows the owner's earlier answer (owner_earlier), which does not count. Every value goes in as text. */
(function () {
  "use strict";
  const {byId: $, el, newId} = abcde;
  const {ANSWERS} = judgePair;
  let data = null, current = null, busy = false, settles = 0;

  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
  }
  function items() { return data ? data.waiting.concat(data.settled) : []; }
  function find(pid) { return items().find((x) => x.pair.pair_id === pid) || null; }
  // Each item in a few words: its first three values that are not empty.
  function summary(view, side) {
    const vals = view.attributes.map((a) => a[side]).filter((v) => v !== null && String(v).trim() !== "").slice(0, 3);
    const t = vals.join(" · ");
    return t.length > 60 ? t.slice(0, 59) + "…" : (t || "(empty)");
  }
  function votesText(x) {
    return x.votes.map((v) => ANSWERS[v.judgement]).join(" / ") + (x.owner ? " + yours: " + ANSWERS[x.owner]
      : x.owner_earlier ? " (your earlier vote, " + ANSWERS[x.owner_earlier] + ", does not count)" : "");
  }

  function pairCell(x) {
    return el("td", null, el("button", {type: "button", class: "open-pair", onclick: () => open(x.pair.pair_id)},
      el("span", {class: "item"}, "A: " + summary(x.pair, "a")), el("span", {class: "item"}, "B: " + summary(x.pair, "b"))));
  }

  function renderLists() {
    $("waiting-count").textContent = "(" + data.waiting_total + ")";
    $("waiting-none").hidden = data.waiting_total > 0;
    $("waiting").hidden = data.waiting_total === 0;
    $("waiting-body").replaceChildren(...data.waiting.map((x) => el("tr", {"data-pair-id": x.pair.pair_id,
      class: x.pair.pair_id === current ? "open" : null}, pairCell(x), el("td", null, votesText(x)))));
    $("waiting-more").hidden = data.waiting_total <= data.waiting.length;
    $("waiting-more").textContent = "The first " + data.waiting.length + " of " + data.waiting_total + " are listed; more show as these are settled.";
    $("settled-count").textContent = "(" + data.settled_total + ")";
    $("settled-none").hidden = data.settled_total > 0;
    $("settled").hidden = data.settled_total === 0;
    $("settled-body").replaceChildren(...data.settled.map((x) => el("tr", {"data-pair-id": x.pair.pair_id,
      class: x.pair.pair_id === current ? "open" : null}, pairCell(x), el("td", null, votesText(x)),
      el("td", null, el("span", {class: "answer " + x.result}, ANSWERS[x.result])))));
  }

  function show(x) {
    current = x ? x.pair.pair_id : null;
    $("settle").hidden = !x;
    $("settle-done").hidden = !!x;
    document.body.dataset.current = current || "";
    if (!x) {
      const settled = data.settled_total;
      $("settle-done-title").textContent = settled ? "Every disagreement is settled" : "Nothing to settle";
      $("settle-done-text").textContent = settled
        ? "You settled " + settled + " pair" + (settled === 1 ? "" : "s") + "; no other pair judged by two or more raters has votes that tie. New disagreements show here as raters judge (this page looks again every 15 s)."
        : "No pair judged by two or more raters has answers that tie: the raters agree so far, or judged no pair twice (serve with --replicate to have some pairs judged twice). New disagreements show here as raters judge (this page looks again every 15 s).";
      return;
    }
    $("settle-title").textContent = x.owner ? "Your vote on this pair: " + ANSWERS[x.owner] + " (answer again to change it)"
      : x.owner_earlier ? "Raters disagree on this pair again, with a vote you have not seen: your earlier vote (" +
                          ANSWERS[x.owner_earlier] + ") does not count until you answer again"
      : "Raters disagree on this pair";
    $("votes").replaceChildren(...x.votes.map((v) => el("li", null, el("b", null, v.rater), ": ",
      el("span", {class: "answer " + v.judgement}, ANSWERS[v.judgement]), v.comment ? " — “" + v.comment + "”" : null)));
    $("pair").dataset.pairId = x.pair.pair_id;
    $("ids").hidden = !x.pair.ids;
    if (x.pair.ids) { $("id-a").textContent = x.pair.ids[0]; $("id-b").textContent = x.pair.ids[1]; }
    judgePair.render($("pair-body"), x.pair);
    for (const b of document.querySelectorAll("button[data-answer]")) {
      b.classList.toggle("current", b.dataset.answer === x.owner);
    }
    $("comment").value = "";
  }

  function next() { return data.waiting.find((x) => !x.owner) || null; }

  function open(pid) {
    const x = find(pid);
    if (!x) return;
    show(x);
    renderLists();
    status("");
    $("settle").scrollIntoView({block: "nearest"});
  }

  async function load() {
    try {
      data = await abcde.api("GET", "/api/owner/settle");
      const keep = current && find(current);
      show(keep || next());
      renderLists();
      document.body.dataset.loads = String(Number(document.body.dataset.loads || "0") + 1);
    } catch (e) { status(e.message, true); }
  }

  async function settle(answer) {
    if (busy || !current) return;
    busy = true;
    for (const b of document.querySelectorAll("button[data-answer]")) b.disabled = true;
    const pid = current;
    status("Saving…");
    try {
      const d = await abcde.api("POST", "/api/owner/settle", {pair_id: pid, judgement: answer,
                                                              comment: $("comment").value, request_id: newId()});
      data = d;
      settles += 1;
      document.body.dataset.settles = String(settles);
      const x = find(pid);
      const counts = x ? ANSWERS[x.result] : ANSWERS[answer];
      show(next());
      renderLists();
      status("Saved: your vote is " + ANSWERS[answer] + "; the pair " + (x && x.tie ? "still ties, and counts as can't tell." : "counts as " + counts + "."));
    } catch (e) { status(e.message, true); }
    finally {
      busy = false;
      for (const b of document.querySelectorAll("button[data-answer]")) b.disabled = false;
    }
  }

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) { if (ev.key === "Escape") t.blur(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key.toLowerCase();
    if (k === "s" || k === "1") { ev.preventDefault(); settle("same"); }
    else if (k === "d" || k === "2") { ev.preventDefault(); settle("different"); }
    else if (k === "u" || k === "c" || k === "3") { ev.preventDefault(); settle("unsure"); }
    else if (k === "n") { ev.preventDefault(); $("comment").focus(); }
  });
  for (const b of document.querySelectorAll("button[data-answer]")) b.addEventListener("click", () => settle(b.dataset.answer));

  load();
  setInterval(() => { if (!busy && document.visibilityState === "visible" && !$("comment").value) load(); }, 15000);
})();
