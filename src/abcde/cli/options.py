"""The click options that several commands share: engine, inputs, clusterings, ``--json``.

Only click is imported here; :func:`engine_options` imports the engine when a
command runs, not when ``abcde --help`` builds the command list.
"""

from __future__ import annotations

import functools

import click

from abcde.errors import AbcdeError


def _spark_conf(ctx, param, values):
    conf = {}
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", ctx=ctx, param=param)
        k, _, val = v.partition("=")
        conf[k.strip()] = val.strip()
    return conf


def engine_options(fn):
    """--engine, --database, --memory-limit, --threads, --temp-directory, --spark-master, --spark-remote,
    --spark-conf, --quiet.

    The command receives ``engine``: a connected :class:`abcde.engine.Engine`.
    """

    @click.option("--engine", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
                  help="Engine that runs the computation: embedded DuckDB, or PySpark.")
    @click.option("--database", type=click.Path(dir_okay=False), default=None,
                  help="DuckDB database file (default: in memory).")
    @click.option("--memory-limit", default=None,
                  help="Engine memory limit, e.g. 4GB; beyond it DuckDB spills to disk, and large inputs are "
                       "joined in buckets sized by it (Spark: driver memory).")
    @click.option("--threads", type=click.IntRange(min=1), default=None,
                  help="Engine threads (Spark: local[N] when no --spark-master).")
    @click.option("--temp-directory", type=click.Path(file_okay=False), default=None,
                  help="Where DuckDB spills beyond --memory-limit and abcde writes large intermediate parts "
                       "(default: the system's temporary directory; give a disk with room at billions of items).")
    @click.option("--spark-master", default=None,
                  help="Spark master: local[2], spark://host:7077, yarn, ... (default: the active session "
                       "under spark-submit, else local[*]).")
    @click.option("--spark-remote", default=None, help="Spark Connect URL, e.g. sc://host:15002.")
    @click.option("--spark-conf", multiple=True, callback=_spark_conf, metavar="KEY=VALUE",
                  help="Spark setting for a new session (repeatable).")
    @click.option("--quiet", "-q", is_flag=True, help="No progress display.")
    @functools.wraps(fn)
    def wrapper(*args, engine, database, memory_limit, threads, temp_directory, spark_master, spark_remote, spark_conf,
                quiet, **kwargs):
        from abcde.util import progress  # lazy: start-up time

        # per command (a notebook or a test runs several in one process): -q off, else the default;
        # the default again after it, so -q does not silence later library calls in the process
        progress.set_enabled(False if quiet else None)
        try:
            return _run(*args, engine=engine, database=database, memory_limit=memory_limit, threads=threads,
                        temp_directory=temp_directory, spark_master=spark_master, spark_remote=spark_remote,
                        spark_conf=spark_conf, **kwargs)
        finally:
            progress.set_enabled(None)

    def _run(*args, engine, database, memory_limit, threads, temp_directory, spark_master, spark_remote, spark_conf,
             **kwargs):
        if engine != "spark" and (spark_master or spark_remote or spark_conf):
            raise click.UsageError("--spark-master, --spark-remote and --spark-conf need --engine spark.")
        if engine == "spark" and database:
            raise click.UsageError("--database is a DuckDB setting; Spark reads and writes Parquet paths.")
        from abcde.engine import connect  # lazy: start-up time

        try:
            eng = connect(engine, database=database, memory_limit=memory_limit, threads=threads,
                          temp_directory=temp_directory, master=spark_master, remote=spark_remote,
                          spark_conf=spark_conf)
        except AbcdeError as exc:
            raise click.ClickException(str(exc)) from exc
        try:
            return fn(*args, engine=eng, **kwargs)
        finally:
            try:  # the command is done with it: a database file closed whole, temporary tables dropped
                eng.close()
            except Exception:  # never hide the command's own outcome
                pass

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


def clustering_options(fn=None, *, required: bool = True):
    """--base, --exp and the input options; ``@clustering_options`` or
    ``@clustering_options(required=False)`` (the command then checks what it needs)."""

    def decorate(fn):
        @click.option("--base", required=required, type=click.Path(), help="Baseline clustering (Parquet/CSV).")
        @click.option("--exp", required=required, type=click.Path(), help="Experiment clustering (Parquet/CSV).")
        @input_options
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper

    return decorate(fn) if fn is not None else decorate


def json_option(fn=None, *, help: str | None = None):
    """``--json`` (the parameter ``as_json``); ``@json_option`` or ``@json_option(help="...")``."""
    decorator = click.option("--json", "as_json", is_flag=True,
                             help=help or "Print one JSON object instead of tables (values that are undefined "
                                          "are null, listed under 'undefined').")
    return decorator(fn) if fn is not None else decorator


def _whole(ctx, param, n):
    """A whole number of entities as an int (as given: 2000, not 2000.0), else the number."""
    return int(n) if n is not None and float(n).is_integer() else n


def truth_sample_options(then: str):
    """``--truth-sample DESIGN`` and ``--population-entities N`` (issue 41), for every command that
    takes a truth; ``then`` says what the command does with a design."""
    def decorate(fn):
        fn = click.option("--population-entities", type=click.FloatRange(min=1), default=None, metavar="N",
                          callback=_whole,
                          help="With --truth-sample uniform: the number of entities in the population (default: "
                               "estimated from the truth's mean entity size).")(fn)
        fn = click.option("--truth-sample", "truth_sample", default=None, metavar="DESIGN",
                          help="How the --truth's entities were sampled (it lists every item of each): 'uniform' (a "
                               "simple random sample of entities) or the name of its column of each entity's "
                               f"inclusion probability. {then}")(fn)
        return click.option("--truth-column", "truth_column", default=None, metavar="COL",
                            help="The ground truth is this column of --items (each item's true entity), instead of a "
                                 "--truth file; the pair sample hides it from judges.")(fn)
    return decorate


def resolve_truth(truth, truth_column, items, truth_sample, population_entities) -> tuple:
    """``(truth, truth_cluster_id)`` from ``--truth FILE`` or ``--truth-column COL`` (the truth read from
    ``--items``), with the usage errors of a design without a truth and a population size without a design
    (:func:`check_truth_sample_options`)."""
    if truth_column is not None:
        if truth:
            raise click.UsageError("Give --truth FILE or --truth-column COL (a column of --items), not both.")
        if not items:
            raise click.UsageError(f"--truth-column {truth_column} is a column of --items: give --items FILE.")
        if not str(truth_column).strip():
            raise click.UsageError("--truth-column needs a column name of --items.")
        truth = items
    check_truth_sample_options(truth, truth_sample, population_entities)
    return truth, truth_column


def check_truth_sample_options(truth, truth_sample, population_entities) -> None:
    """A usage error for --truth-sample without --truth, and --population-entities without
    --truth-sample (the commands that take a truth share it)."""
    if truth_sample is not None and not truth:
        raise click.UsageError("--truth-sample is the design of the ground truth's sample of entities: it needs "
                               "--truth (or --truth-column).")
    if population_entities is not None and truth_sample is None:
        raise click.UsageError("--population-entities is the number of entities the truth's sample was drawn from: it "
                               "needs --truth-sample uniform.")
