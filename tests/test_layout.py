"""The three pages hold their content at 800 and 1400 px (issue 14): no card is wider than itself
(scrollWidth ≤ clientWidth: wide tables scroll inside their own scroller), in the states a person
meets — the judging page before any judgement, partly judged and when all is judged, the owner's
view before any judgement (every estimate undefined) and when all is judged with the target not
reached (the "more pairs" hint), the exploration page after a good
and after a bad filter and with an item's clusters open, and the report. Each state is photographed
(``ABCDE_SCREENSHOTS=1``: into docs/, listed in docs/screens.md)."""

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


def section_clip(page, selector: str, margin: int = 12) -> dict:
    """The clip (page coordinates, for a full-page screenshot) of one section with a margin around it."""
    return page.evaluate("""([sel, m]) => {
      const r = document.querySelector(sel).getBoundingClientRect();
      const x = Math.max(0, r.left + scrollX - m), y = Math.max(0, r.top + scrollY - m);
      return {x, y, width: Math.min(document.documentElement.scrollWidth - x, r.width + 2 * m), height: r.height + 2 * m};
    }""", [selector, margin])


@pytest.fixture
def judged_dir(tmp_path):
    """A fresh sample for each test (the test judges it)."""
    d = tmp_path / "pairs"
    abcde.draw_pair_sample(P["base"], P["exp"], d, items=P["items"], budget=12, seed=3, hide=["entity_id"])
    return d


def judge_one(page, key: str) -> None:
    before = page.get_attribute("#pair", "data-pair-id")
    page.keyboard.press(key)
    page.wait_for_function(f"document.getElementById('pair').dataset.pairId !== '{before}'")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_judging_page_holds_its_content(judged_dir, browser, width, screenshot, monkeypatch):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    monkeypatch.chdir(judged_dir.parent)  # served as "pairs", as a user would name it (the hint's command shows it)
    srv = serve(judged_dir.name, target_width=0.01).start()
    try:
        # The owner's view before any judgement: every estimate undefined, with its reason.
        page.goto(srv.owner_url)
        page.wait_for_selector("#estimates-body tr")
        assert overflowing(page) == []
        assert "n/a" in page.inner_text("#estimates-body")  # as the terminal, the report and the notebook
        assert "no usable judgement" in page.inner_text("#est-why")  # and why, under the table
        # The rater's page: progress and the pair (no estimates: test_judge_views.py).
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        assert overflowing(page) == []
        screenshot(page, f"judge-empty-{width}.png", full_page=True)
        for key in "sdsds":  # partly judged: progress
            judge_one(page, key)
        assert overflowing(page) == []
        screenshot(page, f"judge-partial-{width}.png", full_page=True)
        if width == 1400:
            screenshot(page, "judge.png", full_page=True)  # the README's and docs/judging.md's picture
        for i in range(40):
            if page.locator("#done").is_visible():
                break
            judge_one(page, "sd"[i % 2])
        page.wait_for_selector("#done", state="visible")
        assert "Thank you — all pairs judged" in page.inner_text("#done")
        assert overflowing(page) == []
        screenshot(page, f"judge-done-{width}.png", full_page=True)
        # every pair judged, the interval still wider than the target: the owner's view says how many more pairs
        page.goto(srv.owner_url)
        page.wait_for_selector("#more", state="visible")
        assert "more pairs" in page.inner_text("#more-text")
        assert overflowing(page) == []
    finally:
        srv.shutdown()
        srv.close()
        ctx.close()


@pytest.fixture(scope="module")
def sample_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout-explore") / "sample.parquet"
    abcde.sample_items(P["base"], P["exp"], items=P["items"], size=400, seed=7).write(out)
    return out


# Every group's share bar of a non-zero share: its height, its width, and its track's (100%) width.
SHARE_BARS = """
() => [...document.querySelectorAll('#groups tr.group [data-col=share]')].map(td => {
  const bar = td.querySelector('.bar').getBoundingClientRect(), track = td.querySelector('.track').getBoundingClientRect();
  return {share: +td.dataset.value, height: bar.height, width: bar.width, track: track.width, text: td.innerText};
})
"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_exploration_page_holds_its_content_and_marks_stale_results(sample_path, browser, width, screenshot):
    srv = make_server(ExploreApp(sample_path)).start()
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(srv.url)
        page.wait_for_selector('[data-key="jaccard_contribution"] b')
        # the left column summarises the sample (not a tall empty area)
        facts = page.inner_text("#sample-facts")
        assert "5,000 items" in facts and "seed 7" in facts and "JaccardDistance" in facts
        page.check('input.gb[value="state"]')
        page.click("#run")
        page.wait_for_selector("#groups tr.group")
        # the share bars are bars: at least 8 px tall, a visible sliver for any non-zero share, on a 100% track
        bars = page.evaluate(SHARE_BARS)
        assert bars and any(b["share"] > 0.2 for b in bars)
        for b in bars:
            if b["share"] > 0:
                assert b["height"] >= 8 and b["width"] >= 2, b
                if b["share"] * b["track"] >= 3:
                    assert b["width"] == pytest.approx(b["share"] * b["track"], abs=1.5), b
                assert b["text"].endswith("%"), b
            assert b["track"] >= 50, b
        assert overflowing(page) == []
        screenshot(page, f"explore-{width}.png")  # the top of the page: controls, slice estimate, top groups
        page.locator("#examples tr.ex").first.click()
        page.wait_for_selector("#detail [data-side=exp] table")
        assert overflowing(page) == []
        # an item and its two clusters
        screenshot(page, f"explore-item-{width}.png", full_page=True, clip=section_clip(page, "#detail-section"))
        # a filter that cannot run: the error is shown and the old results are not left as if current
        page.evaluate("window.scrollTo(0, 0)")
        page.click("#add-filter")
        page.select_option(".f-col", "jaccard_distance")
        page.select_option(".f-op", ">=")
        page.fill(".f-val", "not a number")
        page.click("#run")
        page.wait_for_function("document.getElementById('error').textContent.length > 0")
        assert page.locator("#results.stale").count() == 1  # the old results are marked, not left as current
        assert "from the last query that ran" in page.inner_text("#error")
        assert overflowing(page) == []
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, f"explore-error-{width}.png")
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
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, f"report-{width}.png")  # the top: headline metrics, restriction, truth
        # the quality estimates with 95% intervals
        screenshot(page, f"report-quality-{width}.png", full_page=True, clip=section_clip(page, "#quality"))
    finally:
        ctx.close()
