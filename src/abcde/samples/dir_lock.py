"""The in-use lock of a sample directory, defined once beside its file name (:data:`LOCK_FILE`).

``SAMPLE_DIR/.judging.lock`` (an ``flock``): every operation on the judgement store holds it
shared (:class:`InUseLock`), a run that writes for a while holds it for the whole run
(:class:`StoreHold`), ``abcde pairs`` refuses to draw into a directory whose lock it cannot take
exclusively (:func:`served_by`), and one judging server per directory holds an exclusive ``flock``
on the directory itself (:func:`lock_directory`). The kernel releases the locks when a process
ends, even by SIGKILL."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

from abcde.samples.sqlite_guard import (LOCK_TIMEOUT, STORE_NAME, StoreError, check_side_files, connect_existing,
                                        os_text, sqlite_error)

#: The judging server's lock file (held while a server serves the directory).
LOCK_FILE = ".judging.lock"


class StoreLockedError(StoreError):
    """Another ``abcde judge serve`` already serves this sample directory."""


def served_by(sample_dir: str | os.PathLike) -> str | None:
    """Who serves the sample directory (the judging server's lock line), or None when no server
    holds its lock."""
    lock_path = Path(sample_dir) / LOCK_FILE
    if not lock_path.exists():
        return None
    with open(lock_path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            return fh.read().strip() or "another process"
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None


class InUseLock:
    """The in-use lock of the directory holding a store (``LOCK_FILE``, an ``flock``)."""

    def __init__(self, directory: Path):
        self.path = directory / LOCK_FILE
        self.fh = None
        self.created = False  # this acquire made the lock file (see :meth:`forget`)

    def acquire(self, timeout: float = LOCK_TIMEOUT) -> bool:
        """Take the lock: exclusively when no one holds it (returns True: no other process of
        abcde has the store open), else shared (False), waiting up to ``timeout`` seconds for a
        process that holds it exclusively (``abcde pairs`` drawing, another opener checking)."""
        try:
            try:
                fh = open(self.path, "x+")
                self.created = True
            except FileExistsError:
                fh = open(self.path, "a+")
        except FileNotFoundError:
            raise StoreError(f"The folder '{self.path.parent}' of the judgement store is gone (moved or removed "
                             "while in use, e.g. the sample drawn again?); nothing was stored.") from None
        except OSError as exc:
            raise StoreError(os_text(exc, f"Cannot open the lock file '{self.path}' of the judgement store")
                             + "; the store needs a folder this user can write.") from None
        try:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fh = fh
                return True
            except BlockingIOError:
                pass
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                    self.fh = fh
                    return False
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        fh.seek(0)
                        holder = " ".join(fh.read().split()) or "another process"
                        raise StoreError(f"The judgement store in '{self.path.parent}' stayed locked for {timeout:g} s "
                                         f"by {holder} (drawing the pairs again?); nothing was done. Try again.") from None
                    time.sleep(0.05)
        except BaseException:
            if self.fh is None:
                fh.close()
            raise

    def share(self) -> None:
        """Turn the exclusive lock into a shared one."""
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_SH)

    def describe(self, what: str, *, replace: bool) -> None:
        """Say who holds the lock (``abcde pairs`` names it when it refuses to draw)."""
        size = os.fstat(self.fh.fileno()).st_size
        if (replace and (size or what)) or (size == 0 and what):
            self.fh.seek(0)
            self.fh.truncate()
            if what:
                self.fh.write(what + "\n")
            self.fh.flush()

    def forget(self) -> None:
        """Remove the lock file this acquire made, while still holding it exclusively (an open that
        failed leaves nothing behind; anyone waiting for it will fail on the same store)."""
        if self.created and self.fh is not None:
            try:
                self.path.unlink()
            except OSError:
                pass

    def release(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


class _Fd:
    """An open file descriptor with ``fileno()`` and ``close()`` (a directory's, for its ``flock``)."""

    def __init__(self, fd: int):
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class StoreHold:
    """The store kept in use (see :meth:`abcde.samples.store.JudgementStore.hold`): the in-use lock held shared and one
    connection open until :meth:`close` (or the end of a ``with`` block, or of the process)."""

    def __init__(self, lock: InUseLock, keeper: sqlite3.Connection | None, extra=()):
        self._lock, self._keeper, self._extra = lock, keeper, list(extra)

    def close(self) -> None:
        if self._keeper is not None:
            try:
                # The log into the file now, without waiting for other connections (PASSIVE): after a
                # clean stop the store file alone holds every judgement, even while another process
                # has the store open (issue 39, part 8).
                self._keeper.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self._keeper.close()
            except sqlite3.Error:  # the process ends or the store went away: nothing to keep
                pass
            self._keeper = None
        self._lock.release()
        for fh in self._extra:
            fh.close()
        self._extra = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def lock_directory(sample_dir, url: str) -> StoreHold:
    """Take the serving lock of a sample directory, or raise :class:`StoreLockedError` naming the
    server that holds it; keep the returned :class:`StoreHold` open while serving.

    One server per directory: an exclusive ``flock`` on the directory itself. Beside it, the
    store is held in use as by :meth:`abcde.samples.store.JudgementStore.hold` (the in-use lock ``.judging.lock``
    shared, saying ``pid N at URL``, and one connection open), so ``abcde judge model`` and other
    writers share the store with the server while ``abcde pairs`` refuses to draw into it. The
    kernel releases both locks when the process ends, even by SIGKILL."""
    sample_dir = Path(sample_dir)
    line = f"pid {os.getpid()} at {url}"
    try:
        dfd = os.open(sample_dir, os.O_RDONLY)
    except OSError as exc:
        raise StoreError(os_text(exc, f"Cannot open the sample directory '{sample_dir}'")) from None
    served = _Fd(dfd)
    lock = InUseLock(sample_dir)
    keeper = None
    try:
        try:
            fcntl.flock(served.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = "another process"
            try:
                holder = " ".join((sample_dir / LOCK_FILE).read_text().split()) or holder
            except OSError:
                pass
            raise StoreLockedError(
                f"The sample directory '{sample_dir}' is already being served ({holder}). Open that server's "
                "page (raters can share one server), or stop it first."
            ) from None
        alone = lock.acquire()
        store = sample_dir / STORE_NAME
        if store.exists():
            if alone:
                check_side_files(store)
            try:
                keeper = connect_existing(store, check_same_thread=False)
                keeper.execute("SELECT count(*) FROM meta").fetchone()
            except sqlite3.Error as exc:
                raise sqlite_error(exc, store) from None
        lock.describe(line, replace=True)
        if alone:
            lock.share()
    except BaseException:
        if keeper is not None:
            keeper.close()
        lock.release()
        served.close()
        raise
    return StoreHold(lock, keeper, extra=[served])
