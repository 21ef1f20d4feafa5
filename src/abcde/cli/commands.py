"""The ``abcde`` command line: a thin layer over the public library functions.

Every command prints readable tables by default and one JSON object with
``--json``. Input errors exit with code 1 and a one-line message, no traceback.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from abcde.util import progress as _progress
from abcde.engine import connect
from abcde.core.diff import describe_restriction
from abcde.core.names import METRIC_LABELS, QUALITY_METRICS
from abcde.errors import AbcdeError
from abcde.sampling.explore import ExplorationSample, sample_affected, sample_items
from abcde.metrics.impact import impact as run_impact
from abcde.quality import draw_pair_sample, estimate_quality, oracle_judge
from abcde.metrics.pointwise import pointwise as run_pointwise
from abcde.metrics.weights import COMBINE_RULES, derive_weights

console = Console(width=None if sys.stdout.isatty() else 120)


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:.6g}"
    return str(v)


def _pct(v: float) -> str:
    return f"{100 * v:.3f}%"


HEADERS = {
    "split_rate": "Split",
    "merge_rate": "Merge",
    "jaccard_distance": "Jaccard",
    "contribution": "contrib.",
    "cluster_id": "cluster",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "sampled_items": "sampled",
    "weight_share": "weight share",
    "split_contribution": "Split contrib.",
    "merge_contribution": "Merge contrib.",
    "jaccard_contribution": "Jaccard contrib.",
    "jaccard_contribution_se": "± s.e.",
    "importance_weight": "w(i)",
}
LEFT = {"side", "cluster_id", "item_id", "base_cluster", "exp_cluster"}


def _table(rows: list[dict], title: str | None = None, columns: list[str] | None = None, limit: int = 25) -> Table:
    cols = columns or (list(rows[0].keys()) if rows else [])
    shown = rows[:limit]
    caption = f"… and {len(rows) - limit} more rows (--json for all)" if len(rows) > limit else None
    t = Table(title=title, title_justify="left", header_style="bold", caption=caption, caption_justify="left")
    for c in cols:
        t.add_column(HEADERS.get(c, c), justify="left" if c in LEFT else "right", overflow="fold")
    for r in shown:
        t.add_row(*[_fmt(r.get(c)) for c in cols])
    return t


def _emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, default=str, allow_nan=False))


def handle_errors(fn):
    """Turn abcde errors into a clean message and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AbcdeError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _spark_conf(ctx, param, values):
    conf = {}
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", ctx=ctx, param=param)
        k, _, val = v.partition("=")
        conf[k.strip()] = val.strip()
    return conf


def engine_options(fn):
    """--engine, --database, --memory-limit, --threads, --spark-master, --spark-remote, --spark-conf."""

    @click.option("--engine", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
                  help="Engine that runs the computation: embedded DuckDB, or PySpark.")
    @click.option("--database", type=click.Path(dir_okay=False), default=None,
                  help="DuckDB database file (default: in memory).")
    @click.option("--memory-limit", default=None,
                  help="Engine memory limit, e.g. 4GB; beyond it DuckDB spills to disk (Spark: driver memory).")
    @click.option("--threads", type=click.IntRange(min=1), default=None,
                  help="Engine threads (Spark: local[N] when no --spark-master).")
    @click.option("--spark-master", default=None,
                  help="Spark master: local[2], spark://host:7077, yarn, ... (default: the active session "
                       "under spark-submit, else local[*]).")
    @click.option("--spark-remote", default=None, help="Spark Connect URL, e.g. sc://host:15002.")
    @click.option("--spark-conf", multiple=True, callback=_spark_conf, metavar="KEY=VALUE",
                  help="Spark setting for a new session (repeatable).")
    @click.option("--quiet", "-q", is_flag=True, help="No progress display.")
    @functools.wraps(fn)
    def wrapper(*args, engine, database, memory_limit, threads, spark_master, spark_remote, spark_conf, quiet,
                **kwargs):
        if quiet:
            _progress.set_enabled(False)
        if engine != "spark" and (spark_master or spark_remote or spark_conf):
            raise click.UsageError("--spark-master, --spark-remote and --spark-conf need --engine spark.")
        if engine == "spark" and database:
            raise click.UsageError("--database is a DuckDB setting; Spark reads and writes Parquet paths.")
        try:
            eng = connect(engine, database=database, memory_limit=memory_limit, threads=threads,
                          master=spark_master, remote=spark_remote, spark_conf=spark_conf)
        except AbcdeError as exc:
            raise click.ClickException(str(exc)) from exc
        return fn(*args, engine=eng, **kwargs)

    return wrapper


