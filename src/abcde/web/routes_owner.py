"""The judging app's routes for the owner: the owner's page, the live view and the export. Each
endpoint goes through the owner's guard the app passes in (:func:`abcde.web.auth.owner_only`).

::

    GET  /owner               the owner's page (web/templates/judge-owner.html): estimates, verdict, agreement
    GET  /api/owner           progress per rater, live estimates, what ΔPrecision still needs,
                              agreement, pairs to settle, the stop rule, the next step and the verdict
    GET  /api/owner/export    every live judgement as a CSV judgement file (what 'abcde judge export' writes;
                              a comment a spreadsheet would run as a formula starts with ')
"""

from __future__ import annotations

import io

import pyarrow.csv as pacsv
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from abcde.judging.session import JudgingSession
from abcde.util.files import neutralise_formulas
from abcde.web.server import Assets, json_response, page_response


def owner_routes(page: bytes, state, table, *, guard, filename: str) -> list[Route]:
    """``GET /owner`` (``page``), ``GET /api/owner`` (``state()``) and ``GET /api/owner/export`` (the
    CSV of ``table()``, downloaded as ``filename``; every text cell a spreadsheet would run as a
    formula neutralised), each endpoint wrapped in ``guard`` (the owner's:
    :func:`abcde.web.auth.owner_only`). What the pair and the entity samples' owner's views share."""

    @guard
    async def owner(request: Request):
        return page_response(page)

    @guard
    async def owner_state(request: Request):
        return json_response(await run_in_threadpool(state))

    @guard
    async def owner_export(request: Request):
        def csv() -> bytes:
            # every text cell (ids from data, names, comments): no formula runs when the owner opens it
            out = neutralise_formulas(table())
            buf = io.BytesIO()
            pacsv.write_csv(out, buf)
            return buf.getvalue()

        return Response(await run_in_threadpool(csv), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})

    return [Route("/owner", owner, methods=["GET"]),
            Route("/api/owner", owner_state, methods=["GET"]),
            Route("/api/owner/export", owner_export, methods=["GET"])]


def routes(session: JudgingSession, assets: Assets, *, guard) -> list[Route]:
    """The owner's routes over ``session``, each endpoint wrapped in ``guard`` (the owner's:
    :func:`abcde.web.auth.owner_only`)."""
    return owner_routes(assets.render("judge-owner.html"), session.owner_state, session.store.to_table, guard=guard,
                        filename="judgements.csv")
