"""Invite links: who may judge on a server that others reach, kept in the judgement store.

Who may judge on a server that others reach (``abcde judge serve --raters``) is kept in the
store too, in its own table ``invites`` (made by the first invite; a store without invites has
none): one row per link made, holding the rater's name (or :data:`~abcde.samples.raters.OWNER`),
the link's role (``rater`` or ``owner``), the SHA-256 of its secret token, when it was made and when it was
revoked. The token itself is never stored: it is returned once, by :meth:`InviteBook.invite`,
to be printed in the link. A partial unique index allows one live link per name; a new link for
a name revokes the old one in the same transaction. The invites go through the same one way in
as the judgements (the lock, the identity checks, stamped transactions), and no invite
operation reads or writes the ``judgements`` table: revoking a rater keeps every judgement
they made.

The invite book (:class:`InviteBook`) is made on an open :class:`~abcde.samples.store.JudgementStore`
(``InviteBook(store)``): it reads only through :meth:`~abcde.samples.store.JudgementStore.connect`
and writes only through :meth:`~abcde.samples.store.JudgementStore.transaction`, the store's one
transaction path; the store knows nothing of it.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from abcde.errors import InputError, examples_text
from abcde.samples.raters import OWNER, check_invite_name
from abcde.samples.sqlite_guard import STORE_NAME
from abcde.samples.store import JudgementStore, utc_now

#: The invite links (see the module): created with the first invite.
INVITES_SCHEMA = """
CREATE TABLE IF NOT EXISTS invites (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('rater', 'owner')),
    token_sha256 TEXT NOT NULL UNIQUE CHECK (length(token_sha256) = 64),
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS invites_live ON invites (name) WHERE revoked_at IS NULL;
"""
#: What an invite token looks like (``secrets.token_urlsafe(32)``: 43 characters); anything else is no token.
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32,128}$")
#: Bytes of randomness in a new token (256 bits).
TOKEN_BYTES = 32


def is_token(value) -> bool:
    """Whether ``value`` has an invite token's form (anything else is no token: never looked up)."""
    return isinstance(value, str) and TOKEN_RE.match(value) is not None


def sample_has_invites(sample_dir: str | os.PathLike) -> bool:
    """Whether the sample directory's store has ever made an invite link; False when it has no store
    yet (never creates one: opening a store makes its file)."""
    return (Path(sample_dir) / STORE_NAME).exists() and InviteBook(JudgementStore(sample_dir)).has_invites()


@dataclass(frozen=True)
class Invite:
    """One invite link as stored: whose (``name``: a rater, or :data:`~abcde.samples.raters.OWNER`),
    its ``role`` (``rater`` or ``owner``), when it was made and revoked. ``token`` is the secret of a link
    just made (:meth:`InviteBook.invite`), ``None`` otherwise: the store keeps only its hash,
    so a link is shown once. :meth:`to_dict` never holds the token."""

    name: str
    role: str
    created_at: str
    revoked_at: str | None = None
    token: str | None = field(default=None, repr=False, compare=False)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict:
        return {"name": self.name, "role": self.role, "active": self.active, "created_at": self.created_at,
                "revoked_at": self.revoked_at}


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of an invite token: what the store keeps instead of the token. A token
    has 256 random bits, so a fast hash is enough (nobody can guess one from its hash)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


