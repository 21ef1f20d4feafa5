"""The HTML report: opened in a real headless Chromium with every non-local request blocked.

The demo (the README's main job) writes the report; its headline and quality numbers on
the page must equal ``abcde report --json`` and the library's results.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from content import assert_same_content, assert_shows
import abcde
from abcde.examples import example_paths
from abcde.quality import estimate_quality
from abcde.report import build_report

HOSTILE = ["<script>window.__pwned=1</script>", "<img src=x onerror=\"window.__pwned=1\">",
           "</script><script>window.__pwned=1</script>"]


def abcde_cli(*args, check=True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True,
                          check=check)


@pytest.fixture(scope="module")
def demo(demo_run):
    """The README's main job on the bundled example: impact, sample, pairs, oracle judgements, report
    (run once per test run, see conftest.demo_run)."""
    return demo_run


def open_report(page, path: Path, charts: int | None = None):
    page.goto(path.resolve().as_uri())
    page.wait_for_function("window.__reportReady === true")
    if charts:
        page.wait_for_function(f"window.__charts >= {charts}", timeout=30000)
    assert page.errors == []
    assert page.blocked == [], "the report must not load anything from the network"


def test_demo_report_numbers_equal_json_and_render_offline(demo, page, screenshot):
    out, d = demo
    html_path, md_path = out / "report.html", out / "report.md"
    assert str(html_path) in d["written"] and str(md_path) in d["written"]
    text = html_path.read_text()
    # Self-contained: no external scripts, styles or images (the browser check below proves no request).
    head, body = text.split("</head>", 1)
    assert re.findall(r"<script[^>]*>", head[:head.index("<script>") + 8]) == ["<script>"]  # the inlined bundle
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+href=", body)
    specs = json.loads(re.search(r'<script type="application/json" id="chart-specs">(.*?)</script>', text, re.S)
                       .group(1))
    assert {"jaccard_histogram", "cluster_contributions", "quality", "slice:state", "slice:source"} <= set(specs)
    open_report(page, html_path, charts=len(specs))
    # Headline numbers on the page are the impact result's.
    for key in ("split_rate", "merge_rate", "jaccard_distance", "affected_items", "items"):
        shown = page.get_attribute(f'[data-metric="{key}"]', "data-value")
        assert float(shown) == pytest.approx(d["impact"][key], rel=1e-12, abs=1e-15)
        assert_shows(page.inner_text(f'[data-metric="{key}"]'), d["impact"][key], key)  # what a person reads
    # Against the example's true entities: the demo's pointwise numbers, as a person reads them.
    for side in ("base", "exp"):
        for k in ("precision", "recall", "f1"):
            want = d["pointwise_against_truth"][side][k]
            cell = f'#truth tr[data-side="{side}"] td[data-col="{k}"]'
            assert float(page.get_attribute(cell, "data-value")) == pytest.approx(want, rel=1e-12)
            assert_shows(page.inner_text(cell), want, f"{side} {k}")
    assert f"{100 * d['pointwise_against_truth']['exp']['f1']:.3f}%" in md_path.read_text()
    # The charts are real Vega renderings (SVG marks), one per spec.
    assert page.locator(".chart svg").count() == len(specs)
    # Quality: the estimates on the page equal the CLI's, labelled as oracle judgements.
    assert "oracle" in page.inner_text(".judged-by") and "not people" in page.inner_text(".judged-by")
    assert "estimator: paper" in page.inner_text(".judged-by") or "estimator: stratified" in page.inner_text(
        ".judged-by")
    q = json.loads(abcde_cli("quality", out / "quality", "--json").stdout)
    for key in ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate"):
        shown = page.get_attribute(f'tr[data-quality="{key}"] td.est', "data-value")
        assert float(shown) == pytest.approx(q[key]["estimate"], rel=1e-12)
        assert_shows(page.inner_text(f'tr[data-quality="{key}"] td.est'), q[key]["estimate"], key)
    # The most affected clusters: the first row is the JSON's first interleaved cluster, and opening it
    # draws split / stable / merge with the exact counts of the chosen item's fragment.
    top = d["impact"]["top_clusters"]["interleaved"][0]
    row = page.locator("tr.cluster").first
    assert row.get_attribute("data-cluster") == str(top["cluster_id"])
    row.click()
    fig = page.locator("tr.detail .fig")
    counts = {g: int(fig.locator(f'[data-group="{g}"] .lab').first.get_attribute("data-count"))
              for g in ("split", "stable", "merge")}
    nb = json.loads(re.search(r'id="report-data">(.*?)</script>', text, re.S).group(1).replace("\\u003c", "<")
                    .replace("\\u003e", ">").replace("\\u0026", "&"))["neighbourhoods"][top["side"]][str(top["cluster_id"])]
    pov = next(f for f in nb["fragments"] if f["own_frag"])
    assert counts == {"stable": pov["n"], "split": pov["nb"] - pov["n"], "merge": pov["ne"] - pov["n"]}
    screenshot(page, "report.png")
    # The Markdown summary has the same headline.
    md = md_path.read_text()
    assert f"{100 * d['impact']['split_rate']:.3f}%" in md and "oracle" in md  # the one style: rates with 3 decimals


def test_report_json_equals_library(tmp_path):
    p = example_paths("febrl3")
    r = abcde_cli("report", "--base", p["base"], "--exp", p["exp"], "--items", p["items"], "--slice-by", "source",
                  "--out", tmp_path / "r.html", "--markdown", tmp_path / "r.md", "--json")
    d = json.loads(r.stdout)
    res = abcde.impact(p["base"], p["exp"], items=p["items"], slice_by=["source"], top=20)
    lib = build_report(res).to_dict()
    for key in ("headline", "restriction", "top_clusters", "slices", "neighbourhoods", "charts"):
        assert_same_content(d[key], json.loads(json.dumps(lib[key])), key)
    assert "quality" not in d
    assert (tmp_path / "r.html").exists() and (tmp_path / "r.md").exists()
    # The histogram's shares add up to the whole affected weight.
    assert sum(b["weight_share"] for b in d["charts"]["jaccard_histogram"]) == pytest.approx(1.0)


def test_identical_clusterings_say_so(tmp_path, page):
    p = example_paths("febrl3")
    r = abcde_cli("report", "--base", p["base"], "--exp", p["base"], "--out", tmp_path / "same.html",
                  "--markdown", tmp_path / "same.md", "--json")
    d = json.loads(r.stdout)
    assert d["identical"] is True and d["headline"]["jaccard_distance"] == 0
    text = (tmp_path / "same.html").read_text()
    assert "vegaEmbed=" not in text  # no charts, so no chart library either
    open_report(page, tmp_path / "same.html")
    body = page.inner_text("body")
    assert "The two clusterings are identical" in body
    assert "NaN" not in body and "undefined" not in body
    assert page.locator(".chart").count() == 0
    assert "identical" in (tmp_path / "same.md").read_text()


def test_hostile_item_text_stays_inert(tmp_path, write, page):
    n = 6
    base = write("base.parquet", item_id=list(range(n)), cluster_id=["a"] * n)
    exp = write("exp.parquet", item_id=list(range(n)), cluster_id=["a", "a", "a", "b", "b", "b"])
    names = HOSTILE + ["plain"] * (n - len(HOSTILE))
    items = write("items.parquet", item_id=list(range(n)), label=names,
                  source=["<b>x</b>", "y", "y", "<i>z</i>", "y", "y"])
    res = abcde.impact(base, exp, items=items, slice_by=["source"])
    rep = build_report(res, title="<script>window.__pwned=1</script>")
    rep.write(tmp_path / "r.html", markdown=tmp_path / "r.md")
    open_report(page, tmp_path / "r.html", charts=3)
    page.locator("tr.cluster").first.click()
    page.locator("tr.detail .fig li").first.wait_for()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("tr.detail .fig img").count() == 0
    listed = page.inner_text("tr.detail .fig")
    assert "<script>window.__pwned=1</script>" in listed and "<img src=x" in listed
    assert "<script>window.__pwned=1</script>" in page.inner_text("h1")
    assert "<b>x</b>" in page.inner_text("#slices")
    assert "<script>" not in (tmp_path / "r.md").read_text().replace("&lt;script>", "")


def test_csp_allows_only_the_inlined_code_and_the_page_works_under_it(tmp_path, write, browser):
    """The page's Content-Security-Policy lists exactly its inline scripts and styles by hash (no
    'unsafe-inline', no 'unsafe-eval'), and the page works with that policy enforced (the ``page``
    fixture bypasses it): charts drawn, nothing refused, no style injected, hostile text inert."""
    n = 6
    base = write("base.parquet", item_id=list(range(n)), cluster_id=["a"] * n)
    exp = write("exp.parquet", item_id=list(range(n)), cluster_id=["a", "a", "a", "b", "b", "b"])
    items = write("items.parquet", item_id=list(range(n)), label=HOSTILE + ["plain"] * (n - len(HOSTILE)),
                  source=["<b>x</b>", "y", "y", "<i>z</i>", "y", "y"])
    rep = build_report(abcde.impact(base, exp, items=items, slice_by=["source"]), title=HOSTILE[2])
    rep.write(tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text).group(1)
    policy = dict(d.strip().split(" ", 1) for d in csp.replace("&#39;", "'").split(";"))
    assert policy["default-src"] == "'none'"

    def sources(pattern):
        return sorted("'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
                      for body in re.findall(pattern, text, re.S))

    scripts, styles = sources(r"<script>(.*?)</script>"), sources(r"<style>(.*?)</style>")
    assert len(scripts) == 3 and len(styles) == 2  # vega bundle, common.js, report.js; vega.css, report.css
    assert sorted(policy["script-src"].split()) == scripts and sorted(policy["style-src"].split()) == styles
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        pg = ctx.new_page()
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.add_init_script("window.__violations = []; document.addEventListener('securitypolicyviolation', "
                           "e => window.__violations.push(e.violatedDirective));")
        pg.goto((tmp_path / "r.html").resolve().as_uri())
        deadline = time.monotonic() + 30
        while not pg.evaluate("window.__reportReady === true && window.__charts >= 3"):
            assert time.monotonic() < deadline, "the page did not draw its charts under its CSP"
            time.sleep(0.1)
        assert pg.locator(".chart svg").count() == 3
        pg.locator("tr.cluster").first.click()
        pg.locator("tr.detail .fig li").first.wait_for()
        assert pg.evaluate("window.__violations") == [] and errors == []
        assert pg.locator("style").count() == 2  # vega's default styles come with the page, not injected
        assert pg.evaluate("window.__pwned") is None and HOSTILE[2] in pg.inner_text("h1")
    finally:
        ctx.close()


def test_huge_cluster_is_truncated_with_exact_counts(tmp_path, write, page):
    n = 3000
    base = write("base.parquet", item_id=list(range(n)), cluster_id=[0] * n)
    exp = write("exp.parquet", item_id=list(range(n)), cluster_id=[i % 7 for i in range(n)])
    res = abcde.impact(base, exp, top=3)
    rep = build_report(res, members_per_fragment=5)
    nb = rep.to_dict()["neighbourhoods"]["base"]["0"]
    assert nb["fragments_total"] == 7 and len(nb["members"]) == 7 * 5
    rep.write(tmp_path / "r.html")
    assert (tmp_path / "r.html").stat().st_size < 3_000_000
    open_report(page, tmp_path / "r.html")
    page.locator('tr.cluster[data-side="base"]').first.click()
    split = page.locator('tr.detail [data-group="split"]')
    exact = n - len(range(0, n, 7))
    assert int(split.locator(".lab").first.get_attribute("data-count")) == exact
    assert f"… and {exact - 6 * 5:,} more not listed" in split.inner_text()


def test_report_with_restriction_lists_what_was_dropped(tmp_path, write):
    base = write("base.parquet", item_id=[1, 2, 3, 9], cluster_id=["a", "a", "b", "b"])
    exp = write("exp.parquet", item_id=[1, 2, 3, 8], cluster_id=["a", "b", "b", "b"])
    res = abcde.impact(base, exp)
    html = build_report(res).to_html()
    assert "only in Base were excluded, e.g. 9" in html and "only in Exp were excluded, e.g. 8" in html
    md = build_report(res).to_markdown()
    assert "1 only in Base, 1 only in Exp were excluded" in md


def test_report_quality_slices_and_nan_free_json(demo):
    out, _ = demo
    p = example_paths("febrl3")
    res = abcde.impact(p["base"], p["exp"], items=p["items"])
    q = estimate_quality(out / "quality", slice_by=["source"])
    d = build_report(res, quality=q, judged_by="people").to_dict()
    text = json.dumps(d, allow_nan=False)  # raises on NaN/inf
    assert d["quality"]["judged_by"] == "people"
    assert [r["value"] for r in d["quality"]["slices"]["source"]]
    assert not math.isnan(d["quality"]["delta_precision"]["estimate"])
    assert "NaN" not in text


def test_huge_integer_ids_and_markdown_injection(tmp_path, write, page):
    big = 2**53 + 1
    base = write("base.parquet", item_id=[1, 2, 3, 4], cluster_id=[big, big, big - 1, big - 1])
    exp = write("exp.parquet", item_id=[1, 2, 3, 4], cluster_id=[7, 7, 7, 7])
    res = abcde.impact(base, exp)
    rep = build_report(res, names=("x|`\n# H", "Exp"))
    rep.write(tmp_path / "r.html", markdown=tmp_path / "r.md")
    open_report(page, tmp_path / "r.html")
    row = page.locator(f'tr.cluster[data-side="base"][data-cluster="{big}"]').first
    row.click()
    fig = page.locator("tr.detail .fig")
    # Exact ids survive the page's JSON (JavaScript numbers would round 2^53+1 to 2^53).
    assert f"Base(i) = cluster {big}" in page.inner_text("tr.detail")
    assert int(fig.locator('[data-group="merge"] .lab').first.get_attribute("data-count")) == 2
    assert fig.locator('[data-group="stable"] li').count() == 2
    md = (tmp_path / "r.md").read_text()
    assert "\n# H" not in md and "`" not in md.replace("```", "")


def test_nan_cluster_ids_are_refused(write):
    base = write("base.parquet", item_id=[1, 2, 3], cluster_id=[1.0, float("nan"), 2.0])
    exp = write("exp.parquet", item_id=[1, 2, 3], cluster_id=[1.0, 1.0, 2.0])
    with pytest.raises(abcde.InputError, match=r"1 items of base file .* have a null \(or NaN\) cluster id .*first: 2"):
        abcde.impact(base, exp)


def test_a_report_leaves_no_temporary_table_behind():
    """Its neighbourhood table is the step's own: building reports again and again on one engine
    (a notebook) leaves the engine's temporary tables as they were."""
    p = example_paths("febrl3")
    res = abcde.impact(p["base"], p["exp"], items=p["items"])
    eng = res.diff.engine

    def temporary() -> int:
        return eng.con.raw_sql("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[0][0]

    before, handles = temporary(), list(eng._temp)
    first = build_report(res).to_dict()["neighbourhoods"]
    for _ in range(2):
        assert build_report(res).to_dict()["neighbourhoods"] == first
    assert temporary() == before and eng._temp == handles


# --------------------------------------------------------------------------- reading the numbers (issue 27)
def test_slice_tables_show_counts_with_separators_and_charts_say_null(demo):
    """The slice tables' counts read "1,581" beside "3,111" (display.count), and a chart names the
    missing group "(null)", as the table beside it does — never "None"."""
    out, _ = demo
    text = (out / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', text, re.S).group(1))
    specs = json.loads(re.search(r'id="chart-specs">(.*?)</script>', text, re.S).group(1))
    rows = data["slices"]["state"]
    big = [r for r in rows if r["items"] >= 1000]
    assert big, "the example has a state with over 1,000 items"
    for r in big:
        assert f">{r['items']:,}</td>" in text and f"{r['items']:,}" != str(r["items"])
        assert f'<td data-col="items">{r["items"]}</td>' not in text
    assert any(r["state"] is None for r in rows), "the example has items without a state"
    assert '<td data-col="state">(null)</td>' in text
    shown = {v["slice"] for v in specs["slice:state"]["data"]["values"]}
    assert "(null)" in shown and "None" not in shown


def test_most_affected_clusters_say_how_many_and_agree_with_impact(tmp_path):
    """`--top K`: the report's first ranking is exactly the K rows `abcde impact --top K` lists (Base
    and Exp ranked together), its caption says so; each side's tab holds that side's K."""
    p = example_paths("febrl3")
    k = 3
    imp = json.loads(abcde_cli("impact", "--base", p["base"], "--exp", p["exp"], "--items", p["items"],
                               "--top", k, "--json").stdout)
    abcde_cli("report", "--base", p["base"], "--exp", p["exp"], "--items", p["items"], "--top", k,
              "--out", tmp_path / "r.html", "--markdown", tmp_path / "r.md", "-q")
    text = (tmp_path / "r.html").read_text()
    panels = re.findall(r'data-panel="(\w+)"><p class="caption">(.*?)</p>(.*?)</table>', text, re.S)
    assert [key for key, _, _ in panels] == ["interleaved", "base", "exp"]
    caption = panels[0][1]
    for key, cap, body in panels:
        rows = re.findall(r'<tr class="cluster" data-side="(\w+)" data-cluster="([^"]+)"', body)
        want = [(r["side"], str(r["cluster_id"])) for r in imp["top_clusters"][key]]
        assert rows == want and len(rows) == k, key
        if key == "interleaved":
            assert cap == f"The {k} most affected clusters (Base and Exp ranked together)"
        else:
            assert cap.startswith(f"The {k} clusters of {'Base' if key == 'base' else 'Exp'} ")
    specs = json.loads(re.search(r'id="chart-specs">(.*?)</script>', text, re.S).group(1))
    assert specs["cluster_contributions"]["title"]["subtitle"] == caption
    assert len({v["cluster"] for v in specs["cluster_contributions"]["data"]["values"]}) == k
    assert "most affected clusters (Base and Exp ranked together):" in (tmp_path / "r.md").read_text()


# The charts: each one's drawn width against its container's, and the smallest font of its axes and legends.
CHART_SIZES = """
() => [...document.querySelectorAll('.chart')].map(c => {
  const svg = c.querySelector('svg');
  const fonts = [...c.querySelectorAll('.role-axis text, .role-legend text')].map(t => parseFloat(getComputedStyle(t).fontSize));
  return {id: c.id, chart: svg.getBoundingClientRect().width, room: c.parentElement.clientWidth, fonts: fonts.length,
          smallest: Math.min(...fonts)};
})
"""

# Texts that must stay on one line: every id in the clusters' tables and in the open Figure 1. A Range over
# the text has one rectangle per line it takes.
BROKEN_IDS = """
() => [...document.querySelectorAll('table.clusters td[data-col=cluster_id], tr.detail .id')]
  .filter(e => e.offsetParent !== null)
  .map(e => { const r = document.createRange(); r.selectNodeContents(e);
              return [e.textContent, [...r.getClientRects()].filter(x => x.width > 0).length]; })
  .filter(([t, n]) => n !== 1)
"""


@pytest.mark.parametrize("width", (800, 1400))
def test_charts_fill_the_page_with_readable_fonts_and_ids_stay_whole(demo, browser, width, screenshot):
    out, d = demo
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto((out / "report.html").resolve().as_uri())
        page.wait_for_function("window.__reportReady === true")
        n = page.locator(".chart").count()
        page.wait_for_function(f"window.__charts >= {n}", timeout=30000)
        sizes = page.evaluate(CHART_SIZES)
        assert len(sizes) == n >= 5
        for s in sizes:
            assert s["chart"] >= 0.9 * s["room"], s  # the page's width, not a fixed 520 px
            assert s["chart"] <= s["room"] + 1, s  # and no wider
            assert s["fonts"] and s["smallest"] >= 12, s
        # Figure 1: each listed member shows its attributes by name ("surname: wyllie").
        page.locator("tr.cluster").first.click()
        fig = page.locator("tr.detail .fig")
        names = fig.locator("li").first.locator(".k").all_inner_texts()
        data = json.loads(re.search(r'id="report-data">(.*?)</script>', (out / "report.html").read_text(), re.S)
                          .group(1))
        assert names == [f"{a}:" for a in data["attributes"]] and "surname:" in names
        assert "·" not in fig.inner_text()  # no bare values joined by dots
        # Ids are never broken at a hyphen, even in the narrow window with a cluster open.
        assert page.locator("tr.detail .id").count() > 3
        assert page.evaluate(BROKEN_IDS) == []
        for section in ("clusters", "charts"):  # docs/report-clusters-800.png, ...
            page.evaluate("window.scrollTo(0, 0)")
            box = page.evaluate(f"(() => {{ const r = document.getElementById('{section}').getBoundingClientRect();"
                                " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()")
            screenshot(page, f"report-{section}-{width}.png", full_page=True, clip=box)
    finally:
        ctx.close()
