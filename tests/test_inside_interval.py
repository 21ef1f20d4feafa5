"""No estimate outside its own interval (issue 38, section 3).

A hostile probe found ΔPrecision outside its own 95% interval, and the interval excluding the exact
value, when every judgement of every stratum agrees: "went up by 0.5000 (95% interval 0.3666 to
0.4978)" on a split-only change at budget 40, where a census gives exactly 0.5. The stratified
interval is Agresti–Coull's per stratum: each stratum's centre is shifted toward ½, and the shifts
add linearly across strata while the half-widths add in quadrature, so with every stratum at 0 or 1
(all shifts one way) the centre moves further than the half-width. Likewise GoodDistance and
BadDistance (sums of two shifted parts); and the paper's and the prediction-powered estimates, which
are unbiased but not bounded, could leave the range their interval is cut to.

Here, on small weighted clusterings where every judgement of every stratum agrees (splits only,
merges only, each with Exp right and with Exp wrong, and Exp equal to the truth), judged by the
truth, at budgets 10-100 over many seeds, for the stratified design, the paper's and people + a
model (prediction-powered): every estimate there is — ΔPrecision, the four Good/Bad rates,
Precision, the distances' parts and sums, ΔPrecision(I) and its contribution, the distances per
slice, the recall lift — lies inside its interval. In the stratified design every stratum's share
is then its exact share, so each estimate but the slices' is the exact value, and the interval holds
it. A census (every pair listed and judged) gives the exact values, each inside its interval.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

import reference as ref
from abcde.core.diff import affected_items, build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.quality import draw_pair_sample, estimate_from_draws, estimate_quality, oracle_judge
from abcde.quality.combined import combined_paper, combined_stratified, combined_stratified_slices
from abcde.quality.exact_facts import distance_facts
from abcde.quality.distances import estimate_distances_paper, estimate_distances_stratified
from abcde.quality.draw import _slice_multipliers
from abcde.quality.result import Estimate
from abcde.sampling.stratified import sample_stratified_many
from abcde.quality.stratified import estimate_stratified, estimate_stratified_slices
from abcde.sampling.pairs import sample_pairs_many

#: Worlds where every judgement of every stratum agrees (a stratum holds one kind of pair only).
WORLDS = ("split, Exp right", "split, Exp wrong", "merge, Exp right", "merge, Exp wrong", "Exp is the truth")
BUDGETS = (10, 20, 40, 70, 100)
SEEDS = range(4)
RATES = ("good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate")
PARTS = ("good_split_distance", "bad_split_distance", "good_merge_distance", "bad_merge_distance")
SUMS = ("good_distance", "bad_distance")


def clusterings(kind: str, n_entities: int = 40, seed: int = 0):
    """Base, Exp and items (weight, entity, colour) of one of :data:`WORLDS`: entities of 1-4 items;
    "merged" puts the entities 2k and 2k + 1 in one cluster, "split" cuts entities of 2+ items in two."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, n_entities)
    ent = np.repeat(np.arange(n_entities), sizes)
    n = len(ent)
    pos = np.concatenate([np.arange(s) for s in sizes])

    def merged(c, which):
        return np.where(which[ent // 2], 2 * n_entities + ent // 2, c)  # entity 2k with 2k + 1

    def split(c, which):
        return np.where(which[ent] & (pos % 2 == 1) & (sizes[ent] > 1), 4 * n_entities + ent, c)

    pick = rng.random(n_entities) < 0.5  # by entity (split), by pair of entities (merged)
    if kind == "split, Exp right":
        base, exp = merged(ent, pick), ent
    elif kind == "split, Exp wrong":
        base, exp = ent, split(ent, pick)
    elif kind == "merge, Exp right":
        base, exp = split(ent, pick), ent
    elif kind == "merge, Exp wrong":
        base, exp = ent, merged(ent, pick)
    else:  # Exp is the truth; Base merges some pairs of entities and splits the other entities
        base, exp = split(merged(ent, pick), ~pick[np.arange(n_entities) // 2]), ent
    ids = [f"i{k}" for k in range(n)]
    items = pa.table({"item_id": ids, "weight": rng.lognormal(0, 0.6, n), "entity": [f"e{x}" for x in ent],
                      "colour": rng.choice(["red", "blue"], n)})
    return (pa.table({"item_id": ids, "cluster_id": base.astype(np.int64)}),
            pa.table({"item_id": ids, "cluster_id": exp.astype(np.int64)}), items)


def _col(t: pa.Table, c: str) -> dict:
    return dict(zip(t.column("item_id").to_pylist(), t.column(c).to_pylist()))


class World:
    """A world of :func:`clusterings` with what the estimators need and the brute-force truths."""

    def __init__(self, kind: str):
        self.kind = kind
        self.base, self.exp, self.items = clusterings(kind)
        self.b, self.e = _col(self.base, "cluster_id"), _col(self.exp, "cluster_id")
        self.w, self.t, self.colour = _col(self.items, "weight"), _col(self.items, "entity"), _col(self.items, "colour")
        self.d = build_diff(Inputs(self.base, self.exp, items=self.items))
        self.o = overall(self.d)
        self.W = self.o["total_weight"]
        ids = [r["item_id"] for r in self.d.engine.rows(affected_items(self.d).select("item_id"))]
        self.facts = distance_facts(self.d, ids, slice_by=["colour"])
        rows = _slice_multipliers(self.d, ["colour"], self.W).to_pylist()
        self.mult = {r["value"]: (r["weight"], r["pairweight"]) for r in rows}
        self.selfs = {r["value"]: (r["self_term"], r["self_pairweight"]) for r in rows}
        self.values = {i: json.dumps(v) for i, v in self.colour.items()}
        self.truth = self._truth()

    def _truth(self) -> dict:
        pairs = ref.all_pairs(self.b, self.e, self.w)
        same = [self.t[p["i"]] == self.t[p["j"]] for p in pairs]
        out = {
            "delta_precision": math.fsum(p["u"] * p["l"] for p, s in zip(pairs, same) if s),
            "good_split_rate": math.fsum(p["u"] for p, s in zip(pairs, same) if p["class"] == "split" and not s),
            "bad_split_rate": math.fsum(p["u"] for p, s in zip(pairs, same) if p["class"] == "split" and s),
            "good_merge_rate": math.fsum(p["u"] for p, s in zip(pairs, same) if p["class"] == "merge" and s),
            "bad_merge_rate": math.fsum(p["u"] for p, s in zip(pairs, same) if p["class"] == "merge" and not s),
        }
        dist = ref.lifted_distance_parts(self.b, self.e, self.w, self.t)
        out.update({m: dist[m] for m in PARTS})
        out["good_distance"] = dist["good_split_distance"] + dist["good_merge_distance"]
        out["bad_distance"] = dist["bad_split_distance"] + dist["bad_merge_distance"]
        for v in ("red", "blue"):
            inside = [i for i in self.b if self.colour[i] == v]
            w_i = math.fsum(self.w[i] for i in inside)
            c = math.fsum(p["u"] * p["l"] for p, s in zip(pairs, same) if s and self.colour[p["i"]] == v)
            out[f"slice {v} contribution"] = c
            out[f"slice {v} delta_precision"] = c * self.W / w_i
            dv = ref.lifted_distance_parts(self.b, self.e, self.w, self.t, items=inside)
            for m in PARTS:
                out[f"slice {v} {m}"] = dv[m]
        return out

    def oracle(self, draws: pa.Table) -> dict:
        return {p: "same" if self.t[a] == self.t[b] else "different" for p, a, b in zip(
            draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(),
            draws.column("item_b").to_pylist())}


@pytest.fixture(scope="module")
def worlds():
    return {k: World(k) for k in WORLDS}


def test_every_judgement_agrees_in_these_worlds(worlds):
    """The worlds are what they claim: splits only or merges only where named, and in every
    class of pairs (split, merge, and the stable pairs of each sign) one answer only."""
    for kind, wd in worlds.items():
        answers: dict = {}
        for p in ref.all_pairs(wd.b, wd.e, wd.w):
            if p["i"] != p["j"]:
                key = (p["class"], p["l"])
                answers.setdefault(key, set()).add(wd.t[p["i"]] == wd.t[p["j"]])
        assert all(len(a) == 1 for a in answers.values()), (kind, answers)
        classes = {c for c, _ in answers}
        if kind.startswith("split"):
            assert "split" in classes and "merge" not in classes, kind
        elif kind.startswith("merge"):
            assert "merge" in classes and "split" not in classes, kind
        else:
            assert {"split", "merge"} <= classes, kind


# ----------------------------------------------------------------------------- the property
def estimates(obj, where: str = ""):
    """Every estimate dict (``estimate``, ``ci_low``, ``ci_high``) inside ``obj`` (a result's
    ``to_dict()``, a list of slice rows, ...), with where it was found."""
    if isinstance(obj, dict):
        if "estimate" in obj and "ci_low" in obj:
            yield where, obj
        for k, v in obj.items():
            if k not in ("verdict_facts", "design"):
                yield from estimates(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from estimates(v, f"{where}[{k}]")


def inside(lo, x, hi) -> bool:
    eps = 1e-12 * max(1.0, abs(x))
    return lo - eps <= x <= hi + eps


def assert_inside(obj, where: str) -> int:
    """Every defined estimate in ``obj`` inside its interval; an estimate without an interval only
    where it has no standard error yet (one judged draw in a stratum, ± t·SE). Returns how many."""
    n = 0
    for path, e in estimates(obj, where):
        if e["estimate"] is None:
            continue
        if e["ci_low"] is None:
            assert e["std_err"] is None, f"{path}: defined, with a standard error, but no interval"
            continue
        assert inside(e["ci_low"], e["estimate"], e["ci_high"]), \
            f"{path}: estimate {e['estimate']!r} outside its interval [{e['ci_low']!r}, {e['ci_high']!r}]"
        n += 1
    return n


def assert_exact_inside(q: dict, wd: World, where: str, names) -> None:
    """``q``'s estimates of ``names`` are the exact values, each inside its interval."""
    for m in names:
        e = q[m]
        assert e["estimate"] == pytest.approx(wd.truth[m], rel=1e-9, abs=1e-12), f"{where}: {m}"
        assert inside(e["ci_low"], wd.truth[m], e["ci_high"]), \
            f"{where}: the exact {m} {wd.truth[m]!r} outside [{e['ci_low']!r}, {e['ci_high']!r}]"


@pytest.mark.parametrize("kind", WORLDS)
def test_stratified_every_estimate_inside_its_interval(worlds, kind):
    """Stratified design, judged by the truth: every estimate inside its interval; every stratum's
    judged share is its exact share, so ΔPrecision, the rates, Precision and the distances are the
    exact values, and each interval holds its exact value."""
    wd = worlds[kind]
    checked = 0
    for budget in BUDGETS:
        for ss in sample_stratified_many(wd.d, budget=budget, seeds=SEEDS, total_weight=wd.W):
            by: dict = {}
            for dr in ss.draws.values():
                by.update(wd.oracle(dr))
            where = f"{kind}, stratified, budget {budget}"
            q = estimate_stratified(ss, by, split_rate=wd.o["split_rate"], merge_rate=wd.o["merge_rate"])
            qd = q.to_dict()
            checked += assert_inside(qd, where)
            assert_exact_inside(qd, wd, where, ("delta_precision", *RATES))
            prec = Estimate("precision", 1 + q.delta_precision.value, q.delta_precision.standard_error,
                            q.delta_precision.n_judgements, centre=1 + q.delta_precision.centre,
                            interval_se=q.delta_precision.interval_se).to_dict()
            checked += assert_inside(prec, f"{where}: 1 + ΔPrecision")
            rows = estimate_stratified_slices(ss, by, wd.values, wd.mult, wd.selfs, total_weight=wd.W)
            checked += assert_inside(rows, f"{where}: slices")
            dist = estimate_distances_stratified(ss, by, wd.facts, method="m",
                                                 vantage_values={"colour": wd.values}).to_dict()
            checked += assert_inside(dist, f"{where}: distances")
            assert_exact_inside(dist, wd, f"{where}: distances", PARTS + SUMS)
    assert checked > len(BUDGETS) * len(SEEDS) * 10


@pytest.mark.parametrize("kind", WORLDS)
def test_paper_design_every_estimate_inside_its_interval(worlds, kind):
    """The paper's design, judged by the truth: every estimate inside its interval. Its ΔPrecision
    is a reweighted mean over the classes' random counts, unbiased but not bounded: at these budgets
    it falls outside the range ΔPrecision can take (where its interval is cut) in a few percent of
    the samples, and is cut to that range."""
    wd = worlds[kind]
    for budget in BUDGETS:
        for ps in sample_pairs_many(wd.d, budget=budget, seeds=SEEDS, total_weight=wd.W):
            by = wd.oracle(ps.draws)
            where = f"{kind}, paper, budget {budget}"
            q = estimate_from_draws(ps.draws, by, ps.totals, wd.o["split_rate"], wd.o["merge_rate"],
                                    items=wd.items, slice_multipliers={"colour": wd.mult}, total_weight=wd.W)
            qd = q.to_dict()
            assert_inside(qd, where)
            lo, hi = q.delta_precision.bounds
            assert lo <= q.delta_precision.value <= hi, where
            assert_exact_inside(qd, wd, where, RATES)  # each class's share is exact
            dist = estimate_distances_paper(ps.draws, by, wd.facts, method="m",
                                            vantage_values={"colour": wd.values}).to_dict()
            assert_inside(dist, f"{where}: distances")


@pytest.mark.parametrize("kind", WORLDS)
def test_people_and_a_model_every_estimate_inside_its_interval(worlds, kind):
    """People judge half of each sample's pairs, a model every pair, all agreeing with the truth
    (prediction-powered, both designs): every estimate inside its interval."""
    wd = worlds[kind]
    rng = np.random.default_rng(5)
    kw = dict(split_rate=wd.o["split_rate"], merge_rate=wd.o["merge_rate"])
    for budget in (10, 40, 100):
        for ss in sample_stratified_many(wd.d, budget=budget, seeds=SEEDS, total_weight=wd.W):
            model: dict = {}
            for dr in ss.draws.values():
                model.update(wd.oracle(dr))
            tasks = frozenset(p for p in sorted(model) if rng.random() < 0.5)
            people = {p: model[p] for p in tasks}
            where = f"{kind}, model + people, stratified, budget {budget}"
            assert_inside(combined_stratified(ss, people, model, tasks, **kw).to_dict(), where)
            assert_inside(combined_stratified_slices(ss, people, model, tasks, wd.values, wd.mult, wd.selfs,
                                                     total_weight=wd.W), f"{where}: slices")
        for ps in sample_pairs_many(wd.d, budget=budget, seeds=SEEDS, total_weight=wd.W):
            model = wd.oracle(ps.draws)
            tasks = frozenset(p for p in sorted(model) if rng.random() < 0.5)
            people = {p: model[p] for p in tasks}
            q = combined_paper(ps.draws, people, model, tasks, ps.totals, wd.o["split_rate"], wd.o["merge_rate"],
                               items=wd.items, slice_multipliers={"colour": wd.mult}, total_weight=wd.W)
            assert_inside(q.to_dict(), f"{kind}, model + people, paper, budget {budget}")


def test_the_hostile_probe(worlds):
    """The issue's case: a split-only change at budget 40, every judgement agreeing. ΔPrecision is
    exact, and so is its interval's end on the side the estimate is at the edge of the range."""
    wd = worlds["split, Exp right"]
    for ss in sample_stratified_many(wd.d, budget=40, seeds=range(20), total_weight=wd.W):
        by: dict = {}
        for dr in ss.draws.values():
            by.update(wd.oracle(dr))
        e = estimate_stratified(ss, by, split_rate=wd.o["split_rate"], merge_rate=wd.o["merge_rate"]).delta_precision
        lo, hi = e.confidence_interval()
        assert e.value == pytest.approx(wd.truth["delta_precision"], rel=1e-9)
        assert lo < e.value <= hi  # the interval has width, and holds the exact value
        # every split judged good, every stable pair (all with W(B) > W(E)) same: the largest ΔPrecision
        assert hi == pytest.approx(e.bounds[1], rel=1e-12) == pytest.approx(e.value, rel=1e-9)


def test_inside_at_every_confidence_level(worlds):
    """The estimate lies inside its interval at any confidence level (an Agresti–Coull interval
    of a single share holds its estimate at 95%, but not at every level by itself)."""
    for kind in ("split, Exp wrong", "Exp is the truth"):
        wd = worlds[kind]
        for budget in (10, 40):
            for ss in sample_stratified_many(wd.d, budget=budget, seeds=range(3), total_weight=wd.W):
                by: dict = {}
                for dr in ss.draws.values():
                    by.update(wd.oracle(dr))
                q = estimate_stratified(ss, by, split_rate=wd.o["split_rate"], merge_rate=wd.o["merge_rate"])
                for m in ("delta_precision", *RATES):
                    e = getattr(q, m)
                    for level in (0.5, 0.8, 0.9, 0.95, 0.99):
                        lo, hi = e.confidence_interval(level)
                        assert inside(lo, e.value, hi), (kind, budget, m, level, lo, e.value, hi)


def test_an_estimate_its_formula_puts_outside_its_range_is_cut_to_it(worlds):
    """Unbiased estimators that are not bounded: the paper's reweighted mean (8 draws, all split pairs
    judged the same: −Σu, below the least ΔPrecision can be) and a prediction-powered mean (λ = 1, a
    model wrong on every people's pair and "same" on every other: a share of merge pairs judged the
    same above 1). Each estimate is cut to the range its interval is cut to: inside both."""
    rows = [{"draw": k, "item_a": f"a{k}", "item_b": f"b{k}", "class": "split", "is_self": False, "label": -1,
             "pair_id": f"p{k}", "needs_judgement": True} for k in range(8)]
    totals = {"all": 1.0, "split": 0.2, "merge": 0.3, "self": 0.1, "intersection+": 0.2, "intersection-": 0.2,
              "intersection": 0.4}
    q = estimate_from_draws(pa.Table.from_pylist(rows), {f"p{k}": "same" for k in range(8)}, totals, 0.2, 0.3)
    dp = q.delta_precision
    assert dp.bounds == (-0.5, 0.6) and dp.value == -0.5  # the formula gives −1
    lo, hi = dp.confidence_interval()
    assert lo <= dp.value <= hi and -0.5 <= lo and hi <= 0.6
    wd = worlds["merge, Exp right"]
    ss = sample_stratified_many(wd.d, budget=60, seeds=[2], total_weight=wd.W)[0]
    truth: dict = {}
    for dr in ss.draws.values():
        truth.update(wd.oracle(dr))
    merge = ss.draws["merge"].column("pair_id").to_pylist()
    tasks = frozenset(merge[::2])
    model = {p: ("different" if p in tasks else "same") if p in merge else a for p, a in truth.items()}
    r = combined_stratified(ss, {p: truth[p] for p in tasks}, model, tasks, split_rate=wd.o["split_rate"],
                            merge_rate=wd.o["merge_rate"], lam=1.0)
    g = r.good_merge_rate
    assert g.value == pytest.approx(wd.o["merge_rate"], rel=1e-12)  # the formula gives more than MergeRate
    assert_inside(r.to_dict(), "model + people, λ = 1")


# ----------------------------------------------------------------------------- a census
@pytest.mark.parametrize("kind", WORLDS)
@pytest.mark.parametrize("estimator", ["stratified", "paper"])
def test_a_census_is_exact_and_inside(worlds, kind, estimator, tmp_path):
    """Through the API a user calls (draw, the oracle, estimate_quality with a slice): every pair
    listed and judged (the stratified design: a census) gives the exact values, each inside its
    interval; the paper's design at a large budget too for the rates and distances, whose classes'
    shares are exact."""
    wd = worlds[kind]
    out = draw_pair_sample(wd.base, wd.exp, tmp_path / "s", items=wd.items, budget=100_000 if estimator ==
                           "stratified" else 400, seed=1, slice_by=["colour"], estimator=estimator)
    oracle_judge(out, "entity")
    q = estimate_quality(out, slice_by=["colour"]).to_dict()
    where = f"{kind}, {estimator}, census" if estimator == "stratified" else f"{kind}, paper, 400 draws"
    assert_inside(q, where)
    assert_exact_inside(q, wd, where, RATES)
    assert_exact_inside(q["distances"], wd, f"{where}: distances", PARTS + SUMS)
    if estimator == "paper":
        return
    assert q["exact"] is True
    assert_exact_inside(q, wd, where, ("delta_precision",))
    for row in q["slices"]["colour"]:
        v = row["value"]
        for key, name in (("delta_precision_contribution", "contribution"), ("delta_precision", "delta_precision")):
            e, want = row[key], wd.truth[f"slice {v} {name}"]
            assert e["estimate"] == pytest.approx(want, rel=1e-9, abs=1e-12), (where, v, key)
            assert inside(e["ci_low"], want, e["ci_high"]), (where, v, key, e, want)
    for row in q["distances"]["slices"]["colour"]:
        for m in PARTS:
            e, want = row[m], wd.truth[f"slice {row['value']} {m}"]
            assert e["estimate"] == pytest.approx(want, rel=1e-9, abs=1e-12), (where, row["value"], m)
            assert inside(e["ci_low"], want, e["ci_high"]), (where, row["value"], m, e, want)
