"""The judging server's HTTP API in-process: concurrent raters lose nothing, bad and replayed
submissions get 4xx without touching the store, only the server's own routes are served,
replicated pairs give agreement, the stop rule, and raters' answers carry no estimates (the
owner's do)."""

from __future__ import annotations

import hashlib
import http.client
import json
import sqlite3
import tempfile
import threading
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from abcde.errors import InputError
from abcde.judging import JudgementStore, JudgingSession, StoreLockedError
from abcde.quality import estimate_quality
from abcde.samples.raters import check_rater
from abcde.web.judging_server import JudgingServer, serve
from abcde.web.transport import Limits
from judging_helpers import (assert_error, assert_errors_have_one_shape, assert_host_check, assert_page_is_strict,
                             assert_slow_clients_do_not_hold, fresh_copy, make_sample, request)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("judge-api"), estimator="paper")  # the app test uses the default


@pytest.fixture
def server(sample, tmp_path):
    srv = serve(fresh_copy(sample, tmp_path), replicate=0.3, seed=7, target_width=0.5, show_raters=True).start()
    yield srv
    srv.shutdown()


def truth(sample_dir):
    """The FEBRL truth of every pair: answers a careful rater would give."""
    items = {r["item_id"]: r["entity_id"] for r in pq.read_table(sample_dir / "items.parquet").to_pylist()}
    store = JudgementStore(sample_dir)
    return {t["pair_id"]: "same" if items[t["item_a"]] == items[t["item_b"]] else "different" for t in store.tasks}


