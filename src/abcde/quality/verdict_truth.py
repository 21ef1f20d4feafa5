"""The ground truth in the verdict's words: each side's Precision and Recall against it, exact, over
the items a partial truth covers, or estimated with intervals from a truth of sampled entities.

The rule of these sentences is :mod:`abcde.quality.verdict`'s ("Ground truth"): this module reads
the truth in every form it comes in (:func:`truth_view`) and writes its sentences and facts
(:func:`truth_sentences`); the report and the terminal read a truth sample's design and its point
intervals in the same words (:func:`design_words`, :func:`truth_point_note`).
"""

from __future__ import annotations

import math

from abcde.core.names import FEW_ENTITIES
from abcde.quality.verdict_format import (and_list as _and, interval_text as _interval_text, num as _num, signed as _signed,
                                          signed_pct as _signed_pct)
from abcde.util import display

#: The metrics of a truth's table and their paired differences (a truth sample's, Exp − Base).
TRUTH_METRICS = ("precision", "recall", "f1")
TRUTH_DELTAS = tuple(f"delta_{m}" for m in TRUTH_METRICS)


def truth_view(truth) -> dict | None:
    """The ground truth's numbers as the verdict and the report read them, from any form they are given in.

    ``truth`` is one of

    - ``{"base": r, "exp": r}`` with ``r`` a :class:`~abcde.metrics.pointwise.PointwiseResult` or its
      ``to_dict()`` (a truth without a design; its ``note`` says when it covers only part of the items);
    - a :class:`~abcde.metrics.truth_sample.TruthSampleResult` of Base and Exp, or its ``to_dict()``
      (a truth of sampled entities with its design: estimates with intervals, paired differences);
    - ``{"base": res.side_dict("base"), "exp": res.side_dict("exp")}`` of such a result, with its
      ``delta_precision``, ``delta_recall`` and ``delta_f1`` (``PopulationEstimate.to_dict()``) beside
      them when they are known.

    Returns None without a truth, else ``{"kind", "sides", ...}``: ``kind`` is ``"exact"`` (a truth
    covering every item: exact numbers), ``"partial"`` (no design, part of the items: exact over them,
    ``note`` says what they describe, ``items`` how many) or ``"sample"`` (with a design: ``estimates``
    per side and ``deltas``, each an estimate dict with ``ci_low``/``ci_high``, and ``design``,
    ``notes``, ``restricted``, ``truth_items``, ``population_items``); ``sides`` holds each side's
    ``precision``, ``recall`` and ``f1`` (the estimates for a sample); ``recall_lift`` the exact recall
    lift from the true links each side keeps (None for a sample, or when the sides were measured on
    different items)."""
    if not truth:
        return None
    if hasattr(truth, "design_dict") and hasattr(truth, "to_dict"):  # a TruthSampleResult
        truth = truth.to_dict()
    if isinstance(truth, dict) and "sides" in truth and "estimates" in truth and "truth_sample" in truth:
        return sample_view(truth)
    if not isinstance(truth, dict):
        raise TypeError(f"truth must be {{'base': ..., 'exp': ...}} or a TruthSampleResult; got {type(truth).__name__}")
    t = {side: (x if isinstance(x, dict) else x.to_dict()) for side, x in truth.items() if side in ("base", "exp")}
    if not t:
        return None
    if all(isinstance(x.get("estimates"), dict) and x.get("truth_sample") for x in t.values()):
        first = next(iter(t.values()))
        return sample_view({"truth_sample": first["truth_sample"], "sides": list(t),
                             "estimates": {**{side: x["estimates"] for side, x in t.items()},
                                           **{k: truth[k] for k in TRUTH_DELTAS if isinstance(truth.get(k), dict)}},
                             "truth_items": first.get("items"), "truth_weight": first.get("total_weight")})
    sides = {side: {m: _num(x.get(m)) for m in TRUTH_METRICS} for side, x in t.items()}
    notes = list(dict.fromkeys(x["note"] for x in t.values() if x.get("note")))
    lift = None
    if set(t) == {"base", "exp"}:
        tb, te = _num(t["base"].get("true_links")), _num(t["exp"].get("true_links"))
        same_items = t["base"].get("items") == t["exp"].get("items") and math.isclose(
            _num(t["base"].get("total_weight")), _num(t["exp"].get("total_weight")), rel_tol=1e-9)
        value = te / tb - 1.0 if same_items and tb > 0 and math.isfinite(te) else math.nan
        lift = value if math.isfinite(value) else None
    view = {"kind": "partial" if notes else "exact", "sides": sides, "recall_lift": lift,
            "items": {side: x.get("items") for side, x in t.items()}}
    if notes:
        if len(notes) == 1:
            view["note"] = notes[0]
        else:  # Base and Exp hold different items: each side's own words
            view["note"] = " ".join(f"{side.capitalize()}: {x['note']}" for side, x in t.items() if x.get("note"))
    return view


