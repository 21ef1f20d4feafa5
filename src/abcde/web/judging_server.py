"""The judging web app: a Starlette app over a :class:`JudgingSession`, served by uvicorn.

Routes (nothing else is served; no path from a request ever reaches the file system)::

    GET  /                    the rater's page (web/templates/judge.html): progress and one pair at a time
    GET  /owner               the owner's page (web/templates/judge-owner.html): estimates, verdict, agreement
    GET  /join/TOKEN          an invite link: sets the sign-in cookie, then opens / (a rater) or /owner
    GET  /static/NAME         their scripts and styles (a fixed set, read at start-up)
    GET  /api/me              who this request is: {"invites": bool, "role": "rater"|"owner"|null, "rater"}
    GET  /settle              the owner's settle queue (web/templates/judge-settle.html): pairs raters disagree on
    GET  /api/state?rater=R   progress and R's next pair (no estimates: raters are not shown them)
    GET  /api/mine?rater=R&offset=N          R's own judgements (latest answer per pair), 20 at a time
    GET  /api/mine/pair?rater=R&pair_id=P    one of them opened: the pair, R's answer and its history
    GET  /api/owner           progress per rater, live estimates, what ΔPrecision still needs,
                              agreement, pairs to settle, the stop rule, the next step and the verdict
    GET  /api/owner/export    every live judgement as a CSV judgement file (what 'abcde judge export' writes;
                              a comment a spreadsheet would run as a formula starts with ')
    GET  /api/owner/settle    the settle queue: pairs whose raters' votes tie, and those the owner settled
    POST /api/owner/settle    {"pair_id", "judgement", "comment"?, "request_id"?}: the owner's settling vote
    POST /api/judgements      {"rater", "pair_id", "judgement", "comment"?, "request_id"?}
    POST /api/change          {"rater", "pair_id", "judgement", "comment"?, "request_id"?}: change R's
                              judgement of the pair (a new judgement superseding the old, which is kept)
    POST /api/undo            {"rater"}: withdraw R's last judgement

The raters' instructions (``judge serve --instructions FILE.md``: a regular file, at most 64 KB)
are Markdown, kept in the store (a restarted server shows them without the file) and shown on the
raters' page and the settle page as the small safe subset :func:`instructions_html` renders, in
time linear in their length: every character of the file is escaped, and only the markup it
writes itself is HTML (no raw HTML, links to http(s) only).

Who may do what (:class:`InviteGate`, the one place that says who a request is):

- **Open** (a loopback address, and no invite link ever made for the sample): today's
  behaviour; a person alone at their machine types a name, and every route answers.
- **Invites** (``--raters``, any other address, or a sample whose store holds invite links):
  every route but ``/join/TOKEN`` and the static files needs a valid token, sent as the
  sign-in cookie that ``/join/TOKEN`` sets (HttpOnly, SameSite=Strict, Path=/) or as
  ``Authorization: Bearer TOKEN``. Without one: 401; with a token that is not (or no longer) a
  live invite: 403. A rater's name comes from their token: a ``rater`` in a request that is not
  the token's is a 403, so no one writes or reads as someone else. The owner's token opens the
  owner's view, the export and the settle queue (its settling votes are the rater ``owner``'s),
  and judges no pair of its own. Tokens are looked up in the store on every
  request, so a link revoked by ``abcde judge raters --revoke`` stops at once.

The owner's routes go through :func:`owner_only`, the one place that decides who may see them;
the settle queue is the owner's (raters judge blind: they never see another rater's answer). A
rater's own judgements are theirs only: :func:`rater_of` gives the name, from the token with
invites, so a rater lists, opens and changes only their own.

Errors are the one JSON shape of :mod:`abcde.web.server`, ``{"ok": false, "error": "...",
"status": 4xx}``: 400 for a malformed body, bad vocabulary or rater name; 401 without a token and
403 with one that is not valid, or for another rater's name (a page, ``/`` or ``/owner``, answers
with a short HTML page saying what to do instead); 404 for an unknown route or pair; 405 for a
wrong method; 409 for a double submit, a replayed request, nothing to undo or nothing to settle; 404
for a judgement to open or change that the rater does not have; 403 for a request
whose ``Host`` is not this server (DNS rebinding) when it listens on a loopback address; 413/408
for a body too large or too slow; 415 for a POST that is not JSON. A judgement is committed to
the store before its response is sent.
"""

from __future__ import annotations

import asyncio
import functools
import io
import re
import socket
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup, escape

