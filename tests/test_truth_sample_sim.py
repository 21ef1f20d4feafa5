"""Simulations of the truth-sample estimators (issue 41) against worlds with a known full truth.

Two worlds: FEBRL 3 weighted (the bundled example: Base, Exp and the true entities) and a generated
world with heavy-tailed entity sizes (zeta 2.5, capped at 100) and lognormal item weights. For each,
every entity's totals (``B_k``, ``A_k`` of Precision and Recall against the *whole* cluster) are
computed once, through the library (:func:`abcde.metrics.truth_sample.population_totals`, the Ibis
path); each seed then samples entities by a design and estimates from the sampled totals with
:func:`abcde.metrics.truth_sample.estimate_population`, the function the library itself calls on the
totals the engine returns (the fast test checks, on a few seeds, that the whole library path on the
sampled truth gives the same numbers). The truths are the population ratios ``Σ A_k / Σ B_k``.

Designs: a simple random sample of entities (``uniform``), and independent inclusion with
probability ∝ size and ∝ weight, capped at 1 (``inclusion``), each about a quarter of the entities.

Bands: ``|mean − truth| ≤ 4 · SD/√seeds`` over the first 2,000 seeds (0.09 SD: stricter than the
issue's 3 SE over 500 seeds, 0.13 SD; the Hájek ratio has a bias of order 1/n, e.g. −2.8e−5 ± 1.3e−5
in 20,000 seeds of the heavy world's Recall ∝ weight, Taylor's approximation −1.1e−5, 1.6% of its SD,
which 4,000 seeds show at 4 SE); ``RMS(SE)/SD`` in [0.9, 1.1]; the coverage of the 95% interval over
4,000 seeds in [0.93, 0.97] for Precision, Recall and ΔRecall, up to one Monte Carlo SE of a 95%
coverage (0.0034) either way. The intervals: Precision and Recall by Fay and Feuer's gamma interval of their
missing mass, their differences from the gains' and losses' by MOVER, F1 on the logit scale (see
:mod:`abcde.metrics.truth_sample`). Measured over seeds 0–3,999 (2,000 fresh seeds 10,000–11,999 of
another run agreed within 0.01; before issue 51's zero-events bounds): every cell 0.934–0.972, the highest ΔRecall's under FEBRL uniform
and the heavy world ∝ size and ∝ weight (0.972), the lowest the heavy world's Recall and ΔRecall
under a uniform sample (0.937, 0.934), which rests on the few giant entities the sample holds.

Earlier rules, for the record (2,000 seeds): the logit scale with Student t on ``n − 1`` degrees of
freedom covered FEBRL 3's Precision 0.954 / 0.918 / 0.918 (uniform, ∝ size, ∝ weight; its 18 of 2,000
entities that hold Exp's every precision loss make a lumpy sum of about 4.5 in a sample) and the
heavy world's uniform Recall 0.902 and ΔRecall 0.829; with t on the variance's effective degrees of
freedom (about 2.5 there) Precision covered 0.992–0.996 (2.4× wider than needed), Recall 0.941 and
ΔRecall 0.879; a difference from its two sides' logit intervals by MOVER 0.988.

The restricted Precision (``pointwise`` over the truth's items only, what abcde did before) is shown
biased upward on the same seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import abcde
from abcde.examples import example_paths
from abcde.metrics.truth_sample import estimate_pointwise, estimate_population, population_totals

SIDES = ("base", "exp")
KEYS = ("precision", "recall", "delta_precision", "delta_recall")
FRACTION = 0.25


# ----------------------------------------------------------------------------- worlds
def heavy_world(seed: int = 7, entities: int = 4000, a: float = 2.5, cap: int = 100) -> dict:
    """Entities of heavy-tailed sizes (zeta ``a``, capped at ``cap``), lognormal(0, 1) item weights, and
    two clusterings: Base splits 30% of the entities of two or more items into 2–4 pieces and merges 10%
    of the pieces in pairs; Exp re-joins half of the split entities, undoes about a third of Base's
    merges and merges another 8% of its pieces in pairs."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(a, entities), cap)
    ent = np.repeat(np.arange(entities), sizes)
    n = ent.size
    weight = rng.lognormal(0.0, 1.0, n)
    split = (rng.random(entities) < 0.3) & (sizes >= 2)
    k = np.where(split, rng.integers(2, 5, entities), 1)
    piece = ent * 8 + np.floor(rng.random(n) * k[ent]).astype(np.int64)

    def pairs(pieces, frac):
        chosen = rng.permutation(pieces)[: int(frac * len(pieces)) // 2 * 2].reshape(-1, 2)
        return {int(x): int(y) for x, y in chosen}

    base_merge = pairs(np.unique(piece), 0.10)
    rejoin = split & (rng.random(entities) < 0.5)
    undo = {x for x in sorted(base_merge) if rng.random() < 1 / 3}
    exp_piece = np.where(rejoin[ent], ent * 8, piece)
    new_merge = pairs(np.unique(exp_piece), 0.08)

    def exp_cluster(p: int) -> int:
        if p in new_merge:
            return new_merge[p]
        if p in base_merge and p not in undo:
            return base_merge[p]
        return p

    base_c = np.array([base_merge.get(int(p), int(p)) for p in piece])
    exp_c = np.array([exp_cluster(int(p)) for p in exp_piece])
    ids = np.arange(n)
    return {"truth": pa.table({"item_id": ids, "cluster_id": ent}),
            "base": pa.table({"item_id": ids, "cluster_id": base_c}),
            "exp": pa.table({"item_id": ids, "cluster_id": exp_c}),
            "items": pa.table({"item_id": ids, "weight": weight})}


def febrl_world() -> dict:
    p = example_paths()
    return {"truth": pq.read_table(p["truth"]), "base": p["base"], "exp": p["exp"], "items": p["items"]}


class Population:
    """A world's per-entity totals (through the library, once) and its true metrics."""

    def __init__(self, world: dict):
        self.world = world
        self.totals = {s: population_totals(world["truth"], world[s], items=world["items"]) for s in SIDES}
        self.entities = self.totals["base"].entities
        self.B = self.totals["base"].weight
        self.size = self.totals["base"].items.astype(float)
        self.N = len(self.B)
        for s in SIDES:
            assert self.totals[s].entities == self.entities
            np.testing.assert_allclose(self.totals[s].weight, self.B, rtol=1e-12)
        W = self.B.sum()
        m = {s: {"precision": self.totals[s].precision_sum.sum() / W, "recall": self.totals[s].recall_sum.sum() / W}
             for s in SIDES}
        self.truth = {"precision": m["exp"]["precision"], "recall": m["exp"]["recall"],
                      "delta_precision": m["exp"]["precision"] - m["base"]["precision"],
                      "delta_recall": m["exp"]["recall"] - m["base"]["recall"]}
        self._fragments = None

    def draw(self, design: str, seed: int, fraction: float = FRACTION):
        """Indices of the sampled entities and their inclusion probabilities (None: uniform)."""
        rng = np.random.default_rng(seed)
        if design == "uniform":
            return np.sort(rng.choice(self.N, int(round(fraction * self.N)), replace=False)), None
        x = self.size if design == "size" else self.B
        pi = np.minimum(1.0, fraction * self.N * x / x.sum())
        idx = np.flatnonzero(rng.random(self.N) < pi)
        return idx, pi[idx]

    def estimate(self, idx, pi):
        t = self.totals
        return estimate_population(self.B[idx], {s: (t[s].precision_sum[idx], t[s].recall_sum[idx]) for s in SIDES},
                                   inclusion=pi, population_entities=self.N if pi is None else None)

    # -- the restricted Precision (pointwise over the truth's items only) --------------------------
    def fragments(self):
        """Exp's fragments against the full truth, ``entity index, cluster code, w``, through the library."""
        if self._fragments is None:
            f = abcde.impact(self.world["truth"], self.world["exp"], items=self.world["items"]).diff
            t = f.engine.to_arrow(f.fragments.select("base_cluster", "exp_cluster", "w"))
            index = {e: k for k, e in enumerate(self.entities)}
            ent = np.array([index[e] for e in t.column("base_cluster").to_pylist()])
            _, cluster = np.unique(np.array(t.column("exp_cluster").to_pylist(), dtype=object).astype(str),
                                   return_inverse=True)
            self._fragments = (ent, cluster, t.column("w").to_numpy())
        return self._fragments

    def restricted_precision(self, idx) -> float:
        """Exp's Precision over the sampled entities' items, each cluster restricted to them."""
        ent, cluster, w = self.fragments()
        keep = np.isin(ent, idx)
        wc = np.bincount(cluster[keep], weights=w[keep])
        return float(np.sum(w[keep] ** 2 / wc[cluster[keep]]) / np.sum(w[keep]))

    def sample_truth(self, idx, pi=None) -> pa.Table:
        truth = self.world["truth"]
        ids = pa.array([self.entities[k] for k in idx], type=truth.schema.field("cluster_id").type)
        sub = truth.filter(pc.is_in(truth["cluster_id"], ids))
        if pi is not None:
            by = dict(zip((self.entities[k] for k in idx), pi))
            sub = sub.append_column("inclusion", pa.array([by[e] for e in sub.column("cluster_id").to_pylist()]))
        return sub


# ----------------------------------------------------------------------------- the simulation
def simulate(pop: Population, design: str, seeds: int, *, restricted: bool = False) -> dict:
    out = {k: [] for k in KEYS}
    rp = []
    for seed in range(seeds):
        idx, pi = pop.draw(design, seed)
        est = pop.estimate(idx, pi)
        for k in KEYS:
            e = est.deltas[k] if k.startswith("delta") else est.sides["exp"][k]
            lo, hi = e.confidence_interval()
            out[k].append((e.value, e.standard_error, lo, hi))
        if restricted:
            rp.append(pop.restricted_precision(idx))
    stats = {}
    for k in KEYS:
        est, se, lo, hi = np.array(out[k]).T
        sd = est.std(ddof=1)
        t = pop.truth[k]
        b = est[:BIAS_SEEDS]  # the bias on the first 2,000 (the Hájek ratio's O(1/n) bias shows beyond)
        stats[k] = {"bias_in_se": (b.mean() - t) / (b.std(ddof=1) / math.sqrt(b.size)),
                    "se_over_sd": math.sqrt(np.mean(se ** 2)) / sd,
                    "coverage": float(np.mean((lo <= t) & (t <= hi)))}
    if restricted:
        rp = np.array(rp)
        stats["restricted_precision"] = {"mean_minus_truth": rp.mean() - pop.truth["precision"],
                                         "bias_in_se": (rp.mean() - pop.truth["precision"])
                                         / (rp.std(ddof=1) / math.sqrt(seeds)),
                                         "above_truth": float(np.mean(rp > pop.truth["precision"]))}
    return stats


#: A 95% coverage's Monte Carlo SE over the slow test's seeds: the band holds up to it either way.
SEEDS, BIAS_SEEDS = 4000, 2000
MC = math.sqrt(0.95 * 0.05 / SEEDS)


def check(world: str, design: str, stats: dict, *, bias: float = 4.0, se: tuple = (0.9, 1.1),
          coverage: tuple = (0.93 - MC, 0.97 + MC), loose: float = 0.0) -> None:
    for k in KEYS:
        s = stats[k]
        where = f"{world}/{design}/{k}: {s}"
        assert abs(s["bias_in_se"]) <= bias, where
        assert se[0] - loose <= s["se_over_sd"] <= se[1] + loose, where
        if k == "delta_precision":
            continue  # not banded (the bands are for Precision, Recall and ΔRecall); printed
        lo, hi = coverage
        if k.startswith("delta"):
            # A sample that sees no gains (or no losses) bounds what the unsampled entities may gain by
            # the zero-events bound (issue 51): honest, so conservative where that happens (the heavy
            # world ∝ size and ∝ weight: 0.989 and 0.988 over 4,000 seeds; 0.972 before).
            hi = max(hi, 0.99 + MC)
        assert lo - loose <= s["coverage"] <= hi + loose, where


@pytest.fixture(scope="module")
def febrl():
    return Population(febrl_world())


@pytest.fixture(scope="module")
def heavy():
    return Population(heavy_world())


# ----------------------------------------------------------------------------- tests
@pytest.mark.slow
@pytest.mark.parametrize("world", ["febrl", "heavy"])
@pytest.mark.parametrize("design", ["uniform", "size", "weight"])
def test_population_estimates_are_calibrated(request, world, design):
    """4,000 seeds per world and design: unbiased within 4 SE of the mean, SE/SD in [0.9, 1.1], 95%
    coverage in [0.93, 0.97] for Precision, Recall and ΔRecall (up to one Monte Carlo SE); the
    restricted Precision biased upward."""
    pop = request.getfixturevalue(world)
    stats = simulate(pop, design, SEEDS, restricted=True)
    print(world, design, stats)
    check(world, design, stats)
    r = stats["restricted_precision"]
    assert r["mean_minus_truth"] > 0 and r["bias_in_se"] > 10, r


def test_population_estimates_fast(febrl):
    """The default suite's version: 150 seeds of each design on FEBRL 3, looser bands."""
    pop = febrl
    for design in ("uniform", "size", "weight"):
        stats = simulate(pop, design, 150, restricted=True)
        check("febrl", design, stats, bias=4.0, loose=0.08)
        assert stats["restricted_precision"]["bias_in_se"] > 5, stats["restricted_precision"]


@pytest.mark.parametrize("design", ["uniform", "size"])
def test_the_library_path_on_a_sampled_truth_is_the_totals_estimator(febrl, design):
    """On a few seeds, the whole library path (``estimate_pointwise`` on the sampled truth, its items
    scored against whole clusters in the engine) gives the numbers the simulation computes from the
    population's totals, to 1e-12; and ``pointwise`` without a design gives the restricted Precision
    the simulation computes."""
    pop = febrl
    for seed in range(2):
        idx, pi = pop.draw(design, seed)
        truth = pop.sample_truth(idx, pi)
        res = estimate_pointwise(truth, base=pop.world["base"], exp=pop.world["exp"], items=pop.world["items"],
                                 truth_sample="uniform" if pi is None else "inclusion",
                                 population_entities=pop.N if pi is None else None)
        ref = pop.estimate(idx, pi)
        for side in SIDES:
            for m in ("precision", "recall", "f1"):
                a, b = res.estimates[side][m], ref.sides[side][m]
                assert a.value == pytest.approx(b.value, rel=1e-12, abs=1e-12), (side, m)
                assert a.standard_error == pytest.approx(b.standard_error, rel=1e-9, abs=1e-15), (side, m)
        for m in ("delta_precision", "delta_recall"):
            assert res.estimates[m].value == pytest.approx(ref.deltas[m].value, rel=1e-12, abs=1e-12)
            assert res.estimates[m].standard_error == pytest.approx(ref.deltas[m].standard_error, rel=1e-9, abs=1e-15)
        today = abcde.pointwise(truth.select(["item_id", "cluster_id"]), pop.world["exp"], items=pop.world["items"])
        assert today.precision == pytest.approx(pop.restricted_precision(idx), rel=1e-12)
        assert res.restricted["exp"]["precision"] == pytest.approx(today.precision, rel=1e-12)
        assert today.note  # a partial truth without a design says what its numbers describe
