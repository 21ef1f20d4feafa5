"""The recall lift: how many more (or fewer) true links Exp keeps than Base, from judged pairs (issue 38).

Definitions
-----------
For a clustering ``C``, the weight of the true links it keeps::

    T_C = Σ over ordered pairs i ≠ j with C(i) = C(j) and i ≡ j (the same entity) of w_i·w_j

and the recall lift::

    Λ = T_Exp / T_Base − 1

read "Exp keeps x% more (fewer) true links than Base". ``T_C / T_truth`` is C's pairwise recall, so
Λ is the ratio of the two pairwise recalls minus 1: the unknown total of true links ``T_truth``
cancels (after van Staden, "More Clustering Quality Metrics for ABCDE", 2024, which characterises
ΔRecall).

The pairs together in either clustering fall into three strata: **agreed** (together in both, ``j ∈
F(i)∖{i}`` with ``F = B ∩ E`` the fragment), **split** (together in Base only, ``j ∈ B∖E``) and
**merge** (together in Exp only, ``j ∈ E∖B``). Each has an exact pair mass ``M_s = Σ w_i·w_j``
(:func:`abcde.sampling.pairs.link_masses`, from the fragments, never a pair list), and
``T_s = M_s·p_s`` with ``p_s`` the share of same-entity pairs among pairs drawn ∝ ``w_i·w_j`` in
``s``. So::

    T_Base = T_agreed + T_split,   T_Exp = T_agreed + T_merge
    Λ      = (T_merge − T_split) / (T_agreed + T_split)

Estimation
----------
The agreed stratum is drawn ∝ ``w_i·w_j`` (:func:`abcde.sampling.pairs.agreed_population`). The split
and merge strata, drawn for ΔPrecision ∝ ``u_ij = w_i·w_j/(W·W(B(i)))`` (merge: ``W(E(i))``), stand for
draws ∝ ``w_i·w_j`` once each draw is reweighted by ``r = W(B(i))`` (merge: ``W(E(i))``), known exactly
(stored in the sample at the draw): the ratio form of :mod:`abcde.quality.distances`::

    p̂_s = Σ_k r_k·g_k / Σ_k r_k      (k: the judged draws of s, g = 1(i ≡ j); r = 1 for agreed)
    Var(p̂_s) = n/(n − 1) · Σ_k r_k²(g_k − p̂_s)² / (Σ_k r_k)²
    T̂_s = M_s·p̂_s

A stratum listed whole (a census) adds its judged pairs exactly (pairs left unsure are taken to be
like the judged ones, as ΔPrecision's census does). The strata are sampled independently, so the
delta method gives::

    Var(Λ̂) = (Var(T̂_merge) + (1 + Λ̂)²·Var(T̂_split) + Λ̂²·Var(T̂_agreed)) / (T̂_agreed + T̂_split)²

The interval is built on ``log(1 + Λ)`` (the log of a ratio of two positive totals; its delta-method
SE is ``SE(Λ̂)/(1 + Λ̂)``), so it never leaves ``(−1, ∞)``, then cut to the feasible range (each ``T_s``
anywhere in ``[0, M_s]``, a census stratum in its judged part plus ``[0, what is left]``). When every
judgement of a stratum agrees its variance is 0; the interval then uses Agresti–Coull's variance
``p̃(1 − p̃)/(n* + 4)`` (``p̃ = (n*·p̂ + 2)/(n* + 4)``, ``n*`` the effective number of judgements) as that
stratum's floor, so it keeps a width; the estimate is always inside it. The quantile is Student t on
the judged draws − 1 degrees of freedom. Every pair of every stratum listed and judged: Λ is exact.

Slices (vantage item in I): ``T_s(I) = M_s(I)·p̂_s(I)`` with ``M_s(I)`` the exact mass of the pairs whose
first item is in I and ``p̂_s(I)`` the domain ratio over the judged draws whose vantage item is in I;
``Λ(I) = (T_merge(I) − T_split(I)) / (T_agreed(I) + T_split(I))``.

People and models: with people's tasks (``--human-budget``) the lift uses the people's judgements of
their tasks alone, each stratum's tasks a random subset of its draws; when the tasks were chosen by
a model's answers, weighted by cell as :mod:`abcde.quality.distances` does. The model's judgements
are not used for the lift.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

import ibis
import numpy as np
import pyarrow as pa

from abcde.core.diff import Diff, affected_items
from abcde.errors import InputError
from abcde.quality.distances import DistanceFacts, _cell_ratio, _judged, _ratio
from abcde.quality.result import Estimate, quantile
from abcde.quality.stratified import _census_total
from abcde.metrics.impact import link_masses

#: The recall lift's strata, and the stratum each stands for in a sample.
RECALL_STRATA = ("agreed", "split", "merge")


@dataclass(frozen=True)
class RecallFacts:
    """What the recall lift needs besides the judgements, all exact.

    Attributes
    ----------
    masses
        ``{agreed, split, merge}``: each stratum's pair mass ``Σ w_i·w_j / W²``.
    cluster_weights
        ``{item id: (W(B)/W, W(E)/W)}`` of the items of the split and merge pairs drawn.
    slices
        ``{column: {JSON-encoded value: (M_agreed(I), M_split(I), M_merge(I))}}``, vantage items in I.
    """

    masses: dict
    cluster_weights: dict
    slices: dict = field(default_factory=dict)


def recall_facts(diff: Diff, item_ids, *, slice_by=(), total_weight: float) -> RecallFacts:
    """The recall lift's exact facts from the diff a sample is drawn from: the pair masses, the
    cluster weights of ``item_ids`` (affected items: those of split and merge draws) and, per value
    of each ``slice_by`` column, its vantage items' masses (one group-by of the items joined to their
    fragments per column)."""
    W = float(total_weight)
    masses = link_masses(diff, W)
    ids = list(dict.fromkeys(item_ids))
    cw: dict = {}
    if ids:
        id_type = diff.joined.item_id.type().to_pyarrow()
        wanted = ibis.memtable(pa.table({"item_id": pa.array(ids).cast(id_type)}))
        f = diff.fragments
        t = wanted.join(affected_items(diff), "item_id")
        t = t.join(f, [t.base_cluster == f.base_cluster, t.exp_cluster == f.exp_cluster])
        rows = diff.engine.rows(t.select(t.item_id, wb=f.wb, we=f.we), step="cluster weights of the drawn items")
        cw = {r["item_id"]: (float(r["wb"]) / W, float(r["we"]) / W) for r in rows}
    slices: dict = {}
    if slice_by:
        f = diff.fragments
        j = diff.joined
        t = j.join(f, [j.base_cluster == f.base_cluster, j.exp_cluster == f.exp_cluster])
        per = t.select(__abcde_id=j.item_id, __abcde_a=j.weight * (f.w - j.weight),
                       __abcde_s=j.weight * (f.wb - f.w), __abcde_m=j.weight * (f.we - f.w))
        for col in slice_by:
            a = diff.items.select("item_id", col)
            g = per.join(a, per["__abcde_id"] == a.item_id)
            rows = diff.engine.rows(g.group_by(col).aggregate(
                __abcde_ma=g["__abcde_a"].sum(), __abcde_ms=g["__abcde_s"].sum(), __abcde_mm=g["__abcde_m"].sum()),
                step=f"slice pair masses {col}")
            slices[col] = {json.dumps(r[col], default=str): tuple(max(float(r[k] or 0.0), 0.0) / (W * W) for k in (
                "__abcde_ma", "__abcde_ms", "__abcde_mm")) for r in rows}
    return RecallFacts(masses, cw, slices)


def recall_record(facts: RecallFacts) -> dict:
    """``facts`` as a pair sample's metadata keeps them (``meta["recall"]``, plain JSON)."""
    return {"masses": {k: float(v) for k, v in facts.masses.items()},
            "cluster_weights": {str(i): [float(b), float(e)] for i, (b, e) in facts.cluster_weights.items()},
            "slices": {c: {v: [float(x) for x in t] for v, t in vals.items()} for c, vals in facts.slices.items()}}


