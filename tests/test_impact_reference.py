"""Compare abcde.impact / abcde.pointwise with the slow reference (tests/reference.py).

Hypothesis-generated inputs are plain dicts; they are converted to pandas
DataFrames before calling the library.  Float results are matched on ids, never
on row order, and compared with pytest.approx(abs=1e-9, rel=1e-9).
"""

from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import reference as ref
from strategies import (
    SIZE_VALUES,
    attribute_column,
    cluster_labels,
    clusterings,
    partial_clusterings,
    third_clustering,
)

import abcde

# Each library call runs several DuckDB queries (~0.25 s each call), so a
# failing example can take many minutes to shrink. Shrinking is therefore off
# unless ABCDE_TEST_SHRINK=1 is set (then failures are minimal but slow to get).
# ABCDE_TEST_EXAMPLES overrides max_examples (default 25) for quick/long runs.
_PHASES = tuple(Phase) if os.environ.get("ABCDE_TEST_SHRINK") else tuple(
    p for p in Phase if p != Phase.shrink
)
SETTINGS = settings(
    max_examples=int(os.environ.get("ABCDE_TEST_EXAMPLES", "25")),
    deadline=None,
    phases=_PHASES,
)
# The paper's three impact metrics and JaccardDistance's parts (issue 29).
METRICS = ("split_rate", "merge_rate", "jaccard_distance", "split_distance", "merge_distance")
CLUSTER_COLS = ("size", "weight", *METRICS, "contribution")
SLICE_COLS = ("items", "weight", *METRICS, "contribution")


def close(x):
    return pytest.approx(x, abs=1e-9, rel=1e-9)


# ---------------------------------------------------------------------------
# Conversion helpers
# ---------------------------------------------------------------------------


def clustering_df(clustering: dict, order=None) -> pd.DataFrame:
    keys = list(clustering) if order is None else [k for k in order if k in clustering]
    return pd.DataFrame({"item_id": keys, "cluster_id": [clustering[k] for k in keys]})


def items_df(weights: dict | None, ids=None, with_weight=True, **attributes) -> pd.DataFrame:
    ids = list(weights) if ids is None else list(ids)
    data = {"item_id": ids}
    if with_weight:
        data["weight"] = [float(weights[i]) for i in ids]
    for name, col in attributes.items():
        data[name] = [col[i] for i in ids]
    return pd.DataFrame(data)


def by_key(table, key) -> dict:
    """pyarrow.Table -> {key value: row dict}, asserting keys are unique."""
    rows = table.to_pylist()
    out = {}
    for r in rows:
        k = r[key] if isinstance(key, str) else tuple(r[c] for c in key)
        assert k not in out, f"duplicate key {k!r} in result table"
        out[k] = r
    return out


def assert_rows_match(got: dict, expected: dict, cols, what: str):
    assert set(got) == set(expected), f"{what}: ids differ: {set(got) ^ set(expected)}"
    for k, exp_row in expected.items():
        for c in cols:
            assert got[k][c] == close(exp_row[c]), f"{what} {k!r} column {c}"


def assert_overall(res, o: dict):
    assert res.items == o["items"]
    assert res.total_weight == close(o["total_weight"])
    for m in METRICS:
        assert getattr(res, m) == close(o[m]), m
    assert res.affected_items == o["affected_items"]
    assert res.unaffected_items == o["unaffected_items"]
    assert res.affected_weight == close(o["affected_weight"])
    assert res.unaffected_weight == close(o["unaffected_weight"])


def assert_per_item(res, base, exp, w, table=None):
    got = by_key(res.per_item() if table is None else table, "item_id")
    exp_rows = ref.per_item(base, exp, w)
    assert_rows_match(got, exp_rows, ("weight",) + METRICS, "per_item")
    for i, r in exp_rows.items():
        assert got[i]["base_cluster"] == r["base_cluster"], i
        assert got[i]["exp_cluster"] == r["exp_cluster"], i


def assert_per_cluster(res, base, exp, w, tables=None):
    for side in ("base", "exp"):
        got = by_key(res.per_cluster(side) if tables is None else tables[side], "cluster_id")
        expected = ref.per_cluster(base, exp, w, side)
        assert_rows_match(got, expected, CLUSTER_COLS, f"per_cluster({side})")