class InviteBook:
    """The invite links of one judgement store (``InviteBook(store)``): read through
    :meth:`~abcde.samples.store.JudgementStore.connect`, written through
    :meth:`~abcde.samples.store.JudgementStore.transaction` (the lock, the identity checks,
    stamped transactions: the store's one way in). Cheap to make: it holds the store only."""

    def __init__(self, store: JudgementStore):
        self.store = store

    @staticmethod
    def _invites_table(con: sqlite3.Connection) -> bool:
        found = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'invites'").fetchone()
        return found is not None

    @staticmethod
    def _live_invites(con: sqlite3.Connection) -> dict[str, Invite]:
        rows = con.execute("SELECT name, role, created_at, revoked_at FROM invites WHERE revoked_at IS NULL").fetchall()
        return {r[0]: Invite(*r) for r in rows}

    def invites(self) -> list[Invite]:
        """Every invite link made for this sample, oldest first, revoked ones included (never a token)."""
        with self.store.connect() as con:
            if not self._invites_table(con):
                return []
            rows = con.execute("SELECT name, role, created_at, revoked_at FROM invites ORDER BY id").fetchall()
        return [Invite(*r) for r in rows]

    def has_invites(self) -> bool:
        """Whether an invite link was ever made for this sample (revoked ones count: once a directory
        has invites, every server on it asks for them; revoking everyone locks everyone out)."""
        with self.store.connect() as con:
            return self._invites_table(con) and con.execute("SELECT 1 FROM invites LIMIT 1").fetchone() is not None

    def invite(self, names, *, replace: bool = False) -> list[Invite]:
        """Make invite links, in one transaction (all or none), and return one :class:`Invite` per
        name, in order.

        A name without a live link gets a new one: its ``token`` is the secret to put in the link,
        returned this once (the store keeps its SHA-256 only). A name with a live link keeps it
        (``token`` None: it cannot be shown again) unless ``replace``, which revokes it and makes a
        new one. :data:`OWNER` is the owner's link; every other name is a rater's
        (:func:`check_invite_name`). Judgements are not read or written.

        Raises
        ------
        InputError
            A name that is not a rater name, or is given twice.
        """
        names = list(names)
        for name in names:
            check_invite_name(name)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"Each name gets one invite link; {examples_text(twice)} "
                             f"{'is' if len(twice) == 1 else 'are'} given twice.")
        now = utc_now()
        out = []
        with self.store.transaction() as con:
            for statement in INVITES_SCHEMA.split(";"):
                if statement.strip():
                    con.execute(statement)
            live = self._live_invites(con)
            for name in names:
                role = "owner" if name == OWNER else "rater"
                if name in live and not replace:
                    out.append(live[name])
                    continue
                if name in live:
                    con.execute("UPDATE invites SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", (now, name))
                token = secrets.token_urlsafe(TOKEN_BYTES)
                con.execute("INSERT INTO invites (name, role, token_sha256, created_at) VALUES (?, ?, ?, ?)",
                            (name, role, token_hash(token), now))
                out.append(Invite(name, role, now, None, token))
        return out

    def revoke(self, names) -> list[Invite]:
        """Revoke the live invite links of ``names`` (one transaction: all or none); their
        judgements stay, and count as before. Returns the revoked links.

        Raises
        ------
        InputError
            A name without a live link (naming the names that have one); nothing is revoked.
        """
        names = list(dict.fromkeys(names))

        def missing(live):
            gone = [n for n in names if n not in live]
            if gone:
                have = ", ".join(sorted(live)) or "none"
                raise InputError(f"No active invite link for {examples_text(gone)} in '{self.store.path}'. Names with "
                                 f"an active link: {have}.")

        with self.store.connect() as con:  # check first: a refusal writes nothing
            missing(self._live_invites(con) if self._invites_table(con) else {})
        now = utc_now()
        with self.store.transaction() as con:
            live = self._live_invites(con)
            missing(live)
            for name in names:
                con.execute("UPDATE invites SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", (now, name))
        return [Invite(live[n].name, live[n].role, live[n].created_at, now) for n in names]

    def invite_for(self, token) -> Invite | None:
        """The live invite link whose token is ``token``, or ``None`` (no such token, revoked or
        replaced, or not a token at all). Looked up by the token's hash."""
        if not is_token(token):
            return None
        with self.store.connect() as con:
            if not self._invites_table(con):
                return None
            row = con.execute("SELECT name, role, created_at, revoked_at FROM invites WHERE token_sha256 = ? "
                              "AND revoked_at IS NULL", (token_hash(token),)).fetchone()
        return Invite(*row) if row else None

    def link_base(self, url: str | None = None) -> str | None:
        """The address invite links start with (``http://host:port/`` or ``--public-url``), as the
        last server on this sample gave it (``url``: remember this one, written only when it
        changed); ``None`` when no server gave one."""
        key = "invites.base_url"
        if url is None:
            with self.store.connect() as con:
                row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return row[0] if row else None
        with self.store.connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] != url:
            with self.store.transaction() as con:
                con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, url))
        return url
