"""``abcde report``: one self-contained HTML report of a change (:func:`abcde.workflow.run_report`),
or the report of an ``abcde evaluate`` directory rebuilt with its judgements
(:func:`abcde.workflow.report.report_from_evaluation`)."""

from __future__ import annotations

import shlex

import click
from click.core import ParameterSource

from abcde.cli.demo import abcde_command
from abcde.cli.options import (clustering_options, resolve_truth, engine_options, json_option,
                               truth_sample_options)
from abcde.cli.tables import console, emit_json, handle_errors, new_table, print_impact, print_quality, styled

#: Options that an evaluation directory brings itself (from its evaluate.json): not given with EVALDIR.
RECORDED = ("base", "exp", "items", "item_id", "cluster_id", "weight_column", "slice_by", "top", "quality_dir",
            "sample_path", "explore_by", "truth", "truth_sample", "population_entities", "truth_column")
#: The engine options: given on the command line, they replace the evaluation's recorded engine.
ENGINE = ("engine", "database", "memory_limit", "threads", "temp_directory", "spark_master", "spark_remote",
          "spark_conf")


@click.command()
@click.argument("evaldir", required=False, type=click.Path())
@clustering_options(required=False)
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by; repeat, or 'a,b' to group by both.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=0), help="Most affected clusters to list (ranked together, and per side).")
@click.option("--quality", "quality_dir", type=click.Path(file_okay=False), default=None,
              help="A judged pair sample directory (from 'abcde pairs'): adds the quality estimates.")
@click.option("--judgements", multiple=True, type=click.Path(dir_okay=False),
              help="Judgement file(s) for --quality (default: QUALITY/judgements.csv and the store QUALITY/judgements.sqlite).")
@click.option("--judged-by", default=None, help="Who judged, shown beside every quality number (e.g. 'people').")
@click.option("--quality-slice-by", multiple=True, help="ΔPrecision per value of this vantage-item attribute.")
@click.option("--sample", "sample_path", type=click.Path(dir_okay=False), default=None,
              help="An exploration sample (from 'abcde explore sample'): adds its top groups.")
@click.option("--explore-by", multiple=True, help="Attributes to group the exploration sample by.")
@click.option("--truth", type=click.Path(), default=None,
              help="A ground-truth clustering (Parquet/CSV, same id and cluster columns): adds Base's and Exp's "
                   "pointwise Precision, Recall and F1 against it.")
@truth_sample_options(then="The report then shows the population's Precision, Recall and F1 of Base and Exp with 95% "
                            "intervals and the paired differences. Without it, a truth covering part of the items "
                            "gives numbers over those items.")
@click.option("--entities", "entities", type=click.Path(file_okay=False), default=None,
              help="An entity sample directory (from 'abcde entities', drawn from the same inputs): adds its "
                   "pointwise ΔRecall, IQ and ΔPrecision, and the pointwise ΔRecall beside the recall lift.")
