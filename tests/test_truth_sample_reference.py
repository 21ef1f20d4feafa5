"""The truth-sample estimators written straight from their definitions (issue 41), sharing no code
with the library: plain Python loops over items and entities, matched to the library at 1e-12.

Per truth item ``i`` (entity ``I(i)``, cluster ``C(i)`` over *every* item of the clustering)::

    Precision(i) = w(C(i) ∩ I(i)) / w(C(i))        Recall(i) = w(C(i) ∩ I(i)) / w(I(i))

per listed entity ``k``: ``B_k = Σ w_j``, ``A_k = Σ w_j · metric(j)`` over its items (in the slice);
Hájek ``R̂ = Σ A_k/π_k / B̂``, ``B̂ = Σ B_k/π_k``, ``z_k = (A_k − R̂ B_k)/B̂``; variance
``N²(1 − n/N)/n · Σ(z_k − z̄)²/(n − 1)`` (uniform, ``π_k = n/N``) or ``Σ (1 − π_k)/π_k² z_k²``
(Poisson); F1 ``2PR/(P + R)`` with ``z_F = 2R²/(P+R)² z_P + 2P²/(P+R)² z_R``; a difference's
``z = z_Exp − z_Base``. Intervals: Precision and Recall by Fay and Feuer's gamma interval of the
missing mass ``1 − R``: per entity its share ``(B_k − A_k)/π_k / B̂``, those certain to be sampled
(π = 1) fixed, the others' sum ``y`` with design variance ``v`` and largest share ``w``; the mass's
ends ``Gamma(y²/v, scale v/y)`` at 2.5% and ``Gamma((y + w)²/(v + w²), scale (v + w²)/(y + w))`` at
97.5%; when the sampled entities show no loss or no spread (``y = 0`` or ``v = 0``), the upper end
adds the sampled entities' weight share times Clopper–Pearson's bound for no event in their Kish
number, ``1 − 0.025^(1/n)`` (a census adds nothing). Their differences: the gains ``max(A^Exp_k − A^Base_k, 0)`` and the losses (likewise) as two
such masses, combined by Newcombe's paired MOVER with their design correlation. F1: ``expit(logit
u ± t_{0.975, ν} · se_u / (u(1 − u)))`` with ``u`` the value, Student t's degrees of freedom
``ν = min(n − 1, max(1, (Σ_k c_k)² / Σ_k c_k²))`` (Satterthwaite's, for a sum of one-degree-of-freedom
terms) with ``c_k`` entity ``k``'s term of the variance: ``N²(1 − n/N)/n · (z_k − z̄)²/(n − 1)``
(uniform) or ``(1 − π_k)/π_k² z_k²`` (Poisson); ΔF1 by MOVER from the two sides' intervals with
their correlation ``r = (V_Base + V_Exp − V_Δ) / (2·SE_Base·SE_Exp)``::

    L = Δ − √((v_Exp − l_Exp)² − 2r(v_Exp − l_Exp)(u_Base − v_Base) + (u_Base − v_Base)²)
    U = Δ + √((u_Exp − v_Exp)² − 2r(u_Exp − v_Exp)(v_Base − l_Base) + (v_Base − l_Base)²)
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from scipy.stats import gamma as gamma_dist
from scipy.stats import t as student_t

from abcde.metrics.truth_sample import estimate_pointwise

# ----------------------------------------------------------------------------- a small world
ITEMS = list(range(1, 25))
W = {i: 1.0 + (i % 5) * 0.7 + (0.25 if i % 7 == 0 else 0.0) for i in ITEMS}
SRC = {i: "abc"[i % 3] for i in ITEMS}
FULL_TRUTH = {}
for ent, members in {"E1": [1, 2, 3, 4], "E2": [5, 6], "E3": [7], "E4": [8, 9, 10], "E5": [11, 12], "E6": [13],
                     "E7": [14, 15, 16, 17], "E8": [18, 19], "E9": [20], "E10": [21, 22, 23, 24]}.items():
    for i in members:
        FULL_TRUTH[i] = ent
BASE = {}
for c, members in {"x1": [1, 2, 5], "x2": [3, 4], "x3": [6, 7, 8], "x4": [9, 10], "x5": [11, 12, 13, 14],
                   "x6": [15, 16, 17, 18], "x7": [19, 20], "x8": [21, 22], "x9": [23, 24]}.items():
    for i in members:
        BASE[i] = c
EXP = {}
for c, members in {"y1": [1, 2, 3, 4], "y2": [5, 6, 7], "y3": [8, 9, 10, 11], "y4": [12], "y5": [13],
                   "y6": [14, 15, 16, 17, 18, 19], "y7": [20, 21], "y8": [22, 23, 24]}.items():
    for i in members:
        EXP[i] = c
LISTED = ["E1", "E3", "E4", "E7", "E10"]
INCLUSION = {"E1": 0.5, "E3": 0.2, "E4": 0.8, "E7": 0.6, "E10": 1.0}
TRUTH = {i: e for i, e in FULL_TRUTH.items() if e in LISTED}


def table(assign: dict) -> pa.Table:
    ids = sorted(assign)
    return pa.table({"item_id": ids, "cluster_id": [assign[i] for i in ids]})


def truth_table() -> pa.Table:
    ids = sorted(TRUTH)
    return pa.table({"item_id": ids, "cluster_id": [TRUTH[i] for i in ids],
                     "inclusion": [INCLUSION[TRUTH[i]] for i in ids]})


ITEMS_TABLE = pa.table({"item_id": ITEMS, "weight": [W[i] for i in ITEMS], "src": [SRC[i] for i in ITEMS]})


# ----------------------------------------------------------------------------- the definitions
def scores(clustering: dict) -> dict:
    """``{truth item: (Precision, Recall)}`` against whole clusters."""
    out = {}
    for i, e in TRUTH.items():
        cluster = [j for j in clustering if clustering[j] == clustering[i]]
        entity = [j for j in TRUTH if TRUTH[j] == e]
        both = sum(W[j] for j in cluster if TRUTH.get(j) == e)
        out[i] = (both / sum(W[j] for j in cluster), both / sum(W[j] for j in entity))
    return out


def entity_totals(clustering: dict, in_slice=lambda i: True) -> tuple[dict, dict, dict]:
    s = scores(clustering)
    A_p, A_r, B = {}, {}, {}
    for k in LISTED:
        members = [i for i in TRUTH if TRUTH[i] == k and in_slice(i)]
        B[k] = sum(W[i] for i in members)
        A_p[k] = sum(W[i] * s[i][0] for i in members)
        A_r[k] = sum(W[i] * s[i][1] for i in members)
    return A_p, A_r, B


def hajek(A: dict, B: dict, pi: dict) -> tuple[float, dict]:
    b_hat = sum(B[k] / pi[k] for k in B)
    r = sum(A[k] / pi[k] for k in A) / b_hat
    return r, {k: (A[k] - r * B[k]) / b_hat for k in A}


def terms(z: dict, pi: dict, design: str, N: float) -> list[float]:
    """Each entity's term of the variance (they add up to it)."""
    n = len(z)
    if design == "uniform":
        zbar = sum(z.values()) / n
        return [N * N * (1 - n / N) / n * (v - zbar) ** 2 / (n - 1) for v in z.values()]
    return [(1 - pi[k]) / pi[k] ** 2 * z[k] ** 2 for k in z]


