"""A variance-reduced ΔPrecision estimator: exact self term, stratified classes.

The paper samples every pair ∝ u_ij, self pairs ``(i, i)`` included, although
their term ``Σ_i u_ii · l_ii`` needs no judgement and is known exactly::

    self term = Σ_fragments (W(B) − W(E)) · Σ_{i ∈ B∩E} w_i² / (W(B) · W(E) · W)

The other pairs fall into three strata — split, merge and intersection (stable
without self) — each with an exact total pair weight ``U_c`` from the fragments.
Each stratum is sampled on its own (∝ u_ij within the stratum, draws replayed one
by one until its budget ``B_c`` of distinct pairs is filled), and::

    ΔPrecision = self term + Σ_c U_c · mean_c(l_ij · 1(i ≡ j))
    SE         = sqrt(Σ_c U_c² · s_c² / n_c)

GoodSplitRate = SplitRate · mean_split(1(i ≢ j)) and so on come from their own
strata. Unsure and missing judgements are dropped within a stratum (each keeps
its exact weight U_c).

Budgets: ``proportional`` (``B_c ∝ U_c``) or ``neyman`` (``B_c ∝ U_c · σ_c``, with
``σ_c`` from a judged pilot sample).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ibis
import numpy as np
import pyarrow as pa

from .errors import InputError
from .fragments import Diff
from .pairs import fill_budget, item_pair_weights, pair_totals
from .quality import Estimate, QualityResult
from .sampling import check_seed, check_size

STRATA = ("split", "merge", "intersection")
ALLOCATIONS = ("proportional", "neyman")


def self_term(diff: Diff, total_weight: float) -> float:
    """Exact ``Σ_i u_ii · l_ii`` (the self pairs' part of ΔPrecision); once per diff."""
    key = ("self_term", float(total_weight))
    if key not in diff.cache:
        f = diff.fragments
        r = diff.engine.one(f.aggregate(s=((f.wb - f.we) * f.w2 / (f.wb * f.we)).sum()), step="self term")
        diff.cache[key] = float(r["s"] or 0.0) / float(total_weight)
    return diff.cache[key]


def allocate(budget: int, totals: dict, *, allocation: str = "proportional", sigmas: dict | None = None) -> dict:
    """Split ``budget`` over the strata: ∝ U_c, or ∝ U_c·σ_c (Neyman). Every stratum
    with weight gets at least 2 judgements (a standard error needs two)."""
    if allocation not in ALLOCATIONS:
        raise InputError(f"allocation must be one of {', '.join(ALLOCATIONS)}. Got {allocation!r} instead.")
    if allocation == "neyman" and not sigmas:
        raise InputError("Neyman allocation needs per-stratum standard deviations from a judged pilot sample.")
    score = {}
    for c in STRATA:
        u = totals[c]
        score[c] = u * (max(sigmas.get(c, 0.0), 1e-6) if allocation == "neyman" else 1.0) if u > 0 else 0.0
    live = [c for c in STRATA if score[c] > 0]
    if not live:
        return dict.fromkeys(STRATA, 0)
    s = sum(score[c] for c in live)
    raw = {c: budget * score[c] / s for c in live}
    out = dict.fromkeys(STRATA, 0)
    out.update({c: int(math.floor(raw[c])) for c in live})
    # largest remainders get the rest, so the budgets add up to the budget exactly
    for c in sorted(live, key=lambda k: raw[k] - out[k], reverse=True)[: budget - sum(out.values())]:
        out[c] += 1
    for c in live:  # at least 2 per stratum (a standard error needs two), taken from the largest
        while out[c] < 2:
            out[c] += 1
            big = max(live, key=lambda k: out[k])
            if out[big] > 2 and sum(out.values()) > budget:
                out[big] -= 1
    return out


@dataclass(frozen=True)
class StratifiedSample:
    """Per-stratum draws (same columns as :class:`abcde.pairs.PairSample` draws)."""

    draws: dict
    totals: dict
    self_term: float
    budgets: dict
    allocation: str


def _stratum_population(diff: Diff, stratum: str) -> ibis.Table:
    t = item_pair_weights(diff)
    if stratum == "intersection":
        # Vantage ∝ its whole stable weight (self share included) and self draws rejected:
        # what remains is ∝ u_ij over the non-self stable pairs, exactly.
        t = t.filter((t.u_stable > 0) & (t.fragment_items > 1))
        u, label, cls = t.u_stable, t.stable_label, "stable"
    else:
        col = f"u_{stratum}"
        t = t.filter(t[col] > 0)
        u, label, cls = t[col], ibis.literal(-1 if stratum == "split" else 1), stratum
    return t.select("item_id", "base_cluster", "exp_cluster", u=u, label=label.cast("int8"),
                    key=t.item_id.cast("string") + ibis.literal(f"|{stratum}"), **{"class": ibis.literal(cls)})


def sample_stratified(diff: Diff, *, budget: int, seed: int, total_weight: float,
                      allocation: str = "proportional", sigmas: dict | None = None) -> StratifiedSample:
    """Sample each stratum ∝ u_ij with its share of ``budget`` judgements."""
    budget = check_size(budget, "budget")
    seed = check_seed(seed)
    totals = pair_totals(diff, total_weight)
    budgets = allocate(budget, totals, allocation=allocation, sigmas=sigmas)
    id_type = diff.joined.item_id.type().to_pyarrow()
    draws = {}
    for c in STRATA:
        key = ("stratum_population", c)
        if key not in diff.cache:
            pop = diff.engine.materialize(_stratum_population(diff, c), f"stratum_{c}")
            diff.cache[key] = (pop, int(diff.engine.one(pop.aggregate(n=pop.count()))["n"]))
        pop, n_pop = diff.cache[key]
        if budgets[c] == 0:
            draws[c], _, _ = fill_budget(diff, pop, 0, budget=1, seed=seed, salt="", id_type=id_type)
            continue
        draws[c], _, _ = fill_budget(diff, pop, n_pop, budget=budgets[c], seed=seed, salt=f"stratum-{c}:",
                                     id_type=id_type, drop_self=(c == "intersection"))
    return StratifiedSample(draws, totals, self_term(diff, total_weight), budgets, allocation)


def _stratum_stats(draws: pa.Table, by_pair: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per valid draw: ``l · 1(i ≡ j)`` and ``1(i ≡ j)``."""
    x, same = [], []
    if draws.num_rows:
        for pid, lab in zip(draws.column("pair_id").to_pylist(), draws.column("label").to_pylist()):
            j = by_pair.get(pid)
            if j in ("same", "different"):
                s = 1.0 if j == "same" else 0.0
                x.append(lab * s)
                same.append(s)
    return np.asarray(x, dtype=float), np.asarray(same, dtype=float)


def _mean_var(v: np.ndarray) -> tuple[float, float, int]:
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.var(ddof=1)) if n > 1 else math.nan, n


def estimate_stratified(sample: StratifiedSample, by_pair: dict, *, split_rate: float,
                        merge_rate: float) -> QualityResult:
    """ΔPrecision and the Good/Bad rates under the stratified design."""
    method = f"stratified ({sample.allocation})"
    dp, var, n_j, note = sample.self_term, 0.0, 0, ""
    stats = {}
    for c in STRATA:
        x, same = _stratum_stats(sample.draws[c], by_pair)
        stats[c] = (x, same)
        U = sample.totals[c]
        if U == 0:
            continue
        m, v, n = _mean_var(x)
        if n == 0:
            dp, note = math.nan, f"no usable judgement in the {c} stratum"
            break
        dp += U * m
        var += U * U * (v / n if math.isfinite(v) else math.nan)
        n_j += n
    delta = Estimate("delta_precision", dp, math.sqrt(var) if math.isfinite(var) and math.isfinite(dp) else math.nan,
                     n_j, method=method, note=note)

    def rate(c, rate_value, want_same, name):
        _, same = stats[c]
        if rate_value == 0:
            return Estimate(name, 0.0, 0.0, len(same), method=method, note=f"no {c}s: the {c} rate is 0")
        v = same if want_same else 1.0 - same
        m, var_c, n = _mean_var(v)
        if n == 0:
            return Estimate(name, math.nan, math.nan, 0, method=method, note=f"no judged {c} pairs")
        se = rate_value * math.sqrt(var_c / n) if math.isfinite(var_c) else math.nan
        return Estimate(name, rate_value * m, se, n, method=method)

    judgeable, judged, unsure = set(), 0, 0
    for c in STRATA:
        d = sample.draws[c]
        if d.num_rows:
            judgeable |= set(d.column("pair_id").to_pylist())
    for p in judgeable:
        j = by_pair.get(p)
        judged += j in ("same", "different")
        unsure += j == "unsure"
    return QualityResult(
        delta_precision=delta,
        good_split_rate=rate("split", split_rate, False, "good_split_rate"),
        bad_split_rate=rate("split", split_rate, True, "bad_split_rate"),
        good_merge_rate=rate("merge", merge_rate, True, "good_merge_rate"),
        bad_merge_rate=rate("merge", merge_rate, False, "bad_merge_rate"),
        split_rate=split_rate,
        merge_rate=merge_rate,
        judged_pairs=judged,
        unsure_pairs=unsure,
        missing_pairs=len(judgeable) - judged - unsure,
        draws={c: sample.draws[c].num_rows for c in STRATA},
        estimator=method,
    )


def pilot_sigmas(sample: StratifiedSample, by_pair: dict) -> dict:
    """Per-stratum standard deviation of ``l · 1(i ≡ j)`` from judged pilot draws."""
    out = {}
    for c in STRATA:
        x, _ = _stratum_stats(sample.draws[c], by_pair)
        out[c] = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return out


def pilot_sigmas_from_dir(path) -> dict:
    """σ_c per stratum from a judged sample directory (paper or stratified design)."""
    from .judgements import load_judgements
    from .pairs import pair_class_of_draws
    from .quality import PairSampleDir

    s = PairSampleDir.read(path)
    jfile = s.path / "judgements.csv"
    if not jfile.exists():
        raise InputError(f"The pilot sample '{s.path}' has no judgements.csv; judge it first.")
    by_pair = load_judgements([jfile], pair_ids=s.judgeable_ids(), id_type=s.metadata["id_type"]).by_pair
    cls = pair_class_of_draws(s.draws)
    out = {}
    for c in STRATA:
        keep = pa.array([k == c for k in cls])
        x, _ = _stratum_stats(s.draws.filter(keep), by_pair)
        out[c] = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return out
