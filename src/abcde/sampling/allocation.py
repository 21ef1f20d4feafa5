"""How a stratified pair sample's budget is split over its strata, before any draw (no Ibis: the
people's-tasks design and the judging app read it with a sample's files).

The strata (:data:`STRATA`): split, merge, the intersection by the sign of its term, and the agreed
pairs (issue 38). :func:`allocate` splits a budget ∝ ``U_c`` or Neyman's ``U_c·σ_c`` (a divisor
method: a larger budget only adds draws, ``pairs --extend``); :func:`agreed_share`,
:func:`agreed_budget` and :func:`split_budget` give the agreed stratum its part;
:func:`stratum_weights` the weights a budget is split by again (the people's tasks, the judging
app's serving order). The draws themselves: :mod:`abcde.sampling.stratified`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import pyarrow as pa

from abcde.errors import InputError

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
#: l_ij of each stratum: −1 split, +1 merge, the intersection by its sign, 0 agreed.
STRATUM_LABEL = {"split": -1, "merge": 1, "intersection+": 1, "intersection-": -1, "agreed": 0}
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
    if len(set(live)) == len(live) and all(score[c] == score[c] for c in live):  # no NaN: the same seats, faster
        return _seats(budget, live, score, cap, out)
    for _ in range(budget):
        open_ = [c for c in live if out[c] < cap[c]]
        if not open_:
            break
        few = [c for c in open_ if out[c] < 2]
        c = max(few, key=lambda k: score[k]) if few else max(open_, key=lambda k: score[k] / (out[k] + 0.5))
        out[c] += 1
    return out


def _seats(budget: int, live: list, score: dict, cap: dict, out: dict) -> dict:
    """:func:`allocate`'s seats, one at a time, the same as its loop gives (scores without NaN): first
    up to two for each stratum by its score (the largest first; ties: the first in ``live``), then each
    to the stratum with the largest ``score / (n_c + 1/2)`` (ties: the first in ``live``), from a heap
    (the quotients that did not change are not computed again)."""
    left = budget
    for c in sorted(live, key=lambda k: -score[k]):  # stable: ties keep the order of live
        take = min(2, cap[c], left)
        out[c] += take
        left -= take
    heap = [(-(score[c] / (out[c] + 0.5)), k, c) for k, c in enumerate(live) if out[c] < cap[c]]
    heapq.heapify(heap)
    while left > 0 and heap:
        _, k, c = heap[0]
        out[c] += 1
        left -= 1
        if out[c] < cap[c]:
            heapq.heapreplace(heap, (-(score[c] / (out[c] + 0.5)), k, c))
        else:
            heapq.heappop(heap)
    return out


def split_budget(budget: int, share: float, caps: dict | None, floor: int = 0) -> tuple[int, int]:
    """``(ΔPrecision strata's budget, agreed stratum's budget)`` of a sample of ``budget`` distinct
    pairs (:func:`agreed_budget`); ``floor``: the ΔPrecision strata's budget of a sample drawn
    without agreed pairs that grows now (``pairs --extend``), which they keep: the agreed stratum
    gets the rest."""
    n_a = agreed_budget(budget, share, (caps or {}).get("agreed"))
    if budget - n_a < floor:
        n_a = budget - floor
    return budget - n_a, n_a


def pair_class_of_draws(draws: pa.Table) -> list[str]:
    """Each draw's estimation class (the paper's design): self, split, merge, intersection (stable
    without self); from the draws' ``class`` and ``is_self`` columns (a pair sample's files, no Ibis)."""
    cls = draws.column("class").to_pylist()
    sf = draws.column("is_self").to_pylist()
    return ["self" if s else ("intersection" if c == "stable" else c) for c, s in zip(cls, sf)]


def without_agreed(draws: pa.Table) -> pa.Table:
    """The paper's design's own draws (∝ u_ij, one sequence): every draw but the agreed pairs drawn
    beside them for the recall lift (issue 38), which are no part of ΔPrecision's estimators."""
    if not draws.num_rows or "agreed" not in set(draws.column("class").to_pylist()):
        return draws
    return draws.filter(pa.array([c != "agreed" for c in draws.column("class").to_pylist()], pa.bool_()))


def draws_by_stratum(draws: pa.Table) -> dict:
    """A paper's-design sample's draws as the strata of :data:`STRATA` (self draws in none): split,
    merge, the intersection by the sign of its term (its label) and the agreed pairs. Within a
    stratum the draws ∝ u_ij of the one sequence are draws ∝ u_ij of that stratum (post-stratified:
    their number is random, each one's distribution that of the stratum's own draws)."""
    cls = pair_class_of_draws(draws) if draws.num_rows else []
    labels = draws.column("label").to_pylist() if draws.num_rows else []
    cls = [c + ("+" if lab > 0 else "-") if c == "intersection" else c for c, lab in zip(cls, labels)]
    return {c: draws.filter(pa.array([k == c for k in cls], pa.bool_())) for c in STRATA}


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
