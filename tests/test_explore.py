"""The exploration sample: importance sampling of affected items and estimates on it."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scipy import stats

import abcde
import reference as ref
from abcde.cli import main
from abcde.errors import InputError
from abcde.sampling.clocks import draw_counts, smallest_draw_times_many
from abcde.sampling.explore import ExplorationSample, affected_population, sample_affected


def synthetic(n=2000, seed=0):
    """Clusters of 1-8 items; ~15% of Base clusters split in Exp, ~15% merged in pairs."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, n)
    base = np.repeat(np.arange(n), sizes)[:n]
    exp = base.copy()
    nb = base.max() + 1
    split = rng.random(nb) < 0.15
    move = split[base] & (rng.random(n) < 0.5)
    exp[move] = exp[move] + nb  # the moved part becomes its own cluster
    merge_to = np.where(rng.random(nb) < 0.15, rng.integers(0, nb, nb), np.arange(nb))
    exp = np.where(exp < nb, merge_to[np.minimum(exp, nb - 1)], exp)
    items = pa.table({
        "item_id": np.arange(n),
        "weight": rng.lognormal(0, 0.7, n),
        "src": rng.choice(["wiki", "web", "news"], n, p=[0.5, 0.3, 0.2]),
        "width": rng.integers(100, 1000, n),
    })
    return pa.table({"item_id": np.arange(n), "cluster_id": base}), pa.table(
        {"item_id": np.arange(n), "cluster_id": exp}), items


def as_dicts(base, exp, items):
    """The tables as the reference's dicts: base, exp, weights, and the attributes."""
    ids = items.column("item_id").to_pylist()
    b = dict(zip(base.column("item_id").to_pylist(), base.column("cluster_id").to_pylist()))
    e = dict(zip(exp.column("item_id").to_pylist(), exp.column("cluster_id").to_pylist()))
    w = dict(zip(ids, items.column("weight").to_pylist()))
    attrs = {c: dict(zip(ids, items.column(c).to_pylist())) for c in ("src", "width")}
    return b, e, w, attrs


@pytest.fixture(scope="module")
def world():
    base, exp, items = synthetic()
    res = abcde.impact(base, exp, items=items)
    b, e, w, attrs = as_dicts(base, exp, items)
    in_slice = [i for i in b if attrs["src"][i] == "wiki" and attrs["width"][i] <= 512]
    # Exact values from tests/reference.py (shares no code with abcde): per check, the mean μ,
    # variance σ² and fourth central moment of y(i) = m(i)·JD(T)/JD(i)·1(i ∈ I) for one draw ~ q.
    moments = {}
    for where, items_ in (("all", None), ("slice", in_slice)):
        for m in (*SHORT, None):
            moments[(where, m)] = ref.draw_moments(ref.exploration_draw_values(b, e, w, m, items_))
    truth = {
        "overall": ref.overall(b, e, w),
        "rows": ref.exploration_items(b, e, w),
        "moments": moments,
        "in_slice": set(in_slice),
        "items": items,
    }
    return res, truth


WHERE = "src = 'wiki' AND width <= 512"
SHORT = {"split_rate": "split", "merge_rate": "merge", "jaccard_distance": "jaccard"}
FIELD = {**{m: f"{s}_contribution" for m, s in SHORT.items()}, None: "weight_share"}


def many_samples(res, size, seeds):
    """The exploration samples of many seeds with one engine query: the affected population
    (``affected_population``, what ``sample_affected`` samples), its smallest clocks for every
    seed from the many-seed sampler (``smallest_draw_times_many``), then each seed's Poisson
    draw counts (``draw_counts``). ``test_many_seed_samples_are_sample_affected_samples``
    proves each is the sample ``sample_affected`` draws with that seed."""
    pop = affected_population(res.diff)
    tops = smallest_draw_times_many(res.diff.engine, pop, key="item_id", weight="q", n=size, seeds=seeds)
    return {s: draw_counts(tops[s], weight="q", seed=s).table for s in seeds}


