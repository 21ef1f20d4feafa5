"""The SQLite guard of the judgement store: what SQLite would read or replay, checked before it does.

The forensics of the files (:mod:`abcde.samples.store` opens the store only through them): the
header of an SQLite file (:func:`db_header`), what a write-ahead log would replay
(:func:`wal_transactions`) and whether it belongs to the store beside it (:func:`wal_problem`: the
nonce chain that every write transaction stamps, :func:`stamp`), the side files (a ``-journal`` or
a ``-wal`` that is not the store's own is moved aside, never deleted: :func:`check_side_files`),
the connection to an existing store (:func:`connect_existing`) and the one wording of a failure
(:func:`sqlite_error`, :func:`os_text`, :class:`StoreError`)."""

from __future__ import annotations

import os
import secrets
import sqlite3
import stat
import struct
import time
import urllib.parse
from pathlib import Path

from abcde.errors import AbcdeError, InputError
from abcde.util.files import describe_os_error

STORE_NAME = "judgements.sqlite"
#: Seconds an operation waits for the in-use lock, or for another writer's transaction.
LOCK_TIMEOUT = 30.0


class StoreError(AbcdeError):
    """The judgement store cannot be used as asked: moved while in use, busy, or a write that
    failed (a full disk; nothing of it is stored). The message is one line naming the path and
    what was expected."""


class StoreFileError(StoreError, InputError):
    """The file in the store's place is not a usable store: not an SQLite database, not abcde's,
    damaged or truncated, a directory, or a write-ahead log or journal beside it that is not its
    own (moved aside). An :class:`~abcde.errors.InputError` too: a file abcde cannot use."""



# --------------------------------------------------------------------------- the files SQLite reads
_DB_MAGIC = b"SQLite format 3\x00"
_WAL_MAGICS = (0x377F0682, 0x377F0683)  # checksums in little- or big-endian words
_WAL_VERSION = 3007000


def db_header(path: Path) -> dict | None:
    """The fields of an SQLite file's 100-byte header that the checks use, or None when the
    file does not start like an SQLite database."""
    with open(path, "rb") as fh:
        head = fh.read(100)
    if len(head) < 100 or not head.startswith(_DB_MAGIC):
        return None
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change, pages = struct.unpack(">II", head[24:32])
    valid_for = struct.unpack(">I", head[92:96])[0]
    return {"page_size": page_size, "pages": pages if change == valid_for else 0,
            "nonce": struct.unpack(">I", head[60:64])[0], "wal_mode": head[18] == 2 and head[19] == 2}


def _wal_checksum(data: bytes, s1: int, s2: int, big_endian: bool) -> tuple[int, int]:
    """SQLite's WAL checksum (walChecksumBytes) of ``data``, continuing from ``(s1, s2)``."""
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2


def wal_transactions(wal: Path) -> tuple[int, list[dict]]:
    """What SQLite would replay from a write-ahead log: ``(page size, transactions)``, each
    transaction ``{"pages": n, "page1": bytes | None}`` (its last copy of page 1). Read as SQLite's
    recovery reads it: a valid header, then frames while their salts match the header's and their
    cumulative checksums hold; only frames up to the last commit frame count. An empty or invalid
    log replays nothing: ``(0, [])``."""
    with open(wal, "rb") as fh:
        data = fh.read()
    if len(data) < 32:
        return 0, []
    magic, version, page_size, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", data[:32])
    if magic not in _WAL_MAGICS or version != _WAL_VERSION or page_size < 512 or page_size & (page_size - 1):
        return 0, []
    big = bool(magic & 1)
    s1, s2 = _wal_checksum(data[:24], 0, 0, big)
    if (s1, s2) != (c1, c2):
        return 0, []
    done, current = [], {"pages": 0, "page1": None}
    off, frame = 32, 24 + page_size
    while off + frame <= len(data):
        pgno, commit, f1, f2, k1, k2 = struct.unpack(">6I", data[off:off + 24])
        if pgno == 0 or (f1, f2) != (salt1, salt2):
            break
        page = data[off + 24:off + frame]
        s1, s2 = _wal_checksum(data[off:off + 8], s1, s2, big)
        s1, s2 = _wal_checksum(page, s1, s2, big)
        if (s1, s2) != (k1, k2):
            break
        current["pages"] += 1
        if pgno == 1:
            current["page1"] = page
        if commit:
            done.append(current)
            current = {"pages": 0, "page1": None}
        off += frame
    return page_size, done


def wal_problem(db: Path, wal: Path) -> str | None:
    """Why the write-ahead log ``wal`` does not belong to the store ``db`` (None: it does, or it
    replays nothing).

    Every write transaction of the store stamps page 1
    (:meth:`abcde.samples.store.JudgementStore.transaction`):
    ``user_version`` gets a fresh random nonce and ``application_id`` the nonce it replaces. The
    log belongs to the store when every committed transaction in it holds such a copy of page 1,
    each one's previous nonce is the nonce of the transaction before it, and the store file's own
    nonce is where the chain starts (the first transaction's previous nonce) or one of its nonces
    (a checkpoint that stopped part way copied that transaction's page 1 into the file). A log of
    another store, or of a copy of this one that went its own way, starts from another nonce
    (2^-31 to match by chance)."""
    page_size, txs = wal_transactions(wal)
    if not txs:
        return None
    head = db_header(db)
    if head is None:
        return "the store beside it is not an SQLite database"
    if page_size != head["page_size"]:
        return f"its pages are {page_size} bytes, the store's {head['page_size']}"
    chain = []
    for k, tx in enumerate(txs):
        if tx["page1"] is None:
            return f"its transaction {k + 1} of {len(txs)} carries no stamp of the store: not written by abcde"
        nonce, prev = struct.unpack(">I", tx["page1"][60:64])[0], struct.unpack(">I", tx["page1"][68:72])[0]
        if chain and prev != chain[-1]:
            return f"its transaction {k + 1} of {len(txs)} does not follow the one before"
        if not chain:
            chain.append(prev)
        chain.append(nonce)
    if head["nonce"] not in chain:
        return "it continues another state than this file holds: the log of another store, or of a copy"
    return None


