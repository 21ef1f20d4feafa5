"""The judging app of an entity sample (``abcde judge serve DIR`` on a directory written by
``abcde entities``): "complete this item's entity", over an
:class:`~abcde.web.entity_session.EntitySession`, served by uvicorn
(:class:`abcde.web.transport.Server`) as the pair app is.

Routes (nothing else is served; no path from a request reaches the file system)::

    GET  /                     the rater's page (web/templates/judge-entity.html): one anchor at a time
    GET  /owner                the owner's page (web/templates/judge-entity-owner.html): progress per rater,
                               the live estimates and the verdict, the answer counts, the export
    GET  /settle               the owner's settle queue (web/templates/judge-entity-settle.html)
    GET  /join/TOKEN           an invite link (``--raters``): sets the sign-in cookie, then opens / (the
                               owner's: /owner)
    GET  /static/NAME          its scripts and styles (a fixed set, read at start-up)
    GET  /api/me               who this request is
    GET  /api/state?rater=R    progress and R's next anchor (no estimates)
    GET  /api/search?anchor=A&q=TEXT&rater=R   the sample's items matching TEXT (shown attributes only)
    POST /api/answers          {"rater", "anchor", "members": [{"ref", "answer"}], "added": [{"ref"} or
                               {"item_id"}], "search": "searched"|"not searched", "request_id"?}: every
                               answer of one anchor, one row each, on disk before the answer
    POST /api/undo             {"rater"}: withdraw R's last anchor (it comes back, answers filled in)
    GET  /api/owner            progress per rater, the live estimates (what 'abcde quality DIR --json'
                               prints), the answer counts, the settle queue's counts, the next step
    GET  /api/owner/export     every live answer and the owner's settlements as CSV (a cell a spreadsheet
                               would run as a formula starts with ')
    GET  /api/owner/settle     the settle queue: (anchor, item)s whose answers differ, and those settled
    POST /api/owner/settle     {"anchor", "item" (null: the anchor's search), "answer", "request_id"?}: the
                               owner's settling answer, on disk before the answer

Who a request is: :mod:`abcde.web.auth`, as for pairs (open at a loopback address: a rater types a
name; with invite links, the name comes from the link, and ``--raters`` makes the owner's link too).
The invite links are kept in the entity answer store. The owner's routes are the pair app's
(:func:`abcde.web.routes_owner.owner_routes`, :func:`abcde.web.routes_settle.settle_routes`), behind
:func:`abcde.web.auth.owner_only`: a rater's link opens neither.

Errors are the one JSON shape of :mod:`abcde.web.server`: 400 for a malformed body or an answer the
store refuses (one line: an item that is not an item, the anchor itself, a member left unanswered),
409 for an anchor already answered by this rater, a replayed request, nothing to undo or nothing to
settle (answers that do not differ).
"""

from __future__ import annotations

import time

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from abcde.completion.judgements import NothingToSettleError
from abcde.completion.store import EntityStore
from abcde.errors import AbcdeError, InputError
from abcde.samples.dir_lock import lock_directory
from abcde.samples.invites import InviteBook
from abcde.samples.ledger_rules import DuplicateJudgementError
from abcde.samples.raters import OWNER
from abcde.web import auth
from abcde.web.auth import owner_only
from abcde.web.entity_session import EntitySession
from abcde.web.instructions import instructions_html
from abcde.web.routes_owner import owner_routes
from abcde.web.routes_rater import judging_rater, page_and_state, undo_endpoint
from abcde.web.routes_settle import settle_routes
from abcde.web.sample_server import SampleServer, check_serving, gated_app
from abcde.web.server import Assets, HTTPError, json_response, read_json
from abcde.web.transport import Limits

ERRORS = {DuplicateJudgementError: 409, NothingToSettleError: 409, InputError: 400, AbcdeError: 500}


def routes(session: EntitySession, assets: Assets, *, instructions: Markup | None, next_command: str) -> list[Route]:
    """The raters' routes over ``session`` (see the module)."""

    async def search(request: Request):
        judging_rater(request, request.query_params.get("rater") or None, "nothing to search")
        anchor = request.query_params.get("anchor")
        if not anchor:
            raise HTTPError(400, "Missing 'anchor': the item whose entity is searched for.")
        q = request.query_params.get("q") or ""
        return json_response(await run_in_threadpool(session.search, anchor, q))

    async def answers(request: Request):
        b = await read_json(request)
        rater = judging_rater(request, b.get("rater"), "nothing to answer")
        missing = [k for k in ("anchor", "members", "search") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; an anchor's answers need "
                                 "'anchor', 'members' and 'search' ('added' may be left out).")
        d = await run_in_threadpool(lambda: session.submit(rater, b["anchor"], members=b["members"],
                                                           added=b.get("added", []), search=b["search"],
                                                           request_id=b.get("request_id")))
        return json_response(d, 201)

    return [*page_and_state(session, assets, "judge-entity.html", instructions=instructions, next_command=next_command),
            Route("/api/search", search, methods=["GET"]),
            Route("/api/answers", answers, methods=["POST"]),
            Route("/api/undo", undo_endpoint(session, "answered item"), methods=["POST"])]


