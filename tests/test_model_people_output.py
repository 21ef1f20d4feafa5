"""What the model + people output says (issue 38, section 4), on the bundled example end to end:

- why what the model's judgements were worth cannot be told, when the people's judgements do not vary;
- the disagreement between model and people weighted back to the drawn pairs first, the raw count second;
- the model's judgements counted from the store (every answer, unsure included), and apart from them
  how many the estimate used (a model that answered every pair "same" is not "0 judgements");
- people's tasks that are not the number asked (``--human-budget``) say why;
- ``--source person`` / ``oracle`` on a sample whose tasks were chosen by the model's answers say
  nothing of a model's judgements used (no prediction-powered line);
- and, in the terminal and the report, a standard error of 0 beside an interval with width says why
  (section 5).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from judging_helpers import fresh_copy

P = example_paths("febrl3")


def cli(*args, ok=True):
    r = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert r.exit_code == 0, r.output
    return r


def draw(d, budget, human, seed=3):
    cli("pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--weight-column", "weight",
        "--budget", budget, "--human-budget", human, "--seed", seed, "--hide", "entity_id", "--out", d)
    return d


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """400 pairs, 60 of them the people's tasks (not judged)."""
    return draw(tmp_path_factory.mktemp("mp") / "pairs", 400, 60)


def judge_file(tmp_path, body: str) -> str:
    f = tmp_path / "judges.py"
    f.write_text(body)
    return f"{f}:judge"


def quality(d, *args) -> dict:
    return json.loads(cli("quality", d, "--json", *args).output)


def text(d, *args) -> str:
    return " ".join(cli("quality", d, *args).output.split())  # rich's wrapping undone


def people_tasks(d):
    from abcde.samples.people_tasks import people_pairs
    from abcde.samples.sample_dir import PairSampleDir

    s = PairSampleDir.read(d)
    return people_pairs(s.draws, s.metadata)


