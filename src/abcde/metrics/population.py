"""Population estimates from a sample of entities (no Ibis: numbers in, numbers out): the Hájek
ratio of entity totals, its linearised variance under the design (a simple random sample without
replacement with its finite-population correction, or Poisson), the effective number of entities
and degrees of freedom, and 95% intervals (Precision and Recall: the gamma interval of their missing
mass; their differences: the gains' and losses' by MOVER; F1: the logit scale), for one clustering and
for the paired difference of two. The definitions, the designs and where the intervals hold:
:mod:`abcde.metrics.truth_sample`, which computes the entity totals these read (Ibis).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from abcde.core.names import FEW_ENTITIES
from abcde.errors import InputError

#: ``truth_sample="uniform"``: a simple random sample of entities without replacement.
UNIFORM = "uniform"
#: What every row of :attr:`TruthSampleResult.slices` holds besides its slice columns' values.
SLICE_FIELDS = ("entities", "items", "weight", "estimates")
METRICS = ("precision", "recall", "f1")
#: How F1 and the intervals are made (carried in the JSON, so a reader of it knows).
F1_METHOD = ("harmonic mean of the estimated population Precision and Recall, 2PR/(P+R); its standard error "
             "by the delta method on the linearised Precision and Recall")
INTERVAL_METHOD = ("95% interval. Precision and Recall: Fay and Feuer's gamma interval of the missing mass 1 − value "
                   "(a weighted sum of entities' losses, the sampled part with its design variance, the entities "
                   "certain to be sampled fixed), inside [0, 1]; their differences: the gains and the losses "
                   "between the two clusterings each by that interval, combined by MOVER with their correlation; "
                   "F1: the logit scale, Student t on the variance's effective degrees of freedom "
                   "min(n−1, max(1, (Σc_k)²/Σc_k²)), ΔF1 from its two sides' by MOVER; a point at a census")
METHODS = {"uniform": "hajek_srswor", "poisson": "hajek_poisson"}
DESCRIPTIONS = {"uniform": "simple random sample of entities without replacement",
                "poisson": "independent (Poisson) inclusion of entities with the given probabilities"}
TRUTH_SAMPLE_HINT = ("truth_sample is 'uniform' (a simple random sample of entities) or the name of a column of the "
                     "truth holding each listed entity's inclusion probability")


def relative_weights(pi) -> np.ndarray:
    """Each entity's design weight ``1/π_k`` relative to the largest, ``min π / π_k`` (in (0, 1]): the
    Hájek ratios and their variances are the same for any common scale of the weights, and at this
    scale no weight overflows, however small an inclusion probability (1e-300, or 5e-324, whose
    ``1/π`` is beyond a double)."""
    pi = np.asarray(pi, dtype=float)
    return float(pi.min()) / pi if pi.size else pi


def hajek_ratio(a, b, pi) -> tuple[float, np.ndarray]:
    """``R̂ = Σ a_k/π_k / Σ b_k/π_k`` and each entity's weighted linearised residual
    ``u_k = (a_k − R̂·b_k)/π_k / Σ b/π`` (``z_k/π_k`` for the residual ``z_k``; NaN and NaNs when the
    denominator is 0), computed from :func:`relative_weights`, so free of the weights' scale."""
    a, b, pi = (np.asarray(x, dtype=float) for x in (a, b, pi))
    w = relative_weights(pi)
    bh = float(np.sum(b * w))
    if not bh > 0:
        return math.nan, np.full(a.shape, math.nan)
    r = float(np.sum(a * w)) / bh
    return r, w * (a - r * b) / bh


