"""The exploration UI (``abcde explore serve``): a real server process, driven in headless Chromium.

Numbers on the page must equal the Python API's for the same slice and grouping.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import abcde
from abcde import ExplorationSample, InputError
from abcde.core.names import METRIC_LABELS
from abcde.examples import example_paths
from abcde.sampling.filters import structured_filter
from abcde.web.explore_app import ExploreApp, make_server
from abcde.web.server import Limits
from content import assert_shows
from judging_helpers import (assert_error, assert_errors_have_one_shape, assert_host_check, assert_page_is_strict,
                             assert_slow_clients_do_not_hold, page_under_csp)


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "abcde", "explore", "serve", *map(str, args),
                                      "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://([\d.]+):(\d+)/", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"no URL printed: {line!r} {self.proc.stderr.read()}")
        self.host, self.url = m.group(1), m.group(0)

    def get(self, path: str):
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def post(self, path: str, data: bytes):
        req = urllib.request.Request(self.url + path.lstrip("/"), data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def sample_path(tmp_path_factory):
    p = example_paths("febrl3")
    out = tmp_path_factory.mktemp("explore") / "sample.parquet"
    subprocess.run([sys.executable, "-m", "abcde", "explore", "sample", "--base", p["base"], "--exp", p["exp"],
                    "--items", p["items"], "--size", "1500", "--seed", "7", "--out", out], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def server(sample_path):
    s = Server(sample_path)
    yield s
    s.close()


def wait_ready(page, n: int):
    page.wait_for_function(f"(window.__ready || 0) >= {n}", timeout=30000)


DUP = [{"column": "source", "op": "=", "value": "duplicate"}]


def test_filter_and_group_by_in_the_browser_equal_the_api(server, sample_path, page, screenshot):
    assert server.host == "127.0.0.1"
    s = ExplorationSample.read(sample_path)
    page.goto(server.url)
    wait_ready(page, 1)
    # The whole sample first.
    whole = s.estimate()
    shown = float(page.get_attribute('[data-key="jaccard_contribution"] b', "data-value"))
    assert shown == pytest.approx(whole.jaccard_contribution, rel=1e-12)
    assert_shows(page.inner_text('[data-key="jaccard_contribution"] b'), whole.jaccard_contribution)  # as read
    # Filter source = duplicate, group by state.
    page.click("#add-filter")
    page.select_option(".f-col", "source")
    page.select_option(".f-op", "=")
    page.fill(".f-val", "duplicate")
    page.check('input.gb[value="state"]')
    page.click("#run")
    wait_ready(page, 2)
    api = s.group(["state"], where=DUP, top=20)
    rows = page.locator("#groups tr.group")
    assert rows.count() == len(api) > 3
    for i, g in enumerate(api):
        r = rows.nth(i)
        assert r.locator('[data-col="state"]').inner_text() == (g.group["state"] if g.group["state"] is not None
                                                                 else "(null)")
        for key in ("jaccard_contribution", "split_contribution", "merge_contribution"):
            assert float(r.locator(f'[data-col="{key}"]').get_attribute("data-value")) == pytest.approx(
                getattr(g, key), rel=1e-12)
            assert_shows(r.locator(f'[data-col="{key}"]').inner_text(), getattr(g, key), key)
    sl = s.estimate(DUP)
    assert float(page.get_attribute('[data-key="jaccard_contribution"] b', "data-value")) == pytest.approx(
        sl.jaccard_contribution, rel=1e-12)
    assert_shows(page.inner_text('[data-key="jaccard_contribution"] b'), sl.jaccard_contribution)
    # The string filter of the CLI gives the same slice.
    assert s.estimate("source = 'duplicate'").jaccard_contribution == pytest.approx(sl.jaccard_contribution)
    # Clicking a group drills into it: its values become filters.
    top_state = api[0].group["state"]
    rows.first.click()
    wait_ready(page, 3)
    drilled = s.estimate(DUP + [{"column": "state", "op": "=", "value": top_state}])
    assert float(page.get_attribute('[data-key="jaccard_contribution"] b', "data-value")) == pytest.approx(
        drilled.jaccard_contribution, rel=1e-12)
    assert page.locator("#examples tr.ex").count() == min(20, drilled.sampled_items)
    # From an example item to its Base and Exp clusters (whole clusters, from the recorded inputs).
    page.locator("#examples tr.ex").first.click()
    page.wait_for_selector("#detail [data-side=exp] table")
    item_id = page.inner_text("#detail-id")
    p = example_paths("febrl3")
    res = abcde.impact(p["base"], p["exp"], items=p["items"])
    (me,) = res.lookup([item_id])
    base_sizes = {r["cluster_id"]: r["size"] for r in res.per_cluster("base").to_pylist()}
    assert f"{base_sizes[me['base_cluster']]} items" in page.inner_text("#detail [data-side=base]")
    assert page.locator("#detail [data-side=base] tr.ex").count() == base_sizes[me["base_cluster"]]
    assert page.errors == [] and page.blocked == []
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "explore.png", full_page=True)


def test_item_lookup_in_the_browser(server, page):
    page.goto(server.url)
    wait_ready(page, 1)
    page.fill("#lookup", "rec-0-org")
    page.press("#lookup", "Enter")
    page.wait_for_selector("#detail-id")
    assert page.inner_text("#detail-id") == "rec-0-org"
    detail = page.inner_text("#detail")
    for key in ("split_rate", "merge_rate", "jaccard_distance"):  # labels from abcde.core.names
        assert f"· {METRIC_LABELS[key]} " in detail
    assert page.inner_text("#metric option[value='split']") == METRIC_LABELS["split_rate"]
    page.fill("#lookup", "no-such-item")
    page.press("#lookup", "Enter")
    page.wait_for_selector("#detail .err")
    assert "No item no-such-item" in page.inner_text("#detail")


def test_the_server_rejects_bad_requests(server):
    status, body = server.post("/api/query", json.dumps({"filters": [{"column": "nope", "op": "=",
                                                                      "value": 1}]}).encode())
    assert status == 400 and "unknown column 'nope'" in body["error"]
    assert_error((status, body), 400, "unknown column 'nope'")
    status, body = server.post("/api/query", json.dumps({"filters": [{"column": "source", "op": "; DROP",
                                                                      "value": 1}]}).encode())
    assert status == 400 and "unknown operator" in body["error"]
    assert_error((status, body), 400, "unknown operator")
    status, body = server.post("/api/query", json.dumps({"filters": [{"column": "weight", "op": ">",
                                                                      "value": "heavy"}]}).encode())
    assert status == 400 and "not a value of column 'weight'" in body["error"]
    assert_error((status, body), 400, "not a value of column 'weight'")
    status, body = server.post("/api/query", b"not json")
    assert status == 400
    assert_error((status, body), 400, "not valid JSON")
    status, body = server.post("/api/query", json.dumps({"group_by": ["nope"]}).encode())
    assert status == 400 and "Unknown group-by column" in body["error"]
    assert_error((status, body), 400, "Unknown group-by column")
    for path in ("/../../etc/passwd", "/static/..%2f..%2fpyproject.toml", "/api/../../etc/passwd", "/sample.parquet"):
        assert server.get(path)[0] == 404, path
        assert_error(server.get(path), 404, "not found")
    status, body = server.get("/api/cluster?side=middle&id=1")
    assert status == 400
    assert_error((status, body), 400, "side must be 'base' or 'exp'")
    # The server still answers after all that.
    assert server.get("/api/meta")[0] == 200


def test_every_error_has_the_one_shape(server):
    """Datasette's test_error_shape: the same refusals as the judging app, in the same shape."""
    assert_errors_have_one_shape(server.url, "/api/query")
    assert server.get("/api/meta")[0] == 200


