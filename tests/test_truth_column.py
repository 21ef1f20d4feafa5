"""``--truth-column COL``: the ground truth read from a column of ``--items`` (issue 52), in
``evaluate``, ``report`` (with inputs, and ``report DIR`` from the record) and ``pointwise``; the
same numbers as the truth given as a file, and the column hidden from the judges."""

from __future__ import annotations

import json
import shutil

import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths

P = {k: str(v) for k, v in example_paths().items()}


def cli(*args, code=0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


def pointwise_json(*truth_args):
    return json.loads(cli("pointwise", "--clustering", P["exp"], "--items", P["items"], *truth_args, "--json").output)


def test_pointwise_reads_the_truth_from_the_items_column_as_from_the_file():
    col, file = pointwise_json("--truth-column", "entity_id"), pointwise_json("--truth", P["truth"])
    for k in ("precision", "recall", "f1"):
        assert col[k] == pytest.approx(file[k], rel=1e-12), k
    assert col["precision"] < 1 and col["recall"] < 1  # a truth that tells something


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    d = tmp_path_factory.mktemp("truth_column")
    out = json.loads(cli("evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"],
                         "--truth-column", "entity_id", "--budget", 60, "--sample-size", 100, "--out", d / "ev",
                         "--json").stdout)  # the stages' progress lines go to stderr
    return d, out


def test_evaluate_uses_the_column_hides_it_and_records_it(evaluated):
    d, out = evaluated
    for side, clustering in (("base", P["base"]), ("exp", P["exp"])):
        want = json.loads(cli("pointwise", "--clustering", clustering, "--truth", P["truth"], "--items", P["items"],
                              "--json").output)
        got = out["pointwise_against_truth"][side]
        assert (got["precision"], got["recall"]) == pytest.approx((want["precision"], want["recall"]), rel=1e-12)
    record = json.loads((d / "ev" / "evaluate.json").read_text())
    assert record["columns"]["truth_cluster_id"] == "entity_id"
    assert record["inputs"]["truth"]["path"] == record["inputs"]["items"]["path"]
    assert "entity_id" in record["options"]["hide"]
    tasks = pacsv.read_csv(d / "ev" / "quality" / "tasks.csv")
    assert not [c for c in tasks.column_names if "entity_id" in c], tasks.column_names
    # The rebuilt report reads the same column again.
    rebuilt = json.loads(cli("report", d / "ev", "--json").stdout)
    for side in ("base", "exp"):
        got = out["pointwise_against_truth"][side]
        assert rebuilt["truth"][side]["precision"] == pytest.approx(got["precision"], rel=1e-12)
        assert rebuilt["truth"][side]["recall"] == pytest.approx(got["recall"], rel=1e-12)


def test_report_dir_refuses_a_record_whose_truth_column_has_no_truth(evaluated, tmp_path):
    d, _ = evaluated
    ev = tmp_path / "ev"
    shutil.copytree(d / "ev", ev, symlinks=True)
    rec = json.loads((ev / "evaluate.json").read_text())
    rec["inputs"]["truth"] = None
    (ev / "evaluate.json").write_text(json.dumps(rec))
    r = cli("report", ev, code=1)
    assert "truth_cluster_id" in r.output


def test_report_with_inputs_takes_the_column(tmp_path):
    args = ("report", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--json")
    col = json.loads(cli(*args, "--truth-column", "entity_id", "--out", tmp_path / "a.html").stdout)["truth"]
    file = json.loads(cli(*args, "--truth", P["truth"], "--out", tmp_path / "b.html").stdout)["truth"]
    for side in ("base", "exp"):  # (the same sums, up to the order the engine adds them in)
        assert col[side] == pytest.approx(file[side], rel=1e-12)
    assert col["exp"]["precision"] < 1


@pytest.mark.parametrize("args,said", [
    (("--truth", P["truth"], "--truth-column", "entity_id", "--items", P["items"]), "not both"),
    (("--truth-column", "entity_id"), "give --items FILE"),
    (("--items", P["items"]), "Missing option --truth FILE (or --truth-column COL"),
])
def test_usage_errors_say_what_to_give(args, said):
    r = cli("pointwise", "--clustering", P["exp"], *args, code=2)
    assert said in r.output


def test_a_column_that_is_not_there_is_named():
    r = cli("pointwise", "--clustering", P["exp"], "--items", P["items"], "--truth-column", "nope", code=1)
    assert "'nope'" in r.output and "entity_id" in r.output
