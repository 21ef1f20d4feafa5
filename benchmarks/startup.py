#!/usr/bin/env python
"""Benchmark the command line's start-up: whole-process wall time against an import floor.

Usage (from the repo root)::

    .venv/bin/python benchmarks/startup.py                 # 7 rounds
    .venv/bin/python benchmarks/startup.py --repeat 15 --json
    .venv/bin/python benchmarks/startup.py --imports 12    # also: the heaviest imports of each command

Contenders, each run in a fresh process, round-robin (one of each per round,
so a noisy neighbour slows all of them alike), ``--repeat`` rounds; the table
shows the median wall time of the whole process and its ratio to the floor:

* ``floor``  - ``python -c "import duckdb, pyarrow"``: the least any command
  that reads a table must pay;
* ``ibis``   - ``python -c "import ibis; ibis.duckdb.connect()"``: Ibis and its DuckDB
  backend, through which every command that reads a table runs its queries (no target);
* ``--help`` - ``abcde --help``;
* ``impact`` - ``abcde impact --json -q`` on the bundled FEBRL 3 example
  (5,000 items; ``abcde.examples.example_paths("febrl3")``);
* ``report`` - ``abcde report -q`` on the same example (HTML and Markdown
  written to a temporary directory).

Targets: ``--help`` <= 1.3x, ``impact`` <= 2.5x, ``report`` <= 5x the floor.
The exit code is 0 whether or not the targets are met (1 if a command fails).

``--imports N`` runs every contender once more under ``python -X importtime``
and lists its N imports with the largest cumulative time, each with the module
that imported it, to show where the start-up time goes and who pulls it in.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"--help": 1.3, "impact": 2.5, "report": 5.0}


def find_cli() -> list[str]:
    cand = Path(sys.executable).parent / "abcde"
    if cand.exists():
        return [str(cand)]
    found = shutil.which("abcde")
    return [found] if found else [sys.executable, "-m", "abcde"]


def contenders(tmp: Path) -> dict[str, list[str]]:
    from abcde.examples import example_paths

    p = example_paths("febrl3")
    cli = find_cli()
    inputs = ["--base", str(p["base"]), "--exp", str(p["exp"]), "--items", str(p["items"])]
    return {
        "floor": [sys.executable, "-c", "import duckdb, pyarrow"],
        # What building and running queries through Ibis costs before any work: every command that
        # reads a table pays it (design principle 1). No target; it shows how much is left.
        "ibis": [sys.executable, "-c", "import ibis; ibis.duckdb.connect()"],
        "--help": [*cli, "--help"],
        "impact": [*cli, "impact", *inputs, "--json", "-q"],
        "report": [*cli, "report", *inputs, "--out", str(tmp / "report.html"), "--markdown", str(tmp / "report.md"),
                   "-q"],
    }


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS (bytes) of one fresh process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.stderr.close()
    rss = ru.ru_maxrss if sys.platform == "darwin" else ru.ru_maxrss * 1024
    return wall, os.waitstatus_to_exitcode(status), rss


def heaviest_imports(cmd: list[str], env: dict[str, str], n: int) -> list[tuple[str, float, str | None]]:
    """The n imports with the largest cumulative time: (module, seconds, the module that imported it)."""
    if Path(cmd[0]).name == "abcde":
        cmd = [sys.executable, "-m", "abcde", *cmd[1:]]
    cmd = [cmd[0], "-X", "importtime", *cmd[1:]]
    err = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True).stderr
    rows: list[tuple[str, float]] = []
    parent: dict[str, str] = {}
    pending: dict[int, list[str]] = {}  # -X importtime prints a module after its children, one level deeper
    for line in err.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2 or "cumulative" in line:
            continue
        _, cum, field = line[len("import time:"):].split("|")
        name = field.strip()
        depth = (len(field) - len(field.lstrip()) - 1) // 2
        for child in pending.pop(depth + 1, []):
            parent[child] = name
        pending.setdefault(depth, []).append(name)
        rows.append((name, int(cum) / 1e6))
    skip = {"abcde", "abcde.cli", "abcde.__main__"}  # the wrappers every command goes through
    rows = sorted((r for r in rows if r[0] not in skip), key=lambda r: -r[1])[:n]
    return [(name, t, parent.get(name)) for name, t in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="Rounds (each runs every contender once; default 7).")
    ap.add_argument("--imports", type=int, default=0, metavar="N",
                    help="Also list each command's N heaviest imports (python -X importtime).")
    ap.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    args = ap.parse_args(argv)

    # Byte-code as an installed package has it: pip writes .pyc files at install time, so no user
    # compiles abcde's sources at every start. An environment with PYTHONDONTWRITEBYTECODE set (as
    # some sandboxes and CI images are) would otherwise charge every command for compiling abcde's
    # ~100 modules, and the floor (duckdb, pyarrow: installed with their .pyc) for nothing. The
    # warm-up round below writes them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["ABCDE_PROGRESS"] = "0"
    with tempfile.TemporaryDirectory(prefix="abcde-startup-") as tmp:
        cmds = contenders(Path(tmp))
        times: dict[str, list[float]] = {k: [] for k in cmds}
        rss: dict[str, int] = {k: 0 for k in cmds}
        for name, cmd in cmds.items():  # one warm-up round: page cache, .pyc files
            _, rc, _ = run_once(cmd, env)
            if rc != 0:
                print(f"{name} failed (exit {rc}): {' '.join(cmd)}", file=sys.stderr)
                return 1
        for i in range(args.repeat):
            order = list(cmds) if i % 2 == 0 else list(reversed(cmds))  # alternate the order too
            for name in order:
                wall, rc, peak = run_once(cmds[name], env)
                if rc != 0:
                    print(f"{name} failed (exit {rc})", file=sys.stderr)
                    return 1
                times[name].append(wall)
                rss[name] = max(rss[name], peak)
            print(f"round {i + 1}/{args.repeat}", file=sys.stderr)
        imports = {name: heaviest_imports(cmd, env, args.imports) for name, cmd in cmds.items()} if args.imports else {}

    floor = statistics.median(times["floor"])
    results = {}
    for name in cmds:
        med = statistics.median(times[name])
        results[name] = {"median_s": round(med, 4), "min_s": round(min(times[name]), 4),
                         "ratio": round(med / floor, 2), "target": TARGETS.get(name),
                         "meets_target": None if name not in TARGETS else med / floor <= TARGETS[name],
                         "peak_rss_mb": round(rss[name] / 2**20, 1), "command": " ".join(cmds[name])}
        if imports:
            results[name]["heaviest_imports"] = [{"module": m, "cumulative_s": round(t, 4), "imported_by": by}
                                                 for m, t, by in imports[name]]
    if args.json:
        print(json.dumps({"repeat": args.repeat, "python": sys.version.split()[0], "results": results}, indent=2))
        return 0
    print(f"{'contender':<10} {'median s':>9} {'min s':>7} {'/ floor':>8} {'target':>7}  {'ok':<3} {'peak RSS MB':>11}")
    for name, r in results.items():
        target = f"<={r['target']}x" if r["target"] else ""
        ok = "" if r["meets_target"] is None else ("yes" if r["meets_target"] else "NO")
        print(f"{name:<10} {r['median_s']:>9.3f} {r['min_s']:>7.3f} {r['ratio']:>7.2f}x {target:>7}  {ok:<3} "
              f"{r['peak_rss_mb']:>11.1f}")
    for name, rows in imports.items():
        print(f"\n{name}: heaviest imports (cumulative s, -X importtime)")
        for m, t, by in rows:
            print(f"  {t:7.3f}  {m}  " + (f"(imported by {by})" if by else "(top level, or by a function at run time)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
