"""Every code block of the README and of the documentation site (docs/, issues 27 and 52) is checked
the way it can be:

- each ```python block runs as written, in order, in one namespace per file, in a fresh working
  directory (the snippets write `pairs/`, `report.html`, … there). A snippet that cannot run here
  says why in its first line, as a comment starting ``# not run here:`` (none today);
- each ```console block marked ``<!-- runs: ... -->`` on the line before it is a transcript: its
  ``$`` commands run in one shell, in a fresh working directory, and every line it shows after a
  command (but ``...``; a `` ... `` inside a line leaves part of it out) is in that command's
  output, in order (its numbers are the code's);
- every ``abcde`` command in a ```bash or ```console block, and every inline ``abcde ...`` span,
  names commands and options the command line has (those that serve, reach a cluster or call an
  LLM cannot run here, but cannot drift either).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SHELL_BLOCK = re.compile(r"^```(?:bash|console|sh|shell)\n(.*?)^```", re.S | re.M)
TRANSCRIPT = re.compile(r"^<!-- runs:[^\n]*-->\n```console\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`(abcde [^`\n]+)`(?!`)")


def _snippets(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_readme_has_python_snippets():
    assert len(_snippets(ROOT / "README.md")) >= 1
    assert _snippets(ROOT / "docs" / "python.md")  # the README's long example moved there (issue 52)


@pytest.mark.parametrize("path", [f for f in FILES if _snippets(f)], ids=_name)
def test_every_python_snippet_runs_as_written(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"snippet:{path.name}"}
    ran = 0
    for k, code in enumerate(_snippets(path)):
        if code.lstrip().startswith("# not run here:"):
            continue
        try:
            exec(compile(code, f"{path.name} python snippet {k + 1}", "exec"), namespace)
        except Exception as exc:  # name the snippet and line
            raise AssertionError(f"{path.name}, Python snippet {k + 1} failed: {type(exc).__name__}: {exc}") from exc
        ran += 1
    assert ran


#: What a snippet calls that needs an optional extra of pyproject.toml, and the extra's name.
EXTRAS = {"LLMJudge(": "llm"}


@pytest.mark.parametrize("path", [f for f in FILES if _snippets(f)], ids=_name)
def test_a_snippet_that_needs_an_optional_extra_says_so(path):
    """A reader without the extra gets an error from a snippet that looked complete (issue 38): the
    snippet names the extra itself (``pip install 'abcde[llm]'``)."""
    for k, code in enumerate(_snippets(path)):
        for call, extra in EXTRAS.items():
            if call in code:
                assert f"abcde[{extra}]" in code, f"{path.name}, Python snippet {k + 1} calls {call}…) without " \
                                                  f"saying it needs pip install 'abcde[{extra}]'"


def test_the_llm_snippet_fails_as_it_says_without_the_extra(monkeypatch):
    """Without the openai client, the LLM judge of docs/judging.md's snippet refuses with the extra's name."""
    from abcde.errors import MissingDependencyError
    from abcde.judging import LLMJudge

    code = next(c for c in _snippets(ROOT / "docs" / "judging.md") if "LLMJudge(" in c)
    assert "pip install 'abcde[llm]'" in code
    monkeypatch.setitem(sys.modules, "openai", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"abcde\[llm\]"):
        LLMJudge(base_url="http://127.0.0.1:8000/v1", model="my-model")


# ----------------------------------------------------------------------------- transcripts
def _transcript(block: str) -> list[tuple[str, list[str]]]:
    """``[(command, the lines shown after it), ...]`` of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line.rstrip())
    return steps


def _find(lines: list[str], shown: str, start: int) -> int:
    """The index of the first line from ``start`` that is ``shown``; a `` ... `` inside a shown line
    leaves part of it out (its pieces are in that line, in order)."""
    pieces = [p.strip() for p in shown.split(" ... ")]
    for k in range(start, len(lines)):
        if len(pieces) == 1:
            if lines[k] == shown:
                return k
            continue
        if not lines[k].startswith(shown[:len(shown) - len(shown.lstrip())] + pieces[0]):
            continue
        at = 0
        for piece in pieces:
            at = lines[k].find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            if lines[k].endswith(pieces[-1]):
                return k
    raise ValueError(shown)


