"""The report's data as one self-contained HTML page, and as a Markdown summary.

The page is the Jinja2 template ``templates/report.html`` (autoescaped: every value from the
data is HTML-escaped). At render time the page gets, inlined:

- the CSS of ``static/`` (``report.css``, and ``vega.css`` when there are charts);
- the shared JavaScript helpers ``abcde/assets/common.js`` and the page's ``static/report.js``;
- vega, vega-lite and vega-embed from vl-convert's bundle, when there are charts;
- the report's data and the charts' Vega-Lite specs (:mod:`abcde.report.charts`) as JSON in
  ``<script type="application/json">`` elements, escaped so that no text ends the element.

So the file opens offline, from anywhere. Its Content-Security-Policy allows nothing to load
and only the inlined scripts and styles to run, by their SHA-256 hashes (computed here from the
exact inlined text); the script sets item text only as text (textContent, setAttribute).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Callable, NamedTuple

import jinja2
from markupsafe import Markup

from abcde.core.diff import describe_restriction
from abcde.core.names import IMPACT_METRICS, METRIC_LABELS, PAGE_NAMES, QUALITY_COLUMNS, QUALITY_METRICS, RECALL_METRIC
from abcde.report.charts import VEGA_LITE_VERSION, chart_specs, most_affected
from abcde.util import display
from abcde.util.display import interval
from abcde.util.files import write_text
from abcde.util.templates import cache_dir, environment

STATIC = files("abcde.report") / "static"
#: The JavaScript helpers all of abcde's pages share (the global ``abcde``).
COMMON_JS = files("abcde") / "assets" / "common.js"


# --------------------------------------------------------------------------- formats
def pct(x) -> str:
    """A rate as a percentage with 3 decimals, as everywhere (:mod:`abcde.util.display`).

    >>> pct(0.12345), pct(None)
    ('12.345%', 'n/a')
    """
    return display.pct(x)


def num(x) -> str:
    """A count or weight by its magnitude (:func:`abcde.util.display.weight`).

    >>> num(1234), num(9834.8), num(2345678.9), num(None)
    ('1,234', '9,834.8', '2,345,679', 'n/a')
    """
    return display.count(x) if isinstance(x, int) else display.weight(x)


def four(x) -> str:
    """An estimate or a standard error with 4 decimals.

    >>> four(0.012345), four(None), four(2.9e-11)
    ('0.0123', 'n/a', '0.0000')
    """
    return display.four(x)


def count(x: int | None) -> str:
    """An integer with thousands separators (``n/a`` when missing), as every count on the page.

    >>> count(1234567), count(None)
    ('1,234,567', 'n/a')
    """
    return "n/a" if x is None else display.count(x)


class Column(NamedTuple):
    """A table column: the row's key, the header, and how a value shows (None: as it is)."""

    key: str
    label: str
    fmt: Callable[[Any], str] | None = None

    def show(self, value):
        if value is None:
            return display.NULL_TEXT if self.fmt is None else self.fmt(value)
        return self.fmt(value) if self.fmt else value


# --------------------------------------------------------------------------- HTML
def render_html(data: dict) -> str:
    """The report as one self-contained HTML page (see the module's docstring)."""
    specs = chart_specs(data) if not data["identical"] or data.get("quality") else {}
    styles = ([_static("vega.css")] if specs else []) + [_static("report.css")]
    head_scripts = [_vega_bundle()] if specs else []
    body_scripts = [_common_js(), _static("report.js")]
    page = {
        "csp": content_security_policy(head_scripts + body_scripts, styles),
        "styles": styles,
        "head_scripts": head_scripts,
        "body_scripts": body_scripts,
        "report_json": json_for_script(data),
        "specs_json": json_for_script(specs),
        "names_json": json.dumps(PAGE_NAMES),
    }
    return _env().get_template("report.html").render(d=data, v=_view(data), page=page)


