"""Judgement files: reading, validating and resolving same/different/unsure answers.

A judgement file (CSV, Parquet or JSONL) has, per row, a ``pair_id`` or both
``item_a`` and ``item_b`` (in either order), a ``judgement`` in
{``same``, ``different``, ``unsure``}, and optionally ``rater``, ``source``
(``person``, ``model`` or ``oracle``; when missing it is read from a rater named
``oracle:…`` or ``model:…``, else ``person``) and ``timestamp``. Several raters may
judge one pair: the majority wins and a tie is ``unsure`` (reported); one rater
giving two different answers for one pair is an error. A judgement store
(``judgements.sqlite``, see :mod:`abcde.judging`) can be read like a file.

Raters are who they say: a row's rater is its ``rater`` name, and one name is one rater in
every file and store (so a store and its export count once). A file without a ``rater`` column
(or a row whose rater is empty) is one rater of its own, the file itself: ``alice/j.csv`` and
``bob/j.csv`` are two raters, never merged by their names, and no rater name can stand for one.

The owner's settling votes (person judgements by the rater :data:`~abcde.samples.raters.OWNER`,
cast in the judging app's settle queue) count only while they settle a real dispute
(:func:`resolve`): the other raters' votes tie, and every one of them was there when the owner
voted (rows are read in the order given: a store and its export in the order the judgements were
made). Otherwise the owner's vote is kept but inert, and the pair is what the raters' votes make
it. The judging app's settle queue reads the same rule.

Every column is checked by type before use (:func:`check_judgement_types`): ids and answers
are text (item ids may be integers), a rater is text or an integer, a timestamp is text or a
time; a value of another type is an :class:`InputError` naming the file, the column, the row
and both types. An item id of a sample whose ids are integers is read strictly (:func:`integer_id`):
an integer, or exactly an integer's text (``1_0``, ``" 12"`` or ``"١٣"`` is refused, never read as 10,
12 or 13).

A CSV abcde wrote for people neutralises its formula cells with a leading ``'`` and marks the rows
it did so in the column :data:`~abcde.util.files.FORMULA_MARK_COLUMN`; only those rows, or every row
of a file an older abcde wrote (:func:`_older_abcde_csv`), get their values back without the mark.
Any other file's values are read as they are: an item id ``'-1`` is ``'-1``, not ``-1``.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from abcde.core.names import SOURCES, VOCABULARY
from abcde.errors import InputError, examples_text
from abcde.samples.people_tasks import outside_tasks
from abcde.samples.sqlite_guard import STORE_NAME
from abcde.samples.raters import OWNER
from abcde.samples.store import read_store_table
from abcde.sampling.ids import pair_id
from abcde.util.files import FORMULA_MARK_COLUMN, is_marked, restore_formulas

#: The judgement file that ``abcde judge oracle`` writes into a sample directory.
JUDGEMENT_FILE = "judgements.csv"


def judgement_files(sample_dir) -> list[Path]:
    """The judgements kept in a sample directory: its ``judgements.csv`` and its judgement
    store ``judgements.sqlite``, those present."""
    d = Path(sample_dir)
    return [p for p in (d / JUDGEMENT_FILE, d / STORE_NAME) if p.exists()]


def vote(answers) -> tuple[str, bool]:
    """The vote rule for one pair judged by several raters: the answer given most often wins;
    a tie between the top answers is ``unsure``. Every answer counts as a vote, ``unsure`` too
    (so {same, unsure} is a tie: unsure). Returns the answer and whether it was a tie.
    ``abcde quality`` and the judging app both resolve votes with it."""
    top = Counter(answers).most_common(2)
    if not top:
        raise ValueError("vote() needs at least one answer")
    if len(top) > 1 and top[0][1] == top[1][1]:
        return "unsure", True
    return top[0][0], False


def majority(answers) -> str:
    """The answer :func:`vote` gives (a tie is ``unsure``)."""
    return vote(answers)[0]


def disputed(answers) -> bool:
    """A real dispute: two or more raters' answers (the owner's aside) that tie under the vote rule
    (:func:`vote`): with two raters, same against different, or one of them unsure. What the owner
    settles; the one definition :func:`resolve`, ``abcde quality`` and the judging app's settle
    queue read."""
    answers = list(answers)
    return len(answers) >= 2 and vote(answers)[1]


#: A pair's place in the owner's settle queue (:attr:`Resolution.state`).
WAITING, SETTLED, INERT = "waiting", "settled", "inert"


@dataclass(frozen=True)
class Resolution:
    """One pair's live votes resolved (:func:`resolve`).

    Attributes
    ----------
    answer
        What the pair counts as (same, different or unsure); None when no rater's vote is live (an
        owner's vote alone settles nothing: the pair is not judged).
    tie
        The votes that count tie (the answer is then unsure).
    disputed
        The raters' votes (the owner's aside) are a real dispute (:func:`disputed`).
    owner
        The owner's live vote, or None.
    owner_counts
        The owner's vote counts: the raters' votes are a real dispute and every one of them was
        cast before the owner's (the owner settled this dispute, not another).
    """

    answer: str | None
    tie: bool = False
    disputed: bool = False
    owner: str | None = None
    owner_counts: bool = False

    @property
    def state(self) -> str | None:
        """The pair in the owner's settle queue: :data:`SETTLED` (a dispute the owner's vote decides),
        :data:`WAITING` (a dispute it does not decide: no vote of the owner's, one cast before a vote
        of the dispute, or a can't tell that leaves the tie), :data:`INERT` (no dispute, and an owner's
        vote that does not count) or None (no dispute, no owner's vote). Every pair is in one: a
        disputed pair is always waiting or settled."""
        if self.disputed:
            return SETTLED if self.owner_counts and not self.tie else WAITING
        return INERT if self.owner is not None else None


def resolve(votes) -> Resolution:
    """One pair's answer from its live votes, ``(is_owner, answer)`` in the order they were cast
    (the owner's settling vote flagged), by the vote rule (:func:`vote`).

    The owner's vote counts only while it settles a real dispute: the raters' votes tie
    (:func:`disputed`) and each was cast before the owner's, so the owner saw every one of them.
    Then it is one more vote: with two raters split, same or different decides the pair two votes
    to one, can't tell leaves the tie. Otherwise (a rater undid or changed so the raters no longer
    tie, or a vote the owner has not seen made a dispute again) it is inert: kept, and the pair is
    what the raters' votes make it; a dispute waits again for the owner.

    >>> resolve([(False, "same"), (False, "different"), (True, "same")]).answer
    'same'
    >>> resolve([(False, "different"), (True, "same")])  # a rater undid: no dispute, the owner's vote is inert
    Resolution(answer='different', tie=False, disputed=False, owner='same', owner_counts=False)
    >>> resolve([(False, "different"), (True, "same"), (False, "same")]).state  # a new vote in a new dispute
    'waiting'
    """
    raters: list = []
    owner, owner_at, last = None, -1, -1
    for k, (is_owner, answer) in enumerate(votes):
        if is_owner:
            owner, owner_at = answer, k
        else:
            raters.append(answer)
            last = k
    if not raters:
        return Resolution(None, owner=owner)
    dispute = disputed(raters)
    counts = dispute and owner is not None and owner_at > last
    answer, tie = vote(raters + [owner] if counts else raters)
    return Resolution(answer, tie, dispute, owner, counts)


def read_table_file(path: str | os.PathLike, role: str) -> pa.Table:
    """Read a CSV, Parquet or JSONL file into Arrow, with a clear error."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"The {role} file '{p}' does not exist.")
    name = p.name.lower()
    # A CSV has no types: every column of a judgement file is read as text (a pair id such as '12e4…'
    # or an item id such as '007' must not become a number; a judgement '1' is then a bad answer).
    types = {c: pa.string() for c in (*JUDGEMENT_COLUMNS, FORMULA_MARK_COLUMN)} if role == "judgements" else {}
    t = None
    try:
        if name.endswith((".sqlite", ".sqlite3", ".db")) and role == "judgements":
            return read_store_table(p)
        if name.endswith((".parquet", ".pq")):
            t = pq.read_table(p)
        elif name.endswith(".csv"):
            t = pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(strings_can_be_null=True,
                                                                       column_types=types))
            if role == "judgements":  # the rows abcde marked: their neutralised formula cells given back exactly
                t = restore_formulas(t, unmarked_rows=_older_abcde_csv(t))
        elif name.endswith((".jsonl", ".ndjson", ".json")):
            if role == "judgements":
                t = _read_judgements_jsonl(p)
            else:
                rows = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
                t = pa.Table.from_pylist(rows)
    except InputError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        first = "".join(c if c.isprintable() else "?" for c in first)  # a NUL of a binary file, quoted
        raise InputError(f"Cannot read the {role} file '{p}': {first}") from exc
    if t is not None:
        seen: set = set()
        dups = [c for c in t.column_names if c in seen or seen.add(c)]
        if dups:
            raise InputError(f"The {role} file '{p}' has more than one column named {dups[0]!r}; "
                             "each column needs its own name.")
        if role == "judgements":
            check_judgement_types(t, p)
        return t
    raise InputError(f"Cannot tell the format of the {role} file '{p}'. Use .csv, .parquet or .jsonl.")


