"""Slice filters: a small, safe SQL-like expression language turned into Ibis.

``source = 'wiki' AND width <= 512`` is parsed with sqlglot and translated node
by node into an Ibis boolean expression over the sample's columns. Only
comparisons, ``AND``/``OR``/``NOT``, ``IN``, ``BETWEEN``, ``LIKE``, ``IS [NOT]
NULL``, column names and literals are accepted, so the same filter runs on any
engine and no SQL text reaches one.
"""

from __future__ import annotations

import ibis
import sqlglot
from sqlglot import expressions as sx

from abcde.errors import InputError

_COMPARE = {
    sx.EQ: lambda a, b: a == b,
    sx.NEQ: lambda a, b: a != b,
    sx.GT: lambda a, b: a > b,
    sx.GTE: lambda a, b: a >= b,
    sx.LT: lambda a, b: a < b,
    sx.LTE: lambda a, b: a <= b,
}


def parse_filter(text: str, table: ibis.Table) -> ibis.BooleanValue:
    """Translate a filter expression into an Ibis predicate over ``table``.

    Raises
    ------
    InputError
        When the text does not parse, uses an unsupported construct, or names a
        column ``table`` does not have (the columns are listed).
    """
    if not text or not text.strip():
        raise InputError("The filter is empty.")
    if len(text) > MAX_FILTER_CHARS:
        raise InputError(f"The filter {shown(text, 60)} is too long: at most {MAX_FILTER_CHARS:,} characters are "
                         "accepted (a long list of values fits in IN (...)).")
    shown_text = shown(text)
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
        return _bool(_tr(tree, table, shown_text), shown_text)
    except sqlglot.errors.ParseError as exc:
        first = str(exc).splitlines()[0]
        raise InputError(f"Cannot parse the filter {shown_text}: {first}") from exc
    except RecursionError as exc:
        raise InputError(f"The filter {shown_text} is nested too deeply (parentheses or NOTs within each other); "
                         "write it with fewer levels.") from exc


#: The longest filter text accepted (a bound on the work a hostile filter can ask for).
MAX_FILTER_CHARS = 100_000


def shown(text: str, limit: int = 120) -> str:
    """The filter as an error message quotes it: ``repr``, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


def _chain(node, cls) -> list:
    """The operands of a chain of ``cls`` (AND or OR) without recursion: ``a OR b OR c`` is
    parsed as ``(a OR b) OR c``, thousands deep for a long generated filter."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        while isinstance(n, sx.Paren) and isinstance(n.this, cls):
            n = n.this
        if isinstance(n, cls):
            stack.extend([n.right, n.left])
        else:
            out.append(n)
    return out


def _balanced(values: list, op):
    """``op`` over ``values`` as a balanced tree (depth log2 n, not n)."""
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _bool(v, text):
    if not isinstance(v, ibis.expr.types.BooleanValue):
        raise InputError(f"The filter {text} is not a condition (true or false for each item).")
    return v


def _tr(node, t: ibis.Table, text: str):
    """``node`` as an Ibis expression; ``text`` is the filter as messages quote it."""
    while isinstance(node, sx.Paren):
        node = node.this
    if isinstance(node, (sx.And, sx.Or)):
        parts = [_bool(_tr(n, t, text), text) for n in _chain(node, type(node))]
        return _balanced(parts, (lambda a, b: a & b) if isinstance(node, sx.And) else (lambda a, b: a | b))
    if isinstance(node, sx.Not):
        return ~_bool(_tr(node.this, t, text), text)
    for cls, fn in _COMPARE.items():
        if type(node) is cls:
            return fn(_tr(node.left, t, text), _tr(node.right, t, text))
    if isinstance(node, sx.In):
        if node.args.get("query") is not None:
            raise InputError(f"Sub-queries are not allowed in a filter: {text}.")
        return _tr(node.this, t, text).isin([_literal(e, text) for e in node.expressions])
    if isinstance(node, sx.Between):
        return _tr(node.this, t, text).between(_tr(node.args["low"], t, text), _tr(node.args["high"], t, text))
    if isinstance(node, sx.Like):
        return _tr(node.this, t, text).like(_literal(node.expression, text))
    if isinstance(node, sx.ILike):
        return _tr(node.this, t, text).ilike(_literal(node.expression, text))
    if isinstance(node, sx.Is):
        if isinstance(node.expression, sx.Null):
            return _tr(node.this, t, text).isnull()
        raise InputError(f"Only IS NULL / IS NOT NULL are supported in a filter: {text}.")
    if isinstance(node, sx.Column):
        name = node.name
        if node.table or name not in t.columns:
            raise InputError(
                f"Unknown column {shown(node.sql())} in the filter {text}. "
                f"Columns: {', '.join(repr(c) for c in t.columns)}."
            )
        return t[name]
    if isinstance(node, (sx.Literal, sx.Boolean, sx.Null, sx.Neg)):
        return ibis.literal(_literal(node, text))
    raise InputError(
        f"Unsupported construct {shown(node.sql())} in the filter {text}. Use column comparisons "
        "(=, !=, <, <=, >, >=), IN (...), BETWEEN, LIKE, IS [NOT] NULL, AND, OR, NOT and literals."
    )


