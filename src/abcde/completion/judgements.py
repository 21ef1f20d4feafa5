"""The answers of an entity sample: the judgement file, the oracle, and the weights of items added
from outside both clusters.

The answers are kept in ``DIR/entity_judgements.parquet``: one row per answer, ``anchor``,
``item_id``, ``answer`` (``same``, ``different``, ``unsure``; a row without ``item_id`` says
``searched`` or ``not searched``: whether the entity's items outside both clusters were looked
for), ``rater`` and ``source``. The file is written once and never replaced: the oracle writes it
when it is absent and, run again, checks that it would write the same answers. People's answers,
from the judging app, are kept in ``DIR/entity_judgements.sqlite`` (:mod:`abcde.completion.store`);
:func:`load_answers` reads both.
"""

from __future__ import annotations

import os
from pathlib import Path

import ibis
import pyarrow as pa
import pyarrow.parquet as pq

from abcde.core.diff import Diff, build_diff
from abcde.core.inputs import Inputs
from abcde.completion.sample import EntitySample
from abcde.completion.store import STORE_FILE, EntityStore, live_answers
from abcde.errors import InputError
from abcde.util.files import InputPrints, describe_fingerprint

ANSWERS_FILE = "entity_judgements.parquet"


def load_answers(s: EntitySample) -> tuple[list, str]:
    """The answers of the sample: the rows of its judgement file (the oracle's) and the live rows of
    its answer store (people's, :mod:`abcde.completion.store`), none when it has neither yet, and
    how to name where they were read."""
    p = s.path / ANSWERS_FILE
    rows, where = [], []
    if p.is_file():
        try:
            t = pq.read_table(p)
        except Exception as exc:  # noqa: BLE001 - any unreadable file: one line naming it
            raise InputError(f"The entity judgement file '{p}' cannot be read as Parquet ({exc}).") from None
        need = {"anchor", "item_id", "answer"}
        if not need <= set(t.column_names):
            raise InputError(f"The entity judgement file '{p}' lacks column(s) "
                             f"{', '.join(sorted(need - set(t.column_names)))} (it has {', '.join(t.column_names)}).")
        src = t.column("source").to_pylist() if "source" in t.column_names else ["oracle"] * t.num_rows
        rows += [{**r, "source": x or "oracle"} for r, x in zip(t.select(["anchor", "item_id", "answer"]).to_pylist(),
                                                                 src)]
        where.append(f"'{p}'")
    if EntityStore.exists(s):
        rows += [{"anchor": r["anchor"], "item_id": r["item_id"], "answer": r["answer"],
                  "source": r.get("source") or "person"} for r in live_answers(s)]
        where.append(f"'{s.path / STORE_FILE}'")
    return rows, " and ".join(where) or str(p)


def recorded_diff(s: EntitySample) -> Diff:
    """The diff of the inputs the sample was drawn from, read again from their recorded paths; an
    input that changed since (its fingerprint differs) is refused in one line."""
    m = s.metadata
    paths, cols, was = m.get("input_paths") or {}, m.get("columns") or {}, m.get("inputs") or {}
    for role in ("base", "exp"):
        if role not in paths:
            raise InputError(f"The entity sample in '{s.path}' did not record its {role} file (drawn from a table in "
                             "memory): the items outside both clusters cannot be looked up.")
    given = Inputs(paths["base"], paths["exp"], items=paths.get("items"), item_id=cols.get("item_id", "item_id"),
                   cluster_id=cols.get("cluster_id", "cluster_id"), weight=cols.get("weight"))
    prints = InputPrints.of(given)
    for role, fp in was.items():
        if prints.prints.get(role) != fp:
            raise InputError(f"The {role} file '{paths.get(role)}' changed since the entity sample in '{s.path}' was "
                             f"drawn (recorded {describe_fingerprint(fp)}, now "
                             f"{describe_fingerprint(prints.prints.get(role))}): its answers would be read against "
                             "other items.")
    return build_diff(given, prints=prints)


