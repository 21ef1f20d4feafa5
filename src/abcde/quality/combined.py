"""Quality estimates from a model's judgements of every drawn pair and people's judgements of a
random subset of them (prediction-powered, :mod:`abcde.quality.ppi`), for both designs: per
stratum (the stratified design, census strata included) or per class, post-stratified (the
paper's). The people's judgements correct the model's bias: the estimates stay unbiased
whatever the model's accuracy; their standard errors shrink as far as the model agrees with people.

Every estimate is the one :mod:`abcde.quality.stratified` / :mod:`abcde.quality.paper` makes
from people's judgements alone, with each unit's mean replaced by its prediction-powered mean
(:func:`abcde.quality.ppi.ppi_mean`); ``lam=0`` gives exactly the people-only estimates on the
people's judgements.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from abcde.quality.paper import delta_precision_bounds
from abcde.samples.people_tasks import Cells
from abcde.quality.model_facts import ppi_facts
from abcde.quality.ppi import (MODEL_MISSING, Part, fold_lambdas, folds_of,
                               ppi_census_total, ppi_mean)
from abcde.quality.result import Estimate, QualityResult, agresti_coull_of, quantile, wilson_mover
from abcde.sampling.allocation import STRATUM_LABEL
from abcde.quality.stratified import slice_ranges
from abcde.sampling.allocation import pair_class_of_draws, without_agreed

METHOD = "prediction-powered (model + people)"


@dataclass(frozen=True)
class Judged:
    """Per draw of a table of draws: label ``l_ij``, the people's 1(same) (NaN where they gave none
    usable), the model's share "same", whether the draw is labeled (a people's task with a usable
    judgement), the vantage and other item, and the pair weight (census strata)."""

    label: np.ndarray
    people: np.ndarray
    model: np.ndarray
    labeled: np.ndarray
    item_a: list
    item_b: list
    pair_weight: np.ndarray | None
    pairs: np.ndarray | None = None
    #: Each draw's cell when the people's tasks were chosen by the model's answers
    #: (:func:`abcde.samples.people_tasks.people_cells`), else None (one cell per unit).
    cells: np.ndarray | None = None
    #: ``{cell: {pair_id: times}}``: cells of a census stratum whose people's tasks are draws ∝ pair
    #: weight (:func:`abcde.samples.people_tasks.census_draws`).
    drawn: dict | None = None
    #: Each draw's fold for cross-fitting λ (:func:`abcde.quality.ppi.folds_of` of ``pairs``), if known.
    pair_folds: np.ndarray | None = None

    @property
    def clusters(self) -> np.ndarray | None:
        """Each draw's pair, where people's judgements are a sample of pairs (a pair's draws share
        its judgement: a cluster); None where they are a sample of draws (by the model's answers)."""
        return self.pairs if self.cells is None else None

    @property
    def folds(self) -> np.ndarray | None:
        """The folds of the draws' :attr:`clusters` (:attr:`pair_folds`), for :func:`ppi_mean`; None:
        computed there."""
        return self.pair_folds if self.cells is None else None

    @property
    def groups(self) -> np.ndarray:
        """What a unit's mean is post-stratified by: the cells, or nothing (one group)."""
        return self.cells if self.cells is not None else np.zeros(len(self.label))

    # The arrays below are computed once (an estimate reads each several times), and read-only: every
    # reader shares them.
    @functools.cached_property
    def same(self) -> np.ndarray:  # the people's 1(same), 0 where unlabeled
        return _read_only(np.nan_to_num(self.people))

    @functools.cached_property
    def y(self) -> np.ndarray:  # l·1(i ≡ j) as people judged it (0 where unlabeled; never read there)
        return _read_only(self.label * self.same)

    @functools.cached_property
    def f(self) -> np.ndarray:  # l·(the model's share same)
        return _read_only(self.label * self.model)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only (it is shared)."""
    a.flags.writeable = False
    return a


class _Draws:
    """What the estimates read of one table of draws, each column converted once: a table is
    immutable, and a simulation estimates each sample with several models and designs (the lists
    are shared: never changed; the arrays are read-only)."""

    def __init__(self, draws: pa.Table):
        self.draws = draws

    def _list(self, name: str) -> list:
        return self.draws.column(name).to_pylist()

    @functools.cached_property
    def pair_ids(self) -> list:
        return self._list("pair_id")

    @functools.cached_property
    def pairs(self) -> np.ndarray:
        return _read_only(np.asarray(self.pair_ids, dtype=object))

    @functools.cached_property
    def folds(self) -> np.ndarray:
        return _read_only(folds_of(self.pair_ids))

    @functools.cached_property
    def label(self) -> np.ndarray:
        return _read_only(np.asarray(self._list("label"), dtype=float))

    @functools.cached_property
    def item_a(self) -> list:
        return self._list("item_a")

    @functools.cached_property
    def item_b(self) -> list:
        return self._list("item_b")

    @functools.cached_property
    def needs_judgement(self) -> list:
        return self._list("needs_judgement")

    @functools.cached_property
    def pair_weight(self) -> np.ndarray | None:
        if "pair_weight" not in self.draws.column_names:
            return None
        return _read_only(np.asarray(self.draws.column("pair_weight").to_numpy(zero_copy_only=False), dtype=float))

    @functools.cached_property
    def nth(self) -> list:
        """Each draw's number among its pair's draws (0 for its first)."""
        seen: dict = {}
        out = []
        for p in self.pair_ids:
            i = seen[p] = seen.get(p, -1) + 1
            out.append(i)
        return out


#: The last tables of draws read (:class:`_Draws`), by ``id``: each is held, so no other takes its id.
_DRAWS: dict = {}
#: How many :data:`_DRAWS` keeps (a sample's strata, for its dozen estimates).
_DRAWS_KEPT = 16


def _draws(table: pa.Table) -> _Draws:
    """The :class:`_Draws` of ``table``, converted once while it is among the last :data:`_DRAWS_KEPT` read."""
    d = _DRAWS.get(id(table))
    if d is None or d.draws is not table:
        d = _Draws(table)
        while len(_DRAWS) >= _DRAWS_KEPT:
            _DRAWS.pop(next(iter(_DRAWS)))  # the one read first
        _DRAWS[id(table)] = d
    return d


def judged(draws: pa.Table, people: dict, model: dict, tasks: frozenset | None, *, self_known: bool = False,
           cells: dict | None = None) -> Judged:
    """The arrays of ``draws`` (see :class:`Judged`). ``tasks``: the people's tasks (None: every pair);
    ``self_known``: self draws (the paper's design) are labeled "same" by definition, model included;
    ``cells``: ``{pair_id: cell}`` of a design by the model's answers (self draws: cell "self")."""
    n = draws.num_rows
    if not n:
        z = np.zeros(0)
        return Judged(z, z, z, np.zeros(0, dtype=bool), [], [], None)
    cols = _draws(draws)
    pids = cols.pair_ids
    selfs = draws.column("is_self").to_pylist() if self_known else None
    # each draw's people's answer (None outside the people's tasks) and the model's value, a pass each
    said = list(map(people.get, pids)) if tasks is None else [people.get(p) if p in tasks else None for p in pids]
    ppl = np.array([1.0 if a == "same" else 0.0 if a == "different" else np.nan for a in said], dtype=float)
    mod = np.array([1.0 if a == "same" else 0.0 if a == "different" else MODEL_MISSING  # model_value's
                    for a in map(model.get, pids)], dtype=float)
    lab = ~np.isnan(ppl)
    if isinstance(cells, Cells):  # by the model's answers: the people's draws only (their judgement is the pair's)
        if selfs is None:
            nth = cols.nth  # the pair's i-th draw
        else:  # self draws do not count
            seen: dict = {}
            nth = []
            for p, s in zip(pids, selfs):
                if not s:
                    seen[p] = seen.get(p, -1) + 1
                nth.append(-1 if s else seen[p])
        for k in np.flatnonzero(lab).tolist():
            if selfs is None or not selfs[k]:
                lab[k] = cells.selected(pids[k], nth[k])
    if selfs is not None and any(selfs):  # self draws: "same" by definition, model included
        s = np.asarray(selfs, dtype=bool)
        ppl[s], mod[s], lab[s] = 1.0, 1.0, True
    cell = None if cells is None else np.asarray(
        [cells.get(p, "") for p in pids] if selfs is None else
        ["self" if s else cells.get(p, "") for p, s in zip(pids, selfs)], dtype=object)
    return Judged(cols.label, ppl, mod, lab, cols.item_a, cols.item_b, cols.pair_weight, cols.pairs, cell,
                  getattr(cells, "drawn", None), None if cells is not None else cols.folds)


def _estimate(name, part: Part, scale: float, *, bounds, note: str = "", shift: float = 0.0,
              flip: bool = False) -> Estimate:
    """``shift + scale·part`` (``flip``: ``scale·(1 − part)``) as an :class:`Estimate`."""
    if not math.isfinite(part.value):
        return Estimate(name, math.nan, math.nan, part.n, method=METHOD, note=note or "no usable people's judgement",
                        bounds=bounds)
    v = scale * (1.0 - part.value) if flip else shift + scale * part.value
    if bounds is not None:
        # A prediction-powered mean is unbiased but not bounded (λ·mean(f) + mean(y − λf) can pass 1):
        # cut to the range the metric can take, which holds the truth, so the estimate is never
        # further from it and lies inside its interval (cut to the same range; issue 38).
        v = min(max(v, bounds[0]), bounds[1])
    se = abs(scale) * math.sqrt(part.var) if math.isfinite(part.var) else math.nan
    ise = abs(scale) * math.sqrt(part.ivar) if math.isfinite(part.ivar) else None
    if part.unseen and ise is not None:
        unseen = tuple(u.scaled(-scale if flip else scale) for u in part.unseen)
        other = max(part.ivar - sum(u.ivar * u.scale * u.scale for u in part.unseen), 0.0) * scale * scale
        return _with_unseen(Estimate(name, v, se, part.n, method=METHOD, note=note, bounds=bounds),
                            functools.partial(_mover_unseen, v, v, math.sqrt(other), unseen, False))
    return Estimate(name, v, se, part.n, method=METHOD, note=note, centre=v, interval_se=ise, bounds=bounds)


def _sum_parts(parts: list[tuple[float, Part]], shift: float = 0.0) -> Part:
    """``shift + Σ scale·part`` over independent parts (strata)."""
    value, var, ivar, var0, n, lambdas, unseen = shift, 0.0, 0.0, 0.0, 0, {}, ()
    for scale, p in parts:
        if not math.isfinite(p.value):
            return Part.undefined(n + p.n)
        value += scale * p.value
        var += scale * scale * p.var
        ivar += scale * scale * p.ivar
        var0 += scale * scale * p.var_people
        n += p.n
        lambdas.update(p.lambdas)
        unseen += tuple(u.scaled(scale) for u in p.unseen)
    return Part(value, var, ivar, n, lambdas, var0, unseen)


def _fallback(arrays: dict) -> dict:
    """The λ per fold pooled over a sample's strata (:func:`abcde.quality.ppi.fold_lambdas`)."""
    return fold_lambdas([(j.y, j.f, j.labeled, j.pairs, j.pair_folds) for j in arrays.values() if len(j.label)])


def _drawn_total(j: Judged, y: np.ndarray, m: np.ndarray, times: dict) -> Part:
    """``Σ w·y`` over a census cell whose people's tasks are draws ∝ pair weight: ``W`` times the
    mean of ``y`` over the draws people judged (Hansen–Hurwitz; a pair drawn twice counts twice),
    variance ``W²·s²/k`` over the ``k`` judged draws (independent draws; a usable judgement missing
    leaves its draws out, as everywhere)."""
    W = float(j.pair_weight[m].sum())
    idx = [k for k in np.flatnonzero(m) if j.pairs[k] in times and j.labeled[k]]
    if not idx:
        return Part.undefined()
    t = np.array([times[j.pairs[k]] for k in idx], dtype=float)
    v = y[idx]
    k = float(t.sum())
    mean = float((t * v).sum() / k)
    s2 = float((t * (v - mean) ** 2).sum() / (k - 1)) if k > 1 else math.nan
    a = np.abs(np.nan_to_num(j.people[idx]))
    p = (float((t * a).sum()) + 0.5) / (k + 1.0)  # Jeffreys' floor (ppi._floor), per draw
    floor = p * (1.0 - p) * float(np.mean(np.abs(j.label[idx]))) ** 2
    var = W * W * s2 / k if math.isfinite(s2) else math.nan
    ivar = W * W * max(s2 if math.isfinite(s2) else 0.0, floor) / k
    return Part(W * mean, var, ivar, len(idx), {}, var)


def _census_part(j: Judged, y, f, *, lam=None, fallback=None, coef=None) -> Part:
    """The prediction-powered total of ``y`` over a census stratum, summed over its cells (each cell's
    people's pairs a simple random sample of its pairs; one cell: :func:`ppi_census_total`, whose
    ``coef`` is what a "same" adds to ``y``, default 1)."""
    if j.cells is None:
        return ppi_census_total(j.pair_weight, y, f, j.labeled, lam=lam, answers=j.people, pairs=j.pairs,
                                fallback=fallback, coef=coef)
    parts = []
    for g in dict.fromkeys(j.cells.tolist()):
        m = j.cells == g
        if j.drawn and g in j.drawn:
            parts.append((1.0, _drawn_total(j, y, m, j.drawn[g])))
            continue
        parts.append((1.0, ppi_census_total(j.pair_weight[m], y[m], f[m], j.labeled[m], lam=lam,
                                            answers=j.people[m], pairs=j.pairs[m], fallback=fallback)))
    t = _sum_parts(parts)
    # floored only when no cell varies (see ppi_mean's floor_each; the rates' intervals are each
    # cell's own, _CellShares); λ = 0 by cell, so the model's errors are not in the estimate
    return Part(t.value, t.var, t.var if t.var > 0 else t.ivar, t.n, t.lambdas, t.var_people)


def _rate_part(j: Judged, census: bool, lam=None, fallback=None) -> Part:
    """The share judged "same" of a split or merge unit (a census: weighted by pair weight)."""
    if census:
        t = _census_part(j, j.same, j.model, lam=lam, fallback=fallback)
        W = float(j.pair_weight.sum())
        return Part(t.value / W, t.var / W ** 2, t.ivar / W ** 2, t.n, t.lambdas, t.var_people / W ** 2,
                    tuple(u.scaled(1.0 / W) for u in t.unseen))
    return ppi_mean(j.groups, j.same, j.model, j.labeled, lam=lam, pairs=j.clusters, folds=j.folds,
                    fallback=fallback, floor_each=j.cells is None)


@dataclass(frozen=True)
class _CellShares:
    """A split or merge unit's share judged "same", cell by cell, when the people's tasks were chosen
    by the model's answers (λ = 0, so each cell's estimate is its people's share): per cell ``(s_c,
    p̂_c, n*_c)``, its share of the unit, its people's share and its effective number of judgements
    (inf: every draw or pair of it judged), and ``first`` the variance of the unit's draws' mean (its
    first phase; 0 in a census)."""

    cells: tuple
    first: float = 0.0

    def interval(self, p: float, z: float) -> tuple[float, float]:
        """The share's interval around ``p``: each cell's Wilson interval, added by MOVER (independent
        cells: the distances to the ends in quadrature), with the first phase's ``± z·SE``; in [0, 1]."""
        down, up = wilson_mover(self.cells, z)
        first = z * z * self.first
        return max(p - math.sqrt(down + first), 0.0), min(p + math.sqrt(up + first), 1.0)

    def rate_interval(self, p: float, rate: float, flip: bool, z: float) -> tuple[float, float]:
        """``rate·`` the share's interval (``flip``: ``rate·(1 − share)``)."""
        lo, hi = self.interval(p, z)
        return (rate * (1.0 - hi), rate * (1.0 - lo)) if flip else (rate * lo, rate * hi)


def _cell_shares(cells: np.ndarray, a: np.ndarray, labeled: np.ndarray, *, weights: np.ndarray | None = None,
                 drawn: dict | None = None, pairs=None) -> _CellShares | None:
    """:class:`_CellShares` of a unit from its people's answers ``a`` (1 same, 0 different) on the
    ``labeled`` draws of each cell: a sampled unit's cell (``weights`` None) by the mean of its
    people's draws, a simple random sample of the cell's ``N_c`` draws (``n* = n/(1 − n/N_c)``); a
    census cell drawn ∝ pair weight (``drawn``) by the mean of its draws (``n*``: the draws); another
    census cell by its people's pairs' weighted share (``n*``: Kish's, over ``1 − n/P``). None when a
    cell has no people's judgement (the estimate is not defined then)."""
    out, stats, N = [], [], len(cells)
    total = float(weights.sum()) if weights is not None else float(N)
    if not total > 0:
        return None
    for g in dict.fromkeys(cells.tolist()):
        m = cells == g
        lab = m & labeled
        if not lab.any():
            return None
        if weights is None:
            n, Nc = int(lab.sum()), int(m.sum())
            p = float(a[lab].mean())
            n_eff = n / (1.0 - n / Nc) if n < Nc else math.inf
            stats.append((Nc / N, p, float(a[lab].var(ddof=1)) if n > 1 else 0.0))
            out.append((Nc / N, p, n_eff))
            continue
        share = float(weights[m].sum()) / total
        if drawn and g in drawn:
            times = drawn[g]
            idx = [k for k in np.flatnonzero(lab) if pairs[k] in times]
            if not idx:
                return None
            t = np.array([times[pairs[k]] for k in idx], dtype=float)
            out.append((share, float((t * a[idx]).sum() / t.sum()), float(t.sum())))
            continue
        w = weights[lab]
        n, P = int(lab.sum()), int(m.sum())
        kish = float(w.sum()) ** 2 / float((w * w).sum())
        out.append((share, float((w * a[lab]).sum() / w.sum()), kish / (1.0 - n / P) if n < P else math.inf))
    first = 0.0
    if weights is None and N:
        mean = sum(s * p for s, p, _ in stats)
        first = (sum(s * v for s, _, v in stats) + sum(s * (p - mean) ** 2 for s, p, _ in stats)) / N
    return _CellShares(tuple(out), first)


def _rates(parts: dict, split_rate: float, merge_rate: float, shares: dict | None = None) -> dict:
    out = {}
    for cls, rate, good_is_same in (("split", split_rate, False), ("merge", merge_rate, True)):
        p = parts.get(cls)
        for good in (True, False):
            name = f"{'good' if good else 'bad'}_{cls}_rate"
            if rate == 0:
                out[name] = Estimate(name, 0.0, 0.0, p.n if p else 0, method=METHOD,
                                     note=f"no {cls}s: the {cls} rate is 0", bounds=(0.0, 0.0))
            elif p is None:
                out[name] = Estimate(name, math.nan, math.nan, 0, method=METHOD, note=f"no judged {cls} pairs",
                                     bounds=(0.0, rate))
            else:
                out[name] = _share_estimate(name, p, rate, flip=good != good_is_same,
                                            note="" if math.isfinite(p.value) else f"no judged {cls} pairs",
                                            cells=(shares or {}).get(cls))
    return out


def _share_estimate(name, part: Part, rate: float, *, flip: bool, note: str = "",
                    cells: _CellShares | None = None) -> Estimate:
    """A Good or Bad rate: ``rate·p`` (``flip``: ``rate·(1 − p)``) of a unit's share ``p`` judged "same",
    its interval Agresti–Coull's on the share, as the people-only rates' (:mod:`abcde.quality.stratified`),
    on the effective number of judgements ``n* = p̂(1 − p̂)/Var`` (the interval's variance), the
    people's judged pairs when ``p̂`` is 0 or 1: ``p̃ = (n*·p̂ + 2)/(n* + 4)``, half-width
    ``q·√(p̃(1 − p̃)/(n* + 4))``. A symmetric interval of a share near 0 or 1 of a few dozen people's
    judgements (the model's help counted) missed the truth in up to 31% of samples where the people's
    pairs held no "different" (a census stratum's Good Split rate, 0 ± 0).

    ``cells`` (the people's tasks chosen by the model's answers): each cell's Wilson interval of its
    share, added by MOVER (:class:`_CellShares`). One interval on
    the whole share missed where a cell the model called "same" hid a few "different" pairs from the
    people's draws: its share 1 had no width, and a merge rate's interval covered 88% (a model that
    says "same" too often, world 13 of the "both" family)."""
    unseen, part = part.unseen, dataclasses.replace(part, unseen=())  # a census stratum's unseen pairs: below
    e = _estimate(name, part, rate, bounds=(0.0, rate), flip=flip, note=note)
    p = part.value
    if not (e.defined and math.isfinite(p)):
        return e
    p = min(max(p, 0.0), 1.0)
    if min(p, 1.0 - p) < 1e-9:  # at an end, up to floating-point noise (a share of 1 − 1e-17 is 1)
        p = round(p)
    if cells is not None:
        return dataclasses.replace(e, interval_of=functools.partial(cells.rate_interval, p, rate, flip))
    v = part.ivar if math.isfinite(part.ivar) and part.ivar > 0 else part.var
    if 0.0 < p < 1.0 and math.isfinite(v) and v > 0:
        n_eff = p * (1.0 - p) / v
    else:
        n_eff = float(part.n)
    if not n_eff > 0:
        return e
    pt, ise = agresti_coull_of(n_eff * p, n_eff)
    centre = rate * (1.0 - pt) if flip else rate * pt
    if unseen:
        unseen = tuple(u.scaled(-rate if flip else rate) for u in unseen)
        return _with_unseen(e, functools.partial(_mover_unseen, e.value, centre, rate * ise, unseen, True))
    return dataclasses.replace(e, centre=centre, interval_se=rate * ise)


def _mover_unseen(value: float, centre: float, ise: float, unseen: tuple, hull: bool, z: float) -> tuple[float, float]:
    """The interval at quantile ``z`` of an estimate ``value`` that adds census strata's prediction-
    powered totals (each with its :class:`abcde.quality.ppi.Unseen`) to parts whose interval is
    ``centre ± z·ise`` (ΔPrecision: its sampled strata): the distances from ``value`` down and up,
    added by MOVER (Zou & Donner: in quadrature), of ``z·ise`` and of each census stratum's (its
    residual's ``z·√ivar`` with what the pairs people did not judge may hide). ``hull`` (a rate, whose
    ``centre ± z·ise`` is Agresti–Coull's on its one census stratum's share): the wider of that
    interval and the stratum's.

    The residual's variance alone left out what people's pairs that all agree with a nearly perfect
    model cannot rule out among the other pairs: a census merge stratum's Good Merge rate (a 99%
    model, people's tasks half its pairs) lay wholly below the truth in 27% of samples, and
    ΔPrecision with a 99% model covered 77% in one world."""
    down2 = up2 = 0.0 if hull else (z * ise) ** 2
    for u in unseen:
        d, p = u.distances(z)
        down2, up2 = down2 + d * d, up2 + p * p
    lo, hi = value - math.sqrt(down2), value + math.sqrt(up2)
    if hull:
        return min(lo, centre - z * ise), max(hi, centre + z * ise)
    return lo, hi


def _with_unseen(e: Estimate, interval_of) -> Estimate:
    """``e`` with its interval ``interval_of`` (at every level), and ``centre``, ``interval_se`` those
    of its 95% interval (what reads them, e.g. Precision = 1 + ΔPrecision, gets that one)."""
    z = quantile(e.n_judgements, 0.95)
    lo, hi = interval_of(z)
    return dataclasses.replace(e, centre=(lo + hi) / 2, interval_se=(hi - lo) / (2 * z), interval_of=interval_of)


def _people_only(p: Part, j: Judged, y: np.ndarray, scale: float, census: bool) -> Part:
    """``p`` (a unit's estimate by cell) with ``var_people`` the variance of people-only judgements
    of the same number, drawn ∝ pair weight from the whole unit (what :func:`abcde.quality.model_facts.ppi_facts` compares with):
    ``scale²·σ̂²/n``, σ̂² the unit's variance of ``y`` per draw ∝ weight, estimated cell by cell
    (within-cell variances plus the cells' spread, each cell weighted by its share of the unit)."""
    if j.cells is None or not math.isfinite(p.value) or p.n < 1:
        return p
    L = j.labeled
    w = j.pair_weight if census else np.ones(len(y))
    total = float(w.sum())
    mean = var = 0.0
    stats = []
    for g in dict.fromkeys(j.cells.tolist()):
        m = j.cells == g
        lab = m & L
        if not lab.any():
            return p
        wl, yl = w[lab], y[lab]
        mg = float((wl * yl).sum() / wl.sum())
        vg = float((wl * (yl - mg) ** 2).sum() / wl.sum())
        stats.append((float(w[m].sum()) / total, mg, vg))
    mean = sum(s_ * m_ for s_, m_, _ in stats)
    var = sum(s_ * (v_ + (m_ - mean) ** 2) for s_, m_, v_ in stats)
    unit = (total if census else 1.0) * scale
    return Part(p.value, p.var, p.ivar, p.n, p.lambdas, unit * unit * var / p.n)


ANSWERS = ("same", "different")


def _labeled_pairs(tables, people, tasks) -> set:
    """The pairs of ``tables`` (draws) that need a judgement and have a usable one from people in
    their tasks (``tasks`` None: every pair is one)."""
    out = set()
    for d in tables:
        if d.num_rows:
            cols = _draws(d)
            out.update(p for p, need in zip(cols.pair_ids, cols.needs_judgement)
                       if need and (tasks is None or p in tasks) and people.get(p) in ANSWERS)
    return out


def _counts(pair_ids, people, tasks) -> tuple[int, int, int]:
    mine = [p for p in pair_ids if tasks is None or p in tasks]
    judged = sum(1 for p in mine if people.get(p) in ("same", "different"))
    unsure = sum(1 for p in mine if people.get(p) == "unsure")
    return judged, unsure, len(mine) - judged - unsure


def combined_stratified(sample, people: dict, model: dict, tasks: frozenset | None, *, split_rate: float,
                        merge_rate: float, lam=None, cells: dict | None = None,
                        stored_model: dict | None = None) -> QualityResult:
    """ΔPrecision and the Good/Bad rates of a stratified sample (:class:`StratifiedSample`):
    the exact self term plus, per stratum, ``U_c`` times its prediction-powered mean (a census
    stratum: its prediction-powered total). ``cells``: the people's tasks were chosen by the
    model's answers (:func:`abcde.samples.people_tasks.people_cells`): each stratum's mean is stratified by
    cell (λ = 0 within a cell, where the model's value is one number). ``stored_model``: the model's
    judgements as stored (every answer; default ``model``), which ``design["ppi"]`` counts."""
    parts, rate_parts, shares = [], {}, {}
    lo = hi = sample.self_term
    missing = []
    lam = 0.0 if cells is not None else lam
    arrays = {c: judged(sample.draws[c], people, model, tasks, cells=cells) for c in sample.strata}
    fb = _fallback(arrays) if lam is None else None  # read only where λ is tuned
    for c in sample.strata:
        U = sample.totals[c]
        if U == 0:
            continue
        lab = STRATUM_LABEL.get(c)
        lo, hi = lo - (U if lab != 1 else 0.0), hi + (U if lab != -1 else 0.0)
        j = arrays[c]
        census = c in sample.census
        if census:
            p = _people_only(_census_part(j, j.y, j.f, lam=lam, fallback=fb, coef=j.label), j, j.y, 1.0, True)
            parts.append((1.0, _named(p, c)))
        else:
            p = _people_only(ppi_mean(j.groups, j.y, j.f, j.labeled, lam=lam, pairs=j.clusters, fallback=fb,
                                      floor_each=j.cells is None, folds=j.folds), j, j.y,
                             1.0, False)
            parts.append((U, _named(p, c)))
        if not math.isfinite(p.value):
            missing.append(c)
        if c in ("split", "merge") and sample.draws[c].num_rows:
            rate_parts[c] = _rate_part(j, census, lam, fb)
            if j.cells is not None:
                shares[c] = _cell_shares(j.cells, j.same, j.labeled,
                                         weights=j.pair_weight if census else None, drawn=j.drawn, pairs=j.pairs)
    dp = _sum_parts(parts, sample.self_term)
    note = (f"no usable people's judgement yet in the {', '.join(missing)} "
            + ("strata" if len(missing) > 1 else "stratum")) if missing else ""
    census = sorted(sample.census, key=sample.strata.index)
    units = {p: c for c in sample.strata if sample.draws[c].num_rows for p in arrays[c].pairs.tolist()}
    pair_ids = list(units)  # each drawn pair once (what is told of them are counts: in any order)
    labeled = _labeled_pairs(sample.draws.values(), people, tasks)
    judged_n, unsure, missing_n = _counts(pair_ids, people, tasks)
    return QualityResult(
        delta_precision=_estimate("delta_precision", dp, 1.0, bounds=(lo, hi), note=note),
        **_rates(rate_parts, split_rate, merge_rate, shares),
        split_rate=split_rate, merge_rate=merge_rate,
        judged_pairs=judged_n, unsure_pairs=unsure, missing_pairs=missing_n,
        draws={c: sample.draws[c].num_rows for c in sample.strata},
        estimator="stratified", allocation=sample.allocation, strata=sample.strata, census=tuple(census),
        design={"ppi": ppi_facts(dp, people, model, pair_ids, tasks, labeled, cells, stored=stored_model, units=units)},
    )


def _named(p: Part, unit: str) -> Part:
    """A stratum's part with its λ named by the stratum."""
    lam = next(iter(p.lambdas.values()), None) if p.lambdas else None
    return dataclasses.replace(p, lambdas={unit: lam} if lam is not None else {})


def combined_stratified_slices(sample, people: dict, model: dict, tasks: frozenset | None, vantage_value: dict,
                               multipliers: dict, self_terms: dict, *, total_weight: float, lam=None,
                               cells: dict | None = None) -> list[dict]:
    """ΔPrecisionContribution(I) and ΔPrecision(I) per slice value (see
    :func:`abcde.quality.stratified.estimate_stratified_slices`), each stratum's mean of
    ``l·1(i ≡ j)·1(i ∈ I)`` prediction-powered (``cells``: as :func:`combined_stratified`)."""
    lam = 0.0 if cells is not None else lam
    arrays = {c: judged(sample.draws[c], people, model, tasks, cells=cells) for c in sample.strata}
    fb = _fallback(arrays)
    rows = []
    for value, w_i, pw, st, st_u, bounds in slice_ranges(sample, multipliers, self_terms):
        rest = max(pw - st_u, 0.0)
        parts, n_in, drawn = [], 0, 0
        for c in sample.strata:
            j = arrays[c]
            in_a = np.array([vantage_value.get(a) == value for a in j.item_a], dtype=float)
            drawn += int(in_a.sum())
            if sample.totals[c] == 0 or rest <= 1e-12 * max(pw, 1e-300):
                continue
            if c in sample.census:
                in_b = np.array([vantage_value.get(b) == value for b in j.item_b], dtype=float)
                share = (in_a + in_b) / 2
                parts.append((1.0, _census_part(j, j.y * share, j.f * share, lam=lam, fallback=fb,
                                                coef=j.label * share)))
                n_in += int((j.labeled & (share > 0)).sum())
            else:
                parts.append((sample.totals[c], ppi_mean(j.groups, j.y * in_a, j.f * in_a,
                                                         j.labeled, lam=lam, pairs=j.clusters, fallback=fb,
                                                         floor_each=j.cells is None)))
                n_in += int((j.labeled & (in_a > 0)).sum())
        p = _sum_parts(parts, st)
        note = ""
        if not math.isfinite(p.value):
            note = "no usable people's judgement in a stratum"
        elif parts and n_in == 0:
            p, note = Part.undefined(), "no judged pair has its vantage item in this slice"
        p = dataclasses.replace(p, n=n_in)
        contrib = _estimate("delta_precision_contribution", p, 1.0, bounds=bounds, note=note)
        scale = float(total_weight) / w_i if w_i else math.nan
        dpi = _estimate("delta_precision", p, scale, bounds=(bounds[0] * scale, bounds[1] * scale), note=note)
        rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw, "self_term": st,
                     "sampled_draws": drawn, "delta_precision": dpi.to_dict(),
                     "delta_precision_contribution": contrib.to_dict()})
    return rows


