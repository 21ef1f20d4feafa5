"""The intervals of issue 51, pinned (the mutants ``i51b-*`` of ``tests/mutation/mutants.py``): bugs planted
in the interval code issue 51 added, that no fast test caught, each get a test here that fails on it.
Every expected number is written out in the test from the definitions (exact to 1e-12), never read
from the library's own code; small fixed inputs, no simulation.

1. a sum of distances (GoodDistance = good split + good merge) adds its parts' unsure spans once, as
   they are (bounds), outside the MOVER or quadrature of the parts' intervals;
2. a slice's interval reaches what its census strata's unsure pairs could be;
3. the recall lift's interval with unsure census pairs runs from the lift at the answers that put it
   lowest to the lift at those that put it highest (brute force over every corner);
4. a sampled-entity truth that shows no spread: the missing mass's interval is Clopper–Pearson's
   zero-events bound on the sampled entities' weight share and their Kish number, on both sides of
   what the sample shows, and F1's interval is F1 of its sides' lower ends to F1 of their upper ends;
5. model + people, a census stratum's unseen pairs (``ppi.Unseen``): the hypergeometric bound may be
   every unseen pair of a group, and a group none of whose pairs people judged may be all either answer,
   and a residual variance of rounding size is none;
6. a slice's p-value is its interval's own (the standard error read from the side towards 0, Student t's
   quantile), and a slice whose draws show no spread has its feasible range as its interval.

Tests 1, 2, 4 (the mass's low end, F1) and 5 failed on a mutant that survived every fast test; the rest
pin mutants other tests kill too, cheaply and exactly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm as normal
from scipy.stats import t as student_t

from abcde.quality.result import Estimate


def _q(n: int, level: float = 0.95) -> float:
    """Student t's two-sided quantile on ``n − 1`` degrees of freedom."""
    return float(student_t.ppf(0.5 + level / 2, n - 1))


# ----------------------------------------------------------------------------- 1. a sum of distances
def test_a_sum_of_distances_adds_its_parts_unsure_spans_once_and_as_they_are():
    """GoodDistance = GoodSplitDistance + GoodMergeDistance (``distances.sum_estimate``). Each census
    part whose pairs were answered unsure carries a span ``(down, up)``: how far those pairs' answers
    could move it. The sum's interval is the parts' intervals *without* their spans, added by MOVER
    (one part's interval its own) or ``centre ± q·√(ise_a² + ise_b²)`` (neither), widened to hold the
    value, then ``down_a + down_b`` below and ``up_a + up_b`` above: bounds add as they are, never in
    quadrature, and never twice."""
    from abcde.quality.distances import sum_estimate

    span_a, span_b = (0.010, 0.030), (0.020, 0.005)
    n_a, n_b = 40, 30
    z = _q(n_a + n_b)
    # a part with an interval of its own (read off draws): a census stratum by the model's cells
    a = Estimate("good_split_distance", 0.30, 0.02, n_a, bounds=(0.0, 1.0), span=span_a,
                 interval_of=lambda q: (0.30 - 0.015 * q, 0.30 + 0.025 * q))
    b = Estimate("good_merge_distance", 0.20, 0.01, n_b, bounds=(0.0, 1.0), span=span_b, centre=0.21,
                 interval_se=0.012)
    s = sum_estimate("good_distance", a, b)
    assert s.value == pytest.approx(0.50, rel=1e-12)
    la, ha = 0.30 - 0.015 * z, 0.30 + 0.025 * z  # a's interval, its span left out
    lb, hb = min(0.21 - 0.012 * z, 0.20), 0.21 + 0.012 * z  # b's (Agresti–Coull's, widened to hold 0.20)
    lo = 0.50 - math.hypot(0.30 - la, 0.20 - lb) - (span_a[0] + span_b[0])
    hi = 0.50 + math.hypot(ha - 0.30, hb - 0.20) + (span_a[1] + span_b[1])
    assert s.confidence_interval() == pytest.approx((lo, hi), rel=1e-12)
    # neither with an interval of its own: centre ± q·ise, then the spans
    a2 = Estimate("good_split_distance", 0.30, 0.02, n_a, bounds=(0.0, 1.0), span=span_a, centre=0.29,
                  interval_se=0.018)
    s2 = sum_estimate("good_distance", a2, b)
    c, ise = 0.29 + 0.21, math.hypot(0.018, 0.012)
    want = (c - z * ise - (span_a[0] + span_b[0]), c + z * ise + (span_a[1] + span_b[1]))
    assert s2.confidence_interval() == pytest.approx(want, rel=1e-12)
    # one part without unsure pairs: the other's span alone
    b3 = Estimate("good_merge_distance", 0.20, 0.01, n_b, bounds=(0.0, 1.0), centre=0.21, interval_se=0.012)
    s3 = sum_estimate("good_distance", a2, b3)
    want = (c - z * ise - span_a[0], c + z * ise + span_a[1])
    assert s3.confidence_interval() == pytest.approx(want, rel=1e-12)