import pyarrow.csv as pacsv
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.routing import Route

from abcde.errors import AbcdeError, InputError
from abcde.judging.session import JudgingSession, NothingToSettleError
from abcde.util.files import neutralise_formulas
from abcde.quality.store import (KEEP, OWNER, STORE_NAME, TOKEN_RE, DuplicateJudgementError, Invite, JudgementStore,
                                 NotJudgedError, UnknownPairError, check_invite_name, lock_directory)
from abcde.util.files import read_small_text
from abcde.util.net import is_loopback
from abcde.web.server import (Assets, HTTPError, Limits, Server, create_app, error_response, json_response,
                              page_response, read_json)

ERRORS = {UnknownPairError: 404, NotJudgedError: 404, DuplicateJudgementError: 409, NothingToSettleError: 409,
          InputError: 400, AbcdeError: 500}


#: The pages and API routes of the owner's view (estimates, agreement, verdict, export, settling).
OWNER_PATHS = ("/owner", "/settle", "/api/owner", "/api/owner/export", "/api/owner/settle")
#: Paths that answer without a token: invite links themselves and the static files.
PUBLIC_PREFIXES = ("/join/", "/static/")
PUBLIC_PATHS = ("/favicon.ico",)
#: Paths a person opens (a refusal there is a short page, not JSON).
PAGE_PATHS = ("/", "/owner", "/settle")
#: Seconds the sign-in cookie lasts (30 days; a revoked link stops at once regardless).
COOKIE_MAX_AGE = 30 * 24 * 3600

NO_TOKEN = ("This judging server is for invited raters: open the invite link you were sent (it ends in "
            "/join/ and a long code). Lost it? Ask the person running the evaluation for a new one.")
BAD_TOKEN = ("This invite link does not work: it was revoked or replaced by a newer one, or it is mistyped. "
             "Ask the person running the evaluation for a new link.")


@dataclass(frozen=True)
class Identity:
    """Who a request is: ``role`` ``open`` (no invites: anyone this server answers), ``rater``
    (``rater``: the name bound to their token) or ``owner``."""

    role: str
    rater: str | None = None


OPEN = Identity("open")


class Refused(HTTPError):
    """A request this identity may not make (401/403): a short page on :data:`PAGE_PATHS`, else
    the one JSON error shape."""


def identity(request: Request) -> Identity:
    """The identity :class:`InviteGate` gave this request; a route it did not pass is refused
    (fail closed: it cannot happen for the app's own routes)."""
    who = request.scope.get("abcde.identity")
    if not isinstance(who, Identity):
        raise Refused(403, "This route needs a signed-in rater or the owner.")
    return who


def owner_only(endpoint):
    """An endpoint of the owner's view (:data:`OWNER_PATHS`): the one place that decides who may
    see the estimates, agreement, verdict and export. Without invites, everyone the server
    answers may (it binds 127.0.0.1 unless ``--host`` says otherwise); with invites, only the
    owner's token (:class:`InviteGate`)."""

    async def guarded(request: Request):
        who = identity(request)
        if who.role not in ("open", "owner"):
            raise Refused(403, "The owner's view needs the owner's invite link; a rater's link opens the judging "
                               "page only.")
        return await endpoint(request)

    guarded.__name__ = guarded.__qualname__ = endpoint.__name__
    return guarded


def rater_of(request: Request, given) -> str | None:
    """The rater a request judges or reads as: ``given`` (the request's ``rater``) without invites;
    with invites, the name bound to the token (``given`` may be left out; another name is a 403).
    The owner judges nothing (``None``; a ``rater`` given is a 403)."""
    who = identity(request)
    if who.role == "open":
        return given
    if who.role == "owner":
        if given is not None:
            raise Refused(403, "The owner's invite link does not judge; to judge too, make yourself a rater's link "
                               "('abcde judge raters DIR --new-link NAME').")
        return None
    if given is not None and given != who.rater:
        raise Refused(403, f"You are signed in as {who.rater!r}: you cannot judge or read as {given!r}.")
    return who.rater


