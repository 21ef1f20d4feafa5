"""The people's tasks of a pair sample: which drawn pairs people judge when a model judges them all
(``abcde pairs --budget N --human-budget n``), stored with the sample and read with its files (no
estimator here; the prediction-powered estimates that use them are :mod:`abcde.quality.ppi`'s).

**The design** (``abcde pairs --budget N --human-budget n``). The N drawn pairs are split into
units: the strata of the stratified design, the classes (split, merge, intersection) of the
paper's. Each distinct pair gets a priority ``ρ ∈ [0, 1)`` from a hash of the seed and its pair id;
in unit ``c`` the pairs with ``ρ ≤ τ_c`` are the people's tasks, ``τ_c`` chosen so that unit ``c``
has its share ``n_c`` of ``n`` (∝ its distinct pairs, at least 2). The priorities are independent
uniform draws, so the people's tasks are a simple random sample of each unit's pairs, whatever the
pairs are. ``--extend`` keeps every ``τ_c`` (so every task stays a task) and raises it to reach a
larger ``--human-budget``.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter

import numpy as np
import pyarrow as pa

from abcde.core.names import PEOPLE
from abcde.errors import InputError
from abcde.sampling.allocation import allocate, pair_class_of_draws, stratum_weights


#: Where the people's tasks and their priorities are recorded in a sample's metadata.
META_KEY = "people"


# ---------------------------------------------------------------------------------- the design
@functools.lru_cache(maxsize=1 << 16)  # a plan reads each pair's priority several times
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
    (:meth:`abcde.samples.store.JudgementStore.validate`), and one recorded before it did (kept,
    never deleted) counts nowhere: not in the judging app's progress or estimates, not in
    :func:`abcde.samples.judgements.load_judgements` given the tasks, not for the rule that keeps
    the people's tasks once people have judged (:func:`abcde.quality.people.choose_by_model_answers`).

    >>> outside_tasks("person", "a|b", frozenset({"c|d"})), outside_tasks("model", "a|b", frozenset({"c|d"}))
    (True, False)
    """
    return tasks is not None and source in PEOPLE and pair_id not in tasks


def tasks_in(cells: dict, plan: dict, seed: int) -> frozenset:
    """The people's tasks of a plan: in each cell (or unit) the pairs with priority ``≤ τ``, or
    those drawn (``cells.drawn``, census cells drawn ∝ pair weight)."""
    if isinstance(cells, Cells):
        return cells.tasks()
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

    def tasks(self) -> frozenset:
        """The pairs people judge: those of which :meth:`is_task` holds (written out, for a sample's
        thousands of pairs)."""
        out = []
        seed, drawn, thresholds, counts = self.seed, self.drawn, self.thresholds, self.counts
        for p, c in self.items():
            if c in drawn:
                if p in drawn[c]:
                    out.append(p)
                continue
            tau = thresholds.get(c, -1.0)
            for i in range(counts.get(p, 1)):
                if draw_priority(seed, p, i) <= tau:
                    out.append(p)
                    break
        return frozenset(out)


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
    rest = n - m
    size = 16
    while want > 0 and e < want - 1e-9 and L < n:
        # The next draws' chances of a miss a block at a time: the same products, in the same order,
        # as one draw at a time (row k of the running product is ``miss`` after draw L + k).
        ls = np.arange(L, L + size)
        ls = ls[ls < n]
        rows = np.clip((rest - ls[:, None]) / (n - ls)[:, None], 0.0, 1.0)
        rows[0] *= miss
        rows = np.cumprod(rows, axis=0)
        # each row's sum as a sum of that row alone (numpy sums a row of a C-ordered array pairwise,
        # as it sums the row by itself)
        for k, got in enumerate((1.0 - rows).sum(axis=1).tolist()):
            L += 1
            before, e = e, got
            if not (e < want - 1e-9 and L < n):
                break
        miss = rows[k]
        size = min(2 * size, 512)
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
    prefix = f"abcde.people.census|{int(seed)}|{cell}|"
    u = np.array([(int.from_bytes(hashlib.sha256(f"{prefix}{k}".encode()).digest()[:8], "big") >> 11) / float(1 << 53)
                  for k in range(n_draws)], dtype=float)
    drawn = np.minimum(np.searchsorted(cum, u * total, side="right"), len(ids) - 1)  # each draw's pair
    return n_draws, dict(Counter(ids[i] for i in drawn.tolist()))


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
    census = plan.get("census_draws") or {}
    weighed: dict = {}  # each census cell's pairs with a pair weight, in the order of the cells
    if census:
        for p, c in cells.items():
            if c in census and p in pair_weights:
                weighed.setdefault(c, {})[p] = pair_weights[p]
    for cell, k in census.items():
        drawn[cell] = census_draws(weighed.get(cell, {}), seed, cell, at_least=int(k))[1]
    return Cells(cells, drawn, thresholds=plan["thresholds"], seed=seed, counts=counts)


