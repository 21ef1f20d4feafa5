"""The CLI on real Parquet/CSV files in tmp_path: tables, --json, --out, help."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import abcde
from abcde.cli import main
from abcde.errors import InputError
from abcde.examples import example_paths


def run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


def test_impact_json_has_the_documented_keys_and_matches_the_api(small):
    out = json.loads(run("impact", "--base", small["base"], "--exp", small["exp"], "--items", small["items"],
                         "--slice-by", "source", "--json", "-q"))
    for key in ("items", "total_weight", "split_rate", "merge_rate", "jaccard_distance", "affected_items",
                "affected_weight", "restriction", "top_clusters", "slices"):
        assert key in out
    api = abcde.impact(small["base"], small["exp"], items=small["items"], slice_by=["source"])
    assert out["split_rate"] == pytest.approx(api.split_rate, abs=1e-12)
    assert out["merge_rate"] == pytest.approx(api.merge_rate, abs=1e-12)
    assert out["slices"]["source"] == api.slices["source"]
    assert set(out["top_clusters"]) == {"base", "exp", "interleaved"}


def test_impact_tables_and_lookup(small):
    text = run("impact", "--base", small["base"], "--exp", small["exp"], "--item", 3, "--item", 99)
    assert "SplitRate" in text and "Item lookup" in text
    assert "Not among the common items: 99" in text


def test_impact_out_writes_tables(small, tmp_path):
    out = tmp_path / "o"
    run("impact", "--base", small["base"], "--exp", small["exp"], "--items", small["items"], "--out", out)
    assert sorted(p.name for p in out.iterdir()) == [
        "base_clusters.parquet", "exp_clusters.parquet", "impact.json", "items.parquet"]
    items = {r["item_id"]: r for r in pq.read_table(out / "items.parquet").to_pylist()}
    # Worked by hand (weights 1..5): Base {1,2,3} (W 6), {4,5} (9); Exp {1,2} (3), {3,4} (7), {5} (5).
    want = {1: (1 / 2, 0, 1 / 2), 2: (1 / 2, 0, 1 / 2), 3: (1 / 2, 4 / 7, 7 / 10), 4: (5 / 9, 3 / 7, 2 / 3),
            5: (4 / 9, 0, 4 / 9)}
    assert sorted(items) == [1, 2, 3, 4, 5]
    for i, (split, merge, jd) in want.items():
        got = items[i]
        assert (got["split_rate"], got["merge_rate"], got["jaccard_distance"]) == (
            pytest.approx(split, rel=1e-12), pytest.approx(merge, abs=1e-15), pytest.approx(jd, rel=1e-12)), i
    summary = json.loads((out / "impact.json").read_text())
    assert summary["items"] == 5 and summary["total_weight"] == 15.0
    for k, m in enumerate(("split_rate", "merge_rate", "jaccard_distance")):
        assert summary[m] == pytest.approx(sum(i * want[i][k] for i in want) / 15, rel=1e-12), m


def test_csv_inputs_and_string_ids(write):
    b = write("b.csv", item_id=["x", "y", "z"], cluster_id=[1, 1, 2])
    e = write("e.csv", item_id=["x", "y", "z"], cluster_id=[1, 2, 2])
    out = json.loads(run("impact", "--base", b, "--exp", e, "--json"))
    # x: Base {x,y}, Exp {x}: split 1/2. y: Base {x,y}, Exp {y,z}: split 1/2, merge 1/2. z: merge 1/2.
    assert out["split_rate"] == pytest.approx(1 / 3)
    assert out["merge_rate"] == pytest.approx(1 / 3)


def test_identical_clusterings_say_nothing_changed(small):
    text = run("impact", "--base", small["base"], "--exp", small["base"])
    assert "nothing changed" in text


def test_restriction_is_reported(write, small):
    e = write("e.parquet", item_id=[1, 2, 3, 7], cluster_id=["a", "a", "a", "z"])
    out = json.loads(run("impact", "--base", small["base"], "--exp", e, "--json"))
    r = out["restriction"]
    assert (r["base_only_items"], r["exp_only_items"], r["common_items"]) == (2, 1, 3)
    assert r["base_only_examples"] == [4, 5] and r["exp_only_examples"] == [7]
    text = run("impact", "--base", small["base"], "--exp", e)
    assert "2 items (weight 2) only in base were excluded, e.g. 4, 5" in text


def test_pointwise_cli(small):
    out = json.loads(run("pointwise", "--truth", small["base"], "--clustering", small["exp"], "--json"))
    imp = abcde.impact(small["base"], small["exp"])
    assert out["precision"] == pytest.approx(1 - imp.merge_rate)
    assert out["recall"] == pytest.approx(1 - imp.split_rate)


def test_weights_cli_output_is_usable_as_items(write, small, tmp_path):
    past = write("past.parquet", item_id=[1, 2, 3, 4], cluster_id=["p", "p", "q", "q"])
    imp = write("imp.parquet", cluster_id=["p", "q"], importance=[10.0, 2.0])
    w = tmp_path / "w.parquet"
    out = json.loads(run("weights", "--past", past, "--importance", imp, "--base", small["base"], "--exp",
                         small["exp"], "--out", w, "--json"))
    assert out["items"] == 5 and out["floored_items"] == 0
    # Past p = {1, 2} (importance 10: 5 per item), q = {3, 4} (1 per item), item 5 not in the past;
    # a present cluster's items get its items' mean, the larger of Base's and Exp's (max), floor 0.5
    # (the rule: tests/test_weights.py): Base a = {1,2,3}: 11/3, b = {4,5}: 1/2; Exp {1,2}: 5, {3,4}: 1, {5}: 0.
    got = {r["item_id"]: r["weight"] for r in pq.read_table(w).to_pylist()}
    assert got == {1: 5.0, 2: 5.0, 3: pytest.approx(11 / 3), 4: 1.0, 5: 0.5}
    res = json.loads(run("impact", "--base", small["base"], "--exp", small["exp"], "--items", w, "--json"))
    assert res["total_weight"] > 0


def test_demo_runs_on_bundled_data(demo_run):
    where, out = demo_run
    assert out["impact"]["items"] == 5000
    assert 0 < out["impact"]["jaccard_distance"] < 1
    assert out["explore"]["sample"]["unique_items"] == 1000
    assert (where / "explore" / "sample.parquet").exists()
    assert out["quality"]["judged_pairs"] == 300 and "oracle" in out["quality"]["judged_by"]
    assert "not people" in out["quality"]["judged_by"]
    truth = out["pointwise_against_truth"]
    dp = out["quality"]["delta_precision"]
    exact = truth["exp"]["precision"] - truth["base"]["precision"]
    assert dp["estimate"] - 4 * dp["std_err"] < exact < dp["estimate"] + 4 * dp["std_err"]
    assert truth["exp"]["precision"] < truth["base"]["precision"]  # Exp's rules merge some different people
    assert all(p.exists() for p in example_paths().values())


COMMANDS = [["impact"], ["pointwise"], ["weights"], ["demo"], ["explore", "sample"], ["explore", "query"],
            ["explore", "serve"], ["pairs"], ["precision"], ["quality"], ["judge", "oracle"], ["judge", "serve"], ["judge", "model"],
            ["judge", "export"], ["judge", "raters"], ["report"], ["evaluate"], ["ids"], ["entities"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_and_json(command):
    text = run(*command, "--help")
    assert "Usage:" in text and "--json" in text
    assert "-q, --quiet" in text  # the README says -q works on every command


def test_quiet_silences_progress_of_a_command_without_engine_options(tmp_path):
    from abcde.examples import example_paths
    from abcde.util import progress

    p = example_paths()
    d = tmp_path / "pairs"
    r = CliRunner().invoke(main, ["pairs", "--base", str(p["base"]), "--exp", str(p["exp"]), "--budget", "20",
                                  "--seed", "1", "--out", str(d), "-q"])
    assert r.exit_code == 0, r.output
    seen = []
    real = progress.set_enabled
    try:
        progress.set_enabled = lambda v: (seen.append(v), real(v))
        r = CliRunner().invoke(main, ["quality", str(d), "-q"])
    finally:
        progress.set_enabled = real
    assert r.exit_code == 0, r.output
    assert seen == [False, None]  # off while quality runs, the default again after it


def test_the_command_list_is_complete():
    from abcde.cli import main as group

    listed = {" ".join(c) for c in COMMANDS}
    found = set()
    for name, cmd in group.commands.items():
        subs = getattr(cmd, "commands", None)
        found |= {f"{name} {s}" for s in subs} if subs else {name}
    assert found == listed


def _walk(group, prefix=()):
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, (*prefix, name))


def test_every_command_has_help_text():
    for path, cmd in _walk(main):
        assert cmd.help and cmd.help.strip(), f"'abcde {' '.join(path)}' has no help text"
        assert cmd.get_short_help_str(), f"'abcde {' '.join(path)}' has no short help in the command list"
    listing = run("--help")
    for name in main.commands:
        assert f"  {name} " in listing


HEAVY = ("ibis", "duckdb", "pyarrow", "numpy", "scipy", "altair", "pandas", "rich")


def test_help_imports_no_engine_nor_arrow():
    """``abcde --help`` and every ``abcde COMMAND --help`` load click, not Ibis/DuckDB/Arrow (start-up time)."""
    code = textwrap.dedent(f"""
        import sys
        from click.testing import CliRunner
        from abcde.cli import main
        for args in [[], *{COMMANDS!r}]:
            res = CliRunner().invoke(main, [*args, "--help"])
            assert res.exit_code == 0, res.output
        print(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # the console script's route, python -m abcde --help, as well
    code = textwrap.dedent(f"""
        import atexit, runpy, sys
        sys.argv = ["abcde", "--help"]
        # (the program ends the process itself once its exit handlers ran: report from one)
        atexit.register(lambda: print(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})),
                                      file=sys.stderr))
        runpy.run_module("abcde", run_name="__main__")
    """)
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.strip().splitlines()[-1] == "[]"


def test_the_program_sets_the_collector_and_a_library_call_does_not(small, tmp_path):
    """``abcde`` (``abcde.cli.run``) raises the collector's thresholds and ends without Python's
    teardown, after every exit handler, with its outputs whole and its exit status; ``main`` called
    in a process of someone else's (a notebook, a test) leaves the collector as it was."""
    from abcde.cli import GC_THRESHOLDS

    base, exp = small["base"], small["exp"]
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        import atexit, gc, sys

        class Teardown:
            def __del__(self):
                sys.stderr.write("teardown ran\\n")

        keep = Teardown()  # freed only by Python's teardown
        from abcde.cli import run
        atexit.register(lambda: print("exit handler", tuple(gc.get_threshold()), file=sys.stderr))
        sys.argv = ["abcde", "impact", "--base", {str(base)!r}, "--exp", {str(exp)!r}, "--out", {str(out)!r},
                    "--json", "-q"]
        run()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"exit handler {GC_THRESHOLDS}" in r.stderr and "teardown ran" not in r.stderr
    assert json.loads(r.stdout)["items"] > 0
    assert pq.read_table(out / "items.parquet").num_rows == json.loads(r.stdout)["items"]
    # An error's status and message, the same way.
    bad = subprocess.run([sys.executable, "-c", code.replace(str(base), str(tmp_path / "missing.parquet"))],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "missing.parquet' does not exist" in bad.stderr and "exit handler" in bad.stderr
    import gc

    before = gc.get_threshold()
    assert CliRunner().invoke(main, ["impact", "--base", str(base), "--exp", str(exp), "--json", "-q"]).exit_code == 0
    assert gc.get_threshold() == before and gc.isenabled()


def test_the_program_waits_for_a_thread_still_running(tmp_path):
    """A thread that is not a daemon and still runs when the command is done (e.g. one a plug-in
    started to finish a write): Python's own exit, which waits for it; its file is written."""
    done = tmp_path / "written-by-the-thread"
    code = textwrap.dedent(f"""
        import sys, threading, time
        from pathlib import Path
        from abcde.cli import run

        def late():
            time.sleep(0.5)
            Path({str(done)!r}).write_text("whole")

        threading.Thread(target=late).start()
        sys.argv = ["abcde", "--version"]
        run()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert done.read_text() == "whole"


def test_the_cli_lists_the_library_combine_rules():
    from abcde.cli.metrics import weights
    from abcde.metrics.weights import COMBINE_RULES

    choices = next(p.type.choices for p in weights.params if p.name == "combine")
    assert tuple(choices) == COMBINE_RULES == ("max", "min", "mean", "base", "exp")


def test_report_workflow_is_a_library_call(small, tmp_path):
    from abcde.workflow import ReportResult, run_report

    res = run_report(small["base"], small["exp"], tmp_path / "r.html", items=small["items"], slice_by=["source"],
                     markdown=tmp_path / "r.md")
    assert isinstance(res, ReportResult) and res.quality is None and res.exploration is None
    assert [p.name for p in map(Path, res.written)] == ["r.html", "r.md"]
    api = abcde.impact(small["base"], small["exp"], items=small["items"])
    assert res.impact.split_rate == pytest.approx(api.split_rate)
    cli = json.loads(run("report", "--base", small["base"], "--exp", small["exp"], "--items", small["items"],
                         "--slice-by", "source", "--out", tmp_path / "c.html", "--json", "-q"))
    assert set(cli) == set(res.to_dict())
    with pytest.raises(InputError, match="need a judged pair sample directory"):
        run_report(small["base"], small["exp"], tmp_path / "x.html", judgements=["j.csv"])
    assert not (tmp_path / "x.html").exists()


def test_json_never_crashes_on_undefined_values(tmp_path):
    """A filter that matches nothing: the estimates are undefined; --json prints valid JSON with
    null for them and lists where, instead of a traceback (issue 13, item 7)."""
    p = example_paths("febrl3")
    s = tmp_path / "s.parquet"
    r = CliRunner().invoke(main, ["explore", "sample", "--base", str(p["base"]), "--exp", str(p["exp"]), "--items",
                                  str(p["items"]), "--size", "50", "--seed", "1", "--out", str(s), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["explore", "query", str(s), "--where", "source = 'nothing'", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)  # strict JSON: no NaN
    assert d["slice"]["split_rate"] is None and "slice.split_rate" in d["undefined"]["values"]
    assert "nan" not in r.output.lower()


def test_report_truth_adds_pointwise_metrics(small, tmp_path):
    """report --truth: Base's and Exp's Precision, Recall and F1 against the truth, in the JSON,
    the HTML and the Markdown (here the truth is Base itself: Base is perfect)."""
    out = tmp_path / "r.html"
    d = json.loads(run("report", "--base", small["base"], "--exp", small["exp"], "--truth", small["base"],
                       "--out", out, "--markdown", tmp_path / "r.md", "--json", "-q"))
    t = d["truth"]
    assert t["base"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    imp = abcde.impact(small["base"], small["exp"])
    assert t["exp"]["precision"] == pytest.approx(1 - imp.merge_rate) and t["exp"]["recall"] == pytest.approx(
        1 - imp.split_rate)
    assert 'id="truth"' in out.read_text() and "Against the ground truth" in (tmp_path / "r.md").read_text()


def test_errors_name_options_the_way_the_reader_passes_them(tmp_path):
    """A message names --force on a command that has it, force=True in Python, and no option at
    all where the command has none (issue 27: demo has no --force)."""
    from abcde.errors import InputError, with_option
    from abcde.examples import example_paths
    from abcde.quality import draw_pair_sample

    p = example_paths()
    d = tmp_path / "pairs"
    args = ["pairs", "--base", str(p["base"]), "--exp", str(p["exp"]), "--budget", "10", "--out", str(d)]
    assert CliRunner().invoke(main, [*args, "--seed", "1"]).exit_code == 0
    r = CliRunner().invoke(main, [*args, "--seed", "2"])
    assert r.exit_code == 1 and "pass --force to replace it" in r.output and "force=True" not in r.output
    with pytest.raises(InputError, match="pass force=True to replace it") as exc:
        draw_pair_sample(p["base"], p["exp"], d, budget=10, seed=2)
    assert "--force" not in str(exc.value)
    assert exc.value.render(set()).endswith("Draw into a new directory.")  # a command without --force
    assert "[[" not in InputError("x" + with_option("force", " {option}")).render({"force"})


def test_the_example_readme_demo_help_points_to_exists():
    from abcde.examples import HERE

    text = run("demo", "--help")
    assert "examples/febrl3/README.md" in text
    readme = (HERE / "febrl3" / "README.md").read_text()
    assert "entity_id" in readme and "--hide entity_id" in readme


@pytest.mark.parametrize("width", [40, 80, 160])
def test_terminal_tables_never_break_a_token_nor_drop_a_column(width, monkeypatch):
    """A row table wraps at spaces only; one that cannot fit the terminal that way is shown one
    block per row (issue 27: 'rec-844-d' / 'up-3', columns gone on a narrow terminal)."""
    import io

    from rich.console import Console

    from abcde.cli import tables

    out = io.StringIO()
    monkeypatch.setattr(tables, "_console", Console(file=out, width=width))
    rows = [{"item_id": f"rec-{k}-dup-3", "past_clusters_without_importance": 0.25 * k, "split_rate": 0.1,
             "merge_rate": 0.2, "jaccard_distance": 0.3, "weight": 1.5} for k in range(3)]
    tables.console().print(tables.table(rows, "Items"))
    text = out.getvalue()
    for r in rows:
        assert r["item_id"] in text  # whole, on one line
    for header in ("item_id", "past_clusters_without_importance", "SplitRate", "MergeRate", "JaccardDistance",
                   "weight"):
        assert header in text  # no column left out
    assert max(len(line) for line in text.splitlines()) <= width
    assert ("one block per row" in text) == (width < 100)
