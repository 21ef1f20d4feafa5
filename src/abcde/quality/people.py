"""The people's tasks chosen by a model's answers (``pairs --human-budget`` on a sample a model
judged): after ``abcde judge model`` has answered the drawn pairs, and before any person (or the
oracle) has judged one, the people's tasks are chosen again within each stratum by the model's
answer (:func:`abcde.samples.people_tasks.plan_by_answers`), and the answers they were chosen by are kept
in the sample. The estimates then weight the people's judgements by cell
(:func:`abcde.quality.combined.combined_stratified`), so they stay unbiased whatever the model,
and a model that separates "same" from "different" well needs far fewer people's judgements for
the same standard error than tasks drawn blind to its answers.

Once a person has judged any of the people's tasks, the tasks never change again: choosing them
with the people's answers in view would bias the estimate. A person's judgement of a pair that is
not a task (which the store refuses, but an earlier abcde accepted) counts for nothing here either
(:func:`abcde.samples.people_tasks.outside_tasks`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from abcde.core.names import PEOPLE
from abcde.errors import InputError
from abcde.samples.judgements import judgement_files, load_judgements
from abcde.samples.people_tasks import (BY_ANSWERS, META_KEY, census_weights, draw_counts, people_pairs,
                                        plan_by_answers, tasks_note, unit_weights, units_of)
from abcde.samples.dir_lock import served_by
from abcde.samples.sample_dir import PairSampleDir, write_sample_dir


@dataclass(frozen=True)
class PeopleTasks:
    """What :func:`choose_by_model_answers` did: ``chosen`` (the tasks were chosen again, by the
    model's answers) or why not (``reason``), and the plan's counts: ``tasks`` of the ``asked``
    (``--human-budget``), and why they differ (``note``, :func:`abcde.samples.people_tasks.tasks_note`)."""

    chosen: bool
    reason: str
    tasks: int = 0
    cells: dict | None = None
    asked: int = 0
    note: str = ""

    def to_dict(self) -> dict:
        return {"chosen": self.chosen, "reason": self.reason, "tasks": self.tasks, "cells": self.cells,
                "asked": self.asked, "note": self.note}


def choose_by_model_answers(sample_dir: str | os.PathLike) -> PeopleTasks | None:
    """Choose the people's tasks of ``sample_dir`` by its model's answers, if the sample was drawn
    with a people's budget (``--human-budget``) and no person (or oracle) has judged one of the
    people's tasks yet; else say why not.
    None: the sample has no people's budget (every pair is a people's task)."""
    s = PairSampleDir.read(sample_dir)
    meta = s.metadata
    plan = meta.get(META_KEY)
    if not plan:
        return None
    files = judgement_files(s.path)
    # people's judgements of the people's tasks only (one of another pair counts nowhere)
    res = load_judgements(files, pair_ids=s.judgeable_ids(), id_type=meta["id_type"],
                          tasks=people_pairs(s.draws, meta)) if files else None
    sources = res.sources if res else {}
    people = sum(sources.get(src, 0) for src in PEOPLE)
    if people:
        return PeopleTasks(False, f"people have judged {people:,} pairs already, so the people's tasks stay as they "
                                  "are (chosen any later, they would depend on the people's answers)",
                           int(plan["tasks"]))
    if "model" not in sources:
        return PeopleTasks(False, "no model has judged the pairs yet", int(plan["tasks"]))
    holder = served_by(s.path)
    if holder is not None:
        return PeopleTasks(False, f"the sample is being served ({holder}); the people's tasks stay as drawn",
                           int(plan["tasks"]))
    model = load_judgements(files, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source="model").by_pair
    units = units_of(s.draws, meta)
    answers = {p: a for p, a in model.items() if p in units and a in ("same", "different")}
    new = plan_by_answers(units, answers, int(meta["seed"]), int(plan["asked"]),
                          weights=unit_weights(s.draws, meta, units), pair_weights=census_weights(s.draws, meta),
                          draw_counts=draw_counts(s.draws))
    cells = {c: {"pairs": new["pairs"][c], "tasks": new["budgets"][c]} for c in new["thresholds"]}
    if plan.get("design") == BY_ANSWERS and plan.get("answers") == new["answers"] and \
            plan.get("thresholds") == new["thresholds"]:
        return PeopleTasks(True, "unchanged: the model's answers are those the tasks were chosen by",
                           int(new["tasks"]), cells, int(new["asked"]), tasks_note(new))
    meta = {k: v for k, v in meta.items() if k not in ("files", "draws_digest", "meta_digest", "sample_id",
                                                       "format", "version", "blind", "replaced")}
    meta[META_KEY] = new
    slices = pq.read_table(Path(s.path) / "slices.parquet") if (Path(s.path) / "slices.parquet").exists() else None
    try:
        write_sample_dir(s.path, s.draws, s.items, meta, slices=slices, hidden=s.hidden, show_ids=s.show_ids)
    except InputError as exc:  # e.g. a server started meanwhile: the tasks stay as they were, nothing lost
        return PeopleTasks(False, f"the people's tasks stay as drawn: {exc}", int(plan["tasks"]))
    return PeopleTasks(True, BY_ANSWERS, int(new["tasks"]), cells, int(new["asked"]), tasks_note(new))
