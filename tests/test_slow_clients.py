"""Both servers hold under hostile clients (issue 13, item 6): 200 slow and half-open clients
hang on while normal requests answer within 2 s and are closed after the timeouts; connections
beyond the cap are refused at once; and in the exploration app a heavy query neither stalls
light ones nor runs past its deadline."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import abcde
from abcde.examples import example_paths
from abcde.judging import JudgingSession
from abcde.sampling.explore import SAMPLE_FORMAT, SAMPLE_VERSION, ExplorationSample
from abcde.web.explore_app import ExploreApp, make_server
from abcde.web.judging_server import JudgingServer
from abcde.web.transport import Limits
from judging_helpers import (assert_connections_beyond_the_cap_are_refused, assert_error,
                             assert_hundreds_of_slow_clients_do_not_hold, fresh_copy, make_sample, request, timed)

# Short timeouts: the slow clients hang on for 10 s, long enough to open them all and make the normal
# requests even on a loaded 2-core machine (the tests assert order and outcome, never a speed).
SHORT = Limits(header_timeout=10.0, body_timeout=10.0)


@pytest.fixture(scope="module")
def judging_sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("slow-judge"))


@pytest.fixture(scope="module")
def explore_sample(tmp_path_factory):
    p = example_paths("febrl3")
    out = tmp_path_factory.mktemp("slow-explore") / "sample.parquet"
    abcde.sample_items(p["base"], p["exp"], items=p["items"], size=500, seed=3).write(out)
    return out


def judging_server(judging_sample, tmp_path, limits):
    return JudgingServer(JudgingSession(fresh_copy(judging_sample, tmp_path)), limits=limits).start()


def test_the_judging_server_holds_under_200_slow_clients(judging_sample, tmp_path):
    srv = judging_server(judging_sample, tmp_path, SHORT)
    try:
        assert srv.server.max_connections == 1000
        pid = request(srv.url, "GET", "/api/state?rater=ann")[1]["next"]["pair_id"]
        post = ("/api/judgements", {"rater": "ann", "pair_id": pid, "judgement": "same", "request_id": "r-1"}, 201)
        assert_hundreds_of_slow_clients_do_not_hold(srv.url, "/api/state?rater=ann", post, SHORT)
        assert [(j.rater, j.pair_id) for j in srv.session.store.live()] == [("ann", pid)]
    finally:
        srv.shutdown()


def test_the_exploration_server_holds_under_200_slow_clients(explore_sample):
    srv = make_server(ExploreApp(explore_sample), limits=SHORT).start()
    try:
        post = ("/api/query", {"filters": [{"column": "source", "op": "=", "value": "duplicate"}],
                               "group_by": ["state"]}, 200)
        assert_hundreds_of_slow_clients_do_not_hold(srv.url, "/api/meta", post, SHORT)
    finally:
        srv.shutdown()


def test_the_judging_server_refuses_connections_beyond_its_cap(judging_sample, tmp_path):
    srv = judging_server(judging_sample, tmp_path, Limits(max_connections=20))
    try:
        assert_connections_beyond_the_cap_are_refused(srv.url, "/api/state?rater=ann", 20)
    finally:
        srv.shutdown()


def test_the_exploration_server_refuses_connections_beyond_its_cap(explore_sample):
    srv = make_server(ExploreApp(explore_sample), limits=Limits(max_connections=20)).start()
    try:
        assert_connections_beyond_the_cap_are_refused(srv.url, "/api/meta", 20)
    finally:
        srv.shutdown()


def test_the_connection_cap_fits_the_file_limit(monkeypatch):
    resource = pytest.importorskip("resource")
    from abcde.web import transport as server

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert server.connection_cap(1000) == 1000  # the soft limit raised as needed (it is now at least 2256)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= min(2 * 1000 + server.FD_RESERVE, hard)
    # a hard limit too low for the cap: the cap is lowered to fit, with a warning
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 1024))
    monkeypatch.setattr(resource, "setrlimit", lambda *_: (_ for _ in ()).throw(ValueError("not permitted")))
    assert server.connection_cap(1000) == (1024 - server.FD_RESERVE) // 2
    with pytest.raises(ValueError, match="at least 1"):
        server.connection_cap(0)


# --------------------------------------------------------------------------- heavy queries
def big_sample(n: int) -> ExplorationSample:
    """A synthetic exploration sample of ``n`` items with high-cardinality columns (grouping by
    them is the heavy query: a hash aggregate of ``n`` groups)."""
    rng = np.random.default_rng(0)
    jd = rng.uniform(0.05, 1.0, n)
    draws = rng.integers(1, 3, n)
    t = pa.table({"item_id": np.arange(n), "base_cluster": rng.integers(0, n // 10, n),
                  "exp_cluster": rng.integers(0, n // 10, n), "weight": np.ones(n), "split_rate": jd / 2,
                  "merge_rate": jd / 2, "jaccard_distance": jd, "draw_count": draws, "importance_weight": np.ones(n),
                  "source": rng.choice(["a", "b", "c"], n), "x": rng.integers(0, n, n)})
    meta = {"format": SAMPLE_FORMAT, "version": SAMPLE_VERSION, "jaccard_distance_T": 0.3, "seed": 1, "size": n,
            "total_draws": int(draws.sum()), "unique_items": n}
    return ExplorationSample(t, meta)


def test_a_heavy_query_is_cancelled_and_does_not_stall_light_ones():
    """10M items, one DuckDB thread (so the heavy query's time does not shrink with the machine's
    cores): grouping by four high-cardinality columns takes ~5 s here, well past the 3 s deadline,
    and longer on a loaded machine. Meanwhile /api/meta and a light /api/query, sent while the heavy
    one runs, are answered; the heavy one gets a 504 (never before its deadline), and the server
    answers on. What happened is checked, never which ended first: on a loaded machine a light query
    may itself take longer than the heavy one's deadline (issue 39, part 10); the times are printed."""
    timeout = 3.0
    app = ExploreApp(big_sample(10_000_000), engine=abcde.connect(threads=1), query_timeout=timeout)
    srv = make_server(app).start()
    heavy: dict = {}

    def run_heavy():
        heavy["started"] = time.monotonic()
        (heavy["code"], heavy["body"]), heavy["seconds"] = timed(
            request, srv.url, "POST", "/api/query", {"group_by": ["item_id", "x", "base_cluster", "exp_cluster"]})
        heavy["ended"] = time.monotonic()

    try:
        light = {"filters": [{"column": "x", "op": "<", "value": 1000}], "group_by": ["source"]}
        assert request(srv.url, "POST", "/api/query", light)[0] == 200  # a session made, the sample registered
        th = threading.Thread(target=run_heavy)
        th.start()
        time.sleep(0.2)
        (code, meta), meta_s = timed(request, srv.url, "GET", "/api/meta")
        assert code == 200 and meta["sample"]["size"] == 10_000_000
        (code, body), query_s = timed(request, srv.url, "POST", "/api/query", light)
        lights_ended = time.monotonic()
        assert code == 200 and body["slice"]["sampled_items"] > 0, body
        th.join(120)
        assert not th.is_alive()
        print(f"\nthe light queries {'ended before' if lights_ended < heavy['ended'] else 'ended after'} the heavy one")
        assert_error((heavy["code"], heavy["body"]), 504, f"took longer than {timeout:g} s and was cancelled")
        assert "narrow the filter or group by fewer columns" in heavy["body"]["error"]
        assert heavy["seconds"] >= timeout, heavy["seconds"]
        # the server, and the same light query, work on afterwards
        (code, again), again_s = timed(request, srv.url, "POST", "/api/query", light)
        assert code == 200 and again["slice"] == body["slice"]
        print(f"\nmeta {meta_s:.3f} s and light query {query_s:.3f} s during the heavy one, cancelled after "
              f"{heavy['seconds']:.3f} s; the light query after it {again_s:.3f} s")
    finally:
        srv.shutdown()


def test_a_grouping_with_too_many_groups_is_refused_not_ranked():
    app = ExploreApp(big_sample(200_000), query_timeout=30)
    with pytest.raises(abcde.InputError, match="200,000 groups, more than the 100,000"):
        app.query(None, ["item_id"])
    assert app.query(None, ["source"])["groups"]


def test_query_timeout_is_checked():
    with pytest.raises(abcde.InputError, match="query_timeout must be a positive"):
        ExploreApp(big_sample(10), query_timeout=0)
