"""Large inputs in different row orders, on an engine bounded by one machine (DuckDB): hash joins
one bucket of Base clusters at a time, group-bys written as Parquet parts, cluster totals in buckets
of clusters.

Every item of a Base cluster falls in the cluster's bucket, so the fragments grouped from one
bucket are whole and no group-by spans buckets (:func:`base_bucket_joins`). Joined in buckets of
item ids instead, a fragment's items fall in every bucket: at a billion items the one group-by over
those buckets spilled 31 GB of partial fragments and filled this machine's disk (issue 16).
"""

from __future__ import annotations

import ibis

from abcde.core.inputs import Loaded
from abcde.core.join_common import (FRAGMENT_COLUMNS, SIDES, Built, Sizes, bucket, distinct_ids, fragment_sums,
                                    inner_join, join_totals, membership_fragments, shared_totals)
from abcde.core.join_hash import full_outer_join
from abcde.core.restriction import Restriction, restriction_of
from abcde.engine import Engine
from abcde.util import progress as _progress


def build(eng: Engine, loaded: dict[str, Loaded], labels: dict[str, str], roles: tuple[str, str],
          sizes: Sizes) -> Built:
    """The fragments, restriction and common items of large inputs in different row orders."""
    with _progress.step("Joining clusterings in buckets of Base clusters and computing fragments") as shown:
        buckets = base_bucket_joins(loaded, sizes)
        # Each bucket holds whole Base clusters, so its fragments' Base totals are window sums over the
        # bucket's own fragments, in the pass that groups them (no pass of its own over the fragments).
        common = eng.materialize_parts([base_totals(r.group_by(["base_cluster", "exp_cluster"]).aggregate(
            **fragment_sums(r))) for r in buckets], "fragments")
        restriction = large_restriction(eng, loaded, common, labels, roles, sizes)
        fragments = fragments_in_buckets(eng, common, free=common, sizes=sizes, sides=("exp",))
        shown.rows = restriction.common_items
    # Read whole only by a caller asking for every item's row (bucket by bucket again).
    joined = ibis.union(*buckets) if len(buckets) > 1 else buckets[0]
    return Built(fragments, restriction, joined, sources={k: v.table for k, v in loaded.items()})