def _aside(path: Path) -> Path:
    """Move ``path`` to a new ``<name>.refused-<UTC time>`` beside it (never deleted); its new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, k = path.with_name(f"{path.name}.refused-{stamp}"), 1
    while target.exists():
        k += 1
        target = path.with_name(f"{path.name}.refused-{stamp}-{k}")
    os.rename(path, target)
    return target


def check_side_files(db: Path) -> None:
    """Refuse what SQLite would replay into ``db`` that is not its own (call only while no other
    process has the store open: the in-use lock held exclusively): a rollback journal that is not
    empty, a write-ahead log that is not the store's (:func:`wal_problem`). It is moved aside first,
    never deleted."""
    for suffix in ("-journal", "-wal"):
        side = db.with_name(db.name + suffix)
        try:
            st = os.stat(side)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(os_text(exc, f"Cannot check '{side}' beside the judgement store")) from None
        if not stat.S_ISREG(st.st_mode):
            why = "it is not a file"
        elif suffix == "-journal":
            if st.st_size == 0:
                continue
            why = "a rollback journal never belongs to the store (it is always in WAL mode)"
        else:
            try:
                why = wal_problem(db, side) if db.exists() else "there is no store beside it"
            except OSError as exc:
                raise StoreError(os_text(exc, f"Cannot read '{side}' beside the judgement store")) from None
            if why is None:
                continue
        try:
            moved = _aside(side)
        except OSError as exc:
            raise StoreFileError(f"'{side}' is not the judgement store's own ({why}) and cannot be moved aside "
                             f"({os_text(exc, 'moving it')}). Move it away yourself; nothing was read from it.") from None
        raise StoreFileError(f"'{side}' beside the judgement store '{db}' is not its own: {why}. It was not replayed "
                         f"and is now '{moved}' (keep it: it may hold another store's judgements). Run the command "
                         "again to use the store as it was.")


def os_text(exc: OSError, doing: str) -> str:
    """The one wording of a failed file operation (:func:`abcde.util.files.describe_os_error`)."""
    return describe_os_error(exc, doing).rstrip(".")


def sqlite_error(exc: sqlite3.Error, path: Path) -> StoreError:
    """One line for an SQLite failure on the store at ``path``: what happened and what to do."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    low = msg.lower()
    if "disk is full" in low or "disk i/o error" in low:
        why = "the disk is full" if "full" in low else "a disk I/O error (a full disk, a file size limit or a failing disk)"
        return StoreError(f"The judgement store '{path}' could not be written: {why}. Nothing of this write was "
                          "stored; the judgements stored before are intact. Free some space and try again.")
    if "not a database" in low:
        return StoreFileError(f"'{path}' is not a judgement store (not an SQLite database). Expected the SQLite file "
                              "that 'abcde judge' writes; move it away to start a new store.")
    if "malformed" in low or "corrupt" in low:
        return StoreFileError(f"The judgement store '{path}' is damaged ({msg}). Nothing was written to it; restore "
                              "it from a copy, or move it away to start a new store.")
    if "unable to open" in low:
        return StoreFileError(f"Cannot open the judgement store '{path}' ({msg}): expected an SQLite file there that "
                              "this user can read and write.")
    if "readonly" in low or "read-only" in low:
        return StoreFileError(f"The judgement store '{path}' cannot be written ({msg}): give this user write access "
                              "to it and its folder.")
    if "locked" in low or "busy" in low:
        return StoreError(f"The judgement store '{path}' stayed locked by another writer for {LOCK_TIMEOUT:g} s "
                          f"({msg}); nothing was stored. Try again.")
    if "no such table" in low or "no such column" in low:
        return StoreFileError(f"'{path}' is not a judgement store of this abcde ({msg}). Expected the SQLite file "
                              "that 'abcde judge' writes; move it away to start a new store.")
    return StoreError(f"The judgement store '{path}' failed: {msg}.")
def connect_existing(path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection to an existing store (never creates one), WAL, ``synchronous=FULL``."""
    uri = "file:" + urllib.parse.quote(os.fspath(path.absolute())) + "?mode=rw"
    con = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT, isolation_level=None,
                          check_same_thread=check_same_thread)
    try:
        con.execute("PRAGMA busy_timeout=%d" % int(LOCK_TIMEOUT * 1000))
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
    except BaseException:
        con.close()
        raise
    return con


def stamp(con: sqlite3.Connection) -> None:
    """Stamp page 1 in the current write transaction: a fresh random nonce in ``user_version``,
    the one it replaces in ``application_id`` (what :func:`wal_problem` checks a log by)."""
    prev = con.execute("PRAGMA user_version").fetchone()[0]
    new = prev
    while new == prev:
        new = 1 + secrets.randbelow(2**31 - 1)
    con.execute(f"PRAGMA application_id = {int(prev)}")
    con.execute(f"PRAGMA user_version = {int(new)}")
