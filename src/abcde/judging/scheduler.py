"""Which pair a rater sees next: the pairs people judge and their strata, each rater's order, the
stratum the next pair comes from, and what ΔPrecision still needs (the scheduler of
:class:`abcde.judging.session.JudgingSession`, which delegates to it).

Order
    Each rater gets their own deterministic random order of the sample's pairs
    (``random.Random("SEED:RATER")``). A pair is *open* for a rater when they have not judged it
    and it still needs a judgement: one for most pairs, two (from different raters) for the
    replicated share. The next pair is the first open one, in the rater's order, of one
    stratum (the strata of a stratified sample — split, merge, intersection+, intersection− —
    or the paper's classes split, merge, intersection), chosen by the judgements so far
    (several raters of one pair: the majority, as in ``abcde quality``):

    1. *First judgements.* A stratum with weight and no usable judgement (same or different)
       yet, the largest weight first; then one with fewer than two (its standard error needs
       two). ΔPrecision is defined once every such stratum has one, so it is defined after as
       many usable judgements as there are strata (3 or 4), and its standard error after twice
       as many. An "unsure" leaves its stratum short, so the next pair comes from that stratum
       again.
    2. *Then the allocation.* With ``adaptive``, the stratum whose next judgement most reduces
       the SE of ΔPrecision (:func:`abcde.quality.stratified.next_stratum`); otherwise as
       sampled: the stratum with the largest ``needed_c / (judged_c + 1/2)`` (judgements it
       needs in all, judgements it has), so that the judgements made so far split over the
       strata as the sample does (Sainte-Laguë, as the budgets were split).

    Only the order changes, never the sample: every pair is judged in the end, and the pairs of
    one stratum judged so far are the first ones of a random order, a random subset of its
    draws (∝ u_ij), which both estimators weight per stratum (the paper's reweights each
    class). The order is a function of the rater, the seed and the judgements in the store, so
    a restarted server shows the same next pair, and an undone pair comes back next.
A name costs nothing
    Anyone can send any rater name to ``/api/state``. A rater exists once they judge: their
    order is kept from then on; for names that have not judged, at most :data:`UNKNOWN_ORDERS`
    orders are kept (least recently used dropped; recomputed alike when asked again), so
    10,000 names that never judge leave the session's memory where it was.
The people's tasks
    With a people's budget (``pairs --human-budget``) people judge the people's tasks only:
    judgements of other pairs recorded by an earlier abcde (kept in the store) are no pair to
    serve and no live judgement here (:meth:`Scheduler.live`,
    :func:`abcde.samples.people_tasks.outside_tasks`).
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter, OrderedDict, defaultdict

from abcde.core.names import METRIC_LABELS
from abcde.quality.stratified import next_stratum, stratum_values
from abcde.samples.judgements import resolve
from abcde.samples.people_tasks import outside_tasks, people_cells, units_of
from abcde.samples.raters import OWNER
from abcde.samples.store import JudgementStore
from abcde.sampling.allocation import pair_class_of_draws, stratum_weights

#: The paper's classes of the pairs that need a judgement (its estimator reweights each).
PAPER_CLASSES = ("split", "merge", "intersection")
USABLE = ("same", "different")
#: Pair orders kept for names that have not judged (a page open before its first judgement, or
#: any name a client sends): least recently used dropped beyond this many.
UNKNOWN_ORDERS = 32


def _resolutions(live) -> dict:
    """``{pair_id: Resolution}`` of live person judgements (in the order made), by the one rule of
    ``abcde quality`` (:func:`abcde.samples.judgements.resolve`): the owner's votes count only while
    they settle a real dispute."""
    votes: dict = defaultdict(list)
    for j in live:
        votes[j.pair_id].append((j.rater == OWNER, j.judgement))
    return {pid: resolve(v) for pid, v in votes.items()}


def _unit(seed, pair_id: str) -> float:
    """A uniform number in [0, 1) from md5(seed:replicate:pair id)."""
    h = hashlib.md5(f"{seed}:replicate:{pair_id}".encode()).hexdigest()
    return int(h[:15], 16) / 16**15


def _and(parts: list[str]) -> str:
    """Words joined as people write them: "a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _agreed(unit: str) -> bool:
    """Whether a stratum (or a cell of one, ``stratum|answer``) is the agreed stratum."""
    return unit == "agreed" or unit.startswith("agreed|")


