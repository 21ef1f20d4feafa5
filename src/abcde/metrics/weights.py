"""Item weights derived from past cluster importance (paper, "Item weights").

A past clustering's per-cluster importance is divided among the past cluster's
members in proportion to their intrinsic weights::

    past(i) = importance(Past(i)) · intrinsic(i) / intrinsic(Past(i))

For a present clustering ``X`` the weight of a cluster is the sum of its
members' past weights (0 for items that are new), divided again among its
members in proportion to their intrinsic weights::

    w_X(i) = Σ_{j ∈ X(i)} past(j) · intrinsic(i) / intrinsic(X(i))

This is done for Base and for Exp and combined into one weight per item (by
default the maximum). Items whose combined weight is 0 (in clusters made only
of new items) cannot be used as ABCDE weights, which must be positive: they get
the ``floor`` weight, and how many did is reported.

Only relative importance matters: importance values far from 1 (outside [2^-100, 2^100]) are
divided by a power of two while the weights are derived, so that their sums stay within double
precision, and the derived weights are multiplied back by it (both exact in binary floating
point). A range of importance too wide for double precision, or derived weights beyond it (a sum
of importance above 1.8e308, a share below 2.2e-308), is refused with :class:`InputError`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import ibis
import pyarrow as pa

from abcde.util import progress as _progress
from abcde.engine import Engine, resolve
from abcde.core.names import WEIGHT_COMBINE_RULES
from abcde.errors import InputError, examples_text
from abcde.core.inputs import (bad_float_predicates, check_duplicates, describe, divided_by, load_clustering,
                               load_items, private, scale_text, times_power_of_two, unify_id_types, weight_scale)


#: The columns of the derived weights' table; the items' attributes are carried beside them.
OUTPUT_COLUMNS = ("item_id", "weight", "weight_base", "weight_exp")


def _any_bad(x):
    """Null, NaN or infinite (portably, see :func:`abcde.core.inputs.bad_float_predicates`)."""
    is_nan, is_null, is_inf = bad_float_predicates(x)
    return is_nan | is_null | is_inf

COMBINE_RULES = WEIGHT_COMBINE_RULES


@dataclass(frozen=True)
class WeightsResult:
    """Derived item weights.

    Attributes
    ----------
    table
        Arrow table ``item_id, weight, weight_base, weight_exp`` plus the
        attribute columns of the items table, usable as ``--items``.
    summary
        Counts: items, items with zero derived weight that got the floor, past
        clusters without an importance row, past items without an intrinsic
        weight (given 1), and the rule and floor used.
    """

    table: pa.Table
    summary: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.summary)


def derive_weights(
    past,
    importance,
    base,
    exp,
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    importance_column: str = "importance",
    weight: str | None = None,
    combine: str = "max",
    floor: float | None = None,
    engine: Engine | str | None = None,
) -> WeightsResult:
    """Per-item weights for Base and Exp from a past clustering's cluster importance.

    Parameters
    ----------
    past
        The past clustering (``item_id``, ``cluster_id``).
    importance
        Per past cluster importance: ``cluster_id`` and ``importance_column``.
    base, exp
        The present clusterings.
    items
        Optional items table with intrinsic weights (column ``weight``, default
        1) and attributes, which are carried into the output.
    combine
        How to combine the Base and Exp weights: ``max`` (paper's example),
        ``min``, ``mean``, ``base`` or ``exp``.
    floor
        Weight for items whose combined weight is 0. ``None``: the smallest
        positive combined weight.
    """
    if combine not in COMBINE_RULES:
        raise InputError(f"combine must be one of {', '.join(COMBINE_RULES)}. Got {combine!r} instead.")
    if floor is not None and not (floor > 0 and floor != float("inf")):
        raise InputError(f"floor must be a positive finite number. Got {floor!r} instead.")
    eng = resolve(engine)
    with _progress.step("Reading inputs"):
        loaded, attrs = _read_clusterings(eng, past, base, exp, items, item_id=item_id, cluster_id=cluster_id,
                                          weight=weight)
        loaded = unify_id_types(loaded)
        imp, imp_label, imp_scale = _read_importance(eng, importance, cluster_id, importance_column)

    pt, bt, et = loaded["past"].table, loaded["base"].table, loaded["exp"].table
    it = loaded["items"].table if "items" in loaded else None

    # An item without an intrinsic weight weighs 1 in the items table's unit (its weights may have been
    # divided by a power of two as they were read, :func:`abcde.core.inputs.weight_scale`).
    unit = 1.0 if it is None else _unit_weight(eng, loaded, pt, bt, et)

    def with_intrinsic(t: ibis.Table) -> ibis.Table:
        if it is None:
            return t.mutate(intr=ibis.literal(1.0), has_intr=ibis.literal(True))
        w = it.select(_iid="item_id", _w="weight")
        j = t.left_join(w, t.item_id == w._iid)
        return j.select(*t.columns, intr=j._w.fill_null(ibis.literal(unit, type="float64")),
                        has_intr=j._iid.notnull())

    with _progress.step("Deriving weights"):
        p = with_intrinsic(pt)
        p = p.left_join(imp, p.c == imp.c).select(*p.columns, importance=imp.importance, has_imp=imp.c.notnull())
        p = p.mutate(
            past_w=p.importance.fill_null(0.0) * p.intr / p.intr.sum().over(group_by=p.c),
        )
        past_stats = eng.one(
            p.aggregate(
                no_intr=(~p.has_intr).sum(),
                no_imp_clusters=p.c.nunique(where=~p.has_imp),
            )
        )
        pw = p.select(_pid="item_id", past_w="past_w")

        def present(t: ibis.Table, name: str) -> ibis.Table:
            t = with_intrinsic(t)
            j = t.left_join(pw, t.item_id == pw._pid)
            j = j.select(*t.columns, past_w=j.past_w.fill_null(0.0))
            j = j.mutate(w=j.past_w.sum().over(group_by=j.c) * j.intr / j.intr.sum().over(group_by=j.c))
            return j.select(_id=j.item_id, **{name: j.w})

        wb, we = present(bt, "weight_base"), present(et, "weight_exp")
        both = wb.outer_join(we, wb._id == we._id)
        both = both.select(
            item_id=ibis.coalesce(both._id, both._id_right),
            weight_base=both.weight_base,
            weight_exp=both.weight_exp,
        )
        b0, e0 = both.weight_base.fill_null(0.0), both.weight_exp.fill_null(0.0)
        combined = {
            "max": ibis.greatest(b0, e0),
            "min": ibis.least(b0, e0),
            "mean": (b0 + e0) / 2,
            "base": b0,
            "exp": e0,
        }[combine]
        both = both.mutate(derived=combined)
        both = eng.materialize(both, "weights")
        st = eng.one(
            both.aggregate(
                n=both.count(),
                zero=(both.derived <= 0).sum(),
                min_pos=both.derived.min(where=both.derived > 0),
                lo=ibis.least(both.weight_base.min(where=both.weight_base > 0),
                              both.weight_exp.min(where=both.weight_exp > 0)),
                hi=ibis.greatest(both.weight_base.max(), both.weight_exp.max()),
            )
        )
        if st["min_pos"] is None and floor is None:
            raise InputError(
                "Every derived weight is 0: no present item belongs to a cluster with past importance. "
                "Check that the past clustering and importance use the same ids, or pass --floor."
            )
        _check_fits(st["lo"], st["hi"], imp_scale, importance_column, imp_label)
        if imp_scale != 1.0:  # back to the importance's unit (exact: checked to fit)
            e = math.frexp(imp_scale)[1] - 1
            both = both.mutate(weight_base=times_power_of_two(both.weight_base, e),
                               weight_exp=times_power_of_two(both.weight_exp, e),
                               derived=times_power_of_two(both.derived, e))
        fl = floor if floor is not None else float(st["min_pos"]) * imp_scale
        out = both.mutate(weight=ibis.ifelse(both.derived > 0, both.derived, float(fl)))
        out = out.select("item_id", "weight", "weight_base", "weight_exp")
        if it is not None and attrs:
            aid = private("aid")  # any attribute name but the id's
            a = it.select(**{aid: it.item_id}, **{c: it[c] for c in attrs})
            out = out.left_join(a, out.item_id == a[aid]).select(*out.columns, *attrs)
        table = eng.to_arrow(out.order_by("item_id"), step="weights")
    summary = {
        "items": int(st["n"]),
        "combine": combine,
        "floor": float(fl),
        "floored_items": int(st["zero"] or 0),
        "past_clusters_without_importance": int(past_stats["no_imp_clusters"] or 0),
        "past_items_without_intrinsic_weight": int(past_stats["no_intr"] or 0) if it is not None else 0,
    }
    return WeightsResult(table=table, summary=summary)



def _read_clusterings(eng, past, base, exp, items, *, item_id: str, cluster_id: str, weight) -> tuple[dict, list]:
    """The past, Base and Exp clusterings and the items table, loaded and checked (no duplicate
    ids; no attribute named like a column the output computes), and the items' attribute columns."""
    loaded = {
        "past": load_clustering(eng, past, role="past", item_id=item_id, cluster_id=cluster_id, out_cluster="c"),
        "base": load_clustering(eng, base, role="base", item_id=item_id, cluster_id=cluster_id, out_cluster="c"),
        "exp": load_clustering(eng, exp, role="exp", item_id=item_id, cluster_id=cluster_id, out_cluster="c"),
    }
    for v in loaded.values():
        check_duplicates(eng, v, "c")
    attrs: list[str] = []
    if items is not None:
        loaded["items"], attrs = load_items(eng, items, item_id=item_id, weight=weight)
        clash = [a for a in attrs if a in OUTPUT_COLUMNS]
        if clash:  # the output carries the attributes beside these: two columns of one name
            raise InputError(
                f"Attribute column(s) {', '.join(repr(c) for c in clash)} in {loaded['items'].label} have the "
                f"name of a column abcde computes for every item here ({', '.join(OUTPUT_COLUMNS)}); rename "
                f"them (for example to 'attr_{clash[0]}')."
            )
        check_duplicates(eng, loaded["items"])
    return loaded, attrs


def _read_importance(eng, importance, cluster_id: str, importance_column: str) -> tuple:
    """The importance table as ``c, importance`` (checked: both columns there, numeric, finite and
    ≥ 0, one row per cluster), its label, and the power of two its values were divided by (only
    relative importance matters: values outside [2^-100, 2^100] are scaled so that their sums stay
    within double precision; the derived weights are multiplied back by it at the end)."""
    imp_label = describe(importance, "importance")
    imp_raw = eng.read(importance, role="importance")
    for col in (cluster_id, importance_column):
        if col not in imp_raw.columns:
            raise InputError(
                f"Column '{col}' not found in {imp_label}. "
                f"Existing columns: {', '.join(repr(c) for c in imp_raw.columns)}."
            )
    if not imp_raw[importance_column].type().is_numeric():
        raise InputError(f"Column '{importance_column}' in {imp_label} must be numeric.")
    imp = imp_raw.select(c=imp_raw[cluster_id], importance=imp_raw[importance_column].cast("float64"))
    bad = eng.one(
        imp.aggregate(
            n=imp.count(),
            bad=(_any_bad(imp.importance) | (imp.importance < 0).fill_null(False))
            .fill_null(True)
            .sum(),
            dup=imp.count() - imp.c.nunique(),
            lo=imp.importance.min(where=imp.importance > 0),
            hi=imp.importance.max(),
        )
    )
    if bad["bad"]:
        bad_rows = imp.filter((_any_bad(imp.importance) | (imp.importance < 0).fill_null(False)).fill_null(True))
        first = eng.rows(bad_rows.select("c", "importance").order_by("c").limit(5))
        raise InputError(
            f"{bad['bad']} rows of {imp_label} have a null, NaN, infinite or negative importance in "
            f"column '{importance_column}'. Importance must be a finite number >= 0; first: "
            + ", ".join(f"{r['c']!r}: {r['importance']}" for r in first) + "."
        )
    if bad["dup"]:
        dups = imp.group_by("c").aggregate(n=imp.count()).filter(lambda t: t.n > 1).order_by("c").limit(5)
        raise InputError(
            f"{bad['dup']} past cluster ids appear in more than one row of {imp_label} (first: "
            f"{examples_text(r['c'] for r in eng.rows(dups))}). The importance table needs one row per cluster."
        )
    # Only relative importance matters: importance values outside [2^-100, 2^100] are divided by a
    # power of two (exact) so that their sums stay within double precision; the derived weights are
    # multiplied back by it at the end (checked to fit).
    imp_scale = 1.0
    if bad["hi"] is not None and bad["hi"] > 0:
        imp_scale = weight_scale(float(bad["lo"]), float(bad["hi"]), noun="importance values",
                                 what=f"The importance values in column '{importance_column}' of {imp_label}")
        if imp_scale != 1.0:
            imp = imp.mutate(importance=divided_by(imp.importance, imp_scale))
            _progress.note(f"The importance values in column '{importance_column}' of {imp_label} were divided "
                           f"by {scale_text(imp_scale)} while deriving the weights (only relative importance "
                           "matters); the derived weights are in the importance's own unit.")
    return imp, imp_label, imp_scale


def _check_fits(lo, hi, scale: float, column: str, label: str) -> None:
    """Refuse derived weights that double precision cannot hold in the importance's unit: a
    largest weight beyond the largest double (a sum of importance overflowed), or a smallest
    positive one below the smallest normal double (it would lose its precision, or become 0 and
    be taken for a new item's). ``lo``, ``hi``: the extremes computed in units of ``scale``."""
    if hi is None or lo is None:
        return
    top, bottom = math.log10(hi) + math.log10(scale), math.log10(lo) + math.log10(scale)
    if math.isinf(hi) or top >= math.log10(sys.float_info.max) or bottom < math.log10(sys.float_info.min):
        raise InputError(
            f"The weights derived from the importance values in column '{column}' of {label} would range from "
            f"about 1e{bottom:+.0f} to 1e{top:+.0f}, beyond double precision (about 2.2e-308 to 1.8e+308). Only "
            "relative importance matters: divide or multiply the importance values by one constant to bring them "
            "nearer 1.")


def _unit_weight(eng: Engine, loaded: dict, *clusterings: ibis.Table) -> float:
    """Weight 1 (an item without an intrinsic weight) in the unit of the items table's weights as
    read (divided by ``weight_scale``); refused when that is beyond the doubles (every intrinsic weight
    below about 1e-308) and some item of the clusterings has no row in the items table."""
    items = loaded["items"]
    try:
        return math.ldexp(1.0, 1 - math.frexp(items.weight_scale)[1])
    except OverflowError:
        pass
    ids = items.table.select("item_id")
    missing = sum(int(eng.one(c.select("item_id").anti_join(ids, "item_id").aggregate(n=ibis._.count()))["n"] or 0)
                  for c in clusterings)
    if missing:
        raise InputError(f"The intrinsic weights of the {items.label} are all below 1e-308, so an item without a row "
                         f"there ({missing} of them), which weighs 1, would outweigh them beyond double precision. "
                         "Give every item a weight, or multiply the weights by one constant to bring them nearer 1.")
    return 1.0  # never used: every item has its own weight