def _view(data: dict) -> dict:
    """What the page shows of the data that takes more than a lookup: the cards, the tables'
    columns and rows, the quality and exploration sections."""
    L = METRIC_LABELS
    h = data["headline"]
    names = data["names"]
    top = data["top_clusters"]
    impact_cols = [Column(k, L[k], pct) for k in IMPACT_METRICS]
    view: dict[str, Any] = {
        "h": h,
        "labels": L,
        "quality_columns": QUALITY_COLUMNS,
        "cards": [{"key": k, "label": L[k], "value": h[k], "shown": pct(h[k])} for k in IMPACT_METRICS] + [
            {"key": "affected_items", "label": "affected items", "value": h["affected_items"],
             "shown": count(h["affected_items"])},
            {"key": "items", "label": "items", "value": h["items"], "shown": count(h["items"])}],
        "restriction": describe_restriction(data["restriction"], (names["base"], names["exp"]), num),
        # Each tab is one ranking of K clusters (K: --top), the first exactly what `abcde impact --top K` lists.
        "most_affected": most_affected(len(top["interleaved"])),
        "tabs": [{"key": "interleaved", "label": "Base and Exp ranked together",
                  "caption": _sentence(most_affected(len(top["interleaved"])))},
                 *({"key": side, "label": f"{names[side]} only",
                    "caption": f"The {_n_clusters(len(top[side]))} of {names[side]} with the largest contribution, "
                               f"ranked on their own"} for side in ("base", "exp"))],
        "cluster_columns": [Column("side", "side"), Column("cluster_id", "cluster"), Column("size", "size", count),
                            Column("weight", "weight", num), *impact_cols,
                            Column("contribution", "contribution", pct)],
        "slices": [{"name": name, "rows": rows,
                    "columns": [Column(c, c) for c in name.split(",")] + [
                        Column("items", "items", count), Column("weight", "weight", num), *impact_cols,
                        Column("contribution", "contribution", pct)]}
                   for name, rows in data["slices"].items()],
        "quality": _quality_view(data.get("quality")),
        "verdict": (data.get("verdict_facts") or {}).get("sentences") or [],
        "truth": [{"side": names.get(side, side), "key": side, **{k: pct(v) for k, v in r.items()}, "raw": r}
                  for side, r in (data.get("truth") or {}).items()],
        "truth_lift": _truth_lift_text(data),
        "truth_note": data.get("truth_note") or "",
        "truth_sample": truth_sample_view(data.get("truth_sample"), names),
        "exploration": None,
    }
    x = data.get("exploration")
    if x and x["groups"]:
        view["exploration"] = {
            "unique_items": x["sample"].get("unique_items", 0),
            "groups": [{"name": col, "rows": rows, "columns": [
                Column(col, col), Column("sampled_items", "sampled items", count),
                Column("weight_share", "weight share", pct),
                Column("split_contribution", f"{L['split_rate']} contribution", pct),
                Column("merge_contribution", f"{L['merge_rate']} contribution", pct),
                Column("jaccard_contribution", f"{L['jaccard_distance']} contribution", pct)]}
                for col, rows in x["groups"].items()]}
    return view


def _sentence(text: str) -> str:
    """``text`` with its first letter upper case (str.capitalize would lower the rest: "exp")."""
    return text[:1].upper() + text[1:]


def _n_clusters(n: int) -> str:
    """
    >>> _n_clusters(1), _n_clusters(1234)
    ('cluster', '1,234 clusters')
    """
    return "cluster" if n == 1 else f"{n:,} clusters"


