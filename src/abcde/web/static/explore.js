/* The exploration page (web/templates/explore.html), on the shared helpers of assets/common.js.
 * Every value from the data goes in as text (abcde.el), never as markup. */
(function () {
  "use strict";
  const {byId, el, pct, num, count, text} = abcde;
  const shown = (v) => text(v, abcde.NULL_TEXT);  // an attribute value; null as the one null text
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
  function renderFilters() {
    const box = byId("filters"); box.textContent = "";
    state.filters.forEach((f) => box.append(filterRow(f)));
    byId("clear-filters").hidden = !state.filters.length;
  }
  function cleanFilters() {
    return state.filters.filter((f) => f.op.startsWith("is") || (Array.isArray(f.value) ? f.value.length : String(f.value).length))
      .map((f) => ({column: f.column, op: f.op, value: f.value}));
  }

  // The slice the numbers on screen are for, as text ("whole sample" or "where a = x and b in (y, z)").
  function describeFilters(filters) {
    if (!filters || !filters.length) return "(the whole sample)";
    return "(where " + filters.map((f) => f.op.startsWith("is") ? f.column + " " + f.op
      : f.column + " " + f.op + " " + (Array.isArray(f.value) ? "(" + f.value.map((v) => text(v)).join(", ") + ")" : text(f.value)))
      .join(" and ") + ")";
  }

  function renderSlice(s) {
    const box = byId("slice"); box.textContent = "";
    const card = (label, v, se, key) => el("div", {class: "card", "data-key": key},
      el("b", {"data-value": text(v)}, key === "sampled_items" ? count(v) : pct(v)), label + (se != null ? " ± " + pct(se) : ""));
    box.append(card("sampled items", s.sampled_items, null, "sampled_items"),
      card("weight share", s.weight_share, s.std_err.weight_share, "weight_share"),
      card(abcde.label("split_rate") + " contribution", s.split_contribution, s.std_err.split_contribution, "split_contribution"),
      card(abcde.label("merge_rate") + " contribution", s.merge_contribution, s.std_err.merge_contribution, "merge_contribution"),
      card(abcde.label("jaccard_distance") + " contribution", s.jaccard_contribution, s.std_err.jaccard_contribution, "jaccard_contribution"));
  }

  const METRIC_KEYS = {split: "split_rate", merge: "merge_rate", jaccard: "jaccard_distance"};

  // A group's share of the overall rate: a bar on a track that stands for 100%, the percentage beside.
  // A non-zero share gets a visible sliver (CSS min-width) however small it is.
  function shareBar(share) {
    const s = Math.min(1, Math.max(0, Number(share) || 0));
    const fill = el("span", {class: s > 0 ? "bar nonzero" : "bar", style: {width: (100 * s).toFixed(2) + "%"}});
    return el("span", {class: "share"}, el("span", {class: "track"}, fill), el("span", {class: "share-pct"}, pct(s, 1)));
  }

  function renderGroups(res) {
    const t = byId("groups"); t.textContent = "";
    if (!res.group_by.length) { t.append(el("tr", null, el("td", {class: "muted"}, "Pick attributes to group by."))); return; }
    const key = res.metric + "_contribution";
    const total = META.overall[key] || 1;
    t.append(el("tr", null, ...res.group_by.map((c) => el("th", null, c)), el("th", null, "sampled items"),
      el("th", null, "weight share"), el("th", null, abcde.label("split_rate") + " contribution"),
      el("th", null, abcde.label("merge_rate") + " contribution"), el("th", null, abcde.label("jaccard_distance") + " contribution"),
      el("th", null, "± s.e."), el("th", {class: "share-cell"}, "share of the overall " + abcde.label(METRIC_KEYS[res.metric]))));
    res.groups.forEach((g) => {
      const share = g[key] / total;
      const tr = el("tr", {class: "group"}, ...res.group_by.map((c) => el("td", {"data-col": c}, shown(g[c]))),
        el("td", {"data-col": "sampled_items"}, count(g.sampled_items)), el("td", {"data-col": "weight_share"}, pct(g.weight_share)),
        el("td", {"data-col": "split_contribution", "data-value": g.split_contribution}, pct(g.split_contribution)),
        el("td", {"data-col": "merge_contribution", "data-value": g.merge_contribution}, pct(g.merge_contribution)),
        el("td", {"data-col": "jaccard_contribution", "data-value": g.jaccard_contribution}, pct(g.jaccard_contribution)),
        el("td", null, pct(g.std_err[key])),
        el("td", {class: "share-cell", "data-col": "share", "data-value": share}, shareBar(share)));
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
        c.endsWith("_rate") || c === "jaccard_distance" ? pct(r[c]) : shown(r[c]))));
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
          el("div", {class: "muted"}, count(c.size) + " items, weight " + num(c.weight) +
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
            ...attrs.map((a) => el("td", null, shown(m[a]))));
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
      byId("slice-desc").textContent = describeFilters(res.filters);
      byId("timing").textContent = "answered in " + (1000 * res.seconds).toFixed(0) + " ms";
      const ex = await post("/api/examples", {filters, n: 20, seed: 0});
      renderExamples(ex.examples);
      window.__lastQuery = res; window.__ready = (window.__ready || 0) + 1;
    } catch (e) { showError(e); window.__ready = (window.__ready || 0) + 1; }
  }

  // The left column's summary of the sample: the population, how the sample was drawn, the exact overall rates.
  function renderSampleFacts(meta) {
    const s = meta.sample, dl = byId("sample-facts"); dl.textContent = "";
    const fact = (key, term, ...value) => dl.append(el("dt", null, term), el("dd", {"data-key": key}, ...value));
    if (s.items != null) fact("population", "population", count(s.items) + " items · weight " + num(s.total_weight));
    if (s.affected_items != null) fact("affected", "affected", count(s.affected_items) + " items" +
      (s.total_weight ? ", " + pct(s.affected_weight / s.total_weight, 1) + " of the weight" : ""));
    fact("sample", "in the sample", count(s.unique_items) + " items from " + count(s.total_draws) + " draws");
    fact("drawn", "drawn", "with replacement ∝ weight · " + abcde.label("jaccard_distance") + ", seed " + text(s.seed));
    const overall = el("span", {class: "overall"});
    [["jaccard_distance", s.jaccard_distance_T], ["split_rate", s.split_rate_T], ["merge_rate", s.merge_rate_T]].forEach(([k, v]) =>
      overall.append(el("span", {"data-key": k}, abcde.label(k) + " ", el("b", {"data-value": text(v)}, pct(v)))));
    fact("overall", "overall (exact)", overall);
    if (meta.inputs) {
      const files = el("span", {class: "overall"});
      [["base", "Base"], ["exp", "Exp"], ["items", "items"]].forEach(([k, name]) => {
        if (meta.inputs[k]) files.append(el("span", null, name + " ", el("code", null, text(meta.inputs[k]))));
      });
      fact("inputs", "inputs", files);
    }
    fact("clusters", "whole clusters", meta.whole_clusters_from === "sample" ? "from the sample only (the inputs are gone)" : "from the inputs");
  }

  async function init() {
    META = await get("/api/meta");
    const s = META.sample;
    byId("sub").textContent = count(s.unique_items) + " affected items sampled" + (s.items != null ? " from " + count(s.items) : "") +
      " · the numbers below are estimates from the sample, with standard errors";
    renderSampleFacts(META);
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
    byId("clear-filters").addEventListener("click", () => { state.filters.length = 0; renderFilters(); run(); });
    byId("run").addEventListener("click", run);
    byId("lookup-go").addEventListener("click", () => showItem(byId("lookup").value.trim()));
    byId("lookup").addEventListener("keydown", (e) => { if (e.key === "Enter") showItem(e.target.value.trim()); });
    await run();
  }
  init().catch(showError);
})();
