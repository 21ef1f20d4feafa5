"""The tagged Base and Exp clusterings of two id-assignment schemes (:func:`tag_clusterings`)."""

from __future__ import annotations

from dataclasses import dataclass

import ibis
import pyarrow as pa

from abcde.core.inputs import check_duplicates, describe, load_clustering, load_items
from abcde.engine import Engine
from abcde.engine.base import resolve
from abcde.errors import InputError, examples_text

#: The tags of an item's two copies: published earlier (in the history) and current.
HISTORY, CURRENT = "h:", "c:"
#: The items table's column saying which copy an item is, and its two values (what judges see).
SIDE_COLUMN = "id_side"
SIDES = {HISTORY: "published earlier", CURRENT: "current"}
#: The items table's column holding the item's own id (the copy's id is the tag and this id).
SOURCE_COLUMN = "source_item_id"


@dataclass(frozen=True)
class TaggedClusterings:
    """The two tagged clusterings and their items, as Ibis tables on ``engine``.

    Attributes
    ----------
    base, exp
        ``item_id`` (``h:…`` for a historical copy, ``c:…`` for a current one) and ``cluster_id``
        (the id the copy is published under: its historical id, or the id its current cluster got
        from the scheme).
    items
        ``item_id``, ``weight`` (a historical copy's scaled by ``hist_scale``), :data:`SIDE_COLUMN`,
        :data:`SOURCE_COLUMN` and the items table's attributes, carried to both copies.
    hist_scale
        The historical copies' weight factor.
    assignments
        Each scheme's map, ``{"base": …, "exp": …}``: ``cluster_`` (a current cluster) and ``id_`` (its
        id, as text).
    sources
        The untagged inputs the tagged tables are made of, on their own item ids (which the id table
        reads, with no tag to add or strip): ``history`` and ``current`` (``{"base": …, "exp": …}``),
        ``item_id`` and ``cluster``; ``weights``: every current item's ``item_id`` and weight ``w``.
    """

    base: ibis.Table
    exp: ibis.Table
    items: ibis.Table
    engine: Engine
    hist_scale: float = 1.0
    assignments: dict | None = None
    sources: dict | None = None

    def to_arrow(self) -> dict[str, pa.Table]:
        """``{"base", "exp", "items"}`` as Arrow tables (ordered by item id)."""
        return {k: self.engine.to_arrow(getattr(self, k).order_by("item_id"), step=f"tagged {k}")
                for k in ("base", "exp", "items")}


def tag_clusterings(history, current, base_ids, exp_ids, *, current_exp=None, items=None, hist_scale: float = 1.0,
                    item_id: str = "item_id", cluster_id: str = "cluster_id", id_column: str = "id",
                    weight: str | None = None, engine: Engine | str | None = None) -> TaggedClusterings:
    """The tagged Base and Exp clusterings of two id-assignment schemes (see :mod:`abcde.ids`).

    Parameters
    ----------
    history
        The clustering as published earlier: ``item_id`` and ``cluster_id``, the id each item was
        published with (a path, or a pandas/polars/Arrow/Ibis table).
    current
        The current clustering: ``item_id`` and ``cluster_id``.
    base_ids, exp_ids
        Each scheme's map from the current clusters to ids: ``cluster_id`` and ``id_column``, one row
        per current cluster, every cluster once, no id given to two clusters.
    current_exp
        Exp's own current clustering (a membership change evaluated with the id change); its
        clusters are the ones ``exp_ids`` maps. Default: ``current``.
    items
        The items table (``item_id``, the weight, attributes): every historical and current item's
        weight and attributes, carried to both copies. Without it every item weighs 1.
    hist_scale
        The historical copies' weight factor (> 0): more protects old ids, less weighs the current
        items' own quality more.

    Raises
    ------
    InputError
        In one line, naming the input and ids: a map that gives one id to two clusters, names a
        cluster the current clustering lacks, leaves one of its clusters without an id, or names a
        cluster twice; an item of a clustering that the items table lacks; a bad ``hist_scale``.
    """
    if not (isinstance(hist_scale, (int, float)) and not isinstance(hist_scale, bool)
            and 0 < float(hist_scale) < float("inf")):
        raise InputError(f"hist_scale (--hist-scale) multiplies the historical items' weights: a number > 0. "
                         f"Got {hist_scale!r}.")
    eng = resolve(engine)
    cols = {"item_id": item_id, "cluster_id": cluster_id}
    hist = _clustering(eng, history, "history", cols)
    cur_b = _clustering(eng, current, "current", cols)
    cur_e = cur_b if current_exp is None else _clustering(eng, current_exp, "current-exp", cols)
    map_b = _id_map(eng, base_ids, "base-ids", cur_b, cluster_id, id_column, describe(current, "current"))
    map_e = _id_map(eng, exp_ids, "exp-ids", cur_e, cluster_id, id_column,
                    describe(current if current_exp is None else current_exp,
                         "current" if current_exp is None else "current-exp"))
    for m, source, role in ((map_b, base_ids, "base-ids"), (map_e, exp_ids, "exp-ids")):
        _check_id_types(hist, m, describe(history, "history"), describe(source, role))
    h = hist.select(item_id=_tag(HISTORY, hist.item_id), cluster_id=hist.cluster.cast("string"))
    base = ibis.union(h, _assigned(cur_b, map_b))
    exp = ibis.union(h, _assigned(cur_e, map_e))
    tagged_items, weights = _items(eng, items, item_id, weight, float(hist_scale), hist,
                                   cur_b if current_exp is None else ibis.union(cur_b.select("item_id"),
                                                                                cur_e.select("item_id")).distinct())
    return TaggedClusterings(base=base, exp=exp, items=tagged_items, engine=eng, hist_scale=float(hist_scale),
                             assignments={"base": map_b, "exp": map_e},
                             sources={"history": hist, "current": {"base": cur_b, "exp": cur_e}, "weights": weights})


