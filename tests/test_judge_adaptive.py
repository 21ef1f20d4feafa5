"""Adaptive Neyman allocation in the judging session (issue 8): the next pair comes from the
stratum whose next judgement most reduces the SE of ΔPrecision."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from abcde import InputError
from abcde.examples import example_paths
from abcde.judging.session import JudgingSession
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.quality.stratified import next_stratum, stratum_values


@pytest.fixture(scope="module")
def febrl():
    return example_paths("febrl3")


def _truth(sample_dir):
    items = pq.read_table(sample_dir / "items.parquet").to_pylist()
    return {r["item_id"]: r["entity_id"] for r in items}


def test_adaptive_session_serves_the_greedy_neyman_stratum(febrl, tmp_path):
    d = draw_pair_sample(febrl["base"], febrl["exp"], tmp_path / "s", items=febrl["items"], budget=200, seed=3,
                         estimator="stratified")
    truth = _truth(d)
    s = JudgingSession(d, adaptive=True)
    assert s.owner_state()["settings"]["allocation"] == "adaptive Neyman"
    tasks = s.store.task_by_pair
    totals_all = s.store.sample.metadata["pair_totals"]
    live_strata = [c for c in s.store.sample.metadata["budgets"] if totals_all[c] > 0]
    served = []
    share = s._needed_in["agreed"] / sum(s._needed_in.values())
    for k in range(60):
        live = s.store.live(source="person")
        pid = s.next_pair("ann", live)
        by_pair = {j.pair_id: j.judgement for j in live}
        if s._stratum_of[pid] == "agreed":
            # The recall lift's first two, after ΔPrecision's first two; then its share of the sample
            # (adaptive Neyman aims at ΔPrecision, of which it is no part).
            assert k >= 2 * len(live_strata)
            if served.count("agreed") >= 2:
                assert served.count("agreed") < share * (k + 1), (k, served.count("agreed"))
        elif k >= len(live_strata):
            # After each stratum's first judgement (test_judge_order), the served stratum is
            # next_stratum's choice on the judgements so far.
            judged = {p for p in by_pair}
            remaining = {s._stratum_of[p] for p in s.pair_ids if p not in judged}
            totals = {c: u for c, u in totals_all.items() if c in remaining}
            want = next_stratum({"pair_totals": totals}, stratum_values(s.store.sample.draws, by_pair))
            assert s._stratum_of[pid] == want
        served.append(s._stratum_of[pid])
        t = tasks[pid]
        s.submit("ann", pid, "same" if truth[t["item_a"]] == truth[t["item_b"]] else "different")
    counts = Counter(served)
    # Every stratum with weight got one judgement first (largest U_c first), then its second.
    assert served[:len(live_strata)] == sorted(live_strata, key=lambda c: -totals_all[c])
    assert set(served[:2 * len(live_strata)]) == set(live_strata)
    assert all(counts[c] >= 2 for c in live_strata)
    # The agreed stratum kept its share of the judgements (before, adaptive serving stopped at its first two).
    assert share * 60 - 1 <= counts["agreed"] <= share * 60 + 2, (share, counts)
    # The live estimate is still the one `abcde quality` computes for these judgements.
    est = s.estimates()
    assert est["estimator"] == "stratified"
    export = tmp_path / "j.csv"
    from abcde.util.files import write_table_file

    write_table_file(s.store.to_table(source="person"), export)
    assert estimate_quality(d, [str(export)]).to_dict()["delta_precision"] == est["delta_precision"]


def test_adaptive_needs_a_stratified_sample(febrl, tmp_path):
    d = draw_pair_sample(febrl["base"], febrl["exp"], tmp_path / "p", items=febrl["items"], budget=30, seed=1,
                         estimator="paper")
    with pytest.raises(InputError, match="needs a stratified pair sample"):
        JudgingSession(d, adaptive=True)


def test_adaptive_order_gives_a_smaller_se_than_the_sampled_order(tmp_path):
    """Over eight simulated worlds (test_recall_lift.sim_world, "both", weighted: many pairs of each
    answer), 60 oracle judgements of a 200-pair stratified sample each: the mean SE of ΔPrecision in
    the adaptive order is below 0.95 times the mean in the allocation as sampled (measured 0.85×).
    One world alone does not show it: on the bundled example 60 judgements hold at most a few
    'different' answers, and the SE is then the same in both orders (or 0), whichever pairs are served
    (a fixed configuration there held it only for one sample's serving order)."""
    from test_recall_lift import sim_world

    se: dict = {True: [], False: []}
    for seed in range(1, 9):
        b, e, items = sim_world(seed, "both", weighted=True)
        truth = dict(zip(items.column("item_id").to_pylist(), items.column("entity").to_pylist()))
        d = draw_pair_sample(b, e, tmp_path / f"s{seed}", items=items, budget=200, seed=3, estimator="stratified",
                             hide=["entity"])
        for adaptive in (True, False):
            for f in d.glob("judgements.sqlite*"):
                f.unlink()
            s = JudgingSession(d, adaptive=adaptive)
            for _ in range(60):
                pid = s.next_pair("ann")
                t = s.store.task_by_pair[pid]
                s.submit("ann", pid, "same" if truth[t["item_a"]] == truth[t["item_b"]] else "different")
            se[adaptive].append(s.estimates()["delta_precision"]["std_err"])
    assert sum(se[True]) < 0.95 * sum(se[False]), se
