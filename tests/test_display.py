"""What a person reads, in one style everywhere (issue 14): the notebook's rich display of the three
results shows the numbers of their JSON, with the paper's names, in the terminal's number style."""

from __future__ import annotations

import re

from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.core.names import METRIC_LABELS
from abcde.examples import example_paths
from abcde.util import display

P = example_paths("febrl3")


def cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html)


def test_number_style():
    assert display.pct(0.123456) == "12.346%" and display.pct(None) == "n/a"
    assert display.four(2.96702e-11) == "0.0000" and display.four(-1e-12) == "0.0000"
    assert display.four(float("nan")) == "n/a" and display.four(-0.01234) == "-0.0123"
    assert display.weight(9834.8) == "9,834.8" and display.weight(5000.0) == "5,000"
    assert display.count(1234567) == "1,234,567"


def test_the_notebook_shows_the_json_numbers(tmp_path):
    imp = abcde.impact(P["base"], P["exp"], items=P["items"])
    h = imp._repr_html_()
    d = imp.to_dict()
    for key in ("split_rate", "merge_rate", "jaccard_distance"):
        assert METRIC_LABELS[key] in h and display.pct(d[key]) in cells(h)
    assert display.count(d["items"]) in cells(h)
    # the terminal shows the same numbers in the same style
    r = CliRunner().invoke(main, ["impact", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "-q"])
    assert r.exit_code == 0, r.output
    for key in ("split_rate", "merge_rate", "jaccard_distance"):
        assert display.pct(d[key]) in r.output

    d_dir = tmp_path / "s"
    abcde.draw_pair_sample(P["base"], P["exp"], d_dir, items=P["items"], budget=40, seed=1, hide=["entity_id"])
    abcde.oracle_judge(d_dir, "entity_id")
    q = abcde.estimate_quality(d_dir)
    h = q._repr_html_()
    qd = q.to_dict()
    for key in ("delta_precision", "good_split_rate", "bad_merge_rate"):
        assert METRIC_LABELS[key] in h and display.estimate(key, qd[key]["estimate"]) in cells(h)
    r = CliRunner().invoke(main, ["quality", str(d_dir)])
    assert r.exit_code == 0, r.output
    for key in ("delta_precision", "good_split_rate", "bad_merge_rate"):
        assert display.estimate(key, qd[key]["estimate"]) in r.output

    s = abcde.sample_items(P["base"], P["exp"], items=P["items"], size=50, seed=1)
    assert display.pct(s.metadata["jaccard_distance_T"]) in cells(s._repr_html_())
    est = s.estimate()
    assert display.pct(est.jaccard_contribution) in cells(est._repr_html_())


# Values that exercise every rule: zero, tiny residues of either sign, rates, negatives, whole and
# fractional weights of every magnitude, and missing values. (Exact binary ties such as 0.125 at
# 2 decimals are left out: Python rounds them to even, JavaScript's toFixed up.)
STYLE_VALUES = [0.0, 2.96702e-11, -1e-12, -0.01234, 0.123456, 1.0, 0.5, -0.98765, 0.00049, 7.1e-5,
                9834.8, 5000.0, 1234567.0, 1234567.89, 3.14159265, 0.000123456, 12.0, 999999.4, 42.42,
                -250.75, 1e-9, -2e-7, 3.3e-8, -4.2e-6, 1.23e-6, -0.0, None, float("nan")]


def test_the_pages_format_numbers_as_the_terminal_does(page):
    """assets/common.js, given the style of abcde.util.display as every page is (PAGE_NAMES), formats
    every value exactly as the Python side does: a rate, an estimate, a weight, a count, a null."""
    import json
    from importlib.resources import files

    from abcde.core.names import PAGE_NAMES

    page.set_content(f"<html><body data-names='{json.dumps(PAGE_NAMES)}'></body></html>")
    page.add_script_tag(content=(files("abcde") / "assets" / "common.js").read_text())
    values = [None if v is not None and v != v else v for v in STYLE_VALUES]  # NaN has no JSON; null does
    js = page.evaluate("""vs => vs.map(v => [abcde.pct(v), abcde.four(v), abcde.weight(v), abcde.num(v)])""", values)
    py = [[display.pct(v), display.four(v), display.weight(v), display.weight(v)] for v in values]
    assert js == py
    counts = [0, 7, 1234, 1234567, 10**12]
    assert page.evaluate("vs => vs.map(abcde.count)", counts) == [display.count(c) for c in counts]
    assert page.evaluate("abcde.NULL_TEXT") == display.NULL_TEXT
    assert page.evaluate("abcde.style()") == display.STYLE
    # an estimate in its metric's style: the Good/Bad rates as percentages, the rest with 4 decimals
    metrics = ["delta_precision", "precision", *display.PERCENT_ESTIMATES]
    js = page.evaluate("([ms, vs]) => ms.map(m => vs.map(v => abcde.estimate(m, v)))", [metrics, values])
    assert js == [[display.estimate(m, v) for v in values] for m in metrics]
