"""``abcde explore sample|query|serve``: the importance sample of affected items
(:mod:`abcde.sampling.explore`) and its web UI (:mod:`abcde.web.explore_app`)."""

from __future__ import annotations

import json
import sys
import warnings

import click

from abcde.cli.options import clustering_options, engine_options, input_options, json_option
from abcde.cli.tables import METRIC_BY_OPTION, console, emit_json, estimate_row, handle_errors, safe_text, table


@click.group()
def explore():
    """Importance sample of affected items, and slice/group estimates on it."""


@explore.command("sample")
@clustering_options
@click.option("--size", required=True, type=int, help="Unique affected items to draw (e.g. 1000000).")
@click.option("--seed", required=True, type=int, help="Random seed; same seed and inputs give the same sample.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Sample file (.parquet).")
@json_option
@engine_options
@handle_errors
def explore_sample(base, exp, items, item_id, cluster_id, weight_column, size, seed, out, as_json, engine):
    """Draw affected items with probability ∝ weight · JaccardDistance (with replacement)."""
    from abcde.sampling.explore import sample_items  # lazy: start-up time

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sample_items(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                         size=size, seed=seed, engine=engine)
    path = s.write(out)
    m = s.metadata
    if as_json:
        emit_json({**m, "written": str(path)})
        return
    if m["unique_items"] == 0:
        console().print(f"No item is affected: Base and Exp agree on every common item. Wrote an empty sample to "
                        f"{path}.", style="yellow")
        return
    if m["unique_items"] < size:
        console().print(f"Only {m['affected_items']:,} items are affected (asked for {size:,}): all of them are in "
                        "the sample, each with its exact weight, so its estimates are exact.", style="yellow")
    console().print(table([{"unique items": m["unique_items"], "draws": m["total_draws"],
                            "affected items": m["affected_items"], "JaccardDistance(T)": m["jaccard_distance_T"],
                            "seed": m["seed"]}], "Exploration sample"))
    console().print(f"wrote {path}")


@explore.command("serve")
@click.argument("sample", type=click.Path(dir_okay=False))
@click.option("--base", type=click.Path(), default=None,
              help="Baseline clustering, for whole clusters (default: the inputs the sample recorded).")
@click.option("--exp", type=click.Path(), default=None, help="Experiment clustering (with --base).")
@input_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; the default serves only this machine.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--query-timeout", default=30.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              metavar="SECONDS", help="Cancel a query running longer than this (the page shows why); other "
                                      "queries run alongside it meanwhile.")
@json_option(help="Print the server's address as one JSON line on start.")
@engine_options
@handle_errors
def explore_serve(sample, base, exp, items, item_id, cluster_id, weight_column, host, port, query_timeout, as_json,
                  engine):
    """A local web UI to slice, group and drill into an exploration sample."""
    if (base is None) != (exp is None):
        raise click.UsageError("Give both --base and --exp, or neither.")
    from abcde.web.explore_app import ExploreApp, make_server  # lazy: start-up time

    app = ExploreApp(sample, base=base, exp=exp, items=items, item_id=item_id, cluster_id=cluster_id,
                     weight=weight_column, engine=engine, query_timeout=query_timeout)
    app.meta()  # fail fast on a bad sample
    app.warm_up()  # whole clusters for drill-downs, computed while the page loads
    srv = make_server(app, host, port)
    with srv.stop_on_sigterm():  # from here on SIGTERM stops the server as Ctrl+C does
        h, p = srv.server_address[:2]
        if as_json:
            click.echo(json.dumps({"url": f"http://{h}:{p}/", "host": h, "port": p, "sample": str(sample),
                                   "whole_clusters_from": app.whole_clusters_from}))
        else:
            click.echo(f"abcde explore: serving {safe_text(sample)} at http://{h}:{p}/ (Ctrl+C to stop)")
        sys.stdout.flush()
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            srv.server_close()


@explore.command("query")
@click.argument("sample", type=click.Path())
@click.option("--where", default=None, help="Slice filter, e.g. \"source = 'wiki' AND width <= 512\".")
@click.option("--group-by", "group_by", multiple=True, help="Attribute column(s) to group by (repeatable).")
@click.option("--metric", type=click.Choice(["split", "merge", "jaccard"]), default="jaccard", show_default=True,
              help="Metric whose estimated contribution ranks the groups.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="Groups to show.")
@click.option("--examples", default=0, show_default=True, type=click.IntRange(min=0),
              help="Example items to show, drawn with probability ∝ importance weight.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for choosing the examples.")
@json_option
@handle_errors
def explore_query(sample, where, group_by, metric, top, examples, seed, as_json):
    """Estimates for the sample, a slice of it (--where), and its groups (--group-by)."""
    from abcde.sampling.explore import ExplorationSample  # lazy: start-up time

    s = ExplorationSample.read(sample)
    overall_est = s.estimate()
    sl = s.estimate(where) if where else None
    groups = s.group(list(group_by), where=where, metric=metric, top=top) if group_by else []
    ex = s.examples(examples, where=where, seed=seed).to_pylist() if examples else []
    d = {
        "sample": {k: s.metadata[k] for k in ("seed", "size", "unique_items", "total_draws", "jaccard_distance_T",
                                                "split_rate_T", "merge_rate_T")},
        "overall": overall_est.to_dict(),
    }
    if where:
        d["where"] = where
        d["slice"] = sl.to_dict()
    if group_by:
        d["group_by"] = list(group_by)
        d["metric"] = metric
        d["groups"] = [g.to_dict() for g in groups]
    if examples:
        d["examples"] = ex
    if as_json:
        emit_json(d)
        return
    cols = ["sampled_items", "weight_share", "split_contribution", "merge_contribution", "jaccard_contribution",
            "jaccard_contribution_se"]
    rows = [{"": "whole sample", **estimate_row(overall_est)}]
    if sl is not None:
        rows.append({"": f"where {where}", **estimate_row(sl)})
    console().print(table(rows, "Estimates (contribution = share of the overall metric)", ["", *cols]))
    if groups:
        console().print(table([estimate_row(g) for g in groups],
                              f"Top {len(groups)} groups by {METRIC_BY_OPTION[metric]} contribution",
                              [*group_by, *cols], plain=[c for c in group_by if c in s.attributes]))
    if ex:
        show = ["item_id", "base_cluster", "exp_cluster", "split_rate", "merge_rate", "importance_weight",
                *[a for a in s.attributes][:4]]
        console().print(table(ex, f"{len(ex)} example items", show, plain=s.attributes))
