"""JaccardDistance decomposed into good and bad parts (issue 29; van Staden, "Decomposing the Jaccard
Distance and the Jaccard Index in ABCDE", 2024).

Exact parts (``abcde impact``): SplitDistance(i) = w(B∖E)/w(U), MergeDistance(i) = w(E∖B)/w(U), per
item, cluster, slice and overall, against ``tests/reference.py`` (which also checks them in
tests/test_impact_reference.py: identical clusterings give 0, swapping Base and Exp swaps them,
relabelling, shuffling and scaling the weights change nothing). Here: the identities

    SplitDistance + MergeDistance         = JaccardDistance
    GoodSplitDistance + BadSplitDistance  = SplitDistance
    GoodMergeDistance + BadMergeDistance  = MergeDistance
    GoodDistance + BadDistance            = JaccardDistance

at every level on random weighted cases, the good and bad parts summed by the reference from their
definitions; the population identity the estimator rests on (Σ_split pairs u_ij·w(B)/w(U)·1(i ≢ j) =
GoodSplitDistance(T)); the estimator's formulas at 1e-12; a census judged whole gives the exact
values; and simulations with a known (brute-force) truth for both designs and a slice: the estimates
are unbiased, their SEs the spread, their 95% intervals cover 93–97% of the time, and the same
check fails when the estimates are 5% off.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import abcde
import reference as ref
import simcheck as sc
from abcde.cli import main
from abcde.core.diff import affected_items, build_diff
from abcde.core.inputs import Inputs
from abcde.errors import InputError
from abcde.metrics.impact import overall
from abcde.quality import draw_pair_sample, estimate_quality, oracle_judge
from abcde.samples.facts import DistanceFacts
from abcde.quality.exact_facts import distance_facts
from abcde.quality.distances import estimate_distances_paper, estimate_distances_stratified, sum_estimate
from abcde.quality.result import Estimate, quantile
from abcde.sampling.stratified import StratifiedSample
from strategies import attribute_column, clusterings
from test_impact_reference import by_key, clustering_df, items_df
from test_quality import dicts, world

PARTS = ("good_split_distance", "bad_split_distance", "good_merge_distance", "bad_merge_distance")
SUMS = ("good_distance", "bad_distance")


def close(x, tol=1e-9):
    return pytest.approx(x, rel=tol, abs=tol)


def with_sums(t: dict) -> dict:
    """The reference's lifted parts and their sums GoodDistance, BadDistance."""
    return {**t, "good_distance": t["good_split_distance"] + t["good_merge_distance"],
            "bad_distance": t["bad_split_distance"] + t["bad_merge_distance"]}


def reference_shares(base: dict, exp: dict, w: dict) -> dict:
    """item -> (w(B)/w(B ∪ E), w(E)/w(B ∪ E)), from the sets."""
    bcl, ecl = ref.clusters(base), ref.clusters(exp)
    out = {}
    for i in base:
        B, E = bcl[base[i]], ecl[exp[i]]
        u = ref.weight_of(B | E, w)
        out[i] = (ref.weight_of(B, w) / u, ref.weight_of(E, w) / u)
    return out


# ----------------------------------------------------------------------------- exact identities
def test_hand_example():
    """Base {a,b,c},{d}; Exp {a,b},{c,d}, unit weights (test_impact_reference's hand example):
    SplitDistance a, b = 1/3, c = 2/4, d = 0; MergeDistance c = 1/4, d = 1/2; overall 7/24 and
    3/16, adding up to JaccardDistance 23/48."""
    base, exp = {"a": 1, "b": 1, "c": 1, "d": 2}, {"a": "x", "b": "x", "c": "y", "d": "y"}
    res = abcde.impact(clustering_df(base), clustering_df(exp))
    assert (res.split_distance, res.merge_distance) == (close(7 / 24), close(3 / 16))
    assert res.split_distance + res.merge_distance == close(res.jaccard_distance, 1e-12)
    per = by_key(res.per_item(), "item_id")
    want = {"a": (1 / 3, 0), "b": (1 / 3, 0), "c": (1 / 2, 1 / 4), "d": (0, 1 / 2)}
    for i, (s, m) in want.items():
        assert (per[i]["split_distance"], per[i]["merge_distance"]) == (close(s), close(m)), i
    assert per["a"]["merge_distance"] == 0.0 and per["d"]["split_distance"] == 0.0  # exactly, not a residue
    d = res.to_dict()
    assert (d["split_distance"], d["merge_distance"]) == (close(7 / 24), close(3 / 16))


@st.composite
def cases(draw):
    """(base, exp, weights, truth, attribute): a random weighted change and a random truth."""
    base, exp, w = draw(clusterings())
    items = list(base)
    truth = {i: draw(st.integers(min_value=0, max_value=3)) for i in items}
    attr = draw(attribute_column(items))
    return base, exp, w, truth, attr


