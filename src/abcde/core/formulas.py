"""The paper's formulas, each written once.

Every exact quantity follows from the fragment table (:mod:`abcde.core.diff`): per
fragment ``F = B ∩ E`` its items ``n`` and weight ``w`` (and ``w2 = Σ weight²``), and its
Base and Exp clusters' items and weights ``nb, wb, ne, we``. Paper, sections "ABCDE impact
metrics" and "ABCDE quality metrics"::

    SplitRate(i)       = (W(B) − W(F)) / W(B)                       0 when F = B
    MergeRate(i)       = (W(E) − W(F)) / W(E)                       0 when F = E
    JaccardDistance(i) = (W(B) − W(F) + W(E) − W(F)) / (W(B) + W(E) − W(F))
    SplitDistance(i)   = (W(B) − W(F)) / W(U)                        0 when F = B
    MergeDistance(i)   = (W(E) − W(F)) / W(U)                        0 when F = E

with ``W(U) = W(B ∪ E) = W(B) + W(E) − W(F)``: JaccardDistance = SplitDistance + MergeDistance
(the decomposition of van Staden, "Decomposing the Jaccard Distance and the Jaccard Index in
ABCDE", 2024). A split pair of ``i`` counts ``W(B)/W(U)`` times as much in SplitDistance as in
SplitRate, a merge pair ``W(E)/W(U)`` times as much in MergeDistance as in MergeRate
(:func:`distance_shares`).

The pair weights ``u_ij`` (times ``weight(T)``) of a vantage item ``i`` in ``F``::

    split  (j ∈ Base(i) \\ Exp(i)):   Σ_j u_ij = w_i · (W(B) − W(F)) / W(B)  = w_i · SplitRate(i)
    merge  (j ∈ Exp(i) \\ Base(i)):   Σ_j u_ij = w_i · (W(E) − W(F)) / W(E)  = w_i · MergeRate(i)
    stable (j ∈ Base(i) ∩ Exp(i)):   u_ij = w_i · |W(B) − W(E)| · w_j / (W(B) · W(E)),
                                     label l_ij = sgn(W(B) − W(E))

The self pair ``j = i`` is a stable pair; the *self term* ``Σ_i u_ii · l_ii`` is exact.
These functions take an Ibis table with the fragment columns and return Ibis values, so
metrics, samplers and estimators on every engine use the same arithmetic (the same
floating-point operations in the same order: samples drawn from these weights are the
same on every engine).
"""

from __future__ import annotations


import ibis


def _times(w, x):
    """``w · x``, or ``x`` when ``w`` is None (so ``w = 1`` adds no rounding step)."""
    return x if w is None else w * x


def split_pair_weight(f, w_i=None) -> ibis.Value:
    """``w_i · (W(B) − W(F)) / W(B)``; exactly 0 when the fragment is its whole Base cluster.
    Without ``w_i``: SplitRate of the fragment's items."""
    return ibis.ifelse(f.n == f.nb, 0.0, _times(w_i, f.wb - f.w) / f.wb)


def merge_pair_weight(f, w_i=None) -> ibis.Value:
    """``w_i · (W(E) − W(F)) / W(E)``; exactly 0 when the fragment is its whole Exp cluster.
    Without ``w_i``: MergeRate of the fragment's items."""
    return ibis.ifelse(f.n == f.ne, 0.0, _times(w_i, f.we - f.w) / f.we)


def stable_pair_weight(f, w_i, w_j, *, signed: bool = False) -> ibis.Value:
    """``w_i · |W(B) − W(E)| · w_j / (W(B) · W(E))``: the weight of stable pairs with vantage
    weight ``w_i`` and partner weight ``w_j`` (``signed``: times the label ``sgn(W(B) − W(E))``,
    i.e. without the absolute value). ``w_i=None`` multiplies by nothing."""
    d = f.wb - f.we
    return _times(w_i, d if signed else d.abs()) * w_j / (f.wb * f.we)


def stable_label(f) -> ibis.Value:
    """``l_ij = sgn(W(B) − W(E))`` of a stable pair (its sign in ΔPrecision)."""
    d = f.wb - f.we
    return ibis.ifelse(d > 0, 1, ibis.ifelse(d < 0, -1, 0))


def union_weight(f) -> ibis.Value:
    """``W(B ∪ E) = W(B) + W(E) − W(F)``: the weight of the union of a fragment's two clusters."""
    return f.wb + f.we - f.w


def split_distance(f) -> ibis.Value:
    """``SplitDistance(i) = (W(B) − W(F)) / W(B ∪ E)``; exactly 0 when the fragment is its whole Base cluster."""
    return ibis.ifelse(f.n == f.nb, 0.0, (f.wb - f.w) / union_weight(f))


def merge_distance(f) -> ibis.Value:
    """``MergeDistance(i) = (W(E) − W(F)) / W(B ∪ E)``; exactly 0 when the fragment is its whole Exp cluster."""
    return ibis.ifelse(f.n == f.ne, 0.0, (f.we - f.w) / union_weight(f))


def distance_shares(f) -> dict:
    """``share_split = W(B)/W(B ∪ E)`` and ``share_merge = W(E)/W(B ∪ E)`` of a fragment's items:
    a split pair's ``u_ij`` times ``share_split`` is its weight in SplitDistance(T)
    (``Σ_{j ∈ B∖E} u_ij · W(B)/W(U) = w_i/W · SplitDistance(i)``), a merge pair's times
    ``share_merge`` its weight in MergeDistance(T). Both in (0, 1]."""
    u = union_weight(f)
    return {"share_split": f.wb / u, "share_merge": f.we / u}


def affected(f) -> ibis.Value:
    """``Base(i) ≠ Exp(i)``, decided on item counts so it is exact."""
    return (f.n < f.nb) | (f.n < f.ne)


def fragment_metrics(f: ibis.Table) -> ibis.Table:
    """Add the per-item metrics shared by the items of each fragment.

    ``split_rate``, ``merge_rate``, ``jaccard_distance`` (paper eqs. 1-3), its parts
    ``split_distance`` and ``merge_distance``, and ``affected`` (``Base(i) != Exp(i)``, decided on
    item counts so it is exact). A metric is exactly 0 when its set difference is empty.
    """
    aff = affected(f)
    jd = ibis.ifelse(aff, (f.wb - f.w + f.we - f.w) / (f.wb + f.we - f.w), 0.0)
    return f.mutate(split_rate=split_pair_weight(f), merge_rate=merge_pair_weight(f), jaccard_distance=jd,
                    split_distance=split_distance(f), merge_distance=merge_distance(f), affected=aff)