#: The columns of the judgement CSVs abcde wrote before it marked the rows it neutralised
#: (:data:`~abcde.util.files.FORMULA_MARK_COLUMN`): ``judge export`` and the owner's download, ``judge oracle --out``.
OLDER_ABCDE_COLUMNS = (("pair_id", "item_a", "item_b", "judgement", "rater", "source", "comment", "timestamp"),
                       ("pair_id", "item_a", "item_b", "judgement", "rater", "source", "timestamp"))


def _older_abcde_csv(t: pa.Table) -> bool:
    """Whether a judgement CSV read as text (no marker column) is one an older abcde wrote, whose
    neutralised cells carry no marker: it has exactly the columns abcde wrote, in their order, a pair id
    in every row, and every row whose item id reads as marked names its pair only with the mark undone
    (the pair id is that of the ids without their first ``'``, not of the ids as they are). Any other
    file is read as it is: a value that starts with ``'`` is the value."""
    if tuple(t.column_names) not in OLDER_ABCDE_COLUMNS:
        return False
    for r in t.select(["pair_id", "item_a", "item_b"]).to_pylist():
        if r["pair_id"] is None:
            return False
        a, b = r["item_a"], r["item_b"]
        if is_marked(a) or is_marked(b):
            if a is None or b is None:
                return False
            undone = (a[1:] if is_marked(a) else a, b[1:] if is_marked(b) else b)
            if pair_id(*undone) != r["pair_id"] or pair_id(a, b) == r["pair_id"]:
                return False
    return True


