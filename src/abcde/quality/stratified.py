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
with ``σ_c`` from a judged pilot sample). :func:`next_stratum` chooses, judgement by
judgement, the stratum that most reduces the SE (adaptive Neyman, for a judging UI).

:func:`sample_stratified_many` draws the samples of many seeds with a few queries
(simulations and benchmarks); each is the sample :func:`sample_stratified` gives.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import ibis
import numpy as np
import pyarrow as pa

from abcde.core.diff import Diff
from abcde.core.formulas import stable_pair_weight, weighted_mean_se
from abcde.core.inputs import private
from abcde.errors import InputError
from abcde.quality.result import Estimate, QualityResult, agresti_coull
from abcde.metrics.impact import link_masses
from abcde.sampling.clocks import check_seed, check_size
from abcde.sampling.pairs import (LABEL, agreed_population, fill_budgets, pair_counts, pair_id, pair_totals,
                                  stratum_pairs, vantage_items)

#: The strata of a new sample: split, merge, and the intersection (stable pairs without self)
#: by the sign of its term, known from the cluster weights before anyone judges: ``intersection+``
#: (``W(B) > W(E)``, ``l_ij = +1``) and ``intersection-`` (``l_ij = −1``).
#: And ``agreed``, the pairs together in both clusterings (issue 38): no part of ΔPrecision (its
#: ``U`` is 0 and its label 0), the third stratum of the recall lift (:mod:`abcde.quality.recall`).
SIGNED = ("split", "merge", "intersection+", "intersection-")
STRATA = SIGNED + ("agreed",)
#: The strata of samples drawn before the sign split (still read, estimated and extended as drawn).
LEGACY_STRATA = ("split", "merge", "intersection")
ALLOCATIONS = ("proportional", "neyman")
_LABEL = {**LABEL, "intersection+": 1, "intersection-": -1, "agreed": 0}  # l_ij of each stratum
#: What the agreed stratum's budget share assumes before anyone judges: the share of same-entity
#: pairs among agreed pairs (usually near 1) and among split and merge pairs (unknown: 1/2, the
#: largest variance); and the bounds of the share.
AGREED_PRIOR, CHANGED_PRIOR = 0.95, 0.5
AGREED_SHARE_RANGE = (0.1, 0.5)


def agreed_share(masses: dict) -> float:
    """The agreed stratum's share of a sample's budget: its share of the Neyman allocation that
    minimises the delta-method variance of the recall lift ``Λ = (T_merge − T_split)/(T_agreed +
    T_split)`` (:mod:`abcde.quality.recall`), at the priors above::

        ∂Λ/∂T_merge = 1/T_Base,  ∂Λ/∂T_split = −(1 + Λ)/T_Base,  ∂Λ/∂T_agreed = −Λ/T_Base
        n_s ∝ |∂Λ/∂T_s|·M_s·σ_s     (T_s = M_s·p_s, σ_s = √(p_s(1 − p_s)))

    cut to :data:`AGREED_SHARE_RANGE` (the agreed pairs only scale Λ, so they need few; never none).
    0 when no two items are together in both clusterings, or none are split or merged (Λ = 0)."""
    ma, ms, mm = (float(masses.get(c, 0.0)) for c in ("agreed", "split", "merge"))
    if ma <= 0 or ms + mm <= 0:  # no agreed pair, or nothing split or merged: Λ = 0 exactly
        return 0.0
    pa_, pc = AGREED_PRIOR, CHANGED_PRIOR
    t_base = ma * pa_ + ms * pc
    lift = (mm * pc - ms * pc) / t_base
    sa, sc = math.sqrt(pa_ * (1 - pa_)), math.sqrt(pc * (1 - pc))
    a = abs(lift) * ma * sa
    b = (1 + lift) * ms * sc + mm * sc
    share = a / (a + b) if a + b > 0 else 1.0
    lo, hi = AGREED_SHARE_RANGE
    return min(max(share, lo), hi)