@settings(max_examples=15, deadline=None)
@given(cases())
def test_identities_at_every_level_against_the_reference(case):
    """The library's SplitDistance and MergeDistance (per item, cluster, slice, overall) against the
    reference, adding up to JaccardDistance; the reference's good and bad parts of a random truth
    adding up to them at every level; and the library's shares turn the split (merge) pairs'
    weights u_ij into the good and bad parts' weights (the estimator's population identity)."""
    base, exp, w, truth, attr = case
    res = abcde.impact(clustering_df(base), clustering_df(exp), items=items_df(w, src=attr), slice_by=["src"])
    rows = ref.distance_parts(base, exp, w, truth)
    levels = {"overall": [list(base)]}
    levels["base cluster"] = [list(m) for m in ref.clusters(base).values()]
    levels["exp cluster"] = [list(m) for m in ref.clusters(exp).values()]
    levels["slice"] = [[i for i in base if attr[i] == v] for v in set(attr.values())]
    for level, groups in levels.items():
        for members in groups:
            t = with_sums(ref.lifted_distance_parts(base, exp, w, truth, items=members, per_item=rows))
            jd = ref.lifted_jaccard_distance(base, exp, w, members)
            assert t["split_distance"] + t["merge_distance"] == close(jd, 1e-12), level
            assert t["good_split_distance"] + t["bad_split_distance"] == close(t["split_distance"], 1e-12), level
            assert t["good_merge_distance"] + t["bad_merge_distance"] == close(t["merge_distance"], 1e-12), level
            assert t["good_distance"] + t["bad_distance"] == close(jd, 1e-12), level
            for m in PARTS + SUMS:
                assert -1e-15 <= t[m] <= jd + 1e-12, (level, m)
    # the library, level by level
    o = ref.lifted(base, exp, w)
    assert (res.split_distance, res.merge_distance) == (close(o["split_distance"]), close(o["merge_distance"]))
    assert res.split_distance + res.merge_distance == close(res.jaccard_distance, 1e-12)
    for r in res.per_item().to_pylist():
        i = r["item_id"]
        assert (r["split_distance"], r["merge_distance"]) == (close(rows[i]["split_distance"]),
                                                              close(rows[i]["merge_distance"]))
        assert r["split_distance"] + r["merge_distance"] == close(r["jaccard_distance"], 1e-12)
    for side, clustering in (("base", base), ("exp", exp)):
        want = ref.per_cluster(base, exp, w, side)
        for r in res.per_cluster(side).to_pylist():
            assert r["split_distance"] == close(want[r["cluster_id"]]["split_distance"]), side
            assert r["merge_distance"] == close(want[r["cluster_id"]]["merge_distance"]), side
            assert r["split_distance"] + r["merge_distance"] == close(r["jaccard_distance"], 1e-12)
    want = ref.per_slice(base, exp, w, attr)
    for r in res.slices["src"]:
        assert (r["split_distance"], r["merge_distance"]) == (close(want[r["src"]]["split_distance"]),
                                                              close(want[r["src"]]["merge_distance"]))
    # Σ_{split pairs} u_ij · w(B)/w(U) · 1(i ≢ j) = GoodSplitDistance(T), with the library's shares
    facts = distance_facts(res.diff, list(base))
    mine = reference_shares(base, exp, w)
    t = with_sums(ref.lifted_distance_parts(base, exp, w, truth, per_item=rows))
    got = dict.fromkeys(PARTS, 0.0)
    for p in ref.all_pairs(base, exp, w):
        if p["class"] not in ("split", "merge"):
            continue
        col = 0 if p["class"] == "split" else 1
        share = facts.shares[p["i"]][col]
        assert share == close(mine[p["i"]][col], 1e-12)
        same = truth[p["i"]] == truth[p["j"]]
        good = (not same) if p["class"] == "split" else same
        got[f"{'good' if good else 'bad'}_{p['class']}_distance"] += p["u"] * share
    for m in PARTS:
        assert got[m] == close(t[m]), m
    assert (facts.split_distance, facts.merge_distance) == (close(t["split_distance"]), close(t["merge_distance"]))


@settings(max_examples=30, deadline=None)
@given(cases())
def test_swapping_base_and_exp_turns_good_into_bad(case):
    """With Base and Exp swapped, SplitDistance and MergeDistance swap, and so do the good split
    and the bad merge parts (undoing a good split is a bad merge): GoodDistance becomes BadDistance.
    Identical clusterings: every part 0."""
    base, exp, w, truth, _ = case
    ab = with_sums(ref.lifted_distance_parts(base, exp, w, truth))
    ba = with_sums(ref.lifted_distance_parts(exp, base, w, truth))
    pairs = {"split_distance": "merge_distance", "good_split_distance": "bad_merge_distance",
             "bad_split_distance": "good_merge_distance", "good_distance": "bad_distance"}
    for a, b in pairs.items():
        assert ba[a] == close(ab[b], 1e-12) and ba[b] == close(ab[a], 1e-12), a
    same = with_sums(ref.lifted_distance_parts(base, base, w, truth))
    assert all(v == 0 for v in same.values())
    scaled = with_sums(ref.lifted_distance_parts(base, exp, {i: 3.5 * v for i, v in w.items()}, truth))
    for m, v in ab.items():
        assert scaled[m] == close(v, 1e-12), m


# ----------------------------------------------------------------------------- the estimator's formulas
def _strat_sample(split_rows, merge_rows) -> StratifiedSample:
    def table(rows, cls):
        return pa.table({"pair_id": pa.array([r[0] for r in rows], pa.string()),
                         "item_a": pa.array([r[1] for r in rows], pa.string()),
                         "item_b": pa.array([r[2] for r in rows], pa.string()),
                         "class": pa.array([cls] * len(rows), pa.string())})

    empty = table([], "stable")
    return StratifiedSample({"split": table(split_rows, "split"), "merge": table(merge_rows, "merge"),
                             "intersection+": empty, "intersection-": empty}, {}, 0.0,
                            {"split": 1, "merge": 1, "intersection+": 0, "intersection-": 0}, "proportional")


