"""The owner's settle queue of a judging session (:class:`abcde.judging.session.JudgingSession`
delegates to it): the pairs whose raters disagree, and the owner's settling votes.

Settling
    Pairs whose raters disagree so that the vote rule ties (two raters: same and different, or
    one of them unsure; :func:`abcde.samples.judgements.disputed`) wait in the owner's queue
    (:meth:`SettleQueue.state`). The owner's settling answer (:meth:`SettleQueue.settle`) is
    recorded as one more person judgement, by the rater :data:`~abcde.samples.raters.OWNER`, and
    counts as one more vote under the vote rule of ``abcde quality`` while it settles a real
    dispute (:func:`abcde.samples.judgements.resolve`, the one rule both read): the raters' votes
    tie, and every one of them was there when the owner voted. With two raters split, a same or
    different decides the pair 2 to 1; a can't-tell leaves the tie (unsure). When a rater undoes
    or changes so the raters no longer tie, the owner's vote stays (nothing is deleted) but is
    inert: the pair is what the raters' votes make it, needs a rater again if it is short of
    judgements, and is listed apart (``inert``). A dispute made again of the votes the owner saw
    is settled by the owner's vote again; one with a vote the owner has not seen waits again (the
    earlier vote shown), and the owner's answer, the same one too, is a new vote. So every pair is
    waiting, settled or not disputed, never lost. Nothing of the raters' judgements changes, the
    export carries the owner's votes like any other, and ``abcde quality`` on it gives the owner's
    view's estimates.
The people's tasks
    With a people's budget the store refuses a settling vote on a pair that is not one of the
    people's tasks (:class:`~abcde.samples.store.NotATaskError`, a 404 over HTTP).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from abcde.errors import InputError
from abcde.samples.judgements import INERT, SETTLED, WAITING, resolve
from abcde.samples.raters import OWNER
from abcde.samples.store import KEEP, JudgementStore

#: Pairs of the settle queue listed at once (the queue's length is given in full).
SETTLE_PAGE = 100
#: How the owner's vote counts, as the settle page says it.
RULE = ("The owner's answer is one more vote (rater 'owner'); the majority decides, a tie is can't "
        "tell. With two raters split, same or different settles the pair; can't tell leaves it "
        "a tie. It counts while the raters' votes tie and every one of them was there when the owner "
        "answered: if a rater undoes or changes so they no longer tie, the owner's answer is kept but "
        "does not count; if a new vote makes them tie again, the pair waits for the owner again.")


class NothingToSettleError(InputError):
    """The owner tried to settle a pair whose raters' votes do not tie (or that fewer than two raters judged)."""


class SettleQueue:
    """The owner's settle queue over a judging session's store.

    Parameters
    ----------
    store
        The sample's :class:`~abcde.samples.store.JudgementStore` (the owner's votes are written to it).
    live
        ``() -> [Recorded, ...]``: the live person judgements the session reads, in the order made
        (:meth:`abcde.judging.scheduler.Scheduler.live`).
    aliases
        ``(live, rater) -> {name: shown}``: how raters are named
        (:meth:`abcde.judging.owner_view.OwnerView.aliases`; the queue names them as the owner's view does).
    pair_view
        ``pair_id -> dict``: a pair as raters see it
        (:meth:`abcde.judging.session.JudgingSession.pair_view`).
    """

    def __init__(self, store: JudgementStore, *, live: Callable[[], list], aliases: Callable[..., dict],
                 pair_view: Callable[[str], dict]):
        self.store, self.live, self.aliases, self.pair_view = store, live, aliases, pair_view

    def disputes(self, live) -> dict:
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

    def state(self) -> dict:
        """The owner's settle queue: pairs where raters disagree so that their votes tie and no vote of
        the owner's settles them (``waiting``, the first :data:`SETTLE_PAGE`, oldest first), pairs the
        owner's vote settles (``settled``, newest first), and pairs whose owner's vote no longer counts
        because their raters no longer disagree (``inert``, newest first); each with the pair as
        raters see it, every rater's vote (raters named as in the owner's view; comments too), the
        vote's result, the owner's vote that counts (``owner``) and one that does not
        (``owner_earlier``)."""
        live = self.live()
        alias = self.aliases(live, None)
        queue = self.disputes(live)

        def item(pid, js, r):
            return {"pair": self.pair_view(pid), "result": r.answer, "tie": r.tie,
                    "owner": r.owner if r.owner_counts else None,
                    "owner_earlier": None if r.owner_counts else r.owner,
                    "votes": [{"rater": alias.get(j.rater, j.rater), "judgement": j.judgement, "comment": j.comment,
                               "created_at": j.created_at} for j in js if j.rater != OWNER]}

        return {"ok": True, "waiting_total": len(queue[WAITING]), "settled_total": len(queue[SETTLED]),
                "inert_total": len(queue[INERT]),
                **{k: [item(*x) for x in queue[k][:SETTLE_PAGE]] for k in (WAITING, SETTLED, INERT)},
                "rule": RULE}

    def settle(self, pair_id, judgement, *, comment=None, request_id=None) -> dict:
        """The owner's settling vote on a pair in the queue (or a change of one cast before): recorded
        as a person judgement by :data:`~abcde.samples.raters.OWNER`, on disk on return; then
        :meth:`state` and ``vote`` (the vote recorded). An earlier vote of the owner's that does not
        count (cast before a vote of this dispute) is superseded by a new one, the same answer too,
        which counts.

        Raises
        ------
        NothingToSettleError
            Fewer than two raters judged the pair, or their votes do not tie (an owner's vote on it,
            which then does not count, is not changed either).
        ~abcde.samples.store.NotATaskError
            The pair is not one of the people's tasks.
        """
        self.store.validate(pair_id, judgement, rater=OWNER, source="person")
        js = [j for j in self.live() if j.pair_id == pair_id]
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
        return {**self.state(), "vote": rec.to_dict()}
