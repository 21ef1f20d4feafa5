"""What the two judging servers share: the pair sample's (:class:`abcde.web.judging_server.JudgingServer`)
and the entity sample's (:class:`abcde.web.routes_entities.EntityJudgingServer`).

- :func:`check_serving`: what ``serve`` checks before anything is opened (the invite names, the
  public address, the instructions file, a host other than loopback without invites);
- :func:`gated_app`: the app of a list of routes behind :class:`~abcde.web.auth.InviteGate`, its
  refusals answered as the gate answers them;
- :class:`SampleServer`: binding the app, taking the directory, keeping the instructions, making the
  invite links, and serving until stopped. Each server says how it takes the directory and lets it
  go, how the store keeps the instructions, and whose invite links it makes.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Callable

from abcde.errors import InputError
from abcde.samples.invites import Invite, InviteBook
from abcde.samples.raters import OWNER, check_invite_name
from abcde.util.net import is_loopback
from abcde.web.auth import InviteGate, Refused, cookie_name, refusals
from abcde.web.instructions import check_instructions, read_instructions
from abcde.web.server import Assets, create_app
from abcde.web.transport import Limits, Server


# ----------------------------------------------------------------------------- invites at start-up
def check_public_url(url: str | None) -> str | None:
    """``--public-url``: the address raters open (a reverse proxy's, say ``https://judge.example.org/``),
    normalised to end in ``/``; ``http(s)://host[:port]`` with no path, query or fragment (the app
    is served at the root)."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.username and not parts.password
    except ValueError:
        ok = False
    if not ok or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InputError(f"--public-url must be http(s)://HOST[:PORT]/ (the address raters open, served at its root; "
                         f"no path, query or user). Got {url!r} instead.")
    return f"{parts.scheme}://{parts.netloc}/"


def public_hosts(url: str | None) -> tuple[str, ...]:
    """The ``Host`` values a request through ``url`` (a reverse proxy that passes the name on) carries."""
    if url is None:
        return ()
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    netloc = parts.netloc.lower()
    return (netloc,) if parts.port else (netloc, f"{netloc}:{default}")


def needs_invites_text(host: str) -> str:
    return (f"Serving on {host!r} lets other machines in, so raters need invite links: pass --raters NAME,NAME "
            "(or --raters FILE, one name a line); or serve on 127.0.0.1 to judge alone at this machine.")


def check_serving(sample_dir, *, host: str, raters, public_url: str | None, instructions,
                  has_invites: Callable[[object], bool]) -> tuple[list[str], str | None]:
    """What ``serve`` checks before anything is opened: the invite names, the public address, the
    instructions file (read: its Markdown, or ``None``), and a host other than loopback without
    ``raters`` and without invites in the store (``has_invites(sample_dir)``, which never creates a
    store). Returns ``(raters, markdown)``."""
    raters = list(raters or [])
    for name in raters:  # a bad name is refused before anything is opened
        check_invite_name(name)
    check_public_url(public_url)
    markdown = read_instructions(instructions) if instructions is not None else None
    if not is_loopback(host) and not raters and not has_invites(sample_dir):
        raise InputError(needs_invites_text(host))  # before the session writes its settings (or makes a store)
    return raters, markdown


def gated_app(session, assets: Assets, routes: list, *, errors: dict, invites_required: bool):
    """The app of ``routes`` (errors mapped to statuses by ``errors``) behind :class:`InviteGate`
    over ``session``; a :class:`Refused` raised in a route is answered as the gate answers."""
    refuse = refusals(assets)
    app = create_app(routes, errors=errors)
    app.add_exception_handler(Refused, lambda request, exc: refuse(request.url.path, request.method, exc.status,
                                                                   str(exc), exc.headers))
    return InviteGate(app, session, required=invites_required, refuse=refuse)