def test_the_page_is_strict_and_shares_its_helpers(server):
    files = assert_page_is_strict(server.url)
    assert set(files) == {"/static/common.js", "/static/common.css", "/static/explore.js", "/static/explore.css"}
    # the fetch wrapper is written once, in the shared file, and the page's script uses it
    assert b"fetch(" in files["/static/common.js"] and b"fetch(" not in files["/static/explore.js"]
    assert b"abcde.api(" in files["/static/explore.js"]


def test_the_page_works_under_its_csp(server, browser):
    with page_under_csp(browser) as page:
        page.goto(server.url)
        page.wait_for_selector('[data-key="jaccard_contribution"] b')
        page.check('input.gb[value="state"]')
        page.click("#run")
        page.wait_for_selector("#groups tr.group .bar", state="attached")
        # the bars' widths are set through the CSSOM, which style-src 'self' allows (a style attribute is refused)
        assert page.problems == []
        assert page.locator("#groups tr.group .bar").first.bounding_box()["width"] >= 1
        page.locator("#examples tr.ex").first.click()
        page.wait_for_selector("#detail [data-side=exp] table")
        assert page.problems == []


def test_slow_clients_do_not_hold_the_server(sample_path):
    limits = Limits(header_timeout=6.0, body_timeout=6.0)  # room for a loaded machine; no speed is asserted
    srv = make_server(ExploreApp(sample_path), limits=limits).start()
    try:
        assert_slow_clients_do_not_hold(srv.url, "/api/query", limits)
    finally:
        srv.shutdown()
    srv.server_close()  # idempotent, as the CLI calls it after serve_forever