def stored_recall(meta: dict) -> RecallFacts | None:
    """The facts a sample stored at the draw (:func:`recall_record`); None when it has none (drawn
    before the recall lift, or without the agreed stratum)."""
    rec = meta.get("recall")
    if not isinstance(rec, dict) or "masses" not in rec:
        return None
    as_id = int if meta.get("id_type") == "integer" else str
    cw = {as_id(k): (float(v[0]), float(v[1])) for k, v in (rec.get("cluster_weights") or {}).items()}
    slices = {c: {v: tuple(float(x) for x in t) for v, t in vals.items()} for c, vals in (rec.get("slices") or {}).items()}
    return RecallFacts({k: float(v) for k, v in rec["masses"].items()}, cw, slices)


class _Ones(dict):
    """Every item's "share" 1: the agreed stratum is drawn ∝ w_i·w_j already (no reweighting)."""

    def get(self, key, default=None):
        return (1.0, 1.0)


# ----------------------------------------------------------------------------- one stratum
@dataclass(frozen=True)
class _Part:
    """One stratum's ``T̂_s`` (÷ W²), its variance, the interval's variance (floored when nothing
    varies), its feasible range, the judged draws it rests on, whether it is exact, and why it is
    not defined (``note``)."""

    total: float
    var: float
    ivar: float
    lo: float
    hi: float
    n: int
    exact: bool
    note: str = ""


