"""The recall lift's code pinned exactly (issue 38, section 6, last paragraph): the tests an independent
mutation review (``tests/mutation/mutants_recall.py``) added for the bugs it planted that the suite
let through. Cheap and exact: fixed small samples whose estimate, standard error and interval are the
module's formulas written out here (1e-12), and the exact facts (pair masses per stratum and per slice,
cluster weights, the agreed stratum's population, partners, counts, budgets) against a brute-force
listing of the pairs."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from scipy.stats import norm as normal, t as student_t

import abcde
import reference as ref
from test_quality import dicts
from test_recall_lift import small_world
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.errors import InputError
from abcde.metrics.impact import link_masses, overall
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.quality.draw import extend_pair_sample
from abcde.quality.estimate import _stratified_sample
from abcde.quality.people import choose_by_model_answers
from abcde.samples.people_tasks import people_cells, people_pairs
from abcde.quality.recall import RECALL_STRATA, estimate_recall_lift
from abcde.samples.facts import RecallFacts, recall_items, stored_recall
from abcde.quality.exact_facts import recall_facts
from abcde.samples.sample_dir import PairSampleDir, write_sample_dir
from abcde.sampling.allocation import (AGREED_PRIOR, CHANGED_PRIOR, agreed_budget, agreed_share, split_budget,
                                       stratum_weights)
from abcde.sampling.stratified import StratifiedSample, sample_stratified
from abcde.quality.verdict import truth_view
from abcde.sampling.pairs import _partners, agreed_population, pair_counts, stratum_pairs

# ----------------------------------------------------------------------------- a fixed sample
#: Each drawn item's (W(B)/W, W(E)/W).
CW = {"s1": (0.30, 0.10), "s2": (0.20, 0.05), "s3": (0.25, 0.15),
      "m1": (0.10, 0.40), "m2": (0.05, 0.30), "m3": (0.15, 0.35),
      "p1": (0.40, 0.10), "p2": (0.30, 0.20),
      "q1": (0.10, 0.30), "q2": (0.20, 0.50)}
#: The sampled strata's draws (pair id, vantage item, partner, judgement), in draw order.
SAMPLED = {
    "split": [("S1", "s1", "x1", "same"), ("S2", "s2", "x2", "different"), ("S3", "s3", "x3", "same"),
              ("S1", "s1", "x1", "same"), ("S4", "s2", "x4", "different"), ("S5", "s3", "x5", "unsure")],
    "intersection+": [("P1", "p1", "y1", "same"), ("P2", "p2", "y2", "different"), ("P3", "p1", "y3", "same"),
                      ("P4", "p2", "y4", "same")],
    "intersection-": [("Q1", "q1", "z1", "same"), ("Q2", "q2", "z2", "same"), ("Q3", "q1", "z3", "different")],
    "agreed": [("A1", "a1", "a2", "same"), ("A2", "a3", "a4", "different"), ("A3", "a5", "a6", "same"),
               ("A4", "a1", "a3", "same"), ("A5", "a2", "a6", "same")],
}
#: The merge stratum listed whole (a census): (pair id, item a, item b, pair weight u_ab + u_ba, judgement).
CENSUS_MERGE = [("M1", "m1", "n1", 0.02, "same"), ("M2", "m2", "n2", 0.03, "different"),
                ("M3", "m3", "n3", 0.01, "same")]
MASSES = {"agreed": 0.30, "intersection+": 0.05, "intersection-": 0.04, "split": 0.12, "merge": 0.0205}
#: A slice column "v": each item's value, and each value's masses M_s(I) (in RECALL_STRATA's order).
VALUE = {"s1": "a", "s2": "b", "s3": "a", "p1": "a", "p2": "b", "q1": "b", "q2": "a", "a1": "a", "a2": "b",
         "a3": "b", "a5": "a", "m1": "a", "n1": "b", "m2": "b", "n2": "b", "m3": "a", "n3": "a"}
SLICE_MASSES = {"a": (0.14, 0.02, 0.015, 0.07, 0.011), "b": (0.16, 0.03, 0.025, 0.05, 0.0095)}
LABEL = {"split": -1, "merge": 1, "intersection+": 1, "intersection-": -1, "agreed": 0}


def _table(rows, stratum, census=False):
    cls = "stable" if stratum.startswith("intersection") else stratum
    cols = {"pair_id": [r[0] for r in rows], "item_a": [r[1] for r in rows], "item_b": [r[2] for r in rows],
            "class": [cls] * len(rows), "label": pa.array([LABEL[stratum]] * len(rows), pa.int8())}
    if census:
        cols["pair_weight"] = pa.array([r[3] for r in rows], pa.float64())
    return pa.table(cols)


def fixed_sample(merged=True):
    """The sample, its judgements and its facts; ``merged=False``: nothing merged (no merge pair)."""
    draws = {c: _table(rows, c) for c, rows in SAMPLED.items()}
    draws["merge"] = _table(CENSUS_MERGE if merged else [], "merge", census=True)
    budgets = {c: len({r[0] for r in rows}) for c, rows in SAMPLED.items()} | {"merge": draws["merge"].num_rows}
    ss = StratifiedSample(draws, {}, 0.0, budgets, "proportional", frozenset({"merge"}))
    by_pair = {r[0]: r[-1] for rows in (*SAMPLED.values(), CENSUS_MERGE) for r in rows}
    masses = dict(MASSES) if merged else {**MASSES, "merge": 0.0}
    facts = RecallFacts(masses, dict(CW), {"v": {json.dumps(k): m for k, m in SLICE_MASSES.items()}})
    return ss, by_pair, facts


# ----------------------------------------------------------------------------- the formulas, written out
def reweighting(stratum, item):
    """How much a draw counts: split W(B)/W, merge W(E)/W, intersection b·e/|b − e|, agreed 1."""
    if stratum == "agreed":
        return 1.0
    b, e = CW[item]
    return {"split": b, "merge": e}.get(stratum, b * e / abs(b - e))


def posterior(p, n, rng, size):
    """Draws of a share p̂ of n (effective) judgements from its modified Jeffreys posterior (Brown, Cai &
    DasGupta 2001): Beta(n·p̂ + ½, n·(1 − p̂) + ½), Beta(n, 1) when all agree that it is 1 (Beta(1, n): 0)."""
    if p == 1:
        return rng.beta(n, 1.0, size)
    if p == 0:
        return rng.beta(1.0, n, size)
    return rng.beta(n * p + 0.5, n * (1 - p) + 0.5, size)


def sampled_stratum(stratum, mass, inside=lambda item: True):
    """(T̂_s, Var(T̂_s), draws of T_s from its share's posterior (a function of the generator and their
    number), judged draws in the domain)."""
    judged = [(1.0 if j == "same" else 0.0, reweighting(stratum, a), inside(a)) for _, a, _, j in SAMPLED[stratum]
              if j in ("same", "different")]
    n = len(judged)
    dom = [(g, r) for g, r, ok in judged if ok]
    sr = sum(r for _, r in dom)
    p = sum(r * g for g, r in dom) / sr
    var = n / (n - 1) * sum(r * r * (g - p) ** 2 for g, r in dom) / sr ** 2
    n_eff = p * (1 - p) / var if 0 < p < 1 else sr ** 2 / sum(r * r for _, r in dom)
    return mass * p, mass * mass * var, (lambda rng, size: mass * posterior(p, n_eff, rng, size)), len(dom)


def census_merge(inside=lambda item: True, rows=CENSUS_MERGE):
    """The census stratum's exact total (every pair judged): Σ pair weight·W(E)/W·1(same), each end in
    the slice adding half."""
    tot, n = 0.0, 0
    for _, a, b, pw, j in rows:
        half = (inside(a) + inside(b)) / 2
        if half:
            tot += pw * CW[a][1] * half * (j == "same")
            n += 1
    return tot, 0.0, (lambda rng, size: np.full(size, tot)), n


def lift_of(t):
    return (t["merge"] - t["split"]) / (t["agreed"] + t["intersection+"] + t["intersection-"] + t["split"])


def by_hand(masses, inside=lambda item: True):
    """Λ̂, its delta-method SE, its 95% interval (Λ's 2.5% and 97.5% quantiles at Student t's z over
    400,000 draws of the strata's totals), the judged draws it rests on."""
    parts = {c: sampled_stratum(c, masses[c], inside) for c in SAMPLED}
    parts["merge"] = census_merge(inside, CENSUS_MERGE if masses["merge"] else [])
    t = {c: p[0] for c, p in parts.items()}
    v = {c: p[1] for c, p in parts.items()}
    lam = lift_of(t)
    den = t["agreed"] + t["intersection+"] + t["intersection-"] + t["split"]
    var = (v["merge"] + (1 + lam) ** 2 * v["split"]
           + lam ** 2 * (v["agreed"] + v["intersection+"] + v["intersection-"])) / den ** 2
    n = sum(p[3] for p in parts.values())
    z = float(student_t.ppf(0.975, n - 1))
    rng = np.random.default_rng(2024)
    draws = lift_of({c: p[2](rng, 400_000) for c, p in parts.items()})
    tail = float(normal.cdf(-z))
    q_lo, q_hi = np.quantile(draws, [tail, 1 - tail])
    # the range: each sampled T_s anywhere in [0, M_s], the census stratum's at its exact total
    low = (t["merge"] - masses["split"]) / masses["split"]
    return lam, math.sqrt(var), (max(min(q_lo, lam), low), max(q_hi, lam)), n


def near(got, want):
    """An interval's ends as the formulas give them, to the Monte Carlo error of the draws: 3% of its
    width, four of the library's standard errors (its 20,000 draws' ends vary by 0.2–0.7% of the width
    from seed to seed here, most in a long tail; these 400,000 by a fifth of that)."""
    tol = 0.03 * (want[1] - want[0])
    return abs(got[0] - want[0]) <= tol and abs(got[1] - want[1]) <= tol


def test_the_lift_its_se_and_its_interval_are_the_formulas():
    """Five strata (four sampled, with unequal reweighting factors and a pair drawn twice; the merge
    stratum a census, judged whole): Λ̂, the delta-method SE with (1 + Λ)² and Λ² over the agreed and
    intersection strata, the interval from draws of each share from its posterior on n*."""
    ss, by_pair, facts = fixed_sample()
    est, exact, _ = estimate_recall_lift(ss, by_pair, facts, method="m")
    lam, se, (lo, hi), n = by_hand(MASSES)
    assert not exact and not est.exact  # one stratum is exact, the others are not
    assert est.n_judgements == n == 20
    assert est.value == pytest.approx(lam, abs=1e-12)
    assert est.standard_error == pytest.approx(se, rel=1e-12)
    got = est.confidence_interval()
    assert near(got, (lo, hi)), (got, (lo, hi))
    assert lo < lam < hi
    assert est.bounds[0] == pytest.approx((census_merge()[0] - MASSES["split"]) / MASSES["split"], abs=1e-12)
    assert est.bounds[1] == math.inf


def test_splits_only_the_lift_is_the_formulas_not_zero():
    """Nothing merged (T_merge = 0 exactly) but pairs split: Λ̂ = −T̂_split/T̂_Base < 0, not "nothing
    split or merged"."""
    ss, by_pair, facts = fixed_sample(merged=False)
    est, exact, _ = estimate_recall_lift(ss, by_pair, facts, method="m")
    lam, se, (lo, hi), n = by_hand({**MASSES, "merge": 0.0})
    assert not exact and lam < 0 and not est.note
    assert est.value == pytest.approx(lam, abs=1e-12) and est.standard_error == pytest.approx(se, rel=1e-12)
    got = est.confidence_interval()
    assert near(got, (lo, hi)), (got, (lo, hi))
    # and a census of a splits-only change (the merge stratum empty: exact, of mass 0): exactly the lift
    from test_recall_lift import CENSUS, _judge

    _, _, items = small_world(7, 20)
    ids, ent = items.column("item_id").to_pylist(), items.column("entity").to_pylist()
    truth = pa.table({"item_id": ids, "cluster_id": ent})
    cut = pa.table({"item_id": ids, "cluster_id": [f"{c}-{k % 2}" for k, c in enumerate(ent)]})
    b, e, w, t = dicts(truth, cut, items)
    d = build_diff(Inputs(truth, cut, items=items))
    W = overall(d)["total_weight"]
    ss = sample_stratified(d, budget=CENSUS, seed=1, total_weight=W)
    facts = recall_facts(d, [x for c in ss.strata for x in recall_items(ss.draws[c])], total_weight=W)
    est, exact, _ = estimate_recall_lift(ss, _judge(ss, t), facts, method="m")
    want = ref.recall_lift(b, e, t, w)
    assert exact and want < -0.1 and est.value == pytest.approx(want, abs=1e-12)


def test_a_census_with_a_pair_left_unsure_is_not_exact():
    """Every stratum listed whole and judged, but one pair left unsure: the lift is estimated (the
    unsure pair like the judged ones of its stratum), not exact, and its interval holds both answers
    the pair could have (bounds, issue 51: its note says so; nothing else is random, so its standard
    error may be 0)."""
    from test_recall_lift import CENSUS, _judge

    base, exp, items = small_world(4)
    b, e, w, t = dicts(base, exp, items)
    d = build_diff(Inputs(base, exp, items=items))
    W = overall(d)["total_weight"]
    ss = sample_stratified(d, budget=CENSUS, seed=1, total_weight=W)
    assert set(ss.census) == {c for c in ss.strata if ss.budgets[c]} and ss.draws["split"].num_rows > 2
    facts = recall_facts(d, [x for c in ss.strata for x in recall_items(ss.draws[c])], total_weight=W)
    by_pair = _judge(ss, t)
    est, exact, _ = estimate_recall_lift(ss, by_pair, facts, method="m")
    assert exact and est.value == pytest.approx(ref.recall_lift(b, e, t, w), abs=1e-12)
    judged = len(by_pair)
    split_pairs = ss.draws["split"].column("pair_id").to_pylist()
    same = [p for p in split_pairs if by_pair[p] == "same"]
    different = [p for p in split_pairs if by_pair[p] == "different"]
    assert same and different
    by_pair[same[0]] = "unsure"
    est, exact, _ = estimate_recall_lift(ss, by_pair, facts, method="m")
    assert not exact and not est.exact and est.n_judgements == judged - 1
    lo, hi = est.confidence_interval()
    assert lo < hi and "answered unsure" in est.note
    for answer in ("same", "different"):
        known, _, _ = estimate_recall_lift(ss, {**by_pair, same[0]: answer}, facts, method="m")
        assert lo - 1e-12 <= known.value <= hi + 1e-12, (answer, known.value, lo, hi)


def test_the_lift_per_slice_is_the_formulas():
    """Per slice value: each sampled stratum's domain ratio (draws whose vantage item is in the slice;
    the variance over all the stratum's judged draws) times the slice's own mass M_s(I), the census
    pair {a, b} adding half its weight per end in the slice."""
    ss, by_pair, facts = fixed_sample()
    values = {"v": {i: json.dumps(v) for i, v in VALUE.items()}}
    _, _, slices = estimate_recall_lift(ss, by_pair, facts, method="m", vantage_values=values)
    for value, m in SLICE_MASSES.items():
        lam, se, (lo, hi), n = by_hand(dict(zip(RECALL_STRATA, m)), inside=lambda i, value=value: VALUE[i] == value)
        got = slices["v"][json.dumps(value)]
        assert got["exact"] is False and got["n_judgements"] == n
        assert got["estimate"] == pytest.approx(lam, abs=1e-12), value
        assert got["std_err"] == pytest.approx(se, rel=1e-12), value
        assert near((got["ci_low"], got["ci_high"]), (lo, hi)), (value, got, (lo, hi))


class _Cells(dict):
    """``{pair_id: cell}`` of the people's draws chosen by a model's answers; ``chosen``: the people's
    draws (pair id, i-th draw of the pair). A pair not in the mapping is in its stratum's one cell,
    every draw of it the people's. No cell of a census stratum is drawn (``drawn``): each is judged
    whole, or its pairs left are like its judged ones."""

    def __init__(self, mapping, chosen):
        super().__init__(mapping)
        self.chosen = set(chosen)
        self.drawn = {}

    def selected(self, pair_id, i):
        return pair_id not in self or (pair_id, i) in self.chosen


def test_the_peoples_cells_weight_their_draws():
    """The split stratum's people's draws chosen by a model's answers: the cell "same" holds four draws
    of which the people judged two, the cell "different" two of two: each people's draw stands for
    N_c/n_c draws of its cell (the Hájek ratio), not for one."""
    ss, by_pair, facts = fixed_sample()
    cells = _Cells({"S1": "split|same", "S3": "split|same", "S5": "split|same", "S2": "split|different",
                    "S4": "split|different"}, {("S1", 0), ("S3", 0), ("S2", 0), ("S4", 0)})
    est, _, _ = estimate_recall_lift(ss, by_pair, facts, method="m", cells=cells)
    # e = 4/2 in "same" (S1 and S3, judged same), 2/2 in "different" (S2 and S4, judged different)
    p_split = (2 * 0.30 + 2 * 0.25) / (2 * 0.30 + 2 * 0.25 + 0.20 + 0.20)
    t = {c: sampled_stratum(c, MASSES[c])[0] for c in SAMPLED} | {"merge": census_merge()[0]}
    t["split"] = MASSES["split"] * p_split
    assert est.value == pytest.approx(lift_of(t), abs=1e-12)
    plain, _, _ = estimate_recall_lift(ss, by_pair, facts, method="m")
    assert abs(plain.value - est.value) > 1e-3  # the cells matter here


# ----------------------------------------------------------------------------- exact facts against the pairs
def brute_masses(b, e, w, vantage=None) -> dict:
    """Σ w_i·w_j / W² over the ordered pairs i ≠ j of each stratum of RECALL_STRATA, listed one by one:
    together in both in an affected fragment with W(B) > W(E) (intersection+), < (intersection−), else
    agreed; together in Base only (split), in Exp only (merge)."""
    W = math.fsum(w.values())
    wb, we = Counter(), Counter()
    for i in b:
        wb[b[i]] += w[i]
        we[e[i]] += w[i]
    out = {k: [] for k in RECALL_STRATA}
    for i in b:
        if vantage is not None and i not in vantage:
            continue
        for j in b:
            if i == j:
                continue
            sb, se = b[i] == b[j], e[i] == e[j]
            if sb and se:
                x, y = wb[b[i]], we[e[i]]
                k = "intersection+" if x > y * (1 + 1e-12) else "intersection-" if y > x * (1 + 1e-12) else "agreed"
            elif sb:
                k = "split"
            elif se:
                k = "merge"
            else:
                continue
            out[k].append(w[i] * w[j])
    return {k: math.fsum(v) / (W * W) for k, v in out.items()}


@pytest.fixture(scope="module", params=[0, 3, 5])
def sw(request):
    base, exp, items = small_world(request.param, 16)
    b, e, w, t = dicts(base, exp, items)
    d = build_diff(Inputs(base, exp, items=items))
    return base, exp, items, (b, e, w, t), d, overall(d)["total_weight"]


def test_every_strata_mass_overall_and_per_slice_is_the_pair_listing(sw):
    base, exp, items, (b, e, w, t), d, W = sw
    assert W == pytest.approx(math.fsum(w.values()), rel=1e-12)
    want = brute_masses(b, e, w)
    got = link_masses(d, W)
    for k in RECALL_STRATA:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-15), k
    assert got["both"] == pytest.approx(want["agreed"] + want["intersection+"] + want["intersection-"], rel=1e-12)
    assert want["intersection+"] > 0 and want["intersection-"] > 0 and want["agreed"] > 0
    kind = dict(zip(items.column("item_id").to_pylist(), items.column("kind").to_pylist()))
    facts = recall_facts(d, [], slice_by=("kind",), total_weight=W)
    for value in ("a", "b"):
        mine = facts.slices["kind"][json.dumps(value)]
        theirs = brute_masses(b, e, w, {i for i, k in kind.items() if k == value})
        for k, x in zip(RECALL_STRATA, mine):
            assert x == pytest.approx(theirs[k], rel=1e-12, abs=1e-15), (value, k)


