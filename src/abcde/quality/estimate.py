"""``estimate_quality``: the estimates of a judged pair sample directory, by the design it
was drawn with (the paper's, :mod:`abcde.quality.paper`; stratified,
:mod:`abcde.quality.stratified`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from typing import Sequence

import pyarrow as pa

from abcde.errors import InputError
from abcde.core.names import PEOPLE
from abcde.quality.combined import combined_paper, combined_stratified, combined_stratified_slices
from abcde.quality.distances import estimate_distances_paper, estimate_distances_stratified
from abcde.quality.exact_facts import sample_facts
from abcde.samples.judgements import judgement_files, load_judgements
from abcde.samples.people_tasks import META_KEY as PEOPLE_PLAN, design_answers, people_cells, people_pairs, tasks_note
from abcde.quality.paper import estimate_from_draws
from abcde.quality.ppi import agreement
from abcde.quality.recall import estimate_recall_lift
from abcde.samples.facts import stored_recall
from abcde.quality.result import Estimate, QualityResult
from abcde.samples.sample_dir import PairSampleDir
from abcde.sampling.allocation import draws_by_stratum
from abcde.sampling.stratified import StratifiedSample
from abcde.util.files import check_input_path, reading_record, refuse_special_entries
from abcde.quality.stratified import estimate_stratified, estimate_stratified_slices


def _with_precision(r: QualityResult, meta: dict) -> QualityResult:
    """For a sample of one clustering's pairs (``abcde precision``), its Precision ``1 + ΔPrecision``
    (Base = every item alone has Precision 1), overall and per slice."""
    if meta.get("target") != "precision":
        return r
    dp = r.delta_precision
    slices = {}
    for col, rows in r.slices.items():
        out = []
        for row in rows:
            e = dict(row["delta_precision"])
            for k in ("estimate", "ci_low", "ci_high"):
                e[k] = None if e[k] is None else 1.0 + e[k]
            # Precision(I) = 1 + ΔPrecision(I) lies in [0, 1]: its interval too.
            for k in ("ci_low", "ci_high"):
                e[k] = None if e[k] is None else min(max(e[k], 0.0), 1.0)
            if e.get("range"):
                e["range"] = [None if x is None else min(max(1.0 + x, 0.0), 1.0) for x in e["range"]]
            out.append({**row, "precision": e})
        slices[col] = out
    # ΔPrecision's interval shifted by 1, at every level: its own interval (read off draws), its unsure
    # census pairs' span and its exactness go with it (issue 51: at 95% alone they were kept).
    shifted = None if dp.interval_of is None else (lambda z: tuple(1.0 + x for x in dp.interval_of(z)))
    return replace(r, precision=Estimate("precision", 1.0 + dp.value, dp.standard_error, dp.n_judgements,
                                         method=dp.method, note=dp.note,
                                         centre=None if dp.centre is None else 1.0 + dp.centre,
                                         interval_se=dp.interval_se, bounds=_precision_bounds(dp.bounds),
                                         exact=dp.exact, interval_of=shifted, span=dp.span),
                   slices=slices)


def _precision_bounds(bounds) -> tuple[float, float]:
    """Precision = 1 + ΔPrecision, inside [0, 1] and ΔPrecision's feasible range shifted by 1."""
    lo, hi = bounds if bounds is not None else (-1.0, 0.0)
    return (min(max(1.0 + lo, 0.0), 1.0), min(max(1.0 + hi, 0.0), 1.0))


