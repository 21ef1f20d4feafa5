"""The whole job in one command (``abcde evaluate``): impact, an exploration sample, a pair sample
to judge and the report, from one read of the inputs and one fragment table.

Each step reuses the diff the impact computation built (:attr:`ImpactResult.diff`): the
exploration sample and the pair sample are drawn from it, and the report is built from the
results, so the inputs are read and joined once (four commands read them four times). The
directory it writes::

    OUT/impact/            items.parquet, base_clusters.parquet, exp_clusters.parquet, impact.json
    OUT/explore/sample.parquet
    OUT/quality/           the pair sample to judge (tasks.csv, ...), as 'abcde pairs' writes it
    OUT/report.html, OUT/report.md

Then: judge ``OUT/quality`` (``abcde judge serve OUT/quality``, a model, or an oracle column), and
``abcde report ... --quality OUT/quality`` adds the quality estimates.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from abcde.core.inputs import Inputs
from abcde.engine import Engine
from abcde.errors import InputError
from abcde.metrics.impact import ImpactResult, impact
from abcde.metrics.pointwise import PointwiseResult, pointwise
from abcde.quality.draw import draw_pair_sample
from abcde.quality.sample_dir import check_hidden
from abcde.report.build import Report, build_report
from abcde.sampling.explore import ExplorationSample, sample_affected
from abcde.util import progress

#: What ``evaluate`` (and the demo, built on it) writes in its directory.
ENTRIES = frozenset({"impact", "explore", "quality", "report.html", "report.md"})


@dataclass(frozen=True)
class EvaluateResult:
    """Everything :func:`evaluate` computed and wrote.

    Attributes
    ----------
    out_dir
        The directory written.
    impact
        The exact impact metrics (its ``diff`` is the one every step used).
    exploration, sample_path
        The exploration sample and its file.
    pair_dir
        The pair sample directory, to judge.
    pointwise_against_truth
        With ``truth``: each side's pointwise Precision/Recall/F1 against it (else empty).
    report, report_path
        The report (without quality estimates: nothing is judged yet) and its HTML file.
    stages
        Per stage: its name, seconds and rows, in order.
    written
        Every file written, in order.
    """

    out_dir: Path
    impact: ImpactResult
    exploration: ExplorationSample
    sample_path: Path
    pair_dir: Path
    report: Report
    report_path: Path
    pointwise_against_truth: dict[str, PointwiseResult] = field(default_factory=dict)
    stages: list[dict] = field(default_factory=list)
    written: list[str | Path] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The outputs as JSON-ready values (``abcde evaluate --json``)."""
        return {"impact": self.impact.to_dict(), "explore": {"sample": self.exploration.metadata},
                "pairs": {"dir": str(self.pair_dir)},
                "pointwise_against_truth": {k: v.to_dict() for k, v in self.pointwise_against_truth.items()},
                "report": str(self.report_path), "stages": self.stages, "written": [str(p) for p in self.written]}


def check_out_dir(out: Path, what: str = "evaluate") -> None:
    """Refuse an ``out`` that is neither new, nor empty, nor an earlier run's directory (which holds
    only what this job writes, ``impact/`` first of all): the job replaces its report files there,
    so a directory of someone else's files is left alone. Each step checks its own part again
    (``impact/``, ``explore/sample.parquet``, the pair sample in ``quality/``)."""
    if not out.is_dir():
        return  # new (made as the job writes) or a file in the way (the first write names it)
    entries = sorted(p.name for p in out.iterdir() if not p.name.startswith(".abcde-"))
    if not entries:
        return
    foreign = [n for n in entries if n not in ENTRIES]
    if foreign or "impact" not in entries:
        found = f"files that 'abcde {what}' does not write (first: {', '.join(repr(n) for n in foreign[:5])})" \
            if foreign else f"no impact/ of an earlier 'abcde {what}'"
        raise InputError(f"The output directory '{out}' is not empty and holds {found}. "
                         f"Give --out a new or empty directory (or one an earlier 'abcde {what}' wrote).")


