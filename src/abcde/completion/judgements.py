"""The answers of an entity sample: the judgement file, the oracle, and the weights of items added
from outside both clusters.

The answers are kept in ``DIR/entity_judgements.parquet``: one row per answer, ``anchor``,
``item_id``, ``answer`` (``same``, ``different``, ``unsure``; a row without ``item_id`` says
``searched`` or ``not searched``: whether the entity's items outside both clusters were looked
for), ``rater`` and ``source``. The file is written once and never replaced: the oracle writes it
when it is absent and, run again, checks that it would write the same answers. People's answers,
from the judging app, are kept in ``DIR/entity_judgements.sqlite`` (:mod:`abcde.completion.store`);
:func:`load_answers` reads both, and the owner's settlements kept there (source ``owner``).

Settling
    The answers of one (anchor, item) are read together (:func:`group_answers`, an
    :class:`Answered` each): when the raters' (and sources') answers differ, the item is *disputed*
    and counts as unsure, unless the owner settled it: the owner's answer (same, different or unsure;
    searched or not searched for the search) then replaces the conflict's unsure. A settlement counts
    only while the answers it settles still differ (a rater undid or changed, so they agree: it counts
    nowhere; they differ again: it counts again). :func:`abcde.completion.estimate.read_answers`, the
    owner's settle queue and :func:`settle_answer` read this one rule.
"""

from __future__ import annotations

import os
from pathlib import Path
from dataclasses import dataclass, field

import ibis
import pyarrow as pa
import pyarrow.parquet as pq

from abcde.core.diff import Diff, build_diff
from abcde.core.inputs import Inputs
from abcde.completion.sample import EntitySample
from abcde.completion.store import ITEM_ANSWERS, SEARCH_ANSWERS, STORE_FILE, EntityStore
from abcde.errors import InputError
from abcde.samples.raters import OWNER
from abcde.util.files import InputPrints, describe_fingerprint

ANSWERS_FILE = "entity_judgements.parquet"


#: The source (and rater) of the owner's settlements among the rows :func:`load_answers` gives.
OWNER_SOURCE = OWNER


def load_answers(s: EntitySample, store: EntityStore | None = None) -> tuple[list, str]:
    """The answers of the sample: the rows of its judgement file (the oracle's) and the live rows of
    its answer store (people's, :mod:`abcde.completion.store`), then the owner's live settlements
    (source and rater ``owner``), none when it has neither yet, and how to name where they were read.
    Each row is ``{anchor, item_id, answer, source, rater}``. ``store``: the sample's store, opened
    already (else opened here when it exists)."""
    p = s.path / ANSWERS_FILE
    rows, where = [], []
    if p.is_file():
        try:
            t = pq.read_table(p)
        except Exception as exc:  # noqa: BLE001 - any unreadable file: one line naming it
            raise InputError(f"The entity judgement file '{p}' cannot be read as Parquet ({exc}).") from None
        need = {"anchor", "item_id", "answer"}
        if not need <= set(t.column_names):
            raise InputError(f"The entity judgement file '{p}' lacks column(s) "
                             f"{', '.join(sorted(need - set(t.column_names)))} (it has {', '.join(t.column_names)}).")
        src = t.column("source").to_pylist() if "source" in t.column_names else ["oracle"] * t.num_rows
        who = t.column("rater").to_pylist() if "rater" in t.column_names else [None] * t.num_rows
        rows += [{**r, "source": x or "oracle", "rater": w or x or "oracle"}
                 for r, x, w in zip(t.select(["anchor", "item_id", "answer"]).to_pylist(), src, who)]
        where.append(f"'{p}'")
    if store is None and EntityStore.exists(s):
        store = EntityStore(s)
    if store is not None:
        rows += [{"anchor": r["anchor"], "item_id": r["item_id"], "answer": r["answer"],
                  "source": r.get("source") or "person", "rater": r["rater"]} for r in store.live()]
        rows += [{"anchor": r["anchor"], "item_id": r["item_id"], "answer": r["answer"], "source": OWNER_SOURCE,
                  "rater": OWNER} for r in store.settlements()]
        where.append(f"'{s.path / STORE_FILE}'")
    return rows, " and ".join(where) or str(p)


