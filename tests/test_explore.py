"""The exploration sample: importance sampling of affected items and estimates on it."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.errors import InputError
from abcde.sampling.explore import ExplorationSample, sample_affected


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


@pytest.fixture(scope="module")
def world():
    base, exp, items = synthetic()
    res = abcde.impact(base, exp, items=items)
    per_item = res.per_item().to_pandas().merge(items.to_pandas()[["item_id", "src", "width"]], on="item_id")
    W = res.total_weight
    sl = per_item[(per_item.src == "wiki") & (per_item.width <= 512)]
    truth = {
        "overall": {m: getattr(res, m) for m in ("split_rate", "merge_rate", "jaccard_distance")},
        "slice_contribution": {
            m: float((sl.weight * sl[m]).sum() / W) for m in ("split_rate", "merge_rate", "jaccard_distance")},
        "slice_share": float(sl.weight[sl.jaccard_distance > 0].sum() / W),
    }
    return res, truth


WHERE = "src = 'wiki' AND width <= 512"
SHORT = {"split_rate": "split", "merge_rate": "merge", "jaccard_distance": "jaccard"}


def test_estimates_are_unbiased_over_many_seeds(world):
    res, truth = world
    seeds = 200
    est = {m: [] for m in SHORT}
    sl = {m: [] for m in SHORT}
    share = []
    for s in range(seeds):
        sample = sample_affected(res, size=40, seed=s)
        o = sample.estimate()
        e = sample.estimate(WHERE)
        for m, short in SHORT.items():
            est[m].append(getattr(o, f"{short}_contribution"))
            sl[m].append(getattr(e, f"{short}_contribution"))
        share.append(e.weight_share)

    def within_3se(values, exact):
        v = np.asarray(values)
        se = v.std(ddof=1) / np.sqrt(len(v))
        return abs(v.mean() - exact) <= 3 * se + 1e-12, (v.mean(), exact, se)

    for m in SHORT:
        ok, info = within_3se(est[m], truth["overall"][m])
        assert ok, (m, info)
        ok, info = within_3se(sl[m], truth["slice_contribution"][m])
        assert ok, ("slice", m, info)
    ok, info = within_3se(share, truth["slice_share"])
    assert ok, ("share", info)


def test_reported_standard_error_matches_the_spread(world):
    res, _ = world
    vals, ses = [], []
    for s in range(100):
        e = sample_affected(res, size=60, seed=1000 + s).estimate(WHERE)
        vals.append(e.split_contribution)
        ses.append(e.std_err["split_contribution"])
    ratio = np.mean(ses) / np.std(vals, ddof=1)
    assert 0.75 < ratio < 1.3, ratio


def test_full_sized_sample_reproduces_exact_slice_metrics(world):
    res, truth = world
    sample = sample_affected(res, size=res.affected_items, seed=3)
    assert sample.table.num_rows == res.affected_items
    e = sample.estimate(WHERE)
    for m, short in SHORT.items():
        assert getattr(e, f"{short}_contribution") == pytest.approx(truth["slice_contribution"][m], rel=0.1)
    assert sample.estimate().jaccard_contribution == pytest.approx(res.jaccard_distance, rel=1e-9)


def test_same_seed_same_sample_different_seed_different(world):
    res, _ = world
    a, b, c = (sample_affected(res, size=50, seed=s) for s in (5, 5, 6))
    assert a.table.equals(b.table)
    assert a.table.column("item_id").to_pylist() != c.table.column("item_id").to_pylist()


def test_importance_weights_and_columns(world):
    res, _ = world
    s = sample_affected(res, size=30, seed=1)
    t = s.table.to_pandas()
    dc = t.draw_count / t.draw_count.sum()
    assert np.allclose(t.importance_weight, dc * res.jaccard_distance / t.jaccard_distance)
    assert (t.jaccard_distance > 0).all()
    assert s.metadata["jaccard_distance_T"] == res.jaccard_distance


def test_group_by_ranks_groups_and_examples_come_from_the_slice(world):
    res, _ = world
    s = sample_affected(res, size=300, seed=2)
    groups = s.group(["src"], metric="merge", top=2)
    assert len(groups) == 2
    assert groups[0].merge_contribution >= groups[1].merge_contribution
    all_groups = s.group("src", top=10)
    assert sum(g.jaccard_contribution for g in all_groups) == pytest.approx(s.estimate().jaccard_contribution)
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
    api = ExplorationSample.read(tmp_path / "s.parquet").estimate("src = 'web'")
    assert d["slice"]["split_contribution"] == pytest.approx(api.split_contribution)
    assert [g["src"] for g in d["groups"]] == ["web"]
    assert len(d["examples"]) == 3
    text = r.invoke(main, ["explore", "query", str(tmp_path / "s.parquet"), "--group-by", "src"])
    assert text.exit_code == 0 and "Top 3 groups" in text.output
    bad = r.invoke(main, ["explore", "query", str(tmp_path / "s.parquet"), "--where", "nope > 1"])
    assert bad.exit_code == 1 and "Unknown column 'nope'" in bad.output
