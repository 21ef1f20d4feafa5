"""``abcde ids``: two id-assignment schemes compared (:func:`abcde.workflow.ids.evaluate_ids`)."""

from __future__ import annotations

import shlex

import click

from abcde.cli.demo import abcde_command
from abcde.cli.options import engine_options, json_option
from abcde.cli.tables import console, emit_json, handle_errors, print_impact, styled, table


@click.command()
@click.option("--history", required=True, type=click.Path(),
              help="The clustering as published earlier (Parquet/CSV): item id and the id it was published with "
                   "(--cluster-id column).")
@click.option("--current", required=True, type=click.Path(), help="The current clustering (Parquet/CSV).")
@click.option("--base-ids", required=True, type=click.Path(),
              help="The scheme in use: each current cluster (--cluster-id column) and its id (--id-column).")
@click.option("--exp-ids", required=True, type=click.Path(), help="The candidate scheme, as --base-ids.")
@click.option("--current-exp", type=click.Path(), default=None,
              help="Exp's own current clustering (its clusters are the ones --exp-ids maps): a membership change "
                   "and an id change evaluated together.")
@click.option("--hist-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Multiplies the historical items' weights: more protects old ids, less weighs the current "
                   "items' own quality more.")
@click.option("--items", "items", type=click.Path(), default=None,
              help="Items table (Parquet/CSV): every historical and current item's weight and attributes, carried "
                   "to both copies.")
@click.option("--item-id", default="item_id", show_default=True, help="Item id column in all inputs.")
@click.option("--cluster-id", default="cluster_id", show_default=True,
              help="Cluster (or published id) column of the clusterings and the maps.")
@click.option("--id-column", default="id", show_default=True, help="The id column of the maps.")
@click.option("--weight-column", default=None, help="Weight column of --items (default: 'weight' if present).")
@click.option("--slice-by", multiple=True, help="Attribute column for slices (repeatable).")
@click.option("--budget", type=int, default=300, show_default=True, help="Distinct pairs to judge.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of both samples.")
@click.option("--sample-size", type=int, default=1000, show_default=True, help="Draws of the exploration sample.")
@click.option("--hide", multiple=True, help="Item attribute not to show to judges (repeatable).")
@click.option("--top", type=int, default=20, show_default=True, help="Ids whose class differs to list.")
@click.option("--title", default="ABCDE: id-assignment schemes", show_default=True, help="The report's title.")
@click.option("--force", is_flag=True, help="Replace another pair sample in OUT/quality (moved aside, never deleted).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write: an evaluation directory (as 'abcde evaluate' writes) of the tagged "
                   "clusterings, with the tagged inputs and the id table in inputs/<digest>/.")
@json_option
@engine_options
@handle_errors
def ids(history, current, base_ids, exp_ids, current_exp, hist_scale, items, item_id, cluster_id, id_column,
        weight_column, slice_by, budget, seed, sample_size, hide, top, title, force, out, as_json, engine):
    """Compare two id-assignment schemes: which keeps ids for the same concept, and which hands ids
    to another concept.

    Every item published earlier becomes a copy 'published earlier' in the cluster of its published
    id; every current item a copy 'current' in the cluster of the id its current cluster got from
    the scheme (Base: --base-ids, Exp: --exp-ids). Every pair the two disagree on pairs a current
    item with a historical one and asks: the same real-world thing? Then the whole job runs on the
    two tagged clusterings ('abcde evaluate'): judge OUT/quality and run 'abcde report OUT'. "Recall"
    there is ids kept for the same concept; "precision" ids not handed to another concept.
    """
    from abcde.workflow.ids import evaluate_ids  # lazy: start-up time

    res = evaluate_ids(history, current, base_ids, exp_ids, out, current_exp=current_exp, items=items,
                       hist_scale=hist_scale, item_id=item_id, cluster_id=cluster_id, id_column=id_column,
                       weight=weight_column, hide=hide, engine=engine, slice_by=slice_by, budget=budget, seed=seed,
                       sample_size=sample_size, title=title, force=force)
    if as_json:
        d = res.to_dict()
        d["ids"] = res.ids.to_dict(top=top)
        emit_json(d)
        return
    print_id_table(res.ids, top)
    print_impact(res.evaluation.impact, top=10)
    for p in res.written:
        console().print(f"wrote {p}")
    cmd, d, q = abcde_command(), shlex.quote(str(res.evaluation.out_dir)), shlex.quote(str(res.evaluation.pair_dir))
    if res.evaluation.impact.affected_items == 0:
        console().print("\nNothing to judge: the two schemes give every current item the same id.", soft_wrap=True)
        return
    console().print(styled("\n[bold]Next:[/bold] judge the pairs with [bold]{cmd} judge serve {q}[/bold] (or an "
                           "oracle column: {cmd} judge oracle {q} --oracle-column COL), then "
                           "[bold]{cmd} report {d}[/bold]", cmd=cmd, q=q, d=d), soft_wrap=True)


def print_id_table(t, top: int) -> None:
    """The id table's class counts per scheme, and the ids whose class differs, most weight first."""
    from abcde.ids import CLASSES  # lazy: start-up time

    rows = [{"class": c, "Base": f"{t.counts['base'][c]:,}", "Exp": f"{t.counts['exp'][c]:,}"} for c in CLASSES]
    console().print(table(rows, f"Ids by lineage ({t.table.num_rows:,} ids)"))
    diff = t.differing
    if diff.num_rows and top:
        shown = [{"id": r["id"], "weight": f"{r['hist_weight']:,.4g}", "Base": r["class_base"] or "—",
                  "Base owner": r["owner_base"] or "—", "Exp": r["class_exp"] or "—",
                  "Exp owner": r["owner_exp"] or "—"} for r in diff.slice(0, top).to_pylist()]
        console().print(table(shown, f"Ids whose class differs ({diff.num_rows:,}; most weight first)"))