def variance_contributions(u, pi, *, design: str, population_entities: float | None = None) -> np.ndarray:
    """Each sampled entity's share ``c_k`` of the design variance ``V̂ = Σ c_k`` of a linearised
    estimator (``u`` from :func:`hajek_ratio`, ``u_k = z_k/π_k``): ``"uniform"`` (``π_k = n/N``),
    ``c_k = n(1 − n/N) · (u_k − ū)²/(n − 1)``, which is ``N²(1 − n/N)/n · (z_k − z̄)²/(n − 1)``;
    ``"poisson"``, ``c_k = (1 − π_k) · u_k²``, which is ``(1 − π_k)/π_k² · z_k²`` (``N = population_entities``).
    Neither forms ``N²`` or ``1/π²``, so an extreme design (N = 1e160, π = 1e-300) does not overflow.
    All 0 at a census (``n ≥ N``; every ``π_k = 1``); NaN when the variance cannot be estimated (one
    entity, not a census)."""
    u, pi = np.asarray(u, dtype=float), np.asarray(pi, dtype=float)
    n = u.size
    if design == UNIFORM:
        N = float(population_entities)
        if n >= N:
            return np.zeros(n)
        if n < 2:
            return np.full(n, math.nan)
        d = u - u.mean()
        return n * (1.0 - n / N) * (d * d) / (n - 1)
    if design == "poisson":
        if np.all(pi == 1.0):
            return np.zeros(n)
        if n < 2:
            return np.full(n, math.nan)
        return (1.0 - pi) * u * u
    raise InputError(f"Unknown design {design!r}: 'uniform' or 'poisson'.")


def design_variance(u, pi, *, design: str, population_entities: float | None = None) -> float:
    """The variance ``V̂ = Σ c_k`` of a linearised estimator under the design, from its weighted
    residuals ``u`` (:func:`variance_contributions`): uniform ``N²(1 − n/N)/n · s²_z``, Poisson
    ``Σ (1 − π_k)/π_k² · z_k²``."""
    return float(np.sum(variance_contributions(u, pi, design=design, population_entities=population_entities)))


def effective_entities(contributions) -> float:
    """``(Σ c_k)² / Σ c_k²``: about how many entities the variance rests on (NaN when it is 0), and
    the intervals' degrees of freedom (:func:`degrees_of_freedom`). Below :data:`FEW_ENTITIES` the
    sampling distribution is far from normal (a few entities decide the estimate): the interval is
    wider, and its coverage depends on whether the sample holds the few entities that matter (see
    the module)."""
    c = np.asarray(contributions, dtype=float)
    sq = float(np.sum(c * c))
    return float(np.sum(c)) ** 2 / sq if sq > 0 else math.nan




def bounded_interval(value: float, se: float, bounds: tuple[float, float]):
    """A function of the quantile ``q`` giving the logit-scale interval of ``value`` (standard error
    ``se``) inside ``bounds``: ``value`` mapped to (0, 1), ``expit(logit u ± q·se_u/(u(1 − u)))``,
    mapped back. A point when ``se`` is 0 or ``value`` is at an end of ``bounds``."""
    lo_b, hi_b = bounds
    span = hi_b - lo_b

    def of(q: float) -> tuple[float, float]:
        if not (math.isfinite(value) and math.isfinite(se)):
            return (math.nan, math.nan)
        if se == 0 or value <= lo_b or value >= hi_b:
            return (value, value)
        u = (value - lo_b) / span
        centre, half = math.log(u / (1.0 - u)), q * (se / span) / (u * (1.0 - u))
        return (lo_b + span * _expit(centre - half), lo_b + span * _expit(centre + half))

    return of


def _sides_mover(first: PopulationEstimate, second: PopulationEstimate, r: float, level: float) -> tuple[float, float]:
    """ΔF1's interval: MOVER from its two sides' own intervals (:func:`mover_interval`)."""
    return mover_interval(first.value, first.confidence_interval(level), second.value,
                          second.confidence_interval(level), r)


