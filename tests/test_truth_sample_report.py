"""A truth of sampled entities in the report, the verdict and the evaluation directory (issue 41):
``abcde report --truth T --truth-sample DESIGN`` shows the population's Precision, Recall and F1 of
Base and Exp with 95% intervals, the paired differences, the design, its notes and the numbers over
the truth's items only (labelled as such), in the HTML page, the Markdown and the JSON; the verdict's
truth sentence carries the intervals instead of "exact"; a partial truth without a design says in
words what its numbers describe; a full truth without a design is shown as before. ``evaluate``
records the design so ``abcde report DIR`` rebuilds with it. Real files (the bundled FEBRL 3
example), real DuckDB, the CLI in-process."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.examples import example_paths
from abcde.metrics import truth_sample as ts_module
from abcde.metrics.truth_sample import estimate_pointwise
from abcde.quality import verdict as verdict_module
from abcde.quality.verdict import truth_view, verdict
from abcde.report.markdown import md as _md
from abcde.util import display
from abcde.workflow.evaluate import evaluate
from abcde.workflow.record import RECORD, read_evaluation
from abcde.workflow.report import report_from_evaluation, run_report

P = {k: str(v) for k, v in example_paths().items()}
SIDES = ("base", "exp")
METRICS = ("precision", "recall", "f1")
DELTAS = ("delta_precision", "delta_recall", "delta_f1")


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


def sampled_truth(fraction: float = 0.2, seed: int = 7) -> pa.Table:
    """A simple random sample of the example's true entities, every item of each (a uniform design)."""
    truth = pq.read_table(P["truth"])
    ents = sorted(set(truth.column("cluster_id").to_pylist()))
    pick = np.random.default_rng(seed).choice(len(ents), int(fraction * len(ents)), replace=False)
    return truth.filter(pc.is_in(truth["cluster_id"], pa.array([ents[k] for k in pick])))


def poisson_truth(seed: int = 11) -> pa.Table:
    """Entities drawn independently with probability π = min(1, 0.1 · size) (larger entities more
    often), each item carrying its entity's π in the column 'incl'."""
    truth = pq.read_table(P["truth"])
    ids = truth.column("cluster_id").to_pylist()
    size: dict = {}
    for e in ids:
        size[e] = size.get(e, 0) + 1
    ents = sorted(size)
    pi = {e: min(1.0, 0.1 * size[e]) for e in ents}
    u = np.random.default_rng(seed).random(len(ents))
    keep = {e for e, x in zip(ents, u) if x < pi[e]}
    sub = truth.filter(pc.is_in(truth["cluster_id"], pa.array(sorted(keep))))
    return sub.append_column("incl", pa.array([pi[e] for e in sub.column("cluster_id").to_pylist()]))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """T20 (a fifth of the entities, uniform), TP (Poisson, column 'incl') and a judged pair sample
    (oracle judgements of the example's true entity ids), so the report has a verdict."""
    d = tmp_path_factory.mktemp("truth_sample_report")
    t20, tp = d / "t20.parquet", d / "tp.parquet"
    pq.write_table(sampled_truth(), t20)
    pq.write_table(poisson_truth(), tp)
    pairs = d / "pairs"
    cli("pairs", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--budget", "80", "--seed", "3",
        "--out", pairs)
    cli("judge", "oracle", pairs, "--oracle-column", "entity_id")
    return {"t20": str(t20), "tp": str(tp), "pairs": str(pairs), "dir": d}


def report(files, tmp_path, *extra, quality: bool = True):
    """``abcde report ... --json``: (JSON, HTML, Markdown)."""
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    r = cli("report", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], *extra,
            *(["--quality", files["pairs"]] if quality else []), "--out", html, "--markdown", md, "--json")
    return json.loads(r.stdout), html.read_text(), md.read_text()


def signed(x: float) -> str:
    """A difference as the tables show it: 4 decimals with its sign (0.0000 without one)."""
    s = display.four(x)
    return s if s.startswith("-") or s == display.four(0.0) else "+" + s


