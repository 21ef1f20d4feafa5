/* The exploration page (web/templates/explore.html), on the shared helpers of assets/common.js.
 * Every value from the data goes in as text (abcde.el), never as markup.
 *
 * The page's state lives in its address (Datasette's way), so a slice can be shared as a link and
 * a reload restores it; Back and Forward step through the slices and items opened:
 *   ?state=nsw                  a filter column = value (column__exact=value says the same)
 *   ?date_of_birth__gte=1990    column__OP=value, OP one of exact, not, lt, lte, gt, gte, in, notin
 *                               (values separated by commas), contains, isnull=1, notnull=1
 *   &_group=state&_group=source the group-by columns, in order
 *   &_rank=split  &_top=50      rank the groups by (jaccard, split, merge) and how many to show
 *   &_sort=COL | &_sort_desc=COL, &_ex_sort=COL | &_ex_sort_desc=COL: the groups' and the
 *                               examples' order (a click on a header)
 *   &_item=ID                   the item whose clusters are open
 */
(function () {
  "use strict";
  const {byId, el, pct, num, count, text} = abcde;
  const shown = (v) => text(v, abcde.NULL_TEXT);  // an attribute value; null as the one null text
  const get = (path) => abcde.api("GET", path);
  const post = (path, body) => abcde.api("POST", path, body);
  let META = null;
  let COLS = {};  // the sample's columns by name (label, kind, distinct, id_like)
  const DEFAULTS = {metric: "jaccard", top: 20};
  // What the controls say (filters change as they are typed; the rest is read on Apply).
  const state = {filters: [], group_by: [], metric: DEFAULTS.metric, top: DEFAULTS.top};
  // How the groups and the examples are sorted ({key, desc}; null: as the server ranks them).
  const sorts = {groups: null, examples: null};
  let shownQuery = null, shownItem = null;  // what is on screen (a query's key; an item id)
  let lastGroups = null, lastExamples = null;
  let runSeq = 0, itemSeq = 0;  // only the latest answer is shown

  const METRIC_KEYS = {split: "split_rate", merge: "merge_rate", jaccard: "jaccard_distance"};
  const colLabel = (name) => (COLS[name] && COLS[name].label) || name;
  const contribLabel = (m) => abcde.label(m) + " contribution";

  // An error replaces nothing silently: the results on screen are marked as those of the last query
  // that ran, until the next one succeeds.
  function showError(e) {
    byId("error").textContent = e ? String(e.message || e) + " (the results below are from the last query that ran)" : "";
    byId("results").classList.toggle("stale", !!e);
  }

  // ----------------------------------------------------------------------------- the address
  const OPS = {"=": "exact", "!=": "not", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte", "in": "in", "not in": "notin",
               "contains": "contains", "is null": "isnull", "is not null": "notnull"};
  const OP_OF = Object.fromEntries(Object.entries(OPS).map(([op, s]) => [s, op]));
  const FILTER_KEY = new RegExp("^(.+)__(" + Object.values(OPS).join("|") + ")$");
  const SORT_KEYS = {groups: "_sort", examples: "_ex_sort"};

  function cleanFilters() {
    return state.filters.filter((f) => f.op.startsWith("is") || (Array.isArray(f.value) ? f.value.length : String(f.value).length))
      .map((f) => ({column: f.column, op: f.op, value: f.op.startsWith("is") ? "" : f.value}));
  }
  // The query the controls describe, as the server takes it (and its key: equal keys, equal answers).
  function currentQuery() {
    return {filters: cleanFilters(), group_by: state.group_by.slice(), metric: state.metric, top: state.top};
  }
  const queryKey = (q) => JSON.stringify([q.filters, q.group_by, q.metric, q.top]);

  function toAddress(q, item) {
    const p = new URLSearchParams();
    q.filters.forEach((f) => {
      const plain = f.op === "=" && !f.column.startsWith("_") && !FILTER_KEY.test(f.column);
      const value = f.op.startsWith("is") ? "1" : Array.isArray(f.value) ? f.value.join(",") : String(f.value);
      p.append(plain ? f.column : f.column + "__" + OPS[f.op], value);
    });
    q.group_by.forEach((c) => p.append("_group", c));
    if (q.metric !== DEFAULTS.metric) p.set("_rank", q.metric);
    if (q.top !== DEFAULTS.top) p.set("_top", String(q.top));
    for (const [table, key] of Object.entries(SORT_KEYS)) {
      const s = sorts[table];
      if (s) p.set(key + (s.desc ? "_desc" : ""), s.key);
    }
    if (item !== null && item !== undefined) p.set("_item", String(item));
    const s = p.toString();
    return location.pathname + (s ? "?" + s : "");
  }

  function fromAddress(search) {
    const p = new URLSearchParams(search);
    const q = {filters: [], group_by: [], metric: DEFAULTS.metric, top: DEFAULTS.top, sorts: {groups: null, examples: null}, item: null};
    for (const [k, v] of p) {
      const m = k.match(FILTER_KEY);
      if (m) {
        const op = OP_OF[m[2]];
        const value = op === "in" || op === "not in" ? v.split(",").map((s) => s.trim()).filter((s) => s.length)
          : op.startsWith("is") ? "" : v;
        q.filters.push({column: m[1], op: op, value: value});
      } else if (!k.startsWith("_")) {
        q.filters.push({column: k, op: "=", value: v});
      } else if (k === "_group") {
        if (!q.group_by.includes(v)) q.group_by.push(v);
      } else if (k === "_rank") {
        q.metric = v;
      } else if (k === "_top") {
        q.top = Math.max(1, Math.min(500, parseInt(v, 10) || DEFAULTS.top));
      } else if (k === "_item") {
        q.item = v;
      } else {
        for (const [table, key] of Object.entries(SORT_KEYS)) {
          if (k === key || k === key + "_desc") q.sorts[table] = {key: v, desc: k === key + "_desc"};
        }
      }
    }
    return q;
  }

  // Put the page's state in the address: a new history entry (push) or the current one changed.
  function remember(push) {
    const url = toAddress(currentQuery(), shownItem);
    if (url === location.pathname + location.search) return;
    if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
  }

  // ----------------------------------------------------------------------------- the controls
  function filterRow(f) {
    const colSel = el("select", {class: "f-col", "aria-label": "column"});
    META.columns.forEach((c) => colSel.append(el("option", {value: c.name}, c.label)));
    if (!COLS[f.column]) colSel.append(el("option", {value: f.column}, f.column + " (not a column)"));
    colSel.value = f.column;
    const opSel = el("select", {class: "f-op", "aria-label": "operator"});
    Object.keys(OPS).forEach((o) => opSel.append(el("option", {value: o}, o)));
    opSel.value = f.op;
    const val = el("input", {class: "f-val", list: "dl-" + f.column, size: 12, "aria-label": "value"});
    val.value = Array.isArray(f.value) ? f.value.join(", ") : text(f.value);
    const rm = el("button", {type: "button", title: "remove this filter"}, "×");
    const row = el("div", {class: "row"}, colSel, opSel, val, rm);
    const sync = () => {
      f.column = colSel.value; f.op = opSel.value; val.setAttribute("list", "dl-" + f.column);
      val.disabled = f.op.startsWith("is");
      f.value = (f.op === "in" || f.op === "not in") ? val.value.split(",").map((s) => s.trim()).filter((s) => s.length) : val.value;
    };
    colSel.addEventListener("change", sync); opSel.addEventListener("change", sync); val.addEventListener("input", sync);
    val.addEventListener("keydown", (e) => { if (e.key === "Enter") { sync(); apply(); } });
    rm.addEventListener("click", () => { state.filters.splice(state.filters.indexOf(f), 1); renderFilters(); apply(); });
    sync();
    return row;
  }
  function renderFilters() {
    const box = byId("filters"); box.textContent = "";
    state.filters.forEach((f) => box.append(filterRow(f)));
    byId("clear-filters").hidden = !state.filters.length;
  }

  // Group by: every column, with how many values it has in the sample. Id-like columns (about one
  // value per item, or per few: most items would be in groups with a low count) come after the
  // others, under their own heading and greyed; the sample's own columns (clusters, rates, weights)
  // are folded away.
  function groupChoice(c) {
    const many = c.distinct === null && c.distinct_at_least;  // nearly one value per item: not counted
    const title = many ? "at least " + count(c.distinct_at_least) + " values among " + count(META.rows) +
        " sampled items: nearly one per item (id-like; not counted in full)"
      : c.distinct === null ? "values not counted (a " + c.type + " column)"
      : count(c.distinct) + (c.distinct === 1 ? " value" : " values") + " among " + count(META.rows) +
        " sampled items; " + Math.round(100 * c.low_count_share) + "% of them would be in groups of fewer than " +
        META.low_count + (c.id_like ? " (id-like)" : "");
    return el("label", {class: "gb-label" + (c.id_like ? " id-like" : ""), title: title},
      el("input", {type: "checkbox", class: "gb", value: c.name}),
      el("span", {class: "gb-name"}, c.label),
      el("span", {class: "gb-n", "data-distinct": c.distinct},
         many ? "≥" + count(c.distinct_at_least) : c.distinct === null ? "" : count(c.distinct)));
  }
  function renderGroupBy() {
    const gb = byId("groupby"); gb.textContent = "";
    const attrs = META.columns.filter((c) => c.attribute), own = META.columns.filter((c) => !c.attribute);
    const useful = attrs.filter((c) => !c.id_like), idLike = attrs.filter((c) => c.id_like);
    gb.append(el("div", {class: "gb-grid"}, ...useful.map(groupChoice)));
    if (idLike.length) {
      gb.append(el("div", {class: "gb-head", id: "gb-id-like"}, "id-like: about one value per item or per few"),
        el("div", {class: "gb-grid"}, ...idLike.map(groupChoice)));
    }
    gb.append(el("details", {class: "gb-more"}, el("summary", null, "the sample's own columns (" + own.length + ")"),
      el("div", {class: "gb-grid"}, ...own.map(groupChoice))),
      el("div", {class: "muted gb-legend"}, "Beside each column: its distinct values among the " + count(META.rows) +
        " sampled items. Id-like: most items would be in groups of fewer than " + META.low_count + " (a low count)."));
  }
  function writeControls() {
    renderFilters();
    const gb = byId("groupby");
    for (const c of state.group_by) {  // a column from the address that the sample lacks: shown, so the error is understood
      if (!COLS[c] && !gb.querySelector('input.gb[value="' + CSS.escape(c) + '"]')) {
        gb.prepend(el("label", {class: "gb-label unknown"}, el("input", {type: "checkbox", class: "gb", value: c}),
          el("span", {class: "gb-name"}, c + " (not a column)")));
      }
    }
    gb.querySelectorAll("input.gb").forEach((box) => { box.checked = state.group_by.includes(box.value); });
    const more = gb.querySelector(".gb-more");
    if (more && more.querySelector("input.gb:checked")) more.open = true;
    const metric = byId("metric");
    if (![...metric.options].some((o) => o.value === state.metric)) metric.append(el("option", {value: state.metric}, state.metric));
    metric.value = state.metric;
    byId("top").value = String(state.top);
  }
  function readControls() {
    state.metric = byId("metric").value || state.metric;
    state.top = Math.max(1, Math.min(500, +byId("top").value || DEFAULTS.top));
    // in the order ticked before, then new ones in the order shown
    const ticked = [...document.querySelectorAll(".gb:checked")].map((c) => c.value);
    state.group_by = [...state.group_by.filter((c) => ticked.includes(c)), ...ticked.filter((c) => !state.group_by.includes(c))];
  }

  // The slice the numbers on screen are for, as text ("whole sample" or "where a = x and b in (y, z)").
  function describeFilters(filters) {
    if (!filters || !filters.length) return "(the whole sample)";
    return "(where " + filters.map((f) => f.op.startsWith("is") ? colLabel(f.column) + " " + f.op
      : colLabel(f.column) + " " + f.op + " " + (Array.isArray(f.value) ? "(" + f.value.map((v) => text(v)).join(", ") + ")" : text(f.value)))
      .join(" and ") + ")";
  }

  // ----------------------------------------------------------------------------- tables
  // A value of a column as the page shows it: rates as percentages, weights and counts as numbers.
  const RATE_COLUMNS = new Set(Object.values(METRIC_KEYS));
  function cellText(col, v) {
    if (RATE_COLUMNS.has(col)) return pct(v);
    if (col === "weight" || col === "importance_weight") return num(v);
    if (col === "draw_count") return count(v);
    return shown(v);
  }
  const isNumberColumn = (col) => !!(COLS[col] && COLS[col].kind === "number");

  // One column of a sample's rows: its header (the column's label), its value, alignment by kind.
  function sampleColumn(name) {
    return {key: name, label: colLabel(name), numeric: isNumberColumn(name), value: (r) => r[name], cell: (r) => cellText(name, r[name])};
  }

  // Rows in a column's order: numbers by value, text in the reader's collation; missing values
  // last either way; ties keep the server's order.
  const collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
  function sortedRows(rows, columns, sort) {
    const order = rows.map((r, i) => [r, i]);
    const col = sort && columns.find((c) => c.key === sort.key);
    if (col) {
      const missing = (v) => v === null || v === undefined || (typeof v === "number" && !isFinite(v));
      order.sort(([a, i], [b, j]) => {
        const x = col.value(a), y = col.value(b);
        if (missing(x) || missing(y)) return missing(x) === missing(y) ? i - j : (missing(x) ? 1 : -1);
        const c = typeof x === "number" && typeof y === "number" ? x - y : collator.compare(String(x), String(y));
        return (sort.desc ? -c : c) || i - j;
      });
    }
    return order.map(([r]) => r);
  }
  // A click on a header: numbers largest first, text A to Z; a second click turns it round; a third
  // goes back to the server's order.
  function nextSort(cur, col) {
    if (!cur || cur.key !== col.key) return {key: col.key, desc: !!col.numeric};
    if (cur.desc === !!col.numeric) return {key: col.key, desc: !cur.desc};
    return null;
  }

  // A cell of a CSV file: text that a spreadsheet would run as a formula, or that starts with the
  // mark ' itself, gets a leading ' (the rule of every CSV abcde writes for people,
  // abcde.util.files.neutralise_formulas); quoted as RFC 4180 says.
  function csvCell(v) {
    if (v === null || v === undefined || (typeof v === "number" && !isFinite(v))) return "";
    let s = String(v);
    if (typeof v === "string" && [...(META.csv_formula_starts || []), "'"].some((p) => s.startsWith(p))) s = "'" + s;
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function toCsv(columns, rows) {
    const lines = [columns.map((c) => csvCell(c.label)).join(",")];
    rows.forEach((r) => lines.push(columns.map((c) => csvCell(c.value(r))).join(",")));
    return lines.join("\r\n") + "\r\n";
  }
  function download(name, body) {
    const url = URL.createObjectURL(new Blob([body], {type: "text/csv;charset=utf-8"}));
    const a = el("a", {href: url, download: name, hidden: ""});
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }
  const fileName = (...parts) => "abcde-" + parts.map((p) => String(p).replace(/[^\w.-]+/g, "_")).join("-") + ".csv";

  /* A table that sorts on a click on a header and downloads as CSV what it shows (the columns
   * shown, the rows in their order, numbers unrounded). spec: {columns, rows, sort, onSort(sort),
   * rowAttrs(r), onRow(r), file, tools (an element for the row count and the CSV button), note
   * (text in place of the row count), defaultOrder (text: the order without a sort)}.
   * A column: {key, label, title, numeric, value(r) (what sorts, and what the CSV file holds),
   * cell(r) (text or a node), attrs(r), cellClass(r), csvOnly (in the CSV file only), cls}. */
  function dataTable(table, spec) {
    table.textContent = "";
    table.classList.add("data");
    const shownCols = spec.columns.filter((c) => !c.csvOnly);
    const rows = sortedRows(spec.rows, spec.columns, spec.sort);
    const head = el("tr");
    shownCols.forEach((c) => {
      const on = spec.sort && spec.sort.key === c.key ? spec.sort : null;
      const btn = el("button", {type: "button", class: "sort", title: (c.title ? c.title + ". " : "") + "Sort by " + c.label},
        c.label);  // the arrow of the sorted column: CSS, from aria-sort
      btn.addEventListener("click", () => spec.onSort(nextSort(spec.sort, c)));
      head.append(el("th", {"data-col": c.key, class: (c.numeric ? "n" : "t") + (c.cls ? " " + c.cls : ""),
                            "aria-sort": on ? (on.desc ? "descending" : "ascending") : null}, btn));
    });
    const body = el("tbody");
    rows.forEach((r) => {
      const tr = el("tr", spec.rowAttrs ? spec.rowAttrs(r) : null, ...shownCols.map((c) => el("td", Object.assign({
        "data-col": c.key, class: (c.numeric ? "n" : "t") + (c.cls ? " " + c.cls : "") + (c.cellClass ? " " + c.cellClass(r) : "")},
        c.attrs ? c.attrs(r) : {}), c.cell(r))));
      if (spec.onRow) tr.addEventListener("click", () => spec.onRow(r));
      body.append(tr);
    });
    table.append(el("thead", null, head), body);
    if (spec.tools) {
      const col = spec.sort && spec.columns.find((c) => c.key === spec.sort.key);
      const dir = col && (col.numeric ? (spec.sort.desc ? "largest first" : "smallest first") : (spec.sort.desc ? "Z to A" : "A to Z"));
      const order = col ? "sorted by " + col.label + " (" + dir + ")" : spec.defaultOrder;
      const csv = el("button", {type: "button", class: "csv", title: "Download this table as a CSV file: the columns shown, " +
        "the rows in this order, numbers unrounded"}, "CSV");
      csv.addEventListener("click", () => download(spec.file, toCsv(spec.columns, rows)));
      const wide = el("span", {class: "wide-note", hidden: ""}, " · scroll sideways for all " + shownCols.length + " columns →");
      spec.tools.textContent = "";
      spec.tools.append(el("span", {class: "muted"}, (spec.note !== undefined ? spec.note
        : count(rows.length) + (rows.length === 1 ? " row" : " rows")) + " · " + order + (spec.note === undefined
        ? " · click a header to sort" : ""), wide), csv);
      requestAnimationFrame(() => noteWidth(table));
    }
  }

  // A table wider than its section says so beside its row count (the section scrolls sideways).
  function noteWidth(table) {
    const scroller = table.closest(".scroll"), tools = scroller && scroller.previousElementSibling;
    const note = tools && tools.querySelector(".wide-note");
    if (note) note.hidden = !(scroller.scrollWidth > scroller.clientWidth + 1);
  }
  window.addEventListener("resize", () => document.querySelectorAll("table.data").forEach(noteWidth));

  // ----------------------------------------------------------------------------- results
  // A group or slice with fewer sampled items than META.low_count: a low-count flag, not a ±.
  const lowCount = (n) => n > 0 && n < (META.low_count || 0);
  const lowCountTitle = (n) => "Only " + count(n) + (n === 1 ? " sampled item" : " sampled items") + " (fewer than " +
    META.low_count + "): too few for a standard error; read the estimate as anecdotal";

  function renderSlice(s) {
    const box = byId("slice"); box.textContent = "";
    const few = lowCount(s.sampled_items);
    const card = (label, v, se, key) => el("div", {class: "card", "data-key": key},
      el("b", {"data-value": text(v)}, key === "sampled_items" ? count(v) : pct(v)),
      label + (se !== undefined && !few ? " ± " + pct(se) : ""),
      se !== undefined && few ? el("span", {class: "low", title: lowCountTitle(s.sampled_items)}, "low count") : null);
    box.append(card("sampled items", s.sampled_items, undefined, "sampled_items"),
      card("weight share", s.weight_share, s.std_err.weight_share, "weight_share"),
      card(contribLabel("split_rate"), s.split_contribution, s.std_err.split_contribution, "split_contribution"),
      card(contribLabel("merge_rate"), s.merge_contribution, s.std_err.merge_contribution, "merge_contribution"),
      card(contribLabel("jaccard_distance"), s.jaccard_contribution, s.std_err.jaccard_contribution, "jaccard_contribution"));
  }

  // A group's share of the overall rate: a bar on a track that stands for 100%, the percentage beside.
  // A non-zero share gets a visible sliver (CSS min-width) however small it is.
  function shareBar(share) {
    const s = Math.min(1, Math.max(0, Number(share) || 0));
    const fill = el("span", {class: s > 0 ? "bar nonzero" : "bar", style: {width: (100 * s).toFixed(2) + "%"}});
    return el("span", {class: "share"}, el("span", {class: "track"}, fill), el("span", {class: "share-pct"}, pct(s, 1)));
  }

  function renderGroups(res) {
    const t = byId("groups"), tools = byId("groups-tools");
    if (!res.group_by.length) {
      t.textContent = ""; t.classList.remove("data"); tools.textContent = "";
      t.append(el("tr", null, el("td", {class: "muted"}, "Pick columns to group by.")));
      return;
    }
    const key = res.metric + "_contribution";
    const total = META.overall[key] || 1;
    const rate = METRIC_KEYS[res.metric] || "jaccard_distance";
    const pctCol = (k, label) => ({key: k, label: label, numeric: true, value: (g) => g[k], cell: (g) => pct(g[k]),
                                   attrs: (g) => ({"data-value": g[k]})});
    const columns = [
      ...res.group_by.map((c) => ({key: c, label: colLabel(c), numeric: isNumberColumn(c), value: (g) => g[c], cell: (g) => cellText(c, g[c])})),
      {key: "sampled_items", label: "sampled items", numeric: true, value: (g) => g.sampled_items, cell: (g) => count(g.sampled_items)},
      pctCol("weight_share", "weight share"),
      pctCol("split_contribution", contribLabel("split_rate")),
      pctCol("merge_contribution", contribLabel("merge_rate")),
      pctCol("jaccard_contribution", contribLabel("jaccard_distance")),
      {key: "std_err", label: "± s.e.", numeric: true, title: "The standard error of the " + contribLabel(rate) +
         "; a low-count flag instead for a group of fewer than " + META.low_count + " sampled items",
       value: (g) => g.std_err[key],
       cell: (g) => lowCount(g.sampled_items) ? el("span", {class: "low", title: lowCountTitle(g.sampled_items)}, "low count") : pct(g.std_err[key])},
      {key: "low_count", label: "low count", csvOnly: true, value: (g) => lowCount(g.sampled_items) ? "yes" : "no"},
      {key: "share", label: "share of the overall " + abcde.label(rate), numeric: true, cls: "share-cell",
       value: (g) => g[key] / total, cell: (g) => shareBar(g[key] / total), attrs: (g) => ({"data-value": g[key] / total})},
    ];
    if (sorts.groups && !columns.some((c) => c.key === sorts.groups.key)) sorts.groups = null;  // a column no longer shown
    const sort = sorts.groups;
    dataTable(t, {
      columns, rows: res.groups, sort, tools, file: fileName("groups", ...res.group_by),
      defaultOrder: "ranked by " + contribLabel(rate),
      onSort: (s) => { sorts.groups = s; renderGroups(res); remember(false); },
      rowAttrs: (g) => ({class: "group" + (lowCount(g.sampled_items) ? " few" : "")}),
      onRow: (g) => {
        res.group_by.forEach((c) => {
          if (g[c] == null) state.filters.push({column: c, op: "is null", value: ""});
          else state.filters.push({column: c, op: "=", value: String(g[c])});
        });
        renderFilters(); apply();
      },
    });
  }

  // The examples: the item, its clusters and rates, then every attribute (the table scrolls sideways
  // inside its section when they do not fit; the item id stays in view).
  function renderExamples(rows) {
    const cols = ["item_id", "base_cluster", "exp_cluster", "split_rate", "merge_rate", "jaccard_distance", ...META.attributes];
    const columns = cols.map(sampleColumn);
    if (sorts.examples && !cols.includes(sorts.examples.key)) sorts.examples = null;
    const sort = sorts.examples;
    dataTable(byId("examples"), {
      columns, rows, sort, tools: byId("examples-tools"), file: fileName("examples"), defaultOrder: "drawn ∝ importance weight",
      onSort: (s) => { sorts.examples = s; renderExamples(rows); remember(false); },
      rowAttrs: () => ({class: "ex"}),
      onRow: (r) => showItem(r.item_id, true),
    });
  }

  // ----------------------------------------------------------------------------- an item
  // The item's section is brought into view as soon as an item is asked for, and again once it is
  // shown, so something visibly happens: its top at the top of the window (or as high as the page
  // goes), unless it already is in the upper half of the window. An instant jump, not a smooth
  // scroll, which the page's own changes of height could cut short.
  function bringDetailIntoView() {
    const sec = byId("detail-section"), top = sec.getBoundingClientRect().top;
    if (top >= 0 && top < window.innerHeight * 0.5) return;
    sec.scrollIntoView({block: "start", behavior: "auto"});
  }

  function clearItem() {
    itemSeq++; shownItem = null;
    const box = byId("detail"); box.className = "muted"; box.textContent = "Click an example item or look one up by id.";
  }

  async function showItem(id, push) {
    const seq = ++itemSeq;
    shownItem = String(id);
    if (push) remember(true);
    const box = byId("detail"); box.textContent = "loading item " + shownItem + "…"; box.className = "muted";
    bringDetailIntoView();
    try {
      const it = await get("/api/item?id=" + encodeURIComponent(id));
      if (seq !== itemSeq) return;
      if (!it.found) {
        box.textContent = ""; box.className = "";
        box.append(el("p", {class: "err"}, "No item " + id + " among the common items."));
        return;
      }
      const i = it.item;
      const clusters = await Promise.all(["base", "exp"].map((side) =>
        get("/api/cluster?side=" + side + "&id=" + encodeURIComponent(i[side + "_cluster"]))));
      if (seq !== itemSeq) return;
      box.textContent = ""; box.className = "";
      box.append(el("p", null, "Item ", el("b", {id: "detail-id"}, String(i.item_id)), " · " + abcde.label("split_rate") + " " + pct(i.split_rate) +
        " · " + abcde.label("merge_rate") + " " + pct(i.merge_rate) + " · " + abcde.label("jaccard_distance") + " " + pct(i.jaccard_distance) + " · weight " + num(i.weight) +
        (it.sampled ? " · in the sample (draws " + it.sampled.draw_count + ")" : " · not in the sample")));
      const grid = el("div", {class: "clusters"});
      ["base", "exp"].forEach((side, k) => grid.append(clusterTable(side, clusters[k], i)));
      box.append(grid, el("p", {class: "muted legend"}, "= in the same cluster as this item on the other side too; ≠ split off " +
        "(Base) or merged in (Exp). Shaded values differ from this item's."));
    } catch (e) {
      if (seq !== itemSeq) return;
      box.textContent = ""; box.className = ""; box.append(el("p", {class: "err"}, String(e.message || e)));
    }
    bringDetailIntoView();
  }

  // One cluster's members: the item, its cluster on the other side (= the same as this item's, or ≠),
  // then every attribute; values that differ from the item's are shaded.
  function clusterTable(side, c, i) {
    const col = el("div", {"data-side": side});
    const other = side === "base" ? "exp_cluster" : "base_cluster";
    const tools = el("div", {class: "tools"});
    col.append(el("h3", null, (side === "base" ? "Base" : "Exp") + " cluster " + String(c.cluster_id)), tools);
    const note = count(c.size) + (c.size === 1 ? " item" : " items") + ", weight " + num(c.weight) +
      (c.source === "sample" ? " (members in the sample only)" : "") +
      (c.truncated ? "; showing the " + c.members.length + " heaviest" : "");
    const same = (m) => String(m[other]) === String(i[other]);
    const relation = (m) => same(m) ? "stable with this item" : (side === "base" ? "split off from this item" : "merged in for this item");
    const differs = (m, a) => String(m.item_id) !== String(i.item_id) && a in i && text(m[a]) !== text(i[a]);
    const columns = [
      {key: "item_id", label: "item", value: (m) => m.item_id, cell: (m) => String(m.item_id)},
      {key: other, label: colLabel(other), value: (m) => m[other], cell: (m) => (same(m) ? "= " : "≠ ") + String(m[other])},
      {key: "relation", label: "relation", csvOnly: true, value: relation},
      ...META.attributes.map((a) => Object.assign(sampleColumn(a), {cellClass: (m) => differs(m, a) ? "differs" : ""})),
    ];
    let sort = null;
    const table = el("table");
    const draw = () => dataTable(table, {
      columns, rows: c.members, sort, tools, note, file: fileName(side, "cluster", c.cluster_id), defaultOrder: "heaviest first",
      onSort: (s) => { sort = s; draw(); },
      rowAttrs: (m) => ({class: "ex" + (String(m.item_id) === String(i.item_id) ? " me" : ""), title: relation(m)}),
      onRow: (m) => showItem(m.item_id, true),
    });
    draw();
    col.append(el("div", {class: "scroll"}, table));
    return col;
  }

  // ----------------------------------------------------------------------------- running
  // Apply what the controls say: a new history entry, then the query.
  function apply() {
    readControls();
    remember(true);
    return run();
  }

  async function run() {
    const seq = ++runSeq;
    showError(null);
    const q = currentQuery();
    try {
      const res = await post("/api/query", q);
      const ex = await post("/api/examples", {filters: q.filters, n: 20, seed: 0});
      if (seq !== runSeq) return;
      shownQuery = queryKey(q); lastGroups = res; lastExamples = ex.examples;
      renderSlice(res.slice); renderGroups(res);
      byId("slice-desc").textContent = describeFilters(res.filters);
      byId("timing").textContent = "answered in " + (1000 * res.seconds).toFixed(0) + " ms";
      renderExamples(ex.examples);
      window.__lastQuery = res; window.__ready = (window.__ready || 0) + 1;
    } catch (e) {
      if (seq !== runSeq) return;
      shownQuery = null;
      showError(e); window.__ready = (window.__ready || 0) + 1;
    }
  }

  // The address says what to show (on load, and on Back and Forward).
  async function follow(first) {
    const q = fromAddress(location.search);
    state.filters = q.filters; state.group_by = q.group_by; state.metric = q.metric; state.top = q.top;
    const resorted = JSON.stringify(q.sorts) !== JSON.stringify(sorts);
    Object.assign(sorts, q.sorts);
    writeControls();
    if (q.item !== shownItem) {
      if (q.item === null) clearItem(); else showItem(q.item, false);
    }
    if (first || queryKey(currentQuery()) !== shownQuery) {
      await run();
    } else if (resorted && lastGroups) {
      renderGroups(lastGroups); renderExamples(lastExamples);
    }
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
    COLS = Object.fromEntries(META.columns.map((c) => [c.name, c]));
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
    renderGroupBy();
    byId("add-filter").addEventListener("click", () => {
      state.filters.push({column: META.attributes[0] || META.columns[0].name, op: "=", value: ""}); renderFilters();
    });
    byId("clear-filters").addEventListener("click", () => { state.filters.length = 0; renderFilters(); apply(); });
    byId("run").addEventListener("click", apply);
    byId("top").addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
    byId("lookup-go").addEventListener("click", () => { const v = byId("lookup").value.trim(); if (v) showItem(v, true); });
    byId("lookup").addEventListener("keydown", (e) => { const v = e.target.value.trim(); if (e.key === "Enter" && v) showItem(v, true); });
    window.addEventListener("popstate", () => { follow(false).catch(showError); });
    await follow(true);
    remember(false);  // the address in its own spelling (a hand-written one, tidied)
  }
  init().catch(showError);
})();
