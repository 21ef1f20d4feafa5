"""Deliberately slow, set-based reference implementation of the ABCDE metrics.

Written directly from the definitions in the paper ("ABCDE inputs" and
"ABCDE impact metrics") and from the pointwise Precision/Recall definitions.
It shares NO code with ``src/abcde`` and must never import ``abcde``.

Conventions
-----------
* A clustering is a ``dict`` mapping item -> cluster id.  The cluster of item
  ``i`` is the *set* of items that have the same cluster id as ``i``.
* ``weight`` is a ``dict`` mapping item -> positive float.
* Sums of weights use ``math.fsum`` so the reference is as exact as possible.
* Nothing is cached or vectorised: every quantity is recomputed from sets,
  item by item.  Inputs are expected to be tiny (tens of items); the functions
  that simulations call on worlds of thousands build their cluster sets once.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping

__all__ = [
    "cluster_of",
    "clusters",
    "weight_of",
    "split_rate",
    "merge_rate",
    "jaccard_distance",
    "per_item",
    "lifted_split_rate",
    "lifted_merge_rate",
    "lifted_jaccard_distance",
    "split_distance",
    "merge_distance",
    "distance_parts",
    "lifted_distance_parts",
    "lifted",
    "overall",
    "affected_items",
    "affected",
    "per_cluster",
    "per_slice",
    "top_clusters",
    "restrict",
    "precision",
    "recall",
    "f1",
    "pointwise_per_item",
    "pointwise_lifted",
    "pointwise_per_cluster",
    "pointwise_per_slice",
]

Item = Hashable
Clustering = Mapping[Item, Hashable]
Weights = Mapping[Item, float]


# ---------------------------------------------------------------------------
# Basic set helpers
# ---------------------------------------------------------------------------


def cluster_of(clustering: Clustering, i: Item) -> frozenset:
    """The set of items that share ``i``'s cluster (always contains ``i``)."""
    c = clustering[i]
    return frozenset(j for j, cj in clustering.items() if cj == c)


def clusters(clustering: Clustering) -> dict[Hashable, frozenset]:
    """cluster id -> set of member items."""
    out: dict[Hashable, set] = {}
    for i, c in clustering.items():
        out.setdefault(c, set()).add(i)
    return {c: frozenset(members) for c, members in out.items()}


def weight_of(items: Iterable[Item], weight: Weights) -> float:
    """weight(I) = sum of weight(i) over i in I (0.0 for the empty set)."""
    return math.fsum(float(weight[i]) for i in items)


def _check_same_items(a: Clustering, b: Clustering) -> None:
    if set(a) != set(b):
        raise ValueError(
            "both clusterings must partition the same set of items; "
            "use restrict() first"
        )


def _check_weights(items: Iterable[Item], weight: Weights) -> None:
    for i in items:
        if i not in weight:
            raise ValueError(f"missing weight for item {i!r}")
        if not weight[i] > 0:
            raise ValueError(f"weight of item {i!r} must be positive")


def _wavg(pairs: Iterable[tuple[float, float]]) -> float:
    """Weighted average of (weight, value) pairs."""
    pairs = list(pairs)
    if not pairs:
        raise ValueError("weighted average over an empty set of items")
    total = math.fsum(w for w, _ in pairs)
    return math.fsum(w * v for w, v in pairs) / total


# ---------------------------------------------------------------------------
# Per-item impact metrics (paper eqs. 1-3)
# ---------------------------------------------------------------------------


def split_rate(base: Clustering, exp: Clustering, weight: Weights, i: Item) -> float:
    """SplitRate(i) = weight(Base(i) \\ Exp(i)) / weight(Base(i))."""
    B = cluster_of(base, i)
    E = cluster_of(exp, i)
    return weight_of(B - E, weight) / weight_of(B, weight)


