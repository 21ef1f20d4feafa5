"""The absolute Precision of one clustering (issue 15, ``abcde precision``): ABCDE with Base = every
item alone (Precision 1) and Exp = the clustering, so Precision = 1 + ΔPrecision, estimated from
judged pairs inside the clustering's clusters. Checked against the brute-force pointwise Precision
of ``tests/reference.py`` (no abcde code): end to end through the CLI, exactly when every pair is
judged (a census), and by simulation (unbiased, honest SE, 95% coverage) on a synthetic clustering,
near a census, and on the bundled example."""

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
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.examples import example_paths
from abcde.metrics.impact import overall
from abcde.sampling.stratified import sample_stratified_many
from abcde.quality.stratified import estimate_stratified

P = example_paths("febrl3")


def noisy_clustering(n_entities=150, seed=0):
    """Entities of 1-5 items; the clustering merges ~30% of neighbouring entities and splits ~15%:
    a Precision well below 1 (a good share of the pairs inside its clusters are different)."""
    rng = np.random.default_rng(seed)
    ids, ent, clu, cluster = [], [], [], 0
    k = 0
    for e in range(n_entities):
        size = int(rng.integers(1, 6))
        if rng.random() > 0.3 or e == 0:
            cluster += 1
        split = rng.random() < 0.15
        for m in range(size):
            ids.append(f"i{k}")
            ent.append(e)
            clu.append(cluster * 2 + (1 if split and m % 2 else 0))
            k += 1
    w = rng.lognormal(0, 0.5, len(ids))
    clustering = pa.table({"item_id": ids, "cluster_id": clu})
    items = pa.table({"item_id": ids, "weight": w, "entity": [f"e{e}" for e in ent]})
    return clustering, items


def truth_precision(clustering: pa.Table, items: pa.Table) -> float:
    c = dict(zip(clustering.column("item_id").to_pylist(), clustering.column("cluster_id").to_pylist()))
    t = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
    w = dict(zip(items.column("item_id").to_pylist(), items.column("weight").to_pylist()))
    return ref.pointwise_lifted(t, c, w)["precision"]


