"""The steps every join strategy shares: reading the inputs, the fragment sums, the cluster
totals, hash buckets and the inner join of the three inputs.

A join strategy (:mod:`abcde.core.join_zip`, :mod:`abcde.core.join_hash`,
:mod:`abcde.core.join_buckets`) turns the validated inputs into a :class:`Built`: the fragment
table with its clusters' totals, the restriction, the common items and, where reading those whole
would join every item again, the validated inputs to join only some of them from.
"""

from __future__ import annotations

from dataclasses import dataclass

import ibis

from abcde.core.inputs import Inputs, Loaded, load_clustering, load_items, unify_id_types
from abcde.core.restriction import Restriction
from abcde.engine import Engine

#: The columns of the fragment table (:attr:`abcde.core.diff.Diff.fragments`).
FRAGMENT_COLUMNS = ("base_cluster", "exp_cluster", "n", "w", "w2", "nb", "wb", "ne", "we")


@dataclass(frozen=True)
class Sizes:
    """The row counts that decide how inputs are joined on an engine bounded by one machine's memory
    (defaults, and what each means: :mod:`abcde.core.diff`)."""

    zip_probe_rows: int
    join_partition_rows: int
    unique_check_rows: int
    large_rows: int
    fragment_partition_rows: int
    join_build_rows: int


@dataclass(frozen=True)
class Built:
    """What a join strategy built.

    Attributes
    ----------
    fragments
        The fragment table (:data:`FRAGMENT_COLUMNS`), materialized.
    restriction
        What restricting to the common items removed.
    joined
        The common items, ``item_id, base_cluster, exp_cluster, weight`` (an expression: reading it
        whole joins or zips the inputs again).
    sources
        The validated ``base``, ``exp`` (and ``items``) tables when inputs were joined by id: the
        rows of some fragments are then joined from them, Base rows of those clusters only
        (:func:`abcde.core.diff.rows_of_fragments`). None for zipped inputs (a scan of the zip is
        as cheap).
    """

    fragments: ibis.Table
    restriction: Restriction
    joined: ibis.Table
    sources: dict[str, ibis.Table] | None = None


def load_inputs(eng: Engine, inputs: Inputs, roles: tuple[str, str]) -> tuple[dict[str, Loaded], list[str]]:
    """Each input read and validated, with canonical columns (``item_id``, ``base_cluster`` /
    ``exp_cluster``, ``weight`` and the attributes), id types unified."""
    rb, re_ = roles
    loaded: dict[str, Loaded] = {
        "base": load_clustering(eng, inputs.base, role=rb, item_id=inputs.item_id,
                                cluster_id=inputs.base_cluster(), out_cluster="base_cluster"),
        "exp": load_clustering(eng, inputs.exp, role=re_, item_id=inputs.item_id,
                               cluster_id=inputs.exp_cluster(), out_cluster="exp_cluster"),
    }
    attributes: list[str] = []
    if inputs.items is not None:
        loaded["items"], attributes = load_items(eng, inputs.items, item_id=inputs.item_id, weight=inputs.weight)
    return unify_id_types(loaded), attributes


def unit_weight() -> ibis.Value:
    """Every item's weight without an items table: 1, as a double. (Ibis writes a float64 literal
    as a bare ``1.0``, which DuckDB reads as a DECIMAL: written to Parquet and read back, sums of
    it are decimals of varying scale, and ratios of them are rounded.)"""
    return ibis.literal(1, type="int8").cast("float64")


def bucket(ids: ibis.Value, parts: int) -> ibis.Value:
    """Which of ``parts`` buckets an item or cluster id falls in, from its hash (never negative)."""
    return ((ids.hash() % parts) + parts) % parts


def fragment_sums(rows: ibis.Table) -> dict:
    """A group's items, weight and squared weight (``n, w, w2``)."""
    return {"n": rows.count(), "w": rows.weight.sum(), "w2": (rows.weight * rows.weight).sum()}


def membership_fragments(fw: ibis.Table) -> ibis.Table:
    """Items, weight and squared weight per ``(Base cluster, Exp cluster, in Base, in Exp)``, and
    how many have no items-table row: one pass over all items."""
    return fw.group_by(["base_cluster", "exp_cluster", "in_b", "in_e"]).aggregate(
        **fragment_sums(fw), n_no_w=(~fw.has_w).sum())