def assert_top(res, base, exp, w, top):
    """top_clusters vs reference.

    At most `top` rows, sorted by contribution descending; clusters whose
    contribution is 0 (unaffected) are never listed as "most affected", so the
    length is exactly min(top, #clusters with contribution > 0).
    """
    rows = {
        side: [dict(r, side=side) for r in ref.per_cluster(base, exp, w, side).values()]
        for side in ("base", "exp")
    }
    rows["interleaved"] = rows["base"] + rows["exp"]
    lookup = {(r["side"], r["cluster_id"]): r for r in rows["interleaved"]}
    assert set(res.top_clusters) >= {"base", "exp", "interleaved"}
    for key, all_rows in rows.items():
        got = res.top_clusters[key]
        want = sorted((r["contribution"] for r in all_rows), reverse=True)[:top]
        n_pos = sum(1 for x in want if x > 0)
        assert len(got) == n_pos, (key, len(got), want)
        got_contrib = [r["contribution"] for r in got]
        # sorted by contribution descending ...
        for a, b in zip(got_contrib, got_contrib[1:]):
            assert a >= b - 1e-12, (key, got_contrib)
        # ... and they really are the top ones (ties may pick different ids)
        assert got_contrib == [close(x) for x in want[: len(got)]], key
        for r in got:
            if key != "interleaved":
                assert r["side"] == key
            exp_row = lookup[(r["side"], r["cluster_id"])]
            for c in CLUSTER_COLS:
                assert r[c] == close(exp_row[c]), (key, r["cluster_id"], c)


def assert_rates_in_unit_interval(res, slice_names=(), item_table=None, cluster_tables=None):
    """All rates in [0, 1]; contributions of base/exp clusters and of each
    slicing are non-negative and sum to JaccardDistance(T)."""

    def in01(x):
        return -1e-12 <= x <= 1 + 1e-12

    for m in METRICS:
        assert in01(getattr(res, m)), m
    rows = (res.per_item() if item_table is None else item_table).to_pylist()
    per_side = {
        side: (res.per_cluster(side) if cluster_tables is None else cluster_tables[side]).to_pylist()
        for side in ("base", "exp")
    }
    groups = list(per_side.values()) + [res.slices[n] for n in slice_names]
    for r in rows + [r for g in groups for r in g]:
        for m in METRICS:
            assert in01(r[m]), (r, m)
    for g in groups:
        assert all(r["contribution"] >= 0 for r in g)
        assert math.fsum(r["contribution"] for r in g) == close(res.jaccard_distance)


def slice_attr(attrs: dict, cols) -> dict:
    """item -> value (single column) or tuple of values (several columns)."""
    if isinstance(cols, str):
        return attrs[cols]
    items = next(iter(attrs.values())).keys()
    return {i: tuple(attrs[c][i] for c in cols) for i in items}


def slice_rows(res_slices, name, cols) -> dict:
    assert name in res_slices, f"missing slicing {name!r}; have {list(res_slices)}"
    out = {}
    for r in res_slices[name]:
        k = r[cols] if isinstance(cols, str) else tuple(r[c] for c in cols)
        assert k not in out, f"duplicate slice {k!r}"
        out[k] = r
    return out


def slice_name(cols) -> str:
    return cols if isinstance(cols, str) else ",".join(cols)


def run_impact(base, exp, w, *, items_mode="weights", attrs=None, slice_by=(), top=10,
               order=None):
    """items_mode: "weights" (items table with weights), "no_weight_col", "none"."""
    attrs = attrs or {}
    if items_mode == "none":
        assert not attrs and all(v == 1.0 for v in w.values())
        items = None
    else:
        items = items_df(w, ids=order, with_weight=items_mode == "weights", **attrs)
    return abcde.impact(
        clustering_df(base, order), clustering_df(exp, order), items=items,
        slice_by=slice_by, top=top,
    )


def unit(w):
    return all(v == 1.0 for v in w.values())


@st.composite
def items_mode_for(draw, w):
    if unit(w):
        return draw(st.sampled_from(["none", "no_weight_col", "weights"]))
    return "weights"


# ---------------------------------------------------------------------------
# Library vs reference
# ---------------------------------------------------------------------------


