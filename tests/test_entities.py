"""Entity completion (issue 53): pointwise ΔRecall, IQ and the ΔPrecision cross-check from a sample
of affected items whose true entities are completed.

The reference here is written from the issue's definitions (sets of items, sums of weights), and
shares no code with abcde."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import abcde.examples as ex
from abcde.completion import estimate_entities, oracle_entities, write_entity_sample
from abcde.completion.estimate import AnchorAnswers, anchor_values, hansen_hurwitz, read_answers
from abcde.completion.judgements import ANSWERS_FILE
from abcde.completion.sample import draw_entities
from abcde.core.diff import build_diff
from abcde.core.inputs import Inputs
from abcde.errors import InputError


# ----------------------------------------------------------------------------- the reference
def _groups(c: dict) -> dict:
    g: dict = {}
    for i, k in c.items():
        g.setdefault(k, set()).add(i)
    return {i: g[c[i]] for i in c}


def reference(b: dict, e: dict, t: dict, w: dict) -> dict:
    """Per affected item and lifted: ΔRecall(i), JD_B(i) − JD_E(i), ΔPrecision(i); ΔRecall, IQ and
    ΔPrecision, straight from the definitions."""
    B, E, T = _groups(b), _groups(e), _groups(t)
    W = sum(w.values())
    ws = lambda s: sum(w[j] for j in s)  # noqa: E731
    per = {}
    for i in b:
        if B[i] == E[i]:
            continue
        jd_b = 1 - ws(B[i] & T[i]) / ws(B[i] | T[i])
        jd_e = 1 - ws(E[i] & T[i]) / ws(E[i] | T[i])
        per[i] = {"delta_recall": (ws(E[i] & T[i]) - ws(B[i] & T[i])) / ws(T[i]), "iq": jd_b - jd_e,
                  "delta_precision": ws(E[i] & T[i]) / ws(E[i]) - ws(B[i] & T[i]) / ws(B[i]),
                  "jd": 1 - ws(B[i] & E[i]) / ws(B[i] | E[i])}
    jd = sum(w[i] / W * v["jd"] for i, v in per.items())
    out = {m: sum(w[i] / W * v[m] for i, v in per.items()) for m in ("delta_recall", "iq", "delta_precision")}
    out["iq"] = out["iq"] / jd if jd > 0 else math.nan
    return {"per": per, "jd": jd, **out}


def world(seed: int, kind: str, *, n_entities: int = 120, weighted: bool = False, heavy: bool = False):
    """test_recall_lift's worlds (a truth; Base splits a quarter of the entities and makes a few wrong
    merges; Exp by ``kind``: splits, merges, both, a trade-off), a quarter of Base's clusters split
    for ``splits``, as dicts."""
    from test_recall_lift import sim_world

    base, exp, items = sim_world(seed, kind, n_entities=n_entities, weighted=weighted, heavy=heavy, split_share=1 / 4)
    ids = base.column("item_id").to_pylist()
    b = dict(zip(ids, base.column("cluster_id").to_pylist()))
    e = dict(zip(ids, exp.column("cluster_id").to_pylist()))
    t = dict(zip(ids, items.column("entity").to_pylist()))
    return b, e, t, dict(zip(ids, items.column("weight").to_pylist()))


def tables(b, e, t, w):
    return (pa.table({"item_id": list(b), "cluster_id": list(b.values())}),
            pa.table({"item_id": list(e), "cluster_id": list(e.values())}),
            pa.table({"item_id": list(w), "weight": list(w.values()), "entity": [t[i] for i in w],
                      "block": [t[i][:2] for i in w]}))


def _files(tmp_path, b, e, t, w):
    paths = []
    for name, tb in zip(("base", "exp", "items"), tables(b, e, t, w)):
        p = tmp_path / f"{name}.parquet"
        pq.write_table(tb, p)
        paths.append(p)
    return paths


def _census(tmp_path, b, e, t, w, design="recall", engine=None, name="s"):
    base, exp, items = _files(tmp_path, b, e, t, w)
    s = write_entity_sample(base, exp, tmp_path / name, items=items, budget=10**6, seed=1, design=design,
                            hide=["entity"], candidates="block", engine=engine)
    assert s.metadata["census"]
    oracle_entities(s, "entity")
    return s


# ----------------------------------------------------------------------------- exact
@pytest.mark.parametrize("kind,weighted", [("both", False), ("tradeoff", True), ("merges", True)])
def test_a_census_of_the_affected_items_gives_the_exact_values(tmp_path, kind, weighted):
    """Budget ≥ |A|: every affected item once, completed by the oracle: ΔRecall, IQ and ΔPrecision
    equal the reference to 1e-12, and each anchor's values the reference's per item."""
    b, e, t, w = world(3, kind, weighted=weighted)
    want = reference(b, e, t, w)
    s = _census(tmp_path, b, e, t, w)
    q = estimate_entities(s.path)
    for m in ("delta_recall", "iq", "delta_precision"):
        got = q.metrics[m]
        assert got.estimate == pytest.approx(want[m], abs=1e-12), m
        assert got.std_err == 0 and got.ci_low == got.ci_high == got.estimate
    answers, _ = read_answers(pq.read_table(s.path / ANSWERS_FILE).to_pylist(), s)
    from abcde.completion.judgements import outside_weights

    per = anchor_values(s, answers, outside_weights(s, answers))
    assert set(per) == set(want["per"])
    for i, v in per.items():
        for m in ("delta_recall", "iq", "delta_precision"):
            assert v[m][0] == v[m][1] == pytest.approx(want["per"][i][m], abs=1e-12), (i, m)


def test_the_pointwise_precision_cross_check_is_the_pair_delta_precision(tmp_path):
    """The entities' ΔPrecision is the pair ΔPrecision of the paper (reference.py's, all pairs)."""
    import reference as ref

    b, e, t, w = world(5, "both", weighted=True)
    s = _census(tmp_path, b, e, t, w)
    assert estimate_entities(s.path).metrics["delta_precision"].estimate == pytest.approx(
        ref.delta_precision_exact(b, e, w, t), abs=1e-12)


def test_spark_draws_and_estimates_as_duckdb(tmp_path, spark):
    b, e, t, w = world(7, "both", weighted=True)
    want = reference(b, e, t, w)
    base, exp, items = _files(tmp_path, b, e, t, w)
    got = {}
    for name, eng in (("duck", None), ("spark", spark)):
        s = write_entity_sample(base, exp, tmp_path / name, items=items, budget=40, seed=3, hide=["entity"],
                                candidates="block", engine=eng)
        got[name] = s.draws.column("item_id").to_pylist(), s.members.num_rows, s.candidates.num_rows
    assert got["duck"] == got["spark"]
    s = _census(tmp_path, b, e, t, w, engine=spark, name="census")
    q = estimate_entities(s.path)
    for m in ("delta_recall", "iq", "delta_precision"):
        assert q.metrics[m].estimate == pytest.approx(want[m], abs=1e-12)


def test_identities(tmp_path):
    """Base = Exp: no affected item, nothing to draw; splits only: every anchor's ΔRecall ≤ 0 and
    ΔPrecision ≥ 0, and so the totals."""
    b, e, t, w = world(11, "splits")
    base, exp, items = _files(tmp_path, b, b, t, w)
    s = write_entity_sample(base, exp, tmp_path / "same", items=items, budget=50, seed=0)
    assert s.metadata["n_affected"] == 0 and s.draws.num_rows == 0
    q = estimate_entities(s.path)
    assert q.metrics["delta_recall"].draws == 0 and "nothing is estimated" in q.to_dict()["verdict"]
    # splits only: Exp's clusters are parts of Base's
    be = {i: (b[i], e[i]) for i in b}
    want = reference(b, be, t, w)
    s = _census(tmp_path, b, be, t, w, name="splits")
    q = estimate_entities(s.path)
    assert all(v["delta_recall"] <= 1e-15 and v["delta_precision"] >= -1e-15 for v in want["per"].values())
    assert q.metrics["delta_recall"].estimate <= 0 <= q.metrics["delta_precision"].estimate
    assert q.metrics["delta_recall"].estimate == pytest.approx(want["delta_recall"], abs=1e-12)


def test_the_draws_follow_their_probabilities(tmp_path):
    """150 seeds × 40 draws from abcde's sampler, each design: the items' draw counts against
    ``150·40·p_i`` (chi-square, p > 0.001), and the same seed gives the same draws."""
    from scipy.stats import chisquare

    b, e, t, w = world(13, "both", n_entities=60, weighted=True)
    want = reference(b, e, t, w)
    diff = build_diff(Inputs(*tables(b, e, t, w)))
    W = sum(w.values())
    for design in ("recall", "iq"):
        p = {i: w[i] * (1.0 if design == "recall" else v["jd"]) for i, v in want["per"].items()}
        tot = sum(p.values())
        counts = dict.fromkeys(p, 0)
        for seed in range(150):
            draws, facts = draw_entities(diff, budget=40, seed=seed, design=design)
            assert not facts["census"] and draws.num_rows == 40
            for i, pk in zip(draws.column("item_id").to_pylist(), draws.column("p").to_pylist()):
                counts[i] += 1
                assert pk == pytest.approx(p[i] / tot, rel=1e-12)
        ids = sorted(p)
        stat = chisquare([counts[i] for i in ids], [6000 * p[i] / tot for i in ids])
        assert stat.pvalue > 0.001, (design, stat)
        assert facts["affected_weight"] == pytest.approx(sum(w[i] for i in p) / W * W, rel=1e-12)
    a, _ = draw_entities(diff, budget=20, seed=4)
    assert a.equals(draw_entities(diff, budget=20, seed=4)[0])


# ----------------------------------------------------------------------------- what the answers cannot rule out
def test_bounds_hold_the_truth_whatever_is_unsure_or_unsearched(tmp_path):
    """Answers from the truth with a random third of the members unsure, conflicting raters, and the
    search skipped for half the anchors (their outside items not added): every anchor's bounds hold
    its exact values, and the census's range holds the exact totals; in 40 random patterns."""
    b, e, t, w = world(17, "both", weighted=True, heavy=True)
    want = reference(b, e, t, w)
    s = _census(tmp_path, b, e, t, w)
    full = pq.read_table(s.path / ANSWERS_FILE).to_pylist()
    members = set(zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()))
    rng = np.random.default_rng(0)
    some_open = False
    for pattern in range(40):
        skip = {a for a in want["per"] if rng.random() < 0.5}
        rows = []
        for r in full:
            a, i = r["anchor"], r["item_id"]
            if i is None:
                rows.append({**r, "answer": "not searched" if a in skip else "searched"})
            elif (a, i) not in members and a in skip:
                continue  # the search was skipped: the items outside both clusters are unknown
            elif (a, i) in members and rng.random() < 0.33:
                rows.append({**r, "answer": "unsure"})
            elif (a, i) in members and rng.random() < 0.1:  # two raters disagree
                rows += [r, {**r, "answer": "different" if r["answer"] == "same" else "same"}]
            else:
                rows.append(r)
        answers, _ = read_answers(rows, s)
        from abcde.completion.judgements import outside_weights

        per = anchor_values(s, answers, outside_weights(s, answers))
        for i, v in per.items():
            for m in ("delta_recall", "iq", "delta_precision"):
                lo, hi = v[m]
                assert lo - 1e-12 <= want["per"][i][m] <= hi + 1e-12, (pattern, i, m, v[m], want["per"][i][m])
        q = estimate_entities(s, rows)
        for m in ("delta_recall", "iq", "delta_precision"):
            est = q.metrics[m]
            assert est.ci_low - 1e-12 <= want[m] <= est.ci_high + 1e-12, (pattern, m)
            some_open |= est.estimate is None
    assert some_open
    text = estimate_entities(s, rows).to_dict()["verdict"]
    assert text.startswith("ΔRecall lies between") and "search outside both clusters was skipped" in text


