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

import time

from abcde.errors import AbcdeError, InputError
from abcde.ids.tagging import SIDE_COLUMN
from abcde.judging.session import JudgingSession, NothingToSettleError
from abcde.samples.dir_lock import lock_directory
from abcde.samples.raters import OWNER
from abcde.samples.invites import sample_has_invites
from abcde.samples.store import DuplicateJudgementError, NotJudgedError, UnknownPairError
from abcde.web import auth, routes_owner, routes_rater, routes_settle
from abcde.web.auth import owner_only
from abcde.web.instructions import instructions_html
from abcde.web.sample_server import SampleServer, check_serving, gated_app
from abcde.web.server import Assets
from abcde.web.transport import Limits

# Importable from here before they moved to abcde.web.sample_server (shared with the entity sample's server).
from abcde.web.sample_server import check_public_url, needs_invites_text, public_hosts  # noqa: F401

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
    routes = [*routes_rater.routes(session, assets, instructions=instructions, next_command=next_command, **pair),
              *routes_owner.routes(session, assets, guard=owner_only),
              *routes_settle.routes(session, assets, instructions=instructions, next_command=next_command,
                                    guard=owner_only, **pair),
              *assets.routes(), *auth.routes(session.store, assets, secure_cookie=secure_cookie)]
    return gated_app(session, assets, routes, errors=ERRORS, invites_required=invites_required)


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


class JudgingServer(SampleServer):
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
    directory is locked (``None``: those kept already, if any). What it shares with the entity
    sample's server: :class:`abcde.web.sample_server.SampleServer`.
    """

    owner_refusal = f"{OWNER!r} is the owner's link, made with every --raters; give the rater another name."

    def __init__(self, session: JudgingSession, *, host: str = "127.0.0.1", port: int = 0, verbose: bool = False,
                 limits: Limits = Limits(), raters=None, public_url: str | None = None,
                 instructions: str | None = None):
        super().__init__(session, create_judging_app, host=host, port=port, verbose=verbose, limits=limits,
                         raters=raters, public_url=public_url, instructions=instructions)
        self.owner_url = self.url + "owner"  # the owner's page

    def _take_directory(self) -> None:
        try:
            self._lock = lock_directory(self.session.sample_dir, self.url)
        except BaseException:
            self.server.server_close()
            raise

    def _keep_instructions(self, markdown: str) -> None:
        self.session.store.instructions(markdown)

    def _invite_names(self, raters: list[str]) -> list[str]:
        return [*raters, OWNER]  # and the owner's

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
    raters, markdown = check_serving(sample_dir, host=host, raters=raters, public_url=public_url,
                                     instructions=instructions, has_invites=sample_has_invites)
    session = JudgingSession(sample_dir, seed=seed, replicate=replicate, target_width=target_width, hide=hide,
                             show_ids=show_ids, adaptive=adaptive, show_raters=show_raters)
    session.estimates()  # warm: the owner's first page load is then as fast as the others
    srv = JudgingServer(session, host=host, port=port, verbose=verbose, raters=raters, public_url=public_url,
                        instructions=markdown)
    srv.startup_seconds = time.perf_counter() - t0
    return srv
