"""Issue 39, parts 4, 5 and 7 (first bullet).

**The settle queue (4).** The owner's settling vote counts only while it settles a real dispute:
the raters' live votes (the owner's aside) tie under the vote rule, and every one of them was
there when the owner voted. A rater who undoes or changes so that the raters no longer tie leaves
the owner's vote on disk but inert (the pair counts as the raters' votes say, and needs a rater
again if it is short of judgements); a dispute made of the votes the owner saw counts the owner's
vote again; a dispute with a vote the owner has not seen waits again. ``abcde quality`` and the
owner's queue read one rule (:func:`abcde.samples.judgements.resolve`), so every pair is waiting,
settled, or not disputed — never lost.

**The people's tasks (5).** With ``pairs --human-budget``, a person's judgement, change or settle
of a pair that is not one of the people's tasks is refused by the store (every surface: the HTTP
API answers 404 naming the pair); the oracle, which stands for people, too; a model judges every
pair. Judgements of such pairs recorded by an abcde before this (kept, never deleted) count in no
progress, no estimate of people's judgements and not for the rule that keeps the people's tasks.

**The owner's name (7).** A rater name that reads as the owner's (case, spaces, punctuation,
width, invisible characters and look-alike digits aside) is refused where names are checked.
"""

from __future__ import annotations

import json
import random
import urllib.parse
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.judging.session import JudgingSession
from abcde.quality import draw_pair_sample, estimate_quality
from abcde.samples.invites import InviteBook
from abcde.samples.judgements import load_judgements, vote
from abcde.samples.people_tasks import people_pairs
from abcde.samples.sample_dir import PairSampleDir
from abcde.samples.raters import OWNER, check_invite_name
from abcde.samples.store import JudgementStore, UnknownPairError
from abcde.web.judging_server import serve
from judging_helpers import assert_error, fresh_copy, make_sample, request

NUMBERS = ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate",
           "judged_pairs", "unsure_pairs", "missing_pairs", "rater_ties", "rater_disagreements")


def numbers(d: dict) -> dict:
    """The estimates and counts of a ``QualityResult.to_dict()`` (not where they came from)."""
    return {k: d[k] for k in NUMBERS}


def truth(d) -> dict:
    items = {r["item_id"]: r["entity_id"] for r in pq.read_table(d / "items.parquet").to_pylist()}
    return {t["pair_id"]: "same" if items[t["item_a"]] == items[t["item_b"]] else "different"
            for t in JudgementStore(d).tasks}


def legacy(store: JudgementStore, pair_id: str, answer: str, rater: str, source: str = "person") -> None:
    """A judgement as an abcde before issue 39 stored it (no check of the people's tasks)."""
    with store.transaction() as con:
        con.execute("INSERT INTO judgements (pair_id, judgement, rater, source, comment, request_id, created_at) "
                    "VALUES (?, ?, ?, ?, NULL, NULL, ?)", (pair_id, answer, rater, source, "2024-01-01T00:00:00.000+00:00"))


# ------------------------------------------------------------------------------------------ part 4
@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("settle"), budget=30)


@pytest.fixture
def served(drawn, tmp_path):
    """A server on a fresh copy (every pair needs two raters), every pair but the first judged twice
    by carol and dave as the truth has it; the first pair, P, is the one the scenarios play on."""
    srv = serve(fresh_copy(drawn, tmp_path), replicate=1.0, seed=5).start()
    s = srv.session
    answers = truth(s.sample_dir)
    for p in s.pair_ids[1:]:
        for who in ("carol", "dave"):
            s.store.record(p, answers[p], rater=who)
    yield srv
    srv.shutdown()


def post(srv, path: str, body: dict, status: int = 0) -> dict:
    code, d = request(srv.url, "POST", path, body)
    assert code == (status or (201 if path in ("/api/judgements", "/api/owner/settle") else 200)), (path, body, code, d)
    return d


def judge(srv, rater, pid, answer):
    return post(srv, "/api/judgements", {"rater": rater, "pair_id": pid, "judgement": answer})


