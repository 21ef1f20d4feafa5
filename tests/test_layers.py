"""The house's shape, checked: imports go one way between the layers (import-linter's layers
contract in pyproject.toml), no module imports itself in a circle, and a function-level import
of abcde is only ever a lazy import for start-up time that says so.

The layers, top to bottom: cli, workflow, report | web, judging, quality, samples, sampling, metrics,
core, engine, util | examples, errors (docs/architecture.md)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "abcde"
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src_parent: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(src_parent))
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_layers_contract_is_kept():
    r = _lint(ROOT / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 kept, 0 broken" in r.stdout


@pytest.mark.parametrize("low, high", [("abcde/core/formulas.py", "abcde.cli"),
                                       ("abcde/quality/result.py", "abcde.judging.session"),
                                       ("abcde/web/explore_app.py", "abcde.report")])
def test_layers_contract_fails_on_a_reversed_import(tmp_path, low, high):
    """The contract can fail: a copy of the package with one import running back up (or
    between the independent siblings report and web) is refused, naming the import."""
    shutil.copytree(SRC, tmp_path / "abcde", ignore=shutil.ignore_patterns("__pycache__", "*.parquet"))
    target = tmp_path / low
    target.write_text(target.read_text() + f"\n\nimport {high}  # a deliberate violation\n")
    r = _lint(tmp_path)
    assert r.returncode != 0, r.stdout
    assert "BROKEN" in r.stdout and high in r.stdout, r.stdout


@pytest.mark.parametrize("low, high", [("abcde/samples/sample_dir.py", "ibis"),
                                       ("abcde/samples/people_tasks.py", "abcde.engine"),
                                       ("abcde/samples/judgements.py", "abcde.quality.estimate"),
                                       ("abcde/quality/paper.py", "sqlite3"),
                                       ("abcde/quality/stratified.py", "abcde.sampling.stratified")])
def test_forbidden_contracts_fail_on_an_import_they_forbid(tmp_path, low, high):
    """The sample's readers and the estimators import no Ibis, no engine (and the estimators no
    SQLite): a copy of the package with one such import is refused, naming it; so a comment
    "lazy: ibis stays out" is now a checked rule (issue 40)."""
    shutil.copytree(SRC, tmp_path / "abcde", ignore=shutil.ignore_patterns("__pycache__", "*.parquet"))
    target = tmp_path / low
    target.write_text(target.read_text() + f"\n\nimport {high}  # a deliberate violation\n")
    r = _lint(tmp_path)
    assert r.returncode != 0, r.stdout
    assert "BROKEN" in r.stdout and high.split(".")[0] in r.stdout, r.stdout


def test_no_private_name_is_imported_from_another_module():
    """``from abcde.x import _name`` only for an alias (``import progress as _progress``): a name
    another module needs is public in its own (issue 40)."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("abcde"):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, bad


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _abcde_imports(path: Path):
    """(line, imported module, at module level?) for every import of an abcde module."""
    tree = ast.parse(path.read_text())
    top_level = {id(n) for n in tree.body}
    # imports under `if TYPE_CHECKING:` at module level count as module level
    for n in tree.body:
        if isinstance(n, ast.If):
            top_level |= {id(m) for m in ast.walk(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("abcde"):
            mods = [node.module]
            mods += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names if a.name.startswith("abcde")]
        else:
            continue
        for m in mods:
            yield node.lineno, m, id(node) in top_level


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def test_no_relative_imports():
    """Imports name their layer: ``from abcde.core.diff import ...``, never ``from ..x``."""
    bad = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


def test_no_import_cycles():
    """No circle of imports between abcde's modules, counting function-level imports too (a
    function-level import that dodges a cycle is still a cycle)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for _, imported, _top in _abcde_imports(path):
            if imported in modules and imported != name and imported != "abcde":
                graph[name].add(imported)
    # the package __init__ files only re-export (abcde/__init__ lazily); edges into a package
    # mean its __init__, which imports its own modules: skip a module's edge to its own package
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif not state.get(n):
                visit(n, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_function_level_imports_of_abcde_are_commented_lazy():
    """A function-level import of an abcde module is allowed only for start-up time and must
    say so (``# lazy: ...`` on its line or the line above)."""
    bad = []
    for name, path in _modules().items():
        lines = path.read_text().splitlines()
        for lineno, imported, top in _abcde_imports(path):
            if top:
                continue
            here = lines[lineno - 1] + (lines[lineno - 2] if lineno >= 2 else "")
            if "lazy" not in here:
                bad.append(f"{path.relative_to(ROOT)}:{lineno} imports {imported}")
    assert not sorted(set(bad)), sorted(set(bad))
