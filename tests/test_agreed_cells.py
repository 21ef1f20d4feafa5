"""The agreed stratum drawn by cells (issue 49): exact draws ∝ w_i·w_j without a clock per item,
the per-cell sums in one query, and samples drawn before continued as they were drawn.

The expected probabilities here are written from the definition (every ordered pair ``i ≠ j`` of
items together in Base and in Exp, outside the intersection strata, weighs ``w_i·w_j``), from the
world's own arrays: no code of abcde's sampler. The Spark side (the same draws on both engines) is
in test_engines.py, beside its session.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import abcde
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.metrics.impact import link_masses
from abcde.quality import PairSampleDir, extend_pair_sample
from abcde.samples.sample_dir import write_sample_dir
from abcde.sampling.agreed import BY_CELLS, agreed_pairs, agreed_uniforms, draw_agreed
from abcde.sampling import cells as cells_module
from abcde.sampling.cells import GROUPS, agreed_groups, cell_sums
from abcde.sampling.ids import pair_id
from abcde.sampling.pairs import pair_counts, pair_totals
from abcde.sampling.stratified import sample_agreed

P = example_paths("febrl3")
OLD = Path(__file__).parent / "data" / "drawn-before-49"


def small_world(seed: int = 3):
    """Clusters of 1–7 items with lognormal weights (one cell with an item of most of its weight);
    Exp splits some clusters and merges some pairs: agreed cells of every size, beside affected ones."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, 40)
    base = np.repeat(np.arange(len(sizes)), sizes)
    n = len(base)
    exp = base.copy()
    exp[(base % 7 == 0) & (rng.random(n) < 0.5)] += 1000  # splits
    exp[base % 11 == 3] = 3  # merges into cluster 3
    w = rng.lognormal(0, 1.0, n)
    w[np.flatnonzero(base == np.flatnonzero(sizes > 3)[0])[0]] = 40.0  # an item with most of its cell's weight
    ids = np.arange(n) * 7 + 11
    return ids, base, exp, w


def tables(ids, base, exp, w):
    return (pa.table({"item_id": ids.tolist(), "cluster_id": base.tolist()}),
            pa.table({"item_id": ids.tolist(), "cluster_id": exp.tolist()}),
            pa.table({"item_id": ids.tolist(), "weight": w.tolist()}))


def agreed_pair_weights(ids, base, exp, w) -> dict:
    """Every unordered agreed pair's weight ``2·w_i·w_j`` (ordered pairs both ways), from the
    definition: together in Base and in Exp, and not in a cell of the intersection strata (an affected
    cell, some item of its Base or Exp cluster outside it, whose clusters weigh differently)."""
    out = {}
    for k in range(len(ids)):
        for m in range(k + 1, len(ids)):
            if base[k] != base[m] or exp[k] != exp[m]:
                continue
            cell = (base == base[k]) & (exp == exp[k])
            wb, we = w[base == base[k]].sum(), w[exp == exp[k]].sum()
            affected = cell.sum() < (base == base[k]).sum() or cell.sum() < (exp == exp[k]).sum()
            if affected and wb != we:
                continue
            out[pair_id(int(ids[k]), int(ids[m]))] = 2 * w[k] * w[m]
    return out


@pytest.fixture(scope="module")
def world():
    ids, base, exp, w = small_world()
    d = build_diff(Inputs(*tables(ids, base, exp, w)[:2], items=tables(ids, base, exp, w)[2]))
    return d, (ids, base, exp, w)


@pytest.fixture(params=[GROUPS, 3], ids=["groups-65536", "groups-3"])
def grouped(request, monkeypatch):
    """The small world's diff with its agreed cells in ``GROUPS`` groups (about one cell each here), or in
    3 (about twenty each: the draw of a cell within its group matters)."""
    monkeypatch.setattr(cells_module, "GROUPS", request.param)
    ids, base, exp, w = small_world()
    d = build_diff(Inputs(*tables(ids, base, exp, w)[:2], items=tables(ids, base, exp, w)[2]))
    assert len(agreed_groups(d).groups) == min(request.param, len(agreed_groups(d).groups))
    return d, (ids, base, exp, w)


