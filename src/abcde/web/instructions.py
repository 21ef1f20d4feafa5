"""The raters' instructions: a page of Markdown the owner gives ``judge serve --instructions
FILE.md`` (a regular file, at most 64 KB), kept in the store (a restarted server shows them
without the file) and shown on the raters' page and the settle page as the small safe subset
:func:`instructions_html` renders, in time linear in their length: every character of the file
is escaped, and only the markup it writes itself is HTML (no raw HTML, links to http(s) only)."""

from __future__ import annotations

import re
from pathlib import Path

from markupsafe import Markup, escape

from abcde.errors import InputError
from abcde.util.files import read_small_text

#: The largest instructions text, in bytes of UTF-8: the file ``--instructions`` reads, and the text
#: a server is given or keeps in the store.
MAX_INSTRUCTIONS = 64 * 1024

def read_instructions(path) -> str:
    """``--instructions FILE``: the file's Markdown text (a regular file of UTF-8, at most
    :data:`MAX_INSTRUCTIONS` bytes; line ends made ``\n``), or an :class:`InputError` in one line."""
    text = read_small_text(path, limit=MAX_INSTRUCTIONS, where=f"The instructions file '{Path(path)}'",
                           expected="raters' instructions are a page of Markdown")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def check_instructions(markdown: str) -> str:
    """``markdown`` if it is instructions a server may keep and show: text of at most
    :data:`MAX_INSTRUCTIONS` bytes (UTF-8), else an :class:`InputError` in one line."""
    if not isinstance(markdown, str):
        raise InputError(f"The instructions must be text. Got {type(markdown).__name__} instead.")
    if len(markdown) > MAX_INSTRUCTIONS // 4 and len(markdown.encode("utf-8", "surrogatepass")) > MAX_INSTRUCTIONS:
        raise InputError(f"The instructions are larger than {MAX_INSTRUCTIONS // 1024} KB; raters' instructions "
                         "are a page of Markdown.")
    return markdown


# The renderer reads the text once from left to right: every step below scans a stretch of it that
# no other step of its kind scans again (a line, a run of one character, the text up to the next
# character of a kind), so a render takes time linear in the text, whatever it holds. A regular
# expression here matches one character class at one position (it cannot backtrack), or checks a
# link's address once (_SAFE_URL: one class up to the end). Each step adds the characters it
# visits to RenderWork.visits, the measure tests/test_instructions_linear.py bounds.

class RenderWork:
    """Characters visited by one render of :func:`instructions_html` (each step adds those it
    scans): at most a small constant times the length of the text (tests/test_instructions_linear.py)."""

    __slots__ = ("visits",)

    def __init__(self) -> None:
        self.visits = 0


_SPECIAL = re.compile(r"[`\[<\\]")  # where an inline span may start: code, a link, an autolink, an escape
_BRACKET = re.compile(r"[\[\]]")
_TICKS = re.compile(r"`+")
_URL_CHARS = re.compile(r"[^()\s]*")
_BLANKS = re.compile(r"[ \t]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_AUTO_REST = re.compile(r"[^\s<>]*")
_SAFE_URL = re.compile(r"^https?://[^\s<>\"'`\\]+$", re.IGNORECASE)
#: What a backslash escapes: ASCII punctuation.
_ESCAPABLE = frozenset(chr(c) for lo, hi in ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E))
                       for c in range(lo, hi + 1))
#: The emphasis marks, in the order they are read: (mark, tag, only between non-word characters).
_EMPHASIS = (("**", "strong", False), ("__", "strong", True), ("*", "em", False), ("_", "em", True))


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _link(url: str, inner: str, work: RenderWork) -> str:
    """An anchor to ``url`` if it is http(s) (opened in a new tab, no referrer), else ``inner`` alone."""
    work.visits += 2 * len(url) + 1
    if not _SAFE_URL.match(url):
        return inner
    return f'<a href="{escape(url)}" rel="noopener noreferrer nofollow" target="_blank">{inner}</a>'