def mover_interval(v1: float, ci1: tuple, v2: float, ci2: tuple, r: float,
                   bounds: tuple[float, float] = (-1.0, 1.0)) -> tuple[float, float]:
    """The interval of ``Δ = v2 − v1`` from the two estimates' own intervals ``ci1``, ``ci2`` and their
    correlation ``r`` (MOVER, the method of variance estimates recovery: Newcombe 1998's paired form,
    Zou & Donner 2008)::

        L = Δ − √((v2 − l2)² − 2r·(v2 − l2)(u1 − v1) + (u1 − v1)²)
        U = Δ + √((u2 − v2)² − 2r·(u2 − v2)(v1 − l1) + (v1 − l1)²)

    With symmetric intervals it is the Wald interval of the difference; with skewed ones (a share near
    0 or 1, the logit scale's) the skew carries over, where a symmetric interval of the difference
    misses on the side the sides lean to. Holds ``Δ``; inside ``bounds``.

    >>> [round(x, 4) for x in mover_interval(0.5, (0.4, 0.6), 0.7, (0.6, 0.8), 0.0)]
    [0.0586, 0.3414]
    """
    (l1, u1), (l2, u2) = ci1, ci2
    d = v2 - v1
    a, b = v2 - l2, u1 - v1
    lo = d - math.sqrt(max(a * a - 2.0 * r * a * b + b * b, 0.0))
    a, b = u2 - v2, v1 - l1
    hi = d + math.sqrt(max(a * a - 2.0 * r * a * b + b * b, 0.0))
    return max(lo, bounds[0]), min(hi, bounds[1])


@dataclass(frozen=True)
class MassInterval:
    """Fay and Feuer's gamma interval of a non-negative mass estimated as a weighted sum over sampled
    entities (here a share of the population's weight: the weight Precision or Recall misses, or the
    gains or losses between two clusterings): ``fixed`` from entities certain to be sampled (π = 1,
    no variance), ``random`` from the others, with design variance ``var``; ``largest`` the largest
    single sampled entity's part of ``random``. At level ``1 − α``::

        lower = fixed + Gamma(shape y²/v, scale v/y).ppf(α/2)
        upper = fixed + Gamma(shape (y + w)²/(v + w²), scale (v + w²)/(y + w)).ppf(1 − α/2)

    (``y`` random, ``v`` var, ``w`` largest): the gamma with the estimate's mean and variance below,
    and above one more entity's worth of mass, as if one more like the largest seen had been missed
    (Fay & Feuer, "Confidence intervals for directly standardized rates: a method based on the gamma
    distribution", Statistics in Medicine 16, 1997; there the weights are known in advance, here the
    variance is the design's and ``w`` the largest seen). A point when nothing random was seen.

    Rare losses, a few entities holding them (FEBRL 3's 18 of 2,000 entities hold all of Exp's
    precision loss), make the mass's sampling distribution a lumpy sum of a few counts: symmetric
    intervals miss above, where a sample of few losses has a small variance, and Student t on few
    degrees of freedom is far too wide; the gamma leans as the sum does.

    >>> [round(x, 5) for x in MassInterval(0.0, 0.01, 1e-5, 0.004).interval(0.95)]
    [0.0048, 0.02562]
    """

    fixed: float
    random: float
    var: float
    largest: float
    weight: float = 0.0  # the population's weight share estimated from sampled entities (π < 1) ...
    entities: float = math.nan  # ... and their effective number (Kish, by design weight × entity weight)

    def zero_events(self, level: float) -> float:
        """How much mass the entities not sampled may hold when the sample shows none (or no spread):
        the sampled part's weight times Clopper–Pearson's upper bound for 0 events in its effective
        number of entities, ``1 − (α/2)^(1/n)`` (about 3.7/n at 95%; the rule of three's 3/n is its
        one-sided 95% form). 0 at a census."""
        n = self.entities
        if not (self.weight > 0 and math.isfinite(n) and n > 0):
            return 0.0
        return self.weight * (1.0 - ((1.0 - level) / 2.0) ** (1.0 / max(n, 1.0)))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        y, v, w = self.random, self.var, self.largest
        if not (y > 0 and v > 0 and math.isfinite(v)):
            # Nothing seen, or no spread seen: a point only at a census; else what the entities not
            # sampled may hold, from the design (zero events), around what the sample shows.
            z = self.zero_events(level)
            return (self.fixed + max(y - z, 0.0) if y > 0 else self.fixed, self.fixed + y + z)
        from scipy.stats import gamma

        a = (1.0 - level) / 2.0
        lo = float(gamma.ppf(a, y * y / v, scale=v / y))
        hi = float(gamma.ppf(1.0 - a, (y + w) ** 2 / (v + w * w), scale=(v + w * w) / (y + w)))
        return (self.fixed + lo, self.fixed + hi)