class SampleServer:
    """A running judging server over one sample directory (see the module): binds ``host:port``
    (port 0: a free port) for the app ``make_app(session, invites_required=, secure_cookie=,
    instructions=)`` makes, takes the directory (:meth:`_take_directory`), keeps ``instructions``
    (Markdown) in the store (:meth:`_keep_instructions`) and makes an invite link for each of
    :meth:`_invite_names` without one; :attr:`invites` holds them (a link made now carries its
    token, once) and :attr:`links` the URLs of the links made now. A host other than loopback
    without ``raters`` and without invites in the store is refused before anything is bound.
    ``public_url``: the address raters open when a reverse proxy is in front."""

    #: The line that refuses the owner's name among ``raters``.
    owner_refusal = f"{OWNER!r} is the owner's link; give the rater another name."

    def __init__(self, session, make_app, *, host: str, port: int, verbose: bool, limits: Limits, raters,
                 public_url: str | None, instructions: str | None):
        self.session = session
        if instructions is not None:
            check_instructions(instructions)
        raters = list(raters or [])
        for name in raters:
            check_invite_name(name)
        if OWNER in raters:
            raise InputError(self.owner_refusal)
        self.public_url = check_public_url(public_url)
        loopback = is_loopback(host)
        book = InviteBook(session.store)
        had_invites = book.has_invites()
        if not loopback and not raters and not had_invites:
            raise InputError(needs_invites_text(host))
        app = make_app(session, invites_required=bool(raters) or not loopback,
                       secure_cookie=(self.public_url or "").startswith("https:"), instructions=instructions)
        self.server = Server(app, host=host, port=port, limits=limits, verbose=verbose,
                             also_hosts=public_hosts(self.public_url))
        self.port = self.server.port
        self.cookie = cookie_name({"server": self.server.server_address})  # the sign-in cookie's name
        self.url = self.server.url  # the raters' page
        self.server_address = self.server.server_address
        self._take_directory()
        self.invites: list[Invite] = []
        self.links: dict[str, str] = {}
        try:
            if instructions is not None:  # kept for a restarted server (once this one has the directory)
                self._keep_instructions(instructions)
            if raters:
                self.invites = book.invite(self._invite_names(raters))
            self.invites_on = bool(raters) or not loopback or had_invites
            if self.invites_on:
                book.link_base(self.link_base)
        except BaseException:
            self.close()
            raise
        self.links = {i.name: self.link(i.token) for i in self.invites if i.token}
        self.startup_seconds = 0.0

    # ------------------------------------------------------------------ what each server says
    def _take_directory(self) -> None:  # pragma: no cover - each server defines it
        """Take the sample directory (its serving lock, ...); on failure close what was opened and raise."""
        raise NotImplementedError

    def _keep_instructions(self, markdown: str) -> None:  # pragma: no cover - each server defines it
        """Keep the raters' instructions in the store."""
        raise NotImplementedError

    def _invite_names(self, raters: list[str]) -> list[str]:
        """Whose invite links to make, given ``raters``."""
        return raters

    def close(self) -> None:  # pragma: no cover - each server defines it
        """Close the socket and let the directory go."""
        raise NotImplementedError

    # ------------------------------------------------------------------ serving
    @property
    def link_base(self) -> str:
        """Where invite links start: ``public_url``, else this server's URL (on every interface,
        this machine's name instead of 0.0.0.0)."""
        if self.public_url:
            return self.public_url
        host = self.server.host
        if host in ("", "0.0.0.0", "::"):
            return f"http://{socket.gethostname()}:{self.port}/"
        return self.url

    def link(self, token: str) -> str:
        return f"{self.link_base}join/{token}"

    def serve_forever(self) -> None:
        """Serve in this thread until SIGTERM (returns), Ctrl+C (a KeyboardInterrupt) or
        :meth:`shutdown`: requests in flight are answered first, then the store is let go (its last
        connection closed, SQLite checkpoints the write-ahead log: the store file alone holds every
        answer)."""
        try:
            self.server.serve_forever()
        finally:
            self.close()

    def start(self):
        """Serve in a background thread (for tests and notebooks)."""
        self.server.start()
        return self

    def shutdown(self) -> None:
        self.server.shutdown()
        self.close()


__all__ = ["SampleServer", "check_public_url", "check_serving", "gated_app", "needs_invites_text", "public_hosts"]