# ----------------------------------------------------------------------------- simulations
SIM_WORLDS = [("splits", False, False), ("merges", False, False), ("both", False, False), ("tradeoff", False, False),
              ("both", True, False), ("both", False, True)]
SIM_SEEDS, SIM_BUDGET = 600, 150


@pytest.mark.slow
@pytest.mark.parametrize("design", ["recall", "iq"])
def test_simulation_with_a_known_truth(tmp_path, design):
    """Per world (splits, merges, both, a trade-off, weighted items, heavy-tailed entities) and design,
    600 samples of 150 draws ∝ the design's probabilities (the draws' law is
    test_the_draws_follow_their_probabilities's), each anchor's values from abcde's census
    (checked against the reference): ΔRecall, IQ and ΔPrecision unbiased (within 3 Monte Carlo SEs),
    mean SE within 10% of the spread, 95% intervals covering 93–97%."""
    lines, failed = [], []
    for k, (kind, weighted, heavy) in enumerate(SIM_WORLDS):
        # other worlds than those the interval was chosen on (seeds 100 + k)
        b, e, t, w = world(200 + k, kind, weighted=weighted, heavy=heavy)
        want = reference(b, e, t, w)
        s = _census(tmp_path, b, e, t, w, design=design, name=f"w{k}")
        answers, _ = read_answers(pq.read_table(s.path / ANSWERS_FILE).to_pylist(), s)
        from abcde.completion.judgements import outside_weights

        per = anchor_values(s, answers, outside_weights(s, answers))
        ids = s.draws.column("item_id").to_pylist()
        p = np.array(s.draws.column("p").to_pylist())
        W = sum(w.values())
        rng = np.random.default_rng(2000 + k)
        for m in ("delta_recall", "iq", "delta_precision"):
            x = np.array([w[i] / W * per[i][m][0] for i in ids]) / p
            scale = want["jd"] if m == "iq" else 1.0
            est = []
            for _ in range(SIM_SEEDS):
                y = x[rng.choice(len(ids), size=SIM_BUDGET, p=p)]
                h = hansen_hurwitz(y, y, census=False, scale=scale, clip=(-1.0, 1.0))
                est.append((h.estimate, h.std_err, h.ci_low, h.ci_high))
            v, se, lo, hi = (np.array([r[j] for r in est]) for j in range(4))
            sd = v.std(ddof=1)
            z = (v.mean() - want[m]) / (sd / math.sqrt(len(v))) if sd > 0 else 0.0
            cover = float(np.mean((lo <= want[m] + 1e-15) & (want[m] - 1e-15 <= hi)))
            ratio = se.mean() / sd if sd > 0 else 1.0
            line = f"{kind}{' weighted' if weighted else ''}{' heavy' if heavy else ''} {m}: z {z:+.2f}, SE/SD {ratio:.3f}, cover {cover:.3f}"
            lines.append(line)
            if abs(z) > 3 or not 0.9 <= ratio <= 1.1 or not 0.93 <= cover <= 0.97:
                failed.append(line)
    print("\n".join(lines))
    assert not failed, failed