def _quality_view(q: dict | None) -> dict | None:
    if not q:
        return None
    dp = METRIC_LABELS["delta_precision"]
    alloc = q.get("allocation")
    return {
        "judged_by": q["judged_by"],
        "method": f"estimator: {q.get('estimator', 'paper')}" + (f", allocation: {alloc}" if alloc else "")
                  + (f"; judged whole (a census): {', '.join(q['census'])}" if q.get("census") else ""),
        "exact": bool(q.get("exact")),
        "judged_pairs": q["judged_pairs"], "unsure_pairs": q["unsure_pairs"], "missing_pairs": q["missing_pairs"],
        "rater_disagreements": q.get("rater_disagreements"),
        "split_rate": q["split_rate"], "merge_rate": q["merge_rate"],
        "rows": [{"key": k, "label": METRIC_LABELS[k], "estimate": q[k]["estimate"], "std_err": q[k]["std_err"],
                  "shown": display.estimate(k, q[k]["estimate"]), "shown_se": display.estimate(k, q[k]["std_err"]),
                  "interval": display.estimate_interval(k, q[k]), "n_judgements": q[k]["n_judgements"],
                  # why "± s.e. 0" sits beside an interval with width, when it does
                  "note": "; ".join(x for x in (q[k].get("note", ""), display.zero_se_note(k, q[k])) if x)}
                 for k in QUALITY_METRICS + ((RECALL_METRIC,) if (q.get(RECALL_METRIC) or {}).get("available") else ())],
        "recall_note": _recall_note(q),
        "slices": [{"name": col, "rows": [
            {"value": r["value"], "weight": r.get("weight"), "draws": r.get("sampled_draws"),
             "dp": r["delta_precision"]["estimate"], "se": r["delta_precision"]["std_err"],
             "interval": interval(r["delta_precision"]),
             "contribution": r["delta_precision_contribution"]["estimate"],
             **({"lift": r[RECALL_METRIC]["estimate"],
                 "lift_interval": display.estimate_interval(RECALL_METRIC, r[RECALL_METRIC])}
                if RECALL_METRIC in r else {})} for r in rows],
            "columns": [Column("value", col), Column("weight", "weight", num), Column("draws", "draws", count),
                        Column("dp", dp, four), Column("se", "± s.e.", four), Column("interval", "95% interval"),
                        Column("contribution", "contribution", four),
                        *([Column("lift", METRIC_LABELS[RECALL_METRIC], pct),
                           Column("lift_interval", "95% interval")] if any(RECALL_METRIC in r for r in rows)
                          else [])]}
            for col, rows in (q.get("slices") or {}).items()],
        "distances": _distances_view(q.get("distances")),
    }


#: The panel "JaccardDistance = good + bad": each exact part and its Good and Bad estimates.
DISTANCE_ROWS = (("split_distance", "good_split_distance", "bad_split_distance"),
                 ("merge_distance", "good_merge_distance", "bad_merge_distance"),
                 ("jaccard_distance", "good_distance", "bad_distance"))


def _truth_lift_text(data: dict) -> str:
    """The exact recall lift against the truth beside the estimate from judged pairs, so a reader can
    check one against the other (a partial truth's: over its items only, and said so; a truth
    sample has none)."""
    lift = data.get("truth_recall_lift")
    if lift is None:
        return ""
    rl = (data.get("quality") or {}).get(RECALL_METRIC) or {}
    est = (f"; estimated from the judged pairs: {display.pct(rl['estimate'])} "
           f"(95% interval {display.pct(rl['ci_low'])} to {display.pct(rl['ci_high'])})"
           if rl.get("available") and rl.get("estimate") is not None else "")
    scope = "(exact over the truth's items, not the population)" if data.get("truth_note") else "(exact)"
    return (f"{METRIC_LABELS[RECALL_METRIC]} against the truth {scope}: {display.pct(lift)}: Exp keeps "
            f"{display.pct(abs(lift))} {'more' if lift >= 0 else 'fewer'} true links than Base{est}.")


#: The rows of a truth sample's table, and the labels of its paired differences.
TRUTH_ROWS = (("precision", "Precision"), ("recall", "Recall"), ("f1", "F1"))


def _signed_four(v) -> str:
    """A difference with its sign, 4 decimals (``+0.0012``, ``-0.0019``, ``0.0000``)."""
    s = display.four(v)
    return s if s.startswith("-") or s == "n/a" or s == display.four(0.0) else "+" + s


def _truth_cell(e: dict | None, *, delta: bool = False) -> dict:
    """One estimate of a truth sample as the page and the Markdown show it: the estimate, its
    standard error and its 95% interval (levels as percentages, differences with 4 decimals)."""
    if not e:
        return {"value": None, "shown": "n/a", "se": "n/a", "interval": "n/a", "note": ""}
    fmt = four if delta else pct
    lo, hi = e.get("ci_low"), e.get("ci_high")
    return {"value": e.get("estimate"), "shown": _signed_four(e.get("estimate")) if delta else pct(e.get("estimate")),
            "se": fmt(e.get("std_err")), "lo": lo, "hi": hi,
            "interval": "n/a" if lo is None or hi is None else
            (f"[{_signed_four(lo)}, {_signed_four(hi)}]" if delta else f"[{pct(lo)}, {pct(hi)}]"),
            "note": e.get("note") or ""}