def variance(z: dict, pi: dict, design: str, N: float) -> float:
    return sum(terms(z, pi, design, N))


def dof(z: dict, pi: dict, design: str, N: float) -> float:
    """Student t's degrees of freedom: Satterthwaite's for a sum of one-degree-of-freedom terms, in [1, n − 1]."""
    c = terms(z, pi, design, N)
    return min(len(c) - 1, max(1.0, sum(c) ** 2 / sum(x * x for x in c)))


def interval(v: float, se: float, df: float, lo: float, hi: float) -> tuple[float, float]:
    q = student_t.ppf(0.975, df)
    u, s = (v - lo) / (hi - lo), se / (hi - lo)
    centre, half = math.log(u / (1 - u)), q * s / (u * (1 - u))
    return lo + (hi - lo) / (1 + math.exp(-(centre - half))), lo + (hi - lo) / (1 + math.exp(-(centre + half)))


def covariance(z1: dict, z2: dict, pi: dict, design: str, N: float) -> float:
    """The design covariance of two linearised estimators."""
    n = len(z1)
    if design == "uniform":
        m1, m2 = sum(z1.values()) / n, sum(z2.values()) / n
        return N * N * (1 - n / N) / n * sum((z1[k] - m1) * (z2[k] - m2) for k in z1) / (n - 1)
    return sum((1 - pi[k]) / pi[k] ** 2 * z1[k] * z2[k] for k in z1)