# ----------------------------------------------------------------------------- the command line, end to end
def _cli(*args, ok=True):
    r = subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr + r.stdout
    return r


def test_the_bundled_example_end_to_end(tmp_path):
    """The issue's check: 'entities … --budget 150 --hide entity_id', 'judge oracle', 'quality --json':
    ΔRecall's and IQ's intervals hold their exact values, the ΔPrecision cross-check's holds the pair
    ΔPrecision, and the verdict reads the direction of the recall lift (here: Exp keeps fewer)."""
    import reference as ref

    P = ex.example_paths()
    out = tmp_path / "ent"
    _cli("entities", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 150, "--hide",
         "entity_id", "--candidates", "surname", "--out", out)
    _cli("judge", "oracle", out, "--oracle-column", "entity_id")
    d = json.loads(_cli("quality", out, "--json").stdout)
    it = pq.read_table(P["items"])
    b = dict(zip(*(pq.read_table(P["base"]).column(c).to_pylist() for c in ("item_id", "cluster_id"))))
    e = dict(zip(*(pq.read_table(P["exp"]).column(c).to_pylist() for c in ("item_id", "cluster_id"))))
    w = dict(zip(it.column("item_id").to_pylist(), it.column("weight").to_pylist()))
    t = dict(zip(it.column("item_id").to_pylist(), it.column("entity_id").to_pylist()))
    want = reference(b, e, t, w)
    for m in ("delta_recall", "iq", "delta_precision"):
        assert d[m]["ci_low"] <= want[m] <= d[m]["ci_high"], (m, d[m], want[m])
        assert set(d[m]) >= {"estimate", "std_err", "ci_low", "ci_high"}
    lift = ref.recall_lift(b, e, t, w)
    assert lift < 0 and d["delta_recall"]["ci_high"] < 0
    assert "Exp's clusters hold less of each item's true entity" in d["verdict"]
    text = _cli("quality", out).stdout
    assert "ΔRecall (pointwise)" in text and "IQ" in text and "cross-check" in text
    # the tasks are blind: no hidden column, no weight, no Base/Exp label
    task = json.loads((out / "tasks.jsonl").read_text().splitlines()[0])
    flat = json.dumps(task)
    assert "entity_id" not in flat and "weight" not in flat and "in_base" not in flat and "in_exp" not in flat
    # the oracle again: the same answers, nothing replaced
    before = (out / ANSWERS_FILE).read_bytes()
    _cli("judge", "oracle", out, "--oracle-column", "entity_id")
    assert (out / ANSWERS_FILE).read_bytes() == before