def design_text(ts: dict, names: dict) -> str:
    """What a truth sample is and what was estimated from it, in words (the page and the Markdown)."""
    from abcde.quality.verdict import design_words  # lazy: only with a truth sample

    d = ts["design"]
    pop = ts.get("population_items") or {}
    counts = sorted(set(pop.values()))
    of = (f"of the {count(counts[0])} items" if len(counts) == 1 else
          "of the " + " and ".join(f"{count(pop[s])} items of {names.get(s, s)}" for s in pop)) if counts else ""
    share = f" ({pct(ts['truth_items'] / counts[0])})" if len(counts) == 1 and counts[0] else ""
    census = (" It is a census (every entity listed): the numbers are exact, with standard error 0."
              if d.get("census") else "")
    return (f"Estimated for the whole population from a truth of sampled complete entities ({design_words(d)}). "
            f"It covers {count(ts.get('truth_items'))} {of}{share}. Each truth item's Precision is measured against "
            f"its whole cluster (every item of the clustering), its Recall against its entity; the population's "
            f"numbers are ratio estimates over the sampled entities, {names.get('base', 'Base')} and "
            f"{names.get('exp', 'Exp')} paired on the same entities (one interval per difference).{census}")


def truth_sample_view(ts: dict | None, names: dict) -> dict | None:
    """A truth sample's section: the estimates with their intervals per side, the paired
    differences, the design in words, its notes, and the numbers over the truth's items only."""
    if not ts:
        return None
    est, deltas = ts["estimates"], ts.get("deltas") or {}
    sides = [s for s in ("base", "exp") if s in est]
    rows = [{"key": m, "label": label,
             "cells": [{"col": side, **_truth_cell(est[side].get(m))} for side in sides]
             + ([{"col": "delta", **_truth_cell(deltas.get(f"delta_{m}"), delta=True)}] if deltas else [])}
            for m, label in TRUTH_ROWS]
    from abcde.quality.verdict import truth_point_note  # lazy: only with a truth sample

    notes = list(ts.get("notes") or ())
    census = bool(ts["design"].get("census"))
    for m, r in zip((m for m, _ in TRUTH_ROWS), rows):
        for c in r["cells"]:
            who = ("Δ" if c["col"] == "delta" else f"{names.get(c['col'], c['col'])}'s ") + r["label"]
            e = (deltas.get(f"delta_{m}") if c["col"] == "delta" else est[c["col"]].get(m)) or {}
            if c["note"]:
                notes.append(f"{who}: {c['note']}.")
            elif truth_point_note(e, census):
                notes.append(f"{who} has {truth_point_note(e, census)}.")
    restricted = ts.get("restricted") or {}
    rest_rows = [{"key": side, "side": names.get(side, side),
                  **{m: pct(restricted[side].get(m)) for m, _ in TRUTH_ROWS},
                  "raw": {m: restricted[side].get(m) for m, _ in TRUTH_ROWS}}
                 for side in sides if isinstance(restricted.get(side), dict)]
    return {"design": ts["design"], "text": design_text(ts, names), "sides": sides,
            "columns": [{"col": s, "label": names.get(s, s)} for s in sides]
            + ([{"col": "delta", "label": f"Δ ({names.get('exp', 'Exp')} − {names.get('base', 'Base')})"}]
               if deltas else []),
            "rows": rows, "notes": notes, "restricted": rest_rows,
            "restricted_text": (f"Over the truth's {count(ts.get('truth_items'))} items only (restricted): what "
                                "--truth gives without --truth-sample. These describe the listed entities' items, not "
                                "the population: Precision is optimistic when a clustering puts them with items "
                                "outside the truth."),
            "method": " ".join(x for x in (f"Intervals: {ts['interval_method']}." if ts.get("interval_method") else "",
                                           f"F1: {ts['f1_method']}." if ts.get("f1_method") else "") if x)}