def estimate_quality(sample_dir, judgements=None, *, slice_by: Sequence[str] = (),
                     source: str | None = None, distances: bool = True, diff=None) -> QualityResult:
    """Estimate ΔPrecision, the Good/Bad Split/Merge rates and JaccardDistance's good and bad parts
    from a judged pair sample.

    Parameters
    ----------
    sample_dir
        Directory written by :func:`draw_pair_sample` (``abcde pairs``).
    judgements
        Judgement file(s) or Arrow table(s) in the judgement file format; default: ``judgements.csv`` and the judgement store
        ``judgements.sqlite`` (``abcde judge serve`` / ``model``) in the directory, those present.
    source
        Use only the judgements of this source: ``person``, ``model`` or ``oracle`` (default: every
        source). Which sources went in, and how many judgements of each, is in
        ``result.design["judgements_used"]`` (:meth:`abcde.samples.judgements.ResolvedJudgements.used`).
        By default, a sample judged by a model and by people (person or oracle) is estimated
        prediction-powered (:mod:`abcde.quality.combined`): the model's judgements of every pair,
        corrected by the people's judgements of their tasks (``pairs --human-budget``), unbiased
        whatever the model's accuracy; ``result.design["ppi"]`` says what the model added (λ per
        stratum, what its judgements were worth in people's, how often it disagreed with people).
    slice_by
        Attribute columns (of vantage items) for ΔPrecision(I) and its contribution (and the distances'
        parts per slice); their exact multipliers must have been stored with ``--slice-by`` at sampling.
    distances
        Also estimate GoodSplitDistance, BadSplitDistance, GoodMergeDistance, BadMergeDistance and
        their sums GoodDistance + BadDistance = JaccardDistance (``result.distances``,
        :mod:`abcde.quality.distances`) from the same judged split and merge pairs. They need the exact
        SplitDistance, MergeDistance and each drawn item's cluster weights, which a sample stores
        when it is drawn (nothing is read). A sample drawn by an earlier abcde stores none: they come
        from ``diff``, else from the inputs recorded in the sample when they are still the local
        files it was drawn from (their fingerprints are checked; they are read once). When neither is
        possible, ``result.distances`` is None and ``result.distances_note`` says why. With a model's
        and people's judgements, the distances use the people's alone (weighted by cell when their
        tasks were chosen by the model's answers).
    diff
        The diff (:class:`~abcde.core.diff.Diff`) or :class:`~abcde.metrics.impact.ImpactResult` of
        the inputs the sample was drawn from, for a sample that stores no exact distances (a diff of
        other inputs is refused; an ImpactResult's totals are checked even when it is not needed).
    """
    # Only files and directories are opened (a named pipe in the sample's place, or given as a
    # judgement file, would block its reader forever), and metadata JSON that cannot be decoded is
    # named in one line.
    refuse_special_entries(sample_dir, what=f"the pair sample '{sample_dir}'", expected="draw the pairs again")
    with reading_record(f"the pair sample in '{sample_dir}'", expected="draw the pairs again"):
        s = PairSampleDir.read(sample_dir)
    meta = s.metadata
    design = {"sample_dir": str(sample_dir), "budget": meta.get("budget"),
              "pair_counts": meta.get("pair_counts") or {}}
    if isinstance(meta.get("question"), str):  # what the pairs ask (abcde ids: an id kept for its concept)
        design["question"] = meta["question"]
    if judgements is None:
        judgements = judgement_files(s.path)
    elif isinstance(judgements, (str, os.PathLike, pa.Table)):
        judgements = [judgements]
    for j in judgements:
        if isinstance(j, (str, os.PathLike)):
            check_input_path(j, where=f"The judgement file '{os.fspath(j)}'",
                             expected="give a CSV, Parquet or JSONL file of judgements (or the judgement store)")
    # People's judgements count on the people's tasks only (pairs --human-budget; abcde.samples.people_tasks.outside_tasks)
    tasks = people_pairs(s.draws, meta)
    res = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"],
                          source=source, tasks=tasks) if judgements else None
    # Which judgements the estimates use, by source: never mixed silently (``abcde quality`` shows it).
    design["judgements_used"] = res.used(source) if res else {"by_source": {}, "total": 0, "raters": 0,
                                                              "source": source, "left_out": {}}
    if tasks is not None:
        design["people_tasks"] = len(tasks)
    if res and {k for k, n in res.sources.items() if n} == {"model"}:
        # A model's judgements alone: how the people's (left out, or none) agree with them, which the
        # verdict says beside its model-only answer (a wrong model must be seen, issue 52).
        design["judgements_used"]["people_check"] = _people_check(judgements, s, tasks, res)
    stored = s.slices() if slice_by else {}
    for col in slice_by:
        if col not in stored:
            raise InputError(
                f"No exact slice multipliers for '{col}' in this sample. Draw the pairs with "
                f"'--slice-by {col}' (stored: {', '.join(repr(c) for c in stored) or 'none'})."
            )
    by_source = res.sources if res else {}
    cells = people_cells(s.draws, meta)
    if cells is not None and (source in PEOPLE or (source is None and any(src in by_source for src in PEOPLE))):
        # The people's tasks were chosen by a model's answers: people's judgements are weighted by
        # cell, with or without the model's judgements at hand (never as a plain random subset).
        people = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"],
                                 source=PEOPLE if source is None else source, tasks=tasks)
        model = _Answers(design_answers(meta))
        # the model's judgements as stored (every answer), which design["ppi"] counts beside the answers used;
        # with --source person or oracle the estimate uses none of them (the cells' weights only)
        kept = (load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source="model").by_pair
                if source is None and "model" in by_source else None)
        r = _with_precision(_combined(s, people, model, tasks, slice_by, stored, design, cells=cells,
                                      stored_model=kept, people_only=source), meta)
        # The distances from the people's draws alone, weighted by cell as the estimates above.
        r = _with_recall(r, s, people.by_pair, slice_by, cells=cells, people=True)
        return _with_distances(r, s, people.by_pair, slice_by, distances=distances, diff=diff, cells=cells)
    if source is None and "model" in by_source and any(src in by_source for src in PEOPLE):
        # A model's judgements and people's: prediction-powered, never a vote between them.
        people = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source=PEOPLE,
                                 tasks=tasks)
        model = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source="model")
        r = _with_precision(_combined(s, people, model, tasks, slice_by, stored, design), meta)
        # The distances from the people's judgements of their tasks alone (the model's are not used there).
        pb = {p: a for p, a in people.by_pair.items() if tasks is None or p in tasks}
        r = _with_recall(r, s, pb, slice_by, people=True)
        return _with_distances(r, s, pb, slice_by, distances=distances, diff=diff, people_only=True)
    by_pair = res.by_pair if res else {}
    if meta.get("estimator") == "stratified":
        ss = _stratified_sample(s)
        r = estimate_stratified(ss, by_pair, split_rate=meta["split_rate_T"], merge_rate=meta["merge_rate_T"])
        slices = _stratified_slices(s, slice_by, stored, lambda value, mult, selfs, W: estimate_stratified_slices(
            ss, by_pair, value, mult, selfs, total_weight=W))
        r = _with_precision(replace(r, disagreements=res.disagreements if res else 0,
                                    ties=res.ties if res else 0, slices=slices, design=design), meta)
    else:
        r = _with_precision(replace(estimate_from_draws(
            s.draws, by_pair, meta["pair_totals"], meta["split_rate_T"], meta["merge_rate_T"],
            items=s.items, slice_multipliers={c: stored[c] for c in slice_by}, total_weight=meta["total_weight"],
            disagreements=res.disagreements if res else 0, ties=res.ties if res else 0,
        ), design=design), meta)
    r = _with_recall(r, s, by_pair, slice_by)
    return _with_distances(r, s, by_pair, slice_by, distances=distances, diff=diff)