def queue(srv) -> dict:
    """The owner's settle queue: the pair ids waiting, settled and inert, and the whole answer."""
    code, q = request(srv.url, "GET", "/api/owner/settle")
    assert code == 200, q
    ids = {k: [x["pair"]["pair_id"] for x in q.get(k, [])] for k in ("waiting", "settled", "inert")}
    assert len(ids["waiting"]) == q["waiting_total"] and len(ids["settled"]) == q["settled_total"]
    return {**ids, "answer": q}


def counted(d, pid):
    """How ``abcde quality`` counts the pair: its vote resolution over the store's judgements."""
    store = JudgementStore(d)
    return load_judgements([store.path], pair_ids=set(store.pair_ids), id_type=store.id_type).by_pair.get(pid)


def raters_only(store: JudgementStore):
    """The store's person judgements without the owner's votes."""
    t = store.to_table(source="person")
    return t.filter(pa.array([r != OWNER for r in t.column("rater").to_pylist()], pa.bool_()))


def assert_counts_as_the_raters(srv) -> None:
    """``abcde quality`` on the store, and the owner's view, give the raters' votes' estimates: the
    owner's vote does not count."""
    d = srv.session.sample_dir
    expected = numbers(estimate_quality(d, [raters_only(srv.session.store)], distances=False).to_dict())
    assert numbers(estimate_quality(d, source="person", distances=False).to_dict()) == expected
    code, owner = request(srv.url, "GET", "/api/owner")
    assert code == 200 and numbers(owner["estimates"]) == expected
    # the owner's export carries the owner's votes (inert ones too), and 'abcde quality' on it reads the same rule
    code, csv = request(srv.url, "GET", "/api/owner/export")
    assert code == 200 and OWNER in csv
    out = d / "export-39.csv"
    out.write_text(csv)
    try:
        assert numbers(estimate_quality(d, out, source="person", distances=False).to_dict()) == expected
    finally:
        out.unlink()


def dispute_settled(srv, owner_answer="same") -> str:
    """Alice judges P same, Bob different, the owner settles: P is settled as the owner said."""
    p = srv.session.pair_ids[0]
    judge(srv, "alice", p, "same")
    judge(srv, "bob", p, "different")
    q = queue(srv)
    assert q["waiting"] == [p] and q["settled"] == [] and counted(srv.session.sample_dir, p) == "unsure"
    d = post(srv, "/api/owner/settle", {"pair_id": p, "judgement": owner_answer})
    assert d["vote"]["rater"] == OWNER
    q = queue(srv)
    assert q["waiting"] == [] and q["settled"] == [p] and counted(srv.session.sample_dir, p) == owner_answer
    return p


def test_an_undo_that_ends_the_dispute_leaves_the_owners_vote_inert_and_the_pair_open_again(served):
    s, d = served.session, served.session.sample_dir
    p = dispute_settled(served)
    post(served, "/api/undo", {"rater": "alice"})
    # Bob's different and the owner's same: no dispute between raters, so the owner's vote does not count
    assert counted(d, p) == "different"
    q = queue(served)
    assert p not in q["waiting"] and p not in q["settled"] and q["inert"] == [p]
    inert = q["answer"]["inert"][0]
    assert (inert["owner"], inert["owner_earlier"], inert["result"], q["answer"]["inert_total"]) == (None, "same",
                                                                                                    "different", 1)
    assert_counts_as_the_raters(served)
    code, owner = request(served.url, "GET", "/api/owner")
    assert owner["settle"] == {"waiting": 0, "settled": 0}
    # the owner's vote stays on disk, live
    assert [(j.rater, j.judgement) for j in s.store.live() if j.pair_id == p] == [("bob", "different"), (OWNER, "same")]
    # P has one rater's judgement of the two it needs: it goes back to the raters (the owner's vote is none)
    code, st = request(served.url, "GET", "/api/state?rater=erin")
    assert code == 200 and st["next"]["pair_id"] == p
    # nothing to settle now: a new settling vote (or a change of the inert one) is refused
    assert_error(request(served.url, "POST", "/api/owner/settle", {"pair_id": p, "judgement": "different"}), 409,
                 "nothing to settle")
    assert [h["ended"] for h in s.store.history(OWNER, p)] == [None]


