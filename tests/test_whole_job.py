"""The whole job at the speed of the join (issue 28): what ``abcde evaluate`` no longer does twice
gives the same numbers and rows as what it did.

* The impact tables hold the affected rows by default (``--all-rows``: every row), and those rows are
  the whole tables' affected rows.
* The affected items of inputs joined by id are joined from the inputs, Base rows of the affected
  clusters only, not from the whole join again; the report's members are read from them.
* The inputs' fingerprints are hashed beside the impact's first reads; a file changed meanwhile is
  refused all the same.
"""

from __future__ import annotations

import importlib
import json
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.core import diff as core_diff
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.report.build import build_report
from abcde.util.files import input_fingerprint
from abcde.workflow.evaluate import evaluate
from content import assert_same_content

evaluate_module = importlib.import_module("abcde.workflow.evaluate")  # (abcde.workflow.evaluate is also the function)
P = example_paths("febrl3")
KW = dict(items=P["items"], slice_by=["source"], budget=60, sample_size=200, seed=3, hide=["entity_id"])


def reordered(tmp_path, name: str, path) -> str:
    """``path``'s rows in another order (so the inputs are joined by id, not zipped)."""
    t = pq.read_table(path)
    n = t.num_rows
    out = tmp_path / f"{name}.parquet"
    pq.write_table(t.take(pa.array([(k * 7919) % n for k in range(n)])), out)
    return str(out)


def test_evaluate_writes_the_affected_rows_and_every_row_on_request(tmp_path):
    aff = evaluate(P["base"], P["exp"], tmp_path / "aff", **KW)
    every = evaluate(P["base"], P["exp"], tmp_path / "all", only_affected=False, **KW)
    assert aff.record["options"]["only_affected"] is True and every.record["options"]["only_affected"] is False
    for res, tables in ((aff, "affected"), (every, "all")):
        assert json.loads((res.out_dir / "impact" / "impact.json").read_text())["tables"] == tables
    items = pq.read_table(every.out_dir / "impact" / "items.parquet")
    part = pq.read_table(aff.out_dir / "impact" / "items.parquet").sort_by("item_id")
    assert items.num_rows == aff.impact.items and part.num_rows == aff.impact.affected_items > 0
    moved = items.filter(pc.greater(items["jaccard_distance"], 0)).sort_by("item_id")
    assert_same_content(part.to_pylist(), moved.select(part.column_names).to_pylist(), "items")
    for side in ("base", "exp"):
        whole = pq.read_table(every.out_dir / "impact" / f"{side}_clusters.parquet")
        got = pq.read_table(aff.out_dir / "impact" / f"{side}_clusters.parquet").sort_by("cluster_id")
        want = whole.filter(pc.greater(whole["jaccard_distance"], 0)).sort_by("cluster_id")
        assert got.num_rows == want.num_rows > 0, side
        assert_same_content(got.to_pylist(), want.select(got.column_names).to_pylist(), side)
    # the same numbers everywhere else
    assert_same_content(aff.impact.to_dict(), every.impact.to_dict(), "impact")
    assert_same_content(aff.report.to_dict()["neighbourhoods"], every.report.to_dict()["neighbourhoods"], "nb")


def test_cli_writes_every_row_with_all_rows(tmp_path):
    inputs = ["--base", str(P["base"]), "--exp", str(P["exp"]), "--items", str(P["items"]), "--budget", "60",
              "--sample-size", "100", "-q"]
    r = CliRunner()
    for flag, tables in (([], "affected"), (["--all-rows"], "all"), (["--only-affected"], "affected")):
        out = tmp_path / ("ev" + "".join(flag))
        got = r.invoke(main, ["evaluate", *inputs, *flag, "--out", str(out)])
        assert got.exit_code == 0, got.output
        assert json.loads((out / "impact" / "impact.json").read_text())["tables"] == tables, flag
        assert json.loads((out / "evaluate.json").read_text())["options"]["only_affected"] == (tables == "affected")


@pytest.mark.parametrize("order", ["aligned", "reordered"])
def test_affected_items_and_the_reports_members_are_the_common_items_rows(tmp_path, order):
    """The affected items (zipped: read from the zip; joined by id: joined from the inputs, Base rows of
    the affected clusters only) are the rows of the whole join's affected fragments, and the report
    built after the samplers made them (members read from them) is the report built before."""
    exp, items = (P["exp"], P["items"]) if order == "aligned" else (
        reordered(tmp_path, "exp", P["exp"]), reordered(tmp_path, "items", P["items"]))
    res = abcde.impact(P["base"], exp, items=items, slice_by=["source"], top=8)
    diff = res.diff
    assert (diff.sources is None) == (order == "aligned")
    first = build_report(res).to_dict()
    f = core_diff.affected_fragments(diff)
    want = diff.engine.to_arrow(diff.joined.semi_join(f.select("base_cluster", "exp_cluster"),
                                                      ["base_cluster", "exp_cluster"])).sort_by("item_id")
    got = diff.engine.to_arrow(core_diff.affected_items(diff)).sort_by("item_id")
    assert got.num_rows == res.affected_items > 0
    assert got.select(want.column_names).equals(want)
    again = build_report(res).to_dict()
    assert first["neighbourhoods"]["base"] and first["neighbourhoods"]["exp"]
    assert_same_content(first["neighbourhoods"], again["neighbourhoods"], "neighbourhoods")
    assert_same_content(first["charts"], again["charts"], "charts")