def test_estimates_and_standard_errors_are_the_formulas():
    """Random judged draws with random shares, and unsure ones dropped: the estimate, SE, interval
    and feasible range of each part are the module's formulas written out here (1e-12)."""
    rng = np.random.default_rng(3)
    for case in range(20):
        n_s, n_m = int(rng.integers(2, 40)), int(rng.integers(2, 40))
        shares = {f"i{k}": (float(rng.uniform(0.2, 1)), float(rng.uniform(0.2, 1))) for k in range(30)}
        facts = DistanceFacts(float(rng.uniform(0.01, 0.3)), float(rng.uniform(0.01, 0.3)), shares)
        answers = {}
        rows = {}
        for kind, n in (("split", n_s), ("merge", n_m)):
            rows[kind] = []
            for k in range(n):
                a, b = f"i{rng.integers(30)}", f"j{k}"
                pid = f"{kind}{k}"
                answers[pid] = rng.choice(["same", "different", "unsure"], p=[0.45, 0.45, 0.1])
                rows[kind].append((pid, a, b))
        got = estimate_distances_stratified(_strat_sample(rows["split"], rows["merge"]), answers, facts,
                                            method="m").to_dict()
        for kind, total, col, good_same in (("split", facts.split_distance, 0, False),
                                            ("merge", facts.merge_distance, 1, True)):
            used = [(shares[a][col], 1.0 if answers[p] == "same" else 0.0) for p, a, _ in rows[kind]
                    if answers[p] != "unsure"]
            r = np.array([x for x, _ in used])
            same = np.array([y for _, y in used])
            n = len(r)
            p_same = float((r * same).sum() / r.sum())
            var = n / (n - 1) * float((r * r * (same - p_same) ** 2).sum()) / float(r.sum()) ** 2
            n_eff = p_same * (1 - p_same) / var if 0 < p_same < 1 else r.sum() ** 2 / (r * r).sum()
            for good in (True, False):
                share = p_same if good == good_same else 1 - p_same
                pt = (n_eff * share + 2) / (n_eff + 4)
                half = quantile(n) * math.sqrt(pt * (1 - pt) / (n_eff + 4))
                e = got[f"{'good' if good else 'bad'}_{kind}_distance"]
                assert e["estimate"] == pytest.approx(total * share, rel=1e-12, abs=1e-15), (case, kind)
                assert e["std_err"] == pytest.approx(total * math.sqrt(var), rel=1e-12, abs=1e-15), (case, kind)
                assert e["ci_low"] == pytest.approx(max(total * (pt - 0) - total * half, 0.0), rel=1e-12, abs=1e-15)
                assert e["ci_high"] == pytest.approx(min(total * pt + total * half, total), rel=1e-12, abs=1e-15)
                assert e["range"] == [0.0, total] and e["n_judgements"] == n
            g, b = got[f"good_{kind}_distance"], got[f"bad_{kind}_distance"]
            assert g["estimate"] + b["estimate"] == pytest.approx(total, rel=1e-12)
        for s in SUMS:
            parts = [got[f"{s.split('_')[0]}_{k}_distance"] for k in ("split", "merge")]
            assert got[s]["estimate"] == pytest.approx(sum(p["estimate"] for p in parts), rel=1e-12)
            assert got[s]["std_err"] == pytest.approx(math.hypot(*(p["std_err"] for p in parts)), rel=1e-12)
            assert got[s]["n_judgements"] == sum(p["n_judgements"] for p in parts)


def test_intervals_stay_inside_the_feasible_range_and_edge_cases_are_explained():
    """All judgements alike (SE 0) still give an interval of some width inside [0, total]; one
    judgement: no SE, an interval; none: undefined with a note; no splits: exactly 0."""
    facts = DistanceFacts(0.2, 0.0, {"a": (0.5, 0.5), "b": (1.0, 1.0)})
    sample = _strat_sample([(f"p{k}", "ab"[k % 2], f"x{k}") for k in range(1, 13)], [])
    d = estimate_distances_stratified(sample, {f"p{k}": "different" for k in range(1, 13)}, facts, method="m")
    g, b = d.good_split_distance, d.bad_split_distance
    assert (g.value, g.standard_error, b.value) == (pytest.approx(0.2), 0.0, 0.0)
    lo, hi = g.confidence_interval()
    assert 0.0 < lo < hi == pytest.approx(0.2)
    assert b.confidence_interval()[0] == 0.0 < b.confidence_interval()[1]
    assert d.good_merge_distance.value == 0.0 and "no merges" in d.good_merge_distance.note
    assert d.good_distance.value == pytest.approx(0.2) and d.bad_distance.value == 0.0
    one = estimate_distances_stratified(sample, {"p2": "same"}, facts, method="m").good_split_distance
    assert one.value == 0.0 and math.isnan(one.standard_error) and one.n_judgements == 1
    assert all(math.isfinite(x) for x in one.confidence_interval())
    none = estimate_distances_stratified(sample, {"p1": "unsure"}, facts, method="m").to_dict()
    assert none["good_split_distance"]["estimate"] is None and "no judged split pairs" in none[
        "good_split_distance"]["note"]
    assert none["good_distance"]["estimate"] is None and none["good_distance"]["note"]
    json.dumps(none, allow_nan=False)
    rng = np.random.default_rng(1)
    for _ in range(200):
        facts = DistanceFacts(float(rng.uniform(0, 0.5)), float(rng.uniform(0, 0.5)),
                              {f"i{k}": (float(rng.uniform(0.01, 1)), float(rng.uniform(0.01, 1))) for k in range(5)})
        n = int(rng.integers(1, 6))
        rows = [(f"p{k}", f"i{rng.integers(5)}", "x") for k in range(n)]
        answers = {p: rng.choice(["same", "different"]) for p, _, _ in rows}
        d = estimate_distances_stratified(_strat_sample(rows, rows), answers, facts, method="m")
        for name, e in d.estimates().items():
            lo, hi = e.confidence_interval()
            assert e.bounds[0] - 1e-15 <= lo <= e.value + 1e-12 and e.value - 1e-12 <= hi <= e.bounds[1] + 1e-15, name


