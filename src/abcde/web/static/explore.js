/* The exploration page (web/templates/explore.html), on the shared helpers of assets/common.js.
 * Every value from the data goes in as text (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId, el, pct, num, text} = abcde;
  const get = (path) => abcde.api("GET", path);
  const post = (path, body) => abcde.api("POST", path, body);
  let META = null;
  const state = {filters: [], group_by: [], metric: "jaccard", top: 20};

  // An error replaces nothing silently: the results on screen are marked as those of the last query
  // that ran, until the next one succeeds.
  function showError(e) {
    byId("error").textContent = e ? String(e.message || e) + " (the results below are from the last query that ran)" : "";
    byId("results").classList.toggle("stale", !!e);
  }

  function filterRow(f) {
    const colSel = el("select", {class: "f-col"});
    META.columns.forEach((c) => colSel.append(el("option", {value: c.name}, c.name)));
    colSel.value = f.column;
    const opSel = el("select", {class: "f-op"});
    ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "contains", "is null", "is not null"].forEach(
      (o) => opSel.append(el("option", {value: o}, o)));
    opSel.value = f.op;
    const val = el("input", {class: "f-val", list: "dl-" + f.column, size: 12});
    val.value = Array.isArray(f.value) ? f.value.join(", ") : text(f.value);
    const rm = el("button", {type: "button", title: "remove"}, "×");
    const row = el("div", {class: "row"}, colSel, opSel, val, rm);
    const sync = () => {
      f.column = colSel.value; f.op = opSel.value; val.setAttribute("list", "dl-" + f.column);
      f.value = (f.op === "in" || f.op === "not in") ? val.value.split(",").map((s) => s.trim()).filter((s) => s.length) : val.value;
    };
    colSel.addEventListener("change", sync); opSel.addEventListener("change", sync); val.addEventListener("input", sync);
    val.addEventListener("keydown", (e) => { if (e.key === "Enter") { sync(); run(); } });
    rm.addEventListener("click", () => { state.filters.splice(state.filters.indexOf(f), 1); renderFilters(); run(); });
    sync();
    return row;
  }
  function renderFilters() { const box = byId("filters"); box.textContent = ""; state.filters.forEach((f) => box.append(filterRow(f))); }
  function cleanFilters() {
    return state.filters.filter((f) => f.op.startsWith("is") || (Array.isArray(f.value) ? f.value.length : String(f.value).length))
      .map((f) => ({column: f.column, op: f.op, value: f.value}));
  }

  function renderSlice(s) {
    const box = byId("slice"); box.textContent = "";
    const card = (label, v, se, key) => el("div", {class: "card", "data-key": key},
      el("b", {"data-value": text(v)}, key === "sampled_items" ? num(v) : pct(v)), label + (se != null ? " ± " + pct(se) : ""));
    box.append(card("sampled items", s.sampled_items, null, "sampled_items"),
      card("weight share", s.weight_share, s.std_err.weight_share, "weight_share"),
      card("split contribution", s.split_contribution, s.std_err.split_contribution, "split_contribution"),
      card("merge contribution", s.merge_contribution, s.std_err.merge_contribution, "merge_contribution"),
      card("Jaccard contribution", s.jaccard_contribution, s.std_err.jaccard_contribution, "jaccard_contribution"));
  }

  function renderGroups(res) {
    const t = byId("groups"); t.textContent = "";
    if (!res.group_by.length) { t.append(el("tr", null, el("td", {class: "muted"}, "Pick attributes to group by."))); return; }
    const key = res.metric + "_contribution";
    const total = META.overall[key] || 1;
    t.append(el("tr", null, ...res.group_by.map((c) => el("th", null, c)), el("th", null, "sampled items"),
      el("th", null, "weight share"), el("th", null, abcde.label("split_rate") + " contrib."),
      el("th", null, abcde.label("merge_rate") + " contrib."), el("th", null, abcde.label("jaccard_distance") + " contrib."),
      el("th", null, "± s.e."), el("th", null, "share of total")));
    res.groups.forEach((g) => {
      const share = g[key] / total;
      const bar = el("span", {class: "bar", style: {width: Math.max(1, Math.round(120 * Math.min(1, Math.max(0, share)))) + "px"}});
      const tr = el("tr", {class: "group"}, ...res.group_by.map((c) => el("td", {"data-col": c}, g[c] == null ? "(null)" : String(g[c]))),
        el("td", {"data-col": "sampled_items"}, num(g.sampled_items)), el("td", {"data-col": "weight_share"}, pct(g.weight_share)),
        el("td", {"data-col": "split_contribution", "data-value": g.split_contribution}, pct(g.split_contribution)),
        el("td", {"data-col": "merge_contribution", "data-value": g.merge_contribution}, pct(g.merge_contribution)),
        el("td", {"data-col": "jaccard_contribution", "data-value": g.jaccard_contribution}, pct(g.jaccard_contribution)),
        el("td", null, pct(g.std_err[key])),
        el("td", null, bar, " " + (100 * share).toFixed(1) + "%"));
      tr.addEventListener("click", () => {
        res.group_by.forEach((c) => {
          if (g[c] == null) state.filters.push({column: c, op: "is null", value: ""});
          else state.filters.push({column: c, op: "=", value: String(g[c])});
        });
        renderFilters(); run();
      });
      t.append(tr);
    });
  }

  function renderExamples(rows) {
    const t = byId("examples"); t.textContent = "";
    const attrs = META.attributes.slice(0, 4);
    const cols = ["item_id", "base_cluster", "exp_cluster", "split_rate", "merge_rate", "jaccard_distance", ...attrs];
    t.append(el("tr", null, ...cols.map((c) => el("th", null, c))));
    rows.forEach((r) => {
      const tr = el("tr", {class: "ex"}, ...cols.map((c) => el("td", null,
        c.endsWith("_rate") || c === "jaccard_distance" ? pct(r[c]) : text(r[c]))));
      tr.addEventListener("click", () => showItem(r.item_id));
      t.append(tr);
    });
  }

  async function showItem(id) {
    const box = byId("detail"); box.textContent = "loading…"; box.className = "";
    try {
      const it = await get("/api/item?id=" + encodeURIComponent(id));
      box.textContent = "";
      if (!it.found) { box.append(el("p", {class: "err"}, "No item " + id + " among the common items.")); return; }
      const i = it.item;
      box.append(el("p", null, "Item ", el("b", {id: "detail-id"}, String(i.item_id)), " · " + abcde.label("split_rate") + " " + pct(i.split_rate) +
        " · " + abcde.label("merge_rate") + " " + pct(i.merge_rate) + " · " + abcde.label("jaccard_distance") + " " + pct(i.jaccard_distance) + " · weight " + num(i.weight) +
        (it.sampled ? " · in the sample (draws " + it.sampled.draw_count + ")" : " · not in the sample")));
      const grid = el("div", {class: "clusters"});
      for (const side of ["base", "exp"]) {
        const col = el("div", {"data-side": side}); grid.append(col);
        const c = await get("/api/cluster?side=" + side + "&id=" + encodeURIComponent(i[side + "_cluster"]));
        col.append(el("h3", null, (side === "base" ? "Base" : "Exp") + " cluster " + String(c.cluster_id)),
          el("div", {class: "muted"}, c.size.toLocaleString() + " items, weight " + num(c.weight) +
            (c.source === "sample" ? " (members in the sample only)" : "") +
            (c.truncated ? "; showing the " + c.members.length + " heaviest" : "")));
        const t = el("table"); const attrs = META.attributes.slice(0, 4);
        t.append(el("tr", null, el("th", null, "item"), el("th", null, side === "base" ? "Exp cluster" : "Base cluster"),
          ...attrs.map((a) => el("th", null, a))));
        const other = side === "base" ? "exp_cluster" : "base_cluster";
        c.members.forEach((m) => {
          const same = String(m[other]) === String(i[other]);
          const tr = el("tr", {class: "ex", title: same ? "stable with this item" : (side === "base" ? "split off from this item" : "merged in for this item")},
            el("td", null, String(m.item_id)), el("td", null, (same ? "= " : "≠ ") + String(m[other])),
            ...attrs.map((a) => el("td", null, text(m[a]))));
          tr.addEventListener("click", () => showItem(m.item_id));
          t.append(tr);
        });
        col.append(el("div", {class: "scroll"}, t));
      }
      box.append(grid);
    } catch (e) { box.textContent = ""; box.append(el("p", {class: "err"}, String(e.message || e))); }
  }

  async function run() {
    showError(null);
    state.metric = byId("metric").value;
    state.top = +byId("top").value || 20;
    state.group_by = [...document.querySelectorAll(".gb:checked")].map((c) => c.value);
    const filters = cleanFilters();
    try {
      const res = await post("/api/query", {filters, group_by: state.group_by, metric: state.metric, top: state.top});
      renderSlice(res.slice); renderGroups(res);
      byId("timing").textContent = "answered in " + (1000 * res.seconds).toFixed(0) + " ms";
      const ex = await post("/api/examples", {filters, n: 20, seed: 0});
      renderExamples(ex.examples);
      window.__lastQuery = res; window.__ready = (window.__ready || 0) + 1;
    } catch (e) { showError(e); window.__ready = (window.__ready || 0) + 1; }
  }

  async function init() {
    META = await get("/api/meta");
    const s = META.sample;
    byId("sub").textContent = s.unique_items.toLocaleString() + " affected items sampled ∝ weight·" + abcde.label("jaccard_distance") + " (" +
      s.total_draws.toLocaleString() + " draws, seed " + s.seed + ") · " + abcde.label("jaccard_distance") + "(T) " + pct(s.jaccard_distance_T) +
      " · " + abcde.label("split_rate") + "(T) " + pct(s.split_rate_T) + " · " + abcde.label("merge_rate") + "(T) " + pct(s.merge_rate_T);
    for (const c of META.columns) {
      if (c.values) {
        const dl = el("datalist", {id: "dl-" + c.name});
        c.values.forEach((v) => dl.append(el("option", {value: text(v)})));
        document.body.append(dl);
      }
    }
    const gb = byId("groupby");
    META.attributes.forEach((a) => gb.append(el("label", {class: "gb-label"}, el("input", {type: "checkbox", class: "gb", value: a}), " " + a)));
    byId("add-filter").addEventListener("click", () => {
      state.filters.push({column: META.attributes[0] || META.columns[0].name, op: "=", value: ""}); renderFilters();
    });
    byId("run").addEventListener("click", run);
    byId("lookup-go").addEventListener("click", () => showItem(byId("lookup").value.trim()));
    byId("lookup").addEventListener("keydown", (e) => { if (e.key === "Enter") showItem(e.target.value.trim()); });
    await run();
  }
  init().catch(showError);
})();
