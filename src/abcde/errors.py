"""Exception hierarchy of abcde.

Every error that a user can cause with their input is an :class:`InputError`
(also a :class:`ValueError`), so callers can catch either. Messages name the
file or table, the column, the offending ids or rows, and what was expected.
"""

from __future__ import annotations


class AbcdeError(Exception):
    """Base class of all abcde errors."""


class InputError(ValueError, AbcdeError):
    """Input files, tables, columns or values that abcde cannot use."""


class EngineError(AbcdeError):
    """A query failed in the engine; carries the step name."""


class MissingDependencyError(ImportError, AbcdeError):
    """An optional dependency (e.g. pyspark) is not installed."""


def examples_text(values, limit: int = 5) -> str:
    """Format a few example ids for an error message: ``'a17', 'a19', 'b02'``."""
    vals = list(values)[:limit]
    return ", ".join(repr(v) for v in vals)
