"""The judgement store: a SQLite file inside the pair sample directory.

``SAMPLE_DIR/judgements.sqlite`` holds every judgement made by people (the web
app), models (``abcde judge model``) or an oracle, one row each, with its rater,
its source (``person``, ``model`` or ``oracle``), an optional comment and the
time. It is append-only: undo marks a row withdrawn instead of deleting it, and a change
(:meth:`JudgementStore.change`) is a new row that supersedes the old one: in one transaction the
old row is marked withdrawn and the new one inserted with ``supersedes`` naming it (a column added
by the first change; a store that never had one has none). The rows of one rater and pair are
their history; the live one (at most one, by a partial unique index) is the latest answer, and
the only one any estimate reads.

One way in
----------
Every reader and writer (``judge serve``, ``judge model``, ``judge oracle``, ``judge export``,
``quality``, ``report``) opens the store through :class:`JudgementStore`, which does all of this
itself:

- **The lock.** ``SAMPLE_DIR/.judging.lock`` is the directory's in-use lock (``flock``): every
  operation on the store holds it shared, and a run that writes for a while (the judging server,
  a model run) holds it shared for the whole run (:meth:`JudgementStore.hold`), with one SQLite
  connection open. ``abcde pairs`` refuses to draw into a directory whose lock it cannot take
  exclusively, so a sample is never drawn again under a writer. The kernel releases the lock
  when a process ends, even by SIGKILL. One judging server per directory: it also holds an
  exclusive ``flock`` on the directory itself (:func:`~abcde.samples.dir_lock.lock_directory`).
- **One folder per store file.** Those locks are the folder's; the store file may be reached through
  another folder too (a hard link, e.g. ``cp -al`` of a sample directory), where SQLite would keep
  another write-ahead log. So every operation and every run also claims the store file itself for
  its folder (:func:`~abcde.samples.dir_lock.claim_store`, locks on the file whatever the path):
  while it is in use through one folder, any use through another is refused in one line, before
  anything is read or written; a second judging server through a link is refused before it
  acknowledges anything.
- **What SQLite would replay.** When the lock can be taken exclusively, no process of abcde has
  the store open, so a ``-wal`` or ``-journal`` beside it is a leftover, which SQLite replays into
  the store on the next open, whoever wrote it. A rollback journal never belongs to this store
  (it is always in WAL mode). A write-ahead log belongs to it only when every transaction in it
  carries the store's stamp and the stamps chain onto the store file: each write transaction
  writes page 1 with a fresh random nonce (``PRAGMA user_version``) and the nonce it replaced
  (``PRAGMA application_id``), so every committed transaction of its log holds a copy of page 1;
  the log is replayed only if those copies chain (each one's previous nonce is the nonce of the
  transaction before) and the chain starts at, or passes through, the nonce of the store file
  itself (:func:`~abcde.samples.sqlite_guard.wal_problem`). A log of another store, of a copy that
  went its own way, or of
  another program does not, and is moved aside (``judgements.sqlite-wal.refused-<time>``, never
  deleted: it may hold someone's judgements) and the open is refused in one line.
- **Identity.** The file must be an SQLite database with abcde's tables (``meta``,
  ``judgements``) recording the sample it belongs to: this sample or one it extends.
- **Integrity.** The file is not truncated (its size against its header) and ``PRAGMA
  quick_check`` passes (about 0.2 s for 100,000 judgements, a 16 MB store).
- **The same file.** Each later operation opens the store without creating it and checks it is
  still the file that was opened (device and inode): a store moved or replaced under a running
  command stops it with one line instead of making an empty store in its place.

A new store is built aside and linked into place whole (:func:`~abcde.samples.ledger_file.create_store`;
its tables and rows: :mod:`abcde.samples.ledger_rows`). Every failure is a
:class:`~abcde.samples.sqlite_guard.StoreError` (an :class:`~abcde.errors.AbcdeError`): one line
naming the path and what
was expected.

Durability and safety
---------------------
- WAL journal, ``synchronous=FULL``: a judgement is on disk when :meth:`JudgementStore.record`
  returns (the web app answers the request only after that), and survives a
  killed process. A write that fails (a full disk) raises and is not acknowledged; the
  transaction is rolled back and what was stored before is untouched.
- One transaction per judgement (``BEGIN IMMEDIATE``), so concurrent writers (two
  raters, a model run next to the web app) queue instead of corrupting anything.
- A partial unique index allows one live judgement per rater and pair, and a
  unique ``request_id`` makes a replayed request fail instead of counting twice.
- The store records the sample's id: after the pairs are re-drawn in the
  directory, the old store is refused instead of mixing samples.

Who judges which pair
---------------------
A person's rater name is checked in one place, :func:`abcde.samples.raters.check_rater`: besides
its characters, no name that reads as :data:`~abcde.samples.raters.OWNER` (the name of the owner's
link and of the owner's settling votes) once case, spaces, punctuation, width, invisible characters
and look-alike characters are set aside (:func:`~abcde.samples.raters.name_skeleton`: ``Owner ``,
``owner.``, ``ＯＷＮＥＲ``, ``own`` + zero-width space + ``er``, ``0wner``). With a people's budget
(``pairs --human-budget``) people judge the people's tasks only: :meth:`JudgementStore.validate`
refuses a person's or the oracle's judgement, change or settling vote of any other pair
(:class:`NotATaskError`, naming the pair); a model judges every pair. Judgements of other pairs
that an earlier abcde stored stay in the store, and count nowhere
(:func:`abcde.samples.people_tasks.outside_tasks`).

Invite links
------------
The invite links (``abcde judge serve --raters``) are kept in this file too, in their own table
``invites``; :class:`abcde.samples.invites.InviteBook` reads and writes them, through
:meth:`JudgementStore.connect` and :meth:`JudgementStore.transaction` like every other reader and
writer. The store itself never reads that table.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pyarrow as pa

from abcde.errors import InputError
from abcde.samples.people_tasks import people_pairs
from abcde.samples.dir_lock import StoreClaim
from abcde.samples.ledger_file import check_store_content, check_store_file, create_store, stat_store
from abcde.samples.ledger_reads import LedgerReads
from abcde.samples.ledger_rows import Recorded, has_supersedes, utc_now
from abcde.samples.ledger_rules import (KEEP, DuplicateJudgementError, LedgerRules, NotJudgedError, check_request_id,
                                        clean_comment)
from abcde.samples.sample_dir import PairSampleDir, task_table
from abcde.samples.sqlite_guard import STORE_NAME, StoreError, check_side_files, stamp
from abcde.samples.store_access import StoreAccess, same_file

# The names importable from here before the ledger's parts moved to their own modules (issue 40):
# still importable here.
from abcde.core.names import SOURCES, VOCABULARY  # noqa: F401
from abcde.errors import examples_text, with_option  # noqa: F401
from abcde.samples.ledger_file import fsync_dir as _fsync_dir  # noqa: F401
from abcde.samples.ledger_file import remove_stale_builds as _remove_stale_builds  # noqa: F401
from abcde.samples.ledger_rows import SCHEMA  # noqa: F401
from abcde.samples.ledger_rules import MAX_COMMENT, NotATaskError, UnknownPairError  # noqa: F401
from abcde.samples.ledger_rules import check_request_id as _check_request_id  # noqa: F401
from abcde.samples.ledger_rules import clean_comment as _clean_comment  # noqa: F401
from abcde.samples.people_tasks import outside_tasks  # noqa: F401
from abcde.samples.raters import OWNER, check_rater  # noqa: F401
from abcde.samples.sample_dir import check_hidden, sample_lineage  # noqa: F401
from abcde.samples.sqlite_guard import db_header  # noqa: F401
from abcde.util.files import write_table_file  # noqa: F401


class _Unchanged(Exception):
    """Raised inside :meth:`JudgementStore.change`'s transaction to roll it back: nothing changes."""


