"""Growing a pair sample instead of redrawing it (issue 13, item 3): ``pairs --extend DIR --budget N``
continues the same successive draws, so the result is exactly a fresh draw at N, and every
judgement made on the smaller sample stays valid and in place.

The Spark side of "both engines" is in test_engines.py (it shares the Spark session there).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

import abcde
from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.quality import PairSampleDir, estimate_quality, extend_pair_sample, oracle_judge
from abcde.sampling.allocation import SIGNED, STRATA, allocate
from abcde.samples.store import JudgementStore

P = example_paths("febrl3")


def draw(out, budget, *, estimator, seed=7, **kw):
    return abcde.draw_pair_sample(P["base"], P["exp"], out, items=P["items"], budget=budget, seed=seed,
                                  estimator=estimator, slice_by=["source"], hide=["entity_id"], **kw)


def draws_of(d: Path):
    return pq.read_table(d / "pairs.parquet").replace_schema_metadata(None)


def same_values(a, b, rel=1e-12) -> bool:
    """Equal, floats to 1e-12 (relative).

    A p-value far in a tail is a normal tail of z: its relative error is about z² times z's
    (z = 18 turns 5e-15 into 2e-12), so p-values are held to 1e-9.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            same_values(a[k], b[k], 1e-9 if k == "p_value" else rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=rel, abs=1e-300)
    return a == b


def meta_of(d: Path, drop=("extends", "meta_digest", "replaced", "files")) -> dict:
    m = json.loads((d / "metadata.json").read_text())
    return {k: v for k, v in m.items() if k not in drop}


@pytest.mark.parametrize("estimator", ["stratified", "paper"])
def test_an_extended_sample_is_the_fresh_draw_at_the_larger_budget(tmp_path, estimator):
    small, fresh = tmp_path / "small", tmp_path / "fresh"
    draw(small, 120, estimator=estimator)
    store = JudgementStore(small)
    people = {}
    for k, pid in enumerate(store.pair_ids[:15]):  # a person's judgements, then the oracle's
        store.record(pid, "same" if k % 3 else "different", rater="ann")
        people[pid] = "same" if k % 3 else "different"
    oracle_judge(small, "entity_id")
    before = {(j.pair_id, j.judgement, j.rater) for j in JudgementStore(small).live()}
    old_ids = PairSampleDir.read(small).judgeable_ids()
    old_meta = json.loads((small / "metadata.json").read_text())

    extend_pair_sample(small, budget=200)
    draw(fresh, 200, estimator=estimator)

    # The same sample as a fresh draw at 200: draws, tasks, items, slices, metadata (but the history).
    assert draws_of(small).equals(draws_of(fresh))
    for f in ("tasks.csv", "tasks.parquet", "tasks.jsonl", "items.parquet"):
        assert (small / f).read_bytes() == (fresh / f).read_bytes(), f
    # exact sums over the population, up to the order a parallel engine adds them in
    assert same_values(pq.read_table(small / "slices.parquet").to_pylist(),
                       pq.read_table(fresh / "slices.parquet").to_pylist())
    assert same_values(meta_of(small), meta_of(fresh))
    m = json.loads((small / "metadata.json").read_text())
    assert m["judgeable_pairs"] == 200 and m["budget"] == 200
    assert m["extends"] == [{"sample_id": old_meta["sample_id"], "budget": 120, "judgeable_pairs": 120}]
    if estimator == "stratified":  # every stratum only grew
        assert all(m["budgets"][c] >= old_meta["budgets"][c] for c in STRATA), (m["budgets"], old_meta["budgets"])
    # Every earlier pair is still in the sample, and every judgement is still there and still counts.
    s = PairSampleDir.read(small)
    assert old_ids <= s.judgeable_ids()
    after = JudgementStore(small)
    assert {(j.pair_id, j.judgement, j.rater) for j in after.live()} == before
    assert not (small / "replaced").exists()
    # Judged to the end, the extended sample gives the fresh sample's estimates; the person's
    # judgements count in the extended one.
    oracle_judge(small, "entity_id")
    oracle_judge(fresh, "entity_id")
    ext = estimate_quality(small, source="oracle", slice_by=["source"]).to_dict()
    new = estimate_quality(fresh, source="oracle", slice_by=["source"]).to_dict()
    # (the same numbers and words; the next-step command names each one's own directory, and the
    # extended one says it left the person's judgements out)
    assert ext["design"].pop("judgements_used")["left_out"] and not new["design"].pop("judgements_used")["left_out"]
    ext, new = (json.loads(json.dumps(q, default=str).replace(str(d), "DIR")) for q, d in ((ext, small), (new, fresh)))
    assert same_values(ext, new)
    people_only = estimate_quality(small, source="person").to_dict()
    assert people_only["judged_pairs"] == len(people)


