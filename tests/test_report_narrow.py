"""The report at 800 px with real-world ids (issue 38): the most affected clusters' table, the
contribution it is ranked by, and Figure 1 are never cut off. Ids as long as a patent-inventor
disambiguation's (UUID cluster ids, publication-number item ids) make the table wider than the
page: it is then shown stacked (each cluster a block, every number with its column's name), and
an open Figure 1 whose columns cannot hold a member's id puts its groups one under another."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import abcde
from abcde.examples import example_paths
from abcde.report import build_report

# Everything in the clusters' section lies inside the page (the body's padding is 24 px each side), and
# no box of it scrolls sideways (a scroller hides what is past its edge).
CUT = """
() => {
  const W = document.documentElement.clientWidth, bad = [];
  for (const e of document.querySelectorAll('#clusters *')) {
    if (e.offsetParent === null) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > W - 24 + 1 || r.left < 24 - 1))
      bad.push(`${e.tagName}.${e.className} ${Math.round(r.left)}–${Math.round(r.right)}`);
  }
  for (const e of document.querySelectorAll('#clusters .tabpanel, #clusters .fig, #clusters .fig .col'))
    if (e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
      bad.push(`scrolls: ${e.className} ${e.scrollWidth}>${e.clientWidth}`);
  return bad.slice(0, 10);
}
"""
# Ids stay whole (one line each), as tests/test_report.py asks of the table and Figure 1.
BROKEN_IDS = """
() => [...document.querySelectorAll('table.clusters td[data-col=cluster_id], tr.detail .id')]
  .filter(e => e.offsetParent !== null)
  .map(e => { const r = document.createRange(); r.selectNodeContents(e);
              return [e.textContent, [...r.getClientRects()].filter(x => x.width > 0).length]; })
  .filter(([t, n]) => n !== 1)
"""


@pytest.fixture(scope="module")
def long_ids(tmp_path_factory):
    """The bundled example with UUID cluster ids and publication-number-like item ids: its report."""
    p = example_paths("febrl3")
    d = tmp_path_factory.mktemp("long_ids")

    def item(x):
        return f"US2019{uuid.uuid5(uuid.NAMESPACE_OID, str(x)).int % 10**7:07d}A1-{x}"

    for side in ("base", "exp"):
        t = pq.read_table(p[side])
        pq.write_table(pa.table({"item_id": [item(v) for v in t.column("item_id").to_pylist()],
                                 "cluster_id": [str(uuid.uuid5(uuid.NAMESPACE_URL, str(v)))
                                                for v in t.column("cluster_id").to_pylist()]}), d / f"{side}.parquet")
    t = pq.read_table(p["items"])
    cols = {c: t.column(c).to_pylist() for c in t.column_names}
    cols["item_id"] = [item(v) for v in cols["item_id"]]
    pq.write_table(pa.table(cols), d / "items.parquet")
    res = abcde.impact(d / "base.parquet", d / "exp.parquet", items=d / "items.parquet", weight="weight")
    build_report(res).write(d / "report.html")
    return d / "report.html"


def _open(browser, path, width):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(path.resolve().as_uri())
    page.wait_for_function("window.__reportReady === true")
    return ctx, page


@pytest.mark.parametrize("width", (800, 600))
def test_nothing_of_the_clusters_is_cut_off_at_a_narrow_width(long_ids, browser, width, screenshot):
    ctx, page = _open(browser, long_ids, width)
    try:
        for k, tab in enumerate(page.locator("button.tab").all()):
            tab.click()
            assert page.evaluate(CUT) == [], tab.inner_text()
            panel = page.locator(".tabpanel:visible")
            # the ranking's contribution is shown, by name, on every cluster
            first = panel.locator("tr.cluster").first.locator("td[data-col=contribution]")
            assert first.is_visible() and first.bounding_box()["x"] + first.bounding_box()["width"] <= width - 24 + 1
            rows = panel.locator("tr.cluster")
            for i in range(rows.count()):
                rows.nth(i).click()  # Figure 1 open
                fig = page.locator("tr.detail .fig")
                assert fig.count() == 1 and fig.locator("li").count() > 0
                assert page.evaluate(CUT) == [], (tab.inner_text(), i)
                assert page.evaluate(BROKEN_IDS) == []
                if i == k == 0 and width == 800:
                    page.evaluate("window.scrollTo(0, 0)")
                    box = page.evaluate(
                        "(() => { const r = document.getElementById('clusters').getBoundingClientRect();"
                        " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width,"
                        " height: Math.min(r.height, 1400)}; })()")
                    screenshot(page, f"report-long-ids-{width}.png", full_page=True, clip=box)
                rows.nth(i).click()  # closed again
        assert page.errors == []
    finally:
        ctx.close()


def test_a_wide_window_keeps_the_table(long_ids, browser):
    """At 1400 px the same table fits: a table with its header, Figure 1's groups side by side."""
    ctx, page = _open(browser, long_ids, 1400)
    try:
        assert page.locator("table.clusters.stacked").count() == 0
        assert page.locator("table.clusters thead").first.is_visible()
        page.locator("tr.cluster").first.click()
        assert page.locator(".fig.rows").count() == 0
        assert page.evaluate(CUT) == []
    finally:
        ctx.close()
