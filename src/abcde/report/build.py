"""The ABCDE report: what a team looks at to decide (paper, "Insights and debugging").

:func:`build_report` gathers, from an :class:`~abcde.ImpactResult` (and optionally a
judged pair sample and an exploration sample), everything the report shows:

- the headline impact metrics and what restricting to the common items removed;
- the most affected clusters of Base and Exp (and both interleaved), each with its
  *neighbourhood* — the fragments ``Base ∩ Exp`` around it and some of their members —
  so the page can draw the paper's Figure 1 (split / stable / merge) from the point
  of view of any member;
- chart data: the distribution of JaccardDistance over the affected weight, the split
  and merge contributions of the most affected clusters and of slices;
- slice tables; quality estimates with 95% intervals when judgements exist.

The :class:`Report` renders itself as one self-contained HTML page (Vega-Lite charts
made with Altair; vega, vega-lite and vega-embed inlined from vl-convert's bundle, so
the page opens offline), as JSON (:meth:`Report.to_dict`, the same numbers) and as a
Markdown summary for a code review comment.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import ibis

from abcde.core.names import METRIC_LABELS, QUALITY_METRICS
from abcde.errors import InputError
from abcde.util.files import write_text
from abcde.core.diff import describe_restriction
from abcde.metrics.impact import ImpactResult, per_item_expr

REPORT_FORMAT = "abcde-report"
REPORT_VERSION = 1
MAX_ATTRIBUTES = 8


MEANING = [
    ("SplitRate(i)", "the weight fraction of Base(i) that Exp split off, from item i's point of view. "
     "SplitRate(T) is its weighted average over all items."),
    ("MergeRate(i)", "the weight fraction of Exp(i) that Exp newly merged in, from item i's point of view."),
    ("JaccardDistance(i)", "the weight of the split and merged items as a fraction of the split, merged and "
     "stable items (Base(i) ∪ Exp(i)). 0 when i's cluster did not change; JaccardDistance(T) is a true "
     "distance between the two clusterings."),
    ("Contribution of a cluster C", "weight(C)·JaccardDistance(C)/weight(T): how much of JaccardDistance(T) "
     "comes from C. The most affected clusters are ranked by it."),
    ("ΔPrecision", "Precision(Exp) − Precision(Base), estimated from same/different judgements of item pairs "
     "sampled ∝ their pair weight. Negative means Exp made clusters less homogeneous."),
    ("GoodSplitRate / BadSplitRate", "the parts of SplitRate(T) whose split-off pairs are judged different "
     "(a good split) or the same (a bad split); Good + Bad = SplitRate."),
    ("GoodMergeRate / BadMergeRate", "the parts of MergeRate(T) whose merged pairs are judged the same (good) "
     "or different (bad); Good + Bad = MergeRate."),
    ("95% interval", "the estimate ± the t quantile × standard error; it covers the true value in about 95% "
     "of samples. Exact impact metrics have no interval."),
]


@dataclass(frozen=True)
class Report:
    """Everything the report shows, as plain data (see :func:`build_report`).

    Attributes
    ----------
    data
        The JSON-serializable content (:meth:`to_dict`).
    """

    data: dict = field(repr=False)

    def to_dict(self) -> dict:
        """The report's content as JSON-serializable data (what ``--json`` prints)."""
        return self.data

    def to_html(self) -> str:
        """One self-contained HTML page (no network needed to open it)."""
        return render_html(self.data)

    def to_markdown(self) -> str:
        """A short Markdown summary for a code review comment."""
        return render_markdown(self.data)

    def write(self, path: str | os.PathLike, *, markdown: str | os.PathLike | None = None,
              json_path: str | os.PathLike | None = None) -> list[Path]:
        """Write the HTML page (atomically) and optionally the Markdown and JSON forms."""
        out = []
        for target, text in ((path, self.to_html()), (markdown, self.to_markdown()),
                             (json_path, json.dumps(self.data, indent=2, default=str) + "\n")):
            if target is None:
                continue
            p = Path(target)
            p.parent.mkdir(parents=True, exist_ok=True)
            out.append(write_text(p, text))
        return out


# --------------------------------------------------------------------------- gathering
def _num(x):
    if x is None:
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)


