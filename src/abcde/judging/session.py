"""What the judging web app does, without HTTP: which pair a rater sees next, progress,
agreement, live estimates and the verdict.

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
Live estimates
    The store's person judgements are passed (in memory) to
    :func:`abcde.quality.estimate_quality`, the function behind ``abcde quality``, so the
    owner's view shows exactly what ``abcde quality --judgements EXPORT --json`` prints for
    ``abcde judge export --source person``; the verdict is
    :func:`abcde.quality.verdict.verdict` of that result.
Two views
    :meth:`JudgingSession.state` is what a rater sees — progress and their next pair, no
    estimates, agreement or verdict, so that no rater is swayed by them;
    :meth:`JudgingSession.owner_state` is the owner's: progress per rater, the estimates with
    95% intervals, what ΔPrecision still needs while undefined, agreement, the stop rule and
    the verdict.
One's own judgements
    :meth:`JudgingSession.mine` lists a rater's live judgements (the latest answer of each pair
    they judged), :meth:`JudgingSession.my_judgement` opens one with its history, and
    :meth:`JudgingSession.change` changes it: a new judgement that supersedes the old one
    (:meth:`abcde.samples.store.JudgementStore.change`; the old row is kept, withdrawn). The
    estimates read live judgements only, so they use each rater's latest answer per pair.
Settling
    Pairs whose raters disagree so that the vote rule ties (two raters: same and different, or
    one of them unsure; :func:`abcde.samples.judgements.disputed`) wait in the owner's queue
    (:meth:`JudgingSession.settle_state`). The owner's settling answer
    (:meth:`JudgingSession.settle`) is recorded as one more person judgement, by the rater
    :data:`~abcde.samples.raters.OWNER`, and counts as one more vote under the vote rule of
    ``abcde quality`` while it settles a real dispute (:func:`abcde.samples.judgements.resolve`,
    the one rule both read): the raters' votes tie, and every one of them was there when the
    owner voted. With two raters split, a same or different decides the pair 2 to 1; a can't-tell
    leaves the tie (unsure). When a rater undoes or changes so the raters no longer tie, the
    owner's vote stays (nothing is deleted) but is inert: the pair is what the raters' votes make
    it, needs a rater again if it is short of judgements, and is listed apart (``inert``). A
    dispute made again of the votes the owner saw is settled by the owner's vote again; one with a
    vote the owner has not seen waits again (the earlier vote shown), and the owner's answer, the
    same one too, is a new vote. So every pair is waiting, settled or not disputed, never lost.
    Nothing of the raters' judgements changes, the export carries the owner's votes like any
    other, and ``abcde quality`` on it gives the owner's view's estimates. Agreement (kappa) is
    computed without the owner's votes: they are cast only where raters disagree; no count of
    judgements a pair has or needs includes them.
The people's tasks
    With a people's budget (``pairs --human-budget``) people judge the people's tasks only: the
    store refuses a person's judgement, change or settling vote of another pair
    (:class:`~abcde.samples.store.NotATaskError`, a 404 over HTTP), and judgements of other pairs
    recorded by an earlier abcde (kept in the store) count in no progress, queue, agreement or
    estimate here (:meth:`JudgingSession._live`, :func:`abcde.samples.people_tasks.outside_tasks`); their
    rater still finds them in their own list (:meth:`JudgingSession.mine`), to open, not to change.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import shlex
import sys
import threading
import traceback
from collections import Counter, OrderedDict, defaultdict

import pyarrow as pa

from abcde.core.names import METRIC_LABELS
from abcde.errors import InputError
from abcde.judging.agreement import agreement
from abcde.quality.estimate import estimate_quality
from abcde.samples.invites import InviteBook
from abcde.samples.judgements import INERT, SETTLED, WAITING, resolve
from abcde.samples.people_tasks import outside_tasks, people_cells, units_of
from abcde.samples.sample_dir import shown_columns
from abcde.samples.raters import OWNER, check_rater
from abcde.samples.store import KEEP, JudgementStore, NotJudgedError
from abcde.quality.stratified import next_stratum, stratum_values
from abcde.quality.verdict import verdict as quality_verdict
from abcde.sampling.allocation import pair_class_of_draws, stratum_weights
from abcde.util import display

#: The paper's classes of the pairs that need a judgement (its estimator reweights each).
PAPER_CLASSES = ("split", "merge", "intersection")
USABLE = ("same", "different")
#: Pair orders kept for names that have not judged (a page open before its first judgement, or
#: any name a client sends): least recently used dropped beyond this many.
UNKNOWN_ORDERS = 32
#: A rater's own judgements listed at once (:meth:`JudgingSession.mine`; ``offset`` pages on).
MINE_PAGE = 20
#: Pairs of the settle queue listed at once (the queue's length is given in full).
SETTLE_PAGE = 100
#: Values of each item in a pair's summary (a rater's list), and its length in characters.
SUMMARY_VALUES, SUMMARY_CHARS = 3, 60


class NothingToSettleError(InputError):
    """The owner tried to settle a pair whose raters' votes do not tie (or that fewer than two raters judged)."""


