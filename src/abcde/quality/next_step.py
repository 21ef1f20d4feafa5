"""The next step's arithmetic: how many more judged pairs would make an interval as narrow as asked.

:mod:`abcde.quality.verdict` aims the next step at the side still undetermined and says it in words
(its rule, "Next step"); this module counts the pairs, from the quality result's dict and no more.

- **The finite-population formula.** From the current half-width ``h``, ``n`` judged pairs and the
  ``N`` distinct pairs of the sampled strata (none counted when a stratum is a census), the judged
  pairs that make the half-width ``target``: ``n' = 1 / ((1/n − 1/N)·(target/h)² + 1/N)``, at most
  ``N``; without ``N``, ``n/(target/h)²`` (:func:`fpc_need`).
- **ΔPrecision** (:func:`more_pairs`): on the result's ``judged_pairs``; the budget grows by the
  more pairs.
- **The recall lift** (:func:`more_recall_pairs`): on the lift's own ``n_judgements`` and the pairs
  of its strata (:data:`RECALL_STRATA`); the more pairs are scaled by judged_pairs/n, since a larger
  budget grows every stratum, not only these.
- **Model + people** (``design.ppi``): the estimate rests on the people's judgements, so the more
  are people's judgements of the drawn pairs (``human_budget``), and the budget grows once they
  would exceed the drawn pairs. For ΔPrecision, judging every drawn pair leaves the drawn sample's
  own variance (:func:`sample_variance_share`): the people's part shrinks as (1/n − 1/N) down to
  it, and below it more pairs must be drawn.

Each returns a dict (``target_half_width``, ``half_width``, ``judged_pairs``, ``pairs_needed``,
``more_pairs``, ``budget``, ``population``, ``sample_dir``, and ``human_budget`` and ``people`` for
model + people), or None when fewer than two are judged or the interval is already as narrow.
"""

from __future__ import annotations

import math

#: The smallest change the next-step advice aims to resolve (ΔPrecision units: 0.001 = 0.1 pp).
MIN_RESOLUTION = 0.001
#: The smallest recall lift the next-step advice aims to resolve (0.005: half a percent of the true links).
RECALL_MIN_RESOLUTION = 0.005
#: The strata the recall lift rests on: pairs together in Base only, in Exp only, and in both.
RECALL_STRATA = ("split", "merge", "agreed")


def fpc_need(n: int, N: int | None, half_width: float, target: float) -> int:
    """Judged pairs that make the half-width ``target``: ``1/((1/n − 1/N)·(target/h)² + 1/N)``, at most N."""
    ratio = (target / half_width) ** 2
    if N and N > n:
        need = min(1.0 / ((1.0 / n - 1.0 / N) * ratio + 1.0 / N), float(N))
    else:
        need = n / ratio
    return int(math.ceil(need))


def more_pairs(q: dict, half_width: float, target: float) -> dict | None:
    """How many judged pairs make ΔPrecision's interval's half-width ``target`` (see the module's
    docstring and :mod:`abcde.quality.verdict`'s rule, "Next step")."""
    design = q.get("design") or {}
    n = int(q.get("judged_pairs") or 0)
    if n < 2 or not (half_width > target > 0):
        return None
    ppi = design.get("ppi")
    if ppi:  # prediction-powered: more people's judgements of the drawn pairs, and more pairs once all are
        n, N = int(ppi["people_judgements"]), int(ppi["pairs"])
        ratio = (target / half_width) ** 2
        need = int(math.ceil(1.0 / ((1.0 / n - 1.0 / N) * ratio + 1.0 / N) if N > n else n / ratio))
        floor = sample_variance_share(ppi, n, N)
        if floor is not None:
            # Judging every drawn pair leaves the drawn sample's own variance (``floor`` of it now): the
            # people's part shrinks as (1/n − 1/N) down to it; below it, more pairs must be drawn.
            need = N if ratio <= floor else int(math.ceil(1.0 / ((1.0 / n - 1.0 / N) * (ratio - floor) / (1.0 - floor)
                                                                 + 1.0 / N)))
        budget = int(design.get("budget") or N)
        grow = need >= N and (floor is None or ratio <= floor)  # the drawn pairs cannot get there: draw more
        if grow and floor is not None:
            need = int(math.ceil(n / ratio - 1e-9))  # a sample 1/ratio times larger, people keeping their share
        return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
                "more_pairs": max(need - n, 1), "human_budget": max(need, n + 1),
                "budget": int(math.ceil(budget * need / max(n, 1))) if grow else budget, "population": N,
                "sample_dir": design.get("sample_dir"), "people": True}
    census = set(q.get("census") or ())
    counts = design.get("pair_counts") or {}
    N = sum(v for c, v in counts.items() if c in (q.get("strata") or ()) and c not in census) or None
    need = fpc_need(n, N, half_width, target)
    budget = int(design.get("budget") or n)
    more = max(need - n, 1)
    return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
            "more_pairs": more, "budget": budget + more, "population": N,
            "sample_dir": design.get("sample_dir")}


