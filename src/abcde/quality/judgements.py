"""Judgement files: reading, validating and resolving same/different/unsure answers.

A judgement file (CSV, Parquet or JSONL) has, per row, a ``pair_id`` or both
``item_a`` and ``item_b`` (in either order), a ``judgement`` in
{``same``, ``different``, ``unsure``}, and optionally ``rater``, ``source``
(``person``, ``model`` or ``oracle``; when missing it is read from a rater named
``oracle:…`` or ``model:…``, else ``person``) and ``timestamp``. Several raters may
judge one pair: the majority wins and a tie is ``unsure`` (reported); one rater
giving two different answers for one pair is an error. A judgement store
(``judgements.sqlite``, see :mod:`abcde.judging`) can be read like a file.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from abcde.core.names import SOURCES, VOCABULARY
from abcde.errors import InputError, examples_text
from abcde.quality.store import STORE_NAME, read_store_table
from abcde.sampling.pairs import pair_id

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


def read_table_file(path: str | os.PathLike, role: str) -> pa.Table:
    """Read a CSV, Parquet or JSONL file into Arrow, with a clear error."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"The {role} file '{p}' does not exist.")
    name = p.name.lower()
    # Ids stay text: a pair id such as '12e4…' or an item id such as '007' must not become a number.
    types = {c: pa.string() for c in ("pair_id", "item_a", "item_b", "rater", "source")} if role == "judgements" else {}
    t = None
    try:
        if name.endswith((".sqlite", ".sqlite3", ".db")) and role == "judgements":
            return read_store_table(p)
        if name.endswith((".parquet", ".pq")):
            t = pq.read_table(p)
        elif name.endswith(".csv"):
            t = pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(strings_can_be_null=True,
                                                                       column_types=types))
        elif name.endswith((".jsonl", ".ndjson", ".json")):
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
        return t
    raise InputError(f"Cannot tell the format of the {role} file '{p}'. Use .csv, .parquet or .jsonl.")


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
    """

    by_pair: dict
    rows: int = 0
    disagreements: int = 0
    ties: int = 0
    sources: dict = field(default_factory=dict)


def judgement_source(row: dict) -> str:
    """A row's source: its ``source`` column, else from a rater named ``oracle:…``/``model:…``, else person."""
    src = row.get("source")
    if src:
        return src
    prefix = str(row.get("rater") or "").split(":")[0]
    return prefix if prefix in ("oracle", "model") else "person"


def load_judgements(paths, *, pair_ids: set, id_type: str, source: str | None = None) -> ResolvedJudgements:
    """Read judgement files and resolve them against a sample's pair ids.

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
        Keep only the judgements of this source (``person``, ``model`` or ``oracle``).
    """
    if source is not None and source not in SOURCES:
        raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    unknown: list = []
    n_rows = 0
    sources: Counter = Counter()
    for path in paths:
        if isinstance(path, pa.Table):  # judgements in memory (the judging page's live store): no file
            t, path = path, "(judgements in memory)"
        else:
            t = read_table_file(path, "judgements")
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
            if source is not None and judgement_source(r) != source:
                continue
            pid = r.get("pair_id")
            if pid is None:
                a, b = r.get("item_a"), r.get("item_b")
                if a is None or b is None:
                    raise InputError(f"Row {k + 1} of judgements file '{path}' has no pair id and no item ids.")
                try:
                    a, b = (int(a), int(b)) if id_type == "integer" else (str(a), str(b))
                except (TypeError, ValueError) as exc:
                    raise InputError(
                        f"Row {k + 1} of judgements file '{path}': item ids {a!r}, {b!r} are not integers like "
                        "the sample's."
                    ) from exc
                pid = pair_id(a, b)
            if pid not in pair_ids:
                unknown.append(pid if r.get("pair_id") else (r.get("item_a"), r.get("item_b")))
                continue
            rater = str(r.get("rater") or f"file:{Path(path).name}")
            sources[judgement_source(r)] += 1
            prev = votes[pid].get(rater)
            if prev is not None and prev != r["judgement"]:
                raise InputError(
                    f"Rater {rater!r} judged pair {pid} both {prev!r} and {r['judgement']!r} "
                    f"(judgements file '{path}', row {k + 1}). Keep one judgement per rater and pair."
                )
            votes[pid][rater] = r["judgement"]
            n_rows += 1
    if unknown:
        raise InputError(
            f"{len(unknown)} judgements name pairs that are not in the sample (first: {examples_text(unknown)}). "
            "Is the judgement file for another sample?"
        )
    by_pair, disagree, ties = {}, 0, 0
    for pid, rv in votes.items():
        answers = list(rv.values())
        by_pair[pid], tied = vote(answers)
        disagree += len(set(answers)) > 1
        ties += tied
    return ResolvedJudgements(by_pair, n_rows, disagree, ties, dict(sources))