def test_sum_estimate_adds_variances_and_ranges():
    a = Estimate("a", 0.1, 0.01, 10, bounds=(0.0, 0.2), centre=0.11, interval_se=0.012)
    b = Estimate("b", 0.05, 0.02, 5, bounds=(0.0, 0.1))
    s = sum_estimate("s", a, b)
    assert (s.value, s.n_judgements, s.bounds) == (pytest.approx(0.15), 15, (0.0, pytest.approx(0.3)))
    assert s.standard_error == pytest.approx(math.hypot(0.01, 0.02))
    assert s.centre == pytest.approx(0.16) and s.interval_se == pytest.approx(math.hypot(0.012, 0.02))


# ----------------------------------------------------------------------------- files, census, CLI
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A small world on disk: Base, Exp and items (with the true entity and a slice column)."""
    d = tmp_path_factory.mktemp("distances")
    base, exp, items = world(60, seed=4)
    for name, t in (("b", base), ("e", exp), ("i", items)):
        pq.write_table(t, d / f"{name}.parquet")
    return d, base, exp, items


def _truths(base, exp, items):
    b, e, w, t = dicts(base, exp, items)
    kind = dict(zip(items.column("item_id").to_pylist(), items.column("kind").to_pylist()))
    rows = ref.distance_parts(b, e, w, t)
    out = {"overall": with_sums(ref.lifted_distance_parts(b, e, w, t, per_item=rows))}
    for v in set(kind.values()):
        out[v] = with_sums(ref.lifted_distance_parts(b, e, w, t, items=[i for i in b if kind[i] == v],
                                                     per_item=rows))
    return out


def test_a_census_judged_whole_gives_the_exact_parts(inputs, tmp_path):
    """A stratified sample whose budget covers every pair lists each stratum whole; judged by the
    oracle, every part is the brute-force value (overall and per slice) with SE 0; with some pairs
    unsure, the truth lies inside each part's range and interval."""
    d, base, exp, items = inputs
    out = draw_pair_sample(d / "b.parquet", d / "e.parquet", tmp_path / "all", items=d / "i.parquet", budget=100_000,
                           seed=1, slice_by=["kind"])
    oracle_judge(out, "entity")
    q = estimate_quality(out, slice_by=["kind"])
    assert q.exact and q.distances is not None
    truth = _truths(base, exp, items)
    dd = q.to_dict()["distances"]
    assert "census of split, merge" in dd["method"]
    for m in PARTS + SUMS:
        assert dd[m]["estimate"] == close(truth["overall"][m]), m
        assert dd[m]["std_err"] == 0.0 and dd[m]["ci_low"] == close(dd[m]["ci_high"], 1e-12), m
    for row in dd["slices"]["kind"]:
        for m in PARTS + SUMS:
            assert row[m]["estimate"] == close(truth[row["value"]][m]), (row["value"], m)
        assert row["jaccard_distance"] == close(truth[row["value"]]["split_distance"]
                                                + truth[row["value"]]["merge_distance"])
    # a third of the pairs unsure: estimated from the judged ones, the truth inside the range
    from abcde.samples.sample_dir import PairSampleDir

    s = PairSampleDir.read(out)
    store = abcde.quality.load_judgements([out / "judgements.sqlite"], pair_ids=s.judgeable_ids(),
                                          id_type=s.metadata["id_type"]).by_pair
    rows = [{"pair_id": p, "judgement": "unsure" if k % 3 == 0 else a}
            for k, (p, a) in enumerate(sorted(store.items()))]
    part = estimate_quality(out, [pa.Table.from_pylist(rows)]).to_dict()["distances"]
    for m in PARTS:
        lo, hi = part[m]["range"]
        assert lo - 1e-12 <= truth["overall"][m] <= hi + 1e-12, m
        assert lo - 1e-12 <= part[m]["ci_low"] <= part[m]["estimate"] <= part[m]["ci_high"] <= hi + 1e-12, m


@pytest.fixture(scope="module")
def judged(inputs, tmp_path_factory):
    """Both designs' samples of the small world, judged by the oracle, drawn through the CLI."""
    d, *_ = inputs
    out = {}
    r = CliRunner()
    for est in ("stratified", "paper"):
        p = tmp_path_factory.mktemp("s") / est
        got = r.invoke(main, ["pairs", "--base", str(d / "b.parquet"), "--exp", str(d / "e.parquet"), "--items",
                              str(d / "i.parquet"), "--budget", "80", "--seed", "2", "--estimator", est,
                              "--slice-by", "kind", "--out", str(p)])
        assert got.exit_code == 0, got.output
        assert r.invoke(main, ["judge", "oracle", str(p), "--oracle-column", "entity"]).exit_code == 0
        out[est] = p
    return out


