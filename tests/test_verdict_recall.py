"""The verdict reads both sides (issue 38, section 2): precision and the recall lift, in one headline
that says which way Exp moved on each, "yet" only where more judging of the sample can change the
answer, the next step aimed at the side still undetermined, and a model's judgements named as such."""

from __future__ import annotations

import copy
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abcde.quality.verdict import verdict

# ``QualityResult.to_dict()`` of the bundled example's sample (budget 300, seed 3, judged by an oracle),
# numbers rounded, without the verdict, the distances and the draws: each test changes what it is about.
REAL = {
    "delta_precision": {"estimate": -0.002644, "std_err": 0.0013, "ci_low": -0.006777, "ci_high": 0.001585,
                        "n_judgements": 307, "method": "stratified (proportional)", "range": [-0.085258, 0.120152]},
    "good_split_rate": {"estimate": 0.0, "std_err": 0.0, "ci_low": 0.0, "ci_high": 0.003054, "n_judgements": 164,
                        "method": "stratified (proportional)", "range": [0.0, 0.107418]},
    "bad_split_rate": {"estimate": 0.107418, "std_err": 0.0, "ci_low": 0.104364, "ci_high": 0.107418,
                       "n_judgements": 164, "method": "stratified (proportional)", "range": [0.0, 0.107418]},
    "good_merge_rate": {"estimate": 0.058163, "std_err": 0.0013, "ci_low": 0.054023, "ci_high": 0.059991,
                        "n_judgements": 92, "method": "stratified (proportional)", "range": [0.0, 0.060807]},
    "bad_merge_rate": {"estimate": 0.002644, "std_err": 0.0013, "ci_low": 0.000816, "ci_high": 0.006785,
                       "n_judgements": 92, "method": "stratified (proportional)", "range": [0.0, 0.060807]},
    "split_rate": 0.107418, "merge_rate": 0.060807,
    "judged_pairs": 300, "unsure_pairs": 0, "missing_pairs": 0, "rater_disagreements": 0, "rater_ties": 0,
    "estimator": "stratified", "allocation": "proportional",
    "strata": ["split", "merge", "intersection+", "intersection-", "agreed"], "census": [], "exact": False,
    "design": {"sample_dir": "pairs/", "budget": 300,
               "pair_counts": {"split": 1145, "merge": 642, "intersection+": 1013, "intersection-": 554,
                               "agreed": 4456},
               "judgements_used": {"by_source": {"oracle": 300}, "total": 300, "raters": 1, "source": None,
                                   "left_out": {}}},
    "recall_lift": {"available": True, "estimate": -0.094833, "std_err": 0.0033, "ci_low": -0.107321,
                    "ci_high": -0.08217, "n_judgements": 273,
                    "method": "stratified; split and merge draws reweighted by their cluster's weight, agreed "
                              "pairs ∝ w_i·w_j", "range": [-1.0, None], "exact": False},
}

# ΔPrecision and the recall lift by direction: (estimate, ci_low, ci_high, std_err).
DP = {"up": (0.01, 0.004, 0.016, 0.003), "down": (-0.0058, -0.0103, -0.0012, 0.0018),
      "none": (-0.0019, -0.0058, 0.0019, 0.002)}
RL = {"up": (0.042, 0.01, 0.075, 0.016), "down": (-0.095, -0.107, -0.082, 0.0033),
      "none": (-0.004, -0.02, 0.012, 0.008)}


def quality(p="none", r="none", *, missing=0, exact=False, r_exact=None, **changes):
    """The real dict with ΔPrecision and the recall lift of the given directions (or values)."""
    q = copy.deepcopy(REAL)
    e, lo, hi, se = DP[p] if isinstance(p, str) else p
    q["delta_precision"].update(estimate=e, ci_low=lo, ci_high=hi, std_err=se)
    if r is not None:
        e, lo, hi, se = RL[r] if isinstance(r, str) else r
        q["recall_lift"].update(estimate=e, ci_low=lo, ci_high=hi, std_err=se,
                                exact=exact if r_exact is None else r_exact)
    q["missing_pairs"], q["exact"] = missing, exact
    q["judged_pairs"] = 300 - missing
    q.update(changes)
    return q


def unavailable(note="this sample was drawn before abcde drew agreed pairs (together in both clusterings), "
                     "which the recall lift needs; add them, every judgement kept",
                command="abcde pairs --extend pairs/ --budget 330"):
    d = {"available": False, "estimate": None, "std_err": None, "ci_low": None, "ci_high": None, "n_judgements": 0,
         "exact": False, "note": note}
    if command:
        d["command"] = command
    return d


