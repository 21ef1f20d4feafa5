"""The completed entities as a reusable truth sample (``abcde judge export DIR --entities``).

Each anchor whose entity is complete (every member of ``U(i)`` answered same or different, the search
outside both clusters done) gives one entity: the anchor, the members answered same and the items
added. The file lists every item of each such entity (``item_id``, ``cluster_id``: the entity's
label, and ``inclusion``: the entity's inclusion probability), the format ``abcde pointwise --truth
FILE --truth-sample inclusion`` reads.

An entity is in the sample when one of its affected items is drawn: with ``n`` draws with
replacement of per-draw probabilities ``p_j``, ``π_k = 1 − (1 − Σ_{j∈k∩A} p_j)^n`` (1 for a census).
It is a sample of the entities **the diff touches** (those with an affected item), not of every
entity: estimates from it are of that population.
"""

from __future__ import annotations

from pathlib import Path

import ibis
import pyarrow as pa

from abcde.completion.estimate import read_answers
from abcde.completion.judgements import OWNER_SOURCE, load_answers, recorded_diff
from abcde.completion.sample import EntitySample, entity_population
from abcde.errors import InputError
from abcde.util.files import write_table_file


def completed_entities(s: EntitySample, rows) -> tuple[dict, dict]:
    """``{anchor: frozenset(items)}`` of the complete entities and counts of the anchors left out
    (``{"incomplete": n, "unjudged": n}``); two completed entities that overlap without being equal
    are refused in one line (a truth is a partition)."""
    answers, _ = read_answers(rows, s)
    members: dict = {}
    for a, i in zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()):
        members.setdefault(a, set()).add(i)
    out, incomplete = {}, 0
    for a in s.anchors.column("item_id").to_pylist():
        v = answers.get(a)
        if v is None:
            continue
        told = v.same | v.different
        if v.searched is not True or v.unsure or not (members.get(a, set()) - {a}) <= told:
            incomplete += 1
            continue
        out[a] = frozenset({a} | {i for i in v.same})
    owner: dict = {}
    for a, ent in out.items():
        for i in ent:
            b = owner.setdefault(i, a)
            if b != a and out[b] != ent:
                raise InputError(f"The completed entities of items {b!r} and {a!r} share item {i!r} but differ: a "
                                 "truth lists each entity once, whole. Settle their answers first.")
    judged = sum(1 for a in s.anchors.column("item_id").to_pylist() if a in answers)
    return out, {"incomplete": incomplete, "unjudged": s.anchors.num_rows - judged}


def export_entities(sample_dir, out, *, source: str | None = None, force: bool = False) -> dict:
    """Write the completed entities with their inclusion probabilities to ``out`` (CSV or Parquet, see
    the module); returns what was written and left out."""
    s = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
    path = Path(out)
    if path.exists() and not force:
        raise InputError(f"'{path}' exists; pass --force to replace it (never done otherwise).")
    if path.resolve().parent == s.path.resolve():
        raise InputError(f"'{path}' is inside the entity sample's directory: write the truth file elsewhere.")
    rows, _ = load_answers(s)
    if source is not None:
        # the owner's settlements count with any source: only where that source's answers differ
        rows = [r for r in rows if (r.get("source") or "person") in (source, OWNER_SOURCE)]
    entities, left = completed_entities(s, rows)
    unique = list(dict.fromkeys(entities.values()))
    m = s.metadata
    items = sorted({i for ent in unique for i in ent}, key=repr)
    if not items:
        raise InputError(f"No complete entity in '{s.path}' yet: an item's entity is complete when every member "
                         "is answered same or different and the search outside both clusters is done.")
    if m["census"]:
        p_item = {}
    else:  # every entity item's per-draw probability (0 when it is not affected)
        diff = recorded_diff(s)
        pop = entity_population(diff, m["design"])
        sel = ibis.memtable(pa.table({"item_id": pa.array(items, s.anchors.schema.field("item_id").type)}))
        got = diff.engine.to_arrow(pop.semi_join(sel, "item_id").select("item_id", "p"), step="entity inclusion")
        mass = float(m["mass"])
        p_item = {i: float(p) / mass for i, p in zip(got.column("item_id").to_pylist(), got.column("p").to_pylist())}
    n = int(m["draws"])
    ids, labels, incl = [], [], []
    for k, ent in enumerate(unique):
        pi = 1.0 if m["census"] else 1.0 - (1.0 - min(1.0, sum(p_item.get(i, 0.0) for i in ent))) ** n
        label = f"entity-{k + 1}"
        for i in sorted(ent, key=repr):
            ids.append(i)
            labels.append(label)
            incl.append(pi)
    table = pa.table({"item_id": pa.array(ids, s.anchors.schema.field("item_id").type), "cluster_id": labels,
                      "inclusion": pa.array(incl, pa.float64())})
    write_table_file(table, path, spreadsheet=False)
    return {"written": str(path), "entities": len(unique), "items": len(ids), **left,
            "population": "the entities the diff touches (with an affected item)", "design": "inclusion"}


__all__ = ["completed_entities", "export_entities"]
