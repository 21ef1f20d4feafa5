"""Names of a package imported on first use (PEP 562), so that importing the package, or the
command line, does not import every module behind it."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """``__getattr__`` and ``__dir__`` for a package whose public names (``exports``: name →
    defining module) are imported when first used and then kept in its ``namespace``."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
