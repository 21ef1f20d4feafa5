"""DuckDB, the default engine: embedded, spills to disk beyond its memory limit."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.datatypes as dt
import ibis.expr.operations as ops
import pyarrow as pa
from ibis.backends.sql.datatypes import DuckDBType
from ibis.formats.pyarrow import PyArrowData

from abcde.engine.base import MAX_THREADS, Aside, Engine, first_line, identifier, temp_name
from abcde.errors import EngineError, InputError
from abcde.util import progress as _progress
from abcde.util.files import replace_files


class DuckDBEngine(Engine):
    """DuckDB through Ibis: temporary tables, atomic output directories."""

    name = "duckdb"

    def __init__(self, con, settings: dict | None = None) -> None:
        super().__init__(con, settings)
        self._parts: dict[int, str] = {}  # id of a table made by materialize_parts -> its scratch directory
        self._zips: set[str] = set()  # names of the zip views (see _zip_plans)

    @property
    def prefers_window_sums(self) -> bool:
        # Measured at 10M items: group-by + join back is 1.4x faster than window sums; at 300M (93M
        # fragments), the clusters of several fragments only, joined back: 1.3x (join_common.with_totals).
        return False

    @property
    def writes_part_directories(self) -> bool:
        return False

    @property
    def atomic_outputs(self) -> bool:
        return True

    @classmethod
    def open(cls, *, database=None, memory_limit=None, threads=None, temp_directory=None,
             **_other_engines) -> DuckDBEngine:
        """A DuckDB connection (``database`` file or in memory) with abcde's settings.

        ``database`` is a DuckDB database file, or a path where none is (a new database): any other
        file (a SQLite database such as a pair sample's judgement store, a Parquet file, text) is
        refused before DuckDB sees it (:func:`check_database_file`). DuckDB never installs or loads
        an extension on its own (:data:`NO_AUTO_EXTENSIONS`)."""
        kwargs: dict[str, Any] = {}
        if memory_limit:
            kwargs["memory_limit"] = str(memory_limit)
        if threads:
            try:
                n = int(threads)
            except (TypeError, ValueError, OverflowError):
                n = 0
            if not 1 <= n <= MAX_THREADS:
                raise InputError(f"threads must be a whole number from 1 to {MAX_THREADS:,}. Got "
                                 f"{threads if n < 10**30 else f'a {len(str(n))}-digit number'!r} instead.")
            kwargs["threads"] = n
        if temp_directory:
            kwargs["temp_directory"] = str(temp_directory)
        elif not database:
            # DuckDB's own default for a database in memory is '.tmp' in the working directory: a
            # user's repository would collect tens of GB of spill (and keep them after a kill).
            kwargs["temp_directory"] = str(Path(tempfile.gettempdir()) / SPILL_DIR)
            remove_stale_spill(Path(kwargs["temp_directory"]))
        if database:
            check_database_file(database)
        try:
            con = ibis.duckdb.connect(database=str(database) if database else ":memory:", **kwargs,
                                      **NO_AUTO_EXTENSIONS)
        except Exception as exc:
            raise InputError(f"Cannot open DuckDB with database={database!r}, settings {kwargs}: {exc}") from exc
        _configure(con)
        settings = {"database": str(database) if database else None, **kwargs}
        return cls(con, settings)

    def session(self) -> DuckDBEngine:
        """A new connection (a DuckDB cursor) to the same database: its queries run alongside
        this engine's, under the same database-wide memory limit and threads. It sees this
        engine's tables and views, not its temporary tables (nor in-memory tables registered
        here: Ibis registers those on each connection that uses them)."""
        try:
            con = ibis.duckdb.from_connection(self.con.con.cursor())
        except Exception as exc:
            raise EngineError(f"Cannot open another connection to DuckDB: {first_line(exc)}") from exc
        _configure(con, {k: self.settings[k] for k in ("memory_limit", "threads") if self.settings.get(k)})
        return type(self)(con, dict(self.settings))

    def interrupt(self) -> bool:
        """Interrupt the query running on this connection (DuckDB's ``interrupt()``; the query
        fails with "INTERRUPT Error"). Other connections' queries go on."""
        self.con.con.interrupt()
        return True

    def rows_aside(self, expr, *, step: str = "query") -> Aside:
        """Fetched on another connection (a cursor of this database) in a thread, so DuckDB runs it
        on the cores this engine's next queries leave idle (a list of expressions: one after another
        there, their rows in turn). Temporary views are this connection's own: the ones the
        expression reads (the inputs, read as views) are made again there from their SQL. An
        expression reading anything else this connection alone sees (a temporary table, a zip, a
        table in memory) is fetched now. Values are as DuckDB's client gives them (a count is an
        ``int``)."""
        exprs = list(expr) if isinstance(expr, (list, tuple)) else [expr]
        try:
            reads = [r for e in exprs for r in e.op().find((ops.DatabaseTable, ops.InMemoryTable))]
            names = {t.name for t in reads}
            views = dict(self.con.con.execute(
                "SELECT view_name, sql FROM duckdb_views() WHERE temporary").fetchall()) if names else {}
            if any(isinstance(t, ops.InMemoryTable) for t in reads) or not names <= set(views) or names & self._zips:
                return super().rows_aside(expr, step=step)
            sqls = [self.con.compile(e) for e in exprs]
            cur = self.con.con.cursor()
        except Exception:  # noqa: BLE001 - anything unusual: fetched now, where a failure names the step
            return super().rows_aside(expr, step=step)
        got: dict = {}
        stop = threading.Event()

        def fetch() -> None:
            try:
                for key in ("enable_progress_bar", "preserve_insertion_order"):
                    cur.execute(f"SET {key} = false")
                for name in names:
                    cur.execute(views[name])
                rows = []
                for sql in sqls:
                    if stop.is_set():
                        return
                    r = cur.execute(sql)
                    cols = [d[0] for d in r.description]
                    rows += [dict(zip(cols, row)) for row in r.fetchall()]
                got["rows"] = rows
            except Exception as exc:  # noqa: BLE001 - raised again by the caller's result()
                got["error"] = exc
            finally:
                cur.close()

        thread = threading.Thread(target=fetch, name=f"abcde-aside-{identifier(step)}", daemon=True)
        thread.start()

        def wait() -> list[dict]:
            thread.join()
            if "error" in got:
                raise EngineError(self.failure(step, got["error"])) from got["error"]
            return got["rows"]

        def cancel() -> None:
            stop.set()
            try:
                cur.interrupt()
            except Exception:  # noqa: BLE001 - closed already: the query is done
                pass
            thread.join()

        return Aside(wait=wait, cancel=cancel)

    def hex_value(self, text, digits: int):
        """DuckDB casts a ``0x``-prefixed text to an integer directly (the same number as the portable
        digit-by-digit sum; ``tests/test_sampling.py`` checks both)."""
        return (ibis.literal("0x") + text.substr(0, digits)).cast("int64").cast("float64")

    def zip(self, tables: dict[str, "ibis.Table"]) -> "ibis.Table":
        """DuckDB's ``POSITIONAL JOIN`` of the tables (a scan of each in its stored order)."""
        cols = [f'"{k}"."{c}" AS "{k}__{c}"' for k, t in tables.items() for c in t.columns]
        sources = " POSITIONAL JOIN ".join(f'({self.con.compile(t)}) AS "{k}"' for k, t in tables.items())
        name = temp_name("zip")
        try:  # a view (Ibis' con.sql() fails on DuckDB 2.0: it calls the removed fetch_arrow_table)
            self.con.raw_sql(f'CREATE TEMP VIEW "{name}" AS SELECT {", ".join(cols)} FROM {sources}')
            self._temp.append(("view", name))
            self._zips.add(name)
            # The view's types are DuckDB's reading of the SQL (a literal 1.0 is a DECIMAL there);
            # cast back to the tables' own.
            return self.con.table(name).cast({f"{k}__{c}": typ for k, t in tables.items()
                                              for c, typ in t.schema().items()})
        except Exception as exc:
            raise EngineError(self.failure("zip inputs", exc)) from exc

    def materialize_parts(self, exprs: list["ibis.Table"], stem: str) -> "ibis.Table":
        """Each expression written in turn as one Parquet part in a scratch directory (in
        ``temp_directory`` if set, else the system's temporary directory; removed by
        :meth:`release` and at exit), read back as one table. Compressed on disk, where DuckDB's
        own temporary table would spill it uncompressed."""
        base = self.settings.get("temp_directory")
        if base:
            Path(base).mkdir(parents=True, exist_ok=True)
        d = Path(tempfile.mkdtemp(prefix=f"abcde-scratch-{os.getpid()}-", dir=base))
        self._temp.append(("dir", str(d)))
        atexit.register(shutil.rmtree, d, True)
        for k, expr in enumerate(exprs):
            with _progress.step(f"{stem}: part {k + 1} of {len(exprs)}"):
                self.write_parquet(expr, d / f"part-{k:05d}.parquet", step=f"{stem} part {k + 1} of {len(exprs)}")
        t = self.read(d, role=identifier(stem))
        self._parts[id(t)] = str(d)
        return t

    def close(self) -> None:
        # Temporary tables and views go with the connection (no DROP each); scratch directories
        # are removed here.
        for handle in self._temp:
            if isinstance(handle, tuple) and handle[0] == "dir":
                shutil.rmtree(handle[1], ignore_errors=True)
        self._temp.clear()
        self._made.clear()
        self._parts.clear()
        self.con.disconnect()

    def discard(self, table: "ibis.Table") -> None:
        d = self._parts.pop(id(table), None)
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)
            if ("dir", d) in self._temp:
                self._temp.remove(("dir", d))
        super().discard(table)

    @property
    def bounded_memory(self) -> bool:
        return True

    @property
    def memory_bytes(self) -> int | None:
        # DuckDB shows its limit rounded to a tenth of a unit ("13.0 GiB" for '14GB'; its default,
        # 80% of RAM, when none was given). It takes a limit beyond the machine's RAM as given:
        # what its queries may use is then the RAM.
        try:
            shown = self.con.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        except Exception:  # noqa: BLE001 - a limit that cannot be read: the sizes measured here
            return None
        limit = memory_size(shown)
        ram = _physical_memory()
        return min(limit, ram) if limit and ram else limit

    def _fetch(self, expr) -> pa.Table:
        # Ibis 12's DuckDB to_pyarrow() imports its pandas converter, which imports pandas:
        # a quarter of a second of every command's start-up, for a conversion that needs only
        # pyarrow. The same fetch and the same conversion to the expression's schema (Ibis'
        # PyArrowData, with DuckDB's null-typed columns as in Ibis' DuckDBPyArrowData), without
        # it. Relies on Ibis' _to_duckdb_relation (registers in-memory tables, compiles);
        # Ibis is pinned in pyproject.toml and tests/test_engines.py covers every fetch.
        with self._zip_plans(expr):
            table = _typed(self.con._to_duckdb_relation(expr), expr.schema()).to_arrow_table()
        return expr.__pyarrow_result__(table, data_mapper=_ArrowData)

    @contextlib.contextmanager
    def _zip_plans(self, expr):
        """Run a query that reads a zip (:meth:`zip`) with the join sides as written. DuckDB
        estimates a ``POSITIONAL JOIN`` at 0 rows, so it would build its hash tables on the
        billion zipped rows rather than on the (small) other side; abcde always writes the zipped
        table on the left (the probe side) of its joins."""
        # The tables the expression reads, from its graph (compiling it to SQL to look would double
        # the compile time of every query: a tenth of a second of a small command).
        zipped = bool(self._zips) and any(
            t.name in self._zips for t in expr.op().find(ops.DatabaseTable))
        if zipped:
            self.con.raw_sql("SET disabled_optimizers = 'build_side_probe_side'")
        try:
            yield
        finally:
            if zipped:
                self.con.raw_sql("RESET disabled_optimizers")

    def _parquet_target(self, path, *, is_dir: bool) -> str:
        # DuckDB reads a directory of part files (as Spark writes them) through a glob.
        return f"{str(path).rstrip('/')}/**/*.parquet" if is_dir else str(path)

    @property
    def persistent(self) -> bool:
        return bool(self.settings.get("database"))

    def stored(self, name: str) -> "ibis.Table | None":
        if not self.persistent:
            return None
        try:  # (Ibis' list_tables fails on this DuckDB version; a missing table raises here)
            return self.con.table(name)
        except Exception:
            return None

    def store(self, name: str, expr: "ibis.Table") -> "ibis.Table":
        try:
            with self._zip_plans(expr):
                return self.con.create_table(name, expr, overwrite=True)
        except Exception as exc:
            raise EngineError(self.failure(f"keep {name}", exc)) from exc

    def _create_temp(self, name: str, expr: "ibis.Table") -> "ibis.Table":
        # Ibis' create_table(temp=True), its statements alone: the table made with the expression's
        # column types, then filled. (Ibis also asks DuckDB for its current catalog and schema at
        # every call, two more round trips of each of a command's few temporary tables.)
        schema = expr.schema()
        if schema.null_fields:
            raise EngineError(f"Cannot keep columns of no type (NULL) in a table: {', '.join(schema.null_fields)}.")
        dialect = self.con.dialect
        table = f'temp.main."{name}"'
        defs = ", ".join(d.sql(dialect) for d in schema.to_sqlglot_column_defs(dialect))
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in schema)
        self.con._run_pre_execute_hooks(expr)  # registers the in-memory tables it reads, as create_table does
        with self._zip_plans(expr):
            self.con.raw_sql(f"CREATE TEMP TABLE {table} ({defs})")
            self._temp.append(name)
            self.con.raw_sql(f"INSERT INTO {table} ({cols}) {self.con.compile(expr)}")
        return self.con.table(name, database=("temp", "main"))

    def _drop_temp(self, handle) -> None:
        if isinstance(handle, tuple) and handle[0] == "view":
            self.con.raw_sql(f'DROP VIEW IF EXISTS "{handle[1]}"')
        elif isinstance(handle, tuple):  # ("dir", path): a scratch directory
            shutil.rmtree(handle[1], ignore_errors=True)
        else:  # a temporary table (its name is letters, digits and '_': temp_name)
            self.con.raw_sql(f'DROP TABLE IF EXISTS temp.main."{handle}"')

    def _to_parquet(self, expr, path: str) -> None:
        with self._zip_plans(expr):
            self.con.to_parquet(expr, path)

    def write_outputs(self, out, tables: dict, texts: dict | None = None) -> list[str]:
        """Write ``{file name: table expression}`` as Parquet and ``{file name: text}``
        into the directory ``out``; returns the written paths.

        The files are written into a temporary folder first and moved in at the end,
        so a failure leaves no partial output. ``out`` must be new, empty, or an earlier
        output of the same files, which is replaced; a directory holding anything else is
        refused (:meth:`~abcde.engine.base.Engine.check_output_dir`).
        """
        texts = texts or {}
        self.check_output_dir(out, tables, texts)

        def write(tmp: Path) -> None:
            for fname, expr in tables.items():
                self.write_parquet(expr, tmp / fname, step=f"write {fname}")
            for fname, text in texts.items():
                (tmp / fname).write_text(text)

        return replace_files(str(out), write)


