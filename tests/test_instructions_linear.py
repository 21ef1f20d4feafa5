"""The raters' instructions render in time linear in their length, whatever they hold (issue 39).

A 63 KB line of ``_a _a …`` took 65 s to render with the regular expressions of the first renderer
(``.+?`` between emphasis marks that never close, tried again from every mark), and the text is
kept in the store: every later ``judge serve`` paid it again before it listened. The renderer
now reads the text from left to right once; each of its steps counts the characters it visits
(:class:`~abcde.web.instructions.RenderWork`), and the tests bound that count by a constant
times the length, at the size cap, for the worst case of every mark: a count, not a time, so
they pass on a loaded machine (``benchmarks/bench_instructions.py`` times it).

The new renderer's output is the old one's, character for character (the old one is kept below as
the reference, run on small texts), so every safety property the old one had holds unchanged: the
tests of tests/test_rater_workflow.py, and the same output.

Only a regular file is read as instructions: a named pipe with no writer hung ``judge serve``
forever; a pipe, a device or a directory is refused in one line naming the path.
"""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup, escape

from abcde.cli import main
from abcde.errors import InputError
from abcde.web.instructions import (MAX_INSTRUCTIONS, RenderWork, check_instructions, instructions_html,
                                    read_instructions)
from test_rater_workflow import assert_safe

# ----------------------------------------------------------------------------- the reference: the renderer before
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BULLET = re.compile(r"^ {0,3}[-*+][ \t]+(.*)$")
_ORDERED = re.compile(r"^ {0,3}(\d{1,9})[.)][ \t]+(.*)$")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?(.*)$")
#: Inline spans kept aside before the text is escaped: code, links, autolinks, backslash escapes.
_SPANS = re.compile(r"(?P<code>(?P<ticks>`+)(?P<codetext>.+?)(?<!`)(?P=ticks)(?!`))"
                    r"|\[(?P<text>[^\[\]]*)\]\((?P<url>[^()\s]*)(?:[ \t]+\"[^\"]*\")?\)"
                    r"|<(?P<auto>[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*)>"
                    r"|\\(?P<esc>[!-/:-@\[-`{-~])")