def _recall_note(q: dict) -> str:
    """What the quality section says of the recall lift: what it is, or why it is not there."""
    rl = q.get(RECALL_METRIC) or {}
    if q.get("target") == "precision" or not rl:
        return ""
    if not rl.get("available"):
        return (f"{METRIC_LABELS[RECALL_METRIC]}: not estimated: {rl.get('note', '')}"
                + (f" ({rl['command']})" if rl.get("command") else "") + ".")
    return (f"{METRIC_LABELS[RECALL_METRIC]} = T_Exp/T_Base − 1: how many more (fewer) true links (pairs of one "
            "entity, weighted) Exp keeps than Base, from the same judged split and merge pairs and the agreed "
            "pairs (together in both)" + ("; exact (every pair judged)" if rl.get("exact") else "") + ".")


def _good_share(exact, e: dict) -> str:
    """Good's share of its exact total, as a percentage (n/a when undefined; its interval is Good's
    divided by the exact total)."""
    if not exact or e.get("estimate") is None:
        return "n/a"
    return pct(e["estimate"] / exact)


def _distances_view(d: dict | None) -> dict | None:
    """The panel's rows (overall and per slice) from ``quality["distances"]``; or why it is empty."""
    if not d:
        return None
    if not d.get("available"):
        return {"available": False, "note": d.get("note") or "not estimated"}
    L = METRIC_LABELS

    def cells(r: dict, exact: str, good: str, bad: str) -> dict:
        g, b = r[good], r[bad]
        return {"exact": pct(r[exact]), "raw": r[exact], "good": display.estimate(good, g["estimate"]),
                "good_raw": g["estimate"], "good_interval": display.estimate_interval(good, g),
                "bad": display.estimate(bad, b["estimate"]), "bad_raw": b["estimate"],
                "bad_interval": display.estimate_interval(bad, b), "good_share": _good_share(r[exact], g),
                "note": "; ".join(dict.fromkeys(x for x in (g.get("note"), b.get("note")) if x))}

    rows = [{"key": exact, "label": L[exact], **cells(d, exact, good, bad)} for exact, good, bad in DISTANCE_ROWS]
    slices = [{"name": col, "rows": [{"value": r["value"], "weight": r["weight"], "draws": r["sampled_draws"],
                                      **cells(r, "jaccard_distance", "good_distance", "bad_distance")}
                                     for r in rs],
               "columns": [Column("value", col), Column("weight", "weight", num), Column("draws", "draws", count),
                           Column("exact", L["jaccard_distance"]), Column("good", L["good_distance"]),
                           Column("good_interval", "95% interval"), Column("bad", L["bad_distance"]),
                           Column("bad_interval", "95% interval"), Column("good_share", "good share"),
                           Column("note", "")]}
              for col, rs in (d.get("slices") or {}).items()]
    return {"available": True, "rows": rows, "slices": slices, "method": d.get("method", "")}


@functools.cache
def _env() -> jinja2.Environment:
    env = environment(
        "abcde.report",
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # A missing value (None) shows as nothing, never as "None".
        finalize=lambda value: "" if value is None else value,
    )
    env.filters.update(pct=pct, num=num, four=four, count=count)
    return env


# --------------------------------------------------------------------------- inlining
@dataclass(frozen=True)
class Inline:
    """A script's or style's text, ready to inline (``text``), and its CSP source (``source``)."""

    text: Markup
    source: str


