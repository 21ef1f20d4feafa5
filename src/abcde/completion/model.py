"""A model completes entities: the pair judge (``judge(item_a, item_b) -> "same" | "different" |
"unsure"``, as ``abcde judge model`` takes it) asked about each anchor and each member of its
``U(i)`` and each candidate outside both clusters.

Its answers go to ``DIR/entity_model_judgements.parquet`` (rater ``model:NAME``, source ``model``),
apart from people's and the oracle's: ``abcde quality DIR --source model`` reads them. A model
searches only the candidates (``abcde entities --candidates``): an anchor's search counts as done
when the sample lists candidates, else as skipped (its numbers are then ranges).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.completion.judgements import write_answer_file
from abcde.completion.sample import EntitySample
from abcde.errors import InputError

MODEL_FILE = "entity_model_judgements.parquet"
ANSWERS = ("same", "different", "unsure")


@dataclass(frozen=True)
class EntityModelResult:
    """What a model run on an entity sample did: the file written, the answers by kind, and the
    questions left unanswered (the judge returned something else)."""

    path: Path
    rater: str
    answers: dict
    unanswered: int

    def to_dict(self) -> dict:
        return {"written": str(self.path), "rater": self.rater, "source": "model", "answers": self.answers,
                "unanswered": self.unanswered}


def model_entities(sample_dir, judge, *, name: str | None = None, hide=()) -> EntityModelResult:
    """Ask ``judge`` about every member and candidate of every anchor (see the module). The judge sees
    the items' shown attributes (never weights, the sample's hidden columns or ``hide``). Answers
    other than same/different/unsure (case and space aside) leave the question unanswered; an
    exception stops the run and writes nothing. Each anchor is asked about once: a second run asks
    only about anchors new since (a sample extended by ``abcde entities --extend``), and keeps every
    earlier answer as it is."""
    s = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
    hidden = set(s.metadata.get("hidden") or ()) | set(hide) | {"weight"}
    unknown = [c for c in hide if c not in s.items.column_names]
    if unknown:
        raise InputError(f"--hide column {unknown[0]!r} is not an item attribute. Attributes: "
                         f"{', '.join(repr(c) for c in s.items.column_names if c != 'item_id')}.")
    shown = [c for c in s.items.column_names if c != "item_id" and c not in hidden]
    attrs = {r["item_id"]: {c: r.get(c) for c in shown} for r in s.items.to_pylist()}
    name = name or getattr(judge, "name", None) or getattr(judge, "__name__", None) or "callable"
    rater = f"model:{name}"
    asked: dict = {}
    shown = s.members.column("shown").to_pylist() if "shown" in s.members.column_names else [True] * s.members.num_rows
    for a, i, on in zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist(), shown):
        if a != i and on:  # the members a task lists (a subsampled U(i): its members shown)
            asked.setdefault(a, []).append(i)
    for a, i in zip(s.candidates.column("anchor").to_pylist(), s.candidates.column("item_id").to_pylist()):
        asked.setdefault(a, []).append(i)
    searched = "searched" if s.metadata.get("candidates") else "not searched"
    path = s.path / MODEL_FILE
    old = pq.read_table(path) if path.exists() else None
    # A sample extended since the model's run (abcde entities --extend): its earlier answers are kept as
    # they are, and it is asked about the new anchors only.
    done = set(old.column("anchor").to_pylist()) if old is not None else set()
    if old is not None and "rater" in old.column_names and set(old.column("rater").to_pylist()) - {rater}:
        raise InputError(f"'{path}' already holds other model answers (of "
                         f"{', '.join(sorted(set(old.column('rater').to_pylist()) - {rater}))}); a model run never "
                         "replaces answers (move the file away to judge again).")
    rows, unanswered = [], 0
    for a in s.anchors.column("item_id").to_pylist():
        if a in done:
            continue
        for i in asked.get(a, []):
            got = judge(dict(attrs.get(a, {})), dict(attrs.get(i, {})))
            ans = got.strip().lower() if isinstance(got, str) else None
            if ans not in ANSWERS:
                unanswered += 1
                continue
            rows.append((a, i, ans))
        rows.append((a, None, searched))
    typ = s.anchors.schema.field("item_id").type
    table = pa.table({"anchor": pa.array([r[0] for r in rows], typ), "item_id": pa.array([r[1] for r in rows], typ),
                      "answer": pa.array([r[2] for r in rows], pa.string()),
                      "rater": pa.array([rater] * len(rows), pa.string()),
                      "source": pa.array(["model"] * len(rows), pa.string())})
    if old is not None and old.schema.names != table.schema.names:
        raise InputError(f"'{path}' is not a model answer file abcde wrote (columns {', '.join(old.schema.names)}); "
                         "move it away to judge again.")
    if table.num_rows:
        write_answer_file(path, pa.concat_tables([old, table.cast(old.schema)]) if old is not None else table,
                          replacing=old is not None)
    counts = {k: sum(1 for r in rows if r[2] == k) for k in (*ANSWERS, "searched", "not searched")}
    return EntityModelResult(path, rater, counts, unanswered)


__all__ = ["EntityModelResult", "MODEL_FILE", "model_entities"]