def combined_paper(draws: pa.Table, people: dict, model: dict, tasks: frozenset | None, totals: dict,
                   split_rate: float, merge_rate: float, *, items: pa.Table | None = None,
                   slice_multipliers: dict | None = None, total_weight: float | None = None,
                   lam=None, cells: dict | None = None, stored_model: dict | None = None) -> QualityResult:
    """The paper's design: ΔPrecision = Σ u_ij times the prediction-powered mean of ``l·1(i ≡ j)``
    over all draws, post-stratified by class (self draws known "same"); the rates from the split and
    merge classes; slices from the draws whose vantage item is in the slice. ``cells``: the people's
    tasks were chosen by the model's answers: post-stratified by cell (class and answer), λ = 0."""
    lam = 0.0 if cells is not None else lam
    every = draws  # the pairs to judge: the agreed pairs too
    draws = without_agreed(draws)  # the agreed pairs beside the paper's draws are the recall lift's alone
    j = judged(draws, people, model, tasks, self_known=True, cells=cells)
    cls = np.asarray(pair_class_of_draws(draws) if draws.num_rows else [], dtype=object)
    groups = cls if cells is None else j.cells
    if totals["all"] == 0:
        dp = Estimate("delta_precision", 0.0, 0.0, 0, method=METHOD, note="Base and Exp agree on every item",
                      bounds=(0.0, 0.0))
        dp_part = Part(0.0, 0.0, 0.0, 0, {}, 0.0)
    else:
        dp_part = ppi_mean(groups, j.y, j.f, j.labeled, lam=lam, pairs=j.clusters, floor_each=cells is None,
                           folds=j.folds)
        dp_part = Part(dp_part.value, dp_part.var, dp_part.ivar, int((j.labeled & (cls != "self")).sum()),
                       {k: v for k, v in dp_part.lambdas.items() if k != "self"}, dp_part.var_people)
        dp_part = _people_only(dp_part, j, j.y, 1.0, False)
        dp = _estimate("delta_precision", dp_part, totals["all"], bounds=delta_precision_bounds(totals))
    rate_parts, shares = {}, {}
    fb = fold_lambdas([(j.y, j.f, j.labeled & (cls == c), j.pairs) for c in ("split", "merge", "intersection")])
    for c in ("split", "merge"):
        m = cls == c
        if m.any():
            rate_parts[c] = ppi_mean(np.zeros(int(m.sum())) if cells is None else groups[m],
                                     np.nan_to_num(j.people[m]), j.model[m], j.labeled[m],
                                     lam=lam, pairs=None if j.clusters is None else j.clusters[m], fallback=fb,
                                     floor_each=cells is None, folds=None if j.folds is None else j.folds[m])
            if cells is not None:
                shares[c] = _cell_shares(groups[m], np.nan_to_num(j.people[m]), j.labeled[m])
    slices = {}
    if slice_multipliers:
        attrs = {r["item_id"]: r for r in items.to_pylist()}
        for col, stored in slice_multipliers.items():
            vals = np.array([json.dumps(attrs.get(v, {}).get(col), default=str) for v in j.item_a])
            rows = []
            for value, (w_i, pw) in sorted(stored.items(), key=lambda kv: -kv[1][1]):
                m = vals == value
                p = (ppi_mean(groups[m], j.y[m], j.f[m], j.labeled[m], lam=lam,
                              pairs=None if j.clusters is None else j.clusters[m],
                              floor_each=cells is None) if m.any()
                     else Part.undefined())
                p = Part(p.value, p.var, p.ivar, int((j.labeled & m & (cls != "self")).sum()), p.lambdas,
                         p.var_people)
                note = "" if math.isfinite(p.value) else "no usable people's judgement among this slice's draws"
                contrib = _estimate("delta_precision_contribution", p, pw, bounds=(-pw, pw), note=note)
                scale = total_weight / w_i
                dpi = _estimate("delta_precision", p, pw * scale, bounds=(-pw * scale, pw * scale), note=note)
                rows.append({"value": json.loads(value), "weight": w_i, "pairweight": pw,
                             "sampled_draws": int(m.sum()), "delta_precision": dpi.to_dict(),
                             "delta_precision_contribution": contrib.to_dict()})
            slices[col] = rows
    need = every.column("needs_judgement").to_pylist() if every.num_rows else []
    pair_ids = sorted({p for p, n in zip(every.column("pair_id").to_pylist(), need) if n}) if every.num_rows else []
    labeled = _labeled_pairs([every], people, tasks)
    every_cls = pair_class_of_draws(every) if every.num_rows else []
    judged_n, unsure, missing_n = _counts(pair_ids, people, tasks)
    counts = {c: int((cls == c).sum()) for c in ("self", "split", "merge", "intersection")}
    return QualityResult(
        delta_precision=dp, **_rates(rate_parts, split_rate, merge_rate, shares),
        split_rate=split_rate, merge_rate=merge_rate,
        judged_pairs=judged_n, unsure_pairs=unsure, missing_pairs=missing_n, draws=counts, slices=slices,
        design={"ppi": ppi_facts(dp_part, people, model, pair_ids, tasks, labeled, cells, stored=stored_model,
                              units={p: c for p, c in zip(every.column("pair_id").to_pylist() if every.num_rows
                                                          else [], every_cls) if c != "self"})},
    )
