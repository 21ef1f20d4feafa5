"""Fragments: the core tables every exact impact metric follows from.

For Base cluster ``B`` and Exp cluster ``E`` the *fragment* ``B ∩ E`` holds the
items that ``B`` and ``E`` share. Three weights decide every per-item metric
(paper, section "ABCDE impact metrics"): for an item ``i`` in fragment
``F = Base(i) ∩ Exp(i)``::

    weight(Base(i) \\ Exp(i)) = W(B) - W(F)
    weight(Exp(i) \\ Base(i)) = W(E) - W(F)
    weight(Base(i) ∪ Exp(i))  = W(B) + W(E) - W(F)

so all items of a fragment share their SplitRate, MergeRate and
JaccardDistance, and per-cluster, per-slice and overall numbers are group-bys
over the fragment table (``W(B)`` and ``W(E)`` are window sums over it).

:func:`build_diff` reads and validates the inputs, restricts them to the items
both clusterings share (reporting what was removed), and materializes the
fragment table in the engine.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field

import ibis

from abcde.util import progress as _progress
from abcde.util.files import InputPrints
from abcde.engine import Engine, resolve
from abcde.errors import InputError, examples_text
from abcde.core.formulas import affected
from abcde.core.inputs import Inputs, Loaded, check_duplicates, load_clustering, load_items, unify_id_types

N_EXAMPLES = 5


@dataclass(frozen=True)
class Restriction:
    """What restricting Base and Exp to their common items removed.

    Attributes
    ----------
    common_items
        Items in both clusterings (the population ``T`` of every metric).
    base_only_items, base_only_weight, base_only_examples
        Items only in Base: how many, their weight (from the items table, or 1
        each; items with no row in the items table count 0 weight), a few ids.
    exp_only_items, exp_only_weight, exp_only_examples
        The same for items only in Exp.
    items_only_items, items_only_examples
        Rows of the items table whose item is in neither clustering.
    """

    common_items: int
    base_only_items: int = 0
    base_only_weight: float = 0.0
    base_only_examples: list = field(default_factory=list)
    exp_only_items: int = 0
    exp_only_weight: float = 0.0
    exp_only_examples: list = field(default_factory=list)
    items_only_items: int = 0
    items_only_examples: list = field(default_factory=list)

    @property
    def restricted(self) -> bool:
        """True when any item was removed."""
        return bool(self.base_only_items or self.exp_only_items)

    def to_dict(self) -> dict:
        return {
            "common_items": self.common_items,
            "base_only_items": self.base_only_items,
            "base_only_weight": self.base_only_weight,
            "base_only_examples": list(self.base_only_examples),
            "exp_only_items": self.exp_only_items,
            "exp_only_weight": self.exp_only_weight,
            "exp_only_examples": list(self.exp_only_examples),
            "items_only_items": self.items_only_items,
            "items_only_examples": list(self.items_only_examples),
        }


def describe_restriction(r: dict, names: tuple[str, str] = ("Base", "Exp"), fmt=str) -> list[str]:
    """One sentence per kind of item that restricting to the common items removed (empty when
    nothing was); ``r`` is :meth:`Restriction.to_dict`, ``fmt`` formats weights."""
    b, e = names
    lines = []
    for side, name in (("base", b), ("exp", e)):
        if r[f"{side}_only_items"]:
            lines.append(f"{r[f'{side}_only_items']:,} items (weight {fmt(r[f'{side}_only_weight'])}) only in {name} "
                         f"were excluded, e.g. {', '.join(map(str, r[f'{side}_only_examples']))}")
    if r["items_only_items"]:
        lines.append(f"{r['items_only_items']:,} rows of the items table are in neither clustering, e.g. "
                     f"{', '.join(map(str, r['items_only_examples']))}")
    return lines


@dataclass
class DiffCache:
    """Tables and totals derived from one diff, computed once and reused by later calls on it.
    Each attribute is written by the one function that computes it (named beside it)."""

    affected_items: ibis.Table | None = None  # core.diff.affected_items
    affected_population: ibis.Table | None = None  # sampling.explore.affected_population
    pair_totals: dict[float, dict] = field(default_factory=dict)  # sampling.pairs.pair_totals, by weight(T)
    pair_counts: dict | None = None  # sampling.pairs.pair_counts
    partner_index: dict[str, tuple] = field(default_factory=dict)  # sampling.pairs, by side
    pair_vantage: tuple | None = None  # sampling.pairs.sample_pairs_many: (population, rows, totals)
    self_terms: dict[float, float] = field(default_factory=dict)  # quality.stratified.self_term, by weight(T)
    stratum_populations: dict[str, tuple] = field(default_factory=dict)  # quality.stratified: (population, rows)


@dataclass
class Diff:
    """Validated, restricted inputs and the materialized fragment table.

    Attributes
    ----------
    engine
        The engine holding the tables.
    joined
        Ibis table of the common items: ``item_id, base_cluster, exp_cluster, weight``.
    fragments
        Materialized table, one row per non-empty fragment: ``base_cluster,
        exp_cluster, n, w, w2`` (items, weight and sum of squared weights of the
        fragment), ``nb, wb``
        (items and weight of the Base cluster), ``ne, we`` (of the Exp cluster).
    items
        The items table (``item_id, weight, <attributes>``) or ``None``.
    attributes
        Attribute column names of the items table.
    restriction
        What restricting to the common items removed.
    sources
        See the attribute's comment; read the rows of some fragments with :func:`rows_of_fragments`.
    """

    engine: Engine
    joined: ibis.Table
    fragments: ibis.Table
    items: ibis.Table | None
    attributes: list[str]
    restriction: Restriction
    labels: dict[str, str]
    cache: DiffCache = field(default_factory=DiffCache)
    #: For large inputs joined by id (not zipped): the validated ``base``, ``exp`` (and ``items``)
    #: tables, from which :func:`rows_of_fragments` joins only the Base rows it needs; reading
    #: ``joined`` whole joins a billion rows again. None otherwise.
    sources: dict[str, ibis.Table] | None = None
    #: The input files' fingerprints, taken before they were read, when something is kept or
    #: recorded under them (a database file's kept tables; a caller's ``prints``); else None.
    prints: InputPrints | None = None


def build_diff(
    inputs: Inputs,
    *,
    engine: Engine | str | None = None,
    roles: tuple[str, str] = ("base", "exp"),
    prints: InputPrints | None = None,
) -> Diff:
    """Read, validate and restrict the inputs; materialize the fragment table.

    Parameters
    ----------
    inputs
        The Baseline and Experiment clusterings, the optional items table and their
        column names (:class:`~abcde.core.inputs.Inputs`).
    engine
        An :class:`~abcde.engine.Engine`, an engine name, or ``None`` (DuckDB).
    roles
        How the two clusterings are named in messages.
    prints
        The input files' fingerprints, taken by the caller before anything read them (it records
        them, and checks them after its last read); else taken here when the engine keeps tables.

    Raises
    ------
    InputError
        See :mod:`abcde.core.inputs`; also when the clusterings have no item in common,
        or an item of the clusterings has no row in the items table; or when an input file changed
        while it was being read (with a database file: nothing is kept under its fingerprint).

    Notes
    -----
    The steps, each a function below: load and validate each input
    (:func:`_load`); join them on the item id, keeping which inputs hold each item
    (:func:`_join`); group by ``(Base cluster, Exp cluster, in Base, in Exp)`` once
    (:func:`_membership_fragments`), from which the restriction's counts and the
    duplicate-id check follow (:func:`_restriction`); then the fragments of the
    common items with their clusters' totals (:func:`_fragments`). Inputs in the same row
    order are zipped by position instead of joined (:func:`_zip`); large inputs on an engine
    bounded by one machine are joined one bucket of Base clusters at a time
    (:func:`_base_bucket_joins`, :func:`_large_restriction`).
    """
    if not isinstance(inputs, Inputs):
        raise InputError(f"build_diff takes an Inputs object. Got {type(inputs).__name__} instead.")
    eng = resolve(engine)
    if prints is None and eng.persistent:
        prints = InputPrints.of(inputs)  # before the first read: what is kept is keyed by what was read
    key = kept_key(eng, inputs, roles, prints) if eng.persistent else None
    if key is not None:
        kept = _load_kept(eng, key)
        if kept is not None:
            kept.prints = prints
            return kept
    with _progress.step("Reading and validating inputs"):
        loaded, attributes = _load(eng, inputs, roles)
    labels = {k: v.label for k, v in loaded.items()}
    # Large inputs on an engine with one machine's memory (DuckDB): joins in buckets of Base clusters,
    # group-bys written as Parquet, cluster totals in buckets of clusters (_base_bucket_joins,
    # _fragments_in_buckets).
    large = eng.bounded_memory and max(v.rows for v in loaded.values()) > LARGE_ROWS
    fw = None
    zipped = _zip(eng, loaded)
    if zipped is not None:
        with _progress.step("Zipping inputs by row and computing fragments") as shown:
            # The fragments' group-by itself counts the rows whose ids differ (one scan). Small: the
            # fragments with their clusters' totals at once, used if no row differs.
            frag_all = (_large_fragments_all(eng, zipped) if large
                        else eng.materialize(_fragments(eng, _membership_fragments(zipped), keep=("n_off",)),
                                             "fragments"))
            off = int(eng.one(frag_all.aggregate(n=frag_all.n_off.sum()), step="zip check")["n"] or 0)
            if off == 0:
                fw = zipped.drop("_off")
                restriction = _zip_restriction(eng, loaded)
                fragments = (_fragments_in_buckets(eng, frag_all.drop("n_off"), free=frag_all) if large
                             else frag_all.drop("n_off"))
                shown.rows = restriction.common_items
            if large:
                eng.discard(frag_all)  # when the ids differed (else already freed by _fragments_in_buckets)
        if fw is None:
            _progress.note(f"The inputs have the same number of rows and begin with the same ids, but {off:,} rows "
                           "differ further on: joining them by item id instead.")
    sources = None
    if fw is None and large:
        with _progress.step("Joining clusterings in buckets of Base clusters and computing fragments") as shown:
            buckets = _base_bucket_joins(loaded)
            common = eng.materialize_parts(
                [r.group_by(["base_cluster", "exp_cluster"]).aggregate(**_fragment_sums(r)) for r in buckets],
                "fragments")
            restriction = _large_restriction(eng, loaded, common, labels, roles)
            fragments = _fragments_in_buckets(eng, common, free=common)
            # Read whole only by a caller asking for every item's row (bucket by bucket again).
            joined = ibis.union(*buckets) if len(buckets) > 1 else buckets[0]
            sources = {k: v.table for k, v in loaded.items()}
            shown.rows = restriction.common_items
    elif fw is None:
        with _progress.step("Joining clusterings and computing fragments") as shown:
            fw = _join(loaded)
            frag_all = eng.materialize(_membership_fragments(fw), "fragments_all")
            restriction = _restriction(eng, loaded, fw, frag_all, labels, roles)
            fragments = eng.materialize(_fragments(eng, frag_all), "fragments")
            shown.rows = restriction.common_items
    if sources is None:
        joined = fw.filter(fw.in_b & fw.in_e).select("item_id", "base_cluster", "exp_cluster", "weight")
    diff = Diff(
        engine=eng,
        joined=joined,
        fragments=fragments,
        items=loaded["items"].table if "items" in loaded else None,
        attributes=attributes,
        restriction=restriction,
        labels=labels,
        sources=sources,
        prints=prints,
    )
    return _keep(diff, key) if key is not None else diff


#: Kept tables' layout; a new layout is a new key (older kept tables are then not read).
KEPT_FORMAT = 1


def kept_key(eng: Engine, inputs: Inputs, roles: tuple[str, str], prints: InputPrints | None = None) -> str | None:
    """The key under which a database file (``--database``) keeps these inputs' validated tables
    and fragments: a digest of the input files' fingerprints (``prints``, else taken now: the
    sha256 of each file's whole content, :func:`abcde.util.files.input_fingerprint`), their column
    names and roles. None when the engine keeps nothing or an input is not a local file (a table
    in memory, a directory of part files or a URI: abcde cannot tell when those change, so nothing
    is kept for them, and it says so)."""
    if not eng.persistent:
        return None
    prints = prints if prints is not None else InputPrints.of(inputs)
    if prints.unprinted or any(not isinstance(getattr(inputs, r), (str, os.PathLike))
                               for r in ("base", "exp", "items") if getattr(inputs, r) is not None):
        if prints.unprinted:
            _progress.note(f"Nothing is kept in the database for these inputs: {prints.unprinted_text()} "
                           f"{'is a directory or URI' if len(prints.unprinted) == 1 else 'are directories or URIs'}, "
                           "which abcde cannot fingerprint, so it could not tell when they change.")
        return None
    body = {"format": KEPT_FORMAT, "inputs": {r: prints.prints[r] for r in ("base", "exp", "items")
                                              if r in prints.prints},
            "columns": [inputs.item_id, inputs.base_cluster(), inputs.exp_cluster(), inputs.weight],
            "roles": list(roles)}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _kept_names(key: str) -> dict:
    return {k: f"abcde_kept_{key}_{k}" for k in ("joined", "fragments", "items", "meta")}


def _keep(diff: Diff, key: str) -> Diff:
    """Store the diff's validated common items, fragments and items table under ``key`` (the
    metadata last: a kept diff is complete when its metadata is there). The input files are
    checked unchanged since their fingerprints (the key) were taken, after the last read and
    before the metadata: a file changed meanwhile leaves nothing under the key."""
    eng, names = diff.engine, _kept_names(key)
    with _progress.step("Keeping the validated inputs and fragments in the database") as shown:
        try:
            joined = eng.store(names["joined"], diff.joined)
            fragments = eng.store(names["fragments"], diff.fragments)
            items = eng.store(names["items"], diff.items) if diff.items is not None else None
            diff.prints.check("keeping the validated inputs in the database")
        except BaseException:
            _unkeep(eng, key)
            raise
        meta = {"restriction": diff.restriction.to_dict(), "labels": diff.labels, "attributes": diff.attributes,
                "items": items is not None}
        eng.store(names["meta"], ibis.memtable({"meta": [json.dumps(meta, default=str)]}))
        shown.rows = diff.restriction.common_items
    return Diff(engine=eng, joined=joined, fragments=fragments, items=items, attributes=diff.attributes,
                restriction=diff.restriction, labels=diff.labels, prints=diff.prints)


def _unkeep(eng: Engine, key: str) -> None:
    """Drop what was stored under ``key`` (a kept diff not completed)."""
    for name in _kept_names(key).values():
        try:
            eng.con.drop_table(name, force=True)
        except Exception:  # noqa: BLE001 - best effort: without its metadata a partial kept diff is never read
            pass


def _load_kept(eng: Engine, key: str) -> Diff | None:
    """The diff kept under ``key``, or None (never kept, or kept only in part)."""
    names = _kept_names(key)
    meta_t = eng.stored(names["meta"])
    if meta_t is None:
        return None
    meta = json.loads(eng.to_arrow(meta_t, step="kept metadata").column("meta")[0].as_py())
    tables = {k: eng.stored(names[k]) for k in ("joined", "fragments", "items")}
    if tables["joined"] is None or tables["fragments"] is None or (meta["items"] and tables["items"] is None):
        return None
    _progress.note(f"Reusing the validated inputs and fragments kept in the database (key {key}; "
                   f"{meta['restriction']['common_items']:,} items): the inputs are unchanged since they were kept.")
    return Diff(engine=eng, joined=tables["joined"], fragments=tables["fragments"],
                items=tables["items"] if meta["items"] else None, attributes=meta["attributes"],
                restriction=Restriction(**meta["restriction"]), labels=meta["labels"])


def _load(eng: Engine, inputs: Inputs, roles: tuple[str, str]) -> tuple[dict[str, Loaded], list[str]]:
    """Step 1: each input read and validated, with canonical columns (``item_id``,
    ``base_cluster`` / ``exp_cluster``, ``weight`` and the attributes), id types unified."""
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


#: Rows of the inputs' first rows compared before zipping them by position (:func:`_zip`).
ZIP_PROBE_ROWS = 1000
#: At most this many rows per full outer join of the inputs when large inputs in different row
#: orders restrict something: their restricted items are found one hash bucket of item ids at a
#: time (:func:`_join_buckets`).
JOIN_PARTITION_ROWS = 100_000_000
#: At most this many ids per distinct count when an input's ids are checked to be unique (zipped
#: inputs, and large inputs in different row orders: :func:`_distinct_ids`).
UNIQUE_CHECK_ROWS = 500_000_000
#: Inputs of more rows than this are "large" on an engine bounded by one machine's memory:
#: fragments in buckets (:func:`_fragments_in_buckets`), no per-fragment membership table.
LARGE_ROWS = 200_000_000
#: At most this many fragments per bucket of :func:`_fragments_in_buckets`.
FRAGMENT_PARTITION_ROWS = 250_000_000


def _unit_weight() -> ibis.Value:
    """Every item's weight without an items table: 1, as a double. (Ibis writes a float64 literal
    as a bare ``1.0``, which DuckDB reads as a DECIMAL: written to Parquet and read back, sums of
    it are decimals of varying scale, and ratios of them are rounded.)"""
    return ibis.literal(1, type="int8").cast("float64")


def _bucket(ids: ibis.Value, parts: int) -> ibis.Value:
    """Which of ``parts`` buckets an item id falls in, from its hash (never negative)."""
    return ((ids.hash() % parts) + parts) % parts


def _zip(eng: Engine, loaded: dict[str, Loaded]) -> ibis.Table | None:
    """Step 2, for inputs in the same row order (as exports of one item table often are): the
    inputs joined by row position, as :func:`_join` would give them, with ``_off`` true where a
    row's ids differ between the inputs (counted by the membership group-by: any, and the caller
    joins by id instead). None when the engine cannot zip, the inputs' row counts differ, or
    their first :data:`ZIP_PROBE_ROWS` ids do. Joining by position costs a scan of each input;
    joining by id, at a billion items, more memory and disk than one machine has."""
    if len({v.rows for v in loaded.values()}) != 1 or loaded["base"].rows < 2:
        return None
    z = eng.zip({k: v.table for k, v in loaded.items()})
    if z is None:
        return None
    def differ(t: ibis.Table) -> ibis.Value:
        ids = [t[f"{k}__item_id"] for k in loaded]
        return functools.reduce(lambda a, b: a | b, [ids[0] != other for other in ids[1:]])

    head = z.limit(ZIP_PROBE_ROWS)
    if eng.one(head.aggregate(off=differ(head).sum()), step="zip probe")["off"]:
        return None
    ids, off = [z[f"{k}__item_id"] for k in loaded], differ(z)
    weight = z["items__weight"] if "items" in loaded else _unit_weight()
    return z.select(item_id=ids[0], base_cluster=z["base__base_cluster"], exp_cluster=z["exp__exp_cluster"],
                    in_b=ibis.literal(True), in_e=ibis.literal(True), weight=weight,
                    has_w=ibis.literal(True), _off=off)


def _zip_restriction(eng: Engine, loaded: dict[str, Loaded]) -> Restriction:
    """Step 4 for zipped inputs: every row's ids agree, so every item is in every input and
    nothing is restricted; the ids must still be unique (checked on Base, whose ids the others
    repeat row by row), in buckets of at most :data:`UNIQUE_CHECK_ROWS` ids."""
    base = loaded["base"]
    if _distinct_ids(eng, base) != base.rows:
        check_duplicates(eng, base, "base_cluster")
    return Restriction(common_items=base.rows)


def _distinct_ids(eng: Engine, one: Loaded) -> int:
    """How many distinct item ids an input holds, counted in buckets of at most
    :data:`UNIQUE_CHECK_ROWS` ids."""
    t = one.table
    parts = -(-one.rows // UNIQUE_CHECK_ROWS)
    distinct = 0
    for p in range(parts):
        part = t if parts <= 1 else t.filter(_bucket(t.item_id, parts) == p)
        distinct += int(eng.one(part.aggregate(n=part.item_id.nunique()), step="unique ids")["n"] or 0)
    return distinct


def _join_buckets(loaded: dict[str, Loaded]) -> list[ibis.Table]:
    """:func:`_join` of the inputs, one join per hash bucket of ids of at most
    :data:`JOIN_PARTITION_ROWS` rows (one bucket for smaller inputs)."""
    parts = -(-max(v.rows for v in loaded.values()) // JOIN_PARTITION_ROWS)
    if parts <= 1:
        return [_join(loaded)]
    return [_join({k: Loaded(v.table.filter(_bucket(v.table.item_id, parts) == p), v.label, v.rows)
                   for k, v in loaded.items()}) for p in range(parts)]


#: Large inputs in different row orders are joined one bucket of Base clusters at a time
#: (:func:`_base_bucket_joins`), at most about this many Base rows per bucket: the join's
#: hash tables then stay in memory (measured at a billion items with a 14GB limit: 10 GB of RSS
#: at 100M Base rows per bucket; at 200M they took all 14 GB, and a left join spilled 24 GB).
#: A bucket holds whole Base clusters, so one Base cluster of more rows than this makes its
#: bucket larger (DuckDB then spills that join).
JOIN_BUILD_ROWS = 100_000_000


def _inner_join(b: ibis.Table, e: ibis.Table, it: ibis.Table | None) -> ibis.Table:
    """The items in every input, ``item_id, base_cluster, exp_cluster, weight`` (1 without an
    items table): Base rows built into hash tables, Exp and the items table streamed past them."""
    j = b.join(e, "item_id")
    if it is None:
        j = j.mutate(weight=_unit_weight())
    else:
        j = j.join(it.select("item_id", "weight"), "item_id")
    return j.select("item_id", "base_cluster", "exp_cluster", "weight")


def _base_bucket_joins(loaded: dict[str, Loaded]) -> list[ibis.Table]:
    """Step 2 for large inputs in different row orders: the items in every input
    (:func:`_inner_join`), one join per bucket of Base clusters (at most about
    :data:`JOIN_BUILD_ROWS` Base rows each).

    Every item of a Base cluster falls in the cluster's bucket, so the fragments grouped from
    one bucket are whole and no group-by spans buckets. Joined in buckets of item ids instead,
    a fragment's items fall in every bucket: at a billion items the one group-by over those
    buckets spilled 31 GB of partial fragments and filled this machine's disk (issue 16). The
    price: each bucket scans Exp and the items table whole."""
    base = loaded["base"]
    parts = max(1, -(-base.rows // JOIN_BUILD_ROWS))
    e = loaded["exp"].table
    it = loaded["items"].table if "items" in loaded else None
    b = base.table
    return [_inner_join(b if parts == 1 else b.filter(_bucket(b.base_cluster, parts) == p), e, it)
            for p in range(parts)]


def _large_restriction(eng: Engine, loaded: dict[str, Loaded], common: ibis.Table,
                       labels: dict[str, str], roles: tuple[str, str]) -> Restriction:
    """Step 4 for large inputs in different row orders, from the fragments of the items in
    every input (``common``, grouped from :func:`_base_bucket_joins`).

    Those fragments hold ``Σ b·e·i`` rows over the ids in all three inputs (``b, e, i``: an
    id's rows in each). When that sum equals every input's row count and each input's ids are
    distinct (counted in buckets of ids), every input holds the same items, once each: nothing
    is restricted and no id is repeated, with no other join. Otherwise the rows of the items not
    in all three inputs (usually few) are written once from full outer joins in buckets of ids
    (:func:`_join_buckets`), and :func:`_restriction` counts, checks and names them exactly as for
    small inputs, over the common fragments and theirs."""
    n = int(eng.one(common.aggregate(n=common.n.sum()), step="restriction")["n"] or 0)
    if all(v.rows == n for v in loaded.values()) and all(_distinct_ids(eng, v) == v.rows
                                                          for v in loaded.values()):
        return Restriction(common_items=n)
    rest = eng.materialize_parts([j.filter(~(j.in_b & j.in_e & j.has_w)) for j in _join_buckets(loaded)],
                                 "restricted items")
    cols = ["base_cluster", "exp_cluster", "in_b", "in_e", "n", "w", "w2", "n_no_w"]
    frag_all = ibis.union(
        common.mutate(in_b=ibis.literal(True), in_e=ibis.literal(True),
                      n_no_w=ibis.literal(0, type="int64")).select(cols),
        _membership_fragments(rest).select(cols))
    try:
        return _restriction(eng, loaded, rest, frag_all, labels, roles)
    finally:
        eng.discard(rest)


def _join(loaded: dict[str, Loaded]) -> ibis.Table:
    """Step 2: every item of any input, with its clusters, whether Base / Exp hold it
    (``in_b``, ``in_e``), its weight (1 without an items table) and whether the items table
    holds it (``has_w``). Full outer joins: nothing is dropped before it is counted."""
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
        return fo.mutate(weight=_unit_weight(), has_w=ibis.literal(True))
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


def _membership_fragments(fw: ibis.Table) -> ibis.Table:
    """Step 3: items, weight and squared weight per ``(Base cluster, Exp cluster, in Base,
    in Exp)``, and how many have no items-table row (zipped inputs: also ``n_off``, rows whose
    ids differ): one pass over all items."""
    return fw.group_by(["base_cluster", "exp_cluster", "in_b", "in_e"]).aggregate(
        **_fragment_sums(fw), n_no_w=(~fw.has_w).sum())


def _fragment_sums(rows: ibis.Table) -> dict:
    """A group's items, weight and squared weight (``n, w, w2``), and for zipped inputs ``n_off``,
    its rows whose ids differ."""
    sums = {"n": rows.count(), "w": rows.weight.sum(), "w2": (rows.weight * rows.weight).sum()}
    return {**sums, "n_off": rows._off.sum()} if "_off" in rows.columns else sums


def _restriction(eng: Engine, loaded: dict[str, Loaded], fw: ibis.Table, frag_all: ibis.Table,
                 labels: dict[str, str], roles: tuple[str, str]) -> Restriction:
    """Step 4: what restricting to the common items removes, from the membership fragments;
    duplicate ids refused (:func:`_check_duplicate_ids`); no common item, or a common item
    without an items-table row, refused. ``fw`` is read only for rows of items not in every
    input (examples, and ids in one input only), so it may hold just those rows
    (:func:`_large_restriction`)."""
    rb, re_ = roles
    side = eng.one(
        frag_all.aggregate(
            common_n=frag_all.n.sum(where=frag_all.in_b & frag_all.in_e),
            common_no_w=frag_all.n_no_w.sum(where=frag_all.in_b & frag_all.in_e),
            b_only_n=frag_all.n.sum(where=frag_all.in_b & ~frag_all.in_e),
            b_only_w=frag_all.w.sum(where=frag_all.in_b & ~frag_all.in_e),
            e_only_n=frag_all.n.sum(where=~frag_all.in_b & frag_all.in_e),
            e_only_w=frag_all.w.sum(where=~frag_all.in_b & frag_all.in_e),
            items_only_n=frag_all.n.sum(where=~frag_all.in_b & ~frag_all.in_e),
            rows_b=frag_all.n.sum(where=frag_all.in_b),
            rows_e=frag_all.n.sum(where=frag_all.in_e),
            rows_w=(frag_all.n - frag_all.n_no_w).sum(),
        ),
        step="restriction",
    )
    _check_duplicate_ids(eng, loaded, fw, side)
    common_n = int(side.get("common_n") or 0)
    b_only = int(side.get("b_only_n") or 0)
    e_only = int(side.get("e_only_n") or 0)

    def examples(pred) -> list:
        rows = eng.rows(fw.filter(pred).select("item_id").order_by("item_id").limit(N_EXAMPLES), step="examples")
        return [r["item_id"] for r in rows]

    if common_n == 0:
        raise InputError(
            f"The {labels['base']} and the {labels['exp']} have no item in common "
            f"({b_only} items only in {rb}, first: {examples_text(examples(fw.in_b & ~fw.in_e))}; "
            f"{e_only} only in {re_}, first: {examples_text(examples(~fw.in_b & fw.in_e))}). "
            "Check that both use the same item ids."
        )
    no_w = int(side.get("common_no_w") or 0)
    if no_w:
        ex = examples(fw.in_b & fw.in_e & ~fw.has_w)
        raise InputError(
            f"{no_w} items of the clusterings have no row in the {labels['items']} "
            f"(first: {examples_text(ex)}). Every item needs a row (and weight) there."
        )
    items_only = int(side.get("items_only_n") or 0)
    return Restriction(
        common_items=common_n,
        base_only_items=b_only,
        base_only_weight=float(side.get("b_only_w") or 0.0),
        base_only_examples=examples(fw.in_b & ~fw.in_e) if b_only else [],
        exp_only_items=e_only,
        exp_only_weight=float(side.get("e_only_w") or 0.0),
        exp_only_examples=examples(~fw.in_b & fw.in_e) if e_only else [],
        items_only_items=items_only,
        items_only_examples=examples(~fw.in_b & ~fw.in_e) if items_only else [],
    )


def _check_duplicate_ids(eng: Engine, loaded: dict[str, Loaded], fw: ibis.Table, side: dict) -> None:
    """Refuse duplicate item ids, found from row counts instead of a group-by over all items.

    Joining the inputs on the id gives an id with counts (b, e, i) in Base, Exp and items
    max(b,1)*max(e,1)*max(i,1) rows. For each input X, the joined rows of ids present in X
    sum to at least rows(X), id by id, with equality exactly when the id's counts in the
    *other* inputs are all 1. So the three equalities below hold iff every id present in two
    or more inputs is unique in each of them. Ids present in one input only are checked
    separately (usually few rows).
    """
    has_items = "items" in loaded
    counts = {
        "base": int(side.get("rows_b") or 0),
        "exp": int(side.get("rows_e") or 0),
        "items": int(side.get("rows_w") or 0),
    }
    for key, got in counts.items():
        if key in loaded and got != loaded[key].rows:
            for k, v in loaded.items():
                check_duplicates(eng, v, f"{k}_cluster" if k != "items" else None)
    singles = [("base", fw.in_b & ~fw.in_e & ~fw.has_w if has_items else fw.in_b & ~fw.in_e, "b_only_n"),
               ("exp", ~fw.in_b & fw.in_e & ~fw.has_w if has_items else ~fw.in_b & fw.in_e, "e_only_n"),
               ("items", ~fw.in_b & ~fw.in_e, "items_only_n")]
    for key, pred, stat in singles:
        if key in loaded and side.get(stat):
            only = fw.filter(pred)
            d = only.group_by("item_id").aggregate(rows=only.count())
            if eng.one(d.filter(d.rows > 1).aggregate(n=ibis._.count()), step="duplicate ids")["n"]:
                check_duplicates(eng, loaded[key], f"{key}_cluster" if key != "items" else None)


def _fragments(eng: Engine, frag_all: ibis.Table, keep: tuple[str, ...] = ()) -> ibis.Table:
    """Step 5: the fragments of the common items, ``base_cluster, exp_cluster, n, w, w2``, with
    their Base and Exp clusters' items and weights ``nb, wb, ne, we`` (and the columns ``keep``
    of ``frag_all``)."""
    f = frag_all.filter(frag_all.in_b & frag_all.in_e).select("base_cluster", "exp_cluster", "n", "w", "w2", *keep)
    # Cluster totals W(Base), W(Exp): two equivalent expressions, the faster one for
    # the engine (measured at 10M items: on DuckDB group-by + join back is 1.4x
    # faster than window sums; on Spark window sums are 1.6x faster).
    if eng.prefers_window_sums:
        by_b, by_e = ibis.window(group_by=f.base_cluster), ibis.window(group_by=f.exp_cluster)
        f = f.mutate(nb=f.n.sum().over(by_b), wb=f.w.sum().over(by_b),
                     ne=f.n.sum().over(by_e), we=f.w.sum().over(by_e))
    else:
        bt = f.group_by("base_cluster").aggregate(nb=f.n.sum(), wb=f.w.sum())
        et = f.group_by("exp_cluster").aggregate(ne=f.n.sum(), we=f.w.sum())
        f = f.join(bt, "base_cluster").join(et, "exp_cluster")
    return f.select("base_cluster", "exp_cluster", "n", "w", "w2", "nb", "wb", "ne", "we", *keep)


def _fragments_in_buckets(eng: Engine, fragments: ibis.Table, *, free: ibis.Table) -> ibis.Table:
    """Step 5 for large inputs: the fragment table of :func:`_fragments`, in steps that each hold
    at most :data:`FRAGMENT_PARTITION_ROWS` rows in memory, written as compressed Parquet parts.

    ``fragments``: the common items grouped by ``(Base cluster, Exp cluster)`` (``n, w, w2``),
    already written as Parquet (:func:`_large_fragments_all`, or grouped from
    :func:`_base_bucket_joins`); ``free``, the written table behind it, is discarded as soon as
    the first pass has read it (at a billion items, 8 GB of disk the second pass needs). Its
    Base totals ``nb, wb`` are window sums in buckets of Base clusters (every fragment of a cluster
    falls in the cluster's bucket), then ``ne, we`` in buckets of Exp clusters: each pass scans the
    fragments (a third of the items here), never the inputs again. At a billion items a group-by
    with its totals joined back, in memory, spilled beyond this machine's disk (issue 16).
    """
    f = fragments
    rows = int(eng.one(f.aggregate(n=f.count()), step="fragments")["n"])
    parts = max(1, -(-rows // FRAGMENT_PARTITION_ROWS))
    out = f
    for key, n, w in (("base_cluster", "nb", "wb"), ("exp_cluster", "ne", "we")):
        steps = []
        for p in range(parts):
            h = out if parts == 1 else out.filter(_bucket(out[key], parts) == p)
            win = ibis.window(group_by=h[key])
            steps.append(h.mutate(**{n: h.n.sum().over(win), w: h.w.sum().over(win)}))
        done = eng.materialize_parts(steps, f"fragments: {'Base' if n == 'nb' else 'Exp'} cluster totals")
        eng.discard(free if out is f else out)  # read by now; its disk is needed by the next pass
        out = done
    return out.select("base_cluster", "exp_cluster", "n", "w", "w2", "nb", "wb", "ne", "we")


def _large_fragments_all(eng: Engine, rows: ibis.Table) -> ibis.Table:
    """Items, weight and squared weight per ``(Base cluster, Exp cluster)`` of ``rows`` (and
    ``n_off``, rows whose ids differ, for zipped inputs): one group-by, written straight to a
    Parquet part (the engine spills what does not fit its memory limit; no temporary table)."""
    g = rows.group_by(["base_cluster", "exp_cluster"]).aggregate(**_fragment_sums(rows))
    return eng.materialize_parts([g], "fragments")


def rows_of_fragments(diff: Diff, frags: ibis.Table) -> ibis.Table:
    """The common items of some fragments (``frags``: ``base_cluster, exp_cluster`` pairs), as
    ``item_id, base_cluster, exp_cluster, weight``.

    For large inputs joined by id (``diff.sources``) only the Base rows of those fragments'
    clusters are joined to Exp and the items table (one scan of each, a hash table of those rows
    only) instead of reading ``joined`` whole, which joins every item again."""
    keys = ["base_cluster", "exp_cluster"]
    if diff.sources is None:
        return diff.joined.semi_join(frags, keys)
    src = diff.sources
    b = src["base"].semi_join(frags.select("base_cluster").distinct(), "base_cluster")
    return _inner_join(b, src["exp"], src.get("items")).semi_join(frags, keys)


def affected_items(diff: Diff) -> ibis.Table:
    """The affected items (``Base(i) != Exp(i)``): ``item_id, base_cluster,
    exp_cluster, weight``, materialized once per diff.

    Every item of an affected Base or Exp cluster is itself affected (clusters are
    disjoint), so pair sampling and the exploration sample need only these rows —
    typically a few percent of the items — instead of joining all inputs again.
    """
    if diff.cache.affected_items is None:
        f = diff.fragments
        aff = f.filter(affected(f)).select("base_cluster", "exp_cluster")
        diff.cache.affected_items = diff.engine.materialize(rows_of_fragments(diff, aff), "affected_items")
    return diff.cache.affected_items
