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

The pairs together in either clustering fall into five strata, each pair in exactly one: those
together in both (``j ∈ F(i)∖{i}``, ``F = B ∩ E`` the fragment) are the **intersection±** strata's
when ``F`` is affected with ``W(B) ≠ W(E)`` (ΔPrecision samples them already) and the **agreed**
stratum's otherwise; **split** (together in Base only, ``j ∈ B∖E``) and **merge** (together in Exp
only, ``j ∈ E∖B``). Each has an exact pair mass ``M_s = Σ w_i·w_j``
(:func:`abcde.metrics.impact.link_masses`, from the fragments, never a pair list), and ``T_s =
M_s·p_s`` with ``p_s`` the share of same-entity pairs among pairs drawn ∝ ``w_i·w_j`` in ``s``. With
``T_both = T_agreed + T_intersection+ + T_intersection−``::

    T_Base = T_both + T_split,   T_Exp = T_both + T_merge
    Λ      = (T_merge − T_split) / (T_both + T_split)

Estimation
----------
The agreed stratum is drawn ∝ ``w_i·w_j`` (:func:`abcde.sampling.pairs.agreed_population`). The other
strata, drawn for ΔPrecision ∝ ``u_ij``, stand for draws ∝ ``w_i·w_j`` once each draw is reweighted by
its :func:`factor` (split ``W(B(i))``, merge ``W(E(i))``, intersection ``W(B)·W(E)/|W(B) − W(E)|``),
known exactly (the cluster weights are stored in the sample at the draw): the ratio form of
:mod:`abcde.quality.distances`::

    p̂_s = Σ_k r_k·g_k / Σ_k r_k      (k: the judged draws of s, g = 1(i ≡ j); r = 1 for agreed)
    Var(p̂_s) = n/(n − 1) · Σ_k r_k²(g_k − p̂_s)² / (Σ_k r_k)²
    T̂_s = M_s·p̂_s

