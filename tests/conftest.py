import pyarrow as pa
import pyarrow.parquet as pq
import os
from pathlib import Path
import shutil

import pytest

import abcde
from abcde.errors import MissingDependencyError


@pytest.fixture
def write(tmp_path):
    """write(name, **columns) -> path of a Parquet (or CSV, by extension) file in tmp_path."""

    def _write(name: str, **cols):
        path = tmp_path / name
        table = pa.table(cols)
        if name.endswith(".csv"):
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, path)
        else:
            pq.write_table(table, path)
        return path

    return _write


@pytest.fixture
def small(write):
    """A small Base/Exp/items triple on disk (Parquet)."""
    base = write("base.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "a", "b", "b"])
    exp = write("exp.parquet", item_id=[1, 2, 3, 4, 5], cluster_id=["a", "a", "c", "c", "b"])
    items = write(
        "items.parquet",
        item_id=[1, 2, 3, 4, 5],
        weight=[1.0, 2.0, 3.0, 4.0, 5.0],
        source=["wiki", "web", "wiki", "web", "wiki"],
    )
    return {"base": base, "exp": exp, "items": items}


def chromium_path() -> str | None:
    return os.environ.get("ABCDE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser():
    """A headless Debian Chromium driven by Playwright (``executable_path``; no Playwright browser
    download). A missing browser fails the test (never a silent skip): install it, or deselect
    the browser tests with ``-m "not browser"``."""
    exe = chromium_path()
    if exe is None:
        pytest.fail("chromium is not installed (python3 dev.py test installs it with apt-get); "
                    "or deselect the browser tests: -m 'not browser'")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page that refuses every request not to 127.0.0.1/localhost or file:// (the report
    and the apps must work offline); ``page.blocked`` lists what was refused."""
    # bypass_csp: Playwright's wait_for_function evaluates strings, which the pages' Content-Security-Policy
    # forbids; bypassing it also proves the escaping holds without relying on that policy.
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    pg.blocked = []

    def guard(route):
        url = route.request.url
        if url.startswith(("file://", "data:", "blob:", "about:")) or url.split("/")[2].split(":")[0] in (
                "127.0.0.1", "localhost"):
            route.continue_()
        else:
            pg.blocked.append(url)
            route.abort()

    pg.route("**/*", guard)
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


@pytest.fixture
def screenshot(tmp_path):
    """screenshot(page, name, **kw): a PNG in tmp_path; with ABCDE_SCREENSHOTS=1 also docs/<name>,
    the pictures the README and docs/screens.md show (``ABCDE_SCREENSHOTS=1 CI=1 .venv/bin/python -m pytest
    tests/test_layout.py tests/test_explore_app.py tests/test_judge_app.py tests/test_report.py`` refreshes them)."""
    from pathlib import Path

    def shoot(page, name: str, **kw):
        page.screenshot(path=str(tmp_path / name), **kw)
        assert (tmp_path / name).stat().st_size > 10_000
        if os.environ.get("ABCDE_SCREENSHOTS"):
            docs = Path(__file__).resolve().parents[1] / "docs"
            docs.mkdir(exist_ok=True)
            page.screenshot(path=str(docs / name), **kw)

    return shoot


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the test run (fails without pyspark/Java: install them, or
    deselect the Spark tests with -m 'not spark')."""
    # The JVM's options: the quick (C1) JIT only, and the serial collector. The tests' queries are small
    # and many, so much of the JVM's time went to C2 compiler threads and G1's concurrent work, competing
    # for 2 cores; no JIT level or collector changes a result. About a third less CPU for the same
    # queries (a session start, the example's impact and a pair sample on local[2]: 113 s, was 176 s).
    # test_engines.py starts its Spark Connect server and spark-submit JVMs with the same options.
    try:
        eng = abcde.connect("spark", master="local[2]", spark_conf={
            "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4",
            "spark.driver.memory": "2g", "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"})
    except MissingDependencyError as exc:
        pytest.fail(f"The Spark tests need pyspark and Java: {exc} (or deselect them: -m 'not spark')")
    yield eng
    eng.release()


# ----------------------------------------------------------------------------- kinds of tests
# Tests that need Java/Spark or Chromium are marked by what they use, so a user without them
# deselects them explicitly (-m "not spark", -m "not browser"); the fixtures fail, never skip,
# when what they need is missing. The summary counts the tests of each kind.
SPARK_FIXTURES = {"spark", "connect_url"}
BROWSER_FIXTURES = {"browser", "page"}


def pytest_addoption(parser):
    parser.addoption("--shuffle", type=int, default=None, metavar="SEED",
                     help="Run the test files, and the tests within each file, in an order shuffled by SEED "
                          "(the same on every xdist worker): a test that depends on another's order fails.")


#: Each test file's seconds in a whole run (``tests/file_costs.json``, written by
#: ``python tests/file_costs.py`` from a run with ``--durations=0``). ``dev.py test`` hands whole files
#: to the workers (``--dist loadfile``) in collection order: the costliest first, so no worker is left
#: with a long file while the other has finished (longest processing time first). A file not listed
#: counts half a second a test.
_COSTS_FILE = Path(__file__).with_name("file_costs.json")


def _file_costs() -> dict:
    import json

    try:
        return json.loads(_COSTS_FILE.read_text())
    except (OSError, ValueError):
        return {}


def pytest_collection_modifyitems(config, items):
    seed = config.getoption("--shuffle")
    if seed is None:
        costs, n = _file_costs(), {}
        for item in items:
            f = item.nodeid.split("::")[0]
            n[f] = n.get(f, 0) + 1
        rank = {f: -float(costs.get(f, 0.5 * k)) for f, k in n.items()}
        items.sort(key=lambda it: rank[it.nodeid.split("::")[0]])  # stable: each file's own order kept
    else:
        import random

        rng = random.Random(seed)
        by_file: dict = {}
        for item in items:
            by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
        files = sorted(by_file)
        rng.shuffle(files)
        items[:] = [it for f in files for it in rng.sample(by_file[f], len(by_file[f]))]
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if names & SPARK_FIXTURES or params.get("engine") == "spark" or "spark_submit" in item.name:
            item.add_marker(pytest.mark.spark)
        if names & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)


