"""Judging an entity sample (issue 53): ``abcde judge serve DIR`` on a directory of ``abcde entities``
serves "complete this item's entity"; the answers go to ``DIR/entity_judgements.sqlite``
(:mod:`abcde.completion.store`) and ``abcde quality DIR`` reads them.

The store's rules (validation, undo, one live answer, durability across a killed writer and a
reopen), the real server over HTTP (``abcde judge serve`` as a subprocess, invite links), and the
page in a real headless Chromium at 800 px and 1,400 px: members ticked by keyboard and by mouse, a
candidate and a searched item added, searched / none searched, submit, undo, a second rater; then
``abcde quality DIR --json`` against :func:`estimate_entities` on the same rows.

The owner's view and the settle queue: the settle rule at the store and estimate level (a settlement
counts while the raters' answers differ, replacing the conflict's unsure, and nowhere else), the
owner's routes closed to raters, the export's cells neutralised, and in the browser two raters who
differ, the owner's page at 800 px and 1,400 px, the owner settling, and ``abcde quality --json``
counting it settled."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from urllib.parse import quote

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from abcde.completion import EntitySample, EntityStore, estimate_entities, oracle_entities, write_entity_sample
from abcde.completion.estimate import read_answers
from abcde.completion.judgements import NothingToSettleError, group_answers, settle_answer
from abcde.completion.store import STORE_FILE, sample_key
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.samples.ledger_rules import DuplicateJudgementError
from abcde.samples.sqlite_guard import StoreFileError
from abcde.util.files import FORMULA_STARTS, restore_formulas
from abcde.web.entity_session import inputs_finder, item_ref
from abcde.web.routes_entities import serve_entities
from judging_helpers import HOSTILE, assert_error, page_under_csp, request, start_server, stop, wait_text


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


# ----------------------------------------------------------------------------- the owner's settlements
def one_sided_member(d, a):
    """A member of anchor ``a`` in one of its two clusters only: its answer moves ΔRecall."""
    return next(r["item_id"] for r in pq.read_table(d / "members.parquet").to_pylist()
                if r["anchor"] == a and r["item_id"] != a and r["in_base"] != r["in_exp"])


def agreed(a, members, m, answer, search="searched") -> list:
    """Rows of one rater who answers every member same but ``m`` (``answer``)."""
    return [{"anchor": a, "item_id": x, "answer": answer if x == m else "same"} for x in members] + \
        [{"anchor": a, "item_id": None, "answer": search}]


def metrics(q) -> dict:
    return {k: v for k, v in q.to_dict().items() if k in ("delta_recall", "iq", "delta_precision")}


def test_the_owner_settles_a_real_dispute_only(sample):
    """The settle rule, at the store and the estimate: the owner's answer of an (anchor, item) counts
    while the raters' live answers of it differ, instead of the conflict's unsure, and nowhere else;
    a settlement of answers that do not differ is refused in one line; settlements are append-only,
    on disk, replay-safe; a store made before settlements gets their table with the first."""
    st = EntityStore(sample, create=True)
    with st.transaction() as con:  # a store made before settlements existed
        con.execute("DROP TABLE settlements")
    assert st.settlements() == []
    tasks = tasks_by_anchor(sample)
    a, b, c = draw_order(sample)[:3]
    ms, mb = members_of(tasks[a]), members_of(tasks[b])
    m = one_sided_member(sample, a)
    other = next(x for x in ms if x != m)
    st.record_anchor(a, [(x, "same") for x in ms] + [(None, "searched")], rater="ann")
    st.record_anchor(a, [(x, "different" if x == m else "same") for x in ms] + [(None, "searched")], rater="bob")
    st.record_anchor(b, [(x, "same") for x in mb] + [(None, "searched")], rater="ann")
    st.record_anchor(b, [(x, "same") for x in mb] + [(None, "not searched")], rater="bob")
    q = estimate_entities(sample)
    assert q.answers["conflicts"] == 1 and q.answers["settled"] == 0 and q.unsure_members == 1
    assert q.skipped_search == 1 and q.metrics["delta_recall"].estimate is None  # a range: m is unsure
    # nothing to settle: answers that agree, one rater's, none; an item that is not a member or candidate
    refusals = [((a, other, "same"), NothingToSettleError, "its raters' answers agree (same)"),
                ((a, None, "not searched"), NothingToSettleError, "The search of anchor"),
                ((c, members_of(tasks[c])[0], "same"), NothingToSettleError, "no rater answered it"),
                ((a, m, "searched"), InputError, "with one of same, different, unsure"),
                ((b, None, "same"), InputError, "with 'searched' or 'not searched'"),
                ((a, unlisted_item(sample, tasks[a])["item_id"], "same"), InputError, "neither a member nor a candidate"),
                ((a, a, "same"), InputError, "neither a member nor a candidate")]
    for (anchor, item, answer), error, match in refusals:
        with pytest.raises(error, match=re.escape(match)) as e:
            settle_answer(st, anchor, item, answer)
        assert "\n" not in str(e.value)
    assert st.settlements() == []
    # the owner settles m: it counts instead of the conflict, as if both raters had said so
    row, written = settle_answer(st, a, m, "same", request_id="s1")
    assert written and row["answer"] == "same" and row["source"] == "owner" and row["rater"] == "owner"
    q = estimate_entities(sample)
    assert q.answers["conflicts"] == 0 and q.answers["settled"] == 1 and q.unsure_members == 0
    b_rows = agreed(b, mb, None, "same", "not searched")
    assert metrics(q) == metrics(estimate_entities(sample, agreed(a, ms, m, "same") + b_rows))
    assert metrics(estimate_entities(sample, source="person")) == metrics(q)  # settlements settle people's answers
    with pytest.raises(DuplicateJudgementError, match="already recorded"):
        settle_answer(st, a, m, "different", request_id="s1")
    assert settle_answer(st, a, m, "same")[1] is False  # the live answer already: nothing written
    # a new answer replaces the live one (the old one kept, withdrawn)
    settle_answer(st, a, m, "different")
    assert [(r["answer"], r["withdrawn_at"] is None) for r in st.settlements(withdrawn=True)] == [
        ("same", False), ("different", True)]
    assert metrics(estimate_entities(sample)) == metrics(estimate_entities(sample, agreed(a, ms, m, "different") +
                                                                           b_rows))
    # the search of b: the owner's 'searched' counts too
    settle_answer(st, b, None, "searched")
    q = estimate_entities(sample)
    assert q.skipped_search == 0 and q.answers["settled"] == 2
    # bob undoes b, then a: no dispute left, the settlements are kept and count nowhere
    assert st.undo("bob").anchor == b and st.undo("bob").anchor == a
    q = estimate_entities(sample)
    assert q.answers["settled"] == 0 and metrics(q) == metrics(estimate_entities(
        sample, agreed(a, ms, m, "same") + agreed(b, mb, None, "same")))
    groups = group_answers(st.live() + [{**r, "source": "owner"} for r in st.settlements()], set(draw_order(sample)))
    assert groups[(a, m)].state == "inert" and groups[(b, None)].state == "inert"
    with pytest.raises(NothingToSettleError, match=re.escape("(your earlier settlement of it is kept, and counts "
                                                             "nowhere)")):
        settle_answer(st, a, m, "same")
    # bob answers a again, differing on m: the owner's answer counts again
    st.record_anchor(a, [(x, "different" if x == m else "same") for x in ms] + [(None, "searched")], rater="bob")
    q = estimate_entities(sample)
    assert q.answers["settled"] == 1 and q.answers["conflicts"] == 0
    assert metrics(q) == metrics(estimate_entities(sample, agreed(a, ms, m, "different") +
                                                   agreed(b, mb, None, "same")))
    # read_answers: an owner's row alone makes no anchor; rows without one read as before
    got, counts = read_answers([{"anchor": c, "item_id": None, "answer": "searched", "source": "owner"}],
                               EntitySample.read(sample))
    assert got == {} and counts == {"answers": 0, "conflicts": 0, "settled": 0}
    three = [{"anchor": a, "item_id": m, "answer": x} for x in ("same", "different", "same")]
    got, counts = read_answers(three, EntitySample.read(sample))
    assert counts["conflicts"] == 2 and got[a].unsure == {m}
    got, counts = read_answers(three + [{"anchor": a, "item_id": m, "answer": "different", "source": "owner"}],
                               EntitySample.read(sample))
    assert counts == {"answers": 1, "conflicts": 0, "settled": 1} and got[a].different == {m} and not got[a].unsure
    # every settlement is in the store file: a new reader sees them
    assert [(r["anchor"], r["item_id"], r["answer"]) for r in EntityStore(sample).settlements()] == [
        (a, m, "different"), (b, None, "searched")]


#: Item ids a spreadsheet would run (each id of the test's items starts so).
FORMULA_IDS = ['=HYPERLINK("http://evil.example","x")', "+1+", "-2+", "@SUM(A", "\uff1dcmd", "'=already"]


def test_the_owners_export_neutralises_formulas(tmp_path):
    """The owner's CSV download of an entity sample whose item ids are formulas: every live answer and
    the owner's settlement, no cell a spreadsheet would run, and every value read back exactly; a
    settlement over HTTP, and one of answers that agree refused in one line."""
    n = 12
    ids = [f"{FORMULA_IDS[k % len(FORMULA_IDS)]}{k}" for k in range(n)]
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [k // 4 for k in range(n)]}), tmp_path / "base.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [k // 2 for k in range(n)]}), tmp_path / "exp.parquet")
    pq.write_table(pa.table({"item_id": ids, "name": [f"=N{k // 3}" for k in range(n)]}), tmp_path / "items.parquet")
    d = tmp_path / "ent"
    write_entity_sample(tmp_path / "base.parquet", tmp_path / "exp.parquet", d, items=tmp_path / "items.parquet",
                        budget=40)
    srv = serve_entities(d).start()
    try:
        code, s = request(srv.url, "GET", "/api/state?rater=ann")
        t = s["next"]
        assert code == 200 and len(t["members"]) >= 2
        code, _ = request(srv.url, "POST", "/api/answers", body_for(t))
        assert code == 201
        bob = body_for(t, rater="bob")
        bob["members"][0]["answer"] = "different"
        code, _ = request(srv.url, "POST", "/api/answers", bob)
        assert code == 201
        first, second = (m["ref"] for m in t["members"][:2])
        assert_error(request(srv.url, "POST", "/api/owner/settle", {"anchor": t["anchor"], "item": second,
                                                                    "answer": "different"}), 409,
                     "its raters' answers agree (same); the owner settles only answers that differ")
        assert_error(request(srv.url, "POST", "/api/owner/settle", {"anchor": t["anchor"], "answer": "same"}), 400,
                     "Missing field(s) 'item'")
        code, q = request(srv.url, "GET", "/api/owner/settle")
        assert q["waiting_total"] == 1 and q["waiting"][0]["item"]["ref"] == first
        assert [x["answer"] for x in q["waiting"][0]["answers"]] == ["same", "different"]
        code, q = request(srv.url, "POST", "/api/owner/settle", {"anchor": t["anchor"], "item": first,
                                                                 "answer": "different", "request_id": "x1"})
        assert code == 201 and q["waiting_total"] == 0 and q["settled_total"] == 1
        assert q["settled"][0]["owner"] == q["settled"][0]["result"] == "different"
        assert q["settlement"] == {"anchor": t["anchor"], "item": first, "answer": "different", "rater": "owner",
                                   "created_at": q["settlement"]["created_at"], "written": True}
        code, text = request(srv.url, "GET", "/api/owner/export")
    finally:
        srv.shutdown()
    assert code == 200
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert [c for c in cells if c.startswith(FORMULA_STARTS)] == []
    assert sum(c in ids or c.startswith("'") and c[1:] in ids for c in cells) >= 4  # ids from data, as text
    assert not set(cells) & {i for i in ids if i.startswith(FORMULA_STARTS)}
    back = restore_formulas(pacsv.read_csv(io.BytesIO(text.encode()), convert_options=pacsv.ConvertOptions(
        column_types={k: pa.string() for k in ("anchor", "item_id", "answer", "rater", "source", "created_at")},
        strings_can_be_null=True)))
    assert back.to_pylist() == EntityStore(d).to_table().to_pylist()
    assert back.column("source").to_pylist()[-1] == "owner" and back.column("answer").to_pylist()[-1] == "different"


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
        assert set(links) == {"ann", "bob", "owner"} and info["invites"] is True and info["instructions"] is True
        assert info["owner_url"] == url + "owner"
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
        # the owner's view and the settle queue are the owner's: a rater's link opens neither
        for path in ("/owner", "/settle"):
            code, page = request(url, "GET", path, headers=bearer)
            assert code == 403 and "invite link" in page and "judge-entity-owner.js" not in page, path
        for method, path in (("GET", "/api/owner"), ("GET", "/api/owner/export"), ("GET", "/api/owner/settle"),
                             ("POST", "/api/owner/settle")):
            assert_error(request(url, method, path, {} if method == "POST" else None, headers=bearer), 403,
                         "needs the owner's invite link")
        owner = {"Authorization": f"Bearer {links['owner'].rsplit('/', 1)[1]}"}
        code, page = request(url, "GET", "/owner", headers=owner)
        assert code == 200 and "judge-entity-owner.js" in page and "/api/owner/export" in page
        code, page = request(url, "GET", "/settle", headers=owner)
        assert code == 200 and "judge-entity-settle.js" in page and "<em>every</em> record" in page
        code, o = request(url, "GET", "/api/owner", headers=owner)
        assert code == 200 and o["judged_anchors"] == 1 and o["rater_progress"][0]["rater"] == "bob"  # invited: named
        assert o["estimates"]["anchors_judged"] == 1 and o["settle"] == {"waiting": 0, "settled": 0, "inert": 0}
        # the owner's link judges nothing, and settles only what raters answered differently
        assert_error(request(url, "POST", "/api/answers", body_for(s["next"], rater=None), headers=owner), 403,
                     "does not judge")
        member = s["next"]["members"][0]["ref"]
        assert_error(request(url, "POST", "/api/owner/settle", {"anchor": s["next"]["anchor"], "item": member,
                                                                 "answer": "same"}, headers=owner), 409,
                     "has nothing to settle: one rater answered it (same)")
    finally:
        stop(proc)
    assert {r["rater"] for r in EntityStore(sample).live()} == {"bob"}
    assert EntityStore(sample).settlements() == []


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


def no_overflow(page, width: int) -> None:
    """Nothing wider than the window (no horizontal scroll), every section inside it."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for box in page.locator("main section:visible").all():
        b = box.bounding_box()
        assert b and b["x"] >= 0 and b["x"] + b["width"] <= width, b


