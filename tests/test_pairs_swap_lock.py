"""``abcde pairs`` holds the directory's in-use lock through its swap (issue 39, part 7): a judge
(``judge model``, ``judge serve``) that starts after the checks but before the swap is never written
into the directory that is replaced: the draw refuses in one line and the directory is as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.judging import JudgementStore
from abcde.samples import dir_lock, sample_dir
from abcde.quality.draw import draw_pair_sample


def digest(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file() and p.name != dir_lock.LOCK_FILE}


@pytest.fixture
def drawn(tmp_path) -> tuple[Path, dict]:
    p = example_paths("febrl3")
    d = tmp_path / "pairs"
    draw_pair_sample(p["base"], p["exp"], d, items=p["items"], budget=20, seed=1)
    store = JudgementStore(d)
    store.record(store.pair_ids[0], "same", rater="alice")
    return d, p


@pytest.mark.parametrize("how", ["force", "same sample"])
def test_a_judge_that_starts_during_the_draw_is_never_written_into_the_replaced_directory(drawn, monkeypatch, how):
    d, p = drawn
    before = digest(d)
    real = sample_dir._write_files
    held = {}

    def write_then_a_judge_starts(tmp, *args, **kwargs):
        real(tmp, *args, **kwargs)
        # a model run opens the store after pairs' checks, before its swap, and keeps it open
        held["hold"] = JudgementStore(d).hold("judge model (test)")

    monkeypatch.setattr(sample_dir, "_write_files", write_then_a_judge_starts)
    seed, force = (2, True) if how == "force" else (1, False)
    try:
        with pytest.raises(InputError, match="is in use .*judge model.*nothing was replaced"):
            draw_pair_sample(p["base"], p["exp"], d, items=p["items"], budget=20, seed=seed, force=force)
    finally:
        held["hold"].close()
    assert digest(d) == before  # the old directory, its judgement and nothing else
    assert not list(d.parent.glob(".pairs.abcde-new-*"))  # nothing left beside it
    store = JudgementStore(d)
    assert [j.rater for j in store.live()] == ["alice"]


def test_the_swap_works_when_no_judge_runs(drawn):
    d, p = drawn
    draw_pair_sample(p["base"], p["exp"], d, items=p["items"], budget=20, seed=2, force=True)
    assert len(list((d / "replaced").iterdir())) == 1
    assert JudgementStore(d).live() == []
