"""The stratified pair sampler: each stratum's pairs drawn on their own (∝ u_ij; the agreed stratum
∝ w_i·w_j), or listed whole when its budget covers them (a census), and the exact self terms.

Budgets come from :mod:`abcde.sampling.allocation`; the estimator that reads the judged draws is
:mod:`abcde.quality.stratified`. :func:`sample_stratified_many` draws the samples of many seeds with
a few queries (simulations and benchmarks); each is the sample :func:`sample_stratified` gives.
"""

from __future__ import annotations

import hashlib
import json

import ibis
import pyarrow as pa

from abcde.core.diff import Diff
from abcde.core.inputs import private
from abcde.sampling.allocation import LEGACY_STRATA, SIGNED, STRATA, STRATUM_LABEL, StratifiedSample
from abcde.sampling.agreed import draw_agreed, read_agreed_cells_early
from abcde.sampling.cells import cell_sums
from abcde.sampling.clocks import check_seed
from abcde.sampling.pairs import (agreed_population, fill_budgets, pair_counts, pair_id, sample_pairs_many,
                                  stratum_pairs, vantage_items)
from abcde.sampling.plan import SamplePlan, plan_sample


def self_term(diff: Diff, total_weight: float) -> float:
    """Exact ``Σ_i u_ii · l_ii`` (the self pairs' part of ΔPrecision), from the cells' sums
    (:func:`abcde.sampling.cells.cell_sums`, once per diff)."""
    return cell_sums(diff).self_term(total_weight)


def _stratum_filter(t: ibis.Table, stratum: str) -> ibis.BooleanValue:
    """The rows of ``t`` (per item, as :func:`~abcde.sampling.pairs.item_pair_weights`) that are
    vantage points of ``stratum``."""
    if stratum.startswith("intersection"):
        # Vantage ∝ its whole stable weight (self share included) and self draws rejected:
        # what remains is ∝ u_ij over the non-self stable pairs, exactly.
        keep = (t.u_stable > 0) & (t.fragment_items > 1)
        return keep if stratum == "intersection" else keep & (t.stable_label == STRATUM_LABEL[stratum])
    return t[f"u_{stratum}"] > 0


def stratum_populations(diff: Diff) -> dict[str, tuple[ibis.Table, int]]:
    """``{stratum: (vantage population, its rows)}`` for every stratum of :data:`SIGNED` and
    :data:`LEGACY_STRATA`: ``item_id, base_cluster, exp_cluster, u, label, key, class`` (the agreed
    stratum's, for samples drawn by a clock per item: :func:`~abcde.sampling.pairs.agreed_population`).

    Each is a filter of :func:`~abcde.sampling.pairs.vantage_items` (the affected items joined to
    their fragments once, for all strata), read by its draws; the rows of every stratum are counted
    in one query. Once per diff."""
    cache = diff.cache.stratum_populations
    if not cache:
        t = vantage_items(diff)
        names = dict.fromkeys(SIGNED + LEGACY_STRATA)
        r = diff.engine.one(t.aggregate(**{f"n{k}": _stratum_filter(t, c).sum() for k, c in enumerate(names)}),
                            step="stratum sizes")
        for k, c in enumerate(names):
            if c.startswith("intersection"):
                u, label, cls = t.u_stable, t.stable_label, "stable"
            else:
                u, label, cls = t[f"u_{c}"], ibis.literal(STRATUM_LABEL[c]), c
            pop = t.filter(_stratum_filter(t, c)).select(
                "item_id", "base_cluster", "exp_cluster", u=u, label=label.cast("int8"),
                key=t.item_id.cast("string") + ibis.literal(f"|{c}"), **{"class": ibis.literal(cls)})
            cache[c] = (pop, int(r[f"n{k}"] or 0))
    return dict(cache)


def sample_stratified(diff: Diff, *, budget: int, seed: int, total_weight: float,
                      allocation: str = "proportional", sigmas: dict | None = None,
                      strata: tuple = STRATA, share: float | None = None, floor: int = 0,
                      agreed_by: str = "cells") -> StratifiedSample:
    """Sample each stratum ∝ u_ij with its share of ``budget`` judgements (the agreed stratum ∝
    ``w_i·w_j``, :func:`agreed_share` of them); a stratum whose share covers all its pairs is listed
    whole (a census). ``agreed_by``: how the agreed stratum is drawn (see :func:`sample_stratified_many`)."""
    return sample_stratified_many(diff, budget=budget, seeds=[check_seed(seed)], total_weight=total_weight,
                                  allocation=allocation, sigmas=sigmas, strata=strata, share=share, floor=floor,
                                  agreed_by=agreed_by)[0]


def sample_stratified_many(diff: Diff, *, budget: int, seeds, total_weight: float,
                           allocation: str = "proportional", sigmas: dict | None = None,
                           batch: int = 64, strata: tuple = STRATA, census: bool = True,
                           share: float | None = None, floor: int = 0,
                           agreed_by: str = "cells") -> list[StratifiedSample]:
    """:func:`sample_stratified` for each of ``seeds`` (the same samples, in order),
    with a few queries per stratum for a whole ``batch`` of seeds: for simulations.

    ``strata``: :data:`STRATA` (new samples), :data:`SIGNED` (a sample drawn before the agreed
    stratum, continued as drawn) or :data:`LEGACY_STRATA` to continue a sample drawn before the
    sign split, as it was drawn (no census: its strata were sampled, never listed).
    ``census=False`` samples every stratum, even one its budget covers (to test the sampler).
    ``share``: the agreed stratum's share of the budget (default :func:`agreed_share` of the pair
    masses; a sample grown by ``pairs --extend`` keeps the share it was drawn with); ``floor``: see
    :func:`split_budget`. ``agreed_by``: ``"cells"`` (new samples: :mod:`abcde.sampling.agreed`) or
    ``"items"`` (a sample drawn before issue 49, continued as drawn: a clock per item)."""
    seeds = [check_seed(s) for s in seeds]
    plan = plan_sample(diff, budget=budget, total_weight=total_weight, allocation=allocation, sigmas=sigmas,
                       strata=strata, share=share, floor=floor, agreed_by=agreed_by, census=census)
    drawn = draw_plan(diff, plan, seeds, batch=batch)
    return [StratifiedSample(drawn[s], plan.totals, plan.self_term, plan.budgets, allocation, plan.census, plan.share)
            for s in seeds]


