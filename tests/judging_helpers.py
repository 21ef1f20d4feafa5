"""Helpers of the web tests (judging and exploration): a small pair sample of the FEBRL example
with hostile item text, the judging server as a real subprocess, HTTP calls, and what both apps
promise alike: the one error shape, the one Host check, strict pages and slow clients."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abcde.examples import example_paths
from abcde.quality import draw_pair_sample

HOSTILE = ["<script>window.__pwned=1</script>", "<img src=x onerror=window.__pwned=1>"]


def make_sample(root: Path, *, budget: int = 30, seed: int = 1, estimator: str | None = None) -> Path:
    """A FEBRL pair sample whose items carry a hostile ``note`` attribute (alternating payloads);
    ``estimator=None``: the default design of ``abcde pairs``."""
    d = root / "pairs"
    p = example_paths("febrl3")
    kw = {"estimator": estimator} if estimator else {}
    # The hostile note is an attribute of the inputs (a sample's files are fingerprinted at the
    # draw: editing them afterwards is refused).
    items = pq.read_table(p["items"])
    notes = [HOSTILE[k % 2] for k in range(items.num_rows)]
    hostile_items = root / "items-with-notes.parquet"
    pq.write_table(items.append_column("note", pa.array(notes)), hostile_items)
    draw_pair_sample(p["base"], p["exp"], d, items=hostile_items, budget=budget, seed=seed, **kw)
    return d


def fresh_copy(sample: Path, tmp_path: Path) -> Path:
    """A copy of the sample directory without any judgements, for one test."""
    d = tmp_path / "sample"
    shutil.copytree(sample, d, ignore=shutil.ignore_patterns("judgements*", ".judging.lock", "llm-cache*"))
    return d


def start_server(sample: Path, log: Path, *args: str) -> tuple[subprocess.Popen, dict]:
    """``abcde judge serve SAMPLE --port 0 --json ...`` as a subprocess; returns it and its JSON line."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    err = open(log, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "abcde", "judge", "serve", str(sample), "--port", "0", "--json",
                             *args], stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    err.close()
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"the server did not start (exit {proc.returncode}): {log.read_text()}")
    return proc, json.loads(line)


def stop(proc: subprocess.Popen) -> None:
    """Kill the server subprocess (if still running) and close its pipe."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()


def request(url: str, method: str, path: str, body=None, *, headers=None, raw: bytes | None = None):
    """One HTTP request with the path sent exactly as given (no normalisation); (status, JSON or text)."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=30)
    h = {"Content-Type": "application/json"} if body is not None or raw is not None else {}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    con.request(method, path, body=data, headers=h)
    r = con.getresponse()
    payload = r.read()
    con.close()
    ctype = r.getheader("Content-Type") or ""
    return r.status, (json.loads(payload) if ctype.startswith("application/json") else payload.decode())


def assert_error(resp, status: int, match: str = "") -> dict:
    """The web app's one error shape: ``{"ok": false, "error": "...", "status": N}``."""
    code, body = resp
    assert code == status, (code, body)
    assert isinstance(body, dict) and set(body) == {"ok", "error", "status"}, body
    assert body["ok"] is False and body["status"] == status and isinstance(body["error"], str) and body["error"]
    assert match.lower() in body["error"].lower(), body["error"]
    return body


def split_url(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    return host.strip("[]"), int(port)


def raw_request(url: str, data: bytes, *, timeout: float = 30) -> tuple[int, dict, bytes]:
    """Send ``data`` as is on a new connection; (status, headers, body) of the answer."""
    with socket.create_connection(split_url(url), timeout=timeout) as s:
        s.sendall(data)
        r = http.client.HTTPResponse(s)
        r.begin()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def assert_host_check(url: str, path: str) -> None:
    """The one Host check (DNS rebinding) of a server on 127.0.0.1: its own names with its port
    are answered, anything else is a 403 in the one error shape."""
    host, port = split_url(url)
    for ok in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        code, body = request(url, "GET", path, headers={"Host": ok})
        assert code == 200, (ok, code, body)
    for bad in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", f"localhost.:{port}",
                f"127.0.0.1.evil.example:{port}"):
        assert_error(request(url, "GET", path, headers={"Host": bad}), 403, "own address")
    # HTTP/1.0 without a Host: 403; two Host headers: not HTTP/1.1 (400, from the HTTP parser, in the same shape)
    code, headers, body = raw_request(url, f"GET {path} HTTP/1.0\r\n\r\n".encode())
    assert_error((code, json.loads(body)), 403, "own address")
    code, headers, body = raw_request(url, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                           f"Host: evil.example\r\nConnection: close\r\n\r\n".encode())
    assert_error((code, json.loads(body)), 400, "not an HTTP/1.1 request")
    assert headers["x-content-type-options"] == "nosniff" and "default-src 'none'" in headers["content-security-policy"]


