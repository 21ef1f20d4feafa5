"""``abcde report DIR`` does not trust ``DIR/evaluate.json`` (issue 39, part 1).

An evaluation directory is something people share: attached to a review, copied from a colleague.
So ``abcde report DIR`` writes only inside DIR (``DIR/report.html``, ``DIR/report.md``), reads only
what ``abcde evaluate`` put there (``DIR/quality``, ``DIR/explore/sample.parquet``: never through a
link out of DIR), opens no database the record names, connects to no Spark server the record names
and reads no input the record names by URI, unless the user says so on the command line. A record
naming anything else is refused in one line naming the field; the command leaves every file
outside DIR as it was (the whole tree around DIR is compared, byte for byte, before and after).

One real evaluation of the bundled example (judged by an oracle) and another pair sample of the
same inputs (another seed, judged too) are built once; each test tampers with a copy.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.engine.base import Engine
from abcde.engine.spark import SparkEngine
from abcde.examples import example_paths
from abcde.workflow.record import OUTPUTS, RECORD

P = example_paths("febrl3")
OTHER_SEED = "9"  # the other pair sample's seed (the evaluation's is 3)


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, (r.output, r.exception)
    return r


def one_line_error(*args) -> str:
    """Run a command that must be refused: exit 1, one line of error, no traceback."""
    r = run(*args)
    assert r.exit_code == 1, (r.output, r.exception)
    assert isinstance(r.exception, SystemExit), repr(r.exception)  # click's clean exit, not an escaped exception
    assert "Traceback" not in r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), r.output
    return lines[0]


def tree(root: Path) -> dict:
    """Every entry under ``root`` (links not followed): a file's bytes and modification time, a
    link's target, a directory as such."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", p.read_bytes(), p.stat().st_mtime_ns)
    return out


