"""The LLM judge's answer cache: a SQLite file of usable answers, so a pair is never paid for twice.

:class:`~abcde.judging.llm.LLMJudge` keys each answer by the model and the exact messages (and the
temperature); the cache keeps the raw answer text, shared by the judge's threads, its runs and
samples. Only usable answers are put in it (and a cached answer is used only when it parses).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

from abcde.errors import InputError


class AnswerCache:
    """A SQLite cache of model answers: key → raw answer text (shared by threads and runs)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._ready = False  # the file is made on first use, so a run refused before any call leaves none
        self._setup = threading.Lock()

    def _connect(self):
        try:
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            con.execute("PRAGMA busy_timeout=30000")
            if not self._ready:
                # Once per cache, by one thread: switching to WAL needs the file to itself, and SQLite
                # answers "database is locked" at once (no busy wait) while another connection is open.
                with self._setup:
                    if not self._ready:
                        for attempt in range(50):
                            try:
                                con.execute("PRAGMA journal_mode=WAL")
                                break
                            except sqlite3.OperationalError as exc:
                                if "locked" not in str(exc) or attempt == 49:
                                    raise
                                time.sleep(0.1)
                        con.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT, "
                                    "answer TEXT, created_at REAL)")
                        self._ready = True
        except sqlite3.Error as exc:
            raise InputError(f"Cannot open the LLM answer cache '{self.path}': {exc}.") from exc
        return closing(con)

    def get(self, key: str) -> str | None:
        """The cached answer text, or None (callers use it only when it parses)."""
        with self._connect() as con:
            row = con.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, answer: str) -> None:
        with self._connect() as con:
            con.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (key, model, answer, time.time()))
