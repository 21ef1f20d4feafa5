"""The estimators compute exactly the paper's formulas, standard errors included (issue 17).

Simulations catch a 5% bias in an estimate; they cannot catch a 5% error in a *standard error*
(the spread of the SE estimate over a few hundred seeds is itself ~5%), nor every slice
multiplier. So here each estimate and its SE is recomputed from the draws, the judgements and the
stored totals by formulas written out below straight from the paper (plain Python, sharing no
code with abcde), and compared at 1e-12 on random inputs — with class-dependent unsure and missing
judgements, so the per-class reweighting matters — plus one case worked by hand.

Paper, "Summary of the estimation of quality metrics" and Case I of the weighted-mean SE; the
stratified design: ``ΔPrecision = self term + Σ_c U_c · mean_c(l·1(i≡j))`` with
``SE² = Σ_c U_c² s_c² / n_c``; slices (appendix): contribution = pairweight(I) · the reweighted
mean over the draws with vantage in I (paper), or self term(I) + Σ_c U_c · mean_c(l·1(i≡j)·1(i∈I))
(stratified); ΔPrecision(I) = weight(T)/weight(I) · contribution.
"""

from __future__ import annotations

import json
import math
import random

import pyarrow as pa
import pytest

from abcde.quality import estimate_from_draws
from abcde.sampling.allocation import LEGACY_STRATA, STRATA
from abcde.sampling.stratified import StratifiedSample
from abcde.quality.stratified import estimate_stratified, estimate_stratified_slices

REL = 1e-12


def close(a, b):
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or math.isnan(a)) and (b is None or (isinstance(b, float) and math.isnan(b)))
    return a == pytest.approx(b, rel=REL, abs=1e-15)


# ----------------------------------------------------------------------------- random inputs
def random_draws(rng: random.Random, n: int, classes=("self", "split", "merge", "intersection")):
    """Draws of a paper sample: vantage item, class, label, pair id (distinct pairs repeat)."""
    rows = []
    for k in range(n):
        c = rng.choice(classes)
        a = rng.randrange(12)
        if c == "self":
            b, lab = a, rng.choice([-1, 1])
        else:
            b = rng.randrange(12)
            while b == a:
                b = rng.randrange(12)
            lab = {"split": -1, "merge": 1}.get(c, rng.choice([-1, 1]))
        pid = "self" if c == "self" else f"p{min(a, b)}-{max(a, b)}-{c}"
        rows.append({"draw": k, "item_a": a, "item_b": b, "class": "stable" if c in ("self", "intersection") else c,
                     "is_self": c == "self", "label": lab, "pair_id": f"s{a}" if c == "self" else pid,
                     "needs_judgement": c != "self"})
    return rows


def answers_for(rng: random.Random, rows, unsure_rate: dict):
    """same/different with class-dependent unsure and ~5% missing."""
    out = {}
    for r in rows:
        if r["is_self"] or r["pair_id"] in out:
            continue
        c = r["class"]
        u = rng.random()
        if u < 0.05:
            continue  # missing
        out[r["pair_id"]] = "unsure" if u < 0.05 + unsure_rate[c] else rng.choice(["same", "different"])
    return out


def table(rows):
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("draw", pa.int64()), ("item_a", pa.int64()), ("item_b", pa.int64()), ("class", pa.string()),
        ("is_self", pa.bool_()), ("label", pa.int8()), ("pair_id", pa.string()), ("needs_judgement", pa.bool_())]))


# ----------------------------------------------------------------------------- the formulas
def est_class(r):
    return "self" if r["is_self"] else ("intersection" if r["class"] == "stable" else r["class"])


def usable(r, by_pair):
    return r["is_self"] or by_pair.get(r["pair_id"]) in ("same", "different")


def same(r, by_pair):
    return 1.0 if r["is_self"] or by_pair.get(r["pair_id"]) == "same" else 0.0