def pooled_sample(res, items, size, seeds):
    """One ExplorationSample holding the draws of all ``seeds`` (independent samples with
    replacement pooled are a sample with replacement of all their draws): its estimate is
    Σ_all dc·y / D_all, with D_all = Σ dc over every seed."""
    tables = many_samples(res, size, seeds)
    t = pa.concat_tables(tables.values()).drop_columns(["q", "dt0"])
    meta = dict(sample_affected(res, size=size, seed=seeds[0]).metadata)  # the library's exact JD(T) etc.
    D = int(pc.sum(t.column("draw_count")).as_py())
    iw = (t.column("draw_count").to_numpy() / D * meta["jaccard_distance_T"] / t.column("jaccard_distance").to_numpy())
    t = t.append_column("importance_weight", pa.array(iw))
    attrs = items.select(["item_id", "src", "width"])
    idx = {v: k for k, v in enumerate(attrs.column("item_id").to_pylist())}
    take = pa.array([idx[i] for i in t.column("item_id").to_pylist()])
    for c in ("src", "width"):
        t = t.append_column(c, attrs.column(c).take(take))
    meta.update(total_draws=D, unique_items=t.num_rows, seed=None)
    return ExplorationSample(t, meta), D


def test_many_seed_samples_are_sample_affected_samples(world):
    res, _ = world
    seeds = [0, 7, 123]
    many = many_samples(res, 40, seeds)
    for s in seeds:
        one = sample_affected(res, size=40, seed=s).table
        got = many[s]
        assert got.column("item_id").to_pylist() == one.column("item_id").to_pylist()
        assert got.column("draw_count").to_pylist() == one.column("draw_count").to_pylist()
        for c in ("weight", "split_rate", "merge_rate", "jaccard_distance"):
            assert got.column(c).to_pylist() == one.column(c).to_pylist()


# Estimates over many seeds, with the power to catch a 5% bias.
#
# One draw of item i adds y(i) = m(i)·JD(T)/JD(i)·1(i ∈ I) to the sum; the estimate is
# Σ_draws y / D. The draws are i.i.d. ~ q up to a stopping time (the N-th distinct item), so by
# Wald's identities the sum over a seed's D draws of (y − μ) has mean 0 and variance σ²·E[D],
# with μ = the exact contribution (or weight share) and σ² the exact variance of y under q
# (both from tests/reference.py). Pooled over all seeds (D_all draws),
#     z = (estimate − μ) · sqrt(D_all) / σ  ~  N(0, 1).
# Checks: SplitRate and MergeRate contributions and the weight share overall, and the three
# contributions and the weight share of the slice WHERE: K = 7 (the overall JaccardDistance
# contribution is exact, y ≡ JD(T): checked for equality instead). Bonferroni: each check
# two-sided at 0.001/7, |z| ≤ z_c = 3.80, so a correct estimator fails < 1 run in 1,000.
# Power: an estimate biased by 5% shifts z by 0.05·μ·sqrt(D_all)/σ. With size 200 per seed
# (≈ 257 draws) and 640 seeds, D_all ≈ 164,000; the worst check (the slice's SplitRate
# contribution, σ/μ = 2.92) shifts by 0.05·sqrt(164000)/2.92 ≈ 6.9, so P(|z| > 3.80) ≈ 0.999;
# the test asserts every check's power ≥ 0.99 from the realized D_all.
K_CHECKS = 7
Z_C = float(stats.norm.isf(1e-3 / (2 * K_CHECKS)))


def z_scores(sample, D, moments, scale=1.0):
    out = {}
    for where, est in (("all", sample.estimate()), ("slice", sample.estimate(WHERE))):
        for m in (*SHORT, None):
            mu, var, _ = moments[(where, m)]
            if where == "all" and m == "jaccard_distance":
                continue
            out[(where, m)] = (scale * getattr(est, FIELD[m]) - mu) * math.sqrt(D) / math.sqrt(var)
    assert len(out) == K_CHECKS
    return out


