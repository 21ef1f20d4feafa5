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


def test_a_model_only_answer_says_how_the_people_disagree(tmp_path):
    """``--source model`` leaves the people's judgements out of the estimates, not out of sight: the
    verdict says on how many of the pairs both judged they disagree, and calls the model-only answer
    into doubt above a fifth (issue 52)."""
    s = other_items(tmp_path, 600, 200, ("--budget", 200, "--human-budget", 60))
    cli("judge", "model", s, "--callable", "abcde.examples.judges:fields_agree")
    cli("judge", "oracle", s, "--oracle-column", "entity")
    d = json.loads(cli("quality", s, "--source", "model", "--json").output)
    check = d["design"]["judgements_used"]["people_check"]
    ppi = json.loads(cli("quality", s, "--json").output)["design"]["ppi"]
    assert (check["both_judged"], check["disagreements"]) == (ppi["both_judged"], ppi["disagreements"])
    assert check["disagreements"] > check["both_judged"] / 5
    said = [x for x in d["verdict"].split("\n") if "Model and people disagree on" in x]
    assert said and f"{check['disagreements']} of the {check['both_judged']} pairs both judged" in said[0]
    assert "in doubt" in said[0] and "--source person" in said[0]
    assert d["verdict_facts"]["model_check"] == check
    out = cli("quality", s, "--source", "model").output
    assert "in doubt" in out and "Pairs judged by the model: 200" in out


def test_a_model_no_person_checked_is_said_to_be_unchecked(tmp_path):
    s = other_items(tmp_path, 300, 100, ("--budget", 60))
    cli("judge", "model", s, "--callable", "abcde.examples.judges:fields_agree")
    d = json.loads(cli("quality", s, "--json").output)
    assert d["verdict"].startswith("Judged by a model only, not people")
    assert "No person has judged any of these pairs, so nothing checks the model's answers" in d["verdict"]
    assert d["counts_of"] == "the model"


def test_each_count_names_whose_judgements_it_counts(tmp_path):
    """"Pairs judged: 60 … not judged: 140" beside "the model judged 200" read as a contradiction: each
    count names whose judgements it is, in the terminal, the JSON and both reports (issue 52)."""
    s = other_items(tmp_path, 600, 200, ("--budget", 200, "--human-budget", 60))
    cli("judge", "model", s, "--callable", "abcde.examples.judges:fields_agree")
    cli("judge", "oracle", s, "--oracle-column", "entity")
    out = cli("quality", s).output
    assert "Pairs judged by the oracle: 61" in out and "the model judged 200" in out
    assert json.loads(cli("quality", s, "--source", "oracle", "--json").output)["counts_of"] == "the oracle"
    cli("report", "--base", tmp_path / "base.parquet", "--exp", tmp_path / "exp.parquet", "--items",
        tmp_path / "items.parquet", "--quality", s, "--markdown", tmp_path / "r.md", "--out", tmp_path / "r.html")
    assert "pairs judged by the oracle" in (tmp_path / "r.html").read_text()
    assert "pairs judged by the oracle" in (tmp_path / "r.md").read_text()


def test_what_the_models_answers_were_worth_says_what_would_tell(tmp_path):
    """People's judgements that do not vary leave the model's worth untold: the output says what would
    tell (more people's judgements, if any answers differently) and that, where every pair truly has one
    answer, nothing will (issue 52)."""
    from abcde.samples.store import JudgementStore

    s = other_items(tmp_path, 600, 200, ("--budget", 200, "--human-budget", 60))
    (tmp_path / "city.py").write_text("def judge(a, b):\n    return 'same' if a['city'] == b['city'] else 'different'\n")
    cli("judge", "model", s, "--callable", f"{tmp_path / 'city.py'}:judge")
    store = JudgementStore(s)
    for pid in sorted(store.people_tasks):  # every people's task answered "same": nothing varies
        store.record(pid, "same", rater="ann")
    d = json.loads(cli("quality", s, "--json").output)
    ppi = d["design"]["ppi"]
    assert ppi["model_used"] > 0 and ppi["worth_people_judgements"] is None and "do not vary" in ppi["worth_note"]
    assert "people's judgements of more pairs (abcde pairs DIR --extend with a larger --human-budget)" in ppi["worth_next"]
    assert "can tell only if some answer differently" in ppi["worth_next"] and "nothing will" in ppi["worth_next"]
    assert ppi["worth_next"] in d["verdict"]
