"""What both local web apps are made of: Starlette apps with one error shape, JSON bodies read
by one rule, pages as template and static files. How they are served (uvicorn, the Host check,
the security headers, limits and timeouts) is :mod:`abcde.web.transport`.

Every answer that is not a page or a static file is JSON; every error has one shape::

    {"ok": false, "error": "a sentence for a person", "status": 4xx or 5xx}

- **Request bodies**: POST bodies are ``application/json`` (415) holding a JSON object (400 for
  anything else: bad UTF-8, bad or deep JSON, NaN, huge integers, lone surrogates); their size
  and time are bounded by :class:`abcde.web.transport.Limits` (413, 408).
- **Static files** are a fixed set read once at start-up and served by name: no path from a
  request reaches the file system.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import json
from collections.abc import Mapping

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from abcde.core.names import METRIC_LABELS, PAGE_NAMES
from abcde.util.templates import environment


# ----------------------------------------------------------------------------- errors and JSON
class HTTPError(Exception):
    """An error answer: ``status`` and a message for a person (and extra response headers)."""

    def __init__(self, status: int, message: str, *, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


def error_body(status: int, message: str) -> bytes:
    """The one error shape, as bytes."""
    return json.dumps({"ok": False, "error": message, "status": status}).encode()


def error_response(status: int, message: str, *, headers=None) -> Response:
    return Response(error_body(status, message), status_code=status, media_type="application/json",
                    headers=dict(headers or {}))


def json_response(obj, status: int = 200) -> Response:
    """A JSON answer (NaN refused: the apps turn non-finite numbers into null first)."""
    return Response(json.dumps(obj, allow_nan=False, default=str).encode(), status_code=status,
                    media_type="application/json")


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _check_strings(obj) -> None:
    """Refuse lone surrogates (``"\\ud800"`` is valid JSON syntax but no text: SQLite, DuckDB and
    UTF-8 cannot store it). Iterative: the parsed object may be as deep as the parser allows."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            strings = (x,)
        elif isinstance(x, dict):
            strings = x.keys()
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
            continue
        else:
            continue
        for s in strings:
            try:
                s.encode("utf-8")
            except UnicodeEncodeError:
                raise HTTPError(400, "The request body is not valid JSON: it holds a lone surrogate "
                                     "(a \\ud800-\\udfff escape that is not half of a pair).") from None


async def read_json(request: Request) -> dict:
    """The request's JSON object (an empty body is ``{}``), or an :class:`HTTPError`: 415 not
    ``application/json``, 400 not UTF-8, not JSON (also NaN/Infinity, integers over 4300 digits,
    nesting deeper than the parser's limit), lone surrogates, or not an object. The size and
    time limits are the server's (:class:`Limits`)."""
    raw = await request.body()  # read first, so that the connection stays usable after a 415
    ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise HTTPError(415, f"POST bodies must be application/json. Got {ctype or 'none'!r}.")
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise HTTPError(400, f"The request body is not valid JSON: {exc}.") from None
    if not isinstance(body, dict):
        raise HTTPError(400, "The request body must be a JSON object.")
    _check_strings(body)
    return body


def _status_message(request: Request, exc: HTTPException) -> str:
    if exc.status_code == 404:
        return "Not found."
    if exc.status_code == 405:
        return f"{request.method} is not allowed on {request.url.path}."
    return str(exc.detail)


def create_app(routes: list[BaseRoute], *, errors: Mapping[type[BaseException], int]) -> Starlette:
    """A Starlette app whose every error is the one JSON shape. ``errors`` maps the app's own
    exception classes to statuses (the most specific class wins); anything else is a 500."""
    errors = dict(errors)

    def mapped(request: Request, exc: Exception) -> Response:
        status = next(errors[c] for c in type(exc).__mro__ if c in errors)
        return error_response(status, str(exc) or type(exc).__name__)

    def http_error(request: Request, exc: HTTPError) -> Response:
        return error_response(exc.status, str(exc), headers=exc.headers)

    def http_exception(request: Request, exc: HTTPException) -> Response:
        return error_response(exc.status_code, _status_message(request, exc), headers=exc.headers)

    def disconnected(request: Request, exc: ClientDisconnect) -> Response:
        return error_response(400, "The client went away before sending its whole request.")

    def internal(request: Request, exc: Exception) -> Response:
        # Starlette logs nothing here and re-raises; uvicorn logs the traceback ("Exception in ASGI application").
        return error_response(500, f"Internal error: {type(exc).__name__}: {exc}")

    handlers: dict = {c: mapped for c in errors}
    handlers.update({HTTPError: http_error, HTTPException: http_exception, ClientDisconnect: disconnected,
                     Exception: internal})
    return Starlette(routes=routes, exception_handlers=handlers)


# ----------------------------------------------------------------------------- pages and static files
def package_file(path: str):
    """A file shipped in the abcde package (``assets/common.js``, ``web/static/judge.js``)."""
    return importlib.resources.files("abcde").joinpath(path)


COMMON_ASSETS = {"common.js": "assets/common.js", "common.css": "assets/common.css"}
MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_templates = environment("abcde.web", undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


class Assets:
    """A fixed set of files served at ``/static/NAME``, read once at start-up: ``files`` maps the
    served name to a path in the package. No path from a request ever reaches the file system."""

    def __init__(self, files: Mapping[str, str]):
        self._files: dict[str, tuple[bytes, str, str, str]] = {}
        for name, path in {**COMMON_ASSETS, **files}.items():
            data = package_file(path).read_bytes()
            digest = hashlib.sha384(data).digest()
            media = MEDIA_TYPES[name[name.rindex("."):]]
            etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
            self._files[name] = (data, media, etag, "sha384-" + base64.b64encode(digest).decode())

    def url(self, name: str) -> str:
        if name not in self._files:
            raise KeyError(f"{name!r} is not one of the files served: {', '.join(sorted(self._files))}")
        return f"/static/{name}"

    def script(self, name: str) -> Markup:
        """``<script src=... integrity=...>`` for a template (the hash pins the file's content)."""
        return Markup('<script src="{}" integrity="{}"></script>').format(self.url(name), self._files[name][3])

    def stylesheet(self, name: str) -> Markup:
        return Markup('<link rel="stylesheet" href="{}" integrity="{}">').format(self.url(name), self._files[name][3])

    def render(self, template: str, **context) -> bytes:
        """A page from ``web/templates/TEMPLATE`` (rendered once: the pages hold no data; they fetch it)."""
        return _templates.get_template(template).render(script=self.script, stylesheet=self.stylesheet,
                                                        names=json.dumps(PAGE_NAMES), labels=METRIC_LABELS,
                                                        **context).encode()

    async def endpoint(self, request: Request) -> Response:
        found = self._files.get(request.path_params["name"])
        if found is None:
            raise HTTPError(404, "Not found.")
        data, media, etag, _ = found
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=media, headers=headers)

    def routes(self) -> list[BaseRoute]:
        """``GET /static/NAME``, and ``/favicon.ico`` (nothing: 204) that browsers ask for."""
        return [Route("/static/{name}", self.endpoint, methods=["GET"]),
                Route("/favicon.ico", _no_content, methods=["GET"])]


async def _no_content(request: Request) -> Response:
    return Response(status_code=204)


def page_response(html: bytes) -> Response:
    return Response(html, media_type="text/html; charset=utf-8")


__all__ = ["Assets", "HTTPError", "create_app", "error_body", "error_response", "json_response", "page_response",
           "read_json"]
