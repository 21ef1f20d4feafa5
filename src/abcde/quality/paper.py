"""The paper's estimators on judged draws (paper, "ABCDE quality metrics" to "Practical
considerations", and Appendix "Estimating ΔPrecision for slices of items").

Each draw is one observation; self pairs count as ``same``; unsure and missing
judgements are dropped and the remaining draws of each class — self, split, merge,
intersection — reweighted so the class keeps its sampled weight; standard error of
the weighted mean, the paper's Case I::

    ΔPrecision(T)    = Σ_{AllPairs} u_ij · wmean(l_ij · 1(i ≡ j))
    GoodSplitRate(T) = SplitRate(T) · mean_{split draws}(1(i ≢ j)),  BadSplitRate = … 1(i ≡ j)
    GoodMergeRate(T) = MergeRate(T) · mean_{merge draws}(1(i ≡ j)),  BadMergeRate = … 1(i ≢ j)
    ΔPrecisionContribution(I) = pairweight(I) · wmean_{draws with vantage in I}(…)
    ΔPrecision(I)             = weight(T)/weight(I) · ΔPrecisionContribution(I)
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa

from abcde.quality.result import ESTIMATION_CLASSES, Estimate, QualityResult, agresti_coull, weighted_mean_se
from abcde.sampling.allocation import pair_class_of_draws, without_agreed


def _outcomes(draws: pa.Table, by_pair: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per draw: estimation class, whether it has a usable answer, and 1(i ≡ j)."""
    cls = pair_class_of_draws(draws) if draws.num_rows else []
    pids = draws.column("pair_id").to_pylist() if draws.num_rows else []
    valid = np.zeros(len(cls), dtype=bool)
    same = np.zeros(len(cls), dtype=float)
    for k, (c, pid) in enumerate(zip(cls, pids)):
        j = "same" if c == "self" else by_pair.get(pid)
        if j in ("same", "different"):
            valid[k] = True
            same[k] = 1.0 if j == "same" else 0.0
    return cls, valid, same


def _dp(cls, valid, same, label, mask, multiplier, what, bounds=None) -> Estimate:
    """Reweighted ΔPrecision-type estimate over the draws in ``mask`` (``bounds``: its feasible range)."""
    cls_a = np.asarray(cls)
    w = np.zeros(len(cls))
    for c in ESTIMATION_CLASSES:
        in_c = mask & (cls_a == c)
        n_all, n_ok = int(in_c.sum()), int((in_c & valid).sum())
        if n_all and not n_ok:
            return Estimate(what, math.nan, math.nan, 0, note=f"no usable judgement among the {c} pairs sampled",
                            bounds=bounds)
        if n_ok:
            w[in_c & valid] = n_all / n_ok
    use = mask & valid
    if not use.any():
        return Estimate(what, math.nan, math.nan, 0, note="no judged pairs", bounds=bounds)
    x = label[use] * same[use]
    m, se = weighted_mean_se(x, w[use])
    n_judged = int((use & (cls_a != "self")).sum())
    if n_judged == 0 and (mask & (cls_a != "self")).any():
        return Estimate(what, math.nan, math.nan, 0, note="no judgements", bounds=bounds)
    value = multiplier * m
    if bounds is not None:
        # The reweighted mean is unbiased but not bounded: at a few draws it can leave the range the
        # metric can take (every draw a split pair judged same gives −Σu, below ΔPrecision's least).
        # Cut to that range, which holds the truth: never further from it, and the estimate stays
        # inside its interval (cut to the same range; issue 38).
        value = min(max(value, bounds[0]), bounds[1])
    return Estimate(what, value, multiplier * se if math.isfinite(se) else math.nan, n_judged,
                    bounds=bounds)


def _rate(cls, valid, same, klass, want_same, rate, what) -> Estimate:
    """``rate`` times the share of the class's judged draws that are (not) the same; its interval is
    the share's Agresti–Coull interval times ``rate``, inside [0, rate]."""
    cls_a = np.asarray(cls)
    m = (cls_a == klass) & valid
    n = int(m.sum())
    if rate == 0:
        return Estimate(what, 0.0, 0.0, n, note=f"no {klass}s: the {klass} rate is 0", bounds=(0.0, 0.0))
    if n == 0:
        return Estimate(what, math.nan, math.nan, 0, note=f"no judged {klass} pairs", bounds=(0.0, rate))
    x = same[m] if want_same else 1.0 - same[m]
    mean, se = weighted_mean_se(x, np.ones(n))
    pt, ps = agresti_coull(x)
    return Estimate(what, rate * mean, rate * se if math.isfinite(se) else math.nan, n, bounds=(0.0, rate),
                    centre=rate * pt, interval_se=rate * ps)


