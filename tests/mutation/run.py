#!/usr/bin/env python3
"""Mutation check of the test suite (issue 17, item 2): does a small, plausible bug fail a test?

Applies each mutant of ``tests/mutation/mutants.py`` (one at a time) to a *copy* of the
repository and runs the tests that should kill it. The repository itself is never written:
``src/``, ``tests/`` and ``pyproject.toml`` (as they are in the working tree, uncommitted
changes included) are copied into a scratch directory, and pytest runs there with
``PYTHONPATH=<copy>/src`` (checked: ``import abcde`` must resolve to the copy, not to the
editable install).

Usage (from the repository root, with the project's venv)::

    .venv/bin/python tests/mutation/run.py              # baseline, then every mutant
    .venv/bin/python tests/mutation/run.py --list       # the mutants and their tests
    .venv/bin/python tests/mutation/run.py --only totals-split,paper-se --jobs 2

A baseline run of the union of the selected test files (no mutant) comes first. A file that
fails it is left out of every mutant's selection, loudly (``--strict-baseline``: stop instead):
other engineers may be mid-edit, and a mutant "killed" by an already failing test proves nothing.

Exit status: 0 every mutant killed; 1 some mutant survived; 2 otherwise not clean: a baseline
failure, or a mutant that could not be run (its snippet missing or ambiguous, no test file, a
timeout).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PACKAGE = "src/abcde"
COPY = ("src", "tests", "pyproject.toml")  # what a scratch copy holds
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "*.egg-info")
MARKERS = "not spark and not browser"  # never needed by the estimators' tests; slow or absent


def load_mutants():
    spec = importlib.util.spec_from_file_location("abcde_mutants", HERE / "mutants.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses looks the module up
    spec.loader.exec_module(mod)
    return mod.MUTANTS


@dataclass
class Result:
    mutant: object
    status: str  # killed, survived, error, timeout
    seconds: float = 0.0
    tests: list = field(default_factory=list)  # the test files run
    missing: list = field(default_factory=list)  # test files named but absent
    detail: str = ""  # the killing test, or what went wrong
    output: str = ""


# ----------------------------------------------------------------------------- checks
def check_mutant(m, root: Path) -> str | None:
    """Why the mutant cannot be applied to the sources under ``root`` (None: it can)."""
    path = root / PACKAGE / m.file
    if not path.is_file():
        return f"no file src/abcde/{m.file}"
    text = path.read_text(encoding="utf-8")
    n = text.count(m.find)
    if n != 1:
        return f"snippet found {n} times in src/abcde/{m.file} (must be exactly once): {m.find!r}"
    if m.find == m.replace:
        return "replacement equals the snippet"
    try:
        compile(text.replace(m.find, m.replace), str(path), "exec")
    except SyntaxError as exc:
        return f"the mutated file does not compile: {exc}"
    return None


def existing_tests(m, root: Path) -> tuple[list[str], list[str]]:
    have = [t for t in m.tests if (root / t).is_file()]
    return have, [t for t in m.tests if t not in have]


# ----------------------------------------------------------------------------- the scratch copies
def make_copy(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORE, symlinks=True)
        else:
            shutil.copy2(src, dest / name)
    return dest


def env_for(copy: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy / "src")  # replaces any PYTHONPATH that points at the repository
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no stale .pyc between a mutant and its restore
    env.pop("PYTEST_ADDOPTS", None)
    return env


def check_import(copy: Path) -> None:
    """``import abcde`` in the copy's environment must load the copy (PYTHONPATH must win
    over the editable install of /work/main/src)."""
    r = subprocess.run([sys.executable, "-c", "import abcde, sys; print(abcde.__file__)"], cwd=copy,
                       env=env_for(copy), capture_output=True, text=True, timeout=300)
    got = Path(r.stdout.strip()).resolve() if r.returncode == 0 else None
    if got is None or not got.is_relative_to((copy / "src" / "abcde").resolve()):
        sys.exit(f"run.py: in the scratch copy, 'import abcde' does not load the copy (got "
                 f"{r.stdout.strip() or r.stderr.strip()!r}); refusing to run.")


def write_in(copy: Path, path: Path, text: str) -> None:
    """Write ``path``, which must lie inside the scratch copy (never the repository)."""
    path = path.resolve()
    if not path.is_relative_to(copy.resolve()) or path.is_relative_to(REPO) and not copy.resolve().is_relative_to(REPO):
        raise RuntimeError(f"refusing to write outside the scratch copy: {path}")
    path.write_text(text, encoding="utf-8")


# ----------------------------------------------------------------------------- running pytest
_procs: set = set()
_procs_lock = threading.Lock()


def pytest_cmd(tests, k, *, stop_first: bool) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARKERS, "-rfE",
           "--no-header"]
    if stop_first:
        cmd.append("-x")
    if k:
        cmd += ["-k", k]
    return cmd + list(tests)


def run_pytest(copy: Path, cmd: list[str], timeout: float) -> tuple[int | None, str, float]:
    """Return code (None on timeout), output, seconds. The run is a new process group, ended
    (only it) on timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=copy, env=env_for(copy), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    with _procs_lock:
        _procs.add(p)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        _kill(p)
        out, _ = p.communicate()
        rc = None
    finally:
        with _procs_lock:
            _procs.discard(p)
    return rc, out, time.monotonic() - t0