def merge_rate(base: Clustering, exp: Clustering, weight: Weights, i: Item) -> float:
    """MergeRate(i) = weight(Exp(i) \\ Base(i)) / weight(Exp(i))."""
    B = cluster_of(base, i)
    E = cluster_of(exp, i)
    return weight_of(E - B, weight) / weight_of(E, weight)


def jaccard_distance(
    base: Clustering, exp: Clustering, weight: Weights, i: Item
) -> float:
    """JaccardDistance(i) = (w(B \\ E) + w(E \\ B)) / w(B | E)."""
    B = cluster_of(base, i)
    E = cluster_of(exp, i)
    return (weight_of(B - E, weight) + weight_of(E - B, weight)) / weight_of(
        B | E, weight
    )


def split_distance(base: Clustering, exp: Clustering, weight: Weights, i: Item) -> float:
    """SplitDistance(i) = w(B \\ E) / w(B | E) (van Staden, "Decomposing the Jaccard Distance and
    the Jaccard Index in ABCDE", 2024)."""
    B = cluster_of(base, i)
    E = cluster_of(exp, i)
    return weight_of(B - E, weight) / weight_of(B | E, weight)


def merge_distance(base: Clustering, exp: Clustering, weight: Weights, i: Item) -> float:
    """MergeDistance(i) = w(E \\ B) / w(B | E)."""
    B = cluster_of(base, i)
    E = cluster_of(exp, i)
    return weight_of(E - B, weight) / weight_of(B | E, weight)


_METRICS = {
    "split_rate": split_rate,
    "merge_rate": merge_rate,
    "jaccard_distance": jaccard_distance,
    "split_distance": split_distance,
    "merge_distance": merge_distance,
}


def per_item(
    base: Clustering, exp: Clustering, weight: Weights
) -> dict[Item, dict]:
    """item -> row with item_id, base_cluster, exp_cluster, weight and the 5 metrics."""
    _check_same_items(base, exp)
    _check_weights(base, weight)
    out = {}
    for i in base:
        row = {
            "item_id": i,
            "base_cluster": base[i],
            "exp_cluster": exp[i],
            "weight": float(weight[i]),
        }
        for name, fn in _METRICS.items():
            row[name] = fn(base, exp, weight, i)
        out[i] = row
    return out


# ---------------------------------------------------------------------------
# Lifted metrics (paper eqs. 4-6): weighted averages over a set of items
# ---------------------------------------------------------------------------


def _lift(fn, base, exp, weight, items) -> float:
    return _wavg((float(weight[i]), fn(base, exp, weight, i)) for i in items)


def lifted_split_rate(base, exp, weight, items=None) -> float:
    return _lift(split_rate, base, exp, weight, base if items is None else items)


def lifted_merge_rate(base, exp, weight, items=None) -> float:
    return _lift(merge_rate, base, exp, weight, base if items is None else items)


def lifted_jaccard_distance(base, exp, weight, items=None) -> float:
    return _lift(jaccard_distance, base, exp, weight, base if items is None else items)


def lifted(base: Clustering, exp: Clustering, weight: Weights, items=None) -> dict:
    """items, weight and the five lifted metrics of a set of items (default: T)."""
    _check_same_items(base, exp)
    items = list(base) if items is None else list(items)
    return {
        "items": len(items),
        "weight": weight_of(items, weight),
        "split_rate": lifted_split_rate(base, exp, weight, items),
        "merge_rate": lifted_merge_rate(base, exp, weight, items),
        "jaccard_distance": lifted_jaccard_distance(base, exp, weight, items),
        "split_distance": _lift(split_distance, base, exp, weight, items),
        "merge_distance": _lift(merge_distance, base, exp, weight, items),
    }


