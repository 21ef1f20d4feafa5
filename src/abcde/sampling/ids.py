"""A pair's id (no Ibis: a sample's readers and the judgement files use it)."""

from __future__ import annotations

import hashlib
import json


def pair_id(a, b) -> str:
    """Order-free id of the pair {a, b}: the same for (a, b) and (b, a)."""
    x, y = sorted([json.dumps(a), json.dumps(b)])
    return hashlib.md5(f"{x}|{y}".encode()).hexdigest()[:16]


__all__ = ["pair_id"]
