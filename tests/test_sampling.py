"""The weighted sampler with replacement (paper, Appendix "Sampling at scale")."""

from __future__ import annotations

import ibis
import numpy as np
import pyarrow as pa
import pytest

import abcde
from abcde.errors import InputError
from abcde.sampling.clocks import (
    draw_counts,
    hash_uniform,
    hash_uniform_py,
    sample_with_replacement,
    successive_draws,
)


@pytest.fixture(scope="module")
def eng():
    return abcde.connect()


def test_engine_hash_equals_python_md5(eng):
    ids = ["a", "b", "rec-1-dup-0", "üñí", "12345678901234567890"]
    t = ibis.memtable(pa.table({"k": ids}))
    got = eng.to_arrow(t.select("k", u=hash_uniform(t.k, 7, "x:"))).to_pylist()
    for row in got:
        assert row["u"] == hash_uniform_py(row["k"], 7, "x:")
        assert 0 < row["u"] < 1
    ints = ibis.memtable(pa.table({"k": [0, 1, 2**40]}))
    for row in eng.to_arrow(ints.select("k", u=hash_uniform(ints.k, 3))).to_pylist():
        assert row["u"] == hash_uniform_py(row["k"], 3)


def population(k=12, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(k), "w": rng.lognormal(0, 1, k)})


def python_top(pop: pa.Table, n: int, seed: int) -> pa.Table:
    """The N smallest exponential clocks computed in Python from the same hash."""
    w = pop.column("w").to_numpy()
    u = np.array([hash_uniform_py(i, seed) for i in pop.column("id").to_pylist()])
    dt0 = -np.log(u) / w
    order = np.argsort(dt0, kind="stable")[:n]
    return pop.take(pa.array(order)).append_column("dt0", pa.array(dt0[order]))


def test_engine_sample_equals_python_sample_and_is_reproducible(eng):
    pop = population(30)
    t = ibis.memtable(pop)
    a = sample_with_replacement(eng, t, key="id", weight="w", n=8, seed=11)
    b = sample_with_replacement(eng, t, key="id", weight="w", n=8, seed=11)
    c = sample_with_replacement(eng, t, key="id", weight="w", n=8, seed=12)
    assert a.table.equals(b.table)
    assert a.table.column("id").to_pylist() != c.table.column("id").to_pylist()
    py = draw_counts(python_top(pop, 8, 11), weight="w", seed=11)
    assert a.table.column("id").to_pylist() == py.table.column("id").to_pylist()
    assert a.table.column("draw_count").to_pylist() == py.table.column("draw_count").to_pylist()


def wald_z(sampler, k=10, n=4, seeds=1500):
    """Per element, z-scores of mean(c_e - p_e * D) over seeds.

    The draws are i.i.d. with probabilities p up to a stopping time, so by Wald's
    identity E[c_e] = p_e E[D] exactly: each z is approximately standard normal.
    """
    pop = population(k, seed=3)
    p = pop.column("w").to_numpy() / pop.column("w").to_numpy().sum()
    r = np.zeros((seeds, k))
    for s in range(seeds):
        res = sampler(python_top(pop, n, s), s)
        c = np.zeros(k)
        c[res.table.column("id").to_numpy()] = res.table.column("draw_count").to_numpy()
        r[s] = c - p * c.sum()
    return r.mean(0) / (r.std(0, ddof=1) / np.sqrt(seeds))


def test_poisson_draw_counts_follow_the_weights():
    z = wald_z(lambda top, s: draw_counts(top, weight="w", seed=s))
    assert np.all(np.abs(z) < 4.0), z
    # and a chi-square of the z-scores (K-1 free dimensions) is not extreme
    from scipy import stats

    assert stats.chi2.sf((z**2).sum(), len(z) - 1) > 1e-4


def test_successive_draws_follow_the_weights_and_stop_at_n_unique():
    z = wald_z(lambda top, s: successive_draws(top, weight="w", seed=s, unique=3))
    assert np.all(np.abs(z) < 4.0), z
    res = successive_draws(python_top(population(), 6, 5), weight="w", seed=5, unique=4)
    assert res.table.num_rows == 4
    assert res.draws == sum(res.table.column("draw_count").to_pylist())


def test_without_replacement_inclusion_follows_exponential_clocks():
    # P(element e drawn first) = w_e / sum(w): the smallest clock.
    pop = population(6, seed=1)
    p = pop.column("w").to_numpy() / pop.column("w").to_numpy().sum()
    seeds = 4000
    first = np.bincount([python_top(pop, 1, s).column("id")[0].as_py() for s in range(seeds)], minlength=6)
    from scipy import stats

    assert stats.chisquare(first, p * seeds).pvalue > 1e-4


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_bad_sizes(eng, bad):
    with pytest.raises(InputError, match="sample size must be a positive integer"):
        sample_with_replacement(eng, ibis.memtable(population()), key="id", weight="w", n=bad, seed=1)
