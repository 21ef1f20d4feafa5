"""Progress on long commands (issue 14): a live spinner with elapsed time on a terminal, periodic
one-line status lines when stderr is not a terminal, nothing with ``-q``; never on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from abcde.examples import example_paths
from abcde.util import progress

P = example_paths("febrl3")


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("ABCDE_PROGRESS")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "abcde", *args], capture_output=True, text=True, env=e, timeout=300)


def test_status_lines_when_not_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("ABCDE_PROGRESS", raising=False)
    monkeypatch.setenv("ABCDE_PROGRESS_INTERVAL", "0.1")
    progress.set_enabled(None)
    assert progress.mode() == "lines"  # pytest's stderr is not a terminal
    with progress.step("Slow step") as s:
        time.sleep(0.35)
        s.rows = 1234
    with progress.step("Quick step"):
        pass
    err = capsys.readouterr().err.splitlines()
    running = [line for line in err if line.startswith("abcde: Slow step … ")]
    assert len(running) >= 2, err  # one every interval while it runs, each with the elapsed time
    assert all(line.endswith(" s") for line in running)
    assert err[-1].startswith("abcde: ✓ Slow step (0.") and err[-1].endswith(" s, 1,234 rows)"), err
    assert not any("Quick step" in line for line in err)  # a step shorter than the interval stays quiet


def test_a_failing_step_claims_no_success(monkeypatch, capsys):
    monkeypatch.setenv("ABCDE_PROGRESS_INTERVAL", "0.05")
    progress.set_enabled(None)
    with pytest.raises(ValueError), progress.step("Doomed"):
        time.sleep(0.12)
        raise ValueError("x")
    assert "✓" not in capsys.readouterr().err


def test_the_cli_prints_status_lines_on_stderr_only_and_none_with_q():
    args = ["impact", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--json"]
    r = run(*args, env={"ABCDE_PROGRESS_INTERVAL": "0"})  # 0: every step's closing line
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # stdout is the JSON and nothing else
    lines = r.stderr.splitlines()
    assert any(line.startswith("abcde: ✓ Zipping inputs by row and computing fragments (") and
               line.endswith(f", {5000:,} rows)") for line in lines), r.stderr
    assert all(line.startswith("abcde: ") for line in lines), r.stderr
    q = run(*args, "-q", env={"ABCDE_PROGRESS_INTERVAL": "0.05"})
    assert q.returncode == 0 and q.stderr == ""
    a, b = json.loads(q.stdout), json.loads(r.stdout)  # (equal up to the engine's parallel-sum rounding)
    assert a["items"] == b["items"] and a["split_rate"] == pytest.approx(b["split_rate"], rel=1e-12)
    off = run(*args, env={"ABCDE_PROGRESS_INTERVAL": "0.05", "ABCDE_PROGRESS": "0"})
    assert off.stderr == ""


def test_the_terminal_display_shows_elapsed_time_and_rows():
    r = run("impact", "--base", P["base"], "--exp", P["exp"], "--items", P["items"], "--json",
            env={"ABCDE_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    assert "✓ Zipping inputs by row and computing fragments (" in r.stderr and "5,000 rows)" in r.stderr