# ----------------------------------------------------------------------------------- the counts
def test_the_models_judgements_are_counted_from_the_store_unsure_included(drawn, tmp_path):
    """judge model said N judged; quality says the same N, its answers, and the answers the estimate uses."""
    d = fresh_copy(drawn, tmp_path)
    out = json.loads(cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree", "--json").output)
    a = out["answers"]
    assert a["unsure"] > 0 and out["judged_now"] == 400  # the rule leaves some pairs unsure
    cli("judge", "oracle", d, "--oracle-column", "entity_id")
    ppi = quality(d)["design"]["ppi"]
    assert ppi["model_judgements"] == out["judged_now"] == 400
    assert ppi["model_answers"] == {"same": a["same"], "different": a["different"], "unsure": a["unsure"]}
    assert ppi["model_used"] + ppi["model_unused"] + ppi["model_unanswered"] == 400
    # the estimate uses the answers the tasks were chosen by: same or different, in strata split by them
    from abcde.samples.people_tasks import design_answers
    from abcde.samples.sample_dir import PairSampleDir

    used = len(design_answers(PairSampleDir.read(d).metadata))
    unsplit = a["same"] + a["different"] - used
    assert ppi["model_used"] == used and f"{a['unsure']} unsure" in ppi["model_note"]
    assert unsplit == 0 or f"{unsplit} in strata its answers did not split" in ppi["model_note"]
    t = text(d)
    assert (f"the model judged 400 of the 400 pairs (same {a['same']}, different {a['different']}, unsure "
            f"{a['unsure']})") in t
    assert f"the estimate uses the {ppi['model_used']} answers the people's tasks were chosen by" in t
    assert f"Prediction-powered: {ppi['model_used']} model answers corrected by" in t
    assert "(the model judged 400 pairs; its others are unsure or not used)" in t


def test_a_model_that_answered_every_pair_same_is_counted_and_said_unused(tmp_path):
    """80 pairs all "same": the model judged 80 (not "0 … 80 unanswered"); its answers split no stratum,
    so the estimate uses none of them and says so."""
    d = draw(tmp_path / "pairs", 80, 20, seed=1)
    cli("judge", "model", d, "--callable", judge_file(tmp_path, "def judge(a, b):\n    return 'same'\n"))
    cli("judge", "oracle", d, "--oracle-column", "entity_id")
    q = quality(d)
    ppi = q["design"]["ppi"]
    assert ppi["model_judgements"] == 80 and ppi["model_answers"] == {"same": 80, "different": 0, "unsure": 0}
    assert ppi["model_used"] == 0 and "did not split" in ppi["model_note"]
    t = text(d)
    assert "the model judged 80 of the 80 pairs (same 80, different 0, unsure 0)" in t
    assert "the estimate uses none of the model's answers" in t and "0 model judgements" not in t
    assert "The model's 80 judgements are not used (its answers split no stratum)" in t
    assert "were worth about" not in t and "0 model answers" not in t


def test_a_model_the_people_never_saw_unanswered_pairs_in_the_blind_design(drawn, tmp_path):
    """People judged first (tasks as drawn): the model's unsure answers count as ½ same, said as such."""
    d = fresh_copy(drawn, tmp_path)
    cli("judge", "oracle", d, "--oracle-column", "entity_id")  # people first: the tasks stay as drawn
    out = json.loads(cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree", "--json").output)
    ppi = quality(d)["design"]["ppi"]
    assert "design" not in ppi and ppi["model_judgements"] == out["judged_now"]
    assert ppi["model_used"] == out["answers"]["same"] + out["answers"]["different"]
    assert "unsure answers count as ½" in ppi["model_note"]
    assert f"the estimate uses its {ppi['model_used']} same or different answers" in text(d)


# ----------------------------------------------------------------------------- the disagreement
@pytest.mark.parametrize("by_answers", (True, False))
def test_the_weighted_disagreement_comes_first_and_the_raw_count_second(drawn, tmp_path, by_answers):
    from abcde.samples.people_tasks import people_cells, units_of
    from abcde.samples.sample_dir import PairSampleDir
    from abcde.samples.store import JudgementStore

    d = fresh_copy(drawn, tmp_path)
    if not by_answers:  # people first: the tasks as drawn, a random subset of each stratum
        cli("judge", "oracle", d, "--oracle-column", "entity_id")
    cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree")
    cli("judge", "oracle", d, "--oracle-column", "entity_id")
    ppi = quality(d)["design"]["ppi"]
    # the share by hand: each pair both judged counts for its group's drawn pairs per people's pair
    s = PairSampleDir.read(d)
    groups = people_cells(s.draws, s.metadata) if by_answers else units_of(s.draws, s.metadata)
    store = JudgementStore(d)
    # every answer the model gave, used by the estimate or not (issue 52: the disagreement wherever both judged)
    model = {j.pair_id: j.judgement for j in store.live(source="model")}
    people = {j.pair_id: j.judgement for j in store.live(source="oracle")}
    tasks = people_tasks(d)
    judged = [p for p in tasks if people.get(p) in ("same", "different")]
    drawn_n, judged_n = {}, {}
    for p in groups:
        drawn_n[groups[p]] = drawn_n.get(groups[p], 0) + 1
    for p in judged:
        judged_n[groups[p]] = judged_n.get(groups[p], 0) + 1
    both = [p for p in judged if model.get(p) in ("same", "different")]
    w = {p: drawn_n[groups[p]] / judged_n[groups[p]] for p in both}
    share = sum(w[p] for p in both if model[p] != people[p]) / sum(w.values())
    raw = sum(model[p] != people[p] for p in both)
    assert ppi["disagreement_share"] == pytest.approx(share, rel=1e-12)
    assert (ppi["both_judged"], ppi["disagreements"]) == (len(both), raw)
    assert abs(share - raw / len(both)) > 1e-9  # the weighting matters here
    t = text(d)
    first = f"Model and people disagree on an estimated {share:.1%} of the drawn pairs"
    second = f"raw: {raw} of the {len(both)} pairs both judged"
    assert first in t and second in t and t.index(first) < t.index(second)


# ------------------------------------------------------------------------------------- the worth
def test_why_the_worth_is_not_told_when_the_peoples_judgements_do_not_vary(drawn, tmp_path):
    from abcde.samples.store import JudgementStore

    d = fresh_copy(drawn, tmp_path)
    cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree")
    store = JudgementStore(d)
    for p in people_tasks(d):
        store.record(p, "same", rater="ann")  # every people's judgement the same answer
    q = quality(d)
    ppi = q["design"]["ppi"]
    assert ppi["worth_people_judgements"] is None and ppi["std_err"] < 1e-12  # 0, or a rounding residue of it
    assert "do not vary" in ppi["worth_note"]
    t = text(d)
    assert "What the model's answers were worth in people's judgements cannot be told yet: the people's judgements " \
           "do not vary" in t
    assert ("what the model's were worth cannot be told yet: the people's judgements do not vary"
            in " ".join(q["verdict_facts"]["sentences"]))


# ---------------------------------------------------------------------------- the people's tasks
def test_tasks_not_as_many_as_asked_say_why():
    """Chosen by the model's answers, each cell's people's draws are a fixed number of its draws: a pair
    drawn twice is one task, so the tasks come out near the number asked. The plan says why."""
    from abcde.samples.people_tasks import BY_ANSWERS, plan_by_answers, tasks_note

    units = {f"p{k}": ("split" if k % 3 else "merge") for k in range(300)}
    answers = {p: ("same" if k % 4 else "different") for k, p in enumerate(units)}
    counts = {p: 1 + (k % 5 == 0) * 3 for k, p in enumerate(units)}  # every fifth pair drawn 4 times
    found = 0
    for seed in range(20):
        plan = plan_by_answers(units, answers, seed, 60, draw_counts=counts)
        assert plan["design"] == BY_ANSWERS
        note = tasks_note(plan)
        if plan["tasks"] == 60:
            assert note == ""
        else:
            found += 1
            assert note.startswith(f"{plan['tasks']} people's tasks, not exactly the 60 asked")
            assert "a pair drawn more than once is one task" in note
    assert found  # the case happens
    # every pair a task, fewer than asked
    plan = {"asked": 50, "tasks": 30, "budgets": {"split": 20, "merge": 10}, "pairs": {"split": 20, "merge": 10}}
    assert "hold only 30 pairs, and every one is a task" in tasks_note(plan)


def test_judge_model_and_quality_say_why_the_tasks_are_not_as_many_as_asked(tmp_path):
    from abcde.samples.people_tasks import tasks_note
    from abcde.samples.sample_dir import PairSampleDir

    d = draw(tmp_path / "pairs", 2000, 200, seed=1)
    said = " ".join(cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree").output.split())
    plan = PairSampleDir.read(d).metadata["people"]
    note = tasks_note(plan)
    assert plan["asked"] == 200 and (plan["tasks"] != 200) == bool(note)
    assert f"people's tasks: {plan['tasks']} pairs, chosen by the model's answers" in said
    assert note in said  # "" when exactly as asked
    # judge model --json says it too (a second run: unchanged answers, the same plan)
    pt = json.loads(cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree", "--json")
                    .output)["people_tasks"]
    assert (pt["asked"], pt["tasks"], pt["note"]) == (200, plan["tasks"], note)
    cli("judge", "oracle", d, "--oracle-column", "entity_id")
    ppi = quality(d)["design"]["ppi"]
    assert ppi["people_tasks_asked"] == 200 and ppi["people_tasks"] == plan["tasks"]
    assert ppi.get("people_tasks_note", "") == note
    if note:
        assert f"{plan['tasks']} people's tasks, not exactly the 200 asked" in text(d)


# ----------------------------------------------------------------------------- --source person
@pytest.mark.parametrize("source", ("oracle", "person"))
def test_people_alone_print_no_prediction_powered_line(drawn, tmp_path, source):
    from abcde.samples.store import JudgementStore

    d = fresh_copy(drawn, tmp_path)
    cli("judge", "model", d, "--callable", "abcde.examples.judges:fields_agree")
    if source == "oracle":
        cli("judge", "oracle", d, "--oracle-column", "entity_id")
    else:
        store = JudgementStore(d)
        for k, p in enumerate(sorted(people_tasks(d))):
            store.record(p, "same" if k % 3 else "different", rater="ann")
    q = quality(d, "--source", source)
    assert q["design"]["ppi"]["people_only"] == source
    assert not any("Prediction-powered" in x or "model answers" in x or "model's" in x
                   for x in q["verdict_facts"]["sentences"])
    t = text(d, "--source", source)
    assert "Prediction-powered" not in t and "worth about" not in t and "Model and people disagree" not in t
    assert f"People's judgements alone (--source {source})" in t
    assert "Prediction-powered" in text(d)  # every source: the model's are used


# ------------------------------------------------------------------- s.e. 0 beside an interval
def test_a_zero_standard_error_beside_an_interval_says_why(tmp_path):
    from abcde.quality import estimate_quality
    from abcde.report.render import _quality_view
    from abcde.report import build_report
    import abcde

    d = tmp_path / "pairs"
    cli("pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--weight-column", "weight",
        "--budget", 120, "--seed", 1, "--hide", "entity_id", "--out", d)
    cli("judge", "oracle", d, "--oracle-column", "entity_id")
    q = quality(d)
    zero = [k for k in ("good_split_rate", "bad_split_rate") if q[k]["std_err"] == 0]
    assert zero and all(q[k]["ci_high"] > q[k]["ci_low"] for k in zero)  # the example's splits are all bad
    out = cli("quality", d).output  # the note column of the quality table (wrapped in its cell)
    rows = [line for line in out.splitlines() if line.startswith("│")]
    for k, label in (("good_split_rate", "GoodSplitRate"), ("bad_split_rate", "BadSplitRate")):
        row = next(i for i, line in enumerate(rows) if f"│ {label} " in line)
        cell = " ".join(line.rsplit("│", 2)[1].strip() for line in rows[row:row + 3])
        assert (k in zero) == cell.startswith("s.e. 0: the judgements all agree (per stratum); Agresti–Coull's"), cell
    # the report's quality table says the same beside the row
    res = abcde.impact(P["base"], P["exp"], items=P["items"], weight="weight")
    data = build_report(res, quality=estimate_quality(d), judged_by="oracle").to_dict()
    rows = {r["key"]: r for r in _quality_view(data["quality"])["rows"]}
    for k in zero:
        assert "s.e. 0" in rows[k]["note"] and "Agresti–Coull" in rows[k]["note"]
    assert all("s.e. 0" not in r["note"] for k, r in rows.items() if q[k]["std_err"] != 0)