def test_bad_input_is_one_line(tmp_path):
    P = ex.example_paths()
    common = ["entities", "--base", P["base"], "--exp", P["exp"], "--items", P["items"]]
    r = _cli(*common, "--candidates", "no_such", "--out", tmp_path / "a", ok=False)
    assert "--candidates column 'no_such' is not an item attribute" in r.stderr and r.stderr.count("\n") <= 2
    assert not (tmp_path / "a").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    r = _cli(*common, "--out", tmp_path / "full", ok=False)
    assert "is not an empty directory" in r.stderr and (tmp_path / "full" / "x").read_text() == "keep"
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=20, seed=2)
    a = s.anchors.column("item_id")[0].as_py()
    with pytest.raises(InputError, match="is the anchor itself"):
        estimate_entities(s, [{"anchor": a, "item_id": a, "answer": "same"}])
    with pytest.raises(InputError, match="not an item of both clusterings"):
        estimate_entities(s, [{"anchor": a, "item_id": "no-such-item", "answer": "same"},
                              {"anchor": a, "item_id": None, "answer": "searched"}])
    with pytest.raises(InputError, match="not an item of this entity sample"):
        estimate_entities(s, [{"anchor": "no-such-anchor", "item_id": a, "answer": "same"}])
    with pytest.raises(InputError, match="expected one of same, different, unsure"):
        estimate_entities(s, [{"anchor": a, "item_id": "x", "answer": "maybe"}])
    # two raters' different answers of one member: unsure (what neither can rule out), counted
    m = [i for i in s.members.filter(pa.compute.equal(s.members.column("anchor"), a)).column("item_id").to_pylist()
         if i != a]
    if m:
        q = estimate_entities(s, [{"anchor": a, "item_id": m[0], "answer": "same"},
                                  {"anchor": a, "item_id": m[0], "answer": "different"}])
        assert q.answers["conflicts"] == 1 and q.unsure_members == 1
    # a sample whose files changed is refused
    (tmp_path / "s" / "draws.parquet").write_bytes(b"x")
    with pytest.raises(InputError, match="changed since it was drawn"):
        estimate_entities(tmp_path / "s")