def check(v):
    """What every verdict keeps: the headline first, the facts carrying the words."""
    assert v.sentences[0] == v.headline and v.text.startswith(v.headline)
    assert v.facts["sentences"] == list(v.sentences) and v.to_dict()["verdict"] == v.text
    return v


# ----------------------------------------------------------------------------- the headline's kinds
HEADLINES = [
    # (precision, recall, overall, the headline)
    ("none", "up", "better",
     "Exp is better than Base: recall up (recall lift +4.200%, 95% interval 1.000% to 7.500%) and no detectable "
     "change in Precision (ΔPrecision -0.0019, 95% interval -0.0058 to 0.0019)."),
    ("up", "none", "better",
     "Exp is better than Base: Precision up by 0.0100 (95% interval 0.0040 to 0.0160) and no detectable change in "
     "recall (recall lift -0.400%, 95% interval -2.000% to 1.200%)."),
    ("up", "up", "better",
     "Exp is better than Base: Precision up by 0.0100 (95% interval 0.0040 to 0.0160) and recall up (recall lift "
     "+4.200%, 95% interval 1.000% to 7.500%)."),
    ("none", "down", "worse",
     "Exp is worse than Base: recall down (recall lift -9.500%, 95% interval -10.700% to -8.200%) and no "
     "detectable change in Precision (ΔPrecision -0.0019, 95% interval -0.0058 to 0.0019)."),
    ("down", "none", "worse",
     "Exp is worse than Base: Precision down by 0.0058 (95% interval -0.0103 to -0.0012) and no detectable change "
     "in recall (recall lift -0.400%, 95% interval -2.000% to 1.200%)."),
    ("down", "down", "worse",
     "Exp is worse than Base: Precision down by 0.0058 (95% interval -0.0103 to -0.0012) and recall down (recall "
     "lift -9.500%, 95% interval -10.700% to -8.200%)."),
    ("down", "up", "precision_for_recall",
     "Exp trades precision for recall: Precision down by 0.0058 (95% interval -0.0103 to -0.0012) and recall up "
     "(recall lift +4.200%, 95% interval 1.000% to 7.500%)."),
    ("up", "down", "recall_for_precision",
     "Exp trades recall for precision: recall down (recall lift -9.500%, 95% interval -10.700% to -8.200%) and "
     "Precision up by 0.0100 (95% interval 0.0040 to 0.0160)."),
    ("none", "none", "none",
     "No detectable change in Precision or recall at 95%: ΔPrecision -0.0019 (95% interval -0.0058 to 0.0019) and "
     "recall lift -0.400% (95% interval -2.000% to 1.200%), so Exp is not distinguishable from Base with this sample "
     "(every pair of it is judged; a larger sample could tell)."),
]


@pytest.mark.parametrize("p,r,overall,headline", HEADLINES, ids=[f"{h[0]}-{h[1]}" for h in HEADLINES])
def test_the_headline_names_both_sides_and_which_way_each_moved(p, r, overall, headline):
    v = check(verdict(quality(p, r)))
    assert v.headline == headline
    assert (v.facts["precision"]["direction"], v.facts["recall"]["direction"], v.facts["overall"]) == (p, r, overall)
    rec = v.facts["recall"]
    assert rec["metric"] == "recall_lift" and rec["exact"] is False
    assert (rec["estimate"], rec["ci_low"], rec["ci_high"]) == RL[r][:3]
    assert "Recall is not known" not in v.text


def test_what_the_recall_lift_means_is_said_once_in_words():
    down = check(verdict(quality("none", "down")))
    assert ("Exp keeps about 9.500% fewer true links (pairs of one entity, weighted) than Base; the recall lift is "
            "the ratio of the two pairwise recalls, minus 1.") in down.sentences
    none = check(verdict(quality("none", "none")))
    assert "Exp keeps between 2.000% fewer and 1.200% more true links" in none.sentences[1]
    assert "about" not in none.sentences[1]