@pytest.mark.slow
def test_estimates_are_unbiased_over_many_seeds(world):
    res, truth = world
    sample, D = pooled_sample(res, truth["items"], 200, list(range(640)))
    moments = truth["moments"]
    # the design's power, from the realized number of draws
    for key, (mu, var, _) in moments.items():
        if key == ("all", "jaccard_distance"):
            assert var < 1e-20 * mu * mu  # y ≡ JD(T): no spread; the estimate is exact
            continue
        shift = 0.05 * abs(mu) * math.sqrt(D) / math.sqrt(var)
        power = stats.norm.sf(Z_C - shift) + stats.norm.cdf(-Z_C - shift)
        assert power >= 0.99, (key, shift, power)
    z = z_scores(sample, D, moments)
    print("D_all", D, "z", {k: round(v, 2) for k, v in z.items()})
    assert all(abs(v) <= Z_C for v in z.values()), (Z_C, z)
    # self-test: the same band rejects the estimates scaled by 1.05 or 0.95 (every check)
    for scale in (1.05, 0.95):
        zb = z_scores(sample, D, moments, scale)
        assert all(abs(v) > Z_C for v in zb.values()), (scale, zb)
    # the exact one: every draw adds JD(T)
    assert sample.estimate().jaccard_contribution == pytest.approx(truth["overall"]["jaccard_distance"], rel=1e-12)

    # Standard errors: the reported SE of the pooled estimate is s_y/sqrt(D_all); s_y² estimates σ²
    # with relative SD sqrt((κ − 1)/D_all) (κ = m4/σ⁴), so SE/(σ/sqrt(D_all)) has SD ≈ ½·sqrt((κ − 1)/D_all):
    # between 0.3% and 1.1% here; the band is Z_C of those SDs (Bonferroni over the 7 checks).
    for where, est in (("all", sample.estimate()), ("slice", sample.estimate(WHERE))):
        for m in (*SHORT, None):
            mu, var, m4 = moments[(where, m)]
            se = est.std_err[FIELD[m]]
            if where == "all" and m == "jaccard_distance":
                assert se == pytest.approx(0.0, abs=1e-12)
                continue
            ratio = se / math.sqrt(var / D)
            sd = 0.5 * math.sqrt((m4 / var**2 - 1) / D)
            assert abs(ratio - 1) <= Z_C * sd, (where, m, ratio, sd)


def test_estimate_and_standard_error_are_the_papers_formulas(world):
    """On one sample: estimate = Σ_i dc(i)·m(i)·JD(T)/JD(i) / Σ dc over the slice's rows, and
    SE = sd(y over the D draws, ddof 1)/sqrt(D), with m, JD and JD(T) from the reference."""
    res, truth = world
    s = sample_affected(res, size=300, seed=5)
    rows = s.table.to_pylist()
    D = sum(r["draw_count"] for r in rows)
    assert s.metadata["total_draws"] == D
    jd_t = truth["overall"]["jaccard_distance"]
    for where, est in ((None, s.estimate()), (WHERE, s.estimate(WHERE))):
        keep = [r for r in rows if where is None or r["item_id"] in truth["in_slice"]]
        assert est.sampled_items == len(keep)
        assert est.draws == sum(r["draw_count"] for r in keep)
        for m in (*SHORT, None):
            y = np.zeros(D)
            k = 0
            for r in rows:
                ref_row = truth["rows"][r["item_id"]]
                inside = where is None or r["item_id"] in truth["in_slice"]
                v = (1.0 if m is None else ref_row[m]) * jd_t / ref_row["jaccard_distance"] if inside else 0.0
                y[k:k + r["draw_count"]] = v
                k += r["draw_count"]
            assert getattr(est, FIELD[m]) == pytest.approx(y.sum() / D, rel=1e-9, abs=1e-15), (where, m)
            # (abs: the one-pass variance leaves ~1e-9 where y is constant, JD overall)
            assert est.std_err[FIELD[m]] == pytest.approx(y.std(ddof=1) / math.sqrt(D), rel=1e-6, abs=1e-8)
        for m in SHORT:
            assert getattr(est, m) == pytest.approx(getattr(est, FIELD[m]) / est.weight_share, rel=1e-12)


def test_full_sized_sample_holds_every_affected_item_with_its_exact_metrics(world):
    res, truth = world
    sample = sample_affected(res, size=res.affected_items, seed=3)
    rows = {r["item_id"]: r for r in sample.table.to_pylist()}
    assert set(rows) == set(truth["rows"])  # every affected item, no other
    for i, r in rows.items():
        want = truth["rows"][i]
        for c in ("weight", *SHORT):
            assert r[c] == pytest.approx(want[c], rel=1e-9), (i, c)
    # the overall JaccardDistance contribution is exact on any sample: each draw adds JD(T)
    assert sample.estimate().jaccard_contribution == pytest.approx(truth["overall"]["jaccard_distance"], rel=1e-12)
    assert sample.metadata["affected_items"] == truth["overall"]["affected_items"]
    assert sample.metadata["affected_weight"] == pytest.approx(truth["overall"]["affected_weight"], rel=1e-9)


