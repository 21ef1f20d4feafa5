"""Weights from past importance (paper, "Item weights"), checked by hand."""

import pyarrow as pa
import pytest

import abcde
from abcde.errors import InputError


def tbl(**cols):
    return pa.table(cols)


def test_weights_follow_the_paper_by_hand():
    # Past: p = {1, 2} with importance 10, q = {3} with importance 4. Intrinsic weights: 1:1, 2:3, 3:1, 4:1.
    # past(1) = 10*1/4 = 2.5, past(2) = 10*3/4 = 7.5, past(3) = 4, item 4 is new (0).
    past = tbl(item_id=[1, 2, 3], cluster_id=["p", "p", "q"])
    imp = tbl(cluster_id=["p", "q"], importance=[10.0, 4.0])
    items = tbl(item_id=[1, 2, 3, 4], weight=[1.0, 3.0, 1.0, 1.0], colour=["r", "g", "b", "r"])
    # Base: {1, 2, 3, 4} -> W = 14, split by intrinsic (total 6): 14/6, 42/6, 14/6, 14/6
    base = tbl(item_id=[1, 2, 3, 4], cluster_id=["A"] * 4)
    # Exp: {1, 2} -> 10 split 1:3 -> 2.5, 7.5; {3, 4} -> 4 split 1:1 -> 2, 2
    exp = tbl(item_id=[1, 2, 3, 4], cluster_id=["X", "X", "Y", "Y"])
    r = abcde.derive_weights(past, imp, base, exp, items=items)
    rows = {row["item_id"]: row for row in r.table.to_pylist()}
    assert rows[1]["weight_base"] == pytest.approx(14 / 6)
    assert rows[2]["weight_exp"] == pytest.approx(7.5)
    assert rows[4]["weight_exp"] == pytest.approx(2.0)
    assert rows[1]["weight"] == pytest.approx(max(14 / 6, 2.5))
    assert rows[2]["weight"] == pytest.approx(7.5)
    assert rows[3]["weight"] == pytest.approx(max(14 / 6, 2.0))
    assert rows[4]["colour"] == "r"
    assert r.summary["floored_items"] == 0
    rmin = abcde.derive_weights(past, imp, base, exp, items=items, combine="min")
    assert {row["item_id"]: row["weight"] for row in rmin.table.to_pylist()}[1] == pytest.approx(14 / 6)


def test_items_only_in_new_clusters_get_the_floor_and_are_counted():
    past = tbl(item_id=[1], cluster_id=["p"])
    imp = tbl(cluster_id=["p"], importance=[3.0])
    base = tbl(item_id=[1, 2], cluster_id=["A", "B"])
    exp = tbl(item_id=[1, 2], cluster_id=["A", "B"])
    r = abcde.derive_weights(past, imp, base, exp)
    w = {row["item_id"]: row["weight"] for row in r.table.to_pylist()}
    assert w == {1: 3.0, 2: 3.0}  # floor defaults to the smallest positive weight
    assert r.summary["floored_items"] == 1
    r2 = abcde.derive_weights(past, imp, base, exp, floor=0.5)
    assert {row["item_id"]: row["weight"] for row in r2.table.to_pylist()}[2] == 0.5


def test_negative_importance_is_rejected():
    with pytest.raises(InputError, match="negative importance in column .importance.. Importance must be a finite number >= 0"):
        abcde.derive_weights(tbl(item_id=[1], cluster_id=["p"]), tbl(cluster_id=["p"], importance=[-1.0]),
                             tbl(item_id=[1], cluster_id=["A"]), tbl(item_id=[1], cluster_id=["A"]))


def test_item_in_two_past_clusters_is_rejected():
    with pytest.raises(InputError, match=r"1 item ids appear in more than one row of past table \(first: 1\); "
                                         r"1 of them are in two or more different clusters"):
        abcde.derive_weights(tbl(item_id=[1, 1], cluster_id=["p", "q"]), tbl(cluster_id=["p"], importance=[1.0]),
                             tbl(item_id=[1], cluster_id=["A"]), tbl(item_id=[1], cluster_id=["A"]))