# ---------------------------------------------------------------------------
# JaccardDistance decomposed (issue 29, after van Staden, "Decomposing the Jaccard
# Distance and the Jaccard Index in ABCDE", 2024): for B = Base(i), E = Exp(i),
# U = B | E and a truth (item -> entity: i ≡ j iff same entity),
#   GoodSplitDistance(i) = Σ_{j ∈ B∖E} w(j)·[i ≢ j] / w(U),  BadSplitDistance(i) = … [i ≡ j]
#   GoodMergeDistance(i) = Σ_{j ∈ E∖B} w(j)·[i ≡ j] / w(U),  BadMergeDistance(i) = … [i ≢ j]
# Cluster sets are built once, so worlds of tens of thousands of items work.
# ---------------------------------------------------------------------------

DISTANCE_PARTS = ("split_distance", "merge_distance", "good_split_distance", "bad_split_distance",
                  "good_merge_distance", "bad_merge_distance")


def distance_parts(base: Clustering, exp: Clustering, weight: Weights, truth: Mapping) -> dict[Item, dict]:
    """item -> SplitDistance(i), MergeDistance(i) and their good and bad parts, each summed item by
    item over its own set (never one part as the rest minus another)."""
    _check_same_items(base, exp)
    bcl, ecl = clusters(base), clusters(exp)
    out = {}
    for i in base:
        B, E = bcl[base[i]], ecl[exp[i]]
        wU = weight_of(B | E, weight)

        def part(js, same):
            return math.fsum(float(weight[j]) for j in js if (truth[j] == truth[i]) == same) / wU

        out[i] = {
            "split_distance": weight_of(B - E, weight) / wU,
            "merge_distance": weight_of(E - B, weight) / wU,
            "good_split_distance": part(B - E, False),
            "bad_split_distance": part(B - E, True),
            "good_merge_distance": part(E - B, True),
            "bad_merge_distance": part(E - B, False),
        }
    return out


def lifted_distance_parts(base: Clustering, exp: Clustering, weight: Weights, truth: Mapping,
                          items=None, per_item: dict | None = None) -> dict:
    """The six of :func:`distance_parts` lifted to a set of items (default T): weighted averages
    with the weights w(i)/w(I), as the paper lifts its metrics (``per_item``: that function's
    result, if already computed)."""
    rows = distance_parts(base, exp, weight, truth) if per_item is None else per_item
    items = list(base) if items is None else list(items)
    return {m: _wavg((float(weight[i]), rows[i][m]) for i in items) for m in DISTANCE_PARTS}


# ---------------------------------------------------------------------------
# Affected / unaffected items
# ---------------------------------------------------------------------------


def affected_items(base: Clustering, exp: Clustering) -> set:
    """{i in T | Base(i) != Exp(i)}, comparing clusters as sets of items."""
    _check_same_items(base, exp)
    return {i for i in base if cluster_of(base, i) != cluster_of(exp, i)}


def affected(base: Clustering, exp: Clustering, weight: Weights) -> dict:
    aff = affected_items(base, exp)
    unaff = set(base) - aff
    return {
        "affected_items": len(aff),
        "affected_weight": weight_of(aff, weight),
        "unaffected_items": len(unaff),
        "unaffected_weight": weight_of(unaff, weight),
    }


def overall(base: Clustering, exp: Clustering, weight: Weights) -> dict:
    """Overall numbers: items, total_weight, five metrics of T, affected stats."""
    _check_same_items(base, exp)
    _check_weights(base, weight)
    m = lifted(base, exp, weight)
    out = {
        "items": m["items"],
        "total_weight": m["weight"],
        "split_rate": m["split_rate"],
        "merge_rate": m["merge_rate"],
        "jaccard_distance": m["jaccard_distance"],
        "split_distance": m["split_distance"],
        "merge_distance": m["merge_distance"],
    }
    out.update(affected(base, exp, weight))
    return out


# ---------------------------------------------------------------------------
# Per-cluster and per-slice rows
# ---------------------------------------------------------------------------


