"""Judging an entity sample (issue 53): ``abcde judge serve DIR`` on a directory of ``abcde entities``
serves "complete this item's entity"; the answers go to ``DIR/entity_judgements.sqlite``
(:mod:`abcde.completion.store`) and ``abcde quality DIR`` reads them.

The store's rules (validation, undo, one live answer, durability across a killed writer and a
reopen), the real server over HTTP (``abcde judge serve`` as a subprocess, invite links), and the
page in a real headless Chromium at 800 px and 1,400 px: members ticked by keyboard and by mouse, a
candidate and a searched item added, searched / none searched, submit, undo, a second rater; then
``abcde quality DIR --json`` against :func:`estimate_entities` on the same rows."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from abcde.completion import EntitySample, EntityStore, estimate_entities, oracle_entities, write_entity_sample
from abcde.completion.store import STORE_FILE, sample_key
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.samples.ledger_rules import DuplicateJudgementError
from abcde.samples.sqlite_guard import StoreFileError
from abcde.web.entity_session import inputs_finder, item_ref
from judging_helpers import HOSTILE, assert_error, page_under_csp, request, start_server, stop


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The docs' entity sample of the bundled example (150 draws, candidates by surname, the truth
    hidden), whose items carry a hostile ``note`` attribute."""
    root = tmp_path_factory.mktemp("entity-judging")
    p = example_paths()
    items = pq.read_table(p["items"])
    notes = [HOSTILE[k % 2] for k in range(items.num_rows)]
    hostile = root / "items-with-notes.parquet"
    pq.write_table(items.append_column("note", pa.array(notes)), hostile)
    write_entity_sample(p["base"], p["exp"], root / "ent", items=hostile, budget=150, hide=["entity_id"],
                        candidates="surname")
    return root / "ent"


@pytest.fixture
def sample(drawn, tmp_path):
    """A fresh copy of the entity sample, without answers."""
    d = tmp_path / "ent"
    shutil.copytree(drawn, d, ignore=shutil.ignore_patterns("entity_judgements*", ".judging.lock"))
    return d


def tasks_by_anchor(d) -> dict:
    return {t["anchor"]: t for t in EntitySample.read(d).tasks()}


def draw_order(d) -> list:
    return list(dict.fromkeys(pq.read_table(d / "draws.parquet").column("item_id").to_pylist()))


def members_of(task) -> list:
    return [m["item_id"] for m in task["members"]]


def unlisted_item(d, task) -> dict:
    """An item of the sample that is neither the anchor nor listed for it, with a given name and surname."""
    listed = {task["anchor"], *members_of(task), *(c["item_id"] for c in task["candidates"])}
    return next(r for r in pq.read_table(d / "items.parquet").to_pylist()
                if r["item_id"] not in listed and r["given_name"] and r["surname"])


# ----------------------------------------------------------------------------- the store
def test_the_store_checks_every_answer(sample):
    st = EntityStore(sample, create=True)
    tasks = tasks_by_anchor(sample)
    a = draw_order(sample)[0]
    t = tasks[a]
    ms, cs = members_of(t), [c["item_id"] for c in t["candidates"]]
    assert ms and cs
    other = next(i for i in st.items if i != a and i not in ms and i not in cs)
    ok = [(m, "same") for m in ms] + [(None, "searched")]
    bad = [
        (dict(anchor="no-such-anchor", rows=ok), "is not an anchor of this entity sample"),
        (dict(anchor=7, rows=ok), "is not an item id of this entity sample (its ids are text)"),
        (dict(anchor=a, rows=[(ms[0], "maybe")]), "expected one of same, different, unsure"),
        (dict(anchor=a, rows=[(None, "same")]), "must say 'searched' or 'not searched'"),
        (dict(anchor=a, rows=[(a, "same")]), f"Item {a!r} is the anchor itself"),
        (dict(anchor=a, rows=[("no-such-item", "same")]), "adds item 'no-such-item', which is not an item of this "
                                                          "entity sample"),
        (dict(anchor=a, rows=[(other, "different")]), "an item from outside is only added (answer 'same')"),
        (dict(anchor=a, rows=[(ms[0], "same"), (ms[0], "different")]), "is answered twice"),
        (dict(anchor=a, rows=ok, rater="owner"), "name of the owner's link"),
        (dict(anchor=a, rows=ok, rater="Owner "), "reads as 'owner'"),
        (dict(anchor=a, rows=ok, source="crowd"), "source must be one of"),
        (dict(anchor=a, rows=[]), "No answer of anchor"),
    ]
    for kw, match in bad:
        kw = {"rater": "ann", **kw}
        with pytest.raises(InputError, match=re.escape(match)) as e:
            st.record_anchor(kw.pop("anchor"), kw.pop("rows"), **kw)
        assert "\n" not in str(e.value)
    assert st.live() == [] and st.history() == []  # nothing refused was written
    # an item of the sample that is no member or candidate of this anchor is added ('same'), and so is an
    # item of the inputs outside the sample, with the look-up in the recorded inputs the app passes
    outside = next(i for i in pq.read_table(example_paths()["items"]).column("item_id").to_pylist()
                   if i not in st.items)
    with pytest.raises(InputError, match=f"adds item {outside!r}"):
        st.record_anchor(a, [(outside, "same")], rater="ann")
    app = EntityStore(sample, find_items=inputs_finder(st.sample))
    with pytest.raises(InputError, match="not an item of this entity sample or of its inputs"):
        app.record_anchor(a, [("no-such-item", "same")], rater="ann")
    sub = app.record_anchor(a, [*ok, (other, "same"), (outside, "same")], rater="ann", request_id="r1")
    assert sub.rows[-2:] == ((other, "same"), (outside, "same")) and len(st.live()) == len(ok) + 2


