"""The demo: the whole job on the bundled FEBRL 3 example (``abcde demo``).

Impact, an exploration sample, a pair sample judged by an oracle (the example's
true entity ids), the quality estimates, pointwise metrics of both sides against
the truth, and the report, written under one directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from abcde.engine import Engine
from abcde.examples import example_paths
from abcde.metrics.impact import ImpactResult
from abcde.metrics.pointwise import PointwiseResult
from abcde.quality.estimate import estimate_quality
from abcde.quality.oracle import oracle_judge
from abcde.quality.result import QualityResult
from abcde.report.build import Report
from abcde.sampling.explore import ExplorationSample, SliceEstimate
from abcde.workflow.evaluate import check_out_dir, evaluate, evaluation_report

#: Who judged the demo's pairs; shown beside every quality number.
ORACLE_LABEL = "an oracle (simulated judgements from the example's true entity ids), not people"
EXAMPLE = "febrl3"
TITLE = "ABCDE report: FEBRL 3 example (two record-linkage rules)"
#: Unique affected items in the exploration sample.
EXPLORE_SIZE = 1000
#: Distinct pairs to judge.
PAIR_BUDGET = 300
SEED = 0
#: The impact's slices and the exploration groups; ΔPrecision is sliced by source only.
SLICE_BY = ["state", "source"]
QUALITY_SLICE_BY = ["source"]


@dataclass(frozen=True)
class DemoResult:
    """Everything :func:`run_demo` computed and wrote.

    Attributes
    ----------
    out_dir
        The directory the outputs were written to.
    example_dir
        Where the bundled example's Parquet files are.
    impact
        Exact impact metrics of Exp relative to Base (sliced by ``state`` and ``source``).
    exploration, sample_path
        The exploration sample (``EXPLORE_SIZE`` unique affected items) and its file.
    groups_by_state
        The exploration sample's top 5 states by estimated Jaccard contribution.
    pair_dir
        The pair sample directory (``PAIR_BUDGET`` pairs), judged by the oracle.
    quality
        Quality estimates from the oracle's judgements, ΔPrecision sliced by ``source``.
    pointwise_against_truth
        Pointwise metrics of ``"base"`` and ``"exp"`` against the example's true entities.
    report, report_path
        The report and its HTML file (a Markdown summary sits beside it).
    written
        Every file written, in order.
    judged_by
        Who judged the pairs (:data:`ORACLE_LABEL`).
    """

    out_dir: Path
    example_dir: Path
    impact: ImpactResult
    exploration: ExplorationSample
    sample_path: Path
    groups_by_state: list[SliceEstimate]
    pair_dir: Path
    quality: QualityResult
    pointwise_against_truth: dict[str, PointwiseResult]
    report: Report
    report_path: Path
    written: list[str | Path]
    judged_by: str = ORACLE_LABEL

    def to_dict(self) -> dict:
        """The demo's outputs as plain JSON-ready values (``abcde demo --json``)."""
        return {"impact": self.impact.to_dict(),
                "explore": {"sample": self.exploration.metadata,
                            "groups_by_state": [g.to_dict() for g in self.groups_by_state]},
                "quality": {"judged_by": self.judged_by, **self.quality.to_dict()},
                # the answer in words, with the ground truth's sentence (the report's box)
                "verdict": self.report.to_dict().get("verdict"),
                "verdict_facts": self.report.to_dict().get("verdict_facts"),
                "pointwise_against_truth": {k: v.to_dict() for k, v in self.pointwise_against_truth.items()},
                "written": [str(p) for p in self.written]}


def run_demo(out_dir: str | os.PathLike = "abcde-demo", *, engine: Engine | str | None = None) -> DemoResult:
    """Run the main job on the bundled example data (FEBRL 3 people records) and write it to ``out_dir``.

    Base and Exp are two record-linkage rules; see ``abcde/examples/febrl3/README.md``. The job is
    :func:`abcde.workflow.evaluate.evaluate` (``abcde evaluate``: impact, exploration sample, pair
    sample and report from one read of the inputs), then the pairs judged by an oracle (the
    example's true entity ids), the quality estimates, and the report again with them. Writes
    ``impact/`` (per-item and per-cluster tables), ``explore/sample.parquet``, ``quality/`` (the pair
    sample, its tasks and the oracle's judgements), ``report.html``, ``report.md`` and
    ``evaluate.json``: ``abcde report OUT_DIR``
    (:func:`abcde.workflow.report.report_from_evaluation`) builds the same report again, with
    the judgements then in ``quality/``.
    """
    out = Path(out_dir)
    check_out_dir(out, "demo")
    paths = example_paths(EXAMPLE)
    ev = evaluate(paths["base"], paths["exp"], out, items=paths["items"], slice_by=SLICE_BY, top=10,
                  sample_size=EXPLORE_SIZE, budget=PAIR_BUDGET, seed=SEED, hide=["entity_id"], truth=paths["truth"],
                  title=TITLE, quality_slice_by=QUALITY_SLICE_BY, engine=engine)
    groups = ev.exploration.group(["state"], top=5)
    # Quality: the pairs judged here by the ORACLE (the example's true entity ids), then estimates.
    judgements = oracle_judge(ev.pair_dir, "entity_id")
    qual = estimate_quality(ev.pair_dir, slice_by=QUALITY_SLICE_BY, diff=ev.impact)  # its diff: the distances
    # The report again, now with the quality estimates beside the rest (what 'abcde report OUT_DIR'
    # builds from the record, here from the results in hand).
    rep = evaluation_report(ev.record, ev.impact, ev.exploration, truth=ev.pointwise_against_truth,
                            quality=qual.to_dict(), judged_by=ORACLE_LABEL)
    written = [*ev.written, judgements]
    rep.write(ev.report_path, markdown=out / "report.md")
    return DemoResult(out_dir=out, example_dir=paths["base"].parent, impact=ev.impact, exploration=ev.exploration,
                      sample_path=ev.sample_path, groups_by_state=groups, pair_dir=ev.pair_dir, quality=qual,
                      pointwise_against_truth=ev.pointwise_against_truth, report=rep, report_path=ev.report_path,
                      written=written)