def test_the_cluster_weights_stored_are_each_items_base_and_exp_weights(sw):
    base, exp, items, (b, e, w, t), d, W = sw
    wb, we = Counter(), Counter()
    for i in b:
        wb[b[i]] += w[i]
        we[e[i]] += w[i]
    affected = [i for i in b if {j for j in b if b[j] == b[i]} != {j for j in b if e[j] == e[i]}]
    facts = recall_facts(d, affected, total_weight=W)
    assert set(facts.cluster_weights) == set(affected)
    for i in affected:
        got = facts.cluster_weights[i]
        assert got[0] == pytest.approx(wb[b[i]] / W, rel=1e-12) and got[1] == pytest.approx(we[e[i]] / W, rel=1e-12)


def test_the_agreed_population_counts_and_census_pairs_are_the_pair_listing(sw):
    """The agreed stratum's vantage items (every item of a fragment of two or more that is not an
    intersection stratum's) each ∝ w_i·W(F); its pair count; its census pairs' weights 2·w_a·w_b/W²."""
    base, exp, items, (b, e, w, t), d, W = sw
    wb, we, wf = Counter(), Counter(), Counter()
    for i in b:
        wb[b[i]] += w[i]
        we[e[i]] += w[i]
        wf[(b[i], e[i])] += w[i]
    frag = {i: [j for j in b if b[j] == b[i] and e[j] == e[i]] for i in b}
    agreed = {i for i in b if len(frag[i]) > 1 and math.isclose(wb[b[i]], we[e[i]], rel_tol=1e-12)}
    pop, n = agreed_population(d)
    rows = d.engine.to_arrow(pop).to_pylist()
    assert n == len(rows) == len(agreed)
    for r in rows:
        i = r["item_id"]
        assert i in agreed and r["class"] == "agreed"
        assert r["u"] == pytest.approx(w[i] * wf[(b[i], e[i])], rel=1e-12)
    pairs = {(i, j) for i in agreed for j in frag[i] if i < j}
    assert pair_counts(d)["agreed"] == len(pairs)
    listed = stratum_pairs(d, "agreed", W).to_pylist()
    assert {(r["item_a"], r["item_b"]) for r in listed} == pairs
    for r in listed:
        assert r["pair_weight"] == pytest.approx(2 * w[r["item_a"]] * w[r["item_b"]] / W ** 2, rel=1e-12)


