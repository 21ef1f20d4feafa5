"""A sampled-entity truth that saw no loss (issue 51, item 2): only a census of entities gives a
point; a sample whose entities all score 100% gets an upper bound on what the unsampled entities may
lose, from the design (Clopper–Pearson's bound for no event, the rule of three's two-sided form).

FEBRL 3 (the bundled example) holds Exp's whole precision loss in 18 of its 2,000 entities, so small
samples of entities often see none: 300 seeds of 40 and of 80 entities, uniform and ∝ size."""

from __future__ import annotations

import numpy as np
import pytest

from test_truth_sample_sim import Population, febrl_world
from abcde.metrics.population import MassInterval, estimate_population

SEEDS = 300


@pytest.fixture(scope="module")
def febrl():
    return Population(febrl_world())


@pytest.mark.parametrize("design,size", [("uniform", 40), ("uniform", 80), ("size", 80)])
def test_samples_that_see_no_loss_still_cover_the_truth(febrl, design, size):
    pop = febrl
    fraction = size / pop.N
    truth = {s: pop.totals[s].precision_sum.sum() / pop.B.sum() for s in ("base", "exp")}
    covered, blind, points = {s: 0 for s in truth}, 0, 0
    for seed in range(SEEDS):
        idx, pi = pop.draw(design, seed, fraction)
        est = pop.estimate(idx, pi)
        for s in truth:
            e = est.sides[s]["precision"]
            lo, hi = e.confidence_interval()
            covered[s] += lo <= truth[s] <= hi
            points += lo == hi
        blind += est.sides["exp"]["precision"].value == 1.0
    assert blind >= 0.2 * SEEDS, blind  # the case asked about: many samples see no loss at all
    assert points == 0  # no census here, so no point interval
    for s in truth:
        assert covered[s] / SEEDS >= 0.93, (s, covered[s] / SEEDS, blind)


def test_a_census_of_entities_is_still_a_point():
    b = np.array([1.0, 2.0, 3.0])
    pop = estimate_population(b, {"exp": (b.copy(), b.copy())}, inclusion=np.ones(3))
    lo, hi = pop.sides["exp"]["precision"].confidence_interval()
    assert lo == hi == 1.0


def test_the_zero_events_bound_is_clopper_pearsons():
    """No event among n sampled entities: the upper end is 1 − (α/2)^(1/n) of the sampled weight
    (3.69/n at 95% for large n; a census adds nothing)."""
    m = MassInterval(0.0, 0.0, 0.0, 0.0, weight=1.0, entities=100.0)
    assert m.interval(0.95) == (0.0, pytest.approx(1 - 0.025 ** (1 / 100)))
    assert MassInterval(0.0, 0.0, 0.0, 0.0).interval(0.95) == (0.0, 0.0)
    half = MassInterval(0.01, 0.0, 0.0, 0.0, weight=0.5, entities=100.0).interval(0.95)
    assert half == (0.01, pytest.approx(0.01 + 0.5 * (1 - 0.025 ** (1 / 100))))