A stratum listed whole (a census) adds its judged pairs exactly (pairs left unsure are taken to be
like the judged ones, as ΔPrecision's census does). The strata are sampled independently, so the
delta method gives::

    Var(Λ̂) = (Var(T̂_merge) + (1 + Λ̂)²·Var(T̂_split) + Λ̂²·Var(T̂_both)) / (T̂_both + T̂_split)²

The interval is read off draws of the strata's totals, each drawn from what its own judgements say
of it, the strata independently (:func:`lift_draws`): a sampled stratum's ``M_s·P``, ``P``
from its share's modified Jeffreys posterior (Brown, Cai & DasGupta 2001) on the effective number of
judgements ``n* = p̂(1 − p̂)/Var(p̂)`` (Kish's ``(Σr)²/Σr²`` when every judgement agrees, so it keeps a
width), ``Beta(n*·p̂ + ½, n*·(1 − p̂) + ½)``, and when every judgement agrees ``Beta(n*, 1)`` (or
``Beta(1, n*)``), whose 2.5% quantile is the modified interval's ``0.025^(1/n*)``; a census stratum's
``T̂_s`` plus a normal of its variance (when a model chose the people's tasks: each drawn cell's
``M_c·P_c`` from its share's posterior, the cells judged whole by a normal of their variance). With
``q`` Student t's quantile on the judged draws − 1 degrees of freedom, the interval is Λ's ``Φ(−q)``
and ``Φ(q)`` quantiles over 20,000 draws (a fixed seed: the same judgements give the same interval),
widened to hold Λ̂ and cut to the feasible range (each ``T_s`` anywhere in ``[0, M_s]``, a census
stratum in its judged part plus ``[0, what is left]``; never below −1). The skew of a share near 0
or 1 of few judgements carries over (a Wald interval there undercovered: 88% measured on 600
samples of a world whose agreed share is 0.92 from some 30 judgements), and so does a sum's: each
stratum's interval added by MOVER (Zou & Donner 2008; the ends' distances in quadrature), as before,
overstated the tail of a sum of skewed parts and covered 97.8% in the splits worlds with an 80%
model choosing the people's tasks (the draws: 96.3%; 12 worlds × 300 samples). Every pair of every
stratum listed and judged: Λ is exact.

Slices (vantage item in I): ``T_s(I) = M_s(I)·p̂_s(I)`` with ``M_s(I)`` the exact mass of the pairs whose
first item is in I and ``p̂_s(I)`` the domain ratio over the judged draws whose vantage item is in I;
``Λ(I) = (T_merge(I) − T_split(I)) / (T_both(I) + T_split(I))``.

The paper's design (``pairs --estimator paper``): its draws ∝ ``u_ij`` form one sequence over every
pair; those of a stratum are draws ∝ ``u_ij`` of that stratum, their number random (post-stratified,
:func:`abcde.sampling.allocation.draws_by_stratum`). The agreed pairs are drawn beside them, as the
stratified design draws its agreed stratum, with the same share of the budget
(:func:`abcde.sampling.stratified.sample_agreed`); the formulas above are the same. ΔPrecision and
the Good/Bad rates never read the agreed pairs (:func:`abcde.sampling.allocation.without_agreed`).

People and models: with people's tasks (``--human-budget``) the lift uses the people's judgements of
their tasks alone, each stratum's tasks a random subset of its draws; when the tasks were chosen by
a model's answers, weighted by cell as :mod:`abcde.quality.distances` does, a census stratum's too
(:func:`abcde.quality.distances.census_cells_total`: its pairs the people did not judge are like the
people's of their own cell; read as one pool, the lift of a world whose "different" cells people
judge more densely was 10% off). The model's judgements are not used for the lift.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from abcde.errors import InputError
from abcde.quality.distances import (cell_ratio_estimate, cells_deviation, census_cells_total, judged_draws,
                                     ratio_estimate)
from abcde.quality.result import DrawnInterval, Estimate, share_draws
from abcde.quality.stratified import census_total
from abcde.samples.facts import DistanceFacts, RecallFacts

#: The recall lift's strata (a sample's strata of those names): the pairs together in both are the
#: agreed stratum's and the intersection strata's, those together in one the split and merge strata's.
RECALL_STRATA = ("agreed", "intersection+", "intersection-", "split", "merge")
BOTH = ("agreed", "intersection+", "intersection-")
#: Why the lift can never be defined: Base keeps no true link whatever the pairs not judged say.
BASE_KEEPS_NONE = ("Base keeps no true link (it puts no two items together, or every pair it puts together is "
                   "judged different)")
def factor(kind: str, b: float, e: float) -> float:
    """How much more a draw of stratum ``kind`` of an item with ``W(B)/W = b``, ``W(E)/W = e`` counts
    in its pair mass than in its draw weight: a split draw ∝ ``u_ij = w_i·w_j/(W·W(B))`` by ``b``, a
    merge draw by ``e``, an intersection draw (∝ ``w_i·|W(B) − W(E)|·w_j/(W·W(B)·W(E))``) by
    ``b·e/|b − e|``; an agreed draw (∝ ``w_i·w_j``) by 1. So is a census pair's weight turned into its
    ``2·w_a·w_b/W²``."""
    if kind == "split":
        return b
    if kind == "merge":
        return e
    if kind.startswith("intersection"):
        return b * e / abs(b - e)
    return 1.0


# ----------------------------------------------------------------------------- one stratum
@dataclass(frozen=True)
class _Part:
    """One stratum's ``T̂_s`` (÷ W²), its variance, its feasible range, the judged draws it rests on,
    whether it is exact, and why it is not defined (``note``); a sampled stratum's share and
    effective number of judgements, for the lift's interval (:meth:`draws`)."""

    total: float
    var: float
    lo: float
    hi: float
    n: int
    exact: bool
    note: str = ""
    share: float | None = None  # a sampled stratum: its share p̂ of same-entity pairs ...
    n_eff: float = math.nan  # ... and its effective number of judgements n* (its posterior's)
    cells: tuple = ()  # a census stratum by the model's cells: its drawn cells' (M_c, p̂_c, Var(p̂_c), k_eff) ...
    whole_var: float = 0.0  # ... and the variance of its cells judged whole
    span: tuple = (0.0, 0.0)  # a census stratum: how far its pairs answered unsure could move the total (bounds)

    def draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws of the part's total from what its judgements say of it (:func:`lift_draws`):
        a sampled stratum's ``M·P``, ``P`` its share's posterior on ``n*`` judgements
        (:func:`abcde.quality.result.share_draws`); a census stratum by the model's cells its total
        plus :func:`abcde.quality.distances.cells_deviation`; another census stratum its total plus a
        normal of its variance; all inside the part's range. Exact: its total."""
        if self.exact:
            return np.full(size, self.total)
        if self.share is not None:
            return self.hi * share_draws(rng, self.share, self.n_eff, size)
        if self.cells:
            return np.clip(self.total + cells_deviation(rng, size, self.cells, self.whole_var), self.lo, self.hi)
        sd = math.sqrt(self.var) if math.isfinite(self.var) and self.var > 0 else 0.0
        return np.clip(self.total + rng.normal(0.0, sd, size), self.lo, self.hi)


def _sampled_part(mass: float, j, mask=None) -> _Part:
    """A sampled stratum's part from its judged draws ``j`` (a ``distances.JudgedDraws``), over the
    domain ``mask`` (vantage items in a slice; default all)."""
    if mass <= 0:
        return _Part(0.0, 0.0, 0.0, 0.0, 0, True)
    note = ""
    if j.cell is not None:
        p, var, n_eff, n, note = cell_ratio_estimate(j, mask)
    elif len(j.same):
        p, var, n_eff, n = ratio_estimate(j.same, j.r, mask)
    else:
        p, var, n_eff, n = math.nan, math.nan, math.nan, 0
    if n == 0 or not math.isfinite(p):
        return _Part(math.nan, math.nan, 0.0, mass, 0, False, note or "no usable judgement yet")
    v = var if math.isfinite(var) else math.nan
    return _Part(mass * p, mass * mass * v, 0.0, mass, n, False, share=p, n_eff=n_eff)


def _census_part(draws: pa.Table, by_pair: dict, factor, inside=None, cells=None) -> _Part:
    """A census stratum's part: each pair {a, b} listed once, weighing ``pair_weight·factor(a)``
    (its ``2·w_a·w_b/W²``), judged pairs exactly, pairs left unsure or not judged like the judged
    ones; ``inside``: the slice (each end in it adds half). ``cells``: the people's tasks were chosen
    by the model's answers, so the pairs not judged are like the judged ones of their own cell
    (:func:`abcde.quality.distances.census_cells_total`), not like all of them."""
    if not draws.num_rows:
        return _Part(0.0, 0.0, 0.0, 0.0, 0, True)
    pw = np.asarray(draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float)
    a, b = draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist()
    f = np.array([factor(x) for x in a], dtype=float)
    half = np.array([1.0 if inside is None else (inside(x) + inside(y)) / 2.0 for x, y in zip(a, b)], dtype=float)
    w = pw * f * half
    keep = w > 0
    if not keep.any():
        return _Part(0.0, 0.0, 0.0, 0.0, 0, True)
    if cells is not None:
        c = census_cells_total(draws, by_pair, w, cells)
        if c.missing:
            return _Part(math.nan, math.nan, c.lo, c.hi, c.n, False,
                         f"no usable people's judgement yet in the cell {', '.join(c.missing)}")
        return _Part(c.total, c.var, c.lo, c.hi, c.n, c.exact, cells=c.drawn, whole_var=c.whole_var, span=c.span)
    d = draws.filter(pa.array(keep, pa.bool_()))
    d = d.set_column(d.column_names.index("pair_weight"), "pair_weight", pa.array(w[keep], pa.float64()))
    t, v, n, known, rest, sp = census_total(d, by_pair, lambda lab, s, x, y: s)
    if not math.isfinite(t):
        return _Part(math.nan, math.nan, known, known + rest, 0, False, "no usable judgement yet")
    return _Part(t, v, known, known + rest, n, rest == 0.0, span=sp)


# ----------------------------------------------------------------------------- the lift
def _lift_of(t: dict) -> float:
    """Λ of the strata's totals ``t``: ``(T_merge − T_split)/(T_both + T_split)``, ``T_both`` the agreed
    and intersection strata's."""
    ts, tm = t["split"], t["merge"]
    den = sum(t[k] for k in BOTH) + ts
    if den > 0:
        return (tm - ts) / den
    return math.inf if tm > 0 else math.nan


def lift_draws(parts: dict, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` draws of Λ from draws of the strata's totals, each from its own judgements
    (:meth:`_Part.draws`; the strata are sampled independently), those where Λ is undefined left out:
    the lift's interval is their ``Φ(∓q)`` quantiles, holding Λ̂
    (:class:`abcde.quality.result.DrawnInterval`).

    Why draws, not each stratum's interval added by MOVER (Zou & Donner 2008), as before: adding the
    ends' distances in quadrature overstates the tail of a sum of skewed parts (two exponentials:
    3.80 for a 97.5% distance of 3.57), and a census stratum by the model's cells is itself a sum of
    skewed cells near a share of 1. There MOVER covered 97.8% (splits worlds, 80% model, 12 × 300
    samples) where the draws cover 96.3%."""
    t = {k: parts[k].draws(rng, size) for k in RECALL_STRATA}
    den = sum(t[k] for k in BOTH) + t["split"]
    num = t["merge"] - t["split"]
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, math.inf, math.nan))
    return lift[~np.isnan(lift)]


def lift_estimate(parts: dict, *, method: str, name: str = "recall_lift") -> tuple[Estimate, bool]:
    """Λ̂ from the strata's parts (``{stratum: part}`` of :data:`RECALL_STRATA`), its delta-method SE and
    the interval of the module's docstring; and whether it is exact."""
    s, m = parts["split"], parts["merge"]
    if s.exact and m.exact and s.hi == 0 and m.hi == 0:  # nothing split or merged: the same true links
        return Estimate(name, 0.0, 0.0, 0, method=method, bounds=(0.0, 0.0), centre=0.0, interval_se=0.0,
                        note="nothing was split or merged: Exp keeps exactly Base's links", exact=True), True
    bounds = _bounds(parts)
    if sum(parts[k].hi for k in BOTH) + s.hi <= 0:  # Base holds no pair that could be a true link
        return Estimate(name, math.nan, math.nan, 0, method=method, bounds=bounds, exact=True,
                        note=f"{BASE_KEEPS_NONE}, so the recall lift, a ratio to Base's true links, is not defined; "
                             "no judgement can change that"), True
    missing = [k for k in RECALL_STRATA if not math.isfinite(parts[k].total)]
    n = sum(p.n for p in parts.values())
    if missing:
        why = "; ".join(f"{k}: {parts[k].note}" for k in missing)
        return Estimate(name, math.nan, math.nan, 0, method=method, bounds=bounds,
                        note=f"no usable judgement yet in the {', '.join(missing)} "
                             f"{'strata' if len(missing) > 1 else 'stratum'} ({why})"), False
    both = sum(parts[k].total for k in BOTH)
    den = both + s.total
    if not den > 0:
        return Estimate(name, math.nan, math.nan, n, method=method, bounds=bounds,
                        note="no true link in Base among the judged pairs: the lift is a ratio to Base's true "
                             "links, 0 so far"), False
    lam = (m.total - s.total) / den

    v = (m.var + (1.0 + lam) ** 2 * s.var + lam * lam * sum(parts[k].var for k in BOTH)) / (den * den)
    exact = all(p.exact for p in parts.values())
    se = math.sqrt(v) if math.isfinite(v) else math.nan
    if exact:
        return Estimate(name, lam, 0.0, n, method=method, bounds=(lam, lam), centre=lam, interval_se=0.0,
                        exact=True), True
    if any(p.span != (0.0, 0.0) for p in parts.values()):
        low, high = _span_corners(parts)
        return Estimate(name, lam, se, n, method=method, bounds=bounds, note=UNSURE_BOUNDS,
                        interval_of=SpanInterval(DrawnInterval(functools.partial(lift_draws, low), _lift_at(low)),
                                                 DrawnInterval(functools.partial(lift_draws, high), _lift_at(high)))), False
    return Estimate(name, lam, se, n, method=method, bounds=bounds,
                    interval_of=DrawnInterval(functools.partial(lift_draws, parts), lam)), False


#: The lift's note when census strata hold pairs answered unsure.
UNSURE_BOUNDS = ("pairs of census strata answered unsure: the interval holds every answer they could have "
                 "(bounds), not an estimate of them")


def _lift_at(parts: dict) -> float:
    return _lift_of({k: parts[k].total for k in RECALL_STRATA})


def _span_corners(parts: dict) -> tuple[dict, dict]:
    """The parts with each census stratum's unsure pairs set to the answers that put the lift lowest,
    and to those that put it highest (Λ rises with T_merge and falls with T_split; with T_both it falls
    while T_merge > T_split, else rises)."""

    def shifted(direction: int) -> dict:
        out = dict(parts)
        for k in ("merge", "split"):
            p = parts[k]
            up = (k == "merge") == (direction > 0)
            out[k] = dataclasses.replace(p, total=p.total + p.span[1] if up else p.total - p.span[0])
        gaining = out["merge"].total > out["split"].total
        for k in BOTH:
            p = parts[k]
            up = gaining != (direction > 0)  # T_both up lowers Λ while Exp gains
            out[k] = dataclasses.replace(p, total=p.total + p.span[1] if up else p.total - p.span[0])
        return out

    return shifted(-1), shifted(+1)


class SpanInterval:
    """The lift's interval when census strata hold unsure pairs: the low end of the draws with their
    answers set lowest, the high end of those set highest (picklable)."""

    def __init__(self, low: DrawnInterval, high: DrawnInterval):
        self.low, self.high = low, high

    def __call__(self, z: float) -> tuple[float, float]:
        return self.low(z)[0], self.high(z)[1]


def _bounds(parts: dict) -> tuple[float, float]:
    """The feasible range of Λ: its extremes over the corners of the strata's ranges (Λ is monotone
    in each total given the others); at least −1 (Exp keeps no true link), at most +∞."""
    vals = []
    for corner in itertools.product(*[(parts[k].lo, parts[k].hi) for k in RECALL_STRATA]):
        v = _lift_of(dict(zip(RECALL_STRATA, corner)))
        if not math.isnan(v):
            vals.append(v)
    if not vals:
        return (-1.0, math.inf)
    return (max(min(vals), -1.0), max(vals))


def _weights_for(facts: RecallFacts, kind: str) -> DistanceFacts:
    """Each drawn item's reweighting factor in stratum ``kind`` (:func:`factor`), as the share
    ``distances.judged_draws`` reads."""
    return DistanceFacts(0.0, 0.0, _Factors(facts.cluster_weights, kind))


class _Factors(dict):
    """``{item: (factor, factor)}`` of one stratum, computed for the items asked (an intersection
    item's ``W(B) ≠ W(E)``; a split item's may be equal); every agreed item's is 1 (drawn ∝ w_i·w_j,
    its cluster weights not stored)."""

    def __init__(self, cluster_weights: dict, kind: str):
        super().__init__()
        self.cw, self.kind = cluster_weights, kind

    def get(self, key, default=None):
        if self.kind == "agreed":
            return (1.0, 1.0)
        got = self.cw.get(key)
        if got is None:
            return default
        f = factor(self.kind, *got)
        return (f, f)

    def of(self, key) -> float:
        """The factor of ``key``, refused when the sample stored no cluster weights for it."""
        got = self.get(key)
        if got is None:
            raise InputError(f"Item {key!r} of the pair sample has no stored cluster weights: the sample's "
                             "metadata is not the one it was drawn with.")
        return got[0]


def _parts_of(sample, by_pair: dict, facts: RecallFacts, *, cells=None, inside=None, masses=None,
              judged=None) -> dict:
    """The strata's parts of a stratified sample (``sample.draws[c]``, ``sample.census``)."""
    masses = facts.masses if masses is None else masses
    out = {}
    for kind in RECALL_STRATA:
        draws = sample.draws.get(kind)
        mass = float(masses.get(kind, 0.0))
        if draws is None or mass <= 0:
            out[kind] = _Part(0.0, 0.0, 0.0, 0.0, 0, mass <= 0) if mass <= 0 or draws is not None else \
                _Part(math.nan, math.nan, 0.0, mass, 0, False, "not drawn")
            continue
        if kind in sample.census:
            out[kind] = _census_part(draws, by_pair, _Factors(facts.cluster_weights, kind).of, inside, cells)
            continue
        j = judged[kind] if judged else judged_draws(draws, by_pair, _weights_for(facts, kind), kind, cells=cells)
        mask = None if inside is None else np.array([bool(inside(v)) for v in j.vantage], dtype=bool)
        if mask is not None and len(j.same) and not mask.any():
            out[kind] = _Part(math.nan, math.nan, 0.0, mass, 0, False,
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
    judged = {k: judged_draws(sample.draws[k], by_pair, _weights_for(facts, k), k, cells=cells)
              for k in RECALL_STRATA if k in sample.draws and k not in sample.census}
    est, exact = lift_estimate(_parts_of(sample, by_pair, facts, cells=cells, judged=judged), method=method)
    slices: dict = {}
    for col, values in (vantage_values or {}).items():
        rows = {}
        for value, m in facts.slices.get(col, {}).items():
            def inside(x, value=value):
                return values.get(x) == value

            parts = _parts_of(sample, by_pair, facts, cells=cells, inside=inside, judged=judged,
                              masses=dict(zip(RECALL_STRATA, m)))
            e, ex = lift_estimate(parts, method=method)
            rows[value] = {**e.to_dict(), "exact": ex}
        slices[col] = rows
    return est, exact, slices


__all__ = ["RECALL_STRATA", "estimate_recall_lift", "factor", "lift_estimate"]
