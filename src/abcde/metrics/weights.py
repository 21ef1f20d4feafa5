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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ibis
import pyarrow as pa

from abcde.util import progress as _progress
from abcde.engine import Engine, resolve
from abcde.core.names import WEIGHT_COMBINE_RULES
from abcde.errors import InputError, examples_text
from abcde.core.inputs import bad_float_predicates, check_duplicates, describe, load_clustering, load_items, unify_id_types


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
            check_duplicates(eng, loaded["items"])
        loaded = unify_id_types(loaded)
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

    pt, bt, et = loaded["past"].table, loaded["base"].table, loaded["exp"].table
    it = loaded["items"].table if "items" in loaded else None

    def with_intrinsic(t: ibis.Table) -> ibis.Table:
        if it is None:
            return t.mutate(intr=ibis.literal(1.0), has_intr=ibis.literal(True))
        w = it.select(_iid="item_id", _w="weight")
        j = t.left_join(w, t.item_id == w._iid)
        return j.select(*t.columns, intr=j._w.fill_null(1.0), has_intr=j._iid.notnull())

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
            )
        )
        fl = floor if floor is not None else st["min_pos"]
        if fl is None:
            raise InputError(
                "Every derived weight is 0: no present item belongs to a cluster with past importance. "
                "Check that the past clustering and importance use the same ids, or pass --floor."
            )
        out = both.mutate(weight=ibis.ifelse(both.derived > 0, both.derived, float(fl)))
        out = out.select("item_id", "weight", "weight_base", "weight_exp")
        if it is not None and attrs:
            a = it.select("item_id", *attrs).rename(_aid="item_id")
            out = out.left_join(a, out.item_id == a._aid).select(*out.columns, *attrs)
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