def build_report(
    result: ImpactResult,
    *,
    quality=None,
    judged_by: str | None = None,
    exploration=None,
    explore_by: tuple[str, ...] | list[str] = (),
    max_fragments: int = 40,
    members_per_fragment: int = 20,
    title: str = "ABCDE report",
    names: tuple[str, str] = ("Base", "Exp"),
) -> Report:
    """Gather the report's content.

    Parameters
    ----------
    result
        Exact impact metrics from :func:`abcde.impact` (its ``top`` and ``slice_by``
        decide the clusters and slices shown).
    quality
        Optional quality estimates: a :class:`~abcde.quality.QualityResult` or its
        ``to_dict()``.
    judged_by
        Who made the judgements (e.g. ``"oracle: the example's true entity ids"``);
        shown next to every quality number.
    exploration, explore_by
        Optional :class:`~abcde.ExplorationSample` and attributes to group it by.
    max_fragments, members_per_fragment
        Truncation of each cluster's neighbourhood in the page (counts and weights stay
        exact; only the listed members are cut).
    """
    if max_fragments < 1 or members_per_fragment < 1:
        raise InputError("max_fragments and members_per_fragment must be at least 1.")
    imp = result.to_dict()
    W = result.total_weight
    empty = result.affected_items == 0
    data: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "title": title,
        "names": {"base": names[0], "exp": names[1]},
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "engine": result.engine,
        "identical": empty,
        "headline": {k: imp[k] for k in ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance",
                                         "affected_items", "affected_weight", "unaffected_items",
                                         "unaffected_weight")},
        "restriction": imp["restriction"],
        "top_clusters": imp["top_clusters"],
        "slices": {name: [{k: _jsonable(v) for k, v in row.items()} for row in rows]
                   for name, rows in imp["slices"].items()},
        "neighbourhoods": {},
        "charts": {},
        "meaning": [{"term": t, "meaning": m} for t, m in MEANING],
    }
    data["headline"]["affected_weight_share"] = result.affected_weight / W if W else 0.0
    if not empty:
        diff = result._diff
        data["attributes"] = [c for c in diff.attributes][:MAX_ATTRIBUTES]
        data["charts"]["jaccard_histogram"] = _jaccard_histogram(result)
        data["charts"]["cluster_contributions"] = [
            {"cluster": f"{r['side']}:{r['cluster_id']}", "side": r["side"],
             "split": r["weight"] * r["split_rate"] / W, "merge": r["weight"] * r["merge_rate"] / W}
            for r in imp["top_clusters"]["interleaved"]]
        for side in ("base", "exp"):
            ids = [r["cluster_id"] for r in imp["top_clusters"][side]]
            data["neighbourhoods"][side] = _neighbourhoods(result, side, ids, data["attributes"], max_fragments,
                                                           members_per_fragment)
    if quality is not None:
        q = quality if isinstance(quality, dict) else quality.to_dict()
        data["quality"] = {**q, "judged_by": judged_by or "unknown"}
    if exploration is not None:
        groups = {}
        for col in explore_by:
            groups[col] = [{k: _jsonable(v) if not isinstance(v, dict) else v for k, v in g.to_dict().items()}
                           for g in exploration.group([col], top=15)]
        data["exploration"] = {"sample": {k: _jsonable(v) for k, v in exploration.metadata.items()
                                          if not isinstance(v, dict)},
                               "groups": groups}
    return Report(data)


def _jaccard_histogram(result: ImpactResult, bins: int = 20) -> list[dict]:
    """Affected weight per JaccardDistance bin [k/bins, (k+1)/bins), as shares of the affected weight."""
    diff = result._diff
    t = per_item_expr(diff)
    t = t.filter(t.jaccard_distance > 0)
    b = ibis.least((t.jaccard_distance * bins).floor().cast("int64"), bins - 1)
    g = t.group_by(bin=b).aggregate(items=t.count(), weight=t.weight.sum()).order_by("bin")
    rows = diff.engine.rows(g, step="JaccardDistance histogram")
    aff = result.affected_weight or 1.0
    return [{"from": r["bin"] / bins, "to": (r["bin"] + 1) / bins, "items": int(r["items"]),
             "weight": float(r["weight"]), "weight_share": float(r["weight"]) / aff} for r in rows]


