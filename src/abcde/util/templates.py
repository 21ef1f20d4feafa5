"""Jinja2 environments over the package's templates, and abcde's cache directory.

Compiling a template costs tens of milliseconds (a report's page: about 40 ms, a sixth of the
``report`` command's own work), the same every run. :func:`environment` keeps the compiled
templates in the user's cache directory (:func:`cache_dir`) with Jinja2's own bytecode cache,
which keys each one by the template's source: an edited or upgraded template is compiled
again, never served stale. Where the cache cannot be written, templates are compiled each time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, FileSystemBytecodeCache


def cache_dir() -> Path | None:
    """abcde's cache directory: ``$ABCDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/abcde``, else
    ``~/.cache/abcde``; None when there is no home directory to find (a container's user without
    one): then nothing is cached. Only rebuildable files live there (compiled templates, the
    report's chart bundle); deleting it is always safe. Never a shared temporary directory: a
    compiled template found there would run as code."""
    if os.environ.get("ABCDE_CACHE_DIR"):
        return Path(os.environ["ABCDE_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "abcde"
    try:
        return Path.home() / ".cache" / "abcde"
    except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry
        return None


class _QuietBytecodeCache(FileSystemBytecodeCache):
    """Jinja2's file cache (atomic writes, keyed by source), made in :func:`cache_dir` on first
    use, and never an error: a cache that cannot be read or written means compiling again."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # unreadable, truncated or corrupt (marshal, pickle): compile it
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
    :class:`jinja2.Environment`; they change the compiled code, so they are part of the cache's
    file names with Jinja2's version (Jinja2 keys a file by template name and source only)."""
    root = cache_dir()
    cache = None
    if root is not None:
        cache = _QuietBytecodeCache(str(root / "templates"), pattern=f"{package}-{_options_key(options)}-%s.cache")
    return jinja2.Environment(loader=jinja2.PackageLoader(package, "templates"), autoescape=True,
                              bytecode_cache=cache, **options)


def _options_key(options: dict) -> str:
    """A stable digest of Jinja2's version and an environment's options (a callable or class by
    its qualified name: a lambda's address changes every run)."""
    def stable(v) -> str:
        if v is None or isinstance(v, (str, bool, int, float)):
            return repr(v)
        return f"{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', type(v).__qualname__)}"

    text = jinja2.__version__ + ";" + ";".join(f"{k}={stable(v)}" for k, v in sorted(options.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]
