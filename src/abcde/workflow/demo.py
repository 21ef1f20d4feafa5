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
from abcde.errors import InputError
from abcde.examples import example_paths
from abcde.metrics.impact import ImpactResult, impact
from abcde.metrics.pointwise import PointwiseResult, pointwise
from abcde.quality.estimate import estimate_quality
from abcde.quality.draw import draw_pair_sample
from abcde.quality.oracle import oracle_judge
from abcde.quality.result import QualityResult
from abcde.report.build import Report, build_report
from abcde.sampling.explore import ExplorationSample, SliceEstimate, sample_affected

#: Who judged the demo's pairs; shown beside every quality number.
ORACLE_LABEL = "an oracle (simulated judgements from the example's true entity ids), not people"
EXAMPLE = "febrl3"
TITLE = "ABCDE report: FEBRL 3 example (two record-linkage rules)"
#: Unique affected items in the exploration sample.
EXPLORE_SIZE = 1000
#: Distinct pairs to judge.
PAIR_BUDGET = 300
SEED = 0


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
                "pointwise_against_truth": {k: v.to_dict() for k, v in self.pointwise_against_truth.items()},
                "written": [str(p) for p in self.written]}


#: What the demo writes in its directory.
DEMO_ENTRIES = frozenset({"impact", "explore", "quality", "report.html", "report.md"})


def check_demo_dir(out: Path) -> None:
    """Refuse an ``out`` that is neither new, nor empty, nor an earlier demo's directory (which holds
    only what the demo writes, ``impact/`` first of all): the demo replaces its report files there,
    so a directory of someone else's files is left alone. Each step checks its own part again
    (``impact/``, ``explore/sample.parquet``, the pair sample in ``quality/``)."""
    if not out.is_dir():
        return  # new (made as the demo writes) or a file in the way (the first write names it)
    entries = sorted(p.name for p in out.iterdir() if not p.name.startswith(".abcde-"))
    if not entries:
        return
    foreign = [n for n in entries if n not in DEMO_ENTRIES]
    if foreign or "impact" not in entries:
        what = f"files that are not the demo's (first: {', '.join(repr(n) for n in foreign[:5])})" if foreign \
            else "no impact/ of an earlier demo"
        raise InputError(f"The demo's output directory '{out}' is not empty and holds {what}. "
                         "Give --out a new or empty directory (or an earlier demo's).")


def run_demo(out_dir: str | os.PathLike = "abcde-demo", *, engine: Engine | str | None = None) -> DemoResult:
    """Run the main job on the bundled example data (FEBRL 3 people records) and write it to ``out_dir``.

    Base and Exp are two record-linkage rules; see ``abcde/examples/febrl3/README.md``.
    Writes ``impact/`` (per-item and per-cluster tables), ``explore/sample.parquet``,
    ``quality/`` (the pair sample, its tasks and the oracle's judgements),
    ``report.html`` and ``report.md``.
    """
    out = Path(out_dir)
    check_demo_dir(out)
    paths = example_paths(EXAMPLE)
    res = impact(paths["base"], paths["exp"], items=paths["items"], slice_by=["state", "source"], top=10,
                 engine=engine)
    written: list[str | Path] = list(res.write(out / "impact"))
    # Exploration: an importance sample of affected items, grouped by an attribute.
    sample = sample_affected(res, size=EXPLORE_SIZE, seed=SEED,
                             inputs={k: str(paths[k]) for k in ("base", "exp", "items")})
    sample_path = sample.write(out / "explore" / "sample.parquet")
    written.append(sample_path)
    groups = sample.group(["state"], top=5)
    # Quality: pairs for judgement, judged here by the ORACLE (the example's true entity ids), then estimates.
    pair_dir = draw_pair_sample(paths["base"], paths["exp"], out / "quality", items=paths["items"],
                                budget=PAIR_BUDGET, seed=SEED, slice_by=["source"], hide=["entity_id"],
                                engine=engine)
    judgements = oracle_judge(pair_dir, "entity_id")
    qual = estimate_quality(pair_dir, slice_by=["source"])
    written += [pair_dir / "tasks.csv", judgements]
    # The example ships its true entities, so the pointwise metrics of each side can be shown too.
    truth = {side: pointwise(paths["truth"], paths[side], items=paths["items"], engine=engine)
             for side in ("base", "exp")}
    # The report: one self-contained HTML page (and a Markdown summary) of all of the above.
    rep = build_report(res, quality=qual.to_dict(), judged_by=ORACLE_LABEL, exploration=sample,
                       explore_by=["state", "source"], title=TITLE, truth=truth)
    report_path = out / "report.html"
    written += rep.write(report_path, markdown=out / "report.md")
    return DemoResult(out_dir=out, example_dir=paths["base"].parent, impact=res, exploration=sample,
                      sample_path=sample_path, groups_by_state=groups, pair_dir=pair_dir, quality=qual,
                      pointwise_against_truth=truth, report=rep, report_path=report_path, written=written)