def evaluate(
    base,
    exp=None,
    out_dir: str | os.PathLike = "abcde-evaluation",
    *,
    items=None,
    item_id: str = "item_id",
    cluster_id: str = "cluster_id",
    weight: str | None = None,
    slice_by: Sequence[str] = (),
    top: int = 10,
    sample_size: int = 1000,
    budget: int = 300,
    seed: int = 0,
    estimator: str = "stratified",
    hide: Sequence[str] = (),
    explore_by: Sequence[str] | None = None,
    truth=None,
    title: str = "ABCDE report",
    force: bool = False,
    only_affected: bool = False,
    engine: Engine | str | None = None,
) -> EvaluateResult:
    """Impact, exploration sample, pair sample and report of Exp relative to Base, written to
    ``out_dir`` from one read of the inputs (see the module's docstring).

    ``slice_by``: attribute columns for the impact slices, the pair sample's exact slice multipliers
    and (unless ``explore_by``) the report's exploration groups. ``sample_size``: draws of the
    exploration sample; ``budget``: distinct pairs to judge (``estimator`` and ``hide`` as in
    :func:`abcde.draw_pair_sample`). ``truth``: a ground-truth clustering, for each side's
    pointwise Precision/Recall/F1 in the report. ``force``: replace another pair sample in
    ``out_dir/quality`` (moved aside with its judgements, never deleted). ``only_affected``: the
    impact tables hold the affected items and clusters only (:meth:`ImpactResult.write`).
    """
    out = Path(out_dir)
    check_out_dir(out)
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
    stages: list[dict] = []

    def stage(name: str):
        return _Stage(name, stages)

    existed = out.exists()
    fresh = not existed or not any(out.iterdir())
    try:
        with stage("impact") as st:
            res = impact(given, slice_by=list(slice_by), top=top, engine=engine)
            st.rows = res.items
        check_hidden(res.diff.attributes, hide)  # before anything is written, not after half of it
        written: list[str | Path] = []
        with stage("impact tables") as st:
            files = res.write(out / "impact", only_affected=only_affected)
            written += files
            st.rows = res.items
        with stage("exploration sample") as st:
            sample = sample_affected(res, size=sample_size, seed=seed, inputs={
                k: os.fspath(v) for k, v in (("base", given.base), ("exp", given.exp), ("items", given.items))
                if isinstance(v, (str, os.PathLike))})
            sample_path = sample.write(out / "explore" / "sample.parquet")
            written.append(sample_path)
            st.rows = sample.table.num_rows
        with stage("pair sample") as st:
            pair_dir = draw_pair_sample(given, None, out / "quality", budget=budget, seed=seed, slice_by=list(slice_by),
                                        estimator=estimator, hide=hide, force=force, diff=res.diff)
            written.append(pair_dir / "tasks.csv")
            st.rows = _judgeable(pair_dir)
        against: dict[str, PointwiseResult] = {}
        if truth is not None:
            with stage("pointwise against the truth") as st:
                against = {side: pointwise(truth, getattr(given, side), items=given.items, item_id=item_id,
                                           cluster_id=cluster_id, weight=weight, engine=res.diff.engine)
                           for side in ("base", "exp")}
                st.rows = res.items
        with stage("report") as st:
            rep = build_report(res, exploration=sample, explore_by=list(explore_by if explore_by is not None else slice_by),
                               title=title, truth=against or None)
            report_path = out / "report.html"
            written += rep.write(report_path, markdown=out / "report.md")
            st.rows = None
    except BaseException:
        # No partial output: a directory this run started from nothing is emptied again (an earlier
        # run's directory keeps each entry whole: every stage replaces its own entry at once).
        if fresh and not existed:
            shutil.rmtree(out, ignore_errors=True)
        elif fresh and out.is_dir():
            for entry in out.iterdir():
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        raise
    return EvaluateResult(out_dir=out, impact=res, exploration=sample, sample_path=sample_path, pair_dir=pair_dir,
                          report=rep, report_path=report_path, pointwise_against_truth=against, stages=stages,
                          written=written)


def _judgeable(pair_dir: Path) -> int:
    return int(json.loads((pair_dir / "metadata.json").read_text())["judgeable_pairs"])


class _Stage:
    """One stage of the job: shown by the progress display (elapsed time, rows) and recorded."""

    def __init__(self, name: str, stages: list[dict]):
        self.name, self.stages, self.rows = name, stages, None

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            seconds = time.perf_counter() - self.start
            self.stages.append({"stage": self.name, "seconds": round(seconds, 3), "rows": self.rows})
            progress.stage_done(f"Stage {len(self.stages)}: {self.name}", seconds, self.rows)
        return False
