"""The judgement store: a SQLite file inside the pair sample directory.

``SAMPLE_DIR/judgements.sqlite`` holds every judgement made by people (the web
app), models (``abcde judge model``) or an oracle, one row each, with its rater,
its source (``person``, ``model`` or ``oracle``), an optional comment and the
time. It is append-only: undo marks a row withdrawn instead of deleting it.

Durability and safety
---------------------
- WAL journal, ``synchronous=FULL``: a judgement is on disk when :meth:`JudgementStore.record`
  returns (the web app answers the request only after that), and survives a
  killed process.
- One transaction per judgement (``BEGIN IMMEDIATE``), so concurrent writers (two
  raters, a model run next to the web app) queue instead of corrupting anything.
- A partial unique index allows one live judgement per rater and pair, and a
  unique ``request_id`` makes a replayed request fail instead of counting twice.
- The store records the sample's id: after the pairs are re-drawn in the
  directory, the old store is refused instead of mixing samples.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from abcde.errors import AbcdeError, InputError, examples_text
from abcde.core.names import SOURCES, VOCABULARY
from abcde.quality.sample_dir import LOCK_FILE, PairSampleDir, check_hidden, sample_lineage, task_table
from abcde.util.files import write_table_file

STORE_NAME = "judgements.sqlite"
RATER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.@+-]{0,63}$")

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


class DuplicateJudgementError(InputError):
    """A rater already judged this pair, or this request was already recorded (a replay)."""


class UnknownPairError(InputError):
    """The pair id is not one of the sample's pairs that need a judgement."""


class StoreLockedError(AbcdeError):
    """Another ``abcde judge serve`` already serves this sample directory."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def check_rater(rater) -> str:
    """A person's rater name: 1–64 characters, letters, digits, space and ``_ . @ + -``."""
    if not isinstance(rater, str) or not RATER_RE.match(rater):
        raise InputError(
            "The rater name must be 1 to 64 characters: letters, digits, space and _ . @ + - "
            f"(starting with a letter or digit). Got {rater!r} instead."
        )
    return rater


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


