"""Model + people estimates with a nearly perfect model and census strata (issue 51, item 3).

People's 150 tasks are drawn at random from the 300 pairs of each sample (``pairs --human-budget``),
the merge and split strata are censuses, and a model of 95–99.5% accuracy judges every pair. Its
errors are then a handful of fixed pairs, and the people's pairs often hold none of them (or none
of one kind). Two things made the intervals miss, always on the side of the errors not seen:

* the cross-fitted λ came out 1 − 1e-16 on answers that all agree, so the residuals "varied" by
  1e-16 and a variance of 1e-33 stood in for the floor: the Good Merge rate's interval was a point
  in 23% of samples (world 13, a 99% model);
* a residual variance (or its floor) is symmetric and says nothing of the model's errors among the
  pairs people did not judge: where none was seen, the interval lay wholly below the truth.

The interval now adds, for each group of a census stratum's pairs by the model's answer whose
people's pairs were all one answer, as many pairs of the other answer as the hypergeometric
distribution leaves among its unseen pairs (:class:`abcde.quality.ppi.Unseen`).

Before, on these 300 samples: the Good Merge rate covered 87%, 86%, 73%, 73% in world 13 (95%, 98%,
99%, 99.5% models) and 83%, 83%, 83%, 100% in world 21, the Good Split rate 67% in world 21 (95%),
ΔPrecision 92% in world 21 (98%, 99%) and 77% in world 15 of the "merges" family (99%, another model).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ACCURACIES = (0.95, 0.98, 0.99, 0.995)
METRICS = ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate")


def simulate(seed: int, kind: str, samples: int, accuracies=ACCURACIES, salt: str = "m"):
    """A simulated world's true metrics and, per model accuracy, per metric, each sample's
    ``(estimate, ci_low, ci_high, range)``: samples of 300 pairs, people's tasks a random 150 of them
    (their judgements the truth's), the model's answers the truth's flipped with probability
    1 − accuracy (fixed per pair: the same model in every sample). Returns ``(truth, census, runs)``."""
    from test_ppi import _model, _tasks, _uniforms
    from test_quality import dicts, truth_metrics
    from test_recall_lift import _judge, sim_world

    from abcde.core.diff import build_diff
    from abcde.core.inputs import Inputs
    from abcde.metrics.impact import overall
    from abcde.quality.combined import combined_stratified
    from abcde.sampling.stratified import sample_stratified_many

    base, exp, items = sim_world(seed, kind)
    b, e, w, t = dicts(base, exp, items)
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    truth = truth_metrics(b, e, w, t)
    runs = {a: {m: [] for m in METRICS} for a in accuracies}
    census = set()
    for k, ss in enumerate(sample_stratified_many(d, budget=300, seeds=range(samples), total_weight=o["total_weight"],
                                                  batch=100)):
        census |= set(ss.census)
        true = _judge(ss, t)
        tasks, _ = _tasks(ss, k, 150)
        people = {p: v for p, v in true.items() if p in tasks}
        u = _uniforms(true, salt)
        for a in accuracies:
            r = combined_stratified(ss, people, _model(true, accuracy=a, uniforms=u), tasks,
                                    split_rate=o["split_rate"], merge_rate=o["merge_rate"])
            for m in METRICS:
                est = getattr(r, m)
                runs[a][m].append((est.value, *est.confidence_interval(), est.bounds))
    return truth, census, runs


def failures(truth: dict, runs: dict, *, coverage: float = 0.93) -> list[str]:
    """What fails of: 95% intervals cover at least ``coverage``; the mean within 3 Monte Carlo SEs of
    the truth; no interval is a point unless the range is (a rate of 0: nothing unseen can change it;
    no sample here has every pair of a stratum judged).

    An estimate is cut to the metric's range (issue 38: never further from the truth), so where the
    truth is at or near an end of it and some samples' estimates were cut there, their mean moves
    inwards (a Good Split rate of 0.07% with a quarter of its estimates cut to 0 came out +3.8 SEs
    high): those are held to coverage only."""
    out = []
    for a, by_metric in runs.items():
        for m, rows in by_metric.items():
            v = np.array([r[0] for r in rows])
            lo = np.array([r[1] for r in rows])
            hi = np.array([r[2] for r in rows])
            bounds = rows[0][3]
            tr = truth[m]
            cover = float(np.mean((lo <= tr + 1e-12) & (tr - 1e-12 <= hi)))
            if cover < coverage:
                out.append(f"{a} {m}: coverage {cover:.3f} (truth {tr:.5f})")
            cut = bounds is not None and bool(np.any((v <= bounds[0] + 1e-15) | (v >= bounds[1] - 1e-15)))
            sd = float(v.std(ddof=1))
            if not cut and abs(v.mean() - tr) > 3 * sd / math.sqrt(len(v)) + 1e-12:
                out.append(f"{a} {m}: mean {v.mean():.6f}, truth {tr:.6f}, {(v.mean() - tr) / (sd / math.sqrt(len(v))):+.2f} SEs")
            points = int(np.sum(hi - lo <= 0.0))
            if points and not (bounds is not None and bounds[0] == bounds[1]):
                out.append(f"{a} {m}: {points} point intervals")
    return out


@pytest.mark.parametrize("seed", [13, 21])
def test_nearly_perfect_models_with_census_strata_cover_without_bias_or_points(seed):
    """The issue's worlds, 300 samples per model (about 15 s each): world 13 has a census merge
    stratum of 65 pairs (a 99% model errs on one of them), world 21 census merge, split and
    intersection+ strata. Every metric of every model covers at least 93%, its mean within 3 Monte
    Carlo SEs of the truth, no interval a point."""
    truth, census, runs = simulate(seed, "both", 300)
    assert {"merge", "split"} <= census
    bad = failures(truth, runs)
    assert not bad, "\n".join(bad)


@pytest.mark.slow
# Three of the seven census worlds and one model realisation each: the suite's time budget (all 21 passed
# when measured, about 7 minutes on one core; run the rest by widening these two lists).
@pytest.mark.parametrize("world", ["7:both", "23:both", "15:merges"])
@pytest.mark.parametrize("salt", ["m"])
def test_nearly_perfect_models_cover_in_more_worlds_and_models(world, salt):
    """More worlds whose merge stratum (and split stratum, where there is one) is a census, three
    models per accuracy (other pairs wrong), 300 samples each."""
    seed, kind = world.split(":")
    truth, census, runs = simulate(int(seed), kind, 300, salt=salt)
    assert "merge" in census
    bad = failures(truth, runs)
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------- the pieces
def test_a_group_seen_without_an_error_may_hide_as_many_as_the_hypergeometric_distribution_leaves():
    """``_hidden``: 30 of a group's 60 pairs judged, none of one answer; the unseen 30 may hold K of
    it while ½·P(none of K seen) ≥ Φ(−z) (mid-p), each pair weighing 1 here."""
    from abcde.quality.ppi import _hidden

    z = 1.96
    tail = 0.5 * math.erfc(z / math.sqrt(2))
    want = max(K for K in range(31) if 0.5 * math.comb(60 - K, 30) / math.comb(60, 30) >= tail)
    assert want == 4
    assert _hidden(np.ones(30), 60, 30, z) == pytest.approx(want, rel=1e-12)
    # never more than the K heaviest, and K times the mean with the spread of a subset of K
    a = np.array([5.0, 1.0] + [1.0] * 28)
    got = _hidden(a, 60, 30, z)
    spread = z * a.std() * math.sqrt(want * (1 - want / 30))
    assert got == pytest.approx(min(5.0 + 3.0, math.sqrt((want * a.mean()) ** 2 + spread ** 2)), rel=1e-12)
    # all of a group's pairs judged: nothing hides
    assert _hidden(np.ones(0), 30, 30, z) == 0.0


def test_a_census_stratum_whose_people_pairs_all_agree_with_the_model_leaves_room_for_its_errors():
    """A census stratum of 60 pairs of weight 1: the model says "same" to 50 (two of them are
    "different"), "different" to 10; people judge 30 pairs, the two errors not among them. The
    residual does not vary: before, its interval was the floor's, far too narrow to hold the two
    unseen errors. Now the model's "same" group (25 judged, all "same") may hide the hypergeometric
    bound of "different" pairs below the estimate, and nothing above it from that group; its
    "different" group (5 judged, all "different") may hide "same" pairs above."""
    from abcde.quality.ppi import Unseen, _hidden, ppi_census_total

    P = 60
    truth = np.ones(P)
    truth[50:] = 0.0  # the model's "different" pairs are "different"
    truth[[48, 49]] = 0.0  # two of its "same" are not
    model = np.where(np.arange(P) < 50, 1.0, 0.0)
    labeled = np.zeros(P, dtype=bool)
    labeled[list(range(0, 25)) + list(range(50, 55))] = True
    w = np.ones(P)
    people = np.where(labeled, truth, np.nan)
    part = ppi_census_total(w, np.nan_to_num(people), model, labeled, answers=people,
                            pairs=np.array([f"p{k}" for k in range(P)], dtype=object))
    assert part.value == pytest.approx(50.0)  # the model's total: no error seen
    (u,) = part.unseen
    assert u.groups == ((50, 25, 25, tuple([1.0] * 25)), (10, 5, 0, tuple([1.0] * 5)))
    z = 2.0
    down, up = u.distances(z)
    wald2 = z * z * part.ivar
    assert down == pytest.approx(math.sqrt(wald2 + _hidden(np.ones(25), 50, 25, z) ** 2), rel=1e-12)
    assert up == pytest.approx(math.sqrt(wald2 + _hidden(np.ones(5), 10, 5, z) ** 2), rel=1e-12)
    assert part.value - down <= truth.sum() <= part.value + up
    # the same for a total that counts "same" negatively (a label of −1): the sides swap
    neg = ppi_census_total(w, -np.nan_to_num(people), -model, labeled, answers=people, coef=-np.ones(P),
                           pairs=np.array([f"p{k}" for k in range(P)], dtype=object))
    assert neg.unseen[0].distances(z) == pytest.approx((up, down), rel=1e-12)
    # scaled to a share, and to a flipped rate's −rate/W
    assert Unseen(u.groups, u.ivar, -0.5 / P).distances(z) == pytest.approx((0.5 * up / P, 0.5 * down / P), rel=1e-12)


def test_a_lambda_of_one_up_to_rounding_leaves_the_floor_under_the_interval():
    """The residuals of answers that all agree, with λ = 1 − 1e-16, vary by about 1e-16: that is no
    variance, and the interval keeps its floor (a variance of 1e-33 made it a point)."""
    from abcde.quality.ppi import ppi_census_total

    P = 40
    y = np.ones(P)
    y[30:] = 0.0
    labeled = np.arange(P) % 2 == 0
    f = y.copy()
    lam = 1.0 - 1e-16
    part = ppi_census_total(np.ones(P), y, f, labeled, lam=lam)
    exact = ppi_census_total(np.ones(P), y, f, labeled, lam=1.0)
    assert part.var < 1e-20
    assert part.ivar == pytest.approx(exact.ivar, rel=1e-9) and exact.ivar > 1e-3


def test_delta_precision_and_its_rates_answer_each_level_with_their_own_interval():
    """ΔPrecision and a rate of a census stratum: the interval at 80% inside the one at 95%, inside
    the one at 99%, and ``centre ± q·interval_se`` (what Precision = 1 + ΔPrecision reads) its 95%
    interval."""
    from test_ppi import _model, _tasks
    from test_quality import dicts
    from test_recall_lift import _judge, sim_world

    from abcde.core.diff import build_diff
    from abcde.core.inputs import Inputs
    from abcde.metrics.impact import overall
    from abcde.quality.combined import combined_stratified
    from abcde.quality.result import quantile
    from abcde.sampling.stratified import sample_stratified_many

    base, exp, items = sim_world(13, "both")
    t = dicts(base, exp, items)[3]
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    ss = next(iter(sample_stratified_many(d, budget=300, seeds=range(1), total_weight=o["total_weight"], batch=1)))
    true = _judge(ss, t)
    tasks, _ = _tasks(ss, 0, 150)
    r = combined_stratified(ss, {p: v for p, v in true.items() if p in tasks}, _model(true, accuracy=0.99), tasks,
                            split_rate=o["split_rate"], merge_rate=o["merge_rate"])
    for e in (r.delta_precision, r.good_merge_rate, r.bad_merge_rate):
        assert e.interval_of is not None
        (a, b), (c, dd), (g, h) = (e.confidence_interval(x) for x in (0.80, 0.95, 0.99))
        assert c < a < b < dd and g < c and dd < h, (e.metric, a, b, c, dd, g, h)
        q = quantile(e.n_judgements, 0.95)
        assert (e.centre - q * e.interval_se, e.centre + q * e.interval_se) == pytest.approx((c, dd), rel=1e-9)
