"""The record of an :func:`~abcde.workflow.evaluate.evaluate` run, ``DIR/evaluate.json``: its format,
its writer and its reader.

:func:`make_record` says how the run was made (the inputs as given, absolute and fingerprinted, the
options, the engine, the abcde version, and where each output is: :data:`OUTPUTS`, the directory's
own names); :func:`write_record` writes it last, once everything else is in place;
:func:`read_evaluation` reads it back for ``abcde report DIR``
(:func:`abcde.workflow.report.report_from_evaluation`), checking every field the report reads and
refusing a record that names any place other than the directory's own, or a link out of it.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from importlib import metadata as _metadata
from pathlib import Path

from abcde.core.inputs import Inputs
from abcde.engine import Engine
from abcde.engine.base import MAX_THREADS
from abcde.errors import InputError
from abcde.util.files import InputPrints, check_input_path, full_path, parse_json, write_text

#: The record of a run in its directory: how it was run and where each output is.
RECORD = "evaluate.json"
RECORD_FORMAT = "abcde-evaluation"
RECORD_VERSION = 1
#: Each output's place in the directory (as the record's ``outputs`` gives it).
OUTPUTS = {"impact": "impact", "exploration_sample": "explore/sample.parquet", "pair_sample": "quality",
           "report": "report.html", "markdown": "report.md"}


def write_record(directory: Path, record: dict) -> Path:
    """Write ``record`` (:func:`make_record`) as ``directory/evaluate.json``, atomically; its path."""
    return write_text(directory / RECORD, json.dumps(record, indent=2) + "\n")


def read_evaluation(evaldir: str | os.PathLike) -> dict:
    """The record ``evaldir/evaluate.json`` of an :func:`~abcde.workflow.evaluate.evaluate` run, checked.

    Its layout (the ``outputs`` are the fixed names in ``evaldir`` :data:`OUTPUTS`, and a record
    naming any other place is refused; an input given as a table has ``given`` its type name and
    ``path`` null)::

        {"format": "abcde-evaluation", "version": 1, "complete": true, "abcde_version": "0.1.0",
         "created": "2025-01-31T12:00:00Z",
         "inputs": {"base": {"given": "b.parquet", "path": "/abs/b.parquet", "fingerprint": {...}},
                    "exp": {...}, "items": {...} or null, "truth": {...} or null},
         "columns": {"item_id": ..., "cluster_id": ..., "base_cluster_id": ..., "exp_cluster_id": ...,
                     "weight": ..., "truth_cluster_id": the truth's entity column or null},
         "options": {"slice_by": [...], "explore_by": [...], "top": 10, "sample_size": 1000,
                     "budget": 300, "seed": 0, "estimator": "stratified", "allocation": "proportional",
                     "hide": [...], "only_affected": false, "title": "ABCDE report",
                     "quality_slice_by": [...], "truth_sample": "uniform" or a column or null,
                     "population_entities": 2000 or null},
         "engine": {"name": "duckdb", "database": "/abs/db.duckdb" or null, "memory_limit": ...,
                    "threads": ..., "master": ..., "remote": ...},
         "outputs": {"impact": "impact", "exploration_sample": "explore/sample.parquet",
                     "pair_sample": "quality", "report": "report.html", "markdown": "report.md"}}

    Raises
    ------
    InputError
        ``evaldir`` is not a directory, holds no record (not an ``abcde evaluate`` output), the
        record is unreadable or of another format, its run did not finish, it is a link out of
        ``evaldir``, or it names an output other than the directory's own (``outputs.*``).
    """
    d = Path(evaldir)
    if not d.is_dir():
        what = "is a file, not a directory" if d.exists() else "does not exist"
        raise InputError(f"'{d}' {what}; give the output directory of 'abcde evaluate' (its --out).")
    f = d / RECORD
    refuse_links_out(d, [f])
    check_input_path(f, where=f"'{f}'", expected="'abcde evaluate' writes its record as a file; run it again")
    if not f.is_file():
        older = " (it was written by an abcde that kept no record: run 'abcde evaluate' again)" \
            if (d / OUTPUTS["impact"]).is_dir() and (d / OUTPUTS["pair_sample"]).is_dir() else ""
        raise InputError(f"'{d}' is not an 'abcde evaluate' output directory: it holds no {RECORD}{older}.")
    try:
        record = parse_json(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a syntax error, nesting too deep
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"Cannot read '{f}': {first}. Run 'abcde evaluate' again to write it.") from exc
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise InputError(f"'{f}' is not the record of an 'abcde evaluate' run (no format {RECORD_FORMAT!r}).")
    if record.get("version") != RECORD_VERSION:
        raise InputError(f"'{f}' is of version {_shown(record.get('version'))}; this abcde reads version "
                         f"{RECORD_VERSION}. Run 'abcde evaluate' again with this version.")
    if record.get("complete") is not True:
        raise InputError(f"The 'abcde evaluate' run that wrote '{d}' did not finish, so its outputs may be "
                         "partly replaced. Run it again.")
    bad = [name for name, ok in _record_checks(record) if not ok]
    if bad:
        raise InputError(f"'{f}' lacks or garbles {', '.join(bad[:5])}; it was not written whole by "
                         "'abcde evaluate'. Run it again.")
    for key, name in OUTPUTS.items():
        # Each output is in the directory under its own name: a record naming another place (an
        # absolute path, '../x', another sample) is not one evaluate wrote, and nothing is read
        # from or written to it (issue 39: a shared directory's record is not to be trusted).
        v = record["outputs"][key]
        if v != name:
            where = " (outside DIR)" if _leads_out(d, d / v) else ""
            raise InputError(f"'{f}': outputs.{key} is {v!r}{where}, not {name!r}: 'abcde report DIR' reads and "
                             "writes only what 'abcde evaluate' put in DIR, under its own names. Run 'abcde "
                             "evaluate' again to write a new record.")
    return record


def _shown(v, limit: int = 40) -> str:
    """A record's value as shown in a message, cut short (a 400-digit number stays one short line)."""
    text = repr(v) if not isinstance(v, int) or abs(v) < 10 ** 30 else f"a {len(str(abs(v)))}-digit number"
    return text if len(text) <= limit else text[:limit] + "…"


def refuse_links_out(d: Path, paths) -> None:
    """Refuse (:class:`InputError`) a path in the evaluation directory ``d`` that leads out of it
    through a link (anywhere along it): ``evaluate`` writes no link, and ``abcde report DIR`` reads
    only what ``evaluate`` put in DIR (a shared directory's ``DIR/quality`` linked to another sample
    would be read as the evaluation's)."""
    for p in paths:
        real = _leads_out(d, p)
        if real is not None:
            raise InputError(f"{str(p)!r} is a link to {real!r}, outside '{d}': 'abcde report DIR' reads only what "
                             "'abcde evaluate' put in DIR, never through a link out of it. Put the file itself "
                             "there, or run 'abcde evaluate' again.")


def _leads_out(d: Path, p: Path) -> str | None:
    """Where ``p`` really is (every link resolved) when that is outside ``d``'s real place, else None."""
    root = os.path.realpath(d)
    try:
        real = os.path.realpath(p)
    except ValueError:  # a NUL in a record's path: no place at all, so not one in ``d``
        return os.fspath(p)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return real


def _record_checks(record: dict):
    """``(field, whether it is as :func:`~abcde.workflow.evaluate.evaluate` writes it)`` for each field the
    report reads."""
    def get(path: str):
        v = record
        for k in path.split("."):
            if not isinstance(v, dict) or k not in v:
                return _MISSING
            v = v[k]
        return v

    def text(v, *, null=False) -> bool:
        return isinstance(v, str) or (null and v is None)

    def texts(v) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    def count(v, lo: int, hi: int) -> bool:  # an integer abcde can hand on (a 400-digit one overflows)
        return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi

    def positive(v) -> bool:  # a finite number > 0 (a 400-digit integer is no float)
        try:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        except OverflowError:
            return False

    def source(v, *, null) -> bool:
        return (null and v is None) or (isinstance(v, dict) and text(v.get("path"), null=True)
                                        and isinstance(v.get("fingerprint"), (dict, type(None))))

    checks = {
        "inputs.base": lambda v: source(v, null=False), "inputs.exp": lambda v: source(v, null=False),
        "inputs.items": lambda v: source(v, null=True), "inputs.truth": lambda v: source(v, null=True),
        "columns.item_id": text, "columns.cluster_id": text, "columns.weight": lambda v: text(v, null=True),
        "columns.base_cluster_id": lambda v: text(v, null=True), "columns.exp_cluster_id": lambda v: text(v, null=True),
        "options.slice_by": texts, "options.explore_by": texts, "options.quality_slice_by": texts,
        "options.top": lambda v: count(v, 0, MAX_INT64), "options.title": text,
        "engine.name": text, "engine.database": lambda v: text(v, null=True),
        "engine.memory_limit": lambda v: text(v, null=True), "engine.master": lambda v: text(v, null=True),
        "engine.remote": lambda v: text(v, null=True),
        "engine.threads": lambda v: v is None or count(v, 1, MAX_THREADS),
        **{f"outputs.{k}": text for k in OUTPUTS},
    }
    for name, ok in checks.items():
        v = get(name)
        yield name, v is not _MISSING and ok(v)
    # A truth sample's design (absent from the records of runs before it existed: none). Its column is
    # checked by the estimator when the truth is read; here, only that it is a design of the truth.
    design, n = get("options.truth_sample"), get("options.population_entities")
    yield "options.truth_sample", design is _MISSING or design is None or (
        isinstance(design, str) and bool(design.strip()) and get("inputs.truth") not in (None, _MISSING))
    yield "options.population_entities", n is _MISSING or n is None or (
        positive(n) and isinstance(design, str))
    # The truth's entity column (absent from records before --truth-column: the cluster column): a name,
    # and only beside a truth.
    col = get("columns.truth_cluster_id")
    yield "columns.truth_cluster_id", col is _MISSING or col is None or (
        text(col) and get("inputs.truth") not in (None, _MISSING))


_MISSING = object()
#: The largest integer a record's count may hold (a 64-bit integer's, as engines take them).
MAX_INT64 = 2**63 - 1


def make_record(given: Inputs, truth, prints: InputPrints, *, slice_by, explore_by, top, sample_size, budget,
                seed, estimator, hide, title, only_affected, quality_slice_by, engine: Engine, truth_sample=None,
                population_entities=None, truth_cluster_id=None) -> dict:
    """The record of a run (:func:`read_evaluation` describes it); the inputs' fingerprints are
    ``prints``, taken before the inputs were read (the pair sample records the same)."""
    def source(v, role: str) -> dict | None:
        if v is None:
            return None
        if not isinstance(v, (str, os.PathLike)):
            return {"given": type(v).__name__, "path": None, "fingerprint": None}
        fp = prints.prints.get(role)
        return {"given": os.fspath(v), "path": full_path(v), "fingerprint": dict(fp) if fp else None}

    st = engine.settings
    database = st.get("database")
    try:
        version = _metadata.version("abcde")
    except _metadata.PackageNotFoundError:  # run from a source tree that is not installed
        version = None
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "complete": True,
        "abcde_version": version,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": {"base": source(given.base, "base"), "exp": source(given.exp, "exp"),
                   "items": source(given.items, "items"), "truth": source(truth, "truth")},
        "columns": {"item_id": given.item_id, "cluster_id": given.cluster_id, "base_cluster_id": given.base_cluster_id,
                    "exp_cluster_id": given.exp_cluster_id, "weight": given.weight,
                    "truth_cluster_id": truth_cluster_id},
        "options": {"slice_by": list(slice_by), "explore_by": list(explore_by if explore_by is not None else slice_by),
                    "top": top, "sample_size": sample_size, "budget": budget, "seed": seed, "estimator": estimator,
                    "allocation": None, "hide": list(hide), "only_affected": only_affected, "title": title,
                    "quality_slice_by": list(quality_slice_by if quality_slice_by is not None else slice_by),
                    "truth_sample": truth_sample, "population_entities": population_entities},
        "engine": {"name": engine.name, "database": os.path.abspath(database) if database else None,
                   "memory_limit": st.get("memory_limit"), "threads": st.get("threads"),
                   "master": st.get("master"), "remote": st.get("remote")},
        "outputs": dict(OUTPUTS),
    }