def _clustering(eng: Engine, source, role: str, cols: dict) -> ibis.Table:
    loaded = load_clustering(eng, source, role=role, item_id=cols["item_id"], cluster_id=cols["cluster_id"],
                             out_cluster="cluster")
    check_duplicates(eng, loaded, "cluster")
    return loaded.table


def _tag(tag: str, ids: ibis.Value) -> ibis.Value:
    return ibis.literal(tag) + ids.cast("string")


def _assigned(cur: ibis.Table, ids: ibis.Table) -> ibis.Table:
    """The current copies in the clusters of the ids their clusters got."""
    j = cur.join(ids, cur.cluster == ids.cluster_)
    return j.select(item_id=_tag(CURRENT, j.item_id), cluster_id=j.id_)


def _id_map(eng: Engine, source, role: str, cur: ibis.Table, cluster_id: str, id_column: str,
            current_label: str) -> ibis.Table:
    """A scheme's map ``cluster_``, ``id_`` (text), checked against the current clustering ``cur``."""
    label = describe(source, role)
    raw = eng.read(source, role=role)
    missing = [c for c in (cluster_id, id_column) if c not in raw.columns]
    if missing:
        raise InputError(f"The {label} has no column {', '.join(repr(c) for c in missing)}: a scheme's map needs "
                         f"'{cluster_id}' (a current cluster) and '{id_column}' (its id). Existing columns: "
                         f"{', '.join(repr(c) for c in raw.columns)}.")
    kind = raw[id_column].type()
    if not (kind.is_string() or kind.is_integer()):
        raise InputError(f"The {label}'s column '{id_column}' holds {kind}, not ids: give text or integer ids, of the "
                         "type the history's ids are.")
    m = raw.select(cluster_=raw[cluster_id], id_=raw[id_column].cast("string"), id_type_=raw[id_column])
    nulls = eng.rows(m.filter(m.cluster_.isnull() | m.id_.isnull()).limit(3), step=f"validate {role}")
    if nulls:
        raise InputError(f"The {label} has rows with no cluster or no id (first: "
                         f"{examples_text((r['cluster_'], r['id_']) for r in nulls)}): every current cluster "
                         "needs one id.")
    twice = m.group_by("cluster_").aggregate(n=m.count(), ids=m.id_.collect())
    bad = eng.rows(twice.filter(twice.n > 1).limit(3), step=f"validate {role}")
    if bad:
        r = bad[0]
        raise InputError(f"The {label} names cluster {r['cluster_']!r} {r['n']} times (ids "
                         f"{examples_text(sorted(r['ids'])[:3])}): each current cluster gets one id.")
    shared = m.group_by("id_").aggregate(n=m.count(), clusters=m.cluster_.collect())
    bad = eng.rows(shared.filter(shared.n > 1).order_by("id_").limit(3), step=f"validate {role}")
    if bad:
        r = bad[0]
        raise InputError(f"The {label} gives id {r['id_']!r} to {r['n']} clusters (first: "
                         f"{examples_text(sorted(map(str, r['clusters']))[:3])}): an id names one cluster, so a "
                         "scheme may not repeat it.")
    clusters = cur.select(cluster_="cluster").distinct()
    try:
        outside = eng.rows(m.anti_join(clusters, "cluster_").limit(3), step=f"validate {role}")
        unmapped = eng.rows(clusters.anti_join(m, "cluster_").limit(3), step=f"validate {role}")
    except Exception as exc:  # a cluster id type the other's cannot be compared with
        raise InputError(f"The clusters of the {label} cannot be compared with those of the {current_label} "
                         f"({type(exc).__name__}): give both the same type of cluster id.") from exc
    if outside:
        raise InputError(f"The {label} names clusters the {current_label} does not have (first: "
                         f"{examples_text(r['cluster_'] for r in outside)}).")
    if unmapped:
        raise InputError(f"The {label} gives no id to some clusters of the {current_label} (first: "
                         f"{examples_text(r['cluster_'] for r in unmapped)}): a scheme gives every current cluster "
                         "an id (a fresh one, or one published earlier).")
    return m


