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


def test_a_slice_whose_draws_show_nothing_is_its_range_never_a_point(tmp_path):
    """Many small slices (postcodes of the bundled example): a slice whose ΔPrecision draws show no
    spread (none judged in it, or all alike) has its feasible range as its interval, says so, and is
    never named significant; only an exact slice (self pairs only) has a point (issue 51)."""
    import json

    from click.testing import CliRunner

    from abcde.cli import main
    from abcde.examples import example_paths

    p = {k: str(v) for k, v in example_paths().items()}
    s = tmp_path / "s"
    for args in (["pairs", "--base", p["base"], "--exp", p["exp"], "--items", p["items"], "--budget", 300, "--seed", 3,
                  "--hide", "entity_id", "--slice-by", "postcode", "--out", s, "-q"],
                 ["judge", "oracle", s, "--oracle-column", "entity_id"]):
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code == 0, r.output
    d = json.loads(CliRunner().invoke(main, ["quality", str(s), "--slice-by", "postcode", "--json"]).output)
    rows = d["slices"]["postcode"]
    blind = [r for r in rows if "no spread" in (r["delta_precision"].get("note") or "")]
    assert blind, "the sample has slices whose draws show nothing"
    for r in rows:
        e = r["delta_precision"]
        if e["ci_low"] is not None and e["ci_low"] == e["ci_high"]:
            assert r["pairweight"] - r["self_term"] <= 1e-12 * r["pairweight"], r  # exact: self pairs only
    for r in blind:
        e = r["delta_precision"]
        assert [e["ci_low"], e["ci_high"]] == pytest.approx(e["range"])
    named = {x["value"] for x in d["verdict_facts"]["slices"]["rows"]
             if x["significant"] and x["metric"] == "delta_precision"}
    assert not named & {r["value"] for r in blind}
