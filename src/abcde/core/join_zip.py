"""Inputs in the same row order (as exports of one item table often are): zipped by position.

The inputs are joined row by row (:meth:`abcde.engine.Engine.zip`, DuckDB's ``POSITIONAL JOIN``: a
scan of each), after their first rows' ids were compared (:func:`zip_inputs`). A scan of the three
id columns then counts the rows whose ids differ anywhere; any such row, and the caller joins by id
instead. Otherwise the fragments are grouped from the zip of the other columns, ids are checked
unique on Base (the other inputs repeat its ids row by row; counted beside the zip's scans), and
nothing is restricted: every item is in every input.

Joining by position costs a scan of each input; joining by id, at a billion items, more memory and
disk than one machine has (issue 16).
"""

from __future__ import annotations

import functools

import ibis

from abcde.core import join_buckets
from abcde.core.inputs import Loaded, check_duplicates
from abcde.core.join_common import (Built, Sizes, distinct_ids_exprs, membership_fragments, unit_weight,
                                    with_totals)
from abcde.core.restriction import Restriction
from abcde.engine import Engine
from abcde.util import progress as _progress


def zip_inputs(eng: Engine, loaded: dict[str, Loaded], *, probe_rows: int) -> ibis.Table | None:
    """The inputs joined by row position, as :func:`abcde.core.join_hash.full_outer_join` would give
    them, with ``_off`` true where a row's ids differ between the inputs. None when the engine
    cannot zip, the inputs' row counts differ, or their first ``probe_rows`` ids do."""
    if len({v.rows for v in loaded.values()}) != 1 or loaded["base"].rows < 2:
        return None
    z = eng.zip({k: v.table for k, v in loaded.items()})
    if z is None:
        return None

    def differ(t: ibis.Table) -> ibis.Value:
        ids = [t[f"{k}__item_id"] for k in loaded]
        return functools.reduce(lambda a, b: a | b, [ids[0] != other for other in ids[1:]])

    head = z.limit(probe_rows)
    if eng.one(head.aggregate(off=differ(head).sum()), step="zip probe")["off"]:
        return None
    ids, off = [z[f"{k}__item_id"] for k in loaded], differ(z)
    weight = z["items__weight"] if "items" in loaded else unit_weight()
    return z.select(item_id=ids[0], base_cluster=z["base__base_cluster"], exp_cluster=z["exp__exp_cluster"],
                    in_b=ibis.literal(True), in_e=ibis.literal(True), weight=weight,
                    has_w=ibis.literal(True), _off=off)


def build(eng: Engine, loaded: dict[str, Loaded], zipped: ibis.Table, *, large: bool, sizes: Sizes) -> Built | None:
    """The fragments, restriction and common items of zipped inputs; None (after a note) when some
    row's ids differ, for the caller to join by id.

    First the rows whose ids differ are counted, in a scan of the three id columns alone; with none,
    the fragments are grouped from the zip of the other columns. Small inputs: the fragments with
    their clusters' totals in one query. Large ones: the fragment group-by written as Parquet, then
    the totals in buckets of clusters (:func:`abcde.core.join_buckets.fragments_in_buckets`)."""
    # Base's distinct ids counted beside the zip's scans, which run on one thread (DuckDB's positional
    # join), on the core they leave idle: one query per bucket of ids, one after another.
    unique = eng.rows_aside(distinct_ids_exprs(loaded["base"], sizes.unique_check_rows), step="unique ids")
    try:
        with _progress.step("Zipping inputs by row and computing fragments") as shown:
            with _progress.step("Comparing the inputs' ids row by row"):
                off = int(eng.one(zipped.aggregate(n=zipped._off.sum()), step="zip check")["n"] or 0)
            built = None
            if off == 0:
                rows = zipped.drop("_off")
                if large:
                    frag_all = join_buckets.large_fragments_all(eng, rows)
                    fragments = join_buckets.fragments_in_buckets(eng, frag_all, free=frag_all, sizes=sizes)
                else:
                    fragments = eng.materialize(with_totals(eng, membership_fragments(rows)), "fragments")
                distinct = sum(int(r["n"] or 0) for r in unique.result())
                unique = None
                restriction = zip_restriction(eng, loaded, distinct=distinct)
                joined = zipped.select("item_id", "base_cluster", "exp_cluster", "weight")
                built = Built(fragments, restriction, joined)
                shown.rows = restriction.common_items
    finally:
        if unique is not None:
            unique.cancel()  # not wanted: the ids differ somewhere, or a step failed
    if built is None:
        _progress.note(f"The inputs have the same number of rows and begin with the same ids, but {off:,} rows "
                       "differ further on: joining them by item id instead.")
    return built


def zip_restriction(eng: Engine, loaded: dict[str, Loaded], *, distinct: int) -> Restriction:
    """Every row's ids agree, so every item is in every input and nothing is restricted; the ids
    must still be unique (checked on Base, whose ids the others repeat row by row): ``distinct`` of
    them (else the repeated ones are named)."""
    base = loaded["base"]
    if distinct != base.rows:
        check_duplicates(eng, base, "base_cluster")
    return Restriction(common_items=base.rows)
