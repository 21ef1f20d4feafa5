"""The engine seam: what every engine provides, and the code they share.

DuckDB (embedded, out-of-core) is the default; PySpark is the distributed engine.
Every metric module builds Ibis expressions and hands them to an :class:`Engine`
to read inputs, materialize intermediate tables (named ``__abcde_*``) and fetch
small results. The expressions are the same for every engine; what differs lives
in one subclass per engine (:class:`abcde.engine.duckdb.DuckDBEngine`,
:class:`abcde.engine.spark.SparkEngine`), never in an ``if name == ...``.
"""

from __future__ import annotations

import abc
import itertools
import os
import re
import stat
from pathlib import Path
from typing import Any, ClassVar

import ibis
import pyarrow as pa

from abcde.errors import EngineError, InputError

_counter = itertools.count()

#: The most threads an engine is given (DuckDB starts every thread it is told to: 2**62 of them
#: never finish starting).
MAX_THREADS = 4096

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")

class Aside:
    """A result being fetched beside other queries (:meth:`Engine.rows_aside`)."""

    def __init__(self, *, rows: list[dict] | None = None, wait=None, cancel=None) -> None:
        self._rows, self._wait, self._cancel = rows, wait, cancel

    def result(self) -> list[dict]:
        """The rows, once fetched; raises what the query raised (an :class:`EngineError`)."""
        if self._wait is not None:
            self._rows, self._wait, self._cancel = self._wait(), None, None
        return self._rows

    def cancel(self) -> None:
        """Stop the query if it still runs (its result is no longer wanted); nothing if it is done."""
        if self._cancel is not None:
            self._cancel()
            self._wait = self._cancel = None


# name -> Engine subclass; filled by Engine.__init_subclass__ when abcde.engine
# imports the engine modules, read by connect().
_ENGINES: dict[str, type[Engine]] = {}


def portable_hex_value(text: "ibis.StringValue", digits: int) -> "ibis.FloatingValue":
    """:meth:`Engine.hex_value` in operations every SQL engine has: each digit's position in
    ``0123456789abcdef``, added up by Horner's rule (exact: every partial sum is an integer below 2^52)."""
    import ibis  # lazy: start-up time

    hex_digits = ibis.literal("0123456789abcdef")
    v = None
    for k in range(digits):
        d = hex_digits.find(text.substr(k, 1)).cast("float64")
        v = d if v is None else v * 16.0 + d
    return v