def integrity(path) -> str:
    con = sqlite3.connect(path)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def test_concurrent_raters_lose_nothing_and_replicated_pairs_give_agreement(server):
    d = server.session.sample_dir
    answers = truth(d)
    acked: dict[str, list] = defaultdict(list)
    errors = []

    def rater(name, unsure_on_replicated):
        k = 0
        while True:
            code, st = request(server.url, "GET", f"/api/state?rater={name}")
            if code != 200:
                errors.append((name, code, st))
                return
            nxt = st["next"]
            if nxt is None:
                return
            ans = "unsure" if unsure_on_replicated and nxt["replicated"] else answers[nxt["pair_id"]]
            k += 1
            code, r = request(server.url, "POST", "/api/judgements",
                              {"rater": name, "pair_id": nxt["pair_id"], "judgement": ans, "request_id": f"{name}-{k}"})
            if code == 201:
                acked[name].append((nxt["pair_id"], ans))
            elif code != 409:  # 409: nothing else is acceptable (the pair was judged meanwhile by them)
                errors.append((name, code, r))

    threads = [threading.Thread(target=rater, args=(n, f)) for n, f in (("ann", False), ("bob", False), ("cy", True))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    live = server.session.store.live(source="person")
    assert sorted((j.rater, j.pair_id, j.judgement) for j in live) == sorted(
        (r, p, a) for r, v in acked.items() for p, a in v)
    per_pair = Counter(j.pair_id for j in live)
    raters_per_pair = defaultdict(set)
    for j in live:
        raters_per_pair[j.pair_id].add(j.rater)
    replicated = server.session.replicated
    # The documented rule (judging/session.py): a pair is replicated when md5("seed:replicate:pair id"),
    # read as a number in [0, 1), is below the share (0.3, seed 7): about 9 of the 30 pairs (27 of the paper's draws, 3
    # agreed); which ones follows the draws (10 since the agreed pairs are drawn by cells, issue 49).
    def unit(pid):
        return int(hashlib.md5(f"7:replicate:{pid}".encode()).hexdigest()[:15], 16) / 16 ** 15
    assert replicated == {p for p in server.session.pair_ids if unit(p) < 0.3}
    assert 3 <= len(replicated) <= 16  # 0.3 of 30: 9 ± 2.5
    assert set(per_pair) == set(server.session.pair_ids)  # every pair judged
    assert all(len(raters_per_pair[p]) >= 2 for p in replicated)  # by two different raters
    assert integrity(server.session.store.path) == "ok"
    st = request(server.url, "GET", "/api/owner")[1]
    ag = st["agreement"]
    assert ag["replicated_pairs"] >= len(replicated)
    # Fleiss' kappa of the first two answers of every pair judged twice, worked here from the store
    # (m = 2: P_i = 1 when the two agree, else 0; p_k from all answers): cy says unsure on
    # replicated pairs, the others the truth.
    firsts = defaultdict(list)
    for j in live:
        firsts[j.pair_id].append(j.judgement)
    two = [v[:2] for v in firsts.values() if len(v) >= 2]
    p_bar = sum(a == b for a, b in two) / len(two)
    shares = Counter(x for v in two for x in v)
    pe = sum((n / (2 * len(two))) ** 2 for n in shares.values())
    assert ag["fleiss_kappa"] == pytest.approx((p_bar - pe) / (1 - pe), abs=1e-12)
    assert ag["replicated_pairs"] == len(two)
    assert {tuple(c["raters"]) for c in ag["cohen"]} <= {("ann", "bob"), ("ann", "cy"), ("bob", "cy")}
    # every pair judged (mostly truthfully): the 95% interval is narrow enough for the target
    assert st["judged_pairs"] == 30 and st["all_judged"]
    assert request(server.url, "GET", "/api/state?rater=ann")[1]["next"] is None
    assert st["can_stop"] == (st["ci_width"] is not None and st["ci_width"] <= 0.5)


def test_bad_and_replayed_submissions_get_4xx_and_leave_the_store_intact(server):
    url = server.url
    pid = request(url, "GET", "/api/state?rater=ann")[1]["next"]["pair_id"]
    ok = {"rater": "ann", "pair_id": pid, "judgement": "same", "request_id": "r-1"}
    assert request(url, "POST", "/api/judgements", ok)[0] == 201
    assert_error(request(url, "POST", "/api/judgements", ok), 409, "already recorded")  # replay
    assert_error(request(url, "POST", "/api/judgements", {**ok, "request_id": "r-2"}), 409, "already judged")
    assert_error(request(url, "POST", "/api/judgements", {**ok, "request_id": "r-3", "pair_id": "f" * 16}), 404,
                 "not one of the 30 pairs")
    assert_error(request(url, "POST", "/api/judgements", {**ok, "rater": "bob", "judgement": "maybe"}), 400,
                 "judgement must be one of same, different, unsure")
    assert_error(request(url, "POST", "/api/judgements", {**ok, "rater": "<script>x</script>"}), 400, "rater name")
    assert_error(request(url, "POST", "/api/judgements", {"rater": "bob"}), 400, "missing field")
    assert_error(request(url, "POST", "/api/judgements", raw=b"{not json"), 400, "not valid JSON")
    assert_error(request(url, "POST", "/api/judgements", raw=b"[1, 2]"), 400, "JSON object")
    assert_error(request(url, "POST", "/api/judgements", raw=b"rater=bob",
                         headers={"Content-Type": "application/x-www-form-urlencoded"}), 415, "application/json")
    assert_error(request(url, "POST", "/api/judgements", {**ok, "rater": "bob", "comment": 5}), 400, "comment")
    assert_error(request(url, "POST", "/api/undo", {"rater": "zed"}), 409, "no judgement to undo")
    assert_error(request(url, "GET", "/api/judgements"), 405)
    live = server.session.store.live()
    assert [(j.rater, j.pair_id, j.judgement) for j in live] == [("ann", pid, "same")]
    assert integrity(server.session.store.path) == "ok"
    # undo, then the same pair may be judged again
    assert request(url, "POST", "/api/undo", {"rater": "ann"})[1]["undone"]["pair_id"] == pid
    assert request(url, "POST", "/api/judgements", {**ok, "judgement": "different", "request_id": "r-4"})[0] == 201
    assert [(j.pair_id, j.judgement) for j in server.session.store.live()] == [(pid, "different")]
    # a comment is kept (trimmed) and exported with the judgement
    nxt = request(url, "GET", "/api/state?rater=ann")[1]["next"]["pair_id"]
    assert request(url, "POST", "/api/judgements", {"rater": "ann", "pair_id": nxt, "judgement": "unsure",
                                                    "comment": "  twins? <b>x</b> "})[0] == 201
    rows = server.session.store.to_table().to_pylist()
    assert rows[-1]["comment"] == "twins? <b>x</b>" and rows[-1]["source"] == "person" and rows[-1]["rater"] == "ann"


@pytest.mark.parametrize("path", ["/../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd",
                                  "/api/state/../../../etc/passwd", "/judgements.sqlite", "/pairs.parquet",
                                  "/..%5c..%5cwindows%5cwin.ini", "//etc/passwd", "/index.html"])
def test_only_its_own_routes_are_served(server, path):
    code, body = request(server.url, "GET", path)
    assert_error((code, body), 404, "not found")


def test_foreign_host_header_is_refused_and_headers_are_strict(server):
    assert_error(request(server.url, "GET", "/api/state", headers={"Host": "evil.example:80"}), 403)
    assert_host_check(server.url, "/api/state?rater=ann")
    import http.client

    host, port = server.url.split("//")[1].rstrip("/").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=10)
    con.request("GET", "/")
    r = con.getresponse()
    page = r.read().decode()
    con.close()
    csp = r.getheader("Content-Security-Policy")
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "connect-src 'self'" in csp
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    assert "innerHTML" not in page and "http://" not in page and "https://" not in page  # no CDN
    # The page's script and styles are files of this server, pinned by hash, with no CDN either.
    files = assert_page_is_strict(server.url)
    assert set(files) == {"/static/common.js", "/static/common.css", "/static/judge-pair.js", "/static/judge.js",
                          "/static/judge.css"}
    # the fetch wrapper is written once, in the shared file, and the page's script uses it
    assert b"fetch(" in files["/static/common.js"] and b"fetch(" not in files["/static/judge.js"]
    assert b"abcde.api(" in files["/static/judge.js"]