def _sampled_part(mass: float, j, mask=None) -> _Part:
    """A sampled stratum's part from its judged draws ``j`` (a ``distances._Judged``), over the
    domain ``mask`` (vantage items in a slice; default all)."""
    if mass <= 0:
        return _Part(0.0, 0.0, 0.0, 0.0, 0.0, 0, True)
    note = ""
    if j.cell is not None:
        p, var, n_eff, n, note = _cell_ratio(j, mask)
    elif len(j.same):
        p, var, n_eff, n = _ratio(j.same, j.r, mask)
    else:
        p, var, n_eff, n = math.nan, math.nan, math.nan, 0
    if n == 0 or not math.isfinite(p):
        return _Part(math.nan, math.nan, math.nan, 0.0, mass, 0, False, note or "no usable judgement yet")
    pt = (n_eff * p + 2.0) / (n_eff + 4.0)
    floor = pt * (1.0 - pt) / (n_eff + 4.0)
    v = var if math.isfinite(var) else math.nan
    extra = _cells_floor(j, mask) if j.cell is not None else 0.0
    if math.isfinite(v) and extra > 0:  # by cell: the cells that vary measured, the others Jeffreys'
        iv = v + extra
    elif math.isfinite(v) and v > 0:
        iv = v
    else:  # every judgement agrees (variance 0), or one: Agresti–Coull's variance of the stratum's share
        iv = floor
    return _Part(mass * p, mass * mass * v, mass * mass * iv, 0.0, mass, n, False)