def gamma_mass(parts: dict, B: dict, pi: dict, design: str, N: float) -> tuple:
    """A mass ``Σ part_k/π_k / Σ B_k/π_k`` and Fay and Feuer's gamma interval: the entities certain to
    be sampled (π = 1) fixed, the others' ``y`` with design variance ``v`` and largest share ``w``:
    ``Gamma(y²/v, v/y)`` at 2.5%, ``Gamma((y + w)²/(v + w²), (v + w²)/(y + w))`` at 97.5%. Returns the
    mass, the interval's ends and the residuals ``z``."""
    b_hat = sum(B[k] / pi[k] for k in B)
    share = {k: (parts[k] if parts[k] > 1e-12 * abs(B[k]) else 0.0) / pi[k] / b_hat for k in B}
    value = sum(share.values())
    z = {k: ((parts[k] if parts[k] > 1e-12 * abs(B[k]) else 0.0) - value * B[k]) / b_hat for k in B}
    v = variance(z, pi, design, N)
    y = sum(x for k, x in share.items() if pi[k] < 1)
    fixed = sum(x for k, x in share.items() if pi[k] == 1)
    w = max([x for k, x in share.items() if pi[k] < 1], default=0.0)
    if not (y > 0 and v > 0):
        # The sampled entities show no loss (or no spread): what the unsampled may hold is the sampled
        # entities' weight share times Clopper–Pearson's upper bound for 0 events in their effective
        # number (Kish), 1 − 0.025^(1/n) (issue 51).
        ws = [B[k] / pi[k] / b_hat for k in B if pi[k] < 1]
        sw, sw2 = sum(ws), sum(x * x for x in ws)
        zero = sw * (1 - 0.025 ** (1 / max(sw * sw / sw2, 1.0))) if sw2 > 0 else 0.0
        return value, fixed + (max(y - zero, 0.0) if y > 0 else 0.0), fixed + y + zero, z
    lo = gamma_dist.ppf(0.025, y * y / v, scale=v / y)
    hi = gamma_dist.ppf(0.975, (y + w) ** 2 / (v + w * w), scale=(v + w * w) / (y + w))
    return value, fixed + lo, fixed + hi, z


def mover(d: float, first: tuple, second: tuple, r: float) -> tuple[float, float]:
    """Newcombe's paired MOVER interval of ``d = second − first`` (each ``(value, low, high)``)."""
    (v1, l1, u1), (v2, l2, u2) = first, second
    lo = d - math.sqrt((v2 - l2) ** 2 - 2 * r * (v2 - l2) * (u1 - v1) + (u1 - v1) ** 2)
    hi = d + math.sqrt((u2 - v2) ** 2 - 2 * r * (u2 - v2) * (v1 - l1) + (v1 - l1) ** 2)
    return max(lo, -1.0), min(hi, 1.0)


