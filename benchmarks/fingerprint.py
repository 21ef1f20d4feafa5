"""What fingerprinting an input costs: hashing a whole file against DuckDB scanning it.

abcde keys kept tables and samples by the sha256 of each input file's whole content
(``abcde.util.files.input_fingerprint``). This times that hash (and other hashes of the standard
library) on one Parquet file, beside DuckDB's scan of every column of the same file, with the file
in the page cache (medians of 3), and extrapolates to a billion items: 16 GB (one file of
``item_id, base_cluster, exp_cluster, weight``) and 36 GB (Base, Exp and items as ``abcde evaluate``
reads them at a billion, docs/scaling.md).

    python benchmarks/fingerprint.py                  # makes a ~1.25 GB file in the temporary directory
    python benchmarks/fingerprint.py --file big.parquet

Measured on the 2-core machine of docs/scaling.md (CPU with SHA instructions, OpenSSL 3.0), 1.25 GB:
sha256 1.56 GB/s (10 s per 16 GB), sha1 the same, blake2b 0.71 GB/s, sha512 0.66 GB/s, md5 0.55 GB/s;
sha256 in 64 MiB chunks on 2 threads 1.65 GB/s (no gain); DuckDB's scan of every column 1.10 GB/s
(15 s per 16 GB); the file read from disk with O_DIRECT 0.93 GB/s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb

from abcde.util.files import file_digest


def make_file(path: Path, rows: int) -> None:
    con = duckdb.connect()
    con.execute(f"COPY (SELECT i AS item_id, i // 3 AS base_cluster, (hash(i * 7) % 20000000)::BIGINT AS exp_cluster, "
                f"random() * 10 AS weight FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)")


def stream(path: Path, name: str) -> str:
    h = hashlib.new(name)
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def chunked(path: Path, workers: int = 2, chunk: int = 64 << 20) -> str:
    size = path.stat().st_size

    def one(k: int) -> bytes:
        h = hashlib.sha256()
        with open(path, "rb", buffering=0) as fh:
            fh.seek(k * chunk)
            h.update(fh.read(min(chunk, size - k * chunk)))
        return h.digest()

    with ThreadPoolExecutor(workers) as ex:
        return hashlib.sha256(b"".join(ex.map(one, range(-(-size // chunk))))).hexdigest()


def scan(path: Path) -> None:
    """Every value of every column read (a sum each: min/max and counts come from the statistics)."""
    con = duckdb.connect()
    cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    sums = [f'sum("{c}")' if t.split("(")[0] in NUMERIC else f'sum(length("{c}"::VARCHAR))' for c, t, *_ in cols]
    con.execute(f"SELECT {', '.join(sums)} FROM read_parquet('{path}')").fetchall()


NUMERIC = {"BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER", "DOUBLE", "FLOAT", "DECIMAL"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="a Parquet file to time (default: make one)")
    ap.add_argument("--rows", type=int, default=62_500_000, help="rows of the file made (about 20 bytes each)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "big.parquet"
        if args.file is None:
            make_file(path, args.rows)
        size = path.stat().st_size
        file_digest(path)  # into the page cache
        print(f"{path}: {size / 1e9:.2f} GB")
        runs = {"sha256 (abcde's input_fingerprint)": lambda: file_digest(path),
                **{name: (lambda n=name: stream(path, n)) for name in ("sha1", "blake2b", "sha512", "md5")},
                "sha256, 64 MiB chunks on 2 threads": lambda: chunked(path),
                "DuckDB: scan of every column": lambda: scan(path)}
        for name, run in runs.items():
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            rate = size / t
            print(f"{name:40s} {t:6.2f} s  {rate / 1e9:5.2f} GB/s   16 GB: {16e9 / rate:5.1f} s   "
                  f"36 GB: {36e9 / rate:5.1f} s")
        print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