#: The columns of a judgement file and the kinds of value each may hold (a column of nulls
#: fits any): ``text`` (strings), ``integer``, ``time`` (dates and timestamps).
JUDGEMENT_COLUMNS = {
    "pair_id": ("text",),
    "item_a": ("text", "integer"),
    "item_b": ("text", "integer"),
    "judgement": ("text",),
    "rater": ("text", "integer"),
    "source": ("text",),
    "comment": ("text",),
    "timestamp": ("text", "time"),
}
_WHAT = {"pair_id": "a pair id is text (as in tasks.csv)", "item_a": "an item id is text or an integer",
         "item_b": "an item id is text or an integer", "judgement": "a judgement is the text same, different or unsure",
         "rater": "a rater is a name: text (or an integer)", "source": "a source is the text person, model or oracle",
         "comment": "a comment is text", "timestamp": "a timestamp is text (ISO 8601) or a date/time"}
_KINDS = {"text": "text", "integer": "integers", "time": "dates or times"}


def _arrow_kind(t: pa.DataType) -> str | None:
    """``text``, ``integer``, ``time`` or ``null`` for an Arrow type that a judgement file may hold; None else."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "text"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "time"
    return None


def _shown(v, limit: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "…"


def check_judgement_types(t: pa.Table, path) -> None:
    """Refuse a judgement table (read from ``path``) with a column of the wrong type: the file,
    the column, its type, the first value and what the column must hold, in one line."""
    for col in t.column_names:
        allowed = JUDGEMENT_COLUMNS.get(col)
        if allowed is None:
            continue  # other columns are the user's, never read
        dtype = t.schema.field(col).type
        kind = _arrow_kind(dtype)
        if kind == "null" or kind in allowed:
            continue
        values = t.column(col)
        first = next(((k, v) for k, v in enumerate(values.to_pylist()) if v is not None), None)
        at = f" (row {first[0] + 1}: {_shown(first[1])})" if first else ""
        raise InputError(f"Column {col!r} of judgements file '{path}' holds {dtype} values{at}; "
                         f"{_WHAT[col]}.")


def _python_kind(v) -> str | None:
    if v is None:
        return "null"
    if isinstance(v, str):
        return "text"
    if isinstance(v, int) and not isinstance(v, bool):
        return "integer" if -(2**63) <= v < 2**63 else None
    return None


def _json_type(v) -> str:
    return {dict: "an object", list: "a list", bool: "true/false", float: "a decimal number",
            int: "an integer", str: "text"}.get(type(v), type(v).__name__)


def _read_judgements_jsonl(p: Path) -> pa.Table:
    """A JSONL judgement file, each line an object, each known key's value checked by type
    (one kind per column in the whole file; a key given twice in one object is refused);
    other keys are the user's and are not read."""
    rows: list[dict] = []
    kinds: dict[str, tuple[str, int]] = {}  # column -> (kind, first row with it)

    def no_duplicates(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise InputError(f"Row {len(rows) + 1} of judgements file '{p}' has the key {k!r} twice; "
                                 "each key needs its own name.")
            seen.add(k)
        return dict(pairs)

    for line in p.read_text().splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=no_duplicates)
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"Row {len(rows) + 1} of judgements file '{p}' is not valid JSON: "
                             f"{str(exc).splitlines()[0]}") from exc
        if not isinstance(obj, dict):
            raise InputError(f"Row {len(rows) + 1} of judgements file '{p}' is {_json_type(obj)}, not an object "
                             "with pair_id (or item_a and item_b) and judgement.")
        row = {}
        for col, allowed in JUDGEMENT_COLUMNS.items():
            if col not in obj:
                continue
            v = obj[col]
            if col == "timestamp" and isinstance(v, str):
                kind = "text"
            else:
                kind = _python_kind(v)
            if kind is None or (kind != "null" and kind not in allowed):
                big = isinstance(v, int) and not isinstance(v, bool) and kind is None
                raise InputError(f"Row {len(rows) + 1} of judgements file '{p}': {col!r} is {_json_type(v)} "
                                 f"({_shown(v)}{', beyond 64 bits' if big else ''}); {_WHAT[col]}.")
            if kind != "null":
                was = kinds.setdefault(col, (kind, len(rows) + 1))
                if was[0] != kind:
                    raise InputError(f"Row {len(rows) + 1} of judgements file '{p}': {col!r} is {_json_type(v)} "
                                     f"({_shown(v)}), but row {was[1]} has {_KINDS[was[0]]}; one column holds "
                                     "one type.")
            row[col] = v
        rows.append(row)
    if not rows:
        raise InputError(f"The judgements file '{p}' is empty.")
    cols = [c for c in JUDGEMENT_COLUMNS if any(c in r for r in rows)]
    arrow = {"text": pa.string(), "integer": pa.int64()}
    return pa.table({c: pa.array([r.get(c) for r in rows], arrow.get(kinds.get(c, ("text",))[0], pa.string()))
                     for c in cols})