def test_the_agreed_partner_is_where_its_uniform_falls_on_the_fragments_weights():
    """A fragment {a, b, c} of weights 1, 2, 3 (together in both): the partner of a draw with uniform
    u is the item whose running weight interval (in id order) holds u·W(F): a in [0, 1), b in [1, 3),
    c in [3, 6) — ∝ weight, the whole range reached."""
    base = pa.table({"item_id": ["a", "b", "c", "d", "e", "f"], "cluster_id": [1, 1, 1, 2, 2, 2]})
    exp = pa.table({"item_id": ["a", "b", "c", "d", "e", "f"], "cluster_id": [1, 1, 1, 2, 2, 3]})
    items = pa.table({"item_id": ["a", "b", "c", "d", "e", "f"], "weight": [1.0, 2.0, 3.0, 1.0, 1.0, 1.0]})
    d = build_diff(Inputs(base, exp, items=items))
    pop = {r["item_id"]: r for r in d.engine.to_arrow(agreed_population(d)[0]).to_pylist()}
    assert set(pop) == {"a", "b", "c"}  # {d, e}: W(B) = 3 > W(E) = 2, the intersection+ stratum's
    us = [0.01, 0.1, 0.17, 0.3, 0.4, 0.49, 0.52, 0.6, 0.9, 0.99]
    want = ["a", "a", "b", "b", "b", "b", "c", "c", "c", "c"]  # u·6 in [0, 1) a, [1, 3) b, [3, 6) c
    draws = pa.table({"draw": pa.array(range(len(us)), pa.int64()), "vantage": ["a"] * len(us),
                      "class": ["agreed"] * len(us), "label": pa.array([0] * len(us), pa.int8()),
                      "base_cluster": [pop["a"]["base_cluster"]] * len(us),
                      "exp_cluster": [pop["a"]["exp_cluster"]] * len(us), "u": pa.array(us, pa.float64())})
    got = _partners(d, draws).to_pylist()
    assert [r["partner"] for r in sorted(got, key=lambda r: r["draw"])] == want


