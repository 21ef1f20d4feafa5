"""The answer to "is Exp better?" in a few plain sentences, with the evidence beside them.

:func:`verdict` reads a quality result (and, when a ground truth was given, each side's pointwise
metrics) and applies one rule, which every surface shows as it is: the terminal (``abcde
quality``, ``evaluate``, ``demo``), the report (a box at the top of report.html, the first lines of
report.md), the judging app's owner view and the notebook.

The rule
--------
- **Precision.** ΔPrecision's 95% interval (as built by the estimator, inside its feasible range)
  above 0: Precision went up; below 0: it went down; containing 0: no detectable change at 95%.
  Every pair judged (a census): the change is exact, and said so (its sign is the direction). No
  usable judgement yet in some stratum: not known yet, and which stratum still needs judgements.
- **Recall.** The recall lift Λ = T_Exp/T_Base − 1, the ratio of the two pairwise recalls minus 1
  ("Exp keeps x% more (fewer) true links than Base"), as the estimator gives it
  (``recall_lift``; this module reads it and never computes it). The same rule as for Precision
  on its interval: above 0 up, below 0 down, containing 0 none; exact (every pair of every stratum
  it needs judged): the sign of the estimate. Not available (a sample drawn without the agreed
  stratum) or no usable judgement yet: undefined, the reason said, and the command that adds it
  when the result has one. One clustering's absolute Precision has no recall side.
- **The headline** names both sides and which way Exp moved on each:
  *better* (one side up, the other not down), *worse* (one side down, the other not up), a
  *trade-off* ("Exp trades precision for recall" when Precision went down and recall up, "Exp
  trades recall for precision" the other way round), or *no detectable change* on either; with
  ΔPrecision and the recall lift and their intervals. While recall is undefined, the headline is
  Precision's alone and the next sentence says why recall is not known and how to add it.
  When the judgements used are a model's alone (``--source model``, or a sample only a model
  judged), the headline says so first ("Judged by a model only, not people."), as the report
  names an oracle.
- **"Yet"** only where more judging of this sample can change the answer (pairs of it are not
  judged). After a census, or once every pair of the sample has its answer
  (``missing_pairs == 0``; an "unsure" is an answer), a side that shows no detectable change is
  "not distinguishable with this sample", and the next step says what remains: a larger sample.
- **Splits and merges.** The share of the split weight that was good, GoodSplitRate/SplitRate,
  and of the merge weight, GoodMergeRate/MergeRate, with their intervals (SplitRate and MergeRate
  are exact, so the intervals are the rates' intervals divided by them).
- **Slices.** ΔPrecision(I) of each slice, and its recall lift when the slice has one, with a
  p-value from its estimate and standard error (Student t on its judged draws − 1 degrees of
  freedom); Holm's step-down method across all the tests shown (of every ``--slice-by`` column and
  both sides together) keeps the chance of naming any slice wrongly at 5%. A slice is named as
  significantly worse (or better) only when Holm rejects it, even when the whole shows no change.
- **Ground truth.** Each side's pointwise Precision and Recall against it (exact), and the exact
  recall lift from the true links each keeps; recall changes are what a ground truth measures well
  (paper, "Introduction"). A truth covering only part of the items, without a design: the same
  numbers, said to be over the items it covers, not the population (Precision is optimistic when a
  clustering puts them with items outside the truth), pointing to ``--truth-sample``. A truth of
  sampled entities with its design (:mod:`abcde.metrics.truth_sample`): the population's estimates
  with their 95% intervals and the paired ΔPrecision and ΔRecall (Exp − Base, one interval per
  difference); no recall lift from true links, which describe the sampled entities only. Estimates
  whose variance rests on few entities say so (:func:`truth_view` reads every form the truth comes in).
- **Next step.** Aimed at the side still undetermined (direction ``none``), named in the sentence:
  how many more judged pairs would make that side's interval's half-width as small as its
  estimate's size (at least 0.001 for ΔPrecision, 0.005 = 0.5% for the recall lift), from the
  current half-width ``h``, ``n`` judged pairs and the ``N`` distinct pairs of the sampled strata
  that side uses (finite-population correction): ``n' = 1 / ((1/n − 1/N)·(target/h)² + 1/N)``; the
  command to get there (``abcde pairs --extend DIR --budget M``). For recall, ``n`` is the lift's
  own ``n_judgements`` and ``N`` the pairs of its strata (split, merge, agreed); the more pairs
  it needs are scaled by judged_pairs/n (the budget grows for every stratum, not only its own).
  Both sides undetermined: the one that needs fewer more pairs, the other's need said beside it
  (for a model + people design, Precision's people's judgements, as before). Pairs of the sample
  not judged yet come first; recall not available: the command that adds it.

It never claims more than the interval: "no detectable change" is not "no change".

Where the parts live: the next step's arithmetic in :mod:`abcde.quality.next_step`, the ground
truth's sentences in :mod:`abcde.quality.verdict_truth`, how a number is written in
:mod:`abcde.quality.verdict_format`; this module holds the rule and writes the sentences.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from abcde.core.names import FEW_ENTITIES  # noqa: F401 - importable here before the truth's sentences moved
from abcde.quality.next_step import (MIN_RESOLUTION, RECALL_MIN_RESOLUTION, RECALL_STRATA, fpc_need, more_pairs,
                                     more_recall_pairs, sample_variance_share)
from abcde.quality.verdict_format import (and_list, interval_text as _interval_text, num as _num, signed as _signed,
                                          signed_pct as _signed_pct)
from abcde.quality.verdict_truth import (TRUTH_DELTAS, TRUTH_METRICS, design_words, sample_view, truth_point_note,
                                         truth_sentences, truth_view)
from abcde.util import display

# The names these had here before they moved (tests import some of them).
_fpc_need, _more_pairs, _more_recall_pairs, _sample_variance_share = (fpc_need, more_pairs, more_recall_pairs,
                                                                      sample_variance_share)
_sample_view, _truth_sentences, _and = sample_view, truth_sentences, and_list

#: The family-wise error rate of the slice statements and the confidence level of every interval.
ALPHA = 0.05
#: What the first sentence says when the judgements used are a model's alone.
MODEL_ONLY = "Judged by a model only, not people"


@dataclass(frozen=True)
class Verdict:
    """The answer in sentences (:attr:`sentences`, :attr:`text`) and the facts they rest on.

    Attributes
    ----------
    sentences
        Plain sentences, headline first.
    facts
        The structured facts: ``precision`` (``direction``: ``up``, ``down``, ``none``, ``undefined``;
        estimate, interval, ``exact``), ``recall`` (the same for the recall lift, ``metric:
        "recall_lift"``, with ``available``, ``note`` and ``command`` when it is not known),
        ``overall`` (``better``, ``worse``, ``precision_for_recall``, ``recall_for_precision``,
        ``none``, ``unknown`` while a side is undefined, ``absolute`` for one clustering's
        Precision), ``model_only`` (the judgements used are a model's alone), ``splits`` and
        ``merges`` (good shares with intervals), ``slices`` (each with its metric, p-value and
        Holm's decision), ``truth``, ``next_step`` (with the ``side`` it aims at), and the
        ``sentences`` themselves (so a dict carrying the facts carries the words).
    """

    sentences: tuple[str, ...]
    facts: dict = field(default_factory=dict)

    @property
    def headline(self) -> str:
        return self.sentences[0] if self.sentences else ""

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def to_dict(self) -> dict:
        return {"verdict": self.text, "sentences": list(self.sentences), "facts": self.facts}

    def markdown(self) -> str:
        """The sentences for a review comment: the headline in bold, the rest as a list."""
        if not self.sentences:
            return ""
        head, *rest = self.sentences
        return "\n".join([f"**{head}**", *([""] if rest else []), *(f"- {s}" for s in rest)])

    def _repr_html_(self) -> str:
        if not self.sentences:
            return ""
        head, *rest = self.sentences
        items = "".join(f"<li>{html.escape(s)}</li>" for s in rest)
        return (f"<div class='abcde verdict'><p style='font-weight:600;margin:.2em 0'>{html.escape(head)}</p>"
                f"{'<ul>' + items + '</ul>' if items else ''}</div>")

    def __str__(self) -> str:
        return "\n".join(self.sentences)


def _direction(est: float, lo: float, hi: float, exact: bool) -> str:
    """``up``, ``down``, ``none`` or ``undefined`` of an estimate and its 95% interval (the rule)."""
    if not math.isfinite(est):
        return "undefined"
    if exact:
        return "up" if est > 0 else "down" if est < 0 else "none"
    elif lo > 0:
        return "up"
    elif hi < 0:
        return "down"
    return "none"


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections for ``p_values`` at family-wise level ``alpha``: sort the
    p-values, reject the k-th smallest (k = 0, 1, …) while it is at most ``alpha/(m − k)``.

    >>> holm([0.01, 0.04, 0.03]), holm([0.01, 0.02, 0.2])
    ([True, False, False], [True, True, False])
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda k: p_values[k])
    out = [False] * m
    for rank, k in enumerate(order):
        if p_values[k] <= alpha / (m - rank):
            out[k] = True
        else:
            break
    return out


def slice_p_value(e: dict) -> float:
    """Two-sided p-value of ``estimate = 0`` from an estimate dict (``estimate``, ``std_err``,
    ``n_judgements``, and its 95% interval ``ci_low``, ``ci_high`` when it has one): Student t on
    ``n − 1`` degrees of freedom (normal below two). With an interval, the test is the interval's own:
    the standard error is read from the interval's side towards 0 (its distance from the estimate
    over the 97.5% quantile), so p < 0.05 exactly when the interval leaves 0 out; a standard error of
    0 beside an interval that is not a point (a drawn interval, a bound) never makes a slice
    significant. Without an interval, a standard error of 0 (the slice's part is exact) gives 0 for a
    non-zero estimate and 1 for zero. NaN: undefined."""
    from scipy.stats import norm, t

    est, se, n = _num(e.get("estimate")), _num(e.get("std_err")), int(e.get("n_judgements") or 0)
    lo, hi = _num(e.get("ci_low")), _num(e.get("ci_high"))
    if not math.isfinite(est):
        return math.nan
    if math.isfinite(lo) and math.isfinite(hi):
        if est == 0:
            return 1.0
        half = (est - lo) if est > 0 else (hi - est)  # the interval's reach from the estimate towards 0
        if half <= 0:  # the interval ends at the estimate on 0's side (a point, or an exact part)
            return 0.0 if (lo > 0 or hi < 0) else 1.0
        se = half / float(t.ppf(1 - ALPHA / 2, n - 1) if n >= 2 else norm.ppf(1 - ALPHA / 2))
    elif not math.isfinite(se):
        return math.nan
    if se == 0:
        return 0.0 if est != 0 else 1.0
    z = abs(est) / se
    return float(2 * (t.sf(z, n - 1) if n >= 2 else norm.sf(z)))


def _model_only(q: dict) -> dict | None:
    """The judgements used, when they are a model's alone (``design.judgements_used``); else None."""
    used = (q.get("design") or {}).get("judgements_used") or {}
    by = {k: int(v) for k, v in (used.get("by_source") or {}).items() if v}
    if set(by) != {"model"}:
        return None
    return {"model_judgements": by["model"], "source": used.get("source"),
            "left_out": {k: int(v) for k, v in (used.get("left_out") or {}).items() if v},
            "people_check": used.get("people_check")}


#: Above this share of the pairs both judged where model and people disagree, the model-only answer
#: is called into doubt (as the prediction-powered estimate's warning does).
MODEL_DOUBT = 0.2


def _ids_sentence(p: dict, r: dict, exp: str) -> str | None:
    """The answer read as ids (``abcde ids``: each pair asks whether a current item and one published
    earlier are the same concept): the recall lift is ids kept for the same concept, ΔPrecision ids not
    handed to another concept. None while neither side is known."""
    keep = {"up": "keeps more ids for the same concept", "down": "keeps fewer ids for the same concept",
            "none": "keeps no detectably different share of ids for the same concept"}.get(r["direction"])
    hand = {"up": "hands fewer ids to another concept", "down": "hands more ids to another concept",
            "none": "hands no detectably more or fewer ids to another concept"}.get(p["direction"])
    parts = [x for x in (keep, hand) if x]
    if not parts:
        return None
    lift = (f" (recall lift {_signed_pct(_num(r['estimate']))})"
            if keep and r["direction"] != "none" and r.get("estimate") is not None else "")
    text = f"Read as ids: {exp} {parts[0]}{lift if keep else ''}"
    return text + (f" and {parts[1]}." if len(parts) > 1 else ".")


def _model_check_sentence(model: dict, where: str) -> str | None:
    """What people's judgements say of a model whose answers alone make the estimates (``--source
    model``, or a sample only a model judged): how often they disagree on the pairs both judged, or
    that no person's judgement checks the model. None when it cannot be said (a result written before)."""
    check = model.get("people_check")
    if check is None:
        return None
    both, dis = int(check.get("both_judged") or 0), int(check.get("disagreements") or 0)
    if not check.get("people_judgements"):
        return ("No person has judged any of these pairs, so nothing checks the model's answers: have people "
                f"judge some of them (abcde judge serve {where}) and compare.")
    if not both:
        return (f"People judged {display.count(int(check['people_judgements']))} pairs, none of which the model "
                "answered same or different, so nothing checks the model's answers yet.")
    share = dis / both
    text = (f"Model and people disagree on {display.count(dis)} of the {display.count(both)} pairs both judged "
            f"({share:.0%})")
    if share > MODEL_DOUBT:
        return (text + f", more than a fifth: this model-only answer is in doubt; use people's judgements "
                f"(abcde quality {where} --source person) or both (abcde quality {where}).")
    return text + "."



def _recall_facts(q: dict, absolute: bool, exact: bool) -> dict:
    """``facts["recall"]`` from ``q["recall_lift"]`` (read as the estimator wrote it)."""
    if absolute:
        return {"metric": "recall_lift", "direction": "undefined", "available": False, "estimate": None,
                "ci_low": None, "ci_high": None, "exact": False,
                "note": "one clustering's Precision has no recall side"}
    rl = q.get("recall_lift")
    if not isinstance(rl, dict):
        return {"metric": "recall_lift", "direction": "undefined", "available": False, "estimate": None,
                "ci_low": None, "ci_high": None, "exact": False,
                "note": "this result carries no recall lift estimate"}
    available = rl.get("available", True) is not False
    r_exact = bool(rl.get("exact")) if "exact" in rl else (exact and available)
    r = {"metric": "recall_lift", "estimate": rl.get("estimate"), "ci_low": rl.get("ci_low"),
         "ci_high": rl.get("ci_high"), "exact": r_exact, "available": available,
         "std_err": rl.get("std_err"), "n_judgements": int(rl.get("n_judgements") or 0)}
    est, lo, hi = _num(rl.get("estimate")), _num(rl.get("ci_low")), _num(rl.get("ci_high"))
    r["direction"] = _direction(est, lo, hi, r_exact) if available else "undefined"
    if r["direction"] == "undefined":
        r["note"] = rl.get("note") or ("no usable judgements yet" if available else "no agreed stratum in the sample")
        # Exact and undefined: no judgement can define it (Base keeps no true link), never "not known yet".
        r["never"] = bool(available and r_exact)
        if rl.get("command"):
            r["command"] = rl["command"]
    return r


def _precision_side(d: str, est: float, lo: float, hi: float, exact: bool) -> str:
    """Precision's part of a two-sided headline."""
    if d == "up":
        return (f"Precision up by exactly {display.four(est)}" if exact
                else f"Precision up by {display.four(est)} ({_interval_text(lo, hi)})")
    if d == "down":
        return (f"Precision down by exactly {display.four(-est)}" if exact
                else f"Precision down by {display.four(-est)} ({_interval_text(lo, hi)})")
    return ("Precision exactly unchanged" if exact else
            f"no detectable change in Precision (ΔPrecision {_signed(est)}, {_interval_text(lo, hi)})")


def _recall_side(d: str, est: float, lo: float, hi: float, exact: bool) -> str:
    """Recall's part of a two-sided headline."""
    shown = f"recall lift exactly {_signed_pct(est)}" if exact else \
        f"recall lift {_signed_pct(est)}, {_interval_text(lo, hi, display.pct)}"
    if d == "up":
        return f"recall up ({shown})"
    if d == "down":
        return f"recall down ({shown})"
    return "recall exactly unchanged" if exact else f"no detectable change in recall ({shown})"


def _overall(pd: str, rd: str) -> str:
    """The headline's kind from the two directions (see the module's rule)."""
    if "undefined" in (pd, rd):
        return "unknown"
    if (pd == "up" and rd != "down") or (rd == "up" and pd != "down"):
        return "better"
    if (pd == "down" and rd != "up") or (rd == "down" and pd != "up"):
        return "worse"
    if pd == "down" and rd == "up":
        return "precision_for_recall"
    if pd == "up" and rd == "down":
        return "recall_for_precision"
    return "none"


def verdict(quality, *, truth: dict | None = None, names: tuple[str, str] = ("Base", "Exp")) -> Verdict:
    """The answer to "is Exp better?" from a quality result (see the module's rule).

    Parameters
    ----------
    quality
        A :class:`~abcde.quality.QualityResult` or its ``to_dict()``.
    truth
        Optional: each side's pointwise metrics against a ground truth, ``{"base": r, "exp": r}``
        (:class:`~abcde.metrics.pointwise.PointwiseResult` or its ``to_dict()``), or the estimates
        from a truth of sampled entities, a :class:`~abcde.metrics.truth_sample.TruthSampleResult`
        of Base and Exp or its ``to_dict()`` (every form :func:`truth_view` reads).
    names
        What Base and Exp are called in the sentences.
    """
    q = quality if isinstance(quality, dict) else quality.to_dict()
    base, exp = names
    facts: dict = {"alpha": ALPHA, "confidence_level": 1 - ALPHA}
    absolute = q.get("target") == "precision"
    dp = q["precision"] if absolute else q["delta_precision"]
    est, lo, hi = _num(dp.get("estimate")), _num(dp.get("ci_low")), _num(dp.get("ci_high"))
    exact = bool(q.get("exact"))
    p = {"metric": "precision" if absolute else "delta_precision", "estimate": dp.get("estimate"),
         "ci_low": dp.get("ci_low"), "ci_high": dp.get("ci_high"), "exact": exact}
    p["direction"] = "absolute" if absolute and math.isfinite(est) else _direction(est, lo, hi, exact)
    r = _recall_facts(q, absolute, exact)
    facts["precision"], facts["recall"] = p, r
    facts["overall"] = "absolute" if absolute else _overall(p["direction"], r["direction"])
    model = _model_only(q)
    facts["model_only"] = model is not None
    if not absolute and _num(q.get("split_rate")) == 0 and _num(q.get("merge_rate")) == 0:
        return _nothing_changed(facts, truth, names)
    # Partial until final: while pairs of the sample are not judged, the answer is what the judged say so far.
    missing, judged = int(q.get("missing_pairs") or 0), int(q.get("judged_pairs") or 0) + int(q.get("unsure_pairs") or 0)
    facts["final"] = missing == 0 or exact
    so_far = (f"So far ({display.count(judged)} of {display.count(judged + missing)} pairs judged): "
              if not facts["final"] and p["direction"] != "undefined" else "")
    sentences = [_headline(q, dp, p, r, facts["overall"], model, names, so_far)]

    design = q.get("design") or {}
    where = design.get("sample_dir") or "DIR"
    check = _model_check_sentence(model, where) if model else None
    if check:
        facts["model_check"] = model["people_check"]
        sentences.append(check)
    if design.get("question") == "ids" and not absolute:
        said = _ids_sentence(p, r, exp)
        if said:
            sentences.append(said)
    recall_cmd = r.get("command") if not absolute and r["direction"] == "undefined" and not r["available"] else None
    step = _next_step(q, p, r, est, lo, hi, absolute, exact, where, recall_cmd, design)
    sentences += _recall_sentences(p, r, absolute, recall_cmd, step, names)
    sentences += _share_sentences(q, absolute, exact, facts)
    sentences += _slice_sentences(q, absolute, est, exp, facts)
    # Ground truth: each side's Precision and Recall, exact (over the items a partial truth covers), or
    # estimated with intervals from a truth of sampled entities (its design given), with the paired changes.
    view = truth_view(truth)
    if view is not None and {"base", "exp"} <= set(view["sides"]):
        said, facts["truth"] = truth_sentences(view, base, exp)
        sentences += said
    sentences += _ppi_sentences(design)
    if step is not None:
        sentences.append(step.pop("sentence"))
    facts["next_step"] = step
    facts["sentences"] = list(sentences)
    return Verdict(tuple(sentences), facts)


def _nothing_changed(facts: dict, truth, names: tuple[str, str]) -> Verdict:
    """Base and Exp put every common item in the same cluster (no split, no merge): both sides are
    exactly unchanged whatever any judgement says, said once (no interval, no next step)."""
    base, exp = names
    zero = {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.0, "exact": True, "direction": "none"}
    facts["precision"].update(zero)
    facts["recall"] = {"metric": "recall_lift", "available": True, "std_err": 0.0, "n_judgements": 0, **zero}
    facts["overall"], facts["nothing_changed"], facts["next_step"] = "none", True, None
    sentences = [f"Nothing changed: {base} and {exp} put every item in the same cluster, so their Precision and "
                 "recall are exactly the same; there is no pair to judge."]
    view = truth_view(truth)
    if view is not None and {"base", "exp"} <= set(view["sides"]):
        said, facts["truth"] = truth_sentences(view, base, exp)
        sentences += said
    facts["sentences"] = list(sentences)
    return Verdict(tuple(sentences), facts)


def _headline(q: dict, dp: dict, p: dict, r: dict, kind: str, model: dict | None, names: tuple[str, str],
              so_far: str = "") -> str:
    """The headline: both sides when both are known, else Precision's (as before recall was estimated);
    ``kind`` is ``facts["overall"]``, ``model`` the judgements used when they are a model's alone,
    ``so_far`` what leads it while pairs of the sample are not judged."""
    base, exp = names
    absolute = q.get("target") == "precision"
    est, lo, hi = _num(dp.get("estimate")), _num(dp.get("ci_low")), _num(dp.get("ci_high"))
    exact = p["exact"]
    r_est, r_lo, r_hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    pd, rd = p["direction"], r["direction"]
    # More judging of this sample can change the answer only while pairs of it are not judged.
    settled = exact or int(q.get("missing_pairs") or 0) == 0
    tail = "yet" if not settled else "with this sample (every pair of it is judged; a larger sample could tell)"
    what = "Precision" if absolute else "ΔPrecision"
    if pd == "undefined":
        why = dp.get("note") or "no usable judgements yet"
        head = f"Not known yet whether {exp} is better: {what} needs judgements ({why})."
    elif absolute:
        head = f"{exp}'s Precision is {display.four(est)}" + (
            " exactly (every pair judged)." if exact else f" ({_interval_text(lo, hi)}).")
    elif rd == "undefined":
        head = {"up": (f"{exp} is more precise than {base}: Precision went up by exactly {display.four(abs(est))} "
                       "(every pair judged)." if exact else
                       f"{exp} is more precise than {base}: Precision went up by {display.four(est)} "
                       f"({_interval_text(lo, hi)})."),
                "down": (f"{exp} is less precise than {base}: Precision went down by exactly "
                         f"{display.four(abs(est))} (every pair judged)." if exact else
                         f"{exp} is less precise than {base}: Precision went down by {display.four(-est)} "
                         f"({_interval_text(lo, hi)})."),
                "none": (f"{exp} and {base} are exactly as precise (every pair judged)." if exact else
                         f"No detectable change in Precision at 95%: ΔPrecision {_signed(est)} "
                         f"({_interval_text(lo, hi)}), so {exp} is not distinguishable from {base} in "
                         f"Precision {tail}.")}[pd]
    else:
        ps = _precision_side(pd, est, lo, hi, exact)
        rs = _recall_side(rd, r_est, r_lo, r_hi, r["exact"])
        both_exact = exact and r["exact"]
        if kind == "none":
            if both_exact:
                head = (f"{exp} and {base} are exactly as precise and keep exactly as many true links "
                        "(every pair judged).")
            else:
                pn = (f"ΔPrecision exactly {_signed(est)}" if exact else
                      f"ΔPrecision {_signed(est)} ({_interval_text(lo, hi)})")
                rn = (f"recall lift exactly {_signed_pct(r_est)}" if r["exact"] else
                      f"recall lift {_signed_pct(r_est)} ({_interval_text(r_lo, r_hi, display.pct)})")
                head = (f"No detectable change in Precision or recall at 95%: {pn} and {rn}, so {exp} is not "
                        f"distinguishable from {base} {tail}.")
        else:
            clause = {"better": f"{exp} is better than {base}", "worse": f"{exp} is worse than {base}",
                      "precision_for_recall": f"{exp} trades precision for recall",
                      "recall_for_precision": f"{exp} trades recall for precision"}[kind]
            # The side that decides the answer first; a trade-off names what is given up first.
            moved = {"better": "up", "worse": "down"}.get(kind)
            first_p = kind == "precision_for_recall" or (moved is not None and pd == moved)
            sides = (ps, rs) if first_p else (rs, ps)
            head = f"{clause}{' (every pair judged)' if both_exact else ''}: {sides[0]} and {sides[1]}."
    head = so_far + head
    if model:
        left, src = model["left_out"], model["source"]
        why = (f" (--source {src} left out "
               + ", ".join(f"{display.count(n)} {k}" for k, n in sorted(left.items())) + " judgements)"
               if left and isinstance(src, str) else "")
        head = f"{MODEL_ONLY}{why}. {head}"
    return head


def _recall_sentences(p: dict, r: dict, absolute: bool, recall_cmd: str | None, step: dict | None,
                      names: tuple[str, str]) -> list[str]:
    """Recall: what the lift means, or why it is not known yet and how to add it (``recall_cmd``,
    said as the next ``step`` when that is what the step does)."""
    base, exp = names
    pd, rd = p["direction"], r["direction"]
    r_est, r_lo, r_hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    sentences = []
    if not absolute and rd == "undefined":
        add = ""
        if recall_cmd:
            add = (" (the next step adds it)" if step and step["command"] == recall_cmd
                   else f". To add it: {recall_cmd}, then judge the new pairs")
        sentences.append(f"The recall lift is not defined: {r['note']}." if r.get("never") else
                         f"Recall is not known yet: {r['note']}{add}.")
    elif not absolute and pd == "undefined":
        side = _recall_side(rd, r_est, r_lo, r_hi, r["exact"])
        sentences.append(f"{side[0].upper()}{side[1:]}.")
    if not absolute and rd != "undefined" and math.isfinite(r_est):
        links = "true links (pairs of one entity, weighted)"
        if r["exact"]:
            amount = (f"exactly as many {links} as {base}" if r_est == 0 else
                      f"exactly {display.pct(abs(r_est))} {'more' if r_est > 0 else 'fewer'} {links} than {base}")
        elif rd == "none":
            amount = (f"between {display.pct(max(-r_lo, 0.0))} fewer and {display.pct(max(r_hi, 0.0))} more "
                      f"{links} than {base} (95% interval)")
        else:
            amount = f"about {display.pct(abs(r_est))} {'more' if r_est > 0 else 'fewer'} {links} than {base}"
        sentences.append(f"{exp} keeps {amount}; the recall lift is the ratio of the two pairwise recalls, minus 1.")
    return sentences


def _share_sentences(q: dict, absolute: bool, exact: bool, facts: dict) -> list[str]:
    """Splits and merges: the good share of each, from the exact rates (``facts["splits"]`` and
    ``facts["merges"]`` set here)."""
    sentences = []
    for kind, good_key, rate_key, good_word in (("splits", "good_split_rate", "split_rate", "split"),
                                                ("merges", "good_merge_rate", "merge_rate", "merge")):
        rate = _num(q.get(rate_key))
        g = q.get(good_key) or {}
        if absolute and kind == "splits":
            continue
        if not rate or not math.isfinite(rate):
            facts[kind] = {"rate": rate, "share_good": None}
            continue
        share = _num(g.get("estimate")) / rate
        s_lo, s_hi = _num(g.get("ci_low")) / rate, _num(g.get("ci_high")) / rate
        facts[kind] = {"rate": rate, "share_good": share if math.isfinite(share) else None,
                       "ci_low": s_lo if math.isfinite(s_lo) else None,
                       "ci_high": s_hi if math.isfinite(s_hi) else None}
        label = (f"split weight ({display.pct(rate)} of the total weight was split off)" if good_word == "split"
                 else f"merge weight ({display.pct(rate)} of the total weight was merged in)")
        if not math.isfinite(share):
            sentences.append(f"Of the {label}, the good share is not known yet ({g.get('note') or 'no judgements'}).")
        elif exact:
            sentences.append(f"Of the {label}, exactly {display.pct(share)} was good.")
        else:
            sentences.append(f"Of the {label}, {display.pct(share)} was good ({_interval_text(s_lo, s_hi, display.pct)}).")
    return sentences


def _slice_sentences(q: dict, absolute: bool, est: float, exp: str, facts: dict) -> list[str]:
    """Slices: Holm across every slice of every column, and both sides, in one family (``facts["slices"]``
    set here); for one clustering's Precision (``absolute``), a slice against the whole's ``est``."""
    sentences = []
    rows = [(col, r_) for col, rs in (q.get("slices") or {}).items() for r_ in rs]
    key = "precision" if absolute else "delta_precision"
    metrics = (key,) if absolute else (key, "recall_lift")
    tested = [(m, col, r_) for m in metrics for col, r_ in rows
              if isinstance(r_.get(m), dict) and math.isfinite(slice_p_value(r_[m]))]
    p_values = [slice_p_value(r_[m]) for m, _, r_ in tested]
    if absolute:
        # For one clustering's Precision, a slice is named when it differs from the whole.
        p_values = [slice_p_value({**r_[m], "estimate": _num(r_[m]["estimate"]) - est}) for m, _, r_ in tested]
    rejected = holm(p_values) if p_values else []
    facts["slices"] = {"method": "Holm", "family": len(tested), "alpha": ALPHA, "rows": [
        {"column": col, "value": r_["value"], "metric": m, "estimate": r_[m].get("estimate"),
         "ci_low": r_[m].get("ci_low"), "ci_high": r_[m].get("ci_high"), "p_value": pv, "significant": rej}
        for (m, col, r_), pv, rej in zip(tested, p_values, rejected)]}
    n_slices = len({(col, r_["value"]) for _, col, r_ in tested})
    # The slices shown that have no estimate are not tested: said, so the count matches the table's rows.
    untested = len(rows) - n_slices
    left = (f"; {display.count(untested)} of the {display.count(len(rows))} slices have no estimate to test"
            if untested > 0 else "")
    across = (f"across {len(tested)} slices{left}" if n_slices == len(tested)
              else f"across {len(tested)} tests (Precision and recall of {n_slices} slices){left}")
    named = [x for x in facts["slices"]["rows"] if x["significant"]]
    for x in named:
        e = _num(x["estimate"])
        where_ = f"{x['column']} = {display.NULL_TEXT if x['value'] is None else x['value']}"
        if absolute:
            word = "higher" if e > est else "lower"
            sentences.append(f"In the slice {where_}, Precision is {word} than overall: {display.four(e)} "
                             f"({_interval_text(_num(x['ci_low']), _num(x['ci_high']))}; Holm-adjusted across "
                             f"{len(tested)} slices at 5%).")
        elif x["metric"] == "recall_lift":
            word = "more" if e > 0 else "fewer"
            sentences.append(f"In the slice {where_}, {exp} keeps significantly {word} true links: recall lift "
                             f"{_signed_pct(e)} ({_interval_text(_num(x['ci_low']), _num(x['ci_high']), display.pct)}"
                             f"; Holm's method {across}, 5% family-wise).")
        else:
            word = "more" if e > 0 else "less"
            sentences.append(f"In the slice {where_}, {exp} is significantly {word} precise: ΔPrecision "
                             f"{_signed(e)} ({_interval_text(_num(x['ci_low']), _num(x['ci_high']))}; Holm's "
                             f"method {across}, 5% family-wise).")
    if tested and not named:
        sentences.append(f"No slice differs significantly (Holm's method {across}, 5% family-wise).")
    return sentences


def _ppi_sentences(design: dict) -> list[str]:
    """What a model's judgements did in a model + people design (``design["ppi"]``): corrected by the
    people's, or not used and why; nothing when the estimate left them out (``--source person``/``oracle``)."""
    sentences = []
    ppi = design.get("ppi")
    if ppi and not ppi.get("people_only"):  # --source person/oracle: no model judgement used, none to speak of
        worth = ppi.get("worth_people_judgements")
        used, judged = int(ppi.get("model_used", ppi["model_judgements"])), int(ppi["model_judgements"])
        share = ppi.get("disagreement_share")
        if not used:  # e.g. a model that answered every pair "same": no stratum split by its answers
            why = "its answers split no stratum" if ppi.get("design") else "none of them is same or different"
            sentences.append(f"The model's {display.count(judged)} judgements are not used ({why}): the estimates "
                             f"rest on the {display.count(ppi['people_judgements'])} people's judgements alone.")
        else:
            sentences.append(
                f"Prediction-powered: {display.count(used)} model answers corrected by "
                f"{display.count(ppi['people_judgements'])} people's judgements"
                + (f" (the model judged {display.count(judged)} pairs; its others are unsure or not used)"
                   if judged > used else "")
                + (f"; the model's were worth about {display.count(round(worth))} people's judgements"
                   if worth is not None else
                   "; what the model's were worth cannot be told yet: "
                   + ("the people's judgements do not vary, so there is no standard error to compare"
                      if (ppi.get("std_err") or 0.0) <= 1e-12 and ppi.get("std_err") is not None
                      else "too few people's judgements for a standard error")
                   + (f" ({ppi['worth_next']})" if ppi.get("worth_next") else ""))
                + "."
                + (f" Model and people disagree on an estimated {share:.0%} of the drawn pairs, more than a fifth."
                   if ppi.get("warning") and share is not None else ""))
    return sentences


def _next_step(q, p, r, est, lo, hi, absolute, exact, where, recall_cmd, design) -> dict | None:
    """The next step (see the module's rule), with its ``sentence``; None when there is none."""
    pd, rd = p["direction"], r["direction"]
    missing = int(q.get("missing_pairs") or 0)
    if not exact and pd == "undefined":
        command = f"abcde judge serve {where}"
        return {"kind": "judge", "side": "precision", "command": command,
                "sentence": f"Next: judge more pairs ({command})."}
    p_open = not exact and pd in ("none", "absolute") and math.isfinite(lo) and math.isfinite(hi)
    r_lo, r_hi = _num(r.get("ci_low")), _num(r.get("ci_high"))
    r_open = not absolute and not r["exact"] and rd == "none" and math.isfinite(r_lo) and math.isfinite(r_hi)
    r_waits = not absolute and rd == "undefined" and r.get("available") and not recall_cmd and not r.get("never")
    if missing and not exact:  # until every pair of the sample is judged, judging it is the next step
        command = f"abcde judge serve {where}"
        side = "precision" if p_open or not (r_open or r_waits) else "recall"
        return {"kind": "judge", "side": side, "missing_pairs": missing, "command": command,
                "sentence": f"Next: {display.count(missing)} pairs of the sample are not judged yet ({command}); "
                            "the answer can change until they are."}
    options = []
    if p_open:
        target = max(abs(est) if pd == "none" else 0.0, MIN_RESOLUTION)
        if absolute:
            target = max(target, 0.01)  # an absolute Precision to ±1 pp
        more = more_pairs(q, (hi - lo) / 2, target)
        if more:
            options.append(("precision", target, more))
    if r_open:
        r_est = _num(r.get("estimate"))
        target = max(abs(r_est), RECALL_MIN_RESOLUTION)
        more = more_recall_pairs(q, r, (r_hi - r_lo) / 2, target)
        if more:
            options.append(("recall", target, more))
    if options:
        # Both undetermined: the side that needs fewer more pairs (people's judgements of a model + people
        # design are another unit: Precision's advice then, as before); the other's need said beside it.
        if len(options) == 2 and not options[0][2].get("people"):
            options.sort(key=lambda o: o[2]["more_pairs"])
        (side, target, more), other = options[0], (options[1] if len(options) > 1 else None)
        aim = f"±{display.four(target)}" if side == "precision" else f"±{display.pct(target)}"
        name = "a Precision" if side == "precision" else "a recall"
        if absolute:
            name = "a"
        also = ""
        if other:
            o_aim = f"±{display.four(other[1])}" if other[0] == "precision" else f"±{display.pct(other[1])}"
            unit = "people's judgements" if other[2].get("people") else "judged pairs"
            also = (f" ({'Precision' if other[0] == 'precision' else 'recall'} would need about "
                    f"{display.count(other[2]['more_pairs'])} more {unit} to tell {o_aim})")
        if more.get("people"):
            grow = more["budget"] > int(design.get("budget") or 0)
            command = (f"abcde pairs --extend {where} " + (f"--budget {more['budget']} " if grow else "")
                       + f"--human-budget {more['human_budget']}")
            sentence = (f"Next: to tell {name} change of {aim} from none, about {display.count(more['more_pairs'])} "
                        f"more people's judgements: {command}, then judge the new tasks"
                        + (" (and the model the new pairs)" if grow else "") + also + ".")
        else:
            command = f"abcde pairs --extend {where} --budget {more['budget']}"
            sentence = (f"Next: to tell {name} change of {aim} from none, about {display.count(more['more_pairs'])} "
                        f"more judged pairs: {command}, then judge the new pairs{also}.")
        step = {"kind": "extend", "side": side, **more, "command": command, "sentence": sentence}
        if other:
            step["other"] = {"side": other[0], **other[2]}
        return step
    if recall_cmd:
        return {"kind": "extend", "side": "recall", "command": recall_cmd,
                "sentence": f"Next: to estimate recall, add the pairs it needs: {recall_cmd}, then judge the new "
                            "pairs."}
    return None


__all__ = ["ALPHA", "MIN_RESOLUTION", "MODEL_ONLY", "RECALL_MIN_RESOLUTION", "RECALL_STRATA", "TRUTH_DELTAS",
           "TRUTH_METRICS", "Verdict", "design_words", "holm", "slice_p_value", "truth_point_note", "truth_view",
           "verdict"]
