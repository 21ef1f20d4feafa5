"""Kept work (issue 16, item 2): with a DuckDB database file (``--database``) the validated inputs
and the fragment table are kept, keyed by a fingerprint of the input files; a later command on the
same inputs reuses them (and says so), a changed input is detected and recomputed."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import abcde
from abcde.engine.base import Engine
from abcde.examples import example_paths

P = example_paths("febrl3")


@pytest.fixture
def reads(monkeypatch):
    seen = []
    original = Engine.read

    def counting(self, source, *, role):
        seen.append(role)
        return original(self, source, role=role)

    monkeypatch.setattr(Engine, "read", counting)
    return seen


def test_a_second_run_reuses_the_kept_tables_and_a_changed_input_is_recomputed(tmp_path, reads):
    db = tmp_path / "k.duckdb"
    base = tmp_path / "base.parquet"
    base.write_bytes(P["base"].read_bytes())
    first = abcde.impact(base, P["exp"], items=P["items"], slice_by=["source"], engine=abcde.connect(database=db))
    assert sorted(reads) == ["base", "exp", "items"]
    reads.clear()
    again = abcde.impact(base, P["exp"], items=P["items"], slice_by=["source"], engine=abcde.connect(database=db))
    assert reads == []  # nothing read: the kept tables are used
    a, b = first.to_dict(), again.to_dict()
    for k in ("items", "split_rate", "merge_rate", "jaccard_distance", "affected_items", "restriction", "slices"):
        assert a[k] == pytest.approx(b[k], rel=1e-12) if isinstance(a[k], float) else a[k] == b[k], k
    # A changed input (one item moved to another cluster): a new key, read and computed again.
    t = pq.read_table(base).to_pandas()
    t.loc[0, "cluster_id"] = t.loc[1, "cluster_id"] if t.loc[0, "cluster_id"] != t.loc[1, "cluster_id"] else "elsewhere"
    t.to_parquet(base, index=False)
    changed = abcde.impact(base, P["exp"], items=P["items"], slice_by=["source"], engine=abcde.connect(database=db))
    assert sorted(reads) == ["base", "exp", "items"]
    fresh = abcde.impact(base, P["exp"], items=P["items"], slice_by=["source"])  # in memory, nothing kept
    assert changed.split_rate == pytest.approx(fresh.split_rate, rel=1e-12) != pytest.approx(first.split_rate)


def test_the_cli_says_it_reuses_and_pairs_extend_reuses(tmp_path):
    db = str(tmp_path / "k.duckdb")
    inputs = ["--base", str(P["base"]), "--exp", str(P["exp"]), "--items", str(P["items"]), "--database", db]

    def run(*args):
        r = subprocess.run([sys.executable, "-m", "abcde", *args], capture_output=True, text=True, timeout=300,
                           env={**__import__("os").environ, "ABCDE_PROGRESS_INTERVAL": "0"})
        assert r.returncode == 0, r.stderr
        return r

    first = run("pairs", *inputs, "--budget", "40", "--seed", "2", "--out", str(tmp_path / "p"), "--json")
    assert "Reusing" not in first.stderr and "Keeping the validated inputs" in first.stderr
    ext = run("pairs", "--extend", str(tmp_path / "p"), "--budget", "60", "--database", db, "--json")
    assert "Reusing the validated inputs and fragments kept in the database" in ext.stderr
    assert json.loads(ext.stdout)["judgeable_pairs"] == 60
    # the same sample as a fresh draw at 60 without any database
    fresh = run("pairs", *inputs[:6], "--budget", "60", "--seed", "2", "--out", str(tmp_path / "f"), "--json")
    cols = ["item_a", "item_b", "pair_id", "stratum"]
    assert pq.read_table(tmp_path / "p" / "pairs.parquet").select(cols).equals(
        pq.read_table(tmp_path / "f" / "pairs.parquet").select(cols))
    assert json.loads(fresh.stdout)["judgeable_pairs"] == 60
    rep = run("report", *inputs, "--quality", str(tmp_path / "p"), "--out", str(tmp_path / "r.html"))
    assert "Reusing" in rep.stderr


def test_a_partly_kept_diff_is_computed_again(tmp_path, reads):
    db = tmp_path / "k.duckdb"
    eng = abcde.connect(database=db)
    abcde.impact(P["base"], P["exp"], items=P["items"], engine=eng)
    names = [n for (n,) in eng.con.raw_sql("SELECT table_name FROM duckdb_tables()").fetchall()
             if n.startswith("abcde_kept_") and n.endswith("_meta")]
    assert len(names) == 1
    eng.con.raw_sql(f"DROP TABLE {names[0]}")  # a run killed before it wrote the metadata
    reads.clear()
    again = abcde.impact(P["base"], P["exp"], items=P["items"], engine=abcde.connect(database=db))
    assert sorted(reads) == ["base", "exp", "items"] and again.items == 5000