def test_agreed_draws_are_pairs_with_probability_w_i_w_j(grouped):
    """20,000 draws of one seed, each counted against its expected share ``2·w_i·w_j / Σ`` over every
    agreed pair: a chi-square test (cells with an expected count under 5 pooled). A vantage item drawn ∝
    ``w_i`` alone, a partner that may be the vantage item, a group or a cell of it drawn uniformly, each
    fails it (the cell's draw where groups hold many cells)."""
    d, arrays = grouped
    expected = agreed_pair_weights(*arrays)
    total = sum(expected.values())
    assert len(expected) > 40 and cell_sums(d).pair_counts()["agreed"] == len(expected)
    assert cell_sums(d).link_masses(1.0)["agreed"] == pytest.approx(total)
    k = 20_000
    a, b = agreed_pairs(d, agreed_uniforms(11, k), pa.int64())
    assert all(x != y for x, y in zip(a, b))  # no self draws
    got = Counter(pair_id(x, y) for x, y in zip(a, b))
    assert set(got) <= set(expected)
    keys = sorted(expected, key=lambda p: expected[p])
    exp_n = np.array([expected[p] / total * k for p in keys])
    obs = np.array([got.get(p, 0) for p in keys], dtype=float)
    small = exp_n < 5
    exp_n, obs = np.r_[exp_n[~small], exp_n[small].sum()], np.r_[obs[~small], obs[small].sum()]
    p = stats.chisquare(obs, exp_n).pvalue
    assert p > 1e-3, p
    # The vantage item is either end of its pair, as often as w_i·w_j is symmetric: about half each way.
    forward = sum(1 for x, y in zip(a, b) if x < y)
    assert abs(forward / k - 0.5) < 0.02


def test_the_first_draws_are_the_same_whatever_the_number_drawn(world):
    d, _ = world
    u = agreed_uniforms(5, 300)
    assert np.array_equal(agreed_uniforms(5, 40), u[:40])
    a, b = agreed_pairs(d, u, pa.int64())
    a40, b40 = agreed_pairs(d, u[:40], pa.int64())
    assert (a[:40], b[:40]) == (a40, b40)
    small = draw_agreed(d, budget=8, seeds=[5], id_type=pa.int64())[5]
    large = draw_agreed(d, budget=20, seeds=[5], id_type=pa.int64())[5]
    assert large.slice(0, small.num_rows).equals(small)
    assert len(set(small.column("pair_id").to_pylist())) == 8 and not any(small.column("is_self").to_pylist())


def test_the_cell_sums_are_the_closed_forms_of_the_fragments(world):
    """One query gives what four did: the pair totals, the pair counts, the pair masses and the self
    term, equal to the recall lift's own query (link_masses) and to the definition's counts."""
    d, (ids, base, exp, w) = world
    W = float(w.sum())
    assert cell_sums(d).link_masses(W) == pytest.approx(link_masses(d, W), rel=1e-12)
    counts = pair_counts(d)
    split = sum(1 for k in range(len(ids)) for m in range(k + 1, len(ids)) if base[k] == base[m] and exp[k] != exp[m])
    merge = sum(1 for k in range(len(ids)) for m in range(k + 1, len(ids)) if base[k] != base[m] and exp[k] == exp[m])
    assert (counts["split"], counts["merge"]) == (split, merge)
    t = pair_totals(d, W)
    assert t["all"] == pytest.approx(t["split"] + t["merge"] + t["stable"])


def test_string_ids_draw_by_cells_too():
    ids, base, exp, w = small_world(5)
    b, e, i = tables(ids, base, exp, w)
    b = pa.table({"item_id": [f"r{x}" for x in ids], "cluster_id": [f"c-{x}é" for x in base]})
    e = pa.table({"item_id": [f"r{x}" for x in ids], "cluster_id": [f"{x}" for x in exp]})
    i = pa.table({"item_id": [f"r{x}" for x in ids], "weight": w.tolist()})
    d = build_diff(Inputs(b, e, items=i))
    drawn, whole = sample_agreed(d, budget=10, seed=2, total_weight=float(w.sum()))
    assert not whole and len(set(drawn.column("pair_id").to_pylist())) == 10
    a_ = drawn.column("item_a").to_pylist()
    b_ = drawn.column("item_b").to_pylist()
    cell = {f"r{x}": (bb, ee) for x, bb, ee in zip(ids, base, exp)}
    assert all(cell[x] == cell[y] and x != y for x, y in zip(a_, b_))


def test_a_new_sample_records_that_its_agreed_pairs_were_drawn_by_cells(tmp_path):
    for est in ("stratified", "paper"):
        out = abcde.draw_pair_sample(P["base"], P["exp"], tmp_path / est, items=P["items"], budget=60, seed=5,
                                     estimator=est)
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["agreed_draws"] == BY_CELLS == {"method": "cells", "groups": GROUPS}


