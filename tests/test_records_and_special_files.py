"""Records that lie and files that are not files (issue 50, classes 5 to 8).

- **Extreme values in a record** (class 5): an ``evaluate.json`` nested 200,000 deep, a 401-digit
  integer in any field ``abcde report DIR`` uses, a pair sample's or exploration sample's metadata
  nested as deep: one line naming the file, never a traceback (nor a hang: DuckDB told to start
  2**62 threads never finishes starting them).
- **Inputs that are not regular files** (class 6): a named pipe (FIFO) named by a record, put in a
  shared directory's place, or given on the command line is refused before anything opens it (its
  reader would wait forever for a writer); so is a device. Every such run is a real process with a
  generous timeout: if the fix regresses, the test fails instead of hanging.
- **Every input a record names carries its fingerprint** (class 7): a truth (or base, items) with no
  fingerprint, another file under the recorded fingerprint, a directory (``/``: never globbed), a
  relative path, an input of a role evaluate never records: refused, nothing read.
- **``--database`` that is not a DuckDB database** (class 8): the judgement store (SQLite), a Parquet
  file, a text file: refused in one line, the file unchanged, and DuckDB never installs or loads an
  extension on its own (no ``~/.duckdb``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.engine import connect
from abcde.engine.base import Engine
from abcde.examples import example_paths
from abcde.workflow.record import RECORD

P = example_paths("febrl3")
EXE = Path(sys.executable).with_name("abcde")
TIMEOUT = 120  # generous: a refusal takes a second or two; a regression blocks until killed
BIG = 10**400  # 401 digits


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, (r.output, r.exception)
    return r


def lines_of(out: str) -> list[str]:
    """The lines a refusal printed (the progress display's status lines left out)."""
    return [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("abcde: ")]


ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400"}
_forks: list = []  # the fork server of this module (:func:`forks`)


@pytest.fixture(scope="module", autouse=True)
def forks():
    """Runs of ``abcde ARGS`` forked from a process that imported abcde once (with :data:`ENV`), each a
    process of its own (:class:`test_crash_safety.Forks`): a second of imports per run otherwise."""
    from test_crash_safety import CLI_BODY, CLI_SETUP, Forks

    f = Forks(CLI_SETUP, "if req.get('cwd'):\n    os.chdir(req['cwd'])\n" + CLI_BODY, env=ENV)
    _forks.append(f)
    yield f
    _forks.remove(f)
    f.close()


def real_process(args, *, cwd: Path | None = None, home: Path | None = None) -> subprocess.CompletedProcess:
    """``abcde ARGS`` as a process of its own (killed after :data:`TIMEOUT`: a run that waits on a
    pipe fails the test instead of hanging it): forked from :func:`forks`, or (``home``: a HOME of
    its own from its first instruction on, as DuckDB and every import sees it) started anew. Its
    stdout and stderr together in ``stdout``."""
    args = [str(a) for a in args]
    try:
        if home is None:
            p = _forks[0].run(argv=args, cwd=str(cwd) if cwd else None, timeout=TIMEOUT)
            return subprocess.CompletedProcess(args, p.returncode, p.stdout, "")
        exe = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "abcde"]
        p = subprocess.run([*exe, *args], capture_output=True, text=True, timeout=TIMEOUT,
                           env={**ENV, "HOME": str(home)}, stdin=subprocess.DEVNULL, cwd=cwd)
        return subprocess.CompletedProcess(args, p.returncode, p.stdout + p.stderr, "")
    except (subprocess.TimeoutExpired, TimeoutError):
        pytest.fail(f"abcde {' '.join(args)} still ran after {TIMEOUT} s (waiting on a pipe?)")


def refused(*args, home: Path | None = None) -> str:
    """Run ``abcde ARGS`` as a real process (:func:`real_process`); it must exit 1 with one line, no
    traceback."""
    p = real_process(args, home=home)
    out = p.stdout
    assert p.returncode == 1, out
    assert "Traceback" not in out, out
    lines = lines_of(out)
    assert len(lines) == 1 and lines[0].startswith("Error: "), out
    return lines[0]


def refused_here(*args) -> str:
    """The same, in this process (for cases that cannot block)."""
    r = run(*args)
    assert r.exit_code == 1, (r.output, r.exception)
    assert isinstance(r.exception, SystemExit), repr(r.exception)
    lines = lines_of(r.output)
    assert "Traceback" not in r.output and len(lines) == 1 and lines[0].startswith("Error: "), r.output
    return lines[0]