def input_options(fn):
    """--items, --item-id, --cluster-id, --weight-column."""

    @click.option("--items", "items", type=click.Path(), default=None,
                  help="Items table (Parquet/CSV): item id, optional weight, attribute columns.")
    @click.option("--item-id", default="item_id", show_default=True, help="Item id column in all inputs.")
    @click.option("--cluster-id", default="cluster_id", show_default=True, help="Cluster id column in the clusterings.")
    @click.option("--weight-column", default=None,
                  help="Weight column of --items (default: 'weight' if present, else every item weighs 1).")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


def clustering_options(fn):
    """--base, --exp and the input options."""

    @click.option("--base", required=True, type=click.Path(), help="Baseline clustering (Parquet/CSV).")
    @click.option("--exp", required=True, type=click.Path(), help="Experiment clustering (Parquet/CSV).")
    @input_options
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="abcde")
def main():
    """ABCDE: Application-Based Cluster Diff Evals.

    Compare a Baseline and an Experiment clustering of the same weighted items:
    what changed (exact impact metrics) and, with judgements, whether it is better.
    """


# --------------------------------------------------------------------------- impact
def print_impact(res, *, top: int) -> None:
    d = res.to_dict()
    summary = Table(title="Impact of Exp relative to Base", title_justify="left", show_header=False)
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    summary.add_row("items", f"{res.items:,}")
    summary.add_row("total weight", _fmt(res.total_weight))
    summary.add_row("SplitRate", _pct(res.split_rate))
    summary.add_row("MergeRate", _pct(res.merge_rate))
    summary.add_row("JaccardDistance", _pct(res.jaccard_distance))
    aff_share = res.affected_weight / res.total_weight if res.total_weight else 0.0
    summary.add_row("affected items", f"{res.affected_items:,} ({_pct(aff_share)} of weight)")
    summary.add_row("unaffected items", f"{res.unaffected_items:,}")
    console.print(summary)
    print_restriction(d["restriction"], ("base", "exp"))
    if res.affected_items == 0:
        console.print("[green]Base and Exp are identical on the common items: nothing changed.[/green]")
        return
    cols = ["side", "cluster_id", "size", "weight", "split_rate", "merge_rate", "jaccard_distance", "contribution"]
    console.print(_table(res.top_clusters["interleaved"], f"Top {top} most affected clusters (Base and Exp interleaved)", cols))
    for name, rows in res.slices.items():
        console.print(_table(rows, f"Slices by {name}"))


def print_restriction(r: dict, names: tuple[str, str]) -> None:
    lines = describe_restriction(r, names, _fmt)
    if lines:
        console.print("[yellow]Restricted to the common items:[/yellow]")
        for line in lines:
            console.print(f"  • {line}")


