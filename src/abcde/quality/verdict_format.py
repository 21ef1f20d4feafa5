"""How the verdict writes a number: an estimate with its sign, a signed percentage, a 95% interval,
and a list of words joined with "and" (:mod:`abcde.quality.verdict` and
:mod:`abcde.quality.verdict_truth` write with them, so one number reads the same in every sentence).

>>> signed(0.0012), signed_pct(-0.095), interval_text(-0.01, 0.02)
('+0.0012', '-9.500%', '95% interval -0.0100 to 0.0200')
"""

from __future__ import annotations

import math

from abcde.util import display


def num(x) -> float:
    """``x`` as a float, None as NaN (an estimate not known)."""
    return math.nan if x is None else float(x)


def signed(v: float) -> str:
    """An estimate with its sign (``+0.0012``, ``−0.0019``), as :func:`display.four`."""
    s = display.four(v)
    return s if s.startswith("-") or s in ("n/a",) or s == display.four(0.0) else "+" + s


def signed_pct(v: float) -> str:
    """A recall lift as a signed percentage (``+4.200%``, ``-9.500%``), as :func:`display.pct`."""
    s = display.pct(v)
    if s == "-" + display.pct(0.0):
        return display.pct(0.0)
    return s if s.startswith("-") or s in ("n/a", display.pct(0.0)) else "+" + s


def interval_text(lo: float, hi: float, fmt=display.four) -> str:
    return f"95% interval {fmt(lo)} to {fmt(hi)}"


def and_list(words: list[str]) -> str:
    """
    >>> and_list(["a"]), and_list(["a", "b"]), and_list(["a", "b", "c"])
    ('a', 'a and b', 'a, b and c')
    """
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
