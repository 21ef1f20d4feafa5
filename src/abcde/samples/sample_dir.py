"""The pair sample directory: its format, the writer and the reader.

A pair sample (drawn by :func:`abcde.quality.draw_pair_sample`) lives in a directory:

``pairs.parquet``
    one row per draw (vantage item first, class, label, pair id), with the
    sample's metadata (exact pair weight totals, SplitRate(T), MergeRate(T), …);
``metadata.json``
    the same metadata, readable;
``items.parquet``
    the attributes of every item in the sample;
``tasks.csv`` / ``tasks.parquet`` / ``tasks.jsonl``
    one row per pair needing a judgement, both items' attributes side by side
    (blind: no class, no clusters);
``slices.parquet``
    exact ``weight(I)`` and ``pairweight(I)`` (and, for the stratified design, the
    slice's self term) per attribute value asked for;
``judgements.csv`` / ``judgements.sqlite``
    judgements (a judgement file, e.g. the oracle's; the judgement store).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.errors import InputError, with_option
from abcde.samples.dir_lock import LOCK_FILE, served_by
from abcde.samples.people_tasks import people_pairs
from abcde.util import progress as _progress
from abcde.util.files import (InputPrints, aside_prefix, describe_fingerprint, describe_os_error, file_digest,
                              make_temp_dir, parse_json, process_running, remove_dead_leftovers, swap_dir_in,
                              write_table_file)


FORMAT = "abcde.pair_sample"
VERSION = 3  # 2: fingerprints of the files, the draws, the metadata and the inputs (verified on read);
# 3: the stratified design's intersection split by sign, census strata (listed whole, with pair weights)
READABLE_VERSIONS = (1, 2, 3)  # version 1 samples are read as before, without verification
META_KEY = b"abcde"


#: The files a pair sample consists of (written by :func:`write_sample_dir`).
SAMPLE_FILES = ("pairs.parquet", "metadata.json", "items.parquet", "tasks.csv", "tasks.parquet", "tasks.jsonl",
                "slices.parquet")
#: The judgements kept with a sample: a judgement file and the judgement store (with SQLite's side files).
JUDGEMENT_FILES = ("judgements.csv", "judgements.sqlite", "judgements.sqlite-wal", "judgements.sqlite-shm")
#: Where earlier samples of a directory (and their judgements) are kept when it is drawn again.
REPLACED_DIR = "replaced"
#: Item columns never shown to a judge: sampling data, not evidence about the items.
NEVER_SHOWN = ("weight",)


def shown_columns(attributes, hidden=()) -> list[str]:
    """The blind rule: the item attributes a judge (a person, a model, a task file) sees — all but
    the item id, :data:`NEVER_SHOWN` and the ``hidden`` ones (e.g. a ground-truth column)."""
    return [c for c in attributes if c != "item_id" and c not in NEVER_SHOWN and c not in set(hidden)]


def check_hidden(attributes, hidden) -> list[str]:
    """``hidden`` as a list, each an item attribute (else a clear error)."""
    attrs = [c for c in attributes if c != "item_id"]
    unknown = [c for c in hidden if c not in attrs]
    if unknown:
        raise InputError(f"Column(s) {', '.join(map(repr, unknown))} to hide are not item attributes. "
                         f"Attributes: {', '.join(map(repr, attrs)) or '(none)'}.")
    return list(dict.fromkeys(hidden))


def blind_tasks(tasks: pa.Table, attributes, *, hidden=(), show_ids: bool = False) -> pa.Table:
    """The task file's table: ``pair_id`` and the shown attributes side by side (``a_<col>``,
    ``b_<col>``); the item ids only with ``show_ids``."""
    cols = ["pair_id", *(["item_a", "item_b"] if show_ids else [])]
    for c in shown_columns(attributes, hidden):
        cols += [f"a_{c}", f"b_{c}"]
    return tasks.select([c for c in cols if c in tasks.column_names])


def write_sample_dir(out_dir: str | os.PathLike, draws: pa.Table, items: pa.Table, meta: dict, *,
                     slices: pa.Table | None = None, force: bool = False, hidden=(),
                     show_ids: bool = False, extends: str | None = None) -> Path:
    """Write a pair sample directory: ``pairs.parquet`` (draws with ``meta``, plus format, version
    and sample id), ``metadata.json``, ``items.parquet``, ``tasks.*`` and ``slices.parquet``
    (when given). All files are written aside and moved in together.

    No judgement is ever deleted or overwritten:

    - drawing the same sample again (same seed and pairs: the same sample id) rewrites the
      sample's files and keeps its judgements, which still belong to it; files of the earlier
      draw that this one does not write (e.g. ``slices.parquet`` for other columns) are moved
      to ``replaced/``;
    - a directory holding another sample is refused unless ``force``; with ``force`` the earlier
      sample's files and its judgements move together to ``replaced/<sample id>-<time>/``
      (where the judgement store still works with its sample), recorded in the new metadata as
      ``replaced``;
    - ``extends``: the sample id of the sample in ``out`` that this one continues (``pairs
      --extend``: the same draws and more); its judgements stay, as for the same sample;
    - a directory being served by ``abcde judge serve`` is refused.

    The task files are blind (:func:`blind_tasks`): a pair id and the shown attributes; the
    ``hidden`` columns and ``show_ids`` are recorded (``blind``) so that the judging app and
    model judges hide the same; ``tasks.csv`` neutralises formula cells.
    """
    out = Path(os.path.abspath(out_dir))  # "." too: its parent and name are the real ones
    plan = _plan(out, draws, items, meta, force=force, hidden=hidden, show_ids=show_ids, extends=extends,
                 with_slices=slices is not None)
    try:
        _write_whole(out, lambda tmp: _write_files(tmp, plan, draws, items, slices), plan.aside, old_id=plan.old_id)
    except OSError as exc:
        raise InputError(describe_os_error(exc, f"Cannot write the pair sample to '{out}':")) from exc
    return out


@dataclass(frozen=True)
class _Plan:
    """What writing a sample into ``out`` does with what ``out`` holds (decided by :func:`_plan`)."""

    out: Path
    meta: dict  # the new sample's metadata (sample id, blind settings, ``replaced``)
    old_id: str | None  # the sample ``out`` held (None: none)
    aside: tuple[Path, tuple] | None  # (folder relative to out, which of out's files) to keep aside


def _plan(out: Path, draws: pa.Table, items: pa.Table, meta: dict, *, force: bool, hidden, show_ids: bool,
          extends: str | None, with_slices: bool) -> _Plan:
    """The checks of :func:`write_sample_dir` (nothing is written): the sample's metadata, and what
    becomes of the sample and judgements ``out`` holds."""
    hidden = check_hidden(items.column_names, hidden)
    meta = {"format": FORMAT, "version": VERSION, **meta, "blind": {"hidden": hidden, "show_ids": bool(show_ids)}}
    meta["sample_id"] = _sample_id(draws, meta["seed"])
    if out.exists() and not out.is_dir():
        raise InputError(f"The output directory '{out}' is a file; give a directory for the pair sample.")
    old_id = _existing_sample_id(out)
    aside: tuple[Path, tuple] | None = None  # (where in out, which of out's files) to keep aside
    if old_id is not None:
        _refuse_if_served(out)
        if extends is not None and old_id not in (meta["sample_id"], extends):
            # an extension of a sample that another draw replaced meanwhile (two 'pairs --extend' at
            # once): running it again extends what the directory holds now (it takes no --force)
            raise InputError(f"'{out}' was drawn into while this extension was being drawn: it held sample "
                             f"{extends}, now {old_id} (another abcde pairs, e.g. a second --extend); nothing was "
                             "changed. Wait for that one to finish and run the command again: it extends the "
                             "sample the directory holds then.")
        if old_id not in (meta["sample_id"], extends):
            if not force:
                kept = [f for f in JUDGEMENT_FILES[:2] if (out / f).exists()]
                raise InputError(
                    f"'{out}' already holds pair sample {old_id}"
                    + (f" with judgements ({', '.join(kept)})" if kept else "")
                    + "; drawing another sample there would orphan them. Draw into a new directory"
                    + with_option("force", ", or pass {option} to replace it: the earlier sample and its judgements "
                                  f"are then moved to '{out / REPLACED_DIR}/{old_id}-<time>/'") + ".")
            aside = (_aside_name(out, old_id), SAMPLE_FILES + JUDGEMENT_FILES)
            meta["replaced"] = {"sample_id": old_id, "moved_to": str(out / aside[0])}
        else:
            stale = [f for f in SAMPLE_FILES if (out / f).exists() and f == "slices.parquet" and not with_slices]
            if stale:
                aside = (_aside_name(out, old_id), tuple(stale))
                meta["replaced"] = {"sample_id": old_id, "moved_to": str(out / aside[0]), "files": stale}
    return _Plan(out, meta, old_id, aside)


def _busy_text(out: Path, done: str) -> str | None:
    """The refusal of a draw into ``out`` while another abcde writes a sample into it (the folder it
    builds beside ``out``, :func:`~abcde.util.files.aside_prefix`, named by its process id), or None."""
    stem = f".{out.name}.abcde-new-"
    for p in out.parent.glob(f"{glob.escape(stem)}*"):
        pid = p.name[len(stem):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and process_running(int(pid)):
            return (f"Another abcde pairs (pid {pid}) is drawing into '{out}'; {done}. Wait for it to finish and "
                    "run the command again.")
    return None


def _refuse_if_served(out: Path) -> None:
    holder = served_by(out)
    if holder is not None:
        raise InputError(_busy_text(out, "nothing was drawn")
                         or f"The sample directory '{out}' is being served ({holder}); stop that server before "
                         "drawing pairs into it.")


def _write_files(tmp: Path, plan: _Plan, draws: pa.Table, items: pa.Table, slices: pa.Table | None) -> None:
    """The sample's files, written into ``tmp``; the metadata records their fingerprints."""
    meta = plan.meta
    hidden = meta["blind"]["hidden"]
    pq.write_table(items, tmp / "items.parquet")
    if slices is not None:
        pq.write_table(slices, tmp / "slices.parquet")
    # The task files hold the people's tasks: every pair, or the subset drawn for people (--human-budget).
    tasks = blind_tasks(task_table(draws, items, people_pairs(draws, meta)), items.column_names, hidden=hidden,
                        show_ids=meta["blind"]["show_ids"])
    tasks = tasks.replace_schema_metadata(None)
    write_table_file(tasks, tmp / "tasks.csv")  # for people: formula cells neutralised
    for ext in ("parquet", "jsonl"):
        write_table_file(tasks, tmp / f"tasks.{ext}")
    # Fingerprints: every file of the sample, the draws, and (last) the metadata itself.
    meta["files"] = {f.name: file_digest(f) for f in sorted(tmp.iterdir())}
    meta["draws_digest"] = draws_digest(draws)
    meta["meta_digest"] = meta_digest(meta)
    pq.write_table(draws.replace_schema_metadata({META_KEY: json.dumps(meta, default=str).encode()}),
                   tmp / "pairs.parquet")
    (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


@dataclass(frozen=True)
class StagedSample:
    """A pair sample written into a folder (``files``) that becomes the directory ``out`` as part
    of a larger directory swapped in whole (``abcde evaluate``'s): :func:`stage_sample_dir`."""

    out: Path
    files: Path
    plan: _Plan

    @property
    def metadata(self) -> dict:
        return self.plan.meta

    @contextlib.contextmanager
    def kept_linked(self):
        """Hard-link into ``files`` what ``out`` holds besides its sample's files (its judgements,
        ``replaced/``, …; the earlier sample with its judgements into ``replaced/<id>-<time>/``
        when it is replaced), as :func:`write_sample_dir` does; the caller swaps ``files`` in inside
        the ``with`` block. Meanwhile ``out``'s in-use lock
        (:data:`~abcde.samples.dir_lock.LOCK_FILE`) is held exclusively,
        so no judge writes between the links and the swap. Refuses when ``out`` is in use (served,
        judged) or was drawn into since the sample was staged."""
        with _held_unchanged(self.out, self.plan.old_id):
            if self.out.is_dir():
                _link_kept(self.out, self.files, self.plan.aside)
            yield


@contextlib.contextmanager
def _held_unchanged(out: Path, old_id: str | None):
    """Hold ``out``'s in-use lock (:data:`~abcde.samples.dir_lock.LOCK_FILE`) exclusively for the
    ``with`` block, after checking
    that ``out`` still holds sample ``old_id`` (what the plan saw): no judging server or model run
    writes into ``out`` between the links of its judgements and the swap. Refuses in one line when
    ``out`` is in use or was drawn into meanwhile; nothing is changed then."""
    lock = None
    if out.is_dir():
        lock = open(out / LOCK_FILE, "a+")
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            holder = " ".join(lock.read().split()) or "another process"
            lock.close()
            raise InputError(_busy_text(out, "nothing was replaced")
                             or f"The sample directory '{out}' is in use ({holder}); nothing was replaced. Stop "
                             "that process (a judging server, a model run) and run again.") from None
    try:
        now = _existing_sample_id(out)
        if now != old_id:
            raise InputError(f"'{out}' changed while this sample was being drawn for it (it held sample "
                             f"{old_id}, now {now}); nothing was replaced. Run again.")
        yield
    finally:
        if lock is not None:
            lock.close()


def stage_sample_dir(out_dir: str | os.PathLike, files: str | os.PathLike, draws: pa.Table, items: pa.Table,
                     meta: dict, *, slices: pa.Table | None = None, force: bool = False, hidden=(),
                     show_ids: bool = False) -> StagedSample:
    """Write the pair sample meant for ``out_dir`` into the new folder ``files`` (made here; its
    parent must exist): the checks and files of :func:`write_sample_dir` (a directory holding
    another sample refused unless ``force``; recorded paths are ``out_dir``'s), without touching
    ``out_dir``. :meth:`StagedSample.kept_linked` then links what ``out_dir`` keeps (judgements,
    ``replaced/``) into it, just before the caller swaps it in."""
    out, files = Path(os.path.abspath(out_dir)), Path(files)
    plan = _plan(out, draws, items, meta, force=force, hidden=hidden, show_ids=show_ids, extends=None,
                 with_slices=slices is not None)
    try:
        files.mkdir()
        _write_files(files, plan, draws, items, slices)
    except OSError as exc:
        raise InputError(describe_os_error(exc, f"Cannot write the pair sample for '{out}':")) from exc
    return StagedSample(out, files, plan)


def _write_whole(out: Path, write, aside: tuple[Path, tuple] | None = None, *, old_id: str | None = None) -> None:
    """Write a sample directory as one step: after a crash at any moment ``out`` holds the old
    directory or the new one, whole.

    The new sample is built in a hidden sibling directory; everything of ``out`` that is not a
    file of the sample (judgements kept, ``replaced/``, the server lock, a user's files) is
    hard-linked into it (no copy; the data is not touched); then the two directories are
    exchanged atomically (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames, with the
    old directory kept aside in between), and the old one, whose every kept file is now linked
    from ``out``, is removed. ``aside``: ``(folder relative to out, names)`` of ``out``'s files to
    keep in that folder instead (an earlier sample and its judgements, stale files). The links and
    the exchange happen under ``out``'s in-use lock, ``out`` still holding sample ``old_id``
    (:func:`_held_unchanged`): a judge that starts meanwhile waits or is refused, never writes into
    the old directory.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(out)
    new = make_temp_dir(out.parent, prefix=aside_prefix(out))
    try:
        write(new)
        if not out.exists():
            os.rename(new, out)  # the directory appears whole
            return
        with _held_unchanged(out, old_id):
            _link_kept(out, new, aside)
            _exchange(new, out)
    finally:
        shutil.rmtree(new, ignore_errors=True)  # the new files if anything failed; else the old directory


def _link_kept(out: Path, new: Path, aside: tuple[Path, tuple] | None) -> None:
    """Hard-link everything of ``out`` that is not a file of the sample into ``new`` (``aside``: those
    of ``out``'s files to link into that folder of ``new`` instead)."""
    keep_aside = set(aside[1]) if aside else set()
    for entry in out.iterdir():
        if entry.name not in SAMPLE_FILES and entry.name not in keep_aside:
            _link_tree(entry, new / entry.name)
    if keep_aside:
        folder = new / aside[0]
        folder.mkdir(parents=True)
        for name in aside[1]:
            if (out / name).exists():
                _link_tree(out / name, folder / name)


def _remove_leftovers(out: Path) -> None:
    """Remove the hidden folders that earlier writers of ``out`` left when they were killed (named
    ``.<out>.abcde-new-<pid>-*``, a new sample never moved in; its files are only copies or links
    of files still in ``out``), those of processes no longer running."""
    remove_dead_leftovers(out)


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link a file, or a directory's files (recreating its folders), at ``dst``."""
    if src.is_dir() and not src.is_symlink():
        dst.mkdir()
        for child in src.iterdir():
            _link_tree(child, dst / child.name)
    else:
        os.link(src, dst, follow_symlinks=False)


def _exchange(a: Path, b: Path) -> None:
    """Put the new sample ``a`` in ``b``'s place: the two swapped atomically (Linux), else with two
    renames; entry by entry when ``b`` cannot be moved (the working directory, a mount point), its
    metadata last (:func:`abcde.util.files.swap_dir_in`)."""
    swap_dir_in(a, b, last="metadata.json")


def draws_digest(draws: pa.Table) -> str:
    """sha256 of the draws' values, column by column (independent of how Parquet chunks them)."""
    h = hashlib.sha256()
    for name in sorted(draws.column_names):
        h.update(json.dumps([name, draws.column(name).to_pylist()], default=str).encode())
    return h.hexdigest()


def meta_digest(meta: dict) -> str:
    """sha256 of the metadata (its ``meta_digest`` left out), as canonical JSON."""
    body = {k: v for k, v in meta.items() if k != "meta_digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _existing_sample_id(out: Path) -> str | None:
    """The sample id of the pair sample in ``out`` (``"unknown"`` for a ``pairs.parquet`` that
    cannot be read), or None when ``out`` holds no sample and no judgements."""
    f = out / "pairs.parquet"
    if not f.exists():
        return "unknown" if any((out / j).exists() for j in JUDGEMENT_FILES[:2]) else None
    try:
        raw = (pq.read_schema(f).metadata or {}).get(META_KEY)
        return str(json.loads(raw)["sample_id"]) if raw else "unknown"
    except Exception:  # a damaged file: still someone's sample, never overwritten silently
        return "unknown"


def _aside_name(out: Path, sample_id: str) -> Path:
    """A new ``replaced/<id>-<UTC time>`` folder name (relative to ``out``) for an earlier sample."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = Path(REPLACED_DIR) / f"{sample_id}-{stamp}"
    k = 1
    while (out / name).exists():
        k += 1
        name = Path(REPLACED_DIR) / f"{sample_id}-{stamp}-{k}"
    return name


def sample_lineage(meta: dict) -> set[str]:
    """The sample ids whose judgements belong to this sample: its own and those of the samples it
    extends (``pairs --extend`` keeps every earlier draw, so every earlier pair id is still in it)."""
    return {meta["sample_id"], *(e["sample_id"] for e in meta.get("extends", []))}


def _sample_id(draws: pa.Table, seed: int) -> str:
    h = hashlib.md5(str(seed).encode())
    for p in draws.column("pair_id").to_pylist() if draws.num_rows else []:
        h.update(p.encode())
    return h.hexdigest()[:16]


def task_table(draws: pa.Table, items_t: pa.Table, only=None) -> pa.Table:
    """One row per pair needing a judgement: ``pair_id, item_a, item_b`` and both
    items' attributes side by side (``a_<col>``, ``b_<col>``), in first-draw order; ``only``: just
    these pair ids (the people's tasks, :func:`abcde.samples.people_tasks.people_pairs`)."""
    attrs = {r["item_id"]: r for r in items_t.to_pylist()}
    cols = [c for c in items_t.column_names if c != "item_id"]
    rows, seen = [], set()
    if draws.num_rows:
        for a, b, pid, need in zip(draws.column("item_a").to_pylist(), draws.column("item_b").to_pylist(),
                                   draws.column("pair_id").to_pylist(), draws.column("needs_judgement").to_pylist()):
            if not need or pid in seen or (only is not None and pid not in only):
                continue
            seen.add(pid)
            row = {"pair_id": pid, "item_a": a, "item_b": b}
            for c in cols:
                row[f"a_{c}"] = attrs.get(a, {}).get(c)
            for c in cols:
                row[f"b_{c}"] = attrs.get(b, {}).get(c)
            rows.append(row)
    if not rows:
        return pa.table({"pair_id": pa.array([], pa.string()), "item_a": pa.array([], pa.string()),
                         "item_b": pa.array([], pa.string())})
    return pa.Table.from_pylist(rows)


@dataclass(frozen=True)
class PairSampleDir:
    """A pair sample directory read back: draws, metadata, items, slices."""

    path: Path
    draws: pa.Table
    metadata: dict
    items: pa.Table

    @classmethod
    def read(cls, path: str | os.PathLike) -> "PairSampleDir":
        p = Path(path)
        f = p / "pairs.parquet"
        if not f.exists():
            raise InputError(f"'{p}' is not a pair sample directory (no pairs.parquet); make one with 'abcde pairs'.")
        try:
            t = pq.read_table(f)
        except Exception as exc:
            raise InputError(f"Cannot read '{f}' of the pair sample: {str(exc).splitlines()[0] if str(exc) else exc!r}. "
                             "Draw the pairs again (abcde pairs --force keeps the judgements aside).") from exc
        raw = (t.schema.metadata or {}).get(META_KEY)
        if raw is None:
            raise InputError(f"'{f}' has no abcde metadata; it was not written by 'abcde pairs'.")
        try:
            meta = parse_json(raw)
        except ValueError as exc:  # not JSON, or nested deeper than can be read: one line naming the file
            raise InputError(f"'{f}' holds abcde metadata that cannot be read: {exc}. Draw the pairs again.") from None
        if not isinstance(meta, dict):
            raise InputError(f"'{f}' holds abcde metadata that is not an object. Draw the pairs again.")
        if meta.get("format") != FORMAT or meta.get("version") not in READABLE_VERSIONS:
            raise InputError(
                f"'{f}' is a {meta.get('format')!r} of version {meta.get('version')!r}; this abcde reads "
                f"{FORMAT} versions {', '.join(map(str, READABLE_VERSIONS))}. Draw the pairs again with this version."
            )
        draws = t.replace_schema_metadata(None)
        if meta["version"] >= 2:
            _verify(p, meta, draws)
        try:
            items = pq.read_table(p / "items.parquet")
        except Exception as exc:
            raise InputError(f"Cannot read '{p / 'items.parquet'}' of the pair sample: "
                             f"{str(exc).splitlines()[0]}") from exc
        return cls(p, draws, meta, items)

    def check_inputs(self, **inputs) -> InputPrints:
        """Refuse inputs (``base=``, ``exp=``, ``items=``: paths) that differ from those the sample
        was drawn from: each local file is fingerprinted by its whole content (sha256) and compared
        with the fingerprint recorded when the sample was drawn, and a changed one is named.
        Returns the fingerprints taken (:class:`~abcde.util.files.InputPrints`): a job that goes on
        to read the inputs checks them again after its last read (:meth:`InputPrints.check`).

        An input abcde cannot fingerprint (a directory of part files, a URI, a table) is not
        checked, and it says so."""
        recorded = self.metadata.get("input_fingerprints") or {}
        prints = InputPrints(inputs)
        changed, partial = [], []
        for role, source in prints.sources.items():
            was, now = recorded.get(role), prints.prints.get(role)
            if was is None or now is None:
                continue
            if "sha256" not in was:  # an earlier abcde's fingerprint of a file over 1 GiB: its ends only
                partial.append(f"{role} '{os.fspath(source)}'")
            elif now != was:
                changed.append(f"{role} '{os.fspath(source)}' differs from the file it was drawn from "
                               f"('{Path(os.fspath(source)).name}' changed since the sample was drawn: "
                               f"{describe_fingerprint(was)} then, {describe_fingerprint(now)} now)")
        if changed:
            raise InputError(
                f"The pair sample in '{self.path}' was drawn from other inputs: {'; '.join(changed)}. Its estimates "
                "would not describe these inputs; draw the pairs again from them.")
        if partial:
            raise InputError(
                f"The pair sample in '{self.path}' recorded only part of the fingerprint of {', '.join(partial)} "
                "(size, time and the first and last MiB, as abcde did for files over 1 GiB before), which cannot "
                "show that the file is unchanged. Draw the sample again from the same inputs with the same seed and "
                "budget (abcde pairs ... --out DIR): the same sample keeps its judgements and records whole "
                "fingerprints.")
        if prints.unprinted:
            what = "is a directory or URI" if len(prints.unprinted) == 1 else "are directories or URIs"
            _progress.note(f"Not checked against the sample in '{self.path}': {prints.unprinted_text()} {what}, "
                           "which abcde cannot fingerprint; it cannot tell whether they changed since the sample "
                           "was drawn.")
        return prints

    @property
    def hidden(self) -> list[str]:
        """Attribute columns hidden from judges when the pairs were drawn (``pairs --hide``)."""
        return list(self.metadata.get("blind", {}).get("hidden", []))

    @property
    def show_ids(self) -> bool:
        """Whether judges may see item ids (``pairs --show-ids``)."""
        return bool(self.metadata.get("blind", {}).get("show_ids", False))

    def judgeable_ids(self) -> set:
        if not self.draws.num_rows:
            return set()
        need = self.draws.column("needs_judgement").to_pylist()
        return {pid for pid, n in zip(self.draws.column("pair_id").to_pylist(), need) if n}

    def slices(self) -> dict:
        f = self.path / "slices.parquet"
        if not f.exists():
            return {}
        out: dict = {}
        for r in pq.read_table(f).to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["weight"], r["pairweight"])
        return out

    def slice_self_terms(self) -> dict:
        """``{column: {value: (Σ_{i∈I} u_ii·l_ii, Σ_{i∈I} u_ii)}}``, exact (for the stratified design)."""
        f = self.path / "slices.parquet"
        t = pq.read_table(f) if f.exists() else None
        if t is None or "self_term" not in t.column_names:
            return {}
        out: dict = {}
        for r in t.to_pylist():
            out.setdefault(r["column"], {})[r["value"]] = (r["self_term"], r["self_pairweight"])
        return out




def _verify(path: Path, meta: dict, draws: pa.Table) -> None:
    """Refuse a sample directory whose files don't belong together: metadata edited, draws
    changed, a file changed, replaced, missing or left over from another sample."""
    def refuse(what: str) -> None:
        raise InputError(f"The pair sample in '{path}' does not verify: {what}. Its files don't belong together; "
                         "draw the pairs again (abcde pairs --force keeps the judgements aside).")

    if meta.get("meta_digest") != meta_digest(meta):
        refuse("its metadata was edited after the draw")
    readable = path / "metadata.json"
    if not readable.exists():
        refuse("metadata.json is missing")
    try:
        shown = parse_json(readable.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = str(exc) if "nested" in str(exc) else "not readable JSON"
        refuse(f"metadata.json is not the sample's metadata ({why})")
    if not isinstance(shown, dict) or shown.get("sample_id") != meta.get("sample_id"):
        refuse(f"pairs.parquet holds sample {meta.get('sample_id')!r}, but metadata.json describes "
               f"{shown.get('sample_id') if isinstance(shown, dict) else None!r} (a pairs.parquet from another sample?)")
    if json.dumps(shown, sort_keys=True, default=str) != json.dumps(json.loads(json.dumps(meta, default=str)),
                                                                   sort_keys=True, default=str):
        refuse("metadata.json was edited after the draw (it differs from the metadata in pairs.parquet)")
    if meta.get("draws_digest") != draws_digest(draws):
        refuse("pairs.parquet's draws were changed after the draw")
    files = meta.get("files") or {}
    for name, digest in files.items():
        f = path / name
        if not f.exists():
            refuse(f"{name} is missing")
        if file_digest(f) != digest:
            refuse(f"{name} was changed or replaced after the draw")
    for name in SAMPLE_FILES:
        if name not in files and name not in ("pairs.parquet", "metadata.json") and (path / name).exists():
            refuse(f"{name} is not part of this sample (left from another draw?)")