# Item inclusion frequencies against the exact inclusion probabilities.
#
# A world of 24 affected items (FREQ_WORLD); the sample of N = 5 unique items holds item i with
# probability π_i = P(its clock is among the 5 smallest), dt0(i) ~ Exp(q_i) (exact, from
# tests/reference.inclusion_probabilities). Over S seeds the count of samples holding i has
# mean S·π_i and variance S·π_i(1 − π_i): per-cell z with Bonferroni over the 24 cells,
# |z| ≤ z_c = Φ⁻¹(1 − 0.001/48) = 4.10, so a correct sampler fails < 1 run in 1,000.
# Power against a 5% error in the largest cell's sampling weight (q_max × 1.05; its inclusion
# probability 0.4542 → 0.4695, +3.4%): with S = 36,000 the shift is
# sqrt(S)·0.0153/sqrt(0.4542·0.5458) ≈ 5.8, power ≈ 0.97 (against a 5% error in π_max itself,
# 0.4542 → 0.4769: shift 8.6, power > 0.999). Draw counts: by Wald's identity
# E[c_i − p_i·D] = 0 with variance p_i(1 − p_i)·E[D] (p = q/Σq); a 5% error in p_max
# (0.1012 → 0.1057 after renormalising) shifts z by 0.0045·sqrt(Σ D)/0.30 = 6.8 (Σ D ≈ 206,000),
# power 0.997. The test computes both powers from the exact probabilities and asserts ≥ 0.9,
# and checks that the observed frequencies reject the 5%-wrong probabilities.
FREQ_SIZE = 5
FREQ_SEEDS = 36_000


def freq_world():
    rng = np.random.default_rng(7)
    n = 40
    base = np.repeat(np.arange(10), 4)[:n]
    exp = base.copy()
    exp[[0, 1]] = 100
    exp[[5, 9, 13]] = 101
    exp[20:24] = 3
    exp[30] = 102
    w = rng.lognormal(0, 0.8, n)
    ids = np.arange(n)
    return (pa.table({"item_id": ids, "cluster_id": base}), pa.table({"item_id": ids, "cluster_id": exp}),
            pa.table({"item_id": ids, "weight": w}))


def cell_power(p0, p1, n, zc):
    """P(|z| > zc) for a count of n Bernoulli(p1) tested against p0."""
    shift = math.sqrt(n) * (p1 - p0) / math.sqrt(p0 * (1 - p0))
    ratio = math.sqrt(p1 * (1 - p1) / (p0 * (1 - p0)))
    return stats.norm.sf((zc - shift) / ratio) + stats.norm.cdf((-zc - shift) / ratio)


@pytest.mark.slow
def test_exploration_sampler_inclusion_and_draw_frequencies():
    base, exp, items = freq_world()
    res = abcde.impact(base, exp, items=items)
    b, e, w = (dict(zip(t.column("item_id").to_pylist(), t.column(c).to_pylist()))
               for t, c in ((base, "cluster_id"), (exp, "cluster_id"), (items, "weight")))
    q = {i: r["q"] for i, r in ref.exploration_items(b, e, w).items()}
    K = len(q)
    assert K == 24 and res.affected_items == K
    zc = float(stats.norm.isf(1e-3 / (2 * K)))
    pi = ref.inclusion_probabilities(q, FREQ_SIZE)
    top = max(q, key=q.get)
    wrong_q = {**q, top: q[top] * 1.05}
    pi_wrong = ref.inclusion_probabilities(wrong_q, FREQ_SIZE)
    # the design's power (normal approximation of the binomial count)
    assert cell_power(pi[top], pi_wrong[top], FREQ_SEEDS, zc) >= 0.9
    assert cell_power(pi[top], 1.05 * pi[top], FREQ_SEEDS, zc) >= 0.999

    seeds = list(range(FREQ_SEEDS))
    samples = many_samples(res, FREQ_SIZE, seeds)
    ids = sorted(q)
    pos = {i: k for k, i in enumerate(ids)}
    held = np.zeros(K)
    counts = np.zeros(K)
    D_total = 0
    for t in samples.values():
        assert t.num_rows == FREQ_SIZE
        k = [pos[i] for i in t.column("item_id").to_pylist()]
        held[k] += 1
        dc = t.column("draw_count").to_numpy()
        counts[k] += dc
        D_total += int(dc.sum())

    def inclusion_z(probs):
        p = np.array([probs[i] for i in ids])
        return (held - FREQ_SEEDS * p) / np.sqrt(FREQ_SEEDS * p * (1 - p))

    z = inclusion_z(pi)
    assert np.all(np.abs(z) <= zc), (zc, z)
    assert np.max(np.abs(inclusion_z(pi_wrong))) > zc  # the band rejects the 5%-wrong sampler

    # draw counts (Wald): E[c_i] = p_i·E[D]
    p = np.array([q[i] for i in ids])
    z = (counts - p * D_total) / np.sqrt(p * (1 - p) * D_total)
    assert np.all(np.abs(z) <= zc), (zc, z)
    k = pos[top]
    p_wrong = np.array([wrong_q[i] for i in ids]) / sum(wrong_q.values())
    shift = (p_wrong[k] - p[k]) * math.sqrt(D_total) / math.sqrt(p[k] * (1 - p[k]))
    assert stats.norm.sf(zc - shift) >= 0.99, shift
    z_wrong = (counts - p_wrong * D_total) / np.sqrt(p_wrong * (1 - p_wrong) * D_total)
    assert np.max(np.abs(z_wrong)) > zc


