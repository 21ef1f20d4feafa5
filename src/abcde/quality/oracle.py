"""The oracle judge: judgements from a ground-truth attribute of the items (simulated
judgements, not people's: label them so wherever they are shown).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from abcde.errors import InputError
from abcde.samples.people_tasks import people_pairs
from abcde.samples.sample_dir import PairSampleDir, task_table
from abcde.samples.store import JudgementStore
from abcde.util.files import write_table_file


def oracle_judge(sample_dir: str | os.PathLike, column: str, *, out: str | os.PathLike | None = None) -> Path:
    """Judge every people's task (every pair, or the subset ``pairs --human-budget`` drew for people:
    the oracle stands for people) from a ground-truth attribute: equal values ⇒ ``same``,
    different ⇒ ``different``, a null on either side ⇒ ``unsure``.

    The judgements go into the sample's judgement store (``judgements.sqlite``) beside
    people's and models', with source ``oracle`` and rater ``oracle:<column>``; they never
    replace anyone's judgements (``abcde quality --source`` chooses). Judging again adds
    nothing (the oracle's earlier answers are kept; a different answer is refused). With
    ``out`` they are written to that judgement file instead, which must not exist yet.
    Returns the store's or the file's path.
    """
    s = PairSampleDir.read(sample_dir)
    if column not in s.items.column_names:
        raise InputError(
            f"Oracle column '{column}' not found among the items' attributes. "
            f"Columns: {', '.join(repr(c) for c in s.items.column_names if c != 'item_id')}."
        )
    value = dict(zip(s.items.column("item_id").to_pylist(), s.items.column(column).to_pylist()))
    # The oracle stands for people: it judges the people's tasks (all pairs, or those of --human-budget).
    tasks = task_table(s.draws, s.items.select(["item_id"]), people_pairs(s.draws, s.metadata))
    rows = []
    for r in tasks.to_pylist():
        va, vb = value.get(r["item_a"]), value.get(r["item_b"])
        j = "unsure" if va is None or vb is None else ("same" if va == vb else "different")
        rows.append({"pair_id": r["pair_id"], "item_a": r["item_a"], "item_b": r["item_b"], "judgement": j,
                     "rater": f"oracle:{column}", "source": "oracle", "timestamp": None})
    if out is None:
        store = JudgementStore(s.path)
        store.record_many([(r["pair_id"], r["judgement"]) for r in rows], rater=f"oracle:{column}",
                          source="oracle")
        return store.path
    path = Path(out)
    if path.exists():
        raise InputError(f"The judgement file '{path}' exists; the oracle never overwrites judgements. "
                         "Give a new path, or leave out --out to add the oracle's judgements to the store.")
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("pair_id", pa.string()), ("item_a", tasks.schema.field("item_a").type),
        ("item_b", tasks.schema.field("item_b").type), ("judgement", pa.string()), ("rater", pa.string()),
        ("source", pa.string()), ("timestamp", pa.string())])) if rows else pa.table(
            {"pair_id": pa.array([], pa.string()), "judgement": pa.array([], pa.string())})
    return write_table_file(table, path)