def digest_tree(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[rel] = "special"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """An evaluation of copies of the bundled example (with its truth), judged by an oracle, copied
    as each test copies it (:func:`copy_workspace`) and rebuilt there by ``abcde report``."""
    root = tmp_path_factory.mktemp("records")
    for role in ("base", "exp", "items", "truth"):
        shutil.copy(P[role], root / f"{role}.parquet")
    d = root / "ev"
    ok("evaluate", "--base", root / "base.parquet", "--exp", root / "exp.parquet", "--items", root / "items.parquet",
       "--truth", root / "truth.parquet", "--sample-size", "100", "--budget", "20", "--seed", "3", "--out", d, "-q")
    ok("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    w = copy_workspace(root, tmp_path_factory.mktemp("records-copy") / "w")
    ok("report", w / "ev", "-q")  # a copy, made as each test's is (below), rebuilds as it is
    return w


def copy_workspace(src: Path, w: Path) -> Path:
    """A copy of the workspace ``src`` at ``w``, its record naming the copies' absolute paths."""
    shutil.copytree(src, w)
    rec = json.loads((w / "ev" / RECORD).read_text())
    for r in rec["inputs"].values():
        r["path"] = r["given"] = str(w / Path(r["path"]).name)
    (w / "ev" / RECORD).write_text(json.dumps(rec, indent=2))
    return w


@pytest.fixture
def ws(built, tmp_path) -> Path:
    """A fresh copy of the workspace: the inputs, and the evaluation in ``ev`` (its record names the
    copies' absolute paths), made as the copy that ``built`` rebuilt whole."""
    return copy_workspace(built, tmp_path / "w")


def tamper(d: Path, change) -> None:
    rec = json.loads((d / RECORD).read_text())
    change(rec)
    (d / RECORD).write_text(json.dumps(rec, indent=2) + "\n")


def fifo(path: Path) -> Path:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def set_meta(path: Path, key: bytes, value: bytes) -> None:
    """Replace the footer metadata ``key`` of the Parquet file ``path`` (an edit, as by hand)."""
    t = pq.read_table(path)
    meta = dict(t.schema.metadata or {})
    assert key in meta, list(meta)
    meta[key] = value
    pq.write_table(t.replace_schema_metadata(meta), path)


def abcde_key(path: Path) -> bytes:
    return next(k for k in pq.read_schema(path).metadata if k.startswith(b"abcde"))


DEEP = "[" * 200_000 + "]" * 200_000


# =========================================================================== class 5: extreme values
@pytest.mark.parametrize("where", ["whole", "in-a-field"])
def test_a_record_nested_200000_deep_is_one_line(ws, where):
    d = ws / "ev"
    if where == "whole":
        (d / RECORD).write_text(DEEP)
    else:
        text = (d / RECORD).read_text()
        (d / RECORD).write_text(text.replace('"title": "ABCDE report"', '"title": ' + DEEP, 1))
    before = digest_tree(ws)
    msg = refused_here("report", d)
    assert str(d / RECORD) in msg and "nested too deeply" in msg, msg
    assert digest_tree(ws) == before


@pytest.mark.parametrize("field", ["options.top", "engine.threads", "options.population_entities", "version",
                                   "inputs.truth.fingerprint.size"])
def test_a_401_digit_integer_in_a_record_is_one_line(ws, field):
    d = ws / "ev"

    def change(rec):
        *path, last = field.split(".")
        v = rec
        for k in path:
            v = v[k]
        v[last] = BIG
        if field == "options.population_entities":
            rec["options"]["truth_sample"] = "uniform"

    tamper(d, change)
    before = digest_tree(ws)
    msg = refused_here("report", d)
    assert str(d / RECORD) in msg, msg
    named = {"version": "of version a 401-digit number",
             "inputs.truth.fingerprint.size": "inputs.truth ("}.get(field, f"garbles {field}")
    assert named in msg, msg
    assert str(BIG) not in msg  # a short line: the number is not spelled out
    assert digest_tree(ws) == before


def test_a_record_asking_for_more_threads_than_can_start_is_refused_not_waited_on(ws):
    """2**62 threads fit in 64 bits, and DuckDB, told so, never finished starting them: a hang from
    a shared directory's record. The record's threads are at most :data:`MAX_THREADS`, and so are
    the command line's."""
    d = ws / "ev"
    tamper(d, lambda rec: rec["engine"].__setitem__("threads", 2**62))
    assert "engine.threads" in refused("report", d)
    msg = refused("impact", "--base", ws / "base.parquet", "--exp", ws / "exp.parquet", "--threads", 2**62)
    assert "threads must be a whole number from 1 to 4,096" in msg, msg


@pytest.mark.parametrize("where", ["pairs.parquet", "metadata.json"])
def test_a_pair_samples_metadata_nested_200000_deep_is_one_line(ws, where):
    q = ws / "ev" / "quality"
    if where == "pairs.parquet":
        set_meta(q / where, abcde_key(q / where), DEEP.encode())
    else:
        (q / where).write_text(DEEP)
    before = digest_tree(ws)
    for argv in (("report", ws / "ev"), ("quality", q)):
        msg = refused_here(*argv)
        # the sample named (by its directory, or its pairs.parquet there), and why
        assert (f"the pair sample in '{q}'" in msg.lower() or f"'{q / 'pairs.parquet'}'" in msg) \
            and "nested too deeply" in msg, msg
    assert digest_tree(ws) == before


@pytest.mark.parametrize("value", [DEEP.encode(), None])
def test_an_exploration_samples_extreme_metadata_is_one_line(ws, value):
    f = ws / "ev" / "explore" / "sample.parquet"
    if value is None:  # a 401-digit exact JaccardDistance: overflowed the estimates' floats
        meta = json.loads(pq.read_schema(f).metadata[abcde_key(f)])
        meta["jaccard_distance_T"] = BIG
        value = json.dumps(meta).encode()
    set_meta(f, abcde_key(f), value)
    for argv in (("report", ws / "ev"), ("explore", "query", f)):
        msg = refused_here(*argv)
        assert str(f) in msg, msg


# =========================================================================== class 6: not regular files
@pytest.mark.parametrize("role", ["base", "items", "truth"])
def test_a_record_naming_a_named_pipe_is_refused_not_waited_on(ws, role):
    d = ws / "ev"
    pipe = fifo(ws / f"{role}.parquet")  # in place of the recorded input itself
    msg = refused("report", d)
    assert f"The {role} input '{pipe}'" in msg and "named pipe (FIFO)" in msg and str(d / RECORD) in msg, msg


def test_a_record_naming_a_pipe_inside_the_shared_directory_is_refused(ws):
    """A relative path in a record (resolved from wherever the command runs, often beside DIR) to a
    pipe put inside the shared directory: refused, as every path evaluate never writes."""
    d = ws / "ev"
    fifo(d / "truth.parquet")
    tamper(d, lambda rec: rec["inputs"]["truth"].update(path="ev/truth.parquet", given="ev/truth.parquet"))
    p = real_process(["report", "ev"], cwd=ws)
    lines = lines_of(p.stdout)
    assert p.returncode == 1 and len(lines) == 1, p.stdout
    assert "inputs.truth" in lines[0] and "relative path 'ev/truth.parquet'" in lines[0], lines


@pytest.mark.parametrize("entry", ["quality/judgements.sqlite", "quality/pairs.parquet", "quality/judgements.csv",
                                   "explore/sample.parquet"])
def test_a_pipe_in_the_shared_directorys_own_places_is_refused(ws, entry):
    d = ws / "ev"
    pipe = fifo(d / entry)
    msg = refused("report", d)
    assert f"'{pipe}'" in msg and "named pipe (FIFO)" in msg, msg
    if entry.startswith("quality/"):
        msg = refused("quality", d / "quality")
        assert f"'{pipe}'" in msg and "named pipe (FIFO)" in msg, msg


@pytest.mark.parametrize("case", ["impact-base", "impact-base-csv", "impact-items", "impact-device", "pairs-exp",
                                  "evaluate-base", "report-truth", "report-sample", "report-judgements",
                                  "quality-judgements", "explore-query"])
def test_a_named_pipe_on_the_command_line_is_refused_before_it_is_opened(ws, case):
    w = ws
    pipe = fifo(w / ("pipe.csv" if case.endswith(("-csv", "judgements")) else "pipe.parquet"))
    base, exp, items = w / "base.parquet", w / "exp.parquet", w / "items.parquet"
    both = ["--base", base, "--exp", exp]
    argv, culprit = {
        "impact-base": (["impact", "--base", pipe, "--exp", exp], pipe),
        "impact-base-csv": (["impact", "--base", pipe, "--exp", exp], pipe),
        "impact-items": (["impact", *both, "--items", pipe], pipe),
        "impact-device": (["impact", "--base", "/dev/zero", "--exp", exp], "/dev/zero"),
        "pairs-exp": (["pairs", "--base", base, "--exp", pipe, "--budget", 5, "--seed", 1, "--out", w / "p"], pipe),
        "evaluate-base": (["evaluate", "--base", pipe, "--exp", exp, "--out", w / "e"], pipe),
        "report-truth": (["report", *both, "--truth", pipe, "--out", w / "r.html"], pipe),
        "report-sample": (["report", *both, "--sample", pipe, "--out", w / "r.html"], pipe),
        "report-judgements": (["report", *both, "--items", items, "--quality", w / "ev" / "quality", "--judgements",
                               pipe, "--out", w / "r.html"], pipe),
        "quality-judgements": (["quality", w / "ev" / "quality", "--judgements", pipe], pipe),
        "explore-query": (["explore", "query", pipe], pipe),
    }[case]
    before = digest_tree(w)
    msg = refused(*argv, "-q") if argv[0] not in ("quality", "explore") else refused(*argv)
    assert f"'{culprit}'" in msg and "not a regular file" in msg, msg
    assert digest_tree(w) == before


# =========================================================================== class 7: unfingerprinted inputs
@pytest.fixture
def reads(monkeypatch) -> list:
    """Every source an engine is asked to read (a directory is refused here instead of globbed)."""
    seen: list = []
    real = Engine.read

    def read(self, source, *, role):
        seen.append((role, os.fspath(source) if isinstance(source, (str, os.PathLike)) else source))
        if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
            raise AssertionError(f"globbed the directory {source} a record names")
        return real(self, source, role=role)

    monkeypatch.setattr(Engine, "read", read)
    return seen


@pytest.mark.parametrize("role", ["truth", "base", "items"])
def test_an_input_the_record_gives_no_fingerprint_is_refused(ws, reads, role):
    d = ws / "ev"
    tamper(d, lambda rec: rec["inputs"][role].update(fingerprint=None))
    msg = refused_here("report", d)
    assert f"inputs.{role}" in msg and "carries no fingerprint" in msg and str(d / RECORD) in msg, msg
    assert reads == []


def test_a_truth_of_slash_is_never_globbed(ws, reads):
    d = ws / "ev"
    tamper(d, lambda rec: rec["inputs"]["truth"].update(path="/", given="/", fingerprint=None))
    msg = refused_here("report", d)
    assert "The truth input '/'" in msg and "is a directory" in msg, msg
    assert reads == []


def test_a_directory_of_parts_a_record_names_is_not_read(ws, reads):
    d = ws / "ev"
    parts = ws / "truth-parts"
    parts.mkdir()
    shutil.copy(ws / "truth.parquet", parts / "part-0.parquet")
    tamper(d, lambda rec: rec["inputs"]["truth"].update(path=str(parts), given=str(parts), fingerprint=None))
    msg = refused_here("report", d)
    assert f"The truth input '{parts}'" in msg and "is a directory" in msg, msg
    assert reads == []


def test_another_file_under_the_records_fingerprint_is_refused(ws, reads):
    """The truth named by the record is another file than the one it fingerprinted (the record
    edited to point elsewhere, its fingerprint left as it was): refused, before any read. (Refused
    before issue 50 too: a guard that the record's own fingerprint stays checked.)"""
    d = ws / "ev"
    other = ws / "other-truth.parquet"
    t = pq.read_table(ws / "truth.parquet")
    pq.write_table(t.slice(0, t.num_rows // 2), other)
    tamper(d, lambda rec: rec["inputs"]["truth"].update(path=str(other), given=str(other)))
    msg = refused_here("report", d)
    assert f"The truth input '{other}'" in msg and "differs from the file" in msg and str(d / RECORD) in msg, msg
    assert reads == []


@pytest.mark.parametrize("change, words", [
    (lambda rec, ws: rec["inputs"].__setitem__("labels", {"given": "l.parquet", "path": str(ws / "truth.parquet"),
                                                          "fingerprint": None}), "inputs.labels"),
    (lambda rec, ws: rec["inputs"]["items"].update(path="items.parquet"), "relative path 'items.parquet'"),
    (lambda rec, ws: rec["inputs"]["truth"]["fingerprint"].update(sha256="0" * 12), "garbled fingerprint"),
    (lambda rec, ws: rec["inputs"]["truth"]["fingerprint"].pop("sha256"), "only part of its fingerprint"),
], ids=["unknown-role", "relative", "garbled", "partial"])
def test_inputs_a_record_names_otherwise_are_refused(ws, reads, change, words):
    d = ws / "ev"
    tamper(d, lambda rec: change(rec, ws))
    msg = refused_here("report", d)
    assert words in msg and str(d / RECORD) in msg, msg
    assert reads == []


# =========================================================================== class 8: --database
def _store(ws: Path) -> Path:
    return ws / "ev" / "quality" / "judgements.sqlite"


def _sqlite(ws: Path) -> Path:
    f = ws / "mine.sqlite"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    return f


def _parquet(ws: Path) -> Path:
    f = ws / "table.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), f)
    return f


def _text(ws: Path) -> Path:
    f = ws / "notes.duckdb"
    f.write_text("not a database\n")
    return f


def _empty(ws: Path) -> Path:
    f = ws / "empty.duckdb"
    f.write_bytes(b"")
    return f


@pytest.mark.parametrize("make, kind", [(_store, "a SQLite database"), (_sqlite, "a SQLite database"),
                                        (_parquet, "a Parquet file"), (_text, "not a DuckDB database file"),
                                        (_empty, "an empty file")],
                         ids=["judgement-store", "sqlite", "parquet", "text", "empty"])
@pytest.mark.parametrize("command", ["impact", "report-dir"])
def test_a_database_that_is_not_duckdb_is_refused_and_nothing_is_installed(ws, tmp_path, make, kind, command):
    f = make(ws)
    home = tmp_path / "home"
    home.mkdir()
    before = digest_tree(ws)
    if command == "impact":
        argv = ["impact", "--base", ws / "base.parquet", "--exp", ws / "exp.parquet", "--database", f, "-q"]
    else:
        argv = ["report", ws / "ev", "--database", f, "-q"]
    msg = refused(*argv, home=home)
    assert f"The DuckDB database '{f}' is {kind}" in msg, msg
    assert not (home / ".duckdb").exists() and list(home.iterdir()) == []  # nothing downloaded nor written
    assert digest_tree(ws) == before  # the store (or file) as it was, byte for byte


def test_a_pipe_or_directory_as_database_is_refused_not_opened(ws, tmp_path):
    pipe = fifo(ws / "pipe.duckdb")
    msg = refused("impact", "--base", ws / "base.parquet", "--exp", ws / "exp.parquet", "--database", pipe, "-q")
    assert f"The DuckDB database '{pipe}' is a named pipe (FIFO)" in msg, msg


def test_duckdb_never_installs_or_loads_extensions_on_its_own(tmp_path):
    """Every connection abcde opens (in memory, a database file, another session of it) has DuckDB's
    automatic extension installing and loading off; a DuckDB file abcde made opens again."""
    settings = "SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
    db = tmp_path / "kept.duckdb"
    for database in (None, db, db):  # new, then the file it made
        eng = connect(database=database)
        try:
            assert eng.con.raw_sql(settings).fetchone() == (False, False)
            other = eng.session()
            assert other.con.raw_sql(settings).fetchone() == (False, False)
        finally:
            eng.close()
    assert db.read_bytes()[8:12] == b"DUCK"
    con = duckdb.connect(str(tmp_path / "theirs.duckdb"))  # a DuckDB file made by DuckDB itself
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    connect(database=tmp_path / "theirs.duckdb").close()


def test_a_pair_samples_metadata_nested_200000_deep_is_one_line_from_every_command(tmp_path):
    """The pair sample's own reader (samples/sample_dir.py) names the file, so judge and pairs --extend
    end in one line too (issue 50, class 5)."""
    import pyarrow.parquet as _pq

    from judging_helpers import make_sample

    (tmp_path / "m").mkdir()
    d = make_sample(tmp_path / "m")
    t = _pq.read_table(d / "pairs.parquet")
    meta = t.schema.metadata
    key = next(k for k in meta if b"abcde" in k)
    _pq.write_table(t.replace_schema_metadata({**meta, key: ("[" * 200000 + "]" * 200000).encode()}),
                    d / "pairs.parquet")
    for cmd in (["judge", "oracle", str(d), "--oracle-column", "entity_id"], ["pairs", "--extend", str(d),
                                                                              "--budget", "40"]):
        r = real_process(cmd)  # its stdout and stderr
        assert r.returncode == 1 and "Traceback" not in r.stdout, r.stdout[-2000:]
        assert "nested too deeply" in r.stdout and "pairs.parquet" in r.stdout
