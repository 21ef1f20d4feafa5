"""The exact facts a pair sample stores when it is drawn, as stored and read back (no Ibis: reading
a sample never queries its inputs).

JaccardDistance's good and bad parts (:mod:`abcde.quality.distances`) need SplitDistance(T),
MergeDistance(T) and the shares of the drawn split and merge items (:class:`DistanceFacts`); the
recall lift (:mod:`abcde.quality.recall`) the pair masses of its strata and the cluster weights of
the drawn items (:class:`RecallFacts`). They are computed from the inputs' diff at the draw
(:mod:`abcde.quality.exact_facts`) and kept in the sample's metadata (``meta["distances"]``,
``meta["recall"]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


#: The two kinds of pairs and what a good one is: a split pair judged different, a merge pair the same.
KINDS = {"split": ("split_distance", False), "merge": ("merge_distance", True)}


@dataclass(frozen=True)
class DistanceFacts:
    """What the estimates need besides the judgements, all exact.

    Attributes
    ----------
    split_distance, merge_distance
        ``SplitDistance(T)``, ``MergeDistance(T)``.
    shares
        ``{item id: (w(B)/w(U), w(E)/w(U))}`` of the items of the split and merge pairs drawn.
    slices
        ``{column: {JSON-encoded value: (weight(I), SplitDistance(I), MergeDistance(I))}}``.
    source
        Where they came from, in words.
    """

    split_distance: float
    merge_distance: float
    shares: dict
    slices: dict = field(default_factory=dict)
    source: str = ""


#: Where the facts are said to come from when the sample stored them at the draw.
STORED = "the sample (stored when it was drawn, from the inputs' diff)"


def _id_reader(meta: dict):
    """How the item ids a sample keeps as JSON keys (text) are read back: by its ``id_type``."""
    return int if meta.get("id_type") == "integer" else str


def _items_of(draws: pa.Table, classes) -> list:
    """Both items of every draw of ``classes`` (a census pair counts from both ends)."""
    if not draws.num_rows:
        return []
    cls = draws.column("class").to_pylist()
    a, b = draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist()
    return [x for c, i, j in zip(cls, a, b) if c in classes for x in (i, j)]


def drawn_items(draws: pa.Table) -> list:
    """Both items of every split and merge draw (their shares weigh the distances' draws)."""
    return _items_of(draws, KINDS)


def facts_record(facts: DistanceFacts) -> dict:
    """``facts`` as a pair sample's metadata keeps them (``meta["distances"]``, plain JSON): the item
    ids of the shares as strings (JSON's keys; :func:`stored_facts` reads them back by the sample's
    ``id_type``), pairs as lists."""
    return {"split_distance": float(facts.split_distance), "merge_distance": float(facts.merge_distance),
            "shares": {str(i): [float(s), float(m)] for i, (s, m) in facts.shares.items()},
            "slices": {c: {v: [float(x) for x in t] for v, t in vals.items()} for c, vals in facts.slices.items()}}


def stored_facts(meta: dict, item_ids, slice_by=()) -> DistanceFacts | None:
    """The facts a pair sample stored when it was drawn (:func:`facts_record`), for ``item_ids`` and
    the ``slice_by`` columns; None when it stored none (a sample drawn before they were stored) or
    not all of these."""
    rec = meta.get("distances")
    if not isinstance(rec, dict) or "shares" not in rec:
        return None
    as_id = _id_reader(meta)
    try:
        shares = {as_id(k): (float(v[0]), float(v[1])) for k, v in rec["shares"].items()}
    except (TypeError, ValueError, IndexError):
        return None
    kept = rec.get("slices") or {}
    if any(i not in shares for i in item_ids) or any(c not in kept for c in slice_by):
        return None
    slices = {c: {v: tuple(float(x) for x in t) for v, t in kept[c].items()} for c in slice_by}
    return DistanceFacts(float(rec["split_distance"]), float(rec["merge_distance"]), shares, slices, STORED)


#: The draws whose items' cluster weights the lift needs (their reweighting): split, merge, intersection.
WEIGHED_CLASSES = ("split", "merge", "stable")


def recall_items(draws: pa.Table) -> list:
    """Both items of every split, merge and intersection draw (their cluster weights reweight them)."""
    return _items_of(draws, WEIGHED_CLASSES)


@dataclass(frozen=True)
class RecallFacts:
    """What the recall lift needs besides the judgements, all exact.

    Attributes
    ----------
    masses
        Each stratum's pair mass ``Σ w_i·w_j / W²`` (:func:`abcde.metrics.impact.link_masses`).
    cluster_weights
        ``{item id: (W(B)/W, W(E)/W)}`` of the items of the split, merge and intersection pairs drawn.
    slices
        ``{column: {JSON-encoded value: (M_s(I) of each of RECALL_STRATA)}}``, vantage items in I.
    """

    masses: dict
    cluster_weights: dict
    slices: dict = field(default_factory=dict)


def recall_record(facts: RecallFacts) -> dict:
    """``facts`` as a pair sample's metadata keeps them (``meta["recall"]``, plain JSON)."""
    return {"masses": {k: float(v) for k, v in facts.masses.items()},
            "cluster_weights": {str(i): [float(b), float(e)] for i, (b, e) in facts.cluster_weights.items()},
            "slices": {c: {v: [float(x) for x in t] for v, t in vals.items()} for c, vals in facts.slices.items()}}


def stored_recall(meta: dict) -> RecallFacts | None:
    """The facts a sample stored at the draw (:func:`recall_record`); None when it has none (drawn
    before the recall lift, or without the agreed stratum)."""
    rec = meta.get("recall")
    if not isinstance(rec, dict) or "intersection+" not in (rec.get("masses") or {}):
        return None
    as_id = _id_reader(meta)
    cw = {as_id(k): (float(v[0]), float(v[1])) for k, v in (rec.get("cluster_weights") or {}).items()}
    slices = {c: {v: tuple(float(x) for x in t) for v, t in vals.items()} for c, vals in (rec.get("slices") or {}).items()}
    return RecallFacts({k: float(v) for k, v in rec["masses"].items()}, cw, slices)