def per_cluster(
    base: Clustering, exp: Clustering, weight: Weights, side: str
) -> dict[Hashable, dict]:
    """cluster id -> row for the clusters of ``side`` ("base" or "exp").

    contribution(C) = weight(C) * JaccardDistance(C) / weight(T).
    """
    _check_same_items(base, exp)
    if side == "base":
        cl = clusters(base)
    elif side == "exp":
        cl = clusters(exp)
    else:
        raise ValueError(side)
    total = weight_of(base, weight)
    out = {}
    for cid, members in cl.items():
        m = lifted(base, exp, weight, members)
        out[cid] = {
            "cluster_id": cid,
            "size": len(members),
            "weight": m["weight"],
            "split_rate": m["split_rate"],
            "merge_rate": m["merge_rate"],
            "jaccard_distance": m["jaccard_distance"],
            "split_distance": m["split_distance"],
            "merge_distance": m["merge_distance"],
            "contribution": m["weight"] * m["jaccard_distance"] / total,
        }
    return out


def _groups(items: Iterable[Item], attribute: Mapping[Item, Hashable]) -> dict:
    groups: dict[Hashable, list] = {}
    for i in items:
        groups.setdefault(attribute[i], []).append(i)
    return groups


def per_slice(
    base: Clustering,
    exp: Clustering,
    weight: Weights,
    attribute: Mapping[Item, Hashable],
) -> dict[Hashable, dict]:
    """attribute value -> row (group the items of T by ``attribute[i]``).

    For a multi-column slicing pass values that are tuples.
    contribution(I) = weight(I) * JaccardDistance(I) / weight(T).
    """
    _check_same_items(base, exp)
    total = weight_of(base, weight)
    out = {}
    for value, members in _groups(base, attribute).items():
        m = lifted(base, exp, weight, members)
        out[value] = {
            "value": value,
            "items": m["items"],
            "weight": m["weight"],
            "split_rate": m["split_rate"],
            "merge_rate": m["merge_rate"],
            "jaccard_distance": m["jaccard_distance"],
            "split_distance": m["split_distance"],
            "merge_distance": m["merge_distance"],
            "contribution": m["weight"] * m["jaccard_distance"] / total,
        }
    return out


def top_clusters(
    base: Clustering, exp: Clustering, weight: Weights, top: int
) -> dict[str, list[dict]]:
    """Rows sorted by contribution descending, truncated to ``top``.

    Ties are broken arbitrarily (by side, then repr of the cluster id) so tests
    should compare contributions, not ids, at tie boundaries.
    """
    rows = {}
    for side in ("base", "exp"):
        rows[side] = [
            dict(r, side=side) for r in per_cluster(base, exp, weight, side).values()
        ]

    def key(r):
        return (-r["contribution"], r["side"], repr(r["cluster_id"]))

    return {
        "base": sorted(rows["base"], key=key)[:top],
        "exp": sorted(rows["exp"], key=key)[:top],
        "interleaved": sorted(rows["base"] + rows["exp"], key=key)[:top],
    }


# ---------------------------------------------------------------------------
# Restriction to common items
# ---------------------------------------------------------------------------


def restrict(
    base: Clustering,
    exp: Clustering,
    weight: Weights | None = None,
    items: Iterable[Item] | None = None,
) -> tuple[dict, dict, dict]:
    """Restrict both clusterings to T = items(base) & items(exp).

    Returns (base', exp', info).  ``info`` holds the removed item sets and their
    counts/weights; the weight of an item missing from ``weight`` is 1.0.
    ``items`` (optional) is the item set of an items table: its rows that are in
    neither clustering are reported as ``items_only``.
    """

    def w(i):
        if weight is None:
            return 1.0
        return float(weight.get(i, 1.0))

    common = set(base) & set(exp)
    base_only = set(base) - set(exp)
    exp_only = set(exp) - set(base)
    items_only = set() if items is None else set(items) - set(base) - set(exp)
    info = {
        "items": len(common),
        "base_only": base_only,
        "exp_only": exp_only,
        "items_only": items_only,
        "base_only_items": len(base_only),
        "base_only_weight": math.fsum(w(i) for i in base_only),
        "exp_only_items": len(exp_only),
        "exp_only_weight": math.fsum(w(i) for i in exp_only),
        "items_only_items": len(items_only),
    }
    b = {i: c for i, c in base.items() if i in common}
    e = {i: c for i, c in exp.items() if i in common}
    return b, e, info


