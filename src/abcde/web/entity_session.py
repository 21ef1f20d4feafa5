"""What the judging app does for an entity sample (``abcde entities``), without HTTP: which anchor a
rater completes next, what the page shows of it, the search over the sample's items, and the
answers written to the store (:class:`abcde.completion.store.EntityStore`).

The task: "complete this item's entity". For each anchor (a drawn item) the page shows its
attributes, then the members of its Base and Exp clusters together, shuffled as ``tasks.jsonl``
has them and never labelled Base or Exp, each to be answered same, different or can't tell; then
the candidates (``--candidates``: items sharing its blocking key, in neither cluster) and a search
box over the shown attributes of the sample's items (``items.parquet``), from which the rater adds
the items of the same entity; and whether the entity's items outside both clusters were looked for
(``searched`` / ``not searched``). A submission writes every answer of the anchor as one row each,
in one transaction (on disk before the app answers):

- each member: its answer;
- each candidate: ``same`` when added; ``different`` when the rater searched and did not add it
  (nothing when they did not search);
- each other item added (from the search): ``same``;
- the search row: ``searched`` or ``not searched``.

Order. Anchors are served in draw order (their first draw), so the anchors judged are a prefix of
the draws: a rater gets the first anchor no one has answered and no other rater has on screen
(when every open anchor is on someone's screen, the first open one, so that no one waits); an
anchor answered by someone is not served again. Undo brings the rater's last anchor back, with
their answers filled in.

Blind. The page never sees an item id (unless ``show_ids``): each item is a reference, a digest of
the sample and the id, mapped back here; no weight, no hidden column, no Base or Exp.

The owner's view (:meth:`EntitySession.owner_state`). Progress overall and per rater (anchors
answered, their answers), the live estimates of :func:`abcde.completion.estimate.estimate_entities`
(what ``abcde quality DIR --json`` prints: the same answers, the same settlements), the answer counts
and the settle queue's. Raters are named as the pair app's owner's view names them
(:meth:`abcde.judging.owner_view.OwnerView.aliases`).

The settle queue (:meth:`EntitySession.settle_state`, :meth:`EntitySession.settle`). Every
(anchor, member or candidate) whose answers differ, and every anchor whose raters differ on whether
they searched outside both clusters, with each rater's answer; the owner's answer (same, different,
can't tell; searched or not searched) is stored as a settlement
(:func:`abcde.completion.judgements.settle_answer`) and counts while those answers still differ,
replacing the conflict's unsure (:class:`abcde.completion.judgements.Answered`, the rule ``abcde
quality`` reads too). A settlement of answers that do not differ is refused in one line.
"""

from __future__ import annotations

import hashlib
import math
import os
import shlex
import sys
import threading
import traceback
from types import SimpleNamespace

import ibis
import pyarrow as pa

from abcde.completion.estimate import estimate_entities
from abcde.completion.judgements import ANSWERS_FILE, group_answers, load_answers, recorded_diff, settle_answer
from abcde.completion.model import MODEL_FILE
from abcde.completion.sample import EntitySample
from abcde.completion.store import EntityStore, Submitted, sample_key
from abcde.errors import AbcdeError, InputError
from abcde.judging.owner_view import OwnerView
from abcde.judging.settle_queue import SETTLE_PAGE
from abcde.samples.raters import OWNER, check_rater

#: The most search results shown at once.
SEARCH_LIMIT = 20
#: The longest search text read.
MAX_QUERY = 200
#: How the owner's answer counts, as the settle page says it.
RULE = ("Your answer settles what the raters' answers leave unsure: it counts instead of their conflict while "
        "their answers of that item still differ. If a rater undoes so that they agree, your answer is kept but "
        "counts nowhere; if they differ again, it counts again. Answer again to change it (the old one is kept).")


def _display(v):
    return None if v is None else str(v)