# ----------------------------------------------------------------------------- budgets
def test_the_agreed_share_is_the_neyman_share_at_the_priors():
    pa_, pc = AGREED_PRIOR, CHANGED_PRIOR
    assert (pa_, pc) == (0.95, 0.5)
    ma, ms, mm = 1.0, 0.02, 0.2
    lift = (mm * pc - ms * pc) / (ma * pa_ + ms * pc)  # 0.09375
    a = abs(lift) * ma * math.sqrt(pa_ * (1 - pa_))  # |∂Λ/∂T_agreed|·M·σ, times T_Base
    b = (1 + lift) * ms * 0.5 + 1.0 * mm * 0.5  # |∂Λ/∂T_split|·M·σ + |∂Λ/∂T_merge|·M·σ, times T_Base
    assert agreed_share({"agreed": ma, "split": ms, "merge": mm}) == pytest.approx(a / (a + b), rel=1e-12)
    assert 0.1 < a / (a + b) < 0.5  # not cut
    # Λ = 0 at the priors (as much split as merged): the agreed pairs only scale it, but never none
    assert agreed_share({"agreed": 1.0, "split": 0.1, "merge": 0.1}) == 0.1
    assert agreed_share({"agreed": 0.0, "split": 0.1, "merge": 0.1}) == 0.0
    assert agreed_share({"agreed": 1.0, "split": 0.0, "merge": 0.0}) == 0.0


