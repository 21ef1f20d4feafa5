"""Drawing a pair sample for judgement: the paper's design or the stratified one.

:func:`draw_pair_sample` reads the inputs once, samples pairs ∝ u_ij without listing
them (:mod:`abcde.sampling.pairs`; stratified: :mod:`abcde.quality.stratified`),
computes the exact slice multipliers asked for, and writes the sample directory
(:mod:`abcde.samples.sample_dir`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import ibis
import pyarrow as pa

from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.engine import Engine
from abcde.errors import InputError
from abcde.metrics.impact import check_slice_columns, overall, private
from abcde.quality.exact_facts import distance_facts
from abcde.samples.facts import drawn_items, facts_record
from abcde.samples.judgements import judgement_files, load_judgements
from abcde.samples.people_tasks import (BY_ANSWERS, META_KEY as PEOPLE_KEY, census_weights, check_human_budget,
                                        design_answers, draw_counts, plan_by_answers, plan_people, unit_weights,
                                        units_of)
from abcde.samples.sample_dir import PairSampleDir, StagedSample, check_hidden, stage_sample_dir, write_sample_dir
from abcde.quality.exact_facts import recall_facts
from abcde.samples.facts import recall_items, recall_record
from abcde.sampling.allocation import LEGACY_STRATA, SIGNED, STRATA, draws_by_stratum
from abcde.sampling.stratified import draw_plan, read_early, slice_self_terms
from abcde.quality.stratified import stratum_sigmas
from abcde.sampling.agreed import BY_CELLS
from abcde.sampling.pairs import pairweight_expr
from abcde.sampling.plan import SamplePlan, plan_sample
from abcde.util.files import InputPrints, full_path


def draw_pair_sample(
    base,
    exp=None,
    out_dir: str | os.PathLike | None = None,
    *,
    budget: int,
    seed: int,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    slice_by: Sequence[str] = (),
    estimator: str = "stratified",
    allocation: str = "proportional",
    pilot: str | os.PathLike | None = None,
    force: bool = False,
    hide: Sequence[str] = (),
    show_ids: bool = False,
    engine: Engine | str | None = None,
    diff=None,
    human_budget: int | None = None,
) -> Path:
    """Sample pairs for judgement and write the sample directory (see module docstring).

    ``estimator="stratified"`` (the default) computes the self term exactly and samples
    the split, merge and intersection strata with budgets ∝ U_c
    (``allocation="proportional"``) or ∝ U_c·σ_c (``"neyman"``, σ_c from the judged
    sample directory ``pilot``): the same confidence from fewer judgements (see
    :mod:`abcde.quality.stratified`). ``"paper"`` samples all pairs ∝ u_ij (the paper's design).

    ``out_dir`` is written once: drawing the same sample again keeps its judgements; a directory
    holding another sample is refused unless ``force``, and then the earlier sample and its
    judgements are moved to ``out_dir/replaced/`` (see
    :func:`abcde.samples.sample_dir.write_sample_dir`).

    The task files are blind: a pair id and the items' attributes, without weights, the
    ``hide`` columns (e.g. a ground-truth id) or, unless ``show_ids``, the item ids; the judging
    app and model judges hide the same.

    ``slice_by`` names attribute columns for which the exact slice multipliers
    ``weight(I)`` and ``pairweight(I)`` are stored, so ``quality --slice-by`` can
    report ΔPrecision(I) later without the inputs.

    ``diff``: the diff of these same inputs, already built (``ImpactResult.diff``), to draw from
    instead of reading and joining the inputs again (``abcde evaluate`` does the whole job from one).

    ``human_budget``: mark a random subset of that many of the ``budget`` pairs as the people's tasks
    (a simple random sample of each stratum's pairs, :func:`abcde.samples.people_tasks.plan_people`): the task
    files and the judging app show only those, ``judge oracle`` judges only those, a model judges
    every pair, and ``abcde quality`` combines the two without bias (:mod:`abcde.quality.combined`).
    """
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
    return _draw_and_write(given, out_dir, budget=budget, seed=seed, slice_by=slice_by, estimator=estimator,
                           allocation=allocation, pilot=pilot, force=force, hide=hide, show_ids=show_ids,
                           engine=engine, what="draw_pair_sample", diff=diff, human_budget=human_budget)


def draw_precision_sample(
    clustering,
    out_dir: str | os.PathLike | None = None,
    *,
    budget: int,
    seed: int,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    slice_by: Sequence[str] = (),
    estimator: str = "stratified",
    allocation: str = "proportional",
    pilot: str | os.PathLike | None = None,
    force: bool = False,
    hide: Sequence[str] = (),
    show_ids: bool = False,
    engine: Engine | str | None = None,
    human_budget: int | None = None,
) -> Path:
    """Sample pairs inside the clusters of one ``clustering`` to estimate its absolute Precision
    (``abcde precision``), and write the sample directory.

    This is ABCDE with Base = every item alone, whose Precision is 1, and Exp = ``clustering``:
    every pair to judge is a merge pair (two items of one cluster of ``clustering``), and
    ``Precision(clustering) = 1 + ΔPrecision`` (also per slice: ``Precision(I) = 1 + ΔPrecision(I)``).
    The sample is judged like any other (``abcde judge serve``, a model, the oracle) and
    ``abcde quality`` / :func:`estimate_quality` report the Precision with its 95% interval.
    The parameters are those of :func:`draw_pair_sample`; ``cluster_id`` names the clustering's
    cluster column.
    """
    given = Inputs(clustering, clustering, items=items, item_id=item_id, cluster_id=cluster_id,
                   base_cluster_id=item_id, weight=weight)
    return _draw_and_write(given, out_dir, budget=budget, seed=seed, slice_by=slice_by, estimator=estimator,
                           allocation=allocation, pilot=pilot, force=force, hide=hide, show_ids=show_ids,
                           engine=engine, what="draw_precision_sample", target="precision",
                           human_budget=human_budget)


def _draw_and_write(given: Inputs, out_dir, *, budget, seed, slice_by, estimator, allocation, pilot, force, hide,
                    show_ids, engine, what: str, target: str = "delta_precision", diff=None,
                    human_budget: int | None = None) -> Path:
    if out_dir is None:
        raise InputError(f"{what} needs an output directory (out_dir).")
    check_human_budget(human_budget, budget)
    if estimator not in ("paper", "stratified"):
        raise InputError(f"estimator must be 'paper' or 'stratified'. Got {estimator!r} instead.")
    # The inputs' fingerprints, taken before they are read (or before the caller's diff read them,
    # when it hands one in: taken now, and checked again after the draw all the same).
    prints = diff.prints if diff is not None and getattr(diff, "prints", None) is not None else InputPrints.of(given)
    if diff is None:
        diff = build_diff(given, engine=engine, roles=_roles(target), prints=prints)
    sigmas = pilot_sigmas_from_dir(pilot) if estimator == "stratified" and allocation == "neyman" and pilot else None
    draws, items_t, meta, slices, hide = _draw(diff, given, prints, budget=budget, seed=seed, slice_by=slice_by,
                                               estimator=estimator, allocation=allocation, sigmas=sigmas, hide=hide)
    meta["target"] = target
    _with_people(draws, meta, human_budget)
    prints.check("drawing the pairs")  # what the metadata records is what was read
    return write_sample_dir(out_dir, draws, items_t, meta, slices=slices, force=force, hidden=hide,
                            show_ids=show_ids)


def _roles(target: str) -> tuple[str, str]:
    return ("clustering", "clustering") if target == "precision" else ("base", "exp")


def stage_pair_sample(given: Inputs, out_dir: str | os.PathLike, files: str | os.PathLike, *, diff, prints: InputPrints,
                      budget: int, seed: int, slice_by: Sequence[str] = (), estimator: str = "stratified",
                      force: bool = False, hide: Sequence[str] = (), question: str | None = None) -> StagedSample:
    """The pair sample :func:`draw_pair_sample` would write into ``out_dir``, drawn from ``diff``
    (built from ``given``, whose fingerprints ``prints`` were taken before it was read) and written
    into the new folder ``files`` instead, for a caller that swaps a whole directory in at once
    (``abcde evaluate``); the caller checks ``prints`` after its last read of the inputs. ``question``:
    what the pairs ask when it is not whether two items are one entity (``"ids"``: whether an id was
    kept for its concept, ``abcde ids``), recorded in the metadata for the verdict's words."""
    if estimator not in ("paper", "stratified"):
        raise InputError(f"estimator must be 'paper' or 'stratified'. Got {estimator!r} instead.")
    draws, items_t, meta, slices, hide = _draw(diff, given, prints, budget=budget, seed=seed, slice_by=slice_by,
                                               estimator=estimator, allocation="proportional", sigmas=None, hide=hide)
    meta["target"] = "delta_precision"
    if question is not None:
        meta["question"] = question
    return stage_sample_dir(out_dir, files, draws, items_t, meta, slices=slices, force=force, hidden=hide)


def _with_people(draws: pa.Table, meta: dict, human_budget: int | None, old: dict | None = None) -> None:
    """Record the people's tasks in ``meta`` (:func:`abcde.samples.people_tasks.plan_people`): ``human_budget``
    of the drawn pairs, or (``old``: a sample's plan before ``--extend``) every earlier task and more."""
    if human_budget is None and not old:
        return
    units = units_of(draws, meta)
    if old and old.get("design") == BY_ANSWERS:  # chosen by the model's answers: the same answers, more tasks
        meta[PEOPLE_KEY] = plan_by_answers(units, design_answers({PEOPLE_KEY: old}), int(meta["seed"]),
                                           human_budget or int(old["asked"]), old=old,
                                           weights=unit_weights(draws, meta, units),
                                           pair_weights=census_weights(draws, meta), draw_counts=draw_counts(draws))
        return
    meta[PEOPLE_KEY] = plan_people(units, int(meta["seed"]), human_budget, old=old,
                                   weights=unit_weights(draws, meta, units))


def extend_pair_sample(sample_dir: str | os.PathLike, *, budget: int | None = None, base=None, exp=None, items=None,
                       engine: Engine | str | None = None, human_budget: int | None = None) -> Path:
    """Grow the pair sample in ``sample_dir`` to ``budget`` distinct pairs to judge, continuing its
    successive draws: the same seed, clocks, estimator, allocation (per stratum for the stratified
    design), slices and blind settings, so the result is exactly the sample a fresh draw at
    ``budget`` gives, every existing judgement stays valid, and the estimates use all of them.

    ``human_budget``: grow the people's tasks (``pairs --human-budget``) to that many pairs, every
    earlier task kept; with the same ``budget`` (or None), only the people's tasks grow. Growing
    ``budget`` alone keeps each stratum's inclusion threshold, so new pairs join the people's tasks
    at the same rate.

    The inputs are those the sample was drawn from (their recorded paths; give ``base``, ``exp``,
    ``items`` for tables, or when the files moved), checked against the recorded fingerprints.
    The judgements stay in place; the metadata lists the samples it ``extends``.
    """
    s = PairSampleDir.read(sample_dir)
    m = s.metadata
    old_people = m.get(PEOPLE_KEY)
    if human_budget is not None:
        check_human_budget(human_budget, budget if budget is not None else int(m["budget"]))
        if not old_people:
            raise InputError(
                f"The pair sample in '{s.path}' was drawn without --human-budget: every pair is a people's task. "
                "Extend it with --budget alone (a model can judge the new pairs, and the people's judgements so "
                "far, the first pairs of each stratum, stay a random subset), or draw a new sample with "
                "--human-budget.")
        had = int(old_people["tasks"])
        if human_budget <= int(old_people["asked"]):
            raise InputError(f"The pair sample in '{s.path}' has {had:,} people's tasks; give a larger "
                             f"--human-budget to extend them (got {human_budget:,}).")
        if budget is None:
            budget = int(m["budget"])
    elif budget is None:
        raise InputError(f"Give a larger --budget (or --human-budget) to extend the pair sample in '{s.path}'.")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < int(m["budget"]) or (
            budget == int(m["budget"]) and human_budget is None):
        raise InputError(f"The pair sample in '{s.path}' has a budget of {m['budget']:,} pairs; give a larger "
                         f"budget to extend it (got {budget!r}).")
    if m.get("exhausted") and budget > int(m["budget"]):
        raise InputError(f"The pair sample in '{s.path}' already holds all {m['judgeable_pairs']:,} pairs that need "
                         "a judgement; there is nothing to add. Its estimates use the whole population of pairs.")
    given = _recorded_inputs(s, base=base, exp=exp, items=items)
    prints = s.check_inputs(base=given.base, exp=given.exp, items=given.items)
    diff = build_diff(given, engine=engine, roles=_roles(m.get("target", "delta_precision")), prints=prints)
    estimator = m.get("estimator") or "paper"
    strata, floor = (tuple(m["budgets"]) if estimator == "stratified" else STRATA), int(m.get("dp_floor") or 0)
    if strata == SIGNED:
        # Drawn before the agreed stratum: its strata keep their draws and budget, the agreed pairs
        # (the recall lift's third stratum) come on top; that budget stays their floor in every later
        # --extend (recorded as dp_floor), or a later budget would give them fewer than they hold.
        strata, floor = STRATA, int(m["budget"])
    if estimator == "paper" and "agreed_budget" not in m:  # the paper's design, drawn before the agreed pairs
        floor = int(m["budget"])
    draws, items_t, meta, slices, hide = _draw(
        diff, given, prints, budget=budget, seed=int(m["seed"]), slice_by=m.get("slice_by") or (),
        estimator=estimator, allocation=m.get("allocation") or "proportional", sigmas=m.get("pilot_sigmas"),
        hide=s.hidden, strata=strata, share=m.get("agreed_share"), floor=floor, agreed_by=_agreed_by(m))
    prints.check("extending the pair sample")  # before comparing the draws: a file changed meanwhile is named
    _check_continues(s, draws, prints)
    meta["target"] = m.get("target", "delta_precision")
    if m.get("question") is not None:
        meta["question"] = m["question"]
    _with_people(draws, meta, human_budget, old=old_people)
    meta["extends"] = [*m.get("extends", []), {"sample_id": m["sample_id"], "budget": m["budget"],
                                               "judgeable_pairs": m["judgeable_pairs"],
                                               **({"people_tasks": old_people["tasks"]} if old_people else {})}]
    return write_sample_dir(s.path, draws, items_t, meta, slices=slices, hidden=hide, show_ids=s.show_ids,
                            extends=m["sample_id"])


def _agreed_by(m: dict) -> str:
    """How a sample's agreed stratum is drawn when it grows: as it was. By cells when its metadata
    says so (``agreed_draws``, :data:`abcde.sampling.agreed.BY_CELLS`); a sample that holds agreed
    pairs without saying so was drawn before issue 49, by a clock per item; a sample drawn before the
    agreed stratum gets it now, by cells."""
    drawn = m.get("agreed_draws")
    if drawn is not None:
        if drawn != BY_CELLS:
            raise InputError(f"The pair sample's agreed stratum was drawn in a way this abcde does not know "
                             f"(agreed_draws {drawn!r} in its metadata.json); extend it with the abcde that drew it.")
        return "cells"
    had = "agreed" in (m.get("budgets") or {}) or "agreed_budget" in m
    return "items" if had else "cells"


def _recorded_inputs(s: PairSampleDir, *, base, exp, items) -> Inputs:
    """The inputs a sample was drawn from: the given ones, else the recorded local paths."""
    m = s.metadata
    paths = m.get("input_paths") or {}
    cols = m.get("columns") or {}
    given = {"base": base, "exp": exp, "items": items}
    recorded = m.get("inputs") or {}
    for role in ("base", "exp", "items"):
        if given[role] is None and role in paths:
            given[role] = paths[role]
        if given[role] is None and role in recorded:
            raise InputError(f"The pair sample in '{s.path}' was drawn from a {role} {recorded[role]!r} whose path "
                             f"it did not record; give it again (--{role} / {role}=).")
    return Inputs(given["base"], given["exp"], items=given["items"], item_id=cols.get("item_id", "item_id"),
                  cluster_id=cols.get("cluster_id", "cluster_id"), base_cluster_id=cols.get("base_cluster_id"),
                  exp_cluster_id=cols.get("exp_cluster_id"), weight=cols.get("weight"))


def _check_continues(s: PairSampleDir, draws: pa.Table, prints: InputPrints) -> None:
    """Refuse to write unless the new draws continue the sample's: per stratum (stratified) or
    overall (paper), the earlier draws are the first draws of the new sample; a stratum the new
    budget covers whole (a census) must hold every earlier pair of that stratum. The input files
    were checked unchanged (``prints``); an input abcde cannot fingerprint (a directory, a URI) is
    named as the likely cause."""
    def by_stratum(t: pa.Table) -> dict:
        strata = t.column("stratum").to_pylist() if "stratum" in t.column_names else [None] * t.num_rows
        rows = zip(strata, t.column("pair_id").to_pylist(), t.column("item_a").to_pylist(),
                   t.column("class").to_pylist())
        out: dict = {}
        for st, *row in rows:
            out.setdefault(st, []).append(tuple(row))
        return out

    census: set = set()
    if "pair_weight" in draws.column_names and "stratum" in draws.column_names:
        census = {st for st, w in zip(draws.column("stratum").to_pylist(), draws.column("pair_weight").to_pylist())
                  if w is not None}
    old, new = by_stratum(s.draws), by_stratum(draws)
    for st, rows in old.items():
        if st in census:
            ok = {r[0] for r in rows} <= {r[0] for r in new.get(st, [])}
        else:
            ok = new.get(st, [])[:len(rows)] == rows
        if not ok:
            where = f"The new draws do not continue the sample in '{s.path}'" + (f" (stratum {st})" if st else "")
            if prints.unprinted:
                named = prints.unprinted_text()
                raise InputError(f"{where}; it was not changed. {named[:1].upper() + named[1:]} probably "
                                 "changed since the sample was drawn (abcde cannot fingerprint a directory or URI); "
                                 "draw the sample again from the inputs as they are now.")
            raise InputError(f"{where}, although every input file is the one it was drawn from (same "
                             "fingerprints); it was not changed. Please report this with the sample's metadata.json.")


def _draw(diff, given: Inputs, prints: InputPrints, *, budget: int, seed: int, slice_by, estimator: str,
          allocation: str, sigmas: dict | None, hide, strata: tuple = STRATA, share: float | None = None,
          floor: int = 0, agreed_by: str = "cells") -> tuple:
    """The draws, item attributes, metadata and slice multipliers of a pair sample (not written);
    the metadata records ``prints``, the inputs' fingerprints taken before they were read, and how its
    agreed stratum was drawn (``agreed_draws``: by cells, :mod:`abcde.sampling.agreed`; absent in
    samples drawn before, by a clock per item, which ``agreed_by="items"`` continues)."""
    # Every slice column name works: the multipliers' rows hold its values under "value".
    check_slice_columns(diff, [(c,) for c in slice_by], fields=())
    hide = check_hidden(diff.attributes, hide)
    o = overall(diff)
    eng = diff.engine
    # 1–3. The strata, their masses and sizes (one query of the cells), the budgets.
    plan = plan_sample(diff, budget=budget, total_weight=o["total_weight"], estimator=estimator,
                       allocation=allocation, sigmas=sigmas, strata=strata, share=share, floor=floor,
                       agreed_by=agreed_by)
    # 4. The draws of each stratum.
    drawn = draw_plan(diff, plan, [seed])[seed]
    # 5. The listing: the draws as one table, the drawn items' attributes, the exact facts, the metadata.
    draws, judgeable, exhausted, extra = _listed(plan, drawn, budget, sigmas)
    id_type = "integer" if diff.joined.item_id.type().is_integer() else "string"
    # Attributes of every item in the sample.
    if draws.num_rows:
        ids = pa.table({"item_id": pa.concat_arrays([draws.column("item_a").combine_chunks(),
                                                     draws.column("item_b").combine_chunks()])})
        idt = ibis.memtable(ids).distinct()
        # Every drawn item, the agreed pairs' too (together in both clusterings: unaffected items among them).
        src = diff.items if diff.items is not None else diff.joined.select("item_id", "weight")
        items_t = eng.to_arrow(idt.join(src, "item_id").order_by("item_id"), step="sample items")
    else:
        items_t = pa.table({"item_id": pa.array([], pa.int64())})
    slices = _slice_multipliers(diff, slice_by, o["total_weight"]) if slice_by else None
    meta = {
        "seed": seed,
        "budget": budget,
        **extra,
        "judgeable_pairs": judgeable,
        "exhausted": exhausted,
        "draws": draws.num_rows,
        "pair_totals": plan.totals,
        "total_weight": o["total_weight"],
        "items": o["items"],
        "split_rate_T": o["split_rate"],
        "merge_rate_T": o["merge_rate"],
        "jaccard_distance_T": o["jaccard_distance"],
        "id_type": id_type,
        "attributes": diff.attributes,
        "slice_by": list(slice_by),
        "inputs": given.names(),
        "input_paths": {k: full_path(v) for k, v in (("base", given.base), ("exp", given.exp),
                                                     ("items", given.items)) if isinstance(v, (str, os.PathLike))},
        "columns": {"item_id": given.item_id, "cluster_id": given.cluster_id, "weight": given.weight,
                    **({"base_cluster_id": given.base_cluster_id} if given.base_cluster_id else {}),
                    **({"exp_cluster_id": given.exp_cluster_id} if given.exp_cluster_id else {})},
        "input_fingerprints": {k: dict(prints.prints[k]) for k in ("base", "exp", "items") if k in prints.prints},
    }
    if not (given.base_cluster_id is not None and given.base_cluster_id == given.item_id):
        # The exact facts JaccardDistance's good and bad parts need (SplitDistance(T), MergeDistance(T),
        # the shares of both items of every split and merge draw, per slice weight(I), SplitDistance(I),
        # MergeDistance(I)), taken now from the diff at hand: `abcde quality` then never reads the inputs
        # again. Not for one clustering's Precision (Base = every item alone), which has no distances.
        meta["distances"] = facts_record(distance_facts(diff, drawn_items(draws), slice_by=slice_by, totals=o))
        if "agreed" in (meta.get("budgets") or {}) or "agreed_budget" in meta:
            # The recall lift's exact facts (the pair masses, both cluster weights of every split and
            # merge item drawn, per slice the masses of its vantage items), likewise stored now.
            meta["recall"] = recall_record(recall_facts(diff, recall_items(draws), slice_by=slice_by,
                                                        total_weight=o["total_weight"]))
    return draws, items_t, meta, slices, hide


def read_pair_sample_early(diff, *, budget: int, seed: int, estimator: str = "stratified") -> None:
    """Name what the pair sample of these settings (:func:`stage_pair_sample`) reads from the inputs
    beyond the affected items, so that the read of the affected items fetches it too, in the same pass
    (:func:`abcde.sampling.stratified.read_early`): ``abcde evaluate`` calls it before its impact tables
    read the affected items. What is drawn is the same either way."""
    plan = plan_sample(diff, budget=budget, total_weight=overall(diff)["total_weight"], estimator=estimator)
    read_early(diff, plan, [seed])


def _listed(plan: SamplePlan, drawn: dict, budget: int, sigmas: dict | None) -> tuple:
    """A plan's draws (``{stratum: draws}``) as the sample's one table, with its distinct pairs to judge,
    whether it fell short of ``budget`` (exhausted: every pair it could take drawn) and the metadata of
    its design. Each stratum keeps its own order (the paper's own draws a stratum of null), so that a
    larger budget continues each (``pairs --extend``)."""
    def distinct(t: pa.Table) -> int:
        return len({p for p, n in zip(t.column("pair_id").to_pylist(), t.column("needs_judgement").to_pylist()) if n})

    extra: dict = {}
    if plan.estimator == "paper":
        # The paper's draws ∝ u_ij, and beside them (last) the agreed pairs (together in both
        # clusterings, ∝ w_i·w_j; the recall lift's, issue 38), which the paper's estimators leave out
        # (abcde.sampling.allocation.without_agreed).
        own, agreed = drawn["paper"], drawn["agreed"]
        whole = "agreed" in plan.census
        extra.update(estimator="paper", allocation=None, agreed_share=plan.share, agreed_budget=plan.budgets["agreed"],
                     census=["agreed"] if whole else [])
        if plan.floor:
            extra["dp_floor"] = plan.floor
        if plan.agreed_by == "cells":
            extra["agreed_draws"] = dict(BY_CELLS)
        judgeable = distinct(own)
        exhausted = judgeable < plan.budgets["paper"]
        if not agreed.num_rows:
            return own, judgeable, exhausted, extra
        own = _with_stratum(own, None, pair_weights=True)
        agreed = _with_stratum(agreed, "agreed", pair_weights=True)
        draws = pa.concat_tables([own, agreed.select(own.column_names).cast(own.schema)])
        n_pairs = distinct(agreed)
        judgeable, exhausted = judgeable + n_pairs, exhausted and (whole or n_pairs < plan.budgets["agreed"])
    else:
        draws = pa.concat_tables([_with_stratum(drawn[c], c, pair_weights=plan.strata != LEGACY_STRATA)
                                  for c in plan.strata])
        judgeable = distinct(draws)
        # Every stratum's distinct pairs, counted per stratum (the strata hold disjoint pairs: the budget
        # is filled when these add up to it; a stratum at its cap leaves it short: exhausted).
        exhausted = sum(distinct(drawn[c]) for c in plan.strata if drawn[c].num_rows) < budget
        extra.update(estimator="stratified", allocation=plan.allocation, budgets=plan.budgets,
                     census=sorted(plan.census, key=plan.strata.index), self_term=plan.self_term, pilot_sigmas=sigmas)
        if plan.strata != LEGACY_STRATA:
            extra["pair_counts"] = {c: plan.counts[c] for c in plan.strata}
        if plan.strata == STRATA:
            extra["agreed_share"] = plan.share
            if plan.agreed_by == "cells":
                extra["agreed_draws"] = dict(BY_CELLS)
            if plan.floor:
                extra["dp_floor"] = plan.floor
    return draws.set_column(0, "draw", pa.array(range(draws.num_rows), pa.int64())), judgeable, exhausted, extra


def _with_stratum(draws: pa.Table, stratum: str | None, *, pair_weights: bool) -> pa.Table:
    """A stratum's draws with their ``stratum`` and (sign-split samples) ``pair_weight``: a census
    stratum's pairs carry theirs, a sampled stratum's draws none (null)."""
    if pair_weights and "pair_weight" not in draws.column_names:
        draws = draws.append_column("pair_weight", pa.nulls(draws.num_rows, pa.float64()))
    return draws.append_column("stratum", pa.array([stratum] * draws.num_rows, pa.string()))


def _slice_multipliers(diff, slice_by, total_weight: float) -> pa.Table:
    """Exact ``weight(I)``, ``pairweight(I)`` and self term per value of each slice column."""
    eng = diff.engine
    pw = pairweight_expr(diff)
    rows = []
    # The sums under private names beside the slice column, whatever it is called ("pw", "value", ...).
    iid, w, p = private("id"), private("weight"), private("pw")
    for c in slice_by:
        selfs = slice_self_terms(diff, c, total_weight)
        a = diff.items.select("item_id", c)
        j = diff.joined
        full = j.select(**{iid: j.item_id, w: j.weight})
        full = full.join(a, full[iid] == a.item_id)
        wt = eng.rows(full.group_by(c).aggregate(**{w: full[w].sum()}), step=f"slice weights {c}")
        g = pw.select(**{iid: pw.item_id, p: pw.pw})
        g = g.join(a, g[iid] == a.item_id)
        pws = {json.dumps(r[c], default=str): r[p] for r in
               eng.rows(g.group_by(c).aggregate(**{p: g[p].sum()}), step=f"slice pair weights {c}")}
        for r in sorted(wt, key=lambda r: json.dumps(r[c], default=str)):  # same order on every engine
            key = json.dumps(r[c], default=str)
            rows.append({"column": c, "value": key, "weight": r[w],
                         "pairweight": pws.get(key, 0.0) / total_weight,
                         "self_term": selfs.get(key, (0.0, 0.0))[0],
                         "self_pairweight": selfs.get(key, (0.0, 0.0))[1]})
    return pa.Table.from_pylist(rows, schema=pa.schema(
        [("column", pa.string()), ("value", pa.string()), ("weight", pa.float64()),
         ("pairweight", pa.float64()), ("self_term", pa.float64()), ("self_pairweight", pa.float64())]))


def pilot_sigmas_from_dir(path) -> dict:
    """σ_c per stratum from a judged sample directory (paper or stratified design; its
    ``judgements.csv`` and judgement store ``judgements.sqlite``, those present)."""
    s = PairSampleDir.read(path)
    files = judgement_files(s.path)
    if not files:
        raise InputError(f"The pilot sample '{s.path}' has no judgements (judgements.csv or judgements.sqlite); "
                         f"judge it first.")
    by_pair = load_judgements(files, pair_ids=s.judgeable_ids(), id_type=s.metadata["id_type"]).by_pair
    # The strata of a new sample (a paper's-design pilot's draws as the strata they fall in).
    return stratum_sigmas(draws_by_stratum(s.draws), by_pair)
