"""The exploration UI (``abcde explore serve``): a real server process, driven in headless Chromium.

Numbers on the page must equal the Python API's for the same slice and grouping.
"""

from __future__ import annotations

import collections
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
from abcde.web.transport import Limits
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
        # sorting, the address and a CSV download (a blob: link) work under the policy too
        page.locator('#groups thead th[data-col="state"] button').click()
        page.wait_for_selector('#groups thead th[data-col="state"][aria-sort="ascending"]')
        assert "_sort=state" in page.url and "_group=state" in page.url and "_item=" in page.url
        name, rows = read_download(page, "#groups-tools button.csv")
        assert name == "abcde-groups-state.csv" and len(rows) > 3
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
    import pyarrow as pa

    t = ibis.memtable(pa.table({"x": [2**53, 2**53 + 1]}))
    con = ibis.duckdb.connect()
    for v in (2**53 + 1, str(2**53 + 1)):
        assert con.to_pyarrow(t.filter(structured_filter([{"column": "x", "op": "=", "value": v}], t)).x).to_pylist() == [
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


# ----------------------------------------------------------------------------- pages that show everything (issue 27)
ATTRIBUTES = ("entity_id", "source", "given_name", "surname", "date_of_birth", "postcode", "state", "suburb")
TILE_NAMES = tuple(METRIC_LABELS[m] for m in ("split_rate", "merge_rate", "jaccard_distance"))


def headers(page, table: str) -> list[str]:
    return [h.strip() for h in page.locator(f"{table} thead th").all_inner_texts()]


def column(page, table: str, col: str) -> list[str]:
    return page.locator(f'{table} tbody tr [data-col="{col}"]').all_inner_texts()


def address(page) -> dict[str, list[str]]:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(page.url).query)


def detail_in_view(page) -> None:
    """The item's section is where the reader looks: its top in the upper half of the window, or
    in the window with the page scrolled to its end (it can go no higher)."""
    page.wait_for_function("""() => { const r = document.getElementById('detail-section').getBoundingClientRect();
      const end = scrollY + innerHeight >= document.documentElement.scrollHeight - 1;
      return r.top >= -1 && (r.top < innerHeight / 2 || (end && r.top < innerHeight - 200)); }""", timeout=30000)


def test_meta_counts_each_columns_values_and_names_the_columns(sample_path):
    from abcde.util.files import FORMULA_STARTS
    from abcde.web import explore_app

    s = ExplorationSample.read(sample_path)
    meta = ExploreApp(sample_path).meta()
    t = s.table
    assert meta["rows"] == t.num_rows and meta["low_count"] == explore_app.LOW_COUNT
    assert meta["csv_formula_starts"] == list(FORMULA_STARTS)
    cols = {c["name"]: c for c in meta["columns"]}
    assert list(cols) == t.column_names  # every column, not only the attributes
    for name, c in cols.items():
        values = collections.Counter(t.column(name).to_pylist())  # null counts as a value: a group of its own
        assert c["distinct"] == len(values), name
        small = sum(n for n in values.values() if n < explore_app.LOW_COUNT)
        assert c["low_count_share"] == pytest.approx(small / t.num_rows), name
        assert c["id_like"] == (small > explore_app.ID_LIKE_SHARE * t.num_rows), name
    assert cols["item_id"]["id_like"] and not cols["state"]["id_like"] and not cols["source"]["id_like"]
    assert cols["given_name"]["id_like"] and cols["entity_id"]["id_like"]  # a few records per person
    assert cols["state"]["distinct"] > 8  # the example's misspelt states
    assert {cols[m]["label"] for m in ("split_rate", "merge_rate", "jaccard_distance")} == set(TILE_NAMES)
    assert cols["base_cluster"]["label"] == "Base cluster" and cols["suburb"]["label"] == "suburb"


