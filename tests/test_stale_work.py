"""Kept work is never stale (issue 25, class 1).

What abcde keeps or records under an input's fingerprint — the tables a ``--database`` file keeps,
a pair sample's and an evaluation's record of its inputs — is keyed by the sha256 of each input
file's whole content, taken before the file is read and checked again after the last read:

- a file changed anywhere (here: one value in the middle of a file over 2 MiB, its size and
  modification time put back, which the former fingerprint of large files — size, mtime and the
  first and last MiB — could not tell) gets another fingerprint: nothing kept is reused for it, and
  ``pairs --extend`` and ``report --quality`` name it ("… changed since the sample was drawn");
- a file replaced or rewritten while a command reads it is refused with one line naming it, and
  nothing is stored under its fingerprint (no kept tables, no sample, no evaluation);
- an input abcde cannot fingerprint (a directory of part files) is named where it matters.

Files over :data:`abcde.util.files.LARGE_FILE_BYTES` (1 GiB) are re-checked within a process by
their identity (device, inode, size, mtime, ctime) instead of being hashed again; the tests lower
that threshold (and :data:`~abcde.util.files.RACY_SECONDS`) to run that path on small files, and
run each case on both paths. Real files, real DuckDB, no mocks: the hooks below only change a file
at a chosen moment of a real run.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
import abcde.core.diff as diff_module
import abcde.util.files as files
from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.util.files import InputPrints, input_fingerprint
from abcde.workflow.evaluate import evaluate

P = example_paths("febrl3")
N = 200_000  # items: a plain int64 column of them is 1.6 MB, so the files are over 2 MiB
MIB = 1 << 20


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """No file known from an earlier test (as in a new process)."""
    monkeypatch.setattr(files, "_KNOWN", {})


@pytest.fixture(params=["hashed again", "identity"])
def check_path(request, monkeypatch):
    """Both ways a file is checked again within one process: hashed again (small or recently changed
    files), or by its identity (files over LARGE_FILE_BYTES, changed long enough ago: here every file,
    and "long enough" is now)."""
    if request.param == "identity":
        monkeypatch.setattr(files, "LARGE_FILE_BYTES", 0)
        monkeypatch.setattr(files, "RACY_SECONDS", 0.0)
    return request.param


def write_plain(path: Path, **cols) -> Path:
    """Parquet with every value stored plainly (no compression, no dictionary, no statistics), so
    one value can be rewritten in place and the file stays valid."""
    pq.write_table(pa.table(cols), path, compression="none", use_dictionary=False, write_statistics=False)
    return path


@pytest.fixture
def large(tmp_path) -> dict:
    """Base and Exp of N items in clusters of 4 (every 10th cluster split in two in Exp), over 2 MiB each."""
    d = tmp_path / "in"
    d.mkdir()
    ids = list(range(N))
    base = [i // 4 for i in ids]
    exp = [c * 2 + (i % 4 >= 2) if c % 10 == 0 else c * 2 for i, c in zip(ids, base)]
    paths = {"base": write_plain(d / "base.parquet", item_id=ids, cluster_id=base),
             "exp": write_plain(d / "exp.parquet", item_id=ids, cluster_id=exp)}
    assert all(p.stat().st_size > 2 * MIB for p in paths.values())
    return paths


def change_in_the_middle(path: Path, row: int = N // 8 + 1, new_cluster: int = 7) -> None:
    """Rewrite the cluster id of one item in the middle of ``path`` in place: same size, and its
    modification (and access) time put back; its first and last MiB are untouched."""
    values = pq.read_table(path).column("cluster_id").to_pylist()
    pattern = struct.pack("<3q", *values[row - 1:row + 2])
    data = path.read_bytes()
    assert data.count(pattern) == 1
    at = data.index(pattern) + 8
    assert MIB < at < len(data) - MIB  # in the middle: not in the first or last MiB
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(struct.pack("<q", new_cluster))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    assert pq.read_table(path).column("cluster_id")[row].as_py() == new_cluster
    now = path.read_bytes()
    assert now[:MIB] == data[:MIB] and now[-MIB:] == data[-MIB:] and now != data


def swap_file(path: Path, mode: str) -> None:
    """Change ``path`` as a hostile-but-fair user might while a command reads it: another file put in
    its place (a new inode), or the same file rewritten in the middle (size and mtime put back)."""
    if mode == "replaced":
        other = path.with_name("other-" + path.name)
        t = pq.read_table(path)
        write_plain(other, item_id=t.column("item_id"),
                    cluster_id=pa.array([c // 2 for c in t.column("cluster_id").to_pylist()]))
        os.replace(other, path)
    else:
        change_in_the_middle(path)


@pytest.fixture
def changed_while_read(monkeypatch):
    """change(path, mode): the next read of the inputs by build_diff changes ``path`` right after the
    inputs were loaded and validated, before the fragments are computed (a real run otherwise)."""
    def change(path: Path, mode: str = "replaced"):
        original = diff_module._load

        def load_then_change(*a, **k):
            loaded = original(*a, **k)
            monkeypatch.setattr(diff_module, "_load", original)  # once
            swap_file(path, mode)
            return loaded

        monkeypatch.setattr(diff_module, "_load", load_then_change)
    return change


def kept_tables(db: Path) -> list[str]:
    eng = abcde.connect(database=db)
    try:
        return sorted(n for (n,) in eng.con.raw_sql("SELECT table_name FROM duckdb_tables()").fetchall()
                      if n.startswith("abcde_kept_"))
    finally:
        eng.close()


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    if code == 1:
        assert isinstance(r.exception, SystemExit) and "Traceback" not in r.output
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    return r


# -- the fingerprint --------------------------------------------------------------------------------

def test_a_change_in_the_middle_gives_another_fingerprint(large, check_path):
    before = input_fingerprint(large["base"])
    assert before == {"size": large["base"].stat().st_size, "sha256": files.file_digest(large["base"])}
    assert input_fingerprint(large["base"]) == before  # unchanged: the same (from memory on the identity path)
    change_in_the_middle(large["base"])
    after = input_fingerprint(large["base"])
    assert after["size"] == before["size"] and after["sha256"] != before["sha256"]
    files._KNOWN.clear()  # as a new process sees it
    assert input_fingerprint(large["base"]) == after


def test_directories_and_uris_have_no_fingerprint(tmp_path, large):
    parts = tmp_path / "parts"
    parts.mkdir()
    shutil.copy(large["base"], parts / "part-0.parquet")
    prints = InputPrints({"base": parts, "exp": large["exp"], "items": "s3://bucket/items.parquet",
                          "truth": pq.read_table(large["exp"])})
    assert prints.unprinted == ["base", "items"] and set(prints.prints) == {"exp"}
    assert prints.unprinted_text() == f"base '{parts}', items 's3://bucket/items.parquet'"


# -- kept tables (--database) -----------------------------------------------------------------------

def test_kept_tables_are_not_reused_for_a_file_changed_in_the_middle(check_path, tmp_path, large):
    """The issue's case: JaccardDistance must be the changed file's, not the kept one's."""
    db = tmp_path / "k.duckdb"
    first = abcde.impact(large["base"], large["exp"], engine=abcde.connect(database=db))
    again = abcde.impact(large["base"], large["exp"], engine=abcde.connect(database=db))  # reused
    assert again.jaccard_distance == first.jaccard_distance
    change_in_the_middle(large["base"])
    changed = abcde.impact(large["base"], large["exp"], engine=abcde.connect(database=db))
    fresh = abcde.impact(large["base"], large["exp"])  # in memory, nothing kept
    assert changed.jaccard_distance == pytest.approx(fresh.jaccard_distance, rel=1e-12)
    assert fresh.jaccard_distance != pytest.approx(first.jaccard_distance, rel=1e-9)
    assert len(kept_tables(db)) == 6  # two keys, three tables each (no items table)


