#!/usr/bin/env python
"""Scale: the DuckDB floors, ``abcde impact`` and the one-command job (``abcde evaluate``) side by
side on a synthetic diff generated inside DuckDB (issue 16, items 3 and 4).

    .venv/bin/python benchmarks/scale.py --items 10000000            # aligned and shuffled, 2 rounds
    .venv/bin/python benchmarks/scale.py --items 100000000 --repeat 1 --memory-limit 16GB
    .venv/bin/python benchmarks/scale.py --items 1000000000 --orders aligned --repeat 1 --memory-limit 14GB \
        --sample-size 1000000 --budget 10000
    # the whole job's stages beside the floor at 20M and 100M (issue 49; the figures in docs/scaling.md):
    .venv/bin/python benchmarks/scale.py --items 20000000,100000000 --orders shuffled --contenders floor,evaluate \
        --repeat 3 --sample-size 100000 --budget 2000 --memory-limit 4GB

The data (issue 16's recipe), written once per size and order into ``benchmarks/.data/scale-N-ORDER/``
by DuckDB itself, so no billion-element array ever exists in Python:

* item ids: a scrambled bijection of 0..N−1 (times a large odd constant mod 2^63);
* 1% of items in clusters of 10,000, 9% in clusters of 50, the rest in threes;
* Exp splits ~3% of Base clusters in two and merges ~3% of pairs of neighbouring clusters;
* weights −ln(u), u from a hash of the position;
* ``aligned``: the three files in the same row order; ``shuffled``: Exp and the items table each in
  their own order (row p holds item p·m mod N, m coprime with N: a permutation without a sort).

Each run is its own process, the contenders alternated round by round; wall time, CPU time (user +
system) and peak RSS (``os.wait4``) per run, the median per contender, and the ratios to the floor
(of wall time, and of CPU time: on a machine shared with other work, wall times swing with its load,
which each line prints, and CPU times much less). ``abcde evaluate``'s
stages come from its ``--json``: each stage's median seconds, its ratio to the floor and its share of
the impact stage (the pair sample's target: at most 30%), and what the whole process spends beside them.

* ``floor``: DuckDB joins the three Parquet files on the id (hash joins) and groups by (Base
  cluster, Exp cluster): the fragments, what every exact number follows from.
* ``zip-floor`` (aligned inputs): the same group-by over the three files joined by row position
  (DuckDB's ``POSITIONAL JOIN``), the least a diff of aligned inputs costs.
* ``impact``: ``abcde impact --json`` (whole process).
* ``evaluate``: ``abcde evaluate --json`` (whole process: impact, exploration sample, pair
  sample, report).
* ``impact@before``, ``evaluate@before`` (with ``--before DIR``): the same commands run from another
  source tree (``DIR/src`` first on ``PYTHONPATH``, e.g. ``git archive HEAD src | tar -x -C DIR``),
  alternated with this tree's in the same rounds: a change measured against what it replaces on a
  machine whose load varies.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / ".data"
GEN_VERSION = 2
ODD = 11400714819323198485  # 2^64 / golden ratio, odd: times it mod 2^63 is a bijection of 0..2^63−1


def _multiplier(n: int, start: int) -> int:
    """An odd number coprime with ``n`` near ``start``: ``p -> p·m mod n`` is then a bijection of 0..n−1."""
    m = start | 1
    while math.gcd(m, n) != 1:
        m += 2
    return m


def generate(n: int, order: str, *, memory_limit: str | None) -> Path:
    """Write base/exp/items Parquet for ``n`` items in ``order`` (cached).

    Every column of a row follows from its item number ``k``; the file's row ``p`` holds item
    ``k = p`` (Base, and all three files when aligned) or ``k = p·m mod n`` for a multiplier ``m``
    coprime with ``n``, one per file (a permutation: no sort, so a billion shuffled rows cost what
    aligned ones do)."""
    out = DATA / f"scale-v{GEN_VERSION}-{n}-{order}"
    if (out / "done").exists():
        return out
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    if memory_limit:
        con.execute(f"SET memory_limit = '{memory_limit}'")
    n1, n2 = n // 100, n // 100 + 9 * n // 100  # 1% in clusters of 10,000, 9% in clusters of 50, rest in threes
    c1 = (n1 + 9_999) // 10_000
    c2 = c1 + (n2 - n1 + 49) // 50
    for i, (name, cols) in enumerate((("base", "item_id, c AS cluster_id"),
                                      ("exp", "item_id, exp_cluster AS cluster_id"),
                                      ("items", "item_id, weight"))):
        k = "p" if order == "aligned" or name == "base" else f"((p::HUGEINT * {_multiplier(n, 2654435761 + 7919 * i)}) % {n})::BIGINT"
        con.execute(f"""
            COPY (
                SELECT {cols} FROM (
                    SELECT ((k::HUGEINT * {ODD}) % 9223372036854775808)::BIGINT AS item_id, c,
                           CASE WHEN hash(c, 'split') % 100 < 3 AND k % 2 = 1 THEN -1 - c    -- split in two
                                WHEN hash(c // 2, 'merge') % 100 < 3 THEN (c // 2) * 2     -- c and its neighbour merged
                                ELSE c END AS exp_cluster,
                           -ln((hash(k, 'w') % 1000000 + 0.5) / 1000000.0) AS weight
                    FROM (SELECT k, CASE WHEN k < {n1} THEN k // 10000
                                         WHEN k < {n2} THEN {c1} + (k - {n1}) // 50
                                         ELSE {c2} + (k - {n2}) // 3 END AS c
                          FROM (SELECT {k} AS k FROM range({n}) t(p)))))
            TO '{out / (name + '.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    (out / "done").write_text("ok")
    return out


FLOOR = """
import sys, duckdb
d, zipped = sys.argv[1], sys.argv[3] == "zip"
con = duckdb.connect()
if sys.argv[2]:
    con.execute(f"SET memory_limit = '{sys.argv[2]}'")
join = ("'{d}/base.parquet' b POSITIONAL JOIN '{d}/exp.parquet' e POSITIONAL JOIN '{d}/items.parquet' i" if zipped
        else "'{d}/base.parquet' b JOIN '{d}/exp.parquet' e USING (item_id) JOIN '{d}/items.parquet' i USING (item_id)")
r = con.execute(f'''SELECT count(*), sum(n) FROM (
    SELECT b.cluster_id, e.cluster_id, count(*) AS n, sum(i.weight) AS w
    FROM {join.format(d=d)}
    GROUP BY 1, 2)''').fetchone()
print(r[0], r[1])
"""


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, float, str, str | None]:
    """Wall seconds, CPU seconds (user + system), peak RSS (GB), stdout and (if it failed) the last line
    of stderr of one process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode()
        err.seek(0)
        lines = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
    failed = None if os.waitstatus_to_exitcode(status) == 0 else (lines[-1] if lines else "failed")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024 / 1024, text, failed


def _load() -> float:
    """The machine's load average over the last minute (other work competing for the cores)."""
    return os.getloadavg()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", default="10000000",
                    help="items, or several sizes separated by commas (e.g. 20000000,100000000): each size in turn")
    ap.add_argument("--orders", default="aligned,shuffled")
    ap.add_argument("--contenders", default="floor,zip-floor,impact,evaluate",
                    help="which to run (zip-floor: aligned inputs only)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds; each round runs every contender once")
    ap.add_argument("--memory-limit", default=None, help="DuckDB memory limit for all of them, e.g. 16GB")
    ap.add_argument("--sample-size", type=int, default=1000, help="evaluate's exploration sample")
    ap.add_argument("--budget", type=int, default=300, help="evaluate's pairs to judge")
    ap.add_argument("--all-rows", action="store_true", help="evaluate's impact tables: every row (default: the "
                    "affected rows, evaluate's default; a --before tree older than that default gets --only-affected)")
    ap.add_argument("--before", default=None, metavar="DIR",
                    help="also run impact and evaluate from the source tree DIR/src (impact@before, evaluate@before)")
    a = ap.parse_args(argv)
    abcde = [sys.executable, "-m", "abcde"]
    mem = ["--memory-limit", a.memory_limit] if a.memory_limit else []
    wanted = a.contenders.split(",")
    if a.before:
        wanted += [f"{k}@before" for k in ("impact", "evaluate") if k in wanted]
        before_env = {**os.environ, "PYTHONPATH": str(Path(a.before).resolve() / "src")}
    sizes = [int(x) for x in str(a.items).replace("_", "").split(",") if x]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{', '.join(f'{n:,}' for n in sizes)} items; {a.repeat} rounds")
    for n_items, order in [(n, o) for n in sizes for o in a.orders.split(",")]:
        t0 = time.perf_counter()
        d = generate(n_items, order, memory_limit=a.memory_limit)
        size = sum(f.stat().st_size for f in d.glob("*.parquet")) / 1e9
        print(f"\n{n_items:,} items, {order}: {d} ({size:.2f} GB of Parquet; generated or found in "
              f"{time.perf_counter() - t0:.1f} s)")
        inputs = ["--base", str(d / "base.parquet"), "--exp", str(d / "exp.parquet"), "--items", str(d / "items.parquet")]
        every = {
            "floor": [sys.executable, "-c", FLOOR, str(d), a.memory_limit or "", "hash"],
            "zip-floor": [sys.executable, "-c", FLOOR, str(d), a.memory_limit or "", "zip"],
            "impact": [*abcde, "impact", *inputs, "--json", "-q", *mem],
            "evaluate": [*abcde, "evaluate", *inputs, "--out", "", "--json", "-q", "--sample-size", str(a.sample_size),
                         "--budget", str(a.budget), *(["--all-rows"] if a.all_rows else []), *mem],
        }
        if a.before:
            every["impact@before"] = every["impact"]
            # The same output: the affected rows (a tree whose default wrote every row gets --only-affected).
            every["evaluate@before"] = [c for c in every["evaluate"] if c != "--all-rows"] + (
                [] if a.all_rows else ["--only-affected"])
        contenders = {k: v for k, v in every.items() if k in wanted and (k != "zip-floor" or order == "aligned")}
        got: dict[str, list] = {k: [] for k in contenders}
        stages: dict[str, list] = {}
        for _ in range(a.repeat):
            for name, cmd in contenders.items():
                if name.startswith("evaluate"):
                    out_dir = Path(tempfile.mkdtemp(prefix="abcde-scale-", dir=os.environ.get("ABCDE_SCALE_OUT")))
                    cmd = [*cmd[:cmd.index("--out") + 1], str(out_dir / "ev"), *cmd[cmd.index("--out") + 2:]]
                seconds, cpu, rss, text, failed = run(cmd, before_env if name.endswith("@before") else None)
                if name.startswith("evaluate"):
                    if not failed:
                        stages.setdefault(name, []).append(json.loads(text)["stages"])
                    shutil.rmtree(out_dir, ignore_errors=True)
                if failed:
                    print(f"  {name:<15} FAILED after {seconds:.1f} s (peak RSS {rss:5.2f} GB): {failed}", flush=True)
                    continue
                got[name].append((seconds, rss, cpu))
                print(f"  {name:<15} {seconds:8.1f} s  (CPU {cpu:7.1f} s)  peak RSS {rss:5.2f} GB  load {_load():.1f}",
                      flush=True)
        floors = {k: statistics.median(s for s, _, _ in got[k]) for k in ("floor", "zip-floor") if got.get(k)}
        cpu_floors = {k: statistics.median(c for _, _, c in got[k]) for k in floors}
        print(f"  median ({a.repeat} rounds); ratios of wall time, and of CPU time (steadier on a shared machine):")
        for name, runs in got.items():
            if not runs:
                continue
            t, c = statistics.median(s for s, _, _ in runs), statistics.median(c for _, _, c in runs)
            ratios = ", ".join(f"{t / f:4.2f}× the {k}" for k, f in floors.items())
            cpu_ratios = ", ".join(f"{c / f:4.2f}×" for f in cpu_floors.values())
            print(f"    {name:<15} {t:8.1f} s  ({ratios})  CPU {c:7.1f} s ({cpu_ratios})  "
                  f"peak RSS {max(r for _, r, _ in runs):5.2f} GB")
        for name, runs in stages.items():
            print_stages(name, runs, floors.get("floor"), statistics.median(s for s, _, _ in got[name])
                         if got.get(name) else None)
    return 0