# ----------------------------------------------------------------------------- 2. a slice of a census stratum
#: A census merge stratum of ten pairs (label +1), listed once each: (pair id, item a, item b, pair weight).
SLICE_PAIRS = [("p0", 0, 1, 0.020), ("p1", 0, 2, 0.010), ("p2", 1, 3, 0.030), ("p3", 2, 4, 0.015),
               ("p4", 3, 5, 0.025), ("p5", 4, 6, 0.012), ("p6", 5, 7, 0.018), ("p7", 6, 0, 0.022),
               ("p8", 7, 1, 0.016), ("p9", 2, 6, 0.014)]
SLICE_COLOUR = {0: "red", 1: "blue", 2: "red", 3: "blue", 4: "blue", 5: "red", 6: "red", 7: "blue"}
#: six judged, three answered unsure, one not judged yet
SLICE_ANSWERS = {"p0": "same", "p1": "different", "p2": "same", "p3": "same", "p4": "same", "p7": "same",
                 "p5": "unsure", "p6": "unsure", "p9": "unsure"}


def _slice_sample():
    import json

    import pyarrow as pa

    from abcde.sampling.stratified import StratifiedSample

    rows = [{"draw": k, "item_a": a, "item_b": b, "class": "merge", "is_self": False, "label": 1, "pair_id": p,
             "needs_judgement": True, "pair_weight": w} for k, (p, a, b, w) in enumerate(SLICE_PAIRS)]
    empty = pa.Table.from_pylist([], schema=pa.Table.from_pylist(rows).schema)
    U = math.fsum(r["pair_weight"] for r in rows)
    sample = StratifiedSample({"split": empty, "merge": pa.Table.from_pylist(rows), "intersection+": empty,
                               "intersection-": empty}, {"split": 0.0, "merge": U, "intersection+": 0.0,
                                                         "intersection-": 0.0},
                              0.0, {"split": 0, "merge": len(rows), "intersection+": 0, "intersection-": 0},
                              "proportional", frozenset({"merge"}))
    vantage = {i: json.dumps(c) for i, c in SLICE_COLOUR.items()}
    return sample, vantage


