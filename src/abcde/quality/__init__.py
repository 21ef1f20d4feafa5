"""Quality: pair samples to judge, judgements, and the estimates of ΔPrecision and the
Good/Bad Split/Merge rates with their standard errors (paper, "ABCDE quality metrics").

- :mod:`~abcde.quality.draw` — :func:`draw_pair_sample`, :func:`extend_pair_sample` (``abcde pairs [--extend]``),
  :func:`draw_precision_sample` (``abcde precision``)
- the sample directory, the judgement store and files, the vote rule: :mod:`abcde.samples` (below
  this package, importing no estimator); :class:`PairSampleDir`, :func:`load_judgements` and
  :func:`vote` are re-exported here
- :mod:`~abcde.quality.oracle` — the oracle judge
- :mod:`~abcde.quality.paper`, :mod:`~abcde.quality.stratified` — the two designs' estimators
- :mod:`~abcde.quality.estimate` — :func:`estimate_quality` (``abcde quality``)
- :mod:`~abcde.quality.result` — :class:`Estimate`, :class:`QualityResult`
"""

from abcde.core.names import VOCABULARY
from abcde.quality.draw import draw_pair_sample, draw_precision_sample, extend_pair_sample
from abcde.quality.estimate import estimate_quality
from abcde.samples.judgements import load_judgements, majority, read_table_file, vote
from abcde.quality.oracle import oracle_judge
from abcde.quality.paper import estimate_from_draws
from abcde.quality.result import Estimate, QualityResult, weighted_mean_se
from abcde.samples.sample_dir import PairSampleDir, task_table

__all__ = ["Estimate", "PairSampleDir", "QualityResult", "VOCABULARY", "draw_pair_sample", "draw_precision_sample", "estimate_from_draws", "extend_pair_sample",
           "estimate_quality", "load_judgements", "majority", "oracle_judge", "read_table_file", "task_table", "vote",
           "weighted_mean_se"]
