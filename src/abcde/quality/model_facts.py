"""What a model's judgements added to a prediction-powered estimate (``design["ppi"]`` of
:mod:`abcde.quality.combined`): the model's answers counted and which the estimate used, its
disagreement with people weighted back to the drawn pairs, what it was worth in people's judgements,
and the warning when it disagrees too often to add much."""

from __future__ import annotations

import math
from collections import Counter

from abcde.quality.ppi import DISAGREEMENT_WARNING, Part, agreement
from abcde.samples.people_tasks import BY_ANSWERS

ANSWERS = ("same", "different")
#: A variance below this is a rounding residue of 0 (a standard error under 1e-12): the judgements do not vary.
NO_VARIANCE = 1e-24


def worth_note(dp: Part, remaining: int) -> tuple[str, str]:
    """Why what the model's judgements were worth cannot be told (``worth_people_judgements`` None), and
    what would tell: ``remaining`` of the people's pairs are not judged by them yet."""
    more = (f"judging the {remaining:,} people's pairs not judged yet" if remaining else
            "people's judgements of more pairs (abcde pairs DIR --extend with a larger --human-budget)")
    if not math.isfinite(dp.var):
        return ("ΔPrecision's standard error is not defined yet (a stratum has fewer than two people's judgements), "
                "so there is nothing to compare the model with", f"{more} can tell")
    if dp.var <= NO_VARIANCE:
        return ("the people's judgements do not vary (within each stratum, or each cell of the model's answers, "
                "every one gave the same answer): ΔPrecision's standard error is 0 with the model's judgements and "
                "without them, so there is nothing to compare",
                f"{more} can tell only if some answer differently; where every pair truly has one answer (every "
                "split good, say), nothing will, and the model's answers cannot add anything there")
    return ("the people-only standard error is not defined (too few people's judgements in a cell), so there is "
            "nothing to compare the model with", f"{more} can tell")


def model_counts(model: dict, stored: dict, pair_ids, cells: dict | None) -> dict:
    """The model's judgements of the sample's pairs as stored (every answer, ``unsure`` included), and
    how many of them the estimate uses: a "same" or "different" answer (``cells``: the answers the
    people's tasks were chosen by), with why the others are not used."""
    said = list(map(stored.get, pair_ids))
    given = Counter(said)  # one pass, not one per answer
    answers = {a: given.get(a, 0) for a in (*ANSWERS, "unsure")}
    judged = sum(answers.values())
    used = (answers["same"] + answers["different"] if model is stored
            else sum(1 for a in map(model.get, pair_ids) if a in ANSWERS))
    # An answer is an answer whether or not the estimate uses it (issue 52): "unanswered" counts the
    # pairs the model gave no same/different answer, "unused" its answers the estimate does not use.
    out = {"model_judgements": judged, "model_answers": answers, "model_used": used,
           "model_unanswered": len(pair_ids) - answers["same"] - answers["different"],
           "model_unused": answers["same"] + answers["different"] - used}
    why = []
    if cells is None:
        if answers["unsure"]:
            why.append(f"its {answers['unsure']:,} unsure answers")
        if len(pair_ids) - judged:
            why.append(f"the {len(pair_ids) - judged:,} pairs it has not judged")
        if why:
            out["model_note"] = (" and ".join(why) + " count as ½ \"same\", a fixed value that keeps the estimate "
                                 "unbiased and adds nothing")
        return out
    # by the model's answers: the answers the tasks were chosen by, kept in the sample
    unsplit = later = 0
    for p, a in zip(pair_ids, said):
        if a in ANSWERS:
            if "|" not in str(cells.get(p, "")):
                unsplit += 1
            elif model.get(p) not in ANSWERS:
                later += 1
    if answers["unsure"]:
        why.append(f"{answers['unsure']:,} unsure")
    if unsplit:
        why.append(f"{unsplit:,} in strata its answers did not split: one answer only, or too few people's tasks "
                   "to give each answer two")
    if later:
        why.append(f"{later:,} answered after the people's tasks were chosen (or drawn since)")
    if len(pair_ids) - judged:
        why.append(f"{len(pair_ids) - judged:,} not judged")
    if why and not used:
        out["model_note"] = ("the estimate uses none of the model's answers (" + "; ".join(why) + "): no stratum is "
                             "split by them, so the estimate is the people's judgements alone")
    elif why:
        out["model_note"] = (f"the estimate uses the {used:,} answers the people's tasks were chosen by, as cells; the "
                             "model's other pairs (" + "; ".join(why) + ") are in their stratum's cell \"none\" (a "
                             "stratum its answers did not split is one cell)")
    return out


