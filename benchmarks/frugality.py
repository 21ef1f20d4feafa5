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

from pairs import febrl_world, naive_se, synthetic_world  # noqa: E402

from abcde.fragments import build_diff  # noqa: E402
from abcde.impact import overall  # noqa: E402
from abcde.pairs import sample_pairs  # noqa: E402
from abcde.quality import estimate_from_draws  # noqa: E402
from abcde.stratified import estimate_stratified, pilot_sigmas, sample_stratified  # noqa: E402


def oracle(draws, truth):
    return {p: ("same" if truth[a] == truth[b] else "different") for p, a, b in zip(
        draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())}


def run(world, budget: int, seeds: int) -> dict:
    base, exp, weight, truth = world
    ids = list(base)
    d = build_diff(pa.table({"item_id": ids, "cluster_id": [base[i] for i in ids]}),
                   pa.table({"item_id": ids, "cluster_id": [exp[i] for i in ids]}),
                   items=pa.table({"item_id": ids, "weight": [weight[i] for i in ids]}))
    o = overall(d)
    W = o["total_weight"]
    est = {"paper": [], "stratified (proportional)": [], "stratified (neyman)": []}
    for s in range(seeds):
        ps = sample_pairs(d, budget=budget, seed=s, total_weight=W)
        est["paper"].append(estimate_from_draws(ps.draws, oracle(ps.draws, truth), ps.totals, o["split_rate"],
                                                o["merge_rate"]).delta_precision.value)
        ss = sample_stratified(d, budget=budget, seed=s, total_weight=W)
        by = {}
        for dr in ss.draws.values():
            by.update(oracle(dr, truth))
        est["stratified (proportional)"].append(
            estimate_stratified(ss, by, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).delta_precision.value)
        pilot_budget = max(budget // 5, 6)
        pilot = sample_stratified(d, budget=pilot_budget, seed=10_000 + s, total_weight=W)
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
