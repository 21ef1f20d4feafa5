"""Every CSV abcde writes for people holds no formula a spreadsheet would run (issue 39, part 3):
``tasks.csv``, ``abcde judge export --out F.csv``, ``judge oracle --out F.csv`` and the owner's download
``/api/owner/export`` neutralise every text cell (item ids from data, rater names, comments) with a
leading ``'``; abcde's reader of judgement files gives back the exact values, so an exported file
counts as the store it came from."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.judging import JudgementStore
from abcde.quality import estimate_quality
from abcde.quality.draw import draw_pair_sample
from abcde.samples.judgements import load_judgements, read_table_file
from abcde.util.files import FORMULA_STARTS, neutralise_formulas, restore_formulas, write_table_file
from abcde.web.judging_server import serve
from judging_helpers import request

#: Item ids a spreadsheet would run, or that look like the neutralising mark itself.
HOSTILE_IDS = ['=HYPERLINK("http://evil.example","x")#0', "+1+6", "-2+3", "@SUM(A1)", "\tx", "'=already", "''",
               "\uff1dcmd", "'plain"]


def ids(n: int) -> list[str]:
    return [HOSTILE_IDS[k] if k < len(HOSTILE_IDS) else f"item{k}" for k in range(n)]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """A stratified pair sample whose item ids are formulas; every pair judged in the store."""
    root = tmp_path_factory.mktemp("csv-formulas")
    n = 24
    item = ids(n)
    entity = [k // 3 for k in range(n)]
    base = [k // 4 for k in range(n)]  # clusters of 4: splits and merges against Exp
    exp = [k // 2 for k in range(n)]
    pq.write_table(pa.table({"item_id": item, "cluster_id": base}), root / "base.parquet")
    pq.write_table(pa.table({"item_id": item, "cluster_id": exp}), root / "exp.parquet")
    pq.write_table(pa.table({"item_id": item, "entity": [f"=E{e}" for e in entity],
                             "weight": [1.0 + (k % 3) for k in range(n)]}), root / "items.parquet")
    d = root / "pairs"
    draw_pair_sample(root / "base.parquet", root / "exp.parquet", d, items=root / "items.parquet", budget=40,
                     seed=3, hide=("entity",))
    store = JudgementStore(d)
    of = dict(zip(item, entity))
    for k, t in enumerate(store.tasks):
        answer = "same" if of[t["item_a"]] == of[t["item_b"]] else "different"
        rater = ("alice", "bob", "carol")[k % 3]  # a person's name starts with a letter or digit
        store.record(t["pair_id"], answer, rater=rater, comment=("@SUM(1+1)*cmd" if k % 2 else "-fine"))
    return d


def cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def assert_no_formula(text: str) -> None:
    bad = [c for c in cells(text) if c.startswith(FORMULA_STARTS)]
    assert bad == [], bad


def live_votes(store: JudgementStore) -> list[tuple]:
    return sorted((j.pair_id, j.rater, j.judgement, j.comment or "") for j in store.live())


def file_votes(path: Path) -> list[tuple]:
    t = read_table_file(path, "judgements").to_pylist()
    return sorted((r["pair_id"], r["rater"], r["judgement"], r.get("comment") or "") for r in t)


def test_judge_export_neutralises_every_text_cell_and_reads_back_exactly(sample, tmp_path):
    out = tmp_path / "export.csv"
    r = CliRunner().invoke(main, ["judge", "export", str(sample), "--out", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert_no_formula(text)
    assert "'=HYPERLINK" in text or "'+1+6" in text  # the item ids are there, as text
    assert "'@SUM(1+1)*cmd" in cells(text) and "'-fine" in cells(text)
    # the file is the store: abcde reads back every value as it was
    store = JudgementStore(sample)
    assert file_votes(out) == live_votes(store)
    want = estimate_quality(sample).to_dict()
    got = estimate_quality(sample, judgements=[out]).to_dict()
    assert got["delta_precision"] == want["delta_precision"]


def test_by_items_rows_read_back_by_their_ids(sample, tmp_path):
    """A judgement file without pair ids names pairs by their (neutralised) item ids."""
    store = JudgementStore(sample)
    rows = [{"item_a": t["item_a"], "item_b": t["item_b"], "judgement": "same"} for t in store.tasks]
    out = write_table_file(pa.Table.from_pylist(rows), tmp_path / "by-items.csv")
    assert_no_formula(out.read_text())
    pair_ids = {t["pair_id"] for t in store.tasks}
    resolved = load_judgements(out, pair_ids=pair_ids, id_type="string")
    assert set(resolved.by_pair) == pair_ids


def test_judge_oracle_file_is_neutralised(sample, tmp_path):
    out = tmp_path / "oracle.csv"
    r = CliRunner().invoke(main, ["judge", "oracle", str(sample), "--oracle-column", "entity", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert_no_formula(out.read_text())


def test_tasks_csv_is_neutralised(sample):
    text = (sample / "tasks.csv").read_text()
    assert_no_formula(text)


def test_the_owners_download_neutralises_ids_names_and_comments(sample, tmp_path):
    import shutil

    d = tmp_path / "served"
    shutil.copytree(sample, d)
    srv = serve(d).start()
    try:
        code, text = request(srv.url, "GET", "/api/owner/export")
    finally:
        srv.shutdown()
    assert code == 200
    assert_no_formula(text)
    c = cells(text)
    assert "'@SUM(1+1)*cmd" in c and "'-fine" in c
    assert any(x.startswith("'=HYPERLINK") or x == "'+1+6" for x in c)  # item ids from data
    out = tmp_path / "owner.csv"
    out.write_text(text)
    assert file_votes(out) == live_votes(JudgementStore(d))


@pytest.mark.parametrize("value", ["=1", "+1", "-1", "@a", "\t", "\r", "\n", "'", "''", "'=x", "x'", "", None, "plain",
                                   "\uff1d", "'plain", "-", "=", "'\t"])
def test_neutralising_is_undone_exactly(value):
    t = pa.table({"c": pa.array([value], pa.string())})
    n = neutralise_formulas(t)
    cell = n.column("c")[0].as_py()
    assert cell is None or not cell.startswith(FORMULA_STARTS)
    assert restore_formulas(n).column("c").to_pylist() == [value]