class _TickRuns:
    """The runs of backticks in a text, for code spans: a span opens with a run of backticks (all
    of them, or as many as a later run on the same line has exactly: the most such) and closes at
    the first later run of exactly that many. Worked out for every run at once, from the right, in
    time linear in the text (a run of ``r`` backticks looks up at most ``r`` lengths)."""

    def __init__(self, text: str, work: RenderWork):
        self.runs = [m.span() for m in _TICKS.finditer(text)]
        work.visits += len(text) + len(self.runs)
        lines, nl = [], -1  # the line each run is on: the position of the next newline
        for start, _ in self.runs:
            if start > nl:
                found = text.find("\n", start)
                work.visits += (found if found >= 0 else len(text)) - start + 1
                nl = found if found >= 0 else len(text)
            lines.append(nl)
        #: per run, for each number k of its backticks: (ticks, index of the closing run) or None
        self.best: list[list] = [[]] * len(self.runs)
        later: dict[int, int] = {}  # length -> index of the nearest run of that length to the right, on this line
        line = None
        for idx in range(len(self.runs) - 1, -1, -1):
            if lines[idx] != line:
                work.visits += len(later) + 1
                later.clear()
                line = lines[idx]
            start, end = self.runs[idx]
            best, found = [None] * (end - start + 1), None
            for k in range(1, end - start + 1):
                if k in later:
                    found = (k, later[k])
                best[k] = found
            work.visits += end - start + 1
            self.best[idx] = best
            later[end - start] = idx
        self._at = 0

    def span_at(self, pos: int, work: RenderWork) -> tuple[int, tuple[int, int] | None]:
        """For a code span opening at ``pos`` (a backtick; positions asked in increasing order):
        the end of its run, and (ticks, start of the closing run) or None."""
        while self.runs[self._at][1] <= pos:
            self._at += 1
            work.visits += 1
        end = self.runs[self._at][1]
        found = self.best[self._at][end - pos]
        return end, (None if found is None else (found[0], self.runs[found[1]][0]))


def _emphasis(s: str, mark: str, tag: str, bounded: bool, work: RenderWork) -> str:
    """``s`` with every ``mark``text``mark`` wrapped in ``tag``, read from left to right: the text
    starts and ends with a non-space character, holds no newline and ends at the first closing
    mark possible; ``bounded``: the marks stand between non-word characters."""
    k, n = len(mark), len(s)
    marks: list[int] = []
    i = s.find(mark)
    while i >= 0:
        marks.append(i)
        i = s.find(mark, i + 1)
    work.visits += n + len(marks) * k + 1
    if not marks:
        return s
    newlines: list[int] = []
    i = s.find("\n")
    while i >= 0:
        newlines.append(i)
        i = s.find("\n", i + 1)
    work.visits += n + len(newlines) + 1
    closes = [q for q in marks
              if q > 0 and not s[q - 1].isspace() and not (bounded and q + k < n and _is_word(s[q + k]))]
    work.visits += len(marks)
    out: list[str] = []
    last = ci = ni = 0
    for p in marks:
        work.visits += 1
        if p < last or p + k >= n or s[p + k].isspace() or (bounded and p > 0 and _is_word(s[p - 1])):
            continue
        while ci < len(closes) and closes[ci] < p + k + 1:
            ci += 1
            work.visits += 1
        if ci == len(closes):
            break
        while ni < len(newlines) and newlines[ni] < p + k:
            ni += 1
            work.visits += 1
        q = closes[ci]
        if ni < len(newlines) and newlines[ni] < q:
            continue
        out.append(s[last:p])
        out.append(f"<{tag}>{s[p + k:q]}</{tag}>")
        last = q + k
    out.append(s[last:])
    work.visits += n
    return "".join(out)


