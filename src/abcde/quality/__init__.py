"""Quality: pair samples to judge, judgements, and the estimates of ΔPrecision and the
Good/Bad Split/Merge rates with their standard errors (paper, "ABCDE quality metrics").

- :mod:`~abcde.quality.draw` — :func:`draw_pair_sample`, :func:`extend_pair_sample` (``abcde pairs [--extend]``),
  :func:`draw_precision_sample` (``abcde precision``)
- :mod:`~abcde.quality.sample_dir` — the sample directory format: writer and reader
- :mod:`~abcde.quality.store` — the judgement store (``judgements.sqlite``)
- :mod:`~abcde.quality.invites` — its invite links (:class:`~abcde.quality.invites.InviteBook`)
- :mod:`~abcde.quality.raters` — the rater-name rules (``OWNER``, ``check_rater``)
- :mod:`~abcde.quality.judgements` — judgement files and the vote rule
- :mod:`~abcde.quality.oracle` — the oracle judge
- :mod:`~abcde.quality.paper`, :mod:`~abcde.quality.stratified` — the two designs' estimators
- :mod:`~abcde.quality.estimate` — :func:`estimate_quality` (``abcde quality``)
- :mod:`~abcde.quality.result` — :class:`Estimate`, :class:`QualityResult`
"""

from abcde.core.formulas import weighted_mean_se
from abcde.core.names import VOCABULARY
from abcde.quality.draw import draw_pair_sample, draw_precision_sample, extend_pair_sample
from abcde.quality.estimate import estimate_quality
from abcde.quality.judgements import load_judgements, majority, read_table_file, vote
from abcde.quality.oracle import oracle_judge
from abcde.quality.paper import estimate_from_draws
from abcde.quality.result import Estimate, QualityResult
from abcde.quality.sample_dir import PairSampleDir, task_table

__all__ = ["Estimate", "PairSampleDir", "QualityResult", "VOCABULARY", "draw_pair_sample", "draw_precision_sample", "estimate_from_draws", "extend_pair_sample",
           "estimate_quality", "load_judgements", "majority", "oracle_judge", "read_table_file", "task_table", "vote",
           "weighted_mean_se"]