def test_same_seed_same_sample_different_seed_different(world):
    res, _ = world
    a, b, c = (sample_affected(res, size=50, seed=s) for s in (5, 5, 6))
    assert a.table.equals(b.table)
    assert a.table.column("item_id").to_pylist() != c.table.column("item_id").to_pylist()


def test_importance_weights_and_columns(world):
    res, truth = world
    s = sample_affected(res, size=30, seed=1)
    rows = s.table.to_pylist()
    D = sum(r["draw_count"] for r in rows)
    jd_t = truth["overall"]["jaccard_distance"]
    for r in rows:  # w(i) = dc(i)/Σdc · JD(T)/JD(i), JD from the reference
        jd = truth["rows"][r["item_id"]]["jaccard_distance"]
        assert jd > 0
        assert r["importance_weight"] == pytest.approx(r["draw_count"] / D * jd_t / jd, rel=1e-9)
    assert s.metadata["jaccard_distance_T"] == pytest.approx(jd_t, rel=1e-12)
    assert s.metadata["total_draws"] == D


def test_group_by_ranks_groups_and_examples_come_from_the_slice(world):
    res, truth = world
    s = sample_affected(res, size=300, seed=2)
    groups = s.group(["src"], metric="merge", top=2)
    assert len(groups) == 2
    assert groups[0].merge_contribution >= groups[1].merge_contribution
    all_groups = s.group("src", top=10)
    assert sorted(g.group["src"] for g in all_groups) == ["news", "web", "wiki"]
    # each group's estimate is Σ dc·y / D over its rows, y from the reference's metrics
    rows = s.table.to_pylist()
    D = sum(r["draw_count"] for r in rows)
    jd_t = truth["overall"]["jaccard_distance"]
    for g in all_groups:
        mine = [r for r in rows if r["src"] == g.group["src"]]
        for m in (*SHORT, None):
            want = sum(r["draw_count"] * (1.0 if m is None else truth["rows"][r["item_id"]][m]) * jd_t
                       / truth["rows"][r["item_id"]]["jaccard_distance"] for r in mine) / D
            assert getattr(g, FIELD[m]) == pytest.approx(want, rel=1e-9), (g.group, m)
    # the groups partition the sample: their JaccardDistance contributions add up to JD(T) exactly
    assert sum(g.jaccard_contribution for g in all_groups) == pytest.approx(jd_t, rel=1e-12)
    ex = s.examples(5, where=WHERE, seed=1)
    assert ex.num_rows == 5
    assert set(ex.column("src").to_pylist()) == {"wiki"}
    assert max(ex.column("width").to_pylist()) <= 512


def test_roundtrip_through_parquet(world, tmp_path):
    res, _ = world
    s = sample_affected(res, size=20, seed=1)
    path = s.write(tmp_path / "s.parquet")
    back = ExplorationSample.read(path)
    assert back.table.equals(s.table)
    assert back.metadata == json.loads(json.dumps(s.metadata))


def test_identical_clusterings_give_an_empty_sample_and_a_message(tmp_path):
    base, _, items = synthetic(50)
    with pytest.warns(UserWarning, match="No item is affected"):
        s = abcde.sample_items(base, base, items=items, size=10, seed=1)
    assert s.table.num_rows == 0
    assert s.estimate().sampled_items == 0
    pq.write_table(base, tmp_path / "b.parquet")
    out = CliRunner().invoke(main, ["explore", "sample", "--base", str(tmp_path / "b.parquet"), "--exp",
                                    str(tmp_path / "b.parquet"), "--size", "5", "--seed", "1", "--out",
                                    str(tmp_path / "s.parquet")])
    assert out.exit_code == 0, out.output
    assert "No item is affected" in out.output


