"""The ``abcde`` command line: a thin layer over the public library functions.

Every command prints readable tables by default and one JSON object with
``--json``. Input errors exit with code 1 and a one-line message, no traceback.

- :mod:`~abcde.cli.group` — the ``abcde`` group; registers every command
- :mod:`~abcde.cli.options` — shared click options (engine, inputs, clusterings, ``--json``)
- :mod:`~abcde.cli.tables` — rich tables, number formatting, JSON output, error handling
- :mod:`~abcde.cli.metrics` — ``impact``, ``pointwise``, ``weights``
- :mod:`~abcde.cli.explore` — ``explore sample|query|serve``
- :mod:`~abcde.cli.quality` — ``pairs``, ``quality``
- :mod:`~abcde.cli.judge` — ``judge oracle|serve|model|export``
- :mod:`~abcde.cli.report` — ``report``
- :mod:`~abcde.cli.demo` — ``demo``

Module-level imports here are click (and abcde.errors) only; a command imports the
library modules it uses inside its function (marked ``# lazy: start-up time``).
"""

from abcde.cli.group import main

__all__ = ["main"]