def test_hostile_attributes_stay_inert(tmp_path, write, page):
    n = 8
    hostile = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=1</script>"
    base = write("base.parquet", item_id=list(range(n)), cluster_id=[0] * n)
    exp = write("exp.parquet", item_id=list(range(n)), cluster_id=[0, 0, 0, 0, 1, 1, 1, 1])
    items = write("items.parquet", item_id=list(range(n)), tag=[hostile] * n)
    out = tmp_path / "s.parquet"
    abcde.sample_items(base, exp, items=items, size=50, seed=1).write(out)
    s = Server(out)
    try:
        page.goto(s.url)
        wait_ready(page, 1)
        page.check('input.gb[value="tag"]')
        page.click("#run")
        wait_ready(page, 2)
        page.locator("#examples tr.ex").first.click()
        page.wait_for_selector("#detail [data-side=exp] table")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main img").count() == 0
        assert hostile in page.inner_text("#groups")
    finally:
        s.close()


def test_structured_filter_matches_the_text_filter(sample_path):
    s = ExplorationSample.read(sample_path)
    cases = [
        ([{"column": "state", "op": "in", "value": ["nsw", "vic"]}], "state IN ('nsw', 'vic')"),
        ([{"column": "jaccard_distance", "op": ">=", "value": "0.5"}, {"column": "source", "op": "!=",
                                                                        "value": "original"}],
         "jaccard_distance >= 0.5 AND source != 'original'"),
        ([{"column": "state", "op": "is null"}], "state IS NULL"),
        ([{"column": "state", "op": "not in", "value": ["nsw"]}], "NOT state IN ('nsw')"),
    ]
    for structured, text in cases:
        a, b = s.estimate(structured), s.estimate(text)
        assert (a.sampled_items, a.jaccard_contribution) == (b.sampled_items, pytest.approx(b.jaccard_contribution))
    t = s.expr
    with pytest.raises(InputError, match="needs a non-empty list"):
        structured_filter([{"column": "state", "op": "in", "value": "nsw"}], t)
    with pytest.raises(InputError, match="use 'is null'"):
        structured_filter([{"column": "state", "op": "=", "value": None}], t)
    with pytest.raises(InputError, match="non-empty list"):
        structured_filter([], t)