def test_every_error_has_the_one_shape(server):
    """Datasette's test_error_shape: every refusal, whatever its cause, is {"ok": false, "error", "status"}."""
    assert_errors_have_one_shape(server.url, "/api/judgements")
    assert request(server.url, "GET", "/api/state?rater=ann")[0] == 200  # and the server answers on
    assert server.session.store.live() == []


def test_slow_clients_do_not_hold_the_server(sample, tmp_path):
    limits = Limits(header_timeout=6.0, body_timeout=6.0)  # room for a loaded machine; no speed is asserted
    srv = JudgingServer(JudgingSession(fresh_copy(sample, tmp_path)), limits=limits).start()
    try:
        assert_slow_clients_do_not_hold(srv.url, "/api/judgements", limits)
        assert srv.session.store.live() == []
    finally:
        srv.shutdown()


def test_second_server_and_changed_settings_are_refused(server):
    d = server.session.sample_dir
    with pytest.raises(StoreLockedError, match="already being served"):
        serve(d, port=0)
    with pytest.raises(InputError, match="first served with --seed 7; got --seed 8"):
        serve(d, seed=8)


def test_store_refuses_a_redrawn_sample(sample, tmp_path):
    d = fresh_copy(sample, tmp_path)
    JudgementStore(d)
    con = sqlite3.connect(d / "judgements.sqlite")
    con.execute("UPDATE meta SET value = 'other' WHERE key = 'sample_id'")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="belongs to sample 'other'.*drawn again"):
        JudgementStore(d)


@pytest.mark.parametrize("name", ["", " ann", "a" * 65, "x:y", "<b>", None, 3])
def test_rater_names_are_checked(name):
    with pytest.raises(InputError, match="rater name"):
        check_rater(name)


def test_a_stratified_sample_is_served_with_its_own_estimator(tmp_path):
    from abcde.examples import example_paths
    from abcde.judging import JudgingSession
    from abcde.quality import draw_pair_sample, estimate_quality

    p = example_paths("febrl3")
    d = draw_pair_sample(p["base"], p["exp"], tmp_path / "st", items=p["items"], budget=20, seed=2,
                         estimator="stratified")
    s = JudgingSession(d)
    answers = truth(d)
    flip = {"same": "different", "different": "same"}
    k = 0
    while (n := s.state("ann")["next"]) is not None:
        # every third answer the wrong way: judged by the truth, each stratum of this example is
        # constant (SE 0), and the stop rule below needs an interval of some width
        s.submit("ann", n["pair_id"], flip[answers[n["pair_id"]]] if k % 3 == 0 else answers[n["pair_id"]])
        k += 1
    est = s.owner_state()["estimates"]
    s.store.export(tmp_path / "e.csv")
    # (the live view leaves out JaccardDistance's good and bad parts: they read the inputs again)
    assert est == estimate_quality(d, tmp_path / "e.csv", distances=False).to_dict()
    assert est["estimator"] == "stratified" and est["judged_pairs"] == 20
    # The stop rule: a target width of ΔPrecision's 95% interval.
    width = est["delta_precision"]["ci_high"] - est["delta_precision"]["ci_low"]
    assert JudgingSession(d, target_width=width * 1.01).owner_state()["can_stop"] is True
    assert JudgingSession(d, target_width=width * 0.99).owner_state()["can_stop"] is False
    assert JudgingSession(d).owner_state()["can_stop"] is False
    assert "can_stop" not in JudgingSession(d, target_width=width * 1.01).state("ann")  # a rater is not told


