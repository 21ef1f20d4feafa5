"""What the commands print: rich tables, number formatting, JSON, and clean errors.

Rich is imported when something is printed, not when a command module is
imported, so ``abcde --help`` and ``--json`` runs never load it. The renderers
shared by several commands (an impact result, quality estimates, the
restriction to the common items, an exploration estimate) live here too.

Every table and message goes through :func:`console` (``abcde.util.display.safe_console``): a string
is printed as the text it is, never read as rich markup or an emoji code, with its control
characters shown (an id ``[/]``, ``[bold]x``, an escape sequence, a bidi override from data, a path
or an option). A message styles its own words with :func:`styled` (markup whose fields are put in as
text) or ``style=``. Error messages, which click prints, are made safe by the ``abcde`` group
(``cli.group``), every one of them, abcde's and click's own.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from typing import TYPE_CHECKING

import click

from abcde.core.names import DISTANCE_PARTS, METRIC_LABELS, QUALITY_COLUMNS, QUALITY_METRICS, RECALL_METRIC
from abcde.errors import AbcdeError
from abcde.util.display import (NULL_TEXT, count, estimate, estimate_interval, four, interval, pct, safe_console,
                                safe_text, weight, zero_se_note)
from abcde.util.display import styled  # noqa: F401  (for the commands: a message styled around data)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from abcde.metrics.impact import ImpactResult

_console: Console | None = None


def console() -> Console:
    """The console every command prints to (stdout; 120 columns when not a terminal): every string
    on it is the text it is (``abcde.util.display.safe_console``); styles come from :func:`styled`."""
    global _console
    if _console is None:
        _console = safe_console(width=None if sys.stdout.isatty() else 120)
    return _console


def fmt(v) -> str:
    """A cell: floats to 6 significant digits, NaN as n/a, null as (null), anything else as ``str``."""
    if v is None:
        return NULL_TEXT
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:.6g}"
    return str(v)


#: Column headers of the row tables (key -> header); other keys are shown as they are.
HEADERS = {
    "split_rate": METRIC_LABELS["split_rate"],
    "merge_rate": METRIC_LABELS["merge_rate"],
    "jaccard_distance": METRIC_LABELS["jaccard_distance"],
    **{k: METRIC_LABELS[k] for k in DISTANCE_PARTS},
    "cluster_id": "cluster",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "sampled_items": "sampled items",
    "weight_share": "weight share",
    "split_contribution": f"{METRIC_LABELS['split_rate']} contribution",
    "merge_contribution": f"{METRIC_LABELS['merge_rate']} contribution",
    "jaccard_contribution": f"{METRIC_LABELS['jaccard_distance']} contribution",
    "jaccard_contribution_se": "± s.e.",
    "importance_weight": "w(i)",
}
#: Left-aligned columns (ids and names); the rest are numbers, right-aligned.
LEFT = {"side", "cluster_id", "item_id", "base_cluster", "exp_cluster"}
#: Columns holding a rate or a share, shown as percentages (util.display.pct), and a weight
#: (util.display.weight); a whole number elsewhere is a count.
RATES = {"split_rate", "merge_rate", "jaccard_distance", *DISTANCE_PARTS, "contribution", "precision", "recall", "f1",
         "weight_share", "split_contribution", "merge_contribution", "jaccard_contribution", "jaccard_contribution_se",
         "JaccardDistance(T)", "inclusion", "Σu", *(f"Σu {c}" for c in ("split", "merge", "intersection",
                                                                      "intersection+", "intersection-", "self"))}
#: ``--metric`` of ``explore query`` named as everywhere else.
METRIC_BY_OPTION = {"split": METRIC_LABELS["split_rate"], "merge": METRIC_LABELS["merge_rate"],
                    "jaccard": METRIC_LABELS["jaccard_distance"]}
WEIGHTS = {"weight", "total_weight", "importance_weight"}


def cell(key: str, v) -> str:
    """A value of column ``key`` in the one number style: rates as percentages, weights by
    magnitude, counts with separators, null as (null); other values as :func:`fmt`."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return fmt(v)
    if key in RATES:
        return pct(v)
    if key in WEIGHTS:
        return weight(v)
    if isinstance(v, int):
        return count(v)
    return fmt(v)


