"""Partial is said until it is final (issue 52): while pairs of the sample are not judged, the
headline says "so far" and the next step says how many remain, whatever the intervals say; only a
result that more judging cannot change reads as final."""

from __future__ import annotations

import pytest

from abcde.quality.verdict import verdict
from test_verdict_recall import quality


@pytest.mark.parametrize("p,r", [("up", "down"), ("down", "up"), ("up", "up"), ("none", "none")])
def test_a_decided_answer_with_pairs_left_says_so_far_and_how_many_remain(p, r):
    q = quality(p, r, missing=260)
    q["judged_pairs"] = 40
    v = verdict(q)
    assert v.headline.startswith("So far (40 of 300 pairs judged): "), v.headline
    assert v.facts["final"] is False
    step = v.facts["next_step"]
    assert step["kind"] == "judge" and step["missing_pairs"] == 260
    assert v.sentences[-1] == ("Next: 260 pairs of the sample are not judged yet (abcde judge serve pairs/); the "
                               "answer can change until they are.")


@pytest.mark.parametrize("p,r", [("up", "down"), ("none", "none")])
def test_every_pair_judged_reads_as_final(p, r):
    v = verdict(quality(p, r, missing=0))
    assert "So far" not in v.text and v.facts["final"] is True


def test_a_model_only_answer_names_the_model_first_then_so_far():
    q = quality("up", "down", missing=5)
    q["design"]["judgements_used"] = {"by_source": {"model": 295}, "source": None, "left_out": {}}
    head = verdict(q).headline
    assert head.startswith("Judged by a model only, not people. So far (295 of 300 pairs judged): "), head
