"""Exact impact metrics: per item, per cluster, per slice and overall.

Paper, section "ABCDE impact metrics". For an item ``i``::

    SplitRate(i)       = weight(Base(i) \\ Exp(i)) / weight(Base(i))
    MergeRate(i)       = weight(Exp(i) \\ Base(i)) / weight(Exp(i))
    JaccardDistance(i) = (weight(Base(i) \\ Exp(i)) + weight(Exp(i) \\ Base(i)))
                         / weight(Base(i) ∪ Exp(i))
                       = SplitDistance(i) + MergeDistance(i)
    SplitDistance(i)   = weight(Base(i) \\ Exp(i)) / weight(Base(i) ∪ Exp(i))
    MergeDistance(i)   = weight(Exp(i) \\ Base(i)) / weight(Base(i) ∪ Exp(i))

and for a set of items ``I`` each metric is the weighted mean over ``I``. All of
it is computed from the fragment table (:mod:`abcde.core.diff`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Sequence

import ibis
import pyarrow as pa

from abcde.util import progress as _progress
from abcde.engine import Engine
from abcde.errors import InputError
from abcde.core.diff import Diff, Restriction, affected_fragments, affected_items, build_diff
from abcde.core.inputs import Inputs, private
from abcde.core.formulas import affected, fragment_metrics
from abcde.core.names import DISTANCE_PARTS, IMPACT_METRICS, METRIC_LABELS
from abcde.util import display

#: Every exact metric computed per item, cluster, slice and overall: the paper's three and
#: JaccardDistance's parts SplitDistance and MergeDistance.
METRICS = IMPACT_METRICS + DISTANCE_PARTS
SIDES = ("base", "exp")
#: What every row of :attr:`ImpactResult.slices` holds besides its slice columns' values. A slice
#: column of one of these names would share a key with that number: it is refused
#: (:func:`check_slice_columns`).
SLICE_FIELDS = ("items", "weight", *METRICS, "contribution")


def normalize_slices(slice_by) -> list[tuple[str, ...]]:
    if slice_by is None:
        return []
    if isinstance(slice_by, str):
        slice_by = [slice_by]
    out = []
    for s in slice_by:
        cols = tuple(c.strip() for c in s.split(",")) if isinstance(s, str) else tuple(s)
        if not cols or any(not c for c in cols):
            raise InputError(f"Empty column name in slice {s!r}.")
        out.append(cols)
    return out


def check_slice_columns(diff: Diff, slices: list[tuple[str, ...]], *, fields: Sequence[str] = SLICE_FIELDS) -> None:
    """Raise a clear error when a slicing names a column the items table lacks, a column twice, or a
    column named as one of ``fields``, the numbers each slice row holds beside the slice's values (the
    impact's :data:`SLICE_FIELDS`; none for slices whose rows hold the value under a key of its own)."""
    if not slices:
        return
    if diff.items is None:
        raise InputError("Slicing needs an items table with attribute columns (--items).")
    for cols in slices:
        twice = [c for k, c in enumerate(cols) if c in cols[:k]]
        if twice:
            raise InputError(f"Slice {','.join(cols)!r} names column '{twice[0]}' more than once.")
        for c in cols:
            if c not in diff.attributes:
                raise InputError(
                    f"Slice column '{c}' not found in the {diff.labels['items']}. "
                    f"Attribute columns: {', '.join(repr(a) for a in diff.attributes) or '(none)'}."
                )
            dtype = diff.items[c].type()
            if dtype.is_nested():
                raise InputError(
                    f"Slice column '{c}' of the {diff.labels['items']} holds {dtype} values; a slice is a "
                    "column of single values (text, numbers, dates, true/false). Slice by a field of it "
                    "flattened into its own column."
                )
            if c in fields:
                raise InputError(
                    f"Slice column '{c}' of the {diff.labels['items']} has the name of a number abcde reports "
                    f"for every slice ({', '.join(fields)}), and each slice row would hold both under one key; "
                    f"rename the column (for example to 'attr_{c}') to slice by it."
                )


