/* The owner's settle queue of an entity sample (web/templates/judge-entity-settle.html), on
 * assets/common.js and static/judge-pair.js: GET /api/owner/settle lists the items whose raters'
 * answers differ (a member or candidate of a drawn item, or whether they searched outside both
 * clusters) and those the owner settled; one at a time, the drawn item and the member side by side
 * with every rater's answer; POST /api/owner/settle stores the owner's answer, which counts instead
 * of the conflict while the raters' answers still differ. Every value goes in as text. */
(function () {
  "use strict";
  const {byId: $, el, newId} = abcde;
  const WORDS = Object.freeze({same: "same", different: "different", unsure: "can't tell", searched: "searched",
                               "not searched": "none searched"});
  let data = null, current = null, busy = false, settles = 0;

  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg || "";
    s.className = isError ? "error" : "";
  }
  const keyOf = (x) => x.anchor.ref + "|" + (x.item ? x.item.ref : "search");
  function items() { return data ? data.waiting.concat(data.settled, data.inert) : []; }
  function find(key) { return items().find((x) => keyOf(x) === key) || null; }
  // An item in a few words: its first three shown values that are not empty.
  function summary(view) {
    const vals = view.values.filter((v) => v !== null && String(v).trim() !== "").slice(0, 3);
    const t = vals.join(" · ");
    return t.length > 60 ? t.slice(0, 59) + "…" : (t || "(empty)");
  }
  function answersText(x) {
    return x.answers.map((a) => WORDS[a.answer]).join(" / ") + (x.owner ? " + yours: " + WORDS[x.owner]
      : x.owner_earlier ? " (yours, " + WORDS[x.owner_earlier] + ", counts nowhere)" : "");
  }
  function itemCell(x) {
    return el("td", null, el("button", {type: "button", class: "open-pair", onclick: () => open(keyOf(x))},
      el("span", {class: "item"}, "#" + x.anchor.number + ": " + summary(x.anchor)),
      el("span", {class: "item"}, x.item ? (x.kind === "member" ? "member: " : "candidate: ") + summary(x.item)
                                         : "the search outside both clusters")));
  }

  function renderLists() {
    const row = (x, extra) => el("tr", {"data-key": keyOf(x), class: keyOf(x) === current ? "open" : null},
                                 itemCell(x), el("td", null, answersText(x)), extra || null);
    $("waiting-count").textContent = "(" + data.waiting_total + ")";
    $("waiting-none").hidden = data.waiting_total > 0;
    $("waiting").hidden = data.waiting_total === 0;
    $("waiting-body").replaceChildren(...data.waiting.map((x) => row(x)));
    $("waiting-more").hidden = data.waiting_total <= data.waiting.length;
    $("waiting-more").textContent = "The first " + data.waiting.length + " of " + data.waiting_total +
      " are listed; more show as these are settled.";
    $("settled-count").textContent = "(" + data.settled_total + ")";
    $("settled-none").hidden = data.settled_total > 0;
    $("settled").hidden = data.settled_total === 0;
    $("settled-body").replaceChildren(...data.settled.map((x) => row(x,
      el("td", null, el("span", {class: "answer " + x.result.replace(" ", "-")}, WORDS[x.result])))));
    $("inert-box").hidden = data.inert_total === 0;
    $("inert-count").textContent = "(" + data.inert_total + ")";
    $("inert-body").replaceChildren(...data.inert.map((x) => row(x)));
  }

  function view(x) {
    // the drawn item and the member side by side, as a pair (static/judge-pair.js)
    return {attributes: data.columns.map((c, k) => {
      const a = x.anchor.values[k], b = x.item ? x.item.values[k] : null;
      return {name: c, a: a, b: b, differs: !!x.item && a !== b};
    })};
  }

  function show(x) {
    current = x ? keyOf(x) : null;
    $("settle").hidden = !x;
    $("settle-done").hidden = !!x;
    document.body.dataset.current = current || "";
    if (!x) {
      const settled = data.settled_total;
      $("settle-done-title").textContent = settled ? "Every difference is settled" : "Nothing to settle";
      $("settle-done-text").textContent = (settled
        ? "You settled " + settled + " item" + (settled === 1 ? "" : "s") + "; no other item has answers that differ."
        : "No two raters answered an item differently so far.") +
        " New differences show here as raters answer (this page looks again every 15 s).";
      return;
    }
    const search = !x.item;
    $("settle").dataset.anchor = x.anchor.ref;
    $("settle").dataset.item = search ? "" : x.item.ref;
    $("settle-title").textContent = x.owner ? "Your answer: " + WORDS[x.owner] + " (answer again to change it)"
      : x.owner_earlier ? "Raters differ on this again: your earlier answer (" + WORDS[x.owner_earlier] +
                          ") counts again unless you change it"
      : search ? "Raters differ on whether they searched" : "Raters differ on this " + x.kind;
    $("settle-question").textContent = search
      ? "Item #" + x.anchor.number + ": did the raters look for its entity's items outside both clusters? Say searched only if the items they added (or none) are the whole entity."
      : "Item #" + x.anchor.number + " and one " + (x.kind === "member" ? "member of its clusters" : "candidate outside both clusters") +
        ": are they the same entity?";
    $("votes").replaceChildren(...x.answers.map((a) => el("li", null, el("b", null, a.rater), ": ",
      el("span", {class: "answer " + a.answer.replace(" ", "-")}, WORDS[a.answer]))));
    $("head-b").textContent = search ? "" : "this " + x.kind;
    $("head-b").hidden = search;
    $("pair-note").hidden = search;
    const ids = x.anchor.id !== undefined;
    $("ids").hidden = !ids;
    if (ids) { $("id-a").textContent = x.anchor.id; $("id-b").textContent = search ? "" : x.item.id; }
    judgePair.render($("pair-body"), view(x));
    for (const td of document.querySelectorAll("#pair-body td:nth-child(3), #id-b")) td.hidden = search;
    $("item-answers").hidden = search;
    $("search-answers").hidden = !search;
    for (const b of document.querySelectorAll("button[data-answer]")) {
      b.classList.toggle("current", b.dataset.answer === x.owner);
    }
  }

  function next() { return data.waiting[0] || null; }

  function open(key) {
    const x = find(key);
    if (!x) return;
    show(x);
    renderLists();
    status("");
    $("settle").scrollIntoView({block: "nearest"});
  }

  async function load() {
    try {
      data = await abcde.api("GET", "/api/owner/settle");
      $("rule").textContent = data.rule;
      const keep = current && find(current);
      show(keep || next());
      renderLists();
      document.body.dataset.loads = String(Number(document.body.dataset.loads || "0") + 1);
    } catch (e) { status(e.message, true); }
  }

  async function settle(answer) {
    if (busy || !current) return;
    const x = find(current);
    if (!x || (!x.item) !== (answer === "searched" || answer === "not searched")) return;
    busy = true;
    for (const b of document.querySelectorAll("button[data-answer]")) b.disabled = true;
    const key = current;
    status("Saving…");
    try {
      data = await abcde.api("POST", "/api/owner/settle", {anchor: x.anchor.ref, item: x.item ? x.item.ref : null,
                                                           answer: answer, request_id: newId()});
      settles += 1;
      document.body.dataset.settles = String(settles);
      const now = find(key);
      show(next());
      renderLists();
      status("Saved: your answer is " + WORDS[answer] + "; " + (now && now.owner
        ? "it counts instead of the raters' conflict." : "it counts while the raters' answers differ."));
    } catch (e) { status(e.message, true); }
    finally {
      busy = false;
      for (const b of document.querySelectorAll("button[data-answer]")) b.disabled = false;
    }
  }

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key.toLowerCase();
    const answer = {s: "same", 1: "same", d: "different", 2: "different", u: "unsure", c: "unsure", 3: "unsure",
                    y: "searched", n: "not searched"}[k];
    if (answer) { ev.preventDefault(); settle(answer); }
  });
  for (const b of document.querySelectorAll("button[data-answer]")) b.addEventListener("click", () => settle(b.dataset.answer));

  load();
  setInterval(() => { if (!busy && document.visibilityState === "visible") load(); }, 15000);
})();
