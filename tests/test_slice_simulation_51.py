"""Slices with a known truth (issue 51, item 4 and "Done when": slices): per slice, ΔPrecision(I) and
the recall lift Λ(I) of abcde's stratified sample against brute-force truths of ``tests/reference.py``.

Two worlds of :func:`test_recall_lift.sim_world` ("both": Exp splits some of Base's clusters and
reunites or wrongly merges others), each item given a slice ``kind`` at random (a 50%, b 30%, c 20%):

* ``sampled``: 260 entities (887 items), unit weights; the budget of 300 samples all five strata
  (split, merge, intersection±, agreed), each with pairs of every slice.
* ``census``: 150 entities (553 items), lognormal weights; the budget lists the split, merge and
  intersection+ strata whole (a census) and samples intersection− and agreed. Slice c's lift rests on
  its 1–13 agreed draws (median 5): when they all agree its delta-method SE is 0 (87% of the samples)
  while its interval is drawn from the strata's posteriors (item 4's "SE 0 beside a drawn interval").

Truths (never from abcde): ΔPrecision(I) = W/weight(I) · Σ_{i∈I, j} u_ij·l_ij·1(i ≡ j) over
``reference.all_pairs``; Λ(I) = ``reference.recall_lift`` with the slice's items as vantage. The slice
multipliers abcde stores are checked against ``reference.slice_multipliers`` before they are used.

A cell is a world × judging condition: the truth answers every drawn pair ("truth"), or the same
answers with each pair "unsure" with probability 20% ("20% unsure"; in the census world the census
strata's unsure pairs are then bounded, issue 51 item 1). 300 samples per world (seeds 0–299, drawn by
:func:`sample_stratified_many`), so 300 per cell; 3 slices × 2 metrics per cell, 12 per world (test).

Checks per cell, slice and metric, two each, Bonferroni at the suite's 1/1000 for a whole test
(``a = 1/1000 / 24``):

* **coverage**: the 95% intervals hold the truth in all but at most ``m`` samples, ``m`` the largest
  number of misses a 95% interval exceeds with probability ``a`` (binomial): ``m = 32`` of 300, a floor
  of 89.3%. An undefined estimate (no usable judgement in a stratum, said in its note) has no interval:
  a miss. 300 samples cannot tell 93% from 95% (1.6 Monte Carlo SEs): the floor fails an interval whose
  true coverage is 93% with probability 0.007, 90%: 0.31, 88%: 0.73, 85%: 0.98 (issue 51's failures
  were 73–89.6%). More than 95% is not failed: a census stratum's unsure pairs are bounded by design.
* **mean**: over the defined estimates, ``|mean − truth| ≤ 4.16 · sd/√n`` (``t_{1−a/2, n−1}``). The bias
  this catches (absolute, and relative to the truth; slices a, b, c):

  ============  =========  =====================================  =====================================
  world         condition  ΔPrecision(I)                          Λ(I)
  ============  =========  =====================================  =====================================
  sampled       truth      0.0018 (9%), 0.0027 (14%), 0.0035 (17%)  0.0020 (2%), 0.0024 (3%), 0.0030 (12%)
  sampled       20% unsure 0.0022 (10%), 0.0033 (16%), 0.0043 (20%) 0.0022 (2%), 0.0027 (4%), 0.0036 (15%)
  census        truth      0.0003 (1%), 0.0005 (2%), 0.0007 (2%)  0.0017 (2%), 0.0001 (3%), 0.0017 (2%)
  census        20% unsure 0.0010 (4%), 0.0018 (7%), 0.0023 (6%)  0.0028 (3%), 0.0028 (75%), 0.0021 (2%)
  ============  =========  =====================================  =====================================

  (census slice b's lift is −0.0037: with 20% unsure only a bias of its own size is caught).
* on every sample: **no point interval** (``ci_low == ci_high``; no slice here is exact, each has
  sampled strata) and every estimate inside its interval.

Measured here (coverage; truth / 20% unsure): sampled ΔPrecision 93.7–96.7% / 91.3–92.7%, Λ 95.3–97.3%
/ 94.0–96.0%; census ΔPrecision 95.0–95.3% / 96.7–100%, Λ 94.7–97.3% / 98.3–100% (2 of 300 undefined,
slice c: every agreed draw in it unsure). Over more seeds (sampled: 300–2,299 for ΔPrecision,
300–1,299 for Λ; census: 300–1,299): sampled ΔPrecision with 20% unsure 93.3%, 94.3%, 94.1%, its SE
5–7% under the spread (a pair is drawn about twice in the split stratum and its one "unsure" drops
every draw of it, which the SE of the draws left does not see: the same draws with 20% of draws, not
pairs, left out cover 95.5–96.5% at SE/SD 1.01–1.05, seeds 300–1,799), the rest 94.3–97.0%; census
ΔPrecision 93.7–95.1% / 97.4–100%, Λ 96.0–96.5% / 99.2–100%. The census world's Λ(I) with the truth
judging sits 0.6% (a) and 1.4% (b) of itself further from 0 than the truth (z = −3.6 and −4.7 over
seeds 0–1,499): a ratio's bias, T_Base(I) resting on the sampled agreed and intersection− strata;
within the band at 300. The reported SE is not checked against the spread: a slice's lift interval is read
off draws, not the SE (census slice c's SE is a third of its spread, its interval covers 95%), and with
20% unsure the census world's estimates spread about 3× their SE, the interval bounding the unsure
pairs. The table of each world is printed, and shown on a failure.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import reference as ref
from test_quality import dicts, oracle
from test_recall_lift import sim_world
from abcde.core.diff import affected_items, build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.quality.draw import _slice_multipliers
from abcde.quality.exact_facts import recall_facts
from abcde.quality.recall import estimate_recall_lift
from abcde.quality.stratified import estimate_stratified_slices
from abcde.sampling.stratified import sample_stratified_many

SAMPLES = 300
BUDGET = 300
UNSURE = 0.2
SLICES = {"a": 0.5, "b": 0.3, "c": 0.2}
METRICS = ("delta_precision", "recall_lift")
CONDITIONS = ("truth", "20% unsure")
ALPHA = 1e-3  # chance that correct intervals fail one whole test (one world)
#: world: (sim_world kind, seed, weighted, entities, the strata its budget lists whole)
WORLDS = {
    "sampled": ("both", 11, False, 260, frozenset()),
    "census": ("both", 13, True, 150, frozenset({"split", "merge", "intersection+"})),
}


def _world(name):
    kind, seed, weighted, n_entities, _ = WORLDS[name]
    base, exp, items = sim_world(seed, kind, n_entities=n_entities, weighted=weighted)
    rng = np.random.default_rng(seed + 1000)
    items = items.append_column("kind", pa.array(rng.choice(list(SLICES), items.num_rows, p=list(SLICES.values()))))
    return base, exp, items


def _truths(b, e, w, t, kind):
    """``{(metric, slice): truth}`` from the pair listing."""
    W = math.fsum(w.values())
    pairs = ref.all_pairs(b, e, w)
    out = {}
    for v in SLICES:
        inside = {i for i, k in kind.items() if k == v}
        contrib = math.fsum(p["u"] * p["l"] for p in pairs if p["i"] in inside and t[p["i"]] == t[p["j"]])
        out["delta_precision", v] = contrib * W / math.fsum(w[i] for i in inside)
        out["recall_lift", v] = ref.recall_lift(b, e, t, w, inside)
        assert abs(out["delta_precision", v]) > 1e-3 and abs(out["recall_lift", v]) > 1e-3, (v, out)
    return out


def _answers(ss, t, seed):
    """The truth's answers to every drawn pair, and the same with each pair "unsure" with probability 20%."""
    true = {}
    for c in ss.strata:
        if ss.draws[c].num_rows:
            true.update(oracle(ss.draws[c], t))
    rng = np.random.default_rng(10_000 + seed)
    return {"truth": true, "20% unsure": {p: ("unsure" if rng.random() < UNSURE else a) for p, a in true.items()}}