def print_stages(name: str, runs: list[list[dict]], floor: float | None, whole: float | None) -> None:
    """``abcde evaluate``'s own stage table (its ``--json``), the median of each stage over the runs, beside
    the floor (the DuckDB join + group-by, its own process) and beside the impact stage; the whole
    process's time less the stages is start-up, reading the record and writing it."""
    names = [s["stage"] for s in runs[0]]
    med = {st: statistics.median(s["seconds"] for r in runs for s in r if s["stage"] == st) for st in names}
    print(f"  {name}'s stages (median of {len(runs)} runs):")
    print(f"    {'stage':<30} {'seconds':>8} {'/ floor':>8} {'/ impact':>9}")
    for st in names:
        ratio = f"{med[st] / floor:7.2f}×" if floor else "     n/a"
        print(f"    {st:<30} {med[st]:8.2f} {ratio:>8} {med[st] / med['impact']:8.0%}" if med.get("impact")
              else f"    {st:<30} {med[st]:8.2f} {ratio:>8}")
    if whole is not None:
        rest = whole - sum(med.values())
        print(f"    {'(start-up and the rest)':<30} {rest:8.2f} {(rest / floor if floor else math.nan):7.2f}×")
        print(f"    {'whole process':<30} {whole:8.2f} {(whole / floor if floor else math.nan):7.2f}×")


if __name__ == "__main__":
    sys.exit(main())
