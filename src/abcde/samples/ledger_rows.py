"""The rows of the judgement ledger: its tables, one judgement as stored, and the time it carries.

``judgements.sqlite`` (:mod:`abcde.samples.store`) holds two tables of its own (:data:`SCHEMA`):
``meta`` (the sample's id, when the store was made, the serving settings) and ``judgements``, one
row per judgement, append-only. A row read back is a :class:`Recorded`; every time in it is
:func:`utc_now`'s. The column ``supersedes`` is added by the first change of a judgement
(:meth:`~abcde.samples.store.JudgementStore.change`): a store that never had one has none
(:func:`has_supersedes`). Nothing here opens the store.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
from dataclasses import dataclass

#: The store's own tables, made when the store is (``supersedes`` is added by the first change).
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judgements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pair_id TEXT NOT NULL,
    judgement TEXT NOT NULL CHECK (judgement IN ('same', 'different', 'unsure')),
    rater TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('person', 'model', 'oracle')),
    comment TEXT,
    request_id TEXT UNIQUE,
    created_at TEXT NOT NULL,
    withdrawn_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS judgements_live ON judgements (rater, pair_id) WHERE withdrawn_at IS NULL;
CREATE INDEX IF NOT EXISTS judgements_pair ON judgements (pair_id);
"""


def utc_now() -> str:
    """Now in UTC, ISO 8601 to the millisecond: the one time format of judgements and invites."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Recorded:
    """One judgement as stored."""

    id: int
    pair_id: str
    judgement: str
    rater: str
    source: str
    comment: str | None
    created_at: str

    def to_dict(self) -> dict:
        return {"id": self.id, "pair_id": self.pair_id, "judgement": self.judgement, "rater": self.rater,
                "source": self.source, "comment": self.comment, "created_at": self.created_at}


def has_supersedes(con: sqlite3.Connection) -> bool:
    """Whether the store on ``con`` has the ``supersedes`` column (added by its first change)."""
    return any(r[1] == "supersedes" for r in con.execute("PRAGMA table_info(judgements)"))