#: Entity totals within this share of an entity's weight are equal (floating-point noise, not a loss).
NOISE = 1e-12


def mass_estimate(part, b, pi, *, design: str, population_entities: float) -> tuple[float, MassInterval, np.ndarray]:
    """A mass ``Σ part_k/π_k / Σ b_k/π_k`` (``part ≥ 0`` per entity), its :class:`MassInterval` and its
    weighted linearised residuals ``u_k = (part_k − value·b_k)/π_k / Σ b/π`` (Hájek, as
    :func:`hajek_ratio`, free of the weights' scale)."""
    part, b, pi = (np.asarray(x, dtype=float) for x in (part, b, pi))
    part = np.where(part > NOISE * np.abs(b), part, 0.0)
    w = relative_weights(pi)
    bh = float(np.sum(b * w))
    share = part * w / bh
    value = float(share.sum())
    u = w * (part - value * b) / bh
    var = design_variance(u, pi, design=design, population_entities=population_entities)
    sampled = pi < 1.0
    bw = b * w / bh  # each entity's estimated share of the population's weight
    sw, sw2 = float(bw[sampled].sum()), float((bw[sampled] ** 2).sum())
    return value, MassInterval(float(share[~sampled].sum()), float(share[sampled].sum()), var,
                               float(share[sampled].max()) if sampled.any() else 0.0,
                               weight=sw, entities=sw * sw / sw2 if sw2 > 0 else math.nan), u


def side_interval(missing: MassInterval):
    """A metric's interval from its missing mass's (Precision, Recall: ``1 − value``)."""

    def of(level: float) -> tuple[float, float]:
        lo, hi = missing.interval(level)
        return (1.0 - hi, 1.0 - lo)

    return of


def gains_losses_interval(gains: MassInterval, gain: float, losses: MassInterval, loss: float, r: float):
    """A difference ``gain − loss``'s interval from the two masses' own (:class:`MassInterval`) by
    MOVER with their correlation ``r`` (:func:`mover_interval`: gains as the second, losses as the
    first)."""

    def of(level: float) -> tuple[float, float]:
        return mover_interval(loss, losses.interval(level), gain, gains.interval(level), r)

    return of


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def degrees_of_freedom(entities: int, effective: float = math.nan) -> float:
    """The intervals' degrees of freedom: ``min(n − 1, max(1, effective))`` with ``effective`` the
    variance's effective number of entities ``(Σ c_k)²/Σ c_k²`` (:func:`effective_entities`,
    Satterthwaite's degrees of freedom for a sum of one-degree-of-freedom pieces); ``n − 1`` when it
    is undefined (NaN: a zero variance); NaN with fewer than two entities.

    >>> degrees_of_freedom(500, 3.2), degrees_of_freedom(500, 0.4), degrees_of_freedom(10, 30.0)
    (3.2, 1.0, 9.0)
    """
    if entities < 2:
        return math.nan
    if not math.isfinite(effective):
        return float(entities - 1)
    return min(float(entities - 1), max(1.0, float(effective)))


def quantile(entities: int, confidence_level: float = 0.95, effective: float = math.nan) -> float:
    """The two-sided quantile of every interval: Student t on :func:`degrees_of_freedom` (``n − 1``
    when ``effective`` is not given; the normal quantile with fewer than two entities).

    >>> round(quantile(500), 4), round(quantile(500, effective=3.0), 4), round(quantile(1), 4)
    (1.9647, 3.1824, 1.96)
    """
    from scipy.stats import norm, t

    p = 0.5 + confidence_level / 2
    df = degrees_of_freedom(entities, effective)
    return float(t.ppf(p, df)) if math.isfinite(df) else float(norm.ppf(p))


