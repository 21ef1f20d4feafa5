"""Prediction-powered estimates: a model judges every drawn pair, people judge a random subset
of them, and the people's judgements correct the model's bias (Angelopoulos et al., Science 2023;
PPI++'s power tuning, Angelopoulos, Duchi & Zrnic, arXiv 2311.01453; stratified as in Fisch et
al., arXiv 2406.04291).

**The design** (``abcde pairs --budget N --human-budget n``). The N drawn pairs are split into
units: the strata of the stratified design, the classes (split, merge, intersection) of the
paper's. Each distinct pair gets a priority ``ρ ∈ [0, 1)`` from a hash of the seed and its pair id;
in unit ``c`` the pairs with ``ρ ≤ τ_c`` are the people's tasks, ``τ_c`` chosen so that unit ``c``
has its share ``n_c`` of ``n`` (∝ its distinct pairs, at least 2). The priorities are independent
uniform draws, so the people's tasks are a simple random sample of each unit's pairs, whatever the
pairs are. ``--extend`` keeps every ``τ_c`` (so every task stays a task) and raises it to reach a
larger ``--human-budget``.

**The estimator**, per unit ``c`` with ``N_c`` draws of which the ``n_c`` labeled ones carry a
person's judgement ``y`` (same/different), and a model value ``f`` on every draw::

    θ̂_c = λ_c · mean_{N_c}(f) + mean_{n_c}(y − λ_c·f)
    Var  = s²(y)/N_c + (1 − n_c/N_c) · s²(y − λ_c·f)/n_c
    λ_c  = Cov(y, f) / Var(f) on the labeled draws, clipped to [0, 1]

Given the draws, the labeled ones are a simple random sample of them, so ``θ̂_c`` is unbiased for
the draws' mean of ``y`` whatever ``λ_c`` and the model are; the first variance term is the draws'
(N_c draws ∝ u_ij), the second the subsample's. ``λ = 0`` is the people-only estimate on the
subset (and its variance ``s²/n_c``); a model equal to the people gives ``λ = 1`` and ``s²/N_c``, the
variance of N_c people's judgements. PPI++ writes the same estimator with an unlabeled set disjoint
from the labeled one: its ``λ_PPI++ = (1 − n/N)·λ`` (:func:`ppi_plus_plus_lambda`).

The paper's design weights its classes by their draws (post-stratified, ``θ̂ = Σ_c (N_c/N) θ̂_c``),
with the first term the variance of all N draws' mean. A census stratum (every pair listed once
with its pair weight) estimates its total ``Σ w·y`` the same way, with weights.

A pair the model did not answer (unsure, failed, not judged) gets the fixed model value
:data:`MODEL_MISSING`: any fixed value keeps the estimate unbiased; a missing answer only lowers
what the model is worth. Unsure people's judgements are left out within a unit, as everywhere.

**Intervals** follow the rules of every other estimate: Student t on the people's judgements − 1,
cut to the feasible range, and defined from one judgement per unit. The people's answers' variance
under them is at least Jeffreys' ``p̃(1 − p̃)``, ``p̃ = (k + ½)/(n + 1)``; a residual that does not vary
on the people's pairs (a model that agreed with all of them) is given ``(1 − λ)²`` times that, and
in a census stratum (where no first-phase variance gives the interval width) also ``λ²`` times the
Jeffreys variance of the model's share of errors: a few agreeing judgements never give a zero-width
interval, and a model that was right on every people's pair is not taken to be right on every
other.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from abcde.core.names import PEOPLE
from abcde.errors import InputError
from abcde.sampling.allocation import allocate, pair_class_of_draws, stratum_weights

#: The model value of a pair the model answered ``unsure``, failed on or did not judge (as a share
#: "same"; times the pair's label): a fixed value, so the estimate stays unbiased.
MODEL_MISSING = 0.5
#: Above this share of disagreement between model and people on the doubly judged pairs,
#: ``abcde quality`` warns (the estimate stays unbiased; the model adds little).
DISAGREEMENT_WARNING = 0.2
#: Where the people's tasks and their priorities are recorded in a sample's metadata.
META_KEY = "people"


# ---------------------------------------------------------------------------------- the design
def priority(seed: int, pair_id: str) -> float:
    """A pair's priority for the people's tasks: uniform in [0, 1), from the seed and the pair id
    (53 bits of sha256, so exact as a float).

    >>> priority(1, "a|b") == priority(1, "a|b") != priority(2, "a|b")
    True
    """
    h = hashlib.sha256(f"abcde.people|{int(seed)}|{pair_id}".encode()).digest()
    return (int.from_bytes(h[:8], "big") >> 11) / float(1 << 53)


def units_of(draws: pa.Table, meta: dict) -> dict:
    """``{pair_id: unit}`` of the pairs needing a judgement: their stratum (stratified samples) or
    class (the paper's design: split, merge, intersection)."""
    if not draws.num_rows:
        return {}
    pids, need = draws.column("pair_id").to_pylist(), draws.column("needs_judgement").to_pylist()
    if meta.get("estimator") == "stratified":
        names = draws.column("stratum").to_pylist()
    else:

        names = pair_class_of_draws(draws)
    return {p: c for p, c, n in zip(pids, names, need) if n}



def unit_weights(draws: pa.Table, meta: dict, units: dict) -> dict:
    """Each unit's weight in the people's budget: its exact pair weight ``U_c`` (stratified samples,
    the agreed stratum its share of the sample: :func:`abcde.sampling.allocation.stratum_weights`),
    as the people-only design allocates; the paper's design: its class's draws (its share of the pair
    weight)."""
    if meta.get("estimator") == "stratified":

        w = stratum_weights(meta["pair_totals"], meta.get("budgets") or {})
        return {c: float(w.get(c, meta["pair_totals"].get(c, 0.0))) for c in set(units.values())}

    drawn = pair_class_of_draws(draws) if draws.num_rows else []
    return {c: float(sum(1 for x in drawn if x == c)) for c in set(units.values())}


def plan_people(units: dict, seed: int, budget: int | None, *, old: dict | None = None,
                weights: dict | None = None) -> dict:
    """The people's tasks: per unit the threshold ``τ_c`` (a pair is a task iff its priority is
    ``≤ τ_c``), for ``budget`` tasks in all: ∝ each unit's ``weights`` (its exact pair weight ``U_c``,
    as the people-only design allocates; default: its distinct pairs), at least 2 each, at most its
    pairs (Sainte-Laguë, :func:`abcde.sampling.allocation.allocate`); ``old`` (a plan from before
    ``--extend``) keeps every earlier ``τ_c``: its tasks stay tasks.

    Returns ``{"asked": budget, "thresholds": {c: τ_c}, "budgets": {c: tasks}, "pairs": {c: pairs}}``."""

    by_unit: dict = {}
    for p, c in units.items():
        by_unit.setdefault(c, []).append(priority(seed, p))
    for c in by_unit:
        by_unit[c].sort()
    names = tuple(sorted(by_unit))
    counts = {c: len(by_unit[c]) for c in names}
    old_t = (old or {}).get("thresholds") or {}
    asked = int(budget) if budget is not None else int((old or {}).get("asked") or 0)
    if budget is not None:
        score = {c: float((weights or counts).get(c, 0.0)) for c in names}
        want = allocate(int(budget), score, caps=counts, strata=names)
    else:
        want = dict.fromkeys(names, 0)
    thresholds, budgets = {}, {}
    for c in names:
        pr = by_unit[c]
        tau = float(old_t.get(c, -1.0))
        if want[c] > 0:
            tau = max(tau, pr[want[c] - 1])
        thresholds[c] = tau
        budgets[c] = sum(1 for x in pr if x <= tau)
    return {"asked": asked, "thresholds": thresholds, "budgets": budgets, "pairs": counts,
            "tasks": sum(budgets.values())}


def people_pairs(draws: pa.Table, meta: dict) -> frozenset | None:
    """The pair ids that are the people's tasks (``pairs --human-budget``); None when the sample has
    no such split (every pair is a people's task)."""
    plan = meta.get(META_KEY)
    if not plan:
        return None
    cells = people_cells(draws, meta)
    return tasks_in(units_of(draws, meta) if cells is None else cells, plan, int(meta["seed"]))


def outside_tasks(source: str, pair_id: str, tasks) -> bool:
    """Whether a judgement by ``source`` of ``pair_id`` falls outside the people's tasks ``tasks``
    (:func:`people_pairs`; None: every pair is one): a person's or the oracle's (which stands for
    people) judgement of a pair that is not a people's task. A model judges every pair, so its
    judgements never are. The one definition: the judgement store refuses such a judgement
    (:meth:`abcde.quality.store.JudgementStore.validate`), and one recorded before it did (kept,
    never deleted) counts nowhere: not in the judging app's progress or estimates, not in
    :func:`abcde.quality.judgements.load_judgements` given the tasks, not for the rule that keeps
    the people's tasks once people have judged (:func:`abcde.quality.people.choose_by_model_answers`).

    >>> outside_tasks("person", "a|b", frozenset({"c|d"})), outside_tasks("model", "a|b", frozenset({"c|d"}))
    (True, False)
    """
    return tasks is not None and source in PEOPLE and pair_id not in tasks


def tasks_in(cells: dict, plan: dict, seed: int) -> frozenset:
    """The people's tasks of a plan: in each cell (or unit) the pairs with priority ``≤ τ``, or
    those drawn (``cells.drawn``, census cells drawn ∝ pair weight)."""
    if isinstance(cells, Cells):
        return frozenset(p for p in cells if cells.is_task(p))
    t = plan["thresholds"]
    return frozenset(p for p, c in cells.items() if priority(seed, p) <= t.get(c, -1.0))


def tasks_note(plan: dict) -> str:
    """Why a plan's people's tasks are not exactly the number asked (``--human-budget``), or "".

    - Chosen by the model's answers (:func:`plan_by_answers`): each cell's people's draws are a fixed
      number of its draws (census cells: draws ∝ pair weight), as many as make its share of distinct
      pairs *expected*; a pair drawn twice is one task, so the distinct pairs come out near the number
      asked. Drawing until exactly that many would bias the estimate towards pairs drawn often.
    - Every pair a task: the strata with weight hold fewer pairs than asked.
    - More than asked: ``--extend`` keeps every earlier task, also where the new shares are smaller.

    >>> tasks_note({"asked": 200, "tasks": 200})
    ''
    >>> tasks_note({"asked": 50, "tasks": 40, "pairs": {"split": 40}, "budgets": {"split": 40}})
    "40 people's tasks, not the 50 asked: the strata with weight hold only 40 pairs, and every one is a task"
    """
    asked, tasks = int(plan.get("asked") or 0), int(plan.get("tasks") or 0)
    if not asked or tasks == asked:
        return ""
    budgets, pairs = plan.get("budgets") or {}, plan.get("pairs") or {}
    if tasks < asked and budgets and all(budgets[c] >= pairs.get(c, 0) for c in budgets if budgets[c]):
        return (f"{tasks:,} people's tasks, not the {asked:,} asked: the strata with weight hold only {tasks:,} "
                "pairs, and every one is a task")
    if plan.get("design") == BY_ANSWERS:
        return (f"{tasks:,} people's tasks, not exactly the {asked:,} asked: in each cell of the model's answers "
                "people judge a fixed number of the cell's draws"
                + (" (in a census stratum, draws ∝ pair weight)" if plan.get("census_draws") else "")
                + ", as many as make the cell's share of pairs expected; a pair drawn more than once is one task, so "
                f"the pairs come out near the share, not exactly on it (drawing until exactly {asked:,} pairs would "
                "bias the estimate towards pairs drawn often)")
    if tasks > asked:
        return (f"{tasks:,} people's tasks, more than the {asked:,} asked: every earlier task stays a task "
                "(--extend), also in a stratum whose share is now smaller")
    return f"{tasks:,} people's tasks, not the {asked:,} asked: a stratum has fewer pairs than its share"


# ------------------------------------------------------------- the design by the model's answers
#: A plan whose people's tasks were chosen after a model judged the drawn pairs, within each unit
#: by the model's answer (:func:`plan_by_answers`); a plan made at draw time has no ``design`` key.
BY_ANSWERS = "by the model's answers"
#: The model's answers a unit is split by; a pair the model did not answer is in the cell "none".
ANSWER_CELLS = ("same", "different", "none")


def cell_name(unit: str, answer: str | None, split: bool) -> str:
    """The cell of a pair of ``unit`` the model answered ``answer``: ``unit|answer`` when the unit is
    ``split`` by the model's answers, else the unit itself."""
    if not split:
        return unit
    return f"{unit}|{answer if answer in ('same', 'different') else 'none'}"


class Cells(dict):
    """``{pair_id: cell}`` of a design by the model's answers (:func:`plan_by_answers`), with what
    says which draws are the people's: ``drawn`` (``{cell: {pair_id: times}}``, cells of census strata
    whose people's draws are draws ∝ pair weight, :func:`census_draws`), else each draw's priority
    against its cell's threshold (``thresholds``, ``seed``; ``counts``: each pair's draws)."""

    def __init__(self, mapping: dict, drawn: dict | None = None, *, thresholds: dict | None = None,
                 seed: int = 0, counts: dict | None = None):
        super().__init__(mapping)
        self.drawn = drawn or {}
        self.thresholds = thresholds or {}
        self.seed = seed
        self.counts = counts or {}

    def selected(self, pair_id: str, i: int) -> bool:
        """Whether the ``i``-th draw of the pair is one of the people's draws."""
        c = self.get(pair_id)
        if c in self.drawn:
            return pair_id in self.drawn[c]
        return draw_priority(self.seed, pair_id, i) <= self.thresholds.get(c, -1.0)

    def is_task(self, pair_id: str) -> bool:
        """Whether people judge the pair (one of its draws is theirs)."""
        return any(self.selected(pair_id, i) for i in range(self.counts.get(pair_id, 1)))


def census_weights(draws: pa.Table, meta: dict) -> dict:
    """``{pair_id: pair weight}`` of the pairs of census strata (listed once with their weight)."""
    if "pair_weight" not in draws.column_names or "stratum" not in draws.column_names or not draws.num_rows:
        return {}
    census = set(meta.get("census") or ())
    return {p: float(w) for p, w, c in zip(draws.column("pair_id").to_pylist(), draws.column("pair_weight").to_pylist(),
                                           draws.column("stratum").to_pylist()) if w is not None and c in census}


def draws_for(want: int, probabilities) -> int:
    """The number of draws with replacement (``probabilities``: each item's chance per draw) whose
    expected distinct items are nearest ``want`` (at most 20·``want``). A number fixed
    before any draw (never "until ``want`` distinct", a rule under which the draws' mean is biased),
    so the draws are a sample of fixed size."""
    q = np.asarray(probabilities, dtype=float)
    want = min(int(want), int((q > 0).sum()))
    k, e, before = 0, 0.0, 0.0
    while want > 0 and e < want - 0.5 and k < 20 * want:
        k += 1
        before, e = e, float((1.0 - (1.0 - q) ** k).sum())
    return k - 1 if k > 1 and want - before < e - want else k


def draws_without(want: int, times: list) -> int:
    """The size of a simple random sample (without replacement) of a cell's draws whose expected
    distinct pairs are nearest ``want``; ``times``: each pair's draws. A pair drawn m times of N
    is missed by L draws with chance C(N − m, L)/C(N, L)."""
    m = np.asarray(times, dtype=float)
    n = float(m.sum())
    want = min(int(want), len(m))
    miss = np.ones(len(m))
    L, e, before = 0, 0.0, 0.0
    while want > 0 and e < want - 1e-9 and L < n:
        miss *= np.clip((n - m - L) / (n - L), 0.0, 1.0)
        L += 1
        before, e = e, float((1.0 - miss).sum())
    return L - 1 if L > 1 and want - before < e - want else L


def census_draws(weights: dict, seed: int, cell: str, *, want: int = 0, at_least: int = 0) -> tuple[int, dict]:
    """The people's draws in a cell of a census stratum: draws ∝ pair weight (with replacement, each
    from a hash of the seed, the cell and its number, over the pairs in id order), as many as make
    ``want`` distinct pairs expected (:func:`draws_for`) and at least ``at_least``. Returns the draws
    made and ``{pair_id: times drawn}``: a people-only sample of the cell, as ``abcde pairs`` draws
    ∝ u_ij, so the cell's total is ``W·mean(y)`` over the draws (Hansen–Hurwitz)."""
    ids = sorted(weights)
    if not ids:
        return 0, {}
    cum = np.cumsum([weights[p] for p in ids])
    total = float(cum[-1])
    n_draws = max(draws_for(want, [weights[p] / total for p in ids]) if want else 0, int(at_least))
    times: dict = {}
    k = 0
    while k < n_draws:
        h = hashlib.sha256(f"abcde.people.census|{int(seed)}|{cell}|{k}".encode()).digest()
        u = (int.from_bytes(h[:8], "big") >> 11) / float(1 << 53)
        i = min(int(np.searchsorted(cum, u * total, side="right")), len(ids) - 1)
        times[ids[i]] = times.get(ids[i], 0) + 1
        k += 1
    return k, times


def people_cells(draws: pa.Table, meta: dict) -> Cells | None:
    """``{pair_id: cell}`` of a sample whose people's tasks were chosen by the model's answers
    (:func:`plan_by_answers`); None for any other sample. The cells are the design's: the model's
    answers as they were when the tasks were chosen (kept in the plan), whatever it answers later."""
    plan = meta.get(META_KEY) or {}
    if plan.get("design") != BY_ANSWERS:
        return None
    return design_cells(units_of(draws, meta), plan, design_answers(meta), int(meta["seed"]),
                        census_weights(draws, meta) if plan.get("census_draws") else {}, draw_counts(draws))


def design_cells(units: dict, plan: dict, answers: dict, seed: int, pair_weights: dict, counts: dict) -> Cells:
    """Each pair's cell in a plan by the model's ``answers`` (:func:`plan_by_answers`), with the
    people's draws of its census cells (``pair_weights``: the census strata's pair weights) and
    each pair's draws (``counts``)."""
    split = set(plan.get("split_units") or ())
    cells = {p: cell_name(c, answers.get(p), c in split) for p, c in units.items()}
    drawn = {}
    for cell, k in (plan.get("census_draws") or {}).items():
        drawn[cell] = census_draws({p: pair_weights[p] for p, c in cells.items() if c == cell and p in pair_weights},
                                   seed, cell, at_least=int(k))[1]
    return Cells(cells, drawn, thresholds=plan["thresholds"], seed=seed, counts=counts)


def design_answers(meta: dict) -> dict:
    """``{pair_id: "same" | "different"}``: the model's answers the people's tasks were chosen by
    (:func:`plan_by_answers`; empty for any other plan)."""
    plan = meta.get(META_KEY) or {}
    code = {"s": "same", "d": "different"}
    return {p: code[a] for p, a in (plan.get("answers") or {}).items() if a in code}


def draw_priority(seed: int, pair_id: str, i: int) -> float:
    """The priority of the ``i``-th draw of a pair (in draw order): :func:`priority` for the first,
    so a pair drawn once has its pair's priority."""
    return priority(seed, pair_id if i == 0 else f"{pair_id}#{i}")


def draw_counts(draws: pa.Table) -> dict:
    """``{pair_id: times drawn}`` of a sample's draws."""
    out: dict = {}
    for p in (draws.column("pair_id").to_pylist() if draws.num_rows else []):
        out[p] = out.get(p, 0) + 1
    return out


def plan_by_answers(units: dict, answers: dict, seed: int, budget: int, *, weights: dict | None = None,
                    old: dict | None = None, pair_weights: dict | None = None, draw_counts: dict | None = None) -> dict:
    """The people's tasks chosen after a model judged every drawn pair (active, as in Zrnic & Candès,
    arXiv 2403.03208): each unit's share of ``budget`` (∝ ``weights``, as :func:`plan_people`), then
    within the unit a simple random sample of each *cell*, the unit's pairs the model answered
    "same", "different" or nothing. The estimate is then stratified by cell (the cells' shares of
    the unit are known from the model's answers on every draw), unbiased whatever the model; it is
    as precise as the model separates the pairs people would call same from the others.

    Within a unit the model's "same" and "different" cells get equal shares of the people's tasks
    (Neyman's allocation when the model's errors are symmetric, whatever its accuracy and the unit's
    mix: ``N_a·σ_a = √(p(1 − p)·a(1 − a))`` for both answers), the unanswered cell its share of the
    unit's pairs; at least 2 a cell, at most its pairs. A unit whose share cannot give each of its
    cells 2 tasks is not split (one cell, as :func:`plan_people`).

    In other cells the people's draws are a simple random sample of the cell's *draws* (a pair drawn
    m times has m chances; ``draw_counts``: ``{pair_id: m}``), the draws of lowest priority
    (:func:`draw_priority`), as many as make the cell's share of distinct pairs expected (nearest)
    (:func:`draws_without`; a fixed size, so the sample's mean is unbiased): the cell's mean is then the
    mean over those draws, as the people-only design's over its draws ∝ u_ij; a simple random
    sample of pairs would count a pair drawn ten times as much as one drawn once.

    A cell of a census stratum (``pair_weights``: the pair weight of every pair of the census
    strata) that is not judged whole gets successive draws ∝ pair weight until its share of
    distinct pairs (:func:`census_draws`; ``census_draws`` in the plan: the draws made), as the
    people-only design draws: a simple random sample there would count a light pair as much as a
    heavy one.

    ``answers``: ``{pair_id: "same" | "different"}`` (other pairs: no answer). ``old``: a plan of
    this design from before ``pairs --extend``: its units stay split (or not) as they were and every
    earlier task stays a task (each cell's threshold only rises; pairs drawn since, which the model
    had not answered then, are in their unit's cell "none"). Returns the plan of
    :func:`plan_people` (thresholds per cell) plus ``design``, ``split_units`` and the ``answers``
    it was made from (``"s"``/``"d"``), which :func:`people_cells` reads back."""

    by_unit: dict = {}
    for p, c in units.items():
        by_unit.setdefault(c, []).append(p)
    names = tuple(sorted(by_unit))
    counts = {c: len(by_unit[c]) for c in names}
    score = {c: float((weights or counts).get(c, 0.0)) for c in names}
    unit_budget = allocate(int(budget), score, caps=counts, strata=names)
    thresholds, budgets, cell_pairs, split, drawn = {}, {}, {}, [], {}
    old_t = (old or {}).get("thresholds") or {}
    old_k = (old or {}).get("census_draws") or {}
    pw = pair_weights or {}
    old_split = set((old or {}).get("split_units") or ()) if old else None
    for c in names:
        cells: dict = {}
        for p in by_unit[c]:
            cells.setdefault(cell_name(c, answers.get(p), True), []).append(priority(seed, p))
        if (c in old_split) if old_split is not None else (len(cells) > 1 and unit_budget[c] >= 2 * len(cells)):
            split.append(c)
            answered = sum(len(v) for k, v in cells.items() if not k.endswith("|none"))
            none_share = 1.0 - answered / counts[c]
            sc = {k: (none_share if k.endswith("|none") else
                      (1.0 - none_share) / max(1, sum(1 for x in cells if not x.endswith("|none"))))
                  for k in cells}
            want = allocate(unit_budget[c], sc, caps={k: len(v) for k, v in cells.items()}, strata=tuple(sorted(cells)))
        else:
            cells = {c: [x for v in cells.values() for x in v]}
            want = {c: unit_budget[c]}
        for k, pr in cells.items():
            cell_pairs[k] = len(pr)
            members = [p for p in by_unit[c] if cell_name(c, answers.get(p), c in split) == k]
            if members and all(p in pw for p in members) and (want[k] < len(pr) or k in old_k):
                n_draws, times = census_draws({p: pw[p] for p in members}, seed, k, want=want[k],
                                              at_least=int(old_k.get(k, 0)))
                drawn[k], thresholds[k], budgets[k] = n_draws, -1.0, len(times)
                continue
            # a simple random sample of the cell's draws, of the size that makes its share of distinct pairs
            times = [(draw_counts or {}).get(p, 1) for p in members]
            dr = sorted((draw_priority(seed, p, i), p) for p, m in zip(members, times) for i in range(m))
            size = draws_without(want[k], times)
            tau = dr[size - 1][0] if size else -1.0
            thresholds[k] = max(tau, float(old_t.get(k, -1.0)))
            budgets[k] = len({p for x, p in dr if x <= thresholds[k]})
    wanted = set(split)
    code = {"same": "s", "different": "d"}
    return {"asked": int(budget), "design": BY_ANSWERS, "thresholds": thresholds, "budgets": budgets,
            "pairs": cell_pairs, "tasks": sum(budgets.values()), "split_units": split, "census_draws": drawn,
            "answers": {p: code[a] for p, a in sorted(answers.items()) if a in code and units.get(p) in wanted}}


# ---------------------------------------------------------------------------------- the estimator
@dataclass(frozen=True)
class Part:
    """One prediction-powered mean (or a census total): its value, variance, the variance under its
    interval (floored, see the module docstring), the people's judgements it rests on, the λ of
    each unit, and the people-only variance of the same judgements (what the model is worth)."""

    value: float
    var: float
    ivar: float
    n: int
    lambdas: dict = field(default_factory=dict)
    var_people: float = math.nan

    @staticmethod
    def undefined(n: int = 0) -> "Part":
        return Part(math.nan, math.nan, math.nan, n)


def _var(x: np.ndarray, ddof: int = 1) -> float:
    return float(x.var(ddof=ddof)) if len(x) > ddof else math.nan


def tuned_lambda(y: np.ndarray, f: np.ndarray) -> float:
    """``Cov(y, f) / Var(f)`` on the labeled draws, clipped to [0, 1]; 0 without two labeled draws
    or when the model's values on them do not vary."""
    if len(y) < 2:
        return 0.0
    vf = float(f.var(ddof=1))
    if not vf > 0:
        return 0.0
    c = float(np.cov(y, f, ddof=1)[0, 1])
    return min(max(c / vf, 0.0), 1.0)


def ppi_plus_plus_lambda(lam: float, n: int, n_total: int) -> float:
    """Our ``λ`` (the model's weight in the mean of all ``N`` draws) as PPI++ writes it, for an
    unlabeled set of the ``N − n`` draws people did not judge: ``λ_PPI++ = (1 − n/N)·λ``; its
    tuned value ``Cov/((1 + n/(N − n))·Var f)`` is ours, ``Cov/Var f``, times ``1 − n/N``."""
    return (1.0 - n / n_total) * lam


def _floor(y: np.ndarray) -> float:
    """``p̃(1 − p̃)`` of the people's answers ``|y|`` (0/1 up to the label's sign), ``p̃ = (k + ½)/(n + 1)``
    (Jeffreys' half a success and half a failure): a variance that is never 0."""
    p = (float(np.abs(y).sum()) + 0.5) / (len(y) + 1.0)
    return p * (1.0 - p)


def _residual_floor(yl: np.ndarray, fl: np.ndarray, lam: float, fy: float) -> float:
    """The residual's variance under an interval when the residuals on the people's pairs do not
    vary (or there is one): ``(1 − λ)²`` times the people's
    answers' floor, plus ``λ²`` times the Jeffreys variance of the share of people's pairs the model
    got wrong (``|y − f| ≥ ½``): a model that agreed with every people's judgement so far may still
    be wrong on the pairs people did not judge, so the interval never shrinks to a point."""
    k = float((np.abs(yl - fl) >= 0.5).sum())
    d = (k + 0.5) / (len(yl) + 1.0)
    return (1.0 - lam) ** 2 * fy + lam * lam * d * (1.0 - d)


def _residual_var(r: np.ndarray, pairs) -> tuple[float, int]:
    """The residual's variance per labeled draw, and the number of people's pairs behind it.

    People judge pairs; a pair drawn twice is two draws with one judgement. The labeled draws are
    then clusters (a simple random sample of pairs), and their mean is a ratio estimate: with
    ``e_p = Σ_{k ∈ p} (r_k − r̄)`` per pair, ``Σ e_p² / (n_p − 1)`` over the ``n_p`` pairs, divided by the
    mean draws per pair squared (one draw per pair: the plain ``s²(r)``)."""
    n = len(r)
    e = r - r.mean()
    if pairs is None:
        k, tot = n, e
    else:
        _, inverse = np.unique(np.asarray(pairs, dtype=object).astype(str), return_inverse=True)
        tot = np.bincount(inverse, weights=e)
        k = len(tot)
    if k < 2:
        return math.nan, k
    m = n / k
    return float((tot * tot).sum() / (k - 1)) / (m * m), k


def _fold(pair_id) -> int:
    """A pair's fold (0 or 1) for cross-fitting λ: a hash of its id, independent of every answer."""
    return hashlib.sha256(f"abcde.fold|{pair_id}".encode()).digest()[0] & 1


def fold_lambdas(units) -> dict:
    """``{fold: λ}`` pooled over several units (strata, or a design's classes): per fold, the
    regression of the people's values on the model's, each unit's values centred on its own means,
    clipped to [0, 1]. The λ a unit's fold falls back on when the unit's other fold alone cannot
    tune one (fewer than two people's judgements there, or a model that does not vary on them: a
    nearly pure stratum). ``units``: ``(y, f, labeled, pairs)`` per unit (``pairs`` None: draw k is
    pair k). Each fold's λ uses that fold only, so cross-fitting stays unbiased."""
    cov, var = {0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}
    for y, f, labeled, pairs in units:
        labeled = np.asarray(labeled, dtype=bool)
        idx = np.flatnonzero(labeled)
        if not len(idx):
            continue
        folds = np.array([_fold(p) for p in (np.asarray(pairs, dtype=object)[idx] if pairs is not None else idx)])
        yl, fl = np.asarray(y, dtype=float)[idx], np.asarray(f, dtype=float)[idx]
        for k in (0, 1):
            m = folds == k
            if m.sum() >= 2:
                yc, fc = yl[m] - yl[m].mean(), fl[m] - fl[m].mean()
                cov[k] += float((yc * fc).sum())
                var[k] += float((fc * fc).sum())
    return {k: (min(max(cov[k] / var[k], 0.0), 1.0) if var[k] > 0 else 0.0) for k in (0, 1)}


def _other_lambda(y, f, other, fallback, k) -> float:
    """The λ for fold ``k``: tuned on the other fold's draws ``other``, else the pooled λ of the
    other fold (``fallback``, :func:`fold_lambdas`), else 0."""
    if len(other) >= 2 and float(f[other].var()) > 0:
        return tuned_lambda(y[other], f[other])
    return float(fallback.get(1 - k, 0.0)) if fallback else 0.0


def _cross_fitted(y: np.ndarray, f: np.ndarray, in_g: np.ndarray, labeled: np.ndarray, folds: np.ndarray,
                  fallback: dict | None = None):
    """The cross-fitted estimate of one group: the labeled draws split in two folds by pair; each
    fold's residuals use the λ tuned on the other fold, and its model mean is taken over the draws
    not in the other fold::

        θ̂ = Σ_k (n_k/n) · (mean_k(y) + λ_{−k} · (mean_{g ∖ L_{−k}}(f) − mean_k(f)))

    Given the other fold, a fold's pairs are a simple random sample of the rest of the group, so
    each term is unbiased whatever λ_{−k} is: the estimate is unbiased, even though λ is tuned on
    the data (a λ tuned on the same draws it corrects is not: it would give the model no weight
    exactly when the people's pairs miss a stratum's few "different" ones). Returns the estimate,
    each labeled draw's λ, and the λ of the whole group (shown)."""
    L = in_g & labeled
    n = int(L.sum())
    theta, lam_of = 0.0, np.zeros(n)
    idx = np.flatnonzero(L)
    fl = folds[idx]
    for k in (0, 1):
        mine, other = idx[fl == k], idx[fl != k]
        if not len(mine):
            continue
        lk = _other_lambda(y, f, other, fallback, k)
        rest = in_g.copy()
        rest[other] = False
        c = float(f[rest].mean())
        theta += len(mine) / n * (float(y[mine].mean()) + lk * (c - float(f[mine].mean())))
        lam_of[fl == k] = lk
    return theta, lam_of


def ppi_mean(groups, y, f, labeled, *, lam=None, pairs=None, population: bool = False,
             fallback: dict | None = None, floor_each: bool = True) -> Part:
    """The prediction-powered mean of ``y`` over all draws, post-stratified by ``groups`` (one group:
    the plain mean).

    ``y``: the people's value per draw (read only where ``labeled``); ``f``: the model's value per
    draw (every draw); ``lam``: None (tuned per group, cross-fitted: :func:`_cross_fitted`), a number
    or ``{group: λ}`` (fixed: ``λ·mean(f) + mean_L(y − λ·f)``); ``pairs``: each draw's pair id, when a
    pair can be drawn more than once (the people's tasks are then a random sample of pairs, see
    :func:`_residual_var`; also the folds); ``population``: the "draws" are every pair of a census
    stratum, listed once, so only the people's subsample varies (no first-phase variance);
    ``fallback``: ``{fold: λ}`` pooled over other units (:func:`fold_lambdas`; default: over this
    call's groups) for a group whose other fold cannot tune λ; ``floor_each``: the interval's
    variance is floored group by group (see the module docstring); False (groups are cells of one
    unit, :func:`plan_by_answers`): only when nothing varies, neither within a cell nor between the
    cells' means, and then as one sample of the unit: a cell the model called right is often pure,
    and flooring each such cell widened the intervals far beyond what the spread over seeds shows
    (98–99% coverage)."""
    groups = np.asarray(groups, dtype=object)
    pairs = None if pairs is None else np.asarray(pairs, dtype=object)
    y, f, labeled = np.asarray(y, dtype=float), np.asarray(f, dtype=float), np.asarray(labeled, dtype=bool)
    N = len(groups)
    if N == 0:
        return Part.undefined()
    folds = np.array([_fold(p) for p in (pairs if pairs is not None else range(N))], dtype=np.int8) \
        if lam is None else None
    value, var2, ivar2, var0, n_all = 0.0, 0.0, 0.0, 0.0, 0
    within, iwithin, means, lambdas = 0.0, 0.0, {}, {}
    if lam is None and fallback is None:
        fallback = fold_lambdas([(y, f, labeled & (groups == g), pairs) for g in dict.fromkeys(groups.tolist())
                                 if not labeled[groups == g].all()])  # not the self pairs, known exactly
    for g in dict.fromkeys(groups.tolist()):
        in_g = groups == g
        Ng, L = int(in_g.sum()), in_g & labeled
        yl, fl = y[L], f[L]
        n = len(yl)
        if n == 0:
            return Part.undefined(n_all)
        if lam is None:
            theta, lam_of = _cross_fitted(y, f, in_g, labeled, folds, fallback)
            lambdas[g] = tuned_lambda(yl, fl)  # shown; each fold used the other's
        else:
            lg = lam.get(g, 0.0) if isinstance(lam, dict) else float(lam)
            lam_of = np.full(n, lg)
            theta = lg * float(f[in_g].mean()) + float((yl - lg * fl).mean())
            lambdas[g] = lg
        r = yl - lam_of * fl
        share = Ng / N
        value += share * theta
        means[g] = (share, theta)
        gp = None if pairs is None else pairs[L]
        s2r, k = _residual_var(r, gp)
        s2y0, _ = _residual_var(yl, gp)
        s2y = _var(yl)
        if not math.isfinite(s2y) and (len(set(pairs[in_g].tolist())) == 1 if pairs is not None else Ng == 1):
            s2y = 0.0  # one pair drawn (once or more): its draws do not vary
        # the share of the group's pairs (draws, when every pair is drawn once) people judged
        fpc = 1.0 - (k / len(set(pairs[in_g].tolist())) if pairs is not None else n / Ng)
        var2 += share * share * fpc * s2r / k if fpc > 0 else 0.0
        var0 += share * share * fpc * s2y0 / k if fpc > 0 else 0.0
        fy = max(s2y if math.isfinite(s2y) else 0.0, _floor(yl))
        # A residual that does not vary on the people's pairs: (1 − λ)² of the answers' floor; the
        # model's own error share counts only where nothing else gives the interval width (a census).
        lbar = float(lam_of.mean())
        fr = s2r if math.isfinite(s2r) and s2r > 0 else (
            _residual_floor(yl, fl, lbar, fy) if population else (1.0 - lbar) ** 2 * fy)
        ivar2 += share * share * fpc * fr / k if fpc > 0 else 0.0
        within += share * s2y
        iwithin += share * fy
        n_all += n
    between = 0.0 if population else sum(s * (t - value) ** 2 for s, t in means.values())
    if not floor_each:
        if var2 + within + between > 0:  # the data vary somewhere: no floor
            ivar2, iwithin = var2, within
        else:  # nothing varies: the floor of the unit's people's values as one sample (not cell by cell)
            yl_all = y[labeled]
            fu = _floor(yl_all)
            ivar2 = max(1.0 - n_all / N, 0.0) * fu / max(n_all, 1)
            iwithin = fu
    if population:
        return Part(value, var2, ivar2, n_all, lambdas, var0)
    var1, ivar1 = (within + between) / N, (iwithin + between) / N
    return Part(value, var1 + var2, ivar1 + ivar2, n_all, lambdas, var1 + var0)


def ppi_census_total(w, y, f, labeled, *, lam=None, answers=None, pairs=None, fallback: dict | None = None) -> Part:
    """``Σ w·y`` over a census stratum (every pair once, with its pair weight ``w``; the people's
    pairs a simple random sample of them), as the people-only estimate makes it (the people's
    pairs' weighted mean times ``W = Σ w``) with the model's part added::

        T̂ = λ·Σ w·f + W · Σ_L w·(y − λ·f) / Σ_L w

    (every pair labeled: the exact total). λ tuned is cross-fitted (each fold of the people's pairs
    uses the other's, :func:`_cross_fitted`). Variance of the ratio estimate under simple random
    sampling of the ``P`` pairs: ``P²·(1 − n/P)/n · s²(w·(r − R̂))/w̄²·(W/P)²``; the interval's floor
    is the people's answers' (``answers``: their 0/1, default ``|y|``) Jeffreys variance."""
    w, y, f = np.asarray(w, dtype=float), np.nan_to_num(np.asarray(y, dtype=float)), np.asarray(f, dtype=float)
    labeled = np.asarray(labeled, dtype=bool)
    P = len(w)
    if P == 0:
        return Part(0.0, 0.0, 0.0, 0, {}, 0.0)
    idx = np.flatnonzero(labeled)
    n = len(idx)
    if n == 0:
        return Part.undefined()
    W, F = float(w.sum()), float((w * f).sum())
    if lam is None:
        folds = np.array([_fold(p) for p in (pairs if pairs is not None else range(P))], dtype=np.int8)[idx]
        lam_of = np.zeros(n)
        value = 0.0
        for k in (0, 1):
            mine, other = idx[folds == k], idx[folds != k]
            if not len(mine):
                continue
            lk = _other_lambda(y, f, other, fallback, k)
            lam_of[folds == k] = lk
            r = y[mine] - lk * f[mine]
            value += len(mine) / n * (lk * F + W * float((w[mine] * r).sum() / w[mine].sum()))
        shown = tuned_lambda(y[idx], f[idx])
    else:
        lam_of = np.full(n, float(lam))
        r = y[idx] - lam_of * f[idx]
        value = float(lam) * F + W * float((w[idx] * r).sum() / w[idx].sum())
        shown = float(lam)
    if n == P:
        return Part(float((w * y).sum()), 0.0, 0.0, n, {"census": shown}, 0.0)
    wl = w[idx]
    fpc = 1.0 - n / P
    scale = P * P * fpc / n * (W / P / float(wl.mean())) ** 2

    def s2(v):
        R = float((wl * v).sum() / wl.sum())
        d = wl * (v - R)
        return float((d * d).sum() / (n - 1)) if n > 1 else math.nan

    r = y[idx] - lam_of * f[idx]
    a = np.abs(y if answers is None else np.asarray(answers, dtype=float))[idx]
    floor = _residual_floor(y[idx], f[idx], float(lam_of.mean()), _floor(a)) * float((wl * wl).mean())
    s2r, s2y = s2(r), s2(y[idx])
    ivar_r = s2r if math.isfinite(s2r) and s2r > 0 else floor
    return Part(value, scale * s2r, scale * ivar_r, n, {"census": shown}, scale * s2y)


# ---------------------------------------------------------------------------------- judgements
def model_value(answer: str | None) -> float:
    """The model's share "same" for one pair: 1, 0, or :data:`MODEL_MISSING` (unsure, failed, none)."""
    return 1.0 if answer == "same" else 0.0 if answer == "different" else MODEL_MISSING


def agreement(people: dict, model: dict, pair_ids) -> tuple[int, int]:
    """``(pairs both judged same/different, of which they disagree on)``."""
    both = dis = 0
    for p in pair_ids:
        a, b = people.get(p), model.get(p)
        if a in ("same", "different") and b in ("same", "different"):
            both += 1
            dis += a != b
    return both, dis


def check_human_budget(human_budget, budget=None) -> int | None:
    """``--human-budget``: a positive integer, not above the budget."""
    if human_budget is None:
        return None
    if not isinstance(human_budget, int) or isinstance(human_budget, bool) or human_budget < 1:
        raise InputError(f"The people's budget (--human-budget) must be a positive number of pairs. "
                         f"Got {human_budget!r} instead.")
    if budget is not None and human_budget > budget:
        raise InputError(f"The people's budget (--human-budget {human_budget:,}) is more than the pairs drawn "
                         f"(--budget {budget:,}): people judge a subset of the drawn pairs.")
    return human_budget