def sample_variance_share(ppi: dict, n: int, N: int) -> float | None:
    """The share of a model + people estimate's variance that judging every drawn pair by people
    would leave: the drawn sample's own, ``S²/N`` with ``S²`` the people-only estimate's ``n·Var``
    (``people_only_std_err``); None when not known (then the whole variance is taken to shrink as
    (1/n − 1/N))."""
    se, alone = ppi.get("std_err"), ppi.get("people_only_std_err")
    if not (se and alone and N > n > 0) or not (math.isfinite(se) and math.isfinite(alone)):
        return None
    return min(n * alone * alone / N / (se * se), 1.0)


def more_recall_pairs(q: dict, r: dict, half_width: float, target: float) -> dict | None:
    """How many judged pairs make the recall lift's half-width ``target``: the finite-population
    formula of :func:`more_pairs` on the lift's own ``n_judgements`` and the pairs of its strata,
    the more pairs scaled by judged_pairs/n (a larger budget grows every stratum, not only these).
    Model + people (``design.ppi``): the lift rests on the people's judgements, so the more are
    people's judgements (scaled by people's judgements/n), and the budget grows once they would
    exceed the drawn pairs, as for ΔPrecision."""
    design = q.get("design") or {}
    n = int(r.get("n_judgements") or 0)
    if n < 2 or not (half_width > target > 0):
        return None
    census = set(q.get("census") or ())
    strata = set(q.get("strata") or RECALL_STRATA)
    counts = design.get("pair_counts") or {}
    N = sum(v for c, v in counts.items() if c in RECALL_STRATA and c in strata and c not in census) or None
    need = fpc_need(n, N, half_width, target)
    more_own = max(need - n, 1)
    ppi = design.get("ppi")
    if ppi:  # model + people: the lift rests on the people's judgements; more of them, more pairs once all are
        people, pairs = int(ppi["people_judgements"]), int(ppi["pairs"])
        more = max(int(math.ceil(more_own * people / n)), more_own) if people > n else more_own
        human = people + more
        budget = int(design.get("budget") or pairs)
        grow = human >= pairs
        return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
                "more_pairs": more, "more_recall_pairs": more_own, "human_budget": human,
                "budget": int(math.ceil(budget * human / max(people, 1))) if grow else budget, "population": N,
                "sample_dir": design.get("sample_dir"), "people": True}
    judged = int(q.get("judged_pairs") or 0)
    more = max(int(math.ceil(more_own * judged / n)), more_own) if judged > n else more_own
    budget = int(design.get("budget") or judged or n)
    return {"target_half_width": target, "half_width": half_width, "judged_pairs": n, "pairs_needed": need,
            "more_pairs": more, "more_recall_pairs": more_own, "budget": budget + more, "population": N,
            "sample_dir": design.get("sample_dir")}

