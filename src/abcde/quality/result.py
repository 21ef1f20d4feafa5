"""Result objects of the quality estimators: :class:`Estimate` (one metric, with its standard
error, degrees of freedom and interval) and :class:`QualityResult` (all of them)."""

from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from abcde.core.names import (DISTANCE_ESTIMATES, DISTANCE_TOTALS, METRIC_LABELS, QUALITY_COLUMNS,
                              QUALITY_METRICS)
from abcde.errors import InputError
from abcde.quality.verdict import verdict
from abcde.util import display

Z95 = 1.959963984540054


@functools.lru_cache(maxsize=4096)
def quantile(n_judgements: int, confidence_level: float = 0.95) -> float:
    """The two-sided quantile of every interval: Student t on ``n_judgements − 1`` degrees of
    freedom, the normal quantile when fewer than two judgements.

    >>> round(quantile(10), 6), round(quantile(1), 6)
    (2.262157, 1.959964)
    """
    from scipy.stats import norm, t

    p = 0.5 + confidence_level / 2
    return float(t.ppf(p, n_judgements - 1)) if n_judgements >= 2 else float(norm.ppf(p))


def agresti_coull(ones) -> tuple[float, float]:
    """Agresti–Coull's centre and standard error of a proportion from ``n`` 0/1 values with ``k``
    ones: ``p̃ = (k + 2)/(n + 4)``, ``√(p̃(1 − p̃)/(n + 4))`` (two pseudo-successes and two
    pseudo-failures, ≈ z²/2 each at 95%). The interval of a proportion is ``p̃ ± q·√(p̃(1 − p̃)/(n + 4))``
    (``q`` from :func:`quantile`), cut to [0, 1]; the estimate stays the unbiased ``k/n``. The
    complement's (``n − k`` ones) is its mirror image, so Good and Bad rates agree.

    >>> agresti_coull([1, 1, 1, 1, 1, 1])
    (0.8, 0.12649110640673517)
    """
    return agresti_coull_of(float(sum(ones)), len(ones))


def agresti_coull_of(k: float, n: float) -> tuple[float, float]:
    """:func:`agresti_coull` from ``k`` ones of ``n`` (both may be effective counts: ``n* = p̂(1 −
    p̂)/Var(p̂)`` and ``k = n*·p̂`` for a weighted or two-phase share).

    >>> agresti_coull_of(6.0, 6)
    (0.8, 0.12649110640673517)
    """
    pt = (k + 2.0) / (n + 4.0)
    return pt, math.sqrt(pt * (1.0 - pt) / (n + 4.0))


def wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval of a share ``p`` of ``n`` (effective) judgements at quantile ``z``.

    >>> [round(x, 4) for x in wilson(1.0, 20, 1.96)]
    [0.8389, 1.0]
    """
    if not (n > 0 and math.isfinite(n)):
        return 0.0, 1.0
    d = 1.0 + z * z / n
    c = (p + z * z / (2.0 * n)) / d
    h = z / d * math.sqrt(max(p * (1.0 - p) / n + z * z / (4.0 * n * n), 0.0))
    return max(c - h, 0.0), min(c + h, 1.0)


def wilson_mover(parts, z: float) -> tuple[float, float]:
    """The squared distances from a sum ``Σ s·p̂`` of independent shares down and up to its interval's
    ends: each share's Wilson interval on its ``n`` effective judgements (``n`` infinite: known
    exactly, no width), times ``s``, added by MOVER (Zou & Donner 2008: the distances in
    quadrature). ``parts``: ``(s, p̂, n)`` each.

    >>> [round(x, 6) for x in wilson_mover([(0.5, 1.0, 20), (0.5, 0.0, float("inf"))], 1.96)]
    [0.006491, 0.0]
    """
    down = up = 0.0
    for s, p, n in parts:
        if math.isfinite(n):
            lo, hi = wilson(p, n, z)
            down += (s * (p - lo)) ** 2
            up += (s * (hi - p)) ** 2
    return down, up


#: Draws behind an interval read off draws (the recall lift's, a census stratum's by the model's cells),
#: and the seed they are drawn with: the same judgements give the same interval (the quantiles' Monte
#: Carlo error, about 0.1% of the tail's probability, is far below the interval's own).
DRAWS, SEED = 20_000, 20240901


def share_draws(rng: np.random.Generator, p: float, n: float, size: int) -> np.ndarray:
    """``size`` draws of a share ``p̂`` of ``n`` (effective) judgements from its modified Jeffreys
    posterior (Brown, Cai & DasGupta 2001): ``Beta(n·p̂ + ½, n·(1 − p̂) + ½)``; when every judgement
    agrees, ``Beta(n, 1)`` (``p̂ = 1``) or ``Beta(1, n)`` (``p̂ = 0``), whose 2.5% quantile
    ``0.025^(1/n)`` is the modified interval's end: Jeffreys' own stays too close to 1 (the lift of a
    world whose census cell of share 0.97 people saw all "same" in 22% of samples covered 77%).
    ``n`` infinite: ``p̂`` exactly; none: anywhere in [0, 1]. A share above ½ is drawn as 1 − its
    complement's draws, so a share and its complement (Good's and Bad's) mirror each other draw by
    draw, not only in distribution."""
    if n == math.inf:
        return np.full(size, p)
    if not n > 0:
        return rng.random(size)
    if p > 0.5:
        return 1.0 - share_draws(rng, 1.0 - p, n, size)
    if p <= 0.0:
        return rng.beta(1.0, n, size)
    return rng.beta(n * p + 0.5, n * (1.0 - p) + 0.5, size)


def quantiles_holding(x: np.ndarray, value: float, z: float) -> tuple[float, float]:
    """The ``Φ(−z)`` and ``Φ(z)`` quantiles of draws ``x`` (each a draw, never between two: an infinite
    draw stays infinite), widened to hold ``value``; ``(−∞, ∞)`` when there are none."""
    if not len(x):
        return -math.inf, math.inf
    a = NormalDist().cdf(-z)
    # np.quantile(x, a, method="lower") and np.quantile(x, 1 − a, method="higher"), from one partition:
    # the draws at numpy's indices ⌊(n − 1)·a⌋ and ⌈(n − 1)·(1 − a)⌉ of the sorted draws (NaN if any is)
    n = len(x)
    k_lo, k_hi = int(np.floor((n - 1) * np.float64(a))), int(np.ceil((n - 1) * np.float64(1.0 - a)))
    part = np.partition(x, [k_lo, k_hi, n - 1])
    if np.isnan(part[n - 1]):
        lo = hi = math.nan
    else:
        lo, hi = float(part[k_lo]), float(part[k_hi])
    return min(lo, value), max(hi, value)


class DrawnInterval:
    """An interval read off draws (an :class:`Estimate`'s ``interval_of``): at quantile ``z``, the
    ``Φ(∓z)`` quantiles (:func:`quantiles_holding`) of ``draw(rng, DRAWS)`` drawn with the fixed
    :data:`SEED`, holding ``value``; each quantile's drawn once (the verdict, the tables and the JSON
    ask again), and the draws once for every quantile (a sum's interval asks its parts' at its own
    quantile: the same draws). Picklable when ``draw`` is (a ``functools.partial`` of a module's
    function), as a result holding it is (without its draws: drawn again when asked)."""

    def __init__(self, draw, value: float):
        self.draw, self.value, self.ends = draw, value, {}
        self.drawn = None

    def __call__(self, z: float) -> tuple[float, float]:
        if z not in self.ends:
            if getattr(self, "drawn", None) is None:
                self.drawn = self.draw(np.random.default_rng(SEED), DRAWS)
            self.ends[z] = quantiles_holding(self.drawn, self.value, z)
        return self.ends[z]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "drawn": None}


def clip(interval: tuple[float, float], bounds: tuple[float, float] | None) -> tuple[float, float]:
    """``interval`` cut to ``bounds`` (a feasible range; None: unchanged).

    >>> clip((-0.1, 0.3), (0.0, 0.2))
    (0.0, 0.2)
    """
    if bounds is None:
        return interval
    lo, hi = bounds
    return (min(max(interval[0], lo), hi), max(min(interval[1], hi), lo))
ESTIMATION_CLASSES = ("self", "split", "merge", "intersection")



def weighted_mean_se(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted mean and its standard error (Case I: weights are relative importance)::

        SE = sqrt((Σ w x² / Σ w − x̄²) · Σ w² / ((Σ w)² − Σ w²))
    """
    if len(x) == 0 or w.sum() <= 0:
        return math.nan, math.nan
    sw = w.sum()
    mean = float((w * x).sum() / sw)
    sw2 = float((w * w).sum())
    denom = sw * sw - sw2
    if denom <= 0:
        return mean, math.nan
    var = max(float((w * x * x).sum() / sw) - mean * mean, 0.0)
    return mean, math.sqrt(var * sw2 / denom)