# ---------------------------------------------------------------------------
# Pointwise precision / recall of a clustering C against a truth G
# ---------------------------------------------------------------------------


def precision(truth: Clustering, clustering: Clustering, weight: Weights, i: Item) -> float:
    """Precision(i) = weight(C(i) & G(i)) / weight(C(i))."""
    C = cluster_of(clustering, i)
    G = cluster_of(truth, i)
    return weight_of(C & G, weight) / weight_of(C, weight)


def recall(truth: Clustering, clustering: Clustering, weight: Weights, i: Item) -> float:
    """Recall(i) = weight(C(i) & G(i)) / weight(G(i))."""
    C = cluster_of(clustering, i)
    G = cluster_of(truth, i)
    return weight_of(C & G, weight) / weight_of(G, weight)


def f1(p: float, r: float) -> float:
    """Harmonic mean of (already lifted) precision and recall; 0 if both are 0."""
    if p + r == 0:
        return 0.0
    return 2.0 * p * r / (p + r)


def pointwise_per_item(
    truth: Clustering, clustering: Clustering, weight: Weights
) -> dict[Item, dict]:
    _check_same_items(truth, clustering)
    _check_weights(truth, weight)
    return {
        i: {
            "item_id": i,
            "truth_cluster": truth[i],
            "cluster": clustering[i],
            "weight": float(weight[i]),
            "precision": precision(truth, clustering, weight, i),
            "recall": recall(truth, clustering, weight, i),
        }
        for i in truth
    }


def pointwise_lifted(
    truth: Clustering, clustering: Clustering, weight: Weights, items=None
) -> dict:
    """items, weight, lifted precision and recall, and f1 of the lifted values."""
    _check_same_items(truth, clustering)
    items = list(truth) if items is None else list(items)
    p = _wavg((float(weight[i]), precision(truth, clustering, weight, i)) for i in items)
    r = _wavg((float(weight[i]), recall(truth, clustering, weight, i)) for i in items)
    return {
        "items": len(items),
        "weight": weight_of(items, weight),
        "precision": p,
        "recall": r,
        "f1": f1(p, r),
    }


def pointwise_per_cluster(
    truth: Clustering, clustering: Clustering, weight: Weights
) -> dict[Hashable, dict]:
    """Rows for the clusters of ``clustering`` (not of the truth)."""
    out = {}
    for cid, members in clusters(clustering).items():
        m = pointwise_lifted(truth, clustering, weight, members)
        out[cid] = {
            "cluster_id": cid,
            "size": len(members),
            "weight": m["weight"],
            "precision": m["precision"],
            "recall": m["recall"],
            "f1": m["f1"],
        }
    return out


def pointwise_per_slice(
    truth: Clustering,
    clustering: Clustering,
    weight: Weights,
    attribute: Mapping[Item, Hashable],
) -> dict[Hashable, dict]:
    out = {}
    for value, members in _groups(truth, attribute).items():
        m = pointwise_lifted(truth, clustering, weight, members)
        out[value] = dict(m, value=value)
    return out


# ---------------------------------------------------------------------------
# Pairs (paper, "Summary of the estimation of quality metrics"), by listing them.
# ---------------------------------------------------------------------------


