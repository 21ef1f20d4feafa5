"""The ``abcde`` command group: every command, registered from its module.

Importing this builds the whole command tree with click alone (``abcde --help``
lists the commands without importing the engine, Ibis or Arrow); each command
imports the library modules it uses when it runs.
"""

from __future__ import annotations

import contextlib
import functools

import click

from abcde.cli.demo import demo
from abcde.cli.evaluate import evaluate
from abcde.cli.explore import explore
from abcde.cli.entities import entities
from abcde.cli.ids import ids
from abcde.cli.judge import judge
from abcde.cli.metrics import impact, pointwise, weights
from abcde.cli.quality import pairs, precision, quality
from abcde.cli.report import report


class AbcdeGroup(click.Group):
    """The ``abcde`` group: every error message shown, abcde's (:func:`~abcde.cli.tables.handle_errors`)
    and click's own (a path that does not exist, an option that does not parse, a value that is not
    a choice), names ids, paths and values as the text they are: their control characters (an
    escape sequence, a carriage return, a bidi override) shown, never obeyed (``util.display.safe_text``).
    The one place an error reaches the terminal; tables and messages go through ``tables.console``."""

    def make_context(self, *args, **kwargs):
        with _plain_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with _plain_errors():
            return super().invoke(ctx)


@contextlib.contextmanager
def _plain_errors():
    """A click error leaving the block formats its message (what ``show`` prints) as safe text."""
    try:
        yield
    except click.ClickException as exc:
        if "format_message" not in vars(exc):  # once, however many groups it leaves
            from abcde.util.display import safe_text  # lazy: start-up time

            formatted = exc.format_message
            exc.format_message = lambda: safe_text(formatted(), lines=True)
        raise


@click.group(cls=AbcdeGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="abcde")
def main():
    """ABCDE: Application-Based Cluster Diff Evals.

    Compare a Baseline and an Experiment clustering of the same weighted items:
    what changed (exact impact metrics) and, with judgements, whether it is better.
    """


INT64 = (-(2**63), 2**63 - 1)


def _within_64_bits(callback):
    """A parameter callback that refuses an integer beyond 64 bits (what the engines and Arrow
    hold) as a usage error naming the option, never an OverflowError deep inside; then runs the
    option's own callback."""

    def check(ctx, param, value):
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(v, int) and not isinstance(v, bool) and not INT64[0] <= v <= INT64[1]:
                raise click.BadParameter(f"{v} does not fit in 64 bits ({INT64[0]:,} to {INT64[1]:,}).",
                                         ctx=ctx, param=param)
        return callback(ctx, param, value) if callback else value

    return check


def _bound_integers(cmd: click.Command) -> None:
    """Every integer option and argument of ``cmd`` and its subcommands bounded to 64 bits (one
    place; their help is unchanged)."""
    for param in cmd.params:
        if isinstance(param.type, click.types.IntParamType):
            param.callback = _within_64_bits(param.callback)
    for sub in getattr(cmd, "commands", {}).values():
        _bound_integers(sub)


def _quiet(callback):
    """``callback`` with ``--quiet``: no progress display while it runs (the default again after it,
    so one quiet command does not silence later library calls in a notebook or a test)."""

    @functools.wraps(callback)
    def run(*args, quiet: bool = False, **kwargs):
        from abcde.util import progress  # lazy: start-up time

        progress.set_enabled(False if quiet else None)
        try:
            return callback(*args, **kwargs)
        finally:
            progress.set_enabled(None)

    return run


def _quiet_everywhere(cmd: click.Command) -> None:
    """``-q``/``--quiet`` on every command (those with engine options have it already)."""
    subs = getattr(cmd, "commands", None)
    if subs is not None:
        for sub in subs.values():
            _quiet_everywhere(sub)
        return
    if not any(p.name == "quiet" for p in cmd.params):
        cmd.params.append(click.Option(["--quiet", "-q"], is_flag=True, help="No progress display."))
        cmd.callback = _quiet(cmd.callback)


for _command in (impact, pointwise, weights, explore, pairs, precision, judge, quality, report, evaluate, ids, entities, demo):
    main.add_command(_command)
del _command
_bound_integers(main)
_quiet_everywhere(main)