# ----------------------------------------------------------------------------- the settle rule
@dataclass
class Answered:
    """Every answer of one (anchor, item) (``item_id`` ``None``: the anchor's search outside both
    clusters): ``rows``, the raters' and sources' in the order read, and the owner's settling answer
    (``owner``; ``None``: none)."""

    anchor: object
    item_id: object
    rows: list = field(default_factory=list)
    owner: str | None = None

    @property
    def answers(self) -> list:
        return [r.get("answer") for r in self.rows]

    @property
    def disputed(self) -> bool:
        """The raters' answers differ."""
        return len(set(self.answers)) > 1

    @property
    def settled(self) -> bool:
        """The owner's answer settles a real dispute: it counts."""
        return self.disputed and self.owner is not None

    @property
    def state(self) -> str | None:
        """``waiting`` (disputed, not settled), ``settled``, ``inert`` (an owner's answer that counts
        nowhere: the answers agree), or ``None`` (no dispute, no owner's answer)."""
        if self.disputed:
            return "settled" if self.owner is not None else "waiting"
        return "inert" if self.owner is not None else None

    @property
    def answer(self):
        """What the (anchor, item) counts as: the owner's answer when it settles; else the raters'
        one answer, or when they differ ``unsure`` (the search: ``not searched``); ``None`` without an
        answer."""
        if not self.rows:
            return None
        if self.settled:
            return self.owner
        if self.disputed:
            return "not searched" if self.item_id is None else "unsure"
        return self.answers[0]

    @property
    def conflicts(self) -> int:
        """The answers that differ from what was read before them (the first answer, then unsure
        once two differ): how many times a row made this (anchor, item) unsure. 0 when settled."""
        if self.settled or self.item_id is None:
            return 0
        n, now = 0, None
        for a in self.answers:
            if now is not None and a != now:
                n, a = n + 1, "unsure"
            now = a
        return n


def group_answers(rows, anchors, where: str = "the answers") -> dict:
    """``{(anchor, item_id): Answered}`` of answer rows ``{anchor, item_id, answer, source?}`` in the
    order first read, each row checked (one clear line per bad row, naming it); rows of source
    ``owner`` are the owner's settlements (the last one of an (anchor, item) given is its answer).
    ``anchors``: the sample's anchors."""
    out: dict = {}
    for k, r in enumerate(rows):
        a, i, ans = r.get("anchor"), r.get("item_id"), r.get("answer")
        if a not in anchors:
            raise InputError(f"{where}, row {k + 1}: anchor {a!r} is not an item of this entity sample.")
        if i is None:
            if ans not in SEARCH_ANSWERS:
                raise InputError(f"{where}, row {k + 1}: a row without item_id must say 'searched' or 'not searched' "
                                 f"(the search outside both clusters); got {ans!r}.")
        else:
            if ans not in ITEM_ANSWERS:
                raise InputError(f"{where}, row {k + 1}: answer {ans!r} for item {i!r}; expected one of "
                                 f"{', '.join(ITEM_ANSWERS)}.")
            if i == a:
                raise InputError(f"{where}, row {k + 1}: item {i!r} is the anchor itself, which is always its own "
                                 "entity; only other items are answered.")
        g = out.get((a, i))
        if g is None:
            g = out[(a, i)] = Answered(a, i)
        if r.get("source") == OWNER_SOURCE:
            g.owner = ans
        else:
            g.rows.append(r)
    return out


class NothingToSettleError(InputError):
    """The owner tried to settle an (anchor, item) whose raters' answers do not differ."""


