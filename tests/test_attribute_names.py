"""Attribute columns named like a column abcde computes for itself.

An items table's attribute columns are the user's: a slice (``--slice-by``), an exploration group
(``explore query --group-by``, the report's groups), a ``--where`` filter or a blind task may name any
of them. Where abcde computes its own columns beside them (sums, helper columns, the keys of its
queries) it does so under private names, so a column called ``pw``, ``s``, ``n`` or ``side`` gives
exactly the numbers a column called ``region`` with the same values gives. A name that would be
ambiguous in a public output (two columns of one name in a per-item table, one key for a slice's
value and one of its numbers) is refused with an :class:`~abcde.errors.InputError` naming the file
and the column, before anything is computed.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.core.inputs import PER_ITEM_COLUMNS
from abcde.errors import InputError
from abcde.metrics.pointwise import SLICE_FIELDS as POINTWISE_FIELDS
from abcde.sampling.explore import GROUP_FIELDS

#: The neutral name every other column is compared with.
NEUTRAL = "region"

#: Names abcde computes or uses internally (aggregates, helper columns, the columns of its queries): an
#: attribute may take each, and every command gives the numbers of ``region`` for it.
INTERNAL = (
    # exploration estimates (sampling/explore.py)
    "s_share", "q_share", "s_split", "q_split", "s_merge", "q_merge", "s_jaccard", "q_jaccard", "_y0", "y0",
    # pair samples: slice multipliers, self terms, strata (quality/draw.py, stratified.py, sampling/pairs.py)
    "pw", "s", "u", "column", "value", "pairweight", "self_term", "self_pairweight", "key", "class", "label",
    "draw", "stratum", "pair_id", "item_a", "item_b", "pair_weight", "needs_judgement", "judgement", "partner",
    "vantage", "rk", "cum_hi", "cum_lo", "dt0", "q", "u_split", "u_merge", "u_stable", "u_self", "stable_label",
    "fragment_items",
    # fragments (core/diff.py) and the report's neighbourhoods and histogram (report/build.py)
    "n", "w", "w2", "nb", "wb", "ne", "we", "affected", "side", "anchor_base", "anchor_exp", "rn", "rank",
    "own_frag", "bin",
    # elsewhere: per-cluster tables, counts, the weights command's helpers
    "size", "cluster_id", "total", "count", "rows", "id", "c", "_aid", "_iid", "past_w", "intr",
)
#: The names the whole job runs with end to end (``evaluate``, ``judge oracle``, ``quality``, ``explore
#: query``, all through the CLI): one or more at each place abcde computes columns beside the user's
#: (the others of :data:`INTERNAL` go through the library calls those places are in, which are faster).
END_TO_END = ("pw", "s", "u", "s_share", "_y0", "value", "n", "w", "side", "rn", "precision")
#: The names of :data:`INTERNAL` the impact's slices are computed beside (its per-item, per-cluster and
#: per-slice columns, the fragments' counts and weights) and a few others.
IMPACT_SLICES = ("n", "w", "w2", "nb", "wb", "ne", "we", "affected", "size", "cluster_id", "total", "count", "rows",
                 "id", "side", "rank", "pw", "s", "value", "key")
#: The columns of the query listing the members of the report's most affected clusters (report/build.py).
NEIGHBOURHOOD = ("side", "rn", "anchor_base", "anchor_exp", "rank", "own_frag", "n")
#: Numbers of a pointwise slice row: refused as pointwise slices only.
POINTWISE_ONLY = tuple(f for f in POINTWISE_FIELDS if f not in ("items", "weight"))
#: Numbers of an impact slice row (besides the per-item metrics, which are refused at input): refused as
#: impact slices (``impact``, ``evaluate``; ``items`` also by ``pointwise``), fine as pair-sample slices
#: and groups.
IMPACT_FIELDS = ("items", "contribution")
#: Numbers of an exploration group's row: refused as group-by columns (``explore``, ``evaluate``'s
#: report groups), fine as impact and pair-sample slices.
GROUP_ONLY = tuple(f for f in GROUP_FIELDS if f not in PER_ITEM_COLUMNS)
#: Refused in every items table: the columns abcde adds to every item's row, and its private prefix.
REFUSED_AT_INPUT = (*PER_ITEM_COLUMNS, "__abcde_x")
#: The columns of the derived weights' table (``abcde weights``), beside which it carries the attributes.
WEIGHTS_OUTPUT = ("weight_base", "weight_exp")

N = 1000


def invoke(*args, ok: bool = True):
    res = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert res.exit_code == 0, res.output
    return res


def slice_args(names) -> list[str]:
    return [a for c in names for a in ("--slice-by", c)]


def close(a, b) -> bool:
    """``a == b``, floats to 1e-12 relative (engines may sum in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-15)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def renamed(rows, name):
    """Rows (dicts) with ``name`` as a key renamed to :data:`NEUTRAL`, to compare with its rows."""
    return [{(NEUTRAL if k == name else k): v for k, v in r.items()} for r in rows]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Base, Exp and an items table whose every attribute holds the same values (``region``, each name
    of :data:`INTERNAL`, ... all ``item % 3``), and ``truth``, the oracle's ground truth."""
    d = tmp_path_factory.mktemp("attribute_names")
    rng = np.random.default_rng(7)
    ids = np.arange(N)
    base = ids // 5
    exp = base.copy()
    exp[ids % 7 == 0] += 1  # items moved to the next cluster: splits and merges
    exp[ids % 11 == 0] = N + ids[ids % 11 == 0] // 3  # and new small clusters
    values = ids % 3
    # The report shows the first few attributes beside the members of the most affected clusters: the
    # names of its own query's columns first.
    names = dict.fromkeys((NEUTRAL, *NEIGHBOURHOOD, *INTERNAL, *POINTWISE_ONLY, *IMPACT_FIELDS, *GROUP_ONLY))
    cols = {"item_id": ids, "weight": rng.lognormal(0, 0.5, N), **{c: values for c in names}, "truth": ids // 6}
    pq.write_table(pa.table({"item_id": ids, "cluster_id": base}), d / "base.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": exp}), d / "exp.parquet")
    pq.write_table(pa.table(cols), d / "items.parquet")
    return {"dir": d, "base": d / "base.parquet", "exp": d / "exp.parquet", "items": d / "items.parquet"}


