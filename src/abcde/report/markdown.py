"""The report's data as a short Markdown summary, for a code review comment (:func:`render_markdown`).

Numbers are formatted by :mod:`abcde.util.display` as everywhere; the sections shared with the HTML
page come from :mod:`abcde.report.views`. Every user-supplied text (an id, a name, a slice value,
who judged) goes through :func:`md`, so it renders as exactly that text.
"""

from __future__ import annotations

import re

from abcde.core.names import IMPACT_METRICS, METRIC_LABELS, QUALITY_METRICS, RECALL_METRIC
from abcde.report.charts import most_affected
from abcde.report.views import distances_view, entities_view, ids_view, num, recall_note, sentence, truth_lift_text, truth_sample_view
from abcde.util import display


def render_markdown(data: dict) -> str:
    """A short Markdown summary of the report, for a code review comment."""
    L = METRIC_LABELS
    h = data["headline"]
    n = data["names"]
    lines = [f"### ABCDE: {md(n['exp'])} vs {md(n['base'])}", ""]
    v = data.get("verdict_facts")
    if v and v.get("sentences"):
        head, *rest = v["sentences"]
        judged = (data.get("quality") or {}).get("judged_by")
        lines += [f"**{md(head)}**", ""] + [f"- {md(x)}" for x in rest] + (
            [f"- Judged by {md(judged)}."] if judged else []) + [""]
    if data["identical"]:
        lines += [f"The clusterings are **identical** on the {h['items']:,} common items: nothing changed.", ""]
    lines += ["| " + " | ".join(L[k] for k in IMPACT_METRICS) + " | affected items | items |",
              "|---:|---:|---:|---:|---:|",
              "| " + " | ".join(display.pct(h[k]) for k in IMPACT_METRICS) + " | "
              f"{h['affected_items']:,} ({display.pct(h['affected_weight_share'])} of weight) | {h['items']:,} |", ""]
    ts = truth_sample_view(data.get("truth_sample"), n)
    if ts is not None:
        lines += _markdown_truth_sample(ts)
    elif data.get("truth"):
        lines += ["Against the ground truth:", "", "| clustering | Precision | Recall (pointwise) | F1 |", "|---|---:|---:|---:|"]
        lines += [f"| {md(n.get(side, side))} | {display.pct(t['precision'])} | {display.pct(t['recall'])} | "
                  f"{display.pct(t['f1'])} |"
                  for side, t in data["truth"].items()]
        lines.append("")
        if data.get("truth_note"):
            lines += [md(data["truth_note"]), ""]
        if truth_lift_text(data):
            lines += [md(truth_lift_text(data)), ""]
    lines += _markdown_ids(ids_view(data.get("ids"), n))
    r = data["restriction"]
    if r["base_only_items"] or r["exp_only_items"]:
        lines += [f"Restricted to {r['common_items']:,} common items: {r['base_only_items']:,} only in "
                  f"{md(n['base'])}, {r['exp_only_items']:,} only in {md(n['exp'])} were excluded.", ""]
    top = data["top_clusters"]["interleaved"][:5]
    if top:
        lines += [f"{sentence(most_affected(len(top)))}:", "",
                  f"| side | cluster | size | {L['split_rate']} | {L['merge_rate']} | contribution |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {c['side']} | {md(c['cluster_id'])} | {c['size']:,} | {display.pct(c['split_rate'])} | "
                  f"{display.pct(c['merge_rate'])} | {display.pct(c['contribution'])} |" for c in top]
        lines.append("")
    q = data.get("quality")
    if q:
        alloc = f", allocation {q['allocation']}" if q.get("allocation") else ""
        lines += [f"Quality (judged by {md(q['judged_by'])}; estimator {q.get('estimator', 'paper')}{alloc}; "
                  f"{q['judged_pairs']:,} pairs judged by {md(q.get('counts_of') or 'anyone')}, "
                  f"{q['unsure_pairs']:,} unsure):", "",
                  "| metric | estimate | 95% interval |", "|---|---:|---:|"]
        shown = QUALITY_METRICS + ((RECALL_METRIC,) if (q.get(RECALL_METRIC) or {}).get("available") else ())
        for k in shown:
            lines.append(f"| {L[k]} | {display.estimate(k, q[k]['estimate'])} | {display.estimate_interval(k, q[k])} |")
        lines.append("")
        if recall_note(q):
            lines += [md(recall_note(q)), ""]
        lines += _markdown_distances(distances_view(q.get("distances")))
    ent = entities_view(data.get("entities"))
    if ent:
        lines += [f"Entity completion: {md(ent['beside'])}", "", "| number | estimate | 95% interval |", "|---|---:|---:|"]
        lines += [f"| {r['label']} | {r['shown']} | {r['interval']} |" for r in ent["rows"]]
        lines += ["", md(ent["verdict"]), "", md(ent["design"]), ""]
    return "\n".join(lines) + "\n"


