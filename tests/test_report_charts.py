"""The report's charts: Vega-Lite specs written as plain dicts (no chart library at run time).

Each spec is checked two ways that share no code with :mod:`abcde.report.charts`:

- against the Vega-Lite JSON schema (shipped with Altair, a test dependency), so the page's
  vega-embed can draw it;
- against the same chart made with Altair's API (the way the report made its charts before),
  so the specs say exactly what they said then.
"""

from __future__ import annotations

import copy
import json

import pytest

import abcde
from abcde.core.names import METRIC_LABELS, QUALITY_METRICS
from abcde.examples import example_paths
from abcde.quality import estimate_quality
from abcde.report import build_report
from abcde.report.charts import SCHEMA, VEGA_LITE_VERSION, WIDTH, chart_specs
from abcde.util.display import NULL_TEXT

alt = pytest.importorskip("altair")


# --------------------------------------------------------------------------- the reference: Altair
def altair_specs(data: dict) -> dict[str, dict]:
    """The report's charts made with Altair, as abcde made them up to 0.x (the reference)."""
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
        ).properties(width="container", height=220,
                     title=f"Distribution of {L['jaccard_distance']} over the affected weight")
        specs["jaccard_histogram"] = _configured(specs["jaccard_histogram"])
    if c.get("cluster_contributions"):
        rows = [{"cluster": r["cluster"], "part": part, "contribution": r[part]}
                for r in c["cluster_contributions"] for part in ("split", "merge")]
        specs["cluster_contributions"] = _stacked(
            rows, "cluster",
            alt.Title(f"Contributions to {L['split_rate']}(T) and {L['merge_rate']}(T)",
                      subtitle=f"The {len(c['cluster_contributions'])} most affected clusters (Base and Exp ranked "
                               "together)"))
    for name, rows in data["slices"].items():
        W = data["headline"]["total_weight"] or 1.0
        top = sorted(rows, key=lambda r: -(r.get("contribution") or 0))[:15]
        cols = name.split(",")
        vals = [{"slice": ", ".join(NULL_TEXT if r.get(col) is None else str(r.get(col)) for col in cols), "part": part,
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
            specs["quality"] = _errorbars(pts, "metric", "Quality estimates with 95% intervals", percent=True)
        for col, rows in (q.get("slices") or {}).items():
            pts = [{"slice": NULL_TEXT if r["value"] is None else str(r["value"]), "estimate": r["delta_precision"]["estimate"],
                    "low": r["delta_precision"]["ci_low"], "high": r["delta_precision"]["ci_high"]}
                   for r in rows if r["delta_precision"]["estimate"] is not None]
            if pts:
                specs[f"quality_slice:{col}"] = _errorbars(pts, "slice",
                                                           f"{L['delta_precision']} by {col} (95% intervals)")
    return specs


def _stacked(rows, key, title):
    order = []
    for r in rows:
        if r[key] not in order:
            order.append(r[key])
    return _configured(alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        y=alt.Y(f"{key}:N", sort=order, title=None),
        x=alt.X("sum(contribution):Q", title="contribution", axis=alt.Axis(format=".2%")),
        color=alt.Color("part:N", title=None, scale=alt.Scale(domain=["split", "merge"],
                                                               range=["#d62728", "#1f77b4"])),
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("part:N"), alt.Tooltip("contribution:Q", format=".4%")],
    ).properties(width="container", title=title))


def _errorbars(rows, key, title, percent=False):
    """``percent``: the quality chart, whose axis and tooltips are in percent like the table beside it."""
    base = alt.Chart(alt.Data(values=rows))
    order = [r[key] for r in rows]
    fmt = ".3%" if percent else ".4f"
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y(f"{key}:N", sort=order, title=None),
        x=alt.X("low:Q", title="estimate (95% interval)", scale=alt.Scale(zero=True, nice=True, padding=14),
                **({"axis": alt.Axis(format=".2~%")} if percent else {})),
        x2="high:Q")
    pts = base.mark_point(filled=True, size=60, color="black").encode(
        y=alt.Y(f"{key}:N", sort=order), x="estimate:Q",
        tooltip=[alt.Tooltip(f"{key}:N"), alt.Tooltip("estimate:Q", format=fmt),
                 alt.Tooltip("low:Q", format=fmt), alt.Tooltip("high:Q", format=fmt)])
    zero = alt.Chart(alt.Data(values=[{"x": 0}])).mark_rule(strokeDash=[4, 4], color="gray").encode(x="x:Q")
    return _configured((bars + pts + zero).properties(width="container", title=title))