def with_totals(eng: Engine, frag_all: ibis.Table) -> ibis.Table:
    """The fragments of the common items, ``base_cluster, exp_cluster, n, w, w2``, with their Base
    and Exp clusters' items and weights ``nb, wb, ne, we``."""
    f = frag_all.filter(frag_all.in_b & frag_all.in_e).select("base_cluster", "exp_cluster", "n", "w", "w2")
    # Cluster totals W(Base), W(Exp): two equivalent expressions, the faster one for the engine. Window
    # sums on Spark (1.6x faster there than a group-by joined back, measured at 10M items). On DuckDB
    # the totals of the clusters of several fragments only (the split or merged ones, a few percent),
    # joined back to the fragments; a cluster of one fragment is that fragment (measured at 300M items,
    # 93M fragments: 49.7 s, against 56.6 s for every cluster's totals joined back and 65.7 s for window
    # sums).
    if eng.prefers_window_sums:
        by_b, by_e = ibis.window(group_by=f.base_cluster), ibis.window(group_by=f.exp_cluster)
        f = f.mutate(nb=f.n.sum().over(by_b), wb=f.w.sum().over(by_b),
                     ne=f.n.sum().over(by_e), we=f.w.sum().over(by_e))
    else:
        f = join_totals(f, {side: shared_totals(f, side) for side in SIDES})
    return f.select(*FRAGMENT_COLUMNS)


#: Each side's cluster column and the names of its clusters' items and weight in the fragment table.
SIDES = {"base": ("base_cluster", "nb", "wb"), "exp": ("exp_cluster", "ne", "we")}


def shared_totals(f: ibis.Table, side: str) -> ibis.Table:
    """The items and weight (``nb, wb`` or ``ne, we``) of the clusters of ``side`` (``"base"`` or
    ``"exp"``) that hold more than one of the fragments ``f``: the clusters the other side split or
    merged, usually a few percent of them. A cluster of one fragment is that fragment, whose totals
    are its own ``n, w`` (:func:`join_totals`). One group-by of ``f``; ``f`` may be one bucket of the
    side's clusters (every fragment of a cluster falls in the cluster's bucket)."""
    key, n, w = SIDES[side]
    g = f.group_by(key).aggregate(**{n: f.n.sum(), w: f.w.sum()}, fragments_=f.count())
    return g.filter(g.fragments_ > 1).drop("fragments_")


def join_totals(f: ibis.Table, shared: dict[str, ibis.Table]) -> ibis.Table:
    """The fragments ``f`` with their clusters' totals on each side in ``shared``
    (:func:`shared_totals`): a fragment of a cluster listed there gets the cluster's, any other its
    own ``n, w``. Left joins whose build sides are the shared clusters only."""
    j = f
    for side, t in shared.items():
        key, n, w = SIDES[side]
        t = t.rename({f"{key}_": key, f"{n}_": n, f"{w}_": w})
        j = j.left_join(t, j[key] == t[f"{key}_"])
    cols = {c: j[c] for c in f.columns}
    for side in shared:
        _, n, w = SIDES[side]
        cols[n] = ibis.coalesce(j[f"{n}_"], j.n)
        cols[w] = ibis.coalesce(j[f"{w}_"], j.w)
    return j.select(**cols)


def inner_join(b: ibis.Table, e: ibis.Table, it: ibis.Table | None) -> ibis.Table:
    """The items in every input, ``item_id, base_cluster, exp_cluster, weight`` (1 without an
    items table): Base rows built into hash tables, Exp and the items table streamed past them."""
    j = b.join(e, "item_id")
    if it is None:
        j = j.mutate(weight=unit_weight())
    else:
        j = j.join(it.select("item_id", "weight"), "item_id")
    return j.select("item_id", "base_cluster", "exp_cluster", "weight")


def distinct_ids(eng: Engine, one: Loaded, max_rows: int) -> int:
    """How many distinct item ids an input holds, counted in buckets of at most ``max_rows`` ids."""
    return sum(int(eng.one(e, step="unique ids")["n"] or 0) for e in distinct_ids_exprs(one, max_rows))


def distinct_ids_exprs(one: Loaded, max_rows: int) -> list[ibis.Table]:
    """One-row tables whose ``n`` sum to how many distinct item ids an input holds: one per bucket of
    at most ``max_rows`` ids."""
    t = one.table
    parts = -(-one.rows // max_rows)
    return [distinct_ids_expr(t if parts <= 1 else t.filter(bucket(t.item_id, parts) == p)) for p in range(parts)]


def distinct_ids_expr(t: ibis.Table) -> ibis.Table:
    """One row: ``n``, how many distinct item ids ``t`` holds."""
    return t.aggregate(n=t.item_id.nunique())
