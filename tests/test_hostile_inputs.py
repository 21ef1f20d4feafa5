"""Every bad input, one line (issue 13, item 7): a catalogue of hostile inputs to every command.

Each row of ``CASES`` is one bad input: an id, a setup that makes it in a fresh copy of a
workspace (the bundled FEBRL example, a judged pair sample, another sample, an exploration
sample and an impact output), the command line, and the culprit the message must name (the
file, column, row, id or path). For every row the command must

- exit 1 with exactly one line of output (exit 2 with click's usage message only for an
  option that does not parse), and no traceback;
- name the culprit;
- leave every file under the test's directory byte for byte as it was, and create nothing
  (no half-written output, no empty directory, no temporary file left behind).

A few rows also run as real processes of ``.venv/bin/abcde`` to prove that no traceback
reaches stderr outside click's test runner.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from abcde.cli import main
from abcde.examples import example_paths

P = example_paths("febrl3")
ROOT = os.geteuid() == 0  # permissions do not stop root: the read-only/unreadable rows need another user
SECRET = "SECRETKEY-5f3a9"


def error_lines(out: str) -> list[str]:
    """The non-blank lines of an output but the progress display's status lines (``abcde: step … 10 s``,
    ``abcde: ✓ step``: printed on a slow machine while a step runs, issue 39 part 10): what a refusal
    printed, whatever the machine's speed."""
    return [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("abcde: ")]


# -- the workspace every case starts from -------------------------------------------------------

def _cli(*args) -> None:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The bundled example's files, a judged pair sample with slice multipliers (``pairs``), another
    sample (``other``: Base and Exp swapped), an exploration sample and an earlier impact output."""
    w = tmp_path_factory.mktemp("pristine")
    for role in ("base", "exp", "items", "truth"):
        shutil.copy(P[role], w / f"{role}.parquet")
    inputs = ["--items", w / "items.parquet"]
    _cli("pairs", "--base", w / "base.parquet", "--exp", w / "exp.parquet", *inputs, "--budget", 20, "--seed", 1,
         "--slice-by", "source", "--out", w / "pairs")
    _cli("judge", "oracle", w / "pairs", "--oracle-column", "entity_id")
    _cli("judge", "export", w / "pairs", "--out", w / "judged.csv")
    _cli("pairs", "--base", w / "exp.parquet", "--exp", w / "base.parquet", *inputs, "--budget", 20, "--seed", 2,
         "--out", w / "other")
    _cli("explore", "sample", "--base", w / "base.parquet", "--exp", w / "exp.parquet", *inputs, "--size", 50,
         "--seed", 1, "--out", w / "sample.parquet")
    _cli("impact", "--base", w / "base.parquet", "--exp", w / "exp.parquet", *inputs, "--out", w / "imp")
    # small integer-id inputs
    pq.write_table(pa.table({"item_id": [1, 2, 3, 4, 5], "cluster_id": ["a", "a", "a", "b", "b"]}), w / "ibase.parquet")
    pq.write_table(pa.table({"item_id": [1, 2, 3, 4, 5], "cluster_id": ["a", "a", "c", "c", "b"]}), w / "iexp.parquet")
    return w


@pytest.fixture
def ws(pristine, tmp_path) -> Path:
    w = tmp_path / "w"
    shutil.copytree(pristine, w)
    return w


def snapshot(d: Path) -> dict:
    """Every file (with a digest of its bytes) and every directory below ``d``."""
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# -- setups: each makes one bad input in the workspace ------------------------------------------

def write_pq(path: Path, **cols) -> None:
    pq.write_table(pa.table(cols), path)


def nothing(w: Path) -> None:
    pass


def empty_file(name):
    def setup(w):
        (w / name).write_bytes(b"")
    return setup


def text_file(name, text: str | bytes):
    def setup(w):
        (w / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return setup


def truncated_base(w):
    data = (w / "base.parquet").read_bytes()
    (w / "cut.parquet").write_bytes(data[: len(data) // 2])


def parquet_named_csv(w):
    shutil.copy(w / "base.parquet", w / "base.csv")


def clustering(name, **cols):
    def setup(w):
        write_pq(w / name, **cols)
    return setup


def items_with_weight(values, name="witems.parquet"):
    def setup(w):
        write_pq(w / name, item_id=[1, 2, 3, 4, 5], weight=pa.array(values, pa.float64()))
    return setup


def nested_items(w):
    write_pq(w / "nitems.parquet", item_id=[1, 2, 3, 4, 5], weight=[1.0] * 5,
             address=[{"city": c, "zip": 1} for c in "abcde"], tags=[["x"], ["y"], [], ["x", "y"], ["z"]])


def user_directory(name, files=("notes.txt",)):
    def setup(w):
        d = w / name
        d.mkdir(exist_ok=True)
        for f in files:
            (d / f).write_text("a user's file, not abcde's\n")
    return setup


def user_dir_in_output(w):
    """An earlier impact output whose items.parquet is now someone's directory of data."""
    (w / "imp" / "items.parquet").unlink()
    (w / "imp" / "items.parquet").mkdir()
    (w / "imp" / "items.parquet" / "part-0.parquet").write_bytes((w / "items.parquet").read_bytes())


def a_file(name, text="x"):
    def setup(w):
        (w / name).write_text(text)
    return setup


def read_only_dir(name):
    def setup(w):
        d = w / name
        d.mkdir()
        d.chmod(0o555)
    return setup


def unreadable(name):
    def setup(w):
        shutil.copy(w / "base.parquet", w / name)
        (w / name).chmod(0)
    return setup


def remove(rel):
    def setup(w):
        (w / rel).unlink()
    return setup


def sample_without(fname):
    def setup(w):
        (w / "pairs" / fname).unlink()
    return setup


def corrupt_in_sample(fname):
    def setup(w):
        (w / "pairs" / fname).write_bytes(b"PAR1 not a parquet file at all PAR1")
    return setup


def edited_metadata(w):
    m = json.loads((w / "pairs" / "metadata.json").read_text())
    m["budget"] = 10_000
    (w / "pairs" / "metadata.json").write_text(json.dumps(m, indent=2))


def swapped_pairs(w):
    shutil.copy(w / "other" / "pairs.parquet", w / "pairs" / "pairs.parquet")


def changed_items(w):
    t = pq.read_table(w / "items.parquet")
    k = t.column_names.index("weight")
    pq.write_table(t.set_column(k, "weight", pa.array([v * 2 for v in t.column("weight").to_pylist()])),
                   w / "items.parquet")


def pair_ids(w) -> list[str]:
    return pq.read_table(w / "pairs" / "pairs.parquet").column("pair_id").to_pylist()