class InviteGate:
    """The ASGI layer that says who each request is (see the module's docstring): sets
    ``scope["abcde.identity"]`` (an :class:`Identity`) or answers 401/403 itself. Inside
    :class:`abcde.web.server.Guard` (the Host check and body limits come first).

    ``required``: invites are needed whatever the store holds (``--raters``, or an address other
    than loopback); otherwise they are once the store holds an invite link (checked per request
    until it does: ``abcde judge raters --new-link`` on a running server turns them on)."""

    def __init__(self, app, session: JudgingSession, *, required: bool, refuse):
        self.app = app
        self.store = session.store
        self.required = required
        self.refuse = refuse
        self._checking: asyncio.Future | None = None

    async def invites_on(self) -> bool:
        """Whether invites are on. Until they are, the store is asked on every request, by one
        look-up in the thread pool shared by the requests that arrive meanwhile (a crowd of slow
        clients holds no thread each)."""
        if self.required:
            return True
        if self._checking is None:
            self._checking = asyncio.ensure_future(run_in_threadpool(self.store.has_invites))
            self._checking.add_done_callback(lambda _: setattr(self, "_checking", None))
        if await asyncio.shield(self._checking):
            self.required = True  # invites are never deleted: once on, on for good
        return self.required

    def token(self, scope) -> str | None:
        """The token a request carries: the sign-in cookie, or ``Authorization: Bearer TOKEN``."""
        name = cookie_name(scope)
        for k, v in scope["headers"]:
            if k == b"cookie":
                found = cookie_parser(v.decode("latin-1")).get(name)
                if found:
                    return found
        for k, v in scope["headers"]:
            if k == b"authorization":
                kind, _, value = v.decode("latin-1").partition(" ")
                if kind.lower() == "bearer" and value.strip():
                    return value.strip()
        return None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path.startswith(PUBLIC_PREFIXES) or path in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        try:
            on = await self.invites_on()
            token = self.token(scope) if on else None
            invite = None
            if token is not None and TOKEN_RE.match(token):  # anything else is no token: no look-up
                invite = await run_in_threadpool(self.store.invite_for, token)
        except AbcdeError as exc:  # the store failed (moved, locked): the one error shape
            await error_response(500, str(exc))(scope, receive, send)
            return
        if not on:
            scope["abcde.identity"] = OPEN
            await self.app(scope, receive, send)
            return
        if invite is None:
            resp = self.refuse(path, scope["method"], 401 if token is None else 403,
                               NO_TOKEN if token is None else BAD_TOKEN)
            if token is not None:
                resp.delete_cookie(cookie_name(scope), path="/", httponly=True, samesite="strict")
            await resp(scope, receive, send)
            return
        scope["abcde.identity"] = Identity(invite.role, invite.name if invite.role == "rater" else None)
        await self.app(scope, receive, send)


def cookie_name(scope) -> str:
    """The sign-in cookie's name: ``abcde_judge_PORT`` (PORT: the port this server listens on).
    Browsers send a host's cookies to all its ports, so two servers on one machine keep apart."""
    server = scope.get("server") or (None, None)
    return f"abcde_judge_{server[1] or 0}"


# ----------------------------------------------------------------------------- the raters' instructions
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


