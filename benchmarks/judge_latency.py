"""Judging web app: round-trip latency of one judgement over HTTP (POST → committed → next pair and
live estimates in the response), for a FEBRL pair sample of a given budget.

    .venv/bin/python benchmarks/judge_latency.py --budget 300 --judgements 100
    .venv/bin/python benchmarks/judge_latency.py --budget 30 --raters 3 --json

Each rater is a thread that asks for its next pair and posts a judgement (the ground truth),
like the page does; the time of each POST is measured end to end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq

from abcde.examples import example_paths
from abcde.web.judging_server import serve
from abcde.quality import draw_pair_sample


def call(url, path, body=None):
    req = urllib.request.Request(url.rstrip("/") + path, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--judgements", type=int, default=100, help="judgements per rater at most")
    ap.add_argument("--raters", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "pairs"
        p = example_paths("febrl3")
        draw_pair_sample(p["base"], p["exp"], d, items=p["items"], budget=a.budget, seed=1)
        truth = {r["item_id"]: r["entity_id"] for r in pq.read_table(d / "items.parquet").to_pylist()}
        srv = serve(d).start()
        tasks = srv.session.store.task_by_pair
        times: list[float] = []
        lock = threading.Lock()

        def rater(name):
            st = call(srv.url, f"/api/state?rater={name}")
            for _ in range(a.judgements):
                if st["next"] is None:
                    return
                t = tasks[st["next"]["pair_id"]]
                ans = "same" if truth[t["item_a"]] == truth[t["item_b"]] else "different"
                t0 = time.perf_counter()
                st = call(srv.url, "/api/judgements", {"rater": name, "pair_id": t["pair_id"], "judgement": ans})
                with lock:
                    times.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=rater, args=(f"r{k}",)) for k in range(a.raters)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        srv.shutdown()
    ms = sorted(x * 1000 for x in times)
    out = {"budget": a.budget, "pairs": len(tasks), "raters": a.raters, "judgements": len(ms),
           "median_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1),
           "max_ms": round(ms[-1], 1), "judgements_per_second": round(len(ms) / wall, 1)}
    print(json.dumps(out) if a.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