def outside_weights(s: EntitySample, answers: dict) -> dict:
    """``{(anchor, item): weight}`` of the items answered the anchor's entity that are not members of
    its ``U(i)``: the candidates' from the sample, the others' from the recorded inputs. An item in
    neither is refused in one line."""
    members = set(zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()))
    wanted = {(a, i) for a, v in answers.items() for i in v.same if (a, i) not in members}
    if not wanted:
        return {}
    known = dict(zip(s.candidates.column("item_id").to_pylist(), s.candidates.column("weight").to_pylist()))
    if "weight" in s.items.column_names:
        known.update(zip(s.items.column("item_id").to_pylist(), s.items.column("weight").to_pylist()))
    rest = sorted({i for _, i in wanted if i not in known}, key=repr)
    if rest:
        diff = recorded_diff(s)
        typ = s.anchors.schema.field("item_id").type
        try:
            sel = ibis.memtable(pa.table({"item_id": pa.array(rest, typ)}))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise InputError(f"An entity answer names item {rest[0]!r}, which is not an item id of type {typ} (the "
                             "sample's item ids).") from None
        got = diff.engine.to_arrow(diff.joined.semi_join(sel, "item_id").select("item_id", "weight"),
                                   step="weights of added items")
        known.update(zip(got.column("item_id").to_pylist(), got.column("weight").to_pylist()))
        missing = [i for i in rest if i not in known]
        if missing:
            raise InputError(f"An entity answer adds item {missing[0]!r} ({len(missing):,} such), which is not an item "
                             "of both clusterings: an entity's items are items of the inputs.")
    return {(a, i): float(known[i]) for a, i in wanted}


def oracle_entities(sample_dir, column: str) -> Path:
    """Complete every anchor's entity from a ground-truth column, the search included: each member
    and candidate ``same`` when its value equals the anchor's (``unsure`` when either is null), every
    other item of the anchor's value added, and the search marked done. Written to
    ``DIR/entity_judgements.parquet``; run again, the same answers are kept and other ones refused."""
    s = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
    diff = recorded_diff(s)
    if diff.items is None or column not in diff.attributes:
        raise InputError(f"Oracle column {column!r} is not an item attribute of the inputs. Attributes: "
                         f"{', '.join(map(repr, diff.attributes)) or '(none)'}.")
    j = diff.joined.join(diff.items.select("item_id", column), "item_id")
    truth = diff.engine.to_arrow(j.select("item_id", v=j[column]), step="oracle truth")
    value = dict(zip(truth.column("item_id").to_pylist(), truth.column("v").to_pylist()))
    by_value: dict = {}
    for i, v in value.items():
        if v is not None:
            by_value.setdefault(v, []).append(i)
    members: dict = {}
    for a, i in zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()):
        members.setdefault(a, []).append(i)
    for a, i in zip(s.candidates.column("anchor").to_pylist(), s.candidates.column("item_id").to_pylist()):
        members.setdefault(a, []).append(i)
    rows = []
    for a in s.anchors.column("item_id").to_pylist():
        va = value.get(a)
        listed = set(members.get(a, []))
        for i in members.get(a, []):
            if i == a:
                continue
            vi = value.get(i)
            ans = "unsure" if va is None or vi is None else ("same" if vi == va else "different")
            rows.append({"anchor": a, "item_id": i, "answer": ans})
        if va is not None:
            for i in by_value.get(va, []):
                if i != a and i not in listed:
                    rows.append({"anchor": a, "item_id": i, "answer": "same"})
        rows.append({"anchor": a, "item_id": None, "answer": "searched" if va is not None else "not searched"})
    typ = s.anchors.schema.field("item_id").type
    table = pa.table({"anchor": pa.array([r["anchor"] for r in rows], typ),
                      "item_id": pa.array([r["item_id"] for r in rows], typ),
                      "answer": pa.array([r["answer"] for r in rows], pa.string()),
                      "rater": pa.array([f"oracle:{column}"] * len(rows), pa.string()),
                      "source": pa.array(["oracle"] * len(rows), pa.string())})
    path = s.path / ANSWERS_FILE
    if path.exists():
        old = pq.read_table(path)
        if old.equals(table):
            return path
        raise InputError(f"'{path}' already holds other entity answers; the oracle never replaces answers (move the "
                         "file away to judge again).")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.link(tmp, path)  # fails if another run wrote it meanwhile: nothing is replaced
    os.unlink(tmp)
    return path


__all__ = ["ANSWERS_FILE", "load_answers", "oracle_entities", "outside_weights", "recorded_diff"]