def create_judging_app(session: JudgingSession, *, invites_required: bool = False, secure_cookie: bool = False,
                       instructions: str | None = None):
    """The judging app (ASGI) over ``session``; serve it with :class:`abcde.web.server.Server`.

    Invites are on when ``invites_required`` or once the store holds an invite link
    (:class:`InviteGate`); ``secure_cookie`` makes the sign-in cookie ``Secure`` (served over
    https through a proxy). ``instructions``: the raters' instructions (Markdown; ``""``: none),
    by default those kept in the store."""
    assets = Assets({"judge.js": "web/static/judge.js", "judge.css": "web/static/judge.css",
                     "judge-pair.js": "web/static/judge-pair.js", "judge-owner.js": "web/static/judge-owner.js",
                     "judge-settle.js": "web/static/judge-settle.js", "judge-join.js": "web/static/judge-join.js"})
    markdown = session.store.instructions() if instructions is None else instructions
    instructions = instructions_html(markdown) if markdown and markdown.strip() else None
    next_command = f"abcde quality {session.given_dir}"
    pages = {mode: assets.render("judge.html", mode=mode, instructions=instructions, next_command=next_command)
             for mode in ("open", "rater", "owner")}
    owner_page = assets.render("judge-owner.html")
    settle_page = assets.render("judge-settle.html", instructions=instructions, next_command=next_command)
    joined = {"rater": assets.render("judge-join.html", next="/"),
              "owner": assets.render("judge-join.html", next="/owner")}
    store = session.store

    @functools.lru_cache(maxsize=32)
    def refusal_page(status: int, message: str) -> bytes:
        return assets.render("judge-signin.html", status=status, message=message)

    def refuse(path: str, method: str, status: int, message: str, headers=None) -> Response:
        """The one answer of a refusal: a short page where a person opens one, else the JSON shape."""
        if method in ("GET", "HEAD") and (path in PAGE_PATHS or path.startswith("/join/")):
            return Response(refusal_page(status, message), status_code=status, media_type="text/html; charset=utf-8",
                            headers=dict(headers or {}))
        return error_response(status, message, headers=headers)

    async def index(request: Request):
        return page_response(pages[identity(request).role])

    async def join(request: Request):
        token = request.path_params["token"]
        invite: Invite | None = await run_in_threadpool(store.invite_for, token)
        if invite is None:
            raise Refused(403, BAD_TOKEN)
        # A page that moves on to / (or /owner) by itself, not a 303: a cookie set with
        # SameSite=Strict is not sent on a redirect that a click on another site started (an
        # invite opened from web mail), but is on a navigation this page starts.
        resp = page_response(joined[invite.role])
        resp.set_cookie(cookie_name(request.scope), token, max_age=COOKIE_MAX_AGE, path="/", httponly=True,
                        samesite="strict", secure=secure_cookie)
        return resp

    async def me(request: Request):
        who = identity(request)
        return json_response({"ok": True, "invites": who.role != "open",
                              "role": None if who.role == "open" else who.role, "rater": who.rater})

    @owner_only
    async def owner(request: Request):
        return page_response(owner_page)

    @owner_only
    async def owner_state(request: Request):
        return json_response(await run_in_threadpool(session.owner_state))

    @owner_only
    async def owner_export(request: Request):
        def csv() -> bytes:
            # every text cell (ids from data, names, comments): no formula runs when the owner opens it
            table = neutralise_formulas(store.to_table())
            buf = io.BytesIO()
            pacsv.write_csv(table, buf)
            return buf.getvalue()

        return Response(await run_in_threadpool(csv), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="judgements.csv"'})

    @owner_only
    async def settle(request: Request):
        return page_response(settle_page)

    @owner_only
    async def owner_settle(request: Request):
        if request.method == "GET":
            return json_response(await run_in_threadpool(session.settle_state))
        b = await read_json(request)
        missing = [k for k in ("pair_id", "judgement") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a settling judgement needs "
                                 "'pair_id' and 'judgement'.")
        d = await run_in_threadpool(lambda: session.settle(b["pair_id"], b["judgement"], comment=b.get("comment"),
                                                           request_id=b.get("request_id")))
        return json_response(d, 201)

    async def state(request: Request):
        rater = rater_of(request, request.query_params.get("rater") or None)
        return json_response(await run_in_threadpool(session.state, rater))

    def judging_rater(request: Request, given, doing: str) -> str:
        """The rater a request about one's own judgements is for (:func:`rater_of`); the owner's
        link judges nothing, so it has none."""
        rater = rater_of(request, given)
        if rater is None:
            if identity(request).role == "owner":
                raise Refused(403, f"The owner's invite link does not judge, so it has no judgements to {doing}.")
            raise HTTPError(400, "Missing field 'rater'.")
        return rater

    async def mine(request: Request):
        rater = judging_rater(request, request.query_params.get("rater") or None, "list")
        raw = request.query_params.get("offset") or "0"
        if not raw.isdigit() or len(raw) > 9:
            raise HTTPError(400, f"offset must be a whole number, 0 or more. Got {raw!r} instead.")
        return json_response(await run_in_threadpool(lambda: session.mine(rater, offset=int(raw))))

    async def mine_pair(request: Request):
        rater = judging_rater(request, request.query_params.get("rater") or None, "open")
        pid = request.query_params.get("pair_id")
        if not pid:
            raise HTTPError(400, "Missing 'pair_id': which of your judgements to open.")
        return json_response(await run_in_threadpool(session.my_judgement, rater, pid))

    async def change(request: Request):
        b = await read_json(request)
        rater = judging_rater(request, b.get("rater"), "change")
        missing = [k for k in ("pair_id", "judgement") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a change needs 'pair_id' and "
                                 "'judgement'.")
        comment = b["comment"] if "comment" in b else KEEP
        d = await run_in_threadpool(lambda: session.change(rater, b["pair_id"], b["judgement"], comment=comment,
                                                           request_id=b.get("request_id")))
        return json_response(d)

    async def judgements(request: Request):
        b = await read_json(request)
        rater = rater_of(request, b.get("rater"))
        if identity(request).role == "owner":
            raise Refused(403, "The owner's invite link does not judge; to judge too, make yourself a rater's link "
                               "('abcde judge raters DIR --new-link NAME').")
        missing = [k for k in ("rater", "pair_id", "judgement") if k not in b and not (k == "rater" and rater)]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a judgement needs "
                                 "'rater', 'pair_id' and 'judgement'.")
        d = await run_in_threadpool(lambda: session.submit(rater, b["pair_id"], b["judgement"],
                                                           comment=b.get("comment"), request_id=b.get("request_id")))
        return json_response(d, 201)

    async def undo(request: Request):
        b = await read_json(request)
        rater = rater_of(request, b.get("rater"))
        if rater is None:
            if identity(request).role == "owner":
                raise Refused(403, "The owner's invite link does not judge, so it has nothing to undo.")
            raise HTTPError(400, "Missing field 'rater'.")
        d = await run_in_threadpool(session.undo, rater)
        if d is None:
            raise HTTPError(409, f"Rater {rater!r} has no judgement to undo.")
        return json_response(d)

    routes = [Route("/", index, methods=["GET"]), Route("/owner", owner, methods=["GET"]),
              Route("/settle", settle, methods=["GET"]), *assets.routes(),
              Route("/join/{token}", join, methods=["GET"]),
              Route("/api/me", me, methods=["GET"]),
              Route("/api/state", state, methods=["GET"]),
              Route("/api/mine", mine, methods=["GET"]),
              Route("/api/mine/pair", mine_pair, methods=["GET"]),
              Route("/api/owner", owner_state, methods=["GET"]),
              Route("/api/owner/export", owner_export, methods=["GET"]),
              Route("/api/owner/settle", owner_settle, methods=["GET", "POST"]),
              Route("/api/judgements", judgements, methods=["POST"]),
              Route("/api/change", change, methods=["POST"]),
              Route("/api/undo", undo, methods=["POST"])]
    app = create_app(routes, errors=ERRORS)
    app.add_exception_handler(Refused, lambda request, exc: refuse(request.url.path, request.method, exc.status,
                                                                   str(exc), exc.headers))
    return InviteGate(app, session, required=invites_required, refuse=refuse)


