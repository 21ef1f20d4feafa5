"""The report's ground-truth section, computed: each side's pointwise metrics against a truth, or,
with the design its entities were sampled by, the population's estimates for Base and Exp
(:mod:`abcde.metrics.truth_sample`). What ``abcde report`` and ``abcde evaluate`` compute (and
``abcde report DIR`` again, with the recorded design), and what :func:`abcde.report.build_report`
shows (``truth=``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abcde.errors import InputError

if TYPE_CHECKING:
    from abcde.engine import Engine
    from abcde.metrics.pointwise import PointwiseResult
    from abcde.metrics.truth_sample import TruthSampleResult


def check_truth_sample(truth, truth_sample, population_entities) -> None:
    """Refuse a design without a truth, and a population size without a design (before anything is
    computed: the impact of a large input takes long)."""
    if truth_sample is not None and truth is None:
        raise InputError("truth_sample (--truth-sample) is the design of a ground truth's sample of entities: it "
                         "needs the truth (--truth).")
    if population_entities is not None and truth_sample is None:
        raise InputError("population_entities (--population-entities) is the number of entities a truth sample was "
                         "drawn from: it needs truth_sample (--truth-sample uniform).")
    if truth_sample is not None and (not isinstance(truth_sample, str) or not truth_sample.strip()):
        from abcde.metrics.truth_sample import TRUTH_SAMPLE_HINT  # lazy: start-up time

        raise InputError(f"{TRUTH_SAMPLE_HINT}. Got {truth_sample!r}.")


def pointwise_against(truth, given, engine: Engine, *, truth_sample: str | None = None,
                      population_entities: float | None = None,
                      truth_cluster_id: str | None = None) -> dict[str, PointwiseResult] | TruthSampleResult:
    """The report's ground-truth section: each side's pointwise Precision/Recall/F1 against ``truth``
    (``given``: the :class:`abcde.Inputs`; ``truth_cluster_id``: the truth's column of each item's
    entity, default the clusterings' cluster column); with ``truth_sample`` (the design the truth's
    entities were sampled by), the population's estimates for Base and Exp, paired
    (:func:`abcde.metrics.truth_sample.estimate_pointwise`)."""
    if truth_sample is not None:
        from abcde.metrics.truth_sample import estimate_pointwise  # lazy: start-up time

        return estimate_pointwise(truth, base=given.base, exp=given.exp, truth_sample=truth_sample,
                                  population_entities=population_entities, items=given.items,
                                  item_id=given.item_id, cluster_id=given.cluster_id, weight=given.weight,
                                  truth_cluster_id=truth_cluster_id, engine=engine)
    from abcde.metrics.pointwise import pointwise  # lazy: start-up time

    return {side: pointwise(truth, getattr(given, side), items=given.items, item_id=given.item_id,
                            cluster_id=given.cluster_id, truth_cluster_id=truth_cluster_id, weight=given.weight,
                            engine=engine)
            for side in ("base", "exp")}


def split_truth(against) -> tuple[dict, TruthSampleResult | None]:
    """``(pointwise_against_truth, truth_sample)`` of a result: each side's pointwise result without
    a design, the truth sample's estimates with one."""
    if against is None:
        return {}, None
    if isinstance(against, dict):
        return against, None
    return {}, against