def outside(root: Path, d: Path) -> dict:
    """:func:`tree` of ``root`` without DIR's own entries."""
    name = str(d.relative_to(root))
    return {k: v for k, v in tree(root).items() if k != name and not k.startswith(name + os.sep)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the evaluation directory, judged by an oracle; another pair sample of the same inputs, judged)."""
    root = tmp_path_factory.mktemp("trust")
    d = root / "ev"
    ok("evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--truth", P["truth"],
       "--slice-by", "source", "--sample-size", "200", "--budget", "30", "--seed", "3", "--hide", "entity_id",
       "--out", d, "-q")
    ok("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    other = root / "other"
    ok("pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--slice-by", "source", "--budget",
       "30", "--seed", OTHER_SEED, "--hide", "entity_id", "--out", other, "-q")
    ok("judge", "oracle", other, "--oracle-column", "entity_id")
    return d, other


@pytest.fixture
def ev(built, tmp_path):
    """A copy of the evaluation in a fresh place: (DIR, the place around it, with a file of someone
    else's and a copy of the other pair sample beside DIR)."""
    d, other = built
    mine = tmp_path / "ev"
    shutil.copytree(d, mine, symlinks=True)
    (tmp_path / "victim.txt").write_text("someone else's file\n")
    shutil.copytree(other, tmp_path / "other", symlinks=True)
    return mine, tmp_path


def tamper(d: Path, change) -> None:
    rec = json.loads((d / RECORD).read_text())
    change(rec)
    (d / RECORD).write_text(json.dumps(rec, indent=2) + "\n")


# --------------------------------------------------------------------------- what still works
def test_an_untampered_directory_rebuilds_inside_itself(ev):
    d, root = ev
    before = outside(root, d)
    html = (d / "report.html").read_bytes()
    r = ok("report", d, "--json", "-q")
    assert json.loads(r.stdout)["written"] == [str(d / "report.html"), str(d / "report.md")]
    assert (d / "report.html").read_bytes() != html  # rebuilt, now with the oracle's judgements
    assert 'data-quality="delta_precision"' in (d / "report.html").read_text()
    assert outside(root, d) == before


def test_a_moved_directory_rebuilds_where_it_is_now(ev):
    """A shared directory gets copied or moved: the record's outputs are DIR's own names, so the
    report is rebuilt in the directory's new place, from its own pair sample."""
    d, root = ev
    (root / "a").mkdir()
    moved = root / "b" / "now-here"
    moved.parent.mkdir()
    d.rename(moved)
    before = outside(root, moved)
    r = ok("report", moved, "--json", "-q")
    j = json.loads(r.stdout)
    assert j["written"] == [str(moved / "report.html"), str(moved / "report.md")]
    assert j["quality"]["judged_pairs"] == 30
    assert outside(root, moved) == before and not d.exists()


# --------------------------------------------------------------------------- outputs named by the record
@pytest.mark.parametrize("field, value", [
    ("report", "{root}/victim.txt"),  # an absolute path replaced an unrelated file with the report
    ("report", "../x/owned.html"),
    ("markdown", "../x/owned.md"),  # created a file beside DIR
    ("markdown", "{root}/victim.txt"),
    ("pair_sample", "{root}/other"),  # another sample of the same inputs, shown as the evaluation's
    ("pair_sample", "../other"),
    ("exploration_sample", "{root}/elsewhere/sample.parquet"),
    ("impact", "{root}/elsewhere"),
    ("report", "quality/judgements.csv"),  # inside DIR, but not the report's place
])
def test_outputs_the_record_puts_elsewhere_are_refused(ev, field, value):
    d, root = ev
    (root / "elsewhere").mkdir()
    shutil.copy(d / OUTPUTS["exploration_sample"], root / "elsewhere" / "sample.parquet")
    v = value.format(root=root)
    tamper(d, lambda rec: rec["outputs"].__setitem__(field, v))
    before = tree(root)
    msg = one_line_error("report", d)
    assert f"outputs.{field}" in msg and str(d / RECORD) in msg and v in msg, msg
    assert tree(root) == before  # nothing written or created, inside DIR or out
    assert not (root / "x").exists()


def test_another_pair_sample_is_never_taken_for_the_evaluations(ev):
    """The case of the issue: a sample of the same inputs with another seed passes every check of
    the inputs; its estimates must not appear as the evaluation's."""
    d, root = ev
    tamper(d, lambda rec: rec["outputs"].__setitem__("pair_sample", str(root / "other")))
    assert "outputs.pair_sample" in one_line_error("report", d)
    # nor through a link in DIR's place
    shutil.rmtree(d / "quality")
    (d / "quality").symlink_to(root / "other", target_is_directory=True)
    tamper(d, lambda rec: rec["outputs"].__setitem__("pair_sample", "quality"))
    before = tree(root)
    msg = one_line_error("report", d)
    assert str(d / "quality") in msg and "outside" in msg, msg
    assert tree(root) == before


# --------------------------------------------------------------------------- links out of DIR
@pytest.mark.parametrize("entry", ["evaluate.json", "quality/judgements.sqlite", "explore/sample.parquet",
                                   "explore", "quality/pairs.parquet"])
def test_links_out_of_the_directory_are_not_followed_to_read(ev, entry):
    d, root = ev
    p = d / entry
    there = root / "elsewhere" / entry
    there.parent.mkdir(parents=True)
    shutil.move(p, there)
    p.symlink_to(there, target_is_directory=there.is_dir())
    before = tree(root)
    msg = one_line_error("report", d)
    assert str(p) in msg and "outside" in msg, msg
    assert tree(root) == before


def test_links_in_place_of_the_reports_are_replaced_never_written_through(ev):
    d, root = ev
    (root / "victim.md").write_text("another file of someone else's\n")
    for name, target in (("report.html", "victim.txt"), ("report.md", "victim.md")):
        (d / name).unlink()
        (d / name).symlink_to(root / target)
    before = outside(root, d)
    ok("report", d, "-q")
    assert outside(root, d) == before
    for name in ("report.html", "report.md"):
        assert not (d / name).is_symlink() and (d / name).is_file()
    assert "Judged by <b>an oracle" in (d / "report.html").read_text()


# --------------------------------------------------------------------------- the engine named by the record
def duckdb_file(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
    con.close()
    return path


@pytest.mark.parametrize("where", ["beside", "inside"])
def test_a_database_the_record_names_is_not_opened(ev, where):
    """The record's database (a cache of kept inputs, opened read-write) is opened only when the
    user gives it on the command line; without that the report is computed without it, and says so."""
    d, root = ev
    db = duckdb_file((root if where == "beside" else d) / "kept.duckdb")
    tamper(d, lambda rec: rec["engine"].__setitem__("database", str(db)))
    before = tree(root)
    r = ok("report", d)
    out = " ".join(r.output.split())
    assert "engine.database" in out and f"'{db}'" in out and "not opened" in out, r.output
    assert "Reusing the validated inputs" not in out
    after = tree(root)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {"ev/report.html", "ev/report.md"}, changed  # the database as it was, byte for byte
    if where == "beside":  # given on the command line, it is the user's own: opened, and kept inputs written
        ok("report", d, "--database", db, "-q")
        assert db.read_bytes() != before[db.name][1]


REMOTE = "sc://evil.example:15002"


@pytest.mark.parametrize("engine, field", [
    ({"name": "spark", "remote": REMOTE}, "engine.remote"),
    ({"name": "duckdb", "remote": REMOTE}, "engine.remote"),
    ({"name": "spark", "master": "spark://evil.example:7077"}, "engine.master"),
    ({"name": "spark", "master": "yarn"}, "engine.master"),
])
def test_a_remote_engine_the_record_names_is_never_connected(ev, monkeypatch, engine, field):
    d, root = ev
    calls = []

    def no_spark(cls, **kw):
        calls.append(kw)
        raise RuntimeError(f"connected to Spark: {kw}")

    monkeypatch.setattr(SparkEngine, "open", classmethod(no_spark))
    tamper(d, lambda rec: rec["engine"].update(engine))
    before = tree(root)
    msg = one_line_error("report", d)
    assert field in msg and str(d / RECORD) in msg and engine.get("remote", engine.get("master")) in msg, msg
    assert calls == [] and tree(root) == before
    # the user's own engine on the command line: the record's is not used
    ok("report", d, "--engine", "duckdb", "-q")
    assert calls == []


@pytest.mark.parametrize("role", ["base", "items", "truth"])
def test_an_input_the_record_names_by_uri_is_read_only_when_the_user_says_so(ev, monkeypatch, role):
    d, root = ev
    url = f"https://evil.example/{role}.parquet"
    reads = []
    real = Engine.read

    def read(self, source, *, role):
        if isinstance(source, str) and "://" in source:
            reads.append(source)
            raise RuntimeError(f"read {source}")
        return real(self, source, role=role)

    monkeypatch.setattr(Engine, "read", read)
    tamper(d, lambda rec: rec["inputs"][role].update(path=url, given=url, fingerprint=None))
    before = tree(root)
    msg = one_line_error("report", d)
    assert f"inputs.{role}" in msg and url in msg and "--remote-inputs" in msg, msg
    assert reads == [] and tree(root) == before
    r = run("report", d, "--remote-inputs", "-q")  # said so: read (here the read fails, as patched)
    assert reads == [url], (r.output, r.exception)