@dataclass(frozen=True)
class Estimate:
    """Sample-based estimate of one quality metric.

    Attributes
    ----------
    metric
        Its name, e.g. ``delta_precision``.
    value, standard_error
        The estimate and its standard error (NaN when undefined, see ``note``).
    n_judgements
        Judged draws it rests on.
    method
        How it was estimated.
    note
        Why it is undefined, when it is.
    centre, interval_se
        Where the interval is centred and its half-width per quantile, when they are not ``value``
        and ``standard_error``: intervals of proportions (Agresti–Coull, see
        :func:`agresti_coull`). None: ``value ± q·standard_error``.
    bounds
        The metric's feasible range, known exactly before anyone judges (``[0, SplitRate]`` for
        GoodSplitRate, ``[self term − U_split − U_intersection−, self term + U_merge +
        U_intersection+]`` for ΔPrecision, …): the interval is cut to it. None: no range known.
    exact
        Whether the estimate is the exact value (every pair it needs listed and judged); None: not said
        (``to_dict`` then carries no ``exact``).
    span
        ``(down, up)``: how far below and above the estimate the pairs answered "unsure" in census
        strata could put it (each either answer), added to the interval's ends: the interval holds
        every answer they could have (bounds, not an estimate; :func:`abcde.quality.stratified.census_total`).
        None: no such pair.
    interval_of
        A function of the quantile giving the interval's ends, for an estimate whose interval is built
        from its parts' (read off draws, :class:`DrawnInterval`: the recall lift's, a distance's census
        stratum by the model's cells; by MOVER: a rate by the model's cells, a sum of distances); the
        interval is widened to hold ``value`` and cut to ``bounds``.
    """

    metric: str
    value: float
    standard_error: float
    n_judgements: int
    method: str = "paper"
    note: str = ""
    centre: float | None = None
    interval_se: float | None = None
    bounds: tuple[float, float] | None = None
    exact: bool | None = None
    interval_of: object = field(default=None, repr=False, compare=False)
    span: tuple[float, float] | None = None

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval ``value ± q·SE`` with q the Student t quantile on ``n_judgements − 1``
        degrees of freedom (the normal quantile when fewer than two judgements), cut to
        ``bounds``.

        The t quantile matters when a class has few judged pairs: with 8 judged split pairs
        a normal interval for GoodSplitRate covers about 90%, not 95%. With ``centre`` and
        ``interval_se`` set, the interval is ``centre ± q·interval_se`` instead, widened to reach
        ``value`` when the centre's shift leaves it outside (a sum of Agresti–Coull strata): every
        estimate lies inside its interval. Cutting to the feasible range never lowers coverage: the
        true value lies inside it.
        """
        if not 0 < confidence_level < 1:
            raise InputError(
                f"The 'confidence_level' parameter of confidence_interval must be in (0, 1). "
                f"Got {confidence_level} instead."
            )
        return self.interval_at(quantile(self.n_judgements, confidence_level))

    def interval_at(self, z: float, *, spanned: bool = True) -> tuple[float, float]:
        """The interval at quantile ``z`` (:meth:`confidence_interval`'s, whose ``z`` is Student t's);
        ``spanned=False``: without the unsure pairs' ``span`` (a sum adds the parts' spans itself)."""
        if not self.defined:
            return (math.nan, math.nan)
        if self.interval_of is not None:  # an interval of its own (from draws, or by MOVER), holding the value
            lo, hi = self.interval_of(z)
            lo, hi = min(lo, self.value), max(hi, self.value)
        elif self.centre is not None and self.interval_se is not None and math.isfinite(self.interval_se):
            # Defined from one judged draw on: a stratum with one judgement has no SE yet, but its
            # proportion has an Agresti–Coull interval.
            lo, hi = self.centre - z * self.interval_se, self.centre + z * self.interval_se
            # A shifted centre can leave the estimate outside: a sum of strata (ΔPrecision, GoodDistance)
            # adds their shifts toward ½ linearly but their half-widths in quadrature, so with every
            # judgement of every stratum agreeing (shifts all one way) it moves further than the
            # half-width (issue 38). The interval is widened to reach the estimate: never narrower, so
            # never less coverage, and every estimate lies inside its interval, at any level.
            lo, hi = min(lo, self.value), max(hi, self.value)
        elif math.isfinite(self.standard_error):
            lo, hi = self.value - z * self.standard_error, self.value + z * self.standard_error
        else:
            return (math.nan, math.nan)
        if self.span is not None and spanned:  # the unsure pairs of census strata: every answer they could have
            lo, hi = lo - self.span[0], hi + self.span[1]
        return clip((lo, hi), self.bounds)

    def to_dict(self) -> dict:
        lo, hi = self.confidence_interval()

        def num(x):
            return x if math.isfinite(x) else None

        d = {"estimate": num(self.value), "std_err": num(self.standard_error), "ci_low": num(lo),
             "ci_high": num(hi), "n_judgements": self.n_judgements, "method": self.method}
        if self.bounds is not None:
            d["range"] = [num(self.bounds[0]), num(self.bounds[1])]
        if self.note:
            d["note"] = self.note
        if self.exact is not None:
            d["exact"] = self.exact
        return d


@dataclass(frozen=True)
class DistanceEstimates:
    """JaccardDistance(T) = SplitDistance(T) + MergeDistance(T) = GoodDistance(T) + BadDistance(T),
    the good and bad parts estimated from the judged split and merge pairs
    (:mod:`abcde.quality.distances`).

    Attributes
    ----------
    split_distance, merge_distance
        The exact ``SplitDistance(T)`` and ``MergeDistance(T)`` (no judgement needed).
    good_split_distance, bad_split_distance, good_merge_distance, bad_merge_distance
        :class:`Estimate` objects; Good + Bad = the exact distance, each inside [0, it].
    good_distance, bad_distance
        GoodSplitDistance + GoodMergeDistance and BadSplitDistance + BadMergeDistance (their
        strata are sampled independently: the variances add).
    method
        How they were estimated (design, and whose judgements).
    source
        Where the exact distances and each drawn item's shares ``W(B)/W(B ∪ E)``, ``W(E)/W(B ∪ E)``
        came from (stored in the sample when it was drawn; for a sample drawn by an earlier abcde,
        the inputs it was drawn from).
    slices
        ``{column: [{value, weight, split_distance, merge_distance, jaccard_distance,
        good_split_distance, …, good_distance, bad_distance}, …]}`` for the vantage items' slices.
    """

    split_distance: float
    merge_distance: float
    good_split_distance: Estimate
    bad_split_distance: Estimate
    good_merge_distance: Estimate
    bad_merge_distance: Estimate
    good_distance: Estimate
    bad_distance: Estimate
    method: str
    source: str = ""
    slices: dict = field(default_factory=dict)

    def estimates(self) -> dict:
        """``{name: Estimate}`` of the four parts and the two sums."""
        return {k: getattr(self, k) for k in DISTANCE_ESTIMATES + DISTANCE_TOTALS}

    def to_dict(self) -> dict:
        def total(*es):
            v = math.fsum(e.value for e in es)
            return v if math.isfinite(v) else None

        d = {"available": True, "jaccard_distance": self.split_distance + self.merge_distance,
             "split_distance": self.split_distance, "merge_distance": self.merge_distance,
             **{k: e.to_dict() for k, e in self.estimates().items()},
             "identities": {
                 "split_plus_merge": self.split_distance + self.merge_distance,
                 "good_plus_bad": total(self.good_distance, self.bad_distance),
                 "good_plus_bad_split": total(self.good_split_distance, self.bad_split_distance),
                 "good_plus_bad_merge": total(self.good_merge_distance, self.bad_merge_distance)},
             "method": self.method, "source": self.source}
        if self.slices:
            d["slices"] = self.slices
        return d


@dataclass(frozen=True)
class QualityResult:
    """Quality estimates from a judged pair sample.

    Attributes
    ----------
    delta_precision, good_split_rate, bad_split_rate, good_merge_rate, bad_merge_rate
        :class:`Estimate` objects.
    split_rate, merge_rate
        The exact impact rates that the split/merge estimates decompose.
    judged_pairs, unsure_pairs, missing_pairs
        Distinct judgeable pairs judged same/different, judged unsure, not judged.
    slices
        ``{column: [{value, weight, pairweight, delta_precision, delta_precision_contribution}, …]}``.
    estimator, allocation
        Which estimator produced the numbers (``paper`` or ``stratified``) and, for
        ``stratified``, how its budget was allocated (``proportional`` or ``neyman``;
        None for ``paper``).
    strata, census
        The stratified design's strata, and those judged whole (every pair in the sample: their
        part is exact once all their pairs are judged).
    exact
        Every pair that needs a judgement was judged (a census of every stratum): the estimates are
        the exact values, with standard error 0.
    precision
        For a sample of one clustering's pairs (``abcde precision``): its absolute Precision,
        ``1 + ΔPrecision`` (Base = every item alone, whose Precision is 1); None otherwise.
    design
        What the verdict's next step needs of the sample: ``sample_dir``, ``budget`` and the
        strata's distinct ``pair_counts`` (empty for draws estimated in memory).
    distances
        JaccardDistance's good and bad parts (:class:`DistanceEstimates`), or None when they were
        not estimated; ``distances_note`` then says why.
    recall_lift
        The recall lift ``Λ = T_Exp/T_Base − 1`` (:mod:`abcde.quality.recall`): how many more (fewer)
        true links Exp keeps than Base, with its ``exact`` flag; None when the sample has no agreed
        stratum (drawn before it), ``recall_note`` then says why and ``recall_command`` how to add it.
    """

    delta_precision: Estimate
    good_split_rate: Estimate
    bad_split_rate: Estimate
    good_merge_rate: Estimate
    bad_merge_rate: Estimate
    split_rate: float
    merge_rate: float
    judged_pairs: int
    unsure_pairs: int
    missing_pairs: int
    draws: dict
    disagreements: int = 0
    ties: int = 0
    slices: dict = field(default_factory=dict)
    estimator: str = "paper"
    allocation: str | None = None
    strata: tuple = ()
    census: tuple = ()
    exact: bool = False
    precision: Estimate | None = None
    design: dict = field(default_factory=dict)
    distances: DistanceEstimates | None = None
    distances_note: str = ""
    recall_lift: Estimate | None = None
    recall_note: str = ""
    recall_command: str = ""

    def verdict(self, *, truth: dict | None = None, names: tuple[str, str] = ("Base", "Exp")):
        """The answer in words (:func:`abcde.quality.verdict.verdict`)."""
        return verdict(self, truth=truth, names=names)

    def _repr_html_(self) -> str:
        """The estimates in a notebook, with 95% intervals, as the report shows them."""
        rows, notes = [], []
        for name in (("precision",) if self.precision else ()) + QUALITY_METRICS:
            e = getattr(self, name).to_dict()
            rows.append([METRIC_LABELS[name], display.estimate(name, e["estimate"]),
                         display.estimate(name, e["std_err"]), display.estimate_interval(name, e),
                         display.count(e["n_judgements"])])
            if e.get("note"):
                notes.append(f"{METRIC_LABELS[name]}: {e['note']}")
        rl = self.recall_lift_dict()
        if rl["available"]:
            rows.append([METRIC_LABELS["recall_lift"], display.estimate("recall_lift", rl["estimate"]),
                         display.estimate("recall_lift", rl["std_err"]), display.estimate_interval("recall_lift", rl),
                         display.count(rl["n_judgements"])])
        elif self.precision is None:
            notes.append(f"{METRIC_LABELS['recall_lift']}: not estimated: {rl['note']}"
                         + (f" ({rl['command']})" if rl.get("command") else ""))
        how = self.estimator + (f", {self.allocation}" if self.allocation else "")
        design = ""
        if self.census:
            design = f"; judged whole (a census): {', '.join(self.census)}"
        if self.exact:
            design += "; every pair judged: exact"
        out = self.verdict()._repr_html_() + display.html_table(
            f"Quality of Exp relative to Base (estimator: {how})", rows, list(QUALITY_COLUMNS),
            note=f"pairs judged by {counts_of(self.design)}: {display.count(self.judged_pairs)}, "
                 f"unsure: {display.count(self.unsure_pairs)}, "
                 f"not judged: {display.count(self.missing_pairs)}{design}" + "".join(f". {n}" for n in notes))
        if self.distances is not None:
            out += display.html_table(f"{METRIC_LABELS['jaccard_distance']} = good + bad", distance_rows(
                self.distances.to_dict()), ["", "exact", "good", "95% interval", "bad", "95% interval"],
                note=f"{self.distances.method}; Good + Bad = the exact value")
        elif self.distances_note:
            out += f"<p class='abcde'>{html.escape(METRIC_LABELS['jaccard_distance'])} = good + bad: " \
                   f"{html.escape(self.distances_note)}</p>"
        return out

    def recall_lift_dict(self) -> dict:
        """``recall_lift`` of :meth:`to_dict`: the estimate's dict with ``available`` and ``exact``;
        not available: why (``note``) and how to add the agreed stratum (``command``)."""
        if self.recall_lift is None:
            d = {"available": False, "estimate": None, "std_err": None, "ci_low": None, "ci_high": None,
                 "n_judgements": 0, "exact": False, "note": self.recall_note or "not estimated"}
            if self.recall_command:
                d["command"] = self.recall_command
            return d
        return {"available": True, **self.recall_lift.to_dict(), "exact": bool(self.recall_lift.exact)}

    def to_dict(self) -> dict:
        d = {name: getattr(self, name).to_dict() for name in QUALITY_METRICS}
        gs, bs = self.good_split_rate.value, self.bad_split_rate.value
        gm, bm = self.good_merge_rate.value, self.bad_merge_rate.value
        d.update({
            "split_rate": self.split_rate,
            "merge_rate": self.merge_rate,
            "identities": {
                "good_plus_bad_split": gs + bs if math.isfinite(gs + bs) else None,
                "good_plus_bad_merge": gm + bm if math.isfinite(gm + bm) else None,
            },
            "judged_pairs": self.judged_pairs,
            "unsure_pairs": self.unsure_pairs,
            "missing_pairs": self.missing_pairs,
            "counts_of": counts_of(self.design),
            "draws": self.draws,
            "rater_disagreements": self.disagreements,
            "rater_ties": self.ties,
            "estimator": self.estimator,
            "allocation": self.allocation,
            **({"precision": self.precision.to_dict(), "target": "precision"} if self.precision else {}),
            "strata": list(self.strata),
            "census": list(self.census),
            "exact": self.exact,
            "design": self.design,
        })
        if self.slices:
            d["slices"] = self.slices
        if self.distances is not None:
            d["distances"] = self.distances.to_dict()
        elif self.distances_note:
            d["distances"] = {"available": False, "note": self.distances_note}
        d["recall_lift"] = self.recall_lift_dict()
        v = verdict(d)  # the answer in words, from these numbers
        d["verdict"], d["verdict_facts"] = v.text, v.facts
        return d




#: Whose judgements a source's are, in words.
_WHOSE = {"person": "people", "oracle": "the oracle", "model": "the model"}


def counts_of(design: dict) -> str:
    """Whose judgements the counts ``judged_pairs``, ``unsure_pairs`` and ``missing_pairs`` are, in
    words: the sources the estimates used ("the model", "people and the oracle", …; "no one" when none
    is used yet), without the model's beside people's (the counts are then of the people's tasks;
    the model's answers are counted in ``design["ppi"]``)."""
    ppi = design.get("ppi") or {}
    used = (design.get("judgements_used") or {})
    sources = [k for k, n in (used.get("by_source") or {}).items() if n] or (
        [used["source"]] if isinstance(used.get("source"), str) else [])
    if ppi and not ppi.get("people_only"):
        sources = [k for k in sources if k != "model"] or ["person"]
    elif ppi.get("people_only"):
        sources = [ppi["people_only"]] if isinstance(ppi["people_only"], str) else ["person"]
    names = [_WHOSE.get(k, k) for k in sorted(sources, key=lambda k: (k != "person", k))]
    return " and ".join(names) if names else "no one"


def distance_rows(d: dict) -> list[list[str]]:
    """The rows of the panel "JaccardDistance = good + bad" from a ``DistanceEstimates.to_dict()``
    (or a slice's row): per part its exact value, Good and Bad with their 95% intervals, as
    percentages. The one layout the notebook, the terminal and the Markdown report show."""
    out = []
    for exact, good, bad in (("split_distance", "good_split_distance", "bad_split_distance"),
                             ("merge_distance", "good_merge_distance", "bad_merge_distance"),
                             ("jaccard_distance", "good_distance", "bad_distance")):
        g, b = d[good], d[bad]
        out.append([METRIC_LABELS[exact], display.pct(d[exact]), display.estimate(good, g["estimate"]),
                    display.estimate_interval(good, g), display.estimate(bad, b["estimate"]),
                    display.estimate_interval(bad, b)])
    return out