def _float(x) -> float:
    return float(x) if x is not None else 0.0


@dataclass(frozen=True)
class ImpactResult:
    """Exact impact metrics of Exp relative to Base.

    Attributes
    ----------
    items, total_weight
        Size and weight of the population ``T`` (the items both clusterings share).
    split_rate, merge_rate, jaccard_distance
        ``SplitRate(T)``, ``MergeRate(T)``, ``JaccardDistance(T)``.
    split_distance, merge_distance
        ``SplitDistance(T)`` and ``MergeDistance(T)``, whose sum is ``JaccardDistance(T)``.
    affected_items, affected_weight, unaffected_items, unaffected_weight
        Items with ``Base(i) != Exp(i)`` and the rest.
    restriction
        What restricting to common items removed (:class:`~abcde.core.diff.Restriction`).
    top_clusters
        ``{"base": [...], "exp": [...], "interleaved": [...]}``: the clusters with
        the largest contribution ``weight(C)·JaccardDistance(C)/weight(T)``.
    slices
        ``{"col" or "col1,col2": [row, ...]}``: metrics per attribute value.

    Per-item and per-cluster tables are computed on demand by :meth:`per_item`
    and :meth:`per_cluster`, as Arrow tables.
    """

    items: int
    total_weight: float
    split_rate: float
    merge_rate: float
    jaccard_distance: float
    split_distance: float
    merge_distance: float
    affected_items: int
    affected_weight: float
    unaffected_items: int
    unaffected_weight: float
    restriction: Restriction
    top_clusters: dict
    slices: dict
    engine: str
    diff: Diff = field(repr=False, compare=False)

    # -- tables ------------------------------------------------------------
    def per_item_expr(self) -> ibis.Table:
        return per_item_expr(self.diff)

    def per_item(self) -> pa.Table:
        """Per-item metrics: ``item_id, base_cluster, exp_cluster, weight,
        split_rate, merge_rate, jaccard_distance, split_distance, merge_distance``."""
        return self.diff.engine.to_arrow(self.per_item_expr(), step="per-item metrics")

    def per_cluster_expr(self, side: str) -> ibis.Table:
        return per_cluster_expr(self.diff, side, self.total_weight)

    def per_cluster(self, side: str) -> pa.Table:
        """Per-cluster metrics of ``side`` (``"base"`` or ``"exp"``): ``cluster_id,
        size, weight, split_rate, merge_rate, jaccard_distance, split_distance, merge_distance,
        contribution``."""
        return self.diff.engine.to_arrow(self.per_cluster_expr(side), step=f"per-{side}-cluster metrics")

    def lookup(self, item_ids: Sequence) -> list[dict]:
        """Per-item metrics of the given ids (ids not in ``T`` are absent)."""
        ids = list(item_ids)
        if not ids:
            return []
        t = self.per_item_expr()
        if t.item_id.type().is_integer():
            try:
                ids = [int(i) for i in ids]
            except (TypeError, ValueError) as exc:
                raise InputError(f"Item ids are integers here; cannot look up {ids!r}.") from exc
        else:
            ids = [str(i) for i in ids]
        return self.diff.engine.rows(t.filter(t.item_id.isin(ids)).order_by("item_id"), step="lookup")

    # -- output ------------------------------------------------------------
    def to_dict(self) -> dict:
        """The canonical JSON-serializable form (what ``--json`` prints)."""
        return {
            "items": self.items,
            "total_weight": self.total_weight,
            "split_rate": self.split_rate,
            "merge_rate": self.merge_rate,
            "jaccard_distance": self.jaccard_distance,
            "split_distance": self.split_distance,
            "merge_distance": self.merge_distance,
            "affected_items": self.affected_items,
            "affected_weight": self.affected_weight,
            "unaffected_items": self.unaffected_items,
            "unaffected_weight": self.unaffected_weight,
            "restriction": self.restriction.to_dict(),
            "top_clusters": self.top_clusters,
            "slices": self.slices,
            "engine": self.engine,
        }

    def _repr_html_(self) -> str:
        """The headline numbers in a notebook, in the report's names and number style."""
        aff = self.affected_weight / self.total_weight if self.total_weight else 0.0
        rows = [("items", display.count(self.items)), ("total weight", display.weight(self.total_weight)),
                (METRIC_LABELS["split_rate"], display.pct(self.split_rate)),
                (METRIC_LABELS["merge_rate"], display.pct(self.merge_rate)),
                (METRIC_LABELS["jaccard_distance"], display.pct(self.jaccard_distance)),
                (f"= {METRIC_LABELS['split_distance']} + {METRIC_LABELS['merge_distance']}",
                 f"{display.pct(self.split_distance)} + {display.pct(self.merge_distance)}"),
                ("affected items", f"{display.count(self.affected_items)} ({display.pct(aff)} of weight)")]
        top = [[c["side"], str(c["cluster_id"]), display.count(c["size"]), display.weight(c["weight"]),
                display.pct(c["jaccard_distance"]), display.pct(c["contribution"])]
               for c in self.top_clusters.get("interleaved", [])[:10]]
        out = display.html_table("Impact of Exp relative to Base", rows,
                                 note=f"engine: {self.engine}; .to_dict() has every number")
        if top:
            out += display.html_table("Most affected clusters", top,
                                      ["side", "cluster", "size", "weight", "Jaccard", "contribution"])
        return out

    def write(self, out_dir: str | os.PathLike, *, only_affected: bool = False) -> list[str]:
        """Write ``items.parquet``, ``base_clusters.parquet``, ``exp_clusters.parquet``
        and ``impact.json`` into ``out_dir`` (see :meth:`abcde.engine.base.Engine.write_outputs`:
        with DuckDB a failure leaves no partial output; Spark writes directories of
        part files, to any path or URI it can write).

        ``only_affected``: the tables hold the affected items and clusters only (every metric of the
        others is 0; their count and weight are in ``impact.json``, which records the choice as
        ``"tables": "affected"``). At a billion items the whole tables are tens of GB."""
        d = self.to_dict()
        d["tables"] = "affected" if only_affected else "all"
        with _progress.step(f"Writing per-item and per-cluster tables to {out_dir}"
                            + (" (affected items and clusters)" if only_affected else "")):
            return self.diff.engine.write_outputs(
                out_dir,
                {"items.parquet": per_item_expr(self.diff, only_affected=only_affected),
                 **{f"{side}_clusters.parquet": per_cluster_expr(self.diff, side, self.total_weight,
                                                                 only_affected=only_affected) for side in SIDES}},
                {"impact.json": json.dumps(d, indent=2, default=str) + "\n"},
            )


