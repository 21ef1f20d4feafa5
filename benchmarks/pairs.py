"""Benchmark: pair sampling for judgement (issue 4), speed and frugality.

Speed (one process, synthetic data of benchmarks/impact.py):
  * ``abcde.impact`` on N items (the reference point);
  * a pair sample with a budget of B judgements, from scratch (read, fragments,
    sample, partners, task files);
  * the same after putting the first 1M items in one Base cluster that Exp splits
    in two (about 10^12 pairs), to show the cost does not follow Σ|cluster|².

Frugality (a synthetic change touching about 5% of items, and the bundled FEBRL
example; oracle judgements from the true entities):
  at an equal budget of B judgements, the empirical standard error of ΔPrecision
  over many seeds for the paper's estimator versus the naive one (B/2 judgements
  to estimate each Precision separately, then subtract); printed as the SE ratio
  and as the judgement ratio (SE² ratio) for the same SE.

    python benchmarks/pairs.py --items 10000000 --budget 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from impact import generate  # noqa: E402

import abcde  # noqa: E402
from abcde.examples import example_paths  # noqa: E402
from abcde.fragments import build_diff  # noqa: E402
from abcde.impact import overall  # noqa: E402
from abcde.pairs import sample_pairs  # noqa: E402
from abcde.quality import draw_pair_sample, estimate_from_draws  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def speed(n: int, budget: int, workdir: Path) -> dict:
    d, _ = generate(workdir, n, 0)
    b, e, i = (str(d / f) for f in ("base.parquet", "exp.parquet", "items.parquet"))
    out = {}
    out["impact_s"], _ = timed(lambda: abcde.impact(b, e, items=i))
    with tempfile.TemporaryDirectory() as tmp:
        out["pairs_s"], _ = timed(lambda: draw_pair_sample(b, e, Path(tmp) / "p", items=i, budget=budget, seed=1))
    # The pair-specific work alone: on a diff (inputs read, fragments built) that impact also needs.
    out["diff_s"], diff = timed(lambda: build_diff(b, e, items=i))
    total_weight = overall(diff)["total_weight"]
    out["pairs_incremental_s"], _ = timed(lambda: sample_pairs(diff, budget=budget, seed=1, total_weight=total_weight))
    giant = d / "giant"
    giant.mkdir(exist_ok=True)
    if not (giant / "exp.parquet").exists():
        con = duckdb.connect()
        for side, expr in (("base", "-1"), ("exp", "CASE WHEN rn % 2 = 0 THEN -1 ELSE -2 END")):
            con.execute(
                f"COPY (SELECT item_id, CASE WHEN rn < 1000000 THEN {expr} ELSE cluster_id END AS cluster_id "
                f"FROM (SELECT *, row_number() OVER () - 1 AS rn FROM '{d / (side + '.parquet')}')) "
                f"TO '{giant / (side + '.parquet')}' (FORMAT parquet)"
            )
    gb, ge = str(giant / "base.parquet"), str(giant / "exp.parquet")
    out["impact_giant_s"], _ = timed(lambda: abcde.impact(gb, ge, items=i))
    with tempfile.TemporaryDirectory() as tmp:
        out["pairs_giant_s"], _ = timed(
            lambda: draw_pair_sample(gb, ge, Path(tmp) / "p", items=i, budget=budget, seed=1))
    return out


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


def frugality(world, budget: int, seeds: int) -> dict:
    import pyarrow as pa

    base, exp, weight, truth = world
    ids = list(base)
    d = build_diff(pa.table({"item_id": ids, "cluster_id": [base[i] for i in ids]}),
                   pa.table({"item_id": ids, "cluster_id": [exp[i] for i in ids]}),
                   items=pa.table({"item_id": ids, "weight": [weight[i] for i in ids]}))
    o = overall(d)
    ests = []
    for s in range(seeds):
        ps = sample_pairs(d, budget=budget, seed=s, total_weight=o["total_weight"])
        dr = ps.draws
        by = {pid: ("same" if truth[a] == truth[b] else "different") for pid, a, b in zip(
            dr.column("pair_id").to_pylist(), dr.column("item_a").to_pylist(), dr.column("item_b").to_pylist())}
        ests.append(estimate_from_draws(dr, by, ps.totals, o["split_rate"], o["merge_rate"]).delta_precision.value)
    ours = float(np.std(ests, ddof=1))
    rng = np.random.default_rng(0)
    half = max(budget // 2, 1)
    nb = naive_se(base, weight, truth, half, seeds, rng)
    ne = naive_se(exp, weight, truth, half, seeds, rng)
    naive = float(np.hypot(nb, ne))
    return {"budget": budget, "seeds": seeds, "se_paper": ours, "se_naive": naive,
            "se_ratio": ours / naive if naive else float("nan"),
            "judgement_ratio": (naive / ours) ** 2 if ours else float("inf"),
            "affected_share": o["affected_items"] / o["items"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--budget", type=int, default=10_000)
    ap.add_argument("--frugality-budget", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--workdir", type=Path, default=HERE / ".data")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if not a.skip_speed:
        s = speed(a.items, a.budget, a.workdir)
        print(f"{a.items:,} items, budget {a.budget:,} judgements")
        print(f"impact                          {s['impact_s']:8.2f} s")
        r = s["pairs_s"] / s["impact_s"]
        print(f"pair sample                     {s['pairs_s']:8.2f} s   {r:.2f}x impact (target <= 1x: "
              f"{'PASS' if r <= 1 else 'MISS'})")
        r3 = s["pairs_incremental_s"] / s["impact_s"]
        print(f"  of which pair-specific        {s['pairs_incremental_s']:8.2f} s   {r3:.2f}x impact (sampling on a "
              f"diff already built in {s['diff_s']:.2f} s)")
        print(f"impact, one 1M-item cluster     {s['impact_giant_s']:8.2f} s")
        r2 = s["pairs_giant_s"] / s["impact_giant_s"]
        print(f"pair sample, 1M-item cluster    {s['pairs_giant_s']:8.2f} s   {r2:.2f}x impact; "
              f"{s['pairs_giant_s'] / s['pairs_s']:.2f}x the sample without it")
    for name, world in (("synthetic change", synthetic_world()), ("FEBRL example", febrl_world())):
        f = frugality(world, a.frugality_budget, a.seeds)
        print(f"frugality, {name} ({100 * f['affected_share']:.1f}% of items affected), "
              f"budget {f['budget']} judgements, {f['seeds']} seeds:")
        print(f"  SE(ΔPrecision): paper estimator {f['se_paper']:.5f}, naive {f['se_naive']:.5f}; ratio "
              f"{f['se_ratio']:.3f}; the naive estimate needs {f['judgement_ratio']:.2f}x the judgements of ours "
              "for the same SE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