def csp_source(text: str) -> str:
    """The Content-Security-Policy source that allows an inline script or style of exactly ``text``.

    >>> csp_source("")
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _inline_script(js: str) -> Inline:
    # An HTML parser turns CR LF into LF before it hashes; "</script" (any case) would end the element:
    # in JavaScript "<\/script" is the same string.
    js = re.sub(r"</(script)", r"<\\/\1", js.replace("\r\n", "\n").replace("\r", "\n"), flags=re.IGNORECASE)
    return Inline(Markup(js), csp_source(js))


def _inline_style(css: str) -> Inline:
    css = css.replace("\r\n", "\n").replace("\r", "\n")
    if re.search(r"</style", css, re.IGNORECASE):
        raise ValueError("An inlined style must not contain '</style'.")
    return Inline(Markup(css), csp_source(css))


@functools.cache
def _static(name: str) -> Inline:
    """A file of ``static/``, ready to inline."""
    text = (STATIC / name).read_text(encoding="utf-8")
    return _inline_style(text) if name.endswith(".css") else _inline_script(text)


@functools.cache
def _common_js() -> Inline:
    """The shared helpers (``abcde.el``, ``abcde.num``, ...) that report.js uses; load it first."""
    return _inline_script(COMMON_JS.read_text(encoding="utf-8"))


@functools.cache
def _vega_bundle() -> Inline:
    """vega + vega-lite + vega-embed as one inline script, from vl-convert (no CDN).

    vl-convert builds the bundle in about a second, the same bytes every time for one
    vl-convert and Vega-Lite version, so it is kept in the user's cache directory
    (``$XDG_CACHE_HOME/abcde`` or ``~/.cache/abcde``; ``ABCDE_CACHE_DIR`` overrides) under a
    name holding both versions, written atomically; where no cache can be written it is built
    each time."""
    from importlib.metadata import version

    vl = "v" + "_".join(VEGA_LITE_VERSION.split(".")[:2])  # vl-convert's name for it: "6.4.1" -> "v6_4"
    root = cache_dir()  # None: no home directory, nothing cached
    cache = root / f"vega-bundle-vlconvert{version('vl-convert-python')}-{vl}.js" if root is not None else None
    if cache is not None:
        try:
            return _inline_script(cache.read_text(encoding="utf-8"))
        except OSError:
            pass
    import vl_convert as vlc  # lazy: heavy to import, and only needed when the bundle is not cached

    text = vlc.javascript_bundle(vl_version=vl)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_text(cache, text)
        except OSError:  # a read-only home: build it again next time
            pass
    return _inline_script(text)


def content_security_policy(scripts: list[Inline], styles: list[Inline]) -> str:
    """Nothing loads; only the given inline scripts and styles apply (by hash); images only as
    ``data:`` URLs (vega may draw with them)."""
    return ("default-src 'none'; script-src " + (" ".join(s.source for s in scripts) or "'none'")
            + "; style-src " + (" ".join(s.source for s in styles) or "'none'")
            + "; img-src data:; base-uri 'none'; form-action 'none'")


def json_for_script(obj) -> Markup:
    """``obj`` as JSON to put inside a ``<script type="application/json">`` element: ``<``, ``>``
    and ``&`` as ``\\u`` escapes (no text can end the element; the JSON stays valid), integers
    beyond 2^53 as text (JavaScript's numbers would round ids, and the page compares them).

    >>> print(json_for_script({"a": "</script>", "id": 2**53 + 1}))
    {"a": "\\u003c/script\\u003e", "id": "9007199254740993"}
    """
    text = json.dumps(_js_safe(obj), default=str, allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _js_safe(v):
    if isinstance(v, dict):
        return {k: _js_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_js_safe(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
        return str(v)
    return v


# --------------------------------------------------------------------------- Markdown
def render_markdown(data: dict) -> str:
    """A short Markdown summary of the report, for a code review comment."""
    L = METRIC_LABELS
    h = data["headline"]
    n = data["names"]
    lines = [f"### ABCDE: {_md(n['exp'])} vs {_md(n['base'])}", ""]
    v = data.get("verdict_facts")
    if v and v.get("sentences"):
        head, *rest = v["sentences"]
        judged = (data.get("quality") or {}).get("judged_by")
        lines += [f"**{_md(head)}**", ""] + [f"- {_md(x)}" for x in rest] + (
            [f"- Judged by {_md(judged)}."] if judged else []) + [""]
    if data["identical"]:
        lines += [f"The clusterings are **identical** on the {h['items']:,} common items: nothing changed.", ""]
    lines += ["| " + " | ".join(L[k] for k in IMPACT_METRICS) + " | affected items | items |",
              "|---:|---:|---:|---:|---:|",
              "| " + " | ".join(pct(h[k]) for k in IMPACT_METRICS) + " | "
              f"{h['affected_items']:,} ({pct(h['affected_weight_share'])} of weight) | {h['items']:,} |", ""]
    ts = truth_sample_view(data.get("truth_sample"), n)
    if ts is not None:
        lines += _markdown_truth_sample(ts)
    elif data.get("truth"):
        lines += ["Against the ground truth:", "", "| clustering | Precision | Recall | F1 |", "|---|---:|---:|---:|"]
        lines += [f"| {_md(n.get(side, side))} | {pct(t['precision'])} | {pct(t['recall'])} | {pct(t['f1'])} |"
                  for side, t in data["truth"].items()]
        lines.append("")
        if data.get("truth_note"):
            lines += [_md(data["truth_note"]), ""]
        if _truth_lift_text(data):
            lines += [_md(_truth_lift_text(data)), ""]
    r = data["restriction"]
    if r["base_only_items"] or r["exp_only_items"]:
        lines += [f"Restricted to {r['common_items']:,} common items: {r['base_only_items']:,} only in "
                  f"{_md(n['base'])}, {r['exp_only_items']:,} only in {_md(n['exp'])} were excluded.", ""]
    top = data["top_clusters"]["interleaved"][:5]
    if top:
        lines += [f"{_sentence(most_affected(len(top)))}:", "",
                  f"| side | cluster | size | {L['split_rate']} | {L['merge_rate']} | contribution |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {c['side']} | {_md(c['cluster_id'])} | {c['size']:,} | {pct(c['split_rate'])} | "
                  f"{pct(c['merge_rate'])} | {pct(c['contribution'])} |" for c in top]
        lines.append("")
    q = data.get("quality")
    if q:
        alloc = f", allocation {q['allocation']}" if q.get("allocation") else ""
        lines += [f"Quality (judged by {_md(q['judged_by'])}; estimator {q.get('estimator', 'paper')}{alloc}; "
                  f"{q['judged_pairs']:,} pairs judged, {q['unsure_pairs']:,} unsure):", "",
                  "| metric | estimate | 95% interval |", "|---|---:|---:|"]
        shown = QUALITY_METRICS + ((RECALL_METRIC,) if (q.get(RECALL_METRIC) or {}).get("available") else ())
        for k in shown:
            lines.append(f"| {L[k]} | {display.estimate(k, q[k]['estimate'])} | {display.estimate_interval(k, q[k])} |")
        lines.append("")
        if _recall_note(q):
            lines += [_md(_recall_note(q)), ""]
        lines += _markdown_distances(_distances_view(q.get("distances")))
    return "\n".join(lines) + "\n"


def _markdown_truth_sample(ts: dict) -> list[str]:
    """A truth sample's estimates as Markdown: the table (estimate ± s.e. and the 95% interval per
    side and for the paired difference), the design, the notes and the restricted numbers."""
    cols = ts["columns"]
    lines = ["Against the ground truth (a sample of entities; population estimates with 95% intervals):", "",
             "| | " + " | ".join(f"{_md(c['label'])} | 95% interval" for c in cols) + " |",
             "|---|" + "---:|---:|" * len(cols)]
    for r in ts["rows"]:
        lines.append(f"| {r['label']} | " + " | ".join(f"{c['shown']} ± {c['se']} | {c['interval']}"
                                                       for c in r["cells"]) + " |")
    lines += ["", _md(ts["text"]), ""]
    lines += [f"- {_md(x)}" for x in ts["notes"]] + ([""] if ts["notes"] else [])
    if ts["restricted"]:
        lines += [_md(ts["restricted_text"]), "", "| clustering | Precision | Recall | F1 |", "|---|---:|---:|---:|"]
        lines += [f"| {_md(r['side'])} | {r['precision']} | {r['recall']} | {r['f1']} |" for r in ts["restricted"]]
        lines.append("")
    return lines


def _markdown_distances(v: dict | None) -> list[str]:
    """The panel "JaccardDistance = good + bad" as Markdown lines (overall; per slice, the first 10)."""
    if v is None:
        return []
    title = f"{METRIC_LABELS['jaccard_distance']} = good + bad"
    if not v["available"]:
        return [f"{title}: {_md(v['note'])}.", ""]
    lines = [f"{title} (from the same judged pairs; Good + Bad = the exact part):", "",
             "| | exact | good | 95% interval | bad | 95% interval | good share |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['label']} | {r['exact']} | {r['good']} | {r['good_interval']} | {r['bad']} | {r['bad_interval']} "
              f"| {r['good_share']} |" for r in v["rows"]]
    lines.append("")
    for s in v["slices"]:
        lines += [f"{title} by {_md(s['name'])}:", "",
                  f"| {_md(s['name'])} | {METRIC_LABELS['jaccard_distance']} | good | 95% interval | bad "
                  "| good share |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {_md(r['value'])} | {r['exact']} | {r['good']} | {r['good_interval']} | {r['bad']} | "
                  f"{r['good_share']} |" for r in s["rows"][:10]]
        if len(s["rows"]) > 10:
            lines.append(f"| … {len(s['rows']) - 10:,} more | | | | | |")
        lines.append("")
    return lines


def _md(v) -> str:
    """User-supplied text (an id, a name, a slice value, who judged) as Markdown that renders as
    exactly that text, on one line, in any place of a line: a table cell, a list item, a heading,
    bold text.

    CommonMark's markup is escaped: every character that can open a construct is backslash-escaped
    (``\\ * [ ] | ~ # $ @``, and ``_`` unless it is inside a word, where it opens nothing); ``<``,
    ``&`` and the backtick are written as entities (no HTML, no autolink, no code span, no entity of
    the text's own); a first character that could start a block (a list, a heading, a quote) is
    escaped too. So neither links nor images nor HTML nor emphasis come out of the text. GitHub's
    own links are broken as well: ``:`` before anything but a space (``https://``, ``mailto:``,
    emoji codes), and the ``.`` of ``www.``. A control character (a newline, a tab) shows as its
    Unicode picture (``␊``, ``␉``), and a space at either end as ``&#32;`` (Markdown would drop it).

    >>> print(_md("![t](https://example.com/x.png)"))
    \\!\\[t\\](https\\://example.com/x.png)
    >>> print(_md("a|b\\n`c` <d> snake_case _x"))
    a\\|b␊&#96;c&#96; &lt;d> snake_case \\_x
    """
    text = str(v)
    out = []
    n = len(text)
    for k, ch in enumerate(text):
        o = ord(ch)
        if o < 0x20:
            out.append(chr(0x2400 + o))  # ␀ … ␟: the control's picture
        elif o == 0x7F:
            out.append("\u2421")  # ␡
        elif 0x80 <= o < 0xA0:
            out.append(f"\\\\x{o:02x}")  # a C1 control, as the text \x85
        elif ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == "`":
            out.append("&#96;")  # (an entity is text, never markup; no backtick in the source at all)
        elif ch.isspace() and (k == 0 or k == n - 1):
            out.append(f"&#{o};")  # Markdown would drop it, or (next to "**") not make bold text
        elif ch in _MD_ESCAPED:
            out.append("\\" + ch)
        elif ch == "_" and not (0 < k < n - 1 and _word(text[k - 1]) and _word(text[k + 1])):
            out.append("\\_")
        elif ch == ":" and k < n - 1 and text[k + 1] not in " \t":
            out.append("\\:")
        elif ch == "." and k >= 3 and text[k - 3:k].lower() == "www":
            out.append("\\.")
        else:
            out.append(ch)
    if out and len(out[0]) == 1 and out[0] in _MD_PUNCTUATION:
        out[0] = "\\" + out[0]  # e.g. "- x", "# x", "> x", "+ x", "= x" would start a block
    else:
        lead = re.match(r"[0-9]{1,9}[.)]", text)
        if lead:  # "1. x" and "2) x" would start an ordered list
            out[lead.end() - 1] = "\\" + out[lead.end() - 1]
    return "".join(out)


#: Characters :func:`_md` always backslash-escapes (each can open a Markdown construct anywhere).
_MD_ESCAPED = frozenset("\\*[]|~#$@")
#: CommonMark's ASCII punctuation: each may be backslash-escaped.
_MD_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _word(ch: str) -> bool:
    """An ASCII letter or digit: an ``_`` between two of them opens no emphasis."""
    return ch.isascii() and ch.isalnum()
