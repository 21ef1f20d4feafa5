"""What a judgement written to the ledger may be, and the errors of one that may not.

Before a judgement, a change or a settling vote is written
(:meth:`~abcde.samples.store.JudgementStore.record`, ``record_many``, ``change``), the store checks
it here (:meth:`LedgerRules.validate`): a pair of the sample, an answer of the vocabulary, a known
source, a rater name (:func:`abcde.samples.raters.check_rater`, but for
:data:`~abcde.samples.raters.OWNER` itself: the owner's settling votes) and, with a people's
budget, a person's or the oracle's judgement of one of the people's tasks only
(:class:`NotATaskError`). A comment is kept as :func:`clean_comment` makes it and a request id
as :func:`check_request_id` allows; :data:`KEEP` keeps a changed judgement's comment. The errors
a write raises (:class:`DuplicateJudgementError`, :class:`NotJudgedError`,
:class:`UnknownPairError`) are all :class:`~abcde.errors.InputError`. Nothing here opens the
store.
"""

from __future__ import annotations

from abcde.core.names import SOURCES, VOCABULARY
from abcde.errors import InputError
from abcde.samples.people_tasks import outside_tasks
from abcde.samples.raters import OWNER, check_rater


class DuplicateJudgementError(InputError):
    """A rater already judged this pair, or this request was already recorded (a replay)."""


class NotJudgedError(InputError):
    """A rater asked to change (or open) a judgement of a pair they have not judged."""


class UnknownPairError(InputError):
    """The pair id is not one of the sample's pairs that need a judgement."""


class NotATaskError(UnknownPairError):
    """A person's (or the oracle's) judgement, change or settling vote of a pair that is not one of
    the people's tasks (``pairs --human-budget``): people judge only those
    (:func:`abcde.samples.people_tasks.outside_tasks`). An :class:`UnknownPairError`: not a pair of theirs."""


#: ``comment`` left out of :meth:`~abcde.samples.store.JudgementStore.change`: the old judgement's comment is kept.
KEEP = object()
#: Characters of a comment kept (the rest is cut).
MAX_COMMENT = 2000


def clean_comment(comment) -> str | None:
    """A judgement's comment as stored: text, trimmed, at most :data:`MAX_COMMENT` characters; blank is none."""
    if comment is None:
        return None
    if not isinstance(comment, str):
        raise InputError(f"The comment must be text. Got {comment!r} instead.")
    return comment.strip()[:MAX_COMMENT] or None


def check_request_id(request_id) -> None:
    """Refuse a request id that is not a string of 1 to 100 characters (``None``: no request id)."""
    if request_id is not None and (not isinstance(request_id, str) or not 0 < len(request_id) <= 100):
        raise InputError(f"request_id must be a string of 1 to 100 characters. Got {request_id!r} instead.")


class LedgerRules:
    """The write-side rules of :class:`~abcde.samples.store.JudgementStore` (a part of it): they read
    the sample it was opened on (``meta``, ``task_by_pair``, ``pair_ids``, ``people_tasks``) and
    never the store file."""

    def validate(self, pair_id, judgement, *, rater, source, writing: bool = True) -> None:
        """Raise a clear error for an unknown pair, a judgement outside the vocabulary,
        a bad rater name or an unknown source; and, ``writing`` (a judgement, a change or a settling
        vote to be recorded), for a person's or the oracle's judgement of a pair that is not one of
        the people's tasks (:class:`NotATaskError`). A person's name is :func:`check_rater`'s, but
        for :data:`OWNER` itself: the owner's settling votes."""
        if source not in SOURCES:
            raise InputError(f"source must be one of {', '.join(SOURCES)}. Got {source!r} instead.")
        if judgement not in VOCABULARY:
            raise InputError(f"judgement must be one of {', '.join(VOCABULARY)}. Got {judgement!r} instead.")
        if not isinstance(rater, str) or not rater:
            raise InputError(f"The rater must be a non-empty name. Got {rater!r} instead.")
        if source == "person" and rater != OWNER:
            check_rater(rater)
        if not isinstance(pair_id, str) or pair_id not in self.task_by_pair:
            raise UnknownPairError(
                f"Pair {pair_id!r} is not one of the {len(self.pair_ids)} pairs of sample "
                f"{self.meta['sample_id']!r} that need a judgement."
            )
        if writing and outside_tasks(source, pair_id, self.people_tasks):
            raise NotATaskError(
                f"Pair {pair_id!r} is not one of the people's tasks: sample {self.meta['sample_id']!r} was drawn with "
                f"a people's budget (pairs --human-budget), and people judge only its {len(self.people_tasks):,} "
                "tasks (those in tasks.csv and on the judging page); a model judges every pair."
            )