@pytest.mark.parametrize("est", ["stratified", "paper"])
def test_quality_json_carries_the_parts(judged, inputs, est):
    """``abcde quality DIR --json``: the exact parts, the four estimates and their sums with
    intervals, the identities, per slice; the terminal shows the panel."""
    r = CliRunner()
    got = r.invoke(main, ["quality", str(judged[est]), "--slice-by", "kind", "--json"])
    assert got.exit_code == 0, got.output
    q = json.loads(got.output)
    dd = q["distances"]
    assert dd["available"] and dd["method"].startswith(est)
    imp = abcde.impact(str(inputs[0] / "b.parquet"), str(inputs[0] / "e.parquet"), items=str(inputs[0] / "i.parquet"))
    assert (dd["split_distance"], dd["merge_distance"]) == (close(imp.split_distance), close(imp.merge_distance))
    assert dd["jaccard_distance"] == close(imp.jaccard_distance)
    for m in PARTS + SUMS:
        e = dd[m]
        assert set(e) >= {"estimate", "std_err", "ci_low", "ci_high", "n_judgements", "range"}
        assert e["range"][0] <= e["ci_low"] <= e["estimate"] <= e["ci_high"] <= e["range"][1]
    ids = dd["identities"]
    assert ids["good_plus_bad_split"] == close(dd["split_distance"], 1e-12)
    assert ids["good_plus_bad_merge"] == close(dd["merge_distance"], 1e-12)
    assert ids["good_plus_bad"] == close(dd["jaccard_distance"], 1e-12)
    assert {row["value"] for row in dd["slices"]["kind"]} == {"a", "b"}
    for row in dd["slices"]["kind"]:
        assert row["good_distance"]["estimate"] + row["bad_distance"]["estimate"] == close(row["jaccard_distance"])
    text = r.invoke(main, ["quality", str(judged[est]), "--slice-by", "kind"]).output
    assert "JaccardDistance = good + bad" in text and "GoodDistance" in text and "SplitDistance" in text
    assert "distances" not in json.loads(r.invoke(main, ["quality", str(judged[est]), "--json",
                                                         "--no-distances"]).output)


def test_impact_json_carries_split_and_merge_distance(inputs):
    d = inputs[0]
    got = CliRunner().invoke(main, ["impact", "--base", str(d / "b.parquet"), "--exp", str(d / "e.parquet"),
                                    "--items", str(d / "i.parquet"), "--slice-by", "kind", "--top", "3", "--json"])
    assert got.exit_code == 0, got.output
    j = json.loads(got.output)
    assert j["split_distance"] + j["merge_distance"] == close(j["jaccard_distance"], 1e-12)
    for r in j["top_clusters"]["interleaved"] + j["slices"]["kind"]:
        assert r["split_distance"] + r["merge_distance"] == close(r["jaccard_distance"], 1e-12)
    text = CliRunner().invoke(main, ["impact", "--base", str(d / "b.parquet"), "--exp", str(d / "e.parquet")]).output
    assert "= SplitDistance + MergeDistance" in text


def _old_format(sample_dir, out):
    """A copy of a pair sample as an abcde before this one wrote it: without the exact distances it
    now stores at the draw (its judgements kept)."""
    from abcde.samples.sample_dir import PairSampleDir, write_sample_dir

    shutil.copytree(sample_dir, out)
    s = PairSampleDir.read(out)
    meta = {k: v for k, v in s.metadata.items() if k not in ("files", "draws_digest", "meta_digest", "sample_id",
                                                             "format", "version", "blind", "replaced", "distances")}
    slices = pq.read_table(out / "slices.parquet") if (out / "slices.parquet").exists() else None
    write_sample_dir(out, s.draws, s.items, meta, slices=slices, hidden=s.hidden, show_ids=s.show_ids)
    assert "distances" not in PairSampleDir.read(out).metadata
    return out


def _inputs_in(d, where):
    """The small world's three input files, copied into ``where`` (a test may delete or change them)."""
    where.mkdir(exist_ok=True)
    for name in ("b", "e", "i"):
        shutil.copy(d / f"{name}.parquet", where / f"{name}.parquet")
    return where


def _pairs(where, out, *more):
    got = CliRunner().invoke(main, ["pairs", "--base", str(where / "b.parquet"), "--exp", str(where / "e.parquet"),
                                    "--items", str(where / "i.parquet"), "--slice-by", "kind", "--out", str(out),
                                    *map(str, more)])
    assert got.exit_code == 0, got.output
    return out


def _same_facts(got: DistanceFacts, want: DistanceFacts) -> None:
    assert (got.split_distance, got.merge_distance) == (close(want.split_distance, 1e-12),
                                                        close(want.merge_distance, 1e-12))
    assert set(got.shares) == set(want.shares)
    for i, (a, b) in want.shares.items():
        assert got.shares[i] == (close(a, 1e-12), close(b, 1e-12)), i
    assert set(got.slices) == set(want.slices)
    for col, rows in want.slices.items():
        assert set(got.slices[col]) == set(rows)
        for v, t in rows.items():
            assert got.slices[col][v] == tuple(close(x, 1e-12) for x in t), (col, v)


