"""The three pages hold their content at 800 and 1400 px (issue 14): no card is wider than itself
(scrollWidth ≤ clientWidth: wide tables scroll inside their own scroller), in the states a person
meets — the judging page before any judgement (every estimate undefined) and when all is judged,
the exploration page after a good and after a bad filter, and the report."""

from __future__ import annotations

import pytest

import abcde
from abcde.examples import example_paths
from abcde.web.explore_app import ExploreApp, make_server
from abcde.web.judging_server import serve

P = example_paths("febrl3")
WIDTHS = (800, 1400)

# Cards: the judging page's sections, the exploration page's sections and cards, the report's sections.
OVERFLOWING = """
() => [...document.querySelectorAll('section, .card, main > div, aside')]
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
  .map(e => (e.id || e.className || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth)
"""


def overflowing(page) -> list[str]:
    return page.evaluate(OVERFLOWING)


@pytest.fixture
def judged_dir(tmp_path):
    """A fresh sample for each test (the test judges it)."""
    d = tmp_path / "pairs"
    abcde.draw_pair_sample(P["base"], P["exp"], d, items=P["items"], budget=12, seed=3, hide=["entity_id"])
    return d


@pytest.mark.parametrize("width", WIDTHS)
def test_the_judging_page_holds_its_content(judged_dir, browser, width, screenshot):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    srv = serve(judged_dir, target_width=0.01).start()
    try:
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#estimates-body tr")
        assert overflowing(page) == []  # nothing judged: every estimate undefined, with its reason
        assert "undefined" in page.inner_text("#estimates-body")
        screenshot(page, f"judge-empty-{width}.png", full_page=True)
        for _ in range(40):
            if page.locator("#done").is_visible():
                break
            before = page.get_attribute("#pair", "data-pair-id")
            page.keyboard.press("s")
            page.wait_for_function(f"document.getElementById('pair').dataset.pairId !== '{before}'")
        page.wait_for_selector("#done", state="visible")
        assert overflowing(page) == []
        screenshot(page, f"judge-done-{width}.png", full_page=True)
    finally:
        srv.shutdown()
        srv.close()
        ctx.close()


@pytest.fixture(scope="module")
def sample_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout-explore") / "sample.parquet"
    abcde.sample_items(P["base"], P["exp"], items=P["items"], size=400, seed=7).write(out)
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_the_exploration_page_holds_its_content_and_marks_stale_results(sample_path, browser, width, screenshot):
    srv = make_server(ExploreApp(sample_path)).start()
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(srv.url)
        page.wait_for_selector('[data-key="jaccard_contribution"] b')
        page.check('input.gb[value="state"]')
        page.click("#run")
        page.wait_for_selector("#groups tr.group")
        page.locator("#examples tr.ex").first.click()
        page.wait_for_selector("#detail [data-side=exp] table")
        assert overflowing(page) == []
        screenshot(page, f"explore-{width}.png", full_page=True)
        # a filter that cannot run: the error is shown and the old results are not left as if current
        page.click("#add-filter")
        page.select_option(".f-col", "jaccard_distance")
        page.select_option(".f-op", ">=")
        page.fill(".f-val", "not a number")
        page.click("#run")
        page.wait_for_function("document.getElementById('error').textContent.length > 0")
        assert page.locator("#results.stale").count() == 1  # the old results are marked, not left as current
        assert "from the last query that ran" in page.inner_text("#error")
        screenshot(page, f"explore-error-{width}.png", full_page=True)
    finally:
        ctx.close()
        srv.shutdown()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_report_holds_its_content(demo_run, browser, width, screenshot):
    out, _ = demo_run
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto((out / "report.html").resolve().as_uri())
        page.wait_for_function("window.__reportReady === true")
        page.locator("tr.cluster").first.click()
        assert overflowing(page) == []
        screenshot(page, f"report-{width}.png", full_page=True)
    finally:
        ctx.close()