def _check_id_types(hist: ibis.Table, m: ibis.Table, hist_label: str, map_label: str) -> None:
    """A map's ids and the history's are compared as text: both text, or both integers (a float or a
    date id would never equal an id published as text, and every id would look new)."""
    a, b = hist.cluster.type(), m.id_type_.type()
    if not ((a.is_string() and b.is_string()) or (a.is_integer() and b.is_integer())):
        raise InputError(f"The ids of the {map_label} are {b} and those of the {hist_label} {a}: give both the same "
                         "type (text or integers), so an id published earlier is the same id in the map.")


def _items(eng: Engine, items, item_id: str, weight: str | None, scale: float, hist: ibis.Table,
           cur: ibis.Table) -> tuple[ibis.Table, ibis.Table]:
    """Both copies' rows of the items table: weight (the historical copies' times ``scale``), side,
    own id and attributes; and the current items' own ids and weights (``item_id``, ``w``)."""
    if items is None:
        parts = [(HISTORY, hist.select("item_id"), scale), (CURRENT, cur.select("item_id"), 1.0)]
        return (ibis.union(*[t.select(item_id=_tag(tag, t.item_id), weight=ibis.literal(w, type="float64"),
                                      **{SIDE_COLUMN: ibis.literal(SIDES[tag]),
                                         SOURCE_COLUMN: t.item_id.cast("string")}) for tag, t, w in parts]),
                cur.select("item_id", w=ibis.literal(1.0, type="float64")))
    loaded, attributes = load_items(eng, items, item_id=item_id, weight=weight)
    clash = [c for c in attributes if c in (SIDE_COLUMN, SOURCE_COLUMN)]
    if clash:
        raise InputError(f"The {loaded.label} has a column {clash[0]!r}, which abcde ids adds to every item (which "
                         "copy it is, and its own id): rename it.")
    it = loaded.table
    out, weights = [], None
    for tag, t, w, role in ((HISTORY, hist, scale, "history"), (CURRENT, cur, 1.0, "current")):
        lacking = eng.rows(t.select("item_id").anti_join(it, "item_id").limit(3), step="validate items")
        if lacking:
            raise InputError(f"Items of the {role} are not in the {loaded.label} (first: "
                             f"{examples_text(r['item_id'] for r in lacking)}): every item needs its row there "
                             "(its weight and attributes), the historical ones too.")
        j = t.select("item_id").join(it, "item_id")
        if tag == CURRENT:
            weights = j.select("item_id", w=j.weight.cast("float64"))
        out.append(j.select(item_id=_tag(tag, j.item_id), weight=j.weight * w,
                            **{SIDE_COLUMN: ibis.literal(SIDES[tag]), SOURCE_COLUMN: j.item_id.cast("string")},
                            **{c: j[c] for c in attributes}))
    return ibis.union(*out), weights