def case_one(x, w):
    """Weighted mean and its SE, the paper's Case I:
    SE² = (Σw x²/Σw − x̄²) · Σw² / ((Σw)² − Σw²)."""
    sw = sum(w)
    m = sum(wi * xi for wi, xi in zip(w, x)) / sw
    sw2 = sum(wi * wi for wi in w)
    var = sum(wi * xi * xi for wi, xi in zip(w, x)) / sw - m * m
    return m, math.sqrt(max(var, 0.0) * sw2 / (sw * sw - sw2))


def paper_dp(rows, by_pair, multiplier):
    """U · reweighted mean of l·1(i≡j): each class's usable draws stand for all its draws."""
    n_all, n_ok = {}, {}
    for r in rows:
        c = est_class(r)
        n_all[c] = n_all.get(c, 0) + 1
        n_ok[c] = n_ok.get(c, 0) + usable(r, by_pair)
    if any(n_all[c] and not n_ok[c] for c in n_all):
        return math.nan, math.nan
    x = [r["label"] * same(r, by_pair) for r in rows if usable(r, by_pair)]
    w = [n_all[est_class(r)] / n_ok[est_class(r)] for r in rows if usable(r, by_pair)]
    m, se = case_one(x, w)
    return multiplier * m, multiplier * se


def mean_se(v):
    """Plain mean and the SE of the mean, s/√n (ddof 1)."""
    n = len(v)
    m = sum(v) / n
    s2 = sum((x - m) ** 2 for x in v) / (n - 1)
    return m, math.sqrt(s2 / n)


def rate(rows, by_pair, klass, want_same, rate_value):
    v = [same(r, by_pair) if want_same else 1.0 - same(r, by_pair)
         for r in rows if est_class(r) == klass and usable(r, by_pair)]
    m, se = mean_se(v)
    return rate_value * m, rate_value * se


RATES = (("good_split_rate", "split", False), ("bad_split_rate", "split", True),
         ("good_merge_rate", "merge", True), ("bad_merge_rate", "merge", False))


# ----------------------------------------------------------------------------- paper design
@pytest.mark.parametrize("seed", range(12))
def test_the_paper_estimator_is_its_formulas(seed):
    rng = random.Random(seed)
    rows = random_draws(rng, rng.randrange(60, 200))
    by_pair = answers_for(rng, rows, {"split": 0.1, "merge": 0.45, "stable": 0.25})
    totals = {"all": rng.uniform(0.05, 0.6)}
    sr, mr = rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5)
    # slices by the vantage item's colour, with stored multipliers
    colour = {i: rng.choice(["red", "blue", None]) for i in range(12)}
    items = pa.table({"item_id": list(range(12)), "colour": [colour[i] for i in range(12)]})
    keys = sorted({json.dumps(v) for v in colour.values()})
    mult = {k: (rng.uniform(1, 5), rng.uniform(0.01, 0.3)) for k in keys}
    W = 17.5
    q = estimate_from_draws(table(rows), by_pair, totals, sr, mr, items=items, slice_multipliers={"colour": mult},
                            total_weight=W)
    dp, se = paper_dp(rows, by_pair, totals["all"])
    assert close(q.delta_precision.value, dp) and close(q.delta_precision.standard_error, se)
    for name, klass, want_same in RATES:
        v, s = rate(rows, by_pair, klass, want_same, sr if klass == "split" else mr)
        got = getattr(q, name)
        assert close(got.value, v) and close(got.standard_error, s), name
    got = {json.dumps(r["value"]): r for r in q.slices["colour"]}
    assert set(got) == set(keys)
    for k in keys:
        inside = [r for r in rows if json.dumps(colour[r["item_a"]]) == k]
        w_i, pw = mult[k]
        c, c_se = paper_dp(inside, by_pair, pw) if inside else (math.nan, math.nan)
        assert close(got[k]["delta_precision_contribution"]["estimate"], None if math.isnan(c) else c), k
        assert close(got[k]["delta_precision_contribution"]["std_err"], None if math.isnan(c_se) else c_se), k
        if math.isfinite(c):
            assert close(got[k]["delta_precision"]["estimate"], W / w_i * c), k
            assert close(got[k]["delta_precision"]["std_err"], W / w_i * c_se), k


