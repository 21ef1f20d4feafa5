#!/usr/bin/env python
"""Benchmark ``abcde impact`` against a DuckDB floor and scikit-learn's ARS.

Usage (from the repo root)::

    .venv/bin/python benchmarks/impact.py                      # 10M items, 3 repeats
    .venv/bin/python benchmarks/impact.py --items 200000 --repeat 1
    .venv/bin/python benchmarks/impact.py --memory-limit 4GB --threads 2 --json

Steps:

1. Generate (once, cached by N, seed and generator version) a synthetic
   Base/Exp clustering: ``base.parquet`` / ``exp.parquet`` (item_id,
   cluster_id) and ``items.parquet`` (item_id, weight), all three in the same
   item order, ~1M-row row groups. Generation is chunked and vectorized, so
   100M items need only a few GB of RAM.
2. Run every contender ``--repeat`` times, each run in its own fresh
   subprocess (round-robin across contenders), and record the median time and
   the peak RSS of the child (``os.wait4`` rusage):

   * ``ours (CLI)``  - ``abcde impact ... --json``, wall time of the whole process;
   * ``ours (API)``  - ``abcde.impact(...)`` call only (import, engine setup
     and ``to_dict()`` are timed separately and shown as notes);
   * ``floor``       - bare DuckDB ``base JOIN exp JOIN items GROUP BY 1, 2``
     over the same parquet files, query + fetch to Arrow;
   * ``ARS``         - read both label columns with pyarrow, check the item
     alignment, ``sklearn.metrics.adjusted_rand_score``; read + score.
3. Print a table (or ``--json``) and the targets ``ours / floor <= 2.0`` and
   ``ours < ARS``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_WORKDIR = HERE / ".data"

GEN_VERSION = 2
CHUNK = 1_000_000  # rows per generation chunk == parquet row group
ZIPF_A = 2.0  # cluster sizes ~ Zipf(2): ~89% of clusters have size 1-5
MAX_CLUSTER = 100_000  # truncation of the size distribution
SPLIT_FRAC = 0.03  # fraction of Base clusters (size >= 2) split in Exp
MERGE_FRAC = 0.03  # fraction of Base clusters merged pairwise in Exp
MASK62 = (1 << 62) - 1

FLOOR_SQL = """
SELECT b.cluster_id AS base_cluster_id,
       e.cluster_id AS exp_cluster_id,
       sum(i.weight) AS weight
