"""The per-cell sums a pair sample needs, from the fragment table in one query (issue 49).

A *cell* is a fragment ``F = B ∩ E``: the diff pass already holds, per cell, its items ``n``,
weight ``W(F)`` and ``Σ_F w²``, and its clusters' totals. Every exact number a pair sample is
drawn with follows from these by sums over the cells:

* the pair weight totals ``U_c`` of the ΔPrecision strata (split, merge, the intersection by the
  sign of its term; the self pairs and their signed self term);
* the distinct pairs of every stratum (a stratum its budget covers is listed whole);
* the pair masses ``M_s = Σ w_i·w_j`` of the recall lift (together in both, in the agreed stratum,
  in Base only, in Exp only);

:func:`cell_sums` computes them all in one aggregate over the fragments, once per diff;
:func:`abcde.sampling.pairs.pair_totals`, :func:`~abcde.sampling.pairs.pair_counts`,
:func:`abcde.sampling.stratified.self_term` and the recall lift's exact facts read them instead of
each scanning the fragments again (four queries before issue 49). :func:`agreed_groups` sums the
agreed stratum's mass ``W(F)² − Σ_F w²`` per *group* of agreed cells, the first stage of its draws
(:mod:`abcde.sampling.agreed`), in one group-by.

A cell's group (:func:`cell_group`) is a cheap arithmetic function of its two cluster ids, the same
on every engine. The grouping never changes what the agreed draws are distributed as (exactly ∝
``w_i·w_j`` whatever the groups); it orders the cells the draws' uniforms are inverted over, so it is
part of how a sample is drawn (recorded: ``agreed_draws``), and it decides how many cells the second
stage fetches.
"""

from __future__ import annotations

from dataclasses import dataclass

import ibis
import numpy as np
import pyarrow.compute as pc

from abcde.core.diff import Diff
from abcde.core.formulas import affected, merge_pair_weight, split_pair_weight, stable_pair_weight
from abcde.errors import InputError

#: Groups of agreed cells for the agreed stratum's first stage. Part of how a sample is drawn: a
#: sample records it (``agreed_draws``), and a later ``pairs --extend`` groups the cells the same way.
GROUPS = 1 << 16
_P = 2_147_483_647  # 2^31 − 1, a prime: products of two residues stay inside int64 on every engine
_PRINTABLE = "".join(chr(c) for c in range(32, 127))


def agreed_cells(f) -> ibis.BooleanValue:
    """The cells of the agreed stratum: two items or more, and not an intersection stratum's (an
    affected cell with ``W(B) ≠ W(E)``, whose pairs ΔPrecision samples ∝ u_ij already and the recall
    lift reweights): so no pair is in two strata."""
    inter = affected(f) & (f.wb != f.we)
    return (f.n > 1) & ~inter


def _residue(x: ibis.Value) -> ibis.IntegerValue:
    """An id as an integer in ``[0, 2^31 − 1)``, computed alike on every engine, by cheap operations
    only (no hash): an integer or decimal id by its residue, exact in its own type (an unsigned
    integer, which Spark reads as a decimal, alike on both); a float by the residue of its value (0 for
    an infinite one); any other id (text) from its length and the positions of its last eight characters
    among the printable ASCII characters (−1 for any other character). Never through a number's text,
    which engines write differently (``1e-05`` and ``1.0E-5``)."""
    t = x.type()
    if t.is_integer() and not t.is_unsigned_integer():
        return ((x.cast("int64") % _P) + _P) % _P
    if t.is_unsigned_integer() or t.is_decimal():  # exact in its own type (a uint64 beyond 2^63 too)
        r = x % ibis.literal(_P, t if t.is_decimal() else "uint64")
        return (r.floor() if t.is_decimal() else r).cast("int64")
    if t.is_numeric():
        v = x.cast("float64")
        r = ((v % float(_P)) + float(_P)) % float(_P)
        finite = (v > -1e308) & (v < 1e308)  # false for an infinity (and a NaN, which inputs refuse)
        return ibis.ifelse(finite, r.floor(), 0.0).cast("int64")
    s = x.cast("string")
    h = s.length().cast("int64")
    tail = s.right(8)
    chars = ibis.literal(_PRINTABLE)
    for k in range(8):
        h = (h * 131 + chars.find(tail.substr(k, 1)).cast("int64") + 2) % _P
    return h


