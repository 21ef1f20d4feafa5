"""A pair's id (no Ibis: a sample's readers and the judgement files use it)."""

from __future__ import annotations

import functools
import hashlib
import json


def pair_id(a, b) -> str:
    """Order-free id of the pair {a, b}: the same for (a, b) and (b, a).

    Ids of strings and integers are remembered (a bounded cache: a simulation's thousand samples of
    one population hash the same pairs again and again); any other id is hashed each time.

    >>> pair_id("a", "b") == pair_id("b", "a") != pair_id(1, "b")
    True
    """
    if type(a) in _CACHED and type(b) in _CACHED:
        return _remembered(a, b)
    return _pair_id(a, b)


def _pair_id(a, b) -> str:
    x, y = sorted([json.dumps(a), json.dumps(b)])
    return hashlib.md5(f"{x}|{y}".encode()).hexdigest()[:16]


#: The id types whose equal values always have the same id (``typed``: 1 and True are not one key).
_CACHED = (str, int)
_remembered = functools.lru_cache(maxsize=1 << 17, typed=True)(_pair_id)


__all__ = ["pair_id"]
