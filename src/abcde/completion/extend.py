"""More draws for an entity sample (``abcde entities --extend DIR --budget N``), keeping every answer.

The draws are a sequence (the hashed clocks replayed in time order, :func:`~abcde.completion.sample.
draw_entities`): a larger budget with the same seed gives the same first draws, then more. So an
extension draws again from the recorded inputs (refused if they changed since), checks that the
sample's draws are the new draws' first ones, and replaces the sample's files; the answers
(the store, the oracle's and the model's files) are about anchors, and every anchor stays. A budget
that reaches the number of affected items makes the sample a census (every affected item once: the
estimates are exact).

The files are replaced with the directory's in-use lock held exclusively (no judging server or other
command has the sample open; one that starts meanwhile waits, then is refused): the new files are
written into ``DIR/.abcde-extend/``, a file ``COMPLETE`` there says they all are, then each replaces its
old one (``metadata.json`` last). A crash before ``COMPLETE`` leaves the old sample whole (the next
extension starts again); after it, reading the sample is refused until ``--extend`` is run again,
which finishes the replacement first.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from abcde.completion.judgements import recorded_diff
from abcde.completion.sample import DONE, EXTENDING, FILES, EntitySample, sample_files, write_sample_files
from abcde.completion.store import sample_key
from abcde.errors import InputError
from abcde.sampling.clocks import check_size
from abcde.samples.dir_lock import InUseLock
from abcde.samples.ledger_file import fsync_dir
from abcde.util.files import InputPrints


def _finish(path: Path) -> bool:
    """Move a complete extension's files into place (``metadata.json`` last); True if there was one."""
    staged = path / EXTENDING
    if not (staged / DONE).exists():
        if staged.exists():  # an extension that stopped before its files were all written: start again
            shutil.rmtree(staged, ignore_errors=True)
        return False
    for name in (*FILES, "metadata.json"):
        if (staged / name).exists():
            os.replace(staged / name, path / name)
    fsync_dir(path)
    (staged / DONE).unlink()
    shutil.rmtree(staged, ignore_errors=True)
    return True


def extend_entity_sample(sample_dir, *, budget: int) -> EntitySample:
    """Extend the entity sample in ``sample_dir`` to ``budget`` draws (more than it has), keeping its
    draws and every answer (see the module)."""
    path = Path(sample_dir)
    budget = check_size(budget, "budget")
    if not (path / EXTENDING / DONE).exists():
        EntitySample.read(path)  # an entity sample (else one line saying what it is not), before any lock file
    lock = InUseLock(path)
    if not lock.acquire():  # shared: a judging server or another command has the sample open
        lock.fh.seek(0)
        holder = " ".join(lock.fh.read().split())
        lock.release()
        raise InputError(f"The entity sample in '{path}' is in use ({holder or 'another abcde command'}): stop that "
                         "judging server or command, then extend it; nothing was drawn.")
    try:
        finished = _finish(path)
        s = EntitySample.read(path)
        m = s.metadata
        if finished and budget <= int(m["budget"]):  # the command that stopped, run again: it is done now
            return s
        if m["census"]:
            raise InputError(f"The entity sample in '{path}' is already a census: every one of the "
                             f"{m['n_affected']:,} affected items is an anchor, so there is nothing more to draw.")
        if budget <= int(m["budget"]):
            raise InputError(f"--budget {budget:,} is not more than the sample's {int(m['budget']):,} draws: an "
                             "extension adds draws (give the new total).")
        diff = recorded_diff(s)  # the recorded inputs, refused if they changed since
        prints = InputPrints(dict(m.get("input_paths") or {}))
        tables, tasks, meta = sample_files(diff, prints, budget=budget, seed=m["seed"], design=m["design"],
                                           hide=m["hidden"], candidates=m["candidates"],
                                           slice_by=list(m.get("slices") or {}), columns=m["columns"])
        old, new = s.draws.column("item_id").to_pylist(), tables["draws"].column("item_id").to_pylist()
        if not meta["census"] and new[:len(old)] != old:
            raise InputError(f"The entity sample in '{path}' was drawn differently (another version of abcde?): its "
                             "draws are not the first of the new ones, so it cannot be extended; draw a new sample.")
        meta["sample_id"] = sample_key(s)  # the same sample to its answer store and pages
        staged = path / EXTENDING
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        write_sample_files(staged, tables, tasks, meta)
        for name in (*FILES, "metadata.json"):
            with open(staged / name, "rb") as fh:
                os.fsync(fh.fileno())
        (staged / DONE).write_text("every file of the extension is written\n")
        fsync_dir(staged)
        _finish(path)
    finally:
        lock.release()
    return EntitySample.read(path)