@pytest.fixture
def aside(monkeypatch):
    """The fingerprints hashed in a thread beside the impact (files changed long enough ago: here,
    any file), and how many such threads ran."""
    monkeypatch.setattr(evaluate_module, "RACY_SECONDS", 0.0)
    started = []
    original = threading.Thread.start

    def start(self):
        if self.name == "abcde-fingerprints":
            started.append(self.name)
        return original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def test_fingerprints_hashed_beside_the_impact_are_the_files(tmp_path, aside):
    res = evaluate(P["base"], P["exp"], tmp_path / "ev", **KW)
    assert aside == ["abcde-fingerprints"]
    meta = json.loads((tmp_path / "ev" / "quality" / "metadata.json").read_text())
    want = {k: input_fingerprint(P[k]) for k in ("base", "exp", "items")}
    assert {k: res.record["inputs"][k]["fingerprint"] for k in want} == meta["input_fingerprints"] == want


def test_a_file_changed_while_its_fingerprint_is_taken_beside_the_impact_is_refused(tmp_path, aside, monkeypatch):
    """Exp rewritten right after the inputs were loaded (before or after the thread hashed it): the
    evaluation is refused, naming the file, and nothing is written."""
    exp = tmp_path / "exp.parquet"
    pq.write_table(pq.read_table(P["exp"]), exp)
    original = core_diff._load

    def load_then_change(*a, **k):
        loaded = original(*a, **k)
        monkeypatch.setattr(core_diff, "_load", original)  # once
        t = pq.read_table(exp)
        pq.write_table(t.set_column(1, "cluster_id", pc.cast(t.column("cluster_id"), pa.string())), exp)
        return loaded

    monkeypatch.setattr(core_diff, "_load", load_then_change)
    with pytest.raises(InputError, match=r"exp file .* changed while abcde was reading it"):
        evaluate(P["base"], exp, tmp_path / "ev", **KW)
    assert aside == ["abcde-fingerprints"]
    assert not (tmp_path / "ev").exists()


def test_a_file_changed_after_its_fingerprint_beside_the_impact_is_refused_at_the_last_check(tmp_path, aside,
                                                                                            monkeypatch):
    """Exp rewritten in place (same size, modification time put back) while the report is built: the
    last check, by identity for files hashed beside the impact, refuses it; nothing is written."""
    import os

    exp = tmp_path / "exp.parquet"
    pq.write_table(pq.read_table(P["exp"]), exp, compression="none")
    original = evaluate_module.evaluation_report

    def report_then_change(*a, **k):
        rep = original(*a, **k)
        st = exp.stat()
        data = bytearray(exp.read_bytes())
        data[len(data) // 2] ^= 1
        exp.write_bytes(bytes(data))
        os.utime(exp, ns=(st.st_atime_ns, st.st_mtime_ns))
        return rep

    monkeypatch.setattr(evaluate_module, "evaluation_report", report_then_change)
    with pytest.raises(InputError, match=r"exp file .* changed while abcde was reading it \(evaluating\)"):
        evaluate(P["base"], exp, tmp_path / "ev", **KW)
    assert aside == ["abcde-fingerprints"]
    assert not (tmp_path / "ev").exists()


def test_a_result_fetched_aside_is_the_one_fetched_now(monkeypatch):
    """DuckDB fetches it on another connection, in a thread (the inputs' views made again there); an
    expression over this connection's own temporary table is fetched at once; a failing query fails
    at result(), naming its step."""
    from abcde.errors import EngineError

    started = []
    original = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start",
                        lambda self: (started.append(self.name), original(self))[1])
    eng = abcde.connect()
    t = eng.read(P["base"], role="base")
    expr = t.aggregate(n=t.item_id.nunique(), rows=t.count())
    aside = eng.rows_aside(expr, step="unique ids")
    assert aside.result() == eng.rows(expr) and started == ["abcde-aside-unique_ids"]
    tmp = eng.materialize(t.limit(10), "tmp")
    assert eng.rows_aside(tmp.aggregate(n=tmp.count())).result() == [{"n": 10}] and len(started) == 1
    bad = eng.rows_aside(t.aggregate(n=t.item_id.cast("int64").sum()), step="a bad cast")
    with pytest.raises(EngineError, match="a bad cast"):
        bad.result()
    eng.rows_aside(expr).cancel()  # not wanted after all: stopped, nothing raised
    # A list: run one after another on one other connection, their rows in turn.
    odd, even = t.filter(t.item_id.hash() % 2 == 0), t.filter(t.item_id.hash() % 2 != 0)
    parts = [x.aggregate(n=x.item_id.nunique()) for x in (odd, even)]
    before = len(started)
    got = eng.rows_aside(parts, step="unique ids").result()
    assert got == eng.rows(parts[0]) + eng.rows(parts[1]) and len(started) == before + 1
    assert sum(r["n"] for r in got) == eng.rows(expr)[0]["n"]
    eng.rows_aside(parts).cancel()
    eng.release()