def test_the_bundled_example_says_exp_loses_recall():
    """The real dict (the demo's sample with its agreed stratum): recall fell, precision did not move
    detectably, so Exp is worse: the box no longer says "not distinguishable"."""
    v = check(verdict(copy.deepcopy(REAL)))
    assert v.facts["recall"]["direction"] == "down" and v.facts["precision"]["direction"] == "none"
    assert v.facts["overall"] == "worse"
    assert v.headline.startswith("Exp is worse than Base: recall down (recall lift -9.483%, 95% interval "
                                 "-10.732% to -8.217%)")
    assert "not distinguishable" not in v.text


# ----------------------------------------------------------------------------- recall not known
def test_recall_unavailable_says_why_and_the_command_that_adds_it():
    q = quality("down", None, recall_lift=unavailable())
    v = check(verdict(q))
    assert v.headline == ("Exp is less precise than Base: Precision went down by 0.0058 "
                          "(95% interval -0.0103 to -0.0012).")
    rec = v.facts["recall"]
    assert rec["direction"] == "undefined" and rec["available"] is False and rec["estimate"] is None
    assert rec["command"] == "abcde pairs --extend pairs/ --budget 330"
    assert v.sentences[1].startswith("Recall is not known yet: this sample was drawn before abcde drew agreed pairs")
    # Precision is settled: the next step is the command that adds recall, said once.
    assert v.facts["next_step"]["side"] == "recall"
    assert v.facts["next_step"]["command"] == "abcde pairs --extend pairs/ --budget 330"
    assert v.sentences[-1] == ("Next: to estimate recall, add the pairs it needs: abcde pairs --extend pairs/ "
                               "--budget 330, then judge the new pairs.")
    assert v.text.count("--budget 330") == 1 and v.facts["overall"] == "unknown"


def test_recall_unavailable_while_precision_is_undetermined():
    v = check(verdict(quality("none", None, recall_lift=unavailable())))
    assert v.headline.startswith("No detectable change in Precision at 95%: ΔPrecision -0.0019")
    assert v.headline.endswith("so Exp is not distinguishable from Base in Precision with this sample (every pair "
                               "of it is judged; a larger sample could tell).")
    assert ("To add it: abcde pairs --extend pairs/ --budget 330, then judge the new pairs.") in v.sentences[1]
    assert v.facts["next_step"]["side"] == "precision"
    assert "to tell a Precision change of ±0.0019 from none" in v.sentences[-1]


def test_recall_unavailable_without_a_command_and_recall_without_usable_judgements_yet():
    v = check(verdict(quality("up", None, recall_lift=unavailable(note="the paper's design draws no agreed pairs",
                                                                   command=None))))
    assert v.sentences[1] == "Recall is not known yet: the paper's design draws no agreed pairs."
    assert v.facts["next_step"] is None and "command" not in v.facts["recall"]
    # Available, but the agreed stratum has no usable judgement yet and pairs are still to judge.
    q = quality("none", None, missing=40)
    q["recall_lift"].update(estimate=None, ci_low=None, ci_high=None, std_err=None,
                            note="no usable judgement yet in the agreed stratum")
    v = check(verdict(q))
    assert v.facts["recall"]["direction"] == "undefined" and v.facts["recall"]["available"] is True
    assert "Recall is not known yet: no usable judgement yet in the agreed stratum." in v.sentences
    assert v.sentences[-1] == ("Next: 40 pairs of the sample are not judged yet (abcde judge serve pairs/); the answer "
                               "can change until they are.")


def test_a_result_without_any_recall_lift_and_one_clusterings_precision():
    q = quality("down", None)
    del q["recall_lift"]
    v = check(verdict(q))
    assert v.facts["recall"]["direction"] == "undefined" and "Recall is not known yet" in v.sentences[1]
    # One clustering's Precision: no recall side at all, today's wording.
    q = quality("down", None, target="precision",
                precision={"estimate": 0.96, "std_err": 0.01, "ci_low": 0.94, "ci_high": 0.98, "n_judgements": 300},
                recall_lift=unavailable(note="one clustering's Precision has no recall side", command=None))
    v = check(verdict(q))
    assert v.headline == "Exp's Precision is 0.9600 (95% interval 0.9400 to 0.9800)."
    assert v.facts["recall"]["direction"] == "undefined" and "recall" not in v.text.lower()


