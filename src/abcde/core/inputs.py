"""Reading and validating clusterings and item tables.

Each loader returns an Ibis table with canonical column names and raises
:class:`~abcde.errors.InputError` naming the file (or table), the column and
offending ids when the input breaks a rule. Nothing is dropped or coerced
silently: restriction to common items is reported by the caller.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Any

import ibis
import ibis.expr.datatypes as dt

from abcde.engine import Engine
from abcde.errors import InputError, examples_text
from abcde.util import progress as _progress

DEFAULT_WEIGHT_COLUMN = "weight"
#: The prefix of the helper columns abcde computes beside a user's columns (a slice column, say, in a
#: group-by): an attribute column may not take it, so no input column can meet one of them.
PRIVATE_PREFIX = "__abcde_"


def private(name: str) -> str:
    """The name abcde computes ``name`` under beside a user's columns (no input column takes it)."""
    return PRIVATE_PREFIX + name

#: The columns abcde adds to every item's row beside its attributes (the exploration sample, the
#: population table of ``explore serve``): an attribute of one of these names would make two columns
#: of one name there.
PER_ITEM_COLUMNS = ("base_cluster", "exp_cluster", "split_rate", "merge_rate", "jaccard_distance", "split_distance",
                    "merge_distance", "draw_count", "importance_weight")


def describe(source, role: str) -> str:
    """How an input is named in messages: ``base file 'b.parquet'`` or ``base table``."""
    if isinstance(source, (str, os.PathLike)):
        return f"{role} file '{os.fspath(source)}'"
    return f"{role} table"


def input_names(**inputs) -> dict:
    """How inputs are recorded in a sample's metadata: paths as given, tables by type."""
    return {k: (os.fspath(v) if isinstance(v, (str, os.PathLike)) else type(v).__name__)
            for k, v in inputs.items() if v is not None}


@dataclass(frozen=True)
class Inputs:
    """What every computation starts from: the Baseline and Experiment clusterings, the
    optional items table, and how their columns are named.

    Parameters
    ----------
    base, exp
        The clusterings: paths (Parquet or CSV, local or a URI the engine reads) or
        pandas/polars/Arrow/Ibis tables, one row per item with its id and its cluster.
    items
        Optional items table: the item id, an optional weight column and attributes.
    item_id, cluster_id
        Column names in all inputs (``base_cluster_id`` / ``exp_cluster_id`` override
        the cluster id column for one side).
    weight
        Weight column of ``items``; ``None`` uses ``weight`` if present, else 1.
    """

    base: Any
    exp: Any
    items: Any = None
    item_id: str = "item_id"
    cluster_id: str = "cluster_id"
    base_cluster_id: str | None = None
    exp_cluster_id: str | None = None
    weight: str | None = None

    @classmethod
    def of(cls, base, exp=None, **columns) -> "Inputs":
        """``base`` if it is already an :class:`Inputs` (then ``exp`` and ``columns`` must be
        left out), else ``Inputs(base, exp, **columns)``."""
        if isinstance(base, cls):
            given = {k: v for k, v in columns.items() if v is not None and v != getattr(cls, k, None)}
            if exp is not None or given:
                raise InputError("Pass either an Inputs object or the inputs and their column names, not both "
                                 f"(got Inputs and also {', '.join(['exp'] * (exp is not None) + sorted(given))}).")
            return base
        if exp is None:
            raise InputError("Both a Base and an Exp clustering are needed (exp is missing).")
        return cls(base, exp, **columns)

    def base_cluster(self) -> str:
        return self.base_cluster_id or self.cluster_id

    def exp_cluster(self) -> str:
        return self.exp_cluster_id or self.cluster_id

    def names(self) -> dict:
        """How the inputs are recorded in a sample's metadata: paths as given, tables by type."""
        return input_names(base=self.base, exp=self.exp, items=self.items)


@dataclass(frozen=True)
class Loaded:
    """A validated input table and how to name it in messages (an items table: also the power
    of two its weights were divided by, :func:`weight_scale`)."""

    table: ibis.Table
    label: str
    rows: int = 0
    weight_scale: float = 1.0