def _neighbourhoods(result: ImpactResult, side: str, ids: list, attributes: list[str], max_fragments: int,
                    per_fragment: int) -> dict:
    """For each anchor cluster (of ``side``): the fragments of the anchor and of the clusters of
    the other side it touches (exact ``n, w, nb, wb, ne, we``), and up to ``per_fragment``
    members of each of the ``max_fragments`` heaviest fragments."""
    if not ids:
        return {}
    diff = result._diff
    eng = diff.engine
    key, other = f"{side}_cluster", ("exp_cluster" if side == "base" else "base_cluster")
    f = diff.fragments
    own = f.filter(f[key].isin(ids))
    touched = own.select(anchor=own[key], oc=own[other]).distinct()
    nb = f.join(touched, f[other] == touched.oc).select(
        touched.anchor, f.base_cluster, f.exp_cluster, f.n, f.w, f.nb, f.wb, f.ne, f.we,
        own_frag=(f[key] == touched.anchor))
    # The anchor's own fragments (the points of view) first, then by weight.
    nb = nb.mutate(rank=ibis.row_number().over(
        group_by=nb.anchor, order_by=[ibis.desc(nb.own_frag), ibis.desc(nb.w), nb.base_cluster, nb.exp_cluster]))
    frags = eng.rows(nb.order_by(["anchor", "rank"]), step=f"neighbourhoods of the top {side} clusters")
    kept = [r for r in frags if r["rank"] < max_fragments]
    j = diff.joined
    kf = ibis.memtable([{"anchor": r["anchor"], "base_cluster": r["base_cluster"], "exp_cluster": r["exp_cluster"]}
                        for r in kept]) if kept else None
    members: list[dict] = []
    if kf is not None:
        kf = kf.cast({"anchor": j[key].type(), "base_cluster": j.base_cluster.type(),
                      "exp_cluster": j.exp_cluster.type()})
        m = j.join(kf, [j.base_cluster == kf.base_cluster, j.exp_cluster == kf.exp_cluster]).select(
            kf.anchor, j.item_id, j.base_cluster, j.exp_cluster, j.weight)
        m = m.mutate(rn=ibis.row_number().over(group_by=[m.anchor, m.base_cluster, m.exp_cluster],
                                               order_by=[ibis.desc(m.weight), m.item_id]))
        m = m.filter(m.rn < per_fragment)
        if diff.items is not None and attributes:
            it = diff.items.select("item_id", *attributes)
            m = m.left_join(it, m.item_id == it.item_id).drop("item_id_right")
        members = eng.rows(m.order_by(["anchor", "base_cluster", "exp_cluster", "rn"]),
                           step=f"members of the top {side} clusters")
    out: dict = {}
    for r in frags:
        a = out.setdefault(str(r["anchor"]), {"fragments": [], "members": [], "fragments_total": 0,
                                              "fragments_shown": 0})
        a["fragments_total"] += 1
        if r["rank"] < max_fragments:
            a["fragments_shown"] += 1
            a["fragments"].append({k: _jsonable(r[k]) for k in ("base_cluster", "exp_cluster", "n", "w", "nb", "wb",
                                                                  "ne", "we", "own_frag")})
    for r in members:
        a = out[str(r["anchor"])]
        a["members"].append({"item_id": _jsonable(r["item_id"]), "base_cluster": _jsonable(r["base_cluster"]),
                             "exp_cluster": _jsonable(r["exp_cluster"]), "weight": _jsonable(r["weight"]),
                             "attributes": {c: _jsonable(r.get(c)) for c in attributes}})
    return out


# --------------------------------------------------------------------------- charts
def _charts(data: dict) -> dict:
    """Vega-Lite specs (made with Altair) for the page."""
    import altair as alt

    specs: dict[str, dict] = {}
    c = data["charts"]
    width = 520
    if c.get("jaccard_histogram"):
        specs["jaccard_histogram"] = alt.Chart(alt.Data(values=c["jaccard_histogram"])).mark_bar().encode(
            x=alt.X("from:Q", bin=alt.Bin(binned=True, step=0.05), title="JaccardDistance(i)",
                    scale=alt.Scale(domain=[0, 1])),
            x2="to:Q",
            y=alt.Y("weight_share:Q", title="share of affected weight", axis=alt.Axis(format="%")),
            tooltip=[alt.Tooltip("from:Q", title="from"), alt.Tooltip("to:Q", title="to"),
                     alt.Tooltip("items:Q"), alt.Tooltip("weight_share:Q", format=".1%")],
        ).properties(width=width, height=220, title="Distribution of JaccardDistance over the affected weight"
                     ).to_dict()
    if c.get("cluster_contributions"):
        rows = [{"cluster": r["cluster"], "part": part, "contribution": r[part]}
                for r in c["cluster_contributions"] for part in ("split", "merge")]
        specs["cluster_contributions"] = _stacked(alt, rows, "cluster", "Contributions of the most affected "
                                                  "clusters to SplitRate(T) and MergeRate(T)", width)
    for name, rows in data["slices"].items():
        W = data["headline"]["total_weight"] or 1.0
        top = sorted(rows, key=lambda r: -(r.get("contribution") or 0))[:15]
        cols = name.split(",")
        vals = [{"slice": ", ".join(str(r.get(col)) for col in cols), "part": part,
                 "contribution": (r["weight"] or 0) * (r.get(f"{part}_rate") or 0) / W}
                for r in top for part in ("split", "merge")]
        if any(v["contribution"] for v in vals):
            specs[f"slice:{name}"] = _stacked(alt, vals, "slice", f"Split and merge contributions by {name}", width)
    q = data.get("quality")
    if q:
        pts = [{"metric": METRIC_LABELS[k], "estimate": q[k]["estimate"], "low": q[k]["ci_low"],
                "high": q[k]["ci_high"]} for k in QUALITY_METRICS
               if q[k]["estimate"] is not None]
        if pts:
            specs["quality"] = _errorbars(alt, pts, "metric", "Quality estimates with 95% intervals", width)
        for col, rows in (q.get("slices") or {}).items():
            pts = [{"slice": str(r["value"]), "estimate": r["delta_precision"]["estimate"],
                    "low": r["delta_precision"]["ci_low"], "high": r["delta_precision"]["ci_high"]}
                   for r in rows if r["delta_precision"]["estimate"] is not None]
            if pts:
                specs[f"quality_slice:{col}"] = _errorbars(alt, pts, "slice", f"ΔPrecision by {col} (95% intervals)",
                                                           width)
    return specs