def test_the_cli_estimates_the_precision_and_is_exact_when_every_pair_is_judged(tmp_path):
    clustering, items = noisy_clustering(60, seed=3)
    pq.write_table(clustering, tmp_path / "c.parquet")
    pq.write_table(items, tmp_path / "i.parquet")
    truth = truth_precision(clustering, items)
    assert 0.5 < truth < 0.95
    r = CliRunner()
    args = ["precision", "--clustering", str(tmp_path / "c.parquet"), "--items", str(tmp_path / "i.parquet"),
            "--seed", "4", "--hide", "entity"]
    for budget, name in ((40, "s"), (100_000, "all")):
        out = r.invoke(main, [*args, "--budget", str(budget), "--out", str(tmp_path / name)])
        assert out.exit_code == 0, out.output
        assert r.invoke(main, ["judge", "oracle", str(tmp_path / name), "--oracle-column", "entity"]).exit_code == 0
    s = json.loads(r.invoke(main, ["quality", str(tmp_path / "s"), "--json"]).output)
    p, dp = s["precision"], s["delta_precision"]
    assert s["target"] == "precision" and p["estimate"] == pytest.approx(1 + dp["estimate"], abs=1e-15)
    assert p["ci_low"] == pytest.approx(1 + dp["ci_low"]) and p["std_err"] == dp["std_err"] > 0
    assert abs(p["estimate"] - truth) < 4 * p["std_err"]
    text = r.invoke(main, ["quality", str(tmp_path / "s")]).output
    assert "Precision " in text and "Precision of the clustering = 1 + ΔPrecision" in text
    # every pair inside the clusters listed and judged: the exact Precision, SE 0
    a = json.loads(r.invoke(main, ["quality", str(tmp_path / "all"), "--json"]).output)
    assert a["exact"] is True and a["census"] == ["merge"]
    assert a["precision"]["estimate"] == pytest.approx(truth, rel=1e-12) and a["precision"]["std_err"] == 0.0
    meta = json.loads((tmp_path / "all" / "metadata.json").read_text())
    # every item alone in Base: no split and no intersection pairs, their weights exactly 0 (taken
    # as stable − self they were a rounding residue that varied with DuckDB's summation order)
    assert [meta["pair_totals"][c] for c in ("split", "intersection+", "intersection-")] == [0.0, 0.0, 0.0]
    c = dict(zip(clustering.column("item_id").to_pylist(), clustering.column("cluster_id").to_pylist()))
    sizes = np.unique(list(c.values()), return_counts=True)[1]
    assert meta["judgeable_pairs"] == int((sizes * (sizes - 1) // 2).sum()) == meta["pair_counts"]["merge"]
    # the pages and reports see a sample like any other: the tasks are blind, and the judging app's
    # live estimates carry the Precision (the page shows it first)
    assert "entity" not in pq.read_table(tmp_path / "s" / "tasks.parquet").column_names
    from abcde.judging.session import JudgingSession

    live = JudgingSession(tmp_path / "s").owner_state()["estimates"]
    assert live["target"] == "precision" and live["precision"]["estimate"] is None  # no person judged yet


def _simulate(clustering, items, *, budget, seeds):
    d = build_diff(Inputs(clustering, clustering, items=items, base_cluster_id="item_id"))
    o = overall(d)
    entity = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
    res = sc.new_results({"precision": truth_precision(clustering, items)})
    samples = sample_stratified_many(d, budget=budget, seeds=seeds, total_weight=o["total_weight"], batch=128)
    for ss in samples:
        by = {}
        for dr in ss.draws.values():
            for pid, a, b in zip(dr.column("pair_id").to_pylist(), dr.column("item_a").to_pylist(),
                                 dr.column("item_b").to_pylist()):
                by[pid] = "same" if entity[a] == entity[b] else "different"
        q = estimate_stratified(ss, by, split_rate=o["split_rate"], merge_rate=o["merge_rate"]).to_dict()
        e = q["delta_precision"]
        sc.add_estimate(res, "precision", {**e, "estimate": 1 + e["estimate"], "ci_low": 1 + e["ci_low"],
                                           "ci_high": 1 + e["ci_high"]})
    return res, samples


@pytest.mark.slow
def test_simulated_precision_is_unbiased_with_honest_errors_and_coverage():
    """300 seeds × 120 pairs on a clustering with Precision ≈ 0.8: the mean within t·sd/√S of the
    brute-force Precision, the SE the spread, 95% intervals covering 95% (simcheck's bands)."""
    clustering, items = noisy_clustering(150, seed=1)
    res, samples = _simulate(clustering, items, budget=120, seeds=range(2000, 2300))
    assert not samples[0].census
    rows = sc.assert_bands(res, {"precision": truth_precision(clustering, items)})
    assert rows[0]["power5"] >= 0.9, sc.describe(rows)


@pytest.mark.slow
def test_near_a_census_the_sampled_estimate_keeps_its_bands_and_at_the_census_it_is_exact():
    """A small clustering: with the budget a few pairs short of all of them the stratum is sampled
    (bands as above); with the budget at the pair count it is listed whole and every seed gives
    the exact Precision with SE 0."""
    clustering, items = noisy_clustering(40, seed=2)
    truth = truth_precision(clustering, items)
    d = build_diff(Inputs(clustering, clustering, items=items, base_cluster_id="item_id"))
    from abcde.sampling.pairs import pair_counts

    n = pair_counts(d)["merge"]
    res, samples = _simulate(clustering, items, budget=n - 3, seeds=range(3000, 3250))
    assert not samples[0].census
    sc.assert_bands(res, {"precision": truth})
    res, samples = _simulate(clustering, items, budget=n, seeds=range(5))
    assert all(s.census == {"merge"} for s in samples)
    for v, se in zip(*sc.arrays(res, "precision")[:2]):
        assert v == pytest.approx(truth, rel=1e-12) and se == 0.0


@pytest.mark.slow
def test_the_bundled_example_precision_is_covered():
    """The bundled example's Exp (Precision 0.997: about 0.6% of the pair weight inside its clusters
    is different) with 2,000 of its 5,098 pairs, 200 seeds: bands as above against its pointwise
    Precision from the true entities."""
    c = pq.read_table(P["exp"])
    it = pq.read_table(P["items"])
    items = pa.table({"item_id": it.column("item_id"), "weight": it.column("weight") if "weight" in
                      it.column_names else pa.array(np.ones(it.num_rows)), "entity": it.column("entity_id")})
    res, _ = _simulate(c.select(["item_id", "cluster_id"]), items, budget=2000, seeds=range(4000, 4200))
    sc.assert_bands(res, {"precision": truth_precision(c, items)})


def test_the_precision_interval_is_delta_precisions_plus_one_at_every_level(tmp_path):
    """Precision = 1 + ΔPrecision, its interval too, at every level, and with the unsure pairs of a census:
    their span, the interval's own parts and the exactness go with it (issue 51; they were kept at 95%
    only). A census with some pairs unsure, and a sample, each at 80%, 95% and 99%."""
    from abcde.quality import estimate_quality
    from abcde.samples.store import JudgementStore

    clustering, items = noisy_clustering(60, seed=3)
    pq.write_table(clustering, tmp_path / "c.parquet")
    pq.write_table(items, tmp_path / "i.parquet")
    r = CliRunner()
    args = ["precision", "--clustering", str(tmp_path / "c.parquet"), "--items", str(tmp_path / "i.parquet"),
            "--seed", "4", "--hide", "entity", "-q"]
    for budget, name in ((40, "s"), (100_000, "all")):
        assert r.invoke(main, [*args, "--budget", str(budget), "--out", str(tmp_path / name)]).exit_code == 0
        store = JudgementStore(tmp_path / name)
        for pid in store.pair_ids[:5]:  # a few unsure answers, then the oracle for the rest
            store.record(pid, "unsure", rater="ann")
        assert r.invoke(main, ["judge", "oracle", str(tmp_path / name), "--oracle-column", "entity"]).exit_code == 0
        q = estimate_quality(tmp_path / name)
        p, dp = q.precision, q.delta_precision
        assert p.exact == dp.exact and p.span == dp.span
        if name == "all":
            assert p.span is not None and p.span != (0.0, 0.0) and not p.exact
        for level in (0.80, 0.95, 0.99):
            lo, hi = dp.confidence_interval(level)
            want = (min(max(1 + lo, 0.0), 1.0), min(max(1 + hi, 0.0), 1.0))
            assert p.confidence_interval(level) == pytest.approx(want, abs=1e-12), (name, level)
