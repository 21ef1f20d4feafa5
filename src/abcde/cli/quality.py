"""``abcde pairs`` and ``abcde quality``: the pair sample to judge and the quality
estimates from its judgements (:mod:`abcde.quality`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from abcde.cli.options import clustering_options, engine_options, input_options, json_option
from abcde.cli.tables import console, emit_json, handle_errors, print_ppi, print_quality, table
from abcde.errors import InputError


def draw_options(fn):
    """The options of a pair sample's draw, shared by ``pairs`` and ``precision``."""
    for option in reversed([
        click.option("--budget", type=int, default=None,
                     help="Distinct pairs to get judged (required, except with --extend --human-budget)."),
        click.option("--human-budget", type=int, default=None,
                     help="People judge a random subset of this many of the --budget pairs (the task files and "
                          "the judging app show only those); a model judges them all (judge model), and "
                          "'abcde quality' combines both without bias (prediction-powered)."),
        click.option("--seed", type=int, default=None, help="Random seed; same seed and inputs give the same pairs."),
        click.option("--slice-by", multiple=True,
                     help="Attribute column(s) whose exact slice multipliers to store, for 'quality --slice-by'."),
        click.option("--estimator", type=click.Choice(["stratified", "paper"]), default="stratified",
                     show_default=True,
                     help="stratified: exact self term; split, merge and the intersection by the sign of its term "
                          "as strata, a stratum whose budget covers its pairs judged whole (fewer judgements for "
                          "the same SE); paper: all pairs ∝ u_ij, the paper's design. Both draw agreed pairs (together in both) for the recall lift."),
        click.option("--allocation", type=click.Choice(["proportional", "neyman"]), default="proportional",
                     show_default=True, help="Stratified budgets ∝ U_c, or ∝ U_c·σ_c (needs --pilot)."),
        click.option("--pilot", type=click.Path(file_okay=False), default=None,
                     help="A judged sample directory whose judgements estimate σ_c for Neyman allocation."),
        click.option("--out", type=click.Path(file_okay=False), default=None, help="Sample directory to write."),
        click.option("--hide", multiple=True,
                     help="Item attribute not to show to judges, e.g. a ground-truth column (repeatable; kept for "
                          "'judge serve' and 'judge model')."),
        click.option("--show-ids", is_flag=True,
                     help="Show item ids in the tasks and to judges (they can give the answer away)."),
        click.option("--force", is_flag=True,
                     help="Replace another sample in --out; it and its judgements are moved to OUT/replaced/ "
                          "(never deleted)."),
    ]):
        fn = option(fn)
    return fn


@click.command()
@clustering_options(required=False)
@draw_options
@click.option("--extend", "extend", type=click.Path(file_okay=False), default=None,
              help="Grow this sample directory to --budget pairs, continuing its draws (same seed, strata, "
                   "slices): its judgements stay valid. The inputs default to the ones it was drawn from.")
