"""The exact facts a pair sample stores, computed from the diff of its inputs when it is drawn
(Ibis: a few queries), and a sample drawn before abcde stored them made whole from its inputs.

What is stored, and how it is read back without Ibis: :mod:`abcde.samples.facts`.
"""

from __future__ import annotations

import json
import math
import os

import ibis
import pyarrow as pa

from abcde.core.diff import Diff, affected_items, build_diff
from abcde.core.formulas import affected, distance_shares
from abcde.core.inputs import Inputs
from abcde.engine import connect
from abcde.errors import InputError
from abcde.metrics.impact import overall, private, slice_sums
from abcde.sampling.cells import cell_sums
from abcde.samples.facts import DistanceFacts, RecallFacts, drawn_items, stored_facts


def distance_facts(diff: Diff, item_ids, *, slice_by=(), source: str = "",
                   totals: dict | None = None) -> DistanceFacts:
    """The exact SplitDistance(T), MergeDistance(T), the shares of ``item_ids`` and, per value of
    each ``slice_by`` column, weight(I), SplitDistance(I), MergeDistance(I), from the diff of the
    inputs a sample was drawn from (a few queries: the overall metrics, a join of the ids with the
    affected items and their fragments, one group-by per slice column). ``totals``: ``overall(diff)``,
    when already computed."""
    o = overall(diff) if totals is None else totals
    ids = list(dict.fromkeys(item_ids))
    shares: dict = {}
    if ids:
        id_type = diff.joined.item_id.type().to_pyarrow()
        try:
            wanted = ibis.memtable(pa.table({"item_id": pa.array(ids).cast(id_type)}))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise InputError(f"The sample's item ids are not of the inputs' id type ({id_type}): {exc}") from exc
        f = diff.fragments
        j = affected_items(diff)
        t = wanted.join(j, "item_id")
        t = t.join(f, [t.base_cluster == f.base_cluster, t.exp_cluster == f.exp_cluster])
        rows = diff.engine.rows(t.select(t.item_id, **distance_shares(f)), step="distance shares of the drawn items")
        shares = {r["item_id"]: (float(r["share_split"]), float(r["share_merge"])) for r in rows}
    slices: dict = {}
    for col in slice_by:
        # The numbers under private names: a slice column of any name (``weight``, ``items``) is kept apart.
        rows = diff.engine.rows(slice_sums(diff, (col,), o["total_weight"]), step=f"slice distances {col}")
        slices[col] = {json.dumps(r[col], default=str): tuple(float(r[private(k)]) for k in (
            "weight", "split_distance", "merge_distance")) for r in rows}
    return DistanceFacts(o["split_distance"], o["merge_distance"], shares, slices, source)


def recall_facts(diff: Diff, item_ids, *, slice_by=(), total_weight: float) -> RecallFacts:
    """The recall lift's exact facts from the diff a sample is drawn from: the pair masses, the
    cluster weights of ``item_ids`` (affected items: those of :func:`abcde.samples.facts.recall_items`) and, per value
    of each ``slice_by`` column, its vantage items' masses (one group-by of the items joined to their
    fragments per column)."""
    W = float(total_weight)
    masses = cell_sums(diff).link_masses(W)  # the sample's one query of every cell's sums
    ids = list(dict.fromkeys(item_ids))
    cw: dict = {}
    if ids:
        id_type = diff.joined.item_id.type().to_pyarrow()
        wanted = ibis.memtable(pa.table({"item_id": pa.array(ids).cast(id_type)}))
        f = diff.fragments
        t = wanted.join(affected_items(diff), "item_id")
        t = t.join(f, [t.base_cluster == f.base_cluster, t.exp_cluster == f.exp_cluster])
        rows = diff.engine.rows(t.select(t.item_id, wb=f.wb, we=f.we), step="cluster weights of the drawn items")
        cw = {r["item_id"]: (float(r["wb"]) / W, float(r["we"]) / W) for r in rows}
    slices: dict = {}
    if slice_by:
        f = diff.fragments
        j = diff.joined
        t = j.join(f, [j.base_cluster == f.base_cluster, j.exp_cluster == f.exp_cluster])
        within = j.weight * (f.w - j.weight)
        inter = affected(f) & (f.wb != f.we)
        per = t.select(__abcde_id=j.item_id,
                       __abcde_a=ibis.ifelse(inter, 0.0, within),
                       __abcde_ip=ibis.ifelse(inter & (f.wb > f.we), within, 0.0),
                       __abcde_im=ibis.ifelse(inter & (f.wb < f.we), within, 0.0),
                       __abcde_s=j.weight * (f.wb - f.w), __abcde_m=j.weight * (f.we - f.w))
        keys = ("__abcde_a", "__abcde_ip", "__abcde_im", "__abcde_s", "__abcde_m")
        for col in slice_by:
            a = diff.items.select("item_id", col)
            g = per.join(a, per["__abcde_id"] == a.item_id)
            rows = diff.engine.rows(g.group_by(col).aggregate(**{k + "_sum": g[k].sum() for k in keys}),
                                    step=f"slice pair masses {col}")
            slices[col] = {json.dumps(r[col], default=str): tuple(max(float(r[k + "_sum"] or 0.0), 0.0) / (W * W)
                                                                  for k in keys) for r in rows}
    return RecallFacts(masses, cw, slices)