def _people_check(judgements, s: PairSampleDir, tasks, model) -> dict:
    """The people's (and oracle's) judgements of the pairs a model judged, when the estimates use the
    model's alone: ``{"people_judgements": pairs they judged same/different, "both_judged": of those the
    model also judged so, "disagreements": of those they answered otherwise}``."""
    if not any((model.left_out or {}).get(k) for k in PEOPLE):
        return {"people_judgements": 0, "both_judged": 0, "disagreements": 0}
    people = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=s.metadata["id_type"], source=PEOPLE,
                             tasks=tasks).by_pair
    said = {p: a for p, a in people.items() if a in ("same", "different")}
    both, dis = agreement(said, model.by_pair, said)
    return {"people_judgements": len(said), "both_judged": both, "disagreements": dis}


def _with_recall(r: QualityResult, s: PairSampleDir, by_pair: dict, slice_by, *, cells=None,
                 people: bool = False) -> QualityResult:
    """``r`` with the recall lift (:mod:`abcde.quality.recall`) from the same judged pairs plus the
    agreed stratum's, overall and per ``slice_by`` value (each slice row gains ``recall_lift``); or
    with why it is not there and how to add it (a sample drawn before the agreed stratum)."""
    meta = s.metadata
    where = str(s.path)
    if meta.get("target") == "precision":
        return replace(r, recall_note="one clustering's Precision has no recall side (no second clustering)")
    paper = meta.get("estimator") != "stratified"
    facts = stored_recall(meta)
    if facts is None or ("agreed_budget" not in meta if paper else "agreed" not in (meta.get("budgets") or {})):
        budget = int(meta.get("budget") or 0)
        more = budget + max(10, int(math.ceil(0.1 * budget)))
        if meta.get("exhausted"):
            return replace(r, recall_note="this sample was drawn before abcde drew agreed pairs (together in both "
                                          "clusterings), and holds every pair of its strata; draw it again for the "
                                          "recall lift")
        return replace(r, recall_note="this sample was drawn before abcde drew agreed pairs (together in both "
                                      "clusterings), which the recall lift needs; add them, every judgement kept",
                       recall_command=f"abcde pairs --extend {where} --budget {more}")
    method = ("the paper's draws ∝ u_ij post-stratified" if paper else "stratified") + (
        "; split and merge draws reweighted by their cluster's weight, agreed pairs ∝ w_i·w_j")
    if people:
        method += "; people's judgements only (a model's judgements are not used for the recall lift)"
    if cells is not None:
        method += "; people's draws chosen by a model's answers, weighted by cell"
    values = {}
    if slice_by:
        attrs = {row["item_id"]: row for row in s.items.to_pylist()}
        values = {col: {i: json.dumps(a.get(col), default=str) for i, a in attrs.items()} for col in slice_by
                  if col in facts.slices}
    try:
        sample = _paper_recall_sample(s) if paper else _stratified_sample(s)
        est, exact, by_slice = estimate_recall_lift(sample, by_pair, facts, method=method,
                                                    cells=cells, vantage_values=values)
    except InputError as exc:
        return replace(r, recall_note=f"not estimated: {exc}")
    slices = {}
    for col, rows in r.slices.items():
        got = by_slice.get(col)
        slices[col] = [({**row, "recall_lift": got[json.dumps(row["value"], default=str)]}
                        if got and json.dumps(row["value"], default=str) in got else row) for row in rows]
    return replace(r, recall_lift=est, slices=slices)