def truth_sentences(j: dict) -> list[str]:
    return [s for s in j["verdict_facts"]["sentences"] if s.startswith("Against")]


def section(html: str) -> str:
    """The page's "Against the ground truth" part (up to the end of the impact section)."""
    i = html.index("<h3>Against the ground truth</h3>")
    return html[i:html.index("</section>", i)]


def plain(html_text: str) -> str:
    """The text a person reads (tags dropped, entities decoded)."""
    import html as h

    return h.unescape(re.sub(r"<[^>]+>", " ", html_text))


# ----------------------------------------------------------------------------- a uniform design
def test_a_uniform_design_gives_estimates_intervals_and_paired_deltas_everywhere(files, tmp_path):
    j, html, md = report(files, tmp_path, "--truth", files["t20"], "--truth-sample", "uniform")
    lib = estimate_pointwise(files["t20"], base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform")
    ts = j["truth_sample"]
    # The JSON: each side's estimates with their intervals and standard errors, the paired differences.
    for side in SIDES:
        for m in METRICS:
            e, want = ts["estimates"][side][m], lib.estimates[side][m]
            assert e["estimate"] == pytest.approx(want.value, abs=1e-12)
            assert e["std_err"] == pytest.approx(want.standard_error, abs=1e-12)
            assert e["ci_low"] <= e["estimate"] <= e["ci_high"]
            assert j["truth"][side][m] == pytest.approx(want.value, abs=1e-12)  # the simple table's keys too
    for k in DELTAS:
        e, want = ts["deltas"][k], lib.estimates[k]
        assert e["estimate"] == pytest.approx(want.value, abs=1e-12)
        assert (e["ci_low"], e["ci_high"]) == pytest.approx(want.confidence_interval(), abs=1e-12)
        assert e["ci_low"] < e["ci_high"] and e["std_err"] > 0  # a sample, not a census: real intervals
        assert e["estimate"] == pytest.approx(ts["estimates"]["exp"][k[6:]]["estimate"]
                                              - ts["estimates"]["base"][k[6:]]["estimate"], abs=1e-12)
    d = ts["design"]
    assert (d["design"], d["entities"], d["population_entities_from"], d["census"]) == ("uniform", 400, "estimated",
                                                                                        False)
    assert ts["truth_items"] == lib.truth_items and ts["notes"] == list(lib.notes) and ts["notes"]
    # Today's numbers over the truth's items, kept and labelled; no exact recall lift from a sample.
    for side in SIDES:
        r = abcde.pointwise(files["t20"], P[side], items=P["items"])
        assert ts["restricted"][side]["precision"] == pytest.approx(r.precision, abs=1e-12)
        assert ts["restricted"][side]["recall"] == pytest.approx(r.recall, abs=1e-12)
    assert j["truth_recall_lift"] is None and "truth_note" not in j
    assert any(m["term"] == "Against a truth sample" for m in j["meaning"])

    # The page: the estimates, their s.e. and intervals, the differences, the design, the notes, the restricted.
    sec = section(html)
    assert '<table id="truth-sample">' in sec and '<table id="truth">' not in html
    text = plain(sec)
    for side in SIDES:
        for m in METRICS:
            e = ts["estimates"][side][m]
            assert f"[{display.pct(e['ci_low'])}, {display.pct(e['ci_high'])}]" in text, (side, m)
            assert display.pct(e["std_err"]) in text
    for k in DELTAS:
        e = ts["deltas"][k]
        cell = re.search(rf'<tr data-metric="{k[6:]}">.*?data-col="delta-interval" data-low="([^"]+)" '
                         rf'data-high="([^"]+)"', sec)
        assert (float(cell.group(1)), float(cell.group(2))) == pytest.approx((e["ci_low"], e["ci_high"]), abs=1e-15)
        assert display.four(e["std_err"]) in text
    assert "uniform design: a simple random sample of 400 of an estimated 1," in text
    assert f"It covers {lib.truth_items:,} of the 5,000 items" in text
    assert 'id="truth-notes"' in sec and "estimated from the truth's mean entity size" in text
    assert 'id="truth-restricted"' in sec
    assert f"Over the truth's {lib.truth_items:,} items only (restricted)" in text and "optimistic" in text

    # The Markdown: the same intervals, the design and the restricted numbers, labelled.
    for side in SIDES:
        e = ts["estimates"][side]["recall"]
        assert f"{display.pct(e['estimate'])} ± {display.pct(e['std_err'])} | " \
               f"[{display.pct(e['ci_low'])}, {display.pct(e['ci_high'])}]" in md
    dr = ts["deltas"]["delta_recall"]
    assert f"[{signed(dr['ci_low'])}, {signed(dr['ci_high'])}]" in md
    assert _md("uniform design: a simple random sample of 400 of an estimated 1,") in md
    assert f"Over the truth's {lib.truth_items:,} items only (restricted)" in md
    assert "Against the ground truth (a sample of entities; population estimates with 95% intervals)" in md

    # The verdict: the truth's sentence carries the intervals and the paired changes, never "exact".
    said = truth_sentences(j)
    assert len(said) == 1, j["verdict_facts"]["sentences"]
    s = said[0]
    assert s.startswith("Against a ground-truth sample of 400 entities (design uniform)"), s
    assert "exact" not in s and "recall lift" not in s
    b, e = ts["estimates"]["base"]["precision"], ts["estimates"]["exp"]["precision"]
    assert (f"Precision {display.pct(b['estimate'])} (95% interval {display.pct(b['ci_low'])} to "
            f"{display.pct(b['ci_high'])}) → {display.pct(e['estimate'])} (95% interval {display.pct(e['ci_low'])} "
            f"to {display.pct(e['ci_high'])})") in s
    dp = ts["deltas"]["delta_precision"]
    assert f"ΔPrecision {display.four(dp['estimate'])} (95% interval {display.four(dp['ci_low'])} to" in s
    assert "ΔRecall" in s and f"{display.four(dr['ci_low'])} to {display.four(dr['ci_high'])}" in s
    facts = j["verdict_facts"]["truth"]
    assert facts["kind"] == "sample" and facts["recall_lift"] is None and set(facts["deltas"]) == set(DELTAS)
    assert f"- {_md(s)}" in md.splitlines()
    assert s in plain(html[html.index('<section id="verdict"'):])


def test_a_given_population_size_is_used_and_said(files, tmp_path):
    j, html, md = report(files, tmp_path, "--truth", files["t20"], "--truth-sample", "uniform",
                         "--population-entities", "2000", quality=False)
    d = j["truth_sample"]["design"]
    assert (d["population_entities"], d["population_entities_from"]) == (2000, "given")
    lib = estimate_pointwise(files["t20"], base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform",
                             population_entities=2000)
    assert j["truth_sample"]["deltas"]["delta_recall"]["std_err"] == pytest.approx(
        lib.estimates["delta_recall"].standard_error, abs=1e-12)
    assert "a simple random sample of 400 of the population's 2,000 entities" in plain(section(html))
    assert "verdict" not in j  # no judgements: no verdict, the estimates all the same


# ----------------------------------------------------------------------------- a Poisson design
def test_a_column_of_inclusion_probabilities_is_a_poisson_design(files, tmp_path):
    j, html, md = report(files, tmp_path, "--truth", files["tp"], "--truth-sample", "incl")
    lib = estimate_pointwise(files["tp"], base=P["base"], exp=P["exp"], items=P["items"], truth_sample="incl")
    ts = j["truth_sample"]
    d = ts["design"]
    assert (d["design"], d["column"], d["population_entities_from"]) == ("poisson", "incl", "design")
    assert d["population_entities"] == pytest.approx(lib.population_entities)
    for side in SIDES:
        for m in METRICS:
            assert ts["estimates"][side][m]["estimate"] == pytest.approx(lib.estimates[side][m].value, abs=1e-12)
            assert ts["estimates"][side][m]["method"] == "hajek_poisson"
    for k in DELTAS:
        assert ts["deltas"][k]["ci_low"] == pytest.approx(lib.estimates[k].confidence_interval()[0], abs=1e-12)
    assert "each entity included independently with the probability in the truth's column 'incl'" in plain(
        section(html))
    assert "column 'incl'" in md
    s = truth_sentences(j)[0]
    assert s.startswith(f"Against a ground-truth sample of {lib.entities:,} entities (design: inclusion "
                        "probabilities in column 'incl')"), s
    assert "95% interval" in s and "exact" not in s


def test_a_missing_inclusion_column_is_one_clear_error(files, tmp_path):
    r = CliRunner().invoke(main, ["report", "--base", P["base"], "--exp", P["exp"], "--truth", files["t20"],
                                  "--truth-sample", "incl", "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 1 and "Column 'incl'" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "r.html").exists()


# ----------------------------------------------------------------------------- no design
def test_a_partial_truth_without_a_design_says_what_its_numbers_describe(files, tmp_path):
    j, html, md = report(files, tmp_path, "--truth", files["t20"])
    note = abcde.pointwise(files["t20"], P["base"], items=P["items"]).note
    assert note.startswith("These numbers describe the 1,") and "--truth-sample" in note
    assert j["truth_note"] == note and "truth_sample" not in j
    sec = section(html)
    assert '<table id="truth">' in sec and '<p id="truth-note" class="warn">' in sec
    assert note in plain(sec) and "(exact)" not in sec
    assert _md(note) in md.splitlines()
    s = truth_sentences(j)[0]
    assert s.startswith("Against the ground truth, over the 1,") and "not the population" in s
    assert "--truth-sample" in s and not s.startswith("Against the ground truth (exact)")
    assert j["verdict_facts"]["truth"]["kind"] == "partial"
    # its recall lift is over the truth's items, and said so
    assert j["truth_recall_lift"] is not None
    assert "(exact over the truth's items, not the population)" in plain(sec)


def test_a_full_truth_without_a_design_is_shown_as_before(files, tmp_path):
    j, html, md = report(files, tmp_path, "--truth", P["truth"])
    assert "truth_note" not in j and "truth_sample" not in j
    assert set(j["truth"]) == {"base", "exp"} and set(j["truth"]["base"]) == set(METRICS)
    for side in SIDES:
        r = abcde.pointwise(P["truth"], P[side], items=P["items"])
        assert j["truth"][side]["precision"] == pytest.approx(r.precision, abs=1e-12)
    sec = section(html)
    assert "<p>Pointwise Precision, Recall and F1 of each clustering against the given truth (exact).</p>" in sec
    assert '<table id="truth">' in sec and "truth-note" not in sec and "truth-sample" not in sec
    assert 'id="truth-recall-lift"' in sec and "against the truth (exact)" in sec
    assert "Against the ground truth:\n\n| clustering | Precision | Recall (pointwise) | F1 |" in md
    assert "These numbers describe" not in md and "(restricted)" not in md
    s = truth_sentences(j)[0]
    assert s.startswith("Against the ground truth (exact): Precision ") and ", recall lift " in s
    assert s.endswith("(Base → Exp).") and j["verdict_facts"]["truth"]["kind"] == "exact"
    assert all(m["term"] != "Against a truth sample" for m in j["meaning"])


# ----------------------------------------------------------------------------- the options
def test_the_options_need_what_they_describe(files, tmp_path):
    out = str(tmp_path / "r.html")
    r = cli("report", "--base", P["base"], "--exp", P["exp"], "--truth-sample", "uniform", "--out", out, code=2)
    assert "--truth-sample" in r.output and "needs --truth" in r.output
    r = cli("report", "--base", P["base"], "--exp", P["exp"], "--truth", files["t20"], "--population-entities",
            "2000", "--out", out, code=2)
    assert "--population-entities" in r.output and "--truth-sample uniform" in r.output
    r = cli("report", str(tmp_path), "--truth-sample", "uniform", code=2)  # recorded by the evaluation
    assert "--truth-sample cannot be given with EVALDIR" in r.output
    with pytest.raises(abcde.InputError, match="needs the truth"):
        run_report(P["base"], P["exp"], tmp_path / "x.html", truth_sample="uniform")
    with pytest.raises(abcde.InputError, match="needs truth_sample"):
        run_report(P["base"], P["exp"], tmp_path / "x.html", truth=files["t20"], population_entities=2000)
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "r.html").exists()


# ----------------------------------------------------------------------------- evaluate, then report DIR
def test_evaluate_records_the_design_and_report_dir_rebuilds_with_it(files, tmp_path):
    d = tmp_path / "ev"
    ev = evaluate(P["base"], P["exp"], d, items=P["items"], truth=files["t20"], truth_sample="uniform",
                  population_entities=2000, sample_size=200, budget=20, seed=3, hide=["entity_id"])
    lib = estimate_pointwise(files["t20"], base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform",
                             population_entities=2000)
    assert ev.truth_sample is not None and ev.pointwise_against_truth == {}
    rec = read_evaluation(d)
    assert (rec["options"]["truth_sample"], rec["options"]["population_entities"]) == ("uniform", 2000)
    out = ev.to_dict()
    assert out["truth_sample"]["estimates"]["delta_recall"]["ci_low"] == pytest.approx(
        lib.estimates["delta_recall"].confidence_interval()[0], abs=1e-12)
    assert out["pointwise_against_truth"]["exp"]["estimates"]["precision"]["ci_high"] is not None
    assert '<table id="truth-sample">' in (d / "report.html").read_text()
    assert "(restricted)" in (d / "report.md").read_text()

    # Judged, then rebuilt from the record: the same design, and the verdict's sentence with intervals.
    cli("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    res = report_from_evaluation(d)
    assert res.truth_sample is not None and res.pointwise_against_truth == {}
    assert res.truth_sample.population_entities == 2000
    j = res.to_dict()
    for k in DELTAS:
        assert j["truth_sample"]["deltas"][k]["estimate"] == pytest.approx(lib.estimates[k].value, abs=1e-12)
    s = truth_sentences(j)[0]
    assert s.startswith("Against a ground-truth sample of 400 entities (design uniform)") and "exact" not in s
    md = (d / "report.md").read_text()
    assert "population estimates with 95% intervals" in md and f"- {_md(s)}" in md.splitlines()
    # ... and the command line's 'abcde report DIR' does the same
    r = cli("report", d, "--json", "-q")
    assert json.loads(r.stdout)["truth_sample"]["design"]["population_entities_from"] == "given"


def test_a_record_without_the_design_still_rebuilds_and_a_garbled_one_is_refused(files, tmp_path):
    d = tmp_path / "ev"
    evaluate(P["base"], P["exp"], d, items=P["items"], truth=files["t20"], truth_sample="uniform",
             sample_size=200, budget=20, seed=3, hide=["entity_id"])
    f = d / RECORD
    rec = json.loads(f.read_text())
    assert rec["options"]["truth_sample"] == "uniform" and rec["options"]["population_entities"] is None

    def write(change):
        r = json.loads(json.dumps(rec))
        change(r)
        f.write_text(json.dumps(r))

    # A record of an abcde before truth samples (no such options): the truth without a design, said so.
    write(lambda r: [r["options"].pop(k) for k in ("truth_sample", "population_entities")])
    res = report_from_evaluation(d)
    assert res.truth_sample is None and set(res.pointwise_against_truth) == set(SIDES)
    assert res.report.to_dict()["truth_note"].startswith("These numbers describe the 1,")
    # A shared directory's record is checked: a design of no truth, or of the wrong type, is refused.
    for change, field in ((lambda r: r["options"].update(truth_sample=5), "options.truth_sample"),
                          (lambda r: r["inputs"].update(truth=None), "options.truth_sample"),
                          (lambda r: r["options"].update(population_entities="2000"), "options.population_entities"),
                          (lambda r: r["options"].update(population_entities=True), "options.population_entities")):
        write(change)
        with pytest.raises(abcde.InputError, match=re.escape(field)):
            report_from_evaluation(d)


def test_evaluate_refuses_a_design_without_a_truth_before_anything_is_computed(tmp_path):
    with pytest.raises(abcde.InputError, match="needs the truth"):
        evaluate(P["base"], P["exp"], tmp_path / "ev", truth_sample="uniform")
    assert not (tmp_path / "ev").exists()


# ----------------------------------------------------------------------------- the verdict's reading
def test_every_form_of_a_truth_sample_gives_the_same_sentence(files):
    res = estimate_pointwise(files["t20"], base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform")
    q = {"delta_precision": {"estimate": 0.01, "ci_low": 0.004, "ci_high": 0.016, "std_err": 0.003},
         "judged_pairs": 100, "missing_pairs": 0}
    forms = [res, res.to_dict(), {**{s: res.side_dict(s) for s in SIDES},
                                  **{k: res.estimates[k].to_dict() for k in DELTAS}}]
    said = [[s for s in verdict(q, truth=t).sentences if s.startswith("Against")] for t in forms]
    assert said[0] == said[1] == said[2] and "ΔRecall" in said[0][0]
    # side dicts alone (no differences): the levels with their intervals, no Δ
    alone = [s for s in verdict(q, truth={s: res.side_dict(s) for s in SIDES}).sentences if s.startswith("Against")]
    assert "95% interval" in alone[0] and "ΔPrecision" not in alone[0]
    assert truth_view(None) is None and truth_view({}) is None
    one = estimate_pointwise(files["t20"], P["exp"], items=P["items"], truth_sample="uniform")
    with pytest.raises(abcde.InputError, match="Base and Exp"):
        truth_view(one)


def test_a_census_is_exact_and_says_so():
    full = pq.read_table(P["truth"])
    res = estimate_pointwise(full, base=P["base"], exp=P["exp"], items=P["items"], truth_sample="uniform")
    q = {"delta_precision": {"estimate": 0.01, "ci_low": 0.004, "ci_high": 0.016, "std_err": 0.003},
         "judged_pairs": 100, "missing_pairs": 0}
    s = [x for x in verdict(q, truth=res).sentences if x.startswith("Against")]
    assert s[0].startswith("Against the ground truth, every one of its 2,000 entities (a census, so exact)")
    assert "95% interval" not in s[0] and "ΔPrecision exactly" in s[0] and len(s) == 1
    exact = {side: abcde.pointwise(P["truth"], P[side], items=P["items"]) for side in SIDES}
    assert f"Recall {display.pct(exact['base'].recall)} → {display.pct(exact['exp'].recall)}" in s[0]


def test_the_verdicts_few_entities_threshold_is_the_estimators():
    from abcde.core.names import FEW_ENTITIES

    assert verdict_module.FEW_ENTITIES is FEW_ENTITIES and ts_module.FEW_ENTITIES is FEW_ENTITIES
    assert math.isfinite(verdict_module.FEW_ENTITIES)


def test_the_page_shows_the_estimates_offline_and_without_errors(files, tmp_path, page):
    """In a real browser (every request refused): the page runs without errors, and a person reads
    the table's numbers as the JSON has them."""
    j, html, _ = report(files, tmp_path, "--truth", files["t20"], "--truth-sample", "uniform")
    page.goto((tmp_path / "r.html").resolve().as_uri())
    page.wait_for_function("window.__reportReady === true")
    assert page.errors == [] and page.blocked == []
    ts = j["truth_sample"]
    for side in SIDES:
        cell = f'#truth-sample tr[data-metric="recall"] td[data-col="{side}"]'
        assert float(page.get_attribute(cell, "data-value")) == pytest.approx(
            ts["estimates"][side]["recall"]["estimate"], abs=1e-15)
        assert page.inner_text(cell) == display.pct(ts["estimates"][side]["recall"]["estimate"])
    dp = ts["deltas"]["delta_precision"]
    shown = page.inner_text('#truth-sample tr[data-metric="precision"] td[data-col="delta-interval"]')
    assert shown == f"[{signed(dp['ci_low'])}, {signed(dp['ci_high'])}]"
    assert page.is_visible("#truth-sample") and page.is_visible("#truth-restricted")