def test_an_empty_answer_set_reads_not_judged_yet(tmp_path):
    P = ex.example_paths()
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=30, seed=2)
    q = estimate_entities(s.path)
    assert q.judged == 0 and "No anchor" in q.to_dict()["verdict"]
    assert isinstance(AnchorAnswers().same, set)


def test_a_census_judged_in_part_gives_a_range_that_holds_the_truth(tmp_path):
    """A census whose anchors are judged in part: the anchors not judged yet may be anything they can
    be, so the census's numbers are ranges (not a sum over the judged ones, which would read as exact),
    holding the exact values, and the verdict says how many are judged so far."""
    b, e, t, w = world(23, "both", weighted=True)
    want = reference(b, e, t, w)
    s = _census(tmp_path, b, e, t, w)
    rows = pq.read_table(s.path / ANSWERS_FILE).to_pylist()
    half = set(s.anchors.column("item_id").to_pylist()[::2])
    q = estimate_entities(s, [r for r in rows if r["anchor"] in half])
    assert q.judged == len(half) < q.anchors
    for m in ("delta_recall", "iq", "delta_precision"):
        est = q.metrics[m]
        assert est.estimate is None and est.low <= want[m] <= est.high, m
    text = q.to_dict()["verdict"]
    assert f"{len(half):,} of {q.anchors:,} anchors judged so far" in text and "not judged yet" in text
    assert "search outside both clusters was skipped" not in text