def weighted_disagreement(people: dict, model: dict, labeled_pairs: set, groups: dict | None,
                           pair_ids) -> float | None:
    """The share of the drawn pairs where model and people disagree, estimated from the pairs both
    judged, each weighted by its group's (cell's or stratum's) drawn pairs per people's pair (the
    people's pairs are a random subset of each group, in shares other than the group's); None when
    no pair is judged by both."""
    if not groups:
        both, dis = agreement({p: people[p] for p in labeled_pairs if p in people}, model, labeled_pairs)
        return dis / both if both else None
    drawn = Counter(map(groups.get, pair_ids))
    judged = Counter(map(groups.get, labeled_pairs))
    w = {g: drawn.get(g, 0) / n for g, n in judged.items() if n}
    num = den = 0.0
    for p in labeled_pairs:
        a, b = people.get(p), model.get(p)
        if a in ANSWERS and b in ANSWERS:
            den += w.get(groups.get(p), 0.0)
            num += w.get(groups.get(p), 0.0) * (a != b)
    return num / den if den else None


def ppi_facts(dp: Part, people: dict, model: dict, pair_ids, tasks, labeled_pairs: set, cells: dict | None = None,
           *, units: dict | None = None, stored: dict | None = None) -> dict:
    """What the model added, for ``design["ppi"]``. ``units``: each pair's stratum (class), which the
    disagreement is weighted back by when the tasks were not chosen by cell; ``stored``: the model's
    judgements as stored (default ``model``), which the counts are of."""
    # Model against people wherever both judged: every answer the model gave, used by the estimate or not
    # (a model answering "different" to every pair is used in no cell, and disagrees with the people still).
    said = model if stored is None else stored
    both, dis = agreement({p: people[p] for p in labeled_pairs if p in people}, said, labeled_pairs)
    n = len(labeled_pairs)
    worth = (n * (dp.var_people / dp.var - 1.0) if math.isfinite(dp.var) and dp.var > NO_VARIANCE
             and math.isfinite(dp.var_people) else None)
    facts = {
        "lambdas": {k: round(v, 6) for k, v in dp.lambdas.items()},
        **model_counts(model, model if stored is None else stored, pair_ids, cells),
        "people_judgements": n,
        "people_tasks": None if tasks is None else len(tasks),
        "pairs": len(pair_ids),
        "worth_people_judgements": None if worth is None else max(worth, 0.0),
        "both_judged": both,
        "disagreements": dis,
        # weighted back to the drawn pairs (the raw count above over-represents what the people's pairs
        # over-represent)
        "disagreement_share": weighted_disagreement(people, said, labeled_pairs, cells or units, pair_ids),
        "people_only_std_err": math.sqrt(dp.var_people) if math.isfinite(dp.var_people) else None,
        "std_err": math.sqrt(dp.var) if math.isfinite(dp.var) else None,
    }
    if worth is None:
        mine = [p for p in pair_ids if tasks is None or p in tasks]
        remaining = sum(1 for p in mine if people.get(p) not in (*ANSWERS, "unsure"))
        why, tell = worth_note(dp, remaining)
        facts["worth_note"], facts["worth_next"] = f"{why}; {tell}", tell
    share = facts["disagreement_share"]
    if cells is not None:
        facts["design"] = BY_ANSWERS
        facts["lambdas"] = {}
        n_pairs, n_people = Counter(map(cells.get, pair_ids)), Counter(map(cells.get, labeled_pairs))
        facts["cells"] = {c: {"pairs": n_pairs.get(c, 0), "people": n_people.get(c, 0)}
                          for c in sorted(set(cells.values()))}
    if share is not None and share > DISAGREEMENT_WARNING:
        facts["warning"] = (f"The model and people disagree on an estimated {share:.0%} of the drawn pairs, more than "
                            f"a fifth ({dis:,} of the {both:,} pairs both judged)"
                            + ": the estimates stay unbiased, but the model adds little; check its prompt or use "
                            "people's judgements alone (--source person).")
    if tasks is None:
        facts["subset"] = ("the people's judgements are taken as a random subset of the drawn pairs (the sample "
                           "was drawn without --human-budget; the judging app serves each stratum's pairs in "
                           "their random order)")
    return facts


__all__ = ["ANSWERS", "NO_VARIANCE", "model_counts", "ppi_facts", "weighted_disagreement", "worth_note"]
