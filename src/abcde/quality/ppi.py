"""Prediction-powered estimates: a model judges every drawn pair, people judge a random subset
of them, and the people's judgements correct the model's bias (Angelopoulos et al., Science 2023;
PPI++'s power tuning, Angelopoulos, Duchi & Zrnic, arXiv 2311.01453; stratified as in Fisch et
al., arXiv 2406.04291).

The people's tasks themselves (which pairs people judge, ``abcde pairs --budget N --human-budget n``)
are :mod:`abcde.samples.people_tasks`'s.

**The estimator**, per unit ``c`` with ``N_c`` draws of which the ``n_c`` labeled ones carry a
person's judgement ``y`` (same/different), and a model value ``f`` on every draw::

    θ̂_c = λ_c · mean_{N_c}(f) + mean_{n_c}(y − λ_c·f)
    Var  = s²(y)/N_c + (1 − n_c/N_c) · s²(y − λ_c·f)/n_c
    λ_c  = Cov(y, f) / Var(f) on the labeled draws, clipped to [0, 1]

Given the draws, the labeled ones are a simple random sample of them, so ``θ̂_c`` is unbiased for
the draws' mean of ``y`` whatever ``λ_c`` and the model are; the first variance term is the draws'
(N_c draws ∝ u_ij), the second the subsample's. ``λ = 0`` is the people-only estimate on the
subset (and its variance ``s²/n_c``); a model equal to the people gives ``λ = 1`` and ``s²/N_c``, the
variance of N_c people's judgements. PPI++ writes the same estimator with an unlabeled set disjoint
from the labeled one: its ``λ_PPI++ = (1 − n/N)·λ`` (:func:`ppi_plus_plus_lambda`).

The paper's design weights its classes by their draws (post-stratified, ``θ̂ = Σ_c (N_c/N) θ̂_c``),
with the first term the variance of all N draws' mean. A census stratum (every pair listed once
with its pair weight) estimates its total ``Σ w·y`` the same way, with weights.

A pair the model did not answer (unsure, failed, not judged) gets the fixed model value
:data:`MODEL_MISSING`: any fixed value keeps the estimate unbiased; a missing answer only lowers
what the model is worth. Unsure people's judgements are left out within a unit, as everywhere.

**Intervals** follow the rules of every other estimate: Student t on the people's judgements − 1,
cut to the feasible range, and defined from one judgement per unit. The people's answers' variance
under them is at least Jeffreys' ``p̃(1 − p̃)``, ``p̃ = (k + ½)/(n + 1)``; a residual that does not vary
on the people's pairs (a model that agreed with all of them) is given ``(1 − λ)²`` times that, and
in a census stratum (where no first-phase variance gives the interval width) also ``λ²`` times the
Jeffreys variance of the model's share of errors: a few agreeing judgements never give a zero-width
interval, and a model that was right on every people's pair is not taken to be right on every
other (a residual variance of rounding size, 1e-33 from a λ tuned to 1 − 1e-16, is none: :func:`_varies`).
In a census stratum the model's answers split the pairs into groups of known size, and where the
people's pairs of a group were all one answer, the other answer may still hide among its unseen pairs:
as many as the hypergeometric distribution leaves, added on that side of the interval
(:class:`Unseen`; ΔPrecision's, the rates' and the slices'). A Good or Bad rate's interval is
Agresti–Coull's on its unit's share (in a census stratum, widened to that), on the effective number of
judgements that variance gives (the people's judgements when the share is 0 or 1), as the
people-only rates' are (:func:`abcde.quality.combined._share_estimate`): a symmetric interval there
missed in up to 31% of samples of a census stratum whose people's pairs held no "different". When
the people's tasks were chosen by the model's answers, a rate's interval is each cell's Wilson
interval of its people's share added by MOVER (:class:`abcde.quality.combined._CellShares`): one
interval on the whole share gave a cell whose people's draws all agreed no width, and missed where
that cell hid a few "different" pairs.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field

import numpy as np


#: The model value of a pair the model answered ``unsure``, failed on or did not judge (as a share
#: "same"; times the pair's label): a fixed value, so the estimate stays unbiased.
MODEL_MISSING = 0.5
#: Above this share of disagreement between model and people on the doubly judged pairs,
#: ``abcde quality`` warns (the estimate stays unbiased; the model adds little).
DISAGREEMENT_WARNING = 0.2


# ---------------------------------------------------------------------------------- the estimator
@dataclass(frozen=True)
class Unseen:
    """What the pairs people did not judge in a census stratum may still hold, for the interval of an
    estimate that adds the stratum's total (:func:`ppi_census_total`).

    The model answered every pair, so its answers split the stratum into groups of known size (its
    "same", its "different", no answer), and the people's pairs, a simple random sample of the
    stratum, are one of each group. Where the people's pairs of a group were all one answer, the
    residual's variance says nothing of the other answer among the group's unseen pairs: a nearly
    perfect model's errors are few, the people's pairs often hold none of them, and the symmetric
    interval lay wholly below the truth in 27% of a census merge stratum's samples (a 99% model,
    people's tasks half its pairs). How many the unseen pairs may hide is exact: the most the
    hypergeometric distribution leaves (:func:`_hidden`; with 30 of 60 pairs seen and none of them
    an error, about four), added to the interval on the side they would move the total, by MOVER with
    the residual's ``z·√ivar``. A group none of whose pairs people judged may be all either answer.

    ``groups``: per group ``(N, n, k, coefs)``: its pairs, the people's pairs, their "same" and the
    unseen pairs' coefficients (pair weight times what a "same" adds to the total); ``ivar``: the
    stratum's interval variance; ``scale``: what the total is multiplied by (a rate's share: ``1/W``;
    a flipped rate, ``rate·(1 − share)``: ``−rate/W``)."""

    groups: tuple
    ivar: float
    scale: float = 1.0

    def scaled(self, c: float) -> "Unseen":
        """The same for ``c`` times the total."""
        return Unseen(self.groups, self.ivar, self.scale * c)

    def distances(self, z: float) -> tuple[float, float]:
        """The distances from the estimate (``scale`` times the total) down and up to its interval's
        ends at quantile ``z``: ``z·√ivar`` and, in quadrature, what each group whose people's pairs
        were all one answer may hide of the other (:func:`_hidden`), on the side it would move the
        total, times ``|scale|``."""
        down2 = up2 = z * z * self.ivar if math.isfinite(self.ivar) else 0.0
        for N, n, k, coefs in self.groups:
            if not coefs:
                continue
            a = np.abs(np.asarray(coefs, dtype=float))
            if n == 0:  # no pair of the group judged: its pairs may be all "same" or all "different"
                more = fewer = float(a.sum())
            else:
                more = _hidden(a, N, n, z) if k == 0 else 0.0  # "same" pairs among the unseen
                fewer = _hidden(a, N, n, z) if k == n else 0.0  # "different" pairs among the unseen
            positive = float(np.sum(coefs)) >= 0.0
            up2 += (more if positive else fewer) ** 2
            down2 += (fewer if positive else more) ** 2
        c = abs(self.scale)
        down, up = c * math.sqrt(down2), c * math.sqrt(up2)
        return (down, up) if self.scale >= 0 else (up, down)


def _hidden(a: np.ndarray, N: int, n: int, z: float) -> float:
    """How much of ``a`` (a group's unseen pairs' coefficients) the unseen pairs of one answer may carry
    when the ``n`` people's pairs of the group of ``N`` held none: their number ``K`` at most the
    largest the hypergeometric distribution leaves at quantile ``z`` (mid-p: ``½·P(none of K seen)
    ≥ Φ(−z)``); their sum ``K`` times the mean with ``z`` standard deviations of a random subset's
    sum of ``K`` (in quadrature), never more than the ``K`` largest."""
    left = len(a)
    top = _hidden_count(N, n, left, z)
    if not top:
        return 0.0
    s = np.sort(a)[::-1]
    spread = z * math.sqrt(_var(s, 0)) * math.sqrt(top * max(1.0 - top / left, 0.0))  # s.std()
    return min(float(s[:top].sum()), math.sqrt((top * _mean(s)) ** 2 + spread ** 2))


@functools.lru_cache(maxsize=1 << 12)  # a census stratum's groups come back in every sample and estimate
def _hidden_count(N: int, n: int, left: int, z: float) -> int:
    """The largest ``K ≤ left`` with ``½·P(none of K seen) ≥ Φ(−z)`` (:func:`_hidden`), 0 if none."""
    from scipy.stats import hypergeom, norm

    K = np.arange(0, left + 1)
    ok = 0.5 * hypergeom.pmf(0, N, K, n) >= float(norm.sf(z))
    return int(K[ok].max()) if ok.any() else 0


@dataclass(frozen=True)
class Part:
    """One prediction-powered mean (or a census total): its value, variance, the variance under its
    interval (floored, see the module docstring), the people's judgements it rests on, the λ of
    each unit, the people-only variance of the same judgements (what the model is worth), and what
    the pairs people did not judge in its census strata may still hold (:class:`Unseen`, one per
    census stratum, whose ``ivar`` is part of this one's; none for sampled strata)."""

    value: float
    var: float
    ivar: float
    n: int
    lambdas: dict = field(default_factory=dict)
    var_people: float = math.nan
    unseen: tuple = ()

    @staticmethod
    def undefined(n: int = 0) -> "Part":
        return Part(math.nan, math.nan, math.nan, n)


# ``x.mean()`` and ``x.var()`` cost microseconds of argument handling each, and an estimate takes dozens
# of them on arrays of a few dozen draws: most of its time. For a 1-D float64 array the two below
# make the same sums (``np.add.reduce``, as numpy's own), so the same result to the last bit.
def _mean(x: np.ndarray) -> float:
    """``float(x.mean())``."""
    n = len(x)
    if not n or x.ndim != 1 or x.dtype != np.float64:
        return float(x.mean())
    return float(np.add.reduce(x)) / n


def _var(x: np.ndarray, ddof: int = 1) -> float:
    """``float(x.var(ddof=ddof))``; NaN without more than ``ddof`` values."""
    n = len(x)
    if n <= ddof:
        return math.nan
    if x.ndim != 1 or x.dtype != np.float64:
        return float(x.var(ddof=ddof))
    d = x - np.add.reduce(x) / n
    d *= d
    return float(np.add.reduce(d)) / (n - ddof)


def tuned_lambda(y: np.ndarray, f: np.ndarray) -> float:
    """``Cov(y, f) / Var(f)`` on the labeled draws, clipped to [0, 1]; 0 without two labeled draws
    or when the model's values on them do not vary."""
    if len(y) < 2:
        return 0.0
    vf = _var(f)
    if not vf > 0:
        return 0.0
    c = _cov(y, f)
    return min(max(c / vf, 0.0), 1.0)


def _cov(y: np.ndarray, f: np.ndarray) -> float:
    """``np.cov(y, f, ddof=1)[0, 1]``, by the same operations in the same order (so to the last bit),
    without ``np.cov``'s handling of its many options: a third of what tuning λ cost."""
    x = np.array([y, f], dtype=float)
    x -= x.mean(axis=1)[:, None]
    c = np.dot(x, x.T.conj())
    c *= np.true_divide(1, x.shape[1] - 1)
    return float(c[0, 1])


def ppi_plus_plus_lambda(lam: float, n: int, n_total: int) -> float:
    """Our ``λ`` (the model's weight in the mean of all ``N`` draws) as PPI++ writes it, for an
    unlabeled set of the ``N − n`` draws people did not judge: ``λ_PPI++ = (1 − n/N)·λ``; its
    tuned value ``Cov/((1 + n/(N − n))·Var f)`` is ours, ``Cov/Var f``, times ``1 − n/N``."""
    return (1.0 - n / n_total) * lam


def _floor(y: np.ndarray) -> float:
    """``p̃(1 − p̃)`` of the people's answers ``|y|`` (0/1 up to the label's sign), ``p̃ = (k + ½)/(n + 1)``
    (Jeffreys' half a success and half a failure): a variance that is never 0."""
    p = (float(np.abs(y).sum()) + 0.5) / (len(y) + 1.0)
    return p * (1.0 - p)


#: A residual variance at most this share of the values' mean square is a rounding residue of 0: a
#: λ tuned to 1 − 1e-16 on agreeing answers leaves residuals of 1e-16, and a variance of 1e-33 must
#: not stand in for the floor (it made 23% of a 99% model's Good Merge rate intervals a point).
ROUNDING = 1e-20


def _varies(s2: float, values: np.ndarray) -> bool:
    """Whether a residual variance ``s2`` is one (not NaN, not 0 up to rounding, :data:`ROUNDING`)."""
    return math.isfinite(s2) and s2 > ROUNDING * _mean(values * values) if len(values) else False


def _residual_floor(yl: np.ndarray, fl: np.ndarray, lam: float, fy: float) -> float:
    """The residual's variance under an interval when the residuals on the people's pairs do not
    vary (or there is one): ``(1 − λ)²`` times the people's
    answers' floor, plus ``λ²`` times the Jeffreys variance of the share of people's pairs the model
    got wrong (``|y − f| ≥ ½``): a model that agreed with every people's judgement so far may still
    be wrong on the pairs people did not judge, so the interval never shrinks to a point."""
    k = float((np.abs(yl - fl) >= 0.5).sum())
    d = (k + 0.5) / (len(yl) + 1.0)
    return (1.0 - lam) ** 2 * fy + lam * lam * d * (1.0 - d)


def _clusters(pairs) -> np.ndarray | None:
    """Each labeled draw's pair as its index among the distinct pairs in id order (None: none given,
    every draw its own pair), for :func:`_residual_var`; one per group serves its variances."""
    if pairs is None:
        return None
    # as np.unique(pairs.astype(str), return_inverse=True)[1]: the ids as text, in code-point order
    ids = [str(p) for p in (pairs.tolist() if isinstance(pairs, np.ndarray) else pairs)]
    index = {p: i for i, p in enumerate(sorted(set(ids)))}
    return np.fromiter(map(index.__getitem__, ids), dtype=np.intp, count=len(ids))


def _residual_var(r: np.ndarray, pairs, clusters: np.ndarray | None = None) -> tuple[float, int]:
    """The residual's variance per labeled draw, and the number of people's pairs behind it.

    People judge pairs; a pair drawn twice is two draws with one judgement. The labeled draws are
    then clusters (a simple random sample of pairs), and their mean is a ratio estimate: with
    ``e_p = Σ_{k ∈ p} (r_k − r̄)`` per pair, ``Σ e_p² / (n_p − 1)`` over the ``n_p`` pairs, divided by the
    mean draws per pair squared (one draw per pair: the plain ``s²(r)``). ``clusters``: the pairs'
    :func:`_clusters`, when already known."""
    n = len(r)
    e = r - _mean(r)
    if pairs is None:
        k, tot = n, e
    else:
        inverse = _clusters(pairs) if clusters is None else clusters
        tot = np.bincount(inverse, weights=e)
        k = len(tot)
    if k < 2:
        return math.nan, k
    m = n / k
    return float((tot * tot).sum() / (k - 1)) / (m * m), k


@functools.lru_cache(maxsize=1 << 16)  # the same pairs come back in every unit, estimate and sample
def _fold(pair_id) -> int:
    """A pair's fold (0 or 1) for cross-fitting λ: a hash of its id, independent of every answer."""
    return hashlib.sha256(f"abcde.fold|{pair_id}".encode()).digest()[0] & 1


def folds_of(keys) -> np.ndarray:
    """:func:`_fold` of each of ``keys`` (pair ids, or draw numbers where a draw is its own pair)."""
    return np.fromiter(map(_fold, keys), dtype=np.int8, count=len(keys))


def fold_lambdas(units) -> dict:
    """``{fold: λ}`` pooled over several units (strata, or a design's classes): per fold, the
    regression of the people's values on the model's, each unit's values centred on its own means,
    clipped to [0, 1]. The λ a unit's fold falls back on when the unit's other fold alone cannot
    tune one (fewer than two people's judgements there, or a model that does not vary on them: a
    nearly pure stratum). ``units``: ``(y, f, labeled, pairs)`` per unit (``pairs`` None: draw k is
    pair k), or ``(y, f, labeled, pairs, folds)`` with each draw's :func:`folds_of` ``pairs`` known (None:
    computed). Each fold's λ uses that fold only, so cross-fitting stays unbiased."""
    cov, var = {0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}
    for y, f, labeled, pairs, *known in units:
        labeled = np.asarray(labeled, dtype=bool)
        idx = np.flatnonzero(labeled)
        if not len(idx):
            continue
        if known and known[0] is not None and pairs is not None:
            folds = np.asarray(known[0])[idx]
        else:
            folds = folds_of(np.asarray(pairs, dtype=object)[idx] if pairs is not None else idx)
        yl, fl = np.asarray(y, dtype=float)[idx], np.asarray(f, dtype=float)[idx]
        for k in (0, 1):
            m = folds == k
            if m.sum() >= 2:
                yc, fc = yl[m] - _mean(yl[m]), fl[m] - _mean(fl[m])
                cov[k] += float((yc * fc).sum())
                var[k] += float((fc * fc).sum())
    return {k: (min(max(cov[k] / var[k], 0.0), 1.0) if var[k] > 0 else 0.0) for k in (0, 1)}


def _other_lambda(y, f, other, fallback, k) -> float:
    """The λ for fold ``k``: tuned on the other fold's draws ``other``, else the pooled λ of the
    other fold (``fallback``, :func:`fold_lambdas`), else 0."""
    if len(other) >= 2:
        fo = f[other]
        if _var(fo, 0) > 0:
            return tuned_lambda(y[other], fo)
    return float(fallback.get(1 - k, 0.0)) if fallback else 0.0


def _cross_fitted(y: np.ndarray, f: np.ndarray, in_g: np.ndarray, labeled: np.ndarray, folds: np.ndarray,
                  fallback: dict | None = None):
    """The cross-fitted estimate of one group: its draws split in two folds by a hash of their pair;
    each fold's people's draws are corrected with the λ tuned on the other fold, against the model's
    mean over the fold's own draws (``N_k`` of the group's ``N_g``), and the folds add up by their
    shares::

        θ̂ = Σ_k (N_k/N_g) · (mean_{L_k}(y) + λ_{−k} · (mean_{g,k}(f) − mean_{L_k}(f)))

    A fold's people's draws are a simple random sample of that fold's draws, whatever the folds
    are, so each term is unbiased whatever λ_{−k} is: the estimate is unbiased, even though λ is
    tuned on the data (a λ tuned on the same draws it corrects is not: it would give the model no
    weight exactly when the people's pairs miss a stratum's few "different" ones). The folds are a
    hash of the pair, so where the same pairs come back in every sample (a small stratum) they are
    the same two sets each time: taking a fold's people's draws as a sample of the whole group
    (weighted by their count, as before) was then biased. A fold without people's draws: the group
    as one, as before. Returns the estimate and each labeled draw's λ."""
    L = in_g & labeled
    n = int(L.sum())
    theta, lam_of = 0.0, np.zeros(n)
    idx = np.flatnonzero(L)
    fl = folds[idx]
    own = [in_g & (folds == k) for k in (0, 1)]  # each fold's draws of the group
    whole = all((fl == k).any() for k in (0, 1) if own[k].any())
    for k in (0, 1):
        in_k = fl == k
        mine, other = idx[in_k], idx[~in_k]
        if not len(mine):
            continue
        lk = _other_lambda(y, f, other, fallback, k)
        if whole:  # fold k's people's draws are a sample of fold k's draws: its own mean, by its share
            theta += own[k].sum() / in_g.sum() * (_mean(y[mine]) + lk * (_mean(f[own[k]]) - _mean(f[mine])))
        else:
            rest = in_g.copy()
            rest[other] = False
            c = _mean(f[rest])
            theta += len(mine) / n * (_mean(y[mine]) + lk * (c - _mean(f[mine])))
        lam_of[in_k] = lk
    return theta, lam_of


def _group_masks(groups: np.ndarray) -> dict:
    """``{group: its draws}`` (``groups == group``), in the order the groups first appear: one
    comparison of each draw's group in all (a unit is one group, or a few cells)."""
    keys = groups.tolist()
    order = dict.fromkeys(keys)
    if len(order) == 1:  # every draw's group is g (unless g is a NaN, which equals none)
        g = next(iter(order))
        return {g: np.ones(len(keys), dtype=bool) if g == g else groups == g}  # noqa: PLR0124
    code = {g: i for i, g in enumerate(order)}
    codes = np.fromiter(map(code.__getitem__, keys), dtype=np.intp, count=len(keys))
    return {g: codes == i for g, i in code.items()}


def ppi_mean(groups, y, f, labeled, *, lam=None, pairs=None, population: bool = False,
             fallback: dict | None = None, floor_each: bool = True, folds: np.ndarray | None = None) -> Part:
    """The prediction-powered mean of ``y`` over all draws, post-stratified by ``groups`` (one group:
    the plain mean).

    ``y``: the people's value per draw (read only where ``labeled``); ``f``: the model's value per
    draw (every draw); ``lam``: None (tuned per group, cross-fitted: :func:`_cross_fitted`), a number
    or ``{group: λ}`` (fixed: ``λ·mean(f) + mean_L(y − λ·f)``); ``pairs``: each draw's pair id, when a
    pair can be drawn more than once (the people's tasks are then a random sample of pairs, see
    :func:`_residual_var`; also the folds); ``population``: the "draws" are every pair of a census
    stratum, listed once, so only the people's subsample varies (no first-phase variance);
    ``fallback``: ``{fold: λ}`` pooled over other units (:func:`fold_lambdas`; default: over this
    call's groups) for a group whose other fold cannot tune λ; ``floor_each``: the interval's
    variance is floored group by group (see the module docstring); False (groups are cells of one
    unit, :func:`plan_by_answers`): only when nothing varies, neither within a cell nor between the
    cells' means, and then as one sample of the unit: a cell the model called right is often pure,
    and flooring each such cell widened the intervals far beyond what the spread over seeds shows
    (98–99% coverage). ``folds``: the draws' folds (:func:`folds_of` of ``pairs``), where the caller
    has them already."""
    groups = groups if isinstance(groups, np.ndarray) else np.asarray(groups, dtype=object)
    pairs = None if pairs is None else np.asarray(pairs, dtype=object)
    y, f, labeled = np.asarray(y, dtype=float), np.asarray(f, dtype=float), np.asarray(labeled, dtype=bool)
    N = len(groups)
    if N == 0:
        return Part.undefined()
    if lam is None and folds is None:
        folds = folds_of(pairs if pairs is not None else range(N))
    value, var2, ivar2, var0, n_all = 0.0, 0.0, 0.0, 0.0, 0
    within, iwithin, means, lambdas = 0.0, 0.0, {}, {}
    masks = _group_masks(groups)
    if lam is None and fallback is None:
        fallback = fold_lambdas([(y, f, labeled & in_g, pairs) for in_g in masks.values()
                                 if not labeled[in_g].all()])  # not the self pairs, known exactly
    for g, in_g in masks.items():
        Ng, L = int(in_g.sum()), in_g & labeled
        yl, fl = y[L], f[L]
        n = len(yl)
        if n == 0:
            return Part.undefined(n_all)
        if lam is None:
            theta, lam_of = _cross_fitted(y, f, in_g, labeled, folds, fallback)
            lambdas[g] = tuned_lambda(yl, fl)  # shown; each fold used the other's
        else:
            lg = lam.get(g, 0.0) if isinstance(lam, dict) else float(lam)
            lam_of = np.full(n, lg)
            theta = lg * _mean(f[in_g]) + _mean(yl - lg * fl)
            lambdas[g] = lg
        r = yl - lam_of * fl
        share = Ng / N
        value += share * theta
        means[g] = (share, theta)
        gp = None if pairs is None else pairs[L]
        clusters = _clusters(gp)
        s2r, k = _residual_var(r, gp, clusters)
        s2y0, _ = _residual_var(yl, gp, clusters)
        s2y = _var(yl)
        n_pairs = len(set(pairs[in_g].tolist())) if pairs is not None else Ng  # the group's distinct pairs
        if not math.isfinite(s2y) and n_pairs == 1:
            s2y = 0.0  # one pair drawn (once or more): its draws do not vary
        # the share of the group's pairs (draws, when every pair is drawn once) people judged
        fpc = 1.0 - (k / n_pairs if pairs is not None else n / Ng)
        var2 += share * share * fpc * s2r / k if fpc > 0 else 0.0
        var0 += share * share * fpc * s2y0 / k if fpc > 0 else 0.0
        fy = max(s2y if math.isfinite(s2y) else 0.0, _floor(yl))
        # A residual that does not vary on the people's pairs: (1 − λ)² of the answers' floor; the
        # model's own error share counts only where nothing else gives the interval width (a census).
        lbar = _mean(lam_of)
        fr = s2r if _varies(s2r, np.concatenate([yl, fl])) else (
            _residual_floor(yl, fl, lbar, fy) if population else (1.0 - lbar) ** 2 * fy)
        ivar2 += share * share * fpc * fr / k if fpc > 0 else 0.0
        within += share * s2y
        iwithin += share * fy
        n_all += n
    between = 0.0 if population else sum(s * (t - value) ** 2 for s, t in means.values())
    if not floor_each:
        if var2 + within + between > 0:  # the data vary somewhere: no floor
            ivar2, iwithin = var2, within
        else:  # nothing varies: the floor of the unit's people's values as one sample (not cell by cell)
            yl_all = y[labeled]
            fu = _floor(yl_all)
            ivar2 = max(1.0 - n_all / N, 0.0) * fu / max(n_all, 1)
            iwithin = fu
    if population:
        return Part(value, var2, ivar2, n_all, lambdas, var0)
    var1, ivar1 = (within + between) / N, (iwithin + between) / N
    return Part(value, var1 + var2, ivar1 + ivar2, n_all, lambdas, var1 + var0)


def ppi_census_total(w, y, f, labeled, *, lam=None, answers=None, pairs=None, fallback: dict | None = None,
                     coef=None) -> Part:
    """``Σ w·y`` over a census stratum (every pair once, with its pair weight ``w``; the people's
    pairs a simple random sample of them), as the people-only estimate makes it (the people's
    pairs' weighted mean times ``W = Σ w``) with the model's part added::

        T̂ = λ·Σ w·f + W · Σ_L w·(y − λ·f) / Σ_L w

    (every pair labeled: the exact total). λ tuned is cross-fitted (each fold of the people's pairs
    uses the other's, :func:`_cross_fitted`). The folds split the pairs by a hash of their id, so in a
    census they are the same two sets of pairs in every sample, and fold k's people's pairs are a
    sample of fold k's pairs only: each fold estimates its own total, ``λ_{−k}·Σ_k w·f + W_k ·
    Σ_{L,k} w·(y − λ_{−k}·f) / Σ_{L,k} w``, and the folds add up (taking each fold's people's pairs as
    standing for the whole stratum, as before, was biased wherever the folds' shares differ and their
    λ did: by 16% of a Good Split rate in one simulated world). Variance of the ratio estimate under simple random
    sampling of the ``P`` pairs: ``P²·(1 − n/P)/n · s²(w·(r − R̂))/w̄²·(W/P)²``; the interval's floor
    is the people's answers' (``answers``: their 0/1, default ``|y|``) Jeffreys variance.

    ``coef``: what a "same" adds to ``y`` per pair (``y = coef·same``, ``f = coef·model``; default 1):
    the pairs people did not judge are bounded by the model's answers and the people's counts
    (:class:`Unseen`), for the interval."""
    w, y, f = np.asarray(w, dtype=float), np.nan_to_num(np.asarray(y, dtype=float)), np.asarray(f, dtype=float)
    labeled = np.asarray(labeled, dtype=bool)
    P = len(w)
    if P == 0:
        return Part(0.0, 0.0, 0.0, 0, {}, 0.0)
    idx = np.flatnonzero(labeled)
    n = len(idx)
    if n == 0:
        return Part.undefined()
    W, F = float(w.sum()), float((w * f).sum())
    if lam is None:
        every = folds_of(pairs if pairs is not None else range(P))
        folds = every[idx]
        lam_of = np.zeros(n)
        value = 0.0
        whole = all((folds == k).any() for k in (0, 1) if (every == k).any())
        for k in (0, 1):
            mine, other = idx[folds == k], idx[folds != k]
            if not len(mine):
                continue
            lk = _other_lambda(y, f, other, fallback, k)
            lam_of[folds == k] = lk
            r = y[mine] - lk * f[mine]
            if whole:  # fold k's people's pairs are a sample of fold k's pairs: its own total
                fk = every == k
                value += lk * float((w[fk] * f[fk]).sum()) + float(w[fk].sum()) * float(
                    (w[mine] * r).sum() / w[mine].sum())
            else:  # a fold without people's pairs: the stratum as one (λ then near the other fold's)
                value += len(mine) / n * (lk * F + W * float((w[mine] * r).sum() / w[mine].sum()))
        shown = tuned_lambda(y[idx], f[idx])
    else:
        lam_of = np.full(n, float(lam))
        r = y[idx] - lam_of * f[idx]
        value = float(lam) * F + W * float((w[idx] * r).sum() / w[idx].sum())
        shown = float(lam)
    if n == P:
        return Part(float((w * y).sum()), 0.0, 0.0, n, {"census": shown}, 0.0)
    wl = w[idx]
    fpc = 1.0 - n / P
    scale = P * P * fpc / n * (W / P / _mean(wl)) ** 2

    def s2(v):
        R = float((wl * v).sum() / wl.sum())
        d = wl * (v - R)
        return float((d * d).sum() / (n - 1)) if n > 1 else math.nan

    r = y[idx] - lam_of * f[idx]
    if answers is not None:
        a = np.abs(np.asarray(answers, dtype=float))[idx]
    else:
        c = np.ones(P) if coef is None else np.asarray(coef, dtype=float)
        a = np.abs(y / np.where(c != 0, c, 1.0))[idx]
    lbar = _mean(lam_of)
    floor = _residual_floor(y[idx], f[idx], lbar, _floor(a)) * _mean(wl * wl)
    s2r, s2y = s2(r), s2(y[idx])
    ivar_r = s2r if _varies(s2r, np.concatenate([wl * y[idx], wl * f[idx]])) else floor
    ivar = scale * ivar_r
    return Part(value, scale * s2r, ivar, n, {"census": shown}, scale * s2y, (_unseen(w, f, labeled, a, coef, ivar),))


def _unseen(w, f, labeled, same_seen, coef, ivar: float) -> Unseen:
    """:class:`Unseen` of a census stratum: its pairs (those a "same" adds to, ``coef ≠ 0``) grouped by
    the model's answer (``f/coef``: 1, 0, ½; any other value one group), per group the pairs, the
    people's pairs, their "same" (``same_seen``, on the labeled pairs in order) and the unseen pairs'
    ``w·coef``."""
    c = np.ones(len(w)) if coef is None else np.asarray(coef, dtype=float)
    live = c != 0
    m = np.where(live, f / np.where(live, c, 1.0), 0.0)
    same = np.zeros(len(w))
    same[np.flatnonzero(labeled)] = same_seen
    wc = w * c
    groups = []
    close = {g: _isclose(m, g) for g in (1.0, 0.0, MODEL_MISSING)}
    for g in (1.0, 0.0, MODEL_MISSING):
        G = live & close[g]
        if not G.any():
            continue
        seen = G & labeled
        groups.append((int(G.sum()), int(seen.sum()), int(round(float(same[seen].sum()))),
                       tuple(wc[G & ~labeled].tolist())))
    rest = live & ~close[1.0] & ~close[0.0] & ~close[MODEL_MISSING]
    if rest.any():  # a model value of another kind (not from model_value): one group of its own
        seen = rest & labeled
        groups.append((int(rest.sum()), int(seen.sum()), int(round(float(same[seen].sum()))),
                       tuple(wc[rest & ~labeled].tolist())))
    return Unseen(tuple(groups), ivar)


def _isclose(x: np.ndarray, g: float) -> np.ndarray:
    """``np.isclose(x, g)`` for a finite number ``g``: its formula (default tolerances), without its checks."""
    return (np.abs(x - g) <= 1e-08 + 1e-05 * abs(g)) | (x == g)


# ---------------------------------------------------------------------------------- judgements
def model_value(answer: str | None) -> float:
    """The model's share "same" for one pair: 1, 0, or :data:`MODEL_MISSING` (unsure, failed, none)."""
    return 1.0 if answer == "same" else 0.0 if answer == "different" else MODEL_MISSING


def agreement(people: dict, model: dict, pair_ids) -> tuple[int, int]:
    """``(pairs both judged same/different, of which they disagree on)``."""
    both = dis = 0
    for p in pair_ids:
        a, b = people.get(p), model.get(p)
        if a in ("same", "different") and b in ("same", "different"):
            both += 1
            dis += a != b
    return both, dis
