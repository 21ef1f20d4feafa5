"""The read side of the judgement ledger: live judgements, a rater's history, the table and the export.

What :class:`~abcde.samples.store.JudgementStore` answers about the judgements stored
(:class:`LedgerReads`, a part of it): the live ones (:meth:`~LedgerReads.live`, the only ones an
estimate reads), one rater's (:meth:`~LedgerReads.judged_by`) and the history of one rater and
pair, withdrawn rows included (:meth:`~LedgerReads.history`), a version for caching, the columns
judges must not see, and the live judgements as a judgement table (:meth:`~LedgerReads.to_table`,
the format ``abcde quality`` reads) or a new judgement file (:meth:`~LedgerReads.export`). Every
read goes through the store's one read path, :meth:`~abcde.samples.store.JudgementStore.connect`;
nothing here writes to the store.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from abcde.core.names import SOURCES
from abcde.errors import InputError, examples_text, with_option
from abcde.samples.ledger_rows import Recorded, has_supersedes
from abcde.samples.sample_dir import JUDGEMENT_FILES, check_hidden
from abcde.util.files import write_table_file


class LedgerReads:
    """The read-side queries and exports of :class:`~abcde.samples.store.JudgementStore` (a part of
    it): each reads through the store's ``connect()`` (under the in-use lock, after the file checks)
    and the sample it was opened on (``sample``, ``task_by_pair``, ``id_type``, ``path``)."""

    def oracle_columns(self) -> list[str]:
        """The ground-truth columns oracles judged this sample by (their raters ``oracle:<column>``):
        never shown to a person or a model."""
        with self.connect() as con:
            raters = [r[0] for r in con.execute("SELECT DISTINCT rater FROM judgements WHERE source = 'oracle'")]
        return sorted(r.split(":", 1)[1] for r in raters if r.startswith("oracle:"))

    def hidden_columns(self, hide=()) -> list[str]:
        """What judges of this sample must not see besides :data:`NEVER_SHOWN`: the columns hidden
        when the pairs were drawn, the oracles' columns, and ``hide`` (each checked)."""
        attrs = self.sample.items.column_names
        given = check_hidden(attrs, hide)
        return list(dict.fromkeys([*self.sample.hidden, *[c for c in self.oracle_columns() if c in attrs], *given]))

    def history(self, rater: str, pair_id: str, *, source: str = "person") -> list[dict]:
        """Every judgement ``rater`` made of ``pair_id``, oldest first, withdrawn ones included: each
        :meth:`Recorded.to_dict` with ``withdrawn_at`` and ``supersedes`` (the id of the row it
        replaced, or None) and ``ended``: ``None`` (live), ``"changed"`` (a later row supersedes it)
        or ``"undone"``."""
        with self.connect() as con:
            sup = "supersedes" if has_supersedes(con) else "NULL"
            rows = con.execute(
                f"SELECT id, pair_id, judgement, rater, source, comment, created_at, withdrawn_at, {sup} "
                "FROM judgements WHERE rater = ? AND pair_id = ? AND source = ? ORDER BY id",
                (rater, pair_id, source)).fetchall()
        replaced = {r[8] for r in rows if r[8] is not None}
        out = []
        for r in rows:
            d = Recorded(*r[:7]).to_dict()
            d.update(withdrawn_at=r[7], supersedes=r[8],
                     ended=None if r[7] is None else ("changed" if r[0] in replaced else "undone"))
            out.append(d)
        return out

    def judged_by(self, rater: str, *, source: str = "person", limit: int = 50, offset: int = 0) -> tuple[int, list]:
        """``rater``'s live judgements, one per pair, the pair they first judged last (a change keeps
        the pair's place): ``(how many in all, [(number, Recorded, versions), ...])`` for ``limit``
        of them from ``offset``. ``number`` is the pair's place in the order the rater first judged
        (1 = first), ``versions`` how many judgements they made of it (2 or more: changed or undone
        before)."""
        with self.connect() as con:
            total = con.execute("SELECT count(*) FROM judgements WHERE rater = ? AND source = ? AND withdrawn_at IS "
                                "NULL", (rater, source)).fetchone()[0]
            rows = con.execute(
                "SELECT j.id, j.pair_id, j.judgement, j.rater, j.source, j.comment, j.created_at, f.versions "
                "FROM judgements j JOIN (SELECT pair_id, min(id) AS first_id, count(*) AS versions FROM judgements "
                "WHERE rater = ? AND source = ? GROUP BY pair_id) f ON f.pair_id = j.pair_id "
                "WHERE j.rater = ? AND j.source = ? AND j.withdrawn_at IS NULL ORDER BY f.first_id DESC "
                "LIMIT ? OFFSET ?", (rater, source, rater, source, int(limit), int(offset))).fetchall()
        return total, [(total - offset - k, Recorded(*r[:7]), r[7]) for k, r in enumerate(rows)]

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
        with self.connect() as con:
            rows = con.execute(q + " ORDER BY id", args).fetchall()
        return [Recorded(*r) for r in rows]

    def version(self) -> tuple:
        """Changes whenever a judgement is recorded or withdrawn (for caching)."""
        with self.connect() as con:
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
        An existing file is never overwritten (it may be someone's judgements) unless ``force``.

        An export is never written into the sample directory, nor where one of the sample's judgement
        files links to (:func:`refuse_inside_sample`): ``abcde quality DIR`` reads the judgement files
        there beside the store, and would count a snapshot's judgements after they were undone or changed."""
        out = Path(out)
        refuse_inside_sample(out, self.sample.path, self.path)
        if out.exists() and not force:
            raise InputError(f"The file '{out}' exists; an export never overwrites a judgement file. Give a new "
                             "path" + with_option("force", ", or pass {option} to replace it") + ".")
        return write_table_file(self.to_table(source=source), out)


def refuse_inside_sample(out: Path, sample_dir: Path, store: Path) -> None:
    """Refuse, in one line and before anything is written, an export to ``out`` that ``abcde quality
    sample_dir`` could read: a file in the sample directory itself (any name: ``judgements.csv``, read
    beside the store, the store and its side files, the sample's own files; whatever the case, relative
    path, ``..`` or symlinked directory that leads there), or the file one of its judgement files (or the
    store) is a symlink to. ``out`` is written by a rename in its directory, which replaces a symlink at
    ``out`` itself rather than follow it: the place written is ``out``'s resolved directory and its name."""
    written = Path(os.path.realpath(out.parent)) / out.name
    d = Path(os.path.realpath(sample_dir))

    def same_dir(a: Path, b: Path) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return a == b

    why = ("'abcde quality' reads the judgement files there beside the store: a snapshot would keep counting "
           "judgements undone or changed after it")
    suggest = d.parent / f"{d.name}-{out.name}"
    if same_dir(written.parent, d):
        raise InputError(f"Not written: the export '{out}' is in the sample directory '{d}', and {why}. Write it "
                         f"outside that directory, such as '{suggest}'.")
    store = Path(store)
    read = {Path(sample_dir) / name: os.path.realpath(Path(sample_dir) / name) for name in JUDGEMENT_FILES}
    read |= {Path(f"{store}{side}"): os.path.realpath(store) + side for side in ("", "-wal", "-shm", "-journal")}
    for name, target in read.items():
        if str(written) == target or _same_file(written, target):
            raise InputError(f"Not written: the export '{out}' is the file '{name}' of the sample directory "
                             f"'{d}' (through a link), and {why}. Write it outside that directory, such as "
                             f"'{suggest}'.")


def _same_file(written: Path, target: str) -> bool:
    """``written`` (not followed if it is a symlink: a rename replaces it) is the file ``target`` names."""
    try:
        a, b = os.lstat(written), os.stat(target)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
