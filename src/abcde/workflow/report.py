"""The report of a change (``abcde report``): impact, optional quality and exploration
sample, gathered into one report and written as HTML (and Markdown)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from abcde.engine import Engine
from abcde.errors import InputError
from abcde.metrics.impact import ImpactResult, impact
from abcde.report.build import Report, build_report

if TYPE_CHECKING:
    from abcde.quality.result import QualityResult
    from abcde.sampling.explore import ExplorationSample


@dataclass(frozen=True)
class ReportResult:
    """What :func:`run_report` computed and wrote.

    Attributes
    ----------
    impact
        Exact impact metrics of Exp relative to Base.
    quality
        Quality estimates from the judged pair sample, or ``None`` without one.
    exploration
        The exploration sample shown in the report, or ``None``.
    report
        The report (:class:`abcde.Report`).
    written
        The files written: the HTML page, then the Markdown summary if asked for.
    """

    impact: ImpactResult
    quality: QualityResult | None
    exploration: ExplorationSample | None
    report: Report
    written: list[Path]

    def to_dict(self) -> dict:
        """The report's content and the files written (``abcde report --json``)."""
        return {**self.report.to_dict(), "written": [str(p) for p in self.written]}


def run_report(
    base,
    exp,
    out: str | os.PathLike,
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    slice_by: Sequence[str] = (),
    top: int = 20,
    quality: str | os.PathLike | None = None,
    judgements: Sequence[str | os.PathLike] = (),
    quality_slice_by: Sequence[str] = (),
    judged_by: str | None = None,
    sample: str | os.PathLike | None = None,
    explore_by: Sequence[str] = (),
    title: str = "ABCDE report",
    markdown: str | os.PathLike | None = None,
    truth=None,
    engine: Engine | str | None = None,
) -> ReportResult:
    """Compute the impact of Exp relative to Base, add what else is given, and write the report.

    Parameters
    ----------
    base, exp, items, item_id, cluster_id, weight, slice_by, top, engine
        As for :func:`abcde.impact` (``top``: most affected clusters per side in the report).
    out
        The HTML report to write (self-contained; opens offline).
    quality
        A judged pair sample directory (from :func:`abcde.draw_pair_sample`): adds the
        quality estimates.
    judgements, quality_slice_by
        Judgement files for ``quality`` (default: its own), and the vantage-item attributes
        to estimate ΔPrecision per value of. Both need ``quality``.
    judged_by
        Who judged, shown beside every quality number (default: "the judgements in QUALITY").
    sample, explore_by
        An exploration sample file (from :func:`abcde.sample_items`) and the attributes to
        group it by in the report.
    title
        The report's title.
    markdown
        Also write a Markdown summary (e.g. for a code review comment) here.
    truth
        A ground-truth clustering (same ids and cluster column): the report adds the pointwise
        Precision, Recall and F1 of Base and Exp against it.
    """
    if quality is None and (judgements or quality_slice_by):
        raise InputError("judgements and quality_slice_by need a judged pair sample directory (quality=...).")
    res = impact(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight, slice_by=slice_by,
                 top=top, engine=engine)
    qual = None
    # Quality estimates, exploration samples and pointwise metrics are imported only when asked for
    # (their imports are a tenth of the command's own start-up; see benchmarks/startup.py).
    if quality is not None:
        from abcde.quality.estimate import estimate_quality  # lazy: start-up time
        from abcde.quality.sample_dir import PairSampleDir  # lazy: start-up time

        PairSampleDir.read(quality).check_inputs(base=base, exp=exp, items=items)
        qual = estimate_quality(quality, list(judgements) or None, slice_by=quality_slice_by)
        judged_by = judged_by or f"the judgements in {quality}"
    exploration = None
    if sample:
        from abcde.sampling.explore import ExplorationSample  # lazy: start-up time

        exploration = ExplorationSample.read(sample)
    against = None
    if truth is not None:
        from abcde.metrics.pointwise import pointwise  # lazy: start-up time

        against = {side: pointwise(truth, source, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight,
                                   engine=engine)
                   for side, source in (("base", base), ("exp", exp))}
    rep = build_report(res, quality=qual, judged_by=judged_by, exploration=exploration, explore_by=explore_by,
                       title=title, truth=against)
    written = rep.write(out, markdown=markdown)
    return ReportResult(impact=res, quality=qual, exploration=exploration, report=rep, written=written)