def all_pairs(base: dict, exp: dict, weight: dict) -> list[dict]:
    """Every (i, j) with j in Base(i) ∪ Exp(i), with class, u_ij and l_ij.

    Straight from the paper; the self pair (i, i) is a stable pair.
    W = weight(T) sums over the items of the clusterings only (``weight`` may hold more).
    """
    W = math.fsum(float(weight[i]) for i in base)
    bmem, emem = {}, {}
    for i, c in base.items():
        bmem.setdefault(c, set()).add(i)
    for i, c in exp.items():
        emem.setdefault(c, set()).add(i)
    out = []
    for i in base:
        B, E = bmem[base[i]], emem[exp[i]]
        wB = sum(weight[j] for j in B)
        wE = sum(weight[j] for j in E)
        for j in B | E:
            if j in B and j not in E:
                cls, u, l = "split", weight[i] / W * weight[j] / wB, -1
            elif j in E and j not in B:
                cls, u, l = "merge", weight[i] / W * weight[j] / wE, 1
            else:
                cls = "stable"
                u = weight[i] / W * abs(wB - wE) / (wB * wE) * weight[j]
                l = (wB > wE) - (wB < wE)
            out.append({"i": i, "j": j, "class": cls, "u": u, "l": l})
    return out


def delta_precision_exact(base: dict, exp: dict, weight: dict, truth: dict) -> float:
    """Σ u_ij l_ij 1(i ≡ j) over all pairs."""
    return sum(p["u"] * p["l"] for p in all_pairs(base, exp, weight) if truth[p["i"]] == truth[p["j"]])


def overall_precision(clustering: dict, truth: dict, weight: dict) -> float:
    """Pointwise Precision(T) of a clustering against a truth clustering: :func:`precision` of each
    item (its cluster sets built once, so worlds of thousands of items work)."""
    W = sum(weight.values())
    ccl, gcl = clusters(clustering), clusters(truth)

    def prec(i):  # precision(truth, clustering, weight, i), from the sets built once
        C, G = ccl[clustering[i]], gcl[truth[i]]
        return weight_of(C & G, weight) / weight_of(C, weight)

    return sum(weight[i] / W * prec(i) for i in clustering)



# ---------------------------------------------------------------------------
# Exact quantities a pair sample stores (paper, "Summary of the estimation of
# quality metrics", "Practical considerations" and Appendix "Estimating
# ΔPrecision for slices of items"), by summing the listed pairs.
# ---------------------------------------------------------------------------


def pair_totals(base: dict, exp: dict, weight: dict) -> dict:
    """Σ u_ij per class over AllPairs: split, merge, stable (self pairs included), self
    (the pairs (i, i)), intersection (stable without self) and all."""
    pairs = all_pairs(base, exp, weight)

    def total(pred):
        return math.fsum(p["u"] for p in pairs if pred(p))

    return {
        "split": total(lambda p: p["class"] == "split"),
        "merge": total(lambda p: p["class"] == "merge"),
        "stable": total(lambda p: p["class"] == "stable"),
        "self": total(lambda p: p["i"] == p["j"]),
        "intersection": total(lambda p: p["class"] == "stable" and p["i"] != p["j"]),
        # the intersection by the sign of its term l_ij = sgn(W(B) − W(E))
        "intersection+": total(lambda p: p["class"] == "stable" and p["i"] != p["j"] and p["l"] > 0),
        "intersection-": total(lambda p: p["class"] == "stable" and p["i"] != p["j"] and p["l"] < 0),
        "all": total(lambda p: True),
    }


def self_term(base: dict, exp: dict, weight: dict, items=None) -> float:
    """Σ_{i ∈ I} u_ii · l_ii: the self pairs' part of ΔPrecision (they are always i ≡ i);
    I = T unless ``items`` is given."""
    keep = set(base) if items is None else set(items)
    return math.fsum(p["u"] * p["l"] for p in all_pairs(base, exp, weight) if p["i"] == p["j"] and p["i"] in keep)


