"""The stratified ΔPrecision estimator (exact self term, split/merge/intersection strata)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import reference as ref
import simcheck as sc
from abcde.cli import main
from abcde.errors import InputError
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.metrics.impact import overall
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.sampling.allocation import LEGACY_STRATA, STRATA, allocate
from abcde.sampling.stratified import sample_stratified, sample_stratified_many, self_term, slice_self_terms
from abcde.quality.stratified import estimate_stratified, estimate_stratified_slices
from test_quality import dicts, oracle, world


@pytest.fixture(scope="module")
def sim():
    base, exp, items = world()
    d = build_diff(Inputs(base, exp, items=items))
    return base, exp, items, d, overall(d)


def test_self_term_is_exact(sim):
    base, exp, items, d, o = sim
    b, e, w, _ = dicts(base, exp, items)
    listed = sum(p["u"] * p["l"] for p in ref.all_pairs(b, e, w) if p["i"] == p["j"])
    assert self_term(d, o["total_weight"]) == pytest.approx(listed, rel=1e-9, abs=1e-15)


def test_allocation():
    totals = {"split": 0.2, "merge": 0.1, "intersection+": 0.06, "intersection-": 0.04}
    assert allocate(100, totals) == {"split": 50, "merge": 25, "intersection+": 15, "intersection-": 10}
    ney = allocate(100, totals, allocation="neyman", sigmas={"split": 0.1, "merge": 1.0, "intersection+": 1.0,
                                                             "intersection-": 1.0})
    assert ney["merge"] > ney["split"] and sum(ney.values()) == 100
    assert allocate(10, {"split": 0.0, "merge": 0.1, "intersection+": 0.0, "intersection-": 0.0}) == {
        "split": 0, "merge": 10, "intersection+": 0, "intersection-": 0}
    with pytest.raises(InputError, match="Neyman allocation needs"):
        allocate(10, totals, allocation="neyman")
    # a stratum takes no more than its pairs (a census); what it leaves goes to the others
    capped = allocate(100, totals, caps={"split": 7, "merge": 1000, "intersection+": 3, "intersection-": 1000})
    assert capped["split"] == 7 and capped["intersection+"] == 3 and sum(capped.values()) == 100
    assert allocate(100, totals, caps=dict.fromkeys(totals, 5)) == dict.fromkeys(totals, 5)  # all listed: 20
    # samples drawn before the sign split keep their three strata
    legacy = {"split": 0.2, "merge": 0.1, "intersection": 0.1}
    assert allocate(100, legacy, strata=LEGACY_STRATA) == {"split": 50, "merge": 25, "intersection": 25}


def test_strata_hold_only_their_pairs_and_fill_their_budgets(sim):
    _, _, _, d, o = sim
    ss = sample_stratified(d, budget=60, seed=3, total_weight=o["total_weight"])
    for c, dr in ss.draws.items():
        want = {"split": {"split"}, "merge": {"merge"}, "intersection+": {"stable"}, "intersection-": {"stable"},
                "agreed": {"agreed"}}[c]
        assert set(dr.column("class").to_pylist()) <= want
        sign = {"split": {-1}, "merge": {1}, "intersection+": {1}, "intersection-": {-1}, "agreed": {0}}[c]
        assert set(dr.column("label").to_pylist()) <= sign, c
        assert not any(dr.column("is_self").to_pylist())
        assert len(set(dr.column("pair_id").to_pylist())) == ss.budgets[c]


def test_many_seeds_give_the_same_samples_as_one_at_a_time(sim):
    _, _, _, d, o = sim
    many = sample_stratified_many(d, budget=40, seeds=[4, 0, 11], total_weight=o["total_weight"], batch=2)
    for s, got in zip([4, 0, 11], many):
        one = sample_stratified(d, budget=40, seed=s, total_weight=o["total_weight"])
        assert got.budgets == one.budgets
        for c in one.draws:
            assert got.draws[c].equals(one.draws[c]), (s, c)


SEEDS = 200


@pytest.fixture(scope="module")
def big(big_world):
    """The paper simulation's world (~52k items, built once per session: conftest's
    ``big_world``): many more distinct pairs than draws, so "unsure" (a property of a pair) does
    not move the judged population; 200 stratified samples of budget 300 drawn in batches (one
    query per stratum for 100 seeds)."""
    w = big_world
    samples = sample_stratified_many(w["d"], budget=300, seeds=range(SEEDS), total_weight=w["o"]["total_weight"],
                                     batch=100)
    return w["d"], w["o"], w["t"], w["kind"], w["truth"], w["slices"], samples


def _judge(ss, t, rng):
    judged = {}
    for dr in ss.draws.values():
        judged.update(oracle(dr, t))
    return judged, {k: ("unsure" if rng.random() < 0.3 else v) for k, v in judged.items()}


@pytest.mark.slow
def test_simulation_unbiased_honest_errors_and_coverage(big):
    """The stratified estimator (proportional) on the realistic ~52k-item world: 200 seeds,
    budget 300, judged by the oracle and again with 30% of judgements unsure. Bands
    (:mod:`simcheck`, 2 × 5 metrics × 3 bands at 1/1000 for the test): mean within t = 4.25
    SEs of the brute-force truth, |ln(SE/sd)| and coverage within z = 4.15 σ. Measured (oracle /
    unsure): ΔPrecision −0.0045 with a per-seed spread of 0.013 / 0.016 (SE of the mean 0.0009 /
    0.0011), so only a ΔPrecision bias ≳ 0.005 (110%) is caught here; a 5% bias of a rate is
    7.2-8.2 / 5.7-6.9 SEs (power ≥ 0.99 / ≥ 0.92). 5% biases of ΔPrecision, the slices and both
    allocations are caught in tests/test_estimator_power.py (a world built for it; Neyman
    allocation is simulated there). On these seeds ΔPrecision sits at z = −2.5, inside the band;
    on 800 further seeds (200-999) the same estimator sits at z = −0.29: chance, not a bias."""
    d, o, t, _, truth, _, samples = big
    rng = np.random.default_rng(7)
    res = {"all": sc.new_results(truth), "unsure": sc.new_results(truth)}
    for ss in samples:
        for key, by in zip(("all", "unsure"), _judge(ss, t, rng)):
            q = estimate_stratified(ss, by, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).to_dict()
            for m in truth:
                sc.add_estimate(res[key], m, q[m])
    for key in res:
        sc.assert_bands(res[key], truth, alpha=sc.ALPHA / 2)


def test_pilot_sigma_has_a_floor():
    from abcde.quality.stratified import _sigma

    assert _sigma(np.zeros(8)) == pytest.approx(1 / 3)  # all judgements agree: not 0, or the stratum starves
    assert _sigma(np.array([1.0, -1.0] * 50)) == pytest.approx(np.std([1.0, -1.0] * 50, ddof=1))


def test_slice_self_terms_are_exact(big):
    d, o, _, _, _, slices, _ = big
    got = slice_self_terms(d, "kind", o["total_weight"])
    for v, s in slices.items():
        assert got[v] == pytest.approx(s["self"], rel=1e-9, abs=1e-15)


@pytest.mark.slow
def test_slice_simulation_unbiased_honest_errors_and_coverage(big, big_world):
    """ΔPrecisionContribution(I) and ΔPrecision(I) for the slices kind = a, b under the
    stratified design, with the multipliers abcde stores (weight(I), pairweight(I), slice self
    terms) against brute-force truths (contribution from the pair listing, ΔPrecision(I) =
    contribution · weight(T) / weight(I) with the brute-force weights): same 200 samples, with and
    without 30% unsure; bands as above (2 × 4 metrics × 3 bands at 1/1000: t = 4.19, z = 4.10).
    Truths −0.0023 / −0.0022 (contributions) against spreads 0.010-0.013: a realistic check that
    catches a contribution bias ≳ 0.004 (170%), not a 5% one (that is in
    tests/test_estimator_power.py, with 5% at 8-32 SEs)."""
    d, o, t, kind, _, slices, samples = big
    W = o["total_weight"]
    stored = big_world["stored"]
    for v, s in slices.items():  # the stored multipliers are the brute force's
        assert stored[v]["weight"] == pytest.approx(s["weight"], rel=1e-9)
        assert stored[v]["pairweight"] == pytest.approx(s["pairweight"], rel=1e-9)
    mult = {v: (r["weight"], r["pairweight"]) for v, r in stored.items()}
    selfs = {v: (r["self_term"], r["self_pairweight"]) for v, r in stored.items()}
    value = {i: json.dumps(k) for i, k in kind.items()}
    truth = {}
    for v, s in slices.items():
        truth[f"contribution {v}"] = s["contribution"]
        truth[f"delta_precision {v}"] = s["delta_precision"]
    rng = np.random.default_rng(11)
    res = {"all": sc.new_results(truth), "unsure": sc.new_results(truth)}
    for ss in samples:
        for key, by in zip(("all", "unsure"), _judge(ss, t, rng)):
            for row in estimate_stratified_slices(ss, by, value, mult, selfs, total_weight=W):
                v = json.dumps(row["value"])
                sc.add_estimate(res[key], f"contribution {v}", row["delta_precision_contribution"])
                sc.add_estimate(res[key], f"delta_precision {v}", row["delta_precision"])
    for key in res:
        sc.assert_bands(res[key], truth, alpha=sc.ALPHA / 2)


def test_slice_contributions_add_up_to_delta_precision(tmp_path):
    """The slices of a column partition T: their contributions add up to ΔPrecision(T)
    exactly, draw by draw (through the sample directory and the CLI)."""
    base, exp, items = world(300, seed=4)
    for name, tb in (("b", base), ("e", exp), ("i", items)):
        pq.write_table(tb, tmp_path / f"{name}.parquet")
    r = CliRunner()
    out = r.invoke(main, ["pairs", "--base", str(tmp_path / "b.parquet"), "--exp", str(tmp_path / "e.parquet"),
                          "--items", str(tmp_path / "i.parquet"), "--budget", "80", "--seed", "3", "--estimator",
                          "stratified", "--slice-by", "kind", "--out", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output
    assert r.invoke(main, ["judge", str(tmp_path / "p"), "--oracle-column", "entity"]).exit_code == 0
    q = json.loads(r.invoke(main, ["quality", str(tmp_path / "p"), "--slice-by", "kind", "--json"]).output)
    rows = q["slices"]["kind"]
    assert {row["value"] for row in rows} == {"a", "b"}
    total = sum(row["delta_precision_contribution"]["estimate"] for row in rows)
    assert total == pytest.approx(q["delta_precision"]["estimate"], rel=1e-9, abs=1e-12)
    assert sum(row["self_term"] for row in rows) == pytest.approx(
        json.loads((tmp_path / "p" / "metadata.json").read_text())["self_term"], rel=1e-9, abs=1e-15)
    for row in rows:
        c, dp = row["delta_precision_contribution"], row["delta_precision"]
        assert dp["estimate"] == pytest.approx(c["estimate"] * q_total_weight(tmp_path) / row["weight"])
        assert c["method"] == "stratified (proportional)"


    from abcde.samples.judgements import load_judgements
    from abcde.quality import PairSampleDir
    from abcde.sampling.allocation import STRATA
    from abcde.quality.stratified import next_stratum, stratum_values

    sd = PairSampleDir.read(tmp_path / "p")
    by = load_judgements([tmp_path / "p" / "judgements.sqlite"], pair_ids=sd.judgeable_ids(),  # the oracle's
                         id_type=sd.metadata["id_type"]).by_pair
    vals = stratum_values(sd.draws, by)
    assert sum(len(v) for v in vals.values()) == sd.draws.num_rows  # the oracle judged every draw
    assert next_stratum(sd.metadata, vals) in STRATA


def q_total_weight(tmp_path):
    return json.loads((tmp_path / "p" / "metadata.json").read_text())["total_weight"]


def test_cli_stratified_and_neyman(tmp_path):
    base, exp, items = world(60, seed=4)
    for name, t in (("b", base), ("e", exp), ("i", items)):
        pq.write_table(t, tmp_path / f"{name}.parquet")
    args = ["--base", str(tmp_path / "b.parquet"), "--exp", str(tmp_path / "e.parquet"), "--items",
            str(tmp_path / "i.parquet"), "--budget", "30"]
    r = CliRunner()
    out = r.invoke(main, ["pairs", *args, "--seed", "1", "--estimator", "stratified", "--out", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output
    assert r.invoke(main, ["judge", str(tmp_path / "p"), "--oracle-column", "entity"]).exit_code == 0
    q = json.loads(r.invoke(main, ["quality", str(tmp_path / "p"), "--json"]).output)
    assert (q["estimator"], q["allocation"]) == ("stratified", "proportional")
    assert q["delta_precision"]["method"] == "stratified (proportional)"
    bad = r.invoke(main, ["pairs", *args, "--seed", "2", "--estimator", "stratified", "--allocation", "neyman",
                          "--out", str(tmp_path / "n")])
    assert bad.exit_code != 0 and "needs --pilot" in bad.output
    ok = r.invoke(main, ["pairs", *args, "--seed", "2", "--estimator", "stratified", "--allocation", "neyman",
                         "--pilot", str(tmp_path / "p"), "--out", str(tmp_path / "n"), "--json"])
    assert ok.exit_code == 0, ok.output
    meta = json.loads(ok.output)
    assert meta["allocation"] == "neyman" and set(meta["pilot_sigmas"]) == set(STRATA)
    text = r.invoke(main, ["quality", str(tmp_path / "p")])
    assert "estimator: stratified, allocation: proportional" in text.output
    assert "Pair sample (estimator: stratified, allocation: neyman)" in r.invoke(
        main, ["pairs", *args, "--seed", "2", "--estimator", "stratified", "--allocation", "neyman",
               "--pilot", str(tmp_path / "p"), "--out", str(tmp_path / "n")]).output


def test_every_output_names_estimator_and_allocation(tmp_path):
    base, exp, items = world(60, seed=4)
    for name, t in (("b", base), ("e", exp), ("i", items)):
        pq.write_table(t, tmp_path / f"{name}.parquet")
    args = ["--base", str(tmp_path / "b.parquet"), "--exp", str(tmp_path / "e.parquet"), "--items",
            str(tmp_path / "i.parquet"), "--budget", "20", "--seed", "1"]
    r = CliRunner()
    for est, alloc in (("paper", None), ("stratified", "proportional")):
        out = r.invoke(main, ["pairs", *args, "--estimator", est, "--out", str(tmp_path / est), "--json"])
        meta = json.loads(out.output)
        assert (meta["estimator"], meta["allocation"]) == (est, alloc)
        assert r.invoke(main, ["judge", str(tmp_path / est), "--oracle-column", "entity"]).exit_code == 0
        q = estimate_quality(tmp_path / est).to_dict()
        assert (q["estimator"], q["allocation"]) == (est, alloc)
        text = r.invoke(main, ["quality", str(tmp_path / est)]).output
        assert f"estimator: {est}" + (f", allocation: {alloc}" if alloc else ")") in text


def test_stratified_is_the_default_and_handles_degenerate_inputs(tmp_path):
    """The default design; identical clusterings: nothing to judge, ΔPrecision exactly 0;
    a budget beyond the judgeable pairs takes them all."""
    base = pa.table({"item_id": [1, 2, 3], "cluster_id": [1, 1, 2]})
    out = draw_pair_sample(base, base, tmp_path / "same", budget=10, seed=1)
    meta = json.loads((out / "metadata.json").read_text())
    assert (meta["estimator"], meta["allocation"], meta["judgeable_pairs"]) == ("stratified", "proportional", 0)
    d = estimate_quality(out).to_dict()
    assert d["delta_precision"]["estimate"] == 0.0 and d["delta_precision"]["std_err"] == 0.0
    assert d["good_split_rate"]["estimate"] == 0.0 and d["bad_merge_rate"]["estimate"] == 0.0
    exp = pa.table({"item_id": [1, 2, 3], "cluster_id": [1, 2, 2]})
    r = CliRunner().invoke(main, ["pairs", "--base", _w(tmp_path, "b", base), "--exp", _w(tmp_path, "e", exp),
                                  "--budget", "50", "--seed", "1", "--out", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert "Only 2 distinct pairs need a judgement (budget 50): all of them are in the sample." in r.output
    assert "Pair sample (estimator: stratified, allocation: proportional)" in r.output


def _w(tmp_path, name, t):
    pq.write_table(t, tmp_path / f"{name}.parquet")
    return str(tmp_path / f"{name}.parquet")


def test_no_judgements_means_undefined_not_an_error(sim):
    _, _, _, d, o = sim
    ss = sample_stratified(d, budget=30, seed=1, total_weight=o["total_weight"])
    q = estimate_stratified(ss, {}, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).to_dict()
    assert q["delta_precision"]["estimate"] is None and "no usable judgement" in q["delta_precision"]["note"]
    for m in ("good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate"):
        assert q[m]["estimate"] is None, m
    json.dumps(q, allow_nan=False)


def test_next_stratum_is_greedy_neyman():
    from abcde.quality.stratified import next_stratum

    meta = {"pair_totals": {"split": 0.2, "merge": 0.1, "intersection": 0.0}}
    assert next_stratum(meta, {}) == "split"  # two judgements per stratum first, heaviest first
    assert next_stratum(meta, {"split": [0, -1]}) == "merge"
    assert next_stratum({"split": 0.0, "merge": 0.0, "intersection": 0.0}, {}) is None
    # Fed judgements of known spread, the greedy choice ends at Neyman's n_c ∝ U_c σ_c.
    totals = {"split": 0.2, "merge": 0.1, "intersection": 0.3}
    sigma = {"split": 0.1, "merge": 0.5, "intersection": 0.2}
    rng = np.random.default_rng(0)
    pool = {c: iter(sigma[c] * rng.choice([-1.0, 1.0], 10_000)) for c in totals}
    seen = {c: [] for c in totals}
    for _ in range(600):
        c = next_stratum(totals, seen)
        seen[c].append(next(pool[c]))
    want = allocate(600, totals, allocation="neyman", sigmas=sigma, strata=LEGACY_STRATA)
    for c in totals:
        assert abs(len(seen[c]) - want[c]) <= 0.05 * 600, (c, len(seen[c]), want)