@dataclass(frozen=True)
class ResolvedJudgements:
    """One judgement per pair id, after combining raters.

    Attributes
    ----------
    by_pair
        ``pair_id -> "same" | "different" | "unsure"``.
    rows
        Judgement rows read.
    disagreements
        Pairs whose raters disagreed (resolved by majority; ties ⇒ unsure).
    ties
        Of those, pairs with a tie (now unsure).
    sources
        Judgements used per source (``person``, ``model``, ``oracle``): one per rater and pair of the
        sample (the same rater's judgement read from a store and its export counts once).
    raters
        Distinct raters: rater names, and each file (or table) without one.
    left_out
        Judgements per source that the ``source`` filter left out (about; same-rater duplicates once).
    outside_tasks
        People's judgements per source (person, oracle) left out because their pair is not one of
        the people's tasks given (:func:`abcde.samples.people_tasks.outside_tasks`).
    """

    by_pair: dict
    rows: int = 0
    disagreements: int = 0
    ties: int = 0
    sources: dict = field(default_factory=dict)
    raters: int = 0
    left_out: dict = field(default_factory=dict)
    outside_tasks: dict = field(default_factory=dict)

    def used(self, source: str | None = None) -> dict:
        """Which judgements went into the estimates: ``{"by_source": {source: n, …}, "total": n,
        "raters": n, "source": the filter or None (every source), "left_out": {source: n, …}}``."""
        return {"by_source": dict(self.sources), "total": sum(self.sources.values()), "raters": self.raters,
                "source": source, "left_out": dict(self.left_out)}