FROM read_parquet('{base}') AS b
JOIN read_parquet('{exp}') AS e USING (item_id)
JOIN read_parquet('{items}') AS i USING (item_id)
GROUP BY 1, 2
"""

TARGET_FLOOR_RATIO = 2.0


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# data generation
# --------------------------------------------------------------------------


def _scramble(idx, mult, add):
    """Bijection of [0, 2**62): (idx * mult + add) mod 2**62, mult odd."""
    import numpy as np

    x = idx.astype(np.uint64) * np.uint64(mult) + np.uint64(add)
    return (x & np.uint64(MASK62)).astype(np.int64)


def _item_ids(i):
    return _scramble(i, 0x9E3779B97F4A7C15 & MASK62 | 1, 0x632BE59BD9B4E019 & MASK62)


def _cluster_ids(c):
    return _scramble(c, 0xBF58476D1CE4E5B9 & MASK62 | 1, 0x94D049BB133111EB & MASK62)


def dataset_dir(workdir: Path, n: int, seed: int) -> Path:
    return workdir / f"impact-v{GEN_VERSION}-n{n}-seed{seed}"


def generate(workdir: Path, n: int, seed: int) -> tuple[Path, dict]:
    """Generate (or reuse) the dataset; returns (directory, metadata)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = dataset_dir(workdir, n, seed)
    meta_path = out / "meta.json"
    if meta_path.exists():
        log(f"[data] reusing {out}")
        return out, json.loads(meta_path.read_text())

    if n < 1:
        raise SystemExit("--items must be >= 1")
    t0 = time.perf_counter()
    log(f"[data] generating {n:,} items (seed {seed}) into {out} ...")
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)

    rng = np.random.default_rng([seed, 0])

    # Cluster sizes: truncated Zipf, trimmed so that they sum to exactly n.
    parts, total = [], 0
    while total < n:
        batch = rng.zipf(ZIPF_A, size=max(4096, (n - total) // 6))
        batch = batch[batch <= MAX_CLUSTER]
        parts.append(batch)
        total += int(batch.sum())
    sizes = np.concatenate(parts).astype(np.int64)
    del parts
    ends = np.cumsum(sizes)
    k = int(np.searchsorted(ends, n))  # first cluster whose end >= n
    sizes = sizes[: k + 1]
    sizes[-1] -= int(ends[k]) - n
    ends = np.cumsum(sizes)
    nc = len(sizes)

    starts = ends - sizes
    # Exp: split a few % of clusters (size >= 2): a random 5-50% of their
    # items (at least 1, never all) move to 1 or 2 new clusters ...
    split = (sizes >= 2) & (rng.random(nc) < SPLIT_FRAC)
    new_parts = np.where(rng.random(nc) < 0.3, 2, 1).astype(np.int64)
    moved = np.where(split, np.clip(np.rint(rng.uniform(0.05, 0.5, nc) * sizes), 1, sizes - 1), 0)
    moved = moved.astype(np.int64)
    # ... and merge a few % of the other clusters pairwise.
    cand = np.flatnonzero(~split & (rng.random(nc) < MERGE_FRAC))
    rng.shuffle(cand)
    cand = cand[: len(cand) // 2 * 2]
    keep, absorbed = cand[0::2], cand[1::2]
    exp_target = np.arange(nc, dtype=np.int64)
    exp_target[absorbed] = keep
    merged = np.zeros(nc, dtype=bool)
    merged[cand] = True

    # Row i holds the item at slot (a*i + b) mod n, so the members of a
    # cluster are spread over the whole file rather than contiguous.
    a = max(1, int(n * 0.6180339887)) | 1
    while math.gcd(a, n) != 1:
        a += 2
    b = int(rng.integers(0, n))

    schema_c = pa.schema([("item_id", pa.int64()), ("cluster_id", pa.int64())])
    schema_i = pa.schema([("item_id", pa.int64()), ("weight", pa.float64())])
    writers = {
        "base": pq.ParquetWriter(tmp / "base.parquet", schema_c),
        "exp": pq.ParquetWriter(tmp / "exp.parquet", schema_c),
        "items": pq.ParquetWriter(tmp / "items.parquet", schema_i),
    }
    total_weight = 0.0
    try:
        for ci, start in enumerate(range(0, n, CHUNK)):
            crng = np.random.default_rng([seed, 1, ci])
            i = np.arange(start, min(start + CHUNK, n), dtype=np.int64)
            slot = (i * a + b) % n
            c = np.searchsorted(ends, slot, side="right")
            item_id = _item_ids(i)
            pos = slot - starts[c]  # rank of the item inside its Base cluster
            part = np.where(pos < moved[c], 1 + pos % new_parts[c], 0)
            exp_idx = np.where(part > 0, part * nc + c, exp_target[c])
            weight = crng.lognormal(0.0, 1.0, len(i))
            total_weight += float(weight.sum())
            writers["base"].write_table(
                pa.table({"item_id": item_id, "cluster_id": _cluster_ids(c)}, schema=schema_c),
                row_group_size=CHUNK,
            )
            writers["exp"].write_table(
                pa.table({"item_id": item_id, "cluster_id": _cluster_ids(exp_idx)}, schema=schema_c),
                row_group_size=CHUNK,
            )
            writers["items"].write_table(
                pa.table({"item_id": item_id, "weight": weight}, schema=schema_i),
                row_group_size=CHUNK,
            )
    finally:
        for w in writers.values():
            w.close()

    big = sizes >= 10_000
    meta = {
        "generator_version": GEN_VERSION,
        "items": n,
        "seed": seed,
        "row_group_rows": CHUNK,
        "base_clusters": nc,
        "cluster_size_max": int(sizes.max()),
        "cluster_size_p50": float(np.percentile(sizes, 50)),
        "cluster_size_p99": float(np.percentile(sizes, 99)),
        "clusters_size_1_to_5_frac": float(np.mean(sizes <= 5)),
        "clusters_size_ge_10k": int(big.sum()),
        "items_in_clusters_ge_10k": int(sizes[big].sum()),
        "split_clusters": int(split.sum()),
        "items_in_split_clusters": int(sizes[split].sum()),
        "items_moved_by_splits": int(moved.sum()),
        "merged_pairs": int(len(keep)),
        "items_in_merged_clusters": int(sizes[merged].sum()),
        "total_weight": total_weight,
        "bytes": {
            f: (tmp / f"{f}.parquet").stat().st_size for f in ("base", "exp", "items")
        },
        "generation_seconds": round(time.perf_counter() - t0, 2),
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    if out.exists():  # a concurrent run won the race
        shutil.rmtree(tmp)
        return out, json.loads(meta_path.read_text())
    tmp.rename(out)
    log(f"[data] done in {meta['generation_seconds']}s")
    return out, meta


# --------------------------------------------------------------------------
# workers (run in a fresh subprocess: `impact.py --_worker KIND PARAMS_JSON`)
# --------------------------------------------------------------------------


def worker_api(p: dict) -> dict:
    t = time.perf_counter()
    try:
        import abcde
        src_note = ""
    except ImportError as first:
        # Fall back to the source tree (package not installed in the venv).
        sys.path.insert(0, str(REPO / "src"))
        try:
            import abcde
            src_note = " (imported from src/, package not installed)"
        except ImportError as e:
            return {"ok": False, "error": f"abcde is not importable: {e!r} (first try: {first!r})"}
    t_import = time.perf_counter() - t

    if not hasattr(abcde, "impact"):
        where = getattr(abcde, "__file__", None) or list(getattr(abcde, "__path__", []))
        return {"ok": False, "error": f"abcde (from {where}{src_note}) has no attribute 'impact' yet"}

    t = time.perf_counter()
    engine = None
    kw = {k: p[k] for k in ("memory_limit", "threads") if p.get(k) is not None}
    if kw:
        engine = abcde.connect("duckdb", **kw)
    t_engine = time.perf_counter() - t

    t = time.perf_counter()
    res = abcde.impact(p["base"], p["exp"], items=p["items"], engine=engine)
    t_call = time.perf_counter() - t

    t = time.perf_counter()
    d = res.to_dict()
    t_to_dict = time.perf_counter() - t

    summary = {}
    for name in ("split_rate", "merge_rate", "jaccard_distance"):
        try:
            summary[name] = float(getattr(res, name))
        except Exception as e:  # noqa: BLE001 - report, do not crash the bench
            summary[name] = f"error: {e!r}"
    return {
        "ok": True,
        "seconds": t_call,
        "import_seconds": t_import,
        "engine_seconds": t_engine,
        "to_dict_seconds": t_to_dict,
        "to_dict_keys": sorted(d)[:20] if isinstance(d, dict) else str(type(d)),
        "metrics": summary,
        "version": getattr(abcde, "__version__", "?") + src_note,
    }


def worker_floor(p: dict) -> dict:
    t = time.perf_counter()
    import duckdb

    t_import = time.perf_counter() - t
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{p['tmp']}'")
    if p.get("memory_limit"):
        con.execute(f"SET memory_limit = '{p['memory_limit']}'")
    if p.get("threads"):
        con.execute(f"SET threads = {int(p['threads'])}")
    sql = FLOOR_SQL.format(base=p["base"], exp=p["exp"], items=p["items"])
    t = time.perf_counter()
    table = con.sql(sql).to_arrow_table()
    t_query = time.perf_counter() - t
    return {
        "ok": True,
        "seconds": t_query,
        "import_seconds": t_import,
        "groups": table.num_rows,
        "version": duckdb.__version__,
        "threads": con.execute("SELECT current_setting('threads')").fetchone()[0],
        "memory_limit": con.execute("SELECT current_setting('memory_limit')").fetchone()[0],
    }


def worker_ars(p: dict) -> dict:
    t = time.perf_counter()
    import numpy as np
    import pyarrow.parquet as pq
    import sklearn
    from sklearn.metrics import adjusted_rand_score

    t_import = time.perf_counter() - t

    t = time.perf_counter()
    base = pq.read_table(p["base"], columns=["item_id", "cluster_id"])
    exp = pq.read_table(p["exp"], columns=["item_id", "cluster_id"])
    bid = base.column("item_id").to_numpy()
    eid = exp.column("item_id").to_numpy()
    bc = base.column("cluster_id").to_numpy()
    ec = exp.column("cluster_id").to_numpy()
    del base, exp
    aligned = len(bid) == len(eid) and bool(np.array_equal(bid, eid))
    if not aligned:  # align by item_id (inner join on sorted ids)
        bo, eo = np.argsort(bid, kind="stable"), np.argsort(eid, kind="stable")
        common, bi, ei = np.intersect1d(bid[bo], eid[eo], assume_unique=True, return_indices=True)
        bc, ec = bc[bo][bi], ec[eo][ei]
    t_read = time.perf_counter() - t

    t = time.perf_counter()
    ars = adjusted_rand_score(bc, ec)
    t_score = time.perf_counter() - t
    return {
        "ok": True,
        "seconds": t_read + t_score,
        "read_seconds": t_read,
        "score_seconds": t_score,
        "import_seconds": t_import,
        "aligned_by_row": aligned,
        "ars": float(ars),
        "version": sklearn.__version__,
    }


WORKERS = {"api": worker_api, "floor": worker_floor, "ars": worker_ars}


def worker_main(kind: str, params_json: str) -> int:
    p = json.loads(params_json)
    try:
        res = WORKERS[kind](p)
    except Exception as e:  # noqa: BLE001
        res = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    Path(p["result"]).write_text(json.dumps(res))
    return 0


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------


def run_child(cmd, *, cwd, stdout_path, stderr_path, timeout):
    """Run cmd in a fresh process; return (rc, wall_seconds, peak_rss_bytes, timed_out)."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        timed_out = threading.Event()

        def _kill():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the session we just started
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, _kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux (bytes on macOS)
    rss = ru.ru_maxrss if sys.platform == "darwin" else ru.ru_maxrss * 1024
    return proc.returncode, wall, rss, timed_out.is_set()


def tail(path, n=15):
    try:
        lines = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def find_cli(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    cand = Path(sys.executable).parent / "abcde"
    if cand.exists():
        return str(cand)
    return shutil.which("abcde")


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--_worker"]:
        return worker_main(argv[1], argv[2])

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000_000, help="number of items (default 10M)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender; median reported (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="data generation seed (default 0)")
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                    help=f"data/cache directory (default {DEFAULT_WORKDIR})")
    ap.add_argument("--memory-limit", default=None,
                    help="memory limit passed to abcde (CLI --memory-limit / abcde.connect) and the DuckDB floor, e.g. 4GB")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads passed to abcde and the DuckDB floor (default: engine default)")
    ap.add_argument("--skip-ars", action="store_true", help="skip the scikit-learn ARS contender")
    ap.add_argument("--skip-ours", action="store_true", help="skip both abcde contenders")
    ap.add_argument("--abcde-cli", default=None, help="path of the abcde executable (default: next to this python)")
    ap.add_argument("--timeout", type=float, default=3600, help="per-run timeout in seconds (default 3600)")
    ap.add_argument("--json", action="store_true", help="print results as JSON instead of a table")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

    workdir = args.workdir.resolve()
    data, meta = generate(workdir, args.items, args.seed)
    files = {f: str(data / f"{f}.parquet") for f in ("base", "exp", "items")}
    run_dir = data / "runs"
    run_dir.mkdir(exist_ok=True)
    tmp_dir = run_dir / "tmp"
    tmp_dir.mkdir(exist_ok=True)

    # ---- contenders -------------------------------------------------------
    contenders = {}  # name -> dict(cmd_fn | error, kind)
    me = str(Path(__file__).resolve())
    common = {**files, "memory_limit": args.memory_limit, "threads": args.threads, "tmp": str(tmp_dir)}

    def worker_cmd(kind):
        def build(rep):
            params = {**common, "result": str(run_dir / f"{kind}-{rep}.result.json")}
            return [sys.executable, me, "--_worker", kind, json.dumps(params)], params["result"]
        return build

    contenders["floor"] = {"label": "floor (DuckDB join+group by)", "build": worker_cmd("floor")}
    if not args.skip_ours:
        cli = find_cli(args.abcde_cli)
        if cli is None:
            contenders["ours_cli"] = {
                "label": "ours (abcde CLI, whole process)",
                "error": "abcde CLI not found next to this python or on PATH (is the package installed? pip install -e .)",
            }
        else:
            def build_cli(rep, cli=cli):
                cmd = [cli, "impact", "--base", files["base"], "--exp", files["exp"],
                       "--items", files["items"], "--json"]
                if args.memory_limit:
                    cmd += ["--memory-limit", args.memory_limit]
                if args.threads:
                    cmd += ["--threads", str(args.threads)]
                return cmd, None
            contenders["ours_cli"] = {"label": "ours (abcde CLI, whole process)", "build": build_cli}
        contenders["ours_api"] = {"label": "ours (abcde.impact() call)", "build": worker_cmd("api")}
    if not args.skip_ars:
        contenders["ars"] = {"label": "ARS (sklearn, read+score)", "build": worker_cmd("ars")}

    results = {name: {"label": c["label"], "runs": [], "error": c.get("error")} for name, c in contenders.items()}

    # ---- run, round-robin -------------------------------------------------
    for rep in range(args.repeat):
        for name, c in contenders.items():
            r = results[name]
            if r["error"]:
                continue
            cmd, result_path = c["build"](rep)
            stdout_path = run_dir / f"{name}-{rep}.stdout"
            stderr_path = run_dir / f"{name}-{rep}.stderr"
            log(f"[run {rep + 1}/{args.repeat}] {c['label']} ...")
            rc, wall, rss, timed_out = run_child(
                cmd, cwd=tmp_dir, stdout_path=stdout_path, stderr_path=stderr_path, timeout=args.timeout)
            run = {"process_seconds": wall, "peak_rss_bytes": rss, "returncode": rc}
            if timed_out:
                r["error"] = f"timed out after {args.timeout}s"
            elif rc != 0:
                r["error"] = f"exit code {rc}: {tail(stderr_path)}"
            elif result_path is None:  # CLI: the whole process is the measurement
                run["seconds"] = wall
                run["stdout_bytes"] = stdout_path.stat().st_size
                try:
                    out = json.loads(stdout_path.read_text()) if run["stdout_bytes"] < 512 << 20 else None
                    if isinstance(out, dict):
                        run["json_keys"] = sorted(out)[:20]
                except ValueError as e:
                    r["error"] = f"CLI did not print valid JSON: {e}"
            else:
                try:
                    wres = json.loads(Path(result_path).read_text())
                except (OSError, ValueError) as e:
                    wres = {"ok": False, "error": f"no worker result ({e}); stderr: {tail(stderr_path)}"}
                if not wres.pop("ok"):
                    r["error"] = wres.get("error", "failed")
                    if wres.get("traceback"):
                        r["traceback"] = wres["traceback"]
                else:
                    run.update(wres)
            if r["error"]:
                log(f"    FAILED: {r['error'].splitlines()[0] if r['error'] else ''}")
            else:
                r["runs"].append(run)
                log(f"    {run['seconds']:.3f}s (process {wall:.3f}s, peak RSS {rss / 1e9:.2f} GB)")

    # ---- summarise ----------------------------------------------------------
    for r in results.values():
        runs = r["runs"]
        if r["error"] or not runs:
            r["ok"] = False
            continue
        r["ok"] = True
        r["median_seconds"] = statistics.median(x["seconds"] for x in runs)
        r["median_process_seconds"] = statistics.median(x["process_seconds"] for x in runs)
        r["peak_rss_gb"] = max(x["peak_rss_bytes"] for x in runs) / 1e9
        for k in ("import_seconds", "to_dict_seconds", "engine_seconds", "read_seconds", "score_seconds"):
            if k in runs[0]:
                r["median_" + k] = statistics.median(x[k] for x in runs)
        last = runs[-1]
        for k in ("groups", "ars", "aligned_by_row", "metrics", "version", "threads", "memory_limit",
                  "stdout_bytes", "json_keys", "to_dict_keys"):
            if k in last:
                r[k] = last[k]

    floor = results["floor"]
    floor_s = floor.get("median_seconds") if floor["ok"] else None
    for r in results.values():
        if r["ok"] and floor_s:
            r["ratio_to_floor"] = r["median_seconds"] / floor_s

    def target_floor(name):
        r = results.get(name)
        if not r or not r["ok"] or not floor_s:
            return {"status": "n/a", "reason": (r or {}).get("error") or "not run"}
        ratio = r["median_seconds"] / floor_s
        return {"ratio": ratio, "status": "PASS" if ratio <= TARGET_FLOOR_RATIO else "MISS"}

    def target_ars(name):
        r, a = results.get(name), results.get("ars")
        if not r or not r["ok"] or not a or not a["ok"]:
            why = (r or {}).get("error") or ("ARS skipped/failed" if not (a and a["ok"]) else "not run")
            return {"status": "n/a", "reason": why}
        return {"ours_seconds": r["median_seconds"], "ars_seconds": a["median_seconds"],
                "status": "PASS" if r["median_seconds"] < a["median_seconds"] else "MISS"}

    targets = {
        "ours_over_floor_le_2": {"api": target_floor("ours_api"), "cli": target_floor("ours_cli")},
        "ours_lt_ars": {"api": target_ars("ours_api"), "cli": target_ars("ours_cli")},
    }
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    try:
        mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        mem_total = None
    machine = {
        "nproc": affinity or os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "mem_total_gb": mem_total,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    report = {
        "items": args.items,
        "repeat": args.repeat,
        "memory_limit": args.memory_limit,
        "threads": args.threads,
        "data_dir": str(data),
        "dataset": meta,
        "machine": machine,
        "results": results,
        "targets": targets,
    }

    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_table(report)
    return 0


def print_table(rep):
    m, d = rep["machine"], rep["dataset"]
    print(f"abcde impact benchmark: {rep['items']:,} items, {rep['repeat']} repeat(s), median reported"
          + (f", memory limit {rep['memory_limit']}" if rep["memory_limit"] else "")
          + (f", threads {rep['threads']}" if rep["threads"] else ""))
    print(f"data: {d['base_clusters']:,} base clusters (max size {d['cluster_size_max']:,}, "
          f"{d['clusters_size_1_to_5_frac']:.0%} of size 1-5, {d['clusters_size_ge_10k']} of size >= 10k), "
          f"{d['split_clusters']:,} split, {d['merged_pairs']:,} merged pairs; {rep['data_dir']}")
    print()
    hdr = f"{'contender':<34} {'median s':>10} {'/ floor':>8} {'process s':>10} {'peak RSS GB':>12}  notes"
    print(hdr)
    print("-" * len(hdr))
    for name, r in rep["results"].items():
        if not r["ok"]:
            msg = (r.get("error") or "no runs").splitlines()[0]
            print(f"{r['label']:<34} {'FAILED':>10} {'':>8} {'':>10} {'':>12}  {msg}")
            continue
        notes = []
        if "median_import_seconds" in r:
            notes.append(f"import {r['median_import_seconds']:.2f}s")
        if "median_to_dict_seconds" in r:
            notes.append(f"to_dict {r['median_to_dict_seconds']:.3f}s")
        if "median_read_seconds" in r:
            notes.append(f"read {r['median_read_seconds']:.2f}s + score {r['median_score_seconds']:.2f}s")
        if "groups" in r:
            notes.append(f"{r['groups']:,} groups")
        if "ars" in r:
            notes.append(f"ARS={r['ars']:.4f}")
        if "stdout_bytes" in r:
            notes.append(f"stdout {r['stdout_bytes'] / 1e6:.1f} MB")
        if "version" in r:
            notes.append(f"v{r['version']}")
        ratio = f"{r['ratio_to_floor']:.2f}x" if "ratio_to_floor" in r else "-"
        print(f"{r['label']:<34} {r['median_seconds']:>10.3f} {ratio:>8} "
              f"{r['median_process_seconds']:>10.3f} {r['peak_rss_gb']:>12.2f}  {', '.join(notes)}")
    print()

    def fmt(t, kind):
        if t["status"] == "n/a":
            return "n/a (not run or failed, see above)"
        if kind == "floor":
            return f"{t['ratio']:.2f}x {t['status']}"
        return f"{t['ours_seconds']:.3f}s vs {t['ars_seconds']:.3f}s {t['status']}"

    tg = rep["targets"]
    print(f"ours / floor <= {TARGET_FLOOR_RATIO} ?   API: {fmt(tg['ours_over_floor_le_2']['api'], 'floor')}"
          f"   CLI: {fmt(tg['ours_over_floor_le_2']['cli'], 'floor')}")
    print(f"ours < ARS ?            API: {fmt(tg['ours_lt_ars']['api'], 'ars')}"
          f"   CLI: {fmt(tg['ours_lt_ars']['cli'], 'ars')}")
    mem = f", {m['mem_total_gb']:.1f} GB RAM" if m.get("mem_total_gb") else ""
    print(f"nproc: {m['nproc']} (cpu_count {m['cpu_count']}{mem}; {m['platform']}, Python {m['python']})")


if __name__ == "__main__":
    sys.exit(main())