def slice_multipliers(base: dict, exp: dict, weight: dict, attribute: Mapping) -> dict:
    """value -> weight(I), pairweight(I) = Σ_{i∈I} Σ_j u_ij, self_term(I) = Σ_{i∈I} u_ii·l_ii and
    self_pairweight(I) = Σ_{i∈I} u_ii, for I = the items of T whose attribute is ``value``."""
    pairs = all_pairs(base, exp, weight)
    out = {}
    for value, members in _groups(base, attribute).items():
        I = set(members)
        mine = [p for p in pairs if p["i"] in I]
        selfs = [p for p in mine if p["i"] == p["j"]]
        out[value] = {
            "weight": weight_of(I, weight),
            "pairweight": math.fsum(p["u"] for p in mine),
            "self_term": math.fsum(p["u"] * p["l"] for p in selfs),
            "self_pairweight": math.fsum(p["u"] for p in selfs),
        }
    return out


# ---------------------------------------------------------------------------
# The exploration sample (paper, "Exploring the impact" and Appendix "Sampling at
# scale"). Cluster sets are built once here, so worlds of a few thousand items work.
# ---------------------------------------------------------------------------


def exploration_items(base: dict, exp: dict, weight: dict) -> dict:
    """Affected item -> {weight, split_rate, merge_rate, jaccard_distance, q}, with
    q(i) = weight(i)·JaccardDistance(i) / Σ_{j affected} weight(j)·JaccardDistance(j)."""
    _check_same_items(base, exp)
    bcl, ecl = clusters(base), clusters(exp)
    rows = {}
    for i in base:
        B, E = bcl[base[i]], ecl[exp[i]]
        if B == E:
            continue
        s = weight_of(B - E, weight)
        m = weight_of(E - B, weight)
        rows[i] = {
            "weight": float(weight[i]),
            "split_rate": s / weight_of(B, weight),
            "merge_rate": m / weight_of(E, weight),
            "jaccard_distance": (s + m) / weight_of(B | E, weight),
        }
    Q = math.fsum(r["weight"] * r["jaccard_distance"] for r in rows.values())
    for r in rows.values():
        r["q"] = r["weight"] * r["jaccard_distance"] / Q
    return rows


def exploration_draw_values(base: dict, exp: dict, weight: dict, metric: str | None, items=None) -> dict:
    """Affected item i -> (q(i), y(i)) where one draw of i contributes
    y(i) = m(i) · JaccardDistance(T) / JaccardDistance(i) · 1(i ∈ I) to the estimate of the
    contribution Σ_{i∈I} weight(i)·m(i)/weight(T) (``metric`` None: m = 1, the weight share
    weight(I ∩ Affected)/weight(T)). I = T unless ``items`` is given."""
    rows = exploration_items(base, exp, weight)
    W = weight_of(base, weight)
    jd_t = math.fsum(r["weight"] * r["jaccard_distance"] for r in rows.values()) / W
    keep = set(base) if items is None else set(items)
    out = {}
    for i, r in rows.items():
        m = 1.0 if metric is None else r[metric]
        out[i] = (r["q"], m * jd_t / r["jaccard_distance"] if i in keep else 0.0)
    return out


