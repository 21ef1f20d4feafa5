"""``abcde entities``: draw affected items whose true entities a judge completes (issue 53), and the
words and tables of their estimates (``abcde quality DIR`` on an entity sample)."""

from __future__ import annotations

import math
import shlex

import click
from click.core import ParameterSource

from abcde.cli.demo import abcde_command
from abcde.cli.options import engine_options, json_option
from abcde.cli.tables import console, emit_json, handle_errors, styled, table


@click.command()
@click.option("--base", type=click.Path(), help="Baseline clustering (Parquet/CSV).")
@click.option("--exp", type=click.Path(), help="Experiment clustering (Parquet/CSV).")
@click.option("--items", "items", type=click.Path(), default=None,
              help="Items table (Parquet/CSV): weights and the attributes a judge sees.")
@click.option("--budget", type=int, default=150, show_default=True,
              help="Draws of affected items (a census when it reaches their number).")
@click.option("--design", type=click.Choice(["recall", "iq"]), default="recall", show_default=True,
              help="recall: draws ∝ item weight (ΔRecall estimated more precisely); iq: ∝ weight × JaccardDistance "
                   "(the exploration sample's design; IQ more precisely). Both numbers come from either.")
@click.option("--hide", multiple=True, help="Item attribute never shown in the tasks (repeatable), e.g. a truth column.")
@click.option("--candidates", default=None,
              help="A blocking column: items sharing the anchor's value, in neither of its clusters, are listed "
                   "as candidates for the search outside both clusters.")
@click.option("--slice-by", multiple=True, help="Attribute whose slices' exact weights are stored (repeatable).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the draws.")
@click.option("--item-id", default="item_id", show_default=True, help="Item id column in all inputs.")
@click.option("--cluster-id", default="cluster_id", show_default=True, help="Cluster id column of the clusterings.")
@click.option("--weight-column", default=None, help="Weight column of --items (default: 'weight' if present).")
@click.option("--out", type=click.Path(file_okay=False),
              help="Directory to write (new, or empty): the entity sample.")
@click.option("--extend", "extend_dir", type=click.Path(file_okay=False), default=None,
              help="An entity sample to extend to --budget draws in all (its first draws and every answer kept; "
                   "its inputs and options are the recorded ones).")
@json_option
@engine_options
@handle_errors
def entities(base, exp, items, budget, design, hide, candidates, slice_by, seed, item_id, cluster_id, weight_column,
             out, extend_dir, as_json, engine):
    """Draw affected items whose true entities a judge completes: the follow-up paper's pointwise
    ΔRecall (how much of each item's true entity its cluster holds, Exp minus Base) and IQ (how much
    of the change moves toward the true entities).

    Each task shows an item, then the members of its Base and Exp clusters together, shuffled and
    never labelled (each: same entity, different, unsure), then the candidates outside both clusters.
    Judge them ('abcde judge oracle OUT --oracle-column COL' from a truth column), then
    'abcde quality OUT'.
    """
    ctx = click.get_current_context()
    if extend_dir is not None:
        given = [p.opts[0] for p in ctx.command.params if p.name not in ("extend_dir", "budget", "as_json")
                 and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT)]
        if given:
            raise click.UsageError(f"{', '.join(given)} cannot be given with --extend: the sample's inputs and options "
                                   "are the recorded ones (give --budget, the new total).")
        from abcde.completion.extend import extend_entity_sample  # lazy: start-up time

        s = extend_entity_sample(extend_dir, budget=budget)
    else:
        missing = [o for o, v in (("--base", base), ("--exp", exp), ("--out", out)) if not v]
        if missing:
            raise click.UsageError(f"Missing option(s) {', '.join(missing)} (or --extend DIR to extend a sample).")
        from abcde.completion import write_entity_sample  # lazy: start-up time

        s = write_entity_sample(base, exp, out, items=items, budget=budget, seed=seed, design=design, hide=hide,
                                candidates=candidates, slice_by=slice_by, item_id=item_id, cluster_id=cluster_id,
                                weight=weight_column, engine=engine)
    m = s.metadata
    d = {"sample_dir": str(s.path), "design": m["design"], "seed": m["seed"], "draws": m["draws"],
         "anchors": m["anchors"], "census": m["census"], "affected_items": m["n_affected"],
         "members": s.members.num_rows, "candidates": s.candidates.num_rows, "hidden": m["hidden"]}
    if as_json:
        emit_json(d)
        return
    rows = [{"what": k.replace("_", " "), "value": f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else
             str(v)} for k, v in d.items() if k not in ("sample_dir", "hidden")]
    console().print(table(rows, f"Entity sample in {s.path}"))
    if m["n_affected"] == 0:
        console().print("Nothing to judge: Base and Exp are the same clustering (no affected item).", soft_wrap=True)
        return
    cmd, q = abcde_command(), shlex.quote(str(s.path))
    console().print(styled("\n[bold]Next:[/bold] complete the entities ([bold]{cmd} judge oracle {q} --oracle-column "
                           "COL[/bold] from a truth column), then [bold]{cmd} quality {q}[/bold]", cmd=cmd, q=q),
                    soft_wrap=True)


def _num(e: dict, pct: bool = True) -> dict:
    def f(x):
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "—"
        t = f"{100 * x:+.2f}%" if pct else f"{x:+.4f}"
        return t[1:] if t.lstrip("+-") in ("0.00%", "0.0000") else t  # no "-0.00%"

    point = f(e["estimate"]) if e.get("estimate") is not None else (
        f"{f(e['bounds'][0])} to {f(e['bounds'][1])}" if e.get("bounds") else "—")
    se = e.get("std_err")
    return {"estimate": point, "std err": "—" if se is None or math.isnan(se) else (f"{100 * se:.2f}%" if pct else
                                                                                     f"{se:.4f}"),
            "95% interval": f"[{f(e['ci_low'])}, {f(e['ci_high'])}]"}


def print_entity_quality(d: dict) -> None:
    """The estimates of an entity sample: a table, the slices, and the verdict in words."""
    names = {"delta_recall": "ΔRecall (pointwise)", "iq": "IQ", "delta_precision": "ΔPrecision (cross-check)"}
    rows = [{"metric": names[m], **_num(d[m])} for m in names]
    title = (f"Entity completion, {d['design']} design ({'a census of the affected items' if d['census'] else 'sampled'}"
             f"; {d['anchors_judged']:,} of {d['anchors']:,} anchors judged)")
    console().print(table(rows, title))
    for col, vals in (d.get("slices") or {}).items():
        srows = [{col: str(v["value"]), **{f"{names[m]} {k}": x for m in ("delta_recall", "iq", "delta_precision")
                                           if m in v for k, x in _num(v[m]).items() if k != "std err"}} for v in vals]
        console().print(table(srows, f"By {col}", plain=(col,)))
    console().print(d["verdict"], soft_wrap=True)
    a = d.get("answers") or {}
    if a:
        conflicts = (f"; {a['conflicts']:,} answered differently by two raters or sources, read as unsure"
                     if a.get("conflicts") else "")
        if a.get("settled"):
            conflicts += f"; {a['settled']:,} settled by the owner"
        console().print(f"Answers used: {a.get('answers', 0):,} of {a.get('source', 'the given rows')}{conflicts} "
                        "(--source person, model or oracle chooses).", style="yellow" if a.get("source") == "model"
                        else "", soft_wrap=True)


__all__ = ["entities", "print_entity_quality"]
