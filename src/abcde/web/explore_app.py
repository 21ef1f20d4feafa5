"""The exploration UI: slice, group and drill into an exploration sample in a browser.

``abcde explore serve SAMPLE.parquet`` starts a local web server (127.0.0.1 by
default) over an :class:`~abcde.ExplorationSample`. The page builds a slice from
filters on the sample's columns (structured conditions, never SQL text), groups it by
attributes, ranks the groups by estimated contribution, shows example items drawn
∝ importance weight, and drills from an item into its Base and Exp clusters. Every
number comes from the same library calls as ``abcde explore query``
(:meth:`ExplorationSample.estimate`, :meth:`~ExplorationSample.group`,
:meth:`~ExplorationSample.examples`).

Cluster members come from the full clusterings when the sample records its inputs
(``abcde explore sample`` does) or when they are given; otherwise from the sample.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import ibis
import pyarrow as pa

from abcde.errors import AbcdeError, InputError
from abcde.sampling.explore import CORE_COLUMNS, ExplorationSample

MAX_MEMBERS = 200
MAX_EXAMPLES = 200
MAX_BODY = 64 * 1024
VALUE_HINTS = 50


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return str(v)


class ExploreApp:
    """The exploration UI's operations, independent of HTTP (the server calls these).

    Parameters
    ----------
    sample
        The exploration sample (or a path to one).
    base, exp, items, item_id, cluster_id, weight
        The full inputs, for drilling into whole clusters. Default: the inputs the
        sample recorded, when those files still exist.
    """

    def __init__(self, sample, *, base=None, exp=None, items=None, item_id: str = "item_id",
                 cluster_id: str = "cluster_id", weight: str | None = None):
        self.sample = sample if isinstance(sample, ExplorationSample) else ExplorationSample.read(sample)
        rec = self.sample.metadata.get("inputs") or {}
        if base is None and exp is None and rec.get("base") and rec.get("exp") and all(
                Path(rec[k]).exists() for k in ("base", "exp")):
            base, exp = rec["base"], rec["exp"]
            items = items or (rec.get("items") if rec.get("items") and Path(rec["items"]).exists() else None)
            # The column settings the sample was drawn with (older samples: the defaults).
            item_id = rec.get("item_id") or item_id
            cluster_id = rec.get("cluster_id") or cluster_id
            weight = rec.get("weight") or weight
        self._inputs = dict(base=base, exp=exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
        self._full = None
        self._lock = threading.Lock()  # the sample's DuckDB connection: its queries run one at a time
        self._full_lock = threading.Lock()  # the population's (a separate connection)

    def warm_up(self) -> threading.Thread:
        """Compute the population's per-item table in the background (drill-downs wait for it)."""
        def run():
            try:
                self._full_items()
            except AbcdeError:
                pass  # the first drill-down tries again and shows the error on the page

        th = threading.Thread(target=run, name="abcde-explore-warm-up", daemon=True)
        th.start()
        return th

    # -- metadata ----------------------------------------------------------
    def meta(self) -> dict:
        s = self.sample
        t = s.table
        cols = []
        with self._lock:
            for name in t.column_names:
                typ = t.schema.field(name).type
                kind = "number" if (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                                    or pa.types.is_decimal(typ)) else "text"
                entry = {"name": name, "type": str(typ), "kind": kind, "attribute": name not in CORE_COLUMNS}
                if kind == "text" and name not in ("item_id",):
                    vc = t.column(name).value_counts().to_pylist()
                    vc.sort(key=lambda r: -r["counts"])
                    entry["distinct"] = len(vc)
                    entry["values"] = [_clean(r["values"]) for r in vc[:VALUE_HINTS]]
                cols.append(entry)
            overall = s.estimate().to_dict()
        return _clean({"sample": {k: v for k, v in s.metadata.items() if k != "inputs"},
                       "inputs": self._inputs if self._inputs["base"] else None,
                       "columns": cols, "attributes": s.attributes, "overall": overall})

    # -- queries -----------------------------------------------------------
    def query(self, filters=None, group_by=(), metric: str = "jaccard", top: int = 20) -> dict:
        """The slice's estimate and its top groups (``filters``: structured conditions)."""
        filters = filters or None
        if not isinstance(group_by, (list, tuple)) or not all(isinstance(c, str) for c in group_by):
            raise InputError(f"group_by must be a list of column names. Got {group_by!r} instead.")
        group_by = list(group_by)
        top = max(1, min(int(top), 500))
        t0 = time.perf_counter()
        with self._lock:
            sl = self.sample.estimate(filters)
            groups = self.sample.group(group_by, where=filters, metric=metric, top=top) if group_by else []
        return _clean({"filters": filters or [], "group_by": group_by, "metric": metric,
                       "slice": sl.to_dict(), "groups": [g.to_dict() for g in groups],
                       "seconds": time.perf_counter() - t0})

    def examples(self, filters=None, n: int = 20, seed: int = 0) -> dict:
        n = max(1, min(int(n), MAX_EXAMPLES))
        with self._lock:
            rows = self.sample.examples(n, where=filters or None, seed=int(seed)).to_pylist()
        return _clean({"examples": rows})

    # -- drill-down ----------------------------------------------------------
    def _full_items(self):
        """Per-item metrics and attributes of the whole population (computed once)."""
        with self._full_lock:
            return self._compute_full()

    def _compute_full(self):
        if self._full is None and self._inputs["base"]:
            from abcde.metrics.impact import impact

            i = self._inputs
            res = impact(i["base"], i["exp"], items=i["items"], item_id=i["item_id"], cluster_id=i["cluster_id"],
                         weight=i["weight"], top=0)
            diff = res._diff
            pi = res.per_item_expr()
            if diff.items is not None and diff.attributes:
                it = diff.items.select("item_id", *diff.attributes)
                pi = pi.left_join(it, pi.item_id == it.item_id).drop("item_id_right")
            self._full = (diff.engine, diff.engine.materialize(pi, "explore_items"))
        return self._full

    def _source(self):
        full = self._full_items()
        if full is not None:
            return full[0], full[1], "population"
        return self.sample._engine(), self.sample._ibis(), "sample"

    @staticmethod
    def _typed_id(t: ibis.Table, col: str, value):
        typ = t[col].type()
        if not (typ.is_integer() or typ.is_string()):
            raise InputError(f"Lookups by {col} need integer or text ids; this sample's are {typ}.")
        if typ.is_integer():
            try:
                return int(str(value).strip())
            except ValueError:
                raise InputError(f"{col} values are integers here; {value!r} is not one.") from None
        return str(value)

    def item(self, item_id) -> dict:
        """An item's metrics (from the population, or the sample) and whether it was sampled."""
        eng, t, where = self._source()
        with self._full_lock if where == "population" else self._lock:
            v = self._typed_id(t, "item_id", item_id)
            rows = eng.rows(t.filter(t.item_id == v).limit(1), step="item lookup")
        with self._lock:
            st = self.sample._ibis()
            sv = self._typed_id(st, "item_id", item_id)
            sampled = self.sample._engine().rows(st.filter(st.item_id == sv).limit(1), step="item lookup")
        return _clean({"item_id": item_id, "found": bool(rows or sampled), "source": where,
                       "item": (rows or sampled or [None])[0], "sampled": sampled[0] if sampled else None})

    def cluster(self, side: str, cluster_id) -> dict:
        """Members of one Base or Exp cluster (up to 200, heaviest first), with the count."""
        if side not in ("base", "exp"):
            raise InputError(f"side must be 'base' or 'exp'. Got {side!r} instead.")
        col = f"{side}_cluster"
        eng, t, where = self._source()
        with self._full_lock if where == "population" else self._lock:
            v = self._typed_id(t, col, cluster_id)
            c = t.filter(t[col] == v)
            agg = eng.one(c.aggregate(n=c.count(), w=c.weight.sum()), step="cluster size")
            rows = eng.rows(c.order_by([ibis.desc("weight"), "item_id"]).limit(MAX_MEMBERS), step="cluster members")
        return _clean({"side": side, "cluster_id": cluster_id, "source": where, "size": int(agg.get("n") or 0),
                       "weight": agg.get("w"), "members": rows, "truncated": int(agg.get("n") or 0) > len(rows)})


