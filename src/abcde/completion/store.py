"""The answer store of an entity sample: ``DIR/entity_judgements.sqlite``, where people's answers go.

The judging app (``abcde judge serve DIR`` on an entity sample) writes here; ``abcde quality DIR``
reads the live rows beside ``DIR/entity_judgements.parquet`` (the oracle's file:
:func:`abcde.completion.judgements.load_answers`).

The rows
--------
One table ``answers``, append-only: one row per answer, ``anchor``, ``item_id`` (``NULL`` for the
row that says whether the entity's items outside both clusters were looked for), ``answer``
(``same``, ``different``, ``unsure``; ``searched`` or ``not searched`` on the search row),
``rater``, ``source`` (``person``, ``model`` or ``oracle``), ``request_id`` (unique: a replayed
request fails instead of counting twice), ``created_at`` and ``withdrawn_at``. The ids are stored
as the sample's ids are (whole numbers or text; the columns have no type, so SQLite converts
neither). A submission (:meth:`EntityStore.record_anchor`) is every answer of one anchor by one
rater, written in one transaction; a partial unique index allows one live answer per rater,
anchor and item (the search row included), and a rater who has answered an anchor undoes that
first to answer it again. Undo (:meth:`EntityStore.undo`) withdraws the rater's last anchor: its
rows are kept, marked withdrawn. Only live rows count.

Every write is checked (:meth:`EntityStore.check_rows`): the anchor is an anchor of the sample,
the answer one of the vocabulary, the item not the anchor itself; a member or candidate of the
anchor may be answered same, different or unsure; any other item only added (``same``), and it
must be an item of the sample (``items.parquet``: the anchors, their members and candidates) or,
when the store was opened with ``find_items`` (the judging app passes a look-up in the recorded
inputs), an item of the inputs. Each refusal is one line.

Durability and the locks
------------------------
As the pair sample's store (:mod:`abcde.samples.store`), with its helpers: WAL journal,
``synchronous=FULL``, one ``BEGIN IMMEDIATE`` transaction per submission, so an answer is on disk
when :meth:`EntityStore.record_anchor` returns (the app answers the request only after that) and
survives a killed process; each write transaction stamps page 1 so a write-ahead log that is not
this store's is set aside, never replayed (:func:`~abcde.samples.sqlite_guard.check_side_files`);
every operation holds the directory's in-use lock (``.judging.lock``) shared and claims the file
for its folder (:func:`~abcde.samples.dir_lock.claim_store`); a new store is built aside and
linked into place whole; an existing one must be abcde's store of this sample (``meta``:
``kind`` and ``sample_id``, a digest of the sample's drawn files) and pass ``PRAGMA
quick_check``. The judging server holds the directory's serving lock
(:func:`~abcde.samples.dir_lock.lock_directory`: one server per directory) and the store in use
for its whole run (:meth:`EntityStore.hold`).

The owner's settlements
-----------------------
A second table ``settlements``, append-only too: the owner's answer of one (anchor, item) (``item_id``
``NULL``: the anchor's search outside both clusters) whose raters' live answers differ: ``same``,
``different`` or ``unsure`` (``searched`` or ``not searched`` for the search), with ``rater`` and
``source`` ``owner``, ``request_id``, ``created_at`` and ``withdrawn_at``; one live settlement per
(anchor, item) (:meth:`EntityStore.settle`: a new answer withdraws the one before, kept). It counts
while the raters' live answers of that (anchor, item) still differ, and then replaces the
conflict's ``unsure``; it counts nowhere else (the one rule:
:class:`abcde.completion.judgements.Answered`). A store made before settlements existed gets the
table with its first settlement.

Invite links (``judge serve --raters``) are kept in this file too, in the table ``invites`` that
:class:`abcde.samples.invites.InviteBook` writes through :meth:`EntityStore.connect` and
:meth:`EntityStore.transaction`, as for a pair sample.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa

from abcde.completion.sample import EntitySample, files_key
from abcde.core.names import SOURCES
from abcde.errors import InputError
from abcde.samples.dir_lock import StoreClaim
from abcde.samples.ledger_file import build_store, check_store_file, stat_store
from abcde.samples.ledger_rows import utc_now
from abcde.samples.ledger_rules import DuplicateJudgementError, check_request_id
from abcde.samples.raters import OWNER, check_rater
from abcde.samples.sqlite_guard import StoreError, StoreFileError, check_side_files
from abcde.samples.store_access import StoreAccess, same_file

STORE_FILE = "entity_judgements.sqlite"
KIND = "abcde.entity_judgements"
ITEM_ANSWERS = ("same", "different", "unsure")
SEARCH_ANSWERS = ("searched", "not searched")

#: The owner's settlements (see the module): made with the store, or with the first settlement in a store
#: made before them (each statement on its own, inside that settlement's transaction).
SETTLEMENTS_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS settlements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    anchor NOT NULL,
    item_id,
    answer TEXT NOT NULL CHECK (answer IN ('same', 'different', 'unsure', 'searched', 'not searched')),
    rater TEXT NOT NULL CHECK (rater = 'owner'),
    source TEXT NOT NULL CHECK (source = 'owner'),
    request_id TEXT UNIQUE,
    created_at TEXT NOT NULL,
    withdrawn_at TEXT,
    CHECK ((item_id IS NULL) = (answer IN ('searched', 'not searched')))
)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS settlements_live ON settlements (anchor, ifnull(item_id, x'00'))
    WHERE withdrawn_at IS NULL""")