def sample_view(d: dict) -> dict:
    sides = [s for s in d["sides"] if s in ("base", "exp")]
    if not sides:
        from abcde.errors import InputError  # lazy: only for this refusal

        raise InputError("The truth sample's estimates are of one clustering; the report and the verdict compare "
                         "Base and Exp: estimate both (estimate_pointwise(truth, base=..., exp=..., ...)).")
    est = d["estimates"]
    estimates = {side: {m: dict(est[side][m]) for m in TRUTH_METRICS} for side in sides}
    return {"kind": "sample",
            "sides": {side: {m: _num(estimates[side][m].get("estimate")) for m in TRUTH_METRICS} for side in sides},
            "estimates": estimates, "deltas": {k: dict(est[k]) for k in TRUTH_DELTAS if isinstance(est.get(k), dict)},
            "design": dict(d["truth_sample"]), "notes": list(d.get("notes") or ()),
            "restricted": d.get("restricted"), "truth_items": d.get("truth_items"),
            "truth_weight": d.get("truth_weight"), "population_items": d.get("population_items"),
            "f1_method": d.get("f1_method"), "interval_method": d.get("interval_method"), "recall_lift": None}


def design_words(design: dict) -> str:
    """A truth sample's design in words: how its entities were drawn, and from how many.

    >>> design_words({"design": "uniform", "entities": 400, "population_entities": 1972.4,
    ...               "population_entities_from": "estimated", "census": False, "column": None})
    'uniform design: a simple random sample of 400 of an estimated 1,972 entities'
    >>> design_words({"design": "uniform", "entities": 400, "population_entities": 2000.0,
    ...               "population_entities_from": "given", "census": False, "column": None})
    "uniform design: a simple random sample of 400 of the population's 2,000 entities"
    >>> words = design_words({"design": "poisson", "entities": 3, "population_entities": 7.5,
    ...                       "population_entities_from": "design", "census": False, "column": "p"})
    >>> words.startswith("each entity included independently with the probability in the truth's column 'p'")
    True
    >>> words.endswith(": 3 entities listed, about 7.5 in the population (Σ 1/π)")
    True
    """
    n, N = int(design["entities"]), _num(design.get("population_entities"))
    big = many(N)
    if design.get("design") == "uniform":
        if design.get("population_entities_from") == "estimated":
            return f"uniform design: a simple random sample of {n:,} of an estimated {big} entities"
        return f"uniform design: a simple random sample of {n:,} of the population's {big} entities"
    return (f"each entity included independently with the probability in the truth's column '{design.get('column')}': "
            f"{n:,} entities listed, {'about ' if big[0].isdigit() else ''}{big} in the population (Σ 1/π)")


def many(N: float) -> str:
    """A number of entities in words: ``1,972``, ``7.5``; beyond 10^15 in powers of ten
    (``1.0 × 10^160``); beyond a double (Σ 1/π of an inclusion probability below ~1e-308) said so.

    >>> many(1972.4), many(7.5), many(1e160), many(float("inf"))
    ('1,972', '7.5', '1.0 × 10^160', 'more than 10^308')
    """
    if math.isnan(N):
        return "an unknown number of"
    if math.isinf(N):
        return "more than 10^308"
    if N >= 1e15:
        exp = math.floor(math.log10(N))
        return f"{N / 10.0 ** exp:.1f} × 10^{exp}"
    return f"{N:,.0f}" if abs(N - round(N)) < 1e-9 or N >= 100 else f"{N:,.1f}"


def said_once(items: list[tuple[str, str, str]]) -> list[str]:
    """Notes of several estimates, each said once: ``(subject, joiner, note)`` with the same ``joiner``
    and ``note`` grouped in their first order, their subjects joined (``"A has n"``, ``"B has n"`` →
    ``"A and B have n"``; ``"A: n"``, ``"B: n"`` → ``"A and B: n"``).

    >>> said_once([("A", "has", "s.e. 0"), ("B", ":", "few"), ("C", "has", "s.e. 0")])
    ['A and C have s.e. 0', 'B: few']
    """
    groups: dict = {}
    for subject, joiner, note in items:
        groups.setdefault((joiner, note), []).append(subject)
    out = []
    for (joiner, note), subjects in groups.items():
        who = _and(subjects)
        if joiner == ":":
            out.append(f"{who}: {note}")
        else:
            out.append(f"{who} {'have' if len(subjects) > 1 and joiner == 'has' else joiner} {note}")
    return out