def test_a_change_that_ends_the_dispute_leaves_the_owners_vote_inert(served):
    d = served.session.sample_dir
    p = dispute_settled(served)
    post(served, "/api/change", {"rater": "alice", "pair_id": p, "judgement": "different"})
    assert counted(d, p) == "different"  # both raters: different; the owner's same is not a vote now
    q = queue(served)
    assert p not in q["waiting"] and p not in q["settled"] and q["inert"] == [p]
    assert_counts_as_the_raters(served)


def test_bob_undoing_leaves_alices_answer(served):
    d = served.session.sample_dir
    p = dispute_settled(served, "different")
    post(served, "/api/undo", {"rater": "bob"})
    assert counted(d, p) == "same"  # alice's alone; the owner's different no longer ties it
    q = queue(served)
    assert p not in q["waiting"] and p not in q["settled"] and q["inert"] == [p]
    assert_counts_as_the_raters(served)
    used = estimate_quality(d, source="person", distances=False).design["judgements_used"]
    assert used["by_source"]["person"] == 2 * (len(served.session.pair_ids) - 1) + 1  # the raters' only


def test_a_dispute_that_comes_back_with_a_vote_the_owner_has_not_seen_waits_again(served):
    s, d = served.session, served.session.sample_dir
    p = dispute_settled(served)
    post(served, "/api/undo", {"rater": "alice"})
    judge(served, "erin", p, "same")  # Bob's different against Erin's same: a dispute again, a new vote in it
    q = queue(served)
    assert q["waiting"] == [p] and q["settled"] == [] and q["inert"] == []
    item = q["answer"]["waiting"][0]
    assert item["owner"] is None and item["owner_earlier"] == "same" and item["tie"]
    assert counted(d, p) == "unsure"  # the earlier settle does not count: a tie until the owner answers again
    assert_counts_as_the_raters(served)
    # the owner answers again, the same answer: a new vote (the earlier one kept, superseded) that counts
    post(served, "/api/owner/settle", {"pair_id": p, "judgement": "same"})
    q = queue(served)
    assert q["waiting"] == [] and q["settled"] == [p] and counted(d, p) == "same"
    assert q["answer"]["settled"][0]["owner"] == "same"
    assert [h["ended"] for h in s.store.history(OWNER, p)] == ["changed", None]
    # a settle that counts and is given again unchanged writes nothing
    post(served, "/api/owner/settle", {"pair_id": p, "judgement": "same"})
    assert len(s.store.history(OWNER, p)) == 2


def test_the_dispute_the_owner_settled_counts_the_owners_vote_again(served):
    d = served.session.sample_dir
    p = dispute_settled(served)
    judge(served, "erin", p, "same")  # two same to one different: the raters decide, the owner's vote is inert
    q = queue(served)
    assert p not in q["waiting"] and p not in q["settled"] and q["inert"] == [p] and counted(d, p) == "same"
    post(served, "/api/undo", {"rater": "erin"})  # back to the dispute the owner settled, every vote seen
    q = queue(served)
    assert q["settled"] == [p] and q["waiting"] == [] and q["inert"] == [] and counted(d, p) == "same"


def reference(live) -> dict:
    """Each pair's state by the rule, computed from scratch: ``(state, answer)`` with state waiting,
    settled, inert or None (no dispute, no owner's vote) and the answer quality counts (None: not judged)."""
    raters, owner = defaultdict(dict), {}
    for j in live:  # in the order made (ids)
        if j.rater == OWNER:
            owner[j.pair_id] = (j.id, j.judgement)
        else:
            raters[j.pair_id][j.rater] = (j.id, j.judgement)
    out = {}
    for p in set(raters) | set(owner):
        votes = [a for _, a in raters[p].values()]
        disputed = len(votes) >= 2 and vote(votes)[1]
        counts = disputed and p in owner and owner[p][0] > max(i for i, _ in raters[p].values())
        answer = vote(votes + [owner[p][1]] if counts else votes) if votes else None
        if disputed:
            state = "settled" if counts and not answer[1] else "waiting"
        else:
            state = "inert" if p in owner else None
        out[p] = (state, answer[0] if answer else None)
    return out