def test_a_sample_stores_its_exact_distances_and_quality_reads_no_input(inputs, tmp_path):
    """``abcde pairs`` stores SplitDistance(T), MergeDistance(T), the shares of both items of every
    split and merge draw and, per slice value, weight(I), SplitDistance(I), MergeDistance(I): those
    computed from the diff (1e-12), no more items than that. ``abcde quality`` then uses them with the
    input files deleted (nothing is read), and gives the estimates a diff of the inputs gives."""
    from abcde.samples.facts import STORED, drawn_items, stored_facts
    from abcde.samples.sample_dir import PairSampleDir

    d, base, exp, items = inputs
    where = _inputs_in(d, tmp_path / "in")
    for est in ("stratified", "paper"):
        out = _pairs(where, tmp_path / est, "--budget", 80, "--seed", 2, "--estimator", est)
        oracle_judge(out, "entity")
        s = PairSampleDir.read(out)
        ids = drawn_items(s.draws)
        kept = s.metadata["distances"]
        assert set(kept) == {"split_distance", "merge_distance", "shares", "slices"}
        assert set(kept["shares"]) == {str(i) for i in ids}  # both items of the split and merge draws, no more
        want = distance_facts(build_diff(Inputs(base, exp, items=items)), ids, slice_by=["kind"])
        _same_facts(stored_facts(s.metadata, ids, ["kind"]), want)
    res = abcde.impact(base, exp, items=items)  # the same inputs, as tables
    for name in ("b", "e", "i"):
        (where / f"{name}.parquet").unlink()
    for est in ("stratified", "paper"):
        out = tmp_path / est
        got = CliRunner().invoke(main, ["quality", str(out), "--slice-by", "kind", "--json"])
        assert got.exit_code == 0, got.output
        dd = json.loads(got.output)["distances"]
        assert dd["available"] and dd["source"] == STORED
        # the same estimates as from the inputs' diff (an old sample's way)
        old = estimate_quality(_old_format(out, tmp_path / f"{est}-old"), slice_by=["kind"], diff=res).to_dict()
        assert old["distances"]["source"] == "the inputs given with the sample"
        for m in PARTS + SUMS:
            for key in ("estimate", "std_err", "ci_low", "ci_high"):
                assert dd[m][key] == close(old["distances"][m][key], 1e-12), (est, m, key)
        for row, orow in zip(dd["slices"]["kind"], old["distances"]["slices"]["kind"]):
            assert row["good_distance"]["estimate"] == close(orow["good_distance"]["estimate"], 1e-12)


def test_integer_item_ids_are_stored_as_json_keys_and_read_back(tmp_path):
    """Item ids that are integers are JSON keys (strings) in the metadata and integers again when
    read: a sample drawn from tables in memory (nothing to read again) has its distances."""
    from abcde.samples.facts import STORED, drawn_items, stored_facts
    from abcde.samples.sample_dir import PairSampleDir

    base, exp, items = world(40, seed=6)

    def ints(t):
        return t.set_column(0, "item_id", pa.array([int(x[1:]) for x in t.column("item_id").to_pylist()], pa.int64()))

    base, exp, items = ints(base), ints(exp), ints(items)
    out = draw_pair_sample(base, exp, tmp_path / "s", items=items, budget=60, seed=1, slice_by=["kind"])
    oracle_judge(out, "entity")
    s = PairSampleDir.read(out)
    assert s.metadata["id_type"] == "integer" and all(k.isdigit() for k in s.metadata["distances"]["shares"])
    ids = drawn_items(s.draws)
    got = stored_facts(s.metadata, ids, ["kind"])
    assert all(isinstance(i, int) for i in got.shares)
    _same_facts(got, distance_facts(build_diff(Inputs(base, exp, items=items)), ids, slice_by=["kind"]))
    q = estimate_quality(out, slice_by=["kind"])
    assert q.distances is not None and q.distances.source == STORED
    assert q.distances.good_distance.value == close(estimate_quality(
        _old_format(out, tmp_path / "old"), diff=abcde.impact(base, exp, items=items)).distances.good_distance.value,
        1e-12)


def test_extending_a_sample_keeps_its_stored_distances_right(inputs, tmp_path):
    """``pairs --extend`` draws again through the same code: the stored facts cover every split and
    merge draw of the grown sample and are those of the diff (1e-12)."""
    from abcde.samples.facts import drawn_items, stored_facts
    from abcde.samples.sample_dir import PairSampleDir

    d, base, exp, items = inputs
    where = _inputs_in(d, tmp_path / "in")
    out = _pairs(where, tmp_path / "s", "--budget", 30, "--seed", 4)
    oracle_judge(out, "entity")
    before = set(PairSampleDir.read(out).metadata["distances"]["shares"])
    got = CliRunner().invoke(main, ["pairs", "--extend", str(out), "--budget", "120"])
    assert got.exit_code == 0, got.output
    s = PairSampleDir.read(out)
    ids = drawn_items(s.draws)
    assert before < set(s.metadata["distances"]["shares"]) == {str(i) for i in ids}
    _same_facts(stored_facts(s.metadata, ids, ["kind"]),
                distance_facts(build_diff(Inputs(base, exp, items=items)), ids, slice_by=["kind"]))
    for name in ("b", "e", "i"):
        (where / f"{name}.parquet").unlink()
    oracle_judge(out, "entity")
    assert estimate_quality(out, slice_by=["kind"]).distances is not None


def test_an_older_sample_reads_its_inputs_again_and_says_why_not(inputs, judged, tmp_path):
    """A sample drawn before abcde stored the exact distances: read from the recorded inputs when
    their fingerprints are unchanged; a changed or moved input leaves every other estimate and says
    why; a diff of the inputs is used, one of other inputs refused (also for a sample that stores
    them, when its totals are at hand)."""
    from abcde.samples.facts import STORED

    d, base, exp, items = inputs
    old = _old_format(judged["stratified"], tmp_path / "old")
    q = estimate_quality(old).to_dict()
    assert q["distances"]["available"] and "read again" in q["distances"]["source"]
    for name in ("b", "e", "i"):
        shutil.copy(d / f"{name}.parquet", tmp_path / f"{name}.parquet")
    # a changed input: refused by its fingerprint, the rest estimated
    other = world(60, seed=5)
    pq.write_table(other[0], d / "b2.parquet")
    saved = (d / "b.parquet").read_bytes()
    try:
        (d / "b.parquet").write_bytes((d / "b2.parquet").read_bytes())
        q = estimate_quality(old).to_dict()
        assert q["distances"] == {"available": False, "note": q["distances"]["note"]}
        assert "differs from the file it was drawn from" in q["distances"]["note"]
        assert q["delta_precision"]["estimate"] is not None
        text = CliRunner().invoke(main, ["quality", str(old)]).output
        assert "JaccardDistance = good + bad: not estimated" in text
        # a sample that stores its distances reads nothing: the changed input does not matter
        assert estimate_quality(judged["stratified"]).distances.source == STORED
    finally:
        (d / "b.parquet").write_bytes(saved)
    res = abcde.impact(str(tmp_path / "b.parquet"), str(tmp_path / "e.parquet"), items=str(tmp_path / "i.parquet"))
    assert estimate_quality(old, diff=res).distances.source == "the inputs given with the sample"
    wrong = abcde.impact(other[0], other[1], items=other[2])
    for sample in (old, judged["stratified"]):
        with pytest.raises(InputError, match="not those the pair sample"):
            estimate_quality(sample, diff=wrong)
        with pytest.raises(InputError, match="diff must be a Diff or an ImpactResult"):
            estimate_quality(sample, diff="nope")


