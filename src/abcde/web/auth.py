"""Who a request to the judging app is, and what it may do (:class:`InviteGate`, the one place
that says who a request is).

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

A refusal (401/403) is a short HTML page where a person opens one (:data:`PAGE_PATHS`, an
invite link), else the one JSON error shape of :mod:`abcde.web.server` (:func:`refusals`). The
sign-in routes are here too (:func:`routes`): ``GET /join/TOKEN`` (sets the cookie) and ``GET
/api/me`` (who this request is).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.routing import Route

from abcde.errors import AbcdeError
from abcde.judging.session import JudgingSession
from abcde.samples.invites import Invite, InviteBook, is_token
from abcde.samples.store import JudgementStore
from abcde.web.server import Assets, HTTPError, error_response, json_response, page_response

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
    """An endpoint of the owner's view (:data:`abcde.web.judging_server.OWNER_PATHS`): the one
    place that decides who may see the estimates, agreement, verdict and export. Without invites,
    everyone the server answers may (it binds 127.0.0.1 unless ``--host`` says otherwise); with
    invites, only the owner's token (:class:`InviteGate`)."""

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
    :class:`abcde.web.transport.Guard` (the Host check and body limits come first).

    ``required``: invites are needed whatever the store holds (``--raters``, or an address other
    than loopback); otherwise they are once the store holds an invite link (checked per request
    until it does: ``abcde judge raters --new-link`` on a running server turns them on)."""

    def __init__(self, app, session: JudgingSession, *, required: bool, refuse):
        self.app = app
        self.store = session.store
        self.book = InviteBook(session.store)
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
            self._checking = asyncio.ensure_future(run_in_threadpool(self.book.has_invites))
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
            if is_token(token):  # anything else is no token: no look-up
                invite = await run_in_threadpool(self.book.invite_for, token)
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


def refusals(assets: Assets):
    """``refuse(path, method, status, message, headers=None)``: the one answer of a refusal, for
    :class:`InviteGate` and the app's handler of :class:`Refused`."""

    @functools.lru_cache(maxsize=32)
    def refusal_page(status: int, message: str) -> bytes:
        return assets.render("judge-signin.html", status=status, message=message)

    def refuse(path: str, method: str, status: int, message: str, headers=None) -> Response:
        """The one answer of a refusal: a short page where a person opens one, else the JSON shape."""
        if method in ("GET", "HEAD") and (path in PAGE_PATHS or path.startswith("/join/")):
            return Response(refusal_page(status, message), status_code=status, media_type="text/html; charset=utf-8",
                            headers=dict(headers or {}))
        return error_response(status, message, headers=headers)

    return refuse


def routes(store: JudgementStore, assets: Assets, *, secure_cookie: bool) -> list[Route]:
    """The sign-in routes: ``GET /join/TOKEN`` (an invite link: sets the sign-in cookie, then
    opens / or /owner; ``secure_cookie``: the cookie is ``Secure``) and ``GET /api/me``."""
    book = InviteBook(store)
    joined = {"rater": assets.render("judge-join.html", next="/"),
              "owner": assets.render("judge-join.html", next="/owner")}

    async def join(request: Request):
        token = request.path_params["token"]
        invite: Invite | None = await run_in_threadpool(book.invite_for, token)
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

    return [Route("/join/{token}", join, methods=["GET"]),
            Route("/api/me", me, methods=["GET"])]
