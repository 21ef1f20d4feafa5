"""The report holds its text at 800 and 1,400 px (issue 52): a table wider than its column scrolls
sideways inside its own scroller (never clipped, never widening the page), a note is never squeezed to
a letter, and a command's option in the verdict never breaks at its hyphens. Checked in Chromium."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths

P = {k: str(v) for k, v in example_paths().items()}

CHECK = """
() => {
  const bad = [];
  // every table fits its column, or sits in a scroller that scrolls sideways
  for (const t of document.querySelectorAll('section table')) {
    if (t.offsetParent === null) continue;
    const sec = t.closest('section');
    if (t.getBoundingClientRect().width <= sec.clientWidth + 1) continue;
    let e = t.parentElement, ok = false;
    while (e && e !== sec) {
      const o = getComputedStyle(e).overflowX;
      if ((o === 'auto' || o === 'scroll') && e.clientWidth <= sec.clientWidth + 1) { ok = true; break; }
      e = e.parentElement;
    }
    if (!ok) bad.push('table wider than its section, no scroller: ' + (t.className || t.id));
  }
  // no section wider than itself
  for (const s of document.querySelectorAll('section'))
    if (s.offsetParent !== null && s.scrollWidth > s.clientWidth + 1) bad.push('section overflows: ' + s.id);
  // a cell of words is never narrower than a few letters
  for (const td of document.querySelectorAll('section td')) {
    if (td.offsetParent === null) continue;
    const text = td.innerText.trim();
    if (text.length > 12 && text.includes(' ') && td.getBoundingClientRect().width < 60)
      bad.push('squeezed cell: ' + text.slice(0, 30));
  }
  // an option keeps its value on its line
  for (const o of document.querySelectorAll('.opt'))
    if (o.getClientRects().length > 1) bad.push('option broken: ' + o.innerText);
  return bad;
}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("layout52") / "ev"
    runner = CliRunner()
    for args in (["evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--out", d,
                  "--budget", 80, "--seed", 5, "--hide", "entity_id", "--slice-by", "state", "--slice-by", "source",
                  "-q"],
                 ["judge", "oracle", d / "quality", "--oracle-column", "entity_id"],
                 ["report", d, "--quality-slice-by", "state", "--quality-slice-by", "source", "-q"]):
        r = runner.invoke(main, [str(a) for a in args])
        assert r.exit_code == 0, r.output
    return d / "report.html"


@pytest.mark.parametrize("width", [800, 1400])
def test_the_report_holds_its_text(report, browser, width):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(report.as_uri())
        page.wait_for_function("window.__reportReady === true")
        assert page.evaluate(CHECK) == []
    finally:
        ctx.close()


def test_the_verdicts_options_are_kept_whole(report):
    html = report.read_text()
    assert '<span class="opt">' in html or "--" not in html.split('id="verdict"')[1].split("</section>")[0]
