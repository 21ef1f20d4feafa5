"""Both servers stop on SIGTERM the way they stop on Ctrl+C (issue 39).

SIGTERM is how a service is stopped: systemd, ``docker stop``, ``kill``. ``judge serve`` used to
die by it (exit -15) before closing its store: its last judgements stayed in
``judgements.sqlite-wal`` alone, and a copy of ``judgements.sqlite`` made afterwards (what a
person copies, attaches or backs up) held 0 of 10. Now SIGTERM, like Ctrl+C, stops accepting
connections, answers the requests in flight, closes the store (SQLite then checkpoints its log
into the file and removes it) and exits 0: ``judgements.sqlite`` alone holds every judgement
acknowledged. ``explore serve`` stops the same way.

Real processes, real signals, real HTTP.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abcde.examples import example_paths
from judging_helpers import fresh_copy, make_sample, request, split_url


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("sigterm"))


def start(argv: list[str], log: Path) -> subprocess.Popen:
    """``abcde ARGV`` as a service would run it: SIGINT and SIGTERM at their defaults (a test
    runner may have set SIGINT ignored, which a child would inherit)."""
    def defaults():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    with open(log, "ab") as err:
        return subprocess.Popen([sys.executable, "-m", "abcde", *argv], stdout=subprocess.PIPE, stderr=err, text=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"), preexec_fn=defaults)


def start_judge(d: Path, log: Path) -> tuple[subprocess.Popen, dict]:
    proc = start(["judge", "serve", str(d), "--port", "0", "--json"], log)
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=60)
        raise AssertionError(f"the server did not start (exit {proc.returncode}): {log.read_text()}")
    return proc, json.loads(line)


def judge(url: str, n: int, rater: str = "ann") -> dict[str, str]:
    """``n`` judgements by ``rater``, each acknowledged (201); {pair_id: judgement}."""
    made = {}
    for k in range(n):
        code, state = request(url, "GET", f"/api/state?rater={rater}")
        assert code == 200, state
        pair_id, answer = state["next"]["pair_id"], ("same", "different", "unsure")[k % 3]
        code, body = request(url, "POST", "/api/judgements", {"rater": rater, "pair_id": pair_id, "judgement": answer})
        assert code == 201, body
        made[pair_id] = answer
    return made


def in_a_copy_of_the_file_alone(d: Path, tmp_path: Path) -> dict[str, str]:
    """The live person judgements in a copy of ``judgements.sqlite`` alone (no ``-wal``, no
    ``-shm``): what a person who copies, attaches or backs up the file has."""
    copy = tmp_path / "copied"
    copy.mkdir()
    shutil.copyfile(d / "judgements.sqlite", copy / "judgements.sqlite")
    con = sqlite3.connect(copy / "judgements.sqlite")
    try:
        rows = con.execute("SELECT pair_id, judgement FROM judgements WHERE source = 'person' AND rater = 'ann' "
                           "ORDER BY id").fetchall()
    finally:
        con.close()
    return dict(rows)


def stopped(proc: subprocess.Popen, sig: int, log: Path) -> int:
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert "Traceback" not in log.read_text(), log.read_text()
    return code


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_judge_serve_stops_cleanly_and_the_file_alone_holds_every_judgement(drawn, tmp_path, sig):
    d = fresh_copy(drawn, tmp_path)
    log = tmp_path / "server.log"
    proc, info = start_judge(d, log)
    try:
        made = judge(info["url"], 10)
    except BaseException:
        proc.kill()
        raise
    assert (d / "judgements.sqlite-wal").exists()  # served: the judgements are in the log, not yet the file
    # SIGTERM used to end it by the signal (exit -15), its judgements left in judgements.sqlite-wal
    assert stopped(proc, sig, log) == 0
    assert not (d / "judgements.sqlite-wal").exists()  # checkpointed into the file, and removed
    assert in_a_copy_of_the_file_alone(d, tmp_path) == made
    # the directory is free again: a new server takes it and resumes
    proc, info = start_judge(d, log)
    try:
        assert request(info["url"], "GET", "/api/state?rater=ann")[1]["rater_judgements"] == 10
    finally:
        assert stopped(proc, signal.SIGTERM, log) == 0


def test_the_file_alone_holds_every_judgement_while_another_process_has_the_store_open(drawn, tmp_path):
    """``abcde judge model`` or a reader may have the store open when the server stops: the server's
    close is then not the last, and SQLite checkpoints nothing unless asked."""
    d = fresh_copy(drawn, tmp_path)
    log = tmp_path / "server.log"
    proc, info = start_judge(d, log)
    other = sqlite3.connect(d / "judgements.sqlite")  # an idle connection of another program
    try:
        other.execute("SELECT count(*) FROM meta").fetchone()
        made = judge(info["url"], 10)
    except BaseException:
        proc.kill()
        other.close()
        raise
    try:
        assert stopped(proc, signal.SIGTERM, log) == 0
        assert in_a_copy_of_the_file_alone(d, tmp_path) == made
    finally:
        other.close()


def test_a_judgement_in_flight_when_sigterm_arrives_is_answered_and_kept(drawn, tmp_path):
    """A request whose body is still arriving when SIGTERM comes: the server stops listening, waits
    for the body, commits the judgement, answers 201, and only then exits (0)."""
    d = fresh_copy(drawn, tmp_path)
    log = tmp_path / "server.log"
    proc, info = start_judge(d, log)
    url = info["url"]
    try:
        made = judge(url, 3)
        pair_id = request(url, "GET", "/api/state?rater=ann")[1]["next"]["pair_id"]
        body = json.dumps({"rater": "ann", "pair_id": pair_id, "judgement": "same"}).encode()
        host, port = split_url(url)
        client = socket.create_connection((host, port), timeout=60)
        client.sendall(b"POST /api/judgements HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % (host.encode(), port, len(body)) + body[:10])
        # one more request answered on another connection: the server has read the first one's head
        assert request(url, "GET", "/api/state?rater=bob")[0] == 200
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the server stops listening: it is shutting down
            try:
                socket.create_connection((host, port), timeout=5).close()
            except OSError:
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the server kept listening after SIGTERM")
        client.sendall(body[10:])
        answer = client.makefile("rb").read()  # the server closes the connection after answering
        client.close()
    except BaseException:
        proc.kill()
        raise
    assert re.match(rb"HTTP/1.1 201 ", answer), answer[:200]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["ok"] is True
    assert stopped(proc, signal.SIGTERM, log) == 0  # a second SIGTERM to an exited process changes nothing
    assert in_a_copy_of_the_file_alone(d, tmp_path) == {**made, pair_id: "same"}


@pytest.fixture(scope="module")
def exploration_sample(tmp_path_factory):
    p = example_paths("febrl3")
    out = tmp_path_factory.mktemp("sigterm-explore") / "sample.parquet"
    subprocess.run([sys.executable, "-m", "abcde", "explore", "sample", "--base", p["base"], "--exp", p["exp"],
                    "--items", p["items"], "--size", "300", "--seed", "7", "--out", out], check=True,
                   capture_output=True)
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_explore_serve_stops_cleanly(exploration_sample, tmp_path, sig):
    log = tmp_path / "explore.log"
    proc = start(["explore", "serve", str(exploration_sample), "--port", "0", "--json"], log)
    line = proc.stdout.readline()
    try:
        assert line, log.read_text()
        url = json.loads(line)["url"]
        code, meta = request(url, "GET", "/api/meta")
        assert code == 200, meta
    except BaseException:
        proc.kill()
        raise
    assert stopped(proc, sig, log) == 0  # SIGTERM used to end it by the signal (exit -15)
