"""The judging web app: a Starlette app over a :class:`JudgingSession`, served by uvicorn.

Routes (nothing else is served; no path from a request ever reaches the file system)::

    GET  /                    the rater's page (web/templates/judge.html): progress and one pair at a time
    GET  /owner               the owner's page (web/templates/judge-owner.html): estimates, verdict, agreement
    GET  /static/NAME         their scripts and styles (a fixed set, read at start-up)
    GET  /api/state?rater=R   progress and R's next pair (no estimates: raters are not shown them)
    GET  /api/owner           progress per rater, live estimates, what ΔPrecision still needs,
                              agreement, the stop rule and the verdict
    POST /api/judgements      {"rater", "pair_id", "judgement", "comment"?, "request_id"?}
    POST /api/undo            {"rater"}: withdraw R's last judgement

The owner's routes go through :func:`owner_only`, the one place that decides who may see them.

Errors are the one JSON shape of :mod:`abcde.web.server`, ``{"ok": false, "error": "...",
"status": 4xx}``: 400 for a malformed body, bad vocabulary or rater name; 404 for an unknown
route or pair; 405 for a wrong method; 409 for a double submit, a replayed request or nothing
to undo; 403 for a request whose ``Host`` is not this server (DNS rebinding) when it listens
on a loopback address; 413/408 for a body too large or too slow; 415 for a POST that is not
JSON. A judgement is committed to the store before its response is sent.
"""

from __future__ import annotations

import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from abcde.errors import AbcdeError, InputError
from abcde.judging.session import JudgingSession
from abcde.quality.store import DuplicateJudgementError, UnknownPairError, lock_directory
from abcde.web.server import (Assets, HTTPError, Limits, Server, create_app, json_response, page_response,
                              read_json)

ERRORS = {UnknownPairError: 404, DuplicateJudgementError: 409, InputError: 400, AbcdeError: 500}


#: The pages and API routes of the owner's view (estimates, agreement, verdict).
OWNER_PATHS = ("/owner", "/api/owner")


def owner_only(endpoint):
    """An endpoint of the owner's view (:data:`OWNER_PATHS`): the one place that decides who may
    see the estimates, agreement and verdict. Today everyone the server answers may (it binds
    127.0.0.1 unless ``--host`` says otherwise); a check of the owner (say, an invite link's
    token) belongs here, before ``endpoint`` runs."""

    async def guarded(request: Request):
        return await endpoint(request)

    guarded.__name__ = guarded.__qualname__ = endpoint.__name__
    return guarded


def create_judging_app(session: JudgingSession):
    """The judging app (ASGI) over ``session``; serve it with :class:`abcde.web.server.Server`."""
    assets = Assets({"judge.js": "web/static/judge.js", "judge.css": "web/static/judge.css",
                     "judge-owner.js": "web/static/judge-owner.js"})
    page = assets.render("judge.html")
    owner_page = assets.render("judge-owner.html")

    async def index(request: Request):
        return page_response(page)

    @owner_only
    async def owner(request: Request):
        return page_response(owner_page)

    @owner_only
    async def owner_state(request: Request):
        return json_response(await run_in_threadpool(session.owner_state))

    async def state(request: Request):
        rater = request.query_params.get("rater") or None
        return json_response(await run_in_threadpool(session.state, rater))

    async def judgements(request: Request):
        b = await read_json(request)
        missing = [k for k in ("rater", "pair_id", "judgement") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a judgement needs "
                                 "'rater', 'pair_id' and 'judgement'.")
        d = await run_in_threadpool(lambda: session.submit(b["rater"], b["pair_id"], b["judgement"],
                                                           comment=b.get("comment"), request_id=b.get("request_id")))
        return json_response(d, 201)

    async def undo(request: Request):
        b = await read_json(request)
        if "rater" not in b:
            raise HTTPError(400, "Missing field 'rater'.")
        d = await run_in_threadpool(session.undo, b["rater"])
        if d is None:
            raise HTTPError(409, f"Rater {b['rater']!r} has no judgement to undo.")
        return json_response(d)

    routes = [Route("/", index, methods=["GET"]), Route("/owner", owner, methods=["GET"]), *assets.routes(),
              Route("/api/state", state, methods=["GET"]),
              Route("/api/owner", owner_state, methods=["GET"]),
              Route("/api/judgements", judgements, methods=["POST"]),
              Route("/api/undo", undo, methods=["POST"])]
    return create_app(routes, errors=ERRORS)


class JudgingServer:
    """A running judging server over one sample directory.

    Binds ``host:port`` (port 0: a free port), takes the directory's serving lock
    (a second server on the same directory is refused with a clear message), and
    serves :class:`JudgingSession` until :meth:`shutdown` (or Ctrl+C in :meth:`serve_forever`).
    """

    def __init__(self, session: JudgingSession, *, host: str = "127.0.0.1", port: int = 0, verbose: bool = False,
                 limits: Limits = Limits()):
        self.session = session
        self.server = Server(create_judging_app(session), host=host, port=port, limits=limits, verbose=verbose)
        self.port = self.server.port
        self.url = self.server.url  # the raters' page
        self.owner_url = self.url + "owner"  # the owner's page
        self.server_address = self.server.server_address
        try:
            self._lock = lock_directory(session.sample_dir, self.url)
        except BaseException:
            self.server.server_close()
            raise
        self.startup_seconds = 0.0

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl+C (a KeyboardInterrupt) or :meth:`shutdown`."""
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
          verbose: bool = False, adaptive: bool = False, show_raters: bool = False) -> JudgingServer:
    """Open the store, build the session and bind the server (not yet serving)."""
    t0 = time.perf_counter()
    session = JudgingSession(sample_dir, seed=seed, replicate=replicate, target_width=target_width, hide=hide,
                             show_ids=show_ids, adaptive=adaptive, show_raters=show_raters)
    session.estimates()  # warm: the owner's first page load is then as fast as the others
    srv = JudgingServer(session, host=host, port=port, verbose=verbose)
    srv.startup_seconds = time.perf_counter() - t0
    return srv
