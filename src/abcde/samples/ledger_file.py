"""The judgement ledger's file: a new one built aside and linked into place, an existing one checked.

What :class:`~abcde.samples.store.JudgementStore` does with the file itself when it opens it,
under the directory's in-use lock: a store that is not there is built whole beside its place
(tables, the sample's id, the first stamp) and linked in (:func:`create_store`), and builds that
killed processes left behind are removed (:func:`remove_stale_builds`); one that is there must be
abcde's store of this sample, whole: its size against its SQLite header
(:func:`check_store_size`), abcde's tables, the sample it belongs to (this sample or one it
extends) and ``PRAGMA quick_check`` (:func:`check_store_content`). The steps that do not depend on
the tables (:func:`build_store`, :func:`stat_store`, :func:`check_store_file`) serve the entity
sample's answer store too (:mod:`abcde.completion.store`). Every failure is one
:class:`~abcde.samples.sqlite_guard.StoreError` line (a store of another sample: an
:class:`~abcde.errors.InputError`). What SQLite would replay beside the file is
:mod:`abcde.samples.sqlite_guard`'s; the lock is :mod:`abcde.samples.dir_lock`'s.
"""

from __future__ import annotations

import glob
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

from abcde.errors import InputError
from abcde.samples.ledger_rows import SCHEMA, utc_now
from abcde.samples.sample_dir import sample_lineage
from abcde.samples.sqlite_guard import (StoreError, StoreFileError, connect_existing, db_header, os_text, sqlite_error,
                                        stamp)


def fsync_dir(directory: Path) -> None:
    """Flush ``directory``'s entries to disk (a file linked into it stays there after a crash)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_builds(db: Path) -> None:
    """Remove stores that killed processes were building beside ``db`` (never linked into place)."""
    for f in db.parent.glob(f".{glob.escape(db.name)}.new-*"):
        pid = f.name[len(f".{db.name}.new-"):].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            f.unlink()
        except OSError:
            pass


def check_store_size(path: Path, size: int) -> None:
    """Refuse a store file of ``size`` bytes at ``path`` that is empty, not an SQLite database, not
    in WAL mode, or shorter than its header says (unless a write-ahead log beside it may hold its
    end: ``PRAGMA quick_check`` decides then)."""
    if size == 0:
        raise StoreFileError(f"The judgement store '{path}' is empty (0 bytes: truncated?); expected the SQLite file "
                         "that 'abcde judge' writes. Restore it from a copy, or move it away to start a new store.")
    try:
        head = db_header(path)
    except OSError as exc:
        raise StoreError(os_text(exc, f"Cannot read the judgement store '{path}'")) from None
    if head is None:
        raise StoreFileError(f"'{path}' is not a judgement store (not an SQLite database). Expected the SQLite file "
                         "that 'abcde judge' writes; move it away to start a new store.")
    if not head["wal_mode"]:  # abcde's stores are in WAL mode from the start; opening must not convert another file
        raise StoreFileError(f"'{path}' is an SQLite database but not a judgement store (not in WAL mode). Expected "
                             "the file that 'abcde judge' writes; move it away to start a new store.")
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size >= 32:
        return  # the log may hold the end of the file (a checkpoint cut short): quick_check decides
    want = head["pages"] * head["page_size"]
    if size % head["page_size"] or size < want:
        raise StoreFileError(f"The judgement store '{path}' is truncated ({size} bytes; its header says "
                         f"{head['pages']} pages of {head['page_size']} bytes). Restore it from a copy, or move it "
                         "away to start a new store.")


def check_store_content(con: sqlite3.Connection, path: Path, meta: dict, sample_path: Path) -> None:
    """abcde's tables, this sample's (or one it extends), and ``PRAGMA quick_check``: the store at
    ``path``, open on ``con``, of the sample with metadata ``meta`` in ``sample_path``."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"meta", "judgements"} <= tables:
        raise StoreFileError(f"'{path}' is an SQLite database but not a judgement store (no 'judgements' and 'meta' "
                         "tables). Expected the file that 'abcde judge' writes; move it away to start a new store.")
    row = con.execute("SELECT value FROM meta WHERE key = 'sample_id'").fetchone()
    if row is None:
        raise StoreFileError(f"The judgement store '{path}' does not say which sample it belongs to (no sample_id); "
                         "move it away to start a new store.")
    if row[0] not in sample_lineage(meta):
        raise InputError(
            f"The judgement store '{path}' belongs to sample {row[0]!r}, but '{sample_path}' "
            f"now holds sample {meta['sample_id']!r} (the pairs were drawn again). Move the old "
            "store away, or judge in another directory."
        )
    problems = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:
        first = " ".join(str(problems[0]).split())[:200] if problems else "no answer"
        raise StoreFileError(f"The judgement store '{path}' is damaged (integrity check: {first}"
                         f"{f'; {len(problems) - 1} more' if len(problems) > 1 else ''}). Nothing was written to "
                         "it; restore it from a copy, or move it away to start a new store.")