def stratum_weights(totals: dict, budgets: dict) -> dict:
    """Each stratum's weight where a budget is split ∝ ``U_c`` again (the people's tasks, the judging
    app's serving order): the ΔPrecision strata's ``U_c``; the agreed stratum (no ``U``) the weight
    that gives it the share of the sample it was drawn with, ``budgets[agreed]·Σ U_c/Σ budgets_c`` over
    the others. Strata not in ``budgets`` (samples drawn before the agreed stratum) as in ``totals``."""
    out = {c: float(totals.get(c, 0.0)) for c in budgets}
    if budgets.get("agreed"):
        others = [c for c in budgets if c != "agreed" and totals.get(c, 0.0) > 0 and budgets.get(c)]
        u, n = sum(float(totals[c]) for c in others), sum(int(budgets[c]) for c in others)
        out["agreed"] = int(budgets["agreed"]) * u / n if n and u > 0 else 1.0
    return out


def agreed_budget(budget: int, share: float, cap: int | None = None) -> int:
    """The agreed stratum's distinct pairs in a sample of ``budget``: ``round(share·budget)``, at
    least 2 (a standard error needs two), at most ``cap`` (its pairs: then it is judged whole) and
    at most half the budget (so 1 of a budget of 2 or 3, none of 1). Each grows by at most one pair
    with the budget: nondecreasing in ``budget``, and so is ``budget`` minus it: a larger
    budget only adds draws to every stratum (``pairs --extend``)."""
    if share <= 0:
        return 0
    n = min(max(2, int(math.floor(share * budget + 0.5))), budget // 2)
    return min(n, cap) if cap is not None else n


def self_term(diff: Diff, total_weight: float) -> float:
    """Exact ``Σ_i u_ii · l_ii`` (the self pairs' part of ΔPrecision); once per diff."""
    key = float(total_weight)
    if key not in diff.cache.self_terms:
        f = diff.fragments
        r = diff.engine.one(f.aggregate(s=stable_pair_weight(f, None, f.w2, signed=True).sum()), step="self term")
        diff.cache.self_terms[key] = float(r["s"] or 0.0) / float(total_weight)
    return diff.cache.self_terms[key]


def allocate(budget: int, totals: dict, *, allocation: str = "proportional", sigmas: dict | None = None,
             caps: dict | None = None, strata: tuple = SIGNED) -> dict:
    """Split ``budget`` over the strata: ∝ U_c, or ∝ U_c·σ_c (Neyman). Every stratum
    with weight gets at least 2 judgements (a standard error needs two), and none more than its
    ``caps[c]`` distinct pairs (then the stratum is judged whole, a census; its budget left over goes
    to the other strata)."""
    if allocation not in ALLOCATIONS:
        raise InputError(f"allocation must be one of {', '.join(ALLOCATIONS)}. Got {allocation!r} instead.")
    if allocation == "neyman" and not sigmas:
        raise InputError("Neyman allocation needs per-stratum standard deviations from a judged pilot sample.")
    score = {}
    for c in strata:
        u = totals.get(c, 0.0)
        score[c] = u * (max(sigmas.get(c, 0.0), 1e-6) if allocation == "neyman" else 1.0) if u > 0 else 0.0
    cap = {c: (caps or {}).get(c, budget) for c in strata}
    live = [c for c in strata if totals.get(c, 0.0) > 0 and cap[c] > 0]
    out = dict.fromkeys(strata, 0)
    # One judgement at a time (a divisor method, Sainte-Laguë/Webster): first two for each
    # stratum with weight (largest first), then to the stratum with the largest
    # score / (n_c + 1/2). Built seat by seat, the budgets for N + 1 are those for N plus one,
    # so a larger budget only adds draws to each stratum: 'pairs --extend' continues the same
    # successive draws of every stratum. A stratum at its cap takes no more.
    for _ in range(budget):
        open_ = [c for c in live if out[c] < cap[c]]
        if not open_:
            break
        few = [c for c in open_ if out[c] < 2]
        c = max(few, key=lambda k: score[k]) if few else max(open_, key=lambda k: score[k] / (out[k] + 0.5))
        out[c] += 1
    return out


@dataclass(frozen=True)
class StratifiedSample:
    """Per-stratum draws (same columns as :class:`abcde.sampling.pairs.PairSample` draws).

    ``budgets`` names the strata (:data:`STRATA`, or :data:`LEGACY_STRATA` for a sample drawn
    before the sign split); ``census`` the strata whose every pair is in the sample (their draws
    list each pair once with its ``pair_weight``)."""

    draws: dict
    totals: dict
    self_term: float
    budgets: dict
    allocation: str
    census: frozenset = frozenset()
    agreed_share: float | None = None

    @property
    def strata(self) -> tuple:
        return tuple(self.budgets)


def _stratum_filter(t: ibis.Table, stratum: str) -> ibis.BooleanValue:
    """The rows of ``t`` (per item, as :func:`~abcde.sampling.pairs.item_pair_weights`) that are
    vantage points of ``stratum``."""
    if stratum.startswith("intersection"):
        # Vantage ∝ its whole stable weight (self share included) and self draws rejected:
        # what remains is ∝ u_ij over the non-self stable pairs, exactly.
        keep = (t.u_stable > 0) & (t.fragment_items > 1)
        return keep if stratum == "intersection" else keep & (t.stable_label == _LABEL[stratum])
    return t[f"u_{stratum}"] > 0


def stratum_populations(diff: Diff) -> dict[str, tuple[ibis.Table, int]]:
    """``{stratum: (vantage population, its rows)}`` for every stratum of :data:`STRATA` and
    :data:`LEGACY_STRATA`: ``item_id, base_cluster, exp_cluster, u, label, key, class``.

    Each is a filter of :func:`~abcde.sampling.pairs.vantage_items` (the affected items joined to
    their fragments once, for all strata), read by its draws; the rows of every stratum are counted
    in one query. Once per diff."""
    cache = diff.cache.stratum_populations
    if not cache:
        cache["agreed"] = agreed_population(diff)
        t = vantage_items(diff)
        names = dict.fromkeys(SIGNED + LEGACY_STRATA)
        r = diff.engine.one(t.aggregate(**{f"n{k}": _stratum_filter(t, c).sum() for k, c in enumerate(names)}),
                            step="stratum sizes")
        for k, c in enumerate(names):
            if c.startswith("intersection"):
                u, label, cls = t.u_stable, t.stable_label, "stable"
            else:
                u, label, cls = t[f"u_{c}"], ibis.literal(_LABEL[c]), c
            pop = t.filter(_stratum_filter(t, c)).select(
                "item_id", "base_cluster", "exp_cluster", u=u, label=label.cast("int8"),
                key=t.item_id.cast("string") + ibis.literal(f"|{c}"), **{"class": ibis.literal(cls)})
            cache[c] = (pop, int(r[f"n{k}"] or 0))
    return dict(cache)


def sample_stratified(diff: Diff, *, budget: int, seed: int, total_weight: float,
                      allocation: str = "proportional", sigmas: dict | None = None,
                      strata: tuple = STRATA, share: float | None = None, floor: int = 0) -> StratifiedSample:
    """Sample each stratum ∝ u_ij with its share of ``budget`` judgements (the agreed stratum ∝
    ``w_i·w_j``, :func:`agreed_share` of them); a stratum whose share covers all its pairs is listed
    whole (a census)."""
    return sample_stratified_many(diff, budget=budget, seeds=[check_seed(seed)], total_weight=total_weight,
                                  allocation=allocation, sigmas=sigmas, strata=strata, share=share, floor=floor)[0]


def split_budget(budget: int, share: float, caps: dict | None, floor: int = 0) -> tuple[int, int]:
    """``(ΔPrecision strata's budget, agreed stratum's budget)`` of a sample of ``budget`` distinct
    pairs (:func:`agreed_budget`); ``floor``: the ΔPrecision strata's budget of a sample drawn
    without agreed pairs that grows now (``pairs --extend``), which they keep: the agreed stratum
    gets the rest."""
    n_a = agreed_budget(budget, share, (caps or {}).get("agreed"))
    if budget - n_a < floor:
        n_a = budget - floor
    return budget - n_a, n_a


def sample_stratified_many(diff: Diff, *, budget: int, seeds, total_weight: float,
                           allocation: str = "proportional", sigmas: dict | None = None,
                           batch: int = 64, strata: tuple = STRATA, census: bool = True,
                           share: float | None = None, floor: int = 0) -> list[StratifiedSample]:
    """:func:`sample_stratified` for each of ``seeds`` (the same samples, in order),
    with a few queries per stratum for a whole ``batch`` of seeds: for simulations.

    ``strata``: :data:`STRATA` (new samples), :data:`SIGNED` (a sample drawn before the agreed
    stratum, continued as drawn) or :data:`LEGACY_STRATA` to continue a sample drawn before the
    sign split, as it was drawn (no census: its strata were sampled, never listed).
    ``census=False`` samples every stratum, even one its budget covers (to test the sampler).
    ``share``: the agreed stratum's share of the budget (default :func:`agreed_share` of the pair
    masses; a sample grown by ``pairs --extend`` keeps the share it was drawn with); ``floor``: see
    :func:`split_budget`."""
    budget = check_size(budget, "budget")
    seeds = [check_seed(s) for s in seeds]
    strata = tuple(strata)
    if strata not in (STRATA, SIGNED, LEGACY_STRATA):
        raise InputError(f"strata must be {STRATA}, {SIGNED} or {LEGACY_STRATA}. Got {strata!r} instead.")
    totals = pair_totals(diff, total_weight)
    caps = pair_counts(diff) if strata != LEGACY_STRATA and census else None
    if strata == STRATA:
        if share is None:
            share = agreed_share(link_masses(diff, total_weight))
        dp_budget, n_agreed = split_budget(budget, share, caps, floor)
        budgets = allocate(dp_budget, totals, allocation=allocation, sigmas=sigmas, caps=caps, strata=SIGNED)
        # What ΔPrecision's strata cannot take (every one listed whole) goes to the agreed stratum.
        left = dp_budget - sum(budgets.values())
        if n_agreed and left > 0:
            n_agreed = min(n_agreed + left, (caps or {}).get("agreed", n_agreed + left))
        budgets["agreed"] = n_agreed
    else:
        budgets = allocate(budget, totals, allocation=allocation, sigmas=sigmas, caps=caps, strata=strata)
    whole = frozenset(c for c in strata if caps and budgets[c] > 0 and budgets[c] >= caps[c])
    st = self_term(diff, total_weight)
    id_type = diff.joined.item_id.type().to_pyarrow()
    draws: dict = {s: {} for s in seeds}
    for c in strata:
        if c in whole:
            listed = stratum_pairs(diff, c, total_weight)
            for s in seeds:
                draws[s][c] = _census_draws(listed, c, s, id_type)
            continue
        pop, n_pop = stratum_populations(diff)[c]
        for k in range(0, len(seeds), batch):
            chunk = seeds[k:k + batch]
            if budgets[c] == 0:
                got = fill_budgets(diff, pop, 0, budget=1, seeds=chunk, salt="", id_type=id_type)
            else:
                got = fill_budgets(diff, pop, n_pop, budget=budgets[c], seeds=chunk, salt=f"stratum-{c}:",
                                   id_type=id_type, drop_self=c.startswith("intersection") or c == "agreed")
            for s in chunk:
                draws[s][c] = got[s][0]
    return [StratifiedSample(draws[s], totals, st, budgets, allocation, whole, share) for s in seeds]


def _census_draws(listed: pa.Table, stratum: str, seed: int, id_type) -> pa.Table:
    """A census stratum's pairs as draws, each pair once, in an order fixed by the seed (a hash of
    the seed and the pair id), with ``pair_weight`` (``u_ab + u_ba``)."""
    a, b = listed.column("item_a").to_pylist(), listed.column("item_b").to_pylist()
    ids = [pair_id(x, y) for x, y in zip(a, b)]
    order = sorted(range(len(ids)), key=lambda k: hashlib.sha256(f"{seed}|{stratum}|{ids[k]}".encode()).digest())
    take = pa.array(order, pa.int64())
    n = len(order)
    return pa.table({
        "draw": pa.array(range(n), pa.int64()),
        "item_a": listed.column("item_a").take(take).cast(id_type),
        "item_b": listed.column("item_b").take(take).cast(id_type),
        "class": pa.array(["stable" if stratum.startswith("intersection") else stratum] * n, pa.string()),
        "is_self": pa.array([False] * n, pa.bool_()),
        "label": pa.array([_LABEL[stratum]] * n, pa.int8()),
        "pair_id": pa.array([ids[k] for k in order], pa.string()),
        "needs_judgement": pa.array([True] * n, pa.bool_()),
        "pair_weight": listed.column("pair_weight").take(take),
    })


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


def _census_total(draws: pa.Table, by_pair: dict, y) -> tuple[float, float, int, float, float]:
    """``Σ_k pair_weight_k · y_k`` over a census stratum's pairs (each listed once), its variance,
    the judged pairs it rests on, the judged pairs' exact part ``Σ_judged pair_weight·y`` and the
    weight ``R`` of the pairs left, ``y(label, same, item_a, item_b)``.

    Every pair judged: the exact total, variance 0. Pairs left unsure or not judged (weight ``R``)
    are taken to be like the judged ones, as in a sampled stratum: their part is ``R·ȳ`` (``ȳ`` the
    weighted mean of the judged), with variance ``R²·SE(ȳ)² + s²·Σ_unjudged pair_weight²``."""
    if not draws.num_rows:
        return 0.0, 0.0, 0, 0.0, 0.0
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    ys, ws, rest, rest2 = [], [], 0.0, 0.0
    for k, (pid, lab, a, b) in enumerate(zip(draws.column("pair_id").to_pylist(), draws.column("label").to_pylist(),
                                             draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())):
        j = by_pair.get(pid)
        if j in ("same", "different"):
            ys.append(y(lab, 1.0 if j == "same" else 0.0, a, b))
            ws.append(pw[k])
        else:
            rest += pw[k]
            rest2 += pw[k] * pw[k]
    y_, w_ = np.asarray(ys, dtype=float), np.asarray(ws, dtype=float)
    n = len(y_)
    known = float((w_ * y_).sum())
    if rest == 0.0:
        return known, 0.0, n, known, 0.0
    if n == 0:
        return math.nan, math.nan, 0, known, rest
    mean, se = weighted_mean_se(y_, w_)
    s2 = float((w_ * (y_ - mean) ** 2).sum() / w_.sum())
    return known + rest * mean, rest * rest * se * se + s2 * rest2, n, known, rest


def estimate_stratified(sample: StratifiedSample, by_pair: dict, *, split_rate: float,
                        merge_rate: float) -> QualityResult:
    """ΔPrecision and the Good/Bad rates under the stratified design (a census stratum adds its
    exact total, see :func:`_census_total`)."""
    census = sorted(sample.census, key=sample.strata.index)
    method = f"stratified ({sample.allocation})" + (f"; census of {', '.join(census)}" if census else "")
    # Intervals: in a stratum of one sign every judged draw is l·1(same), a proportion; near 0 or 1
    # its Wald interval undercovers (a stratum whose few draws all agree has SE 0), so the interval
    # is Agresti–Coull's: centred on p̃ = (k + 2)/(n + 4), half-width q·√(p̃(1 − p̃)/(n + 4)) (the
    # estimate stays the unbiased p̂). Summed over strata the shifts add up, the half-widths in
    # quadrature: Estimate.confidence_interval widens the interval to reach the estimate where they
    # carry it outside (issue 38). Samples drawn before the sign split keep Wald intervals.
    signed = all(c in _LABEL for c in sample.strata)
    dp, var, n_j, missing = sample.self_term, 0.0, 0, []
    centre, ivar = sample.self_term, 0.0
    # The feasible range of ΔPrecision, known before anyone judges: the self term plus each stratum's
    # U_c·l_c·p_c with p_c in [0, 1] (a census stratum: its judged pairs' exact part plus l_c·[0, R]).
    lo, hi = sample.self_term, sample.self_term
    stats = {c: _stratum_stats(sample.draws[c], by_pair) for c in sample.strata}
    for c in sample.strata:
        U = sample.totals[c]
        if U == 0:
            continue
        lab = _LABEL.get(c)  # None: a legacy intersection stratum, of both signs
        if c in sample.census:
            t, v, n, known, rest = _census_total(sample.draws[c], by_pair, lambda lab, same, a, b: lab * same)
            lo, hi = lo + known - (rest if lab != 1 else 0.0), hi + known + (rest if lab != -1 else 0.0)
            if not math.isfinite(t):
                dp = math.nan
                missing.append(c)
                continue
            dp, var, n_j = dp + t, var + v, n_j + n
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
            centre, ivar = centre + U * _LABEL[c] * pt, ivar + U * U * ps * ps
    note = (f"no usable judgement yet in the {', '.join(missing)} " + ("strata" if len(missing) > 1 else "stratum")
            if missing else "")
    se = math.sqrt(var) if math.isfinite(var) and math.isfinite(dp) else math.nan
    delta = Estimate("delta_precision", dp, se, n_j if math.isfinite(dp) else 0, method=method, note=note,
                     bounds=(lo, hi),
                     **({"centre": centre, "interval_se": math.sqrt(ivar)} if signed and math.isfinite(dp) else {}))

    def rate(c, rate_value, want_same, name):
        _, same = stats[c]
        if rate_value == 0:
            return Estimate(name, 0.0, 0.0, len(same), method=method, note=f"no {c}s: the {c} rate is 0",
                            bounds=(0.0, 0.0))
        if c in sample.census:
            d = sample.draws[c]
            total = float(np.asarray(d.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float).sum())
            t, v, n, known, rest = _census_total(d, by_pair, lambda lab, s, a, b: s if want_same else 1.0 - s)
            bounds = (rate_value * known / total, rate_value * (known + rest) / total)
            if n == 0:
                return Estimate(name, math.nan, math.nan, 0, method=method, note=f"no judged {c} pairs",
                                bounds=bounds)
            return Estimate(name, rate_value * t / total, rate_value * math.sqrt(v) / total, n, method=method,
                            bounds=bounds)
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


def slice_self_terms(diff: Diff, column: str, total_weight: float) -> dict:
    """Per value of ``column`` (JSON-encoded, as the slice multipliers are stored): the exact
    self term of the slice ``Σ_{i ∈ I} u_ii · l_ii`` and the self pairs' weight ``Σ_{i ∈ I} u_ii``."""
    t = vantage_items(diff)  # every item with a self pair weight (u_self > 0 ⇒ u_stable > 0)
    g = t.select("item_id", __abcde_self=t.u_self * t.stable_label, __abcde_self_u=t.u_self)
    g = g.join(diff.items.select("item_id", column), "item_id")
    # Sums under names no input column can take (a slice column may be called "s" or "u").
    s, u = private("s"), private("u")
    rows = diff.engine.rows(g.group_by(column).aggregate(**{s: g["__abcde_self"].sum(), u: g["__abcde_self_u"].sum()}),
                            step=f"slice self terms {column}")
    W = float(total_weight)
    return {json.dumps(r[column], default=str): (float(r[s] or 0.0) / W, float(r[u] or 0.0) / W) for r in rows}


def slice_ranges(sample: StratifiedSample, multipliers: dict, self_terms: dict):
    """Per slice value, largest pair weight first: ``(value, weight(I), pairweight(I), self term(I),
    Σ_{i∈I} u_ii, feasible range of ΔPrecisionContribution(I))``. The range is the exact self term(I)
    plus the slice's other pairs, ``pairweight(I) − Σ_I u_ii``, each of weight ``u_ij·l_ij·1(i ≡ j)``,
    a term of its stratum's sign."""
    live = [_LABEL.get(c) for c in sample.strata if sample.totals[c] > 0]
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
                    t, v, n, _, _ = _census_total(sample.draws[c], by_pair, inside)
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
        contrib = Estimate("delta_precision_contribution", est, se, n_in, method=method, note=note, bounds=bounds)
        scale = float(total_weight) / w_i if w_i else math.nan
        dpi = Estimate("delta_precision", est * scale, se * scale, n_in, method=method, note=note,
                       bounds=(bounds[0] * scale, bounds[1] * scale))
        rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw, "self_term": st,
                     "sampled_draws": drawn.get(value, 0), "delta_precision": dpi.to_dict(),
                     "delta_precision_contribution": contrib.to_dict()})
    return rows


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