def test_a_slices_interval_reaches_what_its_census_pairs_answered_unsure_could_be():
    """ΔPrecisionContribution(red) from a census merge stratum (``estimate_stratified_slices``): each
    pair adds ``pair_weight · 1(same) · h``, ``h`` the share of its ends in the slice (½ each). Judged
    pairs exactly; the rest (weight ``R``) at the judged pairs' weighted mean ``ȳ`` of ``h·1(same)``; the
    pairs not judged yet with the variance of ``census_total`` (Agresti–Coull's floor on the judged
    share of "same"); the pairs answered unsure bounded: the interval reaches ``Σ_unsure w·ȳ`` further
    down (each "different") and ``Σ_unsure w·(h − ȳ)`` further up (each "same"), beyond ``± q·SE``
    (Student t on the slice's pairs − 1). Written out here; a slice's interval that leaves its census
    strata's unsure pairs out is narrower by exactly that."""
    import json

    from abcde.quality.stratified import estimate_stratified_slices

    sample, vantage = _slice_sample()
    W, w_red, pw_red = 10.0, 4.0, 1.0  # the slice's weight and pair weight (its range [0, 1]: no cut)
    rows = estimate_stratified_slices(sample, SLICE_ANSWERS, vantage, {json.dumps("red"): (w_red, pw_red)},
                                      {json.dumps("red"): (0.0, 0.0)}, total_weight=W)
    (row,) = rows
    got = row["delta_precision_contribution"]

    h = {p: ((SLICE_COLOUR[a] == "red") + (SLICE_COLOUR[b] == "red")) / 2 for p, a, b, _ in SLICE_PAIRS}
    w = {p: x for p, _, _, x in SLICE_PAIRS}
    judged = [p for p in w if SLICE_ANSWERS.get(p) in ("same", "different")]
    unsure = [p for p in w if SLICE_ANSWERS.get(p) == "unsure"]
    unjudged = [p for p in w if p not in SLICE_ANSWERS]
    same = {p: float(SLICE_ANSWERS[p] == "same") for p in judged}
    y = {p: h[p] * same[p] for p in judged}
    sw, sw2 = math.fsum(w[p] for p in judged), math.fsum(w[p] ** 2 for p in judged)
    ybar = math.fsum(w[p] * y[p] for p in judged) / sw
    R = math.fsum(w[p] for p in unsure + unjudged)
    est = math.fsum(w[p] * y[p] for p in judged) + R * ybar
    # the variance of the pairs not judged yet (census_total), Agresti–Coull's floor on the share of "same"
    s2 = math.fsum(w[p] * (y[p] - ybar) ** 2 for p in judged) / sw
    se2 = s2 * sw2 / (sw * sw - sw2)
    n_eff = sw * sw / sw2
    pt = (n_eff * math.fsum(w[p] * same[p] for p in judged) / sw + 2) / (n_eff + 4)
    floor = max(h.values()) ** 2 * pt * (1 - pt)
    Rn = math.fsum(w[p] for p in unjudged)
    se = math.sqrt(Rn * Rn * max(se2, floor / (n_eff + 4)) + max(s2, floor) * math.fsum(w[p] ** 2 for p in unjudged))
    down = math.fsum(w[p] * ybar for p in unsure)
    up = math.fsum(w[p] * (h[p] - ybar) for p in unsure)
    n_in = sum(h[p] > 0 for p in w)
    q = _q(n_in)
    assert down > 0.004 and up > 0.004  # the unsure pairs matter
    assert got["estimate"] == pytest.approx(est, rel=1e-12)
    assert got["std_err"] == pytest.approx(se, rel=1e-12) and se > 0  # not a blind slice
    assert got["n_judgements"] == n_in
    want = (est - q * se - down, est + q * se + up)
    assert 0.0 < want[0] and want[1] < pw_red  # inside the range: nothing cut
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(want, rel=1e-12)
    # ΔPrecision(red) = W/w(red) times the contribution, its interval likewise
    dp = row["delta_precision"]
    assert (dp["estimate"], dp["ci_low"], dp["ci_high"]) == pytest.approx(
        (W / w_red * est, W / w_red * want[0], W / w_red * want[1]), rel=1e-12)


# ----------------------------------------------------------------------------- 3. the recall lift's corners
def _lift(t: dict) -> float:
    """Λ = (T_merge − T_split)/(T_agreed + T_intersection+ + T_intersection− + T_split)."""
    return (t["merge"] - t["split"]) / (t["agreed"] + t["intersection+"] + t["intersection-"] + t["split"])


@pytest.mark.parametrize("case", ["losing", "gaining", "turning"])
def test_the_recall_lifts_interval_runs_between_its_unsure_pairs_extreme_answers(case):
    """Every stratum a census whose pairs are all judged but a few answered unsure (no variance left:
    each part's draws are its total): the lift's interval is exactly [min Λ, max Λ] over every answer
    the unsure pairs could have, each part's total anywhere in [total − down, total + up]. Λ is monotone
    in each total, so the extremes lie on the corners: found here by trying all 32. Where Exp loses
    links (T_merge < T_split at the corner) a larger T_both raises Λ, where it gains it lowers Λ;
    "turning": the lowest corner loses although the estimate gains."""
    from abcde.quality.recall import RECALL_STRATA, _Part, lift_estimate

    totals = {"losing": {"agreed": 0.30, "intersection+": 0.02, "intersection-": 0.01, "split": 0.10, "merge": 0.05},
              "gaining": {"agreed": 0.30, "intersection+": 0.02, "intersection-": 0.01, "split": 0.05, "merge": 0.10},
              "turning": {"agreed": 0.30, "intersection+": 0.02, "intersection-": 0.01, "split": 0.095,
                          "merge": 0.10}}[case]
    spans = {"agreed": (0.03, 0.02), "intersection+": (0.004, 0.006), "intersection-": (0.002, 0.001),
             "split": (0.010, 0.015), "merge": (0.008, 0.012)}
    # each part's range far wider than its span: nothing cut
    parts = {k: _Part(totals[k], 0.0, totals[k] - 0.05, totals[k] + 0.05, 10, False, span=spans[k])
             for k in RECALL_STRATA}
    est, exact = lift_estimate(parts, method="test")
    assert not exact and est.value == pytest.approx(_lift(totals), rel=1e-12)
    corners = [_lift({k: totals[k] + (spans[k][1] if up else -spans[k][0]) for k, up in zip(RECALL_STRATA, ups)})
               for ups in itertools.product((False, True), repeat=len(RECALL_STRATA))]
    lo, hi = min(corners), max(corners)
    if case == "turning":
        assert lo < 0 < est.value
    for level in (0.95, 0.80):
        assert est.confidence_interval(level) == pytest.approx((lo, hi), rel=1e-12), level