#: The store's tables. The id columns have no declared type (no affinity: an id is kept as given,
#: a whole number or text). The live index counts the search row (item_id NULL) as one item.
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    anchor NOT NULL,
    item_id,
    answer TEXT NOT NULL CHECK (answer IN ('same', 'different', 'unsure', 'searched', 'not searched')),
    rater TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('person', 'model', 'oracle')),
    request_id TEXT UNIQUE,
    created_at TEXT NOT NULL,
    withdrawn_at TEXT,
    CHECK ((item_id IS NULL) = (answer IN ('searched', 'not searched')))
);
CREATE UNIQUE INDEX IF NOT EXISTS answers_live ON answers (rater, anchor, ifnull(item_id, x'00'))
    WHERE withdrawn_at IS NULL;
CREATE INDEX IF NOT EXISTS answers_anchor ON answers (anchor);
""" + "".join(f"{statement};\n" for statement in SETTLEMENTS_SCHEMA)


def sample_key(sample: EntitySample) -> str:
    """The sample's identity in its store: its ``sample_id``, kept by ``--extend``
    (:func:`abcde.completion.sample.files_key` of the files it was first drawn with)."""
    return sample.metadata.get("sample_id") or files_key(sample.metadata.get("files") or {})


@dataclass(frozen=True)
class Submitted:
    """One rater's answers of one anchor as stored: ``rows`` are ``(item_id, answer)``, the search
    row's ``item_id`` ``None``."""

    anchor: object
    rater: str
    source: str
    rows: tuple
    created_at: str

    def to_dict(self) -> dict:
        return {"anchor": self.anchor, "rater": self.rater, "source": self.source, "created_at": self.created_at,
                "answers": [{"item_id": i, "answer": a} for i, a in self.rows]}


def _id_kind(typ: pa.DataType) -> type:
    if pa.types.is_integer(typ):
        return int
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return str
    raise InputError(f"The entity sample's item ids are of type {typ}; the answer store keeps whole-number or text "
                     "ids only.")