def create_store(path: Path, sample_id: str) -> None:
    """Build a new judgement store aside (tables, the sample's id, the first stamp), then link it
    into place at ``path`` whole; when another process linked one first, that one is the store."""
    def fill(con: sqlite3.Connection) -> None:
        con.execute("INSERT INTO meta VALUES ('sample_id', ?)", (sample_id,))
        con.execute("INSERT INTO meta VALUES ('created_at', ?)", (utc_now(),))

    build_store(path, SCHEMA, fill, what="judgement store")


def build_store(path: Path, schema: str, fill: Callable[[sqlite3.Connection], None], *, what: str) -> None:
    """Build a new store aside (the tables of ``schema``, the rows ``fill`` writes, the first stamp)
    in WAL mode, then link it into place at ``path`` whole; when another process linked one first,
    that one is the store. ``what``: the store's name in the error lines (``judgement store``)."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA synchronous=FULL")
            con.execute("BEGIN IMMEDIATE")
            for statement in schema.split(";"):
                if statement.strip():
                    con.execute(statement)
            fill(con)
            stamp(con)
            con.execute("COMMIT")
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise StoreError(f"Cannot create the {what} '{path}': the file system does not allow "
                                 "SQLite's WAL mode (the store needs it for safe concurrent writers).")
        finally:
            con.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made the store first: that one is the store
        fsync_dir(path.parent)
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    except OSError as exc:
        raise StoreError(os_text(exc, f"Cannot create the {what} '{path}'")) from None
    finally:
        for f in (tmp, *(tmp.with_name(tmp.name + x) for x in ("-wal", "-shm", "-journal"))):
            try:
                f.unlink()
            except OSError:
                pass


def stat_store(path: Path, *, what: str) -> os.stat_result | None:
    """The store file's ``os.stat`` (``None``: there is none), or one line why it cannot be read.
    ``what``: the store's name in the error line (``judgement store``)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(os_text(exc, f"Cannot open the {what} '{path}'")) from None


def check_store_file(path: Path, st: os.stat_result, check_content: Callable[[sqlite3.Connection], None], *,
                     what: str, writer: str) -> tuple[int, int]:
    """Refuse what is at ``path`` (``st``: its ``os.stat``) unless it is a regular file whose size
    passes :func:`check_store_size` and whose content passes ``check_content`` (on a connection
    opened for it); returns the file's device and inode. ``what``: the store's name in the error
    lines (``judgement store``); ``writer``: the command that writes it (``abcde judge``)."""
    if stat.S_ISDIR(st.st_mode):
        raise StoreFileError(f"'{path}' is a directory; expected the {what} there (an SQLite file that "
                             f"'{writer}' writes). Move the directory away.")
    if not stat.S_ISREG(st.st_mode):
        raise StoreFileError(f"'{path}' is not a regular file; expected the {what} there (an SQLite file).")
    check_store_size(path, st.st_size)
    try:
        con = connect_existing(path)
        try:
            check_content(con)
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    return st.st_dev, st.st_ino
