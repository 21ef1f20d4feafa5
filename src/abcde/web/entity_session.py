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
"""

from __future__ import annotations

import hashlib
import threading

import ibis
import pyarrow as pa

from abcde.completion.judgements import recorded_diff
from abcde.completion.sample import EntitySample
from abcde.completion.store import EntityStore, Submitted, sample_key
from abcde.errors import InputError
from abcde.samples.raters import check_rater

#: The most search results shown at once.
SEARCH_LIMIT = 20
#: The longest search text read.
MAX_QUERY = 200


def _display(v):
    return None if v is None else str(v)


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

    # ------------------------------------------------------------------ what the page shows
    def item_view(self, i) -> dict:
        d = {"ref": self.ref_of[i], "values": self.values.get(i, [None] * len(self.columns))}
        if self.show_ids:
            d["id"] = _display(i)
        return d

    def task_view(self, anchor) -> dict:
        t = self.tasks[anchor]
        return {"anchor": self.ref_of[anchor], "number": self.number[anchor], "columns": self.columns,
                "item": self.item_view(anchor),
                "members": [self.item_view(m["item_id"]) for m in t["members"]],
                "candidates": [self.item_view(c["item_id"]) for c in t["candidates"]]}

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


__all__ = ["EntitySession", "SEARCH_LIMIT", "inputs_finder", "item_ref"]
