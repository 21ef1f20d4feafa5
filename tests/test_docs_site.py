"""The documentation site and the README's front door (issue 52, "A documentation site").

- The site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: no broken link or anchor, no
  page left out of the nav, no docstring the API reference cannot read; the API reference covers
  every name of ``abcde.__all__``.
- The README is a front door: at most 200 lines, starting with exactly the two commands
  (``python3 dev.py demo``, ``python3 dev.py test``), with one worked example whose output and
  numbers are what ``abcde demo`` prints on this code, and links into docs/ that resolve.
- The guarantees table names tests that exist.

The code blocks of every page run in tests/test_docs_snippets.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: Pages whose worked example is the demo's output: a ```console block that starts with this command.
DEMO_COMMAND = "$ python3 dev.py demo"
WORKED = [README, DOCS / "index.md", DOCS / "getting-started.md"]


def _mkdocs_env() -> dict:
    return dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about MkDocs 2.0, not a warning of the site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``mkdocs build --strict`` of the site into a temporary directory: (the directory, its log, seconds)."""
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(out)], cwd=ROOT, env=_mkdocs_env(), capture_output=True, text=True,
                       timeout=600)
    seconds = time.perf_counter() - start
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"mkdocs build --strict failed (pip install -e '.[docs]'?):\n{log[-5000:]}"
    return out, log, seconds


def test_the_site_builds_strictly_without_a_warning(site):
    out, log, seconds = site
    warnings = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert not warnings, "\n".join(warnings)
    for page in ("index.html", "getting-started/index.html", "concepts/index.html", "cli/index.html",
                 "judging/index.html", "model-and-people/index.html", "truth-sample/index.html",
                 "spark/index.html", "scaling/index.html", "architecture/index.html", "guarantees/index.html",
                 "status/index.html", "api/index.html"):
        assert (out / page).is_file(), page
    print(f"mkdocs build --strict: {seconds:.1f} s")


def test_the_api_reference_covers_the_public_api(site):
    import abcde

    html = (site[0] / "api" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in abcde.__all__ if f'id="abcde.{name}"' not in html]
    assert not missing, f"docs/api.md documents no {missing}: add a '::: abcde.NAME' for each"
    # rendered from the docstrings, not only headings
    assert "Parameters:" in html and abcde.impact.__doc__.splitlines()[0] in html


def test_every_page_of_docs_is_in_the_nav_and_every_nav_entry_is_a_page():
    import yaml

    def pages(nav):
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            yield from pages(value) if isinstance(value, list) else [value]

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = set(pages(config["nav"]))
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_ext" not in p.parts}
    assert in_nav == on_disk, f"only in the nav: {sorted(in_nav - on_disk)}; only in docs/: {sorted(on_disk - in_nav)}"


# ----------------------------------------------------------------------------- the README
def test_the_readme_starts_with_the_two_commands():
    """Exactly ``python3 dev.py demo`` and ``python3 dev.py test``, first, in one block under the title."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ")
    body = [line for line in lines[1:] if line.strip()]
    assert body[0] == "```bash"
    end = body.index("```")
    commands = [line.split("#")[0].strip() for line in body[1:end]]
    assert commands == ["python3 dev.py demo", "python3 dev.py test"]


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert "What abcde answers" in headings and "Where to read on" in headings
    assert any(h.startswith("A worked example") for h in headings)
    assert DEMO_COMMAND in text


def _slug(heading: str) -> str:
    """The anchor GitHub and MkDocs' toc give a heading (lower case, punctuation dropped, spaces as -)."""
    text = re.sub(r"`|\*\*|\*", "", heading).strip().lower()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if c.isalnum() or c in " -_")
    return re.sub(r"\s+", "-", text)


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+?)\s*#*$", text, re.M)}


def test_every_link_of_the_readme_resolves():
    """A link into docs/ (or anywhere in the checkout) names a file that exists, and an anchor one of
    its headings: the front door has no dead ends."""
    text = re.sub(r"^```.*?^```", "", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert any(link.startswith("docs/") for link in links)
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / path) if path else README
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {path or 'README.md'}")
    assert not broken, "\n".join(broken)


# ----------------------------------------------------------------------------- the worked example
@pytest.fixture(scope="module")
def demo_printed(tmp_path_factory) -> str:
    """What ``abcde demo`` prints (stdout), run as ``python3 dev.py demo`` runs it: from a fresh
    directory, into the default ``abcde-demo``."""
    cwd = tmp_path_factory.mktemp("demo")
    r = subprocess.run([sys.executable, "-m", "abcde", "demo"], cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, ABCDE_PROGRESS="0"), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _demo_block(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^```console\n" + re.escape(DEMO_COMMAND) + r"\n(.*?)^```", text, re.S | re.M)
    assert m, f"{path.name} has no ```console block starting with {DEMO_COMMAND}"
    return [line.rstrip() for line in m.group(1).splitlines()]


@pytest.mark.parametrize("path", WORKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_worked_example_is_what_the_demo_prints(path, demo_printed):
    """Every line the page shows (``...`` leaves some out) is a line the demo prints, in order."""
    got = [line.rstrip() for line in demo_printed.splitlines()]
    at = 0
    for line in _demo_block(path):
        if line.strip() in ("", "..."):
            continue
        try:
            at = got.index(line, at) + 1
        except ValueError:
            raise AssertionError(f"{path.name}: the demo does not print, in this order, the line\n{line}\n"
                                 f"It printed:\n{demo_printed}") from None


NUMBER = re.compile(r"[−-]?\d+(?:,\d{3})*(?:\.\d+)?%?")


@pytest.mark.parametrize("path", [README, DOCS / "index.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_numbers_read_out_of_the_worked_example_are_the_demos(path, demo_printed):
    """The prose that explains the example ("Exp split off 10.742% …") quotes the demo's numbers."""
    text = path.read_text(encoding="utf-8")
    section = re.search(r"^## A worked example.*?(?=^## )", text, re.S | re.M).group(0)
    prose = re.sub(r"^```.*?^```", "", section, flags=re.S | re.M)
    printed = {n.replace("−", "-") for n in NUMBER.findall(demo_printed)}
    # one digit is a name (FEBRL 3, the paper's Figure 1), not a result
    quoted = {n.replace("−", "-") for n in NUMBER.findall(prose) if len(n) > 1}
    assert quoted and not quoted - printed, f"{path.name} quotes numbers the demo does not print: " \
                                           f"{sorted(quoted - printed)}"


# ----------------------------------------------------------------------------- the guarantees
def test_the_guarantees_table_names_tests_that_exist():
    """docs/guarantees.md (moved from the README): every test file and test a row names exists."""
    text = (DOCS / "guarantees.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| promise")]
    assert "| promise | proven by |" in text and len(rows) >= 40
    missing = []
    for row in rows:
        proof = row.rstrip(" |").rsplit(" | ", 1)[-1]
        last_file = None
        for path, names in re.findall(r"`((?:tests|benchmarks)/[\w/]+\.py)?((?:::\w+)*)`", proof):
            if path:
                last_file = ROOT / path
                if not last_file.exists():
                    missing.append(path)
                    continue
            for name in filter(None, names.split("::")):
                if last_file is None or not re.search(rf"^\s*def {name}\(", last_file.read_text(), re.M):
                    missing.append(f"{path or last_file}::{name}")
    assert not missing, f"the guarantees name what does not exist: {missing}"
