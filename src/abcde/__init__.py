"""abcde: Application-Based Cluster Diff Evals (van Staden & Grubb, 2024).

Exact impact metrics of a clustering change (SplitRate, MergeRate,
JaccardDistance per item, cluster, slice and overall), an importance sample of
affected items for exploration, pointwise metrics against a ground truth, and
item weights from past importance.
"""

from .engine import Engine, connect
from .errors import AbcdeError, EngineError, InputError, MissingDependencyError
from .fragments import Restriction
from .explore import ExplorationSample, SliceEstimate, sample_affected, sample_items
from .impact import ImpactResult, impact
from .pointwise import PointwiseResult, pointwise
from .weights import derive_weights

__version__ = "0.1.0"

__all__ = [
    "AbcdeError",
    "Engine",
    "EngineError",
    "ExplorationSample",
    "ImpactResult",
    "InputError",
    "MissingDependencyError",
    "PointwiseResult",
    "Restriction",
    "SliceEstimate",
    "connect",
    "derive_weights",
    "impact",
    "pointwise",
    "sample_affected",
    "sample_items",
]