def bad_requests(url: str, post_path: str) -> list[tuple[str, tuple, int, str]]:
    """Requests every app refuses the same way: (what, (method, path, body, headers, raw), status, message)."""
    return [
        ("route", ("GET", "/nope", None, None, None), 404, "not found"),
        ("traversal", ("GET", "/static/..%2f..%2fpyproject.toml", None, None, None), 404, "not found"),
        ("static", ("GET", "/static/nope.js", None, None, None), 404, "not found"),
        ("method", ("PUT", post_path, None, None, None), 405, "not allowed"),
        ("method", ("GET", post_path, None, None, None), 405, "not allowed"),
        ("form", ("POST", post_path, None, {"Content-Type": "application/x-www-form-urlencoded"}, b"a=b"), 415,
         "application/json"),
        ("not JSON", ("POST", post_path, None, None, b"{not json"), 400, "not valid JSON"),
        ("not UTF-8", ("POST", post_path, None, None, b'{"a": "\xff"}'), 400, "not valid JSON"),
        ("NaN", ("POST", post_path, None, None, b'{"a": NaN}'), 400, "NaN is not a JSON value"),
        ("deep", ("POST", post_path, None, None, b"[" * 30000 + b"]" * 30000), 400, "not valid JSON"),
        ("huge integer", ("POST", post_path, None, None, b'{"a": ' + b"9" * 5000 + b"}"), 400, "not valid JSON"),
        ("lone surrogate", ("POST", post_path, None, None, b'{"a": "x\\ud800"}'), 400, "lone surrogate"),
        ("array", ("POST", post_path, None, None, b"[1, 2]"), 400, "JSON object"),
        ("too large", ("POST", post_path, None, None, b"{" + b" " * (64 * 1024) + b"}"), 413, "larger than"),
        ("bad length", ("POST", post_path, None, {"Content-Length": "abc"}, None), 400, "not an HTTP/1.1 request"),
        ("foreign host", ("GET", "/", None, {"Host": "evil.example"}, None), 403, "own address"),
    ]


def assert_errors_have_one_shape(url: str, post_path: str) -> None:
    """Every refusal above is the one error shape, with its status; the server answers on."""
    for what, (method, path, body, headers, raw), status, match in bad_requests(url, post_path):
        try:
            assert_error(request(url, method, path, body, headers=headers, raw=raw), status, match)
        except AssertionError as exc:
            raise AssertionError(f"{what}: {exc}") from None