@main.command()
@clustering_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by; repeat, or 'a,b' to group by both.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0), help="Most affected clusters to list.")
@click.option("--item", "lookup", multiple=True, help="Show the metrics of this item id (repeatable).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Write items.parquet, base_clusters.parquet, exp_clusters.parquet and impact.json here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@engine_options
@handle_errors
def impact(base, exp, items, item_id, cluster_id, weight_column, slice_by, top, lookup, out, as_json, engine):
    """Exact impact metrics: SplitRate, MergeRate, JaccardDistance.

    Overall, per item, per Base and Exp cluster (most affected first) and per slice.
    """
    res = run_impact(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                     slice_by=slice_by, top=top, engine=engine)
    found = res.lookup(lookup) if lookup else []
    written = res.write(out) if out else []
    if as_json:
        d = res.to_dict()
        if lookup:
            d["lookup"] = found
        if out:
            d["written"] = [str(p) for p in written]
        _emit_json(d)
        return
    print_impact(res, top=top)
    if lookup:
        console.print(_table(found, "Item lookup") if found else "[yellow]No such item among the common items.[/yellow]")
        missing = {str(x) for x in lookup} - {str(r["item_id"]) for r in found}
        if missing:
            console.print(f"[yellow]Not among the common items: {', '.join(sorted(missing))}[/yellow]")
    for p in written:
        console.print(f"wrote {p}")


# --------------------------------------------------------------------------- pointwise
@main.command()
@click.option("--truth", required=True, type=click.Path(), help="Ground truth clustering (Parquet/CSV).")
@click.option("--clustering", required=True, type=click.Path(), help="Clustering to evaluate (Parquet/CSV).")
@input_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by.")
@click.option("--worst", default=10, show_default=True, type=click.IntRange(min=0), help="Clusters with the lowest F1 to list.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Write per-item and per-cluster Parquet here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@engine_options
@handle_errors
def pointwise(truth, clustering, items, item_id, cluster_id, weight_column, slice_by, worst, out, as_json, engine):
    """Pointwise Precision, Recall and F1 of a clustering against a ground truth."""
    res = run_pointwise(truth, clustering, items=items, item_id=item_id, cluster_id=cluster_id,
                        weight=weight_column, slice_by=slice_by, engine=engine)
    written = res.write(out) if out else []
    worst_rows = res.per_cluster().slice(0, worst).to_pylist() if worst else []
    if as_json:
        d = res.to_dict()
        d["worst_clusters"] = worst_rows
        if out:
            d["written"] = [str(p) for p in written]
        _emit_json(d)
        return
    t = Table(title="Pointwise metrics against the truth", title_justify="left", show_header=False)
    t.add_column("metric", style="bold")
    t.add_column("value", justify="right")
    t.add_row("items", f"{res.items:,}")
    t.add_row("Precision", _pct(res.precision))
    t.add_row("Recall", _pct(res.recall))
    t.add_row("F1", _pct(res.f1))
    console.print(t)
    print_restriction(res.restriction.to_dict(), ("truth", "clustering"))
    if worst_rows:
        console.print(_table(worst_rows, f"{len(worst_rows)} clusters with the lowest F1"))
    for name, rows in res.slices.items():
        console.print(_table(rows, f"Slices by {name}"))
    for p in written:
        console.print(f"wrote {p}")


# --------------------------------------------------------------------------- weights
@main.command()
@click.option("--past", required=True, type=click.Path(), help="Past clustering (item id, cluster id).")
@click.option("--importance", required=True, type=click.Path(), help="Past cluster importance (cluster id, importance).")
@click.option("--importance-column", default="importance", show_default=True)
@click.option("--base", required=True, type=click.Path(), help="Baseline clustering.")
@click.option("--exp", required=True, type=click.Path(), help="Experiment clustering.")
@input_options
@click.option("--combine", type=click.Choice(COMBINE_RULES), default="max", show_default=True,
              help="How the Base and Exp weights make one weight.")
@click.option("--floor", type=float, default=None,
              help="Weight for items whose derived weight is 0 (default: smallest positive derived weight).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Output items table (.parquet or .csv).")
@click.option("--json", "as_json", is_flag=True)
@engine_options
@handle_errors
def weights(past, importance, importance_column, base, exp, items, item_id, cluster_id, weight_column, combine,
            floor, out, as_json, engine):
    """Item weights from a past clustering's cluster importance (paper: "Item weights").

    Writes an items table usable as --items.
    """
    res = derive_weights(past, importance, base, exp, items=items, item_id=item_id, cluster_id=cluster_id,
                         importance_column=importance_column, weight=weight_column, combine=combine, floor=floor,
                         engine=engine)
    path = Path(out)
    if path.suffix.lower() == ".csv":
        import pyarrow.csv as pacsv
        pacsv.write_csv(res.table, path)
    else:
        import pyarrow.parquet as pq
        pq.write_table(res.table, path)
    d = {**res.to_dict(), "written": str(path)}
    if as_json:
        _emit_json(d)
        return
    console.print(_table([d], "Derived weights"))


# --------------------------------------------------------------------------- explore
@main.group()
def explore():
    """Importance sample of affected items, and slice/group estimates on it."""


@explore.command("sample")
@clustering_options
@click.option("--size", required=True, type=int, help="Unique affected items to draw (e.g. 1000000).")
@click.option("--seed", required=True, type=int, help="Random seed; same seed and inputs give the same sample.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Sample file (.parquet).")
@click.option("--json", "as_json", is_flag=True)
@engine_options
@handle_errors
def explore_sample(base, exp, items, item_id, cluster_id, weight_column, size, seed, out, as_json, engine):
    """Draw affected items with probability ∝ weight · JaccardDistance (with replacement)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sample_items(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                         size=size, seed=seed, engine=engine)
    path = s.write(out)
    m = s.metadata
    if as_json:
        _emit_json({**m, "written": str(path)})
        return
    if m["unique_items"] == 0:
        console.print("[yellow]No item is affected: Base and Exp agree on every common item. "
                      f"Wrote an empty sample to {path}.[/yellow]")
        return
    console.print(_table([{"unique items": m["unique_items"], "draws": m["total_draws"],
                           "affected items": m["affected_items"], "JaccardDistance(T)": m["jaccard_distance_T"],
                           "seed": m["seed"]}], "Exploration sample"))
    console.print(f"wrote {path}")


@explore.command("serve")
@click.argument("sample", type=click.Path(dir_okay=False))
@click.option("--base", type=click.Path(), default=None,
              help="Baseline clustering, for whole clusters (default: the inputs the sample recorded).")
@click.option("--exp", type=click.Path(), default=None, help="Experiment clustering (with --base).")
@input_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; the default serves only this machine.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--json", "as_json", is_flag=True, help="Print the server's address as one JSON line on start.")
@handle_errors
def explore_serve(sample, base, exp, items, item_id, cluster_id, weight_column, host, port, as_json):
    """A local web UI to slice, group and drill into an exploration sample."""
    from abcde.web.explore_app import ExploreApp, make_server

    if (base is None) != (exp is None):
        raise click.UsageError("Give both --base and --exp, or neither.")
    app = ExploreApp(sample, base=base, exp=exp, items=items, item_id=item_id, cluster_id=cluster_id,
                     weight=weight_column)
    app.meta()  # fail fast on a bad sample
    app.warm_up()  # whole clusters for drill-downs, computed while the page loads
    srv = make_server(app, host, port)
    h, p = srv.server_address[:2]
    if as_json:
        click.echo(json.dumps({"url": f"http://{h}:{p}/", "host": h, "port": p, "sample": str(sample),
                               "whole_clusters_from": "population" if app._inputs["base"] else "sample"}))
    else:
        click.echo(f"abcde explore: serving {sample} at http://{h}:{p}/ (Ctrl+C to stop)")
    sys.stdout.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


def _estimate_row(e) -> dict:
    d = e.to_dict()
    se = d.pop("std_err")
    d["jaccard_contribution_se"] = se.get("jaccard_contribution")
    return d


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
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def explore_query(sample, where, group_by, metric, top, examples, seed, as_json):
    """Estimates for the sample, a slice of it (--where), and its groups (--group-by)."""
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
        _emit_json(d)
        return
    cols = ["sampled_items", "weight_share", "split_contribution", "merge_contribution", "jaccard_contribution",
            "jaccard_contribution_se"]
    rows = [{"": "whole sample", **_estimate_row(overall_est)}]
    if sl is not None:
        rows.append({"": f"where {where}", **_estimate_row(sl)})
    console.print(_table(rows, "Estimates (contribution = share of the overall metric)", ["", *cols]))
    if groups:
        console.print(_table([_estimate_row(g) for g in groups],
                             f"Top {len(groups)} groups by {metric} contribution", [*group_by, *cols]))
    if ex:
        show = ["item_id", "base_cluster", "exp_cluster", "split_rate", "merge_rate", "importance_weight",
                *[a for a in s.attributes][:4]]
        console.print(_table(ex, f"{len(ex)} example items", show))


# --------------------------------------------------------------------------- quality
@main.command()
@clustering_options
@click.option("--budget", required=True, type=int, help="Distinct pairs to get judged.")
@click.option("--seed", required=True, type=int, help="Random seed; same seed and inputs give the same pairs.")
@click.option("--slice-by", multiple=True,
              help="Attribute column(s) whose exact slice multipliers to store, for 'quality --slice-by'.")
@click.option("--estimator", type=click.Choice(["stratified", "paper"]), default="stratified", show_default=True,
              help="stratified: exact self term, split/merge/intersection strata (fewer judgements for the same "
                   "SE); paper: all pairs ∝ u_ij, the paper's design.")
@click.option("--allocation", type=click.Choice(["proportional", "neyman"]), default="proportional",
              show_default=True, help="Stratified budgets ∝ U_c, or ∝ U_c·σ_c (needs --pilot).")
@click.option("--pilot", type=click.Path(file_okay=False), default=None,
              help="A judged sample directory whose judgements estimate σ_c for Neyman allocation.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Sample directory to write.")
@click.option("--json", "as_json", is_flag=True)
@engine_options
@handle_errors
def pairs(base, exp, items, item_id, cluster_id, weight_column, budget, seed, slice_by, estimator, allocation, pilot,
          out, as_json, engine):
    """Sample item pairs ∝ u_ij for same/different judgements (ABCDE quality).

    Writes pairs.parquet (every draw, vantage item first), items.parquet, tasks.csv/.parquet/.jsonl
    (one row per pair to judge, attributes side by side, blind) and metadata.json.
    """
    if allocation == "neyman" and not pilot:
        raise click.UsageError("--allocation neyman needs --pilot DIR (a judged sample to estimate σ_c).")
    path = draw_pair_sample(base, exp, out, budget=budget, seed=seed, items=items, item_id=item_id,
                            cluster_id=cluster_id, weight=weight_column, slice_by=slice_by, estimator=estimator,
                            allocation=allocation, pilot=pilot, engine=engine)
    meta = json.loads((Path(path) / "metadata.json").read_text())
    if as_json:
        _emit_json(meta)
        return
    if meta["exhausted"]:
        console.print(f"[yellow]Only {meta['judgeable_pairs']:,} distinct pairs need a judgement "
                      f"(budget {budget:,}): all of them are in the sample.[/yellow]")
    t = meta["pair_totals"]
    console.print(_table([{"pairs to judge": meta["judgeable_pairs"], "draws": meta["draws"],
                           "Σu split": t["split"], "Σu merge": t["merge"], "Σu stable": t["stable"],
                           "Σu self": t["self"]}],
                         f"Pair sample (estimator: {meta.get('estimator', 'paper')}"
                         + (f", allocation: {meta['allocation']})" if meta.get("allocation") else ")")))
    console.print(f"wrote {path}/ (tasks.csv has the pairs to judge)")


class _JudgeGroup(click.Group):
    """``abcde judge DIR --oracle-column COL`` (the first form) still means ``abcde judge oracle ...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["oracle", *args]
        return super().parse_args(ctx, args)


@main.group(cls=_JudgeGroup)
def judge():
    """Collect judgements of a pair sample: people (web app), a model or LLM, or an oracle.

    Judgements of every source live in SAMPLE_DIR/judgements.sqlite (oracle: judgements.csv);
    'abcde quality SAMPLE_DIR --source person|model|oracle' estimates from one source.
    """


@judge.command("oracle")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--oracle-column", required=True,
              help="Items attribute holding the ground truth: equal values ⇒ same; null ⇒ unsure.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Judgement file to write (default SAMPLE_DIR/judgements.csv).")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def judge_oracle(sample_dir, oracle_column, out, as_json):
    """Fill a pair sample's judgements from a ground-truth column (oracle judge)."""
    from abcde.quality.judgements import read_table_file

    path = oracle_judge(sample_dir, oracle_column, out=out)
    answers = read_table_file(path, "judgements").column("judgement").to_pylist()
    counts = {k: answers.count(k) for k in ("same", "different", "unsure")}
    if as_json:
        _emit_json({"written": str(path), "source": "oracle", "rater": f"oracle:{oracle_column}",
                    "judgements": len(answers), "answers": counts})
        return
    console.print(f"wrote {path} (judgements by oracle column '{oracle_column}': {len(answers)} pairs; "
                  f"same {counts['same']}, different {counts['different']}, unsure {counts['unsure']})")


@judge.command("serve")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; the default serves only this machine.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--replicate", "--rater-share", "replicate", type=click.FloatRange(0, 1), default=None,
              help="Share of pairs to show to two raters, for agreement (Cohen's/Fleiss' kappa). "
                   "Stored on first use; default 0.")
