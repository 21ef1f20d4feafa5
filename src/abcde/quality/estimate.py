"""``estimate_quality``: the estimates of a judged pair sample directory, by the design it
was drawn with (the paper's, :mod:`abcde.quality.paper`; stratified,
:mod:`abcde.quality.stratified`).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Sequence

import pyarrow as pa

from abcde.errors import InputError
from abcde.core.names import PEOPLE
from abcde.quality.combined import combined_paper, combined_stratified, combined_stratified_slices
from abcde.quality.judgements import judgement_files, load_judgements
from abcde.quality.ppi import people_pairs
from abcde.quality.paper import estimate_from_draws
from abcde.quality.result import Estimate, QualityResult
from abcde.quality.sample_dir import PairSampleDir
from abcde.quality.stratified import StratifiedSample, estimate_stratified, estimate_stratified_slices


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
    return replace(r, precision=Estimate("precision", 1.0 + dp.value, dp.standard_error, dp.n_judgements,
                                         method=dp.method, note=dp.note,
                                         centre=None if dp.centre is None else 1.0 + dp.centre,
                                         interval_se=dp.interval_se, bounds=_precision_bounds(dp.bounds)),
                   slices=slices)


def _precision_bounds(bounds) -> tuple[float, float]:
    """Precision = 1 + ΔPrecision, inside [0, 1] and ΔPrecision's feasible range shifted by 1."""
    lo, hi = bounds if bounds is not None else (-1.0, 0.0)
    return (min(max(1.0 + lo, 0.0), 1.0), min(max(1.0 + hi, 0.0), 1.0))


def estimate_quality(sample_dir, judgements=None, *, slice_by: Sequence[str] = (),
                     source: str | None = None) -> QualityResult:
    """Estimate ΔPrecision and the Good/Bad Split/Merge rates from a judged pair sample.

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
        ``result.design["judgements_used"]`` (:meth:`abcde.quality.judgements.ResolvedJudgements.used`).
        By default, a sample judged by a model and by people (person or oracle) is estimated
        prediction-powered (:mod:`abcde.quality.combined`): the model's judgements of every pair,
        corrected by the people's judgements of their tasks (``pairs --human-budget``), unbiased
        whatever the model's accuracy; ``result.design["ppi"]`` says what the model added (λ per
        stratum, what its judgements were worth in people's, how often it disagreed with people).
    slice_by
        Attribute columns (of vantage items) for ΔPrecision(I) and its contribution;
        their exact multipliers must have been stored with ``--slice-by`` at sampling.
    """
    s = PairSampleDir.read(sample_dir)
    meta = s.metadata
    design = {"sample_dir": str(sample_dir), "budget": meta.get("budget"),
              "pair_counts": meta.get("pair_counts") or {}}
    if judgements is None:
        judgements = judgement_files(s.path)
    elif isinstance(judgements, (str, os.PathLike, pa.Table)):
        judgements = [judgements]
    res = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"],
                          source=source) if judgements else None
    # Which judgements the estimates use, by source: never mixed silently (``abcde quality`` shows it).
    design["judgements_used"] = res.used(source) if res else {"by_source": {}, "total": 0, "raters": 0,
                                                              "source": source, "left_out": {}}
    tasks = people_pairs(s.draws, meta)
    if tasks is not None:
        design["people_tasks"] = len(tasks)
    stored = s.slices() if slice_by else {}
    for col in slice_by:
        if col not in stored:
            raise InputError(
                f"No exact slice multipliers for '{col}' in this sample. Draw the pairs with "
                f"'--slice-by {col}' (stored: {', '.join(repr(c) for c in stored) or 'none'})."
            )
    by_source = res.sources if res else {}
    if source is None and "model" in by_source and any(src in by_source for src in PEOPLE):
        # A model's judgements and people's: prediction-powered, never a vote between them.
        people = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source=PEOPLE)
        model = load_judgements(judgements, pair_ids=s.judgeable_ids(), id_type=meta["id_type"], source="model")
        return _with_precision(_combined(s, people, model, tasks, slice_by, stored, design), meta)
    if meta.get("estimator") == "stratified":
        ss = _stratified_sample(s)
        by_pair = res.by_pair if res else {}
        r = estimate_stratified(ss, by_pair, split_rate=meta["split_rate_T"], merge_rate=meta["merge_rate_T"])
        slices = _stratified_slices(s, slice_by, stored, lambda value, mult, selfs, W: estimate_stratified_slices(
            ss, by_pair, value, mult, selfs, total_weight=W))
        return _with_precision(replace(r, disagreements=res.disagreements if res else 0,
                                       ties=res.ties if res else 0, slices=slices, design=design), meta)
    return _with_precision(replace(estimate_from_draws(
        s.draws, res.by_pair if res else {}, meta["pair_totals"], meta["split_rate_T"], meta["merge_rate_T"],
        items=s.items, slice_multipliers={c: stored[c] for c in slice_by}, total_weight=meta["total_weight"],
        disagreements=res.disagreements if res else 0, ties=res.ties if res else 0,
    ), design=design), meta)




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


def _combined(s: PairSampleDir, people, model, tasks, slice_by, stored: dict, design: dict) -> QualityResult:
    """The prediction-powered estimates (:mod:`abcde.quality.combined`) of a sample judged by a
    model and by people; ``design["ppi"]`` says what the model added."""
    meta = s.metadata
    pb, mb = people.by_pair, model.by_pair
    if meta.get("estimator") == "stratified":
        ss = _stratified_sample(s)
        r = combined_stratified(ss, pb, mb, tasks, split_rate=meta["split_rate_T"], merge_rate=meta["merge_rate_T"])
        r = replace(r, slices=_stratified_slices(s, slice_by, stored, lambda value, mult, selfs, W: (
            combined_stratified_slices(ss, pb, mb, tasks, value, mult, selfs, total_weight=W))))
    else:
        r = combined_paper(s.draws, pb, mb, tasks, meta["pair_totals"], meta["split_rate_T"], meta["merge_rate_T"],
                           items=s.items, slice_multipliers={c: stored[c] for c in slice_by},
                           total_weight=meta["total_weight"])
    outside = 0 if tasks is None else sum(1 for p in pb if p not in tasks)
    ppi = {**r.design["ppi"], "people_outside_tasks": outside}
    if outside:
        ppi["outside_note"] = (f"{outside:,} people's judgements of pairs outside the people's tasks were left out "
                               "(the estimate needs the people's pairs to be the random subset drawn for them)")
    return replace(r, disagreements=people.disagreements, ties=people.ties, design={**design, "ppi": ppi})