def test_the_cli_extends_from_anywhere_and_keeps_the_judgement_file(tmp_path, monkeypatch):
    d = tmp_path / "s"
    runner = CliRunner()
    r = runner.invoke(main, ["pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", "40",
                             "--seed", "3", "--out", str(d), "-q"])
    assert r.exit_code == 0, r.output
    (d / "judgements.csv").write_text("pair_id,judgement\n" + "".join(
        f"{pid},same\n" for pid in sorted(PairSampleDir.read(d).judgeable_ids())[:5]))
    kept = (d / "judgements.csv").read_bytes()
    monkeypatch.chdir(tmp_path)  # the inputs were recorded with absolute paths
    r = runner.invoke(main, ["pairs", "--extend", "s", "--budget", "60", "--json", "-q"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["judgeable_pairs"] == 60 and out["extends"][0]["judgeable_pairs"] == 40
    assert (d / "judgements.csv").read_bytes() == kept
    r = runner.invoke(main, ["pairs", "--extend", "s", "--budget", "70", "-q"])
    assert r.exit_code == 0, r.output
    assert "Extended from 60 to 70 pairs to judge" in r.output
    assert [e["budget"] for e in PairSampleDir.read(d).metadata["extends"]] == [40, 60]
    r = runner.invoke(main, ["quality", "s", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["judged_pairs"] == 5
    # --extend takes the sample's own settings; the others are refused by name
    r = runner.invoke(main, ["pairs", "--extend", "s", "--budget", "90", "--seed", "4", "--estimator", "paper"])
    assert r.exit_code == 2 and "leave out --seed, --estimator" in r.output
    r = runner.invoke(main, ["pairs", "--budget", "90"])
    assert r.exit_code == 2 and "Missing option(s) --base, --exp, --seed, --out" in r.output


def test_what_cannot_be_extended_is_refused_and_left_unchanged(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for role in ("base", "exp", "items"):
        shutil.copy(P[role], inputs / f"{role}.parquet")
    d = tmp_path / "s"
    abcde.draw_pair_sample(inputs / "base.parquet", inputs / "exp.parquet", d, items=inputs / "items.parquet",
                           budget=30, seed=1)
    snapshot = {f.name: f.read_bytes() for f in d.iterdir()}
    with pytest.raises(InputError, match="budget of 30 pairs; give a larger budget"):
        extend_pair_sample(d, budget=30)
    # an input changed since the draw: named, refused
    shutil.copy(P["exp"], inputs / "base.parquet")
    with pytest.raises(InputError, match=r"drawn from other inputs: base '.*base.parquet' differs"):
        extend_pair_sample(d, budget=40)
    # an input that moved: refused by name; given again, accepted only with the same content
    (inputs / "base.parquet").unlink()
    with pytest.raises(InputError, match="base.parquet"):
        extend_pair_sample(d, budget=40)
    assert {f.name: f.read_bytes() for f in d.iterdir()} == snapshot
    extend_pair_sample(d, budget=40, base=P["base"])
    assert PairSampleDir.read(d).metadata["judgeable_pairs"] == 40
    # tables (not files) must be given again
    t = tmp_path / "t"
    abcde.draw_pair_sample(pq.read_table(P["base"]), pq.read_table(P["exp"]), t, budget=10, seed=1)
    with pytest.raises(InputError, match="drawn from a base 'Table' whose path it did not record"):
        extend_pair_sample(t, budget=20)
    extend_pair_sample(t, budget=20, base=pq.read_table(P["base"]), exp=pq.read_table(P["exp"]))


def test_an_exhausted_sample_says_there_is_nothing_to_add(tmp_path, write):
    base = write("b.parquet", item_id=[1, 2, 3, 4], cluster_id=[1, 1, 2, 2])
    exp = write("e.parquet", item_id=[1, 2, 3, 4], cluster_id=[1, 1, 1, 1])
    d = tmp_path / "s"
    abcde.draw_pair_sample(base, exp, d, budget=50, seed=1)
    # 4 merge pairs and the 2 intersection pairs {1, 2} and {3, 4} (W(B) = 2 ≠ W(E) = 4): each stratum
    # is listed whole (before census strata, the sampler stopped at 4 and missed the intersection)
    with pytest.raises(InputError, match="already holds all 6 pairs that need a judgement"):
        extend_pair_sample(d, budget=60)
    m = PairSampleDir.read(d).metadata
    # the pairs {1, 2} and {3, 4} (together in both) are the intersection's, not the agreed stratum's
    assert m["census"] == ["merge", "intersection-"] and m["pair_counts"] == {
        "split": 0, "merge": 4, "intersection+": 0, "intersection-": 2, "agreed": 0}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4), st.integers(0, 120),
       st.sampled_from(["proportional", "neyman"]),
       st.none() | st.lists(st.integers(0, 60), min_size=4, max_size=4))
@example([0.5, 0.02734375, 0.02734375, 0.02734375], 71, "proportional", None)
def test_allocation_only_grows_with_the_budget(u, budget, allocation, caps):
    """House monotone: the budgets for N + 1 are those for N plus one judgement (so the draws of
    every stratum of a larger sample continue those of the smaller one); with caps (a stratum's
    pairs), no stratum beyond its cap, and the budget is spent while any stratum has room."""
    totals = dict(zip(SIGNED, u))
    sig = {"split": 0.3, "merge": 0.9, "intersection+": 0.5, "intersection-": 0.2}
    cap = dict(zip(SIGNED, caps)) if caps else None
    a = allocate(budget, totals, allocation=allocation, sigmas=sig, caps=cap)
    b = allocate(budget + 1, totals, allocation=allocation, sigmas=sig, caps=cap)
    if cap:
        room = sum(cap[c] for c in SIGNED if totals[c] > 0)
        assert all(a[c] <= cap[c] for c in SIGNED) and sum(a.values()) == min(budget, room)
        assert all(b[c] >= a[c] for c in SIGNED) and sum(b.values()) == min(budget + 1, room)
        return
    live = [c for c in SIGNED if totals[c] > 0]
    assert sum(a.values()) == (budget if live else 0)
    assert all(b[c] >= a[c] for c in SIGNED)
    assert sum(b[c] - a[c] for c in SIGNED) == (1 if live else 0)
    if budget >= 2 * len(live):
        assert all(a[c] >= 2 for c in live)
    # proportional: near the quota U_c/ΣU · N (Sainte-Laguë) once every live stratum has its two.
    # Sainte-Laguë (Webster) can exceed a quota by a little more than one seat: u = [0.5, 0.0273 ×3]
    # at 71 gives the first stratum 62 against a quota of 60.99 (three small strata at 3 each), so
    # the bound is two seats, not one.
    if allocation == "proportional" and live and budget >= 2 * len(live):
        s = sum(totals[c] for c in live)
        quota = {c: budget * totals[c] / s for c in live}
        assert all(a[c] <= max(quota[c] + 2, 2) for c in live), (a, quota)


def test_when_the_pairs_run_out_the_page_gives_the_budget_and_the_command(tmp_path, page):
    """All pairs judged, ΔPrecision's interval still wider than --target-width: the owner's state and
    view say how many more pairs the current SE suggests and give the 'pairs --extend' command;
    after it, the judgements still count and judging goes on."""
    from abcde.judging.session import JudgingSession
    from abcde.web.judging_server import serve

    d = tmp_path / "s"
    draw(d, 16, estimator="stratified")
    entity = {r["item_id"]: r["entity_id"] for r in pq.read_table(d / "items.parquet").to_pylist()}
    session = JudgingSession(d, target_width=1e-6)
    assert session.owner_state()["more_pairs"] is None  # pairs remain
    k = 0
    while (nxt := session.state("ann")["next"]) is not None:
        task = session.store.task_by_pair[nxt["pair_id"]]
        # the truth, but every third answer the other way: a stratum whose answers all agree has SE 0
        right = entity[task["item_a"]] == entity[task["item_b"]]
        session.submit("ann", nxt["pair_id"], "same" if right != (k % 3 == 0) else "different")
        k += 1
    width = session.owner_state()["ci_width"]
    assert width > 0
    target = width / 2.0  # half the width: four times the pairs
    session = JudgingSession(d, target_width=target)
    more = session.owner_state()["more_pairs"]
    want = math.ceil(16 * (width / target) ** 2)
    assert want == 64 and more["suggested_budget"] == want and more["more"] == want - 16
    assert more["command"] == f"abcde pairs --extend {d} --budget {want}"
    assert JudgingSession(d, target_width=width * 1.01).owner_state()["more_pairs"] is None  # target reached
    srv = serve(d, target_width=target).start()
    try:
        page.goto(srv.owner_url)  # the owner's view (raters are not shown it)
        page.wait_for_selector("#more:not([hidden])")
        text = page.inner_text("#more")
        assert f"about {want - 16:,} more pairs ({want:,} in all)" in text
        assert f"abcde pairs --extend {d} --budget {want}" in text
    finally:
        srv.shutdown()
        srv.close()
    judged = {j.pair_id for j in session.store.live()}
    extend_pair_sample(d, budget=40)  # (the suggested budget may be large; any larger one works the same way)
    grown = JudgingSession(d, target_width=target)
    st2 = grown.state("ann")
    assert st2["judged_pairs"] == len(judged) and st2["next"] is not None
    assert grown.owner_state()["more_pairs"] is None