def _configured(chart) -> dict:
    """Fonts of at least 12 px on axes and legends (issue 27)."""
    return (chart.configure_axis(labelFontSize=12, titleFontSize=13).configure_axisQuantitative(tickCount=8)
            .configure_legend(labelFontSize=12, titleFontSize=13).configure_title(fontSize=15, subtitleFontSize=13).to_dict())


# --------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def demo_data(demo_run):
    """A report's data with every kind of chart: the bundled example's impact sliced two ways
    (one of them by two columns) and its oracle-judged quality sliced by source."""
    out, _ = demo_run
    p = example_paths("febrl3")
    res = abcde.impact(p["base"], p["exp"], items=p["items"], slice_by=["source", "state", ["source", "state"]])
    q = estimate_quality(out / "quality", slice_by=["source"])
    return json.loads(json.dumps(build_report(res, quality=q, judged_by="oracle").to_dict(), default=str))


def variants(data: dict) -> dict[str, dict]:
    """The demo's data, and edge cases of it: no quality; some quality estimates undefined; a
    slicing whose contributions are all 0 (no chart); no charts at all (identical clusterings)."""
    out = {"demo": data}
    d = copy.deepcopy(data)
    d.pop("quality")
    out["no quality"] = d
    d = copy.deepcopy(data)
    for k in QUALITY_METRICS[:2]:
        d["quality"][k]["estimate"] = None
    d["quality"]["slices"]["source"][0]["delta_precision"]["estimate"] = None
    out["undefined estimates"] = d
    d = copy.deepcopy(data)
    for r in d["slices"]["source"]:
        r["split_rate"] = r["merge_rate"] = 0.0
    out["a slicing without contributions"] = d
    d = copy.deepcopy(data)
    d["charts"], d["slices"] = {}, {}
    d.pop("quality")
    out["nothing to draw"] = d
    return out


# --------------------------------------------------------------------------- tests
def test_the_demo_draws_every_kind_of_chart(demo_data):
    kinds = {k.split(":")[0] for k in chart_specs(demo_data)}
    assert kinds == {"jaccard_histogram", "cluster_contributions", "slice", "quality", "quality_slice"}
    assert "slice:source,state" in chart_specs(demo_data)


def test_specs_equal_altairs(demo_data):
    for name, data in variants(demo_data).items():
        ours = json.loads(json.dumps(chart_specs(data)))
        theirs = altair_specs(data)
        assert ours.keys() == theirs.keys(), name
        for k in ours:
            # The schema's URL names Altair's Vega-Lite version (it may be newer than ours).
            assert ours[k].pop("$schema") == SCHEMA
            theirs[k].pop("$schema")
            assert ours[k] == theirs[k], f"{name}: {k}"
    assert variants(demo_data)["nothing to draw"] and chart_specs(variants(demo_data)["nothing to draw"]) == {}
    assert "slice:source" not in chart_specs(variants(demo_data)["a slicing without contributions"])


def test_specs_are_valid_vega_lite(demo_data):
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema.core import load_schema

    schema = load_schema()
    assert SCHEMA.endswith(f"/v{VEGA_LITE_VERSION}.json")
    for name, data in variants(demo_data).items():
        for k, spec in chart_specs(data).items():
            assert spec["width"] == WIDTH == "container"
            validate_jsonschema(json.loads(json.dumps(spec)), schema)  # raises on an invalid spec
    bad = chart_specs(demo_data)["quality"]
    bad["layer"][0]["mark"]["type"] = "errorbars"  # not a Vega-Lite mark: the check can fail
    with pytest.raises(Exception):
        validate_jsonschema(bad, schema)


def test_a_report_imports_no_chart_library(tmp_path):
    """The report is written without Altair (or pandas) in the process."""
    import subprocess
    import sys

    p = example_paths("febrl3")
    code = ("import sys; from abcde.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "bad = sorted(m for m in ('altair', 'pandas', 'narwhals') if m in sys.modules)\n"
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code, "report", "--base", p["base"], "--exp", p["exp"],
                        "--items", p["items"], "--out", tmp_path / "r.html", "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "r.html").read_text().count("vega-lite") > 0


def test_the_quality_chart_is_in_percent_like_its_table(demo_data):
    """The quality table shows the rates in percent (issue 38): the chart beside it too, its axis and
    tooltips; ΔPrecision by slice stays in fractions, like its table."""
    specs = chart_specs(demo_data)
    x = specs["quality"]["layer"][0]["encoding"]["x"]
    assert x["axis"]["format"].endswith("%")
    assert all(t["format"].endswith("%") for t in specs["quality"]["layer"][1]["encoding"]["tooltip"] if "format" in t)
    sliced = [k for k in specs if k.startswith("quality_slice:")]
    assert sliced and all("axis" not in specs[k]["layer"][0]["encoding"]["x"] for k in sliced)