def test_a_case_worked_by_hand():
    """Six draws: a self pair (l = +1), two split draws of one pair judged different, a merge pair
    judged same, one merge pair unsure, an intersection pair (l = −1) judged same. U = 0.5.

    Usable per class: self 1/1, split 2/2, merge 1/2 (weight 2), intersection 1/1; values l·1(i≡j):
    self +1, split 0, 0, merge +1 (w 2), intersection −1. Σw = 6, Σw·x = 1 + 2 − 1 = 2, x̄ = 1/3;
    Σw x² = 1 + 2 + 1 = 4; Σw² = 1 + 1 + 1 + 4 + 1 = 8; SE² = (4/6 − 1/9) · 8 / (36 − 8) = 5/9 · 2/7.
    ΔPrecision = 0.5/3, SE = 0.5 · √(10/63). GoodSplitRate = SR · 1 with SE 0; GoodMergeRate = MR · 1
    from one usable draw (no SE: undefined)."""
    rows = [
        {"draw": 0, "item_a": 1, "item_b": 1, "class": "stable", "is_self": True, "label": 1, "pair_id": "s1",
         "needs_judgement": False},
        {"draw": 1, "item_a": 1, "item_b": 2, "class": "split", "is_self": False, "label": -1, "pair_id": "a",
         "needs_judgement": True},
        {"draw": 2, "item_a": 2, "item_b": 1, "class": "split", "is_self": False, "label": -1, "pair_id": "a",
         "needs_judgement": True},
        {"draw": 3, "item_a": 3, "item_b": 4, "class": "merge", "is_self": False, "label": 1, "pair_id": "b",
         "needs_judgement": True},
        {"draw": 4, "item_a": 5, "item_b": 6, "class": "merge", "is_self": False, "label": 1, "pair_id": "c",
         "needs_judgement": True},
        {"draw": 5, "item_a": 7, "item_b": 8, "class": "stable", "is_self": False, "label": -1, "pair_id": "d",
         "needs_judgement": True},
    ]
    by_pair = {"a": "different", "b": "same", "c": "unsure", "d": "same"}
    q = estimate_from_draws(table(rows), by_pair, {"all": 0.5}, 0.2, 0.1)
    assert q.delta_precision.value == pytest.approx(0.5 / 3, rel=1e-14)
    assert q.delta_precision.standard_error == pytest.approx(0.5 * math.sqrt(10 / 63), rel=1e-14)
    assert (q.good_split_rate.value, q.good_split_rate.standard_error) == (pytest.approx(0.2), 0.0)
    assert q.good_merge_rate.value == pytest.approx(0.1) and math.isnan(q.good_merge_rate.standard_error)
    assert (q.judged_pairs, q.unsure_pairs, q.missing_pairs) == (3, 1, 0)


