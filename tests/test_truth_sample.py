"""Population Precision and Recall from a truth of sampled complete entities (issue 41): the API,
its exactness at a census (DuckDB and Spark), its refusals, and the note of a partial truth without a
design. The estimator's formulas are checked by tests/test_truth_sample_reference.py, its calibration
by tests/test_truth_sample_sim.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import abcde
from abcde.errors import AbcdeError, InputError
from abcde.examples import example_paths
from abcde.metrics.truth_sample import (FEW_ENTITIES, PopulationEstimate, TruthSampleResult, bounded_interval,
                                        degrees_of_freedom, effective_entities, estimate_pointwise,
                                        estimate_population, population_totals, quantile)

P = example_paths()


@pytest.fixture(scope="module")
def febrl_truth():
    return pq.read_table(P["truth"])


def sample_entities(truth: pa.Table, fraction: float, seed: int, inclusion: float | None = None) -> pa.Table:
    ents = sorted(set(truth.column("cluster_id").to_pylist()))
    pick = np.random.default_rng(seed).choice(len(ents), int(fraction * len(ents)), replace=False)
    sub = truth.filter(pc.is_in(truth["cluster_id"], pa.array([ents[k] for k in pick])))
    if inclusion is not None:
        sub = sub.append_column("inclusion", pa.array([inclusion] * sub.num_rows))
    return sub


def small():
    """Truth: entities a = {1, 2}, b = {3}; the clustering also has item 4 (outside the truth), with 3."""
    truth = pa.table({"item_id": [1, 2, 3], "cluster_id": ["a", "a", "b"], "inclusion": [0.5, 0.5, 0.25]})
    clustering = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": [7, 7, 8, 8]})
    return truth, clustering


# ----------------------------------------------------------------------------- exact at a census
@pytest.mark.parametrize("truth_sample", ["uniform", "inclusion"])
def test_a_census_gives_todays_exact_numbers_with_se_0(febrl_truth, truth_sample):
    """A truth covering every item (uniform: n = N̂ = N; or every inclusion probability 1) gives
    pointwise's exact Precision, Recall and F1 to 1e-12, standard error 0, a point interval."""
    truth = febrl_truth.append_column("inclusion", pa.array(np.ones(febrl_truth.num_rows)))
    res = estimate_pointwise(truth, base=P["base"], exp=P["exp"], items=P["items"], truth_sample=truth_sample)
    assert res.census and res.entities == 2000 and res.population_entities == 2000
    for side in ("base", "exp"):
        exact = abcde.pointwise(P["truth"], P[side], items=P["items"])
        for m in ("precision", "recall", "f1"):
            e = res.estimates[side][m]
            assert e.value == pytest.approx(getattr(exact, m), abs=1e-12), (side, m)
            assert e.standard_error == 0 and e.exact
            assert e.confidence_interval() == (e.value, e.value)
        assert res.restricted[side]["precision"] == pytest.approx(exact.precision, abs=1e-12)
    for m in ("precision", "recall", "f1"):
        d = res.estimates[f"delta_{m}"]
        assert d.value == pytest.approx(res.estimates["exp"][m].value - res.estimates["base"][m].value, abs=1e-15)
        assert d.standard_error == 0
    assert not res.notes


