"""Every quality interval, as built: its formula pinned exactly, and inside what is possible (issue 24).

The formulas below are written out here from the glossary ("95% interval" in the report's "What
the numbers mean"), sharing no code with abcde:

- a rate (GoodSplitRate, …) of a sampled stratum or class: with ``k`` of the ``n`` judged draws
  counting, ``p̃ = (k + 2)/(n + 4)`` and ``R·(p̃ ± q·√(p̃(1 − p̃)/(n + 4)))`` cut to ``[0, R]``;
- ΔPrecision, stratified: ``self + Σ_c U_c·l_c·p̃_c ± q·√(Σ_c U_c²·p̃_c(1 − p̃_c)/(n_c + 4))``,
  widened to reach the estimate when the shifts (which add linearly, the half-widths in quadrature)
  leave it outside (issue 38), cut to ``[self − U_split − U_intersection−, self + U_merge + U_intersection+]``;
- ΔPrecision, the paper's design: ``estimate ± q·SE``, cut to
  ``[−(U_split + U_intersection− + U_self), U_merge + U_intersection+ + U_self]``;
- a slice's contribution: ``estimate ± q·SE`` cut to ``self(I) ± (pairweight(I) − Σ_I u_ii)``
  (each side only where a stratum of that sign has weight), ΔPrecision(I) that times
  ``weight(T)/weight(I)``; an absolute Precision is ``1 +`` those, cut to [0, 1];
- ``q`` the Student t quantile at 0.975 on ``n − 1`` degrees of freedom, ``n`` the judged draws the
  estimate rests on (self draws are not judged, and not counted).

Compared at 1e-12, so a different quantile, degrees of freedom, centre or shift fails. Then a
property over many seeds, budgets and judges (truthful, unsure, all "same", all "different"): no
interval leaves its range, and Good's and Bad's intervals mirror each other (Good + Bad = rate).
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import t as student_t

from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.quality import estimate_from_draws
from abcde.quality.estimate import _with_precision
from abcde.sampling.stratified import StratifiedSample, sample_stratified_many, self_term
from abcde.quality.stratified import estimate_stratified, estimate_stratified_slices
from abcde.sampling.pairs import pair_totals, sample_pairs_many
from test_estimator_formulas import answers_for, random_draws, same, table, usable
from test_quality import dicts, oracle, truth_metrics, world

TOL = 1e-12
SIGN = {"split": -1, "merge": 1, "intersection+": 1, "intersection-": -1}
STRATA = tuple(SIGN)  # the strata of ΔPrecision (a sample's agreed stratum, for the recall lift, has no part in it)


def q975(n):
    return float(student_t.ppf(0.975, n - 1)) if n >= 2 else 1.959963984540054


def cut(lo, hi, a, b):
    return min(max(lo, a), b), max(min(hi, b), a)


def ac(k, n):
    p = (k + 2) / (n + 4)
    return p, math.sqrt(p * (1 - p) / (n + 4))


def approx(got: dict, want: tuple):
    assert got["ci_low"] == pytest.approx(want[0], rel=TOL, abs=1e-15)
    assert got["ci_high"] == pytest.approx(want[1], rel=TOL, abs=1e-15)


def rate_interval(v, R):
    """Agresti–Coull on the 0/1 values ``v``, times R, cut to [0, R]."""
    n, k = len(v), sum(v)
    p, s = ac(k, n)
    return cut(R * (p - q975(n) * s), R * (p + q975(n) * s), 0.0, R)


def stratified_case(seed):
    rng = random.Random(300 + seed)
    inter = random_draws(rng, rng.randrange(6, 40), classes=("intersection",))
    strata = {"split": random_draws(rng, rng.randrange(3, 30), classes=("split",)),
              "merge": random_draws(rng, rng.randrange(3, 30), classes=("merge",)),
              "intersection+": [r for r in inter if r["label"] > 0],
              "intersection-": [r for r in inter if r["label"] < 0]}
    by_pair = {}
    for rows in strata.values():
        by_pair.update(answers_for(rng, rows, {"split": 0.1, "merge": 0.3, "stable": 0.2}))
    for c in strata:  # every stratum keeps at least one usable judgement
        if not any(usable(r, by_pair) for r in strata[c]):
            by_pair[strata[c][0]["pair_id"]] = "same"
    totals = {c: rng.uniform(0.01, 0.3) for c in STRATA}
    st = rng.uniform(-0.05, 0.05)
    sample = StratifiedSample({c: table(strata[c]) for c in STRATA}, totals, st,
                              {c: len(strata[c]) for c in STRATA}, "proportional")
    return rng, strata, by_pair, totals, st, sample


@pytest.mark.parametrize("seed", range(10))
def test_stratified_intervals_are_their_formulas(seed):
    rng, strata, by_pair, totals, st, sample = stratified_case(seed)
    sr, mr = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
    q = estimate_stratified(sample, by_pair, split_rate=sr, merge_rate=mr).to_dict()
    # ΔPrecision: Agresti–Coull per stratum, summed; t on all judged draws − 1.
    centre, var, n_all = st, 0.0, 0
    for c in STRATA:
        v = [same(r, by_pair) for r in strata[c] if usable(r, by_pair)]
        p, s = ac(sum(v), len(v))
        centre += totals[c] * SIGN[c] * p
        var += (totals[c] * s) ** 2
        n_all += len(v)
    lo_r = st - totals["split"] - totals["intersection-"]
    hi_r = st + totals["merge"] + totals["intersection+"]
    h = q975(n_all) * math.sqrt(var)
    est = q["delta_precision"]["estimate"]
    approx(q["delta_precision"], cut(min(centre - h, est), max(centre + h, est), lo_r, hi_r))
    assert q["delta_precision"]["range"] == [pytest.approx(lo_r), pytest.approx(hi_r)]
    # The rates: the share's Agresti–Coull interval times the exact rate; Good and Bad mirror.
    for name, klass, want_same, R in (("good_split_rate", "split", False, sr), ("bad_split_rate", "split", True, sr),
                                      ("good_merge_rate", "merge", True, mr), ("bad_merge_rate", "merge", False, mr)):
        v = [same(r, by_pair) if want_same else 1 - same(r, by_pair) for r in strata[klass] if usable(r, by_pair)]
        approx(q[name], rate_interval(v, R))
    assert q["good_split_rate"]["ci_low"] == pytest.approx(sr - q["bad_split_rate"]["ci_high"], abs=1e-15)
    assert q["good_merge_rate"]["ci_high"] == pytest.approx(mr - q["bad_merge_rate"]["ci_low"], abs=1e-15)
    # Slices: estimate ± t(n_in − 1)·SE, cut to self(I) ± (pairweight(I) − Σ_I u_ii).
    colour = {i: rng.choice(["red", "blue"]) for i in range(12)}
    keys = sorted({json.dumps(v) for v in colour.values()})
    mult = {k: (rng.uniform(1, 5), rng.uniform(0.02, 0.2)) for k in keys}
    selfs = {k: (rng.uniform(-0.01, 0.01), rng.uniform(0.0, 0.01)) for k in keys}
    W = 23.0
    rows = {json.dumps(r["value"]): r for r in estimate_stratified_slices(
        sample, by_pair, {i: json.dumps(v) for i, v in colour.items()}, mult, selfs, total_weight=W)}
    for k in keys:
        n_in = sum(usable(r, by_pair) and json.dumps(colour[r["item_a"]]) == k for c in STRATA for r in strata[c])
        c_ = rows[k]["delta_precision_contribution"]
        assert c_["n_judgements"] == n_in
        if c_["std_err"] is None:  # a stratum with one judged draw: no SE, no interval
            assert c_["ci_low"] is None and rows[k]["delta_precision"]["ci_low"] is None
            continue
        rest = mult[k][1] - selfs[k][1]
        want = cut(c_["estimate"] - q975(n_in) * c_["std_err"], c_["estimate"] + q975(n_in) * c_["std_err"],
                   selfs[k][0] - rest, selfs[k][0] + rest)
        approx(c_, want)
        scale = W / mult[k][0]
        approx(rows[k]["delta_precision"], (want[0] * scale, want[1] * scale))


@pytest.mark.parametrize("seed", range(10))
def test_paper_intervals_are_their_formulas(seed):
    rng = random.Random(700 + seed)
    rows = random_draws(rng, rng.randrange(25, 90))
    by_pair = answers_for(rng, rows, {"split": 0.1, "merge": 0.3, "stable": 0.2})
    totals = {"split": rng.uniform(0.01, 0.2), "merge": rng.uniform(0.01, 0.2), "self": rng.uniform(0.1, 0.5),
              "intersection+": rng.uniform(0, 0.1), "intersection-": rng.uniform(0, 0.1)}
    totals["intersection"] = totals["intersection+"] + totals["intersection-"]
    totals["all"] = totals["split"] + totals["merge"] + totals["self"] + totals["intersection"]
    sr, mr = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
    q = estimate_from_draws(table(rows), by_pair, totals, sr, mr).to_dict()
    dp = q["delta_precision"]
    if dp["estimate"] is not None:
        n = sum(1 for r in rows if not r["is_self"] and usable(r, by_pair))  # self draws are not judged
        assert dp["n_judgements"] == n
        lo_r = -(totals["split"] + totals["intersection-"] + totals["self"])
        hi_r = totals["merge"] + totals["intersection+"] + totals["self"]
        h = q975(n) * dp["std_err"]
        approx(dp, cut(dp["estimate"] - h, dp["estimate"] + h, lo_r, hi_r))
    for name, klass, want_same, R in (("good_split_rate", "split", False, sr), ("bad_split_rate", "split", True, sr),
                                      ("good_merge_rate", "merge", True, mr), ("bad_merge_rate", "merge", False, mr)):
        v = [same(r, by_pair) if want_same else 1 - same(r, by_pair)
             for r in rows if r["class"] == klass and usable(r, by_pair)]
        if v:
            approx(q[name], rate_interval(v, R))


def test_a_worked_case_by_hand():
    """8 split pairs all judged different (SE 0): GoodSplitRate's interval still has width, from
    Agresti–Coull: p̃ = 10/12, s = √(p̃(1 − p̃)/12), t_7 = 2.364624…, times SplitRate 0.1."""
    rows = [{"draw": k, "item_a": k, "item_b": k + 20, "class": "split", "is_self": False, "label": -1,
             "pair_id": f"p{k}", "needs_judgement": True} for k in range(8)]
    q = estimate_from_draws(table(rows), {f"p{k}": "different" for k in range(8)},
                            {"all": 0.1, "split": 0.1, "merge": 0.0, "self": 0.0}, 0.1, 0.0)
    g = q.good_split_rate.to_dict()
    assert (g["estimate"], g["std_err"]) == (pytest.approx(0.1), 0.0)
    p, s = 10 / 12, math.sqrt(10 / 12 * 2 / 12 / 12)
    assert g["ci_low"] == pytest.approx(0.1 * (p - 2.3646242515927844 * s), rel=1e-12)
    assert g["ci_high"] == pytest.approx(0.1, rel=1e-12)  # p̃ + t·s > 1: cut to the rate
    b = q.bad_split_rate.to_dict()
    assert b["ci_low"] == 0.0 and b["ci_high"] == pytest.approx(0.1 * (1 - p + 2.3646242515927844 * s), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_precision_intervals_are_one_plus_delta_precision_inside_0_1(seed):
    """Absolute Precision (``abcde precision``): 1 + ΔPrecision, overall and per slice, its interval
    1 + ΔPrecision's cut to [0, 1] (a slice's shift by 1 is not forgotten)."""
    rng, strata, by_pair, totals, st, sample = stratified_case(seed)
    r = estimate_stratified(sample, by_pair, split_rate=0.1, merge_rate=0.1)
    colour = {i: rng.choice(["red", "blue"]) for i in range(12)}
    keys = sorted({json.dumps(v) for v in colour.values()})
    sl = estimate_stratified_slices(sample, by_pair, {i: json.dumps(v) for i, v in colour.items()},
                                    {k: (2.0, 0.1) for k in keys}, {k: (-0.01, 0.01) for k in keys}, total_weight=10.0)
    from dataclasses import replace

    p = _with_precision(replace(r, slices={"colour": sl}), {"target": "precision"}).to_dict()
    dp = p["delta_precision"]
    approx(p["precision"], cut(1 + dp["ci_low"], 1 + dp["ci_high"], 0.0, 1.0))
    assert p["precision"]["estimate"] == pytest.approx(1 + dp["estimate"], rel=TOL)
    for row in p["slices"]["colour"]:
        d = row["delta_precision"]
        if d["ci_low"] is None:
            assert row["precision"]["ci_low"] is None
            continue
        approx(row["precision"], cut(1 + d["ci_low"], 1 + d["ci_high"], 0.0, 1.0))


# ----------------------------------------------------------------------------- the range property
@pytest.fixture(scope="module")
def worlds():
    out = []
    for seed in (0, 3):
        base, exp, items = world(n_entities=60 if seed else 150, seed=seed)
        d = build_diff(Inputs(base, exp, items=items))
        o = overall(d)
        b, e, w, t = dicts(base, exp, items)
        out.append((d, o, t, truth_metrics(b, e, w, t)))
    return out


JUDGES = {
    "truth": lambda by, rng: by,
    "unsure": lambda by, rng: {k: ("unsure" if rng.random() < 0.4 else v) for k, v in by.items()},
    "all same": lambda by, rng: dict.fromkeys(by, "same"),
    "all different": lambda by, rng: dict.fromkeys(by, "different"),
    "noisy": lambda by, rng: {k: rng.choice(["same", "different"]) for k in by},
}


def check_inside(q: dict, ranges: dict, where: str):
    """Intervals inside their ranges, estimates inside their intervals (issue 38) and so inside their
    ranges too: the paper's ΔPrecision, an unbiased reweighted mean that can fall outside at tiny
    budgets (every draw a split pair judged same gives −Σu), is cut to its range."""
    eps = 1e-12
    for name, (a, b) in ranges.items():
        e = q[name]
        if e["estimate"] is None:
            continue
        lo, hi = e["ci_low"], e["ci_high"]
        if lo is None:  # one judged draw: no SE yet, and (± t·SE) no interval
            assert e["std_err"] is None and e.get("n_judgements", 0) <= 1, f"{where}: {name} has no interval"
            continue
        assert lo <= e["estimate"] <= hi, f"{where}: {name} estimate {e['estimate']} outside [{lo}, {hi}]"
        assert a - eps <= lo <= hi <= b + eps, f"{where}: {name} [{lo}, {hi}] outside [{a}, {b}]"
        assert a - eps <= e["estimate"] <= b + eps, f"{where}: {name} estimate outside its range"
    for kind, R in (("split", q["split_rate"]), ("merge", q["merge_rate"])):
        g, b = q[f"good_{kind}_rate"], q[f"bad_{kind}_rate"]
        if g["estimate"] is not None and b["estimate"] is not None:
            assert g["ci_low"] == pytest.approx(R - b["ci_high"], abs=1e-12), where
            assert g["ci_high"] == pytest.approx(R - b["ci_low"], abs=1e-12), where
    for col, rows in (q.get("slices") or {}).items():
        for r in rows:
            for key in ("delta_precision", "delta_precision_contribution"):
                e = r[key]
                if e["ci_low"] is not None:
                    a, b = e["range"]
                    assert a - eps <= e["ci_low"] <= e["ci_high"] <= b + eps, f"{where}: slice {r['value']} {key}"
                    assert e["ci_low"] <= e["estimate"] <= e["ci_high"], f"{where}: slice {r['value']} {key}"


def test_no_interval_ever_leaves_its_range(worlds):
    """Both designs, budgets from 3 to 2,000 (the small world's strata are used up, a census, at the
    largest), five judges, many seeds: every interval inside its feasible range, computed here from
    the exact totals, and the truth itself inside that range."""
    rng = random.Random(11)
    checked = 0
    for d, o, t, truth in worlds:
        W = o["total_weight"]
        tot = pair_totals(d, W)
        st = self_term(d, W)
        strat_range = {"delta_precision": (st - tot["split"] - tot["intersection-"],
                                           st + tot["merge"] + tot["intersection+"])}
        paper_range = {"delta_precision": (-(tot["split"] + tot["intersection-"] + tot["self"]),
                                           tot["merge"] + tot["intersection+"] + tot["self"])}
        rates = {"good_split_rate": (0, o["split_rate"]), "bad_split_rate": (0, o["split_rate"]),
                 "good_merge_rate": (0, o["merge_rate"]), "bad_merge_rate": (0, o["merge_rate"])}
        for name, (a, b) in {**strat_range, **rates}.items():
            assert a - 1e-12 <= truth[name] <= b + 1e-12, name
        for budget in (3, 10, 40, 200, 2000):
            seeds = range(12)
            for ss in sample_stratified_many(d, budget=budget, seeds=seeds, total_weight=W):
                full = {}
                for dr in ss.draws.values():
                    full.update(oracle(dr, t))
                for judge, f in JUDGES.items():
                    q = estimate_stratified(ss, f(full, rng), split_rate=o["split_rate"],
                                            merge_rate=o["merge_rate"]).to_dict()
                    check_inside(q, {**strat_range, **rates}, f"stratified budget {budget} {judge}")
                    checked += 1
            if budget > 600:
                continue
            for ps in sample_pairs_many(d, budget=budget, seeds=seeds, total_weight=W):
                full = oracle(ps.draws, t)
                for judge, f in JUDGES.items():
                    q = estimate_from_draws(ps.draws, f(full, rng), ps.totals, o["split_rate"],
                                            o["merge_rate"]).to_dict()
                    check_inside(q, {**paper_range, **rates}, f"paper budget {budget} {judge}")
                    checked += 1
    assert checked == 2 * (5 * 12 * 5 + 4 * 12 * 5)


def test_the_old_intervals_did_leave_their_range(worlds):
    """The property can fail: uncut Agresti–Coull and Wald intervals go below 0 on these samples
    (the issue's GoodSplitRate [−0.0025, 0.0147])."""
    from abcde.quality.result import Estimate

    d, o, t, _ = worlds[0]
    left = 0
    for ss in sample_stratified_many(d, budget=10, seeds=range(12), total_weight=o["total_weight"]):
        full = {}
        for dr in ss.draws.values():
            full.update(oracle(dr, t))
        q = estimate_stratified(ss, dict.fromkeys(full, "same"), split_rate=o["split_rate"],
                                merge_rate=o["merge_rate"])
        e = q.good_split_rate
        uncut = Estimate(e.metric, e.value, e.standard_error, e.n_judgements, centre=e.centre,
                         interval_se=e.interval_se)
        left += uncut.confidence_interval()[0] < 0
    assert left > 0