@pytest.mark.parametrize("mode", ["replaced", "rewritten in place"])
def test_a_file_changed_while_it_is_read_is_refused_and_nothing_is_kept(check_path, tmp_path, large, changed_while_read,
                                                                         mode):
    db = tmp_path / "k.duckdb"
    changed_while_read(large["base"], mode)
    with pytest.raises(InputError, match=f"The base file '{large['base']}' changed while abcde was reading it"):
        abcde.impact(large["base"], large["exp"], engine=abcde.connect(database=db))
    assert kept_tables(db) == []  # nothing under the old file's key (nor any other)
    # the next run reads the file as it is now, and keeps it under its own key
    now = abcde.impact(large["base"], large["exp"], engine=abcde.connect(database=db))
    assert now.jaccard_distance == pytest.approx(abcde.impact(large["base"], large["exp"]).jaccard_distance, rel=1e-12)
    assert len(kept_tables(db)) == 3


def test_the_cli_refuses_a_file_changed_while_it_is_read_in_one_line(check_path, tmp_path, large, changed_while_read):
    changed_while_read(large["exp"], "rewritten in place")
    r = cli("impact", "--base", large["base"], "--exp", large["exp"], "--database", tmp_path / "k.duckdb", code=1)
    assert f"The exp file '{large['exp']}' changed while abcde was reading it" in r.output