@pytest.mark.parametrize("estimator", ["stratified", "paper"])
def test_a_sample_drawn_before_keeps_its_draws_and_way_of_drawing_when_extended(tmp_path, estimator):
    """``tests/data/drawn-before-49``: samples of 60 pairs drawn by the abcde before issue 49 (commit
    a391dd9; the agreed stratum by a clock per item), and the draws that abcde made at 120 (expected.json).
    Extended to 120 now, each is what that abcde drew at 120, draw for draw, and still says nothing of
    cells."""
    old = tmp_path / "s"
    shutil.copytree(OLD / estimator, old)
    before = PairSampleDir.read(old).draws
    extend_pair_sample(old, budget=120, base=P["base"], exp=P["exp"], items=P["items"])
    grown = PairSampleDir.read(old)
    want = json.loads((OLD / "expected.json").read_text())[f"{estimator}-120"]
    t = grown.draws
    got = {"stratum": t.column("stratum").to_pylist(), "pair_id": t.column("pair_id").to_pylist(),
           "item_a": t.column("item_a").to_pylist(), "class": t.column("class").to_pylist()}
    assert got == want
    assert "agreed_draws" not in grown.metadata
    agreed = [p for s, p in zip(got["stratum"], got["pair_id"]) if s == "agreed"]
    was = [p for s, p in zip(before.column("stratum").to_pylist(), before.column("pair_id").to_pylist())
           if s == "agreed"]
    assert agreed[:len(was)] == was and len(set(agreed)) > len(set(was))
    # The same sample drawn now draws its agreed pairs by cells: other pairs.
    fresh = abcde.draw_pair_sample(P["base"], P["exp"], tmp_path / "fresh", items=P["items"], budget=120, seed=5,
                                   estimator=estimator)
    now = PairSampleDir.read(fresh).draws
    now_agreed = [p for s, p in zip(now.column("stratum").to_pylist(), now.column("pair_id").to_pylist())
                  if s == "agreed"]
    assert now_agreed != agreed


def test_an_unknown_way_of_drawing_is_refused_in_one_line(tmp_path):
    """A sample whose metadata names a way of drawing its agreed pairs this abcde does not know (a newer
    one's, or another grouping) is not extended with other draws: one line says why."""
    out = abcde.draw_pair_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=40, seed=5)
    s = PairSampleDir.read(out)
    meta = {k: v for k, v in s.metadata.items() if k not in ("sample_id", "format", "version", "abcde_version", "files",
                                                             "draws_digest", "meta_digest")}
    meta["agreed_draws"] = {"method": "cells", "groups": 12}
    other = write_sample_dir(tmp_path / "other", s.draws, s.items, meta)
    with pytest.raises(InputError, match="agreed stratum was drawn in a way this abcde does not know") as e:
        extend_pair_sample(other, budget=80, base=P["base"], exp=P["exp"], items=P["items"])
    assert "\n" not in str(e.value)


def test_cells_of_numbers_that_are_not_signed_integers_draw_without_their_text(tmp_path):
    """Float, decimal and unsigned cluster ids (Spark reads a uint64 column as a decimal) are grouped by
    their value, never through their text (DuckDB writes 1e-05 where Spark writes 1.0E-5); a uint64 id
    beyond 2^63 does not overflow."""
    import pyarrow.parquet as pq

    ids, base, exp, w = small_world(7)
    for name, typ, conv in (("float", pa.float64(), lambda c: c * 0.5 + 1e-5),
                            ("uint64", pa.uint64(), lambda c: c + 2**63 + 11)):
        b = pa.table({"item_id": ids.tolist(), "cluster_id": pa.array([conv(int(c)) for c in base], typ)})
        e = pa.table({"item_id": ids.tolist(), "cluster_id": pa.array([conv(int(c)) for c in exp], typ)})
        pq.write_table(b, tmp_path / f"b-{name}.parquet")
        pq.write_table(e, tmp_path / f"e-{name}.parquet")
        d = build_diff(Inputs(str(tmp_path / f"b-{name}.parquet"), str(tmp_path / f"e-{name}.parquet"),
                              items=tables(ids, base, exp, w)[2]))
        assert len(agreed_groups(d).groups) > 10, name  # spread over groups, not one
        drawn, whole = sample_agreed(d, budget=12, seed=4, total_weight=float(w.sum()))
        assert not whole and len(set(drawn.column("pair_id").to_pylist())) == 12, name