_COUNTS: dict = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        for kind in ("spark", "browser", "slow"):
            if kind in report.keywords:
                key = (kind, report.outcome)
                _COUNTS[key] = _COUNTS.get(key, 0) + 1
        _COUNTS[("all", report.outcome)] = _COUNTS.get(("all", report.outcome), 0) + 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _COUNTS:
        return
    rows = []
    for kind in ("all", "spark", "browser", "slow"):
        got = {o: n for (k, o), n in _COUNTS.items() if k == kind}
        if got:
            rows.append(f"{kind}: " + ", ".join(f"{n} {o}" for o, n in sorted(got.items())))
    terminalreporter.write_sep("-", "tests by kind")
    for r in rows:
        terminalreporter.write_line(r)
    if os.environ.get("CI") and any(_COUNTS.get((k, "skipped")) for k in ("spark", "browser")):
        terminalreporter.write_line("CI runs every Spark and browser test: some were skipped (see above).", red=True)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") and any(_COUNTS.get((k, "skipped")) for k in ("spark", "browser")) and exitstatus == 0:
        session.exitstatus = 1


# ----------------------------------------------------------------------------- shared runs
@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``abcde demo --out DIR --json`` run once for the whole test run (the README's main job on
    the bundled example), shared by every test file and every xdist worker (a lock in the run's
    common temporary folder): ``(DIR, the JSON it printed)``. Tests read it, never change it."""
    import fcntl
    import json
    import subprocess
    import sys

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this run
    out, printed = root / "shared-demo", root / "shared-demo.json"
    with open(root / "shared-demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            r = subprocess.run([sys.executable, "-m", "abcde", "demo", "--out", str(out), "--json"],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-3000:]
            printed.write_text(r.stdout)
    return out, json.loads(printed.read_text())


@pytest.fixture(scope="session")
def big_world():
    """The ~52k-item simulation world (``test_quality.world(15000, seed=3)``), built once per
    session for test_quality and test_stratified: its inputs, diff, overall metrics, the
    brute-force truths (``reference.all_pairs``) overall and per ``kind`` slice, and abcde's
    stored slice multipliers."""
    import json

    import reference as ref
    from test_quality import dicts, truth_metrics, world

    from abcde.core.diff import build_diff
    from abcde.core.inputs import Inputs
    from abcde.metrics.impact import overall
    from abcde.quality.draw import _slice_multipliers

    base, exp, items = world(15000, seed=3)
    d = build_diff(Inputs(base, exp, items=items))
    o = overall(d)
    b, e, w, t = dicts(base, exp, items)
    pairs = ref.all_pairs(b, e, w)
    kind = dict(zip(items.column("item_id").to_pylist(), items.column("kind").to_pylist()))
    W = sum(w.values())
    slices = {}
    for v in ("a", "b"):
        inside = [p for p in pairs if kind[p["i"]] == v]
        w_i = sum(w[i] for i in w if kind[i] == v)
        contrib = sum(p["u"] * p["l"] for p in inside if t[p["i"]] == t[p["j"]])
        slices[json.dumps(v)] = {
            "weight": w_i, "pairweight": sum(p["u"] for p in inside), "contribution": contrib,
            "delta_precision": contrib * W / w_i,
            "self": (sum(p["u"] * p["l"] for p in inside if p["i"] == p["j"]),
                     sum(p["u"] for p in inside if p["i"] == p["j"]))}
    stored = {r["value"]: r for r in _slice_multipliers(d, ["kind"], o["total_weight"]).to_pylist()}
    return {"base": base, "exp": exp, "items": items, "d": d, "o": o, "t": t, "kind": kind,
            "truth": truth_metrics(b, e, w, t, pairs), "slices": slices, "stored": stored}