def owner_and_settle_routes(session: EntitySession, assets: Assets, *, instructions: Markup | None,
                            next_command: str, guard) -> list[Route]:
    """The owner's routes over ``session`` (see the module), each endpoint wrapped in ``guard`` (the
    owner's: :func:`abcde.web.auth.owner_only`)."""

    def settle(b: dict) -> dict:
        missing = [k for k in ("anchor", "item", "answer") if k not in b]
        if missing:
            raise HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a settling answer needs 'anchor', "
                                 "'item' (null for the anchor's search) and 'answer'.")
        return session.settle(b["anchor"], b["item"], b["answer"], request_id=b.get("request_id"))

    return [*owner_routes(assets.render("judge-entity-owner.html", next_command=next_command), session.owner_state,
                          session.export_table, guard=guard, filename="entity_judgements.csv"),
            *settle_routes(assets.render("judge-entity-settle.html", instructions=instructions,
                                         next_command=next_command),
                           session.settle_state, settle, guard=guard)]


def create_entity_app(session: EntitySession, *, invites_required: bool = False, secure_cookie: bool = False,
                      instructions: str | None = None):
    """The entity judging app (ASGI) over ``session``; invites as :func:`abcde.web.judging_server.create_judging_app`
    has them. ``instructions``: the raters' instructions (Markdown; ``""``: none), by default those
    kept in the store."""
    assets = Assets({"judge.css": "web/static/judge.css", "judge-entity.css": "web/static/judge-entity.css",
                     "judge-pair.js": "web/static/judge-pair.js", "judge-entity.js": "web/static/judge-entity.js",
                     "judge-entity-owner.js": "web/static/judge-entity-owner.js",
                     "judge-entity-owner.css": "web/static/judge-entity-owner.css",
                     "judge-entity-settle.js": "web/static/judge-entity-settle.js",
                     "judge-join.js": "web/static/judge-join.js"})
    markdown = session.store.setting("instructions") if instructions is None else instructions
    html = instructions_html(markdown) if markdown and markdown.strip() else None
    next_command = f"abcde quality {session.given_dir}"
    return gated_app(session, assets,
                     [*routes(session, assets, instructions=html, next_command=next_command),
                      *owner_and_settle_routes(session, assets, instructions=html, next_command=next_command,
                                               guard=owner_only),
                      *assets.routes(), *auth.routes(session.store, assets, secure_cookie=secure_cookie)],
                     errors=ERRORS, invites_required=invites_required)


def entity_sample_has_invites(sample_dir) -> bool:
    """Whether the entity sample's answer store has ever made an invite link (False without a store;
    never creates one)."""
    return EntityStore.exists(sample_dir) and InviteBook(EntityStore(sample_dir)).has_invites()


class EntityJudgingServer(SampleServer):
    """A running judging server over one entity sample directory: binds ``host:port``, takes the
    directory's serving lock (one server per directory: :func:`~abcde.samples.dir_lock.lock_directory`)
    and keeps the answer store in use (:meth:`~abcde.completion.store.EntityStore.hold`) until
    :meth:`close`. ``raters``: an invite link per name without one, and the owner's (:attr:`owner_url`
    is the owner's page); ``public_url``, ``instructions``: as for pairs
    (:class:`abcde.web.judging_server.JudgingServer`; what they share:
    :class:`abcde.web.sample_server.SampleServer`)."""

    owner_refusal = f"{OWNER!r} is the owner's link, made with every --raters; give the rater another name."

    def __init__(self, session: EntitySession, *, host: str = "127.0.0.1", port: int = 0, verbose: bool = False,
                 limits: Limits = Limits(), raters=None, public_url: str | None = None,
                 instructions: str | None = None):
        super().__init__(session, create_entity_app, host=host, port=port, verbose=verbose, limits=limits,
                         raters=raters, public_url=public_url, instructions=instructions)
        self.owner_url = self.url + "owner"  # the owner's page

    def _invite_names(self, raters: list[str]) -> list[str]:
        return [*raters, OWNER]  # and the owner's

    def _take_directory(self) -> None:
        self._holds = []
        try:
            self._holds.append(lock_directory(self.session.sample_dir, self.url))
            self._holds.append(self.session.store.hold(f"abcde judge serve at {self.url}"))
        except BaseException:
            self.close()
            raise

    def _keep_instructions(self, markdown: str) -> None:
        self.session.store.setting("instructions", markdown)

    def close(self) -> None:
        """Close the socket and release the store and the directory's lock."""
        self.server.server_close()
        while self._holds:
            self._holds.pop().close()


def serve_entities(sample_dir, *, host: str = "127.0.0.1", port: int = 0, hide=(), show_ids: bool = False,
                   verbose: bool = False, raters=None, public_url: str | None = None,
                   instructions=None) -> EntityJudgingServer:
    """Open the entity sample and its answer store and bind the server (not yet serving); see
    :class:`EntityJudgingServer`. ``instructions``: a Markdown file for the raters, kept in the store."""
    t0 = time.perf_counter()
    raters, markdown = check_serving(sample_dir, host=host, raters=raters, public_url=public_url,
                                     instructions=instructions, has_invites=entity_sample_has_invites)
    session = EntitySession(sample_dir, hide=hide, show_ids=show_ids)
    srv = EntityJudgingServer(session, host=host, port=port, verbose=verbose, raters=raters, public_url=public_url,
                              instructions=markdown)
    srv.startup_seconds = time.perf_counter() - t0
    return srv


__all__ = ["EntityJudgingServer", "create_entity_app", "entity_sample_has_invites", "owner_and_settle_routes", "routes",
           "serve_entities"]