def _with_distances(r: QualityResult, s: PairSampleDir, by_pair: dict, slice_by, *, distances: bool, diff,
                    people_only: bool = False, cells=None) -> QualityResult:
    """``r`` with JaccardDistance's good and bad parts (:mod:`abcde.quality.distances`) estimated from
    the same judged pairs (``by_pair``), overall and per ``slice_by`` value; or with the reason they
    are not. A sample of one clustering's pairs (``abcde precision``) has none. ``cells``: the
    people's tasks were chosen by a model's answers (:func:`abcde.samples.people_tasks.people_cells`): the
    people's draws alone, weighted by cell."""
    meta = s.metadata
    if not distances or meta.get("target") == "precision":
        return r
    facts, why = sample_facts(s, slice_by, diff=diff)
    if facts is None:
        return replace(r, distances_note=f"not estimated: {why}")
    method = "paper"
    if meta.get("estimator") == "stratified":
        census = list(meta.get("census") or ())
        method = f"stratified ({meta.get('allocation')})" + (f"; census of {', '.join(census)}" if census else "")
    if people_only:
        method += "; people's judgements only (a model's judgements are not used for the distances)"
    if cells is not None:
        method += ("; people's draws chosen by a model's answers, weighted by cell (the model's judgements are "
                   "not used for the distances)")
    values = {}
    if slice_by:
        attrs = {row["item_id"]: row for row in s.items.to_pylist()}
        values = {col: {i: json.dumps(a.get(col), default=str) for i, a in attrs.items()} for col in slice_by}
    try:
        if meta.get("estimator") == "stratified":
            d = estimate_distances_stratified(_stratified_sample(s), by_pair, facts, method=method,
                                              vantage_values=values, cells=cells)
        else:
            d = estimate_distances_paper(s.draws, by_pair, facts, method=method, vantage_values=values, cells=cells)
    except InputError as exc:  # a drawn item the inputs do not know: not the sample's inputs
        return replace(r, distances_note=f"not estimated: {exc}")
    return replace(r, distances=d)