def test_the_agreed_budget_and_the_split_of_a_budget():
    assert [agreed_budget(100, s) for s in (0.123, 0.125, 0.13, 0.5)] == [12, 13, 13, 50]
    assert [agreed_budget(n, 0.5) for n in (1, 2, 3, 4, 5)] == [0, 1, 1, 2, 2]
    assert agreed_budget(100, 0.3, cap=5) == 5 and agreed_budget(100, 0.0) == 0
    assert agreed_budget(10, 0.05) == 2  # at least two (a standard error needs two)
    assert split_budget(100, 0.3, None) == (70, 30)
    assert split_budget(100, 0.3, {"agreed": 5}) == (95, 5)  # a census of the agreed pairs: the rest to the others
    # a sample drawn before the agreed stratum, grown: its strata keep their 100 pairs, the agreed get the rest
    assert split_budget(101, 0.2, None, floor=100) == (100, 1)
    assert split_budget(130, 0.2, None, floor=100) == (104, 26)


def test_the_agreed_strata_weight_gives_it_its_share_again():
    totals = {"split": 0.2, "merge": 0.1, "intersection+": 0.05, "intersection-": 0.0, "agreed": 0.0}
    budgets = {"split": 10, "merge": 6, "intersection+": 4, "intersection-": 0, "agreed": 5}
    got = stratum_weights(totals, budgets)
    assert got["agreed"] == pytest.approx(5 * 0.35 / 20, rel=1e-12)
    assert {c: got[c] for c in ("split", "merge", "intersection+", "intersection-")} == {
        "split": 0.2, "merge": 0.1, "intersection+": 0.05, "intersection-": 0.0}


