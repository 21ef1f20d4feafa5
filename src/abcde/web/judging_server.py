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

The app is assembled here (:func:`create_judging_app`) from modules by audience:
:mod:`abcde.web.routes_rater` (the raters' page and their judgements),
:mod:`abcde.web.routes_owner` (the owner's view and export), :mod:`abcde.web.routes_settle`
(the owner's settle queue), and :mod:`abcde.web.auth` (sign-in: ``/join/TOKEN``, ``/api/me``,
and :class:`~abcde.web.auth.InviteGate`, the one place that says who a request is: see there for
who may do what). The owner's and settle routes go through :func:`~abcde.web.auth.owner_only`,
which this factory passes them. :class:`JudgingServer` serves it over one sample directory
(:class:`abcde.web.transport.Server`), making invite links at start-up.

The raters' instructions (``judge serve --instructions FILE.md``: a regular file, at most 64 KB)
are Markdown, kept in the store (a restarted server shows them without the file) and shown on the
raters' page and the settle page as the small safe subset
:func:`abcde.web.instructions.instructions_html` renders.

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

import socket
import time
import urllib.parse

from abcde.errors import AbcdeError, InputError
from abcde.ids.tagging import SIDE_COLUMN
from abcde.judging.session import JudgingSession, NothingToSettleError
from abcde.samples.dir_lock import lock_directory
from abcde.samples.raters import OWNER, check_invite_name
from abcde.samples.invites import Invite, InviteBook, sample_has_invites
from abcde.samples.store import DuplicateJudgementError, NotJudgedError, UnknownPairError
from abcde.util.net import is_loopback
from abcde.web import auth, routes_owner, routes_rater, routes_settle
from abcde.web.auth import InviteGate, Refused, cookie_name, owner_only, refusals
from abcde.web.instructions import check_instructions, instructions_html, read_instructions
from abcde.web.server import Assets, create_app
from abcde.web.transport import Limits, Server

ERRORS = {UnknownPairError: 404, NotJudgedError: 404, DuplicateJudgementError: 409, NothingToSettleError: 409,
          InputError: 400, AbcdeError: 500}


#: The pages and API routes of the owner's view (estimates, agreement, verdict, export, settling):
#: those of :mod:`abcde.web.routes_owner` and :mod:`abcde.web.routes_settle`.
OWNER_PATHS = ("/owner", "/settle", "/api/owner", "/api/owner/export", "/api/owner/settle")


def create_judging_app(session: JudgingSession, *, invites_required: bool = False, secure_cookie: bool = False,
                       instructions: str | None = None):
    """The judging app (ASGI) over ``session``; serve it with :class:`abcde.web.transport.Server`.

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
    pair = pair_question(session)
    refuse = refusals(assets)
    routes = [*routes_rater.routes(session, assets, instructions=instructions, next_command=next_command, **pair),
              *routes_owner.routes(session, assets, guard=owner_only),
              *routes_settle.routes(session, assets, instructions=instructions, next_command=next_command,
                                    guard=owner_only, **pair),
              *assets.routes(), *auth.routes(session.store, assets, secure_cookie=secure_cookie)]
    app = create_app(routes, errors=ERRORS)
    app.add_exception_handler(Refused, lambda request, exc: refuse(request.url.path, request.method, exc.status,
                                                                   str(exc), exc.headers))
    return InviteGate(app, session, required=invites_required, refuse=refuse)


def pair_question(session: JudgingSession) -> dict:
    """What the judging pages ask of a pair, from the sample's metadata (``question``):
    ``{"question": None, "side_column": None}`` for whether two items are one entity; for a sample
    that asks about ids (``abcde ids``), ``question`` ``"ids"`` (the pages ask whether the two items
    are the same real-world thing) and ``side_column`` the items' column saying which copy each item
    is (:data:`abcde.ids.tagging.SIDE_COLUMN`: "published earlier" or "current"; None if the judges
    are not shown it), shown in its own row, the side of time. Never which scheme: the tagged
    clusterings are not shown."""
    if session.store.sample.metadata.get("question") != "ids":
        return {"question": None, "side_column": None}
    return {"question": "ids", "side_column": SIDE_COLUMN if SIDE_COLUMN in session.columns else None}


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
        book = InviteBook(session.store)
        had_invites = book.has_invites()
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
                self.invites = book.invite([*raters, OWNER])
            self.invites_on = bool(raters) or not loopback or had_invites
            if self.invites_on:
                book.link_base(self.link_base)
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
    if not is_loopback(host) and not raters and not sample_has_invites(sample_dir):
        raise InputError(needs_invites_text(host))  # before the session writes its settings (or makes a store)
    session = JudgingSession(sample_dir, seed=seed, replicate=replicate, target_width=target_width, hide=hide,
                             show_ids=show_ids, adaptive=adaptive, show_raters=show_raters)
    session.estimates()  # warm: the owner's first page load is then as fast as the others
    srv = JudgingServer(session, host=host, port=port, verbose=verbose, raters=raters, public_url=public_url,
                        instructions=markdown)
    srv.startup_seconds = time.perf_counter() - t0
    return srv
