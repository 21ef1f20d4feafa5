"""abcde: Application-Based Cluster Diff Evals (van Staden & Grubb, 2024).

Exact impact metrics of a clustering change (SplitRate, MergeRate,
JaccardDistance per item, cluster, slice and overall), pointwise metrics
against a ground truth, and item weights from past importance.
"""

from .engine import Engine, connect
from .errors import AbcdeError, EngineError, InputError, MissingDependencyError
from .fragments import Restriction
from .impact import ImpactResult, impact
from .pointwise import PointwiseResult, pointwise
from .weights import derive_weights

__version__ = "0.1.0"

__all__ = [
    "AbcdeError",
    "Engine",
    "EngineError",
    "ImpactResult",
    "InputError",
    "MissingDependencyError",
    "PointwiseResult",
    "Restriction",
    "connect",
    "derive_weights",
    "impact",
    "pointwise",
]
