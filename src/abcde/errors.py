"""Exception hierarchy of abcde.

Every error that a user can cause with their input is an :class:`InputError`
(also a :class:`ValueError`), so callers can catch either. Messages name the
file or table, the column, the offending ids or rows, and what was expected.
"""

from __future__ import annotations

import re


_OPTION = re.compile(r"\[\[(\w+)=([^\]]*)\]\](.*?)\[\[/\1\]\]", re.S)


def with_option(name: str, text: str, value: str = "True") -> str:
    """A part of an error message that names the option ``name`` (a Python parameter, e.g.
    ``force``), written with ``{option}`` where its spelling goes: on the command line ``--force``,
    and the part left out altogether when the command has no such option; in Python
    ``force=True`` (``name=value``). (A message must never name an option its reader cannot pass.)

    >>> str(InputError("In the way." + with_option("force", " Pass {option} to replace it.")))
    'In the way. Pass force=True to replace it.'
    >>> InputError("In the way." + with_option("force", " Pass {option} to replace it.")).render(set())
    'In the way.'
    """
    return f"[[{name}={value}]]{text}[[/{name}]]"


class AbcdeError(Exception):
    """Base class of all abcde errors."""

    def render(self, options: set | None = None) -> str:
        """The message for a reader who can pass ``options`` (a command's parameter names: each
        :func:`with_option` part spelled ``--name`` or left out); None: for Python (``name=True``)."""
        def part(m: re.Match) -> str:
            name, value, text = m.group(1), m.group(2), m.group(3)
            if options is None:
                return text.replace("{option}", f"{name}={value}")
            return text.replace("{option}", f"--{name.replace('_', '-')}") if name in options else ""

        return _OPTION.sub(part, super().__str__())

    def __str__(self) -> str:
        return self.render(None)


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