# ----------------------------------------------------------------------------- exact, and "yet"
def test_recall_exact_is_said_exactly():
    q = quality("up", (-0.095, -0.095, -0.095, 0.0), r_exact=True)
    v = check(verdict(q))
    assert v.facts["recall"] == {**v.facts["recall"], "exact": True, "direction": "down"}
    assert v.headline == ("Exp trades recall for precision: recall down (recall lift exactly -9.500%) and "
                          "Precision up by 0.0100 (95% interval 0.0040 to 0.0160).")
    assert "Exp keeps exactly 9.500% fewer true links" in v.sentences[1]
    # An exact lift of 0 with a census: exactly as precise, exactly as many links, no next step.
    v = check(verdict(quality((0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0), exact=True, census=["split", "merge"])))
    assert v.headline == ("Exp and Base are exactly as precise and keep exactly as many true links "
                          "(every pair judged).")
    assert v.facts["overall"] == "none" and v.facts["next_step"] is None and "yet" not in v.text


def test_a_census_says_exactly_and_never_yet():
    v = check(verdict(quality((-0.002, -0.002, -0.002, 0.0), (0.03, 0.03, 0.03, 0.0), exact=True)))
    assert v.headline == ("Exp trades precision for recall (every pair judged): Precision down by exactly 0.0020 "
                          "and recall up (recall lift exactly +3.000%).")
    assert "95% interval" not in v.headline and "yet" not in v.text and v.facts["next_step"] is None


@pytest.mark.parametrize("missing", [0, 25])
def test_yet_only_while_pairs_of_the_sample_are_not_judged(missing):
    v = check(verdict(quality("none", "none", missing=missing)))
    if missing:
        assert v.headline.endswith("so Exp is not distinguishable from Base yet.")
        assert v.facts["next_step"]["kind"] == "judge" and "25 pairs of the sample are not judged yet" in v.text
    else:  # every pair judged: what remains is a larger sample, not more judging of this one
        assert " yet" not in v.headline
        assert "with this sample (every pair of it is judged; a larger sample could tell)" in v.headline
        assert v.facts["next_step"]["kind"] == "extend" and "abcde pairs --extend pairs/ --budget" in v.text


# ----------------------------------------------------------------------------- a model's judgements alone
def test_judged_by_a_model_only_is_said_first():
    q = quality("down", "none")
    q["design"]["judgements_used"] = {"by_source": {"model": 300}, "total": 300, "raters": 1, "source": "model",
                                      "left_out": {"person": 120}}
    v = check(verdict(q))
    assert v.headline.startswith("Judged by a model only, not people (--source model left out 120 person "
                                 "judgements). Exp is worse than Base: Precision down by 0.0058")
    assert v.facts["model_only"] is True
    # A sample only a model judged (nothing left out), and model + people or an oracle: not a model alone.
    q["design"]["judgements_used"] = {"by_source": {"model": 300}, "source": None, "left_out": {}}
    assert verdict(q).headline.startswith("Judged by a model only, not people. Exp is worse than Base:")
    for by in ({"model": 300, "person": 40}, {"oracle": 300}, {"person": 300, "model": 0}):
        q["design"]["judgements_used"] = {"by_source": by, "source": None, "left_out": {}}
        v = verdict(q)
        assert v.headline.startswith("Exp is worse than Base") and v.facts["model_only"] is False


# ----------------------------------------------------------------------------- the next step
def test_the_next_step_names_the_recall_side_with_the_finite_population_correction():
    v = check(verdict(quality("up", "none")))
    step = v.facts["next_step"]
    n, N, judged, budget = 273, 1145 + 642 + 4456, 300, 300  # the lift's judgements; split, merge, agreed pairs
    h, target = (0.012 - -0.02) / 2, 0.005  # |estimate| 0.004 is below half a percent
    need = min(math.ceil(1 / ((1 / n - 1 / N) * (target / h) ** 2 + 1 / N)), N)
    more = math.ceil((need - n) * judged / n)  # the budget grows every stratum, not only recall's
    assert step["side"] == "recall" and step["target_half_width"] == target
    assert step["pairs_needed"] == need and step["more_recall_pairs"] == need - n and step["more_pairs"] == more
    assert step["command"] == f"abcde pairs --extend pairs/ --budget {budget + more}"
    assert v.sentences[-1] == (f"Next: to tell a recall change of ±0.500% from none, about {more:,} more judged "
                               f"pairs: abcde pairs --extend pairs/ --budget {budget + more}, then judge the new "
                               "pairs.")
    # A census of split and merge leaves only the agreed pairs to draw from.
    v = verdict(quality("up", "none", census=["split", "merge"]))
    N = 4456
    assert v.facts["next_step"]["population"] == N
    assert v.facts["next_step"]["pairs_needed"] == min(math.ceil(1 / ((1 / n - 1 / N) * (target / h) ** 2 + 1 / N)), N)