def test_foreign_host_and_odd_bodies(server):
    req = urllib.request.Request(server.url + "api/meta", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 403
    assert_error((403, json.loads(e.value.read())), 403, "own address")
    assert_host_check(server.url, "/api/meta")
    for body in ({"top": 1e400}, {"group_by": "state"}, {"n": "many"}):
        path = "/api/examples" if "n" in body else "/api/query"
        status, reply = server.post(path, json.dumps(body).encode())
        assert status == 400 and reply["error"], body
        assert_error((status, reply), 400)
    status, reply = server.post("/api/query", b"[" * 30000 + b"]" * 30000)
    assert status == 400
    assert_error((status, reply), 400, "not valid JSON")
    assert server.get("/api/meta")[0] == 200


def test_structured_filter_keeps_big_integers_exact(tmp_path):
    import ibis

    t = ibis.memtable({"x": [2**53, 2**53 + 1]})
    con = ibis.duckdb.connect()
    for v in (2**53 + 1, str(2**53 + 1)):
        assert con.execute(t.filter(structured_filter([{"column": "x", "op": "=", "value": v}], t)).x).tolist() == [
            2**53 + 1]
    with pytest.raises(InputError, match="not a value of column 'x'"):
        structured_filter([{"column": "x", "op": "=", "value": 2**70}], t)


def test_the_sample_remembers_its_column_settings(tmp_path, write):
    base = write("b.parquet", id=[1, 2, 3, 4], c=["a", "a", "b", "b"])
    exp = write("e.parquet", id=[1, 2, 3, 4], c=["a", "b", "b", "b"])
    items = write("i.parquet", id=[1, 2, 3, 4], w2=[1.0, 7.0, 1.0, 1.0])
    s = abcde.sample_items(base, exp, items=items, item_id="id", cluster_id="c", weight="w2", size=20, seed=1)
    s.write(tmp_path / "s.parquet")
    app = ExploreApp(tmp_path / "s.parquet")
    got = app.item(2)
    assert got["source"] == "population" and got["item"]["weight"] == 7.0
    assert got["item"]["jaccard_distance"] == pytest.approx(got["sampled"]["jaccard_distance"])
    assert app.whole_clusters_from == "population"
    base.unlink()  # the recorded inputs are gone: whole clusters come from the sample
    app = ExploreApp(tmp_path / "s.parquet")
    assert app.whole_clusters_from == "sample" and app._inputs["base"] is None
    assert app.item(2)["source"] == "sample"


def test_meta_serves_no_paths_and_text_filters_are_refused(server, sample_path):
    code, meta = server.get("/api/meta")
    assert code == 200
    text = json.dumps(meta)
    assert str(sample_path.parent) not in text and "/" not in json.dumps(meta["inputs"])
    assert meta["inputs"] == {"base": "base.parquet", "exp": "exp.parquet", "items": "items.parquet"}
    assert meta["whole_clusters_from"] == "population"
    # Only structured filters from the browser: no client text is parsed as a query.
    for path, body in (("/api/query", {"filters": "source = 'duplicate'"}),
                       ("/api/examples", {"filters": "1=1; DROP TABLE x"})):
        code, err = server.post(path, json.dumps(body).encode())
        assert code == 400 and err["ok"] is False and "list of {column, op, value} conditions" in err["error"]
    code, ok = server.post("/api/query", json.dumps({"filters": DUP}).encode())
    assert code == 200 and ok["slice"]["sampled_items"] > 0


def test_explore_serve_takes_the_engine_options(sample_path):
    """The warm-up (the population's per-item table) runs on an engine with the given limits."""
    app = ExploreApp(sample_path, engine=abcde.connect(memory_limit="512MB", threads=1))
    assert app._full_items()[0].settings["memory_limit"] == "512MB"
    s = Server(sample_path, "--memory-limit", "512MB", "--threads", "1")
    try:
        code, item = s.get("/api/item?id=rec-0-org")
        assert code == 200 and item["source"] == "population" and item["found"]
    finally:
        s.close()


def test_explore_serve_takes_a_query_timeout(sample_path):
    """--query-timeout reaches the app (a positive number of seconds); the sample's queries run on
    sessions of a DuckDB database with the engine's memory limit and threads."""
    from abcde.web import explore_app

    app = ExploreApp(sample_path, engine=abcde.connect(memory_limit="512MB", threads=1), query_timeout=7)
    assert app.query_timeout == 7 and app._queries.settings["memory_limit"] == "512MB"
    session = app._queries.session()
    got = session.con.raw_sql("SELECT current_setting('threads'), current_setting('enable_progress_bar')").fetchall()
    assert got == [(1, False)]
    assert ExploreApp(sample_path).query_timeout == explore_app.QUERY_TIMEOUT == 30
    s = Server(sample_path, "--query-timeout", "2.5")
    try:
        assert s.post("/api/query", json.dumps({"group_by": ["state"]}).encode())[0] == 200
    finally:
        s.close()
    r = subprocess.run([sys.executable, "-m", "abcde", "explore", "serve", str(sample_path), "--query-timeout", "0",
                        "--port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--query-timeout" in r.stderr