def _literal(node, text: str):
    if isinstance(node, sx.Neg):
        v = _literal(node.this, text)
        if isinstance(v, (int, float)):
            return -v
    if isinstance(node, sx.Boolean):
        return bool(node.this)
    if isinstance(node, sx.Null):
        return None
    if isinstance(node, sx.Literal):
        if node.is_string:
            return node.this
        s = node.this
        try:
            return int(s)
        except ValueError:
            return float(s)
    raise InputError(f"Expected a literal value, got {shown(node.sql())} in the filter {text}.")


STRUCTURED_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "contains", "is null", "is not null")


def structured_filter(conditions, table: ibis.Table) -> ibis.BooleanValue:
    """AND of conditions ``{"column": c, "op": op, "value": v}`` as an Ibis predicate.

    This is what the exploration UI sends: columns are picked from the table's, ``op`` is
    one of :data:`STRUCTURED_OPS`, and values are converted to the column's type (``in``
    takes a list). No text is parsed, so nothing from a browser becomes SQL.

    Raises
    ------
    InputError
        For an unknown column or operator, or a value that does not fit the column.
    """
    if isinstance(conditions, dict):
        conditions = [conditions]
    if not isinstance(conditions, (list, tuple)) or not conditions:
        raise InputError("A structured filter is a non-empty list of {column, op, value} conditions.")
    pred = None
    for i, c in enumerate(conditions):
        if not isinstance(c, dict):
            raise InputError(f"Filter condition {i + 1} is not an object with column, op and value: {c!r}.")
        col, op = c.get("column"), str(c.get("op", "=")).lower()
        if col not in table.columns:
            raise InputError(f"Filter condition {i + 1}: unknown column {col!r}. "
                             f"Columns: {', '.join(repr(x) for x in table.columns)}.")
        if op not in STRUCTURED_OPS:
            raise InputError(f"Filter condition {i + 1}: unknown operator {op!r}; use one of "
                             f"{', '.join(STRUCTURED_OPS)}.")
        x = table[col]
        if op == "is null":
            p = x.isnull()
        elif op == "is not null":
            p = x.notnull()
        elif op in ("in", "not in"):
            vals = c.get("value")
            if not isinstance(vals, (list, tuple)) or not vals:
                raise InputError(f"Filter condition {i + 1}: '{op}' needs a non-empty list of values.")
            vals = [_typed(v, x, col, i) for v in vals]
            p = x.isin(vals) if op == "in" else ~x.isin(vals)
        elif op == "contains":
            p = x.cast("string").contains(str(c.get("value", "")))
        else:
            v = _typed(c.get("value"), x, col, i)
            p = {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]
        pred = p if pred is None else pred & p
    return pred


def _typed(v, x, col: str, i: int):
    dt = x.type()
    try:
        if dt.is_integer():
            if isinstance(v, bool):
                raise ValueError
            if isinstance(v, int):
                i = v
            elif isinstance(v, str) and v.strip().lstrip("+-").isdigit():
                i = int(v.strip())
            else:
                f = float(v)
                if not f.is_integer():
                    raise ValueError
                i = int(f)
            if not -(2**63) <= i < 2**63:
                raise ValueError
            return i
        if dt.is_floating() or dt.is_decimal():
            return float(v)
        if dt.is_boolean():
            if isinstance(v, bool):
                return v
            if str(v).lower() in ("true", "false"):
                return str(v).lower() == "true"
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"Filter condition {i + 1}: {v!r} is not a value of column {col!r} ({dt}).") from None
    if v is None:
        raise InputError(f"Filter condition {i + 1}: use 'is null' to match missing values of {col!r}.")
    return str(v)