def test_every_pair_is_waiting_settled_or_not_disputed_never_lost(drawn, tmp_path):
    """A random walk of judgements, undos, changes and settles on three pairs: after every step
    the queue and ``abcde quality`` follow the rule, and each disputed pair is in the queue."""
    s = JudgingSession(fresh_copy(drawn, tmp_path), replicate=1.0)
    pairs, raters = s.pair_ids[:3], ["r1", "r2", "r3", "r4"]
    rng = random.Random(39)
    answers = ("same", "different", "unsure")
    seen = set()
    for step in range(160):
        live = s.store.live(source="person")
        mine = {(j.rater, j.pair_id) for j in live}
        kind = rng.choice(["judge", "judge", "undo", "change", "settle", "settle"])
        who, p, a = rng.choice(raters), rng.choice(pairs), rng.choice(answers)
        if kind == "judge" and (who, p) not in mine:
            s.submit(who, p, a)
        elif kind == "undo":
            s.undo(who)
        elif kind == "change" and (who, p) in mine:
            s.change(who, p, a)
        elif kind == "settle":
            ref = reference(live).get(p, (None, None))[0]
            if ref in ("waiting", "settled"):
                s.settle(p, a)
            else:
                with pytest.raises(InputError, match="nothing to settle"):
                    s.settle(p, a)
        live = s.store.live(source="person")
        ref = reference(live)
        q = s.settle_state()
        listed = {k: {x["pair"]["pair_id"] for x in q[k]} for k in ("waiting", "settled", "inert")}
        for p in pairs:
            state = ref.get(p, (None, None))[0]
            assert [k for k in listed if p in listed[k]] == ([state] if state else []), (step, p, state, listed)
            seen.add(state)
        by_pair = load_judgements([s.store.path], pair_ids=set(s.store.pair_ids), id_type=s.store.id_type).by_pair
        want = {p: a for p, (_, a) in ref.items() if a is not None}
        assert by_pair == want and s.resolved(live) == want, step
    assert seen >= {"waiting", "settled", "inert", None}  # the walk went through every state


# ------------------------------------------------------------------------------------------ part 5
@pytest.fixture(scope="module")
def people_drawn(tmp_path_factory):
    """80 pairs, 20 of them the people's tasks (``pairs --human-budget 20``)."""
    p = example_paths("febrl3")
    return draw_pair_sample(p["base"], p["exp"], tmp_path_factory.mktemp("tasks") / "pairs", items=p["items"],
                            budget=80, seed=3, human_budget=20, hide=["entity_id"])


@pytest.fixture
def people_dir(people_drawn, tmp_path):
    return fresh_copy(people_drawn, tmp_path)


def split(d) -> tuple[list, list]:
    """The people's tasks and the other pairs that need a judgement."""
    s = PairSampleDir.read(d)
    tasks = people_pairs(s.draws, s.metadata)
    return sorted(tasks), sorted(p for p in s.judgeable_ids() if p not in tasks)