def _kill(p) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the group of this one pytest run, which we started
    except ProcessLookupError:
        pass


def first_failure(out: str) -> str:
    for line in out.splitlines():
        mm = re.match(r"(FAILED|ERROR) (\S+)", line)
        if mm:
            return mm.group(2)
    return ""


def tail(out: str, n: int = 30) -> str:
    return "\n".join(out.rstrip().splitlines()[-n:])


def run_mutant(m, copy: Path, timeout: float, excluded: dict) -> Result:
    tests, missing = existing_tests(m, copy)
    missing += [t for t in tests if t in excluded]
    tests = [t for t in tests if t not in excluded]
    res = Result(m, "error", tests=tests, missing=missing)
    why = check_mutant(m, copy)
    if why:
        res.detail = why
        return res
    if not tests:
        res.detail = "none of its test files exists: " + ", ".join(m.tests)
        return res
    path = copy / PACKAGE / m.file
    original = path.read_text(encoding="utf-8")
    try:
        write_in(copy, path, original.replace(m.find, m.replace))
        rc, out, secs = run_pytest(copy, pytest_cmd(tests, m.k, stop_first=True), timeout)
    finally:
        write_in(copy, path, original)
    res.seconds, res.output = secs, out
    if rc is None:
        res.status, res.detail = "timeout", f"no verdict within {timeout:.0f} s"
    elif rc == 0:
        res.status = "survived"
    elif rc in (1, 2):  # a test failed, or collection failed under the mutant
        res.status = "killed"
        res.detail = first_failure(out) or ("collection error" if rc == 2 else "")
    elif rc == 5:
        res.detail = "no tests collected"
    else:
        res.detail = f"pytest exit status {rc}"
    return res


# ----------------------------------------------------------------------------- output
def short_tests(r: Result) -> str:
    names = [Path(t).stem.removeprefix("test_") for t in r.tests]
    if r.missing:
        names.append("(skipped: " + ", ".join(Path(t).stem.removeprefix("test_") for t in r.missing) + ")")
    return " ".join(names) + (f" -k {r.mutant.k!r}" if r.mutant.k else "")