def new_table(**kwargs) -> Table:
    """A ``rich.table.Table`` (rich imported on first use)."""
    from rich.table import Table  # lazy: start-up time

    return Table(**kwargs)


#: The key of a slice's value in the rows of a quality slice table (:func:`print_quality`): a key no
#: column takes, the slice column's name shown as its header (it may be "weight" or "draws", as a
#: number beside it is called).
SLICE_VALUE = "__abcde_value"


def table(rows: list[dict], title: str | None = None, columns: list[str] | None = None, limit: int = 25,
          headers: dict | None = None, plain=()):
    """Rows (dicts) as a table of at most ``limit`` rows, with a caption saying how many more there are.
    ``headers``: a column's header when it is not the column's key (or its :data:`HEADERS` label);
    ``plain``: the user's columns (attributes, slice values), headed by their names and their values in
    the style of any column, even when named as one of abcde's own (a slice column "precision" is no rate).

    A table wider than the terminal is never squeezed (rich would break ids and names mid-token, or
    leave columns out): it is shown expanded instead, one block of ``column  value`` lines per row,
    as ``psql``'s ``\\x`` does."""
    cols = columns or (list(rows[0].keys()) if rows else [])
    # the user's column names and values (and a title naming them) as the text they are, one line each
    heads = {c: safe_text(h) for c, h in {**HEADERS, **{c: c for c in plain}, **(headers or {})}.items()}
    shown = rows[:limit]
    caption = f"… and {len(rows) - limit} more rows (--json for all)" if len(rows) > limit else None
    title = None if title is None else safe_text(title)
    t = new_table(title=title, title_justify="left", header_style="bold", caption=caption, caption_justify="left")
    cells = [[_cell(c, r.get(c), plain) for c in cols] for r in shown]
    for k, c in enumerate(cols):
        # wrapped at spaces only: never narrower than the column's longest word (an id, a number)
        words = [w for text in [heads.get(c, safe_text(c)), *(row[k] for row in cells)] for w in text.split()]
        t.add_column(heads.get(c, safe_text(c)), justify="left" if c in LEFT else "right", overflow="fold",
                     min_width=max(map(len, words), default=1))
    for row in cells:
        t.add_row(*row)
    out = console()
    # the narrowest it can be (console.measure would cap it at the terminal's width)
    if shown and t.__rich_measure__(out, out.options.update(width=10**6)).minimum > out.width:
        return _expanded(shown, cols, title, caption, heads, plain)
    return t


def _cell(key: str, v, plain=()) -> str:
    """:func:`cell`; a ``plain`` column's value in the style of any column, whatever its name; on one
    line, its control characters shown (:func:`safe_text`)."""
    return safe_text(cell("", v) if key in plain else cell(key, v))


def _expanded(rows: list[dict], cols: list[str], title: str | None, caption: str | None, heads: dict = HEADERS,
              plain=()):
    """The rows of a table too wide for the terminal, one ``column  value`` block per row."""
    from rich.console import Group  # lazy: start-up time
    from rich.text import Text

    parts = [Text(f"{title} (one block per row: too wide for {console().width} columns)", style="italic")] \
        if title else []
    for k, r in enumerate(rows):
        parts.append(Text(f"row {k + 1}", style="bold"))
        for c in cols:  # wrapped at spaces, as any text
            parts.append(Text(f"  {heads.get(c, safe_text(c)) or '(row)'}: {_cell(c, r.get(c), plain)}"))
    if caption:
        parts.append(Text(caption))
    return Group(*parts)


