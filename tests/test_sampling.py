"""The weighted sampler with replacement (paper, Appendix "Sampling at scale")."""

from __future__ import annotations

import hashlib
import math

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


def md5_uniform(key, seed, salt=""):
    """The documented uniform, computed here with hashlib: the first 13 hex digits (52 bits) of
    md5("<seed>:<salt><key>") as a number in (0, 1), (h + 1/2) / 16^13."""
    h = hashlib.md5(f"{seed}:{salt}{key}".encode()).hexdigest()
    return (int(h[:13], 16) + 0.5) / 16**13


def test_md5_uniform_hand_worked():
    # md5("7:x:a") = 4790c1bb4b953db9e8d3...; its first 13 hex digits 0x4790c1bb4b953 = 1258992818239827
    assert hashlib.md5(b"7:x:a").hexdigest().startswith("4790c1bb4b953")
    assert md5_uniform("a", 7, "x:") == (1258992818239827 + 0.5) / 2**52
    assert hash_uniform_py("a", 7, "x:") == md5_uniform("a", 7, "x:")


def test_engine_hash_equals_python_md5(eng):
    ids = ["a", "b", "rec-1-dup-0", "üñí", "12345678901234567890"]
    t = ibis.memtable(pa.table({"k": ids}))
    got = eng.to_arrow(t.select("k", u=hash_uniform(t.k, 7, "x:"))).to_pylist()
    for row in got:
        assert row["u"] == md5_uniform(row["k"], 7, "x:")
        assert row["u"] == hash_uniform_py(row["k"], 7, "x:")
        assert 0 < row["u"] < 1
    ints = ibis.memtable(pa.table({"k": [0, 1, 2**40]}))
    for row in eng.to_arrow(ints.select("k", u=hash_uniform(ints.k, 3))).to_pylist():
        assert row["u"] == md5_uniform(row["k"], 3)


def population(k=12, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(k), "w": rng.lognormal(0, 1, k)})


def python_top(pop: pa.Table, n: int, seed: int) -> pa.Table:
    """The N smallest exponential clocks dt0 = -ln(u)/w, computed here from the md5 uniform."""
    w = pop.column("w").to_numpy()
    u = np.array([md5_uniform(i, seed) for i in pop.column("id").to_pylist()])
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
    top = python_top(pop, 8, 11)
    assert a.table.column("id").to_pylist() == top.column("id").to_pylist()
    assert a.table.column("dt0").to_pylist() == pytest.approx(top.column("dt0").to_pylist(), rel=1e-12)
    # Step 3 of the appendix, worked here: M = the largest dt0, dc = 1 + Poisson(w·(M − dt0)) from
    # numpy's generator seeded [seed, 1] (the documented stream); the last item is drawn once.
    dt0 = top.column("dt0").to_numpy()
    w = top.column("w").to_numpy()
    M = dt0.max()
    dc = 1 + np.random.default_rng([11, 1]).poisson(w * (M - dt0))
    assert a.table.column("draw_count").to_pylist() == dc.tolist()
    assert a.horizon == pytest.approx(M, rel=1e-12)
    assert a.draws == int(dc.sum())
    assert dc[np.argmax(dt0)] == 1


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


# The engine's clocks (many-seed sampler, one query) against the exact inclusion probabilities.
# Population: population(12, seed=3); the sample without replacement of n = 1 holds e with
# probability π_e = w_e/Σw (tests/reference.inclusion_probabilities, exact). Per-cell z over
# S = 60,000 seeds, Bonferroni over the 12 cells: |z| ≤ Φ⁻¹(1 − 0.001/24) = 3.93, so a correct
# sampler fails < 1 run in 1,000. Power against a 5% error in the largest cell's weight
# (π 0.6551 → 0.6660): shift sqrt(60000)·0.0109/sqrt(0.6551·0.3449) = 5.6, power 0.95
# (asserted below from the exact probabilities); against a 5% error in π itself, power > 0.999.
@pytest.mark.slow
def test_engine_clocks_inclusion_follows_the_exact_probabilities(eng):
    from scipy import stats

    import reference as ref
    from abcde.sampling.clocks import smallest_draw_times_many

    pop = population(12, seed=3)
    w = dict(zip(pop.column("id").to_pylist(), pop.column("w").to_pylist()))
    K, n, S = len(w), 1, 60_000
    zc = float(stats.norm.isf(1e-3 / (2 * K)))
    pi = ref.inclusion_probabilities(w, n)
    assert pi[0] == pytest.approx(w[0] / sum(w.values()), rel=1e-12)  # n = 1: the smallest clock
    top = max(w, key=w.get)
    pi_wrong = ref.inclusion_probabilities({**w, top: w[top] * 1.05}, n)
    p0, p1 = pi[top], pi_wrong[top]
    shift = math.sqrt(S) * (p1 - p0) / math.sqrt(p0 * (1 - p0))
    ratio = math.sqrt(p1 * (1 - p1) / (p0 * (1 - p0)))
    assert stats.norm.sf((zc - shift) / ratio) >= 0.9, shift

    tops = smallest_draw_times_many(eng, ibis.memtable(pop), key="id", weight="w", n=n, seeds=range(S))
    held = np.zeros(K)
    for t in tops.values():
        assert t.num_rows == n
        held[t.column("id").to_numpy()] += 1
    p = np.array([pi[i] for i in range(K)])
    z = (held - S * p) / np.sqrt(S * p * (1 - p))
    assert np.all(np.abs(z) <= zc), (zc, z)
    pw = np.array([pi_wrong[i] for i in range(K)])
    assert np.max(np.abs((held - S * pw) / np.sqrt(S * pw * (1 - pw)))) > zc  # the band rejects a 5% error


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_bad_sizes(eng, bad):
    with pytest.raises(InputError, match="sample size must be a positive integer"):
        sample_with_replacement(eng, ibis.memtable(population()), key="id", weight="w", n=bad, seed=1)


def test_the_engines_hex_conversion_gives_the_portable_uniforms():
    """DuckDB reads a clock's 13 hex digits by a direct cast (issue 49: a third of the time of the
    digit-by-digit sum every engine can do); the uniforms are the same numbers, bit for bit, as the
    portable sum's and as Python's md5."""
    import ibis
    import pyarrow as pa

    from abcde.sampling.clocks import hash_uniform, hash_uniform_py

    eng = abcde.connect()
    keys = [str(k) for k in range(3000)] + ["é", "", "x" * 70, "a|b", "-1"]
    t = ibis.memtable(pa.table({"k": keys}))
    direct = eng.to_arrow(t.select(u=hash_uniform(t.k, 11, "pairs:", eng))).column("u").to_pylist()
    portable = eng.to_arrow(t.select(u=hash_uniform(t.k, 11, "pairs:"))).column("u").to_pylist()
    assert direct == portable == [hash_uniform_py(k, 11, "pairs:") for k in keys]
