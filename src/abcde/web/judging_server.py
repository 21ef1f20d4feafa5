"""The judging web server: the standard library's ``ThreadingHTTPServer`` and a fixed set of routes.

Routes (nothing else is served; no path from a request ever reaches the file system)::

    GET  /                    the page
    GET  /api/state?rater=R   progress, live estimates, agreement, and R's next pair
    POST /api/judgements      {"rater", "pair_id", "judgement", "comment"?, "request_id"?}
    POST /api/undo            {"rater"}: withdraw R's last judgement

Errors are one JSON shape, ``{"ok": false, "error": "...", "status": 4xx}``: 400 for a
malformed body, bad vocabulary or rater name; 404 for an unknown route or pair; 409
for a double submit or a replayed request; 403 for a request whose ``Host`` is not
this server (DNS rebinding) when it listens on a loopback address; 415 for a POST
that is not JSON. A judgement is committed to the store before its response is sent.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from abcde.errors import AbcdeError, InputError
from abcde.web.judging_page import CSP, PAGE
from abcde.judging.session import JudgingSession
from abcde.quality.store import DuplicateJudgementError, UnknownPairError, lock_directory

MAX_BODY = 64 * 1024


class _HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Handler(BaseHTTPRequestHandler):
    server_version = "abcde-judge"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    session: JudgingSession
    allowed_hosts: set | None = None
    verbose = False

    # ------------------------------------------------------------------ plumbing
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        if self.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: dict) -> None:
        self._send(status, json.dumps(obj, allow_nan=False, default=str).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"ok": False, "error": message, "status": status})

    def _check_host(self) -> None:
        if self.allowed_hosts is not None and (self.headers.get("Host") or "").lower() not in self.allowed_hosts:
            raise _HTTPError(403, "This server answers only requests addressed to it by its own address.")

    def _body(self) -> dict:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _HTTPError(400, "Bad Content-Length.") from None
        if n > MAX_BODY:
            raise _HTTPError(413, f"The request body is larger than {MAX_BODY} bytes.")
        raw = self.rfile.read(n) if n > 0 else b""
        if ctype != "application/json":
            raise _HTTPError(415, f"POST bodies must be application/json. Got {ctype or 'none'!r}.")
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _HTTPError(400, f"The request body is not valid JSON: {exc}.") from None
        if not isinstance(body, dict):
            raise _HTTPError(400, "The request body must be a JSON object.")
        return body

    def _route(self, method: str) -> None:
        try:
            self._check_host()
            url = urlsplit(self.path)
            path = url.path
            if method == "GET" and path == "/":
                self._send(200, PAGE.encode(), "text/html; charset=utf-8")
                return
            if method == "GET" and path == "/api/state":
                q = parse_qs(url.query)
                rater = q.get("rater", [None])[0]
                self._json(200, self.session.state(rater or None))
                return
            if method == "POST" and path == "/api/judgements":
                b = self._body()
                missing = [k for k in ("rater", "pair_id", "judgement") if k not in b]
                if missing:
                    raise _HTTPError(400, f"Missing field(s) {', '.join(map(repr, missing))}; a judgement needs "
                                          "'rater', 'pair_id' and 'judgement'.")
                self._json(201, self.session.submit(b["rater"], b["pair_id"], b["judgement"], comment=b.get("comment"),
                                                    request_id=b.get("request_id")))
                return
            if method == "POST" and path == "/api/undo":
                b = self._body()
                if "rater" not in b:
                    raise _HTTPError(400, "Missing field 'rater'.")
                d = self.session.undo(b["rater"])
                if d is None:
                    raise _HTTPError(409, f"Rater {b['rater']!r} has no judgement to undo.")
                self._json(200, d)
                return
            if path in ("/", "/api/state", "/api/judgements", "/api/undo"):
                raise _HTTPError(405, f"{method} is not allowed on {path}.")
            raise _HTTPError(404, "Not found.")
        except _HTTPError as exc:
            self._error(exc.status, str(exc))
        except UnknownPairError as exc:
            self._error(404, str(exc))
        except DuplicateJudgementError as exc:
            self._error(409, str(exc))
        except InputError as exc:
            self._error(400, str(exc))
        except AbcdeError as exc:
            self._error(500, str(exc))

    def do_GET(self):  # noqa: N802 - http.server's naming
        self._route("GET")

    def do_HEAD(self):  # noqa: N802
        self._route("GET")

    def do_POST(self):  # noqa: N802
        self._route("POST")

    def do_PUT(self):  # noqa: N802
        self._route("PUT")

    def do_DELETE(self):  # noqa: N802
        self._route("DELETE")


class JudgingServer:
    """A running judging server over one sample directory.

    Binds ``host:port`` (port 0: a free port), takes the directory's serving lock
    (a second server on the same directory is refused with a clear message), and
    serves :class:`JudgingSession` until :meth:`shutdown`.
    """

    def __init__(self, session: JudgingSession, *, host: str = "127.0.0.1", port: int = 0, verbose: bool = False):
        self.session = session
        attrs = {"session": session, "verbose": verbose}
        self.httpd = ThreadingHTTPServer((host, port), type("BoundHandler", (Handler,), attrs))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        if _is_loopback(host):  # DNS rebinding: a foreign name resolving to 127.0.0.1 is refused
            handler_cls = self.httpd.RequestHandlerClass
            handler_cls.allowed_hosts = {f"{h}:{self.port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
        try:
            self._lock = lock_directory(session.sample_dir, self.url)
        except BaseException:
            self.httpd.server_close()
            raise
        self._thread: threading.Thread | None = None
        self.startup_seconds = 0.0

    def serve_forever(self) -> None:
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.close()

    def start(self) -> "JudgingServer":
        """Serve in a background thread (for tests and notebooks)."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def shutdown(self) -> None:
        self.httpd.shutdown()
        if self._thread is not None:
            self._thread.join()
        self.close()

    def close(self) -> None:
        self.httpd.server_close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def serve(sample_dir, *, host: str = "127.0.0.1", port: int = 0, seed: int | None = None,
          replicate: float | None = None, target_width: float | None = None, hide=(), show_ids: bool = False,
          verbose: bool = False, adaptive: bool = False) -> JudgingServer:
    """Open the store, build the session and bind the server (not yet serving)."""
    t0 = time.perf_counter()
    session = JudgingSession(sample_dir, seed=seed, replicate=replicate, target_width=target_width, hide=hide,
                             show_ids=show_ids, adaptive=adaptive)
    session.estimates()  # warm: the first page load is then as fast as the others
    srv = JudgingServer(session, host=host, port=port, verbose=verbose)
    srv.startup_seconds = time.perf_counter() - t0
    return srv
