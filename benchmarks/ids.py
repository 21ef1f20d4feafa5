#!/usr/bin/env python
"""``abcde ids`` at scale beside ``abcde evaluate`` (issue 54: a history and a current clustering of
N/2 items each, so 2·(N/2) = N tagged items, within 3× the time of ``evaluate`` on N items).

    .venv/bin/python benchmarks/ids.py --items 20000000 --repeat 3 --memory-limit 4GB

The data come from ``benchmarks/scale.py``'s synthetic world of N items (shuffled order; written
there first when missing): the history is its Base clustering of the items whose id hashes into the
first half, the current clustering its Exp clustering of the same items; the Base scheme gives every
current cluster a fresh id, the Exp scheme the historical id of the largest overlap when that holds
more than half of the historical cluster. Written once, by DuckDB, into ``benchmarks/.data/ids-N/``.

Each run is its own process, the two commands alternated round by round; wall time, CPU time and
peak RSS (``os.wait4``) per run, the medians, and the ratio ``ids / evaluate``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ABCDE = [sys.executable, "-m", "abcde"]


def world(n: int, memory_limit: str) -> tuple[Path, Path]:
    """The scale world of ``n`` items and the ids world made from it (written when missing)."""
    src = HERE / ".data" / f"scale-v2-{n}-shuffled"
    if not (src / "items.parquet").exists():
        subprocess.run([sys.executable, str(HERE / "scale.py"), "--items", str(n), "--orders", "shuffled",
                        "--contenders", "floor", "--repeat", "1", "--memory-limit", memory_limit], check=True)
    out = HERE / ".data" / f"ids-{n}"
    if not (out / "exp_ids.parquet").exists():
        import duckdb

        out.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect()
        con.execute(f"SET memory_limit='{memory_limit}'")
        half = f"hash(item_id) % 2 = 0"
        con.execute(f"COPY (SELECT item_id, CAST(cluster_id AS VARCHAR) AS cluster_id FROM '{src}/base.parquet' "
                    f"WHERE {half}) TO "
                    f"'{out}/history.parquet' (FORMAT parquet)")
        con.execute(f"COPY (SELECT item_id, cluster_id FROM '{src}/exp.parquet' WHERE {half}) TO "
                    f"'{out}/current.parquet' (FORMAT parquet)")
        con.execute(f"COPY (SELECT DISTINCT cluster_id, 'new-' || cluster_id AS id FROM '{out}/current.parquet') TO "
                    f"'{out}/base_ids.parquet' (FORMAT parquet)")
        con.execute(f"""COPY (
            WITH o AS (SELECT c.cluster_id AS c, h.cluster_id AS k, count(*) AS n
                       FROM '{out}/current.parquet' c JOIN '{out}/history.parquet' h USING (item_id) GROUP BY ALL),
                 hs AS (SELECT cluster_id AS k, count(*) AS hn FROM '{out}/history.parquet' GROUP BY ALL),
                 best AS (SELECT c, arg_max(k, n) AS k, max(n) AS n FROM o GROUP BY c)
            SELECT c AS cluster_id, CASE WHEN 2 * n > hn THEN CAST(k AS VARCHAR) ELSE 'new-' || c END AS id
            FROM best JOIN hs USING (k)) TO '{out}/exp_ids.parquet' (FORMAT parquet)""")
        con.close()
    return src, out


def run(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one process."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(argv)}\n{p.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory-limit", default="4GB")
    ap.add_argument("--sample-size", type=int, default=100_000)
    ap.add_argument("--budget", type=int, default=2000)
    a = ap.parse_args()
    src, ids = world(a.items, a.memory_limit)
    common = ["--sample-size", str(a.sample_size), "--budget", str(a.budget), "--memory-limit", a.memory_limit,
              "-q", "--force"]
    times: dict[str, list] = {"evaluate": [], "ids": []}
    with tempfile.TemporaryDirectory(dir=HERE / ".data") as tmp:
        commands = {
            "evaluate": [*ABCDE, "evaluate", "--base", f"{src}/base.parquet", "--exp", f"{src}/exp.parquet", "--items",
                         f"{src}/items.parquet", "--out", f"{tmp}/ev", *common],
            "ids": [*ABCDE, "ids", "--history", f"{ids}/history.parquet", "--current", f"{ids}/current.parquet",
                    "--base-ids", f"{ids}/base_ids.parquet", "--exp-ids", f"{ids}/exp_ids.parquet", "--items",
                    f"{src}/items.parquet", "--out", f"{tmp}/ids", *common],
        }
        for r in range(a.repeat):
            for name, argv in commands.items():
                wall, cpu, rss = run(argv)
                times[name].append((wall, cpu, rss))
                print(f"round {r + 1}: {name:8} wall {wall:7.1f} s  cpu {cpu:7.1f} s  peak RSS {rss:,} MB  "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {k: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)) for k, v in times.items()}
    print(f"\nmedians: evaluate on {a.items:,} items {med['evaluate'][0]:.1f} s wall, {med['evaluate'][1]:.1f} s cpu; "
          f"ids on 2 × {a.items // 2:,} {med['ids'][0]:.1f} s wall, {med['ids'][1]:.1f} s cpu")
    print(f"ratio ids / evaluate: {med['ids'][0] / med['evaluate'][0]:.2f}× wall, "
          f"{med['ids'][1] / med['evaluate'][1]:.2f}× cpu (issue 54's goal: at most 3×)")


if __name__ == "__main__":
    main()
