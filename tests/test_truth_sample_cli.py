"""``abcde pointwise --truth T --truth-sample DESIGN`` (issue 41): the population's estimates with
their intervals in the terminal and in ``--json`` (``estimates``: ``precision``, ``recall``, ``f1``,
and ``delta_precision``, ``delta_recall`` with ``--base/--exp``), the numbers the library gives; a
partial truth without a design says what its numbers describe; wrong combinations are usage errors.
The bundled FEBRL 3 example, the CLI in-process."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths
from abcde.metrics.truth_sample import estimate_pointwise
from test_truth_sample_report import poisson_truth, sampled_truth

P = {k: str(v) for k, v in example_paths().items()}
FIELDS = ("estimate", "std_err", "ci_low", "ci_high")


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


@pytest.fixture(scope="module")
def truths(tmp_path_factory):
    d = tmp_path_factory.mktemp("truth_sample_cli")
    t20, tp = d / "t20.parquet", d / "tp.parquet"
    pq.write_table(sampled_truth(), t20)
    pq.write_table(poisson_truth(), tp)
    return t20, tp


def test_two_clusterings_json_carries_the_estimates_and_paired_differences(truths):
    t20, _ = truths
    r = cli("pointwise", "--truth", t20, "--base", P["base"], "--exp", P["exp"], "--items", P["items"],
            "--truth-sample", "uniform", "--json")
    d = json.loads(r.output)
    lib = estimate_pointwise(t20, base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform").to_dict()
    for k in ("delta_precision", "delta_recall"):
        e = d["estimates"][k]
        assert all(f in e for f in FIELDS), e
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"]
        assert e["estimate"] == pytest.approx(lib["estimates"][k]["estimate"], abs=1e-12)
    assert d["truth_sample"] == lib["truth_sample"]


def test_one_clustering_table_and_json(truths):
    _, tp = truths
    r = cli("pointwise", "--truth", tp, "--clustering", P["exp"], "--items", P["items"], "--truth-sample", "incl")
    out = r.output
    assert "The population's Precision, Recall and F1, estimated from" in out and "95% interval" in out
    assert "Design:" in out and "restricted" in out
    d = json.loads(cli("pointwise", "--truth", tp, "--clustering", P["exp"], "--items", P["items"],
                       "--truth-sample", "incl", "--json").output)
    for k in ("precision", "recall", "f1"):
        e = d["estimates"][k]
        assert all(f in e for f in FIELDS) and 0 <= e["ci_low"] <= e["estimate"] <= e["ci_high"] <= 1, e


def test_a_partial_truth_without_a_design_says_what_its_numbers_describe(truths):
    t20, _ = truths
    r = cli("pointwise", "--truth", t20, "--clustering", P["exp"], "--items", P["items"])
    assert "not the population" in r.output and "--truth-sample" in r.output
    d = json.loads(cli("pointwise", "--truth", t20, "--clustering", P["exp"], "--items", P["items"], "--json").output)
    assert "not the population" in d["note"]
    full = json.loads(cli("pointwise", "--truth", P["truth"], "--clustering", P["exp"], "--items", P["items"],
                          "--json").output)
    assert full["note"] is None


@pytest.mark.parametrize("args, words", [
    (("--base", "B", "--exp", "E"), "give --truth-sample"),
    (("--clustering", "C", "--base", "B", "--exp", "E", "--truth-sample", "uniform"), "not both"),
    (("--base", "B", "--truth-sample", "uniform"), "go together"),
    ((), "Missing option --clustering"),
])
def test_wrong_combinations_are_usage_errors(truths, args, words):
    t20, _ = truths
    sub = {"B": P["base"], "E": P["exp"], "C": P["exp"]}
    r = cli("pointwise", "--truth", t20, *[sub.get(a, a) for a in args], code=2)
    assert words in r.output