def _inline(text: str, work: RenderWork) -> str:
    """One block's text as HTML: code spans, http(s) links, ``**strong**``, ``*em*``; the rest escaped.

    The spans (code, links, autolinks, backslash escapes) are made first, from left to right, and
    kept aside as holes (``\\ue000N\\ue001``; those characters are dropped from the text first);
    then the text is escaped, the emphasis marks read, and the holes filled."""
    text = text.replace("\ue000", "").replace("\ue001", "")
    n = len(text)
    work.visits += 2 * n + 1
    kept: list[str] = []
    parts: list[str] = []
    ticks: _TickRuns | None = None
    last = i = 0
    while True:
        m = _SPECIAL.search(text, i)
        if m is None:
            work.visits += n - i
            break
        j = m.start()
        work.visits += j - i + 1
        ch, end, html = text[j], None, ""
        if ch == "`":
            if ticks is None:
                ticks = _TickRuns(text, work)
            run_end, found = ticks.span_at(j, work)
            if found is None:
                i = run_end  # no later run closes any of these backticks: they are text
                continue
            k, q = found
            code = text[j + k:q]
            work.visits += 2 * len(code)
            html, end = f"<code>{escape(code.strip() or code)}</code>", q + k
        elif ch == "[":
            b = _BRACKET.search(text, j + 1)
            work.visits += (b.start() if b else n) - j
            if b and text[b.start()] == "]" and text[b.start() + 1:b.start() + 2] == "(":
                b = b.start()
                u = _URL_CHARS.match(text, b + 2).end()
                work.visits += u - b - 1
                after = text[u:u + 1]
                if after == ")":
                    end = u + 1
                elif after in (" ", "\t"):  # a title: [text](url "title")
                    w = _BLANKS.match(text, u).end()
                    work.visits += w - u + 1
                    if text[w:w + 1] == '"':
                        close = text.find('"', w + 1)
                        work.visits += (close if close >= 0 else n) - w
                        if close >= 0 and text[close + 1:close + 2] == ")":
                            end = close + 2
                if end is not None:
                    html = _link(text[b + 2:u], _inline(text[j + 1:b], work), work)
        elif ch == "<":
            s = _SCHEME.match(text, j + 1)
            if s is not None:
                work.visits += s.end() - j
                if text[s.end():s.end() + 1] == ":":
                    a = _AUTO_REST.match(text, s.end() + 1).end()
                    work.visits += a - s.end()
                    if text[a:a + 1] == ">":
                        auto = text[j + 1:a]
                        html, end = _link(auto, str(escape(auto)), work), a + 1
        elif text[j + 1:j + 2] in _ESCAPABLE:  # a backslash
            html, end = str(escape(text[j + 1])), j + 2
        if end is None:
            i = j + 1
            continue
        parts.append(str(escape(text[last:j])))
        kept.append(html)
        parts.append(f"\ue000{len(kept) - 1}\ue001")
        last = i = end
    parts.append(str(escape(text[last:])))
    out = "".join(parts)
    work.visits += 2 * len(out)
    for mark, tag, bounded in _EMPHASIS:
        out = _emphasis(out, mark, tag, bounded, work)
    if not kept:
        return out
    pieces = out.split("\ue000")
    filled = [pieces[0]]
    for piece in pieces[1:]:
        cut = piece.index("\ue001")
        filled.append(kept[int(piece[:cut])])
        filled.append(piece[cut + 1:])
    work.visits += len(out) + sum(map(len, kept))
    return "".join(filled)


# Block starts: each reads a line's text after up to three leading spaces (``rest``; None: four
# or more) with a few str methods, one pass each over it at most.
def _unindented(line: str) -> str | None:
    """The line without up to three leading spaces (None: four or more)."""
    rest = line.lstrip(" ")
    return rest if len(line) - len(rest) <= 3 else None


def _fence(rest: str | None) -> str | None:
    """The backticks or tildes (three or more) that open a fenced code block, or None."""
    if not rest or rest[0] not in "`~":
        return None
    run = len(rest) - len(rest.lstrip(rest[0]))
    return rest[:run] if run >= 3 else None


def _setext(rest: str | None) -> int | None:
    """The heading level a line of ``=`` (3) or ``-`` (4) under a paragraph makes, or None."""
    if not rest or rest[0] not in "=-" or rest.lstrip(rest[0]).strip(" \t"):
        return None
    return 3 if rest[0] == "=" else 4


def _heading(rest: str | None) -> tuple[int, str] | None:
    """An ATX heading: (the page's level, its text without the closing ``#``), or None."""
    if not rest or rest[0] != "#":
        return None
    hashes = len(rest) - len(rest.lstrip("#"))
    after = rest[hashes:]
    if hashes > 6 or after[:1] not in ("", " ", "\t"):
        return None
    text = after.lstrip(" \t").rstrip(" \t")
    bare = text.rstrip("#")  # a closing sequence of # counts only after a space or tab
    if len(bare) < len(text) and bare[-1:] in (" ", "\t"):
        text = bare.rstrip(" \t")
    return min(hashes + 2, 6), text


def _rule(rest: str | None) -> bool:
    """Whether the line is a thematic break: three or more ``-``, ``*`` or ``_`` (spaces between)."""
    return bool(rest) and rest[0] in "-*_" and not rest.strip(rest[0] + " \t") and rest.count(rest[0]) >= 3


def _quote(rest: str | None) -> str | None:
    """A block quote line's text (after ``>`` and one space or tab), or None."""
    if not rest or rest[0] != ">":
        return None
    return rest[2:] if rest[1:2] in (" ", "\t") else rest[1:]


