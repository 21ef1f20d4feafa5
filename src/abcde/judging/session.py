"""What the judging web app does, without HTTP: which pair a rater sees next, progress,
agreement and live estimates.

Order
    Each rater gets their own deterministic random order of the sample's pairs
    (``random.Random("SEED:RATER")``), so a rater who stops early has judged a
    random subset, and a restarted server shows the same next pair. A rater is
    shown the first pair in their order that they have not judged and that still
    needs a judgement: one for most pairs, two (from different raters) for the
    replicated share.
Live estimates
    The store's person judgements are written to a judgement file and passed to
    :func:`abcde.quality.estimate_quality`, the function behind ``abcde quality``,
    so the page shows exactly what ``abcde quality --judgements EXPORT --json``
    prints for ``abcde judge export --source person``.
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
from collections import defaultdict
from pathlib import Path

from abcde.errors import InputError
from abcde.judging.agreement import agreement
from abcde.quality.estimate import estimate_quality
from abcde.quality.judgements import majority
from abcde.quality.sample_dir import shown_columns
from abcde.quality.store import JudgementStore, check_rater
from abcde.quality.stratified import next_stratum, stratum_values
from abcde.util import display


def _unit(seed, pair_id: str) -> float:
    """A uniform number in [0, 1) from md5(seed:replicate:pair id)."""
    h = hashlib.md5(f"{seed}:replicate:{pair_id}".encode()).hexdigest()
    return int(h[:15], 16) / 16**15


def _display(v):
    """An attribute value as the page shows it: text, or ``None`` for a missing value."""
    return None if v is None else str(v)


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
        Optional target width of ΔPrecision's 95% interval; once reached the page
        says the judging can stop.
    hide
        Item attributes not to show (e.g. a ground-truth column), besides what is never shown:
        the weight, the columns hidden when the pairs were drawn (``pairs --hide``) and the
        columns oracles judged by (the blind rule, :func:`abcde.quality.sample_dir.shown_columns`).
    show_ids
        Show the item ids too (they may give the answer away, e.g. FEBRL's
        ``rec-1-org`` / ``rec-1-dup-0``).
    show_raters
        Show every rater's name in the progress and agreement (default: a rater sees their own
        name and the others as "rater 1", "rater 2", … in the order they first judged).
    adaptive
        Adaptive Neyman allocation (stratified samples only): the next pair comes from the
        stratum whose next judgement most reduces the SE of ΔPrecision
        (:func:`abcde.quality.stratified.next_stratum`, on the judgements so far); within a stratum,
        the rater's random order. Judgements then approach ``n_c ∝ U_c·σ_c``; stop at
        ``target_width``. Draw a larger budget than you mean to judge so each stratum has
        pairs to spare.
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
        self.pair_ids = list(self.store.pair_ids)
        self.replicated = {p for p in self.pair_ids if _unit(self.seed, p) < self.replicate}
        self._orders: dict[str, list[str]] = {}
        meta = self.store.sample.metadata
        if adaptive and meta.get("estimator") != "stratified":
            raise InputError("Adaptive allocation needs a stratified pair sample ('abcde pairs --estimator "
                             f"stratified'); {self.sample_dir} was drawn with the {meta.get('estimator', 'paper')!r} "
                             "estimator.")
        self.adaptive = adaptive
        self._stratum_of: dict[str, str] = {}
        if adaptive:
            d = self.store.sample.draws
            self._stratum_of = dict(zip(d.column("pair_id").to_pylist(), d.column("stratum").to_pylist()))
        self._lock = threading.Lock()
        self._estimates: tuple | None = None

    # ------------------------------------------------------------------ order
    def order(self, rater: str) -> list[str]:
        """The rater's deterministic random order of the pairs."""
        with self._lock:
            if rater not in self._orders:
                ids = sorted(self.pair_ids)
                random.Random(f"{self.seed}:{rater}").shuffle(ids)
                self._orders[rater] = ids
            return self._orders[rater]

    def next_pair(self, rater: str, live=None) -> str | None:
        """The first pair in the rater's order that they have not judged and that still needs
        a judgement; ``None`` when there is none left for them."""
        live = self.store.live(source="person") if live is None else live
        count: dict = defaultdict(int)
        mine = set()
        for j in live:
            count[j.pair_id] += 1
            if j.rater == rater:
                mine.add(j.pair_id)
        candidates = (p for p in self.order(rater) if p not in mine and count[p] < (2 if p in self.replicated else 1))
        if not self.adaptive:
            return next(candidates, None)
        candidates = list(candidates)
        c = self.next_stratum(live, {self._stratum_of[p] for p in candidates})
        return next((p for p in candidates if self._stratum_of[p] == c), None)

    def next_stratum(self, live, remaining) -> str | None:
        """Adaptive Neyman: among strata with pairs left (``remaining``), the one whose next judgement
        most reduces the SE of ΔPrecision, from the judgements so far (several raters of one pair:
        the majority, a tie counts as unsure — as in ``abcde quality``)."""
        by_pair = self.resolved(live)
        totals = {c: u for c, u in self.store.sample.metadata["pair_totals"].items() if c in remaining}
        return next_stratum({"pair_totals": totals}, stratum_values(self.store.sample.draws, by_pair))

    @staticmethod
    def resolved(live) -> dict:
        """One answer per pair from live judgements (several raters: the vote rule of
        ``abcde quality``, :func:`abcde.quality.judgements.majority`)."""
        votes: dict = defaultdict(list)
        for j in live:
            votes[j.pair_id].append(j.judgement)
        return {pid: majority(v) for pid, v in votes.items()}

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

    # ------------------------------------------------------------------ estimates
    def estimates(self) -> dict:
        """``estimate_quality`` on the store's person judgements (cached until the store changes)."""
        version = self.store.version()
        with self._lock:
            if self._estimates and self._estimates[0] == version:
                return self._estimates[1]
        table = self.store.to_table(source="person")
        try:  # in memory: judgements are never copied to a temporary file (one a crash would leave behind)
            result = estimate_quality(self.sample_dir, [table] if table.num_rows else []).to_dict()
        except Exception as exc:  # the page must keep collecting judgements even if an estimator fails
            traceback.print_exc(file=sys.stderr)
            result = {"unavailable": f"the estimator failed: {type(exc).__name__}: {exc}"}
        with self._lock:
            self._estimates = (version, result)
        return result

    # ------------------------------------------------------------------ state
    def aliases(self, live, rater: str | None) -> dict:
        """How raters are named to ``rater``: themselves by name, the others by name only with
        ``show_raters``, else as "rater 1", "rater 2", … (in the order they first judged)."""
        alias: dict = {}
        for j in live:
            if j.rater not in alias:
                alias[j.rater] = j.rater if self.show_raters or j.rater == rater else f"rater {len(alias) + 1}"
        return alias

    @staticmethod
    def _aliased(ag: dict, alias: dict) -> dict:
        return {**ag, "cohen": [{**c, "raters": [alias.get(r, r) for r in c["raters"]]} for c in ag.get("cohen", [])]}

    def state(self, rater: str | None) -> dict:
        """Everything the page shows for ``rater`` (``None``: progress and estimates only)."""
        live = self.store.live(source="person")
        alias = self.aliases(live, rater)
        judged_pairs = len({j.pair_id for j in live})
        est = self.estimates()
        dp = est.get("delta_precision") or {}
        width = (dp["ci_high"] - dp["ci_low"]) if dp.get("ci_low") is not None else None
        d = {
            "ok": True,
            "sample_id": self.store.meta["sample_id"],
            "pairs": len(self.pair_ids),
            "budget": self.store.meta["budget"],
            "replicated_pairs": len(self.replicated),
            "needed_judgements": len(self.pair_ids) + len(self.replicated),
            "judgements": len(live),
            "judged_pairs": judged_pairs,
            "raters": sorted({alias[j.rater] for j in live}),
            "settings": {"seed": self.seed, "replicate": self.replicate, "target_width": self.target_width,
                         "allocation": "adaptive Neyman" if self.adaptive else "as sampled"},
            "estimates": est,
            "ci_width": width,
            "can_stop": bool(self.target_width is not None and width is not None and width <= self.target_width),
            "more_pairs": self.more_pairs(width, judged_pairs),
            "agreement": self._aliased(agreement(live), alias),
        }
        if rater is not None:
            check_rater(rater)
            nxt = self.next_pair(rater, live)
            d["rater"] = rater
            d["rater_judgements"] = sum(1 for j in live if j.rater == rater)
            d["can_undo"] = d["rater_judgements"] > 0
            d["next"] = self.pair_view(nxt) if nxt else None
        return d

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
        check_rater(rater)
        rec = self.store.record(pair_id, judgement, rater=rater, source="person", comment=comment,
                                request_id=request_id)
        return {"recorded": rec.to_dict(), **self.state(rater)}

    def undo(self, rater: str) -> dict | None:
        """Withdraw the rater's last judgement; ``None`` when there is none."""
        check_rater(rater)
        rec = self.store.undo(rater)
        if rec is None:
            return None
        return {"undone": rec.to_dict(), **self.state(rater)}