@pytest.mark.spark
def test_a_census_gives_todays_exact_numbers_on_spark(spark):
    """The same on Spark: the Ibis expressions of the entity totals, slices included."""
    rng = np.random.default_rng(3)
    n = 60
    ent = rng.integers(0, 20, n)
    truth = pa.table({"item_id": np.arange(n), "cluster_id": ent, "inclusion": np.ones(n)})
    base = pa.table({"item_id": np.arange(n), "cluster_id": ent % 7})
    exp = pa.table({"item_id": np.arange(n), "cluster_id": np.where(ent < 10, ent, ent % 3 + 100)})
    items = pa.table({"item_id": np.arange(n), "weight": rng.uniform(0.5, 3.0, n),
                      "src": [f"s{i % 3}" for i in range(n)]})
    res = estimate_pointwise(truth, base=base, exp=exp, items=items, truth_sample="inclusion", slice_by=["src"],
                             engine=spark)
    local = estimate_pointwise(truth, base=base, exp=exp, items=items, truth_sample="inclusion", slice_by=["src"])
    assert res.engine == "spark" and res.census
    for side, c in (("base", base), ("exp", exp)):
        exact = abcde.pointwise(truth.select(["item_id", "cluster_id"]), c, items=items)
        for m in ("precision", "recall", "f1"):
            assert res.estimates[side][m].value == pytest.approx(getattr(exact, m), abs=1e-12)
            assert res.estimates[side][m].standard_error == 0
    a, b = res.to_dict(), local.to_dict()
    for ra, rb in zip(a["slices"]["src"], b["slices"]["src"]):
        assert ra["src"] == rb["src"] and ra["items"] == rb["items"]
        for side in ("base", "exp"):
            for m in ("precision", "recall", "f1"):
                assert ra["estimates"][side][m]["estimate"] == pytest.approx(rb["estimates"][side][m]["estimate"],
                                                                             abs=1e-12)


# ----------------------------------------------------------------------------- the estimates
def test_precision_is_against_the_whole_cluster():
    truth, clustering = small()
    r = estimate_pointwise(truth, clustering, truth_sample="uniform")
    # items 1, 2: cluster 7 = entity a, Precision 1; item 3: cluster 8 = {3, 4}, Precision 1/2
    assert r.precision == pytest.approx(2.5 / 3)
    assert r.recall == 1.0
    assert r.restricted["precision"] == 1.0  # over the truth's items only, the overmerge is hidden
    today = abcde.pointwise(truth.select(["item_id", "cluster_id"]), clustering)
    assert today.precision == 1.0 and "--truth-sample" in today.note and "3 items" in today.note


def test_the_sample_totals_are_the_population_totals_of_those_entities(febrl_truth):
    """Scoring a sampled truth in the engine gives each listed entity the totals it has in the full
    population (Precision against whole clusters, which reach outside the sample)."""
    full = population_totals(febrl_truth, P["exp"], items=P["items"])
    sub = sample_entities(febrl_truth, 0.2, seed=5)
    res = estimate_pointwise(sub, P["exp"], items=P["items"], truth_sample="uniform", population_entities=2000)
    t = res.totals["clustering"]
    where = {e: k for k, e in enumerate(full.entities)}
    idx = np.array([where[e] for e in t.entities])
    np.testing.assert_allclose(t.weight, full.weight[idx], rtol=1e-12)
    np.testing.assert_allclose(t.precision_sum, full.precision_sum[idx], rtol=1e-12)
    np.testing.assert_allclose(t.recall_sum, full.recall_sum[idx], rtol=1e-12)
    again = estimate_population(full.weight[idx], {"c": (full.precision_sum[idx], full.recall_sum[idx])},
                                population_entities=2000)
    for m in ("precision", "recall", "f1"):
        assert res.estimates[m].value == pytest.approx(again.sides["c"][m].value, rel=1e-12)
        assert res.estimates[m].standard_error == pytest.approx(again.sides["c"][m].standard_error, rel=1e-9)


def test_a_partial_truth_exp_precision_is_corrected_and_covered(febrl_truth):
    """The issue's example: a fifth of FEBRL 3's entities. The restricted Precision over the truth's
    items is above the population's; the estimate's interval holds the population's."""
    exact = abcde.pointwise(P["truth"], P["exp"], items=P["items"]).precision
    sub = sample_entities(febrl_truth, 0.2, seed=1)
    res = abcde.pointwise(sub, P["exp"], items=P["items"], truth_sample="uniform")
    assert isinstance(res, TruthSampleResult)
    assert res.restricted["precision"] > exact
    lo, hi = res.estimates["precision"].confidence_interval()
    assert lo <= exact <= hi
    assert res.estimates["precision"].value < res.restricted["precision"]
    assert res.population_entities_from == "estimated" and any("estimated" in n for n in res.notes)