def per_item_expr(diff: Diff, items: ibis.Table | None = None, *, only_affected: bool = False) -> ibis.Table:
    """Per-item metrics of all common items (or of ``items``, a subset of them).

    Only the affected fragments are joined (typically a few percent): an item of an unaffected
    fragment (its Base cluster is its Exp cluster) has every metric exactly 0, which the
    formulas give too (``W(B) − W(F) = 0``, ``W(F) / W(B ∪ E) = 1``). At a billion items this
    keeps the join's hash table to the affected fragments instead of every one."""
    f = fragment_metrics(affected_fragments(diff)).select("base_cluster", "exp_cluster", *METRICS)
    j = items if items is not None else affected_items(diff) if only_affected else diff.joined
    on = [j.base_cluster == f.base_cluster, j.exp_cluster == f.exp_cluster]
    t = j.join(f, on) if only_affected else j.left_join(f, on)
    return t.select(
        j.item_id, j.base_cluster, j.exp_cluster, j.weight,
        **{m: t[m].fill_null(ibis.literal(0.0, type="float64")) for m in METRICS},
    )


def _weighted_sums(t: ibis.Table, weight) -> dict:
    """``Σ weight · metric`` of each impact metric (as ``_<metric>``): a set's metric is the
    weighted mean of its items' (paper, "ABCDE impact metrics")."""
    return {f"_{m}": (weight * t[m]).sum() for m in METRICS}


