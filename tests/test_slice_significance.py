"""A slice is significant only when its own 95% interval leaves 0 out (issue 51, item 4): a standard
error of 0 beside a drawn interval that crosses 0 (a slice's recall lift, ``--slice-by state`` on the
bundled example gave ``nsw`` SE 0 and an interval) never makes Holm name the slice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abcde.quality.verdict import slice_p_value, verdict
from test_verdict_recall import quality


def row(value, rl, dp=(0.001, -0.003, 0.005, 0.002)):
    keys = ("estimate", "ci_low", "ci_high", "std_err")
    return {"value": value, "delta_precision": dict(zip(keys, dp), n_judgements=300),
            "recall_lift": dict(zip(keys, rl), n_judgements=300)}


def test_a_zero_standard_error_beside_an_interval_that_crosses_zero_is_not_significant():
    q = quality("none", "down", slices={"state": [row("nsw", (-0.1087, -0.1459, 0.0104, 0.0)),
                                                  row("vic", (-0.02, -0.05, 0.01, 0.015))]})
    v = verdict(q)
    rows = {(x["metric"], x["value"]): x for x in v.facts["slices"]["rows"]}
    assert not rows[("recall_lift", "nsw")]["significant"], rows[("recall_lift", "nsw")]
    assert not any("nsw" in s and "significantly" in s for s in v.sentences)


def test_a_zero_standard_error_beside_an_interval_that_leaves_zero_out_is_significant():
    q = quality("none", "down", slices={"state": [row("nsw", (-0.1087, -0.1459, -0.1047, 0.0))]})
    rows = {(x["metric"], x["value"]): x for x in verdict(q).facts["slices"]["rows"]}
    assert rows[("recall_lift", "nsw")]["significant"]


@settings(max_examples=300, deadline=None)
@given(est=st.floats(-1, 1), lo_d=st.floats(0, 1), hi_d=st.floats(0, 1), se=st.sampled_from([0.0, 0.01, 1.0]),
       n=st.integers(1, 500))
def test_the_p_value_agrees_with_the_interval(est, lo_d, hi_d, se, n):
    """Unadjusted, p < 0.05 exactly when the 95% interval leaves 0 out, whatever the standard error says."""
    lo, hi = est - lo_d, est + hi_d
    p = slice_p_value({"estimate": est, "ci_low": lo, "ci_high": hi, "std_err": se, "n_judgements": n})
    excludes = lo > 0 or hi < 0
    if abs(lo) < 1e-9 or abs(hi) < 1e-9:
        return  # at the edge: rounding decides
    assert (p < 0.05) == excludes, (p, lo, hi)


def test_without_an_interval_the_standard_error_decides_as_before():
    assert slice_p_value({"estimate": 0.05, "std_err": 0.0, "n_judgements": 9}) == 0.0
    assert slice_p_value({"estimate": 0.0, "std_err": 0.0, "n_judgements": 9}) == 1.0
    assert slice_p_value({"estimate": 0.05, "std_err": 0.02, "n_judgements": 300}) == pytest.approx(0.0129, abs=1e-3)