@click.option("--title", default="ABCDE report", show_default=True, help="Title of the report (HTML and Markdown).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="The HTML report to write (required with --base; with EVALDIR default EVALDIR/report.html).")
@click.option("--markdown", type=click.Path(dir_okay=False), default=None,
              help="Also write a Markdown summary (for a code review comment) here (with EVALDIR and no --out: "
                   "default EVALDIR/report.md).")
@click.option("--remote-inputs", is_flag=True,
              help="With EVALDIR: read inputs its evaluate.json names by URI (s3://, https://, ...); without it "
                   "they are refused, as a shared directory's record could name any server.")
@json_option(help="Print the report's content as one JSON object.")
@engine_options
@handle_errors
def report(evaldir, base, exp, items, item_id, cluster_id, weight_column, slice_by, top, quality_dir, judgements,
           judged_by, quality_slice_by, sample_path, explore_by, truth, truth_sample, population_entities, truth_column,
           entities, title, out, markdown, remote_inputs, as_json, engine):
    """One self-contained HTML report: impact, most affected clusters, charts, slices, quality.

    'abcde report EVALDIR' rebuilds the report of an 'abcde evaluate' (or 'abcde demo') directory
    from its evaluate.json, with every section it had (truth, slices, exploration sample, ...) and
    the quality estimates from the judgements now in EVALDIR/quality; it replaces EVALDIR/report.html
    and EVALDIR/report.md (each at once) and never changes the judgements. --judged-by, --judgements,
    --quality-slice-by, --title, --out, --markdown and the engine options may be given (by default
    the evaluation's own engine, in memory).

    An evaluation directory may come from someone else, so 'abcde report EVALDIR' writes only
    inside EVALDIR (or where --out and --markdown say) and reads only what 'abcde evaluate' put
    there (never through a link out of it): a record naming other outputs is refused. Nor does it
    open what only evaluate.json names: its database is left alone (a note says so; give --database
    to reuse it), a Spark server or cluster is refused (give the engine options), and so is an
    input by URI (unless --remote-inputs).
    """
    ctx = click.get_current_context()

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)

    if evaldir is not None:
        flag = {p.name: p.opts[0] for p in ctx.command.params}
        clash = [flag[n] for n in RECORDED if given(n)]
        if clash:
            raise click.UsageError(f"{', '.join(clash)} cannot be given with EVALDIR: the evaluation's inputs and "
                                   "options are the ones it recorded in EVALDIR/evaluate.json.")
        from abcde.workflow.report import report_from_evaluation  # lazy: start-up time

        res = report_from_evaluation(evaldir, out=out, markdown=markdown, judged_by=judged_by, judgements=judgements,
                                     quality_slice_by=quality_slice_by or None, title=title if given("title") else None,
                                     engine=engine if any(given(n) for n in ENGINE) else None,
                                     remote_inputs=remote_inputs, entities=entities)
    else:
        if remote_inputs:
            raise click.UsageError("--remote-inputs goes with EVALDIR (the inputs its evaluate.json names); with "
                                   "--base and --exp, the inputs given are read.")
        missing = [o for o, v in (("--base", base), ("--exp", exp), ("--out", out)) if not v]
        if missing:
            raise click.UsageError(f"Missing option(s) {', '.join(missing)} (or give an 'abcde evaluate' output "
                                   "directory: abcde report EVALDIR).")
        if not quality_dir and (judgements or quality_slice_by):
            raise click.UsageError("--judgements and --quality-slice-by need --quality DIR.")
        truth, truth_cluster_id = resolve_truth(truth, truth_column, items, truth_sample, population_entities)
        from abcde.workflow.report import run_report  # lazy: start-up time

        res = run_report(base, exp, out, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                         slice_by=slice_by, top=top, quality=quality_dir or None, judgements=judgements,
                         quality_slice_by=quality_slice_by, judged_by=judged_by, sample=sample_path,
                         explore_by=explore_by, title=title, markdown=markdown, truth=truth,
                         truth_cluster_id=truth_cluster_id, truth_sample=truth_sample,
                         population_entities=population_entities, engine=engine, entities=entities)
    if as_json:
        emit_json(res.to_dict())
        return
    print_impact(res.impact, top=min(top, 10) if evaldir is None else 10)
    print_truth(res.report.to_dict())
    if res.quality is not None:
        print_quality(res.report.to_dict()["quality"])
    if res.entities is not None:
        from abcde.cli.entities import print_entity_quality  # lazy: only with an entity sample

        print_entity_quality(res.entities.to_dict())
        console().print(res.report.to_dict()["entities"]["beside"], soft_wrap=True)
    for p in res.written:
        console().print(f"wrote {p}")
    if evaldir is not None and res.quality is None and res.impact.affected_items > 0:
        cmd, q = abcde_command(), shlex.quote(str(res.quality_dir))
        console().print(styled("\n[bold]No judgements[/bold] in {qdir} yet, so the report has no quality estimates. "
                               "Judge the pairs ({cmd} judge serve {q}, a model or an oracle column), then run {cmd} "
                               "report {d} again.", qdir=res.quality_dir, cmd=cmd, q=q, d=shlex.quote(str(evaldir))),
                        soft_wrap=True)


def print_truth(data: dict) -> None:
    """The report's ground truth in the terminal, where it differs from the exact table: a truth
    sample's estimates with their intervals, the paired differences, the design and its notes; or
    a partial truth's note in words. (The exact numbers of a full truth are in the report.)"""
    if data.get("truth_sample"):
        from abcde.report.views import truth_sample_view  # lazy: start-up time (rendered already)

        ts = truth_sample_view(data["truth_sample"], data["names"])
        t = new_table(title="Against the ground truth: the population's estimates from a sample of "
                            f"{ts['design']['entities']:,} entities", title_justify="left")
        for c, justify in (("metric", "left"), ("clustering", "left"), ("estimate", "right"), ("± s.e.", "right"),
                           ("95% interval", "right")):
            t.add_column(c, justify=justify)
        names = data["names"]
        label = {**{c["col"]: c["label"] for c in ts["columns"]}, "delta": f"{names['exp']} − {names['base']}"}
        for r in ts["rows"]:
            for c in r["cells"]:
                t.add_row(("Δ" if c["col"] == "delta" else "") + r["label"], label[c["col"]], c["shown"], c["se"],
                          c["interval"])
        console().print(t)
        for line in [ts["text"], *ts["notes"]]:
            console().print(line, soft_wrap=True)
        if ts["restricted"]:
            console().print(ts["restricted_text"] + " " + "; ".join(
                f"{r['side']}: Precision {r['precision']}, Recall {r['recall']}, F1 {r['f1']}"
                for r in ts["restricted"]) + ".", soft_wrap=True)
    elif data.get("truth_note"):
        console().print(data["truth_note"], soft_wrap=True)