def _transcripts(path: Path) -> list[str]:
    return TRANSCRIPT.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", [f for f in FILES if _transcripts(f)], ids=_name)
def test_every_marked_transcript_prints_what_it_shows(path, tmp_path):
    """A page's transcripts are one session, in order (a later one may use the directories and
    variables of an earlier one), run from a checkout (``src/`` is linked into the fresh
    directory) with this Python's ``abcde`` first on the PATH; what they show is what the code
    prints now."""
    (tmp_path / "src").symlink_to(ROOT / "src")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               ABCDE_PROGRESS="0")
    steps = [(n, command, shown) for n, block in enumerate(_transcripts(path), 1)
             for command, shown in _transcript(block)]
    script = ["set -e"]
    for k, (_, command, _) in enumerate(steps):
        script += [f"echo '@@step {k}'", command]
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"{_name(path)}: a transcript's command failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    printed = re.split(r"^@@step \d+\n", r.stdout, flags=re.M)[1:]
    assert len(printed) == len(steps)
    for (n, command, shown), out in zip(steps, printed):
        got = [line.rstrip() for line in out.splitlines()]
        at = 0
        for line in shown:
            if line.strip() in ("", "..."):
                continue
            try:
                at = _find(got, line, at) + 1
            except ValueError:
                raise AssertionError(f"{_name(path)}, transcript {n}: `{command}` does not print, in this "
                                     f"order, the line\n{line}\nIt printed:\n{out}") from None


def test_the_command_line_page_has_a_transcript():
    assert _transcripts(ROOT / "docs" / "cli.md")


# ----------------------------------------------------------------------------- commands and options
def _click_tree():
    from abcde.cli.group import main

    return main


def _resolve(words: list[str]):
    """The click command that ``abcde WORDS...`` reaches (``abcde judge DIR ...`` is ``judge oracle``)."""
    import click

    cmd = _click_tree()
    for w in words:
        if not isinstance(cmd, click.Group) or w.startswith("-"):
            break
        if w in cmd.commands:
            cmd = cmd.commands[w]
        elif cmd.name == "judge":
            cmd = cmd.commands["oracle"]
            break
        else:
            break
    if isinstance(cmd, click.Group) and cmd.name == "judge":
        cmd = cmd.commands["oracle"]
    return cmd


def _options(cmd) -> set[str]:
    names = {"-h", "--help"}
    for p in cmd.params:
        names.update(getattr(p, "opts", ()))
        names.update(getattr(p, "secondary_opts", ()))
    return names


def _shell_commands(block: str, console: bool) -> list[list[str]]:
    """The argument lists of the ``abcde`` commands in a shell block (continuations joined,
    ``&&``/``;``/``|`` split, comments dropped)."""
    text = re.sub(r"\\\n", " ", block)
    out = []
    for line in text.splitlines():
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            tokens = list(lex)
        except ValueError:  # not shell (a Python line of a Databricks notebook)
            continue
        cur: list[str] = []
        for t in [*tokens, ";"]:
            if t in ("&&", ";", "|", "||", "&"):
                if cur and cur[0] == "abcde":
                    out.append(cur[1:])
                cur = []
            else:
                cur.append(t)
    return out


def _documented_commands(path: Path) -> list[tuple[str, list[str]]]:
    text = path.read_text(encoding="utf-8")
    found = []
    for m in re.finditer(r"^```(bash|console|sh|shell)\n(.*?)^```", text, re.S | re.M):
        for args in _shell_commands(m.group(2), console=m.group(1) == "console"):
            found.append((" ".join(["abcde", *args]), args))
    no_blocks = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for span in INLINE.findall(no_blocks):
        words = span.replace("\\|", "|").split()[1:]
        found.append((span, words))
    return found


@pytest.mark.parametrize("path", [f for f in FILES if _documented_commands(f)], ids=_name)
def test_every_documented_command_and_option_exists(path):
    problems = []
    for text, args in _documented_commands(path):
        cmd = _resolve([a for a in args if not a.startswith("[")])
        known = _options(cmd)
        for a in args:
            for opt in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", a) if a.startswith(("-", "[", "(")) else []:
                if opt not in known:
                    problems.append(f"`{text}`: {cmd.name} has no option {opt}")
    assert not problems, f"{_name(path)}:\n" + "\n".join(problems)