def _stacked(alt, rows, key, title, width) -> dict:
    order = []
    for r in rows:
        if r[key] not in order:
            order.append(r[key])
    return alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        y=alt.Y(f"{key}:N", sort=order, title=None),
        x=alt.X("sum(contribution):Q", title="contribution", axis=alt.Axis(format=".2%")),
        color=alt.Color("part:N", title=None, scale=alt.Scale(domain=["split", "merge"],
                                                               range=["#d62728", "#1f77b4"])),
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("part:N"), alt.Tooltip("contribution:Q", format=".4%")],
    ).properties(width=width, title=title).to_dict()


def _errorbars(alt, rows, key, title, width) -> dict:
    base = alt.Chart(alt.Data(values=rows))
    order = [r[key] for r in rows]
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y(f"{key}:N", sort=order, title=None), x=alt.X("low:Q", title="estimate (95% interval)"), x2="high:Q")
    pts = base.mark_point(filled=True, size=60, color="black").encode(
        y=alt.Y(f"{key}:N", sort=order), x="estimate:Q",
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("estimate:Q", format=".4f"),
                 alt.Tooltip("low:Q", format=".4f"), alt.Tooltip("high:Q", format=".4f")])
    zero = alt.Chart(alt.Data(values=[{"x": 0}])).mark_rule(strokeDash=[4, 4], color="gray").encode(x="x:Q")
    return (bars + pts + zero).properties(width=width, title=title).to_dict()


# --------------------------------------------------------------------------- HTML
def _e(v) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _n(x, digits=4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}" if abs(x) < 1e6 else f"{x:,.0f}"