@dataclass(frozen=True)
class PopulationEstimate:
    """One population metric estimated from a truth sample.

    Attributes
    ----------
    metric
        ``precision``, ``recall``, ``f1``, ``delta_precision``, ``delta_recall`` or ``delta_f1``.
    value, standard_error
        The estimate and its linearised standard error (NaN when undefined: ``note`` says why).
    entities
        The sampled entities it rests on (``n``).
    method
        ``hajek_srswor`` or ``hajek_poisson``.
    bounds
        The metric's range, ``(0, 1)`` or ``(−1, 1)``: the interval lies inside it.
    exact
        The truth is a census: the value is the population's, with standard error 0.
    effective_entities
        ``(Σ c_k)²/Σ c_k²`` of the entities' variance contributions (:func:`effective_entities`): the
        interval's degrees of freedom (:attr:`degrees_of_freedom`).
    note
        Why it is undefined, or that its variance rests on few entities.
    interval_of
        The interval's own rule, a function of the confidence level (Precision and Recall: the gamma
        interval of their missing mass, :class:`MassInterval`; a difference: MOVER), or None (the
        logit scale, Student t on :attr:`degrees_of_freedom`).
    correlation
        A difference's: the correlation of the two parts its interval combines (NaN otherwise).
    """

    metric: str
    value: float
    standard_error: float
    entities: int
    method: str
    bounds: tuple[float, float]
    exact: bool = False
    effective_entities: float = math.nan
    note: str = ""
    interval_of: object = field(default=None, repr=False, compare=False)
    correlation: float = math.nan

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)

    @property
    def degrees_of_freedom(self) -> float:
        """Student t's degrees of freedom of the interval: ``min(n − 1, max(1, effective_entities))``
        (``n − 1`` when ``effective_entities`` is NaN; :func:`degrees_of_freedom`). NaN for a
        metric whose interval has its own rule (:attr:`interval_of`)."""
        if self.interval_of is not None:
            return math.nan
        return degrees_of_freedom(self.entities, self.effective_entities)

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """The logit-scale interval (:func:`bounded_interval`) with Student t's quantile on
        :attr:`degrees_of_freedom`, or the metric's own rule (:attr:`interval_of`); NaN ends when
        undefined."""
        if not 0 < confidence_level < 1:
            raise InputError(f"The 'confidence_level' parameter of confidence_interval must be in (0, 1). "
                             f"Got {confidence_level} instead.")
        if self.interval_of is not None:
            if not (self.defined and math.isfinite(self.standard_error)):
                return (math.nan, math.nan)
            if self.standard_error == 0 and self.exact:  # a census: a point
                return (self.value, self.value)
            lo, hi = self.interval_of(confidence_level)
            return (max(min(lo, self.value), self.bounds[0]), min(max(hi, self.value), self.bounds[1]))
        q = quantile(self.entities, confidence_level, self.effective_entities)
        return bounded_interval(self.value, self.standard_error, self.bounds)(q)

    def to_dict(self) -> dict:
        lo, hi = self.confidence_interval()

        def num(x):
            return x if math.isfinite(x) else None

        d = {"estimate": num(self.value), "std_err": num(self.standard_error), "ci_low": num(lo),
             "ci_high": num(hi), "entities": self.entities, "method": self.method,
             "range": [self.bounds[0], self.bounds[1]], "exact": self.exact,
             "effective_entities": num(self.effective_entities),
             "degrees_of_freedom": num(self.degrees_of_freedom) if self.defined else None}
        if math.isfinite(self.correlation):
            d["correlation"] = self.correlation
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Linearised:
    """An estimate and its per-entity linearised residuals (the estimator's Taylor linearisation),
    each divided by its entity's inclusion probability at a common scale (``u_k`` of :func:`hajek_ratio`)."""

    value: float
    z: np.ndarray