class Scheduler:
    """What pairs and strata a judging session has, each rater's order, which pair comes next, and
    what ΔPrecision still needs.

    Parameters
    ----------
    store
        The sample's :class:`~abcde.samples.store.JudgementStore`.
    seed, replicate
        The session's settings (stored in the store): the seed of every rater's order, and the share
        of pairs to be judged by two different raters (a pair is replicated when
        md5("seed:replicate:pair id") as a number in [0, 1) is below it).
    estimator
        The sample's estimator (``stratified`` or ``paper``): its strata, or the paper's classes.
    adaptive
        Adaptive Neyman allocation (stratified samples only, checked by the session).
    given_dir
        The sample directory as the user named it (shell-quoted), for commands shown.

    Attributes
    ----------
    pair_ids
        The people's tasks (every pair, or those drawn for people).
    replicated
        The pairs two different raters judge.
    stratum_of, weight
        Each pair's stratum (or class, or a cell of one), and the strata an estimate needs
        judgements in, with their weight ``U_c``.
    pairs_in, needed_in
        Per stratum: pairs to judge, and judgements it needs in all (a replicated pair needs two).
    orders, unknown_orders
        Orders of raters who have judged (a rater exists once they judge: bounded by the store),
        and of at most :data:`UNKNOWN_ORDERS` other names, least recently used first. A name
        costs nothing: any page can ask for any name, and its state is computed, not kept.
    """

    def __init__(self, store: JudgementStore, *, seed, replicate: float, estimator: str, adaptive: bool,
                 given_dir: str):
        self.store, self.seed, self.replicate = store, seed, replicate
        self.estimator, self.adaptive, self.given_dir = estimator, adaptive, given_dir
        # People judge the people's tasks: every pair, or the subset drawn for them (pairs --human-budget).
        self.tasks = store.people_tasks
        self.pair_ids = [p for p in store.pair_ids if not outside_tasks("person", p, self.tasks)]
        self.replicated = {p for p in self.pair_ids if _unit(seed, p) < replicate}
        self.orders: dict[str, list[str]] = {}
        self.unknown_orders: OrderedDict[str, list[str]] = OrderedDict()
        self.stratum_of, self.weight = self.strata()
        self.pairs_in = Counter(self.stratum_of.values())  # pairs to judge per stratum
        self.unit = "stratum" if estimator == "stratified" else "class"
        self.needed_in: Counter = Counter()
        for p in self.pair_ids:
            self.needed_in[self.stratum_of.get(p)] += self.wanted(p)
        self._lock = threading.Lock()

    def strata(self) -> tuple[dict, dict]:
        """Each pair's stratum (stratified samples) or class (the paper's design), and the strata
        an estimate needs judgements in, with their weight ``U_c`` (the exact pair weight total)."""
        d = self.store.sample.draws
        meta = self.store.sample.metadata
        totals = meta.get("pair_totals") or {}
        if not d.num_rows:
            return {}, {}
        pids, need = d.column("pair_id").to_pylist(), d.column("needs_judgement").to_pylist()
        if self.estimator == "stratified":
            names, strata = d.column("stratum").to_pylist(), tuple(meta["budgets"])
        else:
            names, strata = pair_class_of_draws(d), PAPER_CLASSES
        stratum_of = {p: c for p, c, n in zip(pids, names, need) if n and not outside_tasks("person", p, self.tasks)}
        present = set(stratum_of.values())
        if self.estimator == "stratified":  # a stratum with weight needs judgements, even one with no pair drawn
            # (the agreed stratum, no part of ΔPrecision, by its share of the sample: the recall lift's)
            sw = stratum_weights(totals, meta["budgets"])
            weight = {c: sw[c] for c in strata if sw.get(c, 0.0) > 0}
        else:  # the paper's estimator needs one in every class drawn
            weight = {c: float(totals.get(c, 0.0)) for c in strata if c in present}
            if "agreed" in present:  # the agreed pairs beside its draws (the recall lift's): their share
                n = Counter(stratum_of.values())
                weight["agreed"] = sum(weight.values()) * n["agreed"] / max(sum(n.values()) - n["agreed"], 1)
        cells = people_cells(d, meta)
        if cells is not None and not self.adaptive:
            # Tasks chosen by a model's answers: each cell needs judgements (its estimate is the cell's
            # mean), so the cells are served as strata, each with its share of its stratum's weight.
            units = units_of(d, meta)
            size, of_unit = Counter(cells.values()), Counter(units.values())
            unit = {cells[p]: c for p, c in units.items()}  # each cell's stratum
            served = {cells.get(p, c) for p, c in stratum_of.items()}
            weight = {k: weight[unit[k]] * n / of_unit[unit[k]] for k, n in size.items()
                      if unit[k] in weight and k in served}
            stratum_of = {p: cells.get(p, c) for p, c in stratum_of.items()}
        return stratum_of, weight

    def wanted(self, pair_id: str) -> int:
        """Judgements the pair needs: two (from different raters) when replicated, else one."""
        return 2 if pair_id in self.replicated else 1

    def live(self) -> list:
        """The live person judgements the app reads, in the order made: those of the people's tasks
        (one of another pair, recorded by an earlier abcde, is kept in the store but counts nowhere)."""
        return [j for j in self.store.live(source="person") if not outside_tasks("person", j.pair_id, self.tasks)]

    @staticmethod
    def raters_count(live) -> Counter:
        """Per pair, its raters' live judgements (the owner's settling votes are none: a pair is
        judged, and needs judgements, by raters)."""
        return Counter(j.pair_id for j in live if j.rater != OWNER)

    # ------------------------------------------------------------------ order
    def order(self, rater: str, *, judged: bool = False) -> list[str]:
        """The rater's deterministic random order of the pairs (within a stratum, pairs are served in it).

        A function of the seed and the name only, so keeping it is a cache: it is kept for
        raters who have judged (``judged``), and for at most :data:`UNKNOWN_ORDERS` other names
        (least recently used dropped), so that names which never judge take bounded memory."""
        with self._lock:
            ids = self.orders.get(rater)
            if ids is None:
                ids = self.unknown_orders.get(rater)
                if ids is not None:
                    self.unknown_orders.move_to_end(rater)
            if ids is None:
                ids = sorted(self.pair_ids)
                random.Random(f"{self.seed}:{rater}").shuffle(ids)
            if judged:
                self.unknown_orders.pop(rater, None)
                self.orders[rater] = ids
            elif rater not in self.orders:
                self.unknown_orders[rater] = ids
                while len(self.unknown_orders) > UNKNOWN_ORDERS:
                    self.unknown_orders.popitem(last=False)
            return ids

    def next_pair(self, rater: str, live=None) -> str | None:
        """The rater's next pair: the first open pair in their order (not judged by them, still
        needing a judgement) of the stratum :meth:`serve_stratum` chooses; ``None`` when no pair
        is open for them."""
        live = self.live() if live is None else live
        count = self.raters_count(live)
        mine = {j.pair_id for j in live if j.rater == rater}
        first: dict = {}  # stratum -> its first open pair in the rater's order
        for p in self.order(rater, judged=bool(mine)):
            if p not in mine and count[p] < self.wanted(p):
                first.setdefault(self.stratum_of.get(p), p)
        if not first:
            return None
        return first[self.serve_stratum(live, first, count)]

    def serve_stratum(self, live, open_strata, count=None) -> str:
        """Which of ``open_strata`` (strata with a pair open for the rater) the next pair comes from.

        First judgements first: a stratum with weight and no usable judgement yet (largest weight
        first), then one with fewer than two; ΔPrecision's strata before the agreed stratum. Then, with ``adaptive``, :meth:`next_stratum`;
        otherwise the stratum with the largest ``needed_c / (judged_c + 1/2)``, so that the
        judgements split over the strata as the sample does."""
        open_strata = list(open_strata)
        usable = self.usable(live)
        # ΔPrecision's strata first (defined after one judgement each, its SE after two), then the agreed
        # stratum's (the recall lift's): no part of ΔPrecision, it waits its turn.
        for group in (False, True):
            for k in (1, 2):
                short = [c for c in self.weight if c in open_strata and _agreed(c) == group
                         and usable[c] < min(k, self.pairs_in[c])]
                if short:
                    return max(short, key=lambda c: self.weight[c])
        if count is None:
            count = self.raters_count(live)
        judged: Counter = Counter()
        for p, n in count.items():
            if p in self.stratum_of:
                judged[self.stratum_of[p]] += min(n, self.wanted(p))
        if self.adaptive:
            # Adaptive Neyman aims at ΔPrecision, of which the agreed stratum is no part: it keeps its
            # share of the sample's judgements (the recall lift's), the rest go where ΔPrecision gains most.
            agreed = [c for c in open_strata if _agreed(c)]
            if agreed:
                share = sum(self.needed_in[c] for c in agreed) / max(sum(self.needed_in.values()), 1)
                if sum(judged[c] for c in agreed) < share * (sum(judged.values()) + 1):
                    return max(agreed, key=lambda c: self.needed_in[c] / (judged[c] + 0.5))
            c = self.next_stratum(live, set(open_strata) - set(agreed))
            if c in open_strata:
                return c
        return max(open_strata, key=lambda c: (self.needed_in[c] / (judged[c] + 0.5), self.weight.get(c, 0.0)))

    def next_stratum(self, live, remaining) -> str | None:
        """Adaptive Neyman: among strata with pairs left (``remaining``), the one whose next judgement
        most reduces the SE of ΔPrecision, from the judgements so far (several raters of one pair:
        the majority, a tie counts as unsure — as in ``abcde quality``)."""
        by_pair = self.resolved(live)
        totals = {c: u for c, u in self.store.sample.metadata["pair_totals"].items() if c in remaining}
        return next_stratum({"pair_totals": totals}, stratum_values(self.store.sample.draws, by_pair))

    @staticmethod
    def resolved(live) -> dict:
        """One answer per pair from live judgements, in the order made (several raters: the vote rule
        of ``abcde quality``, :func:`abcde.samples.judgements.resolve`, the owner's settling votes
        counted only while they settle a real dispute; a pair with an owner's vote alone is not
        judged)."""
        return {pid: r.answer for pid, r in _resolutions(live).items() if r.answer is not None}

    def usable(self, live) -> Counter:
        """Per stratum: its pairs with a usable answer (same or different, after the vote rule)."""
        out: Counter = Counter()
        for pid, answer in self.resolved(live).items():
            if answer in USABLE and pid in self.stratum_of:
                out[self.stratum_of[pid]] += 1
        return out

    # ------------------------------------------------------------------ what ΔPrecision needs
    def needs(self, live, estimates: dict | None = None) -> dict:
        """What ΔPrecision still needs, from the sample's draws and the judgements so far.

        ``delta_precision``: per stratum with weight and no usable judgement, the one it needs
        (ΔPrecision is undefined until every such stratum has one); ``standard_error``: per
        stratum, the usable judgements it lacks for ΔPrecision's standard error (two, or its one
        pair; the paper's estimator needs no more than for the estimate); ``stuck``: strata short
        of a usable judgement with no pair left open (more pairs must be drawn); ``message``: a
        sentence for the owner while ΔPrecision (or its standard error) is undefined, else None."""
        usable = self.usable(live)
        count = self.raters_count(live)
        open_ = {self.stratum_of.get(p) for p in self.pair_ids if count[p] < self.wanted(p)}
        strata = [c for c in self.weight if not _agreed(c)]  # the agreed stratum is no part of ΔPrecision
        defined = {c: 1 for c in strata if usable[c] < 1}
        if self.estimator == "stratified":  # a standard error needs two (a stratum of one pair: that pair)
            want = {c: 1 if self.pairs_in[c] == 1 else 2 for c in strata}
            se = {c: want[c] - usable[c] for c in strata if usable[c] < want[c]}
        else:
            se = dict(defined)
        stuck = [c for c in se if c not in open_]
        dp = (estimates or {}).get("delta_precision") or {}
        message = None
        name = METRIC_LABELS["delta_precision"]
        if estimates is not None and "unavailable" not in estimates:
            if dp.get("estimate") is None and defined:
                message = f"{name} needs {self.counts(defined)}."
            elif dp.get("estimate") is not None and dp.get("std_err") is None and se:
                message = f"{name}'s standard error needs {self.counts(se, more=True)}."
            if message and stuck:
                message += (f" No pair of the {_and(stuck)} {self.unit} is left to judge: grow the sample with "
                            f"'abcde pairs --extend {self.given_dir} --budget N'.")
        return {"unit": self.unit, "delta_precision": defined, "standard_error": se, "stuck": stuck,
                "message": message}

    def counts(self, short: dict, *, more: bool = False) -> str:
        """The strata ``short`` of usable judgements, largest weight first, as the owner reads them:
        "1 usable judgement (same or different) in the merge stratum and 1 in intersection-"."""
        items = sorted(short.items(), key=lambda kv: -self.weight.get(kv[0], 0.0))
        (c0, n0), rest = items[0], items[1:]
        first = (f"{n0} {'more ' if more else ''}usable judgement{'s' if n0 != 1 else ''} (same or different) "
                 f"in the {c0} {self.unit}")
        return _and([first] + [f"{n} in {c}" for c, n in rest])