def table(results: list[Result]) -> str:
    rows = [("mutant", "description", "tests", "result", "s")]
    for r in results:
        verdict = r.status + (f": {r.detail}" if r.detail else "")
        rows.append((r.mutant.id, r.mutant.description, short_tests(r), verdict, f"{r.seconds:.0f}"))
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def list_mutants(mutants) -> None:
    for m in mutants:
        why = check_mutant(m, REPO)
        tests, missing = existing_tests(m, REPO)
        print(f"{m.id:32} src/abcde/{m.file:22} {m.description}")
        print(f"{'':32} tests: {' '.join(tests) or '-'}"
              + (f"   (absent, skipped: {' '.join(missing)})" if missing else "")
              + (f"   -k {m.k!r}" if m.k else ""))
        if why:
            print(f"{'':32} ERROR: {why}")


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the mutants, their tests and snippet checks; run nothing")
    ap.add_argument("--only", action="append", default=[], metavar="ID[,ID...]", help="run only these mutants")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run in parallel, each in its own copy (default 1)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per mutant's test run (default 900)")
    ap.add_argument("--baseline-timeout", type=float, default=1800, help="seconds for the baseline (default 1800)")
    ap.add_argument("--skip-baseline", action="store_true",
                    help="do not run the unmutated tests first (the table then proves less)")
    ap.add_argument("--strict-baseline", action="store_true",
                    help="stop when any baseline test fails (default: leave the failing files out, loudly)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--verbose", action="store_true", help="print the end of pytest's output for every mutant")
    args = ap.parse_args(argv)

    mutants = load_mutants()
    ids = [m.id for m in mutants]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        print(f"run.py: duplicate mutant ids: {', '.join(dup)}", file=sys.stderr)
        return 2
    if args.list:
        list_mutants(mutants)
        return 0
    if args.only:
        want = [i for part in args.only for i in part.split(",") if i]
        unknown = [i for i in want if i not in ids]
        if unknown:
            print(f"run.py: unknown mutant ids: {', '.join(unknown)} (see --list)", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.id in want]
    jobs = max(1, min(args.jobs, len(mutants)))

    # Loud first: a snippet that no longer occurs exactly once is reported before anything runs.
    broken = {m.id: why for m in mutants if (why := check_mutant(m, REPO))}
    for mid, why in broken.items():
        print(f"run.py: ERROR mutant {mid}: {why}", file=sys.stderr)

    t_start = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="abcde-mutation-"))
    if scratch.resolve().is_relative_to(REPO):
        sys.exit("run.py: the scratch directory must lie outside the repository")
    print(f"Copying src/, tests/, pyproject.toml of {REPO} into {jobs} scratch cop{'y' if jobs == 1 else 'ies'} "
          f"under {scratch}", flush=True)
    copies = [make_copy(scratch / f"w{k}") for k in range(jobs)]
    for c in copies:
        check_import(c)
    print(f"'import abcde' resolves to the copy ({copies[0] / 'src' / 'abcde'}).", flush=True)

    def cleanup(*_):
        with _procs_lock:
            for p in list(_procs):
                _kill(p)
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)

    try:
        # ---------------------------------------------------------------- baseline
        union = []
        for m in mutants:
            for t in existing_tests(m, REPO)[0]:
                if t not in union:
                    union.append(t)
        missing = sorted({t for m in mutants for t in existing_tests(m, REPO)[1]})
        if missing:
            print(f"Test files named in mutants.py but absent (skipped until they exist): {', '.join(missing)}",
                  flush=True)
        excluded: dict = {}  # test files that fail without a mutant
        if not args.skip_baseline and union:
            parts = [union[k::jobs] for k in range(jobs)]
            parts = [p for p in parts if p]
            print(f"Baseline: {' '.join(union)} (no mutant) ...", flush=True)
            with cf.ThreadPoolExecutor(len(parts)) as ex:
                runs = list(ex.map(lambda cp: run_pytest(cp[0], pytest_cmd(cp[1], None, stop_first=False),
                                                         args.baseline_timeout), zip(copies, parts)))
            secs = max(r[2] for r in runs)
            for p, (rc, out, _) in zip(parts, runs):
                if rc == 0:
                    continue
                failed = {f.split("::")[0] for f in re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)}
                bad_files = [t for t in p if t in failed] or p
                for t in bad_files:
                    excluded[t] = f"exit status {rc}"
                print(f"\nBASELINE FAILED for {' '.join(bad_files)} (exit status {rc}):\n{tail(out, 25)}",
                      file=sys.stderr, flush=True)
            if excluded and args.strict_baseline:
                print("run.py: the baseline failed (--strict-baseline); the table would mean nothing.", file=sys.stderr)
                return 2
            if excluded:
                print(f"Left out of every mutant's selection (they fail without a mutant): {', '.join(excluded)}",
                      file=sys.stderr, flush=True)
            print(f"Baseline done in {secs:.0f} s" + (" (passed)." if not excluded else " (with failures, above)."),
                  flush=True)

        # ---------------------------------------------------------------- mutants
        free: queue.Queue = queue.Queue()
        for c in copies:
            free.put(c)
        done = 0
        lock = threading.Lock()

        def work(m):
            nonlocal done
            if m.id in broken:
                r = Result(m, "error", detail=broken[m.id])
                r.tests, r.missing = existing_tests(m, REPO)
            else:
                copy = free.get()
                try:
                    r = run_mutant(m, copy, args.timeout, excluded)
                finally:
                    free.put(copy)
            with lock:
                done += 1
                print(f"[{done}/{len(mutants)}] {m.id}: {r.status}"
                      + (f" ({r.detail})" if r.detail else "") + f"  {r.seconds:.0f} s", flush=True)
                if args.verbose and r.output:
                    print(tail(r.output), flush=True)
            return r

        with cf.ThreadPoolExecutor(jobs) as ex:
            results = list(ex.map(work, mutants))
    except KeyboardInterrupt:
        cleanup()
        print("\nrun.py: interrupted; the scratch copies are removed (the repository was never touched).",
              file=sys.stderr)
        return 130
    finally:
        cleanup()

    total = time.monotonic() - t_start
    print()
    print(table(results))
    counts = {s: sum(r.status == s for r in results) for s in ("killed", "survived", "error", "timeout")}
    print(f"\n{len(results)} mutants: {counts['killed']} killed, {counts['survived']} survived, "
          f"{counts['error']} errors, {counts['timeout']} timeouts. Total {total:.0f} s (jobs={jobs}).")
    if counts["survived"]:
        print("Survivors: " + ", ".join(r.mutant.id for r in results if r.status == "survived"))
        return 1
    if excluded:
        print(f"Note: left out because they failed the baseline: {', '.join(excluded)}")
    return 2 if counts["error"] or counts["timeout"] or excluded else 0


if __name__ == "__main__":
    sys.exit(main())