def _table(rows: list[dict], cols: list[tuple[str, str, Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(label)}</th>" for _, label, _ in cols)
    body = []
    for r in rows:
        cells = "".join(f'<td data-col="{_e(k)}">{_e(fmt(r.get(k)) if fmt else r.get(k))}</td>' for k, _, fmt in cols)
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _js_safe(v):
    """Integers beyond 2^53 as text: JavaScript's numbers would round ids (the page compares them)."""
    if isinstance(v, dict):
        return {k: _js_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_js_safe(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
        return str(v)
    return v


def _json_script(obj, id_: str) -> str:
    text = json.dumps(_js_safe(obj), default=str, allow_nan=False)
    # Inside <script>, "</" would end the element: escape it (and keep the JSON valid).
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{id_}">{text}</script>'


def render_html(data: dict) -> str:
    """The report as one self-contained HTML page."""
    names = data["names"]
    h = data["headline"]
    parts = [f"<h1>{_e(data['title'])}</h1>",
             f'<p class="sub">{_e(names["exp"])} (Experiment) relative to {_e(names["base"])} (Baseline) · '
             f"{_e(data['created'])} · engine {_e(data['engine'])} · abcde</p>"]
    cards = [("split_rate", "SplitRate", _pct(h["split_rate"])), ("merge_rate", "MergeRate", _pct(h["merge_rate"])),
             ("jaccard_distance", "JaccardDistance", _pct(h["jaccard_distance"])),
             ("affected_items", "affected items", f"{h['affected_items']:,}"),
             ("items", "items compared", f"{h['items']:,}")]
    parts.append('<section id="headline"><h2>Impact</h2><div class="cards">' + "".join(
        f'<div class="card"><div class="v" data-metric="{k}" data-value="{_e(h[k])}">{_e(v)}</div>'
        f'<div class="l">{_e(label)}</div></div>' for k, label, v in cards) + "</div>")
    parts.append(f"<p>The affected items carry {_pct(h['affected_weight_share'])} of the total weight "
                 f"{_n(h['total_weight'])}; {h['unaffected_items']:,} items kept exactly their cluster.</p>")
    parts.append(_restriction_html(data["restriction"], names))
    parts.append("</section>")
    if data["identical"]:
        parts.append('<section id="identical"><p class="ok"><b>The two clusterings are identical</b> on the '
                     f"{h['items']:,} common items: every impact metric is exactly 0, no cluster is affected "
                     "and there is nothing to judge.</p></section>")
    else:
        parts.append(_clusters_html(data))
        parts.append('<section id="charts"><h2>Charts</h2><div class="chart" id="chart-jaccard_histogram"></div>'
                     '<div class="chart" id="chart-cluster_contributions"></div></section>')
        parts.append(_slices_html(data))
    parts.append(_quality_html(data))
    parts.append(_exploration_html(data))
    parts.append('<section id="meaning"><h2>What the numbers mean</h2><dl>' + "".join(
        f"<dt>{_e(m['term'])}</dt><dd>{_e(m['meaning'])}</dd>" for m in data["meaning"]) + "</dl>"
        "<p>Exact impact metrics need no judgements (van Staden &amp; Grubb, 2024, “ABCDE impact metrics”); "
        "quality metrics are estimates from judged pairs (“ABCDE quality metrics”).</p></section>")
    specs = _charts(data) if not data["identical"] or data.get("quality") else {}
    return _PAGE.replace("{{TITLE}}", _e(data["title"])).replace("{{STYLE}}", _STYLE).replace(
        "{{BODY}}", "\n".join(parts)).replace("{{VEGA}}", _vega_bundle() if specs else "").replace(
        "{{DATA}}", _json_script(data, "report-data") + _json_script(specs, "chart-specs")).replace(
        "{{SCRIPT}}", _SCRIPT)


def _restriction_html(r: dict, names: dict) -> str:
    lines = describe_restriction(r, (names["base"], names["exp"]), _n)
    if not lines:
        return (f'<p id="restriction">Both clusterings have the same {r["common_items"]:,} items: nothing was '
                "excluded.</p>")
    return ('<div id="restriction" class="warn"><b>Restricted to the common items</b> '
            f"({r['common_items']:,}):<ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul></div>")


def _clusters_html(data: dict) -> str:
    cols = [("side", "side", None), ("cluster_id", "cluster", None), ("size", "size", None),
            ("weight", "weight", _n), ("split_rate", "SplitRate", _pct), ("merge_rate", "MergeRate", _pct),
            ("jaccard_distance", "JaccardDistance", _pct), ("contribution", "contribution", _pct)]
    out = ['<section id="clusters"><h2>Most affected clusters</h2>'
           "<p>Ranked by contribution weight(C)·JaccardDistance(C)/weight(T). Open a cluster to see its members "
           "as split, stable and merged from the point of view of one of its items (the paper's Figure 1); "
           "click another member to change the point of view.</p><div class=\"tabs\">"]
    for key, label in (("interleaved", "Base and Exp interleaved"), ("base", "Base"), ("exp", "Exp")):
        out.append(f'<button class="tab" data-tab="{key}">{_e(label)}</button>')
    out.append("</div>")
    for key in ("interleaved", "base", "exp"):
        rows = data["top_clusters"][key]
        head = "".join(f"<th>{_e(label)}</th>" for _, label, _ in cols)
        body = []
        for r in rows:
            cells = "".join(f'<td data-col="{k}">{_e(f(r.get(k)) if f else r.get(k))}</td>' for k, _, f in cols)
            body.append(f'<tr class="cluster" data-side="{_e(r["side"])}" data-cluster="{_e(r["cluster_id"])}">'
                        f"{cells}</tr>")
        out.append(f'<div class="tabpanel" data-panel="{key}"><table class="clusters"><thead><tr>{head}</tr></thead>'
                   f'<tbody>{"".join(body)}</tbody></table></div>')
    out.append("</section>")
    return "".join(out)


def _slices_html(data: dict) -> str:
    if not data["slices"]:
        return ""
    out = ['<section id="slices"><h2>Slices</h2>']
    for name, rows in data["slices"].items():
        cols = [(c, c, None) for c in name.split(",")] + [
            ("items", "items", None), ("weight", "weight", _n), ("split_rate", "SplitRate", _pct),
            ("merge_rate", "MergeRate", _pct), ("jaccard_distance", "JaccardDistance", _pct),
            ("contribution", "contribution", _pct)]
        out.append(f"<h3>By {_e(name)}</h3>" + _table(rows, cols, "slice") +
                   f'<div class="chart" id="chart-slice:{_e(name)}"></div>')
    out.append("</section>")
    return "".join(out)


def _quality_html(data: dict) -> str:
    q = data.get("quality")
    if not q:
        return ('<section id="quality"><h2>Quality</h2><p>No judgements were given, so there are no quality '
                "estimates. Sample pairs with <code>abcde pairs</code>, judge them, and pass the sample directory "
                "with <code>--quality</code>.</p></section>")
    rows = []
    for k in QUALITY_METRICS:
        e = q[k]
        rows.append({"metric": METRIC_LABELS[k], "key": k, **e,
                     "interval": "n/a" if e["ci_low"] is None else f"[{e['ci_low']:.4f}, {e['ci_high']:.4f}]"})
    body = "".join(
        f'<tr data-quality="{r["key"]}"><td>{_e(r["metric"])}</td>'
        f'<td class="est" data-value="{_e(r["estimate"])}">{_e(_n(r["estimate"]))}</td>'
        f"<td>{_e(_n(r['std_err']))}</td><td>{_e(r['interval'])}</td><td>{r['n_judgements']:,}</td>"
        f"<td>{_e(r.get('note', ''))}</td></tr>" for r in rows)
    alloc = q.get("allocation")
    label = f"estimator: {q.get('estimator', 'paper')}" + (f", allocation: {alloc}" if alloc else "")
    out = ['<section id="quality"><h2>Quality</h2>',
           f'<p class="judged-by">Judged by <b>{_e(q["judged_by"])}</b> · {_e(label)} · '
           f"{q['judged_pairs']:,} pairs judged, {q['unsure_pairs']:,} unsure, {q['missing_pairs']:,} not judged"
           f"{'; rater disagreements ' + str(q['rater_disagreements']) if q.get('rater_disagreements') else ''}.</p>",
           "<table class=\"quality\"><thead><tr><th>metric</th><th>estimate</th><th>± s.e.</th><th>95% interval</th>"
           f"<th>judged draws</th><th></th></tr></thead><tbody>{body}</tbody></table>",
           f"<p>Exact: SplitRate {_pct(q['split_rate'])} = Good + Bad; MergeRate {_pct(q['merge_rate'])} = Good + "
           "Bad.</p>", '<div class="chart" id="chart-quality"></div>']
    for col, srows in (q.get("slices") or {}).items():
        flat = [{"value": r["value"], "weight": r.get("weight"), "draws": r.get("sampled_draws"),
                 "dp": r["delta_precision"]["estimate"], "se": r["delta_precision"]["std_err"],
                 "contribution": r["delta_precision_contribution"]["estimate"]} for r in srows]
        out.append(f"<h3>ΔPrecision by {_e(col)} (vantage items)</h3>" + _table(flat, [
            ("value", col, None), ("weight", "weight", _n), ("draws", "draws", None), ("dp", "ΔPrecision", _n),
            ("se", "± s.e.", _n), ("contribution", "contribution", _n)], "quality-slice") +
            f'<div class="chart" id="chart-quality_slice:{_e(col)}"></div>')
    out.append("</section>")
    return "".join(out)


def _exploration_html(data: dict) -> str:
    x = data.get("exploration")
    if not x or not x["groups"]:
        return ""
    out = ['<section id="exploration"><h2>Where the impact is (exploration sample)</h2>',
           f"<p>Estimates from an importance sample of {x['sample'].get('unique_items', 0):,} affected items "
           "drawn ∝ weight·JaccardDistance (paper, “Exploring the impact”).</p>"]
    for col, rows in x["groups"].items():
        out.append(f"<h3>Top {_e(col)} by estimated JaccardDistance contribution</h3>" + _table(rows, [
            (col, col, None), ("sampled_items", "sampled items", None), ("weight_share", "weight share", _pct),
            ("split_contribution", "split contribution", _pct), ("merge_contribution", "merge contribution", _pct),
            ("jaccard_contribution", "Jaccard contribution", _pct)], "explore"))
    out.append("</section>")
    return "".join(out)


_VEGA_CACHE: dict[str, str] = {}


def _vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one inline script, from vl-convert (no CDN)."""
    if "js" not in _VEGA_CACHE:
        import vl_convert as vlc
        from altair.utils._importers import vl_version_for_vl_convert

        js = vlc.javascript_bundle(vl_version=vl_version_for_vl_convert())
        _VEGA_CACHE["js"] = "<script>" + js.replace("</script", "<\\/script") + "</script>"
    return _VEGA_CACHE["js"]


# --------------------------------------------------------------------------- Markdown
def render_markdown(data: dict) -> str:
    h = data["headline"]
    n = data["names"]
    lines = [f"### ABCDE: {_md(n['exp'])} vs {_md(n['base'])}", ""]
    if data["identical"]:
        lines += [f"The clusterings are **identical** on the {h['items']:,} common items: nothing changed.", ""]
    lines += ["| SplitRate | MergeRate | JaccardDistance | affected items | items |", "|---:|---:|---:|---:|---:|",
              f"| {_pct(h['split_rate'])} | {_pct(h['merge_rate'])} | {_pct(h['jaccard_distance'])} | "
              f"{h['affected_items']:,} ({_pct(h['affected_weight_share'])} of weight) | {h['items']:,} |", ""]
    r = data["restriction"]
    if r["base_only_items"] or r["exp_only_items"]:
        lines += [f"Restricted to {r['common_items']:,} common items: {r['base_only_items']:,} only in "
                  f"{_md(n['base'])}, {r['exp_only_items']:,} only in {_md(n['exp'])} were excluded.", ""]
    top = data["top_clusters"]["interleaved"][:5]
    if top:
        lines += ["Most affected clusters:", "", "| side | cluster | size | SplitRate | MergeRate | contribution |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {c['side']} | {_md(c['cluster_id'])} | {c['size']:,} | {_pct(c['split_rate'])} | "
                  f"{_pct(c['merge_rate'])} | {_pct(c['contribution'])} |" for c in top]
        lines.append("")
    q = data.get("quality")
    if q:
        alloc = f", allocation {q['allocation']}" if q.get("allocation") else ""
        lines += [f"Quality (judged by {_md(q['judged_by'])}; estimator {q.get('estimator', 'paper')}{alloc}; "
                  f"{q['judged_pairs']:,} pairs judged, {q['unsure_pairs']:,} unsure):", "",
                  "| metric | estimate | 95% interval |", "|---|---:|---:|"]
        for k in QUALITY_METRICS:
            e = q[k]
            ci = "n/a" if e["ci_low"] is None else f"[{e['ci_low']:.4f}, {e['ci_high']:.4f}]"
            lines.append(f"| {METRIC_LABELS[k]} | {_n(e['estimate'])} | {ci} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _md(v) -> str:
    """Text for a Markdown table cell or line: one line, no table breaks, no HTML, no code spans."""
    return " ".join(str(v).split()).replace("|", "\\|").replace("`", "'").replace("<", "&lt;")


# --------------------------------------------------------------------------- page
_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;color:#222}
h1{margin:.2em 0 0}.sub{color:#666;margin-top:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:1.6em}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:8px;padding:10px 16px;min-width:140px}
.card .v{font-size:24px;font-weight:600}.card .l{color:#666}
table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f6f6f6}
tr.cluster{cursor:pointer}tr.cluster:hover{background:#f4f8ff}tr.open{background:#eef4ff}
.warn{background:#fff8e1;border:1px solid #f0d98c;padding:6px 12px;border-radius:6px}.ok{background:#eefbea;padding:8px 12px;border-radius:6px}
.tab{border:1px solid #ccc;background:#fafafa;padding:4px 10px;border-radius:6px 6px 0 0;cursor:pointer}.tab.active{background:#fff;border-bottom-color:#fff;font-weight:600}
.fig{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:0;margin:10px 0;position:relative}
.fig .col{padding:8px;min-height:60px}.fig h4{margin:0 0 4px}.fig .split{background:#fde8e8}.fig .stable{background:#ece6f6}.fig .merge{background:#e6effb}
.fig .bbox{grid-column:1/3;grid-row:1;border:3px solid #d62728;border-radius:40px;pointer-events:none}
.fig .ebox{grid-column:2/4;grid-row:1;border:3px solid #1f77b4;border-radius:40px;margin:4px 0;pointer-events:none}
.fig .bbox,.fig .ebox{position:relative;z-index:2}.fig .col{grid-row:1;margin:10px 6px}.fig .col.split{grid-column:1;margin-left:14px}.fig .col.stable{grid-column:2}.fig .col.merge{grid-column:3;margin-right:14px}.fig ul{margin:0;padding-left:16px;font-size:12px}.fig li{cursor:pointer}.fig li.pov{font-weight:700}
.fig .lab{font-size:12px;color:#555}.detail td{text-align:left;background:#fcfcff}
dt{font-weight:600;margin-top:6px}dd{margin-left:16px}code{background:#f3f3f3;padding:0 3px}
.chart{margin:10px 0}.judged-by{background:#f3f6ff;padding:6px 10px;border-radius:6px}
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{TITLE}}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:">
<style>{{STYLE}}</style>{{VEGA}}</head>
<body>
{{BODY}}
{{DATA}}
<script>{{SCRIPT}}</script>
</body></html>
"""

# All item text goes through textContent (never innerHTML), so hostile attributes stay inert.
_SCRIPT = r"""
(function(){
const data = JSON.parse(document.getElementById('report-data').textContent);
const specs = JSON.parse(document.getElementById('chart-specs').textContent);
function el(tag, attrs, ...kids){const e=document.createElement(tag);for(const [k,v] of Object.entries(attrs||{})){if(k==='class')e.className=v;else if(k.startsWith('on'))e.addEventListener(k.slice(2),v);else e.setAttribute(k,v);}for(const c of kids){if(c==null)continue;e.append(c instanceof Node?c:document.createTextNode(String(c)));}return e;}
const pct = x => x==null ? 'n/a' : (100*x).toFixed(2)+'%';
const num = x => x==null ? 'n/a' : (Math.abs(x)>=1e6 ? Math.round(x).toLocaleString() : (+x.toFixed(4)).toLocaleString());
// Charts (Vega-Lite via the inlined vega-embed).
window.__charts = 0;
for (const [id, spec] of Object.entries(specs)) {
  const target = document.getElementById('chart-' + id);
  if (target && window.vegaEmbed) vegaEmbed(target, spec, {actions:false, renderer:'svg'}).then(()=>{window.__charts++;}).catch(e=>{target.textContent='chart failed: '+e;});
}
// Tabs.
const tabs = document.querySelectorAll('.tab');
function showTab(k){tabs.forEach(t=>t.classList.toggle('active', t.dataset.tab===k));document.querySelectorAll('.tabpanel').forEach(p=>p.style.display = p.dataset.panel===k ? '' : 'none');}
if (tabs.length) showTab('interleaved');
tabs.forEach(t=>t.addEventListener('click', ()=>showTab(t.dataset.tab)));
// Cluster neighbourhoods: split / stable / merge from one member's point of view (paper, Figure 1).
function memberLabel(m){const a = Object.entries(m.attributes||{}).filter(([k,v])=>v!=null&&v!=='').map(([k,v])=>v).join(' · ');return String(m.item_id) + (a ? ' — ' + a : '');}
function figure(side, cid, nb, pov){
  const box = el('div', {class:'figwrap'});
  const own = nb.fragments.filter(f=>f.own_frag);
  if (!pov) pov = own[0];
  const B = pov.base_cluster, E = pov.exp_cluster;
  const inB = f => String(f.base_cluster)===String(B), inE = f => String(f.exp_cluster)===String(E);
  const groups = {split: nb.fragments.filter(f=>inB(f)&&!inE(f)), stable: nb.fragments.filter(f=>inB(f)&&inE(f)), merge: nb.fragments.filter(f=>!inB(f)&&inE(f))};
  const exact = {stable: [pov.n, pov.w], split: [pov.nb-pov.n, pov.wb-pov.w], merge: [pov.ne-pov.n, pov.we-pov.w]};
  const fig = el('div', {class:'fig'});
  fig.append(el('div', {class:'bbox'}), el('div', {class:'ebox'}));
  const povItem = nb.members.find(m=>String(m.base_cluster)===String(B)&&String(m.exp_cluster)===String(E));
  for (const g of ['split','stable','merge']) {
    const col = el('div', {class:'col '+g, 'data-group':g});
    col.append(el('h4', {}, g[0].toUpperCase()+g.slice(1)), el('div', {class:'lab', 'data-count':exact[g][0]}, exact[g][0].toLocaleString()+' items, weight '+num(exact[g][1])));
    const ul = el('ul');
    let shown = 0;
    for (const f of groups[g]) for (const m of nb.members) {
      if (String(m.base_cluster)!==String(f.base_cluster) || String(m.exp_cluster)!==String(f.exp_cluster)) continue;
      shown++;
      const li = el('li', {title:'weight '+num(m.weight)+' · Base '+m.base_cluster+' · Exp '+m.exp_cluster}, memberLabel(m));
      if (povItem && m.item_id===povItem.item_id) li.classList.add('pov');
      if (f.own_frag) li.addEventListener('click', ()=>{box.replaceWith(figure(side, cid, nb, f));});
      ul.append(li);
    }
    col.append(ul);
    if (shown < exact[g][0]) col.append(el('div', {class:'lab more'}, '… and '+(exact[g][0]-shown).toLocaleString()+' more not listed'));
    fig.append(col);
  }
  box.append(el('p', {class:'lab'}, 'Point of view: item ', el('b', {}, povItem ? String(povItem.item_id) : '?'), ' — Base(i) = cluster '+B+' (red), Exp(i) = cluster '+E+' (blue).'));
  box.append(fig);
  if (nb.fragments_total > nb.fragments_shown) box.append(el('p', {class:'lab'}, 'Showing '+nb.fragments_shown+' of '+nb.fragments_total+' fragments around this cluster.'));
  return box;
}
document.querySelectorAll('tr.cluster').forEach(tr=>tr.addEventListener('click', ()=>{
  const next = tr.nextElementSibling;
  if (next && next.classList.contains('detail')) {next.remove(); tr.classList.remove('open'); return;}
  const nb = ((data.neighbourhoods||{})[tr.dataset.side]||{})[tr.dataset.cluster];
  const td = el('td', {colspan: tr.children.length});
  if (!nb || !nb.fragments.length) td.append('No members recorded.'); else td.append(figure(tr.dataset.side, tr.dataset.cluster, nb, null));
  tr.after(el('tr', {class:'detail'}, td)); tr.classList.add('open');
}));
window.__reportReady = true;
})();
"""