def test_the_result_and_its_json(febrl_truth):
    sub = sample_entities(febrl_truth, 0.3, seed=2, inclusion=0.3)
    res = estimate_pointwise(sub, base=P["base"], exp=P["exp"], items=P["items"], truth_sample="inclusion",
                             slice_by=["source"])
    d = json.loads(json.dumps(res.to_dict()))
    assert set(d["estimates"]) == {"base", "exp", "delta_precision", "delta_recall", "delta_f1"}
    for e in [*d["estimates"]["base"].values(), *d["estimates"]["exp"].values(), d["estimates"]["delta_recall"]]:
        assert {"estimate", "std_err", "ci_low", "ci_high"} <= set(e)
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"]
    assert -1 <= d["estimates"]["delta_precision"]["ci_low"] and d["estimates"]["delta_precision"]["ci_high"] <= 1
    t = d["truth_sample"]
    assert t["design"] == "poisson" and t["column"] == "inclusion" and t["entities"] == 600
    assert t["population_entities"] == pytest.approx(600 / 0.3) and t["population_entities_from"] == "design"
    assert d["truth_items"] == sub.num_rows and d["population_items"] == {"base": 5000, "exp": 5000}
    assert d["sides"] == ["base", "exp"] and "delta method" in d["f1_method"] and "logit" in d["interval_method"]
    assert {r["source"] for r in d["slices"]["source"]} == {"original", "duplicate"}
    assert set(d["restricted"]) == {"base", "exp", "delta_precision", "delta_recall", "delta_f1"}
    # what the report's and the verdict's truth={"base": …, "exp": …} read
    sd = res.side_dict("exp")
    assert sd["precision"] == res.estimates["exp"]["precision"].value and sd["true_links"] is None
    assert sd["items"] == sub.num_rows and sd["truth_sample"]["design"] == "poisson"
    assert res.per_entity("base").column_names == ["entity_id", "items", "weight", "precision", "recall",
                                                   "inclusion"]
    with pytest.raises(InputError, match="Two clusterings"):
        res.precision


def test_pointwise_passes_inputs_and_columns_through():
    truth = pa.table({"id": [1, 2, 3], "entity": ["a", "a", "b"]})
    clustering = pa.table({"id": [1, 2, 3, 4], "cl": [7, 7, 8, 8]})
    given = abcde.Inputs(truth, clustering, item_id="id", base_cluster_id="entity", exp_cluster_id="cl")
    r = abcde.pointwise(given, truth_sample="uniform", population_entities=3)
    assert r.precision == pytest.approx(2.5 / 3) and r.population_entities_from == "given"
    r2 = abcde.pointwise(truth, clustering, item_id="id", truth_cluster_id="entity", cluster_id="cl",
                         truth_sample="uniform", population_entities=3)
    assert r2.to_dict() == r.to_dict()


def test_a_truth_covering_every_item_has_no_note():
    truth, clustering = small()
    full = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "a", "b", "c"]})
    r = abcde.pointwise(full, clustering)
    assert r.note == "" and r.to_dict()["note"] is None
    assert abcde.pointwise(truth.select(["item_id", "cluster_id"]), clustering).to_dict()["note"]


def test_few_entities_say_so():
    """An estimate whose variance rests on few entities says so (its interval may cover less)."""
    truth, clustering = small()
    r = estimate_pointwise(truth, clustering, truth_sample="uniform", population_entities=10)
    e = r.estimates["precision"]
    assert e.effective_entities < FEW_ENTITIES and "few sampled entities" in e.note
    assert effective_entities([1.0] * 30) == pytest.approx(30)


