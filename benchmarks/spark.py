#!/usr/bin/env python
"""Benchmark: ``abcde impact --engine spark`` against DuckDB and a direct PySpark program.

In one run, on the synthetic data of ``benchmarks/impact.py`` (N items):

* ``abcde impact --engine duckdb --json``                        (CLI process, wall time)
* ``abcde impact --engine spark --spark-master local[T] --json``  (CLI process, wall time)
* ``direct PySpark``: a hand-written PySpark DataFrame program computing the same
  numbers (restriction counts, fragments, window sums, overall SplitRate, MergeRate,
  JaccardDistance, the 10 most affected Base and Exp clusters), same master, its own
  process, wall time.

Each process starts its own JVM, so Spark start-up (~10 s) is inside both Spark times.
Prints the ratios; the target is ``abcde on Spark / direct PySpark <= 1.2``.

    .venv/bin/python benchmarks/spark.py                      # 10M items, local[2]
    .venv/bin/python benchmarks/spark.py --items 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from impact import DEFAULT_WORKDIR, generate  # noqa: E402

TARGET = 1.2


def direct(data: Path, master: str) -> dict:
    """The impact computation written directly against the PySpark DataFrame API."""
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master(master).appName("direct")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", str(4 * int(master[6:-1]))).getOrCreate())  # as abcde does
    spark.sparkContext.setLogLevel("ERROR")
    b = spark.read.parquet(str(data / "base.parquet")).select("item_id", F.col("cluster_id").alias("bc"))
    e = spark.read.parquet(str(data / "exp.parquet")).select("item_id", F.col("cluster_id").alias("ec"))
    i = spark.read.parquet(str(data / "items.parquet")).select("item_id", "weight")
    j = (b.withColumn("in_b", F.lit(True)).join(e.withColumn("in_e", F.lit(True)), "item_id", "full_outer")
         .join(i.withColumn("in_i", F.lit(True)), "item_id", "full_outer"))
    frag = (j.groupBy("bc", "ec", "in_b", "in_e")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.coalesce("weight", F.lit(1.0))).alias("w"))).cache()
    restr = frag.agg(
        F.sum(F.when(F.col("in_b") & F.col("in_e"), F.col("n"))).alias("common"),
        F.sum(F.when(F.col("in_b") & F.col("in_e").isNull(), F.col("n"))).alias("base_only"),
        F.sum(F.when(F.col("in_e") & F.col("in_b").isNull(), F.col("n"))).alias("exp_only"),
    ).collect()[0].asDict()
    f = frag.filter(F.col("in_b") & F.col("in_e"))
    f = (f.withColumn("wb", F.sum("w").over(Window.partitionBy("bc")))
         .withColumn("we", F.sum("w").over(Window.partitionBy("ec")))
         .withColumn("sr", (F.col("wb") - F.col("w")) / F.col("wb"))
         .withColumn("mr", (F.col("we") - F.col("w")) / F.col("we"))
         .withColumn("jd", 1 - F.col("w") / (F.col("wb") + F.col("we") - F.col("w")))).cache()
    o = f.agg(F.sum("w").alias("W"), F.sum(F.col("w") * F.col("sr")).alias("s"),
              F.sum(F.col("w") * F.col("mr")).alias("m"), F.sum(F.col("w") * F.col("jd")).alias("j"),
              F.sum(F.when(F.col("jd") > 0, F.col("n"))).alias("affected")).collect()[0].asDict()
    W = o["W"]
    top = {}
    for side, col in (("base", "bc"), ("exp", "ec")):
        rows = (f.groupBy(col).agg((F.sum(F.col("w") * F.col("jd")) / W).alias("contribution"))
                .filter(F.col("contribution") > 0).orderBy(F.desc("contribution"), col).limit(10).collect())
        top[side] = [r[col] for r in rows]
    return {"restriction": restr, "split_rate": o["s"] / W, "merge_rate": o["m"] / W,
            "jaccard_distance": o["j"] / W, "affected_items": o["affected"], "top": top}


def timed_process(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return dt, r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="local[T] for Spark, threads for DuckDB")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ap.add_argument("--direct-worker", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--master", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.direct_worker:
        print(json.dumps(direct(a.direct_worker, a.master)))
        return 0
    data, _ = generate(a.workdir, a.items, a.seed)
    master = f"local[{a.threads}]"
    cli = [str(Path(sys.executable).parent / "abcde"), "impact", "--base", str(data / "base.parquet"),
           "--exp", str(data / "exp.parquet"), "--items", str(data / "items.parquet"), "--json", "--quiet"]
    runs = {
        "abcde, DuckDB": cli + ["--threads", str(a.threads)],
        "abcde, Spark": cli + ["--engine", "spark", "--spark-master", master],
        "direct PySpark": [sys.executable, __file__, "--direct-worker", str(data), "--master", master],
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    outs = {}
    for _ in range(a.repeat):
        for name, cmd in runs.items():  # round-robin: machine noise hits all alike
            dt, out = timed_process(cmd)
            times[name].append(dt)
            outs[name] = json.loads(out)
    ours, dd = outs["abcde, Spark"], outs["direct PySpark"]
    for m in ("split_rate", "merge_rate", "jaccard_distance"):  # the same numbers, or the timing means nothing
        assert abs(ours[m] - dd[m]) < 1e-9 and abs(ours[m] - outs["abcde, DuckDB"][m]) < 1e-9, m
    assert [r["cluster_id"] for r in ours["top_clusters"]["base"]] == dd["top"]["base"]
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"impact on {a.items:,} items, {master} / {a.threads} DuckDB threads, median of {a.repeat} "
          f"(whole processes, JVM start included)")
    for k, v in med.items():
        print(f"  {k:<16} {v:8.1f} s")
    ratio = med["abcde, Spark"] / med["direct PySpark"]
    print(f"  abcde on Spark / direct PySpark = {ratio:.2f}  (target <= {TARGET})")
    print(f"  abcde on Spark / abcde on DuckDB = {med['abcde, Spark'] / med['abcde, DuckDB']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