# ----------------------------------------------------------------------------- 4. a truth sample that shows no spread
def _zero_events(share: float, n: float, level: float = 0.95) -> float:
    """Clopper–Pearson's two-sided upper bound for no event among ``n``, times ``share``."""
    return share * (1.0 - ((1.0 - level) / 2.0) ** (1.0 / n))


def test_a_mass_that_shows_no_spread_reaches_the_zero_events_bound_on_both_sides():
    """``MassInterval``: sampled entities that all lose the same share (``y > 0``, variance 0) put the
    missing mass in ``[fixed + max(y − b, 0), fixed + y + b]``, ``b`` the sampled weight share times
    ``1 − (α/2)^(1/n)``; the entities not sampled may lose less than the sample shows, as well as more."""
    from abcde.metrics.population import MassInterval

    for y, weight, n in ((0.03, 0.6, 400.0), (0.03, 0.6, 50.0), (0.0, 0.4, 25.0)):
        b = _zero_events(weight, n)
        got = MassInterval(0.01, y, 0.0, 0.01, weight=weight, entities=n).interval(0.95)
        assert got == pytest.approx((0.01 + max(y - b, 0.0), 0.01 + y + b), rel=1e-12), (y, weight, n)
        b80 = _zero_events(weight, n, 0.80)
        got = MassInterval(0.01, y, 0.0, 0.01, weight=weight, entities=n).interval(0.80)
        assert got == pytest.approx((0.01 + max(y - b80, 0.0), 0.01 + y + b80), rel=1e-12), (y, weight, n)
    assert 0.03 - _zero_events(0.6, 400.0) > 0 and 0.03 - _zero_events(0.6, 50.0) < 0  # both cases of the max


#: Six sampled entities (Poisson inclusion), one certain to be sampled (π = 1): their weights B_k.
TRUTH_B = np.array([1.0, 3.0, 2.0, 5.0, 1.5, 4.0])
TRUTH_PI = np.array([0.2, 0.5, 0.3, 1.0, 0.25, 0.6])


@pytest.mark.parametrize("kept", [(1.0, 1.0), (0.75, 0.5)])
def test_a_truth_sample_without_spread_bounds_precision_recall_and_f1_from_the_design(kept):
    """Every sampled entity keeps the same share of its weight (all of it: no loss; or 75% of its
    precision mass and 50% of its recall mass): the standard errors are 0, yet no entity's census. Each
    side's missing mass ``1 − value`` splits into the part of the entity certain to be sampled
    (``fixed``) and the rest (``y``, of weight share ``s = Σ_{π<1} B/π / Σ B/π``); the mass's interval
    is ``[fixed + max(y − b, 0), fixed + y + b]``, ``b = s·(1 − 0.025^(1/n))`` with Kish's
    ``n = (Σ_{π<1} B/π)² / Σ_{π<1} (B/π)²`` (not the 5 entities: their weights differ). Precision and
    Recall are 1 minus the mass; F1 = 2PR/(P + R) runs from F1 of their lower ends to F1 of their upper
    ends."""
    from abcde.metrics.population import estimate_population

    kp, kr = kept
    pop = estimate_population(TRUTH_B, {"exp": (kp * TRUTH_B, kr * TRUTH_B)}, inclusion=TRUTH_PI)
    x = TRUTH_B / TRUTH_PI
    sampled = TRUTH_PI < 1
    s = x[sampled].sum() / x.sum()
    n = x[sampled].sum() ** 2 / (x[sampled] ** 2).sum()
    assert abs(n - sampled.sum()) > 0.01
    b = _zero_events(s, n)
    ends = {}
    for m, k in (("precision", kp), ("recall", kr)):
        e = pop.sides["exp"][m]
        fixed, y = (1 - k) * (1 - s), (1 - k) * s
        lo_mass, hi_mass = fixed + max(y - b, 0.0), fixed + y + b
        assert e.value == pytest.approx(k, rel=1e-12) and e.standard_error == 0 and not e.exact
        ends[m] = e.confidence_interval()
        assert ends[m] == pytest.approx((1 - hi_mass, 1 - lo_mass), rel=1e-12), m

    def f1(p, r):
        return 2 * p * r / (p + r)

    e = pop.sides["exp"]["f1"]
    assert e.value == pytest.approx(f1(kp, kr), rel=1e-12) and e.standard_error == 0
    (pl, ph), (rl, rh) = ends["precision"], ends["recall"]
    assert e.confidence_interval() == pytest.approx((f1(pl, rl), f1(ph, rh)), rel=1e-12)