def test_one_live_answer_undo_and_replays(sample):
    st = EntityStore(sample, create=True)
    a, b = draw_order(sample)[:2]
    tasks = tasks_by_anchor(sample)
    rows_a = [(m, "same") for m in members_of(tasks[a])] + [(None, "searched")]
    st.record_anchor(a, rows_a, rater="ann", request_id="req-1")
    with pytest.raises(DuplicateJudgementError, match="already answered anchor"):
        st.record_anchor(a, [(None, "not searched")], rater="ann")
    with pytest.raises(DuplicateJudgementError, match="Request 'req-1' was already recorded"):
        st.record_anchor(a, rows_a, rater="bob", request_id="req-1")
    st.record_anchor(a, [(m, "different") for m in members_of(tasks[a])] + [(None, "not searched")], rater="bob")
    st.record_anchor(b, [(None, "not searched")], rater="ann")
    # the index allows one live answer per rater, anchor and item (the search row included), whoever writes
    with pytest.raises(sqlite3.IntegrityError):
        with st.transaction() as con:
            con.execute("INSERT INTO answers (anchor, item_id, answer, rater, source, created_at) VALUES "
                        "(?, NULL, 'searched', 'ann', 'person', 'now')", (b,))
    # undo withdraws the rater's last anchor whole, keeps its rows, and lets it be answered again
    undone = st.undo("ann")
    assert undone.anchor == b and undone.rows == ((None, "not searched"),)
    assert {(r["rater"], r["anchor"]) for r in st.live()} == {("ann", a), ("bob", a)}
    assert [r["withdrawn_at"] is not None for r in st.history() if r["anchor"] == b] == [True]
    st.record_anchor(b, [(None, "searched")], rater="ann")
    assert st.undo("ann").anchor == b and st.undo("ann").anchor == a and st.undo("ann") is None
    assert {r["rater"] for r in st.live()} == {"bob"}
    assert len(st.history()) == len(rows_a) * 2 + 2  # every row kept
    assert sum(r["withdrawn_at"] is None for r in st.history()) == len(st.live())