@SETTINGS
@given(clusterings(), st.data())
def test_impact_matches_reference(data, d):
    base, exp, w = data
    mode = d.draw(items_mode_for(w), label="items_mode")
    attrs, slicings = {}, []
    if mode != "none":
        attrs = {
            "source": d.draw(attribute_column(list(base)), label="source"),
            "size": d.draw(attribute_column(list(base), SIZE_VALUES), label="size"),
        }
        slicings = ["source", ["source", "size"]]
    top = d.draw(st.integers(min_value=1, max_value=6), label="top")

    res = run_impact(base, exp, w, items_mode=mode, attrs=attrs, slice_by=slicings, top=top)

    item_table = res.per_item()
    cluster_tables = {side: res.per_cluster(side) for side in ("base", "exp")}
    assert_overall(res, ref.overall(base, exp, w))
    assert_per_item(res, base, exp, w, item_table)
    assert_per_cluster(res, base, exp, w, cluster_tables)
    assert_top(res, base, exp, w, top)
    for cols in slicings:
        got = slice_rows(res.slices, slice_name(cols), cols)
        expected = ref.per_slice(base, exp, w, slice_attr(attrs, cols))
        assert_rows_match(got, expected, SLICE_COLS, f"slice {slice_name(cols)}")
    # no restriction happened
    r = res.restriction
    assert (r.base_only_items, r.exp_only_items, r.items_only_items) == (0, 0, 0)
    assert_rates_in_unit_interval(
        res, [slice_name(c) for c in slicings], item_table, cluster_tables
    )
    json.dumps(res.to_dict())


@SETTINGS
@given(clusterings(), st.data())
def test_pointwise_matches_reference_and_impact(data, d):
    truth, clustering, w = data
    mode = d.draw(items_mode_for(w), label="items_mode")
    attrs = {}
    slicings = []
    if mode != "none":
        attrs = {"source": d.draw(attribute_column(list(truth)), label="source")}
        slicings = ["source"]
    items = None if mode == "none" else items_df(w, with_weight=mode == "weights", **attrs)
    res = abcde.pointwise(clustering_df(truth), clustering_df(clustering), items=items,
                          slice_by=slicings)

    o = ref.pointwise_lifted(truth, clustering, w)
    assert res.precision == close(o["precision"])
    assert res.recall == close(o["recall"])
    assert res.f1 == close(o["f1"])

    pw_items = res.per_item()
    got = by_key(pw_items, "item_id")
    expected = ref.pointwise_per_item(truth, clustering, w)
    assert_rows_match(got, expected, ("weight", "precision", "recall"), "pointwise per_item")
    for i, r in expected.items():
        assert got[i]["truth_cluster"] == r["truth_cluster"]
        assert got[i]["cluster"] == r["cluster"]

    got = by_key(res.per_cluster(), "cluster_id")
    expected = ref.pointwise_per_cluster(truth, clustering, w)
    assert_rows_match(got, expected, ("size", "weight", "precision", "recall", "f1"),
                      "pointwise per_cluster")

    for cols in slicings:
        got = slice_rows(res.slices, slice_name(cols), cols)
        expected = ref.pointwise_per_slice(truth, clustering, w, slice_attr(attrs, cols))
        assert_rows_match(got, expected, ("items", "weight", "precision", "recall", "f1"),
                          "pointwise slice")

    # Paper: with truth = Base and clustering = Exp,
    # 1 - Precision == MergeRate and 1 - Recall == SplitRate (overall and per item).
    imp = abcde.impact(clustering_df(truth), clustering_df(clustering), items=items, top=0)
    assert 1 - res.precision == close(imp.merge_rate)
    assert 1 - res.recall == close(imp.split_rate)
    pi = by_key(pw_items, "item_id")
    ii = by_key(imp.per_item(), "item_id")
    assert set(pi) == set(ii)
    for i in ii:
        assert 1 - pi[i]["precision"] == close(ii[i]["merge_rate"])
        assert 1 - pi[i]["recall"] == close(ii[i]["split_rate"])


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@st.composite
def relabel(draw, clustering):
    """Same partition, new cluster ids (possibly of the other type)."""
    old = list(dict.fromkeys(clustering.values()))
    new = draw(cluster_labels(len(old)))
    m = dict(zip(old, new))
    return {i: m[c] for i, c in clustering.items()}, m