def _row(res, truth, key):
    """One cell, slice and metric: its statistics and the checks' limits."""
    got = res[key]
    S = len(got)
    true = truth[key[1], key[2]]
    defined = [g for g in got if g["estimate"] is not None]
    v = np.array([g["estimate"] for g in defined], dtype=float)
    se = np.array([g["std_err"] for g in defined], dtype=float)
    lo = np.array([g["ci_low"] for g in defined], dtype=float)
    hi = np.array([g["ci_high"] for g in defined], dtype=float)
    n = len(v)
    sd = float(v.std(ddof=1))
    a = ALPHA / (2 * len(res))
    return {
        "key": key, "truth": true, "n": n, "undefined": S - n, "mean": float(v.mean()), "sd": sd,
        "z": (float(v.mean()) - true) / (sd / math.sqrt(n)), "t_lim": float(stats.t.isf(a / 2, n - 1)),
        "se": float(np.nanmean(se)), "se0": float(np.mean(se == 0)),
        "misses": S - int(np.sum((lo <= true) & (true <= hi))), "max_misses": int(stats.binom.isf(a, S, 0.05)),
        "samples": S,
    }


def _describe(name, rows):
    lines = [f"world {name}: {'cell':11s} {'metric':15s} slice {'truth':>9s} {'mean':>9s} {'z':>6s} {'sd':>8s} "
             f"{'SE':>8s} {'SE=0':>5s} {'cover':>6s} {'undef':>5s}"]
    for r in rows:
        cond, metric, v = r["key"]
        lines.append(f"{'':{len(name) + 7}s} {cond:11s} {metric:15s} {v:5s} {r['truth']:9.5f} {r['mean']:9.5f} "
                     f"{r['z']:6.2f} {r['sd']:8.5f} {r['se']:8.5f} {r['se0']:5.2f} "
                     f"{1 - r['misses'] / r['samples']:6.3f} {r['undefined']:5d}")
    lines.append(f"limits: |z| ≤ {rows[0]['t_lim']:.2f}, misses ≤ {rows[0]['max_misses']} of {rows[0]['samples']} "
                 f"(coverage ≥ {1 - rows[0]['max_misses'] / rows[0]['samples']:.3f})")
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WORLDS))
def test_slice_intervals_cover_with_a_known_truth(name):
    """See the module's docstring: per cell (truth / 20% unsure), slice (a, b, c) and metric
    (ΔPrecision(I), Λ(I)), 300 samples: coverage at least 89.3% (binomial floor at 95%), mean within
    4.16 Monte Carlo SEs of the brute-force truth, no point interval, every estimate inside its interval."""
    base, exp, items = _world(name)
    b, e, w, t = dicts(base, exp, items)
    kind = dict(zip(items.column("item_id").to_pylist(), items.column("kind").to_pylist()))
    truth = _truths(b, e, w, t, kind)

    d = build_diff(Inputs(base, exp, items=items))
    W = overall(d)["total_weight"]
    # The multipliers abcde stores for the slices, against the brute force's.
    stored = {r["value"]: r for r in _slice_multipliers(d, ["kind"], W).to_pylist()}
    want = ref.slice_multipliers(b, e, w, kind)
    for v, m in want.items():
        s = stored[json.dumps(v)]
        for k in ("weight", "pairweight", "self_term", "self_pairweight"):
            assert s[k] == pytest.approx(m[k], rel=1e-9, abs=1e-15), (v, k)
    mult = {v: (r["weight"], r["pairweight"]) for v, r in stored.items()}
    selfs = {v: (r["self_term"], r["self_pairweight"]) for v, r in stored.items()}
    value = {i: json.dumps(k) for i, k in kind.items()}
    ids = [r["item_id"] for r in d.engine.rows(affected_items(d).select("item_id"))]
    facts = recall_facts(d, ids, slice_by=("kind",), total_weight=W)
    for v in SLICES:  # several strata in every slice: four or five of the lift's five hold its pairs
        assert sum(m > 0 for m in facts.slices["kind"][json.dumps(v)]) >= 4, (v, facts.slices["kind"])

    samples = sample_stratified_many(d, budget=BUDGET, seeds=range(SAMPLES), total_weight=W, batch=SAMPLES)
    assert samples[0].census == WORLDS[name][4], samples[0].census
    res = {(c, m, v): [] for c in CONDITIONS for m in METRICS for v in SLICES}
    for seed, ss in enumerate(samples):
        for cond, by in _answers(ss, t, seed).items():
            _, _, lifts = estimate_recall_lift(ss, by, facts, method="sim", vantage_values={"kind": value})
            for v in SLICES:
                res[cond, "recall_lift", v].append(lifts["kind"][json.dumps(v)])
            for row in estimate_stratified_slices(ss, by, value, mult, selfs, total_weight=W):
                res[cond, "delta_precision", row["value"]].append(row["delta_precision"])

    bad = []
    for key, got in res.items():
        for g in got:
            if g["estimate"] is None:  # undefined: said why, no interval (a miss in the coverage)
                assert "no usable judgement" in g.get("note", "") and g["ci_low"] is None, (key, g)
                continue
            assert not g.get("exact"), (key, g)  # every slice has sampled strata
            if not g["ci_low"] < g["ci_high"]:
                bad.append((key, "point interval", g))
            if not g["ci_low"] <= g["estimate"] <= g["ci_high"]:
                bad.append((key, "estimate outside its interval", g))
    rows = [_row(res, truth, key) for key in res]
    table = _describe(name, rows)
    print("\n" + table)
    assert not bad, (bad[:5], len(bad))
    failed = []
    for r in rows:
        off = [k for k, out in (("mean", abs(r["z"]) > r["t_lim"]), ("coverage", r["misses"] > r["max_misses"])) if out]
        if off:
            failed.append((r["key"], off))
    assert not failed, f"{failed}\n{table}"