def test_the_intervals_lean_as_the_losses_do():
    """Precision and Recall: the gamma interval of the weight they miss, about as wide as the symmetric
    one when every entity loses a little, reaching far further below than above when three entities hold every
    loss (the formula itself: tests/test_truth_sample_reference.py). F1: Student t on
    ``min(n − 1, max(1, (Σc_k)²/Σc_k²))``, carried in the JSON."""
    rng = np.random.default_rng(3)
    b = rng.uniform(1, 5, 400)
    spread = b * rng.uniform(0.8, 1.0, 400)  # every entity loses a little
    lumpy = b.copy()
    lumpy[:3] *= 0.2  # three entities hold every loss
    est = estimate_population(b, {"x": (spread, lumpy)}, population_entities=4000).sides["x"]
    p, r, f = est["precision"], est["recall"], est["f1"]
    lo, hi = p.confidence_interval()
    assert (hi - lo) / (2 * 1.96 * p.standard_error) == pytest.approx(1.0, abs=0.1)
    assert 1.0 <= (p.value - lo) / (hi - p.value) < 1.4  # a little further below: one more entity's loss
    lo, hi = r.confidence_interval()
    assert r.value - lo > 2 * (hi - r.value)  # more may be missing than the sample shows, not less
    assert 0.0 <= lo < r.value < hi <= 1.0
    assert "few sampled entities" in r.note and r.effective_entities < FEW_ENTITIES
    for e in (p, r):
        assert math.isnan(e.degrees_of_freedom) and e.to_dict()["degrees_of_freedom"] is None
    assert f.degrees_of_freedom == pytest.approx(min(399.0, max(1.0, f.effective_entities)))
    assert f.to_dict()["degrees_of_freedom"] == pytest.approx(f.degrees_of_freedom)
    flo, fhi = f.confidence_interval()
    assert (flo, fhi) == pytest.approx(bounded_interval(f.value, f.standard_error, (0.0, 1.0))(
        quantile(400, effective=f.effective_entities)), rel=1e-12)
    assert degrees_of_freedom(400, math.nan) == 399 and degrees_of_freedom(400, 0.2) == 1.0
    assert degrees_of_freedom(5, 12.0) == 4 and math.isnan(degrees_of_freedom(1, 1.0))
    # a census: standard error 0, a point, whatever the degrees of freedom
    c = estimate_population(b, {"x": (spread, lumpy)}, population_entities=400).sides["x"]["recall"]
    assert c.standard_error == 0 and c.confidence_interval() == (c.value, c.value)


def test_one_entity_has_no_standard_error():
    truth = pa.table({"item_id": [1, 2], "cluster_id": ["a", "a"]})
    clustering = pa.table({"item_id": [1, 2, 3], "cluster_id": [7, 7, 7]})
    r = estimate_pointwise(truth, clustering, truth_sample="uniform")
    e = r.estimates["precision"]
    assert e.value == pytest.approx(2 / 3) and math.isnan(e.standard_error) and "one sampled entity" in e.note
    assert e.to_dict()["std_err"] is None and e.to_dict()["ci_low"] is None
    assert any("one entity" in n for n in r.notes)


def test_a_bounded_interval():
    e = PopulationEstimate("precision", 0.9, 0.05, 100, "hajek_srswor", (0.0, 1.0))
    lo, hi = e.confidence_interval()
    assert 0 < lo < 0.9 < hi < 1 and (0.9 - lo) > (hi - 0.9)  # longer toward the middle
    d = PopulationEstimate("delta_recall", -0.95, 0.1, 100, "hajek_srswor", (-1.0, 1.0))
    lo, hi = d.confidence_interval()
    assert -1 < lo < -0.95 < hi < 1
    assert PopulationEstimate("recall", 1.0, 0.0, 10, "hajek_poisson", (0.0, 1.0)).confidence_interval() == (1.0, 1.0)
    with pytest.raises(InputError, match="confidence_level"):
        e.confidence_interval(1.5)


