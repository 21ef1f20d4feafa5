"""JaccardDistance decomposed into good and bad parts, from the pairs already judged (issue 29).

After van Staden, "Decomposing the Jaccard Distance and the Jaccard Index in ABCDE" (2024): for an
item ``i`` with ``B = Base(i)``, ``E = Exp(i)``, ``U = B ∪ E`` and ``w`` the weight of a set::

    JaccardDistance(i)   = SplitDistance(i) + MergeDistance(i) = GoodDistance(i) + BadDistance(i)
    SplitDistance(i)     = w(B∖E)/w(U)                  MergeDistance(i)     = w(E∖B)/w(U)
    GoodSplitDistance(i) = Σ_{j∈B∖E} w_j·1(i ≢ j)/w(U)   BadSplitDistance(i) = Σ_{j∈B∖E} w_j·1(i ≡ j)/w(U)
    GoodMergeDistance(i) = Σ_{j∈E∖B} w_j·1(i ≡ j)/w(U)   BadMergeDistance(i) = Σ_{j∈E∖B} w_j·1(i ≢ j)/w(U)

each lifted to a set of items with the weights ``w_i/w(I)``, as the paper lifts its metrics. The
exact SplitDistance and MergeDistance need no judgement (:mod:`abcde.metrics.impact`).

Estimation from the pair sample that exists
-------------------------------------------
The split pairs of the sample are exactly the ``j ∈ B∖E`` of each drawn vantage item ``i``, drawn
∝ ``u_ij = w_i·w_j/(w(T)·w(B))`` within the split pairs (both designs: the stratified design's split
stratum, and the split draws of the paper's design, whose every draw is ∝ u_ij). With the item's
share ``r_i = w(B)/w(U) ∈ (0, 1]``, known exactly::

    GoodSplitDistance(T) = Σ_{split pairs} u_ij · r_i · 1(i ≢ j)
    SplitDistance(T)     = Σ_{split pairs} u_ij · r_i

so each judged split pair counts with the known factor ``r_i`` (merge pairs: ``w(E)/w(U)``). As
for the rates (GoodSplitRate = SplitRate · the judged share), the estimate is the exact total times
the judged share, here weighted by ``r`` (a ratio estimator)::

    p̂                     = Σ_k r_k·g_k / Σ_k r_k            (k: the judged split draws, g = 1(i ≢ j))
    GoodSplitDistance(T)  = SplitDistance(T) · p̂,   BadSplitDistance(T) = SplitDistance(T) · (1 − p̂)
    SE                    = SplitDistance(T) · sqrt(n/(n − 1) · Σ_k r_k²(g_k − p̂)²) / Σ_k r_k

(the linearised variance of a ratio of means; with every ``r_k`` equal it is the rates' ``s/√n``).
Good + Bad = SplitDistance exactly and both lie in [0, SplitDistance]. ``p̂`` is the ratio of two
unbiased means, so its bias is of order 1/n, far below its standard error (measured in
``tests/test_distances.py``). Unsure and missing judgements are dropped, as for the rates.

The interval is Agresti–Coull's for a proportion on the effective number of judgements
``n* = p̂(1 − p̂)/SE(p̂)²`` (Kish's ``(Σr)²/Σr²`` when every judgement agrees, so the interval has
width even then): centred on ``p̃ = (n*·p̂ + 2)/(n* + 4)``, half-width ``q·√(p̃(1 − p̃)/(n* + 4))``,
``q`` the Student t quantile on n − 1 degrees of freedom, times the exact total, then cut to
[0, total]. Good's and Bad's mirror each other. A stratum listed whole (a census) adds its judged
pairs exactly (each pair {a, b} is the ordered pairs (a, b) and (b, a): weight ``pair_weight·(r_a +
r_b)/2``) and estimates pairs left unsure from the judged ones, as the rates do.

GoodDistance = GoodSplitDistance + GoodMergeDistance: split and merge pairs are sampled
independently (their strata; in the paper's design, given the classes' counts), so the variances
add, and so do the interval's parts (widened to reach the estimate where the two shifts carry the
centre past the half-width: every estimate lies inside its interval).

Slices (vantage item in I): ``GoodSplitDistance(I) = SplitDistance(I) · p̂_I`` with ``p̂_I`` the
r-weighted share over the judged draws whose vantage item is in I (a domain ratio; its variance
``n/(n − 1) · Σ_{k∈I} r_k²(g_k − p̂_I)² / (Σ_{k∈I} r_k)²`` over all n judged draws of the stratum).
``SplitDistance(I)`` is exact.

People's tasks chosen by a model's answers
------------------------------------------
After ``abcde judge model`` on a sample drawn with ``--human-budget``, the people's draws of each
stratum (the paper's design: of each class) are a simple random sample of each *cell*'s draws, the
cells being the model's answers "same", "different" and none (:func:`abcde.samples.people_tasks.plan_by_answers`;
a stratum not split is one cell). Only the people's draws count (``Cells.selected``: the i-th draw of
a pair, in draw order, even when the pair has other draws), each with the expansion weight
``e_k = N_c/n_c`` of its cell ``c`` (its draws over its people's draws judged same or different)::

    p̂  = Σ_k e_k·r_k·g_k / Σ_k e_k·r_k            (the Hájek form: Σ_k e_k·(·)/N is the stratified mean)
    d_k = r_k·(g_k − p̂) / R̂,  R̂ = Σ_k e_k·r_k / N   (linearised; its stratified mean is 0)
    Var(p̂) = Σ_c W_c·(s_c²(d) + d̄_c²) / N  +  Σ_c W_c²·(1 − n_c/N_c)·s_c²(d)/n_c,   W_c = N_c/N

the first term the variance of the N draws (∝ u_ij, the stratum's first phase: its within-cell and
between-cell parts), the second the people's subsample of each cell (two-phase sampling for
stratification). With one cell and every draw the people's it is the estimator above, at 1e-12.
``n*``, the interval and the slices (``d_k = 0`` outside the slice) are as above; a cell with draws
and no usable people's judgement leaves the part undefined, and says which cell. A cell with one
people's draw among several has no spread of its own: its ``s_c²`` is the pooled within-cell variance
of the stratum's other cells (collapsed cells; undefined when no other cell has two draws). The model's own
judgements are not used: the cells only decide whose draws count how much, so the estimates stay
unbiased whatever the model (measured with an 80%-accurate model and one that says "same" too often
in ``tests/test_distances_by_answers.py``).

In a census stratum a cell is judged whole (as above, exactly) or its people's tasks are draws ∝
pair weight with replacement (``Cells.drawn``): its part is ``M_c·p̂_c`` with ``M_c`` the cell's exact
weight and ``p̂_c = Σ t·ρ·g / Σ t·ρ`` over its draws (``t`` times drawn, ``ρ = (r_a + r_b)/2``), a
ratio of Hansen–Hurwitz estimates, variance ``M_c²·k/(k − 1)·Σ t·ρ²(g − p̂_c)²/(Σ t·ρ)²``; the cells
add up. The interval is read off draws: each drawn cell's share from its modified Jeffreys posterior
on ``n*_c = p̂(1 − p̂)/Var(p̂)`` (its draws' Kish size when they all agree;
:func:`abcde.quality.result.share_draws`), the cells judged whole by a normal of their variance
(:func:`cells_deviation`), the ``Φ(∓q)`` quantiles of the total (:func:`cells_interval`). One
Agresti–Coull interval on the stratum's share, as before, took its width from the cells that vary:
a model-"same" cell whose people's draws all missed its few "different" pairs added none, and
GoodSplitDistance covered 78% (a model that says "same" too often, splits world 19), GoodMergeDistance
86% (both world 13); 96% and 97.7% now. GoodDistance and BadDistance then add their split and merge
parts' intervals by MOVER (:class:`MoverSum`).

Where the exact facts come from
-------------------------------
The exact values and the shares ``r_i`` of the drawn items (:func:`abcde.quality.exact_facts.distance_facts`) are stored in
the sample's metadata when it is drawn (``meta["distances"]``, :func:`abcde.samples.facts.facts_record`; ``pairs
--extend`` stores them again for the grown sample), so estimating never reads the inputs. A sample
drawn by an earlier abcde takes them from a diff of its inputs, or reads the recorded input files
again when their fingerprints are unchanged (:func:`abcde.quality.exact_facts.sample_facts`).
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from abcde.errors import InputError
from abcde.sampling.allocation import pair_class_of_draws
from abcde.samples.facts import KINDS, DistanceFacts
from abcde.quality.result import DistanceEstimates, DrawnInterval, Estimate, agresti_coull_of, share_draws
from abcde.quality.stratified import census_total

# ----------------------------------------------------------------------------- one part
def ratio_estimate(g: np.ndarray, r: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, float, float, int]:
    """The r-weighted share ``p̂`` of ``g`` over the draws in ``mask`` (default all), its linearised
    variance over all ``n`` draws, the effective number of judgements ``n*`` and the draws in ``mask``."""
    n = len(g)
    m = np.ones(n, dtype=bool) if mask is None else mask
    k = int(m.sum())
    if k == 0:
        return math.nan, math.nan, math.nan, 0
    rm = r[m]
    sr = float(rm.sum())
    p = float((rm * g[m]).sum() / sr)
    p = min(max(p, 0.0), 1.0)
    var = n / (n - 1) * float((rm * rm * (g[m] - p) ** 2).sum()) / (sr * sr) if n > 1 else math.nan
    if 0.0 < p < 1.0 and math.isfinite(var) and var > 0:
        n_eff = p * (1.0 - p) / var
    else:  # every judgement agrees (or one judgement): Kish's effective size of the weights
        n_eff = sr * sr / float((rm * rm).sum())
    return p, var, n_eff, k


def _part(name: str, total: float, p: float, var: float, n_eff: float, n: int, *, good_same: bool,
          want_good: bool, method: str, what: str, note: str = "") -> Estimate:
    """``total · share`` (Good: ``p̂``; Bad: ``1 − p̂``) with the interval of the module's docstring;
    ``note``: why ``p̂`` is not defined, when it is not."""
    if total == 0:
        return Estimate(name, 0.0, 0.0, n, method=method, note=f"no {what}s: the {what} distance is 0",
                        bounds=(0.0, 0.0))
    if n == 0 or not math.isfinite(p):
        return Estimate(name, math.nan, math.nan, 0, method=method, note=note or f"no judged {what} pairs",
                        bounds=(0.0, total))
    # p is the share judged "same" (g = 1(i ≡ j)); a good split is different, a good merge the same.
    share = p if good_same == want_good else 1.0 - p
    pt, ise = agresti_coull_of(n_eff * share, n_eff)
    se = total * math.sqrt(var) if math.isfinite(var) else math.nan
    return Estimate(name, total * share, se, n, method=method, bounds=(0.0, total), centre=total * pt,
                    interval_se=total * ise)


def _census_part(name: str, total: float, draws: pa.Table, by_pair: dict, weights: np.ndarray, *, good_same: bool,
                 want_good: bool, method: str, what: str) -> Estimate:
    """A census stratum's part: its pairs with weights ``weights`` (their SplitDistance weight),
    judged pairs exact, pairs left unsure estimated from the judged (as the rates' census)."""
    keep = weights > 0
    if total == 0 or not keep.any():
        return Estimate(name, 0.0, 0.0, 0, method=method, note=f"no {what}s: the {what} distance is 0",
                        bounds=(0.0, 0.0))
    idx = [k for k in range(len(weights)) if keep[k]]
    d = draws.take(pa.array(idx, pa.int64()))
    d = d.set_column(d.column_names.index("pair_weight"), "pair_weight", pa.array(weights[keep], pa.float64()))
    want_same = good_same == want_good
    t, v, n, known, rest, sp = census_total(d, by_pair, lambda lab, s, a, b: s if want_same else 1.0 - s)
    M = float(weights[keep].sum())
    bounds = (total * known / M, total * (known + rest) / M)
    if n == 0:
        return Estimate(name, math.nan, math.nan, 0, method=method, note=f"no judged {what} pairs", bounds=bounds)
    return Estimate(name, total * t / M, total * math.sqrt(v) / M, n, method=method, bounds=bounds,
                    span=_scaled_span(sp, total / M))


def _scaled_span(sp: tuple[float, float], scale: float) -> tuple[float, float] | None:
    """A census total's unsure span (:class:`abcde.quality.stratified.CensusTotal`) on the estimate's
    scale; None when no pair was answered unsure."""
    return (sp[0] * scale, sp[1] * scale) if sp[0] or sp[1] else None


@dataclass(frozen=True)
class CellsCensus:
    """A census stratum's total ``Σ weights·y`` when the people's tasks were chosen by the model's
    answers (:func:`census_cells_total`): ``total``, its ``var``, the judged draws ``n``, the
    feasible range ``[lo, hi]``, the stratum's weight ``M`` and the cells with no usable judgement;
    ``drawn``: each drawn cell's ``(M_c, p̂_c, Var(p̂_c), k_eff)`` (its people's draws a sample of it),
    and ``whole_var`` the variance of the cells judged whole (their unsure pairs)."""

    total: float
    var: float
    n: int
    lo: float
    hi: float
    M: float
    missing: tuple
    drawn: tuple = ()
    whole_var: float = 0.0
    span: tuple = (0.0, 0.0)  # how far its cells' pairs answered unsure could move the total (bounds)

    @property
    def exact(self) -> bool:
        """Every pair judged (every cell judged whole, nothing left): the total is known."""
        return not self.missing and self.var == 0.0 and self.lo == self.hi


def census_cells_total(draws: pa.Table, by_pair: dict, weights: np.ndarray, cells, *, want_same: bool = True,
                       ) -> CellsCensus:
    """``Σ weights·y`` over a census stratum's pairs (``y = 1(same)``, or ``1(different)`` when not
    ``want_same``), cell by cell of the model's answers: a cell judged whole as
    :func:`abcde.quality.stratified.census_total` (pairs left unsure estimated from its judged ones, the
    people's of that cell alone), a cell whose people's tasks are draws ∝ pair weight
    (``cells.drawn``) by the ratio ``M_c · Σ t·ρ·y / Σ t·ρ`` over its draws (``t``: times drawn,
    ``ρ = weights/pair_weight``, ``M_c = Σ weights`` over the cell, exact), variance
    ``M_c²·k/(k − 1)·Σ t·ρ²(y − p̂_c)²/(Σ t·ρ)²`` over its ``k`` draws; the cells add up. The cells'
    shares differ (the tasks were chosen by the model's answers), so the judged pairs of the stratum
    are not like the others until taken cell by cell."""
    keep = weights > 0
    pids = draws.column("pair_id").to_pylist()
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    of = np.asarray([cells.get(p, "") for p in pids], dtype=object)
    M = float(weights[keep].sum())
    t = var = lo = hi = whole = 0.0
    n, missing, parts, span = 0, [], [], (0.0, 0.0)
    for c in dict.fromkeys(of[keep].tolist()):
        m = keep & (of == c)
        Mc = float(weights[m].sum())
        idx = np.flatnonzero(m)
        if c in cells.drawn:
            times = cells.drawn[c]
            got = [(times[pids[k]], weights[k] / pw[k], 1.0 if by_pair[pids[k]] == "same" else 0.0)
                   for k in idx if times.get(pids[k]) and by_pair.get(pids[k]) in ("same", "different")]
            hi += Mc
            tk = np.array([x[0] for x in got], dtype=float)
            rho = np.array([x[1] for x in got], dtype=float)
            y = np.array([x[2] if want_same else 1.0 - x[2] for x in got], dtype=float)
            sr = float((tk * rho).sum())
            if not sr > 0:
                missing.append(c)
                continue
            p = float((tk * rho * y).sum()) / sr
            k = float(tk.sum())
            vp = k / (k - 1.0) * float((tk * (rho * (y - p)) ** 2).sum()) / (sr * sr) if k > 1 else math.nan
            k_eff = sr * sr / float((tk * rho * rho).sum())
            t += Mc * p
            var += Mc * Mc * vp
            n += len(got)
            parts.append((Mc, p, vp, k_eff))
            continue
        d = draws.take(pa.array(idx, pa.int64()))
        d = d.set_column(d.column_names.index("pair_weight"), "pair_weight", pa.array(weights[m], pa.float64()))
        mine = {p: by_pair[p] for p in d.column("pair_id").to_pylist() if p in by_pair and cells.selected(p, 0)}
        tc, vc, nc, known, rest, sp = census_total(d, mine, lambda lab, s, a, b: s if want_same else 1.0 - s)
        lo, hi = lo + known, hi + known + rest
        if not math.isfinite(tc):
            missing.append(c)
            continue
        t, var, n, whole = t + tc, var + vc, n + nc, whole + vc
        span = (span[0] + sp[0], span[1] + sp[1])
    return CellsCensus(t, var, n, lo, hi, M, tuple(missing), tuple(parts), whole, span)


def cells_deviation(rng: np.random.Generator, size: int, drawn: tuple, whole_var: float) -> np.ndarray:
    """``size`` draws of how far a census stratum's total by the model's cells (:class:`CellsCensus`)
    may lie from its estimate, from what its judgements say: each drawn cell's ``M_c·(P_c − p̂_c)``,
    ``P_c`` from its share's posterior (:func:`abcde.quality.result.share_draws`) on ``n*_c = p̂(1 −
    p̂)/Var(p̂)`` (its draws' Kish size ``k_eff`` when they all agree), plus a normal of the cells judged
    whole's variance ``whole_var``; the cells independently."""
    x = np.zeros(size)
    for mc, p, vp, k_eff in drawn:
        n = p * (1.0 - p) / vp if 0.0 < p < 1.0 and math.isfinite(vp) and vp > 0 else k_eff
        x += mc * (share_draws(rng, p, n, size) - p)
    if math.isfinite(whole_var) and whole_var > 0:
        x += rng.normal(0.0, math.sqrt(whole_var), size)
    return x


def cells_draws(value: float, scale: float, drawn: tuple, whole_var: float, bounds: tuple,
                rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` draws of ``value + scale·`` :func:`cells_deviation` (``scale·`` a census stratum's total by
    the model's cells), inside ``bounds``."""
    return np.clip(value + scale * cells_deviation(rng, size, drawn, whole_var), *bounds)


def cells_interval(value: float, scale: float, drawn: tuple, whole_var: float, bounds: tuple) -> DrawnInterval:
    """The interval of :func:`cells_draws`: their ``Φ(∓z)`` quantiles, holding ``value``."""
    return DrawnInterval(functools.partial(cells_draws, value, scale, drawn, whole_var, bounds), value)


def _census_cells_part(name: str, total: float, draws: pa.Table, by_pair: dict, weights: np.ndarray, cells, *,
                       good_same: bool, want_good: bool, method: str, what: str) -> Estimate:
    """A census stratum's part when the people's tasks were chosen by the model's answers
    (:func:`census_cells_total`). With a drawn cell the interval is read off draws of each drawn
    cell's share (:func:`cells_interval`); with every cell judged whole, Agresti–Coull's on the
    stratum's share ``Σ/M`` with ``n* = p̂(1 − p̂)/Var`` (its pairs left unsure), ``± q·SE`` when it
    is 0 or 1, exact when nothing is left."""
    if total == 0 or not (weights > 0).any():
        return Estimate(name, 0.0, 0.0, 0, method=method, note=f"no {what}s: the {what} distance is 0",
                        bounds=(0.0, 0.0))
    c = census_cells_total(draws, by_pair, weights, cells, want_same=good_same == want_good)
    t, var, n, lo, hi, M, missing = c.total, c.var, c.n, c.lo, c.hi, c.M, c.missing
    bounds = (total * lo / M, total * hi / M)
    if missing:
        return Estimate(name, math.nan, math.nan, n, method=method, bounds=bounds,
                        note=f"no usable people's judgement yet of a {what} pair in the cell "
                             f"{', '.join(missing)}")
    value, p = total * t / M, t / M
    se = total * math.sqrt(var) / M if math.isfinite(var) else math.nan
    span = _scaled_span(c.span, total / M)
    if c.drawn:
        return Estimate(name, value, se, n, method=method, bounds=bounds, span=span,
                        interval_of=cells_interval(value, total / M, c.drawn, c.whole_var, bounds))
    if math.isfinite(var) and var > 0 and 0.0 < p < 1.0:
        # Agresti–Coull's on the stratum's share, as a sampled stratum's (n* = p̂(1 − p̂)/Var(p̂))
        n_eff = p * (1.0 - p) * M * M / var
        pt, ise = agresti_coull_of(n_eff * p, n_eff)
        return Estimate(name, value, se, n, method=method, bounds=bounds, centre=total * pt,
                        interval_se=total * ise, span=span)
    return Estimate(name, value, se, n, method=method, bounds=bounds, span=span)


class MoverSum:
    """The interval of ``a + b``, two independent estimates, from theirs at the same quantile by MOVER
    (Zou & Donner 2008: the distances from each estimate to its interval's ends, added in
    quadrature); picklable."""

    def __init__(self, a: Estimate, b: Estimate):
        self.a, self.b = a, b

    def __call__(self, z: float) -> tuple[float, float]:
        (la, ha), (lb, hb) = self.a.interval_at(z, spanned=False), self.b.interval_at(z, spanned=False)
        va, vb = self.a.value, self.b.value
        return (va + vb - math.hypot(va - la, vb - lb), va + vb + math.hypot(ha - va, hb - vb))


def sum_estimate(name: str, a: Estimate, b: Estimate) -> Estimate:
    """``a + b`` of two independent estimates: variances add, and so do the interval's parts
    (centre and per-quantile half-width) and the feasible ranges. The parts' shifted centres add up
    while their half-widths add in quadrature: where that leaves the sum outside its interval, the
    interval is widened to reach it (:meth:`Estimate.confidence_interval`, issue 38). A part whose
    interval is its own (a census stratum by the model's cells): the two added by MOVER
    (:class:`MoverSum`)."""
    method = a.method if a.method == b.method else f"{a.method}; {b.method}"
    notes = "; ".join(e.note for e in (a, b) if e.note and not e.defined)
    bounds = (a.bounds[0] + b.bounds[0], a.bounds[1] + b.bounds[1]) if a.bounds and b.bounds else None
    if not (a.defined and b.defined):
        return Estimate(name, math.nan, math.nan, 0, method=method, note=notes or "a part is not known yet",
                        bounds=bounds)

    def centre(e):
        return e.centre if e.centre is not None else e.value

    def ise(e):
        return e.interval_se if e.interval_se is not None else e.standard_error

    se = math.sqrt(a.standard_error ** 2 + b.standard_error ** 2)
    # The unsure pairs' spans are bounds: they add as they are, not in quadrature.
    sa, sb = a.span or (0.0, 0.0), b.span or (0.0, 0.0)
    span = (sa[0] + sb[0], sa[1] + sb[1]) if (a.span or b.span) else None
    if a.interval_of is not None or b.interval_of is not None:  # a part's interval of its own: added by MOVER
        return Estimate(name, a.value + b.value, se, a.n_judgements + b.n_judgements, method=method,
                        bounds=bounds, interval_of=MoverSum(a, b), span=span)
    return Estimate(name, a.value + b.value, se, a.n_judgements + b.n_judgements, method=method, bounds=bounds,
                    centre=centre(a) + centre(b), interval_se=math.sqrt(ise(a) ** 2 + ise(b) ** 2), span=span)


# ----------------------------------------------------------------------------- judged draws
@dataclass(frozen=True)
class JudgedDraws:
    """The judged draws of one kind (split or merge): 1(i ≡ j), the vantage item's share r and the
    vantage items. By the model's answers (:func:`abcde.samples.people_tasks.people_cells`): the people's
    draws alone, each one's ``cell``, and ``sizes``, every cell's draws of the kind (judged or not)."""

    same: np.ndarray
    r: np.ndarray
    vantage: list
    cell: np.ndarray | None = None
    sizes: dict | None = None


def judged_draws(draws: pa.Table, by_pair: dict, facts: DistanceFacts, kind: str, mask=None, cells=None) -> JudgedDraws:
    col = 0 if kind == "split" else 1
    same, r, vantage, cell, sizes, seen = [], [], [], [], {}, {}
    shares: dict = {}  # each vantage item's share, looked up once
    if draws.num_rows:
        rows = zip(draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist())
        if mask is not None:
            rows = (row for row, inside in zip(rows, np.asarray(mask, dtype=bool).tolist()) if inside)
        judgement, share_of = by_pair.get, facts.shares.get
        for pid, a in rows:
            if cells is not None:
                # the pair's i-th draw in draw order (a pair's draws are all of one stratum and class)
                i = seen[pid] = seen.get(pid, -1) + 1
                c = cells.get(pid, kind)
                sizes[c] = sizes.get(c, 0) + 1
                if not cells.selected(pid, i):  # not one of the people's draws, even if the pair is
                    continue
            j = judgement(pid)
            if j not in ("same", "different"):
                continue
            same.append(1.0 if j == "same" else 0.0)
            x = shares.get(a)
            if x is None:
                got = share_of(a)
                x = shares[a] = got[col] if got is not None else _share(facts, a, col)  # (unknown: refused)
            r.append(x)
            vantage.append(a)
            if cells is not None:
                cell.append(c)
    return JudgedDraws(np.asarray(same, dtype=float), np.asarray(r, dtype=float), vantage,
                   None if cells is None else np.asarray(cell, dtype=object), None if cells is None else sizes)


def cell_ratio_estimate(j: JudgedDraws, mask: np.ndarray | None = None) -> tuple[float, float, float, int, str]:
    """``p̂`` of a stratum (or class) whose people's draws are a simple random sample of each cell's
    draws (the design by the model's answers), over the domain ``mask`` (default all): the Hájek
    form with the cells' expansion weights ``e_k = N_c/n_c``, its two-phase variance, ``n*`` and the
    draws in the domain (see the module's docstring); and why it is not defined, when it is not."""
    g, r, cell = j.same, j.r, j.cell
    n = len(g)
    dm = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    k = int(dm.sum())
    N = float(sum(j.sizes.values()))
    e = np.zeros(n)
    members = {}
    for c, Nc in j.sizes.items():
        m = cell == c
        nc = int(m.sum())
        if Nc and not nc:
            return math.nan, math.nan, math.nan, 0, f"no usable people's judgement yet in the cell {c}"
        e[m] = Nc / nc
        members[c] = (m, Nc, nc)
    if k == 0:
        return math.nan, math.nan, math.nan, 0, ""
    x = np.where(dm, r, 0.0)
    X = float((e * x).sum())
    p = float((e * x * g).sum()) / X
    p = min(max(p, 0.0), 1.0)
    d = x * (g - p) / (X / N)  # the linearised values: the stratified mean of d is 0 at p̂
    first = second = 0.0
    within = {c: float(d[m].var(ddof=1)) for c, (m, Nc, nc) in members.items() if nc > 1}
    dof = sum(members[c][2] - 1 for c in within)
    # a cell of one people's draw among several has no spread of its own: the stratum's other cells'
    # pooled within-cell variance stands for it (collapsed cells); none to pool: undefined
    pooled = sum((members[c][2] - 1) * v for c, v in within.items()) / dof if dof else math.nan
    for c, (m, Nc, nc) in members.items():
        dc = d[m]
        W = Nc / N
        if nc > 1:
            s2 = within[c]
        elif nc == Nc:  # a cell of one draw, judged: nothing varies
            s2 = 0.0
        else:
            s2 = pooled
        first += W * (s2 + float(dc.mean()) ** 2)
        if nc < Nc:
            second += W * W * (1.0 - nc / Nc) * s2 / nc
    var = first / N + second
    if 0.0 < p < 1.0 and math.isfinite(var) and var > 0:
        n_eff = p * (1.0 - p) / var
    else:  # every judgement agrees (or too few to vary): Kish's effective size of the weights e·r
        w = (e * x)[dm]
        n_eff = float(w.sum()) ** 2 / float((w * w).sum())
    return p, var, n_eff, k, ""


def _share(facts: DistanceFacts, item, col: int) -> float:
    got = facts.shares.get(item)
    if got is None:
        raise InputError(f"Item {item!r} of the pair sample is not an affected item of the inputs given for "
                         "its distances: they are not the inputs the sample was drawn from.")
    return got[col]


def _census_weights(draws: pa.Table, facts: DistanceFacts, kind: str, inside=None) -> np.ndarray:
    """Per pair {a, b} of a census stratum: ``pair_weight·(r_a·1(a ∈ I) + r_b·1(b ∈ I))/2``."""
    col = 0 if kind == "split" else 1
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    a, b = draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist()
    ra = np.array([_share(facts, x, col) * (1.0 if inside is None or inside(x) else 0.0) for x in a], dtype=float)
    rb = np.array([_share(facts, x, col) * (1.0 if inside is None or inside(x) else 0.0) for x in b], dtype=float)
    return pw * (ra + rb) / 2.0


def _parts(kind: str, total: float, judged: JudgedDraws | None, *, mask=None, census: tuple | None = None,
           method: str) -> tuple[Estimate, Estimate]:
    """Good and Bad of one kind: from sampled draws (``judged``, optionally a domain ``mask``; by
    cell when ``judged`` has cells), or from a census (``census = (draws, by_pair, weights, cells)``)."""
    dist, good_same = KINDS[kind]
    good_name, bad_name = f"good_{dist}", f"bad_{dist}"
    if census is not None:
        draws, by_pair, w, cells = census
        if cells is not None:
            return tuple(_census_cells_part(nm, total, draws, by_pair, w, cells, good_same=good_same, want_good=wg,
                                            method=method, what=kind) for nm, wg in ((good_name, True),
                                                                                      (bad_name, False)))
        return tuple(_census_part(nm, total, draws, by_pair, w, good_same=good_same, want_good=wg, method=method,
                                  what=kind) for nm, wg in ((good_name, True), (bad_name, False)))
    note = ""
    if judged.cell is not None:
        p, var, n_eff, n, note = cell_ratio_estimate(judged, mask)
    else:
        p, var, n_eff, n = ratio_estimate(judged.same, judged.r, mask) if len(judged.same) else (math.nan,) * 3 + (0,)
    return tuple(_part(nm, total, p, var, n_eff, n, good_same=good_same, want_good=wg, method=method, what=kind,
                       note=note) for nm, wg in ((good_name, True), (bad_name, False)))


def _result(split: tuple, merge: tuple, facts: DistanceFacts, method: str, slices: dict) -> DistanceEstimates:
    gs, bs = split
    gm, bm = merge
    return DistanceEstimates(facts.split_distance, facts.merge_distance, gs, bs, gm, bm,
                             sum_estimate("good_distance", gs, gm), sum_estimate("bad_distance", bs, bm),
                             method=method, source=facts.source, slices=slices)


# ----------------------------------------------------------------------------- the designs
def estimate_distances_stratified(sample, by_pair: dict, facts: DistanceFacts, *, method: str,
                                  vantage_values: dict | None = None, cells=None) -> DistanceEstimates:
    """The parts under the stratified design: from the split and merge strata (a census stratum
    exactly, see the module's docstring). ``vantage_values``: ``{column: {item id: JSON value}}``
    for the slices of ``facts.slices``. ``cells``: the people's tasks were chosen by a model's
    answers (:func:`abcde.samples.people_tasks.people_cells`): the people's draws alone, weighted by cell."""
    kinds = {}
    for kind, total in (("split", facts.split_distance), ("merge", facts.merge_distance)):
        draws = sample.draws.get(kind) if kind in sample.strata else None
        if draws is None:
            draws = pa.table({"pair_id": pa.array([], pa.string()), "item_a": pa.array([], pa.string())})
        census = kind in sample.census
        kinds[kind] = (draws, census, None if census else judged_draws(draws, by_pair, facts, kind, cells=cells))
    overall_parts = {k: _parts(k, t, kinds[k][2], census=(kinds[k][0], by_pair, _census_weights(kinds[k][0], facts, k),
                                                          cells) if kinds[k][1] else None, method=method)
                     for k, t in (("split", facts.split_distance), ("merge", facts.merge_distance))}
    slices = {}
    drawn = [a for d in (kinds["split"][0], kinds["merge"][0]) if d.num_rows for a in d.column("item_a").to_pylist()]
    for col, values in (vantage_values or {}).items():
        rows = []
        drawn_in = Counter(values.get(a) for a in drawn)  # the sampled draws of each slice
        judged_of = {k: [values.get(v) for v in kinds[k][2].vantage] for k in kinds if not kinds[k][1]}
        for value, (w_i, sd, md) in sorted(facts.slices.get(col, {}).items(), key=lambda kv: -kv[1][0]):
            def inside(x, value=value):
                return values.get(x) == value

            parts = {}
            for kind, total in (("split", sd), ("merge", md)):
                draws, census, judged = kinds[kind]
                if census:
                    parts[kind] = _parts(kind, total, None, census=(draws, by_pair, _census_weights(
                        draws, facts, kind, inside), cells), method=method)
                else:
                    m = np.array([v == value for v in judged_of[kind]], dtype=bool)
                    parts[kind] = _slice_parts(kind, total, judged, m, method)
            rows.append(_slice_row(value, w_i, sd, md, parts, drawn_in[value]))
        slices[col] = rows
    return _result(overall_parts["split"], overall_parts["merge"], facts, method, slices)


def _slice_parts(kind: str, total: float, judged: JudgedDraws, mask: np.ndarray, method: str) -> tuple:
    """A slice's Good and Bad of one kind (a domain of the judged draws); undefined with a note when
    no judged draw has its vantage item in the slice."""
    if total > 0 and len(judged.same) and not mask.any():
        dist = KINDS[kind][0]
        note = f"no judged {kind} pair has its vantage item in this slice"
        return tuple(Estimate(f"{g}_{dist}", math.nan, math.nan, 0, method=method, bounds=(0.0, total), note=note)
                     for g in ("good", "bad"))
    return _parts(kind, total, judged, mask=mask, method=method)


def _slice_row(value: str, w_i: float, sd: float, md: float, parts: dict, drawn: int) -> dict:
    gs, bs = parts["split"]
    gm, bm = parts["merge"]
    es = {"good_split_distance": gs, "bad_split_distance": bs, "good_merge_distance": gm, "bad_merge_distance": bm,
          "good_distance": sum_estimate("good_distance", gs, gm), "bad_distance": sum_estimate("bad_distance", bs, bm)}
    return {"value": json.loads(value), "weight": w_i, "sampled_draws": drawn, "split_distance": sd,
            "merge_distance": md, "jaccard_distance": sd + md, **{k: e.to_dict() for k, e in es.items()}}


def estimate_distances_paper(draws: pa.Table, by_pair: dict, facts: DistanceFacts, *, method: str,
                             vantage_values: dict | None = None, cells=None) -> DistanceEstimates:
    """The parts under the paper's design: from its split and merge draws (each ∝ u_ij within its
    class, see the module's docstring). ``cells``: as :func:`estimate_distances_stratified` (the
    cells are the classes' by the model's answer)."""
    cls = np.asarray(pair_class_of_draws(draws) if draws.num_rows else [], dtype=object)
    judged = {k: judged_draws(draws, by_pair, facts, k, mask=cls == k, cells=cells) for k in ("split", "merge")}
    parts = {k: _parts(k, t, judged[k], method=method)
             for k, t in (("split", facts.split_distance), ("merge", facts.merge_distance))}
    slices = {}
    vant = draws.column("item_a").to_pylist() if draws.num_rows else []
    vant = [v for v, c in zip(vant, cls.tolist()) if c in ("split", "merge")]  # the split and merge draws'
    for col, values in (vantage_values or {}).items():
        rows = []
        drawn_in = Counter(values.get(v) for v in vant)  # the sampled draws of each slice
        judged_of = {k: [values.get(v) for v in judged[k].vantage] for k in judged}
        for value, (w_i, sd, md) in sorted(facts.slices.get(col, {}).items(), key=lambda kv: -kv[1][0]):
            p = {}
            for kind, total in (("split", sd), ("merge", md)):
                m = np.array([v == value for v in judged_of[kind]], dtype=bool)
                p[kind] = _slice_parts(kind, total, judged[kind], m, method)
            rows.append(_slice_row(value, w_i, sd, md, p, drawn_in[value]))
        slices[col] = rows
    return _result(parts["split"], parts["merge"], facts, method, slices)