def _require_columns(t: ibis.Table, label: str, columns: dict[str, str]) -> None:
    existing = list(t.columns)
    for what, col in columns.items():
        if col not in existing:
            hint = ""
            if len(existing) == 1 and any(sep in existing[0] for sep in ",;\t|"):
                hint = (" The file was read as one column whose name holds separators: its rows could not be "
                        "split into columns (check its quoting and delimiter).")
            raise InputError(
                f"Column '{col}' ({what}) not found in {label}. "
                f"Existing columns: {', '.join(repr(c) for c in existing)}.{hint}"
            )


def _check_id_type(t: ibis.Table, col: str, label: str) -> None:
    typ = t[col].type()
    if not (typ.is_integer() or typ.is_string()):
        raise InputError(
            f"Column '{col}' in {label} has type {typ}; item ids must be integers or strings."
        )


def load_clustering(
    engine: Engine, source, *, role: str, item_id: str, cluster_id: str, out_cluster: str
) -> Loaded:
    """Read a clustering: one row per item, ``item_id`` and its cluster id.

    Returns a table with columns ``item_id`` and ``out_cluster``.

    Raises
    ------
    InputError
        Missing file or column, an empty clustering, null item or cluster ids, or
        an item that appears in more than one row (e.g. in two clusters).
    """
    label = describe(source, role)
    raw = engine.read(source, role=role)
    _require_columns(raw, label, {"item id": item_id, "cluster id": cluster_id})
    _check_id_type(raw, item_id, label)
    t = raw.select(item_id=raw[item_id], **{out_cluster: raw[cluster_id]})
    cl = t[out_cluster]
    # A NaN cluster id (pandas' "no cluster") is as missing as a null one. Tested through its text:
    # DuckDB 2.0 folds isnan() to FALSE from Parquet statistics, which leave NaN out.
    floating = cl.type().is_floating()
    missing = (cl.isnull() | (cl.cast("string").lower() == "nan").fill_null(False)) if floating else cl.isnull()

    stats = engine.one(
        t.aggregate(
            rows=t.count(),
            null_items=t.item_id.isnull().sum(),
            null_clusters=missing.sum(),
        ),
        step=f"validate {role}",
    )
    if stats["rows"] == 0:
        raise InputError(f"The {label} is empty: a clustering needs at least one item.")
    if stats["null_items"]:
        raise InputError(
            f"{stats['null_items']} rows of {label} have a null item id in column '{item_id}'. "
            "Every row needs an item id."
        )
    if stats["null_clusters"]:
        bad = engine.rows(t.filter(missing).item_id.name("id").as_table().limit(5))
        raise InputError(
            f"{stats['null_clusters']} items of {label} have a {'null (or NaN)' if floating else 'null'} cluster id in column "
            f"'{cluster_id}' (first: {examples_text(r['id'] for r in bad)}). "
            "Every item must belong to a cluster."
        )
    return Loaded(t, label, int(stats["rows"]))


