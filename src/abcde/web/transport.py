"""How both local web apps are served: uvicorn on one event loop, with our h11 protocol class,
one Host check, one set of security headers, and bounds on what a client may send, for how long,
and how many may be connected. What the apps are made of (the one error shape, JSON bodies,
pages and static files) is :mod:`abcde.web.server`.

- **Host check (DNS rebinding).** A server bound to a loopback address answers only requests whose
  ``Host`` names it: ``127.0.0.1``, ``localhost`` or ``[::1]`` with its port (403 otherwise), so a
  foreign web page whose name resolves to 127.0.0.1 cannot read it. A server bound to another
  address is meant to be reached by names we cannot know, and checks nothing.
- **Security headers** on every response: a Content-Security-Policy that allows scripts and
  styles only from this server's own ``/static/`` files (no inline script or style, no eval, no
  other origin, no images or frames), ``nosniff``, no referrer, no framing, ``no-store`` (static
  files: ``no-cache`` with an ETag).
- **Request bodies**: at most :attr:`Limits.max_body` bytes (413), complete within
  :attr:`Limits.body_timeout` seconds of the request head (408); what a body must hold is
  :func:`abcde.web.server.read_json`'s.
- **Slow clients** hold no thread (uvicorn serves connections on one event loop; only the
  apps' blocking work runs in Starlette's thread pool) and only a bounded time; open connections
  are capped (a connection beyond the cap gets a 503 at once); see :class:`Limits`.
- **Secrets in paths.** A path holding ``/join/`` carries an invite link's token (the judging
  app's): the access log (``--verbose``) shows it as ``/join/[token hidden]``, in every app.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
from dataclasses import dataclass

import anyio
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from abcde.util.net import is_loopback
from abcde.web.server import HTTPError, error_body, error_response


# Scripts and styles only from this server's own files; JSON only from itself; nothing else.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


@dataclass(frozen=True)
class Limits:
    """How much a client may send and for how long, and how many may be connected.

    What protects against slow clients: uvicorn serves every connection on one asyncio event
    loop, so a connection that sends nothing holds a socket, not a thread (the old
    ``http.server`` held one thread per connection, forever). uvicorn itself only times out
    *idle* keep-alive connections (``keep_alive``); a connection that never completes its
    request head is closed after ``header_timeout`` by our protocol class, and a request whose
    body does not arrive (say, a Content-Length larger than what is sent) gets a 408 after
    ``body_timeout``, and its connection is closed.

    How many: ``max_connections`` open connections (requests in flight included: one per
    connection). A connection beyond it is answered at once with a 503 in the one error shape
    and closed (after a short linger that reads and drops its request, so that the client sees
    the 503 rather than a reset) -- it never waits. The cap is high because an idle connection
    is cheap here: a socket and a few kilobytes on the event loop, no thread. Hundreds of slow
    or half-open clients (each gone after the timeouts above) then leave room for the real
    ones; a cap of 100, uvicorn's style, would let 100 idle sockets lock everyone out for
    ``header_timeout``. What bounds it is the process's file descriptors: every connection is
    one, and refused ones linger for up to a second (at most as many again), so the server
    needs ``2 * max_connections`` descriptors plus :data:`FD_RESERVE` for its own files
    (DuckDB, SQLite, Python). :class:`Server` raises the soft ``RLIMIT_NOFILE`` towards the
    hard one when it is lower (often 1024 by default, the hard limit far higher), and if the
    hard limit is too low lowers the cap to fit (with a warning), so that the server never
    runs out of descriptors (``accept()`` failing with EMFILE, the DuckDB spill or SQLite
    journal unable to open).
    """

    max_body: int = 64 * 1024  #: bytes in a request body (413 beyond)
    max_head: int = 16 * 1024  #: bytes in a request line and headers (h11; 400 beyond)
    header_timeout: float = 10.0  #: seconds to send a complete request head, from connect or the last response
    body_timeout: float = 10.0  #: seconds to send the whole body, from the request head
    keep_alive: float = 5.0  #: seconds an idle keep-alive connection stays open (uvicorn)
    max_connections: int = 1000  #: open connections (503 beyond); see above
    backlog: int = 1024  #: pending connections the kernel queues (a burst of clients is not dropped; capped by somaxconn)
    shutdown_timeout: float = 5.0  #: seconds shutdown() waits for requests in flight


#: File descriptors kept for the server's own files beyond its connections (see :class:`Limits`).
FD_RESERVE = 256
#: Seconds a connection refused beyond the cap lingers, reading and dropping its request.
REFUSED_LINGER = 1.0


def connection_cap(max_connections: int) -> int:
    """The connections a server may hold: ``max_connections`` if the process may open ``2 *
    max_connections + FD_RESERVE`` files (the soft ``RLIMIT_NOFILE`` is raised towards the hard
    limit when lower), else as many as it may (with a warning)."""
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1. Got {max_connections!r} instead.")
    try:
        import resource
    except ImportError:  # not a Unix: no such limit to check
        return max_connections
    need = 2 * max_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft >= need:
        return max_connections
    cap = max(1, (soft - FD_RESERVE) // 2)
    logging.getLogger("abcde.web").warning(
        "This process may open only %d files (ulimit -n); serving at most %d connections instead of %d.",
        soft, cap, max_connections)
    return cap


# ----------------------------------------------------------------------------- the guard (ASGI)

def allowed_hosts(host: str, port: int, also=()) -> frozenset[str] | None:
    """The ``Host`` values a server bound to ``host:port`` answers; ``None``: any (not loopback).
    ``also``: more ``Host`` values it answers (the public address of a reverse proxy in front of
    it, which passes the public name on)."""
    if not is_loopback(host):
        return None
    shown = f"[{host}]" if ":" in host else host
    names = {"127.0.0.1", "localhost", "[::1]", shown.lower()}
    return frozenset({f"{n}:{port}" for n in names} | (names if port == 80 else set()) | {h.lower() for h in also})


class Guard:
    """The outer ASGI layer of every app: the Host check, the security headers, and the body's
    size and time limits (answering in the one error shape). Starlette's own ``max_body_size``
    would answer in plain text and keep the connection open with the rest of the body unread;
    here an answer given before the whole body arrived closes the connection."""

    def __init__(self, app, *, hosts: frozenset[str] | None, limits: Limits):
        self.app = app
        self.hosts = hosts
        self.limits = limits

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        headers = scope["headers"]
        length = next((int(v) for k, v in headers if k == b"content-length"), None)  # h11 checked it is a number
        more_body = bool(length) or any(k == b"transfer-encoding" for k, _ in headers)
        deadline = time.monotonic() + limits.body_timeout
        received = 0

        async def send_guarded(message) -> None:
            if message["type"] == "http.response.start":
                extra = list(message.get("headers", []))
                if not any(k.lower() == b"cache-control" for k, _ in extra):
                    extra.append((b"cache-control", b"no-store"))
                if more_body and not any(k.lower() == b"connection" for k, _ in extra):
                    # answered before the whole body arrived: its rest must not be read as the next request
                    extra.append((b"connection", b"close"))
                message = {**message, "headers": extra + SECURITY_HEADERS}
            await send(message)

        async def receive_limited():
            nonlocal received, more_body
            if not more_body:  # the body is complete; what comes next is a disconnect: no deadline
                return await receive()
            message = None
            with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
                message = await receive()
            if message is None:
                raise HTTPError(408, f"The request body did not arrive within {limits.body_timeout:g} seconds.")
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                more_body = message.get("more_body", False)
                if received > limits.max_body:
                    raise HTTPError(413, f"The request body is larger than {limits.max_body} bytes.")
            return message

        if self.hosts is not None:
            hosts = [v.decode("latin-1").lower() for k, v in headers if k == b"host"]
            if len(hosts) != 1 or hosts[0] not in self.hosts:
                await error_response(403, "This server answers only requests addressed to it by its own address "
                                     "(127.0.0.1, localhost or [::1] with its port).")(scope, receive, send_guarded)
                return
        if length is not None and length > limits.max_body:
            await error_response(413, f"The request body is larger than {limits.max_body} bytes.")(
                scope, receive, send_guarded)
            return
        await self.app(scope, receive_limited, send_guarded)


# ----------------------------------------------------------------------------- the HTTP protocol
class _Protocol(H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for the request head (uvicorn has none: a client
    that connects and sends nothing, or half a header, would hold its connection for ever), the
    cap on open connections (a 503 at once beyond it), and its 400 for a malformed request in
    the one error shape. :class:`Server` makes a subclass per server with its limits."""

    header_timeout = Limits.header_timeout
    max_connections = Limits.max_connections
    _lingering: set = set()  # refused connections not yet closed (a set per server: see Server)
    _head_timer = None
    _refused = False

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._refuse()
            return
        self._arm_head_timer()

    def _refuse(self) -> None:
        """Beyond the cap: a 503 in the one shape, at once, and the connection closed. It lingers
        (up to :data:`REFUSED_LINGER` s, reading and dropping the request) so that the client
        reads the 503: closing a socket with its request unread would reset the connection, and
        the reset can destroy the 503 before the client reads it. No more than ``max_connections``
        linger at a time; beyond that a connection is closed at once."""
        self._refused = True
        self.connections.discard(self)  # not one of the connections served (uvicorn's count)
        if len(self._lingering) >= self.max_connections:
            self.transport.abort()
            return
        body = error_body(503, f"The server has too many open connections ({self.max_connections}); "
                               "try again in a moment.")
        head = [b"HTTP/1.1 503 Service Unavailable", b"content-type: application/json",
                b"content-length: " + str(len(body)).encode(), b"connection: close", b"retry-after: 1",
                b"cache-control: no-store", *(k + b": " + v for k, v in SECURITY_HEADERS)]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self._lingering.add(self)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._head_timer = self.loop.call_later(REFUSED_LINGER, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the request of a refused connection: read and dropped
        super().data_received(data)

    def eof_received(self) -> None:
        if self._refused:
            self.transport.close()  # the client has sent all it will: close now

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_timer()

    def connection_lost(self, exc) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._lingering.discard(self)
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = None if self.transport.is_closing() else self.loop.call_later(
            self.header_timeout, self._head_timeout)

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: its body has the app's deadline (Guard)
        if not self.transport.is_closing():
            try:
                self.conn.send(h11.ConnectionClosed())
            except h11.LocalProtocolError:
                pass
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        body = error_body(400, "This is not an HTTP/1.1 request this server can read (a malformed request line, "
                               "header or length).")
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"), *SECURITY_HEADERS]
        try:
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                          h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:
            pass
        self.transport.close()


# ----------------------------------------------------------------------------- the server
@contextlib.contextmanager
def _sigterm_stops(server: uvicorn.Server):
    """While serving in the main thread: SIGTERM asks ``server`` to stop, and nothing more.

    uvicorn catches SIGTERM and SIGINT while it serves, stops gracefully, puts back the handlers it
    found and then raises the signals it caught again, for their handlers to act. SIGTERM's
    default handler kills the process on the spot, before the caller's ``finally`` and ``except``
    blocks run (the judging server's store stays unclosed, its last judgements in the write-ahead
    log only). The handler put here instead sets ``should_exit`` (so a SIGTERM before or after
    uvicorn's own handlers are in place stops the server too) and returns: ``run`` then returns
    normally. The previous handler is back once serving has ended. Elsewhere than the main thread
    (:meth:`Server.start`) signals are not this server's business, and nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame) -> None:
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(backlog)  # connections queue from now on, before serving starts
    except BaseException:
        sock.close()
        raise
    return sock


class Server:
    """An ASGI app served by uvicorn on ``host:port`` (port 0: a free one), bound at once.

    Serve in the foreground with :meth:`serve_forever` (Ctrl+C or :meth:`shutdown` from another
    thread stops it), or in a background thread with :meth:`start` (tests, notebooks) and stop
    with :meth:`shutdown`. ``url``, ``port`` and ``server_address`` (host, port) are known from
    construction. The app is wrapped in :class:`Guard` (Host check, headers, body limits).
    """

    def __init__(self, app, *, host: str = "127.0.0.1", port: int = 0, limits: Limits = Limits(),
                 verbose: bool = False, also_hosts=()):
        self.limits = limits
        #: the cap on open connections in force (``limits.max_connections``, unless the file limit is lower)
        self.max_connections = connection_cap(limits.max_connections)
        self._socket = _bind(host, port, limits.backlog)
        self.server_address: tuple[str, int] = tuple(self._socket.getsockname()[:2])
        self.host = host
        self.port = self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        self.app = Guard(app, hosts=allowed_hosts(host, self.port, also_hosts), limits=limits)
        logging.getLogger("uvicorn.access").addFilter(_REDACT_SECRETS)  # once: the same filter object
        protocol = type("Protocol", (_Protocol,), {"header_timeout": limits.header_timeout,
                                                   "max_connections": self.max_connections, "_lingering": set()})
        if verbose:
            _log_to_stderr()
        config = uvicorn.Config(
            self.app, http=protocol, interface="asgi3", lifespan="off", log_config=None, access_log=verbose,
            proxy_headers=False, server_header=False, timeout_keep_alive=limits.keep_alive,
            # the protocol caps connections (and so requests: one in flight per connection), and answers
            # beyond the cap at once, in the one shape; uvicorn's limit_concurrency would answer only once a
            # request head has arrived, in plain text
            limit_concurrency=None, h11_max_incomplete_event_size=limits.max_head,
            backlog=limits.backlog, timeout_graceful_shutdown=limits.shutdown_timeout)
        self._uvicorn = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self._serving = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown` or, in the main thread, SIGTERM or SIGINT.

        Either signal stops the server gracefully: it stops accepting connections and answers the
        requests in flight (up to ``limits.shutdown_timeout``). Then SIGTERM, the way a service is
        stopped (systemd, ``docker stop``, ``kill``), returns from here like :meth:`shutdown`, so the
        caller closes what it holds (the judging server its store, whose file then holds every
        judgement) and the process exits 0; SIGINT (Ctrl+C) raises KeyboardInterrupt, as before."""
        self._serving.set()
        try:
            with self.stop_on_sigterm():
                self._uvicorn.run(sockets=[self._socket])
        finally:
            self._stopped.set()
            self.server_close()

    def stop_on_sigterm(self):
        """A context manager: within it, in the main thread, SIGTERM stops this server (or makes
        the next :meth:`serve_forever` return at once) instead of killing the process.
        :meth:`serve_forever` is within it; a command enters it before it prints that it serves,
        so that a SIGTERM right after that line still stops the server cleanly."""
        return _sigterm_stops(self._uvicorn)

    def start(self) -> Server:
        """Serve in a background (daemon) thread; returns once uvicorn accepts connections."""
        self._thread = threading.Thread(target=self.serve_forever, name=f"abcde-web-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not self._uvicorn.started:
            raise RuntimeError(f"The web server on {self.url} did not start (see the log above).")
        return self

    def shutdown(self) -> None:
        """Stop serving (requests in flight are answered first, up to ``limits.shutdown_timeout``)
        and wait until :meth:`serve_forever` has returned, wherever it runs."""
        self._uvicorn.should_exit = True
        if self._serving.is_set():
            self._stopped.wait()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.server_close()

    def server_close(self) -> None:
        """Close the listening socket (serving closes it when it ends)."""
        self._socket.close()

    close = server_close


#: Where a path carries a secret (an invite link's token, ``/join/TOKEN``): logged up to here only.
SECRET_PATH_MARK = "/join/"


class _RedactSecrets(logging.Filter):
    """Hide the token of an invite link (``/join/TOKEN``) in uvicorn's access log lines
    (``'%s - "%s %s HTTP/%s" %d'``: client, method, path, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and SECRET_PATH_MARK in args[2]:
            path = args[2]
            record.args = (*args[:2], path[:path.index(SECRET_PATH_MARK) + len(SECRET_PATH_MARK)] + "[token hidden]",
                           *args[3:])
        return True


_REDACT_SECRETS = _RedactSecrets()


def _log_to_stderr() -> None:
    """--verbose: one line per request on stderr (uvicorn's access log)."""
    logger = logging.getLogger("uvicorn.access")
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler())
    logger.setLevel(logging.INFO)
    logger.propagate = False


__all__ = ["CSP", "Guard", "Limits", "Server", "allowed_hosts", "connection_cap"]
