"""One job per module (issue 40, "done when"): no module over 800 lines, no class over 450 lines,
no function over 150 lines in ``src/abcde``. Size is not the problem, modules holding things of
different kinds are; these bounds are where the house was measured to hold one kind per module,
and a module growing past them is the sign to look again."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "abcde"
MODULE, CLASS, FUNCTION = 800, 450, 150


def _sizes():
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        rel = str(path.relative_to(SRC))
        yield "module", rel, text.count("\n") + 1, MODULE
        for node in ast.walk(ast.parse(text)):
            n = (node.end_lineno or node.lineno) - node.lineno + 1 if hasattr(node, "lineno") else 0
            if isinstance(node, ast.ClassDef):
                yield "class", f"{rel}:{node.name}", n, CLASS
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield "function", f"{rel}:{node.name}", n, FUNCTION


def test_no_module_class_or_function_is_over_its_size():
    over = [f"{kind} {name}: {n} lines (at most {limit})" for kind, name, n, limit in _sizes() if n > limit]
    assert not over, "\n".join(over)


def test_the_sizes_are_measured():
    """The check sees the package: every module, and classes and functions in them."""
    kinds = {kind for kind, *_ in _sizes()}
    assert kinds == {"module", "class", "function"}
    assert sum(1 for kind, *_ in _sizes() if kind == "module") > 100