def cell_group(f) -> ibis.IntegerValue:
    """A cell's group in ``[0, GROUPS)`` from its two cluster ids (:func:`_residue`, mixed by two
    multiplications modulo ``2^31 − 1``): the same integer on every engine."""
    h = (_residue(f.base_cluster) * 48_271 + _residue(f.exp_cluster)) % _P
    h = (h * 69_621 + 12_345) % _P
    return (h % GROUPS).cast("int64")


@dataclass(frozen=True)
class CellSums:
    """The sums of :func:`cell_sums` (raw: not yet divided by ``weight(T)``), by name."""

    sums: dict

    def pair_totals(self, total_weight: float) -> dict:
        """``Σ u_ij`` overall, per class and per stratum (see :func:`abcde.sampling.pairs.pair_totals`)."""
        W, s = float(total_weight), self.sums
        out = {"split": s["split"] / W, "merge": s["merge"] / W, "stable": s["stable"] / W, "self": s["self_"] / W}
        out["intersection+"] = max(s["within_up"], 0.0) / W
        out["intersection-"] = max(s["within_down"], 0.0) / W
        out["intersection"] = out["intersection+"] + out["intersection-"]
        out["all"] = out["split"] + out["merge"] + out["stable"]
        out["agreed"] = 0.0  # the agreed stratum (pairs together in both) is no part of ΔPrecision
        return out

    def pair_counts(self) -> dict:
        """Distinct pairs per stratum (see :func:`abcde.sampling.pairs.pair_counts`)."""
        s = self.sums
        out = {"split": s["n_split"] // 2, "merge": s["n_merge"] // 2, "intersection+": s["n_up"] // 2,
               "intersection-": s["n_down"] // 2, "agreed": s["n_agreed"] // 2}
        out["intersection"] = out["intersection+"] + out["intersection-"]
        return out

    def link_masses(self, total_weight: float) -> dict:
        """The recall lift's pair masses (see :func:`abcde.metrics.impact.link_masses`)."""
        W2, s = float(total_weight) ** 2, self.sums
        return {c: max(s[k], 0.0) / W2 for c, k in (
            ("both", "m_both"), ("agreed", "m_agreed"), ("intersection+", "m_up"), ("intersection-", "m_down"),
            ("split", "m_split"), ("merge", "m_merge"))}

    def self_term(self, total_weight: float) -> float:
        """``Σ_i u_ii · l_ii`` (see :func:`abcde.sampling.stratified.self_term`)."""
        return self.sums["self_signed"] / float(total_weight)


_FLOATS = ("split", "merge", "stable", "self_", "self_signed", "within_up", "within_down", "m_both", "m_agreed",
           "m_up", "m_down", "m_split", "m_merge")
_COUNTS = ("n_split", "n_merge", "n_up", "n_down", "n_agreed")


def cell_sums(diff: Diff) -> CellSums:
    """Every per-cell sum a pair sample needs (module docstring) in one aggregate over the fragments;
    once per diff."""
    if diff.cache.cell_sums is not None:
        return diff.cache.cell_sums
    f = diff.fragments
    aff = affected(f)
    up, down = aff & (f.wb > f.we), aff & (f.wb < f.we)
    agreed = agreed_cells(f)
    within = f.w * f.w - f.w2
    # The non-self stable pairs of a cell weigh |W(B) − W(E)|·(W(F)² − Σ_F w²)/(W(B)·W(E)): taken
    # directly, not as stable − self, whose rounding residue (it varies with the engine's summation
    # order) would give a stratum without pairs a weight (e.g. every item alone in Base).
    stable_within = stable_pair_weight(f, None, within)
    n = f.n.cast("int64")
    pairs_within = n * (n - 1)
    r = diff.engine.one(f.aggregate(
        split=split_pair_weight(f, f.w).sum(),
        merge=merge_pair_weight(f, f.w).sum(),
        stable=stable_pair_weight(f, f.w, f.w).sum(),
        self_=stable_pair_weight(f, None, f.w2).sum(),
        self_signed=stable_pair_weight(f, None, f.w2, signed=True).sum(),
        within_up=stable_within.sum(where=up),
        within_down=stable_within.sum(where=down),
        m_both=within.sum(where=f.n > 1),
        m_agreed=within.sum(where=agreed),
        m_up=within.sum(where=(f.n > 1) & up),
        m_down=within.sum(where=(f.n > 1) & down),
        m_split=(f.w * (f.wb - f.w)).sum(where=f.n < f.nb),
        m_merge=(f.w * (f.we - f.w)).sum(where=f.n < f.ne),
        n_split=(n * (f.nb.cast("int64") - n)).sum(),
        n_merge=(n * (f.ne.cast("int64") - n)).sum(),
        n_up=pairs_within.sum(where=up),
        n_down=pairs_within.sum(where=down),
        n_agreed=pairs_within.sum(where=agreed),
    ), step="cell sums")
    sums = {k: float(r[k] or 0.0) for k in _FLOATS}
    sums.update({k: int(r[k] or 0) for k in _COUNTS})
    out = CellSums(sums)
    diff.cache.cell_sums = out
    return out


@dataclass(frozen=True)
class AgreedGroups:
    """The groups holding agreed cells (ascending) and their agreed masses ``Σ (W(F)² − Σ_F w²)``."""

    groups: np.ndarray
    mass: np.ndarray


#: A cell's ``W(F)² − Σ_F w²`` below this share of ``W(F)²`` is lost to rounding (its relative error,
#: about 1e-16·W(F)²/(W(F)² − Σ_F w²), would pass 1e-6): its pairs cannot be drawn in proportion.
LOST_SHARE = 1e-10


def agreed_groups(diff: Diff) -> AgreedGroups:
    """The agreed cells' masses summed per :func:`cell_group` (one group-by), the first stage of the
    agreed stratum's draws (:mod:`abcde.sampling.agreed`); once per diff.

    Raises
    ------
    InputError
        When an agreed cell's pair mass ``W(F)² − Σ_F w²`` is lost to rounding (:data:`LOST_SHARE`):
        its items' weights span too wide a range; the message names the cell."""
    if diff.cache.agreed_groups is None:
        f = diff.fragments
        f = f.filter(agreed_cells(f))
        f = f.mutate(_g=cell_group(f), _m=f.w * f.w - f.w2)
        lost = f._m <= LOST_SHARE * f.w * f.w
        t = f.group_by("_g").aggregate(m=f._m.sum(), lost=lost.sum())
        rows = diff.engine.to_arrow(t.order_by("_g"), step="agreed cells by group")
        if any(rows.column("lost").to_pylist()):
            r = diff.engine.one(f.filter(lost).select("base_cluster", "exp_cluster", "n", "w").limit(1),
                                step="an agreed cell of lost mass")
            raise InputError(
                f"The {r['n']:,} items together in Base cluster {r['base_cluster']!r} and Exp cluster "
                f"{r['exp_cluster']!r} weigh {r['w']:.6g} in all, nearly all of it one item's: the weight of their "
                "pairs (w_i·w_j) is lost to rounding against it, so they cannot be drawn in proportion. Make the "
                "item weights less extreme (within a factor of about 10^10 of each other inside one cluster).")
        keep = rows.filter(pc.greater(rows.column("m"), 0.0))
        diff.cache.agreed_groups = AgreedGroups(np.asarray(keep.column("_g").to_numpy(), dtype=np.int64),
                                                np.asarray(keep.column("m").to_numpy(zero_copy_only=False), dtype=float))
    return diff.cache.agreed_groups


__all__ = ["GROUPS", "LOST_SHARE", "AgreedGroups", "CellSums", "agreed_cells", "agreed_groups", "cell_group", "cell_sums"]
