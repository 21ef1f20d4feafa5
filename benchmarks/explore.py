"""Benchmark: the exploration sample (issue 3) against the impact computation.

In one process, on the synthetic data of benchmarks/impact.py (plus two attribute
columns), times:

1. ``abcde.impact(...)`` (overall + top clusters): the reference point;
2. ``abcde.sample_items(..., size=N)``: reading, fragments, and drawing N unique
   affected items ∝ weight · JaccardDistance, from scratch;
3. on the written sample: an overall estimate, a slice (``--where``) and a group-by.

Prints the ratio sample / impact (target <= 1.5x) and the query times (target < 1 s).

    python benchmarks/explore.py --items 10000000 --size 1000000
"""

from __future__ import annotations

import argparse
import json
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
from abcde.sampling.explore import ExplorationSample  # noqa: E402


def generate_with_attributes(workdir: Path, n: int) -> tuple[Path, Path]:
    """benchmarks/impact.py's synthetic data plus an items table with two attributes
    (``src``: 7 values, ``width``: 0–999); returns the data folder and that table."""
    d, _ = generate(workdir, n, 0)
    items = d / "items_attrs.parquet"
    if not items.exists():
        duckdb.connect().execute(
            f"COPY (SELECT item_id, weight, 'src' || (hash(item_id) % 7)::VARCHAR AS src, "
            f"(hash(item_id) // 7 % 1000)::INTEGER AS width FROM '{d / 'items.parquet'}') TO '{items}' (FORMAT parquet)"
        )
    return d, items


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=HERE / ".data")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    d, items = generate_with_attributes(a.workdir, a.items)
    args = dict(items=str(items))
    warnings.simplefilter("ignore")
    out = {"items": a.items, "size": a.size}
    t = time.perf_counter()
    r = abcde.impact(str(d / "base.parquet"), str(d / "exp.parquet"), **args)
    out["impact_s"] = time.perf_counter() - t
    t = time.perf_counter()
    s = abcde.sample_items(str(d / "base.parquet"), str(d / "exp.parquet"), size=a.size, seed=a.seed, **args)
    out["sample_s"] = time.perf_counter() - t
    out["unique_items"] = s.table.num_rows
    out["affected_items"] = r.affected_items
    with tempfile.TemporaryDirectory() as tmp:
        path = s.write(Path(tmp) / "sample.parquet")
        t = time.perf_counter()
        s2 = ExplorationSample.read(path)
        out["read_s"] = time.perf_counter() - t
        for name, fn in [
            ("overall_s", lambda: s2.estimate()),
            ("slice_s", lambda: s2.estimate("src = 'src1' AND width <= 512")),
            ("group_s", lambda: s2.group(["src"], metric="merge", top=10)),
            ("slice_group_s", lambda: s2.group(["src", "width"], where="width <= 512", top=20)),
        ]:
            fn()  # first call registers the table
            t = time.perf_counter()
            fn()
            out[name] = time.perf_counter() - t
    out["ratio_sample_to_impact"] = out["sample_s"] / out["impact_s"]
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{a.items:,} items, {out['affected_items']:,} affected; sample of {out['unique_items']:,} unique items")
    print(f"impact                 {out['impact_s']:8.2f} s")
    print(f"exploration sample     {out['sample_s']:8.2f} s   ratio {out['ratio_sample_to_impact']:.2f}x "
          f"(target <= 1.5x: {'PASS' if out['ratio_sample_to_impact'] <= 1.5 else 'MISS'})")
    for k in ("read_s", "overall_s", "slice_s", "group_s", "slice_group_s"):
        ok = "PASS" if out[k] < 1 else "MISS"
        print(f"{k[:-2]:<22} {out[k]:8.3f} s   (target < 1 s: {ok})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
