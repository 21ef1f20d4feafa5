"""A variance-reduced ΔPrecision estimator: exact self term, stratified classes.

The paper samples every pair ∝ u_ij, self pairs ``(i, i)`` included, although
their term ``Σ_i u_ii · l_ii`` needs no judgement and is known exactly::

    self term = Σ_fragments (W(B) − W(E)) · Σ_{i ∈ B∩E} w_i² / (W(B) · W(E) · W)

The other pairs fall into three strata — split, merge and intersection (stable
without self) — each with an exact total pair weight ``U_c`` from the fragments.
Each stratum is sampled on its own (∝ u_ij within the stratum, draws replayed one
by one until its budget ``B_c`` of distinct pairs is filled), and::

    ΔPrecision = self term + Σ_c U_c · mean_c(l_ij · 1(i ≡ j))
    SE         = sqrt(Σ_c U_c² · s_c² / n_c)

GoodSplitRate = SplitRate · mean_split(1(i ≢ j)) and so on come from their own
strata. Unsure and missing judgements are dropped within a stratum (each keeps
its exact weight U_c).

Slices (paper, Appendix "Estimating ΔPrecision for slices of items", vantage item in I),
with the slice's exact self term stored at sampling::

    ΔPrecisionContribution(I) = self term(I) + Σ_c U_c · mean_c(l_ij · 1(i ≡ j) · 1(i ∈ I))
    ΔPrecision(I)             = weight(T) / weight(I) · ΔPrecisionContribution(I)

Budgets: ``proportional`` (``B_c ∝ U_c``, the default) or ``neyman`` (``B_c ∝ U_c · σ_c``,
with ``σ_c`` from a judged pilot sample: :func:`pilot_sigmas`), split by
:mod:`abcde.sampling.allocation`; the draws and the exact self terms are
:mod:`abcde.sampling.stratified`'s. This module estimates from the judged draws.
:func:`next_stratum` chooses, judgement by judgement, the stratum that most reduces the SE
(adaptive Neyman, for a judging UI).
"""

from __future__ import annotations

import functools
import json
import math
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from abcde.quality.result import Estimate, QualityResult, agresti_coull, agresti_coull_of, weighted_mean_se
from abcde.sampling.allocation import LEGACY_STRATA, STRATA, STRATUM_LABEL, StratifiedSample


