"""Raters see pairs; owners see numbers (issue 24, item 4), in a real headless Chromium.

The rater's page (``GET /?rater=R``) shows progress and one pair at a time: no estimate, interval,
agreement or verdict anywhere in its DOM, also when all is judged. The owner's view (``GET /owner``)
shows progress per rater, the live estimates with 95% intervals (equal to ``GET /api/owner``, which
is ``abcde quality``'s), what ΔPrecision still needs while undefined, agreement and the verdict, and
holds its content at 800 and 1400 px (``ABCDE_SCREENSHOTS=1``: docs/judge-owner-800.png and
docs/judge-owner-1400.png)."""

from __future__ import annotations

import base64
import hashlib
import re

import pyarrow.parquet as pq
import pytest

from abcde.core.names import METRIC_LABELS, QUALITY_METRICS
from abcde.examples import example_paths
from abcde.quality import draw_pair_sample
from abcde.web.judging_server import serve
from content import assert_shows
from judging_helpers import fresh_copy, page_under_csp, request, split_url, wait_text

P = example_paths("febrl3")
WIDTHS = (800, 1400)
# What a rater must not see: the metrics' names, intervals, agreement and the verdict's words.
NUMBERS_WORDS = [METRIC_LABELS[m] for m in QUALITY_METRICS] + ["Precision", "95%", "interval", "kappa", "κ",
                                                                "agreement", "verdict", "stratum", "strata"]
from test_layout import OVERFLOWING  # noqa: E402  (cards wider than themselves)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    d = tmp_path_factory.mktemp("views") / "pairs"
    draw_pair_sample(P["base"], P["exp"], d, items=P["items"], budget=60, seed=1, hide=["entity_id"])
    return d


def truth(d) -> dict:
    ent = {r["item_id"]: r["entity_id"] for r in pq.read_table(d / "items.parquet").to_pylist()}
    from abcde.judging import JudgementStore

    return {t["pair_id"]: "same" if ent[t["item_a"]] == ent[t["item_b"]] else "different"
            for t in JudgementStore(d).tasks}


def judge(session, rater: str, n: int, answers: dict, unsure_every: int = 0) -> None:
    """``n`` judgements by ``rater`` of the pairs the app serves them (the truth; every
    ``unsure_every``-th one "unsure")."""
    for k in range(n):
        pid = session.next_pair(rater)
        if pid is None:
            return
        ans = "unsure" if unsure_every and k % unsure_every == unsure_every - 1 else answers[pid]
        session.submit(rater, pid, ans)


def rater_page_shows_no_numbers(page) -> None:
    assert page.locator("#estimates, [data-metric], #verdict, #agreement, #needs").count() == 0
    text = page.inner_text("body")
    for word in NUMBERS_WORDS:
        assert word.lower() not in text.lower(), word
    # nor anywhere in the markup, hidden or not (the page's names attribute aside: labels, no values)
    html = page.evaluate("() => { const b = document.body.cloneNode(true); b.removeAttribute('data-names');"
                         " return b.outerHTML; }")
    for word in ("estimate", "ci_low", "kappa", "verdict", "ΔPrecision"):
        assert word not in html, word


def test_a_rater_sees_progress_and_the_pair_but_no_estimate(drawn, tmp_path, page):
    d = fresh_copy(drawn, tmp_path)
    answers = truth(d)
    srv = serve(d, replicate=0.2, target_width=0.5).start()
    try:
        judge(srv.session, "bob", 10, answers)
        assert srv.session.owner_state()["estimates"]["delta_precision"]["estimate"] is not None
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        rater_page_shows_no_numbers(page)
        for key in "sdsus":
            before = page.get_attribute("#pair", "data-pair-id")
            page.keyboard.press(key)
            page.wait_for_function(f"document.getElementById('pair').dataset.pairId !== '{before}'")
        wait_text(page, "#progress-text", "15 / 60 pairs judged")
        wait_text(page, "#progress-text", "you: 5")
        rater_page_shows_no_numbers(page)
        # every pair judged: thanks, still no number, and where the owner finds the results
        judge(srv.session, "ann", 200, answers)
        judge(srv.session, "bob", 200, answers)
        assert srv.session.owner_state()["all_judged"]
        page.reload()
        page.wait_for_selector("#done", state="visible")
        assert page.inner_text("#done-title") == "Thank you — all pairs judged"
        assert page.get_attribute("#done a", "href") == "/owner"
        rater_page_shows_no_numbers(page)
        assert page.errors == [] and page.blocked == []
    finally:
        srv.shutdown()


