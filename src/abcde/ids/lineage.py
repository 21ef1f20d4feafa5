"""The exact id table of two id-assignment schemes (:func:`id_table`): for every id, its owner under
each scheme, the overlap weights and a lineage class.

For an id ``k`` published earlier (``H_k``: its historical items, those still current counted) and
a scheme ``S`` that gives ``k`` to the current cluster ``O`` (its *owner*), with item weights:

* ``kept``: the weight of ``H_k``'s items in ``O``;
* ``moved``: the weight of ``H_k``'s items now in clusters with other ids;
* ``incoming``: the weight of items published under other ids that are now in ``O``.

Its class under ``S`` is one of :data:`CLASSES`:

* ``retired``: ``S`` gives ``k`` to no current cluster;
* ``continuing``: nothing moved out and nothing came in;
* ``split``: some of its items moved to other ids, at least as much as came in;
* ``merged``: items of other ids came in, more than moved out;
* ``new``: an id ``S`` gives that was never published.

An id ``S`` does not use and that was never published has no class under ``S`` (null).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ibis
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from abcde.errors import InputError
from abcde.ids.tagging import CURRENT, HISTORY, SIDE_COLUMN, SIDES, SOURCE_COLUMN, TaggedClusterings

#: The lineage classes, in the order the counts are listed.
CLASSES = ("continuing", "split", "merged", "new", "retired")
SCHEMES = ("base", "exp")
#: The id table's columns (:class:`IdTable`), in order.
COLUMNS = ("id", "published", "hist_items", "hist_weight",
           *(f"{k}_{s}" for s in SCHEMES for k in ("owner", "owner_weight", "kept", "moved", "incoming", "class")),
           "differs")


@dataclass(frozen=True)
class IdTable:
    """The id table (:func:`id_table`).

    Attributes
    ----------
    table
        One row per id: ``id``, ``published`` (an id published earlier), ``hist_items`` and
        ``hist_weight`` (its historical items still current), and per scheme ``s`` (``base``,
        ``exp``): ``owner_s`` (the current cluster given the id, or null), ``owner_weight_s``,
        ``kept_s``, ``moved_s``, ``incoming_s`` and ``class_s``; ``differs`` (the classes differ);
        ordered by ``hist_weight`` then ``owner_weight_base`` (largest first), then id.
    counts
        ``{"base": {class: ids}, "exp": {…}}`` over :data:`CLASSES`.
    differing
        The rows whose class differs between the schemes, most weight first.
    """

    table: pa.Table
    counts: dict = field(default_factory=dict)

    @classmethod
    def of(cls, table: pa.Table) -> IdTable:
        """The id table of its rows ``table`` (as :func:`id_table` makes it, or ``id_table.parquet``
        read back), its class counts counted again; a table without the columns of one is refused
        (:class:`~abcde.errors.InputError`)."""
        missing = [c for c in COLUMNS if c not in table.column_names]
        if missing:
            raise InputError(f"The id table has no column {', '.join(repr(c) for c in missing[:5])}: it was not "
                             "written by 'abcde ids'. Run it again.")
        return cls(table, class_counts(table))

    @property
    def differing(self) -> pa.Table:
        return self.table.filter(pc.equal(self.table.column("differs"), True))

    def to_dict(self, top: int = 20) -> dict:
        return {"ids": self.table.num_rows, "counts": self.counts, "differing": self.differing.num_rows,
                "top_differing": self.differing.slice(0, top).to_pylist()}

    def write(self, path) -> str:
        pq.write_table(self.table, path)
        return str(path)


def id_table(t: TaggedClusterings) -> IdTable:
    """The exact id table of the tagged clusterings ``t`` (:func:`~abcde.ids.tag_clusterings`)."""
    eng = t.engine
    items = t.items
    hist_rows = t.base.filter(t.base.item_id.startswith(HISTORY))
    hist = hist_rows.select(src=hist_rows.item_id.substr(len(HISTORY)), hid=hist_rows.cluster_id)
    weights = items.filter(items[SIDE_COLUMN] == SIDES[CURRENT]).select(src=items[SOURCE_COLUMN], w=items.weight)
    # The historical items still current, with their current weight.
    h = hist.join(weights, "src")
    table = h.group_by("hid").aggregate(hist_items=h.count(), hist_weight=h.w.sum()).rename(id="hid")
    ids = ibis.union(hist.select(id="hid"), *[t.assignments[s].select(id="id_") for s in SCHEMES]).distinct()
    out = ids.left_join(table, "id").select(
        "id", published=ids.id.isin(hist.hid), hist_items=table.hist_items.fill_null(0),
        hist_weight=table.hist_weight.fill_null(0.0))
    for s in SCHEMES:
        side = getattr(t, s)
        cur_rows = side.filter(side.item_id.startswith(CURRENT))
        cur = cur_rows.select(src=cur_rows.item_id.substr(len(CURRENT)), kid=cur_rows.cluster_id).join(weights, "src")
        m = h.select("src", "hid").join(cur, "src")
        m = m.group_by(["hid", "kid"]).aggregate(w=m.w.sum())
        same = m.hid == m.kid
        per_hist = m.group_by("hid").aggregate(kept=same.ifelse(m.w, 0.0).sum(), moved=(~same).ifelse(m.w, 0.0).sum())
        into = m.filter(~same).group_by("kid").aggregate(incoming=m.filter(~same).w.sum())
        owned = cur.group_by("kid").aggregate(owner_weight=cur.w.sum())
        owner = t.assignments[s].select(kid="id_", owner=t.assignments[s].cluster_.cast("string"))
        j = out
        for part, key in ((per_hist, "hid"), (into, "kid"), (owned, "kid"), (owner, "kid")):
            j = j.left_join(part.rename(id=key), "id").drop("id_right")
        kept, moved = j.kept.fill_null(0.0), j.moved.fill_null(0.0)
        incoming = j.incoming.fill_null(0.0)
        cls = ibis.cases(
            (j.published & j.owner.isnull(), "retired"),
            (~j.published & j.owner.notnull(), "new"),
            (~j.published, ibis.null("string")),
            ((moved == 0) & (incoming == 0), "continuing"),
            (moved >= incoming, "split"),
            else_="merged")
        out = j.select(*out.columns, **{f"owner_{s}": j.owner, f"owner_weight_{s}": j.owner_weight.fill_null(0.0),
                                        f"kept_{s}": kept, f"moved_{s}": moved, f"incoming_{s}": incoming,
                                        f"class_{s}": cls})
    differs = out.class_base.fill_null("") != out.class_exp.fill_null("")
    out = out.mutate(differs=differs).order_by([ibis.desc("hist_weight"), ibis.desc("owner_weight_base"),
                                                ibis.desc("owner_weight_exp"), "id"])
    return IdTable.of(eng.to_arrow(out, step="id table"))


def class_counts(table: pa.Table) -> dict:
    """``{"base": {class: ids}, "exp": {…}}`` over :data:`CLASSES`, of the id table's rows ``table``."""
    counts = {}
    for s in SCHEMES:
        seen = {r["values"]: r["counts"] for r in pc.value_counts(table.column(f"class_{s}")).to_pylist()}
        counts[s] = {c: int(seen.get(c, 0)) for c in CLASSES}
    return counts
