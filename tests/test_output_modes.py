"""Outputs belong to the user's team (issue 25, class 8: the modes).

Every file and directory abcde writes gets the mode the user's umask gives — files ``0666 & ~umask``,
directories ``0777 & ~umask`` — as the files beside them do. (Before, whatever went through a
temporary file or folder kept :mod:`tempfile`'s 0600 / 0700: report.html, report.md, the task files,
sample.parquet, ``quality/`` and ``pairs/``.) Checked under umask 022 and 027 over the outputs of
``pairs``, ``judge oracle``/``judge export``, ``report``, ``explore sample``, ``impact --out`` and
``evaluate``, run in process (the umask is the process's).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths

P = example_paths("febrl3")
INPUTS = ["--base", P["base"], "--exp", P["exp"], "--items", P["items"]]


@pytest.fixture(params=[0o022, 0o027], ids=["umask 022", "umask 027"])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def cli(*args) -> None:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output


def modes(root: Path) -> dict[str, int]:
    """The permission bits of ``root`` and of everything below it."""
    return {str(p.relative_to(root.parent)): stat.S_IMODE(p.lstat().st_mode) for p in [root, *sorted(root.rglob("*"))]}


def wrong_modes(paths: list[Path], umask: int) -> dict[str, str]:
    want_file, want_dir = 0o666 & ~umask, 0o777 & ~umask
    wrong = {}
    for root in paths:
        for name, mode in modes(root).items():
            p = root.parent / name
            want = want_dir if p.is_dir() else want_file
            if mode != want:
                wrong[name] = f"{mode:o}, not {want:o}"
    return wrong


def test_every_output_gets_the_mode_the_umask_gives(tmp_path, umask):
    pairs, ev = tmp_path / "pairs", tmp_path / "ev"
    cli("pairs", *INPUTS, "--budget", 20, "--seed", 1, "--slice-by", "source", "--out", pairs, "-q")
    cli("judge", "oracle", pairs, "--oracle-column", "entity_id")
    cli("judge", "export", pairs, "--out", tmp_path / "judged.csv")
    cli("explore", "sample", *INPUTS, "--size", 50, "--seed", 1, "--out", tmp_path / "sample.parquet", "-q")
    cli("impact", *INPUTS, "--out", tmp_path / "imp", "-q")
    cli("report", *INPUTS, "--quality", pairs, "--sample", tmp_path / "sample.parquet", "--explore-by", "source",
        "--out", tmp_path / "report.html", "--markdown", tmp_path / "report.md", "-q")
    cli("evaluate", *INPUTS, "--sample-size", 50, "--budget", 12, "--seed", 1, "--out", ev, "-q")
    cli("judge", "oracle", ev / "quality", "--oracle-column", "entity_id")
    cli("report", ev, "-q")  # the evaluation's report rebuilt in place
    cli("evaluate", *INPUTS, "--sample-size", 50, "--budget", 12, "--seed", 1, "--out", ev, "-q")  # over it
    outputs = [pairs, tmp_path / "judged.csv", tmp_path / "sample.parquet", tmp_path / "imp",
               tmp_path / "report.html", tmp_path / "report.md", ev]
    assert all(p.exists() for p in outputs)
    assert (pairs / "tasks.csv").exists() and (ev / "quality" / "judgements.sqlite").exists()
    assert wrong_modes(outputs, umask) == {}
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left
