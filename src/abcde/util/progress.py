"""Progress display for long steps.

Shown on stderr when it is a terminal (or when ``ABCDE_PROGRESS=1``), never on
stdout, so ``--json`` output stays clean. ``ABCDE_PROGRESS=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

_enabled: bool | None = None


def set_enabled(value: bool | None) -> None:
    """Force progress display on/off (``None``: decide from the terminal)."""
    global _enabled
    _enabled = value


def enabled() -> bool:
    if _enabled is not None:
        return _enabled
    env = os.environ.get("ABCDE_PROGRESS")
    if env is not None:
        return env not in ("0", "", "false", "no")
    return sys.stderr.isatty()


@contextlib.contextmanager
def step(description: str):
    """Show a spinner with elapsed time while the block runs."""
    if not enabled():
        yield
        return
    from rich.console import Console

    console = Console(stderr=True)
    start = time.perf_counter()
    with console.status(f"[bold]{description}[/bold] …"):
        yield
    console.print(f"[green]✓[/green] {description} [dim]({time.perf_counter() - start:.1f}s)[/dim]")