# ----------------------------------------------------------------------------- quality: the people's judgements
def _judgements(rows):
    return pa.table({"pair_id": [r[0] for r in rows], "judgement": [r[1] for r in rows],
                     "rater": [r[2] for r in rows], "source": [r[3] for r in rows]})


@pytest.fixture(scope="module")
def people_world(tmp_path_factory):
    base, exp, items = small_world(3, 40)
    return base, exp, items, dicts(base, exp, items)[3]


def _truth_of(draws, t):
    return {p: ("same" if t[a] == t[b] else "different") for p, a, b in zip(
        draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())}


def test_model_and_people_the_lift_uses_the_peoples_tasks_alone(people_world, tmp_path):
    """A model judged every pair (always "same"), people their tasks: the lift is the people's of their
    tasks alone, never the model's answers filling in the pairs people did not judge."""
    base, exp, items, t = people_world
    out = draw_pair_sample(base, exp, tmp_path / "s", budget=80, seed=4, items=items, hide=["entity"],
                           human_budget=30)
    s = PairSampleDir.read(out)
    truth = _truth_of(s.draws, t)
    tasks = people_pairs(s.draws, s.metadata)
    assert 0 < len(tasks) < len(truth)
    rows = [(p, "same", "model:m", "model") for p in truth] + [(p, truth[p], "ann", "person") for p in tasks]
    q = estimate_quality(out, _judgements(rows))
    people = {p: truth[p] for p in tasks}
    want, _, _ = estimate_recall_lift(_stratified_sample(s), people, stored_recall(s.metadata), method="m")
    assert q.recall_lift.defined and q.recall_lift.value == pytest.approx(want.value, abs=1e-12)
    assert q.recall_lift.standard_error == pytest.approx(want.standard_error, rel=1e-12)
    filled, _, _ = estimate_recall_lift(_stratified_sample(s), {**{p: "same" for p in truth}, **people},
                                        stored_recall(s.metadata), method="m")
    assert abs(filled.value - want.value) > 1e-6  # the model's answers would change it


