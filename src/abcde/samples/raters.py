"""The rater-name rules: who may carry which name.

A person's rater name is checked in one place, :func:`check_rater`: besides its characters
(:data:`RATER_RE`), no name that reads as :data:`OWNER` (the name of the owner's link and of the
owner's settling votes) once case, spaces, punctuation, width, invisible characters and look-alike
characters are set aside (:func:`name_skeleton`: ``Owner ``, ``owner.``, ``ＯＷＮＥＲ``, ``own`` +
zero-width space + ``er``, ``0wner``). An invite link may be made for :data:`OWNER` or a rater
name (:func:`check_invite_name`). The judging app, the judgement store
(:meth:`abcde.samples.store.JudgementStore.validate`) and the invite links
(:mod:`abcde.samples.invites`) all call these; nothing here reads the store.
"""

from __future__ import annotations

import re
import unicodedata

from abcde.errors import InputError

#: The characters of a rater name (see :func:`check_rater`).
RATER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.@+-]{0,63}$")
#: The name of the owner's invite link (the owner's view and the export; it does not judge).
OWNER = "owner"


#: Characters that look like a letter of a name's skeleton (:func:`name_skeleton`), after NFKC and
#: case folding: a digit zero, Greek and Cyrillic letters drawn like Latin ones.
_LOOKALIKE = str.maketrans({"0": "o", "\u03bf": "o", "\u043e": "o", "\u0585": "o", "\u0435": "e", "\u0454": "e",
                            "\u051d": "w", "\u0461": "w", "\u03c9": "w", "\u0578": "n", "\u03b7": "n",
                            "\u0433": "r", "\u03bd": "v", "\u0475": "v"})


def name_skeleton(name: str) -> str:
    """What a name reads as, for telling names apart: Unicode NFKC (full-width letters are letters),
    case folded, accents dropped, only letters and digits kept (no space, punctuation, symbol or
    invisible character such as a zero-width space), look-alike characters as the Latin letter they
    look like (``0`` as ``o``, Cyrillic ``о`` as ``o``, ``vv`` as ``w``).

    >>> [name_skeleton(n) for n in ("Owner ", "owner.", "\uff2f\uff37\uff2e\uff25\uff32", "own\u200ber", "0wner", "o w n e r")]
    ['owner', 'owner', 'owner', 'owner', 'owner', 'owner']
    """
    s = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name).casefold())
    s = "".join(c for c in s if unicodedata.category(c)[0] in "LN").translate(_LOOKALIKE)
    return s.replace("vv", "w")


def reads_as_owner(name: str) -> bool:
    """Whether ``name`` reads as :data:`OWNER` (:func:`name_skeleton`) without being it: ``Owner ``,
    ``owner.``, ``OWNER``, a full-width ``ｏｗｎｅｒ``, ``own`` + zero-width space + ``er``, ``0wner``."""
    return name != OWNER and name_skeleton(name) == OWNER


def check_rater(rater) -> str:
    """A person's rater name: 1–64 characters, letters, digits, space and ``_ . @ + -``, that does
    not read as the owner's (:data:`OWNER` itself, or :func:`reads_as_owner`): the name of the
    owner's link and of its settling votes is no rater's, and no name may pass for it. The one
    check of a rater's name: the judging app (open mode or invite links), the store and the invite
    links (:func:`check_invite_name`) all call it."""
    if rater == OWNER:
        raise InputError(f"{OWNER!r} is the name of the owner's link and the owner's settling votes; give the rater "
                         "another name.")
    if isinstance(rater, str) and reads_as_owner(rater):
        raise InputError(
            f"{rater!r} reads as {OWNER!r}, the name of the owner's link and the owner's settling votes (names are "
            "compared without case, spaces, punctuation, invisible characters and look-alike characters); give the "
            "rater another name.")
    if not isinstance(rater, str) or not RATER_RE.match(rater):
        raise InputError(
            "The rater name must be 1 to 64 characters: letters, digits, space and _ . @ + - "
            f"(starting with a letter or digit). Got {rater!r} instead."
        )
    return rater


def check_invite_name(name) -> str:
    """A name an invite link may be made for: :data:`OWNER`, or a rater name (:func:`check_rater`:
    none that reads as the owner's, such as 'Owner' or 'owner.')."""
    if name == OWNER:
        return name
    return check_rater(name)