def test_tables_in_memory_and_precision_samples(tmp_path):
    """Drawn from tables in memory: the stored facts give the distances; an older such sample cannot
    read its inputs again and says to pass the diff. One clustering's Precision: no distances, none
    stored."""
    from abcde.samples.sample_dir import PairSampleDir

    base, exp, items = world(30, seed=2)
    out = draw_pair_sample(base, exp, tmp_path / "mem", items=items, budget=20, seed=1)
    oracle_judge(out, "entity")
    assert estimate_quality(out).distances is not None
    old = _old_format(out, tmp_path / "old")
    q = estimate_quality(old)
    assert q.distances is None and "table" in q.distances_note and "diff=" in q.distances_note
    assert estimate_quality(old, diff=abcde.impact(base, exp, items=items)).distances is not None
    p = abcde.draw_precision_sample(exp, tmp_path / "prec", items=items, budget=20, seed=1)
    oracle_judge(p, "entity")
    assert "distances" not in estimate_quality(p).to_dict()  # one clustering's Precision: no distances
    assert "distances" not in PairSampleDir.read(p).metadata


def test_people_and_a_model_use_the_people_judgements_alone(inputs, tmp_path):
    """Judged by a model (every pair) and people (their random subset): the distances are those of
    the people's judgements of their tasks alone, and the method says so."""
    d, base, exp, items = inputs
    out = draw_pair_sample(d / "b.parquet", d / "e.parquet", tmp_path / "ppi", items=d / "i.parquet", budget=80,
                           seed=3, human_budget=40)
    from abcde.samples.people_tasks import people_pairs
    from abcde.samples.sample_dir import PairSampleDir

    s = PairSampleDir.read(out)
    tasks = people_pairs(s.draws, s.metadata)
    truth = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
    rows = {p: ("same" if truth[a] == truth[b] else "different") for p, a, b in zip(
        s.draws.column("pair_id").to_pylist(), s.draws.column("item_a").to_pylist(),
        s.draws.column("item_b").to_pylist()) if p in tasks}
    people = pa.Table.from_pylist([{"pair_id": p, "judgement": a, "source": "person", "rater": "ann"}
                                   for p, a in rows.items()])
    rng = np.random.default_rng(0)
    model = pa.Table.from_pylist([{"pair_id": p, "judgement": str(rng.choice(["same", "different"])),
                                   "source": "model", "rater": "m"} for p in s.judgeable_ids()])
    both = estimate_quality(out, [people, model])
    alone = estimate_quality(out, [people])
    assert "prediction-powered" in both.delta_precision.method
    assert "people's judgements only" in both.distances.method
    for m in PARTS + SUMS:
        assert getattr(both.distances, m).value == pytest.approx(getattr(alone.distances, m).value, rel=1e-12), m


def test_the_report_shows_the_panel(inputs, judged, tmp_path):
    """The report's panel "JaccardDistance = good + bad" (HTML and Markdown), overall and per slice,
    with the numbers of ``quality --json``."""
    d, *_ = inputs
    from abcde.workflow.report import run_report

    r = run_report(d / "b.parquet", d / "e.parquet", tmp_path / "r.html", items=d / "i.parquet",
                   quality=judged["stratified"], quality_slice_by=["kind"], markdown=tmp_path / "r.md")
    q = r.quality.to_dict()["distances"]
    html = (tmp_path / "r.html").read_text()
    assert 'id="distances"' in html and "JaccardDistance = good + bad by kind" in html
    assert 'data-distance="jaccard_distance"' in html
    assert f'data-value="{q["good_distance"]["estimate"]}"' in html
    md = (tmp_path / "r.md").read_text()
    assert "JaccardDistance = good + bad (from the same judged pairs" in md
    assert "| JaccardDistance | " in md
    from abcde.util.display import pct

    assert pct(q["good_distance"]["estimate"]) in md and "JaccardDistance = good + bad by kind" in md


# ----------------------------------------------------------------------------- simulations
@pytest.fixture(scope="module")
def quick_world():
    """A ~14k-item world, its diff, the library's facts for every affected item and the brute-force
    truths (overall and for the slice kind = a), and the pairs listed by the reference."""
    base, exp, items = world(4000, seed=11)
    dg = build_diff(Inputs(base, exp, items=items))
    b, e, w, t = dicts(base, exp, items)
    kind = dict(zip(items.column("item_id").to_pylist(), items.column("kind").to_pylist()))
    ids = [r["item_id"] for r in dg.engine.rows(affected_items(dg).select("item_id"))]
    facts = distance_facts(dg, ids, slice_by=["kind"])
    # the pairs in a fixed order (the reference lists them in set order): the same samples every run
    pairs = sorted(ref.all_pairs(b, e, w), key=lambda p: (p["i"], p["j"]))
    return {"b": b, "e": e, "w": w, "t": t, "kind": kind, "facts": facts, "pairs": pairs,
            "truth": _sim_truth(b, e, w, t, kind), "d": dg, "o": overall(dg)}