def judgement_file(name, make):
    """A judgement file whose text ``make(first_pair_id)`` returns."""
    def setup(w):
        text = make(pair_ids(w)[0])
        (w / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return setup


def parquet_sample_file(w):
    """A Parquet file that is not an exploration sample."""
    shutil.copy(w / "base.parquet", w / "notasample.parquet")


def callable_module(w):
    (w / "judges.py").write_text("def other(a, b):\n    return 'same'\n")


def prompt_without_placeholders(w):
    (w / "prompt.txt").write_text("Are these the same person?\n")


# -- the catalogue --------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    setup: Callable[[Path], None]
    argv: list[str]
    culprit: str | list[str]  # formatted with w=<workspace>
    exit: int = 1
    absent: list[str] = field(default_factory=list)  # strings that must not be printed
    marks: tuple = ()


B, E, I = "{w}/base.parquet", "{w}/exp.parquet", "{w}/items.parquet"
IMPACT = ["impact", "--base", B, "--exp", E]
IMPACT_I = [*IMPACT, "--items", I]
SMALL = ["impact", "--base", "{w}/ibase.parquet", "--exp", "{w}/iexp.parquet"]
PAIRS = ["pairs", "--base", B, "--exp", E, "--items", I, "--seed", "1"]
SAMPLE = ["explore", "sample", "--base", B, "--exp", E, "--items", I, "--seed", "1"]
REPORT = ["report", "--base", B, "--exp", E, "--items", I]
root_skip = pytest.mark.skipif(ROOT, reason="permissions do not stop root")


CASES = [
    # ---- input files: missing, unreadable, empty, corrupt, truncated, wrong format ----
    Case("missing-base", nothing, ["impact", "--base", "{w}/nope.parquet", "--exp", E], "{w}/nope.parquet"),
    Case("json-missing-base", nothing, ["impact", "--base", "{w}/nope.parquet", "--exp", E, "--json"],
         "{w}/nope.parquet"),
    Case("missing-items", nothing, [*IMPACT, "--items", "{w}/nope.csv"], "{w}/nope.csv"),
    Case("base-is-a-directory", nothing, ["impact", "--base", "{w}/pairs", "--exp", E], "{w}/pairs"),
    Case("unreadable-base", unreadable("locked.parquet"), ["impact", "--base", "{w}/locked.parquet", "--exp", E],
         "{w}/locked.parquet", marks=(root_skip,)),
    Case("empty-parquet", empty_file("empty.parquet"), ["impact", "--base", "{w}/empty.parquet", "--exp", E],
         "{w}/empty.parquet"),
    Case("empty-csv", empty_file("empty.csv"), ["impact", "--base", B, "--exp", "{w}/empty.csv"], "{w}/empty.csv"),
    Case("header-only-csv", text_file("head.csv", "item_id,cluster_id\n"),
         ["impact", "--base", "{w}/head.csv", "--exp", E], "{w}/head.csv"),
    Case("corrupt-parquet", text_file("bad.parquet", b"PAR1 garbage PAR1"),
         ["impact", "--base", "{w}/bad.parquet", "--exp", E], "{w}/bad.parquet"),
    Case("truncated-parquet", truncated_base, ["impact", "--base", "{w}/cut.parquet", "--exp", E],
         "{w}/cut.parquet"),
    Case("corrupt-csv", text_file("bad.csv", b'item_id,cluster_id\n1,"a\n2,b,c,d\n\x00\x01'),
         ["impact", "--base", "{w}/bad.csv", "--exp", E], "{w}/bad.csv"),
    Case("binary-csv-not-utf8", text_file("latin.csv", "item_id,cluster_id\n1,Müller\n".encode("utf-16")),
         ["impact", "--base", "{w}/latin.csv", "--exp", E], "{w}/latin.csv"),
    Case("parquet-named-csv", parquet_named_csv, ["impact", "--base", "{w}/base.csv", "--exp", E], "{w}/base.csv"),
    Case("unknown-extension", text_file("base.txt", "item_id,cluster_id\n1,a\n"),
         ["impact", "--base", "{w}/base.txt", "--exp", E], "{w}/base.txt"),
    Case("duplicate-csv-header", text_file("dup.csv", "item_id,item_id,cluster_id\nrec-1-org,rec-1-org,a\n"),
         ["impact", "--base", "{w}/dup.csv", "--exp", E], ["{w}/dup.csv", "'item_id' more than once"]),
    # ---- columns ----
    Case("no-item-id-column", clustering("noid.parquet", id=[1, 2], cluster_id=["a", "b"]),
         ["impact", "--base", "{w}/noid.parquet", "--exp", E], ["'item_id'", "{w}/noid.parquet"]),
    Case("no-cluster-id-column", clustering("nocid.parquet", item_id=["1"], cid=["a"]),
         ["impact", "--base", B, "--exp", "{w}/nocid.parquet"], ["'cluster_id'", "{w}/nocid.parquet"]),
    Case("renamed-item-id-missing", nothing, [*IMPACT, "--item-id", "record"], "'record'"),
    Case("weight-column-missing", nothing, [*IMPACT_I, "--weight-column", "wt"], "'wt'"),
    Case("unknown-slice-by", nothing, [*IMPACT_I, "--slice-by", "colour"], "'colour'"),
    Case("struct-slice-by", nested_items, [*SMALL, "--items", "{w}/nitems.parquet", "--slice-by", "address"],
         "'address'"),
    Case("list-slice-by", nested_items, [*SMALL, "--items", "{w}/nitems.parquet", "--slice-by", "tags"], "'tags'"),
    Case("weight-column-is-struct", nested_items,
         [*SMALL, "--items", "{w}/nitems.parquet", "--weight-column", "address"], "'address'"),
    # ---- values ----
    Case("duplicate-item-id", clustering("dup.parquet", item_id=[1, 2, 2, 3], cluster_id=["a", "a", "b", "c"]),
         ["impact", "--base", "{w}/ibase.parquet", "--exp", "{w}/dup.parquet"], ["{w}/dup.parquet", "first: 2"]),
    Case("null-item-id", clustering("nul.parquet", item_id=pa.array([1, None, 3], pa.int64()), cluster_id=["a"] * 3),
         ["impact", "--base", "{w}/nul.parquet", "--exp", "{w}/iexp.parquet"], ["{w}/nul.parquet", "null item id"]),
    Case("null-cluster-id", clustering("nulc.parquet", item_id=[1, 2, 3], cluster_id=pa.array(["a", None, "b"])),
         ["impact", "--base", "{w}/ibase.parquet", "--exp", "{w}/nulc.parquet"], ["{w}/nulc.parquet", "first: 2"]),
    Case("no-items-in-common", clustering("far.parquet", item_id=[10, 11], cluster_id=["x", "x"]),
         ["impact", "--base", "{w}/ibase.parquet", "--exp", "{w}/far.parquet"], "no item in common"),
    Case("negative-weight", items_with_weight([1.0, 1.0, -2.0, 1.0, 1.0]),
         [*SMALL, "--items", "{w}/witems.parquet"], ["{w}/witems.parquet", "first: 3"]),
    Case("nan-weight", items_with_weight([1.0, float("nan"), 1.0, 1.0, 1.0]),
         [*SMALL, "--items", "{w}/witems.parquet"], ["NaN weight", "first: 2"]),
    Case("infinite-weight", items_with_weight([1.0, 1.0, 1.0, float("inf"), 1.0]),
         [*SMALL, "--items", "{w}/witems.parquet"], ["infinite weight", "first: 4"]),
    Case("zero-total-weight", items_with_weight([0.0] * 5), [*SMALL, "--items", "{w}/witems.parquet"],
         ["{w}/witems.parquet", "zero or negative"]),
    Case("text-weights", clustering("tw.parquet", item_id=[1, 2, 3, 4, 5], weight=["1", "2", "x", "4", "5"]),
         [*SMALL, "--items", "{w}/tw.parquet"], ["{w}/tw.parquet", "'weight'"]),
    Case("items-table-misses-items", clustering("few.parquet", item_id=[1, 2, 3], weight=[1.0, 1.0, 1.0]),
         [*SMALL, "--items", "{w}/few.parquet"], ["{w}/few.parquet", "first: 4, 5"]),
    Case("string-vs-int-ids", nothing, ["impact", "--base", "{w}/ibase.parquet", "--exp", E],
         "integers in some and strings in others"),
    Case("pointwise-truth-missing", nothing, ["pointwise", "--truth", "{w}/nope.parquet", "--clustering", E],
         "{w}/nope.parquet"),
    Case("pointwise-string-vs-int", nothing, ["pointwise", "--truth", "{w}/truth.parquet", "--clustering",
                                              "{w}/iexp.parquet"], "integers in some and strings in others"),
    Case("weights-importance-column-missing", clustering("imp.parquet", cluster_id=["a", "b"], score=[1.0, 2.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--out", "{w}/wout.parquet"], ["'importance'", "{w}/imp.parquet"]),
    Case("weights-out-unknown-format", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 2.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--out", "{w}/wout.txt"], "{w}/wout.txt"),
    Case("weights-negative-floor", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 0.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--floor", "-1", "--out", "{w}/wout.parquet"], "floor"),
    Case("weights-negative-importance", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, -5.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--out", "{w}/wout.parquet"], ["{w}/imp.parquet", "'b'"]),
    # ---- output paths ----
    Case("impact-out-user-directory", user_directory("mine"), [*IMPACT, "--out", "{w}/mine"], ["{w}/mine", "notes.txt"]),
    Case("impact-out-user-dir-in-output", user_dir_in_output, [*IMPACT, "--out", "{w}/imp"],
         "{w}/imp/items.parquet"),
    Case("impact-out-partial-earlier-output", remove("imp/impact.json"), [*IMPACT, "--out", "{w}/imp"],
         ["{w}/imp", "'impact.json'"]),
    Case("impact-out-other-commands-output", nothing, [*IMPACT, "--out", "{w}/pairs"], "{w}/pairs"),
    Case("pointwise-out-impact-output", nothing,
         ["pointwise", "--truth", "{w}/truth.parquet", "--clustering", E, "--out", "{w}/imp"], "{w}/imp"),
    Case("impact-out-file-in-the-way", a_file("afile"), [*IMPACT, "--out", "{w}/afile/out"], "{w}/afile"),
    Case("impact-out-is-a-file", a_file("afile"), [*IMPACT, "--out", "{w}/afile"], "afile", exit=2),
    Case("impact-out-read-only", read_only_dir("ro"), [*IMPACT, "--out", "{w}/ro/out"], "{w}/ro",
         marks=(root_skip,)),
    Case("weights-out-is-an-input", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 2.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--out", "{w}/iexp.parquet"], "{w}/iexp.parquet"),
    Case("weights-out-missing-parent", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 2.0]),
         ["weights", "--past", "{w}/ibase.parquet", "--importance", "{w}/imp.parquet", "--base", "{w}/ibase.parquet",
          "--exp", "{w}/iexp.parquet", "--out", "{w}/no/such/dir/w.parquet"], "{w}/no/such/dir"),
    Case("sample-out-file-in-the-way", a_file("afile"), [*SAMPLE, "--size", "10", "--out", "{w}/afile/s.parquet"],
         "{w}/afile"),
    Case("sample-out-overwrites-input", nothing, [*SAMPLE, "--size", "10", "--out", I], I),
    Case("sample-out-not-parquet", nothing, [*SAMPLE, "--size", "10", "--out", "{w}/s.csv"], "{w}/s.csv"),
    Case("sample-out-is-a-directory", nothing, [*SAMPLE, "--size", "10", "--out", "{w}/pairs"], "pairs", exit=2),
    Case("pairs-out-file-in-the-way", a_file("afile"), [*PAIRS, "--budget", "5", "--out", "{w}/afile/p"],
         "{w}/afile"),
    Case("pairs-out-another-sample", nothing, [*PAIRS, "--budget", "5", "--out", "{w}/other"], "{w}/other"),
    Case("report-out-file-in-the-way", a_file("afile"), [*REPORT, "--out", "{w}/afile/r.html"], "{w}/afile"),
    Case("report-markdown-file-in-the-way", a_file("afile"),
         [*REPORT, "--out", "{w}/r.html", "--markdown", "{w}/afile/r.md"], "{w}/afile"),
    Case("demo-out-is-a-file", a_file("afile"), ["demo", "--out", "{w}/afile"], "afile", exit=2),
    Case("demo-out-user-directory", user_directory("mine", ["items.parquet"]), ["demo", "--out", "{w}/mine"],
         "{w}/mine"),
    # ---- sizes, budgets, seeds ----
    Case("sample-size-zero", nothing, [*SAMPLE, "--size", "0", "--out", "{w}/s.parquet"],
         ["sample size", "Got 0"]),
    Case("sample-size-negative", nothing, [*SAMPLE, "--size", "-5", "--out", "{w}/s.parquet"],
         ["sample size", "Got -5"]),
    Case("pairs-budget-zero", nothing, [*PAIRS, "--budget", "0", "--out", "{w}/p"],
         ["sample budget", "Got 0"]),
    Case("pairs-budget-negative", nothing, [*PAIRS, "--budget", "-3", "--out", "{w}/p"],
         ["sample budget", "Got -3"]),
    Case("pairs-budget-not-a-number", nothing, [*PAIRS, "--budget", "lots", "--out", "{w}/p"], "--budget", exit=2),
    Case("impact-top-negative", nothing, [*IMPACT, "--top", "-1"], "--top", exit=2),
    Case("threads-zero", nothing, [*IMPACT, "--threads", "0"], "--threads", exit=2),
    Case("memory-limit-nonsense", nothing, [*IMPACT, "--memory-limit", "lots"], "'lots'"),
    Case("database-is-a-directory", nothing, [*IMPACT, "--database", "{w}/pairs"], "pairs", exit=2),
    Case("spark-conf-not-key-value", nothing, [*IMPACT, "--spark-conf", "nokey"], "nokey", exit=2),
    Case("query-top-zero", nothing, ["explore", "query", "{w}/sample.parquet", "--top", "0"], "--top", exit=2),
    # ---- pairs ----
    Case("pairs-json-another-sample", nothing, [*PAIRS, "--budget", "5", "--out", "{w}/other", "--json"],
         ["{w}/other", "--force"]),
    Case("pairs-unknown-slice-by", nothing, [*PAIRS, "--budget", "5", "--slice-by", "colour", "--out", "{w}/p"],
         "'colour'"),
    Case("pairs-struct-slice-by", nested_items,
         ["pairs", "--base", "{w}/ibase.parquet", "--exp", "{w}/iexp.parquet", "--items", "{w}/nitems.parquet",
          "--budget", "5", "--seed", "1", "--slice-by", "address", "--out", "{w}/p"], "'address'"),
    Case("pairs-unknown-hide", nothing, [*PAIRS, "--budget", "5", "--hide", "colour", "--out", "{w}/p"], "'colour'"),
    Case("pairs-pilot-not-a-sample", user_directory("mine"),
         [*PAIRS, "--budget", "5", "--allocation", "neyman", "--pilot", "{w}/mine", "--out", "{w}/p"], "{w}/mine"),
    Case("pairs-neyman-without-pilot", nothing, [*PAIRS, "--budget", "5", "--allocation", "neyman", "--out", "{w}/p"],
         "--pilot", exit=2),
    # ---- explore ----
    Case("query-missing-sample", nothing, ["explore", "query", "{w}/nope.parquet"], "{w}/nope.parquet"),
    Case("query-not-a-sample", parquet_sample_file, ["explore", "query", "{w}/notasample.parquet"],
         "{w}/notasample.parquet"),
    Case("query-corrupt-sample", text_file("s.parquet", b"PAR1 nope PAR1"), ["explore", "query", "{w}/s.parquet"],
         "{w}/s.parquet"),
    Case("query-unknown-column", nothing, ["explore", "query", "{w}/sample.parquet", "--where", "colour = 'red'"],
         "'colour'"),
    Case("query-sql-injection", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "source = 'a'; DROP TABLE items; --"], "DROP"),
    Case("query-subquery", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "item_id IN (SELECT item_id FROM items)"],
         "Sub-queries"),
    Case("query-file-function", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "source = (SELECT * FROM read_csv('/etc/passwd'))"],
         ["Unsupported construct", "read_csv('/etc/passwd')"], absent=["root:x:0"]),
    Case("query-function-call", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "getenv('HOME') = '/root'"], "getenv"),
    Case("query-deep-where", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "(" * 3000 + "source = 'a'" + ")" * 3000],
         "nested too deeply"),
    Case("query-huge-where", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", " OR ".join(["colour = 'a'"] * 5000)],
         "Unknown column 'colour'"),
    Case("query-too-long-where", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "source IN (" + ", ".join(["'x'"] * 40_000) + ")"],
         "at most 100,000"),
    Case("query-not-a-condition", nothing, ["explore", "query", "{w}/sample.parquet", "--where", "weight + 1"],
         "Unsupported construct 'weight + 1'"),
    Case("query-unknown-group-by", nothing, ["explore", "query", "{w}/sample.parquet", "--group-by", "colour"],
         "'colour'"),
    Case("query-json-unknown-column", nothing,
         ["explore", "query", "{w}/sample.parquet", "--where", "colour = 'red'", "--json"], "'colour'"),
    Case("serve-missing-sample", nothing, ["explore", "serve", "{w}/nope.parquet", "--port", "0"],
         "{w}/nope.parquet"),
    Case("serve-not-a-sample", parquet_sample_file, ["explore", "serve", "{w}/notasample.parquet", "--port", "0"],
         "{w}/notasample.parquet"),
    Case("serve-base-without-exp", nothing, ["explore", "serve", "{w}/sample.parquet", "--base", B, "--port", "0"],
         "--exp", exit=2),
    # ---- sample directories ----
    Case("quality-missing-dir", nothing, ["quality", "{w}/nope"], "{w}/nope"),
    Case("quality-not-a-sample", user_directory("mine"), ["quality", "{w}/mine"], "{w}/mine"),
    Case("quality-missing-pairs-file", sample_without("pairs.parquet"), ["quality", "{w}/pairs"], "pairs.parquet"),
    Case("quality-missing-items-file", sample_without("items.parquet"), ["quality", "{w}/pairs"], "items.parquet"),
    Case("quality-missing-metadata", sample_without("metadata.json"), ["quality", "{w}/pairs"], "metadata.json"),
    Case("quality-corrupt-pairs", corrupt_in_sample("pairs.parquet"), ["quality", "{w}/pairs"], "pairs.parquet"),
    Case("quality-corrupt-metadata", text_file("pairs/metadata.json", "{not json"), ["quality", "{w}/pairs"],
         "metadata.json"),
    Case("quality-edited-metadata", edited_metadata, ["quality", "{w}/pairs"], "metadata.json"),
    Case("quality-swapped-pairs", swapped_pairs, ["quality", "{w}/pairs"], "pairs.parquet"),
    Case("quality-unknown-slice", nothing, ["quality", "{w}/pairs", "--slice-by", "surname"], "'surname'"),
    Case("quality-json-missing-dir", nothing, ["quality", "{w}/nope", "--json"], "{w}/nope"),
    Case("report-inputs-changed", changed_items, [*REPORT, "--quality", "{w}/pairs", "--out", "{w}/r.html"],
         ["drawn from other inputs", "items"]),
    Case("report-quality-not-a-sample", user_directory("mine"),
         [*REPORT, "--quality", "{w}/mine", "--out", "{w}/r.html"], "{w}/mine"),
    Case("report-sample-not-a-sample", parquet_sample_file,
         [*REPORT, "--sample", "{w}/notasample.parquet", "--out", "{w}/r.html"], "{w}/notasample.parquet"),
    Case("report-judgements-without-quality", nothing, [*REPORT, "--judgements", "{w}/judged.csv", "--out",
                                                        "{w}/r.html"], "--quality", exit=2),
    # ---- judgement files ----
    Case("judgements-unknown-pair", judgement_file("j.csv", lambda p: "pair_id,judgement\nnot-a-pair,same\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], "'not-a-pair'"),
    Case("judgements-bad-answer", judgement_file("j.csv", lambda p: f"pair_id,judgement\n{p},maybe\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "row 1: 'maybe'"]),
    Case("judgements-missing-column", judgement_file("j.csv", lambda p: f"pair_id,answer\n{p},same\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "'judgement'"]),
    Case("judgements-no-pair-column", judgement_file("j.csv", lambda p: "id,judgement\nx,same\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "'pair_id'"]),
    Case("judgements-duplicate-header",
         judgement_file("j.csv", lambda p: f"pair_id,judgement,judgement\n{p},same,different\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "judgement"]),
    Case("judgements-utf16", judgement_file("j.csv", lambda p: f"pair_id,judgement\n{p},same\n".encode("utf-16")),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], "{w}/j.csv"),
    Case("judgements-latin1-jsonl",
         judgement_file("j.jsonl", lambda p: f'{{"pair_id": "{p}", "judgement": "same", "rater": "J\xf6rg"}}\n'
                        .encode("latin-1")), ["quality", "{w}/pairs", "--judgements", "{w}/j.jsonl"], "{w}/j.jsonl"),
    Case("judgements-bad-jsonl", judgement_file("j.jsonl", lambda p: '{"pair_id": "x", "judg\n'),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.jsonl"], "{w}/j.jsonl"),
    Case("judgements-jsonl-not-objects", judgement_file("j.jsonl", lambda p: '[1, 2]\n"same"\n'),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.jsonl"], "{w}/j.jsonl"),
    Case("judgements-empty-file", empty_file("j.csv"), ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"],
         "{w}/j.csv"),
    Case("judgements-unknown-extension", judgement_file("j.xlsx", lambda p: "x"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.xlsx"], "{w}/j.xlsx"),
    Case("judgements-self-contradiction",
         judgement_file("j.csv", lambda p: f"pair_id,judgement,rater\n{p},same,ann\n{p},different,ann\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["'ann'", "row 2"]),
    Case("judgements-int-ids-for-string-sample",
         judgement_file("j.csv", lambda p: "item_a,item_b,judgement\n,rec-1,same\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "Row 1"]),
    Case("judgements-json-bad-answer", judgement_file("j.csv", lambda p: f"pair_id,judgement\n{p},yes\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv", "--json"], "'yes'"),
    # ---- judge ----
    Case("oracle-unknown-column", nothing, ["judge", "oracle", "{w}/pairs", "--oracle-column", "truth"], "'truth'"),
    Case("judge-short-form-unknown-column", nothing, ["judge", "{w}/pairs", "--oracle-column", "truth"], "'truth'"),
    Case("oracle-missing-dir", nothing, ["judge", "oracle", "{w}/nope", "--oracle-column", "entity_id"], "{w}/nope"),
    Case("oracle-out-exists", nothing,
         ["judge", "oracle", "{w}/pairs", "--oracle-column", "entity_id", "--out", "{w}/judged.csv"], "{w}/judged.csv"),
    Case("oracle-corrupt-sample", corrupt_in_sample("items.parquet"),
         ["judge", "oracle", "{w}/pairs", "--oracle-column", "entity_id"], "items.parquet"),
    Case("export-out-exists", nothing, ["judge", "export", "{w}/pairs", "--out", "{w}/judged.csv"], "{w}/judged.csv"),
    Case("export-json-out-exists", nothing, ["judge", "export", "{w}/pairs", "--out", "{w}/judged.csv", "--json"],
         "{w}/judged.csv"),
    Case("export-unknown-extension", nothing, ["judge", "export", "{w}/pairs", "--out", "{w}/j.xlsx"], "{w}/j.xlsx"),
    Case("export-out-file-in-the-way", a_file("afile"), ["judge", "export", "{w}/pairs", "--out", "{w}/afile/j.csv"],
         "{w}/afile"),
    Case("export-no-store", nothing, ["judge", "export", "{w}/other", "--out", "{w}/j.csv"], "{w}/other"),
    Case("export-swapped-pairs", swapped_pairs, ["judge", "export", "{w}/pairs", "--out", "{w}/j.csv"],
         "pairs.parquet"),
    Case("model-key-in-base-url", nothing,
         ["judge", "model", "{w}/pairs", "--model", "m", "--llm-base-url", f"https://k:{SECRET}@example.invalid/v1"],
         "carries credentials", absent=[SECRET]),
    Case("model-json-key-in-base-url", nothing,
         ["judge", "model", "{w}/pairs", "--model", "m", "--json", "--llm-base-url",
          f"http://user:{SECRET}@127.0.0.1:9/v1"], "carries credentials", absent=[SECRET]),
    Case("model-key-in-query", nothing,
         ["judge", "model", "{w}/pairs", "--model", "m", "--llm-base-url",
          f"http://127.0.0.1:9/v1?api_key={SECRET}"], "credentials", absent=[SECRET]),
    Case("model-no-judge", nothing, ["judge", "model", "{w}/pairs"], "--model"),
    Case("model-callable-missing-module", nothing, ["judge", "model", "{w}/pairs", "--callable", "{w}/nope.py:judge"],
         "{w}/nope.py"),
    Case("model-callable-missing-function", callable_module,
         ["judge", "model", "{w}/pairs", "--callable", "{w}/judges.py:judge"], "'judge'"),
    Case("model-callable-raises-on-import", text_file("judges.py", "import nonexistent_pkg_q\n"),
         ["judge", "model", "{w}/pairs", "--callable", "{w}/judges.py:judge"], ["judges.py", "nonexistent_pkg_q"]),
    Case("model-callable-syntax-error", text_file("judges.py", "def judge(a, b)\n    return 'same'\n"),
         ["judge", "model", "{w}/pairs", "--callable", "{w}/judges.py:judge"], ["judges.py", "SyntaxError"]),
    Case("model-callable-no-colon", nothing, ["judge", "model", "{w}/pairs", "--callable", "judges"], "judges"),
    Case("model-prompt-without-placeholders", prompt_without_placeholders,
         ["judge", "model", "{w}/pairs", "--model", "m", "--llm-base-url", "http://127.0.0.1:9/v1",
          "--prompt-template", "{w}/prompt.txt"], ["{w}/prompt.txt", "must contain {{item_a}} and {{item_b}}"]),
    Case("model-missing-dir", nothing, ["judge", "model", "{w}/nope", "--model", "m"], "{w}/nope"),
    Case("serve-judge-missing-dir", nothing, ["judge", "serve", "{w}/nope", "--port", "0"], "{w}/nope"),
    Case("serve-judge-swapped-pairs", swapped_pairs, ["judge", "serve", "{w}/pairs", "--port", "0"],
         "pairs.parquet"),
    Case("serve-judge-items-changed", corrupt_in_sample("items.parquet"),
         ["judge", "serve", "{w}/pairs", "--port", "0"], "items.parquet"),
    Case("serve-judge-not-a-sample", user_directory("mine"), ["judge", "serve", "{w}/mine", "--port", "0"],
         "{w}/mine"),
]


def _params() -> list:
    return [pytest.param(c, id=c.id, marks=c.marks) for c in CASES]


def run(ws: Path, case: Case, monkeypatch):
    # A serve command that wrongly accepts its input would block: make serving itself a failure.
    import abcde.web.transport as web_server

    def no_serving(self, *a, **k):
        raise AssertionError("a bad input was served")

    monkeypatch.setattr(web_server.Server, "serve_forever", no_serving)
    argv = [a.format(w=ws) for a in case.argv]
    return CliRunner().invoke(main, argv, catch_exceptions=True)


@pytest.mark.parametrize("case", _params())
def test_hostile_input(case: Case, ws, tmp_path, monkeypatch):
    case.setup(ws)
    before = snapshot(tmp_path)
    r = run(ws, case, monkeypatch)
    out = r.output
    assert isinstance(r.exception, SystemExit), f"not handled: {r.exception!r}\n{out}"
    assert r.exit_code == case.exit, out
    assert "Traceback" not in out, out
    if case.exit == 1:
        lines = error_lines(out)
        assert len(lines) == 1 and lines[0].startswith("Error: "), f"not one line:\n{out}"
    culprits = case.culprit if isinstance(case.culprit, list) else [case.culprit]
    for c in culprits:
        assert c.format(w=ws) in out, f"culprit {c.format(w=ws)!r} not named:\n{out}"
    for s in case.absent:
        assert s not in out
    after = snapshot(tmp_path)
    assert after == before, {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                             if before.get(k) != after.get(k)}


def test_the_catalogue_covers_every_command():
    ids = {c.id for c in CASES}
    assert len(ids) == len(CASES) >= 50
    commands = {tuple(a for a in c.argv[:2] if not a.startswith(("-", "{"))) for c in CASES}
    for cmd in [("impact",), ("pointwise",), ("weights",), ("pairs",), ("quality",), ("report",), ("demo",),
                ("explore", "sample"), ("explore", "query"), ("explore", "serve"), ("judge", "oracle"),
                ("judge", "model"), ("judge", "export"), ("judge", "serve")]:
        assert any(c[: len(cmd)] == cmd for c in commands), cmd


# -- the same promise outside click's test runner: real processes, stderr only -----------------------

ABCDE = Path(sys.executable).with_name("abcde")


@pytest.mark.parametrize("case_id", ["corrupt-parquet", "query-deep-where", "quality-json-missing-dir",
                                     "model-key-in-base-url", "impact-out-user-directory"])
def test_no_traceback_reaches_stderr(case_id, ws, tmp_path):
    case = next(c for c in CASES if c.id == case_id)
    case.setup(ws)
    before = snapshot(tmp_path)
    argv = [a.format(w=ws) for a in case.argv]
    exe = [str(ABCDE)] if ABCDE.exists() else [sys.executable, "-m", "abcde"]
    p = subprocess.run([*exe, *argv], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    assert p.stdout == ""
    lines = error_lines(p.stderr)
    assert len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    culprits = case.culprit if isinstance(case.culprit, list) else [case.culprit]
    assert all(c.format(w=ws) in p.stderr for c in culprits), p.stderr
    assert all(s not in p.stderr for s in case.absent)
    assert snapshot(tmp_path) == before


# -- what the refusals must not refuse -----------------------------------------------------------------

def test_an_earlier_impact_output_is_replaced(ws):
    """impact --out DIR replaces its own earlier output in DIR (and only that: see the rows above)."""
    before = snapshot(ws / "imp")
    r = CliRunner().invoke(main, ["impact", "--base", str(ws / "exp.parquet"), "--exp", str(ws / "base.parquet"),
                                  "--out", str(ws / "imp"), "--json"])
    assert r.exit_code == 0, r.output
    after = snapshot(ws / "imp")
    assert set(after) == set(before) and after["impact.json"] != before["impact.json"]
    empty = ws / "empty"
    empty.mkdir()
    r = CliRunner().invoke(main, ["impact", "--base", str(ws / "base.parquet"), "--exp", str(ws / "exp.parquet"),
                                  "--out", str(empty)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in empty.iterdir()) == ["base_clusters.parquet", "exp_clusters.parquet",
                                                      "impact.json", "items.parquet"]


def test_an_earlier_sample_and_demo_directory_are_replaced(ws):
    from abcde.errors import InputError
    from abcde.workflow.evaluate import check_out_dir

    def check_demo_dir(d):
        check_out_dir(d, "demo")

    r = CliRunner().invoke(main, [*[a.format(w=ws) for a in SAMPLE], "--size", "20", "--out",
                                  str(ws / "sample.parquet")])
    assert r.exit_code == 0, r.output
    demo = ws / "demo"
    (demo / "impact").mkdir(parents=True)
    (demo / "report.html").write_text("<html>")
    check_demo_dir(demo)  # an earlier demo's directory: accepted
    check_demo_dir(ws / "new")
    (demo / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        check_demo_dir(demo)


def test_a_long_generated_filter_still_works(ws):
    """The filter's size limits refuse hostile filters, not long generated ones (4,000 ORs)."""
    where = " OR ".join(f"given_name = 'n{i}'" for i in range(4000))
    r = CliRunner().invoke(main, ["explore", "query", str(ws / "sample.parquet"), "--where", where, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["slice"]["sampled_items"] == 0


def test_nested_attributes_are_written_to_task_files_as_json(ws):
    """Items with struct/list attributes can be drawn: tasks.csv holds them as JSON text."""
    nested_items(ws)
    r = CliRunner().invoke(main, ["pairs", "--base", str(ws / "ibase.parquet"), "--exp", str(ws / "iexp.parquet"),
                                  "--items", str(ws / "nitems.parquet"), "--budget", "5", "--seed", "1",
                                  "--out", str(ws / "p")])
    assert r.exit_code == 0, r.output
    assert '""city"": ""' in (ws / "p" / "tasks.csv").read_text()


# -- issue 25, classes 1 and 2: stale inputs and refused whole jobs (appended block) ------------------
# A file changed where a partial fingerprint could not see it (same size, modification time put back)
# is named as changed since the sample was drawn, never blamed on abcde; a whole job refused part
# way leaves its earlier directory byte for byte as it was.

def _plain_sample_changed_in_the_middle(w: Path) -> None:
    """``{w}/plainbase.parquet`` (values stored plainly), a sample drawn from it into ``{w}/plainpairs``,
    then one item's cluster id rewritten in place: same size, modification time put back."""
    import struct

    t = pq.read_table(w / "base.parquet")
    f = w / "plainbase.parquet"
    pq.write_table(t, f, compression="none", use_dictionary=False, write_statistics=False)
    _cli("pairs", "--base", f, "--exp", w / "exp.parquet", "--items", w / "items.parquet", "--budget", 20,
         "--seed", 1, "--out", w / "plainpairs", "-q")
    ids = t.column("cluster_id").to_pylist()
    row = len(ids) // 2
    other = next(v for v in ids if len(v) == len(ids[row]) and v != ids[row])

    def plain(values):
        return b"".join(struct.pack("<i", len(v.encode())) + v.encode() for v in values)

    data = f.read_bytes()
    pattern = plain(ids[row - 1:row + 2])
    assert data.count(pattern) == 1
    at = data.index(pattern) + len(plain(ids[row - 1:row]))
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.seek(at)
        fh.write(plain([other]))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and pq.read_table(f).column("cluster_id")[row].as_py() == other


def _an_earlier_evaluation(w: Path) -> None:
    _cli("evaluate", "--base", w / "base.parquet", "--exp", w / "exp.parquet", "--items", w / "items.parquet",
         "--sample-size", 50, "--budget", 12, "--seed", 1, "--out", w / "ev", "-q")


PLAIN = ["--base", "{w}/plainbase.parquet", "--exp", E, "--items", I]
CASES_25 = [
    Case("extend-input-changed-in-the-middle", _plain_sample_changed_in_the_middle,
         ["pairs", "--extend", "{w}/plainpairs", "--budget", "30"],
         ["{w}/plainbase.parquet", "'plainbase.parquet' changed since the sample was drawn"], absent=["bug"]),
    Case("report-quality-input-changed-in-the-middle", _plain_sample_changed_in_the_middle,
         ["report", *PLAIN, "--quality", "{w}/plainpairs", "--out", "{w}/r.html"],
         ["{w}/plainbase.parquet", "'plainbase.parquet' changed since the sample was drawn"], absent=["bug"]),
    Case("evaluate-another-sample-refused-leaves-the-earlier-run", _an_earlier_evaluation,
         ["evaluate", "--base", E, "--exp", B, "--items", I, "--sample-size", "50", "--budget", "12", "--seed", "1",
          "--out", "{w}/ev", "-q"], ["{w}/ev/quality", "already holds pair sample"]),
    Case("evaluate-out-holds-a-user-file-in-impact", lambda w: (_an_earlier_evaluation(w),
                                                                (w / "ev" / "impact" / "notes.txt").write_text("mine")),
         ["evaluate", "--base", B, "--exp", E, "--items", I, "--sample-size", "50", "--budget", "12", "--seed", "1",
          "--out", "{w}/ev", "-q"], ["{w}/ev", "impact/notes.txt"]),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES_25])
def test_hostile_input_issue_25(case: Case, ws, tmp_path, monkeypatch):
    test_hostile_input(case, ws, tmp_path, monkeypatch)


# -- issue 25, classes 3 and 4: the judgement store and the model judge (appended block) -------------
# A store that is not usable (truncated, a zeroed page, not a database, empty, someone else's SQLite
# file, a directory in its place, another sample's) is one line naming it from every command that
# opens it, and nothing is written; a model judge without a key for an endpoint elsewhere, or with a
# key for plain http:// elsewhere, is refused before anything is sent. A write-ahead log that is not
# the store's own is moved aside (kept byte for byte) and nothing else changes.

def _in_store(change):
    def setup(w: Path) -> None:
        (w / "judges.py").write_text("def judge(a, b):\n    return 'same'\n")
        change(w / "pairs" / "judgements.sqlite")
    return setup


def _truncated_store(f: Path) -> None:
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _zeroed_page_store(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[2 * 4096:3 * 4096] = bytes(4096)
    f.write_bytes(bytes(data))


def _directory_store(f: Path) -> None:
    f.unlink()
    f.mkdir()


def _someone_elses_store(f: Path) -> None:
    import sqlite3

    f.unlink()
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE recipes (name TEXT)")
    con.commit()
    con.close()


def _store_of_another_sample(w: Path) -> None:
    shutil.copy(w / "pairs" / "judgements.sqlite", w / "other" / "judgements.sqlite")


STORE = "{w}/pairs/judgements.sqlite"
CASES_25_STORE = [
    Case("store-truncated-export", _in_store(_truncated_store), ["judge", "export", "{w}/pairs", "--out", "{w}/j.csv"],
         [STORE, "truncated"]),
    Case("store-zeroed-page-oracle", _in_store(_zeroed_page_store),
         ["judge", "oracle", "{w}/pairs", "--oracle-column", "entity_id"], [STORE, "damaged"]),
    Case("store-not-a-database-quality", _in_store(lambda f: f.write_text("pair_id,judgement\n")),
         ["quality", "{w}/pairs"], [STORE, "not an SQLite database"]),
    Case("store-empty-serve", _in_store(lambda f: f.write_bytes(b"")), ["judge", "serve", "{w}/pairs", "--port", "0"],
         [STORE, "empty"]),
    Case("store-a-directory-model", _in_store(_directory_store),
         ["judge", "model", "{w}/pairs", "--callable", "{w}/judges.py:judge"], [STORE, "is a directory"]),
    Case("store-someone-elses-database-export", _in_store(_someone_elses_store),
         ["judge", "export", "{w}/pairs", "--out", "{w}/j.csv"], [STORE, "not a judgement store"]),
    Case("store-of-another-sample-export", _store_of_another_sample,
         ["judge", "export", "{w}/other", "--out", "{w}/j.csv"], ["{w}/other/judgements.sqlite", "belongs to sample"]),
    Case("model-no-key", nothing, ["judge", "model", "{w}/pairs", "--model", "m"],
         ["ABCDE_LLM_API_KEY", "OPENAI_API_KEY", "https://api.openai.com/v1"]),
    Case("model-no-key-endpoint-elsewhere", nothing,
         ["judge", "model", "{w}/pairs", "--model", "m", "--llm-base-url", "https://llm.example.invalid/v1", "--json"],
         ["ABCDE_LLM_API_KEY", "https://llm.example.invalid/v1"]),
    Case("model-key-to-plain-http-elsewhere", nothing,
         ["judge", "model", "{w}/pairs", "--model", "m", "--llm-base-url", "http://192.0.2.1:9/v1", "--api-key",
          SECRET], ["http://192.0.2.1:9/v1", "--allow-insecure-http"], absent=[SECRET]),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES_25_STORE])
def test_hostile_input_issue_25_store_and_model(case: Case, ws, tmp_path, monkeypatch):
    for k in ("ABCDE_LLM_API_KEY", "OPENAI_API_KEY", "ABCDE_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(k, raising=False)
    test_hostile_input(case, ws, tmp_path, monkeypatch)


def test_hostile_foreign_wal_is_moved_aside_and_nothing_else_changes(ws, tmp_path, monkeypatch):
    import sqlite3

    from abcde.samples.store import JudgementStore

    # another store of the same sample, its writer killed with its write-ahead log left
    other = tmp_path / "other-store"
    shutil.copytree(ws / "pairs", other, ignore=shutil.ignore_patterns("judgements*", ".judging*"))
    code = ("import os, sqlite3, sys\nfrom abcde.samples.store import JudgementStore\n"
            "st = JudgementStore(sys.argv[1])\nkeep = sqlite3.connect(st.path)\n"
            "keep.execute('SELECT count(*) FROM judgements').fetchone()\n"
            "for p in st.pair_ids[:4]:\n    st.record(p, 'different', rater='bob')\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(other)], check=True, timeout=120)
    wal = ws / "pairs" / "judgements.sqlite-wal"
    shutil.copy(other / "judgements.sqlite-wal", wal)
    shutil.rmtree(other)
    before = snapshot(tmp_path)
    r = run(ws, Case("foreign-wal", nothing, ["judge", "export", "{w}/pairs", "--out", "{w}/j.csv"], ""), monkeypatch)
    lines = error_lines(r.output)
    assert r.exit_code == 1 and len(lines) == 1 and "Traceback" not in r.output, r.output
    assert str(wal) in lines[0] and "was not replayed" in lines[0]
    after = snapshot(tmp_path)
    moved = [k for k in after if k not in before]
    assert len(moved) == 1 and ".refused-" in moved[0] and after[moved[0]] == before[str(wal.relative_to(tmp_path))]
    assert {k: v for k, v in before.items() if k != str(wal.relative_to(tmp_path))} == \
        {k: v for k, v in after.items() if k != moved[0]}
    con = sqlite3.connect(ws / "pairs" / "judgements.sqlite")
    con.close()
    assert not [j for j in JudgementStore(ws / "pairs").live() if j.rater == "bob"]


# -- issue 25, classes 5 and 7: raters and types (appended block) -------------------------------------
# A value of the wrong type in a judgement file (Parquet, JSONL or CSV) is one line naming the file,
# the column, the row and both types; so is a filter comparing a column with a value of another kind.
# A file without a rater column is one rater (itself): its contradiction names the file.

def _judgements_table(name, **cols):
    """A Parquet judgement file: ``cols`` maps a column to ``make(first_pair_id) -> list``."""
    def setup(w):
        p = pair_ids(w)[0]
        pq.write_table(pa.table({c: make(p) for c, make in cols.items()}), w / name)
    return setup


def _jsonl(name, *rows):
    """A JSONL judgement file: each row ``make(first_pair_id) -> dict``, one line each."""
    def setup(w):
        p = pair_ids(w)[0]
        (w / name).write_text("".join(json.dumps(make(p)) + "\n" for make in rows))
    return setup


Q = ["quality", "{w}/pairs", "--judgements", "{w}/j.parquet"]
QJ = ["quality", "{w}/pairs", "--judgements", "{w}/j.jsonl"]
WHERE = ["explore", "query", "{w}/sample.parquet", "--where"]
CASES_25_TYPES = [
    Case("judgements-parquet-integer-answers",
         _judgements_table("j.parquet", pair_id=lambda p: [p], judgement=lambda p: [1]), Q,
         ["{w}/j.parquet", "'judgement'", "int64", "row 1"]),
    Case("judgements-parquet-float-pair-ids", _judgements_table("j.parquet", pair_id=lambda p: [1.5],
                                                                 judgement=lambda p: ["same"]),
         Q, ["{w}/j.parquet", "'pair_id'", "double"]),
    Case("judgements-parquet-list-raters", _judgements_table("j.parquet", pair_id=lambda p: [p],
                                                              judgement=lambda p: ["same"], rater=lambda p: [["ann"]]),
         Q, ["{w}/j.parquet", "'rater'", "list"]),
    Case("judgements-parquet-struct-raters", _judgements_table("j.parquet", pair_id=lambda p: [p],
                                                                judgement=lambda p: ["same"],
                                                                rater=lambda p: [{"name": "ann"}]),
         Q, ["{w}/j.parquet", "'rater'", "struct"]),
    Case("judgements-parquet-integer-timestamps", _judgements_table("j.parquet", pair_id=lambda p: [p],
                                                                     judgement=lambda p: ["same"],
                                                                     timestamp=lambda p: [1700000000]),
         Q, ["{w}/j.parquet", "'timestamp'", "int64"]),
    Case("judgements-jsonl-struct-rater",
         _jsonl("j.jsonl", lambda p: {"pair_id": p, "judgement": "same", "rater": {"name": "ann"}}),
         QJ, ["{w}/j.jsonl", "Row 1", "'rater'", "an object"]),
    Case("judgements-jsonl-mixed-types",
         _jsonl("j.jsonl", lambda p: {"pair_id": p, "judgement": "same", "rater": "ann"},
                lambda p: {"pair_id": p, "judgement": "same", "rater": 7}),
         QJ, ["{w}/j.jsonl", "Row 2", "'rater'", "one column holds one type"]),
    Case("judgements-jsonl-numeric-pair-id", _jsonl("j.jsonl", lambda p: {"pair_id": 12.5, "judgement": "same"}),
         QJ, ["{w}/j.jsonl", "Row 1", "'pair_id'"]),
    Case("judgements-jsonl-key-twice",
         text_file("j.jsonl", '{"pair_id": "x", "judgement": "same", "judgement": "different"}\n'), QJ,
         ["{w}/j.jsonl", "'judgement' twice"]),
    Case("report-judgements-of-the-wrong-type", _judgements_table("j.parquet", pair_id=lambda p: [{"id": p}],
                                                                   judgement=lambda p: ["same"]),
         [*REPORT, "--quality", "{w}/pairs", "--judgements", "{w}/j.parquet", "--out", "{w}/r.html"],
         ["{w}/j.parquet", "'pair_id'", "struct"]),
    Case("judgements-file-without-raters-contradicts-itself",
         judgement_file("j.csv", lambda p: f"pair_id,judgement\n{p},same\n{p},different\n"),
         ["quality", "{w}/pairs", "--judgements", "{w}/j.csv"], ["{w}/j.csv", "no rater named", "row 2"]),
    Case("query-text-column-vs-number", nothing, [*WHERE, "state = 3"],
         ["'state = 3'", "'state' (string)", "a number"]),
    Case("query-number-column-vs-text", nothing, [*WHERE, "weight > 'abc'"], ["'weight' (float64)", "'abc' (text)"]),
    Case("query-in-list-of-mixed-kinds", nothing, [*WHERE, "state IN ('nsw', 3)"],
         ["'state' (string)", "3 (a number)"]),
    Case("query-between-text-bounds-on-a-number", nothing, [*WHERE, "draw_count BETWEEN 'a' AND 'z'"],
         ["'draw_count' (int64)", "'a' (text)"]),
    Case("query-like-on-a-number", nothing, [*WHERE, "weight LIKE '1%'"],
         ["LIKE matches text", "'weight' (float64)"]),
    Case("query-column-vs-column-of-another-kind", nothing, [*WHERE, "state = weight"],
         ["'state' (string)", "'weight' (float64)"]),
    Case("query-compare-with-null", nothing, [*WHERE, "state = NULL"], ["'state = NULL'", "IS NULL"]),
    Case("query-integer-beyond-64-bits", nothing, [*WHERE, "draw_count > 99999999999999999999999"],
         ["99999999999999999999999", "out of range"]),
    Case("query-json-type-mismatch", nothing, [*WHERE, "state = 3", "--json"], ["'state = 3'", "a number"]),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES_25_TYPES])
def test_hostile_input_issue_25_types_and_raters(case: Case, ws, tmp_path, monkeypatch):
    test_hostile_input(case, ws, tmp_path, monkeypatch)


def test_issue_25_types_and_raters_catalogue_has_its_own_ids():
    ids = [c.id for c in CASES_25_TYPES]
    assert len(set(ids)) == len(ids) and not set(ids) & {c.id for c in CASES}


# -- issue 25, classes 6 and 8: weights at the edges of floating point, weights --out (appended block) ------

def extreme_weights(values, name="xitems.parquet"):
    """An items table of the small integer-id inputs (ids 1-5) with these weights."""
    def setup(w):
        write_pq(w / name, item_id=[1, 2, 3, 4, 5], weight=pa.array(values, pa.float64()))
    return setup


def wide_importance(w):
    write_pq(w / "wimp.parquet", cluster_id=["a", "b", "c"], importance=[1e-200, 1.0, 1e100])


SMALL_PAIRS = ["pairs", "--base", "{w}/ibase.parquet", "--exp", "{w}/iexp.parquet", "--seed", "1", "--budget", "3"]
WEIGHTS_CMD = ["weights", "--past", "{w}/ibase.parquet", "--base", "{w}/ibase.parquet", "--exp", "{w}/iexp.parquet"]

CASES_25_WEIGHTS = [
    # a range of weights too wide for double precision: refused, naming the file, the column and both items
    Case("weights-range-too-wide", extreme_weights([1.0, 1e-100, 1.0, 1e150, 1.0]),
         [*SMALL, "--items", "{w}/xitems.parquet"],
         ["{w}/xitems.parquet", "'weight'", "(item 2)", "(item 4)", "too wide for double precision"]),
    Case("pairs-weights-range-too-wide", extreme_weights([1e-170, 1.0, 1.0, 1.0, 1e+40]),
         [*SMALL_PAIRS, "--items", "{w}/xitems.parquet", "--out", "{w}/p"],
         ["{w}/xitems.parquet", "(item 1)", "(item 5)"]),
    Case("sample-weights-range-too-wide", extreme_weights([1.0, 1.0, 1e-300, 1.0, 1e-20]),
         ["explore", "sample", "--base", "{w}/ibase.parquet", "--exp", "{w}/iexp.parquet", "--items",
          "{w}/xitems.parquet", "--size", "3", "--seed", "1", "--out", "{w}/s.parquet"],
         ["{w}/xitems.parquet", "(item 3)", "(item 1)"]),
    # a sample whose remaining pairs carry almost no weight: refused in seconds, not drawn for ever
    Case("pairs-budget-out-of-reach", extreme_weights([1.0, 2.0 ** -60, 1.0, 1.0, 2.0 ** -60]),
         [*SMALL_PAIRS, "--items", "{w}/xitems.parquet", "--estimator", "paper", "--out", "{w}/p"],
         ["1,000,000 draws", "budget of 3"]),
    # importance values too wide apart for the derived weights
    Case("weights-importance-range-too-wide", wide_importance,
         [*WEIGHTS_CMD, "--importance", "{w}/wimp.parquet", "--out", "{w}/wout.parquet"],
         ["{w}/wimp.parquet", "'importance'", "too wide for double precision"]),
    # class 8: weights --out never overwrites a file (someone's data) unless --force
    Case("weights-out-exists", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 2.0]),
         [*WEIGHTS_CMD, "--importance", "{w}/imp.parquet", "--out", "{w}/judged.csv"],
         ["{w}/judged.csv", "exists", "--force"]),
    Case("weights-json-out-exists", clustering("imp.parquet", cluster_id=["a", "b"], importance=[1.0, 2.0]),
         [*WEIGHTS_CMD, "--importance", "{w}/imp.parquet", "--out", "{w}/items.parquet", "--json"],
         ["{w}/items.parquet", "--force"]),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES_25_WEIGHTS])
def test_hostile_input_issue_25_weights(case: Case, ws, tmp_path, monkeypatch):
    test_hostile_input(case, ws, tmp_path, monkeypatch)


def test_issue_25_weights_catalogue_has_its_own_ids():
    ids = [c.id for c in CASES_25_WEIGHTS]
    others = {c.id for c in CASES}
    for name in ("CASES_25", "CASES_25_STORE", "CASES_25_TYPES"):
        others |= {c.id for c in globals().get(name, [])}
    assert len(set(ids)) == len(ids) and not set(ids) & others


# -- issue 30: invite links (appended block) -----------------------------------------------------------
# Serving to other machines needs invite links: on any address but loopback without --raters (and
# without invites in the store) the server refuses to start, in one line naming what to pass, before
# anything is opened or bound. A bad --raters (a bad or reserved name, a name twice, a file that is
# missing, not a file, empty, not UTF-8 or huge) or --public-url, and every refusal of 'judge raters'
# (an unknown name, a name both revoked and re-made, a bad directory) is one line, and writes nothing:
# not a store, not an invite.

def _invited(*names):
    """The judged sample with invite links (made through the store, as 'judge serve --raters' does)."""
    def setup(w: Path) -> None:
        from abcde.samples.invites import InviteBook
        from abcde.samples.raters import OWNER
        from abcde.samples.store import JudgementStore

        InviteBook(JudgementStore(w / "pairs")).invite([*names, OWNER])
    return setup


SERVE_P = ["judge", "serve", "{w}/pairs", "--port", "0"]
RATERS = ["judge", "raters", "{w}/pairs"]
CASES_30 = [
    Case("serve-judge-other-address-without-raters", nothing, [*SERVE_P, "--host", "0.0.0.0"],
         ["'0.0.0.0'", "--raters NAME,NAME"]),
    Case("serve-judge-all-interfaces-v6-without-raters", nothing, [*SERVE_P, "--host", "::", "--json"],
         ["'::'", "--raters"]),
    Case("serve-judge-other-address-no-store-creates-none", nothing,
         ["judge", "serve", "{w}/other", "--port", "0", "--host", "192.0.2.7"], ["'192.0.2.7'", "--raters"]),
    Case("serve-judge-raters-bad-name", nothing, [*SERVE_P, "--raters", "ann,<script>alert(1)</script>"],
         ["--raters", "'<script>alert(1)</script>'"]),
    Case("serve-judge-raters-name-twice", nothing, [*SERVE_P, "--raters", "ann,bob,ann"], ["'ann' twice"]),
    Case("serve-judge-raters-owner", nothing, [*SERVE_P, "--raters", "ann,owner"], ["'owner'", "owner's link"]),
    Case("serve-judge-raters-owner-in-another-case", nothing, [*SERVE_P, "--raters", "OWNER"], ["'OWNER'"]),
    Case("serve-judge-raters-no-names", nothing, [*SERVE_P, "--raters", " , ,"], ["names no rater"]),
    Case("serve-judge-raters-missing-file", nothing, [*SERVE_P, "--raters", "{w}/team.txt"],
         ["{w}/team.txt", "does not exist"]),
    Case("serve-judge-raters-a-directory", nothing, [*SERVE_P, "--raters", "{w}/other"], ["{w}/other", "not a file"]),
    Case("serve-judge-raters-a-device", nothing, [*SERVE_P, "--raters", "/dev/zero"], ["/dev/zero", "not a file"]),
    Case("serve-judge-raters-empty-file", text_file("team.txt", "# nobody yet\n\n"), [*SERVE_P, "--raters",
                                                                                     "{w}/team.txt"],
         ["{w}/team.txt", "names no rater"]),
    Case("serve-judge-raters-not-utf8", text_file("team.txt", b"ann\n\xff\xfebob\n"),
         [*SERVE_P, "--raters", "{w}/team.txt"], ["{w}/team.txt", "not UTF-8"]),
    Case("serve-judge-raters-huge-file", text_file("team.txt", b"ann\n" * 300_000),
         [*SERVE_P, "--raters", "{w}/team.txt"], ["{w}/team.txt", "larger than 1 MB"]),
    Case("serve-judge-raters-bad-name-in-file", text_file("team.txt", "ann\nbob smith\n-carol\n"),
         [*SERVE_P, "--raters", "{w}/team.txt"], ["{w}/team.txt", "'-carol'"]),
    Case("serve-judge-public-url-with-a-path", nothing,
         [*SERVE_P, "--raters", "ann", "--public-url", "https://judge.example.org/abcde/"],
         ["--public-url", "'https://judge.example.org/abcde/'"]),
    Case("serve-judge-public-url-not-http", nothing, [*SERVE_P, "--raters", "ann", "--public-url", "judge.example"],
         ["--public-url", "'judge.example'"]),
    Case("raters-revoke-unknown", nothing, [*RATERS, "--revoke", "bob"], ["'bob'", "{w}/pairs/judgements.sqlite"]),
    Case("raters-revoke-unknown-among-invited", _invited("ann"), [*RATERS, "--revoke", "ann", "--revoke", "zoe"],
         ["'zoe'", "ann, owner"]),
    Case("raters-json-revoke-unknown", _invited("ann"), [*RATERS, "--revoke", "bob", "--json"], ["'bob'"]),
    Case("raters-revoke-without-a-store", nothing, ["judge", "raters", "{w}/other", "--revoke", "ann"],
         ["'ann'", "{w}/other/judgements.sqlite", "no store"]),
    Case("raters-revoke-and-new-link", _invited("ann"), [*RATERS, "--revoke", "ann", "--new-link", "ann"],
         ["'ann'", "--new-link"]),
    Case("raters-new-link-bad-name", nothing, ["judge", "raters", "{w}/other", "--new-link", "<b>"], ["'<b>'"]),
    Case("raters-new-link-bad-public-url", nothing,
         ["judge", "raters", "{w}/other", "--new-link", "ann", "--public-url", "https://x.example/?t=1"],
         ["--public-url", "'https://x.example/?t=1'"]),
    Case("raters-missing-dir", nothing, ["judge", "raters", "{w}/nope"], "{w}/nope"),
    Case("raters-not-a-sample", user_directory("mine"), ["judge", "raters", "{w}/mine"], "{w}/mine"),
    Case("raters-store-truncated", _in_store(_truncated_store), RATERS, [STORE, "truncated"]),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES_30])
def test_hostile_input_issue_30_invites(case: Case, ws, tmp_path, monkeypatch):
    test_hostile_input(case, ws, tmp_path, monkeypatch)


def test_issue_30_invites_catalogue_has_its_own_ids():
    ids = [c.id for c in CASES_30]
    others = {c.id for c in CASES}
    for name in ("CASES_25", "CASES_25_STORE", "CASES_25_TYPES", "CASES_25_WEIGHTS"):
        others |= {c.id for c in globals().get(name, [])}
    assert len(set(ids)) == len(ids) and not set(ids) & others


def test_issue_30_no_traceback_reaches_stderr_and_no_server_starts(ws, tmp_path):
    """The refusal to serve elsewhere without invites, as a real process: one line on stderr,
    nothing on stdout (no URL printed: nothing was bound), nothing written."""
    case = next(c for c in CASES_30 if c.id == "serve-judge-other-address-without-raters")
    before = snapshot(tmp_path)
    exe = [str(ABCDE)] if ABCDE.exists() else [sys.executable, "-m", "abcde"]
    p = subprocess.run([*exe, *[a.format(w=ws) for a in case.argv]], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    assert p.returncode == 1 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr
    lines = error_lines(p.stderr)
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "--raters" in lines[0], p.stderr
    assert snapshot(tmp_path) == before
