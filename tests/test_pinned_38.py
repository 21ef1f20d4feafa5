"""Code no test pinned yet (issue 38, section 6): each test here fails on a plausible bug an
independent mutation review planted and the suite let pass (``tests/mutation/mutants.py`` holds each
bug, with this file as its killer; ``tests/mutation/run.py --only ID`` proves it is killed).

- people + a model (:mod:`abcde.quality.combined`): a person's "unsure" counted as a judged
  "different"; the Good/Bad rates' intervals cut to [0, 1] instead of [0, the exact rate];
- prediction-powered means (:mod:`abcde.quality.ppi`): λ tuned on the same pairs it corrects instead
  of cross-fitted, or the variance between cells dropped — exact formulas with several cells and
  cross-fitted λ, written out below from the module's docstring (no simulation needed);
- the next step of a model + people result (:func:`abcde.quality.verdict._more_pairs`) without its
  finite-population correction;
- the Neyman pilot's σ of intersection+ and intersection− swapped (``pilot_sigmas_from_dir``);
- the exploration sample's examples drawn ∝ draw count instead of ∝ the item weight w(i).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pyarrow as pa
import pytest

from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.quality import draw_pair_sample, oracle_judge
from abcde.quality.combined import combined_paper, combined_stratified
from abcde.quality.draw import pilot_sigmas_from_dir
from abcde.quality.ppi import ppi_census_total, ppi_mean
from abcde.samples.sample_dir import PairSampleDir
from abcde.sampling.stratified import sample_stratified
from abcde.quality.stratified import estimate_stratified
from abcde.quality.paper import estimate_from_draws
from abcde.quality.verdict import _more_pairs
from abcde.sampling.explore import ExplorationSample
from abcde.sampling.pairs import sample_pairs
from test_quality import dicts, world

RATES = ("good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate")
SIGNED = ("split", "merge", "intersection+", "intersection-")


@pytest.fixture(scope="module")
def judged_world():
    """world(150): a stratified sample of 300 and a paper sample of 300, each judged by the truth."""
    base, exp, items = world(150, seed=0)
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    _, _, _, t = dicts(base, exp, items)
    ss = sample_stratified(d, budget=300, seed=4, total_weight=o["total_weight"])
    ps = sample_pairs(d, budget=300, seed=4, total_weight=o["total_weight"])

    def truth(draws):
        return {p: "same" if t[a] == t[b] else "different" for p, a, b in zip(
            draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(),
            draws.column("item_b").to_pylist())}

    strat = {}
    for c in SIGNED:
        strat.update(truth(ss.draws[c]))
    return {"o": o, "ss": ss, "ps": ps, "strat": strat, "paper": truth(ps.draws)}


def _answers(truth: dict, rng, *, unsure: float = 0.0, accuracy: float = 1.0) -> dict:
    """Answers to ``truth`` (in pair order, so one rng gives one set): each flipped with probability
    1 − accuracy, then "unsure" with probability ``unsure``."""
    out = {}
    for p in sorted(truth):
        a = truth[p]
        if rng.random() > accuracy:
            a = "different" if a == "same" else "same"
        out[p] = "unsure" if rng.random() < unsure else a
    return out


# ----------------------------------------------------------------------------- people's "unsure"
def test_a_persons_unsure_is_left_out_not_counted_different(judged_world):
    """People answer "unsure" on 15% of the pairs: with λ = 0 the estimate is exactly the people-only
    estimator's on the same answers (which leaves unsure out); with λ tuned, an unsure answer is as if
    the person had given none (both designs)."""
    w = judged_world
    o, ss, ps = w["o"], w["ss"], w["ps"]
    rng = np.random.default_rng(38)
    kw = dict(split_rate=o["split_rate"], merge_rate=o["merge_rate"])
    people = _answers(w["strat"], rng, unsure=0.15)
    model = _answers(w["strat"], rng, accuracy=0.8)
    assert 0.1 < sum(v == "unsure" for v in people.values()) / len(people) < 0.2
    zero = combined_stratified(ss, people, model, None, lam=0, **kw)
    alone = estimate_stratified(ss, people, **kw)
    for m in ("delta_precision", *RATES):
        assert getattr(zero, m).value == pytest.approx(getattr(alone, m).value, rel=1e-12, abs=1e-15), m
    none = {p: a for p, a in people.items() if a != "unsure"}
    for lam in (None, 0.6):
        a = combined_stratified(ss, people, model, None, lam=lam, **kw)
        b = combined_stratified(ss, none, model, None, lam=lam, **kw)
        for m in ("delta_precision", *RATES):
            ea, eb = getattr(a, m), getattr(b, m)
            assert (ea.value, ea.standard_error) == pytest.approx((eb.value, eb.standard_error), rel=1e-12), (lam, m)
    # the paper's design: the same on its draws
    people_p = _answers(w["paper"], rng, unsure=0.15)
    model_p = _answers(w["paper"], rng, accuracy=0.8)
    zero = combined_paper(ps.draws, people_p, model_p, None, ps.totals, o["split_rate"], o["merge_rate"], lam=0)
    alone = estimate_from_draws(ps.draws, people_p, ps.totals, o["split_rate"], o["merge_rate"])
    for m in RATES:  # each class's people's share (ΔPrecision is post-stratified by class here, not there)
        assert getattr(zero, m).value == pytest.approx(getattr(alone, m).value, rel=1e-12, abs=1e-15), m
    none_p = {p: a for p, a in people_p.items() if a != "unsure"}
    a = combined_paper(ps.draws, people_p, model_p, None, ps.totals, o["split_rate"], o["merge_rate"])
    b = combined_paper(ps.draws, none_p, model_p, None, ps.totals, o["split_rate"], o["merge_rate"])
    for m in ("delta_precision", *RATES):
        assert getattr(a, m).value == pytest.approx(getattr(b, m).value, rel=1e-12, abs=1e-15), m


# ----------------------------------------------------------------------------- rates' range
def test_people_and_model_rate_intervals_stay_inside_0_and_the_rate(judged_world):
    """Every split pair judged a good split (different) by people and model: GoodSplitRate is the
    whole SplitRate and BadSplitRate 0, each interval with width (a floor when nothing varies) but
    cut to [0, SplitRate], not to [0, 1]; likewise the merge rates with every merge pair judged good."""
    w = judged_world
    o, ss = w["o"], w["ss"]
    split = set(ss.draws["split"].column("pair_id").to_pylist())
    merge = set(ss.draws["merge"].column("pair_id").to_pylist())
    answers = {p: ("different" if p in split else "same" if p in merge else a) for p, a in w["strat"].items()}
    tasks = frozenset(sorted(answers)[::3])
    q = combined_stratified(ss, {p: answers[p] for p in tasks}, answers, tasks, split_rate=o["split_rate"],
                            merge_rate=o["merge_rate"]).to_dict()
    for good, bad, rate in (("good_split_rate", "bad_split_rate", o["split_rate"]),
                            ("good_merge_rate", "bad_merge_rate", o["merge_rate"])):
        g, b = q[good], q[bad]
        assert g["estimate"] == pytest.approx(rate, rel=1e-12) and b["estimate"] == pytest.approx(0.0, abs=1e-15)
        assert g["range"] == [0.0, pytest.approx(rate)] and b["range"] == [0.0, pytest.approx(rate)]
        assert g["ci_low"] < rate and g["ci_high"] == pytest.approx(rate, rel=1e-12)  # width, cut at the rate
        assert b["ci_low"] == 0.0 and 0 < b["ci_high"] < rate


# ----------------------------------------------------------------------------- λ cross-fitted, cells
def fold(pair) -> int:
    """Each pair's fold, as the module's docstring fixes it: the first bit of sha256("abcde.fold|id")."""
    return hashlib.sha256(f"abcde.fold|{pair}".encode()).digest()[0] & 1


def lam_on(y, f) -> float:
    """Cov(y, f)/Var(f) (ddof 1 both), clipped to [0, 1]."""
    y, f = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    return min(max(float(((y - y.mean()) * (f - f.mean())).sum() / ((f - f.mean()) ** 2).sum()), 0.0), 1.0)


def jeffreys(y) -> float:
    p = (float(np.abs(y).sum()) + 0.5) / (len(y) + 1.0)
    return p * (1.0 - p)


def ppi_by_hand(groups, y, f, labeled):
    """The post-stratified, cross-fitted prediction-powered mean of ``y`` (draw k is pair k), its
    variance and its interval's variance, from abcde.quality.ppi's docstrings: per group g with
    ``N_g`` draws and its labeled draws in two folds, fold k's λ tuned on the other fold, fold k's own
    ``N_gk`` draws (its people's a sample of them),
    ``θ_g = Σ_k N_gk/N_g·(mean_k(y) + λ_{−k}·(mean_{g,k}(f) − mean_k(f)))``, ``θ = Σ_g N_g/N·θ_g``;
    ``Var = (Σ_g N_g/N·s²_g(y) + Σ_g N_g/N·(θ_g − θ)²)/N + Σ_g (N_g/N)²·(1 − n_g/N_g)·s²_g(r)/n_g``
    (the draws' within- and between-group variance, and each group's people's subsample), r the
    residual y − λ·f."""
    groups, y, f, labeled = (np.asarray(x) for x in (groups, y, f, labeled))
    N = len(groups)
    folds = np.array([fold(k) for k in range(N)])
    parts = []
    for g in dict.fromkeys(groups.tolist()):
        in_g = groups == g
        L = np.flatnonzero(in_g & labeled)
        n = len(L)
        theta, r = 0.0, []
        for k in (0, 1):
            mine, other = L[folds[L] == k], L[folds[L] != k]
            lk = lam_on(y[other], f[other])
            own = in_g & (folds == k)
            theta += own.sum() / in_g.sum() * (y[mine].mean() + lk * (f[own].mean() - f[mine].mean()))
            r += list(y[mine] - lk * f[mine])
        parts.append((in_g.sum() / N, theta, n, in_g.sum(), y[L], np.array(r)))
    value = sum(s * t for s, t, *_ in parts)
    within = sum(s * yl.var(ddof=1) for s, _, _, _, yl, _ in parts)
    between = sum(s * (t - value) ** 2 for s, t, *_ in parts)
    second = sum(s * s * (1 - n / Ng) * r.var(ddof=1) / n for s, _, n, Ng, _, r in parts)
    iwithin = sum(s * max(yl.var(ddof=1), jeffreys(yl)) for s, _, _, _, yl, _ in parts)
    return value, (within + between) / N + second, (iwithin + between) / N + second


def test_cross_fitted_lambda_over_several_cells_is_its_formula():
    """Three cells of different means (a between-cells variance), people's judgements on a third of
    the draws, a model right 80% of the time: value, variance and the interval's variance are the
    formula's at 1e-12, λ of each fold tuned on the other fold."""
    rng = np.random.default_rng(7)
    N = 240
    groups = np.repeat(np.array(["split", "merge", "intersection"]), N // 3)
    p = {"split": 0.2, "merge": 0.85, "intersection": 0.6}
    y = np.array([float(rng.random() < p[g]) for g in groups]) * np.where(groups == "split", -1.0, 1.0)
    f = np.where(rng.random(N) < 0.8, y, np.where(groups == "split", -1.0, 1.0) - y)
    labeled = rng.random(N) < 1 / 3
    got = ppi_mean(groups, y, f, labeled)
    want = ppi_by_hand(groups, y, f, labeled)
    assert (got.value, got.var, got.ivar) == pytest.approx(want, rel=1e-12)
    assert set(got.lambdas) == set(p) and all(0 <= v <= 1 for v in got.lambdas.values())


def test_cross_fitted_lambda_of_a_census_stratum_is_its_formula():
    """A census stratum (every pair listed once with its weight; people judge a random 40%): each fold
    of pairs its own total, ``Σ_k (λ_{−k}·Σ_k w·f + W_k·Σ_{L_k} w·(y − λ_{−k}·f)/Σ_{L_k} w)``, each
    fold's λ tuned on the other fold, at 1e-12."""
    rng = np.random.default_rng(11)
    P = 90
    w = rng.uniform(0.001, 0.02, P)
    y = (rng.random(P) < 0.7).astype(float)
    f = np.where(rng.random(P) < 0.85, y, 1 - y)
    labeled = rng.random(P) < 0.4
    pairs = np.array([f"p{k}" for k in range(P)], dtype=object)
    got = ppi_census_total(w, y, f, labeled, pairs=pairs)
    L = np.flatnonzero(labeled)
    folds = np.array([fold(pairs[k]) for k in L])
    every = np.array([fold(x) for x in pairs])
    want = 0.0
    for k in (0, 1):
        mine, other = L[folds == k], L[folds != k]
        lk = lam_on(y[other], f[other])
        own = every == k
        want += lk * (w[own] * f[own]).sum() + w[own].sum() * (w[mine] * (y[mine] - lk * f[mine])).sum() / w[mine].sum()
    assert got.value == pytest.approx(want, rel=1e-12)


def test_between_cells_variance_counts_when_the_cells_are_the_models_answers():
    """People's tasks chosen by the model's answers (cells, λ = 0, ``floor_each=False``): every cell's
    people all agree (nothing varies within a cell) but the cells' means differ, so the whole variance
    is the cells' spread: ``Σ_c W_c·(θ_c − θ)²/N``."""
    groups = np.array(["said same"] * 60 + ["said different"] * 40)
    y = np.array([1.0] * 60 + [0.0] * 40)
    labeled = np.zeros(100, dtype=bool)
    labeled[::5] = True
    got = ppi_mean(groups, y, np.zeros(100), labeled, lam=0.0, floor_each=False)
    assert got.value == pytest.approx(0.6, rel=1e-12)
    assert got.var == pytest.approx((0.6 * 0.4 ** 2 + 0.4 * 0.6 ** 2) / 100, rel=1e-12)
    assert got.ivar == pytest.approx(got.var, rel=1e-12)


# ----------------------------------------------------------------------------- the next step
def test_next_step_of_model_and_people_uses_the_finite_population_correction():
    """50 people's judgements of 1,000 drawn pairs, the interval 10 times too wide: the people's
    part of the variance shrinks as (1/n − 1/N), so 841 people's judgements are needed (not the
    5,000 of a simple 1/n), among the pairs already drawn."""
    q = {"judged_pairs": 50, "design": {"ppi": {"people_judgements": 50, "pairs": 1000}, "budget": 1000}}
    more = _more_pairs(q, 0.1, 0.01)
    assert more["pairs_needed"] == math.ceil(1 / ((1 / 50 - 1 / 1000) * 0.01 + 1 / 1000)) == 841
    assert more["human_budget"] == 841 and more["more_pairs"] == 791 and more["budget"] == 1000
    assert more["people"] is True


# ----------------------------------------------------------------------------- Neyman's pilot
def test_pilot_sigmas_are_each_strata_own(tmp_path):
    """The σ a Neyman allocation reads from a judged pilot, per stratum, from the stratum's own
    draws: ``l·1(i ≡ j)``'s standard deviation, at least 1/√(n + 1); intersection+ and intersection−
    differ here, so swapping them shows."""
    base, exp, items = world(150, seed=0)
    out = draw_pair_sample(base, exp, tmp_path / "pilot", items=items, budget=200, seed=3)
    oracle_judge(out, "entity")
    s = PairSampleDir.read(out)
    ent = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
    d = s.draws.to_pylist()
    want = {}
    for c in SIGNED:
        x = np.array([r["label"] * (ent[r["item_a"]] == ent[r["item_b"]]) for r in d if r["stratum"] == c], float)
        want[c] = max(float(x.std(ddof=1)) if len(x) > 1 else 0.0, 1 / math.sqrt(len(x) + 1))
    got = pilot_sigmas_from_dir(out)
    assert {c: got[c] for c in SIGNED} == pytest.approx(want, rel=1e-12)
    assert abs(want["intersection+"] - want["intersection-"]) > 1e-3


# ----------------------------------------------------------------------------- exploration examples
def test_exploration_examples_are_drawn_in_proportion_to_the_item_weight():
    """``examples(1)`` over many seeds: each item comes first with probability w(i)/Σw (its
    importance weight), not ∝ its draw count (here in the opposite order)."""
    iw = np.array([1.0, 2.0, 3.0, 4.0, 10.0]) / 20.0
    t = pa.table({"item_id": pa.array([10, 11, 12, 13, 14], pa.int64()),
                  "draw_count": pa.array([10, 4, 3, 2, 1], pa.int64()),
                  "importance_weight": pa.array(iw)})
    s = ExplorationSample(t, {"jaccard_distance_T": 0.5, "seed": 0, "size": 5, "total_draws": 20})
    seeds = 1500
    first = [s.examples(1, seed=k).column("item_id")[0].as_py() for k in range(seeds)]
    freq = np.array([first.count(i) for i in range(10, 15)]) / seeds
    assert np.all(np.abs(freq - iw) <= 4 * np.sqrt(iw * (1 - iw) / seeds)), (freq, iw)
    assert s.examples(5, seed=1).num_rows == 5  # all of them when n covers the sample


def test_next_step_of_model_and_people_draws_more_pairs_when_judging_all_would_not_do():
    """The people's part of the variance shrinks as (1/n − 1/N); the drawn sample's own (``S²/N``,
    ``S²`` from the people-only estimate) does not. 50 people's judgements of 1,000 pairs, the
    people-only SE 0.02 and the combined 0.01: judging all 1,000 leaves 50·0.02²/1000 = 2e-5 of
    the variance 1e-4, a fifth. Asking for a tenth of the width (a hundredth of the variance) needs
    a larger sample (before, the advice approached the 1,000 drawn pairs and never asked for more);
    asking for half the width is reached among the drawn pairs, by the formula."""
    q = {"judged_pairs": 50, "design": {"ppi": {"people_judgements": 50, "pairs": 1000, "std_err": 0.01,
                                                "people_only_std_err": 0.02}, "budget": 1000}}
    more = _more_pairs(q, 0.1, 0.01)
    assert more["human_budget"] == 5000 and more["budget"] == 100000
    more = _more_pairs(q, 0.1, 0.05)
    f = 50 * 0.02 ** 2 / 1000 / 0.01 ** 2
    want = math.ceil(1 / ((1 / 50 - 1 / 1000) * (0.25 - f) / (1 - f) + 1 / 1000))
    assert more["pairs_needed"] == want and more["budget"] == 1000 and want < 1000
