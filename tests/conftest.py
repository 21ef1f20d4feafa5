import pyarrow as pa
import pyarrow.parquet as pq
import os
import shutil

import pytest


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
    download). In CI a missing browser fails; elsewhere it skips."""
    exe = chromium_path()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (python3 dev.py test installs it with apt-get)")
        pytest.skip("chromium is not installed")
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
    the picture the README shows (``ABCDE_SCREENSHOTS=1 python3 dev.py test -k screenshot`` refreshes them)."""
    from pathlib import Path

    def shoot(page, name: str, **kw):
        page.screenshot(path=str(tmp_path / name), **kw)
        assert (tmp_path / name).stat().st_size > 10_000
        if os.environ.get("ABCDE_SCREENSHOTS"):
            docs = Path(__file__).resolve().parents[1] / "docs"
            docs.mkdir(exist_ok=True)
            page.screenshot(path=str(docs / name), **kw)

    return shoot