def test_a_person_cannot_judge_change_or_settle_a_pair_that_is_not_a_task(people_dir):
    tasks, others = split(people_dir)
    q = others[0]
    srv = serve(people_dir).start()
    try:
        store = srv.session.store
        body = assert_error(request(srv.url, "POST", "/api/judgements", {"rater": "alice", "pair_id": q,
                                                                          "judgement": "same"}), 404,
                            "not one of the people's tasks")
        assert q in body["error"]
        assert [j for j in store.live() if j.pair_id == q] == []
        # judgements an earlier abcde accepted: kept, and counted nowhere
        legacy(store, q, "same", "alice")
        legacy(store, q, "different", "bob")
        assert_error(request(srv.url, "POST", "/api/change", {"rater": "alice", "pair_id": q, "judgement": "different"}),
                     404, "not one of the people's tasks")
        code, opened = request(srv.url, "GET", f"/api/mine/pair?rater=alice&pair_id={q}")  # hers to see, not to change
        assert code == 200 and opened["judgement"]["judgement"] == "same"
        assert_error(request(srv.url, "POST", "/api/owner/settle", {"pair_id": q, "judgement": "same"}), 404,
                     "not one of the people's tasks")
        code, settle = request(srv.url, "GET", "/api/owner/settle")
        assert code == 200 and settle["waiting_total"] == 0 and settle["settled_total"] == 0
        code, owner = request(srv.url, "GET", "/api/owner")
        assert (owner["judgements"], owner["judged_pairs"], owner["rater_progress"], owner["raters"]) == (0, 0, [], [])
        assert owner["agreement"]["replicated_pairs"] == 0
        code, st = request(srv.url, "GET", "/api/state?rater=alice")
        assert code == 200 and st["rater_judgements"] == 0 and st["judgements"] == 0
        # a task is judged as before, and counted
        judge(srv, "alice", tasks[0], "same")
        code, owner = request(srv.url, "GET", "/api/owner")
        assert (owner["judgements"], owner["judged_pairs"]) == (1, 1)
        # nothing was deleted
        assert sorted((j.rater, j.judgement) for j in store.live() if j.pair_id == q) == [("alice", "same"),
                                                                                        ("bob", "different")]
    finally:
        srv.shutdown()


def test_the_store_refuses_people_and_the_oracle_outside_their_tasks_and_takes_a_models_judgements(people_dir):
    tasks, others = split(people_dir)
    q = others[0]
    store = JudgementStore(people_dir)
    for record in (lambda: store.record(q, "same", rater="alice"),
                   lambda: store.record(q, "same", rater=OWNER),
                   lambda: store.record_many([(tasks[0], "same"), (q, "same")], rater="oracle:entity_id",
                                             source="oracle")):
        with pytest.raises(UnknownPairError, match=f"{q}.*not one of the people's tasks"):
            record()
    assert store.live() == []  # all or none
    assert store.record_many([(q, "same"), (tasks[0], "different")], rater="model:x", source="model") == 2
    s = JudgingSession(people_dir)
    with pytest.raises(UnknownPairError, match="not one of the people's tasks"):
        s.submit("alice", q, "same")
    # the oracle judges the people's tasks only, as before
    r = CliRunner().invoke(main, ["judge", "oracle", str(people_dir), "--oracle-column", "entity_id", "--json"])
    assert r.exit_code == 0, r.output and json.loads(r.output)["judgements"] == len(tasks)


def test_legacy_judgements_outside_the_tasks_count_in_no_progress_and_no_owners_estimate(people_dir):
    tasks, others = split(people_dir)
    store = JudgementStore(people_dir)
    answers = truth(people_dir)
    for p in tasks:
        store.record(p, answers[p], rater="alice")
    before = JudgingSession(people_dir).owner_state()
    for p in others[:6]:
        legacy(store, p, "different" if answers[p] == "same" else "same", "alice")  # judged wrong, on purpose
        legacy(store, p, answers[p], "bob")
    after = JudgingSession(people_dir).owner_state()
    for key in ("judgements", "judged_pairs", "rater_progress", "raters", "all_judged", "settle"):
        assert after[key] == before[key], key
    assert numbers(after["estimates"]) == numbers(before["estimates"])
    assert after["agreement"]["replicated_pairs"] == 0
    st = JudgingSession(people_dir).state("bob")
    assert st["rater_judgements"] == 0 and st["judgements"] == len(tasks)