def test_answers_survive_a_killed_writer_and_a_reopen(sample):
    """A submission is on disk when record_anchor returns: a process killed right after it (no
    close, no checkpoint) leaves it in the store, which opens again whole."""
    a = draw_order(sample)[0]
    script = textwrap.dedent(f"""
        import os, signal
        from abcde.completion import EntityStore
        st = EntityStore({str(sample)!r}, create=True)
        hold = st.hold("test")  # a connection kept open, as the server keeps one
        st.record_anchor({a!r}, [(None, "searched")], rater="ann", request_id="k1")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == -9, r.stderr
    st = EntityStore(sample)
    assert [(x["anchor"], x["item_id"], x["answer"], x["rater"]) for x in st.live()] == [(a, None, "searched", "ann")]
    assert EntityStore(sample).history()[0]["request_id"] == "k1#0"
    # abcde quality reads it
    q = estimate_entities(sample)
    assert q.judged == 1 and q.skipped_search == 0


def test_a_store_of_another_sample_or_no_store_is_refused(sample, tmp_path):
    p = example_paths()
    other = write_entity_sample(p["base"], p["exp"], tmp_path / "other", items=p["items"], budget=20, seed=9)
    EntityStore(other, create=True)
    shutil.copy(other.path / STORE_FILE, sample / STORE_FILE)
    with pytest.raises(InputError, match="belongs to another entity sample"):
        EntityStore(sample)
    (sample / STORE_FILE).unlink()
    with pytest.raises(StoreFileError, match="There is no entity answer store"):
        EntityStore(sample)
    assert not (sample / STORE_FILE).exists()  # a reader never makes one
    (sample / STORE_FILE).write_bytes(b"not a database" * 100)
    with pytest.raises(StoreFileError, match="not a judgement store"):
        estimate_entities(sample)
    assert sample_key(EntitySample.read(sample)) != sample_key(other)


def test_quality_reads_the_store_beside_the_oracle_file(sample):
    """``load_answers`` reads the oracle's file and the people's store; a person's answer that differs
    from the oracle's makes the member unsure (what neither can rule out)."""
    oracle_entities(sample, "entity_id")
    alone = estimate_entities(sample)
    a = draw_order(sample)[0]
    t = tasks_by_anchor(sample)[a]
    truth = {r["item_id"]: r["answer"] for r in pq.read_table(sample / "entity_judgements.parquet").to_pylist()
             if r["anchor"] == a and r["item_id"] is not None}
    mem = pq.read_table(sample / "members.parquet").to_pylist()
    m = next(r["item_id"] for r in mem if r["anchor"] == a and r["item_id"] != a and r["in_base"] != r["in_exp"])
    assert m in members_of(t)
    flipped = "different" if truth[m] == "same" else "same"
    EntityStore(sample, create=True).record_anchor(a, [(m, flipped)], rater="ann")
    both = estimate_entities(sample)
    assert both.answers["conflicts"] == alone.answers["conflicts"] + 1
    assert both.unsure_members == alone.unsure_members + 1
    assert both.metrics["delta_recall"].estimate is None  # a range now: the member is unsure


# ----------------------------------------------------------------------------- the server over HTTP
def body_for(task_view, answer="same", *, search="searched", added=(), rater="ann", request_id=None):
    b = {"anchor": task_view["anchor"], "members": [{"ref": m["ref"], "answer": answer} for m in task_view["members"]],
         "added": list(added), "search": search}
    if rater is not None:
        b["rater"] = rater
    if request_id:
        b["request_id"] = request_id
    return b


def test_the_server_over_http(sample, tmp_path):
    r = subprocess.run([sys.executable, "-m", "abcde", "judge", "serve", str(sample), "--replicate", "0.2"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--replicate is for pair samples" in r.stderr and r.stderr.count("\n") <= 2
    proc, info = start_server(sample, tmp_path / "server.log")
    try:
        url = info["url"]
        assert info["kind"] == "entities" and info["anchors"] == 148 and info["store"].endswith(STORE_FILE)
        # one server per directory
        r = subprocess.run([sys.executable, "-m", "abcde", "judge", "serve", str(sample), "--port", "0"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and "is already being served" in r.stderr, r.stderr
        code, page = request(url, "GET", "/")
        assert code == 200 and "complete entities" in page
        code, s = request(url, "GET", "/api/state?rater=ann")
        assert code == 200 and s["anchors"] == 148 and s["judged_anchors"] == 0 and s["can_undo"] is False
        t = s["next"]
        order, tasks = draw_order(sample), tasks_by_anchor(sample)
        key = sample_key(EntitySample.read(sample))
        a = order[0]
        assert t["number"] == 1 and t["anchor"] == item_ref(key, a)
        # blind: no id, no weight, no hidden column, no Base/Exp
        flat = json.dumps(s)
        for word in ("entity_id", "weight", "in_base", "in_exp", "rec-"):
            assert word not in flat
        assert [m["ref"] for m in t["members"]] == [item_ref(key, m) for m in members_of(tasks[a])]
        # the search: the sample's items by their shown attributes, not the ones listed already
        surname = t["item"]["values"][t["columns"].index("surname")]
        code, found = request(url, "GET", f"/api/search?rater=ann&anchor={t['anchor']}&q={quote(surname)}")
        listed = {t["anchor"], *(m["ref"] for m in t["members"]), *(c["ref"] for c in t["candidates"])}
        assert code == 200 and not listed & {x["ref"] for x in found["results"]}
        target = unlisted_item(sample, tasks[a])
        code, found = request(url, "GET", f"/api/search?rater=ann&anchor={t['anchor']}&q="
                                          f"{quote(target['given_name'] + ' ' + target['surname'])}")
        assert code == 200 and item_ref(key, target["item_id"]) in {x["ref"] for x in found["results"]}
        assert_error(request(url, "GET", "/api/search?rater=ann&anchor=nope&q=x"), 400, "is not an anchor")
        # bad input: one clear line each, nothing stored
        assert_error(request(url, "POST", "/api/answers", body_for(t, added=[{"item_id": "no-such-item"}])), 400,
                     "adds item 'no-such-item', which is not an item of this entity sample or of its inputs")
        assert_error(request(url, "POST", "/api/answers", body_for(t, added=[{"ref": t["anchor"]}])), 400,
                     "The item itself cannot be added")
        assert_error(request(url, "POST", "/api/answers", body_for(t, added=[{"item_id": a}])), 400,
                     "The item itself cannot be added")
        short = body_for(t)
        short["members"] = short["members"][1:]
        assert_error(request(url, "POST", "/api/answers", short), 400, "1 member of this item's clusters is not "
                                                                         "answered yet")
        assert_error(request(url, "POST", "/api/answers", body_for(t, "perhaps")), 400, "must be same, different "
                                                                                         "or unsure")
        assert_error(request(url, "POST", "/api/answers", body_for(t, search="maybe")), 400, "'search' must be")
        assert_error(request(url, "POST", "/api/answers", body_for(t, rater="owner")), 400, "owner")
        assert_error(request(url, "POST", "/api/undo", {"rater": "ann"}), 409, "no answered item to undo")
        # a submission: a candidate and a searched item added, the other candidates different
        cand = t["candidates"][0]["ref"]
        ok = body_for(t, added=[{"ref": cand}, {"ref": found["results"][0]["ref"]}], request_id="q1")
        code, d = request(url, "POST", "/api/answers", ok)
        assert code == 201 and d["recorded"]["search"] == "searched" and d["next"]["number"] == 2
        assert_error(request(url, "POST", "/api/answers", ok), 409, "was already recorded")
        assert_error(request(url, "POST", "/api/answers", dict(ok, request_id="q2")), 409, "already answered anchor")
        live = EntityStore(sample).live()
        by_item = {r["item_id"]: r["answer"] for r in live}
        cands = [c["item_id"] for c in tasks[a]["candidates"]]
        assert all(by_item[m] == "same" for m in members_of(tasks[a]))
        assert by_item[cands[0]] == "same" and all(by_item[c] == "different" for c in cands[1:])
        assert by_item[None] == "searched" and len(live) == len(members_of(tasks[a])) + len(cands) + 2
        # a second rater gets the next anchor no one has answered and no one has on screen
        code, sb = request(url, "GET", "/api/state?rater=bob")
        assert sb["next"]["number"] == 3 and sb["judged_anchors"] == 1
        # undo: the last anchor comes back, with the answers to fill in again
        code, u = request(url, "POST", "/api/undo", {"rater": "ann"})
        assert code == 200 and u["next"]["anchor"] == t["anchor"] and u["undone"]["anchor"] == t["anchor"]
        assert {x["ref"] for x in u["undone"]["added"]} == {cand, found["results"][0]["ref"]}
        assert EntityStore(sample).live() == []
        code, d = request(url, "POST", "/api/answers", body_for(t, "different", search="not searched",
                                                                request_id="q3"))
        assert code == 201
    finally:
        stop(proc)  # SIGKILL: what was acknowledged is on disk
    live = EntityStore(sample).live()
    assert {(r["item_id"], r["answer"]) for r in live} == {*((m, "different") for m in members_of(tasks[a])),
                                                          (None, "not searched")}


def test_invite_links_name_the_rater(sample, tmp_path):
    """``--raters``: a link per rater, the name taken from it; ``--instructions`` and ``--show-ids``
    as for pairs."""
    md = tmp_path / "how.md"
    md.write_text("# Entities\n\nAdd *every* record of the same person.\n")
    proc, info = start_server(sample, tmp_path / "server.log", "--raters", "ann,bob", "--instructions", str(md),
                              "--show-ids")
    try:
        url, links = info["url"], info["links"]
        assert set(links) == {"ann", "bob"} and info["invites"] is True and info["instructions"] is True
        token = links["bob"].rsplit("/", 1)[1]
        assert_error(request(url, "GET", "/api/state"), 401, "invited raters")
        bearer = {"Authorization": f"Bearer {token}"}
        code, page = request(url, "GET", "/", headers=bearer)
        assert code == 200 and "<em>every</em> record of the same person" in page
        code, s = request(url, "GET", "/api/state", headers=bearer)
        assert code == 200 and s["rater"] == "bob" and s["next"]["number"] == 1
        assert s["next"]["item"]["id"] == draw_order(sample)[0]  # --show-ids
        assert_error(request(url, "POST", "/api/answers", body_for(s["next"], rater="ann"), headers=bearer), 403,
                     "signed in as 'bob'")
        code, d = request(url, "POST", "/api/answers", body_for(s["next"], rater=None), headers=bearer)
        assert code == 201 and d["rater"] == "bob"
        code, page = request(url, "GET", f"/join/{token}")
        assert code == 200
    finally:
        stop(proc)
    assert {r["rater"] for r in EntityStore(sample).live()} == {"bob"}


# ----------------------------------------------------------------------------- the page in a browser
def shown_anchor(page) -> str:
    page.wait_for_function("document.getElementById('task').dataset.anchor !== ''")
    return page.get_attribute("#task", "data-anchor")


def check_layout(page, width: int) -> None:
    """Nothing wider than the window; the answers of the first row and the submit button in view."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for sel in ("#members-body tr:first-child button.tick.unsure", "#submit", "#search"):
        box = page.locator(sel).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (sel, box)


@pytest.mark.parametrize("width", [800, 1400])
def test_the_page_in_a_browser(sample, tmp_path, page, width, screenshot):
    key = sample_key(EntitySample.read(sample))
    tasks = tasks_by_anchor(sample)
    ids = {item_ref(key, i): i for i in pq.read_table(sample / "items.parquet").column("item_id").to_pylist()}
    proc, info = start_server(sample, tmp_path / "server.log", "--hide", "note")  # the hostile notes: under the CSP
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(info["url"] + "?rater=ann")
        first = shown_anchor(page)
        a = ids[first]
        assert a == draw_order(sample)[0] and tasks[a]["candidates"]
        check_layout(page, width)
        assert page.locator("#members-body tr").count() == len(tasks[a]["members"])
        assert "note" not in page.inner_text("#members-head")  # --hide note
        assert "rec-" not in page.inner_text("#task")  # no ids
        # the members by keyboard: s, d, u in turn; each moves on to the next row
        keys, words = "sdu", {"s": "same", "d": "different", "u": "unsure"}
        n = len(tasks[a]["members"])
        for k in range(n):
            page.keyboard.press(keys[k % 3])
        assert page.locator("#members-body tr[data-answer='']").count() == 0
        # the focus is on the first candidate now: a adds it
        assert page.get_attribute("tr.row.focus", "data-kind") == "candidate"
        cand = page.get_attribute("tr.row.focus", "data-ref")
        page.keyboard.press("a")
        assert page.get_attribute(f"#candidates-body tr[data-ref='{cand}'] button.add", "aria-pressed") == "true"
        # the search: an item of the sample that is not listed for this anchor, found by its given name
        target = unlisted_item(sample, tasks[a])
        page.keyboard.press("/")
        page.keyboard.type(target["given_name"])
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.dataset.searches === '1'")
        assert page.locator("#results-body tr").count() >= 1
        found = page.get_attribute("tr.row.focus", "data-ref")  # the first result, focused
        assert page.get_attribute("tr.row.focus", "data-kind") == "result"
        page.keyboard.press("a")
        assert page.locator("#added li").count() == 2
        # not ready before saying whether the search was done
        page.keyboard.press("Enter")
        page.wait_for_selector("#status.error:has-text('say whether you searched')")
        page.keyboard.press("y")
        check_layout(page, width)
        screenshot(page, f"judge-entity-{width}.png", full_page=True)  # docs/screens.md, docs/entities.md
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.dataset.acks === '1'")
        assert shown_anchor(page) != first
        mine = {r["item_id"]: r["answer"] for r in EntityStore(sample).live() if r["anchor"] == a}
        refs = [m["item_id"] for m in tasks[a]["members"]]
        assert [mine[m] for m in refs] == [words[keys[k % 3]] for k in range(n)]
        assert mine[ids[cand]] == "same" and mine[ids[found]] == "same" and mine[None] == "searched"
        assert all(mine[c["item_id"]] == "different" for c in tasks[a]["candidates"] if c["item_id"] != ids[cand])
        # undo by keyboard: the anchor comes back with every answer filled in; change the first, submit again
        page.keyboard.press("z")
        page.wait_for_function("document.body.dataset.undos === '1'")
        assert shown_anchor(page) == first
        assert page.locator("#members-body button.tick[aria-pressed='true']").count() == n
        assert page.locator("#added li").count() == 2
        assert page.get_attribute("button.search-choice[data-search='searched']", "aria-pressed") == "true"
        page.wait_for_function("document.body.dataset.ready === '1'")
        page.keyboard.press("d" if keys[0] != "d" else "s")  # the focus is on the first row
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.dataset.acks === '2'")
        mine = {r["item_id"]: r["answer"] for r in EntityStore(sample).live() if r["anchor"] == a}
        assert mine[refs[0]] == "different" and mine[ids[found]] == "same"
        assert sum(r["withdrawn_at"] is not None for r in EntityStore(sample).history()) == len(mine)
        # the second anchor by mouse: every member the same, none searched
        second = shown_anchor(page)
        for b in page.locator("#members-body button.tick.same").all():
            b.click()
        page.click("button.search-choice[data-search='not searched']")
        page.click("#submit")
        page.wait_for_function("document.body.dataset.acks === '3'")
        assert ids[second] == draw_order(sample)[1]
        wait_progress = "document.getElementById('progress-text').textContent.startsWith('2 / 148')"
        page.wait_for_function(wait_progress)
        # a second rater: the next anchor no one has answered nor has on screen
        page.goto(info["url"] + "?rater=bob")
        third = shown_anchor(page)
        assert ids[third] == draw_order(sample)[3]  # the third is on ann's screen
        for _ in range(len(tasks[ids[third]]["members"])):
            page.keyboard.press("u")
        page.keyboard.press("n")
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.dataset.acks === '1'")
        assert page.errors == [] and page.blocked == []
    finally:
        stop(proc)
    live = EntityStore(sample).live()
    assert {(r["rater"], r["anchor"]) for r in live} == {("ann", a), ("ann", ids[second]), ("bob", ids[third])}
    # abcde quality reads those answers: what estimate_entities gives on the same rows
    r = subprocess.run([sys.executable, "-m", "abcde", "quality", str(sample), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = estimate_entities(sample, [{k: x[k] for k in ("anchor", "item_id", "answer")} for x in live]).to_dict()
    assert got["anchors_judged"] == 3 and got["search_skipped"] == 2
    for m in ("delta_recall", "iq", "delta_precision"):
        assert got[m] == json.loads(json.dumps(want[m])), m
    assert got["verdict"] == want["verdict"] and "3 of 148 anchors judged so far" in got["verdict"]


def test_the_page_works_under_its_csp(sample, tmp_path, browser):
    """With the server's Content-Security-Policy enforced (the ``page`` fixture bypasses it): every
    script and style is the app's own file, nothing inline; hostile item text stays text."""
    proc, info = start_server(sample, tmp_path / "server.log")
    try:
        with page_under_csp(browser) as page:
            page.goto(info["url"] + "?rater=ann")
            page.wait_for_selector("#members-body tr")
            assert any(h in page.inner_text("#members") for h in HOSTILE)  # hostile item text shown as text
            assert page.locator("#task script, #task img").count() == 0
            for _ in range(page.locator("#members-body tr").count()):
                page.keyboard.press("d")
            page.keyboard.press("n")
            page.keyboard.press("Enter")
            page.wait_for_selector("body[data-acks='1']")  # no string predicates: the policy forbids eval
            page.wait_for_selector("#status:has-text('Saved: item 1')")
            assert page.evaluate("window.__pwned") is None
            assert page.problems == []
    finally:
        stop(proc)
