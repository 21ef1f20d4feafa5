"""One vote rule: the judging app (which pair the adaptive allocation counts as judged how) and
``abcde quality`` resolve the same votes the same way, and the way is the documented one
(majority; a tie between the top answers is unsure; unsure is a vote like any other)."""

from __future__ import annotations

import pytest

from abcde.judging.session import JudgingSession
from abcde.samples.judgements import load_judgements, majority, vote
from abcde.samples.store import JudgementStore
from judging_helpers import make_sample

CASES = [
    (["same"], "same", False),
    (["different"], "different", False),
    (["unsure"], "unsure", False),
    (["same", "unsure"], "unsure", True),  # a tie, although no one said "different"
    (["same", "different"], "unsure", True),
    (["same", "same", "different"], "same", False),
    (["different", "different", "same", "unsure"], "different", False),
    (["unsure", "unsure", "same"], "unsure", False),  # unsure wins outright: not a tie
    (["same", "different", "unsure"], "unsure", True),
]


@pytest.mark.parametrize("answers, expected, tied", CASES)
def test_vote_rule(answers, expected, tied):
    assert vote(answers) == (expected, tied)
    assert majority(answers) == expected


def test_the_judging_app_and_quality_resolve_the_same_votes_alike(tmp_path):
    sample = make_sample(tmp_path, budget=40, seed=3)
    store = JudgementStore(sample)
    pairs = store.pair_ids
    assert len(pairs) >= len(CASES)
    expected = {}
    for pid, (answers, want, _) in zip(pairs, CASES):
        for k, answer in enumerate(answers):
            store.record(pid, answer, rater=f"rater{k}")
        expected[pid] = want
    live = store.live(source="person")
    in_app = JudgingSession.resolved(live)
    in_quality = load_judgements([store.path], pair_ids=set(pairs), id_type=store.id_type).by_pair
    assert in_app == in_quality == expected
