"""A crash at any moment of drawing pairs leaves the directory holding the old sample or the new
one, whole, and every judgement where it was or aside with its sample (issue 13, item 1).

Two ways to crash: deterministically, a child process that dies (``os._exit``: no clean-up, like
kill -9) just before its k-th file-system step, for every k; and 20 runs killed with SIGKILL at
random moments.

Every run is a process of its own, forked from a server that has imported abcde once (a second of
imports per run otherwise): :class:`Forks`. The deterministic crashes fork from a server that has
also drawn the two samples once, each crash run writing one (every file-system step happens in the
writer, ``write_sample_dir``: the server checks that drawing takes none)."""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from abcde.examples import example_paths
from abcde.quality import PairSampleDir
from abcde.samples.store import JudgementStore

P = example_paths("febrl3")

# A server of forks: SETUP runs once; then for each request (a JSON line on stdin) a child is forked
# that runs BODY with ``req`` (the request) set, its stdout and stderr in ``req["log"]`` (or
# /dev/null), and ends as a process does (os._exit: the server's exit handlers are not its own). The
# server answers each request with the child's pid, then (asked again) waits for it and answers its
# exit status as subprocess gives it.
SERVER = """
import json, os, sys, traceback
{setup}
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            log = os.open(req.get("log") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0), os.dup2(log, 1), os.dup2(log, 2)
{body}
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush(); sys.stderr.flush()
            finally:
                os._exit(code)
    print(json.dumps({{"pid": pid}}), flush=True)
    sys.stdin.readline()  # until asked, the child (ended or not) stays ours: its pid is not reused
    _, status = os.waitpid(pid, 0)
    print(json.dumps({{"code": os.waitstatus_to_exitcode(status)}}), flush=True)
"""

#: What every command imports, imported once by a server that runs ``abcde ARGS`` in each child.
CLI_SETUP = "import abcde.cli, abcde.engine, abcde.quality, abcde.workflow.evaluate, pyarrow.parquet, duckdb, ibis, pandas"
CLI_BODY = "sys.argv = ['abcde', *req['argv']]\nfrom abcde.cli import run\nrun()"


