"""Engines: the only module that knows which backend runs the Ibis expressions.

DuckDB (embedded, out-of-core) is the default; PySpark is the distributed engine.
Every metric module builds Ibis expressions and hands them to an :class:`Engine`
to read inputs, materialize intermediate tables (named ``__abcde_*``) and fetch
small results. The expressions are the same for every engine.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ibis
import pyarrow as pa

from abcde.errors import EngineError, InputError, MissingDependencyError
from abcde.util.files import replace_files

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
    session: Any = None  # the SparkSession, for the Spark engine
    _temp: list = field(default_factory=list)

    @property
    def prefers_window_sums(self) -> bool:
        """Whether per-group totals are faster as window sums than as a group-by joined
        back (Spark: yes; DuckDB: no). Both give the same numbers."""
        return self.name == "spark"

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
            return ibis.memtable(source)
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
            name = path.name.lower()
            is_dir = path.is_dir()
            if not is_dir and not any(ch in str(path) for ch in "*?[") and not path.exists():
                raise InputError(f"The {role} file '{path}' does not exist.")
        table_name = f"__abcde_{role}_{next(_counter)}"
        try:
            if is_dir or name.endswith(PARQUET_SUFFIXES):
                # Spark reads a directory of part files (and globs) natively.
                target = f"{str(path).rstrip('/')}/**/*.parquet" if is_dir and self.name == "duckdb" else str(path)
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
            first = _first_line(exc)
            raise InputError(f"Cannot read the {role} file '{path}': {first}") from exc
        return t

    # -- running ---------------------------------------------------------
    def materialize(self, expr: "ibis.Table", stem: str) -> "ibis.Table":
        """Compute ``expr`` once into a temporary engine table ``__abcde_<stem>_N``."""
        name = f"__abcde_{stem}_{next(_counter)}"
        try:
            if self.name == "spark":
                # Spark has no temporary tables: a persisted DataFrame (memory, then
                # disk) registered as a temporary view, released with the engine.
                # (Not Ibis' .cache(): an expression over in-memory tables only would
                # be cached in Ibis' default backend, not here.)
                df = self.session.sql(self.con.compile(expr)).persist()
                df.count()  # compute it now, so a failure names this step
                df.createOrReplaceTempView(name)
                self._temp.append((name, df))
                return self.con.table(name)
            t = self.con.create_table(name, expr, temp=True)
        except Exception as exc:
            raise EngineError(f"Step '{stem}' failed in {self.name}: {_first_line(exc)}") from exc
        self._temp.append(name)
        return t

    def to_arrow(self, expr, *, step: str = "query") -> pa.Table:
        try:
            return self.con.to_pyarrow(expr)
        except Exception as exc:
            raise EngineError(f"Step '{step}' failed in {self.name}: {_first_line(exc)}") from exc

    def rows(self, expr, *, step: str = "query") -> list[dict]:
        """Fetch a (small) table expression as a list of dicts."""
        return self.to_arrow(expr, step=step).to_pylist()

    def one(self, expr, *, step: str = "query") -> dict:
        """Fetch a one-row table expression as a dict."""
        rows = self.rows(expr, step=step)
        return rows[0] if rows else {}

    def write_parquet(self, expr, path, *, step: str = "write") -> None:
        try:
            if self.name == "spark":  # a directory of part files, as Spark writes
                self.con.to_parquet(expr, str(path), mode="overwrite")
            else:
                self.con.to_parquet(expr, str(path))
        except Exception as exc:
            raise EngineError(f"Step '{step}' failed writing '{path}' in {self.name}: {exc}") from exc

    def write_outputs(self, out, tables: dict, texts: dict | None = None) -> list[str]:
        """Write ``{file name: table expression}`` as Parquet and ``{file name: text}``
        into the directory ``out``; returns the written paths.

        DuckDB writes into a temporary folder first and moves the files in at the end,
        so a failure leaves no partial output. Spark writes each table as a directory of
        part files straight to ``out`` (any path or URI Spark can write: a shared file
        system, ``hdfs://``, ``s3a://``, ``dbfs:/``), replacing what was there; the texts
        go through pyarrow's file systems.
        """
        texts = texts or {}
        out_s = str(out)
        if self.name == "spark":
            written = []
            for fname, expr in tables.items():
                dest = f"{out_s.rstrip('/')}/{fname}"
                self.write_parquet(expr, dest, step=f"write {fname}")
                written.append(dest)
            if texts:
                import pyarrow.fs as pafs

                if out_s.startswith("dbfs:/"):  # Databricks mounts DBFS at /dbfs on the driver
                    fs, base = pafs.LocalFileSystem(), "/dbfs/" + out_s[len("dbfs:/"):].lstrip("/")
                elif "://" in out_s:
                    fs, base = pafs.FileSystem.from_uri(out_s)
                else:
                    fs, base = pafs.LocalFileSystem(), str(Path(out_s).resolve())
                fs.create_dir(base, recursive=True)
                for fname, text in texts.items():
                    with fs.open_output_stream(f"{base}/{fname}") as fh:
                        fh.write(text.encode())
                    written.append(f"{out_s.rstrip('/')}/{fname}")
            return written

        def write(tmp: Path) -> None:
            for fname, expr in tables.items():
                self.write_parquet(expr, tmp / fname, step=f"write {fname}")
            for fname, text in texts.items():
                (tmp / fname).write_text(text)

        return replace_files(out_s, write)

    def release(self) -> None:
        """Drop the temporary tables this engine made."""
        while self._temp:
            t = self._temp.pop()
            try:
                if isinstance(t, str):
                    self.con.drop_table(t, force=True)
                else:
                    name, df = t
                    self.session.catalog.dropTempView(name)
                    df.unpersist()
            except Exception:  # pragma: no cover - best effort cleanup
                pass


def _first_line(exc: Exception) -> str:
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
    return lines[0]


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
    if engine == "spark":
        return _connect_spark(master=master, remote=remote, threads=threads, memory_limit=memory_limit,
                              conf=spark_conf or {}, session=session)
    if engine != "duckdb":
        raise InputError(f"Unknown engine {engine!r}. Available engines: 'duckdb', 'spark'.")
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


SPARK_INSTALL = "pip install 'abcde[spark]'"
JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless (or set JAVA_HOME to a Java 17+)"


def _local_cores(master: str) -> int:
    """Cores of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master."""
    inner = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    first = inner.split(",")[0].strip()
    return os.cpu_count() or 1 if first == "*" else max(1, int(first)) if first.isdigit() else 1


def _spark_double_literals() -> None:
    """Make Ibis write float literals for Spark as ``CAST(x AS DOUBLE)``.

    Ibis 12 renders ``ibis.literal(1.0)`` as ``1.0``, which Spark SQL reads as a
    DECIMAL(2,1): a column of such literals (the default weight 1) then sums and
    divides in decimal arithmetic, rounded to 6 decimals (a JaccardDistance of
    0.1654666… came out as 0.165466). Idempotent.
    """
    from ibis.backends.sql.compilers.pyspark import PySparkCompiler

    if getattr(PySparkCompiler, "_abcde_double_literals", False):
        return
    original = PySparkCompiler.visit_NonNullLiteral

    def visit_NonNullLiteral(self, op, *, value, dtype):
        result = original(self, op, value=value, dtype=dtype)
        if dtype.is_floating() and result is not None:
            return self.cast(result, dtype)
        return result

    PySparkCompiler.visit_NonNullLiteral = visit_NonNullLiteral
    PySparkCompiler._abcde_double_literals = True


def _connect_spark(*, master, remote, threads, memory_limit, conf, session) -> Engine:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingDependencyError(f"The Spark engine needs pyspark, which is not installed: {SPARK_INSTALL}") from None
    if session is None and master is None and remote is None:
        session = SparkSession.getActiveSession()
        if session is None and (os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("DATABRICKS_RUNTIME_VERSION")):
            # Launched by spark-submit (or a Databricks job): its master and settings rule.
            try:
                session = SparkSession.builder.appName("abcde").getOrCreate()
            except Exception as exc:
                raise EngineError(f"Cannot start Spark from spark-submit's settings: {_first_line(exc)}") from exc
    if session is None:
        if remote is None and not (os.environ.get("JAVA_HOME") or shutil.which("java")):
            raise MissingDependencyError(f"The Spark engine needs Java, which is not found: {JAVA_INSTALL}")
        builder = SparkSession.builder.appName("abcde")
        if remote is not None:
            builder = builder.remote(remote)
        else:
            master = master or f"local[{int(threads) if threads else '*'}]"
            builder = builder.master(master)
            settings = {
                "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false",
                "spark.sql.session.timeZone": "UTC",
                "spark.sql.execution.arrow.pyspark.enabled": "true",
            }
            if master.startswith("local"):
                # Spark's default of 200 shuffle partitions makes a local run 3-4x slower
                # (measured at 200k items on local[2]); a few per core is enough here.
                settings["spark.sql.shuffle.partitions"] = str(4 * _local_cores(master))
            if memory_limit:
                settings["spark.driver.memory"] = str(memory_limit)
            for k, v in {**settings, **conf}.items():
                builder = builder.config(k, v)
        try:
            session = builder.getOrCreate()
        except Exception as exc:
            raise EngineError(f"Cannot start Spark (master={master!r}, remote={remote!r}): {_first_line(exc)}") from exc
        if remote is None:
            session.sparkContext.setLogLevel("ERROR")
    _spark_double_literals()
    try:
        con = ibis.pyspark.connect(session)
    except Exception as exc:
        raise EngineError(f"Cannot connect Ibis to Spark: {_first_line(exc)}") from exc
    return Engine(name="spark", con=con, settings={"master": master, "remote": remote}, session=session)


def resolve(engine: Engine | str | None) -> Engine:
    """An :class:`Engine` from an engine, an engine name or ``None`` (DuckDB in memory)."""
    if engine is None:
        return connect()
    if isinstance(engine, str):
        return connect(engine)
    if isinstance(engine, Engine):
        return engine
    raise InputError(f"engine must be an Engine, an engine name or None. Got {type(engine).__name__}.")
