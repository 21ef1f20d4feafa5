"""The answer to "is Exp better?" in a few plain sentences, with the evidence beside them.

:func:`verdict` reads a quality result (and, when a ground truth was given, each side's pointwise
metrics) and applies one rule, which every surface shows as it is: the terminal (``abcde
quality``, ``evaluate``, ``demo``), the report (a box at the top of report.html, the first lines of
report.md), the judging app's owner view and the notebook.

The rule
--------
- **Precision.** ΔPrecision's 95% interval (as built by the estimator, inside its feasible range)
  above 0: Precision went up; below 0: it went down; containing 0: no detectable change at 95%.
  Every pair judged (a census): the change is exact, and said so. No usable judgement yet in some
  stratum: not known yet, and which stratum still needs judgements.
- **Splits and merges.** The share of the split weight that was good, GoodSplitRate/SplitRate,
  and of the merge weight, GoodMergeRate/MergeRate, with their intervals (SplitRate and MergeRate
  are exact, so the intervals are the rates' intervals divided by them).
- **Slices.** ΔPrecision(I) of each slice with a p-value from its estimate and standard error
  (Student t on its judged draws − 1 degrees of freedom); Holm's step-down method across all the
  slices shown (of every ``--slice-by`` column together) keeps the chance of naming any slice
  wrongly at 5%. A slice is named as significantly worse (or better) only when Holm rejects it, even
  when the whole shows no change.
- **Ground truth.** Each side's pointwise Precision and Recall against it (exact); recall changes
  are what a ground truth measures well (paper, "Introduction").
- **Next step.** When the interval still contains 0: how many more judged pairs would make the
  interval's half-width as small as the estimate's size (at least 0.001), from the current
  half-width ``h``, ``n`` judged pairs and the ``N`` distinct pairs of the sampled strata
  (finite-population correction): ``n' = 1 / ((1/n − 1/N)·(target/h)² + 1/N)``; the command to
  get there (``abcde pairs --extend DIR --budget M``).

It never claims more than the interval: "no detectable change" is not "no change".
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from abcde.util import display

#: The family-wise error rate of the slice statements and the confidence level of every interval.
ALPHA = 0.05
#: The smallest change the next-step advice aims to resolve (ΔPrecision units: 0.001 = 0.1 pp).
MIN_RESOLUTION = 0.001


@dataclass(frozen=True)
class Verdict:
    """The answer in sentences (:attr:`sentences`, :attr:`text`) and the facts they rest on.

    Attributes
    ----------
    sentences
        Plain sentences, headline first.
    facts
        The structured facts: ``precision`` (``direction``: ``up``, ``down``, ``none``, ``undefined``;
        estimate, interval, ``exact``), ``splits`` and ``merges`` (good shares with intervals),
        ``slices`` (each with its p-value and Holm's decision), ``truth``, ``next_step``, and the
        ``sentences`` themselves (so a dict carrying the facts carries the words).
    """

    sentences: tuple[str, ...]
    facts: dict = field(default_factory=dict)

    @property
    def headline(self) -> str:
        return self.sentences[0] if self.sentences else ""

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def to_dict(self) -> dict:
        return {"verdict": self.text, "sentences": list(self.sentences), "facts": self.facts}

    def markdown(self) -> str:
        """The sentences for a review comment: the headline in bold, the rest as a list."""
        if not self.sentences:
            return ""
        head, *rest = self.sentences
        return "\n".join([f"**{head}**", *([""] if rest else []), *(f"- {s}" for s in rest)])

    def _repr_html_(self) -> str:
        if not self.sentences:
            return ""
        head, *rest = self.sentences
        items = "".join(f"<li>{html.escape(s)}</li>" for s in rest)
        return (f"<div class='abcde verdict'><p style='font-weight:600;margin:.2em 0'>{html.escape(head)}</p>"
                f"{'<ul>' + items + '</ul>' if items else ''}</div>")

    def __str__(self) -> str:
        return "\n".join(self.sentences)


def _num(x) -> float:
    return math.nan if x is None else float(x)


def _signed(v: float) -> str:
    """An estimate with its sign (``+0.0012``, ``−0.0019``), as :func:`display.four`."""
    s = display.four(v)
    return s if s.startswith("-") or s in ("n/a",) or s == display.four(0.0) else "+" + s


def _interval_text(lo: float, hi: float, fmt=display.four) -> str:
    return f"95% interval {fmt(lo)} to {fmt(hi)}"


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections for ``p_values`` at family-wise level ``alpha``: sort the
    p-values, reject the k-th smallest (k = 0, 1, …) while it is at most ``alpha/(m − k)``.

    >>> holm([0.01, 0.04, 0.03]), holm([0.01, 0.02, 0.2])
    ([True, False, False], [True, True, False])
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda k: p_values[k])
    out = [False] * m
    for rank, k in enumerate(order):
        if p_values[k] <= alpha / (m - rank):
            out[k] = True
        else:
            break
    return out


def slice_p_value(e: dict) -> float:
    """Two-sided p-value of ``estimate = 0`` from an estimate dict (``estimate``, ``std_err``,
    ``n_judgements``): Student t on ``n − 1`` degrees of freedom (normal below two); a standard error
    of 0 (the slice's part is exact) gives 0 for a non-zero estimate and 1 for zero. NaN: undefined."""
    from scipy.stats import norm, t

    est, se, n = _num(e.get("estimate")), _num(e.get("std_err")), int(e.get("n_judgements") or 0)
    if not (math.isfinite(est) and math.isfinite(se)):
        return math.nan
    if se == 0:
        return 0.0 if est != 0 else 1.0
    z = abs(est) / se
    return float(2 * (t.sf(z, n - 1) if n >= 2 else norm.sf(z)))


def _more_pairs(q: dict, half_width: float, target: float) -> dict | None:
    """How many judged pairs make the interval's half-width ``target`` (see the module's rule)."""
    design = q.get("design") or {}
    n = int(q.get("judged_pairs") or 0)
    if n < 2 or not (half_width > target > 0):
        return None
    ppi = design.get("ppi")
    if ppi:  # prediction-powered: more people's judgements of the drawn pairs, and more pairs once all are
        n, N = int(ppi["people_judgements"]), int(ppi["pairs"])
        ratio = (target / half_width) ** 2
        need = int(math.ceil(1.0 / ((1.0 / n - 1.0 / N) * ratio + 1.0 / N) if N > n else n / ratio))
        budget = int(design.get("budget") or N)
        grow = need >= N  # the drawn pairs cannot get there: draw more, people keeping their share
        return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
                "more_pairs": max(need - n, 1), "human_budget": max(need, n + 1),
                "budget": int(math.ceil(budget * need / max(n, 1))) if grow else budget, "population": N,
                "sample_dir": design.get("sample_dir"), "people": True}
    census = set(q.get("census") or ())
    counts = design.get("pair_counts") or {}
    N = sum(v for c, v in counts.items() if c in (q.get("strata") or ()) and c not in census) or None
    ratio = (target / half_width) ** 2
    if N and N > n:
        need = 1.0 / ((1.0 / n - 1.0 / N) * ratio + 1.0 / N)
        need = min(need, float(N))
    else:
        need = n / ratio
    need = int(math.ceil(need))
    budget = int(design.get("budget") or n)
    more = max(need - n, 1)
    return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
            "more_pairs": more, "budget": budget + more, "population": N,
            "sample_dir": design.get("sample_dir")}


