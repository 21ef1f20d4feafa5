"""The ``abcde`` command line: a thin layer over the public library functions.

Every command prints readable tables by default and one JSON object with
``--json``. Input errors exit with code 1 and a one-line message, no traceback.

- :mod:`~abcde.cli.group` — the ``abcde`` group; registers every command
- :mod:`~abcde.cli.options` — shared click options (engine, inputs, clusterings, ``--json``)
- :mod:`~abcde.cli.tables` — rich tables, number formatting, JSON output, error handling
- :mod:`~abcde.cli.metrics` — ``impact``, ``pointwise``, ``weights``
- :mod:`~abcde.cli.explore` — ``explore sample|query|serve``
- :mod:`~abcde.cli.quality` — ``pairs``, ``quality``
- :mod:`~abcde.cli.judge` — ``judge oracle|serve|raters|model|export``
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

    Three settings for a process that only runs one command, never made by the library or by
    :func:`main` (which a notebook or a test may call):

    - the collector's thresholds (:data:`GC_THRESHOLDS`);
    - when the command is done, the process ends without Python's teardown. Tearing down Ibis'
      and sqlglot's thousands of classes and objects one by one took 0.15–0.2 s of every command
      (measured after the last exit handler), only to free memory the process gives back anyway.
      What must happen at exit still does: every exit handler runs (scratch directories removed,
      a Spark session stopped), stdout and stderr are flushed, and the command has closed its
      engine (a DuckDB database file complete on disk). Every file abcde writes is closed when
      written; judgements are committed one by one.
    - Python's own exit instead when a thread other than the main one still runs (it waits for
      such threads), or when the command ended with an exception other than an exit (its
      traceback as usual).
    """
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        main()
    except SystemExit as exc:
        _leave(exc.code)
        raise


def _leave(code) -> None:
    """End the process now with ``code`` (as ``SystemExit`` reads it), after the exit handlers and
    flushing; returns (for Python's own exit) if a non-daemon thread still runs."""
    import atexit  # lazy: only the program's own exit
    import os
    import sys
    import threading

    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        gc.disable()  # Python's exit waits for the thread; its full collection is not needed
        return
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # SystemExit("message"): printed, status 1, as Python does (its control characters shown)
        from abcde.util.display import safe_text  # lazy: only a SystemExit("message")

        print(safe_text(code, lines=True), file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed pipe (abcde ... | head): nothing more to say
            pass
    os._exit(status)