# ----------------------------------------------------------------------------- 5. model + people: the unseen pairs
def _hidden_by_hand(a, N: int, n: int, z: float) -> float:
    """How much of a group's unseen coefficients ``a`` the pairs of the answer its ``n`` people's pairs
    (of ``N``) never showed may carry: ``K`` the largest count, up to every unseen pair, with
    ``½·P(none of K seen) ≥ Φ(−z)`` (mid-p; ``P = C(N − K, n)/C(N, n)``), and their sum at most the ``K``
    largest, at most ``√((K·ā)² + (z·sd(a)·√(K·(1 − K/len(a))))²)``."""
    tail = 0.5 * math.erfc(z / math.sqrt(2))
    K = max(k for k in range(len(a) + 1) if 0.5 * math.comb(N - k, n) / math.comb(N, n) >= tail)
    if K == 0:
        return 0.0
    mean = math.fsum(a) / len(a)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in a) / len(a))
    spread = z * sd * math.sqrt(K * (1 - K / len(a)))
    return min(math.fsum(sorted(a, reverse=True)[:K]), math.sqrt((K * mean) ** 2 + spread ** 2))


def test_a_small_group_seen_without_an_error_may_hide_an_error_in_every_unseen_pair():
    """``_hidden`` where the hypergeometric bound reaches every unseen pair: a group of 3 pairs, 1 judged
    (no "different" seen), 2 unseen, each of which may be "different" (½·P(none of 2 seen) = 1/6 ≥ 2.5%):
    all of their 1 + 2; of 5 with 1 judged, all 4 unseen (½·1/5); of 12 with 4 judged, not all 8."""
    from abcde.quality.ppi import _hidden

    z = 1.959963984540054
    for a, N, n in (([1.0, 2.0], 3, 1), ([0.5, 1.0, 3.0, 0.25], 5, 1),
                    ([1.0, 2.0, 0.5, 1.5, 1.0, 1.0, 2.0, 0.7], 12, 4)):
        want = _hidden_by_hand(a, N, n, z)
        assert _hidden(np.array(a), N, n, z) == pytest.approx(want, rel=1e-12), (a, N, n)
    assert _hidden_by_hand([1.0, 2.0], 3, 1, z) == 3.0 and _hidden_by_hand([0.5, 1.0, 3.0, 0.25], 5, 1, z) == 4.75