def _weighted_means(g: ibis.Table, total_weight: float) -> dict:
    """From :func:`_weighted_sums` and the set's ``weight``: each metric's weighted mean, and
    the set's contribution ``Σ weight · JaccardDistance / weight(T)``."""
    return {**{m: g[f"_{m}"] / g.weight for m in METRICS}, "contribution": g._jaccard_distance / total_weight}


def per_cluster_expr(diff: Diff, side: str, total_weight: float, *, only_affected: bool = False) -> ibis.Table:
    """Per-cluster metrics of one side's clusters; ``only_affected``: of its affected clusters only
    (whose fragments are all affected: a cluster with two fragments makes both affected, one whose
    single fragment is affected has no other), each with its whole size and weight."""
    if side not in SIDES:
        raise InputError(f"side must be 'base' or 'exp'. Got {side!r} instead.")
    # The affected fragments are materialized once per diff (a few percent of the fragments).
    f = fragment_metrics(affected_fragments(diff) if only_affected else diff.fragments)
    key = f"{side}_cluster"
    g = f.group_by(cluster_id=f[key]).aggregate(size=f.n.sum(), weight=f.w.sum(), **_weighted_sums(f, f.w))
    return g.select("cluster_id", "size", "weight", **_weighted_means(g, total_weight))


def overall(diff: Diff) -> dict:
    """Overall metrics and affected counts from the fragment table; one query per diff (the impact, the
    pair sample and its exact facts each ask)."""
    if diff.cache.overall is None:
        diff.cache.overall = _overall(diff)
    return dict(diff.cache.overall)


def _overall(diff: Diff) -> dict:
    f = fragment_metrics(diff.fragments)
    r = diff.engine.one(
        f.aggregate(
            items=f.n.sum(),
            total_weight=f.w.sum(),
            **_weighted_sums(f, f.w),
            affected_items=f.n.sum(where=f.affected),
            affected_weight=f.w.sum(where=f.affected),
        ),
        step="overall metrics",
    )
    W = float(r["total_weight"])
    items = int(r["items"])
    aff_n = int(r["affected_items"] or 0)
    aff_w = _float(r["affected_weight"])
    return {
        "items": items,
        "total_weight": W,
        **{m: _float(r[f"_{m}"]) / W for m in METRICS},
        "affected_items": aff_n,
        "affected_weight": aff_w,
        "unaffected_items": items - aff_n,
        "unaffected_weight": W - aff_w,
    }


def top_clusters(diff: Diff, total_weight: float, k: int) -> dict:
    """The ``k`` Base and Exp clusters with the largest contribution, and both
    interleaved in one ranking (paper, "Insights and debugging" footnote)."""
    if k < 0:
        raise InputError(f"top must be a non-negative integer. Got {k!r} instead.")
    out: dict[str, list] = {side: [] for side in SIDES}
    if k == 0:  # nothing to list: no query (its compile cost a third of a small impact)
        return {**out, "interleaved": []}
    ids = {side: diff.fragments[f"{side}_cluster"].type() for side in SIDES}
    parts = []
    for side in SIDES:
        # Only affected clusters have a contribution > 0: a group-by over the affected fragments
        # (a few percent) instead of all.
        t = per_cluster_expr(diff, side, total_weight, only_affected=True)
        # Ranked on 14 decimals, then id: engines sum in different orders, and float
        # noise (~1e-19) must not reorder tied clusters between DuckDB and Spark.
        t = t.filter(t.contribution > 0).order_by([ibis.desc(t.contribution.round(14)), "cluster_id"]).limit(k)
        # Both sides in one query, each side's ids in a column of their own (their types may differ).
        rank = ibis.row_number().over(order_by=[ibis.desc(t.contribution.round(14)), t.cluster_id])
        parts.append(t.select(side=ibis.literal(side), rank=rank,
                              **{f"{s}_id": t.cluster_id if s == side else ibis.null(ids[s]) for s in SIDES},
                              **{c: t[c] for c in t.columns if c != "cluster_id"}))
    metrics = [c for c in parts[0].columns if c not in ("side", "rank", "base_id", "exp_id")]
    for r in diff.engine.rows(ibis.union(*parts).order_by(["side", "rank"]), step="top clusters"):
        side = r["side"]
        out[side].append({"side": side, "cluster_id": r[f"{side}_id"], **{c: r[c] for c in metrics}})
    both = out["base"] + out["exp"]
    both.sort(key=lambda r: (-round(r["contribution"], 14), r["side"]))
    out["interleaved"] = both[:k]
    return out