def items_with(world, name: str):
    """An items table with the attributes ``region`` and ``name`` only."""
    path = world["dir"] / f"items_{name}.parquet"
    t = pq.read_table(world["items"], columns=["item_id", "weight", NEUTRAL])
    pq.write_table(t.append_column(name, t.column(NEUTRAL)), path)
    return path


# ----------------------------------------------------------------------------- the whole job
@pytest.fixture(scope="module")
def evaluated(world):
    """``abcde evaluate`` sliced by ``region`` and each of :data:`END_TO_END`; the pair sample judged by
    the oracle and ``abcde quality --slice-by`` each of them."""
    out = world["dir"] / "ev"
    names = (NEUTRAL, *END_TO_END)
    invoke("evaluate", "--base", world["base"], "--exp", world["exp"], "--items", world["items"], "--budget", 80,
           "--sample-size", 200, "--out", out, *slice_args(names), "--json", "-q")
    invoke("judge", "oracle", out / "quality", "--oracle-column", "truth", "-q")
    q = json.loads(invoke("quality", out / "quality", *slice_args(names), "--json", "-q").output)
    text = (out / "report.html").read_text()
    report = json.loads(re.search(r'id="report-data">(.*?)</script>', text, re.S).group(1).replace("\\u003c", "<"))
    return {"out": out, "impact": json.loads((out / "impact" / "impact.json").read_text()), "quality": q,
            "multipliers": pq.read_table(out / "quality" / "slices.parquet").to_pylist(),
            "metadata": json.loads((out / "quality" / "metadata.json").read_text()), "report": report,
            "sample": pq.read_table(out / "explore" / "sample.parquet")}


