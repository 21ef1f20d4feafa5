"""report.md shows user-supplied text as text (issue 25, class 8).

Cluster ids, the clusterings' names, slice values and who judged come from the user's files and
options; ``report.md`` goes into code review comments. Rendered by a real CommonMark renderer
(markdown-it-py, with GitHub's tables and strikethrough), none of it may become an image, a link,
HTML, code, emphasis, a heading, a list or a quote, a table cell may not split, and the text must
come out as it went in (a control character as its Unicode picture, ␊ for a newline). GitHub's own
autolinks (``https://``, ``www.``, ``a@b.co``) are checked on the Markdown source, since CommonMark
has none.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import abcde
from abcde.quality import draw_pair_sample, estimate_quality, oracle_judge
from abcde.report import build_report
from abcde.report.markdown import md as _md

#: GitHub-flavoured enough: tables and strikethrough on, raw HTML passed through (so an escape that
#: fails shows up as an html_inline token).
MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")

HOSTILE = [
    "![t](https://example.com/x.png)", "[link](https://evil.example/x)", "[a]: https://evil.example",
    "<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<https://evil.example>", "<!-- c -->",
    "a|b|c", "`code`", "``double``", "line\nbreak", "carriage\rreturn", "tab\there", "# heading", "### h ###",
    "* star", "**bold**", "_under_", "__dunder__", "- dash", "+ plus", "> quote", "1. one", "2) two", "===",
    "---", "~~strike~~", "$x^2$", ":smile:", "https://evil.example", "www.evil.example", "me@evil.example",
    "&amp; &#60; &lt;", "back\\slash\\", "\\*", "  two spaces", "trailing  ", "\u00a0nbsp\u00a0", "x\x00y\x7f\x85",
    "[^1]", "snake_case_id", "a_b*c_d", "(x)[y]", "!", "",
]

#: Where render_markdown puts user text: a heading, bold text, a list item, a table cell, a sentence.
CONTEXTS = {
    "heading": ("### ABCDE: {} vs Base", "ABCDE: {} vs Base"),
    "bold": ("**{}**", "{}"),
    "item": ("- {}", "{}"),
    "judged": ("- Judged by {}.", "Judged by {}."),
    "cell": ("| side | cluster | size |\n|---|---|---:|\n| base | {} | 2 |", "{}"),
    "sentence": ("Quality (judged by {}; estimator stratified):", "Quality (judged by {}; estimator stratified):"),
}
ALLOWED = {"text", "softbreak"}  # inline tokens user text may make (bold adds strong_open/close itself)


def visible(text: str) -> str:
    """What the text must render as: control characters as their pictures (C1 as ``\\x85``)."""
    out = []
    for ch in text:
        o = ord(ch)
        out.append(chr(0x2400 + o) if o < 0x20 else "\u2421" if o == 0x7F else f"\\x{o:02x}" if 0x80 <= o < 0xA0
                   else ch)
    return "".join(out)


def rendered_text(context: str, text: str) -> str:
    """Render ``text`` through :func:`_md` in ``context``; check the block structure and the inline
    tokens; return the text of the inline part that holds it."""
    template, _ = CONTEXTS[context]
    src = template.format(_md(text))
    assert "\n" not in _md(text)
    tokens = MD.parse(src)
    blocks = [t.type for t in tokens if t.type != "inline"]
    want_blocks = {
        "heading": ["heading_open", "heading_close"],
        "bold": ["paragraph_open", "paragraph_close"], "sentence": ["paragraph_open", "paragraph_close"],
        "item": ["bullet_list_open", "list_item_open", "paragraph_open", "paragraph_close", "list_item_close",
                 "bullet_list_close"],
        "cell": ["table_open", "thead_open", "tr_open"] + ["th_open", "th_close"] * 3 + ["tr_close", "thead_close",
                 "tbody_open", "tr_open"] + ["td_open", "td_close"] * 3 + ["tr_close", "tbody_close", "table_close"],
    }
    want_blocks["judged"] = want_blocks["item"]
    if context == "item" and text == "":
        want_blocks["item"] = ["bullet_list_open", "list_item_open", "list_item_close", "bullet_list_close"]
    assert blocks == want_blocks[context], (text, src, blocks)
    inline = [t for t in tokens if t.type == "inline"]
    part = inline[4] if context == "cell" else inline[0] if inline else None
    if part is None:
        return ""
    kinds = [c.type for c in part.children if c.type != "text" or c.content]  # (markdown-it adds empty texts)
    if context == "bold":
        assert kinds[0] == "strong_open" and kinds[-1] == "strong_close", (text, src, kinds)
        kinds = kinds[1:-1]
    assert set(kinds) <= ALLOWED, (text, src, kinds)
    if context == "cell":
        assert [t.content for t in inline[3:6:2]] == ["base", "2"], (text, src)  # the row did not split
    return "".join(c.content for c in part.children if c.type == "text")


def github_safe(src: str) -> None:
    """No GitHub autolink in the Markdown source: no unescaped ``://``, ``www.`` or ``@``."""
    assert not re.search(r"(?<!\\)://", src), src
    assert "www." not in src.lower(), src
    assert not re.search(r"(?<!\\)@", src), src


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t)[:30] for t in HOSTILE])
def test_hostile_text_renders_as_itself(text, context):
    if text == "" and context == "bold":
        return  # "****" is a thematic break; the verdict's first sentence is never empty
    _, want = CONTEXTS[context]
    assert rendered_text(context, text) == want.format(visible(text))
    github_safe(_md(text))


