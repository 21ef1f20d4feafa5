"""Self-checks of tests/reference.py (does not import abcde).

Hand-computed examples plus an independent pair-by-pair formulation that only
compares cluster labels (no set operations), and paper-stated properties.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from strategies import attribute_column, clusterings, partial_clusterings, three_clusterings

approx = lambda x: pytest.approx(x, abs=1e-12, rel=1e-12)  # noqa: E731

# Base {a,b,c},{d}; Exp {a,b},{c,d}
BASE = {"a": 1, "b": 1, "c": 1, "d": 2}
EXP = {"a": "x", "b": "x", "c": "y", "d": "y"}
UNIT = dict.fromkeys("abcd", 1.0)


def test_hand_example_unit_weights():
    # item  Base(i)  Exp(i)   split       merge      JD
    # a     {a,b,c}  {a,b}    {c}: 1/3    {}: 0      1/3
    # b     {a,b,c}  {a,b}    1/3         0          1/3
    # c     {a,b,c}  {c,d}    {a,b}: 2/3  {d}: 1/2   (2+1)/4 = 3/4
    # d     {d}      {c,d}    0           {c}: 1/2   1/2
    per = ref.per_item(BASE, EXP, UNIT)
    expected = {
        "a": (F(1, 3), 0, F(1, 3)),
        "b": (F(1, 3), 0, F(1, 3)),
        "c": (F(2, 3), F(1, 2), F(3, 4)),
        "d": (0, F(1, 2), F(1, 2)),
    }
    for i, (s, m, j) in expected.items():
        assert per[i]["split_rate"] == approx(float(s))
        assert per[i]["merge_rate"] == approx(float(m))
        assert per[i]["jaccard_distance"] == approx(float(j))
    o = ref.overall(BASE, EXP, UNIT)
    # split = (1/3+1/3+2/3+0)/4 = 1/3 ; merge = (1/2+1/2)/4 = 1/4
    # JD = (1/3+1/3+3/4+1/2)/4 = (23/12)/4 = 23/48
    assert o["split_rate"] == approx(1 / 3)
    assert o["merge_rate"] == approx(1 / 4)
    assert o["jaccard_distance"] == approx(23 / 48)
    assert o["affected_items"] == 4 and o["unaffected_items"] == 0

    pb = ref.per_cluster(BASE, EXP, UNIT, "base")
    # {a,b,c}: split 4/9, merge 1/6, JD 17/36, contribution 3*17/36/4 = 17/48
    assert pb[1]["size"] == 3
    assert pb[1]["split_rate"] == approx(4 / 9)
    assert pb[1]["merge_rate"] == approx(1 / 6)
    assert pb[1]["jaccard_distance"] == approx(17 / 36)
    assert pb[1]["contribution"] == approx(17 / 48)
    # {d}: contribution 1 * 1/2 / 4 = 6/48
    assert pb[2]["contribution"] == approx(6 / 48)
    pe = ref.per_cluster(BASE, EXP, UNIT, "exp")
    # {a,b}: JD 1/3, contribution 2*(1/3)/4 = 8/48 ; {c,d}: JD 5/8, 2*(5/8)/4 = 15/48
    assert pe["x"]["contribution"] == approx(8 / 48)
    assert pe["y"]["split_rate"] == approx(1 / 3)
    assert pe["y"]["merge_rate"] == approx(1 / 2)
    assert pe["y"]["jaccard_distance"] == approx(5 / 8)
    assert pe["y"]["contribution"] == approx(15 / 48)

    top = ref.top_clusters(BASE, EXP, UNIT, 3)
    assert [(r["side"], r["cluster_id"]) for r in top["interleaved"]] == [
        ("base", 1),
        ("exp", "y"),
        ("exp", "x"),
    ]


def test_hand_example_weighted():
    # weights a=1, b=1, c=2, d=4 ; w(T) = 8
    # a: w(B)=4, w(E)=2: split 2/4, merge 0, JD 2/4
    # c: split {a,b}=2/4, merge {d}=4/6, JD 6/8
    # d: split 0, merge {c}=2/6, JD 2/6
    # split(T) = (1/2+1/2+2*1/2)/8 = 1/4
    # merge(T) = (2*2/3 + 4*1/3)/8 = 1/3
    # JD(T)    = (1/2+1/2+2*3/4+4*1/3)/8 = (23/6)/8 = 23/48
    w = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 4.0}
    o = ref.overall(BASE, EXP, w)
    assert o["total_weight"] == 8.0
    assert o["split_rate"] == approx(1 / 4)
    assert o["merge_rate"] == approx(1 / 3)
    assert o["jaccard_distance"] == approx(23 / 48)


def test_hand_example_unaffected_item_and_slices():
    base = dict(BASE, e=3)
    exp = dict(EXP, e="z")
    w = dict(UNIT, e=1.0)
    o = ref.overall(base, exp, w)
    assert o["affected_items"] == 4
    assert o["unaffected_items"] == 1 and o["unaffected_weight"] == 1.0
    assert o["jaccard_distance"] == approx((23 / 12) / 5)
    attr = {"a": "p", "b": "p", "c": "q", "d": "q", "e": "q"}
    s = ref.per_slice(base, exp, w, attr)
    # p = {a,b}: JD 1/3 ; q = {c,d,e}: JD (3/4+1/2+0)/3 = 5/12
    assert s["p"]["jaccard_distance"] == approx(1 / 3)
    assert s["q"]["jaccard_distance"] == approx(5 / 12)
    assert s["q"]["contribution"] == approx(3 * (5 / 12) / 5)


def test_hand_pointwise():
    # truth = BASE, clustering = EXP: precision = 1 - merge, recall = 1 - split
    # P = 1 - 1/4 = 3/4, R = 1 - 1/3 = 2/3, F1 = 2*(1/2)/(17/12) = 12/17
    p = ref.pointwise_lifted(BASE, EXP, UNIT)
    assert p["precision"] == approx(3 / 4)
    assert p["recall"] == approx(2 / 3)
    assert p["f1"] == approx(12 / 17)
    assert ref.f1(0.0, 0.0) == 0.0


def test_hand_restriction():
    base = {"a": 1, "b": 1, "x": 2}
    exp = {"a": 1, "b": 2, "y": 2}
    b, e, info = ref.restrict(base, exp, {"x": 2.5, "a": 1.0}, items=["a", "b", "x", "y", "z"])
    assert set(b) == set(e) == {"a", "b"}
    assert info["base_only_items"] == 1 and info["base_only_weight"] == 2.5
    assert info["exp_only_items"] == 1 and info["exp_only_weight"] == 1.0  # default
    assert info["items_only_items"] == 1 and info["items_only"] == {"z"}


# ---------------------------------------------------------------------------
# Independent pair-by-pair formulation (labels only, no sets)
# ---------------------------------------------------------------------------


def _pairwise(base, exp, w, i):
    wb = we = split = merge = union = 0.0
    for j in base:
        sb = base[j] == base[i]
        se = exp[j] == exp[i]
        wb += w[j] * sb
        we += w[j] * se
        split += w[j] * (sb and not se)
        merge += w[j] * (se and not sb)
        union += w[j] * (sb or se)
    return split / wb, merge / we, (split + merge) / union


@settings(max_examples=100, deadline=None)
@given(clusterings())
def test_reference_matches_pairwise(data):
    base, exp, w = data
    per = ref.per_item(base, exp, w)
    for i in base:
        s, m, j = _pairwise(base, exp, w, i)
        assert per[i]["split_rate"] == approx(s)
        assert per[i]["merge_rate"] == approx(m)
        assert per[i]["jaccard_distance"] == approx(j)
        assert 0 <= s <= 1 and 0 <= m <= 1 and 0 <= j <= 1
        # the three rates vanish exactly on unaffected items
        assert (j == 0) == (i not in ref.affected_items(base, exp))


@settings(max_examples=100, deadline=None)
@given(clusterings(), st.data())
def test_reference_properties(data, d):
    base, exp, w = data
    o = ref.overall(base, exp, w)
    swapped = ref.overall(exp, base, w)
    assert swapped["split_rate"] == approx(o["merge_rate"])
    assert swapped["merge_rate"] == approx(o["split_rate"])
    assert swapped["jaccard_distance"] == approx(o["jaccard_distance"])
    # contributions of base clusters / exp clusters / slices sum to JD(T)
    for side in ("base", "exp"):
        rows = ref.per_cluster(base, exp, w, side).values()
        assert math.fsum(r["contribution"] for r in rows) == approx(o["jaccard_distance"])
    attr = d.draw(attribute_column(list(base)))
    rows = ref.per_slice(base, exp, w, attr).values()
    assert math.fsum(r["contribution"] for r in rows) == approx(o["jaccard_distance"])
    # m(T) = m(Affected) * w(Affected) / w(T)
    aff = ref.affected_items(base, exp)
    if aff:
        m_aff = ref.lifted(base, exp, w, aff)
        for k in ("split_rate", "merge_rate", "jaccard_distance"):
            assert o[k] == approx(m_aff[k] * o["affected_weight"] / o["total_weight"])
    else:
        assert o["jaccard_distance"] == 0
    # precision/recall duality with impact metrics
    p = ref.pointwise_lifted(base, exp, w)
    assert 1 - p["precision"] == approx(o["merge_rate"])
    assert 1 - p["recall"] == approx(o["split_rate"])


@settings(max_examples=100, deadline=None)
@given(three_clusterings())
def test_reference_triangle_inequality(data):
    a, b, c, w = data
    jd = lambda x, y: ref.overall(x, y, w)["jaccard_distance"]  # noqa: E731
    assert jd(a, c) <= jd(a, b) + jd(b, c) + 1e-12


@settings(max_examples=100, deadline=None)
@given(partial_clusterings())
def test_reference_restriction(data):
    base, exp, w = data
    b, e, info = ref.restrict(base, exp, w, items=list(w))
    assert set(b) == set(e) == set(base) & set(exp)
    assert info["items"] + info["base_only_items"] + info["exp_only_items"] + info[
        "items_only_items"
    ] == len(w)