_SAFE_URL = re.compile(r"^https?://[^\s<>\"'`\\]+$", re.IGNORECASE)
_EMPHASIS = [(re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), "strong"),
             (re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"), "strong"),
             (re.compile(r"\*(?=\S)(.+?)(?<=\S)\*"), "em"),
             (re.compile(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)"), "em")]
_HOLE = re.compile("\ue000(\\d+)\ue001")


def _link(url: str, inner: str) -> str:
    """An anchor to ``url`` if it is http(s) (opened in a new tab, no referrer), else ``inner`` alone."""
    if not _SAFE_URL.match(url):
        return inner
    return f'<a href="{escape(url)}" rel="noopener noreferrer nofollow" target="_blank">{inner}</a>'


def _inline(text: str) -> str:
    """One block's text as HTML: code spans, http(s) links, ``**strong**``, ``*em*``; the rest escaped."""
    text = text.replace("\ue000", "").replace("\ue001", "")
    kept: list[str] = []

    def hole(m: re.Match) -> str:
        if m.group("code") is not None:
            html = f"<code>{escape(m.group('codetext').strip() or m.group('codetext'))}</code>"
        elif m.group("url") is not None:
            html = _link(m.group("url"), _inline(m.group("text")))
        elif m.group("auto") is not None:
            html = _link(m.group("auto"), str(escape(m.group("auto"))))
        else:
            html = str(escape(m.group("esc")))
        kept.append(html)
        return f"\ue000{len(kept) - 1}\ue001"

    out = str(escape(_SPANS.sub(hole, text)))
    for pattern, tag in _EMPHASIS:
        out = pattern.sub(lambda m, tag=tag: f"<{tag}>{m.group(1)}</{tag}>", out)
    return _HOLE.sub(lambda m: kept[int(m.group(1))], out)


def reference_html(markdown: str) -> Markup:
    """The renderer as it was before issue 39 (abcde.web.judging_server.instructions_html, kept
    verbatim): right, safe, and quadratic in a line's length."""
    out: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []
    kind: list = [None, 1]  # the open list's tag ("ul"/"ol") and its first number
    quote: list[str] = []

    def flush() -> None:
        if para:
            out.append(f"<p>{_inline(chr(10).join(para))}</p>")
            para.clear()
        if items:
            start = f' start="{kind[1]}"' if kind[0] == "ol" and kind[1] != 1 else ""
            out.append(f"<{kind[0]}{start}>" + "".join(f"<li>{_inline(chr(10).join(i))}</li>" for i in items)
                       + f"</{kind[0]}>")
            items.clear()
            kind[0] = None
        if quote:
            out.append(f"<blockquote><p>{_inline(chr(10).join(quote))}</p></blockquote>")
            quote.clear()

    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        fence = _FENCE.match(line)
        if fence:
            flush()
            mark, code = fence.group(1), []
            while i < len(lines) and not lines[i].lstrip().startswith(mark[0] * len(mark)):
                code.append(lines[i])
                i += 1
            i += 1
            out.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
            continue
        if not line.strip():
            flush()
            continue
        if para and not items and not quote and _SETEXT.match(line):
            level = 3 if line.strip()[0] == "=" else 4
            text = chr(10).join(para)
            para.clear()
            out.append(f"<h{level}>{_inline(text)}</h{level}>")
            continue
        m = _HEADING.match(line)
        if m:
            flush()
            level = min(len(m.group(1)) + 2, 6)
            out.append(f"<h{level}>{_inline(m.group(2) or '')}</h{level}>")
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            continue
        m = _QUOTE.match(line)
        if m:
            if not quote:
                flush()
            quote.append(m.group(1))
            continue
        bullet, ordered = _BULLET.match(line), _ORDERED.match(line)
        if bullet or ordered:
            tag = "ul" if bullet else "ol"
            if para or quote or kind[0] != tag:
                flush()
            if not items:
                kind[0], kind[1] = tag, int(ordered.group(1)) if ordered else 1
            items.append([bullet.group(1) if bullet else ordered.group(2)])
            continue
        if items:  # a continuation of the list's last item (indented or not)
            items[-1].append(line.strip())
        elif quote:
            quote.append(line.strip())
        else:
            para.append(line.strip())
    flush()
    return Markup("".join(out))



# ----------------------------------------------------------------------------- the worst cases, at the size cap
CAP = MAX_INSTRUCTIONS  # bytes; every text below is ASCII, so as many characters
#: Characters visited per character of text, at most (the worst case below visits about 95; a quadratic
#: renderer visits thousands per character at the cap: every mark scanned on to the end of its line).
VISITS_PER_CHAR = 150


def fill(unit: str, n: int) -> str:
    """``unit`` repeated to exactly ``n`` characters."""
    return (unit * (n // len(unit) + 1))[:n]


def rising_ticks(n: int) -> str:
    """Runs of 1, 2, 3, … backticks: no later run closes an earlier one (the first renderer tried
    every shorter opening against every later run)."""
    out, k = [], 1
    while sum(map(len, out)) + k + 1 <= n:
        out.append("`" * k + "a")
        k += 1
    return fill("".join(out) + "a" * n, n)


def random_mix(n: int) -> str:
    rng = random.Random(39)
    tokens = list("*_`[]()<>\\#-=> \n\t\"'&!:") + ["a", "https://x.example", "](", "**", "__", "``", "1. ", "# "]
    return fill("".join(rng.choice(tokens) for _ in range(n)), n)


#: name -> the text of n characters that costs that mark the most.
WORST = {
    "_em_": lambda n: fill("_a ", n),
    "*em*": lambda n: fill("*a ", n),
    "**strong**": lambda n: fill("**a ", n),
    "__strong__": lambda n: fill("__a ", n),
    "closing marks only": lambda n: fill("a_ a* ", n),
    "marks on many lines": lambda n: fill("_a *a **a __a\n", n),
    "backticks": lambda n: fill("`", n),
    "code spans that never close": rising_ticks,
    "code spans": lambda n: fill("``a`", n),
    "[": lambda n: fill("[", n),
    "link text never closed": lambda n: "[" + fill("a", n - 1),
    "](": lambda n: fill("[a](", n),
    "link addresses": lambda n: fill("[a](x ", n),
    "link titles": lambda n: fill('[a](x "', n),
    "a link title never closed": lambda n: '[a](x "' + fill("a", n - 7),
    "autolinks": lambda n: fill("<a", n),
    "autolink schemes": lambda n: fill("<a:", n),
    "backslashes": lambda n: fill("\\", n),
    "escaped marks": lambda n: fill("\\*a_\\`", n),
    "a heading of spaces": lambda n: "# a" + " " * (n - 4) + "b",
    "a heading of hashes": lambda n: fill("# #", n),
    "headings": lambda n: fill("# a\n", n),
    "a setext underline": lambda n: "a\n" + fill("=", n - 2),
    "a rule": lambda n: fill("- ", n),
    "a rule that is not": lambda n: fill("- ", n - 1) + "x",
    "bullets": lambda n: fill("- a\n", n),
    "numbers": lambda n: fill("123456789. a\n", n),
    "nested lists": lambda n: fill("- * + 1. ", n),
    "quotes": lambda n: fill("> ", n),
    "fences": lambda n: fill("```\n", n),
    "a fence never closed": lambda n: "```\n" + fill("a\n", n - 4),
    "characters escaped to entities": lambda n: fill("&<>\"'*_", n),
    "a nested mix": lambda n: fill("*_**__`[a](<b:c> \\", n),
    "a random mix": random_mix,
}


@pytest.mark.parametrize("name", WORST)
def test_the_worst_case_of_each_mark_renders_in_linear_work(name):
    """At the size cap, the characters visited are at most a constant times the text's length; the
    first renderer's work grew with the square of a line's length (65 s for 63 KB of ``_a ``)."""
    text = WORST[name](CAP)
    assert len(text) == CAP and len(text.encode()) == CAP and check_instructions(text) == text
    work = RenderWork()
    out = str(instructions_html(text, work=work))
    assert len(text) <= work.visits <= VISITS_PER_CHAR * len(text), (name, work.visits / len(text))
    assert_safe(out)


@pytest.mark.parametrize("name", WORST)
def test_four_times_the_text_is_four_times_the_work(name):
    """From a quarter of the cap to the cap the work grows as the text (a quadratic renderer's, 16-fold)."""
    small, large = RenderWork(), RenderWork()
    instructions_html(WORST[name](CAP // 4), work=small)
    instructions_html(WORST[name](CAP), work=large)
    assert large.visits <= 4.4 * small.visits + 1000, (name, small.visits, large.visits)


@pytest.mark.parametrize("name", WORST)
def test_small_worst_cases_render_as_the_reference(name):
    for n in (1, 2, 3, 5, 8, 13, 40, 150, 400):
        text = WORST[name](n)
        assert str(instructions_html(text)) == str(reference_html(text)), text


# ----------------------------------------------------------------------------- the same output as the reference
TOKENS = list("<>\"'&[]()*_`#-!:/\\=.~+> \n\tab1") + [
    "http://", "https://", "javascript:", "<script>", "onerror=", "](", "](https://x.example", ' "t")', "<h:",
    "\ue000", "\ue001", "1. ", "10) ", "1234567890", "**", "__", "``", "```", "~~~", "   ", "    ", "# ", "> ", "- ",
    "x_y", "\r", "\u00a0", "\x0b", "\u2028", "é", "²", "٣", "ſ", "K"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=50).map("".join))
def test_the_output_is_the_reference_output(markdown):
    """Character for character the first renderer's output, on texts small enough for it: every
    safety property it had (tests/test_rater_workflow.py) holds for the same reasons."""
    assert str(instructions_html(markdown)) == str(reference_html(markdown))


def test_the_output_is_the_reference_output_on_20000_random_texts():
    rng = random.Random(20045)
    for _ in range(20000):
        text = "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 30)))
        assert str(instructions_html(text)) == str(reference_html(text)), text


# ----------------------------------------------------------------------------- only a regular file is read
def read_in_a_thread(path, unblock=None):
    """read_instructions(path) in a thread, given up to 60 s to return at all (a hang fails the
    test instead of stopping the run; ``unblock`` then frees the thread); its result or error."""
    result = {}

    def run():
        try:
            result["text"] = read_instructions(path)
        except BaseException as exc:  # noqa: BLE001 -- handed to the test
            result["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        if unblock:
            unblock()
        raise AssertionError(f"reading {path} hung")
    return result


def open_fifo_for_writing(path):
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "socket"])
def test_only_a_regular_file_is_read(tmp_path, kind):
    path = tmp_path / f"guide-{kind}.md"
    unblock = None
    if kind == "fifo":
        os.mkfifo(path)  # with no writer: opening it to read waited forever
        unblock = lambda: open_fifo_for_writing(path)  # noqa: E731
        words = "is a named pipe (FIFO), not a regular file"
    elif kind == "device":
        path = "/dev/zero"  # reading it never ends
        words = "is a character device, not a regular file"
    elif kind == "directory":
        path.mkdir()
        words = "is a directory"
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        words = "is a socket, not a regular file"
    result = read_in_a_thread(path, unblock)
    error = result.get("error")
    assert isinstance(error, InputError), result
    message = str(error)
    assert "\n" not in message and f"'{path}'" in message and words in message, message
    assert message.endswith("raters' instructions are a page of Markdown."), message
    if kind == "socket":
        sock.close()


def test_a_link_to_a_regular_file_is_read_and_the_cap_is_exact(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_bytes(b"# T\n" + b"a" * (CAP - 4))
    link = tmp_path / "link.md"
    link.symlink_to(guide)
    assert read_instructions(link) == guide.read_text()
    guide.write_bytes(b"a" * (CAP + 1))
    with pytest.raises(InputError, match="larger than 64 KB"):
        read_instructions(link)


def test_a_server_is_given_instructions_within_the_cap():
    assert check_instructions("é" * (CAP // 2)) == "é" * (CAP // 2)
    for text in ("a" * (CAP + 1), "é" * (CAP // 2 + 1)):
        with pytest.raises(InputError, match="larger than 64 KB"):
            check_instructions(text)
    with pytest.raises(InputError, match="must be text"):
        check_instructions(b"# T")


def test_judge_serve_refuses_a_named_pipe_at_once(tmp_path):
    """``judge serve --instructions FIFO`` with no writer waited forever before it listened; it says
    what is wrong in one line and exits."""
    fifo = tmp_path / "guide.md"
    os.mkfifo(fifo)
    try:
        r = subprocess.run([sys.executable, "-m", "abcde", "judge", "serve", str(tmp_path), "--port", "0",
                            "--instructions", str(fifo)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        open_fifo_for_writing(fifo)
        raise
    assert r.returncode != 0
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and str(fifo) in lines[0] and "named pipe" in lines[0], lines
    # the same through the command's own code, in this process
    out = CliRunner().invoke(main, ["judge", "serve", str(tmp_path), "--instructions", "/dev/zero", "--port", "0"])
    assert out.exit_code != 0 and "'/dev/zero' is a character device" in out.output


def test_a_raters_file_that_is_a_named_pipe_is_refused_at_once(tmp_path):
    """``--raters FILE`` reads a person's file the same way (``util.files.read_small_text``): a named
    pipe with no writer is refused in one line naming it, never waited on; the path named once."""
    fifo = tmp_path / "raters.txt"
    os.mkfifo(fifo)
    try:
        r = subprocess.run([sys.executable, "-m", "abcde", "judge", "serve", str(tmp_path), "--port", "0",
                            "--raters", str(fifo)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        open_fifo_for_writing(fifo)
        raise
    assert r.returncode != 0
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].count(str(fifo)) == 1, lines
    assert "named pipe" in lines[0] or "is not a file" in lines[0], lines