def _stratum_stats(draws: pa.Table, by_pair: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per valid draw: ``l · 1(i ≡ j)`` and ``1(i ≡ j)``."""
    x, same, _ = _valid_draws(draws, by_pair)
    return x, same


def _valid_draws(draws: pa.Table, by_pair: dict) -> tuple[np.ndarray, np.ndarray, list]:
    """Per valid draw (judged same or different): ``l · 1(i ≡ j)``, ``1(i ≡ j)`` and
    the vantage item."""
    x, same, vantage = [], [], []
    if draws.num_rows:
        for pid, lab, a in zip(draws.column("pair_id").to_pylist(), draws.column("label").to_pylist(),
                               draws.column("item_a").to_pylist()):
            j = by_pair.get(pid)
            if j in ("same", "different"):
                s = 1.0 if j == "same" else 0.0
                x.append(lab * s)
                same.append(s)
                vantage.append(a)
    return np.asarray(x, dtype=float), np.asarray(same, dtype=float), vantage


def _mean_var(v: np.ndarray) -> tuple[float, float, int]:
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.var(ddof=1)) if n > 1 else math.nan, n


class CensusTotal(NamedTuple):
    """A census stratum's total (:func:`census_total`): ``total``, its ``var``, the judged pairs ``n``
    it rests on, the judged pairs' exact part ``known``, the weight ``rest`` of the pairs left, and
    ``span = (down, up)``: how far below and above ``total`` the pairs answered "unsure" could put it
    (each of them either answer), which the interval adds to its ends."""

    total: float
    var: float
    n: int
    known: float
    rest: float
    span: tuple[float, float] = (0.0, 0.0)


def census_total(draws: pa.Table, by_pair: dict, y) -> CensusTotal:
    """``Σ_k pair_weight_k · y_k`` over a census stratum's pairs (each listed once), its variance,
    the judged pairs it rests on, the judged pairs' exact part ``Σ_judged pair_weight·y``, the
    weight ``R`` of the pairs left and the span of the unsure ones, ``y(label, same, item_a, item_b)``
    (:class:`CensusTotal`).

    Every pair judged: the exact total, variance 0. Pairs left unsure or not judged (weight ``R``)
    are estimated like the judged ones, as in a sampled stratum: their part is ``R·ȳ`` (``ȳ`` the
    weighted mean of the judged). What that cannot rule out goes into the interval:

    * a pair not judged yet is one of a random subset still to come (raters see the pairs in a random
      order): variance ``R²·SE(ȳ)² + s²·Σ_unjudged pair_weight²``, with ``SE`` and ``s²`` at least
      Agresti–Coull's for the judged pairs' share of "same" on their effective number (so judged pairs
      that all agree still leave the unjudged ones open);
    * a pair answered "unsure" was seen and not told: either answer is possible, and not at random
      (the hard pairs are the unsure ones), so its part is bounded, not estimated: ``span`` holds how
      far both answers reach from ``ȳ``, added to the interval's ends (bounds, said in words by the
      estimate's note)."""
    if not draws.num_rows:
        return CensusTotal(0.0, 0.0, 0, 0.0, 0.0)
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    ys, ws, sames, rest, rest2, unsure, reach = [], [], [], 0.0, 0.0, [], 0.0
    for k, (pid, lab, a, b) in enumerate(zip(draws.column("pair_id").to_pylist(), draws.column("label").to_pylist(),
                                             draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())):
        j = by_pair.get(pid)
        y0, y1 = y(lab, 0.0, a, b), y(lab, 1.0, a, b)
        reach = max(reach, abs(y1 - y0))
        if j in ("same", "different"):
            ys.append(y1 if j == "same" else y0)
            ws.append(pw[k])
            sames.append(1.0 if j == "same" else 0.0)
        else:
            rest += pw[k]
            if j == "unsure":
                unsure.append((pw[k], min(y0, y1), max(y0, y1)))
            else:
                rest2 += pw[k] * pw[k]
    y_, w_ = np.asarray(ys, dtype=float), np.asarray(ws, dtype=float)
    n = len(y_)
    known = float((w_ * y_).sum())
    if rest == 0.0:
        return CensusTotal(known, 0.0, n, known, 0.0)
    if n == 0:
        return CensusTotal(math.nan, math.nan, 0, known, rest)
    mean, se = weighted_mean_se(y_, w_)
    s2 = float((w_ * (y_ - mean) ** 2).sum() / w_.sum())
    span = (max(sum(w * (mean - lo) for w, lo, _ in unsure), 0.0), max(sum(w * (hi - mean) for w, _, hi in unsure), 0.0))
    not_judged = rest - sum(w for w, _, _ in unsure)
    var = 0.0
    if not_judged > 0:
        n_eff = float(w_.sum()) ** 2 / float((w_ * w_).sum())
        p_same = float((w_ * np.asarray(sames)).sum() / w_.sum())
        pt, _ = agresti_coull_of(n_eff * p_same, n_eff)
        s2_floor = reach * reach * pt * (1.0 - pt)
        se2 = max(se * se if math.isfinite(se) else 0.0, s2_floor / (n_eff + 4.0))
        var = not_judged * not_judged * se2 + max(s2, s2_floor) * rest2
    return CensusTotal(known + rest * mean, var, n, known, rest, span)


def unsure_in_census(sample: StratifiedSample, by_pair: dict) -> dict:
    """``{census stratum: pairs answered "unsure"}`` (strata with none left out)."""
    out = {}
    for c in sample.census:
        d = sample.draws.get(c)
        if d is not None and d.num_rows:
            k = sum(by_pair.get(p) == "unsure" for p in d.column("pair_id").to_pylist())
            if k:
                out[c] = k
    return out


def unsure_note(unsure: dict) -> str:
    """What an interval holds for the unsure pairs of census strata, in words ('' when there are none)."""
    k = sum(unsure.values())
    if not k:
        return ""
    return (f"{k:,} {'pair' if k == 1 else 'pairs'} of the census {'stratum' if len(unsure) == 1 else 'strata'} "
            f"{', '.join(sorted(unsure))} answered unsure: the interval holds every answer "
            f"{'it' if k == 1 else 'they'} could have (bounds), not an estimate of {'it' if k == 1 else 'them'}")


def estimate_stratified(sample: StratifiedSample, by_pair: dict, *, split_rate: float,
                        merge_rate: float) -> QualityResult:
    """ΔPrecision and the Good/Bad rates under the stratified design (a census stratum adds its
    exact total, see :func:`census_total`)."""
    census = sorted(sample.census, key=sample.strata.index)
    method = f"stratified ({sample.allocation})" + (f"; census of {', '.join(census)}" if census else "")
    # Intervals: in a stratum of one sign every judged draw is l·1(same), a proportion; near 0 or 1
    # its Wald interval undercovers (a stratum whose few draws all agree has SE 0), so the interval
    # is Agresti–Coull's: centred on p̃ = (k + 2)/(n + 4), half-width q·√(p̃(1 − p̃)/(n + 4)) (the
    # estimate stays the unbiased p̂). Summed over strata the shifts add up, the half-widths in
    # quadrature: Estimate.confidence_interval widens the interval to reach the estimate where they
    # carry it outside (issue 38). Samples drawn before the sign split keep Wald intervals.
    signed = all(c in STRATUM_LABEL for c in sample.strata)
    dp, var, n_j, missing = sample.self_term, 0.0, 0, []
    span = (0.0, 0.0)  # the census strata's unsure pairs: how far their answers could move ΔPrecision
    unsure_census = unsure_in_census(sample, by_pair)
    centre, ivar = sample.self_term, 0.0
    # The feasible range of ΔPrecision, known before anyone judges: the self term plus each stratum's
    # U_c·l_c·p_c with p_c in [0, 1] (a census stratum: its judged pairs' exact part plus l_c·[0, R]).
    lo, hi = sample.self_term, sample.self_term
    stats = {c: _stratum_stats(sample.draws[c], by_pair) for c in sample.strata}
    for c in sample.strata:
        U = sample.totals[c]
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)  # None: a legacy intersection stratum, of both signs
        if c in sample.census:
            t, v, n, known, rest, sp = census_total(sample.draws[c], by_pair, lambda lab, same, a, b: lab * same)
            lo, hi = lo + known - (rest if lab != 1 else 0.0), hi + known + (rest if lab != -1 else 0.0)
            if not math.isfinite(t):
                dp = math.nan
                missing.append(c)
                continue
            dp, var, n_j = dp + t, var + v, n_j + n
            span = (span[0] + sp[0], span[1] + sp[1])
            centre, ivar = centre + t, ivar + v
            continue
        lo, hi = lo - (U if lab != 1 else 0.0), hi + (U if lab != -1 else 0.0)
        x, same = stats[c]
        m, v, n = _mean_var(x)
        if n == 0:
            dp = math.nan
            missing.append(c)
            continue
        if not math.isfinite(dp):
            continue
        dp += U * m
        var += U * U * (v / n if math.isfinite(v) else math.nan)
        n_j += n
        if signed:
            pt, ps = agresti_coull(same)
            centre, ivar = centre + U * STRATUM_LABEL[c] * pt, ivar + U * U * ps * ps
    note = (f"no usable judgement yet in the {', '.join(missing)} " + ("strata" if len(missing) > 1 else "stratum")
            if missing else unsure_note(unsure_census))
    se = math.sqrt(var) if math.isfinite(var) and math.isfinite(dp) else math.nan
    delta = Estimate("delta_precision", dp, se, n_j if math.isfinite(dp) else 0, method=method, note=note,
                     bounds=(lo, hi), span=span if unsure_census else None,
                     **({"centre": centre, "interval_se": math.sqrt(ivar)} if signed and math.isfinite(dp) else {}))

    def rate(c, rate_value, want_same, name):
        _, same = stats[c]
        if rate_value == 0:
            return Estimate(name, 0.0, 0.0, len(same), method=method, note=f"no {c}s: the {c} rate is 0",
                            bounds=(0.0, 0.0))
        if c in sample.census:
            d = sample.draws[c]
            total = float(np.asarray(d.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float).sum())
            t, v, n, known, rest, sp = census_total(d, by_pair, lambda lab, s, a, b: s if want_same else 1.0 - s)
            bounds = (rate_value * known / total, rate_value * (known + rest) / total)
            if n == 0:
                return Estimate(name, math.nan, math.nan, 0, method=method, note=f"no judged {c} pairs",
                                bounds=bounds)
            k = unsure_census.get(c, 0)
            return Estimate(name, rate_value * t / total, rate_value * math.sqrt(v) / total, n, method=method,
                            bounds=bounds, note=unsure_note({c: k}),
                            span=(rate_value * sp[0] / total, rate_value * sp[1] / total) if k else None)
        v = same if want_same else 1.0 - same
        m, var_c, n = _mean_var(v)
        if n == 0:
            return Estimate(name, math.nan, math.nan, 0, method=method, note=f"no judged {c} pairs",
                            bounds=(0.0, rate_value))
        se = rate_value * math.sqrt(var_c / n) if math.isfinite(var_c) else math.nan
        pt, ps = agresti_coull(v)
        return Estimate(name, rate_value * m, se, n, method=method, bounds=(0.0, rate_value),
                        **({"centre": rate_value * pt, "interval_se": rate_value * ps} if signed else {}))

    judgeable, judged, unsure = set(), 0, 0
    for c in sample.strata:
        d = sample.draws[c]
        if d.num_rows:
            judgeable |= set(d.column("pair_id").to_pylist())
    for p in judgeable:
        j = by_pair.get(p)
        judged += j in ("same", "different")
        unsure += j == "unsure"
    live = [c for c in sample.strata if sample.totals[c] > 0]
    # Exact: every ΔPrecision stratum listed whole and each of its pairs judged (the agreed stratum,
    # no part of ΔPrecision, does not count here; the recall lift says its own exactness).
    of_live = set()
    for c in live:
        if sample.draws[c].num_rows:
            of_live |= set(sample.draws[c].column("pair_id").to_pylist())
    exact = bool(live) and all(c in sample.census for c in live) and all(
        by_pair.get(p) in ("same", "different") for p in of_live)
    return QualityResult(
        delta_precision=delta,
        good_split_rate=rate("split", split_rate, False, "good_split_rate"),
        bad_split_rate=rate("split", split_rate, True, "bad_split_rate"),
        good_merge_rate=rate("merge", merge_rate, True, "good_merge_rate"),
        bad_merge_rate=rate("merge", merge_rate, False, "bad_merge_rate"),
        split_rate=split_rate,
        merge_rate=merge_rate,
        judged_pairs=judged,
        unsure_pairs=unsure,
        missing_pairs=len(judgeable) - judged - unsure,
        draws={c: sample.draws[c].num_rows for c in sample.strata},
        estimator="stratified",
        allocation=sample.allocation,
        strata=sample.strata,
        census=tuple(census),
        exact=exact,
    )


