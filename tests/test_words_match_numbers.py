"""Words that contradict the numbers, and extreme designs (issue 50, classes 4 and 5): what a sentence
says is what the numbers can say.

* Base keeps no true link: the recall lift can never be defined, so it is never "not known yet" or
  "0 so far", and no next step waits for it.
* Identical clusterings: said once that nothing changed, never "a larger sample could tell".
* No "-0.000%" (or "-0.0000") anywhere a number is written.
* An extreme but valid truth-sample design (an inclusion probability of 1e-300 or 5e-324, a population
  of 1e160 entities) gives the estimates it implies, never an overflow to "one sampled entity" of many,
  never a traceback.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.metrics.population import estimate_population
from abcde.quality.recall import RECALL_STRATA, _Part, lift_estimate
from abcde.quality.verdict import verdict
from abcde.quality.verdict_truth import design_words
from abcde.util import display

P = {k: str(v) for k, v in example_paths().items()}


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


# ----------------------------------------------------------------------------- identical clusterings
def test_identical_clusterings_say_once_that_nothing_changed(tmp_path):
    ev = tmp_path / "ev"
    out = cli("evaluate", "--base", P["base"], "--exp", P["base"], "--items", P["items"], "--out", ev,
              "--budget", 50).output
    assert "nothing changed" in out.lower()
    assert "Nothing to judge" in out and "judge serve" not in out, out[-600:]
    assert "UserWarning" not in out and "the sample is empty" not in out

    q = cli("quality", ev / "quality").output
    head = q.strip().splitlines()[0]
    assert head.startswith("Nothing changed"), head
    for wrong in ("a larger sample could tell", "not distinguishable", "No detectable change", "Next:"):
        assert wrong not in q, wrong
    facts = json.loads(cli("quality", ev / "quality", "--json").output)["verdict_facts"]
    assert facts["nothing_changed"] is True and facts["overall"] == "none" and facts["next_step"] is None
    assert facts["precision"]["exact"] and facts["precision"]["estimate"] == 0.0
    assert facts["recall"]["exact"] and facts["recall"]["estimate"] == 0.0

    rep = cli("report", ev).output
    assert "No judgements" not in rep and "judge serve" not in rep


# ----------------------------------------------------------------------------- Base keeps no true link
def singletons_world(d):
    """Base: every item alone (no pair, so no true link); Exp: groups of three, two of them one entity."""
    ids = [f"i{k:02d}" for k in range(30)]
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [f"b{k}" for k in range(30)]}), d / "base.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [f"e{k // 3}" for k in range(30)]}), d / "exp.parquet")
    pq.write_table(pa.table({"item_id": ids, "entity": [f"t{k // 2}" for k in range(30)]}), d / "items.parquet")


def test_base_without_true_links_says_the_lift_is_never_defined(tmp_path):
    singletons_world(tmp_path)
    s = tmp_path / "pairs"
    cli("pairs", "--base", tmp_path / "base.parquet", "--exp", tmp_path / "exp.parquet", "--items",
        tmp_path / "items.parquet", "--budget", 20, "--seed", 1, "--hide", "entity", "--out", s, "-q")
    cli("judge", "oracle", s, "--oracle-column", "entity")
    d = json.loads(cli("quality", s, "--json").output)
    rl = d["recall_lift"]
    assert rl["estimate"] is None and rl["exact"] is True
    assert "no true link" in rl["note"] and "so far" not in rl["note"]
    text = cli("quality", s).output
    assert "The recall lift is not defined" in text
    for wrong in ("not known yet", "so far", "Recall is not known"):
        assert wrong not in text, (wrong, text)
    facts = d["verdict_facts"]
    assert facts["recall"]["never"] is True
    assert (facts["next_step"] or {}).get("side") != "recall"


def part(total, hi, *, exact=True, n=3):
    return _Part(total, 0.0, 0.0, hi, n, exact)


def test_a_census_where_every_base_pair_is_different_is_never_defined_and_a_sample_is_not_yet():
    """Every pair Base puts together judged different in a census: no true link can appear; the same
    zeros from a sample of those pairs leave the unseen ones open (a different sentence)."""
    census = {k: part(0.0, 0.0) for k in RECALL_STRATA}
    census["merge"] = part(0.2, 0.3)
    est, exact = lift_estimate(census, method="m")
    assert exact and math.isnan(est.value) and "no judgement can change that" in est.note
    sampled = dict(census, agreed=_Part(0.0, 0.0, 0.0, 0.4, 5, False, share=0.0, n_eff=5.0))
    est, exact = lift_estimate(sampled, method="m")
    assert not exact and "no judgement can change that" not in est.note


# ----------------------------------------------------------------------------- no minus zero
@pytest.mark.parametrize("v", [-0.0, -1e-12, -4e-9, -1e-10])
def test_zero_is_never_written_with_a_minus_sign(v):
    assert not display.pct(v).startswith("-") and not display.four(v).startswith("-")


@pytest.mark.parametrize("v", [-2e-7, -3e-6, 4e-8])
def test_a_tiny_real_change_keeps_its_sign_and_two_digits(v):
    text = display.pct(v)
    assert text != "0.000%" and text.startswith("-") == (v < 0)
    assert float(text.rstrip("%")) / 100 == pytest.approx(v, rel=0.05)


def test_no_sentence_says_minus_zero():
    from test_verdict_recall import quality  # the real example's result, changed

    for e in (-0.0, -1e-12, -1e-7):
        for r_exact in (True, False):
            q = quality((e, e - 1e-12, 1e-12, 1e-13), (e, e - 1e-12, 1e-12, 1e-13), r_exact=r_exact)
            text = verdict(q).text
            assert "-0.000%" not in text and "-0.0000 " not in text and "-0.0000)" not in text, text


# ----------------------------------------------------------------------------- extreme designs
def entity_sums(n=40, seed=3):
    rng = np.random.default_rng(seed)
    b = rng.integers(1, 6, n).astype(float)
    lose = rng.random(n) < 0.3
    ap = np.where(lose, b * rng.uniform(0.3, 0.9, n), b)
    ar = np.where(rng.random(n) < 0.3, b * rng.uniform(0.3, 0.9, n), b)
    return b, {"base": (ap, ar), "exp": (b.copy(), ar * 0.95)}


@pytest.mark.parametrize("tiny", [1e-300, 5e-324])
def test_an_extreme_inclusion_probability_gives_the_estimates_it_implies(tiny):
    """One entity with π = 1e-300 (or the smallest double) carries nearly all the weight: the estimates
    are its own, the variance is finite, and nothing says "one sampled entity" of 40."""
    b, sums = entity_sums()
    pi = np.full(b.size, 0.5)
    pi[7] = tiny
    pop = estimate_population(b, sums, inclusion=pi)
    p = pop.sides["base"]["precision"]
    assert p.value == pytest.approx(sums["base"][0][7] / b[7], rel=1e-9)
    for e in [*(x for s in pop.sides.values() for x in s.values()), *pop.deltas.values()]:
        assert math.isfinite(e.value) and math.isfinite(e.standard_error), (e.metric, e)
        assert "one sampled entity" not in e.note
        json.dumps(e.to_dict(), allow_nan=False)
    # A moderate version of the same design gives the same numbers as the scale-free computation.
    words = design_words({"design": "poisson", "entities": 40, "population_entities": pop.population_entities,
                          "census": False, "column": "p"})
    assert ("more than 10^308" in words) if tiny < 1e-308 else ("1.0 × 10^300" in words), words


def test_a_population_of_1e160_entities_is_the_limit_of_large_populations():
    """A simple random sample of 40 of 1e160 entities: the finite-population correction is 1, so the
    estimates and standard errors are those of 1e15 entities (no N² overflow to a NaN variance)."""
    b, sums = entity_sums()
    huge = estimate_population(b, sums, population_entities=1e160)
    large = estimate_population(b, sums, population_entities=1e15)
    for side in ("base", "exp"):
        for m in ("precision", "recall", "f1"):
            h, g = huge.sides[side][m], large.sides[side][m]
            assert h.value == pytest.approx(g.value, rel=1e-12)
            assert h.standard_error == pytest.approx(g.standard_error, rel=1e-9, abs=1e-15)
            assert "one sampled entity" not in h.note
    assert huge.sides["base"]["precision"].standard_error > 0 and huge.deltas["delta_precision"].standard_error > 0
    assert "1.0 × 10^160" in design_words({"design": "uniform", "entities": 40, "population_entities": 1e160,
                                           "population_entities_from": "given", "census": False, "column": None})


def test_the_cli_reads_an_inclusion_probability_of_5e_324_in_one_piece(tmp_path):
    t = pq.read_table(P["truth"])
    ents = sorted(set(t.column(1).to_pylist()))[:40]
    t = t.filter(pa.compute.is_in(t.column(1), pa.array(ents)))
    t = t.append_column("incl", pa.array([5e-324 if e == ents[0] else 0.5 for e in t.column(1).to_pylist()]))
    pq.write_table(t, tmp_path / "t.parquet")
    r = cli("pointwise", "--truth", tmp_path / "t.parquet", "--base", P["base"], "--exp", P["exp"], "--items",
            P["items"], "--truth-sample", "incl")
    assert "Traceback" not in r.output and "one sampled entity" not in r.output
    assert "40 entities listed, more than 10^308 in the population" in r.output