@SETTINGS
@given(clusterings(), st.data())
def test_identical_clusterings_have_zero_metrics(data, d):
    base, _, w = data
    exp = d.draw(relabel(base))[0] if d.draw(st.booleans(), label="relabel") else dict(base)
    res = run_impact(base, exp, w)
    for m in METRICS:
        assert getattr(res, m) == 0.0, m
    assert res.affected_items == 0
    assert res.affected_weight == 0.0
    assert res.unaffected_items == len(base)
    assert res.unaffected_weight == close(ref.weight_of(base, w))
    for r in res.per_item().to_pylist():
        assert (r["split_rate"], r["merge_rate"], r["jaccard_distance"]) == (0, 0, 0)
    for side in ("base", "exp"):
        assert all(r["contribution"] == 0 for r in res.top_clusters[side])


@SETTINGS
@given(clusterings(), st.data())
def test_relabel_shuffle_and_scale_change_nothing(data, d):
    """Relabel cluster ids, shuffle the rows and scale all weights by c.

    To save one DuckDB run per example, the transformed run is compared with
    the reference on the *untransformed* data (the library itself is checked
    against that reference in test_impact_matches_reference).
    """
    base, exp, w = data
    base2, mb = d.draw(relabel(base), label="relabel base")
    exp2, me = d.draw(relabel(exp), label="relabel exp")
    order = d.draw(st.permutations(list(base)), label="row order")
    c = d.draw(st.floats(min_value=1e-3, max_value=1e3), label="scale")
    w2 = {i: v * c for i, v in w.items()}
    res = run_impact(base2, exp2, w2, order=order, top=0)  # no top clusters checked: none listed

    o = ref.overall(base, exp, w)
    assert res.items == o["items"]
    assert res.total_weight == close(o["total_weight"] * c)
    assert res.affected_weight == close(o["affected_weight"] * c)
    assert res.affected_items == o["affected_items"]
    for m in METRICS:
        assert getattr(res, m) == close(o[m]), m
    got = by_key(res.per_item(), "item_id")
    expected = ref.per_item(base, exp, w)
    assert_rows_match(got, expected, METRICS, "per_item")
    for i, r in expected.items():
        assert got[i]["base_cluster"] == mb[r["base_cluster"]]
        assert got[i]["exp_cluster"] == me[r["exp_cluster"]]
    for side, mapping in (("base", mb), ("exp", me)):
        got = by_key(res.per_cluster(side), "cluster_id")
        expected = {
            mapping[k]: r for k, r in ref.per_cluster(base, exp, w, side).items()
        }
        assert_rows_match(got, expected, METRICS + ("contribution", "size"), side)


@SETTINGS
@given(clusterings(), st.data())
def test_swap_symmetry_and_triangle_inequality(data, d):
    """Swapping Base and Exp swaps SplitRate and MergeRate, and SplitDistance and MergeDistance
    (overall, per item, per cluster) and keeps JaccardDistance; JaccardDistance(T) satisfies the
    triangle inequality JD(A,C) <= JD(A,B) + JD(B,C) (one test to share runs)."""
    base, exp, w = data
    # top=0: no cluster is listed (the top clusters are checked in test_impact_matches_reference)
    ab = run_impact(base, exp, w, top=0)
    ba = run_impact(exp, base, w, top=0)
    assert ba.split_rate == close(ab.merge_rate)
    assert ba.merge_rate == close(ab.split_rate)
    assert ba.jaccard_distance == close(ab.jaccard_distance)
    assert (ba.split_distance, ba.merge_distance) == (close(ab.merge_distance), close(ab.split_distance))
    assert ba.affected_items == ab.affected_items
    pab, pba = by_key(ab.per_item(), "item_id"), by_key(ba.per_item(), "item_id")
    assert set(pab) == set(pba)
    for i in pab:
        assert pba[i]["split_rate"] == close(pab[i]["merge_rate"])
        assert pba[i]["merge_rate"] == close(pab[i]["split_rate"])
        assert pba[i]["jaccard_distance"] == close(pab[i]["jaccard_distance"])
        assert pba[i]["split_distance"] == close(pab[i]["merge_distance"])
        assert pba[i]["merge_distance"] == close(pab[i]["split_distance"])
    # Base clusters of (base, exp) are the Exp clusters of (exp, base)
    cab = by_key(ab.per_cluster("base"), "cluster_id")
    cba = by_key(ba.per_cluster("exp"), "cluster_id")
    assert set(cab) == set(cba)
    for c in cab:
        assert cba[c]["split_rate"] == close(cab[c]["merge_rate"])
        assert cba[c]["merge_rate"] == close(cab[c]["split_rate"])
        assert cba[c]["jaccard_distance"] == close(cab[c]["jaccard_distance"])
        assert cba[c]["split_distance"] == close(cab[c]["merge_distance"])
        assert cba[c]["contribution"] == close(cab[c]["contribution"])

    # triangle inequality with a third clustering C of the same items
    a, b = base, exp
    c = d.draw(third_clustering(list(a), like=d.draw(st.sampled_from([a, b]))), label="c")
    jd_ab = ab.jaccard_distance
    jd_bc = run_impact(b, c, w, top=0).jaccard_distance
    jd_ac = run_impact(a, c, w, top=0).jaccard_distance
    assert jd_ac <= jd_ab + jd_bc + 1e-9, (jd_ab, jd_bc, jd_ac)