# -- pair samples and evaluations ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["replaced", "rewritten in place"])
def test_a_sample_is_not_written_from_a_file_changed_while_it_is_read(check_path, tmp_path, large, changed_while_read,
                                                                      mode):
    recorded = input_fingerprint(large["base"])
    changed_while_read(large["base"], mode)
    with pytest.raises(InputError, match=r"base file .* changed while abcde was reading it \(drawing the pairs\)"):
        abcde.draw_pair_sample(large["base"], large["exp"], tmp_path / "p", budget=20, seed=1)
    assert not (tmp_path / "p").exists() and [p.name for p in tmp_path.iterdir()] == ["in"]
    # drawn again from the file as it is now: the sample records that file's fingerprint
    abcde.draw_pair_sample(large["base"], large["exp"], tmp_path / "p", budget=20, seed=1)
    meta = json.loads((tmp_path / "p" / "metadata.json").read_text())
    assert meta["input_fingerprints"]["base"] == input_fingerprint(large["base"]) != recorded


def test_an_evaluation_is_not_swapped_in_from_a_file_changed_while_it_is_read(check_path, tmp_path, large,
                                                                              changed_while_read):
    kw = dict(budget=20, sample_size=50, seed=1)
    ev = tmp_path / "ev"
    evaluate(large["base"], large["exp"], ev, **kw)
    before = {str(p.relative_to(ev)): p.read_bytes() for p in ev.rglob("*") if p.is_file()}
    changed_while_read(large["exp"], "rewritten in place")
    with pytest.raises(InputError, match=r"exp file .* changed while abcde was reading it"):
        evaluate(large["base"], large["exp"], ev, force=True, **kw)
    assert {str(p.relative_to(ev)): p.read_bytes() for p in ev.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev", "in"]  # nothing left aside
    # the record and the sample name the same fingerprints: those of the files that were read
    res = evaluate(large["base"], large["exp"], ev, force=True, **kw)
    meta = json.loads((ev / "quality" / "metadata.json").read_text())
    assert {k: res.record["inputs"][k]["fingerprint"] for k in ("base", "exp")} == meta["input_fingerprints"] \
        == {k: input_fingerprint(large[k]) for k in ("base", "exp")}


# -- pairs --extend and report --quality name the changed file -------------------------------------------

@pytest.fixture
def sample(tmp_path, large) -> Path:
    d = tmp_path / "p"
    cli("pairs", "--base", large["base"], "--exp", large["exp"], "--budget", 20, "--seed", 1, "--out", d, "-q")
    return d


def test_pairs_extend_and_report_quality_name_a_file_changed_in_the_middle(check_path, tmp_path, large, sample):
    change_in_the_middle(large["base"])
    before = {p.name: p.read_bytes() for p in sample.iterdir()}
    for args in (["pairs", "--extend", sample, "--budget", 30],
                 ["report", "--base", large["base"], "--exp", large["exp"], "--quality", sample,
                  "--out", tmp_path / "r.html"]):
        msg = cli(*args, "-q", code=1).output
        assert f"base '{large['base']}' differs" in msg and "'base.parquet' changed since the sample was drawn" in msg
        assert "bug" not in msg
    assert {p.name: p.read_bytes() for p in sample.iterdir()} == before
    assert not (tmp_path / "r.html").exists()


def test_pairs_extend_names_a_file_changed_while_it_reads_it(check_path, large, sample, changed_while_read):
    before = {p.name: p.read_bytes() for p in sample.iterdir()}
    changed_while_read(large["exp"], "rewritten in place")
    msg = cli("pairs", "--extend", sample, "--budget", 30, "-q", code=1).output
    assert f"The exp file '{large['exp']}' changed while abcde was reading it (extending the pair sample)" in msg
    assert "bug" not in msg
    assert {p.name: p.read_bytes() for p in sample.iterdir()} == before


def test_inputs_that_cannot_be_fingerprinted_are_named(tmp_path, large):
    """A directory of part files is read as given, with no fingerprint: --database keeps nothing for
    it and says why; pairs --extend says it cannot check it, and when the draws no longer continue,
    names it as the likely cause (never "a bug")."""
    parts = tmp_path / "parts"
    parts.mkdir()
    shutil.copy(large["base"], parts / "part-0.parquet")
    r = cli("impact", "--base", parts, "--exp", large["exp"], "--database", tmp_path / "k.duckdb")
    assert f"Nothing is kept in the database for these inputs: base '{parts}' is a directory or URI" in r.stderr
    d = tmp_path / "pd"
    cli("pairs", "--base", parts, "--exp", large["exp"], "--budget", 20, "--seed", 1, "--out", d, "-q")
    r = cli("pairs", "--extend", d, "--budget", 25)
    assert f"base '{parts}' is a directory or URI, which abcde cannot fingerprint" in r.stderr
    shutil.copy(large["exp"], parts / "part-0.parquet")  # the directory's content changes
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    msg = cli("pairs", "--extend", d, "--budget", 30, "-q", code=1).output
    assert "do not continue the sample" in msg and f"Base '{parts}' probably changed" in msg and "bug" not in msg
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