def _cells_floor(j, mask=None) -> float:
    """What the cells whose judgements all agree add to the variance of a share estimated cell by
    cell (people's draws chosen by a model's answers; ``distances._cell_ratio``'s two phases). Such a
    cell has no spread to measure, so its spread is taken as Jeffreys' ``s̃² = p̃(1 − p̃)``, ``p̃ = (k +
    ½)/(n_c + 1)``, in both phases: ``W_c·s̃²/N + W_c²·(1 − n_c/N_c)·s̃²/n_c`` (``W_c = N_c/N``), over the
    mean share weight squared. Measured on 300 samples of a world with a model that says "same" too
    often: the agreed stratum's 95% intervals covered 87% without it, 94% with it."""
    N = float(sum(j.sizes.values()))
    if not N:
        return 0.0
    dm = np.ones(len(j.same), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    total = 0.0
    for c, Nc in j.sizes.items():
        m = (j.cell == c) & dm
        nc = int(m.sum())
        k = float(j.same[m].sum())
        if Nc and 0 < nc < Nc and k in (0.0, float(nc)):
            pt = (k + 0.5) / (nc + 1.0)
            s2 = pt * (1.0 - pt)
            W = Nc / N
            total += W * s2 / N + W * W * (1.0 - nc / Nc) * s2 / nc
    r = j.r[dm] if dm.any() else j.r
    scale = float(np.mean(r)) if len(r) else 1.0
    return total / (scale * scale) if scale > 0 else total


def _census_part(draws: pa.Table, by_pair: dict, factor, inside=None) -> _Part:
    """A census stratum's part: each pair {a, b} listed once, weighing ``pair_weight·factor(a)``
    (its ``2·w_a·w_b/W²``), judged pairs exactly, pairs left unsure or not judged like the judged
    ones; ``inside``: the slice (each end in it adds half)."""
    if not draws.num_rows:
        return _Part(0.0, 0.0, 0.0, 0.0, 0.0, 0, True)
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    a, b = draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist()
    f = np.array([factor(x) for x in a], dtype=float)
    half = np.array([1.0 if inside is None else (inside(x) + inside(y)) / 2.0 for x, y in zip(a, b)], dtype=float)
    w = pw * f * half
    keep = w > 0
    if not keep.any():
        return _Part(0.0, 0.0, 0.0, 0.0, 0.0, 0, True)
    d = draws.filter(pa.array(keep, pa.bool_()))
    d = d.set_column(d.column_names.index("pair_weight"), "pair_weight", pa.array(w[keep], pa.float64()))
    t, v, n, known, rest = _census_total(d, by_pair, lambda lab, s, x, y: s)
    if not math.isfinite(t):
        return _Part(math.nan, math.nan, math.nan, known, known + rest, 0, False, "no usable judgement yet")
    return _Part(t, v, v, known, known + rest, n, rest == 0.0)


# ----------------------------------------------------------------------------- the lift
def lift_estimate(parts: dict, *, method: str, name: str = "recall_lift") -> tuple[Estimate, bool]:
    """Λ̂ from the three strata's parts (``{agreed, split, merge}``), its delta-method SE and the
    interval of the module's docstring; and whether it is exact."""
    a, s, m = parts["agreed"], parts["split"], parts["merge"]
    if s.exact and m.exact and s.hi == 0 and m.hi == 0:  # nothing split or merged: the same true links
        return Estimate(name, 0.0, 0.0, 0, method=method, bounds=(0.0, 0.0), centre=0.0, interval_se=0.0,
                        note="nothing was split or merged: Exp keeps exactly Base's links", exact=True), True
    bounds = _bounds(parts)
    missing = [k for k in RECALL_STRATA if not math.isfinite(parts[k].total)]
    n = sum(p.n for p in parts.values())
    if missing:
        why = "; ".join(f"{k}: {parts[k].note}" for k in missing)
        return Estimate(name, math.nan, math.nan, 0, method=method, bounds=bounds,
                        note=f"no usable judgement yet in the {', '.join(missing)} "
                             f"{'strata' if len(missing) > 1 else 'stratum'} ({why})"), False
    den = a.total + s.total
    if not den > 0:
        return Estimate(name, math.nan, math.nan, n, method=method, bounds=bounds,
                        note="no true link in Base among the judged pairs: the lift is a ratio to Base's true "
                             "links, 0 so far"), False
    lam = (m.total - s.total) / den

    def var(attr):
        return (getattr(m, attr) + (1.0 + lam) ** 2 * getattr(s, attr) + lam * lam * getattr(a, attr)) / (den * den)

    v, iv = var("var"), var("ivar")
    exact = all(p.exact for p in parts.values())
    se = math.sqrt(v) if math.isfinite(v) else math.nan
    if exact:
        return Estimate(name, lam, 0.0, n, method=method, bounds=(lam, lam), centre=lam, interval_se=0.0,
                        exact=True), True
    ise = math.sqrt(iv) if math.isfinite(iv) else math.nan
    return Estimate(name, lam, se, n, method=method, bounds=bounds, interval_se=ise, log_scale=True), False


def _bounds(parts: dict) -> tuple[float, float]:
    """The feasible range of Λ: its extremes over the corners of the strata's ranges (Λ is monotone
    in each total given the others); at least −1 (Exp keeps no true link), at most +∞."""
    vals = []
    for ta, ts, tm in itertools.product(*[(parts[k].lo, parts[k].hi) for k in RECALL_STRATA]):
        den = ta + ts
        if den > 0:
            vals.append((tm - ts) / den)
        elif tm > 0:
            vals.append(math.inf)
    if not vals:
        return (-1.0, math.inf)
    return (max(min(vals), -1.0), max(vals))


def _parts_of(sample, by_pair: dict, facts: RecallFacts, *, cells=None, inside=None, masses=None,
              judged=None) -> dict:
    """The three strata's parts of a stratified sample (``sample.draws[c]``, ``sample.census``)."""
    masses = facts.masses if masses is None else masses
    cw = DistanceFacts(0.0, 0.0, facts.cluster_weights)
    out = {}
    for kind in RECALL_STRATA:
        draws = sample.draws.get(kind)
        mass = float(masses.get(kind, 0.0))
        if draws is None or mass <= 0:
            out[kind] = _Part(0.0, 0.0, 0.0, 0.0, 0.0, 0, mass <= 0) if mass <= 0 or draws is not None else \
                _Part(math.nan, math.nan, math.nan, 0.0, mass, 0, False, "not drawn")
            continue
        if kind in sample.census:
            col = 0 if kind == "split" else 1

            def factor(x, col=col, kind=kind):
                if kind == "agreed":
                    return 1.0
                got = facts.cluster_weights.get(x)
                if got is None:
                    raise InputError(f"Item {x!r} of the pair sample has no stored cluster weights: the sample's "
                                     "metadata is not the one it was drawn with.")
                return got[col]

            out[kind] = _census_part(draws, by_pair, factor, inside)
            continue
        j = judged[kind] if judged else _judged(draws, by_pair, DistanceFacts(0.0, 0.0, _Ones()) if kind == "agreed" else cw, kind,
                                                 cells=cells)
        mask = None if inside is None else np.array([bool(inside(v)) for v in j.vantage], dtype=bool)
        if mask is not None and len(j.same) and not mask.any():
            out[kind] = _Part(math.nan, math.nan, math.nan, 0.0, mass, 0, False,
                              f"no judged {kind} pair has its vantage item in this slice")
            continue
        out[kind] = _sampled_part(mass, j, mask)
    return out


def estimate_recall_lift(sample, by_pair: dict, facts: RecallFacts, *, method: str, cells=None,
                         vantage_values: dict | None = None) -> tuple[Estimate, bool, dict]:
    """The recall lift of a stratified sample with an agreed stratum: ``(Λ̂, exact, slices)``, the
    slices ``{column: {JSON value: Λ̂(I) as a dict}}`` for ``vantage_values`` (``{column: {item id:
    JSON value}}``, the slices of ``facts.slices``). ``by_pair``: the judgements used (people's
    alone when a model judged too); ``cells``: the people's tasks were chosen by a model's answers."""
    cw = DistanceFacts(0.0, 0.0, facts.cluster_weights)
    judged = {k: _judged(sample.draws[k], by_pair, DistanceFacts(0.0, 0.0, _Ones()) if k == "agreed" else cw, k, cells=cells)
              for k in RECALL_STRATA if k in sample.draws and k not in sample.census}
    est, exact = lift_estimate(_parts_of(sample, by_pair, facts, cells=cells, judged=judged), method=method)
    slices: dict = {}
    for col, values in (vantage_values or {}).items():
        rows = {}
        for value, (ma, ms, mm) in facts.slices.get(col, {}).items():
            def inside(x, value=value):
                return values.get(x) == value

            parts = _parts_of(sample, by_pair, facts, cells=cells, inside=inside, judged=judged,
                              masses={"agreed": ma, "split": ms, "merge": mm})
            e, ex = lift_estimate(parts, method=method)
            rows[value] = {**e.to_dict(), "exact": ex}
        slices[col] = rows
    return est, exact, slices


__all__ = ["RECALL_STRATA", "RecallFacts", "estimate_recall_lift", "lift_estimate", "recall_facts", "recall_record",
           "stored_recall"]