def slice_ranges(sample: StratifiedSample, multipliers: dict, self_terms: dict):
    """Per slice value, largest pair weight first: ``(value, weight(I), pairweight(I), self term(I),
    Σ_{i∈I} u_ii, feasible range of ΔPrecisionContribution(I))``. The range is the exact self term(I)
    plus the slice's other pairs, ``pairweight(I) − Σ_I u_ii``, each of weight ``u_ij·l_ij·1(i ≡ j)``,
    a term of its stratum's sign."""
    live = [STRATUM_LABEL.get(c) for c in sample.strata if sample.totals[c] > 0]
    down, up = any(lab != 1 for lab in live), any(lab != -1 for lab in live)
    for value, (w_i, pw) in sorted(multipliers.items(), key=lambda kv: -kv[1][1]):
        st, st_u = self_terms.get(value, (0.0, 0.0))
        rest = max(pw - st_u, 0.0)
        yield value, w_i, pw, st, st_u, (st - rest * down, st + rest * up)


def estimate_stratified_slices(sample: StratifiedSample, by_pair: dict, vantage_value: dict, multipliers: dict,
                               self_terms: dict, *, total_weight: float) -> list[dict]:
    """ΔPrecisionContribution(I) and ΔPrecision(I) per slice value under the stratified design.

    With ``I`` the items whose value is ``v`` (``vantage_value`` maps a vantage item to its
    JSON-encoded value; ``multipliers[v] = (weight(I), pairweight(I))``; ``self_terms[v] =
    (Σ_{i∈I} u_ii·l_ii, Σ_{i∈I} u_ii)``, exact)::

        ΔPrecisionContribution(I) = self term(I) + Σ_c U_c · mean_c(l_ij · 1(i ≡ j) · 1(i ∈ I))
        SE                        = sqrt(Σ_c U_c² · s_c²(l·1(i ≡ j)·1(i ∈ I)) / n_c)
        ΔPrecision(I)             = weight(T) / weight(I) · ΔPrecisionContribution(I)

    The means run over every valid draw of stratum c (a draw whose vantage item is not in
    I contributes 0), so the contributions of a partition of T add up to ΔPrecision(T). At a few
    draws, most of a stratum's in I, ``U_c`` times their share can pass what I's pairs weigh: an
    estimate outside the slice's range is cut to it (issue 38), and the sum is then off by the cut.
    """
    stats = {c: _valid_draws(sample.draws[c], by_pair) for c in sample.strata}
    vals = {c: np.array([vantage_value.get(v) for v in stats[c][2]], dtype=object) for c in sample.strata}
    drawn = {}  # all draws (unsure and missing included) per value
    for c in sample.strata:
        d = sample.draws[c]
        for v in d.column("item_a").to_pylist() if d.num_rows else []:
            k = vantage_value.get(v)
            drawn[k] = drawn.get(k, 0) + 1
    census = sorted(sample.census, key=sample.strata.index)
    method = f"stratified ({sample.allocation})" + (f"; census of {', '.join(census)}" if census else "")
    rows = []
    for value, w_i, pw, st, st_u, bounds in slice_ranges(sample, multipliers, self_terms):
        est, var, n_in, note = st, 0.0, 0, ""
        span = (0.0, 0.0)  # the census strata's unsure pairs with an end in the slice
        if pw - st_u <= 1e-12 * max(pw, 1e-300):  # only self pairs (or none): exact
            pass
        else:
            for c in sample.strata:
                U = sample.totals[c]
                if U == 0:
                    continue
                if c in sample.census:
                    # A pair {a, b} is the ordered pairs (a, b) and (b, a), each of half its weight:
                    # each end in I adds its half.
                    def inside(lab, same, a, b, value=value):
                        return lab * same * ((vantage_value.get(a) == value) + (vantage_value.get(b) == value)) / 2
                    t, v, n, _, _, sp = census_total(sample.draws[c], by_pair, inside)
                    span = (span[0] + sp[0], span[1] + sp[1])
                    if not math.isfinite(t):
                        est, note = math.nan, f"no usable judgement in the {c} stratum"
                        break
                    d = sample.draws[c]
                    n_in += sum(vantage_value.get(a) == value or vantage_value.get(b) == value
                                for a, b in zip(d.column("item_a").to_pylist(), d.column("item_b").to_pylist()))
                    est, var = est + t, var + v
                    continue
                x = stats[c][0]
                if len(x) == 0:
                    est, note = math.nan, f"no usable judgement in the {c} stratum"
                    break
                inside_ = vals[c] == value
                y = x * inside_
                n_in += int(inside_.sum())
                est += U * float(y.mean())
                var += U * U * (float(y.var(ddof=1)) / len(y) if len(y) > 1 else math.nan)
            if math.isfinite(est) and n_in == 0:
                est, note = math.nan, "no judged pair has its vantage item in this slice"
            if math.isfinite(est):
                # U_c times the share of stratum c's draws in I can pass the slice's own pair weight
                # (a few draws, most of them in I): cut to the slice's range, which holds the truth,
                # so the estimate is never further from it and lies inside its interval (issue 38).
                est = min(max(est, bounds[0]), bounds[1])
        se = math.sqrt(var) if math.isfinite(var) and math.isfinite(est) else math.nan
        wide = span if span != (0.0, 0.0) else None
        # Every stratum it rests on listed whole (a census): its standard error 0 is no blindness, it is
        # known (exactly, or to its unsure pairs' span), so its interval is the estimate with that span.
        listed = all(c in sample.census for c in sample.strata if sample.totals[c] > 0)
        blind = se == 0 and not listed and pw - st_u > 1e-12 * max(pw, 1e-300) and bounds[1] > bounds[0]
        if blind:
            # Its draws show no spread (none of them, or all alike, in the slice): nothing seen rules any
            # value of its range out, so the interval is the range (issue 51: never a point unless exact).
            note = "; ".join(x for x in (note, "the slice's draws show no spread: the interval is its feasible range")
                             if x)
        contrib = Estimate("delta_precision_contribution", est, se, n_in, method=method, note=note, bounds=bounds,
                           span=wide, interval_of=functools.partial(_whole_range, bounds) if blind else None)
        scale = float(total_weight) / w_i if w_i else math.nan
        scaled = (bounds[0] * scale, bounds[1] * scale)
        dpi = Estimate("delta_precision", est * scale, se * scale, n_in, method=method, note=note,
                       bounds=scaled, span=(wide[0] * scale, wide[1] * scale) if wide else None,
                       interval_of=functools.partial(_whole_range, scaled) if blind else None)
        rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw, "self_term": st,
                     "sampled_draws": drawn.get(value, 0), "delta_precision": dpi.to_dict(),
                     "delta_precision_contribution": contrib.to_dict()})
    return rows