def test_every_attribute_is_shown_and_headers_use_the_tiles_names(server, sample_path, page):
    """Examples and clusters show every attribute (the table scrolls sideways within its section at
    800 px, the item's column stays in view), headed by the metric names of the tiles."""
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(server.url + "?_group=state")
    wait_ready(page, 1)
    s = ExplorationSample.read(sample_path)
    ex = headers(page, "#examples")
    assert ex[:6] == ["item", "Base cluster", "Exp cluster", *TILE_NAMES]
    assert ex[6:] == s.attributes and set(ATTRIBUTES) <= set(ex)
    gh = headers(page, "#groups")
    assert [f"{m} contribution" for m in TILE_NAMES] == gh[3:6] and gh[-1] == f"share of the overall {TILE_NAMES[2]}"
    assert not any("_" in h for h in ex[:6] + gh)  # no snake_case header
    # the values are the sample's, for every attribute
    rows = {r["item_id"]: r for r in s.table.to_pylist()}
    first = page.locator("#examples tbody tr").first
    me = rows[first.locator('[data-col="item_id"]').inner_text()]
    for a in s.attributes:
        want = me[a] if me[a] is not None else "(null)"
        assert first.locator(f'[data-col="{a}"]').inner_text() == str(want), a
    # nothing overflows its section: the wide table scrolls inside its own scroller
    assert page.evaluate(OVERFLOWING) == []
    scroller = page.locator("#examples").locator("xpath=..")
    assert page.evaluate("e => e.scrollWidth > e.clientWidth", scroller.element_handle())
    assert "scroll sideways" in page.inner_text("#examples-tools")
    page.evaluate("e => { e.scrollLeft = e.scrollWidth; }", scroller.element_handle())
    box = scroller.bounding_box()
    suburb = page.locator('#examples thead th[data-col="suburb"]').bounding_box()
    item = page.locator('#examples tbody tr [data-col="item_id"]').first.bounding_box()
    assert box["x"] <= suburb["x"] and suburb["x"] + suburb["width"] <= box["x"] + box["width"] + 1
    assert abs(item["x"] - box["x"]) <= 1  # the item's column stays in view
    # an item's clusters: every attribute, values that differ from the item's marked
    first.locator('[data-col="item_id"]').click()
    page.wait_for_selector("#detail [data-side=exp] table")
    for side in ("base", "exp"):
        h = headers(page, f"#detail [data-side={side}] table")
        assert h[2:] == s.attributes, side
    assert page.locator("#detail tr.me").count() == 2  # the item itself, in both its clusters
    assert page.evaluate(OVERFLOWING) == []
    assert page.errors == []


from test_layout import OVERFLOWING  # noqa: E402  (cards wider than themselves)