def test_two_raters_differ_and_the_owner_settles_in_a_browser(sample, tmp_path, browser, screenshot):
    """Over the real server (invite links) and a real Chromium: ann completes the first item on her
    page, bob answers it otherwise over HTTP (one member and the search); the owner's page (at 800 px
    and 1,400 px, no horizontal overflow) says two answers wait and shows the range the conflict
    leaves; a rater's link opens neither the owner's page nor the settle queue; on the settle page
    the owner sees the item, the member and each rater's answer, and settles both by keyboard; a
    settle of answers that agree is refused in one line; ``abcde quality DIR --json`` then counts
    them settled (no conflict, no member unsure, the search done) and gives what one agreeing rater
    would, as the owner's page does."""
    tasks, order = tasks_by_anchor(sample), draw_order(sample)
    a = order[0]
    ms = members_of(tasks[a])
    m = one_sided_member(sample, a)
    key = sample_key(EntitySample.read(sample))
    proc, info = start_server(sample, tmp_path / "server.log", "--raters", "ann,bob", "--hide", "note")
    contexts = []

    def new_page(link: str, width: int = 1400):
        ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        contexts.append(ctx)
        pg = ctx.new_page()
        pg.route("**/*", lambda route: route.continue_() if route.request.url.split("/")[2].startswith(
            ("127.0.0.1", "localhost")) else route.abort())
        pg.errors = []
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        pg.goto(link)
        return pg

    try:
        url, links = info["url"], info["links"]
        assert info["owner_url"] == url + "owner" and set(links) == {"ann", "bob", "owner"}
        bob = {"Authorization": f"Bearer {links['bob'].rsplit('/', 1)[1]}"}
        owner = {"Authorization": f"Bearer {links['owner'].rsplit('/', 1)[1]}"}
        # ann, on her page: every member the same, searched
        ann = new_page(links["ann"])
        assert shown_anchor(ann) == item_ref(key, a)
        for _ in ms:
            ann.keyboard.press("s")
        ann.keyboard.press("y")
        ann.keyboard.press("Enter")
        ann.wait_for_function("document.body.dataset.acks === '1'")
        # a rater's link opens neither the owner's page nor the settle queue
        for path in ("/owner", "/settle"):
            ann.goto(url + path.lstrip("/"))
            assert "owner's invite link" in ann.inner_text("body") and ann.locator("#estimates, #settle").count() == 0
        # bob answers the same item over HTTP: m different, and the search not done
        code, s = request(url, "GET", "/api/state", headers=bob)
        t = {**s["next"], "anchor": item_ref(key, a), "members": [{"ref": item_ref(key, x)} for x in ms]}
        body = body_for(t, rater=None, search="not searched")
        body["members"] = [{"ref": item_ref(key, x), "answer": "different" if x == m else "same"} for x in ms]
        code, _ = request(url, "POST", "/api/answers", body, headers=bob)
        assert code == 201
        before = estimate_entities(sample)
        assert before.answers["conflicts"] == 1 and before.unsure_members == 1 and before.skipped_search == 1
        # the owner's page: two answers wait; the conflict leaves ranges; no horizontal overflow at either width
        pg = new_page(links["owner"], 800)
        pg.wait_for_url("**/owner")
        pg.wait_for_function("Number(document.body.dataset.loads || 0) >= 1")
        wait_text(pg, "#disputes-text", "2 answers where raters differ wait")
        assert "1 conflict" in pg.inner_text("#answers-text")
        assert " to " in pg.inner_text("#estimates tr[data-metric='delta_recall'] td.estimate")  # a range
        assert pg.inner_text("#verdict") == before.to_dict()["verdict"]
        assert pg.locator("#raters-body tr").count() == 2 and pg.inner_text("#raters-body").count("ann") == 1
        for width in (800, 1400):
            pg.set_viewport_size({"width": width, "height": 900})
            no_overflow(pg, width)
            screenshot(pg, f"judge-entity-owner-{width}.png", full_page=True)
        # the settle queue: the item and the member side by side, each rater's answer
        pg.click("#settle-link")
        pg.wait_for_url("**/settle")
        pg.wait_for_function("document.body.dataset.current !== undefined && document.body.dataset.current !== ''")
        assert pg.get_attribute("#settle", "data-item") == item_ref(key, m)
        assert pg.inner_text("#votes").splitlines() == ["ann: same", "bob: different"]
        assert pg.locator("#pair-body tr").count() == len(t["columns"]) and "note" not in pg.inner_text("#pair")
        assert pg.inner_text("#waiting-count") == "(2)"
        for width in (800, 1400):
            pg.set_viewport_size({"width": width, "height": 900})
            no_overflow(pg, width)
            screenshot(pg, f"judge-entity-settle-{width}.png", full_page=True)
        pg.keyboard.press("y")  # a search answer on a member: nothing happens
        pg.keyboard.press("s")
        pg.wait_for_function("document.body.dataset.settles === '1'")
        wait_text(pg, "#status", "Saved: your answer is same")
        assert pg.get_attribute("#settle", "data-item") == ""  # next: the search
        assert pg.inner_text("#votes").splitlines() == ["ann: searched", "bob: none searched"]
        pg.keyboard.press("y")
        pg.wait_for_function("document.body.dataset.settles === '2'")
        wait_text(pg, "#settle-done-title", "Every difference is settled")
        assert pg.inner_text("#settled-count") == "(2)"
        # a settle of answers that agree: one clear line, nothing stored
        other = next(x for x in ms if x != m)
        assert_error(request(url, "POST", "/api/owner/settle", {"anchor": item_ref(key, a),
                                                                 "item": item_ref(key, other), "answer": "different"},
                             headers=owner), 409,
                     "has nothing to settle: its raters' answers agree (same); the owner settles only answers that "
                     "differ")
        assert len(EntityStore(sample).settlements()) == 2
        # back on the owner's page: settled, and the estimates the settlements give
        pg.goto(url + "owner")
        wait_text(pg, "#disputes-text", "Every difference is settled (2 items)")
        code, o = request(url, "GET", "/api/owner", headers=owner)
        assert code == 200 and o["settle"] == {"waiting": 0, "settled": 2, "inert": 0}
        assert pg.inner_text("#verdict") == o["verdict"] and "1 of 148 anchors judged so far" in o["verdict"]
        code, text = request(url, "GET", "/api/owner/export", headers=owner)
        assert code == 200 and text.count('"owner","owner"') == 2
        assert all(p.errors == [] for p in (ann, pg))
    finally:
        for ctx in contexts:
            ctx.close()
        stop(proc)
    r = subprocess.run([sys.executable, "-m", "abcde", "quality", str(sample), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    ann_rows = [{k: x[k] for k in ("anchor", "item_id", "answer")} for x in EntityStore(sample).live()
                if x["rater"] == "ann"]  # her members, the candidates she searched past, her search
    assert got["answers"] == {"answers": len(ann_rows) - 1, "conflicts": 0, "settled": 2,
                              "source": "people and oracle"}
    assert got["unsure_members"] == 0 and got["search_skipped"] == 0
    want = estimate_entities(sample, ann_rows).to_dict()  # the owner settled both as ann answered
    def printed(d: dict) -> dict:  # as --json prints it: a number that is not finite is null
        return {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in d.items()}

    for k in ("delta_recall", "iq", "delta_precision"):
        assert got[k] == printed(want[k]) == o["estimates"][k], k
    assert got["delta_recall"] != printed(before.to_dict()["delta_recall"])  # a point now, not a range
    assert got["delta_recall"]["estimate"] is not None and before.metrics["delta_recall"].estimate is None
    assert got["verdict"] == o["verdict"] == want["verdict"]
