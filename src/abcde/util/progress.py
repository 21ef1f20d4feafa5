"""Progress display for long steps, always on stderr (never stdout, so ``--json`` stays clean).

- **On a terminal:** a spinner with the step's name and its elapsed time, updated while it runs,
  then ``✓ step (12.3 s, 1,234 rows)``.
- **Not a terminal** (a log file, CI, a pipe): plain lines, and only for steps that take a while,
  so short commands stay quiet: ``abcde: step … 10 s`` every ``ABCDE_PROGRESS_INTERVAL``
  seconds (default 10) while it runs, then ``abcde: ✓ step (12.3 s, 1,234 rows)``
  (``ABCDE_PROGRESS_INTERVAL=0``: every step's closing line).
- ``-q`` (``set_enabled(False)``) or ``ABCDE_PROGRESS=0`` turns it off; ``ABCDE_PROGRESS=1``
  forces the terminal display.

A step reports its rows by setting ``.rows`` on the object :func:`step` yields.

A step's description and a note name paths, columns and values from data: they are shown as the
text they are, one line each, never read as rich markup and their control characters shown
(``util.display``: :func:`~abcde.util.display.safe_text`, :func:`~abcde.util.display.styled`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from abcde.util.display import safe_console, safe_text, styled

_enabled: bool | None = None

#: Seconds between two status lines when stderr is not a terminal (``ABCDE_PROGRESS_INTERVAL``).
DEFAULT_INTERVAL = 10.0


def set_enabled(value: bool | None) -> None:
    """Force progress display on/off (``None``: decide from the environment and the terminal)."""
    global _enabled
    _enabled = value


def mode() -> str:
    """``"off"``, ``"terminal"`` (a live spinner) or ``"lines"`` (periodic status lines)."""
    if _enabled is False:
        return "off"
    env = os.environ.get("ABCDE_PROGRESS")
    if env is not None and env.strip().lower() in ("0", "", "false", "no", "off"):
        return "off"
    if _enabled is True or env is not None or sys.stderr.isatty():
        return "terminal"
    return "lines"


def enabled() -> bool:
    return mode() != "off"


def interval() -> float:
    try:
        return max(0.0, float(os.environ.get("ABCDE_PROGRESS_INTERVAL", DEFAULT_INTERVAL)))
    except ValueError:
        return DEFAULT_INTERVAL


class Step:
    """A running step: set ``rows`` to have the closing line say how many rows it produced."""

    def __init__(self, description: str):
        self.description = description
        self.rows: int | None = None
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def summary(self) -> str:
        rows = "" if self.rows is None else f", {self.rows:,} rows"
        return f"{self.description} ({_seconds(self.elapsed())}{rows})"


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {s % 60:02.0f} s"


@contextlib.contextmanager
def step(description: str):
    """Show the step while the block runs (see the module's docstring); yields a :class:`Step`."""
    m = mode()
    s = Step(description)
    if m == "off":
        yield s
        return
    if m == "terminal":
        console = safe_console(stderr=True)
        with console.status(styled("[bold]{}[/bold] …", description)) as status, _ticking(0.5, lambda: status.update(
                styled("[bold]{}[/bold] … {}", description, _seconds(s.elapsed())))):
            yield s
        console.print(styled("[green]✓[/green] {}", s.summary()), highlight=False)
        return
    every = interval()
    with _ticking(max(every, 0.05), lambda: _line(f"{description} … {_seconds(s.elapsed())}")):
        yield s
    if s.elapsed() >= every:
        _line(f"✓ {s.summary()}")


@contextlib.contextmanager
def _ticking(every: float, show):
    """Call ``show()`` every ``every`` seconds, from a thread, while the block runs."""
    stop = threading.Event()
    ticker = threading.Thread(target=_tick, daemon=True, args=(stop, every, show))
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()


def note(text: str) -> None:
    """One line worth knowing (e.g. that kept work is reused), unless progress is off."""
    _say("[cyan]ℹ[/cyan] ", "", text)


def stage_done(name: str, seconds: float, rows: int | None) -> None:
    """A finished stage of a multi-stage job, always one line (unless off): its time and rows."""
    text = f"{name} ({_seconds(seconds)}" + ("" if rows is None else f", {rows:,} rows") + ")"
    _say("[bold green]■[/bold green] ", "■ ", text)


def _say(mark: str, plain_mark: str, text: str) -> None:
    """A line on stderr: with rich's ``mark`` (markup) on a terminal, as ``abcde: <plain_mark><text>`` in
    a log; ``text`` as the text it is."""
    m = mode()
    if m == "terminal":
        safe_console(stderr=True).print(styled(mark + "{}", text), highlight=False)
    elif m == "lines":
        _line(f"{plain_mark}{text}")


def _tick(stop: threading.Event, every: float, show) -> None:
    while not stop.wait(every):
        show()


def _line(text: str) -> None:
    """One line of a log: ``text`` on one line, its control characters shown."""
    print(f"abcde: {safe_text(text)}", file=sys.stderr, flush=True)