@pytest.mark.parametrize("width", (800, 1400))
def test_an_item_opened_or_looked_up_is_brought_into_view(server, page, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(server.url)
    wait_ready(page, 1)
    # looked up from the controls at the top of the page
    page.fill("#lookup", "rec-0-org")
    page.press("#lookup", "Enter")
    page.wait_for_selector("#detail-id")
    detail_in_view(page)
    # opened from the first example (the item's section lies below the twenty examples)
    page.evaluate("window.scrollTo(0, 0)")
    row = page.locator("#examples tbody tr.ex").first
    item_id = row.locator('[data-col="item_id"]').inner_text()
    row.scroll_into_view_if_needed()
    before = page.evaluate("document.getElementById('detail-section').getBoundingClientRect().top")
    assert before > 450  # below where the reader looks, before
    row.click()
    page.wait_for_function(f"(document.getElementById('detail-id') || {{}}).textContent === {json.dumps(item_id)}")
    detail_in_view(page)
    assert page.errors == []


def test_the_address_keeps_the_slice_for_a_link_a_reload_and_back(server, sample_path, page, browser):
    s = ExplorationSample.read(sample_path)
    page.goto(server.url)
    wait_ready(page, 1)
    page.click("#add-filter")
    page.select_option(".f-col", "source")
    page.fill(".f-val", "duplicate")
    page.check('input.gb[value="state"]')
    page.select_option("#metric", "split")
    page.click("#run")
    wait_ready(page, 2)
    assert address(page) == {"source": ["duplicate"], "_group": ["state"], "_rank": ["split"]}
    api = s.group(["state"], where=DUP, metric="split", top=20)

    def shows_the_slice(pg):
        assert pg.input_value(".f-col") == "source" and pg.input_value(".f-val") == "duplicate"
        assert pg.is_checked('input.gb[value="state"]') and pg.input_value("#metric") == "split"
        assert column(pg, "#groups", "state") == [g.group["state"] or "(null)" for g in api]
        got = [float(v) for v in pg.locator('#groups tbody [data-col="split_contribution"]').evaluate_all(
            "tds => tds.map(td => td.dataset.value)")]
        assert got == pytest.approx([g.split_contribution for g in api], rel=1e-12)

    shows_the_slice(page)
    link = page.url
    page.reload()
    wait_ready(page, 1)
    shows_the_slice(page)
    # the link, opened elsewhere
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # (for wait_for_function)
    other = ctx.new_page()
    try:
        other.goto(link)
        other.wait_for_function("(window.__ready || 0) >= 1", timeout=30000)
        shows_the_slice(other)
    finally:
        ctx.close()
    # a click on a group drills in (a new entry); Back returns to the slice, Forward to the group
    top_state = api[0].group["state"]
    page.locator("#groups tbody tr.group").first.click()
    wait_ready(page, 2)
    assert address(page)["state"] == [top_state]
    drilled = s.estimate(DUP + [{"column": "state", "op": "=", "value": top_state}])
    value = lambda: float(page.get_attribute('[data-key="jaccard_contribution"] b', "data-value"))  # noqa: E731
    assert value() == pytest.approx(drilled.jaccard_contribution, rel=1e-12)
    # an item opened is in the address too
    page.locator("#examples tbody tr.ex").first.click()
    page.wait_for_selector("#detail-id")
    item_id = page.inner_text("#detail-id")
    assert address(page)["_item"] == [item_id]
    page.go_back()
    page.wait_for_function("!document.getElementById('detail-id')")
    assert "_item" not in address(page) and value() == pytest.approx(drilled.jaccard_contribution, rel=1e-12)
    page.go_back()
    wait_ready(page, 3)
    assert "state" not in address(page) and page.locator("#filters .row").count() == 1
    shows_the_slice(page)
    page.go_forward()
    wait_ready(page, 4)
    assert value() == pytest.approx(drilled.jaccard_contribution, rel=1e-12)
    assert page.locator("#filters .row").count() == 2
    page.go_forward()
    page.wait_for_function(f"(document.getElementById('detail-id') || {{}}).textContent === {json.dumps(item_id)}")
    detail_in_view(page)
    assert page.errors == []


def test_a_hand_written_address_is_read_as_datasette_reads_one(server, sample_path, page):
    s = ExplorationSample.read(sample_path)
    page.goto(server.url + "?jaccard_distance__gte=0.5&state__in=nsw,vic&postcode__notnull=1&_group=source"
                           "&_rank=merge&_top=5")
    wait_ready(page, 1)
    where = [{"column": "jaccard_distance", "op": ">=", "value": "0.5"},
             {"column": "state", "op": "in", "value": ["nsw", "vic"]},
             {"column": "postcode", "op": "is not null", "value": ""}]
    want = s.estimate(where)
    assert float(page.get_attribute('[data-key="jaccard_contribution"] b', "data-value")) == pytest.approx(
        want.jaccard_contribution, rel=1e-12)
    assert page.input_value("#metric") == "merge" and page.input_value("#top") == "5"
    assert column(page, "#groups", "source") == [g.group["source"] for g in s.group(["source"], where=where,
                                                                                  metric="merge", top=5)]
    assert page.locator("#filters .row").count() == 3
    # a column the sample lacks: the server's message, the filter kept for the reader to mend
    page.goto(server.url + "?nope=1")
    page.wait_for_function("document.getElementById('error').textContent.length > 0")
    assert "unknown column 'nope'" in page.inner_text("#error")
    assert "nope (not a column)" in page.inner_text("#filters")
    assert page.errors == []


def test_tables_sort_on_a_header_click_and_keep_the_order_in_the_address(server, page):
    page.goto(server.url + "?_group=state")
    wait_ready(page, 1)
    ranked = column(page, "#groups", "state")
    head = lambda col: page.locator(f'#groups thead th[data-col="{col}"]')  # noqa: E731
    head("state").locator("button").click()
    states = column(page, "#groups", "state")
    named = [v for v in states if v != "(null)"]
    assert named == sorted(named) and head("state").get_attribute("aria-sort") == "ascending"
    head("state").locator("button").click()
    assert [v for v in column(page, "#groups", "state") if v != "(null)"] == sorted(named, reverse=True)
    assert address(page)["_sort_desc"] == ["state"]
    head("state").locator("button").click()  # a third click: the ranking again
    assert column(page, "#groups", "state") == ranked and "_sort" not in address(page)
    # numbers: largest first, then smallest first; kept over a reload
    head("sampled_items").locator("button").click()
    counts = [int(v.replace(",", "")) for v in column(page, "#groups", "sampled_items")]
    assert counts == sorted(counts, reverse=True) and address(page)["_sort_desc"] == ["sampled_items"]
    page.reload()
    wait_ready(page, 1)
    assert [int(v.replace(",", "")) for v in column(page, "#groups", "sampled_items")] == counts
    assert "sampled items (largest first)" in page.inner_text("#groups-tools")
    # the examples sort too, by any attribute
    page.locator('#examples thead th[data-col="suburb"] button').click()
    suburbs = [v for v in column(page, "#examples", "suburb") if v != "(null)"]
    assert suburbs == sorted(suburbs, key=str.casefold) and address(page)["_ex_sort"] == ["suburb"]
    assert page.errors == []


def read_download(page, selector: str) -> tuple[str, list[list[str]]]:
    import csv
    import io

    with page.expect_download() as d:
        page.click(selector)
    download = d.value
    with open(download.path(), newline="", encoding="utf-8") as f:
        body = f.read()
    return download.suggested_filename, list(csv.reader(io.StringIO(body)))


def test_csv_export_is_what_the_table_shows(server, sample_path, page):
    s = ExplorationSample.read(sample_path)
    page.goto(server.url + "?source=duplicate&_group=state&_sort=state")
    wait_ready(page, 1)
    name, rows = read_download(page, "#groups-tools button.csv")
    assert name == "abcde-groups-state.csv"
    assert rows[0] == headers(page, "#groups")[:7] + ["low count", headers(page, "#groups")[7]]
    assert [r[0] for r in rows[1:]] == [v if v != "(null)" else "" for v in column(page, "#groups", "state")]
    api = {g.group["state"]: g for g in s.group(["state"], where=DUP, top=20)}
    for r in rows[1:]:
        g = api[r[0] or None]
        assert int(r[1]) == g.sampled_items
        assert float(r[5]) == pytest.approx(g.jaccard_contribution, rel=1e-12)  # unrounded
        assert float(r[6]) == pytest.approx(g.std_err["jaccard_contribution"], rel=1e-12)
        assert r[7] == ("yes" if g.sampled_items < 5 else "no")
    # the examples: every attribute, in the order shown
    page.locator('#examples thead th[data-col="date_of_birth"] button').click()
    name, rows = read_download(page, "#examples-tools button.csv")
    assert name == "abcde-examples.csv"
    assert rows[0] == headers(page, "#examples") and set(ATTRIBUTES) <= set(rows[0])
    assert [r[0] for r in rows[1:]] == column(page, "#examples", "item_id")
    # a cluster's members
    page.locator("#examples tbody tr.ex").first.click()
    page.wait_for_selector("#detail [data-side=base] table")
    name, rows = read_download(page, "#detail [data-side=base] button.csv")
    assert name.startswith("abcde-base-cluster-") and rows[0][:3] == ["item", "Exp cluster", "relation"]
    assert len(rows) - 1 == page.locator("#detail [data-side=base] tbody tr").count()
    assert page.errors == []


def test_csv_export_neutralises_formulas_as_tasks_csv_does(tmp_path, write, page):
    """Text a spreadsheet would run as a formula gets a leading ' (neutralise_formulas, the rule of
    tasks.csv); numbers, even negative, stay numbers; commas and quotes are quoted."""
    from abcde.util.files import neutralise_formulas
    import pyarrow as pa

    tags = ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tx", "plain, \"quoted\"", "-", "ok"]
    n = len(tags)
    base = write("base.parquet", item_id=list(range(n)), cluster_id=[0] * n)
    exp = write("exp.parquet", item_id=list(range(n)), cluster_id=[k % 2 for k in range(n)])
    items = write("items.parquet", item_id=list(range(n)), tag=tags, score=[-1.5 * k for k in range(n)])
    out = tmp_path / "s.parquet"
    abcde.sample_items(base, exp, items=items, size=200, seed=1).write(out)
    srv = Server(out)
    try:
        page.goto(srv.url + "?_group=tag&_sort=tag&_top=50")
        wait_ready(page, 1)
        _, rows = read_download(page, "#groups-tools button.csv")
        shown = [r[0] for r in rows[1:]]
        cells = page.locator('#groups tbody [data-col="tag"]').evaluate_all("tds => tds.map(td => td.textContent)")
        assert sorted(cells) == sorted(tags)
        want = neutralise_formulas(pa.table({"tag": cells})).column("tag").to_pylist()
        assert shown == want and "'=HYPERLINK(\"http://x\")" in shown and "plain, \"quoted\"" in shown
        assert "'-2" in shown and "'+1" in shown and "'@SUM(A1)" in shown and "'\tx" in shown
        _, rows = read_download(page, "#examples-tools button.csv")
        score = rows[0].index("score")
        assert any(r[score].startswith("-") for r in rows[1:])  # a negative number is a number, left as it is
        assert all(not r[score].startswith("'") for r in rows[1:])
        assert page.errors == []
    finally:
        srv.close()