def test_a_census_group_people_did_not_judge_may_be_all_either_answer():
    """A census stratum of 12 pairs of weight 1 (``ppi_census_total``): the model says "same" to 6 (people
    judged 4, all "same"), "different" to 3 (people judged 2, both "different"), and gave no answer to 3
    that no person judged. The interval's distances from the estimate (``Unseen.distances``): below,
    ``z·√ivar`` and the "different" pairs the first group's 2 unseen may hide, in quadrature; above,
    ``z·√ivar``, the "same" the second group's 1 unseen may hide, and the third group's 3 pairs whole
    (any answer: nothing bounds them), in quadrature; the third group's pairs whole below too."""
    from abcde.quality.ppi import MODEL_MISSING, ppi_census_total

    P = 12
    model = np.array([1.0] * 6 + [0.0] * 3 + [MODEL_MISSING] * 3)
    truth = np.array([1.0] * 6 + [0.0] * 3 + [1.0, 0.0, 1.0])
    labeled = np.zeros(P, dtype=bool)
    labeled[[0, 1, 2, 3, 6, 7]] = True
    people = np.where(labeled, truth, np.nan)
    part = ppi_census_total(np.ones(P), np.nan_to_num(people), model, labeled, answers=people,
                            pairs=np.array([f"q{k}" for k in range(P)], dtype=object))
    (u,) = part.unseen
    assert u.groups == ((6, 4, 4, (1.0, 1.0)), (3, 2, 0, (1.0,)), (3, 0, 0, (1.0, 1.0, 1.0)))
    for z in (1.96, 2.5):
        wald2 = z * z * part.ivar
        down = math.sqrt(wald2 + _hidden_by_hand([1.0, 1.0], 6, 4, z) ** 2 + 3.0 ** 2)
        up = math.sqrt(wald2 + _hidden_by_hand([1.0], 3, 2, z) ** 2 + 3.0 ** 2)
        assert u.distances(z) == pytest.approx((down, up), rel=1e-12), z



def test_a_residual_variance_of_rounding_size_is_none():
    """``ppi._varies``: a residual variance is one only above 1e-20 of the values' mean square (a λ tuned
    to 1 − 1e-16 on agreeing answers leaves a variance of about 1e-33: no variance, the floor stands);
    relative, so values of any scale keep a real variance; NaN, 0 and no values are none."""
    from abcde.quality.ppi import _varies

    ones, small = np.ones(6), np.full(6, 1e-6)  # mean squares 1 and 1e-12: thresholds 1e-20 and 1e-32
    assert not _varies(1e-33, ones) and not _varies(1e-21, ones) and _varies(1e-19, ones)
    assert _varies(1e-31, small) and not _varies(1e-33, small)
    assert not _varies(0.0, ones) and not _varies(math.nan, ones) and not _varies(1.0, np.array([]))


# ----------------------------------------------------------------------------- 6. slices: significance, no spread
@pytest.mark.parametrize("est,lo,hi,se,n", [
    (0.10, 0.01, 0.20, 0.05, 3),  # few judgements: Student t on 2 degrees of freedom, the low side
    (-0.1087, -0.1459, 0.0104, 0.0, 300),  # the nsw: SE 0 beside an interval that crosses 0
    (-0.05, -0.09, -0.002, 0.001, 40),  # the high side, towards 0
    (0.02, 0.005, 0.08, 0.0, 1),  # one judgement: the normal quantile
])
def test_a_slices_p_value_is_its_intervals_own(est, lo, hi, se, n):
    """``slice_p_value``: the standard error is the interval's reach from the estimate towards 0 over the
    97.5% quantile (Student t on n − 1 degrees of freedom; normal below two), whatever ``std_err`` says,
    and p = 2·P(T > |estimate|/SE)."""
    from abcde.quality.verdict import slice_p_value

    half = est - lo if est > 0 else hi - est
    if n >= 2:
        want = 2 * student_t.sf(abs(est) / (half / student_t.ppf(0.975, n - 1)), n - 1)
    else:
        want = 2 * normal.sf(abs(est) / (half / normal.ppf(0.975)))
    got = slice_p_value({"estimate": est, "ci_low": lo, "ci_high": hi, "std_err": se, "n_judgements": n})
    assert got == pytest.approx(float(want), rel=1e-9)
    assert (got < 0.05) == (lo > 0 or hi < 0)