class JudgementStore(LedgerRules, LedgerReads, StoreAccess):
    """Judgements of one pair sample, in ``SAMPLE_DIR/judgements.sqlite``.

    Parameters
    ----------
    sample_dir
        A directory written by ``abcde pairs``.
    path
        The SQLite file (default ``SAMPLE_DIR/judgements.sqlite``).

    Opening checks everything of the module's "One way in" (the lock, what SQLite would
    replay, identity, integrity) and creates the store, whole, when there is none; any
    failure is one :class:`StoreError` line (a store of another sample: an
    :class:`~abcde.errors.InputError`). Every method opens its own connection under the
    directory's in-use lock, so one store object may be used from many threads (the web
    server's) and several processes may use one file; :meth:`hold` keeps the store in use
    for a whole run.

    Two of its parts live in their own modules: the write-side rules (:meth:`validate`,
    :class:`~abcde.samples.ledger_rules.LedgerRules`: they read the sample, never the file) and the
    read-side queries and exports (:meth:`live`, :meth:`history`, :meth:`judged_by`,
    :meth:`to_table`, ..., :class:`~abcde.samples.ledger_reads.LedgerReads`: they read only through
    :meth:`connect`). The one read path (:meth:`connect`), the one write path (:meth:`transaction`),
    the lock and :meth:`hold` are :class:`~abcde.samples.store_access.StoreAccess`'s, shared with the
    entity sample's answer store; opening (with :mod:`abcde.samples.ledger_file`'s checks) and every
    write stay here.

    Raises
    ------
    StoreError
        Not an abcde store, damaged or truncated, a foreign write-ahead log or journal beside it
        (moved aside), a directory in its place, a full disk while creating it.
    InputError
        The store belongs to another sample (the pairs were drawn again).
    """

    def __init__(self, sample_dir: str | os.PathLike, *, path: str | os.PathLike | None = None):
        self.sample = PairSampleDir.read(sample_dir)
        self.path = Path(path) if path else self.sample.path / STORE_NAME
        self.meta = self.sample.metadata
        self.id_type = self.meta["id_type"]
        self.tasks = task_table(self.sample.draws, self.sample.items.select(["item_id"])).to_pylist()
        self.task_by_pair = {t["pair_id"]: t for t in self.tasks}
        self.pair_ids = [t["pair_id"] for t in self.tasks]
        #: The people's tasks (``pairs --human-budget``), or None: every pair is one. People judge only
        #: these (:meth:`validate`); a judgement of another pair recorded before counts nowhere.
        self.people_tasks = people_pairs(self.sample.draws, self.meta)
        self._file: tuple[int, int] | None = None
        with self._use(opening=True):
            pass

    @classmethod
    def open(cls, sample_dir: str | os.PathLike, *, path: str | os.PathLike | None = None) -> "JudgementStore":
        """The one way to open a store (the same as ``JudgementStore(...)``)."""
        return cls(sample_dir, path=path)

    # ------------------------------------------------------------------ opening
    # The lock, the claim, connect(), transaction() and hold(): StoreAccess's (abcde.samples.store_access).
    def _open(self, alone: bool) -> None:
        path = self.path
        st = stat_store(path, what="judgement store")
        if st is None:
            if not alone:
                check_side_files(path)  # no process has a store open that does not exist
            create_store(path, self.meta["sample_id"])
            st = os.stat(path)
        self._file = check_store_file(path, st, lambda con: check_store_content(con, path, self.meta, self.sample.path),
                                      what="judgement store", writer="abcde judge")

    def _stamp(self, con) -> None:
        stamp(con)  # called by this module's name, which a test replaces to fail a transaction at its last write

    def _check_same_file(self, claim: StoreClaim | None = None) -> None:
        """The path still leads to the file that was opened (and ``claim``, when given, is on it)."""
        if not same_file(self.path, self._file, claim):
            raise StoreError(
                f"The judgement store '{self.path}' was moved or replaced while in use (the pairs drawn again, or the "
                "file moved); nothing more was stored. The judgements recorded so far are in the store where it went "
                f"(after 'abcde pairs --force': under '{self.path.parent / 'replaced'}').")

    # ------------------------------------------------------------------ settings
    def settings(self, **given) -> dict:
        """Serving settings kept in the store (``seed``, ``replicate``): a value given
        here is stored the first time; ``None`` means the stored (or default) one.
        A different value than the stored one is refused, because the random order
        and the replicated pairs depend on it."""
        defaults = {"seed": 0, "replicate": 0.0}
        out = {}
        with self.transaction() as con:
            for key, default in defaults.items():
                row = con.execute("SELECT value FROM meta WHERE key = ?", (f"serve.{key}",)).fetchone()
                stored = json.loads(row[0]) if row else None
                value = given.get(key)
                if stored is not None and value is not None and value != stored:
                    raise InputError(
                        f"This sample was first served with --{key} {stored}; got --{key} {value} now. The "
                        f"pair order and the replicated pairs depend on it: leave --{key} out or pass {stored}."
                    )
                chosen = stored if stored is not None else (value if value is not None else default)
                if stored is None:
                    con.execute("INSERT INTO meta VALUES (?, ?)", (f"serve.{key}", json.dumps(chosen)))
                out[key] = chosen
        return out

    def instructions(self, markdown: str | None = None) -> str | None:
        """The raters' instructions (Markdown text, ``judge serve --instructions FILE``) kept in the
        store, so a restarted server shows them without the file: ``markdown`` given replaces them
        (written only when it changed; ``""`` removes them), else the kept text (``None``: none)."""
        key = "serve.instructions"
        with self.connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        kept = row[0] if row and row[0] else None
        if markdown is None:
            return kept
        if not isinstance(markdown, str):
            raise InputError(f"The instructions must be text. Got {type(markdown).__name__} instead.")
        if (markdown or None) != kept:
            with self.transaction() as con:
                con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, markdown))
        return markdown or None

    # ------------------------------------------------------------------ writing
    def record(self, pair_id: str, judgement: str, *, rater: str, source: str = "person",
               comment: str | None = None, request_id: str | None = None) -> Recorded:
        """Store one judgement in its own transaction; on return it is on disk.

        Raises
        ------
        UnknownPairError
            The pair is not in the sample; :class:`NotATaskError`: a person's or the oracle's
            judgement of a pair that is not one of the people's tasks.
        DuplicateJudgementError
            ``rater`` already has a live judgement of the pair (undo it first), or
            ``request_id`` was recorded before (a replayed request).
        InputError
            A judgement outside {same, different, unsure}, a bad rater name or source.
        """
        self.validate(pair_id, judgement, rater=rater, source=source)
        comment = clean_comment(comment)
        check_request_id(request_id)
        now = utc_now()
        try:
            with self.transaction() as con:
                if request_id is not None and con.execute(
                        "SELECT 1 FROM judgements WHERE request_id = ?", (request_id,)).fetchone():
                    raise sqlite3.IntegrityError("UNIQUE constraint failed: judgements.request_id")
                cur = con.execute(
                    "INSERT INTO judgements (pair_id, judgement, rater, source, comment, request_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", (pair_id, judgement, rater, source, comment, request_id, now))
                rid = cur.lastrowid
        except sqlite3.IntegrityError as exc:
            if "request_id" in str(exc):
                raise DuplicateJudgementError(
                    f"Request {request_id!r} was already recorded (a replayed or double-submitted request); "
                    "nothing was changed.") from exc
            raise DuplicateJudgementError(
                f"Rater {rater!r} has already judged pair {pair_id!r}; undo that judgement first to change it."
            ) from exc
        return Recorded(rid, pair_id, judgement, rater, source, comment, now)

    def record_many(self, judgements, *, rater: str, source: str) -> int:
        """Store ``(pair_id, judgement)`` pairs of one (non-person) rater in one transaction (all
        or none). A pair the rater already judged the same way is skipped, so running a judge
        again adds nothing; a different answer is refused (undo the earlier one first).
        Returns how many judgements were added."""
        judgements = list(judgements)
        for pid, answer in judgements:
            self.validate(pid, answer, rater=rater, source=source)
        now = utc_now()
        added = 0
        with self.transaction() as con:
            earlier = dict(con.execute("SELECT pair_id, judgement FROM judgements WHERE rater = ? AND source = ? "
                                       "AND withdrawn_at IS NULL", (rater, source)).fetchall())
            changed = [(pid, earlier[pid], a) for pid, a in judgements if pid in earlier and earlier[pid] != a]
            if changed:
                pid, was, now_a = changed[0]
                raise DuplicateJudgementError(
                    f"Rater {rater!r} judged {len(changed)} pairs differently before (first: pair {pid!r} was "
                    f"{was!r}, now {now_a!r}); nothing was recorded. Undo the earlier judgements, or judge "
                    "under another rater name.")
            for pid, answer in judgements:
                if pid in earlier:
                    continue
                con.execute("INSERT INTO judgements (pair_id, judgement, rater, source, comment, request_id, "
                            "created_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)", (pid, answer, rater, source, now))
                earlier[pid] = answer
                added += 1
        return added


    def change(self, pair_id: str, judgement: str, *, rater: str, source: str = "person", comment=KEEP,
               request_id: str | None = None, renew: bool = False) -> tuple[Recorded, Recorded]:
        """Change ``rater``'s live judgement of ``pair_id``: a new judgement that supersedes it, in one
        transaction (on disk on return). The old row is kept, marked withdrawn (the same mechanism
        as :meth:`undo`); the new row's ``supersedes`` is the old row's id. ``comment``: the new
        judgement's comment (``None`` or blank: none); left out, the old comment is kept.

        Returns ``(was, now)``; ``now is was`` when the answer and comment are unchanged (nothing is
        written: a change to the same answer is no change), unless ``renew``: the same answer given
        again is then a new row too (the owner's settling vote cast again on a dispute it had not
        seen, :meth:`abcde.judging.session.JudgingSession.settle`).

        Raises
        ------
        UnknownPairError
            The pair is not in the sample; :class:`NotATaskError`: a person's or the oracle's
            change of a pair that is not one of the people's tasks.
        NotJudgedError
            ``rater`` has no live judgement of the pair (judge it instead).
        DuplicateJudgementError
            ``request_id`` was recorded before (a replayed request).
        InputError
            A judgement outside {same, different, unsure}, a bad rater name, source or comment.
        """
        self.validate(pair_id, judgement, rater=rater, source=source)
        keep = comment is KEEP
        comment = None if keep else clean_comment(comment)
        check_request_id(request_id)
        now = utc_now()
        try:
            with self.transaction() as con:
                row = con.execute(
                    "SELECT id, pair_id, judgement, rater, source, comment, created_at FROM judgements "
                    "WHERE rater = ? AND pair_id = ? AND source = ? AND withdrawn_at IS NULL",
                    (rater, pair_id, source)).fetchone()
                if row is None:
                    raise NotJudgedError(f"Rater {rater!r} has no judgement of pair {pair_id!r} to change; judge it "
                                         "instead.")
                was = Recorded(*row)
                if keep:
                    comment = was.comment
                if request_id is not None and con.execute(
                        "SELECT 1 FROM judgements WHERE request_id = ?", (request_id,)).fetchone():
                    raise sqlite3.IntegrityError("UNIQUE constraint failed: judgements.request_id")
                if judgement == was.judgement and comment == was.comment and not renew:
                    raise _Unchanged(was)  # rolls the transaction back: nothing stamped or written
                if not has_supersedes(con):
                    con.execute("ALTER TABLE judgements ADD COLUMN supersedes INTEGER")
                con.execute("UPDATE judgements SET withdrawn_at = ? WHERE id = ?", (now, was.id))
                cur = con.execute(
                    "INSERT INTO judgements (pair_id, judgement, rater, source, comment, request_id, created_at, "
                    "supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (pair_id, judgement, rater, source, comment, request_id, now, was.id))
                rid = cur.lastrowid
        except _Unchanged as same:
            return same.args[0], same.args[0]
        except sqlite3.IntegrityError as exc:
            raise DuplicateJudgementError(
                f"Request {request_id!r} was already recorded (a replayed or double-submitted request); "
                "nothing was changed.") from exc
        return was, Recorded(rid, pair_id, judgement, rater, source, comment, now)

    def undo(self, rater: str, *, source: str = "person") -> Recorded | None:
        """Withdraw ``rater``'s most recent live judgement (kept in the file, marked withdrawn).
        Returns it, or ``None`` when the rater has nothing to undo."""
        with self.transaction() as con:
            row = con.execute(
                "SELECT id, pair_id, judgement, rater, source, comment, created_at FROM judgements "
                "WHERE rater = ? AND source = ? AND withdrawn_at IS NULL ORDER BY id DESC LIMIT 1",
                (rater, source)).fetchone()
            if row is None:
                return None
            con.execute("UPDATE judgements SET withdrawn_at = ? WHERE id = ?", (utc_now(), row[0]))
        return Recorded(*row)


def read_store_table(path: str | os.PathLike) -> pa.Table:
    """Read a ``judgements.sqlite`` (next to its ``pairs.parquet``) as a judgement table."""
    p = Path(path)
    return JudgementStore(p.parent, path=p).to_table()
