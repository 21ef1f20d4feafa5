"""Judgement files another program wrote, and exports where a sample reads judgements (issue 50,
classes 2 and 3).

- abcde undoes its formula mark (a leading ``'``) only in the rows of a CSV it wrote and marked so
  (the column ``abcde_formula_mark``), or in a file an older abcde wrote (its exact columns, and pair
  ids that name the ids with the mark undone): a value of a file another program wrote that starts
  with ``'`` is read as it is, never turned into another item's id.
- An integer item id is exactly an integer's text: ``1_0``, ``" 12"``, ``"١٣"``, ``+5``, ``007`` are
  refused in one line naming the file, the row and the value, never read as 10, 12, 13, 5, 7.
- ``judge export`` never writes into the sample directory (where ``quality DIR`` reads judgement
  files beside the store) nor to where one of its judgement files links: refused in one line,
  nothing written, a path outside suggested.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError
from abcde.judging import JudgementStore
from abcde.quality import estimate_quality
from abcde.quality.draw import draw_pair_sample
from abcde.samples.judgements import load_judgements, read_table_file
from abcde.sampling.ids import pair_id
from abcde.util.files import write_table_file

#: The column that marks the rows of a CSV abcde wrote whose formula cells it neutralised.
FORMULA_MARK_COLUMN = "abcde_formula_mark"


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    """A CSV as another program writes it (Python's csv module: every value as it is)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


# ----------------------------------------------------------------------------- class 2: the formula mark
#: Item ids that start with the mark, each beside the id it would become if the mark were undone.
QUOTED = ["'-1", "-1", "'=x", "=x", "''", "'", "'plain", "plain"]


def test_a_foreign_files_quoted_ids_are_read_as_they_are(tmp_path):
    """An item id of another program's file that starts with ' names its own pair, not the pair of the
    id without the quote (which the old reader chose: the judgement landed on another pair)."""
    others = ["b", "c"]
    pair_ids = {pair_id(a, b) for a in QUOTED for b in others}
    rows = [[a, b, "same" if k % 2 else "different"] for k, (a, b) in
            enumerate((a, b) for a in ("'-1", "'=x", "''") for b in others)]
    f = write_csv(tmp_path / "theirs.csv", ["item_a", "item_b", "judgement"], rows)
    got = load_judgements(f, pair_ids=pair_ids, id_type="string").by_pair
    assert got == {pair_id(a, b): j for a, b, j in rows}
    assert [r["item_a"] for r in read_table_file(f, "judgements").to_pylist()] == [r[0] for r in rows]


def test_rows_another_program_adds_to_an_abcde_file_are_read_as_they_are(tmp_path):
    """abcde's marked rows are given back exactly; a row appended by another program (no marker in its
    row) keeps its values, the leading ' included."""
    ours = pa.table({"item_a": ["-1", "=x", "a"], "item_b": ["b", "b", "b"], "judgement": ["same"] * 3})
    f = write_table_file(ours, tmp_path / "j.csv")
    with open(f, newline="") as fh:
        header = next(csv.reader(fh))
    assert header[-1] == FORMULA_MARK_COLUMN
    with open(f, "a", newline="") as fh:
        csv.writer(fh).writerow(["'-1", "c", "different", ""])
    t = read_table_file(f, "judgements")
    assert FORMULA_MARK_COLUMN not in t.column_names
    assert t.column("item_a").to_pylist() == ["-1", "=x", "a", "'-1"]
    pair_ids = {pair_id(a, b) for a in QUOTED + ["a"] for b in ("b", "c")}
    got = load_judgements(f, pair_ids=pair_ids, id_type="string").by_pair
    assert got == {pair_id("-1", "b"): "same", pair_id("=x", "b"): "same", pair_id("a", "b"): "same",
                   pair_id("'-1", "c"): "different"}


def test_a_file_without_marks_gets_no_marker_column(tmp_path):
    f = write_table_file(pa.table({"item_a": ["a"], "item_b": ["b"], "judgement": ["same"]}), tmp_path / "j.csv")
    assert f.read_text().splitlines()[0] == '"item_a","item_b","judgement"'


OLD_HEADER = ["pair_id", "item_a", "item_b", "judgement", "rater", "source", "comment", "timestamp"]


def test_an_older_abcde_export_is_still_read_back_exactly(tmp_path):
    """An export of an abcde from before the marker column (its exact columns, every row's pair id that
    of the ids with the mark undone) is recognised: its marks are undone."""
    rows = [[pair_id("-1", "b"), "'-1", "b", "same", "alice", "person", "'@SUM(1)", "2026-01-01T00:00:00"],
            [pair_id("a", "b"), "a", "b", "different", "alice", "person", "''x", "2026-01-01T00:00:01"]]
    f = write_csv(tmp_path / "old-export.csv", OLD_HEADER, rows)
    t = read_table_file(f, "judgements").to_pylist()
    assert [r["item_a"] for r in t] == ["-1", "a"] and [r["comment"] for r in t] == ["@SUM(1)", "'x"]


def test_a_file_with_abcdes_columns_whose_pair_ids_name_the_quoted_ids_is_read_as_it_is(tmp_path):
    rows = [[pair_id("'-1", "b"), "'-1", "b", "same", "alice", "person", "'@SUM(1)", "2026-01-01T00:00:00"]]
    f = write_csv(tmp_path / "theirs.csv", OLD_HEADER, rows)
    t = read_table_file(f, "judgements").to_pylist()
    assert t[0]["item_a"] == "'-1" and t[0]["comment"] == "'@SUM(1)"


@pytest.fixture(scope="module")
def quoted_sample(tmp_path_factory) -> Path:
    """A pair sample whose item ids start with the mark (as data may), every pair judged in the store."""
    root = tmp_path_factory.mktemp("quoted-ids")
    item = ["'-1", "-1", "'=x", "=x", "''", "'", "'plain", "plain"] + [f"i{k}" for k in range(12)]
    n = len(item)
    entity = [k // 3 for k in range(n)]
    pq.write_table(pa.table({"item_id": item, "cluster_id": [k // 4 for k in range(n)]}), root / "base.parquet")
    pq.write_table(pa.table({"item_id": item, "cluster_id": [k // 2 for k in range(n)]}), root / "exp.parquet")
    pq.write_table(pa.table({"item_id": item, "entity": entity}), root / "items.parquet")
    d = root / "pairs"
    draw_pair_sample(root / "base.parquet", root / "exp.parquet", d, items=root / "items.parquet", budget=40,
                     seed=3, hide=("entity",))
    store = JudgementStore(d)
    of = dict(zip(item, entity))
    for t in store.tasks:
        store.record(t["pair_id"], "same" if of[t["item_a"]] == of[t["item_b"]] else "different", rater="ann")
    return d


def test_quality_reads_another_programs_file_of_quoted_ids(quoted_sample, tmp_path):
    """``quality --judgements`` reads a file another program wrote (pairs by their item ids, as they
    are) as the store: the same estimate, every judgement on its own pair."""
    store = JudgementStore(quoted_sample)
    by_pair = {j.pair_id: j.judgement for j in store.live()}
    rows = [[t["item_a"], t["item_b"], by_pair[t["pair_id"]]] for t in store.tasks]
    assert any(r[0].startswith("'") or r[1].startswith("'") for r in rows)
    f = write_csv(tmp_path / "theirs.csv", ["item_a", "item_b", "judgement"], rows)
    want = estimate_quality(quoted_sample).to_dict()
    got = estimate_quality(quoted_sample, judgements=[f]).to_dict()
    assert got["delta_precision"] == want["delta_precision"]
    code, out = cli("quality", quoted_sample, "--judgements", f, "--json")
    assert code == 0, out
    assert json.loads(out)["delta_precision"] == want["delta_precision"]


def test_an_export_of_quoted_ids_reads_back_as_the_store(quoted_sample, tmp_path):
    out = tmp_path / "export.csv"
    code, text = cli("judge", "export", quoted_sample, "--out", out)
    assert code == 0, text
    live = sorted((j.pair_id, j.rater, j.judgement) for j in JudgementStore(quoted_sample).live())
    assert sorted((r["pair_id"], r["rater"], r["judgement"]) for r in read_table_file(out, "judgements").to_pylist()) \
        == live
    tasks = {t["pair_id"]: t for t in JudgementStore(quoted_sample).tasks}
    for r in read_table_file(out, "judgements").to_pylist():
        assert (r["item_a"], r["item_b"]) == (tasks[r["pair_id"]]["item_a"], tasks[r["pair_id"]]["item_b"])


# ----------------------------------------------------------------------------- class 2: integer ids
LOOSE = ["1_0", " 12", "12 ", "\u0661\u0663", "+5", "007", "-0", "1.0", "0x1", "１２"]


def int_pairs() -> set:
    return {pair_id(a, b) for a in range(-2, 20) for b in range(-2, 20) if a != b}


@pytest.mark.parametrize("value", LOOSE)
def test_an_integer_id_is_exactly_an_integers_text_in_a_csv(tmp_path, value):
    f = write_csv(tmp_path / "j.csv", ["item_a", "item_b", "judgement"], [[3, 4, "same"], [value, 2, "same"]])
    with pytest.raises(InputError) as e:
        load_judgements(f, pair_ids=int_pairs(), id_type="integer")
    msg = str(e.value)
    assert "\n" not in msg and str(f) in msg and "Row 2" in msg and "item_a" in msg and repr(value) in msg


@pytest.mark.parametrize("ext", ["parquet", "jsonl"])
def test_an_integer_id_is_exactly_an_integers_text_in_parquet_and_jsonl(tmp_path, ext):
    rows = [{"item_a": "3", "item_b": "4", "judgement": "same"}, {"item_a": "2", "item_b": "1_0", "judgement": "same"}]
    f = tmp_path / f"j.{ext}"
    if ext == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), f)
    else:
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"Row 2 .*item_b.*'1_0'"):
        load_judgements(f, pair_ids=int_pairs(), id_type="integer")


def test_integer_ids_written_plainly_are_read(tmp_path):
    f = write_csv(tmp_path / "j.csv", ["item_a", "item_b", "judgement"],
                  [[3, 4, "same"], [-2, 0, "different"], [10, 12, "same"]])
    got = load_judgements(f, pair_ids=int_pairs(), id_type="integer").by_pair
    assert got == {pair_id(3, 4): "same", pair_id(-2, 0): "different", pair_id(10, 12): "same"}
    t = pa.table({"item_a": pa.array([3], pa.int64()), "item_b": pa.array([4], pa.int64()), "judgement": ["same"]})
    pq.write_table(t, tmp_path / "j.parquet")
    assert load_judgements(tmp_path / "j.parquet", pair_ids=int_pairs(), id_type="integer").by_pair == {
        pair_id(3, 4): "same"}


@pytest.fixture(scope="module")
def int_sample(tmp_path_factory) -> Path:
    """A pair sample of integer item ids, every pair judged in the store."""
    root = tmp_path_factory.mktemp("int-ids")
    n = 24
    item = list(range(n))
    entity = [k // 3 for k in range(n)]
    pq.write_table(pa.table({"item_id": item, "cluster_id": [k // 4 for k in range(n)]}), root / "base.parquet")
    pq.write_table(pa.table({"item_id": item, "cluster_id": [k // 2 for k in range(n)]}), root / "exp.parquet")
    pq.write_table(pa.table({"item_id": item, "entity": entity}), root / "items.parquet")
    d = root / "pairs"
    draw_pair_sample(root / "base.parquet", root / "exp.parquet", d, items=root / "items.parquet", budget=40,
                     seed=3, hide=("entity",))
    store = JudgementStore(d)
    for t in store.tasks:
        store.record(t["pair_id"], "same" if entity[t["item_a"]] == entity[t["item_b"]] else "different",
                     rater="ann")
    return d


def test_quality_refuses_a_loose_integer_id_in_one_line(int_sample, tmp_path):
    """``1_0`` for item 10 once read as 10: the judgement counted for pair (10, b). Now one line."""
    t = JudgementStore(int_sample).tasks[0]
    loose = "_".join(str(t["item_a"])) if t["item_a"] >= 10 else f" {t['item_a']}"
    f = write_csv(tmp_path / "theirs.csv", ["item_a", "item_b", "judgement"], [[loose, t["item_b"], "same"]])
    code, out = cli("quality", int_sample, "--judgements", f)
    assert code == 1 and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1 and repr(loose) in out and "Row 1" in out and "theirs.csv" in out


def test_an_export_of_integer_ids_reads_back_as_the_store(int_sample, tmp_path):
    out = tmp_path / "export.csv"
    assert cli("judge", "export", int_sample, "--out", out)[0] == 0
    want = estimate_quality(int_sample).to_dict()
    assert estimate_quality(int_sample, judgements=[out]).to_dict()["delta_precision"] == want["delta_precision"]


# ----------------------------------------------------------------------------- class 3: exports into DIR
def files(d: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture
def sample(int_sample, tmp_path) -> Path:
    d = tmp_path / "pairs"
    shutil.copytree(int_sample, d)
    return d


def assert_refused(code: int, out: str, d: Path, before: dict) -> None:
    assert code == 1 and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1, out
    assert "Not written" in out and "outside" in out and "abcde quality" in out, out
    assert files(d) == before


@pytest.mark.parametrize("name", ["judgements.csv", "judgements.sqlite", "judgements.sqlite-wal", "tasks.csv",
                                  "export.parquet", "Judgements.csv"])
def test_an_export_into_the_sample_directory_is_refused(sample, name):
    before = files(sample)
    code, out = cli("judge", "export", sample, "--out", sample / name, "--force")
    assert_refused(code, out, sample, before)
    suggested = out.rsplit("such as '", 1)[1].split("'")[0]
    assert Path(suggested).parent == sample.parent


def test_an_export_into_the_sample_directory_by_another_path_is_refused(sample, tmp_path, monkeypatch):
    before = files(sample)
    (tmp_path / "link").symlink_to(sample, target_is_directory=True)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    for out in ("../pairs/judgements.csv", "../link/judgements.csv", f"{tmp_path}/sub/../pairs/./judgements.csv",
                "../link/../pairs/judgements.csv"):
        code, text = cli("judge", "export", "../pairs", "--out", out)
        assert_refused(code, text, sample, before)
    monkeypatch.chdir(sample)
    code, text = cli("judge", "export", ".", "--out", "judgements.csv")
    assert_refused(code, text, sample, before)


def test_an_export_to_where_a_judgement_file_of_the_sample_links_is_refused(sample, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (sample / "judgements.csv").symlink_to(elsewhere / "snapshot.csv")  # dangling: nothing there yet
    before = files(sample)
    code, out = cli("judge", "export", sample, "--out", elsewhere / "snapshot.csv")
    assert_refused(code, out, sample, before)
    assert not (elsewhere / "snapshot.csv").exists()


def test_an_export_outside_the_sample_directory_is_written(sample, tmp_path):
    (tmp_path / "link").symlink_to(sample, target_is_directory=True)
    before = files(sample)
    code, out = cli("judge", "export", tmp_path / "link", "--out", tmp_path / "pairs-judgements.csv")
    assert code == 0, out
    assert files(sample) == before
    q = estimate_quality(sample).to_dict()
    assert q["delta_precision"] == estimate_quality(sample, judgements=[tmp_path / "pairs-judgements.csv"]
                                                    ).to_dict()["delta_precision"]
    assert os.path.exists(tmp_path / "pairs-judgements.csv")
