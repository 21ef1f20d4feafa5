"""Benchmark: the exploration UI's queries on a 1M-item sample (issue 6: each < 1 s).

Draws (or reuses) an exploration sample of ``--size`` unique affected items from the
synthetic data of benchmarks/impact.py, starts the exploration UI's server (Starlette on
uvicorn) in this process, and times what the page asks over real HTTP:

- the whole-sample estimate, a filter (structured conditions), a filter + group-by,
  example items, an item lookup, a cluster drill-down;

next to the reference point: the same slice and group-by as one hand-written DuckDB
SQL query over the sample's Parquet file (the floor for this work). Prints both and
the ratio per query. Each is the median of ``--repeat`` runs.

    python benchmarks/explore_ui.py --items 10000000 --size 1000000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from explore import generate_with_attributes  # noqa: E402

import abcde  # noqa: E402
from abcde.web.explore_app import ExploreApp, make_server  # noqa: E402


def timed(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=HERE / ".data")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    d, items = generate_with_attributes(a.workdir, a.items)
    path = a.workdir / f"explore-ui-n{a.items}-s{a.size}.parquet"
    if not path.exists():
        abcde.sample_items(str(d / "base.parquet"), str(d / "exp.parquet"), items=str(items), size=a.size,
                           seed=0).write(path)
    out: dict = {"items": a.items, "size": a.size}
    t = time.perf_counter()
    app = ExploreApp(path)
    app.meta()
    out["startup_s"] = time.perf_counter() - t
    srv = make_server(app).start()  # uvicorn in a background thread
    url = srv.url.rstrip("/")

    def post(p, body):
        req = urllib.request.Request(url + p, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def get(p):
        with urllib.request.urlopen(url + p) as r:
            return json.loads(r.read())

    flt = [{"column": "src", "op": "in", "value": ["src1", "src2", "src3"]},
           {"column": "width", "op": "<", "value": 512}]
    one = app.sample.table.slice(0, 1).to_pylist()[0]
    t = time.perf_counter()
    get(f"/api/cluster?side=base&id={one['base_cluster']}")
    out["first_drill_down_s (computes per-item metrics of the whole population once)"] = time.perf_counter() - t
    queries = {
        "whole sample": lambda: post("/api/query", {}),
        "filter": lambda: post("/api/query", {"filters": flt}),
        "filter + group by src": lambda: post("/api/query", {"filters": flt, "group_by": ["src"]}),
        "examples (20)": lambda: post("/api/examples", {"filters": flt, "n": 20}),
        "item lookup": lambda: get(f"/api/item?id={one['item_id']}"),
        "cluster drill-down": lambda: get(f"/api/cluster?side=exp&id={one['exp_cluster']}"),
    }
    con = duckdb.connect()
    jd = app.sample.metadata["jaccard_distance_T"]
    D = app.sample.metadata["total_draws"]
    ref_sql = (f"SELECT src, count(*), sum(draw_count * {jd} / jaccard_distance) / {D}, "
               f"sum(draw_count * {jd} / jaccard_distance * jaccard_distance) / {D}, "
               f"sum(draw_count * power({jd} / jaccard_distance * jaccard_distance, 2)) / {D} "
               f"FROM '{path}' WHERE src IN ('src1','src2','src3') AND width < 512 GROUP BY src")
    out["reference: DuckDB SQL filter + group by on the Parquet file_s"] = ref = timed(
        lambda: con.execute(ref_sql).fetchall(), a.repeat)
    rows = []
    for name, fn in queries.items():
        s = timed(fn, a.repeat)
        out[f"{name}_s"] = s
        rows.append((name, s))
    srv.shutdown()
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"exploration UI on a {a.size:,}-item sample ({a.items:,} items), median of {a.repeat} runs over HTTP")
    print(f"  startup (read sample, column metadata) {out['startup_s']:.2f} s")
    print(f"  first drill-down (per-item metrics of the population, once) "
          f"{out['first_drill_down_s (computes per-item metrics of the whole population once)']:.2f} s")
    print(f"  reference: one DuckDB SQL filter + group-by on the Parquet file {ref:.3f} s")
    for name, s in rows:
        print(f"  {name:<24} {s:.3f} s   ({s / ref:.1f}x the reference)   {'< 1 s' if s < 1 else '>= 1 s'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
