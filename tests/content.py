"""Comparing JSON-like content across runs and engines."""

from __future__ import annotations

import pytest


def assert_same_content(a, b, path: str = "") -> None:
    """Equal nested dicts/lists, floats to 1e-9 relative: parallel sums (DuckDB threads, Spark
    partitions) add in different orders, so the last bits of a float may differ run to run."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            assert_same_content(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_content(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def assert_shows(text: str, value, what: str = "") -> None:
    """``text`` is what a person reads for ``value``: the number it shows (thousands separators,
    a % sign for 100·value, "undefined"/"n/a" for None allowed) equals ``value`` to the digits shown."""
    import re

    t = text.strip()
    if value is None:
        assert t in ("undefined", "n/a", "—", ""), (what, text)
        return
    m = re.fullmatch(r"(-?[\d,]*\.?\d*)(%?)", t)
    assert m and m.group(1) not in ("", "-"), (what, text)
    digits = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
    shown = float(m.group(1).replace(",", ""))
    want = 100 * value if m.group(2) else value
    assert abs(shown - want) <= 0.5 * 10 ** -digits + 1e-12 * abs(want), (what, text, value)
