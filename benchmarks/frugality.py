"""Frugality: the empirical SE of ΔPrecision at an equal judgement budget.

Estimators: naive (each Precision estimated from half the budget, then subtracted),
the paper's (all pairs ∝ u_ij), and stratified (exact self term; split, merge and
intersection strata) with proportional and Neyman budgets. Neyman spends 20% of
the budget on a proportional pilot, whose judgements only set σ_c, and estimates
from the other 80%. Judgements come from the true entities (an oracle).

Prints each SE and the judgement ratio versus the paper's estimator,
(SE_paper / SE)², i.e. how many times fewer judgements give the same SE.

    python benchmarks/frugality.py --budget 300 --seeds 100
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from abcde.examples import example_paths  # noqa: E402
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs  # noqa: E402
from abcde.metrics.impact import overall  # noqa: E402
from abcde.sampling.pairs import sample_pairs  # noqa: E402
from abcde.quality import estimate_from_draws  # noqa: E402
from abcde.quality.stratified import (estimate_stratified, pilot_sigmas, sample_stratified,  # noqa: E402
                              sample_stratified_many)


def naive_se(clustering: dict, weight: dict, truth: dict, n_judge: int, seeds: int, rng) -> float:
    """Empirical SE of Precision(T) estimated from pairs (i ∝ w_i, j ∝ w_j in C(i)),
    drawn until n_judge distinct non-self pairs are judged."""
    members: dict = {}
    for i, c in clustering.items():
        members.setdefault(c, []).append(i)
    ids = list(clustering)
    w = np.array([weight[i] for i in ids])
    p_i = w / w.sum()
    mem = {c: (np.array(m, dtype=object), np.array([weight[j] for j in m])) for c, m in members.items()}
    ests = []
    for _ in range(seeds):
        seen, xs = set(), []
        while len(seen) < n_judge:
            i = ids[rng.choice(len(ids), p=p_i)]
            m, mw = mem[clustering[i]]
            j = m[rng.choice(len(m), p=mw / mw.sum())]
            if i != j:
                seen.add((min(i, j), max(i, j)))
            xs.append(1.0 if truth[i] == truth[j] else 0.0)
        ests.append(np.mean(xs))
    return float(np.std(ests, ddof=1))


def febrl_world():
    import pyarrow.parquet as pq

    p = example_paths()
    items = pq.read_table(p["items"])
    ids = items.column("item_id").to_pylist()
    weight = dict(zip(ids, items.column("weight").to_pylist()))
    truth = dict(zip(ids, items.column("entity_id").to_pylist()))
    base = dict(zip(*[pq.read_table(p["base"]).column(c).to_pylist() for c in ("item_id", "cluster_id")]))
    exp = dict(zip(*[pq.read_table(p["exp"]).column(c).to_pylist() for c in ("item_id", "cluster_id")]))
    return base, exp, weight, truth


def synthetic_world(n_entities=20000, seed=0):
    """Truth entities of 1-6 items; Base merges ~10% of entities in pairs (Precision about
    0.9); Exp changes ~5% of items: it undoes some of Base's merges and makes new ones."""
    rng = np.random.default_rng(seed)
    truth_arr = np.repeat(np.arange(n_entities), rng.integers(1, 7, n_entities))
    n = len(truth_arr)
    partner = np.where(rng.random(n_entities) < 0.1, rng.integers(0, n_entities, n_entities), np.arange(n_entities))
    base_arr = partner[truth_arr]
    exp_arr = base_arr.copy()
    touched = rng.random(n_entities) < 0.035
    undo = touched[truth_arr] & (rng.random(n) < 0.5)
    exp_arr[undo] = truth_arr[undo] + n_entities  # split off again (good when it was a bad merge)
    merge_to = np.where(rng.random(n_entities) < 0.02, rng.integers(0, n_entities, n_entities), np.arange(n_entities))
    exp_arr = np.where(exp_arr < n_entities, merge_to[np.minimum(exp_arr, n_entities - 1)], exp_arr)
    ids = [int(k) for k in range(n)]
    weight = dict(zip(ids, rng.lognormal(0, 0.5, n).tolist()))
    return (dict(zip(ids, base_arr.tolist())), dict(zip(ids, exp_arr.tolist())), weight,
            dict(zip(ids, truth_arr.tolist())))


def oracle(draws, truth):
    return {p: ("same" if truth[a] == truth[b] else "different") for p, a, b in zip(
        draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())}


def run(world, budget: int, seeds: int) -> dict:
    base, exp, weight, truth = world
    ids = list(base)
    d = build_diff(Inputs(pa.table({"item_id": ids, "cluster_id": [base[i] for i in ids]}),
                          pa.table({"item_id": ids, "cluster_id": [exp[i] for i in ids]}),
                          items=pa.table({"item_id": ids, "weight": [weight[i] for i in ids]})))
    o = overall(d)
    W = o["total_weight"]
    est = {"paper": [], "stratified (proportional)": [], "stratified (neyman)": []}
    pilot_budget = max(budget // 5, 6)
    # Proportional samples and Neyman pilots: many seeds per query (the same samples as one by one).
    props = sample_stratified_many(d, budget=budget, seeds=range(seeds), total_weight=W)
    pilots = sample_stratified_many(d, budget=pilot_budget, seeds=range(10_000, 10_000 + seeds), total_weight=W)
    for s in range(seeds):
        ps = sample_pairs(d, budget=budget, seed=s, total_weight=W)
        est["paper"].append(estimate_from_draws(ps.draws, oracle(ps.draws, truth), ps.totals, o["split_rate"],
                                                o["merge_rate"]).delta_precision.value)
        ss = props[s]
        by = {}
        for dr in ss.draws.values():
            by.update(oracle(dr, truth))
        est["stratified (proportional)"].append(
            estimate_stratified(ss, by, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).delta_precision.value)
        pilot = pilots[s]
        pby = {}
        for dr in pilot.draws.values():
            pby.update(oracle(dr, truth))
        sig = pilot_sigmas(pilot, pby)
        ny = sample_stratified(d, budget=budget - pilot_budget, seed=s, total_weight=W, allocation="neyman",
                               sigmas=sig)
        nby = {}
        for dr in ny.draws.values():
            nby.update(oracle(dr, truth))
        est["stratified (neyman)"].append(
            estimate_stratified(ny, nby, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).delta_precision.value)
    se = {k: float(np.std(v, ddof=1)) for k, v in est.items()}
    rng = np.random.default_rng(0)
    se["naive"] = float(np.hypot(naive_se(base, weight, truth, budget // 2, seeds, rng),
                                 naive_se(exp, weight, truth, budget // 2, seeds, rng)))
    return {"se": se, "affected_share": o["affected_items"] / o["items"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=100)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for name, world in (("synthetic change", synthetic_world()), ("FEBRL example", febrl_world())):
        r = run(world, a.budget, a.seeds)
        se = r["se"]
        print(f"{name} ({100 * r['affected_share']:.1f}% of items affected), budget {a.budget}, {a.seeds} seeds")
        for k in ("naive", "paper", "stratified (proportional)", "stratified (neyman)"):
            ratio = (se["paper"] / se[k]) ** 2 if se[k] else float("inf")
            print(f"  {k:<27} SE {se[k]:.5f}   judgements for the same SE: {1 / ratio:6.2f}x the paper's "
                  f"({ratio:.2f}x fewer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