# ----------------------------------------------------------------------------- invites at start-up
def check_public_url(url: str | None) -> str | None:
    """``--public-url``: the address raters open (a reverse proxy's, say ``https://judge.example.org/``),
    normalised to end in ``/``; ``http(s)://host[:port]`` with no path, query or fragment (the app
    is served at the root)."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.username and not parts.password
    except ValueError:
        ok = False
    if not ok or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InputError(f"--public-url must be http(s)://HOST[:PORT]/ (the address raters open, served at its root; "
                         f"no path, query or user). Got {url!r} instead.")
    return f"{parts.scheme}://{parts.netloc}/"


def public_hosts(url: str | None) -> tuple[str, ...]:
    """The ``Host`` values a request through ``url`` (a reverse proxy that passes the name on) carries."""
    if url is None:
        return ()
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    netloc = parts.netloc.lower()
    return (netloc,) if parts.port else (netloc, f"{netloc}:{default}")


def needs_invites_text(host: str) -> str:
    return (f"Serving on {host!r} lets other machines in, so raters need invite links: pass --raters NAME,NAME "
            "(or --raters FILE, one name a line); or serve on 127.0.0.1 to judge alone at this machine.")


class JudgingServer:
    """A running judging server over one sample directory.

    Binds ``host:port`` (port 0: a free port), takes the directory's serving lock
    (a second server on the same directory is refused with a clear message), and
    serves :class:`JudgingSession` until :meth:`shutdown` (or SIGTERM or Ctrl+C in :meth:`serve_forever`).

    Invites (see the module's docstring): ``raters`` (names) makes an invite link for each name
    without one, and the owner's, once the directory is locked; :attr:`invites` holds them (a
    link made now carries its token, once) and :attr:`links` the URLs of the links made now. A
    host other than loopback without ``raters`` and without invites in the store is refused
    before anything is bound. ``public_url``: the address raters open when a reverse proxy is in
    front (links start with it; its name passes the Host check; ``https``: the cookie is
    ``Secure``). ``instructions``: the raters' instructions (Markdown), kept in the store once the
    directory is locked (``None``: those kept already, if any).
    """

    def __init__(self, session: JudgingSession, *, host: str = "127.0.0.1", port: int = 0, verbose: bool = False,
                 limits: Limits = Limits(), raters=None, public_url: str | None = None,
                 instructions: str | None = None):
        self.session = session
        if instructions is not None:
            check_instructions(instructions)
        raters = list(raters or [])
        for name in raters:
            check_invite_name(name)
        if OWNER in raters:
            raise InputError(f"{OWNER!r} is the owner's link, made with every --raters; give the rater another name.")
        self.public_url = check_public_url(public_url)
        loopback = is_loopback(host)
        had_invites = session.store.has_invites()
        if not loopback and not raters and not had_invites:
            raise InputError(needs_invites_text(host))
        app = create_judging_app(session, invites_required=bool(raters) or not loopback,
                                 secure_cookie=(self.public_url or "").startswith("https:"), instructions=instructions)
        self.server = Server(app, host=host, port=port, limits=limits, verbose=verbose,
                             also_hosts=public_hosts(self.public_url))
        self.port = self.server.port
        self.cookie = cookie_name({"server": self.server.server_address})  # the sign-in cookie's name
        self.url = self.server.url  # the raters' page
        self.owner_url = self.url + "owner"  # the owner's page
        self.server_address = self.server.server_address
        try:
            self._lock = lock_directory(session.sample_dir, self.url)
        except BaseException:
            self.server.server_close()
            raise
        self.invites: list[Invite] = []
        self.links: dict[str, str] = {}
        try:
            if instructions is not None:  # kept for a restarted server (once this one has the directory)
                session.store.instructions(instructions)
            if raters:
                self.invites = session.store.invite([*raters, OWNER])
            self.invites_on = bool(raters) or not loopback or had_invites
            if self.invites_on:
                session.store.link_base(self.link_base)
        except BaseException:
            self.close()
            raise
        self.links = {i.name: self.link(i.token) for i in self.invites if i.token}
        self.startup_seconds = 0.0

    @property
    def link_base(self) -> str:
        """Where invite links start: ``public_url``, else this server's URL (on every interface,
        this machine's name instead of 0.0.0.0)."""
        if self.public_url:
            return self.public_url
        host = self.server.host
        if host in ("", "0.0.0.0", "::"):
            return f"http://{socket.gethostname()}:{self.port}/"
        return self.url

    def link(self, token: str) -> str:
        return f"{self.link_base}join/{token}"

    def serve_forever(self) -> None:
        """Serve in this thread until SIGTERM (returns), Ctrl+C (a KeyboardInterrupt) or
        :meth:`shutdown`: requests in flight are answered first, then the store is let go (its last
        connection closed, SQLite checkpoints the write-ahead log: ``judgements.sqlite`` alone holds
        every judgement)."""
        try:
            self.server.serve_forever()
        finally:
            self.close()

    def start(self) -> JudgingServer:
        """Serve in a background thread (for tests and notebooks)."""
        self.server.start()
        return self

    def shutdown(self) -> None:
        self.server.shutdown()
        self.close()

    def close(self) -> None:
        """Close the socket and release the directory's lock."""
        self.server.server_close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def serve(sample_dir, *, host: str = "127.0.0.1", port: int = 0, seed: int | None = None,
          replicate: float | None = None, target_width: float | None = None, hide=(), show_ids: bool = False,
          verbose: bool = False, adaptive: bool = False, show_raters: bool = False, raters=None,
          public_url: str | None = None, instructions=None) -> JudgingServer:
    """Open the store, build the session and bind the server (not yet serving); ``raters``: make
    their invite links (and the owner's), see :class:`JudgingServer`. ``instructions``: a Markdown
    file for the raters, kept in the store (replacing what was kept; an empty file removes them), so
    that a restarted server shows them without it (:func:`instructions_html`)."""
    t0 = time.perf_counter()
    raters = list(raters or [])
    for name in raters:  # a bad name is refused before anything is opened
        check_invite_name(name)
    check_public_url(public_url)
    markdown = read_instructions(instructions) if instructions is not None else None
    if not is_loopback(host) and not raters and (not (Path(sample_dir) / STORE_NAME).exists()
                                                 or not JudgementStore(sample_dir).has_invites()):
        raise InputError(needs_invites_text(host))  # before the session writes its settings (or makes a store)
    session = JudgingSession(sample_dir, seed=seed, replicate=replicate, target_width=target_width, hide=hide,
                             show_ids=show_ids, adaptive=adaptive, show_raters=show_raters)
    session.estimates()  # warm: the owner's first page load is then as fast as the others
    srv = JudgingServer(session, host=host, port=port, verbose=verbose, raters=raters, public_url=public_url,
                        instructions=markdown)
    srv.startup_seconds = time.perf_counter() - t0
    return srv