def load_items(engine: Engine, source, *, item_id: str, weight: str | None) -> tuple[Loaded, list[str]]:
    """Read the items table: item id, optional weight, attribute columns.

    ``weight=None`` uses a column named ``weight`` when there is one and weight 1
    otherwise; a name given explicitly must exist. Returns the table with columns
    ``item_id``, ``weight`` (float64) and the attributes, plus the attribute names.

    Weights outside ``[2^-100, 2^100]`` are divided by a power of two that puts the largest in
    [1, 2) (:func:`weight_scale`; exact, and said in a note): only relative weights matter, and
    the sums, squares and products of weights the metrics and samplers compute then stay within
    double precision at any scale.

    Raises
    ------
    InputError
        Also when the largest weight is more than ``2^MAX_SPAN_EXP`` times the smallest.
    """
    label = describe(source, "items")
    raw = engine.read(source, role="items")
    _require_columns(raw, label, {"item id": item_id})
    _check_id_type(raw, item_id, label)
    if weight is not None:
        _require_columns(raw, label, {"weight": weight})
    wcol = weight if weight is not None else (DEFAULT_WEIGHT_COLUMN if DEFAULT_WEIGHT_COLUMN in raw.columns else None)
    attrs = [c for c in raw.columns if c not in (item_id, wcol)]
    if wcol is not None:
        wtype = raw[wcol].type()
        if not wtype.is_numeric() or wtype.is_boolean():
            raise InputError(f"Column '{wcol}' (weight) in {label} has type {wtype}; weights must be numbers.")
        wexpr = raw[wcol].cast("float64")
    else:
        wexpr = ibis.literal(1.0, type=dt.float64)
    reserved = {"item_id", "weight"}
    clash = [a for a in attrs if a in reserved]
    if clash:
        raise InputError(
            f"Attribute column(s) {', '.join(repr(c) for c in clash)} in {label} clash with abcde's own "
            "column names; rename them."
        )
    computed = [a for a in attrs if a in PER_ITEM_COLUMNS]
    if computed:
        raise InputError(
            f"Attribute column(s) {', '.join(repr(c) for c in computed)} in {label} have the name of a column "
            f"abcde computes for every item ({', '.join(PER_ITEM_COLUMNS)}), and the per-item tables would hold "
            f"two columns of that name; rename them (for example to 'attr_{computed[0]}')."
        )
    private = [a for a in attrs if str(a).startswith(PRIVATE_PREFIX)]
    if private:
        raise InputError(
            f"Attribute column(s) {', '.join(repr(c) for c in private)} in {label} start with "
            f"'{PRIVATE_PREFIX}', which abcde keeps for the columns it computes; rename them."
        )
    t = raw.select(item_id=raw[item_id], weight=wexpr, **{a: raw[a] for a in attrs})

    w = t.weight
    is_nan, is_null, is_inf = bad_float_predicates(w)
    stats = engine.one(
        t.aggregate(
            rows=t.count(),
            null_items=t.item_id.isnull().sum(),
            null_w=is_null.sum(),
            nan_w=is_nan.sum(),
            inf_w=is_inf.sum(),
            nonpos_w=(w <= 0).fill_null(False).sum(),
            min_w=w.min(),
            max_w=w.max(),
        ),
        step="validate items",
    )
    if stats["rows"] == 0:
        raise InputError(f"The {label} is empty.")
    if stats["null_items"]:
        raise InputError(f"{stats['null_items']} rows of {label} have a null item id in column '{item_id}'.")
    problems = [
        ("null", stats["null_w"] or 0, is_null),
        ("NaN", stats["nan_w"] or 0, is_nan),
        ("infinite", stats["inf_w"] or 0, is_inf),
        ("zero or negative", stats["nonpos_w"] or 0, w <= 0),
    ]
    for what, n, pred in problems:
        if n:
            # An aggregate FILTER, not a WHERE: DuckDB 2.0 prunes Parquet row groups holding
            # NaN when a WHERE clause tests for NaN, and would find no example.
            pairs = ibis.struct({"item_id": t.item_id, "weight": t.weight})
            ex = engine.one(t.aggregate(ex=pairs.collect(where=pred.fill_null(False))[:5]))["ex"]
            raise InputError(
                f"{n} items in {label} have a {what} weight in column '{wcol}' "
                f"(first: {_weight_examples(ex, what)}). "
                "Weights must be positive finite numbers."
            )
    scale = 1.0
    if wcol is not None:
        t, scale = _scaled_weights(engine, t, float(stats["min_w"]), float(stats["max_w"]), label=label,
                                   column=wcol)
    return Loaded(t, label, int(stats["rows"]), scale), attrs


def check_duplicates(engine: Engine, loaded: Loaded, cluster: str | None = None) -> None:
    """Raise when an item id appears in more than one row of one input.

    For a clustering this means an item in two clusters (or one row repeated).
    It runs a group-by over the whole input; :func:`abcde.core.diff.build_diff`
    detects duplicates from row counts it has anyway and calls this only to name
    the culprit. Callers that have no such counts (weights) call it directly.
    """
    t, label = loaded.table, loaded.label
    aggs = {"rows": t.count()}
    if cluster:
        aggs["clusters"] = t[cluster].nunique()
    dup = t.group_by("item_id").aggregate(**aggs)
    dup = dup.filter(dup.rows > 1)
    stats = {"n": dup.count()}
    if cluster:
        stats["multi"] = (dup.clusters > 1).sum()
    nd = engine.one(dup.aggregate(**stats), step=f"duplicates in {label}")
    if not nd.get("n"):
        return
    ex = engine.rows(dup.order_by("item_id").limit(5), step=f"duplicates in {label}")
    if cluster:
        what = (
            f"; {nd['multi']} of them are in two or more different clusters"
            if nd["multi"]
            else "; each repeats the same cluster"
        )
        rule = "A clustering must put each item in exactly one cluster."
    else:
        what, rule = "", "The items table needs one row per item."
    raise InputError(
        f"{nd['n']} item ids appear in more than one row of {label} "
        f"(first: {examples_text(r['item_id'] for r in ex)}){what}. {rule}"
    )


