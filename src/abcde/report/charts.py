"""The report's charts: Vega-Lite specs, from the report's data.

:func:`chart_specs` maps each chart's id to its spec; the page draws the spec with id ``k``
into its element ``chart-k`` (see ``templates/report.html``). Charts:

- ``jaccard_histogram``: the distribution of JaccardDistance over the affected weight;
- ``cluster_contributions``: the split and merge contributions of the most affected clusters;
- ``slice:<name>``: the same by slice (top 15 slices by contribution);
- ``quality``: the quality estimates with 95% intervals;
- ``quality_slice:<column>``: ΔPrecision per value of a vantage-item attribute.

The specs are Vega-Lite JSON written as plain dicts, the grammar's own format: five small
charts do not need a chart library, and Altair's import (with pandas' and narwhals') cost a
report a third of a second of start-up. ``tests/test_report_charts.py`` checks every spec
against the Vega-Lite schema of :data:`VEGA_LITE_VERSION` and against the same charts made
with Altair.
"""

from __future__ import annotations

from abcde.core.names import METRIC_LABELS, QUALITY_METRICS
from abcde.util.display import NULL_TEXT

#: The Vega-Lite version the specs are written for; the report inlines vl-convert's bundle
#: of the same minor version (:func:`abcde.report.render._vega_bundle`).
VEGA_LITE_VERSION = "6.4.1"
SCHEMA = f"https://vega.github.io/schema/vega-lite/v{VEGA_LITE_VERSION}.json"
#: Every chart takes its container's width (the page's column; vega redraws it when the window
#: resizes), so a chart is as wide as the tables beside it at any window size.
WIDTH = "container"
#: Fonts a person reads without leaning in: axis labels and titles, legends, chart titles (px).
#: At most about 8 ticks on a value axis: a wide chart would otherwise get one every 40 px, and label
#: only every fourth of them (ticks such as -0.042, -0.034).
FONTS = {"axis": {"labelFontSize": 12, "titleFontSize": 13}, "axisQuantitative": {"tickCount": 8},
         "legend": {"labelFontSize": 12, "titleFontSize": 13},
         "title": {"fontSize": 15, "subtitleFontSize": 13}}
SPLIT_MERGE_COLOURS = ("#d62728", "#1f77b4")  # red: split (Base's side), blue: merge (Exp's side)


def chart_specs(data: dict) -> dict[str, dict]:
    """The Vega-Lite specs for a report's data (:meth:`~abcde.report.Report.to_dict`)."""
    L = METRIC_LABELS
    specs: dict[str, dict] = {}
    c = data["charts"]
    if c.get("jaccard_histogram"):
        specs["jaccard_histogram"] = _top_level(
            {"values": c["jaccard_histogram"]},
            title=f"Distribution of {L['jaccard_distance']} over the affected weight", height=220,
            mark={"type": "bar"},
            encoding={
                "x": {"field": "from", "type": "quantitative", "bin": {"binned": True, "step": 0.05},
                      "title": f"{L['jaccard_distance']}(i)", "scale": {"domain": [0, 1]}},
                "x2": {"field": "to"},
                "y": {"field": "weight_share", "type": "quantitative", "title": "share of affected weight",
                      "axis": {"format": "%"}},
                "tooltip": [_q("from", title="from"), _q("to", title="to"), _q("items"),
                            _q("weight_share", format=".1%")],
            })
    if c.get("cluster_contributions"):
        rows = [{"cluster": r["cluster"], "part": part, "contribution": r[part]}
                for r in c["cluster_contributions"] for part in ("split", "merge")]
        n = len(c["cluster_contributions"])
        specs["cluster_contributions"] = _stacked(
            rows, "cluster",
            {"text": f"Contributions to {L['split_rate']}(T) and {L['merge_rate']}(T)",
             "subtitle": most_affected(n)[0].upper() + most_affected(n)[1:]})
    for name, rows in data["slices"].items():
        W = data["headline"]["total_weight"] or 1.0
        top = sorted(rows, key=lambda r: -(r.get("contribution") or 0))[:15]
        cols = name.split(",")
        vals = [{"slice": ", ".join(_text(r.get(col)) for col in cols), "part": part,
                 "contribution": (r["weight"] or 0) * (r.get(f"{part}_rate") or 0) / W}
                for r in top for part in ("split", "merge")]
        if any(v["contribution"] for v in vals):
            specs[f"slice:{name}"] = _stacked(vals, "slice", f"Split and merge contributions by {name}")
    q = data.get("quality")
    if q:
        pts = [{"metric": L[k], "estimate": q[k]["estimate"], "low": q[k]["ci_low"], "high": q[k]["ci_high"]}
               for k in QUALITY_METRICS if q[k]["estimate"] is not None]
        lift = q.get("recall_lift") or {}
        if lift.get("estimate") is not None and lift.get("ci_low") is not None:  # the verdict's other side
            pts.append({"metric": L["recall_lift"], "estimate": lift["estimate"], "low": lift["ci_low"],
                        "high": lift["ci_high"]})
        if pts:
            # in percent, as the quality table beside it shows the rates
            specs["quality"] = _errorbars(pts, "metric", "Quality estimates with 95% intervals", percent=True)
        for col, rows in (q.get("slices") or {}).items():
            pts = [{"slice": _text(r["value"]), "estimate": r["delta_precision"]["estimate"],
                    "low": r["delta_precision"]["ci_low"], "high": r["delta_precision"]["ci_high"]}
                   for r in rows if r["delta_precision"]["estimate"] is not None]
            if pts:
                specs[f"quality_slice:{col}"] = _errorbars(
                    pts, "slice", f"{L['delta_precision']} by {col} (95% intervals)")
    return specs


