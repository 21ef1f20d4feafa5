"""The Python API: table types in, engine settings, results out."""

from __future__ import annotations

import json

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import abcde

BASE = {"item_id": [1, 2, 3, 4, 5], "cluster_id": ["a", "a", "a", "b", "b"]}
EXP = {"item_id": [1, 2, 3, 4, 5], "cluster_id": ["a", "a", "c", "c", "b"]}


@pytest.mark.parametrize("make", [pd.DataFrame, pl.DataFrame, pa.table], ids=["pandas", "polars", "arrow"])
def test_table_types_give_the_same_result(make, small):
    """Worked by hand: Base {1,2,3},{4,5}, Exp {1,2},{3,4},{5}, every weight 1. Per item
    (split, merge, Jaccard distance): 1 and 2 (1/3, 0, 1/3); 3 (2/3, 1/2, 3/4); 4 (1/2, 1/2, 2/3);
    5 (1/2, 0, 1/2); the means 7/15, 1/5, 31/60 — from every table type and from the files."""
    for r in (abcde.impact(make(BASE), make(EXP)), abcde.impact(small["base"], small["exp"])):
        assert r.items == 5 and r.affected_items == 5 and r.total_weight == 5.0
        assert r.split_rate == pytest.approx(7 / 15, rel=1e-12)
        assert r.merge_rate == pytest.approx(1 / 5, rel=1e-12)
        assert r.jaccard_distance == pytest.approx(31 / 60, rel=1e-12)


def test_dataframes_are_read_through_arrow_not_ibis_pandas_reader(monkeypatch):
    """A pandas DataFrame never reaches Ibis's pandas reader, which reads an option pandas 3 deprecates
    (a warning, an error under the suite's rules): abcde gives Ibis Arrow (issue 39, part 9)."""
    import ibis.formats.pandas as ibis_pandas

    def refuse(*args, **kwargs):
        raise AssertionError("Ibis's pandas reader was used")

    monkeypatch.setattr(ibis_pandas.PandasData, "infer_table", refuse)
    r = abcde.impact(pd.DataFrame(BASE), pd.DataFrame(EXP), items=pd.DataFrame({"item_id": [1, 2, 3, 4, 5],
                                                                              "weight": [1.0] * 5}))
    assert r.split_rate == pytest.approx(7 / 15, rel=1e-12)


def test_a_dataframe_column_of_mixed_types_is_one_clear_error():
    from abcde.errors import InputError

    with pytest.raises(InputError, match="column 'cluster_id'.*mixes types"):
        abcde.impact(pd.DataFrame({"item_id": [1, 2], "cluster_id": ["a", 1.5]}), pd.DataFrame(EXP))


def test_database_file_memory_limit_and_threads(tmp_path, small):
    db = tmp_path / "work.duckdb"
    eng = abcde.connect("duckdb", database=db, memory_limit="512MB", threads=1)
    r = abcde.impact(small["base"], small["exp"], engine=eng)
    assert db.exists()
    assert eng.settings == {"database": str(db), "memory_limit": "512MB", "threads": 1}
    limit = eng.con.raw_sql("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert limit.replace(" ", "").upper().startswith(("512", "488"))  # DuckDB reports MiB
    assert (r.items, r.split_rate, r.merge_rate) == (5, pytest.approx(7 / 15), pytest.approx(1 / 5))
    eng.release()


def test_results_are_plain_python_and_json_serializable(small):
    r = abcde.impact(small["base"], small["exp"], items=small["items"], slice_by=["source"])
    for name in ("split_rate", "merge_rate", "jaccard_distance", "total_weight", "affected_weight"):
        assert type(getattr(r, name)) is float
    assert type(r.items) is int and type(r.affected_items) is int
    json.dumps(r.to_dict(), allow_nan=False)


def test_slices_by_two_columns_partition_the_contribution(write):
    base = write("b.parquet", item_id=list(range(8)), cluster_id=[0, 0, 0, 0, 1, 1, 1, 1])
    exp = write("e.parquet", item_id=list(range(8)), cluster_id=[0, 0, 1, 1, 1, 1, 2, 2])
    items = write("i.parquet", item_id=list(range(8)), weight=[1.0, 2, 3, 4, 5, 6, 7, 8],
                  a=["x", "y"] * 4, b=["p", "p", "q", "q"] * 2)
    r = abcde.impact(base, exp, items=items, slice_by=["a,b", ("a",)])
    assert set(r.slices) == {"a,b", "a"}
    assert sum(row["contribution"] for row in r.slices["a,b"]) == pytest.approx(r.jaccard_distance)
    assert sum(row["items"] for row in r.slices["a"]) == 8


def test_lookup_by_id(small):
    r = abcde.impact(small["base"], small["exp"])
    (row,) = r.lookup([3])
    # item 3: Base {1,2,3}, Exp {3,4}: split 2/3, merge 1/2, JD (2+1)/4
    assert row["split_rate"] == pytest.approx(2 / 3)
    assert row["merge_rate"] == pytest.approx(1 / 2)
    assert row["jaccard_distance"] == pytest.approx(3 / 4)
    assert r.lookup([42]) == []


def test_every_public_name_is_what_it_says_even_after_its_subpackages_are_imported():
    """A lazily exported name equal to a subpackage's name (``abcde.quality``) is replaced by the
    subpackage as soon as anything imports from it: the name must then still be the function."""
    import importlib
    import pkgutil

    subpackages = {m.name for m in pkgutil.iter_modules(abcde.__path__)}
    assert not subpackages & set(abcde.__all__), "public names that a subpackage import would shadow"
    for name in subpackages:
        importlib.import_module(f"abcde.{name}")
    for name in abcde.__all__:
        assert not isinstance(getattr(abcde, name), type(abcde)), f"abcde.{name} is a module"