def delta_precision_bounds(totals: dict) -> tuple[float, float]:
    """The feasible range of ΔPrecision(T) from the exact pair weight totals: every pair of a term
    ``−1`` (split, intersection−) judged same and none of ``+1``, and the reverse; the self pairs
    (always the same item) count either way (the paper's design stores their sign per draw only).
    Without per-class totals: ``±Σ u_ij``."""
    if not {"split", "merge"} <= set(totals):
        return (-totals["all"], totals["all"])
    if "intersection+" in totals:
        down, up = totals["intersection-"], totals["intersection+"]
    else:
        down = up = totals.get("intersection", 0.0)
    s = totals.get("self", 0.0)
    return (-(totals["split"] + down + s), totals["merge"] + up + s)




def estimate_from_draws(
    draws: pa.Table,
    by_pair: dict,
    totals: dict,
    split_rate: float,
    merge_rate: float,
    *,
    items: pa.Table | None = None,
    slice_multipliers: dict | None = None,
    total_weight: float | None = None,
    disagreements: int = 0,
    ties: int = 0,
) -> QualityResult:
    """The estimators on in-memory draws (see :func:`estimate_quality`).

    ``by_pair`` maps pair ids to ``same``/``different``/``unsure``; pairs not in it
    are missing. ``totals`` are the exact pair weight totals (``all`` is used).
    """
    every = draws  # the pairs judged, unsure or missing: the agreed pairs too
    draws = without_agreed(draws)  # the agreed pairs beside the paper's draws are the recall lift's alone
    cls, valid, same = _outcomes(draws, by_pair)
    label = np.asarray(draws.column("label").to_pylist(), dtype=float) if draws.num_rows else np.zeros(0)
    all_mask = np.ones(len(cls), dtype=bool)
    sr, mr = split_rate, merge_rate
    if totals["all"] == 0:  # no pair has weight: Base and Exp agree, ΔPrecision is exactly 0
        dp = Estimate("delta_precision", 0.0, 0.0, 0, note="Base and Exp agree on every item", bounds=(0.0, 0.0))
    else:
        dp = _dp(cls, valid, same, label, all_mask, totals["all"], "delta_precision",
                 bounds=delta_precision_bounds(totals))
    need = every.column("needs_judgement").to_pylist() if every.num_rows else []
    judgeable = {p for p, n in zip(every.column("pair_id").to_pylist(), need) if n} if every.num_rows else set()
    judged = sum(1 for p in judgeable if by_pair.get(p) in ("same", "different"))
    unsure = sum(1 for p in judgeable if by_pair.get(p) == "unsure")
    slices = {}
    if slice_multipliers:
        attrs = {r["item_id"]: r for r in items.to_pylist()}
        vant = draws.column("item_a").to_pylist() if draws.num_rows else []
        W = total_weight
        for col, stored_col in slice_multipliers.items():
            vals = np.array([json.dumps(attrs.get(v, {}).get(col), default=str) for v in vant])
            rows = []
            for value, (w_i, pw) in sorted(stored_col.items(), key=lambda kv: -kv[1][1]):
                mask = vals == value
                contrib = _dp(cls, valid, same, label, mask, pw, "delta_precision_contribution", bounds=(-pw, pw))
                scale = W / w_i
                dpi = Estimate("delta_precision", contrib.value * scale, contrib.standard_error * scale,
                               contrib.n_judgements, note=contrib.note, bounds=(-pw * scale, pw * scale))
                rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw,
                             "sampled_draws": int(mask.sum()),
                             "delta_precision": dpi.to_dict(), "delta_precision_contribution": contrib.to_dict()})
            slices[col] = rows
    counts = {c: int((np.asarray(cls) == c).sum()) for c in ESTIMATION_CLASSES} if cls else dict.fromkeys(
        ESTIMATION_CLASSES, 0)
    return QualityResult(
        delta_precision=dp,
        good_split_rate=_rate(cls, valid, same, "split", False, sr, "good_split_rate"),
        bad_split_rate=_rate(cls, valid, same, "split", True, sr, "bad_split_rate"),
        good_merge_rate=_rate(cls, valid, same, "merge", True, mr, "good_merge_rate"),
        bad_merge_rate=_rate(cls, valid, same, "merge", False, mr, "bad_merge_rate"),
        split_rate=sr,
        merge_rate=mr,
        judged_pairs=judged,
        unsure_pairs=unsure,
        missing_pairs=len(judgeable) - judged - unsure,
        draws=counts,
        disagreements=disagreements,
        ties=ties,
        slices=slices,
    )


