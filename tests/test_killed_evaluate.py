"""A killed whole job leaves no mix (issue 25, class 2).

``abcde evaluate`` builds its whole directory aside and swaps it in at the end, so the directory
always holds one run's output, whole: the earlier run's (or nothing) until the new one is complete,
then the new one. An earlier ``DIR/quality``'s judgements are kept exactly as ``abcde pairs`` keeps
them: the same sample keeps them in place, another one (``--force``) moves them with its sample to
``DIR/quality/replaced/``, and a refused run touches nothing.

Three ways to end a run early: a refusal (in process), a child that dies (``os._exit``: no clean-up,
like kill -9) just before each file-system step of the swap, and real ``abcde evaluate`` processes
killed with SIGKILL at moments spread over fractions of a measured whole run (so the moments do not
depend on the machine's speed). After each, the directory is checked by content: every entry is of
one run (the inputs, fingerprints and numbers of impact.json, the exploration sample, the pair
sample, report.md and evaluate.json agree), and no judgement is lost.

Every run is a process of its own, forked from a server that has imported abcde once
(:class:`test_crash_safety.Forks`): a second of imports per run otherwise.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_crash_safety import CLI_SETUP, Forks

from abcde.examples import example_paths
from abcde.quality import PairSampleDir
from abcde.samples.store import JudgementStore
from abcde.sampling.explore import ExplorationSample
from abcde.workflow.evaluate import ENTRIES
from abcde.workflow.record import RECORD

P = example_paths("febrl3")
SMALL = ["--sample-size", "100", "--budget", "12", "--seed", "1", "--slice-by", "source"]


def argv(out: Path, variant: str, *extra) -> list[str]:
    """``abcde evaluate`` of variant A (Base, Exp) or B (the two swapped) into ``out``."""
    b, e = (P["base"], P["exp"]) if variant == "A" else (P["exp"], P["base"])
    return ["evaluate", "--base", str(b), "--exp", str(e), "--items", str(P["items"]), *SMALL, "--out", str(out),
            "-q", *extra]


@pytest.fixture(scope="module")
def cli():
    """``abcde ARGS`` as processes forked from one that has imported abcde (a second of imports per
    run otherwise): :class:`test_crash_safety.Forks`."""
    from test_crash_safety import CLI_BODY

    f = Forks(CLI_SETUP, CLI_BODY)
    yield f
    f.close()


def run(cli: Forks, args) -> subprocess.CompletedProcess:
    r = cli.run(argv=[str(a) for a in args])
    assert r.returncode == 0, r.stderr
    return r


def content(d: Path) -> dict:
    """What identifies a run's output, entry by entry (each read and verified on its own)."""
    rec = json.loads((d / RECORD).read_text())
    assert rec["complete"] is True
    meta = PairSampleDir.read(d / "quality").metadata  # verifies every file of the sample
    sample = ExplorationSample.read(d / "explore" / "sample.parquet").metadata
    imp = json.loads((d / "impact" / "impact.json").read_text())
    return {
        "record": (rec["inputs"]["base"]["path"],
                   {k: rec["inputs"][k]["fingerprint"] for k in ("base", "exp", "items")}),
        "pair sample": (meta["input_paths"]["base"], meta["input_fingerprints"]),
        "exploration sample": sample["inputs"]["base"],
        "impact": (round(imp["split_rate"], 9), round(imp["merge_rate"], 9), imp["items"]),  # sums: order varies
        "report": (d / "report.md").read_text(),
        "entries": sorted(p.name for p in d.iterdir()),
    }


def which(d: Path, refs: dict) -> str | None:
    """Which run's output ``d`` holds, whole ('A' or 'B'), or None when there is none; fails on a mix."""
    if not d.exists():
        return None
    got = content(d)
    for name, ref in refs.items():
        if got["record"] == ref["record"]:
            mixed = {k: (got[k], ref[k]) for k in ref if got[k] != ref[k]}
            assert not mixed, f"a mix: the record is {name}'s, but these entries are not: {sorted(mixed)}"
            assert set(got["entries"]) == ENTRIES
            return name
    raise AssertionError(f"the record is neither run's: {got['record']}")