class JudgementStore:
    """Judgements of one pair sample, in ``SAMPLE_DIR/judgements.sqlite``.

    Parameters
    ----------
    sample_dir
        A directory written by ``abcde pairs``.
    path
        The SQLite file (default ``SAMPLE_DIR/judgements.sqlite``).

    Every method opens its own connection, so one store object may be used from
    many threads (the web server's) and several processes may use one file.
    """

    def __init__(self, sample_dir: str | os.PathLike, *, path: str | os.PathLike | None = None):
        self.sample = PairSampleDir.read(sample_dir)
        self.path = Path(path) if path else self.sample.path / STORE_NAME
        self.meta = self.sample.metadata
        self.id_type = self.meta["id_type"]
        self.tasks = task_table(self.sample.draws, self.sample.items.select(["item_id"])).to_pylist()
        self.task_by_pair = {t["pair_id"]: t for t in self.tasks}
        self.pair_ids = [t["pair_id"] for t in self.tasks]
        with self._connect() as con:
            con.executescript(SCHEMA)
            row = con.execute("SELECT value FROM meta WHERE key = 'sample_id'").fetchone()
            if row is None:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('sample_id', ?)", (self.meta["sample_id"],))
                con.execute("INSERT OR IGNORE INTO meta VALUES ('created_at', ?)", (_now(),))
            elif row[0] not in sample_lineage(self.meta):
                raise InputError(
                    f"The judgement store '{self.path}' belongs to sample {row[0]!r}, but '{self.sample.path}' "
                    f"now holds sample {self.meta['sample_id']!r} (the pairs were drawn again). Move the old "
                    "store away, or judge in another directory."
                )

    # ------------------------------------------------------------------ connection
    @contextmanager
    def _connect(self):
        con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA busy_timeout=30000")
            yield con
        finally:
            con.close()

    @contextmanager
    def _transaction(self):
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    # ------------------------------------------------------------------ settings
    def settings(self, **given) -> dict:
        """Serving settings kept in the store (``seed``, ``replicate``): a value given
        here is stored the first time; ``None`` means the stored (or default) one.
        A different value than the stored one is refused, because the random order
        and the replicated pairs depend on it."""
        defaults = {"seed": 0, "replicate": 0.0}
        out = {}
        with self._transaction() as con:
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

    # ------------------------------------------------------------------ writing
    def validate(self, pair_id, judgement, *, rater, source) -> None:
        """Raise a clear error for an unknown pair, a judgement outside the vocabulary,
        a bad rater name or an unknown source."""
        if source not in SOURCES:
            raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
        if judgement not in VOCABULARY:
            raise InputError(f"judgement must be one of {', '.join(VOCABULARY)}. Got {judgement!r} instead.")
        if not isinstance(rater, str) or not rater:
            raise InputError(f"The rater must be a non-empty name. Got {rater!r} instead.")
        if source == "person":
            check_rater(rater)
        if not isinstance(pair_id, str) or pair_id not in self.task_by_pair:
            raise UnknownPairError(
                f"Pair {pair_id!r} is not one of the {len(self.pair_ids)} pairs of sample "
                f"{self.meta['sample_id']!r} that need a judgement."
            )

    def record(self, pair_id: str, judgement: str, *, rater: str, source: str = "person",
               comment: str | None = None, request_id: str | None = None) -> Recorded:
        """Store one judgement in its own transaction; on return it is on disk.

        Raises
        ------
        UnknownPairError
            The pair is not in the sample.
        DuplicateJudgementError
            ``rater`` already has a live judgement of the pair (undo it first), or
            ``request_id`` was recorded before (a replayed request).
        InputError
            A judgement outside {same, different, unsure}, a bad rater name or source.
        """
        self.validate(pair_id, judgement, rater=rater, source=source)
        if comment is not None:
            if not isinstance(comment, str):
                raise InputError(f"The comment must be text. Got {comment!r} instead.")
            comment = comment.strip()[:2000] or None
        if request_id is not None and (not isinstance(request_id, str) or not 0 < len(request_id) <= 100):
            raise InputError(f"request_id must be a string of 1 to 100 characters. Got {request_id!r} instead.")
        now = _now()
        try:
            with self._transaction() as con:
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
        now = _now()
        added = 0
        with self._transaction() as con:
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

    def oracle_columns(self) -> list[str]:
        """The ground-truth columns oracles judged this sample by (their raters ``oracle:<column>``):
        never shown to a person or a model."""
        with self._connect() as con:
            raters = [r[0] for r in con.execute("SELECT DISTINCT rater FROM judgements WHERE source = 'oracle'")]
        return sorted(r.split(":", 1)[1] for r in raters if r.startswith("oracle:"))

    def hidden_columns(self, hide=()) -> list[str]:
        """What judges of this sample must not see besides :data:`NEVER_SHOWN`: the columns hidden
        when the pairs were drawn, the oracles' columns, and ``hide`` (each checked)."""
        attrs = self.sample.items.column_names
        given = check_hidden(attrs, hide)
        return list(dict.fromkeys([*self.sample.hidden, *[c for c in self.oracle_columns() if c in attrs], *given]))

    def undo(self, rater: str, *, source: str = "person") -> Recorded | None:
        """Withdraw ``rater``'s most recent live judgement (kept in the file, marked withdrawn).
        Returns it, or ``None`` when the rater has nothing to undo."""
        with self._transaction() as con:
            row = con.execute(
                "SELECT id, pair_id, judgement, rater, source, comment, created_at FROM judgements "
                "WHERE rater = ? AND source = ? AND withdrawn_at IS NULL ORDER BY id DESC LIMIT 1",
                (rater, source)).fetchone()
            if row is None:
                return None
            con.execute("UPDATE judgements SET withdrawn_at = ? WHERE id = ?", (_now(), row[0]))
        return Recorded(*row)

    # ------------------------------------------------------------------ reading
    def live(self, *, source: str | None = None, rater: str | None = None) -> list[Recorded]:
        """Live (not withdrawn) judgements in the order they were made."""
        q = ("SELECT id, pair_id, judgement, rater, source, comment, created_at FROM judgements "
             "WHERE withdrawn_at IS NULL")
        args: list = []
        if source is not None:
            q += " AND source = ?"
            args.append(source)
        if rater is not None:
            q += " AND rater = ?"
            args.append(rater)
        with self._connect() as con:
            rows = con.execute(q + " ORDER BY id", args).fetchall()
        return [Recorded(*r) for r in rows]

    def version(self) -> tuple:
        """Changes whenever a judgement is recorded or withdrawn (for caching)."""
        with self._connect() as con:
            return tuple(con.execute(
                "SELECT count(*), coalesce(max(id), 0), count(withdrawn_at) FROM judgements").fetchone())

    def to_table(self, *, source: str | None = None) -> pa.Table:
        """The live judgements in the judgement file format that ``abcde quality`` reads:
        ``pair_id, item_a, item_b, judgement, rater, source, comment, timestamp``."""
        if source is not None and source not in SOURCES:
            raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
        rows = self.live(source=source)
        id_t = pa.int64() if self.id_type == "integer" else pa.string()
        unknown = [r.pair_id for r in rows if r.pair_id not in self.task_by_pair]
        if unknown:
            raise InputError(f"The store '{self.path}' has judgements of pairs not in the sample "
                             f"(first: {examples_text(unknown)}).")
        return pa.table({
            "pair_id": pa.array([r.pair_id for r in rows], pa.string()),
            "item_a": pa.array([self.task_by_pair[r.pair_id]["item_a"] for r in rows], id_t),
            "item_b": pa.array([self.task_by_pair[r.pair_id]["item_b"] for r in rows], id_t),
            "judgement": pa.array([r.judgement for r in rows], pa.string()),
            "rater": pa.array([r.rater for r in rows], pa.string()),
            "source": pa.array([r.source for r in rows], pa.string()),
            "comment": pa.array([r.comment for r in rows], pa.string()),
            "timestamp": pa.array([r.created_at for r in rows], pa.string()),
        })

    def export(self, out: str | os.PathLike, *, source: str | None = None, force: bool = False) -> Path:
        """Write the live judgements to a new CSV, Parquet or JSONL judgement file (by extension).
        An existing file is never overwritten (it may be someone's judgements) unless ``force``."""
        out = Path(out)
        if out.exists() and not force:
            raise InputError(f"The file '{out}' exists; an export never overwrites a judgement file. Give a new "
                             "path, or --force (force=True) to replace it.")
        return write_table_file(self.to_table(source=source), out)


def read_store_table(path: str | os.PathLike) -> pa.Table:
    """Read a ``judgements.sqlite`` (next to its ``pairs.parquet``) as a judgement table."""
    p = Path(path)
    return JudgementStore(p.parent, path=p).to_table()


def lock_directory(sample_dir: Path, url: str):
    """Take the serving lock of a sample directory (``.judging.lock``, an ``flock``), or raise
    :class:`StoreLockedError` naming the server that holds it. The kernel releases the lock
    when the process ends, even by SIGKILL; keep the returned file object open while serving."""
    import fcntl

    lock_path = Path(sample_dir) / LOCK_FILE
    fh = open(lock_path, "a+")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "another process"
        fh.close()
        raise StoreLockedError(
            f"The sample directory '{sample_dir}' is already being served ({holder}). Open that server's "
            "page (raters can share one server), or stop it first."
        ) from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()} at {url}\n")
    fh.flush()
    return fh