def test_a_large_recall_change_aims_at_its_own_size():
    v = verdict(quality("down", (0.03, -0.01, 0.07, 0.02)))
    assert v.facts["next_step"]["target_half_width"] == pytest.approx(0.03)
    assert "to tell a recall change of ±3.000% from none" in v.text


def test_both_sides_undetermined_aim_at_the_cheaper_and_name_the_other():
    # Recall's interval is wide and its change tiny: precision needs fewer pairs.
    v = check(verdict(quality("none", (0.001, -0.04, 0.04, 0.02))))
    step = v.facts["next_step"]
    assert step["side"] == "precision" and step["other"]["side"] == "recall"
    assert step["more_pairs"] < step["other"]["more_pairs"]
    assert "to tell a Precision change of ±0.0019 from none" in v.sentences[-1]
    assert f"(recall would need about {step['other']['more_pairs']:,} more judged pairs to tell ±0.500%)" \
        in v.sentences[-1]
    # Precision's change tiny and recall's interval nearly there: recall first.
    v = check(verdict(quality((0.00001, -0.004, 0.004, 0.002), (0.01, -0.001, 0.021, 0.005))))
    step = v.facts["next_step"]
    assert step["side"] == "recall" and step["other"]["side"] == "precision"
    assert step["more_pairs"] < step["other"]["more_pairs"]
    assert v.sentences[-1].startswith("Next: to tell a recall change of ±1.000% from none")
    assert "(Precision would need about" in v.sentences[-1]


def test_no_next_step_when_both_sides_are_determined():
    for p, r in (("up", "up"), ("down", "up"), ("down", "down")):
        v = verdict(quality(p, r))
        assert v.facts["next_step"] is None and "Next:" not in v.text


# ----------------------------------------------------------------------------- slices
def test_a_slice_that_keeps_significantly_fewer_links_is_named_with_holm_across_both_sides():
    def row(value, dp, rl):
        return {"value": value, "delta_precision": dict(zip(("estimate", "ci_low", "ci_high", "std_err"), dp),
                                                        n_judgements=300),
                "recall_lift": dict(zip(("estimate", "ci_low", "ci_high", "std_err"), rl), n_judgements=300)}
    flat = (0.001, -0.003, 0.005, 0.002)
    q = quality("none", "down", slices={"source": [row("web", flat, (-0.2, -0.26, -0.14, 0.03)),
                                                   row("wiki", flat, (-0.01, -0.05, 0.03, 0.02))]})
    v = check(verdict(q))
    assert v.facts["slices"]["family"] == 4
    rows = {(x["metric"], x["value"]): x for x in v.facts["slices"]["rows"]}
    assert rows[("recall_lift", "web")]["significant"] and not rows[("recall_lift", "wiki")]["significant"]
    assert not rows[("delta_precision", "web")]["significant"]
    assert ("In the slice source = web, Exp keeps significantly fewer true links: recall lift -20.000% (95% interval "
            "-26.000% to -14.000%; Holm's method across 4 tests (Precision and recall of 2 slices), 5% "
            "family-wise).") in v.sentences


# ----------------------------------------------------------------------------- the words agree with the facts
CLAUSE = {"better": "Exp is better than Base: ", "worse": "Exp is worse than Base: ",
          "precision_for_recall": "Exp trades precision for recall: ",
          "recall_for_precision": "Exp trades recall for precision: ",
          "none": "No detectable change in Precision or recall at 95%: "}


def expected_overall(p, r):
    if (p == "up" and r != "down") or (r == "up" and p != "down"):
        return "better"
    if (p == "down" and r != "up") or (r == "down" and p != "up"):
        return "worse"
    return {("down", "up"): "precision_for_recall", ("up", "down"): "recall_for_precision"}.get((p, r), "none")


def side(direction, size, width, lo_frac):
    """(estimate, ci_low, ci_high, std_err) of the given direction."""
    if direction == "up":
        return (size, size * lo_frac, size + width, width / 4)
    if direction == "down":
        return (-size, -size - width, -size * lo_frac, width / 4)
    return (size * (lo_frac - 0.5), -width, width, width / 2)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=st.sampled_from(["up", "down", "none"]), r=st.sampled_from(["up", "down", "none", "unavailable"]),
       p_size=st.floats(0.0002, 0.2), r_size=st.floats(0.0005, 0.5), p_w=st.floats(0.0001, 0.05),
       r_w=st.floats(0.0005, 0.3), frac=st.floats(0.05, 0.95), missing=st.sampled_from([0, 7]),
       model=st.booleans())
