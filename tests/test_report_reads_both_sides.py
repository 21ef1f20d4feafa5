"""The report reads both sides of the verdict (issue 52): "What the numbers mean" defines the recall
lift and the verdict by both sides, the quality chart shows the recall lift beside ΔPrecision and the
rates, and the pairwise recall lift and the truth's pointwise Recall are named so that one cannot be
taken for the other."""

from __future__ import annotations

import html
import json
import re

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths

P = {k: str(v) for k, v in example_paths().items()}


def cli(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("both_sides") / "ev"
    cli("evaluate", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--truth", P["truth"],
        "--out", d, "--budget", 120, "--seed", 3, "--hide", "entity_id", "-q")
    cli("judge", "oracle", d / "quality", "--oracle-column", "entity_id")
    cli("report", d, "-q")
    return (d / "report.html").read_text()


def test_what_the_numbers_mean_defines_the_recall_lift_and_both_sides(page):
    meaning = page[page.index('<section id="meaning">'):]
    terms = [html.unescape(t) for t in re.findall(r"<dt>(.*?)</dt>", meaning)]
    assert "Recall lift (pairwise)" in terms
    verdict = html.unescape(re.search(r"<dt>Verdict</dt><dd>(.*?)</dd>", meaning).group(1))
    assert "recall lift" in verdict and "trade-off" in verdict and "so far" in verdict


def test_the_quality_chart_shows_the_recall_lift(page):
    specs = json.loads(html.unescape(re.search(r'<script type="application/json" id="chart-specs">(.*?)</script>',
                                               page, re.S).group(1)))
    metrics = [v["metric"] for v in specs["quality"]["data"]["values"]]
    assert "Recall lift (pairwise)" in metrics and "ΔPrecision" in metrics


def test_the_two_recalls_have_different_names(page):
    assert "Recall (pointwise)" in page and "Recall lift (pairwise)" in page
    assert not re.search(r"<td>Recall</td>", page)


def test_the_owner_view_names_each_seed_for_what_it_seeds(tmp_path):
    """The raters' pair order has its own seed (judge serve --seed); the sample's draws another (pairs
    --seed): the owner's view names both, never one for the other (issue 52)."""
    from judging_helpers import fresh_copy, make_sample, request
    from abcde.web.judging_server import serve

    (tmp_path / "made").mkdir()
    d = make_sample(tmp_path / "made")
    srv = serve(fresh_copy(d, tmp_path), seed=7).start()
    try:
        settings = request(srv.url, "GET", "/api/owner")[1]["settings"]
    finally:
        srv.shutdown()
    meta = json.loads((d / "metadata.json").read_text())
    assert settings["order_seed"] == 7 and settings["sample_seed"] == meta["seed"] != 7


def test_every_route_of_the_judging_app_is_documented():
    """The judging HTTP API is documented (issue 52): each route of the app, with its method, has a
    heading or a line in docs/http-api.md, so a route added without its documentation fails here."""
    from pathlib import Path

    import abcde.web.routes_owner as owner
    import abcde.web.routes_rater as rater
    import abcde.web.routes_settle as settle

    doc = (Path(__file__).resolve().parents[1] / "docs" / "http-api.md").read_text()
    found = set()
    for mod in (rater, owner, settle):
        for line in Path(mod.__file__).read_text().splitlines():
            m = re.search(r'Route\("([^"]+)", \w+, methods=\[([^\]]+)\]\)', line)
            if m:
                for method in re.findall(r'"(\w+)"', m.group(2)):
                    found.add((method, m.group(1)))
    assert len(found) >= 12
    for method, path in sorted(found):
        assert f"{method} {path}" in doc or f"`{method} {path}" in doc, (method, path)
    for field in ("pair_id", "judgement", "comment", "request_id", "rater"):
        assert f"`{field}`" in doc


def test_the_terminals_recall_lift_row_with_se_0_says_why():
    """A recall lift with s.e. 0 beside an interval with width has its note, as the other rows do."""
    from abcde.cli.tables import console, print_quality
    from test_verdict_recall import quality

    q = quality("up", (0.05, 0.01, 0.09, 0.0))
    q["recall_lift"]["note"] = ""
    with console().capture() as cap:
        print_quality(q)
    row = next(line for line in cap.get().splitlines() if "Recall lift" in line)
    assert "s.e. 0" in row or "s.e. 0" in cap.get().split("Recall lift", 1)[1][:600]


def test_a_truth_samples_note_is_said_once(tmp_path):
    """With --truth-sample, a note that holds for several estimates (standard error 0, few entities) is
    said once, naming them all, not once per estimate (issue 52)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(P["truth"])
    ents = sorted(set(t.column(1).to_pylist()))[:40]
    pq.write_table(t.filter(pc.is_in(t.column(1), pa.array(ents))), tmp_path / "t.parquet")
    cli("report", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--truth", tmp_path / "t.parquet",
        "--truth-sample", "uniform", "--population-entities", 2000, "--out", tmp_path / "r.html", "--markdown",
        tmp_path / "r.md", "-q")
    md = (tmp_path / "r.md").read_text()
    notes = [line.split(":", 1)[1] for line in md.splitlines() if line.startswith("- ") and ":" in line]
    assert len(notes) == len(set(notes)), [n for n in notes if notes.count(n) > 1][:1]
    assert "have standard error 0" in md