class Engine(abc.ABC):
    """A connected Ibis backend plus the settings it was made with.

    Use :func:`connect` to make one. Callers use only this interface:

    ``name``
        ``"duckdb"`` or ``"spark"``; results report it.
    ``con``, ``settings``
        The Ibis backend, and the settings the engine was made with.
    :meth:`read`
        A path, DataFrame, Arrow or Ibis table -> an Ibis table on this engine.
    :meth:`materialize`
        Compute an expression once into a temporary table ``__abcde_<stem>_N``.
    :meth:`to_arrow`, :meth:`rows`, :meth:`one`
        Fetch a (small) result; engine errors become :class:`~abcde.errors.EngineError`
        naming the step.
    :meth:`write_parquet`, :meth:`write_outputs`
        Write one table; write a directory of tables and texts.
    :meth:`release`
        Drop the temporary tables this engine made.
    :meth:`session`, :meth:`interrupt`, :meth:`rows_aside`
        Another engine on the same data whose queries run concurrently with this one's;
        cancel the query running now (from another thread); fetch a small result beside the
        next queries.
    Capabilities (properties)
        :attr:`prefers_window_sums`, :attr:`writes_part_directories`,
        :attr:`atomic_outputs`; :meth:`zip` (join by row position) where the engine can.

    An engine class implements the abstract members: the capabilities, :meth:`open`
    (its part of :func:`connect`), :meth:`_parquet_target`, :meth:`_create_temp`,
    :meth:`_drop_temp`, :meth:`_to_parquet` and :meth:`write_outputs`. Defining a
    class attribute ``name`` registers it with :func:`connect`.
    """

    name: ClassVar[str]

    def __init__(self, con: Any, settings: dict | None = None) -> None:
        self.con = con
        self.settings = {} if settings is None else settings
        self._temp: list = []  # handles of the temporary tables, for release()
        self._made: dict[int, Any] = {}  # id of a table made by materialize -> its handle, for discard()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            _ENGINES[cls.name] = cls

    def __repr__(self) -> str:
        return f"{type(self).__name__}(settings={self.settings!r})"

    # -- what the engine can do -----------------------------------------
    @property
    @abc.abstractmethod
    def prefers_window_sums(self) -> bool:
        """Whether per-group totals are faster as window sums than as a group-by joined
        back (Spark: yes; DuckDB: no). Both give the same numbers."""

    def hex_value(self, text: "ibis.StringValue", digits: int) -> "ibis.FloatingValue":
        """The integer whose hexadecimal digits (lower case) are the first ``digits`` characters of
        ``text``, as a double (exact below 2^53: ``digits`` ≤ 13). Default :func:`portable_hex_value`;
        an engine with a direct conversion overrides it (the same number in a third of the time: a
        clock per item of a sample reads one, :mod:`abcde.sampling.clocks`)."""
        return portable_hex_value(text, digits)

    @property
    @abc.abstractmethod
    def writes_part_directories(self) -> bool:
        """Whether a written ``x.parquet`` is a directory of part files (Spark) rather
        than one file (DuckDB)."""

    @property
    @abc.abstractmethod
    def atomic_outputs(self) -> bool:
        """Whether :meth:`write_outputs` is all or nothing: a failure leaves the output
        directory as it was (DuckDB: yes; Spark writes straight to the destination)."""

    def zip(self, tables: dict[str, "ibis.Table"]) -> "ibis.Table | None":
        """The tables joined row by row (first rows together, and so on; the shortest one
        padded with nulls), each column named ``<key>__<column>``; or None when this engine
        cannot join by position (Spark: its tables have no row order). For inputs written in
        the same row order this replaces a hash join on the item id, whose cost at a billion
        items is more than one machine's memory and disk (issue 16); the caller verifies the
        ids row by row."""
        return None

    @classmethod
    @abc.abstractmethod
    def open(cls, **options) -> Engine:
        """Connect: this engine's part of :func:`connect`, which passes all of its
        keyword arguments; an engine uses its own and ignores the others'."""

    # -- reading ---------------------------------------------------------
    def read(self, source, *, role: str) -> "ibis.Table":
        """Read a table from a path (Parquet or CSV by extension), a pandas or
        polars DataFrame, a pyarrow Table, or an Ibis table.

        ``role`` names the input in error messages (e.g. ``"base"``).
        """
        if isinstance(source, ibis.Table):
            return source
        if isinstance(source, (str, os.PathLike)):
            if isinstance(source, str) and "://" in source:
                return self._read_path(source, role=role)
            return self._read_path(Path(source), role=role)
        if isinstance(source, (pa.Table, pa.RecordBatch)):
            return ibis.memtable(pa.table(source) if isinstance(source, pa.RecordBatch) else source)
        mod = type(source).__module__.split(".")[0]
        if mod in ("pandas", "polars"):
            # Through Arrow, not Ibis's pandas reader (Ibis 12 reads an option pandas 3 deprecates).
            return ibis.memtable(_frame_to_arrow(source, mod, role))
        raise InputError(
            f"Cannot read {role} from an object of type {type(source).__name__}. "
            "Expected a path to a .parquet or .csv file, a pandas or polars DataFrame, "
            "a pyarrow Table or an Ibis table."
        )

    def _read_path(self, path: "Path | str", *, role: str) -> "ibis.Table":
        """Read a local path (file, directory of part files, glob) or a URI (``s3://``,
        ``hdfs://``, ... as the engine supports)."""
        if isinstance(path, str):  # a URI: the engine checks it exists
            name, is_dir = path.rstrip("/").rsplit("/", 1)[-1].lower(), path.endswith("/")
            if not name.endswith(PARQUET_SUFFIXES + CSV_SUFFIXES):
                is_dir = True
        else:
            from abcde.util.files import check_input_path  # lazy: start-up time

            name = path.name.lower()
            # A regular file or a directory of part files, decided before anything opens it: a named pipe
            # (whose reader waits forever for a writer), a device or a socket is refused in one line.
            st = check_input_path(path, where=f"The {role} file '{path}'",
                                  expected="give a Parquet or CSV file (or a directory of Parquet part files)",
                                  directory=True)
            is_dir = st is not None and stat.S_ISDIR(st.st_mode)
            if st is None and not any(ch in str(path) for ch in "*?["):
                raise InputError(f"The {role} file '{path}' does not exist.")
        # A role may hold characters a view name may not (Spark refuses "base-ids"): those become "_".
        table_name = f"__abcde_{re.sub(r'[^0-9A-Za-z_]', '_', role)}_{next(_counter)}"
        try:
            if is_dir or name.endswith(PARQUET_SUFFIXES):
                t = self.con.read_parquet(self._parquet_target(path, is_dir=is_dir), table_name=table_name)
            elif name.endswith(CSV_SUFFIXES):
                if isinstance(path, Path) and name.endswith((".csv", ".tsv")):
                    _check_csv_header(path, role)
                t = self.con.read_csv(str(path), table_name=table_name)
            else:
                raise InputError(
                    f"Cannot tell the format of the {role} file '{path}' from its extension. "
                    "Use .parquet (or .pq) or .csv (or .tsv)."
                )
            # Force the schema (and the first bytes) to be read now, so a corrupt
            # file fails here with its name rather than deep inside a metric.
            schema = t.schema()
            if isinstance(path, Path) and not is_dir and name.endswith(PARQUET_SUFFIXES):
                _check_parquet_names(path, role, schema.names)
            self._fetch(t.limit(1))
        except InputError:
            raise
        except Exception as exc:  # engine-specific read errors
            first = first_line(exc)
            raise InputError(f"Cannot read the {role} file '{path}': {first}") from exc
        return t

    @abc.abstractmethod
    def _parquet_target(self, path: "Path | str", *, is_dir: bool) -> str:
        """What to hand the backend's ``read_parquet`` for a Parquet file, a glob or
        (``is_dir``) a directory of part files."""

    # -- running ---------------------------------------------------------
    def materialize(self, expr: "ibis.Table", stem: str) -> "ibis.Table":
        """Compute ``expr`` once into a temporary engine table ``__abcde_<stem>_N``."""
        # Only letters, digits and '_' in the name (Spark refuses e.g. 'intersection+'); the stem as
        # given names the step in messages.
        name = temp_name(stem)
        try:
            t = self._create_temp(name, expr)
        except Exception as exc:
            raise EngineError(self.failure(stem, exc)) from exc
        self._made[id(t)] = self._temp[-1]
        return t

    def materialize_parts(self, exprs: list["ibis.Table"], stem: str) -> "ibis.Table":
        """The union of ``exprs`` (tables of one schema), computed one expression at a time into
        one temporary table: what a step too large to compute at once (a billion-row hash join)
        does in parts. Default: :meth:`materialize` of their union (a distributed engine
        computes the parts side by side anyway)."""
        return self.materialize(ibis.union(*exprs) if len(exprs) > 1 else exprs[0], stem)

    @property
    def bounded_memory(self) -> bool:
        """Whether this engine runs within one machine's memory and disk (DuckDB), so abcde splits
        its largest steps into buckets (:func:`abcde.core.diff.build_diff`); a distributed engine
        (Spark) partitions them itself."""
        return False

    @property
    def memory_bytes(self) -> int | None:
        """The memory this engine's queries may use, in bytes (DuckDB: its ``memory_limit``, given
        or its default of 80% of RAM), which sizes the buckets of the largest steps on an engine
        with :attr:`bounded_memory`; None when the engine does not say (a distributed engine)."""
        return None

    def discard(self, table: "ibis.Table") -> None:
        """Drop a temporary table made by :meth:`materialize` or :meth:`materialize_parts`
        before :meth:`release` (its memory or disk is needed by the next step, or it was only a
        step's own). Anything else: nothing happens."""
        handle = self._made.pop(id(table), None)
        if handle is not None and handle in self._temp:
            self._temp.remove(handle)
            try:
                self._drop_temp(handle)
            except Exception:  # pragma: no cover - best effort cleanup, as release()
                pass

    def failure(self, step: str, exc: Exception, where: str = "") -> str:
        """The one-line message of a step that failed in this engine; for lack of memory or
        disk, with the limit it hit and what to set."""
        first = first_line(exc)
        text = f"Step '{step}' failed{where} in {self.name}: {first}"
        low = first.lower()
        if "no space left on device" in low or "disk full" in low:
            spill = self.settings.get("temp_directory") or "the default temporary directory"
            text += (f" (the disk holding {spill} is full: give --temp-directory a disk with more room, "
                     "or run on --engine spark)")
        elif "out of memory" in low or "outofmemory" in low or "could not allocate" in low:
            limit = self.settings.get("memory_limit") or "the default, 80% of RAM"
            text += (f" (memory limit {limit}: set a larger --memory-limit if the machine has it, "
                     "a --temp-directory with room to spill, or run on --engine spark)")
        return text

    # -- kept work (a database file) ------------------------------------
    @property
    def persistent(self) -> bool:
        """Whether tables stored with :meth:`store` outlive this process (a DuckDB ``--database``
        file); then :func:`abcde.core.diff.build_diff` keeps the validated inputs and fragments."""
        return False

    def stored(self, name: str) -> "ibis.Table | None":
        """The kept table ``name``, or None."""
        return None

    def store(self, name: str, expr: "ibis.Table") -> "ibis.Table":
        """Compute ``expr`` into the kept table ``name`` (replacing one of that name)."""
        raise EngineError(f"The {self.name} engine keeps no tables between runs (only a DuckDB --database file "
                          "does); nothing was kept.")

    @abc.abstractmethod
    def _create_temp(self, name: str, expr: "ibis.Table") -> "ibis.Table":
        """Compute ``expr`` now into a temporary table ``name``, append a handle for
        :meth:`_drop_temp` to ``self._temp``, and return the table."""

    @abc.abstractmethod
    def _drop_temp(self, handle) -> None:
        """Drop one temporary table made by :meth:`_create_temp`."""

    def to_arrow(self, expr, *, step: str = "query") -> pa.Table:
        try:
            return self._fetch(expr)
        except Exception as exc:
            raise EngineError(self.failure(step, exc)) from exc

    def _fetch(self, expr) -> pa.Table:
        """Run ``expr`` and fetch the result as Arrow with the expression's schema."""
        return self.con.to_pyarrow(expr)

    def rows(self, expr, *, step: str = "query") -> list[dict]:
        """Fetch a (small) table expression as a list of dicts."""
        return self.to_arrow(expr, step=step).to_pylist()

    def one(self, expr, *, step: str = "query") -> dict:
        """Fetch a one-row table expression as a dict."""
        rows = self.rows(expr, step=step)
        return rows[0] if rows else {}

    # -- concurrent callers ------------------------------------------------
    def session(self) -> Engine:
        """An engine for one more caller, whose queries run concurrently with this engine's,
        on the same data (tables read or made here, except temporary ones) and with the same
        settings (memory limit, threads). Default: this engine itself, whose queries then run
        one at a time (serialize them)."""
        return self

    def interrupt(self) -> bool:
        """Cancel the query this engine is running, if any (call it from another thread; the
        query then fails with an :class:`~abcde.errors.EngineError`). ``False`` if this engine
        cannot cancel a query (default)."""
        return False

    def rows_aside(self, expr, *, step: str = "query") -> Aside:
        """Start fetching a (small) result, as :meth:`rows` does, beside this engine's next queries:
        :meth:`Aside.result` waits for it. For a step whose query leaves cores idle (DuckDB's zip of
        inputs by position runs on one thread) and another query that need not wait for it. A list of
        expressions: run one after another, their rows in turn. Default: fetched now (the engine runs
        one query at a time)."""
        exprs = list(expr) if isinstance(expr, (list, tuple)) else [expr]
        return Aside(rows=[r for e in exprs for r in self.rows(e, step=step)])

    # -- writing ---------------------------------------------------------
    def write_parquet(self, expr, path, *, step: str = "write") -> None:
        """Write ``expr`` as Parquet at ``path`` (a directory of part files if
        :attr:`writes_part_directories`)."""
        try:
            self._to_parquet(expr, str(path))
        except Exception as exc:
            raise EngineError(self.failure(step, exc, f" writing '{path}'")) from exc

    @abc.abstractmethod
    def _to_parquet(self, expr, path: str) -> None:
        """Write ``expr`` as Parquet at ``path`` with the backend."""

    @abc.abstractmethod
    def write_outputs(self, out, tables: dict, texts: dict | None = None) -> list[str]:
        """Write ``{file name: table expression}`` as Parquet and ``{file name: text}``
        into the directory ``out``; returns the written paths.

        All or nothing if :attr:`atomic_outputs`. ``out`` must be new, empty or an earlier
        output of the same files (:meth:`check_output_dir`, called first by every engine).
        """

    def check_output_dir(self, out, tables: dict, texts: dict | None = None) -> None:
        """Refuse to write :meth:`write_outputs` into ``out`` unless it is new, empty, or an earlier
        output of the same command (its own files and nothing else).

        ``write_outputs`` replaces its files of the same names in ``out``, so a directory holding
        anything else (someone's data, another command's output, a sample directory) is refused
        with :class:`~abcde.errors.InputError` naming the directory and what is in it. An earlier
        output is recognised by holding exactly the files this call writes (a partial one, left by
        a crash of a non-atomic engine, is refused too: look at it, then delete it), each of the
        kind this engine writes (a Parquet file, or a directory of part files when
        :attr:`writes_part_directories`; a text file). A URI (``s3a://…``) is not checked: the
        engine's own rules for writing there apply.
        """
        out_s = str(out)
        if "://" in out_s or out_s.startswith("dbfs:/"):
            return
        d = Path(out_s)
        if not d.is_dir():
            return  # missing (made when writing) or a file in the way (the write names it)
        entries = {p.name: p for p in d.iterdir() if not p.name.startswith(".abcde-")}  # .abcde-*: an aborted write
        if not entries:
            return
        ours = {**{n: self.writes_part_directories for n in tables}, **{n: False for n in (texts or {})}}
        foreign = sorted(n for n in entries if n not in ours)
        if foreign:
            raise InputError(
                f"The output directory '{d}' already holds files that are not this command's output "
                f"(first: {', '.join(repr(n) for n in foreign[:5])}). Give --out a new or empty directory; "
                "abcde replaces only its own earlier output."
            )
        wrong = sorted(n for n, p in entries.items() if p.is_symlink() or p.is_dir() != ours[n])
        if wrong:
            p = entries[wrong[0]]
            kind = "link" if p.is_symlink() else "directory" if p.is_dir() else "file"
            raise InputError(
                f"The output directory '{d}' holds '{p}' as a {kind}, "
                "which this command does not write there; it is not an earlier output of this command. "
                "Give --out a new or empty directory."
            )
        missing = sorted(set(ours) - set(entries))
        if missing:
            raise InputError(
                f"The output directory '{d}' holds some of this command's files but not "
                f"{', '.join(repr(n) for n in missing)}: not a whole earlier output, so it is left as it is. "
                "Give --out a new or empty directory."
            )

    def close(self) -> None:
        """Done with this engine: its temporary tables dropped and, where it opened one, its
        connection closed (a DuckDB database file is then complete on disk, with no write-ahead
        log left beside it). Default: :meth:`release` (a Spark session stays, others may use it)."""
        self.release()

    def release(self) -> None:
        """Drop the temporary tables this engine made."""
        self._made.clear()
        while self._temp:
            handle = self._temp.pop()
            try:
                self._drop_temp(handle)
            except Exception:  # pragma: no cover - best effort cleanup
                pass