def _whole_range(bounds: tuple[float, float], z: float) -> tuple[float, float]:
    """An interval that is the whole feasible range, at every level (a slice whose draws show nothing)."""
    return bounds


def stratum_values(draws: pa.Table, by_pair: dict) -> dict:
    """``{stratum: l·1(i ≡ j) of each judged draw}`` of a stratified sample's draws (with
    their ``stratum`` column), unsure and missing left out: the input of :func:`next_stratum`."""
    strata = draws.column("stratum").to_pylist() if draws.num_rows else []
    return {c: _stratum_stats(draws.filter(pa.array([x == c for x in strata], pa.bool_())), by_pair)[0]
            for c in dict.fromkeys(strata)}


def next_stratum(sample_meta: dict, judgements_by_stratum: dict) -> str | None:
    """The stratum whose next judgement most reduces the SE of ΔPrecision (greedy Neyman).

    With ``V = Σ_c U_c² σ_c² / n_c``, one more judgement in stratum c lowers V by
    ``U_c² σ_c² / (n_c (n_c + 1))``; the stratum with the largest drop is chosen, so the
    judgements approach Neyman's ``n_c ∝ U_c σ_c`` as the σ_c estimates settle. A stratum
    with weight and fewer than 2 judgements comes first (largest ``U_c``): its SE needs two.
    ``σ_c² ≥ 1/(n_c + 1)``, so a stratum whose judgements so far all agree is not starved.
    Strata with ``U_c = 0`` are never chosen; None when no stratum has weight.

    Parameters
    ----------
    sample_meta
        A stratified sample's metadata (``pair_totals`` holds ``U_c``), or the totals.
    judgements_by_stratum
        ``{stratum: values of l·1(i ≡ j) judged so far}`` (see :func:`stratum_values`).

    Notes
    -----
    For a judging UI serving pairs adaptively: draw each stratum's pairs in its own
    successive order (as :func:`sample_stratified` does) and serve the next pair of the
    chosen stratum; the estimator is unchanged (each stratum's judged draws stay ∝ u_ij).
    """
    totals = sample_meta.get("pair_totals", sample_meta)
    strata = tuple(sample_meta["budgets"]) if "budgets" in sample_meta else _strata_of(totals)
    best, best_gain = None, -1.0
    live = [c for c in dict.fromkeys(strata) if totals.get(c, 0.0) > 0]
    few = [c for c in live if len(judgements_by_stratum.get(c, ())) < 2]
    if few:
        return max(few, key=lambda c: totals[c])
    for c in live:
        x = np.asarray(judgements_by_stratum.get(c, ()), dtype=float)
        n = len(x)
        var = max(float(x.var(ddof=1)), 1.0 / (n + 1))
        gain = totals[c] ** 2 * var / (n * (n + 1))
        if gain > best_gain:
            best, best_gain = c, gain
    return best