def draw_plan(diff: Diff, plan: SamplePlan, seeds, *, batch: int = 64) -> dict:
    """Step 4 of a pair sample (:mod:`abcde.sampling.plan`): ``{seed: {stratum: draws}}``, each stratum
    of ``plan`` drawn with its budget (a census listed whole; the agreed stratum by cells or, in a
    sample drawn before issue 49, by a clock per item; the paper's design's own draws ∝ u_ij as one
    sequence), for each of ``seeds`` (a few queries per stratum for a whole ``batch`` of them)."""
    seeds = [check_seed(s) for s in seeds]
    read_early(diff, plan, seeds)
    id_type = diff.joined.item_id.type().to_pyarrow()
    out: dict = {s: {} for s in seeds}
    for c in plan.strata:
        if c == "paper":
            got = dict(zip(seeds, (ps.draws for ps in sample_pairs_many(
                diff, budget=plan.budgets[c], seeds=seeds, total_weight=plan.total_weight, batch=batch))))
        else:
            got = _stratum_draws(diff, c, plan.budgets[c], seeds, whole=c in plan.census,
                                 total_weight=plan.total_weight, id_type=id_type, batch=batch,
                                 agreed_by=plan.agreed_by)
        for s in seeds:
            out[s][c] = got[s]
    return out


def read_early(diff: Diff, plan: SamplePlan, seeds) -> None:
    """Name what the draws of ``plan`` read from the inputs beyond the affected items, the cells of its
    agreed stratum's first draws for each of ``seeds``, so that the read of the affected items fetches
    them too, when that has not happened yet (:func:`abcde.sampling.agreed.read_agreed_cells_early`)."""
    if "agreed" in plan.strata and plan.agreed_by == "cells" and "agreed" not in plan.census:
        read_agreed_cells_early(diff, budget=plan.budgets["agreed"], seeds=seeds)


def _stratum_draws(diff: Diff, stratum: str, budget: int, seeds, *, whole: bool, total_weight: float, id_type,
                   batch: int = 64, agreed_by: str = "cells") -> dict:
    """``{seed: draws}`` of one stratum: its ``budget`` distinct pairs drawn (or, ``whole``, every
    pair listed once with its ``pair_weight``), the same for every design that draws it."""
    if whole:
        listed = stratum_pairs(diff, stratum, total_weight)
        return {s: _census_draws(listed, stratum, s, id_type) for s in seeds}
    if stratum == "agreed" and agreed_by == "cells":
        return draw_agreed(diff, budget=budget, seeds=seeds, id_type=id_type)
    # The agreed stratum by a clock per item: samples drawn before issue 49, continued as drawn.
    pop, n_pop = agreed_population(diff) if stratum == "agreed" else stratum_populations(diff)[stratum]
    out = {}
    for k in range(0, len(seeds), batch):
        chunk = seeds[k:k + batch]
        if budget == 0:
            got = fill_budgets(diff, pop, 0, budget=1, seeds=chunk, salt="", id_type=id_type)
        else:
            got = fill_budgets(diff, pop, n_pop, budget=budget, seeds=chunk, salt=f"stratum-{stratum}:",
                               id_type=id_type, drop_self=stratum.startswith("intersection") or stratum == "agreed")
        out.update({s: got[s][0] for s in chunk})
    return out


def sample_agreed(diff: Diff, *, budget: int, seed: int, total_weight: float,
                  agreed_by: str = "cells") -> tuple[pa.Table, bool]:
    """The agreed stratum alone (pairs together in both clusterings, ∝ ``w_i·w_j``), as the paper's
    design draws it beside its own draws for the recall lift (issue 38): the draws the stratified
    design makes of it at that budget and seed, and whether they list it whole (a census, each pair
    once with its ``pair_weight``: when ``budget`` covers all its pairs)."""
    seed = check_seed(seed)
    got, whole = sample_agreed_many(diff, budget=budget, seeds=[seed], total_weight=total_weight, agreed_by=agreed_by)
    return got[seed], whole


def sample_agreed_many(diff: Diff, *, budget: int, seeds, total_weight: float, batch: int = 64,
                       agreed_by: str = "cells") -> tuple[dict, bool]:
    """:func:`sample_agreed` for each of ``seeds`` (``{seed: draws}``, the same draws), a few queries
    for a whole ``batch`` of seeds: for simulations."""
    seeds = [check_seed(s) for s in seeds]
    cap = pair_counts(diff)["agreed"]
    whole = 0 < cap <= budget
    return _stratum_draws(diff, "agreed", budget, seeds, whole=whole, total_weight=total_weight,
                          id_type=diff.joined.item_id.type().to_pyarrow(), batch=batch, agreed_by=agreed_by), whole


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
        "label": pa.array([STRATUM_LABEL[stratum]] * n, pa.int8()),
        "pair_id": pa.array([ids[k] for k in order], pa.string()),
        "needs_judgement": pa.array([True] * n, pa.bool_()),
        "pair_weight": listed.column("pair_weight").take(take),
    })


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