@pytest.mark.parametrize("name", END_TO_END)
def test_evaluate_gives_the_numbers_of_a_neutral_name(evaluated, name):
    ev = evaluated
    # impact slices
    assert close(renamed(ev["impact"]["slices"][name], name), ev["impact"]["slices"][NEUTRAL])
    # the pair sample's exact slice multipliers and distances, and the quality estimates per slice
    mult = {c: [{k: v for k, v in r.items() if k != "column"} for r in ev["multipliers"] if r["column"] == c]
            for c in (name, NEUTRAL)}
    assert mult[name] and close(mult[name], mult[NEUTRAL])
    dist = ev["metadata"]["distances"]["slices"]
    assert close(dist[name], dist[NEUTRAL])
    qs = ev["quality"]["slices"]
    assert qs[name] and close(qs[name], qs[NEUTRAL])
    qd = ev["quality"]["distances"]["slices"]
    assert close(qd[name], qd[NEUTRAL])
    # the report's exploration groups, and the sample's column
    groups = ev["report"]["exploration"]["groups"]
    assert groups[name] and close(renamed(groups[name], name), groups[NEUTRAL])
    assert ev["sample"].column(name).equals(ev["sample"].column(NEUTRAL))


def test_report_shows_the_members_attributes_whatever_their_names(evaluated):
    report = evaluated["report"]
    assert report["attributes"] == [NEUTRAL, *NEIGHBOURHOOD]
    members = [m for side in report["neighbourhoods"].values() for a in side.values() for m in a["members"]]
    assert members
    for m in members:
        assert m["attributes"] == dict.fromkeys(report["attributes"], m["attributes"][NEUTRAL])


@pytest.fixture(scope="module")
def explored(evaluated):
    """``explore query`` (CLI) of the evaluation's sample, grouped by and filtered on a column."""
    sample = evaluated["out"] / "explore" / "sample.parquet"

    def query(col):
        return json.loads(invoke("explore", "query", sample, "--group-by", col, "--where", f'"{col}" = 1',
                                 "--examples", 5, "--json").output)

    return {"query": query, "neutral": query(NEUTRAL), "sample": abcde.ExplorationSample.read(sample)}


@pytest.mark.parametrize("name", END_TO_END + IMPACT_FIELDS)
def test_explore_query_groups_and_filters_by_any_name(explored, name):
    got, want = explored["query"](name), explored["neutral"]
    assert got["groups"] and close(renamed(got["groups"], name), want["groups"])
    assert close(got["slice"], want["slice"])
    assert [r["item_id"] for r in got["examples"]] == [r["item_id"] for r in want["examples"]]


@pytest.mark.parametrize("name", INTERNAL + POINTWISE_ONLY + IMPACT_FIELDS)
def test_exploration_sample_groups_and_filters_by_any_name(explored, name):
    s = explored["sample"]
    assert close(renamed([g.to_dict() for g in s.group([name])], name), [g.to_dict() for g in s.group([NEUTRAL])])
    assert close(s.estimate(f'"{name}" = 2').to_dict(), s.estimate(f"{NEUTRAL} = 2").to_dict())
    assert close(s.estimate([{"column": name, "op": "=", "value": 0}]).to_dict(),
                 s.estimate([{"column": NEUTRAL, "op": "=", "value": 0}]).to_dict())