#: The ids whose class differs that the Markdown lists (the page: up to ``IDS_TOP``).
MARKDOWN_IDS = 10


def _markdown_ids(v: dict | None) -> list[str]:
    """The id table's section as Markdown: the class counts per scheme, the ids whose class differs
    (the first :data:`MARKDOWN_IDS`, most weight first) and the construction in a paragraph."""
    if v is None:
        return []
    lines = [f"Ids by lineage (exact): {md(v['summary'])}", "",
             "| class | " + " | ".join(md(s["label"]) for s in v["sides"]) + " |", "|---|---:|---:|"]
    lines += [f"| {r['class']} | {r['base_shown']} | {r['exp_shown']} |" for r in v["counts"]]
    lines.append("")
    rows = v["differing"][:MARKDOWN_IDS]
    if rows:
        cols = v["columns"]
        lines += [f"{md(v['differing_title'])}:", "", "| " + " | ".join(md(c.label) for c in cols) + " |",
                  "|" + "|".join("---:" if c.fmt is num else "---" for c in cols) + "|"]
        lines += ["| " + " | ".join(md(c.show(r.get(c.key))) for c in cols) + " |" for r in rows]
        if len(v["differing"]) > MARKDOWN_IDS:
            lines.append(f"| … {len(v['differing']) - MARKDOWN_IDS:,} more in the page |" + " |" * (len(cols) - 1))
        lines.append("")
    return lines + [md(v["text"]), ""]


def _markdown_truth_sample(ts: dict) -> list[str]:
    """A truth sample's estimates as Markdown: the table (estimate ± s.e. and the 95% interval per
    side and for the paired difference), the design, the notes and the restricted numbers."""
    cols = ts["columns"]
    lines = ["Against the ground truth (a sample of entities; population estimates with 95% intervals):", "",
             "| | " + " | ".join(f"{md(c['label'])} | 95% interval" for c in cols) + " |",
             "|---|" + "---:|---:|" * len(cols)]
    for r in ts["rows"]:
        lines.append(f"| {r['label']} | " + " | ".join(f"{c['shown']} ± {c['se']} | {c['interval']}"
                                                       for c in r["cells"]) + " |")
    lines += ["", md(ts["text"]), ""]
    lines += [f"- {md(x)}" for x in ts["notes"]] + ([""] if ts["notes"] else [])
    if ts["restricted"]:
        lines += [md(ts["restricted_text"]), "", "| clustering | Precision | Recall (pointwise) | F1 |", "|---|---:|---:|---:|"]
        lines += [f"| {md(r['side'])} | {r['precision']} | {r['recall']} | {r['f1']} |" for r in ts["restricted"]]
        lines.append("")
    return lines


def _markdown_distances(v: dict | None) -> list[str]:
    """The panel "JaccardDistance = good + bad" as Markdown lines (overall; per slice, the first 10)."""
    if v is None:
        return []
    title = f"{METRIC_LABELS['jaccard_distance']} = good + bad"
    if not v["available"]:
        return [f"{title}: {md(v['note'])}.", ""]
    lines = [f"{title} (from the same judged pairs; Good + Bad = the exact part):", "",
             "| | exact | good | 95% interval | bad | 95% interval | good share |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['label']} | {r['exact']} | {r['good']} | {r['good_interval']} | {r['bad']} | {r['bad_interval']} "
              f"| {r['good_share']} |" for r in v["rows"]]
    lines.append("")
    for s in v["slices"]:
        lines += [f"{title} by {md(s['name'])}:", "",
                  f"| {md(s['name'])} | {METRIC_LABELS['jaccard_distance']} | good | 95% interval | bad "
                  "| good share |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {md(r['value'])} | {r['exact']} | {r['good']} | {r['good_interval']} | {r['bad']} | "
                  f"{r['good_share']} |" for r in s["rows"][:10]]
        if len(s["rows"]) > 10:
            lines.append(f"| … {len(s['rows']) - 10:,} more | | | | | |")
        lines.append("")
    return lines


def md(v) -> str:
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

    >>> print(md("![t](https://example.com/x.png)"))
    \\!\\[t\\](https\\://example.com/x.png)
    >>> print(md("a|b\\n`c` <d> snake_case _x"))
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


#: Characters :func:`md` always backslash-escapes (each can open a Markdown construct anywhere).
_MD_ESCAPED = frozenset("\\*[]|~#$@")
#: CommonMark's ASCII punctuation: each may be backslash-escaped.
_MD_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _word(ch: str) -> bool:
    """An ASCII letter or digit: an ``_`` between two of them opens no emphasis."""
    return ch.isascii() and ch.isalnum()
