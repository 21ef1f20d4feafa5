"""Benchmark: pair sampling for judgement (issue 4), speed. (Frugality: frugality.py.)

Speed (one process, synthetic data of benchmarks/impact.py):
  * ``abcde.impact`` on N items (the reference point);
  * a pair sample with a budget of B judgements, from scratch (read, fragments,
    sample, partners, task files);
  * the same after putting the first 1M items in one Base cluster that Exp splits
    in two (about 10^12 pairs), to show the cost does not follow Σ|cluster|².

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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from impact import generate  # noqa: E402

import abcde  # noqa: E402
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs  # noqa: E402
from abcde.metrics.impact import overall  # noqa: E402
from abcde.sampling.pairs import sample_pairs  # noqa: E402
from abcde.quality import draw_pair_sample  # noqa: E402


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
        out["pairs_s"], _ = timed(lambda: draw_pair_sample(b, e, Path(tmp) / "p", items=i, budget=budget, seed=1,
                                                                  estimator="paper"))
    # The pair-specific work alone: on a diff (inputs read, fragments built) that impact also needs.
    out["diff_s"], diff = timed(lambda: build_diff(Inputs(b, e, items=i)))
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
            lambda: draw_pair_sample(gb, ge, Path(tmp) / "p", items=i, budget=budget, seed=1, estimator="paper"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--budget", type=int, default=10_000)
    ap.add_argument("--workdir", type=Path, default=HERE / ".data")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