def truth_point_note(e: dict, census: bool) -> str:
    """Why a truth sample's estimate has a point interval though the truth is not a census: every
    sampled entity scored the same (all at the end of the range), so the sample shows no spread;
    entities not sampled may differ (empty when that is not so)."""
    if census or e.get("note") or e.get("std_err") != 0 or e.get("estimate") is None:
        return ""
    if e.get("ci_low") is not None and e.get("ci_low") != e.get("ci_high"):
        return ("standard error 0: every sampled entity scores the same (none shows a loss, or all the same "
                "one); the interval reaches what the entities not sampled may hold, from the design (Clopper–"
                "Pearson's bound for no event among the sampled entities)")
    return ("standard error 0 and a point interval: every sampled entity scores the same, so the sample shows no "
            "spread; the entities not sampled may differ")


def truth_sentences(view: dict, base: str, exp: str) -> tuple[list[str], dict]:
    """The ground truth's sentences and facts (see the module's rule)."""
    b, e = view["sides"]["base"], view["sides"]["exp"]
    facts = {"kind": view["kind"],
             **{side: {k: v[k] for k in ("precision", "recall")} for side, v in view["sides"].items()}}
    if view["kind"] != "sample":
        lift = view.get("recall_lift")
        facts["recall_lift"] = lift
        items = (view.get("items") or {}).get("base")
        scope = ("Against the ground truth (exact)" if view["kind"] == "exact" else
                 f"Against the ground truth, over the {display.count(int(items)) + ' ' if items is not None else ''}"
                 "items it covers (exact for them, not the population: Precision is optimistic when a clustering "
                 "puts them with items outside the truth; --truth-sample, truth_sample= in Python, estimates the "
                 "population's)")
        if view["kind"] == "partial":
            facts["note"] = view.get("note")
        return [f"{scope}: Precision {display.pct(b['precision'])} → {display.pct(e['precision'])}, Recall "
                f"{display.pct(b['recall'])} → {display.pct(e['recall'])}"
                + (f", recall lift {_signed_pct(lift)}" if lift is not None else "") + f" ({base} → {exp})."], facts
    design, est, deltas = view["design"], view["estimates"], view["deltas"]
    census = bool(design.get("census"))
    facts.update({"recall_lift": None, "design": design, "estimates": est, "deltas": deltas})

    def level(x: dict) -> str:
        if census:
            return display.pct(x.get("estimate"))
        lo, hi = _num(x.get("ci_low")), _num(x.get("ci_high"))
        return f"{display.pct(x.get('estimate'))} ({_interval_text(lo, hi, display.pct)})"

    def delta(name: str, x: dict) -> str:
        if census:
            return f"{name} exactly {_signed(_num(x.get('estimate')))}"
        lo, hi = _num(x.get("ci_low")), _num(x.get("ci_high"))
        return f"{name} {_signed(_num(x.get('estimate')))} ({_interval_text(lo, hi)})"

    n = display.count(int(design["entities"]))
    how = "design uniform" if design.get("design") == "uniform" else \
        f"design: inclusion probabilities in column '{design.get('column')}'"
    scope = (f"Against the ground truth, every one of its {n} entities (a census, so exact)" if census else
             f"Against a ground-truth sample of {n} entities ({how}), estimated for the whole population")
    text = (f"{scope}: Precision {level(est['base']['precision'])} → {level(est['exp']['precision'])}, Recall "
            f"{level(est['base']['recall'])} → {level(est['exp']['recall'])} ({base} → {exp})")
    shown = [(label, deltas[k]) for k, label in (("delta_precision", "ΔPrecision"), ("delta_recall", "ΔRecall"))
             if k in deltas]
    if shown:
        text += "; " + ", ".join(delta(label, x) for label, x in shown)
    sentences = [text + "."]
    if not census:
        few, other = [], []
        for label, x in (*((f"{side_name}'s {m.capitalize()}", est[side][m])
                           for side, side_name in (("base", base), ("exp", exp)) for m in ("precision", "recall")),
                         *shown):
            eff = _num(x.get("effective_entities"))
            if x.get("note") and math.isfinite(eff) and eff < FEW_ENTITIES:
                few.append(f"{label} (about {eff:.1f} entities)")
            elif x.get("note"):
                other.append((label, ":", x["note"]))
            elif truth_point_note(x, census):
                other.append((label, "has", truth_point_note(x, census)))
        if few:
            sentences.append(f"The intervals of {_and(few)} rest on few of the sampled entities (a few decide the "
                             "estimate), so they are wider, and may still cover less than 95% if the sample misses the "
                             "entities that decide the population's value.")
        if other:
            sentences.append(f"{'; '.join(said_once(other))}.")
    return sentences, facts