def judgements_everywhere(d: Path) -> set:
    """Every live judgement in DIR/quality and in each sample kept aside under DIR/quality/replaced/."""
    q = d / "quality"
    dirs = [q, *sorted((q / "replaced").glob("*"))] if (q / "replaced").exists() else [q]
    found = set()
    for s in dirs:
        if (s / "judgements.sqlite").exists():
            found |= {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(s).live()}
    return found


def judge_some(d: Path, rater: str = "ann") -> set:
    store = JudgementStore(d / "quality")
    for pid in store.pair_ids[:3]:
        store.record(pid, "different", rater=rater)
    return {(j.pair_id, j.judgement, j.rater) for j in store.live()}


def leftovers(d: Path) -> list[str]:
    """Temporary folders and files of abcde beside ``d`` or anywhere in it."""
    beside = [p.name for p in d.parent.iterdir() if p.name.startswith(f".{d.name}.abcde-")]
    inside = [str(p.relative_to(d)) for p in d.rglob(".*") if ".abcde-" in p.name or p.name.endswith(".tmp")]
    return beside + inside


@pytest.fixture(scope="module")
def refs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("refs")


@pytest.fixture(scope="module")
def refs(refs_dir, cli) -> dict:
    """The two runs' outputs, whole, and the time of one whole run on this machine as it is loaded now."""
    base = refs_dir
    out = {}
    for variant in ("A", "B"):
        t0 = time.monotonic()
        run(cli, argv(base / variant, variant))
        out[variant] = (content(base / variant), time.monotonic() - t0)
    return out


# -- a refusal -------------------------------------------------------------------------------------

def tree(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else "dir") for p in sorted(d.rglob("*"))}


def run_a(refs_dir: Path, d: Path) -> None:
    """What ``abcde evaluate`` of variant A into ``d`` writes: a copy of the reference run's output (no
    file of it names its directory)."""
    shutil.copytree(refs_dir / "A", d)


def test_a_refusal_at_the_pair_stage_leaves_everything_as_it_was(tmp_path, refs, refs_dir, cli):
    d = tmp_path / "ev"
    run_a(refs_dir, d)
    kept = judge_some(d)
    before = tree(d)
    # another sample over the judged one: refused at the pair stage, after the impact tables and the
    # exploration sample were built (aside): impact/, explore/, the report, the record, the judgements
    # are all as they were, and nothing is left beside the directory
    r = cli.run(argv=argv(d, "B"))
    assert r.returncode == 1 and "already holds pair sample" in r.stderr, r.stderr
    assert tree(d) == before
    assert leftovers(d) == []
    assert which(d, {k: v[0] for k, v in refs.items()}) == "A"
    # the same run again keeps the judgements in place
    run(cli, argv(d, "A"))
    assert which(d, {k: v[0] for k, v in refs.items()}) == "A"
    assert {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(d / "quality").live()} == kept
    assert not (d / "quality" / "replaced").exists()
    # --force: the new run, whole; the judged sample moved aside with its judgements, where they still work
    run(cli, argv(d, "B", "--force"))
    assert which(d, {k: v[0] for k, v in refs.items()}) == "B"
    moved = json.loads((d / "quality" / "metadata.json").read_text())["replaced"]["moved_to"]
    assert Path(moved).parent == d / "quality" / "replaced"
    assert {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(moved).live()} == kept
    assert leftovers(d) == []


# -- a crash before each step of the swap ------------------------------------------------------------

# A server of children that run abcde evaluate with their file-system steps counted from the moment
# the swap starts (the earlier judgements are linked into the new directory, the directories
# exchanged, the old one removed); each dies (os._exit, no clean-up) just before step
# req["crash_at"]. crash_at=0 counts the steps, prints their names and finishes.
STEP_SETUP = CLI_SETUP + """
import shutil
import abcde.util.files as files  # the one directory swap (swap_dir_in) exchanges through it
import abcde.samples.sample_dir as sd
from abcde.cli import main

crash_at, steps, counting = 0, [], False

def counted(fn, name):
    def step(*a, **k):
        if counting:
            steps.append(name)
            if len(steps) == crash_at:
                os._exit(9)
        return fn(*a, **k)
    return step

os.link, os.mkdir = counted(os.link, "link"), counted(os.mkdir, "mkdir")
os.rename, os.replace = counted(os.rename, "rename"), counted(os.replace, "replace")
shutil.rmtree, files.exchange_dirs = counted(shutil.rmtree, "rmtree"), counted(files.exchange_dirs, "exchange")
original = sd.StagedSample.kept_linked

def kept_linked(self):
    global counting
    counting = True
    return original(self)

sd.StagedSample.kept_linked = kept_linked
"""
STEP_BODY = """
crash_at = req["crash_at"]
main(req["argv"], standalone_mode=False)
print(json.dumps({"steps": steps}))
"""


