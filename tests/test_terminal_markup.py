"""Values from data are printed as the text they are (issue 39, part 2).

An item id, a cluster id, a slice value, a path or an option given to a command is printed as
itself on the terminal: never read as rich markup (``[/]`` crashed ``impact`` with a traceback,
``[bold]x`` printed as a bold ``x``, ``[link=…]`` made a live hyperlink) nor as an emoji code, and
its control characters (an ANSI colour, an OSC 8 hyperlink, an unclosed "conceal" sequence, a
carriage return, a newline in a table cell, a C1 control, a bidi override) are shown, never obeyed.

One place does it (``abcde.util.display``: ``safe_text``, ``styled``, ``safe_console``): the console
every table and message goes through, the progress lines on stderr, and every error message the
``abcde`` group shows. Each test runs the real command line on inputs whose ids and attribute
values are all hostile (:data:`HOSTILE`) and asserts: exit code 0 (no traceback), each value's
visible form (:data:`HOSTILE`'s values) on the output, no control character on it, and the rows
and lines after a hostile value still printed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from abcde.cli import main, tables

OSC8 = "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"

#: A hostile value -> how it must be shown (the text it is; each control character as its escape).
HOSTILE = {
    "[/]": "[/]",
    "[bold]x": "[bold]x",
    "[link=http://evil.example]click[/link]": "[link=http://evil.example]click[/link]",
    ":thumbs_up:": ":thumbs_up:",
    "\x1b[31mred": r"\x1b[31mred",
    OSC8: r"\x1b]8;;http://evil.example\x1b\click\x1b]8;;\x1b" + "\\",
    "\x1b[8mhidden": r"\x1b[8mhidden",
    "a\rb": r"a\rb",
    "line\nbreak": r"line\nbreak",
    "\u202eevil": r"\u202eevil",
    "\x9b31mc1": r"\x9b31mc1",
    "tail-ok": "tail-ok",
}
H = list(HOSTILE)

#: Nothing a terminal obeys: C0 controls but newline, DEL, C1 controls, bidi controls.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(autouse=True)
def plain_console(monkeypatch):
    """A console made afresh for each test, never forced into colours by the environment."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "ABCDE_PROGRESS", "ABCDE_PROGRESS_INTERVAL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tables, "_console", None)


