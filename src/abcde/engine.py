"""Engines: the only module that knows which backend runs the Ibis expressions.

DuckDB (embedded, out-of-core) is the default. Every metric module builds Ibis
expressions and hands them to an :class:`Engine` to read inputs, materialize
intermediate tables (named ``__abcde_*``) and fetch small results.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ibis
import pyarrow as pa

from .errors import EngineError, InputError

_counter = itertools.count()

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")


@dataclass
class Engine:
    """A connected Ibis backend plus the settings it was made with.

    Use :func:`connect` to make one.
    """

    name: str
    con: Any
    settings: dict = field(default_factory=dict)
    _temp: list = field(default_factory=list)

    # -- reading ---------------------------------------------------------
    def read(self, source, *, role: str) -> "ibis.Table":
        """Read a table from a path (Parquet or CSV by extension), a pandas or
        polars DataFrame, a pyarrow Table, or an Ibis table.

        ``role`` names the input in error messages (e.g. ``"base"``).
        """
        if isinstance(source, ibis.Table):
            return source
        if isinstance(source, (str, os.PathLike)):
            return self._read_path(Path(source), role=role)
        if isinstance(source, (pa.Table, pa.RecordBatch)):
            return ibis.memtable(pa.table(source) if isinstance(source, pa.RecordBatch) else source)
        mod = type(source).__module__.split(".")[0]
        if mod in ("pandas", "polars"):
            return ibis.memtable(source)
        raise InputError(
            f"Cannot read {role} from an object of type {type(source).__name__}. "
            "Expected a path to a .parquet or .csv file, a pandas or polars DataFrame, "
            "a pyarrow Table or an Ibis table."
        )

    def _read_path(self, path: Path, *, role: str) -> "ibis.Table":
        name = path.name.lower()
        is_dir = path.is_dir()
        if not is_dir and not any(ch in str(path) for ch in "*?[") and not path.exists():
            raise InputError(f"The {role} file '{path}' does not exist.")
        table_name = f"__abcde_{role}_{next(_counter)}"
        try:
            if is_dir or name.endswith(PARQUET_SUFFIXES):
                target = str(path / "**" / "*.parquet") if is_dir else str(path)
                t = self.con.read_parquet(target, table_name=table_name)
            elif name.endswith(CSV_SUFFIXES):
                t = self.con.read_csv(str(path), table_name=table_name)
            else:
                raise InputError(
                    f"Cannot tell the format of the {role} file '{path}' from its extension. "
                    "Use .parquet (or .pq) or .csv (or .tsv)."
                )
            # Force the schema (and the first bytes) to be read now, so a corrupt
            # file fails here with its name rather than deep inside a metric.
            t.schema()
            self.con.to_pyarrow(t.limit(1))
        except InputError:
            raise
        except Exception as exc:  # engine-specific read errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"Cannot read the {role} file '{path}': {first}") from exc
        return t

    # -- running ---------------------------------------------------------
    def materialize(self, expr: "ibis.Table", stem: str) -> "ibis.Table":
        """Compute ``expr`` once into a temporary engine table ``__abcde_<stem>_N``."""
        name = f"__abcde_{stem}_{next(_counter)}"
        try:
            t = self.con.create_table(name, expr, temp=True)
        except Exception as exc:
            raise EngineError(f"Step '{stem}' failed in {self.name}: {exc}") from exc
        self._temp.append(name)
        return t

    def to_arrow(self, expr, *, step: str = "query") -> pa.Table:
        try:
            return self.con.to_pyarrow(expr)
        except Exception as exc:
            raise EngineError(f"Step '{step}' failed in {self.name}: {exc}") from exc

    def rows(self, expr, *, step: str = "query") -> list[dict]:
        """Fetch a (small) table expression as a list of dicts."""
        return self.to_arrow(expr, step=step).to_pylist()

    def one(self, expr, *, step: str = "query") -> dict:
        """Fetch a one-row table expression as a dict."""
        rows = self.rows(expr, step=step)
        return rows[0] if rows else {}

    def write_parquet(self, expr, path: Path, *, step: str = "write") -> None:
        try:
            self.con.to_parquet(expr, str(path))
        except Exception as exc:
            raise EngineError(f"Step '{step}' failed writing '{path}' in {self.name}: {exc}") from exc

    def release(self) -> None:
        """Drop the temporary tables this engine made."""
        while self._temp:
            name = self._temp.pop()
            try:
                self.con.drop_table(name, force=True)
            except Exception:  # pragma: no cover - best effort cleanup
                pass


def connect(
    engine: str = "duckdb",
    *,
    database: str | os.PathLike | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | os.PathLike | None = None,
) -> Engine:
    """Connect to an engine.

    Parameters
    ----------
    engine
        ``"duckdb"`` (default; embedded, spills to disk beyond ``memory_limit``).
    database
        DuckDB database file; ``None`` keeps everything in memory (temporary
        tables still spill to a temporary directory when memory runs short).
    memory_limit
        DuckDB ``memory_limit`` setting, e.g. ``"4GB"``.
    threads
        Number of engine threads.
    temp_directory
        Where DuckDB spills; defaults to DuckDB's own choice.
    """
    if engine != "duckdb":
        raise InputError(f"Unknown engine {engine!r}. Available engines: 'duckdb'.")
    kwargs: dict[str, Any] = {}
    if memory_limit:
        kwargs["memory_limit"] = str(memory_limit)
    if threads:
        if int(threads) < 1:
            raise InputError(f"threads must be a positive integer. Got {threads!r} instead.")
        kwargs["threads"] = int(threads)
    if temp_directory:
        kwargs["temp_directory"] = str(temp_directory)
    try:
        con = ibis.duckdb.connect(database=str(database) if database else ":memory:", **kwargs)
    except Exception as exc:
        raise InputError(f"Cannot open DuckDB with database={database!r}, settings {kwargs}: {exc}") from exc
    # DuckDB's own progress bar would interleave with abcde's progress display.
    con.raw_sql("SET enable_progress_bar = false")
    # abcde orders every result it shows; not preserving insertion order lets DuckDB
    # materialize intermediate tables in parallel and with less memory.
    con.raw_sql("SET preserve_insertion_order = false")
    settings = {"database": str(database) if database else None, **kwargs}
    return Engine(name="duckdb", con=con, settings=settings)


def resolve(engine: Engine | str | None) -> Engine:
    """An :class:`Engine` from an engine, an engine name or ``None`` (DuckDB in memory)."""
    if engine is None:
        return connect()
    if isinstance(engine, str):
        return connect(engine)
    if isinstance(engine, Engine):
        return engine
    raise InputError(f"engine must be an Engine, an engine name or None. Got {type(engine).__name__}.")
