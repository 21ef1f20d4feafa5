"""What restricting Base and Exp to their common items removes, and the duplicate-id check.

Every join strategy (:mod:`abcde.core.join_zip`, :mod:`abcde.core.join_hash`,
:mod:`abcde.core.join_buckets`) ends in a :class:`Restriction`: the items both clusterings share
(the population ``T`` of every metric) and what was left out, counted, weighed and named by a few
examples. Nothing is dropped without being counted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ibis

from abcde.core.inputs import Loaded, check_duplicates
from abcde.engine import Engine
from abcde.errors import InputError, examples_text

N_EXAMPLES = 5


@dataclass(frozen=True)
class Restriction:
    """What restricting Base and Exp to their common items removed.

    Attributes
    ----------
    common_items
        Items in both clusterings (the population ``T`` of every metric).
    base_only_items, base_only_weight, base_only_examples
        Items only in Base: how many, their weight (from the items table, or 1
        each; items with no row in the items table count 0 weight), a few ids.
    exp_only_items, exp_only_weight, exp_only_examples
        The same for items only in Exp.
    items_only_items, items_only_examples
        Rows of the items table whose item is in neither clustering.
    """

    common_items: int
    base_only_items: int = 0
    base_only_weight: float = 0.0
    base_only_examples: list = field(default_factory=list)
    exp_only_items: int = 0
    exp_only_weight: float = 0.0
    exp_only_examples: list = field(default_factory=list)
    items_only_items: int = 0
    items_only_examples: list = field(default_factory=list)

    @property
    def restricted(self) -> bool:
        """True when any item was removed."""
        return bool(self.base_only_items or self.exp_only_items)

    def to_dict(self) -> dict:
        return {
            "common_items": self.common_items,
            "base_only_items": self.base_only_items,
            "base_only_weight": self.base_only_weight,
            "base_only_examples": list(self.base_only_examples),
            "exp_only_items": self.exp_only_items,
            "exp_only_weight": self.exp_only_weight,
            "exp_only_examples": list(self.exp_only_examples),
            "items_only_items": self.items_only_items,
            "items_only_examples": list(self.items_only_examples),
        }


def describe_restriction(r: dict, names: tuple[str, str] = ("Base", "Exp"), fmt=str) -> list[str]:
    """One sentence per kind of item that restricting to the common items removed (empty when
    nothing was); ``r`` is :meth:`Restriction.to_dict`, ``fmt`` formats weights."""
    b, e = names
    lines = []
    for side, name in (("base", b), ("exp", e)):
        if r[f"{side}_only_items"]:
            lines.append(f"{r[f'{side}_only_items']:,} items (weight {fmt(r[f'{side}_only_weight'])}) only in {name} "
                         f"were excluded, e.g. {', '.join(map(str, r[f'{side}_only_examples']))}")
    if r["items_only_items"]:
        lines.append(f"{r['items_only_items']:,} rows of the items table are in neither clustering, e.g. "
                     f"{', '.join(map(str, r['items_only_examples']))}")
    return lines


def restriction_of(eng: Engine, loaded: dict[str, Loaded], fw: ibis.Table, frag_all: ibis.Table,
                   labels: dict[str, str], roles: tuple[str, str]) -> Restriction:
    """What restricting to the common items removes, from the membership fragments ``frag_all``
    (:func:`abcde.core.join_common.membership_fragments`); duplicate ids refused
    (:func:`check_duplicate_ids`); no common item, or a common item without an items-table row,
    refused. ``fw`` (the joined rows, :func:`abcde.core.join_hash.full_outer_join`) is read only
    for rows of items not in every input (examples, and ids in one input only), so it may hold
    just those rows (:func:`abcde.core.join_buckets.large_restriction`)."""
    rb, re_ = roles
    side = eng.one(
        frag_all.aggregate(
            common_n=frag_all.n.sum(where=frag_all.in_b & frag_all.in_e),
            common_no_w=frag_all.n_no_w.sum(where=frag_all.in_b & frag_all.in_e),
            b_only_n=frag_all.n.sum(where=frag_all.in_b & ~frag_all.in_e),
            b_only_w=frag_all.w.sum(where=frag_all.in_b & ~frag_all.in_e),
            e_only_n=frag_all.n.sum(where=~frag_all.in_b & frag_all.in_e),
            e_only_w=frag_all.w.sum(where=~frag_all.in_b & frag_all.in_e),
            items_only_n=frag_all.n.sum(where=~frag_all.in_b & ~frag_all.in_e),
            rows_b=frag_all.n.sum(where=frag_all.in_b),
            rows_e=frag_all.n.sum(where=frag_all.in_e),
            rows_w=(frag_all.n - frag_all.n_no_w).sum(),
        ),
        step="restriction",
    )
    check_duplicate_ids(eng, loaded, fw, side)
    common_n = int(side.get("common_n") or 0)
    b_only = int(side.get("b_only_n") or 0)
    e_only = int(side.get("e_only_n") or 0)

    def examples(pred) -> list:
        rows = eng.rows(fw.filter(pred).select("item_id").order_by("item_id").limit(N_EXAMPLES), step="examples")
        return [r["item_id"] for r in rows]

    if common_n == 0:
        raise InputError(
            f"The {labels['base']} and the {labels['exp']} have no item in common "
            f"({b_only} items only in {rb}, first: {examples_text(examples(fw.in_b & ~fw.in_e))}; "
            f"{e_only} only in {re_}, first: {examples_text(examples(~fw.in_b & fw.in_e))}). "
            "Check that both use the same item ids."
        )
    no_w = int(side.get("common_no_w") or 0)
    if no_w:
        ex = examples(fw.in_b & fw.in_e & ~fw.has_w)
        raise InputError(
            f"{no_w} items of the clusterings have no row in the {labels['items']} "
            f"(first: {examples_text(ex)}). Every item needs a row (and weight) there."
        )
    items_only = int(side.get("items_only_n") or 0)
    return Restriction(
        common_items=common_n,
        base_only_items=b_only,
        base_only_weight=float(side.get("b_only_w") or 0.0),
        base_only_examples=examples(fw.in_b & ~fw.in_e) if b_only else [],
        exp_only_items=e_only,
        exp_only_weight=float(side.get("e_only_w") or 0.0),
        exp_only_examples=examples(~fw.in_b & fw.in_e) if e_only else [],
        items_only_items=items_only,
        items_only_examples=examples(~fw.in_b & ~fw.in_e) if items_only else [],
    )


def check_duplicate_ids(eng: Engine, loaded: dict[str, Loaded], fw: ibis.Table, side: dict) -> None:
    """Refuse duplicate item ids, found from row counts instead of a group-by over all items.

    Joining the inputs on the id gives an id with counts (b, e, i) in Base, Exp and items
    max(b,1)*max(e,1)*max(i,1) rows. For each input X, the joined rows of ids present in X
    sum to at least rows(X), id by id, with equality exactly when the id's counts in the
    *other* inputs are all 1. So the three equalities below hold iff every id present in two
    or more inputs is unique in each of them. Ids present in one input only are checked
    separately (usually few rows).
    """
    has_items = "items" in loaded
    counts = {
        "base": int(side.get("rows_b") or 0),
        "exp": int(side.get("rows_e") or 0),
        "items": int(side.get("rows_w") or 0),
    }
    for key, got in counts.items():
        if key in loaded and got != loaded[key].rows:
            for k, v in loaded.items():
                check_duplicates(eng, v, f"{k}_cluster" if k != "items" else None)
    singles = [("base", fw.in_b & ~fw.in_e & ~fw.has_w if has_items else fw.in_b & ~fw.in_e, "b_only_n"),
               ("exp", ~fw.in_b & fw.in_e & ~fw.has_w if has_items else ~fw.in_b & fw.in_e, "e_only_n"),
               ("items", ~fw.in_b & ~fw.in_e, "items_only_n")]
    for key, pred, stat in singles:
        if key in loaded and side.get(stat):
            only = fw.filter(pred)
            d = only.group_by("item_id").aggregate(rows=only.count())
            if eng.one(d.filter(d.rows > 1).aggregate(n=ibis._.count()), step="duplicate ids")["n"]:
                check_duplicates(eng, loaded[key], f"{key}_cluster" if key != "items" else None)
