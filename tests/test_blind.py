"""Blind by default (issue 13, item 4): task files, the judging page and model judges see a pair
id and the items' attributes only — no item ids, weights or hidden columns (pairs --hide, and the
column an oracle judged by) unless asked; spreadsheet formula cells in tasks.csv are neutralised."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.judging import JudgingSession, judge_with_model
from abcde.quality import PairSampleDir

P = example_paths("febrl3")
FORMULAS = ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "plain"]


def cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


def draw(out, *extra, items=P["items"]):
    return cli("pairs", "--base", P["base"], "--exp", P["exp"], "--items", items, "--budget", 30, "--seed", 2,
               "--out", out, *extra)


def task_columns(d) -> dict:
    with open(d / "tasks.csv", newline="") as fh:
        header = next(csv.reader(fh))
    return {"csv": header, "parquet": pq.read_table(d / "tasks.parquet").column_names,
            "jsonl": list(json.loads((d / "tasks.jsonl").read_text().splitlines()[0]))}


def test_task_files_show_a_pair_id_and_attributes_only(tmp_path):
    d = tmp_path / "pairs"
    code, out = draw(d, "--hide", "entity_id")
    assert code == 0, out
    attrs = [c for c in pq.read_table(d / "items.parquet").column_names if c not in ("item_id", "weight", "entity_id")]
    want = ["pair_id"] + [f"{s}_{c}" for c in attrs for s in "ab"]
    for kind, cols in task_columns(d).items():
        assert cols == want, kind  # no item ids, no weight, no entity_id (the answer key), no class
    assert PairSampleDir.read(d).hidden == ["entity_id"]
    assert "rec-" not in (d / "tasks.csv").read_text()  # FEBRL ids spell out the duplicates

    d2 = tmp_path / "with-ids"
    code, out = draw(d2, "--show-ids")
    assert code == 0, out
    cols = task_columns(d2)["parquet"]
    assert cols[:3] == ["pair_id", "item_a", "item_b"] and "a_entity_id" in cols and "a_weight" not in cols


def test_hiding_an_unknown_column_is_one_clear_line_and_writes_nothing(tmp_path):
    d = tmp_path / "pairs"
    code, out = draw(d, "--hide", "colour")
    assert code == 1 and "Traceback" not in out
    assert "'colour'" in out and "not item attributes" in out and "entity_id" in out
    assert not d.exists()


def test_formula_cells_are_neutralised_in_tasks_csv(tmp_path):
    items = pq.read_table(P["items"])
    names = [FORMULAS[k % len(FORMULAS)] for k in range(items.num_rows)]
    k = items.column_names.index("given_name")
    items = items.set_column(k, "given_name", pa.array(names))
    pq.write_table(items, tmp_path / "items.parquet")
    d = tmp_path / "pairs"
    code, out = draw(d, items=tmp_path / "items.parquet")
    assert code == 0, out
    with open(d / "tasks.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cells = [r[c] for r in rows for c in ("a_given_name", "b_given_name")]
    assert cells and all(not c.startswith(("=", "+", "-", "@", "\t")) for c in cells)
    assert {c for c in cells if c.startswith("'")} <= {"'" + f for f in FORMULAS}
    assert any(c == "'=HYPERLINK(\"http://x\")" for c in cells) and "plain" in cells
    raw = pq.read_table(d / "tasks.parquet").column("a_given_name").to_pylist()
    assert set(raw) <= set(FORMULAS)  # the data files keep the values as they are


def test_the_page_and_model_judges_hide_the_same(tmp_path):
    d = tmp_path / "pairs"
    assert draw(d, "--hide", "postcode")[0] == 0
    s = JudgingSession(d)
    assert "weight" not in s.columns and "postcode" not in s.columns and "entity_id" in s.columns
    # After an oracle judged by entity_id, no person or model sees that column either.
    assert cli("judge", "oracle", d, "--oracle-column", "entity_id")[0] == 0
    s = JudgingSession(d)
    assert "entity_id" not in s.columns and "given_name" in s.columns and not s.show_ids
    view = s.pair_view(s.pair_ids[0])
    assert {r["name"] for r in view["attributes"]} == set(s.columns) and "ids" not in view

    seen = []

    def judge(a, b):
        seen.append((set(a), set(b)))
        return "unsure"

    judge_with_model(d, judge, name="peek", limit=5)
    assert seen and all(a == b == set(s.columns) for a, b in seen)