def _strata_of(totals: dict) -> tuple:
    """The strata named in a dict of totals: the sign-split ones when present (a whole
    ``pair_totals`` also holds their union ``intersection``), else the legacy ones."""
    names = STRATA if any(c in totals for c in ("intersection+", "intersection-")) else LEGACY_STRATA
    return tuple(c for c in names if c in totals)


def _sigma(x: np.ndarray) -> float:
    """σ_c from ``n`` judged draws, at least ``1/sqrt(n + 1)``: a pilot whose judgements in a
    stratum all agree (s_c = 0) must not starve that stratum of judgements (and of an honest SE)."""
    n = len(x)
    s = float(x.std(ddof=1)) if n > 1 else 0.0
    return max(s, 1.0 / math.sqrt(n + 1))


def pilot_sigmas(sample: StratifiedSample, by_pair: dict) -> dict:
    """Per-stratum standard deviation of ``l · 1(i ≡ j)`` from judged pilot draws (floored,
    see :func:`_sigma`)."""
    return stratum_sigmas(sample.draws, by_pair)


def stratum_sigmas(draws_by_stratum: dict, by_pair: dict) -> dict:
    """σ_c of ``{stratum: draws}`` (floored, see :func:`_sigma`)."""
    return {c: _sigma(_stratum_stats(d, by_pair)[0]) for c, d in draws_by_stratum.items()}
