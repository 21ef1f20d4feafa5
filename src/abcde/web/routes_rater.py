"""The judging app's routes for raters: their page, their next pair, their own judgements and
what they do to them (judge, change, undo). Who the rater is comes from :func:`abcde.web.auth.rater_of`
(the token's name with invites); the work is :class:`~abcde.judging.session.JudgingSession`'s.

::

    GET  /                    the rater's page (web/templates/judge.html): progress and one pair at a time
    GET  /api/state?rater=R   progress and R's next pair (no estimates: raters are not shown them)
    GET  /api/mine?rater=R&offset=N          R's own judgements (latest answer per pair), 20 at a time
    GET  /api/mine/pair?rater=R&pair_id=P    one of them opened: the pair, R's answer and its history
    POST /api/judgements      {"rater", "pair_id", "judgement", "comment"?, "request_id"?}
    POST /api/change          {"rater", "pair_id", "judgement", "comment"?, "request_id"?}: change R's
                              judgement of the pair (a new judgement superseding the old, which is kept)
    POST /api/undo            {"rater"}: withdraw R's last judgement
"""

from __future__ import annotations

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from abcde.judging.session import JudgingSession
from abcde.samples.store import KEEP
from abcde.web.auth import Refused, identity, rater_of
from abcde.web.server import Assets, HTTPError, json_response, page_response, read_json


def page_and_state(session, assets: Assets, template: str, **context) -> list[Route]:
    """``GET /``: the raters' page (``template`` rendered once per mode with ``context``: "open",
    "rater", "owner", as the request's identity says) and ``GET /api/state?rater=R``: progress and
    R's next task (``session.state(rater)``)."""
    pages = {mode: assets.render(template, mode=mode, **context) for mode in ("open", "rater", "owner")}

    async def index(request: Request):
        return page_response(pages[identity(request).role])

    async def state(request: Request):
        rater = rater_of(request, request.query_params.get("rater") or None)
        return json_response(await run_in_threadpool(session.state, rater))

    return [Route("/", index, methods=["GET"]),
            Route("/api/state", state, methods=["GET"])]


def judging_rater(request: Request, given, has_none: str) -> str:
    """The rater a request about one's own judgements (or entity answers) is for (:func:`rater_of`);
    the owner's link judges nothing, so it has none: refused, saying it has ``has_none`` (``nothing
    to undo``). No name at all: 400."""
    rater = rater_of(request, given)
    if rater is None:
        if identity(request).role == "owner":
            raise Refused(403, f"The owner's invite link does not judge, so it has {has_none}.")
        raise HTTPError(400, "Missing field 'rater'.")
    return rater


def undo_endpoint(session, what: str):
    """``POST /api/undo`` ``{"rater"}``: withdraw the rater's last ``what`` (``session.undo(rater)``:
    what was withdrawn, or ``None``: 409, nothing to undo)."""

    async def undo(request: Request):
        b = await read_json(request)
        rater = judging_rater(request, b.get("rater"), "nothing to undo")
        d = await run_in_threadpool(session.undo, rater)
        if d is None:
            raise HTTPError(409, f"Rater {rater!r} has no {what} to undo.")
        return json_response(d)

    return undo


def routes(session: JudgingSession, assets: Assets, *, instructions: Markup | None, next_command: str,
           question: str | None = None, side_column: str | None = None) -> list[Route]:
    """The raters' routes over ``session``; ``instructions``: the raters' instructions as HTML
    (:func:`abcde.web.instructions.instructions_html`; ``None``: none), ``next_command``: the
    command the page says comes next; ``question`` and ``side_column``: what a pair asks, and the
    attribute saying which copy an item is (:func:`abcde.web.judging_server.pair_question`; ``None``:
    whether two items are one entity)."""
    async def mine(request: Request):
        rater = judging_rater(request, request.query_params.get("rater") or None, "no judgements to list")
        raw = request.query_params.get("offset") or "0"
        if not raw.isdigit() or len(raw) > 9:
            raise HTTPError(400, f"offset must be a whole number, 0 or more. Got {raw!r} instead.")
        return json_response(await run_in_threadpool(lambda: session.mine(rater, offset=int(raw))))

    async def mine_pair(request: Request):
        rater = judging_rater(request, request.query_params.get("rater") or None, "no judgements to open")
        pid = request.query_params.get("pair_id")
        if not pid:
            raise HTTPError(400, "Missing 'pair_id': which of your judgements to open.")
        return json_response(await run_in_threadpool(session.my_judgement, rater, pid))

    async def change(request: Request):
        b = await read_json(request)
        rater = judging_rater(request, b.get("rater"), "no judgements to change")
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

    return [*page_and_state(session, assets, "judge.html", instructions=instructions, next_command=next_command,
                            question=question, side_column=side_column),
            Route("/api/mine", mine, methods=["GET"]),
            Route("/api/mine/pair", mine_pair, methods=["GET"]),
            Route("/api/judgements", judgements, methods=["POST"]),
            Route("/api/change", change, methods=["POST"]),
            Route("/api/undo", undo_endpoint(session, "judgement"), methods=["POST"])]
