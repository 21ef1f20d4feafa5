"""One vocabulary: the metric names and their display labels (the paper's), judgement
answers and sources. The CLI, the report and both web pages take them from here (the
pages get them in their JSON), so a name is defined once.
"""

from __future__ import annotations

from abcde.util.display import STYLE

#: Exact impact metrics (per item, cluster, slice and overall), as Python/JSON names: the paper's
#: three, shown as the headline everywhere (cards, exploration samples and pages).
IMPACT_METRICS = ("split_rate", "merge_rate", "jaccard_distance")

#: JaccardDistance's two parts, exact too and computed wherever the impact metrics are (per item,
#: cluster, slice, overall; ``impact --json``): JaccardDistance = SplitDistance + MergeDistance.
DISTANCE_PARTS = ("split_distance", "merge_distance")

#: The good and bad parts of SplitDistance and MergeDistance, estimated from the judged pairs
#: (JaccardDistance = GoodDistance + BadDistance, GoodDistance = GoodSplitDistance + GoodMergeDistance).
DISTANCE_ESTIMATES = ("good_split_distance", "bad_split_distance", "good_merge_distance", "bad_merge_distance")
#: Their sums, JaccardDistance's good and bad parts.
DISTANCE_TOTALS = ("good_distance", "bad_distance")

#: Quality metrics estimated from judged pairs.
QUALITY_METRICS = ("delta_precision", "good_split_rate", "bad_split_rate", "good_merge_rate", "bad_merge_rate")

#: The paper's name of each metric.
METRIC_LABELS = {
    "split_rate": "SplitRate",
    "merge_rate": "MergeRate",
    "jaccard_distance": "JaccardDistance",
    "split_distance": "SplitDistance",
    "merge_distance": "MergeDistance",
    "good_split_distance": "GoodSplitDistance",
    "bad_split_distance": "BadSplitDistance",
    "good_merge_distance": "GoodMergeDistance",
    "bad_merge_distance": "BadMergeDistance",
    "good_distance": "GoodDistance",
    "bad_distance": "BadDistance",
    "delta_precision": "ΔPrecision",
    "good_split_rate": "GoodSplitRate",
    "bad_split_rate": "BadSplitRate",
    "good_merge_rate": "GoodMergeRate",
    "bad_merge_rate": "BadMergeRate",
    "precision": "Precision",  # of one clustering (abcde precision): 1 + ΔPrecision against every item alone
    "recall_lift": "Recall lift (pairwise)",  # T_Exp/T_Base − 1: how many more (fewer) true links Exp keeps
}
#: The recall lift (abcde.quality.recall): shown beside the quality metrics when the sample has agreed pairs.
RECALL_METRIC = "recall_lift"

#: The columns of a quality table, the same in the terminal, the report, the notebook and the judging
#: page ("draws used": the judged draws an estimate rests on; a pair drawn twice counts twice).
QUALITY_COLUMNS = ("metric", "estimate", "± s.e.", "95% interval", "draws used")

#: The answers a judgement can have.
VOCABULARY = ("same", "different", "unsure")

#: Who gave a judgement.
SOURCES = ("person", "model", "oracle")
#: The sources that are people's judgements (the oracle stands for people in tests and benchmarks).
PEOPLE = ("person", "oracle")

#: How ``derive_weights`` combines the past importance of Base and Exp clusters into a weight.
WEIGHT_COMBINE_RULES = ("max", "min", "mean", "base", "exp")

#: What every page is given as ``<body data-names=...>`` (assets/common.js reads it as
#: ``abcde.names()`` and ``abcde.style()``): the metric names and labels, and the number style of
#: abcde.util.display, so the pages name and format as the terminal and the notebook do.
PAGE_NAMES = {"labels": METRIC_LABELS, "impact_metrics": list(IMPACT_METRICS), "quality_metrics": list(QUALITY_METRICS),
              "recall_metric": RECALL_METRIC,
              "quality_columns": list(QUALITY_COLUMNS), "style": STYLE}

#: Below this effective number of entities a truth sample's estimate carries a note: its interval may
#: cover less than its level (abcde.metrics.truth_sample; the verdict reads it too).
FEW_ENTITIES = 10