# ----------------------------------------------------------------------------- one command each
@pytest.fixture(scope="module")
def impacts(world):
    """``impact`` (API and CLI) and ``pointwise`` (API) sliced by every name they take."""
    api = abcde.impact(world["base"], world["exp"], items=world["items"],
                       slice_by=(NEUTRAL, *IMPACT_SLICES, *POINTWISE_ONLY, *GROUP_ONLY))
    cli = json.loads(invoke("impact", "--base", world["base"], "--exp", world["exp"], "--items", world["items"],
                            *slice_args((NEUTRAL, "n", "w", "draws", "sampled_items", "precision")), "--json",
                            "-q").output)
    pw = abcde.pointwise(world["base"], world["exp"], items=world["items"],
                         slice_by=(NEUTRAL, "n", "w", "size", "draws", "contribution"))
    return {"api": api.slices, "cli": cli["slices"], "pointwise": pw.slices}


@pytest.mark.parametrize("name", IMPACT_SLICES + POINTWISE_ONLY + GROUP_ONLY)
def test_impact_slices_of_any_name(impacts, name):
    for got in (impacts["api"], impacts["cli"], impacts["pointwise"]):
        if name in got:
            assert got[name] and close(renamed(got[name], name), got[NEUTRAL])
    if name in impacts["cli"]:
        assert close(impacts["api"][name], impacts["cli"][name])


@pytest.fixture(scope="module")
def paired(world):
    """``abcde pairs`` and ``abcde quality`` sliced by the names refused as impact slices or groups:
    a pair sample's slice rows hold the value under a key of its own."""
    out = world["dir"] / "pairs"
    names = (NEUTRAL, *IMPACT_FIELDS, *GROUP_ONLY)
    invoke("pairs", "--base", world["base"], "--exp", world["exp"], "--items", world["items"], "--budget", 80,
           "--seed", 3, "--out", out, *slice_args(names), "-q")
    invoke("judge", "oracle", out, "--oracle-column", "truth", "-q")
    q = json.loads(invoke("quality", out, *slice_args(names), "--json", "-q").output)
    api = abcde.estimate_quality(out, slice_by=list(names)).to_dict()
    return {"out": out, "cli": q, "api": api}


@pytest.mark.parametrize("name", IMPACT_FIELDS + GROUP_ONLY)
def test_pair_sample_and_quality_slices_of_any_name(paired, name):
    for q in (paired["cli"], paired["api"]):
        assert q["slices"][name] and close(q["slices"][name], q["slices"][NEUTRAL])
        assert close(q["distances"]["slices"][name], q["distances"]["slices"][NEUTRAL])


def test_quality_table_shows_a_slice_called_draws_beside_the_draws(paired):
    """The terminal table heads the slice's values with the column's name, next to abcde's "draws"."""
    text = invoke("quality", paired["out"], "--slice-by", "draws", "-q").output
    head = next(line for line in text.splitlines() if "ΔPrecision" in line and line.count("draws") == 2)
    assert head.index("draws") < head.index("weight") < head.rindex("draws")


# ----------------------------------------------------------------------------- refused, clearly
@pytest.mark.parametrize("name", REFUSED_AT_INPUT)
def test_per_item_names_are_refused_at_input(world, name):
    items = items_with(world, name)
    with pytest.raises(InputError, match=rf"'{re.escape(name)}' in items file '{re.escape(str(items))}'"):
        abcde.impact(world["base"], world["exp"], items=items)
    for args in (["impact"], ["pairs", "--budget", 10, "--seed", 1, "--out", world["dir"] / f"p_{name}"],
                 ["evaluate", "--out", world["dir"] / f"e_{name}"]):
        res = invoke(*args, "--base", world["base"], "--exp", world["exp"], "--items", items, "-q", ok=False)
        assert res.exit_code == 1, res.output
        assert f"'{name}' in items file '{items}'" in res.output and "rename" in res.output
        assert "Traceback" not in res.output
    assert not (world["dir"] / f"e_{name}").exists() and not (world["dir"] / f"p_{name}").exists()