def _finite(v):
    """``v`` with every number that is not finite as ``None`` (JSON has no NaN), as ``--json`` prints it."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def item_ref(key: str, item_id) -> str:
    """The page's reference of an item: a digest of the sample's key (:func:`sample_key`) and the id,
    so the page never holds an id (nor their order: ids of one entity are often alike)."""
    return hashlib.blake2b(f"{key}|{type(item_id).__name__}|{item_id}".encode(), digest_size=8).hexdigest()


def inputs_finder(sample: EntitySample):
    """``ids -> the ids among them that are items of the inputs the sample was drawn from`` (read again
    from their recorded paths, refused in one line when they changed: :func:`recorded_diff`)."""

    def find(ids: list) -> set:
        diff = recorded_diff(sample)
        typ = sample.anchors.schema.field("item_id").type
        sel = ibis.memtable(pa.table({"item_id": pa.array(ids, typ)}))
        got = diff.engine.to_arrow(diff.joined.semi_join(sel, "item_id").select("item_id"),
                                   step="items added to an entity")
        return set(got.column("item_id").to_pylist())

    return find


class EntitySession:
    """The judging app's state over one entity sample directory.

    ``hide``: item attributes not to show besides those hidden at the draw (``entities --hide``)
    and the weight; ``show_ids``: show the item ids too (they may give the answer away)."""

    def __init__(self, sample_dir, *, hide=(), show_ids: bool = False):
        self.given_dir = str(sample_dir)
        self.sample = EntitySample.read(sample_dir)
        self.sample_dir = self.sample.path
        s = self.sample
        self.store = EntityStore(s, create=True, find_items=inputs_finder(s))
        attrs = [c for c in s.items.column_names if c != "item_id"]
        unknown = [c for c in hide if c not in attrs]
        if unknown:
            raise InputError(f"Column(s) {', '.join(map(repr, unknown))} to hide are not item attributes. "
                             f"Attributes: {', '.join(map(repr, attrs)) or '(none)'}.")
        self.columns = [c for c in s.metadata.get("shown") or [] if c not in set(hide) and c in attrs]
        self.show_ids = bool(show_ids)
        self.tasks = {t["anchor"]: t for t in s.tasks()}
        self.order = list(dict.fromkeys(s.draws.column("item_id").to_pylist()))
        self.number = {a: k + 1 for k, a in enumerate(self.order)}
        key = sample_key(s)
        ids = s.items.column("item_id").to_pylist()
        self.ref_of = {i: item_ref(key, i) for i in ids}
        self.id_of = {r: i for i, r in self.ref_of.items()}
        cols = {c: s.items.column(c).to_pylist() for c in self.columns}
        self.values = {i: [_display(cols[c][k]) for c in self.columns] for k, i in enumerate(ids)}
        # the search: each item's shown values as one lower-case text, in the order of their references
        self._index = sorted(((self.ref_of[i], i, " \u241f ".join(v for v in vals if v is not None).casefold())
                              for i, vals in self.values.items()), key=lambda x: x[0])
        self._showing: dict = {}  # rater -> the anchor on their screen
        self._mutex = threading.Lock()
        self._anchors = set(self.order)
        # each (anchor, item) where the task lists it: its members first, then its candidates
        self._place = {(a, x["item_id"]): (self.number[a], k) for a, t in self.tasks.items()
                       for k, x in enumerate([*t["members"], *t["candidates"]])}
        self._members = {(a, m["item_id"]) for a, t in self.tasks.items() for m in t["members"]}
        # the owner's view names raters as the pair app's does (its naming reads the store's invite links only)
        self._naming = OwnerView(self.store, None, target_width=None, show_raters=False, given_dir=self.given_dir)
        self._cache: tuple | None = None  # (the answers' version, the estimates' dict)

    # ------------------------------------------------------------------ what the page shows
    def item_view(self, i) -> dict:
        d = {"ref": self.ref_of.get(i), "values": self.values.get(i, [None] * len(self.columns))}
        if self.show_ids:
            d["id"] = _display(i)
        return d

    def task_view(self, anchor) -> dict:
        t = self.tasks[anchor]
        return {"anchor": self.ref_of[anchor], "number": self.number[anchor], "columns": self.columns,
                "item": self.item_view(anchor),
                "members": [self.item_view(m["item_id"]) for m in t["members"]],
                "candidates": [self.item_view(c["item_id"]) for c in t["candidates"]],
                "members_total": t.get("members_total", len(t["members"]))}

    def _anchor(self, ref):
        a = self.id_of.get(ref) if isinstance(ref, str) else None
        if a is None or a not in self.tasks:
            raise InputError(f"{ref!r} is not an anchor of this entity sample (reload the page).")
        return a

    # ------------------------------------------------------------------ order and progress
    def _next(self, rater: str, judged: set) -> object | None:
        with self._mutex:
            mine = self._showing.get(rater)
            if mine is not None and mine not in judged:
                return mine
            held = {a for r, a in self._showing.items() if r != rater}
            nxt = next((a for a in self.order if a not in judged and a not in held), None)
            if nxt is None:
                nxt = next((a for a in self.order if a not in judged), None)
            if nxt is None:
                self._showing.pop(rater, None)
            else:
                self._showing[rater] = nxt
            return nxt

    def state(self, rater: str | None) -> dict:
        """Progress, and ``rater``'s next anchor (``None``: progress only). No estimate."""
        if rater is not None:
            check_rater(rater)
        live = self.store.live(source="person")
        judged = {r["anchor"] for r in live}
        prefix = next((k for k, a in enumerate(self.order) if a not in judged), len(self.order))
        d = {"ok": True, "anchors": len(self.order), "judged_anchors": len(judged), "prefix": prefix,
             "all_judged": len(judged) >= len(self.order)}
        if rater is not None:
            mine = {r["anchor"] for r in live if r["rater"] == rater}
            nxt = self._next(rater, judged)
            d.update(rater=rater, rater_anchors=len(mine), can_undo=bool(mine),
                     next=self.task_view(nxt) if nxt is not None else None)
        return d

    # ------------------------------------------------------------------ answering
    def _added_id(self, entry, k: int):
        """An added item: ``{"ref": R}`` (or the reference itself) from the page, or ``{"item_id": ID}``
        (an item of the inputs, named by an API client)."""
        if isinstance(entry, str):
            entry = {"ref": entry}
        if not isinstance(entry, dict) or len(entry) != 1 or not {"ref", "item_id"} & set(entry):
            raise InputError(f"added[{k}] must be {{\"ref\": ...}} or {{\"item_id\": ...}}. Got {entry!r} instead.")
        if "item_id" in entry:
            return self.store.check_id(entry["item_id"], "Item")
        i = self.id_of.get(entry["ref"]) if isinstance(entry["ref"], str) else None
        if i is None:
            raise InputError(f"added[{k}]: {entry['ref']!r} is not an item of this entity sample (reload the page).")
        return i

    def rows_of(self, anchor, members, added, search) -> list:
        """The rows of one submission (see the module), checked for completeness."""
        t = self.tasks[anchor]
        want = [m["item_id"] for m in t["members"]]
        cands = [c["item_id"] for c in t["candidates"]]
        if search not in ("searched", "not searched"):
            raise InputError(f"'search' must be 'searched' or 'not searched' (whether the entity's items outside "
                             f"both clusters were looked for). Got {search!r} instead.")
        if not isinstance(members, list) or not isinstance(added, list):
            raise InputError("'members' and 'added' must be lists.")
        got: dict = {}
        for k, m in enumerate(members):
            if not isinstance(m, dict) or set(m) != {"ref", "answer"}:
                raise InputError(f"members[{k}] must be {{\"ref\": ..., \"answer\": ...}}. Got {m!r} instead.")
            i = self.id_of.get(m["ref"]) if isinstance(m["ref"], str) else None
            if i not in want:
                raise InputError(f"members[{k}]: {m['ref']!r} is not a member of this anchor's clusters.")
            if i in got:
                raise InputError(f"members[{k}]: a member is answered twice.")
            if m["answer"] not in ("same", "different", "unsure"):
                raise InputError(f"members[{k}]: the answer must be same, different or unsure. Got "
                                 f"{m['answer']!r} instead.")
            got[i] = m["answer"]
        if len(got) < len(want):
            n = len(want) - len(got)
            raise InputError(f"{n} member{'s' if n > 1 else ''} of this item's clusters {'are' if n > 1 else 'is'} "
                             "not answered yet: each is same, different or can't tell.")
        extra = [self._added_id(e, k) for k, e in enumerate(added)]
        for i in extra:
            if i == anchor:
                raise InputError("The item itself cannot be added: it is always its own entity; add only other "
                                 "items of the same entity.")
            if i in got:
                raise InputError("An added item is a member of this item's clusters: answer it 'same' there "
                                 "instead.")
        rows = [(i, got[i]) for i in want]
        for c in cands:
            if c in extra:
                rows.append((c, "same"))
            elif search == "searched":
                rows.append((c, "different"))
        rows += [(i, "same") for i in dict.fromkeys(extra) if i not in cands]
        rows.append((None, search))
        return rows

    def submit(self, rater: str, anchor_ref, *, members, added, search, request_id=None) -> dict:
        """Record ``rater``'s answers of one anchor (on disk on return), then their new state."""
        check_rater(rater)
        anchor = self._anchor(anchor_ref)
        rows = self.rows_of(anchor, members, added, search)
        sub = self.store.record_anchor(anchor, rows, rater=rater, source="person", request_id=request_id)
        with self._mutex:
            if self._showing.get(rater) == anchor:
                del self._showing[rater]
        return {"recorded": self.submitted_view(sub), **self.state(rater)}

    def submitted_view(self, sub: Submitted) -> dict:
        """A submission as the page fills it in again: member answers, items added, the search."""
        members = {m["item_id"] for m in self.tasks[sub.anchor]["members"]}
        out = {"anchor": self.ref_of[sub.anchor], "members": {}, "added": [], "search": None, "answers": len(sub.rows)}
        for i, a in sub.rows:
            if i is None:
                out["search"] = a
            elif i in members:
                out["members"][self.ref_of[i]] = a
            elif a == "same" and i in self.ref_of:
                out["added"].append(self.item_view(i))
        return out

    def undo(self, rater: str) -> dict | None:
        """Withdraw the rater's last anchor; it is their next one again, with their answers to fill
        in. ``None`` when there is nothing to undo."""
        check_rater(rater)
        sub = self.store.undo(rater)
        if sub is None:
            return None
        with self._mutex:
            self._showing[rater] = sub.anchor
        return {"undone": self.submitted_view(sub), **self.state(rater)}

    # ------------------------------------------------------------------ search
    def search(self, anchor_ref, query) -> dict:
        """The sample's items whose shown values hold every word of ``query`` (case-insensitive),
        but the anchor, its members and its candidates (listed already): at most
        :data:`SEARCH_LIMIT`, with how many matched."""
        anchor = self._anchor(anchor_ref)
        if not isinstance(query, str):
            raise InputError("The search text must be text.")
        if len(query) > MAX_QUERY:
            raise InputError(f"The search text is longer than {MAX_QUERY} characters.")
        words = query.casefold().split()
        if not words:
            return {"ok": True, "query": query, "total": 0, "results": []}
        t = self.tasks[anchor]
        listed = {anchor, *(m["item_id"] for m in t["members"]), *(c["item_id"] for c in t["candidates"])}
        hits = [i for _, i, text in self._index if i not in listed and all(w in text for w in words)]
        return {"ok": True, "query": query, "total": len(hits), "columns": self.columns,
                "results": [self.item_view(i) for i in hits[:SEARCH_LIMIT]]}


    # ------------------------------------------------------------------ the owner's view
    def _aliases(self, live) -> dict:
        """How the owner sees the people's names (:meth:`abcde.judging.owner_view.OwnerView.aliases`:
        a name the owner invited as it is, the others "rater 1", "rater 2", … in the order they
        first answered)."""
        return self._naming.aliases([SimpleNamespace(rater=r["rater"]) for r in live if r["source"] == "person"], None)

    def _version(self) -> tuple:
        """Changes whenever an answer the estimates read changes: the store's, the oracle's file, the model's."""
        files = []
        for name in (ANSWERS_FILE, MODEL_FILE):
            try:
                st = os.stat(self.sample_dir / name)
                files.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                files.append(None)
        return (self.store.version(), *files)

    def estimates(self) -> dict:
        """``estimate_entities(DIR).to_dict()``: what ``abcde quality DIR --json`` prints (the same
        answers and settlements), computed once per version of the answers; ``{"unavailable": why}``
        when the estimator failed (the app keeps collecting answers)."""
        version = self._version()
        with self._mutex:
            if self._cache is not None and self._cache[0] == version:
                return self._cache[1]
        try:
            d = _finite(estimate_entities(self.sample).to_dict())
        except Exception as exc:  # noqa: BLE001 - the owner's page still shows the progress and the queue
            if not isinstance(exc, AbcdeError):
                traceback.print_exc(file=sys.stderr)
            d = {"unavailable": f"the estimator failed: {type(exc).__name__}: {exc}"}
        with self._mutex:
            self._cache = (version, d)
        return d

    def _groups(self) -> tuple[dict, list]:
        """Every (anchor, item)'s answers (:func:`abcde.completion.judgements.group_answers`) and the
        store's live answers of people."""
        rows, where = load_answers(self.sample, self.store)
        return group_answers(rows, self._anchors, where), self.store.live(source="person")

    def owner_state(self) -> dict:
        """What the owner's view shows: progress overall and per rater (anchors answered, their
        answers), the live estimates and the verdict (:meth:`estimates`), the settle queue's counts
        and, once every anchor is answered, the next step."""
        d = self.state(None)
        groups, live = self._groups()
        alias = self._aliases(live)
        per: dict = {}
        for r in live:
            name = alias[r["rater"]]
            p = per.setdefault(name, {"rater": name, "anchors": set(), "answers": 0, "same": 0, "different": 0,
                                      "unsure": 0, "searched": 0, "not_searched": 0, "last_at": None})
            p["anchors"].add(r["anchor"])
            p["answers"] += r["item_id"] is not None
            p[r["answer"].replace(" ", "_")] += 1
            p["last_at"] = r["created_at"]
        for p in per.values():
            p["anchors"] = len(p["anchors"])
        states = [g.state for g in groups.values()]
        settle = {k: states.count(k) for k in ("waiting", "settled", "inert")}
        est = self.estimates()
        d.update(raters=sorted(per), rater_progress=list(per.values()), estimates=est, verdict=est.get("verdict"),
                 answers=est.get("answers"), settle=settle, command=f"abcde quality {shlex.quote(self.given_dir)}")
        d["next_step"] = None
        if d["all_judged"]:
            w = settle["waiting"]
            first = (f"settle the {w} answer{'s' * (w != 1)} where raters differ (until then each counts as can't "
                     "tell); then " if w else "")
            d["next_step"] = {"command": d["command"], "settle_first": w,
                              "message": f"Every drawn item has its answers. Next: {first}run this (the server may keep "
                                         "running; the answers stay in the store) for these estimates in the "
                                         "terminal, --json for a file:"}
        return d

    def export_table(self) -> pa.Table:
        """Every live answer and the owner's live settlements, as the owner's CSV export has them
        (:meth:`abcde.completion.store.EntityStore.to_table`)."""
        return self.store.to_table()

    # ------------------------------------------------------------------ the settle queue
    def settle_state(self) -> dict:
        """The owner's settle queue: the (anchor, item)s whose answers differ and no settlement of the
        owner's settles (``waiting``, in draw order, the first :data:`~abcde.judging.settle_queue.SETTLE_PAGE`),
        those the owner settled (``settled``, newest first) and those whose settlement counts nowhere
        because the answers agree now (``inert``, newest first); each with the anchor and the item (their
        shown attributes; ``item`` None for the search outside both clusters), every answer with its
        rater (named as in the owner's view), what it counts as (``result``), and the owner's answer
        that counts (``owner``) or not (``owner_earlier``)."""
        groups, live = self._groups()
        alias = self._aliases(live)
        when = {(r["anchor"], r["item_id"]): r["created_at"] for r in self.store.settlements()}
        queue: dict = {"waiting": [], "settled": [], "inert": []}
        for g in groups.values():
            if g.state is not None:
                queue[g.state].append(g)
        queue["waiting"].sort(key=lambda g: self._place.get((g.anchor, g.item_id), (self.number[g.anchor], 1 << 30)))
        for k in ("settled", "inert"):
            queue[k].sort(key=lambda g: when.get((g.anchor, g.item_id)) or "", reverse=True)

        def view(g) -> dict:
            kind = ("search" if g.item_id is None else "member" if (g.anchor, g.item_id) in self._members
                    else "candidate")
            return {"anchor": {**self.item_view(g.anchor), "number": self.number[g.anchor]},
                    "item": None if g.item_id is None else self.item_view(g.item_id), "kind": kind,
                    "answers": [{"rater": alias.get(r.get("rater"), r.get("rater") or r.get("source")),
                                 "source": r.get("source"), "answer": r.get("answer")} for r in g.rows],
                    "result": g.answer, "owner": g.owner if g.settled else None,
                    "owner_earlier": None if g.settled else g.owner}

        return {"ok": True, "columns": self.columns, "rule": RULE,
                **{f"{k}_total": len(v) for k, v in queue.items()},
                **{k: [view(g) for g in v[:SETTLE_PAGE]] for k, v in queue.items()}}

    def settle(self, anchor_ref, item_ref, answer, *, request_id=None) -> dict:
        """The owner's answer of one (anchor, item) whose answers differ (``item_ref`` None: the
        anchor's search), on disk on return (:func:`abcde.completion.judgements.settle_answer`), then
        :meth:`settle_state` and ``settlement`` (what was stored; ``written`` False when it was the
        live answer already).

        Raises
        ------
        ~abcde.completion.judgements.NothingToSettleError
            The answers of it do not differ.
        """
        anchor = self._anchor(anchor_ref)
        if item_ref is None:
            item = None
        else:
            item = self.id_of.get(item_ref) if isinstance(item_ref, str) else None
            if item is None:
                raise InputError(f"{item_ref!r} is not an item of this entity sample (reload the page).")
        row, written = settle_answer(self.store, anchor, item, answer, request_id=request_id)
        return {**self.settle_state(), "settlement": {"anchor": anchor_ref, "item": item_ref, "answer": row["answer"],
                                                      "rater": OWNER, "created_at": row["created_at"],
                                                      "written": written}}


__all__ = ["EntitySession", "RULE", "SEARCH_LIMIT", "inputs_finder", "item_ref"]