def settle_answer(store: EntityStore, anchor, item_id, answer, *, request_id: str | None = None) -> tuple[dict, bool]:
    """The owner's settlement of ``(anchor, item_id)`` (``item_id`` ``None``: the anchor's search),
    stored in ``store`` (:meth:`~abcde.completion.store.EntityStore.settle`: on disk on return) when
    the answers of it (:func:`load_answers`: the oracle's, people's) differ; returns the live
    settlement and whether it was written.

    Raises
    ------
    NothingToSettleError
        No answer, one answer, or answers that agree: nothing to settle (one line; an earlier
        settlement is kept, and counts nowhere).
    """
    anchor, item_id = store.check_settlement(anchor, item_id, answer)
    rows, where = load_answers(store.sample, store)
    g = group_answers([r for r in rows if r["anchor"] == anchor and r["item_id"] == item_id],
                      {anchor}, where).get((anchor, item_id), Answered(anchor, item_id))
    if not g.disputed:
        what = f"The search of anchor {anchor!r}" if item_id is None else f"Item {item_id!r} of anchor {anchor!r}"
        kept = " (your earlier settlement of it is kept, and counts nowhere)" if g.owner is not None else ""
        why = ("no rater answered it" if not g.rows else f"one rater answered it ({g.answers[0]})"
               if len(g.rows) == 1 else f"its raters' answers agree ({g.answers[0]})")
        raise NothingToSettleError(f"{what} has nothing to settle: {why}{kept}; the owner settles only answers that "
                                   "differ.")
    return store.settle(anchor, item_id, answer, request_id=request_id)


def recorded_diff(s: EntitySample) -> Diff:
    """The diff of the inputs the sample was drawn from, read again from their recorded paths; an
    input that changed since (its fingerprint differs) is refused in one line."""
    m = s.metadata
    paths, cols, was = m.get("input_paths") or {}, m.get("columns") or {}, m.get("inputs") or {}
    for role in ("base", "exp"):
        if role not in paths:
            raise InputError(f"The entity sample in '{s.path}' did not record its {role} file (drawn from a table in "
                             "memory): the items outside both clusters cannot be looked up.")
    given = Inputs(paths["base"], paths["exp"], items=paths.get("items"), item_id=cols.get("item_id", "item_id"),
                   cluster_id=cols.get("cluster_id", "cluster_id"), weight=cols.get("weight"))
    prints = InputPrints.of(given)
    for role, fp in was.items():
        if prints.prints.get(role) != fp:
            raise InputError(f"The {role} file '{paths.get(role)}' changed since the entity sample in '{s.path}' was "
                             f"drawn (recorded {describe_fingerprint(fp)}, now "
                             f"{describe_fingerprint(prints.prints.get(role))}): its answers would be read against "
                             "other items.")
    return build_diff(given, prints=prints)


def outside_weights(s: EntitySample, answers: dict) -> dict:
    """``{(anchor, item): weight}`` of the items answered the anchor's entity that are not members of
    its ``U(i)``: the candidates' from the sample, the others' from the recorded inputs. An item in
    neither is refused in one line."""
    members = set(zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()))
    wanted = {(a, i) for a, v in answers.items() for i in v.same if (a, i) not in members}
    if not wanted:
        return {}
    known = dict(zip(s.candidates.column("item_id").to_pylist(), s.candidates.column("weight").to_pylist()))
    if "weight" in s.items.column_names:
        known.update(zip(s.items.column("item_id").to_pylist(), s.items.column("weight").to_pylist()))
    rest = sorted({i for _, i in wanted if i not in known}, key=repr)
    if rest:
        diff = recorded_diff(s)
        typ = s.anchors.schema.field("item_id").type
        try:
            sel = ibis.memtable(pa.table({"item_id": pa.array(rest, typ)}))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise InputError(f"An entity answer names item {rest[0]!r}, which is not an item id of type {typ} (the "
                             "sample's item ids).") from None
        got = diff.engine.to_arrow(diff.joined.semi_join(sel, "item_id").select("item_id", "weight"),
                                   step="weights of added items")
        known.update(zip(got.column("item_id").to_pylist(), got.column("weight").to_pylist()))
        missing = [i for i in rest if i not in known]
        if missing:
            raise InputError(f"An entity answer adds item {missing[0]!r} ({len(missing):,} such), which is not an item "
                             "of both clusterings: an entity's items are items of the inputs.")
    return {(a, i): float(known[i]) for a, i in wanted}