@SETTINGS
@given(partial_clusterings(), st.data())
def test_restriction_to_common_items(data, d):
    base, exp, w = data
    use_items = d.draw(st.booleans(), label="items table")
    if use_items:
        # the items table holds every id (incl. items in neither clustering)
        items = items_df(w)
        ids = list(w)
        weights = w
    else:
        items = None
        ids = None
        weights = None
    res = abcde.impact(clustering_df(base), clustering_df(exp), items=items, top=0)  # no top checked

    b, e, info = ref.restrict(base, exp, weights, items=ids)
    wt = weights if weights is not None else dict.fromkeys(b, 1.0)
    r = res.restriction
    assert r.base_only_items == info["base_only_items"]
    assert r.exp_only_items == info["exp_only_items"]
    assert r.base_only_weight == close(info["base_only_weight"])
    assert r.exp_only_weight == close(info["exp_only_weight"])
    assert r.items_only_items == info["items_only_items"]
    for name in ("base_only", "exp_only", "items_only"):
        examples = list(getattr(r, f"{name}_examples"))
        assert set(examples) <= info[name], name
        assert bool(examples) == bool(info[name]), name

    item_table = res.per_item()
    cluster_tables = {side: res.per_cluster(side) for side in ("base", "exp")}
    assert_overall(res, ref.overall(b, e, wt))
    assert_per_item(res, b, e, wt, item_table)
    assert_per_cluster(res, b, e, wt, cluster_tables)
    assert_rates_in_unit_interval(res, (), item_table, cluster_tables)


# ---------------------------------------------------------------------------
# Hand-computed examples
# ---------------------------------------------------------------------------

# Base {a,b,c},{d}; Exp {a,b},{c,d}
H_BASE = {"a": 1, "b": 1, "c": 1, "d": 2}
H_EXP = {"a": "x", "b": "x", "c": "y", "d": "y"}


def test_hand_example_unit_weights():
    # item  Base(i)  Exp(i)   split        merge       JD
    # a     {a,b,c}  {a,b}    {c}:  1/3    {}:  0      1/3
    # b     {a,b,c}  {a,b}    {c}:  1/3    {}:  0      1/3
    # c     {a,b,c}  {c,d}    {a,b}: 2/3   {d}: 1/2    (2+1)/4 = 3/4
    # d     {d}      {c,d}    {}:   0      {c}: 1/2    1/2
    # T: split = (1/3+1/3+2/3+0)/4 = 1/3
    #    merge = (0+0+1/2+1/2)/4   = 1/4
    #    JD    = (1/3+1/3+3/4+1/2)/4 = (23/12)/4 = 23/48
    # all four items are affected.
    # Base clusters: {a,b,c}: split 4/9, merge 1/6, JD 17/36, contribution 3*(17/36)/4 = 17/48
    #                {d}:     split 0,   merge 1/2, JD 1/2,   contribution 1*(1/2)/4  =  6/48
    # Exp clusters:  {a,b}:   split 1/3, merge 0,   JD 1/3,   contribution 2*(1/3)/4  =  8/48
    #                {c,d}:   split 1/3, merge 1/2, JD 5/8,   contribution 2*(5/8)/4  = 15/48
    res = abcde.impact(clustering_df(H_BASE), clustering_df(H_EXP))
    assert res.items == 4
    assert res.total_weight == close(4.0)
    assert res.split_rate == close(1 / 3)
    assert res.merge_rate == close(1 / 4)
    assert res.jaccard_distance == close(23 / 48)
    assert res.affected_items == 4 and res.unaffected_items == 0
    assert res.affected_weight == close(4.0)

    per = by_key(res.per_item(), "item_id")
    want = {
        "a": (1 / 3, 0, 1 / 3),
        "b": (1 / 3, 0, 1 / 3),
        "c": (2 / 3, 1 / 2, 3 / 4),
        "d": (0, 1 / 2, 1 / 2),
    }
    for i, (s, m, j) in want.items():
        assert (per[i]["split_rate"], per[i]["merge_rate"], per[i]["jaccard_distance"]) == (
            close(s), close(m), close(j))
        assert per[i]["weight"] == 1.0

    pb = by_key(res.per_cluster("base"), "cluster_id")
    assert pb[1]["size"] == 3 and pb[2]["size"] == 1
    assert (pb[1]["split_rate"], pb[1]["merge_rate"], pb[1]["jaccard_distance"]) == (
        close(4 / 9), close(1 / 6), close(17 / 36))
    assert pb[1]["contribution"] == close(17 / 48)
    assert pb[2]["contribution"] == close(6 / 48)
    pe = by_key(res.per_cluster("exp"), "cluster_id")
    assert pe["x"]["contribution"] == close(8 / 48)
    assert (pe["y"]["split_rate"], pe["y"]["merge_rate"], pe["y"]["jaccard_distance"]) == (
        close(1 / 3), close(1 / 2), close(5 / 8))
    assert pe["y"]["contribution"] == close(15 / 48)

    inter = [(r["side"], r["cluster_id"]) for r in res.top_clusters["interleaved"]]
    assert inter == [("base", 1), ("exp", "y"), ("exp", "x"), ("base", 2)]
    assert [r["cluster_id"] for r in res.top_clusters["base"]] == [1, 2]
    assert [r["cluster_id"] for r in res.top_clusters["exp"]] == ["y", "x"]