# ----------------------------------------------------------------------------- stratified design
@pytest.mark.parametrize("layout", ["signed", "legacy"])
@pytest.mark.parametrize("seed", range(12))
def test_the_stratified_estimator_is_its_formulas(seed, layout):
    """Both layouts: the intersection split by the sign of its term (new samples), or one
    intersection stratum of either sign (samples drawn before the split)."""
    rng = random.Random(100 + seed)
    # the strata of ΔPrecision (a new sample's agreed stratum, for the recall lift, has no part in it)
    signed = tuple(c for c in globals()["STRATA"] if c != "agreed")
    STRATA = signed if layout == "signed" else LEGACY_STRATA  # noqa: N806
    strata = {}
    for c, klass in (("split", "split"), ("merge", "merge"), ("intersection", "intersection")):
        rows = random_draws(rng, rng.randrange(20, 80), classes=(klass,))
        strata[c] = rows
    if layout == "signed":
        inter = strata.pop("intersection")
        strata["intersection+"] = [r for r in inter if r["label"] > 0]
        strata["intersection-"] = [r for r in inter if r["label"] < 0]
    by_pair = {}
    for c, rows in strata.items():
        by_pair.update(answers_for(rng, rows, {"split": 0.1, "merge": 0.45, "stable": 0.25}))
    totals = {c: rng.uniform(0.05, 0.4) if c in ("split", "merge") else rng.uniform(0, 0.2) for c in STRATA}
    self_term = rng.uniform(-0.05, 0.05)
    sample = StratifiedSample({c: table(strata[c]) for c in STRATA}, totals, self_term,
                              {c: len(strata[c]) for c in STRATA}, "proportional")
    sr, mr = rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5)
    q = estimate_stratified(sample, by_pair, split_rate=sr, merge_rate=mr)

    def values(rows, keep=lambda r: True):
        return [r["label"] * same(r, by_pair) * keep(r) for r in rows if usable(r, by_pair)]

    dp, var = self_term, 0.0
    for c in STRATA:
        v = values(strata[c])
        m, se = mean_se(v)
        dp += totals[c] * m
        var += (totals[c] * se) ** 2
    assert close(q.delta_precision.value, dp) and close(q.delta_precision.standard_error, math.sqrt(var))
    for name, klass, want_same in RATES:
        v, s = rate(strata[klass], by_pair, klass, want_same, sr if klass == "split" else mr)
        got = getattr(q, name)
        assert close(got.value, v) and close(got.standard_error, s), name
    # slices: every stratum's mean over all its usable draws, the draws outside the slice counting 0
    colour = {i: rng.choice(["red", "blue"]) for i in range(12)}
    keys = sorted({json.dumps(v) for v in colour.values()})
    selfs = {k: (rng.uniform(-0.01, 0.01), rng.uniform(0.0, 0.01)) for k in keys}
    # pairweight(I) as large as the strata together: the slice's range holds every estimate (an
    # estimate outside it, possible at a few draws, is cut to it; tests/test_inside_interval.py)
    mult = {k: (rng.uniform(1, 5), math.fsum(totals.values()) + selfs[k][1] + rng.uniform(0.0, 0.1)) for k in keys}
    W = 23.0
    rows_out = {json.dumps(r["value"]): r for r in estimate_stratified_slices(
        sample, by_pair, {i: json.dumps(v) for i, v in colour.items()}, mult, selfs, total_weight=W)}
    for k in keys:
        c_est, c_var = selfs[k][0], 0.0
        for c in STRATA:
            v = values(strata[c], keep=lambda r: json.dumps(colour[r["item_a"]]) == k)
            m, se = mean_se(v)
            c_est += totals[c] * m
            c_var += (totals[c] * se) ** 2
        got = rows_out[k]
        assert close(got["delta_precision_contribution"]["estimate"], c_est), k
        assert close(got["delta_precision_contribution"]["std_err"], math.sqrt(c_var)), k
        assert close(got["delta_precision"]["estimate"], W / mult[k][0] * c_est), k
        assert close(got["delta_precision"]["std_err"], W / mult[k][0] * math.sqrt(c_var)), k