def most_affected(n: int) -> str:
    """What the report's ranking of clusters (``top_clusters["interleaved"]``) holds, in words: the
    ``n`` clusters of Base and Exp with the largest contribution, both sides in one ranking — as
    ``abcde impact --top n`` lists them.

    >>> most_affected(3), most_affected(1)
    ('the 3 most affected clusters (Base and Exp ranked together)', 'the most affected cluster (Base and Exp ranked together)')
    """
    what = "the most affected cluster" if n == 1 else f"the {n:,} most affected clusters"
    return f"{what} (Base and Exp ranked together)"


def _text(v) -> str:
    """An attribute value as a chart shows it: as the tables do, a missing value as ``(null)``."""
    return NULL_TEXT if v is None else str(v)


def _top_level(data: dict, *, title: str | dict, height: int | None = None, **spec) -> dict:
    """A whole chart: ``spec`` (a mark and its encoding, or layers) with its data, size and title."""
    out = {"$schema": SCHEMA, "config": {"view": {"continuousWidth": 300, "continuousHeight": 300}, **FONTS},
           "data": data, **spec, "title": title, "width": WIDTH}
    if height is not None:
        out["height"] = height
    return out


def _q(field: str, **kw) -> dict:
    """A quantitative field (an axis or a tooltip)."""
    return {"field": field, "type": "quantitative", **kw}


def _n(field: str, **kw) -> dict:
    """A nominal field."""
    return {"field": field, "type": "nominal", **kw}


def _stacked(rows: list[dict], key: str, title: str | dict) -> dict:
    """Horizontal bars of ``contribution`` per ``key``, split (red) stacked with merge (blue),
    in the rows' order."""
    order = list(dict.fromkeys(r[key] for r in rows))
    return _top_level(
        {"values": rows}, title=title, mark={"type": "bar"},
        encoding={
            "y": _n(key, sort=order, title=None),
            "x": _q("contribution", aggregate="sum", title="contribution", axis={"format": ".2%"}),
            "color": _n("part", title=None, scale={"domain": ["split", "merge"],
                                                   "range": list(SPLIT_MERGE_COLOURS)}),
            "tooltip": [_n(key), _n("part"), _q("contribution", format=".4%")],
        })


#: The axis format of a chart in percent: at most two decimals, trailing zeros dropped (2%, 0.5%, 0.25%).
PERCENT_AXIS = ".2~%"


def _errorbars(rows: list[dict], key: str, title: str, *, percent: bool = False) -> dict:
    """One point (``estimate``) and interval (``low``..``high``) per ``key``, with a dashed line at 0;
    ``percent``: the axis and the tooltips in percent."""
    order = [r[key] for r in rows]
    fmt = ".3%" if percent else ".4f"
    bars = {"mark": {"type": "rule", "strokeWidth": 2}, "encoding": {
        "y": _n(key, sort=order, title=None),
        # padding: a point or interval end at the domain's edge is not drawn on the axis line
        "x": _q("low", title="estimate (95% interval)", scale={"zero": True, "nice": True, "padding": 14},
                **({"axis": {"format": PERCENT_AXIS}} if percent else {})),
        "x2": {"field": "high"}}}
    pts = {"mark": {"type": "point", "filled": True, "size": 60, "color": "black"}, "encoding": {
        "y": _n(key, sort=order), "x": _q("estimate"),
        "tooltip": [_n(key), _q("estimate", format=fmt), _q("low", format=fmt), _q("high", format=fmt)]}}
    zero = {"data": {"values": [{"x": 0}]}, "mark": {"type": "rule", "strokeDash": [4, 4], "color": "gray"},
            "encoding": {"x": _q("x")}}
    return _top_level({"values": rows}, title=title, layer=[bars, pts, zero])