def test_hand_example_weighted():
    # weights a=1, b=1, c=2, d=4 ; w(T) = 8
    # a,b: w(Base)=4, w(Exp)=2: split 2/4, merge 0, JD 2/4
    # c:   split {a,b} 2/4, merge {d} 4/6, JD (2+4)/8 = 3/4
    # d:   split 0, merge {c} 2/6, JD 2/6
    # split(T) = (1/2 + 1/2 + 2*1/2 + 0)/8 = 1/4
    # merge(T) = (2*2/3 + 4*1/3)/8        = 1/3
    # JD(T)    = (1/2 + 1/2 + 2*3/4 + 4*1/3)/8 = (23/6)/8 = 23/48
    w = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 4.0}
    res = abcde.impact(clustering_df(H_BASE), clustering_df(H_EXP), items=items_df(w))
    assert res.total_weight == close(8.0)
    assert res.split_rate == close(1 / 4)
    assert res.merge_rate == close(1 / 3)
    assert res.jaccard_distance == close(23 / 48)
    per = by_key(res.per_item(), "item_id")
    assert per["c"]["merge_rate"] == close(2 / 3)
    assert per["d"]["jaccard_distance"] == close(1 / 3)
    assert per["d"]["weight"] == 4.0


def test_hand_example_slices_and_unaffected_item():
    # Add an unchanged singleton e; slice p = {a,b}, q = {c,d,e}; unit weights.
    # JD(T) = (23/12)/5 ; JD(p) = 1/3 ; JD(q) = (3/4+1/2+0)/3 = 5/12
    # contribution(q) = 3 * 5/12 / 5 = 1/4 ; contribution(p) = 2 * 1/3 / 5 = 2/15
    # Two-column slicing (source, kind): kind = 'u' for e only, 'v' otherwise.
    base = dict(H_BASE, e=3)
    exp = dict(H_EXP, e="z")
    source = {"a": "p", "b": "p", "c": "q", "d": "q", "e": "q"}
    kind = {"a": "v", "b": "v", "c": "v", "d": "v", "e": "u"}
    items = items_df(dict.fromkeys(base, 1.0), with_weight=False, source=source, kind=kind)
    res = abcde.impact(clustering_df(base), clustering_df(exp), items=items,
                       slice_by=["source", ("source", "kind")])
    assert res.jaccard_distance == close((23 / 12) / 5)
    assert res.affected_items == 4 and res.unaffected_items == 1
    assert res.unaffected_weight == close(1.0)
    s = slice_rows(res.slices, "source", "source")
    assert s["p"]["items"] == 2 and s["q"]["items"] == 3
    assert s["p"]["jaccard_distance"] == close(1 / 3)
    assert s["q"]["jaccard_distance"] == close(5 / 12)
    assert s["q"]["contribution"] == close(1 / 4)
    assert s["p"]["contribution"] == close(2 / 15)
    s2 = slice_rows(res.slices, "source,kind", ("source", "kind"))
    assert set(s2) == {("p", "v"), ("q", "v"), ("q", "u")}
    assert s2[("q", "u")]["jaccard_distance"] == 0
    # (q, v) = {c, d}: JD (3/4 + 1/2)/2 = 5/8
    assert s2[("q", "v")]["jaccard_distance"] == close(5 / 8)


