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
* ``split``: some of its items moved to other ids, at least as much as came in (to :data:`TIE`);
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
from abcde.ids.tagging import TaggedClusterings

#: Weights within this fraction of each other are equal for a lineage class (an id whose items moved
#: out weigh as much as those that came in is split, however the engine's sums rounded: the same
#: weights added in another order differ in their last bits, and DuckDB and Spark add in different
#: orders).
TIE = 1e-9
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
    src = t.sources
    # The untagged inputs, on the items' own ids (a tag added to every id and stripped again, and joins
    # on the tagged text, cost more than the rest of the table). Ids of two types meet as text, as the
    # tags compare them.
    same = src["history"].item_id.type() == src["weights"].item_id.type() and all(
        c.item_id.type() == src["weights"].item_id.type() for c in src["current"].values())

    def own(ids: ibis.Value) -> ibis.Value:
        return ids if same else ids.cast("string")

    hist = src["history"].select(src=own(src["history"].item_id), hid=src["history"].cluster.cast("string"))
    weights = src["weights"].select(src=own(src["weights"].item_id), w=src["weights"].w)
    # Every id's numbers come from one aggregation over the rows each input adds to them (each row
    # gives its id a weight, or a flag, or an owner; the other columns are 0 or null): one pass, where
    # a join per number made Spark run 48 jobs for the bundled example.
    kinds = {"published": "int8", "hist_items": "int64", "hist_weight": "float64",
             **{f"{k}_{s}": "float64" for s in SCHEMES for k in ("owner_weight", "kept", "moved", "incoming")},
             **{f"owner_{s}": "string" for s in SCHEMES}}

    def rows(table: ibis.Table, key, **given) -> ibis.Table:
        return table.select(id=key, **{c: (given[c] if c in given else ibis.null(k)).cast(k) for c, k in kinds.items()})

    h = hist.join(weights, "src")  # the historical items still current, with their current weight
    parts = [rows(hist, hist.hid, published=ibis.literal(1)),
             rows(h, h.hid, hist_items=ibis.literal(1), hist_weight=h.w)]
    for s in SCHEMES:
        m = t.assignments[s]
        c = src["current"][s]
        given = c.join(m, c.cluster == m.cluster_)
        cur = given.select(src=own(given.item_id), kid=given.id_).join(weights, "src")
        cur = cur.left_join(hist, "src").drop("src_right")  # hid: the id the item was published with, or null
        came = cur.hid.notnull() & (cur.hid != cur.kid)  # published under another id than its cluster's now
        mine = cur.filter(cur.hid.notnull())
        parts += [rows(cur, cur.kid, **{f"owner_weight_{s}": cur.w, f"incoming_{s}": came.ifelse(cur.w, 0.0)}),
                  rows(mine, mine.hid, **{f"kept_{s}": (mine.hid == mine.kid).ifelse(mine.w, 0.0),
                                          f"moved_{s}": (mine.hid != mine.kid).ifelse(mine.w, 0.0)}),
                  rows(m, m.id_, **{f"owner_{s}": m.cluster_})]
    u = ibis.union(*parts, distinct=False)
    agg = u.group_by("id").aggregate(
        published=u.published.max().fill_null(0) > 0, hist_items=u.hist_items.sum().fill_null(0).cast("int64"),
        **{c: u[c].sum().fill_null(0.0) for c, k in kinds.items() if k == "float64"},
        **{f"owner_{s}": u[f"owner_{s}"].max() for s in SCHEMES})
    cols = {c: agg[c] for c in ("id", "published", "hist_items", "hist_weight")}
    for s in SCHEMES:
        owner, moved, incoming = agg[f"owner_{s}"], agg[f"moved_{s}"], agg[f"incoming_{s}"]
        cls = ibis.cases(
            (agg.published & owner.isnull(), "retired"),
            (~agg.published & owner.notnull(), "new"),
            (~agg.published, ibis.null("string")),
            ((moved == 0) & (incoming == 0), "continuing"),
            (moved >= incoming * (1 - TIE), "split"),
            else_="merged")
        cols.update({f"owner_{s}": owner, f"class_{s}": cls,
                     **{f"{k}_{s}": agg[f"{k}_{s}"] for k in ("owner_weight", "kept", "moved", "incoming")}})
    out = agg.select(**{c: cols[c] for c in COLUMNS[:-1]})  # all but 'differs', in the table's order
    differs = out.class_base.fill_null("") != out.class_exp.fill_null("")
    # Most weight first, the weights compared in single precision: sums of the same weights added in
    # another order (DuckDB and Spark add in different orders) differ in their last bits, and would
    # order ids of equal weight differently on each engine; rounded to single precision they are equal,
    # and the id decides.
    out = out.mutate(differs=differs).order_by(
        [ibis.desc(out[c].cast("float32")) for c in ("hist_weight", "owner_weight_base", "owner_weight_exp")]
        + ["id"])
    return IdTable.of(eng.to_arrow(out, step="id table"))


def class_counts(table: pa.Table) -> dict:
    """``{"base": {class: ids}, "exp": {…}}`` over :data:`CLASSES`, of the id table's rows ``table``."""
    counts = {}
    for s in SCHEMES:
        seen = {r["values"]: r["counts"] for r in pc.value_counts(table.column(f"class_{s}")).to_pylist()}
        counts[s] = {c: int(seen.get(c, 0)) for c in CLASSES}
    return counts
