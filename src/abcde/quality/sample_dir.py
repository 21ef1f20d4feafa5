"""The pair sample directory: its format, the writer and the reader.

A pair sample (drawn by :func:`abcde.quality.draw_pair_sample`) lives in a directory:

``pairs.parquet``
    one row per draw (vantage item first, class, label, pair id), with the
    sample's metadata (exact pair weight totals, SplitRate(T), MergeRate(T), …);
``metadata.json``
    the same metadata, readable;
``items.parquet``
    the attributes of every item in the sample;
``tasks.csv`` / ``tasks.parquet`` / ``tasks.jsonl``
    one row per pair needing a judgement, both items' attributes side by side
    (blind: no class, no clusters);
``slices.parquet``
    exact ``weight(I)`` and ``pairweight(I)`` (and, for the stratified design, the
    slice's self term) per attribute value asked for;
``judgements.csv`` / ``judgements.sqlite``
    judgements (a judgement file, e.g. the oracle's; the judgement store).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.errors import InputError
from abcde.util.files import replace_files, write_table_file


FORMAT = "abcde.pair_sample"
VERSION = 1
META_KEY = b"abcde"


def write_sample_dir(out_dir: str | os.PathLike, draws: pa.Table, items: pa.Table, meta: dict, *,
                     slices: pa.Table | None = None) -> Path:
    """Write a pair sample directory: ``pairs.parquet`` (draws with ``meta``, plus format, version
    and sample id), ``metadata.json``, ``items.parquet``, ``tasks.*`` and ``slices.parquet``
    (when given). All files are written aside and moved in together."""
    out = Path(out_dir)
    meta = {"format": FORMAT, "version": VERSION, **meta}
    meta["sample_id"] = _sample_id(draws, meta["seed"])

    def write(tmp: Path) -> None:
        pq.write_table(items, tmp / "items.parquet")
        if slices is not None:
            pq.write_table(slices, tmp / "slices.parquet")
        pq.write_table(draws.replace_schema_metadata({META_KEY: json.dumps(meta, default=str).encode()}),
                       tmp / "pairs.parquet")
        tasks = task_table(draws, items)
        for ext in ("csv", "parquet", "jsonl"):
            write_table_file(tasks.replace_schema_metadata(None), tmp / f"tasks.{ext}")
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")

    replace_files(out, write)
    stale = out / "judgements.csv"
    if stale.exists():  # judgements of an earlier sample in this directory would not match
        stale.unlink()
    return out


def _sample_id(draws: pa.Table, seed: int) -> str:
    h = hashlib.md5(str(seed).encode())
    for p in draws.column("pair_id").to_pylist() if draws.num_rows else []:
        h.update(p.encode())
    return h.hexdigest()[:16]


def task_table(draws: pa.Table, items_t: pa.Table) -> pa.Table:
    """One row per pair needing a judgement: ``pair_id, item_a, item_b`` and both
    items' attributes side by side (``a_<col>``, ``b_<col>``), in first-draw order."""
    attrs = {r["item_id"]: r for r in items_t.to_pylist()}
    cols = [c for c in items_t.column_names if c != "item_id"]
    rows, seen = [], set()
    if draws.num_rows:
        for a, b, pid, need in zip(draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist(),
                                   draws.column("pair_id").to_pylist(), draws.column("needs_judgement").to_pylist()):
            if not need or pid in seen:
                continue
            seen.add(pid)
            row = {"pair_id": pid, "item_a": a, "item_b": b}
            for c in cols:
                row[f"a_{c}"] = attrs.get(a, {}).get(c)
            for c in cols:
                row[f"b_{c}"] = attrs.get(b, {}).get(c)
            rows.append(row)
    if not rows:
        return pa.table({"pair_id": pa.array([], pa.string()), "item_a": pa.array([], pa.string()),
                         "item_b": pa.array([], pa.string())})
    return pa.Table.from_pylist(rows)


@dataclass(frozen=True)
class PairSampleDir:
    """A pair sample directory read back: draws, metadata, items, slices."""

    path: Path
    draws: pa.Table
    metadata: dict
    items: pa.Table

    @classmethod
    def read(cls, path: str | os.PathLike) -> "PairSampleDir":
        p = Path(path)
        f = p / "pairs.parquet"
        if not f.exists():
            raise InputError(f"'{p}' is not a pair sample directory (no pairs.parquet); make one with 'abcde pairs'.")
        t = pq.read_table(f)
        raw = (t.schema.metadata or {}).get(META_KEY)
        if raw is None:
            raise InputError(f"'{f}' has no abcde metadata; it was not written by 'abcde pairs'.")
        meta = json.loads(raw)
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise InputError(
                f"'{f}' is a {meta.get('format')!r} of version {meta.get('version')!r}; this abcde reads "
                f"{FORMAT} version {VERSION}. Draw the pairs again with this version."
            )
        items = pq.read_table(p / "items.parquet")
        return cls(p, t.replace_schema_metadata(None), meta, items)

    def judgeable_ids(self) -> set:
        if not self.draws.num_rows:
            return set()
        need = self.draws.column("needs_judgement").to_pylist()
        return {pid for pid, n in zip(self.draws.column("pair_id").to_pylist(), need) if n}

    def slices(self) -> dict:
        f = self.path / "slices.parquet"
        if not f.exists():
            return {}
        out: dict = {}
        for r in pq.read_table(f).to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["weight"], r["pairweight"])
        return out

    def slice_self_terms(self) -> dict:
        """``{column: {value: (Σ_{i∈I} u_ii·l_ii, Σ_{i∈I} u_ii)}}``, exact (for the stratified design)."""
        f = self.path / "slices.parquet"
        t = pq.read_table(f) if f.exists() else None
        if t is None or "self_term" not in t.column_names:
            return {}
        out: dict = {}
        for r in t.to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["self_term"], r["self_pairweight"])
        return out


