"""All-or-nothing writes: the one place where abcde writes a user's files.

A file is written to a temporary name beside its destination and renamed into place
(:func:`atomic_path`, :func:`write_text`, :func:`write_table_file`); a set of files is
built in a temporary folder inside the destination directory and each renamed into
place only when all were written (:func:`replace_files`). A failure leaves the old
files as they were and no partial file behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from abcde.errors import InputError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure
    it is removed and ``path`` is left as it was."""
    dest = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    except FileNotFoundError as exc:
        raise InputError(f"Cannot write '{dest}': the directory '{dest.parent}' does not exist.") from exc
    except OSError as exc:  # name the destination's directory, not the temporary file
        raise OSError(exc.errno, exc.strerror, str(dest.parent)) from exc
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_table_file(table: pa.Table, path: str | os.PathLike) -> Path:
    """Write Arrow as CSV, Parquet or JSONL by extension, atomically."""
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
            pacsv.write_csv(_flat_for_csv(table), tmp)
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
    tmp = Path(tempfile.mkdtemp(prefix=".abcde-", dir=dest_dir))
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
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: Local input files up to this size are fingerprinted by their whole content; larger ones by
#: their size, modification time and the sha256 of their first and last MiB.
FULL_DIGEST_LIMIT = 1 << 30


def input_fingerprint(source) -> dict | None:
    """A fingerprint of a local input file (None for a table, a directory or a URI): enough to
    tell that the file changed since a sample was drawn from it."""
    if not isinstance(source, (str, os.PathLike)) or "://" in str(source):
        return None
    p = Path(source)
    if not p.is_file():
        return None
    st = p.stat()
    if st.st_size <= FULL_DIGEST_LIMIT:
        return {"size": st.st_size, "sha256": file_digest(p)}
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        h.update(fh.read(1 << 20))
        fh.seek(-(1 << 20), os.SEEK_END)
        h.update(fh.read(1 << 20))
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256_ends": h.hexdigest()}
