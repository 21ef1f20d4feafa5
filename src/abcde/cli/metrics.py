"""``abcde impact``, ``abcde pointwise``, ``abcde weights``: the exact metrics (:mod:`abcde.metrics`)."""

from __future__ import annotations

import os

import click

from abcde.cli.options import (clustering_options, resolve_truth, engine_options, input_options,
                               json_option, truth_sample_options)
from abcde.cli.tables import (console, emit_json, handle_errors, new_table, pct, print_impact, print_restriction,
                              safe_text, table)
from abcde.core.names import WEIGHT_COMBINE_RULES
from abcde.errors import InputError


@click.command()
@clustering_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by; repeat, or 'a,b' to group by both.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0), help="Most affected clusters to list.")
@click.option("--item", "lookup", multiple=True, help="Show the metrics of this item id (repeatable).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Write items.parquet, base_clusters.parquet, exp_clusters.parquet and impact.json here.")
@click.option("--only-affected", is_flag=True,
              help="With --out: per-item and per-cluster rows of the affected items and clusters only (the others' "
                   "metrics are all 0); for billions of items, whose whole tables are tens of GB.")
@json_option(help="Print one JSON object instead of tables.")
@engine_options
@handle_errors
def impact(base, exp, items, item_id, cluster_id, weight_column, slice_by, top, lookup, out, only_affected, as_json,
           engine):
    """Exact impact metrics: SplitRate, MergeRate, JaccardDistance.

    Overall, per item, per Base and Exp cluster (most affected first) and per slice.
    """
    if only_affected and not out:
        raise click.UsageError("--only-affected applies to the tables written with --out.")
    from abcde.metrics.impact import impact as run_impact  # lazy: start-up time

    res = run_impact(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                     slice_by=slice_by, top=top, engine=engine)
    found = res.lookup(lookup) if lookup else []
    written = res.write(out, only_affected=only_affected) if out else []
    if as_json:
        d = res.to_dict()
        if lookup:
            d["lookup"] = found
        if out:
            d["written"] = [str(p) for p in written]
        emit_json(d)
        return
    print_impact(res, top=top)
    if lookup:
        if found:
            console().print(table(found, "Item lookup"))
        else:
            console().print("No such item among the common items.", style="yellow")
        missing = {str(x) for x in lookup} - {str(r["item_id"]) for r in found}
        if missing:  # each id as the text it is, one line each
            console().print(f"Not among the common items: {', '.join(map(safe_text, sorted(missing)))}",
                            style="yellow")
    for p in written:
        console().print(f"wrote {p}")


@click.command()
@click.option("--truth", type=click.Path(), default=None,
              help="Ground truth clustering (Parquet/CSV); or --truth-column COL of --items.")
@click.option("--clustering", type=click.Path(), default=None, help="Clustering to evaluate (Parquet/CSV).")
@click.option("--base", type=click.Path(), default=None,
              help="Instead of --clustering, with --exp and --truth-sample: Base of two clusterings compared on the "
                   "truth's sampled entities (paired ΔPrecision, ΔRecall, ΔF1).")
@click.option("--exp", type=click.Path(), default=None, help="Exp of the two clusterings (see --base).")
@input_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by.")
@truth_sample_options(then="Then the population's Precision, Recall and F1 are estimated with standard errors and "
                            "95% intervals. Without it, a truth covering part of the items gives numbers over those "
                            "items.")
@click.option("--worst", default=10, show_default=True, type=click.IntRange(min=0),
              help="Clusters with the lowest F1 to list.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Write per-item and per-cluster Parquet here.")