def test_quality_source_person_leaves_out_legacy_judgements_outside_the_tasks(people_dir):
    tasks, others = split(people_dir)
    store = JudgementStore(people_dir)
    answers = truth(people_dir)
    for p in tasks:
        store.record(p, answers[p], rater="alice")
    before = estimate_quality(people_dir, source="person", distances=False)
    for p in others[:6]:
        legacy(store, p, "different" if answers[p] == "same" else "same", "alice")
    after = estimate_quality(people_dir, source="person", distances=False)
    assert numbers(after.to_dict()) == numbers(before.to_dict())
    assert after.design["judgements_used"]["by_source"] == {"person": len(tasks)}


def test_a_legacy_judgement_outside_the_tasks_does_not_keep_the_tasks(people_dir):
    """The people's tasks are chosen by the model's answers while no person has judged one of them."""
    tasks, others = split(people_dir)
    legacy(JudgementStore(people_dir), others[0], "same", "alice")
    r = CliRunner().invoke(main, ["judge", "model", str(people_dir), "--callable", "abcde.examples.judges:fields_agree",
                                  "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["people_tasks"]["chosen"], r.output


def test_load_judgements_leaves_out_peoples_judgements_outside_the_tasks(people_dir):
    """The one definition: a person's or the oracle's judgement counts on a people's task only; a model's
    on every pair. What it leaves out is counted by source."""
    tasks, others = split(people_dir)
    store = JudgementStore(people_dir)
    store.record(tasks[0], "same", rater="alice")
    legacy(store, others[0], "same", "alice")
    legacy(store, others[1], "same", "oracle:entity_id", source="oracle")
    store.record_many([(others[0], "different"), (tasks[0], "different")], rater="model:x", source="model")
    s = PairSampleDir.read(people_dir)
    res = load_judgements([store.path], pair_ids=s.judgeable_ids(), id_type=s.metadata["id_type"], tasks=set(tasks))
    assert res.by_pair == {tasks[0]: "unsure", others[0]: "different"}  # alice and the model tie on the task
    assert res.sources == {"person": 1, "model": 2} and res.outside_tasks == {"person": 1, "oracle": 1}


# ------------------------------------------------------------------------------------------ part 7
NEAR_OWNER = ["Owner ", "owner.", "OWNER", "\uff4f\uff57\uff4e\uff45\uff52", "own\u200ber", "0wner", "o w n e r",
              "Owner-", "owner_"]


@pytest.mark.parametrize("name", NEAR_OWNER)
def test_names_that_read_as_the_owners_are_refused_in_open_mode(drawn, tmp_path, name):
    srv = serve(fresh_copy(drawn, tmp_path)).start()
    try:
        pid = srv.session.pair_ids[0]
        body = assert_error(request(srv.url, "POST", "/api/judgements", {"rater": name, "pair_id": pid,
                                                                          "judgement": "same"}), 400, "reads as 'owner'")
        assert "another name" in body["error"]
        assert_error(request(srv.url, "GET", "/api/state?rater=" + urllib.parse.quote(name)), 400, "reads as 'owner'")
        assert srv.session.store.live() == []
    finally:
        srv.shutdown()


@pytest.mark.parametrize("name", NEAR_OWNER)
def test_names_that_read_as_the_owners_are_refused_everywhere_names_are_checked(drawn, tmp_path, name):
    d = fresh_copy(drawn, tmp_path)
    store = JudgementStore(d)
    with pytest.raises(InputError, match="reads as 'owner'"):
        store.record(store.pair_ids[0], "same", rater=name)
    with pytest.raises(InputError, match="reads as 'owner'"):
        check_invite_name(name)
    with pytest.raises(InputError, match="reads as 'owner'"):
        InviteBook(store).invite([name])
    r = CliRunner().invoke(main, ["judge", "raters", str(d), "--new-link", name])
    assert r.exit_code != 0 and "reads as 'owner'" in r.output, r.output


@pytest.mark.parametrize("name", ["ann", "owen", "owners", "bowner", "Owner2", "co-owner", "ow ner2"])
def test_other_names_are_raters(drawn, tmp_path, name):
    d = fresh_copy(drawn, tmp_path)
    s = JudgingSession(d)
    s.submit(name, s.pair_ids[0], "same")
    assert check_invite_name(name) == name and check_invite_name(OWNER) == OWNER
