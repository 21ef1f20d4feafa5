"""The recall lift under the paper's design (issue 38: "this holds for both estimators").

The paper's design draws every pair ∝ u_ij in one sequence; beside it, abcde now draws the agreed
pairs (together in both clusterings, ∝ w_i·w_j) with the share of the budget the stratified design
gives them. The lift reads the paper's draws post-stratified (split, merge, the intersection by its
sign) plus the agreed pairs; ΔPrecision and the Good/Bad rates never read the agreed pairs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

import reference as ref
from test_quality import dicts, oracle, world
from test_recall_lift import WORLDS, _check_honest, sim_world
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import link_masses, overall
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.quality.draw import extend_pair_sample
from abcde.quality.recall import estimate_recall_lift
from abcde.quality.exact_facts import recall_facts
from abcde.samples.facts import recall_items
from abcde.samples.sample_dir import PairSampleDir, write_sample_dir
from abcde.sampling.allocation import agreed_share, draws_by_stratum, split_budget
from abcde.sampling.pairs import pair_counts, sample_pairs, sample_pairs_many
from abcde.sampling.stratified import StratifiedSample, sample_agreed_many, sample_stratified


def _judged(draws, t, *, agreed_answer=None):
    need = set(p for p, n in zip(draws.column("pair_id").to_pylist(), draws.column("needs_judgement").to_pylist()) if n)
    got = {p: v for p, v in oracle(draws, t).items() if p in need}
    if agreed_answer is not None:
        for p, c in zip(draws.column("pair_id").to_pylist(), draws.column("class").to_pylist()):
            if c == "agreed":
                got[p] = agreed_answer
    return pa.table({"pair_id": list(got), "judgement": list(got.values())})


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    base, exp, items = world(100, seed=2)
    out = draw_pair_sample(base, exp, tmp_path_factory.mktemp("paper") / "s", budget=150, seed=3, items=items,
                           estimator="paper", hide=["entity"], slice_by=["kind"] if "kind" in items.column_names
                           else ())
    return base, exp, items, out


def test_the_paper_sample_holds_agreed_pairs_beside_its_own_draws(paper):
    base, exp, items, out = paper
    b, e, w, t = dicts(base, exp, items)
    s = PairSampleDir.read(out)
    meta = s.metadata
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    share = agreed_share(link_masses(d, o["total_weight"]))
    dp_budget, n_agreed = split_budget(150, share, pair_counts(d))
    assert meta["agreed_budget"] == n_agreed >= 2 and meta["agreed_share"] == share and "recall" in meta
    cls = s.draws.column("class").to_pylist()
    own = s.draws.filter(pa.array([c != "agreed" for c in cls], pa.bool_()))
    agreed = s.draws.filter(pa.array([c == "agreed" for c in cls], pa.bool_()))
    # The paper's own draws are exactly the paper's sample at its part of the budget ...
    alone = sample_pairs(d, budget=dp_budget, seed=3, total_weight=o["total_weight"]).draws
    assert own.column("pair_id").to_pylist() == alone.column("pair_id").to_pylist()
    assert own.column("item_a").to_pylist() == alone.column("item_a").to_pylist()
    # ... the agreed pairs those the stratified design draws at that budget and seed, ...
    strat = sample_stratified(d, budget=150, seed=3, total_weight=o["total_weight"])
    if strat.budgets["agreed"] == n_agreed:
        assert agreed.column("pair_id").to_pylist() == strat.draws["agreed"].column("pair_id").to_pylist()
    # ... pairs together in both clusterings, of n_agreed distinct pairs; the sample's budget is both parts'.
    assert all(b[x] == b[y] and e[x] == e[y] and x != y for x, y in zip(agreed.column("item_a").to_pylist(),
                                                                     agreed.column("item_b").to_pylist()))
    assert len(set(agreed.column("pair_id").to_pylist())) == n_agreed
    assert meta["judgeable_pairs"] == 150


def test_delta_precision_and_the_rates_never_read_the_agreed_pairs(paper):
    """The agreed pairs judged all "same" or all "different": ΔPrecision, the Good/Bad rates and the
    distances are the same to the last bit; the recall lift moves (it reads them)."""
    base, exp, items, out = paper
    t = dicts(base, exp, items)[3]
    draws = PairSampleDir.read(out).draws
    same = estimate_quality(out, _judged(draws, t, agreed_answer="same")).to_dict()
    diff = estimate_quality(out, _judged(draws, t, agreed_answer="different")).to_dict()
    for k in ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate"):
        assert same[k] == diff[k], k
    assert same["recall_lift"]["estimate"] != diff["recall_lift"]["estimate"]
    assert same["judged_pairs"] == diff["judged_pairs"] == 150  # the agreed pairs are counted as judged


def test_the_paper_lift_is_the_formulas_written_from_the_definitions(paper):
    """The lift of a fixed paper sample, computed here from the definitions pair by pair (the
    stratum of each draw from both clusterings, its reweighting factor from the cluster weights,
    the masses from the pair listing): abcde's at 1e-12."""
    base, exp, items, out = paper
    b, e, w, t = dicts(base, exp, items)
    W = sum(w.values())
    wb, we = {}, {}
    for i in b:
        wb[b[i]] = wb.get(b[i], 0.0) + w[i]
        we[e[i]] = we.get(e[i], 0.0) + w[i]
    frag = {}
    for i in b:
        frag[(b[i], e[i])] = frag.get((b[i], e[i]), 0.0) + w[i]

    def stratum(x, y):
        if b[x] == b[y] and e[x] == e[y]:
            B, E = wb[b[x]], we[e[x]]
            return "intersection+" if B > E * (1 + 1e-12) else "intersection-" if E > B * (1 + 1e-12) else "agreed"
        return "split" if b[x] == b[y] else "merge"

    mass = dict.fromkeys(("agreed", "intersection+", "intersection-", "split", "merge"), 0.0)
    for i in b:
        for j in b:
            if i != j and (b[i] == b[j] or e[i] == e[j]):
                mass[stratum(i, j)] += w[i] * w[j] / (W * W)
    draws = PairSampleDir.read(out).draws
    num = dict.fromkeys(mass, 0.0)
    den = dict.fromkeys(mass, 0.0)
    for x, y, self_ in zip(draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist(),
                           draws.column("is_self").to_pylist()):
        if self_:
            continue
        s = stratum(x, y)
        B, E = wb[b[x]] / W, we[e[x]] / W
        r = {"split": B, "merge": E, "agreed": 1.0}.get(s, B * E / abs(B - E) if s != "agreed" else 1.0)
        num[s] += r * (t[x] == t[y])
        den[s] += r
    T = {s: mass[s] * num[s] / den[s] if den[s] else 0.0 for s in mass}
    want = (T["merge"] - T["split"]) / (T["agreed"] + T["intersection+"] + T["intersection-"] + T["split"])
    got = estimate_quality(out, _judged(draws, t)).recall_lift
    assert got.value == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert got.method.startswith("the paper's draws")
    lo, hi = got.confidence_interval()
    assert lo <= got.value <= hi


