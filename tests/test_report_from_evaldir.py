"""``abcde report EVALDIR`` (issue 24, item 5: from judging back to the report, nothing lost).

``abcde evaluate`` records how it was run in ``DIR/evaluate.json``; after the pairs in
``DIR/quality`` are judged, ``abcde report DIR`` rebuilds ``DIR/report.html`` and ``DIR/report.md``
with every section the evaluation's report had (the truth, slices, exploration sample, ...) and
the quality estimates, without touching the judgements. Real files, real DuckDB, the CLI in-process.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.workflow.demo import ORACLE_LABEL
from abcde.workflow.record import RECORD, read_evaluation
from abcde.workflow.report import report_from_evaluation

P = example_paths("febrl3")
SMALL = ["--slice-by", "source", "--sample-size", "2000", "--budget", "60", "--seed", "3"]


def cli(*args, code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


def one_line_error(*args, code: int = 1) -> str:
    """Run a command that must fail: exit ``code``, one line of error, no traceback."""
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    assert isinstance(r.exception, SystemExit), r.exception  # click's clean exit, not an escaped exception
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1, r.output
    if code == 1:
        assert r.output.strip() == lines[0], r.output
    return lines[0]


def next_command(output: str) -> str:
    """The "Next: judge the pairs ..." advice a command printed, on one line."""
    text = " ".join(output.split())
    return "Next: judge the pairs" + text.split("Next: judge the pairs", 1)[1].split(" (abcde is not on your PATH", 1)[0]


def sections(html: str) -> set[str]:
    return set(re.findall(r'<section id="([a-z-]+)"', html))


def evaluate(out: Path, *extra, inputs=P, code: int = 0):
    return cli("evaluate", "--base", inputs["base"], "--exp", inputs["exp"], "--items", inputs["items"], "--truth",
               inputs["truth"], "--slice-by", "source", "--sample-size", "200", "--budget", "20", "--out", out, "-q",
               *extra, code=code)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """``abcde evaluate`` with a truth and a slice, then the report before judging, then
    ``abcde judge oracle``: (DIR, the Next line evaluate printed, the unjudged report rebuilt)."""
    d = tmp_path_factory.mktemp("evaldir") / "ev"
    r = cli("evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--truth", P["truth"], *SMALL,
            "--hide", "entity_id", "--out", d, "-q")
    unjudged = cli("report", d, "-q")
    before = {"html": (d / "report.html").read_text(), "md": (d / "report.md").read_text(), "output": unjudged.output}
    cli("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    return d, r.output, before


def test_evaluate_records_how_it_was_run(judged):
    d, _, _ = judged
    rec = json.loads((d / RECORD).read_text())
    assert rec == read_evaluation(d)
    assert rec["format"] == "abcde-evaluation" and rec["complete"] is True and rec["abcde_version"]
    for role in ("base", "exp", "items", "truth"):
        assert rec["inputs"][role]["given"] == str(P[role])  # as given on the command line
        assert rec["inputs"][role]["path"] == str(P[role].resolve())  # and where it is
        assert rec["inputs"][role]["fingerprint"]["sha256"]
    # the pair sample's fingerprints, the same ones its own check compares
    meta = json.loads((d / "quality" / "metadata.json").read_text())
    assert {k: rec["inputs"][k]["fingerprint"] for k in ("base", "exp", "items")} == meta["input_fingerprints"]
    assert rec["columns"] == {"item_id": "item_id", "cluster_id": "cluster_id", "base_cluster_id": None,
                              "exp_cluster_id": None, "weight": None, "truth_cluster_id": None}
    o = rec["options"]
    assert (o["slice_by"], o["explore_by"], o["quality_slice_by"]) == (["source"], ["source"], ["source"])
    assert (o["sample_size"], o["budget"], o["seed"], o["top"]) == (2000, 60, 3, 10)
    assert (o["estimator"], o["allocation"], o["hide"], o["only_affected"]) == ("stratified", "proportional",
                                                                                ["entity_id"], True)  # the default
    assert rec["engine"]["name"] == "duckdb" and rec["engine"]["database"] is None
    assert rec["outputs"] == {"impact": "impact", "exploration_sample": "explore/sample.parquet",
                              "pair_sample": "quality", "report": "report.html", "markdown": "report.md"}


def test_the_next_line_keeps_every_section(judged):
    d, printed, before = judged
    next_line = next_command(printed)
    assert f"judge serve {d / 'quality'}" in next_line and next_line.endswith(f"report {d}")
    assert "--quality" not in next_line and "--base" not in next_line
    # before any judgement: every section, and the report says there are no quality estimates yet
    assert {"headline", "clusters", "slices", "quality", "exploration"} <= sections(before["html"])
    assert 'id="truth"' in before["html"] and "No judgements were given" in before["html"]
    assert "Quality (" not in before["md"]
    assert "No judgements" in before["output"] and f"report {d} again" in " ".join(before["output"].split())


def test_report_evaldir_keeps_every_section_and_adds_the_quality(judged, tmp_path):
    d, _, _ = judged
    store = d / "quality" / "judgements.sqlite"
    kept = store.read_bytes()
    quality_files = sorted(p.name for p in (d / "quality").iterdir())
    r = cli("report", d, "--json", "-q")
    j = json.loads(r.stdout)
    html, md = (d / "report.html").read_text(), (d / "report.md").read_text()
    # every section of the evaluation's report ...
    assert {"headline", "clusters", "charts", "slices", "quality", "exploration", "meaning"} <= sections(html)
    assert '<table id="truth">' in html and "By source" in html
    assert "Where the impact is (exploration sample)" in html and "Top source by estimated" in html
    # ... and the quality estimates, judged by an oracle named as one
    assert 'data-quality="delta_precision"' in html and "No judgements were given" not in html
    assert "Judged by <b>an oracle" in html and "not people" in html
    assert "Quality (judged by an oracle" in md and "| ΔPrecision |" in md and "Against the ground truth" in md
    assert j["quality"]["judged_pairs"] == 60 and "source" in j["quality"]["slices"]
    # ... under the verdict, with the truth's sentence: the first lines of report.md, the box atop the page
    v = j["verdict_facts"]["sentences"]
    assert md.splitlines()[2] == f"**{v[0]}**" and any(s.startswith("Against the ground truth (exact)") for s in v)
    assert "verdict" in sections(html) and html.index('id="verdict"') < html.index('id="headline"')
    assert set(j["truth"]) == {"base", "exp"} and "source" in j["slices"] and j["exploration"]["groups"]["source"]
    assert j["written"] == [str(d / "report.html"), str(d / "report.md")]
    # the same impact numbers as the evaluation's
    ev = json.loads((d / "impact" / "impact.json").read_text())
    for k in ("items", "split_rate", "merge_rate", "jaccard_distance", "affected_items"):
        assert j["headline"][k] == pytest.approx(ev[k], rel=1e-12), k
    # the judgements are only read; nothing is left beside the replaced reports
    assert store.read_bytes() == kept
    assert sorted(p.name for p in (d / "quality").iterdir()) == quality_files
    assert sorted(p.name for p in d.iterdir()) == ["evaluate.json", "explore", "impact", "quality", "report.html",
                                                   "report.md"]
    # the same through the Python API, to another place, with overrides
    res = report_from_evaluation(d, out=tmp_path / "r.html", markdown=tmp_path / "r.md", judged_by="people",
                                 title="Mine")
    assert res.written == [tmp_path / "r.html", tmp_path / "r.md"] and res.quality is not None
    assert "Judged by <b>people</b>" in (tmp_path / "r.html").read_text() and "<title>Mine</title>" in \
        (tmp_path / "r.html").read_text()
    assert (d / "report.html").read_text() == html and store.read_bytes() == kept


def test_options_the_evaluation_recorded_are_not_given_again(judged, tmp_path):
    d, _, _ = judged
    for extra in (["--base", P["base"]], ["--truth", P["truth"]], ["--slice-by", "source"], ["--quality", d]):
        assert "cannot be given with EVALDIR" in one_line_error("report", d, *extra, code=2)
    assert "Missing option(s) --base, --exp, --out" in one_line_error("report", code=2)
    # --out moves the page (and writes the Markdown only where --markdown says)
    html = (d / "report.html").read_bytes()
    cli("report", d, "--out", tmp_path / "x.html", "--judged-by", "people", "-q")
    assert (tmp_path / "x.html").exists() and not list(tmp_path.glob("*.md"))
    assert (d / "report.html").read_bytes() == html


def test_errors_are_one_line(judged, tmp_path):
    d, _, _ = judged
    assert "does not exist" in one_line_error("report", tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    assert "not an 'abcde evaluate' output directory" in one_line_error("report", tmp_path / "empty")
    bad = tmp_path / "bad"
    shutil.copytree(d, bad)
    (bad / RECORD).unlink()
    assert "kept no record" in one_line_error("report", bad)
    (bad / RECORD).write_text('{"format": "abcde-evaluation", "vers')
    assert f"Cannot read '{bad / RECORD}'" in one_line_error("report", bad)
    rec = json.loads((d / RECORD).read_text())
    (bad / RECORD).write_text(json.dumps({**rec, "options": 5}))
    assert "garbles options.slice_by" in one_line_error("report", bad)
    (bad / RECORD).write_text(json.dumps({**rec, "format": "something"}))
    assert "not the record of an 'abcde evaluate' run" in one_line_error("report", bad)
    with pytest.raises(InputError, match="lacks or garbles inputs.base"):
        (bad / RECORD).write_text(json.dumps({**rec, "inputs": {**rec["inputs"], "base": "x"}}))
        read_evaluation(bad)


def test_changed_or_missing_inputs_are_refused_and_a_database_is_reused(tmp_path):
    inputs = {k: tmp_path / "in" / p.name for k, p in P.items()}
    (tmp_path / "in").mkdir()
    for k, p in P.items():
        shutil.copy(p, inputs[k])
    d = tmp_path / "ev"
    evaluate(d, "--database", tmp_path / "kept.duckdb", inputs=inputs)
    assert json.loads((d / RECORD).read_text())["engine"]["database"] == str(tmp_path / "kept.duckdb")
    r = cli("report", d)  # the record's database is not opened by itself (issue 39) ...
    assert "(engine.database) is not opened" in r.stderr and "Reusing" not in r.stderr
    r = cli("report", d, "--database", tmp_path / "kept.duckdb")  # ... only when the user gives it
    assert "Reusing the validated inputs and fragments kept in the database" in r.stderr
    report = (d / "report.html").read_bytes()
    inputs["exp"].rename(tmp_path / "exp.parquet")
    msg = one_line_error("report", d)
    assert f"The exp input '{inputs['exp']}'" in msg and "does not exist" in msg
    shutil.copy(inputs["base"], inputs["exp"])  # another file in its place: the pair sample's fingerprint check
    assert "was drawn from other inputs" in one_line_error("report", d)
    shutil.copy(tmp_path / "exp.parquet", inputs["exp"])
    shutil.copy(inputs["base"], inputs["truth"])
    assert "The truth" in one_line_error("report", d)
    assert (d / "report.html").read_bytes() == report  # nothing replaced by a refused run
    shutil.copy(P["truth"], inputs["truth"])
    cli("report", d, "-q")


def test_a_run_over_an_earlier_one_that_fails_leaves_the_earlier_one_whole(tmp_path):
    d = tmp_path / "ev"
    evaluate(d)
    before = {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
    # another seed over the first run's pair sample is refused at the pair sample stage, after the
    # impact tables and the exploration sample were built: they were built aside, so the earlier
    # run's directory is as it was, its record complete, and its report can be rebuilt
    r = evaluate(d, "--seed", "4", code=1)
    assert "already holds pair sample" in r.output
    assert {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} == before
    assert json.loads((d / RECORD).read_text())["complete"] is True
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".ev.abcde-")]  # nothing left aside
    cli("report", d, "-q")
    evaluate(d)  # the same run again: accepted
    cli("report", d, "-q")


def test_the_demo_prints_the_command_and_it_rebuilds_the_demos_report(tmp_path):
    d = tmp_path / "demo"
    r = cli("demo", "--out", d)
    next_line = next_command(r.output)
    assert f"judge serve {d / 'quality'}" in next_line and next_line.endswith(f"report {d}")
    md, html = (d / "report.md").read_text(), (d / "report.html").read_text()
    kept = (d / "quality" / "judgements.sqlite").read_bytes()
    cli("report", d, "-q")
    again_md, again_html = (d / "report.md").read_text(), (d / "report.html").read_text()
    assert sections(again_html) == sections(html)
    assert 'id="truth"' in again_html and "Top state by estimated" in again_html
    # the same report, but for the words naming the oracle: the demo's own label, and the one told
    # from the judgements' source
    assert ORACLE_LABEL in md and ORACLE_LABEL not in again_md
    told = "an oracle (simulated judgements from the items' 'entity_id' column), not people"
    assert again_md.replace(told, ORACLE_LABEL) == md
    assert told in again_html
    assert (d / "quality" / "judgements.sqlite").read_bytes() == kept
