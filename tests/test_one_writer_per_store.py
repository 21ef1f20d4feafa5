"""One writer per store file, whatever the links that lead to it; advice in a race that works
(issue 50, classes 1 and 9).

A sample directory copied with ``cp -al`` (or a store file linked into another folder) shares the
store file, while SQLite keeps a write-ahead log beside each path. The in-use locks are the
folder's, so a second judging server used to run through the copy: both acknowledged every
judgement, and the next command set one server's log aside. Now every operation claims the store
file itself for its folder: through another folder it is refused in one line, before anything is
acknowledged, and every judgement of the first writer stays in the store.

When two ``abcde pairs --extend`` run at once, the loser used to be told to pass ``--force``,
which ``--extend`` refuses; it is now told to wait and run the command again, which works.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.quality.draw import extend_pair_sample
from abcde.samples.dir_lock import StoreInUseElsewhereError
from abcde.samples.sample_dir import PairSampleDir
from abcde.samples.sqlite_guard import STORE_NAME, StoreError
from abcde.samples.store import JudgementStore
from judging_helpers import make_sample, request, start_server, stop

ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400", "PYTHONUNBUFFERED": "1"}
for _k in ("ABCDE_LLM_API_KEY", "OPENAI_API_KEY"):
    ENV.pop(_k, None)
P = example_paths("febrl3")


def abcde(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def one_line(p: subprocess.CompletedProcess, *named) -> str:
    """Exit 1, no traceback, exactly one line ``Error: ...`` on stderr naming each of ``named``."""
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "Traceback" not in out, out
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), out
    for n in named:
        assert str(n) in lines[0], (str(n), out)
    return lines[0]


def exported(d: Path, tmp_path: Path, name: str) -> list[dict]:
    """The store's judgements as ``abcde judge export`` writes them (through folder ``d``)."""
    out = tmp_path / f"{name}.jsonl"
    p = abcde("judge", "export", d, "--out", out)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def set_aside(*dirs: Path) -> list[str]:
    """Side files moved aside as not the store's own (``*.refused-*``): none may appear."""
    return [str(p) for d in dirs for p in d.rglob("*.refused-*")]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("one-writer")
    return make_sample(root)


def copy_sample(sample: Path, dest: Path) -> Path:
    """The sample's files (no judgements, no lock) in a new directory ``dest``."""
    shutil.copytree(sample, dest, ignore=shutil.ignore_patterns("judgements*", ".judging*", "llm-cache*"))
    return dest


def judge(url: str, pair_id: str, rater: str = "ann") -> int:
    """Judge a pair through a server: its HTTP status (201: acknowledged)."""
    code, _ = request(url, "POST", "/api/judgements", {"rater": rater, "pair_id": pair_id, "judgement": "same"})
    return code


# -- class 1: two servers on one store through hard links ---------------------------------------------------