@click.option("--seed", type=int, default=None, help="Seed of every rater's random pair order (stored; default 0).")
@click.option("--target-width", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Width of ΔPrecision's 95% interval after which the page says you can stop.")
@click.option("--hide", multiple=True, help="Item attribute not to show, e.g. a ground-truth column (repeatable).")
@click.option("--show-ids", is_flag=True, help="Show the item ids (they can give the answer away).")
@click.option("--adaptive", is_flag=True,
              help="Stratified samples: serve the next pair from the stratum whose judgement most reduces "
                   "ΔPrecision's SE (adaptive Neyman allocation); pair it with --target-width.")
@click.option("--verbose", is_flag=True, help="Log every request to stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the URL etc. as one JSON line, then serve.")
@handle_errors
def judge_serve(sample_dir, host, port, replicate, seed, target_width, hide, show_ids, adaptive, verbose, as_json):
    """A local web app where people judge the sample's pairs (blind, one at a time).

    Every judgement is committed to SAMPLE_DIR/judgements.sqlite before the next pair is shown;
    a restarted server resumes each rater where they stopped. Keys: s same, d different,
    u can't tell, z or Backspace undo.
    """
    from abcde.web.judging_server import serve

    srv = serve(sample_dir, host=host, port=port, seed=seed, replicate=replicate, target_width=target_width,
                hide=hide, show_ids=show_ids, verbose=verbose, adaptive=adaptive)
    s = srv.session
    info = {"url": srv.url, "pid": os.getpid(), "sample_dir": str(s.sample_dir), "store": str(s.store.path),
            "pairs": len(s.pair_ids), "replicated_pairs": len(s.replicated), "seed": s.seed,
            "replicate": s.replicate, "allocation": "adaptive Neyman" if s.adaptive else "as sampled"}
    if as_json:
        click.echo(json.dumps(info))
    else:
        click.echo(f"abcde judge: serving {len(s.pair_ids)} pairs of {sample_dir} at {srv.url} (Ctrl+C to stop); "
                   f"judgements go to {s.store.path}")
    sys.stdout.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    if not as_json:
        click.echo(f"stopped; {len(s.store.live(source='person'))} person judgements in {s.store.path}")


@judge.command("model")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--callable", "spec", default=None, metavar="MODULE:FUNCTION",
              help="A Python judge (item_a: dict, item_b: dict) -> 'same'|'different'|'unsure' "
                   "(MODULE may be path/to/file.py).")
