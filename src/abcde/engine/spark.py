"""PySpark, the distributed engine: a local master, a cluster, or Spark Connect.

The only module that imports pyspark, and only when a Spark engine is opened, so
abcde imports (and runs on DuckDB) without it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import ibis

from abcde.engine.base import Engine, first_line
from abcde.errors import EngineError, MissingDependencyError

SPARK_INSTALL = "pip install 'abcde[spark]'"
JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless (or set JAVA_HOME to a Java 17+)"


@ibis.udf.scalar.builtin(name="conv")
def _conv(num: str, from_base: int, to_base: int) -> str:
    """Spark SQL's ``conv``: a number's digits in one base written in another."""


class SparkEngine(Engine):
    """Spark through Ibis: persisted temporary views, Parquet as directories of part
    files, outputs to any path or URI Spark can write."""

    name = "spark"

    def __init__(self, con, settings: dict | None = None, session=None) -> None:
        super().__init__(con, settings)
        self.session = session  # the SparkSession

    @property
    def prefers_window_sums(self) -> bool:
        # Measured at 10M items: window sums are 1.6x faster than group-by + join back.
        return True

    def hex_value(self, text, digits: int):
        """Spark's ``conv`` from base 16 (the same number as the portable digit-by-digit sum)."""
        return _conv(text.substr(0, digits), 16, 10).cast("int64").cast("float64")

    @property
    def writes_part_directories(self) -> bool:
        return True

    @property
    def atomic_outputs(self) -> bool:
        return False

    @classmethod
    def open(cls, *, master=None, remote=None, threads=None, memory_limit=None, spark_conf=None, session=None,
             **_other_engines) -> SparkEngine:
        """The given session, else the active one (``spark-submit``, Databricks), else a
        new session on ``master`` (default ``local[threads or *]``) or ``remote``."""
        conf = spark_conf or {}
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise MissingDependencyError(
                f"The Spark engine needs pyspark, which is not installed: {SPARK_INSTALL}") from None
        if session is None and master is None and remote is None:
            session = SparkSession.getActiveSession()
            if session is None and (os.environ.get("PYSPARK_GATEWAY_PORT")
                                    or os.environ.get("DATABRICKS_RUNTIME_VERSION")):
                # Launched by spark-submit (or a Databricks job): its master and settings rule.
                try:
                    session = SparkSession.builder.appName("abcde").getOrCreate()
                except Exception as exc:
                    raise EngineError(f"Cannot start Spark from spark-submit's settings: {first_line(exc)}") from exc
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
                raise EngineError(
                    f"Cannot start Spark (master={master!r}, remote={remote!r}): {first_line(exc)}") from exc
            if remote is None:
                session.sparkContext.setLogLevel("ERROR")
        _spark_double_literals()
        try:
            con = ibis.pyspark.connect(session)
        except Exception as exc:
            raise EngineError(f"Cannot connect Ibis to Spark: {first_line(exc)}") from exc
        return cls(con, {"master": master, "remote": remote}, session=session)

    def _fetch(self, expr) -> "pa.Table":
        # Spark's own Arrow transfer (DataFrame.toArrow). Ibis' PySpark to_pyarrow() goes through
        # pandas, where a bigint column holding a null becomes float64: ids above 2^53 came back
        # rounded (two clusters could share one), ids near 2^63 failed. The result is converted to
        # the expression's schema as Ibis does.
        table = expr.as_table()
        self.con._run_pre_execute_hooks(table)  # registers the in-memory tables it reads
        return expr.__pyarrow_result__(self.session.sql(self.con.compile(table)).toArrow())

    def _parquet_target(self, path, *, is_dir: bool) -> str:
        # Spark reads a directory of part files (and globs) natively.
        return str(path)

    def _create_temp(self, name: str, expr: "ibis.Table") -> "ibis.Table":
        # Spark has no temporary tables: a persisted DataFrame (memory, then disk)
        # registered as a temporary view, released with the engine. (Not Ibis' .cache():
        # an expression over in-memory tables only would be cached in Ibis' default
        # backend, not here.)
        # The in-memory tables it reads (e.g. cells named by the driver) registered as views first, as
        # Ibis does before it runs an expression itself.
        self.con._run_pre_execute_hooks(expr)
        df = self.session.sql(self.con.compile(expr)).persist()
        df.count()  # compute it now, so a failure names this step
        df.createOrReplaceTempView(name)
        self._temp.append((name, df))
        return self.con.table(name)

    def _drop_temp(self, handle) -> None:
        name, df = handle
        self.session.catalog.dropTempView(name)
        df.unpersist()

    def _to_parquet(self, expr, path: str) -> None:
        # A directory of part files, as Spark writes; replaces what was there.
        self.con.to_parquet(expr, path, mode="overwrite")

    def write_outputs(self, out, tables: dict, texts: dict | None = None) -> list[str]:
        """Write ``{file name: table expression}`` as Parquet and ``{file name: text}``
        into the directory ``out``; returns the written paths.

        Each table is a directory of part files written straight to ``out`` (any path or
        URI Spark can write: a shared file system, ``hdfs://``, ``s3a://``, ``dbfs:/``),
        replacing what was there; the texts go through pyarrow's file systems. A local
        ``out`` must be new, empty, or an earlier output of the same files; a directory
        holding anything else is refused
        (:meth:`~abcde.engine.base.Engine.check_output_dir`).
        """
        texts = texts or {}
        self.check_output_dir(out, tables, texts)
        out_s = str(out)
        written = []
        for fname, expr in tables.items():
            dest = f"{out_s.rstrip('/')}/{fname}"
            self.write_parquet(expr, dest, step=f"write {fname}")
            written.append(dest)
        if texts:
            import pyarrow.fs as pafs  # lazy: only texts written by Spark need it

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
    # Lazy: Ibis' PySpark compiler is needed only once a Spark engine is opened.
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
