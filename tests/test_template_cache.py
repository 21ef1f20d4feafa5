"""Compiled templates kept across runs (abcde.util.templates): used when the template is the same,
compiled again when it changed or the cache is unreadable, never an error."""

from __future__ import annotations

import os

import jinja2
import pytest

from abcde.report.render import _env
from abcde.util import templates


def report_env() -> jinja2.Environment:
    """A new environment of the report's pages, as a new process makes (``_env`` is cached)."""
    return _env.__wrapped__()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ABCDE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "templates"


def compiles(env: jinja2.Environment, name: str) -> int:
    """How many times ``env`` compiles template ``name`` from source when it is loaded."""
    n = 0
    original = env.compile

    def counting(*a, **k):
        nonlocal n
        n += 1
        return original(*a, **k)

    env.compile = counting
    env.get_template(name)
    return n


def test_a_second_run_loads_the_compiled_template(cache):
    assert compiles(report_env(), "report.html") == 1
    files = sorted(cache.iterdir())
    assert files and all(f.name.startswith("abcde.report-") for f in files)
    # A new process (a new environment): loaded, not compiled; the same page.
    assert compiles(report_env(), "report.html") == 0
    a = templates.environment("abcde.web").get_template("judge.html")
    assert a is not None


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package of one template, ``templates/t.html`` holding ``text``: ``package(name, text)``
    returns the template's path (the package importable for this test only)."""
    import sys

    monkeypatch.syspath_prepend(str(tmp_path))

    def make(name: str, text: str):
        (tmp_path / name / "templates").mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text("")
        (tmp_path / name / "templates" / "t.html").write_text(text)
        monkeypatch.delitem(sys.modules, name, raising=False)
        return tmp_path / name / "templates" / "t.html"

    return make


def test_a_changed_template_is_compiled_again(cache, package):
    t = package("pkg_tpl", "one {{ x }}")
    assert templates.environment("pkg_tpl").get_template("t.html").render(x=1) == "one 1"
    t.write_text("two {{ x }}")
    env = templates.environment("pkg_tpl")
    assert compiles(env, "t.html") == 1  # keyed by the source: the old code is not served
    assert env.get_template("t.html").render(x=1) == "two 1"


def test_a_corrupt_or_unwritable_cache_only_means_compiling(cache):
    report_env().get_template("report.html")
    for f in cache.iterdir():
        f.write_bytes(b"not a cache file")
    assert compiles(report_env(), "report.html") == 1
    if os.geteuid() != 0:  # root writes anywhere
        for f in cache.iterdir():
            f.unlink()
        cache.chmod(0o500)
        try:
            assert compiles(report_env(), "report.html") == 1
        finally:
            cache.chmod(0o700)


def test_a_cache_path_that_is_a_file_only_means_compiling(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ABCDE_CACHE_DIR", str(blocker))
    assert compiles(report_env(), "report.html") == 1


def test_a_corrupt_body_behind_a_valid_header_only_means_compiling(cache):
    from jinja2.bccache import bc_magic

    report_env().get_template("report.html")
    for f in cache.iterdir():
        f.write_bytes(bc_magic + b"garbage, not a pickled checksum nor marshalled code")
    assert compiles(report_env(), "report.html") == 1


def test_other_options_are_another_cache_entry(cache, package):
    """Options change the compiled code (trim_blocks, lstrip_blocks...): a template compiled with
    other options is not served; the same options (a function among them) are the same entry."""
    package("pkg_opts", "{% if x %}\n  yes\n{% endif %}\n")
    plain = templates.environment("pkg_opts").get_template("t.html").render(x=1)

    def trimmed():
        return templates.environment("pkg_opts", trim_blocks=True, lstrip_blocks=True, finalize=lambda v: v)

    env = trimmed()
    assert compiles(env, "t.html") == 1
    assert env.get_template("t.html").render(x=1) == "  yes\n" != plain
    assert compiles(trimmed(), "t.html") == 0  # a new lambda each time, the same entry


def test_no_home_directory_means_no_cache_not_an_error(monkeypatch, tmp_path):
    """A container's user with no HOME and no passwd entry: templates are compiled, nothing is
    cached, the report and the web pages still load."""
    from pathlib import Path

    for var in ("ABCDE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(var, raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert templates.cache_dir() is None
    env = report_env()
    assert env.bytecode_cache is None and compiles(env, "report.html") == 1
    assert templates.environment("abcde.web").get_template("judge.html") is not None
