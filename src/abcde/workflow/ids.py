"""``abcde ids``: two id-assignment schemes evaluated as one clustering diff (:func:`evaluate_ids`).

The tagged Base and Exp clusterings (:func:`abcde.ids.tag_clusterings`) and their items table are
written to ``DIR/inputs/<digest>/`` (with the exact id table, :func:`abcde.ids.id_table`), then the
whole job (:func:`abcde.workflow.evaluate.evaluate`) runs on them into ``DIR``: an evaluation
directory like any other (``DIR/quality`` to judge, ``abcde report DIR``), whose record names the
tagged files. ``<digest>`` is the files' content hash: an earlier run's inputs, which its record
names, are never overwritten; the run that succeeds keeps its own and no other. A run that fails
leaves ``DIR`` as it was.

Every engine runs it, and DuckDB and Spark give the same id table, impact and pair sample. Each
tagged input is kept as one Parquet file, whatever the engine (the record fingerprints files, not
directories of part files): Spark writes its part files, which are copied into one file batch by
batch (:func:`write_parquet_file`), so the driver never holds a whole table.

The report has a section for the id table (:func:`abcde.report.build.with_id_table`): ``DIR/report.html``
and ``report.md`` are written again with it once the evaluation is in place, and ``abcde report DIR``
reads the kept id table for it (:func:`recorded_id_table`), as the pair sample asks about ids.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.engine import Engine
from abcde.engine.base import resolve
from abcde.errors import InputError
from abcde.ids import IdTable, id_table, tag_clusterings
from abcde.ids.tagging import SIDE_COLUMN, SOURCE_COLUMN
from abcde.report.build import with_id_table
from abcde.util.files import check_input_path, file_digest, make_temp_dir
from abcde.workflow.evaluate import EvaluateResult, check_out_dir, evaluate
from abcde.workflow.record import OUTPUTS, RECORD

#: Where ``DIR`` keeps the tagged inputs, and their files.
INPUTS = "inputs"
FILES = ("base.parquet", "exp.parquet", "items.parquet", "id_table.parquet")


@dataclass(frozen=True)
class IdsResult:
    """What :func:`evaluate_ids` computed and wrote: the evaluation of the tagged clusterings
    (``evaluation``), the exact id table (``ids``) and the tagged inputs' directory (``inputs``)."""

    evaluation: EvaluateResult
    ids: IdTable
    inputs: Path
    hist_scale: float = 1.0
    written: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"ids": self.ids.to_dict(), "hist_scale": self.hist_scale, "inputs": str(self.inputs),
                "evaluation": self.evaluation.to_dict(), "written": [str(p) for p in self.written]}


def evaluate_ids(history, current, base_ids, exp_ids, out_dir: str | os.PathLike, *, current_exp=None, items=None,
                 hist_scale: float = 1.0, item_id: str = "item_id", cluster_id: str = "cluster_id",
                 id_column: str = "id", weight: str | None = None, hide: Sequence[str] = (),
                 engine: Engine | str | None = None, **options) -> IdsResult:
    """Evaluate the id-assignment scheme ``exp_ids`` against ``base_ids`` (see the module, and
    :func:`abcde.ids.tag_clusterings` for the inputs); ``options`` are :func:`abcde.workflow.evaluate.evaluate`'s
    (``budget``, ``seed``, ``slice_by``, ``title``, ``force``, …). The items' own ids
    (:data:`~abcde.ids.tagging.SOURCE_COLUMN`) are hidden from judges with ``hide``; which copy an item
    is (:data:`~abcde.ids.tagging.SIDE_COLUMN`: published earlier, or current) is shown, never which scheme."""
    out = Path(out_dir)
    check_out_dir(out, "ids", kept=frozenset({INPUTS}))
    eng = resolve(engine)
    tagged = tag_clusterings(history, current, base_ids, exp_ids, current_exp=current_exp, items=items,
                             hist_scale=hist_scale, item_id=item_id, cluster_id=cluster_id, id_column=id_column,
                             weight=weight, engine=eng)
    # Each tagged table is read once, by its file's write: the id table reads the untagged inputs.
    table = id_table(tagged)
    made = [p for p in (out, out / INPUTS) if not p.exists()]
    for p in made:
        p.mkdir()
    staging = make_temp_dir(out / INPUTS, prefix=".abcde-new-")
    final = None
    try:
        for name in ("base", "exp", "items"):
            write_parquet_file(eng, getattr(tagged, name).order_by("item_id"), staging / f"{name}.parquet",
                               step=f"tagged {name}")
        table.write(staging / "id_table.parquet")
        h = hashlib.sha256()
        for f in FILES:
            h.update(file_digest(staging / f).encode())
        final = out / INPUTS / h.hexdigest()[:16]
        fresh = not final.exists()
        if fresh:
            os.rename(staging, final)
        paths = {k: final / f"{k}.parquet" for k in ("base", "exp", "items")}
        hidden = tuple(hide) + ((SOURCE_COLUMN,) if SOURCE_COLUMN not in hide else ())
        try:
            res = evaluate(paths["base"], paths["exp"], out, items=paths["items"], hide=hidden, engine=eng,
                           kept=(f"{INPUTS}/{final.name}",), question="ids", **options)
        except BaseException:
            if fresh:  # not this run's to keep: an earlier run's inputs stay as they were
                shutil.rmtree(final, ignore_errors=True)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for p in reversed(made):  # what this run made, if it stayed empty
            try:
                p.rmdir()
            except OSError:
                break
    # The report with the id table's section, both files replaced at once: evaluate wrote them without
    # it (it knows nothing of ids); 'abcde report DIR' writes the same section from the kept id table.
    rep = with_id_table(res.report, table)
    rep.write(out / OUTPUTS["report"], markdown=out / OUTPUTS["markdown"])
    res = replace(res, report=rep)
    return IdsResult(evaluation=res, ids=table, inputs=final, hist_scale=float(hist_scale),
                     written=[final / f for f in FILES] + list(res.written))