def test_the_words_agree_with_the_facts(p, r, p_size, r_size, p_w, r_w, frac, missing, model):
    q = quality(side(p, p_size, p_w, frac), None if r == "unavailable" else side(r, r_size, r_w, frac),
                missing=missing)
    if r == "unavailable":
        q["recall_lift"] = unavailable()
    if model:
        q["design"]["judgements_used"] = {"by_source": {"model": 300}, "source": None, "left_out": {}}
    v = check(verdict(q))
    f = v.facts
    assert f["precision"]["direction"] == p and f["model_only"] is model
    head = v.headline
    if model:
        assert head.startswith("Judged by a model only, not people. ")
        head = head[len("Judged by a model only, not people. "):]
    # partial until final: "so far" leads while pairs of the sample are not judged (issue 52)
    so_far = re.match(r"So far \(\d+ of \d+ pairs judged\): ", head)
    assert bool(so_far) == (missing > 0) and f["final"] == (missing == 0)
    head = head[so_far.end():] if so_far else head
    assert not re.search(r"\bmodel\b", head)
    if r == "unavailable":
        assert f["recall"]["direction"] == "undefined" and f["overall"] == "unknown"
        assert "recall" not in head.lower() and any(s.startswith("Recall is not known yet: ") for s in v.sentences)
        assert head.startswith({"up": "Exp is more precise than Base", "down": "Exp is less precise than Base",
                                "none": "No detectable change in Precision at 95%"}[p])
        return
    assert f["recall"]["direction"] == r and f["overall"] == expected_overall(p, r)
    assert head.startswith(CLAUSE[f["overall"]])
    for word, d in (("Precision", p), ("recall", r)):
        up, down = f"{word} up" in head, f"{word} down" in head
        assert (up, down) == (d == "up", d == "down"), (word, d, head)
        if d == "none" and f["overall"] != "none":
            assert f"no detectable change in {word}" in head
    # "yet" in the headline only while pairs of the sample are still to judge and a side is open
    assert (" yet" in head) == (f["overall"] == "none" and missing > 0)
    # the next step aims at an open side, and names it
    step = f["next_step"]
    open_sides = {s for s, d in (("precision", p), ("recall", r)) if d == "none"}
    if missing:  # the pairs not judged yet come first, whatever the sides say
        assert step["kind"] == "judge" and step["missing_pairs"] == missing
    elif not open_sides:
        assert step is None
    elif step is not None:
        assert step["side"] in open_sides
        name = "a Precision" if step["side"] == "precision" else "a recall"
        assert f"Next: to tell {name} change of ±" in v.sentences[-1]


def test_model_and_people_recall_step_asks_for_peoples_judgements():
    """The lift of a model + people design rests on the people's judgements: its next step asks for more
    of them (``--human-budget``), and for more pairs once they would exceed the drawn ones."""
    q = quality("up", "none")
    q["recall_lift"]["n_judgements"] = 45
    q["design"]["ppi"] = {"people_judgements": 50, "pairs": 300, "model_judgements": 300,
                          "worth_people_judgements": 80}
    q["design"]["judgements_used"] = {"by_source": {"model": 300, "person": 50}, "source": None, "left_out": {}}
    v = check(verdict(q))
    step = v.facts["next_step"]
    n, N, h, target = 45, 1145 + 642 + 4456, (0.012 - -0.02) / 2, 0.005
    need = min(math.ceil(1 / ((1 / n - 1 / N) * (target / h) ** 2 + 1 / N)), N)
    more = math.ceil((need - n) * 50 / n)
    human = 50 + more
    assert step["side"] == "recall" and step["people"] and step["more_pairs"] == more
    assert step["human_budget"] == human and human >= 300
    assert step["command"] == (f"abcde pairs --extend pairs/ --budget {math.ceil(300 * human / 50)} "
                               f"--human-budget {human}")
    assert v.sentences[-1].startswith(f"Next: to tell a recall change of ±0.500% from none, about {more:,} more "
                                      "people's judgements: abcde pairs --extend pairs/ --budget")
    assert v.facts["model_only"] is False and not v.headline.startswith("Judged by a model")