class EntityStore(StoreAccess):
    """The answers of one entity sample, in ``DIR/entity_judgements.sqlite`` (see the module).

    ``create``: make the store when there is none (the judging app); otherwise a missing store is
    an error (a reader checks :meth:`exists` first). ``find_items``: ``ids -> the ids among them that
    are items of the recorded inputs``, for answers adding items from outside the sample; without
    it such an answer is refused. Every method opens its own connection under the directory's
    in-use lock, so one store object may serve many threads."""

    def __init__(self, sample_dir, *, create: bool = False,
                 find_items: Callable[[list], Iterable] | None = None):
        self.sample = sample_dir if isinstance(sample_dir, EntitySample) else EntitySample.read(sample_dir)
        self.path = self.sample.path / STORE_FILE
        self.key = sample_key(self.sample)
        self.find_items = find_items
        s = self.sample
        self.id_type = s.anchors.schema.field("item_id").type
        self._kind = _id_kind(self.id_type)
        self.anchors = s.anchors.column("item_id").to_pylist()
        self._anchor_set = set(self.anchors)
        self.listed: dict = {}  # anchor -> its members and candidates (the anchor itself left out)
        for t in (s.members, s.candidates):
            for a, i in zip(t.column("anchor").to_pylist(), t.column("item_id").to_pylist()):
                if a != i:
                    self.listed.setdefault(a, set()).add(i)
        self.items = set(s.items.column("item_id").to_pylist())
        self._file: tuple[int, int] | None = None
        with self._use(opening=True, create=create):
            pass

    @staticmethod
    def exists(sample_dir) -> bool:
        """Whether the sample directory has an answer store (never creates one)."""
        path = sample_dir.path if isinstance(sample_dir, EntitySample) else Path(sample_dir)
        return os.path.lexists(path / STORE_FILE)

    # ------------------------------------------------------------------ opening
    # The lock, the claim, connect(), transaction() and hold(): StoreAccess's (abcde.samples.store_access).
    def _open(self, alone: bool, create: bool = False) -> None:
        path = self.path
        st = stat_store(path, what="entity answer store")
        if st is None:
            if not create:
                raise StoreFileError(f"There is no entity answer store '{path}' (answers are stored there by "
                                     "'abcde judge serve' on the entity sample).")
            if not alone:
                check_side_files(path)
            self._create()
            st = os.stat(path)
        self._file = check_store_file(path, st, self._check_content, what="entity answer store",
                                      writer="abcde judge serve")

    def _check_content(self, con: sqlite3.Connection) -> None:
        path = self.path
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        if not {"meta", "answers"} <= tables or meta.get("kind") != KIND:
            raise StoreFileError(f"'{path}' is an SQLite database but not an entity answer store (no 'answers' table "
                                 f"of kind {KIND!r}); move it away to start a new store.")
        if meta.get("sample_id") != self.key:
            raise InputError(f"The entity answer store '{path}' belongs to another entity sample (sample "
                             f"{meta.get('sample_id')!r}; this directory holds {self.key!r}): move it away, or judge "
                             "in the directory it was made for.")
        problems = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            first = " ".join(str(problems[0]).split())[:200] if problems else "no answer"
            raise StoreFileError(f"The entity answer store '{path}' is damaged (integrity check: {first}). Nothing "
                                 "was written to it; restore it from a copy, or move it away to start a new store.")

    def _create(self) -> None:
        """Build the store aside (tables, the sample's id, the first stamp), then link it into place
        whole; when another process linked one first, that one is the store."""
        def fill(con: sqlite3.Connection) -> None:
            con.executemany("INSERT INTO meta VALUES (?, ?)", [("kind", KIND), ("sample_id", self.key),
                                                               ("created_at", utc_now())])

        build_store(self.path, SCHEMA, fill, what="entity answer store")

    def _check_same_file(self, claim: StoreClaim | None = None) -> None:
        if not same_file(self.path, self._file, claim):
            raise StoreError(f"The entity answer store '{self.path}' was moved or replaced while in use; nothing more "
                             "was stored. The answers recorded so far are in the store where it went.")

    # ------------------------------------------------------------------ settings
    def setting(self, key: str, value: str | None = None) -> str | None:
        """A serving setting kept in the store (``instructions``): ``value`` given replaces it
        (written only when it changed; ``""`` removes it), else the kept one (``None``: none)."""
        name = f"serve.{key}"
        with self.connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        kept = row[0] if row and row[0] else None
        if value is None:
            return kept
        if (value or None) != kept:
            with self.transaction() as con:
                con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
        return value or None

    # ------------------------------------------------------------------ the rules
    def check_id(self, value, what: str):
        """``value`` as an item id of the sample's type (a whole number, or text), or one clear line."""
        if isinstance(value, bool) or not isinstance(value, self._kind):
            raise InputError(f"{what} {value!r} is not an item id of this entity sample (its ids are "
                             f"{'whole numbers' if self._kind is int else 'text'}).")
        return value

    def check_rows(self, anchor, rows, *, rater, source) -> list:
        """The rows ``(item_id, answer)`` of ``rater``'s answers of ``anchor``, checked (see the
        module), as stored; each refusal is one line naming the item."""
        if source not in SOURCES:
            raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
        if source == "person":
            check_rater(rater)
        elif not isinstance(rater, str) or not rater or rater == OWNER:
            raise InputError(f"The rater must be a name. Got {rater!r} instead.")
        anchor = self.check_id(anchor, "Anchor")
        if anchor not in self._anchor_set:
            raise InputError(f"Anchor {anchor!r} is not an anchor of this entity sample (its {len(self.anchors):,} "
                             "drawn items).")
        out, seen, outside = [], set(), []
        listed = self.listed.get(anchor, set())
        for item, answer in rows:
            if item is None:
                if answer not in SEARCH_ANSWERS:
                    raise InputError(f"The search row of anchor {anchor!r} must say 'searched' or 'not searched' "
                                     f"(whether the entity's items outside both clusters were looked for); got "
                                     f"{answer!r}.")
            else:
                item = self.check_id(item, "Item")
                if answer not in ITEM_ANSWERS:
                    raise InputError(f"Answer {answer!r} for item {item!r}; expected one of "
                                     f"{', '.join(ITEM_ANSWERS)}.")
                if item == anchor:
                    raise InputError(f"Item {item!r} is the anchor itself, which is always its own entity; only "
                                     "other items are answered or added.")
                if item not in listed:
                    if answer != "same":
                        raise InputError(f"Item {item!r} is neither a member nor a candidate of anchor {anchor!r}: "
                                         f"an item from outside is only added (answer 'same'), not {answer!r}.")
                    if item not in self.items:
                        outside.append(item)
            if item in seen:
                raise InputError(f"{'The search row' if item is None else f'Item {item!r}'} is answered twice for "
                                 f"anchor {anchor!r}; one answer each.")
            seen.add(item)
            out.append((item, answer))
        if outside:
            found = set(self.find_items(outside)) if self.find_items is not None else set()
            missing = [i for i in outside if i not in found]
            if missing:
                where = "of this entity sample or of its inputs" if self.find_items else \
                    "of this entity sample (its anchors, their members and candidates)"
                raise InputError(f"An entity answer adds item {missing[0]!r}, which is not an item {where}: an "
                                 "entity's items are items of the inputs.")
        return out

    # ------------------------------------------------------------------ writing
    def record_anchor(self, anchor, rows, *, rater: str, source: str = "person",
                      request_id: str | None = None) -> Submitted:
        """Store every answer of ``anchor`` by ``rater`` (rows ``(item_id, answer)``, the search row's
        item ``None``) in one transaction; on return they are on disk. The rows of a request id
        ``R`` carry ``R#0``, ``R#1``, ... (each unique).

        Raises
        ------
        DuplicateJudgementError
            ``rater`` already has live answers of ``anchor`` (undo them first), or ``request_id`` was
            recorded before (a replayed request).
        InputError
            A row the rules refuse (:meth:`check_rows`), or no row at all.
        """
        rows = self.check_rows(anchor, list(rows), rater=rater, source=source)
        if not rows:
            raise InputError(f"No answer of anchor {anchor!r} to record.")
        check_request_id(request_id)
        now = utc_now()
        try:
            with self.transaction() as con:
                if request_id is not None and con.execute(
                        "SELECT 1 FROM answers WHERE request_id = ?", (f"{request_id}#0",)).fetchone():
                    raise sqlite3.IntegrityError("UNIQUE constraint failed: answers.request_id")
                if con.execute("SELECT 1 FROM answers WHERE rater = ? AND anchor = ? AND withdrawn_at IS NULL",
                               (rater, anchor)).fetchone():
                    raise DuplicateJudgementError(f"Rater {rater!r} has already answered anchor {anchor!r}; undo "
                                                  "that first to answer it again.")
                con.executemany(
                    "INSERT INTO answers (anchor, item_id, answer, rater, source, request_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(anchor, i, a, rater, source, None if request_id is None else f"{request_id}#{k}", now)
                     for k, (i, a) in enumerate(rows)])
        except sqlite3.IntegrityError as exc:
            if "request_id" in str(exc):
                raise DuplicateJudgementError(f"Request {request_id!r} was already recorded (a replayed or "
                                              "double-submitted request); nothing was changed.") from exc
            raise DuplicateJudgementError(f"Rater {rater!r} has already answered anchor {anchor!r}; undo that "
                                          "first to answer it again.") from exc
        return Submitted(anchor, rater, source, tuple(rows), now)

    def undo(self, rater: str, *, source: str = "person") -> Submitted | None:
        """Withdraw ``rater``'s last anchor (every live answer of the anchor they answered last; the
        rows are kept, marked withdrawn). Returns what was withdrawn, or ``None``: nothing to undo."""
        with self.transaction() as con:
            row = con.execute("SELECT anchor FROM answers WHERE rater = ? AND source = ? AND withdrawn_at IS NULL "
                              "ORDER BY id DESC LIMIT 1", (rater, source)).fetchone()
            if row is None:
                return None
            anchor = row[0]
            got = con.execute("SELECT id, item_id, answer, created_at FROM answers WHERE rater = ? AND source = ? "
                              "AND anchor = ? AND withdrawn_at IS NULL ORDER BY id", (rater, source, anchor)).fetchall()
            con.execute("UPDATE answers SET withdrawn_at = ? WHERE rater = ? AND source = ? AND anchor = ? "
                        "AND withdrawn_at IS NULL", (utc_now(), rater, source, anchor))
        return Submitted(anchor, rater, source, tuple((i, a) for _, i, a, _ in got), got[0][3])

    # ------------------------------------------------------------------ the owner's settlements
    def check_settlement(self, anchor, item_id, answer) -> tuple:
        """``(anchor, item_id)`` of a settlement, checked: the anchor one of the sample's, the item
        (``None``: the anchor's search) a member or candidate of it, the answer one of the item's
        (``same``, ``different``, ``unsure``) or the search's (``searched``, ``not searched``); each
        refusal one line. Whether the raters' answers differ is the caller's to check
        (:func:`abcde.completion.judgements.settle_answer`)."""
        anchor = self.check_id(anchor, "Anchor")
        if anchor not in self._anchor_set:
            raise InputError(f"Anchor {anchor!r} is not an anchor of this entity sample (its {len(self.anchors):,} "
                             "drawn items).")
        if item_id is None:
            if answer not in SEARCH_ANSWERS:
                raise InputError(f"The owner settles the search of anchor {anchor!r} with 'searched' or 'not searched'; "
                                 f"got {answer!r}.")
            return anchor, None
        item_id = self.check_id(item_id, "Item")
        if answer not in ITEM_ANSWERS:
            raise InputError(f"The owner settles item {item_id!r} with one of {', '.join(ITEM_ANSWERS)}; got "
                             f"{answer!r}.")
        if item_id not in self.listed.get(anchor, set()):
            raise InputError(f"Item {item_id!r} is neither a member nor a candidate of anchor {anchor!r}: only their "
                             "answers can differ, and be settled.")
        return anchor, item_id

    def settle(self, anchor, item_id, answer, *, request_id: str | None = None) -> tuple[dict, bool]:
        """Store the owner's settlement of ``(anchor, item_id)`` (:meth:`check_settlement`), on disk on
        return: a new live row, the owner's earlier one of it withdrawn (kept). The same answer as the
        live one writes nothing. Returns the live row and whether it was written.

        Raises
        ------
        DuplicateJudgementError
            ``request_id`` was recorded before (a replayed request).
        """
        anchor, item_id = self.check_settlement(anchor, item_id, answer)
        check_request_id(request_id)
        now = utc_now()
        try:
            with self.transaction() as con:
                for statement in SETTLEMENTS_SCHEMA:  # a store made before settlements: the table now
                    con.execute(statement)
                if request_id is not None and con.execute(
                        "SELECT 1 FROM settlements WHERE request_id = ?", (request_id,)).fetchone():
                    raise sqlite3.IntegrityError("UNIQUE constraint failed: settlements.request_id")
                was = con.execute("SELECT id, answer, created_at FROM settlements WHERE anchor = ? AND item_id IS ? "
                                  "AND withdrawn_at IS NULL", (anchor, item_id)).fetchone()
                if was is not None and was[1] == answer:
                    return self._settlement(anchor, item_id, answer, was[2]), False
                if was is not None:
                    con.execute("UPDATE settlements SET withdrawn_at = ? WHERE id = ?", (now, was[0]))
                con.execute("INSERT INTO settlements (anchor, item_id, answer, rater, source, request_id, created_at) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", (anchor, item_id, answer, OWNER, OWNER, request_id, now))
        except sqlite3.IntegrityError as exc:
            raise DuplicateJudgementError(f"Request {request_id!r} was already recorded (a replayed or "
                                          "double-submitted request); nothing was changed.") from exc
        return self._settlement(anchor, item_id, answer, now), True

    @staticmethod
    def _settlement(anchor, item_id, answer, created_at) -> dict:
        return {"anchor": anchor, "item_id": item_id, "answer": answer, "rater": OWNER, "source": OWNER,
                "created_at": created_at}

    def settlements(self, *, withdrawn: bool = False) -> list[dict]:
        """The owner's live settlements, oldest first: ``{anchor, item_id, answer, rater, source,
        created_at}`` (``rater`` and ``source`` ``owner``); ``withdrawn``: every one ever stored, with
        ``id``, ``request_id`` and ``withdrawn_at``. None in a store made before settlements."""
        with self.connect() as con:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settlements'").fetchone():
                return []
            if withdrawn:
                keys = ("id", "anchor", "item_id", "answer", "rater", "source", "request_id", "created_at",
                        "withdrawn_at")
                rows = con.execute(f"SELECT {', '.join(keys)} FROM settlements ORDER BY id").fetchall()
            else:
                keys = ("anchor", "item_id", "answer", "rater", "source", "created_at")
                rows = con.execute(f"SELECT {', '.join(keys)} FROM settlements WHERE withdrawn_at IS NULL "
                                   "ORDER BY id").fetchall()
        return [dict(zip(keys, r)) for r in rows]

    # ------------------------------------------------------------------ reading
    def live(self, *, rater: str | None = None, source: str | None = None) -> list[dict]:
        """The live answers, oldest first: ``{anchor, item_id, answer, rater, source, created_at}``."""
        sql = "SELECT anchor, item_id, answer, rater, source, created_at FROM answers WHERE withdrawn_at IS NULL"
        args: list = []
        if rater is not None:
            sql += " AND rater = ?"
            args.append(rater)
        if source is not None:
            sql += " AND source = ?"
            args.append(source)
        with self.connect() as con:
            rows = con.execute(sql + " ORDER BY id", args).fetchall()
        keys = ("anchor", "item_id", "answer", "rater", "source", "created_at")
        return [dict(zip(keys, r)) for r in rows]

    def history(self) -> list[dict]:
        """Every row ever stored, withdrawn ones included, oldest first."""
        with self.connect() as con:
            rows = con.execute("SELECT id, anchor, item_id, answer, rater, source, request_id, created_at, "
                               "withdrawn_at FROM answers ORDER BY id").fetchall()
        keys = ("id", "anchor", "item_id", "answer", "rater", "source", "request_id", "created_at", "withdrawn_at")
        return [dict(zip(keys, r)) for r in rows]

    def version(self) -> tuple:
        """Changes whenever an answer or a settlement is recorded or withdrawn (for caching)."""
        with self.connect() as con:
            out = con.execute("SELECT count(*), coalesce(max(id), 0), count(withdrawn_at) FROM answers").fetchone()
            if con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settlements'").fetchone():
                out += con.execute("SELECT count(*), coalesce(max(id), 0), count(withdrawn_at) FROM settlements"
                                   ).fetchone()
        return tuple(out)

    def to_table(self) -> pa.Table:
        """The live answers, then the owner's live settlements (``rater`` and ``source`` ``owner``), as
        a table: ``anchor, item_id, answer, rater, source, created_at`` (the ids of the sample's type)."""
        rows = self.live() + self.settlements()
        return pa.table({"anchor": pa.array([r["anchor"] for r in rows], self.id_type),
                         "item_id": pa.array([r["item_id"] for r in rows], self.id_type),
                         **{k: pa.array([r[k] for r in rows], pa.string())
                            for k in ("answer", "rater", "source", "created_at")}})


def live_answers(sample: EntitySample) -> list[dict]:
    """The live rows of the sample's answer store (none when it has no store; never creates one)."""
    if not EntityStore.exists(sample):
        return []
    return EntityStore(sample).live()


__all__ = ["EntityStore", "ITEM_ANSWERS", "KIND", "SCHEMA", "SEARCH_ANSWERS", "SETTLEMENTS_SCHEMA", "STORE_FILE",
           "Submitted", "live_answers", "sample_key"]