def test_hand_pointwise():
    # truth = Base, clustering = Exp:
    # precision(i) = 1 - merge(i), recall(i) = 1 - split(i)
    # P = 1 - 1/4 = 3/4, R = 1 - 1/3 = 2/3, F1 = 2*(1/2)/(17/12) = 12/17
    res = abcde.pointwise(clustering_df(H_BASE), clustering_df(H_EXP))
    assert res.precision == close(3 / 4)
    assert res.recall == close(2 / 3)
    assert res.f1 == close(12 / 17)
    per = by_key(res.per_item(), "item_id")
    assert per["c"]["precision"] == close(1 / 2)  # C(c)={c,d}, G(c)={a,b,c}: 1/2
    assert per["c"]["recall"] == close(1 / 3)     # 1/3
    pc = by_key(res.per_cluster(), "cluster_id")
    # cluster x = {a,b}: precision 1, recall 2/3 -> f1 = 0.8
    assert pc["x"]["precision"] == close(1.0)
    assert pc["x"]["recall"] == close(2 / 3)
    assert pc["x"]["f1"] == close(0.8)


def test_hand_restriction():
    # base: a b x ; exp: a b y ; items table also has z (in neither clustering)
    # T = {a, b}; base_only = {x} (weight 2.5); exp_only = {y} (weight 0.5)
    base = {"a": 1, "b": 1, "x": 2}
    exp = {"a": 1, "b": 2, "y": 2}
    w = {"a": 1.0, "b": 3.0, "x": 2.5, "y": 0.5, "z": 7.0}
    res = abcde.impact(clustering_df(base), clustering_df(exp), items=items_df(w))
    r = res.restriction
    assert (r.base_only_items, r.exp_only_items, r.items_only_items) == (1, 1, 1)
    assert r.base_only_weight == close(2.5)
    assert r.exp_only_weight == close(0.5)
    assert list(r.base_only_examples) == ["x"]
    assert list(r.exp_only_examples) == ["y"]
    assert list(r.items_only_examples) == ["z"]
    assert res.items == 2
    assert res.total_weight == close(4.0)
    # restricted: Base {a,b}, Exp {a},{b}: split(a) = 3/4, split(b) = 1/4
    # split(T) = (1*3/4 + 3*1/4)/4 = 3/8 ; merge 0 ; JD = split
    assert res.split_rate == close(3 / 8)
    assert res.merge_rate == close(0.0)
    assert res.jaccard_distance == close(3 / 8)
    # without an items table removed items weigh 1.0 each
    res = abcde.impact(clustering_df(base), clustering_df(exp))
    assert res.restriction.base_only_weight == close(1.0)
    assert res.restriction.exp_only_weight == close(1.0)
    assert res.restriction.items_only_items == 0


def test_input_formats_agree(tmp_path):
    import polars as pl
    import pyarrow as pa
    b, e = clustering_df(H_BASE), clustering_df(H_EXP)
    b.to_parquet(tmp_path / "b.parquet")
    e.to_parquet(tmp_path / "e.parquet")
    b.to_csv(tmp_path / "b.csv", index=False)
    e.to_csv(tmp_path / "e.csv", index=False)
    variants = [
        (pa.Table.from_pandas(b, preserve_index=False), pa.Table.from_pandas(e, preserve_index=False)),
        (pl.from_pandas(b), pl.from_pandas(e)),
        (str(tmp_path / "b.parquet"), str(tmp_path / "e.parquet")),
        (str(tmp_path / "b.csv"), str(tmp_path / "e.csv")),
    ]
    for vb, ve in variants:
        res = abcde.impact(vb, ve)
        assert (res.split_rate, res.merge_rate, res.jaccard_distance) == (
            close(1 / 3), close(1 / 4), close(23 / 48)), type(vb)
