"""Agreement between raters on replicated pairs: Cohen's and Fleiss' kappa.

The paper's intervals cover the sampling only, not the uncertainty in the
judgements ("Practical considerations"); replicating a share of the questions
and reporting agreement shows how much the raters can be trusted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations

from abcde.core.names import VOCABULARY


def cohen_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two raters' answers to the same items::

        κ = (p_o − p_e) / (1 − p_e),   p_e = Σ_k p_a(k) · p_b(k)

    ``None`` when undefined (no items, or both raters always give one same answer).
    """
    n = len(a)
    if n == 0 or n != len(b):
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if pe >= 1:
        return None
    return (po - pe) / (1 - pe)


def fleiss_kappa(ratings: list[list[str]]) -> float | None:
    """Fleiss' kappa for items that each have the same number ``m ≥ 2`` of ratings::

        P_i = (Σ_k n_ik² − m) / (m (m − 1)),  p_k = Σ_i n_ik / (N m)
        κ   = (mean P_i − Σ_k p_k²) / (1 − Σ_k p_k²)
    """
    if not ratings:
        return None
    m = len(ratings[0])
    if m < 2 or any(len(r) != m for r in ratings):
        return None
    n_items = len(ratings)
    totals: Counter = Counter()
    p_bar = 0.0
    for r in ratings:
        c = Counter(r)
        totals.update(c)
        p_bar += (sum(v * v for v in c.values()) - m) / (m * (m - 1))
    p_bar /= n_items
    pe = sum((totals[k] / (n_items * m)) ** 2 for k in VOCABULARY)
    if pe >= 1:
        return None
    return (p_bar - pe) / (1 - pe)


def agreement(judgements) -> dict:
    """Agreement on pairs judged by two or more raters.

    ``judgements`` are records with ``pair_id``, ``rater`` and ``judgement``, in the
    order they were made. Fleiss' kappa uses the first two ratings of every pair
    judged at least twice (so every pair has ``m = 2``); Cohen's kappa is given for
    every two raters with common pairs.
    """
    by_pair: dict = defaultdict(list)
    for j in judgements:
        by_pair[j.pair_id].append((j.rater, j.judgement))
    multi = {p: v for p, v in by_pair.items() if len(v) >= 2}
    first_two = [[v[0][1], v[1][1]] for v in multi.values()]
    per_rater: dict = defaultdict(dict)
    for p, v in multi.items():
        for rater, ans in v:
            per_rater[rater][p] = ans
    pairs_of_raters = []
    for r1, r2 in combinations(sorted(per_rater), 2):
        common = sorted(set(per_rater[r1]) & set(per_rater[r2]))
        if common:
            k = cohen_kappa([per_rater[r1][p] for p in common], [per_rater[r2][p] for p in common])
            agree = sum(per_rater[r1][p] == per_rater[r2][p] for p in common) / len(common)
            pairs_of_raters.append({"raters": [r1, r2], "pairs": len(common), "cohen_kappa": k,
                                    "percent_agreement": agree})
    return {
        "replicated_pairs": len(multi),
        "fleiss_kappa": fleiss_kappa(first_two),
        "percent_agreement": (sum(a == b for a, b in first_two) / len(first_two)) if first_two else None,
        "cohen": pairs_of_raters,
    }