@click.option("--model", default=None, help="LLM model name (env ABCDE_LLM_MODEL / OPENAI_MODEL).")
@click.option("--llm-base-url", default=None,
              help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (env ABCDE_LLM_BASE_URL / "
                   "OPENAI_BASE_URL; default https://api.openai.com/v1).")
@click.option("--api-key", default=None, help="API key (better: env ABCDE_LLM_API_KEY or OPENAI_API_KEY).")
@click.option("--prompt-template", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File with the user prompt; {item_a} and {item_b} are replaced by the items' attributes.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1),
              help="Judge calls in flight at once.")
@click.option("--max-retries", default=5, show_default=True, type=click.IntRange(min=0),
              help="Retries on HTTP 429/5xx, timeouts and connection errors.")
@click.option("--retry-backoff", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="First backoff in seconds, doubled on each retry (or the server's Retry-After).")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds per request.")
@click.option("--temperature", default=0.0, show_default=True, type=float, help="Sampling temperature sent.")
@click.option("--cache", type=click.Path(dir_okay=False), default=None,
              help="LLM answer cache (SQLite; default SAMPLE_DIR/llm-cache.sqlite); share it to never pay twice.")
@click.option("--name", default=None, help="Rater name suffix (judgements carry rater 'model:NAME').")
@click.option("--hide", multiple=True, help="Item attribute the judge must not see (repeatable).")
@click.option("--show-ids", is_flag=True, help="Give the judge the item ids too.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Judge at most this many pairs now.")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def judge_model(sample_dir, spec, model, llm_base_url, api_key, prompt_template, concurrency, max_retries,
                retry_backoff, timeout, temperature, cache, name, hide, show_ids, limit, as_json):
    """Judge the sample's pairs with a Python callable or an LLM (OpenAI-compatible API).

    Answers are recorded in SAMPLE_DIR/judgements.sqlite (source 'model') as they arrive; a run
    resumes where an earlier one stopped. Unparseable LLM answers count as unsure.
    """
    from abcde.judging import LLMJudge, judge_with_model
    from abcde.judging.models import load_callable

    llm_opts = {"--model": model, "--llm-base-url": llm_base_url, "--api-key": api_key,
                "--prompt-template": prompt_template, "--cache": cache}
    if spec:
        given = [k for k, v in llm_opts.items() if v]
        if given:
            raise click.UsageError(f"--callable judges in Python; {', '.join(given)} are LLM options.")
        judge_fn = load_callable(spec)
    else:
        template = Path(prompt_template).read_text() if prompt_template else None
        judge_fn = LLMJudge(base_url=llm_base_url, model=model, api_key=api_key, prompt_template=template,
                            cache=cache or Path(sample_dir) / "llm-cache.sqlite", max_retries=max_retries,
                            backoff=retry_backoff, timeout=timeout, temperature=temperature)
    res = judge_with_model(sample_dir, judge_fn, name=name, concurrency=concurrency, hide=hide, show_ids=show_ids,
                           limit=limit)
    d = res.to_dict()
    if as_json:
        _emit_json(d)
        return
    a = d["answers"]
    console.print(f"{res.rater}: judged {res.judged_now} pairs now (same {a['same']}, different {a['different']}, "
                  f"unsure {a['unsure']}); {res.already} were judged before; {res.pairs} in the sample.")
    if res.invalid:
        console.print(f"[yellow]{res.invalid} answers were not same/different/unsure: recorded as unsure.[/yellow]")
    if res.stats:
        console.print("judge: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in res.stats.items()))
    console.print(f"stored in {res.store}; estimate with: abcde quality {sample_dir} --source model")


@judge.command("export")
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Judgement file to write (.csv, .parquet or .jsonl), readable by 'abcde quality --judgements'.")
@click.option("--source", type=click.Choice(["person", "model", "oracle"]), default=None,
              help="Export only this source's judgements.")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def judge_export(sample_dir, out, source, as_json):
    """Write the store's judgements (SAMPLE_DIR/judgements.sqlite) as a judgement file, with agreement."""
    from collections import Counter

    from abcde.judging import JudgementStore, agreement

    if not (Path(sample_dir) / "judgements.sqlite").exists():
        raise AbcdeError(f"There is no judgement store (judgements.sqlite) in '{sample_dir}'; "
                         "'abcde judge serve' and 'abcde judge model' make one.")
    store = JudgementStore(sample_dir)
    path = store.export(out, source=source)
    live = store.live(source=source)
    d = {"written": str(path), "judgements": len(live), "pairs_judged": len({j.pair_id for j in live}),
         "pairs": len(store.pair_ids), "by_source": dict(Counter(j.source for j in live)),
         "by_rater": dict(Counter(j.rater for j in live)),
         "person_agreement": agreement([j for j in live if j.source == "person"])}
    if as_json:
        _emit_json(d)
        return
    console.print(f"wrote {path}: {d['judgements']} judgements of {d['pairs_judged']} / {d['pairs']} pairs "
                  f"(by source: {', '.join(f'{k} {v}' for k, v in d['by_source'].items()) or 'none'})")
    ag = d["person_agreement"]
    if ag["replicated_pairs"]:
        k = ag["fleiss_kappa"]
        console.print(f"pairs judged by two people: {ag['replicated_pairs']}; Fleiss' kappa "
                      f"{'n/a' if k is None else f'{k:.3f}'}")


def print_quality(d: dict) -> None:
    how = f"estimator: {d['estimator']}" + (f", allocation: {d['allocation']}" if d.get("allocation") else "")
    t = Table(title=f"Quality of Exp relative to Base (estimates, 95% intervals; {how})", title_justify="left")
    for c in ("metric", "estimate", "± s.e.", "95% interval", "judged"):
        t.add_column(c, justify="left" if c == "metric" else "right")
    for key in QUALITY_METRICS:
        label = METRIC_LABELS[key]
        e = d[key]
        if e["estimate"] is None:
            t.add_row(label, "undefined", "", e.get("note", ""), str(e["n_judgements"]))
            continue
        ci = "n/a" if e["ci_low"] is None else f"[{e['ci_low']:.4f}, {e['ci_high']:.4f}]"
        se = "n/a" if e["std_err"] is None else f"{e['std_err']:.4f}"
        t.add_row(label, f"{e['estimate']:.4f}", se, ci, str(e["n_judgements"]))
    console.print(t)
    console.print(f"SplitRate {d['split_rate']:.4f} = Good + Bad; MergeRate {d['merge_rate']:.4f} = Good + Bad. "
                  f"Pairs judged: {d['judged_pairs']}, unsure: {d['unsure_pairs']}, "
                  f"not judged: {d['missing_pairs']}; rater disagreements: {d['rater_disagreements']} "
                  f"(ties ⇒ unsure: {d['rater_ties']}).")
    for col, rows in d.get("slices", {}).items():
        flat = [{col: r["value"], "weight": r["weight"], "draws": r["sampled_draws"],
                 "ΔPrecision": r["delta_precision"]["estimate"], "± s.e.": r["delta_precision"]["std_err"],
                 "contribution": r["delta_precision_contribution"]["estimate"]} for r in rows]
        console.print(_table(flat, f"ΔPrecision by {col} (vantage items)"))


@main.command()
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--judgements", "judgements", multiple=True, type=click.Path(dir_okay=False),
              help="Judgement file(s) (CSV/Parquet/JSONL/.sqlite store); default SAMPLE_DIR/judgements.csv "
                   "and SAMPLE_DIR/judgements.sqlite.")
@click.option("--slice-by", multiple=True, help="ΔPrecision per value of this vantage-item attribute.")
@click.option("--source", type=click.Choice(["person", "model", "oracle"]), default=None,
              help="Use only the judgements of this source (default: all).")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def quality(sample_dir, judgements, slice_by, source, as_json):
    """ΔPrecision and Good/Bad Split/Merge rates with standard errors, from judged pairs.

    Default judgements: SAMPLE_DIR/judgements.csv and the store SAMPLE_DIR/judgements.sqlite.
    """
    res = estimate_quality(sample_dir, list(judgements) or None, slice_by=slice_by, source=source)
    d = res.to_dict()
    if as_json:
        _emit_json(d)
        return
    print_quality(d)


# --------------------------------------------------------------------------- report
@main.command()
@clustering_options
@click.option("--slice-by", multiple=True, help="Attribute column(s) to slice by; repeat, or 'a,b' to group by both.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=0), help="Most affected clusters per side.")
@click.option("--quality", "quality_dir", type=click.Path(file_okay=False), default=None,
              help="A judged pair sample directory (from 'abcde pairs'): adds the quality estimates.")
@click.option("--judgements", multiple=True, type=click.Path(dir_okay=False),
              help="Judgement file(s) for --quality (default: QUALITY/judgements.csv).")
@click.option("--judged-by", default=None, help="Who judged, shown beside every quality number (e.g. 'people').")
@click.option("--quality-slice-by", multiple=True, help="ΔPrecision per value of this vantage-item attribute.")
@click.option("--sample", "sample_path", type=click.Path(dir_okay=False), default=None,
              help="An exploration sample (from 'abcde explore sample'): adds its top groups.")
@click.option("--explore-by", multiple=True, help="Attributes to group the exploration sample by.")
@click.option("--title", default="ABCDE report", show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The HTML report to write.")
@click.option("--markdown", type=click.Path(dir_okay=False), default=None,
              help="Also write a Markdown summary (for a code review comment) here.")
@click.option("--json", "as_json", is_flag=True, help="Print the report's content as one JSON object.")
@engine_options
@handle_errors
def report(base, exp, items, item_id, cluster_id, weight_column, slice_by, top, quality_dir, judgements, judged_by,
           quality_slice_by, sample_path, explore_by, title, out, markdown, as_json, engine):
    """One self-contained HTML report: impact, most affected clusters, charts, slices, quality."""
    from abcde.report import build_report

    res = run_impact(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight_column,
                     slice_by=slice_by, top=top, engine=engine)
    qual = None
    if quality_dir:
        qual = estimate_quality(quality_dir, list(judgements) or None, slice_by=quality_slice_by)
        judged_by = judged_by or f"the judgements in {quality_dir}"
    elif judgements or quality_slice_by:
        raise click.UsageError("--judgements and --quality-slice-by need --quality DIR.")
    sample = ExplorationSample.read(sample_path) if sample_path else None
    rep = build_report(res, quality=qual, judged_by=judged_by, exploration=sample, explore_by=explore_by,
                       title=title)
    written = rep.write(out, markdown=markdown)
    if as_json:
        _emit_json({**rep.to_dict(), "written": [str(p) for p in written]})
        return
    print_impact(res, top=min(top, 10))
    if qual is not None:
        print_quality(rep.to_dict()["quality"])
    for p in written:
        console.print(f"wrote {p}")


# --------------------------------------------------------------------------- demo
ORACLE_LABEL = "an oracle (simulated judgements from the example's true entity ids), not people"


@main.command()
@click.option("--out", type=click.Path(file_okay=False), default="abcde-demo", show_default=True,
              help="Where to write the outputs.")
@click.option("--json", "as_json", is_flag=True)
@engine_options
@handle_errors
def demo(out, as_json, engine):
    """Run the main job on the bundled example data (FEBRL 3 people records).

    Base and Exp are two record-linkage rules; see the example's README.
    """
    from abcde.examples import example_paths

    paths = example_paths("febrl3")
    res = run_impact(paths["base"], paths["exp"], items=paths["items"], slice_by=["state", "source"],
                     top=10, engine=engine)
    written = res.write(Path(out) / "impact")
    # Exploration: an importance sample of affected items, grouped by an attribute.
    sample = sample_affected(res, size=1000, seed=0, inputs={k: str(paths[k]) for k in ("base", "exp", "items")})
    sample_path = sample.write(Path(out) / "explore" / "sample.parquet")
    written.append(sample_path)
    groups = sample.group(["state"], top=5)
    # Quality: pairs for judgement, judged here by the ORACLE (the example's true entity ids), then estimates.
    pair_dir = draw_pair_sample(paths["base"], paths["exp"], Path(out) / "quality", items=paths["items"],
                                budget=300, seed=0, slice_by=["source"], engine=engine)
    judgements = oracle_judge(pair_dir, "entity_id")
    qual = estimate_quality(pair_dir, slice_by=["source"]).to_dict()
    written += [pair_dir / "tasks.csv", judgements]
    # The example ships its true entities, so the pointwise metrics of each side can be shown too.
    truth = {side: run_pointwise(paths["truth"], paths[side], items=paths["items"], engine=engine)
             for side in ("base", "exp")}
    # The report: one self-contained HTML page (and a Markdown summary) of all of the above.
    from abcde.report import build_report

    rep = build_report(res, quality=qual, judged_by=ORACLE_LABEL, exploration=sample, explore_by=["state", "source"],
                       title="ABCDE report: FEBRL 3 example (two record-linkage rules)")
    written += rep.write(Path(out) / "report.html", markdown=Path(out) / "report.md")
    if as_json:
        _emit_json({"impact": res.to_dict(),
                    "explore": {"sample": sample.metadata, "groups_by_state": [g.to_dict() for g in groups]},
                    "quality": {"judged_by": ORACLE_LABEL, **qual},
                    "pointwise_against_truth": {k: v.to_dict() for k, v in truth.items()},
                    "written": [str(p) for p in written]})
        return
    console.print(f"[bold]Example data:[/bold] {paths['base'].parent}")
    print_impact(res, top=10)
    console.print(_table([_estimate_row(g) for g in groups],
                         f"Exploration sample ({sample.metadata['unique_items']:,} affected items drawn ∝ "
                         "weight·JaccardDistance): top states by estimated Jaccard contribution",
                         ["state", "sampled_items", "weight_share", "split_contribution", "merge_contribution",
                          "jaccard_contribution", "jaccard_contribution_se"]))
    console.print("[bold]Quality[/bold]: 300 pairs sampled (stratified: exact self term, split/merge/intersection "
                  "strata ∝ u_ij) and judged by an [bold]oracle[/bold] (the example's true entity ids), not by people:")
    print_quality(qual)
    t = Table(title="Against the example's true entities (FEBRL ground truth)", title_justify="left")
    for c in ("clustering", "Precision", "Recall", "F1"):
        t.add_column(c, justify="left" if c == "clustering" else "right")
    for side, r in truth.items():
        t.add_row(side, _pct(r.precision), _pct(r.recall), _pct(r.f1))
    console.print(t)
    for p in written:
        console.print(f"wrote {p}")
    console.print(f"\n[bold]Open {Path(out) / 'report.html'} in a browser[/bold] (works offline). Explore the sample "
                  f"interactively with: abcde explore serve {sample_path}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
