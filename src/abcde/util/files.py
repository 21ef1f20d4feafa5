"""All-or-nothing writes: the one place where abcde writes a user's files.

A file is written to a temporary name beside its destination and renamed into place
(:func:`atomic_path`, :func:`write_text`, :func:`write_table_file`); a set of files is
built in a temporary folder inside the destination directory and each renamed into
place only when all were written (:func:`replace_files`); a directory is built aside and
exchanged with the old one in one step (:func:`make_temp_dir`, :func:`exchange_dirs`). A failure
leaves the old files as they were and no partial file behind. Every file and directory written
gets the mode the user's umask gives (``0666 & ~umask``, ``0777 & ~umask``), as a plain
``open()`` or ``mkdir()`` would: the temporary names are made here, not by :mod:`tempfile`
(whose files are 0600 and directories 0700, which the rename would keep).

Input files are fingerprinted here too (:func:`input_fingerprint`, :class:`InputPrints`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import hashlib
import json
import os
import secrets
import shutil
import stat
import time
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from abcde.errors import InputError


def make_temp_file(directory: str | os.PathLike, *, prefix: str, suffix: str = "") -> Path:
    """A new empty file with a unique name in ``directory``, of mode ``0666 & ~umask`` (the mode an
    ordinary new file gets; :func:`tempfile.mkstemp` gives 0600, which a rename into place keeps)."""
    for _ in range(100):
        p = Path(directory) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666))
        except FileExistsError:
            continue
        return p
    raise FileExistsError(errno.EEXIST, "No usable temporary file name", str(directory))


def make_temp_dir(directory: str | os.PathLike, *, prefix: str) -> Path:
    """A new empty directory with a unique name in ``directory``, of mode ``0777 & ~umask`` (the
    mode ``mkdir`` gives; :func:`tempfile.mkdtemp` gives 0700, which a rename into place keeps)."""
    for _ in range(100):
        p = Path(directory) / f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(p, 0o777)
        except FileExistsError:
            continue
        return p
    raise FileExistsError(errno.EEXIST, "No usable temporary directory name", str(directory))


def aside_prefix(dest: str | os.PathLike) -> str:
    """The name prefix of the directory a writer of ``dest`` builds aside, beside it
    (``.<name>.abcde-new-<pid>-``): the process id tells a killed writer's leftovers
    (:func:`remove_dead_leftovers`) from a running one's."""
    return f".{Path(dest).name}.abcde-new-{os.getpid()}-"