def design_answers(meta: dict) -> dict:
    """``{pair_id: "same" | "different"}``: the model's answers the people's tasks were chosen by
    (:func:`plan_by_answers`; empty for any other plan)."""
    plan = meta.get(META_KEY) or {}
    code = {"s": "same", "d": "different"}
    return {p: code[a] for p, a in (plan.get("answers") or {}).items() if a in code}


@functools.lru_cache(maxsize=1 << 17)  # a plan and its estimates read each draw's priority several times
def draw_priority(seed: int, pair_id: str, i: int) -> float:
    """The priority of the ``i``-th draw of a pair (in draw order): :func:`priority` for the first,
    so a pair drawn once has its pair's priority."""
    return priority(seed, pair_id if i == 0 else f"{pair_id}#{i}")


def draw_counts(draws: pa.Table) -> dict:
    """``{pair_id: times drawn}`` of a sample's draws."""
    return dict(Counter(draws.column("pair_id").to_pylist() if draws.num_rows else []))


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
    dc = draw_counts or {}
    for c in names:
        cells: dict = {}  # each cell's pairs by the model's answers, in the unit's order
        for p in by_unit[c]:
            cells.setdefault(cell_name(c, answers.get(p), True), []).append(p)
        if (c in old_split) if old_split is not None else (len(cells) > 1 and unit_budget[c] >= 2 * len(cells)):
            split.append(c)
            answered = sum(len(v) for k, v in cells.items() if not k.endswith("|none"))
            none_share = 1.0 - answered / counts[c]
            sc = {k: (none_share if k.endswith("|none") else
                      (1.0 - none_share) / max(1, sum(1 for x in cells if not x.endswith("|none"))))
                  for k in cells}
            want = allocate(unit_budget[c], sc, caps={k: len(v) for k, v in cells.items()}, strata=tuple(sorted(cells)))
        else:
            cells = {c: by_unit[c]}
            want = {c: unit_budget[c]}
        for k, members in cells.items():
            cell_pairs[k] = len(members)
            if members and all(p in pw for p in members) and (want[k] < len(members) or k in old_k):
                n_draws, times = census_draws({p: pw[p] for p in members}, seed, k, want=want[k],
                                              at_least=int(old_k.get(k, 0)))
                drawn[k], thresholds[k], budgets[k] = n_draws, -1.0, len(times)
                continue
            # a simple random sample of the cell's draws, of the size that makes its share of distinct pairs:
            # τ the size-th smallest of its draws' priorities
            times = [dc.get(p, 1) for p in members]
            pr = np.array([draw_priority(seed, p, i) for p, m in zip(members, times) for i in range(m)])
            size = draws_without(want[k], times)
            tau = float(np.partition(pr, size - 1)[size - 1]) if size else -1.0
            thresholds[k] = max(tau, float(old_t.get(k, -1.0)))
            of = np.repeat(np.arange(len(members)), times)  # each draw's pair
            budgets[k] = len(np.unique(of[pr <= thresholds[k]]))
    wanted = set(split)
    return {"asked": int(budget), "design": BY_ANSWERS, "thresholds": thresholds, "budgets": budgets,
            "pairs": cell_pairs, "tasks": sum(budgets.values()), "split_units": split, "census_draws": drawn,
            "answers": _sorted_codes(answers, units, wanted)}


def _sorted_codes(answers: dict, units: dict, wanted: set) -> dict:
    """``{pair_id: "s" | "d"}`` of the answered pairs of the ``wanted`` units, in pair id order (each
    pair once: the ids alone order them)."""
    code = {"same": "s", "different": "d"}
    kept = {p: code[a] for p, a in answers.items() if a in code and units.get(p) in wanted}
    return {p: kept[p] for p in sorted(kept)}


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
