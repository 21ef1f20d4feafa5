"""One test per class of bad input: a clear InputError naming the file, column and ids;
on the CLI exit code 1, a one-line message and no partial output."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.errors import InputError


def test_missing_file(small, tmp_path):
    with pytest.raises(InputError, match=r"base file '.*nope.parquet' does not exist"):
        abcde.impact(tmp_path / "nope.parquet", small["exp"])


def test_missing_column_lists_existing(write, small):
    bad = write("bad.parquet", id=[1, 2], cid=["a", "b"])
    with pytest.raises(InputError, match=r"Column 'item_id' \(item id\) not found in base file '.*bad.parquet'. "
                                         r"Existing columns: 'id', 'cid'"):
        abcde.impact(bad, small["exp"])


def test_renamed_columns_work(write):
    b = write("b.parquet", id=[1, 2], cid=["a", "a"])
    e = write("e.parquet", id=[1, 2], cid=["a", "b"])
    r = abcde.impact(b, e, item_id="id", cluster_id="cid")
    assert r.split_rate == pytest.approx(0.5)


def test_item_in_two_clusters(write, small):
    bad = write("dup.parquet", item_id=[1, 1, 2, 3, 3, 4], cluster_id=["a", "b", "a", "c", "c", "d"])
    with pytest.raises(InputError) as ei:
        abcde.impact(small["base"], bad)
    msg = str(ei.value)
    assert "2 item ids appear in more than one row of exp file" in msg
    assert "first: 1, 3" in msg
    assert "1 of them are in two or more different clusters" in msg


def test_null_item_ids(write, small):
    bad = write("nulls.parquet", item_id=[1, None, 3], cluster_id=["a", "a", "b"])
    with pytest.raises(InputError, match=r"1 rows of base file '.*nulls.parquet' have a null item id in column 'item_id'"):
        abcde.impact(bad, small["exp"])


def test_null_cluster_ids(write, small):
    bad = write("nullc.parquet", item_id=[1, 2, 3], cluster_id=["a", None, None])
    with pytest.raises(InputError, match=r"2 items of exp file '.*nullc.parquet' have a null cluster id in column "
                                         r"'cluster_id' \(first: 2, 3\)"):
        abcde.impact(small["base"], bad)


@pytest.mark.parametrize(
    "value, what",
    [(None, "null"), (math.nan, "NaN"), (math.inf, "infinite"), (0.0, "zero or negative"), (-1.0, "zero or negative")],
)
def test_bad_weights(write, small, value, what):
    items = write("w.parquet", item_id=[1, 2, 3, 4, 5], weight=pa.array([1.0, value, 1.0, 1.0, 1.0], pa.float64()))
    with pytest.raises(InputError, match=rf"1 items in items file '.*w.parquet' have a {what} weight in column "
                                         rf"'weight' \(first: 2: "):
        abcde.impact(small["base"], small["exp"], items=items)


def test_non_numeric_weight(write, small):
    items = write("w.parquet", item_id=[1, 2, 3, 4, 5], weight=["1", "2", "3", "4", "5"])
    with pytest.raises(InputError, match="weights must be numbers"):
        abcde.impact(small["base"], small["exp"], items=items)


def test_item_missing_from_items_table(write, small):
    items = write("w.parquet", item_id=[1, 2, 3], weight=[1.0, 1.0, 1.0])
    with pytest.raises(InputError, match=r"2 items of the clusterings have no row in the items file .* \(first: 4, 5\)"):
        abcde.impact(small["base"], small["exp"], items=items)


def test_empty_clustering(write, small):
    empty = write("empty.parquet", item_id=pa.array([], pa.int64()), cluster_id=pa.array([], pa.string()))
    with pytest.raises(InputError, match=r"The exp file '.*empty.parquet' is empty"):
        abcde.impact(small["base"], empty)


def test_no_items_in_common(write, small):
    other = write("other.parquet", item_id=[10, 11], cluster_id=["x", "x"])
    with pytest.raises(InputError, match=r"have no item in common \(5 items only in base, first: 1, 2, 3, 4, 5; "
                                         r"2 only in exp, first: 10, 11\)"):
        abcde.impact(small["base"], other)


def test_corrupt_parquet(tmp_path, small):
    bad = tmp_path / "corrupt.parquet"
    bad.write_bytes(b"PAR1 this is not really parquet")
    with pytest.raises(InputError, match=r"Cannot read the base file '.*corrupt.parquet'"):
        abcde.impact(bad, small["exp"])


def test_corrupt_csv(tmp_path, small):
    bad = tmp_path / "corrupt.csv"
    bad.write_bytes(b'item_id,cluster_id\n1,"a\n2,b,c,d\n\x00\x01')
    with pytest.raises(InputError, match=r"base file '.*corrupt.csv'"):
        abcde.impact(bad, small["exp"])


def test_unknown_extension(tmp_path, small):
    bad = tmp_path / "base.txt"
    bad.write_text("item_id,cluster_id\n1,a\n")
    with pytest.raises(InputError, match="Cannot tell the format"):
        abcde.impact(bad, small["exp"])


def test_id_types_cannot_be_matched(write, small):
    strings = write("s.parquet", item_id=["1", "2", "3"], cluster_id=["a", "a", "b"])
    with pytest.raises(InputError, match=r"Item ids cannot be matched between inputs: they are integers in some "
                                         r"and strings in others"):
        abcde.impact(small["base"], strings)


def test_integer_widths_are_matched(write, small):
    narrow = write("n.parquet", item_id=pa.array([1, 2, 3, 4, 5], pa.int32()), cluster_id=["a"] * 5)
    r = abcde.impact(small["base"], narrow)
    # Base {1,2,3}, {4,5} against one Exp cluster: merge 2/5 for items 1-3, 3/5 for 4 and 5; no split.
    assert (r.items, r.split_rate) == (5, 0.0)
    assert r.merge_rate == pytest.approx(12 / 25) and r.jaccard_distance == pytest.approx(12 / 25)


def test_unknown_slice_column(small):
    with pytest.raises(InputError, match=r"Slice column 'colour' not found .* Attribute columns: 'source'"):
        abcde.impact(small["base"], small["exp"], items=small["items"], slice_by=["colour"])


def test_cli_error_is_one_line_exit_1_and_no_partial_output(write, small, tmp_path):
    bad = write("dup.parquet", item_id=[1, 1], cluster_id=["a", "b"])
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["impact", "--base", str(small["base"]), "--exp", str(bad), "--out", str(out)])
    assert res.exit_code == 1
    assert "Error: 1 item ids appear in more than one row of exp file" in res.output
    assert "Traceback" not in res.output
    assert not out.exists()


def test_duplicate_only_among_excluded_items_is_still_reported(write, small):
    # item 9 is only in base, twice: excluded by restriction, but the input is still malformed
    bad = write("b.parquet", item_id=[1, 2, 3, 4, 5, 9, 9], cluster_id=["a", "a", "a", "b", "b", "x", "y"])
    with pytest.raises(InputError, match=r"1 item ids appear in more than one row of base file .* \(first: 9\)"):
        abcde.impact(bad, small["exp"])


def test_duplicate_rows_in_items_table(write, small):
    items = write("i.parquet", item_id=[1, 2, 3, 4, 5, 5], weight=[1.0] * 6)
    with pytest.raises(InputError, match=r"1 item ids appear in more than one row of items file .* \(first: 5\)\. "
                                         r"The items table needs one row per item"):
        abcde.impact(small["base"], small["exp"], items=items)


def test_duplicate_among_items_table_only_rows(write, small):
    items = write("i.parquet", item_id=[1, 2, 3, 4, 5, 8, 8], weight=[1.0] * 7)
    with pytest.raises(InputError, match=r"1 item ids appear in more than one row of items file .* \(first: 8\)"):
        abcde.impact(small["base"], small["exp"], items=items)


def test_duplicate_in_base_with_items_table(write, small):
    bad = write("b.parquet", item_id=[1, 2, 3, 4, 5, 5], cluster_id=["a", "a", "a", "b", "b", "c"])
    with pytest.raises(InputError, match=r"1 item ids appear in more than one row of base file .* \(first: 5\); "
                                         r"1 of them are in two or more different clusters"):
        abcde.impact(bad, small["exp"], items=small["items"])


@pytest.mark.parametrize("command", [
    ["impact", "--out", "{f}/x"],
    ["explore", "sample", "--size", "10", "--seed", "1", "--out", "{f}/s.parquet"],
    ["pairs", "--budget", "5", "--seed", "1", "--out", "{f}/p"],
    ["report", "--out", "{tmp}/r.html", "--markdown", "{f}/r.md"],
])
def test_a_file_in_the_way_of_an_output_is_one_line_and_nothing_is_half_written(small, tmp_path, command):
    """Every command that writes: a file where a directory is needed gives exit 1, one line naming
    the path, no traceback, and nothing written (the report writes its HTML and Markdown together)."""
    f = tmp_path / "afile"
    f.write_text("x")
    args = [a.format(f=f, tmp=tmp_path) for a in command]
    head = args[:2] if args[0] == "explore" else args[:1]
    r = CliRunner().invoke(main, [*head, "--base", str(small["base"]), "--exp", str(small["exp"]), *args[len(head):]])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and str(f) in r.output and "a file stands where a directory is needed" in r.output
    assert f.read_text() == "x"
    assert not (tmp_path / "r.html").exists()