def test_a_model_completes_the_entities_apart_from_people(tmp_path):
    """The pair judge asked about every member and candidate: its answers in their own file, read with
    --source model (or by default when no one else answered); an answer that is not one of the three is
    left unanswered and counted; run again with the same answers, the file stays; the model never sees
    a hidden column."""
    from abcde.completion.model import MODEL_FILE, model_entities

    P = ex.example_paths()
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "s", items=P["items"], budget=40, seed=3,
                            hide=["entity_id"], candidates="surname")
    seen = set()

    def judge(a, b):
        seen.update(a)
        if a.get("surname") is None:
            return "maybe"
        return "same" if (a.get("surname"), a.get("date_of_birth")) == (b.get("surname"), b.get("date_of_birth")) \
            else "different"

    r = model_entities(s, judge, name="surname-dob")
    assert "entity_id" not in seen and "weight" not in seen
    t = pq.read_table(tmp_path / "s" / MODEL_FILE)
    assert set(t.column("source").to_pylist()) == {"model"} and r.rater == "model:surname-dob"
    assert r.answers["searched"] == s.anchors.num_rows  # the candidates are the model's search
    q = estimate_entities(s)  # no people's or oracle's answers: the model's
    assert q.answers["source"] == "model" and q.judged > 0
    assert estimate_entities(s, source="model").metrics["delta_recall"].low == q.metrics["delta_recall"].low
    model_entities(s, judge, name="surname-dob")  # the same answers: kept
    with pytest.raises(InputError, match="already holds other model answers"):
        model_entities(s, lambda a, b: "same", name="always")
    oracle_entities(s, "entity_id")  # people's (here the oracle's) answers come first by default
    assert estimate_entities(s).answers["source"] == "people and oracle"


def test_judge_model_and_quality_source_on_the_command_line(tmp_path):
    P = ex.example_paths()
    out = tmp_path / "ent"
    _cli("entities", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 30, "--hide",
         "entity_id", "--candidates", "surname", "--out", out)
    r = _cli("judge", "model", out, "--callable", "abcde.examples.judges:fields_agree", "--json")
    assert json.loads(r.stdout)["rater"] == "model:fields_agree"
    text = _cli("quality", out, "--source", "model").stdout
    assert "Answers used:" in text and "of model" in text
    r = _cli("quality", out, "--judgements", out / "x.csv", ok=False)
    assert "--judgements is for pair samples" in r.stderr


