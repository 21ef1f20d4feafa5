"""What the judging web app does, without HTTP: which pair a rater sees next, progress,
agreement, live estimates and the verdict.

:class:`JudgingSession` is a facade over its components (as Splink's ``Linker`` is over its own),
each one job, built by the session over one store and reached through it:

- :class:`~abcde.judging.scheduler.Scheduler` (:attr:`JudgingSession.scheduler`) — the pairs people
  judge and their strata, each rater's order, which pair comes next, and what ΔPrecision still
  needs (the order of pairs and "a name costs nothing" are told there);
- :class:`~abcde.judging.owner_view.OwnerView` (:attr:`JudgingSession.owner_view`) — progress, how
  raters are named, agreement with its reasons, the stop rule, more pairs and the next step;
- :class:`~abcde.judging.settle_queue.SettleQueue` (:attr:`JudgingSession.settle_queue`) — the
  pairs whose raters disagree and the owner's settling votes (the rule is told there).

The session itself keeps what a rater sees (their state, a pair, their own judgements) and the
live estimates.

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
    Pairs whose raters' votes tie wait in the owner's queue (:meth:`JudgingSession.settle_state`);
    the owner's answer (:meth:`JudgingSession.settle`) is one more vote, by the rater
    :data:`~abcde.samples.raters.OWNER`, while it settles a real dispute
    (:mod:`abcde.judging.settle_queue`). Agreement (kappa) is computed without the owner's votes:
    they are cast only where raters disagree; no count of judgements a pair has or needs includes
    them.
The people's tasks
    With a people's budget (``pairs --human-budget``) people judge the people's tasks only: the
    store refuses a person's judgement, change or settling vote of another pair
    (:class:`~abcde.samples.store.NotATaskError`, a 404 over HTTP), and judgements of other pairs
    recorded by an earlier abcde (kept in the store) count in no progress, queue, agreement or
    estimate here (:meth:`JudgingSession._live`, :func:`abcde.samples.people_tasks.outside_tasks`); their
    rater still finds them in their own list (:meth:`JudgingSession.mine`), to open, not to change.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
import traceback
from collections import Counter

import pyarrow as pa

from abcde.errors import InputError
from abcde.judging.owner_view import OwnerView
from abcde.judging.scheduler import PAPER_CLASSES, UNKNOWN_ORDERS, USABLE, Scheduler
from abcde.judging.settle_queue import SETTLE_PAGE, NothingToSettleError, SettleQueue
from abcde.quality.estimate import estimate_quality
from abcde.samples.people_tasks import outside_tasks
from abcde.samples.raters import check_rater
from abcde.samples.sample_dir import shown_columns
from abcde.samples.store import KEEP, JudgementStore, NotJudgedError
from abcde.quality.verdict import verdict as quality_verdict

__all__ = ["MINE_PAGE", "PAPER_CLASSES", "SETTLE_PAGE", "SUMMARY_CHARS", "SUMMARY_VALUES", "UNKNOWN_ORDERS", "USABLE",
           "JudgingSession", "NothingToSettleError", "check_person"]

#: A rater's own judgements listed at once (:meth:`JudgingSession.mine`; ``offset`` pages on).
MINE_PAGE = 20
#: Values of each item in a pair's summary (a rater's list), and its length in characters.
SUMMARY_VALUES, SUMMARY_CHARS = 3, 60


def check_person(rater) -> str:
    """A person's rater name: :func:`abcde.samples.raters.check_rater`, the one check, which refuses
    :data:`~abcde.samples.raters.OWNER` (the name the owner's settling votes carry) and every name
    that reads as it ('Owner ', 'owner.', 'ＯＷＮＥＲ', …)."""
    return check_rater(rater)


def _display(v):
    """An attribute value as the page shows it: text, or ``None`` for a missing value."""
    return None if v is None else str(v)


def _of_scheduler(name: str, doc: str) -> property:
    """A read-only attribute of the session that is its scheduler's (``session.scheduler.NAME``)."""
    return property(lambda self: getattr(self.scheduler, name), doc=doc)


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

    Attributes
    ----------
    scheduler
        The :class:`~abcde.judging.scheduler.Scheduler`: pairs, strata, orders, the next pair.
    owner_view
        The :class:`~abcde.judging.owner_view.OwnerView`: progress and the owner's view.
    settle_queue
        The :class:`~abcde.judging.settle_queue.SettleQueue`: the owner's settle queue.
    """

    pair_ids = _of_scheduler("pair_ids", "The people's tasks: every pair, or those drawn for people.")
    replicated = _of_scheduler("replicated", "The pairs two different raters judge.")
    unit = _of_scheduler("unit", "What the strata are called to the owner: 'stratum', or 'class' (the paper's).")
    _stratum_of = _of_scheduler("stratum_of", "Each pair's stratum (or class, or a cell of one).")
    _weight = _of_scheduler("weight", "The strata an estimate needs judgements in, with their weight U_c.")
    _pairs_in = _of_scheduler("pairs_in", "Pairs to judge per stratum.")
    _needed_in = _of_scheduler("needed_in", "Judgements each stratum needs in all (a replicated pair needs two).")
    _orders = _of_scheduler("orders", "Orders of raters who have judged.")
    _unknown_orders = _of_scheduler("unknown_orders", "Orders of other names, least recently used first.")

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
        self.estimator = self.store.sample.metadata.get("estimator", "paper")
        if adaptive and self.estimator != "stratified":
            raise InputError("Adaptive allocation needs a stratified pair sample ('abcde pairs --estimator "
                             f"stratified'); {self.sample_dir} was drawn with the {self.estimator!r} estimator.")
        self.adaptive = adaptive
        self.scheduler = Scheduler(self.store, seed=self.seed, replicate=self.replicate, estimator=self.estimator,
                                   adaptive=adaptive, given_dir=self.given_dir)
        # People judge the people's tasks: every pair, or the subset drawn for them (pairs --human-budget).
        self.tasks = self.scheduler.tasks
        self.owner_view = OwnerView(self.store, self.scheduler, target_width=target_width, show_raters=show_raters,
                                    given_dir=self.given_dir)
        self.settle_queue = SettleQueue(self.store, live=self.scheduler.live, aliases=self.owner_view.aliases,
                                        pair_view=self.pair_view)
        self._lock = threading.Lock()
        self._cache: tuple | None = None  # (store version, QualityResult or None, its dict, the verdict's dict)

    # ------------------------------------------------------------------ the scheduler's
    def _strata(self) -> tuple[dict, dict]:
        """Each pair's stratum, and the strata with their weight ``U_c``
        (:meth:`abcde.judging.scheduler.Scheduler.strata`)."""
        return self.scheduler.strata()

    def _wanted(self, pair_id: str) -> int:
        """Judgements the pair needs: two (from different raters) when replicated, else one."""
        return self.scheduler.wanted(pair_id)

    def _live(self) -> list:
        """The live person judgements the app reads, in the order made: those of the people's tasks
        (one of another pair, recorded by an earlier abcde, is kept in the store but counts nowhere)."""
        return self.scheduler.live()

    @staticmethod
    def _raters_count(live) -> Counter:
        """Per pair, its raters' live judgements (the owner's settling votes are none)."""
        return Scheduler.raters_count(live)

    def order(self, rater: str, *, judged: bool = False) -> list[str]:
        """The rater's deterministic random order of the pairs (:meth:`abcde.judging.scheduler.Scheduler.order`)."""
        return self.scheduler.order(rater, judged=judged)

    def next_pair(self, rater: str, live=None) -> str | None:
        """The rater's next pair, ``None`` when no pair is open for them
        (:meth:`abcde.judging.scheduler.Scheduler.next_pair`)."""
        return self.scheduler.next_pair(rater, live)

    def serve_stratum(self, live, open_strata, count=None) -> str:
        """Which of ``open_strata`` the next pair comes from
        (:meth:`abcde.judging.scheduler.Scheduler.serve_stratum`)."""
        return self.scheduler.serve_stratum(live, open_strata, count)

    def next_stratum(self, live, remaining) -> str | None:
        """Adaptive Neyman: the stratum whose next judgement most reduces the SE of ΔPrecision
        (:meth:`abcde.judging.scheduler.Scheduler.next_stratum`)."""
        return self.scheduler.next_stratum(live, remaining)

    @staticmethod
    def resolved(live) -> dict:
        """One answer per pair from live judgements, by the vote rule of ``abcde quality``
        (:meth:`abcde.judging.scheduler.Scheduler.resolved`)."""
        return Scheduler.resolved(live)

    def usable(self, live) -> Counter:
        """Per stratum: its pairs with a usable answer (same or different, after the vote rule)."""
        return self.scheduler.usable(live)

    def needs(self, live, estimates: dict | None = None) -> dict:
        """What ΔPrecision still needs, from the sample's draws and the judgements so far
        (:meth:`abcde.judging.scheduler.Scheduler.needs`)."""
        return self.scheduler.needs(live, estimates)

    def _counts(self, short: dict, *, more: bool = False) -> str:
        """The strata ``short`` of usable judgements, as the owner reads them."""
        return self.scheduler.counts(short, more=more)

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
        """How raters are named to ``rater`` (:meth:`abcde.judging.owner_view.OwnerView.aliases`)."""
        return self.owner_view.aliases(live, rater)

    @staticmethod
    def _aliased(ag: dict, alias: dict) -> dict:
        """Agreement with each Cohen row's raters named by ``alias``."""
        return OwnerView.aliased(ag, alias)

    def _progress(self, live) -> dict:
        """Progress overall (:meth:`abcde.judging.owner_view.OwnerView.progress`)."""
        return self.owner_view.progress(live)

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
        return self.owner_view.owner_state(live, self.estimates(), self.verdict(), self._disputes(live))

    @staticmethod
    def _explained(ag: dict) -> dict:
        """Agreement with the reason beside each kappa that is undefined
        (:meth:`abcde.judging.owner_view.OwnerView.explained`)."""
        return OwnerView.explained(ag)

    def next_step(self, d: dict) -> dict | None:
        """What the owner does once every pair has its judgements
        (:meth:`abcde.judging.owner_view.OwnerView.next_step`)."""
        return self.owner_view.next_step(d)

    def more_pairs(self, width: float | None, judged_pairs: int) -> dict | None:
        """What to do when every pair is judged but ΔPrecision's 95% interval is still wider than the
        target (:meth:`abcde.judging.owner_view.OwnerView.more_pairs`)."""
        return self.owner_view.more_pairs(width, judged_pairs)

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
        """The owner's settle queue from live person judgements: ``{"waiting": [...], "settled": [...],
        "inert": [...]}`` (:meth:`abcde.judging.settle_queue.SettleQueue.disputes`)."""
        return self.settle_queue.disputes(live)

    def settle_state(self) -> dict:
        """The owner's settle queue: pairs waiting, settled and inert, each with the pair, every
        rater's vote and the owner's (:meth:`abcde.judging.settle_queue.SettleQueue.state`)."""
        return self.settle_queue.state()

    def settle(self, pair_id, judgement, *, comment=None, request_id=None) -> dict:
        """The owner's settling vote on a pair in the queue (or a change of one cast before), on disk on
        return; then :meth:`settle_state` and ``vote`` (:meth:`abcde.judging.settle_queue.SettleQueue.settle`).

        Raises
        ------
        NothingToSettleError
            Fewer than two raters judged the pair, or their votes do not tie.
        ~abcde.samples.store.NotATaskError
            The pair is not one of the people's tasks.
        """
        return self.settle_queue.settle(pair_id, judgement, comment=comment, request_id=request_id)

    # ------------------------------------------------------------------ judging
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
