"""``abcde evaluate``: the whole job in one command (:func:`abcde.workflow.evaluate.evaluate`)."""

from __future__ import annotations

import shlex

import click

from abcde.cli.demo import abcde_command
from abcde.cli.options import (clustering_options, resolve_truth, engine_options, json_option,
                               truth_sample_options)
from abcde.cli.tables import console, emit_json, handle_errors, print_impact, styled, table


@click.command()
@clustering_options
@click.option("--slice-by", multiple=True,
              help="Attribute column for impact slices, the pair sample's exact slice multipliers and the report's "
                   "exploration groups (repeatable).")
@click.option("--top", type=int, default=10, show_default=True, help="Most affected clusters to list (ranked together, and per side).")
@click.option("--sample-size", type=int, default=1000, show_default=True,
              help="Draws of the exploration sample (affected items ∝ weight·JaccardDistance).")
@click.option("--budget", type=int, default=300, show_default=True, help="Distinct pairs to judge.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Random seed of both samples; same seed and inputs give the same samples.")
@click.option("--estimator", type=click.Choice(["stratified", "paper"]), default="stratified", show_default=True,
              help="The pair sample's design (see 'abcde pairs --help').")
@click.option("--hide", multiple=True,
              help="Item attribute not to show to judges, e.g. a ground-truth column (repeatable).")
@click.option("--truth", type=click.Path(), default=None,
              help="A ground-truth clustering: each side's pointwise Precision/Recall/F1 in the report.")
@truth_sample_options(then="The report then shows the population's Precision, Recall and F1 of Base and Exp with 95% "
                            "intervals and the paired differences (recorded: 'abcde report OUT' uses it too).")
@click.option("--title", default="ABCDE report", show_default=True, help="The report's title.")
@click.option("--force", is_flag=True,
              help="Replace another pair sample in OUT/quality; it and its judgements are moved aside, never deleted.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write: impact/, explore/sample.parquet, quality/ (pairs to judge), report.html, "
                   "report.md, evaluate.json (how it was run, for 'abcde report OUT').")
@click.option("--only-affected/--all-rows", default=True, show_default=True,
              help="impact/ holds the affected items and clusters only (the others' metrics are all 0; their count "
                   "and weight are in impact/impact.json), or every item and cluster (--all-rows: at a billion items, "
                   "tens of GB). 'abcde impact --out DIR' also writes every row, from the same inputs.")
@json_option
@engine_options
@handle_errors
def evaluate(base, exp, items, item_id, cluster_id, weight_column, slice_by, top, sample_size, budget, seed, estimator,
             hide, truth, truth_sample, population_entities, truth_column, title, force, out, only_affected, as_json,
             engine):
    """The whole job from one read of the inputs: impact, an exploration sample, a pair sample to
    judge and the report (what 'impact --out', 'explore sample', 'pairs' and 'report' write).

    Records how it was run in OUT/evaluate.json. Then judge OUT/quality ('abcde judge serve
    OUT/quality', a model, or an oracle column) and rebuild the report with every section and the
    quality estimates with 'abcde report OUT'.
    """
    from abcde.cli.report import print_truth  # lazy: start-up time

    truth, truth_cluster_id = resolve_truth(truth, truth_column, items, truth_sample, population_entities)
    from abcde.workflow.evaluate import evaluate as run  # lazy: start-up time

    res = run(base, exp, out, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
              slice_by=slice_by, top=top, sample_size=sample_size, budget=budget, seed=seed, estimator=estimator,
              hide=hide, truth=truth, truth_cluster_id=truth_cluster_id, title=title, force=force, only_affected=only_affected, truth_sample=truth_sample,
              population_entities=population_entities, engine=engine)
    if as_json:
        emit_json(res.to_dict())
        return
    print_impact(res.impact, top=top)
    print_truth(res.report.to_dict())
    rows = [{"stage": s["stage"], "seconds": f"{s['seconds']:.2f}", "rows": "" if s["rows"] is None else s["rows"]}
            for s in res.stages]
    console().print(table(rows, "Stages (one read of the inputs; every stage reuses its fragments)"))
    for p in res.written:
        console().print(f"wrote {p}")
    cmd, d, q = abcde_command(), shlex.quote(str(res.out_dir)), shlex.quote(str(res.pair_dir))
    if res.impact.affected_items == 0:  # said once, above: nothing changed, so there is nothing to judge
        console().print("\nNothing to judge: every item is in the same cluster in Base and Exp, so their Precision "
                        "and recall are exactly the same (the report says so).", soft_wrap=True)
        return
    console().print(styled("\n[bold]Next:[/bold] judge the pairs with [bold]{cmd} judge serve {q}[/bold] "
                           "(or a model: {cmd} judge model {q} ...; or a ground-truth column: {cmd} judge oracle {q} "
                           "--oracle-column COL), then rebuild the report with every section and the quality "
                           "estimates: [bold]{cmd} report {d}[/bold]", cmd=cmd, q=q, d=d), soft_wrap=True)