def test_a_paper_sample_drawn_before_the_agreed_pairs_says_how_to_add_them(paper, tmp_path):
    base, exp, items, out = paper
    t = dicts(base, exp, items)[3]
    s = PairSampleDir.read(out)
    meta = dict(s.metadata)
    for k in ("recall", "agreed_share", "agreed_budget", "census", "sample_id", "format", "version", "abcde_version"):
        meta.pop(k, None)
    keep = pa.array([c != "agreed" for c in s.draws.column("class").to_pylist()], pa.bool_())
    old_draws = s.draws.filter(keep).drop_columns(["stratum", "pair_weight"])
    old_draws = old_draws.set_column(0, "draw", pa.array(range(old_draws.num_rows), pa.int64()))
    budget = len({p for p, n in zip(old_draws.column("pair_id").to_pylist(),
                                    old_draws.column("needs_judgement").to_pylist()) if n})
    meta.update(draws=old_draws.num_rows, judgeable_pairs=budget, budget=budget)
    old = write_sample_dir(tmp_path / "old", old_draws, s.items, meta, hidden=["entity"])
    rl = estimate_quality(old, _judged(old_draws, t)).to_dict()["recall_lift"]
    assert not rl["available"] and rl["estimate"] is None
    assert rl["command"].startswith(f"abcde pairs --extend {old} --budget ")
    extend_pair_sample(old, budget=int(rl["command"].rsplit(" ", 1)[1]), base=base, exp=exp, items=items)
    grown = PairSampleDir.read(old)
    assert grown.metadata["agreed_budget"] >= 2 and grown.metadata["dp_floor"] == budget
    own = [p for p, c in zip(grown.draws.column("pair_id").to_pylist(), grown.draws.column("class").to_pylist())
           if c != "agreed"]
    assert own[:old_draws.num_rows] == old_draws.column("pair_id").to_pylist()  # every earlier draw kept, first
    rl = estimate_quality(old, _judged(grown.draws, t)).to_dict()["recall_lift"]
    assert rl["available"] and rl["estimate"] is not None
    # And it grows again, continuing both parts.
    extend_pair_sample(old, budget=grown.metadata["budget"] + 20, base=base, exp=exp, items=items)
    again = PairSampleDir.read(old)
    assert again.metadata["dp_floor"] == budget and again.metadata["agreed_budget"] >= grown.metadata["agreed_budget"]