@pytest.mark.parametrize("where, message", [
    ("colour = 'red'", r"Unknown column 'colour' in the filter .* Columns: 'item_id'"),
    ("src = ", r"Cannot parse the filter"),
    ("src = (SELECT 1)", r"Unsupported construct|Sub-queries"),
    ("width", r"is not a condition"),
    ("width + 1 > 3", r"Unsupported construct 'width \+ 1'"),
])
def test_bad_filters(world, where, message):
    s = sample_affected(world[0], size=20, seed=1)
    with pytest.raises(InputError, match=message):
        s.estimate(where)


def test_unknown_group_by_column(world):
    s = sample_affected(world[0], size=20, seed=1)
    with pytest.raises(InputError, match=r"Unknown group-by column 'colour'. Columns: 'item_id'"):
        s.group(["colour"])


def test_bad_size(world):
    for bad in (0, -1, 1.5):
        with pytest.raises(InputError, match="positive integer"):
            sample_affected(world[0], size=bad, seed=1)


def test_sample_files_from_elsewhere_are_rejected(world, tmp_path):
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"item_id": [1]}), plain)
    with pytest.raises(InputError, match="has no abcde sample metadata"):
        ExplorationSample.read(plain)
    s = sample_affected(world[0], size=5, seed=1)
    old = ExplorationSample(s.table, {**s.metadata, "version": 0})
    old.write(tmp_path / "old.parquet")
    with pytest.raises(InputError, match="format version 0; this abcde reads version 1"):
        ExplorationSample.read(tmp_path / "old.parquet")


def test_cli_sample_and_query(tmp_path):
    base, exp, items = synthetic(300)
    for name, t in (("b", base), ("e", exp), ("i", items)):
        pq.write_table(t, tmp_path / f"{name}.parquet")
    r = CliRunner()
    out = r.invoke(main, ["explore", "sample", "--base", str(tmp_path / "b.parquet"), "--exp",
                          str(tmp_path / "e.parquet"), "--items", str(tmp_path / "i.parquet"), "--size", "100",
                          "--seed", "4", "--out", str(tmp_path / "s.parquet"), "--json"])
    assert out.exit_code == 0, out.output
    meta = json.loads(out.output)
    assert meta["seed"] == 4 and meta["unique_items"] <= 100
    q = r.invoke(main, ["explore", "query", str(tmp_path / "s.parquet"), "--where", "src = 'web'", "--group-by",
                        "src", "--metric", "split", "--examples", "3", "--json"])
    assert q.exit_code == 0, q.output
    d = json.loads(q.output)
    # the values, from the stored rows and the reference's metrics (not from the library's API)
    b, e, w, attrs = as_dicts(base, exp, items)
    ref_rows = ref.exploration_items(b, e, w)
    jd_t = ref.overall(b, e, w)["jaccard_distance"]
    rows = pq.read_table(tmp_path / "s.parquet").to_pylist()
    D = sum(r["draw_count"] for r in rows)
    assert meta["unique_items"] == len(rows) == min(100, len(ref_rows)) and meta["total_draws"] == D
    web = [r for r in rows if attrs["src"][r["item_id"]] == "web"]
    for m in (*SHORT, None):
        want = sum(r["draw_count"] * (1.0 if m is None else ref_rows[r["item_id"]][m]) * jd_t
                   / ref_rows[r["item_id"]]["jaccard_distance"] for r in web) / D
        assert d["slice"][FIELD[m]] == pytest.approx(want, rel=1e-9), m
        assert d["groups"][0][FIELD[m]] == pytest.approx(want, rel=1e-9), m
    assert d["slice"]["sampled_items"] == len(web)
    assert d["slice"]["draws"] == sum(r["draw_count"] for r in web)
    assert [g["src"] for g in d["groups"]] == ["web"]
    assert len(d["examples"]) == 3
    assert {x["item_id"] for x in d["examples"]} <= {r["item_id"] for r in web}
    text = r.invoke(main, ["explore", "query", str(tmp_path / "s.parquet"), "--group-by", "src"])
    assert text.exit_code == 0 and "Top 3 groups" in text.output
    bad = r.invoke(main, ["explore", "query", str(tmp_path / "s.parquet"), "--where", "nope > 1"])
    assert bad.exit_code == 1 and "Unknown column 'nope'" in bad.output