@json_option
@engine_options
@handle_errors
def pairs(base, exp, items, item_id, cluster_id, weight_column, budget, human_budget, seed, slice_by, estimator,
          allocation, pilot, out, extend, hide, show_ids, force, as_json, engine):
    """Sample item pairs ∝ u_ij for same/different judgements (ABCDE quality).

    Writes pairs.parquet (every draw, vantage item first), items.parquet, tasks.csv/.parquet/.jsonl
    (one row per pair to judge: a pair id and the attributes side by side, blind: no ids, weights,
    classes or --hide columns) and metadata.json.

    With --extend DIR, the sample in DIR grows to --budget pairs: the same draws and more (exactly
    what a fresh draw at that budget gives), its judgements kept and still valid.
    """
    ctx = click.get_current_context()
    if extend:
        given = [f"--{p.replace('_', '-')}" for p in ("seed", "out", "slice_by", "pilot", "hide", "force")
                 if ctx.get_parameter_source(p) == click.core.ParameterSource.COMMANDLINE]
        given += [o for o, p in (("--estimator", "estimator"), ("--allocation", "allocation"), ("--show-ids", "show_ids"),
                                 ("--item-id", "item_id"), ("--cluster-id", "cluster_id"),
                                 ("--weight-column", "weight_column"))
                  if ctx.get_parameter_source(p) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"--extend continues a sample with its own settings; leave out {', '.join(given)}.")
        from abcde.quality.draw import extend_pair_sample  # lazy: start-up time

        if budget is None and human_budget is None:
            raise click.UsageError("--extend needs a larger --budget, --human-budget or both.")
        path = extend_pair_sample(extend, budget=budget, base=base, exp=exp, items=items, engine=engine,
                                  human_budget=human_budget)
    else:
        missing = [o for o, v in (("--base", base), ("--exp", exp), ("--budget", budget), ("--seed", seed),
                                  ("--out", out)) if v is None]
        if missing:
            raise click.UsageError(f"Missing option(s) {', '.join(missing)} (or --extend DIR to grow a sample).")
        if allocation == "neyman" and not pilot:
            raise click.UsageError("--allocation neyman needs --pilot DIR (a judged sample to estimate σ_c).")
        from abcde.quality.draw import draw_pair_sample  # lazy: start-up time

        path = draw_pair_sample(base, exp, out, budget=budget, seed=seed, items=items, item_id=item_id,
                                cluster_id=cluster_id, weight=weight_column, slice_by=slice_by, estimator=estimator,
                                allocation=allocation, pilot=pilot, force=force, hide=hide, show_ids=show_ids,
                                engine=engine, human_budget=human_budget)
    print_sample(path, as_json=as_json, extended=bool(extend))


def print_sample(path, *, as_json: bool, extended: bool = False) -> None:
    """What a drawn pair sample holds (its metadata with ``--json``)."""
    meta = json.loads((Path(path) / "metadata.json").read_text())
    if as_json:
        emit_json(meta)
        return
    if meta["exhausted"]:
        console().print(f"Only {meta['judgeable_pairs']:,} distinct pairs need a judgement "
                        f"(budget {meta['budget']:,}): all of them are in the sample.", style="yellow")
    t = meta["pair_totals"]
    row = {"pairs to judge": meta["judgeable_pairs"], "draws": meta["draws"], "Σu split": t["split"],
           "Σu merge": t["merge"]}
    strata = list(meta.get("budgets") or ())
    inter = [c for c in strata if c.startswith("intersection")] or ["intersection"]
    row.update({f"Σu {c}": t[c] for c in inter})
    row["Σu self"] = t["self"]
    console().print(table([row], f"Pair sample (estimator: {meta.get('estimator', 'paper')}"
                          + (f", allocation: {meta['allocation']})" if meta.get("allocation") else ")")))
    if meta.get("budgets"):
        counts = meta.get("pair_counts") or {}
        census = set(meta.get("census") or ())
        masses = (meta.get("recall") or {}).get("masses") or {}
        console().print(table([{"stratum": c, "pairs to judge": meta["budgets"][c],
                                "pairs in the stratum": counts.get(c), "Σu": t.get(c, 0.0),
                                "judged whole": "yes (census)" if c in census else ""} for c in strata],
                              "Strata (pairs to judge per stratum; a stratum judged whole is exact once judged)"))
        if "agreed" in strata:
            console().print("The agreed stratum (pairs together in both clusterings, drawn ∝ w_i·w_j) is no part of "
                            "ΔPrecision (Σu 0); with the split and merge pairs it gives the recall lift (pair masses "
                            + ", ".join(f"{k} {v:.4g}" for k, v in masses.items()) + ", of W²).", soft_wrap=True)
    if meta.get("agreed_budget"):  # the paper's design: the agreed pairs drawn beside its own draws
        masses = (meta.get("recall") or {}).get("masses") or {}
        whole = " (every one of them: a census)" if "agreed" in (meta.get("census") or ()) else ""
        console().print(f"Of the {meta['judgeable_pairs']:,} pairs to judge, {meta['agreed_budget']:,} are agreed pairs"
                        f"{whole} (together in both clusterings, drawn ∝ w_i·w_j beside the paper's draws): no part of "
                        "ΔPrecision; with the split and merge pairs they give the recall lift (pair masses "
                        + ", ".join(f"{k} {v:.4g}" for k, v in masses.items()) + ", of W²).", soft_wrap=True)
    people = meta.get("people")
    if people:
        order = [c for c in (meta.get("budgets") or ("split", "merge", "intersection")) if c in people["pairs"]]
        console().print(table([{"stratum" if meta.get("budgets") else "class": c, "pairs": people["pairs"][c],
                                "people's tasks": people["budgets"][c],
                                "inclusion": people["budgets"][c] / people["pairs"][c] if people["pairs"][c] else 0.0}
                               for c in order + [c for c in people["pairs"] if c not in order]],
                              f"People's tasks: {people['tasks']:,} of the {meta['judgeable_pairs']:,} pairs (a random "
                              "subset of each; a model judges every pair)"))
        from abcde.samples.people_tasks import tasks_note  # lazy: start-up time

        if tasks_note(people):  # not the number asked (--human-budget): why
            console().print(tasks_note(people)[:1].upper() + tasks_note(people)[1:] + ".", soft_wrap=True)
        console().print(f"wrote {path}/ (tasks.csv has the people's {people['tasks']:,} pairs to judge; "
                        f"'abcde judge model {path} …' judges all {meta['judgeable_pairs']:,})")
    else:
        console().print(f"wrote {path}/ (tasks.csv has the pairs to judge)")
    if meta.get("target") == "precision":
        console().print("Judge the pairs (abcde judge serve / model / oracle), then 'abcde quality "
                        f"{path}' gives the clustering's Precision with its 95% interval.")
    if extended:
        was = meta["extends"][-1]
        console().print(f"Extended from {was['judgeable_pairs']:,} to {meta['judgeable_pairs']:,} pairs to judge"
                        + (f" and from {was['people_tasks']:,} to {people['tasks']:,} people's tasks"
                           if people and "people_tasks" in was else "")
                        + ": the earlier draws are kept, and so are their judgements.")
    replaced = meta.get("replaced")
    if replaced:
        what = ", ".join(replaced["files"]) if replaced.get("files") else f"the earlier sample {replaced['sample_id']} " \
            "and its judgements"
        console().print(f"Moved {what} to {replaced['moved_to']}/ (nothing was deleted).", style="yellow")