_INTEGER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)")


def integer_id(value, where: str) -> int:
    """An item id of a sample whose ids are integers, read from a user's file: an integer, or exactly
    an integer's own text (ASCII digits, a leading ``-`` for a negative one, no ``+``, spaces, ``_``,
    leading zeros or other digits), else an :class:`InputError` in one line, ``where`` naming the file,
    the row and the column. ``int()`` would read ``1_0``, ``' 12'`` and ``'١٣'`` as 10, 12 and 13: another
    pair's ids, never silently."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value) and value != "-0":
        return int(value)
    raise InputError(f"{where} is {_shown(value)}, not an integer as the sample's item ids are (ASCII digits "
                     "with an optional leading '-', nothing else).")


def judgement_source(row: dict) -> str:
    """A row's source: its ``source`` column, else from a rater named ``oracle:…``/``model:…``, else person."""
    src = row.get("source")
    if src:
        return src
    prefix = str(row.get("rater") or "").split(":")[0]
    return prefix if prefix in ("oracle", "model") else "person"


def load_judgements(paths, *, pair_ids: set, id_type: str, source: str | None = None,
                    tasks=None) -> ResolvedJudgements:
    """Read judgement files and resolve them against a sample's pair ids.

    Several raters of one pair are resolved by :func:`resolve`: the vote rule, with the owner's
    settling votes counted only while they settle a real dispute (an owner's vote alone leaves the
    pair unjudged). ``sources``, ``raters``, ``disagreements`` and ``ties`` count the votes that count.

    Parameters
    ----------
    paths
        One or more judgement files, or Arrow tables in the judgement file format (read in
        memory, never written to a file: the judging page estimates from its store this way).
    pair_ids
        The pair ids of the sample that need a judgement.
    id_type
        ``"integer"`` or ``"string"``: how item ids are compared with the sample.
    source
        Keep only the judgements of this source (``person``, ``model`` or ``oracle``), or of these
        sources (a tuple: ``("person", "oracle")`` are people's).
    tasks
        The people's tasks (:func:`abcde.samples.people_tasks.people_pairs`; None: every pair is one): a
        person's or the oracle's judgement of another pair is left out, counted in ``outside_tasks``.
    """
    wanted = None if source is None else ({source} if isinstance(source, str) else set(source))
    if wanted is not None and not wanted <= set(SOURCES):
        raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    votes: dict[str, dict[tuple, tuple[str, str]]] = defaultdict(dict)  # pair -> rater -> (answer, source)
    unknown: list = []
    n_rows = 0
    left_out: dict[str, set] = defaultdict(set)  # source -> (pair, rater) of judgements ``source`` leaves out
    outside: dict[str, set] = defaultdict(set)  # source -> (pair, rater) of people's judgements outside ``tasks``
    for n, path in enumerate(paths):
        if isinstance(path, pa.Table):  # judgements in memory (the judging page's live store): no file
            t, path = path, "(judgements in memory)"
            check_judgement_types(t, path)
            anonymous = ("table", n)
        else:
            t = read_table_file(path, "judgements")
            anonymous = ("file", os.path.realpath(path))  # the file itself: one rater, distinct per file
        cols = t.column_names
        if "judgement" not in cols:
            raise InputError(
                f"Column 'judgement' not found in judgements file '{path}'. "
                f"Existing columns: {', '.join(repr(c) for c in cols)}."
            )
        if "pair_id" not in cols and not {"item_a", "item_b"} <= set(cols):
            raise InputError(
                f"The judgements file '{path}' needs a 'pair_id' column or both 'item_a' and 'item_b'. "
                f"Existing columns: {', '.join(repr(c) for c in cols)}."
            )
        rows = t.to_pylist()
        bad = [(k, r["judgement"]) for k, r in enumerate(rows) if r["judgement"] not in VOCABULARY]
        if bad:
            raise InputError(
                f"{len(bad)} rows of judgements file '{path}' have a judgement outside "
                f"{{same, different, unsure}} (first: "
                + ", ".join(f"row {k + 1}: {v!r}" for k, v in bad[:5]) + ")."
            )
        bad_src = [(k, r.get("source")) for k, r in enumerate(rows) if r.get("source") not in (None, *SOURCES)]
        if bad_src:
            raise InputError(
                f"{len(bad_src)} rows of judgements file '{path}' have a source outside {{{', '.join(SOURCES)}}} "
                "(first: " + ", ".join(f"row {k + 1}: {v!r}" for k, v in bad_src[:5]) + ")."
            )
        for k, r in enumerate(rows):
            if wanted is not None and judgement_source(r) not in wanted:
                name = r.get("rater")
                left_out[judgement_source(r)].add((r.get("pair_id") or (r.get("item_a"), r.get("item_b")),
                                                   str(name) if name is not None and str(name) != "" else anonymous))
                continue
            pid = r.get("pair_id")
            if pid is None:
                a, b = r.get("item_a"), r.get("item_b")
                if a is None or b is None:
                    raise InputError(f"Row {k + 1} of judgements file '{path}' has no pair id and no item ids.")
                if id_type == "integer":
                    a, b = (integer_id(v, f"Row {k + 1} of judgements file '{path}': {col}")
                            for col, v in (("item_a", a), ("item_b", b)))
                else:
                    a, b = str(a), str(b)
                pid = pair_id(a, b)
            if pid not in pair_ids:
                unknown.append(pid if r.get("pair_id") else (r.get("item_a"), r.get("item_b")))
                continue
            name = r.get("rater")
            rater = ("name", str(name)) if name is not None and str(name) != "" else anonymous
            if outside_tasks(judgement_source(r), pid, tasks):
                outside[judgement_source(r)].add((pid, rater))
                continue
            prev = votes[pid].get(rater)
            if prev is not None and prev[0] != r["judgement"]:
                who = f"Rater {rater[1]!r}" if rater[0] == "name" else \
                    f"The judgements file '{path}' (no rater named: the file is one rater)"
                raise InputError(
                    f"{who} judged pair {pid} both {prev[0]!r} and {r['judgement']!r} "
                    f"(judgements file '{path}', row {k + 1}). Keep one judgement per rater and pair."
                )
            votes[pid][rater] = (r["judgement"], judgement_source(r))
            n_rows += 1
    if unknown:
        raise InputError(
            f"{len(unknown)} judgements name pairs that are not in the sample (first: {examples_text(unknown)}). "
            "Is the judgement file for another sample?"
        )
    by_pair, disagree, ties = {}, 0, 0
    sources: Counter = Counter()
    raters: set = set()
    owner = ("name", OWNER)
    for pid, rv in votes.items():
        # the votes in the order read (a rater's first row): a store and its export in the order made
        is_owner = {r: r == owner and src == "person" for r, (_, src) in rv.items()}
        res = resolve([(is_owner[r], a) for r, (a, _) in rv.items()])
        if res.answer is None:  # an owner's vote alone: it settles nothing, the pair is not judged
            continue
        used = {r: v for r, v in rv.items() if res.owner_counts or not is_owner[r]}
        answers = [a for a, _ in used.values()]
        by_pair[pid] = res.answer
        disagree += len(set(answers)) > 1
        ties += res.tie
        sources.update(src for _, src in used.values())
        raters.update(used)
    return ResolvedJudgements(by_pair, n_rows, disagree, ties, {s: sources[s] for s in SOURCES if sources[s]},
                              len(raters), {s: len(left_out[s]) for s in SOURCES if left_out.get(s)},
                              {s: len(outside[s]) for s in SOURCES if outside.get(s)})