def test_people_chosen_by_the_models_answers_the_lift_weighs_them_by_cell(people_world, tmp_path):
    """The people's tasks chosen again by a model's answers (``judge model`` on a sample drawn with
    ``--human-budget``): the lift weighs each people's draw by its cell, as the estimator given the
    design's cells does, not as a plain subset of the draws."""
    base, exp, items, t = people_world
    out = draw_pair_sample(base, exp, tmp_path / "s", budget=80, seed=4, items=items, hide=["entity"],
                           human_budget=30)
    s = PairSampleDir.read(out)
    truth = _truth_of(s.draws, t)
    rng = np.random.default_rng(1)
    model = {p: (v if rng.random() < 0.75 else ("different" if v == "same" else "same")) for p, v in truth.items()}
    pacsv.write_csv(_judgements([(p, a, "model:m", "model") for p, a in model.items()]), out / "judgements.csv")
    assert choose_by_model_answers(out).chosen
    s = PairSampleDir.read(out)
    cells = people_cells(s.draws, s.metadata)
    tasks = people_pairs(s.draws, s.metadata)
    assert cells is not None and 0 < len(tasks) < len(truth)
    people = [(p, truth[p], "ann", "person") for p in tasks]
    q = estimate_quality(out, [out / "judgements.csv", _judgements(people)])
    by_pair = {p: truth[p] for p in tasks}
    want, _, _ = estimate_recall_lift(_stratified_sample(s), by_pair, stored_recall(s.metadata), method="m",
                                      cells=cells)
    assert q.recall_lift.defined and q.recall_lift.value == pytest.approx(want.value, abs=1e-12)
    plain, _, _ = estimate_recall_lift(_stratified_sample(s), by_pair, stored_recall(s.metadata), method="m")
    assert abs(plain.value - want.value) > 1e-6  # the cells matter here


# ----------------------------------------------------------------------------- against the ground truth
def test_true_links_and_the_truth_lift_are_the_pair_listing(sw):
    """``PointwiseResult.true_links`` is Σ w_i·w_j/W² over the ordered pairs together in the clustering
    and the truth (intersection fragments' pairs included), and the report's exact lift is their ratio
    minus 1, not the ratio of the pointwise recalls."""
    base, exp, items, (b, e, w, t), d, W = sw
    truth = pa.table({"item_id": items.column("item_id"), "cluster_id": items.column("entity")})
    res = {side: abcde.pointwise(truth, c, items=items, weight="weight") for side, c in (("base", base), ("exp", exp))}
    for side, c in (("base", b), ("exp", e)):
        assert res[side].true_links == pytest.approx(ref.true_links(c, t, w) / W ** 2, rel=1e-12), side
    exact = ref.recall_lift(b, e, t, w)
    assert truth_view(res)["recall_lift"] == pytest.approx(exact, abs=1e-12)
    assert truth_view({k: r.to_dict() for k, r in res.items()})["recall_lift"] == pytest.approx(exact, abs=1e-12)
    assert abs(res["exp"].recall / res["base"].recall - 1 - exact) > 1e-6