def bad_float_predicates(x: ibis.Value) -> tuple[ibis.Value, ibis.Value, ibis.Value]:
    """``(is NaN, is null, is ±infinite)`` of a float column, each never null, the same on
    every engine. (Ibis 12 on Spark counts NaN as null in ``isnull`` and compiles
    ``isinf`` to FALSE; both engines order NaN above every number.)"""
    is_nan = x.isnan().fill_null(False)
    is_null = x.isnull() & ~is_nan
    is_inf = (x.abs() > ibis.literal(sys.float_info.max)).fill_null(False) & ~is_nan
    return is_nan, is_null, is_inf


def _weight_examples(rows, what: str = "") -> str:
    # The rows were selected as NaN, but Spark's Arrow route (via pandas) returns NaN as None.
    return ", ".join("%r: %s" % (r["item_id"], "nan" if what == "NaN" else r["weight"]) for r in rows)


def unify_id_types(loaded: dict[str, Loaded]) -> dict[str, Loaded]:
    """Make the ``item_id`` columns of all inputs comparable.

    Integer ids of different widths are widened to int64; strings stay strings.
    Integers in one input and strings in another are an error (no silent casting).
    """
    types = {k: v.table.item_id.type() for k, v in loaded.items()}
    kinds = {k: ("integer" if t.is_integer() else "string") for k, t in types.items()}
    if len(set(kinds.values())) > 1:
        desc = "; ".join(f"{loaded[k].label}: {types[k]}" for k in loaded)
        raise InputError(
            "Item ids cannot be matched between inputs: they are integers in some and strings in "
            f"others ({desc}). Convert the ids to one type in all files."
        )
    if set(kinds.values()) == {"integer"}:
        return {
            k: Loaded(v.table.mutate(item_id=v.table.item_id.cast("int64")), v.label, v.rows, v.weight_scale)
            for k, v in loaded.items()
        }
    return loaded


# --------------------------------------------------------------------------- weights at any scale
#: Weights are used as given when every one lies in [2^-UNSCALED_EXP, 2^UNSCALED_EXP] (about 7.9e-31
#: to 1.3e30): there, every sum, square and product of up to three weights that the metrics, pair
#: weights, self term and samplers compute stays far inside double precision's normal range.
UNSCALED_EXP = 100
#: The widest ratio between the largest and the smallest weight abcde computes with: 2^MAX_SPAN_EXP
#: (about 1.6e60). Beyond it the squares of the smallest weights (the self term's Σ w²) and the
#: products of three weights in the stable pair weights would leave double precision's normal range
#: (2.2e-308) and silently drop out of their sums.
MAX_SPAN_EXP = 200


