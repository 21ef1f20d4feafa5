"""``abcde report``: one self-contained HTML report of a change (:func:`abcde.workflow.run_report`)."""

from __future__ import annotations

import click

from abcde.cli.options import clustering_options, engine_options, json_option
from abcde.cli.tables import console, emit_json, handle_errors, print_impact, print_quality


@click.command()
@clustering_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by; repeat, or 'a,b' to group by both.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=0), help="Most affected clusters per side.")
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
@click.option("--title", default="ABCDE report", show_default=True, help="Title of the report (HTML and Markdown).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The HTML report to write.")
@click.option("--markdown", type=click.Path(dir_okay=False), default=None,
              help="Also write a Markdown summary (for a code review comment) here.")
@json_option(help="Print the report's content as one JSON object.")
@engine_options
@handle_errors
def report(base, exp, items, item_id, cluster_id, weight_column, slice_by, top, quality_dir, judgements, judged_by,
           quality_slice_by, sample_path, explore_by, truth, title, out, markdown, as_json, engine):
    """One self-contained HTML report: impact, most affected clusters, charts, slices, quality."""
    if not quality_dir and (judgements or quality_slice_by):
        raise click.UsageError("--judgements and --quality-slice-by need --quality DIR.")
    from abcde.workflow.report import run_report  # lazy: start-up time

    res = run_report(base, exp, out, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                     slice_by=slice_by, top=top, quality=quality_dir or None, judgements=judgements,
                     quality_slice_by=quality_slice_by, judged_by=judged_by, sample=sample_path,
                     explore_by=explore_by, title=title, markdown=markdown, truth=truth, engine=engine)
    if as_json:
        emit_json(res.to_dict())
        return
    print_impact(res.impact, top=min(top, 10))
    if res.quality is not None:
        print_quality(res.report.to_dict()["quality"])
    for p in res.written:
        console().print(f"wrote {p}")
