"""abcde: Application-Based Cluster Diff Evals (van Staden & Grubb, 2024).

Exact impact metrics of a clustering change (SplitRate, MergeRate,
JaccardDistance per item, cluster, slice and overall), an importance sample of
affected items for exploration, pointwise metrics against a ground truth, item
weights from past importance, and the quality of the change from judged pairs
(ΔPrecision and the Good/Bad Split/Merge rates with standard errors).

The names below are imported on first use (PEP 562), so ``import abcde`` and the
command line start fast; ``from abcde import impact`` works as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abcde.util.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AbcdeError": "abcde.errors",
    "EngineError": "abcde.errors",
    "InputError": "abcde.errors",
    "MissingDependencyError": "abcde.errors",
    "Engine": "abcde.engine",
    "connect": "abcde.engine",
    "Restriction": "abcde.core.diff",
    "Inputs": "abcde.core.inputs",
    "ImpactResult": "abcde.metrics.impact",
    "impact": "abcde.metrics.impact",
    "PointwiseResult": "abcde.metrics.pointwise",
    "pointwise": "abcde.metrics.pointwise",
    "derive_weights": "abcde.metrics.weights",
    "WeightsResult": "abcde.metrics.weights",
    "ExplorationSample": "abcde.sampling.explore",
    "SliceEstimate": "abcde.sampling.explore",
    "sample_affected": "abcde.sampling.explore",
    "sample_items": "abcde.sampling.explore",
    "Estimate": "abcde.quality.result",
    "QualityResult": "abcde.quality.result",
    "PairSampleDir": "abcde.samples.sample_dir",
    "draw_pair_sample": "abcde.quality.draw",
    "entities": "abcde.completion.sample",
    "estimate_entities": "abcde.completion.estimate",
    "estimate": "abcde.workflow.estimate",
    "draw_precision_sample": "abcde.quality.draw",
    "extend_pair_sample": "abcde.quality.draw",
    "estimate_quality": "abcde.quality.estimate",
    "oracle_judge": "abcde.quality.oracle",
    "JudgementStore": "abcde.samples.store",
    "Report": "abcde.report.build",
    "build_report": "abcde.report.build",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('abcde', _EXPORTS, globals())


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from abcde.core.diff import Restriction
    from abcde.core.inputs import Inputs
    from abcde.engine import Engine, connect
    from abcde.errors import AbcdeError, EngineError, InputError, MissingDependencyError
    from abcde.metrics.impact import ImpactResult, impact
    from abcde.metrics.pointwise import PointwiseResult, pointwise
    from abcde.metrics.weights import WeightsResult, derive_weights
    from abcde.completion.estimate import estimate_entities
    from abcde.completion.sample import entities
    from abcde.workflow.estimate import estimate
    from abcde.quality.draw import draw_pair_sample, draw_precision_sample, extend_pair_sample
    from abcde.quality.estimate import estimate_quality
    from abcde.quality.oracle import oracle_judge
    from abcde.quality.result import Estimate, QualityResult
    from abcde.samples.sample_dir import PairSampleDir
    from abcde.samples.store import JudgementStore
    from abcde.report.build import Report, build_report
    from abcde.sampling.explore import ExplorationSample, SliceEstimate, sample_affected, sample_items
