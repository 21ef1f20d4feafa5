"""Jinja2 environments over the package's templates, and abcde's cache directory.

Compiling a template costs tens of milliseconds (a report's page: about 40 ms, a sixth of the
``report`` command's own work), the same every run. :func:`environment` keeps the compiled
templates in the user's cache directory (:func:`cache_dir`) with Jinja2's own bytecode cache,
which keys each one by the template's source: an edited or upgraded template is compiled
again, never served stale. Where the cache cannot be written, templates are compiled each time.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, FileSystemBytecodeCache


def cache_dir() -> Path:
    """abcde's cache directory: ``$ABCDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/abcde``, else
    ``~/.cache/abcde``. Only rebuildable files live there (compiled templates, the report's
    chart bundle); deleting it is always safe."""
    if os.environ.get("ABCDE_CACHE_DIR"):
        return Path(os.environ["ABCDE_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "abcde"


class _QuietBytecodeCache(FileSystemBytecodeCache):
    """Jinja2's file cache (atomic writes, keyed by source), made in :func:`cache_dir` on first
    use, and never an error: a cache that cannot be read or written means compiling again."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError):  # unreadable or truncated: compile it
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:  # a read-only or full home: compile it again next time
            pass


def environment(package: str, **options) -> jinja2.Environment:
    """A Jinja2 environment over ``package``'s ``templates/`` folder, autoescaping, with compiled
    templates cached across runs (see the module's docstring). ``options`` go to
    :class:`jinja2.Environment`."""
    cache = _QuietBytecodeCache(str(cache_dir() / "templates"), pattern=f"{package}-%s.cache")
    return jinja2.Environment(loader=jinja2.PackageLoader(package, "templates"), autoescape=True,
                              bytecode_cache=cache, **options)