def remove_dead_leftovers(dest: str | os.PathLike) -> list[str]:
    """Remove what killed writers of ``dest`` left beside it (``.<name>.abcde-new-<pid>-*``, a new
    version never swapped in, or an old one swapped out and not yet removed), those of processes
    no longer running; a running writer's are left alone. Their files are new ones, or hard links
    of files still in ``dest``. Returns the names removed."""
    d = Path(dest)
    stem = f".{d.name}.abcde-new-"
    removed = []
    for p in d.parent.glob(f"{glob.escape(stem)}*"):
        pid = p.name[len(stem):].split("-", 1)[0]
        if pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    return removed


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` runs (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_RENAME_EXCHANGE = 2


def exchange_dirs(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Swap two directories atomically (Linux ``renameat2(RENAME_EXCHANGE)``: at every moment each
    name holds one whole directory), else with two renames (``b`` kept aside in between)."""
    a, b = Path(a), Path(b)
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        at_fdcwd = -100
        if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(b))
    aside = b.with_name(f".{b.name}.abcde-old-{os.getpid()}")
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure
    it is removed and ``path`` is left as it was."""
    dest = Path(path)
    try:
        tmp = make_temp_file(dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    except FileNotFoundError as exc:
        raise InputError(f"Cannot write '{dest}': the directory '{dest.parent}' does not exist.") from exc
    except OSError as exc:  # name the destination's directory, not the temporary file
        raise OSError(exc.errno, exc.strerror, str(dest.parent)) from exc
    try:
        yield tmp
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def swap_dir_in(new: str | os.PathLike, dest: str | os.PathLike, *, last: str) -> None:
    """Put the directory ``new`` in ``dest``'s place in one step, the one way abcde swaps a directory
    in (a pair sample, an evaluation): renamed there when ``dest`` is missing, else the two exchanged
    (:func:`exchange_dirs`; ``new`` then holds the old directory, for the caller to remove). A ``dest``
    that cannot be moved (the working directory, or one holding it; a mount point) gets ``new``'s
    entries one by one instead, its file ``last`` (what marks the directory whole: an evaluation's
    record, a sample's metadata) removed first and put back last, so an interrupted swap leaves a
    directory without it, which the readers refuse as unfinished."""
    new, dest = Path(new), Path(dest)
    if not dest.exists() and not dest.is_symlink():
        os.rename(new, dest)
        return
    cwd = os.path.realpath(os.getcwd())
    if not (cwd == str(dest) or cwd.startswith(str(dest) + os.sep) or os.path.ismount(dest)):
        exchange_dirs(new, dest)
        return
    old = new / ".abcde-old"  # removed with new
    old.mkdir()
    if (dest / last).exists():
        os.replace(dest / last, old / last)
    for entry in sorted(new.iterdir()):
        if entry.name in (last, old.name):
            continue
        if (dest / entry.name).exists():
            os.replace(dest / entry.name, old / entry.name)
        os.replace(entry, dest / entry.name)
    if (new / last).exists():
        os.replace(new / last, dest / last)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


#: Cell starts that a spreadsheet reads as a formula (CSV injection; OWASP's list, with line feed and
#: the full-width forms some spreadsheets fold to them).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: The mark of a neutralised cell: a spreadsheet shows the text after it as text and hides the mark.
FORMULA_QUOTE = "'"
#: The column that says which rows of a CSV abcde wrote carry its marks: its cell is ``'`` (the mark
#: itself) in each row where a cell was neutralised, empty elsewhere; present only when one was.
FORMULA_MARK_COLUMN = "abcde_formula_mark"


def neutralise_formulas(table: pa.Table) -> pa.Table:
    """Every text cell that a spreadsheet would run as a formula, prefixed with ``'`` (a CSV file people
    open); a cell that starts with ``'`` gets one more, so :func:`restore_formulas` gives back every
    value exactly. Nested columns become JSON text first; other cells are unchanged.

    The rows that carry a mark say so: a last column :data:`FORMULA_MARK_COLUMN` holds ``'`` in each
    of them (empty in the others), added only when some cell was marked. Only such rows are given back
    by :func:`restore_formulas`: a file another program wrote has no such column, so a value of its own
    that starts with ``'`` is read as it is. The marker is the mark itself, so a program that drops the
    marks (a spreadsheet that reads ``'=x`` as the text ``=x`` and saves it so) drops the marker with them,
    and the file is then read as it is, rightly."""
    table = _flat_for_csv(table)
    if FORMULA_MARK_COLUMN in table.column_names:
        raise InputError(f"A table to write as CSV has a column named {FORMULA_MARK_COLUMN!r}, the name abcde "
                         "gives the column that marks its neutralised formula cells; rename that column.")
    marks = (*FORMULA_STARTS, FORMULA_QUOTE)
    marked = [False] * table.num_rows
    for k, f in enumerate(table.schema):
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            values = table.column(k).to_pylist()
            for i, v in enumerate(values):
                if isinstance(v, str) and v.startswith(marks):
                    values[i] = FORMULA_QUOTE + v
                    marked[i] = True
            table = table.set_column(k, f, pa.array(values, f.type))
    if any(marked):
        table = table.append_column(FORMULA_MARK_COLUMN,
                                    pa.array([FORMULA_QUOTE if m else None for m in marked], pa.string()))
    return table


def restore_formulas(table: pa.Table, *, unmarked_rows: bool = False) -> pa.Table:
    """The values :func:`neutralise_formulas` was given, from a CSV table read as text: in each row whose
    :data:`FORMULA_MARK_COLUMN` cell is ``'``, a text cell ``'`` + a formula start (or ``'``) loses its
    first ``'`` (as a spreadsheet reads it); the marker column is dropped; every other cell is unchanged.

    A table without the marker column is returned as it is (a file abcde did not write: its values
    are its own), unless ``unmarked_rows``: a file the caller recognised as written by an abcde from
    before the marker column, whose every row may carry marks."""
    if FORMULA_MARK_COLUMN in table.column_names:
        k = table.column_names.index(FORMULA_MARK_COLUMN)
        rows = [v == FORMULA_QUOTE for v in table.column(k).to_pylist()]
        table = table.remove_column(k)
    elif unmarked_rows:
        rows = [True] * table.num_rows
    else:
        return table
    if not any(rows):
        return table
    for k, f in enumerate(table.schema):
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            values = [v[1:] if row and is_marked(v) else v
                      for row, v in zip(rows, table.column(k).to_pylist())]
            table = table.set_column(k, f, pa.array(values, f.type))
    return table


def is_marked(value) -> bool:
    """Whether ``value`` reads as a cell :func:`neutralise_formulas` marked: ``'`` + a formula start or ``'``."""
    return (isinstance(value, str) and value.startswith(FORMULA_QUOTE)
            and value[1:].startswith((*FORMULA_STARTS, FORMULA_QUOTE)))


def write_table_file(table: pa.Table, path: str | os.PathLike, *, spreadsheet: bool = True) -> Path:
    """Write Arrow as CSV, Parquet or JSONL by extension, atomically.

    A CSV is written for people, who open it in a spreadsheet: every text cell that would run as a
    formula is neutralised (:func:`neutralise_formulas`: its rows marked in the column
    :data:`FORMULA_MARK_COLUMN`, whose marks abcde's readers of judgement files undo).
    ``spreadsheet=False`` writes the values as they are, for a CSV that is data for a program (such as
    ``abcde weights --out W.csv``, read back as ``--items``)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".parquet", ".pq", ".csv", ".jsonl", ".ndjson")):
        raise InputError(f"Cannot tell the format for '{path}'. Use .csv, .parquet or .jsonl.")
    with atomic_path(path) as tmp:
        if name.endswith((".parquet", ".pq")):
            pq.write_table(table, tmp)
        elif name.endswith(".csv"):
            pacsv.write_csv(neutralise_formulas(table) if spreadsheet else _flat_for_csv(table), tmp)
        else:
            with open(tmp, "w") as fh:
                for row in table.to_pylist():
                    fh.write(json.dumps(row, default=str) + "\n")
    return path


def _flat_for_csv(table: pa.Table) -> pa.Table:
    """``table`` with every nested column (struct, list, map) as JSON text: a CSV cell holds one value."""
    for k, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            text = [None if v is None else json.dumps(v, default=str, ensure_ascii=False)
                    for v in table.column(k).to_pylist()]
            table = table.set_column(k, pa.field(f.name, pa.string()), pa.array(text, pa.string()))
    return table


def replace_files(out_dir: str | os.PathLike, write: Callable[[Path], None]) -> list[str]:
    """Build a set of files with ``write(tmp_dir)`` in a temporary folder inside ``out_dir``
    (created if missing), then move each into ``out_dir`` (replacing a file or directory of
    the same name). Returns the written paths. If ``write`` fails, ``out_dir`` is unchanged."""
    dest_dir = Path(out_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(dest_dir, prefix=".abcde-")
    try:
        write(tmp)
        written = []
        for p in sorted(tmp.iterdir()):
            dest = dest_dir / p.name
            if dest.is_dir():
                shutil.rmtree(dest)
            os.replace(p, dest)
            written.append(str(dest))
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_HINTS = {
    errno.ENOTDIR: "a file stands where a directory is needed",
    errno.EEXIST: "a file stands where a directory is needed",
    errno.EISDIR: "a directory stands where a file is needed",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the device",
    errno.ENOENT: "no such file or directory",
}


_FILE_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words: "a regular file", "a directory", "a named pipe
    (FIFO)", "a character device", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((name for test, name in _FILE_KINDS if test(mode)), "a special file")


def _not_regular(mode: int, where: str, expected: str) -> InputError:
    if stat.S_ISDIR(mode):
        return InputError(f"{where} is a directory; {expected}.")
    return InputError(f"{where} is {file_kind(mode)}, not a regular file; {expected}.")


def check_input_path(path: str | os.PathLike, *, where: str, expected: str,
                     directory: bool = False) -> os.stat_result | None:
    """Refuse (:class:`InputError`, one line) a local input that is not a regular file, or with
    ``directory`` a directory (of part files), before anything opens it: decided by ``os.stat``
    alone, so a named pipe with no writer (whose reader would wait forever), a device (whose reader
    would never end) or a socket is named at once and never opened. ``where`` names the file
    ("The base file 'x'"), ``expected`` says what it should be. Returns its ``stat`` (links
    followed), or None when nothing is there (or the path cannot name a file): the reader's own
    message then says so."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # missing, unreachable, a NUL in the path: the reader names it
        return None
    if stat.S_ISREG(st.st_mode) or (directory and stat.S_ISDIR(st.st_mode)):
        return st
    raise _not_regular(st.st_mode, where, expected)


def refuse_special_entries(directory: str | os.PathLike, *, what: str, expected: str) -> None:
    """Refuse (:class:`InputError`, one line) an entry of ``directory`` (not below it) that is
    neither a regular file nor a directory, links followed, before any of them is opened: abcde
    writes only those, and a named pipe put in a shared directory (``judgements.sqlite``,
    ``pairs.parquet``, ...) would block its reader forever. ``what`` names the directory ("the
    pair sample"), ``expected`` says what to do."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:  # missing or unreadable: the reader names it
        return
    for e in entries:
        try:
            mode = os.stat(e.path).st_mode
        except OSError:  # a dangling link or one removed meanwhile: the reader names it if it needs it
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise InputError(f"'{e.path}' in {what} is {file_kind(mode)}, not a regular file: abcde writes only "
                             f"files and directories there, and never opens anything else; {expected}.")


def parse_json(text: str | bytes, **kwargs):
    """``json.loads``, with every way a hostile text can make it fail a :class:`ValueError` (as a
    syntax error is): a text nested deeper than Python can decode (``RecursionError``; abcde never
    writes JSON nested more than a few levels) included. Callers that read records (an
    ``evaluate.json``, a sample's metadata) catch ``ValueError`` and name the file in one line."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError("it is nested too deeply to read (thousands of levels; abcde writes a few)") from None


@contextlib.contextmanager
def reading_record(where: str, *, expected: str) -> Iterator[None]:
    """Around a reader of a record abcde wrote (a pair sample's metadata, ...) that does not guard its
    own JSON: JSON that cannot be decoded (nested too deeply, a number with more digits than Python
    converts, a syntax error) becomes one :class:`InputError` line naming ``where`` ("the pair
    sample in 'x'"); the reader's own :class:`InputError` passes unchanged."""
    try:
        yield
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"Cannot read {where}: its metadata holds JSON nested too deeply to read (thousands of "
                         f"levels; abcde writes a few); {expected}.") from None
    except ValueError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"Cannot read {where}: its metadata is not readable ({first}); {expected}.") from None


def read_small_text(path: str | os.PathLike, *, limit: int, where: str, expected: str) -> str:
    """A small UTF-8 text file given by a person (a BOM dropped), at most ``limit`` bytes, read only
    if it is a regular file, or an :class:`InputError` in one line naming it: ``where`` names the
    file ("The raters file 'x'", "The instructions file 'x'"), ``expected`` says what it should hold.

    The file is opened without blocking and checked on the opened descriptor (no race with a file
    replaced in between): a named pipe with no writer, a device or a directory is refused at once
    instead of hanging or reading forever."""
    p = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)

    def not_regular(mode: int) -> InputError:
        return _not_regular(mode, where, expected)

    def cannot_read(exc: OSError) -> InputError:
        exc.filename = None  # ``where`` names it
        return InputError(describe_os_error(exc, f"Cannot read {where[0].lower()}{where[1:]}"))

    try:
        fd = os.open(p, flags)
    except OSError as exc:  # a socket cannot be opened (ENXIO): say what it is
        try:
            mode = os.stat(p).st_mode
        except OSError:
            mode = stat.S_IFREG
        raise (cannot_read(exc) if stat.S_ISREG(mode) else not_regular(mode)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(mode)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise cannot_read(exc) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        size_text = f"{limit // (1 << 20)} MB" if limit >= 1 << 20 else f"{limit // 1024} KB"
        raise InputError(f"{where} is larger than {size_text}; {expected}.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start}); {expected}.") from None


def describe_os_error(exc: OSError, doing: str = "Cannot write or read") -> str:
    """One line for a failed file operation: what failed, the path and what was in the way."""
    where = f" '{exc.filename}'" if exc.filename is not None else ""
    hint = _HINTS.get(exc.errno, exc.strerror or type(exc).__name__)
    return f"{doing}{where}: {hint}."


def write_texts(targets: dict) -> list[Path]:
    """Write ``{path: text}`` all or nothing: every file is written aside first, and only when all
    were written are they renamed into place (parent directories are made as needed)."""
    with contextlib.ExitStack() as stack:
        done = []
        for path, text in targets.items():
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = stack.enter_context(atomic_path(p))
            tmp.write_text(text, encoding="utf-8")
            done.append(p)
    return done


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes (streamed; about 1.5 GB/s on one core with the CPU's SHA
    instructions, faster than DuckDB scans the same Parquet file: ``benchmarks/fingerprint.py``)."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


#: Input files larger than this are re-checked later in the same process by their identity
#: (device, inode, size, modification and change time) instead of being hashed again, when they had
#: last changed more than :data:`RACY_SECONDS` before they were hashed (:func:`input_fingerprint`).
#: Smaller files are hashed again at every check (at most about 0.7 s each).
LARGE_FILE_BYTES = 1 << 30
#: A file whose change time (ctime) is less than this many seconds older than the moment it was
#: hashed may change again within the resolution of the file system's time stamps without its
#: identity showing it; such a file is hashed again at every check, whatever its size.
RACY_SECONDS = 3.0

# absolute path -> (identity when hashed, fingerprint): large files hashed by this process, last
# changed well before (see LARGE_FILE_BYTES). A changed identity (any write changes the ctime, which
# no unprivileged program can set back; a replaced file has another inode) means hashing again.
_KNOWN: dict[str, tuple[tuple, dict]] = {}


def file_identity(st: os.stat_result) -> tuple:
    """What tells one state of a file from another without reading it: device, inode, size and both
    times (a rewrite, a rename over it or a touch changes one)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def full_path(source) -> str:
    """A local path made absolute (so a recorded input is found from anywhere); a URI as given."""
    s = os.fspath(source)
    return s if "://" in s else os.path.abspath(s)


def input_fingerprint(source) -> dict | None:
    """The fingerprint of a local input file: ``{"size": bytes, "sha256": hex}`` of its whole content,
    so any change to it (anywhere, whatever its size and time stamps) gives another fingerprint.
    None for what abcde cannot fingerprint: a table in memory, a directory (of part files), a glob
    or a URI (those are read as given, with no check that they stayed the same).

    Within one process a large file (:data:`LARGE_FILE_BYTES`) already hashed, whose identity is
    unchanged since and which had last changed well before it was hashed (:data:`RACY_SECONDS`),
    is not hashed again: every write to it changes its change time, and a file put in its place
    has another inode.

    Raises
    ------
    InputError
        The file changed while it was being hashed.
    """
    if not isinstance(source, (str, os.PathLike)) or "://" in os.fspath(source):
        return None
    p = Path(source)
    try:
        st = p.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    key = os.path.abspath(p)
    known = _KNOWN.get(key)
    if known is not None and known[0] == file_identity(st):
        return dict(known[1])
    started = time.time_ns()
    try:
        digest = file_digest(p)
        after = p.stat()
    except OSError as exc:
        raise InputError(describe_os_error(exc, "Cannot read the input file")) from exc
    if file_identity(after) != file_identity(st):
        raise InputError(f"The input file '{p}' changed while abcde was reading it (its size, time stamps or inode "
                         "changed); run again once it is written.")
    fp = {"size": st.st_size, "sha256": digest}
    if st.st_size > LARGE_FILE_BYTES and st.st_ctime_ns < started - int(RACY_SECONDS * 1e9):
        _KNOWN[key] = (file_identity(st), fp)
    return dict(fp)


def describe_fingerprint(fp: dict | None) -> str:
    """A fingerprint in words: ``sha256 1a2b3c4d5e6f…, 1,234 bytes`` (or, for one an earlier abcde
    recorded of a file over 1 GiB, what it covered: the size, time and first and last MiB)."""
    if not fp:
        return "none"
    if "sha256" in fp:
        return f"sha256 {fp['sha256'][:12]}…, {fp.get('size', 0):,} bytes"
    return f"{fp.get('size', 0):,} bytes, first and last MiB only"


class InputPrints:
    """The fingerprints of the local input files one job reads, taken before it reads them.

    A job that stores what it read under these fingerprints (kept tables, a sample's metadata, an
    evaluation's record) calls :meth:`check` after its last read of the inputs and before storing:
    an input changed in between (written to, or another file put in its place) is refused, so what
    is stored is what was read.

    Attributes
    ----------
    sources
        ``{role: source}`` as given (paths or tables), ``None`` roles left out.
    prints
        ``{role: fingerprint}`` of the local files (:func:`input_fingerprint`).
    unprinted
        The roles given as paths that cannot be fingerprinted (directories, globs, URIs); a missing
        file is in neither (reading it fails, naming it).
    """

    def __init__(self, sources: dict):
        self.sources = {role: s for role, s in sources.items() if s is not None}
        self.prints: dict[str, dict] = {}
        self.unprinted: list[str] = []
        done: dict[str, dict | None] = {}
        for role, s in self.sources.items():
            if not isinstance(s, (str, os.PathLike)):
                continue
            key = os.fspath(s) if "://" in os.fspath(s) else os.path.abspath(s)
            if key not in done:  # the same file in two roles (a Precision sample): hashed once
                done[key] = input_fingerprint(s)
            if done[key] is not None:
                self.prints[role] = dict(done[key])
            elif "://" in key or os.path.isdir(key) or any(ch in key for ch in "*?["):
                self.unprinted.append(role)
            # (a missing file: reading it fails, naming it)

    @classmethod
    def of(cls, inputs, **more) -> "InputPrints":
        """The fingerprints of an :class:`abcde.core.inputs.Inputs`' base, exp and items (and of
        ``more``, e.g. ``truth=``)."""
        return cls({"base": inputs.base, "exp": inputs.exp, "items": inputs.items, **more})

    def unprinted_text(self) -> str:
        """The inputs that cannot be fingerprinted, in words (empty when none)."""
        return ", ".join(f"{role} '{os.fspath(self.sources[role])}'" for role in self.unprinted)

    def check(self, doing: str = "") -> None:
        """Refuse (:class:`InputError`, naming the file) when an input file changed since its
        fingerprint was taken: call it after the last read of the inputs, before storing anything."""
        for role, was in self.prints.items():
            source = self.sources[role]
            now = input_fingerprint(source)
            if now != was:
                what = "was removed" if now is None else f"changed (now {describe_fingerprint(now)})"
                raise InputError(
                    f"The {role} file '{os.fspath(source)}' changed while abcde was reading it"
                    + (f" ({doing})" if doing else "") + f": it {what} since its fingerprint was taken "
                    f"({describe_fingerprint(was)}). Nothing was written; run again once it stays as it is.")
