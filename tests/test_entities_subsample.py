"""A ``U(i)`` too large to tick (issue 53): subsampled with known probabilities, the task says so,
and the estimates count every member through the shown ones (each class's shown members standing for
it). Simulated with a known truth: many seeds of the members' subsample (and, for the sampled design,
of the draws), bias within 3 Monte Carlo standard errors, standard errors near the spread, 95%
intervals covering about 95%."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from abcde.completion import estimate_entities, oracle_entities, write_entity_sample
from abcde.completion import sample as sample_mod
from abcde.completion.judgements import ANSWERS_FILE
from abcde.completion.model import model_entities
from abcde.completion.sample import subsample_members
from test_entities import reference

LIMIT = 16


def big_world(seed: int):
    """Entities of 8–14 items; Base groups three entities a cluster, Exp two (other groups), and Exp
    splits a fifth of its clusters in two: U(i) of 30–60 items, weights 0.5–3."""
    rng = np.random.default_rng(seed)
    b, e, t, w = {}, {}, {}, {}
    k = 0
    n_ent = 24
    for ent in range(n_ent):
        for _ in range(int(rng.integers(8, 15))):
            i = f"i{k:04d}"
            t[i], w[i] = f"T{ent}", float(rng.uniform(0.5, 3.0))
            b[i] = f"B{ent // 3}"
            e[i] = f"E{(ent + 1) // 2}" + ("-x" if ent % 5 == 0 and rng.random() < 0.5 else "")
            k += 1
    return b, e, t, w


def _files(tmp_path, b, e, t, w):
    paths = []
    for name, tb in (("base", pa.table({"item_id": list(b), "cluster_id": list(b.values())})),
                     ("exp", pa.table({"item_id": list(e), "cluster_id": list(e.values())})),
                     ("items", pa.table({"item_id": list(w), "weight": list(w.values()),
                                         "entity": [t[i] for i in w]}))):
        p = tmp_path / f"{name}.parquet"
        pq.write_table(tb, p)
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    """A census of the affected items of :func:`big_world`, each U(i) listed whole, every member
    answered by the oracle (the estimates read only the members a subsample shows)."""
    tmp = tmp_path_factory.mktemp("sub")
    b, e, t, w = big_world(5)
    base, exp, items = _files(tmp, b, e, t, w)
    s = write_entity_sample(base, exp, tmp / "s", items=items, budget=10**6, seed=1, hide=["entity"])
    assert s.metadata["census"] and not any(x.get("members_total") for x in s.tasks())
    oracle_entities(s, "entity")
    rows = pq.read_table(s.path / ANSWERS_FILE).to_pylist()
    return s, rows, reference(b, e, t, w), (base, exp, items)


def _with_subsample(s, seed):
    members = s.members.drop_columns(["shown", "pi"])
    return dataclasses.replace(s, members=subsample_members(members, seed, LIMIT))


def test_a_large_cluster_is_subsampled_and_the_task_says_so(tmp_path, monkeypatch):
    b, e, t, w = big_world(5)
    base, exp, items = _files(tmp_path, b, e, t, w)
    monkeypatch.setattr(sample_mod, "MAX_MEMBERS", LIMIT)
    s = write_entity_sample(base, exp, tmp_path / "s", items=items, budget=30, seed=2, hide=["entity"])
    tasks = s.tasks()
    big = [x for x in tasks if x.get("members_total")]
    assert big and all(len(x["members"]) == LIMIT < x["members_total"] for x in big)
    m = s.members.to_pylist()
    for x in big:  # each class's members shown with probability n/N, the anchor always
        mine = [r for r in m if r["anchor"] == x["anchor"] and r["item_id"] != x["anchor"]]
        assert sum(r["shown"] for r in mine) == LIMIT and len(mine) == x["members_total"]
        for cls in {(r["in_base"], r["in_exp"]) for r in mine}:
            rs = [r for r in mine if (r["in_base"], r["in_exp"]) == cls]
            assert all(r["pi"] == pytest.approx(sum(q["shown"] for q in rs) / len(rs)) for r in rs)
        assert {r["item_id"] for r in mine if r["shown"]} == {y["item_id"] for y in x["members"]}
    asked = []
    model_entities(s, lambda a, c: asked.append(1) or "same")  # the model is asked about the shown only
    assert len(asked) == sum(len(x["members"]) for x in tasks)
    oracle_entities(s, "entity")
    q = estimate_entities(s)
    assert q.judged == s.anchors.num_rows


@pytest.mark.slow
def test_census_with_subsampled_members_unbiased_with_honest_intervals(census):
    from abcde.completion.estimate import read_answers
    from abcde.completion.judgements import outside_weights

    s, rows, want, _ = census
    # the weights of the items answered from outside each U(i): the answers and the members listed are
    # the same in every seed's subsample (it changes which members are shown, not who is one), so once
    outside = outside_weights(s, read_answers(rows, s)[0])
    est = {m: [] for m in ("delta_recall", "iq", "delta_precision")}
    for seed in range(200):
        q = estimate_entities(_with_subsample(s, seed), rows, weights_outside=outside)
        for m in est:
            x = q.metrics[m]
            est[m].append((x.estimate, x.std_err, x.ci_low, x.ci_high))
    lines, bad = [], []
    for m, r in est.items():
        v, se, lo, hi = (np.array([x[j] for x in r]) for j in range(4))
        sd = v.std(ddof=1)
        z = (v.mean() - want[m]) / (sd / math.sqrt(len(v)))
        cover = float(np.mean((lo <= want[m]) & (want[m] <= hi)))
        line = f"{m}: z {z:+.2f}, SE/SD {se.mean() / sd:.3f}, cover {cover:.3f}"
        lines.append(line)
        if abs(z) > 3 or not 0.85 <= se.mean() / sd <= 1.15 or not 0.92 <= cover <= 0.98:
            bad.append(line)
    print("\n".join(lines))
    assert not bad, lines