def assert_page_is_strict(url: str) -> dict[str, bytes]:
    """The page at ``url``: a strict CSP (scripts and styles only from the server's own files),
    no inline script or style, and every file it loads served with its SRI hash, its type and
    ``nosniff``, with no ``innerHTML``, eval or other origin in it. Returns {path: content}."""
    host, port = split_url(url)
    con = http.client.HTTPConnection(host, port, timeout=30)
    con.request("GET", "/")
    r = con.getresponse()
    page = r.read().decode()
    csp = r.getheader("Content-Security-Policy")
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/html")
    con.close()
    directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";"))
    assert directives["default-src"] == "'none'" and directives["script-src"] == "'self'", csp
    assert directives["style-src"] == "'self'" and directives["connect-src"] == "'self'", csp
    assert "unsafe" not in csp and directives["frame-ancestors"] == "'none'", csp
    assert r.getheader("X-Content-Type-Options") == "nosniff" and r.getheader("X-Frame-Options") == "DENY"
    assert not re.search(r"<script(?![^>]*\bsrc=)", page) and "<style" not in page and " style=" not in page
    assert not re.search(r"\son[a-z]+=", page)  # no inline event handlers
    tags = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)" integrity="([^"]+)"', page)
    assert {p for p, _ in tags} >= {"/static/common.js", "/static/common.css"}, tags
    files = {}
    for path, integrity in tags:
        con = http.client.HTTPConnection(host, port, timeout=30)
        con.request("GET", path)
        f = con.getresponse()
        data = f.read()
        con.close()
        assert f.status == 200 and f.getheader("X-Content-Type-Options") == "nosniff", path
        kind = "text/javascript" if path.endswith(".js") else "text/css"
        assert f.getheader("Content-Type").startswith(kind), (path, f.getheader("Content-Type"))
        assert integrity == "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode(), path
        text = data.decode()
        for word in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                     "http://", "https://"):
            assert word not in text, (path, word)
        files[path] = data
    for word in ("innerHTML", "http://", "https://"):
        assert word not in page, word
    return files


def assert_slow_clients_do_not_hold(url: str, post_path: str, limits, *, connections: int = 24) -> None:
    """Slow clients against a server with short ``limits`` (loopback only, a few connections,
    bounded in time): a body shorter than its Content-Length gets a 408 in the one error shape
    after ``limits.body_timeout`` and its connection is closed; connections that send nothing or
    half a request head are closed after ``limits.header_timeout``; meanwhile the server answers
    others, and holds no thread per connection."""
    host, port = split_url(url)
    threads_before = threading.active_count()
    socks = []
    try:
        t0 = time.monotonic()
        slow = socket.create_connection((host, port), timeout=limits.body_timeout + 20)
        socks.append(slow)
        slow.sendall(f"POST {post_path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: 100\r\n\r\n{{\"a\"".encode())
        half_open = []
        for k in range(connections):
            c = socket.create_connection((host, port), timeout=limits.header_timeout + 20)
            if k % 2:
                c.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
            socks.append(c)
            half_open.append(c)
        # The server answers others meanwhile, at once.
        code, body = request(url, "GET", "/")
        assert code == 200, (code, body)
        assert time.monotonic() - t0 < min(limits.header_timeout, limits.body_timeout), "an answer waited"
        # No thread per connection (http.server held one thread per connection, for ever).
        assert threading.active_count() - threads_before < 5, threading.active_count() - threads_before
        # The short body: 408 in the one shape, then the connection is closed.
        r = http.client.HTTPResponse(slow)
        r.begin()
        assert_error((r.status, json.loads(r.read())), 408, "did not arrive")
        assert r.getheader("Connection") == "close"
        assert limits.body_timeout * 0.9 <= time.monotonic() - t0 < limits.body_timeout + 60
        assert slow.recv(1) == b""
        # The half-open connections are closed by the server.
        for c in half_open:
            try:
                assert c.recv(1) == b""
            except ConnectionResetError:
                pass
        assert time.monotonic() - t0 < max(limits.header_timeout, limits.body_timeout) + 60
        code, body = request(url, "GET", "/")
        assert code == 200
    finally:
        for c in socks:
            c.close()


@contextlib.contextmanager
def page_under_csp(browser):
    """A browser page that keeps the server's Content-Security-Policy (the ``page`` fixture
    bypasses it, for Playwright's string predicates). ``page.problems`` collects console errors
    (a CSP violation is one), page errors and requests to any other host (refused)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=False)
    pg = ctx.new_page()
    pg.problems = []

    def guard(route):
        url = route.request.url
        if url.split("/")[2].rsplit(":", 1)[0] in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            pg.problems.append(f"request to {url}")
            route.abort()

    pg.route("**/*", guard)
    pg.on("console", lambda m: pg.problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
          else None)
    pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
    try:
        yield pg
    finally:
        ctx.close()


SLOW_KINDS = ("nothing", "half a head", "short body")


def open_slow_clients(url: str, post_path: str, n: int) -> list[tuple[str, socket.socket]]:
    """``n`` connections that hang on, a mix of: nothing sent, half a request head, and a whole
    head with a body shorter than its Content-Length. Returns (kind, socket) pairs."""
    host, port = split_url(url)
    clients = []
    for k in range(n):
        kind = SLOW_KINDS[k % len(SLOW_KINDS)]
        c = socket.create_connection((host, port), timeout=30)
        if kind == "half a head":
            c.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
        elif kind == "short body":
            c.sendall(f"POST {post_path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: 100\r\n\r\n{{\"a\"".encode())
        clients.append((kind, c))
    return clients


def still_open(c: socket.socket) -> bool:
    """Whether the server has neither closed ``c`` nor answered on it (a non-blocking peek)."""
    c.setblocking(False)
    try:
        c.recv(1, socket.MSG_PEEK)
        return False  # an answer, or b"": closed
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        c.setblocking(True)


def timed(fn, *args, **kwargs):
    t0 = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - t0


def assert_hundreds_of_slow_clients_do_not_hold(url: str, get_path: str, post: tuple[str, dict, int], limits, *,
                                                clients: int = 200) -> dict:
    """While ``clients`` slow and half-open connections hang on (:func:`open_slow_clients`), a
    normal GET of ``get_path`` and a normal JSON POST (``post``: path, body, expected status)
    each answer before any slow one is timed out; afterwards the server closes every slow one (the short bodies with a
    408 in the one shape) within the timeouts, and answers on. ``limits`` must give the slow
    ones time to hang on while the normal requests are made (a few seconds). Returns timings."""
    post_path, post_body, post_status = post
    t0 = time.monotonic()
    threads_before = threading.active_count()
    slow = open_slow_clients(url, post_path, clients)
    try:
        opened = time.monotonic() - t0
        (code, body), get_s = timed(request, url, "GET", get_path)
        assert code == 200, (code, body)
        (code, body), post_s = timed(request, url, "POST", post_path, post_body)
        assert code == post_status, (code, body)
        # Both answered while the slow ones hung on, before any of them was timed out: no answer waited
        # for them (a bound from the limits, not from this machine's speed: no fixed number of seconds).
        assert time.monotonic() - t0 < min(limits.header_timeout, limits.body_timeout), (
            "an answer waited for the slow clients (or the machine is too loaded to tell: give longer limits)",
            opened, get_s, post_s)
        # the slow ones hung on meanwhile: none was answered or closed, no thread for any of them
        assert all(still_open(c) for _, c in slow), [k for k, c in slow if not still_open(c)]
        assert threading.active_count() - threads_before < 5, threading.active_count() - threads_before
        # then the server closes them all after the timeouts
        deadline = t0 + max(limits.header_timeout, limits.body_timeout) + 60  # generous: a loaded machine
        for kind, c in slow:
            c.settimeout(max(0.1, deadline - time.monotonic()))
            if kind == "short body":
                r = http.client.HTTPResponse(c)
                r.begin()
                assert_error((r.status, json.loads(r.read())), 408, "did not arrive")
                assert r.getheader("Connection") == "close"
            try:
                assert c.recv(1) == b"", kind
            except ConnectionResetError:
                pass
        closed = time.monotonic() - t0
        assert min(limits.header_timeout, limits.body_timeout) * 0.9 <= closed < deadline - t0
        (code, body), after_s = timed(request, url, "GET", get_path)
        assert code == 200, (code, after_s)
        return {"opened": opened, "get": get_s, "post": post_s, "all_closed": closed, "after": after_s}
    finally:
        for _, c in slow:
            c.close()


def assert_connections_beyond_the_cap_are_refused(url: str, get_path: str, cap: int) -> dict:
    """With ``cap`` connections open (and idle), one more is answered at once with a 503 in the
    one error shape and closed (whether it sends a request or nothing); once some close, the
    server answers again. Returns timings."""
    host, port = split_url(url)
    held = [socket.create_connection((host, port), timeout=30) for _ in range(cap)]
    try:
        time.sleep(0.3)  # the server has accepted them all (in order: the next one is the one too many)
        t0 = time.monotonic()
        code, headers, body = raw_request(url, f"GET {get_path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(),
                                          timeout=10)
        refused_s = time.monotonic() - t0
        assert_error((code, json.loads(body)), 503, "too many open connections")
        assert headers["connection"] == "close" and headers["x-content-type-options"] == "nosniff"
        # at once: well before the 10 s header timeout it would otherwise wait for (a bound from the
        # server's limits, loose enough for a loaded machine)
        assert refused_s < 5, refused_s
        # one that sends nothing: the 503, and then the end, without waiting for the request timeouts
        t0 = time.monotonic()
        with socket.create_connection((host, port), timeout=10) as c:
            r = http.client.HTTPResponse(c)
            r.begin()
            assert r.status == 503 and json.loads(r.read())["status"] == 503
            assert c.recv(1) == b""
        silent_s = time.monotonic() - t0
        assert silent_s < 5, silent_s
        # the connections held are still served, and once some go, newcomers too
        assert all(still_open(c) for c in held)
        for c in held[:5]:
            c.close()
        time.sleep(0.3)
        (code, body), after_s = timed(request, url, "GET", get_path)
        assert code == 200, (code, body, after_s)
        return {"refused": refused_s, "silent_refused": silent_s, "after": after_s}
    finally:
        for c in held:
            c.close()


def wait_text(page, selector: str, text: str, *, timeout: float = 30_000) -> None:
    """Wait until the element's text contains ``text`` (pages fill their counters after a fetch,
    so reading them at once races the fetch on a loaded machine)."""
    page.wait_for_function("([s, t]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(t); }",
                           arg=[selector, text], timeout=timeout)