def _sim_truth(b, e, w, t, kind) -> dict:
    rows = ref.distance_parts(b, e, w, t)
    truth = {m: v for m, v in with_sums(ref.lifted_distance_parts(b, e, w, t, per_item=rows)).items()
             if m in PARTS + SUMS}
    a = with_sums(ref.lifted_distance_parts(b, e, w, t, items=[i for i in b if kind[i] == "a"], per_item=rows))
    truth["good_distance a"], truth["good_split_distance a"] = a["good_distance"], a["good_split_distance"]
    return truth


def _record(res, dd):
    for m in PARTS + SUMS:
        sc.add_estimate(res, m, dd[m])
    row = {x["value"]: x for x in dd["slices"]["kind"]}["a"]
    sc.add_estimate(res, "good_distance a", row["good_distance"])
    sc.add_estimate(res, "good_split_distance a", row["good_split_distance"])


def _table(rows, cls):
    """Draws (vantage first) as the estimators read them."""
    return pa.table({"pair_id": pa.array([f"{min(a, b)}|{max(a, b)}" for a, b in rows], pa.string()),
                     "item_a": pa.array([a for a, _ in rows], pa.string()),
                     "item_b": pa.array([b for _, b in rows], pa.string()),
                     "class": pa.array(cls, pa.string()),
                     "is_self": pa.array([a == b for a, b in rows], pa.bool_())})


def assert_honest(res: dict, truth: dict) -> list[dict]:
    """simcheck's bands, and plainly: mean within 3 of its SEs of the truth, mean SE within 10% of
    the spread, 95% coverage in [0.93, 0.97]; a 5% bias of any estimate fails the bands."""
    rows = sc.assert_bands(res, truth)
    for r in rows:
        assert abs(r["z_mean"]) <= 3 and 0.9 <= r["se_ratio"] <= 1.1 and 0.93 <= r["coverage"] <= 0.97, \
            "\n" + sc.describe(rows)
    for m in truth:
        assert "mean" in sc.failures(sc.scaled(res, m, 1.05), truth).get(m, []), m
        assert "mean" in sc.failures(sc.scaled(res, m, 0.95), truth).get(m, []), m
    return rows


@pytest.mark.parametrize("design", ["stratified", "paper"])
def test_simulation_with_known_truth(quick_world, design):
    """1,000 samples per design drawn ∝ u_ij from the reference's pair listing (the samplers
    themselves are tested in test_stratified/test_quality; the slow test below runs them), judged
    from the true entities, and again with 30% of the judgements unsure: every part, GoodDistance,
    BadDistance and, for the slice kind = a, GoodDistance(a) and GoodSplitDistance(a) are unbiased
    (mean within 3 SEs of the brute-force truth), their SEs the spread (within 10%) and their 95%
    intervals cover 93–97%; scaled by 1.05 (or 0.95) each fails. Stratified: 150 split and 150
    merge draws; paper: 600 draws of every class (about 90 split and 100 merge)."""
    wld = quick_world
    t, facts = wld["t"], wld["facts"]
    values = {"kind": {i: json.dumps(k) for i, k in wld["kind"].items()}}
    pairs = [p for p in wld["pairs"] if design == "paper" or p["class"] in ("split", "merge")]
    by_class = {c: [p for p in pairs if p["class"] == c] for c in ("split", "merge")}
    rng = np.random.default_rng(29 if design == "stratified" else 31)
    res = {"all": sc.new_results(wld["truth"]), "unsure": sc.new_results(wld["truth"])}
    u_all = np.array([p["u"] for p in pairs])
    u_of = {c: np.array([p["u"] for p in by_class[c]]) for c in by_class}  # each class's u_ij, listed once
    for _ in range(1000):
        if design == "stratified":
            draws = {}
            for c, n in (("split", 150), ("merge", 150)):
                u = u_of[c]
                idx = rng.choice(len(u), size=n, p=u / u.sum())
                draws[c] = _table([(by_class[c][k]["i"], by_class[c][k]["j"]) for k in idx], [c] * n)
            empty = _table([], [])
            sample = StratifiedSample({**draws, "intersection+": empty, "intersection-": empty}, {}, 0.0,
                                      {"split": 150, "merge": 150, "intersection+": 0, "intersection-": 0},
                                      "proportional")
            tables = list(draws.values())
        else:
            idx = rng.choice(len(u_all), size=600, p=u_all / u_all.sum())
            table = _table([(pairs[k]["i"], pairs[k]["j"]) for k in idx], [pairs[k]["class"] for k in idx])
            tables = [table]
        judged = {}
        for tb in tables:
            for p, a, b in zip(tb.column("pair_id").to_pylist(), tb.column("item_a").to_pylist(),
                               tb.column("item_b").to_pylist()):
                judged[p] = "same" if t[a] == t[b] else "different"
        unsure = {p: ("unsure" if rng.random() < 0.3 else j) for p, j in judged.items()}
        for key, by in (("all", judged), ("unsure", unsure)):
            if design == "stratified":
                dd = estimate_distances_stratified(sample, by, facts, method="m", vantage_values=values).to_dict()
            else:
                dd = estimate_distances_paper(tables[0], by, facts, method="m", vantage_values=values).to_dict()
            _record(res[key], dd)
    for key in res:
        assert_honest(res[key], wld["truth"])


# The simulation through abcde's samplers (600 samples per design on conftest's ``big_world``) is
# test_distances_by_answers.py's test_simulation_with_the_samplers_all_judged: it shares that module's samples.
