"""One number style for everything a person reads: the terminal, the notebook (``_repr_html_``)
and, through the same rules, the pages.

- a rate (SplitRate, MergeRate, JaccardDistance, a weight share) as a percentage with 3 decimals;
- an estimate of a rate (GoodSplitRate, BadSplitRate, GoodMergeRate, BadMergeRate) or of a part of
  JaccardDistance (GoodSplitDistance, …, GoodDistance, BadDistance), its standard error and interval
  as percentages too, so they read as the SplitRate, MergeRate and JaccardDistance they decompose
  (:func:`estimate`);
- any other estimate or standard error (ΔPrecision, Precision) with 4 decimals (``n/a`` when
  undefined; a rounding residue such as 3e-11 reads 0.0000);
- a count with thousands separators; a weight by its magnitude (integers as counts, otherwise
  6 significant digits, no exponent);
- a missing value as ``(null)``.
"""

from __future__ import annotations

import html
import math

#: How a missing value (a null attribute) is shown.
NULL_TEXT = "(null)"

#: Decimals of a rate shown as a percentage, and of an estimate or a standard error.
PCT_DIGITS = 3
ESTIMATE_DIGITS = 4

#: The rules above as data, for the pages: ``assets/common.js`` reads them (``abcde.style()``) and
#: formats with the same rules (``abcde.pct``, ``abcde.four``, ``abcde.weight``, ``abcde.count``);
#: tests/test_display.py runs both on the same values in Chromium.
#: The estimates shown as percentages (rates of the total weight, like the impact rates).
PERCENT_ESTIMATES = ("good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate",
                     "good_split_distance", "bad_split_distance", "good_merge_distance", "bad_merge_distance",
                     "good_distance", "bad_distance", "recall_lift")
STYLE = {"pct_digits": PCT_DIGITS, "estimate_digits": ESTIMATE_DIGITS, "null": NULL_TEXT,
         "percent_estimates": list(PERCENT_ESTIMATES)}


def pct(v) -> str:
    """A rate as a percentage with 3 decimals (``n/a`` when undefined)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{100 * v:.{PCT_DIGITS}f}%"


def four(v) -> str:
    """An estimate or a standard error: 4 decimals; ``n/a`` when undefined."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    text = f"{v:.{ESTIMATE_DIGITS}f}"
    return text[1:] if text == "-" + "0." + "0" * ESTIMATE_DIGITS else text


def interval(e: dict) -> str:
    """An estimate's 95% interval (``ci_low``, ``ci_high`` of ``Estimate.to_dict()``), ends as :func:`four`.

    >>> interval({"ci_low": -0.01, "ci_high": 0.02}), interval({"ci_low": None, "ci_high": None})
    ('[-0.0100, 0.0200]', 'n/a')
    """
    return "n/a" if e["ci_low"] is None else f"[{four(e['ci_low'])}, {four(e['ci_high'])}]"


def estimate(metric: str, v) -> str:
    """An estimate or its standard error in its metric's style: a rate (:data:`PERCENT_ESTIMATES`)
    as :func:`pct`, anything else as :func:`four`.

    >>> estimate("good_split_rate", 0.1074), estimate("delta_precision", -0.0058)
    ('10.740%', '-0.0058')
    """
    return pct(v) if metric in PERCENT_ESTIMATES else four(v)


def estimate_interval(metric: str, e: dict) -> str:
    """:func:`interval` in its metric's style (:func:`estimate`).

    >>> estimate_interval("bad_merge_rate", {"ci_low": 0.0022, "ci_high": 0.0059})
    '[0.220%, 0.590%]'
    """
    if e["ci_low"] is None:
        return "n/a"
    return f"[{estimate(metric, e['ci_low'])}, {estimate(metric, e['ci_high'])}]"


def zero_se_note(metric: str, e: dict) -> str:
    """Why an estimate (``Estimate.to_dict()``) shows a standard error of 0 beside a 95% interval
    with width, or "" when it does not: its judgements agreed (all "same" or all "different", within
    each stratum), so they have no spread; its interval does not rest on that standard error alone
    (Agresti–Coull's for a judged share, a Jeffreys floor under a model + people variance), so a few
    agreeing judgements never make a point.

    >>> zero_se_note("good_split_rate", {"std_err": 0.0, "ci_low": 0.0, "ci_high": 0.0123, "method": "paper"})
    "s.e. 0: the judgements all agree (per stratum); Agresti–Coull's interval still has width"
    >>> zero_se_note("delta_precision", {"std_err": 0.01, "ci_low": -0.02, "ci_high": 0.02})
    ''
    """
    se, lo, hi = e.get("std_err"), e.get("ci_low"), e.get("ci_high")
    if se is None or lo is None or hi is None or not hi > lo or estimate(metric, se).strip("0.%-") != "":
        return ""
    if se > 1e-12:  # not 0, only shown as 0
        return f"s.e. {se:.1e}, shown as {estimate(metric, se)}"
    how = ("the interval's variance has a floor (Jeffreys')" if str(e.get("method") or "").startswith("prediction")
           else "Agresti–Coull's interval still has width")
    return f"s.e. 0: the judgements all agree (per stratum); {how}"


def count(v) -> str:
    return f"{v:,}"


def weight(v) -> str:
    """A weight by its magnitude: a whole number as a count, otherwise 6 significant digits."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1e6:
        return f"{v:,.0f}"
    digits = min(12, max(0, 5 - math.floor(math.log10(abs(v)))))
    return f"{v:,.{digits}f}".rstrip("0").rstrip(".")


def html_table(title: str, rows: list[tuple[str, str]] | list[list[str]], header: list[str] | None = None,
               note: str | None = None) -> str:
    """A small HTML table for a notebook: a caption, an optional header row, text cells (escaped)."""
    e = html.escape
    head = "".join(f"<th style='text-align:right'>{e(h)}</th>" for h in header) if header else ""
    body = "".join("<tr>" + "".join(
        f"<td style='text-align:{'left' if k == 0 else 'right'}'>{e(str(c))}</td>" for k, c in enumerate(r))
        + "</tr>" for r in rows)
    foot = f"<p style='color:#666;margin:.3em 0 0'>{e(note)}</p>" if note else ""
    return (f"<div class='abcde'><table><caption style='text-align:left;font-weight:600'>{e(title)}</caption>"
            f"{'<thead><tr>' + head + '</tr></thead>' if head else ''}<tbody>{body}</tbody></table>{foot}</div>")
