"""A pair sample's plan, before any pair is drawn (issue 49): steps 1–3 of the one pipeline.

A pair sample is drawn in five steps, each run once (``docs/architecture.md``):

1. its **strata** (the design's: split, merge, the intersection by sign and the agreed pairs; a sample
   drawn before the agreed stratum or the sign split keeps its own), and how the agreed stratum is drawn;
2. their **masses and sizes**: the pair totals ``U_c``, the distinct pairs, the recall lift's pair
   masses and the self term, from one aggregate of the cells (:func:`abcde.sampling.cells.cell_sums`);
3. the **budgets**: the agreed stratum's share, the split of the rest ∝ ``U_c`` (or Neyman's), and the
   strata whose budget covers their pairs (a census);
4. the **draws** of each stratum (:func:`abcde.sampling.stratified.draw_plan`);
5. the **listing and writing**: the drawn items' attributes, the exact facts, the sample directory
   (:mod:`abcde.quality.draw`).

:func:`plan_sample` is steps 1–3: one query, then arithmetic (no Ibis beyond the query).
"""

from __future__ import annotations

from dataclasses import dataclass

from abcde.core.diff import Diff
from abcde.errors import InputError
from abcde.sampling.allocation import LEGACY_STRATA, SIGNED, STRATA, agreed_share, allocate, split_budget
from abcde.sampling.cells import cell_sums
from abcde.sampling.clocks import check_size

#: The paper's design as a plan's strata: its own draws ∝ u_ij (one sequence over every class) and the
#: agreed pairs drawn beside them for the recall lift (issue 38).
PAPER = ("paper", "agreed")
AGREED_BY = ("cells", "items")


@dataclass(frozen=True)
class SamplePlan:
    """What a pair sample draws, decided before any draw.

    ``strata`` in draw order and their ``budgets`` (distinct pairs each; the paper's design: its own
    draws' budget under ``"paper"``); ``census`` the strata listed whole; ``totals`` (``Σ u_ij`` per
    class and stratum), ``counts`` (distinct pairs per stratum), ``masses`` (the recall lift's pair
    masses) and ``self_term``, all exact; ``share`` the agreed stratum's share of the budget, ``floor``
    the budget of the ΔPrecision strata of a sample drawn before them (kept when it grows);
    ``agreed_by`` how the agreed stratum is drawn (``"cells"``, or ``"items"``: a clock per item, for
    samples drawn before issue 49)."""

    estimator: str
    strata: tuple
    budgets: dict
    census: frozenset
    totals: dict
    counts: dict
    masses: dict
    self_term: float
    share: float | None
    floor: int
    allocation: str | None
    agreed_by: str
    total_weight: float


def plan_sample(diff: Diff, *, budget: int, total_weight: float, estimator: str = "stratified",
                allocation: str = "proportional", sigmas: dict | None = None, strata: tuple = STRATA,
                share: float | None = None, floor: int = 0, agreed_by: str = "cells",
                census: bool = True) -> SamplePlan:
    """Steps 1–3 (module docstring) of a sample of ``budget`` distinct pairs.

    ``estimator``: ``"stratified"`` (``strata``: :data:`STRATA` for new samples, :data:`SIGNED` or
    :data:`LEGACY_STRATA` to continue a sample drawn before the agreed stratum or the sign split; the
    latter is never a census) or ``"paper"``. ``share``: the agreed stratum's share of the budget
    (default :func:`~abcde.sampling.allocation.agreed_share` of the pair masses; a growing sample keeps
    its own); ``floor``: see :func:`~abcde.sampling.allocation.split_budget`. ``census=False`` samples
    every stratum, even one its budget covers (to test the sampler)."""
    budget = check_size(budget, "budget")
    if estimator not in ("paper", "stratified"):
        raise InputError(f"estimator must be 'paper' or 'stratified'. Got {estimator!r} instead.")
    if agreed_by not in AGREED_BY:
        raise InputError(f"agreed_by must be 'cells' or 'items'. Got {agreed_by!r} instead.")
    strata = PAPER if estimator == "paper" else tuple(strata)
    if strata not in (STRATA, SIGNED, LEGACY_STRATA, PAPER):
        raise InputError(f"strata must be {STRATA}, {SIGNED} or {LEGACY_STRATA}. Got {strata!r} instead.")
    # 2. Masses and sizes: one aggregate of the cells.
    sums = cell_sums(diff)
    totals, counts, masses = sums.pair_totals(total_weight), sums.pair_counts(), sums.link_masses(total_weight)
    # 3. Budgets.
    caps = counts if strata != LEGACY_STRATA and census else None
    if "agreed" in strata:
        if share is None:
            share = agreed_share(masses)
        dp_budget, n_agreed = split_budget(budget, share, caps, floor)
        # What ΔPrecision's draws cannot take (every pair needing a judgement drawn, or every stratum
        # listed whole) goes to the agreed stratum.
        if estimator == "paper":
            left = dp_budget - sum(counts[c] for c in SIGNED)
            if n_agreed and left > 0:
                dp_budget, n_agreed = dp_budget - left, min(n_agreed + left, counts["agreed"])
            budgets = {"paper": dp_budget}
        else:
            budgets = allocate(dp_budget, totals, allocation=allocation, sigmas=sigmas, caps=caps, strata=SIGNED)
            left = dp_budget - sum(budgets.values())
            if n_agreed and left > 0:
                n_agreed = min(n_agreed + left, (caps or {}).get("agreed", n_agreed + left))
        budgets["agreed"] = n_agreed
    else:
        budgets = allocate(budget, totals, allocation=allocation, sigmas=sigmas, caps=caps, strata=strata)
    whole = frozenset(c for c in strata if caps and c in caps and budgets[c] > 0 and budgets[c] >= caps[c])
    return SamplePlan(estimator=estimator, strata=strata, budgets=budgets, census=whole, totals=totals,
                      counts=counts, masses=masses, self_term=sums.self_term(total_weight), share=share,
                      floor=floor, allocation=allocation if estimator == "stratified" else None,
                      agreed_by=agreed_by, total_weight=float(total_weight))


__all__ = ["AGREED_BY", "PAPER", "SamplePlan", "plan_sample"]