def oracle_entities(sample_dir, column: str) -> Path:
    """Complete every anchor's entity from a ground-truth column, the search included: each member
    and candidate ``same`` when its value equals the anchor's (``unsure`` when either is null), every
    other item of the anchor's value added, and the search marked done. Written to
    ``DIR/entity_judgements.parquet``; run again, the same answers are kept and other ones refused."""
    s = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
    diff = recorded_diff(s)
    if diff.items is None or column not in diff.attributes:
        raise InputError(f"Oracle column {column!r} is not an item attribute of the inputs. Attributes: "
                         f"{', '.join(map(repr, diff.attributes)) or '(none)'}.")
    j = diff.joined.join(diff.items.select("item_id", column), "item_id")
    truth = diff.engine.to_arrow(j.select("item_id", v=j[column]), step="oracle truth")
    value = dict(zip(truth.column("item_id").to_pylist(), truth.column("v").to_pylist()))
    by_value: dict = {}
    for i, v in value.items():
        if v is not None:
            by_value.setdefault(v, []).append(i)
    members: dict = {}
    for a, i in zip(s.members.column("anchor").to_pylist(), s.members.column("item_id").to_pylist()):
        members.setdefault(a, []).append(i)
    for a, i in zip(s.candidates.column("anchor").to_pylist(), s.candidates.column("item_id").to_pylist()):
        members.setdefault(a, []).append(i)
    rows = []
    for a in s.anchors.column("item_id").to_pylist():
        va = value.get(a)
        listed = set(members.get(a, []))
        for i in members.get(a, []):
            if i == a:
                continue
            vi = value.get(i)
            ans = "unsure" if va is None or vi is None else ("same" if vi == va else "different")
            rows.append({"anchor": a, "item_id": i, "answer": ans})
        if va is not None:
            for i in by_value.get(va, []):
                if i != a and i not in listed:
                    rows.append({"anchor": a, "item_id": i, "answer": "same"})
        rows.append({"anchor": a, "item_id": None, "answer": "searched" if va is not None else "not searched"})
    typ = s.anchors.schema.field("item_id").type
    table = pa.table({"anchor": pa.array([r["anchor"] for r in rows], typ),
                      "item_id": pa.array([r["item_id"] for r in rows], typ),
                      "answer": pa.array([r["answer"] for r in rows], pa.string()),
                      "rater": pa.array([f"oracle:{column}"] * len(rows), pa.string()),
                      "source": pa.array(["oracle"] * len(rows), pa.string())})
    path = s.path / ANSWERS_FILE
    if path.exists():
        old = pq.read_table(path)
        if old.equals(table):
            return path
        if not _rows_within(old, table):
            raise InputError(f"'{path}' already holds other entity answers; the oracle never replaces answers (move "
                             "the file away to judge again).")
        # the sample was extended since (abcde entities --extend): every earlier answer is among these
    write_answer_file(path, table, replacing=path.exists())
    return path


def _rows_within(old: pa.Table, new: pa.Table) -> bool:
    """Whether every row of ``old`` is a row of ``new`` (as many times)."""
    from collections import Counter  # lazy: only when an answer file grows

    key = lambda t: Counter(map(tuple, zip(*(t.column(c).to_pylist() for c in t.column_names))))  # noqa: E731
    return old.column_names == new.column_names and not key(old) - key(new)


def write_answer_file(path: Path, table: pa.Table, *, replacing: bool) -> None:
    """Write an answer file at once: a new one only where none is (another run that wrote it meanwhile
    wins, nothing is replaced); with ``replacing``, the file that holds fewer rows (every one of them
    kept in ``table``) is replaced in one step."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    try:
        if replacing:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if another run wrote it meanwhile: nothing is replaced
    finally:
        if tmp.exists():
            os.unlink(tmp)


__all__ = ["ANSWERS_FILE", "OWNER_SOURCE", "Answered", "NothingToSettleError", "group_answers", "load_answers",
           "oracle_entities", "outside_weights", "recorded_diff", "settle_answer", "write_answer_file"]