def test_live_estimates_copy_no_judgement_to_a_file(sample, tmp_path, monkeypatch):
    """The page's estimates read the store in memory: no judgement is copied to a temporary
    file (a kill between writing and removing it used to leave people's judgements in /tmp)."""
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    import abcde.judging.session as session_module

    seen = []  # what is in the temporary directory while the estimator runs: what a kill would leave

    def estimate(*args, **kwargs):
        seen.extend(scratch.iterdir())
        return estimate_quality(*args, **kwargs)

    monkeypatch.setattr(session_module, "estimate_quality", estimate)
    d = fresh_copy(sample, tmp_path)
    s = JudgingSession(d)
    answers = truth(d)
    for _ in range(6):
        n = s.state("ann")["next"]
        s.submit("ann", n["pair_id"], answers[n["pair_id"]])
    est = s.owner_state()["estimates"]
    assert est["judged_pairs"] == 6 and "unavailable" not in est
    assert seen == [] and list(scratch.iterdir()) == []
    s.store.export(tmp_path / "e.csv")
    assert est == estimate_quality(d, tmp_path / "e.csv", distances=False).to_dict()


def test_sigkill_under_load_loses_no_acknowledged_judgement(sample, tmp_path):
    """Two raters post as fast as they can; the server is killed with SIGKILL in the middle.
    Every judgement answered 201 is in the store, the file is intact, and a restart serves on."""
    import os
    import signal
    import time

    from judging_helpers import start_server, stop

    d = fresh_copy(sample, tmp_path)
    proc, info = start_server(d, tmp_path / "server.log")
    answers = truth(d)
    acked, lock = [], threading.Lock()

    def rater(name):
        k = 0
        while True:
            try:
                code, st = request(info["url"], "GET", f"/api/state?rater={name}")
                if code != 200 or st["next"] is None:
                    return
                pid = st["next"]["pair_id"]
                k += 1
                code, _ = request(info["url"], "POST", "/api/judgements",
                                  {"rater": name, "pair_id": pid, "judgement": answers[pid], "request_id": f"{name}{k}"})
            except (OSError, http.client.HTTPException, json.JSONDecodeError):
                return  # the server is gone (killed mid-response: a cut body is no acknowledgement)
            if code == 201:
                with lock:
                    acked.append((name, pid))

    threads = [threading.Thread(target=rater, args=(n,)) for n in ("ann", "bob")]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acked) < 8 and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=30)
    finally:
        stop(proc)
    assert 8 <= len(acked) < 30
    assert integrity(d / "judgements.sqlite") == "ok"
    stored = {(j.rater, j.pair_id) for j in JudgementStore(d).live()}
    assert set(acked) <= stored  # at most the one request in flight at the kill is stored but unacknowledged
    assert len(stored) - len(acked) <= 2
    proc2, info2 = start_server(d, tmp_path / "server.log")
    try:
        st = request(info2["url"], "GET", "/api/state?rater=ann")[1]
        assert st["judgements"] == len(stored) and st["next"] is not None
    finally:
        stop(proc2)


def test_other_raters_names_are_not_served_unless_asked(sample, tmp_path):
    """A rater sees their own name only; the owner's view names raters "rater 1", "rater 2", …
    (in the order they first judged) unless the server shows raters."""
    d = fresh_copy(sample, tmp_path)
    s = JudgingSession(d, replicate=1.0, seed=3)
    pids = s.pair_ids[:4]
    for who in ("ann", "bob"):
        for pid in pids:
            s.store.record(pid, "same", rater=who)
    st = s.state("ann")
    assert "bob" not in json.dumps(st) and st["rater"] == "ann" and st["rater_judgements"] == 4
    assert "ann" not in json.dumps(s.state(None)) and "bob" not in json.dumps(s.state(None))
    owner = s.owner_state()
    text = json.dumps(owner)
    assert "ann" not in text and "bob" not in text and owner["raters"] == ["rater 1", "rater 2"]
    assert {tuple(c["raters"]) for c in owner["agreement"]["cohen"]} == {("rater 1", "rater 2")}
    assert [(r["rater"], r["judgements"], r["same"]) for r in owner["rater_progress"]] == [("rater 1", 4, 4),
                                                                                          ("rater 2", 4, 4)]
    shown = JudgingSession(d, show_raters=True).owner_state()
    assert shown["raters"] == ["ann", "bob"]
    assert {tuple(c["raters"]) for c in shown["agreement"]["cohen"]} == {("ann", "bob")}


#: What only the owner's view carries: a rater's answers hold none of it (raters are not swayed by numbers).
OWNER_ONLY = {"estimates", "ci_width", "can_stop", "more_pairs", "agreement", "verdict", "needs", "raters",
              "rater_progress", "settings"}