def _f1_from_sides(p: PopulationEstimate, r: PopulationEstimate, level: float) -> tuple[float, float]:
    """F1's interval from its sides' (F1 rises with each): F1 of the lower ends to F1 of the upper."""
    (pl, ph), (rl, rh) = p.confidence_interval(level), r.confidence_interval(level)

    def f(a, b):
        return 2 * a * b / (a + b) if a + b > 0 else 0.0

    return f(pl, rl), f(ph, rh)


def f1_linearised(p: Linearised, r: Linearised) -> Linearised:
    """``F = 2PR/(P + R)`` and ``z_F = ∂F/∂P·z_P + ∂F/∂R·z_R`` (the delta method)."""
    s = p.value + r.value
    if not (math.isfinite(s) and s > 0):
        return Linearised(0.0 if s == 0 else math.nan, np.zeros_like(p.z) if s == 0 else np.full_like(p.z, math.nan))
    return Linearised(2 * p.value * r.value / s,
                      2 * r.value ** 2 / s ** 2 * p.z + 2 * p.value ** 2 / s ** 2 * r.z)


@dataclass(frozen=True)
class PopulationEstimates:
    """What :func:`estimate_population` returns: ``sides[side][metric]`` and, for two sides,
    ``deltas[delta_metric]`` (the second side minus the first), each a :class:`PopulationEstimate`."""

    sides: dict[str, dict[str, PopulationEstimate]]
    deltas: dict[str, PopulationEstimate]
    design: str
    population_entities: float
    census: bool


