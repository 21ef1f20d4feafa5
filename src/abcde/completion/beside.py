"""An entity sample beside an evaluation (``abcde report DIR --entities ENTITIES``): the check that
both describe the same inputs, and one rule for the direction of the two recall numbers.

The recall lift (the pair sample's) and the pointwise ΔRecall (the entity sample's) both ask
whether Exp keeps more of the true links than Base, weighted differently: the recall lift counts
pairs of items (``w_i·w_j``: a large entity's many links count most), ΔRecall averages each item's
share of its own entity (``w_i``: every item counts once). One rule reads each: its 95% interval
above 0 says "more", below 0 "fewer", and one holding 0 says neither yet. When both speak and
disagree, the change helps the entities one of them weighs most and hurts the others; the words
say so rather than pick one.
"""

from __future__ import annotations

import math

from abcde.completion.estimate import EntityQuality
from abcde.completion.sample import EntitySample
from abcde.errors import InputError
from abcde.util.display import pct as _pct
from abcde.util.files import describe_fingerprint


def direction(low: float | None, high: float | None) -> int:
    """+1 when an interval lies above 0, −1 below, 0 when it holds 0 or is not known.

    >>> direction(0.01, 0.2), direction(-0.3, -0.001), direction(-0.1, 0.1), direction(None, None)
    (1, -1, 0, 0)
    """
    if low is None or high is None or not (math.isfinite(low) or math.isfinite(high)):
        return 0
    return 1 if low > 0 else (-1 if high < 0 else 0)


WORDS = {1: "more", -1: "fewer"}


def _interval(e: dict) -> str:
    point = (_pct(e["estimate"]) if e.get("estimate") is not None
             else f"between {_pct(e['bounds'][0])} and {_pct(e['bounds'][1])}")
    return f"{point} [{_pct(e['ci_low'])}, {_pct(e['ci_high'])}]"


def beside_recall_lift(q: EntityQuality | dict, lift: dict | None) -> str:
    """The pointwise ΔRecall beside the recall lift in one sentence, by :func:`direction` for each
    (``q``: an :class:`EntityQuality` or its ``to_dict()``; ``lift``: the pair sample's
    ``recall_lift`` dict, with ``available``, ``estimate``, ``ci_low``, ``ci_high``; None: not
    estimated)."""
    d = q.to_dict() if isinstance(q, EntityQuality) else q
    dr = d["delta_recall"]
    if not dr.get("draws"):
        return "No anchor of the entity sample is judged yet: the pointwise ΔRecall cannot be set beside the recall lift."
    mine = direction(dr["ci_low"], dr["ci_high"])
    ours = f"the pointwise ΔRecall {_interval(dr)}"
    if not lift or not lift.get("available") or lift.get("estimate") is None:
        why = (lift or {}).get("note") or "the evaluation's pair sample has no judgements that estimate it"
        alone = (f"says Exp keeps {WORDS[mine]} of each item's true entity than Base" if mine else
                 "cannot tell yet whether Exp keeps more of each item's true entity")
        return f"The recall lift is not estimated ({why}); {ours} {alone}."
    theirs = f"the recall lift {_interval(lift)}"
    other = direction(lift["ci_low"], lift["ci_high"])
    if mine and mine == other:
        return f"Both say Exp keeps {WORDS[mine]} true links than Base: {ours} and {theirs}."
    if mine and other:
        return (f"They disagree: {theirs} says Exp keeps {WORDS[other]} true links, counted by pairs (a large "
                f"entity's many links count most), while {ours} says {WORDS[mine]}, each item's share of its own "
                f"entity (every item counts once). The change helps the entities one of them weighs most and hurts "
                "the others: read both, with the slices.")
    if mine or other:
        says, quiet = ((ours, theirs) if mine else (theirs, ours))
        way = WORDS[mine or other]
        return f"{says[0].upper()}{says[1:]} says Exp keeps {way} true links than Base; {quiet} cannot tell yet."
    return f"Neither tells yet whether Exp keeps more true links than Base: {theirs}, {ours}."


def check_drawn_from(sample: EntitySample, prints: dict, where: str) -> None:
    """Refuse an entity sample drawn from other inputs than ``prints`` (``{role: fingerprint}`` of
    the evaluation's base, exp and items): its numbers would describe another change."""
    was = sample.metadata.get("inputs") or {}
    changed = [f"{role} ({describe_fingerprint(was.get(role))} there, {describe_fingerprint(fp)} here)"
               for role, fp in prints.items() if fp is not None and was.get(role) != fp]
    if changed:
        raise InputError(f"The entity sample in '{sample.path}' was drawn from other inputs than {where}: "
                         f"{'; '.join(changed)}. Draw it again from these inputs (abcde entities).")


__all__ = ["beside_recall_lift", "check_drawn_from", "direction"]
