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

import gc

from abcde.cli.group import main

__all__ = ["main", "run"]

#: Python's cyclic garbage collector makes a young-generation pass every 700 net allocations and a
#: pass over every live object every 100 of those. A command allocates a few million objects while
#: it imports Ibis and builds its queries, and they are almost never garbage: at the defaults the
#: bundled example's ``report`` spent 0.11 s of its 0.8 s in 280 passes; with a pass every 100,000
#: allocations, 0.03 s in one; every 200,000, none (a pass then scans up to 200,000 young objects,
#: about 0.05 s). Cyclic garbage waits longer to be freed: at most this many allocations.
GC_THRESHOLDS = (200_000, 10, 10)


def run() -> None:
    """The ``abcde`` program (and ``python -m abcde``): :func:`main` in a process of its own.

    Two settings for a process that only runs one command, never made by the library or by
    :func:`main` (which a notebook or a test may call): the collector's thresholds
    (:data:`GC_THRESHOLDS`), and no collection at exit. At exit Python passes once more over every
    object (0.05 s), only to free memory the process is about to give back; objects that are not
    in a reference cycle are still freed and closed as usual, files and databases included (every
    file abcde writes is closed when written).
    """
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        main()
    finally:
        gc.disable()