class Forks:
    """A server of forked children (:data:`SERVER`): :meth:`start` forks one, :meth:`wait` waits for
    its end; :meth:`run` both, with what the child printed."""

    def __init__(self, setup: str, body: str, env: dict | None = None):
        script = SERVER.format(setup=textwrap.dedent(setup), body=textwrap.indent(textwrap.dedent(body), " " * 12))
        self.logs = Path(tempfile.mkdtemp(prefix="abcde-forks-"))
        self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1, env=env)
        self.pid = None

    def _answer(self, key: str):
        line = self.proc.stdout.readline()
        assert line, f"the fork server ended (exit {self.proc.wait()})"
        return json.loads(line)[key]

    def start(self, log: Path | None = None, **req) -> int:
        """Fork a child for ``req`` (its output in ``log``, else nowhere); its pid, a process of its
        own to kill as any other."""
        self.proc.stdin.write(json.dumps({**req, "log": str(log) if log else None}) + "\n")
        self.proc.stdin.flush()
        self.pid = self._answer("pid")
        return self.pid

    def wait(self, timeout: float | None = None) -> int:
        """The exit status of the child last started (-9: killed by SIGKILL), as subprocess gives it;
        after ``timeout`` seconds the child is killed and TimeoutError raised."""
        self.proc.stdin.write("wait\n")
        self.proc.stdin.flush()
        if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
            os.kill(self.pid, signal.SIGKILL)
            self._answer("code")
            raise TimeoutError(f"the child still ran after {timeout} s")
        return self._answer("code")

    def run(self, timeout: float | None = None, **req) -> subprocess.CompletedProcess:
        """Run a child to its end: its exit status, and what it printed (as both stdout and stderr)."""
        log = self.logs / "log"
        self.start(log, **req)
        code = self.wait(timeout)
        text = log.read_text()
        return subprocess.CompletedProcess([], code, text, text)

    def close(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        self.proc.stdout.close()
        shutil.rmtree(self.logs)


@pytest.fixture(scope="module")
def cli():
    """``abcde ARGS`` as processes forked from one that has imported abcde."""
    f = Forks(CLI_SETUP, CLI_BODY)
    yield f
    f.close()

# The server of the deterministic crashes: draws the two samples (base/exp, and swapped) once, with the
# file-system steps of the sample directory writer counted; each child writes one of them into
# req["out"] and dies (os._exit, no clean-up) just before step req["crash_at"]. crash_at=0 counts the
# steps and finishes.
STEP_SETUP = """
    import shutil
    import pyarrow.parquet as pq
    import abcde.quality.draw as qd
    import abcde.samples.sample_dir as sd
    from abcde.examples import example_paths
    from abcde.quality import draw_pair_sample

    crash_at, steps, counting = 0, 0, True

    def counted(fn):
        def step(*a, **k):
            global steps
            if counting:
                steps += 1
                if steps == crash_at:
                    os._exit(9)
            return fn(*a, **k)
        return step

    def one_step(fn):  # removing what killed writers left: one step, however many folders
        def run(*a, **k):
            global counting
            counted(lambda: None)()
            counting = False
            try:
                return fn(*a, **k)
            finally:
                counting = True
        return run

    os.link, os.rename, os.replace = counted(os.link), counted(os.rename), counted(os.replace)
    shutil.rmtree, pq.write_table = counted(shutil.rmtree), counted(pq.write_table)
    sd._exchange = counted(sd._exchange)
    sd._remove_leftovers = one_step(sd._remove_leftovers)
    drawn = []  # what draw_pair_sample hands its writer: not swapped, swapped
    qd.write_sample_dir = lambda out_dir, *a, **k: drawn.append((a, k))
    p = example_paths("febrl3")
    for b, e in ((p["base"], p["exp"]), (p["exp"], p["base"])):
        draw_pair_sample(b, e, "unused", items=p["items"], budget=30, seed=1)
    assert steps == 0 and len(drawn) == 2, steps  # drawing takes no step: every one is the writer's
"""
STEP_BODY = """
    a, k = drawn[req["swap"]]
    crash_at, steps = req["crash_at"], 0
    sd.write_sample_dir(req["out"], *a, **{**k, "force": req["force"]})
    print(json.dumps({"steps": steps}))
"""


@pytest.fixture(scope="module")
def writer():
    """Children that write a drawn sample, each dying before a chosen step (:data:`STEP_SETUP`)."""
    f = Forks(STEP_SETUP, STEP_BODY)
    yield f
    f.close()


def child(writer: Forks, crash_at: int, out: Path, *, swap: bool, force: bool) -> subprocess.CompletedProcess:
    return writer.run(crash_at=crash_at, out=str(out), swap=int(swap), force=force)


def judged_sample(writer: Forks, d: Path, *, swap: bool = False) -> tuple[str, set]:
    r = child(writer, 0, d, swap=swap, force=False)
    assert r.returncode == 0, r.stderr
    store = JudgementStore(d)
    for pid in store.pair_ids[:3]:
        store.record(pid, "different", rater="ann")
    return store.meta["sample_id"], {(j.pair_id, j.judgement) for j in store.live()}


def check_whole(d: Path, old_id: str, new_id: str | None, judgements: set) -> str:
    """The directory verifies as the old sample or the new one; the old sample's judgements are in
    it (old) or kept aside with the old sample (new). Returns which."""
    s = PairSampleDir.read(d)  # verifies every file's fingerprint
    got = s.metadata["sample_id"]
    assert got in (old_id, new_id), got
    if got == old_id:
        assert {(j.pair_id, j.judgement) for j in JudgementStore(d).live()} == judgements
        return "old"
    kept = [p for p in (d / "replaced").iterdir() if (p / "judgements.sqlite").exists()]
    assert len(kept) == 1 and str(kept[0]) == s.metadata["replaced"]["moved_to"]
    assert {(j.pair_id, j.judgement) for j in JudgementStore(kept[0]).live()} == judgements
    assert not (d / "judgements.sqlite").exists()
    return "new"


def leftovers(d: Path) -> list[str]:
    return [p.name for p in d.parent.iterdir() if p.name.startswith(f".{d.name}.abcde-")]


@pytest.mark.parametrize("swap", [False, True], ids=["same sample again", "another sample, --force"])
def test_a_crash_before_any_step_leaves_a_whole_sample(tmp_path, writer, swap):
    d = tmp_path / "pairs"
    old_id, judgements = judged_sample(writer, d)
    dry = tmp_path / "dry"
    judged_sample(writer, dry)
    r = child(writer, 0, dry, swap=swap, force=swap)
    assert r.returncode == 0, r.stderr
    n = json.loads(r.stdout.splitlines()[-1])["steps"]
    new_id = PairSampleDir.read(dry).metadata["sample_id"]
    assert (new_id == old_id) != swap
    assert n >= 8  # the file writes, the links, the exchange, the clean-up
    seen = set()
    for k in range(1, n + 1):
        r = child(writer, k, d, swap=swap, force=swap)
        assert r.returncode == 9, (k, r.stderr)
        seen.add(check_whole(d, old_id, new_id, judgements))
        if "new" in seen:  # the exchange happened: the steps after it only clean up
            break
    assert "old" in seen
    assert seen == ({"old", "new"} if swap else {"old"})
    # A crash leaves at most a hidden temporary folder beside the directory, never in it; the
    # next draw works and cleans nothing it should not.
    assert not [p for p in d.iterdir() if p.name.startswith(".abcde")]
    if not swap or "new" not in seen:
        r = child(writer, 0, d, swap=swap, force=swap)
        assert r.returncode == 0, r.stderr
    assert check_whole(d, old_id, new_id, judgements) == ("new" if swap else "old")


def test_sigkill_at_random_moments(tmp_path, writer, cli):
    """20 runs of 'abcde pairs --force' alternating two samples, each killed with SIGKILL at a
    random moment: the directory always verifies as one whole sample, judgements all kept."""
    d = tmp_path / "pairs"
    first_id, judgements = judged_sample(writer, d)
    rng = random.Random(13)
    full = timed(cli, ["pairs", "--base", P["exp"], "--exp", P["base"], "--items", P["items"], "--budget", "30",
                       "--seed", "1", "--out", tmp_path / "timing"])
    ids = {first_id, PairSampleDir.read(tmp_path / "timing").metadata["sample_id"]}
    kept = {first_id: judgements}
    outcomes = []
    for k in range(20):
        swap = k % 2 == 0
        b, e = (P["exp"], P["base"]) if swap else (P["base"], P["exp"])
        code = run_killed(cli, ["pairs", "--base", b, "--exp", e, "--items", P["items"], "--budget", "30", "--seed",
                                "1", "--out", d, "--force", "-q"], rng, full, spread=(0.3, 1.0))
        s = PairSampleDir.read(d)  # verifies
        assert s.metadata["sample_id"] in ids
        outcomes.append(code)
        # every judgement ever made is in the directory or in one of the samples kept aside
        found = set()
        for store_dir in [d, *(p for p in (d / "replaced").glob("*") if p.is_dir())] if (d / "replaced").exists() else [d]:
            if (store_dir / "judgements.sqlite").exists():
                found |= {(j.pair_id, j.judgement) for j in JudgementStore(store_dir).live()}
        assert kept[first_id] <= found
    assert any(c == -signal.SIGKILL for c in outcomes)
    # The next writer removes what the killed ones left beside the directory.
    timed(cli, ["pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", "30", "--seed", "1",
                "--out", d, "--force", "-q"])
    assert leftovers(d) == []


def run_killed(cli: Forks, argv, rng, full: float, spread: tuple[float, float] = (0.2, 1.1)) -> int:
    """Run ``abcde argv`` (a process forked from one with abcde imported) and SIGKILL it at a random
    moment within ``spread`` times its usual run time; its exit status."""
    pid = cli.start(argv=[str(a) for a in argv])
    time.sleep(rng.uniform(*spread) * full)
    os.kill(pid, signal.SIGKILL)  # ended or not: not yet waited for, so that pid is still this run's
    return cli.wait()


def timed(cli: Forks, argv) -> float:
    """The seconds of a whole run of ``abcde argv`` (forked, as :func:`run_killed` runs it)."""
    t0 = time.monotonic()
    r = cli.run(argv=[str(a) for a in argv])
    assert r.returncode == 0, r.stderr
    return time.monotonic() - t0


def test_sigkill_during_extend(tmp_path, writer, cli):
    """20 runs of 'abcde pairs --extend' killed at random moments: the directory always verifies as
    one whole sample (the earlier one or a grown one), every earlier pair and judgement still in it."""
    d = tmp_path / "pairs"
    _, judgements = judged_sample(writer, d)
    first = PairSampleDir.read(d).judgeable_ids()
    # The kill moments are spread over 0.2-1.6x the time of one whole extend, measured here on the
    # same machine and load: about a third of the runs finish, the rest die at any stage.
    full = timed(cli, ["pairs", "--extend", d, "--budget", PairSampleDir.read(d).metadata["budget"] + 5, "-q"])
    rng = random.Random(17)
    codes = []
    for k in range(20):
        budget = PairSampleDir.read(d).metadata["budget"] + 5
        codes.append(run_killed(cli, ["pairs", "--extend", d, "--budget", budget, "-q"], rng, full, spread=(0.2, 1.6)))
        s = PairSampleDir.read(d)  # verifies
        assert first <= s.judgeable_ids()
        assert s.metadata["judgeable_pairs"] in (budget - 5, budget)
        assert {(j.pair_id, j.judgement) for j in JudgementStore(d).live()} == judgements
    assert any(c == -signal.SIGKILL for c in codes) and any(c == 0 for c in codes), codes
    assert timed(cli, ["pairs", "--extend", d, "--budget", PairSampleDir.read(d).metadata["budget"] + 5, "-q"]) > 0
    assert leftovers(d) == []


def test_sigkill_during_the_oracle(tmp_path, writer, cli):
    """20 runs of 'abcde judge oracle' killed at random moments: people's judgements are all there,
    the oracle's are whole or absent (one transaction), and a later run completes them."""
    d = tmp_path / "pairs"
    judged_sample(writer, d)
    people = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(d).live()}
    runs = [tmp_path / f"run{k}" for k in range(20)]
    for e in runs:
        shutil.copytree(d, e)
    full = timed(cli, ["judge", "oracle", d, "--oracle-column", "entity_id"])
    want = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(d).live()}
    assert len(want - people) == len(JudgementStore(d).pair_ids)
    rng = random.Random(19)
    codes = []
    for e in runs:
        codes.append(run_killed(cli, ["judge", "oracle", e, "--oracle-column", "entity_id"], rng, full))
        PairSampleDir.read(e)  # verifies
        got = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(e).live()}
        assert got in (people, want), len(got)
    assert any(c == -signal.SIGKILL for c in codes), codes
    e = runs[0]  # a later run completes what a killed one left
    timed(cli, ["judge", "oracle", e, "--oracle-column", "entity_id"])
    assert {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(e).live()} == want