@click.command()
@click.option("--clustering", required=True, type=click.Path(), help="The clustering whose Precision to estimate "
              "(Parquet/CSV: item id and cluster id).")
@input_options
@draw_options
@json_option
@engine_options
@handle_errors
def precision(clustering, items, item_id, cluster_id, weight_column, budget, human_budget, seed, slice_by, estimator,
              allocation, pilot, out, hide, show_ids, force, as_json, engine):
    """Sample pairs inside one clustering's clusters to estimate its absolute Precision.

    ABCDE with Base = every item alone (Precision 1) and Exp = --clustering: each pair to judge is
    two items of one cluster, and Precision = 1 + ΔPrecision. Judge the sample like any other
    ('abcde judge serve DIR', a model, the oracle); 'abcde quality DIR' then gives the Precision
    with its 95% interval (per slice with --slice-by). Writes the files of 'abcde pairs'.
    """
    missing = [o for o, v in (("--budget", budget), ("--seed", seed), ("--out", out)) if v is None]
    if missing:
        raise click.UsageError(f"Missing option(s) {', '.join(missing)}.")
    if allocation == "neyman" and not pilot:
        raise click.UsageError("--allocation neyman needs --pilot DIR (a judged sample to estimate σ_c).")
    from abcde.quality.draw import draw_precision_sample  # lazy: start-up time

    path = draw_precision_sample(clustering, out, budget=budget, seed=seed, items=items, item_id=item_id,
                                 cluster_id=cluster_id, weight=weight_column, slice_by=slice_by, estimator=estimator,
                                 allocation=allocation, pilot=pilot, force=force, hide=hide, show_ids=show_ids,
                                 engine=engine, human_budget=human_budget)
    print_sample(path, as_json=as_json)


