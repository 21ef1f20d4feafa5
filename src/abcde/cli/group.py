"""The ``abcde`` command group: every command, registered from its module.

Importing this builds the whole command tree with click alone (``abcde --help``
lists the commands without importing the engine, Ibis or Arrow); each command
imports the library modules it uses when it runs.
"""

from __future__ import annotations

import click

from abcde.cli.demo import demo
from abcde.cli.evaluate import evaluate
from abcde.cli.explore import explore
from abcde.cli.judge import judge
from abcde.cli.metrics import impact, pointwise, weights
from abcde.cli.quality import pairs, precision, quality
from abcde.cli.report import report


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="abcde")
def main():
    """ABCDE: Application-Based Cluster Diff Evals.

    Compare a Baseline and an Experiment clustering of the same weighted items:
    what changed (exact impact metrics) and, with judgements, whether it is better.
    """


for _command in (impact, pointwise, weights, explore, pairs, precision, judge, quality, report, evaluate, demo):
    main.add_command(_command)
del _command