def reference(sides: dict, design: str, N: float | None, in_slice=lambda i: True) -> dict:
    """``{side: {metric: (value, se, lo, hi)}}`` and ``{delta_metric: ...}`` from the definitions."""
    pi = {k: (len(LISTED) / N if design == "uniform" else INCLUSION[k]) for k in LISTED}
    lin = {}
    for side, clustering in sides.items():
        A_p, A_r, B = entity_totals(clustering, in_slice)
        p, zp = hajek(A_p, B, pi)
        r, zr = hajek(A_r, B, pi)
        f = 2 * p * r / (p + r)
        zf = {k: 2 * r * r / (p + r) ** 2 * zp[k] + 2 * p * p / (p + r) ** 2 * zr[k] for k in LISTED}
        lin[side] = {"precision": (p, zp), "recall": (r, zr), "f1": (f, zf)}
    out = {}
    for side, ms in lin.items():
        out[side] = {}
        A_p, A_r, B = entity_totals(sides[side], in_slice)
        for m, (v, z) in ms.items():
            se = math.sqrt(variance(z, pi, design, N))
            if m == "f1":
                out[side][m] = (v, se, *interval(v, se, dof(z, pi, design, N), 0.0, 1.0))
                continue
            A = A_p if m == "precision" else A_r
            _, lo, hi, _ = gamma_mass({k: B[k] - A[k] for k in LISTED}, B, pi, design, N)
            out[side][m] = (v, se, max(1.0 - hi, 0.0), min(1.0 - lo, 1.0))
    if len(sides) == 2:
        totals = {side: entity_totals(c, in_slice) for side, c in sides.items()}
        B = totals["base"][2]
        for m in ("precision", "recall", "f1"):
            (vb, zb), (ve, ze) = lin["base"][m], lin["exp"][m]
            z = {k: ze[k] - zb[k] for k in LISTED}
            vd = variance(z, pi, design, N)
            if m == "f1":
                (_, sb, lb, ub), (_, se_, le, ue) = out["base"][m], out["exp"][m]
                r = (sb * sb + se_ * se_ - vd) / (2 * sb * se_) if sb > 0 and se_ > 0 else 0.0
                lo, hi = mover(ve - vb, (vb, lb, ub), (ve, le, ue), r)
                out[f"delta_{m}"] = (ve - vb, math.sqrt(vd), lo, hi)
                continue
            j = 0 if m == "precision" else 1
            change = {k: totals["exp"][j][k] - totals["base"][j][k] for k in LISTED}
            g, lg, ug, zg = gamma_mass({k: max(c, 0.0) for k, c in change.items()}, B, pi, design, N)
            l_, ll, ul, zl = gamma_mass({k: max(-c, 0.0) for k, c in change.items()}, B, pi, design, N)
            vg, vl = variance(zg, pi, design, N), variance(zl, pi, design, N)
            r = covariance(zg, zl, pi, design, N) / math.sqrt(vg * vl) if vg > 0 and vl > 0 else 0.0
            lo, hi = mover(g - l_, (l_, ll, ul), (g, lg, ug), max(-1.0, min(1.0, r)))
            out[f"delta_{m}"] = (ve - vb, math.sqrt(vd), lo, hi)
    return out


def assert_matches(lib: dict, ref: tuple) -> None:
    v, se, lo, hi = ref
    assert lib["estimate"] == pytest.approx(v, rel=1e-12, abs=1e-12)
    assert lib["std_err"] == pytest.approx(se, rel=1e-12, abs=1e-12)
    assert lib["ci_low"] == pytest.approx(lo, rel=1e-12, abs=1e-12)
    assert lib["ci_high"] == pytest.approx(hi, rel=1e-12, abs=1e-12)


def run(design: str, sides: tuple, N=None, slice_by=()):
    truth_sample = "uniform" if design == "uniform" else "inclusion"
    clusterings = {"base": table(BASE), "exp": table(EXP)}
    if len(sides) == 1:
        return estimate_pointwise(truth_table(), clusterings[sides[0]], truth_sample=truth_sample,
                                  population_entities=N, items=ITEMS_TABLE, slice_by=slice_by)
    return estimate_pointwise(truth_table(), base=clusterings["base"], exp=clusterings["exp"],
                              truth_sample=truth_sample, population_entities=N, items=ITEMS_TABLE, slice_by=slice_by)


