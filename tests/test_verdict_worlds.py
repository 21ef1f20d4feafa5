"""The verdict's words on simulated worlds with a known truth (issue 38, "Proof"): the whole path
(draw, judge by the truth, estimate, verdict), and the words agree with the facts' directions, and
the directions never contradict the truth (an interval excluding 0 on the wrong side)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import reference as ref
from test_quality import dicts
from test_recall_lift import sim_world
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.samples.sample_dir import PairSampleDir

HEADLINES = {"better": "is better than", "worse": "is worse than", "precision_for_recall": "trades precision for recall",
             "recall_for_precision": "trades recall for precision", "none": "No detectable change"}


@pytest.mark.parametrize("kind", ["splits", "merges", "both", "tradeoff"])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_words_follow_the_facts_and_the_facts_the_truth(tmp_path, kind, seed):
    base, exp, items = sim_world(11, kind)
    b, e, w, t = dicts(base, exp, items)
    truth = {"recall": ref.recall_lift(b, e, t, w),
             "precision": ref.overall_precision(e, t, w) - ref.overall_precision(b, t, w)}
    out = draw_pair_sample(base, exp, tmp_path / "s", budget=300, seed=seed, items=items, hide=["entity"])
    draws = PairSampleDir.read(out).draws
    ans = {p: ("same" if t[a] == t[c] else "different") for p, a, c in zip(
        draws.column("pair_id").to_pylist(), draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist())}
    q = estimate_quality(out, pa.table({"pair_id": list(ans), "judgement": list(ans.values())})).to_dict()
    facts, text = q["verdict_facts"], q["verdict"]
    for side in ("precision", "recall"):
        d = facts[side]["direction"]
        assert d in ("up", "down", "none"), (side, facts[side])
        if d != "none":  # an interval that excludes 0 is on the truth's side
            assert (truth[side] > 0) == (d == "up"), (side, truth[side], facts[side])
    assert text.split(". ")[0].count(HEADLINES[facts["overall"]]) == 1 or facts["overall"] == "none" and \
        text.startswith(HEADLINES["none"]), (facts["overall"], text)
    if kind == "splits":
        assert facts["recall"]["direction"] == "down"  # Exp only cuts Base's clusters: it loses true links
    if kind == "tradeoff":
        assert facts["recall"]["direction"] == "up"