def test_group_by_hints_values_and_flags_low_counts(server, sample_path, page):
    s = ExplorationSample.read(sample_path)
    t = s.table
    page.goto(server.url)
    wait_ready(page, 1)
    for c in s.attributes + ["base_cluster", "split_rate"]:  # every column is offered, with its count
        label = page.locator(f'label.gb-label:has(input[value="{c}"])')
        assert label.locator(".gb-n").text_content() == f"{len(set(t.column(c).to_pylist())):,}", c  # (some folded)
    meta = {c["name"]: c for c in ExploreApp(sample_path).meta()["columns"]}
    id_like = {c for c in s.attributes if meta[c]["id_like"]}
    assert id_like and "state" not in id_like
    shown = set(page.locator("label.gb-label.id-like input").evaluate_all("es => es.map(e => e.value)"))
    assert shown & set(s.attributes) == id_like and "item_id" in shown
    # the id-like attributes come after the others, under their own heading
    order = page.locator("#groupby > .gb-grid input.gb").evaluate_all("es => es.map(e => e.value)")
    assert order == [a for a in s.attributes if a not in id_like] + [a for a in s.attributes if a in id_like]
    assert page.locator("#gb-id-like").is_visible()
    # a group of one sampled item: a low-count flag, no ± equal to its estimate
    page.check('input.gb[value="state"]')
    page.click("#run")
    wait_ready(page, 2)
    groups = s.group(["state"], top=20)
    assert any(g.sampled_items == 1 for g in groups) and any(g.sampled_items >= 5 for g in groups)
    rows = page.locator("#groups tbody tr.group")
    for k, g in enumerate(groups):
        se = rows.nth(k).locator('[data-col="std_err"]')
        if g.sampled_items < 5:
            assert se.inner_text() == "low count" and "few" in rows.nth(k).get_attribute("class")
            assert "Only" in se.locator(".low").get_attribute("title")
        else:
            assert_shows(se.inner_text(), g.std_err["jaccard_contribution"])
    # a slice of a single item: its cards are flagged as well
    one = next(g for g in groups if g.sampled_items == 1)
    page.locator("#groups tbody tr.group").nth(groups.index(one)).click()
    wait_ready(page, 3)
    assert page.locator("#slice .card .low").count() == 4 and "±" not in page.inner_text("#slice")
    assert page.errors == []


def test_meta_tells_an_id_like_column_without_counting_millions(monkeypatch):
    """/api/meta counts an attribute's values only when an even spread of rows shows it is not
    nearly one value per item: a 10M-item sample's ids would take seconds (and stall the page)."""
    import numpy as np
    from test_slow_clients import big_sample

    import abcde.web.explore_app as ea

    monkeypatch.setattr(ea, "PROBE_ROWS", 1_000)
    app = ea.ExploreApp(big_sample(50_000))
    cols = {c["name"]: c for c in app.meta()["columns"]}
    x, source = cols["x"], cols["source"]
    assert x["distinct"] is None and x["id_like"] and 900 <= x["distinct_at_least"] <= 1_000  # an even spread
    assert source["distinct"] == 3 and not source["id_like"] and "distinct_at_least" not in source
    assert set(source["values"]) == {"a", "b", "c"}
    assert cols["item_id"]["distinct"] is None and cols["item_id"]["id_like"]  # ids: one per item, not counted
    assert np.isclose(x["low_count_share"], 1.0)
