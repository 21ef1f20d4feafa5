"""The report's data as one self-contained HTML page (the Markdown summary: :mod:`abcde.report.markdown`).

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
from typing import Any

import jinja2
from markupsafe import Markup, escape

from abcde.core.diff import describe_restriction
from abcde.core.names import IMPACT_METRICS, METRIC_LABELS, PAGE_NAMES, QUALITY_COLUMNS, QUALITY_METRICS, RECALL_METRIC
from abcde.report.charts import VEGA_LITE_VERSION, chart_specs, most_affected
from abcde.report.views import (Column, count, distances_view, entities_view, four, ids_view, num, pct, recall_note, sentence,
                                truth_lift_text, truth_sample_view)
from abcde.util import display
from abcde.util.display import interval
from abcde.util.files import write_text
from abcde.util.templates import cache_dir, environment

STATIC = files("abcde.report") / "static"
#: The JavaScript helpers all of abcde's pages share (the global ``abcde``).
COMMON_JS = files("abcde") / "assets" / "common.js"


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
                  "caption": sentence(most_affected(len(top["interleaved"])))},
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
        "truth_lift": truth_lift_text(data),
        "truth_note": data.get("truth_note") or "",
        "truth_sample": truth_sample_view(data.get("truth_sample"), names),
        "ids": ids_view(data.get("ids"), names),
        "entities": entities_view(data.get("entities")),
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
        "counts_of": q.get("counts_of") or "anyone",
        "judged_pairs": q["judged_pairs"], "unsure_pairs": q["unsure_pairs"], "missing_pairs": q["missing_pairs"],
        "rater_disagreements": q.get("rater_disagreements"),
        "split_rate": q["split_rate"], "merge_rate": q["merge_rate"],
        "rows": [{"key": k, "label": METRIC_LABELS[k], "estimate": q[k]["estimate"], "std_err": q[k]["std_err"],
                  "shown": display.estimate(k, q[k]["estimate"]), "shown_se": display.estimate(k, q[k]["std_err"]),
                  "interval": display.estimate_interval(k, q[k]), "n_judgements": q[k]["n_judgements"],
                  # why "± s.e. 0" sits beside an interval with width, when it does
                  "note": "; ".join(x for x in (q[k].get("note", ""), display.zero_se_note(k, q[k])) if x)}
                 for k in QUALITY_METRICS + ((RECALL_METRIC,) if (q.get(RECALL_METRIC) or {}).get("available") else ())],
        "recall_note": recall_note(q),
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
        "distances": distances_view(q.get("distances")),
    }


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
    env.filters.update(pct=pct, num=num, four=four, count=count, options=options_whole)
    return env


#: A command-line option and its value (``--extend pairs/``, ``--budget 600``).
_OPTION = re.compile(r"(--[A-Za-z][\w-]*(?: [^\s,;()]+)?)")


def options_whole(text) -> Markup:
    """``text`` escaped, each command-line option kept whole with its value (``<span class="opt">``,
    never broken at its hyphens or before its value: a Next command reads as it is typed).

    >>> str(options_whole("run abcde pairs --extend d/ --budget 600, then <judge>"))
    'run abcde pairs <span class="opt">--extend d/</span> <span class="opt">--budget 600</span>, then &lt;judge&gt;'
    """
    escaped = str(escape(text))
    return Markup(_OPTION.sub(r'<span class="opt">\1</span>', escaped))


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