def write_parquet_file(eng: Engine, expr, path: Path, *, step: str) -> None:
    """Write ``expr`` as one Parquet file at ``path``, on any engine, in the row order of ``expr``.

    The record of ``DIR`` names and fingerprints each tagged input as one file (a directory of part
    files has no fingerprint, so ``abcde report DIR`` could not check it, nor the id table written with
    it). An engine that writes a directory of part files (Spark) writes them beside ``path`` first; they
    are then copied into one file here, one batch at a time (the driver holds one batch, whatever the
    size of the table), in the order of their names, which is the order of the rows (a sorted table's
    parts hold consecutive ranges), each batch cast to the expression's schema: the file holds the
    same rows, in the same order and of the same types, as DuckDB writes (Spark's INT96 timestamps read
    as microseconds)."""
    if not eng.writes_part_directories:
        eng.write_parquet(expr, path, step=step)
        return
    parts = path.with_name(f".{path.name}.parts")
    try:
        eng.write_parquet(expr, parts, step=step)
        if not parts.is_dir():
            raise InputError(f"The {eng.name} engine wrote the tagged inputs of 'abcde ids' where this machine cannot "
                             f"read them ('{parts}' is not here): give --out a directory on a file system that the "
                             "engine and this machine share.")
        schema = expr.schema().to_pyarrow()
        files = sorted(p for p in parts.iterdir() if p.is_file() and not p.name.startswith(("_", "."))
                       and p.name.endswith(".parquet"))
        with pq.ParquetWriter(path, schema) as out:
            for f in files:
                for batch in pq.ParquetFile(f, coerce_int96_timestamp_unit="us").iter_batches(batch_size=1 << 17):
                    out.write_table(pa.Table.from_batches([batch]).select(schema.names).cast(schema))
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def recorded_id_table(evaldir: str | os.PathLike, record: dict) -> IdTable:
    """The id table of an evaluation :func:`evaluate_ids` wrote, for ``abcde report DIR``
    (:func:`abcde.workflow.report.report_from_evaluation`, once the recorded inputs are checked against
    their fingerprints): ``id_table.parquet`` beside the tagged inputs the record ``evaldir/evaluate.json``
    names (``inputs/<digest>/``).

    The record fingerprints the three tagged files, not the id table; but ``<digest>`` is the hash of
    all four files' digests (in :data:`FILES`' order), so the id table is the one written with them
    only if its own digest, after the record's three, gives the directory's name. The file is read
    once, hashed and parsed from the same bytes: nothing read is other than what was checked.

    Raises
    ------
    InputError
        In one line: the record names the tagged inputs other than as ``abcde ids`` keeps them (one
        directory ``inputs/<digest>/`` holding ``base.parquet``, ``exp.parquet`` and ``items.parquet``),
        the id table is missing or not a regular file, it is not the one written with them, or it is
        not an id table.
    """
    f = Path(evaldir) / RECORD
    recorded = record["inputs"]
    paths = {role: (recorded.get(role) or {}).get("path") for role in ("base", "exp", "items")}
    where = Path(paths["base"] or "").parent
    if (not all(paths.values()) or any(Path(p) != where / f"{role}.parquet" for role, p in paths.items())
            or where.parent.name != INPUTS or not re.fullmatch(r"[0-9a-f]{16}", where.name)):
        raise InputError(f"'{f}' is the record of an 'abcde ids' evaluation (its pair sample asks about ids), but it "
                         f"does not name the tagged inputs as 'abcde ids' keeps them ({INPUTS}/<digest>/base.parquet, "
                         "exp.parquet and items.parquet), so their id table cannot be found. Run 'abcde ids' again.")
    p = where / FILES[-1]
    again = "Run 'abcde ids' again to write it."
    st = check_input_path(p, where=f"The id table '{p}'", expected="'abcde ids' writes it as a file; run it again")
    if st is None:
        raise InputError(f"The id table '{p}' of the evaluation in '{evaldir}' does not exist any more (it is kept "
                         "beside the tagged inputs its record names). Put it back, or run 'abcde ids' again.")
    data = p.read_bytes()
    h = hashlib.sha256()
    for role in ("base", "exp", "items"):
        h.update(str((recorded[role].get("fingerprint") or {}).get("sha256")).encode())
    h.update(hashlib.sha256(data).hexdigest().encode())
    if h.hexdigest()[:16] != where.name:
        raise InputError(f"The id table '{p}' is not the one 'abcde ids' wrote with the tagged inputs '{f}' records "
                         f"(their directory's name, {where.name}, is the hash of all four files): it changed since. "
                         f"{again}")
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"Cannot read the id table '{p}': {first}. {again}") from exc
    return IdTable.of(table)


__all__ = ["FILES", "INPUTS", "IdsResult", "SIDE_COLUMN", "evaluate_ids", "recorded_id_table", "write_parquet_file"]