SPILL_DIR = "abcde-spill"
_STALE = re.compile(r"^(?:duckdb_temp_|abcde-scratch-)(\d+)[_-]")


def remove_stale_spill(directory: Path) -> list[str]:
    """Remove what killed abcde processes left in ``directory``: DuckDB's spill files
    (``duckdb_temp_<pid>_…``) and abcde's scratch parts (``abcde-scratch-<pid>-…``) of processes
    no longer running (a kill leaves tens of GB at a billion items). Returns the names removed."""
    removed = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _STALE.match(entry.name)
        if not m or _alive(int(m.group(1))):
            continue
        try:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            removed.append(entry.name)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


_UNITS = {"": 1, "B": 1, "BYTES": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def memory_size(text: str) -> int | None:
    """Bytes of a memory size as DuckDB shows or takes it (``"13.0 GiB"``, ``"500MB"``, ``"1.5 TB"``);
    None for anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    if m is None or m.group(2).upper() not in _UNITS:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def _physical_memory() -> int | None:
    """The machine's RAM in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


#: Given to every DuckDB database abcde opens: DuckDB never installs (downloads, writing
#: ``~/.duckdb``) nor loads an extension because of what a query or a file asks for (a SQLite file
#: opened as a database would fetch ``sqlite_scanner``). Its own built-in extensions (Parquet, JSON,
#: ICU) are linked in and loaded; a URI input (``s3://``, ``https://``) the user gives is read with
#: the extension Ibis installs for it by name.
NO_AUTO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

#: The bytes at offset 8 of a DuckDB database file (its main header).
DUCKDB_MAGIC = b"DUCK"
_OTHER_FORMATS = ((0, b"SQLite format 3\x00", "a SQLite database (such as a pair sample's judgement store)"),
                  (0, b"PAR1", "a Parquet file"), (0, b"PK\x03\x04", "a zip archive"),
                  (0, b"\x1f\x8b", "a gzip file"))


def check_database_file(database: str | os.PathLike) -> None:
    """Refuse (:class:`InputError`, one line) a ``database`` path that holds anything but a DuckDB
    database file, before DuckDB opens it: DuckDB opens a SQLite file through an extension it would
    download, and opens (and writes to) other files it recognises. Nothing there (or a path DuckDB
    cannot create: its own message says so) is a new database; an empty file is refused, as DuckDB
    cannot open it and it may be someone's (SQLite makes a new store as an empty file). Decided by
    ``os.stat`` and the file's first 16 bytes, read without blocking: a named pipe, a device or a
    directory is never opened."""
    from abcde.util.files import check_input_path, file_kind  # lazy: start-up time

    where = f"The DuckDB database '{os.fspath(database)}'"
    expected = "give a DuckDB database file, or a path where no file is yet (a new database)"
    st = check_input_path(database, where=where, expected=expected)
    if st is None:
        return
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(database, flags)
    except OSError as exc:
        raise InputError(f"Cannot read the DuckDB database '{os.fspath(database)}': "
                         f"{exc.strerror or exc}.") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced since the stat
            raise InputError(f"{where} is {file_kind(mode)}, not a regular file; {expected}.")
        head = os.pread(fd, 16, 0)
    except OSError as exc:
        raise InputError(f"Cannot read the DuckDB database '{os.fspath(database)}': "
                         f"{exc.strerror or exc}.") from None
    finally:
        os.close(fd)
    if head[8:12] == DUCKDB_MAGIC:
        return
    kind = next((k for at, magic, k in _OTHER_FORMATS if head[at:at + len(magic)] == magic), None)
    if not head:  # not made a new database in its place: an empty file may be someone's (a new SQLite store is one)
        raise InputError(f"{where} is an empty file, which DuckDB cannot open (and abcde does not replace); "
                         f"{expected}.")
    if kind is None:
        raise InputError(f"{where} is not a DuckDB database file (it has no DuckDB header); {expected}.")
    raise InputError(f"{where} is {kind}, not a DuckDB database file; {expected}.")


def _configure(con, settings: dict | None = None) -> None:
    """abcde's settings, applied to every connection (those of a connection's client; the memory
    limit and threads are the database's, and given again for a new connection they stay the same)."""
    for key, value in (settings or {}).items():
        text = "'" + value.replace("'", "''") + "'" if isinstance(value, str) else str(int(value))
        con.raw_sql(f"SET {key} = {text}")
    # DuckDB's own progress bar would interleave with abcde's progress display.
    con.raw_sql("SET enable_progress_bar = false")
    # abcde orders every result it shows; not preserving insertion order lets DuckDB
    # materialize intermediate tables in parallel and with less memory.
    con.raw_sql("SET preserve_insertion_order = false")


def _typed(rel, schema):
    """``rel`` with each number or text column whose DuckDB type is not the expression's cast to
    it by DuckDB (a SUM is a HUGEINT where Ibis says int64; a literal a DECIMAL where it says
    float64). Arrow would cast them after the fetch the same way, but its cast functions live in
    ``pyarrow.compute``, whose import costs every command 30 ms; other types are left to Ibis'
    conversion."""
    casts, changed = [], False
    for (name, want), have in zip(schema.items(), rel.types):
        col = '"' + name.replace('"', '""') + '"'
        if (want.is_numeric() or want.is_string() or want.is_boolean()) and not want.is_decimal() \
                and _ibis_type(str(have), want.nullable) != want:
            casts.append(f"CAST({col} AS {DuckDBType.to_string(want)}) AS {col}")
            changed = True
        else:
            casts.append(col)
    return rel.project(", ".join(casts)) if changed else rel


@functools.lru_cache(maxsize=256)
def _ibis_type(duckdb_type: str, nullable: bool) -> dt.DataType:
    """Ibis' reading of a DuckDB type name (it parses the name with sqlglot: kept per name)."""
    return DuckDBType.from_string(duckdb_type, nullable=nullable)


class _ArrowData(PyArrowData):
    """Ibis' Arrow conversion, with null-typed columns made of nulls (as Ibis' DuckDB converter)."""

    @classmethod
    def convert_scalar(cls, scalar: pa.Scalar, dtype: dt.DataType) -> pa.Scalar:
        if dtype.is_null():
            return pa.scalar(None)
        return super().convert_scalar(scalar, dtype)

    @classmethod
    def convert_column(cls, column: pa.Array, dtype: dt.DataType) -> pa.Array:
        if dtype.is_null():
            return pa.nulls(len(column))
        return super().convert_column(column, dtype)