def link_masses(diff: Diff, total_weight: float) -> dict:
    """Exact pair masses ``M_s = Σ w_i·w_j / W²`` over the ordered pairs ``i ≠ j`` together in
    either clustering, by stratum (issue 38, the recall lift)::

        both           (together in both, j ∈ F∖{i}):  Σ_F (W(F)² − Σ_F w²)
        intersection±  the part of ``both`` in affected fragments with W(B) > W(E) (+) or < (−): the
                       pairs of the intersection strata, which ΔPrecision samples ∝ u_ij already
        agreed         the rest of ``both``: the agreed stratum, sampled ∝ w_i·w_j for the recall lift
        split          (in Base only, j ∈ B∖E):       Σ_F W(F)·(W(B) − W(F))
        merge          (in Exp only,  j ∈ E∖B):       Σ_F W(F)·(W(E) − W(F))

    from the fragments in closed form (never a pair list); once per diff and weight total."""
    key = float(total_weight)
    if key in diff.cache.link_masses:
        return dict(diff.cache.link_masses[key])
    f = diff.fragments
    within = f.w * f.w - f.w2
    up, down = affected(f) & (f.wb > f.we), affected(f) & (f.wb < f.we)
    r = diff.engine.one(f.aggregate(
        both=within.sum(where=f.n > 1),
        agreed=within.sum(where=(f.n > 1) & ~(up | down)),
        up=within.sum(where=(f.n > 1) & up),
        down=within.sum(where=(f.n > 1) & down),
        split=(f.w * (f.wb - f.w)).sum(where=f.n < f.nb),
        merge=(f.w * (f.we - f.w)).sum(where=f.n < f.ne),
    ), step="pair masses")
    W2 = key * key
    out = {c: max(float(r[k] or 0.0), 0.0) / W2 for c, k in (
        ("both", "both"), ("agreed", "agreed"), ("intersection+", "up"), ("intersection-", "down"),
        ("split", "split"), ("merge", "merge"))}
    diff.cache.link_masses[key] = dict(out)
    return out


def slice_sums(diff: Diff, cols: tuple[str, ...], total_weight: float, expr: ibis.Table | None = None) -> ibis.Table:
    """Per-slice metrics for the attribute columns ``cols``: the columns under their own names, each
    of :data:`SLICE_FIELDS` under its :func:`private` name (whatever the slice columns are called:
    ``items``, ``weight``, ``n``, ...), largest contribution first."""
    pi = expr if expr is not None else per_item_expr(diff)
    # The per-item numbers under private names, so no slice column meets one of them in the join.
    p = pi.select(**{private("id"): pi.item_id, private("weight"): pi.weight, **{private(m): pi[m] for m in METRICS}})
    it = diff.items.select("item_id", *cols)
    t = p.join(it, p[private("id")] == it.item_id)
    w = t[private("weight")]
    g = t.group_by(list(cols)).aggregate(**{private("items"): t.count(), private("weight"): w.sum(),
                                            **{private(f"sum_{m}"): (w * t[private(m)]).sum() for m in METRICS}})
    gw = g[private("weight")]
    return g.select(*cols, private("items"), private("weight"),
                    **{private(m): g[private(f"sum_{m}")] / gw for m in METRICS},
                    **{private("contribution"): g[private("sum_jaccard_distance")] / total_weight}).order_by(
        [ibis.desc(private("contribution")), *cols])


