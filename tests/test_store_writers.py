"""Every writer of the judgement store is as safe as the web app (issue 25, class 3).

One way opens the store for every reader and writer (:class:`abcde.samples.store.JudgementStore`):
the directory's in-use lock, a check of what SQLite would replay (a write-ahead log or journal
that is not the store's own is moved aside, never replayed, never deleted), the store's identity
(its sample) and integrity (size, ``PRAGMA quick_check``), one-line errors, and writes that are
acknowledged only once on disk. Each case runs the real CLI in a subprocess (``judge export``,
``oracle``, ``model``, ``serve`` and ``quality``) and checks the exit code, one line naming the
path, no traceback, and the judgements intact (exported before and after).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.samples.sqlite_guard import StoreError, wal_problem
from abcde.samples.store import JudgementStore
from judging_helpers import make_sample, request, start_server, stop

P = example_paths("febrl3")
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400", "PYTHONUNBUFFERED": "1"}
for _k in ("ABCDE_LLM_API_KEY", "OPENAI_API_KEY"):
    ENV.pop(_k, None)


# -- helpers -----------------------------------------------------------------------------------------

def abcde(*args, timeout: float = 180, **kw) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV, **kw)


def assert_one_line(p: subprocess.CompletedProcess, *named) -> str:
    """Exit 1, no traceback anywhere, exactly one line ``Error: ...`` naming each of ``named``."""
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "Traceback" not in out, out
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), out
    for n in named:
        assert str(n) in lines[0], (str(n), out)
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): ("dir" if p.is_dir() else digest(p)) for p in sorted(d.rglob("*"))}


def exported(d: Path, tmp_path: Path) -> list[dict]:
    """The store's judgements as ``abcde judge export`` writes them."""
    out = tmp_path / f"export-{time.monotonic_ns()}.jsonl"
    r = CliRunner().invoke(main, ["judge", "export", str(d), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def copy_sample(sample: Path, dest: Path) -> Path:
    shutil.copytree(sample, dest, ignore=shutil.ignore_patterns("judgements*", ".judging*", "llm-cache*"))
    return dest


def judged(sample: Path, dest: Path) -> Path:
    """A copy of ``sample`` with the oracle's judgements and three of a person's (with comments)."""
    d = copy_sample(sample, dest)
    r = CliRunner().invoke(main, ["judge", "oracle", str(d), "--oracle-column", "entity_id"])
    assert r.exit_code == 0, r.output
    store = JudgementStore(d)
    for k, pid in enumerate(store.pair_ids[:3]):
        store.record(pid, "same" if k % 2 else "different", rater="ann", comment=f"note {k}")
    return d


LEAVE_WAL = """
import os, sqlite3, sys
from abcde.samples.store import JudgementStore
d, rater, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
st = JudgementStore(d)
keep = sqlite3.connect(st.path)  # a second connection: the log outlives the writes
keep.execute("SELECT count(*) FROM judgements").fetchone()
for p in st.pair_ids[-n:]:
    st.record(p, "different", rater=rater)
os._exit(0)  # as if killed: no checkpoint, the write-ahead log stays
"""


def leave_wal(d: Path, rater: str = "bob", n: int = 4) -> Path:
    """A writer of ``d``'s store killed with its write-ahead log (holding ``n`` judgements) left."""
    subprocess.run([sys.executable, "-c", LEAVE_WAL, str(d), rater, str(n)], check=True, env=ENV, timeout=120)
    wal = d / "judgements.sqlite-wal"
    assert wal.stat().st_size > 32
    return wal


def hot_journal(tmp_path: Path) -> Path:
    """A rollback journal that SQLite would roll back into any database it finds it beside: another
    database's, left by a writer killed mid-transaction."""
    db = tmp_path / "rollback.db"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.close()
    code = ("import os, sqlite3, sys\ncon = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "con.execute('PRAGMA cache_size=1')\ncon.execute('BEGIN')\n"
            "for i in range(3000): con.execute('INSERT INTO t VALUES (?)', (i,))\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=120)
    journal = db.with_name(db.name + "-journal")
    assert journal.stat().st_size > 0
    return journal


GATED_JUDGE = """
import os, time
calls = 0
def judge(a, b):  # answers two pairs, then waits until the test opens the gate (a file)
    global calls
    calls += 1
    while calls > 2 and not os.path.exists(os.environ["GATE"]):
        time.sleep(0.05)
    return "same" if a["surname"] == b["surname"] else "different"
"""


def gated_model_run(d: Path, tmp_path: Path, *extra) -> tuple[subprocess.Popen, Path]:
    """``abcde judge model`` in a subprocess that records two judgements, then waits for the gate."""
    (tmp_path / "gated.py").write_text(GATED_JUDGE)
    gate = tmp_path / "gate"
    run = subprocess.Popen([sys.executable, "-m", "abcde", "judge", "model", str(d), "--callable",
                            f"{tmp_path / 'gated.py'}:judge", "--concurrency", "1", *extra],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**ENV, "GATE": str(gate)})
    wait_for(lambda: model_judgements(d) >= 2 or run.poll() is not None)
    assert run.poll() is None, run.communicate()
    return run, gate


def model_judgements(d: Path) -> int:
    return len(JudgementStore(d).live(source="model"))


def wait_for(cond, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """Two pair samples of the FEBRL example: ``one`` and another (``two``, another seed)."""
    root = tmp_path_factory.mktemp("writers")
    (root / "one").mkdir()
    (root / "two").mkdir()
    return make_sample(root / "one"), make_sample(root / "two", seed=2)


COMMANDS = {
    "export": lambda d, t: ["judge", "export", d, "--out", t / "out.csv"],
    "oracle": lambda d, t: ["judge", "oracle", d, "--oracle-column", "entity_id"],
    "model": lambda d, t: ["judge", "model", d, "--callable", f"{t / 'judges.py'}:judge"],
    "serve": lambda d, t: ["judge", "serve", d, "--port", "0"],
    "quality": lambda d, t: ["quality", d],
}


def command(name: str, d: Path, tmp_path: Path) -> list:
    (tmp_path / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
    return COMMANDS[name](d, tmp_path)


# -- the pairs drawn again under a model run ------------------------------------------------------------

def test_the_pairs_are_not_drawn_again_under_a_running_model_judge(samples, tmp_path):
    """``judge model`` holds the store in use for its whole run: ``pairs --force`` is refused in one
    line naming it, and the run finishes with every judgement in place (it used to crash with a
    traceback and leave a store without its table)."""
    d = judged(samples[0], tmp_path / "d")
    before = exported(d, tmp_path)
    run, gate = gated_model_run(d, tmp_path, "--json")
    try:
        p = abcde("pairs", "--base", P["exp"], "--exp", P["base"], "--items", P["items"], "--budget", 30, "--seed", 1,
                  "--out", d, "--force")
        line = assert_one_line(p, d, "abcde judge model")
        assert "being served" in line or "in use" in line
        gate.touch()
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    assert json.loads(out)["judged_now"] == 30 and "Traceback" not in err
    assert not (d / "replaced").exists()
    after = exported(d, tmp_path)
    assert [r for r in after if r["source"] != "model"] == before
    assert len([r for r in after if r["source"] == "model"]) == 30


REDRAW_WITHOUT_THE_LOCK = """
import contextlib, sys
import abcde.samples.sample_dir as sd
from abcde.quality import draw_pair_sample
# a draw that does not look at the lock (an older abcde, another tool): neither before nor at its swap
sd.served_by = lambda d: None
sd._held_unchanged = lambda out, old_id: contextlib.nullcontext()
draw_pair_sample(sys.argv[2], sys.argv[1], sys.argv[4], items=sys.argv[3], budget=30, seed=1, force=True)
"""


def test_a_store_moved_under_a_model_judge_stops_it_in_one_line(samples, tmp_path):
    """Even a draw that ignores the lock cannot make a model run write a new, empty store: each
    write checks it is still the file it opened; the run stops in one line and every judgement
    recorded so far is in the store where it went, whole."""
    d = judged(samples[0], tmp_path / "d")
    before = exported(d, tmp_path)
    run, gate = gated_model_run(d, tmp_path)
    try:
        subprocess.run([sys.executable, "-c", REDRAW_WITHOUT_THE_LOCK, P["base"], P["exp"], P["items"], str(d)],
                       check=True, env=ENV, timeout=300)
        gate.touch()
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    p = subprocess.CompletedProcess(run.args, run.returncode, out, err)
    assert_one_line(p, d / "judgements.sqlite", "moved or replaced while in use")
    assert not (d / "judgements.sqlite").exists()  # no store without its table in the new sample
    (aside,) = (d / "replaced").iterdir()
    moved = exported(aside, tmp_path)  # opens (quick_check) and exports: whole
    assert [r for r in moved if r["source"] != "model"] == before
    assert len([r for r in moved if r["source"] == "model"]) >= 2


# -- write-ahead logs and journals that are not the store's own ---------------------------------------

def foreign_log(whose: str, d: Path, samples, tmp_path: Path) -> Path:
    """A ``-wal`` (or ``-journal``) that is not ``d``'s store's own, as a file to put beside it."""
    if whose == "another store of this sample":
        other = judged(samples[0], tmp_path / "other")
        return leave_wal(other)
    if whose == "a store of another sample":
        other = judged(samples[1], tmp_path / "other")
        return leave_wal(other)
    if whose == "a copy of this store that went its own way":
        copy = tmp_path / "copy"
        shutil.copytree(d, copy)
        wal = leave_wal(copy)
        store = JudgementStore(d)  # the original goes on too
        store.record(store.pair_ids[4], "same", rater="ann")
        return wal
    if whose == "a rollback journal of another database":
        return hot_journal(tmp_path)
    raise AssertionError(whose)


@pytest.mark.parametrize("whose", ["another store of this sample", "a store of another sample",
                                   "a copy of this store that went its own way",
                                   "a rollback journal of another database"])
def test_a_foreign_log_is_moved_aside_never_replayed(whose, samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    log = foreign_log(whose, d, samples, tmp_path)
    before = exported(d, tmp_path)
    store_bytes = digest(d / "judgements.sqlite")
    suffix = "-journal" if log.name.endswith("-journal") else "-wal"
    beside = d / f"judgements.sqlite{suffix}"
    shutil.copy(log, beside)
    if suffix == "-wal" and log.with_name(log.name[:-4] + "-shm").exists():
        shutil.copy(log.with_name(log.name[:-4] + "-shm"), d / "judgements.sqlite-shm")
    p = abcde(*command("export", d, tmp_path))
    line = assert_one_line(p, beside, "is not its own", "was not replayed")
    (aside,) = d.glob(f"judgements.sqlite{suffix}.refused-*")
    assert str(aside) in line
    assert digest(aside) == digest(log)  # kept byte for byte: it may hold someone's judgements
    assert not beside.exists() and digest(d / "judgements.sqlite") == store_bytes
    assert exported(d, tmp_path) == before  # the rater's judgements, all there, none of the log's


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_refuses_a_foreign_log(name, samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    log = foreign_log("another store of this sample", d, samples, tmp_path)
    before = exported(d, tmp_path)
    shutil.copy(log, d / "judgements.sqlite-wal")
    p = abcde(*command(name, d, tmp_path), timeout=120)
    assert_one_line(p, d / "judgements.sqlite-wal", "was not replayed")
    assert len(list(d.glob("judgements.sqlite-wal.refused-*"))) == 1
    assert exported(d, tmp_path) == before


def test_the_stores_own_log_left_by_a_killed_writer_is_replayed(samples, tmp_path):
    """The check refuses only what is not the store's: a writer killed with its log left loses
    nothing it stored."""
    d = judged(samples[0], tmp_path / "d")
    before = exported(d, tmp_path)
    leave_wal(d, rater="bob", n=4)
    assert wal_problem(d / "judgements.sqlite", d / "judgements.sqlite-wal") is None
    p = abcde("judge", "export", d, "--out", tmp_path / "all.csv")
    assert p.returncode == 0, p.stderr
    after = exported(d, tmp_path)
    assert [r for r in after if r["rater"] != "bob"] == before
    assert len([r for r in after if r["rater"] == "bob"]) == 4
    assert not list(d.glob("*.refused-*"))


# -- damaged stores and things in the store's place ------------------------------------------------------

def truncated(d: Path) -> None:
    f = d / "judgements.sqlite"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def truncated_mid_page(d: Path) -> None:
    f = d / "judgements.sqlite"
    f.write_bytes(f.read_bytes()[:-100])


def zeroed_page(d: Path) -> None:
    f = d / "judgements.sqlite"
    data = bytearray(f.read_bytes())
    data[2 * 4096:3 * 4096] = bytes(4096)  # page 3: a page of the judgements table's b-tree
    f.write_bytes(bytes(data))


def zeroed_header(d: Path) -> None:
    f = d / "judgements.sqlite"
    data = bytearray(f.read_bytes())
    data[:4096] = bytes(4096)
    f.write_bytes(bytes(data))


def not_a_database(d: Path) -> None:
    (d / "judgements.sqlite").write_text("pair_id,judgement\nx,same\n")


def empty(d: Path) -> None:
    (d / "judgements.sqlite").write_bytes(b"")


def a_directory(d: Path) -> None:
    (d / "judgements.sqlite").unlink()
    (d / "judgements.sqlite").mkdir()
    (d / "judgements.sqlite" / "notes.txt").write_text("mine")


def someone_elses_database(d: Path) -> None:
    (d / "judgements.sqlite").unlink()
    con = sqlite3.connect(d / "judgements.sqlite")
    con.execute("CREATE TABLE recipes (name TEXT)")
    con.execute("INSERT INTO recipes VALUES ('bread')")
    con.commit()
    con.close()


DAMAGE = {"truncated": (truncated, "is truncated"), "a zeroed page": (zeroed_page, "is damaged"),
          "not a database": (not_a_database, "not an SQLite database"),
          "a directory": (a_directory, "is a directory")}
MORE_DAMAGE = {"truncated in a page": (truncated_mid_page, "is truncated"),
               "a zeroed header": (zeroed_header, "not an SQLite database"),
               "empty": (empty, "is empty"), "someone else's database": (someone_elses_database, "not a judgement store")}


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_store_is_one_line_from_every_command(damage, name, samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    make, words = DAMAGE[damage]
    make(d)
    cmd = command(name, d, tmp_path)
    before = snapshot(d)
    p = abcde(*cmd, timeout=120)
    assert_one_line(p, d / "judgements.sqlite", words)
    assert snapshot(d) == before  # nothing written, nothing made


@pytest.mark.parametrize("damage", list(MORE_DAMAGE))
def test_more_damage_is_one_line(damage, samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    make, words = MORE_DAMAGE[damage]
    make(d)
    before = snapshot(d)
    for name in ("export", "model"):
        assert_one_line(abcde(*command(name, d, tmp_path)), d / "judgements.sqlite", words)
    assert snapshot(d) == before


def test_a_store_of_another_sample_is_refused(samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    other = judged(samples[1], tmp_path / "other")
    shutil.copy(other / "judgements.sqlite", d / "judgements.sqlite")
    before = snapshot(d)
    p = abcde(*command("model", d, tmp_path))
    assert_one_line(p, d / "judgements.sqlite", "belongs to sample")
    assert snapshot(d) == before


# -- a full disk: a write that fails is not acknowledged, nothing acknowledged is lost ----------------------

RECORD_UNTIL_IT_FAILS = """
import resource, signal, sys
from abcde.samples.sqlite_guard import StoreError
from abcde.samples.store import JudgementStore
d, limit = sys.argv[1], int(sys.argv[2])
st = JudgementStore(d)
hold = st.hold("a test")  # as a model run or the server do: one connection open, so the log grows
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG) instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
for p in st.pair_ids[3:]:
    try:
        st.record(p, "same", rater="rita", source="person")
    except StoreError as exc:
        print("FAILED", p, exc, flush=True)
        break
    print("ACK", p, flush=True)  # record() returned: acknowledged
"""


def test_a_write_past_a_file_size_limit_is_not_acknowledged_and_loses_nothing(samples, tmp_path):
    """A failing write simulated with RLIMIT_FSIZE (works without root; the tmpfs test below is
    a real full disk): every judgement acknowledged before the failure is in the store, the one
    that failed is not, and the store opens whole."""
    d = judged(samples[0], tmp_path / "d")
    before = exported(d, tmp_path)
    limit = (d / "judgements.sqlite").stat().st_size + 40_000
    p = subprocess.run([sys.executable, "-c", RECORD_UNTIL_IT_FAILS, str(d), str(limit)], capture_output=True,
                       text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr
    acked = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("ACK")]
    failed = [ln for ln in p.stdout.splitlines() if ln.startswith("FAILED")]
    assert acked and len(failed) == 1, p.stdout
    assert "could not be written" in failed[0] and "Nothing of this write was stored" in failed[0]
    after = exported(d, tmp_path)
    rita = [r["pair_id"] for r in after if r["rater"] == "rita"]
    assert rita == acked  # every acknowledged one; not the one that failed
    assert [r for r in after if r["rater"] != "rita"] == before


def test_judge_model_past_a_file_size_limit_is_one_line(samples, tmp_path):
    d = judged(samples[0], tmp_path / "d")
    before = exported(d, tmp_path)
    (tmp_path / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
    limit = (d / "judgements.sqlite").stat().st_size + 40_000

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = abcde("judge", "model", d, "--callable", f"{tmp_path / 'judges.py'}:judge", "--concurrency", 1,
              preexec_fn=limited)
    assert_one_line(p, d / "judgements.sqlite", "could not be written")
    after = exported(d, tmp_path)
    assert [r for r in after if r["source"] != "model"] == before
    assert 0 < len([r for r in after if r["source"] == "model"]) < 30


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (a real full disk: ENOSPC). Mounting needs root."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root; test_a_write_past_a_file_size_limit_... covers a failing write")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    st = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))
    return filler


def test_a_full_disk_under_the_judging_server_loses_no_acknowledged_judgement(samples, small_disk, tmp_path):
    d = judged(samples[0], small_disk / "d")
    before = exported(d, tmp_path)
    proc, info = start_server(d, tmp_path / "server.log")
    try:
        url = info["url"]
        filler = fill(small_disk, 96 * 1024)
        pairs = JudgementStore(d).pair_ids[3:]
        acked, refused = [], None
        for k, pid in enumerate(pairs):
            code, body = request(url, "POST", "/api/judgements",
                                 {"rater": "rita", "pair_id": pid, "judgement": "same", "request_id": f"r{k}"})
            if code == 201:
                acked.append(pid)
                continue
            refused = (pid, code, body)
            break
        assert acked and refused, (acked, refused)
        pid, code, body = refused
        assert code == 500 and body["ok"] is False and "disk is full" in body["error"], body
        assert "\n" not in body["error"]
        filler.unlink()  # space again: the server goes on
        nxt = pairs[len(acked) + 1]
        code, body = request(url, "POST", "/api/judgements", {"rater": "rita", "pair_id": nxt, "judgement": "different"})
        assert code == 201, body
    finally:
        stop(proc)  # SIGKILL: what was acknowledged must be on disk
    after = exported(d, tmp_path)
    assert [r["pair_id"] for r in after if r["rater"] == "rita"] == [*acked, nxt]
    assert [r for r in after if r["rater"] != "rita"] == before


def test_a_full_disk_under_judge_model_is_one_line(samples, small_disk, tmp_path):
    d = judged(samples[0], small_disk / "d")
    before = exported(d, tmp_path)
    (tmp_path / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
    filler = fill(small_disk, 96 * 1024)
    p = abcde("judge", "model", d, "--callable", f"{tmp_path / 'judges.py'}:judge", "--concurrency", 1)
    assert_one_line(p, d / "judgements.sqlite", "disk is full")
    filler.unlink()
    after = exported(d, tmp_path)
    assert [r for r in after if r["source"] != "model"] == before
    assert len([r for r in after if r["source"] == "model"]) < 30
    # and the next run completes what the full disk stopped
    p = abcde("judge", "model", d, "--callable", f"{tmp_path / 'judges.py'}:judge")
    assert p.returncode == 0, p.stderr
    assert len([r for r in exported(d, tmp_path) if r["source"] == "model"]) == 30


def test_opening_the_store_needs_its_folder(samples, tmp_path):
    """A store whose folder disappears under a library user: one StoreError, no new store."""
    d = judged(samples[0], tmp_path / "d")
    store = JudgementStore(d)
    shutil.move(d, tmp_path / "elsewhere")
    with pytest.raises(StoreError, match="is gone"):
        store.record(store.pair_ids[5], "same", rater="ann")
    assert not d.exists()
