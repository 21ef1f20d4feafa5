"""The one way in to a store file of a sample directory: the lock, the claim, the checks, one
connection per operation, the one write path and the hold of a run.

Both of abcde's SQLite stores, the pair sample's judgement store
(:class:`~abcde.samples.store.JudgementStore`) and the entity sample's answer store
(:class:`abcde.completion.store.EntityStore`), reach their file only through :class:`StoreAccess`:

- every operation holds the directory's in-use lock (``.judging.lock``, :class:`~abcde.samples.dir_lock.InUseLock`)
  shared and claims the store file for its folder (:func:`~abcde.samples.dir_lock.claim_store`);
  when no other process has the store open, side files that are not the store's own are refused
  first (:func:`~abcde.samples.sqlite_guard.check_side_files`) and builds that killed processes
  left behind are removed (:func:`~abcde.samples.ledger_file.remove_stale_builds`);
- opening checks the file (the store's ``_open``, with :func:`~abcde.samples.ledger_file.stat_store`
  and :func:`~abcde.samples.ledger_file.check_store_file`), every later operation that it is still the
  file that was opened (the store's ``_check_same_file``, with :func:`same_file`);
- :meth:`StoreAccess.connect` is the one read path, :meth:`StoreAccess.transaction` the one write
  path (``BEGIN IMMEDIATE``, stamped, on disk on return), :meth:`StoreAccess.hold` keeps the store
  in use for a whole run.

What differs between the stores (their tables, their rules, the words of their errors) stays in
each store.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from abcde.samples.dir_lock import InUseLock, StoreClaim, StoreHold, claim_store
from abcde.samples.ledger_file import remove_stale_builds
from abcde.samples.sqlite_guard import (
    check_side_files,
    connect_existing,
    sqlite_error,
    stamp,
)


def same_file(path: Path, opened: tuple[int, int] | None, claim: StoreClaim | None = None) -> bool:
    """Whether ``path`` still leads to the file that was opened (device and inode ``opened``), and
    ``claim``, when given, is on it."""
    try:
        st = os.stat(path)
        now = (st.st_dev, st.st_ino)
    except OSError:
        now = None
    return not (now != opened or (claim is not None and claim.key != opened))


class StoreAccess:
    """The lock, the claim and the connections of a store file at ``self.path`` (see the module).

    A store sets ``path`` and ``_file`` (the opened file's device and inode, set by its ``_open``)
    and defines ``_open(alone, **options)`` (check the file, create it when it may, set ``_file``)
    and ``_check_same_file(claim)`` (raise one line when the path no longer leads to the opened
    file: :func:`same_file`)."""

    path: Path
    _file: tuple[int, int] | None

    def _open(self, alone: bool, **options) -> None:  # pragma: no cover - each store defines it
        raise NotImplementedError

    def _check_same_file(self, claim: StoreClaim | None = None) -> None:  # pragma: no cover - each store defines it
        raise NotImplementedError

    def _stamp(self, con: sqlite3.Connection) -> None:
        """The write transaction's stamp, its last write before ``COMMIT``
        (:func:`~abcde.samples.sqlite_guard.stamp`)."""
        stamp(con)

    # ------------------------------------------------------------------ opening
    @contextmanager
    def _use(self, *, opening: bool = False, **options):
        """Hold the directory's in-use lock around one operation, the file claimed for this folder;
        when no other process has the store open, first refuse side files that are not the store's
        own. ``opening``: check the file (``options`` go to the store's ``_open``: create it when
        missing), else check it is still the file that was opened."""
        lock = InUseLock(self.path.parent)
        alone = lock.acquire()
        claim = None
        try:
            try:
                # the store file claimed for this folder first (none there yet: once it is made)
                claim = claim_store(self.path)
                if alone:
                    lock.describe("", replace=True)  # no one else holds it: whatever it says is stale
                    check_side_files(self.path)
                    remove_stale_builds(self.path)
                if opening:
                    self._open(alone, **options)
                    if claim is None:
                        claim = claim_store(self.path)
                self._check_same_file(claim)
            except BaseException:
                if claim is not None:
                    claim.release()
                    claim = None
                if alone:
                    lock.forget()
                raise
            if alone:
                lock.share()
            yield
        finally:
            if claim is not None:  # after the operation's connection closed
                claim.release()
            lock.release()

    # ------------------------------------------------------------------ connection
    @contextmanager
    def connect(self):
        """A connection to the store for one operation, under the in-use lock: the one read path
        (the store's own methods and :class:`~abcde.samples.invites.InviteBook`). SQLite failures
        become one-line :class:`~abcde.samples.sqlite_guard.StoreError` (but a unique index's
        IntegrityError, which the callers turn into their own message)."""
        with self._use():
            try:
                con = connect_existing(self.path)
            except sqlite3.Error as exc:
                raise sqlite_error(exc, self.path) from None
            try:
                yield con
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise sqlite_error(exc, self.path) from None
            finally:
                con.close()

    @contextmanager
    def transaction(self):
        """One write transaction (``BEGIN IMMEDIATE``), stamped (:func:`~abcde.samples.sqlite_guard.stamp`);
        on return it is on disk. A failure rolls it back and raises: nothing of it is stored. The one
        write path: every write to the file goes through it (the invite links' too,
        :class:`~abcde.samples.invites.InviteBook`)."""
        with self.connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
                self._stamp(con)
                con.execute("COMMIT")
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:  # already rolled back by the failed COMMIT (or closing will)
                    pass
                raise

    def hold(self, what: str = "abcde") -> StoreHold:
        """Keep the store in use until the returned :class:`~abcde.samples.dir_lock.StoreHold` is
        closed: the directory's in-use lock held shared, the file claimed for this folder and one
        connection open, for a run that writes for a while (a model run; the judging server holds it
        through :func:`~abcde.samples.dir_lock.lock_directory`). While held, ``abcde pairs`` refuses
        to draw into the directory (naming ``what``), and no process's last connection closes, so the
        store's write-ahead log stays the one checked when it was opened."""
        lock = InUseLock(self.path.parent)
        alone = lock.acquire()
        keeper = claim = None
        try:
            claim = claim_store(self.path)  # for the whole run: one folder per store file
            if alone:
                check_side_files(self.path)
            self._check_same_file(claim)
            keeper = connect_existing(self.path, check_same_thread=False)
            keeper.execute("SELECT count(*) FROM meta").fetchone()
            lock.describe(f"pid {os.getpid()}: {what}", replace=alone)
            if alone:
                lock.share()
        except BaseException as exc:
            if keeper is not None:
                keeper.close()
            if claim is not None:
                claim.release()
            lock.release()
            if isinstance(exc, sqlite3.Error):
                raise sqlite_error(exc, self.path) from None
            raise
        return StoreHold(lock, keeper, claim=claim)


__all__ = ["StoreAccess", "same_file"]