def owner_page_is_strict(url: str) -> None:
    """The owner's page under the same rules as the rater's (judging_helpers.assert_page_is_strict):
    a strict CSP, nothing inline, every file pinned by its hash."""
    import http.client

    host, port = split_url(url)
    con = http.client.HTTPConnection(host, port, timeout=30)
    con.request("GET", "/owner")
    r = con.getresponse()
    html = r.read().decode()
    con.close()
    assert r.status == 200 and "script-src 'self'" in r.getheader("Content-Security-Policy")
    assert not re.search(r"<script(?![^>]*\bsrc=)", html) and "<style" not in html and " style=" not in html
    tags = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)" integrity="([^"]+)"', html)
    assert {p for p, _ in tags} == {"/static/common.js", "/static/common.css", "/static/judge.css",
                                    "/static/judge-owner.js"}
    for path, integrity in tags:
        code, body = request(url, "GET", path)
        data = body.encode()
        assert code == 200 and integrity == "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()
        for word in ("innerHTML", "eval(", "http://", "https://"):
            assert word not in body, (path, word)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_owner_sees_estimates_agreement_and_the_verdict(drawn, tmp_path, browser, width, screenshot,
                                                           monkeypatch):
    d = fresh_copy(drawn, tmp_path)
    answers = truth(d)
    monkeypatch.chdir(d.parent)  # served as "sample", as a user would name it (commands shown name it so)
    srv = serve(d.name, replicate=0.2, target_width=0.02).start()
    # bypass_csp: Playwright's string predicates need it (test_the_owner_view_works_under_its_csp keeps the policy)
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        owner_page_is_strict(srv.url)
        # Nothing judged: every estimate undefined, and which strata need what.
        page.goto(srv.owner_url)
        page.wait_for_selector("#estimates-body tr[data-metric='delta_precision']")
        needs = page.inner_text("#needs")
        assert needs == ("ΔPrecision needs 1 usable judgement (same or different) in the split stratum, 1 in merge, "
                         "1 in intersection+ and 1 in intersection-.")
        assert "n/a" in page.inner_text("#estimates-body")
        assert page.locator("#verdict p").count() >= 1
        # Two usable judgements: still undefined, and the message follows.
        judge(srv.session, "ann", 2, answers)
        page.reload()
        page.wait_for_function("document.body.dataset.loads === '1'")
        assert page.inner_text("#needs") == ("ΔPrecision needs 1 usable judgement (same or different) in the "
                                             "intersection+ stratum and 1 in intersection-.")
        # Judged by two raters (a fifth of the pairs twice): estimates, agreement and the verdict.
        judge(srv.session, "ann", 20, answers, unsure_every=7)
        flip = {"same": "different", "different": "same"}
        twice = [j.pair_id for j in srv.session.store.live() if j.pair_id in srv.session.replicated]
        for _ in range(30):  # which pairs are replicated follows the draws: ann judges on until two are
            if len(twice) >= 2:
                break
            judge(srv.session, "ann", 1, answers)
            twice = [j.pair_id for j in srv.session.store.live() if j.pair_id in srv.session.replicated]
        for k, pid in enumerate(twice):  # bob judges the replicated pairs ann judged (one the other way)
            srv.session.submit("bob", pid, flip[answers[pid]] if k == 0 else answers[pid])
        judge(srv.session, "bob", 14 - len(twice), answers)
        page.reload()
        page.wait_for_function("document.body.dataset.loads === '1'")
        owner = request(srv.url, "GET", "/api/owner")[1]
        est = owner["estimates"]
        assert est["delta_precision"]["ci_low"] is not None and page.locator("#needs").is_hidden()
        for metric in QUALITY_METRICS:
            row = f"#estimates-body tr[data-metric='{metric}']"
            assert page.inner_text(f"{row} th") == METRIC_LABELS[metric]
            value = page.get_attribute(f"{row} td.estimate", "data-value")
            assert (float(value) if value else None) == est[metric]["estimate"], metric
            assert_shows(page.inner_text(f"{row} td.estimate"), est[metric]["estimate"], metric)
        sentences = owner["verdict"]["sentences"]
        assert [p.strip() for p in page.locator("#verdict p").all_inner_texts()] == sentences
        assert page.is_visible("#verdict p.headline")
        raters = page.inner_text("#raters-body")
        assert "rater 1" in raters and "rater 2" in raters and "ann" not in raters  # names hidden by default
        assert page.is_visible("#agreement") and "Fleiss' kappa" in page.inner_text("#agree-summary")
        assert len(twice) >= 2 and owner["agreement"]["replicated_pairs"] == len(twice)
        assert page.inner_text("#agree-body").startswith("rater 1 & rater 2")
        assert "Target width" in page.inner_text("#target")
        wait_text(page, "#progress-text", f"{owner['judged_pairs']} / 60 pairs judged")
        assert page.evaluate(OVERFLOWING) == []
        screenshot(page, f"judge-owner-{width}.png", full_page=True)
        # The owner's view refreshes by itself as judgements arrive.
        judge(srv.session, "ann", 3, answers)
        now = request(srv.url, "GET", "/api/owner")[1]["judged_pairs"]
        assert now > owner["judged_pairs"]  # (ann may be served a pair bob judged: fewer than 3 new pairs)
        page.wait_for_function(
            f"document.getElementById('progress-text').textContent.startsWith('{now} / 60')", timeout=15000)
        assert int(page.evaluate("document.body.dataset.loads")) >= 2
        assert errors == []
    finally:
        ctx.close()
        srv.shutdown()


def test_the_owner_view_works_under_its_csp(drawn, tmp_path, browser):
    srv = serve(fresh_copy(drawn, tmp_path)).start()
    try:
        with page_under_csp(browser) as page:
            page.goto(srv.owner_url)
            page.wait_for_selector("#estimates-body tr[data-metric='delta_precision']")
            page.wait_for_selector("#verdict p")
            assert page.problems == []
    finally:
        srv.shutdown()
