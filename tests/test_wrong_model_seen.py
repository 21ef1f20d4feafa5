"""A model judge that is wrong must be seen (issue 52): ``judge model`` warns when the callable asks
for fields the items do not have, and when it gives one answer to every pair."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.judging.models import _Watched, model_warnings


def cli(*args, code=0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


def other_items(d, n: int, entities: int, pairs_args: tuple):
    """Items that are not the example's (columns ``name``, ``city``, a hidden ``entity``), Base splitting
    some entities and Exp merging some, and a pair sample of them drawn with ``pairs_args``."""
    rng = np.random.default_rng(5)
    ent = rng.integers(0, entities, n)
    ids = [f"r{k}" for k in range(n)]
    base = np.where(rng.random(n) < 0.2, ent + 1000, ent)
    exp = np.where(ent % 7 == 0, ent + 1, ent)
    pq.write_table(pa.table({"item_id": ids, "cluster_id": base}), d / "base.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": exp}), d / "exp.parquet")
    pq.write_table(pa.table({"item_id": ids, "name": [f"n{e}" for e in ent], "city": [f"c{e % 13}" for e in ent],
                             "entity": ent}), d / "items.parquet")
    cli("pairs", "--base", d / "base.parquet", "--exp", d / "exp.parquet", "--items", d / "items.parquet",
        *pairs_args, "--hide", "entity", "--seed", 1, "--out", d / "s", "-q")
    return d / "s"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return other_items(tmp_path_factory.mktemp("wrong_model"), 300, 100, ("--budget", 60))


def test_the_examples_judge_on_other_items_is_warned_about(sample):
    """The README's offline judge knows only the example's columns: on other items it asks for fields
    they lack and says "different" to every pair, and both are said."""
    d = json.loads(cli("judge", "model", sample, "--callable", "abcde.examples.judges:fields_agree",
                       "--json").output)
    absent, same = d["warnings"]
    assert "'given_name'" in absent and "'surname'" in absent and "do not have" in absent and "'name'" in absent
    assert "'different' to every one of the" in same


def test_a_judge_that_reads_the_items_fields_and_tells_pairs_apart_is_not_warned_about():
    asked: set = set()
    a, b = _Watched({"name": "x", "city": "y"}, asked), _Watched({"name": "x", "city": "z"}, asked)
    assert a.get("name") == b["name"] and "city" in a
    assert asked == set()
    assert model_warnings("j", {"same": 30, "different": 10, "unsure": 0}, asked, ["name", "city"]) == []
    # A handful of answers, all alike, is too few to say anything.
    assert model_warnings("j", {"same": 0, "different": 5, "unsure": 0}, set(), ["name"]) == []
    a.get("surname"), ("dob" in a)
    assert asked == {"surname", "dob"}


def test_quality_counts_the_models_answers_and_its_disagreement_with_people(tmp_path):
    """The model's answers are answers, used by the estimate or not, and the disagreement with people is
    given wherever both judged: a judge saying "different" to every pair, against people who say "same"
    to most of their tasks, is warned about (more than a fifth) (issue 52)."""
    s = other_items(tmp_path, 600, 200, ("--budget", 200, "--human-budget", 60))
    cli("judge", "model", s, "--callable", "abcde.examples.judges:fields_agree")
    cli("judge", "oracle", s, "--oracle-column", "entity")
    ppi = json.loads(cli("quality", s, "--json").output)["design"]["ppi"]
    assert ppi["model_unanswered"] == 0 and ppi["model_judgements"] == 200
    assert ppi["model_used"] + ppi["model_unused"] + ppi["model_unanswered"] == 200
    assert ppi["both_judged"] > 0 and ppi["disagreements"] > ppi["both_judged"] / 5
    assert ppi["disagreement_share"] > 0.2 and "more than a fifth" in ppi["warning"]