def _bullet(rest: str | None) -> str | None:
    """A bulleted item's text (after ``-``, ``*`` or ``+`` and spaces or tabs), or None."""
    if not rest or rest[0] not in "-*+" or rest[1:2] not in (" ", "\t"):
        return None
    return rest[1:].lstrip(" \t")


def _ordered(rest: str | None) -> tuple[int, str] | None:
    """A numbered item: (its number, up to nine digits; its text after ``.`` or ``)``), or None."""
    if not rest:
        return None
    digits = 0
    while digits < min(len(rest), 10) and rest[digits].isdecimal():
        digits += 1
    if (not 1 <= digits <= 9 or rest[digits:digits + 1] not in (".", ")")
            or rest[digits + 1:digits + 2] not in (" ", "\t")):
        return None
    return int(rest[:digits]), rest[digits + 1:].lstrip(" \t")


#: Passes over a line that reading its block start takes at most: the leading spaces (a scan and a
#: copy), a blank line's test, the seven functions above (at most 6 passes each, slices included)
#: and the strip of the line's text.
_LINE_PASSES = 2 + 2 + 7 * 6 + 2


def instructions_html(markdown: str, *, work: RenderWork | None = None) -> Markup:
    """The raters' instructions (Markdown) as HTML, in a small safe subset: headings (``#`` is the
    page's third level), paragraphs, bulleted and numbered lists, block quotes, rules, fenced code,
    and inline code, ``**strong**``, ``*emphasis*`` and links (``[text](https://…)``,
    ``<https://…>``). Every character of the text is escaped first: raw HTML shows as text, and a
    link to anything but http(s) (``javascript:``, ``data:``, a relative path) is its text alone.
    Links open in a new tab without a referrer. Nested lists are flattened.

    Time linear in the text, whatever it holds (one pass from left to right; ``work``, if given,
    counts the characters visited: :class:`RenderWork`)."""
    work = RenderWork() if work is None else work
    out: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []
    kind: list = [None, 1]  # the open list's tag ("ul"/"ol") and its first number
    quote: list[str] = []

    def flush() -> None:
        if para:
            out.append(f"<p>{_inline(chr(10).join(para), work)}</p>")
            para.clear()
        if items:
            start = f' start="{kind[1]}"' if kind[0] == "ol" and kind[1] != 1 else ""
            out.append(f"<{kind[0]}{start}>" + "".join(f"<li>{_inline(chr(10).join(i), work)}</li>" for i in items)
                       + f"</{kind[0]}>")
            items.clear()
            kind[0] = None
        if quote:
            out.append(f"<blockquote><p>{_inline(chr(10).join(quote), work)}</p></blockquote>")
            quote.clear()

    lines = markdown.split("\n")
    work.visits += len(markdown) + 1
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        work.visits += _LINE_PASSES * (len(line) + 1)
        rest = _unindented(line)
        mark = _fence(rest)
        if mark:
            flush()
            code = []
            while i < len(lines) and not lines[i].lstrip().startswith(mark):
                work.visits += 2 * (len(lines[i]) + 1)
                code.append(lines[i])
                i += 1
            i += 1
            body = chr(10).join(code)
            work.visits += 2 * len(body)
            out.append(f"<pre><code>{escape(body)}</code></pre>")
            continue
        if not line.strip():
            flush()
            continue
        if para and not items and not quote:
            level = _setext(rest)
            if level:
                text = chr(10).join(para)
                para.clear()
                out.append(f"<h{level}>{_inline(text, work)}</h{level}>")
                continue
        heading = _heading(rest)
        if heading:
            flush()
            level, text = heading
            out.append(f"<h{level}>{_inline(text, work)}</h{level}>")
            continue
        if _rule(rest):
            flush()
            out.append("<hr>")
            continue
        text = _quote(rest)
        if text is not None:
            if not quote:
                flush()
            quote.append(text)
            continue
        bullet, ordered = _bullet(rest), _ordered(rest)
        if bullet is not None or ordered is not None:
            tag = "ul" if bullet is not None else "ol"
            if para or quote or kind[0] != tag:
                flush()
            if not items:
                kind[0], kind[1] = tag, ordered[0] if ordered is not None else 1
            items.append([bullet if bullet is not None else ordered[1]])
            continue
        if items:  # a continuation of the list's last item (indented or not)
            items[-1].append(line.strip())
        elif quote:
            quote.append(line.strip())
        else:
            para.append(line.strip())
    flush()
    work.visits += sum(map(len, out))
    return Markup("".join(out))