def test_the_judging_app_serves_the_paper_samples_agreed_pairs_at_their_share(paper):
    from abcde.judging.session import JudgingSession

    out = paper[3]
    s = JudgingSession(out)
    assert "agreed" in s._weight and s._pairs_in["agreed"] == PairSampleDir.read(out).metadata["agreed_budget"]
    own = sum(v for c, v in s._weight.items() if c != "agreed")
    n_own = sum(v for c, v in s._pairs_in.items() if c != "agreed")
    assert s._weight["agreed"] == pytest.approx(own * s._pairs_in["agreed"] / n_own)


@pytest.mark.slow
@pytest.mark.parametrize("kind,weighted", WORLDS, ids=[f"{k}{'-weighted' if w else ''}" for k, w in WORLDS])
def test_simulation_with_a_known_truth_paper_design(kind, weighted):
    """600 paper's-design samples of 300 pairs per world (its draws ∝ u_ij and the agreed pairs beside
    them, as abcde draws them), judged by the truth: unbiased (mean within 3 Monte Carlo SEs of the
    brute-force truth), SE within 10% of the spread, 95% intervals covering 93–97%, wrong-way
    intervals no more often than 2.5% (+ 3 MC SEs), every estimate inside its interval."""
    from abcde.core.diff import affected_items

    base, exp, items = sim_world(11, kind, weighted=weighted)
    b, e, w, t = dicts(base, exp, items)
    truth = ref.recall_lift(b, e, t, w)
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    W = o["total_weight"]
    ids = [r["item_id"] for r in d.engine.rows(affected_items(d).select("item_id"))]
    facts = recall_facts(d, ids, total_weight=W)
    dp_budget, n_agreed = split_budget(300, agreed_share(link_masses(d, W)), pair_counts(d))
    seeds = range(600)
    # one batch of the 600 seeds: the same samples as in batches (each seed's its own), fewer queries
    own = sample_pairs_many(d, budget=dp_budget, seeds=seeds, total_weight=W, batch=len(seeds))
    agreed, whole = sample_agreed_many(d, budget=n_agreed, seeds=seeds, total_weight=W, batch=len(seeds))
    rows = []
    for seed, ps in zip(seeds, own):
        strata = draws_by_stratum(ps.draws)
        strata["agreed"] = agreed[seed]
        ss = StratifiedSample(strata, ps.totals, 0.0, {}, "", frozenset({"agreed"} if whole else ()))
        judged = {}
        for dr in strata.values():
            judged.update(oracle(dr, t))
        est, _, _ = estimate_recall_lift(ss, judged, facts, method="sim")
        rows.append((est.value, est.standard_error, *est.confidence_interval()))
    _check_honest([(truth, rows)], f"paper {kind}{' weighted' if weighted else ''}")
