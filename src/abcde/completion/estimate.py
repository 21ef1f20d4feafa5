"""ΔRecall, IQ and ΔPrecision from completed entities (van Staden, "More Clustering Quality Metrics
for ABCDE", 2024).

For an anchor ``i`` (a drawn affected item) a judge ticks every member of ``U(i) = B(i) ∪ E(i)``
same, different or unsure, and adds the items of its entity found outside both clusters. With
``I(i)`` its true entity and ``w(S)`` the weight of a set:

- ``ΔRecall(i) = [w(E(i)∩I(i)) − w(B(i)∩I(i))] / w(I(i))``;
- ``JD_C(i) = 1 − w(C(i)∩I(i)) / w(C(i)∪I(i))`` for ``C`` = Base, Exp;
- ``ΔPrecision(i) = w(E(i)∩I(i)) / w(E(i)) − w(B(i)∩I(i)) / w(B(i))``;

and, with ``W`` the total weight and ``A`` the affected items (an unaffected item has ``B(i) = E(i)``,
so each of these is 0 there):

- ``ΔRecall = Σ_{i∈A} (w_i/W)·ΔRecall(i)``, pointwise Recall(Exp) − Recall(Base);
- ``IQ = (JD(Base, I) − JD(Exp, I)) / JaccardDistance(Base, Exp)``, with
  ``JD(C, I) − JD(C', I) = Σ_{i∈A} (w_i/W)·(JD_C(i) − JD_C'(i))`` and the denominator exact;
- ``ΔPrecision = Σ_{i∈A} (w_i/W)·ΔPrecision(i)``, pointwise Precision(Exp) − Precision(Base), a
  cross-check of the pair sample's (it needs no search: ``B(i)`` and ``E(i)`` are ticked whole).

**Estimates.** Each draw ``k`` (anchor ``i``, probability ``p_k``) gives ``y_k = (w_i/W)·x(i)/p_k``,
whose mean over the draws is unbiased for the sum (Hansen–Hurwitz, draws with replacement); its
standard error is the draws' standard deviation over ``√n``, and the interval Student's t. A census
of ``A`` sums ``(w_i/W)·x(i)`` exactly (no sampling error). A slice ``S`` divides by ``w(S)``
instead of ``W`` and counts only its anchors.

**What the answers cannot rule out.** A member ticked unsure (or not ticked), or two raters'
answers that differ, leaves whether it is in ``I(i)``, and an anchor whose search outside both
clusters was skipped leaves any weight outside ``U(i)`` possible. Each anchor's ``x(i)`` then has
bounds, the least and the most the unknowns allow (exact for ΔRecall: its ratio is extreme with each
class of unknown members, Base-only, Exp-only or both, wholly in or out, and an unknown outside
weight moves it toward 0; for the Jaccard and precision terms, each weight at its end of its own
range), and the estimate is a range: the bounds' estimates, with an interval from the lower
bound's low end to the upper bound's high end. The bounds hold the truth whatever the unknown
items are.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from abcde.completion.judgements import OWNER_SOURCE, group_answers, load_answers, outside_weights
from abcde.completion.model import MODEL_FILE
from abcde.completion.sample import EntitySample
from abcde.errors import InputError

METRICS = ("delta_recall", "iq", "delta_precision")
ANSWERS = ("same", "different", "unsure")
SEARCH = ("searched", "not searched")
LEVEL = 0.95


# ----------------------------------------------------------------------------- answers
@dataclass
class AnchorAnswers:
    """What the judges said of one anchor: ``same``/``different``/``unsure`` item sets and whether
    the search outside both clusters was done (``None``: not said)."""

    same: set = field(default_factory=set)
    different: set = field(default_factory=set)
    unsure: set = field(default_factory=set)
    searched: bool | None = None


def read_answers(rows, sample: EntitySample, where: str = "the answers") -> tuple[dict, dict]:
    """``{anchor: AnchorAnswers}`` from rows ``{anchor, item_id, answer}`` (``item_id`` null with an
    answer of :data:`SEARCH` for the search), and counts ``{answers, conflicts, settled}``. Two answers
    of one item that differ make it unsure (what neither can rule out), unless a row of source
    ``owner`` (the owner's settlement) settles it: its answer then counts instead, while the others
    still differ, and nowhere else (:class:`abcde.completion.judgements.Answered`, the one rule);
    each bad row is one clear line."""
    anchors = set(sample.anchors.column("item_id").to_pylist())
    got: dict = {}
    conflicts = settled = told = 0
    for (a, i), g in group_answers(rows, anchors, where).items():
        if not g.rows:  # the owner's answer alone: it settles nothing, and counts nowhere
            continue
        aa = got.setdefault(a, AnchorAnswers())
        if len(g.rows) == 1 and g.owner is None:  # one answer, no owner's: it counts as given (Answered's rule)
            answer, n_settled, n_conflicts = g.rows[0].get("answer"), 0, 0
        else:
            answer, n_settled, n_conflicts = g.answer, g.settled, g.conflicts
        settled += n_settled
        if i is None:
            aa.searched = answer == "searched"
            continue
        told += 1
        conflicts += n_conflicts
        getattr(aa, answer).add(i)
    return got, {"answers": told, "conflicts": conflicts, "settled": settled}


# ----------------------------------------------------------------------------- per anchor
def _ratio_bounds(n0: float, d0: float, classes: list, open_outside: bool) -> tuple[float, float]:
    """Least and most of ``(n0 + Σ n)/(d0 + Σ w)`` over the unknown members' classes ``(n, w)`` each
    wholly in or out (exact: per class ``n/w`` is one number), and with an unknown outside weight
    (``open_outside``) the limit 0 too."""
    sums = [(n0, d0)]  # (n, d) of each mask in order, its classes added in increasing bit order
    for cn, cw in classes:
        sums += [(n + cn, d + cw) for n, d in sums]
    vals = [n / d for n, d in sums]
    if open_outside:
        vals.append(0.0)
    return min(vals), max(vals)


def _members_of(sample: EntitySample) -> dict:
    """``{anchor: {item: (in_base, in_exp, weight, g)}}``: ``g`` is how many times a member's weight
    counts: 1 when its anchor's ``U(i)`` is listed whole (and in a sample drawn before subsampling),
    0 for a member not shown, and for a shown member of a subsampled ``U(i)`` (:func:`abcde.completion.
    sample.subsample_members`) its class's whole weight over its shown members' weight, ``W_c / w_c``
    (a ratio estimator: each class's answers by weight carried to the class, never beyond it)."""
    cols = sample.members.column_names
    n = sample.members.num_rows
    shown = sample.members.column("shown").to_pylist() if "shown" in cols else [True] * n
    pis = sample.members.column("pi").to_pylist() if "pi" in cols else [1.0] * n
    mem: dict = {}
    whole: dict = {}
    seen: dict = {}
    for a, i, b, e, w, on, pi in zip(*(sample.members.column(c).to_pylist() for c in
                                       ("anchor", "item_id", "in_base", "in_exp", "weight")), shown, pis):
        mem.setdefault(a, {})[i] = [bool(b), bool(e), float(w), 1.0 if on else 0.0]
        if a != i and pi < 1.0:
            key = (a, bool(b), bool(e))
            whole[key] = whole.get(key, 0.0) + float(w)
            if on:
                seen[key] = seen.get(key, 0.0) + float(w)
    for (a, b, e), wc in whole.items():
        for i, m in mem[a].items():
            if i != a and (m[0], m[1]) == (b, e) and m[3] > 0:
                m[3] = wc / seen[(a, b, e)]
    return {a: {i: tuple(m) for i, m in ms.items()} for a, ms in mem.items()}


def _one_anchor(a, members: dict, ans: AnchorAnswers, f: dict, weights_outside: dict) -> dict:
    """One anchor's ``{metric: (low, high)}`` (see :func:`anchor_values`); a member counts ``g`` times
    its weight (:func:`_members_of`: 0 when not shown, its class's weight over its shown members'
    when ``U(i)`` is subsampled)."""
    wB, wE = float(f["base_weight"]), float(f["exp_weight"])
    a_k = e_k = k0 = r_b = r_e = 0.0  # known w(B∩I), w(E∩I), w(I), w(I∖B), w(I∖E)
    u_b = u_e = u_be = 0.0  # unknown members: Base only, Exp only, both
    for i, (b, e, w, g) in members.items():
        if i != a:
            if g <= 0.0:
                continue  # not shown: its class's shown members stand for it
            w = w * g
        same = i == a or i in ans.same
        if same:
            a_k, e_k, k0 = a_k + b * w, e_k + e * w, k0 + w
            r_b, r_e = r_b + (not b) * w, r_e + (not e) * w
        elif i in ans.different and i not in ans.unsure:
            continue
        else:
            if b and e:
                u_be += w
            elif b:
                u_b += w
            else:
                u_e += w
    added = sum(weights_outside[(a, i)] for i in ans.same if i not in members)
    k0, r_b, r_e = k0 + added, r_b + added, r_e + added
    open_out = ans.searched is not True
    dr = _ratio_bounds(e_k - a_k, k0, [(-u_b, u_b), (u_e, u_e), (0.0, u_be)], open_out)
    # s_C = w(C∩I) / w(C∪I) = w(C∩I) / (w(C) + w(I∖C)), 1 − JD_C(i); each weight at its ends
    hi_e, hi_b = (e_k + u_e + u_be) / (wE + r_e), (a_k + u_b + u_be) / (wB + r_b)
    if open_out:  # an unknown outside weight can take either similarity to 0
        sE, sB = (0.0, hi_e), (0.0, hi_b)
    else:
        sE, sB = (e_k / (wE + r_e + u_b), hi_e), (a_k / (wB + r_b + u_e), hi_b)
    jd = (sE[0] - sB[1], sE[1] - sB[0])  # JD_B − JD_E = s_E − s_B
    dp = (e_k / wE - (a_k + u_b + u_be) / wB, (e_k + u_e + u_be) / wE - a_k / wB)
    return {"delta_recall": dr, "iq": jd, "delta_precision": dp}


def anchor_values(sample: EntitySample, answers: dict, weights_outside: dict, *, members: dict | None = None,
                  facts: dict | None = None) -> dict:
    """``{anchor: {metric: (low, high)}}`` of ``ΔRecall(i)``, ``JD_B(i) − JD_E(i)`` and ``ΔPrecision(i)``
    for every anchor with at least one answer; ``weights_outside``: the weights of items added from
    outside ``U(i)``. Of a subsampled ``U(i)``, each class's shown members stand for the class by
    weight (:func:`_members_of`: a ratio estimator, nearly unbiased when the members shown are many)."""
    mem = _members_of(sample) if members is None else members
    facts = _anchor_facts(sample) if facts is None else facts
    return {a: _one_anchor(a, mem.get(a, {}), ans, facts[a], weights_outside) for a, ans in answers.items()}


def _anchor_facts(sample: EntitySample) -> dict:
    """``{anchor: its row of the sample's anchors}``."""
    return {r["item_id"]: r for r in sample.anchors.to_pylist()}


def subsample_terms(sample: EntitySample, answers: dict, weights_outside: dict, *, members: dict | None = None,
                    facts: dict | None = None) -> tuple[dict, dict]:
    """The anchors whose ``U(i)`` is subsampled: ``({anchor: {metric: (var of low, var of high)}},
    {anchor: {metric: (bias of low, bias of high)}})`` by the stratified delete-one jackknife over the
    members shown (without member ``j``, its class's other shown members stand for the class, ``x_(j)``):
    variance ``Σ_c (1 − f_c)·(n_c − 1)/n_c·Σ_j (x_(j) − x̄_c)²``, what the choice of members adds to an
    anchor's value (a census of anchors is otherwise exact); bias ``Σ_c (1 − f_c)·(n_c − 1)·(x̄_c − x̂)``,
    the ratio's ``O(1/n)`` bias, which the estimates take away (a census of many subsampled anchors
    would otherwise add up a bias far larger than its spread: 21 standard errors in the test's world)."""
    cols = sample.members.column_names
    if "pi" not in cols:
        return {}, {}
    mem = _members_of(sample) if members is None else members
    pi_of = {(a, i): p for a, i, p in zip(sample.members.column("anchor").to_pylist(),
                                          sample.members.column("item_id").to_pylist(),
                                          sample.members.column("pi").to_pylist())}
    facts = _anchor_facts(sample) if facts is None else facts
    out, bias = {}, {}
    for a, ans in answers.items():
        members = mem.get(a, {})
        classes: dict = {}
        for i, (b, e, w, g) in members.items():
            if i != a and g > 0 and pi_of.get((a, i), 1.0) < 1.0:
                classes.setdefault((b, e), []).append(i)
        if not classes:
            continue
        var = {m: [0.0, 0.0] for m in METRICS}
        bb = {m: [0.0, 0.0] for m in METRICS}
        full = _one_anchor(a, members, ans, facts[a], weights_outside)
        for (b, e), shown in classes.items():
            n, f = len(shown), pi_of[(a, shown[0])]
            if n < 2:
                continue
            wc = sum(p[2] for i, p in members.items() if i != a and (p[0], p[1]) == (b, e))
            ws = sum(members[i][2] for i in shown)
            drop = []
            in_shown = set(shown)
            for j in shown:
                g = wc / (ws - members[j][2])
                # j left out of the shown (its class's others stand for it), still a member (never "outside")
                rest = {i: (p if i not in in_shown else (*p[:3], 0.0 if i == j else g)) for i, p in members.items()}
                drop.append(_one_anchor(a, rest, ans, facts[a], weights_outside))
            for m in METRICS:
                for side in (0, 1):
                    x = np.array([d[m][side] for d in drop])
                    mean = x.sum() / n  # x.mean(), once and without its overhead
                    var[m][side] += (1 - f) * (n - 1) / n * float(((x - mean) ** 2).sum())
                    bb[m][side] += (1 - f) * (n - 1) * (float(mean) - full[m][side])
        out[a] = {m: tuple(v) for m, v in var.items()}
        bias[a] = {m: tuple(v) for m, v in bb.items()}
    return out, bias


# ----------------------------------------------------------------------------- estimates
@dataclass(frozen=True)
class EntityEstimate:
    """One number: a point (``low == high``) or the range the answers cannot narrow, with its
    standard error(s) and interval."""

    low: float
    high: float
    std_err: float | None
    ci_low: float
    ci_high: float
    draws: int

    @property
    def estimate(self) -> float | None:
        return self.low if self.low == self.high else None

    def to_dict(self) -> dict:
        d = {"estimate": self.estimate, "std_err": self.std_err, "ci_low": self.ci_low, "ci_high": self.ci_high,
             "draws": self.draws}
        if self.estimate is None:
            d["bounds"] = [self.low, self.high]
        return d


@functools.lru_cache(maxsize=256)
def _t(n: int) -> float:
    """Student's t quantile of the interval's level for ``n`` draws (remembered: every estimate of a
    sample asks for the same one)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + LEVEL / 2, n - 1)) if n > 1 else math.inf


def _hall(y: np.ndarray, t: float, *, low: bool) -> float:
    """How many standard errors below (``low``) or above the mean the interval's end lies: ``t`` for a
    symmetric population; for a skewed one, Hall's (1992) transformation of the studentised mean,
    ``g(T) = T + γT²/(3√n) + γ²T³/(27n) + γ/(6√n)``, inverted at ±t, with γ half the draws' sample
    skewness.

    The draws' values are skewed when a few anchors carry much of the sum (heavy-tailed entities;
    the iq design's rare large weights). Over 36 cells (6 worlds × 2 designs × 3 numbers, 1,000
    samples of 150 draws each) the symmetric interval covered 91.0–96.4%, Hall's with the full
    sample skewness 91.8–98.2% (the skewness of a few heavy draws is a noisy, jumpy estimate: too
    wide when one is drawn, too narrow when none is), with half of it 93.7–96.5%. The test's
    simulation checks other worlds than these (tests/test_entities.py)."""
    n = len(y)
    sd = float(y.std(ddof=1)) if n > 1 else 0.0
    if n < 3 or not sd > 0 or not math.isfinite(t):
        return t
    gamma = 0.5 * float(np.mean((y - y.mean()) ** 3)) / float(y.std(ddof=0)) ** 3
    b, shift = gamma / (3 * math.sqrt(n)), gamma / (6 * math.sqrt(n))
    if abs(b) < 1e-12:
        return t

    def inv(x: float) -> float:  # g(T) = ((1 + bT)^3 − 1)/(3b) + shift, inverted
        return (np.cbrt(1 + 3 * b * (x - shift)) - 1) / b

    # mean − μ = T·se: the interval's low end is mean − inv(t)·se, its high end mean − inv(−t)·se
    return float(inv(t)) if low else float(-inv(-t))


def zero_events(n: int, level: float = LEVEL) -> float:
    """The most draw probability that items never drawn can hold, at ``level``, when ``n`` draws with
    replacement all show the same value: Clopper–Pearson's upper bound for 0 events in ``n`` trials,
    ``1 − (α/2)^(1/n)`` (about 3.7/n at 95%; the rule of three's 3/n is its one-sided 95% form)."""
    return 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n) if n > 0 else 1.0


def largest_draw(meta: dict, metric: str, c: float) -> float:
    """The largest ``|y|`` a draw of ``metric`` can take, ``c·max_i (w_i/p_i)·|x(i)|`` over the affected
    items (``c`` the draw's scale: ``1/W``, a slice's ``1/w(S)``, IQ's ``1/(W·JD)``), from the sample's
    exact totals. recall design: ``w_i/p_i`` is the affected weight and ``|x(i)| ≤ 1`` (IQ's
    ``|JD_B(i) − JD_E(i)| ≤ JD(i) ≤ 1``); iq design: ``w_i/p_i = mass/JD(i)``, so IQ's draws are at most
    ``c·mass`` and the others' ``c·mass/min JD(i)`` (unbounded when the sample does not store it)."""
    if meta["design"] == "recall":
        return c * float(meta["affected_weight"])
    if metric == "iq":
        return c * float(meta["mass"])
    least = float(meta.get("min_jd") or 0.0)
    return c * float(meta["mass"]) / least if least > 0 else math.inf


def hansen_hurwitz(y_low: np.ndarray, y_high: np.ndarray, *, census: bool, scale: float = 1.0,
                   clip: tuple[float, float] | None = None, largest: float = math.inf,
                   within: tuple[np.ndarray, np.ndarray] | None = None) -> EntityEstimate:
    """The estimate of a sum from per-draw values (mean; a census: sum) and its interval.

    Draws that all show one value ``c`` (no spread: every anchor unchanged, or one draw) leave the
    standard error 0, yet the items never drawn may differ: with ``q`` their draw probability and
    every draw within ``±largest`` (before ``scale``), the sum is ``c + Σ_{not drawn} p_i(y_i − c)``,
    within ``[c − q(c + largest), c + q(largest − c)]``; ``q`` is at most :func:`zero_events` at the
    level. That side's interval end is then this bound (then ``clip``), never ``c`` itself.

    ``within``: each draw's variance from its anchor's subsampled members (low's, high's:
    :func:`subsample_terms`). A census is then exact but for them: its interval is the sum's
    ± 1.96 standard errors of their total. (A sample of draws with replacement needs no such term:
    the spread of its draws holds it.)"""
    n = len(y_low)
    if n == 0:
        return EntityEstimate(math.nan, math.nan, None, math.nan, math.nan, 0)
    if census:
        lo, hi = float(y_low.sum()) / scale, float(y_high.sum()) / scale
        se, cl, ch = 0.0, lo, hi
        if within is not None and (within[0].sum() > 0 or within[1].sum() > 0):
            se_lo, se_hi = (math.sqrt(float(v.sum())) / abs(scale) for v in within)
            z = 1.959963984540054
            se, cl, ch = (se_lo if lo == hi else max(se_lo, se_hi)), lo - z * se_lo, hi + z * se_hi
    else:
        lo, hi = float(y_low.mean()) / scale, float(y_high.mean()) / scale
        se_lo = float(y_low.std(ddof=1)) / math.sqrt(n) / scale if n > 1 else math.inf
        se_hi = float(y_high.std(ddof=1)) / math.sqrt(n) / scale if n > 1 else math.inf
        t = _t(n)
        se = se_lo if lo == hi else max(se_lo, se_hi)
        cl, ch = lo - _hall(y_low, t, low=True) * se_lo, hi + _hall(y_high, t, low=False) * se_hi
        q, big = zero_events(n), largest / scale
        if not np.ptp(y_low) > 0:  # no spread seen below: what the draws not seen can hold
            cl = lo - q * (lo + big)
        if not np.ptp(y_high) > 0:
            ch = hi + q * (big - hi)
    if clip is not None:  # the range the number can take holds the truth: nothing outside it is shown
        lo, hi = min(max(lo, clip[0]), clip[1]), max(min(hi, clip[1]), clip[0])
        cl, ch = max(cl, clip[0]), min(ch, clip[1])
    return EntityEstimate(lo, hi, se, cl, ch, n)


@dataclass(frozen=True)
class EntityQuality:
    """ΔRecall, IQ and ΔPrecision estimated from an entity sample (see the module)."""

    path: Path
    design: str
    census: bool
    metrics: dict
    slices: dict
    anchors: int
    judged: int
    skipped_search: int
    unsure_members: int
    answers: dict
    jaccard_distance: float

    def _repr_html_(self) -> str:
        """The estimates in a notebook: the verdict, then each number with its interval."""
        import html

        from abcde.util import display  # lazy: the notebook only

        names = {"delta_recall": "ΔRecall (pointwise)", "iq": "IQ", "delta_precision": "ΔPrecision (cross-check)"}

        def pct(x) -> str:
            return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else _pct(x)

        rows = []
        for m, label in names.items():
            e = self.metrics[m]
            point = pct(e.estimate) if e.estimate is not None else f"{pct(e.low)} to {pct(e.high)}"
            rows.append([label, point, pct(e.ci_low), pct(e.ci_high)])
        how = (f"{self.design} design, {'a census of the affected items' if self.census else 'sampled'}; "
               f"{self.judged:,} of {self.anchors:,} anchors judged")
        return (f"<p>{html.escape(verdict(self))}</p>" +
                display.html_table(f"Entity completion ({how})", rows, ["", "estimate", "95% low", "95% high"]))

    def to_dict(self) -> dict:
        return {"kind": "entities", "sample_dir": str(self.path), "design": self.design, "census": self.census,
                **{m: self.metrics[m].to_dict() for m in METRICS},
                "slices": {col: [{"value": v, **{m: e.to_dict() for m, e in ms.items()}} for v, ms in vals]
                           for col, vals in self.slices.items()},
                "anchors": self.anchors, "anchors_judged": self.judged, "search_skipped": self.skipped_search,
                "unsure_members": self.unsure_members, "answers": self.answers,
                "jaccard_distance": self.jaccard_distance, "verdict": verdict(self)}


def _per_draw_var(sample: EntitySample, values: dict, sub: dict, metric: str, scale_of) -> tuple[np.ndarray, np.ndarray]:
    """Each draw's variance from its anchor's subsampled members (:func:`subsample_terms`; 0 for
    the others), on the scale of :func:`_per_draw`'s values, for the draws it keeps."""
    ids = sample.draws.column("item_id").to_pylist()
    p = sample.draws.column("p").to_pylist()
    w = dict(zip(sample.anchors.column("item_id").to_pylist(), sample.anchors.column("weight").to_pylist()))
    census = sample.metadata["census"]
    lo, hi = [], []
    for i, pk in zip(ids, p):
        if i not in values:
            continue
        f = scale_of(i) * float(w[i]) / (1.0 if census else pk)
        v = sub.get(i, {}).get(metric, (0.0, 0.0))
        lo.append(f * f * v[0])
        hi.append(f * f * v[1])
    return np.array(lo), np.array(hi)


def _per_draw(sample: EntitySample, values: dict, metric: str, scale_of) -> tuple[np.ndarray, np.ndarray]:
    ids = sample.draws.column("item_id").to_pylist()
    p = sample.draws.column("p").to_pylist()
    w = dict(zip(sample.anchors.column("item_id").to_pylist(), sample.anchors.column("weight").to_pylist()))
    lo, hi = [], []
    census = sample.metadata["census"]
    for i, pk in zip(ids, p):
        if i not in values:
            continue
        c = scale_of(i)
        f = c * float(w[i]) / (1.0 if census else pk)
        lo.append(f * values[i][metric][0])
        hi.append(f * values[i][metric][1])
    return np.array(lo), np.array(hi)


def estimate_entities(sample_dir, answers_rows=None, *, slice_by: Sequence[str] = (), where: str = "the answers",
                      weights_outside: dict | None = None, source: str | None = None) -> EntityQuality:
    """ΔRecall, IQ and ΔPrecision (and per slice of ``slice_by``) from an entity sample and its answers
    (rows ``{anchor, item_id, answer}``). Default: people's and the oracle's answers
    (:func:`~abcde.completion.judgements.load_answers`), or a model's when there are no others;
    ``source="model"``: the model's (``DIR/entity_model_judgements.parquet``) only."""
    s = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
    used = "given"
    if answers_rows is None:
        if source not in (None, "model", "person", "oracle"):
            raise InputError(f"Unknown answer source {source!r}: expected person, model or oracle.")
        answers_rows, where = ([], "") if source == "model" else load_answers(s)
        if source in ("person", "oracle"):  # the owner's settlements too: they count only where these differ
            answers_rows = [r for r in answers_rows if (r.get("source") or "person") in (source, OWNER_SOURCE)]
        used = source or "people and oracle"
        if not any(r.get("source") != OWNER_SOURCE for r in answers_rows) and source in (None, "model") and \
                (s.path / MODEL_FILE).is_file():
            answers_rows, where = pq.read_table(s.path / MODEL_FILE).to_pylist(), f"'{s.path / MODEL_FILE}'"
            used = "model"
    answers, counts = read_answers(answers_rows, s, where)
    counts = {**counts, "source": used}
    answers = {a: v for a, v in answers.items() if v.same or v.different or v.unsure or v.searched is not None}
    if weights_outside is None:
        weights_outside = outside_weights(s, answers)
    mem, facts = _members_of(s), _anchor_facts(s)  # read once for both
    values = anchor_values(s, answers, weights_outside, members=mem, facts=facts)
    sub, bias = subsample_terms(s, answers, weights_outside, members=mem, facts=facts)
    for a, bs in bias.items():  # a subsampled U(i): its ratio's jackknife bias taken away
        values[a] = {m: (lo - bs[m][0], hi - bs[m][1]) for m, (lo, hi) in values[a].items()}
    judged = len(values)
    m = s.metadata
    W, jd = float(m["total_weight"]), float(m["jaccard_distance"])
    census = bool(m["census"])
    if not census:
        sub = {}  # draws with replacement: their spread holds what the members' choice adds
    if census:  # a census not judged whole: each anchor not judged yet may be anything it can be (so far)
        values = {**_unjudged_bounds(s, set(values)), **values}
    metrics = {}
    for name in METRICS:
        lo, hi = _per_draw(s, values, name, lambda i: 1.0 / W)
        scale, clip = (jd, (-1.0, 1.0)) if name == "iq" else (1.0, (-1.0, 1.0))
        within = _per_draw_var(s, values, sub, name, lambda i: 1.0 / W) if sub else None
        metrics[name] = hansen_hurwitz(lo, hi, census=census, scale=scale if jd > 0 else math.nan, clip=clip,
                                       largest=largest_draw(m, name, 1.0 / W), within=within)
    slices = {}
    for col in slice_by:
        if col not in (m.get("slices") or {}):
            raise InputError(f"No slice weights for column {col!r} in this entity sample: draw it with --slice-by {col} "
                             f"(stored: {', '.join(map(repr, m.get('slices') or {})) or 'none'}).")
        key = lambda v: json.dumps(v, default=str, sort_keys=True)  # noqa: E731 - as metadata.json holds it
        value_of = {i: key(v) for i, v in zip(s.items.column("item_id").to_pylist(), s.items.column(col).to_pylist())}
        rows = []
        for entry in m["slices"][col]:
            v, wv = entry[0], float(entry[1])
            wjd = float(entry[2]) if len(entry) > 2 else 0.0  # the slice's Σ w·JD: its IQ's denominator
            here = {i: x for i, x in values.items() if value_of.get(i) == key(v)}
            ms = {}
            for name in ("delta_recall", "delta_precision", *(("iq",) if wjd > 0 else ())):
                c = 1.0 / (wjd if name == "iq" else wv)
                lo, hi = _per_draw(s, here, name, lambda i, c=c: c)
                within = _per_draw_var(s, here, sub, name, lambda i, c=c: c) if sub else None
                # draws outside the slice count 0 (the slice's sum over every draw)
                n_all = sum(1 for i in s.draws.column("item_id").to_pylist() if i in values)
                lo = np.concatenate([lo, np.zeros(n_all - len(lo))])
                hi = np.concatenate([hi, np.zeros(n_all - len(hi))])
                ms[name] = hansen_hurwitz(lo, hi, census=census, clip=(-1.0, 1.0), largest=largest_draw(m, name, c),
                                          within=within)
            rows.append((v, ms))
        slices[col] = rows
    unsure = sum(len(v.unsure) for v in answers.values())
    skipped = sum(1 for v in answers.values() if v.searched is not True)
    return EntityQuality(s.path, m["design"], census, metrics, slices, s.anchors.num_rows, judged, skipped,
                         unsure, counts, jd)


def _unjudged_bounds(s: EntitySample, judged: set) -> dict:
    """The bounds of an anchor no one judged: ΔRecall(i) in [−1, 1]; ``JD_B(i) − JD_E(i)`` within
    ±JD(i) (the triangle inequality); ΔPrecision(i) in ``[w_i/w(E(i)) − 1, 1 − w_i/w(B(i))]`` (the
    anchor is its own entity's, in both of its clusters)."""
    out = {}
    for r in s.anchors.to_pylist():
        i = r["item_id"]
        if i in judged:
            continue
        w, jd = float(r["weight"]), float(r["jd"])
        out[i] = {"delta_recall": (-1.0, 1.0), "iq": (-jd, jd),
                  "delta_precision": (w / float(r["exp_weight"]) - 1.0, 1.0 - w / float(r["base_weight"]))}
    return out


# ----------------------------------------------------------------------------- words
def _pct(x: float) -> str:
    s = f"{100 * x:+.1f}%"
    return "0.0%" if s in ("+0.0%", "-0.0%") else s


def _whole(x: float) -> str:
    s = f"{100 * x:.0f}%"
    return "0%" if s == "-0%" else s


def verdict(q: EntityQuality) -> str:
    """The sample's answer in words: the direction of ΔRecall (by its interval: above 0, below 0, or
    not known), its range when the answers cannot narrow it, and IQ."""
    dr, iq = q.metrics["delta_recall"], q.metrics["iq"]
    if dr.draws == 0:
        return f"No anchor of the {q.anchors:,} is judged yet: nothing is estimated."
    so_far = f" ({q.judged:,} of {q.anchors:,} anchors judged so far)" if q.judged < q.anchors else ""
    if dr.estimate is None:
        why = []
        if q.skipped_search:
            why.append(f"the search outside both clusters was skipped for {q.skipped_search:,} of {q.judged:,} anchors")
        if q.unsure_members:
            why.append(f"{q.unsure_members:,} members are unsure")
        if q.census and q.judged < q.anchors:
            why.append(f"{q.anchors - q.judged:,} of the {q.anchors:,} affected items are not judged yet")
        head = (f"ΔRecall lies between {_pct(dr.low)} and {_pct(dr.high)} [{_pct(dr.ci_low)}, {_pct(dr.ci_high)}]: "
                + ", and ".join(why))
    else:
        head = f"ΔRecall {_pct(dr.estimate)} [{_pct(dr.ci_low)}, {_pct(dr.ci_high)}]"
    if dr.ci_low > 0:
        way = "Exp's clusters hold more of each item's true entity than Base's"
    elif dr.ci_high < 0:
        way = "Exp's clusters hold less of each item's true entity than Base's"
    else:
        way = "whether Exp's clusters hold more of each item's true entity is not known from these answers"
    if math.isnan(iq.low):
        iq_text = "IQ is not defined (Base and Exp are the same clustering)"
    else:
        where = (f"IQ {_whole(iq.estimate)}" if iq.estimate is not None else
                 f"IQ lies between {_whole(iq.low)} and {_whole(iq.high)}")
        where += f" [{_whole(iq.ci_low)}, {_whole(iq.ci_high)}]"
        if iq.ci_low > 0:
            iq_text = (f"{where}: on balance the change moves toward the true entities"
                       + (f" (about {_whole(iq.estimate)} of it)" if iq.estimate is not None and iq.estimate > 0 else ""))
        elif iq.ci_high < 0:
            iq_text = f"{where}: on balance the change moves away from the true entities"
        else:
            iq_text = f"{where}: whether the change moves toward the true entities is not known from these answers"
    return f"{head}: {way}{so_far}. {iq_text}."


__all__ = ["AnchorAnswers", "EntityEstimate", "EntityQuality", "METRICS", "anchor_values", "estimate_entities",
           "hansen_hurwitz", "read_answers", "verdict"]
