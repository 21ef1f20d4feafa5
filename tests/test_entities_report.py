"""An entity sample beside an evaluation (issue 53's surfaces): ``abcde report DIR --entities ENTS``
adds the section (page, Markdown, terminal, --json), with the pointwise ΔRecall beside the recall lift
by one rule for direction; an entity sample drawn from other inputs is refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import abcde.examples as ex
from abcde.completion.beside import beside_recall_lift, direction


def _cli(*args, ok=True):
    r = subprocess.run([sys.executable, "-m", "abcde", *map(str, args)], capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr + r.stdout
    return r


def _dr(low, high, est=None, draws=100):
    return {"delta_recall": {"estimate": (low + high) / 2 if est is None else est, "std_err": 0.01, "ci_low": low,
                             "ci_high": high, "draws": draws}}


def _lift(low, high):
    return {"available": True, "estimate": (low + high) / 2, "ci_low": low, "ci_high": high}


@pytest.mark.parametrize("ours,theirs,words", [
    ((0.01, 0.05), (0.02, 0.1), "Both say Exp keeps more true links"),
    ((-0.05, -0.01), (-0.2, -0.1), "Both say Exp keeps fewer true links"),
    ((0.01, 0.05), (-0.2, -0.1), "They disagree: the recall lift -15.000% [-20.000%, -10.000%] says Exp keeps fewer"),
    ((-0.05, 0.01), (-0.2, -0.1), "The recall lift -15.000% [-20.000%, -10.000%] says Exp keeps fewer true links "
                                  "than Base; the pointwise ΔRecall -2.000% [-5.000%, 1.000%] cannot tell yet."),
    ((-0.05, -0.01), (-0.2, 0.1), "The pointwise ΔRecall -3.000% [-5.000%, -1.000%] says Exp keeps fewer"),
    ((-0.05, 0.01), (-0.2, 0.1), "Neither tells yet"),
])
def test_one_rule_for_the_direction_of_both_recall_numbers(ours, theirs, words):
    assert words in beside_recall_lift(_dr(*ours), _lift(*theirs))


def test_the_words_without_a_recall_lift_or_without_answers():
    text = beside_recall_lift(_dr(0.01, 0.05), {"available": False, "note": "no judged agreed pairs"})
    assert text.startswith("The recall lift is not estimated (no judged agreed pairs)") and "more" in text
    assert "cannot tell yet" in beside_recall_lift(_dr(-0.01, 0.05), None)
    assert "No anchor" in beside_recall_lift(_dr(0.0, 0.0, draws=0), _lift(0.1, 0.2))
    assert direction(float("nan"), float("nan")) == 0 and direction(0.0, 0.1) == 0


def test_report_with_an_entity_sample_beside_the_evaluation(tmp_path):
    """The bundled example, judged by the oracle on both samples: the section is in the page, the
    Markdown, the terminal and --json; both numbers say Exp keeps fewer true links (the exact recall
    lift and pointwise ΔRecall are both negative); an entity sample of other inputs is refused."""
    P = ex.example_paths()
    run, ents = tmp_path / "run", tmp_path / "ents"
    _cli("evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 300, "--seed", 1,
         "--out", run)
    _cli("judge", "oracle", run / "quality", "--oracle-column", "entity_id")
    _cli("entities", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 150, "--hide",
         "entity_id", "--out", ents)
    _cli("judge", "oracle", ents, "--oracle-column", "entity_id")
    d = json.loads(_cli("report", run, "--entities", ents, "--json").stdout)
    e = d["entities"]
    assert e["beside"].startswith("Both say Exp keeps fewer true links than Base"), e["beside"]
    assert e["delta_recall"]["ci_high"] < 0 and d["quality"]["recall_lift"]["ci_high"] < 0
    assert e["anchors_judged"] == e["anchors"] and e["design"] == "recall"
    html = (run / "report.html").read_text()
    assert '<section id="entities">' in html and "Both say Exp keeps fewer" in html
    assert 'data-metric="iq"' in html
    md = (run / "report.md").read_text()
    assert "Entity completion: Both say" in md and "| IQ |" in md
    text = _cli("report", run, "--entities", ents).stdout
    assert "Entity completion" in text and "Both say Exp keeps fewer" in text
    # the same through --base/--exp (the other form of the command)
    d2 = json.loads(_cli("report", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--entities", ents,
                         "--out", tmp_path / "r.html", "--json").stdout)
    assert d2["entities"]["delta_recall"] == e["delta_recall"]
    assert d2["entities"]["beside"].startswith("The recall lift is not estimated")
    # an entity sample drawn from other inputs (Exp with one item moved) is refused in one line
    exp2 = tmp_path / "exp2.parquet"
    t = pq.read_table(P["exp"]).to_pydict()
    t["cluster_id"][0] = t["cluster_id"][1] if t["cluster_id"][0] != t["cluster_id"][1] else t["cluster_id"][2]
    import pyarrow as pa

    pq.write_table(pa.table(t), exp2)
    other = tmp_path / "other"
    _cli("entities", "--base", P["base"], "--exp", exp2, "--items", P["items"], "--budget", 20, "--out", other)
    r = _cli("report", run, "--entities", other, ok=False)
    assert "was drawn from other inputs" in r.stderr and "exp" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_abcde_estimate_reads_either_kind_of_sample(tmp_path):
    import abcde
    from abcde.completion import oracle_entities, write_entity_sample
    from abcde.errors import InputError

    P = ex.example_paths()
    s = write_entity_sample(P["base"], P["exp"], tmp_path / "ents", items=P["items"], budget=20, seed=1,
                            hide=["entity_id"])
    oracle_entities(s, "entity_id")
    q = abcde.estimate(s.path)
    assert type(q).__name__ == "EntityQuality" and q.judged == s.anchors.num_rows
    with pytest.raises(InputError, match="is an entity sample"):
        abcde.estimate(s.path, ["x.csv"])
    _cli("pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", 40, "--seed", 1, "--out",
         tmp_path / "pairs")
    _cli("judge", "oracle", tmp_path / "pairs", "--oracle-column", "entity_id")
    assert type(abcde.estimate(tmp_path / "pairs")).__name__ == "QualityResult"