def emit_json(obj) -> None:
    """Print one JSON object (``--json``). A value that is not a finite number (an estimate over
    nothing, a rate of a zero weight) is ``null``, and the object's ``undefined`` lists where,
    so the output is always valid JSON."""
    undefined: list[str] = []

    def clean(v, path: str):
        if isinstance(v, float) and not math.isfinite(v):
            undefined.append(path)
            return None
        if isinstance(v, dict):
            return {k: clean(x, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return v

    out = clean(obj, "")
    if undefined and isinstance(out, dict):
        out["undefined"] = {"values": undefined, "note": "not a finite number (e.g. nothing matched, or a weight "
                                                         "of 0): shown as null"}
    click.echo(json.dumps(out, indent=2, default=str, allow_nan=False))


def handle_errors(fn):
    """Turn abcde errors into a clean message and exit code 1 (the ids, paths and values it names
    shown as the text they are by the ``abcde`` group, as every error click prints: ``cli.group``)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AbcdeError as exc:
            # options named the way this command spells them, or not at all when it has none such
            ctx = click.get_current_context(silent=True)
            options = {p.name for p in ctx.command.params} if ctx is not None else set()
            raise click.ClickException(exc.render(options)) from exc
        except OSError as exc:  # an output path with a file in its way, a read-only place, a full disk
            from abcde.util.files import describe_os_error  # lazy: start-up time

            raise click.ClickException(describe_os_error(exc)) from exc

    return wrapper


def print_restriction(r: dict, names: tuple[str, str]) -> None:
    """Say which items were left out because only one side has them."""
    from abcde.core.diff import describe_restriction  # lazy: start-up time

    lines = describe_restriction(r, names, weight)
    if lines:
        console().print("Restricted to the common items:", style="yellow")
        for line in lines:
            console().print(f"  • {line}")


def print_impact(res: ImpactResult, *, top: int) -> None:
    """The overall impact, the restriction, the most affected clusters and the slices."""
    d = res.to_dict()
    summary = new_table(title="Impact of Exp relative to Base", title_justify="left", show_header=False)
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    summary.add_row("items", f"{res.items:,}")
    summary.add_row("total weight", weight(res.total_weight))
    summary.add_row(METRIC_LABELS["split_rate"], pct(res.split_rate))
    summary.add_row(METRIC_LABELS["merge_rate"], pct(res.merge_rate))
    summary.add_row(METRIC_LABELS["jaccard_distance"], pct(res.jaccard_distance))
    summary.add_row(f"= {METRIC_LABELS['split_distance']} + {METRIC_LABELS['merge_distance']}",
                    f"{pct(res.split_distance)} + {pct(res.merge_distance)}")
    aff_share = res.affected_weight / res.total_weight if res.total_weight else 0.0
    summary.add_row("affected items", f"{res.affected_items:,} ({pct(aff_share)} of weight)")
    summary.add_row("unaffected items", f"{res.unaffected_items:,}")
    console().print(summary)
    print_restriction(d["restriction"], ("base", "exp"))
    if res.affected_items == 0:
        console().print("Base and Exp are identical on the common items: nothing changed.", style="green")
        return
    cols = ["side", "cluster_id", "size", "weight", "split_rate", "merge_rate", "jaccard_distance", "contribution"]
    rows = res.top_clusters["interleaved"][:top]
    console().print(table(rows, f"The {len(rows)} most affected clusters (Base and Exp ranked together)", cols,
                          limit=max(len(rows), 1)))
    for name, rows in res.slices.items():
        # JaccardDistance's parts per slice are in --json (as wide as the rest, they would not fit).
        cols = [c for c in (rows[0] if rows else {}) if c not in DISTANCE_PARTS]
        console().print(table(rows, f"Slices by {name}", cols, plain=name.split(",")))


def print_verdict(sentences) -> None:
    """The answer in words (``Verdict.sentences``): the headline in bold, the rest below it."""
    if not sentences:
        return
    head, *rest = sentences
    console().print(head, style="bold", soft_wrap=True)
    for line in rest:
        console().print(f"  • {line}", soft_wrap=True)


def print_quality(d: dict, sentences=None) -> None:
    """Quality estimates (a ``QualityResult.to_dict()``) with intervals, and ΔPrecision per slice,
    under the verdict (``sentences``; default: the one ``d`` carries)."""
    if sentences is None:
        sentences = (d.get("verdict_facts") or {}).get("sentences")
    if sentences is None:
        from abcde.quality.verdict import verdict  # lazy: start-up time

        sentences = verdict(d).sentences
    print_verdict(sentences)

    how = f"estimator: {d['estimator']}" + (f", allocation: {d['allocation']}" if d.get("allocation") else "")
    t = new_table(title="Quality of Exp relative to Base", title_justify="left")
    metrics = (("precision",) if "precision" in d else ()) + QUALITY_METRICS
    # why "± s.e. 0" sits beside an interval with width, when it does
    notes = ["; ".join(x for x in (d[k].get("note", ""), zero_se_note(k, d[k])) if x) for k in metrics]
    rl = d.get(RECALL_METRIC) or {}
    rl_note = "; ".join(x for x in (rl.get("note", ""), zero_se_note(RECALL_METRIC, rl)) if x) \
        if rl.get("available") else ""
    for c in [*QUALITY_COLUMNS, *([""] if any(notes) or rl_note else [])]:
        t.add_column(c, justify="left" if c in ("metric", "") else "right")
    for key, note in zip(metrics, notes):
        e = d[key]
        t.add_row(METRIC_LABELS[key], estimate(key, e["estimate"]), estimate(key, e["std_err"]),
                  estimate_interval(key, e), count(e["n_judgements"]),
                  *([note] if any(notes) or rl_note else []))
    if rl.get("available"):  # beside Precision: how many more (fewer) true links Exp keeps
        t.add_row(METRIC_LABELS[RECALL_METRIC], estimate(RECALL_METRIC, rl["estimate"]),
                  estimate(RECALL_METRIC, rl["std_err"]), estimate_interval(RECALL_METRIC, rl),
                  count(rl["n_judgements"]), *([rl_note] if any(notes) or rl_note else []))
    console().print(t)
    if rl and not rl.get("available") and "precision" not in d:
        console().print(f"{METRIC_LABELS[RECALL_METRIC]}: not estimated: {rl.get('note', '')}"
                        + (f" ({rl['command']})" if rl.get("command") else "") + ".", soft_wrap=True)
    elif rl.get("available"):
        console().print(f"{METRIC_LABELS[RECALL_METRIC]} = T_Exp/T_Base − 1: how many more (fewer) true links (pairs "
                        "of one entity, weighted) Exp keeps than Base, from the judged split, merge and agreed "
                        "pairs.", soft_wrap=True)
    console().print(f"Estimates with 95% intervals ({how}).", soft_wrap=True)
    console().print(describe_quality_sample(d))
    console().print(f"{METRIC_LABELS['split_rate']} {pct(d['split_rate'])} = Good + Bad; "
                    f"{METRIC_LABELS['merge_rate']} {pct(d['merge_rate'])} = Good + Bad. "
                    f"Pairs judged by {d.get('counts_of') or 'anyone'}: {count(d['judged_pairs'])}, "
                    f"unsure: {count(d['unsure_pairs'])}, "
                    f"not judged: {count(d['missing_pairs'])}; rater disagreements: {d['rater_disagreements']} "
                    f"(ties ⇒ unsure: {d['rater_ties']}).")
    if "precision" in d:
        console().print("Precision of the clustering = 1 + ΔPrecision (pairs inside its clusters, against every "
                        "item alone, whose Precision is 1).")
    for col, rows in d.get("slices", {}).items():
        flat = [{SLICE_VALUE: r["value"], "weight": r["weight"], "draws": r["sampled_draws"],
                 **({"Precision": four(r["precision"]["estimate"])} if "precision" in r else {}),
                 "ΔPrecision": four(r["delta_precision"]["estimate"]), "± s.e.": four(r["delta_precision"]["std_err"]),
                 "95% interval": interval(r["delta_precision"]),
                 "contribution": four(r["delta_precision_contribution"]["estimate"])} for r in rows]
        console().print(table(flat, f"ΔPrecision by {col} (vantage items)", headers={SLICE_VALUE: col}))
    print_distances(d.get("distances"))


def print_distances(d: dict | None) -> None:
    """The panel "JaccardDistance = good + bad" of a quality result's ``distances`` (overall and per
    slice), or why it is not there."""
    if not d:
        return
    if not d.get("available"):
        console().print(f"{METRIC_LABELS['jaccard_distance']} = good + bad: {d.get('note', 'not estimated')}.",
                        soft_wrap=True)
        return
    from abcde.quality.result import distance_rows  # lazy: start-up time

    t = new_table(title=f"{METRIC_LABELS['jaccard_distance']} = good + bad", title_justify="left")
    for c in ("", "exact", "good", "95% interval", "bad", "95% interval"):
        t.add_column(c, justify="left" if not c else "right")
    for row in distance_rows(d):
        t.add_row(*row)
    console().print(t)
    console().print(f"From the same judged split and merge pairs ({d['method']}), each weighted by its item's "
                    f"share w(B)/w(B ∪ E) (merge: w(E)/w(B ∪ E)); Good + Bad = the exact part.", soft_wrap=True)
    for col, rows in (d.get("slices") or {}).items():
        flat = [{SLICE_VALUE: r["value"], "weight": r["weight"], "draws": r["sampled_draws"],
                 "JaccardDistance": pct(r["jaccard_distance"]),
                 METRIC_LABELS["good_distance"]: estimate("good_distance", r["good_distance"]["estimate"]),
                 "95% interval": estimate_interval("good_distance", r["good_distance"]),
                 METRIC_LABELS["bad_distance"]: estimate("bad_distance", r["bad_distance"]["estimate"])} for r in rows]
        console().print(table(flat, f"{METRIC_LABELS['jaccard_distance']} = good + bad by {col} (vantage items)",
                              headers={SLICE_VALUE: col}))


def model_judged_text(ppi: dict) -> str:
    """How many pairs the model judged, as stored, with its answers (``design["ppi"]``)."""
    a = ppi.get("model_answers")
    if a is None:  # a result of an earlier abcde: the answers used only
        return f"the model judged {count(ppi['model_judgements'])} pairs ({count(ppi['model_unanswered'])} unanswered)"
    return (f"the model judged {count(ppi['model_judgements'])} of the {count(ppi['pairs'])} pairs (same "
            f"{count(a['same'])}, different {count(a['different'])}, unsure {count(a['unsure'])})")


def by_answer_text(ppi: dict) -> str:
    """The people's pairs / drawn pairs per cell of the model's answers, by stratum."""
    by_unit: dict = {}
    for c, v in ppi["cells"].items():
        unit, _, answer = c.partition("|")
        by_unit.setdefault(unit, []).append(f"{answer or 'all'} {count(v['people'])}/{count(v['pairs'])}")
    return "; ".join(f"{u}: {', '.join(v)}" for u, v in by_unit.items())


def print_ppi(ppi: dict) -> None:
    """What a model's judgements added to people's (``design["ppi"]`` of a prediction-powered
    estimate): the model's judgements as stored and the answers the estimate used, λ per stratum
    (or the cells of its answers), what they were worth in people's judgements (or why that cannot
    be told), how often model and people disagree (weighted back to the drawn pairs first), and the
    people's tasks when they are not the number asked. ``--source person`` (or ``oracle``) on a
    sample whose tasks were chosen by the model's answers: the people's judgements alone, weighted by
    cell; nothing of the model's is said to be used."""
    from abcde.samples.people_tasks import BY_ANSWERS  # lazy: start-up time

    def say(text: str, style: str | None = None) -> None:
        text = text[:1].upper() + text[1:]
        text = text.rstrip(".") + "."
        console().print(text, style=style or "", soft_wrap=True)

    n = count(ppi["people_judgements"])
    if ppi.get("people_only"):
        say(f"People's judgements alone (--source {ppi['people_only']}): {n} of the {count(ppi['pairs'])} pairs, each "
            "counting for its cell's share of the drawn pairs (the cells are the model's answers the people's tasks "
            "were chosen by); no model judgement is used as a judgement"
            + (f". People's pairs / drawn pairs, by the model's answer: {by_answer_text(ppi)}"
               if ppi.get("cells") else ""))
    elif ppi.get("design") == BY_ANSWERS:
        split = any("|" in c for c in ppi.get("cells") or {})
        say(f"Prediction-powered, the people's tasks chosen by the model's answers: {model_judged_text(ppi)}; "
            + (ppi.get("model_note")
               or f"the estimate uses all {count(ppi.get('model_used', 0))} of its answers, as cells")
            + f". People judged {n} of the pairs"
            + (", more where the model's answer is rare; each people's judgement counts for its cell's share, so the "
               "estimates stay unbiased whatever the model" if split else "")
            + f". People's pairs / drawn pairs, by the model's answer: {by_answer_text(ppi)}")
    else:
        lam = ", ".join(f"{c} {v:.2f}" for c, v in ppi["lambdas"].items()) or "none"
        used = ppi.get("model_used", ppi["model_judgements"])
        say(f"Prediction-powered: {model_judged_text(ppi)}; the estimate uses its {count(used)} same or different "
            "answers" + (f" ({ppi['model_note']})" if ppi.get("model_note") else "")
            + f". People judged {n} of the pairs; their judgements correct the model's bias. λ (the model's weight) "
            f"per stratum: {lam}")
    if ppi.get("people_tasks_note"):
        say(ppi["people_tasks_note"])
    if not ppi.get("people_only"):
        worth = ppi.get("worth_people_judgements")
        used = ppi.get("model_used", ppi["model_judgements"])
        if not used:
            pass  # no answer of the model's is used (said above): it is worth nothing here
        elif worth is not None:
            say(f"The model's {count(used)} answers were worth about {count(round(worth))} people's judgements here "
                f"(ΔPrecision's s.e. {four(ppi['std_err'])} against {four(ppi['people_only_std_err'])} from the "
                "people's alone)")
        elif ppi.get("worth_note"):
            say(f"What the model's answers were worth in people's judgements cannot be told yet: {ppi['worth_note']}")
        if ppi.get("both_judged"):
            share = ppi.get("disagreement_share")
            raw = f"{count(ppi['disagreements'])} of the {count(ppi['both_judged'])} pairs both judged"
            say(f"Model and people disagree on an estimated {share:.1%} of the drawn pairs (the people's pairs "
                f"weighted back to them; raw: {raw})" if share is not None else f"Model and people disagree on {raw}")
    for key in ("warning", "outside_note", "subset"):
        if ppi.get(key) and not (key == "warning" and ppi.get("people_only")):
            say(ppi[key], "yellow" if key != "subset" else None)


def describe_quality_sample(d: dict) -> str:
    """One line on the design behind quality estimates: its strata, which were judged whole (a
    census), and whether the result is exact."""
    if d.get("estimator") != "stratified" or not d.get("strata"):
        return f"Design: {d.get('estimator', 'paper')} (every pair ∝ u_ij, the paper's)."
    census = d.get("census") or []
    text = f"Design: stratified over {', '.join(d['strata'])}"
    if census:
        text += f"; judged whole (a census): {', '.join(census)}"
    if d.get("exact"):
        text += ". Every pair that needs a judgement is judged: the estimates are exact (s.e. 0)"
    return text + "."


def estimate_row(e) -> dict:
    """An exploration estimate (``SliceEstimate``) as one table row, with the Jaccard contribution's s.e."""
    d = e.to_dict()
    se = d.pop("std_err")
    d["jaccard_contribution_se"] = se.get("jaccard_contribution")
    return d