# ----------------------------------------------------------------------------- tests
def test_the_world_has_what_the_tests_need():
    """Clusters that hold listed and unlisted items (so whole clusters matter), split entities, and
    entities of several inclusion probabilities, one certain."""
    assert any(TRUTH.get(j) is None for i in TRUTH for j in BASE if BASE[j] == BASE[i])
    assert any(TRUTH.get(j) is None for i in TRUTH for j in EXP if EXP[j] == EXP[i])
    assert len(set(INCLUSION[k] for k in LISTED)) == len(LISTED) and 1.0 in INCLUSION.values()


@pytest.mark.parametrize("side", ["base", "exp"])
@pytest.mark.parametrize("design, N", [("uniform", None), ("uniform", 12), ("poisson", None)])
def test_one_clustering(design, N, side):
    res = run(design, (side,), N)
    n_hat = len(LISTED) * len(ITEMS) / len(TRUTH)  # N̂ = n · items in the clustering / items in the truth
    expected_N = (N if N is not None else n_hat) if design == "uniform" else sum(1 / INCLUSION[k] for k in LISTED)
    assert res.population_entities == pytest.approx(expected_N, rel=1e-12)
    assert res.population_entities_from == ("design" if design == "poisson" else "given" if N else "estimated")
    ref = reference({side: BASE if side == "base" else EXP}, design, expected_N)
    d = res.to_dict()
    for m in ("precision", "recall", "f1"):
        assert_matches(d["estimates"][m], ref[side][m])
    # The per-entity table holds each entity's weighted mean scores, from the item loops.
    s = scores(BASE if side == "base" else EXP)
    per = res.per_entity().to_pylist()
    for row in per:
        members = [i for i in TRUTH if TRUTH[i] == row["entity_id"]]
        wk = sum(W[i] for i in members)
        assert row["weight"] == pytest.approx(wk, rel=1e-12)
        assert row["precision"] == pytest.approx(sum(W[i] * s[i][0] for i in members) / wk, rel=1e-12)
        assert row["recall"] == pytest.approx(sum(W[i] * s[i][1] for i in members) / wk, rel=1e-12)


@pytest.mark.parametrize("design", ["uniform", "poisson"])
def test_two_clusterings_and_their_paired_differences(design):
    N = 20 if design == "uniform" else None
    res = run(design, ("base", "exp"), N)
    ref = reference({"base": BASE, "exp": EXP}, design, N)
    d = res.to_dict()["estimates"]
    for side in ("base", "exp"):
        for m in ("precision", "recall", "f1"):
            assert_matches(d[side][m], ref[side][m])
    for m in ("delta_precision", "delta_recall", "delta_f1"):
        assert_matches(d[m], ref[m])
        # one variance of the difference, not two intervals side by side
        side_by_side = math.hypot(ref["base"][m[6:]][1], ref["exp"][m[6:]][1])
        assert abs(d[m]["std_err"] - side_by_side) > 1e-6


@pytest.mark.parametrize("design", ["uniform", "poisson"])
def test_a_slice(design):
    """A slice's estimate: entity totals over the entity's items in the slice; entities with none in
    it contribute 0 and still count in the design."""
    N = 15 if design == "uniform" else None
    res = run(design, ("base", "exp"), N, slice_by=["src"])
    rows = res.to_dict()["slices"]["src"]
    assert [r["src"] for r in rows] == ["a", "b", "c"]
    for row in rows:
        value = row["src"]
        in_slice = (lambda i, v=value: SRC[i] == v)
        ref = reference({"base": BASE, "exp": EXP}, design, N, in_slice)
        members = [i for i in TRUTH if SRC[i] == value]
        assert row["items"] == len(members)
        assert row["entities"] == len({TRUTH[i] for i in members})
        assert row["weight"] == pytest.approx(sum(W[i] for i in members), rel=1e-12)
        for side in ("base", "exp"):
            for m in ("precision", "recall", "f1"):
                assert_matches(row["estimates"][side][m], ref[side][m])
        for m in ("delta_precision", "delta_recall"):
            assert_matches(row["estimates"][m], ref[m])
    # some listed entity has no item in some slice (it then counts with zeros)
    assert any(row["entities"] < len(LISTED) for row in rows)