def verdict(quality, *, truth: dict | None = None, names: tuple[str, str] = ("Base", "Exp")) -> Verdict:
    """The answer to "is Exp better?" from a quality result (see the module's rule).

    Parameters
    ----------
    quality
        A :class:`~abcde.quality.QualityResult` or its ``to_dict()``.
    truth
        Optional pointwise metrics of each side against a ground truth, ``{"base": r, "exp": r}``
        (:class:`~abcde.metrics.pointwise.PointwiseResult` or its ``to_dict()``).
    names
        What Base and Exp are called in the sentences.
    """
    q = quality if isinstance(quality, dict) else quality.to_dict()
    base, exp = names
    facts: dict = {"alpha": ALPHA, "confidence_level": 1 - ALPHA}
    sentences: list[str] = []
    absolute = q.get("target") == "precision"
    dp = q["precision"] if absolute else q["delta_precision"]
    est, lo, hi = _num(dp.get("estimate")), _num(dp.get("ci_low")), _num(dp.get("ci_high"))
    exact = bool(q.get("exact"))
    what = "Precision" if absolute else "ΔPrecision"
    p = {"metric": "precision" if absolute else "delta_precision", "estimate": dp.get("estimate"),
         "ci_low": dp.get("ci_low"), "ci_high": dp.get("ci_high"), "exact": exact}
    if not math.isfinite(est):
        p["direction"] = "undefined"
        why = dp.get("note") or "no usable judgements yet"
        sentences.append(f"Not known yet whether {exp} is better: {what} needs judgements ({why}).")
    elif absolute:
        p["direction"] = "absolute"
        sentences.append(f"{exp}'s Precision is {display.four(est)}" + (
            " exactly (every pair judged)." if exact else f" ({_interval_text(lo, hi)})."))
    elif exact:
        p["direction"] = "up" if est > 0 else "down" if est < 0 else "none"
        sentences.append({"up": f"{exp} is more precise than {base}: Precision went up by exactly "
                                f"{display.four(abs(est))} (every pair judged).",
                          "down": f"{exp} is less precise than {base}: Precision went down by exactly "
                                  f"{display.four(abs(est))} (every pair judged).",
                          "none": f"{exp} and {base} are exactly as precise (every pair judged)."}[p["direction"]])
    elif lo > 0:
        p["direction"] = "up"
        sentences.append(f"{exp} is more precise than {base}: Precision went up by {display.four(est)} "
                         f"({_interval_text(lo, hi)}).")
    elif hi < 0:
        p["direction"] = "down"
        sentences.append(f"{exp} is less precise than {base}: Precision went down by {display.four(-est)} "
                         f"({_interval_text(lo, hi)}).")
    else:
        p["direction"] = "none"
        sentences.append(f"No detectable change in Precision at 95%: ΔPrecision {_signed(est)} "
                         f"({_interval_text(lo, hi)}), so {exp} is not distinguishable from {base} yet.")
    facts["precision"] = p

    # Splits and merges: the good share of each, from the exact rates.
    for kind, good_key, rate_key, good_word in (("splits", "good_split_rate", "split_rate", "split"),
                                                ("merges", "good_merge_rate", "merge_rate", "merge")):
        rate = _num(q.get(rate_key))
        g = q.get(good_key) or {}
        if absolute and kind == "splits":
            continue
        if not rate or not math.isfinite(rate):
            facts[kind] = {"rate": rate, "share_good": None}
            continue
        share = _num(g.get("estimate")) / rate
        s_lo, s_hi = _num(g.get("ci_low")) / rate, _num(g.get("ci_high")) / rate
        facts[kind] = {"rate": rate, "share_good": share if math.isfinite(share) else None,
                       "ci_low": s_lo if math.isfinite(s_lo) else None,
                       "ci_high": s_hi if math.isfinite(s_hi) else None}
        label = (f"split weight ({display.pct(rate)} of the total weight was split off)" if good_word == "split"
                 else f"merge weight ({display.pct(rate)} of the total weight was merged in)")
        if not math.isfinite(share):
            sentences.append(f"Of the {label}, the good share is not known yet ({g.get('note') or 'no judgements'}).")
        elif exact:
            sentences.append(f"Of the {label}, exactly {display.pct(share)} was good.")
        else:
            sentences.append(f"Of the {label}, {display.pct(share)} was good ({_interval_text(s_lo, s_hi, display.pct)}).")

    # Slices: Holm across every slice of every column.
    rows = [(col, r) for col, rs in (q.get("slices") or {}).items() for r in rs]
    key = "precision" if absolute else "delta_precision"
    tested = [(col, r) for col, r in rows if math.isfinite(slice_p_value(r[key]))]
    p_values = [slice_p_value(r[key]) for _, r in tested]
    if absolute:
        # For one clustering's Precision, a slice is named when it differs from the whole.
        p_values = [slice_p_value({**r[key], "estimate": _num(r[key]["estimate"]) - est}) for _, r in tested]
    rejected = holm(p_values) if p_values else []
    facts["slices"] = {"method": "Holm", "family": len(tested), "alpha": ALPHA, "rows": [
        {"column": col, "value": r["value"], "estimate": r[key].get("estimate"), "ci_low": r[key].get("ci_low"),
         "ci_high": r[key].get("ci_high"), "p_value": pv, "significant": rej}
        for (col, r), pv, rej in zip(tested, p_values, rejected)]}
    named = [x for x in facts["slices"]["rows"] if x["significant"]]
    for x in named:
        e = _num(x["estimate"])
        where = f"{x['column']} = {display.NULL_TEXT if x['value'] is None else x['value']}"
        if absolute:
            word = "higher" if e > est else "lower"
            sentences.append(f"In the slice {where}, Precision is {word} than overall: {display.four(e)} "
                             f"({_interval_text(_num(x['ci_low']), _num(x['ci_high']))}; Holm-adjusted across "
                             f"{len(tested)} slices at 5%).")
        else:
            word = "more" if e > 0 else "less"
            sentences.append(f"In the slice {where}, {exp} is significantly {word} precise: ΔPrecision "
                             f"{_signed(e)} ({_interval_text(_num(x['ci_low']), _num(x['ci_high']))}; Holm's "
                             f"method across {len(tested)} slices, 5% family-wise).")
    if tested and not named:
        sentences.append(f"No slice differs significantly (Holm's method across {len(tested)} slices, "
                         f"5% family-wise).")

    # Ground truth: each side's Precision and Recall, exact.
    if truth:
        t = {side: (r if isinstance(r, dict) else r.to_dict()) for side, r in truth.items() if side in ("base", "exp")}
        if "base" in t and "exp" in t:
            facts["truth"] = {side: {k: float(t[side][k]) for k in ("precision", "recall")} for side in t}
            b, e = facts["truth"]["base"], facts["truth"]["exp"]
            sentences.append(
                f"Against the ground truth (exact): Precision {display.pct(b['precision'])} → "
                f"{display.pct(e['precision'])}, Recall {display.pct(b['recall'])} → {display.pct(e['recall'])} "
                f"({base} → {exp}).")

    design = q.get("design") or {}
    ppi = design.get("ppi")
    if ppi:
        worth = ppi.get("worth_people_judgements")
        sentences.append(f"Prediction-powered: {display.count(ppi['model_judgements'])} model judgements corrected "
                         f"by {display.count(ppi['people_judgements'])} people's"
                         + (f"; the model's were worth about {display.count(round(worth))} people's judgements"
                            if worth is not None else "") + "."
                         + (" Model and people disagree on more than a fifth of the pairs both judged."
                            if ppi.get("warning") else ""))
    # Next step: when the interval still holds 0 (or the estimate is undefined).
    where = design.get("sample_dir") or "DIR"
    step = None
    if not exact and p["direction"] == "undefined":
        step = {"kind": "judge", "command": f"abcde judge serve {where}"}
        sentences.append(f"Next: judge more pairs ({step['command']}).")
    elif not exact and p["direction"] in ("none", "absolute") and math.isfinite(lo) and math.isfinite(hi):
        target = max(abs(est) if p["direction"] == "none" else 0.0, MIN_RESOLUTION)
        if absolute:
            target = max(target, 0.01)  # an absolute Precision to ±1 pp
        more = _more_pairs(q, (hi - lo) / 2, target)
        missing = int(q.get("missing_pairs") or 0)
        if missing:
            step = {"kind": "judge", "missing_pairs": missing, "command": f"abcde judge serve {where}"}
            sentences.append(f"Next: {display.count(missing)} pairs of the sample are not judged yet "
                             f"({step['command']}).")
        elif more and more.get("people"):
            grow = more["budget"] > int(design.get("budget") or 0)
            step = {"kind": "extend", **more,
                    "command": f"abcde pairs --extend {where} " + (f"--budget {more['budget']} " if grow else "")
                    + f"--human-budget {more['human_budget']}"}
            aim = f"±{display.four(target)}"
            sentences.append(f"Next: to tell a change of {aim} from none, about {display.count(more['more_pairs'])} "
                             f"more people's judgements: {step['command']}, then judge the new tasks"
                             + (" (and the model the new pairs)." if grow else "."))
        elif more:
            step = {"kind": "extend", **more,
                    "command": f"abcde pairs --extend {where} --budget {more['budget']}"}
            aim = f"±{display.four(target)}"
            sentences.append(f"Next: to tell a change of {aim} from none, about {display.count(more['more_pairs'])} "
                             f"more judged pairs: {step['command']}, then judge the new pairs.")
    facts["next_step"] = step
    facts["sentences"] = list(sentences)
    return Verdict(tuple(sentences), facts)