@pytest.fixture
def hostile(tmp_path) -> dict:
    """Base, Exp and items whose item ids, Base and Exp cluster ids and slice attribute ``src`` are
    the hostile values (and every item is affected): 24 items, 12 clusters on each side."""
    n = len(H)
    ids = H + [f"n{k}" for k in range(n)]
    paths = {role: tmp_path / f"{role}.parquet" for role in ("base", "exp", "items")}
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [H[k // 2] for k in range(2 * n)]}), paths["base"])
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [H[(k + 1) // 2 % n] for k in range(2 * n)]}),
                   paths["exp"])
    pq.write_table(pa.table({"item_id": ids, "weight": [1.0] * (2 * n), "src": [H[k % n] for k in range(2 * n)],
                             "entity": [k // 3 for k in range(2 * n)]}), paths["items"])
    return {**paths, "dir": tmp_path}


def run(*args, code: int = 0, env: dict | None = None):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert r.exit_code == code, r.output
    if code == 0:
        assert r.exception is None, r.exception
    else:
        assert isinstance(r.exception, SystemExit), r.exception  # a message, no traceback
    assert "Traceback" not in r.output
    return r


def assert_shown(out: str, values=H, times: int = 1) -> None:
    """No control character on ``out``, and each of ``values`` shown as the text it is."""
    bad = CONTROL.search(out)
    assert bad is None, f"{bad.group()!r} reached the terminal: {out[max(0, bad.start() - 80):bad.end() + 80]!r}"
    for v in values:
        assert out.count(HOSTILE[v]) >= times, f"{HOSTILE[v]!r} not shown {times}x in:\n{out}"


def inputs(h):
    return ["--base", h["base"], "--exp", h["exp"], "--items", h["items"]]


# -- impact -----------------------------------------------------------------------------------------

def test_impact_shows_hostile_cluster_ids_and_slices(hostile):
    """The top clusters table (every cluster id, Base's and Exp's) and the slice table."""
    out = run("impact", *inputs(hostile), "--slice-by", "src", "--top", 50).output
    assert_shown(out, times=3)  # a Base cluster, an Exp cluster, a slice value
    assert "Slices by src" in out and "The 24 most affected clusters" in out
    clusters, slices = out.split("Slices by src")
    assert all(HOSTILE[v] in slices for v in H)  # every row after a hostile one


def test_impact_item_lookup(hostile):
    """``--item '[/]'`` (found), and ids not among the common items, named as they are."""
    out = run("impact", *inputs(hostile), "--item", "[/]", "--item", "[bold]nope", "--item", "\x1b[31mno").output
    assert_shown(out, values=["[/]"])
    lookup = out.split("Item lookup")[1]
    assert "[/]" in lookup
    assert "Not among the common items: \\x1b[31mno, [bold]nope" in out


def test_impact_json_keeps_the_values_exact(hostile):
    """Only the terminal shows escapes: --json carries each value exactly (as JSON escapes it)."""
    d = json.loads(run("impact", *inputs(hostile), "--slice-by", "src", "--item", "[/]", "--json").stdout)
    assert d["lookup"][0]["item_id"] == "[/]"
    assert {r["src"] for r in d["slices"]["src"]} == set(H)


def test_short_hostile_values_in_a_real_table(tmp_path):
    """A table that fits: its hostile cells shown, their columns aligned, the rows after them there."""
    vals = ["[/]", "[b]x", "\x1b[1mz", "c\rd", "e\nf", "tail-ok"]
    ids = [f"{v}{k}" for k in range(2) for v in vals]
    pq.write_table(pa.table({"item_id": ids, "cluster_id": [v for _ in range(2) for v in vals]}),
                   tmp_path / "b.parquet")
    pq.write_table(pa.table({"item_id": ids, "cluster_id": ["one"] * len(ids)}), tmp_path / "e.parquet")
    out = run("impact", "--base", tmp_path / "b.parquet", "--exp", tmp_path / "e.parquet", "--top", 20).output
    assert "one block per row" not in out  # a real table
    assert CONTROL.search(out) is None
    rows = [line for line in out.splitlines() if line.startswith("│ base")]
    assert len(rows) == len(vals)  # one line each: a newline in a cell shown as \n, not a second line
    assert {len(r) for r in rows} == {len(rows[0])}  # aligned: every cell measured as it is shown
    for shown in ("[/]", "[b]x", r"\x1b[1mz", r"c\rd", r"e\nf", "tail-ok"):
        assert any(f"│ {shown} " in r for r in rows), shown


def test_hostile_column_name_and_where(hostile):
    """An attribute column named with markup and escapes, as a slice (impact) and a group
    (explore query) — its header and the table's title — and a ``--where`` shown as a row label."""
    col = "[/]\x1b[31mcol\u202e"
    items = pq.read_table(hostile["items"])
    pq.write_table(items.append_column(col, items.column("src")), hostile["items"])
    out = run("impact", *inputs(hostile), "--slice-by", col).output
    assert_shown(out)
    assert r"Slices by [/]\x1b[31mcol\u202e" in out
    s = hostile["dir"] / "s.parquet"
    run("explore", "sample", *inputs(hostile), "--size", 30, "--seed", 1, "--out", s)
    out = run("explore", "query", s, "--group-by", col, "--where", "src = '[/]'").output
    assert CONTROL.search(out) is None
    assert "where src = '[/]'" in out and r"[/]\x1b[31mcol\u202e" in out and HOSTILE["[/]"] in out


# -- quality, explore, report ---------------------------------------------------------------------

def test_quality_slice_by(hostile):
    """ΔPrecision (and JaccardDistance = good + bad) by a hostile attribute of a judged sample."""
    d = hostile["dir"] / "pairs"
    run("pairs", *inputs(hostile), "--budget", 20, "--seed", 1, "--slice-by", "src", "--out", d)
    run("judge", "oracle", d, "--oracle-column", "entity")
    values = [r["value"] for r in json.loads(run("quality", d, "--slice-by", "src", "--json").stdout)["slices"]["src"]]
    assert len(values) >= 6
    out = run("quality", d, "--slice-by", "src").output
    assert_shown(out, values=values, times=2)
    assert "ΔPrecision by src" in out and out.rstrip().endswith("Judgements used: 20 oracle by 1 rater.")


def test_explore_query_group_by(hostile):
    """Groups by a hostile attribute, and example items with hostile ids and clusters."""
    s = hostile["dir"] / "s.parquet"
    run("explore", "sample", *inputs(hostile), "--size", 50, "--seed", 1, "--out", s)
    groups = json.loads(run("explore", "query", s, "--group-by", "src", "--top", 20, "--json").stdout)["groups"]
    out = run("explore", "query", s, "--group-by", "src", "--top", 20, "--examples", 5).output
    assert_shown(out, values=[g["src"] for g in groups])
    assert len(groups) == len(H) and "example items" in out


def test_report_slice_by(hostile):
    """``report`` prints the impact tables after writing its files, then every file it wrote."""
    out = run("report", *inputs(hostile), "--slice-by", "src", "--out", hostile["dir"] / "rep").output
    assert_shown(out, times=1)  # the 10 most affected clusters; every slice
    assert all(HOSTILE[v] in out.split("Slices by src")[1] for v in H)
    assert out.rstrip().splitlines()[-1].startswith("wrote ")


# -- errors and progress ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, code, shown", [
    # abcde's own errors (handle_errors), naming a path, a column, an option's value
    (["quality", "nope-[/]-\x1b[8m-\u202e"], 1, r"'nope-[/]-\x1b[8m-\u202e' is not a pair sample directory"),
    (["impact", "{inputs}", "--slice-by", "\x1b[31m[/]"], 1, r"Slice column '\x1b[31m[/]' not found"),
    (["impact", "{inputs}", "--item-id", OSC8], 1,
     r"Column '\x1b]8;;http://evil.example\x1b\click\x1b]8;;\x1b\' (item id) not found"),
    (["impact", "--base", "gone-\x1b[31m-[/].parquet", "--exp", "gone.parquet"], 1, r"gone-\x1b[31m-[/].parquet"),
    # not through handle_errors: the engine's own message (a click error, shown by the abcde group)
    (["impact", "{inputs}", "--database", "/nonexistent-dir/\u202e[/].db"], 1, r"/nonexistent-dir/\u202e[/].db"),
    # click's own (it quotes with repr; the group would show it as text if it did not)
    (["impact", "{inputs}", "--\x1b[31mbad"], 2, r"No such option '--\x1b[31mbad'"),
], ids=["path", "column", "id-column", "missing-file", "engine", "click-option"])
def test_error_messages_name_hostile_values_as_text(hostile, argv, code, shown):
    argv = [a for x in argv for a in (inputs(hostile) if x == "{inputs}" else [x])]
    r = run(*argv, code=code)
    assert CONTROL.search(r.output) is None, repr(r.output)
    assert shown in r.output, r.output


@pytest.mark.parametrize("progress", ["1", None], ids=["terminal", "lines"])
def test_progress_names_a_hostile_path_as_text(hostile, progress):
    """A step naming the output directory: the live status on a terminal (``ABCDE_PROGRESS=1``) and
    the lines of a log (every closing line with ``ABCDE_PROGRESS_INTERVAL=0``)."""
    out = hostile["dir"] / "out-[/]-[bold]x"
    env = {"ABCDE_PROGRESS": progress, "ABCDE_PROGRESS_INTERVAL": "0"}
    r = run("impact", *inputs(hostile), "--out", out, env=env)
    assert CONTROL.search(r.stderr) is None
    assert f"Writing per-item and per-cluster tables to {out} (" in r.stderr.replace("\n", ""), r.stderr  # wrapped
    assert r.stdout.count(f"wrote {out}/") == 4  # every file written, named


def test_progress_note_and_step_escape_controls(capsys, monkeypatch):
    """The progress functions themselves, on a terminal and in a log, given control characters."""
    from abcde.util import progress

    for forced in (True, None):  # the rich status and note; plain log lines
        progress.set_enabled(forced)
        monkeypatch.setenv("ABCDE_PROGRESS_INTERVAL", "0")
        try:
            with progress.step(f"step {OSC8} [/]"):
                pass
            progress.note("note \x1b[8m [/] \u202e")
            progress.stage_done("stage \r[bold]x", 1.0, 3)
        finally:
            progress.set_enabled(None)
        err = capsys.readouterr().err
        assert CONTROL.search(err) is None, repr(err)
        for shown in (r"step \x1b]8;;http://evil.example\x1b\click\x1b]8;;\x1b\ [/]", r"note \x1b[8m [/] \u202e",
                      r"stage \r[bold]x (1.0 s, 3 rows)"):
            assert shown in err, err


# -- on a real terminal, in a process of its own ---------------------------------------------------------

ABCDE = Path(sys.executable).with_name("abcde")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours and styles


def test_colour_terminal_obeys_no_sequence_from_data(hostile):
    """With colours on (``FORCE_COLOR``: rich's styles are escape sequences), the only sequences on
    stdout and stderr are rich's colours: none from data, no hyperlink; the data's text is all there."""
    exe = [str(ABCDE)] if ABCDE.exists() else [sys.executable, "-m", "abcde"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ABCDE_PROGRESS")}
    p = subprocess.run([*exe, "impact", *map(str, inputs(hostile)), "--slice-by", "src", "--top", "50",
                        "--item", "[/]"],
                       capture_output=True, timeout=120, env={**env, "FORCE_COLOR": "1", "COLUMNS": "200"})
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    out = p.stdout.decode() + p.stderr.decode()
    assert SGR.search(out)  # colours are on
    plain = SGR.sub("", out)
    assert "\x1b" not in plain  # no colour, hyperlink or "conceal" of the data's: each shown as its text
    assert_shown(plain, times=3)


# -- the one place ---------------------------------------------------------------------------------------

@given(st.text(alphabet="[]/\\ab=#@:{}\x1b\n\r\u202e\x9b", max_size=30))
def test_styled_puts_any_value_in_as_text(value):
    """abcde's own markup around a value from data: the value comes out as its safe text, whatever
    brackets and backslashes it holds."""
    from abcde.util.display import safe_text, styled

    t = styled("[bold]{}[/bold] and [yellow]{}[/yellow]", value, value)
    assert t.plain == f"{safe_text(value)} and {safe_text(value)}"
    assert CONTROL.search(t.plain) is None and "\n" not in t.plain
    assert safe_text(safe_text(value)) == safe_text(value)