@pytest.mark.parametrize("seed", range(6))
def test_a_census_stratum_is_its_exact_total(seed):
    """A stratum listed whole (each pair once, with its pair weight): every pair judged, its part
    of ΔPrecision is Σ pair_weight · l · 1(same) with SE 0 (and of a slice, each end in the slice
    adds half); with pairs left unjudged, the judged part is exact and the rest (weight R) is
    R·ȳ (ȳ the weighted mean of the judged) with variance R²·SE(ȳ)² + s²·Σ_unjudged pair_weight²."""
    rng = random.Random(500 + seed)
    rows, k = [], 0
    for a in range(10):
        for b in range(a + 1, 10):
            if rng.random() < 0.5:
                rows.append({"draw": k, "item_a": a, "item_b": b, "class": "merge", "is_self": False, "label": 1,
                             "pair_id": f"p{a}-{b}", "needs_judgement": True, "pair_weight": rng.uniform(0.001, 0.02)})
                k += 1
    t = pa.Table.from_pylist(rows)
    U = math.fsum(r["pair_weight"] for r in rows)
    empty = table([])
    totals = {"split": 0.0, "merge": U, "intersection+": 0.0, "intersection-": 0.0}
    sample = StratifiedSample({"split": empty, "merge": t, "intersection+": empty, "intersection-": empty}, totals,
                              -0.01, {"split": 0, "merge": len(rows), "intersection+": 0, "intersection-": 0},
                              "proportional", frozenset({"merge"}))
    full = {r["pair_id"]: rng.choice(["same", "different"]) for r in rows}
    q = estimate_stratified(sample, full, split_rate=0.0, merge_rate=U)
    exact = -0.01 + math.fsum(r["pair_weight"] * (full[r["pair_id"]] == "same") for r in rows)
    assert close(q.delta_precision.value, exact) and q.delta_precision.standard_error == 0.0
    assert q.exact and q.census == ("merge",) and "census of merge" in q.delta_precision.method
    good = math.fsum(r["pair_weight"] * (full[r["pair_id"]] == "same") for r in rows)
    assert close(q.good_merge_rate.value, good) and q.good_merge_rate.standard_error == 0.0
    colour = {i: rng.choice(["red", "blue"]) for i in range(10)}
    sl = {json.dumps(r["value"]): r for r in estimate_stratified_slices(
        sample, full, {i: json.dumps(v) for i, v in colour.items()}, {json.dumps(c): (5.0, U) for c in
                                                                     ("red", "blue")},
        {json.dumps(c): (0.0, 0.0) for c in ("red", "blue")}, total_weight=10.0)}
    for c in ("red", "blue"):
        want = math.fsum(r["pair_weight"] * (full[r["pair_id"]] == "same") *
                         ((colour[r["item_a"]] == c) + (colour[r["item_b"]] == c)) / 2 for r in rows)
        got = sl[json.dumps(c)]["delta_precision_contribution"]
        assert close(got["estimate"], want) and got["std_err"] == 0.0
    # some pairs unsure or missing: exact judged part plus the estimated rest
    part = {p: j for p, j in full.items() if rng.random() < 0.7}
    part.update({p: "unsure" for p in list(full)[:2]})
    q = estimate_stratified(sample, part, split_rate=0.0, merge_rate=U)
    judged = [r for r in rows if part.get(r["pair_id"]) in ("same", "different")]
    rest = [r for r in rows if part.get(r["pair_id"]) not in ("same", "different")]
    w = [r["pair_weight"] for r in judged]
    y = [float(part[r["pair_id"]] == "same") for r in judged]
    ybar = math.fsum(a * b for a, b in zip(w, y)) / math.fsum(w)
    R = math.fsum(r["pair_weight"] for r in rest)
    sw, sw2 = math.fsum(w), math.fsum(a * a for a in w)
    s2 = math.fsum(a * (b - ybar) ** 2 for a, b in zip(w, y)) / sw
    se2 = s2 * sw2 / (sw * sw - sw2)  # Case I weighted-mean SE²
    want = -0.01 + math.fsum(a * b for a, b in zip(w, y)) + R * ybar
    assert close(q.delta_precision.value, want) and not q.exact
    # Pairs not judged yet are a random subset still to come: the variance of the estimated rest, with
    # Agresti–Coull's floor on the judged share (issue 51). Pairs answered unsure are bounded instead:
    # the interval reaches every answer they could have (its span), beyond the variance's.
    unjudged = [r for r in rest if r["pair_id"] not in part]
    unsure = [r for r in rest if part.get(r["pair_id"]) == "unsure"]
    Rn = math.fsum(r["pair_weight"] for r in unjudged)
    n_eff = sw * sw / sw2
    pt = (n_eff * ybar + 2) / (n_eff + 4)
    s2f = pt * (1 - pt)
    assert close(q.delta_precision.standard_error, math.sqrt(Rn * Rn * max(se2, s2f / (n_eff + 4)) + max(s2, s2f) *
                                                             math.fsum(r["pair_weight"] ** 2 for r in unjudged)))
    down, up = (math.fsum(r["pair_weight"] * ybar for r in unsure),
                math.fsum(r["pair_weight"] * (1 - ybar) for r in unsure))
    assert close(q.delta_precision.span[0], down) and close(q.delta_precision.span[1], up)
    assert "2 pairs of the census stratum merge answered unsure" in q.delta_precision.note