@pytest.fixture(scope="module")
def steps_server():
    f = Forks(STEP_SETUP, STEP_BODY)
    yield f
    f.close()


def child(server: Forks, crash_at: int, args: list[str]) -> subprocess.CompletedProcess:
    return server.run(crash_at=crash_at, argv=args)


@pytest.mark.parametrize("variant", ["A", "B"], ids=["the same run again", "another sample, --force"])
def test_a_crash_before_any_step_of_the_swap_leaves_one_whole_run(tmp_path, refs, refs_dir, steps_server, variant):
    ref = {k: v[0] for k, v in refs.items()}
    d = tmp_path / "ev"
    run_a(refs_dir, d)
    kept = judge_some(d)
    dry = tmp_path / "dry"
    shutil.copytree(d, dry)
    r = child(steps_server, 0, argv(dry, variant, "--force"))
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout.splitlines()[-1])["steps"]
    swap = steps.index("exchange")
    assert steps[swap + 1:] == ["rmtree"] and swap >= 1  # judgements linked in, the exchange, the old removed
    # every kind of step before the swap (links and folders of what is kept are alike: the first and
    # last of each), the swap, and the clean-up after it
    before = steps[:swap]
    crash_at = sorted({k + 1 for name in set(before) for k in (before.index(name), swap - 1 - before[::-1].index(name))}
                      | {swap + 1, swap + 2})
    seen = set()
    for k in crash_at:
        r = child(steps_server, k, argv(d, variant, "--force"))
        assert r.returncode == 9, (k, r.stderr)
        seen.add(which(d, ref))
        assert kept <= judgements_everywhere(d), k
        assert (which(d, ref) == variant) == (k > swap + 1) or variant == "A", (k, steps)
    assert "A" in seen and seen <= {"A", variant}
    r = child(steps_server, 0, argv(d, variant, "--force"))  # the next run completes and removes what the crashes left
    assert r.returncode == 0, r.stderr
    assert which(d, ref) == variant and kept <= judgements_everywhere(d)
    assert leftovers(d) == []


# -- SIGKILL at many moments -------------------------------------------------------------------------

def test_sigkill_at_many_moments_leaves_one_whole_run(tmp_path, refs, cli):
    """12 runs of 'abcde evaluate --force', alternating two runs' inputs, each killed with SIGKILL at a
    moment spread over 0.1-1.4x one whole run measured here: the directory always holds one run's
    output, whole (or nothing yet), every judgement is in it or aside with its sample, and the next
    run removes what the killed ones left."""
    ref = {k: v[0] for k, v in refs.items()}
    full = max(t for _, t in refs.values())
    d = tmp_path / "ev"
    rng = random.Random(25)
    codes, states, kept = [], [], set()
    for k in range(12):
        variant = "AB"[k % 2]
        pid = cli.start(argv=argv(d, variant, "--force"))
        time.sleep(rng.uniform(0.1, 1.4) * full)
        os.kill(pid, signal.SIGKILL)  # ended or not: not yet waited for, so that pid is still this run's
        codes.append(cli.wait())
        states.append(which(d, ref))
        if states[-1] is not None and not kept:
            kept = judge_some(d)  # the first whole run's sample gets judgements, which must never be lost
        assert kept <= judgements_everywhere(d), k
    assert any(c == -signal.SIGKILL for c in codes), codes
    assert set(states) - {None}, states  # some runs finished (the moments reach past a whole run)
    r = run(cli, argv(d, "A", "--force"))
    assert r.returncode == 0
    assert which(d, ref) == "A" and kept <= judgements_everywhere(d)
    assert leftovers(d) == []