def test_a_second_server_through_a_cp_al_copy_is_refused_and_the_first_keeps_every_judgement(sample, tmp_path):
    d = copy_sample(sample, tmp_path / "d")
    ids = JudgementStore(d).pair_ids
    first, info = start_server(d, tmp_path / "first.log")
    second = None
    try:
        acked = [pid for pid in ids[:2] if judge(info["url"], pid) == 201]
        assert acked == ids[:2]
        e = tmp_path / "e"
        subprocess.run(["cp", "-al", str(d), str(e)], check=True)
        assert os.stat(e / STORE_NAME).st_ino == os.stat(d / STORE_NAME).st_ino  # one store file, two folders

        # The second server: refused in one line before it serves (it never prints its address).
        second = subprocess.Popen([sys.executable, "-m", "abcde", "judge", "serve", str(e), "--port", "0", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        started = second.stdout.readline()
        if started:  # today's bug: it serves, and acknowledges a judgement too
            code = judge(json.loads(started)["url"], ids[5], rater="bob")
            pytest.fail(f"a second server ran through the hard-linked copy (it answered {code})")
        _, err = second.communicate(timeout=300)
        line = one_line(subprocess.CompletedProcess(second.args, second.returncode, "", err), e / STORE_NAME,
                        "another folder")
        assert "--force" not in line

        # Nor does any other writer or reader through the copy get in while the first server runs.
        (tmp_path / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
        one_line(abcde("judge", "model", e, "--callable", f"{tmp_path / 'judges.py'}:judge"), e / STORE_NAME)
        one_line(abcde("judge", "oracle", e, "--oracle-column", "entity_id"), e / STORE_NAME)
        one_line(abcde("judge", "export", e, "--out", tmp_path / "through-e.csv"), e / STORE_NAME)
        assert not (tmp_path / "through-e.csv").exists()

        # The first server goes on.
        more = [pid for pid in ids[2:5] if judge(info["url"], pid) == 201]
        assert more == ids[2:5]
        acked += more
    finally:
        if second is not None and second.poll() is None:
            second.kill()
            second.communicate()
        stop(first)  # SIGKILL: what it acknowledged must be in the store
    after = exported(d, tmp_path, "after")
    assert [r["pair_id"] for r in after] == acked and {r["rater"] for r in after} == {"ann"}
    assert set_aside(d, tmp_path / "e") == []
    # Once nothing uses it through d, the copy may use it (the same store file, the same judgements).
    assert [r["pair_id"] for r in exported(tmp_path / "e", tmp_path, "through-e")] == acked
    assert [r["pair_id"] for r in exported(d, tmp_path, "again")] == acked
    assert set_aside(d, tmp_path / "e") == []


def test_a_store_file_linked_into_another_sample_folder_has_one_folder_at_a_time(sample, tmp_path):
    d = copy_sample(sample, tmp_path / "d")
    store = JudgementStore(d)
    ids = store.pair_ids
    store.record(ids[0], "same", rater="ann")
    e = copy_sample(sample, tmp_path / "e")
    os.link(d / STORE_NAME, e / STORE_NAME)  # the store alone linked: e has its own lock file, no log yet

    hold = JudgementStore(d).hold("a model run (test)")  # as `judge model` or the server hold it
    try:
        with pytest.raises(StoreInUseElsewhereError) as refused:  # opening it for writing, in this process too
            JudgementStore(e)
        msg = str(refused.value)
        assert isinstance(refused.value, StoreError) and "\n" not in msg
        assert str(e / STORE_NAME) in msg and "another folder" in msg
        (tmp_path / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
        one_line(abcde("judge", "model", e, "--callable", f"{tmp_path / 'judges.py'}:judge"), e / STORE_NAME)
        p = abcde("judge", "serve", e, "--port", "0", "--json")
        one_line(p, e / STORE_NAME, "another folder")
        assert p.stdout == ""  # never served
        store.record(ids[1], "different", rater="ann")  # the folder in use goes on
    finally:
        hold.close()
    # Nothing uses it through d now: e may, and holds it in turn.
    through_e = JudgementStore(e)
    assert [(j.pair_id, j.judgement) for j in through_e.live()] == [(ids[0], "same"), (ids[1], "different")]
    with through_e.hold("another model run (test)"):
        with pytest.raises(StoreInUseElsewhereError):
            store.record(ids[2], "same", rater="ann")
        through_e.record(ids[2], "same", rater="bob")
    store.record(ids[3], "same", rater="ann")
    assert sorted((j.rater, j.pair_id) for j in JudgementStore(d).live()) == sorted(
        [("ann", ids[0]), ("ann", ids[1]), ("bob", ids[2]), ("ann", ids[3])])
    assert set_aside(d, e) == []


def test_the_same_folder_through_a_symbolic_link_is_the_same_folder(sample, tmp_path):
    """A symbolic link to the folder leads to the same log: readers share the store with the server,
    and a second server through the link is refused as before (one server per folder)."""
    d = copy_sample(sample, tmp_path / "d")
    ids = JudgementStore(d).pair_ids
    link = tmp_path / "link"
    link.symlink_to(d, target_is_directory=True)
    proc, info = start_server(d, tmp_path / "server.log")
    try:
        assert judge(info["url"], ids[0]) == 201
        assert [r["pair_id"] for r in exported(link, tmp_path, "through-link")] == [ids[0]]
        JudgementStore(link).record(ids[1], "different", rater="bob")
        line = one_line(abcde("judge", "serve", link, "--port", "0", "--json"), link)
        assert "already being served" in line
        assert judge(info["url"], ids[2]) == 201
    finally:
        stop(proc)
    assert sorted(r["pair_id"] for r in exported(d, tmp_path, "after")) == sorted(ids[:3])


# -- class 9: advice in a race ----------------------------------------------------------------------------

@pytest.fixture
def drawn(tmp_path) -> Path:
    d = tmp_path / "pairs"
    r = CliRunner().invoke(main, ["pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"],
                                  "--budget", "30", "--seed", "1", "--out", str(d), "-q"])
    assert r.exit_code == 0, r.output
    store = JudgementStore(d)
    store.record(store.pair_ids[0], "same", rater="ann")
    return d


def extend(d: Path, budget: int):
    return CliRunner().invoke(main, ["pairs", "--extend", str(d), "--budget", str(budget), "-q"])


def assert_advice_works(r, d: Path) -> str:
    """One line, exit 1, no advice that ``pairs --extend`` refuses (``--force``, ``--out``), no
    server to stop: wait and run the command again."""
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    line = lines[0]
    assert str(d) in line and "--force" not in line and "--out" not in line and "server" not in line, line
    assert "run the command again" in line, line
    return line


def test_an_extension_that_loses_the_race_to_another_is_told_to_run_again(drawn, monkeypatch):
    """The other ``--extend`` finishes while this one draws (after this one read the sample,
    before it writes)."""
    from abcde.quality import draw

    real, raced = draw.write_sample_dir, []

    def another_extension_first(*args, **kwargs):
        if not raced:
            raced.append(True)
            extend_pair_sample(drawn, budget=40)  # the winner, to its end
        return real(*args, **kwargs)

    monkeypatch.setattr(draw, "write_sample_dir", another_extension_first)
    before = PairSampleDir.read(drawn).metadata["sample_id"]
    r = extend(drawn, 50)
    assert raced
    line = assert_advice_works(r, drawn)
    assert "another abcde pairs" in line
    won = PairSampleDir.read(drawn).metadata
    assert won["budget"] == 40 and won["extends"][-1]["sample_id"] == before  # the winner's sample, untouched
    monkeypatch.setattr(draw, "write_sample_dir", real)
    # the advice works: run again, it extends the sample the directory holds now
    r = extend(drawn, 50)
    assert r.exit_code == 0, r.output
    meta = PairSampleDir.read(drawn).metadata
    assert meta["budget"] == 50 and [x["budget"] for x in meta["extends"]] == [30, 40]
    assert [j.rater for j in JudgementStore(drawn).live()] == ["ann"]


GATED_EXTEND = """
import os, sys, time
import abcde.samples.sample_dir as sd
from abcde.quality.draw import extend_pair_sample
real = sd._link_kept
def gated(*args, **kwargs):  # holds the directory's lock, as at its swap, until the test opens the gate
    open(sys.argv[2], "w").close()
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.05)
    return real(*args, **kwargs)
sd._link_kept = gated
extend_pair_sample(sys.argv[1], budget=40)
"""


def test_an_extension_while_another_holds_the_directory_is_told_to_wait_and_run_again(drawn, tmp_path):
    """The other ``--extend`` (another process) holds the directory's lock exclusively, as every draw
    does around its swap, when this one starts."""
    script, holding, gate = tmp_path / "gated.py", tmp_path / "holding", tmp_path / "gate"
    script.write_text(GATED_EXTEND)
    winner = subprocess.Popen([sys.executable, str(script), str(drawn), str(holding), str(gate)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        while not holding.exists():  # the winner holds the lock now
            assert winner.poll() is None, winner.communicate()
            time.sleep(0.05)
        r = extend(drawn, 50)
        line = assert_advice_works(r, drawn)
        assert f"pid {winner.pid}" in line and "wait for it to finish" in line.lower()
        gate.touch()
        _, err = winner.communicate(timeout=300)
        assert winner.returncode == 0, err
    finally:
        if winner.poll() is None:
            winner.kill()
            winner.communicate()
    assert PairSampleDir.read(drawn).metadata["budget"] == 40
    r = extend(drawn, 50)  # the advice works
    assert r.exit_code == 0, r.output
    assert PairSampleDir.read(drawn).metadata["budget"] == 50
    assert [j.rater for j in JudgementStore(drawn).live()] == ["ann"]
