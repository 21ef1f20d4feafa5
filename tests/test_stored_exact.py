"""Every exact quantity a sample directory or a result stores, against tests/reference.py.

Through the public API only: ``abcde.impact`` (its restriction), ``abcde.sample_affected``
(the exploration sample's metadata and rows) and ``abcde.draw_pair_sample`` writing a real
directory read back with ``abcde.PairSampleDir.read`` (metadata.json's pair totals, self term,
rates and totals; slices.parquet's weight(I), pairweight(I), self term and self pair weight per
value; each stored draw's class, label and self flag; items.parquet's weights). Inputs are
hypothesis-generated (tests/strategies.py): partial clusterings (items only in Base, only in
Exp, only in the items table), unit or random weights, string and integer slice columns, both
estimators. Compared at rel 1e-9 (abs 1e-12 for values that are 0 up to rounding).
"""

from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import reference as ref
from strategies import sample_inputs

import abcde
from abcde.sampling.explore import sample_affected

_PHASES = tuple(Phase) if os.environ.get("ABCDE_TEST_SHRINK") else tuple(p for p in Phase if p != Phase.shrink)
SETTINGS = settings(max_examples=int(os.environ.get("ABCDE_TEST_EXAMPLES", "20")), deadline=None,
                    phases=_PHASES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
METRICS = ("split_rate", "merge_rate", "jaccard_distance")


def close(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def frames(base, exp, weights, attrs, use_items):
    b = pd.DataFrame({"item_id": list(base), "cluster_id": list(base.values())})
    e = pd.DataFrame({"item_id": list(exp), "cluster_id": list(exp.values())})
    items = None
    if use_items:
        ids = list(weights)
        items = pd.DataFrame({"item_id": ids, "weight": [float(weights[i]) for i in ids],
                              **{c: [attrs[c][i] for i in ids] for c in attrs}})
    return b, e, items


def restricted(base, exp, weights):
    """T = the common items; the reference's restriction info."""
    b, e, info = ref.restrict(base, exp, weights, items=list(weights))
    return b, e, {i: float(weights[i]) for i in b}, info


def check_restriction(r, info):
    assert r["common_items"] == info["items"]
    assert r["base_only_items"] == info["base_only_items"]
    assert r["exp_only_items"] == info["exp_only_items"]
    assert r["items_only_items"] == info["items_only_items"]
    assert r["base_only_weight"] == close(info["base_only_weight"])
    assert r["exp_only_weight"] == close(info["exp_only_weight"])
    for name in ("base_only", "exp_only", "items_only"):
        got = list(r[f"{name}_examples"])
        assert len(got) == min(5, len(info[name])), name
        assert set(got) <= info[name], name


def check_totals(meta, b, e, w):
    o = ref.overall(b, e, w)
    assert meta["items"] == o["items"]
    assert meta["total_weight"] == close(o["total_weight"])
    for m in METRICS:
        assert meta[f"{m}_T"] == close(o[m]), m
    return o


@SETTINGS
@given(sample_inputs(), st.sampled_from(["paper", "stratified"]), st.integers(1, 6), st.integers(0, 10**6))
def test_pair_sample_directory_stores_exact_quantities(tmp_path_factory, data, estimator, budget, seed):
    base, exp, weights, attrs, use_items = data
    b, e, w, info = restricted(base, exp, weights)
    fb, fe, fi = frames(base, exp, weights, attrs, use_items)
    slice_by = ["src", "n"] if use_items else []
    out = tmp_path_factory.mktemp("pairs")
    abcde.draw_pair_sample(fb, fe, out / "s", budget=budget, seed=seed, items=fi, slice_by=slice_by,
                           estimator=estimator)
    s = abcde.PairSampleDir.read(out / "s")
    m = s.metadata
    # metadata.json holds the same numbers as the draws' metadata
    assert json.loads((out / "s" / "metadata.json").read_text()) == m

    # overall totals and rates of T (the common items)
    check_totals(m, b, e, w)
    # exact pair weight totals per class (paper, "Summary of the estimation of quality metrics")
    want = ref.pair_totals(b, e, w)
    # and the agreed stratum's, 0: no part of ΔPrecision (the recall lift's stratum, issue 38)
    assert set(m["pair_totals"]) == set(want) | {"agreed"} and m["pair_totals"]["agreed"] == 0.0
    for c, v in want.items():
        assert m["pair_totals"][c] == close(v), c
    # Σ u_ij over AllPairs = Σ_i w_i/W · (SplitRate(i) + MergeRate(i) + stable share) ≥ 0
    assert m["pair_totals"]["all"] == close(want["split"] + want["merge"] + want["stable"])
    if estimator == "stratified":
        # U_c per stratum are the pair totals above; the self term is exact
        assert m["self_term"] == close(ref.self_term(b, e, w))
        assert set(m["budgets"]) == {"split", "merge", "intersection+", "intersection-", "agreed"}
        # the distinct pairs {i, j} (i ≠ j, u_ij > 0) of each stratum, counted from AllPairs
        strat = {"split": lambda p: p["class"] == "split", "merge": lambda p: p["class"] == "merge",
                 "intersection+": lambda p: p["class"] == "stable" and p["l"] > 0,
                 "intersection-": lambda p: p["class"] == "stable" and p["l"] < 0}
        listed = {c: {frozenset((p["i"], p["j"])) for p in ref.all_pairs(b, e, w)
                      if p["i"] != p["j"] and p["u"] > 0 and f(p)} for c, f in strat.items()}
        # the agreed stratum (issue 38): pairs together in both clusterings, but for the intersection's
        together = {frozenset((i, j)) for i in b for j in b if i != j and b[i] == b[j] and e[i] == e[j]}
        listed["agreed"] = together - listed["intersection+"] - listed["intersection-"]
        assert m["pair_counts"] == {c: len(v) for c, v in listed.items()}
        for c, n in m["budgets"].items():
            assert 0 <= n <= len(listed[c]) and (want.get(c, 1.0) > 0 or n == 0), c
        # (the agreed stratum takes pairs only when something was split or merged: else Λ = 0 exactly)
        room = sum(len(listed[c]) for c in m["budgets"] if c != "agreed" or m.get("agreed_share"))
        assert sum(m["budgets"].values()) == min(budget, room)
        # a stratum whose budget covers its pairs is listed whole, each pair once with u_ij + u_ji
        assert m["census"] == [c for c in m["budgets"] if 0 < len(listed[c]) == m["budgets"][c]]
        u = {(p["i"], p["j"]): p["u"] for p in ref.all_pairs(b, e, w)}
        for c in m["census"]:
            rows = [r for r in s.draws.to_pylist() if r["stratum"] == c]
            assert {frozenset((r["item_a"], r["item_b"])) for r in rows} == listed[c] and len(rows) == len(listed[c])
            for r in rows:
                if c == "agreed":  # its pairs' weight in the pair masses: 2·w_a·w_b/W²
                    pw = 2 * w[r["item_a"]] * w[r["item_b"]] / ref.overall(b, e, w)["total_weight"] ** 2
                    assert r["pair_weight"] == close(pw)
                    continue
                assert r["pair_weight"] == close(u[(r["item_a"], r["item_b"])] + u[(r["item_b"], r["item_a"])])

    # each stored draw is a pair of AllPairs with its class and label
    pairs = {(p["i"], p["j"]): p for p in ref.all_pairs(b, e, w)}
    for r in s.draws.to_pylist():
        p = pairs[(r["item_a"], r["item_b"])]
        if r.get("stratum") == "agreed":  # together in both, drawn ∝ w_i·w_j (no part of ΔPrecision: u may be 0)
            assert b[r["item_a"]] == b[r["item_b"]] and e[r["item_a"]] == e[r["item_b"]], r
            assert r["class"] == "agreed" and r["label"] == 0 and not r["is_self"], r
            continue
        assert p["u"] > 0, r
        assert r["class"] == p["class"], r
        assert r["label"] == p["l"], r
        assert r["is_self"] == (r["item_a"] == r["item_b"])
        assert r["needs_judgement"] == (not r["is_self"])
        if r.get("stratum") is not None:  # the paper's own draws have none (its agreed pairs "agreed")
            assert r["stratum"] == (("intersection+" if p["l"] > 0 else "intersection-") if p["class"] == "stable"
                                    else p["class"])
            assert not r["is_self"]
    # items.parquet: every item of the drawn pairs with its weight
    drawn = {r["item_a"] for r in s.draws.to_pylist()} | {r["item_b"] for r in s.draws.to_pylist()}
    stored = s.items.to_pylist()
    assert {r["item_id"] for r in stored} == drawn
    if use_items:
        for r in stored:
            assert r["weight"] == weights[r["item_id"]]

    # slices.parquet: weight(I), pairweight(I), self term and self pair weight per value
    if slice_by:
        rows = pd.read_parquet(out / "s" / "slices.parquet").to_dict("records")
        for c in slice_by:
            want = ref.slice_multipliers(b, e, w, {i: attrs[c][i] for i in b})
            got = {r["value"]: r for r in rows if r["column"] == c}
            assert set(got) == {json.dumps(v) for v in want}, c
            for v, x in want.items():
                g = got[json.dumps(v)]
                for k in ("weight", "pairweight", "self_term", "self_pairweight"):
                    assert g[k] == close(x[k]), (c, v, k)
            # the slices of a column partition T: their multipliers add up to the totals
            assert math.fsum(x["pairweight"] for x in want.values()) == close(m["pair_totals"]["all"])
            assert math.fsum(x["self_pairweight"] for x in want.values()) == close(m["pair_totals"]["self"])
        # the reader's view of the same file
        sl, st_ = s.slices(), s.slice_self_terms()
        for r in rows:
            assert sl[r["column"]][r["value"]] == (r["weight"], r["pairweight"])
            assert st_[r["column"]][r["value"]] == (r["self_term"], r["self_pairweight"])
    else:
        assert not (out / "s" / "slices.parquet").exists()


@SETTINGS
@given(sample_inputs(), st.integers(1, 8), st.integers(0, 10**6))
def test_impact_restriction_and_exploration_sample_store_exact_quantities(data, size, seed):
    base, exp, weights, attrs, use_items = data
    b, e, w, info = restricted(base, exp, weights)
    fb, fe, fi = frames(base, exp, weights, attrs, use_items)
    res = abcde.impact(fb, fe, items=fi)
    # restriction counts as the result stores them (to_dict is what --json and impact.json hold)
    check_restriction(res.to_dict()["restriction"], info)
    r = res.restriction
    assert (r.common_items, r.base_only_items, r.exp_only_items, r.items_only_items) == (
        info["items"], info["base_only_items"], info["exp_only_items"], info["items_only_items"])
    o = ref.overall(b, e, w)
    d = res.to_dict()
    for k in ("items", "affected_items", "unaffected_items"):
        assert d[k] == o[k], k
    for k in ("total_weight", "affected_weight", "unaffected_weight", *METRICS):
        assert d[k] == close(o[k]), k

    aff = ref.exploration_items(b, e, w)
    if not aff:
        with pytest.warns(UserWarning, match="No item is affected"):
            s = sample_affected(res, size=size, seed=seed)
        assert s.table.num_rows == 0
        return
    s = sample_affected(res, size=size, seed=seed)
    m = s.metadata
    check_totals(m, b, e, w)
    assert m["affected_items"] == o["affected_items"] == len(aff)
    assert m["affected_weight"] == close(o["affected_weight"])
    assert (m["seed"], m["size"]) == (seed, size)
    rows = s.table.to_pylist()
    assert m["unique_items"] == len(rows) == min(size, len(aff))
    assert m["total_draws"] == sum(x["draw_count"] for x in rows)
    # each row: an affected item with its exact metrics, its draw count and importance weight
    # w(i) = dc(i)/Σdc · JaccardDistance(T)/JaccardDistance(i) (paper, "Exploring the impact")
    for x in rows:
        want = aff[x["item_id"]]
        assert x["base_cluster"] == b[x["item_id"]] and x["exp_cluster"] == e[x["item_id"]]
        for k in ("weight", *METRICS):
            assert x[k] == close(want[k]), k
        assert x["draw_count"] >= 1
        assert x["importance_weight"] == close(
            x["draw_count"] / m["total_draws"] * o["jaccard_distance"] / want["jaccard_distance"])
        if use_items:
            for c in attrs:
                assert x[c] == attrs[c][x["item_id"]]
    # JaccardDistance: every draw contributes JD(T) exactly, so the estimate is exact
    assert s.estimate().jaccard_contribution == close(o["jaccard_distance"])


# ---------------------------------------------------------------------------
# A hand-worked directory (the numbers below are worked out by hand, not by a program)
# ---------------------------------------------------------------------------


def test_hand_worked_pair_sample(tmp_path):
    # Base {1,2,3},{4,5},{6}; Exp {1,2},{3,4},{5,6}; weights 1..6, W = 21; src a,b,a,b,a,b.
    # Fragments (B∩E): {1,2} B=6 E=3; {3} B=6 E=7; {4} B=9 E=7; {5} B=9 E=11; {6} B=6 E=11.
    # split totals Σ_i w_i/W · w(B\E)/w(B):
    #   1: 1/21·3/6, 2: 2/21·3/6, 3: 3/21·3/6, 4: 4/21·5/9, 5: 5/21·4/9, 6: 0
    #   = (1/2 + 1 + 3/2 + 20/9 + 20/9)/21 = (3 + 40/9)/21 = (67/9)/21 = 67/189
    # merge totals w_i/W · w(E\B)/w(E):
    #   1,2: 0; 3: 3/21·4/7; 4: 4/21·3/7; 5: 5/21·6/11; 6: 6/21·5/11
    #   = (12/7 + 12/7 + 30/11 + 30/11)/21 = (24/7 + 60/11)/21 = (684/77)/21 = 228/539
    # stable (vantage i, partners F): w_i/W · |w(B) − w(E)| · w(F) / (w(B)·w(E))
    #   1: 1·3·3/(6·3)/21 = (1/2)/21; 2: 2·3·3/18/21 = 1/21; 3: 3·1·3/42/21 = (3/14)/21
    #   4: 4·2·4/63/21 = (32/63)/21; 5: 5·2·5/99/21 = (50/99)/21; 6: 6·5·6/66/21 = (30/11)/21
    # self (partner = i): 1: 1·3·1/18 = 1/6; 2: 2·3·2/18 = 2/3; 3: 3·1·3/42 = 3/14;
    #   4: 32/63; 5: 50/99; 6: 30/11   (each /21)
    # self term: label sgn(w(B) − w(E)): + for 1, 2 and 4; − for 3, 5 and 6
    #   = (1/6 + 2/3 + 32/63 − 3/14 − 50/99 − 30/11)/21
    base = pd.DataFrame({"item_id": [1, 2, 3, 4, 5, 6], "cluster_id": [1, 1, 1, 2, 2, 3]})
    exp = pd.DataFrame({"item_id": [1, 2, 3, 4, 5, 6], "cluster_id": [1, 1, 2, 2, 3, 3]})
    items = pd.DataFrame({"item_id": [1, 2, 3, 4, 5, 6], "weight": [1.0, 2, 3, 4, 5, 6],
                          "src": ["a", "b", "a", "b", "a", "b"]})
    abcde.draw_pair_sample(base, exp, tmp_path / "s", budget=5, seed=1, items=items, slice_by=["src"])
    s = abcde.PairSampleDir.read(tmp_path / "s")
    m = s.metadata
    stable_i = {1: 1 / 2, 2: 1, 3: 3 / 14, 4: 32 / 63, 5: 50 / 99, 6: 30 / 11}
    self_i = {1: 1 / 6, 2: 2 / 3, 3: 3 / 14, 4: 32 / 63, 5: 50 / 99, 6: 30 / 11}
    sign = {1: 1, 2: 1, 3: -1, 4: 1, 5: -1, 6: -1}
    split_i = {1: 1 / 2, 2: 1, 3: 3 / 2, 4: 20 / 9, 5: 20 / 9, 6: 0}
    merge_i = {1: 0, 2: 0, 3: 12 / 7, 4: 12 / 7, 5: 30 / 11, 6: 30 / 11}
    assert m["total_weight"] == 21.0 and m["items"] == 6
    assert m["pair_totals"]["split"] == close(67 / 189)
    assert m["pair_totals"]["merge"] == close(228 / 539)
    assert m["pair_totals"]["stable"] == close(sum(stable_i.values()) / 21)
    assert m["pair_totals"]["self"] == close(sum(self_i.values()) / 21)
    assert m["pair_totals"]["intersection"] == close((1 / 2 - 1 / 6 + 1 - 2 / 3) / 21)
    assert m["split_rate_T"] == close(67 / 189)
    assert m["merge_rate_T"] == close(228 / 539)
    assert m["self_term"] == close(sum(sign[i] * self_i[i] for i in self_i) / 21)
    rows = {r["value"]: r for r in pd.read_parquet(tmp_path / "s" / "slices.parquet").to_dict("records")}
    for v, members in (('"a"', (1, 3, 5)), ('"b"', (2, 4, 6))):
        assert rows[v]["weight"] == sum(members)
        assert rows[v]["pairweight"] == close(sum(split_i[i] + merge_i[i] + stable_i[i] for i in members) / 21)
        assert rows[v]["self_term"] == close(sum(sign[i] * self_i[i] for i in members) / 21)
        assert rows[v]["self_pairweight"] == close(sum(self_i[i] for i in members) / 21)


# ---------------------------------------------------------------------------
# Self-checks of the reference functions used above (no abcde): identities from the paper
# and hand-worked values, so the reference is not trusted blindly.
# ---------------------------------------------------------------------------

from fractions import Fraction as F  # noqa: E402

from strategies import attribute_column, clusterings  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(clusterings(), st.data())
def test_reference_pair_quantities_satisfy_the_papers_identities(data, d):
    base, exp, w = data
    o = ref.overall(base, exp, w)
    t = ref.pair_totals(base, exp, w)
    # Σ split u_ij = SplitRate(T) and Σ merge u_ij = MergeRate(T) (paper, "Split metrics" / "Merge metrics")
    assert t["split"] == close(o["split_rate"])
    assert t["merge"] == close(o["merge_rate"])
    assert t["self"] + t["intersection"] == close(t["stable"])
    assert t["all"] == close(t["split"] + t["merge"] + t["stable"])
    # with truth = Exp, ΔPrecision = Precision(Exp) − Precision(Base) = 1 − (1 − SplitRate(T))
    assert ref.delta_precision_exact(base, exp, w, exp) == close(o["split_rate"])
    attr = d.draw(attribute_column(list(base)))
    sl = ref.slice_multipliers(base, exp, w, attr)
    assert math.fsum(x["weight"] for x in sl.values()) == close(o["total_weight"])
    assert math.fsum(x["pairweight"] for x in sl.values()) == close(t["all"])
    assert math.fsum(x["self_pairweight"] for x in sl.values()) == close(t["self"])
    assert math.fsum(x["self_term"] for x in sl.values()) == close(ref.self_term(base, exp, w))
    for v, x in sl.items():
        members = [i for i in base if attr[i] == v]
        assert x["self_term"] == close(ref.self_term(base, exp, w, members))
    # exploration: the mean of one draw's y is the contribution Σ_{i∈I} w_i·m(i)/W, computed per
    # item by the set-based functions
    members = [i for i in base if attr[i] == next(iter(sl))]
    for m in (*METRICS, None):
        for items in (None, members):
            vals = ref.exploration_draw_values(base, exp, w, m, items)
            if not vals:
                continue
            assert math.fsum(q for q, _ in vals.values()) == close(1.0)
            assert ref.draw_moments(vals)[0] == close(ref.contribution(base, exp, w, m, items))


def test_reference_hand_worked_pairs_and_inclusion():
    # Base {a,b,c},{d}; Exp {a,b},{c,d}; unit weights, W = 4
    base = {"a": 1, "b": 1, "c": 1, "d": 2}
    exp = {"a": "x", "b": "x", "c": "y", "d": "y"}
    w = dict.fromkeys("abcd", 1.0)
    t = ref.pair_totals(base, exp, w)
    # stable, vantage a: F={a,b}, w(B)=3, w(E)=2: u = 1/4·|3−2|/(3·2)·1 per partner → 2·(1/24) = 1/12 (same for b)
    # c: F={c}, B=3, E=2 → 1/24 ; d: F={d}, B=1, E=2 → 1/4·1/2·1 = 1/8 ... self pairs: a, b: 1/24; c: 1/24; d: 1/8
    assert t["stable"] == close(float(F(1, 12) + F(1, 12) + F(1, 24) + F(1, 8)))
    assert t["self"] == close(float(F(1, 24) * 3 + F(1, 8)))
    # labels: + for a, b, c (w(B)=3 > 2), − for d (1 < 2)
    assert ref.self_term(base, exp, w) == close(float(F(1, 24) * 3 - F(1, 8)))
    # inclusion: rates 1, 2, 3, n = 2: P(a not in S) = P(a last) = 2/6·3/4 + 3/6·2/3 = 7/12
    pi = ref.inclusion_probabilities({"a": 1.0, "b": 2.0, "c": 3.0}, 2)
    assert pi["a"] == pytest.approx(5 / 12, abs=1e-10)
    assert sum(pi.values()) == pytest.approx(2.0, abs=1e-10)
    assert ref.inclusion_probabilities({"a": 1.0, "b": 3.0}, 1)["b"] == pytest.approx(0.75, abs=1e-12)