def identifier(stem: str) -> str:
    """``stem`` with only letters, digits and '_' (Spark refuses e.g. 'intersection+' in a name)."""
    return re.sub(r"[^0-9A-Za-z_]", "_", stem)


def temp_name(stem: str) -> str:
    """A new name ``__abcde_<stem>_N`` for a temporary table."""
    return f"__abcde_{identifier(stem)}_{next(_counter)}"


def _check_csv_header(path: Path, role: str) -> None:
    """Refuse a CSV file whose header names a column twice (engines would silently rename one,
    ``item_id`` and ``item_id_1``, and use whichever they read first)."""
    import csv  # lazy: only CSV inputs need it

    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        line = fh.readline(1 << 20)
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    header = next(csv.reader([line], delimiter=delimiter), [])
    seen: set = set()
    dups = [c for c in header if c in seen or seen.add(c)]
    if dups:
        raise InputError(f"The header of the {role} file '{path}' names column {dups[0]!r} more than once; "
                         "each column needs its own name.")


def _check_parquet_names(path: Path, role: str, read_names) -> None:
    """Refuse a Parquet file that names a column twice: engines rename one (DuckDB reads ``item_id``
    twice as ``item_id`` and ``item_id_1``) and use whichever they read first. Only when the names
    read hint at it (``x_1`` beside ``x``) is the file's own schema read, so the common case costs
    nothing."""
    names = set(read_names)
    if not any(c.rsplit("_", 1)[0] in names for c in names if c.rsplit("_", 1)[-1].isdigit() and "_" in c):
        return
    import pyarrow.parquet as pq  # lazy: read only for a suspicious file

    seen: set = set()
    dups = [c for c in pq.read_schema(path).names if c in seen or seen.add(c)]
    if dups:
        raise InputError(f"The {role} file '{path}' names column {dups[0]!r} more than once; "
                         "each column needs its own name.")


