"""Pointwise Precision and Recall of a clustering against a ground truth.

The pointwise metrics (van Staden & Grubb, 2024) that ABCDE builds on. For an
item ``i`` of clustering ``C`` with truth clustering ``G``::

    Precision(i) = weight(C(i) ∩ G(i)) / weight(C(i))
    Recall(i)    = weight(C(i) ∩ G(i)) / weight(G(i))

lifted to sets of items by weighted means. With the truth as Base and ``C`` as
Exp, ``1 - Precision = OverMergeRate = MergeRate`` and
``1 - Recall = UnderMergeRate = SplitRate`` (paper, "ABCDE impact metrics"), so
this module reuses the impact computation. F1 is the harmonic mean of the
lifted Precision and Recall of a set of items.

A truth that covers part of the clustering's items gives numbers over the items it covers (the
result's ``note`` says so): Precision is then optimistic, since an overmerge with an item outside
the truth is hidden. When the truth lists complete entities sampled by a known design,
``truth_sample=`` estimates the whole population's numbers instead
(:mod:`abcde.metrics.truth_sample`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import ibis
import pyarrow as pa

from abcde.engine import Engine
from abcde.core.diff import Diff, Restriction, build_diff
from abcde.core.inputs import Inputs
from abcde.errors import InputError
from abcde.metrics.impact import (check_slice_columns, link_masses, normalize_slices, overall, per_cluster_expr,
                                  per_item_expr, private, slice_sums)

if TYPE_CHECKING:
    from abcde.metrics.truth_sample import TruthSampleResult

#: What every row of :attr:`PointwiseResult.slices` holds besides its slice columns' values (a slice
#: column of one of these names is refused: :func:`~abcde.metrics.impact.check_slice_columns`).
SLICE_FIELDS = ("items", "weight", "precision", "recall", "f1")


def f1_score(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall (0 when both are 0)."""
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _f1_expr(p, r):
    return ibis.ifelse((p + r) == 0, 0.0, 2 * p * r / (p + r))


@dataclass(frozen=True)
class PointwiseResult:
    """Weighted pointwise Precision, Recall and F1 of a clustering against a truth.

    Attributes
    ----------
    items, total_weight
        The items both clusterings share, and their weight.
    precision, recall, f1
        ``Precision(T)``, ``Recall(T)`` and their harmonic mean.
    restriction
        What restricting to common items removed (truth plays Base).
    slices
        ``{"col": [row, ...]}`` with ``items, weight, precision, recall, f1``.
    true_links
        The weight of the true links the clustering keeps, ``T_C = Σ w_i·w_j`` over the ordered pairs
        ``i ≠ j`` of one cluster and one truth entity, divided by ``total_weight²`` (the pairs of each
        truth ∩ cluster fragment): two clusterings' ratio minus 1 is the exact recall lift
        (:mod:`abcde.quality.recall`), when both are measured on the same items.
    note
        When the truth covers only part of the clustering's items: that these numbers describe the
        items the truth covers, not the population (:func:`partial_truth_note`); else empty.
    """

    items: int
    total_weight: float
    precision: float
    recall: float
    f1: float
    restriction: Restriction
    slices: dict
    engine: str
    diff: Diff = field(repr=False, compare=False)
    true_links: float = math.nan
    note: str = ""

    def per_item_expr(self) -> ibis.Table:
        t = per_item_expr(self.diff)
        return t.select(
            "item_id",
            truth_cluster=t.base_cluster,
            cluster=t.exp_cluster,
            weight=t.weight,
            precision=1 - t.merge_rate,
            recall=1 - t.split_rate,
        )

    def per_item(self) -> pa.Table:
        """``item_id, truth_cluster, cluster, weight, precision, recall``."""
        return self.diff.engine.to_arrow(self.per_item_expr(), step="pointwise per item")

    def per_cluster_expr(self) -> ibis.Table:
        t = per_cluster_expr(self.diff, "exp", self.total_weight)
        p, r = 1 - t.merge_rate, 1 - t.split_rate
        return t.select("cluster_id", "size", "weight", precision=p, recall=r, f1=_f1_expr(p, r)).order_by(
            ["f1", "cluster_id"]
        )

    def per_cluster(self) -> pa.Table:
        """Clusters of the evaluated clustering: ``cluster_id, size, weight, precision, recall, f1``."""
        return self.diff.engine.to_arrow(self.per_cluster_expr(), step="pointwise per cluster")

    def to_dict(self) -> dict:
        return {
            "items": self.items,
            "total_weight": self.total_weight,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "restriction": self.restriction.to_dict(),
            "slices": self.slices,
            "engine": self.engine,
            "true_links": self.true_links if math.isfinite(self.true_links) else None,
            "note": self.note or None,
        }

    def write(self, out_dir: str | os.PathLike) -> list[str]:
        """Write ``pointwise_items.parquet`` and ``pointwise_clusters.parquet`` into ``out_dir``."""
        return self.diff.engine.write_outputs(out_dir, {"pointwise_items.parquet": self.per_item_expr(),
                                                         "pointwise_clusters.parquet": self.per_cluster_expr()})


