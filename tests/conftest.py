import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture
def write(tmp_path):
    """write(name, **columns) -> path of a Parquet (or CSV, by extension) file in tmp_path."""

    def _write(name: str, **cols):
        path = tmp_path / name
        table = pa.table(cols)
        if name.endswith(".csv"):
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, path)
        else:
            pq.write_table(table, path)
        return path

    return _write


@pytest.fixture
def small(write):
    """A small Base/Exp/items triple on disk (Parquet)."""
    base = write("base.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "a", "b", "b"])
    exp = write("exp.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "c", "c", "b"])
    items = write(
        "items.parquet",
        item_id=[1, 2, 3, 4, 5],
        weight=[1.0, 2.0, 3.0, 4.0, 5.0],
        source=["wiki", "web", "wiki", "web", "wiki"],
    )
    return {"base": base, "exp": exp, "items": items}