def test_the_notebook_shows_the_verdict_and_the_numbers(tmp_path):
    b, e, t, w = world(29, "both")
    s = _census(tmp_path, b, e, t, w)
    q = estimate_entities(s.path)
    h = q._repr_html_()
    assert "ΔRecall (pointwise)" in h and "IQ" in h and "<table" in h
    assert q.to_dict()["verdict"].split(":")[0].replace("−", "-") in h.replace("−", "-")


def test_the_completed_entities_export_as_a_truth_sample_pointwise_reads(tmp_path):
    """'judge export DIR --entities': every completed entity whole, with its inclusion probability
    1 − (1 − Σ p)^n; 'pointwise --truth-sample inclusion' reads it, and its ΔRecall interval holds
    the exact ΔRecall over the entities the diff touches (the population the file samples)."""
    P = ex.example_paths()
    out = tmp_path / "ent"
    _cli("entities", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 150, "--hide",
         "entity_id", "--out", out)
    _cli("judge", "oracle", out, "--oracle-column", "entity_id")
    r = _cli("judge", "export", out, "--out", tmp_path / "x.parquet", ok=False)
    assert "pass --entities" in r.stderr
    d = json.loads(_cli("judge", "export", out, "--entities", "--out", tmp_path / "ts.parquet", "--json").stdout)
    assert d["incomplete"] == 0 and d["unjudged"] == 0 and "touches" in d["population"]
    ts = pq.read_table(tmp_path / "ts.parquet")
    it = pq.read_table(P["items"])
    truth = dict(zip(it.column("item_id").to_pylist(), it.column("entity_id").to_pylist()))
    w = dict(zip(it.column("item_id").to_pylist(), it.column("weight").to_pylist()))
    groups: dict = {}
    for i, c, pi in zip(*(ts.column(k).to_pylist() for k in ("item_id", "cluster_id", "inclusion"))):
        groups.setdefault(c, []).append((i, pi))
        assert 0 < pi <= 1
    by_truth: dict = {}
    for i, e in truth.items():
        by_truth.setdefault(e, set()).add(i)
    for c, rows in groups.items():  # each exported entity is a true entity, whole
        ent = {i for i, _ in rows}
        assert ent == by_truth[truth[next(iter(ent))]] and len({pi for _, pi in rows}) == 1
    res = json.loads(_cli("pointwise", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--truth",
                          tmp_path / "ts.parquet", "--truth-sample", "inclusion", "--json").stdout)
    b = dict(zip(*(pq.read_table(P["base"]).column(c).to_pylist() for c in ("item_id", "cluster_id"))))
    e = dict(zip(*(pq.read_table(P["exp"]).column(c).to_pylist() for c in ("item_id", "cluster_id"))))
    want = reference(b, e, truth, w)
    touched = {i for ent in by_truth.values() if any(j in want["per"] for j in ent) for i in ent}
    W_t = sum(w[i] for i in touched)
    exact = sum(w[i] * want["per"][i]["delta_recall"] for i in touched if i in want["per"]) / W_t
    dr = res["estimates"]["delta_recall"]
    assert dr["ci_low"] <= exact <= dr["ci_high"], (dr, exact)