def partial_truth_note(truth_items: int, outside: int) -> str:
    """What numbers over a partial truth's items describe, in words (empty when the truth covers every
    item of the clustering): ``outside`` items of the clustering are not in the truth."""
    if not outside:
        return ""
    return (f"These numbers describe the {truth_items:,} items the truth covers, not the population (the clustering "
            f"has {outside:,} more items): Precision is optimistic when the clustering puts them with items outside "
            "the truth. If the truth lists complete entities sampled by a known design, --truth-sample DESIGN "
            "(truth_sample= in Python) estimates the population's Precision and Recall with intervals.")


def pointwise(
    truth,
    clustering=None,
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    truth_cluster_id: str | None = None,
    weight: str | None = None,
    slice_by: Sequence = (),
    engine: Engine | str | None = None,
    truth_sample: str | None = None,
    population_entities: float | None = None,
) -> "PointwiseResult | TruthSampleResult":
    """Pointwise Precision, Recall and F1 of ``clustering`` against ``truth``.

    Inputs and options are as for :func:`abcde.impact`; ``truth`` may cover only
    part of the items (the metrics are over the items both share, reported in
    ``restriction``, and the result's ``note`` says that they describe those items,
    not the population).

    ``truth_sample``: the truth lists complete entities (every item of each entity it names)
    sampled by a known design, ``"uniform"`` (a simple random sample of entities) or the name of
    the truth's column of each entity's inclusion probability. Then the result is a
    :class:`~abcde.metrics.truth_sample.TruthSampleResult`: the whole population's Precision,
    Recall and F1 estimated with standard errors and intervals, each item's Precision measured
    against its whole cluster (:func:`abcde.metrics.truth_sample.estimate_pointwise`, which also
    compares two clusterings; ``population_entities`` is its ``N``).

    Examples
    --------
    >>> import pyarrow as pa, abcde
    >>> truth = pa.table({"item_id": [1, 2, 3], "cluster_id": [1, 1, 2]})
    >>> pred = pa.table({"item_id": [1, 2, 3], "cluster_id": [7, 7, 7]})
    >>> r = abcde.pointwise(truth, pred)
    >>> round(r.precision, 4), r.recall
    (0.5556, 1.0)
    """
    given = Inputs.of(truth, clustering, items=items, item_id=item_id, cluster_id=cluster_id,
                      base_cluster_id=truth_cluster_id, weight=weight)
    if truth_sample is not None:
        from abcde.metrics.truth_sample import estimate_pointwise  # lazy: start-up time

        return estimate_pointwise(given.base, given.exp, truth_sample=truth_sample,
                                  population_entities=population_entities, items=given.items,
                                  item_id=given.item_id, cluster_id=given.exp_cluster(),
                                  truth_cluster_id=given.base_cluster(), weight=given.weight, slice_by=slice_by,
                                  engine=engine)
    if population_entities is not None:
        raise InputError("population_entities is the population size of a truth sample: it needs truth_sample.")
    diff = build_diff(given, engine=engine, roles=("truth", "clustering"))
    slices = normalize_slices(slice_by)
    check_slice_columns(diff, slices, fields=SLICE_FIELDS)
    o = overall(diff)
    p, r = 1 - o["merge_rate"], 1 - o["split_rate"]
    slice_rows = {}
    pi = per_item_expr(diff)
    for cols in slices:
        rows = diff.engine.rows(slice_sums(diff, cols, o["total_weight"], pi), step="pointwise slices")
        out = []
        for row in rows:
            sp, sr = 1 - row[private("merge_rate")], 1 - row[private("split_rate")]
            out.append(
                {**{c: row[c] for c in cols}, "items": row[private("items")], "weight": row[private("weight")],
                 "precision": sp, "recall": sr, "f1": f1_score(sp, sr)}
            )
        slice_rows[",".join(cols)] = out
    return PointwiseResult(
        items=o["items"],
        total_weight=o["total_weight"],
        precision=p,
        recall=r,
        f1=f1_score(p, r),
        restriction=diff.restriction,
        slices=slice_rows,
        engine=diff.engine.name,
        diff=diff,
        true_links=link_masses(diff, o["total_weight"])["both"] if o["total_weight"] > 0 else math.nan,
        note=partial_truth_note(o["items"], diff.restriction.exp_only_items),
    )