def base_bucket_joins(loaded: dict[str, Loaded], sizes: Sizes) -> list[ibis.Table]:
    """The items in every input (:func:`~abcde.core.join_common.inner_join`), one join per bucket of
    Base clusters (at most about ``sizes.join_build_rows`` Base rows each).

    Every item of a Base cluster falls in the cluster's bucket, so the fragments grouped from one
    bucket are whole and no group-by spans buckets. The price: each bucket scans Exp and the items
    table whole."""
    base = loaded["base"]
    parts = max(1, -(-base.rows // sizes.join_build_rows))
    e = loaded["exp"].table
    it = loaded["items"].table if "items" in loaded else None
    b = base.table
    return [inner_join(b if parts == 1 else b.filter(bucket(b.base_cluster, parts) == p), e, it)
            for p in range(parts)]


def large_restriction(eng: Engine, loaded: dict[str, Loaded], common: ibis.Table,
                      labels: dict[str, str], roles: tuple[str, str], sizes: Sizes) -> Restriction:
    """The restriction of large inputs in different row orders, from the fragments of the items in
    every input (``common``, grouped from :func:`base_bucket_joins`).

    Those fragments hold ``Σ b·e·i`` rows over the ids in all three inputs (``b, e, i``: an
    id's rows in each). When that sum equals every input's row count and each input's ids are
    distinct (counted in buckets of ids), every input holds the same items, once each: nothing
    is restricted and no id is repeated, with no other join. Otherwise the rows of the items not
    in all three inputs (usually few) are written once from full outer joins in buckets of ids
    (:func:`join_buckets`), and :func:`~abcde.core.restriction.restriction_of` counts, checks and
    names them exactly as for small inputs, over the common fragments and theirs."""
    n = int(eng.one(common.aggregate(n=common.n.sum()), step="restriction")["n"] or 0)
    if all(v.rows == n for v in loaded.values()) and all(distinct_ids(eng, v, sizes.unique_check_rows) == v.rows
                                                          for v in loaded.values()):
        return Restriction(common_items=n)
    rest = eng.materialize_parts([j.filter(~(j.in_b & j.in_e & j.has_w)) for j in join_buckets(loaded, sizes)],
                                 "restricted items")
    cols = ["base_cluster", "exp_cluster", "in_b", "in_e", "n", "w", "w2", "n_no_w"]
    frag_all = ibis.union(
        common.mutate(in_b=ibis.literal(True), in_e=ibis.literal(True),
                      n_no_w=ibis.literal(0, type="int64")).select(cols),
        membership_fragments(rest).select(cols))
    try:
        return restriction_of(eng, loaded, rest, frag_all, labels, roles)
    finally:
        eng.discard(rest)


def join_buckets(loaded: dict[str, Loaded], sizes: Sizes) -> list[ibis.Table]:
    """:func:`~abcde.core.join_hash.full_outer_join` of the inputs, one join per hash bucket of ids
    of at most ``sizes.join_partition_rows`` rows (one bucket for smaller inputs)."""
    parts = -(-max(v.rows for v in loaded.values()) // sizes.join_partition_rows)
    if parts <= 1:
        return [full_outer_join(loaded)]
    return [full_outer_join({k: Loaded(v.table.filter(bucket(v.table.item_id, parts) == p), v.label, v.rows)
                             for k, v in loaded.items()}) for p in range(parts)]


def base_totals(frags: ibis.Table) -> ibis.Table:
    """``frags`` (fragments of whole Base clusters) with their Base clusters' items and weight
    ``nb, wb``: window sums by Base cluster."""
    win = ibis.window(group_by=frags.base_cluster)
    return frags.mutate(nb=frags.n.sum().over(win), wb=frags.w.sum().over(win))


def fragments_in_buckets(eng: Engine, fragments: ibis.Table, *, free: ibis.Table, sizes: Sizes,
                         sides: tuple[str, ...] = ("base", "exp")) -> ibis.Table:
    """The fragment table with its clusters' totals, in steps that each hold at most
    ``sizes.fragment_partition_rows`` rows in memory, written as compressed Parquet parts.

    ``fragments``: the common items grouped by ``(Base cluster, Exp cluster)`` (``n, w, w2``, and
    the totals of the sides not in ``sides``), already written as Parquet
    (:func:`large_fragments_all`, or grouped from :func:`base_bucket_joins`); ``free``, the written
    table behind it, is discarded as soon as it has been read for the last time (at a billion
    items, 8 GB of disk the next pass needs).

    The totals of the clusters of several fragments (:func:`~abcde.core.join_common.shared_totals`:
    the split or merged ones, usually a few percent) are grouped in buckets of each side's clusters
    (every fragment of a cluster falls in the cluster's bucket) and, when they fit one hash join's
    build side (``sizes.join_build_rows`` rows), joined to the fragments in one pass
    (:func:`~abcde.core.join_common.join_totals`). Otherwise (or on an engine that prefers window
    sums), each side's totals are window sums in buckets of its clusters, one pass per side. Each pass
    scans the fragments (a third of the items here), never the inputs again. At a billion items a
    group-by of every cluster with its totals joined back, in memory, spilled beyond this machine's
    disk (issue 16).
    """
    f = fragments
    rows = int(eng.one(f.aggregate(n=f.count()), step="fragments")["n"])
    parts = max(1, -(-rows // sizes.fragment_partition_rows))

    def in_bucket(t: ibis.Table, key: str, p: int) -> ibis.Table:
        return t if parts == 1 else t.filter(bucket(t[key], parts) == p)

    if not eng.prefers_window_sums:
        shared = {side: eng.materialize_parts([shared_totals(in_bucket(f, SIDES[side][0], p), side)
                                               for p in range(parts)],
                                              f"fragments: {side.capitalize()} clusters of several fragments")
                  for side in sides}
        counts = {side: int(eng.one(t.aggregate(n=t.count()), step="fragments")["n"]) for side, t in shared.items()}
        if sum(counts.values()) <= sizes.join_build_rows:
            done = eng.materialize_parts([join_totals(f, shared)], "fragments: cluster totals")
            for t in (free, *shared.values()):
                eng.discard(t)
            return done.select(*FRAGMENT_COLUMNS)
        for t in shared.values():
            eng.discard(t)
    out = f
    for side in sides:
        key, n, w = SIDES[side]
        steps = []
        for p in range(parts):
            h = in_bucket(out, key, p)
            win = ibis.window(group_by=h[key])
            steps.append(h.mutate(**{n: h.n.sum().over(win), w: h.w.sum().over(win)}))
        done = eng.materialize_parts(steps, f"fragments: {side.capitalize()} cluster totals")
        eng.discard(free if out is f else out)  # read by now; its disk is needed by the next pass
        out = done
    return out.select(*FRAGMENT_COLUMNS)


def large_fragments_all(eng: Engine, rows: ibis.Table) -> ibis.Table:
    """Items, weight and squared weight per ``(Base cluster, Exp cluster)`` of ``rows``: one
    group-by, written straight to a Parquet part (the engine spills what does not fit its memory
    limit; no temporary table)."""
    g = rows.group_by(["base_cluster", "exp_cluster"]).aggregate(**fragment_sums(rows))
    return eng.materialize_parts([g], "fragments")
