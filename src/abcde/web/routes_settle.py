"""The judging app's settle routes, the owner's: pairs whose raters' votes tie, and the owner's
settling vote (:meth:`~abcde.judging.session.JudgingSession.settle`). Raters judge blind: they
never see another rater's answer, so each endpoint goes through the owner's guard the app passes
in (:func:`abcde.web.auth.owner_only`).

::

    GET  /settle              the owner's settle queue (web/templates/judge-settle.html): pairs raters disagree on
    GET  /api/owner/settle    the settle queue: pairs whose raters' votes tie, and those the owner settled
    POST /api/owner/settle    {"pair_id", "judgement", "comment"?, "request_id"?}: the owner's settling vote
"""

from __future__ import annotations

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from abcde.judging.session import JudgingSession
from abcde.web.server import Assets, HTTPError, json_response, page_response, read_json


def settle_routes(page: bytes, state, settle, *, guard) -> list[Route]:
    """``GET /settle`` (``page``), ``GET /api/owner/settle`` (``state()``) and ``POST /api/owner/settle``
    (``settle(body)``, in a worker thread: the owner's settling answer, 201 with what it returns),
    each endpoint wrapped in ``guard`` (the owner's: :func:`abcde.web.auth.owner_only`). What the pair
    and the entity samples' settle queues share."""

    @guard
    async def settle_page(request: Request):
        return page_response(page)

    @guard
    async def owner_settle(request: Request):
        if request.method == "GET":
            return json_response(await run_in_threadpool(state))
        b = await read_json(request)
        return json_response(await run_in_threadpool(settle, b), 201)

    settle_page.__name__ = settle_page.__qualname__ = "settle"
    return [Route("/settle", settle_page, methods=["GET"]),
            Route("/api/owner/settle", owner_settle, methods=["GET", "POST"])]


def routes(session: JudgingSession, assets: Assets, *, instructions: Markup | None, next_command: str,
           guard, question: str | None = None, side_column: str | None = None) -> list[Route]:
    """The settle routes over ``session``, each endpoint wrapped in ``guard`` (the owner's:
    :func:`abcde.web.auth.owner_only`); ``instructions``, ``next_command``, ``question`` and
    ``side_column`` as the raters' page has them (:func:`abcde.web.routes_rater.routes`)."""
    settle_page = assets.render("judge-settle.html", instructions=instructions, next_command=next_command,
                                question=question, side_column=side_column)

    def settle(b: dict) -> dict:
        missing = [k for k in ("pair_id", "judgement") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a settling judgement needs "
                                 "'pair_id' and 'judgement'.")
        return session.settle(b["pair_id"], b["judgement"], comment=b.get("comment"), request_id=b.get("request_id"))

    return settle_routes(settle_page, session.settle_state, settle, guard=guard)
