#!/usr/bin/env python3
"""Set up and run abcde with nothing but Python 3.11+ on the machine.

    python3 dev.py demo   # create .venv, install abcde, run the main job on the bundled example data
    python3 dev.py test   # create .venv, install abcde with test and Spark extras (and Java and
                          # Chromium, via apt-get, if missing), run the whole test suite
    python3 dev.py docs   # create .venv, install abcde with the docs extra, build the documentation
                          # site strictly (mkdocs build --strict into ./site) and serve it locally
                          # (mkdocs serve, http://127.0.0.1:8000/); --build-only stops after the build

Extra arguments are passed on (to ``abcde demo``, to ``pytest``, or to ``mkdocs serve``). Uses only
the standard library; installs into ./.venv, re-installing when pyproject.toml
changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def run(cmd: list[str], **kw) -> None:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def setup(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"abcde needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / f".abcde-installed-{extras or 'base'}"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    run([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    run([PY, "-m", "pip", "install", "--quiet", "-e", target])
    stamp.write_text(digest)


def apt_install(what: str, package: str, present: bool) -> str | None:
    """Install a Debian package the test suite needs when it is missing and apt-get can do it.
    Returns why it could not (None when it is there)."""
    if present:
        return None
    apt = shutil.which("apt-get")
    if apt is None:
        return f"no {what} found and no apt-get to install it (Debian package {package})"
    sudo = [] if hasattr(os, "geteuid") and os.geteuid() == 0 else (["sudo"] if shutil.which("sudo") else None)
    if sudo is None:
        return f"no {what} found; install it with: sudo apt-get install -y {package}"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        run([*sudo, apt, "-q", "update"], env=env)
        run([*sudo, apt, "install", "-y", "-q", "--no-install-recommends", package], env=env)
    except subprocess.CalledProcessError as exc:
        return f"installing {package} with apt-get failed (exit {exc.returncode})"
    return None


#: What the test suite needs beyond Python packages: (marker, what, Debian package, present?).
SYSTEM_NEEDS = [
    ("spark", "Java", "openjdk-17-jre-headless", lambda: bool(os.environ.get("JAVA_HOME") or shutil.which("java"))),
    ("browser", "Chromium", "chromium", lambda: bool(os.environ.get("ABCDE_CHROMIUM") or shutil.which("chromium"))),
]


def deselected(marker: str, args: list[str]) -> bool:
    """Whether the pytest arguments deselect the tests of ``marker`` (``-m "not spark"``)."""
    exprs = [b for a, b in zip(args, args[1:]) if a == "-m"] + [a[2:] for a in args if a.startswith("-m") and a != "-m"]
    return any(f"not {marker}" in e for e in exprs)


def ensure_system(args: list[str]) -> None:
    """Java (the Spark engine's tests) and Chromium (the browser tests): installed when missing;
    when that fails, stop with what to do, unless those tests are deselected (-m "not spark")."""
    for marker, what, package, present in SYSTEM_NEEDS:
        if deselected(marker, args):
            continue
        problem = apt_install(what, package, present())
        if problem:
            sys.exit(f"dev.py test: {problem}. The {marker} tests need it: install it, or run without them: "
                     f"python3 dev.py test -m 'not {marker}'")


def docs(args: list[str]) -> int:
    """Build the site strictly into ./site (a warning — a broken link or anchor, a page left out of
    the nav, a docstring the API reference cannot read — fails it), then serve it with live reload
    unless ``--build-only``; other arguments go to ``mkdocs serve`` (e.g. ``--dev-addr 0.0.0.0:8000``)."""
    build_only = "--build-only" in args
    rest = [a for a in args if a != "--build-only"]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about MkDocs 2.0, not about this site
    config = ["--config-file", ROOT / "mkdocs.yml"]
    run([BIN / "mkdocs", "build", "--strict", *config, "--site-dir", ROOT / "site"], cwd=ROOT, env=env)
    print(f"dev.py docs: the site is in {ROOT / 'site'} (open site/index.html, or serve it)", flush=True)
    if build_only:
        return 0
    try:
        run([BIN / "mkdocs", "serve", *config, *rest], cwd=ROOT, env=env)
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "docs"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        setup("")
        run([BIN / "abcde", "demo", *rest])
    elif cmd == "docs":
        setup("docs")
        return docs(rest)
    else:
        setup("test,spark,spark-connect")
        ensure_system(rest)
        env = dict(os.environ)
        # Test files in parallel, one worker per core (files stay whole, so a file's shared runs are
        # made once), handed out costliest first (tests/file_costs.json, read by tests/conftest.py).
        parallel = [] if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest) else [
            "-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder"]
        print(f"dev.py test: the whole suite ({'in parallel, one worker per core' if parallel else 'as asked'}): "
              "exact metrics against the paper's reference, the estimators' statistics, both engines (a local "
              "Spark session), the three pages in headless Chromium. About 30 min on 2 cores; the summary "
              "counts the tests by kind.", flush=True)
        result = subprocess.run([str(PY), "-m", "pytest", *parallel, "-p", "no:cacheprovider", *rest], cwd=ROOT,
                                env=env)
        return result.returncode
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.returncode or 1)
