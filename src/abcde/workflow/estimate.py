"""``abcde.estimate(DIR)``: the estimates of a judged sample directory, whichever kind it is, as
``abcde quality DIR`` prints them: an entity sample (``abcde entities``) gives
:func:`abcde.estimate_entities`' pointwise ΔRecall, IQ and ΔPrecision; a pair sample (``abcde pairs``,
``DIR/quality`` of ``abcde evaluate``) :func:`abcde.estimate_quality`'s ΔPrecision, rates and recall
lift."""

from __future__ import annotations

from typing import Sequence


def estimate(sample_dir, judgements=None, *, slice_by: Sequence[str] = (), source: str | None = None):
    """The estimates of the judged sample in ``sample_dir``: an
    :class:`~abcde.completion.EntityQuality` for an entity sample, else a
    :class:`~abcde.QualityResult` (``judgements``: judgement files of a pair sample; an entity sample
    reads its own answers). ``slice_by`` and ``source`` as for either."""
    from abcde.completion.sample import is_entity_sample  # lazy: start-up time

    if is_entity_sample(sample_dir):
        from abcde.completion.estimate import estimate_entities  # lazy: start-up time
        from abcde.errors import InputError  # lazy: start-up time

        if judgements is not None:
            raise InputError(f"'{sample_dir}' is an entity sample: it reads its own answers (its store and answer "
                             "files); judgement files are for a pair sample.")
        return estimate_entities(sample_dir, slice_by=slice_by, source=source)
    from abcde.quality.estimate import estimate_quality  # lazy: start-up time

    return estimate_quality(sample_dir, judgements, slice_by=slice_by, source=source)


__all__ = ["estimate"]
