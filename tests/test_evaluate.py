"""``abcde evaluate`` (issue 16, item 1): the whole job — impact, exploration sample, pair sample,
report — from one read of the inputs, writing what the four commands write."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.engine.base import Engine
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.workflow.evaluate import evaluate
from content import assert_same_content

P = example_paths("febrl3")


def test_one_read_of_each_input(tmp_path, monkeypatch):
    """Every stage reuses the one diff: each input file is read exactly once."""
    reads = []
    original = Engine.read

    def counting(self, source, *, role):
        reads.append((str(source), role))
        return original(self, source, role=role)

    monkeypatch.setattr(Engine, "read", counting)
    res = evaluate(P["base"], P["exp"], tmp_path / "ev", items=P["items"], slice_by=["source"], budget=60,
                   sample_size=200, seed=3, hide=["entity_id"])
    assert sorted(r for _, r in reads) == ["base", "exp", "items"], reads
    assert [s["stage"] for s in res.stages] == ["impact", "impact tables", "exploration sample", "pair sample",
                                               "report"]
    assert all(s["seconds"] >= 0 for s in res.stages) and res.stages[3]["rows"] == 60


def test_it_writes_what_the_four_commands_write(tmp_path):
    r = CliRunner()
    inputs = ["--base", str(P["base"]), "--exp", str(P["exp"]), "--items", str(P["items"])]
    out = r.invoke(main, ["evaluate", *inputs, "--slice-by", "source", "--budget", "60", "--sample-size", "200",
                          "--seed", "3", "--hide", "entity_id", "--out", str(tmp_path / "ev"), "--json"])
    assert out.exit_code == 0, out.output
    j = json.loads(out.stdout)  # stdout is the JSON; the stages' progress lines go to stderr
    assert [s["stage"] for s in j["stages"]][0] == "impact"
    assert "Stage 4: pair sample" in out.stderr
    ev = tmp_path / "ev"
    # the same as the separate commands
    assert r.invoke(main, ["impact", *inputs, "--slice-by", "source", "--out", str(tmp_path / "imp"), "-q"]).exit_code == 0
    a = json.loads((ev / "impact" / "impact.json").read_text())
    b = json.loads((tmp_path / "imp" / "impact.json").read_text())
    for k in ("items", "split_rate", "merge_rate", "jaccard_distance", "affected_items"):
        assert a[k] == pytest.approx(b[k], rel=1e-12), k
    assert r.invoke(main, ["explore", "sample", *inputs, "--size", "200", "--seed", "3", "--out",
                           str(tmp_path / "s.parquet"), "-q"]).exit_code == 0
    cols = ["item_id", "draw_count"]
    assert pq.read_table(ev / "explore" / "sample.parquet").select(cols).equals(
        pq.read_table(tmp_path / "s.parquet").select(cols))
    assert r.invoke(main, ["pairs", *inputs, "--budget", "60", "--seed", "3", "--slice-by", "source", "--hide",
                           "entity_id", "--out", str(tmp_path / "p"), "-q"]).exit_code == 0
    dcols = ["item_a", "item_b", "class", "label", "pair_id", "stratum"]
    assert pq.read_table(ev / "quality" / "pairs.parquet").select(dcols).equals(
        pq.read_table(tmp_path / "p" / "pairs.parquet").select(dcols))
    assert (ev / "quality" / "tasks.csv").read_bytes() == (tmp_path / "p" / "tasks.csv").read_bytes()
    assert "<html" in (ev / "report.html").read_text()[:200].lower() and (ev / "report.md").exists()
    # the pair sample is judged and reported like any other: the inputs recorded are the files
    meta = json.loads((ev / "quality" / "metadata.json").read_text())
    assert meta["input_paths"]["base"] == str(P["base"].resolve())
    assert r.invoke(main, ["judge", "oracle", str(ev / "quality"), "--oracle-column", "entity_id"]).exit_code == 0
    rep = r.invoke(main, ["report", *inputs, "--quality", str(ev / "quality"), "--out", str(ev / "report.html"), "-q"])
    assert rep.exit_code == 0, rep.output


def test_an_earlier_run_is_replaced_and_a_foreign_directory_refused(tmp_path):
    kw = dict(items=P["items"], budget=20, sample_size=50, seed=1)
    evaluate(P["base"], P["exp"], tmp_path / "ev", **kw)
    evaluate(P["base"], P["exp"], tmp_path / "ev", **kw)  # the same run again: accepted, judgements kept
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        evaluate(P["base"], P["exp"], tmp_path / "mine", **kw)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_a_bad_option_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(InputError, match="'nocol' to hide"):
        evaluate(P["base"], P["exp"], tmp_path / "ev", items=P["items"], hide=["nocol"], budget=20, sample_size=50)
    assert not (tmp_path / "ev").exists()


def test_on_spark_it_gives_duckdbs_numbers_and_samples(tmp_path, spark):
    """The one-command job on ``--engine spark`` (issue 16, item 5): the impact numbers, the
    exploration sample and the pair sample are DuckDB's."""
    kw = dict(items=P["items"], slice_by=["source"], budget=60, sample_size=200, seed=3, hide=["entity_id"])
    duck = evaluate(P["base"], P["exp"], tmp_path / "duck", **kw)
    sp = evaluate(P["base"], P["exp"], tmp_path / "spark", engine=spark, **kw)
    a, b = duck.impact.to_dict(), sp.impact.to_dict()
    for k in ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance", "affected_items"):
        assert a[k] == pytest.approx(b[k], rel=1e-12), k
    assert_same_content(a["slices"], b["slices"], "slices")
    assert_same_content(a["top_clusters"], b["top_clusters"], "top_clusters")
    cols = ["item_id", "draw_count"]
    assert pq.read_table(duck.sample_path).select(cols).equals(pq.read_table(sp.sample_path).select(cols))
    dcols = ["item_a", "item_b", "class", "label", "pair_id", "stratum"]
    assert pq.read_table(duck.pair_dir / "pairs.parquet").select(dcols).equals(
        pq.read_table(sp.pair_dir / "pairs.parquet").select(dcols))
    assert (duck.pair_dir / "tasks.csv").read_bytes() == (sp.pair_dir / "tasks.csv").read_bytes()
    assert (tmp_path / "spark" / "impact" / "items.parquet").is_dir()  # Spark's part files
    assert "<html" in sp.report_path.read_text()[:200].lower()

