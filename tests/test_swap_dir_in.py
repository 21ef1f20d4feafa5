"""The one way abcde swaps a directory in (issue 40: ``util.files.swap_dir_in``, used by the pair
sample's writer and by ``abcde evaluate``): renamed when the place is free, exchanged when it is
taken, entry by entry with the marking file last when the place cannot move (the working
directory, a mount point)."""

from __future__ import annotations

import os

from abcde.samples.sample_dir import PairSampleDir
from abcde.samples.store import JudgementStore
from abcde.util import files


def _dir(path, **entries):
    path.mkdir()
    for name, text in entries.items():
        (path / name).write_text(text)
    return path


def test_a_free_place_gets_the_new_directory_renamed_there(tmp_path):
    new = _dir(tmp_path / "new", a="1", mark="new")
    files.swap_dir_in(new, tmp_path / "dest", last="mark")
    assert not new.exists() and (tmp_path / "dest" / "a").read_text() == "1"


def test_a_taken_place_is_exchanged_the_old_directory_left_in_new(tmp_path):
    new = _dir(tmp_path / "new", a="new", mark="new")
    dest = _dir(tmp_path / "dest", a="old", b="old", mark="old")
    files.swap_dir_in(new, dest, last="mark")
    assert {p.name: p.read_text() for p in dest.iterdir()} == {"a": "new", "mark": "new"}
    assert {p.name: p.read_text() for p in new.iterdir()} == {"a": "old", "b": "old", "mark": "old"}


def test_the_working_directory_gets_the_entries_one_by_one_the_mark_last(tmp_path, monkeypatch):
    new = _dir(tmp_path / "new", a="new", mark="new")
    dest = _dir(tmp_path / "dest", a="old", b="kept", mark="old")
    monkeypatch.chdir(dest)
    order = []
    real = os.replace

    def replace(src, dst):
        order.append((os.path.basename(src), os.path.basename(os.path.dirname(dst))))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    files.swap_dir_in(new, dest, last="mark")
    assert {p.name: p.read_text() for p in dest.iterdir()} == {"a": "new", "b": "kept", "mark": "new"}
    assert order[0] == ("mark", ".abcde-old") and order[-1] == ("mark", "dest")  # removed first, put back last
    assert (new / ".abcde-old" / "a").read_text() == "old"  # the old entries go with new


def test_a_pair_sample_rewritten_from_inside_its_directory_keeps_its_judgements(tmp_path, monkeypatch):
    """``pairs --extend .`` from inside the sample: the directory cannot be exchanged (it is the
    working directory), so the new sample's files go in one by one, the metadata last; the
    judgements stay and still count."""
    from test_quality import oracle, world
    from abcde.quality import draw_pair_sample, estimate_quality
    from abcde.quality.draw import extend_pair_sample

    base, exp, items = world(60, seed=4)
    out = draw_pair_sample(base, exp, tmp_path / "s", budget=40, seed=1, items=items, hide=["entity"])
    t = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
    first = PairSampleDir.read(out).draws
    got = {p: v for p, v, n in zip(oracle(first, t).keys(), oracle(first, t).values(),
                                   first.column("needs_judgement").to_pylist()) if n}
    store = JudgementStore(out)
    for p, v in got.items():
        store.record(p, v, rater="truth", source="oracle")
    monkeypatch.chdir(out)
    extend_pair_sample(".", budget=60, base=base, exp=exp, items=items)
    grown = PairSampleDir.read(out)
    assert grown.metadata["budget"] == 60 and grown.draws.num_rows >= first.num_rows
    q = estimate_quality(out)
    assert q.judged_pairs == len(got)  # every judgement kept and counted
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # nothing left beside it