# ----------------------------------------------------------------------------- refusals
def test_a_truth_item_missing_from_the_clustering_is_refused():
    truth = pa.table({"item_id": [1, 2, 3, 99], "cluster_id": ["a", "a", "b", "b"]})
    clustering = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": [7, 7, 8, 8]})
    with pytest.raises(InputError, match=r"1 items of the truth table are not in the clustering table \(first: 99\)"):
        estimate_pointwise(truth, clustering, truth_sample="uniform")


@pytest.mark.parametrize("column, values, match", [
    ("nope", None, r"Column 'nope' \(the truth sample's inclusion probabilities.*Existing columns: 'item_id', "
                   r"'cluster_id', 'inclusion'"),
    ("inclusion", ["x", "y", "z"], "has type string; inclusion probabilities must be numbers"),
    ("inclusion", [True, True, False], "has type boolean"),
    ("inclusion", [0.5, 0.5, 0.0], r"1 rows of the truth table have an inclusion probability outside \(0, 1\] in "
                                   r"column 'inclusion' \(first: item 3 of entity 'b': 0.0\)"),
    ("inclusion", [0.5, 0.5, 1.5], r"item 3 of entity 'b': 1.5"),
    ("inclusion", [0.5, 0.5, None], r"item 3 of entity 'b': null"),
    ("inclusion", [0.5, 0.5, float("nan")], r"item 3 of entity 'b': NaN"),
    ("inclusion", [0.5, 0.4, 0.2], r"differs within an entity \(1 entity holds more than one value; first: "
                                   r"entity 'a' has 0.4 and 0.5\)"),
])
def test_the_inclusion_column_is_checked(column, values, match):
    truth, clustering = small()
    if values is not None:
        truth = truth.set_column(2, "inclusion", pa.array(values))
    with pytest.raises(InputError, match=match):
        estimate_pointwise(truth, clustering, truth_sample=column)


def test_the_inclusion_column_of_a_file_is_named(tmp_path):
    truth, clustering = small()
    path = tmp_path / "truth.parquet"
    pq.write_table(truth.set_column(2, "inclusion", pa.array([0.5, 0.5, 2.0])), path)
    with pytest.raises(InputError, match=r"truth file '.*truth.parquet'"):
        estimate_pointwise(path, clustering, truth_sample="inclusion")


@pytest.mark.parametrize("kw, match", [
    ({"truth_sample": ""}, "truth_sample is 'uniform'"),
    ({"truth_sample": 3}, "truth_sample is 'uniform'"),
    ({"truth_sample": "uniform", "population_entities": 1}, "at least the 2 entities"),
    ({"truth_sample": "uniform", "population_entities": "many"}, "must be a number of entities"),
    ({"truth_sample": "inclusion", "population_entities": 10}, "applies to truth_sample='uniform'"),
])
def test_bad_designs_are_refused(kw, match):
    truth, clustering = small()
    with pytest.raises(InputError, match=match):
        estimate_pointwise(truth, clustering, **kw)


def test_clusterings_are_given_one_way():
    truth, clustering = small()
    with pytest.raises(InputError, match="not both"):
        estimate_pointwise(truth, clustering, base=clustering, exp=clustering, truth_sample="uniform")
    with pytest.raises(InputError, match="is needed"):
        estimate_pointwise(truth, base=clustering, truth_sample="uniform")
    with pytest.raises(InputError, match="needs truth_sample"):
        abcde.pointwise(truth, clustering, population_entities=10)


def test_a_slice_column_named_as_a_field_is_refused():
    truth, clustering = small()
    items = pa.table({"item_id": [1, 2, 3, 4], "entities": ["x", "y", "x", "y"]})
    with pytest.raises(InputError, match="rename the column"):
        estimate_pointwise(truth, clustering, items=items, truth_sample="uniform", slice_by=["entities"])
    assert issubclass(InputError, AbcdeError)
