"""What the owner of a judging session sees (the owner's view of
:class:`abcde.judging.session.JudgingSession`, which delegates to it): progress overall and per
rater, the live estimates with 95% intervals, what ΔPrecision still needs while undefined,
agreement with the reason beside each kappa that is undefined, the stop rule, what to do when the
pairs run out (more pairs, or the next command) and the verdict.

Raters are named as :meth:`OwnerView.aliases` names them: to the owner, a rater the owner invited
by name by that name, the others as "rater 1", "rater 2", … (in the order they first judged) unless
``show_raters``. Agreement (kappa) is computed without the owner's settling votes: they are cast only
where raters disagree, so they are no evidence of agreement; no count of judgements a pair has or
needs includes them.
"""

from __future__ import annotations

import math

from abcde.judging.agreement import agreement
from abcde.judging.scheduler import Scheduler
from abcde.samples.invites import InviteBook
from abcde.samples.judgements import SETTLED, WAITING
from abcde.samples.raters import OWNER
from abcde.samples.store import JudgementStore
from abcde.util import display


class OwnerView:
    """The owner's view of a judging session, and the progress a rater's page shows too.

    Parameters
    ----------
    store
        The sample's :class:`~abcde.samples.store.JudgementStore`.
    scheduler
        The session's :class:`~abcde.judging.scheduler.Scheduler`: the pairs, their judgements
        wanted and what ΔPrecision still needs.
    target_width
        Optional target width of ΔPrecision's 95% interval (the stop rule).
    show_raters
        Show every rater's name (default: "rater 1", "rater 2", …).
    given_dir
        The sample directory as the user named it (shell-quoted), for commands shown.
    """

    def __init__(self, store: JudgementStore, scheduler: Scheduler, *, target_width: float | None,
                 show_raters: bool, given_dir: str):
        self.store, self.scheduler = store, scheduler
        self.target_width, self.show_raters, self.given_dir = target_width, show_raters, given_dir

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
    def aliased(ag: dict, alias: dict) -> dict:
        """Agreement with each Cohen row's raters named by ``alias``."""
        return {**ag, "cohen": [{**c, "raters": [alias.get(r, r) for r in c["raters"]]} for c in ag.get("cohen", [])]}

    def progress(self, live) -> dict:
        """Progress overall, as a rater's page and the owner's view show it: pairs, the judgements
        needed (a replicated pair needs two), the raters' judgements made (the owner's settling votes
        are not needed ones), pairs judged, and whether every pair has its judgements."""
        sch = self.scheduler
        count = sch.raters_count(live)
        done = sum(min(count[p], sch.wanted(p)) for p in sch.pair_ids)
        needed = len(sch.pair_ids) + len(sch.replicated)
        return {
            "ok": True,
            "sample_id": self.store.meta["sample_id"],
            "pairs": len(sch.pair_ids),
            "budget": self.store.meta["budget"],
            "replicated_pairs": len(sch.replicated),
            "needed_judgements": needed,
            "judgements": sum(count.values()),  # the raters' (the owner's settling votes are not needed ones)
            "judged_pairs": len(count),
            "all_judged": done >= needed,
        }

    def owner_state(self, live, estimates: dict, verdict: dict | None, queue: dict) -> dict:
        """The owner's view from the live judgements, the live ``estimates`` and ``verdict`` (their
        dicts) and the settle ``queue`` (:meth:`abcde.judging.settle_queue.SettleQueue.disputes`):
        progress overall and per rater (named as :meth:`aliases` names them for nobody in
        particular), the estimates, what ΔPrecision still needs, the interval's width and the stop
        rule, more pairs, agreement, the verdict, the settle queue's counts and the next step."""
        sch = self.scheduler
        alias = self.aliases(live, None)
        d = self.progress(live)
        dp = estimates.get("delta_precision") or {}
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
            # Two seeds, each named for what it seeds: the raters' pair order (judge serve --seed) and the
            # sample's draws (pairs --seed), which the owner may take one for the other.
            "settings": {"seed": sch.seed, "order_seed": sch.seed, "sample_seed": self.store.meta.get("seed"),
                         "replicate": sch.replicate, "target_width": self.target_width,
                         "allocation": "adaptive Neyman" if sch.adaptive else "as sampled"},
            "estimates": estimates,
            "needs": sch.needs(live, estimates),
            "ci_width": width,
            "can_stop": bool(self.target_width is not None and width is not None and width <= self.target_width),
            "more_pairs": self.more_pairs(width, d["judged_pairs"]),
            # the owner's settling votes are cast only where raters disagree: not evidence of agreement
            "agreement": self.explained(self.aliased(agreement([j for j in live if j.rater != OWNER]), alias)),
            "verdict": verdict,
        })
        d["settle"] = {"waiting": len(queue[WAITING]), "settled": len(queue[SETTLED])}
        d["next_step"] = self.next_step(d)
        return d

    @staticmethod
    def explained(ag: dict) -> dict:
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

    def more_pairs(self, width: float | None, judged_pairs: int) -> dict | None:
        """What to do when every pair is judged but ΔPrecision's 95% interval is still wider than the
        target: the budget the current interval suggests (a standard error shrinks as 1/√n, so
        ``budget · (width / target)²``) and the command that grows the sample to it, keeping every
        judgement. None while pairs remain, without a target, or once the target is reached."""
        if (self.target_width is None or width is None or width <= self.target_width
                or judged_pairs < len(self.scheduler.pair_ids)):
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
