"""Slice filters: a small, safe SQL-like expression language turned into Ibis.

``source = 'wiki' AND width <= 512`` is parsed with sqlglot and translated node
by node into an Ibis boolean expression over the sample's columns. Only
comparisons, ``AND``/``OR``/``NOT``, ``IN``, ``BETWEEN``, ``LIKE``, ``IS [NOT]
NULL``, column names and literals are accepted, so the same filter runs on any
engine and no SQL text reaches one.

Types are checked before anything runs (:func:`kind_of`): both sides of a comparison, ``IN``
and ``BETWEEN`` must be of one kind — numbers, text, true/false, dates, timestamps or times of
day — (a date or timestamp column also takes a quoted ISO date or time, ``d > '2024-05-01'``),
``LIKE`` needs text, ``NULL`` is only tested with ``IS [NOT] NULL``, and a nested or binary
column only with ``IS [NOT] NULL``. Anything else is an :class:`InputError` naming the filter,
the column and both types, never an engine's error.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import NamedTuple

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
        When the text does not parse, uses an unsupported construct, names a
        column ``table`` does not have (the columns are listed), or compares values
        of different kinds (the filter, the column and both types are named).
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
            a, b = _compatible(_operand(node.left, t, text), _operand(node.right, t, text), text)
            return fn(a.expr, b.expr)
    if isinstance(node, sx.In):
        if node.args.get("query") is not None:
            raise InputError(f"Sub-queries are not allowed in a filter: {text}.")
        x = _operand(node.this, t, text)
        values = [_compatible(x, _literal_operand(e, text), text)[1] for e in node.expressions]
        if not values:
            raise InputError(f"IN needs at least one value in the filter {text}.")
        return x.expr.isin([v.value for v in values])
    if isinstance(node, sx.Between):
        x = _operand(node.this, t, text)
        lo = _compatible(x, _operand(node.args["low"], t, text), text)[1]
        hi = _compatible(x, _operand(node.args["high"], t, text), text)[1]
        return x.expr.between(lo.expr, hi.expr)
    if isinstance(node, (sx.Like, sx.ILike)):
        x, pattern = _operand(node.this, t, text), _literal_operand(node.expression, text)
        word = "LIKE" if isinstance(node, sx.Like) else "ILIKE"
        for o in (x, pattern):
            if o.kind != "text":
                raise InputError(f"{word} matches text, but the filter {text} gives it {o.label}"
                                 + (": put the pattern in single quotes." if o is pattern else "."))
        return x.expr.like(pattern.value) if word == "LIKE" else x.expr.ilike(pattern.value)
    if isinstance(node, sx.Is):
        if isinstance(node.expression, sx.Null):
            return _operand(node.this, t, text).expr.isnull()
        raise InputError(f"Only IS NULL / IS NOT NULL are supported in a filter: {text}.")
    if isinstance(node, (sx.Column, sx.Literal, sx.Boolean, sx.Null, sx.Neg)):
        return _operand(node, t, text).expr
    raise InputError(
        f"Unsupported construct {shown(node.sql())} in the filter {text}. Use column comparisons "
        "(=, !=, <, <=, >, >=), IN (...), BETWEEN, LIKE, IS [NOT] NULL, AND, OR, NOT and literals."
    )


# -- types -------------------------------------------------------------------------------------

#: What a kind of value is called in messages.
KIND_NAMES = {"number": "a number", "text": "text", "boolean": "true/false", "date": "a date",
              "timestamp": "a timestamp", "time": "a time of day", "null": "NULL"}
#: Kinds a quoted literal may stand for: the text is parsed as one of them (ISO 8601).
_PARSE = {"date": _dt.date.fromisoformat, "timestamp": _dt.datetime.fromisoformat, "time": _dt.time.fromisoformat}
_FORMATS = {"date": "YYYY-MM-DD", "timestamp": "YYYY-MM-DD HH:MM:SS", "time": "HH:MM:SS"}
_NOT_LITERAL = object()


def kind_of(dtype) -> str:
    """The kind of an Ibis data type that filters compare: ``number`` (integers, floats,
    decimals), ``text``, ``boolean``, ``date``, ``timestamp``, ``time``, ``null``, or ``other``
    (structs, lists, maps, binary, …: only ``IS [NOT] NULL`` applies to them)."""
    if dtype.is_null():
        return "null"
    if dtype.is_boolean():
        return "boolean"
    if dtype.is_numeric():
        return "number"
    if dtype.is_string():
        return "text"
    for kind in ("date", "timestamp", "time"):
        if getattr(dtype, f"is_{kind}")():
            return kind
    return "other"


class _Operand(NamedTuple):
    """One side of a comparison: its expression, kind, how messages name it, and its Python
    value when it is a literal."""

    expr: object
    kind: str
    label: str
    value: object = _NOT_LITERAL


def _operand(node, t: ibis.Table, text: str) -> _Operand:
    while isinstance(node, sx.Paren):
        node = node.this
    if isinstance(node, sx.Column):
        name = node.name
        if node.table or name not in t.columns:
            raise InputError(
                f"Unknown column {shown(node.sql())} in the filter {text}. "
                f"Columns: {', '.join(repr(c) for c in t.columns)}."
            )
        dt = t[name].type()
        return _Operand(t[name], kind_of(dt), f"column {name!r} ({dt})")
    if isinstance(node, (sx.Literal, sx.Boolean, sx.Null, sx.Neg)):
        return _literal_operand(node, text)
    raise InputError(
        f"Unsupported construct {shown(node.sql())} in the filter {text}. Use column comparisons "
        "(=, !=, <, <=, >, >=), IN (...), BETWEEN, LIKE, IS [NOT] NULL, AND, OR, NOT and literals."
    )


def _literal_operand(node, text: str) -> _Operand:
    v = _literal(node, text)
    kind = ("null" if v is None else "boolean" if isinstance(v, bool) else "number" if isinstance(v, (int, float))
            else "text")
    shown_v = "NULL" if v is None else ("TRUE" if v else "FALSE") if kind == "boolean" else repr(v)
    return _Operand(ibis.literal(v) if v is not None else ibis.null(), kind,
                    f"{shown_v} ({KIND_NAMES[kind]})", value=v)


def _as_kind(o: _Operand, kind: str) -> _Operand | None:
    """A quoted literal read as a date, timestamp or time (ISO 8601), or None when it is not one."""
    if o.value is _NOT_LITERAL or o.kind != "text" or kind not in _PARSE:
        return None
    try:
        v = _PARSE[kind](o.value.strip())
    except ValueError:
        return None
    return _Operand(ibis.literal(v), kind, o.label, value=v)


def _compatible(a: _Operand, b: _Operand, text: str) -> tuple[_Operand, _Operand]:
    """``a`` and ``b`` made comparable (a quoted date/time read as one), or an
    :class:`InputError` naming the filter and both sides' types."""
    for o in (a, b):
        if o.kind == "null":
            raise InputError(f"The filter {text} compares with NULL, which matches nothing: use IS NULL or "
                             "IS NOT NULL to test for missing values.")
        if o.kind == "other":
            raise InputError(f"The filter {text} compares {o.label}, which a filter cannot compare: test it only "
                             "with IS NULL or IS NOT NULL.")
    if a.kind == b.kind:
        return a, b
    for x, y in ((a, b), (b, a)):  # a date/timestamp/time column and a quoted literal
        if x.kind in _PARSE and y.kind == "text" and y.value is not _NOT_LITERAL:
            parsed = _as_kind(y, x.kind)
            if parsed is None:
                raise InputError(f"The filter {text} compares {x.label} with {y.label}, which is not "
                                 f"{KIND_NAMES[x.kind]} (write it as '{_FORMATS[x.kind]}').")
            return (x, parsed) if x is a else (parsed, x)
    raise InputError(f"The filter {text} compares {a.label} with {b.label}: both sides must be of one kind"
                     f"{_hint(a, b)}.")