# --------------------------------------------------------------------------- HTTP
class _Handler(BaseHTTPRequestHandler):
    app: ExploreApp
    server_version = "abcde-explore"

    def log_message(self, fmt, *args):  # quiet by default
        pass

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if ctype.startswith("text/html"):
            self.send_header("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; "
                             "style-src 'unsafe-inline'; connect-src 'self'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, obj, status: int = 200) -> None:
        self._send(status, json.dumps(obj, default=str, allow_nan=False).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _host_ok(self) -> bool:
        """Refuse requests for another host name (DNS rebinding) when serving on loopback."""
        bound = self.server.server_address[0]
        if bound not in ("127.0.0.1", "localhost", "::1"):
            return True
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if host in ("127.0.0.1", "localhost", "::1"):
            return True
        self._error(403, "this server answers only requests for 127.0.0.1 / localhost")
        return False

    def do_GET(self):  # noqa: N802
        if not self._host_ok():
            return
        try:
            self._get()
        except Exception as exc:  # never drop the connection without an answer
            self._error(500, f"{type(exc).__name__}: {exc}")

    def do_POST(self):  # noqa: N802
        if not self._host_ok():
            return
        try:
            self._post()
        except Exception as exc:
            self._error(500, f"{type(exc).__name__}: {exc}")

    def _get(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        try:
            if u.path == "/":
                self._send(200, _PAGE.encode(), "text/html; charset=utf-8")
            elif u.path == "/favicon.ico":
                self._send(204, b"", "image/x-icon")
            elif u.path == "/api/meta":
                self._json(self.app.meta())
            elif u.path == "/api/item":
                self._json(self.app.item(q.get("id", "")))
            elif u.path == "/api/cluster":
                self._json(self.app.cluster(q.get("side", ""), q.get("id", "")))
            else:
                self._error(404, "not found")
        except AbcdeError as exc:
            self._error(400, str(exc))

    def _post(self):
        u = urlparse(self.path)
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = -1
        if n < 0 or n > MAX_BODY:
            self.close_connection = True  # the unread body must not be read as the next request
            return self._error(413, "request body too large or without a length")
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except (ValueError, RecursionError):
            return self._error(400, "the request body is not a JSON object")
        try:
            if u.path == "/api/query":
                self._json(self.app.query(body.get("filters"), body.get("group_by") or [],
                                          body.get("metric", "jaccard"), body.get("top", 20)))
            elif u.path == "/api/examples":
                self._json(self.app.examples(body.get("filters"), body.get("n", 20), body.get("seed", 0)))
            else:
                self._error(404, "not found")
        except (AbcdeError, TypeError, ValueError, OverflowError) as exc:
            self._error(400, str(exc))


def make_server(app: ExploreApp, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``app`` (not yet serving; call ``serve_forever``). Port 0 picks a free port."""
    handler = type("Handler", (_Handler,), {"app": app})
    srv = ThreadingHTTPServer((host, port), handler)
    srv.daemon_threads = True
    return srv


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>abcde · explore the impact</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}header{background:#243b6b;color:#fff;padding:10px 20px}
header h1{font-size:18px;margin:0}header .sub{opacity:.8;font-size:12px}
main{display:grid;grid-template-columns:360px minmax(0,1fr);gap:16px;padding:12px 20px}
aside section,main>div section{border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin-bottom:12px}
h2{font-size:15px;margin:0 0 6px}.row{display:flex;gap:4px;margin:4px 0;align-items:center}
select,input,button{font:inherit;padding:3px 5px}button{cursor:pointer}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eee;padding:3px 6px;text-align:right;font-size:13px}
td:first-child,th:first-child{text-align:left}th{background:#f6f6f6}td{white-space:nowrap}
.bar{background:#c9d8f5;height:10px;display:inline-block;vertical-align:middle}
tr.group{cursor:pointer}tr.group:hover,tr.ex:hover{background:#f3f7ff}tr.ex{cursor:pointer}
.err{color:#b00020}.muted{color:#777;font-size:12px}.cards{display:flex;gap:10px;flex-wrap:wrap}
.card{border:1px solid #e3e3e3;border-radius:6px;padding:4px 10px}.card b{font-size:17px;display:block}
.clusters{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px}.scroll{overflow-x:auto}
.f-col{width:110px}.f-op{width:70px}.f-val{width:110px}a.cl{color:#243b6b;cursor:pointer;text-decoration:underline}
</style></head><body>
<header><h1>abcde · explore the impact</h1><div class="sub" id="sub"></div></header>
<main>
<aside>
<section><h2>Slice</h2><div id="filters"></div><button id="add-filter">+ filter</button></section>
<section><h2>Group by</h2><div id="groupby"></div>
<div class="row">rank by <select id="metric"><option value="jaccard">JaccardDistance</option><option value="split">SplitRate</option><option value="merge">MergeRate</option></select>
top <input id="top" type="number" value="20" min="1" max="500" style="width:60px"></div>
<button id="run">Apply</button></section>
<section><h2>Item lookup</h2><div class="row"><input id="lookup" placeholder="item id"><button id="lookup-go">Find</button></div></section>
</aside>
<div>
<section><h2>Slice estimate</h2><div id="slice" class="cards"></div><div id="error" class="err"></div><div class="muted" id="timing"></div></section>
<section id="groups-section"><h2>Top groups</h2><table id="groups"></table></section>
<section><h2>Example items <span class="muted">(drawn ∝ importance weight; click one to see its clusters)</span></h2><div class="scroll"><table id="examples"></table></div></section>
<section id="detail-section"><h2>Item</h2><div id="detail" class="muted">Click an example item or look one up by id.</div></section>
</div></main>
<script>
(function(){
'use strict';
let META = null;
const state = {filters: [], group_by: [], metric: 'jaccard', top: 20};
function el(tag, attrs, ...kids){const e=document.createElement(tag);for(const [k,v] of Object.entries(attrs||{})){if(k==='class')e.className=v;else if(k.startsWith('on'))e.addEventListener(k.slice(2),v);else e.setAttribute(k,v);}for(const c of kids){if(c==null)continue;e.append(c instanceof Node?c:document.createTextNode(String(c)));}return e;}
const pct = x => x==null ? 'n/a' : (100*x).toFixed(3)+'%';
const num = x => x==null ? 'n/a' : (typeof x==='number' ? (+x.toFixed(4)).toLocaleString() : String(x));
async function api(path, body){
  const r = await fetch(path, body===undefined ? {} : {method:'POST', headers:{'Content-Type':'application/json'}, body: JSON.stringify(body)});
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}
function showError(e){document.getElementById('error').textContent = e ? String(e.message || e) : '';}
function filterRow(f){
  const cols = META.columns;
  const colSel = el('select', {class:'f-col'}); cols.forEach(c=>colSel.append(el('option', {value:c.name}, c.name)));
  colSel.value = f.column;
  const opSel = el('select', {class:'f-op'}); ['=','!=','<','<=','>','>=','in','not in','contains','is null','is not null'].forEach(o=>opSel.append(el('option', {value:o}, o)));
  opSel.value = f.op;
  const val = el('input', {class:'f-val', list:'dl-'+f.column, size:12}); val.value = Array.isArray(f.value) ? f.value.join(', ') : (f.value ?? '');
  const rm = el('button', {title:'remove'}, '×');
  const row = el('div', {class:'row'}, colSel, opSel, val, rm);
  const sync = ()=>{f.column = colSel.value; f.op = opSel.value; val.setAttribute('list','dl-'+f.column);
    f.value = (f.op==='in'||f.op==='not in') ? val.value.split(',').map(s=>s.trim()).filter(s=>s.length) : val.value;};
  colSel.addEventListener('change', sync); opSel.addEventListener('change', sync); val.addEventListener('input', sync);
  val.addEventListener('keydown', e=>{if(e.key==='Enter'){sync(); run();}});
  rm.addEventListener('click', ()=>{state.filters.splice(state.filters.indexOf(f),1); renderFilters(); run();});
  sync();
  return row;
}
function renderFilters(){const box=document.getElementById('filters'); box.textContent=''; state.filters.forEach(f=>box.append(filterRow(f)));}
function cleanFilters(){return state.filters.filter(f=>f.op.startsWith('is') || (Array.isArray(f.value) ? f.value.length : String(f.value).length)).map(f=>({column:f.column, op:f.op, value:f.value}));}
function renderSlice(s){
  const box = document.getElementById('slice'); box.textContent='';
  const card = (label, v, se, key) => el('div', {class:'card', 'data-key':key}, el('b', {'data-value': v==null?'':v}, key==='sampled_items' ? num(v) : pct(v)), label + (se!=null ? ' ± '+pct(se) : ''));
  box.append(card('sampled items', s.sampled_items, null, 'sampled_items'), card('weight share', s.weight_share, s.std_err.weight_share, 'weight_share'),
    card('split contribution', s.split_contribution, s.std_err.split_contribution, 'split_contribution'),
    card('merge contribution', s.merge_contribution, s.std_err.merge_contribution, 'merge_contribution'),
    card('Jaccard contribution', s.jaccard_contribution, s.std_err.jaccard_contribution, 'jaccard_contribution'));
}
function renderGroups(res){
  const t = document.getElementById('groups'); t.textContent='';
  if (!res.group_by.length) {t.append(el('tr', {}, el('td', {class:'muted'}, 'Pick attributes to group by.'))); return;}
  const key = res.metric + '_contribution';
  const total = META.overall[key] || 1;
  t.append(el('tr', {}, ...res.group_by.map(c=>el('th', {}, c)), el('th', {}, 'sampled items'), el('th', {}, 'weight share'), el('th', {}, 'split'), el('th', {}, 'merge'), el('th', {}, 'Jaccard'), el('th', {}, '± s.e.'), el('th', {}, 'share of total')));
  res.groups.forEach(g=>{
    const share = g[key] / total;
    const tr = el('tr', {class:'group'}, ...res.group_by.map(c=>el('td', {'data-col':c}, g[c]==null?'(null)':String(g[c]))),
      el('td', {'data-col':'sampled_items'}, num(g.sampled_items)), el('td', {'data-col':'weight_share'}, pct(g.weight_share)),
      el('td', {'data-col':'split_contribution', 'data-value':g.split_contribution}, pct(g.split_contribution)),
      el('td', {'data-col':'merge_contribution', 'data-value':g.merge_contribution}, pct(g.merge_contribution)),
      el('td', {'data-col':'jaccard_contribution', 'data-value':g.jaccard_contribution}, pct(g.jaccard_contribution)),
      el('td', {}, pct(g.std_err[key])),
      el('td', {}, el('span', {class:'bar', style:'width:'+Math.max(1, Math.round(120*Math.min(1,Math.max(0,share))))+'px'}), ' '+(100*share).toFixed(1)+'%'));
    tr.addEventListener('click', ()=>{res.group_by.forEach(c=>{ if (g[c]==null) state.filters.push({column:c, op:'is null', value:''}); else state.filters.push({column:c, op:'=', value:String(g[c])}); }); renderFilters(); run();});
    t.append(tr);
  });
}
function renderExamples(rows){
  const t = document.getElementById('examples'); t.textContent='';
  const attrs = META.attributes.slice(0, 4);
  const cols = ['item_id', 'base_cluster', 'exp_cluster', 'split_rate', 'merge_rate', 'jaccard_distance', ...attrs];
  t.append(el('tr', {}, ...cols.map(c=>el('th', {}, c))));
  rows.forEach(r=>{const tr = el('tr', {class:'ex'}, ...cols.map(c=>el('td', {}, c.endsWith('_rate')||c==='jaccard_distance' ? pct(r[c]) : (r[c]==null?'':String(r[c])))));
    tr.addEventListener('click', ()=>showItem(r.item_id)); t.append(tr);});
}
async function showItem(id){
  const box = document.getElementById('detail'); box.textContent = 'loading…'; box.className='';
  try {
    const it = await api('/api/item?id=' + encodeURIComponent(id));
    box.textContent='';
    if (!it.found) {box.append(el('p', {class:'err'}, 'No item ' + id + ' among the common items.')); return;}
    const i = it.item;
    box.append(el('p', {}, 'Item ', el('b', {id:'detail-id'}, String(i.item_id)), ' · SplitRate ' + pct(i.split_rate) + ' · MergeRate ' + pct(i.merge_rate) + ' · JaccardDistance ' + pct(i.jaccard_distance) + ' · weight ' + num(i.weight) + (it.sampled ? ' · in the sample (draws ' + it.sampled.draw_count + ')' : ' · not in the sample')));
    const grid = el('div', {class:'clusters'});
    for (const side of ['base', 'exp']) {
      const col = el('div', {'data-side':side}); grid.append(col);
      const c = await api('/api/cluster?side=' + side + '&id=' + encodeURIComponent(i[side + '_cluster']));
      col.append(el('h3', {}, (side==='base'?'Base':'Exp') + ' cluster ' + String(c.cluster_id)), el('div', {class:'muted'}, c.size.toLocaleString() + ' items, weight ' + num(c.weight) + (c.source==='sample' ? ' (members in the sample only)' : '') + (c.truncated ? '; showing the ' + c.members.length + ' heaviest' : '')));
      const t = el('table'); const attrs = META.attributes.slice(0, 4);
      t.append(el('tr', {}, el('th', {}, 'item'), el('th', {}, side==='base'?'Exp cluster':'Base cluster'), ...attrs.map(a=>el('th', {}, a))));
      const other = side==='base' ? 'exp_cluster' : 'base_cluster';
      c.members.forEach(m=>{const same = String(m[other])===String(i[other]);
        const tr = el('tr', {class:'ex', title: same ? 'stable with this item' : (side==='base' ? 'split off from this item' : 'merged in for this item')}, el('td', {}, String(m.item_id)), el('td', {}, (same ? '= ' : '≠ ') + String(m[other])), ...attrs.map(a=>el('td', {}, m[a]==null?'':String(m[a]))));
        tr.addEventListener('click', ()=>showItem(m.item_id)); t.append(tr);});
      col.append(el('div', {class:'scroll'}, t));
    }
    box.append(grid);
  } catch (e) {box.textContent=''; box.append(el('p', {class:'err'}, String(e.message||e)));}
}
async function run(){
  showError(null);
  state.metric = document.getElementById('metric').value;
  state.top = +document.getElementById('top').value || 20;
  state.group_by = [...document.querySelectorAll('.gb:checked')].map(c=>c.value);
  const filters = cleanFilters();
  try {
    const res = await api('/api/query', {filters, group_by: state.group_by, metric: state.metric, top: state.top});
    renderSlice(res.slice); renderGroups(res);
    document.getElementById('timing').textContent = 'answered in ' + (1000*res.seconds).toFixed(0) + ' ms';
    const ex = await api('/api/examples', {filters, n: 20, seed: 0});
    renderExamples(ex.examples);
    window.__lastQuery = res; window.__ready = (window.__ready||0) + 1;
  } catch (e) {showError(e); window.__ready = (window.__ready||0) + 1;}
}
async function init(){
  META = await api('/api/meta');
  const s = META.sample;
  document.getElementById('sub').textContent = s.unique_items.toLocaleString() + ' affected items sampled ∝ weight·JaccardDistance (' + s.total_draws.toLocaleString() + ' draws, seed ' + s.seed + ') · JaccardDistance(T) ' + pct(s.jaccard_distance_T) + ' · SplitRate(T) ' + pct(s.split_rate_T) + ' · MergeRate(T) ' + pct(s.merge_rate_T);
  for (const c of META.columns) if (c.values) {const dl = el('datalist', {id:'dl-'+c.name}); c.values.forEach(v=>dl.append(el('option', {value: v==null?'':String(v)}))); document.body.append(dl);}
  const gb = document.getElementById('groupby');
  META.attributes.forEach(a=>gb.append(el('label', {style:'margin-right:8px;display:inline-block'}, el('input', {type:'checkbox', class:'gb', value:a}), ' ' + a)));
  document.getElementById('add-filter').addEventListener('click', ()=>{state.filters.push({column: META.attributes[0] || META.columns[0].name, op:'=', value:''}); renderFilters();});
  document.getElementById('run').addEventListener('click', run);
  document.getElementById('lookup-go').addEventListener('click', ()=>showItem(document.getElementById('lookup').value.trim()));
  document.getElementById('lookup').addEventListener('keydown', e=>{if(e.key==='Enter') showItem(e.target.value.trim());});
  await run();
}
init().catch(showError);
})();
</script></body></html>
"""
