"""The report's charts: Vega-Lite specs made with Altair, from the report's data.

:func:`chart_specs` maps each chart's id to its spec; the page draws the spec with id ``k``
into its element ``chart-k`` (see ``templates/report.html``). Charts:

- ``jaccard_histogram``: the distribution of JaccardDistance over the affected weight;
- ``cluster_contributions``: the split and merge contributions of the most affected clusters;
- ``slice:<name>``: the same by slice (top 15 slices by contribution);
- ``quality``: the quality estimates with 95% intervals;
- ``quality_slice:<column>``: ΔPrecision per value of a vantage-item attribute.
"""

from __future__ import annotations

from abcde.core.names import METRIC_LABELS, QUALITY_METRICS

WIDTH = 520
SPLIT_MERGE_COLOURS = ("#d62728", "#1f77b4")  # red: split (Base's side), blue: merge (Exp's side)


def chart_specs(data: dict) -> dict[str, dict]:
    """The Vega-Lite specs for a report's data (:meth:`~abcde.report.Report.to_dict`)."""
    import altair as alt  # lazy: heavy to import, and only needed when a page is rendered

    L = METRIC_LABELS
    specs: dict[str, dict] = {}
    c = data["charts"]
    if c.get("jaccard_histogram"):
        specs["jaccard_histogram"] = alt.Chart(alt.Data(values=c["jaccard_histogram"])).mark_bar().encode(
            x=alt.X("from:Q", bin=alt.Bin(binned=True, step=0.05), title=f"{L['jaccard_distance']}(i)",
                    scale=alt.Scale(domain=[0, 1])),
            x2="to:Q",
            y=alt.Y("weight_share:Q", title="share of affected weight", axis=alt.Axis(format="%")),
            tooltip=[alt.Tooltip("from:Q", title="from"), alt.Tooltip("to:Q", title="to"),
                     alt.Tooltip("items:Q"), alt.Tooltip("weight_share:Q", format=".1%")],
        ).properties(width=WIDTH, height=220,
                     title=f"Distribution of {L['jaccard_distance']} over the affected weight").to_dict()
    if c.get("cluster_contributions"):
        rows = [{"cluster": r["cluster"], "part": part, "contribution": r[part]}
                for r in c["cluster_contributions"] for part in ("split", "merge")]
        specs["cluster_contributions"] = _stacked(
            alt, rows, "cluster",
            f"Contributions of the most affected clusters to {L['split_rate']}(T) and {L['merge_rate']}(T)")
    for name, rows in data["slices"].items():
        W = data["headline"]["total_weight"] or 1.0
        top = sorted(rows, key=lambda r: -(r.get("contribution") or 0))[:15]
        cols = name.split(",")
        vals = [{"slice": ", ".join(str(r.get(col)) for col in cols), "part": part,
                 "contribution": (r["weight"] or 0) * (r.get(f"{part}_rate") or 0) / W}
                for r in top for part in ("split", "merge")]
        if any(v["contribution"] for v in vals):
            specs[f"slice:{name}"] = _stacked(alt, vals, "slice", f"Split and merge contributions by {name}")
    q = data.get("quality")
    if q:
        pts = [{"metric": L[k], "estimate": q[k]["estimate"], "low": q[k]["ci_low"], "high": q[k]["ci_high"]}
               for k in QUALITY_METRICS if q[k]["estimate"] is not None]
        if pts:
            specs["quality"] = _errorbars(alt, pts, "metric", "Quality estimates with 95% intervals")
        for col, rows in (q.get("slices") or {}).items():
            pts = [{"slice": str(r["value"]), "estimate": r["delta_precision"]["estimate"],
                    "low": r["delta_precision"]["ci_low"], "high": r["delta_precision"]["ci_high"]}
                   for r in rows if r["delta_precision"]["estimate"] is not None]
            if pts:
                specs[f"quality_slice:{col}"] = _errorbars(
                    alt, pts, "slice", f"{L['delta_precision']} by {col} (95% intervals)")
    return specs


def _stacked(alt, rows: list[dict], key: str, title: str) -> dict:
    """Horizontal bars of ``contribution`` per ``key``, split (red) stacked with merge (blue),
    in the rows' order."""
    order = []
    for r in rows:
        if r[key] not in order:
            order.append(r[key])
    return alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        y=alt.Y(f"{key}:N", sort=order, title=None),
        x=alt.X("sum(contribution):Q", title="contribution", axis=alt.Axis(format=".2%")),
        color=alt.Color("part:N", title=None, scale=alt.Scale(domain=["split", "merge"],
                                                               range=list(SPLIT_MERGE_COLOURS))),
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("part:N"), alt.Tooltip("contribution:Q", format=".4%")],
    ).properties(width=WIDTH, title=title).to_dict()


def _errorbars(alt, rows: list[dict], key: str, title: str) -> dict:
    """One point (``estimate``) and interval (``low``..``high``) per ``key``, with a dashed line at 0."""
    base = alt.Chart(alt.Data(values=rows))
    order = [r[key] for r in rows]
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y(f"{key}:N", sort=order, title=None),
        # padding: a point or interval end at the domain's edge is not drawn on the axis line
        x=alt.X("low:Q", title="estimate (95% interval)", scale=alt.Scale(zero=True, nice=True, padding=14)),
        x2="high:Q")
    pts = base.mark_point(filled=True, size=60, color="black").encode(
        y=alt.Y(f"{key}:N", sort=order), x="estimate:Q",
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("estimate:Q", format=".4f"),
                 alt.Tooltip("low:Q", format=".4f"), alt.Tooltip("high:Q", format=".4f")])
    zero = alt.Chart(alt.Data(values=[{"x": 0}])).mark_rule(strokeDash=[4, 4], color="gray").encode(x="x:Q")
    return (bars + pts + zero).properties(width=WIDTH, title=title).to_dict()