@pytest.mark.parametrize("answer", ["same", "different"])
def test_a_slice_whose_draws_show_no_spread_is_its_feasible_range(answer):
    """A sampled merge stratum (U = 0.08) of four judged draws, all "same" with red vantage items (the red
    slice's draws all 1), or all "different", two red and two blue (each slice's draws all 0): standard
    errors 0. Nothing seen rules out any value of a slice's range ``[0, pairweight(I)]`` (the merge
    stratum's terms are ≥ 0), so that range is the interval of its contribution and, times ``W/w(I)``, of
    its ΔPrecision, and the note says why; a slice of self pairs only is exact, a point."""
    import json

    import pyarrow as pa

    from abcde.quality.stratified import estimate_stratified_slices
    from abcde.sampling.stratified import StratifiedSample

    ends = [(0, 1), (2, 3), (5, 4), (6, 7)] if answer == "same" else [(0, 1), (1, 3), (5, 4), (3, 7)]
    rows = [{"draw": k, "item_a": a, "item_b": b, "class": "merge", "is_self": False, "label": 1,
             "pair_id": f"m{k}", "needs_judgement": True} for k, (a, b) in enumerate(ends)]
    t = pa.Table.from_pylist(rows)
    empty = t.slice(0, 0)
    U = 0.08
    sample = StratifiedSample({"split": empty, "merge": t, "intersection+": empty, "intersection-": empty},
                              {"split": 0.0, "merge": U, "intersection+": 0.0, "intersection-": 0.0}, 0.0,
                              {"split": 0, "merge": 4, "intersection+": 0, "intersection-": 0}, "proportional",
                              frozenset())
    vantage = {i: json.dumps(c) for i, c in SLICE_COLOUR.items()}
    W = 10.0
    mult = {json.dumps("red"): (4.0, 0.5), json.dumps("blue"): (4.0, 0.3), json.dumps("green"): (2.0, 0.1)}
    self_terms = {json.dumps("green"): (0.1, 0.1)}
    got = {r["value"]: r for r in estimate_stratified_slices(sample, {f"m{k}": answer for k in range(4)}, vantage,
                                                             mult, self_terms, total_weight=W)}
    blind = {"red": U} if answer == "same" else {"red": 0.0, "blue": 0.0}
    for value, est in blind.items():
        w_i, pw = mult[json.dumps(value)]
        c, dp = got[value]["delta_precision_contribution"], got[value]["delta_precision"]
        assert c["estimate"] == pytest.approx(est, rel=1e-12, abs=1e-15) and c["std_err"] == 0.0
        assert (c["ci_low"], c["ci_high"]) == pytest.approx((0.0, pw), rel=1e-12, abs=1e-15), value
        assert (dp["ci_low"], dp["ci_high"]) == pytest.approx((0.0, W / w_i * pw), rel=1e-12, abs=1e-15), value
        assert "no spread" in c["note"] and "no spread" in dp["note"]
    g = got["green"]["delta_precision_contribution"]
    assert g["estimate"] == g["ci_low"] == g["ci_high"] == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize("unsure", [False, True])
def test_a_slice_of_census_strata_judged_whole_is_its_estimate_with_the_unsure_span(unsure):
    """Every stratum a census, every pair answered: the slice's contribution is known, so its interval is
    the point (its strata judged whole), or the estimate with its unsure pairs' span; never its whole
    feasible range, which the "no spread" rule gave it (found by the issue-51 mutation review)."""
    import json

    from abcde.quality.stratified import estimate_stratified_slices

    sample, vantage = _slice_sample()
    answers = {p: "same" for p, _, _, _ in SLICE_PAIRS}
    answers["p1"] = "different"
    if unsure:
        answers["p5"] = "unsure"
    h = {p: ((SLICE_COLOUR[a] == "red") + (SLICE_COLOUR[b] == "red")) / 2 for p, a, b, _ in SLICE_PAIRS}
    w = {p: x for p, _, _, x in SLICE_PAIRS}
    (row,) = estimate_stratified_slices(sample, answers, vantage, {json.dumps("red"): (4.0, 1.0)},
                                        {json.dumps("red"): (0.0, 0.0)}, total_weight=10.0)
    got = row["delta_precision_contribution"]
    assert "no spread" not in (got.get("note") or "")
    if not unsure:
        want = math.fsum(w[p] * h[p] * (answers[p] == "same") for p in w)
        assert got["estimate"] == pytest.approx(want, rel=1e-12)
        assert got["ci_low"] == got["ci_high"] == pytest.approx(want, rel=1e-12)
    else:
        assert got["ci_low"] <= got["estimate"] <= got["ci_high"] and got["ci_high"] - got["ci_low"] < 0.2
        # the unsure pair (weight 0.012, one end red) could be either answer: the interval reaches both
        judged = [p for p in w if answers[p] in ("same", "different")]
        base = math.fsum(w[p] * h[p] * (answers[p] == "same") for p in judged)
        assert got["ci_low"] <= base + 1e-12 and got["ci_high"] >= base + w["p5"] * h["p5"] - 1e-12
