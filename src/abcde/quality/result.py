"""Result objects of the quality estimators: :class:`Estimate` (one metric, with its standard
error, degrees of freedom and interval) and :class:`QualityResult` (all of them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from abcde.core.names import METRIC_LABELS, QUALITY_COLUMNS, QUALITY_METRICS
from abcde.errors import InputError
from abcde.util import display

Z95 = 1.959963984540054
ESTIMATION_CLASSES = ("self", "split", "merge", "intersection")


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
        and ``standard_error``: the stratified design's intervals for proportions near 0 or 1
        (Agresti–Coull, see :mod:`abcde.quality.stratified`). None: ``value ± q·standard_error``.
    """

    metric: str
    value: float
    standard_error: float
    n_judgements: int
    method: str = "paper"
    note: str = ""
    centre: float | None = None
    interval_se: float | None = None

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval ``value ± q·SE`` with q the Student t quantile on ``n_judgements − 1``
        degrees of freedom (the normal quantile when fewer than two judgements).

        The t quantile matters when a class has few judged pairs: with 8 judged split pairs
        a normal interval for GoodSplitRate covers about 90%, not 95%. With ``centre`` and
        ``interval_se`` set, the interval is ``centre ± q·interval_se`` instead.
        """
        if not 0 < confidence_level < 1:
            raise InputError(
                f"The 'confidence_level' parameter of confidence_interval must be in (0, 1). "
                f"Got {confidence_level} instead."
            )
        from scipy.stats import norm, t

        p = 0.5 + confidence_level / 2
        z = float(t.ppf(p, self.n_judgements - 1)) if self.n_judgements >= 2 else float(norm.ppf(p))
        if not (self.defined and math.isfinite(self.standard_error)):
            return (math.nan, math.nan)
        if self.centre is not None and self.interval_se is not None and math.isfinite(self.interval_se):
            return (self.centre - z * self.interval_se, self.centre + z * self.interval_se)
        return (self.value - z * self.standard_error, self.value + z * self.standard_error)

    def to_dict(self) -> dict:
        lo, hi = self.confidence_interval()

        def num(x):
            return x if math.isfinite(x) else None

        d = {"estimate": num(self.value), "std_err": num(self.standard_error), "ci_low": num(lo),
             "ci_high": num(hi), "n_judgements": self.n_judgements, "method": self.method}
        if self.note:
            d["note"] = self.note
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

    def _repr_html_(self) -> str:
        """The estimates in a notebook, with 95% intervals, as the report shows them."""
        rows, notes = [], []
        for name in (("precision",) if self.precision else ()) + QUALITY_METRICS:
            e = getattr(self, name).to_dict()
            rows.append([METRIC_LABELS[name], display.four(e["estimate"]), display.four(e["std_err"]),
                         display.interval(e), display.count(e["n_judgements"])])
            if e.get("note"):
                notes.append(f"{METRIC_LABELS[name]}: {e['note']}")
        how = self.estimator + (f", {self.allocation}" if self.allocation else "")
        design = ""
        if self.census:
            design = f"; judged whole (a census): {', '.join(self.census)}"
        if self.exact:
            design += "; every pair judged: exact"
        return display.html_table(
            f"Quality of Exp relative to Base (estimator: {how})", rows, list(QUALITY_COLUMNS),
            note=f"pairs judged: {display.count(self.judged_pairs)}, unsure: {display.count(self.unsure_pairs)}, "
                 f"not judged: {display.count(self.missing_pairs)}{design}" + "".join(f". {n}" for n in notes))

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
            "draws": self.draws,
            "rater_disagreements": self.disagreements,
            "rater_ties": self.ties,
            "estimator": self.estimator,
            "allocation": self.allocation,
            **({"precision": self.precision.to_dict(), "target": "precision"} if self.precision else {}),
            "strata": list(self.strata),
            "census": list(self.census),
            "exact": self.exact,
        })
        if self.slices:
            d["slices"] = self.slices
        return d


