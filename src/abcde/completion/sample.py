"""Drawing an entity sample (``abcde entities``) and its directory.

An *entity sample* is ``budget`` draws, with replacement, of the affected items ``A`` (the items whose
Base and Exp clusters differ), each draw item ``i`` with probability ``p_i``:

- design ``recall`` (the default): ``p_i = w_i / w(A)``;
- design ``iq``: ``p_i = w_i·JD(i) / Σ_{j∈A} w_j·JD(j)``, the importance sample of the exploration
  sample (JD: the item's JaccardDistance between Base and Exp).

Every draw's probability is known, so both ΔRecall and IQ are estimated from either design
(:mod:`abcde.completion.estimate`); the design only sets which of them is estimated more precisely.
When ``budget`` is at least ``|A|`` every affected item is listed once instead (a census: the
estimates are exact). The draws come from exponential clocks hashed from the seed and the item
ids (:mod:`abcde.sampling.clocks`): the same seed and inputs give the same draws on every engine.

For each distinct drawn item (an *anchor*) the directory keeps the members of ``U(i) = B(i) ∪ E(i)``
with whether each is in ``B(i)`` and in ``E(i)`` (never shown to a judge), their weights, and,
with ``candidates=COLUMN``, the items sharing the anchor's value of that (blocking) column that
are in neither cluster: where a judge looks for the entity's items outside both clusters.

The directory ``DIR``:

``draws.parquet``
    one row per draw: ``draw``, ``item_id``, ``p`` (the draw's probability);
``anchors.parquet``
    one row per anchor: ``item_id``, ``weight``, ``jd``, ``base_weight`` (``w(B(i))``),
    ``exp_weight`` (``w(E(i))``);
``members.parquet``
    ``anchor``, ``item_id``, ``in_base``, ``in_exp``, ``weight`` of every member of ``U(i)``, with
    ``shown`` and ``pi``: a ``U(i)`` of more than :data:`MAX_MEMBERS` others is subsampled with known
    probabilities (:func:`subsample_members`), and its task lists the members shown;
``candidates.parquet``
    ``anchor``, ``item_id``, ``weight`` (with ``candidates=``);
``items.parquet``
    the attributes of every anchor, member and candidate;
``tasks.jsonl``
    one task per anchor, blind: the anchor, then the members of ``U(i)`` shuffled (never labelled
    Base or Exp), then the candidates; attributes only (no weights, no ``hide`` columns);
``metadata.json``
    the design, the seed, the exact totals the estimates need (``total_weight``, ``affected_weight``,
    ``jaccard_distance``, the draws' normaliser, the least JD(i) of an affected item), the slices'
    exact weights, the inputs' paths and fingerprints, the files' sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import ibis
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from abcde.core.diff import Diff, affected_items, build_diff
from abcde.core.inputs import Inputs
from abcde.engine import Engine
from abcde.errors import InputError
from abcde.metrics.impact import check_slice_columns, overall, per_item_expr
from abcde.sampling.clocks import check_seed, check_size, hash_uniforms_py, replay, smallest_draw_times
from abcde.util.files import InputPrints, file_digest, make_temp_dir, parse_json

FORMAT = "abcde.entity_sample"
VERSION = 1
DESIGNS = ("recall", "iq")
#: The files of an entity sample (written once, fingerprinted in ``metadata.json``).
FILES = ("draws.parquet", "anchors.parquet", "members.parquet", "candidates.parquet", "items.parquet",
         "tasks.jsonl")
#: The most members of ``U(i)`` a task lists: a larger ``U(i)`` (a cluster too large to tick) is
#: subsampled with known probabilities (:func:`subsample_members`).
MAX_MEMBERS = 100
#: The most candidates listed for one anchor (those of smallest hash first): a blocking key shared
#: by thousands of items is a search, not a list.
MAX_CANDIDATES = 50
SALT = "entities:"
#: Where ``--extend`` writes an entity sample's new files before they replace the old ones, and the
#: file that says they are all there (:mod:`abcde.completion.extend`).
EXTENDING, DONE = ".abcde-extend", "COMPLETE"
NEVER_SHOWN = ("weight",)


def is_entity_sample(path) -> bool:
    """Whether ``path`` is a directory holding an entity sample (its ``metadata.json`` says so)."""
    p = Path(path) / "metadata.json"
    try:
        st = p.stat()
        # only a regular file of a sane size is read (a named pipe would block; a pair sample's reader
        # then names what is wrong with it)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
            return False
        return parse_json(p.read_bytes()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):  # not one (a pair sample's reader names what is wrong)
        return False


# ------------------------------------------------------------------------------------- drawing
def entity_population(diff: Diff, design: str) -> ibis.Table:
    """The affected items with their draw weight ``p`` (``w_i`` or ``w_i·JD(i)``), ``jd``, and their
    clusters."""
    if design not in DESIGNS:
        raise InputError(f"Unknown entity design {design!r}: expected one of {', '.join(DESIGNS)}.")
    t = per_item_expr(diff, affected_items(diff), only_affected=True)
    p = t.weight if design == "recall" else t.weight * t.jaccard_distance
    return t.select("item_id", "base_cluster", "exp_cluster", "weight", jd=t.jaccard_distance, p=p)


def _draw_order(top: pa.Table, seed: int, budget: int) -> np.ndarray:
    """The first ``budget`` draws of ``top`` (with ``dt0`` and ``p``), with replacement, in time order."""
    out = []
    for _, i in replay(top, weight="p", seed=seed, stream=5):
        out.append(i)
        if len(out) == budget:
            break
    return np.array(out, dtype=np.int64)


def draw_entities(diff: Diff, *, budget: int, seed: int, design: str = "recall") -> tuple[pa.Table, dict]:
    """The draws (``draw, item_id, p``: the draw's probability) and the exact totals, ``{n_affected,
    affected_weight, mass, census}``: ``budget`` draws with replacement ∝ the design's weight, or a
    census of the affected items when ``budget`` reaches their number."""
    budget, seed = check_size(budget, "budget"), check_seed(seed)
    eng = diff.engine
    pop = entity_population(diff, design)
    if design not in diff.cache.entity_totals:  # once per diff and design (samples of many seeds read them)
        diff.cache.entity_totals[design] = eng.one(
            pop.aggregate(n=pop.count(), w=pop.weight.sum(), mass=pop.p.sum(), min_jd=pop.jd.min()),
            step="entity totals")
    row = diff.cache.entity_totals[design]
    n, w_a, mass = int(row["n"] or 0), float(row["w"] or 0.0), float(row["mass"] or 0.0)
    facts = {"n_affected": n, "affected_weight": w_a, "mass": mass, "min_jd": float(row["min_jd"] or 0.0),
             "census": n <= budget}
    if n == 0:
        return pa.table({"draw": pa.array([], pa.int64()), "item_id": pa.array([], eng.to_arrow(
            pop.select("item_id").limit(0)).schema.field("item_id").type), "p": pa.array([], pa.float64())}), facts
    if n <= budget:  # a census: every affected item once, with p = its share (the estimates read it as a sum)
        t = eng.to_arrow(pop.select("item_id", "p").order_by("item_id"), step="entity census")
        p = np.asarray(t.column("p").to_numpy(zero_copy_only=False), dtype=float) / mass
        return pa.table({"draw": pa.array(np.arange(t.num_rows), pa.int64()), "item_id": t.column("item_id"),
                         "p": pa.array(p, pa.float64())}), facts
    top = smallest_draw_times(eng, pop.select("item_id", "p"), key="item_id", weight="p", n=budget, seed=seed,
                              salt=SALT, step="entity draws")
    order = _draw_order(top, seed, budget)
    rows = top.take(pa.array(order))
    p = np.asarray(rows.column("p").to_numpy(zero_copy_only=False), dtype=float) / mass
    return pa.table({"draw": pa.array(np.arange(len(order)), pa.int64()), "item_id": rows.column("item_id"),
                     "p": pa.array(p, pa.float64())}), facts


def anchor_facts(diff: Diff, ids: list, *, candidates: str | None = None) -> tuple[pa.Table, pa.Table, pa.Table]:
    """For the anchors ``ids``: their facts, the members of ``U(i)`` and (with ``candidates``) the items
    sharing their value of that column in neither cluster (at most :data:`MAX_CANDIDATES` each)."""
    eng = diff.engine
    j = diff.joined
    a = ibis.memtable(pa.table({"anchor": pa.array(ids, eng.to_arrow(j.select("item_id").limit(0)).schema
                                                   .field("item_id").type)}))
    anc = a.join(j, a.anchor == j.item_id).select("anchor", "base_cluster", "exp_cluster", "weight")
    f = diff.fragments
    wb = f.group_by("base_cluster").aggregate(base_weight=f.wb.max())
    we = f.group_by("exp_cluster").aggregate(exp_weight=f.we.max())
    per = anc.join(wb, "base_cluster").join(we, "exp_cluster")
    jd = per_item_expr(diff, affected_items(diff), only_affected=True).select("item_id", jd="jaccard_distance")
    per = per.left_join(jd, per.anchor == jd.item_id).select(
        item_id=per.anchor, weight=per.weight, jd=jd.jd.fill_null(0.0), base_weight=per.base_weight,
        exp_weight=per.exp_weight)
    anchors = eng.to_arrow(per.order_by("item_id"), step="entity anchors")
    m = anc.select(anchor="anchor", b="base_cluster", e="exp_cluster")
    # U(i) = B(i) ∪ E(i) as two equi-joins (an OR join would be a nested loop): B(i)'s items, then
    # E(i)'s items outside B(i).
    mb = m.join(j, m.b == j.base_cluster).select(anchor=m.anchor, item_id=j.item_id, in_base=ibis.literal(True),
                                                 in_exp=j.exp_cluster == m.e, weight=j.weight)
    me = m.join(j, m.e == j.exp_cluster)
    me = me.filter(me.base_cluster != me.b).select(anchor=me.anchor, item_id=me.item_id, in_base=ibis.literal(False),
                                                   in_exp=ibis.literal(True), weight=me.weight)
    mem = mb.union(me)
    members = eng.to_arrow(mem.order_by(["anchor", "item_id"]), step="entity members")
    if candidates is None:
        cand = pa.table({"anchor": members.column("anchor").slice(0, 0), "item_id": members.column("item_id")
                         .slice(0, 0), "weight": pa.array([], pa.float64())})
        return anchors, members, cand
    it = diff.items
    key = a.join(it, a.anchor == it.item_id).select(anchor=a.anchor, key=it[candidates])
    key = key.filter(key.key.notnull())
    c = key.join(it, key.key == it[candidates]).select(anchor=key.anchor, item_id=it.item_id)
    c = c.join(j, c.item_id == j.item_id).select(c.anchor, c.item_id, j.weight)
    c = c.anti_join(mem, [c.anchor == mem.anchor, c.item_id == mem.item_id])
    cand = eng.to_arrow(c.order_by(["anchor", "item_id"]), step="entity candidates")
    return anchors, members, _cap_candidates(cand)


def _allocation(sizes: dict, limit: int) -> dict:
    """``{class: n}`` members shown per class of ``sizes`` (``{class: N}``), ``limit`` in all: in
    proportion to ``N`` (largest remainders), at least 2 of a class that has 2 (a class's variance
    needs two), never more than ``N``."""
    total = sum(sizes.values())
    n = {c: min(size, max(2, limit * size // total)) for c, size in sizes.items() if size}
    order = sorted(n, key=lambda c: (-(limit * sizes[c] / total - n[c]), c))
    while sum(n.values()) < limit and any(n[c] < sizes[c] for c in n):
        for c in order:
            if sum(n.values()) < limit and n[c] < sizes[c]:
                n[c] += 1
    while sum(n.values()) > limit:
        c = max((c for c in n if n[c] > 2), key=lambda c: (n[c], c), default=None)
        if c is None:
            break
        n[c] -= 1
    return n


def subsample_members(members: pa.Table, seed: int, limit: int | None = None) -> pa.Table:
    """``members`` with ``shown`` (listed in the task) and ``pi`` (the probability it is): every member
    of an anchor with at most ``limit`` others (``pi`` 1); of a larger ``U(i)``, a simple random
    sample of each class (in both clusters, Base's only, Exp's only), ``limit`` in all
    (:func:`_allocation`), by the smallest hashes of (seed, anchor, item), ``pi = n/N`` of its class.
    The anchor itself is always shown."""
    limit = MAX_MEMBERS if limit is None else limit
    a, i = members.column("anchor").to_pylist(), members.column("item_id").to_pylist()
    b, e = members.column("in_base").to_pylist(), members.column("in_exp").to_pylist()
    shown, pi = [True] * len(a), [1.0] * len(a)
    rows: dict = {}
    for k in range(len(a)):
        if a[k] != i[k]:
            rows.setdefault(a[k], []).append(k)
    for anchor, ks in rows.items():
        if len(ks) <= limit:
            continue
        by_class: dict = {}
        for k in ks:
            by_class.setdefault("both" if b[k] and e[k] else ("base" if b[k] else "exp"), []).append(k)
        n = _allocation({c: len(v) for c, v in by_class.items()}, limit)
        for c, v in by_class.items():
            u = hash_uniforms_py([f"{anchor}|{i[k]}" for k in v], seed, "members:")
            keep = {k for _, k in sorted(zip(u, v))[:n[c]]}
            for k in v:
                shown[k], pi[k] = k in keep, n[c] / len(v)
    return members.append_column("shown", pa.array(shown, pa.bool_())).append_column("pi", pa.array(pi, pa.float64()))


def _cap_candidates(cand: pa.Table) -> pa.Table:
    """At most :data:`MAX_CANDIDATES` per anchor: those of smallest hash of (anchor, item)."""
    if not cand.num_rows:
        return cand
    keys = [f"{a}|{i}" for a, i in zip(cand.column("anchor").to_pylist(), cand.column("item_id").to_pylist())]
    u = np.array(hash_uniforms_py(keys, 0, "candidates:"))
    anchors = cand.column("anchor").to_pylist()
    order = sorted(range(cand.num_rows), key=lambda k: (str(anchors[k]), u[k]))
    keep, seen = [], {}
    for k in order:
        a = anchors[k]
        if seen.get(a, 0) < MAX_CANDIDATES:
            seen[a] = seen.get(a, 0) + 1
            keep.append(k)
    return cand.take(pa.array(sorted(keep), pa.int64()))


def _tasks(anchors: pa.Table, members: pa.Table, cand: pa.Table, items: pa.Table, shown: list, seed: int) -> list:
    """One blind task per anchor: its attributes, its members shuffled (by a hash of the seed and
    the ids, never by cluster), the candidates."""
    attrs = {r["item_id"]: {c: r.get(c) for c in shown} for r in items.to_pylist()}
    by_anchor: dict = {}
    total: dict = {}
    shown_col = members.column("shown").to_pylist() if "shown" in members.column_names else [True] * members.num_rows
    for a, i, on in zip(members.column("anchor").to_pylist(), members.column("item_id").to_pylist(), shown_col):
        if a != i:
            total[a] = total.get(a, 0) + 1
            if on:
                by_anchor.setdefault(a, []).append(i)
    cands: dict = {}
    for a, i in zip(cand.column("anchor").to_pylist(), cand.column("item_id").to_pylist()):
        cands.setdefault(a, []).append(i)
    out = []
    for a in anchors.column("item_id").to_pylist():
        ms = by_anchor.get(a, [])
        u = hash_uniforms_py([f"{a}|{i}" for i in ms], seed, "shuffle:")
        ms = [i for _, i in sorted(zip(u, ms), key=lambda x: x[0])]
        task = {"anchor": a, "item": attrs.get(a, {}), "members": [{"item_id": i, **attrs.get(i, {})} for i in ms],
                "candidates": [{"item_id": i, **attrs.get(i, {})} for i in cands.get(a, [])]}
        if total.get(a, 0) > len(ms):  # a U(i) too large to tick: a random part of it, and the task says so
            task["members_total"] = total[a]
        out.append(task)
    return out


def _slice_weights(diff: Diff, slice_by: Sequence[str]) -> dict:
    """``{column: [[value, weight, weighted JD], ...]}``: each slice's exact weight and ``Σ w_i·JD(i)``
    over its items (the denominators of its ΔRecall and ΔPrecision, and of its IQ)."""
    out = {}
    if not slice_by:
        return out
    check_slice_columns(diff, [(c,) for c in slice_by], fields=())
    per = per_item_expr(diff).select("item_id", "weight", "jaccard_distance")
    for col in slice_by:
        j = per.join(diff.items.select("item_id", col), "item_id")
        g = diff.engine.to_arrow(j.group_by(col).aggregate(weight=j.weight.sum(),
                                                           wjd=(j.weight * j.jaccard_distance).sum()).order_by(col),
                                 step="slices")
        out[col] = [[r[col], float(r["weight"]), float(r["wjd"] or 0.0)] for r in g.to_pylist()]
    return out


@dataclass(frozen=True)
class EntitySample:
    """An entity sample directory, read (:meth:`read`) with its files verified against the metadata."""

    path: Path
    metadata: dict
    draws: pa.Table
    anchors: pa.Table
    members: pa.Table
    candidates: pa.Table
    items: pa.Table

    @classmethod
    def read(cls, path) -> "EntitySample":
        path = Path(path)
        if not is_entity_sample(path):
            raise InputError(f"'{path}' is not an entity sample directory (no metadata.json of an entity sample; "
                             "draw one with 'abcde entities').")
        try:
            meta = parse_json((path / "metadata.json").read_bytes())
        except ValueError as exc:
            raise InputError(f"The entity sample's metadata '{path / 'metadata.json'}' cannot be read: {exc}.") from None
        if meta.get("version") != VERSION:
            raise InputError(f"The entity sample in '{path}' has format version {meta.get('version')!r}; this abcde "
                             f"reads version {VERSION}.")
        if (path / EXTENDING / DONE).exists():
            raise InputError(f"An extension of the entity sample in '{path}' was interrupted while its files were "
                             f"being replaced: run 'abcde entities --extend {path} --budget N' again to finish it "
                             "(every answer is kept).")
        for f, digest in (meta.get("files") or {}).items():
            p = path / f
            if not p.is_file() or file_digest(p) != digest:
                raise InputError(f"The entity sample's file '{p}' is missing or changed since it was drawn "
                                 "(its sha256 differs from metadata.json): draw the sample again.")
        t = {k: pq.read_table(path / f"{k}.parquet") for k in ("draws", "anchors", "members", "candidates", "items")}
        return cls(path, meta, **t)

    def tasks(self) -> list:
        return [json.loads(line) for line in (self.path / "tasks.jsonl").read_text().splitlines() if line.strip()]


def sample_files(diff: Diff, prints: InputPrints, *, budget: int, seed: int, design: str, hide: Sequence[str],
                 candidates: str | None, slice_by: Sequence[str], columns: dict) -> tuple[dict, list, dict]:
    """An entity sample's content from ``diff`` (of the inputs fingerprinted in ``prints``): its tables
    ``{draws, anchors, members, candidates, items}``, its blind tasks and its metadata (without the
    files' digests, :func:`write_sample_files`). The same arguments give the same content."""
    attrs = list(diff.attributes)
    for col, what in [*((h, "--hide") for h in hide), *(((candidates, "--candidates"),) if candidates else ())]:
        if col not in attrs:
            raise InputError(f"{what} column {col!r} is not an item attribute. Attributes: "
                             f"{', '.join(map(repr, attrs)) or '(none: give --items)'}.")
    o = overall(diff)
    draws, facts = draw_entities(diff, budget=budget, seed=seed, design=design)
    ids = list(dict.fromkeys(draws.column("item_id").to_pylist()))
    anchors, members, cand = anchor_facts(diff, ids, candidates=candidates)
    members = subsample_members(members, seed)
    listed = members.filter(members.column("shown")).column("item_id").to_pylist()  # the members a task lists
    shown_ids = list(dict.fromkeys([*ids, *listed, *cand.column("item_id").to_pylist()]))
    if diff.items is not None:
        sel = ibis.memtable(pa.table({"item_id": pa.array(shown_ids, anchors.schema.field("item_id").type)}))
        it = diff.engine.to_arrow(diff.items.semi_join(sel, "item_id").order_by("item_id"), step="entity items")
    else:
        it = pa.table({"item_id": pa.array(sorted(shown_ids), anchors.schema.field("item_id").type)})
    shown = [c for c in it.column_names if c != "item_id" and c not in NEVER_SHOWN and c not in set(hide)]
    slices = _slice_weights(diff, slice_by)
    prints.check("drawing the entity sample")
    meta = {
        "format": FORMAT, "version": VERSION, "design": design, "seed": int(seed), "budget": int(budget),
        "draws": draws.num_rows, "anchors": anchors.num_rows, "census": facts["census"],
        "n_affected": facts["n_affected"], "affected_weight": facts["affected_weight"], "mass": facts["mass"],
        "min_jd": facts["min_jd"],
        "total_weight": float(o["total_weight"]), "jaccard_distance": float(o["jaccard_distance"]),
        "items": int(o.get("items", 0) or 0), "hidden": list(hide), "shown": shown, "candidates": candidates,
        "max_candidates": MAX_CANDIDATES, "slices": slices,
        "inputs": prints.prints, "input_paths": {r: os.path.abspath(s) for r, s in prints.sources.items()
                                                 if isinstance(s, (str, os.PathLike))},
        "columns": dict(columns),
        "item_id_type": str(anchors.schema.field("item_id").type),
    }
    tables = {"draws": draws, "anchors": anchors, "members": members, "candidates": cand, "items": it}
    return tables, _tasks(anchors, members, cand, it, shown, seed), meta


def files_key(files: dict) -> str:
    """A sample's identity from its files' digests (its ``sample_id``: the answer store's key and the
    pages' item references; an extension keeps the one its sample was first drawn with)."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:32]


def write_sample_files(where: Path, tables: dict, tasks: list, meta: dict) -> None:
    """Write an entity sample's files into the directory ``where``: the tables, the tasks, then the
    metadata with every file's sha256."""
    for name, table in tables.items():
        pq.write_table(table, where / f"{name}.parquet")
    with open(where / "tasks.jsonl", "w") as fh:
        for t in tasks:
            fh.write(json.dumps(t, default=str) + "\n")
    meta["files"] = {f: file_digest(where / f) for f in FILES}
    meta.setdefault("sample_id", files_key(meta["files"]))
    (where / "metadata.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")


def write_entity_sample(base, exp=None, out_dir=None, *, items=None, budget: int = 150, seed: int = 0,
                        design: str = "recall", hide: Sequence[str] = (), candidates: str | None = None,
                        slice_by: Sequence[str] = (), item_id: str = "item_id", cluster_id: str = "cluster_id",
                        weight: str | None = None, engine: Engine | str | None = None) -> EntitySample:
    """Draw an entity sample and write it into ``out_dir`` (which must not exist yet, or be empty):
    see the module. ``hide``: item attributes never shown in the tasks (e.g. a truth column);
    ``candidates``: a blocking column whose shared values give each anchor's candidates outside
    both clusters; ``slice_by``: columns whose slices' exact weights are stored for
    ``abcde quality --slice-by``."""
    if out_dir is None:
        raise InputError("An entity sample needs a directory to write (--out).")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"'{out}' exists and is not an empty directory: an entity sample is written into a new "
                         "directory (nothing in an existing one is replaced; its judgements would be at stake).")
    if design not in DESIGNS:
        raise InputError(f"Unknown entity design {design!r}: expected one of {', '.join(DESIGNS)}.")
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
    prints = InputPrints.of(given)
    diff = build_diff(given, engine=engine, prints=prints)
    tables, tasks, meta = sample_files(diff, prints, budget=budget, seed=seed, design=design, hide=hide,
                                       candidates=candidates, slice_by=slice_by,
                                       columns={"item_id": item_id, "cluster_id": cluster_id, "weight": weight})
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(parent, prefix=f".{out.name}.abcde-new-")
    try:
        write_sample_files(tmp, tables, tasks, meta)
        if out.exists():
            out.rmdir()  # empty (checked above); a race that filled it fails here, and nothing is replaced
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return EntitySample.read(out)


#: The public name: ``abcde.entities(base, exp, out_dir, ...)``.
entities = write_entity_sample

__all__ = ["DESIGNS", "EntitySample", "FORMAT", "anchor_facts", "draw_entities", "entities", "entity_population",
           "is_entity_sample", "write_entity_sample"]
