"""``abcde demo``: the whole job on the bundled example (:func:`abcde.workflow.run_demo`)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import click

from abcde.cli.options import engine_options, json_option
from abcde.cli.tables import (console, emit_json, estimate_row, handle_errors, new_table, pct, print_impact,
                              print_quality, styled, table)


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="abcde-demo", show_default=True,
              help="Where to write the outputs.")
@json_option
@engine_options
@handle_errors
def demo(out, as_json, engine):
    """Run the main job on the bundled example data (FEBRL 3 people records).

    Base and Exp are two record-linkage rules; see src/abcde/examples/febrl3/README.md
    (in an installed abcde: abcde/examples/febrl3/README.md beside the data).
    """
    from abcde.workflow.demo import PAIR_BUDGET, run_demo  # lazy: start-up time

    res = run_demo(out, engine=engine)
    if as_json:
        emit_json(res.to_dict())
        return
    console().print(styled("[bold]Example data:[/bold] {}", res.example_dir))
    print_impact(res.impact, top=10)
    console().print(table([estimate_row(g) for g in res.groups_by_state],
                          f"Exploration sample ({res.exploration.metadata['unique_items']:,} affected items drawn ∝ "
                          "weight·JaccardDistance): top states by estimated Jaccard contribution",
                          ["state", "sampled_items", "weight_share", "split_contribution", "merge_contribution",
                           "jaccard_contribution", "jaccard_contribution_se"]))
    console().print(styled("[bold]Quality[/bold]: {} pairs sampled (stratified: exact self term, split/merge/"
                           "intersection strata ∝ u_ij) and judged by an [bold]oracle[/bold] (the example's true "
                           "entity ids), not by people:", PAIR_BUDGET))
    print_quality(res.quality.to_dict(), sentences=res.report.to_dict()["verdict_facts"]["sentences"])
    t = new_table(title="Against the example's true entities (FEBRL ground truth)", title_justify="left")
    for c in ("clustering", "Precision", "Recall", "F1"):
        t.add_column(c, justify="left" if c == "clustering" else "right")
    for side, r in res.pointwise_against_truth.items():
        t.add_row(side, pct(r.precision), pct(r.recall), pct(r.f1))
    console().print(t)
    for p in res.written:
        console().print(f"wrote {p}")
    cmd = abcde_command()
    d, q = shlex.quote(str(res.out_dir)), shlex.quote(str(res.pair_dir))
    console().print(styled("\n[bold]Open {} in a browser[/bold] (works offline). Explore the sample interactively "
                           "with: {} explore serve {}", res.report_path, cmd, shlex.quote(str(res.sample_path))))
    console().print(styled("[bold]Next:[/bold] judge the pairs yourself with [bold]{cmd} judge serve {q}[/bold] "
                           "(kept beside the oracle's; {cmd} quality {q} --source person gives yours alone), then "
                           "rebuild the report with every section and the judgements now in {q}: "
                           "[bold]{cmd} report {d}[/bold]", cmd=cmd, q=q, d=d), soft_wrap=True)
    if cmd != "abcde":
        console().print(f"(abcde is not on your PATH: call it as {cmd}, or first run: "
                        f"source {Path(cmd).parent / 'activate'})")


def abcde_command() -> str:
    """How to call abcde from this shell: ``abcde`` when it is on the PATH, else the path of the
    one running now (e.g. ``.venv/bin/abcde``, relative when shorter)."""
    here = Path(sys.argv[0]) if Path(sys.argv[0]).name == "abcde" else Path(sys.executable).parent / "abcde"
    found = shutil.which("abcde")
    if found and Path(found).resolve() == here.resolve():
        return "abcde"
    rel = os.path.relpath(here)
    return rel if len(rel) < len(str(here)) else str(here)