def test_a_cell_whose_pair_weight_is_lost_to_rounding_is_named_not_left_out():
    """One item of weight 1e17 beside two of about 1 in one agreed cell: W(F)² − Σw² rounds to 0, so
    the cell's pairs (nearly all of the stratum's weight) cannot be drawn in proportion. Refused in one
    line naming the cell, where leaving it out would draw the other cells only."""
    ids, base, exp, w = small_world(3)
    c = next(c for c in np.unique(base) if c % 7 and c % 11 != 3 and c != 3 and (base == c).sum() >= 2)  # unchanged
    cell = np.flatnonzero(base == c)
    w = w.copy()
    w[cell[0]] = 1e17
    b, e, i = tables(ids, base, exp, w)
    d = build_diff(Inputs(b, e, items=i))
    with pytest.raises(InputError, match=f"Base cluster {int(c)!r}.*lost to rounding") as err:
        sample_agreed(d, budget=5, seed=1, total_weight=float(w.sum()))
    assert "\n" not in str(err.value)


def test_a_budget_beyond_the_agreed_pairs_ends_at_its_last_pair():
    """A caller that never lists a stratum whole (``census=False``) and asks for more agreed pairs than
    there are gets every one of them, once the last is drawn (not a million draws and an error)."""
    from abcde.sampling.stratified import sample_stratified_many

    ids, base, exp, w = small_world(3)
    b, e, i = tables(ids, base, exp, w)
    d = build_diff(Inputs(b, e, items=i))
    cap = pair_counts(d)["agreed"]
    got = draw_agreed(d, budget=cap + 40, seeds=[2], id_type=pa.int64())[2]
    assert len(set(got.column("pair_id").to_pylist())) == cap
    ss = sample_stratified_many(d, budget=4 * cap, seeds=[2], total_weight=float(w.sum()), census=False)[0]
    assert len(set(ss.draws["agreed"].column("pair_id").to_pylist())) <= cap


def test_text_ids_with_one_suffix_spread_over_many_groups():
    """Ids of one width and one suffix (``C000000123-v1``) still fall in many groups: the last eight
    characters are read, not four (which gave ten groups here), so few cells are fetched per draw."""
    import ibis

    from abcde.sampling.cells import cell_group

    keys = [f"C{x:09d}-v1" for x in range(5000)]
    t = ibis.memtable(pa.table({"base_cluster": keys, "exp_cluster": keys}))
    groups = abcde.connect().to_arrow(t.select(g=cell_group(t))).column("g").to_pylist()
    assert len(set(groups)) > 2000


def test_the_agreed_cells_are_read_with_the_affected_items_and_draw_the_same_pairs(tmp_path, monkeypatch):
    """A pair sample names the agreed cells its first draws land in before the affected items are read,
    so one pass over the inputs reads both (issue 49: a second pass cost a third of the pair sample at
    20M items); the pairs are those drawn when the cells are read on their own. ``abcde evaluate``
    names them before its impact tables read the affected items, and counts the time in its pair
    sample's stage."""
    import pyarrow.parquet as pq

    from abcde.engine.base import Engine
    from abcde.sampling import stratified as stratified_module
    from abcde.workflow.evaluate import evaluate

    paths = {}
    for name, t in zip(("base", "exp", "items"), tables(*small_world())):
        paths[name] = tmp_path / f"{name}.parquet"
        pq.write_table(t, paths[name])
    steps: list = []
    real = Engine.to_arrow

    def spy(self, expr, *, step="query"):
        steps.append(step)
        return real(self, expr, step=step)

    monkeypatch.setattr(Engine, "to_arrow", spy)

    def draw(out):
        steps.clear()
        d = abcde.draw_pair_sample(paths["base"], paths["exp"], tmp_path / out, items=paths["items"], budget=40,
                                   seed=5)
        return pq.read_table(d / "pairs.parquet"), json.loads((d / "metadata.json").read_text()), list(steps)

    early, meta, early_steps = draw("early")
    assert 0 < meta["budgets"]["agreed"] < meta["pair_counts"]["agreed"]  # drawn, not listed whole
    assert "items of the named cells" in early_steps and "items of the drawn agreed cells" not in early_steps
    monkeypatch.setattr(stratified_module, "read_early", lambda *a, **k: None)
    alone, _, alone_steps = draw("alone")
    assert "items of the drawn agreed cells" in alone_steps and "items of the named cells" not in alone_steps
    assert early.equals(alone)
    assert "agreed" in set(early.column("stratum").to_pylist())

    monkeypatch.undo()
    res = evaluate(paths["base"], paths["exp"], tmp_path / "ev", items=paths["items"], budget=40, seed=5,
                         sample_size=20)
    assert [s["stage"] for s in res.stages] == ["impact", "impact tables", "exploration sample", "pair sample",
                                                "report"]
    assert pq.read_table(tmp_path / "ev" / "quality" / "pairs.parquet").equals(early)
