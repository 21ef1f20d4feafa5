"""The judging web app end to end: ``abcde judge serve`` as a real subprocess, driven by a real
headless Chromium (Playwright): keyboard judging, undo, SIGKILL mid-session and restart, the
owner's live estimates equal to ``abcde quality --json`` (and none on the rater's page), hostile
item text inert."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.core.names import METRIC_LABELS
from abcde.judging import JudgementStore
from abcde.web.judging_server import serve
from content import assert_shows
from judging_helpers import HOSTILE, fresh_copy, make_sample, page_under_csp, request, start_server, stop, wait_text


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("judge-app"))


def cli_json(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def shown_pair(page) -> str:
    page.wait_for_function("document.getElementById('pair').dataset.pairId !== ''")
    return page.get_attribute("#pair", "data-pair-id")


def acks(page) -> int:
    return int(page.evaluate("document.body.dataset.acks || '0'"))


def test_keyboard_judging_survives_sigkill_and_matches_quality_json(sample, tmp_path, page):
    d = fresh_copy(sample, tmp_path)
    log = tmp_path / "server.log"
    proc, info = start_server(d, log, "--hide", "entity_id", "--seed", "3")
    try:
        assert info["url"].startswith("http://127.0.0.1:") and info["pairs"] == 30
        page.goto(info["url"] + "?rater=ann")
        keys = iter(["s", "d", "u", "s", "s", "d", "s", "u", "s", "d", "s"])
        answer = {"s": "same", "d": "different", "u": "unsure"}
        acked: list[tuple[str, str]] = []
        latencies = []
        undone = False
        while len(acked) < 10:
            key = next(keys)
            pid, n = shown_pair(page), acks(page)
            t0 = time.perf_counter()
            page.keyboard.press(key)
            page.wait_for_function(f"document.body.dataset.acks === '{n + 1}'")
            latencies.append(time.perf_counter() - t0)
            acked.append((pid, answer[key]))
            assert shown_pair(page) != pid  # the next pair comes with the acknowledgement
            if len(acked) == 3 and not undone:  # undo the third judgement by keyboard; that pair comes back
                undone = True
                page.keyboard.press("z")
                page.wait_for_function(f"document.getElementById('pair').dataset.pairId === '{pid}'")
                assert "Undone" in page.inner_text("#status")
                acked.pop()
        # Blind: no class, clusters, hidden ground truth or item ids; hostile text shows as text.
        judge_text = page.inner_text("#judge").lower()
        for word in ("split", "merge", "stable", "cluster", "entity-", "rec-"):
            assert word not in judge_text
        table = page.inner_text("#pair-body")
        assert any(h in table for h in HOSTILE)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("#pair-body script, #pair-body img").count() == 0

        # The live estimate on the page equals 'abcde quality --json' on the exported judgements.
        export = tmp_path / "export.csv"
        ex = cli_json("judge", "export", d, "--out", export, "--json")
        assert ex["judgements"] == 10 and ex["by_source"] == {"person": 10}
        q = cli_json("quality", d, "--judgements", export, "--json")
        assert sum(q[m]["estimate"] is not None for m in ("good_split_rate", "bad_split_rate", "good_merge_rate",
                                                           "bad_merge_rate", "delta_precision")) >= 2
        # The rater's page shows no estimate; the owner's view shows them.
        assert page.locator("#estimates, [data-metric]").count() == 0
        assert "ΔPrecision" not in page.inner_text("body")
        assert info["owner_url"] == info["url"] + "owner"
        page.goto(info["owner_url"])
        page.wait_for_selector("#estimates-body tr[data-metric='delta_precision']")
        for metric in ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate"):
            row = f"#estimates-body tr[data-metric='{metric}']"
            value = page.get_attribute(f"{row} td.estimate", "data-value")
            low = page.get_attribute(f"{row} td.interval", "data-low")
            high = page.get_attribute(f"{row} td.interval", "data-high")
            e = q[metric]
            # the row is labelled with the paper's name, from abcde.core.names, as people read it
            assert page.inner_text(f"{row} th") == METRIC_LABELS[metric]
            assert (float(value) if value else None) == e["estimate"], metric
            assert (float(low) if low else None) == e["ci_low"], metric
            assert (float(high) if high else None) == e["ci_high"], metric
            # what a person reads: the estimate and the interval's ends, to the digits shown
            assert_shows(page.inner_text(f"{row} td.estimate"), e["estimate"], metric)
            if e["ci_low"] is not None:
                lo_text, hi_text = page.inner_text(f"{row} td.interval").strip("[]").split(", ")
                assert_shows(lo_text, e["ci_low"], metric)
                assert_shows(hi_text, e["ci_high"], metric)
        assert f"{q['judged_pairs']}, unsure: {q['unsure_pairs']}" in page.inner_text("#est-note")
        wait_text(page, "#progress-text", "10 / 30 pairs judged")
        raters = page.inner_text("#raters-body")  # per rater; names hidden without --show-raters
        assert "rater 1" in raters and "ann" not in raters and "10" in raters

        # SIGKILL mid-session: the next pair is on screen, nothing pending.
        page.goto(info["url"] + "?rater=ann")
        wait_text(page, "#progress-text", "10 / 30 pairs judged")
        next_pid, n = shown_pair(page), acks(page)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        page.keyboard.press("s")  # not acknowledged: the server is gone
        page.wait_for_function("document.getElementById('status').className === 'error'")
        assert "cannot be reached" in page.inner_text("#status") and acks(page) == n
        assert shown_pair(page) == next_pid
    finally:
        stop(proc)

    # Every acknowledged judgement is in the store, and nothing else.
    stored = [(j.pair_id, j.judgement) for j in JudgementStore(d).live(source="person", rater="ann")]
    assert stored == acked

    # Restart (a new port): the rater resumes at the pair they had not judged.
    proc2, info2 = start_server(d, log, "--hide", "entity_id")
    try:
        assert info2["seed"] == 3  # stored with the store on first start
        page.goto(info2["url"] + "?rater=ann")
        assert shown_pair(page) == next_pid
        wait_text(page, "#progress-text", "you: 10")
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.errors == [] and page.blocked == []
    finally:
        stop(proc2)
    print(f"judgement round trip by keyboard (key press → next pair shown): median "
          f"{sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")


def test_second_server_on_the_same_directory_refuses(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    proc, info = start_server(d, tmp_path / "a.log")
    try:
        r = CliRunner().invoke(main, ["judge", "serve", str(d), "--port", "0"])
        assert r.exit_code == 1
        assert "already being served" in r.output and info["url"] in r.output
        # the first server is unharmed
        code, state = request(info["url"], "GET", "/api/state?rater=bob")
        assert code == 200 and state["next"] is not None
    finally:
        stop(proc)


def test_the_page_works_under_its_csp(sample, tmp_path, browser):
    """The page keeps working with the server's Content-Security-Policy enforced (the ``page``
    fixture bypasses it): its script and styles are its own files, nothing is inline."""
    srv = serve(fresh_copy(sample, tmp_path)).start()
    try:
        with page_under_csp(browser) as page:
            page.goto(srv.url + "?rater=ann")
            page.wait_for_selector("#pair-body tr")
            pid = page.get_attribute("#pair", "data-pair-id")
            page.keyboard.press("d")
            page.wait_for_selector("#status:has-text('Saved: different.')")
            assert page.get_attribute("#pair", "data-pair-id") not in ("", pid)
            assert any(h in page.inner_text("#pair-body") for h in HOSTILE)  # shown as text
            assert page.locator("#pair-body script, #pair-body img").count() == 0
            assert page.problems == []
            # the owner's view too, under the same policy
            page.goto(srv.url + "owner")
            page.wait_for_selector("#estimates-body tr[data-metric='delta_precision']")
            page.wait_for_selector("#verdict p")
            assert page.problems == []
        assert [(j.rater, j.pair_id, j.judgement) for j in srv.session.store.live()] == [("ann", pid, "different")]
    finally:
        srv.shutdown()
