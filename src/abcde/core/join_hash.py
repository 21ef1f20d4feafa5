"""Inputs in any row order, of a size one hash join holds: one full outer join on the item id.

Every item of any input is kept by the join (:func:`full_outer_join`), so one group-by per
``(Base cluster, Exp cluster, in Base, in Exp)`` (:func:`~abcde.core.join_common.membership_fragments`)
gives the fragments of the common items and every count the restriction and the duplicate-id check
need (:func:`~abcde.core.restriction.restriction_of`): nothing is dropped before it is counted.
"""

from __future__ import annotations

import ibis

from abcde.core.inputs import Loaded
from abcde.core.join_common import Built, membership_fragments, unit_weight, with_totals
from abcde.core.restriction import restriction_of
from abcde.engine import Engine
from abcde.util import progress as _progress


def full_outer_join(loaded: dict[str, Loaded]) -> ibis.Table:
    """Every item of any input, with its clusters, whether Base / Exp hold it (``in_b``,
    ``in_e``), its weight (1 without an items table) and whether the items table holds it
    (``has_w``). Full outer joins: nothing is dropped before it is counted."""
    b, e = loaded["base"].table, loaded["exp"].table
    it = loaded["items"].table if "items" in loaded else None
    b2 = b.mutate(_in_b=ibis.literal(True))
    e2 = e.rename(_id_e="item_id").mutate(_in_e=ibis.literal(True))
    fo = b2.outer_join(e2, b2.item_id == e2._id_e)
    fo = fo.select(
        item_id=ibis.coalesce(fo.item_id, fo._id_e),
        base_cluster=fo.base_cluster,
        exp_cluster=fo.exp_cluster,
        in_b=fo._in_b.fill_null(False),
        in_e=fo._in_e.fill_null(False),
    )
    if it is None:
        return fo.mutate(weight=unit_weight(), has_w=ibis.literal(True))
    wt = it.select(_id_w="item_id", weight="weight", _has_w=ibis.literal(True))
    # A full outer join: rows with neither side are items-table rows in neither clustering.
    fov = fo.view()
    fw = fov.outer_join(wt, fov.item_id == wt._id_w)
    return fw.select(
        item_id=ibis.coalesce(fw.item_id, fw._id_w),
        base_cluster=fw.base_cluster,
        exp_cluster=fw.exp_cluster,
        in_b=fw.in_b.fill_null(False),
        in_e=fw.in_e.fill_null(False),
        weight=fw.weight,
        has_w=fw._has_w.fill_null(False),
    )


def build(eng: Engine, loaded: dict[str, Loaded], labels: dict[str, str], roles: tuple[str, str]) -> Built:
    """The fragments, restriction and common items of inputs joined by one hash join. The rows of
    some fragments are later joined from the inputs (``sources``: Base rows of those clusters only,
    a scan of Exp and of the items table), not from ``joined``, which joins every item again."""
    with _progress.step("Joining clusterings and computing fragments") as shown:
        fw = full_outer_join(loaded)
        frag_all = eng.materialize(membership_fragments(fw), "fragments_all")
        restriction = restriction_of(eng, loaded, fw, frag_all, labels, roles)
        fragments = eng.materialize(with_totals(eng, frag_all), "fragments")
        eng.discard(frag_all)  # read by now: its memory is the next steps'
        shown.rows = restriction.common_items
    joined = fw.filter(fw.in_b & fw.in_e).select("item_id", "base_cluster", "exp_cluster", "weight")
    return Built(fragments, restriction, joined, sources={k: v.table for k, v in loaded.items()})
