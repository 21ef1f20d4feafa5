"""The whole population's pointwise Precision and Recall from a truth of sampled complete entities.

A real ground truth is partial: someone samples entities (or records, whose entities they then
resolve) and lists every item of each sampled entity by hand. :func:`abcde.pointwise` without a
design restricts both sides to the truth's items, which hides every overmerge with an item outside
the truth (Precision comes out optimistic) and averages the sampled entities as if they were the
population. Given the design the truth was sampled by (``truth_sample``), this module estimates the
population's numbers instead, with standard errors and intervals.

The design (``truth_sample``)
-----------------------------
``"uniform"``
    The truth lists a simple random sample without replacement of ``n`` of the population's ``N``
    entities, each entity equally likely (``π_k = n/N``).
a column name of the truth, for example ``"inclusion"``
    Each entity was included independently with the probability in that column (Poisson
    sampling): ``π_k ∝ size``, ``∝ weight``, "sample a record, resolve its entity"
    (``π_k = 1 − (1 − 1/M)^{size}`` or ``size/M`` for ``M`` records), capped at 1. The column must be
    numeric, in (0, 1] and the same on every item of an entity.

Either way the truth lists *complete* entities: every item of each entity it names. Every truth
item must be in the clustering (:func:`estimate_pointwise` refuses a truth item the clustering lacks,
naming it: such an entity breaks completeness, and dropping it would change the design).

Per item, exact
---------------
Because a listed entity is complete, an item outside the truth is never the same entity as a truth
item. So for a truth item ``i`` with entity ``I(i)`` and cluster ``C(i)`` (the *whole* cluster, over
every item of the clustering, weights from ``items``)::

    Precision(i) = w(C(i) ∩ I(i)) / w(C(i))       Recall(i) = w(C(i) ∩ I(i)) / w(I(i))

both exact. They are computed per fragment ``F = I ∩ C`` in Ibis (the same expressions on DuckDB and
Spark): ``w(C)`` from the clustering's own fragments over all its items, ``w(I)`` and ``w(F)`` from
the truth's; only one row per listed entity comes back to Python (:class:`EntityTotals`)::

    B_k = w(entity k)      A_k = Σ_{j ∈ entity k} w_j · metric(j)   (metric = Precision or Recall)

Estimation (:func:`estimate_population`, plain numpy over the entity totals)
----------------------------------------------------------------------------
The population's item-weighted Precision (likewise Recall) is the ratio ``R = Σ_U A_k / Σ_U B_k``
over all ``N`` entities. The Hájek estimator and its linearised (Taylor) variance::

    R̂ = (Σ_s A_k/π_k) / B̂,   B̂ = Σ_s B_k/π_k,   z_k = (A_k − R̂·B_k) / B̂

    uniform (SRS without replacement, π_k = n/N):  V̂ = N²·(1 − n/N)/n · s²_z
                                                   s²_z = Σ_s (z_k − z̄)²/(n − 1)
    Poisson (independent inclusion):               V̂ = Σ_s (1 − π_k)/π_k² · z_k²

(Särndal, Swensson & Wretman, *Model Assisted Survey Sampling*, 1992, §5.6: the ratio of two
π estimators, its linearisation ``(1/t̂_B)·Σ ǔ_k`` with ``u_k = A_k − R̂·B_k``, and the variance
estimator ``ΣΣ_s Δ̌_kl ǔ_k ǔ_l``, which for SRSWOR is the first line, for Poisson sampling, where
``Δ_kl = 0`` for ``k ≠ l`` and ``Δ̌_kk = 1 − π_k``, the second.) At a census (``n = N``, or every
``π_k = 1``) the estimate is the exact population value and ``V̂ = 0``.

``N``, which the uniform design needs (only through the finite-population correction ``1 − n/N``:
``N²·s²_z`` does not depend on it), is ``population_entities`` when given, else estimated as
``N̂ = n · (items in the clustering) / (items in the truth)`` (the truth's mean entity size; exact
under a census). The result says which. The Poisson design needs no ``N``; ``Σ_s 1/π_k`` is
reported as its estimate.

F1 is the harmonic mean of the *population* Precision and Recall (as :func:`abcde.pointwise`
defines it for a set of items), estimated as ``F̂ = 2P̂R̂/(P̂ + R̂)`` with the delta method:
``z_F = ∂F/∂P · z_P + ∂F/∂R · z_R``, ``∂F/∂P = 2R²/(P + R)²``, ``∂F/∂R = 2P²/(P + R)²``.

Two clusterings on one truth are paired: ``ΔPrecision = Precision(Exp) − Precision(Base)`` from the
same entities, one linearised variance of the difference (``z_Δ = z_Exp − z_Base`` per entity; the
``B_k`` are the same on both sides), not two intervals side by side. Likewise ΔRecall and ΔF1.

Intervals: 95% by default, inside the metric's range.

* **Precision and Recall**: Fay and Feuer's gamma interval of the *missing mass* ``D = 1 − R̂``, the
  weight the metric misses: a sum over the sampled entities of their shares ``(B_k − A_k)/π_k / B̂``
  (:class:`abcde.metrics.population.MassInterval`). The entities certain to be sampled (``π_k = 1``)
  add a fixed part; the others add ``y``, with the design variance ``v`` of the estimate and ``w``
  the largest share among them. ``D``'s ends are ``Gamma(shape y²/v, scale v/y)`` at 2.5% and
  ``Gamma(shape (y + w)²/(v + w²), scale (v + w²)/(y + w))`` at 97.5%, the fixed part added, and
  ``R``'s interval is ``1 −`` them. It is the interval for a weighted sum of a few rare counts (Fay &
  Feuer, "Confidence intervals for directly standardized rates: a method based on the gamma
  distribution", *Statistics in Medicine* 16, 1997): below, the gamma with the estimate's mean and
  variance; above, as if one more entity like the largest seen had been missed. Where the losses sit
  in a few entities (FEBRL 3's 18 of 2,000 entities hold all of Exp's precision loss, about 4.5 in a
  quarter sample) the estimate is a lumpy sum of a few: a symmetric interval then misses above (a
  sample of few losses has a small variance), and Student t on few degrees of freedom is far too
  wide; the gamma leans as the sum does. Fay and Feuer's guarantee (never below the level) is for
  Poisson counts with known weights; here the variance is the design's and ``w`` the largest seen,
  so where it holds is measured (below).
* **Their differences** (``ΔPrecision``, ``ΔRecall``): per entity the change ``A^Exp_k − A^Base_k``
  splits into a gain ``max(·, 0)`` and a loss ``max(−·, 0)``; the population's gains and losses are
  two such masses, each with its gamma interval, and ``Δ = gains − losses`` gets its interval by MOVER
  (:func:`mover_interval`, Newcombe's paired form) with their design correlation. A difference's own
  symmetric interval missed on the side both sides lean to; MOVER from the two sides' intervals
  carried their shared lean into it.
* **F1** (no sum of entities' losses): the logit scale, ``expit(logit F̂ ± q · SE/(F̂(1 − F̂)))``,
  ``q`` Student's t quantile on the variance's effective degrees of freedom (:func:`degrees_of_freedom`,
  :func:`quantile`)::

      ν = min(n − 1, max(1, (Σ_s c_k)² / Σ_s c_k²))

  where ``c_k`` is entity ``k``'s share of ``V̂ = Σ c_k`` (:func:`variance_contributions`: uniform
  ``N²(1 − n/N)/n · (z_k − z̄)²/(n − 1)``, Poisson ``(1 − π_k)/π_k² · z_k²``), Satterthwaite's degrees
  of freedom for a sum of independent one-degree-of-freedom pieces ("An approximate distribution of
  estimates of variance components", *Biometrics Bulletin* 2, 1946); ΔF1 by MOVER from the two sides'.

An interval is the point ``[R̂, R̂]`` at a census (every ``π_k = 1``), or when no sampled entity has a
loss (then ``SE = 0`` too), which is exact at a census but overconfident for a small sample of
entities all perfectly clustered.

Where the intervals hold (tests/test_truth_sample_sim.py: FEBRL 3 and a world of heavy-tailed entity
sizes, 4,000 seeds, a quarter of the entities sampled, uniformly, ∝ size and ∝ weight): Precision,
Recall and ΔRecall cover 93.4–97.2% in every cell (before: Student t on the effective degrees of
freedom covered FEBRL 3's Precision 99.2–99.6%, and under a uniform sample of the heavy world ΔRecall
88%; on ``n − 1`` degrees of freedom Precision 92–95%). The lowest are the heavy world's Recall and
ΔRecall under a uniform sample (93.7%, 93.4%): a sample holding few of the giant entities that decide
the population's value sees them only by the extra entity the upper end allows for. For heavy-tailed
entity sizes or weights, sample entities with probability ∝ size or ∝ weight (large ones are then
certain, and add no variance) rather than uniformly: the intervals are also several times narrower.
Each estimate whose variance rests on fewer than :data:`FEW_ENTITIES` entities says so in its
``note``.

Slices: a slice's estimate uses the entity totals restricted to the slice's items (``A_k^s``,
``B_k^s``); a sampled entity with no item in the slice contributes 0 to both but still counts in the
design (``n`` and ``s²_z``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import ibis
import numpy as np
import pyarrow as pa

from abcde.core.diff import Diff, Restriction, build_diff
from abcde.core.inputs import Inputs, bad_float_predicates, describe, private
from abcde.core.join_common import unit_weight
from abcde.core.names import FEW_ENTITIES
from abcde.engine import Engine, resolve
from abcde.errors import InputError, examples_text
from abcde.metrics.impact import check_slice_columns, normalize_slices, overall

from abcde.metrics.population import (DESCRIPTIONS, F1_METHOD, INTERVAL_METHOD, METRICS, SLICE_FIELDS,
                                     TRUTH_SAMPLE_HINT, UNIFORM, PopulationEstimate, PopulationEstimates,
                                     bounded_interval, degrees_of_freedom, effective_entities, estimate_population,
                                     mover_interval, quantile)


# ============================================================================ entity totals (Ibis)
@dataclass(frozen=True)
class EntityTotals:
    """One clustering's totals per listed entity, in the order of ``entities``.

    Attributes
    ----------
    entities
        The truth's entity ids.
    items, weight
        Items and weight ``B_k`` of each entity.
    precision_sum, recall_sum
        ``A_k = Σ_{j ∈ entity k} w_j · Precision(j)`` (against the whole cluster) and likewise Recall.
    """

    entities: list
    items: np.ndarray
    weight: np.ndarray
    precision_sum: np.ndarray
    recall_sum: np.ndarray

    def to_arrow(self, inclusion=None) -> pa.Table:
        cols = {"entity_id": self.entities, "items": self.items, "weight": self.weight,
                "precision": self.precision_sum / self.weight, "recall": self.recall_sum / self.weight}
        if inclusion is not None:
            cols["inclusion"] = np.asarray(inclusion, dtype=float)
        return pa.table(cols)


def _p(name: str) -> str:
    return private("ts_" + name)


def _cluster_totals(full: Diff) -> ibis.Table:
    """Every cluster of a clustering with its items and weight over all its items, from the fragments
    of the clustering diffed against itself (one fragment per cluster)."""
    f = full.fragments
    return f.select(**{_p("cluster"): f.exp_cluster, _p("nc"): f.ne, _p("wc"): f.we})


def fragment_scores(truth_diff: Diff, full: Diff) -> ibis.Table:
    """The fragments ``F = I ∩ C`` of the truth's entities and the clustering's clusters with their
    items' exact Precision against the whole cluster (``w(F)/w(C)``, ``C`` over every item of the
    clustering) and Recall (``w(F)/w(I)``): ``base_cluster`` (the entity), ``exp_cluster``, ``n``,
    ``w`` and the two scores under private names."""
    f, ct = truth_diff.fragments, _cluster_totals(full)
    j = f.join(ct, f.exp_cluster == ct[_p("cluster")])
    one = unit_weight()
    return j.select("base_cluster", "exp_cluster", "n", "w",
                    **{_p("precision"): ibis.ifelse(j.n == j[_p("nc")], one, j.w / j[_p("wc")]),
                       _p("recall"): ibis.ifelse(j.n == j.nb, one, j.w / j.wb)})


def _entity_sums(scores: ibis.Table) -> ibis.Table:
    s = scores
    return s.group_by(**{_p("entity"): s.base_cluster}).aggregate(**{
        _p("items"): s.n.sum(), _p("weight"): s.w.sum(),
        _p("psum"): (s.w * s[_p("precision")]).sum(), _p("rsum"): (s.w * s[_p("recall")]).sum()})


def _slice_entity_sums(truth_diff: Diff, scores: ibis.Table, cols: tuple[str, ...]) -> ibis.Table:
    """Per (entity, slice value): the truth items in the slice, their weight and weighted score sums."""
    j = truth_diff.joined.select("item_id", "base_cluster", "exp_cluster", "weight")
    sc = scores.select("base_cluster", "exp_cluster", _p("precision"), _p("recall"))
    it = truth_diff.items.select("item_id", *cols)
    t = j.join(sc, ["base_cluster", "exp_cluster"]).join(it, "item_id")
    t = t.mutate(**{_p("entity"): t.base_cluster})
    return t.group_by([_p("entity"), *cols]).aggregate(**{
        _p("items"): t.count(), _p("weight"): t.weight.sum(),
        _p("psum"): (t.weight * t[_p("precision")]).sum(), _p("rsum"): (t.weight * t[_p("recall")]).sum()})


def inclusion_table(eng: Engine, truth, *, column: str, item_id: str, entity: str) -> ibis.Table:
    """``entity, pi``: each listed entity's inclusion probability from the truth's ``column``,
    checked: the column exists, is numeric, every value in (0, 1] and the same within an entity."""
    label = describe(truth, "truth")
    raw = eng.read(truth, role="truth")
    if column not in raw.columns:
        raise InputError(f"Column '{column}' (the truth sample's inclusion probabilities, truth_sample={column!r}) "
                         f"not found in the {label}. Existing columns: {', '.join(repr(c) for c in raw.columns)}. "
                         f"{TRUTH_SAMPLE_HINT}.")
    typ = raw[column].type()
    if not typ.is_numeric() or typ.is_boolean():
        raise InputError(f"Column '{column}' of the {label} has type {typ}; inclusion probabilities must be "
                         "numbers in (0, 1].")
    for c in (item_id, entity):
        if c not in raw.columns:
            raise InputError(f"Column '{c}' not found in the {label}. Existing columns: "
                             f"{', '.join(repr(x) for x in raw.columns)}.")
    t = raw.select(item=raw[item_id], entity=raw[entity], pi=raw[column].cast("float64"))
    is_nan, is_null, _ = bad_float_predicates(t.pi)
    bad = is_nan | is_null | ~((t.pi > 0) & (t.pi <= 1)).fill_null(False)
    # An aggregate FILTER, not a WHERE (DuckDB prunes Parquet row groups holding NaN under a WHERE on NaN).
    rows = ibis.struct({"item": t.item, "entity": t.entity, "pi": t.pi})
    st = eng.one(t.aggregate(n=bad.sum(), ex=rows.collect(where=bad)[:3],
                             nan_ex=t.item.collect(where=is_nan)[:3]), step="validate truth inclusion")
    if st["n"]:
        nans = set(map(str, st["nan_ex"] or []))
        ex = ", ".join(f"item {r['item']!r} of entity {r['entity']!r}: "
                       f"{'NaN' if str(r['item']) in nans else 'null' if r['pi'] is None else r['pi']}"
                       for r in st["ex"])
        raise InputError(f"{st['n']} rows of the {label} have an inclusion probability outside (0, 1] in column "
                         f"'{column}' (first: {ex}). Each listed entity's probability of being in the sample must "
                         "be a number in (0, 1].")
    g = t.group_by("entity").aggregate(lo=t.pi.min(), hi=t.pi.max())
    diff_ = g.filter(g.lo != g.hi)
    st = eng.one(diff_.aggregate(n=diff_.count()), step="validate truth inclusion per entity")
    if st["n"]:
        ex = eng.rows(diff_.order_by("entity").limit(3), step="validate truth inclusion per entity")
        first = "; ".join(f"entity {r['entity']!r} has {r['lo']!r} and {r['hi']!r}" for r in ex)
        raise InputError(f"The inclusion probability in column '{column}' of the {label} differs within an entity "
                         f"({st['n']} {'entity holds' if st['n'] == 1 else 'entities hold'} more than one value; "
                         f"first: {first}). It is the probability that "
                         "the whole entity is in the sample: give every item of an entity the same value.")
    return g.select(entity=g.entity, pi=g.lo)


def _check_complete(truth_diff: Diff, role: str) -> None:
    r = truth_diff.restriction
    if r.base_only_items:
        raise InputError(
            f"{r.base_only_items:,} items of the {truth_diff.labels['base']} are not in the "
            f"{truth_diff.labels['exp']} (first: {examples_text(r.base_only_examples)}). A truth sample lists complete "
            f"entities, and an entity with items the {role} lacks cannot be scored against the whole population: "
            f"add those items to the {role} (each as a cluster of its own if it left them out), or remove their "
            "entities from the truth (which changes the design).")


# ============================================================================ the result
def _dicts(x):
    """Estimates (nested in dicts) as their JSON form."""
    if isinstance(x, PopulationEstimate):
        return x.to_dict()
    if isinstance(x, dict):
        return {k: _dicts(v) for k, v in x.items()}
    return x


def _nested(pop: PopulationEstimates) -> dict:
    """One clustering: ``{precision, recall, f1}``; two: ``{base: {...}, exp: {...}, delta_precision, …}``."""
    if len(pop.sides) == 1:
        return dict(next(iter(pop.sides.values())))
    return {**{side: dict(est) for side, est in pop.sides.items()}, **pop.deltas}


@dataclass(frozen=True)
class TruthSampleResult:
    """The population's pointwise Precision, Recall and F1 estimated from a truth of sampled complete
    entities (:func:`estimate_pointwise`).

    Attributes
    ----------
    sides
        ``("clustering",)`` or ``("base", "exp")``.
    estimates
        One clustering: ``{"precision", "recall", "f1"}``; two: ``{"base": {...}, "exp": {...},
        "delta_precision", "delta_recall", "delta_f1"}`` (Exp − Base, paired), each an
        :class:`PopulationEstimate` (``exact``: the truth is a census).
    truth_sample, design, column
        What was given (``"uniform"`` or the column's name), the design (``"uniform"`` or
        ``"poisson"``) and the inclusion column (None for uniform).
    entities, population_entities, population_entities_from
        ``n`` listed entities; ``N`` and where it came from: ``"given"``, ``"estimated"``
        (``n · items in the clustering / items in the truth``) or ``"design"`` (Poisson: ``Σ 1/π_k``).
    census
        The truth is the whole population (``n = N``, or every ``π_k = 1``): the estimates are exact.
    truth_items, truth_weight
        The items the truth lists and their weight.
    population_items, population_weight
        ``{side: …}``: the items of each clustering (the population) and their weight.
    restricted
        Today's numbers over the truth's items only (``pointwise`` without a design; laid out as
        ``estimates``, plain numbers): Precision among them is optimistic.
    slices
        ``{"col": [{col: value, "entities", "items", "weight", "estimates": {...}}]}``: ``entities``
        and ``items`` are the listed entities and truth items in the slice.
    totals
        ``{side: EntityTotals}``, in the same entity order; ``inclusion`` the ``π_k`` (Poisson).
    restrictions
        ``{side: Restriction}`` of the truth against each clustering.
    notes
        Sentences a reader should see (how ``N`` was found, caveats).
    """

    sides: tuple[str, ...]
    estimates: dict
    truth_sample: str
    design: str
    column: str | None
    entities: int
    population_entities: float
    population_entities_from: str
    census: bool
    truth_items: int
    truth_weight: float
    population_items: dict[str, int]
    population_weight: dict[str, float]
    restricted: dict
    slices: dict
    restrictions: dict[str, Restriction]
    notes: tuple[str, ...]
    engine: str
    totals: dict[str, EntityTotals] = field(repr=False, compare=False)
    inclusion: np.ndarray | None = field(default=None, repr=False, compare=False)

    def _one(self, metric: str) -> PopulationEstimate:
        if len(self.sides) != 1:
            raise InputError(f"Two clusterings: read estimates['base'][{metric!r}] or estimates['exp'][{metric!r}].")
        return self.estimates[metric]

    @property
    def precision(self) -> float:
        """The population Precision estimate (one clustering)."""
        return self._one("precision").value

    @property
    def recall(self) -> float:
        """The population Recall estimate (one clustering)."""
        return self._one("recall").value

    @property
    def f1(self) -> float:
        """The population F1 estimate (one clustering)."""
        return self._one("f1").value

    def side_estimates(self, side: str | None = None) -> dict[str, PopulationEstimate]:
        """``{precision, recall, f1}`` of one clustering (``side`` None for the only one)."""
        if len(self.sides) == 1:
            if side not in (None, self.sides[0]):
                raise InputError(f"No side {side!r}: this result has one clustering.")
            return {m: self.estimates[m] for m in METRICS}
        if side not in self.sides:
            raise InputError(f"side must be one of {', '.join(self.sides)}. Got {side!r}.")
        return self.estimates[side]

    def side_dict(self, side: str | None = None) -> dict:
        """One clustering's numbers in :meth:`abcde.PointwiseResult.to_dict`'s keys (``precision``,
        ``recall``, ``f1`` the estimates; ``items``, ``total_weight`` the truth's; no ``true_links``)
        plus ``estimates`` and ``truth_sample``: what the report's and verdict's ``truth={"base": …,
        "exp": …}`` read."""
        est = self.side_estimates(side)
        return {**{m: est[m].value for m in METRICS}, "items": self.truth_items, "total_weight": self.truth_weight,
                "true_links": None, "estimates": {m: e.to_dict() for m, e in est.items()},
                "truth_sample": self.design_dict()}

    def design_dict(self) -> dict:
        return {"truth_sample": self.truth_sample, "design": self.design, "column": self.column,
                "description": DESCRIPTIONS[self.design], "entities": self.entities,
                "population_entities": self.population_entities,
                "population_entities_from": self.population_entities_from, "census": self.census}

    def per_entity(self, side: str | None = None) -> pa.Table:
        """``entity_id, items, weight, precision, recall`` (and ``inclusion``) of each listed entity:
        its items' weighted mean Precision (against whole clusters) and Recall."""
        if side is None:
            if len(self.sides) != 1:
                raise InputError(f"Two clusterings: name the side ({', '.join(self.sides)}).")
            side = self.sides[0]
        if side not in self.totals:
            raise InputError(f"side must be one of {', '.join(self.sides)}. Got {side!r}.")
        return self.totals[side].to_arrow(self.inclusion)

    def to_dict(self) -> dict:
        return {
            "truth_sample": self.design_dict(),
            "sides": list(self.sides),
            "estimates": _dicts(self.estimates),
            "f1_method": F1_METHOD,
            "interval_method": INTERVAL_METHOD,
            "truth_items": self.truth_items,
            "truth_weight": self.truth_weight,
            "population_items": dict(self.population_items),
            "population_weight": dict(self.population_weight),
            "restricted": self.restricted,
            "slices": {k: [{c: _dicts(v) for c, v in row.items()} for row in rows] for k, rows in self.slices.items()},
            "restriction": {side: r.to_dict() for side, r in self.restrictions.items()},
            "notes": list(self.notes),
            "engine": self.engine,
        }


# ============================================================================ the computation
def _design_of(truth_sample) -> tuple[str, str | None]:
    if not isinstance(truth_sample, str) or not truth_sample.strip():
        raise InputError(f"{TRUTH_SAMPLE_HINT}. Got {truth_sample!r}.")
    return (UNIFORM, None) if truth_sample == UNIFORM else ("poisson", truth_sample)


def _arrays(rows: list[dict], order: dict, n: int) -> tuple[np.ndarray, ...]:
    items, weight, ps, rs = (np.zeros(n) for _ in range(4))
    for r in rows:
        k = order[r[_p("entity")]]
        items[k] += r[_p("items")]
        weight[k] += r[_p("weight")] or 0.0
        ps[k] += r[_p("psum")] or 0.0
        rs[k] += r[_p("rsum")] or 0.0
    return items, weight, ps, rs


def estimate_pointwise(
    truth,
    clustering=None,
    *,
    base=None,
    exp=None,
    truth_sample: str,
    population_entities: float | None = None,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    truth_cluster_id: str | None = None,
    weight: str | None = None,
    slice_by: Sequence = (),
    engine: Engine | str | None = None,
) -> TruthSampleResult:
    """The population's pointwise Precision, Recall and F1 of one clustering (``clustering``), or of
    two with their paired differences (``base`` and ``exp``), from a truth that lists complete entities
    sampled by a known design.

    Parameters
    ----------
    truth
        The truth: one row per item of each listed entity, its id and its entity (``truth_cluster_id``,
        default ``cluster_id``), and for the Poisson design the inclusion-probability column.
    clustering, base, exp
        One clustering to evaluate, or Base and Exp to compare (paired on the same entities).
    truth_sample
        ``"uniform"`` (a simple random sample of entities without replacement) or the name of the
        truth's column of inclusion probabilities (independent inclusion; see the module).
    population_entities
        ``N``, the number of entities in the population (uniform design only). Default: estimated
        as ``n · items in the clustering / items in the truth`` (the result says so).
    items, item_id, cluster_id, weight, slice_by, engine
        As for :func:`abcde.pointwise`. Every item of each clustering needs an items-table row.

    Raises
    ------
    InputError
        A truth item not in a clustering (naming it); an inclusion column missing, not numeric, outside
        (0, 1] or not constant within an entity (naming the column, item and entity); a
        ``population_entities`` below the listed entities; and the input errors of :func:`abcde.impact`.

    Examples
    --------
    >>> import pyarrow as pa, abcde
    >>> truth = pa.table({"item_id": [1, 2, 3], "cluster_id": ["a", "a", "b"]})
    >>> pred = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": [7, 7, 8, 8]})
    >>> r = abcde.metrics.truth_sample.estimate_pointwise(truth, pred, truth_sample="uniform")
    >>> r.entities, r.population_entities, r.population_entities_from
    (2, 2.6666666666666665, 'estimated')
    >>> round(r.precision, 4)  # item 3 shares its cluster with item 4, outside the truth
    0.8333
    """
    sources, design, column = _arguments(clustering, base, exp, truth_sample, population_entities)
    eng = resolve(engine)
    slices = normalize_slices(slice_by)
    truth_col = truth_cluster_id or cluster_id

    diffs: dict[str, tuple[Diff, Diff]] = {}
    for side, src in sources.items():
        truth_diff = build_diff(Inputs(truth, src, items=items, item_id=item_id, cluster_id=cluster_id,
                                       base_cluster_id=truth_col, exp_cluster_id=cluster_id, weight=weight),
                                engine=eng, roles=("truth", side))
        _check_complete(truth_diff, side)
        check_slice_columns(truth_diff, slices, fields=SLICE_FIELDS)
        full = build_diff(Inputs(src, src, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight),
                          engine=eng, roles=(side, side))
        diffs[side] = (truth_diff, full)

    pis = (inclusion_table(eng, truth, column=column, item_id=item_id, entity=truth_col)
           if column is not None else None)

    scores, totals, order, inclusion = _entity_totals(eng, diffs, pis)
    first = next(iter(totals))
    n = len(order)
    b = totals[first].weight
    truth_items = int(totals[first].items.sum())
    truth_weight = float(b.sum())
    pop_items = {side: int(full.restriction.common_items) for side, (_, full) in diffs.items()}
    pop_weight = {side: float(eng.one(full.fragments.aggregate(w=full.fragments.w.sum()),
                                      step=f"weight of the {side}")["w"]) for side, (_, full) in diffs.items()}
    N, source, notes = _population_size(design, population_entities, n, truth_items, pop_items, inclusion)
    if n < 2 and not (n >= N or (inclusion is not None and np.all(inclusion == 1.0))):
        notes.append("The truth lists one entity: no standard error can be estimated.")

    sums = {side: (t.precision_sum, t.recall_sum) for side, t in totals.items()}
    pop = estimate_population(b, sums, inclusion=inclusion, population_entities=N if design == UNIFORM else None)
    census = pop.census

    restricted = _restricted(diffs, first, len(sources))
    slice_rows = _slice_rows(eng, slices, diffs, scores, order, inclusion, N if design == UNIFORM else None)

    return TruthSampleResult(
        sides=tuple(sources), estimates=_nested(pop), truth_sample=truth_sample, design=design, column=column,
        entities=n, population_entities=N, population_entities_from=source, census=census,
        truth_items=truth_items, truth_weight=truth_weight, population_items=pop_items, population_weight=pop_weight,
        restricted=restricted, slices=slice_rows,
        restrictions={side: d[0].restriction for side, d in diffs.items()}, notes=tuple(notes), engine=eng.name,
        totals=totals, inclusion=inclusion)


def _arguments(clustering, base, exp, truth_sample, population_entities) -> tuple[dict, str, str | None]:
    """The clusterings to evaluate (``{side: input}``) and the design (``design, column``), checked."""
    if clustering is not None and (base is not None or exp is not None):
        raise InputError("Give one clustering (clustering) or two to compare (base and exp), not both.")
    if clustering is not None:
        sources = {"clustering": clustering}
    elif base is not None and exp is not None:
        sources = {"base": base, "exp": exp}
    else:
        raise InputError("A clustering to evaluate is needed (clustering), or two to compare (base and exp).")
    design, column = _design_of(truth_sample)
    if design != UNIFORM and population_entities is not None:
        raise InputError(f"population_entities applies to truth_sample='uniform'; the inclusion probabilities in "
                         f"column '{column}' need no population size.")
    if population_entities is not None and (isinstance(population_entities, bool)
                                            or not isinstance(population_entities, (int, float))
                                            or not math.isfinite(population_entities)):
        raise InputError(f"population_entities must be a number of entities. Got {population_entities!r}.")
    return sources, design, column


def _entity_totals(eng: Engine, diffs: dict, pis) -> tuple[dict, dict, dict, np.ndarray | None]:
    """Each side's fragment scores and :class:`EntityTotals` (one row per listed entity, in one order
    for every side), the entities' order and their inclusion probabilities (Poisson design)."""
    rows: dict[str, list[dict]] = {}
    scores: dict[str, ibis.Table] = {}
    for side, (truth_diff, full) in diffs.items():
        scores[side] = fragment_scores(truth_diff, full)
        s = _entity_sums(scores[side])
        if pis is not None:
            s = s.left_join(pis, s[_p("entity")] == pis.entity).select(*s.columns, **{_p("pi"): pis.pi})
        rows[side] = eng.rows(s, step=f"truth sample entity totals ({side})")
    first = next(iter(rows))
    entities = sorted((r[_p("entity")] for r in rows[first]), key=lambda v: (str(type(v)), v))
    order = {e: k for k, e in enumerate(entities)}
    n = len(entities)
    totals: dict[str, EntityTotals] = {}
    for side, rs in rows.items():
        if len(rs) != n or any(r[_p("entity")] not in order for r in rs):
            raise InputError("The truth's entities differ between the clusterings' diffs; was the truth changed "
                             "while it was read?")
        it, w, ps, rr = _arrays(rs, order, n)
        totals[side] = EntityTotals(entities, it.astype(np.int64), w, ps, rr)
    b = totals[first].weight
    for side, t in totals.items():
        if not np.allclose(t.weight, b, rtol=1e-12, atol=0):
            raise InputError("The truth's entity weights differ between the clusterings' diffs.")
    inclusion = None
    if pis is not None:
        inclusion = np.zeros(n)
        for r in rows[first]:
            inclusion[order[r[_p("entity")]]] = r[_p("pi")]
    return scores, totals, order, inclusion


def _population_size(design: str, population_entities, n: int, truth_items: int, pop_items: dict,
                     inclusion) -> tuple[float, str, list[str]]:
    """``N``, where it comes from (given, estimated, the design) and what the result says about it."""
    notes: list[str] = []
    if design == UNIFORM:
        if population_entities is not None:
            N, source = float(population_entities), "given"
            if not (math.isfinite(N) and N >= n):
                raise InputError(f"population_entities must be at least the {n:,} entities the truth lists. "
                                 f"Got {population_entities!r}.")
        else:
            most = max(pop_items.values())
            N, source = n * most / truth_items, "estimated"
            if len(set(pop_items.values())) > 1:
                counts = ", ".join(f"{s}: {v:,}" for s, v in pop_items.items())
                notes.append(f"The clusterings hold different numbers of items ({counts}); "
                             f"the population's entities are estimated from the larger.")
            if truth_items < most:
                notes.append(f"The population's number of entities N = {N:,.1f} is estimated from the truth's mean "
                             f"entity size: {n:,} entities × {most:,} items in the clustering / {truth_items:,} items "
                             "in the truth. It enters only the finite-population correction (1 − n/N); give "
                             "population_entities (--population-entities) when it is known.")
    else:
        with np.errstate(divide="ignore", over="ignore"):
            N, source = float(np.sum(1.0 / inclusion)), "design"  # inf beyond a double: said so in words
        if np.all(inclusion == 1.0) and truth_items < min(pop_items.values()):
            notes.append(f"Every listed entity has inclusion probability 1, but the truth covers {truth_items:,} of "
                         f"the {min(pop_items.values()):,} items: the estimates are the population's only if every "
                         "entity not listed had no chance of being listed, i.e. they describe the listed entities.")
    return N, source, notes


def _restricted(diffs: dict, first: str, sides: int) -> dict:
    """The numbers over the truth's items only (today's restricted Precision, Recall and F1)."""
    restricted_side = {}
    for side, (truth_diff, _) in diffs.items():
        o = overall(truth_diff)
        p, r = 1 - o["merge_rate"], 1 - o["split_rate"]
        restricted_side[side] = {"precision": p, "recall": r, "f1": 0.0 if p + r == 0 else 2 * p * r / (p + r)}
    if sides == 1:
        return restricted_side[first]
    return {**restricted_side, **{f"delta_{m}": restricted_side["exp"][m] - restricted_side["base"][m]
                                  for m in METRICS}}


def _slice_rows(eng: Engine, slices, diffs: dict, scores: dict, order: dict, inclusion, N) -> dict:
    """Per slice column set, each value's estimates from the entity totals restricted to its items."""
    sources, n = tuple(diffs), len(order)
    first = sources[0]
    slice_rows: dict[str, list[dict]] = {}
    for cols in slices:
        per_side = {side: eng.rows(_slice_entity_sums(diffs[side][0], scores[side], cols),
                                   step=f"truth sample slice {','.join(cols)} ({side})") for side in sources}
        keys: dict[tuple, dict[str, list[dict]]] = {}
        for side, rs in per_side.items():
            for r in rs:
                keys.setdefault(tuple(r[c] for c in cols), {s: [] for s in sources})[side].append(r)
        out = []
        for key in sorted(keys, key=lambda k: tuple((v is None, str(type(v)), v if v is not None else 0) for v in k)):
            arrays = {side: _arrays(rs, order, n) for side, rs in keys[key].items()}
            it, w, _, _ = arrays[first]
            est = estimate_population(w, {s: (a[2], a[3]) for s, a in arrays.items()}, inclusion=inclusion,
                                      population_entities=N)
            out.append({**dict(zip(cols, key)), "entities": int(np.count_nonzero(it)), "items": int(it.sum()),
                        "weight": float(w.sum()), "estimates": _nested(est)})
        slice_rows[",".join(cols)] = out
    return slice_rows


def population_totals(
    truth,
    clustering,
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    truth_cluster_id: str | None = None,
    weight: str | None = None,
    engine: Engine | str | None = None,
) -> EntityTotals:
    """The :class:`EntityTotals` of every entity the truth lists (computed as :func:`estimate_pointwise`
    does): with a full truth, the population's, from which a simulation draws samples of entities and
    calls :func:`estimate_population` on each."""
    res = estimate_pointwise(truth, clustering, truth_sample=UNIFORM, population_entities=None, items=items,
                             item_id=item_id, cluster_id=cluster_id, truth_cluster_id=truth_cluster_id,
                             weight=weight, engine=engine)
    return res.totals["clustering"]


#: The module's names, with the population estimates' (:mod:`abcde.metrics.population`) it reads.
__all__ = ["FEW_ENTITIES", "INTERVAL_METHOD", "PopulationEstimate", "PopulationEstimates", "TRUTH_SAMPLE_HINT",
           "TruthSampleResult", "UNIFORM", "bounded_interval", "degrees_of_freedom", "effective_entities",
           "estimate_pointwise", "estimate_population", "mover_interval", "population_totals", "quantile"]
