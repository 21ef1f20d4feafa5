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
over the fragment table (``W(B)`` and ``W(E)`` are sums over it: :func:`abcde.core.join_common.with_totals`).

:func:`build_diff` reads and validates the inputs, restricts them to the items
both clusterings share (reporting what was removed), and materializes the
fragment table in the engine. How it joins the inputs is one module per strategy:
:mod:`abcde.core.join_zip` (same row order), :mod:`abcde.core.join_hash` (one hash join) and
:mod:`abcde.core.join_buckets` (large inputs in other orders), over the steps they share
(:mod:`abcde.core.join_common`) and the restriction (:mod:`abcde.core.restriction`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

import ibis
import pyarrow as pa

from abcde.core import join_buckets, join_hash, join_zip
from abcde.core.formulas import affected
from abcde.core.inputs import Inputs, Loaded
from abcde.core.join_common import Sizes, inner_join
from abcde.core.join_common import load_inputs as _load
from abcde.core.restriction import N_EXAMPLES, Restriction, describe_restriction
from abcde.engine import Engine, resolve
from abcde.errors import InputError
from abcde.util import progress as _progress
from abcde.util.files import InputPrints

__all__ = ["N_EXAMPLES", "Diff", "DiffCache", "Restriction", "affected_fragments", "affected_items", "build_diff", "cell_rows",
           "describe_restriction", "kept_key", "read_cells_with_affected", "rows_of_fragments"]

#: Rows of the inputs' first rows compared before zipping them by position (:func:`_zip`).
ZIP_PROBE_ROWS = 1000
#: Inputs of more rows than this are "large" on an engine bounded by one machine's memory:
#: fragments in buckets (:func:`abcde.core.join_buckets.fragments_in_buckets`), no per-fragment
#: membership table.
LARGE_ROWS = 200_000_000

#: The memory limit at which the bucket sizes below were measured: ``--memory-limit 14GB``, which
#: DuckDB takes as 13.0 GiB. On an engine with another limit (:attr:`abcde.engine.Engine.memory_bytes`:
#: given, or DuckDB's default of 80% of RAM) each size scales with it (:func:`_sizes`), so a larger
#: machine joins in fewer buckets (fewer scans of Exp and the items table) and a smaller one in more
#: (each join spilling no more than it did when measured), never below a tenth of the measured size.
MEASURED_MEMORY = 13 * 2**30
#: Each bucket size below: None scales the measured size (beside it) with the memory limit; a
#: number is used as it is (tests make small inputs "large" by setting one).
#:
#: At most this many rows per full outer join of the inputs when large inputs in different row
#: orders restrict something: their restricted items are found one hash bucket of item ids at a
#: time (:func:`abcde.core.join_buckets.join_buckets`). Measured: 100M rows, 8.4 GB of RSS.
JOIN_PARTITION_ROWS: int | None = None
#: At most this many ids per distinct count when an input's ids are checked to be unique (zipped
#: inputs, and large inputs in different row orders: :func:`abcde.core.join_common.distinct_ids`).
#: Measured: 500M.
UNIQUE_CHECK_ROWS: int | None = None
#: At most this many fragments per bucket of :func:`abcde.core.join_buckets.fragments_in_buckets`.
#: Measured: 250M.
FRAGMENT_PARTITION_ROWS: int | None = None
#: Large inputs in different row orders are joined one bucket of Base clusters at a time
#: (:func:`abcde.core.join_buckets.base_bucket_joins`), at most about this many Base rows per bucket;
#: each bucket scans Exp and the items table whole. Measured at a billion items in different orders,
#: one bucket alone (join, fragments with their Base totals, written): 100M Base rows 104.6 s, in
#: memory (9.5 GB of RSS); 143M 135.9 s (1.4 GB spilled); 200M 161.9 s (6.3 GB spilled); 250M
#: 201.1 s (11.4 GB spilled); 333M 446.2 s (30.7 GB spilled, near this disk's end); at most 14.7 GB
#: of RSS. Over the billion: 10 buckets 1,046 s, 7 951 s, 5 810 s, 4 804 s, 3 1,339 s, so 200M: a
#: spill costs less than a scan of Exp and the items table, until it grows as large. A bucket holds
#: whole Base clusters, so one Base cluster of more rows than this makes its bucket larger (DuckDB
#: then spills more).
JOIN_BUILD_ROWS: int | None = None
#: The sizes measured at :data:`MEASURED_MEMORY`.
MEASURED_ROWS = {"join_partition_rows": 100_000_000, "unique_check_rows": 500_000_000,
                 "fragment_partition_rows": 250_000_000, "join_build_rows": 200_000_000}


def _sizes(eng: Engine) -> Sizes:
    """The knobs above, read when a diff is built; each bucket size not set scaled with ``eng``'s
    memory limit (the measured size when the engine does not say)."""
    memory = eng.memory_bytes
    given = {"join_partition_rows": JOIN_PARTITION_ROWS, "unique_check_rows": UNIQUE_CHECK_ROWS,
             "fragment_partition_rows": FRAGMENT_PARTITION_ROWS, "join_build_rows": JOIN_BUILD_ROWS}
    rows = {k: v if v is not None
            else MEASURED_ROWS[k] if not memory
            else max(MEASURED_ROWS[k] // 10, MEASURED_ROWS[k] * memory // MEASURED_MEMORY)
            for k, v in given.items()}
    return Sizes(zip_probe_rows=ZIP_PROBE_ROWS, large_rows=LARGE_ROWS, **rows)


def _zip(eng: Engine, loaded: dict[str, Loaded]) -> ibis.Table | None:
    """The inputs zipped by row position, or None (:func:`abcde.core.join_zip.zip_inputs`)."""
    return join_zip.zip_inputs(eng, loaded, probe_rows=ZIP_PROBE_ROWS)


@dataclass
class DiffCache:
    """Tables and totals derived from one diff, computed once and reused by later calls on it.
    Each attribute is written by the one function that computes it (named beside it)."""

    affected_fragments: ibis.Table | None = None  # core.diff.affected_fragments
    overall: dict | None = None  # metrics.impact.overall
    affected_items: ibis.Table | None = None  # core.diff.affected_items
    cells_to_read: pa.Table | None = None  # core.diff.read_cells_with_affected: cells read with the affected items
    cell_rows: pa.Table | None = None  # core.diff.affected_items: the rows of cells_to_read
    affected_population: ibis.Table | None = None  # sampling.explore.affected_population
    vantage_items: ibis.Table | None = None  # sampling.pairs.vantage_items
    pair_vantage: tuple | None = None  # sampling.pairs.sample_pairs_many: (population, rows, totals)
    stratum_populations: dict[str, tuple] = field(default_factory=dict)  # quality.stratified.stratum_populations
    link_masses: dict[float, dict] = field(default_factory=dict)  # metrics.impact.link_masses, by weight(T)
    agreed_population: tuple | None = None  # sampling.pairs.agreed_population: (population, rows)
    cell_sums: object | None = None  # sampling.cells.cell_sums: a CellSums
    agreed_groups: object | None = None  # sampling.cells.agreed_groups: an AgreedGroups
    agreed_cells: dict = field(default_factory=dict)  # sampling.agreed: fetched groups and cells
    entity_totals: dict = field(default_factory=dict)  # completion.sample.draw_entities: by design


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
    #: For inputs joined by id (not zipped, not kept in a database): the validated ``base``, ``exp``
    #: (and ``items``) tables, from which :func:`rows_of_fragments` joins only the Base rows it needs;
    #: reading ``joined`` whole joins every item again. None otherwise.
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
    The inputs are loaded and validated (:func:`abcde.core.join_common.load_inputs`), then joined by
    one of three strategies, each a module of its own, which ends in the fragments of the common items
    with their clusters' totals and the restriction:

    * inputs in the same row order are zipped by position (:mod:`abcde.core.join_zip`), every row's
      ids verified, falling back to a join by id when some differ;
    * otherwise one full outer hash join (:mod:`abcde.core.join_hash`), whose group-by per
      ``(Base cluster, Exp cluster, in Base, in Exp)`` gives the restriction's counts and the
      duplicate-id check at once;
    * large inputs (:data:`LARGE_ROWS`) on an engine bounded by one machine are joined one bucket of
      Base clusters at a time (:mod:`abcde.core.join_buckets`).
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
    sizes = _sizes(eng)
    # Large inputs on an engine with one machine's memory (DuckDB): joins in buckets of Base clusters,
    # group-bys written as Parquet, cluster totals in buckets of clusters (abcde.core.join_buckets).
    large = eng.bounded_memory and max(v.rows for v in loaded.values()) > sizes.large_rows
    built = None
    zipped = _zip(eng, loaded)
    if zipped is not None:
        built = join_zip.build(eng, loaded, zipped, large=large, sizes=sizes)
    if built is None:
        built = (join_buckets.build(eng, loaded, labels, roles, sizes) if large
                 else join_hash.build(eng, loaded, labels, roles))
    diff = Diff(
        engine=eng,
        joined=built.joined,
        fragments=built.fragments,
        items=loaded["items"].table if "items" in loaded else None,
        attributes=attributes,
        restriction=built.restriction,
        labels=labels,
        sources=built.sources,
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
        eng.store(names["meta"], ibis.memtable(pa.table({"meta": [json.dumps(meta, default=str)]})))
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


def rows_of_fragments(diff: Diff, frags: ibis.Table, *, affected_only: bool = False) -> ibis.Table:
    """The common items of some fragments (``frags``: ``base_cluster, exp_cluster`` pairs), as
    ``item_id, base_cluster, exp_cluster, weight``.

    ``affected_only``: every fragment in ``frags`` is affected, so once the affected items are
    materialized (:func:`affected_items`, which the samplers need anyway) their rows are read from
    there, a few percent of the items. Else, for inputs joined by id (``diff.sources``), only the
    Base rows of those fragments' clusters are joined to Exp and the items table (one scan of each, a
    hash table of those rows only) instead of reading ``joined`` whole, which joins every item again."""
    keys = ["base_cluster", "exp_cluster"]
    if affected_only and diff.cache.affected_items is not None:
        return diff.cache.affected_items.semi_join(frags, keys)
    if diff.sources is None:
        return diff.joined.semi_join(frags, keys)
    src = diff.sources
    b = src["base"].semi_join(frags.select("base_cluster").distinct(), "base_cluster")
    return inner_join(b, src["exp"], src.get("items")).semi_join(frags, keys)


def affected_fragments(diff: Diff) -> ibis.Table:
    """The affected fragments (``n < nb`` or ``n < ne``: their items have ``Base(i) != Exp(i)``), with
    every column of the fragment table, materialized once per diff.

    Everything but the overall numbers reads only these (the top clusters, the per-item and
    per-cluster tables, the affected items, the report's histogram and neighbourhoods): typically a
    few percent of the fragments, read from here instead of filtering the whole table each time."""
    if diff.cache.affected_fragments is None:
        f = diff.fragments
        diff.cache.affected_fragments = diff.engine.materialize(f.filter(affected(f)), "affected_fragments")
    return diff.cache.affected_fragments


def affected_items(diff: Diff) -> ibis.Table:
    """The affected items (``Base(i) != Exp(i)``): ``item_id, base_cluster,
    exp_cluster, weight``, materialized once per diff.

    Every item of an affected Base or Exp cluster is itself affected (clusters are
    disjoint), so pair sampling and the exploration sample need only these rows —
    typically a few percent of the items — instead of joining all inputs again. The rows of the
    cells :func:`read_cells_with_affected` named are read in the same pass (:func:`cell_rows`).
    """
    if diff.cache.affected_items is None:
        eng, keys = diff.engine, ["base_cluster", "exp_cluster"]
        aff = affected_fragments(diff).select(*keys)
        extra = diff.cache.cells_to_read
        if extra is None or not extra.num_rows:
            diff.cache.affected_items = eng.materialize(rows_of_fragments(diff, aff), "affected_items")
        else:
            # One read of the inputs for both: the affected items and the rows of the cells named.
            cells = ibis.memtable(extra.select(keys)).cast(aff.schema())
            both = eng.materialize(rows_of_fragments(diff, ibis.union(aff, cells)), "affected_and_named_items")
            diff.cache.cell_rows = eng.to_arrow(both.semi_join(cells, keys), step="items of the named cells")
            diff.cache.affected_items = eng.materialize(both.semi_join(aff, keys), "affected_items")
            eng.discard(both)
    return diff.cache.affected_items


def read_cells_with_affected(diff: Diff, cells: pa.Table) -> None:
    """Name cells (``base_cluster, exp_cluster``: unaffected ones too) whose rows a later step reads,
    so that they are read with the affected items, in the same pass over the inputs, when those are
    not read yet (:func:`affected_items`); :func:`cell_rows` then gives them without a read of their
    own. Nothing happens once the affected items are read."""
    if diff.cache.affected_items is None:
        diff.cache.cells_to_read = cells


def cell_rows(diff: Diff, cells: pa.Table) -> pa.Table | None:
    """The rows (``item_id, base_cluster, exp_cluster, weight``) of ``cells``, when every one of them
    was read with the affected items (:func:`read_cells_with_affected`); else None."""
    have, named = diff.cache.cell_rows, diff.cache.cells_to_read
    if have is None or named is None:
        return None
    keys = ["base_cluster", "exp_cluster"]
    named_keys = set(zip(*(named.column(k).to_pylist() for k in keys)))
    if not set(zip(*(cells.column(k).to_pylist() for k in keys))) <= named_keys:
        return None
    return have.join(cells.select(keys), keys, join_type="left semi")