def _stratified_slices(s: PairSampleDir, slice_by, stored: dict, estimate) -> dict:
    """``{column: rows}`` of a stratified sample's slices, each from
    ``estimate(vantage_value, multipliers, self_terms, total_weight)``."""
    slices = {}
    if slice_by:
        selfs = s.slice_self_terms()
        attrs = {row["item_id"]: row for row in s.items.to_pylist()}
        for col in slice_by:
            if col not in selfs:
                raise InputError(f"This stratified sample has no exact slice self terms for '{col}'; draw "
                                 f"the pairs again with this version and '--slice-by {col}'.")
            value = {i: json.dumps(a.get(col), default=str) for i, a in attrs.items()}
            slices[col] = estimate(value, stored[col], selfs[col], s.metadata["total_weight"])
    return slices


def _stratified_sample(s: PairSampleDir) -> StratifiedSample:
    meta = s.metadata
    strata = s.draws.column("stratum").to_pylist()
    draws = {c: s.draws.filter(pa.array([x == c for x in strata], pa.bool_())) for c in meta["budgets"]}
    return StratifiedSample(draws, meta["pair_totals"], meta["self_term"], meta["budgets"], meta["allocation"],
                            frozenset(meta.get("census") or ()))


def _paper_recall_sample(s: PairSampleDir) -> StratifiedSample:
    """A paper's-design sample as the recall lift reads it: its draws ∝ u_ij by the stratum each
    falls in (:func:`~abcde.sampling.allocation.draws_by_stratum`), and its agreed pairs (listed whole
    when their budget covered them)."""
    meta = s.metadata
    return StratifiedSample(draws_by_stratum(s.draws), meta["pair_totals"], 0.0, {}, "",
                            frozenset(meta.get("census") or ()))


@dataclass(frozen=True)
class _Answers:
    """The model's answers a design was chosen by, as loaded judgements' ``by_pair``."""

    by_pair: dict


def _combined(s: PairSampleDir, people, model, tasks, slice_by, stored: dict, design: dict,
              cells: dict | None = None, stored_model: dict | None = None,
              people_only: str | None = None) -> QualityResult:
    """The prediction-powered estimates (:mod:`abcde.quality.combined`) of a sample judged by a
    model and by people; ``design["ppi"]`` says what the model added. ``cells``: the people's tasks
    were chosen by the model's answers (:func:`abcde.samples.people_tasks.people_cells`); ``stored_model``:
    the model's judgements as stored (default: ``model``'s); ``people_only``: the source given
    (``--source person``/``oracle``), whose judgements alone are weighted by cell, no model's used."""
    meta = s.metadata
    pb, mb = people.by_pair, model.by_pair
    if meta.get("estimator") == "stratified":
        ss = _stratified_sample(s)
        r = combined_stratified(ss, pb, mb, tasks, split_rate=meta["split_rate_T"], merge_rate=meta["merge_rate_T"],
                                cells=cells, stored_model=stored_model)
        r = replace(r, slices=_stratified_slices(s, slice_by, stored, lambda value, mult, selfs, W: (
            combined_stratified_slices(ss, pb, mb, tasks, value, mult, selfs, total_weight=W, cells=cells))))
    else:
        r = combined_paper(s.draws, pb, mb, tasks, meta["pair_totals"], meta["split_rate_T"], meta["merge_rate_T"],
                           items=s.items, slice_multipliers={c: stored[c] for c in slice_by},
                           total_weight=meta["total_weight"], cells=cells, stored_model=stored_model)
    outside = sum(people.outside_tasks.values())  # left out by load_judgements (abcde.samples.people_tasks.outside_tasks)
    ppi = {**r.design["ppi"], "people_outside_tasks": outside}
    plan = meta.get(PEOPLE_PLAN) or {}
    if plan:  # the people's tasks asked (--human-budget), and why they are not as many, when they are not
        ppi["people_tasks_asked"] = int(plan.get("asked") or 0)
        if tasks_note(plan):
            ppi["people_tasks_note"] = tasks_note(plan)
    if people_only:
        ppi["people_only"] = people_only
    if outside:
        ppi["outside_note"] = (f"{outside:,} people's judgements of pairs outside the people's tasks were left out "
                               "(the estimate needs the people's pairs to be the random subset drawn for them)")
    return replace(r, disagreements=people.disagreements, ties=people.ties, design={**design, "ppi": ppi})