def check_person(rater) -> str:
    """A person's rater name: :func:`abcde.samples.raters.check_rater`, the one check, which refuses
    :data:`~abcde.samples.raters.OWNER` (the name the owner's settling votes carry) and every name
    that reads as it ('Owner ', 'owner.', 'ＯＷＮＥＲ', …)."""
    return check_rater(rater)


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


def _display(v):
    """An attribute value as the page shows it: text, or ``None`` for a missing value."""
    return None if v is None else str(v)


def _and(parts: list[str]) -> str:
    """Words joined as people write them: "a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _agreed(unit: str) -> bool:
    """Whether a stratum (or a cell of one, ``stratum|answer``) is the agreed stratum."""
    return unit == "agreed" or unit.startswith("agreed|")


class JudgingSession:
    """The judging app's state over one pair sample directory.

    Parameters
    ----------
    sample_dir
        A directory written by ``abcde pairs``.
    seed
        Seed of every rater's random order (stored on first use; default 0).
    replicate
        Share of pairs, in [0, 1], to be judged by two different raters (stored on
        first use; default 0). Agreement (Cohen's and Fleiss' kappa) is reported on them.
    target_width
        Optional target width of ΔPrecision's 95% interval; once reached the owner's view
        says the judging can stop.
    hide
        Item attributes not to show (e.g. a ground-truth column), besides what is never shown:
        the weight, the columns hidden when the pairs were drawn (``pairs --hide``) and the
        columns oracles judged by (the blind rule, :func:`abcde.samples.sample_dir.shown_columns`).
    show_ids
        Show the item ids too (they may give the answer away, e.g. FEBRL's
        ``rec-1-org`` / ``rec-1-dup-0``).
    show_raters
        Show every rater's name in the progress and agreement (default: a rater sees their own
        name and the others as "rater 1", "rater 2", … in the order they first judged).
    adaptive
        Adaptive Neyman allocation (stratified samples only): after the first judgements of
        every stratum, the next pair comes from the stratum whose next judgement most reduces
        the SE of ΔPrecision (:func:`abcde.quality.stratified.next_stratum`, on the judgements
        so far); within a stratum, the rater's random order. Judgements then approach
        ``n_c ∝ U_c·σ_c``; stop at ``target_width``. Draw a larger budget than you mean to
        judge so each stratum has pairs to spare.
    """

    def __init__(self, sample_dir, *, seed: int | None = None, replicate: float | None = None,
                 target_width: float | None = None, hide=(), show_ids: bool = False, adaptive: bool = False,
                 show_raters: bool = False):
        if replicate is not None and not (0 <= replicate <= 1):
            raise InputError(f"The replicated share must be in [0, 1]. Got {replicate} instead.")
        if target_width is not None and not target_width > 0:
            raise InputError(f"The target interval width must be positive. Got {target_width} instead.")
        self.store = JudgementStore(sample_dir)
        self.sample_dir = self.store.sample.path
        self.given_dir = shlex.quote(os.fspath(sample_dir))  # as the user named it, for commands shown
        settings = self.store.settings(seed=seed, replicate=replicate)
        self.seed, self.replicate = settings["seed"], settings["replicate"]
        self.target_width = target_width
        items = self.store.sample.items
        attrs = [c for c in items.column_names if c != "item_id"]
        self.columns = shown_columns(attrs, self.store.hidden_columns(hide))
        self.show_ids = show_ids or self.store.sample.show_ids
        self.show_raters = show_raters
        self.items = {r["item_id"]: r for r in items.to_pylist()}
        # People judge the people's tasks: every pair, or the subset drawn for them (pairs --human-budget).
        self.tasks = self.store.people_tasks
        self.pair_ids = [p for p in self.store.pair_ids if not outside_tasks("person", p, self.tasks)]
        self.replicated = {p for p in self.pair_ids if _unit(self.seed, p) < self.replicate}
        #: Orders of raters who have judged (a rater exists once they judge: bounded by the store),
        #: and of at most :data:`UNKNOWN_ORDERS` other names, least recently used first. A name
        #: costs nothing: any page can ask for any name, and its state is computed, not kept.
        self._orders: dict[str, list[str]] = {}
        self._unknown_orders: OrderedDict[str, list[str]] = OrderedDict()
        meta = self.store.sample.metadata
        self.estimator = meta.get("estimator", "paper")
        if adaptive and self.estimator != "stratified":
            raise InputError("Adaptive allocation needs a stratified pair sample ('abcde pairs --estimator "
                             f"stratified'); {self.sample_dir} was drawn with the {self.estimator!r} estimator.")
        self.adaptive = adaptive
        self._stratum_of, self._weight = self._strata()
        self._pairs_in = Counter(self._stratum_of.values())  # pairs to judge per stratum
        self.unit = "stratum" if self.estimator == "stratified" else "class"
        #: Judgements each stratum needs in all (a replicated pair needs two).
        self._needed_in: Counter = Counter()
        for p in self.pair_ids:
            self._needed_in[self._stratum_of.get(p)] += self._wanted(p)
        self._lock = threading.Lock()
        self._cache: tuple | None = None  # (store version, QualityResult or None, its dict, the verdict's dict)

    def _strata(self) -> tuple[dict, dict]:
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

    def _wanted(self, pair_id: str) -> int:
        """Judgements the pair needs: two (from different raters) when replicated, else one."""
        return 2 if pair_id in self.replicated else 1

    def _live(self) -> list:
        """The live person judgements the app reads, in the order made: those of the people's tasks
        (one of another pair, recorded by an earlier abcde, is kept in the store but counts nowhere)."""
        return [j for j in self.store.live(source="person") if not outside_tasks("person", j.pair_id, self.tasks)]

    @staticmethod
    def _raters_count(live) -> Counter:
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
            ids = self._orders.get(rater)
            if ids is None:
                ids = self._unknown_orders.get(rater)
                if ids is not None:
                    self._unknown_orders.move_to_end(rater)
            if ids is None:
                ids = sorted(self.pair_ids)
                random.Random(f"{self.seed}:{rater}").shuffle(ids)
            if judged:
                self._unknown_orders.pop(rater, None)
                self._orders[rater] = ids
            elif rater not in self._orders:
                self._unknown_orders[rater] = ids
                while len(self._unknown_orders) > UNKNOWN_ORDERS:
                    self._unknown_orders.popitem(last=False)
            return ids

    def next_pair(self, rater: str, live=None) -> str | None:
        """The rater's next pair: the first open pair in their order (not judged by them, still
        needing a judgement) of the stratum :meth:`serve_stratum` chooses; ``None`` when no pair
        is open for them."""
        live = self._live() if live is None else live
        count = self._raters_count(live)
        mine = {j.pair_id for j in live if j.rater == rater}
        first: dict = {}  # stratum -> its first open pair in the rater's order
        for p in self.order(rater, judged=bool(mine)):
            if p not in mine and count[p] < self._wanted(p):
                first.setdefault(self._stratum_of.get(p), p)
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
                short = [c for c in self._weight if c in open_strata and _agreed(c) == group
                         and usable[c] < min(k, self._pairs_in[c])]
                if short:
                    return max(short, key=lambda c: self._weight[c])
        if count is None:
            count = self._raters_count(live)
        judged: Counter = Counter()
        for p, n in count.items():
            if p in self._stratum_of:
                judged[self._stratum_of[p]] += min(n, self._wanted(p))
        if self.adaptive:
            # Adaptive Neyman aims at ΔPrecision, of which the agreed stratum is no part: it keeps its
            # share of the sample's judgements (the recall lift's), the rest go where ΔPrecision gains most.
            agreed = [c for c in open_strata if _agreed(c)]
            if agreed:
                share = sum(self._needed_in[c] for c in agreed) / max(sum(self._needed_in.values()), 1)
                if sum(judged[c] for c in agreed) < share * (sum(judged.values()) + 1):
                    return max(agreed, key=lambda c: self._needed_in[c] / (judged[c] + 0.5))
            c = self.next_stratum(live, set(open_strata) - set(agreed))
            if c in open_strata:
                return c
        return max(open_strata, key=lambda c: (self._needed_in[c] / (judged[c] + 0.5), self._weight.get(c, 0.0)))

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
            if answer in USABLE and pid in self._stratum_of:
                out[self._stratum_of[pid]] += 1
        return out

    def needs(self, live, estimates: dict | None = None) -> dict:
        """What ΔPrecision still needs, from the sample's draws and the judgements so far.

        ``delta_precision``: per stratum with weight and no usable judgement, the one it needs
        (ΔPrecision is undefined until every such stratum has one); ``standard_error``: per
        stratum, the usable judgements it lacks for ΔPrecision's standard error (two, or its one
        pair; the paper's estimator needs no more than for the estimate); ``stuck``: strata short
        of a usable judgement with no pair left open (more pairs must be drawn); ``message``: a
        sentence for the owner while ΔPrecision (or its standard error) is undefined, else None."""
        usable = self.usable(live)
        count = self._raters_count(live)
        open_ = {self._stratum_of.get(p) for p in self.pair_ids if count[p] < self._wanted(p)}
        strata = [c for c in self._weight if not _agreed(c)]  # the agreed stratum is no part of ΔPrecision
        defined = {c: 1 for c in strata if usable[c] < 1}
        if self.estimator == "stratified":  # a standard error needs two (a stratum of one pair: that pair)
            want = {c: 1 if self._pairs_in[c] == 1 else 2 for c in strata}
            se = {c: want[c] - usable[c] for c in strata if usable[c] < want[c]}
        else:
            se = dict(defined)
        stuck = [c for c in se if c not in open_]
        dp = (estimates or {}).get("delta_precision") or {}
        message = None
        name = METRIC_LABELS["delta_precision"]
        if estimates is not None and "unavailable" not in estimates:
            if dp.get("estimate") is None and defined:
                message = f"{name} needs {self._counts(defined)}."
            elif dp.get("estimate") is not None and dp.get("std_err") is None and se:
                message = f"{name}'s standard error needs {self._counts(se, more=True)}."
            if message and stuck:
                message += (f" No pair of the {_and(stuck)} {self.unit} is left to judge: grow the sample with "
                            f"'abcde pairs --extend {self.given_dir} --budget N'.")
        return {"unit": self.unit, "delta_precision": defined, "standard_error": se, "stuck": stuck,
                "message": message}

    def _counts(self, short: dict, *, more: bool = False) -> str:
        """The strata ``short`` of usable judgements, largest weight first, as the owner reads them:
        "1 usable judgement (same or different) in the merge stratum and 1 in intersection-"."""
        items = sorted(short.items(), key=lambda kv: -self._weight.get(kv[0], 0.0))
        (c0, n0), rest = items[0], items[1:]
        first = (f"{n0} {'more ' if more else ''}usable judgement{'s' if n0 != 1 else ''} (same or different) "
                 f"in the {c0} {self.unit}")
        return _and([first] + [f"{n} in {c}" for c, n in rest])

    def pair_view(self, pair_id: str) -> dict:
        """Both items' shown attributes side by side (values as text), differing ones marked."""
        t = self.store.task_by_pair[pair_id]
        a, b = self.items.get(t["item_a"], {}), self.items.get(t["item_b"], {})
        rows = []
        for c in self.columns:
            va, vb = a.get(c), b.get(c)
            rows.append({"name": c, "a": _display(va), "b": _display(vb), "differs": va != vb})
        view = {"pair_id": pair_id, "attributes": rows, "replicated": pair_id in self.replicated}
        if self.show_ids:
            view["ids"] = [str(t["item_a"]), str(t["item_b"])]
        return view

    # ------------------------------------------------------------------ estimates and verdict
    def _quality(self) -> tuple:
        """``(QualityResult or None, its dict, the verdict's dict or None)`` of the store's person
        judgements, computed once per store version."""
        version = self.store.version()
        with self._lock:
            if self._cache and self._cache[0] == version:
                return self._cache[1:]
        # People's judgements, and a model's when one judged the sample (then prediction-powered); the
        # people's of their tasks only (one of another pair, recorded by an earlier abcde, counts nowhere).
        person = self.store.to_table(source="person")
        if self.tasks is not None:
            person = person.filter(pa.array([not outside_tasks("person", p, self.tasks)
                                             for p in person.column("pair_id").to_pylist()], pa.bool_()))
        model = self.store.to_table(source="model") if person.num_rows else None
        tables = [t for t in (person, model) if t is not None and t.num_rows]
        result, verdict_d = None, None
        try:  # in memory: judgements are never copied to a temporary file (one a crash would leave behind)
            # (JaccardDistance's good and bad parts would read the inputs again: not on every judgement)
            result = estimate_quality(self.sample_dir, tables, distances=False)
            est = result.to_dict()
        except Exception as exc:  # the app must keep collecting judgements even if an estimator fails
            traceback.print_exc(file=sys.stderr)
            result, est = None, {"unavailable": f"the estimator failed: {type(exc).__name__}: {exc}"}
        if result is not None:
            try:
                verdict_d = quality_verdict(result).to_dict()
            except Exception as exc:  # the estimates still show
                traceback.print_exc(file=sys.stderr)
                verdict_d = {"unavailable": f"the verdict failed: {type(exc).__name__}: {exc}"}
        with self._lock:
            self._cache = (version, result, est, verdict_d)
        return result, est, verdict_d

    def estimates(self) -> dict:
        """``estimate_quality(...).to_dict()`` on the store's person judgements (cached until the store
        changes); ``{"unavailable": why}`` if the estimator failed."""
        return self._quality()[1]

    def quality(self):
        """The :class:`abcde.quality.result.QualityResult` behind :meth:`estimates` (None if it failed)."""
        return self._quality()[0]

    def verdict(self) -> dict | None:
        """The verdict on :meth:`quality` (:func:`abcde.quality.verdict.verdict`), as its ``to_dict()``:
        ``{"verdict": text, "sentences": [...], "facts": {...}}``; None when the estimator failed,
        ``{"unavailable": why}`` when the verdict did."""
        return self._quality()[2]

    # ------------------------------------------------------------------ state
    def aliases(self, live, rater: str | None) -> dict:
        """How raters are named to ``rater``: themselves by name, the others by name only with
        ``show_raters``, else as "rater 1", "rater 2", … (in the order they first judged). To the owner
        (``rater`` None), a rater the owner invited by name (``judge serve --raters``, an invite link,
        revoked or not) is named as invited: the owner gave that name."""
        alias: dict = {}
        invited = {i.name for i in InviteBook(self.store).invites() if i.role == "rater"} if rater is None else set()
        n = 0
        for j in live:
            if j.rater not in alias:
                if j.rater == OWNER:  # the owner's settling votes: a role, not a person's name
                    alias[j.rater] = OWNER
                    continue
                if j.rater in invited:
                    alias[j.rater] = j.rater
                    continue
                n += 1
                alias[j.rater] = j.rater if self.show_raters or j.rater == rater else f"rater {n}"
        return alias

    @staticmethod
    def _aliased(ag: dict, alias: dict) -> dict:
        return {**ag, "cohen": [{**c, "raters": [alias.get(r, r) for r in c["raters"]]} for c in ag.get("cohen", [])]}

    def _progress(self, live) -> dict:
        count = self._raters_count(live)
        done = sum(min(count[p], self._wanted(p)) for p in self.pair_ids)
        needed = len(self.pair_ids) + len(self.replicated)
        return {
            "ok": True,
            "sample_id": self.store.meta["sample_id"],
            "pairs": len(self.pair_ids),
            "budget": self.store.meta["budget"],
            "replicated_pairs": len(self.replicated),
            "needed_judgements": needed,
            "judgements": sum(count.values()),  # the raters' (the owner's settling votes are not needed ones)
            "judged_pairs": len(count),
            "all_judged": done >= needed,
        }

    def state(self, rater: str | None) -> dict:
        """What a rater's page shows: progress and ``rater``'s next pair (``None``: progress only).

        No estimate, agreement, stop rule or verdict: raters judge without seeing numbers that
        could sway them (those are in :meth:`owner_state`)."""
        if rater is not None:
            check_person(rater)
        live = self._live()
        d = self._progress(live)
        if rater is not None:
            nxt = self.next_pair(rater, live)
            d["rater"] = rater
            d["rater_judgements"] = sum(1 for j in live if j.rater == rater)
            d["can_undo"] = d["rater_judgements"] > 0
            d["next"] = self.pair_view(nxt) if nxt else None
        return d

    def owner_state(self) -> dict:
        """What the owner's view shows: progress overall and per rater, the live estimates with 95%
        intervals, what ΔPrecision still needs while undefined, agreement, the stop rule
        (``target_width``), what to do when the pairs run out, and the verdict. Raters are named as
        :meth:`aliases` names them for nobody in particular ("rater 1", … unless ``show_raters``)."""
        live = self._live()
        alias = self.aliases(live, None)
        d = self._progress(live)
        est, verdict_d = self.estimates(), self.verdict()
        dp = est.get("delta_precision") or {}
        width = (dp["ci_high"] - dp["ci_low"]) if dp.get("ci_low") is not None else None
        per: dict = {}
        for j in live:
            r = per.setdefault(alias[j.rater], {"rater": alias[j.rater], "judgements": 0, **dict.fromkeys(
                ("same", "different", "unsure"), 0), "last_at": None})
            r["judgements"] += 1
            r[j.judgement] += 1
            r["last_at"] = j.created_at
        d.update({
            "raters": sorted(per),
            "rater_progress": list(per.values()),
            "settings": {"seed": self.seed, "replicate": self.replicate, "target_width": self.target_width,
                         "allocation": "adaptive Neyman" if self.adaptive else "as sampled"},
            "estimates": est,
            "needs": self.needs(live, est),
            "ci_width": width,
            "can_stop": bool(self.target_width is not None and width is not None and width <= self.target_width),
            "more_pairs": self.more_pairs(width, d["judged_pairs"]),
            # the owner's settling votes are cast only where raters disagree: not evidence of agreement
            "agreement": self._explained(self._aliased(agreement([j for j in live if j.rater != OWNER]), alias)),
            "verdict": verdict_d,
        })
        queue = self._disputes(live)
        d["settle"] = {"waiting": len(queue[WAITING]), "settled": len(queue[SETTLED])}
        d["next_step"] = self.next_step(d)
        return d

    @staticmethod
    def _explained(ag: dict) -> dict:
        """Agreement with the reason beside each kappa that is undefined (``fleiss_note``, each Cohen
        row's ``note``), so that no "n/a" stands without one."""
        ag = dict(ag)
        if ag.get("fleiss_kappa") is None:
            ag["fleiss_note"] = ("no pair is judged by two raters yet" if not ag.get("replicated_pairs") else
                                 "every rating of the pairs judged twice is the same answer, so agreement by chance "
                                 "is certain and kappa is undefined")
        rows = []
        for c in ag.get("cohen", []):
            c = dict(c)
            if c.get("cohen_kappa") is None:
                c["note"] = (f"both gave one same answer on all {c['pairs']} pair{'s' * (c['pairs'] != 1)} they share: "
                             "agreement by chance is certain, so kappa is undefined")
            rows.append(c)
        ag["cohen"] = rows
        return ag

    def next_step(self, d: dict) -> dict | None:
        """What the owner does once every pair has its judgements (None before, or while "more
        pairs" says how to grow the sample): settle the pairs waiting, then ``abcde quality DIR``."""
        if not d["all_judged"] or d.get("more_pairs"):
            return None
        command = f"abcde quality {self.given_dir}"
        waiting = d["settle"]["waiting"]
        first = (f"{waiting} pair{'s' * (waiting != 1)} where raters disagree {'wait' if waiting != 1 else 'waits'} "
                 "to be settled (until then each counts as can't tell); then " if waiting else "")
        return {"command": command, "settle_first": waiting,
                "message": f"Every pair has the judgements it needs. Next: {first}run this (the server may keep "
                           "running; the judgements stay in the store) for these estimates and the verdict in the "
                           "terminal, --json for a file:"}

    # ------------------------------------------------------------------ a rater's own judgements
    def summary(self, pair_id: str) -> list[str]:
        """Each item of a pair in a few words (its first :data:`SUMMARY_VALUES` shown values that are
        not empty), to recognise the pair in a rater's list."""
        t = self.store.task_by_pair[pair_id]
        out = []
        for item in (t["item_a"], t["item_b"]):
            row = self.items.get(item, {})
            vals = [str(row[c]) for c in self.columns if row.get(c) is not None and str(row[c]).strip()]
            text = " · ".join(vals[:SUMMARY_VALUES])
            out.append(text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…")
        return out

    def mine(self, rater: str, *, offset: int = 0) -> dict:
        """``rater``'s own judgements, :data:`MINE_PAGE` from ``offset``, the pair they judged last
        first: each pair's number (in the order first judged), answer, comment, time, how many
        versions (a change adds one) and its summary. Their own answers only: no one else's, no
        estimate."""
        check_person(rater)
        if not isinstance(offset, int) or offset < 0:
            raise InputError(f"offset must be a whole number, 0 or more. Got {offset!r} instead.")
        total, rows = self.store.judged_by(rater, source="person", limit=MINE_PAGE, offset=offset)
        return {"ok": True, "rater": rater, "total": total, "offset": offset, "limit": MINE_PAGE,
                "judgements": [{"number": n, "pair_id": r.pair_id, "judgement": r.judgement, "comment": r.comment,
                                "created_at": r.created_at, "versions": v, "items": self.summary(r.pair_id)}
                               for n, r, v in rows]}

    def my_judgement(self, rater: str, pair_id) -> dict:
        """One of ``rater``'s judgements, opened to be changed: the pair as the judging page shows it,
        their live answer and its history (every version, oldest first: ``ended`` changed or
        undone)."""
        check_person(rater)
        self.store.validate(pair_id, "unsure", rater=rater, source="person", writing=False)  # opened, not written
        history = self.store.history(rater, pair_id)
        live = [h for h in history if h["withdrawn_at"] is None]
        if not live:
            raise NotJudgedError(f"You have no judgement of pair {pair_id!r} to open (never judged, or undone).")
        return {"ok": True, "rater": rater, "pair": self.pair_view(pair_id), "judgement": live[0],
                "history": history}

    def change(self, rater: str, pair_id, judgement, *, comment=KEEP, request_id=None) -> dict:
        """Change ``rater``'s judgement of ``pair_id``: a new judgement superseding the old one (kept,
        withdrawn), on disk on return; then the rater's state. ``changed`` is False when the answer
        and comment were already these (nothing written)."""
        check_person(rater)
        was, now = self.store.change(pair_id, judgement, rater=rater, source="person", comment=comment,
                                     request_id=request_id)
        return {"changed": now.id != was.id, "was": was.to_dict(), "now": now.to_dict(), **self.state(rater)}

    # ------------------------------------------------------------------ settling
    def _disputes(self, live) -> dict:
        """The owner's settle queue from live person judgements, by the one rule of ``abcde quality``
        (:func:`abcde.samples.judgements.resolve`, :attr:`~abcde.samples.judgements.Resolution.state`):
        ``{"waiting": [...], "settled": [...], "inert": [...]}``, each ``(pair_id, [Recorded, ...],
        Resolution)``. Waiting: the raters' votes tie and no vote of the owner's settles them (none,
        one cast before a vote of this dispute, or a can't tell), oldest dispute first; settled: the
        owner's vote decides, newest first; inert: no dispute, and an owner's vote that does not count
        (a rater undid or changed), newest first. A pair with no dispute and no owner's vote is in none."""
        votes: dict = defaultdict(list)
        for j in live:
            votes[j.pair_id].append(j)
        out: dict = {WAITING: [], SETTLED: [], INERT: []}
        for pid, js in votes.items():
            r = resolve([(j.rater == OWNER, j.judgement) for j in js])
            if r.state is not None:
                out[r.state].append((max(j.id for j in js), pid, js, r))
        return {k: [(p, js, r) for _, p, js, r in sorted(v, key=lambda x: x[0], reverse=k != WAITING)]
                for k, v in out.items()}

    def settle_state(self) -> dict:
        """The owner's settle queue: pairs where raters disagree so that their votes tie and no vote of
        the owner's settles them (``waiting``, the first :data:`SETTLE_PAGE`, oldest first), pairs the
        owner's vote settles (``settled``, newest first), and pairs whose owner's vote no longer counts
        because their raters no longer disagree (``inert``, newest first); each with the pair as
        raters see it, every rater's vote (raters named as in the owner's view; comments too), the
        vote's result, the owner's vote that counts (``owner``) and one that does not
        (``owner_earlier``)."""
        live = self._live()
        alias = self.aliases(live, None)
        queue = self._disputes(live)

        def item(pid, js, r):
            return {"pair": self.pair_view(pid), "result": r.answer, "tie": r.tie,
                    "owner": r.owner if r.owner_counts else None,
                    "owner_earlier": None if r.owner_counts else r.owner,
                    "votes": [{"rater": alias.get(j.rater, j.rater), "judgement": j.judgement, "comment": j.comment,
                               "created_at": j.created_at} for j in js if j.rater != OWNER]}

        return {"ok": True, "waiting_total": len(queue[WAITING]), "settled_total": len(queue[SETTLED]),
                "inert_total": len(queue[INERT]),
                **{k: [item(*x) for x in queue[k][:SETTLE_PAGE]] for k in (WAITING, SETTLED, INERT)},
                "rule": "The owner's answer is one more vote (rater 'owner'); the majority decides, a tie is can't "
                        "tell. With two raters split, same or different settles the pair; can't tell leaves it "
                        "a tie. It counts while the raters' votes tie and every one of them was there when the owner "
                        "answered: if a rater undoes or changes so they no longer tie, the owner's answer is kept but "
                        "does not count; if a new vote makes them tie again, the pair waits for the owner again."}

    def settle(self, pair_id, judgement, *, comment=None, request_id=None) -> dict:
        """The owner's settling vote on a pair in the queue (or a change of one cast before): recorded
        as a person judgement by :data:`~abcde.samples.raters.OWNER`, on disk on return; then
        :meth:`settle_state` and ``vote`` (the vote recorded). An earlier vote of the owner's that
        does not count (cast before a vote of this dispute) is superseded by a new one, the same
        answer too, which counts.

        Raises
        ------
        NothingToSettleError
            Fewer than two raters judged the pair, or their votes do not tie (an owner's vote on it,
            which then does not count, is not changed either).
        ~abcde.samples.store.NotATaskError
            The pair is not one of the people's tasks.
        """
        self.store.validate(pair_id, judgement, rater=OWNER, source="person")
        js = [j for j in self._live() if j.pair_id == pair_id]
        own = next((j for j in js if j.rater == OWNER), None)
        others = [j.judgement for j in js if j.rater != OWNER]
        r = resolve([(j.rater == OWNER, j.judgement) for j in js])
        if not r.disputed:
            kept = " (your earlier vote on it is kept, and does not count)" if own is not None else ""
            if len(others) < 2:
                raise NothingToSettleError(f"Pair {pair_id!r} has nothing to settle: "
                                           f"{'no rater' if not others else 'one rater'} judged it{kept}.")
            raise NothingToSettleError(f"Pair {pair_id!r} has nothing to settle: its raters' votes decide it "
                                       f"({r.answer}){kept}.")
        if own is None:
            rec = self.store.record(pair_id, judgement, rater=OWNER, source="person", comment=comment,
                                    request_id=request_id)
        else:
            _, rec = self.store.change(pair_id, judgement, rater=OWNER, source="person",
                                       comment=KEEP if comment is None else comment, request_id=request_id,
                                       renew=not r.owner_counts)
        return {**self.settle_state(), "vote": rec.to_dict()}

    def more_pairs(self, width: float | None, judged_pairs: int) -> dict | None:
        """What to do when every pair is judged but ΔPrecision's 95% interval is still wider than the
        target: the budget the current interval suggests (a standard error shrinks as 1/√n, so
        ``budget · (width / target)²``) and the command that grows the sample to it, keeping every
        judgement. None while pairs remain, without a target, or once the target is reached."""
        if (self.target_width is None or width is None or width <= self.target_width
                or judged_pairs < len(self.pair_ids)):
            return None
        meta = self.store.meta
        if meta.get("exhausted"):
            return {"exhausted": True, "message": f"All {meta['judgeable_pairs']:,} pairs that need a judgement "
                    "are in this sample and judged: more judgements cannot come from more pairs."}
        budget = int(meta["budget"])
        suggested = max(math.ceil(budget * (width / self.target_width) ** 2), budget + 1)
        command = f"abcde pairs --extend {self.given_dir} --budget {suggested}"
        return {"exhausted": False, "budget": budget, "suggested_budget": suggested, "more": suggested - budget,
                "command": command,
                "message": f"Every pair is judged, and the interval ({display.four(width)} wide) is still wider than the "
                           f"target ({display.four(self.target_width)}). The current standard error suggests about "
                           f"{suggested - budget:,} more pairs ({suggested:,} in all). Stop this server, grow the "
                           "sample (the judgements stay and still count), and serve it again:"}

    def submit(self, rater: str, pair_id: str, judgement: str, *, comment=None, request_id=None) -> dict:
        """Record a person's judgement (on disk on return), then the rater's new state."""
        check_person(rater)
        rec = self.store.record(pair_id, judgement, rater=rater, source="person", comment=comment,
                                request_id=request_id)
        return {"recorded": rec.to_dict(), **self.state(rater)}

    def undo(self, rater: str) -> dict | None:
        """Withdraw the rater's last judgement; ``None`` when there is none."""
        check_person(rater)
        rec = self.store.undo(rater)
        if rec is None:
            return None
        return {"undone": rec.to_dict(), **self.state(rater)}