@json_option(help="Print one JSON object instead of tables.")
@engine_options
@handle_errors
def pointwise(truth, clustering, base, exp, items, item_id, cluster_id, weight_column, slice_by, truth_sample,
              population_entities, truth_column, worst, out, as_json, engine):
    """Pointwise Precision, Recall and F1 of a clustering against a ground truth.

    With --truth-sample (the truth lists every item of entities sampled by that design): the whole
    population's Precision, Recall and F1 estimated with 95% intervals; with --base and --exp
    instead of --clustering, both and their paired differences.
    """
    two = base is not None or exp is not None
    if two and clustering is not None:
        raise click.UsageError("Give --clustering, or --base and --exp, not both.")
    if two and (base is None or exp is None):
        raise click.UsageError("--base and --exp go together (two clusterings compared on the truth).")
    if not two and clustering is None:
        raise click.UsageError("Missing option --clustering (or --base and --exp with --truth-sample).")
    if two and truth_sample is None:
        raise click.UsageError("--base and --exp compare two clusterings on a truth sample: give --truth-sample "
                               "DESIGN (without a design, run 'abcde pointwise --clustering' on each, or 'abcde "
                               "report --truth').")
    truth, truth_cluster_id = resolve_truth(truth, truth_column, items, truth_sample, population_entities)
    if truth is None:
        raise click.UsageError("Missing option --truth FILE (or --truth-column COL, a column of --items).")
    if truth_sample is not None:
        if out:
            raise click.UsageError("--out writes per-item and per-cluster tables of a truth without a design; with "
                                   "--truth-sample, --json gives the estimates.")
        from abcde.metrics.truth_sample import estimate_pointwise  # lazy: start-up time

        res = estimate_pointwise(truth, clustering, base=base, exp=exp, truth_sample=truth_sample,
                                 population_entities=population_entities, items=items, item_id=item_id,
                                 cluster_id=cluster_id, truth_cluster_id=truth_cluster_id, weight=weight_column,
                                 slice_by=slice_by, engine=engine)
        if as_json:
            emit_json(res.to_dict())  # "estimates" (with intervals), "truth_sample", "restricted", "notes", ...
            return
        print_truth_sample(res)
        return
    from abcde.metrics.pointwise import pointwise as run_pointwise  # lazy: start-up time

    res = run_pointwise(truth, clustering, items=items, item_id=item_id, cluster_id=cluster_id,
                        truth_cluster_id=truth_cluster_id, weight=weight_column, slice_by=slice_by, engine=engine)
    written = res.write(out) if out else []
    worst_rows = res.per_cluster().slice(0, worst).to_pylist() if worst else []
    if as_json:
        d = res.to_dict()  # carries "note" for a partial truth
        d["worst_clusters"] = worst_rows
        if out:
            d["written"] = [str(p) for p in written]
        emit_json(d)
        return
    t = new_table(title="Pointwise metrics against the truth", title_justify="left", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value", justify="right")
    t.add_row("items", f"{res.items:,}")
    t.add_row("Precision", pct(res.precision))
    t.add_row("Recall", pct(res.recall))
    t.add_row("F1", pct(res.f1))
    console().print(t)
    if res.note:  # a partial truth: what these numbers describe, in words
        console().print(res.note, style="yellow", soft_wrap=True)
    print_restriction(res.restriction.to_dict(), ("truth", "clustering"))
    if worst_rows:
        console().print(table(worst_rows, f"{len(worst_rows)} clusters with the lowest F1"))
    for name, rows in res.slices.items():
        console().print(table(rows, f"Slices by {name}", plain=name.split(",")))
    for p in written:
        console().print(f"wrote {p}")


def print_truth_sample(res) -> None:
    """A truth sample's estimates: per clustering (and, for two, the paired differences) the estimate,
    its standard error and 95% interval; the design; the notes; the numbers over the truth's items."""
    from abcde.quality.verdict import design_words, truth_point_note  # lazy: start-up time
    from abcde.util.display import four

    def signed(v):
        s = four(v)
        return s if s.startswith("-") or s in ("n/a", four(0.0)) else "+" + s

    t = new_table(title=f"The population's Precision, Recall and F1, estimated from {res.entities:,} sampled "
                        "entities", title_justify="left")
    for c, justify in (("metric", "left"), ("clustering", "left"), ("estimate", "right"), ("± s.e.", "right"),
                       ("95% interval", "right")):
        t.add_column(c, justify=justify)
    names = {"clustering": "clustering", "base": "Base", "exp": "Exp"}
    notes = list(res.notes)
    for m, label in (("precision", "Precision"), ("recall", "Recall"), ("f1", "F1")):
        rows = [(label, names[s], res.side_estimates(s)[m], False) for s in res.sides]
        if len(res.sides) == 2:
            rows.append((f"Δ{label}", "Exp − Base", res.estimates[f"delta_{m}"], True))
        for metric, who, e, delta in rows:
            d, fmt = e.to_dict(), (signed if delta else pct)
            lo, hi = d["ci_low"], d["ci_high"]
            t.add_row(metric, who, fmt(d["estimate"]), (four if delta else pct)(d["std_err"]),
                      "n/a" if lo is None else f"[{fmt(lo)}, {fmt(hi)}]")
            why = d.get("note") or truth_point_note(d, res.census)
            if why:
                notes.append(f"{metric} ({who}): {why}.")
    console().print(t)
    pop = sorted(set(res.population_items.values()))
    console().print(f"Design: {design_words(res.design_dict())}. The truth covers {res.truth_items:,} of the "
                    f"{pop[-1]:,} items." + (" A census: the numbers are exact." if res.census else ""),
                    soft_wrap=True)
    for n in notes:
        console().print(n, style="yellow", soft_wrap=True)
    r = res.restricted
    over = [r] if len(res.sides) == 1 else [r[s] for s in res.sides]
    console().print(f"Over the truth's {res.truth_items:,} items only (restricted; without --truth-sample; Precision "
                    "optimistic): " + "; ".join(
                        (f"{names[s]}: " if len(res.sides) == 2 else "")
                        + f"Precision {pct(x['precision'])}, Recall {pct(x['recall'])}, F1 {pct(x['f1'])}"
                        for s, x in zip(res.sides, over)) + ".", soft_wrap=True)
    for name, rows in res.slices.items():
        flat = [{**{c: row[c] for c in name.split(",")}, "entities": row["entities"], "items": row["items"],
                 **{(f"{names[s]} {m}" if len(res.sides) == 2 else m): pct(
                     (row["estimates"][s][m] if len(res.sides) == 2 else row["estimates"][m]).value)
                    for s in res.sides for m in ("precision", "recall")}}
                for row in rows]
        console().print(table(flat, f"Slices by {name} (estimates; intervals in --json)", plain=name.split(",")))


@click.command()
@click.option("--past", required=True, type=click.Path(), help="Past clustering (item id, cluster id).")
@click.option("--importance", required=True, type=click.Path(), help="Past cluster importance (cluster id, importance).")
@click.option("--importance-column", default="importance", show_default=True,
              help="Column of --importance holding each past cluster's importance.")
@click.option("--base", required=True, type=click.Path(), help="Baseline clustering.")
@click.option("--exp", required=True, type=click.Path(), help="Experiment clustering.")
@input_options
@click.option("--combine", type=click.Choice(WEIGHT_COMBINE_RULES), default="max", show_default=True,
              help="How the Base and Exp weights make one weight.")
@click.option("--floor", type=float, default=None,
              help="Weight for items whose derived weight is 0 (default: smallest positive derived weight).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Output items table (.parquet or .csv).")
@click.option("--force", is_flag=True, help="Replace an existing file at --out (never done otherwise).")
@json_option
@engine_options
@handle_errors
def weights(past, importance, importance_column, base, exp, items, item_id, cluster_id, weight_column, combine,
            floor, out, force, as_json, engine):
    """Item weights from a past clustering's cluster importance (paper: "Item weights").

    Writes an items table usable as --items.
    """
    from abcde.metrics.weights import derive_weights  # lazy: start-up time

    for flag, src in (("--past", past), ("--importance", importance), ("--base", base), ("--exp", exp),
                      ("--items", items)):
        if src is not None and os.path.exists(src) and os.path.exists(out) and os.path.samefile(src, out):
            raise InputError(f"--out '{out}' is the {flag} input; write the weights to a new file.")
    if os.path.lexists(out) and not force:
        raise InputError(f"The file '{out}' exists; abcde weights never overwrites a file. Give a new path, or "
                         "--force to replace it.")
    res = derive_weights(past, importance, base, exp, items=items, item_id=item_id, cluster_id=cluster_id,
                         importance_column=importance_column, weight=weight_column, combine=combine, floor=floor,
                         engine=engine)
    from abcde.util.files import write_table_file  # lazy: start-up time

    path = write_table_file(res.table, out)  # all or nothing; .parquet, .csv or .jsonl
    d = {**res.to_dict(), "written": str(path)}
    if as_json:
        emit_json(d)
        return
    console().print(table([d], "Derived weights"))