@click.command()
@click.argument("sample_dir", type=click.Path(file_okay=False))
@click.option("--judgements", "judgements", multiple=True, type=click.Path(dir_okay=False),
              help="Judgement file(s) (CSV/Parquet/JSONL/.sqlite store); default SAMPLE_DIR/judgements.csv "
                   "and SAMPLE_DIR/judgements.sqlite.")
@click.option("--slice-by", multiple=True, help="ΔPrecision per value of this vantage-item attribute.")
@click.option("--source", type=click.Choice(["person", "model", "oracle"]), default=None,
              help="Use only the judgements of this source (default: all; the output says how many of each "
                   "source were used).")
@click.option("--distances/--no-distances", default=True, show_default=True,
              help="Also JaccardDistance = good + bad (GoodSplitDistance, BadSplitDistance, GoodMergeDistance, "
                   "BadMergeDistance) from the same judged pairs; their exact parts are stored in the sample when it "
                   "is drawn (a sample drawn by an earlier abcde reads its inputs again, fingerprints checked).")
@json_option
@handle_errors
def quality(sample_dir, judgements, slice_by, source, distances, as_json):
    """ΔPrecision and Good/Bad Split/Merge rates with standard errors, from judged pairs.

    Then JaccardDistance = SplitDistance + MergeDistance split into its good and bad parts, from the
    same judged pairs (no new judgements; --no-distances leaves them out).

    Default judgements: SAMPLE_DIR/judgements.csv and the store SAMPLE_DIR/judgements.sqlite, every
    source (person, model, oracle); the last line (and 'judgements_used' in the JSON output) says how many
    judgements of each source went into the estimates.
    """
    from abcde.completion import is_entity_sample  # lazy: start-up time

    if is_entity_sample(sample_dir):
        return _entity_quality(sample_dir, judgements, slice_by, source, as_json)
    from abcde.quality.estimate import estimate_quality  # lazy: start-up time

    res = estimate_quality(sample_dir, list(judgements) or None, slice_by=slice_by, source=source,
                           distances=distances)
    d = res.to_dict()
    used = d["design"]["judgements_used"]
    if as_json:
        emit_json({**d, "judgements_used": used})
        return
    print_quality(d)
    if d["design"].get("ppi"):
        print_ppi(d["design"]["ppi"])
    text = judgements_used_text(used)
    console().print(text, style="yellow" if len(used["by_source"]) > 1 else "", soft_wrap=True)


def _entity_quality(sample_dir, judgements, slice_by, source, as_json: bool) -> None:
    """``abcde quality DIR`` on an entity sample: ΔRecall, IQ and the ΔPrecision cross-check."""
    from abcde.cli.entities import print_entity_quality  # lazy: start-up time
    from abcde.completion import estimate_entities  # lazy: start-up time

    if judgements:
        raise InputError("--judgements is for pair samples: an entity sample's answers are read from its own files "
                         "(SAMPLE_DIR/entity_judgements.parquet, .sqlite and entity_model_judgements.parquet); "
                         "--source chooses among them.")
    d = estimate_entities(sample_dir, slice_by=slice_by, source=source).to_dict()
    if as_json:
        emit_json(d)
        return
    print_entity_quality(d)


def judgements_used_text(used: dict) -> str:
    """Which judgements went into the estimates, by source, in one sentence: "Judgements used: 300
    oracle, 12 person by 2 raters (every source; pass --source to use one)."."""
    by = used["by_source"]
    if not by:
        what = "none"
    else:
        what = ", ".join(f"{n:,} {src}" for src, n in sorted(by.items(), key=lambda kv: -kv[1]))
        what += f" by {used['raters']:,} rater{'s' if used['raters'] != 1 else ''}"
    if used.get("source"):
        left = used.get("left_out") or {}
        rest = f"; left out: {', '.join(f'{n:,} {s}' for s, n in left.items())}" if left else ""
        return f"Judgements used: {what} (--source {used['source']}{rest})."
    if len(by) > 1:
        return f"Judgements used: {what} (every source; pass --source person, model or oracle to use one)."
    return f"Judgements used: {what}."