MARKUP = st.sampled_from(list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\r")
                         + ["a", "b", "Z", "1", "9", "www", "http", "é", "\x00", "\x7f", "\x85", "&amp;", "&#x41;",
                            "\u00a0", "\u2028", "<img src=x>", "](", "![", "://"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MARKUP, min_size=1, max_size=16).map("".join), st.sampled_from(sorted(CONTEXTS)))
def test_any_text_renders_as_itself(text, context):
    _, want = CONTEXTS[context]
    assert rendered_text(context, text) == want.format(visible(text))
    github_safe(_md(text))


def test_the_verdict_reads_as_it_did():
    """Plain sentences and names keep their look: only what could be markup is escaped."""
    s = "Exp is less precise than Base: Precision went down by 0.0058 (95% interval -0.0103 to -0.0012)."
    assert _md(s) == s
    assert _md("an oracle (simulated judgements from the items' 'entity_id' column), not people") == \
        "an oracle (simulated judgements from the items' 'entity_id' column), not people"
    assert _md("rec-765-dup-0") == "rec-765-dup-0"


def test_a_report_with_hostile_ids_names_slices_and_judges(tmp_path):
    """A whole report.md: hostile cluster ids (the most affected clusters), names of the clusterings
    (the heading, the truth table, the restriction), a hostile slice value and who judged."""
    ids = ["![t](https://example.com/x.png)", "<img src=x onerror=alert(1)>", "a|b\n# H", "[x](https://e.example)",
           "`rm -rf`"]
    members = [f"i{k}" for k in range(2 * len(ids))]
    base = pa.table({"item_id": members + ["only-base"], "cluster_id": [ids[k // 2] for k in range(len(members))]
                     + ["z"]})
    exp = pa.table({"item_id": members, "cluster_id": [f"e{k}" for k in range(len(members))]})
    items = pa.table({"item_id": members, "weight": [1.0] * len(members),
                      "src": ["**x** <b>y</b>" if k % 2 else "www.evil.example" for k in range(len(members))],
                      "truth": [str(k // 2) for k in range(len(members))]})
    paths = {}
    for name, t in (("base", base), ("exp", exp), ("items", items)):
        paths[name] = tmp_path / f"{name}.parquet"
        pq.write_table(t, paths[name])
    res = abcde.impact(paths["base"], paths["exp"], items=paths["items"], slice_by=["src"], top=5)
    d = draw_pair_sample(paths["base"], paths["exp"], tmp_path / "pairs", items=paths["items"], budget=5, seed=1,
                         slice_by=["src"])
    oracle_judge(d, "truth")
    q = estimate_quality(d, slice_by=["src"])
    names = ("<b>B</b> ![i](https://e.example/i.png)", "Exp | # x")
    truth = {"base": abcde.pointwise(paths["base"], paths["base"]), "exp": abcde.pointwise(paths["base"], paths["exp"])}
    judged = "[people](https://evil.example) @everyone"
    md = build_report(res, quality=q, judged_by=judged, names=names, truth=truth).to_markdown()
    tokens = MD.parse(md)
    everything = [c for t in tokens if t.type == "inline" for c in t.children]
    kinds = {c.type for c in everything}
    assert not kinds & {"image", "link_open", "html_inline", "code_inline", "em_open", "s_open"}, kinds
    assert not {t.type for t in tokens} & {"html_block", "code_block", "fence", "blockquote_open"}
    assert [t.type for t in tokens].count("heading_open") == 1
    github_safe(md)
    shown = {"".join(c.content for c in t.children if c.type in ("text", "softbreak")) for t in tokens
             if t.type == "inline"}
    for cid in ids:
        assert visible(cid) in shown, (cid, shown)  # each most affected cluster, whole, in its own cell
    assert f"ABCDE: {names[1]} vs {names[0]}" in shown  # the heading
    assert {names[0], names[1]} <= shown  # the truth table's rows
    assert any(f"Quality (judged by {judged}; estimator" in s for s in shown), shown