def estimate_population(
    weight,
    sums: Mapping[str, tuple],
    *,
    inclusion=None,
    population_entities: float | None = None,
) -> PopulationEstimates:
    """The population's Precision, Recall and F1 (and, for two clusterings, their paired differences)
    from the totals of the sampled entities.

    Pure numpy: what :func:`estimate_pointwise` computes after the engine returned the entity totals,
    and what simulations call per sample.

    Parameters
    ----------
    weight
        ``B_k``: each sampled entity's weight (the same for every clustering).
    sums
        ``{side: (A^P_k, A^R_k)}``: per sampled entity, ``Σ w_j·Precision(j)`` and ``Σ w_j·Recall(j)``
        over its items. One side, or two (Base then Exp: the deltas are Exp − Base).
    inclusion
        ``π_k`` of each sampled entity under independent (Poisson) inclusion; ``None``: a simple
        random sample of ``population_entities`` entities without replacement.
    population_entities
        ``N`` (needed by the uniform design; ignored with ``inclusion``).
    """
    b = np.asarray(weight, dtype=float)
    n = b.size
    if inclusion is None:
        design = UNIFORM
        if population_entities is None:
            raise InputError("A simple random sample of entities needs the number of entities in the population "
                             "(population_entities).")
        N = float(population_entities)
        if not (math.isfinite(N) and N >= n):
            raise InputError(f"population_entities must be at least the {n:,} entities the truth lists. Got {N!r}.")
        pi = np.full(n, n / N)
        census = n >= N
    else:
        design = "poisson"
        pi = np.asarray(inclusion, dtype=float)
        if pi.shape != b.shape:
            raise InputError(f"inclusion has {pi.size} values for {n} entities.")
        with np.errstate(divide="ignore", over="ignore"):
            N = float(np.sum(1.0 / pi))  # beyond a double (π below ~1e-308): inf, said as such in words
        census = bool(np.all(pi == 1.0))
    if len(sums) not in (1, 2):
        raise InputError(f"Estimates are for one clustering or two (Base and Exp). Got {len(sums)}.")

    def est(metric: str, lin: Linearised, bounds: tuple[float, float], interval_of=None,
            correlation: float = math.nan) -> PopulationEstimate:
        c = variance_contributions(lin.z, pi, design=design, population_entities=N)
        var = float(np.sum(c))
        se = math.sqrt(var) if math.isfinite(var) and var >= 0 else math.nan
        note, few = "", effective_entities(c) if math.isfinite(var) else math.nan
        if not math.isfinite(lin.value):
            note = "no sampled item in this set: the estimate is undefined"
        elif not math.isfinite(se):
            note = ("one sampled entity: no standard error can be estimated from it" if n < 2 else
                    f"no standard error could be computed from the {n:,} sampled entities (their design "
                    "weights or totals are not finite numbers)")
        elif few < FEW_ENTITIES:
            note = (f"its variance rests on about {few:.1f} entities (a few sampled entities decide the estimate): "
                    + (f"the interval is wider (Student t on {degrees_of_freedom(n, few):.1f} degrees of freedom), "
                       if interval_of is None else "the interval leans as a sum of a few entities does, ")
                    + "and may still cover less than its level if the sample misses the entities that matter")
        return PopulationEstimate(metric=metric, value=lin.value,
                                  standard_error=se if math.isfinite(lin.value) else math.nan, entities=n,
                                  method=METHODS[design], bounds=bounds, exact=census, effective_entities=few,
                                  note=note, interval_of=interval_of, correlation=correlation)

    def mass(part):
        return mass_estimate(part, b, pi, design=design, population_entities=N)

    lins: dict[str, dict[str, Linearised]] = {}
    out: dict[str, dict[str, PopulationEstimate]] = {}
    for side, (ap, ar) in sums.items():
        p, r = (Linearised(*hajek_ratio(a, b, pi)) for a in (ap, ar))
        lins[side] = {"precision": p, "recall": r, "f1": f1_linearised(p, r)}
        out[side] = {m: est(m, lins[side][m], (0.0, 1.0), side_interval(mass(b - np.asarray(a, dtype=float))[1]))
                     for m, a in (("precision", ap), ("recall", ar))}
        f1 = est("f1", lins[side]["f1"], (0.0, 1.0))
        if f1.standard_error == 0 and not census:  # no spread seen: from its sides' zero-events intervals
            f1 = dataclasses.replace(f1, interval_of=functools.partial(_f1_from_sides, out[side]["precision"],
                                                                       out[side]["recall"]))
        out[side]["f1"] = f1
    deltas = {}
    if len(lins) == 2:
        (s1, first), (s2, second) = ((x, lins[x]) for x in sums)
        for m in METRICS:
            d = Linearised(second[m].value - first[m].value, second[m].z - first[m].z)
            if m == "f1":  # no sum of entities' gains: from its two sides' intervals
                v1, v2 = (out[x][m].standard_error ** 2 for x in (s1, s2))
                vd = design_variance(d.z, pi, design=design, population_entities=N)
                r = (v1 + v2 - vd) / (2.0 * math.sqrt(v1 * v2)) if v1 > 0 and v2 > 0 else 0.0
                r = min(max(r, -1.0), 1.0)
                e1, e2 = out[s1][m], out[s2][m]
                deltas[f"delta_{m}"] = est(f"delta_{m}", d, (-1.0, 1.0), functools.partial(
                    _sides_mover, e1, e2, r), r)
                continue
            k = 0 if m == "precision" else 1
            change = np.asarray(sums[s2][k], dtype=float) - np.asarray(sums[s1][k], dtype=float)
            gain, gains, zg = mass(np.maximum(change, 0.0))
            loss, losses, zl = mass(np.maximum(-change, 0.0))
            vg, vl = gains.var, losses.var
            cov = (design_variance(zg + zl, pi, design=design, population_entities=N) - vg - vl) / 2.0
            r = min(max(cov / math.sqrt(vg * vl), -1.0), 1.0) if vg > 0 and vl > 0 else 0.0
            deltas[f"delta_{m}"] = est(f"delta_{m}", d, (-1.0, 1.0),
                                       gains_losses_interval(gains, gain, losses, loss, r), r)
    return PopulationEstimates(out, deltas, design, N, census)