def weight_scale(lo: float, hi: float, *, what: str, examples: tuple[str, str] = ("", ""),
                 noun: str = "weights") -> float:
    """The power of two to divide weights in ``[lo, hi]`` (``0 < lo <= hi < ∞``) by, so that
    every computation on them is exact up to rounding: 1.0 when they lie in
    ``[2^-UNSCALED_EXP, 2^UNSCALED_EXP]`` (used as given), else ``2^(e-1)`` with
    ``hi = m·2^e`` (``0.5 <= m < 1``), which puts the largest weight in [1, 2).

    Only relative weights matter (every metric, pair weight and estimate is scale-free), and
    dividing by a power of two is exact in binary floating point unless the result leaves the
    normal range, which :data:`MAX_SPAN_EXP` rules out.

    Raises
    ------
    InputError
        When ``hi / lo`` exceeds ``2^MAX_SPAN_EXP`` (:func:`too_wide`); ``what`` names the weights
        in the message, ``examples`` the items holding ``lo`` and ``hi`` (e.g. ``" (item 'a')"``),
        ``noun`` what they are (weights, importance values).
    """
    if too_wide(lo, hi):
        limit = f"{2.0 ** MAX_SPAN_EXP:.1e}"
        raise InputError(
            f"{what} range from {lo:.6g}{examples[0]} to {hi:.6g}{examples[1]}, a ratio of about "
            f"{_power_of_ten(hi, lo)}: too wide for double precision, in which {noun} more than 2^{MAX_SPAN_EXP} "
            f"(about {limit}) times smaller than the largest drop out of the sums of squared weights and of pair "
            f"weights. Only relative {noun} matter: raise the smallest (or lower the largest) to within a factor "
            f"{limit} of the largest.")
    if math.ldexp(1.0, -UNSCALED_EXP) <= lo and hi <= math.ldexp(1.0, UNSCALED_EXP):
        return 1.0
    return math.ldexp(1.0, math.frexp(hi)[1] - 1)


def too_wide(lo: float, hi: float) -> bool:
    """Whether ``hi / lo`` exceeds ``2^MAX_SPAN_EXP`` (compared by binary exponents: the quotient
    itself may overflow)."""
    return math.frexp(hi)[1] - math.frexp(lo)[1] > MAX_SPAN_EXP


def _power_of_ten(hi: float, lo: float) -> str:
    """``hi / lo`` as ``1e+250`` (the quotient itself may not be a finite double)."""
    return f"1e{math.log10(hi) - math.log10(lo):+.0f}"


def scale_text(scale: float) -> str:
    """A power of two as ``2^498 (about 8.2e+149)``."""
    return f"2^{math.frexp(scale)[1] - 1} (about {scale:.2g})"


def _scaled_weights(engine: Engine, t: ibis.Table, lo: float, hi: float, *, label: str,
                    column: str) -> tuple[ibis.Table, float]:
    """``t`` with its ``weight`` column divided by :func:`weight_scale` (in the engine, so every
    engine computes the same exact quotients), saying so when it is not 1; and the scale."""
    what = f"The weights in column '{column}' of {label}"
    examples = ("", "")
    if too_wide(lo, hi):  # name the items holding the smallest and the largest weight
        examples = tuple(f" (item {_item_with_weight(engine, t, v)})" for v in (lo, hi))
    scale = weight_scale(lo, hi, what=what, examples=examples)
    if scale == 1.0:
        return t, scale
    _progress.note(f"{what} range from {lo:.6g} to {hi:.6g}; they were divided by {scale_text(scale)} so "
                   "that their sums and products stay within double precision. Only relative weights matter: "
                   "every metric is unchanged, but the weights shown (total, cluster, slice and item weights) are "
                   "in that unit.")
    return t.mutate(weight=divided_by(t.weight, scale)), scale


def divided_by(x: ibis.Value, scale: float) -> ibis.Value:
    """``x / scale`` for a power of two ``scale``, exact whenever the quotient is a normal number:
    a product with ``1/scale``, written as two factors when ``1/scale`` alone is beyond the
    doubles (a denormal ``scale``: weights below 2.2e-308 scaled up)."""
    return times_power_of_two(x, 1 - math.frexp(scale)[1])


def times_power_of_two(x: ibis.Value, exponent: int) -> ibis.Value:
    """``x · 2^exponent`` in the engine, each literal factor a normal double (exact in binary
    floating point wherever the product is normal)."""
    for part in ([exponent] if -1022 <= exponent <= 1023 else [exponent // 2, exponent - exponent // 2]):
        x = x * ibis.literal(math.ldexp(1.0, part), type=dt.float64)
    return x


def _item_with_weight(engine: Engine, t: ibis.Table, value: float) -> str:
    """The first item id (in id order) whose weight is ``value``, for a message."""
    rows = engine.rows(t.filter(t.weight == value).select("item_id").order_by("item_id").limit(1), step="weight range")
    return examples_text(r["item_id"] for r in rows)