def first_line(exc: Exception) -> str:
    """The informative first line of an engine error. For a Java error relayed by py4j
    ("An error occurred while calling o472.parquet." then the Java trace) that is the
    innermost cause's message."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines[0].startswith("An error occurred while calling"):
        causes = [ln for ln in lines if ln.startswith(("Caused by:", ": "))]
        if causes:
            msg = causes[-1].removeprefix("Caused by:").removeprefix(": ").strip()
            return msg.split(": ", 1)[1] if ": " in msg and msg.split(": ", 1)[0].count(".") >= 2 else msg
    return _printable(lines[0])


def _printable(text: str) -> str:
    """``text`` with control characters (a NUL of a binary file quoted by a parser) shown as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in text)


def connect(
    engine: str = "duckdb",
    *,
    database: str | os.PathLike | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | os.PathLike | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark_conf: dict | None = None,
    session=None,
) -> Engine:
    """Connect to an engine.

    Parameters
    ----------
    engine
        ``"duckdb"`` (default; embedded, spills to disk beyond ``memory_limit``) or
        ``"spark"`` (PySpark: a local master, a cluster, or Spark Connect).
    database
        DuckDB database file; ``None`` keeps everything in memory (temporary
        tables still spill to a temporary directory when memory runs short).
    memory_limit
        DuckDB ``memory_limit`` setting, e.g. ``"4GB"``; for a local Spark master,
        the driver memory.
    threads
        Number of engine threads (DuckDB threads; ``local[threads]`` for Spark
        when no ``master`` is given).
    temp_directory
        Where DuckDB spills; defaults to DuckDB's own choice.
    master
        Spark master URL: ``local[2]``, ``spark://host:7077``, ``yarn``, ...
        Default: the active Spark session if there is one (``spark-submit``,
        Databricks), else ``local[threads or *]``.
    remote
        Spark Connect URL, e.g. ``sc://host:15002``.
    spark_conf
        Extra Spark settings for a new session.
    session
        An existing ``SparkSession`` to use.
    """
    cls = _ENGINES.get(engine) if isinstance(engine, str) else None
    if cls is None:
        available = ", ".join(repr(n) for n in sorted(_ENGINES))
        raise InputError(f"Unknown engine {engine!r}. Available engines: {available}.")
    return cls.open(database=database, memory_limit=memory_limit, threads=threads, temp_directory=temp_directory,
                    master=master, remote=remote, spark_conf=spark_conf, session=session)


def resolve(engine: Engine | str | None) -> Engine:
    """An :class:`Engine` from an engine, an engine name or ``None`` (DuckDB in memory)."""
    if engine is None:
        return connect()
    if isinstance(engine, str):
        return connect(engine)
    if isinstance(engine, Engine):
        return engine
    raise InputError(f"engine must be an Engine, an engine name or None. Got {type(engine).__name__}.")


def _frame_to_arrow(frame, mod: str, role: str) -> pa.Table:
    """A pandas or polars DataFrame as Arrow (its index is not a column); a column Arrow cannot
    hold in one type (an object column of text and numbers) is a clear error naming it."""
    if mod == "polars":
        return frame.to_arrow()
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        column = next((c for c in frame.columns if _arrow_fails(frame[c])), None)
        where = f"column {column!r}" if column is not None else "a column"
        raise InputError(f"Cannot read {role}: {where} of the DataFrame mixes types Arrow cannot hold in one "
                         f"column ({str(exc).splitlines()[0]}). Give the column one type.") from exc


def _arrow_fails(series) -> bool:
    try:
        pa.array(series, from_pandas=True)
        return False
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return True