@pytest.mark.parametrize("name", IMPACT_FIELDS)
def test_impact_slice_names_are_refused(world, name):
    items = items_with(world, name)
    with pytest.raises(InputError, match=rf"Slice column '{name}' of the items file .*name of a number"):
        abcde.impact(world["base"], world["exp"], items=items, slice_by=[name])
    if name in POINTWISE_FIELDS:
        with pytest.raises(InputError, match=rf"Slice column '{name}'"):
            abcde.pointwise(world["base"], world["exp"], items=items, slice_by=[name])
    for cmd in (["impact"], ["evaluate", "--out", world["dir"] / f"es_{name}"]):
        res = invoke(*cmd, "--base", world["base"], "--exp", world["exp"], "--items", items, "--slice-by", name,
                     "-q", ok=False)
        assert res.exit_code == 1 and f"Slice column '{name}'" in res.output and "rename" in res.output, res.output
    assert not (world["dir"] / f"es_{name}").exists()
    # unsliced, the column is just an attribute
    r = abcde.impact(world["base"], world["exp"], items=items, slice_by=[NEUTRAL])
    assert r.slices[NEUTRAL]


@pytest.mark.parametrize("name", POINTWISE_ONLY)
def test_pointwise_slice_names_are_refused(world, name):
    with pytest.raises(InputError, match=rf"Slice column '{name}' .*name of a number abcde reports for every slice"):
        abcde.pointwise(world["base"], world["exp"], items=world["items"], slice_by=[name])
    res = invoke("pointwise", "--truth", world["base"], "--clustering", world["exp"], "--items", world["items"],
                 "--slice-by", name, ok=False)
    assert res.exit_code == 1 and f"Slice column '{name}'" in res.output, res.output


@pytest.mark.parametrize("name", GROUP_ONLY)
def test_group_names_are_refused(world, evaluated, name):
    sample = evaluated["out"] / "explore" / "sample.parquet"
    s = abcde.ExplorationSample.read(sample)
    with pytest.raises(InputError, match=rf"Group-by column '{name}' .*name of a number abcde reports for every "
                                         r"group"):
        s.group([name])
    res = invoke("explore", "query", sample, "--group-by", name, ok=False)
    assert res.exit_code == 1 and f"Group-by column '{name}'" in res.output, res.output
    # a filter on it is fine
    assert close(s.estimate(f'"{name}" = 1').to_dict(), s.estimate(f"{NEUTRAL} = 1").to_dict())
    # evaluate groups the exploration sample by its slice columns: refused before anything is written
    out = world["dir"] / f"eg_{name}"
    res = invoke("evaluate", "--base", world["base"], "--exp", world["exp"], "--items", items_with(world, name),
                 "--slice-by", name, "--out", out, "-q", ok=False)
    assert res.exit_code == 1 and f"Slice column '{name}' of the items file" in res.output, res.output
    assert "which the report groups by each slice column" in res.output and not out.exists()


@pytest.mark.parametrize("name", WEIGHTS_OUTPUT + ("_aid", "c", "importance"))
def test_weights_carry_attributes_of_any_name_but_their_own_columns(tmp_path, name):
    past = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["p", "p", "q", "q"]})
    imp = pa.table({"cluster_id": ["p", "q"], "importance": [2.0, 6.0]})
    now = pa.table({"item_id": [1, 2, 3, 4], "cluster_id": ["a", "a", "a", "b"]})
    items = pa.table({"item_id": [1, 2, 3, 4], NEUTRAL: ["x", "y", "x", "z"], name: ["x", "y", "x", "z"]})
    if name in WEIGHTS_OUTPUT:
        with pytest.raises(InputError, match=rf"'{name}' in items table have the name of a column abcde computes"):
            abcde.derive_weights(past, imp, now, now, items=items)
        return
    t = abcde.derive_weights(past, imp, now, now, items=items).table
    assert t.column(name).to_pylist() == t.column(NEUTRAL).to_pylist() == ["x", "y", "x", "z"]