def sample_facts(sample, slice_by=(), *, diff=None) -> tuple[DistanceFacts | None, str]:
    """The exact facts of a pair sample (:class:`abcde.samples.sample_dir.PairSampleDir`) for its
    distances, or None and why they are not available.

    First those the sample stored when it was drawn (:func:`abcde.samples.facts.stored_facts`: nothing is read); a
    sample drawn before abcde stored them takes them from ``diff`` (a :class:`~abcde.core.diff.Diff`
    or an :class:`~abcde.metrics.impact.ImpactResult` of the inputs the sample was drawn from;
    refused when its totals differ from the sample's), else from the inputs recorded in the sample
    when they are local files whose fingerprints are still those recorded at the draw (read once, on
    an in-memory DuckDB). A ``diff`` given is checked all the same where that needs no reading (an
    ImpactResult's totals)."""
    meta = sample.metadata
    ids = drawn_items(sample.draws)
    d = known = None
    if diff is not None:
        d = getattr(diff, "diff", diff)
        if not isinstance(d, Diff):
            raise InputError(f"diff must be a Diff or an ImpactResult of the sample's inputs. Got "
                             f"{type(diff).__name__} instead.")
        # An ImpactResult holds the overall metrics already (one query fewer over the fragments).
        known = diff.to_dict() if d is not diff and hasattr(diff, "split_distance") else None
    kept = stored_facts(meta, ids, slice_by)
    if kept is not None:
        if known is not None:
            _check_same_totals(d, meta, sample.path, known)
        return kept, ""
    if d is not None:
        o = _check_same_totals(d, meta, sample.path, known)
        return distance_facts(d, ids, slice_by=slice_by, source="the inputs given with the sample", totals=o), ""
    paths = meta.get("input_paths") or {}
    recorded = meta.get("inputs") or {}
    tables = [role for role in ("base", "exp", "items") if role in recorded and role not in paths]
    if tables:
        return None, (f"the sample's {' and '.join(tables)} {'was a table' if len(tables) == 1 else 'were tables'} "
                      "in memory, not a file to read again, and the sample (drawn by an earlier abcde) stores no "
                      "exact distances: pass the inputs' diff (estimate_quality(..., diff=...)), or draw the "
                      "sample again")
    if not paths:
        return None, "the sample records no inputs to read the exact distances from"
    odd = [f"{role} '{p}'" for role, p in paths.items() if "://" in p or not os.path.isfile(p)]
    if odd:
        return None, (f"{', '.join(odd)} {'is' if len(odd) == 1 else 'are'} not a local file abcde can read and "
                      "fingerprint here, and the sample (drawn by an earlier abcde) stores no exact distances: "
                      "they need the inputs the sample was drawn from")
    cols = meta.get("columns") or {}
    try:
        prints = sample.check_inputs(**paths)
        given = Inputs(paths.get("base"), paths.get("exp"), items=paths.get("items"),
                       item_id=cols.get("item_id", "item_id"), cluster_id=cols.get("cluster_id", "cluster_id"),
                       base_cluster_id=cols.get("base_cluster_id"), exp_cluster_id=cols.get("exp_cluster_id"),
                       weight=cols.get("weight"))
        eng = connect()
        try:
            d = build_diff(given, engine=eng, prints=prints)
            o = _check_same_totals(d, meta, sample.path)
            facts = distance_facts(d, ids, slice_by=slice_by, totals=o, source="the inputs the sample was drawn "
                                   "from (read again; their fingerprints unchanged)")
            prints.check("reading the exact distances")
        finally:
            eng.close()
    except InputError as exc:
        return None, f"the inputs the sample was drawn from cannot be used: {exc}"
    return facts, ""


def _check_same_totals(d: Diff, meta: dict, path, known: dict | None = None) -> dict:
    """``overall(d)`` (``known``: already computed); refused when its weight(T), SplitRate(T) and
    MergeRate(T) are not the sample's."""
    o = overall(d) if known is None else known
    for key, mk in (("total_weight", "total_weight"), ("split_rate", "split_rate_T"), ("merge_rate", "merge_rate_T")):
        want = meta.get(mk)
        if want is None:
            continue
        if not math.isclose(o[key], float(want), rel_tol=1e-9, abs_tol=1e-12):
            raise InputError(f"The inputs given for the distances are not those the pair sample in '{path}' was "
                             f"drawn from: their {key} is {o[key]!r}, the sample's {want!r}.")
    return o