def _hint(a: _Operand, b: _Operand) -> str:
    """How to write the literal so that it fits the other side."""
    for col, lit in ((a, b), (b, a)):
        if lit.value is _NOT_LITERAL:
            continue
        if col.kind == "text" and lit.kind in ("number", "boolean"):
            return f"; put text in single quotes: '{lit.label.split(' (')[0]}'"
        if col.kind == "number" and lit.kind == "text":
            try:
                float(lit.value)
                return f"; write numbers without quotes: {lit.value.strip()}"
            except ValueError:
                return ""
        if col.kind == "boolean":
            return "; use TRUE or FALSE"
    return ""


def _literal(node, text: str, *, check: bool = True):
    """A literal's Python value (numbers checked to fit 64 bits unless ``check`` is False)."""
    while isinstance(node, sx.Paren):
        node = node.this
    if isinstance(node, sx.Neg):
        v = _literal(node.this, text, check=False)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return _checked_number(-v, node, text)
    if isinstance(node, sx.Boolean):
        return bool(node.this)
    if isinstance(node, sx.Null):
        return None
    if isinstance(node, sx.Literal):
        if node.is_string:
            return node.this
        s = node.this
        for parse in (int, float):
            try:
                v = parse(s)
            except ValueError:
                continue
            return _checked_number(v, node, text) if check else v
    raise InputError(f"Expected a literal value, got {shown(node.sql())} in the filter {text}.")