# ----------------------------------------------------------------------------- --extend of a sample drawn before
def _splits_only(tmp_path):
    """A world whose Exp only splits Base's clusters (the agreed share at its largest, 0.187), and a
    sample of 120 pairs of it as abcde wrote it before the agreed stratum (no agreed draws, no recall
    facts)."""
    from test_quality import world

    base, _, items = world(100, seed=2)
    bc = base.column("cluster_id").to_numpy()
    rng = np.random.default_rng(0)
    exp = pa.table({"item_id": base.column("item_id"),
                    "cluster_id": np.where((bc % 3 == 0) & (rng.random(len(bc)) < 0.5), bc + 100000, bc)})
    out = draw_pair_sample(base, exp, tmp_path / "new", budget=120, seed=3, items=items, hide=["entity"])
    s = PairSampleDir.read(out)
    meta = dict(s.metadata)
    for k in ("recall", "agreed_share", "sample_id", "format", "version", "abcde_version"):
        meta.pop(k, None)
    meta["budgets"] = {c: n for c, n in meta["budgets"].items() if c != "agreed"}
    meta["pair_counts"] = {c: n for c, n in meta["pair_counts"].items() if c != "agreed"}
    meta["census"] = [c for c in meta["census"] if c != "agreed"]
    draws = s.draws.filter(pa.array([c != "agreed" for c in s.draws.column("stratum").to_pylist()], pa.bool_()))
    draws = draws.set_column(0, "draw", pa.array(range(draws.num_rows), pa.int64()))
    meta["draws"] = draws.num_rows
    meta["judgeable_pairs"] = len({p for p, n in zip(draws.column("pair_id").to_pylist(),
                                                     draws.column("needs_judgement").to_pylist()) if n})
    old = write_sample_dir(tmp_path / "old", draws, s.items, meta, hidden=["entity"])
    return base, exp, items, old, meta


def test_extending_a_sample_drawn_before_the_agreed_stratum_keeps_its_strata_whole(tmp_path):
    """``pairs --extend`` by the 12 pairs ``quality`` asks for: the agreed stratum's share of 132 would
    be 25 pairs, but the strata drawn before keep the sample's budget of 120 (their draws continue),
    so the agreed stratum gets the 12 left. (The sample here is a new one with its agreed draws taken
    out, so its strata hold fewer than 120 pairs: they grow to 120.)"""
    base, exp, items, old, meta = _splits_only(tmp_path)
    assert 0.18 < agreed_share(link_masses(build_diff(Inputs(base, exp, items=items)),
                                           meta["total_weight"])) < 0.19
    extend_pair_sample(old, budget=132, base=base, exp=exp, items=items)
    grown = PairSampleDir.read(old).metadata["budgets"]
    assert grown["agreed"] == 12 and sum(grown[c] for c in meta["budgets"]) == 120
    assert all(grown[c] >= meta["budgets"][c] for c in meta["budgets"])


def test_extending_such_a_sample_again_continues_its_draws(tmp_path):
    """Grown once (120 ΔPrecision pairs + 12 agreed), then to 140: the agreed share of 140 is 26 pairs,
    which leaves the ΔPrecision strata 114 < the 120 they hold; the draws must still continue (the
    ΔPrecision strata keep their 120 or more, the agreed stratum at least its 12)."""
    base, exp, items, old, meta = _splits_only(tmp_path)
    extend_pair_sample(old, budget=132, base=base, exp=exp, items=items)
    extend_pair_sample(old, budget=140, base=base, exp=exp, items=items)
    grown = PairSampleDir.read(old).metadata["budgets"]
    assert all(grown[c] >= meta["budgets"][c] for c in meta["budgets"]) and grown["agreed"] >= 12


def test_a_sample_of_integer_ids_reads_its_stored_cluster_weights_back(tmp_path):
    """Integer item ids: the cluster weights stored in the sample's metadata (JSON keys are text) are
    read back under the ids, so ``quality`` estimates the lift (here a census: exactly)."""
    from test_recall_lift import CENSUS

    base, exp, items = small_world(2, 10)
    n = base.num_rows
    base, exp = (x.set_column(0, "item_id", pa.array(range(n), pa.int64())) for x in (base, exp))
    items = items.set_column(0, "item_id", pa.array(range(n), pa.int64()))
    b, e, w, t = dicts(base, exp, items)
    out = draw_pair_sample(base, exp, tmp_path / "s", budget=CENSUS, seed=1, items=items, hide=["entity"])
    s = PairSampleDir.read(out)
    assert s.metadata["id_type"] == "integer" and s.metadata["recall"]["cluster_weights"]
    truth = _truth_of(s.draws, t)
    q = estimate_quality(out, pa.table({"pair_id": list(truth), "judgement": list(truth.values())}))
    assert q.recall_lift is not None and q.recall_lift.exact, q.recall_note
    assert q.recall_lift.value == pytest.approx(ref.recall_lift(b, e, t, w), abs=1e-12)
