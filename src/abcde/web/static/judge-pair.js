/* One pair of items side by side, as the raters' page (judge.js) and the owner's settle page
 * (judge-settle.js) show it: both items' attributes, the rows whose values differ highlighted, and
 * within a differing value the characters that differ marked (<mark class="d">), so that
 * "brisbane" against "brisb ane" shows the one inserted space. Values go in as text only.
 *
 *   judgePair.charDiff(a, b)      [[a's runs], [b's runs]], each run [text, same]: the characters of a
 *                                 longest common subsequence are `same`; null when the values are too
 *                                 long to compare (more than MAX_CELLS character pairs once a common
 *                                 start and end are set aside) or share too little to be one value
 *                                 retyped (their common characters under half the longer one: then
 *                                 the whole cell differs, as "ella" against "cannell")
 *   judgePair.render(tbody, view) the rows of view.attributes ({name, a, b, differs}) into tbody (a sample
 *                                 about ids: its side column into the row #sides, the side of time)
 *   judgePair.ANSWERS             the answers as people read them: same, different, can't tell
 */
(function (root) {
  "use strict";
  const {el} = abcde;
  const MAX_CELLS = 90000;
  const ANSWERS = Object.freeze({same: "same", different: "different", unsure: "can't tell"});

  function runs(chars, keep) {
    const out = [];
    for (let i = 0; i < chars.length; i++) {
      const last = out[out.length - 1];
      if (last && last[1] === keep[i]) last[0] += chars[i];
      else out.push([chars[i], keep[i]]);
    }
    return out;
  }

  function charDiff(a, b) {
    const A = Array.from(String(a)), B = Array.from(String(b));  // code points: an emoji is one character
    const n = A.length, m = B.length;
    let pre = 0;
    while (pre < n && pre < m && A[pre] === B[pre]) pre++;
    let suf = 0;
    while (suf < n - pre && suf < m - pre && A[n - 1 - suf] === B[m - 1 - suf]) suf++;
    const N = n - pre - suf, M = m - pre - suf;
    if (N * M > MAX_CELLS) return null;
    // LCS lengths of the middle parts (suffix table: L[i][j] for A[pre+i..], B[pre+j..])
    const L = [];
    for (let i = 0; i <= N; i++) L.push(new Uint16Array(M + 1));
    for (let i = N - 1; i >= 0; i--) {
      for (let j = M - 1; j >= 0; j--) {
        L[i][j] = A[pre + i] === B[pre + j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
      }
    }
    const keepA = new Array(n).fill(true), keepB = new Array(m).fill(true);
    for (let i = 0; i < N; i++) keepA[pre + i] = false;
    for (let j = 0; j < M; j++) keepB[pre + j] = false;
    let i = 0, j = 0;
    while (i < N && j < M) {
      if (A[pre + i] === B[pre + j]) { keepA[pre + i] = keepB[pre + j] = true; i++; j++; }
      else if (L[i + 1][j] >= L[i][j + 1]) i++;
      else j++;
    }
    const common = pre + suf + L[0][0];
    if (2 * common < Math.max(n, m)) return null;  // not one value retyped: the whole cell differs
    return [runs(A, keepA), runs(B, keepB)];
  }

  function cell(value, diffRuns) {
    if (value === null) return el("td", {class: "value null"}, "(empty)");
    const td = el("td", {class: "value"});
    if (!diffRuns) { td.append(value); return td; }
    for (const [text, same] of diffRuns) td.append(same ? document.createTextNode(text) : el("mark", {class: "d"}, text));
    return td;
  }

  // In a sample about ids (abcde ids; the table's data-side-column), the attribute saying which copy each
  // item is ("published earlier" or "current") shows in its own row, the side of time, not as an
  // attribute to compare.
  function render(tbody, view) {
    tbody.replaceChildren();
    const table = tbody.closest("table");
    const sideColumn = table ? table.dataset.sideColumn : undefined;
    const sides = table ? table.querySelector("#sides") : null;
    let side = null;
    for (const a of view.attributes) {
      if (sideColumn && a.name === sideColumn) { side = a; continue; }
      const both = a.differs && a.a !== null && a.b !== null;
      const d = both ? charDiff(a.a, a.b) : null;
      const tr = el("tr", {class: a.differs ? "differs" + (both && !d ? " whole" : "") : null}, el("th", null, a.name));
      tr.append(cell(a.a, d && d[0]), cell(a.b, d && d[1]));
      tbody.append(tr);
    }
    if (sides) {
      sides.hidden = !side;
      sides.cells[1].textContent = side && side.a !== null ? side.a : "";
      sides.cells[2].textContent = side && side.b !== null ? side.b : "";
    }
  }

  root.judgePair = Object.freeze({charDiff, render, ANSWERS});
})(globalThis);