def _checked_number(v, node, text: str):
    """A number literal that a 64-bit column can be compared with: integers in the int64
    range, finite floats."""
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        raise InputError(f"The number {shown(node.sql(), 40)} in the filter {text} is out of range: integers must "
                         "lie between -2**63 and 2**63 - 1.")
    if isinstance(v, float) and not math.isfinite(v):
        raise InputError(f"The number {shown(node.sql(), 40)} in the filter {text} is not a finite 64-bit number.")
    return v


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
            v = c.get("value", "")
            if kind_of(x.type()) == "other":
                raise InputError(f"Filter condition {i + 1}: column {col!r} holds {x.type()} values, which a filter "
                                 "cannot search; use 'is null' or 'is not null'.")
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise InputError(f"Filter condition {i + 1}: 'contains' needs text to look for. Got "
                                 f"{_shown_value(v)} ({type(v).__name__}) instead.")
            p = x.cast("string").contains(str(v))
        else:
            v = _typed(c.get("value"), x, col, i)
            p = {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]
        pred = p if pred is None else pred & p
    return pred


def _typed(v, x, col: str, i: int):
    """``v`` (from a browser: JSON, mostly text) as a value of column ``x``: numbers from
    numbers or numeric text (integers exact, floats finite), text from text or a number,
    true/false from a boolean or 'true'/'false', dates and times from ISO 8601 text. Anything
    else, ``None`` and a value of a nested or binary column are refused, naming the condition,
    the value and the column's type."""
    dt = x.type()
    kind = kind_of(dt)
    if v is None:
        raise InputError(f"Filter condition {i + 1}: use 'is null' to match missing values of {col!r}.")
    if kind == "other":
        raise InputError(f"Filter condition {i + 1}: column {col!r} holds {dt} values, which a filter cannot compare; "
                         "use 'is null' or 'is not null'.")
    try:
        if isinstance(v, (list, tuple, dict, set)):
            raise ValueError
        if kind == "number":
            if isinstance(v, bool):
                raise ValueError
            if dt.is_integer():
                if isinstance(v, int):
                    n = v
                elif isinstance(v, str) and v.strip().lstrip("+-").isdigit():
                    n = int(v.strip())
                else:
                    f = float(v)
                    if not f.is_integer():
                        raise ValueError
                    n = int(f)
                if not -(2**63) <= n < 2**63:
                    raise ValueError
                return n
            f = float(v)
            if not math.isfinite(f):
                raise ValueError
            return f
        if kind == "boolean":
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.strip().lower() in ("true", "false"):
                return v.strip().lower() == "true"
            raise ValueError
        if kind in _PARSE:
            if kind == "timestamp" and isinstance(v, _dt.datetime) or kind == "date" and isinstance(v, _dt.date) \
                    and not isinstance(v, _dt.datetime) or kind == "time" and isinstance(v, _dt.time):
                return v
            if not isinstance(v, str):
                raise ValueError
            return _PARSE[kind](v.strip())
        # text
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError
        return str(v)
    except (TypeError, ValueError, OverflowError):
        what = f"; write it as '{_FORMATS[kind]}'" if kind in _FORMATS else ""
        raise InputError(f"Filter condition {i + 1}: {_shown_value(v)} ({type(v).__name__}) is not a value of column "
                         f"{col!r} ({dt}){what}.") from None


def _shown_value(v) -> str:
    """A value from a client as a message quotes it (cut to 60 characters)."""
    r = repr(v)
    return r if len(r) <= 60 else r[:60] + "…"
