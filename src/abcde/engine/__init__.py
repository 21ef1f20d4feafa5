"""Engines: the only package that knows which backend runs the Ibis expressions.

:class:`Engine` (``base.py``) is the interface every caller uses; each backend is one
class: :class:`DuckDBEngine` (``duckdb.py``) and :class:`SparkEngine` (``spark.py``,
the only module that imports pyspark). Importing them here registers them with
:func:`connect`.

Every engine class implements the whole interface, and reports its capabilities
without a connection:

>>> for member in sorted(Engine.__abstractmethods__):  # what an engine class implements
...     print(member)
_create_temp
_drop_temp
_parquet_target
_to_parquet
atomic_outputs
open
prefers_window_sums
write_outputs
writes_part_directories
>>> [cls.__name__ for cls in (DuckDBEngine, SparkEngine) if cls.__abstractmethods__]
[]
>>> for eng in (DuckDBEngine(con=None), SparkEngine(con=None, session=None)):
...     print(eng.name, eng.prefers_window_sums, eng.writes_part_directories, eng.atomic_outputs)
duckdb False False True
spark True True False
>>> Engine(con=None)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
TypeError: Can't instantiate abstract class Engine

:func:`connect` makes the class its name registers; temporary tables go with
:meth:`Engine.release`:

>>> import ibis, pyarrow as pa
>>> eng = connect("duckdb")
>>> type(eng).__name__, eng.name
('DuckDBEngine', 'duckdb')
>>> t = eng.materialize(ibis.memtable(pa.table({"x": [1, 2]})), "doctest")
>>> eng.one(t.aggregate(s=t.x.sum()))
{'s': 3}
>>> temp = "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__abcde_doctest_%'"
>>> eng.con.raw_sql(temp).fetchall()
[(1,)]
>>> eng.release()
>>> eng.con.raw_sql(temp).fetchall()
[(0,)]
"""

from abcde.engine.base import CSV_SUFFIXES, PARQUET_SUFFIXES, Engine, connect, resolve
from abcde.engine.duckdb import DuckDBEngine
from abcde.engine.spark import SparkEngine

__all__ = ["CSV_SUFFIXES", "PARQUET_SUFFIXES", "DuckDBEngine", "Engine", "SparkEngine", "connect", "resolve"]