def test_slices_on_a_census_give_each_slices_exact_values(tmp_path):
    """Per slice S (here the first letters of the truth's entity label): ΔRecall and ΔPrecision over
    w(S), and IQ = Σ_{S∩A} w_i·(JD_B(i) − JD_E(i)) / Σ_S w_i·JD(i), exact on a census."""
    b, e, t, w = world(31, "both", weighted=True)
    want = reference(b, e, t, w)
    base, exp, items = _files(tmp_path, b, e, t, w)
    s = write_entity_sample(base, exp, tmp_path / "s", items=items, budget=10**6, seed=1, hide=["entity"],
                            slice_by=["block"])
    oracle_entities(s, "entity")
    q = estimate_entities(s.path, slice_by=["block"])
    block = {i: t[i][:2] for i in w}
    for v, ms in q.slices["block"]:
        S = [i for i in w if block[i] == v]
        wS = sum(w[i] for i in S)
        per = want["per"]
        exact = {m: sum(w[i] * per[i][m] for i in S if i in per) / wS for m in ("delta_recall", "delta_precision")}
        wjd = sum(w[i] * per[i]["jd"] for i in S if i in per)
        for m, x in exact.items():
            assert ms[m].estimate == pytest.approx(x, abs=1e-12), (v, m)
        if wjd > 0:
            assert ms["iq"].estimate == pytest.approx(sum(w[i] * per[i]["iq"] for i in S if i in per) / wjd, abs=1e-12)
        else:
            assert "iq" not in ms


def test_draws_that_all_agree_still_leave_what_the_items_not_drawn_can_hold(tmp_path):
    """A sampled truth that saw no change: every drawn anchor keeps its recall (Exp's merges of two
    entities change no ΔRecall(i)), while one light item, Exp mending its split, holds all of ΔRecall.
    Samples that never draw it show 0 on every draw, a standard error of 0, yet the items not drawn
    may still hold a change: the interval is the zero-events bound (Clopper–Pearson's for 0 events in
    n draws, times the largest value a draw can take), wide, and holds the truth."""
    b, e, t, w = {}, {}, {}, {}
    for k in range(40):  # 40 entities of 2 items; Exp merges entity 2m with 2m+1 (wrong merges)
        for j in range(2):
            i = f"m{k}-{j}"
            b[i], e[i], t[i], w[i] = f"B{k}", f"E{k // 2}", f"T{k}", 1.0
    for j in range(2):  # the light entity Base splits and Exp mends
        i = f"r-{j}"
        b[i], e[i], t[i], w[i] = f"Br{j}", "Er", "Tr", 0.2
    want = reference(b, e, t, w)
    assert want["delta_recall"] > 0
    base, exp, items = _files(tmp_path, b, e, t, w)
    seen = 0
    for seed in range(12):
        s = write_entity_sample(base, exp, tmp_path / f"s{seed}", items=items, budget=20, seed=seed,
                                hide=["entity"], candidates="block")
        assert not s.metadata["census"] and s.metadata["min_jd"] > 0
        oracle_entities(s, "entity")
        if any(str(i).startswith("r-") for i in s.draws.column("item_id").to_pylist()):
            continue
        seen += 1
        q = estimate_entities(s.path)
        for m in ("delta_recall", "iq", "delta_precision"):
            est = q.metrics[m]
            assert est.ci_low <= want[m] <= est.ci_high, (seed, m, est, want[m])
        dr = q.metrics["delta_recall"]
        assert dr.estimate == 0.0 and dr.std_err == 0.0 and dr.ci_high > 0 > dr.ci_low, dr
        # 0 events in 20 draws: at most 1 − 0.025^(1/20) of the draw probability, each draw within the
        # affected weight's share (±1 × w(A)/W = 1)
        assert dr.ci_high == pytest.approx(1 - 0.025 ** (1 / 20))
    assert seen >= 5


def test_one_draw_or_no_spread_never_gives_a_point_interval():
    for y in (np.array([0.3]), np.full(10, 0.3), np.zeros(50)):
        h = hansen_hurwitz(y, y, census=False, clip=(-1.0, 1.0), largest=1.0)
        assert h.ci_low < h.estimate < h.ci_high or h.ci_low < h.estimate == 0.0 < h.ci_high, h
    h = hansen_hurwitz(np.zeros(50), np.zeros(50), census=True)
    assert h.ci_low == h.ci_high == 0.0  # a census is exact