def draw_moments(values: dict) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of y over one draw ~ q."""
    mean = math.fsum(q * y for q, y in values.values())
    var = math.fsum(q * (y - mean) ** 2 for q, y in values.values())
    m4 = math.fsum(q * (y - mean) ** 4 for q, y in values.values())
    return mean, var, m4


def contribution(base: dict, exp: dict, weight: dict, metric: str | None, items=None) -> float:
    """Σ_{i ∈ I ∩ Affected} weight(i)·m(i) / weight(T) straight from the per-item metrics
    (m = 1 when ``metric`` is None: the affected weight share)."""
    W = weight_of(base, weight)
    keep = set(base) if items is None else set(items)
    aff = affected_items(base, exp)
    fn = None if metric is None else _METRICS[metric]
    return math.fsum(float(weight[i]) * (1.0 if fn is None else fn(base, exp, weight, i))
                     for i in base if i in keep and i in aff) / W


def inclusion_probabilities(rates: Mapping, n: int) -> dict:
    """P(e is among the n elements with the smallest initial draw times), dt0(e) ~ Exp(rate_e)
    independent (Appendix "Sampling at scale", step 1)::

        P(e ∈ S) = ∫_0^∞ rate_e·exp(-rate_e·t) · P(#{f ≠ e : dt0(f) < t} ≤ n - 1) dt

    with the count a Poisson-binomial of P(dt0(f) < t) = 1 - exp(-rate_f·t), by dynamic
    programming, integrated numerically (scipy.integrate.quad, ~1e-12 absolute).
    """
    from scipy import integrate

    keys = list(rates)
    r = [float(rates[k]) for k in keys]
    if n >= len(keys):
        return dict.fromkeys(keys, 1.0)
    out = {}
    for e, k in enumerate(keys):
        others = [x for f, x in enumerate(r) if f != e]

        def integrand(t, re=r[e], others=others):
            dist = [1.0] + [0.0] * (n - 1)  # P(count = c) for c < n; the rest is dropped
            for x in others:
                p = -math.expm1(-x * t)
                for c in range(n - 1, 0, -1):
                    dist[c] = dist[c] * (1 - p) + dist[c - 1] * p
                dist[0] *= 1 - p
            return re * math.exp(-re * t) * math.fsum(dist)

        # split the range at a few multiples of the typical scale so quad sees the mass
        scales = [1.0 / sum(r), 1.0 / r[e], 1.0 / min(r)]
        edges = sorted({0.0, *(s * x for s in scales for x in (0.3, 1, 3, 10, 30, 100))}) + [math.inf]
        out[k] = math.fsum(integrate.quad(integrand, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
                           for a, b in zip(edges, edges[1:]))
    return out


# ---------------------------------------------------------------------------
# The recall lift (issue 38): written from its definition, pair by pair.
def true_links(clustering: Clustering, truth: Mapping, weight: Weights, vantage=None) -> float:
    """T_C = Σ over ordered pairs i ≠ j with C(i) = C(j) and truth(i) = truth(j) of w_i·w_j
    (``vantage``: only pairs whose first item is in it). The partners j of each i are listed from
    the items sharing its cluster and its entity (built once, so worlds of thousands of items work);
    ``math.fsum`` is exact, so the order of the terms does not matter."""
    together: dict = {}
    for j in clustering:
        together.setdefault((clustering[j], truth[j]), []).append(j)
    return math.fsum(weight[i] * weight[j] for i in clustering if vantage is None or i in vantage
                     for j in together[(clustering[i], truth[i])] if j != i)


def recall_lift(base: Clustering, exp: Clustering, truth: Mapping, weight: Weights, vantage=None) -> float:
    """Λ = T_Exp / T_Base − 1."""
    return true_links(exp, truth, weight, vantage) / true_links(base, truth, weight, vantage) - 1.0


def link_masses(base: Clustering, exp: Clustering, weight: Weights, vantage=None) -> dict:
    """Σ w_i·w_j over the ordered pairs i ≠ j together in both (agreed), in Base only (split),
    in Exp only (merge), each divided by W²."""
    W = weight_of(base, weight)
    out = {"agreed": [], "split": [], "merge": []}
    for i in base:
        if vantage is not None and i not in vantage:
            continue
        for j in base:
            if i == j:
                continue
            b, e = base[i] == base[j], exp[i] == exp[j]
            if b and e:
                out["agreed"].append(weight[i] * weight[j])
            elif b:
                out["split"].append(weight[i] * weight[j])
            elif e:
                out["merge"].append(weight[i] * weight[j])
    return {k: math.fsum(v) / (W * W) for k, v in out.items()}


__all__ += ["true_links", "recall_lift", "link_masses"]