RATER_KEYS = {"ok", "sample_id", "pairs", "budget", "replicated_pairs", "needed_judgements", "judgements",
              "judged_pairs", "all_judged"}


def no_numbers(d: dict) -> None:
    """A rater's answer: progress and their pair only — no estimate, interval, agreement or verdict."""
    assert not OWNER_ONLY & set(d), set(d)
    text = json.dumps(d).lower()
    for word in ("delta_precision", "good_split", "bad_merge", "estimate", "ci_low", "std_err", "kappa", "verdict",
                 "agreement", "stratum", "strata"):
        assert word not in text, word


def test_a_raters_answers_carry_no_estimates_and_the_owners_do(server):
    url = server.url
    st = request(url, "GET", "/api/state?rater=ann")[1]
    assert set(st) == RATER_KEYS | {"rater", "rater_judgements", "can_undo", "next"}
    no_numbers(st)
    no_numbers(request(url, "GET", "/api/state")[1])
    assert set(request(url, "GET", "/api/state")[1]) == RATER_KEYS
    answers = truth(server.session.sample_dir)
    for k in range(6):  # the answers to judging and undoing are a rater's state too
        pid = st["next"]["pair_id"]
        code, st = request(url, "POST", "/api/judgements", {"rater": "ann", "pair_id": pid,
                                                             "judgement": answers[pid], "request_id": f"q{k}"})
        assert code == 201 and st["recorded"]["pair_id"] == pid
        no_numbers({k: v for k, v in st.items() if k != "recorded"})
    code, st = request(url, "POST", "/api/undo", {"rater": "ann"})
    assert code == 200 and "undone" in st
    no_numbers({k: v for k, v in st.items() if k != "undone"})
    # The owner's view: the estimates of 'abcde quality', what ΔPrecision needs, agreement, the verdict.
    code, owner = request(url, "GET", "/api/owner")
    assert code == 200 and OWNER_ONLY <= set(owner) and RATER_KEYS <= set(owner)
    with tempfile.TemporaryDirectory() as tmp:  # an export is never written into the sample directory
        server.session.store.export(Path(tmp) / "e.csv", source="person")
        assert owner["estimates"] == estimate_quality(server.session.sample_dir, Path(tmp) / "e.csv",
                                                      distances=False).to_dict()
    assert owner["judgements"] == 5 and owner["rater_progress"][0]["judgements"] == 5
    v = owner["verdict"]
    assert set(v) >= {"verdict", "sentences", "facts"} and v["sentences"] and v["verdict"] == " ".join(v["sentences"])
    assert owner["needs"]["unit"] == "class"  # this sample is drawn with the paper's estimator
    if owner["estimates"]["delta_precision"]["estimate"] is None:
        assert owner["needs"]["message"].startswith("ΔPrecision needs ")
    else:
        assert owner["needs"]["delta_precision"] == {}
    # The owner's routes answer like the others: the page, GET only, the one error shape.
    code, page = request(url, "GET", "/owner")
    assert code == 200 and "judge-owner.js" in page and "owner" in page
    assert_error(request(url, "POST", "/api/owner", {}), 405, "not allowed")
    assert_error(request(url, "POST", "/owner", {}), 405, "not allowed")
    assert_error(request(url, "GET", "/api/owner", headers={"Host": "evil.example"}), 403, "own address")
    assert_error(request(url, "GET", "/owner/../judgements.sqlite"), 404, "not found")


def test_the_owner_routes_are_guarded_in_one_place(sample, tmp_path, monkeypatch):
    """Every route of the owner's view goes through judging_server.owner_only (where a check of
    the owner, say an invite link's token, will go), and no rater route does."""
    import abcde.web.judging_server as js
    from abcde.web.server import HTTPError

    def refuse(endpoint):
        async def refused(request):
            raise HTTPError(403, "Only the owner may see this.")
        return refused

    monkeypatch.setattr(js, "owner_only", refuse)
    srv = js.serve(fresh_copy(sample, tmp_path)).start()
    try:
        for path in js.OWNER_PATHS:
            assert_error(request(srv.url, "GET", path), 403, "only the owner")
        assert request(srv.url, "GET", "/")[0] == 200
        code, st = request(srv.url, "GET", "/api/state?rater=ann")
        assert code == 200 and st["next"] is not None
        assert request(srv.url, "POST", "/api/judgements", {"rater": "ann", "pair_id": st["next"]["pair_id"],
                                                            "judgement": "same"})[0] == 201
    finally:
        srv.shutdown()