def slice_table(diff: Diff, cols: tuple[str, ...], total_weight: float, expr: ibis.Table | None = None) -> ibis.Table:
    """Per-slice metrics for the attribute columns ``cols`` (no column named as one of
    :data:`SLICE_FIELDS`: :func:`check_slice_columns`): the columns and :data:`SLICE_FIELDS`."""
    t = slice_sums(diff, cols, total_weight, expr)
    return t.select(*cols, **{f: t[private(f)] for f in SLICE_FIELDS}).order_by([ibis.desc("contribution"), *cols])


def impact(
    base,
    exp=None,
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    base_cluster_id: str | None = None,
    exp_cluster_id: str | None = None,
    weight: str | None = None,
    slice_by: Sequence = (),
    top: int = 10,
    engine: Engine | str | None = None,
) -> ImpactResult:
    """Exact impact metrics of the Exp clustering relative to the Base clustering.

    Parameters
    ----------
    base, exp
        Baseline and Experiment clusterings: a path to a Parquet or CSV file, or a
        pandas/polars DataFrame, pyarrow Table or Ibis table, with one row per
        item: its id (column ``item_id``) and its cluster (column ``cluster_id``).
        Or ``base`` an :class:`abcde.Inputs` holding the inputs and their column
        names (then leave out ``exp``, ``items`` and the column names); every
        function that reads the inputs accepts one.
    items
        Optional items table with the item id, an optional weight column and
        attribute columns for slicing. Without it every item weighs 1.
    item_id, cluster_id, base_cluster_id, exp_cluster_id
        Column names (the last two override ``cluster_id`` for one side).
    weight
        Name of the weight column in ``items``. ``None``: ``weight`` if present,
        else 1. Weights are importance values (paper, "Item weights"): only their
        relative sizes matter.
    slice_by
        Slicings to report: each a column name, a comma-separated string of
        names, or a tuple of names (grouped together).
    top
        How many most affected clusters to list per side.
    engine
        An engine from :func:`abcde.connect`, an engine name, or ``None`` for an
        in-memory DuckDB.

    Returns
    -------
    ImpactResult

    Notes
    -----
    Items in only one clustering are excluded (paper, "ABCDE inputs"); what was
    removed is in ``result.restriction``.

    Examples
    --------
    >>> import pyarrow as pa, abcde
    >>> base = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "a", "a", "b"]})
    >>> exp = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "a", "c", "c"]})
    >>> r = abcde.impact(base, exp)
    >>> round(r.split_rate, 4), round(r.merge_rate, 4), r.affected_items
    (0.3333, 0.25, 4)
    """
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id,
                      base_cluster_id=base_cluster_id, exp_cluster_id=exp_cluster_id, weight=weight)
    diff = build_diff(given, engine=engine)
    slices = normalize_slices(slice_by)
    check_slice_columns(diff, slices)
    with _progress.step("Computing impact metrics"):
        o = overall(diff)
        tops = top_clusters(diff, o["total_weight"], int(top))
    slice_rows = {}
    if slices:
        with _progress.step("Computing slice metrics"):
            pi = per_item_expr(diff)
            for cols in slices:
                slice_rows[",".join(cols)] = diff.engine.rows(
                    slice_table(diff, cols, o["total_weight"], pi), step=f"slice {','.join(cols)}"
                )
    return ImpactResult(
        **o,
        restriction=diff.restriction,
        top_clusters=tops,
        slices=slice_rows,
        engine=diff.engine.name,
        diff=diff,
    )
