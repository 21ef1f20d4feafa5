"""A crash at any moment of drawing pairs leaves the directory holding the old sample or the new
one, whole, and every judgement where it was or aside with its sample (issue 13, item 1).

Two ways to crash: deterministically, a child process that dies (``os._exit``: no clean-up, like
kill -9) just before its k-th file-system step, for every k; and 20 runs killed with SIGKILL at
random moments."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from abcde.examples import example_paths
from abcde.quality import PairSampleDir
from abcde.samples.store import JudgementStore

P = example_paths("febrl3")

# Runs draw_pair_sample with the file-system steps of the sample directory writer counted; dies
# (os._exit, no clean-up) just before step CRASH_AT. CRASH_AT=0 counts the steps and finishes.
CHILD = textwrap.dedent("""
    import os, shutil, sys, json
    import pyarrow.parquet as pq
    import abcde.samples.sample_dir as sd
    from abcde.examples import example_paths
    from abcde.quality import draw_pair_sample

    crash_at, out, swap, force = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1"
    steps, counting = 0, True

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
    p = example_paths("febrl3")
    b, e = (p["exp"], p["base"]) if swap else (p["base"], p["exp"])
    draw_pair_sample(b, e, out, items=p["items"], budget=30, seed=1, force=force)
    print(json.dumps({"steps": steps}))
""")


def child(crash_at: int, out: Path, *, swap: bool, force: bool) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, str(crash_at), str(out), "1" if swap else "0",
                           "1" if force else "0"], capture_output=True, text=True, timeout=120)


def judged_sample(d: Path, *, swap: bool = False) -> tuple[str, set]:
    r = child(0, d, swap=swap, force=False)
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
def test_a_crash_before_any_step_leaves_a_whole_sample(tmp_path, swap):
    d = tmp_path / "pairs"
    old_id, judgements = judged_sample(d)
    dry = tmp_path / "dry"
    judged_sample(dry)
    r = child(0, dry, swap=swap, force=swap)
    assert r.returncode == 0, r.stderr
    n = json.loads(r.stdout.splitlines()[-1])["steps"]
    new_id = PairSampleDir.read(dry).metadata["sample_id"]
    assert (new_id == old_id) != swap
    assert n >= 8  # the file writes, the links, the exchange, the clean-up
    seen = set()
    for k in range(1, n + 1):
        r = child(k, d, swap=swap, force=swap)
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
        r = child(0, d, swap=swap, force=swap)
        assert r.returncode == 0, r.stderr
    assert check_whole(d, old_id, new_id, judgements) == ("new" if swap else "old")


def test_sigkill_at_random_moments(tmp_path):
    """20 runs of 'abcde pairs --force' alternating two samples, each killed with SIGKILL at a
    random moment: the directory always verifies as one whole sample, judgements all kept."""
    d = tmp_path / "pairs"
    first_id, judgements = judged_sample(d)
    rng = random.Random(13)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "abcde", "pairs", "--base", P["exp"], "--exp", P["base"], "--items",
                        P["items"], "--budget", "30", "--seed", "1", "--out", tmp_path / "timing"],
                       capture_output=True, text=True)
    full = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    ids = {first_id, PairSampleDir.read(tmp_path / "timing").metadata["sample_id"]}
    kept = {first_id: judgements}
    outcomes = []
    for k in range(20):
        swap = k % 2 == 0
        b, e = (P["exp"], P["base"]) if swap else (P["base"], P["exp"])
        proc = subprocess.Popen([sys.executable, "-m", "abcde", "pairs", "--base", b, "--exp", e, "--items",
                                 P["items"], "--budget", "30", "--seed", "1", "--out", d, "--force", "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * full)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        s = PairSampleDir.read(d)  # verifies
        assert s.metadata["sample_id"] in ids
        outcomes.append(proc.returncode)
        # every judgement ever made is in the directory or in one of the samples kept aside
        found = set()
        for store_dir in [d, *(p for p in (d / "replaced").glob("*") if p.is_dir())] if (d / "replaced").exists() else [d]:
            if (store_dir / "judgements.sqlite").exists():
                found |= {(j.pair_id, j.judgement) for j in JudgementStore(store_dir).live()}
        assert kept[first_id] <= found
    assert any(c == -signal.SIGKILL for c in outcomes)
    # The next writer removes what the killed ones left beside the directory.
    r = subprocess.run([sys.executable, "-m", "abcde", "pairs", "--base", P["base"], "--exp", P["exp"], "--items",
                        P["items"], "--budget", "30", "--seed", "1", "--out", d, "--force", "-q"], capture_output=True)
    assert r.returncode == 0, r.stderr
    assert leftovers(d) == []


def run_killed(argv, rng, full: float, spread: tuple[float, float] = (0.2, 1.1)) -> int:
    """Run ``abcde argv`` and SIGKILL it at a random moment within ``spread`` times its usual run time."""
    proc = subprocess.Popen([sys.executable, "-m", "abcde", *map(str, argv)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(*spread) * full)
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


def timed(argv) -> float:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "abcde", *map(str, argv)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return time.monotonic() - t0


def test_sigkill_during_extend(tmp_path):
    """20 runs of 'abcde pairs --extend' killed at random moments: the directory always verifies as
    one whole sample (the earlier one or a grown one), every earlier pair and judgement still in it."""
    d = tmp_path / "pairs"
    _, judgements = judged_sample(d)
    first = PairSampleDir.read(d).judgeable_ids()
    # The kill moments are spread over 0.2-1.6x the time of one whole extend, measured here on the
    # same machine and load: about a third of the runs finish, the rest die at any stage.
    full = timed(["pairs", "--extend", d, "--budget", PairSampleDir.read(d).metadata["budget"] + 5, "-q"])
    rng = random.Random(17)
    codes = []
    for k in range(20):
        budget = PairSampleDir.read(d).metadata["budget"] + 5
        codes.append(run_killed(["pairs", "--extend", d, "--budget", budget, "-q"], rng, full, spread=(0.2, 1.6)))
        s = PairSampleDir.read(d)  # verifies
        assert first <= s.judgeable_ids()
        assert s.metadata["judgeable_pairs"] in (budget - 5, budget)
        assert {(j.pair_id, j.judgement) for j in JudgementStore(d).live()} == judgements
    assert any(c == -signal.SIGKILL for c in codes) and any(c == 0 for c in codes), codes
    assert timed(["pairs", "--extend", d, "--budget", PairSampleDir.read(d).metadata["budget"] + 5, "-q"]) > 0
    assert leftovers(d) == []


def test_sigkill_during_the_oracle(tmp_path):
    """20 runs of 'abcde judge oracle' killed at random moments: people's judgements are all there,
    the oracle's are whole or absent (one transaction), and a later run completes them."""
    d = tmp_path / "pairs"
    judged_sample(d)
    people = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(d).live()}
    runs = [tmp_path / f"run{k}" for k in range(20)]
    for e in runs:
        shutil.copytree(d, e)
    full = timed(["judge", "oracle", d, "--oracle-column", "entity_id"])
    want = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(d).live()}
    assert len(want - people) == len(JudgementStore(d).pair_ids)
    rng = random.Random(19)
    codes = []
    for e in runs:
        codes.append(run_killed(["judge", "oracle", e, "--oracle-column", "entity_id"], rng, full))
        PairSampleDir.read(e)  # verifies
        got = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(e).live()}
        assert got in (people, want), len(got)
    assert any(c == -signal.SIGKILL for c in codes), codes
    e = runs[0]  # a later run completes what a killed one left
    timed(["judge", "oracle", e, "--oracle-column", "entity_id"])
    assert {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(e).live()} == want
